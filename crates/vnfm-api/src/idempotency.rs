//! Retry-safe requests: the `Idempotency-Key` request header (IETF HTTPAPI
//! `draft-ietf-httpapi-idempotency-key-header`), one layer over every state-changing route.
//!
//! A `POST` or `PATCH` carrying the header (a structured-field string, e.g.
//! `Idempotency-Key: "8e03978e-40d5-43e8-bc93-6894a57f9324"`) claims the key for its caller
//! (its Keystone project, or its client id) before it runs ([`vnfm_lcm::runner::keyed`]):
//! - the first request runs and its answer is kept (2xx, 3xx and 4xx answers except 409 and
//!   429, which say "try again later"; after a 5xx or one of those the key is released, so a
//!   retry runs again);
//! - the same key with the same request (method, path and query, body bytes) is answered
//!   with the first answer: the same status, `Location`, `Content-Type` and body;
//! - the same key with another request is refused with 422, naming the first request;
//! - while the first request runs, the same key is refused with 409, except on the routes
//!   that create a VNF instance or start an operation occurrence (`POST .../vnf_instances`,
//!   each task, `PATCH .../vnf_instances/{id}`): there the key reserved the id of what the
//!   first request creates, committed in the same transaction as the resource, so once it
//!   is committed the retry is answered from it (201 with the instance and its `Location`;
//!   202 with the occurrence's `Location`), whether the first request is still answering,
//!   was answered by another replica or died between its commit and its answer.
//!
//! Requests without the header pass through untouched.

use std::sync::Arc;

use axum::body::{Body, Bytes, to_bytes};
use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use vnfm_lcm::runner::keyed::{self, ClientKey, KeyOutcome, Reservation};
use vnfm_lcm::{Lcm, OperationRequest};
use vnfm_store::{ProjectScope, StoredResponse, Version};
use vnfm_types::{VnfInstanceId, VnfLcmOpOcc};

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// The request header.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// Longest key accepted, in characters.
const MAX_KEY_LEN: usize = 255;

/// With `vnfm serve --enable-test-vim` only: a request carrying this key (the environment
/// variable's value) stops for good after its change is committed and before it is answered,
/// so a test can kill the process in that window.
pub const STALL_AFTER_COMMIT_ENV: &str = "VNFM_TEST_STALL_AFTER_COMMIT";

/// The layer (see the [module](self) documentation).
pub(crate) async fn layer(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    if !matches!(*request.method(), Method::POST | Method::PATCH) {
        return next.run(request).await;
    }
    let Some(value) = request.headers().get(IDEMPOTENCY_KEY) else {
        return next.run(request).await;
    };
    let key = match parse_key(value) {
        Ok(k) => k,
        Err(detail) => return ApiError::bad_request(detail).into_response(),
    };
    let key = ClientKey::new(scope_of(request.extensions().get::<Caller>()), key);
    let (parts, body) = request.into_parts();
    let body = match to_bytes(body, state.options.max_json_body).await {
        Ok(b) => b,
        Err(_) => {
            return ApiError::PayloadTooLarge(format!(
                "a request with an Idempotency-Key has a body of at most {} bytes",
                state.options.max_json_body
            ))
            .into_response();
        }
    };
    let route = parts
        .uri
        .path_and_query()
        .map_or(parts.uri.path(), |p| p.as_str());
    let print = keyed::fingerprint(parts.method.as_str(), route, &body);
    let reserves = reserves_id(&parts.method, parts.uri.path());
    let outcome = match state.lcm.claim_client_key(&key, print).await {
        Ok(o) => o,
        Err(e) => return ApiError::from(e).into_response(),
    };
    let mut request = Request::from_parts(parts, Body::from(body));
    match outcome {
        KeyOutcome::Run(record) => {
            request
                .extensions_mut()
                .insert(Reservation::new(record.reserved_id));
            let response = next.run(request).await;
            keep(&state, key, response, Keeper::Owner { reserves }).await
        }
        KeyOutcome::Answered(first) => replay(first),
        KeyOutcome::Held(record) if reserves => {
            request
                .extensions_mut()
                .insert(Reservation::replay_only(record.reserved_id));
            let response = next.run(request).await;
            keep(&state, key, response, Keeper::Replay).await
        }
        KeyOutcome::Held(_) => ApiError::Conflict(
            "a request with this Idempotency-Key is still being processed; send it again later"
                .into(),
        )
        .into_response(),
        KeyOutcome::Mismatch(first) => {
            ApiError::from(keyed::mismatch(&key, &first)).into_response()
        }
    }
}

