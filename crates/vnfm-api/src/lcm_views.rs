//! The read side of VNF lifecycle management, written once for both API versions: listing and
//! showing VNF instances and operation occurrences, and FAIL (answered with the occurrence).
//! `/vnflcm/v2` and `/vnflcm/v1` differ only in how a document is shown ([`LcmView`]), not in
//! the flow.

use std::future::Future;
use std::sync::{Arc, OnceLock};

use axum::body::Bytes;
use axum::extract::{OriginalUri, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use vnfm_schemas::SchemaId;
use vnfm_store::{InstanceQuery, Page};
use vnfm_types::{CreateVnfRequest, VnfInstance, VnfInstanceId, VnfLcmOpOcc, VnfLcmOpOccId};

use crate::error::{ApiError, ApiResult};
use crate::idempotency::{RetryKey, creation_answer};
use crate::listing::{ListRequest, Listed};
use crate::precondition::with_etag;
use crate::route_table::{Endpoint, Scope, route};
use crate::scope::Tenancy;
use crate::state::AppState;
use crate::util::{json_body, json_response, json_text_response, require_accept};
use crate::version::ApiFamily;
use utoipa_axum::router::UtoipaMethodRouter;
use vnfm_sol013::{Op, RequiredStrings, Term};
use vnfm_store::{OpOccQuery, Version};
use vnfm_types::{
    InstantiationState, LcmOperationStateType, LcmOperationType, VnfInfoModificationRequest, VnfdId,
};

/// How one API version shows the lifecycle resources.
pub(crate) trait LcmView: Send + Sync + 'static {
    /// The API the view belongs to (the prefix of the URIs it writes).
    const FAMILY: ApiFamily;
    /// The attributes a list leaves out by default (`exclude_default`).
    const INSTANCE_EXCLUDED: &'static [&'static str];
    /// The same for operation occurrences.
    const OP_OCC_EXCLUDED: &'static [&'static str];
    /// `true` when an instance's default view in this version is the store's
    /// ([`vnfm_store::InstanceStore::list_instance_default_views`]): the stored document without
    /// [`LcmView::INSTANCE_EXCLUDED`].
    const STORED_DEFAULT_VIEW: bool;
    /// `true` when an instance or occurrence in this version is the store's document as it
    /// is stored, so that a filter's values can be looked for in the stored text
    /// ([`document_strings`]).
    const STORED_DOCUMENT: bool;
    /// `true` when this version's documents are the types the OpenAPI document describes under
    /// `components/schemas` (the SOL003 v3.3.1 shapes).
    const DOCUMENTED_SHAPES: bool;

    /// One store page of instances matching `query`, as this version's documents.
    fn instances(
        state: &AppState,
        query: InstanceQuery,
    ) -> impl Future<Output = ApiResult<Page<Value>>> + Send;

    /// An instance as this version's document.
    fn instance(
        state: &AppState,
        instance: VnfInstance,
    ) -> impl Future<Output = ApiResult<Value>> + Send;

    /// How an instance created from the package of `vnfd_id` reads as this version's
    /// document, known before the instance is created: the creation's answer is made with it
    /// in the creating transaction.
    fn created_instance(
        state: &AppState,
        vnfd_id: &str,
    ) -> impl Future<Output = InstanceDocument> + Send;

    /// An operation occurrence as this version's document.
    fn op_occ(state: &AppState, occ: VnfLcmOpOcc) -> ApiResult<Value>;
}

/// An instance as a version's document ([`LcmView::created_instance`]).
pub(crate) type InstanceDocument = Box<dyn Fn(&VnfInstance) -> ApiResult<Value> + Send + Sync>;

/// `GET .../vnf_instances`.
pub(crate) async fn list_instances<V: LcmView>(
    State(state): State<Arc<AppState>>,
    tenancy: Tenancy,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/json"])?;
    let mut list = ListRequest::parse(&uri, instance_schema())?
        .paged(state.options.page_sizes.of(Listed::VnfInstances));
    let limit = list.page_size();
    let mut base = instance_query(&list);
    base.scope = tenancy.scope;
    if V::STORED_DOCUMENT {
        base.document_strings = instance_document_strings(&list);
        base.scan_limit = list.bound_document_search(&base.document_strings);
    }
    if V::STORED_DEFAULT_VIEW && list.selects_default() && instance_query_is_exact(&list) {
        // The store answers the filter alone and keeps each instance's default view as text:
        // the page is those texts joined, with no document parsed or encoded.
        let mut q = base;
        q.after = list.after.clone();
        q.limit = Some(limit);
        let page = state.store.list_instance_default_views(&q).await?;
        return Ok(list.texts_page(&page.items, page.next));
    }
    list.run(
        |after| {
            let state = state.clone();
            let mut q = base.clone();
            q.after = after;
            q.limit = Some(limit);
            async move { V::instances(&state, q).await }
        },
        V::INSTANCE_EXCLUDED,
    )
    .await
}

/// `POST .../vnf_instances`: creates the identifier (committing the request's
/// `Idempotency-Key` with it), answered with the new instance and its `Location`; a replay
/// ([`crate::idempotency::Retry::Replay`]) answers the same from the instance it names.
pub(crate) async fn create_instance<V: LcmView>(
    State(state): State<Arc<AppState>>,
    tenancy: Tenancy,
    retry: RetryKey,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/json"])?;
    let req: CreateVnfRequest = json_body(&headers, &body, Some(SchemaId::CreateVnfRequest))?;
    check_vnfc_names(req.metadata.as_ref(), false)?;
    state
        .packages
        .ensure_instantiable(req.vnfd_id.as_str(), &tenancy.scope)
        .await?;
    let project = tenancy.project.as_deref();
    let collection = format!(
        "{}{}/vnf_instances",
        state.origin(&headers),
        V::FAMILY.prefix()
    );
    let document = V::created_instance(&state, req.vnfd_id.as_str()).await;
    let instance = match retry.replay() {
        Some(id) => state.lcm.get_instance(&VnfInstanceId::new(id)).await?,
        None => {
            state
                .lcm
                .create_vnf_identifier_with_key(req, project, retry.key())
                .await?
        }
    };
    Ok(creation_answer(
        &collection,
        instance.id.as_str(),
        &document(&instance)?,
    ))
}

