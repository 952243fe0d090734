//! [`CheckError`]: why a check failed, and whether retrying the operation may help.

use vnfm_plugin_sdk::PluginError;

/// What went wrong while checking a CNF. Converted into the SDK's [`PluginError`]: the
/// objects not being there or not ready yet, and connection problems, are transient (a retry
/// of the operation checks again); wrong parameters and refused credentials are not.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The instance has no VIM connection of a Kubernetes type.
    #[error(
        "the instance has no Kubernetes VIM connection (vimType ETSINFV.KUBERNETES.V_1 or ETSINFV.HELM.V_3) to check the CNF on; connections: {0}"
    )]
    NoKubernetesVim(String),
    /// The connection named by the hook input `vim_connection_id` does not exist.
    #[error(
        "the hook input vim_connection_id names `{0}`, which is not a VIM connection of the instance"
    )]
    UnknownVimConnection(String),
    /// A parameter is missing or has the wrong shape.
    #[error("{0}")]
    InvalidParameter(String),
    /// The VIM's CA certificate cannot be read.
    #[error(
        "interfaceInfo.ssl_ca_cert of VIM connection `{connection}` is not a PEM certificate: {message}"
    )]
    BadCaCertificate {
        /// The VIM connection key.
        connection: String,
        /// Why.
        message: String,
    },
    /// The HTTP client cannot be built.
    #[error("cannot set up the HTTP client for the Kubernetes API: {0}")]
    Client(String),
    /// The API server could not be reached or did not answer in time.
    #[error("the Kubernetes API at {endpoint} cannot be reached ({what}): {message}")]
    Unreachable {
        /// API server URL.
        endpoint: String,
        /// The request.
        what: String,
        /// The client's message.
        message: String,
    },
    /// The API server refused the VIM's credentials.
    #[error(
        "the Kubernetes API at {endpoint} refused the credentials of VIM connection `{connection}` ({status}) when reading {what}: check the VIM's bearer token and its permissions"
    )]
    Refused {
        /// API server URL.
        endpoint: String,
        /// The VIM connection key.
        connection: String,
        /// HTTP status.
        status: u16,
        /// The object read.
        what: String,
    },
    /// The object does not exist (yet).
    #[error(
        "{kind} {namespace}/{name} does not exist on the cluster (not deployed, or deployed to another namespace)"
    )]
    Missing {
        /// `Service` or `Deployment`.
        kind: &'static str,
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
    },
    /// The Deployment exists but is not available.
    #[error("Deployment {namespace}/{name} is not available: {detail}")]
    NotAvailable {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
        /// Replica counts and the `Available` condition.
        detail: String,
    },
    /// The API server answered with an unexpected status or body.
    #[error("the Kubernetes API at {endpoint} answered {what} with {answer}")]
    Unexpected {
        /// API server URL.
        endpoint: String,
        /// The request.
        what: String,
        /// Status and message.
        answer: String,
        /// Whether a retry may help (a 5xx or 429 status).
        transient: bool,
    },
}

impl CheckError {
    /// Whether retrying the operation may succeed.
    pub fn is_transient(&self) -> bool {
        match self {
            CheckError::Unreachable { .. }
            | CheckError::Missing { .. }
            | CheckError::NotAvailable { .. } => true,
            CheckError::Unexpected { transient, .. } => *transient,
            _ => false,
        }
    }
}

impl From<CheckError> for PluginError {
    fn from(e: CheckError) -> Self {
        let message = e.to_string();
        match e {
            e if e.is_transient() => PluginError::transient(message),
            CheckError::NoKubernetesVim(_)
            | CheckError::UnknownVimConnection(_)
            | CheckError::InvalidParameter(_)
            | CheckError::BadCaCertificate { .. } => PluginError::invalid_input(message),
            _ => PluginError::permanent(message),
        }
    }
}
