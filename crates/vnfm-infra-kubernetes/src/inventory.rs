//! What the instance has on the cluster, in SOL003 terms: a `vnfcResourceInfo` (and
//! `vnfcInfo`) per running pod of a VDU, a `virtualStorageResourceInfo` per PVC, and the
//! resource changes between two inventories.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use vnfm_driver_api::InstanceResources;
use vnfm_driver_api::inventory::{affected_storage, affected_vnfc_with_storage, diff};
use vnfm_types::{
    AffectedVnfc, ChangeType, KeyValuePairs, ResourceChanges, ResourceHandle,
    VirtualStorageResourceInfo, VnfOperationalState, VnfcInfo, VnfcResourceInfo, VnfdId,
};

use crate::KubeError;
use crate::cluster::Cluster;
use crate::plan::{INSTANCE_LABEL, Planned, STORAGE_LABEL, label_value};

/// Reads the pods and PVCs of the instance and describes them.
pub async fn collect(
    cluster: &Cluster,
    namespace: &str,
    instance_id: &str,
    vnfd_id: &VnfdId,
    planned: &[Planned],
    virtual_storages: &(dyn Fn(&str) -> Vec<String> + Sync),
) -> Result<InstanceResources, KubeError> {
    let selector = format!("{INSTANCE_LABEL}={}", label_value(instance_id));
    let vim = Some(cluster.access().vim.clone());
    let pod_kind = cluster.pod_kind().await?;
    let mut pods: Vec<Value> = cluster
        .list(&pod_kind, Some(namespace), &selector)
        .await?
        .into_iter()
        .map(|p| serde_json::to_value(p).unwrap_or(Value::Null))
        .collect();
    pods.sort_by(|a, b| name(a).cmp(name(b)));
    let pvc_kind = cluster.core("PersistentVolumeClaim").await?;
    let mut claims: Vec<Value> = cluster
        .list(&pvc_kind, Some(namespace), &selector)
        .await?
        .into_iter()
        .map(|p| serde_json::to_value(p).unwrap_or(Value::Null))
        .filter(|p| p.pointer("/metadata/deletionTimestamp").is_none())
        .collect();
    claims.sort_by(|a, b| name(a).cmp(name(b)));
    let mut res = InstanceResources::default();
    let claim_names: BTreeSet<&str> = claims.iter().map(name).collect();
    for c in &claims {
        let pvc = name(c);
        let users: Vec<&Value> = pods
            .iter()
            .filter(|p| pod_claims(p).contains(&pvc))
            .collect();
        let vdu = users.iter().find_map(|p| {
            p.pointer("/metadata/labels/vnfm.io~1vdu")
                .and_then(Value::as_str)
        });
        let desc = c
            .pointer(&format!(
                "/metadata/labels/{}",
                STORAGE_LABEL.replace('/', "~1")
            ))
            .and_then(Value::as_str)
            .map(String::from)
            .or_else(|| {
                let list = vdu.map(virtual_storages).unwrap_or_default();
                (list.len() == 1).then(|| list[0].clone())
            })
            .unwrap_or_else(|| pvc.to_string());
        let mut meta = KeyValuePairs::new();
        meta.insert("namespace".into(), json!(namespace));
        for (k, p) in [
            ("phase", "/status/phase"),
            ("volumeName", "/spec/volumeName"),
            ("storageClassName", "/spec/storageClassName"),
            ("capacity", "/status/capacity/storage"),
        ] {
            if let Some(v) = c.pointer(p) {
                meta.insert(k.into(), v.clone());
            }
        }
        res.virtual_storage_resource_info
            .push(VirtualStorageResourceInfo {
                id: pvc.to_string(),
                virtual_storage_desc_id: desc,
                vnfd_id: Some(vnfd_id.clone()),
                storage_resource: {
                    let mut h = handle(pvc, "PersistentVolumeClaim", &vim);
                    h.container_namespace = Some(namespace.to_string());
                    h
                },
                zone_id: None,
                reservation_id: None,
                metadata: Some(meta),
            });
    }
    for p in &pods {
        let phase = p
            .pointer("/status/phase")
            .and_then(Value::as_str)
            .unwrap_or("");
        let vdu_label = p
            .pointer("/metadata/labels/vnfm.io~1vdu")
            .and_then(Value::as_str);
        if p.pointer("/metadata/deletionTimestamp").is_some()
            || matches!(phase, "Succeeded" | "Failed")
        {
            continue;
        }
        let Some(vdu_label) = vdu_label else { continue };
        // The label holds a label-safe form of the VDU id; map it back.
        let vdu = planned
            .iter()
            .filter_map(|x| x.vdu.as_deref())
            .find(|v| label_value(v) == vdu_label)
            .unwrap_or(vdu_label)
            .to_string();
        let workload = planned
            .iter()
            .find(|x| x.vdu.as_deref() == Some(vdu.as_str()))
            .map(|x| x.kind().to_string())
            .unwrap_or_else(|| "Pod".into());
        let pod = name(p).to_string();
        let mut meta = KeyValuePairs::new();
        meta.insert("namespace".into(), json!(namespace));
        meta.insert("podName".into(), json!(pod));
        if let Some(uid) = p.pointer("/metadata/uid") {
            // Tells a pod from its replacement of the same name (a StatefulSet's healed pod).
            meta.insert("uid".into(), uid.clone());
        }
        meta.insert("phase".into(), json!(phase));
        if let Some(n) = p.pointer("/spec/nodeName") {
            meta.insert("nodeName".into(), n.clone());
        }
        let ips: Vec<Value> = p
            .pointer("/status/podIPs")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|i| i.get("ip").cloned()).collect())
            .or_else(|| p.pointer("/status/podIP").map(|ip| vec![ip.clone()]))
            .unwrap_or_default();
        meta.insert("podIPs".into(), Value::Array(ips));
        if let Some(h) = p.pointer("/status/hostIP") {
            meta.insert("hostIP".into(), h.clone());
        }
        if let Some(owner) = p.pointer("/metadata/ownerReferences/0").map(|o| {
            format!(
                "{}/{}",
                o["kind"].as_str().unwrap_or(""),
                o["name"].as_str().unwrap_or("")
            )
        }) {
            meta.insert("owner".into(), json!(owner));
        }
        let storage: Vec<String> = pod_claims(p)
            .into_iter()
            .filter(|c| claim_names.contains(c))
            .map(String::from)
            .collect();
        let mut compute = handle(&pod, &workload, &vim);
        compute.container_namespace = Some(namespace.to_string());
        res.vnfc_resource_info.push(VnfcResourceInfo {
            id: pod.clone(),
            vdu_id: vdu.clone(),
            vnfd_id: Some(vnfd_id.clone()),
            compute_resource: compute,
            zone_id: p
                .pointer("/spec/nodeName")
                .and_then(Value::as_str)
                .map(String::from),
            storage_resource_ids: (!storage.is_empty()).then_some(storage),
            reservation_id: None,
            vnfc_cp_info: None,
            metadata: Some(meta),
        });
        res.vnfc_info.push(VnfcInfo {
            id: format!("{vdu}-{pod}"),
            vdu_id: vdu,
            vnfc_resource_info_id: Some(pod),
            vnfc_state: VnfOperationalState::Started,
            vnfc_configurable_properties: None,
        });
    }
    Ok(res)
}

