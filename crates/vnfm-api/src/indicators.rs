//! VNF indicators, SOL003 v2.6.1 (`/vnfind/v1`, API version 1.2.0): the indicator values of
//! every instance the caller sees (`GET /indicators`), of one instance
//! (`GET /indicators/{vnfInstanceId}`, 404 for an unknown instance), one value
//! (`GET /indicators/{vnfInstanceId}/{indicatorId}`), all with SOL013 filters and paging, and
//! indicator subscriptions (the shared handlers of [`crate::subscriptions`]).
//!
//! Not ETSI: `PUT /vnfm/v1/indicators/{vnfInstanceId}/{indicatorId}` with `{"value": ...}`
//! sets the value of an indicator the instance's VNFD declares, for an EM or a script that
//! computes it (indicators with `source: em`); a changed value is notified like a computed one.

use std::sync::{Arc, OnceLock};

use axum::body::Bytes;
use axum::extract::{OriginalUri, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::Value;
use vnfm_lcm::LcmError;
use vnfm_lcm::subscriptions::{CreateOptions, Created};
use vnfm_schemas::SchemaId;
use vnfm_store::{Page, ProjectScope};
use vnfm_types::{
    SubscriptionId, VnfIndicator, VnfIndicatorSubscription, VnfIndicatorSubscriptionRequest,
    VnfInstanceId,
};

use crate::error::{ApiError, ApiResult};
use crate::listing::{ListRequest, Listed};
use crate::route_table::{Scope, doc, get, put, route};
use crate::scope::Tenancy;
use crate::state::AppState;
use crate::subscriptions::Kind;
use crate::subscriptions::SubscriptionDocs;
use crate::util::{json_body, json_response, require_accept};
use crate::version::{ApiFamily, api_versions_route, versioned_routes};
use utoipa_axum::router::OpenApiRouter;

const FAMILY: ApiFamily = ApiFamily::IndV1;

/// The `/vnfind/v1` routes (behind the server's authentication).
pub(crate) fn routes() -> OpenApiRouter<Arc<AppState>> {
    let routes = OpenApiRouter::new()
        .routes(api_versions_route(
            FAMILY,
            "API versions of VNF indicators v1",
        ))
        .routes(route(
            "/indicators",
            Scope::Unnamed,
            [get(
                list_all,
                doc("List the indicator values of every VNF instance (SOL013 filter, paging)")
                    .returns("[VnfIndicator]"),
            )],
        ))
        .routes(route(
            "/indicators/{vnfInstanceId}",
            Scope::INSTANCE,
            [get(
                list_of_instance,
                doc("List the indicator values of one VNF instance (SOL013 filter, paging)")
                    .returns("[VnfIndicator]"),
            )],
        ))
        .routes(route(
            "/indicators/{vnfInstanceId}/{indicatorId}",
            Scope::INSTANCE,
            [get(
                show,
                doc("Read one indicator value of a VNF instance").returns("VnfIndicator"),
            )],
        ))
        .merge(crate::subscriptions::routes::<Ind>(FAMILY));
    versioned_routes(FAMILY, routes)
}

/// VNF indicator subscriptions (`/vnfind/v1` only).
pub(crate) struct Ind;

impl Kind for Ind {
    type Resource = VnfIndicatorSubscription;
    type Request = VnfIndicatorSubscriptionRequest;
    const REQUEST_SCHEMA: Option<SchemaId> = None;
    const DOCS: SubscriptionDocs = SubscriptionDocs {
        list: doc("List VNF indicator subscriptions").returns("[VnfIndicatorSubscription]"),
        create: doc("Subscribe to VNF indicator value changes")
            .body("VnfIndicatorSubscriptionRequest")
            .status(201)
            .returns("VnfIndicatorSubscription"),
        read: doc("Read a VNF indicator subscription").returns("VnfIndicatorSubscription"),
        delete: doc("Delete a VNF indicator subscription").status(204),
    };

    fn schema() -> &'static Value {
        static S: OnceLock<Value> = OnceLock::new();
        S.get_or_init(|| {
            serde_json::to_value(schemars::schema_for!(VnfIndicatorSubscription))
                .unwrap_or_default()
        })
    }
    fn allow_duplicates(_: &AppState) -> bool {
        false
    }
    fn id(sub: &VnfIndicatorSubscription) -> &SubscriptionId {
        &sub.id
    }
    async fn create(
        state: &AppState,
        _family: ApiFamily,
        request: &VnfIndicatorSubscriptionRequest,
        options: &CreateOptions,
    ) -> Result<Created<VnfIndicatorSubscription>, LcmError> {
        state
            .indicators
            .subscriptions()
            .create(request, options)
            .await
    }
    async fn get(
        state: &AppState,
        id: &SubscriptionId,
    ) -> Result<VnfIndicatorSubscription, LcmError> {
        state.indicators.subscriptions().get(id).await
    }
    async fn list(
        state: &AppState,
        scope: &ProjectScope,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<VnfIndicatorSubscription>, LcmError> {
        state
            .indicators
            .subscriptions()
            .list(scope, after, limit)
            .await
    }
    async fn delete(state: &AppState, id: &SubscriptionId) -> Result<(), LcmError> {
        state.indicators.subscriptions().delete(id).await
    }
}

fn indicator_schema() -> &'static Value {
    static S: OnceLock<Value> = OnceLock::new();
    S.get_or_init(|| serde_json::to_value(schemars::schema_for!(VnfIndicator)).unwrap_or_default())
}

