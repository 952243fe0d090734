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

use std::collections::BTreeMap;
use std::time::Duration;

use kube::api::DynamicObject;
use serde_json::Value;
use tokio::sync::watch;
use vnfm_driver_api::RunControl;

use crate::KubeError;
use crate::cluster::{Cluster, Kind, Written};
use crate::plan::{INSTANCE_LABEL, Planned, label_value};
use crate::watches::{Lease, compare_versions};

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

/// One shared watch a wait reads, with what it needs to narrow it to a namespace.
struct Watched {
    kind: Kind,
    namespace: Option<String>,
    lease: Lease,
    changes: watch::Receiver<u64>,
}

impl Watched {
    fn open(cluster: &Cluster, kind: Kind, namespace: Option<&str>, label: &str) -> Watched {
        let lease = cluster.watches().lease(&kind, namespace, label);
        Watched {
            changes: lease.changes(),
            kind,
            namespace: namespace.map(String::from),
            lease,
        }
    }

    /// The watch's error: a non-fatal one is noted in `last_error`; a cluster-wide watch the
    /// credentials may not make (403) is narrowed to the namespace; any other fatal one ends
    /// the wait.
    fn check(
        &mut self,
        cluster: &Cluster,
        doing: &str,
        last_error: &mut Option<String>,
    ) -> Result<(), KubeError> {
        match self.lease.error() {
            None => Ok(()),
            Some((e, false)) => {
                *last_error = Some(e);
                Ok(())
            }
            Some((e, true)) => {
                if e.starts_with("403")
                    && let Some(ns) = &self.namespace
                    && let Some(narrow) = cluster.watches().narrow(&self.lease, &self.kind, ns)
                {
                    self.changes = narrow.changes();
                    self.lease = narrow;
                    return Ok(());
                }
                if e.starts_with("401") {
                    return Err(KubeError::Unauthorized {
                        endpoint: cluster.access().endpoint.clone(),
                        vim: cluster.access().vim.clone(),
                    });
                }
                Err(KubeError::Api {
                    doing: doing.into(),
                    code: e
                        .split(' ')
                        .next()
                        .and_then(|c| c.parse().ok())
                        .unwrap_or(0),
                    reason: "WatchFailed".into(),
                    message: e,
                })
            }
        }
    }
}

/// Until any of `watched` changes.
async fn any_change(watched: &mut [Watched]) {
    if watched.is_empty() {
        return futures::future::pending().await;
    }
    let changes = watched.iter_mut().map(|w| Box::pin(w.changes.changed()));
    let _ = futures::future::select_all(changes).await;
}

/// What a shared cache's copy of an object tells a step that waits for it.
#[derive(Debug, PartialEq)]
enum Cached {
    /// The object this step waits for (as JSON): it carries the step's instance label and,
    /// when the step wrote it, is at least as new as that write.
    Current(Value),
    /// Not the object this step waits for: another instance's, or older than the step's
    /// write (a shared cache may still hold the state before it).
    Stale,
    /// The cache holds a version that cannot be ordered against the step's write (an API
    /// server whose resourceVersions are not comparable integers): only a read can tell.
    Unknown,
}

/// What the cached `o` is to a step that waits for it ([`Cached`]).
fn cached(o: &DynamicObject, label: &str, written: Option<&Written>) -> Cached {
    let Some(labels) = o.metadata.labels.as_ref() else {
        return Cached::Stale;
    };
    if labels.get(INSTANCE_LABEL).map(String::as_str) != Some(label) {
        return Cached::Stale;
    }
    if let Some(Written::At(Some(at))) = written {
        let seen = o.metadata.resource_version.as_deref().unwrap_or("");
        match compare_versions(seen, at) {
            Some(std::cmp::Ordering::Less) => return Cached::Stale,
            Some(_) => {}
            // Equality means something for any version: the cache holds the write itself.
            None if seen == at => {}
            None => return Cached::Unknown,
        }
    }
    Cached::Current(serde_json::to_value(o).unwrap_or(Value::Null))
}

/// `p` as the server holds it now, as JSON, when it is the object a step of instance `label`
/// waits for: the fallback of [`Cached::Unknown`], at most once a second per object.
async fn read_current(cluster: &Cluster, p: &Planned, label: &str) -> Option<Value> {
    let o = cluster.get(p).await.ok()??;
    match cached(&o, label, None) {
        Cached::Current(v) => Some(v),
        _ => None,
    }
}

