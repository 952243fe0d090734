//! [`DriverError`]: what a driver or a hook reports when it fails, and whether retrying can help.
//!
//! Messages are shown to API consumers (they end up in the `error` of an operation occurrence),
//! so they must never carry secrets: drivers build them from resource names and ids, and pass
//! text that may echo credentials (an HTTP error body, a command's output) through
//! [`crate::ResolvedVim::redact`] first.

use std::error::Error as StdError;
use std::sync::Arc;
use std::time::Duration;

use vnfm_types::{KeyValuePairs, ProblemDetails};

/// A failure of an infrastructure driver or a management driver (hook).
#[derive(Debug, Clone, thiserror::Error)]
pub enum DriverError {
    /// The infrastructure failed in a way that may go away (a 503, a lost connection, a
    /// conflict with a concurrent update): retrying the operation occurrence may succeed.
    #[error("{message} (transient: retrying may succeed)")]
    Transient {
        /// What failed, without secrets.
        message: String,
        /// The underlying error, when there is one.
        #[source]
        source: Option<Arc<dyn StdError + Send + Sync>>,
    },
    /// The infrastructure refused or failed in a way retrying will not fix (a quota, a
    /// missing image, a template error).
    #[error("{message}")]
    Permanent {
        /// What failed, without secrets.
        message: String,
        /// The underlying error, when there is one.
        #[source]
        source: Option<Arc<dyn StdError + Send + Sync>>,
    },
    /// The step did not finish before its deadline.
    #[error("{what} did not finish within its time budget of {}", human(*budget))]
    Timeout {
        /// What was being done.
        what: String,
        /// The time budget the step had.
        budget: Duration,
    },
    /// The operation occurrence was cancelled while the step ran.
    #[error("{what} was cancelled")]
    Cancelled {
        /// What was being done.
        what: String,
    },
    /// The driver does not implement the operation.
    #[error("the {driver} driver does not support {operation}")]
    Unsupported {
        /// Driver name.
        driver: String,
        /// Operation name (e.g. `change_flavour`).
        operation: String,
    },
    /// The request, the descriptor or the instance cannot be processed by this driver (a
    /// missing `additionalParams` entry, an artifact that is not in the package, ...).
    #[error("invalid input: {message}")]
    InvalidInput {
        /// What is wrong and what is expected.
        message: String,
    },
}

impl DriverError {
    /// A [`DriverError::Transient`] without a source.
    pub fn transient(message: impl Into<String>) -> Self {
        DriverError::Transient {
            message: message.into(),
            source: None,
        }
    }

    /// A [`DriverError::Permanent`] without a source.
    pub fn permanent(message: impl Into<String>) -> Self {
        DriverError::Permanent {
            message: message.into(),
            source: None,
        }
    }

    /// A [`DriverError::InvalidInput`].
    pub fn invalid_input(message: impl Into<String>) -> Self {
        DriverError::InvalidInput {
            message: message.into(),
        }
    }

    /// A [`DriverError::Unsupported`].
    pub fn unsupported(driver: impl Into<String>, operation: impl Into<String>) -> Self {
        DriverError::Unsupported {
            driver: driver.into(),
            operation: operation.into(),
        }
    }

    /// A [`DriverError::Timeout`] for a step that had `budget`.
    pub fn timeout(what: impl Into<String>, budget: Duration) -> Self {
        DriverError::Timeout {
            what: what.into(),
            budget,
        }
    }

    /// A [`DriverError::Cancelled`].
    pub fn cancelled(what: impl Into<String>) -> Self {
        DriverError::Cancelled { what: what.into() }
    }

    /// Attaches the underlying error to a `Transient` or `Permanent` error (other variants
    /// are returned unchanged: they carry no source).
    pub fn with_source(mut self, err: impl StdError + Send + Sync + 'static) -> Self {
        if let DriverError::Transient { source, .. } | DriverError::Permanent { source, .. } =
            &mut self
        {
            *source = Some(Arc::new(err));
        }
        self
    }

