//! What one client can make the server hold: connections, time to send headers and body,
//! and body sizes, each refused before the body is read.
//!
//! - **Body size by route**, checked against `Content-Length` before a byte of the body is
//!   read ([`check_length`]): [`ServerLimits::max_token_body`] for `/oauth2/token`,
//!   `max_package_bytes` for `PUT .../package_content`, `max_json_body` for everything else.
//!   A body sent without `Content-Length` (chunked) is cut at the same sizes while it is read
//!   (axum's `DefaultBodyLimit`).
//! - **`Content-Type` of a package upload** is checked before its body is read.
//! - **Time:** the request head must arrive within [`ServerLimits::header_read_timeout`]
//!   (hyper's header timer), and the body may pause at most
//!   [`ServerLimits::body_read_timeout`] between two chunks (tower-http's
//!   `RequestBodyTimeoutLayer`); the connection is closed otherwise.
//! - **Connections:** at most [`ServerLimits::max_connections`] at once; further ones wait
//!   in the kernel's accept queue until one closes.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::state::AppState;

/// Limits of the HTTP server (see the [module docs](self)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerLimits {
    /// Connections served at once.
    pub max_connections: usize,
    /// Time a client has to send a request's head (request line and headers).
    pub header_read_timeout: Duration,
    /// Longest pause between two chunks of a request body.
    pub body_read_timeout: Duration,
    /// Largest `/oauth2/token` body, in bytes.
    pub max_token_body: usize,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            max_connections: 1024,
            header_read_timeout: Duration::from_secs(30),
            body_read_timeout: Duration::from_secs(30),
            max_token_body: 16 * 1024,
        }
    }
}

/// Whether `req` uploads package content (the one route with large bodies).
fn is_package_upload(req: &Request) -> bool {
    req.method() == Method::PUT && req.uri().path().ends_with("/package_content")
}

/// The largest body `req`'s route accepts.
pub(crate) fn body_limit(state: &AppState, req: &Request) -> usize {
    if req.uri().path() == "/oauth2/token" {
        state.options.limits.max_token_body
    } else if is_package_upload(req) {
        state.options.package_limits.max_package_bytes
    } else {
        state.options.max_json_body
    }
}

/// Refuses a request whose `Content-Length` exceeds its route's limit (413), and a package
/// upload of another media type (415), before the body is read.
pub(crate) async fn check_length(
    State(state): State<Arc<AppState>>,
    req: Request,
    next: Next,
) -> Response {
    let limit = body_limit(&state, &req);
    let length = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if let Some(length) = length
        && length > limit as u64
    {
        return ApiError::PayloadTooLarge(format!(
            "the body has {length} bytes (Content-Length); {} accepts at most {limit}",
            crate::util::cut(req.uri().path(), 120)
        ))
        .into_response();
    }
    if is_package_upload(&req)
        && let Err(e) = crate::util::require_content_type(
            req.headers(),
            &["application/zip", "application/octet-stream"],
        )
    {
        return e.into_response();
    }
    next.run(req).await
}
