//! [`OpenStackError`]: what went wrong talking to Keystone, Heat or Nova, or preparing a stack, and
//! how it maps onto the driver port's [`DriverError`].
//!
//! Messages never carry secrets: HTTP bodies are cut short and passed through
//! [`vnfm_driver_api::ResolvedVim::redact`] before they are stored here, and tokens are never
//! formatted.

use std::time::Duration;

use vnfm_driver_api::DriverError;

/// A failure of the OpenStack driver.
#[derive(Debug, thiserror::Error)]
pub enum OpenStackError {
    /// The VIM connection cannot be used: a missing or malformed `interfaceInfo` /
    /// `accessInfo` member.
    #[error("VIM connection `{connection}`: {field}: {message}")]
    Vim {
        /// Key of the connection in the instance's `vimConnectionInfo`.
        connection: String,
        /// The member, as a JSON pointer into the connection (`/accessInfo/password`).
        field: String,
        /// What is wrong and what is expected.
        message: String,
    },

    /// The HTTP client could not be built (a CA certificate that does not parse, ...).
    #[error("cannot set up the HTTPS client for {what}: {source}")]
    Client {
        /// What the client is for.
        what: String,
        /// The cause.
        #[source]
        source: reqwest::Error,
    },

    /// The request did not get an answer (connection refused or reset, timeout); retried
    /// with backoff before this is reported.
    #[error("{what}: no answer from {url} after {attempts} attempt(s): {source}")]
    Unreachable {
        /// The call (`POST /v3/auth/tokens`, ...).
        what: String,
        /// The URL, without query.
        url: String,
        /// How many times it was tried.
        attempts: u32,
        /// The last transport error.
        #[source]
        source: reqwest::Error,
    },

    /// The service answered with an error status.
    #[error("{what}: HTTP {status} from {service}{}", detail_suffix(.detail))]
    Status {
        /// The call.
        what: String,
        /// `keystone`, `heat` or `nova`.
        service: &'static str,
        /// The status code.
        status: u16,
        /// The error message of the body (cut, secrets redacted), when there is one.
        detail: String,
    },

