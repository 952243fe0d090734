//! Embedding the VNF lifecycle manager.
//!
//! [`builder`] assembles an [`Lcm`]: it opens the store from a URL (`sqlite:///path/to.db`,
//! `sqlite::memory:`, `postgres://...`), registers the infrastructure drivers (one per family
//! of VIM types) and the management driver that runs LCM hooks, takes the VIM directory, the
//! notification router and the package catalog (defaulting to a [`VimRegistry`] over the same
//! store when a [`Keyring`] is given, else [`InlineVimDirectory`]; a [`SubscriptionRouter`]
//! over the subscriptions in the same store; and a [`StoreCatalog`], which answers from the
//! VNFDs given with [`Builder::catalog`] and then from the packages onboarded in the store),
//! and takes over the operation occurrences a previous run of the process left behind
//! ([`Lcm::recover`]) before returning.
//!
//! # VIM credentials
//! Requests may carry VIM credentials inline (`vimConnectionInfo` entries with `accessInfo`).
//! With a keyring ([`Builder::keyring`]) the runner seals them, before anything of the
//! operation is stored, into VIMs of the instance's own in the [`VimRegistry`] (secrets
//! Fernet-encrypted), and stores only references to them; they are deleted again when a
//! rollback drops them, when a later operation replaces them, and with the VNF identifier.
//! Without a keyring, [`InlineVimDirectory`] stores such credentials as given (and logs a
//! warning once); the views the [`Lcm`] returns show them as `"***"` either way. Production
//! deployments give a keyring.
//!
//! Operations return at once with the occurrence in `STARTING`; it runs in the background.
//! [`Lcm::wait`] waits for it to come to rest (`COMPLETED`, `FAILED_TEMP`, ...).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use std::time::Duration;
//! use vnfm::lcm::{self, MemoryCatalog, MemoryInfraDriver};
//!
//! let catalog = MemoryCatalog::new();
//! let vnfd_id = lcm::onboard_dir(&catalog, std::path::Path::new("vnfd-samples/hello-vnf"))?;
//! let lcm = lcm::builder()
//!     .store_url("sqlite:///var/lib/vnfm/lcm.db")
//!     .infra_driver(Arc::new(MemoryInfraDriver::new()))
//!     .catalog(Arc::new(catalog))
//!     .build()
//!     .await?;
//! let vnf = lcm
//!     .create_vnf_identifier(serde_json::from_value(serde_json::json!({"vnfdId": vnfd_id}))?)
//!     .await?;
//! let op = lcm
//!     .instantiate(&vnf.id, serde_json::from_value(serde_json::json!({"flavourId": "simple"}))?)
//!     .await?;
//! let done = lcm.wait(&op.id, Duration::from_secs(60)).await?;
//! println!("{:?}", done.operation_state);
//! # Ok(()) }
//! ```
//!
//! Notifications are written to the store's outbox in the same transaction as each state
//! change. Sending them is the [`Deliverer`]'s job, a background task an embedder starts once
//! per process with the [`Keyring`] that sealed the subscriptions' credentials:
//!
//! ```no_run
//! # async fn demo(store: std::sync::Arc<dyn vnfm::lcm::Store>) -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use vnfm::lcm::{Deliverer, DelivererConfig, Keyring, Subscriptions};
//!
//! let keyring = Arc::new(Keyring::from_key_file("/etc/vnfm/fernet.keys")?);
//! // Notifications and callback tests go out over HTTP.
//! let sender = Arc::new(vnfm::lcm::HttpCallbackSender::new(std::time::Duration::from_secs(5))?);
//! let subscriptions = Subscriptions::new(store.clone(), keyring.clone(), sender.clone());
//! // ... `subscriptions.router()` is what the builder's default router does ...
//! let deliverer = Deliverer::start(store, keyring, sender, DelivererConfig::new("vnfm-1"))?;
//! # drop((subscriptions, deliverer)); Ok(()) }
//! ```
//!
//! # Retry-safe calls
//! A caller that may repeat a call (after a timeout, a lost connection, its own restart)
//! passes a [`ClientKey`]: [`Lcm::create_vnf_identifier_keyed`] and [`Lcm::start_keyed`]
//! create the instance or start the occurrence at most once per key, across restarts and
//! every process sharing the store, and return what the first call created:
//!
//! ```no_run
//! # async fn demo(lcm: vnfm::lcm::Lcm, req: vnfm::lcm::types::CreateVnfRequest) -> Result<(), vnfm::lcm::LcmError> {
//! use vnfm::lcm::ClientKey;
//!
//! // One key per intended change, kept by the caller until it has the answer.
//! let key = ClientKey::new("nfvo-1", "0b7c5a0e-6f7e-4a53-9d53-3c4f1a2b9e11");
//! let first = lcm.create_vnf_identifier_keyed(req.clone(), None, &key).await?;
//! let again = lcm.create_vnf_identifier_keyed(req, None, &key).await?;
//! assert_eq!(first.id, again.id);
//! # Ok(()) }
//! ```
//!
//! VIMs are registered, with their secrets encrypted, through [`VimRegistry`], which is also
//! the [`VimDirectory`] the builder uses when given a keyring.
//!
//! See `examples/embedded.rs` for a complete program.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

