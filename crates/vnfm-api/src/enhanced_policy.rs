//! Tacker's enhanced policy (`vnfm serve --enhanced-policy FILE`; off by default, as Tacker's
//! `[oslo_policy] enhanced_tacker_policy`): the rules of a Tacker policy file decide, from the
//! caller's `AREA_`, `VENDOR_` and `TENANT_` roles, which VNF instances, packages and VIMs it
//! lists, reads and changes.
//!
//! | resource | area | vendor | tenant |
//! |---|---|---|---|
//! | VNF instance | `extra.area` of its `vimConnectionInfo` (or of the VIM it names); `*` before instantiation (v2) | `vnfProvider` | `instantiatedVnfInfo.metadata.tenant` (a CNF's namespace), else the VIM's project (a VM's); `*` before instantiation |
//! | VNF package | | `vnfProvider` once onboarded, `*` before | |
//! | VIM | `extra.area` | | |
//!
//! Each route is mapped to Tacker's policy name ([`POLICY_NAMES`], by the route's path
//! template). A list keeps the members the rule allows (as Tacker, after paging: a page may be
//! shorter); a request naming one resource the rule refuses is answered `403` (instances and
//! packages) or `404` (VIMs), as Tacker answers, before its handler runs. Creating an instance
//! is checked against the vendor of the package its `vnfdId` names. A route the file has no
//! rule for is left to the server's other checks (project scoping, read-only roles).
//!
//! The caller's credentials: a Keystone caller's user, project and roles, `is_admin` from the
//! file's `context_is_admin` rule (else from the admin roles of `--keystone-admin-roles`); an
//! OAuth 2.0 or Basic client is an admin (`roles: [admin]`).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{MatchedPath, RawPathParams, Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use vnfm_policy::{Decision, Policy};
use vnfm_types::{VimId, VnfInstanceId};

use crate::auth::Caller;
use crate::error::ApiError;
use crate::state::AppState;

/// What a route is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// VNF instances of `/vnflcm/v1` (`true`) or `/vnflcm/v2`.
    Instance { v1: bool },
    /// VNF packages.
    Package,
    /// VIMs (ours and Tacker's `/v1.0/vims`).
    Vim,
}

/// What a route does with its resources.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// Lists them: the answer is filtered.
    List,
    /// Names one by the route's first path parameter.
    One,
    /// Creates an instance from the package of the body's `vnfdId`.
    Create,
    /// Registers a VIM (the target is the request's VIM: its `extra.area`, its project).
    CreateVim,
}

const V1: Kind = Kind::Instance { v1: true };
const V2: Kind = Kind::Instance { v1: false };
const PKG: Kind = Kind::Package;
const VIM: Kind = Kind::Vim;

