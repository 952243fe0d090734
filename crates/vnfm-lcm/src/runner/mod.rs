//! The lifecycle runner: accepts operation requests, executes operation occurrences in the
//! background, one tokio task each, and recovers the occurrences of runners that died.
//!
//! [`Lcm`] is the entry point. An operation call (`instantiate`, `scale`, ...) loads the instance
//! and its VNFD, validates and plans the request (an invalid request fails here and leaves
//! nothing behind), seals the inline VIM credentials of the request
//! ([`VimDirectory::seal_inline`]: with a registry, each `vimConnectionInfo` entry carrying
//! `accessInfo` becomes a reference to an encrypted VIM of the instance, so the occurrence,
//! the instance, the journal and the notifications never hold the secrets), takes the
//! per-instance lock by creating the occurrence in `STARTING`
//! ([`vnfm_store::OpOccStore::start_operation`]) and returns it; a task then moves it through the
//! state machine of [`crate::state`]:
//!
//! 1. `STARTING`: the instance's VIM connections are resolved and the grant is asked for; then
//!    the `Begin` event moves the occurrence to `PROCESSING`. When nobody is to be asked or
//!    waited for ([`VimDirectory::resolves_locally`], [`Nfvo::grants_locally`], the defaults)
//!    and no other start can race with this one (see [`dependents`]), this happens before the
//!    occurrence is stored, and `start` writes it already begun: the `STARTING` row, the move
//!    to `PROCESSING`, the `plan:forward` journal row and both notifications in one
//!    transaction ([`vnfm_store::OpOccStore::begin_operation`]), one write fewer per operation.
//!    Should the instance change between the checks and that write, nothing is written and the
//!    occurrence starts the ordinary way.
//! 2. Each step of the [`crate::Plan`], in order: hooks through the [`MgmtDriver`], infrastructure
//!    steps through the [`InfraDriver`] of the instance's VIM type, bookkeeping steps purely.
//!    After every step one [`vnfm_store::OpOccStore::record_step`] transaction writes the journal
//!    row, the occurrence, the instance and the outbox rows of any notification.
//! 3. `COMPLETED` after the last step; `FAILED_TEMP` (with an `error` naming the step) when a step
//!    fails. From there the operator retries (the failed step runs again, earlier ones do not),
//!    rolls back ([`crate::rollback_plan`]) or fails the occurrence.
//!
//! Instances that use a VIM another instance's hooks registered hold that instance back: its
//! TERMINATE (unless forced with `additionalParams.forceWithDependents`) and the deletion of its
//! identifier are refused with [`LcmError::VimDependents`], and requests that would newly
//! reference a VIM whose creator is going away are refused too; see [`Lcm::vim_dependents`].
//!
//! When an occurrence ends (`COMPLETED`, `FAILED`, `ROLLED_BACK`), the sealed VIMs its request
//! and the instance before it referenced, and that the instance no longer references, are
//! deleted ([`VimDirectory::release_inline`]); deleting a VNF identifier deletes the VIMs it
//! owns ([`VimDirectory::release_owned`]). The views [`Lcm`] returns (instances, occurrences,
//! journal rows) show any inline secret that a directory without a registry stored as given as
//! `"***"`.
//!
//! While a task runs it renews its lease ([`LcmConfig::lease_ttl`]); a runner that dies loses
//! its leases and [`Lcm::recover`] in a live process takes the occurrences over (see
//! [`recovery`](mod@recovery) for the rule that decides between resuming and `FAILED_TEMP`);
//! [`Lcm::spawn_recovery`] notices expired and released leases within
//! [`LcmConfig::takeover_poll`]. A run confirms its lease before each step, so a runner that
//! was stopped and wakes up never starts a step of an occurrence another one took over.
//!
//! # The journal
//! Every occurrence's step journal ([`vnfm_store::OpOccStore::journal`]) holds:
//! - one `plan:forward` row (outcome `started`) written with the first transition out of
//!   `STARTING`: its detail holds the plan, the VNFD id and the instance as it was before the
//!   operation, so a retry or a recovering runner executes exactly the plan that was started;
//! - one `plan:rollback` row when a rollback starts, holding the rollback plan;
//! - one row per executed step, named after the step (`hook:instantiate_start`,
//!   `infra:instantiate`, ...), outcome `completed` or `failed`, detail
//!   `{"phase": "forward"|"rollback", "index": i}` (plus `error` when it failed and
//!   `"interrupted": true` when its runner died during it).
//!
//! A step of a phase is completed at most once; a retry resumes after the highest completed
//! index of the forward phase.
//!
//! # Notifications
//! Each state change enqueues a `VnfLcmOperationOccurrenceNotification` in the same transaction
//! ([`notifications`]): `STARTING` (START) and `PROCESSING` (START) together when execution
//! begins, `PROCESSING` (START) on retry, `ROLLING_BACK` (START) on rollback, and RESULT for
//! `COMPLETED`, `FAILED_TEMP`, `FAILED` and `ROLLED_BACK`. Creating and deleting an identifier
//! enqueue `VnfIdentifierCreationNotification` / `VnfIdentifierDeletionNotification` with the
//! instance write. The [`NotificationRouter`] decides who receives them.

