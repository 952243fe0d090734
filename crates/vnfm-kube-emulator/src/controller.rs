//! The tiny controller: moves objects along the way a cluster's controllers and kubelets do,
//! in one level-triggered pass over the whole store, run after every write and on a tick.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::registry::ResourceType;
use crate::store::{Store, Terminating, TypeKey, WriteError, not_found};
use crate::util::{LabelSelector, now_rfc3339, short_hash};
use crate::{EmulatorConfig, Hooks, Shared, lock};

fn s<'a>(o: &'a Value, pointer: &str) -> &'a str {
    o.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn name(o: &Value) -> String {
    s(o, "/metadata/name").to_string()
}

fn ns(o: &Value) -> String {
    s(o, "/metadata/namespace").to_string()
}

fn uid(o: &Value) -> String {
    s(o, "/metadata/uid").to_string()
}

fn deleting(o: &Value) -> bool {
    o.pointer("/metadata/deletionTimestamp").is_some()
}

fn int(o: &Value, pointer: &str) -> i64 {
    o.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

fn key(group: &str, plural: &str) -> TypeKey {
    (group.to_string(), plural.to_string())
}

fn pods_key() -> TypeKey {
    key("", "pods")
}

fn controller_uid(o: &Value) -> Option<String> {
    o.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|r| r["controller"] == json!(true))
        .and_then(|r| r["uid"].as_str())
        .map(String::from)
}

