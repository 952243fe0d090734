//! The HTTP side: authentication, path routing, the verbs (get, list, watch, create, apply,
//! patch, update, delete) and `Status` error bodies, as the real API server answers them.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use crate::registry::ResourceType;
use crate::store::{WriteError, check_preconditions, not_found};
use crate::util::{FieldSelector, LabelSelector};
use crate::{LogEntry, Shared};

fn json_response(code: u16, v: &Value) -> Response {
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        v.to_string(),
    )
        .into_response()
}

/// A `Status` failure body.
pub(crate) fn status_body(e: &WriteError, name: Option<&str>, kind: Option<&str>) -> Value {
    let mut details = json!({});
    if let Some(n) = name {
        details["name"] = json!(n);
    }
    if let Some(k) = kind {
        details["kind"] = json!(k);
    }
    if !e.causes.is_empty() {
        details["causes"] = json!(e.causes);
    }
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": e.message,
        "reason": e.reason,
        "details": details,
        "code": e.code,
    })
}

fn error_response(e: &WriteError, name: Option<&str>, rt: Option<&ResourceType>) -> Response {
    json_response(e.code, &status_body(e, name, rt.map(|r| r.plural.as_str())))
}

/// The parsed resource part of a request path.
struct Target {
    rt: ResourceType,
    namespace: Option<String>,
    name: Option<String>,
    sub: Option<String>,
}

enum Route {
    Version,
    CoreVersions,
    Groups,
    Resources(String, String),
    Group(String),
    Resource(Target),
    NotFound(String),
}

fn route(shared: &Shared, path: &str) -> Route {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest): (String, String, &[&str]) = match segs.as_slice() {
        ["version"] => return Route::Version,
        ["api"] => return Route::CoreVersions,
        ["apis"] => return Route::Groups,
        ["api", v, rest @ ..] => (String::new(), (*v).to_string(), rest),
        ["apis", g] => return Route::Group((*g).to_string()),
        ["apis", g, v, rest @ ..] => ((*g).to_string(), (*v).to_string(), rest),
        _ => {
            return Route::NotFound(format!(
                "the server could not find the requested resource ({path})"
            ));
        }
    };
    let store = shared.store();
    if !store.registry.serves(&group, &version) {
        return Route::NotFound(format!(
            "the server could not find the requested resource (group version {}{}{} is not served)",
            group,
            if group.is_empty() { "" } else { "/" },
            version
        ));
    }
    if rest.is_empty() {
        return Route::Resources(group, version);
    }
    // `namespaces/{ns}/{plural}...` is namespaced; `namespaces/{name}[/status]` is the
    // Namespace object itself.
    let is_namespace_sub =
        group.is_empty() && rest.len() == 3 && matches!(rest[2], "status" | "finalize");
    let (namespace, rest): (Option<String>, &[&str]) =
        if rest.len() >= 3 && rest[0] == "namespaces" && !is_namespace_sub {
            (Some(rest[1].to_string()), &rest[2..])
        } else {
            (None, rest)
        };
    let (plural, name, sub) = match rest {
        [p] => (*p, None, None),
        [p, n] => (*p, Some((*n).to_string()), None),
        [p, n, s] => (*p, Some((*n).to_string()), Some((*s).to_string())),
        _ => {
            return Route::NotFound(format!(
                "the server could not find the requested resource ({path})"
            ));
        }
    };
    match store.registry.by_plural(&group, &version, plural) {
        Some(rt) if namespace.is_none() || rt.namespaced => Route::Resource(Target {
            rt: rt.clone(),
            namespace,
            name,
            sub,
        }),
        _ => Route::NotFound(format!(
            "the server could not find the requested resource ({plural})"
        )),
    }
}

fn authorized(shared: &Shared, headers: &HeaderMap) -> bool {
    let auth = shared.auth();
    if auth.anonymous {
        return true;
    }
    let Some(value) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    if let Some(token) = value.strip_prefix("Bearer ") {
        return auth.tokens.iter().any(|t| t == token.trim());
    }
    if let Some(b64) = value.strip_prefix("Basic ") {
        let Ok(raw) = base64::engine::general_purpose::STANDARD.decode(b64.trim()) else {
            return false;
        };
        let Ok(pair) = String::from_utf8(raw) else {
            return false;
        };
        return pair
            .split_once(':')
            .is_some_and(|(u, p)| auth.basic.iter().any(|(bu, bp)| bu == u && bp == p));
    }
    false
}