/// Refuses a request's `metadata.VDU_VNFc_mapping` that cannot name VNFCs
/// ([`vnfm_driver_api::vnfc_names::check`]). In a merge patch (`patch`), a `null` removes
/// the mapping or one VDU's names and passes.
fn check_vnfc_names(metadata: Option<&vnfm_types::KeyValuePairs>, patch: bool) -> ApiResult<()> {
    use serde_json::Value;
    use vnfm_driver_api::vnfc_names::{METADATA_KEY, check};
    let mapping = match metadata.and_then(|m| m.get(METADATA_KEY)) {
        None => return Ok(()),
        Some(Value::Null) if patch => return Ok(()),
        Some(Value::Object(vdus)) if patch => Value::Object(
            vdus.iter()
                .filter(|(_, ids)| !ids.is_null())
                .map(|(vdu, ids)| (vdu.clone(), ids.clone()))
                .collect(),
        ),
        Some(other) => other.clone(),
    };
    check(&mapping)
        .map_err(|e| ApiError::invalid(format!("/metadata/{METADATA_KEY}{}", e.pointer), e.detail))
}

/// `GET .../vnf_instances/{id}`, with the instance's entity tag.
pub(crate) async fn get_instance<V: LcmView>(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/json"])?;
    let list = ListRequest::parse(&uri, instance_schema())?;
    let (instance, version) = state
        .lcm
        .get_instance_versioned(&VnfInstanceId::new(id))
        .await?;
    let mut doc = V::instance(&state, instance).await?;
    list.select(&mut doc);
    Ok(with_etag(json_response(StatusCode::OK, &doc), version))
}

/// `GET .../vnf_lcm_op_occs`.
pub(crate) async fn list_op_occs<V: LcmView>(
    State(state): State<Arc<AppState>>,
    tenancy: Tenancy,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/json"])?;
    let mut list = ListRequest::parse(&uri, op_occ_schema())?
        .paged(state.options.page_sizes.of(Listed::LcmOpOccs));
    let limit = list.page_size();
    let mut base = op_occ_query(&list);
    base.scope = tenancy.scope;
    if V::STORED_DOCUMENT {
        // Every term: the columns the query uses are few and already narrow.
        base.document_strings = document_strings(&list, op_occ_schema(), |_| false);
        base.scan_limit = list.bound_document_search(&base.document_strings);
    }
    list.run(
        |after| {
            let state = state.clone();
            let mut q = base.clone();
            q.after = after;
            q.limit = Some(limit);
            async move {
                let page = state.lcm.list_op_occs(&q).await?;
                Ok(Page {
                    items: page
                        .items
                        .into_iter()
                        .map(|occ| V::op_occ(&state, occ))
                        .collect::<ApiResult<Vec<_>>>()?,
                    next: page.next,
                })
            }
        },
        V::OP_OCC_EXCLUDED,
    )
    .await
}

/// `GET .../vnf_lcm_op_occs/{id}`.
pub(crate) async fn get_op_occ<V: LcmView>(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/json"])?;
    let list = ListRequest::parse(&uri, op_occ_schema())?;
    let id = VnfLcmOpOccId::new(id);
    if V::STORED_DOCUMENT && list.selects_default() {
        // The document as stored is the answer (what clients poll): sent without being
        // parsed and encoded again.
        let text = state.lcm.get_op_occ_text(&id).await?;
        return Ok(json_text_response(StatusCode::OK, text));
    }
    let occ = state.lcm.get_op_occ(&id).await?;
    let mut doc = V::op_occ(&state, occ)?;
    list.select(&mut doc);
    Ok(json_response(StatusCode::OK, &doc))
}

/// `POST .../vnf_lcm_op_occs/{id}/fail`: answered with the failed occurrence.
pub(crate) async fn fail<V: LcmView>(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/json"])?;
    let id = VnfLcmOpOccId::new(id);
    let occ = state.lcm.fail(&id).await?;
    Ok(json_response(StatusCode::OK, &V::op_occ(&state, occ)?))
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

/// The store query narrowed by the filter's simple terms (the filter is still evaluated on
/// every document).
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
/// given: the core compares it in the transaction that starts the change, and commits the
/// request's `Idempotency-Key` (`retry`) with the occurrence.
pub(crate) async fn start_modify_info(
    state: &AppState,
    id: &VnfInstanceId,
    req: VnfInfoModificationRequest,
    expected: Option<Version>,
    tenancy: &Tenancy,
    retry: &RetryKey,
) -> ApiResult<VnfLcmOpOcc> {
    check_vnfc_names(req.metadata.as_ref(), true)?;
    let req = vnfm_lcm::OperationRequest::from(req);
    Ok(state
        .lcm
        .start_as(&tenancy.scope, id, req, expected, retry.key())
        .await?)
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

/// `POST /vnf_instances/{vnfInstanceId}/<name>`: a lifecycle task, answered 202 Accepted.
pub(crate) fn task(
    name: &str,
    endpoint: Endpoint<Arc<AppState>>,
) -> UtoipaMethodRouter<Arc<AppState>> {
    route(
        &format!("/vnf_instances/{{vnfInstanceId}}/{name}"),
        Scope::INSTANCE,
        [endpoint.status(202).task()],
    )
}