mod actions;
mod apply;
pub mod dependents;
mod exec;
pub use exec::op_occ_links;
mod granted;
mod journal;
pub mod keyed;
pub mod notifications;
pub mod observe;
mod panics;
pub mod preview;
pub mod progress;
pub mod recovery;
mod start;
pub mod timeline;
mod vims;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use vnfm_store::LcmStore;

use tokio::sync::watch;
use vnfm_driver_api::{FaultSink, IndicatorSink, InfraDriver, MgmtDriver, Nfvo, VimKinds};
use vnfm_store::{
    Conflict, InstanceQuery, Lease, OpOccQuery, Page, PendingKey, StoreError, Timestamp, Version,
};
use vnfm_types::links::{ApiVersion, LinkTarget, ResourceLinks, SolLinks};
use vnfm_types::{
    CancelModeType, ChangeCurrentVnfPkgRequest, ChangeExtVnfConnectivityRequest,
    ChangeVnfFlavourRequest, CreateVnfRequest, DateTime, HealVnfRequest, InstantiateVnfRequest,
    InstantiationState, Link, NotificationType, OperateVnfRequest, ScaleVnfRequest,
    ScaleVnfToLevelRequest, TerminateVnfRequest, VnfInfoModificationRequest, VnfInstance,
    VnfInstanceId, VnfInstanceLinks, VnfLcmOpOcc, VnfLcmOpOccId,
};

use crate::error::LcmError;
use crate::plan::{OperationRequest, Plan};
use crate::ports::{NotificationRouter, OnboardedVnfd, PackageCatalog, VimDirectory};

pub use actions::is_at_rest;
pub use apply::DRIVER_STATE_KEY;
pub use dependents::FORCE_WITH_DEPENDENTS;
pub use keyed::{ClientKey, KeyGuard, KeyOutcome, KeyPolicy, KeySettled};
pub use progress::{OpOccProgress, StepProgress, StepStatus};
pub use recovery::RecoveryReport;
pub use timeline::{OpOccTimeline, TimelineOutcome, TimelineStep};

/// Where the runner reads the time. Leases, op-occ timestamps and recovery compare against it,
/// so tests can move time forward instead of sleeping.
pub trait Clock: Send + Sync {
    /// The current time.
    fn now(&self) -> Timestamp;
}

