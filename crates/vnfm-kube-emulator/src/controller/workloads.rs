//! Workload controllers: Deployments (a ReplicaSet per template), ReplicaSets, StatefulSets
//! (with claims from their templates), DaemonSets and Jobs, each creating pods and writing
//! status as the real controller does.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{
    controller_uid, delete_object, deleting, int, key, name, ns, owner_ref, pod_ready, pods_key, s,
    uid,
};
use crate::store::{Store, TypeKey};
use crate::util::{now_rfc3339, short_hash};

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

pub(super) fn deployments(st: &mut Store) {
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

pub(super) fn replicasets(st: &mut Store) {
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

pub(super) fn statefulsets(st: &mut Store) {
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

pub(super) fn daemonsets(st: &mut Store) {
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

pub(super) fn jobs(st: &mut Store) {
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
