//! From a request to the objects to apply: which sources (manifest files, a Helm chart, ASD
//! deployment items), the per-instance namespace, placeholder substitution, ownership labels,
//! the VDU each workload belongs to, replica counts, and the apply order.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use vnfm_descriptor::asd::DeploymentArtifactType;
use vnfm_descriptor::{Asd, Flavour, Vnfd};
use vnfm_driver_api::ArtifactSource;

use crate::KubeError;
use crate::helm::{ChartRequest, ChartSource, HelmRenderer, set_value};
use crate::manifest::{Document, parse_documents, substitute};
use crate::order::{group_of, is_request_kind, is_scalable, is_workload, tier};

/// Label carrying the VNF instance id on every object the driver creates.
pub const INSTANCE_LABEL: &str = "vnfm.io/vnf-instance-id";
/// Label carrying the VDU id on workloads and their pods.
pub const VDU_LABEL: &str = "vnfm.io/vdu";
/// `app.kubernetes.io/managed-by` value of the driver's objects.
pub const MANAGED_BY: &str = "vnfm";
/// Label (or annotation) marking a PVC/PV as persistent: it survives terminate.
pub const PERSISTENT_LABEL: &str = "vnfm.io/persistent";
/// Label on NetworkAttachmentDefinitions shared between VNF instances.
pub const SHARED_LABEL: &str = "vnfm.io/shared-network";
/// Prefix of the per-user annotations of shared networks (`vnfm.io/user-<instance>`).
pub const USER_ANNOTATION_PREFIX: &str = "vnfm.io/user-";
/// Annotation on pod templates with the VNFD id (a package change rolls the pods).
pub const VNFD_ANNOTATION: &str = "vnfm.io/vnfd-id";
/// Optional label naming the VNFD virtual storage a PVC realises.
pub const STORAGE_LABEL: &str = "vnfm.io/virtual-storage";
/// Key of the ASD in the `properties` of a VNFD made by [`crate::asd_vnfd`].
pub const ASD_PROPERTY: &str = "vnfm.asd";

/// An object's identity: group, kind, namespace (`""` when cluster-scoped) and name.
pub type Identity = (String, String, String, String);

/// One object the driver manages, as it is applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Planned {
    /// The object (labels, namespace and replicas already set).
    pub object: Value,
    /// Package path of the file (or `chart:template`) it came from.
    pub source: String,
    /// Deployment stage (ASD `deploymentOrder` groups; 0 for manifests and charts).
    pub stage: u32,
    /// Ordering tier ([`crate::order::tier`]).
    pub tier: u8,
    /// The VDU a workload belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vdu: Option<String>,
    /// Whether the object lives in a namespace (`None` until known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespaced: Option<bool>,
    /// A NetworkAttachmentDefinition shared between instances.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shared: bool,
    /// Survives terminate (PVC/PV marked persistent).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub persistent: bool,
    /// A request-like kind: created once, not tracked.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub request: bool,
    /// The HorizontalPodAutoscaler that scales this workload, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hpa: Option<String>,
}

impl Planned {
    /// `apiVersion`.
    pub fn api_version(&self) -> &str {
        self.object["apiVersion"].as_str().unwrap_or("")
    }

    /// `kind`.
    pub fn kind(&self) -> &str {
        self.object["kind"].as_str().unwrap_or("")
    }

