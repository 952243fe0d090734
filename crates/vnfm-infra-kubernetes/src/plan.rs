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

pub(crate) fn string_list(
    params: &Map<String, Value>,
    key: &str,
) -> Result<Option<Vec<String>>, KubeError> {
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
                if item.external {
                    return Err(KubeError::input(format!(
                        "deployment item `{}` names a file outside the package (`{}`); the Kubernetes driver deploys package files only: add the file to the package",
                        item.id, item.file
                    )));
                }
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
    // A packaged chart (`.tgz`) is a file; a chart directory is not, but has a Chart.yaml.
    let (chart, work) = match files.read(path) {
        Ok(bytes) => (
            ChartSource::Archive {
                name: path.to_string(),
                bytes,
            },
            None,
        ),
        Err(e) => {
            let dir = path.trim_end_matches('/');
            if dir.is_empty() || files.read(&format!("{dir}/Chart.yaml")).is_err() {
                return Err(KubeError::input(format!(
                    "Helm chart `{path}` cannot be read from the package: {e} (name a packaged chart `.tgz`, or a chart directory with its Chart.yaml)"
                )));
            }
            let entry = input.vnfd.map(|v| v.entry_definitions.as_str());
            let (work, root) = chart_directory(files, dir, entry)?;
            (ChartSource::Directory(root), Some(work))
        }
    };
    let work_name = chart.name();
    let mut docs = helm
        .render(&ChartRequest {
            chart,
            release: input.release.clone(),
            namespace: input.namespace.clone(),
            values,
        })
        .await
        .map_err(|e| match e {
            KubeError::Helm {
                renderer, message, ..
            } => KubeError::Helm {
                chart: path.to_string(),
                renderer,
                message: message.replace(&work_name, path),
            },
            other => other,
        })?;
    if work.is_some() {
        // Name the package path, not the work directory (which is gone after this call).
        for d in &mut docs {
            if let Some(rest) = d.source.strip_prefix(&work_name) {
                d.source = format!("{}{rest}", path.trim_end_matches('/'));
            }
        }
    }
    Ok(docs)
}

/// Most files a chart directory may have.
const MAX_CHART_FILES: usize = 2000;

