//! `vnfm serve`: the REST server.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use vnfm_api::auth::ClientCredentials;
use vnfm_api::metrics::Metrics;
use vnfm_api::{ServeOptions, StateOptions};

use crate::serve_error::ServeError;

/// Options of `vnfm serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address and port to listen on.
    #[arg(long, default_value = "127.0.0.1:9890", value_name = "ADDR:PORT")]
    listen: SocketAddr,
    /// Data directory: SQLite store, Fernet key files, bootstrap credentials.
    #[arg(long, default_value = "vnfm-data", value_name = "DIR")]
    data_dir: PathBuf,
    /// Store URL instead of the SQLite file in the data directory
    /// (`postgres://user:password@host/db` for several replicas).
    #[arg(
        long,
        env = "VNFM_STORE_URL",
        value_name = "URL",
        hide_env_values = true
    )]
    store_url: Option<String>,
    /// Accept HTTP Basic authentication with a client id and secret.
    #[arg(long)]
    allow_basic_auth: bool,
    /// JSON file with further OAuth 2.0 clients: `[{"client_id": ..., "client_secret": ...}]`.
    #[arg(long, value_name = "FILE")]
    clients_file: Option<PathBuf>,
    /// Lifetime of access tokens, in seconds.
    #[arg(long, default_value_t = 3600, value_name = "SECONDS")]
    token_ttl: u64,
    /// Register the VIM type TEST.NOOP.V_1, backed by the in-memory driver (for conformance
    /// tests, load tests and demos without infrastructure).
    #[arg(long)]
    enable_test_vim: bool,
    /// URI prefix that `upload_from_uri` may fetch packages from (repeatable).
    #[arg(long = "upload-allow", value_name = "URI_PREFIX")]
    upload_allow: Vec<String>,
    /// Do not test callback URIs (GET, expecting 204) before creating subscriptions.
    #[arg(long)]
    no_callback_check: bool,
    /// Create a `/vnflcm/v1` subscription even when a v1 one with the same callback URI and
    /// filter exists (by default the request is answered 303 See Other to the existing one);
    /// `/vnflcm/v2` creates every subscription, as Tacker's v2 API.
    #[arg(long)]
    allow_duplicate_lcm_subscriptions: bool,
    /// Items per page of every list (SOL013 paging: a longer list is continued at the URI
    /// of the page's `Link` header).
    #[arg(long, default_value_t = 100, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    page_size: u32,
    /// Items per page of one list, in place of --page-size (repeatable): `NAME=N`, NAME one of
    /// vnf_instances, vnf_lcm_op_occs, subscriptions, alarms, pm_jobs, thresholds,
    /// vnf_packages, indicators (Tacker's `[v2_vnfm] vnf_instance_page_size`,
    /// `lcm_op_occ_page_size`, ... are `--page-size-of vnf_instances=N`, ...).
    #[arg(long = "page-size-of", value_name = "NAME=N", value_parser = vnfm_api::listing::Listed::parse_size)]
    page_size_of: Vec<(vnfm_api::listing::Listed, u32)>,
    /// Tacker's enhanced policy: a Tacker policy file (YAML or JSON, e.g. Tacker's
    /// `enhanced_tacker_policy.yaml.sample`) whose rules decide, from the Keystone callers'
    /// `AREA_`, `VENDOR_` and `TENANT_` roles, which VNF instances, packages and VIMs they
    /// list, read and change. Off by default, as in Tacker.
    #[arg(
        long = "enhanced-policy",
        visible_alias = "policy-file",
        value_name = "FILE"
    )]
    enhanced_policy: Option<PathBuf>,
    /// File holding the bearer token Prometheus Alertmanager sends to
    /// `POST /vnffm/v1/alertmanager` (its `http_config.authorization.credentials_file`),
    /// accepted there besides the server's usual credentials.
    #[arg(long, value_name = "FILE")]
    alertmanager_token_file: Option<PathBuf>,
    /// The Prometheus server performance management reads its metrics from (its HTTP query
    /// API, e.g. `http://prometheus:9090`). Without it, PM jobs and thresholds take only the
    /// values pushed to `/pm_event` and `/pm_threshold` (Tacker's Prometheus plugin).
    #[arg(long, value_name = "URL")]
    prometheus_url: Option<String>,
    /// PromQL replacing or adding to the default query of metrics (YAML or JSON: metric name
    /// -> object type -> template; see docs/fault-and-performance.md).
    #[arg(long, value_name = "FILE", requires = "prometheus_url")]
    promql_file: Option<PathBuf>,
    /// Seconds between two evaluations of a PM threshold.
    #[arg(long, default_value_t = 60, value_name = "SECONDS")]
    pm_threshold_period: u64,
    /// Reports a PM job keeps (its newest ones): an older report is deleted when a new one
    /// comes, and its URI answers 404 from then on.
    #[arg(long, default_value_t = 100, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pm_reports_kept: u32,
    /// Heal nothing automatically, whatever an instance's `isAutohealEnabled` says.
    #[arg(long)]
    no_auto_heal: bool,
    /// The least severe alarm that heals an instance with `isAutohealEnabled` automatically.
    #[arg(long, default_value = "MAJOR", value_name = "SEVERITY", value_parser = parse_severity)]
    auto_heal_min_severity: vnfm_types::PerceivedSeverity,
    /// Seconds after an automatic heal of an instance before the next one may start (0, as
    /// OpenStack Tacker: none).
    #[arg(long, default_value_t = 0, value_name = "SECONDS")]
    auto_heal_cooldown: u64,
    /// Automatic heals of one instance an hour, at most.
    #[arg(long, default_value_t = 5, value_name = "N")]
    auto_heal_max_per_hour: usize,
    /// Seconds between two sweeps of the infrastructure watch, which raises alarms for what
    /// the drivers observe on instantiated instances (a crash-looping pod, a server in
    /// ERROR) and clears them when it ends; 0 turns the watch off.
    #[arg(long, default_value_t = 30, value_name = "SECONDS")]
    infra_watch_interval: u64,
    /// Scale nothing automatically, whatever an instance's `isAutoscaleEnabled` says.
    #[arg(long)]
    no_auto_scale: bool,
    /// Seconds after an automatic scaling of an instance before the next one may start (0,
    /// as OpenStack Tacker: none).
    #[arg(long, default_value_t = 0, value_name = "SECONDS")]
    auto_scale_cooldown: u64,
    /// Automatic scalings of one instance an hour, at most.
    #[arg(long, default_value_t = 12, value_name = "N")]
    auto_scale_max_per_hour: usize,
    /// Largest package upload, in MiB.
    #[arg(long, default_value_t = 512, value_name = "MIB")]
    max_package_mib: usize,
    /// Connections served at once; when all are taken, a new one from an address holding
    /// more than an equal share of them is closed at once (unless one address holds them
    /// all), any other replaces the oldest that has not sent a request yet, else the idlest
    /// kept-alive one, else one whose request body has been awaited for a second, or waits
    /// until one is.
    #[arg(long, default_value_t = 1024, value_name = "N")]
    max_connections: usize,
    /// Connections one IP address may hold at once (more are closed at once); 0 for no limit
    /// per address (behind a reverse proxy, where every client has the proxy's address).
    #[arg(long, default_value_t = 256, value_name = "N")]
    max_connections_per_address: usize,
    /// Seconds a new connection has to send its first request (and a TLS client to finish
    /// its handshake) before it is closed.
    #[arg(long, default_value_t = 10, value_name = "SECONDS")]
    first_request_timeout: u64,
    /// Longest back-off, in seconds, after failed client authentication (a wrong client
    /// secret on /oauth2/token or in HTTP Basic); 0 turns the back-off off.
    #[arg(long, default_value_t = 60, value_name = "SECONDS")]
    auth_backoff_max: u64,
    /// Failed authentications of one client id from one address before it backs off.
    #[arg(long, default_value_t = 5, value_name = "N")]
    auth_failures_per_client: u32,
    /// Failed authentications from one address, for any client ids, before the address backs
    /// off; 0 for no back-off per address (behind a reverse proxy).
    #[arg(long, default_value_t = 50, value_name = "N")]
    auth_failures_per_address: u32,
    /// Seconds a client has to send a request's headers before the connection is closed.
    #[arg(long, default_value_t = 30, value_name = "SECONDS")]
    header_timeout: u64,
    /// Longest pause, in seconds, between two chunks of a request body.
    #[arg(long, default_value_t = 30, value_name = "SECONDS")]
    body_timeout: u64,
    /// Seconds a request's body has, from its head's arrival, to arrive in full; later it is
    /// answered 408 and the connection closed.
    #[arg(long, default_value_t = 60, value_name = "SECONDS")]
    request_timeout: u64,
    /// `--request-timeout` of a package upload (`PUT .../package_content`).
    #[arg(long, default_value_t = 3600, value_name = "SECONDS")]
    upload_timeout: u64,
    /// Seconds an `Idempotency-Key` is kept after its first use: a retry with it within
    /// this period gets the first answer again; later, the key is new.
    #[arg(
        long,
        env = "VNFM_IDEMPOTENCY_KEY_TTL",
        default_value_t = 86_400,
        value_name = "SECONDS",
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    idempotency_key_ttl: u64,
    /// Seconds a replica's lease on a running operation occurrence lasts unless renewed:
    /// another replica on the same store takes over a dead one's occurrences about this
    /// long after its last renewal (replicas' clocks must agree to well within it).
    #[arg(long, default_value_t = 6, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    lease_ttl: u64,
    /// Seconds between renewals of a running occurrence's lease (below --lease-ttl).
    #[arg(long, default_value_t = 2, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    lease_renew_interval: u64,
    /// Hours an undeliverable notification is retried before it is given up.
    #[arg(long, default_value_t = 24, value_name = "HOURS")]
    notify_max_age_hours: u64,
    /// Longest delay, in seconds, between two delivery attempts of a notification.
    #[arg(long, default_value_t = 600, value_name = "SECONDS")]
    notify_backoff_max: u64,
    /// TLS certificate chain (PEM); with --tls-key, serves HTTPS.
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// TLS private key (PEM).
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Mutual TLS: ask clients for a certificate; `required` (a client without one from
    /// --tls-client-ca fails the TLS handshake) or `optional` (a client may present one, which
    /// must then be from --tls-client-ca; one without authenticates as it would without).
    #[arg(
        long,
        value_name = "MODE",
        value_parser = ["required", "optional"],
        requires_all = ["tls_cert", "tls_client_ca"]
    )]
    tls_client_auth: Option<String>,
    /// Mutual TLS: a CA certificate file (PEM) whose client certificates are accepted;
    /// repeatable.
    #[arg(
        long = "tls-client-ca",
        value_name = "PEM",
        requires = "tls_client_auth"
    )]
    tls_client_ca: Vec<PathBuf>,
    /// Mutual TLS: a JSON file mapping client certificates to callers, so that a request
    /// without credentials is identified by its certificate:
    /// `[{"subject_cn": "nfvo-1", "client_id": "nfvo", "roles": ["member"], "project_id": "..."}]`
    /// (or `san_dns`, `san_uri`, `san_email` instead of `subject_cn`); roles are read as
    /// --oauth-reader-roles, --oauth-writer-roles and --oauth-admin-roles say.
    #[arg(long, value_name = "FILE", requires = "tls_client_auth")]
    tls_client_map: Option<PathBuf>,
    /// A remote SOL003 NFVO to ask for grants and for packages of VNFDs not onboarded here
    /// (`https://nfvo.example:9443`). The connection is kept in the store, its secret sealed
    /// with the data directory's keyring, and used by later starts (and by every replica on
    /// the same store) without the flags; without any the built-in NFVO grants everything.
    #[arg(long, value_name = "URL", conflicts_with = "nfvo_local")]
    nfvo_url: Option<String>,
    /// Forget the stored NFVO connection and use the built-in NFVO.
    #[arg(long)]
    nfvo_local: bool,
    /// Client id (OAuth 2.0) or user name (Basic) towards the NFVO; the secret is read from
    /// the environment variable VNFM_NFVO_SECRET (never from the command line).
    #[arg(long, value_name = "ID", requires = "nfvo_url")]
    nfvo_client_id: Option<String>,
    /// OAuth 2.0 token endpoint of the NFVO; without it HTTP Basic is used.
    #[arg(long, value_name = "URL", requires = "nfvo_client_id")]
    nfvo_token_url: Option<String>,
    /// CA certificate (PEM) to trust for the NFVO's TLS certificate.
    #[arg(long, value_name = "PEM", requires = "nfvo_url")]
    nfvo_ca: Option<PathBuf>,
    /// Call the remote NFVO (grants, package and VNFD fetches) with access tokens of the
    /// --oauth-issuer authorization server, got by client credentials as --oauth-client-id
    /// (authenticating by --oauth-client-auth, as for introspection), instead of the
    /// authentication kept with the NFVO connection. Given at each start, as --oauth-issuer
    /// is: it is not stored with the connection.
    #[arg(long, requires = "oauth_client_id", conflicts_with_all = ["nfvo_client_id", "nfvo_local"])]
    nfvo_oauth_from_issuer: bool,
    /// Call subscribers' callback URIs under these prefixes (`https://nfvo.example:9443/notify`,
    /// comma-separated or repeated; the same scheme, host and port, and a path at or below
    /// the prefix's) with those access tokens, when the subscription gives no authentication
    /// of its own: a subscription's own BASIC or OAUTH2_CLIENT_CREDENTIALS parameters win.
    /// Other callbacks get no token (a token sent to any URI a subscriber names would be
    /// given away).
    #[arg(
        long,
        value_name = "URL_PREFIX",
        value_delimiter = ',',
        requires = "oauth_client_id"
    )]
    notify_oauth_from_issuer: Vec<String>,
    /// A Heat environment file (YAML or JSON: `resource_registry`, `parameter_defaults`)
    /// sent with every stack the OpenStack driver creates or updates; templates its
    /// `resource_registry` names by relative path are read from the file's directory.
    #[arg(long, value_name = "FILE")]
    heat_environment: Option<PathBuf>,
    /// Longest pause, in seconds, between two status checks of a Heat stack or a Nova server
    /// that an operation waits for (the checks start 1 s apart and grow by half each time up
    /// to this bound): the most an operation lingers after its stack is done, against one
    /// status request per running stack per period.
    #[arg(long, default_value_t = 2, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=60))]
    openstack_poll_max: u64,
    /// The Helm SDK C library (`libhelm_c.so`) that renders Helm charts; without it `helm`
    /// from PATH does, when there is one.
    #[arg(long, env = "VNFM_HELM_C_LIB", value_name = "FILE")]
    helm_library: Option<PathBuf>,
    /// An installed management-driver plugin: the VNFD artifact name it serves and its
    /// library (`mgmt-driver-k8s-cluster=/opt/vnfm/plugins/libvnfm_plugin_k8s_cluster.so`);
    /// repeatable. The library's SHA-256 must match the artifact's digest in the VNFD.
    #[arg(long = "plugin", value_name = "ARTIFACT=LIBRARY")]
    plugins: Vec<String>,
    /// Load management-driver libraries shipped in VNF packages (checked against the digest
    /// the VNFD declares). Off by default: a package's library runs with the server's rights.
    #[arg(long)]
    package_plugins: bool,
    /// Where plugin hooks run: `process` (a child process per hook call: a crash or a hung
    /// hook fails only that hook) or `in-process` (faster, but a crash takes the server down).
    #[arg(long, default_value = "process", value_parser = ["process", "in-process"])]
    plugin_isolation: String,
    /// The Python interpreter that runs the management scripts VNF packages bind to hooks
    /// (`tosca.artifacts.Implementation.Python`, OpenStack Tacker v2 scripts) and the user
    /// data classes OpenStack requests name (`lcm-operation-user-data`): a path, or a name
    /// looked up on PATH. A package with such hooks onboards with a warning when it is not
    /// found. Tacker's classes import Tacker's own modules: give an interpreter that can
    /// import `tacker` for them.
    #[arg(long, default_value = "python3", value_name = "PATH")]
    python: PathBuf,
    #[command(flatten)]
    keystone: crate::serve_keystone::KeystoneArgs,
    #[command(flatten)]
    oauth: crate::serve_oauth::OAuthArgs,
    #[command(flatten)]
    otel: crate::serve_otel::OtelArgs,
    /// Log format.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    log_format: String,
    /// Log level (error, warn, info, debug, trace).
    #[arg(long, default_value = "info", value_name = "LEVEL")]
    log_level: tracing::Level,
}

