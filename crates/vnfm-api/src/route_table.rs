//! The route table: each route is declared once, with its handler and its documentation.
//!
//! [`route`] pairs a path with its [`Endpoint`]s (a method, a handler and a [`Doc`]) and gives
//! utoipa-axum's `UtoipaMethodRouter`: `OpenApiRouter::routes` adds it to the axum router and its
//! operations to the OpenAPI document in one step, and nesting, merging and layers keep the two
//! together. Handlers stay plain axum handlers (closures over an API version, generic ones), which
//! utoipa's `#[utoipa::path]` attribute cannot annotate; the request and response schemas are named
//! here and generated from the Rust types in [`crate::openapi`].
//!
//! The document gets the rest from the router it was built with: path parameters, operation ids
//! and tags from the full path ([`finish_operations`]), security from the authenticated group
//! ([`secured`]), the `Version` header from the API version layer (`crate::version`).
//!
//! Each route also declares what the layers in front of its handlers act on, its route facts,
//! instead of their parsing a request's path again:
//!
//! - its [`Scope`], given to [`route`]: which resource of a project it names, by which path
//!   parameter (project scoping, `crate::scope`);
//! - each endpoint's [`Effect`] ([`Endpoint::creation`], [`Endpoint::task`],
//!   [`Endpoint::package_upload`]): whether it creates a resource, starts an LCM operation
//!   occurrence or uploads package content (retried requests, `crate::idempotency`; the test
//!   VIM's check of task requests, `crate::test_vim`; body limits, `crate::limits`);
//! - its API family, from the versioned group it is declared in ([`in_family`], by
//!   `crate::version::versioned_routes`).
//!
//! The facts travel in the OpenAPI document, as an `x-vnfm-route` extension of each operation:
//! utoipa-axum keeps a route's operations and its handlers together through nesting and
//! merging, and only the document learns a route's full path template, which is what axum's
//! `MatchedPath` gives a layer. The router reads them back from the document of the routes it
//! serves (`crate::route_facts`); a request extension set by a route's own layer would come
//! after the router-wide layers that need it. The served document is written without them
//! ([`finish_operations`]).

use std::borrow::Cow;

use axum::handler::Handler;
use axum::routing::MethodRouter;
use serde::{Deserialize, Serialize};
use utoipa::openapi::path::{
    HttpMethod, Operation, OperationBuilder, Parameter, ParameterBuilder, ParameterIn, Paths,
};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::security::SecurityRequirement;
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, RefOr, Required, ResponseBuilder, Schema};
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouter};

use crate::version::ApiFamily;

/// How one operation is documented: a summary, the request body and the success response.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Doc {
    summary: &'static str,
    request: Option<&'static str>,
    status: u16,
    response: Option<&'static str>,
}

/// The documentation of an operation answering 200 without a described body.
pub(crate) const fn doc(summary: &'static str) -> Doc {
    Doc {
        summary,
        request: None,
        status: 200,
        response: None,
    }
}

impl Doc {
    /// The request body's schema (a name under `components/schemas`).
    pub(crate) const fn body(mut self, schema: &'static str) -> Self {
        self.request = Some(schema);
        self
    }

    /// The success status, when it is not 200.
    pub(crate) const fn status(mut self, status: u16) -> Self {
        self.status = status;
        self
    }

    /// The success response's schema (`[Name]` for an array of them).
    pub(crate) const fn returns(mut self, schema: &'static str) -> Self {
        self.response = Some(schema);
        self
    }

    fn operation(&self, method: &HttpMethod) -> Operation {
        let mut b = OperationBuilder::new().summary(Some(self.summary));
        if let Some(req) = self.request {
            // A merge patch is also accepted as `application/json`, as Tacker accepts it.
            let media: &[&str] = if matches!(method, HttpMethod::Patch) {
                &["application/merge-patch+json", "application/json"]
            } else {
                &["application/json"]
            };
            let mut body = RequestBodyBuilder::new();
            for media in media {
                body = body.content(
                    *media,
                    ContentBuilder::new().schema(Some(schema_ref(req))).build(),
                );
            }
            b = b.request_body(Some(body.required(Some(Required::True)).build()));
        }
        let mut ok = ResponseBuilder::new().description(
            axum::http::StatusCode::from_u16(self.status)
                .ok()
                .and_then(|s| s.canonical_reason())
                .unwrap_or("OK"),
        );
        if let Some(resp) = self.response {
            ok = ok.content(
                "application/json",
                ContentBuilder::new().schema(Some(schema_ref(resp))).build(),
            );
        }
        b.response(self.status.to_string(), ok.build())
            .response(
                "default",
                ResponseBuilder::new()
                    .description("Error (ProblemDetails)")
                    .content(
                        "application/problem+json",
                        ContentBuilder::new()
                            .schema(Some(schema_ref("ProblemDetails")))
                            .build(),
                    )
                    .build(),
            )
            .build()
    }
}