mod assembly;
pub mod catalog;
mod late_sinks;
pub mod packages;
pub mod spool;

pub use assembly::{NfvoSetting, Vnfm, key_file};
pub use catalog::{LocalContent, StoreCatalog};
pub use packages::{PackageLimits, Packages};

pub use vnfm_assurance::fm::{AutoHealPolicy, AutoScalePolicy, AutomaticOutcome, Bounds};
pub use vnfm_assurance::pm::{PerformanceManager, PmOptions};
pub use vnfm_driver_api::MgmtDriverRouter;
pub use vnfm_driver_api::memory::{MEMORY_VIM_TYPE, MemoryInfraDriver, RecordingMgmtDriver};
pub use vnfm_driver_api::{
    ArtifactSource, CallbackSender, ContentError, ContentFetcher, ContentRequest, ContentSink,
    DeferredGrants, DriverError, GrantDecision, InfraDriver, LocalNfvo, MgmtDriver, Nfvo, NfvoAuth,
    NfvoSettings, NoContent, UserDataCall, UserDataScripts, VimKind, VimKinds,
};
pub use vnfm_lcm::nfvo::{load_nfvo_settings, save_nfvo_settings};
pub use vnfm_lcm::ports::{
    NotificationRouter, OnboardedVnfd, PackageCatalog, SealedVim, VimDirectory,
};
pub use vnfm_lcm::runner::{
    ClientKey, Clock, KeyGuard, KeyOutcome, KeyPolicy, RecoveryReport, SystemClock, is_at_rest,
};
/// The operation-occurrence state machine (SOL003 clause 5.6.2.2).
pub use vnfm_lcm::state;
pub use vnfm_lcm::{
    CreateOptions, Deliverer, DelivererConfig, InlineVimDirectory, Keyring, Lcm, LcmConfig,
    LcmError, MemoryCatalog, OperationRequest, SubscriptionRouter, Subscriptions, VimRegistry,
};
pub use vnfm_mgmt_script::{PYTHON_ARTIFACT_TYPE, ScriptConfig, ScriptMgmtDriver};
pub use vnfm_outbound::{
    HttpCallbackSender, HttpContentFetcher, IssuerTokens, NfvoTimings, OutboundError,
    OutboundOAuth, Sol003Nfvo, install_crypto_provider,
};
pub use vnfm_prometheus::{ClientOptions as PrometheusOptions, PromqlOverrides, PushedMetrics};
pub use vnfm_store::{InstanceQuery, OpOccQuery, Page, Store, StoreError};
pub use vnfm_types as types;

