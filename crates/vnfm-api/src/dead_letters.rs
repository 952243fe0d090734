//! `/vnfm/v1/notifications/dead` (not an ETSI API): the notifications the deliverer gave up
//! after retrying them for the configured time, oldest first, so that an operator can see
//! what a subscriber missed. They stay in the store's outbox until their subscription is
//! deleted.

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::middleware;
use axum::response::Response;
use axum::routing::get;
use serde::Serialize;

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::util::{json_response, require_accept};
use crate::version::{ApiFamily, versioned};

/// Rows per page.
const PAGE: u32 = 100;

pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/notifications/dead", get(list))
        .layer(middleware::from_fn(|req, next| {
            versioned(ApiFamily::VimV1, req, next)
        }))
}

/// The `after` of the query (the only parameter).
fn after_of(uri: &Uri) -> Result<Option<i64>, ApiError> {
    let Some(query) = uri.query().filter(|q| !q.is_empty()) else {
        return Ok(None);
    };
    query
        .strip_prefix("after=")
        .and_then(|v| v.parse::<i64>().ok())
        .map(Some)
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "the query {} is not understood; the only parameter is after=<id>",
                crate::util::cut(query, 80)
            ))
        })
}

/// One given-up notification.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct DeadNotification {
    /// The outbox row (pass it as `after` for the next page).
    id: i64,
    subscription_id: String,
    callback_uri: String,
    attempts: i64,
    last_error: Option<String>,
    notification: serde_json::Value,
}

async fn list(
    State(state): State<Arc<AppState>>,
    uri: Uri,
    headers: HeaderMap,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/json"])?;
    let after = after_of(&uri)?;
    let rows = state.store.outbox_dead_rows(after, PAGE).await?;
    let out: Vec<DeadNotification> = rows
        .into_iter()
        .map(|r| DeadNotification {
            id: r.id,
            subscription_id: r.subscription_id.to_string(),
            callback_uri: r.callback_uri,
            attempts: r.attempts,
            last_error: r.last_error,
            notification: r.payload,
        })
        .collect();
    Ok(json_response(StatusCode::OK, &out))
}
