//! [`ServeError`]: why `vnfm serve` cannot start, by the option or step that failed, with the
//! cause kept. The message names the option and says what it needs.

use std::path::PathBuf;

/// Why `vnfm serve` refused its options or could not start. Never carries a secret.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Trace export cannot start (a malformed collector URL); the message names the setting.
    #[error("trace export: {0}")]
    TraceExport(String),
    /// A file an option names cannot be read.
    #[error("--{option} {}: {source}", path.display())]
    ReadFile {
        /// The option, without `--`.
        option: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A secret file holds nothing but line breaks.
    #[error("--{option} {}: the file is empty", path.display())]
    EmptySecretFile {
        /// The option, without `--`.
        option: &'static str,
        /// The file.
        path: PathBuf,
    },
    /// The clients file is not a list of client credentials.
    #[error(
        "--clients-file {}: expected [{{\"client_id\": ..., \"client_secret\": ...}}]: {source}",
        path.display()
    )]
    ClientsFile {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: serde_json::Error,
    },
    /// The client certificate map cannot be used.
    #[error("--tls-client-map {}: expected [{{\"subject_cn\" (or san_dns, san_uri, san_email): ..., \"client_id\": ..., \"roles\": [...], \"project_id\": ...}}]: {reason}", path.display())]
    ClientCertMap {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Options that need each other were not given together (the message says which).
    #[error("{0}")]
    Options(&'static str),
    /// A page size out of range.
    #[error("--page-size: {message}")]
    PageSize {
        /// What is wrong.
        message: String,
    },
    /// `--nfvo-client-id` without its secret in the environment.
    #[error("--nfvo-client-id needs the secret in the environment variable VNFM_NFVO_SECRET")]
    NfvoSecret(#[source] std::env::VarError),
    /// The NFVO client refused the URL or the CA.
    #[error("--nfvo-url {url}: {source}")]
    Nfvo {
        /// The URL given.
        url: String,
        /// The cause.
        #[source]
        source: vnfm::lcm::OutboundError,
    },
    /// The Heat environment file cannot be used.
    #[error("--heat-environment {0}")]
    HeatEnvironment(#[source] vnfm_infra_openstack::OpenStackError),
    /// The Helm SDK library cannot be loaded.
    #[error("--helm-library {}: {source}", path.display())]
    HelmLibrary {
        /// The library.
        path: PathBuf,
        /// The cause.
        #[source]
        source: vnfm_infra_kubernetes::KubeError,
    },
    /// The path of the running executable (which isolated plugin hooks run) is unknown.
    #[error("cannot find the vnfm executable for the plugin runner: {0}")]
    CurrentExe(#[source] std::io::Error),
    /// A `--plugin` value is not `ARTIFACT=LIBRARY`.
    #[error("--plugin {spec}: expected ARTIFACT=LIBRARY (the VNFD artifact name and the .so file)")]
    PluginSpec {
        /// The value given.
        spec: String,
    },
    /// A `--plugin` library is not a file.
    #[error("--plugin {spec}: {} is not a file", library.display())]
    PluginLibrary {
        /// The value given.
        spec: String,
        /// The library path in it.
        library: PathBuf,
    },
    /// The Prometheus metrics source cannot be set up (URL, PromQL templates).
    #[error("--prometheus-url {url}: {source}")]
    Prometheus {
        /// The URL given.
        url: String,
        /// The cause.
        #[source]
        source: Box<vnfm::lcm::EmbedError>,
    },
    /// The `--promql-file` is not a map of metric name to object type to PromQL.
    #[error("--promql-file {}: {source}", path.display())]
    PromqlFile {
        /// The file.
        path: PathBuf,
        /// Why it cannot be read.
        #[source]
        source: Box<serde_saphyr::Error>,
    },
    /// The Keystone validator refused its configuration.
    #[error("--keystone-url {url}: {source}")]
    Keystone {
        /// The URL given.
        url: String,
        /// The cause.
        #[source]
        source: vnfm_keystone::KeystoneError,
    },
    /// The enhanced policy file cannot be read or does not parse (the error says file:line).
    #[error("--enhanced-policy {0}")]
    Policy(#[source] vnfm_policy::PolicyError),
    /// The external authorization server's verifier refused its configuration.
    #[error("--oauth-issuer {issuer}: {source}")]
    OAuth {
        /// The issuer given.
        issuer: String,
        /// The cause.
        #[source]
        source: vnfm_oauth::OAuthError,
    },
    /// The async runtime cannot be started.
    #[error("cannot start the runtime: {0}")]
    Runtime(#[source] std::io::Error),
}