fn init_logging(
    args: &ServeArgs,
    metrics: Arc<Metrics>,
) -> Result<Option<crate::serve_otel::Exporting>, ServeError> {
    use std::io::IsTerminal;
    let level = tracing_subscriber::filter::LevelFilter::from_level(args.log_level);
    let ansi = std::io::stderr().is_terminal();
    let steps = vnfm_api::server::step_metrics_layer(metrics);
    let (exporting, tracer) = crate::serve_otel::start(&args.otel)
        .map_err(ServeError::TraceExport)?
        .unzip();
    let otel = tracer.map(|t| {
        tracing_opentelemetry::layer()
            .with_tracer(t)
            .with_filter_level(tracing_subscriber::filter::LevelFilter::INFO)
    });
    let registry = tracing_subscriber::registry().with(steps).with(otel);
    if args.log_format == "json" {
        let _ = registry
            .with(
                tracing_subscriber::fmt::layer()
                    .json()
                    .with_writer(std::io::stderr)
                    .with_filter_level(level),
            )
            .try_init();
    } else {
        let _ = registry
            .with(
                tracing_subscriber::fmt::layer()
                    .with_ansi(ansi)
                    .with_writer(std::io::stderr)
                    .with_filter_level(level),
            )
            .try_init();
    }
    Ok(exporting)
}

