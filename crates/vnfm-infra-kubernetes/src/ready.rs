//! Readiness per kind, detected with watches (never a fixed-interval poll), and waiting for
//! deleted objects to be gone.
//!
//! | kind | ready when |
//! |---|---|
//! | Deployment | `observedGeneration` ≥ `generation`, `updatedReplicas` = `replicas` = `readyReplicas` = `availableReplicas` = `spec.replicas` (fails on `ProgressDeadlineExceeded`) |
//! | StatefulSet | `observedGeneration` ≥ `generation`, `readyReplicas` = `updatedReplicas` = `availableReplicas` = `spec.replicas` |
//! | DaemonSet | `observedGeneration` ≥ `generation`, `numberReady` = `updatedNumberScheduled` = `numberAvailable` = `desiredNumberScheduled` |
//! | ReplicaSet | `observedGeneration` ≥ `generation`, `readyReplicas` = `replicas` = `availableReplicas` = `spec.replicas` |
//! | Pod | `Running` with condition `Ready`, or `Succeeded` |
//! | Job | condition `Complete` (fails on `Failed`) |
//! | PersistentVolumeClaim | `Bound` (or `Pending` on a `WaitForFirstConsumer` storage class) |
//! | Service | with a selector: an EndpointSlice with a ready endpoint; without: at once |
//! | CustomResourceDefinition | condition `Established` |
//! | Namespace | phase `Active` |
//! | anything else (custom resources) | exists; a `Ready` condition, when it has one, is `True` |
//!
//! The rule is chosen by the kind being watched, never by the object's own `kind` field (the
//! items of a real API server's list response have none).

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use futures::stream::{BoxStream, StreamExt};
use kube::runtime::watcher;
use serde_json::Value;
use vnfm_driver_api::RunControl;

use crate::KubeError;
use crate::cluster::Cluster;
use crate::plan::{INSTANCE_LABEL, Planned, label_value};

/// The readiness of one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    /// Ready.
    Ready,
    /// Not yet: why.
    Pending(String),
    /// Failed for good: why.
    Failed(String),
}

fn i(o: &Value, p: &str) -> i64 {
    o.pointer(p).and_then(Value::as_i64).unwrap_or(0)
}

fn condition<'a>(o: &'a Value, t: &str) -> Option<&'a Value> {
    o.pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c["type"] == t)
}

fn condition_is(o: &Value, t: &str, status: &str) -> bool {
    condition(o, t).is_some_and(|c| c["status"] == status)
}

/// `Type=Status (reason: message)` for each condition, for messages.
pub fn conditions_text(o: &Value) -> String {
    let list: Vec<String> = o
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            let mut s = format!(
                "{}={}",
                c["type"].as_str().unwrap_or("?"),
                c["status"].as_str().unwrap_or("?")
            );
            if let Some(r) = c["reason"].as_str() {
                s.push_str(&format!(" ({r}"));
                if let Some(m) = c["message"].as_str() {
                    s.push_str(&format!(": {m}"));
                }
                s.push(')');
            }
            s
        })
        .collect();
    if list.is_empty() {
        "no conditions".into()
    } else {
        list.join(", ")
    }
}

fn generation_seen(o: &Value) -> Option<String> {
    let generation = i(o, "/metadata/generation");
    let observed = i(o, "/status/observedGeneration");
    (observed < generation).then(|| {
        format!("generation {generation} not yet observed (observedGeneration {observed})")
    })
}

/// `spec.replicas`, 1 when absent (the API server's default).
fn spec_replicas(o: &Value) -> i64 {
    o.pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1)
}

/// The readiness of a workload counted in pods: ready once its latest generation is observed
/// and the count at `ready` and both `others` (name, pointer) are `want`.
fn counted(o: &Value, want: i64, unit: &str, ready: &str, others: [(&str, &str); 2]) -> Readiness {
    if let Some(g) = generation_seen(o) {
        return Readiness::Pending(g);
    }
    let ready = i(o, ready);
    let [(a_name, a), (b_name, b)] = others;
    let (a, b) = (i(o, a), i(o, b));
    if ready == want && a == want && b == want {
        Readiness::Ready
    } else {
        Readiness::Pending(format!(
            "{ready}/{want} {unit} ready, {a} {a_name}, {b} {b_name}"
        ))
    }
}

