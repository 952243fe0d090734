//! [`Ctx`]: one step's connection to the cluster and identity, and what every step does with
//! it: scopes and ownership of the wanted objects, applying them stage by stage and waiting
//! for readiness, deleting in the deletion order, and reading the inventory into the outcome.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Map, Value, json};
use vnfm_descriptor::Flavour;
use vnfm_driver_api::{InfraOutcome, InfraRequest, InstanceResources, ResolvedVim};

use super::{DriverState, check, is_redacted, redacted, reference};
use crate::KubeError;
use crate::cluster::Cluster;
use crate::inventory;
use crate::order::{deletion_step, is_workload};
use crate::plan::{
    INSTANCE_LABEL, MANAGED_BY, PERSISTENT_LABEL, Planned, RenderInput, SHARED_LABEL, label_value,
};
use crate::ready::{wait_gone, wait_ready};

/// A step's connection and identity.
pub(super) struct Ctx<'a> {
    pub(super) req: &'a InfraRequest,
    pub(super) vim: &'a ResolvedVim,
    pub(super) cluster: Cluster,
    pub(super) instance_id: String,
    /// How long deleted objects may take to be gone.
    pub(super) delete_timeout: Duration,
}

impl Ctx<'_> {
    /// Decides the scope of kinds the driver does not know: from a CRD among the objects, or
    /// from discovery. Cluster-scoped objects lose the namespace set while rendering.
    pub(super) async fn resolve_scopes(&self, planned: &mut [Planned]) -> Result<(), KubeError> {
        let crds: Vec<(String, String, bool)> = planned
            .iter()
            .filter(|p| p.kind() == "CustomResourceDefinition")
            .filter_map(|p| {
                Some((
                    p.object.pointer("/spec/group")?.as_str()?.to_string(),
                    p.object.pointer("/spec/names/kind")?.as_str()?.to_string(),
                    p.object.pointer("/spec/scope").and_then(Value::as_str) != Some("Cluster"),
                ))
            })
            .collect();
        for p in planned.iter_mut().filter(|p| p.namespaced.is_none()) {
            let from_crd = crds
                .iter()
                .find(|(g, k, _)| g == p.group() && k == p.kind())
                .map(|(_, _, n)| *n);
            let namespaced = match from_crd {
                Some(n) => Some(n),
                None => self
                    .cluster
                    .kind(p.api_version(), p.kind())
                    .await?
                    .map(|k| k.namespaced),
            };
            if let Some(n) = namespaced {
                p.namespaced = Some(n);
                if !n && let Some(m) = p.object["metadata"].as_object_mut() {
                    m.remove("namespace");
                }
            }
        }
        Ok(())
    }

    /// Refuses to take over objects that exist without the instance's label.
    pub(super) async fn ownership(&self, planned: &[Planned]) -> Result<(), KubeError> {
        let ours = label_value(&self.instance_id);
        let mut foreign = Vec::new();
        for p in planned.iter().filter(|p| !p.request) {
            let live = match self.cluster.get(p).await {
                Ok(l) => l,
                // The kind arrives with a CRD of the package: nothing can exist yet.
                Err(KubeError::UnknownKind { .. }) => None,
                Err(e) => return Err(e),
            };
            let Some(live) = live else { continue };
            let labels = live.metadata.labels.unwrap_or_default();
            let get = |k: &str| labels.get(k).map(String::as_str);
            let ok = if p.shared {
                get(SHARED_LABEL) == Some("true")
            } else {
                get(INSTANCE_LABEL) == Some(ours.as_str())
                    || (p.persistent
                        && get("app.kubernetes.io/managed-by") == Some(MANAGED_BY)
                        && get(PERSISTENT_LABEL) == Some("true"))
            };
            if !ok {
                foreign.push(p.display());
            }
        }
        if foreign.is_empty() {
            return Ok(());
        }
        Err(KubeError::Foreign {
            object: foreign.join(", "),
            label: INSTANCE_LABEL.into(),
            value: ours,
        })
    }

    /// Creates the namespace when it does not exist; whether it is the instance's own.
    pub(super) async fn ensure_namespace(&self, namespace: &str) -> Result<bool, KubeError> {
        let ns = reference("v1", "Namespace", None, namespace);
        let ours = label_value(&self.instance_id);
        if let Some(live) = self.cluster.get(&ns).await? {
            let labels = live.metadata.labels.unwrap_or_default();
            return Ok(labels.get(INSTANCE_LABEL) == Some(&ours));
        }
        let mut p = ns;
        p.object["metadata"]["labels"] = json!({
            INSTANCE_LABEL: ours,
            "app.kubernetes.io/managed-by": MANAGED_BY,
        });
        self.cluster.apply(&p).await?;
        Ok(true)
    }

    /// Applies `objects` stage by stage in order and waits for each stage to be ready;
    /// custom resources wait for the CRDs of their stage to be established. Request-like
    /// objects are created last when `requests` is given (it receives their warnings).
    pub(super) async fn apply(
        &self,
        objects: &mut [Planned],
        timeout: Duration,
        requests: Option<&mut Vec<String>>,
    ) -> Result<(), KubeError> {
        let control = &self.req.control;
        let stages: Vec<u32> = {
            let mut s: Vec<u32> = objects.iter().map(|p| p.stage).collect();
            s.dedup();
            s
        };
        for stage in stages {
            let idx: Vec<usize> = (0..objects.len())
                .filter(|&i| objects[i].stage == stage && !objects[i].request)
                .collect();
            for &i in idx.iter().filter(|&&i| objects[i].tier <= 6) {
                check(control, "applying objects")?;
                self.apply_one(&objects[i]).await?;
            }
            let crds: Vec<Planned> = idx
                .iter()
                .filter(|&&i| objects[i].kind() == "CustomResourceDefinition")
                .map(|&i| objects[i].clone())
                .collect();
            if !crds.is_empty() {
                wait_ready(&self.cluster, &crds, &self.instance_id, timeout, control).await?;
                self.cluster.forget_kinds();
                self.resolve_scopes(objects).await?;
            }
            for &i in idx.iter().filter(|&&i| objects[i].tier > 6) {
                check(control, "applying objects")?;
                self.apply_one(&objects[i]).await?;
            }
            let stage_objects: Vec<Planned> = idx.iter().map(|&i| objects[i].clone()).collect();
            wait_ready(
                &self.cluster,
                &stage_objects,
                &self.instance_id,
                timeout,
                control,
            )
            .await?;
        }
        if let Some(warnings) = requests {
            crate::requests::create_all(
                &self.cluster,
                objects,
                &|| check(control, "creating request objects"),
                warnings,
            )
            .await?;
        }
        Ok(())
    }

    pub(super) async fn apply_one(&self, p: &Planned) -> Result<(), KubeError> {
        if is_redacted(p) || p.request {
            // Its data is not recorded; the live object is left as it is.
            return Ok(());
        }
        if p.shared {
            return self.acquire_shared(p).await;
        }
        self.cluster.apply(p).await?;
        Ok(())
    }

    /// Sets the replicas of workload `p`: in its applied configuration (server-side apply),
    /// or, for a workload a HorizontalPodAutoscaler owns (whose configuration leaves replicas
    /// to it), with a merge patch, as the autoscaler itself does.
    pub(super) async fn set_replicas(
        &self,
        p: &mut Planned,
        replicas: u32,
    ) -> Result<(), KubeError> {
        if p.hpa.is_some() {
            self.cluster
                .merge(p, &json!({"spec": {"replicas": replicas}}))
                .await?;
            return Ok(());
        }
        p.object["spec"]["replicas"] = json!(replicas);
        self.cluster.apply(p).await?;
        Ok(())
    }

    /// Deletes `objects` in the deletion order ([`deletion_step`], then exact reverse order), a
    /// tier at a time (waiting for each tier to be gone). Shared networks lose this instance as a user and are deleted with their last
    /// user; persistent volumes are kept when `keep_persistent`. Returns the objects kept.
    pub(super) async fn delete(
        &self,
        objects: &[Planned],
        grace: Option<u32>,
        keep_persistent: bool,
        timeout: Duration,
    ) -> Result<Vec<Planned>, KubeError> {
        let control = &self.req.control;
        let mut kept = Vec::new();
        let mut rev: Vec<&Planned> = objects.iter().filter(|p| !p.request).collect();
        rev.reverse();
        // Workloads, then claims, then volumes and classes, namespaces last (a stable sort:
        // within a step, the exact reverse of the apply order).
        rev.sort_by_key(|p| deletion_step(p.tier));
        let mut i = 0;
        while i < rev.len() {
            let key = (deletion_step(rev[i].tier), rev[i].stage, rev[i].tier);
            let mut gone: Vec<(Planned, String)> = Vec::new();
            while i < rev.len() && (deletion_step(rev[i].tier), rev[i].stage, rev[i].tier) == key {
                let p = rev[i];
                i += 1;
                check(control, "deleting objects")?;
                if p.persistent && keep_persistent {
                    kept.push(p.clone());
                    continue;
                }
                if p.shared {
                    if let Some(deleted) = self.release_shared(p).await? {
                        gone.push(deleted);
                    }
                    continue;
                }
                match self.cluster.delete(p, grace).await {
                    Ok(Some(uid)) => {
                        if grace.is_some() {
                            self.delete_pods_of(p, &uid, grace).await?;
                        }
                        gone.push((p.clone(), uid));
                    }
                    Ok(None) => {}
                    Err(KubeError::UnknownKind { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
            if !gone.is_empty() {
                wait_gone(&self.cluster, &gone, timeout, control).await?;
            }
        }
        Ok(kept)
    }

    /// Deletes the pods of workload `p` (just deleted; its uid `uid`) with `grace` seconds. The
    /// grace period of a workload's own deletion does not reach its pods (the garbage
    /// collector deletes them with their default one), so a terminate that asks for one gives
    /// it to them directly.
    ///
    /// The pods of a Deployment belong to its ReplicaSets, those of a CronJob to its Jobs, and
    /// these intermediate owners replace a deleted pod until they are being deleted
    /// themselves, which the garbage collector gets to only some time after their owner:
    /// they are deleted here first (foreground, so they are marked at once and their
    /// controllers leave them alone), and only then their pods.
    async fn delete_pods_of(
        &self,
        p: &Planned,
        uid: &str,
        grace: Option<u32>,
    ) -> Result<(), KubeError> {
        let owned = match (p.group(), p.kind()) {
            ("apps", "Deployment") => Some(("apps/v1", "ReplicaSet")),
            ("batch", "CronJob") => Some(("batch/v1", "Job")),
            _ => None,
        };
        if let (Some((api_version, kind)), Some(ns)) = (owned, p.namespace())
            && let Some(k) = self.cluster.kind(api_version, kind).await?
        {
            for o in self.cluster.list(&k, Some(ns), "").await? {
                let ours = o
                    .metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|r| r.uid == uid);
                if ours && o.metadata.deletion_timestamp.is_none() {
                    let name = o.metadata.name.unwrap_or_default();
                    self.cluster
                        .delete(&reference(api_version, kind, Some(ns), &name), grace)
                        .await?;
                }
            }
        }
        let template = match (p.group(), p.kind()) {
            ("batch", "CronJob") => "/spec/jobTemplate/spec/template/metadata/labels",
            _ if is_workload(p.group(), p.kind()) && p.kind() != "Pod" => {
                "/spec/template/metadata/labels"
            }
            _ => return Ok(()),
        };
        let Some(labels) = p.object.pointer(template).and_then(Value::as_object) else {
            return Ok(());
        };
        // The template's labels include the instance label: only this instance's pods match.
        let selector: Vec<String> = labels
            .iter()
            .filter_map(|(k, v)| v.as_str().map(|v| format!("{k}={v}")))
            .collect();
        let (Some(ns), false) = (p.namespace(), selector.is_empty()) else {
            return Ok(());
        };
        let pod_kind = self.cluster.pod_kind().await?;
        for pod in self
            .cluster
            .list(&pod_kind, Some(ns), &selector.join(","))
            .await?
        {
            let name = pod.metadata.name.unwrap_or_default();
            self.cluster.delete_pod(ns, &name, grace).await?;
        }
        Ok(())
    }

    /// The flavour the instance's objects were rendered for (the step's, for states that do
    /// not record it).
    fn flavour_of(&self, state: &DriverState) -> Option<&Flavour> {
        Some(state.flavour_id.as_str())
            .filter(|f| !f.is_empty())
            .and_then(|f| self.req.vnfd.flavour(f))
            .or_else(|| self.req.flavour().ok())
    }

    pub(super) async fn inventory(
        &self,
        state: &DriverState,
    ) -> Result<InstanceResources, KubeError> {
        let flavour = self.flavour_of(state);
        let storages = |vdu: &str| -> Vec<String> {
            flavour
                .and_then(|f| f.vdu(vdu))
                .map(|v| v.virtual_storages.clone())
                .unwrap_or_default()
        };
        inventory::collect(
            &self.cluster,
            &state.namespace,
            &self.instance_id,
            &self.req.instance.vnfd_id,
            &state.objects,
            &storages,
        )
        .await
    }

    /// The step's outcome: `resources`, their changes from what the instance records, and
    /// `state`.
    pub(super) fn outcome(
        &self,
        resources: InstanceResources,
        state: Option<&DriverState>,
    ) -> InfraOutcome {
        let before = inventory::recorded(&self.req.instance);
        self.outcome_since(&before, resources, state)
    }

    /// [`Ctx::outcome`] with the changes counted from `before`.
    pub(super) fn outcome_since(
        &self,
        before: &InstanceResources,
        resources: InstanceResources,
        state: Option<&DriverState>,
    ) -> InfraOutcome {
        let changes = inventory::changes(before, &resources);
        let published_metadata = tacker_metadata(state);
        let driver_state = match state {
            Some(s) => {
                let mut s = s.clone();
                s.objects = redacted(&s.objects);
                if let Some(prev) = &mut s.previous {
                    prev.objects = redacted(&prev.objects);
                }
                serde_json::to_value(s).unwrap_or(Value::Null)
            }
            None => Value::Null,
        };
        InfraOutcome {
            resources,
            resource_changes: changes,
            vnf_state: None,
            driver_state,
            published_metadata,
        }
    }

    pub(super) fn render_input<'b>(
        &'b self,
        params: Map<String, Value>,
        namespace: &str,
        release: &str,
        counts: BTreeMap<String, u32>,
    ) -> RenderInput<'b> {
        self.render_input_for(self.req.flavour().ok(), params, namespace, release, counts)
    }

    pub(super) fn render_input_for<'b>(
        &'b self,
        flavour: Option<&'b Flavour>,
        params: Map<String, Value>,
        namespace: &str,
        release: &str,
        counts: BTreeMap<String, u32>,
    ) -> RenderInput<'b> {
        RenderInput {
            params,
            vnfd: Some(&self.req.vnfd),
            flavour,
            instance_id: self.instance_id.clone(),
            instance_name: self
                .req
                .instance
                .vnf_instance_name
                .clone()
                .unwrap_or_default(),
            namespace: namespace.to_string(),
            manifest_namespaces: false,
            release: release.to_string(),
            counts,
        }
    }
}