fn parse_body(body: &Bytes) -> Result<Value, WriteError> {
    let text = std::str::from_utf8(body)
        .map_err(|_| WriteError::new(400, "BadRequest", "the request body is not UTF-8"))?;
    let v: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(_) => serde_saphyr::from_str(text).map_err(|e| {
            WriteError::new(
                400,
                "BadRequest",
                format!("the request body is not valid JSON or YAML: {e}"),
            )
        })?,
    };
    if !v.is_object() {
        return Err(WriteError::new(
            400,
            "BadRequest",
            "the request body must be an object",
        ));
    }
    Ok(v)
}

/// The single handler behind every path.
pub(crate) async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let query: HashMap<String, String> = Query::try_from_uri(&uri)
        .map(|Query(q)| q)
        .unwrap_or_default();
    let path = uri.path().to_string();
    let mut entry = LogEntry {
        method: method.to_string(),
        verb: String::new(),
        path: path.clone(),
        api_version: String::new(),
        kind: String::new(),
        namespace: None,
        name: None,
        subresource: None,
        field_manager: query.get("fieldManager").cloned(),
        code: 0,
    };
    let response = if !authorized(&shared, &headers) {
        entry.verb = "unauthorized".into();
        json_response(
            401,
            &status_body(
                &WriteError::new(401, "Unauthorized", "Unauthorized"),
                None,
                None,
            ),
        )
    } else {
        dispatch(&shared, &method, &path, &query, &headers, &body, &mut entry).await
    };
    entry.code = response.status().as_u16();
    shared.push_log(entry);
    response
}

