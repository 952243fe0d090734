//! [`AppState`]: the core services the handlers share, assembled from a data directory.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use vnfm::lcm::{InfraDriver, Lcm, LcmConfig, MemoryCatalog, MgmtDriver};
use vnfm_lcm::{Keyring, PkgmSubscriptions, Subscriptions, VimRegistry};
use vnfm_store::Store;

use crate::auth::{Authenticator, ClientCredentials, DEFAULT_TOKEN_TTL};
use crate::metrics::Metrics;
use crate::observed::ObservedStore;
use crate::packages::{PackageLimits, Packages};

/// The VIM type of the test VIM (`--enable-test-vim`): backed by the in-memory driver.
pub const TEST_VIM_TYPE: &str = "TEST.NOOP.V_1";

/// Why the server state could not be assembled.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// A file of the data directory could not be read or written.
    #[error("{path}: {message}")]
    DataDir {
        /// The file or directory.
        path: PathBuf,
        /// What failed.
        message: String,
    },
    /// The store could not be opened.
    #[error("opening the store failed: {0}")]
    Store(String),
    /// The lifecycle core could not be started.
    #[error("starting the lifecycle core failed: {0}")]
    Lcm(String),
}

/// What [`AppState::build`] needs.
#[derive(Clone)]
pub struct StateOptions {
    /// Whether clients reach the server over TLS (`vnfm serve --tls-cert`): the scheme of the
    /// absolute URIs it writes (`Location`, `_links`). `serve` sets it.
    pub tls: bool,
    /// The data directory (SQLite file, key files, credentials file).
    pub data_dir: PathBuf,
    /// Store URL; default `sqlite://<data_dir>/vnfm.db`.
    pub store_url: Option<String>,
    /// OAuth 2.0 clients besides the bootstrap client of `credentials.json`.
    pub clients: Vec<ClientCredentials>,
    /// Accept HTTP Basic with a client id and secret.
    pub allow_basic_auth: bool,
    /// Accept Keystone tokens (`X-Auth-Token`), validated by this validator.
    pub keystone: Option<Arc<vnfm_keystone::KeystoneValidator>>,
    /// Lifetime of access tokens.
    pub token_ttl: Duration,
    /// Register the `TEST.NOOP.V_1` VIM type backed by the in-memory driver.
    pub enable_test_vim: bool,
    /// Infrastructure drivers (one per family of VIM types).
    pub infra_drivers: Vec<Arc<dyn InfraDriver>>,
    /// The management driver that runs LCM hooks.
    pub mgmt_driver: Option<Arc<dyn MgmtDriver>>,
    /// URI prefixes `upload_from_uri` may fetch from (empty: the endpoint refuses every URI).
    pub upload_allow_list: Vec<String>,
    /// Largest JSON request body, in bytes.
    pub max_json_body: usize,
    /// Connections, read timeouts and the token body size of the HTTP server.
    pub limits: crate::limits::ServerLimits,
    /// How long an undeliverable notification is retried (since it was made).
    pub notify_max_age: Duration,
    /// Longest delay between two delivery attempts of a notification.
    pub notify_backoff_max: Duration,
    /// Package size and archive limits.
    pub package_limits: PackageLimits,
    /// Test the callback URI of a new subscription (`GET`, expecting 204) before creating it.
    pub verify_callbacks: bool,
    /// Create a lifecycle subscription even when one with the same callback URI and filter
    /// exists, instead of answering `303 See Other` to that one (SOL003 v2.6.1 clause
    /// 5.4.18.3.1 allows either).
    pub allow_duplicate_lcm_subscriptions: bool,
    /// Lifecycle runner settings.
    pub lcm_config: LcmConfig,
    /// How often expired leases of other replicas are taken over (`None`: only at start).
    pub recovery_interval: Option<Duration>,
    /// The metrics registry (share it with [`crate::server::step_metrics_layer`] to record
    /// step latencies); a fresh one when `None`.
    pub metrics: Option<Arc<Metrics>>,
    /// The NFVO asked for grants, and for packages of VNFDs not onboarded here (`None`: the
    /// built-in one, which grants everything and holds no packages).
    pub nfvo: Option<Arc<dyn vnfm::lcm::Nfvo>>,
    /// What to do with the NFVO connection kept in the store, when `nfvo` is `None`.
    pub nfvo_setting: NfvoSetting,
}

