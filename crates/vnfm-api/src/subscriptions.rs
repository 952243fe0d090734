//! `subscriptions` of the VNF LCM APIs (SOL003 clauses 5.4.18 and 5.4.19) and of the VNF
//! package management APIs (SOL003 v2.6.1 clauses 10.4.7 and 10.4.8; the same resources under
//! `/vnfpkgm/v2`): one set of handlers, generic over the kind of subscription ([`Kind`]).
//!
//! One store of subscriptions serves both versions of an API: a subscription reads with links
//! into the version it is read through, and where it was created decides the shape of its
//! notifications. `authentication` is write-only.
//!
//! Duplicates (the same callback and filter) are allowed or answered `303 See Other`, as SOL003
//! lets the server choose, per kind and version ([`Kind::allow_duplicates`],
//! [`Kind::duplicates_through`]): a `/vnflcm/v2` subscription is always created, as Tacker's v2
//! API does and python-tackerclient needs (it follows a 303 with a `POST`, which is 405), and a
//! `/vnflcm/v1` one is the duplicate only of another v1 subscription, as Tacker's v1 API
//! answers. A lifecycle subscription read through `/vnflcm/v2` shows its `verbosity`, `FULL`
//! when it was not given (SOL003 v3.3.1 clause 5.5.2.16).

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
use vnfm_lcm::LcmError;
use vnfm_lcm::subscriptions::{CreateOptions, Created};
use vnfm_schemas::SchemaId;
use vnfm_store::{Page, ProjectScope};
use vnfm_types::{
    LccnSubscription, LccnSubscriptionRequest, PkgmSubscription, PkgmSubscriptionRequest,
    SubscriptionId,
};

use vnfm_types::links::LinkTarget;

use crate::error::{ApiError, ApiResult};
use crate::idempotency::RetryKey;
use crate::listing::{ListRequest, Listed};
use crate::route_table::{self, Doc, Scope, doc, get, post, route};
use crate::scope::Tenancy;
use crate::state::AppState;
use crate::util::{json_body, json_response, require_accept, with_location};
use crate::version::ApiFamily;
use utoipa_axum::router::OpenApiRouter;

/// A kind of subscription the API serves: its resource, its request, and the core service
/// that keeps it (one store serves the kind's API versions).
pub(crate) trait Kind: Send + Sync + 'static {
    /// The subscription resource.
    type Resource: Serialize + schemars::JsonSchema + Send + Sync;
    /// The creation request.
    type Request: DeserializeOwned + Send + Sync;
    /// The request's JSON schema, when the request is checked against one.
    const REQUEST_SCHEMA: Option<SchemaId>;
    /// How the four operations are documented.
    const DOCS: SubscriptionDocs;
    /// What `/subscriptions` is to project scoping.
    const COLLECTION_SCOPE: Scope = Scope::Unnamed;
    /// What `/subscriptions/{subscriptionId}` is to project scoping.
    const SCOPE: Scope = Scope::SUBSCRIPTION;

    /// The resource's JSON schema (filters on attributes it does not have are refused).
    fn schema() -> &'static Value;
    /// Whether identical subscriptions may coexist (else a duplicate is `303 See Other`).
    fn allow_duplicates(state: &AppState) -> bool;
    /// Whether a subscription created through `family` is created even when identical to
    /// another, whatever [`Kind::allow_duplicates`] says.
    fn duplicates_through(_family: ApiFamily) -> bool {
        false
    }
    /// Completes the document of a subscription read through `family` with what the
    /// version shows of it beyond what is stored (defaults).
    fn complete(_family: ApiFamily, _doc: &mut Value) {}
    /// The resource's id.
    fn id(sub: &Self::Resource) -> &SubscriptionId;
    /// Creates a subscription through `family` (which decides its notifications' shape).
    fn create(
        state: &AppState,
        family: ApiFamily,
        request: &Self::Request,
        options: &CreateOptions,
    ) -> impl Future<Output = Result<Created<Self::Resource>, LcmError>> + Send;
    /// One subscription.
    fn get(
        state: &AppState,
        id: &SubscriptionId,
    ) -> impl Future<Output = Result<Self::Resource, LcmError>> + Send;
    /// One page of the subscriptions in `scope` after `after`.
    fn list(
        state: &AppState,
        scope: &ProjectScope,
        after: Option<&str>,
        limit: u32,
    ) -> impl Future<Output = Result<Page<Self::Resource>, LcmError>> + Send;
    /// Deletes a subscription.
    fn delete(
        state: &AppState,
        id: &SubscriptionId,
    ) -> impl Future<Output = Result<(), LcmError>> + Send;
}

/// Lifecycle change notification subscriptions (`/vnflcm/v1`, `/vnflcm/v2`).
pub(crate) struct Lccn;