/// Who keeps an answer ([`keep`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keeper {
    /// The request holding the key (it releases the key when the answer is not worth
    /// keeping); `reserves`: what it creates carries the reserved id.
    Owner { reserves: bool },
    /// A repeated request answered from what the holder committed.
    Replay,
}

/// Keeps `response` as the key's first answer when it is one worth repeating, and answers it.
async fn keep(state: &Arc<AppState>, key: ClientKey, response: Response, by: Keeper) -> Response {
    let owned = matches!(by, Keeper::Owner { .. });
    let status = response.status();
    let retry_later = status.is_server_error()
        || status == StatusCode::CONFLICT
        || status == StatusCode::TOO_MANY_REQUESTS;
    if retry_later {
        if owned && let Err(e) = state.lcm.release_client_key(&key).await {
            tracing::warn!(error = %e, "could not release an idempotency key");
        }
        return response;
    }
    let (parts, body) = response.into_parts();
    let body = match to_bytes(body, usize::MAX).await {
        Ok(b) => b,
        Err(e) => {
            return ApiError::Internal(format!("reading the response to keep it failed: {e}"))
                .into_response();
        }
    };
    if owned {
        stall_if_asked(state, &key).await;
    }
    let text = |name| {
        parts
            .headers
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
            .map(str::to_owned)
    };
    let first = StoredResponse {
        status: status.as_u16(),
        location: text(header::LOCATION),
        content_type: text(header::CONTENT_TYPE),
        body: body.to_vec(),
    };
    let state = state.clone();
    let answer = async move {
        if let Err(e) = state.lcm.answer_client_key(&key, &first).await {
            // The change is committed and answered; a retry is answered from what was
            // committed (where there is a reserved id) or, after the lock, runs again.
            tracing::warn!(error = %e, "could not keep the answer of an idempotency key");
        }
    };
    if by == (Keeper::Owner { reserves: true }) {
        // What the request created carries the reserved id: until the answer is kept a
        // retry is answered from it, so keeping it need not delay this answer.
        tokio::spawn(answer);
    } else {
        answer.await;
    }
    Response::from_parts(parts, Body::from(body))
}

/// The first answer again.
fn replay(first: StoredResponse) -> Response {
    let mut response = Response::new(Body::from(Bytes::from(first.body)));
    *response.status_mut() = StatusCode::from_u16(first.status).unwrap_or(StatusCode::OK);
    let headers = response.headers_mut();
    for (name, value) in [
        (header::LOCATION, first.location),
        (header::CONTENT_TYPE, first.content_type),
    ] {
        if let Some(v) = value.and_then(|v| HeaderValue::from_str(&v).ok()) {
            headers.insert(name, v);
        }
    }
    response
}

/// The fault hook of the crash tests ([`STALL_AFTER_COMMIT_ENV`]), honoured only with the
/// test VIM enabled.
async fn stall_if_asked(state: &AppState, key: &ClientKey) {
    if state.options.enable_test_vim
        && std::env::var(STALL_AFTER_COMMIT_ENV).is_ok_and(|k| k == key.key)
    {
        tracing::warn!(
            "{STALL_AFTER_COMMIT_ENV}: the request is committed and will not be answered"
        );
        std::future::pending::<()>().await;
    }
}

/// Whose keys a request's key is among: its Keystone project, else its client.
fn scope_of(caller: Option<&Caller>) -> String {
    match caller {
        Some(c) => match c.keystone.as_ref().and_then(|k| k.project_id.as_deref()) {
            Some(project) => format!("project:{project}"),
            None => format!("client:{}", c.client_id),
        },
        None => "anonymous".into(),
    }
}

