//! Retry-safe requests: the `Idempotency-Key` request header (IETF HTTPAPI
//! `draft-ietf-httpapi-idempotency-key-header`), one layer over every state-changing route.
//!
//! A `POST` or `PATCH` carrying the header (a structured-field string, e.g.
//! `Idempotency-Key: "8e03978e-40d5-43e8-bc93-6894a57f9324"`, or the same without quotes, as
//! Stripe-style clients send it: `Idempotency-Key: k-1` is the key `k-1`) runs with the key of its
//! caller (its Keystone project, or its client) pending ([`vnfm_lcm::runner::keyed`]): the
//! transaction that creates what the request creates (a VNF instance, an operation
//! occurrence, a subscription, a VNF package, a PM job or threshold, a VIM) commits the key
//! with the resource's id. So:
//! - the first request runs; a retry after it created its resource is answered as the first
//!   was, the same status, `Location`, `Content-Type` and body, also when the resource has
//!   changed since and when the first request's process died before it answered: a
//!   creation's answer (201 with the new VNF instance, subscription, VNF package, PM job or
//!   threshold) is made from the resource as it is written and committed with it and the key
//!   (`answer_created_with`, `kept_or`), and a task's and a `PATCH` of an instance's
//!   answer (202 with the occurrence's `Location`) is made again from the occurrence id
//!   committed with the key, exactly. A VIM's creation is answered again from the VIM: 201
//!   with the VIM as it is now and its `Location`. A request that created nothing (refused,
//!   or failed) keeps nothing: a retry runs again;
//! - the same key with another request is refused with 422, naming the first request;
//! - while the first request runs in this process, the same key is refused with 409; any
//!   other request with the key runs (nothing is read before it does) and is answered from
//!   the first one when it turns out to repeat it: its creating write finds the key
//!   committed and is rolled back, or it is refused before it writes (e.g. its instance was
//!   instantiated by the first).
//!
//! Requests without the header pass through untouched.

use std::sync::Arc;

use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use vnfm_lcm::runner::keyed::{self, ClientKey, FirstCall, KeyOutcome};
use vnfm_store::StoredResponse;
use vnfm_store::client_key::KeyAttachment;
use vnfm_types::VnfLcmOpOccId;

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::route_facts::RouteFacts;
use crate::route_table::Effect;
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
    let facts = state.route_of(request.extensions());
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
    let guard = match state.lcm.begin_client_key(&key, print) {
        KeyOutcome::Run(guard) => guard,
        KeyOutcome::InFlight => return ApiError::from(keyed::in_flight()).into_response(),
        KeyOutcome::Mismatch(first) => {
            return ApiError::from(keyed::mismatch(&key, &first)).into_response();
        }
    };
    let replay_parts = replay_request_parts(&parts);
    let request = Request::from_parts(parts, Body::from(body));
    let (response, attachment) = guard.run(next.run(request)).await;
    if let KeyAttachment::Attached(_) = attachment {
        stall_if_asked(&state, guard.key()).await;
        return response;
    }
    // Not committed by this request: a repetition of a committed one is answered from it.
    let first = guard.first_call().await;
    drop(guard);
    match first {
        Ok(Some(FirstCall::Committed {
            response: Some(first),
            ..
        })) => replay(first),
        Ok(Some(FirstCall::Committed {
            resource_id,
            response: None,
        })) => remake(&state, &replay_parts, facts, &resource_id).await,
        Ok(Some(FirstCall::Mismatch(first))) => {
            ApiError::from(keyed::mismatch(&key, &first)).into_response()
        }
        Ok(None) if attachment == KeyAttachment::Taken => {
            ApiError::from(keyed::in_flight()).into_response()
        }
        Ok(None) => response,
        Err(e) => ApiError::from(e).into_response(),
    }
}

/// The parts of a request needed to remake its answer later (its body is gone by then).
fn replay_request_parts(parts: &Parts) -> Parts {
    let mut request = Request::new(());
    *request.method_mut() = parts.method.clone();
    *request.uri_mut() = parts.uri.clone();
    *request.headers_mut() = parts.headers.clone();
    request.into_parts().0
}

