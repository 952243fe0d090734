//! Project scoping of Keystone callers, as Tacker's enhanced policy does: a caller that does
//! not see every project (a Keystone token without an admin role,
//! `vnfm serve --keystone-admin-roles`) sees, lists and changes only the resources of its
//! token's project.
//!
//! - **Creation** records the project ([`Tenancy::project`]) on the instance or package, and
//!   [`Tenancy::subscriber_project`] on a subscription; op-occs and alarms belong to their
//!   instance's project (the store copies it).
//! - **Notifications** go to the subscriptions of the project of what they are about, and to
//!   those of no project (`vnfm_lcm::subscriptions::Routing`): a subscription created by a
//!   caller that sees every project belongs to no project and receives every project's
//!   notifications, as that caller's lists show every project's resources.
//! - **Lists** carry the caller's [`ProjectScope`] down to the store, where it is a predicate of
//!   the query: pages stay full and the paging cursor exact.
//! - **Every request naming one resource** (`/vnf_instances/{id}/...`,
//!   `/vnf_lcm_op_occs/{id}/...`, `/vnf_packages/{id}/...`, `/onboarded_vnf_packages/{vnfdId}/...`,
//!   `/subscriptions/{id}`, `/alarms/{id}`) goes through `guard` first: a resource of another
//!   project (or of none) answers the same `404` as an id that does not exist, which the guard
//!   answers too, so ids do not leak, and nothing of the request is carried out. Each route
//!   declares in the route table which resource it names and by which path parameter
//!   (`crate::route_facts::Scope`).
//!
//! Performance management (`/vnfpm`: PM jobs and thresholds name instances of any project)
//! records no project yet, so a caller limited to one project is refused it (`403`).
//!
//! Callers authenticated by an external OAuth 2.0 authorization server (`vnfm serve
//! --oauth-issuer`) are scoped the same way, by the project and roles their token carries.
//!
//! OAuth 2.0 and Basic clients, and Keystone callers with an admin role, see every project
//! ([`ProjectScope::All`]); what they create belongs to no project (to the token's project for
//! a Keystone admin, except its subscriptions), and resources of no project (among them every
//! one created before the store's migration 11) are seen only by such callers.

use std::sync::Arc;

use axum::extract::{FromRequestParts, RawPathParams, Request, State};
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use vnfm_lcm::LcmError;
use vnfm_store::{ProjectScope, ScopedKind};

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::route_table::{Resource, Scope};
use crate::state::AppState;

/// What a request may see and the project what it creates belongs to, from its [`Caller`]
/// (everything, and no project, when the request carries none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tenancy {
    /// The resources the caller sees.
    pub scope: ProjectScope,
    /// The project of what the caller creates: its Keystone token's project, if any.
    pub project: Option<String>,
}

impl Tenancy {
    /// The tenancy of `caller`.
    pub fn of(caller: Option<&Caller>) -> Tenancy {
        let Some(caller) = caller else {
            return Tenancy::default();
        };
        let project = caller.keystone.as_ref().and_then(|k| k.project_id.clone());
        Tenancy {
            scope: ProjectScope::of(caller.all_projects, project.as_deref()),
            project,
        }
    }
}

