//! Executing one operation occurrence: the task, its steps, its lease and its cancellation.

mod cancel;
mod coordinate;
mod grants;
pub(super) mod hook_reports;
mod lease;
mod phase;
mod records;
pub use records::op_occ_links;
mod routing;
mod steps;

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use futures_util::FutureExt;
use indexmap::IndexMap;
use tokio::sync::watch;
use tracing::Instrument;
use vnfm_driver_api::{
    CancellationFlag, DriverError, DriverLayer, GrantDecision, HookCall, HookOutcome, InfraDriver,
    InfraOutcome, InfraRequest, InfraStep, ResolvedVim, RunControl, TargetPackage,
};
use vnfm_store::{
    Lease, StartCondition, StepOutcome, StepRecord, StepWritten, StoreError, Timestamp, Version,
};
use vnfm_types::links::{ApiVersion, LinkTarget, ResourceLinks};
use vnfm_types::{
    CancelModeType, ErrorKind, Grant, InstantiationState, LccnNotification,
    LcmOperationStateType as State, LcmOperationType, Link, OperationParams, ProblemDetails,
    VimConnectionInfo, VimId, VnfInfoModifications, VnfInstance, VnfInstanceId, VnfLcmOpOcc,
    VnfLcmOpOccId, VnfLcmOpOccLinks,
};

use super::apply::{self, InfraContext};
use super::journal::{self, JournalView, Phase, PlanRow, StepRow};
use super::{
    Inner, RunHandle, RunState, dependents, instance_links, is_at_rest, new_uuid, notifications,
    panics, store_err, vims,
};
use crate::error::{LcmError, op_name};
use crate::plan::{OperationRequest, Plan, PlanKind, RollbackHooks, Step, grant};
use crate::ports::{OnboardedVnfd, VimDirectory};
use crate::runner::granted;
use crate::state::{Event, transition};

pub(crate) use cancel::CANCEL_KEY;
pub(crate) use grants::GRANT_KEY;
use grants::{GrantAsked, TRACE_CONTEXT_KEY};
use lease::keep_lease;
pub(crate) use records::*;
pub(crate) use routing::*;

/// Op-occ data key of the hooks' error-handling data: one value per occurrence, the last one a
/// hook returned, handed to every later hook call of the occurrence (retries included).
pub(crate) const HOOK_DATA_KEY: &str = "errorHandlingData";

/// What an occurrence needs besides its own record: the VNFD, the plans and the instance as it
/// was before the operation.
#[derive(Clone)]
pub(crate) struct Ctx {
    pub vnfd: OnboardedVnfd,
    pub forward: Plan,
    pub before: VnfInstance,
    pub rollback: Option<Plan>,
}

impl Ctx {
    pub(crate) fn new(vnfd: OnboardedVnfd, forward: Plan, before: VnfInstance) -> Ctx {
        Ctx {
            vnfd,
            forward,
            before,
            rollback: None,
        }
    }

    pub(crate) fn plan(&self, phase: Phase) -> Plan {
        match phase {
            Phase::Forward => self.forward.clone(),
            Phase::Rollback => self.rollback.clone().unwrap_or_else(|| Plan {
                operation: self.forward.operation,
                kind: PlanKind::Rollback,
                flavour_id: self.forward.flavour_id.clone(),
                steps: Vec::new(),
                rollback_hooks: RollbackHooks::default(),
            }),
        }
    }

    fn plan_row(&self) -> PlanRow {
        PlanRow {
            plan: self.forward.clone(),
            vnfd_id: Some(self.vnfd.vnfd.descriptor_id.clone()),
            instance_before: Some(self.before.clone()),
        }
    }
}

/// The typed request of an occurrence.
pub(crate) fn request_of(occ: &VnfLcmOpOcc) -> Result<OperationParams, LcmError> {
    occ.typed_operation_params()
        .map_err(|e| LcmError::inconsistent(format!("operation occurrence {}: {e}", occ.id)))
}

