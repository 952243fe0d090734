//! [`KubeError`]: what failed in the Kubernetes driver, and how it maps onto the core's
//! [`DriverError`] (transient, permanent, invalid input, timeout).

use std::time::Duration;

use vnfm_driver_api::DriverError;

/// A failure of the Kubernetes driver. Messages name the object, the file or the VIM
/// attribute concerned and say what to do; they never contain credentials.
#[derive(Debug, thiserror::Error)]
pub enum KubeError {
    /// The VIM connection cannot be used (missing endpoint, bad CA certificate, no
    /// credentials).
    #[error("VIM connection `{vim}`: {message}")]
    Access {
        /// The `vimConnectionInfo` key.
        vim: String,
        /// What is wrong and what to change.
        message: String,
    },
    /// The request or the package does not say what to deploy, or says it wrongly.
    #[error("{0}")]
    Input(String),
    /// A manifest cannot be read or used.
    #[error("manifest `{file}`: {message}")]
    Manifest {
        /// Package path of the manifest (or chart template).
        file: String,
        /// What is wrong.
        message: String,
    },
    /// A manifest names a placeholder the request gives no value for.
    #[error(
        "manifest `{file}` uses the placeholder `${name}`, which the request does not define: add `{name}` to additionalParams (or write `$$` for a literal `$`)"
    )]
    UnknownPlaceholder {
        /// Package path of the manifest.
        file: String,
        /// The placeholder name.
        name: String,
    },
    /// An object with the same name exists and is not ours.
    #[error(
        "{object} already exists and is not managed by this VNF instance (it has no label {label}={value}); it is not taken over: remove it, or rename the object in the package"
    )]
    Foreign {
        /// `Kind namespace/name`.
        object: String,
        /// The ownership label.
        label: String,
        /// Its expected value.
        value: String,
    },
    /// The API server refused the credentials.
    #[error(
        "the Kubernetes API server at {endpoint} refused the credentials of VIM connection `{vim}` (401 Unauthorized): the token or password is wrong or has expired; register new credentials for the VIM"
    )]
    Unauthorized {
        /// API server URL.
        endpoint: String,
        /// The `vimConnectionInfo` key.
        vim: String,
    },
    /// The API server cannot be reached.
    #[error("cannot reach the Kubernetes API server at {endpoint} while {doing}: {cause}")]
    Unreachable {
        /// API server URL.
        endpoint: String,
        /// What the driver was doing.
        doing: String,
        /// The connection error (no credentials in it).
        cause: String,
    },
    /// The API server did not answer a request within the driver's request budget (a stalled
    /// server, or a network path that swallows the connection).
    #[error(
        "the Kubernetes API server at {endpoint} (VIM connection `{vim}`) did not answer within {after:?} while {doing}: the server or the network to it is stalled; the request may still take effect, and retrying the operation converges"
    )]
    Unanswered {
        /// API server URL.
        endpoint: String,
        /// The `vimConnectionInfo` key.
        vim: String,
        /// What the driver was doing (`applying ConfigMap ns/settings`).
        doing: String,
        /// The request budget that ran out.
        after: Duration,
    },
    /// The API server's TLS certificate is not trusted: retrying cannot help until the VIM
    /// names the CA that issued it.
    #[error(
        "the Kubernetes API server at {endpoint} presented a certificate that is not trusted while {doing} ({cause}): give the CA certificate that issued it in the VIM's interfaceInfo.ssl_ca_cert"
    )]
    Untrusted {
        /// API server URL.
        endpoint: String,
        /// What the driver was doing.
        doing: String,
        /// What TLS refused (no certificate bytes).
        cause: String,
    },
    /// The API server answered an error.
    #[error("{doing} failed: {code} {reason}: {message}")]
    Api {
        /// What the driver was doing (`applying Deployment ns/web`).
        doing: String,
        /// HTTP status code.
        code: u16,
        /// `Status.reason`.
        reason: String,
        /// `Status.message`.
        message: String,
    },
    /// The cluster does not serve a kind the package uses.
    #[error(
        "the cluster does not serve {api_version} {kind} (needed by {object}): install its CustomResourceDefinition or the API, or remove the object from the package"
    )]
    UnknownKind {
        /// `apiVersion`.
        api_version: String,
        /// `kind`.
        kind: String,
        /// The object that needs it.
        object: String,
    },
    /// Objects did not become ready in time.
    #[error("waiting for {what} to become ready: {details}")]
    NotReady {
        /// A summary (`3 objects`).
        what: String,
        /// Each object not ready, with its conditions.
        details: String,
        /// The time budget that ran out.
        budget: Duration,
    },
    /// A workload failed for good (a Job failed, a Deployment exceeded its progress deadline).
    #[error("{object} failed: {reason}")]
    Failed {
        /// `Kind namespace/name`.
        object: String,
        /// What the cluster reported.
        reason: String,
    },
    /// The cluster does not meet the application's placement requirements.
    #[error("the target cluster does not meet the descriptor's mandatory requirements: {0}")]
    Placement(String),
    /// Rendering a Helm chart failed.
    #[error("rendering Helm chart `{chart}` with {renderer}: {message}")]
    Helm {
        /// Chart path.
        chart: String,
        /// The renderer (`helm binary`, `Helm SDK library`).
        renderer: String,
        /// What went wrong.
        message: String,
    },
    /// The Helm SDK library cannot be loaded or lacks a function.
    #[error("rendering Helm chart `{chart}` with Helm SDK library: cannot use {}: {symbol}: {source}", path.display())]
    HelmSdkLoad {
        /// Chart path (`-` while the library is opened).
        chart: String,
        /// The library file.
        path: std::path::PathBuf,
        /// The library, or the function of it, that could not be had.
        symbol: &'static str,
        /// The loader's error.
        #[source]
        source: libloading::Error,
    },
    /// A call into the Helm SDK library answered an error status.
    #[error(
        "rendering Helm chart `{chart}` with Helm SDK library: {step} failed (code {code}): {detail}"
    )]
    HelmSdkCall {
        /// Chart path.
        chart: String,
        /// What the call was doing (`loading the chart archive`, `rendering`, ...).
        step: &'static str,
        /// The library's status code.
        code: i32,
        /// The library's error text (`no detail` when it gave none).
        detail: String,
    },
    /// An input to the Helm SDK library cannot be passed as a C string.
    #[error("rendering Helm chart `{chart}` with Helm SDK library: {what} contains a NUL byte")]
    HelmSdkInput {
        /// Chart path.
        chart: String,
        /// Which input (`the chart path`, `the values`, `the release name`).
        what: &'static str,
        /// Where the NUL byte is.
        #[source]
        source: std::ffi::NulError,
    },
    /// The Helm SDK library answered something that is not the JSON it documents.
    #[error(
        "rendering Helm chart `{chart}` with Helm SDK library: the library returned {what}: {source}"
    )]
    HelmSdkOutput {
        /// Chart path.
        chart: String,
        /// What it returned (`unreadable CRDs`, `an unreadable rendering`).
        what: &'static str,
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
    /// The step was cancelled.
    #[error("{0} was cancelled")]
    Cancelled(String),
    /// Deleted objects were still there when the time budget ended.
    #[error("waiting for deleted objects to be gone: {objects}; {BLOCKED_ADVICE}")]
    Blocked {
        /// Each object still there, with its finalizers.
        objects: String,
        /// The budget that ran out.
        budget: Duration,
    },
    /// The step's deadline passed.
    #[error("{what} did not finish within its time budget")]
    Deadline {
        /// What was being done.
        what: String,
        /// The budget.
        budget: Duration,
    },
}