/// What Tacker's Kubernetes driver records in `instantiatedVnfInfo.metadata`, which its
/// clients and management scripts read: `namespace` (and `tenant`, the same), `vdu_reses`
/// (each VDU's workload as applied, by VDU id) and `lcm-kubernetes-def-files`. Without a
/// state (after terminate) the keys are removed.
fn tacker_metadata(state: Option<&DriverState>) -> Map<String, Value> {
    let keys = [
        "namespace",
        "tenant",
        "vdu_reses",
        "lcm-kubernetes-def-files",
    ];
    let Some(state) = state else {
        return keys.iter().map(|k| (k.to_string(), Value::Null)).collect();
    };
    let vdu_reses: Map<String, Value> = state
        .objects
        .iter()
        .filter(|p| is_workload(p.group(), p.kind()) && !is_redacted(p))
        .filter_map(|p| Some((p.vdu.clone()?, p.object.clone())))
        .collect();
    let files = match state.def_files.is_empty() {
        true => Value::Null,
        false => json!(state.def_files),
    };
    Map::from_iter([
        ("namespace".to_string(), json!(state.namespace)),
        ("tenant".to_string(), json!(state.namespace)),
        ("vdu_reses".to_string(), Value::Object(vdu_reses)),
        ("lcm-kubernetes-def-files".to_string(), files),
    ])
}