/// The remote NFVO connection kept in the store (setting `nfvo`, its secret sealed with the
/// data directory's keyring), shared by every replica on the same store.
#[derive(Debug, Clone, Default)]
pub enum NfvoSetting {
    /// Use the stored connection, if any (else the built-in NFVO).
    #[default]
    Stored,
    /// Store this connection (replacing the stored one) and use it.
    Set(vnfm::lcm::NfvoSettings),
    /// Remove the stored connection and use the built-in NFVO.
    Clear,
}

impl std::fmt::Debug for StateOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateOptions")
            .field("data_dir", &self.data_dir)
            .field("clients", &self.clients)
            .field("allow_basic_auth", &self.allow_basic_auth)
            .field("keystone", &self.keystone)
            .field("enable_test_vim", &self.enable_test_vim)
            .field("limits", &self.limits)
            .field("upload_allow_list", &self.upload_allow_list)
            .finish_non_exhaustive()
    }
}

impl StateOptions {
    /// Defaults for `data_dir`: SQLite in it, no extra clients, Bearer only, no test VIM.
    pub fn new(data_dir: impl Into<PathBuf>) -> StateOptions {
        StateOptions {
            data_dir: data_dir.into(),
            tls: false,
            store_url: None,
            clients: Vec::new(),
            allow_basic_auth: false,
            keystone: None,
            token_ttl: DEFAULT_TOKEN_TTL,
            enable_test_vim: false,
            infra_drivers: Vec::new(),
            mgmt_driver: None,
            upload_allow_list: Vec::new(),
            max_json_body: 1024 * 1024,
            limits: crate::limits::ServerLimits::default(),
            notify_max_age: Duration::from_secs(24 * 3600),
            notify_backoff_max: Duration::from_secs(600),
            package_limits: PackageLimits::default(),
            verify_callbacks: true,
            allow_duplicate_lcm_subscriptions: false,
            lcm_config: LcmConfig::default(),
            recovery_interval: Some(Duration::from_secs(30)),
            metrics: None,
            nfvo: None,
            nfvo_setting: NfvoSetting::Stored,
        }
    }
}

/// The services behind the API.
pub struct AppState {
    pub(crate) lcm: Lcm,
    pub(crate) store: Arc<dyn Store>,
    pub(crate) subscriptions: Subscriptions,
    pub(crate) subscriptions_v1: Subscriptions,
    pub(crate) pkgm_subscriptions: PkgmSubscriptions,
    pub(crate) pkgm_subscriptions_v1: PkgmSubscriptions,
    pub(crate) vims: VimRegistry,
    pub(crate) packages: Arc<Packages>,
    pub(crate) auth: Arc<Authenticator>,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) keyring: Arc<Keyring>,
    delivery_waker: Arc<std::sync::OnceLock<vnfm_lcm::DeliveryWaker>>,
    pub(crate) options: StateOptions,
    pub(crate) credentials_file: PathBuf,
    ready: AtomicBool,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

fn data_err(path: &Path, e: impl std::fmt::Display) -> StateError {
    StateError::DataDir {
        path: path.to_owned(),
        message: e.to_string(),
    }
}

/// Applies `setting` to the NFVO connection kept in `store` and connects to the result.
async fn stored_nfvo(
    store: &dyn Store,
    keyring: &Keyring,
    setting: &NfvoSetting,
    max_package_bytes: usize,
) -> Result<Option<Arc<dyn vnfm::lcm::Nfvo>>, StateError> {
    use vnfm::lcm::{NfvoTimings, load_nfvo_settings, save_nfvo_settings};
    let lcm_err = |e: vnfm_lcm::LcmError| StateError::Lcm(format!("NFVO settings: {e}"));
    match setting {
        NfvoSetting::Stored => {}
        NfvoSetting::Set(s) => save_nfvo_settings(store, keyring, Some(s))
            .await
            .map_err(lcm_err)?,
        NfvoSetting::Clear => save_nfvo_settings(store, keyring, None)
            .await
            .map_err(lcm_err)?,
    }
    let Some(settings) = load_nfvo_settings(store, keyring).await.map_err(lcm_err)? else {
        return Ok(None);
    };
    tracing::info!(url = %settings.url, "remote NFVO");
    let nfvo = settings
        .connect(NfvoTimings::default())
        .map_err(lcm_err)?
        .with_max_package_bytes(max_package_bytes);
    Ok(Some(Arc::new(nfvo)))
}