fn owner_ref(owner: &Value) -> Value {
    json!({
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": name(owner),
        "uid": uid(owner),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

fn pod_ready(p: &Value) -> bool {
    !deleting(p)
        && s(p, "/status/phase") == "Running"
        && p.pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|c| {
                c.iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            })
}

/// Registers the configured nodes (Ready, with their kernel versions and labels).
pub(crate) fn register_nodes(shared: &Arc<Shared>) {
    let nodes = shared.config.nodes.clone();
    let _ = shared.write(|st| {
        let Some(rt) = st.registry.by_kind("v1", "Node").cloned() else {
            return Ok(());
        };
        for (i, n) in nodes.iter().enumerate() {
            let labels: serde_json::Map<String, Value> = n
                .labels
                .iter()
                .map(|(k, v)| (k.clone(), json!(v)))
                .collect();
            let created = st.create(
                &rt,
                None,
                json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": n.name, "labels": labels}}),
                None,
            )?;
            let mut node = created;
            node["status"] = json!({
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                "addresses": [{"type": "InternalIP", "address": format!("192.168.0.{}", i + 10)}],
                "nodeInfo": {"kernelVersion": n.kernel_version, "osImage": "Debian GNU/Linux 12", "kubeletVersion": "v1.33.0", "architecture": "amd64", "operatingSystem": "linux"},
                "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
            });
            st.put(&key("", "nodes"), node);
        }
        Ok::<_, WriteError>(())
    });
}

/// The controller loop: a pass after every write and on every tick, until stopped.
pub(crate) async fn run(shared: Arc<Shared>) {
    let mut stop = shared.stopped();
    loop {
        tokio::select! {
            _ = stop.changed() => return,
            _ = shared.wake.notified() => {}
            _ = tokio::time::sleep(shared.config.tick) => {}
        }
        let hooks = lock(&shared.hooks).clone();
        let _ = shared.write(|st| {
            reconcile(st, &hooks, &shared.config);
            Ok::<_, WriteError>(())
        });
    }
}

/// Deletes an object the way the API server does for `DELETE`: namespaces and pods (with a
/// grace period) go `Terminating`, foreground deletion and finalizers keep the object until
/// its dependents are gone, `Orphan` releases dependents, the rest is removed at once (the
/// controller then garbage-collects dependents).
pub(crate) fn delete_object(
    st: &mut Store,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    policy: &str,
    grace: Option<i64>,
) -> Result<(u16, Value), WriteError> {
    let tk = rt.storage_key();
    let obj = st
        .get(&tk, ns, name)
        .cloned()
        .ok_or_else(|| not_found(rt, name))?;
    let is_pod = rt.group.is_empty() && rt.kind == "Pod";
    if deleting(&obj) {
        if is_pod && grace == Some(0) {
            let gone = st.remove(&tk, ns, name).unwrap_or(obj);
            return Ok((200, gone));
        }
        // A shorter grace period than the one running shortens it, as the API server does.
        let current = int(&obj, "/metadata/deletionGracePeriodSeconds");
        if is_pod && let Some(g) = grace.filter(|g| *g < current) {
            let mut shorter = obj.clone();
            shorter["metadata"]["deletionGracePeriodSeconds"] = json!(g);
            let kill_at = Instant::now() + Duration::from_secs(g.max(0) as u64);
            if let Some(t) = st.deleting_at.get_mut(&uid(&obj)) {
                t.kill_at = t.kill_at.min(kill_at);
            }
            let out = st.put(&tk, shorter);
            return Ok((200, out));
        }
        return Ok((200, obj));
    }
    if rt.group == "apiextensions.k8s.io" && rt.kind == "CustomResourceDefinition" {
        let types: Vec<TypeKey> = st
            .registry_types_of_crd(name)
            .into_iter()
            .map(|t| t.storage_key())
            .collect();
        for t in types {
            for o in st.list(&t, None) {
                st.remove(&t, &ns_of(&o), &self::name(&o));
            }
        }
        st.registry.remove_crd(name);
        let gone = st.remove(&tk, ns, name).unwrap_or(obj);
        return Ok((200, gone));
    }
    let mut marked = obj.clone();
    marked["metadata"]["deletionTimestamp"] = json!(now_rfc3339());
    if rt.group.is_empty() && rt.kind == "Namespace" {
        marked["status"] = json!({"phase": "Terminating"});
        let out = st.put(&tk, marked);
        return Ok((200, out));
    }
    if is_pod && grace != Some(0) {
        // Without a grace period in the request, the pod's own applies (30 s by default).
        let g = grace
            .or_else(|| {
                obj.pointer("/spec/terminationGracePeriodSeconds")
                    .and_then(Value::as_i64)
            })
            .unwrap_or(30)
            .max(0);
        marked["metadata"]["deletionGracePeriodSeconds"] = json!(g);
        st.deleting_at
            .insert(uid(&obj), Terminating::new(Duration::from_secs(g as u64)));
        let out = st.put(&tk, marked);
        return Ok((200, out));
    }
    if policy == "Orphan" {
        let owner = uid(&obj);
        for (k, o) in st.all() {
            let refs = o
                .pointer("/metadata/ownerReferences")
                .and_then(Value::as_array);
            if refs.is_some_and(|r| r.iter().any(|r| r["uid"] == owner.as_str())) {
                let mut o = o.clone();
                if let Some(Value::Array(r)) = o.pointer_mut("/metadata/ownerReferences") {
                    r.retain(|r| r["uid"] != owner.as_str());
                }
                st.put(&k, o);
            }
        }
    }
    let has_finalizers = obj
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| !f.is_empty());
    if policy == "Foreground" || has_finalizers {
        if policy == "Foreground" {
            let f = marked["metadata"]
                .get("finalizers")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let mut f: Vec<Value> = f;
            if !f.contains(&json!("foregroundDeletion")) {
                f.push(json!("foregroundDeletion"));
            }
            marked["metadata"]["finalizers"] = json!(f);
        }
        let out = st.put(&tk, marked);
        return Ok((200, out));
    }
    let gone = st.remove(&tk, ns, name).unwrap_or(obj);
    Ok((200, gone))
}

fn ns_of(o: &Value) -> String {
    ns(o)
}

impl Store {
    fn registry_types_of_crd(&self, crd: &str) -> Vec<ResourceType> {
        let mut out = Vec::new();
        for (g, v, p) in self.crd_type_names(crd) {
            if let Some(rt) = self.registry.by_plural(&g, &v, &p) {
                out.push(rt.clone());
            }
        }
        out
    }

    fn crd_type_names(&self, crd: &str) -> Vec<(String, String, String)> {
        let Some(obj) = self.get(
            &key("apiextensions.k8s.io", "customresourcedefinitions"),
            "",
            crd,
        ) else {
            return Vec::new();
        };
        let group = s(obj, "/spec/group").to_string();
        let plural = s(obj, "/spec/names/plural").to_string();
        obj.pointer("/spec/versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| v["name"].as_str())
            .map(|v| (group.clone(), v.to_string(), plural.clone()))
            .collect()
    }
}

/// Per-pass index of objects by uid: `(kind, name, controller uid)`.
struct Index {
    by_uid: HashMap<String, (String, String, Option<String>)>,
}

impl Index {
    fn build(st: &Store) -> Index {
        let by_uid = st
            .all()
            .into_iter()
            .map(|(_, o)| {
                (
                    uid(&o),
                    (
                        o["kind"].as_str().unwrap_or("").to_string(),
                        name(&o),
                        controller_uid(&o),
                    ),
                )
            })
            .collect();
        Index { by_uid }
    }

    /// Whether a hook blocks `obj` or one of its controllers.
    fn blocked(&self, hooks: &Hooks, obj: &Value) -> bool {
        let kind = obj["kind"].as_str().unwrap_or("");
        if hooks.never_ready.contains(&(kind.to_string(), name(obj))) {
            return true;
        }
        let mut cur = controller_uid(obj);
        for _ in 0..4 {
            let Some(u) = cur else { return false };
            let Some((k, n, next)) = self.by_uid.get(&u) else {
                return false;
            };
            if hooks.never_ready.contains(&(k.clone(), n.clone())) {
                return true;
            }
            cur = next.clone();
        }
        false
    }
}

fn reconcile(st: &mut Store, hooks: &Hooks, cfg: &EmulatorConfig) {
    crds(st, hooks);
    namespaces(st);
    garbage_collect(st);
    let index = Index::build(st);
    pods(st, hooks, cfg, &index);
    deployments(st);
    replicasets(st);
    statefulsets(st);
    daemonsets(st);
    jobs(st);
    crate::volumes::reconcile(st, cfg, &|c| index.blocked(hooks, c));
    endpoint_slices(st);
}

fn crds(st: &mut Store, hooks: &Hooks) {
    let tk = key("apiextensions.k8s.io", "customresourcedefinitions");
    for crd in st.list(&tk, None) {
        if deleting(&crd)
            || hooks
                .never_ready
                .contains(&("CustomResourceDefinition".into(), name(&crd)))
        {
            continue;
        }
        let established = crd
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|c| {
                c.iter()
                    .any(|c| c["type"] == "Established" && c["status"] == "True")
            });
        let crd_name = name(&crd);
        let group = s(&crd, "/spec/group").to_string();
        let kind = s(&crd, "/spec/names/kind").to_string();
        let plural = s(&crd, "/spec/names/plural").to_string();
        let namespaced = s(&crd, "/spec/scope") != "Cluster";
        let types: Vec<ResourceType> = crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|v| v["served"] != json!(false))
            .filter_map(|v| {
                Some(ResourceType {
                    group: group.clone(),
                    version: v["name"].as_str()?.to_string(),
                    kind: kind.clone(),
                    plural: plural.clone(),
                    namespaced,
                    status: v.pointer("/subresources/status").is_some(),
                    create_only: false,
                    crd: Some(crd_name.clone()),
                })
            })
            .collect();
        let served_now = types.iter().all(|t| {
            st.registry
                .by_plural(&t.group, &t.version, &t.plural)
                .is_some()
        });
        if !served_now {
            st.registry.add_crd(&crd_name, types);
        }
        if !established {
            let mut c = crd.clone();
            c["status"] = json!({
                "conditions": [
                    {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "lastTransitionTime": now_rfc3339()},
                    {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "lastTransitionTime": now_rfc3339()},
                ],
                "acceptedNames": crd.pointer("/spec/names").cloned().unwrap_or(json!({})),
                "storedVersions": crd.pointer("/spec/versions").and_then(Value::as_array).map(|vs| vs.iter().filter(|v| v["storage"] == json!(true)).map(|v| v["name"].clone()).collect::<Vec<_>>()).unwrap_or_default(),
            });
            st.put(&tk, c);
        }
    }
}