/// The context of an occurrence from its journal; when the journal holds no plan yet (nothing
/// ran), the plan is made from the instance as it is.
pub(crate) async fn load_ctx(
    inner: &Inner,
    occ: &VnfLcmOpOcc,
    view: &JournalView,
    instance: &VnfInstance,
) -> Result<Ctx, LcmError> {
    if let Some(row) = &view.forward {
        let vnfd_id = row
            .vnfd_id
            .clone()
            .unwrap_or_else(|| instance.vnfd_id.to_string());
        return Ok(Ctx {
            vnfd: inner.onboarded(&vnfd_id).await?,
            forward: row.plan.clone(),
            before: row
                .instance_before
                .clone()
                .unwrap_or_else(|| instance.clone()),
            rollback: view.rollback.clone(),
        });
    }
    let req = OperationRequest::try_from(request_of(occ)?)?;
    let vnfd_id = match &req {
        OperationRequest::ChangeVnfPkg(r) => r.vnfd_id.to_string(),
        _ => instance.vnfd_id.to_string(),
    };
    let vnfd = inner.onboarded(&vnfd_id).await?;
    let plan = crate::plan::plan(&req, &vnfd.vnfd, instance)?;
    Ok(Ctx::new(vnfd, plan, instance.clone()))
}

/// Where a run starts.
pub(crate) enum Entry {
    /// An occurrence in `STARTING`: resolve the VIMs, begin, run the forward plan.
    Fresh,
    /// [`Entry::Fresh`] for an occurrence taken over from a dead runner: a cancellation may
    /// have been requested while nobody executed it.
    Orphan,
    /// An occurrence [`Run::begin_at_once`] stored already begun: run the forward plan when
    /// it is in `PROCESSING` (it may have ended instead: VIMs unresolvable).
    Begun,
    /// Continue `phase` at step `next` (the occurrence is already in `PROCESSING` or
    /// `ROLLING_BACK`).
    Resume {
        /// The plan to continue.
        phase: Phase,
        /// The first step to run.
        next: usize,
    },
}

/// What [`Run::begin_at_once`] did.
pub(crate) enum AtOnce {
    /// The occurrence is stored, begun (or ended before anything was done): the run to spawn.
    Begun(Run),
    /// Nothing was stored (the instance changed since it was read): the run as it was made,
    /// whose parts ([`Run::into_parts`]) start the occurrence the ordinary way.
    NotStored(Run),
}

/// How an occurrence that is not stored yet is to be created ([`Run::begin_at_once`]).
pub(crate) struct Unstored {
    lease: Lease,
    condition: StartCondition,
    /// The client key of the request that starts it, committed with it.
    key: Option<vnfm_store::PendingKey>,
}

/// Why a run stopped before its occurrence reached a resting state.
enum Stop {
    /// Another runner owns the occurrence.
    Lost(String),
    /// The runner is shutting down: the run stopped before it started step `next` of
    /// `phase`.
    Shutdown {
        /// The phase it was in.
        phase: Phase,
        /// The step it did not start.
        next: usize,
    },
    /// A write or an internal check failed.
    Failed(LcmError),
    /// The runner's own code panicked; the occurrence was moved to `FAILED_TEMP`.
    Panicked,
}

impl From<WriteError> for Stop {
    fn from(e: WriteError) -> Stop {
        match e {
            WriteError::Lost(w) => Stop::Lost(w),
            WriteError::Failed(e) => Stop::Failed(e),
            e @ WriteError::NotBegun => Stop::Failed(e.into_lcm()),
        }
    }
}

impl From<LcmError> for Stop {
    fn from(e: LcmError) -> Stop {
        Stop::Failed(e)
    }
}

type StepFuture<T> = Pin<Box<dyn Future<Output = Result<T, DriverError>> + Send>>;
type StepResult = Result<(VnfLcmOpOcc, Option<VnfInstance>), ProblemDetails>;

/// Removes a finished run from the registry and wakes its waiters, even if the task panicked.
struct DoneGuard {
    inner: Arc<Inner>,
    id: VnfLcmOpOccId,
    done: watch::Sender<RunState>,
    mine: watch::Receiver<RunState>,
    /// The occurrence as the run left it, when at rest.
    at_rest: Option<Arc<VnfLcmOpOcc>>,
}

