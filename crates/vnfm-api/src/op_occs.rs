//! The operation occurrences of VNF lifecycle management, written once for both API versions:
//! their routes (list, read, retry, rollback, fail, cancel) and the tasks on them.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use utoipa_axum::router::OpenApiRouter;
use vnfm_lcm::LcmError;
use vnfm_schemas::SchemaId;
use vnfm_types::{CancelMode, VnfLcmOpOccId};

use crate::error::ApiResult;
use crate::lcm_views::{self, LcmView};
use crate::route_table::{Doc, Scope, doc, get, post, route};
use crate::state::AppState;
use crate::util::{json_body, with_location};
use crate::version::ApiFamily;

/// The operation occurrences of one API version: list, read, retry, rollback, fail, cancel.
pub(crate) fn op_occ_routes<V: LcmView>(family: ApiFamily) -> OpenApiRouter<Arc<AppState>> {
    let returns = |d: Doc, schema| {
        if V::DOCUMENTED_SHAPES {
            d.returns(schema)
        } else {
            d
        }
    };
    OpenApiRouter::new()
        .routes(route(
            "/vnf_lcm_op_occs",
            Scope::Unnamed,
            [get(
                lcm_views::list_op_occs::<V>,
                returns(doc("List operation occurrences"), "[VnfLcmOpOcc]"),
            )],
        ))
        .routes(route(
            "/vnf_lcm_op_occs/{vnfLcmOpOccId}",
            Scope::OP_OCC,
            [get(
                lcm_views::get_op_occ::<V>,
                returns(doc("Read an operation occurrence"), "VnfLcmOpOcc"),
            )],
        ))
        .routes(route(
            "/vnf_lcm_op_occs/{vnfLcmOpOccId}/retry",
            Scope::OP_OCC,
            [post(
                move |s, p, h| retry(family, s, p, h),
                doc("Retry a FAILED_TEMP occurrence").status(202),
            )],
        ))
        .routes(route(
            "/vnf_lcm_op_occs/{vnfLcmOpOccId}/rollback",
            Scope::OP_OCC,
            [post(
                move |s, p, h| rollback(family, s, p, h),
                doc("Roll back a FAILED_TEMP occurrence").status(202),
            )],
        ))
        .routes(route(
            "/vnf_lcm_op_occs/{vnfLcmOpOccId}/fail",
            Scope::OP_OCC,
            [post(
                lcm_views::fail::<V>,
                returns(doc("Mark a FAILED_TEMP occurrence FAILED"), "VnfLcmOpOcc"),
            )],
        ))
        .routes(route(
            "/vnf_lcm_op_occs/{vnfLcmOpOccId}/cancel",
            Scope::OP_OCC,
            [post(
                move |s, p, h, b| cancel(family, s, p, h, b),
                doc("Cancel a running occurrence")
                    .body("CancelMode")
                    .status(202),
            )],
        ))
}

/// 202 with the `Location` of occurrence `id` under `family`'s prefix.
pub(crate) fn accepted_in(family: ApiFamily, origin: &str, id: &VnfLcmOpOccId) -> Response {
    let location = format!("{}{}/vnf_lcm_op_occs/{id}", origin, family.prefix());
    with_location(StatusCode::ACCEPTED.into_response(), &location)
}

/// `POST .../retry` of either API version.
pub(crate) async fn retry(
    family: ApiFamily,
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let id = VnfLcmOpOccId::new(id);
    let occ = state.lcm.retry(&id).await?;
    Ok(accepted_in(family, &state.origin(&headers), &occ.id))
}

/// `POST .../rollback` of either API version.
pub(crate) async fn rollback(
    family: ApiFamily,
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let id = VnfLcmOpOccId::new(id);
    let occ = state.lcm.rollback(&id).await?;
    Ok(accepted_in(family, &state.origin(&headers), &occ.id))
}

/// `POST .../cancel` of either API version (GRACEFUL when the body is empty).
pub(crate) async fn cancel(
    family: ApiFamily,
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    let id = VnfLcmOpOccId::new(id);
    // The resource answers first: an unknown occurrence is 404 and one that cannot be
    // cancelled 409, whatever the body says.
    let occ = state.lcm.get_op_occ(&id).await?;
    vnfm_lcm::state::transition(occ.operation_state, vnfm_lcm::state::Event::CancelRequested)
        .map_err(LcmError::from)?;
    let mode: CancelMode = if body.is_empty() {
        CancelMode {
            cancel_mode: vnfm_types::CancelModeType::Graceful,
        }
    } else {
        json_body(&headers, &body, Some(SchemaId::CancelMode))?
    };
    state.lcm.cancel(&id, mode.cancel_mode).await?;
    Ok(accepted_in(family, &state.origin(&headers), &id))
}