/// The wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// Settings of an [`Lcm`].
#[derive(Clone)]
pub struct LcmConfig {
    /// Identity of this runner: the lease owner of the occurrences it executes. It must be
    /// unique per process incarnation (the default is `host:pid:random`), because it fences
    /// the writes of a runner whose leases were taken over.
    pub runner_id: String,
    /// How long a lease lasts unless renewed (default 6 s). A runner that dies is noticed
    /// this long after its last renewal; a runner whose lease lapsed (stopped, or cut off
    /// from the store) starts no further step without renewing it, and stops the step in
    /// progress. The runners' clocks must agree to well within it.
    pub lease_ttl: Duration,
    /// How often a running occurrence's lease is renewed (default 2 s; must be well below
    /// `lease_ttl`). A step starts only while at least this much of the lease is left.
    pub lease_renew_interval: Duration,
    /// How often [`Lcm::spawn_recovery`]'s task looks for occurrences whose lease expired or
    /// was released (one indexed read; a claim only when there are some), between its full
    /// sweeps (default 1 s): a dead runner's occurrences are taken over about `lease_ttl`
    /// plus this after its last renewal, a released one within this.
    pub takeover_poll: Duration,
    /// How often a running occurrence checks the store for a cancellation requested through
    /// another process.
    pub cancel_poll_interval: Duration,
    /// Time budget of a step whose hook declares no timeout.
    pub step_timeout: Duration,
    /// How long a step may keep running after a FORCEFUL cancellation tripped its flag before
    /// the runner abandons it.
    pub forceful_grace: Duration,
    /// Whether recovery resumes an interrupted occurrence when every remaining step is
    /// idempotent (infrastructure and bookkeeping steps are, by the [`InfraDriver`]
    /// contract). When false, every interrupted occurrence goes to `FAILED_TEMP`.
    pub resume_idempotent: bool,
    /// Whether hooks count as idempotent for recovery. MgmtDriver hooks run arbitrary scripts,
    /// so the safe default is false: an occurrence with a hook left to run goes to
    /// `FAILED_TEMP` after a crash.
    pub hooks_idempotent: bool,
    /// How many times recovery resumes the same interrupted step of an occurrence. A step
    /// that brings its process down every time (an abort, the OOM killer) would otherwise be
    /// resumed after every restart; past this count the occurrence goes to `FAILED_TEMP`
    /// with an error saying so.
    pub max_resume_attempts: u32,
    /// Where the resources live: the `href`s of `_links` (the SOL layout under a relative
    /// `apiRoot` by default).
    pub links: Arc<dyn ResourceLinks>,
    /// The clock.
    pub clock: Arc<dyn Clock>,
    /// How long client keys (idempotency keys) are kept and held ([`keyed`]).
    pub client_keys: KeyPolicy,
}

impl std::fmt::Debug for LcmConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LcmConfig")
            .field("runner_id", &self.runner_id)
            .field("lease_ttl", &self.lease_ttl)
            .field("lease_renew_interval", &self.lease_renew_interval)
            .field("takeover_poll", &self.takeover_poll)
            .field("cancel_poll_interval", &self.cancel_poll_interval)
            .field("step_timeout", &self.step_timeout)
            .field("forceful_grace", &self.forceful_grace)
            .field("resume_idempotent", &self.resume_idempotent)
            .field("hooks_idempotent", &self.hooks_idempotent)
            .field("max_resume_attempts", &self.max_resume_attempts)
            .field("links", &self.links)
            .field("client_keys", &self.client_keys)
            .finish_non_exhaustive()
    }
}

impl Default for LcmConfig {
    fn default() -> Self {
        LcmConfig {
            runner_id: default_runner_id(),
            lease_ttl: Duration::from_secs(6),
            lease_renew_interval: Duration::from_secs(2),
            takeover_poll: Duration::from_secs(1),
            cancel_poll_interval: Duration::from_secs(1),
            step_timeout: Duration::from_secs(3600),
            forceful_grace: Duration::from_secs(5),
            resume_idempotent: true,
            hooks_idempotent: false,
            max_resume_attempts: 3,
            links: Arc::new(SolLinks::default()),
            clock: Arc::new(SystemClock),
            client_keys: KeyPolicy::default(),
        }
    }
}

impl LcmConfig {
    /// Sets the lease TTL and renews at a third of it.
    pub fn with_lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = ttl;
        self.lease_renew_interval = ttl / 3;
        self
    }
}

/// `host:pid:random`: unique per process incarnation.
pub fn default_runner_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into());
    format!("{host}:{}:{}", std::process::id(), &random_hex(4))
}

/// `n` random bytes as lowercase hex.
pub(crate) fn random_hex(n: usize) -> String {
    let mut buf = vec![0u8; n];
    if getrandom::fill(&mut buf).is_err() {
        // No OS randomness: fall back to the clock, still unique enough for ids in one process.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        for (i, b) in buf.iter_mut().enumerate() {
            *b = (t >> ((i % 16) * 8)) as u8 ^ (i as u8).wrapping_mul(151);
        }
    }
    crate::secrets::hex(&buf)
}

/// A new time-ordered (version 7) UUID string: see [`crate::secrets::new_id`].
pub(crate) fn new_uuid() -> String {
    crate::secrets::new_id()
}

/// Builds an [`Lcm`].
pub struct LcmBuilder {
    store: Arc<dyn LcmStore>,
    infra: BTreeMap<String, Arc<dyn InfraDriver>>,
    vim_kinds: VimKinds,
    mgmt: Option<Arc<dyn MgmtDriver>>,
    vims: Arc<dyn VimDirectory>,
    router: Arc<dyn NotificationRouter>,
    catalog: Arc<dyn PackageCatalog>,
    config: LcmConfig,
    nfvo: Arc<dyn Nfvo>,
    faults: Option<Arc<dyn FaultSink>>,
    indicators: Option<Arc<dyn IndicatorSink>>,
}

