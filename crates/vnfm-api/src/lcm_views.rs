//! The read side of VNF lifecycle management, written once for both API versions: listing and
//! showing VNF instances and operation occurrences, and FAIL (answered with the occurrence).
//! `/vnflcm/v2` and `/vnflcm/v1` differ only in how a document is shown ([`LcmView`]), not in
//! the flow.

use std::future::Future;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{OriginalUri, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::Value;
use vnfm_schemas::SchemaId;
use vnfm_store::{InstanceQuery, Page};
use vnfm_types::{CreateVnfRequest, VnfInstance, VnfInstanceId, VnfLcmOpOcc, VnfLcmOpOccId};

use crate::error::ApiResult;
use crate::lcm_v2::{
    document_strings, instance_document_strings, instance_query, instance_query_is_exact,
    instance_schema, op_occ_query, op_occ_schema, with_etag,
};
use crate::listing::{ListRequest, PAGE_SIZE};
use crate::scope::Tenancy;
use crate::state::AppState;
use crate::util::{json_body, json_response, require_accept, with_location};
use crate::version::ApiFamily;

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
    /// ([`crate::lcm_v2::document_strings`]).
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

    /// An operation occurrence as this version's document.
    fn op_occ(occ: VnfLcmOpOcc) -> ApiResult<Value>;
}

/// `GET .../vnf_instances`.
pub(crate) async fn list_instances<V: LcmView>(
    State(state): State<Arc<AppState>>,
    tenancy: Tenancy,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/json"])?;
    let mut list = ListRequest::parse(&uri, instance_schema())?;
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
        q.limit = Some(PAGE_SIZE);
        let page = state.store.list_instance_default_views(&q).await?;
        return Ok(list.texts_page(&page.items, page.next));
    }
    list.run(
        |after| {
            let state = state.clone();
            let mut q = base.clone();
            q.after = after;
            q.limit = Some(PAGE_SIZE);
            async move { V::instances(&state, q).await }
        },
        V::INSTANCE_EXCLUDED,
    )
    .await
}

/// `POST .../vnf_instances`: creates the identifier, answered with the new instance and its
/// `Location`.
pub(crate) async fn create_instance<V: LcmView>(
    State(state): State<Arc<AppState>>,
    tenancy: Tenancy,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/json"])?;
    let req: CreateVnfRequest = json_body(&headers, &body, Some(SchemaId::CreateVnfRequest))?;
    state
        .packages
        .ensure_instantiable(req.vnfd_id.as_str(), &tenancy.scope)
        .await?;
    let instance = state
        .lcm
        .create_vnf_identifier_in(req, tenancy.project.as_deref())
        .await?;
    let location = format!(
        "{}{}/vnf_instances/{}",
        state.origin(&headers),
        V::FAMILY.prefix(),
        instance.id
    );
    let doc = V::instance(&state, instance).await?;
    Ok(with_location(
        json_response(StatusCode::CREATED, &doc),
        &location,
    ))
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
    let mut list = ListRequest::parse(&uri, op_occ_schema())?;
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
            q.limit = Some(PAGE_SIZE);
            async move {
                let page = state.lcm.list_op_occs(&q).await?;
                Ok(Page {
                    items: page
                        .items
                        .into_iter()
                        .map(V::op_occ)
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
    let occ = state.lcm.get_op_occ(&VnfLcmOpOccId::new(id)).await?;
    let mut doc = V::op_occ(occ)?;
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
    Ok(json_response(StatusCode::OK, &V::op_occ(occ)?))
}
