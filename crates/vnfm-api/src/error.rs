//! [`ApiError`]: every way a request can fail, each answered as an
//! `application/problem+json` ProblemDetails (SOL013 clause 6.4), or as `application/json`
//! to a client whose `Accept` excludes that (`negotiate`).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use vnfm_lcm::LcmError;
use vnfm_store::{Conflict, StoreError};
use vnfm_types::ProblemDetails;

/// The media type of error bodies.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// Whether the request's `Accept` allows `application/problem+json` (or is absent).
pub(crate) fn accepts_problem_json(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_none_or(|accept| crate::util::accepts(accept, &[PROBLEM_JSON]))
}

/// Sends a ProblemDetails `response` as `application/json` when the request did not accept
/// `application/problem+json`: `application/json` is the media type ETSI's own OpenAPI
/// documents declare for ProblemDetails, so a client that accepts only JSON (or only the zip
/// or text it asked for) still reads the error with its JSON parser. Without an `Accept`, or
/// when it allows `application/problem+json`, the body keeps the RFC 9457 type.
pub(crate) fn negotiate(response: &mut Response, problem_accepted: bool) {
    let is_problem = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v == PROBLEM_JSON);
    if is_problem && !problem_accepted {
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
    }
}

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The request is malformed; `pointer` is the JSON pointer into the body (or the query
    /// parameter / header name) of the offending value, when there is one.
    #[error("{detail}")]
    BadRequest {
        /// What is wrong and what to do.
        detail: String,
        /// Where.
        pointer: Option<String>,
    },
    /// No or invalid credentials.
    #[error("{0}")]
    Unauthorized(String),
    /// A bearer token that is invalid, expired or revoked: `401` with RFC 6750's
    /// `error="invalid_token"` challenge.
    #[error("{0}")]
    InvalidToken(String),
    /// Authenticated, but not allowed.
    #[error("{0}")]
    Forbidden(String),
    /// Authenticated by a bearer token whose roles or scopes do not allow the request: `403`
    /// with RFC 6750's `error="insufficient_scope"` challenge.
    #[error("{0}")]
    InsufficientScope(String),
    /// The resource does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The method is not supported on the resource.
    #[error("method {method} is not supported on {path}; the resource allows {allowed}")]
    MethodNotAllowed {
        /// The request method.
        method: String,
        /// The request path.
        path: String,
        /// The methods the resource supports.
        allowed: String,
    },
    /// The `Accept` header excludes every representation the resource has.
    #[error("{0}")]
    NotAcceptable(String),
    /// The request conflicts with the state of the resource.
    #[error("{0}")]
    Conflict(String),
    /// `If-Match` does not match the current entity tag.
    #[error("{0}")]
    PreconditionFailed(String),
    /// The body is larger than the configured limit.
    #[error("{0}")]
    PayloadTooLarge(String),
    /// The request did not arrive in full within its deadline.
    #[error("{0}")]
    RequestTimeout(String),
    /// The request target is longer than the server accepts.
    #[error("{0}")]
    UriTooLong(String),
    /// The request's header fields are more or larger than the server accepts.
    #[error("{0}")]
    HeadersTooLarge(String),
    /// The body has a media type the resource does not accept.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// The request is well-formed but cannot be processed (e.g. an unknown `vnfdId`).
    #[error("{0}")]
    Unprocessable(String),
    /// The requested range cannot be served.
    #[error("{0}")]
    RangeNotSatisfiable(String),
    /// The client backs off after failed authentications.
    #[error("{detail}")]
    TooManyRequests {
        /// What is refused, and for how long.
        detail: String,
        /// Seconds until the client may try again (`Retry-After`).
        retry_after: u64,
    },
    /// The server is shutting down or not ready.
    #[error("{0}")]
    Unavailable(String),
    /// A lifecycle-management error, with its own status.
    #[error(transparent)]
    Lcm(#[from] LcmError),
    /// An unexpected failure inside the server (details are logged, never secrets).
    #[error("{0}")]
    Internal(String),
}

impl ApiError {
    /// A 400 with a JSON pointer.
    pub fn invalid(pointer: impl Into<String>, detail: impl Into<String>) -> ApiError {
        ApiError::BadRequest {
            detail: detail.into(),
            pointer: Some(pointer.into()),
        }
    }

    /// A 400 without a pointer.
    pub fn bad_request(detail: impl Into<String>) -> ApiError {
        ApiError::BadRequest {
            detail: detail.into(),
            pointer: None,
        }
    }

    /// The HTTP status of the error.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest { .. } => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized(_) | ApiError::InvalidToken(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) | ApiError::InsufficientScope(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::NotAcceptable(_) => StatusCode::NOT_ACCEPTABLE,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::PreconditionFailed(_) => StatusCode::PRECONDITION_FAILED,
            ApiError::RequestTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            ApiError::UriTooLong(_) => StatusCode::URI_TOO_LONG,
            ApiError::HeadersTooLarge(_) => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            ApiError::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::RangeNotSatisfiable(_) => StatusCode::RANGE_NOT_SATISFIABLE,
            ApiError::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            // A conditional write (`If-Match`) that found the resource changed.
            ApiError::Lcm(LcmError::Changed { .. } | LcmError::AlarmChanged { .. }) => {
                StatusCode::PRECONDITION_FAILED
            }
            ApiError::Lcm(e) => {
                StatusCode::from_u16(e.kind().status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
            }
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The JSON pointer of the offending request value, when known.
    pub fn pointer(&self) -> Option<&str> {
        match self {
            ApiError::BadRequest { pointer, .. } => pointer.as_deref(),
            ApiError::Lcm(
                LcmError::InvalidRequest { pointer, .. }
                | LcmError::VimCreatorUnavailable { pointer, .. },
            ) => Some(pointer),
            _ => None,
        }
    }

    /// The `Retry-After` value of the error, when it has one.
    pub fn retry_after(&self) -> Option<HeaderValue> {
        match self {
            ApiError::TooManyRequests { retry_after, .. } => Some(HeaderValue::from(*retry_after)),
            _ => None,
        }
    }

    /// The ProblemDetails body of the error.
    pub fn problem(&self) -> ProblemDetails {
        let status = self.status();
        let mut p = ProblemDetails::new(status.as_u16(), self.to_string());
        p.title = status.canonical_reason().map(str::to_owned);
        if let Some(pointer) = self.pointer() {
            p.extra.insert("pointer".into(), pointer.into());
        }
        if let ApiError::Lcm(LcmError::VimDependents { dependents, .. }) = self {
            // The instances (with the VIM each uses) the refusal names, for programs.
            p.extra.insert(
                "dependents".into(),
                serde_json::to_value(dependents).unwrap_or_default(),
            );
        }
        p
    }
}

impl From<vnfm::lcm::EmbedError> for ApiError {
    fn from(e: vnfm::lcm::EmbedError) -> Self {
        use vnfm::lcm::EmbedError as E;
        match e {
            E::PackageStore(e) => e.into(),
            E::PackageTooLarge { .. } => ApiError::PayloadTooLarge(e.to_string()),
            E::PackageNotFound(m) => ApiError::NotFound(m),
            E::PackageConflict(m) => ApiError::Conflict(m),
            E::PackageUnprocessable(m) => ApiError::Unprocessable(m),
            E::PackageRequest { pointer, message } => ApiError::invalid(pointer, message),
            E::PackageUnavailable(m) => ApiError::Unavailable(m),
            E::PackageNotification(e) => e.into(),
            e => ApiError::Internal(e.to_string()),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match &e {
            StoreError::NotFound { .. } => ApiError::NotFound(e.to_string()),
            StoreError::VersionMismatch { .. } => ApiError::Conflict(format!(
                "{e}: the resource changed while the request was processed; read it again and retry"
            )),
            StoreError::Conflict(Conflict::AlreadyExists { .. })
            | StoreError::Conflict(Conflict::InUse { .. })
            | StoreError::Conflict(Conflict::InstanceBusy { .. }) => {
                ApiError::Conflict(e.to_string())
            }
            // The cause (a host, a connection error) is logged by the store when it notices
            // the database gone; the client learns only that a retry may succeed.
            StoreError::Unavailable(_) => {
                ApiError::Unavailable("the database is unavailable; retry in a moment".into())
            }
            _ => {
                tracing::error!(error = %e, "store failure");
                ApiError::Internal(format!("the store failed: {e}"))
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let mut problem = self.problem();
        if status == StatusCode::INTERNAL_SERVER_ERROR {
            // The cause may quote the database or a driver: it goes to the log only.
            let reference = error_reference();
            tracing::error!(reference = %reference, error = %self, "request failed");
            problem.detail = format!(
                "the server failed while processing the request; its log has the cause under reference {reference}"
            );
            problem.extra.remove("pointer");
            problem.extra.insert("reference".into(), reference.into());
        } else if status.is_server_error() {
            tracing::warn!(status = status.as_u16(), error = %self, "request failed");
        } else {
            // What the client is told, so that an operator can read why a client's request
            // was refused without the client's help (nothing here the client did not get).
            tracing::info!(
                target: "vnfm::http",
                status = status.as_u16(),
                title = problem.title.as_deref().unwrap_or_default(),
                detail = %crate::util::cut(&problem.detail, 500),
                "request refused"
            );
        }
        let body = serde_json::to_vec(&problem).unwrap_or_default();
        let mut response = (status, body).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
        let challenge = match &self {
            ApiError::InvalidToken(_) => Some("Bearer realm=\"vnfm\", error=\"invalid_token\""),
            ApiError::InsufficientScope(_) => {
                Some("Bearer realm=\"vnfm\", error=\"insufficient_scope\"")
            }
            _ if status == StatusCode::UNAUTHORIZED => Some("Bearer realm=\"vnfm\""),
            _ => None,
        };
        if let Some(challenge) = challenge {
            headers.insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(challenge),
            );
        }
        if let Some(v) = self.retry_after() {
            headers.insert(header::RETRY_AFTER, v);
        }
        if let ApiError::MethodNotAllowed { allowed, .. } = &self
            && !allowed.is_empty()
            && let Ok(v) = HeaderValue::from_str(allowed)
        {
            headers.insert(header::ALLOW, v);
        }
        response
    }
}

/// A random reference that ties a generic 500 answer to the log line with its cause.
fn error_reference() -> String {
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        bytes = (nanos as u64).to_be_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Result of handlers.
pub type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lcm_errors_keep_their_status_and_pointer() {
        let e = ApiError::from(LcmError::invalid("/flavourId", "unknown flavour"));
        assert_eq!(e.status(), StatusCode::BAD_REQUEST);
        let p = e.problem();
        assert_eq!(p.status, 400);
        assert_eq!(p.extra["pointer"], "/flavourId");
        assert_eq!(p.title.as_deref(), Some("Bad Request"));
    }

    #[test]
    fn vim_dependents_are_named_in_an_extension_member() {
        let e = ApiError::from(LcmError::VimDependents {
            instance_id: "a".into(),
            action: vnfm_lcm::GuardedAction::Terminate,
            dependents: vec![vnfm_lcm::DependentInstance {
                vnf_instance_id: "b".into(),
                vnf_instance_name: Some("cnf-b".into()),
                vim_id: "v".into(),
                vnf_lcm_op_occ_id: None,
            }],
        });
        assert_eq!(e.status(), StatusCode::CONFLICT);
        let p = e.problem();
        assert_eq!(
            p.extra["dependents"],
            serde_json::json!([{"vnfInstanceId": "b", "vnfInstanceName": "cnf-b", "vimId": "v"}])
        );
        assert!(
            p.detail.contains("VNF instance b (\"cnf-b\") on VIM v"),
            "{}",
            p.detail
        );
    }

    #[tokio::test]
    async fn a_500_never_carries_the_cause_and_names_a_reference_instead() {
        let e = ApiError::from(StoreError::Backend(
            "invalid byte sequence for encoding \"UTF8\": 0x00 (relation vnf_instances)".into(),
        ));
        let response = e.into_response();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap_or_default();
        let p: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        let detail = p["detail"].as_str().unwrap_or_default();
        assert!(
            !detail.contains("UTF8") && !detail.contains("relation"),
            "{detail}"
        );
        let reference = p["reference"].as_str().unwrap_or_default();
        assert_eq!(reference.len(), 16, "{p}");
        assert!(detail.contains(reference), "{detail}");
    }

    #[tokio::test]
    async fn an_unavailable_database_is_a_503_that_names_no_host() {
        let e = ApiError::from(StoreError::Unavailable(
            "db1:5432: connection refused".into(),
        ));
        assert_eq!(e.status(), StatusCode::SERVICE_UNAVAILABLE);
        let e = ApiError::Lcm(LcmError::store(StoreError::Unavailable(
            "db1:5432: connection refused".into(),
        )));
        assert_eq!(e.status(), StatusCode::SERVICE_UNAVAILABLE);
        let response = e.into_response();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap_or_default();
        let text = String::from_utf8_lossy(&body);
        assert!(
            !text.contains("db1") && text.contains("unavailable"),
            "{text}"
        );
    }

    #[test]
    fn bearer_refusals_carry_rfc_6750_challenges() {
        let cases = [
            (
                ApiError::InvalidToken("expired".into()),
                401,
                Some("Bearer realm=\"vnfm\", error=\"invalid_token\""),
            ),
            (
                ApiError::InsufficientScope("read-only".into()),
                403,
                Some("Bearer realm=\"vnfm\", error=\"insufficient_scope\""),
            ),
            (
                ApiError::Unauthorized("no credentials".into()),
                401,
                Some("Bearer realm=\"vnfm\""),
            ),
            (ApiError::Forbidden("no".into()), 403, None),
        ];
        for (e, status, challenge) in cases {
            let r = e.into_response();
            assert_eq!(r.status().as_u16(), status);
            let got = r
                .headers()
                .get(header::WWW_AUTHENTICATE)
                .map(|v| v.to_str().unwrap());
            assert_eq!(got, challenge);
        }
    }

    #[test]
    fn stale_versions_are_conflicts() {
        let e = ApiError::from(StoreError::VersionMismatch {
            kind: "VNF instance",
            id: "i1".into(),
            expected: vnfm_store::Version(1),
            found: vnfm_store::Version(2),
        });
        assert_eq!(e.status(), StatusCode::CONFLICT);
    }
}