/// Why an embedded [`Lcm`] could not be built, or a package not onboarded.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// Neither a store URL, a store nor a data directory was given.
    #[error(
        "no store: call store_url(\"sqlite:///path/to.db\"), store(...) or data_dir(...) on the builder"
    )]
    NoStore,
    /// [`Builder::assemble`] needs a keyring to seal subscription and VIM secrets.
    #[error("no keyring: call keyring(...) or data_dir(...) on the builder")]
    NoKeyring,
    /// A file or directory of the data directory could not be read or written.
    #[error("{}: {source}", path.display())]
    DataDir {
        /// The file or directory.
        path: PathBuf,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// The key file could not be read or created.
    #[error("{}: {source}", path.display())]
    Keys {
        /// The key file.
        path: PathBuf,
        /// What failed.
        #[source]
        source: Box<LcmError>,
    },
    /// The store could not be opened or migrated.
    #[error("opening the store failed: {0}")]
    Store(#[source] StoreError),
    /// The remote NFVO settings could not be stored or read.
    #[error("NFVO settings: {0}")]
    NfvoSettings(#[source] LcmError),
    /// An HTTP client (callbacks, the remote NFVO) could not be set up.
    #[error("{what}: {source}")]
    Outbound {
        /// Which client.
        what: &'static str,
        /// What failed.
        #[source]
        source: OutboundError,
    },
    /// The notification deliverer could not start.
    #[error("starting the notification deliverer failed: {0}")]
    Deliverer(#[source] LcmError),
    /// The Prometheus metrics source could not be set up (a bad URL, a bad PromQL template).
    #[error("the Prometheus metrics source: {0}")]
    Prometheus(#[source] vnfm_prometheus::Error),
    /// Recovering the occurrences of a previous run failed.
    #[error("recovering the operations of a previous run failed: {0}")]
    Recovery(#[source] LcmError),
    /// A file of the package directory could not be created, written, read or moved.
    #[error("{what} {} failed: {source}", path.display())]
    PackageFile {
        /// What was being done (`writing`, `keeping the upload as`).
        what: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// Package content grew beyond the limit it was received with.
    #[error(
        "the package has more than {max} bytes; this server accepts at most {max} (--max-package-mib)"
    )]
    PackageTooLarge {
        /// The limit, in bytes.
        max: u64,
    },
    /// A package whose id or content digest cannot name a file of the package directory.
    #[error(
        "package {id} has no file name: its id or digest has characters other than letters, digits, - and _"
    )]
    PackageFileName {
        /// The package id (its first 80 characters).
        id: String,
    },
    /// The store failed while package records or content were read or written.
    #[error("store: {0}")]
    PackageStore(#[source] StoreError),
    /// A package the store records as onboarded could not be read again.
    #[error("stored package {id} cannot be opened: {message}")]
    StoredPackage {
        /// The package id.
        id: String,
        /// What is wrong.
        message: String,
    },
    /// A package resource does not exist.
    #[error("{0}")]
    PackageNotFound(String),
    /// A package is not in a state that allows the request (being onboarded, enabled, in
    /// use, ...).
    #[error("{0}")]
    PackageConflict(String),
    /// A package cannot serve the request (not onboarded, an ASD, no package has the VNFD).
    #[error("{0}")]
    PackageUnprocessable(String),
    /// A package request is malformed or not allowed.
    #[error("{message}")]
    PackageRequest {
        /// The JSON pointer of the offending value.
        pointer: String,
        /// What is wrong and what to do.
        message: String,
    },
    /// The NFVO asked for a package could not be reached.
    #[error("{0}")]
    PackageUnavailable(String),
    /// The notifications of a package change could not be routed.
    #[error("notifying a package change failed: {0}")]
    PackageNotification(#[source] LcmError),
    /// The onboarding task ended abnormally.
    #[error("onboarding task failed: {0}")]
    OnboardingTask(String),
    /// A package could not be read or holds no valid VNFD.
    #[error("package {path} cannot be onboarded: {message}")]
    Package {
        /// The package path.
        path: String,
        /// What is wrong (the first error diagnostics).
        message: String,
    },
}

impl From<StoreError> for EmbedError {
    /// A store failure while package records or content were read or written.
    fn from(e: StoreError) -> Self {
        EmbedError::PackageStore(e)
    }
}

/// A builder with the defaults described in the [module docs](self).
pub fn builder() -> Builder {
    Builder {
        store_url: None,
        store: None,
        data_dir: None,
        infra: Vec::new(),
        mgmt: None,
        scripts: None,
        vims: None,
        keyring: None,
        router: None,
        catalog: None,
        package_dir: None,
        archive_limits: vnfm_csar::Limits::default(),
        config: LcmConfig::default(),
        recovery_interval: Some(Duration::from_secs(30)),
        nfvo: None,
        nfvo_setting: NfvoSetting::Stored,
        max_package_bytes: vnfm_outbound::DEFAULT_MAX_PACKAGE_BYTES,
        upload_allow_list: Vec::new(),
        sender: None,
        content: None,
        outbound_oauth: None,
        delivery: None,
        vim_kinds: VimKinds::new(),
        auto_heal: Some(AutoHealPolicy::default()),
        auto_scale: Some(AutoScalePolicy::default()),
        metrics: None,
        pm_options: PmOptions::default(),
        collect_every: Duration::from_secs(5),
        infra_watch: Some(InfraWatchOptions::default()),
    }
}

/// How the infrastructure watch ([`vnfm_assurance::fm::infra_watch`]) runs: how often it asks the
/// drivers about every instantiated instance, and how long one instance's observation may
/// take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InfraWatchOptions {
    /// The period of the sweeps (default 30 s).
    pub every: Duration,
    /// The longest one driver may take to observe one instance (default 20 s).
    pub timeout: Duration,
}

impl Default for InfraWatchOptions {
    fn default() -> Self {
        InfraWatchOptions {
            every: Duration::from_secs(30),
            timeout: Duration::from_secs(20),
        }
    }
}

/// Assembles an embedded [`Lcm`]; see [`builder`].
pub struct Builder {
    store_url: Option<String>,
    store: Option<Arc<dyn Store>>,
    data_dir: Option<PathBuf>,
    infra: Vec<Arc<dyn InfraDriver>>,
    mgmt: Option<Arc<dyn MgmtDriver>>,
    scripts: Option<ScriptConfig>,
    vims: Option<Arc<dyn VimDirectory>>,
    keyring: Option<Arc<Keyring>>,
    router: Option<Arc<dyn NotificationRouter>>,
    catalog: Option<Arc<MemoryCatalog>>,
    package_dir: Option<PathBuf>,
    archive_limits: vnfm_csar::Limits,
    config: LcmConfig,
    recovery_interval: Option<Duration>,
    nfvo: Option<Arc<dyn Nfvo>>,
    nfvo_setting: NfvoSetting,
    max_package_bytes: usize,
    upload_allow_list: Vec<String>,
    sender: Option<Arc<dyn CallbackSender>>,
    content: Option<Arc<dyn ContentFetcher>>,
    outbound_oauth: Option<OutboundOAuth>,
    delivery: Option<DelivererConfig>,
    vim_kinds: VimKinds,
    auto_heal: Option<AutoHealPolicy>,
    auto_scale: Option<AutoScalePolicy>,
    metrics: Option<Arc<dyn vnfm_driver_api::metrics::MetricsSource>>,
    pm_options: PmOptions,
    collect_every: Duration,
    infra_watch: Option<InfraWatchOptions>,
}

impl fmt::Debug for Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("store_url", &self.store_url.as_deref().map(redact_url))
            .field("infra_drivers", &self.infra.len())
            .field("mgmt_driver", &self.mgmt.is_some())
            .field("keyring", &self.keyring)
            .field("config", &self.config)
            .field("recovery_interval", &self.recovery_interval)
            .finish_non_exhaustive()
    }
}

/// The URL without a password (`postgres://user:***@host/db`).
fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    match rest.split_once('@') {
        Some((userinfo, host)) if userinfo.contains(':') => {
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{scheme}://{user}:***@{host}")
        }
        _ => url.to_string(),
    }
}