/// The readiness of `o`, an object of `kind` in API group `group` (`""` for the core group),
/// judged by the rule of that kind (Services are judged by [`service_ready`]).
///
/// The kind is the one the caller watched or listed, never the object's own `kind` field:
/// the items of a real API server's list response carry no `apiVersion` or `kind`.
pub fn readiness(group: &str, kind: &str, o: &Value) -> Readiness {
    let pending = |s: String| Readiness::Pending(s);
    match (group, kind) {
        ("apps", "Deployment") => {
            if let Some(c) = condition(o, "Progressing")
                && c["reason"] == "ProgressDeadlineExceeded"
            {
                return Readiness::Failed(format!(
                    "progress deadline exceeded: {}",
                    c["message"].as_str().unwrap_or("")
                ));
            }
            if let Some(g) = generation_seen(o) {
                return pending(g);
            }
            let want = spec_replicas(o);
            let (updated, total, ready, available) = (
                i(o, "/status/updatedReplicas"),
                i(o, "/status/replicas"),
                i(o, "/status/readyReplicas"),
                i(o, "/status/availableReplicas"),
            );
            // Pods being deleted (a scale-in's, an update's old ones) are no longer counted in
            // `replicas`; the controller reports them here until they are gone.
            let terminating = i(o, "/status/terminatingReplicas");
            if updated == want
                && total == want
                && ready == want
                && available == want
                && terminating == 0
            {
                Readiness::Ready
            } else {
                pending(format!(
                    "{ready}/{want} replicas ready, {available} available, {updated} updated, {total} in total{}; {}",
                    if terminating > 0 {
                        format!(", {terminating} terminating")
                    } else {
                        String::new()
                    },
                    conditions_text(o)
                ))
            }
        }
        ("apps", "StatefulSet") => counted(
            o,
            spec_replicas(o),
            "replicas",
            "/status/readyReplicas",
            [
                ("available", "/status/availableReplicas"),
                ("updated", "/status/updatedReplicas"),
            ],
        ),
        ("apps", "DaemonSet") => counted(
            o,
            i(o, "/status/desiredNumberScheduled"),
            "pods",
            "/status/numberReady",
            [
                ("available", "/status/numberAvailable"),
                ("updated", "/status/updatedNumberScheduled"),
            ],
        ),
        ("apps", "ReplicaSet") | ("", "ReplicationController") => counted(
            o,
            spec_replicas(o),
            "replicas",
            "/status/readyReplicas",
            [
                ("available", "/status/availableReplicas"),
                ("in total", "/status/replicas"),
            ],
        ),
        ("", "Pod") => {
            let phase = o
                .pointer("/status/phase")
                .and_then(Value::as_str)
                .unwrap_or("Unknown");
            match phase {
                "Succeeded" => Readiness::Ready,
                "Failed" => Readiness::Failed(format!(
                    "the pod failed: {}",
                    o.pointer("/status/message")
                        .and_then(Value::as_str)
                        .unwrap_or("no message")
                )),
                "Running" if condition_is(o, "Ready", "True") => Readiness::Ready,
                _ => pending(format!(
                    "phase {phase}; {}{}",
                    conditions_text(o),
                    waiting_text(o)
                )),
            }
        }
        ("batch", "Job") => {
            if condition_is(o, "Failed", "True") {
                let c = condition(o, "Failed").cloned().unwrap_or(Value::Null);
                return Readiness::Failed(format!(
                    "the job failed ({}: {})",
                    c["reason"].as_str().unwrap_or("?"),
                    c["message"].as_str().unwrap_or("")
                ));
            }
            if condition_is(o, "Complete", "True") {
                Readiness::Ready
            } else {
                pending(format!(
                    "{} succeeded, {} active; not complete",
                    i(o, "/status/succeeded"),
                    i(o, "/status/active")
                ))
            }
        }
        ("", "PersistentVolumeClaim") => {
            let phase = o
                .pointer("/status/phase")
                .and_then(Value::as_str)
                .unwrap_or("Pending");
            if phase == "Bound" {
                Readiness::Ready
            } else {
                pending(format!("phase {phase}"))
            }
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            if condition_is(o, "Established", "True") {
                Readiness::Ready
            } else {
                pending(format!("not Established; {}", conditions_text(o)))
            }
        }
        ("", "Namespace") => {
            let phase = o
                .pointer("/status/phase")
                .and_then(Value::as_str)
                .unwrap_or("");
            if phase == "Active" {
                Readiness::Ready
            } else {
                pending(format!("phase {phase}"))
            }
        }
        _ => match condition(o, "Ready") {
            Some(c) if c["status"] != "True" => pending(conditions_text(o)),
            _ => Readiness::Ready,
        },
    }
}

