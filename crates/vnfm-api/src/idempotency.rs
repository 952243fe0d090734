//! Retry-safe requests: the `Idempotency-Key` request header (IETF HTTPAPI
//! `draft-ietf-httpapi-idempotency-key-header`), one layer over every state-changing route.
//!
//! A `POST` or `PATCH` carrying the header (a structured-field string, e.g.
//! `Idempotency-Key: "8e03978e-40d5-43e8-bc93-6894a57f9324"`, or the same without quotes, as
//! Stripe-style clients send it: `Idempotency-Key: k-1` is the key `k-1`) runs with the key of its
//! caller (its Keystone project, or its client) held in this process
//! ([`vnfm_lcm::runner::keyed`]). The layer hands the key to the handler as a value
//! ([`RetryKey`]); a handler that creates something (a VNF instance, an operation
//! occurrence, a subscription, a VNF package, a PM job or threshold, a VIM) passes it to the
//! core, whose store transaction commits the key with the created resource's id. So:
//! - the first request runs; once a creation committed its key, the layer keeps its 201
//!   (status, `Location`, `Content-Type`, `ETag`, body: [`KeptAnswer`]) with the key, in one
//!   write that also tells it the request committed the key, and a retry is answered with
//!   those bytes, also when the resource has changed since. A task's (and an instance
//!   `PATCH`'s) 202 is made again, exactly, from the occurrence id committed with the key;
//! - a retry of a creation whose first request died after its commit and before its answer
//!   was kept (or whose key was written before migration 0019) is answered by the creation's
//!   handler from the resource as it is now ([`Retry::Replay`]), which is the first answer as
//!   long as the resource has not changed; that answer is kept then, so later retries get the
//!   same bytes whatever becomes of the resource. A request that created nothing (refused, or
//!   failed) keeps nothing: a retry runs again;
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
use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use vnfm_lcm::runner::keyed::{self, ClientKey, KeyGuard, KeyOutcome, KeySettled};
use vnfm_store::PendingKey;

use crate::auth::Caller;
use crate::error::ApiError;
use crate::route_facts::RouteFacts;
use crate::route_table::Effect;
use crate::state::AppState;

/// The request header.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// Longest key accepted, in characters.
const MAX_KEY_LEN: usize = 255;

/// What the layer hands the handler of a request with an `Idempotency-Key` (a request
/// extension, read with the [`RetryKey`] extractor).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Retry {
    /// The request runs: what it creates is committed with this key.
    Key(PendingKey),
    /// The request repeats one that created the resource with this id, whose answer was not
    /// kept: the handler answers as the first request would have, from that resource as it is
    /// now, and creates nothing.
    Replay(String),
}

/// The extractor of [`Retry`]: empty for a request without an `Idempotency-Key`.
#[derive(Debug, Clone, Default)]
pub struct RetryKey(pub Option<Retry>);

impl RetryKey {
    /// The key to commit with what the request creates, if it runs with one.
    pub fn key(&self) -> Option<&PendingKey> {
        match &self.0 {
            Some(Retry::Key(k)) => Some(k),
            _ => None,
        }
    }

    /// The id of the resource to answer with instead of creating one ([`Retry::Replay`]).
    pub fn replay(&self) -> Option<&str> {
        match &self.0 {
            Some(Retry::Replay(id)) => Some(id),
            _ => None,
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for RetryKey {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(RetryKey(parts.extensions.get::<Retry>().cloned()))
    }
}

/// A request's first answer, as the layer keeps it with the key (the store keeps the bytes
/// of [`KeptAnswer::encode`] without reading them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptAnswer {
    /// The HTTP status.
    pub status: u16,
    /// The `Location` header, if any.
    pub location: Option<String>,
    /// The `Content-Type` header, if any.
    pub content_type: Option<String>,
    /// The `ETag` header, if any.
    pub etag: Option<String>,
    /// The body.
    pub body: Vec<u8>,
}

/// The headers of a [`KeptAnswer`], the first line of its encoding.
#[derive(Serialize, Deserialize)]
struct KeptHeaders {
    /// The encoding's version.
    v: u8,
    status: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    location: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    content_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    etag: Option<String>,
}

impl KeptAnswer {
    /// The headers as one JSON line (JSON escapes every newline), then the body as it is.
    pub fn encode(&self) -> Vec<u8> {
        let headers = KeptHeaders {
            v: 1,
            status: self.status,
            location: self.location.clone(),
            content_type: self.content_type.clone(),
            etag: self.etag.clone(),
        };
        // Strings and a number: it always serializes.
        let mut out = serde_json::to_vec(&headers).unwrap_or_default();
        out.push(b'\n');
        out.extend_from_slice(&self.body);
        out
    }