trait WithLevel<S>: tracing_subscriber::Layer<S> + Sized
where
    S: tracing::Subscriber,
{
    fn with_filter_level(
        self,
        level: tracing_subscriber::filter::LevelFilter,
    ) -> tracing_subscriber::filter::Filtered<Self, tracing_subscriber::filter::LevelFilter, S>
    {
        tracing_subscriber::Layer::with_filter(self, level)
    }
}

impl<S: tracing::Subscriber, L: tracing_subscriber::Layer<S>> WithLevel<S> for L {}

/// The OpenStack driver's settings the command line changes.
fn openstack_config(args: &ServeArgs) -> Result<vnfm_infra_openstack::DriverConfig, ServeError> {
    let mut openstack = vnfm_infra_openstack::DriverConfig::default();
    openstack.poll.max = Duration::from_secs(args.openstack_poll_max);
    if let Some(path) = &args.heat_environment {
        openstack = openstack
            .with_environment_file(path)
            .map_err(ServeError::HeatEnvironment)?;
    }
    Ok(openstack)
}

/// The OpenStack (Keystone + Heat) and Kubernetes (manifests, Helm, ASD) drivers.
fn infra_drivers(args: &ServeArgs) -> Result<Vec<Arc<dyn vnfm::lcm::InfraDriver>>, ServeError> {
    let openstack = openstack_config(args)?;
    let mut kubernetes = vnfm_infra_kubernetes::KubernetesDriver::new();
    if let Some(path) = &args.helm_library {
        let helm = vnfm_infra_kubernetes::HelmLibrary::load(path).map_err(|source| {
            ServeError::HelmLibrary {
                path: path.clone(),
                source,
            }
        })?;
        kubernetes = kubernetes.with_helm(Arc::new(helm));
    }
    // Tacker's user data classes (`lcm-operation-user-data`) run with the interpreter of the
    // management scripts.
    let user_data = Arc::new(vnfm::lcm::ScriptMgmtDriver::new(script_config(args)));
    Ok(vec![
        Arc::new(
            vnfm_infra_openstack::OpenStackDriver::new(openstack).with_user_data_scripts(user_data),
        ),
        Arc::new(kubernetes),
    ])
}

