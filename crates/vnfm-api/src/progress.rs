//! `/vnfm/v1/vnf_lcm_op_occs/{id}/progress` (not an ETSI API): where an operation occurrence
//! stands in its plan, from its step journal. SOL003's `VnfLcmOpOcc` does not say which step
//! runs; clients (`vnfm ... --wait`) show it from here.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware;
use axum::response::Response;
use axum::routing::get;
use vnfm_types::VnfLcmOpOccId;

use crate::error::ApiResult;
use crate::state::AppState;
use crate::util::{json_response, require_accept};
use crate::version::{ApiFamily, versioned};

pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/vnf_lcm_op_occs/{id}/progress", get(show))
        .layer(middleware::from_fn(|req, next| {
            versioned(ApiFamily::VimV1, req, next)
        }))
}

async fn show(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/json"])?;
    let progress = state.lcm().progress(&VnfLcmOpOccId::new(id)).await?;
    Ok(json_response(StatusCode::OK, &progress))
}