impl Builder {
    /// The store to open: `sqlite:///abs/path.db`, `sqlite::memory:` or `postgres://...`.
    pub fn store_url(mut self, url: impl Into<String>) -> Self {
        self.store_url = Some(url.into());
        self
    }

    /// An already opened store (instead of [`Builder::store_url`]).
    pub fn store(mut self, store: Arc<dyn Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// Registers an infrastructure driver for the VIM types it serves (and, when it declares
    /// one, the [`VimKind`] of those types, so VIMs of them can be registered).
    pub fn infra_driver(mut self, driver: Arc<dyn InfraDriver>) -> Self {
        if let Some(kind) = driver.vim_kind() {
            self.vim_kinds.add(kind);
        }
        self.infra.push(driver);
        self
    }

    /// Adds a [`VimKind`] for VIM types no registered driver declares one for (a driver
    /// registered later may replace it for its own types).
    pub fn vim_kind(mut self, kind: Arc<dyn VimKind>) -> Self {
        self.vim_kinds.add(kind);
        self
    }

    /// Sets the management driver that runs the LCM hooks VNFDs bind (with
    /// [`Builder::mgmt_scripts`], the hooks bound to anything but Python scripts).
    pub fn mgmt_driver(mut self, driver: Arc<dyn MgmtDriver>) -> Self {
        self.mgmt = Some(driver);
        self
    }

    /// Runs the hooks VNFDs bind to Python scripts (`tosca.artifacts.Implementation.Python`,
    /// OpenStack Tacker v2 management scripts, run unchanged) with a [`ScriptMgmtDriver`]
    /// configured by `config`; hooks of other artifact types go to [`Builder::mgmt_driver`].
    ///
    /// The user data classes of OpenStack requests (Tacker's `lcm-operation-user-data`) are the
    /// OpenStack driver's business: give it a runner with the same configuration,
    /// `OpenStackDriver::new(..).with_user_data_scripts(Arc::new(ScriptMgmtDriver::new(config)))`
    /// (a [`ScriptMgmtDriver`] is a [`UserDataScripts`]), as `vnfm serve` does.
    pub fn mgmt_scripts(mut self, config: ScriptConfig) -> Self {
        self.scripts = Some(config);
        self
    }

    /// Sets the VIM directory (default: a [`VimRegistry`] over the store when a keyring is
    /// given, else [`InlineVimDirectory`], which stores inline credentials as given).
    pub fn vim_directory(mut self, vims: Arc<dyn VimDirectory>) -> Self {
        self.vims = Some(vims);
        self
    }

    /// The keyring that encrypts VIM secrets at rest: unless a VIM directory is set, the
    /// builder uses a [`VimRegistry`] over the same store with it, so inline credentials in
    /// requests are stored encrypted and instances may reference registered VIMs.
    pub fn keyring(mut self, keyring: Arc<Keyring>) -> Self {
        self.keyring = Some(keyring);
        self
    }

    /// Sets the notification router (default: a [`SubscriptionRouter`] over the store, whose
    /// subscription cache lives one second; pass `Subscriptions::router()` to share the cache
    /// of the subscription service).
    pub fn notification_router(mut self, router: Arc<dyn NotificationRouter>) -> Self {
        self.router = Some(router);
        self
    }

    /// VNFDs onboarded in process: the core's [`StoreCatalog`] answers from `catalog` first,
    /// then from the onboarded packages of the store (default: an empty [`MemoryCatalog`]).
    pub fn catalog(mut self, catalog: Arc<MemoryCatalog>) -> Self {
        self.catalog = Some(catalog);
        self
    }

    /// The package directory: uploads being received and local copies of package content
    /// (default `<data_dir>/packages`, without a data directory `vnfm-packages-<pid>` in the
    /// system's temporary directory).
    pub fn package_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.package_dir = Some(dir.into());
        self
    }

