//! `subscriptions` of the VNF LCM APIs (SOL003 clause 5.4.18 and 5.4.19).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{OriginalUri, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Serialize;
use serde_json::Value;
use vnfm_lcm::subscriptions::{CreateOptions, Created};
use vnfm_schemas::SchemaId;
use vnfm_store::Page;
use vnfm_types::{LccnSubscription, LccnSubscriptionRequest, SubscriptionId};

use crate::error::{ApiError, ApiResult};
use crate::listing::ListRequest;
use crate::state::AppState;
use crate::util::{json_body, json_response, require_accept, with_location};
use crate::version::ApiFamily;

pub(crate) fn routes(family: ApiFamily) -> Router<Arc<AppState>> {
    Router::new()
        .route(
            "/subscriptions",
            get(move |s, u, h| list(family, s, u, h)).post(move |s, h, b| create(family, s, h, b)),
        )
        .route(
            "/subscriptions/{id}",
            get(move |s, p, h| show(family, s, p, h)).delete(delete),
        )
}

fn schema() -> &'static Value {
    static S: OnceLock<Value> = OnceLock::new();
    S.get_or_init(|| {
        serde_json::to_value(schemars::schema_for!(LccnSubscription)).unwrap_or_default()
    })
}

fn view(family: ApiFamily, sub: &LccnSubscription) -> ApiResult<Value> {
    versioned_view(sub, family, (ApiFamily::LcmV1, ApiFamily::LcmV2))
}

/// The JSON of a subscription read through `family`, one of the two `versions` (v1, v2) that
/// share it: its links point into the version read.
pub(crate) fn versioned_view<S: Serialize>(
    sub: &S,
    family: ApiFamily,
    (v1, v2): (ApiFamily, ApiFamily),
) -> ApiResult<Value> {
    let mut doc = serde_json::to_value(sub)
        .map_err(|e| ApiError::Internal(format!("subscription does not serialize: {e}")))?;
    let (from, to) = if family == v1 { (v2, v1) } else { (v1, v2) };
    crate::lcm_v1::relink_between(&mut doc, from.prefix(), to.prefix());
    Ok(doc)
}

/// `201 Created` with the new subscription, or `303 See Other` to the existing one; either
/// with its `Location` under `family`.
pub(crate) fn created_response<S>(
    created: Created<S>,
    family: ApiFamily,
    origin: &str,
    id: impl Fn(&S) -> &SubscriptionId,
    view: impl Fn(&S) -> ApiResult<Value>,
) -> ApiResult<Response> {
    match created {
        Created::New(sub) => {
            let loc = location(family, origin, id(&sub));
            Ok(with_location(
                json_response(StatusCode::CREATED, &view(&sub)?),
                &loc,
            ))
        }
        Created::Existing(sub) => {
            let loc = location(family, origin, id(&sub));
            Ok(with_location(StatusCode::SEE_OTHER.into_response(), &loc))
        }
    }
}

fn location(family: ApiFamily, origin: &str, id: &SubscriptionId) -> String {
    format!("{}{}/subscriptions/{id}", origin, family.prefix())
}

async fn list(
    family: ApiFamily,
    State(state): State<Arc<AppState>>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/json"])?;
    let list = ListRequest::parse(&uri, schema())?;
    list.run(
        |after| {
            let state = state.clone();
            async move {
                let page = state
                    .subscriptions
                    .list(after.as_deref(), crate::listing::PAGE_SIZE)
                    .await?;
                Ok(Page {
                    items: page
                        .items
                        .iter()
                        .map(|s| view(family, s))
                        .collect::<ApiResult<Vec<_>>>()?,
                    next: page.next,
                })
            }
        },
        &[],
    )
    .await
}

async fn create(
    family: ApiFamily,
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/json"])?;
    let req: LccnSubscriptionRequest =
        json_body(&headers, &body, Some(SchemaId::LccnSubscriptionRequest))?;
    let options = CreateOptions {
        verify_callback: state.options.verify_callbacks,
        verify_timeout: Duration::from_secs(5),
        allow_duplicates: state.options.allow_duplicate_lcm_subscriptions,
    };
    // Where a subscription was created decides the shape of its notifications.
    let subscriptions = if family == ApiFamily::LcmV1 {
        &state.subscriptions_v1
    } else {
        &state.subscriptions
    };
    created_response(
        subscriptions.create(&req, &options).await?,
        family,
        &state.origin(&headers),
        |sub| &sub.id,
        |sub| view(family, sub),
    )
}

async fn show(
    family: ApiFamily,
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/json"])?;
    let sub = state.subscriptions.get(&SubscriptionId::new(id)).await?;
    Ok(json_response(StatusCode::OK, &view(family, &sub)?))
}

async fn delete(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> ApiResult<Response> {
    state.subscriptions.delete(&SubscriptionId::new(id)).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