/// What to do about objects finalizers hold.
const BLOCKED_ADVICE: &str = "a finalizer keeps an object until the controller that set it removes it (kubernetes.io/pvc-protection: while a pod mounts the claim; kubernetes.io/pv-protection: while a claim is bound to the volume): remove what holds it, then retry the operation";

impl KubeError {
    /// An [`KubeError::Input`].
    pub fn input(message: impl Into<String>) -> Self {
        KubeError::Input(message.into())
    }

    /// Whether this is the API server's answer `code` (404 Not Found, 409 Conflict, ...).
    pub fn is_status(&self, code: u16) -> bool {
        matches!(self, KubeError::Api { code: c, .. } if *c == code)
    }

    /// A [`KubeError::Manifest`].
    pub fn manifest(file: impl Into<String>, message: impl Into<String>) -> Self {
        KubeError::Manifest {
            file: file.into(),
            message: message.into(),
        }
    }
}

impl From<KubeError> for DriverError {
    fn from(e: KubeError) -> Self {
        let message = e.to_string();
        match e {
            KubeError::Access { .. }
            | KubeError::Input(_)
            | KubeError::Manifest { .. }
            | KubeError::UnknownPlaceholder { .. }
            | KubeError::Placement(_) => DriverError::invalid_input(message),
            KubeError::Foreign { .. }
            | KubeError::Unauthorized { .. }
            | KubeError::UnknownKind { .. }
            | KubeError::Failed { .. }
            | KubeError::Helm { .. }
            | KubeError::HelmSdkLoad { .. }
            | KubeError::HelmSdkCall { .. }
            | KubeError::HelmSdkInput { .. }
            | KubeError::HelmSdkOutput { .. }
            | KubeError::Untrusted { .. } => DriverError::permanent(message),
            KubeError::Unreachable { .. } | KubeError::Unanswered { .. } => {
                DriverError::transient(message)
            }
            KubeError::Api { code, .. } => {
                if code == 429 || code == 409 || code >= 500 {
                    DriverError::transient(message)
                } else {
                    DriverError::permanent(message)
                }
            }
            KubeError::NotReady {
                what,
                details,
                budget,
            } => DriverError::timeout(
                format!("waiting for {what} to become ready ({details})"),
                budget,
            ),
            KubeError::Cancelled(what) => DriverError::cancelled(what),
            KubeError::Deadline { what, budget } => DriverError::timeout(what, budget),
            KubeError::Blocked { objects, budget } => DriverError::timeout(
                format!("waiting for deleted objects to be gone ({objects}; {BLOCKED_ADVICE})"),
                budget,
            ),
        }
    }
}