impl LcmBuilder {
    /// Sets where the alarms that hooks report go (without one, they are dropped with a
    /// warning on the occurrence).
    pub fn fault_sink(mut self, faults: Arc<dyn FaultSink>) -> Self {
        self.faults = Some(faults);
        self
    }

    /// Sets where the VNF indicator values that hooks report go (without one, they are
    /// dropped with a warning on the occurrence).
    pub fn indicator_sink(mut self, indicators: Arc<dyn IndicatorSink>) -> Self {
        self.indicators = Some(indicators);
        self
    }

    /// Sets the NFVO asked for grants (default: [`vnfm_driver_api::LocalNfvo`], which grants
    /// everything).
    pub fn nfvo(mut self, nfvo: Arc<dyn Nfvo>) -> Self {
        self.nfvo = nfvo;
        self
    }

    /// Registers an infrastructure driver for every VIM type it serves
    /// ([`InfraDriver::vim_types`]); a later driver replaces an earlier one for a shared type.
    pub fn infra_driver(mut self, driver: Arc<dyn InfraDriver>) -> Self {
        for t in driver.vim_types() {
            self.infra.insert((*t).to_string(), driver.clone());
        }
        if let Some(kind) = driver.vim_kind() {
            self.vim_kinds.add(kind);
        }
        self
    }

    /// Adds VIM kinds besides those the drivers declare: requests may then name their types
    /// by the kinds' aliases ([`vnfm_driver_api::VimKind::aliases`]).
    pub fn vim_kinds(mut self, kinds: VimKinds) -> Self {
        self.vim_kinds.extend(kinds);
        self
    }

    /// Sets the management driver that runs LCM hooks.
    pub fn mgmt_driver(mut self, driver: Arc<dyn MgmtDriver>) -> Self {
        self.mgmt = Some(driver);
        self
    }

    /// Sets the configuration.
    pub fn config(mut self, config: LcmConfig) -> Self {
        self.config = config;
        self
    }

    /// The [`Lcm`]. Nothing runs until it is used; call [`Lcm::recover`] to take over the
    /// occurrences of dead runners.
    pub fn build(self) -> Lcm {
        let (shutdown, _) = watch::channel(false);
        Lcm {
            inner: Arc::new(Inner {
                store: self.store,
                infra: self.infra,
                vim_kinds: self.vim_kinds,
                mgmt: self.mgmt,
                vims: self.vims,
                router: self.router,
                catalog: self.catalog,
                config: self.config,
                nfvo: self.nfvo,
                faults: self.faults,
                indicators: self.indicators,
                running: Mutex::new(HashMap::new()),
                client_keys: keyed::KeysInFlight::default(),
                warned_clear_inline: std::sync::atomic::AtomicBool::new(false),
                shutdown,
            }),
        }
    }
}

/// A task executing an occurrence in this process.
#[derive(Clone)]
pub(crate) struct RunHandle {
    /// Delivers a cancellation request to the task.
    pub cancel: watch::Sender<Option<CancelModeType>>,
    /// Becomes [`RunState::Ended`] when the task has ended.
    pub done: watch::Receiver<RunState>,
}

/// Whether a run's task is still going, and what it left.
#[derive(Debug, Clone, Default)]
pub(crate) enum RunState {
    #[default]
    Running,
    /// The task has ended; with the occurrence as it wrote it last when it ended at rest
    /// (so a waiter need not read it back).
    Ended(Option<Arc<VnfLcmOpOcc>>),
}

impl RunState {
    pub(crate) fn ended(&self) -> bool {
        matches!(self, RunState::Ended(_))
    }
}