    /// The archive limits stored packages are opened with (default [`vnfm_csar::Limits`]'s).
    pub fn archive_limits(mut self, limits: vnfm_csar::Limits) -> Self {
        self.archive_limits = limits;
        self
    }

    /// The catalog of onboarded VNFDs over `store`, with the in-process VNFDs as its cache.
    /// Without a package or data directory, the packages are kept in a temporary directory
    /// removed when the catalog (and every clone of its spool) is dropped.
    fn store_catalog(&mut self, store: &Arc<dyn Store>) -> Result<Arc<StoreCatalog>, EmbedError> {
        let spool = match (&self.package_dir, &self.data_dir) {
            (Some(dir), _) => spool::Spool::new(dir.clone()),
            (None, Some(data)) => spool::Spool::new(data.join("packages")),
            (None, None) => spool::Spool::temporary().map_err(|source| EmbedError::DataDir {
                path: std::env::temp_dir(),
                source,
            })?,
        };
        Ok(Arc::new(StoreCatalog::with_spool(
            store.clone(),
            self.catalog.take().unwrap_or_default(),
            spool,
            self.archive_limits.clone(),
        )))
    }

    /// Sets the NFVO asked for grants before resources change (default: the remote NFVO kept
    /// in the store, see [`Builder::nfvo_setting`], else [`LocalNfvo`], which grants
    /// everything; [`Sol003Nfvo`] for a remote SOL003 NFVO; or an embedder's own).
    pub fn nfvo(mut self, nfvo: Arc<dyn Nfvo>) -> Self {
        self.nfvo = Some(nfvo);
        self
    }

    /// What [`Builder::assemble`] does with the remote NFVO connection kept in the store
    /// (its secret sealed with the keyring) when no [`Builder::nfvo`] is given: use it
    /// (default), replace it, or remove it.
    pub fn nfvo_setting(mut self, setting: NfvoSetting) -> Self {
        self.nfvo_setting = setting;
        self
    }

    /// The largest package a remote NFVO may send, or [`Packages::upload_from_uri`] fetch
    /// (default [`vnfm_outbound::DEFAULT_MAX_PACKAGE_BYTES`]).
    pub fn max_package_bytes(mut self, bytes: usize) -> Self {
        self.max_package_bytes = bytes;
        self
    }

    /// The URI prefixes [`Packages::upload_from_uri`] may fetch package content from
    /// (default: none, such uploads are refused).
    pub fn upload_allow_list(mut self, prefixes: Vec<String>) -> Self {
        self.upload_allow_list = prefixes;
        self
    }

