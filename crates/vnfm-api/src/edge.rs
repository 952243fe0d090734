//! The layer every routed request passes first, in this order: its trace span
//! (`trace_context`), what is recorded of it (`ops::Observation`: metrics, log line), the
//! refusals its head already earns (`limits::refusal`: 414, 431, 413, 415), then, on the
//! answer, ProblemDetails for axum's own plain-text rejections (`ops::problemize`) sent in
//! the media type the client accepts (`error::negotiate`), and `Accept-Ranges: none` on every
//! answer that does not serve byte ranges (SOL013 clause 4.2 lists the header; Tacker sends it
//! on every answer and its functional tests look for it; package content and artifacts, which
//! honour `Range`, answer `Accept-Ranges: bytes` themselves).
//!
//! One layer, not one per concern: an axum `from_fn` layer boxes the request's future and
//! clones the services beneath it, for every request, and five of them cost more CPU than
//! the checks they ran.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tracing::Instrument;

use crate::state::AppState;
use crate::{error, limits, ops, trace_context};

/// The middleware (see the [module](self) documentation).
pub(crate) async fn edge(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let (parts, body) = req.into_parts();
    let Some(span) = trace_context::request_span(&parts) else {
        return answer(&state, parts, body, next).await;
    };
    let response = answer(&state, parts, body, next)
        .instrument(span.clone())
        .await;
    span.record("http.response.status_code", response.status().as_u16());
    response
}

/// The answer to the request of `parts` and `body`: observed, refused early or routed, as
/// ProblemDetails when an error.
async fn answer(state: &AppState, parts: Parts, body: Body, next: Next) -> Response {
    let observation = ops::Observation::start(&parts);
    let problem_accepted = error::accepts_problem_json(&parts.headers);
    let routed = match limits::refusal(state, &parts).await {
        Some(refused) => refused.into_response(),
        None => next.run(Request::from_parts(parts, body)).await,
    };
    let mut response = ops::problemize(routed).await;
    error::negotiate(&mut response, problem_accepted);
    if !response.headers().contains_key(header::ACCEPT_RANGES) {
        // A static value: no allocation, no copy.
        response
            .headers_mut()
            .insert(header::ACCEPT_RANGES, HeaderValue::from_static("none"));
    }
    observation.record(state, &response);
    response
}
