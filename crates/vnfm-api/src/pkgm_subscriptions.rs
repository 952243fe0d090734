//! `subscriptions` of the VNF package management APIs (SOL003 v2.6.1 clauses 10.4.7 and
//! 10.4.8; the same resources under `/vnfpkgm/v2`).
//!
//! One store of subscriptions serves both versions: a subscription reads with links into the
//! version it is read through, and where it was created decides the links of its
//! notifications. `authentication` is write-only.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{OriginalUri, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::Value;
use vnfm_lcm::subscriptions::CreateOptions;
use vnfm_store::Page;
use vnfm_types::{PkgmSubscription, PkgmSubscriptionRequest, SubscriptionId};

use crate::error::ApiResult;
use crate::listing::ListRequest;
use crate::state::AppState;
use crate::subscriptions::{created_response, versioned_view};
use crate::util::{json_body, json_response, require_accept};
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
        serde_json::to_value(schemars::schema_for!(PkgmSubscription)).unwrap_or_default()
    })
}

fn view(family: ApiFamily, sub: &PkgmSubscription) -> ApiResult<Value> {
    versioned_view(sub, family, (ApiFamily::PkgmV1, ApiFamily::PkgmV2))
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
                    .pkgm_subscriptions
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
    let req: PkgmSubscriptionRequest = json_body(&headers, &body, None)?;
    let options = CreateOptions {
        verify_callback: state.options.verify_callbacks,
        verify_timeout: Duration::from_secs(5),
        // Package management subscriptions are never duplicated (303 See Other).
        allow_duplicates: false,
    };
    let subscriptions = if family == ApiFamily::PkgmV1 {
        &state.pkgm_subscriptions_v1
    } else {
        &state.pkgm_subscriptions
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
    let sub = state
        .pkgm_subscriptions
        .get(&SubscriptionId::new(id))
        .await?;
    Ok(json_response(StatusCode::OK, &view(family, &sub)?))
}

async fn delete(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> ApiResult<Response> {
    state
        .pkgm_subscriptions
        .delete(&SubscriptionId::new(id))
        .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
