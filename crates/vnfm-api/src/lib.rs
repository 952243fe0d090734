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
//! | `/alert`, `/alert/auto_scaling`, `/alert/auto_healing`, `/pm_event`, `/pm_threshold` | Tacker's Prometheus-plugin receivers: alarms, automatic SCALE and HEAL, pushed PM values |
//! | `/oauth2/token` | OAuth 2.0 client credentials token endpoint |
//! | `/openapi.json`, `/healthz`, `/readyz`, `/metrics` | operations |
//!
//! Every endpoint except the token endpoint, `/healthz` and `/readyz` requires
//! authentication ([`auth`]: an OAuth 2.0 bearer token, a Keystone `X-Auth-Token` when a
//! validator is configured, or a mapped TLS client certificate: [`mtls`]). Errors are
//! `application/problem+json` ProblemDetails ([`ApiError`]). Lists follow SOL013: attribute
//! filters, attribute selectors and paging with `nextpage_opaque_marker` ([`listing`]).
//!
//! [`router`] builds the router from an [`AppState`] without a socket (tests call it with
//! `tower::ServiceExt::oneshot`); [`server::serve`] runs it.

mod admission;
mod alert_receivers;
pub mod auth;
mod connection;
mod dead_letters;
mod edge;
mod enhanced_policy;
pub mod error;
mod fm;
pub mod idempotency;
mod indicators;
mod journal_views;
mod lcm_v1;
mod lcm_v2;
mod lcm_views;
mod limit_settings;
pub mod limits;
mod links;
pub mod listing;
pub mod metrics;
pub mod mtls;
mod op_occs;
pub mod openapi;
mod ops;
pub mod packages;
mod parse_errors;
mod pm;
mod precondition;
mod preview;
#[cfg(test)]
mod pushdown_tests;
mod route_facts;
#[cfg(test)]
mod route_facts_tests;
mod route_table;
pub mod scope;
pub mod server;
pub mod state;
mod subscriptions;
mod tacker_vims;
mod test_vim;
mod test_vim_kind;
pub mod trace_context;
mod util;
pub mod version;
mod vims;

use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::middleware;
use tower_http::timeout::RequestBodyTimeoutLayer;
use utoipa_axum::router::OpenApiRouter;

use route_table::{Scope, doc, get, post, route};

pub use error::{ApiError, ApiResult};
pub use limits::{AuthBackoff, ServerLimits};
pub use server::{ServeOptions, serve};
pub use state::{AppState, StateOptions};
pub use test_vim::{STALL_AFTER_COMMIT_ENV, test_vim_driver};
pub use test_vim_kind::test_vim_kind;

/// The body limits the route table applies to single routes.
#[derive(Debug, Clone, Copy)]
struct RouteLimits {
    /// `PUT .../package_content`.
    max_package_bytes: usize,
    /// `POST /oauth2/token`.
    max_token_body: usize,
}

impl RouteLimits {
    fn of(state: &AppState) -> Self {
        Self {
            max_package_bytes: state.options.package_limits.max_package_bytes,
            max_token_body: state.options.limits.max_token_body,
        }
    }

    /// Limits for a route table that serves no request (its document, its route facts).
    fn unlimited() -> Self {
        Self {
            max_package_bytes: 0,
            max_token_body: 0,
        }
    }
}

/// `GET <api>/api_versions`: the major versions of one API.
fn versions<H, T>(
    path: &str,
    handler: H,
    summary: &'static str,
) -> utoipa_axum::router::UtoipaMethodRouter<Arc<AppState>>
where
    H: axum::handler::Handler<T, Arc<AppState>>,
    T: 'static,
{
    route(
        path,
        Scope::Unnamed,
        [get(handler, doc(summary).returns("ApiVersionInformation"))],
    )
}

/// The routes behind the server's authentication.
fn authenticated_routes(limits: RouteLimits) -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::new()
        .nest("/vnflcm/v2", lcm_v2::routes())
        .nest("/vnflcm/v1", lcm_v1::routes())
        .routes(versions(
            "/vnflcm/api_versions",
            version::lcm_api_versions,
            "API versions of VNF LCM",
        ))
        .nest(
            "/vnfpkgm/v2",
            packages::routes(version::ApiFamily::PkgmV2, limits.max_package_bytes),
        )
        .nest(
            "/vnfpkgm/v1",
            packages::routes(version::ApiFamily::PkgmV1, limits.max_package_bytes),
        )
        .routes(versions(
            "/vnfpkgm/api_versions",
            version::pkgm_api_versions,
            "API versions of VNF package management",
        ))
        .nest(
            "/vnfm/v1",
            vims::routes()
                .merge(journal_views::routes())
                .merge(indicators::push_routes())
                .merge(dead_letters::routes()),
        )
        .nest("/v1.0", tacker_vims::routes())
        .nest("/vnffm/v1", fm::routes())
        .routes(versions(
            "/vnffm/api_versions",
            version::fm_api_versions,
            "API versions of VNF fault management",
        ))
        .nest("/vnfpm/v2", pm::routes())
        .nest("/vnfpm/v1", pm::routes_v1())
        .routes(versions(
            "/vnfpm/api_versions",
            version::pm_api_versions,
            "API versions of VNF performance management",
        ))
        .nest("/vnfind/v1", indicators::routes())
        .routes(versions(
            "/vnfind/api_versions",
            version::ind_api_versions,
            "API versions of VNF indicators",
        ))
        .routes(route(
            "/openapi.json",
            Scope::Unnamed,
            [get(openapi::serve_document, doc("This document"))],
        ))
        .routes(route(
            "/metrics",
            Scope::Unnamed,
            [get(ops::metrics, doc("Prometheus metrics"))],
        ))
}

