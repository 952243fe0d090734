//! [`KubernetesDriver`]: the [`InfraDriver`] for `ETSINFV.KUBERNETES.V_1` and
//! `ETSINFV.HELM.V_3` VIMs.
//!
//! Every step connects from the VIM's access info, works out the objects it wants (rendered
//! from the request and the package, or taken from the driver state of the previous step),
//! applies them with server-side apply in the ordering rule's order, waits for readiness with
//! watches, deletes what is no longer wanted in exact reverse order, and reports the
//! instance's pods and PVCs. Each step is idempotent: running it again converges to the same
//! objects.
//!
//! The steps are grouped by what they do: [`lifecycle`] (instantiate, terminate, scale, heal),
//! [`change`] (package and flavour changes), [`operate`] (stop and start); [`context`] holds
//! what every step does with its connection, and [`shared`] the networks shared by instances.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use vnfm_driver_api::{DriverError, InfraDriver, InfraOutcome, InfraRequest, RunControl};

use crate::KubeError;
use crate::access::ClusterAccess;
use crate::cluster::Cluster;
use crate::helm::{HelmBinary, HelmRenderer};
use crate::plan::{self, Planned, dns_name};
use crate::watches::Watches;

mod change;
mod context;
mod lifecycle;
mod observe;
mod operate;
mod shared;

use context::Ctx;

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
    request_timeout: Duration,
    not_ready_grace: Duration,
    /// The client and shared watches of each cluster, by [`ClusterAccess::identity`].
    clusters: Mutex<HashMap<String, Arc<Watches>>>,
}

