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
use vnfm_driver_api::{
    DriverError, HealScope, InfraDriver, InfraOutcome, InfraRequest, InfraStep, InstanceResources,
    ResolvedVim, RunControl,
};
use vnfm_types::{OperationParams, TerminationType};

use crate::KubeError;
use crate::access::ClusterAccess;
use crate::asd::placement_check;
use crate::cluster::Cluster;
use crate::helm::{HelmBinary, HelmRenderer};
use crate::inventory;
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
    /// Helm release name (`.Release.Name` of rendered charts).
    pub release: String,
    /// The `additionalParams` the objects were rendered with (placeholder values).
    #[serde(default)]
    pub params: Map<String, Value>,
    /// Instances per VDU.
    #[serde(default)]
    pub counts: BTreeMap<String, u32>,
    /// The objects, in apply order (Secrets without their data).
    #[serde(default)]
    pub objects: Vec<Planned>,
    /// The objects before the last package change, for its rollback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<Box<Snapshot>>,
    /// Placement warnings of the last instantiation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
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
}

impl KubernetesDriver {
    fn connect<'a>(&self, req: &'a InfraRequest) -> Result<Ctx<'a>, KubeError> {
        let vim = req.vim_of_type(VIM_TYPES).ok_or_else(|| {
            KubeError::input(format!(
                "the instance has no VIM connection of type {KUBERNETES_VIM_TYPE} or {HELM_VIM_TYPE}"
            ))
        })?;
        let access = ClusterAccess::from_vim(vim)?;
        Ok(Ctx {
            req,
            vim,
            cluster: Cluster::connect(access)?,
            instance_id: req.instance.id.to_string(),
        })
    }

    fn ready_timeout(&self, params: &Map<String, Value>) -> Duration {
        params
            .get("readinessTimeoutSeconds")
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
fn reference(api_version: &str, kind: &str, namespace: Option<&str>, name: &str) -> Planned {
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
    /// objects are created last.
    async fn apply(
        &self,
        objects: &mut [Planned],
        timeout: Duration,
        create_requests: bool,
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
        if create_requests {
            for p in objects.iter().filter(|p| p.request) {
                check(control, "creating request objects")?;
                if let Err(e) = self.cluster.create_request(p).await {
                    // Reviews and bindings are one-shot requests: their answer does not decide
                    // whether the VNF is deployed.
                    tracing::warn!(object = %p.display(), error = %e, "request object refused");
                }
            }
        }
        Ok(())
    }

    async fn apply_one(&self, p: &Planned) -> Result<(), KubeError> {
        if is_redacted(p) || p.request {
            // Its data is not recorded; the live object is left as it is.
            return Ok(());
        }
        self.cluster.apply(p).await?;
        if p.shared {
            let key = format!("{USER_ANNOTATION_PREFIX}{}", label_value(&self.instance_id));
            self.cluster
                .merge(p, &json!({"metadata": {"annotations": {key: "true"}}}))
                .await?;
        }
        Ok(())
    }

    /// Deletes `objects` in exact reverse order, a tier at a time (waiting for each tier to be
    /// gone). Shared networks lose this instance as a user and are deleted with their last
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
        let mut i = 0;
        while i < rev.len() {
            let key = (rev[i].stage, rev[i].tier);
            let mut gone: Vec<(Planned, String)> = Vec::new();
            while i < rev.len() && (rev[i].stage, rev[i].tier) == key {
                let p = rev[i];
                i += 1;
                check(control, "deleting objects")?;
                if p.persistent && keep_persistent {
                    kept.push(p.clone());
                    continue;
                }
                if p.shared && !self.release_shared(p).await? {
                    continue;
                }
                match self.cluster.delete(p, grace).await {
                    Ok(Some(uid)) => gone.push((p.clone(), uid)),
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

    /// Removes this instance from a shared network's users; `true` when it was the last.
    async fn release_shared(&self, p: &Planned) -> Result<bool, KubeError> {
        let Some(live) = self.cluster.get(p).await.or_else(|e| match e {
            KubeError::UnknownKind { .. } => Ok(None),
            e => Err(e),
        })?
        else {
            return Ok(false);
        };
        let key = format!("{USER_ANNOTATION_PREFIX}{}", label_value(&self.instance_id));
        let others = live
            .metadata
            .annotations
            .unwrap_or_default()
            .keys()
            .filter(|k| k.starts_with(USER_ANNOTATION_PREFIX) && **k != key)
            .count();
        if others > 0 {
            self.cluster
                .merge(p, &json!({"metadata": {"annotations": {key: null}}}))
                .await?;
            return Ok(false);
        }
        Ok(true)
    }

    async fn inventory(&self, state: &DriverState) -> Result<InstanceResources, KubeError> {
        let flavour = self.req.flavour().ok();
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

    fn outcome(&self, resources: InstanceResources, state: Option<&DriverState>) -> InfraOutcome {
        let before = inventory::recorded(&self.req.instance);
        let changes = inventory::changes(&before, &resources);
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
        RenderInput {
            params,
            vnfd: Some(&self.req.vnfd),
            flavour: self.req.flavour().ok(),
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
        let mut warnings = Vec::new();
        if let Some(asd) = asd_of(&req.vnfd)?
            && let Some(caps) = &asd.enhanced_cluster_capabilities
        {
            warnings = placement_check(&ctx.cluster, ctx.vim, caps, &objects).await?;
        }
        ctx.ownership(&objects).await?;
        let namespace_created = ctx.ensure_namespace(&namespace).await?;
        ctx.apply(&mut objects, self.ready_timeout(&params), true)
            .await?;
        let state = DriverState {
            version: 1,
            namespace,
            namespace_created,
            vnfd_id: req.vnfd.descriptor_id.clone(),
            release,
            params: without_sources(&params),
            counts: target.vdu_instances.clone(),
            objects,
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

    /// Deletes everything the instance has: its objects, the PVCs its StatefulSets made, and
    /// the namespace when the driver created it and nothing persistent stays in it.
    async fn remove_all(
        &self,
        ctx: &Ctx<'_>,
        state: &DriverState,
        grace: Option<u32>,
        keep_persistent: bool,
    ) -> Result<(), KubeError> {
        let kept = ctx
            .delete(&state.objects, grace, keep_persistent, self.delete_timeout)
            .await?;
        // Claims made from volumeClaimTemplates carry the instance label.
        let selector = format!("{INSTANCE_LABEL}={}", label_value(&ctx.instance_id));
        let pvc_kind = ctx.cluster.core("PersistentVolumeClaim").await?;
        let mut claims = Vec::new();
        let mut persistent_left = !kept.is_empty();
        for c in ctx
            .cluster
            .list(&pvc_kind, Some(&state.namespace), &selector)
            .await?
        {
            let persistent = c
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(PERSISTENT_LABEL))
                .is_some_and(|v| v == "true");
            if persistent && keep_persistent {
                persistent_left = true;
                continue;
            }
            let name = c.metadata.name.clone().unwrap_or_default();
            claims.push(reference(
                "v1",
                "PersistentVolumeClaim",
                Some(&state.namespace),
                &name,
            ));
        }
        let claims_as_objects: Vec<Planned> = claims;
        ctx.delete(&claims_as_objects, grace, false, self.delete_timeout)
            .await?;
        if state.namespace_created && !persistent_left {
            let ns = reference("v1", "Namespace", None, &state.namespace);
            ctx.delete(&[ns], grace, false, self.delete_timeout).await?;
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
        wait_gone(&ctx.cluster, &gone, self.delete_timeout, &req.control).await?;
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
        Ok(ctx.outcome(resources, Some(&state)))
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
        let change_params = params_of(req);
        let (desired, params) = self.changed_objects(&ctx, &state, &change_params).await?;
        let timeout = self.ready_timeout(&params);
        let mut desired = desired;
        ctx.resolve_scopes(&mut desired).await?;
        ctx.ownership(&desired).await?;
        let prune = not_in(&state.objects, &desired);
        ctx.apply(&mut desired, timeout, false).await?;
        ctx.delete(&prune, None, true, self.delete_timeout).await?;
        let previous = Snapshot {
            vnfd_id: state.vnfd_id.clone(),
            params: state.params.clone(),
            objects: state.objects.clone(),
        };
        state.previous = Some(Box::new(previous));
        state.objects = desired;
        state.params = params;
        state.vnfd_id = to_vnfd_id.to_string();
        let resources = ctx.inventory(&state).await?;
        Ok(ctx.outcome(resources, Some(&state)))
    }

    /// The objects after a package change: a new chart, or manifests given for the change,
    /// replace the objects they name (and the workloads of the VDUs they cover); without new
    /// sources the new VNFD's VDU-bound manifests replace everything.
    async fn changed_objects(
        &self,
        ctx: &Ctx<'_>,
        state: &DriverState,
        change_params: &Map<String, Value>,
    ) -> Result<(Vec<Planned>, Map<String, Value>), KubeError> {
        let mut params = state.params.clone();
        for (k, v) in change_params {
            params.insert(k.clone(), v.clone());
        }
        let input = ctx.render_input(
            params.clone(),
            &state.namespace,
            &state.release,
            state.counts.clone(),
        );
        let new = plan::render(&input, &*ctx.req.artifacts, self.helm.as_deref()).await?;
        let partial = change_params.contains_key("lcm-kubernetes-def-files");
        let desired = if partial {
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
            out
        } else {
            new
        };
        Ok((desired, without_sources(&params)))
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
                Ok((mut o, _)) => {
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
            (prev.objects, current)
        } else {
            return Err(KubeError::input(format!(
                "the instance's objects come from VNFD {} and no earlier package is recorded: nothing to roll back to {restore_vnfd_id}",
                state.vnfd_id
            )));
        };
        let mut restore = restore;
        let timeout = self.ready_timeout(&state.params);
        ctx.apply(&mut restore, timeout, false).await?;
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
        ctx.delete(&ours, None, true, self.delete_timeout).await?;
        state.objects = restore;
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