/// `; pods of <workload>: <pod>: <waiting reasons>, ...` for the pods of workload `p` (live
/// state `o`) that are not Ready, read when a wait for it times out: the workload's own status
/// only counts pods, their containers say why (`ImagePullBackOff`, `CrashLoopBackOff`).
/// Empty for other kinds, and when the pods cannot be read.
async fn pods_waiting(cluster: &Cluster, p: &Planned, o: &Value) -> String {
    let workload = matches!(
        (p.group(), p.kind()),
        (
            "apps",
            "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet"
        ) | ("", "ReplicationController")
            | ("batch", "Job")
    );
    let labels = o
        .pointer("/spec/selector/matchLabels")
        .or_else(|| {
            o.pointer("/spec/selector")
                .filter(|_| p.kind() == "ReplicationController")
        })
        .and_then(Value::as_object);
    let (true, Some(labels), Some(ns)) = (workload, labels, p.namespace()) else {
        return String::new();
    };
    let selector: Vec<String> = labels
        .iter()
        .filter_map(|(k, v)| Some(format!("{k}={}", v.as_str()?)))
        .collect();
    let Ok(pod_kind) = cluster.pod_kind().await else {
        return String::new();
    };
    let Ok(pods) = cluster.list(&pod_kind, Some(ns), &selector.join(",")).await else {
        return String::new();
    };
    let mut waits: Vec<String> = Vec::new();
    for pod in pods {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let pod = serde_json::to_value(pod).unwrap_or(Value::Null);
        if let Readiness::Pending(why) = readiness("", "Pod", &pod) {
            waits.push(format!("{name}: {why}"));
        }
    }
    if waits.is_empty() {
        String::new()
    } else {
        format!("; pods of {}: {}", p.display(), waits.join("; "))
    }
}

fn waiting_text(o: &Value) -> String {
    let waits: Vec<String> = o
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| {
            let w = c.pointer("/state/waiting")?;
            Some(format!(
                "container {} waiting: {} {}",
                c["name"].as_str().unwrap_or("?"),
                w["reason"].as_str().unwrap_or(""),
                w["message"].as_str().unwrap_or("")
            ))
        })
        .collect();
    if waits.is_empty() {
        String::new()
    } else {
        format!("; {}", waits.join("; "))
    }
}

/// Whether the EndpointSlices seen for a Service have a ready endpoint.
pub fn service_ready(slices: &[&Value]) -> bool {
    slices.iter().any(|s| {
        s["endpoints"].as_array().is_some_and(|eps| {
            eps.iter()
                .any(|e| e.pointer("/conditions/ready") != Some(&Value::Bool(false)))
        })
    })
}

fn needs_endpoints(svc: &Value) -> bool {
    let selector = svc
        .pointer("/spec/selector")
        .and_then(Value::as_object)
        .is_some_and(|m| !m.is_empty());
    let external = svc.pointer("/spec/type").and_then(Value::as_str) == Some("ExternalName");
    selector && !external
}

/// What one watch stream reports.
enum Seen {
    Object(usize, Value),
    Gone(usize, String),
    Restart(usize),
    Error(String, bool),
}

