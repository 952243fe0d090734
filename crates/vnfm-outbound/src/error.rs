//! [`OutboundError`]: what failed on the way to a callback or the NFVO.

use crate::auth::describe;

/// A failure of an outbound HTTP exchange or of setting up its client.
///
/// Messages carry URLs and status codes only: never credentials, tokens or bodies.
#[derive(Debug, thiserror::Error)]
pub enum OutboundError {
    /// The HTTP client could not be built.
    #[error("building the HTTP client failed: {}", describe(.0))]
    Client(#[source] reqwest::Error),
    /// The extra CA certificate is not a PEM certificate.
    #[error("{pointer}: not a PEM certificate: {}", describe(source))]
    CaCertificate {
        /// JSON pointer to the setting that holds it.
        pointer: &'static str,
        /// The parse error.
        #[source]
        source: reqwest::Error,
    },
    /// The request for an OAuth 2.0 token got no answer.
    #[error("token endpoint {endpoint}: {}", describe(source))]
    TokenRequest {
        /// The token endpoint.
        endpoint: String,
        /// The transport error (without URL).
        #[source]
        source: reqwest::Error,
    },
    /// The token endpoint answered with an error status.
    #[error("token endpoint {endpoint} answered {}", status_text(*status))]
    TokenStatus {
        /// The token endpoint.
        endpoint: String,
        /// The status it answered.
        status: u16,
    },
    /// The token endpoint's answer could not be read.
    #[error("token endpoint {endpoint}: {source}")]
    TokenBody {
        /// The token endpoint.
        endpoint: String,
        /// Why reading failed.
        #[source]
        source: Box<OutboundError>,
    },
    /// The token endpoint's answer holds no usable access token.
    #[error(
        "token endpoint {endpoint} answered a body without a usable access_token (JSON error at line {line}, column {column})"
    )]
    TokenUnusable {
        /// The token endpoint.
        endpoint: String,
        /// Where parsing failed.
        line: usize,
        /// Where parsing failed.
        column: usize,
    },
    /// No access token could be got from the server's own authorization server (its
    /// metadata or token endpoint unreachable, the client's authentication refused).
    #[error("getting an access token from the authorization server {issuer}: {source}")]
    IssuerToken {
        /// The issuer.
        issuer: String,
        /// What failed (URLs and statuses only).
        #[source]
        source: vnfm_oauth::OAuthError,
    },
    /// A callback URI prefix given for the authorization server's tokens is not an http or
    /// https URL.
    #[error("the callback URI prefix `{prefix}` is not an http or https URL")]
    CallbackPrefix {
        /// The prefix.
        prefix: String,
    },
    /// The request got no answer (connection refused, timeout, TLS failure).
    #[error("{}", describe(.0))]
    Transport(#[source] reqwest::Error),
    /// The answer's body is larger than allowed.
    #[error("response larger than {limit} bytes")]
    TooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
}

/// `404 Not Found`: the code and its reason phrase.
pub(crate) fn status_text(status: u16) -> String {
    match reqwest::StatusCode::from_u16(status) {
        Ok(s) => s.to_string(),
        Err(_) => status.to_string(),
    }
}