/// How Python scripts run: the management scripts VNF packages bind to hooks, and the user
/// data classes of their OpenStack requests.
fn script_config(args: &ServeArgs) -> vnfm::lcm::ScriptConfig {
    vnfm::lcm::ScriptConfig {
        python: args.python.clone(),
        ..vnfm::lcm::ScriptConfig::default()
    }
}

/// The management-driver host: installed plugins from `--plugin`, package libraries with
/// `--package-plugins`; `None` when neither is asked for.
fn plugin_host(args: &ServeArgs) -> Result<Option<Arc<dyn vnfm::lcm::MgmtDriver>>, ServeError> {
    use vnfm_plugin_host::{HostConfig, Isolation, PluginHost};
    if args.plugins.is_empty() && !args.package_plugins {
        return Ok(None);
    }
    let isolation = match args.plugin_isolation.as_str() {
        "in-process" => Isolation::InProcess,
        _ => Isolation::Process,
    };
    let exe = std::env::current_exe().map_err(ServeError::CurrentExe)?;
    let mut config =
        HostConfig::new(args.data_dir.join("plugin-cache")).runner_command(exe, ["plugin-runner"]);
    for spec in &args.plugins {
        let Some((artifact, library)) = spec.split_once('=') else {
            return Err(ServeError::PluginSpec { spec: spec.clone() });
        };
        let library = PathBuf::from(library);
        if !library.is_file() {
            return Err(ServeError::PluginLibrary {
                spec: spec.clone(),
                library,
            });
        }
        config = config.plugin(artifact, library, isolation);
    }
    if args.package_plugins {
        config = config.package_libraries(isolation);
    }
    Ok(Some(Arc::new(PluginHost::new(config))))
}

