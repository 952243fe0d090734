//! `/vnflcm/v2`: VNF lifecycle management, SOL003 v3.3.1.

use std::sync::{Arc, OnceLock};

use axum::body::Bytes;
use axum::extract::{OriginalUri, Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use vnfm_lcm::{LcmError, OperationRequest};
use vnfm_schemas::SchemaId;
use vnfm_sol013::{Op, RequiredStrings, Term};
use vnfm_store::{InstanceQuery, OpOccQuery, Page, Version};
use vnfm_types::{
    CancelMode, ChangeCurrentVnfPkgRequest, ChangeExtVnfConnectivityRequest,
    ChangeVnfFlavourRequest, HealVnfRequest, InstantiateVnfRequest, InstantiationState,
    LcmOperationStateType, LcmOperationType, OperateVnfRequest, ScaleVnfRequest,
    ScaleVnfToLevelRequest, TerminateVnfRequest, VnfInfoModificationRequest, VnfInstance,
    VnfInstanceId, VnfLcmOpOcc, VnfLcmOpOccId, VnfdId,
};

use crate::error::{ApiError, ApiResult};
use crate::lcm_views::{self, LcmView};
use crate::listing::ListRequest;
use crate::route_table::{Doc, Endpoint, delete, doc, get, patch, post, route};
use crate::state::AppState;
use crate::util::{json_body, merge_patch_body, with_location};
use crate::version::{ApiFamily, major_versions, versioned_routes};
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouter};

const FAMILY: ApiFamily = ApiFamily::LcmV2;

pub(crate) fn routes() -> OpenApiRouter<Arc<AppState>> {
    let routes = OpenApiRouter::new()
        .routes(route(
            "/api_versions",
            [get(
                || async { major_versions(FAMILY) },
                doc("API versions of VNF LCM v2").returns("ApiVersionInformation"),
            )],
        ))
        .routes(route(
            "/vnf_instances",
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
                ),
            ],
        ))
        .routes(route(
            "/vnf_instances/{vnfInstanceId}",
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
                ),
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

/// `POST /vnf_instances/{vnfInstanceId}/<name>`: a lifecycle task, answered 202 Accepted.
pub(crate) fn task(
    name: &str,
    endpoint: Endpoint<Arc<AppState>>,
) -> UtoipaMethodRouter<Arc<AppState>> {
    route(
        &format!("/vnf_instances/{{vnfInstanceId}}/{name}"),
        [endpoint.status(202)],
    )
}

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
            [get(
                lcm_views::list_op_occs::<V>,
                returns(doc("List operation occurrences"), "[VnfLcmOpOcc]"),
            )],
        ))
        .routes(route(
            "/vnf_lcm_op_occs/{vnfLcmOpOccId}",
            [get(
                lcm_views::get_op_occ::<V>,
                returns(doc("Read an operation occurrence"), "VnfLcmOpOcc"),
            )],
        ))
        .routes(route(
            "/vnf_lcm_op_occs/{vnfLcmOpOccId}/retry",
            [post(
                move |s, p, h| retry(family, s, p, h),
                doc("Retry a FAILED_TEMP occurrence").status(202),
            )],
        ))
        .routes(route(
            "/vnf_lcm_op_occs/{vnfLcmOpOccId}/rollback",
            [post(
                move |s, p, h| rollback(family, s, p, h),
                doc("Roll back a FAILED_TEMP occurrence").status(202),
            )],
        ))
        .routes(route(
            "/vnf_lcm_op_occs/{vnfLcmOpOccId}/fail",
            [post(
                lcm_views::fail::<V>,
                returns(doc("Mark a FAILED_TEMP occurrence FAILED"), "VnfLcmOpOcc"),
            )],
        ))
        .routes(route(
            "/vnf_lcm_op_occs/{vnfLcmOpOccId}/cancel",
            [post(
                move |s, p, h, b| cancel(family, s, p, h, b),
                doc("Cancel a running occurrence")
                    .body("CancelMode")
                    .status(202),
            )],
        ))
}

/// JSON schema of `VnfInstance` (for filter attribute checks).
pub(crate) fn instance_schema() -> &'static Value {
    static S: OnceLock<Value> = OnceLock::new();
    S.get_or_init(|| serde_json::to_value(schemars::schema_for!(VnfInstance)).unwrap_or_default())
}

/// JSON schema of `VnfLcmOpOcc`.
pub(crate) fn op_occ_schema() -> &'static Value {
    static S: OnceLock<Value> = OnceLock::new();
    S.get_or_init(|| serde_json::to_value(schemars::schema_for!(VnfLcmOpOcc)).unwrap_or_default())
}

fn to_json<T: serde::Serialize>(v: &T) -> ApiResult<Value> {
    serde_json::to_value(v)
        .map_err(|e| ApiError::Internal(format!("response does not serialize: {e}")))
}

/// The store query narrowed by the filter's simple terms (the filter is still evaluated on
/// every document).
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

    fn op_occ(occ: VnfLcmOpOcc) -> ApiResult<Value> {
        to_json(&occ)
    }
}