impl Kind for Lccn {
    type Resource = LccnSubscription;
    type Request = LccnSubscriptionRequest;
    const REQUEST_SCHEMA: Option<SchemaId> = Some(SchemaId::LccnSubscriptionRequest);
    const DOCS: SubscriptionDocs = SubscriptionDocs {
        list: doc("List subscriptions").returns("[LccnSubscription]"),
        create: doc("Subscribe (201; on v1, 303 to a duplicate)")
            .body("LccnSubscriptionRequest")
            .status(201)
            .returns("LccnSubscription"),
        read: doc("Read a subscription").returns("LccnSubscription"),
        delete: doc("Delete a subscription").status(204),
    };

    fn schema() -> &'static Value {
        static S: OnceLock<Value> = OnceLock::new();
        S.get_or_init(|| {
            serde_json::to_value(schemars::schema_for!(LccnSubscription)).unwrap_or_default()
        })
    }
    fn allow_duplicates(state: &AppState) -> bool {
        state.options.allow_duplicate_lcm_subscriptions
    }
    fn duplicates_through(family: ApiFamily) -> bool {
        // Tacker's v2 API creates every subscription (SOL003 lets the VNFM do so).
        family == ApiFamily::LcmV2
    }
    fn complete(family: ApiFamily, doc: &mut Value) {
        // SOL003 v3.3.1 `LccnSubscription.verbosity`: FULL when not given; v2.6.1 has none.
        if family == ApiFamily::LcmV2
            && let Value::Object(map) = doc
        {
            map.entry("verbosity")
                .or_insert_with(|| Value::String("FULL".to_owned()));
        }
    }
    fn id(sub: &LccnSubscription) -> &SubscriptionId {
        &sub.id
    }
    async fn create(
        state: &AppState,
        family: ApiFamily,
        request: &LccnSubscriptionRequest,
        options: &CreateOptions,
    ) -> Result<Created<LccnSubscription>, LcmError> {
        let service = if family == ApiFamily::LcmV1 {
            &state.subscriptions_v1
        } else {
            &state.subscriptions
        };
        service.create(request, options).await
    }
    async fn get(state: &AppState, id: &SubscriptionId) -> Result<LccnSubscription, LcmError> {
        state.subscriptions.get(id).await
    }
    async fn list(
        state: &AppState,
        scope: &ProjectScope,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<LccnSubscription>, LcmError> {
        state.subscriptions.list(scope, after, limit).await
    }
    async fn delete(state: &AppState, id: &SubscriptionId) -> Result<(), LcmError> {
        state.subscriptions.delete(id).await
    }
}

/// VNF package management subscriptions (`/vnfpkgm/v1`, `/vnfpkgm/v2`).
pub(crate) struct Pkgm;

impl Kind for Pkgm {
    type Resource = PkgmSubscription;
    type Request = PkgmSubscriptionRequest;
    const REQUEST_SCHEMA: Option<SchemaId> = None;
    const DOCS: SubscriptionDocs = SubscriptionDocs {
        list: doc("List VNF package management subscriptions").returns("[PkgmSubscription]"),
        create: doc("Subscribe to VNF package notifications (303 See Other for a duplicate)")
            .body("PkgmSubscriptionRequest")
            .status(201)
            .returns("PkgmSubscription"),
        read: doc("Read a VNF package management subscription").returns("PkgmSubscription"),
        delete: doc("Delete a VNF package management subscription").status(204),
    };

    fn schema() -> &'static Value {
        static S: OnceLock<Value> = OnceLock::new();
        S.get_or_init(|| {
            serde_json::to_value(schemars::schema_for!(PkgmSubscription)).unwrap_or_default()
        })
    }
    fn allow_duplicates(_: &AppState) -> bool {
        // Package management subscriptions are never duplicated (303 See Other).
        false
    }
    fn id(sub: &PkgmSubscription) -> &SubscriptionId {
        &sub.id
    }
    async fn create(
        state: &AppState,
        family: ApiFamily,
        request: &PkgmSubscriptionRequest,
        options: &CreateOptions,
    ) -> Result<Created<PkgmSubscription>, LcmError> {
        let service = if family == ApiFamily::PkgmV1 {
            &state.pkgm_subscriptions_v1
        } else {
            &state.pkgm_subscriptions
        };
        service.create(request, options).await
    }
    async fn get(state: &AppState, id: &SubscriptionId) -> Result<PkgmSubscription, LcmError> {
        state.pkgm_subscriptions.get(id).await
    }
    async fn list(
        state: &AppState,
        scope: &ProjectScope,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<PkgmSubscription>, LcmError> {
        state.pkgm_subscriptions.list(scope, after, limit).await
    }
    async fn delete(state: &AppState, id: &SubscriptionId) -> Result<(), LcmError> {
        state.pkgm_subscriptions.delete(id).await
    }
}

/// The `subscriptions` routes of kind `K` under `family`.
/// The documentation of a kind's subscription operations.
pub(crate) struct SubscriptionDocs {
    /// `GET /subscriptions`.
    pub(crate) list: Doc,
    /// `POST /subscriptions`.
    pub(crate) create: Doc,
    /// `GET /subscriptions/{subscriptionId}`.
    pub(crate) read: Doc,
    /// `DELETE /subscriptions/{subscriptionId}`.
    pub(crate) delete: Doc,
}