fn nfvo_from_args(args: &ServeArgs, url: &str) -> Result<vnfm::lcm::NfvoSettings, ServeError> {
    use vnfm::lcm::types::SecretString;
    use vnfm::lcm::{NfvoAuth, NfvoSettings, NfvoTimings, Sol003Nfvo};
    let auth = match &args.nfvo_client_id {
        None => NfvoAuth::None,
        Some(id) => {
            let secret = std::env::var("VNFM_NFVO_SECRET").map_err(ServeError::NfvoSecret)?;
            match &args.nfvo_token_url {
                Some(endpoint) => NfvoAuth::OAuth2 {
                    client_id: id.clone(),
                    client_secret: SecretString::new(secret),
                    token_endpoint: endpoint.clone(),
                },
                None => NfvoAuth::Basic {
                    user: id.clone(),
                    password: SecretString::new(secret),
                },
            }
        }
    };
    let ca_pem = match &args.nfvo_ca {
        Some(p) => Some(
            std::fs::read_to_string(p).map_err(|source| ServeError::ReadFile {
                option: "nfvo-ca",
                path: p.clone(),
                source,
            })?,
        ),
        None => None,
    };
    let settings = NfvoSettings {
        url: url.to_owned(),
        auth,
        ca_pem,
    };
    // Refuse a bad URL or CA now, not at the first grant.
    Sol003Nfvo::from_settings(&settings, NfvoTimings::default()).map_err(|source| {
        ServeError::Nfvo {
            url: url.to_owned(),
            source,
        }
    })?;
    Ok(settings)
}

/// The authorization server's access tokens for outgoing calls, when `--nfvo-oauth-from-issuer`
/// or `--notify-oauth-from-issuer` asks for them.
fn outbound_oauth(args: &ServeArgs) -> Result<Option<vnfm::lcm::OutboundOAuth>, ServeError> {
    let callbacks: Vec<String> = args
        .notify_oauth_from_issuer
        .iter()
        .map(|p| p.trim().to_owned())
        .filter(|p| !p.is_empty())
        .collect();
    if !args.nfvo_oauth_from_issuer && callbacks.is_empty() {
        return Ok(None);
    }
    let Some(tokens) = args.oauth.client_credentials()? else {
        return Err(ServeError::Options(
            "--nfvo-oauth-from-issuer and --notify-oauth-from-issuer need --oauth-issuer and --oauth-client-id",
        ));
    };
    Ok(Some(vnfm::lcm::OutboundOAuth {
        tokens,
        nfvo: args.nfvo_oauth_from_issuer,
        callbacks,
    }))
}