async fn dispatch(
    shared: &Arc<Shared>,
    method: &Method,
    path: &str,
    query: &HashMap<String, String>,
    headers: &HeaderMap,
    body: &Bytes,
    entry: &mut LogEntry,
) -> Response {
    let target = match route(shared, path) {
        Route::Version => {
            entry.verb = "discovery".into();
            return json_response(
                200,
                &json!({"major": "1", "minor": "33", "gitVersion": "v1.33.0-vnfm-emulator", "platform": "linux/amd64"}),
            );
        }
        Route::CoreVersions => {
            entry.verb = "discovery".into();
            return json_response(200, &shared.store().registry.core_versions());
        }
        Route::Groups => {
            entry.verb = "discovery".into();
            return json_response(200, &shared.store().registry.group_list());
        }
        Route::Group(g) => {
            entry.verb = "discovery".into();
            let list = shared.store().registry.group_list();
            let found = list["groups"]
                .as_array()
                .and_then(|gs| gs.iter().find(|x| x["name"] == g.as_str()).cloned());
            return match found {
                Some(mut v) => {
                    v["kind"] = json!("APIGroup");
                    v["apiVersion"] = json!("v1");
                    json_response(200, &v)
                }
                None => error_response(
                    &WriteError::new(
                        404,
                        "NotFound",
                        "the server could not find the requested resource",
                    ),
                    None,
                    None,
                ),
            };
        }
        Route::Resources(g, v) => {
            entry.verb = "discovery".into();
            return json_response(200, &shared.store().registry.resource_list(&g, &v));
        }
        Route::NotFound(msg) => {
            entry.verb = "unknown".into();
            return error_response(&WriteError::new(404, "NotFound", msg), None, None);
        }
        Route::Resource(t) => t,
    };
    entry.api_version = target.rt.api_version();
    entry.kind = target.rt.kind.clone();
    entry.namespace = target.namespace.clone();
    entry.name = target.name.clone();
    entry.subresource = target.sub.clone();
    if let Some(sub) = &target.sub
        && sub != "status"
    {
        entry.verb = "unknown".into();
        return error_response(
            &WriteError::new(
                404,
                "NotFound",
                format!("subresource {sub} is not served by the emulator"),
            ),
            target.name.as_deref(),
            Some(&target.rt),
        );
    }
    let status_only = target.sub.is_some();
    let ns = target.namespace.as_deref();
    let name = target.name.as_deref();
    let manager = query
        .get("fieldManager")
        .cloned()
        .or_else(|| {
            headers
                .get(header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .map(|ua| ua.split('/').next().unwrap_or("unknown").to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let rt = &target.rt;
    let verb = match (method.clone(), name) {
        (Method::GET, None) if is_true(query.get("watch")) => "watch",
        (Method::GET, None) => "list",
        (Method::GET, Some(_)) => "get",
        (Method::POST, _) => "create",
        (Method::PUT, _) => "update",
        (Method::PATCH, _) => "patch",
        (Method::DELETE, _) => "delete",
        _ => "",
    };
    if shared.take_hold(verb, &rt.kind) {
        shared.held().await;
    }
    if let Some(code) = shared.take_fault(verb, &rt.kind) {
        entry.verb = verb.into();
        let reason = match code {
            500 => "InternalError",
            503 => "ServiceUnavailable",
            410 => "Expired",
            _ => "Unknown",
        };
        let e = WriteError::new(
            code,
            reason,
            format!("injected fault: {verb} {} answered {code}", rt.kind),
        );
        if verb == "watch" {
            let line = format!(
                "{}\n",
                json!({"type": "ERROR", "object": status_body(&e, None, None)})
            );
            return Response::builder()
                .status(200)
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(line))
                .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response());
        }
        return error_response(&e, name, Some(rt));
    }
    let result: Result<(u16, Value), WriteError> = match (method.clone(), name) {
        (Method::GET, None) if is_true(query.get("watch")) => {
            entry.verb = "watch".into();
            return watch(shared, rt, ns, query);
        }
        (Method::GET, None) => {
            entry.verb = "list".into();
            list(shared, rt, ns, query)
        }
        (Method::GET, Some(n)) => {
            entry.verb = "get".into();
            shared
                .store()
                .get(&rt.storage_key(), &ns_key(rt, ns), n)
                .cloned()
                .map(|o| (200, o))
                .ok_or_else(|| not_found(rt, n))
        }
        (Method::POST, None) => {
            entry.verb = "create".into();
            match parse_body(body) {
                Err(e) => Err(e),
                Ok(obj) => {
                    entry.name = obj
                        .pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .map(String::from);
                    create(shared, rt, ns, obj, &manager)
                }
            }
        }
        (Method::PUT, Some(n)) => {
            entry.verb = "update".into();
            match parse_body(body) {
                Err(e) => Err(e),
                Ok(obj) => shared
                    .write(|s| s.update(rt, ns, n, obj, &manager, status_only, true))
                    .map(|o| (200, o)),
            }
        }
        (Method::PATCH, Some(n)) => {
            let ctype = headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string();
            patch(shared, rt, ns, n, &ctype, query, body, status_only, entry)
        }
        (Method::DELETE, Some(n)) => {
            entry.verb = "delete".into();
            delete(shared, rt, ns, n, body, query)
        }
        (Method::DELETE, None) => {
            entry.verb = "deletecollection".into();
            delete_collection(shared, rt, ns, query)
        }
        _ => Err(WriteError::new(
            405,
            "MethodNotAllowed",
            format!("{method} is not supported on this path"),
        )),
    };
    match result {
        Ok((code, v)) => json_response(code, &v),
        Err(e) => error_response(&e, name.or(entry.name.as_deref()), Some(rt)),
    }
}

fn is_true(v: Option<&String>) -> bool {
    v.is_some_and(|v| v == "true" || v == "1")
}

fn ns_key(rt: &ResourceType, ns: Option<&str>) -> String {
    if rt.namespaced {
        ns.unwrap_or("default").to_string()
    } else {
        String::new()
    }
}

fn selectors(
    query: &HashMap<String, String>,
) -> Result<(LabelSelector, FieldSelector), WriteError> {
    let labels = LabelSelector::parse(query.get("labelSelector").map_or("", String::as_str))
        .map_err(|e| WriteError::new(400, "BadRequest", e.to_string()))?;
    let fields = FieldSelector::parse(query.get("fieldSelector").map_or("", String::as_str));
    Ok((labels, fields))
}

fn list(
    shared: &Shared,
    rt: &ResourceType,
    ns: Option<&str>,
    query: &HashMap<String, String>,
) -> Result<(u16, Value), WriteError> {
    let (labels, fields) = selectors(query)?;
    let store = shared.store();
    // As the real API server answers: the items of a list carry no `apiVersion`/`kind`, only
    // the list itself does (a client must know the kind it listed).
    let items: Vec<Value> = store
        .list(&rt.storage_key(), ns)
        .into_iter()
        .filter(|o| labels.matches(o) && fields.matches(o))
        .map(|mut o| {
            if let Some(m) = o.as_object_mut() {
                m.remove("apiVersion");
                m.remove("kind");
            }
            o
        })
        .collect();
    Ok((
        200,
        json!({
            "kind": format!("{}List", rt.kind),
            "apiVersion": rt.api_version(),
            "metadata": {"resourceVersion": store.resource_version().to_string()},
            "items": items,
        }),
    ))
}

fn create(
    shared: &Shared,
    rt: &ResourceType,
    ns: Option<&str>,
    mut obj: Value,
    manager: &str,
) -> Result<(u16, Value), WriteError> {
    let kind_ok = obj.get("kind").and_then(Value::as_str) == Some(rt.kind.as_str());
    if !kind_ok {
        return Err(WriteError::new(
            400,
            "BadRequest",
            format!(
                "the kind of the object does not match the path ({})",
                rt.kind
            ),
        ));
    }
    if let Some(body_ns) = obj.pointer("/metadata/namespace").and_then(Value::as_str)
        && rt.namespaced
        && ns.is_some_and(|n| n != body_ns)
    {
        return Err(WriteError::new(
            400,
            "BadRequest",
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    if rt.create_only {
        return review(shared, rt, ns, obj).map(|o| (201, o));
    }
    if rt.status
        && let Some(m) = obj.as_object_mut()
    {
        m.remove("status");
    }
    let paths = crate::util::leaf_paths(&obj);
    shared
        .write(|s| s.create(rt, ns, obj, Some((manager, "Update", paths))))
        .map(|o| (201, o))
}

/// Create-only types answer with a filled-in status and store nothing; a Binding assigns its
/// pod to a node. As the real API server: a Binding of a pod that has a node already is a
/// `409 Conflict` (the scheduler binds pods at once), and a LocalSubjectAccessReview whose
/// `spec.resourceAttributes.namespace` is not its own namespace is `422 Invalid`.
fn review(
    shared: &Shared,
    rt: &ResourceType,
    ns: Option<&str>,
    mut obj: Value,
) -> Result<Value, WriteError> {
    let ns = ns.unwrap_or("default").to_string();
    match rt.kind.as_str() {
        "TokenReview" => {
            obj["status"] =
                json!({"authenticated": false, "error": "the emulator does not review tokens"});
        }
        "Binding" => {
            let pod = obj
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let node = obj
                .pointer("/target/name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            shared.write(|s| {
                let key = (String::new(), "pods".to_string());
                let Some(mut p) = s.get(&key, &ns, &pod).cloned() else {
                    return Err(WriteError::new(
                        404,
                        "NotFound",
                        format!("pods \"{pod}\" not found"),
                    ));
                };
                if let Some(bound) = p.pointer("/spec/nodeName").and_then(Value::as_str) {
                    return Err(WriteError::new(
                        409,
                        "Conflict",
                        format!(
                            "Operation cannot be fulfilled on pods/binding \"{pod}\": pod {pod} is already assigned to node \"{bound}\""
                        ),
                    ));
                }
                p["spec"]["nodeName"] = json!(node);
                s.put(&key, p);
                Ok(())
            })?;
        }
        "LocalSubjectAccessReview" => {
            if let Some(attrs) = obj.pointer("/spec/resourceAttributes") {
                let asked = attrs["namespace"].as_str().unwrap_or("");
                if asked != ns {
                    let mut e = WriteError::new(
                        422,
                        "Invalid",
                        format!(
                            "LocalSubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.resourceAttributes.namespace: Invalid value: \"{asked}\": must match metadata.namespace"
                        ),
                    );
                    e.causes = vec![
                        json!({"reason": "FieldValueInvalid", "field": "spec.resourceAttributes.namespace",
                        "message": format!("Invalid value: \"{asked}\": must match metadata.namespace")}),
                    ];
                    return Err(e);
                }
            }
            obj["status"] = json!({"allowed": true, "reason": "the emulator allows everything"});
        }
        _ => {
            obj["status"] = json!({"allowed": true, "reason": "the emulator allows everything"});
        }
    }
    Ok(obj)
}

#[allow(clippy::too_many_arguments)]
fn patch(
    shared: &Shared,
    rt: &ResourceType,
    ns: Option<&str>,
    name: &str,
    ctype: &str,
    query: &HashMap<String, String>,
    body: &Bytes,
    status_only: bool,
    entry: &mut LogEntry,
) -> Result<(u16, Value), WriteError> {
    let patch = parse_body(body)?;
    let manager = query.get("fieldManager").cloned();
    let media = ctype.split(';').next().unwrap_or("").trim();
    match media {
        "application/apply-patch+yaml" => {
            entry.verb = "apply".into();
            let Some(manager) = manager else {
                return Err(WriteError::new(
                    400,
                    "BadRequest",
                    "PATCH requests with apply patches require a fieldManager",
                ));
            };
            let force = is_true(query.get("force"));
            shared
                .write(|s| s.apply(rt, ns, name, patch, &manager, force, status_only))
                .map(|(o, created)| (if created { 201 } else { 200 }, o))
        }
        "application/merge-patch+json" | "application/strategic-merge-patch+json" => {
            entry.verb = "patch".into();
            let manager = manager.unwrap_or_else(|| "unknown".into());
            shared
                .write(|s| {
                    let key = rt.storage_key();
                    let mut cur = s
                        .get(&key, &ns_key(rt, ns), name)
                        .cloned()
                        .ok_or_else(|| not_found(rt, name))?;
                    json_patch::merge(&mut cur, &patch);
                    // A resourceVersion in the patch is a precondition.
                    s.update(rt, ns, name, cur, &manager, status_only, true)
                })
                .map(|o| (200, o))
        }
        other => {
            entry.verb = "patch".into();
            Err(WriteError::new(
                415,
                "UnsupportedMediaType",
                format!("the emulator does not support patches of type {other:?}"),
            ))
        }
    }
}

fn delete(
    shared: &Shared,
    rt: &ResourceType,
    ns: Option<&str>,
    name: &str,
    body: &Bytes,
    query: &HashMap<String, String>,
) -> Result<(u16, Value), WriteError> {
    let opts: Value = if body.is_empty() {
        json!({})
    } else {
        serde_json::from_slice(body).unwrap_or(json!({}))
    };
    let policy = opts
        .get("propagationPolicy")
        .and_then(Value::as_str)
        .map(String::from)
        .or_else(|| query.get("propagationPolicy").cloned())
        .unwrap_or_else(|| "Background".into());
    let grace = opts
        .get("gracePeriodSeconds")
        .and_then(Value::as_i64)
        .or_else(|| query.get("gracePeriodSeconds").and_then(|g| g.parse().ok()));
    let precondition = |k: &str| {
        opts.pointer(&format!("/preconditions/{k}"))
            .and_then(Value::as_str)
            .map(String::from)
    };
    let (rv, uid) = (precondition("resourceVersion"), precondition("uid"));
    let ns = ns_key(rt, ns);
    shared.write(|s| {
        check_preconditions(s, rt, &ns, name, rv.as_deref(), uid.as_deref())?;
        crate::controller::delete_object(s, rt, &ns, name, &policy, grace)
    })
}

fn delete_collection(
    shared: &Shared,
    rt: &ResourceType,
    ns: Option<&str>,
    query: &HashMap<String, String>,
) -> Result<(u16, Value), WriteError> {
    let (labels, fields) = selectors(query)?;
    let names: Vec<(String, String)> = shared
        .store()
        .list(&rt.storage_key(), ns)
        .into_iter()
        .filter(|o| labels.matches(o) && fields.matches(o))
        .filter_map(|o| {
            Some((
                o.pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                o.pointer("/metadata/name")?.as_str()?.to_string(),
            ))
        })
        .collect();
    for (n_ns, n) in &names {
        let _ =
            shared.write(|s| crate::controller::delete_object(s, rt, n_ns, n, "Background", None));
    }
    Ok((
        200,
        json!({"kind": format!("{}List", rt.kind), "apiVersion": rt.api_version(), "metadata": {}, "items": []}),
    ))
}

fn watch(
    shared: &Arc<Shared>,
    rt: &ResourceType,
    ns: Option<&str>,
    query: &HashMap<String, String>,
) -> Response {
    let (labels, fields) = match selectors(query) {
        Ok(s) => s,
        Err(e) => return error_response(&e, None, Some(rt)),
    };
    let from: Option<u64> = query
        .get("resourceVersion")
        .filter(|v| !v.is_empty() && *v != "0")
        .and_then(|v| v.parse().ok());
    let timeout = query
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(Duration::from_secs(300));
    let key = rt.storage_key();
    let ns = ns.map(String::from);
    let matches = move |o: &Value| {
        let in_ns = ns
            .as_deref()
            .is_none_or(|n| o.pointer("/metadata/namespace").and_then(Value::as_str) == Some(n));
        in_ns && labels.matches(o) && fields.matches(o)
    };
    // Subscribe and read the backlog under one lock: writes publish under the same lock, so
    // nothing is missed or seen twice.
    let (mut rx, initial, backlog, expired) = {
        let store = shared.store();
        let rx = shared.subscribe();
        match from {
            Some(rv) if rv < store.oldest_rv() => (rx, Vec::new(), Vec::new(), true),
            Some(rv) => (rx, Vec::new(), store.changes_since(rv), false),
            None => {
                let current: Vec<Value> = store.list(&key, None);
                (rx, current, Vec::new(), false)
            }
        }
    };
    let (tx, out) = tokio::sync::mpsc::channel::<Bytes>(256);
    let stop = shared.stopped();
    let mut expire = shared.expired();
    tokio::spawn(async move {
        let line =
            |t: &str, o: &Value| Bytes::from(format!("{}\n", json!({"type": t, "object": o})));
        if expired {
            let e = WriteError::new(410, "Expired", "too old resource version");
            let _ = tx.send(line("ERROR", &status_body(&e, None, None))).await;
            return;
        }
        let mut last = 0u64;
        for o in initial.iter().filter(|o| matches(o)) {
            if tx.send(line("ADDED", o)).await.is_err() {
                return;
            }
        }
        for c in backlog.iter().filter(|c| c.key == key) {
            last = c.rv;
            if matches(&c.object) && tx.send(line(c.kind, &c.object)).await.is_err() {
                return;
            }
        }
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let mut stop = stop;
        loop {
            tokio::select! {
                _ = &mut deadline => return,
                _ = stop.changed() => return,
                _ = expire.changed() => {
                    let e = WriteError::new(410, "Expired", "too old resource version");
                    let _ = tx.send(line("ERROR", &status_body(&e, None, None))).await;
                    return;
                }
                msg = rx.recv() => match msg {
                    Ok(c) => {
                        if c.rv <= last || c.key != key {
                            continue;
                        }
                        last = c.rv;
                        if matches(&c.object) && tx.send(line(c.kind, &c.object)).await.is_err() {
                            return;
                        }
                    }
                    Err(RecvError::Lagged(_)) => {
                        let e = WriteError::new(410, "Expired", "the watch fell behind; start a new one");
                        let _ = tx.send(line("ERROR", &status_body(&e, None, None))).await;
                        return;
                    }
                    Err(RecvError::Closed) => return,
                },
            }
        }
    });
    let stream = tokio_stream::wrappers::ReceiverStream::new(out).map(Ok::<Bytes, Infallible>);
    Response::builder()
        .status(200)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}
