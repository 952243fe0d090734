//! [`AppState`]: what the handlers share: the services the composition root assembled
//! ([`vnfm::lcm::Vnfm`]) and the API's own (authentication, metrics), whose files
//! live in the data directory.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use vnfm::lcm::{Lcm, Vnfm};
use vnfm_lcm::{Keyring, PkgmSubscriptions, Subscriptions, VimRegistry};
use vnfm_store::ApiStore;

use crate::auth::{Authenticator, ClientCredentials, DEFAULT_TOKEN_TTL};
use crate::metrics::Metrics;
use crate::route_facts::{RouteFacts, RouteTable};
use vnfm::lcm::{PackageLimits, Packages};

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
    /// The store refused a write of the API's own (the shared OAuth 2.0 clients).
    #[error("{what}: {source}")]
    Store {
        /// What was being written.
        what: &'static str,
        /// What failed.
        #[source]
        source: vnfm_store::StoreError,
    },
    /// The assembled services could not start.
    #[error("starting the lifecycle core failed: {0}")]
    Start(#[source] Box<vnfm::lcm::EmbedError>),
}

/// The API's own options of [`AppState::new`].
#[derive(Clone)]
pub struct StateOptions {
    /// Whether clients reach the server over TLS (`vnfm serve --tls-cert`): the scheme of the
    /// absolute URIs it writes (`Location`, `_links`). `serve` sets it.
    pub tls: bool,
    /// The directory of the API's files (credentials file, token keys, package spool); the
    /// services' own (store, keyring) are the composition root's.
    pub data_dir: PathBuf,
    /// OAuth 2.0 clients besides the bootstrap client of `credentials.json`.
    pub clients: Vec<ClientCredentials>,
    /// Accept HTTP Basic with a client id and secret.
    pub allow_basic_auth: bool,
    /// Accept Keystone tokens (`X-Auth-Token`), validated by this validator.
    pub keystone: Option<Arc<vnfm_keystone::KeystoneValidator>>,
    /// Accept bearer tokens of an external OAuth 2.0 authorization server, verified by this
    /// verifier.
    pub oauth: Option<Arc<vnfm_oauth::OAuthVerifier>>,
    /// Identify requests without credentials by their TLS client certificate, as this map
    /// says (with `ServeOptions::tls_client_auth`).
    pub client_certificates: Option<Arc<crate::mtls::CertificateIdentities>>,
    /// Lifetime of access tokens.
    pub token_ttl: Duration,
    /// Accept the test VIM's request parameters (`additionalParams.testVim`): set it when the
    /// composition root registered [`crate::test_vim_driver`].
    pub enable_test_vim: bool,
    /// Largest JSON request body, in bytes.
    pub max_json_body: usize,
    /// Connections, read timeouts and the token body size of the HTTP server.
    pub limits: crate::limit_settings::ServerLimits,
    /// Package size and archive limits of the package management interface (the upload body
    /// limit, downloads); the limits of packages the VNFM fetches itself, and the URI
    /// allow-list, are the builder's (`vnfm::lcm::Builder::max_package_bytes`,
    /// `upload_allow_list`).
    pub package_limits: PackageLimits,
    /// Test the callback URI of a new subscription (`GET`, expecting 204) before creating it.
    pub verify_callbacks: bool,
    /// Create a `/vnflcm/v1` subscription even when a v1 one with the same callback URI and
    /// filter exists, instead of answering `303 See Other` to that one (SOL003 v2.6.1 clause
    /// 5.4.18.3.1 allows either). `/vnflcm/v2` creates every subscription, as Tacker's v2 API.
    pub allow_duplicate_lcm_subscriptions: bool,
    /// The bearer token Alertmanager sends to `POST /vnffm/v1/alertmanager` (its
    /// `http_config.authorization.credentials`), accepted there besides the server's usual
    /// credentials. Never logged.
    pub alertmanager_token: Option<vnfm_types::SecretString>,
    /// The metrics registry (share it with [`crate::server::step_metrics_layer`] to record
    /// step latencies); a fresh one when `None`.
    pub metrics: Option<Arc<Metrics>>,
    /// Tacker's enhanced policy (`vnfm serve --enhanced-policy FILE`): the rules that decide,
    /// from the caller's `AREA_`/`VENDOR_`/`TENANT_` roles, which instances, packages and
    /// VIMs it lists, reads and changes. Off (`None`) by default, as in Tacker. Each request
    /// reads the rules in force ([`vnfm_policy::PolicyFile::current`]): whoever reloads the
    /// file changes them without a restart.
    pub enhanced_policy: Option<Arc<vnfm_policy::PolicyFile>>,
    /// Items per page of the lists (`vnfm serve --page-size`).
    pub page_sizes: crate::listing::PageSizes,
}

impl std::fmt::Debug for StateOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateOptions")
            .field("data_dir", &self.data_dir)
            .field("clients", &self.clients)
            .field("allow_basic_auth", &self.allow_basic_auth)
            .field("keystone", &self.keystone)
            .field("oauth", &self.oauth)
            .field("client_certificates", &self.client_certificates)
            .field("enable_test_vim", &self.enable_test_vim)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl StateOptions {
    /// Defaults for `data_dir`: SQLite in it, no extra clients, Bearer only, no test VIM.
    pub fn new(data_dir: impl Into<PathBuf>) -> StateOptions {
        StateOptions {
            data_dir: data_dir.into(),
            tls: false,
            clients: Vec::new(),
            allow_basic_auth: false,
            keystone: None,
            oauth: None,
            client_certificates: None,
            token_ttl: DEFAULT_TOKEN_TTL,
            enable_test_vim: false,
            max_json_body: 1024 * 1024,
            limits: crate::limit_settings::ServerLimits::default(),
            package_limits: PackageLimits::default(),
            verify_callbacks: true,
            allow_duplicate_lcm_subscriptions: false,
            page_sizes: Default::default(),
            alertmanager_token: None,
            metrics: None,
            enhanced_policy: None,
        }
    }
}