fn namespaces(st: &mut Store) {
    let tk = key("", "namespaces");
    for n in st.list(&tk, None).into_iter().filter(deleting) {
        let target = name(&n);
        let inside: Vec<(TypeKey, Value)> = st
            .all()
            .into_iter()
            .filter(|(_, o)| {
                o.pointer("/metadata/namespace").and_then(Value::as_str) == Some(target.as_str())
            })
            .collect();
        if inside.is_empty() {
            st.remove(&tk, "", &target);
            continue;
        }
        for (k, o) in inside {
            if k == pods_key() {
                if !deleting(&o) {
                    let mut p = o.clone();
                    p["metadata"]["deletionTimestamp"] = json!(now_rfc3339());
                    p["metadata"]["deletionGracePeriodSeconds"] = json!(30);
                    st.deleting_at
                        .insert(uid(&o), Terminating::new(Duration::from_secs(30)));
                    st.put(&k, p);
                }
            } else if !deleting(&o)
                && let Some(rt) = st.registry.by_storage_key(&k).cloned()
            {
                // As the namespace controller does: a delete, which finalizers may hold.
                let _ = delete_object(st, &rt, &target, &name(&o), "Background", None);
            }
        }
    }
}

fn garbage_collect(st: &mut Store) {
    let all = st.all();
    let live: HashMap<String, (bool, bool)> = all
        .iter()
        .map(|(_, o)| {
            let foreground = o
                .pointer("/metadata/finalizers")
                .and_then(Value::as_array)
                .is_some_and(|f| f.contains(&json!("foregroundDeletion")));
            (uid(o), (deleting(o), foreground))
        })
        .collect();
    let mut has_dependents: HashSet<String> = HashSet::new();
    for (k, o) in &all {
        let refs: Vec<String> = o
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|r| r["uid"].as_str().map(String::from))
            .collect();
        if refs.is_empty() {
            continue;
        }
        for r in &refs {
            has_dependents.insert(r.clone());
        }
        let orphaned = refs.iter().all(|r| !live.contains_key(r));
        let owner_foreground = refs
            .iter()
            .any(|r| live.get(r).is_some_and(|(d, f)| *d && *f));
        // Dependents of an owner deleted in the foreground go in the foreground too, so the
        // owner is gone only once everything below it is.
        let policy = if owner_foreground {
            "Foreground"
        } else {
            "Background"
        };
        if (orphaned || owner_foreground)
            && !deleting(o)
            && let Some(rt) = st.registry.by_storage_key(k).cloned()
        {
            let _ = delete_object(st, &rt, &ns(o), &name(o), policy, None);
        }
    }
    // Foreground owners whose dependents are all gone lose their finalizer (and are deleted).
    for (k, o) in all {
        let is_fg = o
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| f.contains(&json!("foregroundDeletion")));
        if is_fg && deleting(&o) && !has_dependents.contains(&uid(&o)) {
            let mut o = o.clone();
            if let Some(Value::Array(f)) = o.pointer_mut("/metadata/finalizers") {
                f.retain(|x| x != "foregroundDeletion");
            }
            st.put(&k, o);
        }
    }
}