    /// The same error with `context` (e.g. which VIM connection a driver worked on) put in
    /// front of its message; the variant, and with it the kind, status and retryability,
    /// stays. For [`DriverError::Unsupported`] the context follows the operation name.
    pub fn in_context(self, context: &str) -> Self {
        match self {
            DriverError::Transient { message, source } => DriverError::Transient {
                message: format!("{context}: {message}"),
                source,
            },
            DriverError::Permanent { message, source } => DriverError::Permanent {
                message: format!("{context}: {message}"),
                source,
            },
            DriverError::Timeout { what, budget } => DriverError::Timeout {
                what: format!("{context}: {what}"),
                budget,
            },
            DriverError::Cancelled { what } => DriverError::Cancelled {
                what: format!("{context}: {what}"),
            },
            DriverError::Unsupported { driver, operation } => DriverError::Unsupported {
                driver,
                operation: format!("{operation} ({context})"),
            },
            DriverError::InvalidInput { message } => DriverError::InvalidInput {
                message: format!("{context}: {message}"),
            },
        }
    }

    /// Whether retrying the operation occurrence can help: true for transient failures and
    /// timeouts, false otherwise (a cancelled step is resumed by an explicit retry, but
    /// repeating it automatically would defeat the cancellation).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            DriverError::Transient { .. } | DriverError::Timeout { .. }
        )
    }

    /// A stable, machine-readable name of the variant (`transient`, `permanent`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            DriverError::Transient { .. } => "transient",
            DriverError::Permanent { .. } => "permanent",
            DriverError::Timeout { .. } => "timeout",
            DriverError::Cancelled { .. } => "cancelled",
            DriverError::Unsupported { .. } => "unsupported",
            DriverError::InvalidInput { .. } => "invalidInput",
        }
    }

    /// The HTTP status that best describes the failure, for the `status` of the
    /// `ProblemDetails` recorded on the operation occurrence.
    pub fn status(&self) -> u16 {
        match self {
            DriverError::Transient { .. } => 503,
            DriverError::Permanent { .. } => 500,
            DriverError::Timeout { .. } => 504,
            DriverError::Cancelled { .. } => 409,
            DriverError::Unsupported { .. } => 501,
            DriverError::InvalidInput { .. } => 422,
        }
    }

    /// The `ProblemDetails` to record as the `error` of the failed operation occurrence of
    /// a driver of `layer`: `status` from [`DriverError::status`], a title naming the layer
    /// and what happened, `detail` is the message with the source chain appended (a source
    /// whose text the message already carries is not repeated), and three extension members:
    /// `errorKind`, `retryable` and `layer`.
    pub fn problem_details(self, layer: DriverLayer) -> ProblemDetails {
        let mut detail = self.to_string();
        let mut source = StdError::source(&self);
        while let Some(s) = source {
            let text = s.to_string();
            if !detail.contains(&text) {
                detail.push_str(": ");
                detail.push_str(&text);
            }
            source = s.source();
        }
        let mut extra = KeyValuePairs::new();
        extra.insert("errorKind".into(), self.kind().into());
        extra.insert("retryable".into(), self.is_retryable().into());
        extra.insert("layer".into(), layer.name().into());
        ProblemDetails {
            problem_type: None,
            title: Some(title(&self, layer).to_string()),
            status: self.status(),
            detail,
            instance: None,
            extra,
        }
    }

    /// [`DriverError::problem_details`] of an infrastructure driver's failure.
    pub fn into_problem_details(self) -> ProblemDetails {
        self.problem_details(DriverLayer::Infrastructure)
    }
}

/// Which kind of driver failed: it names the failure in the `title` and `layer` of the
/// occurrence's `error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DriverLayer {
    /// An infrastructure driver (OpenStack, Kubernetes, ...).
    Infrastructure,
    /// A management driver running a lifecycle hook (a script, a plugin).
    Management,
}

impl DriverLayer {
    /// The value of the `layer` extension member: `infrastructure` or `managementDriver`.
    pub fn name(self) -> &'static str {
        match self {
            DriverLayer::Infrastructure => "infrastructure",
            DriverLayer::Management => "managementDriver",
        }
    }
}

