//! `/vnflcm/v1`: the same lifecycle management in the SOL003 v2.6.1 shapes (API 1.3.0).
//!
//! Requests are converted to the v3.3.1 model (`vnfm_types::v1`), run by the same core, and
//! responses converted back: `vimConnectionInfo` is an array, `vnfPkgId` is filled from the
//! package the VNFD came from, `_links` point into `/vnflcm/v1`.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::Value;
use vnfm_lcm::runner::{instance_links, op_occ_links};
use vnfm_schemas::SchemaId;
use vnfm_store::{InstanceQuery, Page};
use vnfm_types::links::{ApiVersion, ResourceLinks};
use vnfm_types::{
    HealVnfRequest, OperateVnfRequest, ScaleVnfRequest, ScaleVnfToLevelRequest,
    TerminateVnfRequest, VnfInstance, VnfInstanceId, VnfLcmOpOcc, v1,
};

use crate::error::{ApiError, ApiResult};
use crate::lcm_views::{self, LcmView};
use crate::lcm_views::{instance_if_match, start_modify_info, task};
use crate::route_table::{Scope, delete, doc, get, patch, post, route};
use crate::state::AppState;
use crate::util::{json_body, merge_patch_body, value_as};
use crate::version::{ApiFamily, api_versions_route, versioned_routes};
use utoipa_axum::router::OpenApiRouter;

const FAMILY: ApiFamily = ApiFamily::LcmV1;

pub(crate) fn routes() -> OpenApiRouter<Arc<AppState>> {
    // The request and response bodies are the v2.6.1 shapes, which `components/schemas` (the
    // v3.3.1 types) does not describe.
    let routes = OpenApiRouter::new()
        .routes(api_versions_route(FAMILY, "API versions of VNF LCM v1"))
        .routes(route(
            "/vnf_instances",
            Scope::Unnamed,
            [
                get(
                    lcm_views::list_instances::<V1>,
                    doc("List VNF instances (SOL003 v2.6.1 shape)"),
                ),
                post(
                    lcm_views::create_instance::<V1>,
                    doc("Create a VNF instance identifier (SOL003 v2.6.1 shape)").status(201),
                )
                .creation(),
            ],
        ))
        .routes(route(
            "/vnf_instances/{vnfInstanceId}",
            Scope::INSTANCE,
            [
                get(
                    lcm_views::get_instance::<V1>,
                    doc("Read a VNF instance (SOL003 v2.6.1 shape, with ETag)"),
                ),
                patch(
                    modify_instance,
                    doc("Modify VNF information (SOL003 v2.6.1 shape, merge patch, If-Match)")
                        .status(202),
                )
                .task(),
                delete(
                    lcm_views::delete_instance,
                    doc("Delete a NOT_INSTANTIATED VNF instance identifier").status(204),
                ),
            ],
        ))
        .routes(task(
            "instantiate",
            post(instantiate, doc("Instantiate (SOL003 v2.6.1 shape)")),
        ))
        .routes(task("terminate", post(terminate, doc("Terminate"))))
        .routes(task("heal", post(heal, doc("Heal (SOL003 v2.6.1 shape)"))))
        .routes(task("scale", post(scale, doc("Scale"))))
        .routes(task(
            "scale_to_level",
            post(scale_to_level, doc("Scale to level")),
        ))
        .routes(task(
            "change_flavour",
            post(change_flavour, doc("Change flavour (SOL003 v2.6.1 shape)")),
        ))
        .routes(task("operate", post(operate, doc("Operate (start/stop)"))))
        .routes(task(
            "change_ext_conn",
            post(
                change_ext_conn,
                doc("Change external connectivity (SOL003 v2.6.1 shape)"),
            ),
        ))
        .merge(crate::op_occs::op_occ_routes::<V1>(FAMILY))
        .merge(crate::subscriptions::routes::<crate::subscriptions::Lccn>(
            FAMILY,
        ));
    versioned_routes(FAMILY, routes)
}

fn conversion(e: vnfm_types::Error) -> ApiError {
    ApiError::bad_request(format!(
        "the request cannot be expressed in the v2 model: {e}"
    ))
}

fn internal(e: impl std::fmt::Display) -> ApiError {
    ApiError::Internal(format!("response conversion failed: {e}"))
}

/// `instance` in the v2.6.1 shape, its `_links` rendered into `/vnflcm/v1`.
async fn instance_v1(state: &AppState, instance: VnfInstance) -> ApiResult<Value> {
    let package = state
        .packages
        .package_id_for(instance.vnfd_id.as_str())
        .await;
    instance_v1_of(&*state.lcm.config().links, package, instance)
}

/// `instance` in the v2.6.1 shape, with its package's id `package`.
fn instance_v1_of(
    links: &dyn ResourceLinks,
    package: Option<String>,
    mut instance: VnfInstance,
) -> ApiResult<Value> {
    instance.links = instance_links(
        links,
        &instance.id,
        instance.instantiation_state,
        ApiVersion::V1,
    );
    let mut converted = v1::VnfInstance::from(instance);
    converted.vnf_pkg_id = package.map(vnfm_types::VnfPkgId::new);
    serde_json::to_value(converted).map_err(internal)
}

/// `occ` in the v2.6.1 shape, its `_links` rendered into `/vnflcm/v1`.
fn op_occ_v1(state: &AppState, mut occ: VnfLcmOpOcc) -> ApiResult<Value> {
    occ.links = op_occ_links(
        &*state.lcm.config().links,
        &occ.id,
        &occ.vnf_instance_id,
        occ.operation_state,
        ApiVersion::V1,
    );
    let converted = v1::VnfLcmOpOcc::try_from(occ).map_err(internal)?;
    serde_json::to_value(converted).map_err(internal)
}

