//! [`KubernetesDriver`]: the [`InfraDriver`] for `ETSINFV.KUBERNETES.V_1` and
//! `ETSINFV.HELM.V_3` VIMs.
//!
//! Every step connects from the VIM's access info, works out the objects it wants (rendered
//! from the request and the package, or taken from the driver state of the previous step),
//! applies them with server-side apply in the ordering rule's order, waits for readiness with
//! watches, deletes what is no longer wanted in exact reverse order, and reports the
//! instance's pods and PVCs. Each step is idempotent: running it again converges to the same
//! objects.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use vnfm_descriptor::Flavour;
use vnfm_driver_api::{
    DriverError, HealScope, InfraDriver, InfraOutcome, InfraRequest, InfraStep, InstanceResources,
    ResolvedVim, RunControl,
};
use vnfm_types::{OperationParams, StopType, TerminationType, VnfOperationalState};

use crate::KubeError;
use crate::access::ClusterAccess;
use crate::asd::placement_check;
use crate::cluster::Cluster;
use crate::helm::{HelmBinary, HelmRenderer};
use crate::inventory;
use crate::order::{deletion_step, is_scalable, is_workload};
use crate::plan::{
    self, INSTANCE_LABEL, MANAGED_BY, PERSISTENT_LABEL, Planned, RenderInput, SHARED_LABEL,
    USER_ANNOTATION_PREFIX, asd_of, dns_name, label_value,
};
use crate::ready::{wait_gone, wait_ready};

/// `vimType` of a Kubernetes cluster.
pub const KUBERNETES_VIM_TYPE: &str = "ETSINFV.KUBERNETES.V_1";
/// `vimType` of a Kubernetes cluster driven through Helm.
pub const HELM_VIM_TYPE: &str = "ETSINFV.HELM.V_3";
const VIM_TYPES: &[&str] = &[KUBERNETES_VIM_TYPE, HELM_VIM_TYPE];

/// What the driver records with the instance between steps.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DriverState {
    /// Format version.
    pub version: u32,
    /// The instance's namespace.
    pub namespace: String,
    /// Whether the driver created the namespace (and deletes it on terminate).
    pub namespace_created: bool,
    /// The VNFD the objects come from.
    pub vnfd_id: String,
    /// The deployment flavour the objects were rendered for.
    #[serde(default)]
    pub flavour_id: String,
    /// Helm release name (`.Release.Name` of rendered charts).
    pub release: String,
    /// The `additionalParams` the objects were rendered with (placeholder values).
    #[serde(default)]
    pub params: Map<String, Value>,
    /// Instances per VDU.
    #[serde(default)]
    pub counts: BTreeMap<String, u32>,
    /// The manifest files (`lcm-kubernetes-def-files`) the objects were rendered from, in
    /// order: a package change that names no files renders these from the new package.
    /// Empty when the objects come from the VDU-bound manifests or a chart alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub def_files: Vec<String>,
    /// The objects, in apply order (Secrets without their data).
    #[serde(default)]
    pub objects: Vec<Planned>,
    /// The workloads a stop scaled to zero, with the replicas a start restores; empty while
    /// the VNF is started.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stopped: Vec<StoppedWorkload>,
    /// The objects before the last package change, for its rollback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<Box<Snapshot>>,
    /// Warnings of the last instantiation (placement, Bindings of pods that do not exist).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// A workload scaled to zero replicas by operate STOPPED.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoppedWorkload {
    /// `Deployment`, `StatefulSet` or `ReplicaSet`.
    pub kind: String,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The replicas it had, restored by operate STARTED.
    pub replicas: u32,
}

impl StoppedWorkload {
    fn is(&self, p: &Planned) -> bool {
        p.kind() == self.kind
            && p.namespace().unwrap_or("") == self.namespace
            && p.name() == self.name
    }
}

/// The objects of one package version.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    /// The VNFD.
    pub vnfd_id: String,
    /// Its parameters.
    #[serde(default)]
    pub params: Map<String, Value>,
    /// Its manifest files ([`DriverState::def_files`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub def_files: Vec<String>,
    /// Its objects.
    pub objects: Vec<Planned>,
}

/// The Kubernetes infrastructure driver.
pub struct KubernetesDriver {
    helm: Option<Arc<dyn HelmRenderer>>,
    ready_timeout: Duration,
    delete_timeout: Duration,
}

impl std::fmt::Debug for KubernetesDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubernetesDriver")
            .field("helm", &self.helm.as_ref().map(|h| h.name().to_string()))
            .field("ready_timeout", &self.ready_timeout)
            .field("delete_timeout", &self.delete_timeout)
            .finish()
    }
}

impl Default for KubernetesDriver {
    fn default() -> Self {
        Self::new()
    }
}

impl KubernetesDriver {
    /// A driver that renders charts with `helm` from `PATH` when there is one, and waits up
    /// to 10 minutes for readiness (bounded by each step's own deadline).
    pub fn new() -> Self {
        KubernetesDriver {
            helm: HelmBinary::from_path().map(|h| Arc::new(h) as Arc<dyn HelmRenderer>),
            ready_timeout: Duration::from_secs(600),
            delete_timeout: Duration::from_secs(600),
        }
    }

    /// Renders Helm charts with `helm`.
    pub fn with_helm(mut self, helm: Arc<dyn HelmRenderer>) -> Self {
        self.helm = Some(helm);
        self
    }

    /// Renders no Helm charts, even with `helm` on `PATH`: a request that deploys a chart is
    /// refused before anything is applied.
    pub fn without_helm(mut self) -> Self {
        self.helm = None;
        self
    }

    /// Waits at most `timeout` for objects to become ready (a request may ask for less with
    /// `additionalParams.readinessTimeoutSeconds`).
    pub fn with_ready_timeout(mut self, timeout: Duration) -> Self {
        self.ready_timeout = timeout;
        self
    }

    /// Waits at most `timeout` for deleted objects to be gone.
    pub fn with_delete_timeout(mut self, timeout: Duration) -> Self {
        self.delete_timeout = timeout;
        self
    }
}

/// The `additionalParams` key of a shorter budget for every wait of an operation.
const READINESS_TIMEOUT: &str = "readinessTimeoutSeconds";

fn check(control: &RunControl, what: &str) -> Result<(), KubeError> {
    control.check(what).map_err(|e| match e {
        DriverError::Cancelled { what } => KubeError::Cancelled(what),
        DriverError::Timeout { what, budget } => KubeError::Deadline { what, budget },
        other => KubeError::input(other.to_string()),
    })
}

fn params_of(req: &InfraRequest) -> Map<String, Value> {
    req.additional_params().cloned().unwrap_or_default()
}

