//! VNF performance management, SOL003 v3.3.1 (`/vnfpm/v2`, API version 2.1.0): PM jobs
//! (list with SOL013 filters, create, read with an `ETag`, `PATCH` of the callback with
//! `If-Match`, delete) and their performance reports, thresholds (the same verbs), and PM
//! subscriptions in the v2.6.1 shape (the shared handlers of [`crate::subscriptions`]); and
//! SOL003 v2.6.1 (`/vnfpm/v1`, API version 1.2.0): the same jobs, reports, thresholds and
//! subscriptions, created without object type (VNF instances) or callback, and without
//! `PATCH`.
//!
//! Notifications about a job or threshold go to its own `callbackUri` (v3.3.1; a v1 one has
//! none) and to the PM subscriptions whose filter selects them; see `vnfm_assurance::pm`. A
//! resource read through one version links to that version's resources.

use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{OriginalUri, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use vnfm_assurance::pm::{CallbackResource, PmApi};
use vnfm_lcm::LcmError;
use vnfm_lcm::subscriptions::{CreateOptions, Created};
use vnfm_schemas::SchemaId;
use vnfm_store::{Page, PmResource, ProjectScope, Version};
use vnfm_types::{
    CreatePmJobRequest, CreatePmJobRequestV1, CreateThresholdRequest, CreateThresholdRequestV1,
    PmJob, PmSubscription, PmSubscriptionRequest, SubscriptionId, Threshold,
};

use crate::error::{ApiError, ApiResult};
use crate::idempotency::{RetryKey, creation_answer};
use crate::listing::{ListRequest, Listed};
use crate::precondition::with_etag;
use crate::route_table::{Doc, Scope, delete, doc, get, patch, post, route};
use crate::state::AppState;
use crate::subscriptions::Kind;
use crate::subscriptions::SubscriptionDocs;
use crate::util::{json_body, json_response, merge_patch_body, require_accept};
use crate::version::{ApiFamily, api_versions_route, versioned_routes};
use utoipa_axum::router::OpenApiRouter;

/// The `/vnfpm/v2` routes (behind the server's authentication).
pub(crate) fn routes() -> OpenApiRouter<Arc<AppState>> {
    version_routes::<V2>("API versions of VNF performance management v2")
}

/// The `/vnfpm/v1` routes (SOL003 v2.6.1; behind the server's authentication).
pub(crate) fn routes_v1() -> OpenApiRouter<Arc<AppState>> {
    version_routes::<V1>("API versions of VNF performance management v1 (SOL003 v2.6.1)")
}

fn version_routes<V: PmVersion>(versions_summary: &'static str) -> OpenApiRouter<Arc<AppState>> {
    let routes = OpenApiRouter::new()
        .routes(api_versions_route(V::FAMILY, versions_summary))
        .merge(resource_routes::<Jobs, V>())
        .routes(route(
            "/pm_jobs/{pmJobId}/reports/{reportId}",
            Scope::EveryProject,
            [get(
                show_report,
                doc("Read a performance report").returns("PerformanceReport"),
            )],
        ))
        .merge(resource_routes::<Thresholds, V>())
        .merge(crate::subscriptions::routes::<Pm>(V::FAMILY));
    versioned_routes(V::FAMILY, routes)
}

/// The collection and the individual resources of `R` in version `V` (modified with `PATCH`
/// in v2 only).
fn resource_routes<R: Resource, V: PmVersion>() -> OpenApiRouter<Arc<AppState>> {
    let docs = &R::DOCS;
    let create_doc = match V::API {
        PmApi::V2 => docs.create,
        PmApi::V1 => docs.create_v1,
    };
    let mut individual = vec![
        get(show::<R, V>, docs.read),
        delete(remove::<R>, docs.delete),
    ];
    if V::API == PmApi::V2 {
        individual.push(patch(modify::<R>, docs.modify));
    }
    OpenApiRouter::new()
        .routes(route(
            &format!("/{}", R::PATH),
            Scope::EveryProject,
            [
                get(list::<R, V>, docs.list),
                post(create::<R, V>, create_doc).creation(),
            ],
        ))
        .routes(route(
            &format!("/{}/{{{}}}", R::PATH, docs.id_param),
            Scope::EveryProject,
            individual,
        ))
}

/// How the operations on a PM resource are documented.
struct ResourceDocs {
    /// The name of its identifier in paths (`pmJobId`).
    id_param: &'static str,
    list: Doc,
    create: Doc,
    create_v1: Doc,
    read: Doc,
    delete: Doc,
    modify: Doc,
}

/// One version of the PM interface: how its creation requests read and where its
/// resources link.
trait PmVersion: Send + Sync + 'static {
    /// The family served.
    const FAMILY: ApiFamily;
    /// The core's name of the version.
    const API: PmApi;

    /// The creation request of `R` in this version, as the core takes it.
    fn request<R: Resource>(headers: &HeaderMap, body: &Bytes) -> ApiResult<R::Request>;
}

