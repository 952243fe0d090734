//! One object made ready to apply: its namespace (the instance's, or none when
//! cluster-scoped), the ownership and VDU labels on it and on its pod template, the VNFD
//! annotation, and the flags (shared network, persistent volume, request-like kind).

use serde_json::{Map, Value, json};
use vnfm_descriptor::Flavour;

use super::{
    INSTANCE_LABEL, MANAGED_BY, PERSISTENT_LABEL, Planned, Raw, RenderInput, SHARED_LABEL,
    TACKER_INSTANCE_LABEL, VDU_LABEL, VNFD_ANNOTATION, known_cluster_scoped, label_value,
};
use crate::KubeError;
use crate::order::{group_of, is_request_kind, is_workload, tier};

fn labels_mut<'a>(obj: &'a mut Value, pointer: &str) -> Option<&'a mut Map<String, Value>> {
    let parent_pointer = pointer.rsplit_once('/').map_or("", |(p, _)| p);
    let key = pointer.rsplit_once('/').map_or(pointer, |(_, k)| k);
    let parent = if parent_pointer.is_empty() {
        Some(&mut *obj)
    } else {
        obj.pointer_mut(parent_pointer)
    }?;
    if !parent.is_object() {
        return None;
    }
    let entry = parent
        .as_object_mut()?
        .entry(key.to_string())
        .or_insert_with(|| json!({}));
    if !entry.is_object() {
        *entry = json!({});
    }
    entry.as_object_mut()
}

fn vdu_of(obj: &Value, file_vdu: Option<&str>, flavour: Option<&Flavour>) -> Option<String> {
    let explicit = obj
        .pointer("/metadata/labels/vnfm.io~1vdu")
        .and_then(Value::as_str);
    if let Some(v) = explicit {
        return Some(v.to_string());
    }
    if let Some(v) = file_vdu {
        return Some(v.to_string());
    }
    let name = obj.pointer("/metadata/name").and_then(Value::as_str)?;
    let flavour = flavour?;
    flavour
        .vdus
        .iter()
        .find(|v| v.name == name || v.id == name)
        .or_else(|| {
            flavour.vdus.iter().find(|v| {
                name.strip_prefix(v.name.as_str())
                    .is_some_and(|rest| rest.starts_with('-'))
            })
        })
        .map(|v| v.id.clone())
}

fn flag(obj: &Value, key: &str) -> bool {
    let escaped = key.replace('/', "~1");
    ["labels", "annotations"].iter().any(|where_| {
        obj.pointer(&format!("/metadata/{where_}/{escaped}"))
            .and_then(Value::as_str)
            == Some("true")
    })
}