pub(crate) fn instance_query(list: &ListRequest) -> InstanceQuery {
    let mut q = InstanceQuery::default();
    if let Some(v) = list.eq_value("vnfdId") {
        q.vnfd_id = Some(VnfdId::new(v));
    }
    if let Some(v) = list.eq_value("vnfProvider") {
        q.vnf_provider = Some(v.to_owned());
    }
    if let Some(v) = list.eq_value("vnfProductName") {
        q.vnf_product_name = Some(v.to_owned());
    }
    if let Some(v) = list.eq_value("vnfInstanceName") {
        q.name = Some(vnfm_store::NameFilter::Exact(v.to_owned()));
    } else if let Some(v) = list.cont_value("vnfInstanceName") {
        q.name = Some(vnfm_store::NameFilter::Contains(v.to_owned()));
    }
    if let Some(v) = list.neq_value("vnfInstanceName") {
        q.name_not = Some(v.to_owned());
    }
    match list.eq_value("instantiationState") {
        Some("INSTANTIATED") => q.instantiation_state = Some(InstantiationState::Instantiated),
        Some("NOT_INSTANTIATED") => {
            q.instantiation_state = Some(InstantiationState::NotInstantiated)
        }
        _ => {}
    }
    if let Some(ids) = list.in_values("id") {
        q.ids = Some(ids.into_iter().map(VnfInstanceId::new).collect());
    }
    q
}

/// `true` when [`instance_query`] expresses the whole filter, so that the store's answer
/// needs no evaluation: every term names a different attribute, and each is one the query
/// carries exactly ([`answered_by_columns`]).
pub(crate) fn instance_query_is_exact(list: &ListRequest) -> bool {
    let Some(filter) = list.filter.as_ref() else {
        return true;
    };
    let terms = filter.terms();
    terms.iter().enumerate().all(|(i, t)| {
        let alone = terms[..i].iter().all(|u| u.path != t.path);
        alone && answered_by_columns(t)
    })
}

/// `true` for a term [`instance_query`] carries exactly: string equality on an indexed
/// column, `neq` and `cont` on the name, `in` on the id. A value that reads as a date-time is
/// left to the evaluator, which compares date-times as instants.
fn answered_by_columns(t: &Term) -> bool {
    let plain = t
        .values
        .iter()
        .all(|v| vnfm_types::time::parse_rfc3339(v).is_none());
    let single = t.values.len() == 1;
    let exact = match t.op {
        Op::Eq if single => {
            [
                "vnfdId",
                "vnfProvider",
                "vnfProductName",
                "vnfInstanceName",
                "id",
            ]
            .iter()
            .any(|a| t.path_is(&[a]))
                || (t.path_is(&["instantiationState"])
                    && matches!(t.values[0].as_str(), "INSTANTIATED" | "NOT_INSTANTIATED"))
        }
        Op::Neq | Op::Cont if single => t.path_is(&["vnfInstanceName"]),
        Op::In => t.path_is(&["id"]),
        _ => false,
    };
    plain && exact
}

/// The strings a stored document must hold for the filter's terms that `answered` leaves
/// (those no column answers) to match it ([`vnfm_sol013::Term::required_strings`], `schema`
/// the resource's): for a version whose resources are the stored documents, so that the
/// store reads only documents that can match.
pub(crate) fn document_strings(
    list: &ListRequest,
    schema: &Value,
    answered: impl Fn(&Term) -> bool,
) -> Vec<RequiredStrings> {
    list.filter
        .iter()
        .flat_map(|f| f.terms())
        .filter(|t| !answered(t))
        .filter_map(|t| t.required_strings(schema))
        .collect()
}

/// [`document_strings`] of an instance list: for the terms [`instance_query`] does not carry.
pub(crate) fn instance_document_strings(list: &ListRequest) -> Vec<RequiredStrings> {
    document_strings(list, instance_schema(), answered_by_columns)
}

pub(crate) fn op_occ_query(list: &ListRequest) -> OpOccQuery {
    let mut q = OpOccQuery::default();
    if let Some(v) = list.eq_value("vnfInstanceId") {
        q.vnf_instance_id = Some(VnfInstanceId::new(v));
    }
    if let Some(states) = list.in_values("operationState") {
        let parsed: Option<Vec<LcmOperationStateType>> = states
            .iter()
            .map(|s| serde_json::from_value(Value::String(s.clone())).ok())
            .collect();
        q.states = parsed;
    }
    if let Some(op) = list.eq_value("operation") {
        q.operation = serde_json::from_value::<LcmOperationType>(Value::String(op.to_owned())).ok();
    }
    q
}

pub(crate) fn with_etag(mut response: Response, version: Version) -> Response {
    if let Ok(v) = header::HeaderValue::from_str(&version.etag()) {
        response.headers_mut().insert(header::ETAG, v);
    }
    response
}

