//! `/vnfm/v1/notifications/dead` (not an ETSI API): the notifications the deliverer gave up
//! after retrying them for the configured time, oldest first, so that an operator can see
//! what a subscriber missed. They stay in the store's outbox until an operator discards them
//! (`DELETE .../dead/{id}`) or sends them again (`POST .../dead/{id}/redeliver`, once the
//! subscriber is back).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::error::{ApiError, ApiResult};
use crate::route_table::{Scope, delete, doc, get, post, route};
use crate::state::AppState;
use crate::util::{json_response, require_accept};
use crate::version::{ApiFamily, versioned_routes};
use utoipa_axum::router::OpenApiRouter;

/// Rows per page; a full page links the next one (`Link: <...?after=ID>; rel="next"`).
const PAGE: u32 = 100;

pub(crate) fn routes() -> OpenApiRouter<Arc<AppState>> {
    let routes = OpenApiRouter::new()
        .routes(route(
            "/notifications/dead",
            Scope::Unnamed,
            [get(
                list,
                doc("List the notifications given up after their retry time (oldest first, 100 per page; after=<id> for the next)")
                    .returns("[DeadNotification]"),
            )],
        ))
        .routes(route(
            "/notifications/dead/{id}",
            Scope::Unnamed,
            [delete(
                discard,
                doc("Discard a given-up notification for good").status(204),
            )],
        ))
        .routes(route(
            "/notifications/dead/{id}/redeliver",
            Scope::Unnamed,
            [post(
                redeliver,
                doc("Send a given-up notification again: back in its queue (the next of its subscription and VNF instance), due now, retried under the current policy")
                    .status(202),
            )],
        ));
    versioned_routes(ApiFamily::VimV1, routes)
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
    // A full page may have a next one: link it as the SOL013 lists do.
    let next = (rows.len() == PAGE as usize)
        .then(|| rows.last().map(|r| r.id))
        .flatten();
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
    let mut response = json_response(StatusCode::OK, &out);
    if let Some(last) = next {
        let link = format!("</vnfm/v1/notifications/dead?after={last}>; rel=\"next\"");
        if let Ok(v) = HeaderValue::from_str(&link) {
            response.headers_mut().insert(header::LINK, v);
        }
    }
    Ok(response)
}

/// The outbox row id of a path; anything else names no given-up notification.
fn row_id(id: &str) -> Result<i64, ApiError> {
    id.parse::<i64>().map_err(|_| not_given_up(id))
}

fn not_given_up(id: &str) -> ApiError {
    ApiError::NotFound(format!(
        "no given-up notification has the id {}; GET /vnfm/v1/notifications/dead lists them",
        crate::util::cut(id, 80)
    ))
}

/// `POST /vnfm/v1/notifications/dead/{id}/redeliver`: back in its queue, due now; `202`.
/// It is the next notification of its queue (subscription and VNF instance) to be sent, and
/// is retried under the current policy: if it was given up for its age, one more failed
/// attempt gives it up again.
async fn redeliver(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let row = row_id(&id)?;
    match state
        .store
        .outbox_redeliver(row, vnfm_store::Timestamp::now())
        .await
    {
        Ok(()) => {
            tracing::info!(
                outbox_row = row,
                "given-up notification put back for delivery"
            );
            Ok(StatusCode::ACCEPTED.into_response())
        }
        Err(vnfm_store::StoreError::NotFound { .. }) => Err(not_given_up(&id)),
        Err(e) => Err(e.into()),
    }
}

/// `DELETE /vnfm/v1/notifications/dead/{id}`: gone for good; `204`.
async fn discard(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let row = row_id(&id)?;
    match state.store.outbox_discard(row).await {
        Ok(()) => {
            tracing::info!(outbox_row = row, "given-up notification discarded");
            Ok(StatusCode::NO_CONTENT.into_response())
        }
        Err(vnfm_store::StoreError::NotFound { .. }) => Err(not_given_up(&id)),
        Err(e) => Err(e.into()),
    }
}
