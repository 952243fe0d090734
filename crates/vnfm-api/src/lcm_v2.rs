//! `/vnflcm/v2`: VNF lifecycle management, SOL003 v3.3.1.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{OriginalUri, Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::Value;
use utoipa_axum::router::OpenApiRouter;
use vnfm_lcm::OperationRequest;
use vnfm_schemas::SchemaId;
use vnfm_store::{InstanceQuery, Page};
use vnfm_types::{
    ChangeCurrentVnfPkgRequest, ChangeExtVnfConnectivityRequest, ChangeVnfFlavourRequest,
    HealVnfRequest, InstantiateVnfRequest, OperateVnfRequest, ScaleVnfRequest,
    ScaleVnfToLevelRequest, TerminateVnfRequest, VnfInfoModificationRequest, VnfInstance,
    VnfInstanceId, VnfLcmOpOcc,
};

use crate::error::{ApiError, ApiResult};
use crate::lcm_views::{
    self, LcmView, delete_instance, instance_if_match, start_modify_info, task,
};
use crate::op_occs::{accepted_in, op_occ_routes};
use crate::route_table::{Scope, delete, doc, get, patch, post, route};
use crate::state::AppState;
use crate::util::{json_body, merge_patch_body};
use crate::version::{ApiFamily, api_versions_route, versioned_routes};

const FAMILY: ApiFamily = ApiFamily::LcmV2;

pub(crate) fn routes() -> OpenApiRouter<Arc<AppState>> {
    let routes = OpenApiRouter::new()
        .routes(api_versions_route(FAMILY, "API versions of VNF LCM v2"))
        .routes(route(
            "/vnf_instances",
            Scope::Unnamed,
            [
                get(
                    lcm_views::list_instances::<V2>,
                    doc("List VNF instances (SOL013 filter, selectors, paging)")
                        .returns("[VnfInstance]"),
                ),
                post(
                    lcm_views::create_instance::<V2>,
                    doc("Create a VNF instance identifier")
                        .body("CreateVnfRequest")
                        .status(201)
                        .returns("VnfInstance"),
                )
                .creation(),
            ],
        ))
        .routes(route(
            "/vnf_instances/{vnfInstanceId}",
            Scope::INSTANCE,
            [
                get(
                    lcm_views::get_instance::<V2>,
                    doc("Read a VNF instance (with ETag)").returns("VnfInstance"),
                ),
                patch(
                    modify_instance,
                    doc("Modify VNF information (merge patch, If-Match)")
                        .body("VnfInfoModificationRequest")
                        .status(202),
                )
                .task(),
                delete(
                    delete_instance,
                    doc("Delete a NOT_INSTANTIATED VNF instance identifier").status(204),
                ),
            ],
        ))
        .routes(task(
            "instantiate",
            post(
                instantiate,
                doc("Instantiate").body("InstantiateVnfRequest"),
            ),
        ))
        .routes(task(
            "terminate",
            post(terminate, doc("Terminate").body("TerminateVnfRequest")),
        ))
        .routes(task("heal", post(heal, doc("Heal").body("HealVnfRequest"))))
        .routes(task(
            "scale",
            post(scale, doc("Scale").body("ScaleVnfRequest")),
        ))
        .routes(task(
            "scale_to_level",
            post(
                scale_to_level,
                doc("Scale to level").body("ScaleVnfToLevelRequest"),
            ),
        ))
        .routes(task(
            "change_flavour",
            post(
                change_flavour,
                doc("Change flavour").body("ChangeVnfFlavourRequest"),
            ),
        ))
        .routes(task(
            "operate",
            post(
                operate,
                doc("Operate (start/stop)").body("OperateVnfRequest"),
            ),
        ))
        .routes(task(
            "change_ext_conn",
            post(
                change_ext_conn,
                doc("Change external connectivity").body("ChangeExtVnfConnectivityRequest"),
            ),
        ))
        .routes(task(
            "change_vnfpkg",
            post(
                change_vnfpkg,
                doc("Change current VNF package").body("ChangeCurrentVnfPkgRequest"),
            ),
        ))
        .merge(op_occ_routes::<V2>(FAMILY))
        .merge(crate::subscriptions::routes::<crate::subscriptions::Lccn>(
            FAMILY,
        ));
    versioned_routes(FAMILY, routes)
}

fn to_json<T: serde::Serialize>(v: &T) -> ApiResult<Value> {
    serde_json::to_value(v)
        .map_err(|e| ApiError::Internal(format!("response does not serialize: {e}")))
}

/// `/vnflcm/v2` shows the documents as the core keeps them.
pub(crate) struct V2;