fn watch_error(e: &watcher::Error) -> (String, bool) {
    let fatal_code = |c: u16| matches!(c, 401 | 403 | 404);
    match e {
        watcher::Error::InitialListFailed(kube::Error::Api(s))
        | watcher::Error::WatchStartFailed(kube::Error::Api(s))
        | watcher::Error::WatchFailed(kube::Error::Api(s)) => {
            (format!("{} {}", s.code, s.message), fatal_code(s.code))
        }
        watcher::Error::WatchError(s) => (format!("{} {}", s.code, s.message), fatal_code(s.code)),
        other => (other.to_string(), false),
    }
}

/// Waits until every object of `targets` is ready, watching their kinds (one watch per kind
/// and namespace, filtered by the instance label; Services through their EndpointSlices).
/// Gives up after `timeout` (or the step's deadline) with an error naming each object that is
/// not ready and why.
pub async fn wait_ready(
    cluster: &Cluster,
    targets: &[Planned],
    instance_id: &str,
    timeout: Duration,
    control: &RunControl,
) -> Result<(), KubeError> {
    // Objects without readiness of their own (shared networks, requests) are not waited on.
    let mut targets: Vec<&Planned> = targets.iter().filter(|p| !p.request && !p.shared).collect();
    // PVCs of a WaitForFirstConsumer class bind only when a pod uses them.
    let mut deferred = Vec::new();
    for (idx, p) in targets.iter().enumerate() {
        if p.kind() == "PersistentVolumeClaim"
            && p.group().is_empty()
            && let Some(class) = p
                .object
                .pointer("/spec/storageClassName")
                .and_then(Value::as_str)
            && let Some(k) = cluster.kind("storage.k8s.io/v1", "StorageClass").await?
            && let Ok(Some(sc)) = cluster.api(&k, None).get_opt(class).await
            && sc.data.get("volumeBindingMode").and_then(Value::as_str)
                == Some("WaitForFirstConsumer")
        {
            deferred.push(idx);
        }
    }
    let mut i = 0;
    targets.retain(|_| {
        let keep = !deferred.contains(&i);
        i += 1;
        keep
    });
    if targets.is_empty() {
        return Ok(());
    }
    let selector = format!("{INSTANCE_LABEL}={}", label_value(instance_id));
    // Watch groups: (apiVersion, kind, namespace) -> index.
    let mut groups: Vec<(String, String, Option<String>)> = Vec::new();
    let mut group_of_target: Vec<usize> = Vec::new();
    let mut services: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in &targets {
        let key = (
            p.api_version().to_string(),
            p.kind().to_string(),
            p.namespace().map(String::from),
        );
        let g = match groups.iter().position(|k| *k == key) {
            Some(g) => g,
            None => {
                groups.push(key);
                groups.len() - 1
            }
        };
        group_of_target.push(g);
        if p.kind() == "Service" && p.group().is_empty() && needs_endpoints(&p.object) {
            services
                .entry(p.namespace().unwrap_or("default").to_string())
                .or_default()
                .push(p.name().to_string());
        }
    }
    let mut streams: Vec<BoxStream<'static, Seen>> = Vec::new();
    for (g, (api_version, kind, ns)) in groups.iter().enumerate() {
        let k = cluster
            .kind(api_version, kind)
            .await?
            .ok_or_else(|| KubeError::UnknownKind {
                api_version: api_version.clone(),
                kind: kind.clone(),
                object: format!("{kind} objects being waited on"),
            })?;
        let api = cluster.api(&k, ns.as_deref());
        streams.push(watch_stream(
            api,
            watcher::Config::default().labels(&selector),
            g,
        ));
    }
    let slice_base = groups.len();
    let slice_kind = if services.is_empty() {
        None
    } else {
        cluster.kind("discovery.k8s.io/v1", "EndpointSlice").await?
    };
    let mut slice_groups: Vec<String> = Vec::new();
    if let Some(k) = &slice_kind {
        for (ns, names) in &services {
            let sel = format!("kubernetes.io/service-name in ({})", names.join(","));
            let api = cluster.api(k, Some(ns));
            streams.push(watch_stream(
                api,
                watcher::Config::default().labels(&sel),
                slice_base + slice_groups.len(),
            ));
            slice_groups.push(ns.clone());
        }
    }
    // Latest state: (group, name) -> object; slices: (namespace, slice name) -> slice.
    let mut seen: HashMap<(usize, String), Value> = HashMap::new();
    let mut slices: HashMap<(String, String), Value> = HashMap::new();
    let mut merged = futures::stream::select_all(streams);
    let budget = timeout.min(control.remaining());
    let deadline = tokio::time::Instant::now() + budget;
    let mut last_error: Option<String> = None;
    let mut check = tokio::time::interval(Duration::from_millis(250));
    loop {
        // Evaluate.
        let mut pending: Vec<String> = Vec::new();
        let mut pending_workloads: Vec<(&Planned, Value)> = Vec::new();
        for (t, p) in targets.iter().enumerate() {
            let g = group_of_target[t];
            let state = match seen.get(&(g, p.name().to_string())) {
                None => Readiness::Pending("not found (not created yet, or deleted)".into()),
                Some(o) => {
                    if p.kind() == "Service" && p.group().is_empty() && needs_endpoints(o) {
                        let ns = p.namespace().unwrap_or("default");
                        let mine: Vec<&Value> = slices
                            .iter()
                            .filter(|((sns, _), s)| {
                                sns == ns
                                    && s.pointer("/metadata/labels/kubernetes.io~1service-name")
                                        .and_then(Value::as_str)
                                        == Some(p.name())
                            })
                            .map(|(_, s)| s)
                            .collect();
                        if service_ready(&mine) {
                            Readiness::Ready
                        } else {
                            Readiness::Pending("no ready endpoint behind the selector".into())
                        }
                    } else {
                        readiness(p.group(), p.kind(), o)
                    }
                }
            };
            match state {
                Readiness::Ready => {}
                Readiness::Failed(why) => {
                    return Err(KubeError::Failed {
                        object: p.display(),
                        reason: why,
                    });
                }
                Readiness::Pending(why) => {
                    pending.push(format!("{}: {why}", p.display()));
                    if let Some(o) = seen.get(&(group_of_target[t], p.name().to_string())) {
                        pending_workloads.push((*p, o.clone()));
                    }
                }
            }
        }
        if pending.is_empty() {
            return Ok(());
        }
        tokio::select! {
            _ = tokio::time::sleep_until(deadline) => {
                let mut details = pending.join("; ");
                for (p, o) in &pending_workloads {
                    details.push_str(&pods_waiting(cluster, p, o).await);
                }
                if let Some(e) = &last_error {
                    details.push_str(&format!("; last watch error: {e}"));
                }
                if control.is_cancelled() {
                    return Err(KubeError::Cancelled("waiting for readiness".into()));
                }
                return Err(KubeError::NotReady {
                    what: format!("{} object{}", pending.len(), if pending.len() == 1 { "" } else { "s" }),
                    details,
                    budget,
                });
            }
            // Not a readiness poll: only the cancellation flag is looked at.
            _ = check.tick() => {
                if control.is_cancelled() {
                    return Err(KubeError::Cancelled("waiting for readiness".into()));
                }
            }
            item = merged.next() => match item {
                None => {
                    return Err(KubeError::NotReady {
                        what: format!("{} objects", pending.len()),
                        details: format!("{}; the watches ended", pending.join("; ")),
                        budget,
                    });
                }
                Some(Seen::Object(g, o)) => {
                    let name = o.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("").to_string();
                    if g >= slice_base {
                        let ns = slice_groups.get(g - slice_base).cloned().unwrap_or_default();
                        slices.insert((ns, name), o);
                    } else {
                        seen.insert((g, name), o);
                    }
                }
                Some(Seen::Gone(g, name)) => {
                    if g >= slice_base {
                        let ns = slice_groups.get(g - slice_base).cloned().unwrap_or_default();
                        slices.remove(&(ns, name));
                    } else {
                        seen.remove(&(g, name));
                    }
                }
                Some(Seen::Restart(g)) => {
                    if g >= slice_base {
                        let ns = slice_groups.get(g - slice_base).cloned().unwrap_or_default();
                        slices.retain(|(n, _), _| *n != ns);
                    } else {
                        seen.retain(|(sg, _), _| *sg != g);
                    }
                }
                Some(Seen::Error(e, fatal)) => {
                    if fatal {
                        if e.starts_with("401") {
                            return Err(KubeError::Unauthorized {
                                endpoint: cluster.access().endpoint.clone(),
                                vim: cluster.access().vim.clone(),
                            });
                        }
                        return Err(KubeError::Api {
                            doing: "watching objects for readiness".into(),
                            code: e.split(' ').next().and_then(|c| c.parse().ok()).unwrap_or(0),
                            reason: "WatchFailed".into(),
                            message: e,
                        });
                    }
                    last_error = Some(e);
                }
            },
        }
    }
}

