//! The SOL003 REST API of the VNF manager, as an axum [`Router`] over the lifecycle core.
//!
//! | prefix | what |
//! |---|---|
//! | `/vnflcm/v2` | VNF lifecycle management, SOL003 v3.3.1 (API version 2.0.0) |
//! | `/vnflcm/v1` | the same in the SOL003 v2.6.1 shapes (API version 1.3.0) |
//! | `/vnfpkgm/v2`, `/vnfpkgm/v1` | VNF package management (SOL003 clause 10, SOL005 style), with its subscriptions and notifications |
//! | `/vnfind/v1` | VNF indicators, SOL003 v2.6.1: indicator values per instance (from the VNFD's PromQL, or pushed), indicator subscriptions |
//! | `/vnffm/v1` | VNF fault management, SOL003 v2.6.1: alarms, FM subscriptions; `POST /vnffm/v1/alertmanager` receives Alertmanager webhooks |
//! | `/vnfpm/v2` | VNF performance management, SOL003 v3.3.1: PM jobs and their reports, thresholds, PM subscriptions (the v2.6.1 shape) |
//! | `/vnfpm/v1` | VNF performance management, SOL003 v2.6.1: the same PM jobs, reports, thresholds and subscriptions, created without object type or callback |
//! | `/vnfm/v1/vims` | the VIM registry (secrets are write-only) |
//! | `/v1.0/vims` | the same registry through Tacker's VIM API (`openstack vim ...`) |
//! | `/oauth2/token` | OAuth 2.0 client credentials token endpoint |
//! | `/openapi.json`, `/healthz`, `/readyz`, `/metrics` | operations |
//!
//! Every endpoint except the token endpoint, `/healthz` and `/readyz` requires
//! authentication ([`auth`]: an OAuth 2.0 bearer token, or a Keystone `X-Auth-Token` when a
//! validator is configured). Errors are `application/problem+json` ProblemDetails
//! ([`ApiError`]). Lists follow SOL013: attribute filters, attribute selectors and paging with
//! `nextpage_opaque_marker` ([`listing`]).
//!
//! [`router`] builds the router from an [`AppState`] without a socket (tests call it with
//! `tower::ServiceExt::oneshot`); [`server::serve`] runs it.

mod admission;
pub mod auth;
mod dead_letters;
pub mod error;
mod fm;
mod indicators;
mod lcm_v1;
mod lcm_v2;
mod lcm_views;
pub mod limits;
mod links;
pub mod listing;
pub mod metrics;
pub mod openapi;
mod ops;
pub mod packages;
mod parse_errors;
mod pm;
mod precondition;
mod preview;
mod progress;
#[cfg(test)]
mod pushdown_tests;
pub mod scope;
pub mod server;
pub mod state;
mod subscriptions;
mod tacker_vims;
mod test_vim;
mod test_vim_kind;
mod util;
pub mod version;
mod vim_nulls;
mod vims;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::routing::{get, post};
use tower_http::timeout::RequestBodyTimeoutLayer;

pub use error::{ApiError, ApiResult};
pub use limits::{AuthBackoff, ServerLimits};
pub use server::{ServeOptions, serve};
pub use state::{AppState, StateOptions};
pub use test_vim::test_vim_driver;
pub use test_vim_kind::test_vim_kind;

/// The whole API.
pub fn router(state: Arc<AppState>) -> Router {
    let max_package = state.options.package_limits.max_package_bytes;
    let authenticated = Router::new()
        .nest("/vnflcm/v2", lcm_v2::routes())
        .nest("/vnflcm/v1", lcm_v1::routes())
        .route("/vnflcm/api_versions", get(version::lcm_api_versions))
        .nest(
            "/vnfpkgm/v2",
            packages::routes(version::ApiFamily::PkgmV2, max_package),
        )
        .nest(
            "/vnfpkgm/v1",
            packages::routes(version::ApiFamily::PkgmV1, max_package),
        )
        .route("/vnfpkgm/api_versions", get(version::pkgm_api_versions))
        .nest(
            "/vnfm/v1",
            vims::routes()
                .merge(progress::routes())
                .merge(indicators::push_routes())
                .merge(dead_letters::routes()),
        )
        .nest("/v1.0", tacker_vims::routes())
        .nest("/vnffm/v1", fm::routes())
        .route("/vnffm/api_versions", get(version::fm_api_versions))
        .nest("/vnfpm/v2", pm::routes())
        .nest("/vnfpm/v1", pm::routes_v1())
        .route("/vnfpm/api_versions", get(version::pm_api_versions))
        .nest("/vnfind/v1", indicators::routes())
        .route("/vnfind/api_versions", get(version::ind_api_versions))
        .route("/openapi.json", get(openapi::serve_document))
        .route("/metrics", get(ops::metrics))
        .route_layer(middleware::from_fn_with_state(state.clone(), scope::guard))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            links::absolute_links,
        ))
        .layer(middleware::from_fn_with_state(
            state.auth.clone(),
            auth::require_auth,
        ))
        .layer(DefaultBodyLimit::max(state.options.max_json_body));
    Router::new()
        .merge(authenticated)
        .route(
            "/oauth2/token",
            post(auth::token_endpoint)
                .layer(DefaultBodyLimit::max(state.options.limits.max_token_body))
                .with_state(state.auth.clone()),
        )
        // Authenticated by the handler: the server's credentials or Alertmanager's token.
        .route(
            "/vnffm/v1/alertmanager",
            post(fm::alertmanager_webhook).layer(DefaultBodyLimit::max(
                vnfm_prometheus::DEFAULT_WEBHOOK_LIMIT,
            )),
        )
        .route("/healthz", get(ops::healthz))
        .route("/readyz", get(ops::readyz))
        .method_not_allowed_fallback(util::method_not_allowed)
        .fallback(util::not_found)
        .layer(RequestBodyTimeoutLayer::new(
            state.options.limits.body_read_timeout,
        ))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            limits::check_length,
        ))
        .layer(middleware::from_fn(limits::check_head))
        .layer(middleware::from_fn(error::negotiate_problem_type))
        .layer(middleware::from_fn_with_state(state.clone(), ops::observe))
        .with_state(state)
}