/// Reads `path`'s keyring, creating the file (mode 0600) with a fresh key on first start.
fn keyring_file(path: &Path) -> Result<Keyring, StateError> {
    if path.exists() {
        Keyring::from_key_file(path).map_err(|e| data_err(path, e))
    } else {
        Keyring::generate_key_file(path).map_err(|e| data_err(path, e))
    }
}

/// Reads the bootstrap client from `path`, creating it (mode 0600) on first start.
fn bootstrap_client(path: &Path) -> Result<ClientCredentials, StateError> {
    if path.exists() {
        let text = std::fs::read_to_string(path).map_err(|e| data_err(path, e))?;
        return serde_json::from_str(&text).map_err(|e| {
            data_err(
                path,
                format!("not a credentials file ({e}); delete it to generate a new client"),
            )
        });
    }
    let client = ClientCredentials::generate();
    let text = serde_json::to_string_pretty(&client).map_err(|e| data_err(path, e))?;
    write_private(path, text.as_bytes())?;
    Ok(client)
}

/// Creates `path` readable by the owner only.
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), StateError> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path).map_err(|e| data_err(path, e))?;
    file.write_all(bytes).map_err(|e| data_err(path, e))?;
    file.sync_all().map_err(|e| data_err(path, e))
}

/// Creates `path` empty with mode 0600 when it does not exist, and takes group and other
/// permissions away from it when it does (a file of an older version).
fn private_file(path: &Path) -> Result<(), StateError> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let file = options.open(path).map_err(|e| data_err(path, e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(|e| data_err(path, e))?;
    }
    Ok(())
}

impl AppState {
    /// Opens (creating on first start) the data directory, the store, the key files and the
    /// bootstrap OAuth 2.0 client, loads the onboarded packages, and starts the lifecycle
    /// core (which takes over the occurrences a previous run left behind).
    pub async fn build(options: StateOptions) -> Result<Arc<AppState>, StateError> {
        let dir = &options.data_dir;
        std::fs::create_dir_all(dir).map_err(|e| data_err(dir, e))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
        }
        let keyring = Arc::new(keyring_file(&dir.join("fernet.keys"))?);
        let token_keys = Arc::new(keyring_file(&dir.join("token.keys"))?);
        let credentials_file = dir.join("credentials.json");
        let bootstrap = bootstrap_client(&credentials_file)?;
        let mut clients = vec![bootstrap];
        clients.extend(options.clients.iter().cloned());
        let mut auth = Authenticator::new(
            &clients,
            token_keys,
            options.allow_basic_auth,
            options.token_ttl,
        );
        if let Some(validator) = &options.keystone {
            auth = auth.with_keystone(validator.clone());
        }
        let auth = Arc::new(auth);

        let url = match options.store_url.clone() {
            Some(url) => url,
            None => {
                let db = dir.join("vnfm.db");
                // SQLite gives its journal files the database file's mode.
                private_file(&db)?;
                format!("sqlite://{}", db.display())
            }
        };
        let opened = vnfm_store::open(&url)
            .await
            .map_err(|e| StateError::Store(e.to_string()))?;
        auth.share_clients(opened.clone())
            .await
            .map_err(|e| StateError::Store(format!("sharing the OAuth 2.0 clients: {e}")))?;
        let delivery_waker = Arc::new(std::sync::OnceLock::new());
        let store: Arc<dyn Store> = Arc::new(ObservedStore::new(opened, delivery_waker.clone()));

        let nfvo = match &options.nfvo {
            Some(n) => Some(n.clone()),
            None => {
                stored_nfvo(
                    &*store,
                    &keyring,
                    &options.nfvo_setting,
                    options.package_limits.max_package_bytes,
                )
                .await?
            }
        };