    /// The answer `bytes` encode ([`KeptAnswer::encode`]); `None` for bytes of another
    /// encoding.
    pub fn decode(bytes: &[u8]) -> Option<KeptAnswer> {
        let end = bytes.iter().position(|&b| b == b'\n')?;
        let headers: KeptHeaders = serde_json::from_slice(&bytes[..end]).ok()?;
        (headers.v == 1).then(|| KeptAnswer {
            status: headers.status,
            location: headers.location,
            content_type: headers.content_type,
            etag: headers.etag,
            body: bytes[end + 1..].to_vec(),
        })
    }

    /// The answer again.
    fn into_response(self) -> Response {
        let mut response = Response::new(Body::from(self.body));
        *response.status_mut() = StatusCode::from_u16(self.status).unwrap_or(StatusCode::OK);
        let headers = response.headers_mut();
        for (name, value) in [
            (header::LOCATION, self.location),
            (header::CONTENT_TYPE, self.content_type),
            (header::ETAG, self.etag),
        ] {
            if let Some(v) = value.and_then(|v| HeaderValue::from_str(&v).ok()) {
                headers.insert(name, v);
            }
        }
        response
    }
}

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
    let facts = state.route_of(request.extensions()).cloned();
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
    let mut first = Request::from_parts(parts.clone(), Body::from(body.clone()));
    first
        .extensions_mut()
        .insert(Retry::Key(guard.pending().clone()));
    let response = next.clone().run(first).await;
    let effect = facts
        .as_ref()
        .map_or(Effect::Other, |r| r.effect(&parts.method));
    let response = if response.status().is_success() {
        match effect {
            // Its 202 is made again exactly from the occurrence id committed with the key.
            Effect::Task => return response,
            Effect::Creation => match keep(&guard, None, response).await {
                Kept::Kept(response) => return response,
                Kept::NotOurs(response) => response,
            },
            _ => response,
        }
    } else {
        response
    };
    match guard.settle().await {
        Ok(KeySettled::Committed(_) | KeySettled::Unused) => response,
        Ok(KeySettled::Mismatch(first)) => {
            ApiError::from(keyed::mismatch(&key, &first)).into_response()
        }
        Ok(KeySettled::Repeated {
            resource_id,
            committed_by,
            kept_answer,
        }) => {
            if let Some(kept) = kept_answer.as_deref().and_then(KeptAnswer::decode) {
                return kept.into_response();
            }
            let mut replay = Request::from_parts(parts, Body::from(body));
            replay
                .extensions_mut()
                .insert(Retry::Replay(resource_id.clone()));
            let remade = remake(&state, replay, next, facts.as_ref(), &resource_id).await;
            if effect != Effect::Creation || !remade.status().is_success() {
                return remade;
            }
            // The first answer made: later repetitions get these bytes, whatever becomes of
            // the resource.
            match keep(&guard, Some(&committed_by), remade).await {
                Kept::Kept(r) | Kept::NotOurs(r) => r,
            }
        }
        Err(e) => ApiError::from(e).into_response(),
    }
}

/// What [`keep`] did with an answer.
enum Kept {
    /// Kept with the key its request committed: the answer to send.
    Kept(Response),
    /// Not kept, the request not having committed the key (or the store failing): the answer,
    /// to be checked against the key's first request.
    NotOurs(Response),
}