    /// The data directory (created with mode 0700): unless given otherwise, the store is
    /// `<dir>/vnfm.db` (SQLite, mode 0600) and the keyring `<dir>/fernet.keys` (a fresh key
    /// on first start, mode 0600).
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.data_dir = Some(dir.into());
        self
    }

    /// Sets how notifications and callback tests reach subscribers (default:
    /// [`HttpCallbackSender`]).
    pub fn callback_sender(mut self, sender: Arc<dyn CallbackSender>) -> Self {
        self.sender = Some(sender);
        self
    }

    /// Calls the remote NFVO and/or the subscribers' callbacks under the given prefixes with
    /// access tokens of the server's own authorization server ([`OutboundOAuth`]). Applies to
    /// the default [`HttpCallbackSender`] and to the remote NFVO kept in the store, not to a
    /// [`Builder::callback_sender`] or [`Builder::nfvo`] given. For a callback, a
    /// subscription's own `authentication` wins; for the NFVO, these tokens replace the
    /// authentication kept with its connection.
    pub fn outbound_oauth(mut self, oauth: OutboundOAuth) -> Self {
        self.outbound_oauth = Some(oauth);
        self
    }

    /// Sets how content the VNFM is pointed at (a package uploaded from a URI) is fetched
    /// (default: [`HttpContentFetcher`]).
    pub fn content_fetcher(mut self, content: Arc<dyn ContentFetcher>) -> Self {
        self.content = Some(content);
        self
    }

    /// Starts a notification [`Deliverer`] with `config` when the assembled services start
    /// ([`Vnfm::start`]); its claim owner is the runner id. Writes that enqueue notifications
    /// wake it.
    pub fn deliver_notifications(mut self, config: DelivererConfig) -> Self {
        self.delivery = Some(config);
        self
    }

    /// Sets the runner configuration (lease TTL, step timeout, runner id, ...).
    pub fn config(mut self, config: LcmConfig) -> Self {
        self.config = config;
        self
    }

    /// How long client keys (idempotency keys, [`ClientKey`]) are kept after their first
    /// use (default 24 hours); expired keys are swept with the recovery sweep.
    pub fn client_key_ttl(mut self, ttl: Duration) -> Self {
        self.config.client_keys.ttl = ttl;
        self
    }

    /// The bounds of automatic healing ([`vnfm_assurance::fm::auto_heal`]; default
    /// [`AutoHealPolicy::default`]); `None` turns it off for every instance. Each instance
    /// opts in with `vnfConfigurableProperties.isAutohealEnabled: true`. Used by
    /// [`Builder::assemble`], whose fault manager starts the heals.
    pub fn auto_heal(mut self, policy: Option<AutoHealPolicy>) -> Self {
        self.auto_heal = policy;
        self
    }

    /// The bounds of automatic scaling ([`vnfm_assurance::fm::auto_scale`]; default
    /// [`AutoScalePolicy::default`]); `None` turns it off for every instance. Each instance
    /// opts in with `vnfConfigurableProperties.isAutoscaleEnabled: true`; the requests come
    /// from the monitoring system (`auto_scale` alerts at the Alertmanager receiver).
    pub fn auto_scale(mut self, policy: Option<AutoScalePolicy>) -> Self {
        self.auto_scale = policy;
        self
    }

    /// Where performance management reads its measurements (PM jobs, thresholds); without
    /// one, creating a PM job or threshold is refused. See [`prometheus_metrics`].
    pub fn metrics_source(
        mut self,
        source: Arc<dyn vnfm_driver_api::metrics::MetricsSource>,
    ) -> Self {
        self.metrics = Some(source);
        self
    }

    /// Settings of performance management (default [`PmOptions::default`]), and how often
    /// its collector looks for due reports and threshold evaluations (default 5 s).
    pub fn performance(mut self, options: PmOptions, collect_every: Duration) -> Self {
        self.pm_options = options;
        self.collect_every = collect_every;
        self
    }

    /// The infrastructure watch: alarms raised from what the infrastructure drivers observe
    /// on each instantiated instance (a crash-looping pod, a server in `ERROR`) and cleared
    /// when they no longer do (default [`InfraWatchOptions::default`]; `None` turns it off).
    /// Started by [`Vnfm::start`].
    pub fn infra_watch(mut self, options: Option<InfraWatchOptions>) -> Self {
        self.infra_watch = options;
        self
    }

    /// How long the runner's lease on an occurrence lasts unless renewed, and how often it is
    /// renewed (defaults 6 s and 2 s, see [`LcmConfig::lease_ttl`]): replicas on one store
    /// take over a dead one's running occurrences about `ttl` after its last renewal, and a
    /// replica that was stopped longer than `ttl` starts no further step of them.
    pub fn leases(mut self, ttl: Duration, renew_every: Duration) -> Self {
        self.config.lease_ttl = ttl;
        self.config.lease_renew_interval = renew_every;
        self
    }

    /// How often to sweep for occurrences of dead runners after start-up (default 30 s;
    /// `None`: only at start-up). Between sweeps, expired and released leases are looked
    /// for every [`LcmConfig::takeover_poll`] (1 s). The sweep stops at [`Lcm::shutdown`].
    pub fn recovery_interval(mut self, every: Option<Duration>) -> Self {
        self.recovery_interval = every;
        self
    }

    /// Opens the store, builds the [`Lcm`] and recovers what a previous run left. Needs a
    /// tokio runtime.
    ///
    /// [`Builder::assemble`] builds the services around it too (subscriptions, the VIM
    /// registry, notification delivery).
    pub async fn build(mut self) -> Result<Lcm, EmbedError> {
        let (store, catalog) = self.open_store_and_catalog().await?;
        let keyring = self.open_keyring()?;
        let router = self.router.take().unwrap_or_else(|| {
            Arc::new(
                SubscriptionRouter::new(store.clone(), Duration::from_secs(1))
                    .with_links(self.config.links.clone()),
            )
        });
        let vims: Arc<dyn VimDirectory> = match (self.vims.take(), keyring) {
            (Some(v), _) => v,
            (None, Some(k)) => Arc::new(VimRegistry::new(store.clone(), k, self.vim_kinds.clone())),
            (None, None) => Arc::new(InlineVimDirectory),
        };
        let nfvo = self.nfvo.take();
        let mgmt = mgmt_of(self.mgmt.take(), self.scripts.take());
        let lcm = self.core(Lcm::builder(store, vims, router, catalog), nfvo, mgmt);
        start_runner(&lcm, self.recovery_interval).await?;
        Ok(lcm)
    }

    /// The store and the catalog over it: the first step of [`Builder::build`] and
    /// [`Builder::assemble`].
    async fn open_store_and_catalog(
        &mut self,
    ) -> Result<(Arc<dyn Store>, Arc<StoreCatalog>), EmbedError> {
        let store = self.open_store().await?;
        let catalog = self.store_catalog(&store)?;
        Ok((store, catalog))
    }

    /// The core from `b` (its store, VIM directory, router and catalog chosen by the caller)
    /// with this builder's configuration, VIM kinds and infrastructure drivers, `nfvo` and
    /// `mgmt`: the one place [`Builder::build`] and [`Builder::assemble`] make the [`Lcm`].
    fn core(
        &mut self,
        b: vnfm_lcm::LcmBuilder,
        nfvo: Option<Arc<dyn Nfvo>>,
        mgmt: Option<Arc<dyn MgmtDriver>>,
    ) -> Lcm {
        let mut b = b
            .config(std::mem::take(&mut self.config))
            .vim_kinds(self.vim_kinds.clone());
        if let Some(n) = nfvo {
            b = b.nfvo(n);
        }
        for d in std::mem::take(&mut self.infra) {
            b = b.infra_driver(d);
        }
        if let Some(m) = mgmt {
            b = b.mgmt_driver(m);
        }
        b.build()
    }
}

