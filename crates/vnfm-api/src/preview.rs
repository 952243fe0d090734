//! The `preview` extension of this server's `/vnflcm/v2` task resources: `POST
//! .../vnf_instances/{id}/{task}?preview=true` answers `200 OK` with what the operation would
//! do (its ordered steps with their drivers, VIMs and hook artifacts, and the grant it would
//! ask for) instead of starting it: no occurrence, no lock, no driver, hook or NFVO call. A
//! request the operation would refuse is refused the same way.

use axum::http::{StatusCode, Uri};
use axum::response::Response;
use vnfm_lcm::OperationRequest;
use vnfm_types::VnfInstanceId;

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::util::json_response;

/// The query parameter that asks for a preview.
const PARAM: &str = "preview";

/// Whether the request's query asks for a preview (`preview=true`; `preview=false` or no
/// parameter starts the operation).
pub(crate) fn requested(uri: &Uri) -> ApiResult<bool> {
    let mut preview = false;
    for pair in uri.query().unwrap_or_default().split('&') {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        if name != PARAM {
            continue;
        }
        preview = match value {
            "true" => true,
            "false" => false,
            _ => {
                return Err(ApiError::invalid(
                    PARAM,
                    format!("query parameter {PARAM} must be true or false, not {value:?}"),
                ));
            }
        };
    }
    Ok(preview)
}

/// `200 OK` with the preview of `req` of a caller that sees `caller` on instance `id`.
pub(crate) async fn respond(
    state: &AppState,
    caller: &vnfm_store::ProjectScope,
    id: &VnfInstanceId,
    req: OperationRequest,
) -> ApiResult<Response> {
    let preview = state.lcm.preview_as(caller, id, req).await?;
    Ok(json_response(StatusCode::OK, &preview))
}