fn watch_stream(
    api: kube::Api<kube::api::DynamicObject>,
    config: watcher::Config,
    g: usize,
) -> BoxStream<'static, Seen> {
    use kube::runtime::WatchStreamExt;
    watcher(api, config)
        .default_backoff()
        .map(move |ev| match ev {
            Ok(watcher::Event::Apply(o)) | Ok(watcher::Event::InitApply(o)) => {
                Seen::Object(g, serde_json::to_value(o).unwrap_or(Value::Null))
            }
            Ok(watcher::Event::Delete(o)) => Seen::Gone(g, o.metadata.name.unwrap_or_default()),
            Ok(watcher::Event::Init) => Seen::Restart(g),
            Ok(watcher::Event::InitDone) => Seen::Object(g, Value::Null),
            Err(e) => {
                let (text, fatal) = watch_error(&e);
                Seen::Error(text, fatal)
            }
        })
        .filter(|s| futures::future::ready(!matches!(s, Seen::Object(_, Value::Null))))
        .boxed()
}

/// Waits until each `(object, uid)` is gone (deleted, or replaced by an object with another
/// uid), watching each by name. A cancellation ends the wait within a quarter of a second;
/// when `timeout` (or the step's deadline) passes first, the error names each object still
/// there with the finalizers that hold it.
pub async fn wait_gone(
    cluster: &Cluster,
    gone: &[(Planned, String)],
    timeout: Duration,
    control: &RunControl,
) -> Result<(), KubeError> {
    let mut waits = Vec::new();
    for (p, uid) in gone {
        let kind = cluster.kind_of(p).await?;
        let api = cluster.api(&kind, p.namespace());
        let name = p.name().to_string();
        let uid = uid.clone();
        let display = p.display();
        waits.push(async move {
            let cond =
                kube::runtime::wait::conditions::is_deleted::<kube::api::DynamicObject>(&uid);
            kube::runtime::wait::await_condition(api, &name, cond)
                .await
                .map_err(|e| (display.clone(), e.to_string()))
                .map(|_| ())
        });
    }
    let budget = timeout.min(control.remaining());
    let deadline = tokio::time::Instant::now() + budget;
    let all = futures::future::join_all(waits);
    tokio::pin!(all);
    // Not a poll of the cluster: only the cancellation flag is looked at.
    let mut check = tokio::time::interval(Duration::from_millis(250));
    loop {
        tokio::select! {
            results = &mut all => {
                for r in results {
                    if let Err((what, e)) = r {
                        return Err(KubeError::Api {
                            doing: format!("waiting for {what} to be deleted"),
                            code: 0,
                            reason: "WatchFailed".into(),
                            message: e,
                        });
                    }
                }
                return Ok(());
            }
            _ = tokio::time::sleep_until(deadline) => {
                if control.is_cancelled() {
                    return Err(KubeError::Cancelled("waiting for deleted objects to be gone".into()));
                }
                let held = still_there(cluster, gone).await;
                if held.is_empty() {
                    return Ok(());
                }
                return Err(KubeError::Blocked { objects: held.join("; "), budget });
            }
            _ = check.tick() => {
                if control.is_cancelled() {
                    return Err(KubeError::Cancelled("waiting for deleted objects to be gone".into()));
                }
            }
        }
    }
}