/// The routes that authenticate their requests themselves (the token endpoint, the
/// Alertmanager webhook) or need no authentication (health).
fn public_routes(limits: RouteLimits) -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::new()
        .routes(route(
            "/oauth2/token",
            Scope::Public,
            [post(
                |State(state): State<Arc<AppState>>, extensions, headers, form| {
                    auth::token_endpoint(State(state.auth.clone()), extensions, headers, form)
                },
                doc("OAuth 2.0 client credentials token"),
            )
            .map(|r| r.layer(DefaultBodyLimit::max(limits.max_token_body)))],
        ))
        .routes(route(
            "/healthz",
            Scope::Public,
            [get(ops::healthz, doc("Liveness"))],
        ))
        .routes(route(
            "/readyz",
            Scope::Public,
            [get(ops::readyz, doc("Readiness"))],
        ))
        // Authenticated by the handler: the server's credentials or Alertmanager's token.
        .merge(route_table::secured(OpenApiRouter::new().routes(route(
            "/vnffm/v1/alertmanager",
            Scope::Public,
            [post(
                fm::alertmanager_webhook,
                doc("Alertmanager webhook receiver (payload version 4): alerts raise and clear alarms, or ask for automatic scaling")
                    .status(204),
            )
            .map(|r| r.layer(DefaultBodyLimit::max(vnfm_prometheus::DEFAULT_WEBHOOK_LIMIT)))],
        ))))
        // Tacker's Prometheus-plugin endpoints, authenticated as the Alertmanager receiver.
        .merge(route_table::secured(alert_receivers::routes()))
}

/// The operations of the route table as declared, each with its route facts
/// (`route_facts`), under its full path template.
pub(crate) fn declared_operations() -> utoipa::openapi::OpenApi {
    let limits = RouteLimits::unlimited();
    route_table::secured(authenticated_routes(limits))
        .merge(public_routes(limits))
        .into_openapi()
}

/// The operations of the route table, as the OpenAPI document lists them (without schemas).
pub(crate) fn documented_operations() -> utoipa::openapi::OpenApi {
    let mut api = declared_operations();
    route_table::finish_operations(&mut api);
    api
}

/// The whole API.
pub fn router(state: Arc<AppState>) -> Router {
    let limits = RouteLimits::of(&state);
    let (authenticated, authenticated_api) = authenticated_routes(limits).split_for_parts();
    let (public, public_api) = public_routes(limits).split_for_parts();
    // The same table for every router of the state: a second router leaves the first's.
    let _ = state.routes.set(route_facts::RouteTable::of([
        &authenticated_api,
        &public_api,
    ]));
    // The test VIM is a layer of its own, added only when it is enabled.
    let authenticated = if state.options.enable_test_vim {
        authenticated
            .route_layer(middleware::from_fn(test_vim::stall_after_commit))
            .route_layer(middleware::from_fn_with_state(
                state.clone(),
                test_vim::check_task_requests,
            ))
    } else {
        authenticated
    };
    let authenticated = authenticated
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            idempotency::layer,
        ))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            enhanced_policy::layer,
        ))
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
    let routed = Router::new()
        .merge(authenticated)
        .merge(public)
        .method_not_allowed_fallback(util::method_not_allowed)
        .fallback(util::not_found)
        .layer(RequestBodyTimeoutLayer::new(
            state.options.limits.body_read_timeout,
        ))
        .layer(middleware::from_fn_with_state(state.clone(), edge::edge))
        .with_state(state.clone());
    // axum sets `Allow` on a 405 outside every layer of the router that routed it: the
    // answer is completed one level up.
    Router::new()
        .fallback_service(tower::service_fn(move |request: axum::extract::Request| {
            tower::ServiceExt::oneshot(Router::clone(&routed), request)
        }))
        .layer(middleware::from_fn(util::complete_method_not_allowed))
}