/// The services behind the API.
pub struct AppState {
    pub(crate) lcm: Lcm,
    pub(crate) store: Arc<dyn ApiStore>,
    pub(crate) subscriptions: Subscriptions,
    pub(crate) subscriptions_v1: Subscriptions,
    pub(crate) pkgm_subscriptions: PkgmSubscriptions,
    pub(crate) pkgm_subscriptions_v1: PkgmSubscriptions,
    pub(crate) faults: vnfm_assurance::FaultManager,
    pub(crate) performance: vnfm_assurance::PerformanceManager,
    /// The PM subscriptions created through `/vnfpm/v1` (links into that version).
    pub(crate) pm_subscriptions_v1:
        vnfm_lcm::subscriptions::ManagedSubscriptions<vnfm_assurance::pm::PmKind>,
    pub(crate) indicators: vnfm_assurance::IndicatorManager,
    pub(crate) vims: VimRegistry,
    pub(crate) packages: Arc<Packages>,
    pub(crate) auth: Arc<Authenticator>,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) keyring: Arc<Keyring>,
    services: Vnfm,
    pub(crate) options: StateOptions,
    pub(crate) credentials_file: PathBuf,
    /// The facts of the routes the router serves (`crate::route_facts`), read from its route
    /// table when it is built.
    pub(crate) routes: std::sync::OnceLock<RouteTable>,
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

impl AppState {
    /// The API over `services` (assembled by [`vnfm::lcm::Builder::assemble`]): opens
    /// (creating on first start) the API's files in the data directory (token keys, the
    /// bootstrap OAuth 2.0 client), finishes the package onboardings a previous run left,
    /// then starts the services (they take over the occurrences a previous run left behind;
    /// the services' catalog reads their VNFDs from the store).
    pub async fn new(services: Vnfm, options: StateOptions) -> Result<Arc<AppState>, StateError> {
        let dir = &options.data_dir;
        std::fs::create_dir_all(dir).map_err(|e| data_err(dir, e))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
        }
        let token_path = dir.join("token.keys");
        let token_keys =
            Arc::new(vnfm::lcm::key_file(&token_path).map_err(|e| data_err(&token_path, e))?);
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
        auth = auth.with_backoff(options.limits.auth_backoff.clone());
        if let Some(validator) = &options.keystone {
            auth = auth.with_keystone(validator.clone());
        }
        if let Some(verifier) = &options.oauth {
            auth = auth.with_oauth(verifier.clone());
        }
        if let Some(map) = &options.client_certificates {
            auth = auth.with_certificates(map.clone());
        }
        let auth = Arc::new(auth);
        let store: Arc<dyn ApiStore> = services.store.clone();
        auth.share_clients(services.store.clone())
            .await
            .map_err(|source| StateError::Store {
                what: "sharing the OAuth 2.0 clients",
                source,
            })?;

        let pkgm_subscriptions = services.pkgm_subscriptions.clone();
        let pkgm_subscriptions_v1 = pkgm_subscriptions
            .clone()
            .with_version(vnfm_types::links::ApiVersion::V1);
        services
            .start()
            .await
            .map_err(|e| StateError::Start(Box::new(e)))?;

        let subscriptions = services.subscriptions.clone();
        let subscriptions_v1 = subscriptions
            .clone()
            .with_version(vnfm_types::links::ApiVersion::V1);
        Ok(Arc::new(AppState {
            lcm: services.lcm.clone(),
            store,
            subscriptions,
            subscriptions_v1,
            pkgm_subscriptions,
            pkgm_subscriptions_v1,
            faults: services.faults.clone(),
            performance: services.performance.clone(),
            pm_subscriptions_v1: services
                .performance
                .subscriptions()
                .clone()
                .with_version(vnfm_types::links::ApiVersion::V1),
            indicators: services.indicators.clone(),
            vims: services.vims.clone(),
            packages: services.packages.clone(),
            auth,
            metrics: options.metrics.clone().unwrap_or_default(),
            keyring: services.keyring.clone(),
            services,
            options,
            credentials_file,
            routes: Default::default(),
            ready: AtomicBool::new(true),
        }))
    }

    /// The facts of the route a request matched, from its `extensions` (`None` before
    /// routing, or when it matched none).
    pub(crate) fn route_of(&self, extensions: &axum::http::Extensions) -> Option<&RouteFacts> {
        self.routes.get()?.matched(extensions)
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

    /// The store, as the API's view of it (the whole store is the composition root's:
    /// `vnfm::lcm::Vnfm::store`).
    pub fn store(&self) -> &Arc<dyn ApiStore> {
        &self.store
    }

    /// The VNF package management subscriptions (`/vnfpkgm/v2/subscriptions`).
    pub fn pkgm_subscriptions(&self) -> &PkgmSubscriptions {
        &self.pkgm_subscriptions
    }

    /// Stops the services: the runner (waiting up to `timeout` for running steps) and the
    /// notification deliverer.
    pub async fn shutdown(&self, timeout: Duration) {
        self.services.shutdown(timeout).await;
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