/// The instance version `If-Match` names (see [`crate::precondition::expected_version`]).
pub(crate) async fn instance_if_match(
    state: &AppState,
    headers: &HeaderMap,
    id: &VnfInstanceId,
) -> ApiResult<Option<Version>> {
    crate::precondition::expected_version(headers, "VNF instance", || async {
        Ok(state.lcm.get_instance_versioned(id).await?.1)
    })
    .await
}

/// MODIFY_INFO, conditional on `expected` (the instance's version `If-Match` named) when
/// given: the core compares it in the transaction that starts the change.
pub(crate) async fn start_modify_info(
    state: &AppState,
    id: &VnfInstanceId,
    req: VnfInfoModificationRequest,
    expected: Option<Version>,
) -> ApiResult<VnfLcmOpOcc> {
    Ok(match expected {
        Some(v) => state.lcm.modify_info_if_unchanged(id, req, v).await?,
        None => state.lcm.modify_info(id, req).await?,
    })
}

async fn modify_instance(
    State(state): State<Arc<AppState>>,
    tenancy: crate::scope::Tenancy,
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
    let occ = start_modify_info(&state, &id, req, expected).await?;
    Ok(accepted(&state.origin(&headers), &occ))
}

pub(crate) async fn delete_instance(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    state
        .lcm
        .delete_vnf_identifier(&VnfInstanceId::new(id))
        .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// 202 with the `Location` of the occurrence.
pub(crate) fn accepted(origin: &str, occ: &VnfLcmOpOcc) -> Response {
    accepted_in(FAMILY, origin, &occ.id)
}

/// 202 with the `Location` of occurrence `id` under `family`'s prefix.
pub(crate) fn accepted_in(family: ApiFamily, origin: &str, id: &VnfLcmOpOccId) -> Response {
    let location = format!("{}{}/vnf_lcm_op_occs/{id}", origin, family.prefix());
    with_location(StatusCode::ACCEPTED.into_response(), &location)
}

macro_rules! task {
    ($name:ident, $req:ty, $schema:expr, $call:ident, $variant:ident) => {
        async fn $name(
            State(state): State<Arc<AppState>>,
            Path(id): Path<String>,
            OriginalUri(uri): OriginalUri,
            headers: HeaderMap,
            body: Bytes,
        ) -> ApiResult<Response> {
            let id = VnfInstanceId::new(id);
            let preview = crate::preview::requested(&uri)?;
            let req: $req = json_body(&headers, &body, $schema)?;
            crate::test_vim::check_request(&state, &body)?;
            if preview {
                return crate::preview::respond(&state, &id, OperationRequest::$variant(req)).await;
            }
            let occ = state.lcm.$call(&id, req).await?;
            Ok(accepted(&state.origin(&headers), &occ))
        }
    };
}

task!(
    instantiate,
    InstantiateVnfRequest,
    Some(SchemaId::InstantiateVnfRequest),
    instantiate,
    Instantiate
);
task!(
    terminate,
    TerminateVnfRequest,
    Some(SchemaId::TerminateVnfRequest),
    terminate,
    Terminate
);
task!(
    heal,
    HealVnfRequest,
    Some(SchemaId::HealVnfRequest),
    heal,
    Heal
);
task!(
    scale,
    ScaleVnfRequest,
    Some(SchemaId::ScaleVnfRequest),
    scale,
    Scale
);
task!(
    scale_to_level,
    ScaleVnfToLevelRequest,
    Some(SchemaId::ScaleVnfToLevelRequest),
    scale_to_level,
    ScaleToLevel
);
task!(
    change_flavour,
    ChangeVnfFlavourRequest,
    Some(SchemaId::ChangeVnfFlavourRequest),
    change_flavour,
    ChangeFlavour
);
task!(
    operate,
    OperateVnfRequest,
    Some(SchemaId::OperateVnfRequest),
    operate,
    Operate
);
task!(
    change_ext_conn,
    ChangeExtVnfConnectivityRequest,
    Some(SchemaId::ChangeExtVnfConnectivityRequest),
    change_ext_conn,
    ChangeExtConn
);

async fn change_vnfpkg(
    State(state): State<Arc<AppState>>,
    tenancy: crate::scope::Tenancy,
    Path(id): Path<String>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    let id = VnfInstanceId::new(id);
    let preview = crate::preview::requested(&uri)?;
    let req: ChangeCurrentVnfPkgRequest =
        json_body(&headers, &body, Some(SchemaId::ChangeCurrentVnfPkgRequest))?;
    crate::test_vim::check_request(&state, &body)?;
    // An unknown instance is 404 whatever the request names.
    state.lcm.get_instance(&id).await?;
    state
        .packages
        .ensure_instantiable(req.vnfd_id.as_str(), &tenancy.scope)
        .await?;
    if preview {
        return crate::preview::respond(&state, &id, OperationRequest::ChangeVnfPkg(req)).await;
    }
    let occ = state.lcm.change_vnfpkg(&id, req).await?;
    Ok(accepted(&state.origin(&headers), &occ))
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