pub(crate) struct Inner {
    pub store: Arc<dyn LcmStore>,
    pub infra: BTreeMap<String, Arc<dyn InfraDriver>>,
    /// The kinds of the VIM types: request types named by an alias are stored as the type.
    pub vim_kinds: VimKinds,
    pub mgmt: Option<Arc<dyn MgmtDriver>>,
    pub vims: Arc<dyn VimDirectory>,
    pub router: Arc<dyn NotificationRouter>,
    pub catalog: Arc<dyn PackageCatalog>,
    pub config: LcmConfig,
    pub nfvo: Arc<dyn Nfvo>,
    /// Where alarms reported by hooks go.
    pub faults: Option<Arc<dyn FaultSink>>,
    /// Where indicator values reported by hooks go.
    pub indicators: Option<Arc<dyn IndicatorSink>>,
    pub running: Mutex<HashMap<VnfLcmOpOccId, RunHandle>>,
    /// The client keys whose calls run in this process ([`keyed`]).
    pub(crate) client_keys: keyed::KeysInFlight,
    /// Whether this runner has warned that its VIM directory stores inline credentials as
    /// given (once per runner, so each embedding's log says it).
    pub warned_clear_inline: std::sync::atomic::AtomicBool,
    /// Raised by [`Lcm::shutdown`]: tasks stop at the next step boundary.
    pub shutdown: watch::Sender<bool>,
}

impl Inner {
    pub(crate) fn running(&self) -> MutexGuard<'_, HashMap<VnfLcmOpOccId, RunHandle>> {
        // A panicked task must not take the registry down with it.
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn now(&self) -> Timestamp {
        self.config.clock.now()
    }

    pub(crate) fn now_datetime(&self) -> DateTime {
        let ms = self.now().millis().max(0);
        DateTime::from_unix_seconds(u64::try_from(ms / 1000).unwrap_or(0))
    }

    pub(crate) fn lease(&self) -> Lease {
        Lease::new(
            self.config.runner_id.clone(),
            self.now().plus(self.config.lease_ttl),
        )
    }

    /// The onboarded VNFD `vnfd_id`, asked of the catalog.
    pub(crate) async fn onboarded(&self, vnfd_id: &str) -> Result<OnboardedVnfd, LcmError> {
        self.catalog
            .vnfd(vnfd_id)
            .await?
            .ok_or_else(|| LcmError::UnknownVnfd {
                vnfd_id: vnfd_id.to_string(),
            })
    }
}

/// The lifecycle manager: SOL003 VNF LCM operations on a [`LcmStore`], executed in the background.
///
/// Cheap to clone (all clones share the runner). Every method needs a tokio runtime.
#[derive(Clone)]
pub struct Lcm {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Lcm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lcm")
            .field("runner_id", &self.inner.config.runner_id)
            .field("vim_types", &self.inner.infra.keys().collect::<Vec<_>>())
            .field("mgmt_driver", &self.inner.mgmt.is_some())
            .finish_non_exhaustive()
    }
}

/// An instance as the API shows it: its VIM connections as [`vims::instance_view`] shows them,
/// and without the resources of an INSTANTIATE that has not completed ([`apply::shown`]).
async fn instance_view(inner: &Inner, instance: VnfInstance) -> Result<VnfInstance, LcmError> {
    Ok(apply::shown(vims::instance_view(inner, instance).await?))
}

/// Maps a store failure to the core's error: a busy instance and a leased occurrence keep
/// their own errors, and a version mismatch asks to try again.
pub fn store_err(e: StoreError) -> LcmError {
    match e {
        StoreError::NotFound { kind, id } => LcmError::NotFound { kind, id },
        StoreError::Conflict(Conflict::InstanceBusy {
            instance_id,
            op_occ_id,
            state,
        }) => LcmError::InstanceBusy {
            instance_id,
            op_occ_id: op_occ_id.0,
            state,
        },
        StoreError::Conflict(Conflict::LeaseHeld { op_occ_id, holder })
        | StoreError::Conflict(Conflict::LeaseLost {
            op_occ_id,
            holder: Some(holder),
            ..
        }) => LcmError::OpOccLeased {
            op_occ_id: op_occ_id.0,
            holder,
        },
        StoreError::Conflict(c) => {
            let message = c.to_string();
            LcmError::conflict(message).because(StoreError::Conflict(c))
        }
        StoreError::VersionMismatch { .. } => LcmError::conflict(format!(
            "{e}; the record changed while the request was processed, try again"
        ))
        .because(e),
        other => LcmError::store(other),
    }
}