impl Drop for DoneGuard {
    fn drop(&mut self) {
        let mut running = self.inner.running();
        // A retry may already have registered the next run of the same occurrence.
        if running
            .get(&self.id)
            .is_some_and(|h| h.done.same_channel(&self.mine))
        {
            running.remove(&self.id);
        }
        drop(running);
        let _ = self.done.send(RunState::Ended(self.at_rest.take()));
    }
}

/// One occurrence being executed by this process.
pub(crate) struct Run {
    inner: Arc<Inner>,
    occ: VnfLcmOpOcc,
    version: Version,
    instance: VnfInstance,
    instance_version: Version,
    ctx: Ctx,
    request: OperationParams,
    resolved: Option<(IndexMap<String, VimConnectionInfo>, Vec<ResolvedVim>)>,
    grant: Option<Arc<Grant>>,
    /// The request `grant` answers, when known.
    grant_request: Option<Arc<vnfm_types::GrantRequest>>,
    /// The grant as it is to be kept with the occurrence (op-occ data `grant`), until the
    /// next write stores it in the same transaction.
    unsaved_grant: Option<serde_json::Value>,
    /// Op-occ data a step produced (a hook's error-handling data, the progress of a mixed
    /// VNF's parts), written by the next write, the one that records the step's end.
    unsaved_data: Vec<(String, serde_json::Value)>,
    /// Whether this run has written the operation's VIM connections into the instance
    /// ([`Run::ensure_operation_vims`]).
    operation_vims_written: bool,
    /// Set while the occurrence is not stored yet ([`Run::begin_at_once`]): its first write
    /// creates it.
    unstored: Option<Unstored>,
    flag: CancellationFlag,
    cancel_tx: watch::Sender<Option<CancelModeType>>,
    cancel_rx: watch::Receiver<Option<CancelModeType>>,
    pending: Option<CancelModeType>,
    lost: Arc<AtomicBool>,
    /// Until when this run holds its lease (milliseconds of the runner's clock), as taken or
    /// last renewed: no step starts past it without renewing first ([`Run::confirm_lease`]).
    lease_until: Arc<AtomicI64>,
    /// The occurrence's span (`lcm.op_occ`) this run executes in.
    span: tracing::Span,
}

impl Run {
    pub(crate) fn new(
        inner: Arc<Inner>,
        occ: VnfLcmOpOcc,
        version: Version,
        (instance, instance_version): (VnfInstance, Version),
        ctx: Ctx,
        request: OperationParams,
    ) -> Run {
        let (cancel_tx, cancel_rx) = watch::channel(None);
        let span = op_span(&occ);
        // Kept with the occurrence by its next write, so that a run after a restart links
        // its trace to this one ([`Run::spawn`]).
        let unsaved_data = vnfm_trace::traceparent(&span)
            .map(|t| (TRACE_CONTEXT_KEY.to_owned(), serde_json::Value::String(t)))
            .into_iter()
            .collect();
        // A lease taken a moment ago, unless the caller says when it ends
        // ([`Run::holding_until`]).
        let lease_until = Arc::new(AtomicI64::new(
            inner.now().plus(inner.config.lease_ttl).millis(),
        ));
        Run {
            inner,
            occ,
            version,
            instance,
            instance_version,
            ctx,
            request,
            resolved: None,
            grant: None,
            grant_request: None,
            unsaved_grant: None,
            unsaved_data,
            operation_vims_written: false,
            unstored: None,
            flag: CancellationFlag::new(),
            cancel_tx,
            cancel_rx,
            pending: None,
            lost: Arc::new(AtomicBool::new(false)),
            lease_until,
            span,
        }
    }

    /// Sets until when the run holds its lease: the expiry its caller took or claimed it with.
    pub(crate) fn holding_until(self, until: Timestamp) -> Run {
        self.lease_until.store(until.millis(), Ordering::SeqCst);
        self
    }