fn schema_ref(name: &str) -> RefOr<Schema> {
    if let Some(inner) = name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
        let array = utoipa::openapi::schema::ArrayBuilder::new()
            .items(RefOr::Ref(Ref::from_schema_name(inner)))
            .build();
        RefOr::T(Schema::Array(array))
    } else {
        RefOr::Ref(Ref::from_schema_name(name))
    }
}

/// The operation extension the facts travel in.
const EXTENSION: &str = "x-vnfm-route";

/// The resources of a project a route can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Resource {
    /// A VNF instance, by id.
    Instance,
    /// An LCM operation occurrence (of its instance's project), by id.
    OpOcc,
    /// A VNF package, by id.
    Package,
    /// A VNF package, by the `vnfdId` of its VNFD.
    PackageByVnfd,
    /// A subscription (lifecycle, package management, fault management, indicators), by id.
    Subscription,
    /// An alarm (of its instance's project), by id.
    Alarm,
}

/// What a route is to project scoping (`crate::scope`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Scope {
    /// It names one resource of a project by the path parameter `param`: a caller limited to
    /// one project reaches it only when the resource is its project's.
    Names {
        /// The kind of resource.
        resource: Resource,
        /// The path parameter holding its id (or `vnfdId`).
        param: Cow<'static, str>,
    },
    /// It names no one resource of a project: collections (their lists and creations keep to
    /// the caller's project themselves), API versions, VIMs (divided by their handlers), the
    /// server's own resources.
    Unnamed,
    /// Its resources record no project yet (performance management: PM jobs and thresholds
    /// name instances of any project): a caller limited to one project is refused it.
    EveryProject,
    /// Outside the server's authentication (the token endpoint, health, the webhook
    /// receivers, which authenticate their callers themselves): no caller, no project.
    Public,
}

impl Scope {
    const fn names(resource: Resource, param: &'static str) -> Scope {
        Scope::Names {
            resource,
            param: Cow::Borrowed(param),
        }
    }

    /// A VNF instance, by `{vnfInstanceId}`.
    pub(crate) const INSTANCE: Scope = Scope::names(Resource::Instance, "vnfInstanceId");
    /// An operation occurrence, by `{vnfLcmOpOccId}`.
    pub(crate) const OP_OCC: Scope = Scope::names(Resource::OpOcc, "vnfLcmOpOccId");
    /// A VNF package, by `{vnfPkgId}`.
    pub(crate) const PACKAGE: Scope = Scope::names(Resource::Package, "vnfPkgId");
    /// A VNF package, by `{vnfdId}`.
    pub(crate) const PACKAGE_BY_VNFD: Scope = Scope::names(Resource::PackageByVnfd, "vnfdId");
    /// A subscription, by `{subscriptionId}`.
    pub(crate) const SUBSCRIPTION: Scope = Scope::names(Resource::Subscription, "subscriptionId");
    /// An alarm, by `{alarmId}`.
    pub(crate) const ALARM: Scope = Scope::names(Resource::Alarm, "alarmId");
}

/// What one endpoint (a method of a route) does, as the layers in front of it tell requests
/// apart.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Effect {
    /// Creates a resource in its collection: answered 201 with the resource and its
    /// `Location`.
    Creation,
    /// Starts an LCM operation occurrence on a VNF instance: answered 202 with the
    /// occurrence's `Location`.
    Task,
    /// Uploads package content: a large body of its own limit and media types.
    PackageUpload,
    /// Anything else.
    #[default]
    Other,
}