pub(crate) fn routes<K: Kind>(family: ApiFamily) -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::new()
        .routes(route(
            "/subscriptions",
            K::COLLECTION_SCOPE,
            [
                get(
                    move |s, t, u, h| list::<K>(family, s, t, u, h),
                    K::DOCS.list,
                ),
                post(
                    move |s, t, r, h, b| create::<K>(family, s, t, r, h, b),
                    K::DOCS.create,
                )
                .creation(),
            ],
        ))
        .routes(route(
            "/subscriptions/{subscriptionId}",
            K::SCOPE,
            [
                get(move |s, p, h| show::<K>(family, s, p, h), K::DOCS.read),
                route_table::delete(delete::<K>, K::DOCS.delete),
            ],
        ))
}

/// The JSON of a subscription read through `family`: its `_links.self` is rendered into the
/// version read.
fn view<K: Kind>(state: &AppState, family: ApiFamily, sub: &K::Resource) -> ApiResult<Value> {
    let doc = serde_json::to_value(sub)
        .map_err(|e| ApiError::Internal(format!("subscription does not serialize: {e}")))?;
    linked::<K>(state, family, K::id(sub), doc)
}

/// The subscription document `doc` of subscription `id` with its `_links` under `family`,
/// completed as `family` shows it ([`Kind::complete`]).
fn linked<K: Kind>(
    state: &AppState,
    family: ApiFamily,
    id: &SubscriptionId,
    mut doc: Value,
) -> ApiResult<Value> {
    K::complete(family, &mut doc);
    let (interface, version) = family.links().ok_or_else(|| {
        ApiError::Internal(format!("{} serves no subscriptions", family.prefix()))
    })?;
    let href = state.lcm.config().links.href(LinkTarget::Subscription {
        interface,
        version,
        id: id.as_str(),
    });
    doc["_links"] = serde_json::json!({"self": {"href": href}});
    Ok(doc)
}

fn location(family: ApiFamily, origin: &str, id: &SubscriptionId) -> String {
    format!("{}{}/subscriptions/{id}", origin, family.prefix())
}

async fn list<K: Kind>(
    family: ApiFamily,
    State(state): State<Arc<AppState>>,
    tenancy: Tenancy,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/json"])?;
    let list = ListRequest::parse(&uri, K::schema())?
        .paged(state.options.page_sizes.of(Listed::Subscriptions));
    let limit = list.page_size();
    list.run(
        |after| {
            let state = state.clone();
            let scope = tenancy.scope.clone();
            async move {
                let page = K::list(&state, &scope, after.as_deref(), limit).await?;
                Ok(Page {
                    items: page
                        .items
                        .iter()
                        .map(|s| view::<K>(&state, family, s))
                        .collect::<ApiResult<Vec<_>>>()?,
                    next: page.next,
                })
            }
        },
        &[],
    )
    .await
}

/// `201 Created` with the new subscription (committing the request's `Idempotency-Key` with
/// it), or `303 See Other` to the existing one; either with its `Location` under `family`. A
/// replay ([`crate::idempotency::Retry::Replay`]) answers the 201 from the subscription it
/// names.
async fn create<K: Kind>(
    family: ApiFamily,
    State(state): State<Arc<AppState>>,
    tenancy: Tenancy,
    retry: RetryKey,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/json"])?;
    let req: K::Request = json_body(&headers, &body, K::REQUEST_SCHEMA)?;
    let options = CreateOptions {
        verify_callback: state.options.verify_callbacks,
        verify_timeout: Duration::from_secs(5),
        allow_duplicates: K::duplicates_through(family) || K::allow_duplicates(&state),
        project: tenancy.subscriber_project()?,
        key: retry.key().cloned(),
    };
    let origin = state.origin(&headers);
    let created = match retry.replay() {
        Some(id) => Created::New(K::get(&state, &SubscriptionId::new(id)).await?),
        None => K::create(&state, family, &req, &options).await?,
    };
    match created {
        Created::New(sub) => Ok(with_location(
            json_response(StatusCode::CREATED, &view::<K>(&state, family, &sub)?),
            &location(family, &origin, K::id(&sub)),
        )),
        Created::Existing(sub) => Ok(with_location(
            StatusCode::SEE_OTHER.into_response(),
            &location(family, &origin, K::id(&sub)),
        )),
    }
}

async fn show<K: Kind>(
    family: ApiFamily,
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/json"])?;
    let sub = K::get(&state, &SubscriptionId::new(id)).await?;
    Ok(json_response(
        StatusCode::OK,
        &view::<K>(&state, family, &sub)?,
    ))
}

async fn delete<K: Kind>(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    K::delete(&state, &SubscriptionId::new(id)).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