/// SOL003 v3.3.1, `/vnfpm/v2`.
struct V2;

impl PmVersion for V2 {
    const FAMILY: ApiFamily = ApiFamily::PmV2;
    const API: PmApi = PmApi::V2;

    fn request<R: Resource>(headers: &HeaderMap, body: &Bytes) -> ApiResult<R::Request> {
        let request: R::Request = json_body(headers, body, None)?;
        if R::callback_of(&request).is_none() {
            return Err(ApiError::invalid(
                "/callbackUri",
                "callbackUri is required: the notifications about the resource go there",
            ));
        }
        Ok(request)
    }
}

/// SOL003 v2.6.1, `/vnfpm/v1`.
struct V1;

impl PmVersion for V1 {
    const FAMILY: ApiFamily = ApiFamily::PmV1;
    const API: PmApi = PmApi::V1;

    fn request<R: Resource>(headers: &HeaderMap, body: &Bytes) -> ApiResult<R::Request> {
        let request: R::RequestV1 = json_body(headers, body, None)?;
        Ok(request.into())
    }
}

/// `doc` (a PM resource as stored) with its links into version `api`'s resources.
fn relinked(state: &AppState, mut doc: Value, api: PmApi) -> Value {
    state.performance.links().relink_all(&mut doc, api);
    doc
}

/// PM subscriptions (`/vnfpm/v1` and `/vnfpm/v2`).
pub(crate) struct Pm;

impl Kind for Pm {
    type Resource = PmSubscription;
    type Request = PmSubscriptionRequest;
    const REQUEST_SCHEMA: Option<SchemaId> = None;
    const DOCS: SubscriptionDocs = SubscriptionDocs {
        list: doc("List PM subscriptions (the SOL003 v2.6.1 shape in both versions)")
            .returns("[PmSubscription]"),
        create: doc("Subscribe to PM notifications")
            .body("PmSubscriptionRequest")
            .status(201)
            .returns("PmSubscription"),
        read: doc("Read a PM subscription").returns("PmSubscription"),
        delete: doc("Delete a PM subscription").status(204),
    };
    // Performance management records no project yet.
    const COLLECTION_SCOPE: Scope = Scope::EveryProject;
    const SCOPE: Scope = Scope::EveryProject;

    fn schema() -> &'static Value {
        static S: OnceLock<Value> = OnceLock::new();
        S.get_or_init(|| {
            serde_json::to_value(schemars::schema_for!(PmSubscription)).unwrap_or_default()
        })
    }
    fn allow_duplicates(_: &AppState) -> bool {
        false
    }
    fn id(sub: &PmSubscription) -> &SubscriptionId {
        &sub.id
    }
    async fn create(
        state: &AppState,
        family: ApiFamily,
        request: &PmSubscriptionRequest,
        options: &CreateOptions,
    ) -> Result<Created<PmSubscription>, LcmError> {
        let service = if family == ApiFamily::PmV1 {
            &state.pm_subscriptions_v1
        } else {
            state.performance.subscriptions()
        };
        service.create(request, options).await
    }
    async fn get(state: &AppState, id: &SubscriptionId) -> Result<PmSubscription, LcmError> {
        state.performance.subscriptions().get(id).await
    }
    async fn list(
        state: &AppState,
        scope: &ProjectScope,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<PmSubscription>, LcmError> {
        state
            .performance
            .subscriptions()
            .list(scope, after, limit)
            .await
    }
    async fn delete(state: &AppState, id: &SubscriptionId) -> Result<(), LcmError> {
        state.performance.subscriptions().delete(id).await
    }
}