fn to_value(indicator: &VnfIndicator) -> ApiResult<Value> {
    serde_json::to_value(indicator)
        .map_err(|e| ApiError::Internal(format!("VNF indicator does not serialize: {e}")))
}

async fn list(
    state: Arc<AppState>,
    tenancy: Tenancy,
    instance: Option<VnfInstanceId>,
    uri: &axum::http::Uri,
    headers: &HeaderMap,
) -> ApiResult<Response> {
    require_accept(headers, &["application/json"])?;
    let list = ListRequest::parse(uri, indicator_schema())?
        .paged(state.options.page_sizes.of(Listed::Indicators));
    let limit = list.page_size();
    list.run(
        |after| {
            let state = state.clone();
            let scope = tenancy.scope.clone();
            let instance = instance.clone();
            async move {
                let page = state
                    .indicators
                    .list(&scope, instance.as_ref(), after.as_deref(), limit)
                    .await?;
                Ok(Page {
                    items: page
                        .items
                        .iter()
                        .map(to_value)
                        .collect::<ApiResult<Vec<_>>>()?,
                    next: page.next,
                })
            }
        },
        &[],
    )
    .await
}

/// `GET /indicators`.
async fn list_all(
    State(state): State<Arc<AppState>>,
    tenancy: Tenancy,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> ApiResult<Response> {
    list(state, tenancy, None, &uri, &headers).await
}

/// `GET /indicators/{vnfInstanceId}`.
async fn list_of_instance(
    State(state): State<Arc<AppState>>,
    tenancy: Tenancy,
    Path(instance): Path<String>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let instance = VnfInstanceId::new(instance);
    list(state, tenancy, Some(instance), &uri, &headers).await
}

/// `GET /indicators/{vnfInstanceId}/{indicatorId}`.
async fn show(
    State(state): State<Arc<AppState>>,
    Path((instance, indicator)): Path<(String, String)>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/json"])?;
    let value = state
        .indicators
        .get(&VnfInstanceId::new(instance), &indicator)
        .await?;
    Ok(json_response(StatusCode::OK, &to_value(&value)?))
}

/// The routes under `/vnfm/v1` that set indicator values.
pub(crate) fn push_routes() -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::new().routes(route(
        "/indicators/{vnfInstanceId}/{indicatorId}",
        Scope::INSTANCE,
        [put(
            push,
            doc("Set the value of an indicator the instance's VNFD declares (not ETSI: for an EM or a script); a change is notified")
                .returns("VnfIndicator"),
        )],
    ))
}

/// Body of `PUT /vnfm/v1/indicators/{vnfInstanceId}/{indicatorId}`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct IndicatorValue {
    /// The new value, in the format the VNFD defines.
    value: Value,
}

/// `PUT /vnfm/v1/indicators/{vnfInstanceId}/{indicatorId}`: sets the value; answers the
/// indicator (200), 404 for an unknown instance, 422 when the instance is not instantiated or
/// its VNFD declares no such indicator.
async fn push(
    State(state): State<Arc<AppState>>,
    Path((instance, indicator)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/json"])?;
    let request: IndicatorValue = json_body(&headers, &body, None)?;
    if request.value.is_null() {
        return Err(ApiError::invalid(
            "/value",
            "a value is required (not null)",
        ));
    }
    let instance = VnfInstanceId::new(instance);
    state
        .indicators
        .set(&instance, &indicator, request.value)
        .await?;
    let value = state.indicators.get(&instance, &indicator).await?;
    Ok(json_response(StatusCode::OK, &to_value(&value)?))
}