/// A metrics source on the Prometheus server at `url` (bearer or basic credentials in
/// `options`), measuring each SOL003 metric with the default PromQL of
/// `docs/fault-and-performance.md` replaced or extended by `overrides` (metric name → object
/// type → template).
pub fn prometheus_metrics(
    url: &str,
    options: vnfm_prometheus::ClientOptions,
    overrides: &vnfm_prometheus::PromqlOverrides,
) -> Result<Arc<dyn vnfm_driver_api::metrics::MetricsSource>, EmbedError> {
    let client =
        vnfm_prometheus::PrometheusClient::new(url, options).map_err(EmbedError::Prometheus)?;
    let catalogue =
        vnfm_prometheus::PmCatalogue::with_overrides(overrides).map_err(EmbedError::Prometheus)?;
    Ok(Arc::new(vnfm_prometheus::PrometheusMetrics::new(
        client, catalogue,
    )))
}

/// The management driver: `mgmt`, with the hooks bound to Python scripts routed to a
/// [`ScriptMgmtDriver`] when `scripts` is given.
fn mgmt_of(
    mgmt: Option<Arc<dyn MgmtDriver>>,
    scripts: Option<ScriptConfig>,
) -> Option<Arc<dyn MgmtDriver>> {
    let Some(config) = scripts else {
        return mgmt;
    };
    let router = MgmtDriverRouter::new().route(
        [PYTHON_ARTIFACT_TYPE],
        Arc::new(ScriptMgmtDriver::new(config)),
    );
    Some(Arc::new(match mgmt {
        Some(other) => router.fallback(other),
        None => router,
    }))
}

/// Takes over what a previous run left and keeps sweeping every `recovery_interval`.
async fn start_runner(lcm: &Lcm, recovery_interval: Option<Duration>) -> Result<(), EmbedError> {
    lcm.recover().await.map_err(EmbedError::Recovery)?;
    if let Some(every) = recovery_interval {
        lcm.spawn_recovery(every);
    }
    Ok(())
}

/// Package files read from an opened CSAR (zip or directory).
struct PackageFiles(std::sync::Mutex<vnfm_csar::Package>);

/// The files of an opened package as the [`ArtifactSource`] of an [`OnboardedVnfd`].
pub fn package_files(package: vnfm_csar::Package) -> Arc<dyn ArtifactSource> {
    Arc::new(PackageFiles(std::sync::Mutex::new(package)))
}

impl ArtifactSource for PackageFiles {
    fn read(&self, path: &str) -> std::io::Result<Vec<u8>> {
        let package = self.0.lock().unwrap_or_else(|e| e.into_inner());
        package
            .read(path)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::NotFound, e.to_string()))
    }

    fn paths(&self) -> Option<Vec<String>> {
        let package = self.0.lock().unwrap_or_else(|e| e.into_inner());
        Some(package.files().map(str::to_string).collect())
    }
}