impl std::fmt::Debug for KubernetesDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubernetesDriver")
            .field("helm", &self.helm.as_ref().map(|h| h.name().to_string()))
            .field("ready_timeout", &self.ready_timeout)
            .field("delete_timeout", &self.delete_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("not_ready_grace", &self.not_ready_grace)
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
    /// to 10 minutes for readiness and 10 minutes for deleted objects to be gone (each
    /// bounded by the step's own deadline).
    pub fn new() -> Self {
        KubernetesDriver {
            helm: HelmBinary::from_path().map(|h| Arc::new(h) as Arc<dyn HelmRenderer>),
            ready_timeout: Duration::from_secs(600),
            delete_timeout: Duration::from_secs(600),
            request_timeout: crate::cluster::REQUEST_TIMEOUT,
            not_ready_grace: Duration::from_secs(60),
            clusters: Mutex::new(HashMap::new()),
        }
    }

    /// Reports a running pod as `NotReady` when observed only after it has not been Ready for
    /// `grace` (default 60 s; see [`crate::health`]).
    pub fn with_not_ready_grace(mut self, grace: Duration) -> Self {
        self.not_ready_grace = grace;
        self
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

    /// Fails a step when the API server leaves one of its requests unanswered for `timeout`
    /// (default 60 s), naming the request and the VIM, instead of holding the step until
    /// its deadline. The step can be retried: every write is idempotent.
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Waits at most `timeout` for deleted objects to be gone (default 10 minutes; a request
    /// may ask for less with `additionalParams.deletionTimeoutSeconds`). Independent of the
    /// readiness budget: a namespace takes seconds to be emptied and removed, however quickly
    /// its pods became ready.
    pub fn with_delete_timeout(mut self, timeout: Duration) -> Self {
        self.delete_timeout = timeout;
        self
    }
}

/// The `additionalParams` key of a shorter budget for the readiness waits of an operation.
const READINESS_TIMEOUT: &str = "readinessTimeoutSeconds";

/// The `additionalParams` key of a shorter budget for the waits for deleted objects to be
/// gone (default: the driver's, [`KubernetesDriver::with_delete_timeout`]).
const DELETION_TIMEOUT: &str = "deletionTimeoutSeconds";

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

impl KubernetesDriver {
    /// A step's connection to the cluster `access` reaches, sharing the client and watches
    /// of every other step there.
    fn cluster(&self, access: ClusterAccess) -> Result<Cluster, KubeError> {
        let id = access.identity();
        let mut clusters = self.clusters.lock().unwrap_or_else(|e| e.into_inner());
        let watches = match clusters.get(&id).filter(|w| !w.runtime_gone()) {
            Some(w) => w.clone(),
            None => {
                let w = Arc::new(Watches::new(access.client()?));
                clusters.insert(id, w.clone());
                w
            }
        };
        Ok(Cluster::with_watches(access, watches).with_request_timeout(self.request_timeout))
    }

    /// The list/watch streams the driver holds open now, on every cluster.
    pub fn open_watch_streams(&self) -> usize {
        self.clusters
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .map(|w| w.open_streams())
            .sum()
    }

    fn connect<'a>(&self, req: &'a InfraRequest) -> Result<Ctx<'a>, KubeError> {
        let vim = req.vim_of_type(VIM_TYPES).ok_or_else(|| {
            KubeError::input(format!(
                "the instance has no VIM connection of type {KUBERNETES_VIM_TYPE} or {HELM_VIM_TYPE}"
            ))
        })?;
        let access = ClusterAccess::from_vim(vim)?;
        // `deletionTimeoutSeconds` of the request (else the one recorded at instantiation)
        // bounds the waits for deleted objects; the readiness budget does not (a namespace
        // takes seconds to go, however fast its pods become ready).
        let asked = params_of(req)
            .get(DELETION_TIMEOUT)
            .or_else(|| {
                req.driver_state
                    .pointer(&format!("/params/{DELETION_TIMEOUT}"))
            })
            .and_then(Value::as_u64)
            .map(Duration::from_secs);
        Ok(Ctx {
            req,
            vim,
            cluster: self.cluster(access)?,
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

/// The VIM `extra` member that says where an instance without `additionalParams.namespace`
/// goes: `vim` (the default: the VIM's `accessInfo.namespace`, else `vnf-<instance id>`) or
/// `tacker` (the namespace the manifests name, which must agree, else `default`; never the
/// VIM's), as Tacker places CNFs.
pub const NAMESPACE_RULE: &str = "namespaceRule";

/// How an instance's namespace is found when the request names none ([`NAMESPACE_RULE`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NamespaceRule {
    Vim,
    Tacker,
}

fn namespace_rule(vim: &vnfm_driver_api::ResolvedVim) -> Result<NamespaceRule, KubeError> {
    match vim.extra().and_then(|e| e.get(NAMESPACE_RULE)) {
        None | Some(Value::Null) => Ok(NamespaceRule::Vim),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("vim") => Ok(NamespaceRule::Vim),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("tacker") => Ok(NamespaceRule::Tacker),
        Some(other) => Err(KubeError::Access {
            vim: vim.connection_id.clone(),
            message: format!(
                "extra.{NAMESPACE_RULE} is {}; give \"vim\" (the VIM's namespace) or \"tacker\" (the manifests' namespace, else default)",
                crate::access::cut(&other.to_string())
            ),
        }),
    }
}

/// `additionalParams.namespace`, checked, when the request gives one.
fn requested_namespace(params: &Map<String, Value>) -> Result<Option<String>, KubeError> {
    let Some(v) = params.get("namespace").filter(|v| !v.is_null()) else {
        return Ok(None);
    };
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
    Ok(Some(ns.to_string()))
}

/// The namespace of the VIM rule: the VIM's, else one of the instance's own.
fn vim_namespace(access: &ClusterAccess, instance_id: &str) -> String {
    access
        .namespace
        .clone()
        .unwrap_or_else(|| dns_name("vnf-", instance_id, 63))
}

/// The namespace the manifests name (objects rendered keeping theirs, the others with an
/// empty one), else `default`, as Tacker chooses it; manifests that disagree are refused with
/// the files that name each namespace. Shared networks keep their own and do not count.
fn manifests_namespace(objects: &[Planned]) -> Result<String, KubeError> {
    let mut named: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for p in objects.iter().filter(|p| !p.shared) {
        if let Some(ns) = p.namespace().filter(|ns| !ns.is_empty()) {
            let files = named.entry(ns).or_default();
            if !files.contains(&p.source.as_str()) {
                files.push(&p.source);
            }
        }
    }
    match named.len() {
        0 => Ok("default".into()),
        1 => Ok(named.into_keys().next().unwrap_or("default").to_string()),
        _ => Err(KubeError::input(format!(
            "the manifests name different namespaces ({}); with the VIM's {NAMESPACE_RULE} `tacker` they must name one: change the manifests or give additionalParams.namespace",
            named
                .iter()
                .map(|(ns, files)| format!("`{ns}` in {}", files.join(", ")))
                .collect::<Vec<_>>()
                .join("; ")
        ))),
    }
}

impl KubernetesDriver {
    /// The namespace of a new instance: `additionalParams.namespace`, else by the VIM's
    /// [`NAMESPACE_RULE`].
    async fn namespace_for(
        &self,
        ctx: &Ctx<'_>,
        params: &Map<String, Value>,
    ) -> Result<String, KubeError> {
        if let Some(ns) = requested_namespace(params)? {
            return Ok(ns);
        }
        match namespace_rule(ctx.vim)? {
            NamespaceRule::Vim => Ok(vim_namespace(ctx.cluster.access(), &ctx.instance_id)),
            NamespaceRule::Tacker => {
                // A render of its own: the namespace is read from the rendered manifests, but
                // it is also an input of rendering (the `$NAMESPACE` placeholder, a chart's
                // `.Release.Namespace`, subjects and references that name it), so the objects
                // are rendered again with the namespace chosen here.
                let release = release_for(params, &ctx.instance_id);
                let mut input = ctx.render_input(params.clone(), "", &release, BTreeMap::new());
                input.manifest_namespaces = true;
                let objects =
                    plan::render(&input, &*ctx.req.artifacts, self.helm.as_deref()).await?;
                manifests_namespace(&objects)
            }
        }
    }
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

/// Why external connectivity is not changed on Kubernetes.
const EXT_CONN_WHY: &str = "a CNF's external connectivity is made of the Services, Ingresses and network attachments of its manifests, which extVirtualLinks do not describe; change the package (CHANGE_VNFPKG) with updated manifests instead";

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

    fn vim_kind(&self) -> Option<Arc<dyn vnfm_driver_api::VimKind>> {
        Some(Arc::new(crate::vim_kind::KubernetesVimKind))
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

    async fn observe(
        &self,
        req: &vnfm_driver_api::ObserveRequest,
    ) -> Result<Vec<vnfm_driver_api::ObservedCondition>, DriverError> {
        self.observe_inner(req).await.map_err(Into::into)
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
        assert_eq!(vim_namespace(&access, "ABC-1"), "vnf-abc-1");
        let mut params = Map::new();
        assert_eq!(requested_namespace(&params).unwrap(), None);
        params.insert("namespace".into(), json!("cnf"));
        assert_eq!(
            requested_namespace(&params).unwrap().as_deref(),
            Some("cnf")
        );
        params.insert("namespace".into(), json!("Bad_NS"));
        assert!(requested_namespace(&params).is_err());
        assert_eq!(release_for(&Map::new(), "1234-abcd"), "vnf1234abcd");
    }

    fn planned(source: &str, namespace: &str) -> Planned {
        Planned {
            object: json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "c", "namespace": namespace}}),
            source: source.into(),
            stage: 0,
            tier: 5,
            vdu: None,
            namespaced: Some(true),
            shared: false,
            persistent: false,
            request: false,
            hpa: None,
        }
    }

    #[test]
    fn the_tacker_rule_takes_the_one_namespace_the_manifests_name() {
        assert_eq!(manifests_namespace(&[]).unwrap(), "default");
        let unnamed = planned("Files/a.yaml", "");
        assert_eq!(
            manifests_namespace(std::slice::from_ref(&unnamed)).unwrap(),
            "default"
        );
        let ns2 = planned("Files/b.yaml", "multi-namespace02");
        assert_eq!(
            manifests_namespace(&[unnamed, ns2.clone()]).unwrap(),
            "multi-namespace02"
        );
        let mut shared = planned("Files/net.yaml", "networks");
        shared.shared = true;
        assert_eq!(
            manifests_namespace(&[ns2.clone(), shared]).unwrap(),
            "multi-namespace02"
        );
        let err = manifests_namespace(&[ns2, planned("Files/c.yaml", "other")])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`multi-namespace02` in Files/b.yaml")
                && err.contains("`other` in Files/c.yaml"),
            "{err}"
        );
    }
}
