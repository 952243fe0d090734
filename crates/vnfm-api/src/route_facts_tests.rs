//! The route facts of the whole route table (`crate::route_facts`): every route declares what
//! the layers in front of its handlers need, consistently with its path and its documentation.

use std::sync::OnceLock;

use axum::http::Method;
use utoipa::openapi::OpenApi;

use crate::route_facts::{RouteFacts, RouteTable, stamps};
use crate::route_table::{Effect, Scope};
use crate::version::ApiFamily;
use crate::{RouteLimits, authenticated_routes, declared_operations, public_routes};

/// The facts of the route of path template `template`, as the router reads them.
pub(crate) fn declared(template: &str) -> Option<&'static RouteFacts> {
    static TABLE: OnceLock<RouteTable> = OnceLock::new();
    TABLE
        .get_or_init(|| {
            let limits = RouteLimits::unlimited();
            RouteTable::of([
                &authenticated_routes(limits).into_openapi(),
                &public_routes(limits).into_openapi(),
            ])
        })
        .declared(template)
}

fn authenticated() -> OpenApi {
    authenticated_routes(RouteLimits::unlimited()).into_openapi()
}

/// A route that declared no scope of a project would not be guarded: every route behind the
/// server's authentication declares one, and only the others are public.
#[test]
fn every_authenticated_route_declares_a_scope() {
    let authenticated = stamps(&authenticated());
    assert!(authenticated.len() > 100, "{}", authenticated.len());
    for (path, method, stamp, _) in authenticated {
        let stamp = stamp.unwrap_or_else(|| panic!("{method} {path} declares no route facts"));
        assert_ne!(stamp.scope, Scope::Public, "{method} {path}");
    }
    let public = public_routes(RouteLimits::unlimited()).into_openapi();
    for (path, method, stamp, _) in stamps(&public) {
        assert_eq!(
            stamp.map(|s| s.scope),
            Some(Scope::Public),
            "{method} {path}"
        );
    }
}

/// A route whose path parameter holds the id of a project's resource is guarded by that
/// parameter (or refused outright), and the parameter it is guarded by is one of its own.
#[test]
fn routes_naming_a_resource_are_guarded_by_its_parameter() {
    let named = [
        Scope::INSTANCE,
        Scope::OP_OCC,
        Scope::PACKAGE,
        Scope::PACKAGE_BY_VNFD,
        Scope::SUBSCRIPTION,
        Scope::ALARM,
    ];
    let has_param = |path: &str, scope: &Scope| match scope {
        Scope::Names { param, .. } => path.contains(&format!("{{{param}}}")),
        _ => false,
    };
    for (path, method, stamp, _) in stamps(&authenticated()) {
        let scope = stamp.map_or(Scope::Public, |s| s.scope);
        if let Scope::Names { .. } = scope {
            assert!(has_param(&path, &scope), "{method} {path}");
        }
        if let Some(first) = named.iter().find(|n| has_param(&path, n))
            && scope != Scope::EveryProject
        {
            assert_eq!(&scope, first, "{method} {path}");
        }
    }
}

/// The operations of one route agree on what the route is, and the router reads each one's.
#[test]
fn the_operations_of_a_route_agree() {
    for (path, method, stamp, _) in stamps(&declared_operations()) {
        let stamp = stamp.unwrap_or_else(|| panic!("{method} {path} declares no route facts"));
        let route = declared(&path).unwrap_or_else(|| panic!("{path}"));
        assert_eq!(route.scope, stamp.scope, "{method} {path}");
        assert_eq!(route.family, stamp.family, "{method} {path}");
        assert_eq!(route.effect(&method), stamp.effect, "{method} {path}");
    }
}

/// Creations are the `POST`s answered 201; tasks start occurrences on an instance of
/// `/vnflcm`, whose family answers with the occurrence's `Location`.
#[test]
fn creations_answer_201_and_tasks_are_lifecycle_operations() {
    let mut tasks = 0;
    for (path, method, stamp, statuses) in stamps(&declared_operations()) {
        let stamp = stamp.unwrap_or_else(|| panic!("{method} {path} declares no route facts"));
        let created = method == Method::POST && statuses.iter().any(|s| s == "201");
        assert_eq!(stamp.effect == Effect::Creation, created, "{method} {path}");
        if stamp.effect == Effect::Task {
            tasks += 1;
            assert!(
                matches!(stamp.family, Some(ApiFamily::LcmV1 | ApiFamily::LcmV2)),
                "{method} {path}"
            );
            assert!(
                path.contains("/vnf_instances/{vnfInstanceId}"),
                "{method} {path}"
            );
        }
    }
    // 9 tasks in v2, 8 in v1, and the PATCH of an instance in each.
    assert_eq!(tasks, 19);
}

/// Only the two package content endpoints take packages.
#[test]
fn package_uploads_are_the_puts_of_package_content() {
    for family in ["v1", "v2"] {
        let template = format!("/vnfpkgm/{family}/vnf_packages/{{vnfPkgId}}/package_content");
        let route = declared(&template).unwrap_or_else(|| panic!("{template}"));
        assert_eq!(route.effect(&Method::PUT), Effect::PackageUpload);
        assert_eq!(route.effect(&Method::GET), Effect::Other);
    }
    let uploads = stamps(&declared_operations())
        .into_iter()
        .filter(|(_, _, stamp, _)| stamp.as_ref().map(|s| s.effect) == Some(Effect::PackageUpload))
        .count();
    assert_eq!(uploads, 2);
}

#[test]
fn the_served_document_carries_no_route_facts() {
    let document = crate::openapi::document().to_string();
    assert!(!document.contains("x-vnfm-route"));
}