/// Reads the package at `path` (a CSAR zip or an unpacked directory) with
/// [`crate::package::inspect`], adds its VNFD and files to `catalog`, and returns the VNFD id.
/// A package with error diagnostics, or whose descriptor is not a VNFD, is refused.
pub fn onboard_dir(catalog: &MemoryCatalog, path: &Path) -> Result<String, EmbedError> {
    let report = crate::package::inspect(path, &crate::package::InspectOptions::default());
    let refuse = |message: String| EmbedError::Package {
        path: path.display().to_string(),
        message,
    };
    if !report.is_valid() {
        let errors: Vec<String> = report
            .diagnostics
            .iter()
            .filter(|d| d.is_error())
            .take(3)
            .map(|d| d.to_string())
            .collect();
        return Err(refuse(errors.join("; ")));
    }
    let vnfd = report
        .descriptor
        .as_ref()
        .and_then(|d| d.as_vnfd())
        .cloned()
        .ok_or_else(|| refuse("its descriptor is not a VNFD".into()))?;
    let package = report
        .package
        .ok_or_else(|| refuse("the package could not be opened".into()))?;
    Ok(catalog.insert(vnfd, package_files(package)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_shown_without_passwords() {
        assert_eq!(
            redact_url("postgres://vnfm:hunter2@db:5432/lcm"),
            "postgres://vnfm:***@db:5432/lcm"
        );
        assert_eq!(redact_url("sqlite:///tmp/x.db"), "sqlite:///tmp/x.db");
    }

    #[tokio::test]
    async fn with_a_keyring_inline_credentials_are_stored_as_references() {
        use serde_json::json;
        const TOKEN: &str = "facade-bearer-token-3c3c";
        let vnfd: vnfm_descriptor::Vnfd = serde_json::from_value(json!({
            "descriptorId": "d1", "descriptorVersion": "1.0", "provider": "Acme",
            "productName": "Demo", "softwareVersion": "1.0",
            "toscaDefinitionsVersion": "tosca_simple_yaml_1_2", "vnfNodeType": "acme.VNF",
            "entryDefinitions": "Definitions/top.yaml",
            "flavours": [{
                "id": "simple", "file": "Definitions/df.yaml",
                "vdus": [{"id": "VDU1", "name": "VDU1", "kind": "compute",
                          "nodeType": "tosca.nodes.nfv.Vdu.Compute",
                          "minInstances": 1, "maxInstances": 1, "initialDelta": 1}]
            }]
        }))
        .unwrap();
        let catalog = MemoryCatalog::new();
        catalog.insert(vnfd, Arc::new(vnfm_driver_api::memory::MemArtifacts::new()));
        let store = vnfm_store_sql::open("sqlite::memory:").await.unwrap();
        let keyring = Arc::new(Keyring::from_keys([&Keyring::generate_key()]).unwrap());
        let lcm = builder()
            .store(store.clone())
            .keyring(keyring.clone())
            .infra_driver(Arc::new(
                MemoryInfraDriver::new()
                    .with_vim_types(&[vnfm_infra_kubernetes::KUBERNETES_VIM_TYPE]),
            ))
            .vim_kind(Arc::new(vnfm_infra_kubernetes::KubernetesVimKind))
            .catalog(Arc::new(catalog))
            .recovery_interval(None)
            .build()
            .await
            .unwrap();
        let vnf = lcm
            .create_vnf_identifier(serde_json::from_value(json!({"vnfdId": "d1"})).unwrap())
            .await
            .unwrap();
        let body = json!({"flavourId": "simple", "vimConnectionInfo": {"k8s": {
            "vimType": vnfm_infra_kubernetes::KUBERNETES_VIM_TYPE,
            "interfaceInfo": {"endpoint": "https://k8s.example:6443"},
            "accessInfo": {"bearer_token": TOKEN}
        }}});
        let occ = lcm
            .instantiate(&vnf.id, serde_json::from_value(body).unwrap())
            .await
            .unwrap();
        let done = lcm.wait(&occ.id, Duration::from_secs(20)).await.unwrap();
        assert_eq!(
            done.operation_state,
            types::LcmOperationStateType::Completed
        );
        let (stored, _) = store.get_op_occ(&occ.id).await.unwrap().unwrap();
        let entry = &stored.operation_params.unwrap()["vimConnectionInfo"]["k8s"];
        // A reference: an empty accessInfo marks a sealed one, the token is not there.
        assert_eq!(entry["accessInfo"], json!({}), "{entry}");
        assert!(!entry.to_string().contains(TOKEN), "{entry}");
        let vim_id = types::VimId::new(entry["vimId"].as_str().unwrap());
        // The default directory is a registry over the same store and keyring.
        let registry = VimRegistry::new(
            store,
            keyring,
            VimKinds::new().with(Arc::new(vnfm_infra_kubernetes::KubernetesVimKind)),
        );
        let view = registry.show(&vim_id).await.unwrap();
        assert_eq!(view.access_info.unwrap()["bearer_token"], json!("***"));
    }

    #[test]
    fn onboarding_refuses_a_missing_package() {
        let err = onboard_dir(&MemoryCatalog::new(), Path::new("/nonexistent/pkg")).unwrap_err();
        assert!(matches!(err, EmbedError::Package { .. }), "{err}");
    }
}