/// Tacker's policy name of each route this server enforces: method, path template (as the
/// router declares it), name, resource, operation.
const POLICY_NAMES: &[(&str, &str, &str, Kind, Op)] = &[
    (
        "GET",
        "/vnflcm/v2/vnf_instances",
        "os_nfv_orchestration_api_v2:vnf_instances:index",
        V2,
        Op::List,
    ),
    (
        "POST",
        "/vnflcm/v2/vnf_instances",
        "os_nfv_orchestration_api_v2:vnf_instances:create",
        V2,
        Op::Create,
    ),
    (
        "GET",
        "/vnflcm/v2/vnf_instances/{vnfInstanceId}",
        "os_nfv_orchestration_api_v2:vnf_instances:show",
        V2,
        Op::One,
    ),
    (
        "PATCH",
        "/vnflcm/v2/vnf_instances/{vnfInstanceId}",
        "os_nfv_orchestration_api_v2:vnf_instances:update",
        V2,
        Op::One,
    ),
    (
        "DELETE",
        "/vnflcm/v2/vnf_instances/{vnfInstanceId}",
        "os_nfv_orchestration_api_v2:vnf_instances:delete",
        V2,
        Op::One,
    ),
    (
        "POST",
        "/vnflcm/v2/vnf_instances/{vnfInstanceId}/instantiate",
        "os_nfv_orchestration_api_v2:vnf_instances:instantiate",
        V2,
        Op::One,
    ),
    (
        "POST",
        "/vnflcm/v2/vnf_instances/{vnfInstanceId}/terminate",
        "os_nfv_orchestration_api_v2:vnf_instances:terminate",
        V2,
        Op::One,
    ),
    (
        "POST",
        "/vnflcm/v2/vnf_instances/{vnfInstanceId}/scale",
        "os_nfv_orchestration_api_v2:vnf_instances:scale",
        V2,
        Op::One,
    ),
    (
        "POST",
        "/vnflcm/v2/vnf_instances/{vnfInstanceId}/heal",
        "os_nfv_orchestration_api_v2:vnf_instances:heal",
        V2,
        Op::One,
    ),
    (
        "POST",
        "/vnflcm/v2/vnf_instances/{vnfInstanceId}/change_ext_conn",
        "os_nfv_orchestration_api_v2:vnf_instances:change_ext_conn",
        V2,
        Op::One,
    ),
    (
        "POST",
        "/vnflcm/v2/vnf_instances/{vnfInstanceId}/change_vnfpkg",
        "os_nfv_orchestration_api_v2:vnf_instances:change_vnfpkg",
        V2,
        Op::One,
    ),
    (
        "GET",
        "/vnflcm/v1/vnf_instances",
        "os_nfv_orchestration_api:vnf_instances:index",
        V1,
        Op::List,
    ),
    (
        "POST",
        "/vnflcm/v1/vnf_instances",
        "os_nfv_orchestration_api:vnf_instances:create",
        V1,
        Op::Create,
    ),
    (
        "GET",
        "/vnflcm/v1/vnf_instances/{vnfInstanceId}",
        "os_nfv_orchestration_api:vnf_instances:show",
        V1,
        Op::One,
    ),
    (
        "PATCH",
        "/vnflcm/v1/vnf_instances/{vnfInstanceId}",
        "os_nfv_orchestration_api:vnf_instances:update_vnf",
        V1,
        Op::One,
    ),
    (
        "DELETE",
        "/vnflcm/v1/vnf_instances/{vnfInstanceId}",
        "os_nfv_orchestration_api:vnf_instances:delete",
        V1,
        Op::One,
    ),
    (
        "POST",
        "/vnflcm/v1/vnf_instances/{vnfInstanceId}/instantiate",
        "os_nfv_orchestration_api:vnf_instances:instantiate",
        V1,
        Op::One,
    ),
    (
        "POST",
        "/vnflcm/v1/vnf_instances/{vnfInstanceId}/terminate",
        "os_nfv_orchestration_api:vnf_instances:terminate",
        V1,
        Op::One,
    ),
    (
        "POST",
        "/vnflcm/v1/vnf_instances/{vnfInstanceId}/scale",
        "os_nfv_orchestration_api:vnf_instances:scale",
        V1,
        Op::One,
    ),
    (
        "POST",
        "/vnflcm/v1/vnf_instances/{vnfInstanceId}/heal",
        "os_nfv_orchestration_api:vnf_instances:heal",
        V1,
        Op::One,
    ),
    (
        "POST",
        "/vnflcm/v1/vnf_instances/{vnfInstanceId}/change_ext_conn",
        "os_nfv_orchestration_api:vnf_instances:change_ext_conn",
        V1,
        Op::One,
    ),
    (
        "GET",
        "/vnfpkgm/v1/vnf_packages",
        "os_nfv_orchestration_api:vnf_packages:index",
        PKG,
        Op::List,
    ),
    (
        "GET",
        "/vnfpkgm/v2/vnf_packages",
        "os_nfv_orchestration_api:vnf_packages:index",
        PKG,
        Op::List,
    ),
    (
        "GET",
        "/vnfpkgm/v1/vnf_packages/{vnfPkgId}",
        "os_nfv_orchestration_api:vnf_packages:show",
        PKG,
        Op::One,
    ),
    (
        "GET",
        "/vnfpkgm/v2/vnf_packages/{vnfPkgId}",
        "os_nfv_orchestration_api:vnf_packages:show",
        PKG,
        Op::One,
    ),
    (
        "PATCH",
        "/vnfpkgm/v1/vnf_packages/{vnfPkgId}",
        "os_nfv_orchestration_api:vnf_packages:patch",
        PKG,
        Op::One,
    ),
    (
        "PATCH",
        "/vnfpkgm/v2/vnf_packages/{vnfPkgId}",
        "os_nfv_orchestration_api:vnf_packages:patch",
        PKG,
        Op::One,
    ),
    (
        "DELETE",
        "/vnfpkgm/v1/vnf_packages/{vnfPkgId}",
        "os_nfv_orchestration_api:vnf_packages:delete",
        PKG,
        Op::One,
    ),
    (
        "DELETE",
        "/vnfpkgm/v2/vnf_packages/{vnfPkgId}",
        "os_nfv_orchestration_api:vnf_packages:delete",
        PKG,
        Op::One,
    ),
    (
        "GET",
        "/vnfpkgm/v1/vnf_packages/{vnfPkgId}/package_content",
        "os_nfv_orchestration_api:vnf_packages:fetch_package_content",
        PKG,
        Op::One,
    ),
    (
        "GET",
        "/vnfpkgm/v2/vnf_packages/{vnfPkgId}/package_content",
        "os_nfv_orchestration_api:vnf_packages:fetch_package_content",
        PKG,
        Op::One,
    ),
    (
        "PUT",
        "/vnfpkgm/v1/vnf_packages/{vnfPkgId}/package_content",
        "os_nfv_orchestration_api:vnf_packages:upload_package_content",
        PKG,
        Op::One,
    ),
    (
        "PUT",
        "/vnfpkgm/v2/vnf_packages/{vnfPkgId}/package_content",
        "os_nfv_orchestration_api:vnf_packages:upload_package_content",
        PKG,
        Op::One,
    ),
    (
        "POST",
        "/vnfpkgm/v1/vnf_packages/{vnfPkgId}/package_content/upload_from_uri",
        "os_nfv_orchestration_api:vnf_packages:upload_from_uri",
        PKG,
        Op::One,
    ),
    (
        "POST",
        "/vnfpkgm/v2/vnf_packages/{vnfPkgId}/package_content/upload_from_uri",
        "os_nfv_orchestration_api:vnf_packages:upload_from_uri",
        PKG,
        Op::One,
    ),
    (
        "GET",
        "/vnfpkgm/v1/vnf_packages/{vnfPkgId}/vnfd",
        "os_nfv_orchestration_api:vnf_packages:get_vnf_package_vnfd",
        PKG,
        Op::One,
    ),
    (
        "GET",
        "/vnfpkgm/v2/vnf_packages/{vnfPkgId}/vnfd",
        "os_nfv_orchestration_api:vnf_packages:get_vnf_package_vnfd",
        PKG,
        Op::One,
    ),
    (
        "GET",
        "/vnfpkgm/v1/vnf_packages/{vnfPkgId}/artifacts/{*artifactPath}",
        "os_nfv_orchestration_api:vnf_packages:fetch_artifact",
        PKG,
        Op::One,
    ),
    (
        "GET",
        "/vnfpkgm/v2/vnf_packages/{vnfPkgId}/artifacts/{*artifactPath}",
        "os_nfv_orchestration_api:vnf_packages:fetch_artifact",
        PKG,
        Op::One,
    ),
    ("GET", "/v1.0/vims", "get_vim", VIM, Op::List),
    ("GET", "/v1.0/vims.json", "get_vim", VIM, Op::List),
    ("POST", "/v1.0/vims", "create_vim", VIM, Op::CreateVim),
    ("POST", "/v1.0/vims.json", "create_vim", VIM, Op::CreateVim),
    ("POST", "/vnfm/v1/vims", "create_vim", VIM, Op::CreateVim),
    ("GET", "/v1.0/vims/{vimId}", "get_vim", VIM, Op::One),
    ("PUT", "/v1.0/vims/{vimId}", "update_vim", VIM, Op::One),
    ("DELETE", "/v1.0/vims/{vimId}", "delete_vim", VIM, Op::One),
    ("GET", "/vnfm/v1/vims", "get_vim", VIM, Op::List),
    ("GET", "/vnfm/v1/vims/{vimId}", "get_vim", VIM, Op::One),
    ("PATCH", "/vnfm/v1/vims/{vimId}", "update_vim", VIM, Op::One),
    (
        "DELETE",
        "/vnfm/v1/vims/{vimId}",
        "delete_vim",
        VIM,
        Op::One,
    ),
];