impl LcmView for V2 {
    const FAMILY: ApiFamily = FAMILY;
    const INSTANCE_EXCLUDED: &'static [&'static str] =
        vnfm_sol013::defaults::v2::VNF_INSTANCE_EXCLUDED;
    const OP_OCC_EXCLUDED: &'static [&'static str] =
        vnfm_sol013::defaults::v2::VNF_LCM_OP_OCC_EXCLUDED;
    const STORED_DEFAULT_VIEW: bool = true;
    const STORED_DOCUMENT: bool = true;
    const DOCUMENTED_SHAPES: bool = true;

    async fn instances(state: &AppState, query: InstanceQuery) -> ApiResult<Page<Value>> {
        Ok(state.lcm.list_instance_documents(&query).await?)
    }

    async fn instance(_: &AppState, instance: VnfInstance) -> ApiResult<Value> {
        to_json(&instance)
    }

    async fn created_instance(_: &AppState, _: &str) -> lcm_views::InstanceDocument {
        Box::new(to_json)
    }

    fn op_occ(_: &AppState, occ: VnfLcmOpOcc) -> ApiResult<Value> {
        to_json(&occ)
    }
}

async fn modify_instance(
    State(state): State<Arc<AppState>>,
    tenancy: crate::scope::Tenancy,
    retry: crate::idempotency::RetryKey,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    let id = VnfInstanceId::new(id);
    let req: VnfInfoModificationRequest =
        merge_patch_body(&headers, &body, Some(SchemaId::VnfInfoModificationRequest))?;
    let expected = instance_if_match(&state, &headers, &id).await?;
    if let Some(vnfd) = &req.vnfd_id {
        state
            .packages
            .ensure_instantiable(vnfd.as_str(), &tenancy.scope)
            .await?;
    }
    let occ = start_modify_info(&state, &id, req, expected, &tenancy, &retry).await?;
    Ok(accepted(&state.origin(&headers), &occ))
}

/// 202 with the `Location` of the occurrence.
pub(crate) fn accepted(origin: &str, occ: &VnfLcmOpOcc) -> Response {
    accepted_in(FAMILY, origin, &occ.id)
}

macro_rules! task {
    ($name:ident, $req:ty, $schema:expr, $variant:ident) => {
        async fn $name(
            State(state): State<Arc<AppState>>,
            Path(id): Path<String>,
            OriginalUri(uri): OriginalUri,
            tenancy: crate::scope::Tenancy,
            retry: crate::idempotency::RetryKey,
            headers: HeaderMap,
            body: Bytes,
        ) -> ApiResult<Response> {
            let id = VnfInstanceId::new(id);
            let preview = crate::preview::requested(&uri)?;
            let req: $req = json_body(&headers, &body, $schema)?;
            if preview {
                return crate::preview::respond(
                    &state,
                    &tenancy.scope,
                    &id,
                    OperationRequest::$variant(req),
                )
                .await;
            }
            let occ = state
                .lcm
                .start_as(&tenancy.scope, &id, req.into(), None, retry.key())
                .await?;
            Ok(accepted(&state.origin(&headers), &occ))
        }
    };
}

task!(
    instantiate,
    InstantiateVnfRequest,
    Some(SchemaId::InstantiateVnfRequest),
    Instantiate
);
task!(
    terminate,
    TerminateVnfRequest,
    Some(SchemaId::TerminateVnfRequest),
    Terminate
);
task!(heal, HealVnfRequest, Some(SchemaId::HealVnfRequest), Heal);
task!(
    scale,
    ScaleVnfRequest,
    Some(SchemaId::ScaleVnfRequest),
    Scale
);
task!(
    scale_to_level,
    ScaleVnfToLevelRequest,
    Some(SchemaId::ScaleVnfToLevelRequest),
    ScaleToLevel
);
task!(
    change_flavour,
    ChangeVnfFlavourRequest,
    Some(SchemaId::ChangeVnfFlavourRequest),
    ChangeFlavour
);
task!(
    operate,
    OperateVnfRequest,
    Some(SchemaId::OperateVnfRequest),
    Operate
);
task!(
    change_ext_conn,
    ChangeExtVnfConnectivityRequest,
    Some(SchemaId::ChangeExtVnfConnectivityRequest),
    ChangeExtConn
);

async fn change_vnfpkg(
    State(state): State<Arc<AppState>>,
    tenancy: crate::scope::Tenancy,
    retry: crate::idempotency::RetryKey,
    Path(id): Path<String>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    let id = VnfInstanceId::new(id);
    let preview = crate::preview::requested(&uri)?;
    let req: ChangeCurrentVnfPkgRequest =
        json_body(&headers, &body, Some(SchemaId::ChangeCurrentVnfPkgRequest))?;
    // An unknown instance is 404 whatever the request names.
    state.lcm.get_instance(&id).await?;
    state
        .packages
        .ensure_instantiable(req.vnfd_id.as_str(), &tenancy.scope)
        .await?;
    if preview {
        return crate::preview::respond(
            &state,
            &tenancy.scope,
            &id,
            OperationRequest::ChangeVnfPkg(req),
        )
        .await;
    }
    let occ = state
        .lcm
        .start_as(
            &tenancy.scope,
            &id,
            OperationRequest::ChangeVnfPkg(req),
            None,
            retry.key(),
        )
        .await?;
    Ok(accepted(&state.origin(&headers), &occ))
}