/// A PM resource (PM jobs, thresholds): one set of handlers over the core's one path for
/// both ([`vnfm_assurance::PerformanceManager::get`] and the others); what differs is how its
/// creation request is checked and how it is documented.
trait Resource: Send + Sync + 'static {
    /// The resource.
    type Doc: CallbackResource<Modifications: Serialize + DeserializeOwned>
        + Serialize
        + schemars::JsonSchema;
    /// The creation request.
    type Request: DeserializeOwned + Send + Sync;
    /// The creation request of SOL003 v2.6.1.
    type RequestV1: DeserializeOwned + Into<Self::Request> + Send + Sync;
    /// The collection's path under the API prefix (`pm_jobs`).
    const PATH: &'static str;
    /// Which list's page size its list takes.
    const LISTED: Listed;
    /// What a list leaves out unless the request selects it (SOL003 clause 6.4.2.3.2: a PM
    /// job's `reports`).
    const DEFAULT_EXCLUDED: &'static [&'static str] = &[];
    /// The complex attributes a selector keeps (SOL003 clause 6.5.2: lower cardinality 1).
    const MANDATORY: &'static [&'static str];
    /// How its operations are documented.
    const DOCS: ResourceDocs;

    fn schema() -> &'static Value;
    fn callback_of(request: &Self::Request) -> Option<&str>;
    fn create(
        state: &AppState,
        request: &Self::Request,
        options: &CreateOptions,
        api: PmApi,
    ) -> impl Future<Output = Result<Self::Doc, LcmError>> + Send;
}

struct Jobs;

impl Resource for Jobs {
    const LISTED: Listed = Listed::PmJobs;
    const DOCS: ResourceDocs = ResourceDocs {
        id_param: "pmJobId",
        list: doc("List PM jobs (SOL013 filter, paging)").returns("[PmJob]"),
        create: doc("Create a PM job")
            .body("CreatePmJobRequest")
            .status(201)
            .returns("PmJob"),
        create_v1: doc("Create a PM job of VNF instances, without callback (SOL003 v2.6.1)")
            .body("CreatePmJobRequestV1")
            .status(201)
            .returns("PmJob"),
        read: doc("Read a PM job, with its reports").returns("PmJob"),
        delete: doc("Delete a PM job and its reports").status(204),
        modify: doc("Modify a PM job's callback (merge patch)")
            .body("PmJobModifications")
            .returns("PmJobModifications"),
    };
    type Doc = PmJob;
    type Request = CreatePmJobRequest;
    type RequestV1 = CreatePmJobRequestV1;
    const PATH: &'static str = "pm_jobs";
    const DEFAULT_EXCLUDED: &'static [&'static str] = &["reports"];
    const MANDATORY: &'static [&'static str] = &["_links", "objectInstanceIds", "criteria"];

    fn schema() -> &'static Value {
        static S: OnceLock<Value> = OnceLock::new();
        S.get_or_init(|| serde_json::to_value(schemars::schema_for!(PmJob)).unwrap_or_default())
    }
    fn callback_of(request: &CreatePmJobRequest) -> Option<&str> {
        request.callback_uri.as_deref()
    }
    async fn create(
        state: &AppState,
        request: &CreatePmJobRequest,
        options: &CreateOptions,
        api: PmApi,
    ) -> Result<PmJob, LcmError> {
        state.performance.create_job(request, options, api).await
    }
}

struct Thresholds;

impl Resource for Thresholds {
    const LISTED: Listed = Listed::PmThresholds;
    const DOCS: ResourceDocs = ResourceDocs {
        id_param: "thresholdId",
        list: doc("List thresholds (SOL013 filter, paging)").returns("[Threshold]"),
        create: doc("Create a threshold")
            .body("CreateThresholdRequest")
            .status(201)
            .returns("Threshold"),
        create_v1: doc("Create a threshold of a VNF instance, without callback (SOL003 v2.6.1)")
            .body("CreateThresholdRequestV1")
            .status(201)
            .returns("Threshold"),
        read: doc("Read a threshold").returns("Threshold"),
        delete: doc("Delete a threshold").status(204),
        modify: doc("Modify a threshold's callback (merge patch)")
            .body("ThresholdModifications")
            .returns("ThresholdModifications"),
    };
    type Doc = Threshold;
    type Request = CreateThresholdRequest;
    type RequestV1 = CreateThresholdRequestV1;
    const PATH: &'static str = "thresholds";
    const MANDATORY: &'static [&'static str] = &["_links", "criteria"];

    fn schema() -> &'static Value {
        static S: OnceLock<Value> = OnceLock::new();
        S.get_or_init(|| serde_json::to_value(schemars::schema_for!(Threshold)).unwrap_or_default())
    }
    fn callback_of(request: &CreateThresholdRequest) -> Option<&str> {
        request.callback_uri.as_deref()
    }
    async fn create(
        state: &AppState,
        request: &CreateThresholdRequest,
        options: &CreateOptions,
        api: PmApi,
    ) -> Result<Threshold, LcmError> {
        state
            .performance
            .create_threshold(request, options, api)
            .await
    }
}