/// Labels, namespace and VDU of one object.
pub(super) fn prepare(raw: Raw, input: &RenderInput<'_>) -> Result<Planned, KubeError> {
    let mut obj = raw.doc.object;
    let api_version = obj["apiVersion"].as_str().unwrap_or("").to_string();
    let kind = obj["kind"].as_str().unwrap_or("").to_string();
    let group = group_of(&api_version).to_string();
    let request = is_request_kind(&group, &kind);
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = json!({});
    }
    let has_name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    if !has_name && !request {
        return Err(KubeError::manifest(
            &raw.doc.source,
            format!(
                "document {}: {kind} has no metadata.name",
                raw.doc.index + 1
            ),
        ));
    }
    let shared = group == "k8s.cni.cncf.io" && kind == "NetworkAttachmentDefinition";
    let persistent = matches!(kind.as_str(), "PersistentVolumeClaim" | "PersistentVolume")
        && group.is_empty()
        && flag(&obj, PERSISTENT_LABEL);
    let namespaced = known_cluster_scoped(&group, &kind).map(|c| !c);
    // Every namespaced object goes to the instance's namespace; a shared network keeps the
    // namespace its manifest names (other instances find it there).
    let explicit_ns = obj
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .map(String::from);
    match namespaced {
        Some(false) => {
            if let Some(m) = obj["metadata"].as_object_mut() {
                m.remove("namespace");
            }
        }
        _ => {
            let ns = if shared || input.manifest_namespaces {
                explicit_ns.unwrap_or_else(|| input.namespace.clone())
            } else {
                input.namespace.clone()
            };
            // An access review about its own namespace must name the same one in its spec
            // (the API server refuses it otherwise, 422).
            if group == "authorization.k8s.io"
                && kind == "LocalSubjectAccessReview"
                && let Some(attrs) = obj
                    .pointer_mut("/spec/resourceAttributes")
                    .and_then(Value::as_object_mut)
            {
                attrs.insert("namespace".into(), json!(ns));
            }
            obj["metadata"]["namespace"] = json!(ns);
        }
    }
    let vdu = if is_workload(&group, &kind) {
        vdu_of(&obj, raw.vdu.as_deref(), input.flavour)
    } else {
        None
    };
    if let Some(v) = &vdu
        && input
            .flavour
            .is_some_and(|f| !f.vdus.is_empty() && f.vdu(v).is_none())
    {
        return Err(KubeError::manifest(
            &raw.doc.source,
            format!(
                "{kind} {} is labelled for VDU `{v}`, which the flavour does not have",
                obj["metadata"]["name"]
            ),
        ));
    }
    let instance = label_value(&input.instance_id);
    if !request {
        let labels = labels_mut(&mut obj, "/metadata/labels").ok_or_else(|| {
            KubeError::manifest(&raw.doc.source, "metadata.labels is not a mapping")
        })?;
        labels.insert("app.kubernetes.io/managed-by".into(), json!(MANAGED_BY));
        if shared {
            labels.insert(SHARED_LABEL.into(), json!("true"));
        } else {
            labels.insert(INSTANCE_LABEL.into(), json!(instance));
            labels.insert(TACKER_INSTANCE_LABEL.into(), json!(instance));
        }
        if let Some(v) = &vdu {
            labels.insert(VDU_LABEL.into(), json!(label_value(v)));
        }
        // Pods of workloads carry the same labels, so inventory finds them by label.
        let template = match (group.as_str(), kind.as_str()) {
            ("batch", "CronJob") => Some("/spec/jobTemplate/spec/template"),
            ("", "Pod") => None,
            _ if is_workload(&group, &kind) => Some("/spec/template"),
            _ => None,
        };
        if let Some(t) = template {
            if obj.pointer(t).is_none() {
                return Err(KubeError::manifest(
                    &raw.doc.source,
                    format!(
                        "{kind} {} has no pod template ({t})",
                        obj["metadata"]["name"]
                    ),
                ));
            }
            let pod_labels =
                labels_mut(&mut obj, &format!("{t}/metadata/labels")).ok_or_else(|| {
                    KubeError::manifest(
                        &raw.doc.source,
                        "the pod template's labels are not a mapping",
                    )
                })?;
            pod_labels.insert(INSTANCE_LABEL.into(), json!(instance));
            pod_labels.insert("app.kubernetes.io/managed-by".into(), json!(MANAGED_BY));
            if let Some(v) = &vdu {
                pod_labels.insert(VDU_LABEL.into(), json!(label_value(v)));
            }
            if let Some(vnfd) = input.vnfd
                && let Some(ann) = labels_mut(&mut obj, &format!("{t}/metadata/annotations"))
            {
                ann.insert(VNFD_ANNOTATION.into(), json!(vnfd.descriptor_id));
            }
        }
        if kind == "StatefulSet"
            && let Some(Value::Array(claims)) = obj.pointer_mut("/spec/volumeClaimTemplates")
        {
            for c in claims {
                if let Some(l) = labels_mut(c, "/metadata/labels") {
                    l.insert(INSTANCE_LABEL.into(), json!(instance));
                    l.insert("app.kubernetes.io/managed-by".into(), json!(MANAGED_BY));
                }
            }
        }
    }
    Ok(Planned {
        tier: if request { 10 } else { tier(&group, &kind) },
        object: obj,
        source: raw.doc.source,
        stage: raw.stage,
        vdu,
        namespaced,
        shared,
        persistent,
        request,
        hpa: None,
    })
}
