//! Views of an operation occurrence's step journal (not ETSI APIs; SOL003's `VnfLcmOpOcc` does
//! not say which step runs or how long each took):
//! - `/vnfm/v1/vnf_lcm_op_occs/{id}/progress`: where the occurrence stands in its plan (clients,
//!   `vnfm ... --wait`, show it from here);
//! - `/vnfm/v1/vnf_lcm_op_occs/{id}/timeline`: when each step ran, for how long and how it ended
//!   (`vnfm op show --timeline`).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Serialize;
use utoipa_axum::router::OpenApiRouter;
use vnfm_types::VnfLcmOpOccId;

use crate::error::ApiResult;
use crate::route_table::{Scope, doc, get, route};
use crate::state::AppState;
use crate::util::{json_response, require_accept};
use crate::version::{ApiFamily, versioned_routes};

pub(crate) fn routes() -> OpenApiRouter<Arc<AppState>> {
    versioned_routes(
        ApiFamily::VimV1,
        OpenApiRouter::new()
            .routes(route(
                "/vnf_lcm_op_occs/{vnfLcmOpOccId}/progress",
                Scope::OP_OCC,
                [get(
                    progress,
                    doc("Where an operation occurrence stands in its plan (steps done, running, left)")
                        .returns("OpOccProgress"),
                )],
            ))
            .routes(route(
                "/vnf_lcm_op_occs/{vnfLcmOpOccId}/timeline",
                Scope::OP_OCC,
                [get(
                    timeline,
                    doc("When each step of an operation occurrence ran, for how long and how it ended")
                        .returns("OpOccTimeline"),
                )],
            )),
    )
}

async fn progress(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/json"])?;
    view(state.lcm().progress(&VnfLcmOpOccId::new(id)).await?)
}

async fn timeline(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/json"])?;
    view(state.lcm().timeline(&VnfLcmOpOccId::new(id)).await?)
}

fn view(document: impl Serialize) -> ApiResult<Response> {
    Ok(json_response(StatusCode::OK, &document))
}

/// The OpenAPI schema of the document [`timeline`] answers.
pub(crate) fn timeline_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "description": "The steps of an operation occurrence in the order they ran, from its step journal: each run of a step (a retried step once per run) with its start, end, duration and outcome.",
        "required": ["vnfLcmOpOccId", "operation", "operationState", "startTime", "steps"],
        "properties": {
            "vnfLcmOpOccId": {"type": "string"},
            "operation": {"type": "string"},
            "operationState": {"type": "string"},
            "startTime": {"type": "string", "format": "date-time"},
            "steps": {"type": "array", "items": {
                "type": "object",
                "required": ["phase", "number", "name", "start", "durationMs", "outcome"],
                "properties": {
                    "phase": {"type": "string", "enum": ["forward", "rollback"]},
                    "number": {"type": "integer"},
                    "name": {"type": "string"},
                    "start": {"type": "string", "format": "date-time"},
                    "end": {"type": "string", "format": "date-time"},
                    "durationMs": {"type": "integer"},
                    "outcome": {"type": "string", "enum": ["COMPLETED", "FAILED", "INTERRUPTED", "RUNNING"]},
                    "error": {"type": "string"}
                }}}
        }
    })
}