fn to_value<T: Serialize>(doc: &T) -> ApiResult<Value> {
    serde_json::to_value(doc)
        .map_err(|e| ApiError::Internal(format!("PM resource does not serialize: {e}")))
}

/// How callbacks of new and modified resources are tested (as for subscriptions).
fn callback_options(state: &AppState) -> CreateOptions {
    CreateOptions {
        verify_callback: state.options.verify_callbacks,
        verify_timeout: Duration::from_secs(5),
        allow_duplicates: true,
        project: None,
        key: None,
    }
}

async fn list<R: Resource, V: PmVersion>(
    State(state): State<Arc<AppState>>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/json"])?;
    let list = ListRequest::parse(&uri, R::schema())?
        .with_mandatory(R::MANDATORY)
        .paged(state.options.page_sizes.of(R::LISTED));
    let limit = list.page_size();
    list.run(
        |after| {
            let state = state.clone();
            async move {
                let page = state
                    .performance
                    .list::<R::Doc>(after.as_deref(), limit)
                    .await?;
                Ok(Page {
                    items: page
                        .items
                        .iter()
                        .map(|d| to_value(d).map(|v| relinked(&state, v, V::API)))
                        .collect::<ApiResult<Vec<_>>>()?,
                    next: page.next,
                })
            }
        },
        R::DEFAULT_EXCLUDED,
    )
    .await
}

/// `201 Created` with the resource (committing the request's `Idempotency-Key` with it) and
/// its `Location` and `ETag`; a replay ([`crate::idempotency::Retry::Replay`]) answers the
/// same from the resource it names.
async fn create<R: Resource, V: PmVersion>(
    State(state): State<Arc<AppState>>,
    retry: RetryKey,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/json"])?;
    let request = V::request::<R>(&headers, &body)?;
    let collection = format!(
        "{}{}/{}",
        state.origin(&headers),
        V::FAMILY.prefix(),
        R::PATH
    );
    let doc = match retry.replay() {
        Some(id) => state.performance.get::<R::Doc>(id).await?.0,
        None => {
            let options = CreateOptions {
                key: retry.key().cloned(),
                ..callback_options(&state)
            };
            R::create(&state, &request, &options, V::API).await?
        }
    };
    let answer = creation_answer(
        &collection,
        doc.id(),
        &relinked(&state, to_value(&doc)?, V::API),
    );
    // The first answer is of the first version, whenever it is answered.
    Ok(with_etag(answer, Version::FIRST))
}

async fn show<R: Resource, V: PmVersion>(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/json"])?;
    let (doc, version) = state.performance.get::<R::Doc>(&id).await?;
    Ok(with_etag(
        json_response(StatusCode::OK, &relinked(&state, to_value(&doc)?, V::API)),
        version,
    ))
}

/// `PATCH`: the modifications as a merge patch, under `If-Match` when given (412 when the
/// resource changed since); answers the modifications (never the credentials) and the new
/// `ETag`.
async fn modify<R: Resource>(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    require_accept(&headers, crate::util::PATCH_ANSWER_TYPES)?;
    let expected = crate::precondition::expected_version(&headers, R::Doc::WHAT, || async {
        Ok(state.performance.get::<R::Doc>(&id).await?.1)
    })
    .await?;
    let modifications: <R::Doc as CallbackResource>::Modifications =
        merge_patch_body(&headers, &body, None)?;
    let (answer, version) = state
        .performance
        .modify::<R::Doc>(&id, &modifications, expected, &callback_options(&state))
        .await?;
    Ok(with_etag(json_response(StatusCode::OK, &answer), version))
}

async fn remove<R: Resource>(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    state.performance.delete::<R::Doc>(&id).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn show_report(
    State(state): State<Arc<AppState>>,
    Path((id, report_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/json"])?;
    let report = state.performance.report(&id, &report_id).await?;
    Ok(json_response(StatusCode::OK, &report))
}