/// A step's connection and identity.
struct Ctx<'a> {
    req: &'a InfraRequest,
    vim: &'a ResolvedVim,
    cluster: Cluster,
    instance_id: String,
    /// How long deleted objects may take to be gone.
    delete_timeout: Duration,
}

impl KubernetesDriver {
    fn connect<'a>(&self, req: &'a InfraRequest) -> Result<Ctx<'a>, KubeError> {
        let vim = req.vim_of_type(VIM_TYPES).ok_or_else(|| {
            KubeError::input(format!(
                "the instance has no VIM connection of type {KUBERNETES_VIM_TYPE} or {HELM_VIM_TYPE}"
            ))
        })?;
        let access = ClusterAccess::from_vim(vim)?;
        // `readinessTimeoutSeconds` of the request (else the one recorded at instantiation)
        // bounds the waits for deleted objects too.
        let asked = params_of(req)
            .get(READINESS_TIMEOUT)
            .or_else(|| {
                req.driver_state
                    .pointer(&format!("/params/{READINESS_TIMEOUT}"))
            })
            .and_then(Value::as_u64)
            .map(Duration::from_secs);
        Ok(Ctx {
            req,
            vim,
            cluster: Cluster::connect(access)?,
            instance_id: req.instance.id.to_string(),
            delete_timeout: asked.map_or(self.delete_timeout, |d| d.min(self.delete_timeout)),
        })
    }

    fn ready_timeout(&self, params: &Map<String, Value>) -> Duration {
        params
            .get(READINESS_TIMEOUT)
            .and_then(Value::as_u64)
            .map(Duration::from_secs)
            .map_or(self.ready_timeout, |d| d.min(self.ready_timeout))
    }
}

fn namespace_for(
    params: &Map<String, Value>,
    access: &ClusterAccess,
    instance_id: &str,
) -> Result<String, KubeError> {
    if let Some(v) = params.get("namespace").filter(|v| !v.is_null()) {
        let ns = v
            .as_str()
            .ok_or_else(|| KubeError::input("additionalParams.namespace must be a string"))?;
        let valid = !ns.is_empty()
            && ns.len() <= 63
            && ns
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !ns.starts_with('-')
            && !ns.ends_with('-');
        if !valid {
            return Err(KubeError::input(format!(
                "additionalParams.namespace `{}` is not a Kubernetes namespace name (lowercase letters, digits and '-', at most 63)",
                ns.chars().take(70).collect::<String>()
            )));
        }
        return Ok(ns.to_string());
    }
    if let Some(ns) = &access.namespace {
        return Ok(ns.clone());
    }
    Ok(dns_name("vnf-", instance_id, 63))
}

fn release_for(params: &Map<String, Value>, instance_id: &str) -> String {
    params
        .get("helm_release_name")
        .and_then(Value::as_str)
        .map(String::from)
        .unwrap_or_else(|| dns_name("vnf", &instance_id.replace('-', ""), 53))
}

/// The driver state without secret data (it is stored with the instance, which the API shows).
fn redacted(objects: &[Planned]) -> Vec<Planned> {
    objects
        .iter()
        .map(|p| {
            let mut p = p.clone();
            if p.kind() == "Secret"
                && p.group().is_empty()
                && let Some(m) = p.object.as_object_mut()
            {
                m.remove("data");
                m.remove("stringData");
                m.insert("vnfmRedacted".into(), json!(true));
            }
            p
        })
        .collect()
}

fn is_redacted(p: &Planned) -> bool {
    p.object.get("vnfmRedacted").is_some()
}

fn load_state(req: &InfraRequest) -> Result<Option<DriverState>, KubeError> {
    if req.driver_state.is_null() {
        return Ok(None);
    }
    serde_json::from_value(req.driver_state.clone())
        .map(Some)
        .map_err(|e| KubeError::input(format!("the recorded driver state is unreadable: {e}")))
}

fn require_state(req: &InfraRequest) -> Result<DriverState, KubeError> {
    load_state(req)?.ok_or_else(|| {
        KubeError::input(format!(
            "instance {} has no recorded Kubernetes resources (no driver state): it was not instantiated by this driver",
            req.instance.id
        ))
    })
}

/// A reference to an object by kind and name (for deletions of objects that are not planned).
pub(crate) fn reference(
    api_version: &str,
    kind: &str,
    namespace: Option<&str>,
    name: &str,
) -> Planned {
    let mut object = json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name}});
    if let Some(ns) = namespace {
        object["metadata"]["namespace"] = json!(ns);
    }
    Planned {
        object,
        source: "cluster".into(),
        stage: 0,
        tier: crate::order::tier(crate::order::group_of(api_version), kind),
        vdu: None,
        namespaced: Some(namespace.is_some()),
        shared: false,
        persistent: false,
        request: false,
        hpa: None,
    }
}