fn pods(st: &mut Store, hooks: &Hooks, cfg: &EmulatorConfig, index: &Index) {
    let tk = pods_key();
    let nodes: Vec<String> = st.list(&key("", "nodes"), None).iter().map(name).collect();
    for p in st.list(&tk, None) {
        let id = uid(&p);
        if deleting(&p) {
            // Containers exit after the termination delay, or are killed when the grace
            // period ends, whichever comes first.
            let due = st.deleting_at.get(&id).is_none_or(|t| {
                let now = Instant::now();
                now >= t.since + cfg.termination_delay || now >= t.kill_at
            });
            if due {
                st.remove(&tk, &ns(&p), &name(&p));
            }
            continue;
        }
        let mut next = p.clone();
        // The scheduler binds a pod as soon as it sees it.
        if next
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .is_none()
            && !nodes.is_empty()
        {
            let i = (st.next_seq() as usize) % nodes.len();
            next["spec"]["nodeName"] = json!(nodes[i]);
        }
        let age = st
            .created_at
            .get(&id)
            .map(Instant::elapsed)
            .unwrap_or_default();
        let images: Vec<String> = p
            .pointer("/spec/containers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c["image"].as_str().map(String::from))
            .collect();
        let bad_image = images
            .iter()
            .find(|i| hooks.failing_images.contains(*i))
            .cloned();
        let blocked = index.blocked(hooks, &p);
        let job_pod = p
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .is_some_and(|r| r.iter().any(|r| r["kind"] == "Job"));
        let phase = s(&p, "/status/phase").to_string();
        let node = s(&next, "/spec/nodeName").to_string();
        let node_index = nodes.iter().position(|n| *n == node).unwrap_or(0);
        let containers: Vec<(String, String)> = p
            .pointer("/spec/containers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|c| {
                (
                    c["name"].as_str().unwrap_or("").to_string(),
                    c["image"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect();
        if let Some(image) = &bad_image {
            if phase == "Pending" && p.pointer("/status/containerStatuses").is_none() {
                next["status"] = json!({
                    "phase": "Pending",
                    "conditions": [
                        {"type": "PodScheduled", "status": "True"},
                        {"type": "Ready", "status": "False", "reason": "ContainersNotReady", "message": "containers with unready status"},
                    ],
                    "containerStatuses": containers.iter().map(|(n, i)| json!({
                        "name": n, "image": i, "ready": false, "restartCount": 0,
                        "state": {"waiting": {"reason": "ImagePullBackOff", "message": format!("Back-off pulling image \"{image}\"")}},
                    })).collect::<Vec<_>>(),
                });
            }
        } else if blocked {
            if phase == "Pending" && p.pointer("/status/conditions").is_none() {
                next["status"] = json!({
                    "phase": "Pending",
                    "conditions": [
                        {"type": "PodScheduled", "status": "True"},
                        {"type": "Ready", "status": "False", "reason": "ContainersNotReady", "message": "containers with unready status"},
                    ],
                });
            }
        } else if phase == "Pending" && age >= cfg.ready_delay {
            let n = st.next_seq();
            let ip = format!("10.244.{}.{}", node_index + 1, n % 250 + 2);
            next["status"] = json!({
                "phase": "Running",
                "podIP": ip,
                "podIPs": [{"ip": ip}],
                "hostIP": format!("192.168.0.{}", node_index + 10),
                "startTime": now_rfc3339(),
                "conditions": [
                    {"type": "PodScheduled", "status": "True"},
                    {"type": "Initialized", "status": "True"},
                    {"type": "ContainersReady", "status": "True"},
                    {"type": "Ready", "status": "True"},
                ],
                "containerStatuses": containers.iter().map(|(n, i)| json!({
                    "name": n, "image": i, "imageID": format!("docker.io/library/{i}@sha256:0"), "ready": true,
                    "started": true, "restartCount": 0, "state": {"running": {"startedAt": now_rfc3339()}},
                })).collect::<Vec<_>>(),
            });
        } else if job_pod && phase == "Running" && age >= cfg.ready_delay + cfg.job_pod_duration {
            next["status"]["phase"] = json!("Succeeded");
            next["status"]["conditions"] = json!([
                {"type": "PodScheduled", "status": "True"},
                {"type": "Ready", "status": "False", "reason": "PodCompleted"},
            ]);
        }
        if next != p {
            st.put(&tk, next);
        }
    }
}

/// Pods controlled by `owner_uid` (not terminating).
fn owned_pods(st: &Store, namespace: &str, owner_uid: &str) -> Vec<Value> {
    st.list(&pods_key(), Some(namespace))
        .into_iter()
        .filter(|p| controller_uid(p).as_deref() == Some(owner_uid) && !deleting(p))
        .collect()
}

fn new_pod(
    st: &mut Store,
    owner: &Value,
    template: &Value,
    pod_name: &str,
    extra_labels: &[(String, String)],
    node: Option<&str>,
) {
    let Some(rt) = st.registry.by_kind("v1", "Pod").cloned() else {
        return;
    };
    let mut metadata = template.get("metadata").cloned().unwrap_or(json!({}));
    metadata["name"] = json!(pod_name);
    metadata["ownerReferences"] = json!([owner_ref(owner)]);
    if !metadata.get("labels").is_some_and(Value::is_object) {
        metadata["labels"] = json!({});
    }
    for (k, v) in extra_labels {
        metadata["labels"][k] = json!(v);
    }
    let mut spec = template.get("spec").cloned().unwrap_or(json!({}));
    if let Some(n) = node {
        spec["nodeName"] = json!(n);
    }
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec});
    let _ = st.create(&rt, Some(&ns(owner)), pod, None);
}

fn set_status(st: &mut Store, tk: &TypeKey, obj: &Value, status: Value) {
    if obj.get("status") != Some(&status) {
        let mut o = obj.clone();
        o["status"] = status;
        st.put(tk, o);
    }
}

fn deployments(st: &mut Store) {
    let dk = key("apps", "deployments");
    let rk = key("apps", "replicasets");
    for d in st.list(&dk, None).into_iter().filter(|d| !deleting(d)) {
        let desired = int(&d, "/spec/replicas");
        let template = d.pointer("/spec/template").cloned().unwrap_or(json!({}));
        let hash = short_hash(&template);
        let rs_name = format!("{}-{}", name(&d), hash);
        let namespace = ns(&d);
        let d_uid = uid(&d);
        let owned: Vec<Value> = st
            .list(&rk, Some(&namespace))
            .into_iter()
            .filter(|r| controller_uid(r).as_deref() == Some(d_uid.as_str()))
            .collect();
        let current = owned.iter().find(|r| name(r) == rs_name).cloned();
        match &current {
            None => {
                let Some(rt) = st.registry.by_kind("apps/v1", "ReplicaSet").cloned() else {
                    continue;
                };
                let mut tpl = template.clone();
                if !tpl
                    .pointer("/metadata/labels")
                    .is_some_and(Value::is_object)
                {
                    tpl["metadata"]["labels"] = json!({});
                }
                tpl["metadata"]["labels"]["pod-template-hash"] = json!(hash);
                let mut selector = d.pointer("/spec/selector").cloned().unwrap_or(json!({}));
                if !selector.get("matchLabels").is_some_and(Value::is_object) {
                    selector["matchLabels"] = json!({});
                }
                selector["matchLabels"]["pod-template-hash"] = json!(hash);
                let rs = json!({
                    "apiVersion": "apps/v1", "kind": "ReplicaSet",
                    "metadata": {
                        "name": rs_name,
                        "labels": tpl["metadata"]["labels"],
                        "ownerReferences": [owner_ref(&d)],
                        "annotations": {"deployment.kubernetes.io/revision": (owned.len() + 1).to_string()},
                    },
                    "spec": {"replicas": desired, "selector": selector, "template": tpl},
                });
                let _ = st.create(&rt, Some(&namespace), rs, None);
            }
            Some(r) if int(r, "/spec/replicas") != desired => {
                let mut r = r.clone();
                r["spec"]["replicas"] = json!(desired);
                st.put(&rk, r);
            }
            Some(_) => {}
        }
        let new_ready = current
            .as_ref()
            .map_or(0, |r| int(r, "/status/readyReplicas"));
        if new_ready >= desired {
            for old in owned
                .iter()
                .filter(|r| name(r) != rs_name && int(r, "/spec/replicas") != 0)
            {
                let mut o = old.clone();
                o["spec"]["replicas"] = json!(0);
                st.put(&rk, o);
            }
        }
        let owned: Vec<Value> = st
            .list(&rk, Some(&namespace))
            .into_iter()
            .filter(|r| controller_uid(r).as_deref() == Some(d_uid.as_str()))
            .collect();
        let replicas: i64 = owned.iter().map(|r| int(r, "/status/replicas")).sum();
        let ready: i64 = owned.iter().map(|r| int(r, "/status/readyReplicas")).sum();
        let updated = owned
            .iter()
            .find(|r| name(r) == rs_name)
            .map_or(0, |r| int(r, "/status/replicas"));
        let complete = updated == desired && replicas == desired && ready >= desired;
        let status = json!({
            "observedGeneration": int(&d, "/metadata/generation"),
            "replicas": replicas,
            "updatedReplicas": updated,
            "readyReplicas": ready,
            "availableReplicas": ready,
            "unavailableReplicas": (desired - ready).max(0),
            "conditions": [
                {"type": "Available", "status": if ready >= desired { "True" } else { "False" },
                 "reason": if ready >= desired { "MinimumReplicasAvailable" } else { "MinimumReplicasUnavailable" }},
                {"type": "Progressing", "status": "True",
                 "reason": if complete { "NewReplicaSetAvailable" } else { "ReplicaSetUpdated" },
                 "message": format!("ReplicaSet \"{rs_name}\" {}", if complete { "has successfully progressed." } else { "is progressing." })},
            ],
        });
        set_status(st, &dk, &d, status);
    }
}

fn replicasets(st: &mut Store) {
    let rk = key("apps", "replicasets");
    for r in st.list(&rk, None).into_iter().filter(|r| !deleting(r)) {
        let desired = int(&r, "/spec/replicas");
        let namespace = ns(&r);
        let pods = owned_pods(st, &namespace, &uid(&r));
        let have = pods.len() as i64;
        let template = r.pointer("/spec/template").cloned().unwrap_or(json!({}));
        for _ in have..desired {
            let pod_name = format!("{}-{}", name(&r), st.short_suffix());
            new_pod(st, &r, &template, &pod_name, &[], None);
        }
        if have > desired {
            // Unready pods go first, then the newest.
            let mut sorted: Vec<&Value> = pods.iter().collect();
            sorted.sort_by(|a, b| {
                pod_ready(a)
                    .cmp(&pod_ready(b))
                    .then_with(|| s(b, "/metadata/uid").cmp(s(a, "/metadata/uid")))
            });
            for p in sorted.into_iter().take((have - desired) as usize) {
                if let Some(rt) = st.registry.by_kind("v1", "Pod").cloned() {
                    let _ = delete_object(st, &rt, &namespace, &name(p), "Background", None);
                }
            }
        }
        let pods = owned_pods(st, &namespace, &uid(&r));
        let ready = pods.iter().filter(|p| pod_ready(p)).count() as i64;
        let status = json!({
            "observedGeneration": int(&r, "/metadata/generation"),
            "replicas": pods.len(),
            "fullyLabeledReplicas": pods.len(),
            "readyReplicas": ready,
            "availableReplicas": ready,
        });
        set_status(st, &rk, &r, status);
    }
}

fn statefulsets(st: &mut Store) {
    let sk = key("apps", "statefulsets");
    let pvck = key("", "persistentvolumeclaims");
    for set in st.list(&sk, None).into_iter().filter(|x| !deleting(x)) {
        let desired = int(&set, "/spec/replicas").max(0);
        let namespace = ns(&set);
        let set_name = name(&set);
        let template = set.pointer("/spec/template").cloned().unwrap_or(json!({}));
        let revision = format!("{set_name}-{}", short_hash(&template));
        let parallel = s(&set, "/spec/podManagementPolicy") == "Parallel";
        let pods: BTreeMap<i64, Value> = owned_pods(st, &namespace, &uid(&set))
            .into_iter()
            .filter_map(|p| {
                let ordinal = name(&p).rsplit('-').next()?.parse().ok()?;
                Some((ordinal, p))
            })
            .collect();
        let all_pods: Vec<Value> = st
            .list(&pods_key(), Some(&namespace))
            .into_iter()
            .filter(|p| controller_uid(p).as_deref() == Some(uid(&set).as_str()))
            .collect();
        let terminating = all_pods.iter().any(deleting);
        for i in 0..desired {
            if pods.contains_key(&i)
                || all_pods
                    .iter()
                    .any(|p| name(p) == format!("{set_name}-{i}"))
            {
                continue;
            }
            let previous_ready = i == 0 || pods.get(&(i - 1)).is_some_and(pod_ready);
            if !parallel && !previous_ready {
                break;
            }
            // Claims from volumeClaimTemplates, kept after the pod goes (Retain).
            for t in set
                .pointer("/spec/volumeClaimTemplates")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
            {
                let claim = format!("{}-{set_name}-{i}", name(&t));
                if st.get(&pvck, &namespace, &claim).is_some() {
                    continue;
                }
                let mut labels = t.pointer("/metadata/labels").cloned().unwrap_or(json!({}));
                if let Some(m) = set
                    .pointer("/spec/selector/matchLabels")
                    .and_then(Value::as_object)
                {
                    for (k, v) in m {
                        labels[k] = v.clone();
                    }
                }
                if let Some(rt) = st.registry.by_kind("v1", "PersistentVolumeClaim").cloned() {
                    let pvc = json!({
                        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                        "metadata": {"name": claim, "labels": labels},
                        "spec": t.get("spec").cloned().unwrap_or(json!({})),
                    });
                    let _ = st.create(&rt, Some(&namespace), pvc, None);
                }
            }
            let extra = [
                ("controller-revision-hash".to_string(), revision.clone()),
                (
                    "statefulset.kubernetes.io/pod-name".to_string(),
                    format!("{set_name}-{i}"),
                ),
            ];
            // The pod mounts its claims, as the StatefulSet controller sets them up.
            let mut pod_template = template.clone();
            for t in set
                .pointer("/spec/volumeClaimTemplates")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
            {
                let claim = format!("{}-{set_name}-{i}", name(&t));
                if !pod_template
                    .pointer("/spec/volumes")
                    .is_some_and(Value::is_array)
                {
                    pod_template["spec"]["volumes"] = json!([]);
                }
                if let Some(Value::Array(vols)) = pod_template.pointer_mut("/spec/volumes") {
                    vols.push(
                        json!({"name": name(&t), "persistentVolumeClaim": {"claimName": claim}}),
                    );
                }
            }
            new_pod(
                st,
                &set,
                &pod_template,
                &format!("{set_name}-{i}"),
                &extra,
                None,
            );
            if !parallel {
                break;
            }
        }
        // Scale down from the highest ordinal, one at a time.
        if !terminating
            && let Some((_, p)) = pods.iter().rev().find(|(i, _)| **i >= desired)
            && let Some(rt) = st.registry.by_kind("v1", "Pod").cloned()
        {
            let _ = delete_object(st, &rt, &namespace, &name(p), "Background", None);
        }
        // Rolling update: replace the highest pod of an old revision once all are ready.
        let all_ready = pods.len() as i64 == desired && pods.values().all(pod_ready);
        if !terminating
            && all_ready
            && let Some((_, p)) = pods
                .iter()
                .rev()
                .find(|(_, p)| s(p, "/metadata/labels/controller-revision-hash") != revision)
            && let Some(rt) = st.registry.by_kind("v1", "Pod").cloned()
        {
            let _ = delete_object(st, &rt, &namespace, &name(p), "Background", None);
        }
        let pods = owned_pods(st, &namespace, &uid(&set));
        let ready = pods.iter().filter(|p| pod_ready(p)).count();
        let updated = pods
            .iter()
            .filter(|p| s(p, "/metadata/labels/controller-revision-hash") == revision)
            .count();
        let status = json!({
            "observedGeneration": int(&set, "/metadata/generation"),
            "replicas": pods.len(),
            "readyReplicas": ready,
            "availableReplicas": ready,
            "currentReplicas": updated,
            "updatedReplicas": updated,
            "currentRevision": revision,
            "updateRevision": revision,
        });
        set_status(st, &sk, &set, status);
    }
}

fn daemonsets(st: &mut Store) {
    let dk = key("apps", "daemonsets");
    let nodes: Vec<String> = st.list(&key("", "nodes"), None).iter().map(name).collect();
    for ds in st.list(&dk, None).into_iter().filter(|x| !deleting(x)) {
        let namespace = ns(&ds);
        let template = ds.pointer("/spec/template").cloned().unwrap_or(json!({}));
        let revision = short_hash(&template);
        let pods = owned_pods(st, &namespace, &uid(&ds));
        for node in &nodes {
            let on_node: Vec<&Value> = pods
                .iter()
                .filter(|p| s(p, "/spec/nodeName") == node)
                .collect();
            if on_node.is_empty() {
                let pod_name = format!("{}-{}", name(&ds), st.short_suffix());
                let extra = [("controller-revision-hash".to_string(), revision.clone())];
                new_pod(st, &ds, &template, &pod_name, &extra, Some(node));
            } else if let Some(old) = on_node
                .iter()
                .find(|p| s(p, "/metadata/labels/controller-revision-hash") != revision)
                && let Some(rt) = st.registry.by_kind("v1", "Pod").cloned()
            {
                let _ = delete_object(st, &rt, &namespace, &name(old), "Background", Some(0));
            }
        }
        let pods = owned_pods(st, &namespace, &uid(&ds));
        let ready = pods.iter().filter(|p| pod_ready(p)).count();
        let updated = pods
            .iter()
            .filter(|p| s(p, "/metadata/labels/controller-revision-hash") == revision)
            .count();
        let status = json!({
            "observedGeneration": int(&ds, "/metadata/generation"),
            "desiredNumberScheduled": nodes.len(),
            "currentNumberScheduled": pods.len(),
            "updatedNumberScheduled": updated,
            "numberReady": ready,
            "numberAvailable": ready,
            "numberMisscheduled": 0,
        });
        set_status(st, &dk, &ds, status);
    }
}

fn jobs(st: &mut Store) {
    let jk = key("batch", "jobs");
    for job in st.list(&jk, None).into_iter().filter(|x| !deleting(x)) {
        let namespace = ns(&job);
        let completions = int(&job, "/spec/completions").max(1);
        let parallelism = int(&job, "/spec/parallelism").max(1);
        let all: Vec<Value> = st
            .list(&pods_key(), Some(&namespace))
            .into_iter()
            .filter(|p| controller_uid(p).as_deref() == Some(uid(&job).as_str()))
            .collect();
        let succeeded = all
            .iter()
            .filter(|p| s(p, "/status/phase") == "Succeeded")
            .count() as i64;
        let active = all
            .iter()
            .filter(|p| s(p, "/status/phase") != "Succeeded" && !deleting(p))
            .count() as i64;
        let complete = succeeded >= completions;
        if !complete {
            let template = job.pointer("/spec/template").cloned().unwrap_or(json!({}));
            let mut running = active;
            while running < parallelism && succeeded + running < completions {
                let pod_name = format!("{}-{}", name(&job), st.short_suffix());
                let extra = [("job-name".to_string(), name(&job))];
                new_pod(st, &job, &template, &pod_name, &extra, None);
                running += 1;
            }
        }
        let mut status =
            json!({"active": if complete { 0 } else { active }, "succeeded": succeeded});
        status["startTime"] = job
            .pointer("/status/startTime")
            .cloned()
            .unwrap_or_else(|| json!(now_rfc3339()));
        if complete {
            status["completionTime"] = job
                .pointer("/status/completionTime")
                .cloned()
                .unwrap_or_else(|| json!(now_rfc3339()));
            status["conditions"] = json!([
                {"type": "SuccessCriteriaMet", "status": "True"},
                {"type": "Complete", "status": "True"},
            ]);
        }
        set_status(st, &jk, &job, status);
    }
}

fn endpoint_slices(st: &mut Store) {
    let ek = key("discovery.k8s.io", "endpointslices");
    let Some(rt) = st
        .registry
        .by_kind("discovery.k8s.io/v1", "EndpointSlice")
        .cloned()
    else {
        return;
    };
    for svc in st
        .list(&key("", "services"), None)
        .into_iter()
        .filter(|x| !deleting(x))
    {
        let Some(selector) = svc
            .pointer("/spec/selector")
            .and_then(Value::as_object)
            .cloned()
        else {
            continue;
        };
        if selector.is_empty() {
            continue;
        }
        let namespace = ns(&svc);
        let sel = LabelSelector::from_map(&selector);
        let endpoints: Vec<Value> = st
            .list(&pods_key(), Some(&namespace))
            .into_iter()
            .filter(|p| sel.matches(p) && p.pointer("/status/podIP").is_some())
            .map(|p| {
                json!({
                    "addresses": [s(&p, "/status/podIP")],
                    "conditions": {"ready": pod_ready(&p), "serving": pod_ready(&p), "terminating": deleting(&p)},
                    "nodeName": s(&p, "/spec/nodeName"),
                    "targetRef": {"kind": "Pod", "name": name(&p), "namespace": namespace, "uid": uid(&p)},
                })
            })
            .collect();
        let ports: Vec<Value> = svc
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|p| {
                let port = p["targetPort"].as_i64().or_else(|| p["port"].as_i64()).unwrap_or(0);
                json!({"name": p.get("name").cloned().unwrap_or(json!("")), "port": port, "protocol": p.get("protocol").cloned().unwrap_or(json!("TCP"))})
            })
            .collect();
        let slice_name = format!("{}-{}", name(&svc), &short_hash(&json!(uid(&svc)))[..5]);
        match st.get(&ek, &namespace, &slice_name).cloned() {
            None => {
                let slice = json!({
                    "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                    "metadata": {
                        "name": slice_name,
                        "labels": {"kubernetes.io/service-name": name(&svc), "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"},
                        "ownerReferences": [owner_ref(&svc)],
                    },
                    "addressType": "IPv4",
                    "endpoints": endpoints,
                    "ports": ports,
                });
                let _ = st.create(&rt, Some(&namespace), slice, None);
            }
            Some(existing) => {
                if existing.get("endpoints") != Some(&json!(endpoints))
                    || existing.get("ports") != Some(&json!(ports))
                {
                    let mut e = existing.clone();
                    e["endpoints"] = json!(endpoints);
                    e["ports"] = json!(ports);
                    st.put(&ek, e);
                }
            }
        }
    }
}