/// Whether the route creates a VNF instance or starts an occurrence, with the id the key
/// reserved (`POST /vnflcm/vN/vnf_instances`, `POST /vnflcm/vN/vnf_instances/{id}/{task}`,
/// `PATCH /vnflcm/vN/vnf_instances/{id}`).
fn reserves_id(method: &Method, path: &str) -> bool {
    let Some(rest) = path
        .strip_prefix("/vnflcm/v1/vnf_instances")
        .or_else(|| path.strip_prefix("/vnflcm/v2/vnf_instances"))
    else {
        return false;
    };
    if !(rest.is_empty() || rest.starts_with('/')) {
        return false;
    }
    let segments: Vec<&str> = rest.split('/').skip(1).collect();
    match (method, segments.as_slice()) {
        (&Method::POST, []) => true,
        (&Method::POST, [id, task]) => !id.is_empty() && !task.is_empty(),
        (&Method::PATCH, [id]) => !id.is_empty(),
        _ => false,
    }
}

/// The key of an `Idempotency-Key` header: a structured-field string (RFC 8941 clause
/// 3.3.3: printable ASCII between double quotes, `\"` and `\\` escaped), not empty.
fn parse_key(value: &HeaderValue) -> Result<String, String> {
    let bad = |why: &str| {
        format!(
            "Idempotency-Key: {why}; send a quoted string, e.g. Idempotency-Key: \"8e03978e-40d5-43e8-bc93-6894a57f9324\""
        )
    };
    let text = value
        .to_str()
        .map_err(|_| bad("the value is not ASCII"))?
        .trim_matches(' ');
    let inner = text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .filter(|_| text.len() >= 2)
        .ok_or_else(|| bad("the value is not a quoted string"))?;
    let mut key = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e @ ('"' | '\\')) => key.push(e),
                _ => return Err(bad("a backslash escapes only '\"' and '\\'")),
            },
            '"' => return Err(bad("an inner '\"' must be escaped")),
            ' '..='~' => key.push(c),
            _ => return Err(bad("the key has a character that is not printable ASCII")),
        }
    }
    if key.is_empty() {
        return Err(bad("the key is empty"));
    }
    if key.len() > MAX_KEY_LEN {
        return Err(bad(&format!(
            "the key is longer than {MAX_KEY_LEN} characters"
        )));
    }
    Ok(key)
}

/// The id an `Idempotency-Key` reserved for what the request creates, for the handlers that
/// create a VNF instance or start an occurrence; `None` without a key.
#[derive(Debug, Clone, Default)]
pub(crate) struct Reserved(pub(crate) Option<Reservation>);

impl<S: Send + Sync> FromRequestParts<S> for Reserved {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Reserved(parts.extensions.get::<Reservation>().cloned()))
    }
}

impl Reserved {
    /// Starts `req` of a caller that sees `caller` on the instance `id` (under `expected`, an
    /// `If-Match`, when given), with the reserved occurrence id if there is one.
    pub(crate) async fn start(
        &self,
        lcm: &Lcm,
        caller: &ProjectScope,
        id: &VnfInstanceId,
        req: impl Into<OperationRequest>,
        expected: Option<Version>,
    ) -> ApiResult<VnfLcmOpOcc> {
        let started = lcm
            .start_as(caller, id, req.into(), expected, self.0.as_ref())
            .await;
        Ok(started?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_structured_field_strings() {
        let parse = |s: &str| parse_key(&HeaderValue::from_str(s).unwrap());
        assert_eq!(parse("\"abc-1\"").unwrap(), "abc-1");
        assert_eq!(parse(" \"a\\\"b\\\\c\" ").unwrap(), "a\"b\\c");
        for bad in ["abc", "\"\"", "\"a", "\"a\"b\"", "\"a\\b\"", "\"", ""] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        assert!(parse(&format!("\"{}\"", "k".repeat(256))).is_err());
    }

    #[test]
    fn only_instance_creation_tasks_and_modification_reserve_ids() {
        for (m, p) in [
            (Method::POST, "/vnflcm/v2/vnf_instances"),
            (Method::POST, "/vnflcm/v1/vnf_instances/x/instantiate"),
            (Method::PATCH, "/vnflcm/v2/vnf_instances/x"),
        ] {
            assert!(reserves_id(&m, p), "{m} {p}");
        }
        for (m, p) in [
            (Method::POST, "/vnflcm/v2/subscriptions"),
            (Method::POST, "/vnflcm/v2/vnf_lcm_op_occs/x/retry"),
            (Method::PATCH, "/vnflcm/v2/vnf_instances"),
            (Method::POST, "/vnflcm/v2/vnf_instances/x"),
            (Method::POST, "/vnflcm/v2/vnf_instances_other"),
        ] {
            assert!(!reserves_id(&m, p), "{m} {p}");
        }
    }
}