    /// Keystone refused the credentials.
    #[error(
        "Keystone at {endpoint} refused the credentials of VIM connection `{connection}` (HTTP {status}){}; check the user, password or application credential, their domains and the project",
        detail_suffix(.detail)
    )]
    Unauthorized {
        /// Key of the connection.
        connection: String,
        /// The Keystone endpoint.
        endpoint: String,
        /// 401 or 403.
        status: u16,
        /// Keystone's message (redacted).
        detail: String,
    },

    /// The service catalog of the token has no usable endpoint for a service.
    #[error(
        "the Keystone catalog has no {interface} endpoint of service type `{service_type}`{}; endpoints seen: {available}",
        region_suffix(.region)
    )]
    NoEndpoint {
        /// Service type (`orchestration`, `compute`, ...).
        service_type: String,
        /// `public`, `internal` or `admin`.
        interface: String,
        /// The region asked for.
        region: Option<String>,
        /// What the catalog offered, `type/interface/region` each.
        available: String,
    },

    /// A response body is not what the API documents.
    #[error("{what}: unexpected response from {service}: {message}")]
    Response {
        /// The call.
        what: String,
        /// `keystone` or `heat`.
        service: &'static str,
        /// What was wrong with it.
        message: String,
    },

    /// A response body does not decode into what the API documents.
    #[error("{what}: unexpected response from {service}: {problem} ({source})")]
    ResponseBody {
        /// The call.
        what: String,
        /// `keystone`, `heat` or `nova`.
        service: &'static str,
        /// What is wrong with the body (`the body is not JSON`, `` `stack` is missing or
        /// malformed ``).
        problem: String,
        /// The JSON decoder's error.
        #[source]
        source: serde_json::Error,
    },

    /// A Heat stack ended an action in a `*_FAILED` state.
    #[error("Heat stack `{stack}` is {status}{}: {reason}", resource_suffix(.resource))]
    StackFailed {
        /// The stack name.
        stack: String,
        /// `CREATE_FAILED`, `UPDATE_FAILED`, ...
        status: String,
        /// The failing resource (`VDU1 (OS::Nova::Server) in stack ...`), from the stack's
        /// events, when found.
        resource: Option<String>,
        /// The status reason of the failing resource, else the stack's.
        reason: String,
    },

    /// A Heat stack did not finish an action in time.
    #[error(
        "Heat stack `{stack}` did not reach {expected} within {} (last status {last_status}); raise stackTimeoutSeconds or look at the stack's events",
        human(*waited)
    )]
    StackTimeout {
        /// The stack name.
        stack: String,
        /// The status waited for.
        expected: String,
        /// The status seen last.
        last_status: String,
        /// How long it was waited for.
        waited: Duration,
    },

    /// Nova refused an action on a server (or the server failed or is gone).
    #[error("cannot {action} Nova server {server} (VNFC {vnfc}): {message}")]
    ServerAction {
        /// `start`, `stop` or `delete`.
        action: &'static str,
        /// The server id.
        server: String,
        /// The `vnfcResourceInfo` id the server backs.
        vnfc: String,
        /// What Nova said (cut, secrets redacted) or what state the server is in.
        message: String,
    },

    /// A Nova server did not reach the status asked for in time.
    #[error(
        "Nova server {server} (VNFC {vnfc}) did not become {expected} within {} (last status {last}); raise stackTimeoutSeconds or look at the server",
        human(*waited)
    )]
    ServerTimeout {
        /// The server id.
        server: String,
        /// The `vnfcResourceInfo` id the server backs.
        vnfc: String,
        /// `ACTIVE`, `SHUTOFF` or `deleted`.
        expected: &'static str,
        /// The status seen last, with the task it was busy with (`ACTIVE, task powering-off`).
        last: String,
        /// How long it was waited for.
        waited: Duration,
    },

    /// A software image of the package cannot be made available in Glance.
    #[error("software image `{image}` on VIM `{vim}`: {message}")]
    Image {
        /// The image (`sw_image_data.name`).
        image: String,
        /// The VIM connection.
        vim: String,
        /// What failed.
        message: String,
    },

    /// The package's Heat templates cannot be used.
    #[error("Heat template {path}: {message}")]
    Template {
        /// Package path of the template (or `generated` for a template made from the VNFD).
        path: String,
        /// What is wrong.
        message: String,
    },

    /// A Heat template of the package is not YAML (or JSON).
    #[error("Heat template {path}: is not valid YAML: {source}")]
    TemplateYaml {
        /// Package path of the template.
        path: String,
        /// The YAML reader's error (boxed: it is large).
        #[source]
        source: Box<serde_saphyr::Error>,
    },

    /// A generated Heat template could not be written out.
    #[error("Heat template {path}: cannot be serialized: {source}")]
    TemplateSerialize {
        /// Name of the generated template.
        path: String,
        /// The serializer's error.
        #[source]
        source: serde_json::Error,
    },

    /// A Heat environment file (or a template its `resource_registry` names) of the driver's
    /// configuration cannot be read.
    #[error("{}: {}{source}", path.display(), template_prefix(.template))]
    ReadEnvironment {
        /// The environment file.
        path: std::path::PathBuf,
        /// The template being read and the resource type it implements, when it is not the
        /// environment file itself.
        template: Option<(std::path::PathBuf, String)>,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },

    /// A Heat environment file of the driver's configuration is not YAML or JSON.
    #[error("{}: not YAML or JSON: {source}", path.display())]
    EnvironmentYaml {
        /// The environment file.
        path: std::path::PathBuf,
        /// The YAML reader's error (boxed: it is large).
        #[source]
        source: Box<serde_saphyr::Error>,
    },

    /// The request, the VNFD or the recorded instance does not allow the operation.
    #[error("{0}")]
    Input(String),

    /// A stack the operation needs does not exist.
    #[error(
        "Heat stack `{stack}` of instance {instance} does not exist (deleted outside the VNFM?)"
    )]
    NoStack {
        /// The stack name.
        stack: String,
        /// The VNF instance.
        instance: String,
    },
}