/// `/vnflcm/v1` shows the documents in the v2.6.1 shapes.
pub(crate) struct V1;

impl LcmView for V1 {
    const FAMILY: ApiFamily = FAMILY;
    const INSTANCE_EXCLUDED: &'static [&'static str] =
        vnfm_sol013::defaults::v1::VNF_INSTANCE_EXCLUDED;
    const OP_OCC_EXCLUDED: &'static [&'static str] =
        vnfm_sol013::defaults::v1::VNF_LCM_OP_OCC_EXCLUDED;
    const STORED_DEFAULT_VIEW: bool = false;
    const STORED_DOCUMENT: bool = false;
    const DOCUMENTED_SHAPES: bool = false;

    async fn instances(state: &AppState, query: InstanceQuery) -> ApiResult<Page<Value>> {
        let page = state.lcm.list_instances(&query).await?;
        let mut items = Vec::with_capacity(page.items.len());
        for i in page.items {
            items.push(instance_v1(state, i).await?);
        }
        Ok(Page {
            items,
            next: page.next,
        })
    }

    async fn instance(state: &AppState, instance: VnfInstance) -> ApiResult<Value> {
        instance_v1(state, instance).await
    }

    async fn created_instance(state: &AppState, vnfd_id: &str) -> lcm_views::InstanceDocument {
        let links = Arc::clone(&state.lcm.config().links);
        let package = state.packages.package_id_for(vnfd_id).await;
        Box::new(move |instance| instance_v1_of(&*links, package.clone(), instance.clone()))
    }

    fn op_occ(state: &AppState, occ: VnfLcmOpOcc) -> ApiResult<Value> {
        op_occ_v1(state, occ)
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
    let req: v1::VnfInfoModificationRequest = merge_patch_body(&headers, &body, None)?;
    let req = vnfm_types::VnfInfoModificationRequest::try_from(req).map_err(conversion)?;
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

fn accepted(origin: &str, occ: &VnfLcmOpOcc) -> Response {
    crate::op_occs::accepted_in(FAMILY, origin, &occ.id)
}

macro_rules! same_shape_task {
    ($name:ident, $req:ty, $schema:expr) => {
        async fn $name(
            State(state): State<Arc<AppState>>,
            Path(id): Path<String>,
            tenancy: crate::scope::Tenancy,
            retry: crate::idempotency::RetryKey,
            headers: HeaderMap,
            body: Bytes,
        ) -> ApiResult<Response> {
            let id = VnfInstanceId::new(id);
            let req: $req = json_body(&headers, &body, $schema)?;
            let occ = state
                .lcm
                .start_as(&tenancy.scope, &id, req.into(), None, retry.key())
                .await?;
            Ok(accepted(&state.origin(&headers), &occ))
        }
    };
}

/// SOL003 v2.6.1 names the VNFD reference of `ExtManagedVirtualLinkData`
/// `virtualLinkDescId` (clause 4.4.1.12; v3.3.1 renamed it `vnfVirtualLinkDescId`): v1
/// requests are read with the v2.6.1 name, and the later one is accepted too.
fn v261_names(mut body: Value) -> Value {
    if let Some(links) = body
        .get_mut("extManagedVirtualLinks")
        .and_then(Value::as_array_mut)
    {
        for link in links.iter_mut().filter_map(Value::as_object_mut) {
            if !link.contains_key("vnfVirtualLinkDescId")
                && let Some(desc) = link.remove("virtualLinkDescId")
            {
                link.insert("vnfVirtualLinkDescId".to_owned(), desc);
            }
        }
    }
    body
}

macro_rules! converted_task {
    ($name:ident, $v1:ty, $v2:ty) => {
        async fn $name(
            State(state): State<Arc<AppState>>,
            Path(id): Path<String>,
            tenancy: crate::scope::Tenancy,
            retry: crate::idempotency::RetryKey,
            headers: HeaderMap,
            body: Bytes,
        ) -> ApiResult<Response> {
            let id = VnfInstanceId::new(id);
            let req: Value = json_body(&headers, &body, None)?;
            let req: $v1 = value_as(v261_names(req))?;
            let req = <$v2>::try_from(req).map_err(conversion)?;
            let occ = state
                .lcm
                .start_as(&tenancy.scope, &id, req.into(), None, retry.key())
                .await?;
            Ok(accepted(&state.origin(&headers), &occ))
        }
    };
}

converted_task!(
    instantiate,
    v1::InstantiateVnfRequest,
    vnfm_types::InstantiateVnfRequest
);
same_shape_task!(
    terminate,
    TerminateVnfRequest,
    Some(SchemaId::TerminateVnfRequest)
);
same_shape_task!(heal, HealVnfRequest, Some(SchemaId::HealVnfRequest));
same_shape_task!(scale, ScaleVnfRequest, Some(SchemaId::ScaleVnfRequest));
same_shape_task!(scale_to_level, ScaleVnfToLevelRequest, None);
converted_task!(
    change_flavour,
    v1::ChangeVnfFlavourRequest,
    vnfm_types::ChangeVnfFlavourRequest
);
same_shape_task!(
    operate,
    OperateVnfRequest,
    Some(SchemaId::OperateVnfRequest)
);
converted_task!(
    change_ext_conn,
    v1::ChangeExtVnfConnectivityRequest,
    vnfm_types::ChangeExtVnfConnectivityRequest
);
