//! The tiny controller: moves objects along the way a cluster's controllers and kubelets do,
//! in one level-triggered pass over the whole store, run after every write and on a tick.
//!
//! Each concern is its own module: [`deletion`] (what `DELETE` does, the namespace controller
//! and the garbage collector), [`crds`](mod@crds) (CRDs served and Established),
//! [`pods`](mod@pods) (the scheduler and the kubelets), [`workloads`] (Deployments,
//! ReplicaSets, StatefulSets, DaemonSets, Jobs) and [`endpoints`] (EndpointSlices of
//! Services); volumes are `crate::volumes`.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::store::{Store, TypeKey, WriteError};
use crate::{EmulatorConfig, Hooks, Shared, lock};

mod crds;
mod deletion;
mod endpoints;
mod pods;
mod workloads;

use crds::crds;
pub(crate) use deletion::delete_object;
use deletion::{garbage_collect, namespaces};
use endpoints::endpoint_slices;
use pods::pods;
use workloads::{daemonsets, deployments, jobs, replicasets, statefulsets};

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