        let pkgm_subscriptions = PkgmSubscriptions::new(store.clone(), keyring.clone())
            .map_err(|e| StateError::Lcm(e.to_string()))?;
        let pkgm_subscriptions_v1 = pkgm_subscriptions
            .clone()
            .with_base(vnfm_lcm::pkgm_subscriptions::V1_BASE);
        let catalog = Arc::new(MemoryCatalog::new());
        // Before load_all: a resumed onboarding notifies too.
        let packages = Arc::new(
            Packages::new(
                store.clone(),
                catalog.clone(),
                options.package_limits.clone(),
                options.upload_allow_list.clone(),
                nfvo.clone(),
                dir.join("packages"),
            )
            .with_notifications(pkgm_subscriptions.clone())
            .with_mgmt_driver(options.mgmt_driver.clone()),
        );
        packages
            .spool()
            .prepare()
            .map_err(|e| data_err(&dir.join("packages"), e))?;
        let loaded = packages.load_all().await;
        tracing::info!(packages = loaded, "onboarded packages loaded");

        let subscriptions = Subscriptions::new(store.clone(), keyring.clone())
            .map_err(|e| StateError::Lcm(e.to_string()))?;
        let subscriptions_v1 = subscriptions
            .clone()
            .with_base(vnfm_lcm::subscriptions::V1_BASE);
        let vims = VimRegistry::new(store.clone(), keyring.clone());
        let mut builder = vnfm::lcm::builder()
            .store(store.clone())
            .keyring(keyring.clone())
            .catalog(catalog)
            // The same subscriptions whose cache creating and deleting a subscription clears,
            // so a new subscription gets the next notification.
            .notification_router(Arc::new(subscriptions.router()))
            .config(options.lcm_config.clone())
            .recovery_interval(options.recovery_interval);
        if let Some(n) = &nfvo {
            builder = builder.nfvo(n.clone());
        }
        if options.enable_test_vim {
            builder =
                builder.infra_driver(Arc::new(crate::test_vim::TestVimDriver::new(TEST_VIM_TYPE)));
        }
        for d in &options.infra_drivers {
            builder = builder.infra_driver(d.clone());
        }
        if let Some(m) = &options.mgmt_driver {
            builder = builder.mgmt_driver(m.clone());
        }
        let lcm = builder
            .build()
            .await
            .map_err(|e| StateError::Lcm(e.to_string()))?;
        Ok(Arc::new(AppState {
            lcm,
            store,
            subscriptions,
            subscriptions_v1,
            pkgm_subscriptions,
            pkgm_subscriptions_v1,
            vims,
            packages,
            auth,
            metrics: options.metrics.clone().unwrap_or_default(),
            keyring,
            delivery_waker,
            options,
            credentials_file,
            ready: AtomicBool::new(true),
        }))
    }

    /// The origin (`scheme://host[:port]`) of absolute URIs in answers to a request with
    /// `headers`: the scheme the server is reached by and the request's `Host`.
    pub(crate) fn origin(&self, headers: &axum::http::HeaderMap) -> String {
        crate::util::origin(headers, self.options.tls)
    }

    /// The lifecycle core.
    pub fn lcm(&self) -> &Lcm {
        &self.lcm
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The VNF package management subscriptions (`/vnfpkgm/v2/subscriptions`).
    pub fn pkgm_subscriptions(&self) -> &PkgmSubscriptions {
        &self.pkgm_subscriptions
    }

    /// Lets every write that enqueues notifications wake `waker`'s deliverer, so they go out
    /// at once (set once; later calls are ignored).
    pub fn set_delivery_waker(&self, waker: vnfm_lcm::DeliveryWaker) {
        let _ = self.delivery_waker.set(waker);
    }

    /// The keyring that seals VIM and subscription secrets.
    pub fn keyring(&self) -> &Arc<Keyring> {
        &self.keyring
    }

    /// The file holding the bootstrap client's credentials.
    pub fn credentials_file(&self) -> &Path {
        &self.credentials_file
    }

    /// The bootstrap client (from `credentials.json`).
    pub fn bootstrap_client(&self) -> Result<ClientCredentials, StateError> {
        bootstrap_client(&self.credentials_file)
    }

    /// Whether `/readyz` answers 200.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed)
    }

    /// Marks the server as not ready (graceful shutdown has begun).
    pub fn set_not_ready(&self) {
        self.ready.store(false, Ordering::Relaxed);
    }

    /// Metrics registry.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }
}