/// The success `response` of a creation, kept with its request's key if that request
/// committed the key (one write, which also tells whether it did); or, for a repetition
/// whose first request (`committed_by`) kept no answer, the answer it made again.
async fn keep(guard: &KeyGuard, committed_by: Option<&str>, response: Response) -> Kept {
    let (parts, body) = response.into_parts();
    let body = match to_bytes(body, usize::MAX).await {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!(error = %e, "the answer of a request with an Idempotency-Key could not be read");
            return Kept::Kept(
                ApiError::Internal("the answer could not be read".into()).into_response(),
            );
        }
    };
    let header = |name: header::HeaderName| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let kept = KeptAnswer {
        status: parts.status.as_u16(),
        location: header(header::LOCATION),
        content_type: header(header::CONTENT_TYPE),
        etag: header(header::ETAG),
        body: body.to_vec(),
    };
    let kept_it = match committed_by {
        None => guard.keep_answer(&kept.encode()).await,
        Some(first) => guard.keep_answer_of(first, &kept.encode()).await,
    };
    let response = Response::from_parts(parts, Body::from(body));
    match kept_it {
        Ok(true) => Kept::Kept(response),
        Ok(false) => Kept::NotOurs(response),
        Err(e) => {
            // A retry is answered from the resource instead.
            tracing::warn!(error = %e, "the first answer of an Idempotency-Key was not kept");
            Kept::NotOurs(response)
        }
    }
}

/// The answer of `request`, a repetition of one that created `resource_id` and whose answer
/// was not kept: 202 with the occurrence's `Location` for a task (a `PATCH` of an instance
/// among them), else the creation's handler's answer from the resource ([`Retry::Replay`]).
async fn remake(
    state: &AppState,
    request: Request,
    next: Next,
    route: Option<&RouteFacts>,
    resource_id: &str,
) -> Response {
    let method = request.method().clone();
    let effect = route.map_or(Effect::Other, |r| r.effect(&method));
    match (effect, route.and_then(|r| r.family)) {
        (Effect::Task, Some(family)) => {
            let location = format!(
                "{}{}/vnf_lcm_op_occs/{resource_id}",
                state.origin(request.headers()),
                family.prefix()
            );
            crate::util::with_location(StatusCode::ACCEPTED.into_response(), &location)
        }
        (Effect::Creation, _) => next.run(request).await,
        _ => ApiError::from(keyed::in_flight()).into_response(),
    }
}

/// The answer of a creation: 201 with the created resource's document and its `Location`
/// (`collection`/`id`), whether first or made again from the resource ([`Retry::Replay`]).
pub(crate) fn creation_answer<T: Serialize>(collection: &str, id: &str, document: &T) -> Response {
    crate::util::with_location(
        crate::util::json_response(StatusCode::CREATED, document),
        &format!("{collection}/{id}"),
    )
}

/// The key of the `Idempotency-Key` header of `headers`, if it has a valid one.
pub(crate) fn key_of(headers: &HeaderMap) -> Option<String> {
    parse_key(headers.get(IDEMPOTENCY_KEY)?).ok()
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
    fn a_kept_answer_reads_back_as_it_was_kept() {
        let answer = KeptAnswer {
            status: 201,
            location: Some("http://vnfm/vnfpm/v2/pm_jobs/j-1".into()),
            content_type: Some("application/json".into()),
            etag: Some("\"1\"".into()),
            body: b"{\"id\":\"j-1\"}\n\nnot json either".to_vec(),
        };
        assert_eq!(KeptAnswer::decode(&answer.encode()), Some(answer.clone()));
        let bare = KeptAnswer {
            location: None,
            content_type: None,
            etag: None,
            body: Vec::new(),
            ..answer
        };
        assert_eq!(KeptAnswer::decode(&bare.encode()), Some(bare));
        // Bytes of another encoding are no answer: the request is answered from its resource.
        for other in [&b""[..], b"{\"v\":2,\"status\":201}\n", b"201 Created"] {
            assert_eq!(KeptAnswer::decode(other), None, "{other:?}");
        }
    }

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