    /// The occurrence as last written.
    pub(crate) fn occ(&self) -> &VnfLcmOpOcc {
        &self.occ
    }

    /// Stores the occurrence already begun, in one write
    /// ([`vnfm_store::OpOccStore::begin_operation`]): its VIMs are resolved
    /// ([`crate::ports::VimDirectory::resolves_locally`]) and its grant asked for
    /// ([`vnfm_driver_api::Nfvo::grants_locally`]) before it exists, then `STARTING` and the
    /// move out of it are written together, under `lease`, if `condition` still holds. Spawn
    /// a [`AtOnce::Begun`] run with [`Entry::Begun`]; an [`AtOnce::NotStored`] one wrote
    /// nothing. `key`, the request's client key, is committed with the occurrence.
    pub(crate) async fn begin_at_once(
        mut self,
        lease: Lease,
        condition: StartCondition,
        key: Option<vnfm_store::PendingKey>,
    ) -> Result<AtOnce, LcmError> {
        self.unstored = Some(Unstored {
            lease,
            condition,
            key,
        });
        match self.begin().await {
            Ok(_) => Ok(AtOnce::Begun(self)),
            Err(WriteError::NotBegun) => Ok(AtOnce::NotStored(self)),
            Err(e) => Err(e.into_lcm()),
        }
    }

    /// The occurrence, the instance as it was before, the VNFD and the forward plan the run
    /// was made of (of a run that wrote nothing, as they were given).
    pub(crate) fn into_parts(self) -> (VnfLcmOpOcc, VnfInstance, OnboardedVnfd, Plan) {
        (self.occ, self.ctx.before, self.ctx.vnfd, self.ctx.forward)
    }

    /// Runs the occurrence in a background task registered in the runner's registry.
    pub(crate) fn spawn(self, entry: Entry) {
        let inner = self.inner.clone();
        let id = self.occ.id.clone();
        let (done_tx, done_rx) = watch::channel(RunState::Running);
        inner.running().insert(
            id.clone(),
            RunHandle {
                cancel: self.cancel_tx.clone(),
                done: done_rx.clone(),
            },
        );
        let guard = DoneGuard {
            inner: inner.clone(),
            id: id.clone(),
            done: done_tx,
            mine: done_rx,
            at_rest: None,
        };
        let span = self.span.clone();
        tokio::spawn(
            async move {
                let mut guard = guard;
                let mut run = self;
                if matches!(entry, Entry::Resume { .. } | Entry::Orphan) {
                    run.link_to_earlier_trace().await;
                }
                let keeper = tokio::spawn(
                    keep_lease(
                        inner.clone(),
                        id.clone(),
                        run.cancel_tx.clone(),
                        run.lost.clone(),
                        run.lease_until.clone(),
                        run.flag.clone(),
                    )
                    .in_current_span(),
                );
                let result = match AssertUnwindSafe(run.execute(entry)).catch_unwind().await {
                    Ok(result) => result,
                    Err(payload) => Err(run.after_panic(&panics::panic_message(&*payload)).await),
                };
                keeper.abort();
                if result.is_ok() && is_at_rest(run.occ.operation_state) {
                    guard.at_rest = Some(Arc::new(run.occ.clone()));
                }
                let release = match result {
                    Ok(()) => false,
                    Err(Stop::Lost(why)) => {
                        tracing::warn!(reason = %why, "stopped: another runner owns the occurrence");
                        false
                    }
                    Err(Stop::Panicked) => false,
                    Err(Stop::Shutdown { phase, next }) => {
                        tracing::info!(
                            phase = phase.as_str(),
                            next_step = next,
                            "stopped at a step boundary: the runner is shutting down"
                        );
                        // Whoever takes it over resumes the step that was not started, be it
                        // a hook.
                        if let Err(e) =
                            super::recovery::note_handover(&inner, &id, phase, next).await
                        {
                            tracing::warn!(error = %e, "could not record the hand-over; recovery will treat the occurrence as interrupted");
                        }
                        true
                    }
                    Err(Stop::Failed(e)) => {
                        tracing::error!(error = %e, "stopped: the runner cannot record progress; the occurrence is left for recovery");
                        true
                    }
                };
                if release {
                    // Let another runner (or this one's recovery) take it over at once.
                    let _ = inner
                        .store
                        .release_lease(&id, &inner.config.runner_id)
                        .await;
                }
            }
            .instrument(span),
        );
    }