/// Turns a kube client error into a [`KubeError`], naming what was being done.
pub(crate) fn from_kube(e: kube::Error, doing: &str, endpoint: &str, vim: &str) -> KubeError {
    match e {
        kube::Error::Api(s) if s.code == 401 => KubeError::Unauthorized {
            endpoint: endpoint.to_string(),
            vim: vim.to_string(),
        },
        kube::Error::Api(s) => KubeError::Api {
            doing: doing.to_string(),
            code: s.code,
            reason: s.reason.clone(),
            message: s.message.clone(),
        },
        kube::Error::HyperError(err) if let Some(cause) = certificate_refusal(&err) => {
            KubeError::Untrusted {
                endpoint: endpoint.to_string(),
                doing: doing.to_string(),
                cause,
            }
        }
        kube::Error::Service(err) if let Some(cause) = certificate_refusal(&*err) => {
            KubeError::Untrusted {
                endpoint: endpoint.to_string(),
                doing: doing.to_string(),
                cause,
            }
        }
        kube::Error::HyperError(err) => KubeError::Unreachable {
            endpoint: endpoint.to_string(),
            doing: doing.to_string(),
            cause: err.to_string(),
        },
        kube::Error::Service(err) => KubeError::Unreachable {
            endpoint: endpoint.to_string(),
            doing: doing.to_string(),
            cause: chain(&*err),
        },
        other => KubeError::Api {
            doing: doing.to_string(),
            code: 0,
            reason: "ClientError".into(),
            message: other.to_string(),
        },
    }
}

/// What rustls refused about the server's certificate, when that is among `e`'s causes. An
/// I/O error's cause is its inner error (`source()` would skip it: the client nests rustls's
/// error in two of them).
fn certificate_refusal(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut cur = Some(e);
    while let Some(e) = cur {
        if let Some(rustls::Error::InvalidCertificate(why)) = e.downcast_ref::<rustls::Error>() {
            return Some(format!("{why:?}"));
        }
        cur = match e.downcast_ref::<std::io::Error>() {
            Some(io) => io
                .get_ref()
                .map(|inner| inner as &(dyn std::error::Error + 'static)),
            None => e.source(),
        };
    }
    None
}

fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        out.push_str(": ");
        out.push_str(&s.to_string());
        cur = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_map_to_retryability() {
        let d: DriverError = KubeError::Unreachable {
            endpoint: "https://k".into(),
            doing: "x".into(),
            cause: "refused".into(),
        }
        .into();
        assert!(d.is_retryable());
        let d: DriverError = KubeError::UnknownPlaceholder {
            file: "f.yaml".into(),
            name: "X".into(),
        }
        .into();
        assert_eq!(d.kind(), "invalidInput");
        assert!(d.to_string().contains("`$X`"), "{d}");
        let d: DriverError = KubeError::NotReady {
            what: "1 object".into(),
            details: "Deployment ns/web: readyReplicas 0/2".into(),
            budget: Duration::from_secs(5),
        }
        .into();
        assert_eq!(d.kind(), "timeout");
        assert!(d.to_string().contains("Deployment ns/web"), "{d}");
    }
}