/// The callers client certificates identify (`--tls-client-map`), their roles read by the
/// `--oauth-*-roles` mapping.
fn client_certificate_map(
    args: &ServeArgs,
) -> Result<Option<Arc<vnfm_api::mtls::CertificateIdentities>>, ServeError> {
    let Some(path) = &args.tls_client_map else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(path).map_err(|source| ServeError::ReadFile {
        option: "tls-client-map",
        path: path.clone(),
        source,
    })?;
    let map = vnfm_api::mtls::CertificateIdentities::from_json(&text, args.oauth.role_mapping())
        .map_err(|reason| ServeError::ClientCertMap {
            path: path.clone(),
            reason,
        })?;
    Ok(Some(Arc::new(map)))
}

/// Runs the server; returns the exit code, or a usage error.
/// The lease length and renewal interval (`--lease-ttl`, `--lease-renew-interval`).
fn leases(args: &ServeArgs) -> Result<(Duration, Duration), ServeError> {
    if args.lease_renew_interval >= args.lease_ttl {
        return Err(ServeError::Options(
            "--lease-renew-interval must be shorter than --lease-ttl",
        ));
    }
    Ok((
        Duration::from_secs(args.lease_ttl),
        Duration::from_secs(args.lease_renew_interval),
    ))
}

pub fn run(args: ServeArgs) -> Result<ExitCode, ServeError> {
    let metrics = Arc::new(Metrics::default());
    let exporting = init_logging(&args, metrics.clone())?;
    let clients: Vec<ClientCredentials> = match &args.clients_file {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|source| ServeError::ReadFile {
                option: "clients-file",
                path: path.clone(),
                source,
            })?;
            serde_json::from_str(&text).map_err(|source| ServeError::ClientsFile {
                path: path.clone(),
                source,
            })?
        }
        None => Vec::new(),
    };
    let (lease_ttl, lease_renewal) = leases(&args)?;
    // The composition root: every service of the VNFM, assembled by the `vnfm` builder.
    let mut services = vnfm::lcm::builder()
        .leases(lease_ttl, lease_renewal)
        .data_dir(&args.data_dir)
        .max_package_bytes(args.max_package_mib.saturating_mul(1024 * 1024))
        .upload_allow_list(args.upload_allow.clone())
        .client_key_ttl(Duration::from_secs(args.idempotency_key_ttl))
        .deliver_notifications(vnfm::lcm::DelivererConfig {
            max_age: Duration::from_secs(args.notify_max_age_hours.saturating_mul(3600)),
            backoff_max: Duration::from_secs(args.notify_backoff_max.max(1)),
            // The owner is the runner id (set when the deliverer starts).
            ..vnfm::lcm::DelivererConfig::new("")
        });
    if let Some(url) = &args.store_url {
        services = services.store_url(url);
    }
    if let Some(url) = &args.nfvo_url {
        services = services.nfvo_setting(vnfm::lcm::NfvoSetting::Set(nfvo_from_args(&args, url)?));
    } else if args.nfvo_local {
        services = services.nfvo_setting(vnfm::lcm::NfvoSetting::Clear);
    }
    if let Some(oauth) = outbound_oauth(&args)? {
        services = services.outbound_oauth(oauth);
    }
    if args.enable_test_vim {
        services = services
            .infra_driver(vnfm_api::test_vim_driver())
            .vim_kind(vnfm_api::test_vim_kind());
    }
    for driver in infra_drivers(&args)? {
        services = services.infra_driver(driver);
    }
    if let Some(mgmt) = plugin_host(&args)? {
        services = services.mgmt_driver(mgmt);
    }
    let hourly = |cooldown: u64, max_in_window: usize| vnfm::lcm::Bounds {
        cooldown: Duration::from_secs(cooldown),
        max_in_window,
        window: Duration::from_secs(3600),
    };
    services = services
        .auto_heal((!args.no_auto_heal).then(|| vnfm::lcm::AutoHealPolicy {
            min_severity: args.auto_heal_min_severity,
            bounds: hourly(args.auto_heal_cooldown, args.auto_heal_max_per_hour),
        }))
        .auto_scale((!args.no_auto_scale).then(|| vnfm::lcm::AutoScalePolicy {
            bounds: hourly(args.auto_scale_cooldown, args.auto_scale_max_per_hour),
        }));
    services = services.infra_watch(infra_watch(args.infra_watch_interval));
    services = match &args.prometheus_url {
        Some(url) => prometheus(services, url, args.promql_file.as_deref())?,
        // PM jobs and thresholds still take the values a monitoring system pushes
        // (Tacker's `/pm_event` and `/pm_threshold`).
        None => services.metrics_source(Arc::new(vnfm::lcm::PushedMetrics::default())),
    };
    services = services.performance(pm_options(&args), Duration::from_secs(5));
    services = services.mgmt_scripts(script_config(&args));
    let mut state = StateOptions::new(&args.data_dir);
    state.clients = clients;
    state.allow_basic_auth = args.allow_basic_auth;
    state.token_ttl = Duration::from_secs(args.token_ttl);
    state.enable_test_vim = args.enable_test_vim;
    state.verify_callbacks = !args.no_callback_check;
    state.allow_duplicate_lcm_subscriptions = args.allow_duplicate_lcm_subscriptions;
    state.page_sizes = page_sizes(&args)?;
    if let Some(path) = &args.enhanced_policy {
        let policy = vnfm_policy::PolicyFile::open(path).map_err(ServeError::Policy)?;
        warn_undefined_references(&policy.current());
        state.enhanced_policy = Some(Arc::new(policy));
    }
    if let Some(path) = &args.alertmanager_token_file {
        let token = std::fs::read_to_string(path).map_err(|source| ServeError::ReadFile {
            option: "alertmanager-token-file",
            path: path.clone(),
            source,
        })?;
        let token = token.trim();
        if token.is_empty() {
            return Err(ServeError::EmptySecretFile {
                option: "alertmanager-token-file",
                path: path.clone(),
            });
        }
        state.alertmanager_token = Some(vnfm_types::SecretString::new(token));
    }
    state.package_limits.max_package_bytes = args.max_package_mib.saturating_mul(1024 * 1024);
    state.limits.max_connections = args.max_connections;
    state.limits.max_connections_per_peer = args.max_connections_per_address;
    state.limits.first_request_timeout = Duration::from_secs(args.first_request_timeout.max(1));
    state.limits.auth_backoff = vnfm_api::AuthBackoff {
        max: Duration::from_secs(args.auth_backoff_max),
        free_failures: args.auth_failures_per_client,
        free_failures_per_peer: args.auth_failures_per_address,
    };
    state.limits.header_read_timeout = Duration::from_secs(args.header_timeout.max(1));
    state.limits.body_read_timeout = Duration::from_secs(args.body_timeout.max(1));
    state.limits.request_timeout = Duration::from_secs(args.request_timeout.max(1));
    state.limits.upload_timeout = Duration::from_secs(args.upload_timeout.max(1));
    state.metrics = Some(metrics);
    let keystone = args.keystone.validator()?;
    state.keystone = keystone.clone();
    let oauth = args.oauth.verifier()?;
    state.oauth = oauth.clone();
    state.client_certificates = client_certificate_map(&args)?;
    let options = ServeOptions {
        listen: args.listen,
        tls_cert: args.tls_cert.clone(),
        tls_key: args.tls_key.clone(),
        tls_client_ca: args.tls_client_ca.clone(),
        tls_client_auth: match args.tls_client_auth.as_deref() {
            Some("required") => Some(vnfm_api::mtls::ClientCertMode::Required),
            Some(_) => Some(vnfm_api::mtls::ClientCertMode::Optional),
            None => None,
        },
        shutdown_timeout: Duration::from_secs(30),
        state,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(ServeError::Runtime)?;
    let basic = args.allow_basic_auth;
    if let Some(validator) = &keystone {
        // Wrong service credentials show now; the server starts anyway (Keystone may come
        // up later) and answers Keystone requests 503 until it can validate them.
        if let Err(e) = runtime.block_on(validator.authenticate_service()) {
            tracing::warn!(url = validator.url(), error = %e, "the Keystone service identity cannot authenticate");
        }
    }
    if let Some(verifier) = &oauth {
        // A wrong issuer shows now; the server starts anyway (the authorization server may
        // come up later) and reads its metadata and keys at the first token.
        if let Err(e) = runtime.block_on(verifier.prepare()) {
            tracing::warn!(issuer = verifier.issuer(), error = %e, "the authorization server's metadata or keys cannot be read");
        }
    }
    let keystone_url = keystone.as_ref().map(|k| k.url().to_owned());
    let oauth_issuer = oauth.as_ref().map(|o| o.issuer().to_owned());
    let client_certificates = args.tls_client_auth.clone().map(|mode| {
        let mapped = options
            .state
            .client_certificates
            .as_ref()
            .map_or(0, |m| m.len());
        format!(
            "client certificates ({mode}) of {} CA file(s) are asked for at the TLS handshake; {mapped} mapped to callers (--tls-client-map)",
            args.tls_client_ca.len()
        )
    });
    if let Some(policy) = &options.state.enhanced_policy {
        runtime.spawn(reload_policy_on_change(policy.clone()));
    }
    let outcome = runtime.block_on(vnfm_api::serve(services, options, |s| {
        let base = format!("{}://{}", s.scheme, s.addr);
        let mut lines = vec![
            format!("vnfm listening on {base}"),
            format!(
                "credentials: {} (client_id {})",
                s.credentials_file.display(),
                s.client_id
            ),
            format!(
                "get a token: curl -s -u <client_id>:<client_secret> -d grant_type=client_credentials {base}/oauth2/token"
            ),
            format!(
                "then send: Authorization: Bearer <access_token>, Version: 2.0.0 (see {base}/openapi.json)"
            ),
        ];
        if basic {
            lines.push("HTTP Basic with the client id and secret is accepted too".into());
        }
        if let Some(url) = &keystone_url {
            lines.push(format!(
                "Keystone tokens (X-Auth-Token) are accepted too, validated by {url}"
            ));
        }
        if let Some(issuer) = &oauth_issuer {
            lines.push(format!(
                "bearer tokens of the authorization server {issuer} are accepted too"
            ));
        }
        if let Some(line) = &client_certificates {
            lines.push(line.clone());
        }
        // The start lines are a courtesy: a closed or broken standard output (a pipe whose
        // reader is gone) must not stop the server, as `println!` would by panicking.
        let mut out = std::io::stdout().lock();
        for line in lines {
            if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
                break;
            }
        }
    }));
    drop(runtime);
    if let Some(exporting) = exporting {
        exporting.shutdown();
    }
    match outcome {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => {
            eprintln!("vnfm serve: {e}");
            Ok(ExitCode::from(1))
        }
    }
}

