//! What one client can make the server hold: connections, time to send headers and body,
//! and body sizes, each refused before the body is read.
//!
//! - **Body size by route**, checked against `Content-Length` before a byte of the body is
//!   read (`refusal`): [`ServerLimits::max_token_body`] for `/oauth2/token`,
//!   `max_package_bytes` for `PUT .../package_content`, `max_json_body` for everything else.
//!   A body sent without `Content-Length` (chunked) is cut at the same sizes while it is read
//!   (axum's `DefaultBodyLimit`).
//! - **`Content-Type` of a package upload** is checked before its body is read, and the body
//!   is streamed to a temporary file, never held in memory (`vnfm::lcm::spool`; the limit is
//!   enforced there too, while the body is written).
//! - **Time:** the request head must arrive within [`ServerLimits::header_read_timeout`]
//!   (hyper's header timer), and the body may pause at most
//!   [`ServerLimits::body_read_timeout`] between two chunks (tower-http's
//!   `RequestBodyTimeoutLayer`); the connection is closed otherwise.
//! - **Request head:** a target longer than [`MAX_URI_BYTES`] is 414 and more than
//!   [`MAX_HEADERS`] header fields (or [`MAX_HEADER_BYTES`]) are 431, as ProblemDetails
//!   (`refusal`); a head beyond hyper's own limits, or one it cannot parse at all, gets the
//!   same ProblemDetails statuses through `crate::parse_errors`.
//! - **Connections:** at most [`ServerLimits::max_connections`] at once, at most
//!   [`ServerLimits::max_connections_per_peer`] from one address, each sending its first request
//!   within [`ServerLimits::first_request_timeout`] (`crate::admission`).
//! - **Failed authentication** backs off per client and address, and per address
//!   ([`ServerLimits::auth_backoff`], `crate::auth::throttle`).

use axum::http::header;
use axum::http::request::Parts;

use crate::error::ApiError;
pub use crate::limit_settings::{AuthBackoff, ServerLimits};
use crate::route_table::Effect;
use crate::state::AppState;

/// Longest request target (path and query) answered; longer ones are 414.
pub const MAX_URI_BYTES: usize = 8 * 1024;
/// Most header fields in one request; more are 431. hyper parses at most this many and answers
/// 431 itself for more (made a ProblemDetails by `crate::parse_errors`): up to 100, the
/// fields it parses are indexed on the stack, while a larger limit makes it allocate and fill
/// two arrays of that many entries for every request (64 KiB at 1,000).
pub const MAX_HEADERS: usize = 100;
/// Largest total size of a request's header fields; larger is 431.
pub const MAX_HEADER_BYTES: usize = 64 * 1024;

/// The refusal of a request whose target is longer than [`MAX_URI_BYTES`] (414) or whose
/// header fields exceed [`MAX_HEADERS`] or [`MAX_HEADER_BYTES`] (431), as ProblemDetails.
/// hyper's own refusals (a head it cannot parse, more than [`MAX_HEADERS`] fields) are
/// rewritten as ProblemDetails by `crate::parse_errors`.
fn head_refusal(req: &Parts) -> Option<ApiError> {
    let target = req.uri.path_and_query().map_or(0, |pq| pq.as_str().len());
    if target > MAX_URI_BYTES {
        return Some(ApiError::UriTooLong(format!(
            "the request target has {target} bytes; this server accepts at most {MAX_URI_BYTES} (send long filters as fewer terms)"
        )));
    }
    let count = req.headers.len();
    let bytes: usize = req
        .headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum();
    if count > MAX_HEADERS || bytes > MAX_HEADER_BYTES {
        return Some(ApiError::HeadersTooLarge(format!(
            "the request has {count} header fields of {bytes} bytes; this server accepts at most {MAX_HEADERS} fields of {MAX_HEADER_BYTES} bytes"
        )));
    }
    None
}

/// Whether `req` uploads package content (the one endpoint with large bodies).
fn is_package_upload(state: &AppState, req: &Parts) -> bool {
    // The endpoint the request matched (this runs as a layer of the router, after routing): a
    // `PUT` of an onboarded package's content is a wrong method (405), not an upload.
    state
        .route_of(&req.extensions)
        .is_some_and(|route| route.effect(&req.method) == Effect::PackageUpload)
}

/// The largest body `req`'s route accepts.
fn body_limit(state: &AppState, req: &Parts) -> usize {
    if req.uri.path() == "/oauth2/token" {
        state.options.limits.max_token_body
    } else if is_package_upload(state, req) {
        state.options.package_limits.max_package_bytes
    } else {
        state.options.max_json_body
    }
}

/// Authenticates `req` when its route needs it, before its size or type is refused: a client
/// without valid credentials learns 401, not what the route would take.
/// Takes the request's parts: the request itself is not `Sync`, and is not held across awaits.
async fn authenticate_first(
    state: &AppState,
    path: &str,
    headers: &axum::http::HeaderMap,
    peer: crate::auth::Peer<'_>,
) -> Result<(), ApiError> {
    match path {
        "/oauth2/token" | "/healthz" | "/readyz" => Ok(()),
        "/vnffm/v1/alertmanager" => crate::fm::authenticate_webhook(state, headers, peer).await,
        p if crate::alert_receivers::PATHS.contains(&p) => {
            crate::fm::authenticate_webhook(state, headers, peer).await
        }
        _ => state
            .auth
            .authenticate_from(headers, peer)
            .await
            .map(|_| ()),
    }
}

/// The refusal of a request whose `Content-Length` exceeds its route's limit (413), or of a
/// package upload of another media type (415), before the body is read; on routes that need
/// authentication, a request without valid credentials is refused with 401 first.
async fn length_refusal(state: &AppState, req: &Parts) -> Option<ApiError> {
    let limit = body_limit(state, req);
    let length = req
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let refusal = if let Some(length) = length
        && length > limit as u64
    {
        ApiError::PayloadTooLarge(format!(
            "the body has {length} bytes (Content-Length); {} accepts at most {limit}",
            crate::util::cut(req.uri.path(), 120)
        ))
    } else if is_package_upload(state, req)
        && let Err(e) = crate::util::require_content_type(
            &req.headers,
            &["application/zip", "application/octet-stream"],
        )
    {
        e
    } else {
        return None;
    };
    let peer = crate::auth::Peer::of(&req.extensions);
    Some(
        match authenticate_first(state, req.uri.path(), &req.headers, peer).await {
            Err(unauthenticated) => unauthenticated,
            Ok(()) => refusal,
        },
    )
}

/// The refusal of a request its head already rules out (see the [module](self)
/// documentation): too long a target or too many header fields, too large a body by its
/// `Content-Length`, a package upload of another media type.
pub(crate) async fn refusal(state: &AppState, req: &Parts) -> Option<ApiError> {
    match head_refusal(req) {
        Some(refused) => Some(refused),
        None => length_refusal(state, req).await,
    }
}
