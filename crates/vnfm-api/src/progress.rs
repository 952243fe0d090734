//! `/vnfm/v1/vnf_lcm_op_occs/{id}/progress` (not an ETSI API): where an operation occurrence
//! stands in its plan, from its step journal. SOL003's `VnfLcmOpOcc` does not say which step
//! runs; clients (`vnfm ... --wait`) show it from here.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use vnfm_types::VnfLcmOpOccId;

use crate::error::ApiResult;
use crate::route_table::{doc, get, route};
use crate::state::AppState;
use crate::util::{json_response, require_accept};
use crate::version::{ApiFamily, versioned_routes};
use utoipa_axum::router::OpenApiRouter;

pub(crate) fn routes() -> OpenApiRouter<Arc<AppState>> {
    versioned_routes(
        ApiFamily::VimV1,
        OpenApiRouter::new().routes(route(
            "/vnf_lcm_op_occs/{vnfLcmOpOccId}/progress",
            [get(
                show,
                doc("Where an operation occurrence stands in its plan (steps done, running, left)")
                    .returns("OpOccProgress"),
            )],
        )),
    )
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