/// How often the enhanced policy file is read again for changes.
const POLICY_RELOAD_EVERY: Duration = Duration::from_secs(2);

/// Warns of each `rule:NAME` of `policy` that names no rule of the file (such a check fails).
fn warn_undefined_references(policy: &vnfm_policy::Policy) {
    for (rule, missing) in policy.undefined_references() {
        tracing::warn!(
            rule,
            missing,
            "--enhanced-policy: a rule refers to a rule the file does not define (that check fails)"
        );
    }
}

/// Puts the enhanced policy file's edits in force while the server runs, as oslo.policy does
/// in Tacker: an edit that does not parse is logged with its file:line and the rules in force
/// stay.
async fn reload_policy_on_change(policy: Arc<vnfm_policy::PolicyFile>) {
    let mut ticks = tokio::time::interval(POLICY_RELOAD_EVERY);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let file = policy.clone();
        let Ok(reload) = tokio::task::spawn_blocking(move || file.reload_if_changed()).await else {
            continue;
        };
        match reload {
            vnfm_policy::Reload::Unchanged => {}
            vnfm_policy::Reload::Reloaded => {
                let current = policy.current();
                tracing::info!(
                    rules = current.names().count(),
                    "--enhanced-policy: the edited policy file is in force"
                );
                warn_undefined_references(&current);
            }
            vnfm_policy::Reload::Refused(error) => tracing::error!(
                error = %error,
                "--enhanced-policy: the edited policy file is refused; the rules in force stay"
            ),
        }
    }
}

