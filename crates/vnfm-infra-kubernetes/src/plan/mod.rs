//! From a request to the objects to apply: which sources (manifest files, a Helm chart, ASD
//! deployment items), the per-instance namespace, placeholder substitution, ownership labels,
//! the VDU each workload belongs to, replica counts, and the apply order.
//!
//! This module holds the planned object ([`Planned`]), the request's parameters
//! ([`RenderInput`]), the naming helpers and the [`render`] pipeline; its parts live in
//! private modules: `sources` (manifest files, parameter lists, ASD lifecycle parameters),
//! `chart` (Helm values, chart archives and chart directories), `prepare` (namespace,
//! labels and VDU of one object) and `replicas` (instance counts, HPAs and [`scale_vdu`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use vnfm_descriptor::asd::DeploymentArtifactType;
use vnfm_descriptor::{Asd, Flavour, Vnfd};
use vnfm_driver_api::ArtifactSource;

use crate::KubeError;
use crate::helm::{HelmRenderer, set_value};
use crate::manifest::{Document, parse_documents, substitute};
use crate::order::group_of;

mod chart;
mod prepare;
mod replicas;
mod sources;
#[cfg(test)]
mod tests;

use chart::{chart_values, render_chart};
use prepare::prepare;
use replicas::assign_replicas;
pub use replicas::scale_vdu;
pub(crate) use sources::string_list;
use sources::{check_lifecycle_params, read_text, vdu_manifests};

/// Label carrying the VNF instance id on every object the driver creates.
pub const INSTANCE_LABEL: &str = "vnfm.io/vnf-instance-id";
/// Tacker's label with the VNF instance id, also set on every object the driver creates (not
/// on pods): tools written for Tacker select an instance's objects by it.
pub const TACKER_INSTANCE_LABEL: &str = "tacker_vnf_instance_id";
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
    /// Keep the `metadata.namespace` a manifest names (objects naming none get `namespace`),
    /// to find the manifests' namespace (VIM `extra.namespaceRule: tacker`).
    pub manifest_namespaces: bool,
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