impl OpenStackError {
    /// Whether retrying the operation can help.
    pub fn is_transient(&self) -> bool {
        match self {
            OpenStackError::Unreachable { .. } => true,
            OpenStackError::Status { status, .. } => is_transient_status(*status),
            _ => false,
        }
    }
}

/// HTTP statuses worth retrying: throttling, conflicts with a concurrent action, and server
/// errors other than "not implemented".
pub(crate) fn is_transient_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429 | 500 | 502 | 503 | 504)
}

impl From<OpenStackError> for DriverError {
    fn from(e: OpenStackError) -> Self {
        match &e {
            OpenStackError::StackTimeout { waited, stack, .. } => {
                DriverError::timeout(format!("{e}; Heat stack `{stack}`"), *waited)
            }
            OpenStackError::ServerTimeout { waited, .. } => {
                DriverError::timeout(e.to_string(), *waited)
            }
            OpenStackError::Vim { .. }
            | OpenStackError::Template { .. }
            | OpenStackError::TemplateYaml { .. }
            | OpenStackError::TemplateSerialize { .. }
            | OpenStackError::ReadEnvironment { .. }
            | OpenStackError::EnvironmentYaml { .. }
            | OpenStackError::Input(_) => DriverError::invalid_input(e.to_string()),
            _ if e.is_transient() => DriverError::transient(e.to_string()),
            _ => DriverError::permanent(e.to_string()),
        }
    }
}

fn template_prefix(template: &Option<(std::path::PathBuf, String)>) -> String {
    match template {
        Some((file, ty)) => format!("template {} of {ty}: ", file.display()),
        None => String::new(),
    }
}

fn detail_suffix(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    }
}

fn region_suffix(region: &Option<String>) -> String {
    region
        .as_ref()
        .map(|r| format!(" in region `{r}`"))
        .unwrap_or_default()
}

fn resource_suffix(resource: &Option<String>) -> String {
    resource
        .as_ref()
        .map(|r| format!(" because resource {r} failed"))
        .unwrap_or_default()
}

fn human(d: Duration) -> String {
    if d >= Duration::from_secs(1) {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

/// At most `max` characters of `text`, on a char boundary, with `...` when cut.
pub(crate) fn cut(text: &str, max: usize) -> String {
    let t = text.trim();
    match t.char_indices().nth(max) {
        None => t.to_string(),
        Some((i, _)) => format!("{}...", &t[..i]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stack_failures_name_the_resource_and_map_to_permanent() {
        let e = OpenStackError::StackFailed {
            stack: "vnf-1".into(),
            status: "CREATE_FAILED".into(),
            resource: Some("VDU1 (OS::Heat::TestResource)".into()),
            reason: "boom".into(),
        };
        assert_eq!(
            e.to_string(),
            "Heat stack `vnf-1` is CREATE_FAILED because resource VDU1 (OS::Heat::TestResource) failed: boom"
        );
        let d = DriverError::from(e);
        assert_eq!(d.kind(), "permanent");
    }

    #[test]
    fn transient_statuses_are_retryable_and_others_not() {
        let s = |status| OpenStackError::Status {
            what: "GET x".into(),
            service: "heat",
            status,
            detail: String::new(),
        };
        assert!(DriverError::from(s(503)).is_retryable());
        assert!(!DriverError::from(s(400)).is_retryable());
        assert!(!DriverError::from(s(501)).is_retryable());
        let t = OpenStackError::StackTimeout {
            stack: "s".into(),
            expected: "CREATE_COMPLETE".into(),
            last_status: "CREATE_IN_PROGRESS".into(),
            waited: Duration::from_secs(90),
        };
        assert_eq!(DriverError::from(t).kind(), "timeout");
    }

    #[test]
    fn cut_keeps_char_boundaries() {
        assert_eq!(cut("héllo wörld", 4), "héll...");
        assert_eq!(cut("  short ", 10), "short");
    }
}
