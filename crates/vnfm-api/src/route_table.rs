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

use axum::handler::Handler;
use axum::routing::MethodRouter;
use utoipa::openapi::path::{
    HttpMethod, Operation, OperationBuilder, Parameter, ParameterBuilder, ParameterIn, Paths,
};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::security::SecurityRequirement;
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, RefOr, Required, ResponseBuilder, Schema};
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouter};

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

/// One method of a route: its handler and its documentation.
pub(crate) struct Endpoint<S> {
    method: HttpMethod,
    doc: Doc,
    router: MethodRouter<S>,
}

impl<S: Clone + Send + Sync + 'static> Endpoint<S> {
    /// The same endpoint documented with another success status.
    pub(crate) fn status(mut self, status: u16) -> Self {
        self.doc = self.doc.status(status);
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

/// A route: `path` (axum's syntax, `{name}` and `{*name}`) with its endpoints, for
/// `OpenApiRouter::routes`.
pub(crate) fn route<S>(
    path: &str,
    endpoints: impl IntoIterator<Item = Endpoint<S>>,
) -> UtoipaMethodRouter<S>
where
    S: Clone + Send + Sync + 'static,
{
    let mut router = MethodRouter::new();
    let mut paths = Paths::new();
    for endpoint in endpoints {
        let operation = endpoint.doc.operation(&endpoint.method);
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
/// catch-all `{*name}` is written `{name}`.
pub(crate) fn finish_operations(api: &mut OpenApi) {
    for_each_operation(api, |path, method, operation| {
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
