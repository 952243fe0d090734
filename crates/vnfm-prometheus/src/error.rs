//! The crate's one error type.

use std::time::Duration;

/// What went wrong, named after the step that failed. Messages are meant for a user (a
/// ProblemDetails `detail`, a log line); none of them carries a credential.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The Prometheus base URL cannot be used.
    #[error("invalid Prometheus URL {url:?}: {reason}")]
    InvalidUrl {
        /// The URL as given, without any user information it carried.
        url: String,
        /// Why it cannot be used.
        reason: String,
    },
    /// The CA certificates given for TLS cannot be read.
    #[error("reading the CA certificates for Prometheus failed")]
    CaCertificates(#[source] reqwest::Error),
    /// The HTTP client could not be built.
    #[error("building the HTTP client for Prometheus failed")]
    ClientBuild(#[source] reqwest::Error),
    /// No answer could be had: connection refused, name not resolved, TLS failure, the
    /// connection dropped.
    #[error("Prometheus at {url} is unreachable")]
    Unreachable {
        /// The endpoint called.
        url: String,
        /// The transport error (without the URL).
        #[source]
        source: reqwest::Error,
    },
    /// Prometheus did not answer within the request timeout.
    #[error("Prometheus at {url} did not answer within {timeout:?}")]
    Timeout {
        /// The endpoint called.
        url: String,
        /// The request timeout.
        timeout: Duration,
        /// The transport error (without the URL).
        #[source]
        source: reqwest::Error,
    },
    /// Prometheus (or a proxy in front of it) answered with an HTTP error status and a body
    /// that is not a Prometheus error.
    #[error("Prometheus at {url} answered HTTP {status}: {body}")]
    Http {
        /// The endpoint called.
        url: String,
        /// The HTTP status code.
        status: u16,
        /// The start of the response body.
        body: String,
    },
    /// Prometheus refused or failed to evaluate the query (`"status": "error"`): a PromQL
    /// syntax error (`bad_data`), an evaluation error (`execution`), a timeout (`timeout`),
    /// ... The message is Prometheus' own and is meant to be shown to the user.
    #[error("Prometheus rejected the query ({error_type}): {message}")]
    Promql {
        /// Prometheus' `errorType`.
        error_type: String,
        /// Prometheus' `error`.
        message: String,
    },
    /// The answer is not what the Prometheus HTTP API answers.
    #[error("the answer of Prometheus at {url} cannot be read: {reason}")]
    BadResponse {
        /// The endpoint called.
        url: String,
        /// What is wrong with it.
        reason: String,
        /// The JSON error, when it is one.
        #[source]
        source: Option<serde_json::Error>,
    },
    /// The webhook payload is larger than the limit.
    #[error("the webhook payload has {size} bytes, more than the limit of {limit}")]
    WebhookTooLarge {
        /// The payload's size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// The webhook payload is not an Alertmanager webhook payload.
    #[error(
        "the webhook payload is not valid at {}: {source}",
        at_pointer(pointer)
    )]
    WebhookInvalid {
        /// Where (an RFC 6901 JSON pointer; empty for the whole document).
        pointer: String,
        /// What is wrong there.
        #[source]
        source: serde_json::Error,
    },
    /// The webhook payload is of a version this crate does not read.
    #[error("the webhook payload has version {0:?}; only version \"4\" is supported")]
    WebhookVersion(String),
    /// An alert names no VNF instance.
    #[error("alert {alert:?} has no label {label:?} naming the VNF instance")]
    NoVnfInstance {
        /// The alert's `alertname` label, or its fingerprint.
        alert: String,
        /// The label looked for.
        label: String,
    },
    /// An alert of one of Tacker's plugin functions (`auto_scale`, `auto_heal`, `vnfpm`,
    /// `vnfpm_threshold`) whose labels or annotations do not say what to do.
    #[error("{function} alert {alert:?}: label {label:?} is wrong: {reason}")]
    AlertLabel {
        /// The alert's `function_type`.
        function: String,
        /// The alert's `alertname` label, or its fingerprint.
        alert: String,
        /// The label (or annotation).
        label: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The `pod` label of a fault alert is not a regular expression.
    #[error("the pod label {pattern:?} is not a regular expression: {source}")]
    PodPattern {
        /// The label's value.
        pattern: String,
        /// Why it is not one.
        #[source]
        source: regex::Error,
    },
    /// A performance metric name that the catalogue does not know.
    #[error("unknown performance metric {name:?}; known metrics: {known}")]
    UnknownMetric {
        /// The name given.
        name: String,
        /// The known metric names, comma-separated.
        known: String,
    },
    /// An object type name that is not one of SOL003's.
    #[error("unknown object type {name:?}; known object types: Vnf, Vnfc, VnfIntCp, VnfExtCp")]
    UnknownObjectType {
        /// The name given.
        name: String,
    },
    /// The catalogue has no PromQL for a metric on this object type.
    #[error("metric {metric} is not measured on object type {object_type} (it is on: {supported})")]
    UnsupportedObjectType {
        /// The metric.
        metric: String,
        /// The object type asked for.
        object_type: String,
        /// The object types it has PromQL for, comma-separated.
        supported: String,
    },
    /// A PromQL template from configuration cannot be used.
    #[error("the PromQL template of {metric} on {object_type} {reason}")]
    BadTemplate {
        /// The metric.
        metric: String,
        /// The object type.
        object_type: String,
        /// What is wrong with it.
        reason: String,
    },
}

fn at_pointer(pointer: &str) -> String {
    if pointer.is_empty() {
        "the top level".into()
    } else {
        pointer.into()
    }
}