/// The package paths a package lists: the `Source:` entries of its manifests (the ones
/// `TOSCA.meta` names, else the one named after the entry definitions) and the `Name:`
/// entries of `TOSCA.meta`. The package interface reads files but does not list them; a
/// SOL004 manifest lists every file of the package.
fn listed_files(files: &dyn ArtifactSource, entry: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    let mut manifests = Vec::new();
    if let Ok(meta) = files.read("TOSCA-Metadata/TOSCA.meta") {
        for line in String::from_utf8_lossy(&meta).lines() {
            if let Some((k, v)) = line.split_once(':') {
                let v = v.trim().to_string();
                match k.trim() {
                    "Name" => out.push(v),
                    "ETSI-Entry-Manifest" | "Entry-Manifest" => manifests.push(v),
                    _ => {}
                }
            }
        }
    }
    if let Some(stem) = entry
        .and_then(|e| e.rsplit('/').next())
        .and_then(|b| b.strip_suffix(".yaml").or_else(|| b.strip_suffix(".yml")))
    {
        manifests.push(format!("{stem}.mf"));
    }
    for m in manifests {
        if let Ok(text) = files.read(&m) {
            for line in String::from_utf8_lossy(&text).lines() {
                if let Some(v) = line.trim().strip_prefix("Source:") {
                    out.push(v.trim().to_string());
                }
            }
        }
    }
    let mut out: Vec<String> = out
        .iter()
        .map(|p| p.trim_start_matches("./").to_string())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Copies the chart directory `dir` of the package (its files as the package's manifest
/// lists them) to a private work directory, for a renderer that loads charts from the file
/// system; the work directory lives as long as the returned guard.
fn chart_directory(
    files: &dyn ArtifactSource,
    dir: &str,
    entry: Option<&str>,
) -> Result<(tempfile::TempDir, std::path::PathBuf), KubeError> {
    let prefix = format!("{dir}/");
    let members: Vec<String> = listed_files(files, entry)
        .into_iter()
        .filter(|p| p.starts_with(&prefix))
        .collect();
    if !members.iter().any(|p| *p == format!("{prefix}Chart.yaml")) {
        return Err(KubeError::input(format!(
            "Helm chart directory `{dir}`: the package's manifest does not list its files (the driver reads a chart directory by the manifest's `Source:` entries): list every file of the chart in the manifest, or package the chart as a .tgz"
        )));
    }
    if members.len() > MAX_CHART_FILES {
        return Err(KubeError::input(format!(
            "Helm chart directory `{dir}` has {} files, more than the {MAX_CHART_FILES} the driver reads: package the chart as a .tgz",
            members.len()
        )));
    }
    let work = tempfile::tempdir().map_err(|e| {
        KubeError::input(format!(
            "Helm chart directory `{dir}`: cannot create a work directory: {e}"
        ))
    })?;
    let root = work.path().join("chart");
    for member in &members {
        let rel = &member[prefix.len()..];
        // Plain relative paths only: a manifest entry must not reach outside the work directory.
        if rel
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == "..")
            || rel.contains('\\')
        {
            return Err(KubeError::input(format!(
                "Helm chart directory `{dir}`: the manifest lists `{member}`, which is not a plain path inside the chart"
            )));
        }
        let bytes = files.read(member).map_err(|e| {
            KubeError::input(format!(
                "Helm chart directory `{dir}`: `{member}` cannot be read from the package: {e}"
            ))
        })?;
        let target = root.join(rel);
        let written = target
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&target, bytes));
        written.map_err(|e| {
            KubeError::input(format!(
                "Helm chart directory `{dir}`: cannot copy `{member}` to the work directory: {e}"
            ))
        })?;
    }
    Ok((work, root))
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

    /// Renders a chart directory the way Helm reads one from disk: one document per file
    /// under `templates/`, its `source` naming the chart as given.
    struct DirectoryChart(std::sync::Mutex<Vec<String>>);

    #[async_trait::async_trait]
    impl HelmRenderer for DirectoryChart {
        fn name(&self) -> &str {
            "test directory chart"
        }

        async fn render(&self, req: &ChartRequest) -> Result<Vec<Document>, KubeError> {
            let ChartSource::Directory(dir) = &req.chart else {
                return Err(KubeError::input("expected a chart directory"));
            };
            let chart = std::fs::read_to_string(dir.join("Chart.yaml"))
                .map_err(|e| KubeError::input(e.to_string()))?;
            self.0.lock().unwrap_or_else(|e| e.into_inner()).push(chart);
            let mut docs = Vec::new();
            let mut names: Vec<_> = std::fs::read_dir(dir.join("templates"))
                .map_err(|e| KubeError::input(e.to_string()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .collect();
            names.sort();
            for p in names {
                let text =
                    std::fs::read_to_string(&p).map_err(|e| KubeError::input(e.to_string()))?;
                let file = p.file_name().unwrap_or_default().to_string_lossy();
                docs.extend(parse_documents(
                    &format!("{}:templates/{file}", req.chart.name()),
                    &text.replace("{{ .Release.Name }}", &req.release),
                )?);
            }
            Ok(docs)
        }
    }

    fn chart_dir_package(manifest: &str) -> vnfm_driver_api::memory::MemArtifacts {
        vnfm_driver_api::memory::MemArtifacts::new()
            .with(
                "TOSCA-Metadata/TOSCA.meta",
                "TOSCA-Meta-File-Version: 1.0\nEntry-Definitions: Definitions/top.yaml\nETSI-Entry-Manifest: top.mf\n",
            )
            .with("top.mf", manifest.to_string())
            .with("Files/chart/Chart.yaml", "apiVersion: v2\nname: c\nversion: 0.1.0\n")
            .with(
                "Files/chart/templates/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: 'cm-{{ .Release.Name }}'}\n",
            )
            .with(
                "Files/chart/templates/svc.yaml",
                "apiVersion: v1\nkind: Service\nmetadata: {name: 'svc-{{ .Release.Name }}'}\n",
            )
    }

    #[tokio::test]
    async fn a_chart_directory_is_read_by_the_manifest_and_named_by_its_package_path() {
        let listed = "Source: Files/chart/Chart.yaml\nAlgorithm: SHA-256\nHash: 0\n\nSource: Files/chart/templates/cm.yaml\n\nSource: ./Files/chart/templates/svc.yaml\n\nSource: Files/other.yaml\n";
        let files = chart_dir_package(listed);
        let input = |path: &str| RenderInput {
            params: json!({"helm_chart_path": path})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            instance_id: "i".into(),
            namespace: "ns".into(),
            release: "rel".into(),
            ..RenderInput::default()
        };
        let chart = DirectoryChart(Default::default());
        for path in ["Files/chart", "Files/chart/"] {
            let planned = render(&input(path), &files, Some(&chart))
                .await
                .expect("render");
            assert_eq!(names(&planned), ["ConfigMap/cm-rel", "Service/svc-rel"]);
            for p in &planned {
                assert!(
                    p.source.starts_with("Files/chart:templates/"),
                    "{}",
                    p.source
                );
            }
        }
        assert_eq!(
            chart.0.lock().unwrap_or_else(|e| e.into_inner()).len(),
            2,
            "the renderer loaded the copied directory"
        );

        // Only what the manifest lists is copied: without its Chart.yaml listed, the
        // directory is refused with what to do.
        let files = chart_dir_package("Source: Files/chart/templates/cm.yaml\n");
        let err = render(&input("Files/chart"), &files, Some(&chart))
            .await
            .expect_err("unlisted");
        assert!(err.to_string().contains("does not list its files"), "{err}");
        // A manifest entry that climbs out of the chart is refused, not written.
        let files = chart_dir_package(
            "Source: Files/chart/Chart.yaml\nSource: Files/chart/../../../../tmp/evil.yaml\n",
        );
        let err = render(&input("Files/chart"), &files, Some(&chart))
            .await
            .expect_err("hostile");
        assert!(err.to_string().contains("not a plain path"), "{err}");
        // Neither a file nor a chart directory.
        let err = render(&input("Files/nothing"), &files, Some(&chart))
            .await
            .expect_err("absent");
        assert!(
            err.to_string().contains("cannot be read from the package"),
            "{err}"
        );
    }

    /// An ONAP-style ASD with one `helm_chart` item (`file` as given) declaring two
    /// lifecycle parameters.
    fn chart_asd(file: &str, external: bool) -> Vnfd {
        let items = json!([{"id": "cache", "artifactName": "cache", "artifactType": "helm_chart",
            "file": file, "external": external, "deploymentOrder": 1,
            "lifecycleParameters": [".Values.replicaCount", ".Values.service.port"]}]);
        let stages = vnfm_descriptor::asd::stages_of(
            &serde_json::from_value::<Vec<vnfm_descriptor::asd::DeploymentItem>>(items.clone())
                .expect("items"),
        );
        let asd: Asd = serde_json::from_value(json!({
            "asdId": "asd-1", "dialect": "onap-0.1", "toscaDefinitionsVersion": "tosca_simple_yaml_1_2",
            "entryDefinitions": "Definitions/asd.yaml", "nodeTemplate": "app", "asdVersion": "1.0",
            "provider": "Acme", "applicationName": "app", "applicationVersion": "1.0",
            "deploymentItems": items, "stages": stages,
        }))
        .expect("asd");
        crate::asd_vnfd(&asd)
    }

    fn input(vnfd: &Vnfd, params: Value) -> RenderInput<'_> {
        RenderInput {
            params: params.as_object().cloned().unwrap_or_default(),
            vnfd: Some(vnfd),
            flavour: vnfd.flavours.first(),
            instance_id: "i".into(),
            namespace: "ns".into(),
            release: "rel".into(),
            ..RenderInput::default()
        }
    }

    /// Records the values each render was given.
    struct ValuesChart(std::sync::Mutex<Vec<Value>>);

    #[async_trait::async_trait]
    impl HelmRenderer for ValuesChart {
        fn name(&self) -> &str {
            "values chart"
        }

        async fn render(&self, req: &ChartRequest) -> Result<Vec<Document>, KubeError> {
            self.0
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(req.values.clone());
            OneDeploymentChart.render(req).await
        }
    }

    #[tokio::test]
    async fn asd_chart_items_take_their_lifecycle_parameters_and_package_files_only() {
        let files = vnfm_driver_api::memory::MemArtifacts::new()
            .with("Artifacts/cache.tgz", b"chart".to_vec());
        let vnfd = chart_asd("Artifacts/cache.tgz", false);
        let vnfd = &vnfd;
        let chart = ValuesChart(Default::default());
        // Both spellings of a lifecycle parameter reach the chart as nested values.
        let planned = render(
            &input(
                vnfd,
                json!({".Values.replicaCount": 2, "service.port": 8080, "other": "x"}),
            ),
            &files,
            Some(&chart),
        )
        .await
        .expect("render");
        assert_eq!(names(&planned), ["Deployment/cache-rel"]);
        assert_eq!(planned[0].vdu.as_deref(), Some("cache"));
        assert_eq!(planned[0].object["spec"]["replicas"], 2);
        assert_eq!(
            chart.0.lock().unwrap_or_else(|e| e.into_inner())[0],
            json!({"replicaCount": 2, "service": {"port": 8080}})
        );
        // A `.Values.` key that no item declares is a mistake the request hears about.
        let err = render(
            &input(vnfd, json!({".Values.replicas": 2})),
            &files,
            Some(&chart),
        )
        .await
        .expect_err("undeclared");
        assert!(
            err.to_string().contains("not a lifecycle parameter"),
            "{err}"
        );
        // A chart outside the package (an OCI or HTTP reference) is refused by name.
        let external = chart_asd("oci://registry.example/charts/cache", true);
        let err = render(&input(&external, json!({})), &files, Some(&chart))
            .await
            .expect_err("external");
        assert!(
            err.to_string().contains("outside the package")
                && err
                    .to_string()
                    .contains("oci://registry.example/charts/cache"),
            "{err}"
        );
    }
}