/// The answer of a creation: 201 with the created resource's document and its `Location`
/// (`collection`/`id`), as committed with an idempotency key
/// ([`vnfm_store::client_key::answer_with`]).
pub(crate) fn creation_answer(
    collection: &str,
    id: &str,
    document: &serde_json::Value,
) -> Result<StoredResponse, ApiError> {
    Ok(StoredResponse {
        status: StatusCode::CREATED.as_u16(),
        location: Some(format!("{collection}/{id}")),
        content_type: Some("application/json".to_owned()),
        body: serde_json::to_vec(document)
            .map_err(|e| ApiError::Internal(format!("response does not serialize: {e}")))?,
        etag: None,
    })
}

/// For a creation that may run with a key: its answer, 201 with the document `made` of the
/// created resource (a `T`, as the store's creating write has it) and its `Location` under
/// `collection` (and `etag`, when the first answer has one), is made by the store from what
/// it writes and committed with the key ([`vnfm_store::client_key::answer_with`]);
/// [`kept_or`] answers with it. `made` gives the resource's id and document.
pub(crate) fn answer_created_with<T: std::any::Any>(
    collection: String,
    etag: Option<String>,
    made: impl Fn(&T) -> Option<(String, serde_json::Value)> + Send + 'static,
) {
    vnfm_store::client_key::answer_with(move |written| {
        let (id, document) = made(written.downcast_ref::<T>()?)?;
        let mut answer = creation_answer(&collection, &id, &document).ok()?;
        answer.etag = etag.clone();
        Some(answer)
    });
}

/// The answer the running request's creating write committed with its key
/// ([`answer_created_with`]), else the one `made` makes: a retry gets the bytes of the first
/// answer, not the resource as it is by then.
pub(crate) fn kept_or(made: impl FnOnce() -> ApiResult<Response>) -> ApiResult<Response> {
    match vnfm_store::client_key::kept_answer() {
        Some(kept) => Ok(replay(Arc::unwrap_or_clone(kept))),
        None => made(),
    }
}

/// The answer `first` (again).
pub(crate) fn replay(first: StoredResponse) -> Response {
    let mut response = Response::new(Body::from(first.body));
    *response.status_mut() = StatusCode::from_u16(first.status).unwrap_or(StatusCode::OK);
    let headers = response.headers_mut();
    for (name, value) in [
        (header::LOCATION, first.location),
        (header::CONTENT_TYPE, first.content_type),
        (header::ETAG, first.etag),
    ] {
        if let Some(v) = value.and_then(|v| HeaderValue::from_str(&v).ok()) {
            headers.insert(name, v);
        }
    }
    response
}

/// The answer of the request `parts` to `route` made again from the resource `resource_id` it
/// created, its first answer not being committed with its key: 202 with the occurrence's
/// `Location` for a task (a `PATCH` of an instance among them), else 201 with the resource
/// (read again) and its `Location`.
async fn remake(
    state: &Arc<AppState>,
    parts: &Parts,
    route: Option<&RouteFacts>,
    resource_id: &str,
) -> Response {
    let origin = state.origin(&parts.headers);
    if let Some(route) = route
        && route.effect(&parts.method) == Effect::Task
        && let Some(family) = route.family
    {
        let id = VnfLcmOpOccId::new(resource_id.to_owned());
        return crate::op_occs::accepted_in(family, &origin, &id);
    }
    let router = state
        .replay_router
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .upgrade();
    let (Some(router), Some(created)) = (router, created_at(parts, route, resource_id)) else {
        return ApiError::from(keyed::in_flight()).into_response();
    };
    let mut read = Request::new(Body::empty());
    *read.method_mut() = Method::GET;
    *read.headers_mut() = parts.headers.clone();
    read.headers_mut().remove(header::CONTENT_TYPE);
    read.headers_mut().remove(header::CONTENT_LENGTH);
    read.headers_mut().remove(IDEMPOTENCY_KEY);
    *read.uri_mut() = match created.parse() {
        Ok(u) => u,
        Err(_) => return ApiError::from(keyed::in_flight()).into_response(),
    };
    let mut answer = match tower::ServiceExt::oneshot(axum::Router::clone(&router), read).await {
        Ok(a) => a,
        Err(never) => match never {},
    };
    if answer.status() == StatusCode::OK {
        *answer.status_mut() = StatusCode::CREATED;
        answer = crate::util::with_location(answer, &format!("{origin}{created}"));
    }
    answer
}