/// `90 s`, `250 ms`: whole seconds from one second up, milliseconds below.
fn human(d: Duration) -> String {
    if d >= Duration::from_secs(1) {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

fn title(e: &DriverError, layer: DriverLayer) -> &'static str {
    match (layer, e) {
        (_, DriverError::Cancelled { .. }) => "Operation cancelled",
        (DriverLayer::Infrastructure, DriverError::Transient { .. }) => {
            "Infrastructure temporarily unavailable"
        }
        (DriverLayer::Infrastructure, DriverError::Permanent { .. }) => {
            "Infrastructure operation failed"
        }
        (DriverLayer::Infrastructure, DriverError::Timeout { .. }) => {
            "Infrastructure operation timed out"
        }
        (DriverLayer::Infrastructure, DriverError::Unsupported { .. }) => {
            "Operation not supported by the infrastructure driver"
        }
        (DriverLayer::Infrastructure, DriverError::InvalidInput { .. }) => {
            "Invalid input for the infrastructure driver"
        }
        (DriverLayer::Management, DriverError::Transient { .. }) => {
            "Management driver hook failed (retrying may succeed)"
        }
        (DriverLayer::Management, DriverError::Permanent { .. }) => "Management driver hook failed",
        (DriverLayer::Management, DriverError::Timeout { .. }) => {
            "Management driver hook timed out"
        }
        (DriverLayer::Management, DriverError::Unsupported { .. }) => {
            "Hook not supported by the management driver"
        }
        (DriverLayer::Management, DriverError::InvalidInput { .. }) => {
            "Management driver hook cannot run"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problem_details_carry_status_kind_and_source_chain() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "connection reset");
        let p = DriverError::transient("creating Heat stack vnf-1 failed")
            .with_source(io)
            .into_problem_details();
        assert_eq!(p.status, 503);
        assert_eq!(
            p.detail,
            "creating Heat stack vnf-1 failed (transient: retrying may succeed): connection reset"
        );
        assert_eq!(p.extra["errorKind"], "transient");
        assert_eq!(p.extra["retryable"], true);
        assert_eq!(p.extra["layer"], "infrastructure");
        assert_eq!(
            p.title.as_deref(),
            Some("Infrastructure temporarily unavailable")
        );
    }

    #[derive(Debug, thiserror::Error)]
    #[error("exit status 1; stderr: boom")]
    struct Exit;

    #[test]
    fn a_source_the_message_already_carries_is_not_repeated() {
        let p = DriverError::permanent("hook instantiate_end: exit status 1; stderr: boom")
            .with_source(Exit)
            .problem_details(DriverLayer::Management);
        assert_eq!(
            p.detail,
            "hook instantiate_end: exit status 1; stderr: boom"
        );
        assert_eq!(p.title.as_deref(), Some("Management driver hook failed"));
        assert_eq!(p.extra["layer"], "managementDriver");
        assert_eq!(p.extra["retryable"], false);
    }

    #[test]
    fn retryability_by_variant() {
        assert!(DriverError::transient("x").is_retryable());
        assert!(DriverError::timeout("x", Duration::from_secs(3)).is_retryable());
        assert!(!DriverError::permanent("x").is_retryable());
        assert!(!DriverError::cancelled("x").is_retryable());
        assert!(!DriverError::unsupported("d", "heal").is_retryable());
        assert!(!DriverError::invalid_input("x").is_retryable());
    }

    #[test]
    fn context_goes_in_front_and_keeps_the_kind() {
        let e = DriverError::transient("stack create failed")
            .with_source(std::fmt::Error)
            .in_context("VIM connection `os`");
        assert_eq!(e.kind(), "transient");
        assert!(e.is_retryable());
        assert!(StdError::source(&e).is_some());
        assert_eq!(
            e.to_string(),
            "VIM connection `os`: stack create failed (transient: retrying may succeed)"
        );
        let e = DriverError::cancelled("scale").in_context("VIM connection `k8s`");
        assert_eq!(e.to_string(), "VIM connection `k8s`: scale was cancelled");
        let e =
            DriverError::unsupported("kubernetes", "operate").in_context("VIM connection `k8s`");
        assert_eq!(e.kind(), "unsupported");
        assert_eq!(
            e.to_string(),
            "the kubernetes driver does not support operate (VIM connection `k8s`)"
        );
        let e = DriverError::invalid_input("no flavour").in_context("x");
        assert_eq!(
            (e.kind(), e.to_string().as_str()),
            ("invalidInput", "invalid input: x: no flavour")
        );
    }

    #[test]
    fn messages_say_what_failed() {
        assert_eq!(
            DriverError::unsupported("memory", "change_flavour").to_string(),
            "the memory driver does not support change_flavour"
        );
        assert_eq!(
            DriverError::timeout("hook instantiate_end", Duration::from_millis(90_500)).to_string(),
            "hook instantiate_end did not finish within its time budget of 90 s"
        );
        // with_source leaves source-less variants alone.
        let e = DriverError::cancelled("scale").with_source(std::fmt::Error);
        assert!(StdError::source(&e).is_none());
    }
}