fn name(v: &Value) -> &str {
    v.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn pod_claims(p: &Value) -> Vec<&str> {
    p.pointer("/spec/volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| {
            v.pointer("/persistentVolumeClaim/claimName")
                .and_then(Value::as_str)
        })
        .collect()
}

fn handle(id: &str, kind: &str, vim: &Option<String>) -> ResourceHandle {
    vnfm_driver_api::inventory::resource_handle(id, kind, vim.as_deref())
}

/// The pod a VNFC is: its name, and its uid when recorded.
fn incarnation(v: &VnfcResourceInfo) -> (String, Option<String>) {
    let uid = v
        .metadata
        .as_ref()
        .and_then(|m| m.get("uid"))
        .and_then(Value::as_str)
        .map(String::from);
    (v.id.clone(), uid)
}

/// Whether `a` and `b` are the same pod: the same name, and the same uid when both record one.
fn same_pod(a: &(String, Option<String>), b: &(String, Option<String>)) -> bool {
    a.0 == b.0
        && match (&a.1, &b.1) {
            (Some(x), Some(y)) => x == y,
            _ => true,
        }
}

/// The changes from `before` to `after`: VNFCs and storage added or removed (a healed pod is a
/// removal and an addition: the replacement is a new pod, even when it has the same name, as
/// a StatefulSet's pod has).
pub fn changes(before: &InstanceResources, after: &InstanceResources) -> ResourceChanges {
    let mut vnfcs = Vec::new();
    let pods = |r: &InstanceResources| -> Vec<(String, Option<String>)> {
        r.vnfc_resource_info.iter().map(incarnation).collect()
    };
    let (b, a) = (pods(before), pods(after));
    for v in &before.vnfc_resource_info {
        let pod = incarnation(v);
        if !a.iter().any(|x| same_pod(x, &pod)) {
            vnfcs.push(affected_vnfc(v, ChangeType::Removed));
        }
    }
    for v in &after.vnfc_resource_info {
        let pod = incarnation(v);
        if !b.iter().any(|x| same_pod(x, &pod)) {
            vnfcs.push(affected_vnfc(v, ChangeType::Added));
        }
    }
    // A claim keeps its name as its id and its resource id: it is added or removed, never
    // modified.
    let d = diff(
        &before.virtual_storage_resource_info,
        &after.virtual_storage_resource_info,
    );
    let storages: Vec<_> = d
        .removed
        .into_iter()
        .map(|s| affected_storage(s, ChangeType::Removed))
        .chain(d.changed.into_iter().map(|(s, c)| affected_storage(s, c)))
        .collect();
    ResourceChanges {
        affected_vnfcs: (!vnfcs.is_empty()).then_some(vnfcs),
        affected_virtual_links: None,
        affected_ext_link_ports: None,
        affected_virtual_storages: (!storages.is_empty()).then_some(storages),
    }
}

/// `v` as an affected VNFC with its metadata (the pod's name, uid, node, ...), its claims
/// attached when it is added and detached when it is removed.
fn affected_vnfc(v: &VnfcResourceInfo, change: ChangeType) -> AffectedVnfc {
    let storage = || v.storage_resource_ids.clone().unwrap_or_default();
    let (added, removed) = match change {
        ChangeType::Added => (storage(), vec![]),
        ChangeType::Removed => (vec![], storage()),
        _ => (vec![], vec![]),
    };
    AffectedVnfc {
        metadata: v.metadata.clone(),
        ..affected_vnfc_with_storage(v, change, added, removed)
    }
}

/// The resources recorded on the instance before the step: its VNFCs and storage (what this
/// driver reports on).
pub fn recorded(instance: &vnfm_types::VnfInstance) -> InstanceResources {
    let all = vnfm_driver_api::inventory::recorded(instance);
    InstanceResources {
        vnfc_resource_info: all.vnfc_resource_info,
        vnfc_info: all.vnfc_info,
        virtual_storage_resource_info: all.virtual_storage_resource_info,
        ..InstanceResources::default()
    }
}