/// Each object of `gone` that is still there, with what holds it: its finalizers and since
/// when its deletion was asked.
async fn still_there(cluster: &Cluster, gone: &[(Planned, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (p, uid) in gone {
        let live = match cluster.get(p).await {
            Ok(Some(live)) => live,
            Ok(None) => continue,
            Err(e) => {
                out.push(format!("{} (cannot be read: {e})", p.display()));
                continue;
            }
        };
        if live.metadata.uid.as_deref() != Some(uid.as_str()) {
            continue;
        }
        let finalizers = live.metadata.finalizers.clone().unwrap_or_default();
        let held = if finalizers.is_empty() {
            "no finalizers".to_string()
        } else {
            format!("finalizers {}", finalizers.join(", "))
        };
        let since = live
            .metadata
            .deletion_timestamp
            .as_ref()
            .map(|t| format!(", deletion requested at {}", t.0))
            .unwrap_or_default();
        out.push(format!("{} is still there ({held}{since})", p.display()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn deployment_readiness_needs_the_observed_generation_and_all_replicas() {
        let mut d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"generation": 2}, "spec": {"replicas": 2},
            "status": {"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 2, "availableReplicas": 2}});
        assert!(
            matches!(readiness("apps", "Deployment", &d), Readiness::Pending(ref w) if w.contains("generation 2"))
        );
        d["status"]["observedGeneration"] = json!(2);
        assert_eq!(readiness("apps", "Deployment", &d), Readiness::Ready);
        // A scale-in's removed pod still exits.
        d["status"]["terminatingReplicas"] = json!(1);
        assert!(
            matches!(readiness("apps", "Deployment", &d), Readiness::Pending(ref w) if w.contains("1 terminating"))
        );
        d["status"]["terminatingReplicas"] = json!(0);
        assert_eq!(readiness("apps", "Deployment", &d), Readiness::Ready);
        d["status"]["readyReplicas"] = json!(1);
        d["status"]["conditions"] = json!([{"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable"}]);
        let Readiness::Pending(why) = readiness("apps", "Deployment", &d) else {
            panic!()
        };
        assert!(
            why.contains("1/2") && why.contains("Available=False (MinimumReplicasUnavailable)"),
            "{why}"
        );
        d["status"]["conditions"] = json!([{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": "too slow"}]);
        assert!(matches!(
            readiness("apps", "Deployment", &d),
            Readiness::Failed(_)
        ));
    }

    #[test]
    fn pods_jobs_claims_and_crds() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "status": {"phase": "Pending",
            "containerStatuses": [{"name": "c", "state": {"waiting": {"reason": "ImagePullBackOff", "message": "bad image"}}}]}});
        let Readiness::Pending(why) = readiness("", "Pod", &pod) else {
            panic!()
        };
        assert!(why.contains("ImagePullBackOff"), "{why}");
        let job = json!({"apiVersion": "batch/v1", "kind": "Job", "status": {"conditions": [{"type": "Complete", "status": "True"}]}});
        assert_eq!(readiness("batch", "Job", &job), Readiness::Ready);
        let failed = json!({"apiVersion": "batch/v1", "kind": "Job", "status": {"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]}});
        assert!(
            matches!(readiness("batch", "Job", &failed), Readiness::Failed(ref w) if w.contains("BackoffLimitExceeded"))
        );
        let pvc = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "status": {"phase": "Bound"}});
        assert_eq!(
            readiness("", "PersistentVolumeClaim", &pvc),
            Readiness::Ready
        );
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "status": {}});
        assert!(matches!(
            readiness("apiextensions.k8s.io", "CustomResourceDefinition", &crd),
            Readiness::Pending(_)
        ));
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap"});
        assert_eq!(readiness("", "ConfigMap", &cm), Readiness::Ready);
        assert!(service_ready(&[
            &json!({"endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": true}}]})
        ]));
        assert!(!service_ready(&[&json!({"endpoints": []})]));
    }
}