    /// Ends a run whose own code panicked: the occurrence goes to `FAILED_TEMP` with the panic
    /// message, or, when that cannot be written, is left to recovery (the lease is released).
    async fn after_panic(&mut self, msg: &str) -> Stop {
        tracing::error!(panic = %msg, "the runner panicked while executing the occurrence");
        let p = problem(
            VNFM_STEP_FAILED,
            ErrorKind::Internal,
            format!(
                "the runner panicked while executing this operation occurrence: {msg}; retry runs the unfinished step again, rollback undoes the operation"
            ),
        );
        match self.transition_to(Event::StepFailed, Some(p), None).await {
            Ok(()) => Stop::Panicked,
            Err(e) => Stop::Failed(e),
        }
    }

    async fn execute(&mut self, entry: Entry) -> Result<(), Stop> {
        match entry {
            Entry::Fresh => self.run_fresh().await,
            Entry::Begun if self.occ.operation_state == State::Processing => {
                self.run_phase(Phase::Forward, 0).await
            }
            Entry::Begun => Ok(()),
            Entry::Orphan => {
                self.load_stored_cancel().await;
                self.run_fresh().await
            }
            Entry::Resume { phase, next } => {
                self.load_stored_cancel().await;
                // The grant's additions must be in the effective request before any step or
                // the final transition uses it. A read error here resurfaces, with the step
                // that needs the grant, from `granted`.
                let _ = self.load_stored_grant().await;
                self.run_phase(phase, next).await
            }
        }
    }

    /// Writes `occ` (and the journal row, instance and notifications) and adopts it.
    async fn commit(
        &mut self,
        occ: VnfLcmOpOcc,
        journal: Option<vnfm_store::JournalStep>,
        instance: Option<VnfInstance>,
        notes: Vec<LccnNotification>,
    ) -> Result<(), WriteError> {
        let mut instance = instance;
        if let Some(i) = instance.as_mut() {
            i.links = instance_links(
                &*self.inner.config.links,
                &i.id,
                i.instantiation_state,
                ApiVersion::V2,
            );
        }
        let mut rec = StepRecord {
            occ,
            expected_state: self.occ.operation_state,
            expected_version: self.version,
            owner: self.inner.config.runner_id.clone(),
            journal,
            instance: instance.map(|i| (i, self.instance_version)),
            outbox: Vec::new(),
            data: self
                .unsaved_grant
                .take()
                .map(|g| (GRANT_KEY.to_owned(), g))
                .into_iter()
                .chain(self.unsaved_data.drain(..))
                .collect(),
        };
        let written = match self.unstored.take() {
            None => write(&self.inner, &mut rec, &notes, Some(&self.instance)).await?,
            Some(start) => {
                let started = self.occ.clone();
                write_begun(
                    &self.inner,
                    &started,
                    &start,
                    &mut rec,
                    &notes,
                    &self.instance,
                )
                .await
                .map_err(WriteError::Failed)?
                .ok_or(WriteError::NotBegun)?
            }
        };
        let ended = rec.occ.operation_state.is_final() && !rec.expected_state.is_final();
        self.occ = rec.occ;
        self.version = written.op_occ_version;
        if let (Some((i, _)), Some(v)) = (rec.instance, written.instance_version) {
            self.instance = i;
            self.instance_version = v;
        }
        if ended {
            vims::release_after(
                &self.inner,
                &self.occ,
                Some(&self.ctx.before),
                Some(&self.instance),
            )
            .await;
        }
        Ok(())
    }

