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
//!   answers too, so ids do not leak, and nothing of the request is carried out.
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

use axum::extract::{FromRequestParts, OriginalUri, Request, State};
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use vnfm_lcm::LcmError;
use vnfm_store::{ProjectScope, ScopedKind};

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
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

/// What a request path names: a resource of one kind by id, or a package by `vnfdId`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Named {
    /// A resource addressed by its id.
    Id(ScopedKind),
    /// A package addressed by the `vnfdId` of its VNFD.
    PackageByVnfd,
}

/// The resource a request path names, with its id (percent-decoded): the segment after the
/// first collection segment of a scoped kind. `None` for paths naming no such resource.
fn named(path: &str) -> Option<(Named, String)> {
    let mut segments = path.split('/');
    while let Some(segment) = segments.next() {
        let named = match segment {
            "vnf_instances" => Named::Id(ScopedKind::Instance),
            "vnf_lcm_op_occs" => Named::Id(ScopedKind::OpOcc),
            "vnf_packages" => Named::Id(ScopedKind::Package),
            "onboarded_vnf_packages" => Named::PackageByVnfd,
            "subscriptions" => Named::Id(ScopedKind::Subscription),
            "alarms" => Named::Id(ScopedKind::Alarm),
            // `/vnfind/v1/indicators/{vnfInstanceId}[/{indicatorId}]`.
            "indicators" => Named::Id(ScopedKind::Instance),
            _ => continue,
        };
        let id = segments.next().filter(|id| !id.is_empty())?;
        return Some((named, percent_decoded(id)?));
    }
    None
}

/// Whether `path` belongs to an interface whose resources record no project yet
/// (performance management: PM jobs and thresholds name instances of any project), which a
/// caller limited to one project must not reach at all. Its `api_versions` stay open.
fn unscoped(path: &str) -> bool {
    path.starts_with("/vnfpm/") && !path.ends_with("/api_versions")
}

/// `segment` with its `%XX` escapes decoded, as the router decodes path parameters; `None`
/// when it is not UTF-8 or holds a broken escape (the router refuses such paths itself).
fn percent_decoded(segment: &str) -> Option<String> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = segment.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The answer to a resource that does not exist, word for word what its handler answers, so
/// that a resource of another project cannot be told from a missing one.
fn not_found(named: Named, id: &str) -> ApiError {
    let kind = match named {
        Named::Id(ScopedKind::Package) => {
            return ApiError::NotFound(format!(
                "VNF package {} does not exist",
                crate::util::cut(id, 100)
            ));
        }
        Named::PackageByVnfd => {
            return ApiError::NotFound(format!(
                "no onboarded VNF package has vnfdId {}",
                crate::util::cut(id, 100)
            ));
        }
        Named::Id(ScopedKind::Instance) => "VNF instance",
        Named::Id(ScopedKind::OpOcc) => "operation occurrence",
        Named::Id(ScopedKind::Subscription) => "subscription",
        Named::Id(ScopedKind::Alarm) => "alarm",
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
    named: Named,
    id: &str,
) -> ApiResult<bool> {
    let project = match named {
        Named::Id(kind) => state.store.project_of(kind, id).await?,
        Named::PackageByVnfd => state
            .store
            .package_by_vnfd(id)
            .await?
            .map(|(p, _)| p.project),
    };
    Ok(project.is_some_and(|p| scope.admits(p.as_deref())))
}

/// Middleware on the authenticated routes: refuses with `404` a request naming one resource
/// that the caller's project does not own, before its handler runs. A resource that does not
/// exist is refused here too, with the same answer, so that nothing the handler checks before
/// its lookup (the body, the `Accept` header) tells the two apart. Callers that see every
/// project pass without a lookup, to the handlers' own answers.
pub(crate) async fn guard(
    State(state): State<Arc<AppState>>,
    tenancy: Tenancy,
    request: Request,
    next: Next,
) -> Response {
    if tenancy.scope == ProjectScope::All {
        return next.run(request).await;
    }
    // The whole path, whatever the nesting of the router around this layer stripped.
    let path = match request.extensions().get::<OriginalUri>() {
        Some(OriginalUri(uri)) => uri.path(),
        None => request.uri().path(),
    };
    if unscoped(path) {
        return ApiError::Forbidden(
            "performance management (/vnfpm) is not divided by project yet: it is open to tokens with an admin role (vnfm serve --keystone-admin-roles) and to OAuth 2.0 clients only".into(),
        )
        .into_response();
    }
    let Some((named, id)) = named(path) else {
        return next.run(request).await;
    };
    match visible(&state, &tenancy.scope, named, &id).await {
        Ok(true) => next.run(request).await,
        Ok(false) => not_found(named, &id).into_response(),
        Err(e) => e.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::KeystoneCaller;

    #[test]
    fn paths_name_the_resource_after_its_collection() {
        let id = |kind| Some((Named::Id(kind), "a b".to_owned()));
        let cases = [
            (
                "/vnflcm/v2/vnf_instances/a%20b/instantiate",
                id(ScopedKind::Instance),
            ),
            (
                "/vnflcm/v1/vnf_lcm_op_occs/a b/retry",
                id(ScopedKind::OpOcc),
            ),
            (
                "/vnfm/v1/vnf_lcm_op_occs/a%20b/progress",
                id(ScopedKind::OpOcc),
            ),
            (
                "/vnfpkgm/v1/vnf_packages/a%20b/artifacts/x/y",
                id(ScopedKind::Package),
            ),
            (
                "/vnfpkgm/v2/onboarded_vnf_packages/a%20b/vnfd",
                Some((Named::PackageByVnfd, "a b".to_owned())),
            ),
            (
                "/vnffm/v1/subscriptions/a%20b",
                id(ScopedKind::Subscription),
            ),
            ("/vnffm/v1/alarms/a%20b", id(ScopedKind::Alarm)),
            ("/vnfind/v1/indicators/a%20b/load", id(ScopedKind::Instance)),
            ("/vnfind/v1/indicators", None),
            ("/vnflcm/v2/vnf_instances", None),
            ("/vnflcm/v2/vnf_instances/", None),
            ("/vnflcm/v2/vnf_instances/%zz", None),
            ("/vnfm/v1/vims/a", None),
            ("/vnfm/v1/notifications/dead/1", None),
        ];
        for (path, want) in cases {
            assert_eq!(named(path), want, "{path}");
        }
        assert_eq!(percent_decoded("%C3%A9t%C3%A9").as_deref(), Some("été"));
        assert_eq!(percent_decoded("%FF"), None);
    }

    #[test]
    fn performance_management_is_unscoped_but_its_versions() {
        assert!(unscoped("/vnfpm/v2/pm_jobs"));
        assert!(unscoped("/vnfpm/v2/thresholds/t1"));
        assert!(unscoped("/vnfpm/v2/subscriptions"));
        assert!(!unscoped("/vnfpm/v2/api_versions"));
        assert!(!unscoped("/vnfpm/api_versions"));
        assert!(!unscoped("/vnflcm/v2/vnf_instances"));
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
        let e = not_found(Named::Id(ScopedKind::Instance), "i-1").to_string();
        assert!(e.contains("VNF instance") && e.contains("i-1"), "{e}");
    }
}