/// The policy name, resource and operation of a route.
fn policy_of(method: &Method, template: &str) -> Option<(&'static str, Kind, Op)> {
    POLICY_NAMES
        .iter()
        .find(|(m, t, ..)| *m == method.as_str() && *t == template)
        .map(|(_, _, name, kind, op)| (*name, *kind, *op))
}

/// The policy credentials of `caller` (Tacker's `context.to_policy_values()`).
pub(crate) fn credentials(policy: &Policy, caller: Option<&Caller>) -> Map<String, Value> {
    let Some(k) = caller.and_then(|c| c.keystone.as_ref()) else {
        let id = caller.map(|c| c.client_id.clone()).unwrap_or_default();
        return obj(json!({"user_id": id, "roles": ["admin"], "is_admin": true}));
    };
    let mut creds = obj(json!({
        "user_id": k.user_id,
        "user_name": k.user_name,
        "project_id": k.project_id,
        "project_name": k.project_name,
        "tenant_id": k.project_id,
        "roles": k.roles,
        "is_admin": false,
    }));
    let is_admin = match policy.check("context_is_admin", &creds, &creds) {
        Decision::NoRule => caller.is_some_and(|c| c.all_projects),
        d => d == Decision::Allowed,
    };
    creds.insert("is_admin".into(), Value::Bool(is_admin));
    creds
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// The area of a `vimConnectionInfo` entry: its `extra.area`, else that of the VIM it names.
async fn connection_area(state: &AppState, conn: &Value) -> Option<String> {
    if let Some(a) = conn.pointer("/extra/area").and_then(Value::as_str) {
        return Some(a.to_owned());
    }
    let vim = conn.get("vimId").and_then(Value::as_str)?;
    let (record, _) = state.store.get_vim(&VimId::new(vim)).await.ok()??;
    record
        .public
        .pointer("/extra/area")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// The project of a VM's VIM connection (`accessInfo.project`, else the VIM's).
async fn connection_project(state: &AppState, conn: &Value) -> Option<String> {
    let from = |v: &Value| {
        [
            "/accessInfo/project",
            "/accessInfo/projectName",
            "/accessInfo/project_name",
        ]
        .iter()
        .find_map(|p| v.pointer(p).and_then(Value::as_str).map(str::to_owned))
    };
    if let Some(p) = from(conn) {
        return Some(p);
    }
    let vim = conn.get("vimId").and_then(Value::as_str)?;
    let (record, _) = state.store.get_vim(&VimId::new(vim)).await.ok()??;
    from(&record.public)
}

/// An instance's target attributes (Tacker's `_get_policy_target`); `None` if it is gone.
async fn instance_target(state: &AppState, id: &str, v1: bool) -> Option<Map<String, Value>> {
    let (instance, _) = state
        .store
        .get_instance(&VnfInstanceId::new(id))
        .await
        .ok()??;
    let inst = serde_json::to_value(&instance).ok()?;
    let mut t = Map::new();
    if let Some(v) = inst.get("vnfProvider").and_then(Value::as_str) {
        t.insert("vendor".into(), v.into());
    }
    let instantiated =
        inst.get("instantiationState").and_then(Value::as_str) == Some("INSTANTIATED");
    let conns: Vec<Value> = inst
        .get("vimConnectionInfo")
        .and_then(Value::as_object)
        .map(|m| m.values().cloned().collect())
        .unwrap_or_default();
    if !instantiated {
        t.insert("tenant".into(), "*".into());
        if !v1 {
            t.insert("area".into(), "*".into());
            return Some(t);
        }
    }
    for conn in &conns {
        if let Some(area) = connection_area(state, conn).await {
            t.insert("area".into(), area.into());
            break;
        }
    }
    if instantiated {
        let tenant = inst
            .pointer("/instantiatedVnfInfo/metadata/tenant")
            // Tacker v1 reads the instance's `metadata` (its `vnf_metadata`), v2 only
            // `instantiatedVnfInfo.metadata`.
            .or_else(|| v1.then(|| inst.pointer("/metadata/tenant")).flatten())
            .and_then(Value::as_str)
            .map(str::to_owned);
        let tenant = match tenant {
            Some(t) => Some(t),
            None => {
                let mut found = None;
                for conn in &conns {
                    let openstack = conn
                        .get("vimType")
                        .and_then(Value::as_str)
                        .is_some_and(|t| t.contains("OPENSTACK") || t == "openstack");
                    if openstack && let Some(p) = connection_project(state, conn).await {
                        found = Some(p);
                        break;
                    }
                }
                found
            }
        };
        if let Some(tenant) = tenant {
            t.insert("tenant".into(), tenant.into());
        }
    }
    Some(t)
}

/// A package's target (`vendor`: the provider once onboarded, `*` before).
fn package_target(info: &Value) -> Map<String, Value> {
    let onboarded = info.get("onboardingState").and_then(Value::as_str) == Some("ONBOARDED");
    if !onboarded {
        return obj(json!({"vendor": "*"}));
    }
    match info.get("vnfProvider").and_then(Value::as_str) {
        Some(v) if !v.is_empty() => obj(json!({"vendor": v})),
        _ => Map::new(),
    }
}

/// A VIM's target: its `area` (from `extra`) and its project as `project_id`.
async fn vim_target(state: &AppState, id: &str) -> Option<Map<String, Value>> {
    let (record, _) = state.store.get_vim(&VimId::new(id)).await.ok()??;
    let mut t = Map::new();
    t.insert("id".into(), id.into());
    if let Some(a) = record.public.pointer("/extra/area").and_then(Value::as_str) {
        t.insert("area".into(), a.into());
    }
    if let Some(p) = record.project {
        t.insert("project_id".into(), p.clone().into());
        t.insert("tenant_id".into(), p.into());
    }
    Some(t)
}

/// The target of the resource `id` of `kind`, as Tacker gives it to the rule.
async fn target(
    state: &AppState,
    kind: Kind,
    id: &str,
    creds: &Map<String, Value>,
) -> Option<Map<String, Value>> {
    let own = |mut t: Map<String, Value>| {
        // `context.can` targets start with the caller's own project and user.
        for key in ["project_id", "user_id"] {
            t.entry(key)
                .or_insert_with(|| creds.get(key).cloned().unwrap_or(Value::Null));
        }
        t
    };
    match kind {
        Kind::Instance { v1 } => instance_target(state, id, v1).await.map(own),
        Kind::Package => {
            let (record, _) = state.store.get_package(id).await.ok()??;
            Some(own(package_target(&record.info)))
        }
        Kind::Vim => vim_target(state, id).await,
    }
}

/// Whether the caller may do `name` on the resource with target `t`.
fn decide(
    policy: &Policy,
    name: &str,
    kind: Kind,
    t: &Map<String, Value>,
    creds: &Map<String, Value>,
) -> bool {
    // Tacker's VIM API lets an admin through before any rule, and skips the target check.
    if kind == Kind::Vim {
        if creds.get("is_admin") == Some(&Value::Bool(true)) {
            return true;
        }
        return policy.enhanced(name, t, creds, false).allows();
    }
    policy.enhanced(name, t, creds, true).allows()
}

/// Tacker's refusal: `403` for instances and packages, `404` for VIMs (which Tacker does not
/// reveal).
fn refusal(name: &str, kind: Kind, id: &str) -> Response {
    match kind {
        Kind::Vim => {
            ApiError::NotFound(format!("VIM {} does not exist", crate::util::cut(id, 100)))
                .into_response()
        }
        _ => ApiError::Forbidden(format!("Policy doesn't allow {name} to be performed."))
            .into_response(),
    }
}

/// Middleware on the authenticated routes: enforces the enhanced policy when it is on.
pub(crate) async fn layer(
    State(state): State<Arc<AppState>>,
    matched: Option<MatchedPath>,
    params: Result<RawPathParams, axum::extract::rejection::RawPathParamsRejection>,
    request: Request,
    next: Next,
) -> Response {
    let Some(policy) = state.options.enhanced_policy.as_ref().map(|f| f.current()) else {
        return next.run(request).await;
    };
    let Some((name, kind, op)) = matched
        .as_ref()
        .and_then(|m| policy_of(request.method(), m.as_str()))
    else {
        return next.run(request).await;
    };
    if policy.rule(name).is_none() {
        return next.run(request).await;
    }
    let creds = credentials(&policy, request.extensions().get::<Caller>());
    match op {
        Op::One => {
            let Some(id) = params
                .as_ref()
                .ok()
                .and_then(|p| p.iter().next().map(|(_, v)| v.to_owned()))
            else {
                return next.run(request).await;
            };
            // A resource that does not exist is the handler's to answer.
            let Some(t) = target(&state, kind, &id, &creds).await else {
                return next.run(request).await;
            };
            if decide(&policy, name, kind, &t, &creds) {
                next.run(request).await
            } else {
                refusal(name, kind, &id)
            }
        }
        Op::Create => create(&state, &policy, name, &creds, request, next).await,
        Op::CreateVim => create_vim(&state, &policy, name, &creds, request, next).await,
        Op::List => {
            let response = next.run(request).await;
            filter_list(&state, &policy, name, kind, &creds, response).await
        }
    }
}

/// `request` with its body read whole (the rule looks into it; the handler gets it again), or
/// the refusal of a body over the JSON limit.
async fn buffered(
    state: &AppState,
    request: Request,
) -> Result<(axum::http::request::Parts, axum::body::Bytes), Response> {
    let (parts, body) = request.into_parts();
    match axum::body::to_bytes(body, state.options.max_json_body).await {
        Ok(bytes) => Ok((parts, bytes)),
        Err(_) => {
            Err(ApiError::PayloadTooLarge("the request body is too large".into()).into_response())
        }
    }
}

/// `POST .../vnf_instances`: the rule sees the vendor of the package the body's `vnfdId`
/// names (a body that does not parse, or names no package, is the handler's to refuse).
async fn create(
    state: &AppState,
    policy: &Policy,
    name: &str,
    creds: &Map<String, Value>,
    request: Request,
    next: Next,
) -> Response {
    let (parts, bytes) = match buffered(state, request).await {
        Ok(b) => b,
        Err(refused) => return refused,
    };
    let vnfd = serde_json::from_slice::<Value>(&bytes)
        .ok()
        .and_then(|v| v.get("vnfdId").and_then(Value::as_str).map(str::to_owned));
    if let Some(vnfd) = vnfd
        && let Ok(Some((package, _))) = state.store.package_by_vnfd(&vnfd).await
    {
        let mut t = package_target(&package.info);
        t.retain(|k, _| k == "vendor");
        for key in ["project_id", "user_id"] {
            t.insert(key.into(), creds.get(key).cloned().unwrap_or(Value::Null));
        }
        if !decide(policy, name, Kind::Instance { v1: false }, &t, creds) {
            return refusal(name, Kind::Instance { v1: false }, &vnfd);
        }
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// `POST .../vims`: the rule sees the VIM of the request (Tacker's `{"vim": {...}}` or ours):
/// its `extra.area` and its project (`tenant_id`, else the caller's). Refused: `403`.
async fn create_vim(
    state: &AppState,
    policy: &Policy,
    name: &str,
    creds: &Map<String, Value>,
    request: Request,
    next: Next,
) -> Response {
    let (parts, bytes) = match buffered(state, request).await {
        Ok(b) => b,
        Err(refused) => return refused,
    };
    if let Ok(body) = serde_json::from_slice::<Value>(&bytes) {
        let vim = body.get("vim").unwrap_or(&body);
        let mut t = Map::new();
        if let Some(a) = vim.pointer("/extra/area").and_then(Value::as_str) {
            t.insert("area".into(), a.into());
        }
        let project = vim
            .get("tenant_id")
            .or_else(|| creds.get("project_id"))
            .cloned()
            .unwrap_or(Value::Null);
        t.insert("project_id".into(), project.clone());
        t.insert("tenant_id".into(), project);
        if !decide(policy, name, Kind::Vim, &t, creds) {
            return ApiError::Forbidden(format!("Policy doesn't allow {name} to be performed."))
                .into_response();
        }
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// The largest list answer this layer filters (a larger one is refused rather than shown
/// unfiltered).
const MAX_LIST_BYTES: usize = 256 * 1024 * 1024;

/// A successful JSON list answer with the members the caller may not see removed: an array,
/// or Tacker's `{"vims": [...]}`.
async fn filter_list(
    state: &AppState,
    policy: &Policy,
    name: &str,
    kind: Kind,
    creds: &Map<String, Value>,
    response: Response,
) -> Response {
    if response.status() != StatusCode::OK {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_LIST_BYTES).await else {
        return ApiError::Internal("the list is too large to filter by the enhanced policy".into())
            .into_response();
    };
    let Ok(mut value) = serde_json::from_slice::<Value>(&bytes) else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    let items = match &mut value {
        Value::Array(items) => items,
        Value::Object(o) => match o.get_mut("vims") {
            Some(Value::Array(items)) => items,
            _ => return Response::from_parts(parts, Body::from(bytes)),
        },
        _ => return Response::from_parts(parts, Body::from(bytes)),
    };
    let mut kept = Vec::with_capacity(items.len());
    for item in items.drain(..) {
        let Some(id) = item.get("id").and_then(Value::as_str) else {
            continue;
        };
        let Some(t) = target(state, kind, id, creds).await else {
            continue;
        };
        if decide(policy, name, kind, &t, creds) {
            kept.push(item);
        }
    }
    *items = kept;
    let body = serde_json::to_vec(&value).unwrap_or_default();
    parts.headers.remove(header::CONTENT_LENGTH);
    // The representation changed: its validator no longer holds.
    parts.headers.remove(header::ETAG);
    Response::from_parts(parts, Body::from(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_policy_name_is_declared_once_per_route() {
        let mut seen = std::collections::HashSet::new();
        for (m, t, ..) in POLICY_NAMES {
            assert!(seen.insert((m, t)), "{m} {t} twice");
        }
        assert_eq!(
            policy_of(&Method::GET, "/vnflcm/v2/vnf_instances/{vnfInstanceId}").map(|p| p.0),
            Some("os_nfv_orchestration_api_v2:vnf_instances:show")
        );
        assert_eq!(policy_of(&Method::GET, "/vnflcm/v2/vnf_lcm_op_occs"), None);
    }

    /// A route renamed without its entry here would silently lose its enforcement.
    #[test]
    fn every_policy_route_is_a_route_of_the_router() {
        let doc = crate::openapi::document();
        for (method, template, name, ..) in POLICY_NAMES {
            let path = template.replace("{*", "{");
            let op = &doc["paths"][&path][method.to_lowercase()];
            assert!(op.is_object(), "{method} {template} ({name}) is not routed");
        }
    }

    #[test]
    fn packages_have_a_vendor_once_onboarded() {
        assert_eq!(
            package_target(&json!({"onboardingState": "CREATED"}))["vendor"],
            "*"
        );
        let t = package_target(&json!({"onboardingState": "ONBOARDED", "vnfProvider": "x"}));
        assert_eq!(t["vendor"], "x");
        assert!(package_target(&json!({"onboardingState": "ONBOARDED"})).is_empty());
    }

    #[test]
    fn clients_are_admins_and_keystone_callers_carry_their_roles() {
        let policy = Policy::parse("p", "context_is_admin: role:admin\n").unwrap();
        let c = credentials(&policy, Some(&Caller::client("c1")));
        assert_eq!(c["is_admin"], true);
        let keystone = Caller {
            client_id: "u".into(),
            keystone: Some(crate::auth::KeystoneCaller {
                user_id: "u".into(),
                user_name: "user".into(),
                project_id: Some("p1".into()),
                project_name: Some("demo".into()),
                roles: vec!["member".into(), "TENANT_ns1".into()],
            }),
            may_write: true,
            all_projects: true,
            oauth_issuer: None,
            certificate: None,
        };
        let c = credentials(&policy, Some(&keystone));
        assert_eq!(c["is_admin"], false, "the file's context_is_admin decides");
        assert_eq!(c["project_id"], "p1");
        assert_eq!(c["roles"], json!(["member", "TENANT_ns1"]));
        let c = credentials(&Policy::default(), Some(&keystone));
        assert_eq!(
            c["is_admin"], true,
            "without the rule, the admin roles decide"
        );
    }
}
