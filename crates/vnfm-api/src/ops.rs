//! Operations endpoints (`/healthz`, `/readyz`, `/metrics`) and what is recorded of every
//! request (`Observation`).

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::util::json_response;

/// `GET /healthz`: the process serves HTTP.
pub(crate) async fn healthz() -> Response {
    json_response(StatusCode::OK, &json!({"status": "ok"}))
}

/// `GET /readyz`: the store answers and the server is not shutting down. While the database
/// is away (a PostgreSQL restart or switch-over) the store answers at once that it is
/// unavailable, so this does too.
pub(crate) async fn readyz(State(state): State<Arc<AppState>>) -> Response {
    if !state.is_ready() {
        return ApiError::Unavailable("the server is shutting down".into()).into_response();
    }
    match state.store.schema_version().await {
        Ok(_) => json_response(StatusCode::OK, &json!({"status": "ready"})),
        // Unauthenticated: the cause (hosts, paths) goes to the log only.
        Err(e) => {
            tracing::debug!(error = %e, "not ready: the store does not answer");
            let why = if e.is_unavailable() {
                "the database is unavailable"
            } else {
                "the store does not answer"
            };
            ApiError::Unavailable(why.into()).into_response()
        }
    }
}

/// `GET /metrics`: Prometheus metrics in the OpenMetrics text format.
pub(crate) async fn metrics(State(state): State<Arc<AppState>>) -> ApiResult<Response> {
    let by_state = state.store.count_op_occs_by_state().await?;
    let outbox = outbox_stats(&*state.store).await?;
    let mut response = (
        StatusCode::OK,
        state.metrics.render_with(&by_state, &outbox),
    )
        .into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(crate::metrics::CONTENT_TYPE),
    );
    Ok(response)
}

/// Pending and given-up notifications of each subscription, and the age of its oldest
/// pending one, from one aggregate query of the store (its cost does not grow with the rows
/// counted).
async fn outbox_stats(
    store: &dyn vnfm_store::OutboxStore,
) -> Result<std::collections::BTreeMap<String, crate::metrics::OutboxStats>, ApiError> {
    let mut out = std::collections::BTreeMap::<String, crate::metrics::OutboxStats>::new();
    let now = vnfm_store::Timestamp::now().millis();
    for summary in store.outbox_summary().await? {
        let stats = out.entry(summary.subscription_id.to_string()).or_default();
        match summary.status {
            vnfm_store::OutboxStatus::Dead => stats.dead = summary.rows,
            vnfm_store::OutboxStatus::Pending => {
                stats.pending = summary.rows;
                stats.lag_seconds = (now - summary.oldest.millis()).max(0) / 1000;
            }
        }
    }
    Ok(out)
}

/// Turns an error response that is not ProblemDetails (axum's own rejections: body too large,
/// missing path parts, ...) into one, keeping its status and using its text as `detail`.
pub(crate) async fn problemize(response: Response) -> Response {
    let status = response.status();
    // JSON bodies are already structured (ProblemDetails, or the token endpoint's RFC 6749
    // errors); axum's own rejections are plain text.
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| {
            v.as_bytes().starts_with(b"application/")
                && v.as_bytes().windows(4).any(|w| w == b"json")
        });
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, 64 * 1024)
        .await
        .unwrap_or_default();
    let detail = String::from_utf8_lossy(&text).trim().to_owned();
    let mut problem = vnfm_types::ProblemDetails::new(
        status.as_u16(),
        if detail.is_empty() {
            status.canonical_reason().unwrap_or("error").to_owned()
        } else {
            crate::util::cut(&detail, 500)
        },
    );
    problem.title = status.canonical_reason().map(str::to_owned);
    let mut out = json_response(status, &problem);
    for (name, value) in parts.headers.iter() {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            out.headers_mut().insert(name.clone(), value.clone());
        }
    }
    out.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(crate::error::PROBLEM_JSON),
    );
    out
}

/// What is noted of a request before it runs, to count and log it once answered
/// ([`Observation::record`]).
pub(crate) struct Observation {
    started: Instant,
    method: Method,
    /// The route as declared (`/vnflcm/v2/vnf_instances/{vnfInstanceId}`), so the number of
    /// label values stays bounded whatever clients send.
    route: Option<MatchedPath>,
    /// Kept only for the debug log line, which is off by default.
    path: Option<String>,
}

impl Observation {
    /// Starts observing the request of `parts`.
    pub(crate) fn start(parts: &Parts) -> Observation {
        Observation {
            started: Instant::now(),
            method: parts.method.clone(),
            route: parts.extensions.get::<MatchedPath>().cloned(),
            path: tracing::enabled!(target: "vnfm::http", tracing::Level::DEBUG)
                .then(|| parts.uri.path().to_owned()),
        }
    }

    /// Counts the request by method, route template and status, with its latency, and logs it
    /// (path only: query strings may carry filter values, never secrets, but are cut).
    pub(crate) fn record(self, state: &AppState, response: &Response) {
        let elapsed = self.started.elapsed();
        let status = response.status().as_u16();
        let route = self.route.as_ref().map_or("unmatched", MatchedPath::as_str);
        state
            .metrics
            .observe_request(self.method.as_str(), route, status, elapsed);
        if let Some(path) = self.path {
            tracing::debug!(
                target: "vnfm::http",
                method = %self.method,
                path = %crate::util::cut(&path, 200),
                status,
                micros = elapsed.as_micros() as u64,
                "request"
            );
        }
    }
}