/// `_links` of an instance in `state`, into `version` of the lifecycle interface (the core
/// stores them for `V2`; an API serving another version renders them for it).
pub fn instance_links(
    links: &dyn ResourceLinks,
    id: &VnfInstanceId,
    state: InstantiationState,
    version: ApiVersion,
) -> VnfInstanceLinks {
    let id = id.as_str();
    let task = |task: &str| {
        Some(Link::new(links.href(LinkTarget::InstanceTask {
            version,
            id,
            task,
        })))
    };
    let instantiated = state == InstantiationState::Instantiated;
    VnfInstanceLinks {
        self_: Link::new(links.href(LinkTarget::Instance { version, id })),
        indicators: instantiated
            .then(|| Link::new(links.href(LinkTarget::InstanceIndicators { instance: id }))),
        instantiate: if instantiated {
            None
        } else {
            task("instantiate")
        },
        terminate: if instantiated {
            task("terminate")
        } else {
            None
        },
        scale: if instantiated { task("scale") } else { None },
        scale_to_level: if instantiated {
            task("scale_to_level")
        } else {
            None
        },
        change_flavour: if instantiated {
            task("change_flavour")
        } else {
            None
        },
        heal: if instantiated { task("heal") } else { None },
        operate: if instantiated { task("operate") } else { None },
        change_ext_conn: if instantiated {
            task("change_ext_conn")
        } else {
            None
        },
        create_snapshot: None,
        revert_to_snapshot: None,
    }
}