    /// Moves the occurrence by `event` and writes it with its notification (and `journal`).
    pub(crate) async fn transition_to(
        &mut self,
        event: Event,
        error: Option<ProblemDetails>,
        journal: Option<vnfm_store::JournalStep>,
    ) -> Result<(), LcmError> {
        let from = self.occ.clone();
        self.finish(&from, event, error, journal, None, Vec::new())
            .await
            .map_err(WriteError::into_lcm)
    }

    /// The instance to write with the final transition: a rolled-back operation leaves no
    /// VIM connection its request brought (the rollback plan may have had no step to remove
    /// them, e.g. when the first hook failed).
    fn finished_instance(
        &self,
        event: Event,
        instance: Option<VnfInstance>,
    ) -> Option<VnfInstance> {
        if event != Event::RolledBack {
            return instance;
        }
        let mut out = instance.clone().unwrap_or_else(|| self.instance.clone());
        apply::restore_request_vims(&mut out, &self.ctx.before, &self.request);
        if instance.is_none() && out == self.instance {
            return None;
        }
        Some(out)
    }

    /// The package a rollback of CHANGE_VNFPKG restores, the instance's own before the change
    /// (the occurrence's VNFD is the package changed to); `None` for every other step.
    async fn restored_package(&self, step: &InfraStep) -> Result<Option<OnboardedVnfd>, LcmError> {
        match step {
            InfraStep::RollbackChangeVnfpkg { restore_vnfd_id } => self
                .inner
                .onboarded(restore_vnfd_id.as_str())
                .await
                .map(Some),
            _ => Ok(None),
        }
    }

    fn budget(&self, step: &Step) -> Duration {
        let base = self.inner.config.step_timeout;
        let extra = |s: Option<u32>| Duration::from_secs(u64::from(s.unwrap_or(0)));
        match step {
            Step::Hook(h) => h.timeout_seconds.map(Duration::from_secs).unwrap_or(base),
            Step::Infra(InfraStep::Terminate {
                graceful_timeout_seconds,
                ..
            }) => base + extra(*graceful_timeout_seconds),
            Step::Infra(InfraStep::Operate {
                graceful_stop_timeout_seconds,
                ..
            }) => base + extra(*graceful_stop_timeout_seconds),
            _ => base,
        }
    }

    async fn vims(&mut self) -> Result<Vec<ResolvedVim>, LcmError> {
        let map = self
            .instance
            .vim_connection_info
            .clone()
            .unwrap_or_default();
        if let Some((m, v)) = &self.resolved
            && *m == map
        {
            return Ok(v.clone());
        }
        let v = resolve_vims(self.inner.vims.clone(), &self.instance.id, map.clone()).await?;
        self.keep_resolved((map, v.clone()));
        Ok(v)
    }

    /// Keeps the resolved VIM connections and names their VIMs on the occurrence's span.
    fn keep_resolved(&mut self, resolved: (IndexMap<String, VimConnectionInfo>, Vec<ResolvedVim>)) {
        if !self.span.is_disabled() {
            // The VIM's id; the connection's key for a connection that names none.
            let ids: Vec<&str> = resolved
                .1
                .iter()
                .map(|vim| vim.vim_id().unwrap_or(&vim.connection_id))
                .collect();
            self.span.record("vim_id", ids.join(","));
        }
        self.resolved = Some(resolved);
    }

    /// Links the occurrence's span to the trace of the run before a restart, whose trace
    /// context the occurrence keeps (op-occ data [`TRACE_CONTEXT_KEY`]).
    async fn link_to_earlier_trace(&self) {
        if self.span.is_disabled() {
            return;
        }
        match self
            .inner
            .store
            .get_op_occ_data(&self.occ.id, TRACE_CONTEXT_KEY)
            .await
        {
            Ok(Some(serde_json::Value::String(earlier))) => vnfm_trace::link(&self.span, &earlier),
            Ok(_) => {}
            Err(e) => tracing::debug!(error = %e, "the earlier trace context is unreadable"),
        }
    }

    fn flavour_id(&self) -> Option<String> {
        self.instance
            .instantiated_vnf_info
            .as_ref()
            .map(|i| i.flavour_id.clone())
            .or_else(|| self.ctx.forward.flavour_id.clone())
    }
}
