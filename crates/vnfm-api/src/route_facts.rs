//! The route facts of a router, read back from its route table: what each route declared for
//! the layers in front of its handlers (`crate::route_table`: its [`Scope`] of a project, what
//! each endpoint does, its API family), under its full path template.
//!
//! The router builds its [`RouteTable`] once, from the OpenAPI document of the routes it serves
//! (kept in `crate::state::AppState`), and a layer finds the facts of the route a request matched
//! by the template axum's [`MatchedPath`] gives it: project scoping (`crate::scope`), retried
//! requests (`crate::idempotency`), the test VIM's check of task requests (`crate::test_vim`) and
//! body limits (`crate::limits`) read them there instead of parsing the request's path again.

use std::collections::HashMap;

use axum::extract::MatchedPath;
use axum::http::{Extensions, Method};
use utoipa::openapi::OpenApi;
use utoipa::openapi::path::Operation;

#[cfg(test)]
use crate::route_table::Stamp;
use crate::route_table::{Effect, Scope, read};
use crate::version::ApiFamily;

/// The facts of one route: a path template and its endpoints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RouteFacts {
    /// What it is to project scoping.
    pub(crate) scope: Scope,
    /// The API it belongs to (`None` outside the versioned APIs).
    pub(crate) family: Option<ApiFamily>,
    effects: Vec<(Method, Effect)>,
}

impl RouteFacts {
    /// What its endpoint of `method` does ([`Effect::Other`] for a method it does not serve).
    pub(crate) fn effect(&self, method: &Method) -> Effect {
        self.effects
            .iter()
            .find(|(m, _)| m == method)
            .map_or(Effect::Other, |(_, effect)| *effect)
    }
}

/// The facts of the routes of a router, by path template.
#[derive(Debug, Default)]
pub(crate) struct RouteTable {
    routes: HashMap<String, RouteFacts>,
}

impl RouteTable {
    /// The facts of every operation of `apis` (the documents of a router's parts, as the route
    /// table stamped them). The operations of one route carry the same scope and family
    /// ([`route`](crate::route_table::route) stamps them all, `versioned_routes` a whole
    /// group): the first one read stands for its route.
    pub(crate) fn of<'a>(apis: impl IntoIterator<Item = &'a OpenApi>) -> RouteTable {
        let mut routes: HashMap<String, RouteFacts> = HashMap::new();
        for (path, method, operation) in apis.into_iter().flat_map(operations) {
            let Some(stamp) = read(operation) else {
                continue;
            };
            routes
                .entry(path.to_owned())
                .or_insert_with(|| RouteFacts {
                    scope: stamp.scope,
                    family: stamp.family,
                    effects: Vec::new(),
                })
                .effects
                .push((method, stamp.effect));
        }
        RouteTable { routes }
    }

    /// The facts of the route a request matched (from its extensions; `None` before routing,
    /// or when it matched none).
    pub(crate) fn matched(&self, extensions: &Extensions) -> Option<&RouteFacts> {
        self.declared(extensions.get::<MatchedPath>()?.as_str())
    }

    /// The facts of the route of path template `template` (axum's syntax, as [`MatchedPath`]
    /// gives it).
    pub(crate) fn declared(&self, template: &str) -> Option<&RouteFacts> {
        self.routes.get(template)
    }
}

/// Each path template, method and operation of `api`.
fn operations(api: &OpenApi) -> impl Iterator<Item = (&str, Method, &Operation)> {
    api.paths.paths.iter().flat_map(|(path, item)| {
        [
            (Method::GET, &item.get),
            (Method::PUT, &item.put),
            (Method::POST, &item.post),
            (Method::DELETE, &item.delete),
            (Method::PATCH, &item.patch),
        ]
        .into_iter()
        .filter_map(move |(method, operation)| {
            operation.as_ref().map(|o| (path.as_str(), method, o))
        })
    })
}

/// Each path template, method and stamp of `api` (`None` for an operation the route table
/// did not stamp), with the operation's documented statuses.
#[cfg(test)]
pub(crate) fn stamps(api: &OpenApi) -> Vec<(String, Method, Option<Stamp>, Vec<String>)> {
    operations(api)
        .map(|(path, method, operation)| {
            let statuses = operation.responses.responses.keys().cloned().collect();
            (path.to_owned(), method, read(operation), statuses)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use utoipa_axum::router::OpenApiRouter;

    use super::*;
    use crate::route_table::{doc, get, in_family, put, route};

    #[test]
    fn facts_are_read_back_by_template_and_method() {
        let template = "/vnf_packages/{vnfPkgId}/package_content";
        let routes = OpenApiRouter::<()>::new().routes(route(
            template,
            Scope::PACKAGE,
            [
                get(|| async {}, doc("download")),
                put(|| async {}, doc("upload")).package_upload(),
            ],
        ));
        let routes = OpenApiRouter::new().nest("/vnfpkgm/v2", in_family(routes, ApiFamily::PkgmV2));
        let table = RouteTable::of([&routes.into_openapi()]);
        let route = table
            .declared("/vnfpkgm/v2/vnf_packages/{vnfPkgId}/package_content")
            .unwrap_or_else(|| panic!("not declared under its full template"));
        assert_eq!(route.scope, Scope::PACKAGE);
        assert_eq!(route.family, Some(ApiFamily::PkgmV2));
        assert_eq!(route.effect(&Method::PUT), Effect::PackageUpload);
        assert_eq!(route.effect(&Method::GET), Effect::Other);
        assert_eq!(route.effect(&Method::POST), Effect::Other);
        assert!(table.declared(template).is_none());
        assert!(table.matched(&Extensions::new()).is_none());
    }
}