    /// API group.
    pub fn group(&self) -> &str {
        group_of(self.api_version())
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        self.object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// `metadata.namespace`, for namespaced objects.
    pub fn namespace(&self) -> Option<&str> {
        self.object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
    }

    /// `Kind namespace/name` or `Kind name`, for messages.
    pub fn display(&self) -> String {
        match self.namespace() {
            Some(ns) => format!("{} {ns}/{}", self.kind(), self.name()),
            None => format!("{} {}", self.kind(), self.name()),
        }
    }

    /// Identity: group, kind, namespace and name.
    pub fn identity(&self) -> Identity {
        (
            self.group().to_string(),
            self.kind().to_string(),
            self.namespace().unwrap_or("").to_string(),
            self.name().to_string(),
        )
    }
}

/// Kinds known to be cluster-scoped (others are resolved by discovery).
pub fn known_cluster_scoped(group: &str, kind: &str) -> Option<bool> {
    let cluster = matches!(
        (group, kind),
        ("", "Namespace" | "Node" | "PersistentVolume")
            | ("apiextensions.k8s.io", "CustomResourceDefinition")
            | ("storage.k8s.io", _)
            | (
                "rbac.authorization.k8s.io",
                "ClusterRole" | "ClusterRoleBinding"
            )
            | ("scheduling.k8s.io", "PriorityClass")
            | ("networking.k8s.io", "IngressClass")
            | ("node.k8s.io", "RuntimeClass")
            | ("admissionregistration.k8s.io", _)
            | ("apiregistration.k8s.io", "APIService")
            | (
                "authorization.k8s.io",
                "SubjectAccessReview" | "SelfSubjectAccessReview" | "SelfSubjectRulesReview"
            )
            | ("authentication.k8s.io", "TokenReview")
    );
    if cluster {
        return Some(true);
    }
    let namespaced = matches!(
        group,
        "" | "apps"
            | "batch"
            | "autoscaling"
            | "policy"
            | "coordination.k8s.io"
            | "discovery.k8s.io"
            | "networking.k8s.io"
            | "rbac.authorization.k8s.io"
            | "authorization.k8s.io"
    );
    namespaced.then_some(false)
}

/// The request parameters that drive rendering.
#[derive(Debug, Clone, Default)]
pub struct RenderInput<'a> {
    /// `additionalParams` (instantiate, or the stored ones merged with a change request's).
    pub params: Map<String, Value>,
    /// The VNFD (possibly carrying an ASD).
    pub vnfd: Option<&'a Vnfd>,
    /// The flavour.
    pub flavour: Option<&'a Flavour>,
    /// The instance id.
    pub instance_id: String,
    /// The instance name.
    pub instance_name: String,
    /// Namespace of the instance.
    pub namespace: String,
    /// Helm release name.
    pub release: String,
    /// Instances per VDU.
    pub counts: BTreeMap<String, u32>,
}

/// A value usable as a label value (at most 63 characters, alphanumeric at both ends,
/// `-_.` inside); other ids are hashed.
pub fn label_value(id: &str) -> String {
    let valid = !id.is_empty()
        && id.len() <= 63
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        && id.as_bytes()[0].is_ascii_alphanumeric()
        && id.as_bytes()[id.len() - 1].is_ascii_alphanumeric();
    if valid {
        id.to_string()
    } else {
        use sha2::Digest;
        format!(
            "h{}",
            &hex::encode(sha2::Sha256::digest(id.as_bytes()))[..40]
        )
    }
}

/// A DNS-1123 label made from `prefix` and `id` (namespace and release names).
pub fn dns_name(prefix: &str, id: &str, max: usize) -> String {
    let mut s: String = format!("{prefix}{}", id.to_ascii_lowercase())
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    s.truncate(max);
    let s = s.trim_matches('-').to_string();
    if s.is_empty() {
        prefix.trim_matches('-').to_string()
    } else {
        s
    }
}

/// The Tacker-style parameter names that are not placeholders values.
const RESERVED: &[&str] = &[
    "lcm-kubernetes-def-files",
    "helm_chart_path",
    "helm_parameters",
    "helm_value_names",
];

