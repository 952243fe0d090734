//! Persistent volumes the way a cluster treats them: claims bind to a matching
//! PersistentVolume (or to a dynamically provisioned one), and the storage-object-in-use
//! protection keeps a claim while a pod uses it and a volume while a claim is bound to it.
//!
//! - On create, the API server's admission adds `kubernetes.io/pvc-protection` to every
//!   PersistentVolumeClaim and `kubernetes.io/pv-protection` to every PersistentVolume.
//! - A deleted claim keeps its finalizer while a pod that is not finished mounts it; a deleted
//!   volume keeps its finalizer while it is `Bound`.
//! - A bound volume whose claim is gone is `Released` (reclaim policy `Retain`, the default of a
//!   volume created by hand) or `Failed` (`Delete`: no provisioner deletes a volume made by
//!   hand).

use std::time::Instant;

use serde_json::{Value, json};

use crate::EmulatorConfig;
use crate::store::{Store, TypeKey};

/// The finalizer of a claim in use.
pub(crate) const PVC_PROTECTION: &str = "kubernetes.io/pvc-protection";
/// The finalizer of a volume in use.
pub(crate) const PV_PROTECTION: &str = "kubernetes.io/pv-protection";

fn claims_key() -> TypeKey {
    (String::new(), "persistentvolumeclaims".into())
}

fn volumes_key() -> TypeKey {
    (String::new(), "persistentvolumes".into())
}

fn s<'a>(o: &'a Value, pointer: &str) -> &'a str {
    o.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn deleting(o: &Value) -> bool {
    o.pointer("/metadata/deletionTimestamp").is_some()
}

/// Adds `finalizer` to `obj`'s finalizers unless it is there.
pub(crate) fn add_finalizer(obj: &mut Value, finalizer: &str) {
    let mut list: Vec<Value> = obj
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if !list.iter().any(|f| f == finalizer) {
        list.push(json!(finalizer));
    }
    obj["metadata"]["finalizers"] = Value::Array(list);
}

/// `obj` without `finalizer`, stored (an object being deleted with no finalizer left goes).
fn drop_finalizer(st: &mut Store, key: &TypeKey, obj: &Value, finalizer: &str) {
    let mut o = obj.clone();
    if let Some(Value::Array(f)) = o.pointer_mut("/metadata/finalizers") {
        f.retain(|x| x != finalizer);
    }
    st.put(key, o);
}

fn has_finalizer(o: &Value, finalizer: &str) -> bool {
    o.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| f.iter().any(|x| x == finalizer))
}

/// Whether a pod that has not finished mounts claim `claim` of `namespace`.
fn claim_in_use(st: &Store, namespace: &str, claim: &str) -> bool {
    st.list(&(String::new(), "pods".into()), Some(namespace))
        .iter()
        .filter(|p| !matches!(s(p, "/status/phase"), "Succeeded" | "Failed"))
        .any(|p| {
            p.pointer("/spec/volumes")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|v| s(v, "/persistentVolumeClaim/claimName") == claim)
        })
}

/// One pass: binds pending claims, releases volumes whose claims are gone, and lifts the
/// protection of claims and volumes no longer in use.
pub(crate) fn reconcile(st: &mut Store, cfg: &EmulatorConfig, blocked: &dyn Fn(&Value) -> bool) {
    bind_claims(st, cfg, blocked);
    release_volumes(st);
    for c in st.list(&claims_key(), None) {
        if deleting(&c)
            && has_finalizer(&c, PVC_PROTECTION)
            && !claim_in_use(st, s(&c, "/metadata/namespace"), s(&c, "/metadata/name"))
        {
            drop_finalizer(st, &claims_key(), &c, PVC_PROTECTION);
        }
    }
    for v in st.list(&volumes_key(), None) {
        if deleting(&v) && has_finalizer(&v, PV_PROTECTION) && s(&v, "/status/phase") != "Bound" {
            drop_finalizer(st, &volumes_key(), &v, PV_PROTECTION);
        }
    }
}

