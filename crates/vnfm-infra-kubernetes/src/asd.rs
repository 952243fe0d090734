//! Application Service Descriptors: carrying an ASD through the lifecycle core (which knows
//! VNFDs only) and the placement check against the target cluster.
//!
//! [`asd_vnfd`] wraps an [`Asd`] into a VNFD with one flavour (`default`) and no VDUs; the ASD
//! itself travels in the VNFD's `properties`. Onboard that VNFD (with the ASD package's files)
//! and instantiate it on a Kubernetes VIM: the driver deploys the deployment items in stages
//! (same `deploymentOrder` = same stage, applied together; a later stage starts when the
//! earlier one is ready).

use std::collections::BTreeMap;

use indexmap::IndexMap;
use serde_json::Value;
use vnfm_descriptor::asd::{EnhancedClusterCapabilities, LabelRequirement};
use vnfm_descriptor::{Asd, Flavour, Vnfd};
use vnfm_driver_api::ResolvedVim;

use crate::KubeError;
use crate::cluster::Cluster;
use crate::plan::{ASD_PROPERTY, Planned};

/// The flavour id of a VNFD made from an ASD.
pub const ASD_FLAVOUR: &str = "default";

/// A VNFD that carries `asd`, for onboarding an ASD package into the lifecycle core.
pub fn asd_vnfd(asd: &Asd) -> Vnfd {
    let mut properties = IndexMap::new();
    properties.insert(
        ASD_PROPERTY.to_string(),
        serde_json::to_value(asd).unwrap_or(Value::Null),
    );
    Vnfd {
        descriptor_id: asd.asd_id.clone(),
        descriptor_version: asd.asd_version.clone(),
        provider: asd.provider.clone(),
        product_name: asd.application_name.clone(),
        software_version: asd.application_version.clone(),
        product_info_name: asd.application_info_name.clone(),
        product_info_description: asd.function_description.clone(),
        vnfm_info: Vec::new(),
        tosca_definitions_version: asd.tosca_definitions_version.clone(),
        sol001_version: None,
        vnf_node_type: asd.node_template.clone(),
        entry_definitions: asd.entry_definitions.clone(),
        flavours: vec![Flavour {
            description: "Application Service Descriptor deployment".into(),
            file: asd.entry_definitions.clone(),
            ..Flavour::empty(ASD_FLAVOUR)
        }],
        properties,
        package_changes: Vec::new(),
        indicators: Vec::new(),
    }
}

/// Compares dotted numeric versions (`5.15.0-91-generic` >= `4.15`).
fn version_at_least(have: &str, want: &str) -> bool {
    let nums = |s: &str| -> Vec<u64> {
        s.split(|c: char| !c.is_ascii_digit())
            .take_while(|p| !p.is_empty())
            .filter_map(|p| p.parse().ok())
            .collect()
    };
    let (h, w) = (nums(have), nums(want));
    for i in 0..w.len().max(h.len()) {
        let a = h.get(i).copied().unwrap_or(0);
        let b = w.get(i).copied().unwrap_or(0);
        if a != b {
            return a > b;
        }
    }
    true
}

/// Cluster labels of a VIM: `extra.clusterLabels`, an object or a list of `key=value`.
fn cluster_labels(vim: &ResolvedVim) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    match vim.extra().and_then(|e| e.get("clusterLabels")) {
        Some(Value::Object(m)) => {
            for (k, v) in m {
                out.insert(
                    k.clone(),
                    v.as_str()
                        .map(String::from)
                        .unwrap_or_else(|| v.to_string()),
                );
            }
        }
        Some(Value::Array(a)) => {
            for l in a.iter().filter_map(Value::as_str) {
                let (k, v) = l.split_once('=').unwrap_or((l, ""));
                out.insert(k.to_string(), v.to_string());
            }
        }
        _ => {}
    }
    out
}

/// Checks `caps` against the cluster: node kernel versions, required custom resources (served
/// by the cluster, or brought by the package's own CRDs), cluster labels from the VIM's
/// `extra.clusterLabels`. Mandatory mismatches are an error; preferred ones (and what cannot
/// be checked through the API) are returned as warnings.
pub async fn placement_check(
    cluster: &Cluster,
    vim: &ResolvedVim,
    caps: &EnhancedClusterCapabilities,
    planned: &[Planned],
) -> Result<Vec<String>, KubeError> {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    if let Some(min) = &caps.min_kernel_version {
        let node_kind = cluster.core("Node").await?;
        let nodes = cluster.list(&node_kind, None, "").await?;
        let kernels: Vec<(String, String)> = nodes
            .iter()
            .map(|n| {
                let v = serde_json::to_value(n).unwrap_or(Value::Null);
                (
                    n.metadata.name.clone().unwrap_or_default(),
                    v.pointer("/status/nodeInfo/kernelVersion")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                )
            })
            .collect();
        let ok: Vec<&(String, String)> = kernels
            .iter()
            .filter(|(_, k)| version_at_least(k, min))
            .collect();
        if ok.is_empty() {
            errors.push(format!(
                "no node runs kernel {min} or later (nodes: {})",
                kernels
                    .iter()
                    .map(|(n, k)| format!("{n} {k}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        } else if ok.len() < kernels.len() {
            warnings.push(format!(
                "only {} of {} nodes run kernel {min} or later",
                ok.len(),
                kernels.len()
            ));
        }
    }
    for cr in &caps.required_custom_resources {
        let brought = planned.iter().any(|p| {
            p.kind() == "CustomResourceDefinition"
                && p.object.pointer("/spec/names/kind").and_then(Value::as_str)
                    == Some(cr.kind.as_str())
        });
        if brought {
            continue;
        }
        let served = match &cr.api_version {
            Some(av) => cluster.kind(av, &cr.kind).await?.is_some(),
            None => false,
        };
        if !served {
            errors.push(format!(
                "the cluster does not serve the custom resource {} {}",
                cr.api_version.as_deref().unwrap_or("(any version)"),
                cr.kind
            ));
        }
    }
    let labels = cluster_labels(vim);
    for l in &caps.cluster_labels {
        let (k, v) = l.label.split_once('=').unwrap_or((&l.label, ""));
        let has = labels.get(k).is_some_and(|have| v.is_empty() || have == v);
        if !has {
            let msg = format!(
                "the cluster does not carry the label {} (VIM extra.clusterLabels)",
                l.label
            );
            match l.requirement {
                LabelRequirement::Mandatory => errors.push(msg),
                LabelRequirement::Preferred => warnings.push(msg),
            }
        }
    }
    for m in &caps.required_kernel_modules {
        warnings.push(format!(
            "kernel module {m} is required; it cannot be checked through the Kubernetes API"
        ));
    }
    for p in &caps.required_plugins {
        if p.name.eq_ignore_ascii_case("multus")
            && cluster
                .kind("k8s.cni.cncf.io/v1", "NetworkAttachmentDefinition")
                .await?
                .is_none()
        {
            errors.push("the Multus CNI plugin is required, but the cluster does not serve NetworkAttachmentDefinitions".into());
        }
    }
    if errors.is_empty() {
        for w in &warnings {
            tracing::warn!(warning = %w, "placement");
        }
        Ok(warnings)
    } else {
        Err(KubeError::Placement(errors.join("; ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_versions_compare_numerically() {
        assert!(version_at_least("5.15.0-91-generic", "4.15.0"));
        assert!(version_at_least("4.15.0", "4.15"));
        assert!(!version_at_least("4.9.2", "4.15.0"));
        assert!(!version_at_least("", "1"));
    }
}