/// The placeholder values: every scalar `additionalParams` entry, plus the built-ins
/// `VNF_INSTANCE_ID`, `VNF_INSTANCE_NAME`, `NAMESPACE`, `VNFD_ID`, `FLAVOUR_ID` and
/// `RELEASE_NAME`.
pub fn variables(input: &RenderInput<'_>) -> BTreeMap<String, Value> {
    let mut vars: BTreeMap<String, Value> = input
        .params
        .iter()
        .filter(|(k, _)| !RESERVED.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    vars.insert("VNF_INSTANCE_ID".into(), json!(input.instance_id));
    vars.insert("VNF_INSTANCE_NAME".into(), json!(input.instance_name));
    vars.insert("NAMESPACE".into(), json!(input.namespace));
    vars.insert("RELEASE_NAME".into(), json!(input.release));
    if let Some(v) = input.vnfd {
        vars.insert("VNFD_ID".into(), json!(v.descriptor_id));
    }
    if let Some(f) = input.flavour {
        vars.insert("FLAVOUR_ID".into(), json!(f.id));
    }
    vars
}

/// The ASD a VNFD carries (see [`crate::asd_vnfd`]).
pub fn asd_of(vnfd: &Vnfd) -> Result<Option<Asd>, KubeError> {
    match vnfd.properties.get(ASD_PROPERTY) {
        None => Ok(None),
        Some(v) => serde_json::from_value(v.clone()).map(Some).map_err(|e| {
            KubeError::input(format!(
                "the descriptor {} carries an unreadable ASD: {e}",
                vnfd.descriptor_id
            ))
        }),
    }
}

fn read_text(files: &dyn ArtifactSource, path: &str) -> Result<String, KubeError> {
    let bytes = files
        .read(path)
        .map_err(|e| KubeError::manifest(path, format!("cannot be read from the package: {e}")))?;
    String::from_utf8(bytes).map_err(|_| KubeError::manifest(path, "is not UTF-8 text"))
}

fn string_list(params: &Map<String, Value>, key: &str) -> Result<Option<Vec<String>>, KubeError> {
    match params.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| {
                v.as_str().map(String::from).ok_or_else(|| {
                    KubeError::input(format!(
                        "additionalParams.{key} must be a list of package paths"
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(KubeError::input(format!(
            "additionalParams.{key} must be a list of package paths"
        ))),
    }
}

/// Manifests bound to the flavour's VDUs as artifacts: `(path, VDU id)`.
fn vdu_manifests(flavour: &Flavour) -> Vec<(String, String)> {
    flavour
        .artifacts
        .iter()
        .filter(|a| flavour.vdu(&a.owner).is_some() && !a.external)
        .filter(|a| {
            let t = a.artifact_type.to_ascii_lowercase();
            let f = a.file.to_ascii_lowercase();
            !t.contains("swimage")
                && !t.contains("implementation")
                && (f.ends_with(".yaml") || f.ends_with(".yml") || f.ends_with(".json"))
        })
        .map(|a| (a.file.clone(), a.owner.clone()))
        .collect()
}

/// A source document with where it came from.
struct Raw {
    doc: Document,
    stage: u32,
    /// VDU the file is bound to.
    vdu: Option<String>,
}

/// Renders the objects of a request, in apply order. Placeholders, Helm values and the
/// package's files are all resolved here, before anything touches the cluster.
pub async fn render(
    input: &RenderInput<'_>,
    files: &dyn ArtifactSource,
    helm: Option<&dyn HelmRenderer>,
) -> Result<Vec<Planned>, KubeError> {
    let vars = variables(input);
    let mut raws: Vec<Raw> = Vec::new();
    let asd = match input.vnfd {
        Some(v) => asd_of(v)?,
        None => None,
    };
    if let Some(asd) = &asd {
        for (stage, s) in asd.stages.iter().enumerate() {
            for item_id in &s.items {
                let Some(item) = asd.deployment_item(item_id) else {
                    continue;
                };
                let docs = match item.artifact_type {
                    DeploymentArtifactType::HelmChart => {
                        let mut values = json!({});
                        for p in &item.lifecycle_parameters {
                            let bare = p.strip_prefix(".Values.").unwrap_or(p);
                            let v = input
                                .params
                                .get(p.as_str())
                                .or_else(|| input.params.get(bare))
                                .or_else(|| input.params.get(&format!(".Values.{bare}")));
                            if let Some(v) = v {
                                set_value(&mut values, bare, v.clone())?;
                            }
                        }
                        render_chart(helm, files, &item.file, input, values).await?
                    }
                    DeploymentArtifactType::Crd => {
                        let mut docs = parse_documents(&item.file, &read_text(files, &item.file)?)?;
                        for d in &mut docs {
                            substitute(&mut d.object, &vars, &item.file)?;
                        }
                        docs
                    }
                    other => {
                        return Err(KubeError::input(format!(
                            "deployment item `{}` is a {} artifact, which the Kubernetes driver cannot deploy (helm_chart and crd only)",
                            item.id,
                            other.as_str()
                        )));
                    }
                };
                // An ASD has no VDUs: its workloads are reported under their deployment item.
                raws.extend(docs.into_iter().map(|doc| Raw {
                    doc,
                    stage: stage as u32,
                    vdu: Some(item.id.clone()),
                }));
            }
        }
        check_lifecycle_params(asd, &input.params)?;
    } else {
        // Manifests listed in `lcm-kubernetes-def-files` and a chart in `helm_chart_path` may
        // be given together; they make one set of objects (the chart's after the files').
        let chart = match input.params.get("helm_chart_path") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.as_str().ok_or_else(|| {
                KubeError::input("additionalParams.helm_chart_path must be a package path")
            })?),
        };
        let listed = string_list(&input.params, "lcm-kubernetes-def-files")?;
        let sources: Vec<(String, Option<String>)> = match (listed, chart) {
            (Some(list), _) => list.into_iter().map(|f| (f, None)).collect(),
            // A chart alone: the VDU-bound manifests are the fallback only without a chart.
            (None, Some(_)) => Vec::new(),
            (None, None) => input
                .flavour
                .map(vdu_manifests)
                .unwrap_or_default()
                .into_iter()
                .map(|(f, v)| (f, Some(v)))
                .collect(),
        };
        if sources.is_empty() && chart.is_none() {
            return Err(KubeError::input(
                "nothing to deploy: give additionalParams.lcm-kubernetes-def-files (package paths of manifests) or helm_chart_path, or bind manifests to the flavour's VDUs as artifacts",
            ));
        }
        for (file, vdu) in sources {
            let mut docs = parse_documents(&file, &read_text(files, &file)?)?;
            for d in &mut docs {
                substitute(&mut d.object, &vars, &file)?;
            }
            raws.extend(docs.into_iter().map(|doc| Raw {
                doc,
                stage: 0,
                vdu: vdu.clone(),
            }));
        }
        if let Some(chart) = chart {
            let values = chart_values(input)?;
            let docs = render_chart(helm, files, chart, input, values).await?;
            raws.extend(docs.into_iter().map(|doc| Raw {
                doc,
                stage: 0,
                vdu: None,
            }));
        }
    }
    let mut planned = Vec::new();
    for raw in raws {
        planned.push(prepare(raw, input)?);
    }
    assign_replicas(&mut planned, input)?;
    check_duplicates(&planned)?;
    // Stable: the package's order is kept within a stage and tier.
    planned.sort_by_key(|p| (p.stage, p.tier));
    Ok(planned)
}

/// The values of the request's chart: `helm_parameters`, and the VDUs' instance counts at
/// the paths `helm_value_names` gives.
fn chart_values(input: &RenderInput<'_>) -> Result<Value, KubeError> {
    let mut values = json!({});
    if let Some(p) = input.params.get("helm_parameters") {
        let m = p.as_object().ok_or_else(|| {
            KubeError::input("additionalParams.helm_parameters must be an object of value paths")
        })?;
        for (k, v) in m {
            set_value(&mut values, k, v.clone())?;
        }
    }
    if let Some(names) = input.params.get("helm_value_names") {
        let m = names.as_object().ok_or_else(|| {
            KubeError::input("additionalParams.helm_value_names must be an object keyed by VDU id")
        })?;
        for (vdu, v) in m {
            if let Some(replica) = v.get("replica").and_then(Value::as_str)
                && let Some(count) = input.counts.get(vdu)
            {
                set_value(&mut values, replica, json!(count))?;
            }
        }
    }
    Ok(values)
}

fn check_lifecycle_params(asd: &Asd, params: &Map<String, Value>) -> Result<(), KubeError> {
    let declared: Vec<&str> = asd
        .deployment_items
        .iter()
        .flat_map(|i| i.lifecycle_parameters.iter())
        .map(|p| p.strip_prefix(".Values.").unwrap_or(p))
        .collect();
    for k in params.keys().filter(|k| k.starts_with(".Values.")) {
        let bare = k.trim_start_matches(".Values.");
        if !declared.contains(&bare) {
            return Err(KubeError::input(format!(
                "additionalParams `{k}` is not a lifecycle parameter of any deployment item of ASD {}; declared: {}",
                asd.asd_id,
                declared.join(", ")
            )));
        }
    }
    Ok(())
}

async fn render_chart(
    helm: Option<&dyn HelmRenderer>,
    files: &dyn ArtifactSource,
    path: &str,
    input: &RenderInput<'_>,
    values: Value,
) -> Result<Vec<Document>, KubeError> {
    let helm = helm.ok_or_else(|| {
        KubeError::input(format!(
            "the package deploys the Helm chart `{path}`, but the Kubernetes driver has no Helm renderer (no `helm` on PATH and no Helm SDK library configured)"
        ))
    })?;
    let bytes = files.read(path).map_err(|e| {
        let hint = if files.read(&format!("{}/Chart.yaml", path.trim_end_matches('/'))).is_ok() {
            " (it is a chart directory: package it as a .tgz artifact, since package files cannot be listed)"
        } else {
            ""
        };
        KubeError::input(format!("Helm chart `{path}` cannot be read from the package: {e}{hint}"))
    })?;
    helm.render(&ChartRequest {
        chart: ChartSource::Archive {
            name: path.to_string(),
            bytes,
        },
        release: input.release.clone(),
        namespace: input.namespace.clone(),
        values,
    })
    .await
}

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
fn prepare(raw: Raw, input: &RenderInput<'_>) -> Result<Planned, KubeError> {
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
            let ns = if shared {
                explicit_ns.unwrap_or_else(|| input.namespace.clone())
            } else {
                input.namespace.clone()
            };
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

/// Sets `spec.replicas` of each VDU's scalable workloads to the VDU's instance count, except
/// for workloads a HorizontalPodAutoscaler scales (their replicas are left to it).
fn assign_replicas(planned: &mut [Planned], input: &RenderInput<'_>) -> Result<(), KubeError> {
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

fn check_duplicates(planned: &[Planned]) -> Result<(), KubeError> {
    let mut seen: BTreeMap<Identity, &str> = BTreeMap::new();
    for p in planned.iter().filter(|p| !p.request) {
        if let Some(first) = seen.insert(p.identity(), &p.source) {
            return Err(KubeError::input(format!(
                "{} is defined twice (in `{first}` and `{}`): each object may appear once",
                p.display(),
                p.source
            )));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_and_dns_names() {
        assert_eq!(label_value("3f2a-9c"), "3f2a-9c");
        let long = "x".repeat(70);
        let h = label_value(&long);
        assert!(h.len() <= 63 && h.starts_with('h'));
        assert_eq!(label_value("bad id!"), label_value("bad id!"));
        assert_eq!(dns_name("vnf-", "AB_cd", 63), "vnf-ab-cd");
        assert_eq!(
            dns_name(
                "vnf",
                "0123456789abcdef0123456789abcdef0123456789abcdef0123456789",
                53
            )
            .len(),
            53
        );
    }

    /// A chart of one Deployment named `cache-<release>` whose replicas are the value
    /// `replicaCount`.
    struct OneDeploymentChart;

    #[async_trait::async_trait]
    impl HelmRenderer for OneDeploymentChart {
        fn name(&self) -> &str {
            "test chart"
        }

        async fn render(&self, req: &ChartRequest) -> Result<Vec<Document>, KubeError> {
            Ok(vec![Document {
                source: "cache/templates/deployment.yaml".into(),
                index: 0,
                object: json!({"apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": format!("cache-{}", req.release)},
                    "spec": {"replicas": req.values["replicaCount"],
                             "template": {"metadata": {"labels": {"app": "cache"}}}}}),
            }])
        }
    }

    fn flavour_with_vdu_manifest() -> Flavour {
        serde_json::from_value(json!({
            "id": "simple", "file": "Definitions/df.yaml",
            "vdus": [{"id": "cache", "name": "cache", "kind": "osContainerDeployableUnit",
                      "nodeType": "tosca.nodes.nfv.Vdu.OsContainerDeployableUnit",
                      "minInstances": 1, "maxInstances": 3}],
            "artifacts": [{"name": "m", "owner": "cache", "artifactType": "tosca.artifacts.File",
                           "file": "Files/bound.yaml"}]
        }))
        .expect("flavour")
    }

    fn names(planned: &[Planned]) -> Vec<String> {
        planned
            .iter()
            .map(|p| format!("{}/{}", p.kind(), p.name()))
            .collect()
    }

    #[tokio::test]
    async fn listed_manifests_and_a_chart_make_one_set_of_objects() {
        let files = vnfm_driver_api::memory::MemArtifacts::new()
            .with(
                "Files/web.yaml",
                "apiVersion: v1\nkind: Service\nmetadata: {name: web}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {template: {metadata: {labels: {app: web}}}}\n",
            )
            .with("Files/bound.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bound}\n")
            .with("Files/cache.tgz", b"chart".to_vec());
        let flavour = flavour_with_vdu_manifest();
        let input = |params: Value| RenderInput {
            params: params.as_object().cloned().unwrap_or_default(),
            flavour: Some(&flavour),
            instance_id: "i".into(),
            namespace: "ns".into(),
            release: "rel".into(),
            counts: [("cache".to_string(), 2)].into(),
            ..RenderInput::default()
        };
        let chart = OneDeploymentChart;
        let both = render(
            &input(json!({
                "lcm-kubernetes-def-files": ["Files/web.yaml"],
                "helm_chart_path": "Files/cache.tgz",
                "helm_value_names": {"cache": {"replica": "replicaCount"}}
            })),
            &files,
            Some(&chart),
        )
        .await
        .expect("render");
        // Tier order: the Service, then both Deployments (files first, then the chart).
        assert_eq!(
            names(&both),
            ["Service/web", "Deployment/web", "Deployment/cache-rel"]
        );
        let cache = both
            .iter()
            .find(|p| p.name() == "cache-rel")
            .expect("chart");
        assert_eq!(cache.vdu.as_deref(), Some("cache"));
        assert_eq!(cache.object["spec"]["replicas"], 2);
        assert!(both.iter().all(|p| p.namespace() == Some("ns")));
        // A chart alone: the VDU-bound manifest is not added.
        let chart_only = render(
            &input(json!({"helm_chart_path": "Files/cache.tgz"})),
            &files,
            Some(&chart),
        )
        .await
        .expect("render");
        assert_eq!(names(&chart_only), ["Deployment/cache-rel"]);
        // Neither: the VDU-bound manifests, as before.
        let bound = render(&input(json!({})), &files, Some(&chart))
            .await
            .expect("render");
        assert_eq!(names(&bound), ["ConfigMap/bound"]);
        // The same object from both sources is refused.
        let files = files.with(
            "Files/dup.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: cache-rel}\nspec: {template: {metadata: {labels: {app: c}}}}\n",
        );
        let err = render(
            &input(json!({"lcm-kubernetes-def-files": ["Files/dup.yaml"], "helm_chart_path": "Files/cache.tgz"})),
            &files,
            Some(&chart),
        )
        .await
        .expect_err("duplicate");
        assert!(err.to_string().contains("defined twice"), "{err}");
    }
}