/// What one operation carries in the document ([`EXTENSION`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Stamp {
    /// Its route's scope.
    pub(crate) scope: Scope,
    /// What it does.
    pub(crate) effect: Effect,
    /// Its route's API family.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) family: Option<ApiFamily>,
}

/// Records `scope` and `effect` on `operation`.
fn stamp(operation: &mut Operation, scope: &Scope, effect: Effect) {
    write(
        operation,
        &Stamp {
            scope: scope.clone(),
            effect,
            family: None,
        },
    );
}

/// Records `family` on `operation`, stamped before.
fn stamp_family(operation: &mut Operation, family: ApiFamily) {
    if let Some(mut stamp) = read(operation) {
        stamp.family = Some(family);
        write(operation, &stamp);
    }
}

/// Removes the facts from `operation`, which is then as the document shows it.
fn strip(operation: &mut Operation) {
    if let Some(extensions) = operation.extensions.as_mut() {
        extensions.remove(EXTENSION);
        if extensions.is_empty() {
            operation.extensions = None;
        }
    }
}

fn write(operation: &mut Operation, stamp: &Stamp) {
    // A `Stamp` is enums and strings: it always serializes.
    let value = serde_json::to_value(stamp).unwrap_or_default();
    operation
        .extensions
        .get_or_insert_with(Default::default)
        .insert(EXTENSION.to_owned(), value);
}

/// The facts stamped on `operation`, if any.
pub(crate) fn read(operation: &Operation) -> Option<Stamp> {
    let value = operation.extensions.as_ref()?.get(EXTENSION)?;
    serde_json::from_value(value.clone()).ok()
}

/// One method of a route: its handler, its documentation and what it does.
pub(crate) struct Endpoint<S> {
    method: HttpMethod,
    doc: Doc,
    effect: Effect,
    router: MethodRouter<S>,
}

impl<S: Clone + Send + Sync + 'static> Endpoint<S> {
    /// The same endpoint documented with another success status.
    pub(crate) fn status(mut self, status: u16) -> Self {
        self.doc = self.doc.status(status);
        self
    }

    /// The same endpoint declared to create a resource of its collection.
    pub(crate) fn creation(mut self) -> Self {
        self.effect = Effect::Creation;
        self
    }

    /// The same endpoint declared to start an LCM operation occurrence on its instance.
    pub(crate) fn task(mut self) -> Self {
        self.effect = Effect::Task;
        self
    }

    /// The same endpoint declared to upload package content.
    pub(crate) fn package_upload(mut self) -> Self {
        self.effect = Effect::PackageUpload;
        self
    }

    /// The same endpoint with its method router changed (a layer, a body limit).
    pub(crate) fn map<S2>(
        self,
        f: impl FnOnce(MethodRouter<S>) -> MethodRouter<S2>,
    ) -> Endpoint<S2> {
        Endpoint {
            method: self.method,
            doc: self.doc,
            effect: self.effect,
            router: f(self.router),
        }
    }
}

macro_rules! endpoint_fn {
    ($name:ident, $variant:ident) => {
        #[doc = concat!("The `", stringify!($variant), "` endpoint of a route.")]
        pub(crate) fn $name<H, T, S>(handler: H, doc: Doc) -> Endpoint<S>
        where
            H: Handler<T, S>,
            T: 'static,
            S: Clone + Send + Sync + 'static,
        {
            Endpoint {
                method: HttpMethod::$variant,
                doc,
                effect: Effect::Other,
                router: axum::routing::$name(handler),
            }
        }
    };
}

endpoint_fn!(get, Get);
endpoint_fn!(post, Post);
endpoint_fn!(put, Put);
endpoint_fn!(patch, Patch);
endpoint_fn!(delete, Delete);

/// A route: `path` (axum's syntax, `{name}` and `{*name}`), its scope of a project and its
/// endpoints, for `OpenApiRouter::routes`.
pub(crate) fn route<S>(
    path: &str,
    scope: Scope,
    endpoints: impl IntoIterator<Item = Endpoint<S>>,
) -> UtoipaMethodRouter<S>
where
    S: Clone + Send + Sync + 'static,
{
    let mut router = MethodRouter::new();
    let mut paths = Paths::new();
    for endpoint in endpoints {
        let mut operation = endpoint.doc.operation(&endpoint.method);
        stamp(&mut operation, &scope, endpoint.effect);
        paths.add_path_operation(path, vec![endpoint.method], operation);
        router = router.merge(endpoint.router);
    }
    (Vec::new(), paths, router)
}

