//! Observation of an instance's pods and Deployments outside any operation: what
//! [`health`](crate::health) finds wrong with each, as conditions the core raises as alarms.

use std::collections::BTreeSet;

use serde_json::Value;
use vnfm_driver_api::inventory::resource_handle;
use vnfm_driver_api::{ObserveRequest, ObservedCondition};
use vnfm_types::FaultyResourceType;
use vnfm_types::time::Timestamp;

use super::{DriverState, KubernetesDriver, VIM_TYPES};
use crate::KubeError;
use crate::access::ClusterAccess;
use crate::cluster::Cluster;
use crate::health::{Finding, deployment_finding, pod_finding};
use crate::plan::{INSTANCE_LABEL, label_value};

impl KubernetesDriver {
    pub(super) async fn observe_inner(
        &self,
        req: &ObserveRequest,
    ) -> Result<Vec<ObservedCondition>, KubeError> {
        if req.driver_state.is_null() {
            return Ok(Vec::new());
        }
        let state: DriverState = serde_json::from_value(req.driver_state.clone()).map_err(|e| {
            KubeError::input(format!("the recorded driver state is unreadable: {e}"))
        })?;
        let vim = req
            .vims
            .iter()
            .find(|v| VIM_TYPES.contains(&v.vim_type()))
            .ok_or_else(|| KubeError::input("the instance has no Kubernetes VIM connection"))?;
        let cluster = Cluster::connect(ClusterAccess::from_vim(vim)?)?;
        let selector = format!("{INSTANCE_LABEL}={}", label_value(req.instance.id.as_str()));
        let namespace = state.namespace.as_str();
        let vnfcs: BTreeSet<&str> = req
            .instance
            .instantiated_vnf_info
            .as_ref()
            .and_then(|i| i.vnfc_resource_info.as_ref())
            .into_iter()
            .flatten()
            .map(|v| v.id.as_str())
            .collect();
        let condition = |kind: &str, name: &str, f: Finding| {
            let mut handle = resource_handle(name, kind, Some(&vim.connection_id));
            handle.container_namespace = Some(namespace.to_owned());
            let mut c = ObservedCondition::new(
                f.condition,
                f.severity,
                handle,
                FaultyResourceType::Compute,
            )
            .event(f.event_type);
            c.details = f.details;
            // The inventory names each VNFC after its pod.
            if kind == "Pod" && vnfcs.contains(name) {
                c = c.on_vnfc(name);
            }
            c
        };
        let now = Timestamp::now();
        let mut out = Vec::new();
        let pod_kind = cluster.pod_kind().await?;
        for pod in cluster.list(&pod_kind, Some(namespace), &selector).await? {
            let pod = serde_json::to_value(pod).unwrap_or(Value::Null);
            if let Some(f) = pod_finding(&pod, now, self.not_ready_grace) {
                out.push(condition("Pod", name(&pod), f));
            }
        }
        if state.objects.iter().any(|p| p.kind() == "Deployment")
            && let Some(kind) = cluster.kind("apps/v1", "Deployment").await?
        {
            for d in cluster.list(&kind, Some(namespace), &selector).await? {
                let d = serde_json::to_value(d).unwrap_or(Value::Null);
                if let Some(f) = deployment_finding(&d) {
                    out.push(condition("Deployment", name(&d), f));
                }
            }
        }
        Ok(out)
    }
}

fn name(v: &Value) -> &str {
    v.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}