impl Lcm {
    /// A builder with the required collaborators; add drivers and configuration, then
    /// [`LcmBuilder::build`].
    pub fn builder(
        store: Arc<dyn LcmStore>,
        vims: Arc<dyn VimDirectory>,
        router: Arc<dyn NotificationRouter>,
        catalog: Arc<dyn PackageCatalog>,
    ) -> LcmBuilder {
        LcmBuilder {
            store,
            infra: BTreeMap::new(),
            vim_kinds: VimKinds::new(),
            mgmt: None,
            vims,
            router,
            catalog,
            config: LcmConfig::default(),
            nfvo: Arc::new(vnfm_driver_api::LocalNfvo),
            faults: None,
            indicators: None,
        }
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn LcmStore> {
        &self.inner.store
    }

    /// The configuration.
    pub fn config(&self) -> &LcmConfig {
        &self.inner.config
    }

    /// This runner's identity (the owner of its leases).
    pub fn runner_id(&self) -> &str {
        &self.inner.config.runner_id
    }

    /// The VIM types the registered infrastructure drivers serve.
    pub fn vim_types(&self) -> Vec<String> {
        self.inner.infra.keys().cloned().collect()
    }

    // ----- VNF identifiers -----

    /// Creates a VNF instance resource (`NOT_INSTANTIATED`) from an onboarded VNFD, and
    /// enqueues the `VnfIdentifierCreationNotification`s in the same transaction. The
    /// instance belongs to no project ([`Lcm::create_vnf_identifier_in`]).
    pub async fn create_vnf_identifier(
        &self,
        req: CreateVnfRequest,
    ) -> Result<VnfInstance, LcmError> {
        self.create_vnf_identifier_in(req, None).await
    }

    /// [`Lcm::create_vnf_identifier`] of an instance belonging to `project` (its op-occs and
    /// alarms belong to it too): lists in a `vnfm_store::ProjectScope` of another project do
    /// not show it.
    pub async fn create_vnf_identifier_in(
        &self,
        req: CreateVnfRequest,
        project: Option<&str>,
    ) -> Result<VnfInstance, LcmError> {
        self.create_vnf_identifier_with_key(req, project, None)
            .await
    }

    /// [`Lcm::create_vnf_identifier_in`] that commits `key`, the client key of a retry-safe
    /// request ([`crate::runner::keyed`]), with the instance in the transaction that creates
    /// it; a key committed by another request first refuses the creation with nothing stored.
    pub async fn create_vnf_identifier_with_key(
        &self,
        req: CreateVnfRequest,
        project: Option<&str>,
        key: Option<&PendingKey>,
    ) -> Result<VnfInstance, LcmError> {
        let inner = &self.inner;
        let onboarded = inner.onboarded(req.vnfd_id.as_str()).await?;
        let vnfd = &onboarded.vnfd;
        let id = VnfInstanceId::new(new_uuid());
        let instance = VnfInstance {
            links: instance_links(
                &*inner.config.links,
                &id,
                InstantiationState::NotInstantiated,
                ApiVersion::V2,
            ),
            id,
            vnf_instance_name: req.vnf_instance_name,
            vnf_instance_description: req.vnf_instance_description,
            vnfd_id: req.vnfd_id,
            vnf_provider: vnfd.provider.clone(),
            vnf_product_name: vnfd.product_name.clone(),
            vnf_software_version: vnfd.software_version.clone(),
            vnfd_version: vnfd.descriptor_version.clone(),
            vnf_configurable_properties: None,
            vim_connection_info: None,
            instantiation_state: InstantiationState::NotInstantiated,
            instantiated_vnf_info: None,
            metadata: req.metadata,
            extensions: None,
        };
        let note = notifications::identifier_notification(
            NotificationType::VnfIdentifierCreationNotification,
            &instance.id,
            &*inner.config.links,
            inner.now_datetime(),
        );
        let rows = inner
            .router
            .route_created(&note, &instance, project)
            .await?;
        inner
            .store
            .create_instance_keyed(&instance, project, &rows, key)
            .await
            .map_err(store_err)?;
        tracing::info!(vnf_instance_id = %instance.id, vnfd_id = %instance.vnfd_id, "VNF identifier created");
        Ok(instance)
    }

    /// Deletes a `NOT_INSTANTIATED` VNF instance that no occurrence holds, and enqueues the
    /// `VnfIdentifierDeletionNotification`s in the same transaction.
    pub async fn delete_vnf_identifier(&self, id: &VnfInstanceId) -> Result<(), LcmError> {
        let inner = &self.inner;
        let (instance, version) = self.instance_with_version(id).await?;
        if instance.instantiation_state == InstantiationState::Instantiated {
            return Err(LcmError::InstanceInstantiated {
                instance_id: id.to_string(),
            });
        }
        // A forced TERMINATE may have left instances on VIMs this one's hooks registered:
        // deleting the identifier would orphan those VIMs.
        let left = dependents::dependents_of(inner, id).await?;
        if !left.is_empty() {
            return Err(dependents::refusal(
                id,
                crate::GuardedAction::DeleteIdentifier,
                left,
            ));
        }
        let note = notifications::identifier_notification(
            NotificationType::VnfIdentifierDeletionNotification,
            id,
            &*inner.config.links,
            inner.now_datetime(),
        );
        let rows = inner.router.route(&note, Some(&instance)).await?;
        inner
            .store
            .delete_instance(id, version, &rows)
            .await
            .map_err(store_err)?;
        tracing::info!(vnf_instance_id = %id, "VNF identifier deleted");
        // The VIMs registered on its behalf (sealed inline credentials, VIMs its hooks
        // created) go with it, unless another instance uses them.
        match inner.vims.release_owned(id).await {
            Ok(released) if !released.is_empty() => {
                tracing::info!(vnf_instance_id = %id, count = released.len(), "deleted the VIMs registered for the VNF instance");
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(vnf_instance_id = %id, error = %e, "could not delete the VIMs registered for the deleted VNF instance");
            }
        }
        Ok(())
    }

    /// The VNF instances other than `id` that use VIMs `id`'s lifecycle hooks registered
    /// (their `vimConnectionInfo` references one, a resource names one, or the request of
    /// their non-final occurrence brings a reference), each with the VIM it uses, ordered by
    /// instance id then VIM id. While there are any, TERMINATE of `id` (unless forced with
    /// `additionalParams.forceWithDependents`) and deleting its identifier are refused with
    /// [`LcmError::VimDependents`].
    ///
    /// The refusals are checked before an occurrence is created and again once it holds its
    /// instance; a request newly referencing a VIM whose creator is not instantiated, is being
    /// terminated or is gone is refused the same way ([`LcmError::VimCreatorUnavailable`]).
    /// Each side records its occurrence before its second check, so a TERMINATE of `id` and an
    /// operation bringing a first reference to its VIM that start concurrently cannot both
    /// proceed: the one (or both) whose second check sees the other is refused, its
    /// occurrence ending `ROLLED_BACK` without doing anything. References a hook adds are not
    /// checked; deregistering a VIM still in use fails the hook's step instead.
    pub async fn vim_dependents(
        &self,
        id: &VnfInstanceId,
    ) -> Result<Vec<crate::DependentInstance>, LcmError> {
        self.instance_with_version(id).await?;
        dependents::dependents_of(&self.inner, id).await
    }

    /// The VNF instance. Inline VIM secrets (kept only by a directory without a registry) are
    /// shown as `"***"`; a `NOT_INSTANTIATED` instance has no `instantiatedVnfInfo`, not
    /// even while its INSTANTIATE, in `FAILED_TEMP`, keeps the resources it created.
    pub async fn get_instance(&self, id: &VnfInstanceId) -> Result<VnfInstance, LcmError> {
        let (instance, _) = self.instance_with_version(id).await?;
        instance_view(&self.inner, instance).await
    }

    /// [`Lcm::get_instance`] with the instance's version (its HTTP entity tag is
    /// [`Version::etag`]).
    pub async fn get_instance_versioned(
        &self,
        id: &VnfInstanceId,
    ) -> Result<(VnfInstance, Version), LcmError> {
        let (instance, version) = self.instance_with_version(id).await?;
        Ok((instance_view(&self.inner, instance).await?, version))
    }

    async fn instance_with_version(
        &self,
        id: &VnfInstanceId,
    ) -> Result<(VnfInstance, Version), LcmError> {
        self.inner
            .store
            .get_instance(id)
            .await
            .map_err(store_err)?
            .ok_or_else(|| LcmError::NotFound {
                kind: "VNF instance",
                id: id.to_string(),
            })
    }

    /// One page of VNF instances, each shown as [`Lcm::get_instance`] shows it.
    pub async fn list_instances(
        &self,
        query: &InstanceQuery,
    ) -> Result<Page<VnfInstance>, LcmError> {
        let mut page = self
            .inner
            .store
            .list_instances(query)
            .await
            .map_err(store_err)?;
        let mut shown = Vec::with_capacity(page.items.len());
        for instance in std::mem::take(&mut page.items) {
            shown.push(instance_view(&self.inner, instance).await?);
        }
        page.items = shown;
        Ok(page)
    }

    /// [`Lcm::list_instances`] with each instance as a JSON document (for callers that
    /// filter and reshape documents anyway), shown as [`Lcm::get_instance`] shows it.
    pub async fn list_instance_documents(
        &self,
        query: &InstanceQuery,
    ) -> Result<Page<serde_json::Value>, LcmError> {
        let mut page = self
            .inner
            .store
            .list_instance_documents(query)
            .await
            .map_err(store_err)?;
        for doc in &mut page.items {
            if let serde_json::Value::Object(doc) = doc {
                vims::instance_document_view(&self.inner, doc).await?;
                apply::shown_document(doc);
            }
        }
        Ok(page)
    }

    /// The operation occurrence. Inline VIM secrets in its `operationParams` and
    /// `changedInfo` (kept only by a directory without a registry) are shown as `"***"`.
    pub async fn get_op_occ(&self, id: &VnfLcmOpOccId) -> Result<VnfLcmOpOcc, LcmError> {
        self.op_occ_with_version(id)
            .await
            .map(|(o, _)| vims::op_occ_view(o))
    }

    /// [`Lcm::get_op_occ`] as JSON text: the stored document as it is when it holds no
    /// `accessInfo` (so nothing to show as `"***"`), which is the common case (a registry
    /// seals inline secrets before anything is stored); otherwise the view encoded.
    pub async fn get_op_occ_text(&self, id: &VnfLcmOpOccId) -> Result<String, LcmError> {
        let text = self
            .inner
            .store
            .get_op_occ_text(id)
            .await
            .map_err(store_err)?
            .ok_or_else(|| LcmError::NotFound {
                kind: "operation occurrence",
                id: id.to_string(),
            })?;
        if !text.contains("\"accessInfo\"") {
            return Ok(text);
        }
        let occ = self.get_op_occ(id).await?;
        serde_json::to_string(&occ).map_err(|e| {
            LcmError::inconsistent(format!("operation occurrence {id} does not encode: {e}"))
        })
    }

    pub(crate) async fn op_occ_with_version(
        &self,
        id: &VnfLcmOpOccId,
    ) -> Result<(VnfLcmOpOcc, Version), LcmError> {
        self.inner
            .store
            .get_op_occ(id)
            .await
            .map_err(store_err)?
            .ok_or_else(|| LcmError::NotFound {
                kind: "operation occurrence",
                id: id.to_string(),
            })
    }

    /// One page of operation occurrences.
    pub async fn list_op_occs(&self, query: &OpOccQuery) -> Result<Page<VnfLcmOpOcc>, LcmError> {
        let mut page = self
            .inner
            .store
            .list_op_occs(query)
            .await
            .map_err(store_err)?;
        page.items = page.items.into_iter().map(vims::op_occ_view).collect();
        Ok(page)
    }
}
