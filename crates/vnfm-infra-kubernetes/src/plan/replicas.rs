//! Replica counts: each VDU's instance count on its scalable workloads at render time
//! (workloads an HPA scales are left to it), and scaling one VDU of planned objects.

use serde_json::{Value, json};

use super::{Planned, RenderInput, VDU_LABEL};
use crate::KubeError;
use crate::order::is_scalable;

/// Sets `spec.replicas` of each VDU's scalable workloads to the VDU's instance count, except
/// for workloads a HorizontalPodAutoscaler scales (their replicas are left to it).
pub(super) fn assign_replicas(
    planned: &mut [Planned],
    input: &RenderInput<'_>,
) -> Result<(), KubeError> {
    let hpas: Vec<(String, String, String)> = planned
        .iter()
        .filter(|p| p.kind() == "HorizontalPodAutoscaler")
        .filter_map(|p| {
            let target = p.object.pointer("/spec/scaleTargetRef")?;
            Some((
                target["kind"].as_str()?.to_string(),
                target["name"].as_str()?.to_string(),
                p.name().to_string(),
            ))
        })
        .collect();
    for p in planned.iter_mut() {
        if !is_scalable(p.group(), p.kind()) {
            continue;
        }
        if let Some((_, _, hpa)) = hpas.iter().find(|(k, n, _)| k == p.kind() && n == p.name()) {
            p.hpa = Some(hpa.clone());
            if let Some(spec) = p.object.get_mut("spec").and_then(Value::as_object_mut) {
                spec.remove("replicas");
            }
            continue;
        }
        if let Some(vdu) = &p.vdu
            && let Some(count) = input.counts.get(vdu)
        {
            p.object["spec"]["replicas"] = json!(count);
        }
    }
    Ok(())
}
/// Sets the replicas of every scalable workload of `vdu` to `count`; the workloads changed.
/// Errors for a VDU scaled by an HPA, or whose workloads cannot be scaled.
pub fn scale_vdu(planned: &mut [Planned], vdu: &str, count: u32) -> Result<Vec<usize>, KubeError> {
    let mine: Vec<usize> = planned
        .iter()
        .enumerate()
        .filter(|(_, p)| p.vdu.as_deref() == Some(vdu))
        .map(|(i, _)| i)
        .collect();
    if mine.is_empty() {
        return Err(KubeError::input(format!(
            "VDU `{vdu}` has no workload among the instance's objects (name a Deployment, StatefulSet or ReplicaSet after the VDU, or label it {VDU_LABEL}={vdu})"
        )));
    }
    let mut changed = Vec::new();
    for i in mine {
        let p = &mut planned[i];
        if !is_scalable(p.group(), p.kind()) {
            return Err(KubeError::input(format!(
                "VDU `{vdu}` is deployed as {}, which cannot be scaled (only Deployment, StatefulSet and ReplicaSet can)",
                p.display()
            )));
        }
        if let Some(hpa) = &p.hpa {
            return Err(KubeError::input(format!(
                "VDU `{vdu}` ({}) is scaled by HorizontalPodAutoscaler {hpa}; the VNFM does not fight it: change the HPA's minReplicas/maxReplicas instead",
                p.display()
            )));
        }
        if p.object.pointer("/spec/replicas") != Some(&json!(count)) {
            p.object["spec"]["replicas"] = json!(count);
            changed.push(i);
        }
    }
    Ok(changed)
}
