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
use crate::cluster::{Cluster, Kind};
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
        let cluster = self.cluster(ClusterAccess::from_vim(vim)?)?;
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
        for pod in instance_objects(&cluster, pod_kind, namespace, &selector).await? {
            if let Some(f) = pod_finding(&pod, now, self.not_ready_grace) {
                out.push(condition("Pod", name(&pod), f));
            }
        }
        if state.objects.iter().any(|p| p.kind() == "Deployment")
            && let Some(kind) = cluster.kind("apps/v1", "Deployment").await?
        {
            for d in instance_objects(&cluster, kind, namespace, &selector).await? {
                if let Some(f) = deployment_finding(&d) {
                    out.push(condition("Deployment", name(&d), f));
                }
            }
        }
        Ok(out)
    }
}

/// The objects of `kind` in `namespace` with the instance label `selector`
/// (`key=value`), read from the watch of that kind the cluster's steps share: looking at a
/// thousand instances costs no request per instance once the watch has listed them.
async fn instance_objects(
    cluster: &Cluster,
    kind: Kind,
    namespace: &str,
    selector: &str,
) -> Result<Vec<Value>, KubeError> {
    let (key, value) = selector.split_once('=').unwrap_or((selector, ""));
    let mut lease = cluster.watches().lease(&kind, Some(namespace), key);
    let doing = format!(
        "watching {} for the infrastructure watch",
        kind.resource.plural
    );
    loop {
        // The first list, bounded: an unanswered list is a failed look, retried next period.
        let failure = match tokio::time::timeout(OBSERVE_SYNC, lease.until_synced()).await {
            Ok(Ok(())) => break,
            Ok(Err((e, _))) => e,
            Err(_) => format!(
                "no answer to the first list in {} s{}",
                OBSERVE_SYNC.as_secs(),
                lease
                    .error()
                    .map(|(e, _)| format!(" (last error: {e})"))
                    .unwrap_or_default()
            ),
        };
        // Credentials that may not watch all namespaces watch the instance's.
        if failure.starts_with("403")
            && let Some(narrow) = cluster.watches().narrow(&lease, &kind, namespace)
        {
            lease = narrow;
            continue;
        }
        return Err(KubeError::Api {
            doing,
            code: failure
                .split(' ')
                .next()
                .and_then(|c| c.parse().ok())
                .unwrap_or(0),
            reason: "WatchFailed".into(),
            message: failure,
        });
    }
    Ok(lease
        .filter(|o| {
            o.metadata.namespace.as_deref() == Some(namespace)
                && o.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(key))
                    .map(String::as_str)
                    == Some(value)
        })
        .iter()
        .map(|o| serde_json::to_value(&**o).unwrap_or(Value::Null))
        .collect())
}

/// How long the infrastructure watch waits for a shared watch's first list.
const OBSERVE_SYNC: std::time::Duration = std::time::Duration::from_secs(30);

fn name(v: &Value) -> &str {
    v.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}