/// A volume that can serve `claim`: the one it names, or an `Available` one of its storage
/// class.
fn matching_volume(volumes: &[Value], claim: &Value) -> Option<Value> {
    let wanted = s(claim, "/spec/volumeName");
    if !wanted.is_empty() {
        return volumes
            .iter()
            .find(|v| s(v, "/metadata/name") == wanted && !deleting(v))
            .cloned();
    }
    let class = s(claim, "/spec/storageClassName");
    volumes
        .iter()
        .filter(|v| !deleting(v) && s(v, "/status/phase") == "Available")
        .filter(|v| {
            v.pointer("/spec/claimRef")
                .is_none_or(|r| claim_ref_is(r, claim))
        })
        .find(|v| s(v, "/spec/storageClassName") == class)
        .cloned()
}

fn claim_ref_is(r: &Value, claim: &Value) -> bool {
    s(r, "/name") == s(claim, "/metadata/name")
        && s(r, "/namespace") == s(claim, "/metadata/namespace")
}

/// Binds each pending claim older than the ready delay (and not held back by a test hook).
fn bind_claims(st: &mut Store, cfg: &EmulatorConfig, blocked: &dyn Fn(&Value) -> bool) {
    for c in st.list(&claims_key(), None) {
        if deleting(&c) || s(&c, "/status/phase") == "Bound" || blocked(&c) {
            continue;
        }
        let uid = s(&c, "/metadata/uid").to_string();
        let age = st
            .created_at
            .get(&uid)
            .map(Instant::elapsed)
            .unwrap_or_default();
        if age < cfg.ready_delay {
            continue;
        }
        let volumes = st.list(&volumes_key(), None);
        let volume_name = match matching_volume(&volumes, &c) {
            Some(mut v) => {
                v["spec"]["claimRef"] = json!({
                    "kind": "PersistentVolumeClaim", "apiVersion": "v1",
                    "namespace": s(&c, "/metadata/namespace"), "name": s(&c, "/metadata/name"),
                    "uid": uid,
                });
                v["status"] = json!({"phase": "Bound"});
                let name = s(&v, "/metadata/name").to_string();
                st.put(&volumes_key(), v);
                name
            }
            // A claim naming a volume that does not exist waits for it.
            None if !s(&c, "/spec/volumeName").is_empty() => continue,
            // Dynamic provisioning: the provisioner's volume is not stored.
            None => format!("pvc-{uid}"),
        };
        let mut next = c.clone();
        next["spec"]["volumeName"] = json!(volume_name);
        next["status"] = json!({
            "phase": "Bound",
            "accessModes": c.pointer("/spec/accessModes").cloned().unwrap_or(json!(["ReadWriteOnce"])),
            "capacity": {"storage": c.pointer("/spec/resources/requests/storage").cloned().unwrap_or(json!("1Gi"))},
        });
        st.put(&claims_key(), next);
    }
}

/// Bound volumes whose claim is gone: `Released` (reclaim policy `Retain`, the default of a
/// volume created by hand), or `Failed` for `Delete` (no provisioner deletes a volume created
/// by hand, as a real cluster says of a local or host-path volume).
fn release_volumes(st: &mut Store) {
    for v in st.list(&volumes_key(), None) {
        if s(&v, "/status/phase") != "Bound" {
            continue;
        }
        let claim_uid = s(&v, "/spec/claimRef/uid");
        let claim = st
            .get(
                &claims_key(),
                s(&v, "/spec/claimRef/namespace"),
                s(&v, "/spec/claimRef/name"),
            )
            .filter(|c| s(c, "/metadata/uid") == claim_uid);
        if claim.is_some() {
            continue;
        }
        let mut released = v.clone();
        released["status"] = if s(&v, "/spec/persistentVolumeReclaimPolicy") == "Delete" {
            json!({"phase": "Failed", "message": "error getting deleter volume plugin for volume: no deletable volume plugin matched"})
        } else {
            json!({"phase": "Released"})
        };
        st.put(&volumes_key(), released);
    }
}
