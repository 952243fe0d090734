//! Deletion: what the API server does for `DELETE` (grace periods, finalizers, propagation
//! policies), the namespace controller emptying a terminating namespace, and the garbage
//! collector removing dependents whose owners are gone.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{deleting, int, key, name, ns, pods_key, uid};
use crate::registry::ResourceType;
use crate::store::{Store, Terminating, TypeKey, WriteError, not_found};
use crate::util::now_rfc3339;

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

pub(super) fn namespaces(st: &mut Store) {
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

pub(super) fn garbage_collect(st: &mut Store) {
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