/// Every operation of `router` documented as requiring authentication (OAuth 2.0, HTTP Basic
/// client credentials or a Keystone token).
pub(crate) fn secured<S>(mut router: OpenApiRouter<S>) -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
{
    for_each_operation(router.get_openapi_mut(), |_, _, operation| {
        operation.security = Some(
            ["oauth2", "basic", "keystone"]
                .into_iter()
                .map(|scheme| SecurityRequirement::new(scheme, Vec::<String>::new()))
                .collect(),
        );
    });
    router
}

/// Every route of `router` declared to belong to the API `family`.
pub(crate) fn in_family<S>(mut router: OpenApiRouter<S>, family: ApiFamily) -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
{
    for_each_operation(router.get_openapi_mut(), |_, _, operation| {
        stamp_family(operation, family);
    });
    router
}

/// Every operation of `router` documented with the required `Version` request header, except
/// the `api_versions` resources, which answer without it.
pub(crate) fn document_version_header<S>(mut router: OpenApiRouter<S>) -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
{
    for_each_operation(router.get_openapi_mut(), |path, _, operation| {
        if path.ends_with("/api_versions") {
            return;
        }
        operation
            .parameters
            .get_or_insert_with(Vec::new)
            .push(RefOr::T(
                ParameterBuilder::new()
                    .name("Version")
                    .parameter_in(ParameterIn::Header)
                    .required(Required::True)
                    .description(Some("API version, e.g. 2.0.0 (SOL013 clause 4.9)"))
                    .build(),
            ));
    });
    router
}

/// Completes the document of the whole router: the path parameters of each operation (ahead of
/// its header parameters), its operation id and its tag come from the full path; axum's
/// catch-all `{*name}` is written `{name}`. The route facts are left out.
pub(crate) fn finish_operations(api: &mut OpenApi) {
    for_each_operation(api, |path, method, operation| {
        strip(operation);
        let documented = path.replace("{*", "{");
        operation.operation_id = Some(format!(
            "{method}{}",
            documented.replace(['/', '{', '}', '.'], "_")
        ));
        operation.tags = Some(vec![path.split('/').nth(1).unwrap_or("ops").to_owned()]);
        let mut parameters: Vec<RefOr<Parameter>> = documented
            .split('/')
            .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
            .map(|name| {
                RefOr::T(
                    ParameterBuilder::new()
                        .name(name)
                        .parameter_in(ParameterIn::Path)
                        .required(Required::True)
                        .build(),
                )
            })
            .collect();
        parameters.extend(operation.parameters.take().unwrap_or_default());
        operation.parameters = (!parameters.is_empty()).then_some(parameters);
    });
    let paths = std::mem::take(&mut api.paths.paths);
    api.paths.paths = paths
        .into_iter()
        .map(|(path, item)| (path.replace("{*", "{"), item))
        .collect();
}

/// Calls `f` with the path, the method (lower case) and each operation of `api`.
fn for_each_operation(api: &mut OpenApi, mut f: impl FnMut(&str, &str, &mut Operation)) {
    for (path, item) in api.paths.paths.iter_mut() {
        let methods = [
            ("get", &mut item.get),
            ("put", &mut item.put),
            ("post", &mut item.post),
            ("delete", &mut item.delete),
            ("patch", &mut item.patch),
        ];
        for (name, operation) in methods {
            if let Some(operation) = operation {
                f(path, name, operation);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finished_operations_carry_no_route_facts() {
        let json = |o: &Operation| serde_json::to_value(o).unwrap_or_default();
        let bare = OperationBuilder::new().summary(Some("s")).build();
        let mut stamped = bare.clone();
        stamp(&mut stamped, &Scope::Unnamed, Effect::Creation);
        assert_eq!(read(&stamped).map(|s| s.effect), Some(Effect::Creation));
        assert_ne!(json(&stamped), json(&bare));
        strip(&mut stamped);
        assert_eq!(json(&stamped), json(&bare));
    }
}