impl Tenancy {
    /// The project of a subscription the caller creates, which is also the project whose
    /// notifications it receives: none for a caller that sees every project (its
    /// subscription receives the notifications about every resource), its token's project
    /// for the others. A caller that sees no project (a non-admin token scoped to none) may
    /// not subscribe: its subscription would belong to no project, whose notifications are
    /// every project's.
    pub fn subscriber_project(&self) -> ApiResult<Option<String>> {
        match &self.scope {
            ProjectScope::All => Ok(None),
            ProjectScope::Project(p) => Ok(Some(p.clone())),
            ProjectScope::Nothing => Err(ApiError::Forbidden(
                "a token scoped to no project may not subscribe: a subscription receives the notifications of its creator's project (use a token scoped to a project, or one with an admin role for every project's)".into(),
            )),
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Tenancy {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Tenancy::of(parts.extensions.get::<Caller>()))
    }
}

/// The answer to a resource that does not exist, word for word what its handler answers, so
/// that a resource of another project cannot be told from a missing one.
fn not_found(resource: Resource, id: &str) -> ApiError {
    let kind = match resource {
        Resource::Package => {
            return ApiError::NotFound(format!(
                "VNF package {} does not exist",
                crate::util::cut(id, 100)
            ));
        }
        Resource::PackageByVnfd => {
            return ApiError::NotFound(format!(
                "no onboarded VNF package has vnfdId {}",
                crate::util::cut(id, 100)
            ));
        }
        Resource::Instance => "VNF instance",
        Resource::OpOcc => "operation occurrence",
        Resource::Subscription => "subscription",
        Resource::Alarm => "alarm",
    };
    LcmError::NotFound {
        kind,
        id: id.to_owned(),
    }
    .into()
}

/// Whether the resource the request names exists and is in `scope`.
async fn visible(
    state: &AppState,
    scope: &ProjectScope,
    resource: Resource,
    id: &str,
) -> ApiResult<bool> {
    let kind = match resource {
        Resource::Instance => ScopedKind::Instance,
        Resource::OpOcc => ScopedKind::OpOcc,
        Resource::Package => ScopedKind::Package,
        Resource::Subscription => ScopedKind::Subscription,
        Resource::Alarm => ScopedKind::Alarm,
        Resource::PackageByVnfd => {
            let package = state.store.package_by_vnfd(id).await?;
            return Ok(package.is_some_and(|(p, _)| scope.admits(p.project.as_deref())));
        }
    };
    let project = state.store.project_of(kind, id).await?;
    Ok(project.is_some_and(|p| scope.admits(p.as_deref())))
}

/// The value of the path parameter `param` of the request `parts` matched, percent-decoded by
/// the router; `None` when it is not UTF-8 (the handler's extractor refuses it).
async fn path_param(parts: &mut Parts, param: &str) -> Option<String> {
    let params = RawPathParams::from_request_parts(parts, &()).await.ok()?;
    params
        .iter()
        .find(|(name, _)| *name == param)
        .map(|(_, value)| value.to_owned())
}

/// Middleware on the authenticated routes: refuses with `404` a request naming one resource
/// (its route's [`Scope`], `crate::route_facts`) that the caller's project does not own, before
/// its handler runs. A resource that does not exist is refused here too, with the same answer,
/// so that nothing the handler checks before its lookup (the body, the `Accept` header) tells
/// the two apart. Callers that see every project pass without a lookup, to the handlers' own
/// answers; the others are refused the routes of resources that record no project yet.
pub(crate) async fn guard(
    State(state): State<Arc<AppState>>,
    tenancy: Tenancy,
    request: Request,
    next: Next,
) -> Response {
    if tenancy.scope == ProjectScope::All {
        return next.run(request).await;
    }
    let Some(route) = state.route_of(request.extensions()) else {
        return next.run(request).await;
    };
    let (resource, param) = match &route.scope {
        Scope::Names { resource, param } => (*resource, param),
        Scope::EveryProject => {
            return ApiError::Forbidden(
                "performance management (/vnfpm) is not divided by project yet: it is open to tokens with an admin role (vnfm serve --keystone-admin-roles) and to OAuth 2.0 clients only".into(),
            )
            .into_response();
        }
        Scope::Unnamed | Scope::Public => return next.run(request).await,
    };
    let (mut parts, body) = request.into_parts();
    let Some(id) = path_param(&mut parts, param).await else {
        return next.run(Request::from_parts(parts, body)).await;
    };
    match visible(&state, &tenancy.scope, resource, &id).await {
        Ok(true) => next.run(Request::from_parts(parts, body)).await,
        Ok(false) => not_found(resource, &id).into_response(),
        Err(e) => e.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::KeystoneCaller;

    #[test]
    fn routes_name_the_resource_after_its_collection() {
        let cases = [
            (
                "/vnflcm/v2/vnf_instances/{vnfInstanceId}/instantiate",
                Scope::INSTANCE,
            ),
            (
                "/vnflcm/v1/vnf_lcm_op_occs/{vnfLcmOpOccId}/retry",
                Scope::OP_OCC,
            ),
            (
                "/vnfm/v1/vnf_lcm_op_occs/{vnfLcmOpOccId}/progress",
                Scope::OP_OCC,
            ),
            (
                "/vnfpkgm/v1/vnf_packages/{vnfPkgId}/artifacts/{*artifactPath}",
                Scope::PACKAGE,
            ),
            (
                "/vnfpkgm/v2/onboarded_vnf_packages/{vnfdId}/vnfd",
                Scope::PACKAGE_BY_VNFD,
            ),
            (
                "/vnffm/v1/subscriptions/{subscriptionId}",
                Scope::SUBSCRIPTION,
            ),
            ("/vnffm/v1/alarms/{alarmId}", Scope::ALARM),
            (
                "/vnfind/v1/indicators/{vnfInstanceId}/{indicatorId}",
                Scope::INSTANCE,
            ),
            (
                "/vnfm/v1/indicators/{vnfInstanceId}/{indicatorId}",
                Scope::INSTANCE,
            ),
            ("/vnfind/v1/indicators", Scope::Unnamed),
            ("/vnflcm/v2/vnf_instances", Scope::Unnamed),
            ("/vnfm/v1/vims/{vimId}", Scope::Unnamed),
            ("/vnfm/v1/notifications/dead/{id}", Scope::Unnamed),
        ];
        for (template, want) in cases {
            let route = crate::route_facts_tests::declared(template);
            assert_eq!(route.map(|r| &r.scope), Some(&want), "{template}");
        }
    }

    #[test]
    fn performance_management_is_unscoped_but_its_versions() {
        let scope =
            |template| crate::route_facts_tests::declared(template).map(|r| r.scope.clone());
        for template in [
            "/vnfpm/v2/pm_jobs",
            "/vnfpm/v2/thresholds/{thresholdId}",
            "/vnfpm/v2/subscriptions",
            "/vnfpm/v1/subscriptions/{subscriptionId}",
            "/vnfpm/v1/pm_jobs/{pmJobId}/reports/{reportId}",
        ] {
            assert_eq!(scope(template), Some(Scope::EveryProject), "{template}");
        }
        for template in ["/vnfpm/v2/api_versions", "/vnfpm/api_versions"] {
            assert_eq!(scope(template), Some(Scope::Unnamed), "{template}");
        }
    }

    #[test]
    fn tenancy_follows_the_caller() {
        assert_eq!(Tenancy::of(None).scope, ProjectScope::All);
        assert_eq!(Tenancy::of(Some(&Caller::client("c"))).project, None);
        let keystone = |all, project: Option<&str>| Caller {
            client_id: "u".into(),
            keystone: Some(KeystoneCaller {
                user_id: "u".into(),
                user_name: "user".into(),
                project_id: project.map(str::to_owned),
                project_name: None,
                roles: vec!["member".into()],
            }),
            may_write: true,
            all_projects: all,
            oauth_issuer: None,
            certificate: None,
        };
        let member = Tenancy::of(Some(&keystone(false, Some("p1"))));
        assert_eq!(member.scope, ProjectScope::Project("p1".into()));
        assert_eq!(member.project.as_deref(), Some("p1"));
        let admin = Tenancy::of(Some(&keystone(true, Some("p1"))));
        assert_eq!(admin.scope, ProjectScope::All);
        assert_eq!(admin.project.as_deref(), Some("p1"));
        let unscoped = Tenancy::of(Some(&keystone(false, None)));
        assert_eq!(unscoped.scope, ProjectScope::Nothing);
    }

    /// Issue 67: a member's subscription is its project's, and receives that project's
    /// notifications only; an admin's (or an OAuth 2.0 client's) is of no project and
    /// receives every project's; a caller that sees no project cannot subscribe.
    #[test]
    fn a_subscription_belongs_to_the_project_whose_notifications_it_receives() {
        let keystone = |all, project: Option<&str>| Caller {
            client_id: "u".into(),
            keystone: Some(KeystoneCaller {
                user_id: "u".into(),
                user_name: "user".into(),
                project_id: project.map(str::to_owned),
                project_name: None,
                roles: vec!["member".into()],
            }),
            may_write: true,
            all_projects: all,
            oauth_issuer: None,
            certificate: None,
        };
        let member = Tenancy::of(Some(&keystone(false, Some("p1"))));
        assert_eq!(member.subscriber_project().unwrap().as_deref(), Some("p1"));
        let admin = Tenancy::of(Some(&keystone(true, Some("p1"))));
        assert_eq!(admin.subscriber_project().unwrap(), None);
        let client = Tenancy::of(Some(&Caller::client("c")));
        assert_eq!(client.subscriber_project().unwrap(), None);
        let unscoped = Tenancy::of(Some(&keystone(false, None)));
        let refused = unscoped.subscriber_project().unwrap_err();
        assert_eq!(refused.status(), axum::http::StatusCode::FORBIDDEN);
    }

    #[test]
    fn a_hidden_resource_answers_like_a_missing_one() {
        let e = not_found(Resource::Instance, "i-1").to_string();
        assert!(e.contains("VNF instance") && e.contains("i-1"), "{e}");
    }
}