/// A `PerceivedSeverity` named as SOL003 names it (any case); `CLEARED` is not a severity an
/// alarm heals at.
/// The infrastructure watch `--infra-watch-interval SECONDS` asks for: none for 0.
fn infra_watch(seconds: u64) -> Option<vnfm::lcm::InfraWatchOptions> {
    (seconds > 0).then(|| vnfm::lcm::InfraWatchOptions {
        every: Duration::from_secs(seconds),
        ..vnfm::lcm::InfraWatchOptions::default()
    })
}

/// Performance management as `--pm-threshold-period` and `--pm-reports-kept` set it.
fn pm_options(args: &ServeArgs) -> vnfm::lcm::PmOptions {
    vnfm::lcm::PmOptions {
        threshold_period: Duration::from_secs(args.pm_threshold_period.max(1)),
        max_reports: args.pm_reports_kept as usize,
    }
}

/// The page sizes of `--page-size` and `--page-size-of`.
fn page_sizes(args: &ServeArgs) -> Result<vnfm_api::listing::PageSizes, ServeError> {
    let mut sizes = vnfm_api::listing::PageSizes::every(args.page_size)
        .map_err(|message| ServeError::PageSize { message })?;
    for &(list, size) in &args.page_size_of {
        sizes = sizes
            .with(list, size)
            .map_err(|message| ServeError::PageSize { message })?;
    }
    Ok(sizes)
}

fn parse_severity(s: &str) -> Result<vnfm_types::PerceivedSeverity, String> {
    let upper = s.to_ascii_uppercase();
    match serde_json::from_value(serde_json::Value::String(upper)) {
        Ok(vnfm_types::PerceivedSeverity::Cleared) | Err(_) => Err(format!(
            "{s:?} is not an alarm severity: use CRITICAL, MAJOR, MINOR, WARNING or INDETERMINATE"
        )),
        Ok(sev) => Ok(sev),
    }
}

/// `services` reading metrics from `--prometheus-url` with the templates of `--promql-file`.
fn prometheus(
    services: vnfm::lcm::Builder,
    url: &str,
    promql_file: Option<&std::path::Path>,
) -> Result<vnfm::lcm::Builder, ServeError> {
    let overrides: vnfm::lcm::PromqlOverrides = match promql_file {
        None => Default::default(),
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|source| ServeError::ReadFile {
                option: "promql-file",
                path: path.to_owned(),
                source,
            })?;
            serde_saphyr::from_str(&text).map_err(|source| ServeError::PromqlFile {
                path: path.to_owned(),
                source: Box::new(source),
            })?
        }
    };
    let source =
        vnfm::lcm::prometheus_metrics(url, vnfm::lcm::PrometheusOptions::default(), &overrides)
            .map_err(|source| ServeError::Prometheus {
                url: url.to_owned(),
                source: Box::new(source),
            })?;
    Ok(services.metrics_source(source))
}

#[cfg(test)]
mod tests;