/// The path of the resource `id` a creation in the collection `parts` addresses created.
fn created_at(parts: &Parts, route: Option<&RouteFacts>, id: &str) -> Option<String> {
    let creation = route.is_some_and(|r| r.effect(&parts.method) == Effect::Creation);
    (creation && !id.is_empty()).then(|| format!("{}/{id}", parts.uri.path().trim_end_matches('/')))
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

/// The key of an `Idempotency-Key` header, not empty: a structured-field string (RFC 8941
/// clause 3.3.3: printable ASCII between double quotes, `\"` and `\\` escaped), or, as
/// Stripe-style clients send it, the key itself without quotes (visible ASCII, no `"`).
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
    if !text.is_empty() && !text.starts_with('"') {
        return unquoted_key(text).map_err(|why| bad(&why));
    }
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

/// The key of an unquoted `Idempotency-Key` value `text` (trimmed, not empty): visible ASCII
/// without `"`, at most [`MAX_KEY_LEN`] characters; else why not.
fn unquoted_key(text: &str) -> Result<String, String> {
    if let Some(c) = text.chars().find(|&c| !matches!(c, '!'..='~') || c == '"') {
        return Err(if c == '"' {
            "an unquoted key has a '\"'".to_owned()
        } else {
            "an unquoted key has a space or a character that is not visible ASCII".to_owned()
        });
    }
    if text.len() > MAX_KEY_LEN {
        return Err(format!("the key is longer than {MAX_KEY_LEN} characters"));
    }
    Ok(text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_structured_field_strings() {
        let parse = |s: &str| parse_key(&HeaderValue::from_str(s).unwrap());
        assert_eq!(parse("\"abc-1\"").unwrap(), "abc-1");
        assert_eq!(parse(" \"a\\\"b\\\\c\" ").unwrap(), "a\"b\\c");
        for bad in ["\"\"", "\"a", "\"a\"b\"", "\"a\\b\"", "\"", ""] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        assert!(parse(&format!("\"{}\"", "k".repeat(256))).is_err());
    }

    #[test]
    fn unquoted_keys_as_stripe_style_clients_send_them_are_accepted() {
        let parse = |s: &str| parse_key(&HeaderValue::from_str(s).unwrap());
        assert_eq!(parse("k-1").unwrap(), "k-1");
        assert_eq!(parse(" k-1 ").unwrap(), "k-1");
        // The same key, quoted or not.
        assert_eq!(parse("k-1").unwrap(), parse("\"k-1\"").unwrap());
        assert_eq!(
            parse("8e03978e-40d5-43e8-bc93-6894a57f9324").unwrap(),
            "8e03978e-40d5-43e8-bc93-6894a57f9324"
        );
        for bad in ["a\"b", "a b", "k\t1"] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains("unquoted key"), "{bad:?}: {e}");
        }
        assert!(parse(&"k".repeat(256)).is_err());
        assert_eq!(parse(&"k".repeat(255)).unwrap().len(), 255);
    }

    #[test]
    fn tasks_and_instance_modification_start_occurrences() {
        let effect = |method: Method, template| {
            crate::route_facts_tests::declared(template).map(|route| route.effect(&method))
        };
        for (m, p) in [
            (
                Method::POST,
                "/vnflcm/v1/vnf_instances/{vnfInstanceId}/instantiate",
            ),
            (Method::PATCH, "/vnflcm/v2/vnf_instances/{vnfInstanceId}"),
        ] {
            assert_eq!(effect(m.clone(), p), Some(Effect::Task), "{m} {p}");
        }
        for (m, p) in [
            (Method::POST, "/vnflcm/v2/vnf_instances"),
            (Method::POST, "/vnflcm/v2/subscriptions"),
            (
                Method::POST,
                "/vnflcm/v2/vnf_lcm_op_occs/{vnfLcmOpOccId}/retry",
            ),
            (Method::PATCH, "/vnflcm/v2/vnf_instances"),
            (Method::POST, "/vnflcm/v2/vnf_instances/{vnfInstanceId}"),
        ] {
            assert_ne!(effect(m.clone(), p), Some(Effect::Task), "{m} {p}");
        }
    }
}