/// The label key of a Service's EndpointSlices.
const SERVICE_NAME: &str = "kubernetes.io/service-name";

/// Waits until every object of `targets` is ready, reading the watches the cluster's steps
/// share (one per kind, of objects with an instance label; Services through their
/// EndpointSlices). Gives up after `timeout` (or the step's deadline) with an error naming
/// each object that is not ready and why.
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
    let label = label_value(instance_id);
    // One watch per (apiVersion, kind, namespace); shared, so usually of all namespaces.
    let mut groups: Vec<(String, String, Option<String>)> = Vec::new();
    let mut watched: Vec<Watched> = Vec::new();
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
                let (api_version, kind, ns) = &key;
                let k = cluster.kind(api_version, kind).await?.ok_or_else(|| {
                    KubeError::UnknownKind {
                        api_version: api_version.clone(),
                        kind: kind.clone(),
                        object: format!("{kind} objects being waited on"),
                    }
                })?;
                watched.push(Watched::open(cluster, k, ns.as_deref(), INSTANCE_LABEL));
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
    let slice_base = watched.len();
    let mut slice_groups: Vec<String> = Vec::new();
    if !services.is_empty()
        && let Some(k) = cluster.kind("discovery.k8s.io/v1", "EndpointSlice").await?
    {
        for ns in services.keys() {
            watched.push(Watched::open(cluster, k.clone(), Some(ns), SERVICE_NAME));
            slice_groups.push(ns.clone());
        }
    }
    let budget = timeout.min(control.remaining());
    let deadline = tokio::time::Instant::now() + budget;
    let mut last_error: Option<String> = None;
    let mut check = tokio::time::interval(Duration::from_millis(250));
    // Per target: the last read of the object and when, for caches that cannot tell.
    let mut reads: Vec<(Option<tokio::time::Instant>, Option<Value>)> =
        vec![(None, None); targets.len()];
    loop {
        for w in watched.iter_mut() {
            w.check(cluster, "watching objects for readiness", &mut last_error)?;
        }
        // Evaluate.
        let mut pending: Vec<String> = Vec::new();
        let mut pending_workloads: Vec<(&Planned, Value)> = Vec::new();
        for (t, p) in targets.iter().enumerate() {
            let w = &watched[group_of_target[t]];
            let from_cache = w
                .lease
                .get(p.namespace(), p.name())
                .map(|o| cached(&o, &label, cluster.written(p).as_ref()));
            let live = match from_cache {
                Some(Cached::Current(o)) => Some(o),
                Some(Cached::Stale) | None => None,
                Some(Cached::Unknown) => {
                    let (at, last) = &mut reads[t];
                    if at.is_none_or(|a| a.elapsed() >= Duration::from_secs(1)) {
                        *at = Some(tokio::time::Instant::now());
                        *last = read_current(cluster, p, &label).await;
                    }
                    last.clone()
                }
            };
            let state = match &live {
                None => Readiness::Pending("not found (not created yet, or deleted)".into()),
                Some(o) => {
                    if p.kind() == "Service" && p.group().is_empty() && needs_endpoints(o) {
                        let ns = p.namespace().unwrap_or("default");
                        let mine: Vec<Value> = slice_groups
                            .iter()
                            .position(|n| n == ns)
                            .map(|s| {
                                watched[slice_base + s].lease.filter(|sl| {
                                    sl.metadata.namespace.as_deref() == Some(ns)
                                        && sl
                                            .metadata
                                            .labels
                                            .as_ref()
                                            .and_then(|l| l.get(SERVICE_NAME))
                                            .map(String::as_str)
                                            == Some(p.name())
                                })
                            })
                            .unwrap_or_default()
                            .iter()
                            .map(|sl| serde_json::to_value(&**sl).unwrap_or(Value::Null))
                            .collect();
                        if service_ready(&mine.iter().collect::<Vec<_>>()) {
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
                    if let Some(o) = live {
                        pending_workloads.push((*p, o));
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
                for w in watched.iter().filter(|w| !w.lease.synced()) {
                    details.push_str(&format!(
                        "; the watch of {} objects never had its list answered by the Kubernetes API server at {} (VIM connection `{}`): the server or the network to it is stalled",
                        w.kind.resource.kind,
                        cluster.access().endpoint,
                        cluster.access().vim
                    ));
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
            _ = any_change(&mut watched) => {}
        }
    }
}

/// Whether the deleted `p` (uid `uid`) is gone by what `w`'s cache says: absent, or replaced
/// by an object with another uid, and the cache has passed the delete (`None`: the cache
/// cannot tell, a read must).
fn gone_in_cache(w: &Watched, p: &Planned, uid: &str, written: Option<Written>) -> Option<bool> {
    if !w.lease.synced() {
        return None;
    }
    if let Some(o) = w.lease.get(p.namespace(), p.name())
        && o.metadata.uid.as_deref() == Some(uid)
    {
        return Some(false);
    }
    match written {
        Some(Written::Deleted) => Some(true),
        Some(Written::Deleting {
            version: Some(v), ..
        }) if w.lease.passed(&v) == Some(true) => Some(true),
        _ => None,
    }
}

/// Waits until each `(object, uid)` is gone (deleted, or replaced by an object with another
/// uid). Objects with the instance label are watched through the shared watches of their
/// kind; others by name. A cancellation ends the wait within a quarter of a second; when
/// `timeout` (or the step's deadline) passes first, the error names each object still there
/// with the finalizers that hold it.
pub async fn wait_gone(
    cluster: &Cluster,
    gone: &[(Planned, String)],
    timeout: Duration,
    control: &RunControl,
) -> Result<(), KubeError> {
    let mut watched: Vec<Watched> = Vec::new();
    let mut keys: Vec<(String, String, Option<String>)> = Vec::new();
    // Per object: the watch it is read from, or a wait of its own.
    let mut shared: Vec<(usize, &Planned, &str)> = Vec::new();
    let mut own = Vec::new();
    for (p, uid) in gone {
        let kind = cluster.kind_of(p).await?;
        let written = cluster.written(p);
        if matches!(written, Some(Written::Deleted)) {
            continue;
        }
        if matches!(written, Some(Written::Deleting { labelled: true, .. })) {
            let key = (
                p.api_version().to_string(),
                p.kind().to_string(),
                p.namespace().map(String::from),
            );
            let w = match keys.iter().position(|k| *k == key) {
                Some(w) => w,
                None => {
                    watched.push(Watched::open(cluster, kind, p.namespace(), INSTANCE_LABEL));
                    keys.push(key);
                    watched.len() - 1
                }
            };
            shared.push((w, p, uid.as_str()));
            continue;
        }
        let api = cluster.api(&kind, p.namespace());
        let name = p.name().to_string();
        let uid = uid.clone();
        let display = p.display();
        own.push(async move {
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
    let own = futures::future::join_all(own);
    tokio::pin!(own);
    let mut own_done = false;
    // Not a poll of the cluster: the cancellation flag is looked at, and objects the shared
    // caches have not caught up with are read once a second.
    let mut check = tokio::time::interval(Duration::from_millis(250));
    let mut last_read = tokio::time::Instant::now();
    let mut confirmed: Vec<bool> = vec![false; shared.len()];
    let mut last_error = None;
    loop {
        for w in watched.iter_mut() {
            w.check(cluster, "watching deleted objects", &mut last_error)?;
        }
        let read_now = last_read.elapsed() >= Duration::from_secs(1);
        for (n, (w, p, uid)) in shared.iter().enumerate() {
            if confirmed[n] {
                continue;
            }
            match gone_in_cache(&watched[*w], p, uid, cluster.written(p)) {
                Some(true) => confirmed[n] = true,
                Some(false) => {}
                None if read_now => {
                    last_read = tokio::time::Instant::now();
                    if let Ok(live) = cluster.get(p).await
                        && live.is_none_or(|o| o.metadata.uid.as_deref() != Some(*uid))
                    {
                        confirmed[n] = true;
                    }
                }
                None => {}
            }
        }
        if own_done && confirmed.iter().all(|c| *c) {
            return Ok(());
        }
        tokio::select! {
            results = &mut own, if !own_done => {
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
                own_done = true;
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
            _ = any_change(&mut watched) => {}
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
mod tests;