impl Ctx<'_> {
    /// Decides the scope of kinds the driver does not know: from a CRD among the objects, or
    /// from discovery. Cluster-scoped objects lose the namespace set while rendering.
    async fn resolve_scopes(&self, planned: &mut [Planned]) -> Result<(), KubeError> {
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
    async fn ownership(&self, planned: &[Planned]) -> Result<(), KubeError> {
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
    async fn ensure_namespace(&self, namespace: &str) -> Result<bool, KubeError> {
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
    async fn apply(
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

    async fn apply_one(&self, p: &Planned) -> Result<(), KubeError> {
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

    /// The annotation that records this instance as a user of a shared network.
    fn user_key(&self) -> String {
        format!("{USER_ANNOTATION_PREFIX}{}", label_value(&self.instance_id))
    }

    /// Makes sure the shared network `p` exists and records this instance as one of its
    /// users. Instances register and release concurrently, so the user annotation is written
    /// with the resourceVersion just read as a precondition, and the whole exchange is
    /// retried when another user changed (409) or deleted (404) the network meanwhile.
    async fn acquire_shared(&self, p: &Planned) -> Result<(), KubeError> {
        let key = self.user_key();
        for attempt in 0..SHARED_ATTEMPTS {
            check(&self.req.control, "registering a shared network user")?;
            // Create it, or bring its configuration up to date (every user applies the same).
            let live = self.cluster.apply(p).await?;
            if live.metadata.deletion_timestamp.is_some() {
                self.wait_replaced(p, &live).await?;
                continue;
            }
            if live
                .metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key(&key))
            {
                return Ok(());
            }
            let rv = live.metadata.resource_version.clone().unwrap_or_default();
            let patch = json!({"metadata": {"annotations": {key.as_str(): "true"}}});
            match self.cluster.merge_at(p, &rv, &patch).await {
                Ok(o) if o.metadata.deletion_timestamp.is_some() => {
                    // Another instance released it as its last user just before: it is going.
                    self.wait_replaced(p, &o).await?;
                }
                Ok(_) => return Ok(()),
                Err(e) if e.is_status(409) || e.is_status(404) => {
                    tracing::debug!(object = %p.display(), attempt, "shared network changed meanwhile; retrying");
                    backoff(&self.instance_id, attempt).await;
                }
                Err(e) => return Err(e),
            }
        }
        Err(shared_conflict(p, "registering this instance as a user of"))
    }

    /// Waits until a shared network that is being deleted is gone.
    async fn wait_replaced(
        &self,
        p: &Planned,
        live: &kube::api::DynamicObject,
    ) -> Result<(), KubeError> {
        let uid = live.metadata.uid.clone().unwrap_or_default();
        wait_gone(
            &self.cluster,
            &[(p.clone(), uid)],
            self.delete_timeout,
            &self.req.control,
        )
        .await
    }

    /// Sets the replicas of workload `p`: in its applied configuration (server-side apply),
    /// or, for a workload a HorizontalPodAutoscaler owns (whose configuration leaves replicas
    /// to it), with a merge patch, as the autoscaler itself does.
    async fn set_replicas(&self, p: &mut Planned, replicas: u32) -> Result<(), KubeError> {
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
    async fn delete(
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
                        gone.push((p.clone(), uid));
                        if grace.is_some() {
                            self.delete_pods_of(p, grace).await?;
                        }
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

    /// Deletes the pods of workload `p` with `grace` seconds. The grace period of a
    /// workload's own deletion does not reach its pods (the garbage collector deletes them
    /// with their default one), so a terminate that asks for one gives it to them directly.
    async fn delete_pods_of(&self, p: &Planned, grace: Option<u32>) -> Result<(), KubeError> {
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

    /// Removes this instance from a shared network's users and deletes the network when no
    /// other user is left; the deleted network and its uid, to wait for. Both writes carry the
    /// resourceVersion just read as a precondition: a user registering meanwhile makes them
    /// fail with 409, and the decision is taken again on what the cluster holds then.
    async fn release_shared(&self, p: &Planned) -> Result<Option<(Planned, String)>, KubeError> {
        let key = self.user_key();
        for attempt in 0..SHARED_ATTEMPTS {
            check(&self.req.control, "releasing a shared network")?;
            let live = match self.cluster.get(p).await {
                Ok(Some(l)) => l,
                Ok(None) | Err(KubeError::UnknownKind { .. }) => return Ok(None),
                Err(e) => return Err(e),
            };
            if live.metadata.deletion_timestamp.is_some() {
                return Ok(None);
            }
            let annotations = live.metadata.annotations.clone().unwrap_or_default();
            let others = annotations
                .keys()
                .filter(|k| k.starts_with(USER_ANNOTATION_PREFIX) && **k != key)
                .count();
            let rv = live.metadata.resource_version.clone().unwrap_or_default();
            let written = if others > 0 {
                if !annotations.contains_key(&key) {
                    return Ok(None);
                }
                let patch = json!({"metadata": {"annotations": {key.as_str(): null}}});
                self.cluster.merge_at(p, &rv, &patch).await.map(|_| None)
            } else {
                let uid = live.metadata.uid.clone().unwrap_or_default();
                self.cluster
                    .delete_at(p, &rv)
                    .await
                    .map(|deleted| deleted.then(|| (p.clone(), uid)))
            };
            match written {
                Ok(done) => return Ok(done),
                Err(e) if e.is_status(404) => return Ok(None),
                Err(e) if e.is_status(409) => {
                    tracing::debug!(object = %p.display(), attempt, "shared network changed meanwhile; retrying");
                    backoff(&self.instance_id, attempt).await;
                }
                Err(e) => return Err(e),
            }
        }
        Err(shared_conflict(p, "releasing this instance's use of"))
    }

    /// The flavour the instance's objects were rendered for (the step's, for states that do
    /// not record it).
    fn flavour_of(&self, state: &DriverState) -> Option<&Flavour> {
        Some(state.flavour_id.as_str())
            .filter(|f| !f.is_empty())
            .and_then(|f| self.req.vnfd.flavour(f))
            .or_else(|| self.req.flavour().ok())
    }

    async fn inventory(&self, state: &DriverState) -> Result<InstanceResources, KubeError> {
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
    fn outcome(&self, resources: InstanceResources, state: Option<&DriverState>) -> InfraOutcome {
        let before = inventory::recorded(&self.req.instance);
        self.outcome_since(&before, resources, state)
    }

    /// [`Ctx::outcome`] with the changes counted from `before`.
    fn outcome_since(
        &self,
        before: &InstanceResources,
        resources: InstanceResources,
        state: Option<&DriverState>,
    ) -> InfraOutcome {
        let changes = inventory::changes(before, &resources);
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
        }
    }

    fn render_input<'b>(
        &'b self,
        params: Map<String, Value>,
        namespace: &str,
        release: &str,
        counts: BTreeMap<String, u32>,
    ) -> RenderInput<'b> {
        self.render_input_for(self.req.flavour().ok(), params, namespace, release, counts)
    }

    fn render_input_for<'b>(
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
            release: release.to_string(),
            counts,
        }
    }
}

impl KubernetesDriver {
    async fn instantiate_inner(&self, req: &InfraRequest) -> Result<InfraOutcome, KubeError> {
        let InfraStep::Instantiate { target } = &req.step else {
            return Err(KubeError::input("instantiate was called with another step"));
        };
        let ctx = self.connect(req)?;
        let params = params_of(req);
        let namespace = namespace_for(&params, ctx.cluster.access(), &ctx.instance_id)?;
        let release = release_for(&params, &ctx.instance_id);
        let input = ctx.render_input(
            params.clone(),
            &namespace,
            &release,
            target.vdu_instances.clone(),
        );
        let mut objects = plan::render(&input, &*req.artifacts, self.helm.as_deref()).await?;
        check(&req.control, "instantiate")?;
        ctx.resolve_scopes(&mut objects).await?;
        crate::requests::place_bound_pods(&mut objects);
        let mut warnings = Vec::new();
        if let Some(asd) = asd_of(&req.vnfd)?
            && let Some(caps) = &asd.enhanced_cluster_capabilities
        {
            warnings = placement_check(&ctx.cluster, ctx.vim, caps, &objects).await?;
        }
        ctx.ownership(&objects).await?;
        let namespace_created = ctx.ensure_namespace(&namespace).await?;
        ctx.apply(
            &mut objects,
            self.ready_timeout(&params),
            Some(&mut warnings),
        )
        .await?;
        let state = DriverState {
            version: 1,
            namespace,
            namespace_created,
            vnfd_id: req.vnfd.descriptor_id.clone(),
            flavour_id: req.flavour_id.clone(),
            release,
            def_files: plan::string_list(&params, "lcm-kubernetes-def-files")?.unwrap_or_default(),
            params: without_sources(&params),
            counts: target.vdu_instances.clone(),
            objects,
            stopped: Vec::new(),
            previous: None,
            warnings,
        };
        let resources = ctx.inventory(&state).await?;
        Ok(ctx.outcome(resources, Some(&state)))
    }

    async fn terminate_inner(&self, req: &InfraRequest) -> Result<InfraOutcome, KubeError> {
        let grace = match &req.step {
            InfraStep::Terminate {
                termination_type: TerminationType::Forceful,
                ..
            } => Some(0),
            InfraStep::Terminate {
                graceful_timeout_seconds,
                ..
            } => *graceful_timeout_seconds,
            _ => return Err(KubeError::input("terminate was called with another step")),
        };
        let ctx = self.connect(req)?;
        let Some(state) = load_state(req)? else {
            return Ok(ctx.outcome(InstanceResources::default(), None));
        };
        let params = params_of(req);
        let keep = !params
            .get("deletePersistentVolumes")
            .is_some_and(|v| v == &Value::Bool(true));
        self.remove_all(&ctx, &state, grace, keep).await?;
        Ok(ctx.outcome(InstanceResources::default(), None))
    }

    /// Deletes everything the instance has: its objects and the PVCs its StatefulSets made
    /// (which outlive them), in the deletion order, then the namespace when the driver created
    /// it and nothing persistent stays in it.
    async fn remove_all(
        &self,
        ctx: &Ctx<'_>,
        state: &DriverState,
        grace: Option<u32>,
        keep_persistent: bool,
    ) -> Result<(), KubeError> {
        let mut objects = state.objects.clone();
        // Claims made from volumeClaimTemplates carry the instance label.
        let selector = format!("{INSTANCE_LABEL}={}", label_value(&ctx.instance_id));
        let pvc_kind = ctx.cluster.core("PersistentVolumeClaim").await?;
        for c in ctx
            .cluster
            .list(&pvc_kind, Some(&state.namespace), &selector)
            .await?
        {
            let name = c.metadata.name.clone().unwrap_or_default();
            let mut claim = reference("v1", "PersistentVolumeClaim", Some(&state.namespace), &name);
            claim.persistent = c
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(PERSISTENT_LABEL))
                .is_some_and(|v| v == "true");
            if !objects.iter().any(|o| o.identity() == claim.identity()) {
                objects.push(claim);
            }
        }
        let kept = ctx
            .delete(&objects, grace, keep_persistent, ctx.delete_timeout)
            .await?;
        if state.namespace_created && kept.is_empty() {
            let ns = reference("v1", "Namespace", None, &state.namespace);
            ctx.delete(&[ns], grace, false, ctx.delete_timeout).await?;
        }
        Ok(())
    }

    async fn scale_inner(&self, req: &InfraRequest) -> Result<InfraOutcome, KubeError> {
        let target = match &req.step {
            InfraStep::Scale { target, .. }
            | InfraStep::ScaleToLevel { target, .. }
            | InfraStep::RollbackScale { restore: target } => target,
            _ => return Err(KubeError::input("scale was called with another step")),
        };
        let ctx = self.connect(req)?;
        let mut state = require_state(req)?;
        // The VDUs of the scaled aspect must be scalable; other VDUs whose planned count
        // changes but that run as DaemonSets or bare pods keep what they have.
        let aspect_vdus: Vec<String> = match &req.step {
            InfraStep::Scale { aspect_id, .. } => req
                .flavour()
                .ok()
                .and_then(|f| f.scaling_aspect(aspect_id))
                .map(|a| a.vdu_deltas.keys().cloned().collect())
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        let mut changed: Vec<usize> = Vec::new();
        for (vdu, count) in &target.vdu_instances {
            if state.counts.get(vdu) == Some(count) && !aspect_vdus.contains(vdu) {
                continue;
            }
            match plan::scale_vdu(&mut state.objects, vdu, *count) {
                Ok(idx) => changed.extend(idx),
                Err(e) if !aspect_vdus.contains(vdu) => {
                    tracing::debug!(vdu = %vdu, error = %e, "VDU not scaled");
                }
                Err(e) => return Err(e),
            }
        }
        changed.sort();
        changed.dedup();
        // A stopped workload stays at zero: its new count is what a start restores.
        changed.retain(|&i| {
            let p = &mut state.objects[i];
            let Some(w) = state.stopped.iter_mut().find(|w| w.is(p)) else {
                return true;
            };
            if let Some(n) = p.object.pointer("/spec/replicas").and_then(Value::as_u64) {
                w.replicas = u32::try_from(n).unwrap_or(u32::MAX);
            }
            p.object["spec"]["replicas"] = json!(0);
            false
        });
        let timeout = self.ready_timeout(&state.params);
        for &i in &changed {
            check(&req.control, "scaling")?;
            ctx.cluster.apply(&state.objects[i]).await?;
        }
        let touched: Vec<Planned> = changed.iter().map(|&i| state.objects[i].clone()).collect();
        wait_ready(
            &ctx.cluster,
            &touched,
            &ctx.instance_id,
            timeout,
            &req.control,
        )
        .await?;
        state.counts = target.vdu_instances.clone();
        let resources = ctx.inventory(&state).await?;
        Ok(ctx.outcome(resources, Some(&state)))
    }

    async fn heal_inner(&self, req: &InfraRequest) -> Result<InfraOutcome, KubeError> {
        let InfraStep::Heal { scope } = &req.step else {
            return Err(KubeError::input("heal was called with another step"));
        };
        let ctx = self.connect(req)?;
        let mut state = require_state(req)?;
        let timeout = self.ready_timeout(&state.params);
        let current = ctx.inventory(&state).await?;
        let params = params_of(req);
        let grace = params
            .get("gracePeriodSeconds")
            .and_then(Value::as_u64)
            .map(|g| g.min(u64::from(u32::MAX)) as u32);
        let pods: Vec<(String, String)> = match scope {
            HealScope::WholeVnf => current
                .vnfc_resource_info
                .iter()
                .map(|v| (v.id.clone(), v.vdu_id.clone()))
                .collect(),
            HealScope::Vnfcs { vnfcs } => {
                let mut out = Vec::new();
                for v in vnfcs {
                    let found = current.vnfc_resource_info.iter().find(|r| {
                        r.id == v.vnfc_resource_id
                            || r.compute_resource.resource_id == v.vnfc_resource_id
                    });
                    match found {
                        Some(r) => {
                            out.push((r.compute_resource.resource_id.clone(), r.vdu_id.clone()))
                        }
                        // Already replaced by an earlier attempt of this step: its VDU is
                        // still checked below.
                        None => {
                            tracing::info!(vnfc = %v.vnfc_resource_id, "VNFC to heal is already gone")
                        }
                    }
                }
                out
            }
        };
        let mut gone = Vec::new();
        for (pod, _) in &pods {
            check(&req.control, "healing")?;
            if let Some(uid) = ctx.cluster.delete_pod(&state.namespace, pod, grace).await? {
                gone.push((reference("v1", "Pod", Some(&state.namespace), pod), uid));
            }
        }
        wait_gone(&ctx.cluster, &gone, ctx.delete_timeout, &req.control).await?;
        // Bare pods come back by being applied again; controllers replace the others.
        let vdus: Vec<&str> = match scope {
            HealScope::WholeVnf => Vec::new(),
            HealScope::Vnfcs { vnfcs } => vnfcs.iter().map(|v| v.vdu_id.as_str()).collect(),
        };
        let affected: Vec<usize> = (0..state.objects.len())
            .filter(|&i| {
                let p = &state.objects[i];
                matches!(scope, HealScope::WholeVnf)
                    || p.vdu.as_deref().is_some_and(|v| vdus.contains(&v))
            })
            .collect();
        for &i in &affected {
            let p = &state.objects[i];
            let bare_pod = p.kind() == "Pod" && p.group().is_empty();
            if bare_pod || matches!(scope, HealScope::WholeVnf) {
                ctx.apply_one(p).await?;
            }
        }
        let targets: Vec<Planned> = affected.iter().map(|&i| state.objects[i].clone()).collect();
        wait_ready(
            &ctx.cluster,
            &targets,
            &ctx.instance_id,
            timeout,
            &req.control,
        )
        .await?;
        state.warnings.clear();
        let resources = ctx.inventory(&state).await?;
        // The changes are the heal's own: counted from what ran when it started, not from
        // what an earlier step recorded.
        Ok(ctx.outcome_since(&current, resources, Some(&state)))
    }

    async fn change_vnfpkg_inner(&self, req: &InfraRequest) -> Result<InfraOutcome, KubeError> {
        let InfraStep::ChangeVnfpkg { to_vnfd_id, .. } = &req.step else {
            return Err(KubeError::input(
                "change_vnfpkg was called with another step",
            ));
        };
        let ctx = self.connect(req)?;
        let mut state = require_state(req)?;
        if state.vnfd_id == to_vnfd_id.as_str() {
            // Already changed (a retried step).
            let resources = ctx.inventory(&state).await?;
            return Ok(ctx.outcome(resources, Some(&state)));
        }
        refuse_while_stopped(&state, "changing its package")?;
        let change_params = params_of(req);
        let change = self.changed_objects(&ctx, &state, &change_params).await?;
        let timeout = self.ready_timeout(&change.params);
        let mut desired = change.objects;
        ctx.resolve_scopes(&mut desired).await?;
        ctx.ownership(&desired).await?;
        let prune = not_in(&state.objects, &desired);
        ctx.apply(&mut desired, timeout, None).await?;
        ctx.delete(&prune, None, true, ctx.delete_timeout).await?;
        let previous = Snapshot {
            vnfd_id: state.vnfd_id.clone(),
            params: state.params.clone(),
            def_files: state.def_files.clone(),
            objects: state.objects.clone(),
        };
        state.previous = Some(Box::new(previous));
        state.objects = desired;
        state.params = change.params;
        state.def_files = change.def_files;
        state.vnfd_id = to_vnfd_id.to_string();
        let resources = ctx.inventory(&state).await?;
        Ok(ctx.outcome(resources, Some(&state)))
    }

    /// The objects after a package change. Manifests given for the change replace the objects
    /// they name (and the workloads of the VDUs they cover) and leave the others as they are.
    /// Without files of its own, the change renders what the instance was deployed from out
    /// of the new package: the manifest files recorded at instantiation (each must be in the
    /// new package: one that is not fails the step before anything is applied) and the chart;
    /// with neither recorded, the new VNFD's VDU-bound manifests. Those replace everything.
    async fn changed_objects(
        &self,
        ctx: &Ctx<'_>,
        state: &DriverState,
        change_params: &Map<String, Value>,
    ) -> Result<Changed, KubeError> {
        let mut params = state.params.clone();
        for (k, v) in change_params {
            params.insert(k.clone(), v.clone());
        }
        let given = plan::string_list(change_params, "lcm-kubernetes-def-files")?;
        if given.is_none() && !state.def_files.is_empty() {
            let missing: Vec<String> = state
                .def_files
                .iter()
                .filter_map(|f| {
                    ctx.req
                        .artifacts
                        .read(f)
                        .err()
                        .map(|e| format!("`{f}` ({e})"))
                })
                .collect();
            if !missing.is_empty() {
                return Err(KubeError::input(format!(
                    "the package change names no lcm-kubernetes-def-files, so the manifest files the instance was deployed from ({}) are read from the new package (VNFD {}), which lacks {}: add them to the package, or list the files to deploy in the change request's additionalParams.lcm-kubernetes-def-files; nothing was changed",
                    state.def_files.join(", "),
                    ctx.req.vnfd.descriptor_id,
                    missing.join(", ")
                )));
            }
            params.insert(
                "lcm-kubernetes-def-files".into(),
                json!(state.def_files.clone()),
            );
        }
        let input = ctx.render_input(
            params.clone(),
            &state.namespace,
            &state.release,
            state.counts.clone(),
        );
        let new = plan::render(&input, &*ctx.req.artifacts, self.helm.as_deref()).await?;
        let Some(given) = given else {
            return Ok(Changed {
                objects: new,
                params: without_sources(&params),
                def_files: state.def_files.clone(),
            });
        };
        let new_vdus: Vec<(&str, plan::Identity)> = new
            .iter()
            .filter_map(|p| p.vdu.as_deref().map(|v| (v, p.identity())))
            .collect();
        let mut out: Vec<Planned> = Vec::new();
        for old in &state.objects {
            if let Some(n) = new.iter().find(|n| n.identity() == old.identity()) {
                out.push(n.clone());
            } else if old.vdu.as_deref().is_some_and(|v| {
                new_vdus
                    .iter()
                    .any(|(nv, id)| *nv == v && *id != old.identity())
            }) {
                // The VDU's workload is replaced by one with another name.
            } else {
                out.push(old.clone());
            }
        }
        for n in &new {
            if !out.iter().any(|o| o.identity() == n.identity()) {
                out.push(n.clone());
            }
        }
        out.sort_by_key(|p| (p.stage, p.tier));
        // The files the objects now come from: the recorded ones that still contribute, then
        // the change's. An instance deployed from VDU-bound manifests keeps none recorded.
        let def_files = if state.def_files.is_empty() {
            Vec::new()
        } else {
            let mut files: Vec<String> = state
                .def_files
                .iter()
                .filter(|f| out.iter().any(|o| o.source == **f))
                .cloned()
                .collect();
            for f in given {
                if !files.contains(&f) {
                    files.push(f);
                }
            }
            files
        };
        Ok(Changed {
            objects: out,
            params: without_sources(&params),
            def_files,
        })
    }

    async fn rollback_change_vnfpkg_inner(
        &self,
        req: &InfraRequest,
    ) -> Result<InfraOutcome, KubeError> {
        let InfraStep::RollbackChangeVnfpkg { restore_vnfd_id } = &req.step else {
            return Err(KubeError::input(
                "rollback_change_vnfpkg was called with another step",
            ));
        };
        let ctx = self.connect(req)?;
        let mut state = require_state(req)?;
        let (restore, current): (Vec<Planned>, Vec<Planned>) = if state.vnfd_id
            == restore_vnfd_id.as_str()
        {
            // The change never completed: what it may have applied is found by rendering it
            // again.
            let change_params = params_of(req);
            let attempted = match self.changed_objects(&ctx, &state, &change_params).await {
                Ok(c) => {
                    let mut o = c.objects;
                    ctx.resolve_scopes(&mut o).await?;
                    o
                }
                Err(e) => {
                    tracing::info!(error = %e, "the package change cannot be rendered; nothing of it was applied");
                    Vec::new()
                }
            };
            (state.objects.clone(), attempted)
        } else if let Some(prev) = state.previous.take() {
            let current = std::mem::take(&mut state.objects);
            state.vnfd_id = prev.vnfd_id;
            state.params = prev.params;
            state.def_files = prev.def_files;
            (prev.objects, current)
        } else {
            return Err(KubeError::input(format!(
                "the instance's objects come from VNFD {} and no earlier package is recorded: nothing to roll back to {restore_vnfd_id}",
                state.vnfd_id
            )));
        };
        let mut restore = restore;
        let timeout = self.ready_timeout(&state.params);
        ctx.apply(&mut restore, timeout, None).await?;
        // Only objects that are the instance's own are removed.
        let strays = not_in(&current, &restore);
        let mut ours = Vec::new();
        for s in strays {
            let owned = match ctx.cluster.get(&s).await {
                Ok(Some(live)) => live
                    .metadata
                    .labels
                    .unwrap_or_default()
                    .get(INSTANCE_LABEL)
                    .is_some_and(|v| *v == label_value(&ctx.instance_id)),
                _ => false,
            };
            if owned {
                ours.push(s);
            }
        }
        ctx.delete(&ours, None, true, ctx.delete_timeout).await?;
        state.objects = restore;
        let resources = ctx.inventory(&state).await?;
        Ok(ctx.outcome(resources, Some(&state)))
    }

    async fn operate_inner(&self, req: &InfraRequest) -> Result<InfraOutcome, KubeError> {
        let InfraStep::Operate {
            change_state_to,
            stop_type,
            graceful_stop_timeout_seconds,
            vnfc_resource_ids,
        } = &req.step
        else {
            return Err(KubeError::input("operate was called with another step"));
        };
        if !vnfc_resource_ids.is_empty() {
            return Err(KubeError::input(format!(
                "operating single VNFCs ({}) is not supported for CNFs: a pod of a Deployment, StatefulSet or ReplicaSet cannot be stopped on its own (its controller replaces it); operate the whole VNF (no vnfcInstanceId)",
                vnfc_resource_ids.join(", ")
            )));
        }
        let ctx = self.connect(req)?;
        let mut state = require_state(req)?;
        match change_state_to {
            VnfOperationalState::Stopped => {
                let grace = match stop_type {
                    Some(StopType::Forceful) => Some(0),
                    Some(StopType::Graceful) => *graceful_stop_timeout_seconds,
                    None => None,
                };
                self.stop(&ctx, &mut state, grace).await?;
            }
            VnfOperationalState::Started => self.start(&ctx, &mut state).await?,
        }
        let resources = ctx.inventory(&state).await?;
        let mut out = ctx.outcome(resources, Some(&state));
        out.vnf_state = Some(*change_state_to);
        Ok(out)
    }

    /// Scales every workload with replicas to zero (recording the replicas it had), deletes
    /// the instance's pods with `grace` seconds, and waits until they are gone. Refused before
    /// anything changes when a workload cannot be scaled to zero.
    async fn stop(
        &self,
        ctx: &Ctx<'_>,
        state: &mut DriverState,
        grace: Option<u32>,
    ) -> Result<(), KubeError> {
        let unstoppable: Vec<String> = state
            .objects
            .iter()
            .filter(|p| is_workload(p.group(), p.kind()) && !is_scalable(p.group(), p.kind()))
            .map(Planned::display)
            .collect();
        if !unstoppable.is_empty() {
            return Err(KubeError::input(format!(
                "the VNF cannot be stopped: {} run pods that cannot be scaled to zero (only Deployment, StatefulSet and ReplicaSet workloads can be stopped); nothing was changed",
                unstoppable.join(", ")
            )));
        }
        let workloads: Vec<usize> = (0..state.objects.len())
            .filter(|&i| is_scalable(state.objects[i].group(), state.objects[i].kind()))
            .collect();
        for &i in &workloads {
            check(&ctx.req.control, "stopping workloads")?;
            if !state.stopped.iter().any(|w| w.is(&state.objects[i])) {
                let replicas = self.replicas_to_restore(ctx, state, i).await?;
                let p = &state.objects[i];
                state.stopped.push(StoppedWorkload {
                    kind: p.kind().to_string(),
                    namespace: p.namespace().unwrap_or("").to_string(),
                    name: p.name().to_string(),
                    replicas,
                });
            }
            ctx.set_replicas(&mut state.objects[i], 0).await?;
        }
        // The controllers remove the pods with their own grace period; deleting them as well
        // gives them the one the request asked for.
        let selector = format!("{INSTANCE_LABEL}={}", label_value(&ctx.instance_id));
        let pod_kind = ctx.cluster.pod_kind().await?;
        let mut gone = Vec::new();
        for pod in ctx
            .cluster
            .list(&pod_kind, Some(&state.namespace), &selector)
            .await?
        {
            check(&ctx.req.control, "stopping pods")?;
            let name = pod.metadata.name.clone().unwrap_or_default();
            if let Some(uid) = ctx
                .cluster
                .delete_pod(&state.namespace, &name, grace)
                .await?
            {
                gone.push((reference("v1", "Pod", Some(&state.namespace), &name), uid));
            }
        }
        wait_gone(&ctx.cluster, &gone, ctx.delete_timeout, &ctx.req.control).await?;
        let stopped: Vec<Planned> = workloads
            .iter()
            .map(|&i| state.objects[i].clone())
            .collect();
        wait_ready(
            &ctx.cluster,
            &stopped,
            &ctx.instance_id,
            self.ready_timeout(&state.params),
            &ctx.req.control,
        )
        .await
    }

    /// The replicas a start gives back to workload `i`: its planned count, or for a workload
    /// an autoscaler owns, the replicas it has now (the autoscaler's minimum when it has none).
    async fn replicas_to_restore(
        &self,
        ctx: &Ctx<'_>,
        state: &DriverState,
        i: usize,
    ) -> Result<u32, KubeError> {
        let p = &state.objects[i];
        let as_u32 = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        let Some(hpa) = &p.hpa else {
            return Ok(p
                .object
                .pointer("/spec/replicas")
                .and_then(Value::as_u64)
                .map_or(1, as_u32));
        };
        let live = ctx
            .cluster
            .get(p)
            .await?
            .and_then(|o| o.data.pointer("/spec/replicas").and_then(Value::as_u64))
            .filter(|n| *n > 0);
        let minimum = state
            .objects
            .iter()
            .find(|o| o.kind() == "HorizontalPodAutoscaler" && o.name() == hpa)
            .and_then(|o| {
                o.object
                    .pointer("/spec/minReplicas")
                    .and_then(Value::as_u64)
            })
            .unwrap_or(1);
        Ok(as_u32(live.unwrap_or(minimum)))
    }

    /// Gives the stopped workloads their recorded replicas back and waits until they are
    /// ready. Starting a VNF that is not stopped changes nothing.
    async fn start(&self, ctx: &Ctx<'_>, state: &mut DriverState) -> Result<(), KubeError> {
        let mut started = Vec::new();
        for w in state.stopped.clone() {
            check(&ctx.req.control, "starting workloads")?;
            let Some(i) = state.objects.iter().position(|p| w.is(p)) else {
                continue;
            };
            ctx.set_replicas(&mut state.objects[i], w.replicas).await?;
            started.push(state.objects[i].clone());
        }
        wait_ready(
            &ctx.cluster,
            &started,
            &ctx.instance_id,
            self.ready_timeout(&state.params),
            &ctx.req.control,
        )
        .await?;
        state.stopped.clear();
        Ok(())
    }

    async fn change_flavour_inner(&self, req: &InfraRequest) -> Result<InfraOutcome, KubeError> {
        let InfraStep::ChangeFlavour { target, .. } = &req.step else {
            return Err(KubeError::input(
                "change_flavour was called with another step",
            ));
        };
        let ctx = self.connect(req)?;
        let mut state = require_state(req)?;
        if state.flavour_id == target.flavour_id {
            // Already changed (a retried step).
            let resources = ctx.inventory(&state).await?;
            return Ok(ctx.outcome(resources, Some(&state)));
        }
        refuse_while_stopped(&state, "changing its flavour")?;
        let flavour = req.vnfd.flavour(&target.flavour_id).ok_or_else(|| {
            KubeError::input(format!(
                "the VNFD {} has no flavour `{}`",
                req.vnfd.descriptor_id, target.flavour_id
            ))
        })?;
        // The request's manifests, else the new flavour's VDU-bound ones; a chart recorded at
        // instantiation is rendered again with the new counts.
        let mut params = state.params.clone();
        for (k, v) in params_of(req) {
            params.insert(k, v);
        }
        let def_files = plan::string_list(&params, "lcm-kubernetes-def-files")?.unwrap_or_default();
        let input = ctx.render_input_for(
            Some(flavour),
            params.clone(),
            &state.namespace,
            &state.release,
            target.vdu_instances.clone(),
        );
        let mut desired = plan::render(&input, &*req.artifacts, self.helm.as_deref()).await?;
        check(&req.control, "change_flavour")?;
        ctx.resolve_scopes(&mut desired).await?;
        ctx.ownership(&desired).await?;
        let prune = not_in(&state.objects, &desired);
        ctx.apply(&mut desired, self.ready_timeout(&params), None)
            .await?;
        ctx.delete(&prune, None, true, ctx.delete_timeout).await?;
        state.objects = desired;
        state.params = without_sources(&params);
        state.def_files = def_files;
        state.counts = target.vdu_instances.clone();
        state.flavour_id = target.flavour_id.clone();
        // The objects before the change are another flavour's: no package rollback returns to
        // them.
        state.previous = None;
        state.warnings.clear();
        let resources = ctx.inventory(&state).await?;
        Ok(ctx.outcome(resources, Some(&state)))
    }

    async fn rollback_instantiate_inner(
        &self,
        req: &InfraRequest,
    ) -> Result<InfraOutcome, KubeError> {
        let ctx = self.connect(req)?;
        if let Some(state) = load_state(req)? {
            self.remove_all(&ctx, &state, Some(0), true).await?;
            return Ok(ctx.outcome(InstanceResources::default(), None));
        }
        // Nothing was recorded: the instantiation failed midway. Work out what it would have
        // created and delete whatever of it exists and is the instance's own.
        let params = match &req.request {
            OperationParams::Instantiate(r) => r.additional_params.clone().unwrap_or_default(),
            _ => params_of(req),
        };
        let namespace = namespace_for(&params, ctx.cluster.access(), &ctx.instance_id)?;
        let release = release_for(&params, &ctx.instance_id);
        let input = ctx.render_input(params.clone(), &namespace, &release, BTreeMap::new());
        let mut objects = match plan::render(&input, &*req.artifacts, self.helm.as_deref()).await {
            Ok(o) => o,
            Err(e) => {
                // Rendering fails before anything is applied, so nothing can exist.
                tracing::info!(error = %e, "the instantiation cannot be rendered; nothing of it was applied");
                Vec::new()
            }
        };
        ctx.resolve_scopes(&mut objects).await?;
        let ours = label_value(&ctx.instance_id);
        let mut owned = Vec::new();
        for p in objects.iter().filter(|p| !p.request) {
            let live = match ctx.cluster.get(p).await {
                Ok(l) => l,
                Err(KubeError::UnknownKind { .. }) => None,
                Err(e) => return Err(e),
            };
            if let Some(live) = live {
                let labels = live.metadata.labels.unwrap_or_default();
                let mine = labels.get(INSTANCE_LABEL) == Some(&ours);
                let shared_user = p.shared
                    && live
                        .metadata
                        .annotations
                        .unwrap_or_default()
                        .contains_key(&format!("{USER_ANNOTATION_PREFIX}{ours}"));
                if mine || shared_user {
                    owned.push(p.clone());
                }
            }
        }
        let namespace_created = match ctx
            .cluster
            .get(&reference("v1", "Namespace", None, &namespace))
            .await?
        {
            Some(live) => {
                live.metadata.labels.unwrap_or_default().get(INSTANCE_LABEL) == Some(&ours)
            }
            None => false,
        };
        let state = DriverState {
            version: 1,
            namespace,
            namespace_created,
            objects: owned,
            ..DriverState::default()
        };
        self.remove_all(&ctx, &state, Some(0), true).await?;
        Ok(ctx.outcome(InstanceResources::default(), None))
    }
}

/// Why external connectivity is not changed on Kubernetes.
const EXT_CONN_WHY: &str = "a CNF's external connectivity is made of the Services, Ingresses and network attachments of its manifests, which extVirtualLinks do not describe; change the package (CHANGE_VNFPKG) with updated manifests instead";

/// What a package change deploys.
struct Changed {
    /// The objects, in apply order.
    objects: Vec<Planned>,
    /// The parameters to record (without the operation's sources).
    params: Map<String, Value>,
    /// The manifest files to record.
    def_files: Vec<String>,
}

/// Refuses a change while the VNF is stopped: its rendering would start the workloads.
fn refuse_while_stopped(state: &DriverState, doing: &str) -> Result<(), KubeError> {
    if state.stopped.is_empty() {
        return Ok(());
    }
    Err(KubeError::input(format!(
        "the VNF is stopped ({} scaled to zero): start it (operate STARTED) before {doing}",
        state
            .stopped
            .iter()
            .map(|w| format!("{} {}/{}", w.kind, w.namespace, w.name))
            .collect::<Vec<_>>()
            .join(", ")
    )))
}

/// How many times a conditional write to a shared network is tried before giving up.
const SHARED_ATTEMPTS: u32 = 25;

/// Waits before retrying a conflicting write: growing with the attempt, spread by instance so
/// that instances racing for the same object do not retry in lockstep.
async fn backoff(instance_id: &str, attempt: u32) {
    use sha2::Digest;
    let spread = u64::from(sha2::Sha256::digest(instance_id.as_bytes())[0] % 8);
    let base = 5u64 << attempt.min(5);
    tokio::time::sleep(Duration::from_millis(
        base + spread * (1 + u64::from(attempt.min(5))),
    ))
    .await;
}

fn shared_conflict(p: &Planned, doing: &str) -> KubeError {
    KubeError::Api {
        doing: format!("{doing} the shared {}", p.display()),
        code: 409,
        reason: "Conflict".into(),
        message: format!(
            "other instances changed it {SHARED_ATTEMPTS} times in a row while this one tried; retry the operation"
        ),
    }
}

/// The objects of `from` that `to` does not have.
fn not_in(from: &[Planned], to: &[Planned]) -> Vec<Planned> {
    from.iter()
        .filter(|p| !p.request && !to.iter().any(|t| t.identity() == p.identity()))
        .cloned()
        .collect()
}

/// Parameters worth recording: the sources are not (they belong to one operation).
fn without_sources(params: &Map<String, Value>) -> Map<String, Value> {
    params
        .iter()
        .filter(|(k, _)| k.as_str() != "lcm-kubernetes-def-files")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

#[async_trait]
impl InfraDriver for KubernetesDriver {
    fn name(&self) -> &str {
        "kubernetes"
    }

    fn vim_types(&self) -> &[&str] {
        VIM_TYPES
    }

    async fn instantiate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.instantiate_inner(req).await.map_err(Into::into)
    }

    async fn terminate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.terminate_inner(req).await.map_err(Into::into)
    }

    async fn scale(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.scale_inner(req).await.map_err(Into::into)
    }

    async fn scale_to_level(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.scale_inner(req).await.map_err(Into::into)
    }

    async fn heal(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.heal_inner(req).await.map_err(Into::into)
    }

    async fn operate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.operate_inner(req).await.map_err(Into::into)
    }

    async fn change_flavour(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.change_flavour_inner(req).await.map_err(Into::into)
    }

    async fn change_ext_conn(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        Err(
            DriverError::unsupported(self.name(), req.step.operation().name())
                .in_context(EXT_CONN_WHY),
        )
    }

    async fn rollback_change_ext_conn(
        &self,
        req: &InfraRequest,
    ) -> Result<InfraOutcome, DriverError> {
        Err(
            DriverError::unsupported(self.name(), req.step.operation().name())
                .in_context(EXT_CONN_WHY),
        )
    }

    async fn change_vnfpkg(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.change_vnfpkg_inner(req).await.map_err(Into::into)
    }

    async fn rollback_instantiate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.rollback_instantiate_inner(req)
            .await
            .map_err(Into::into)
    }

    async fn rollback_scale(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.scale_inner(req).await.map_err(Into::into)
    }

    async fn rollback_change_vnfpkg(
        &self,
        req: &InfraRequest,
    ) -> Result<InfraOutcome, DriverError> {
        self.rollback_change_vnfpkg_inner(req)
            .await
            .map_err(Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_not_recorded() {
        let p = Planned {
            object: json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"k": "c2VjcmV0"}}),
            source: "f".into(),
            stage: 0,
            tier: 4,
            vdu: None,
            namespaced: Some(true),
            shared: false,
            persistent: false,
            request: false,
            hpa: None,
        };
        let r = redacted(&[p]);
        assert!(r[0].object.get("data").is_none());
        assert!(is_redacted(&r[0]));
        assert!(!r[0].object.to_string().contains("c2VjcmV0"));
    }

    #[test]
    fn namespaces_come_from_the_request_the_vim_or_the_instance() {
        let access = ClusterAccess {
            vim: "v".into(),
            endpoint: "https://k".into(),
            ca_certs: vec![],
            insecure: false,
            credentials: crate::access::Credentials::Token("t".into()),
            namespace: None,
        };
        let mut params = Map::new();
        assert_eq!(
            namespace_for(&params, &access, "ABC-1").unwrap(),
            "vnf-abc-1"
        );
        params.insert("namespace".into(), json!("cnf"));
        assert_eq!(namespace_for(&params, &access, "x").unwrap(), "cnf");
        params.insert("namespace".into(), json!("Bad_NS"));
        assert!(namespace_for(&params, &access, "x").is_err());
        assert_eq!(release_for(&Map::new(), "1234-abcd"), "vnf1234abcd");
    }
}
