//! The normalized Application Service Descriptor (ASD) model.
//!
//! An ASD describes a cloud-native application by its deployment items (Helm charts, helmfiles,
//! CRDs, Terraform modules), its external connection points and what it expects of the target
//! Kubernetes cluster. Two dialects exist in the field: the ONAP 0.1 types (snake_case property
//! names, `tosca.nodes.asd`, TOSCA 1.2) and the O-RAN WG6 2.0 types (camelCase names,
//! `tosca.nodes.asd.Asd`, TOSCA 1.3). Both read into this one model; enum values use the O-RAN
//! 2.0 spellings (`direct.userspace`, `activePassiveBond`), whatever the source wrote.
//!
//! Deployment items are also grouped into [`DeploymentStage`]s: ascending `deploymentOrder`,
//! items sharing an order in one stage, items without an order in a final stage. Every item is
//! in exactly one stage.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::vnfd::Json;

/// A normalized Application Service Descriptor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Asd {
    /// `asdId` / `asd_id` / `descriptor_id`: the descriptor id (the `vnfdId` of the lifecycle API).
    pub asd_id: String,
    /// Which type definitions the descriptor is written against.
    pub dialect: AsdDialect,
    /// `tosca_definitions_version` of the entry definitions file.
    pub tosca_definitions_version: String,
    /// Package-relative path of the entry definitions file.
    pub entry_definitions: String,
    /// Name of the ASD node template.
    pub node_template: String,
    /// `description` of the ASD node template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `asdInvariantId` / `descriptor_invariant_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invariant_id: Option<String>,
    /// `asdVersion` / `descriptor_version`: version of the descriptor.
    pub asd_version: String,
    /// `asdSchemaVersion` / `schema_version`; for O-RAN 2.0 descriptors without the property, the
    /// version named by the import of the standard types (`oran_asd_types_v02.00.00` -> `02.00.00`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_version: Option<String>,
    /// `asdProvider` / `provider`.
    pub provider: String,
    /// `asdApplicationName` / `application_name`: invariant name of the application.
    pub application_name: String,
    /// `asdApplicationSwVersion` / `asdApplicationVersion` / `application_version`.
    pub application_version: String,
    /// `asdApplicationInfoName` / `application_info_name`: human-readable application name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub application_info_name: Option<String>,
    /// `asdInfoDescription` / `asdFunctionDescription` / `function_description`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function_description: Option<String>,
    /// `asdExtCpd` / `ext_cpds`: externally exposed connection points, in declaration order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ext_cpds: Vec<ExtCpd>,
    /// `enhancedClusterCapabilities` / `enhanced_cluster_capabilities`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enhanced_cluster_capabilities: Option<EnhancedClusterCapabilities>,
    /// Deployment items, in declaration order.
    pub deployment_items: Vec<DeploymentItem>,
    /// The deployment items grouped by `deploymentOrder` (see [`stages_of`]).
    pub stages: Vec<DeploymentStage>,
    /// `tosca.artifacts.asd.ExecutableImageItem` artifacts (O-RAN 2.0), in declaration order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub executable_images: Vec<ExecutableImage>,
    /// Images found in OCI image layouts under `images/` in the package.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<OciImage>,
    /// Properties of the ASD node the model has no field for (vendor extensions), verbatim.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extensions: BTreeMap<String, Json>,
}

impl Asd {
    /// The deployment item with id `id`.
    pub fn deployment_item(&self, id: &str) -> Option<&DeploymentItem> {
        self.deployment_items.iter().find(|i| i.id == id)
    }

    /// The external connection point with id `id`.
    pub fn ext_cpd(&self, id: &str) -> Option<&ExtCpd> {
        self.ext_cpds.iter().find(|c| c.id == id)
    }
}

/// The type definitions an ASD is written against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum AsdDialect {
    /// ONAP ASD 0.1: `tosca.nodes.asd`, snake_case properties, TOSCA 1.2.
    #[serde(rename = "onap-0.1")]
    Onap01,
    /// O-RAN WG6 ASD 2.0: `tosca.nodes.asd.Asd`, camelCase properties, TOSCA 1.3.
    #[serde(rename = "oran-2.0")]
    Oran20,
}

/// An external connection point descriptor (`ExtCpd` / `extCpdData`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtCpd {
    /// `id`.
    pub id: String,
    /// `description`: the service exposed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `virtualLinkRequirement`: the network(s) the point is exposed on (OAM, EndUser, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtual_link_requirement: Option<String>,
    /// `networkInterfaceRealizationRequirements`, for secondary network interfaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_interface_realization_requirements: Option<NetworkInterfaceRequirements>,
    /// `inputParamMappings`: deployment parameters the orchestrator sets for this point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_param_mappings: Option<ParamMappings>,
    /// `resourceMapping`: the cloud-native resource that realises the point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_mapping: Option<String>,
}

/// Requirements on the network attachment of a secondary interface.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkInterfaceRequirements {
    /// `trunkMode`: the interface carries several VLANs. Defaults to false.
    pub trunk_mode: bool,
    /// `ipam`: who assigns the IP address. Defaults to `infraProvided`.
    pub ipam: Ipam,
    /// `interfaceType`. Defaults to `kernel.netdev`.
    pub interface_type: InterfaceType,
    /// `interfaceOption`: vNIC options the interface is verified with.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interface_options: Vec<InterfaceOption>,
    /// `interfaceRedundancy`: redundancy method required from the infrastructure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface_redundancy: Option<InterfaceRedundancy>,
    /// `nic_options` (ONAP 0.1): physical NICs a `direct` interface's driver is verified with.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nic_options: Vec<String>,
}

/// How the IP address of an interface is assigned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Ipam {
    /// The CNI's IPAM plugin assigns it.
    InfraProvided,
    /// The orchestrator passes it as a deployment parameter.
    Orchestrated,
    /// The application gets it from an external management entity.
    UserManaged,
}

/// The kind of network interface an application expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum InterfaceType {
    /// `kernel.netdev`: kernel or vSwitch virtual netdev (OVS, macvlan, ipvlan, bridge).
    #[serde(rename = "kernel.netdev")]
    KernelNetdev,
    /// `direct.userspace` (ONAP 0.1: `direct.userdriver`): a PCIe device with an
    /// application-provided driver.
    #[serde(rename = "direct.userspace")]
    DirectUserspace,
    /// `direct.kerneldriver`: a PCIe device bound to a kernel driver.
    #[serde(rename = "direct.kerneldriver")]
    DirectKerneldriver,
    /// `direct.bond`: a bond (Bond CNI) over a mated pair of direct interfaces.
    #[serde(rename = "direct.bond")]
    DirectBond,
    /// `userspace`: userspace CNI over a DPDK-OVS or VPP vSwitch.
    #[serde(rename = "userspace")]
    Userspace,
}

/// A vNIC configuration option of a userspace interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum InterfaceOption {
    /// virtio.
    Virtio,
    /// memif.
    Memif,
}

/// The redundancy method an interface requires from the infrastructure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum InterfaceRedundancy {
    /// One vNIC; the infrastructure provides redundancy.
    InfraProvided,
    /// One vNIC attached through the left switch plane only (ONAP 0.1: `Left`).
    Left,
    /// One vNIC attached through the right switch plane only (ONAP 0.1: `Right`).
    Right,
    /// Mated pair in a static multi-chassis LAG (ONAP 0.1: `actActBond`).
    ActiveActiveBond,
    /// Mated pair bonded active-passive by the application (ONAP 0.1: `actPassBond`).
    ActivePassiveBond,
    /// Mated pair; the application moves its IP address (ONAP 0.1: `actPassL3`).
    #[serde(rename = "activePassiveL3")]
    ActivePassiveL3,
    /// Mated pair; the application uses anycast/ECMP (ONAP 0.1 only: `actActL3`).
    #[serde(rename = "activeActiveL3")]
    ActiveActiveL3,
}

/// Deployment parameters through which the orchestrator configures an external connection
/// point (`ExtCpdParamMappings` / `paramMappings`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ParamMappings {
    /// `loadbalancerIP`: parameter that sets the service's load balancer IP.
    #[serde(
        default,
        rename = "loadbalancerIP",
        skip_serializing_if = "Option::is_none"
    )]
    pub loadbalancer_ip: Option<String>,
    /// `externalIPs`: parameter(s) that set the external IPs (a single string in O-RAN 2.0, a
    /// list in ONAP 0.1).
    #[serde(default, rename = "externalIPs", skip_serializing_if = "Vec::is_empty")]
    pub external_ips: Vec<String>,
    /// `nadName` / `nad_names`: parameters that receive NetworkAttachmentDefinition names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nad_names: Vec<String>,
    /// `nadNamespace`: parameter that receives the namespace of the NADs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nad_namespace: Option<String>,
}

/// What the application expects of the target cluster, to aid placement.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnhancedClusterCapabilities {
    /// `minKernelVersion`, as `uname -r` prints it (e.g. `4.15.0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_kernel_version: Option<String>,
    /// `requiredKernelModule(s)`, as `lsmod` lists them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_kernel_modules: Vec<String>,
    /// `conflictingKernelModule(s)`: modules that must not be loaded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicting_kernel_modules: Vec<String>,
    /// `requiredCustomResource(s)`: custom resource kinds (CRDs) the cluster must serve and the
    /// application does not bring.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_custom_resources: Vec<RequiredCustomResource>,
    /// `clusterLabel(s)` (mandatory) and `preferredClusterLabel(s)` (preferred).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_labels: Vec<ClusterLabel>,
    /// `requiredPlugin`: Kubernetes plugins the application needs, e.g. the CNI meta-plugin
    /// (multus) that provides secondary interfaces.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_plugins: Vec<RequiredPlugin>,
}

/// A custom resource kind the cluster must serve.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequiredCustomResource {
    /// `kind`, e.g. `Redis`.
    pub kind: String,
    /// `apiVersion` / `api_version`, e.g. `kubedb.com/v1alpha1`; any version when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
}

/// A cluster label (Kubernetes label syntax) the target cluster should carry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterLabel {
    /// The label as written (`key` or `key=value`).
    pub label: String,
    /// Whether placement must or should honour it.
    pub requirement: LabelRequirement,
}

/// How strongly a cluster label is required.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum LabelRequirement {
    /// The cluster must carry the label.
    Mandatory,
    /// Clusters carrying the label are preferred.
    Preferred,
}

/// A Kubernetes plugin the application needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequiredPlugin {
    /// `requiredPluginName` / `name`, e.g. `multus`.
    pub name: String,
    /// `requiredPluginVersion` / `version`; any version when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// A cloud-native deployment artifact of the application.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentItem {
    /// `deploymentItemId` / `item_id`.
    pub id: String,
    /// Name of the artifact definition on the ASD node template.
    pub artifact_name: String,
    /// `artifactType` / `artifact_type`.
    pub artifact_type: DeploymentArtifactType,
    /// The artifact's `file`: a package-relative path, or a URL when `external`.
    pub file: String,
    /// True when `file` is a URL outside the package.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub external: bool,
    /// Lowercase hex SHA-256 of the file, when it is in the package.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// `deploymentOrder` / `deployment_order`; absent means the orchestrator decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment_order: Option<u32>,
    /// `deploymentParameter` / `lifecycleParameters` / `lifecycle_parameters`: parameters that
    /// may be overridden at deployment time, e.g. `.Values.image.repository`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lifecycle_parameters: Vec<String>,
    /// `description` of the artifact definition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Artifact properties the model has no field for (e.g. `target_server`), verbatim.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extensions: BTreeMap<String, Json>,
}

/// The kind of a deployment item's artifact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeploymentArtifactType {
    /// A Helm chart (`helm_chart`).
    HelmChart,
    /// A helmfile (`helmfile`).
    Helmfile,
    /// Custom resource definitions (`crd`).
    Crd,
    /// A Terraform module (`terraform`).
    Terraform,
}

impl DeploymentArtifactType {
    /// Every value, for messages.
    pub const ALL: [DeploymentArtifactType; 4] = [
        DeploymentArtifactType::HelmChart,
        DeploymentArtifactType::Helmfile,
        DeploymentArtifactType::Crd,
        DeploymentArtifactType::Terraform,
    ];

    /// The spelling used in descriptors.
    pub fn as_str(self) -> &'static str {
        match self {
            DeploymentArtifactType::HelmChart => "helm_chart",
            DeploymentArtifactType::Helmfile => "helmfile",
            DeploymentArtifactType::Crd => "crd",
            DeploymentArtifactType::Terraform => "terraform",
        }
    }

    /// Parses the spelling used in descriptors.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

/// Deployment items installed together: all items of a stage may be deployed in parallel once
/// every earlier stage is done.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentStage {
    /// The shared `deploymentOrder`; absent for the final stage of items without an order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<u32>,
    /// Ids of the deployment items of the stage, in declaration order.
    pub items: Vec<String>,
}

/// Groups deployment items into stages: one stage per distinct `deployment_order`, ascending;
/// items without an order form one final stage (the descriptor leaves their order to the
/// orchestrator, and running them after every ordered item is the choice that cannot break an
/// ordered dependency). Within a stage items keep declaration order. Every item lands in
/// exactly one stage.
pub fn stages_of(items: &[DeploymentItem]) -> Vec<DeploymentStage> {
    let mut ordered: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    let mut unordered = Vec::new();
    for item in items {
        match item.deployment_order {
            Some(order) => ordered.entry(order).or_default().push(item.id.clone()),
            None => unordered.push(item.id.clone()),
        }
    }
    let mut stages: Vec<DeploymentStage> = ordered
        .into_iter()
        .map(|(order, items)| DeploymentStage {
            order: Some(order),
            items,
        })
        .collect();
    if !unordered.is_empty() {
        stages.push(DeploymentStage {
            order: None,
            items: unordered,
        });
    }
    stages
}

/// An executable software image the application uses (`tosca.artifacts.asd.ExecutableImageItem`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecutableImage {
    /// Name of the artifact definition on the ASD node template.
    pub artifact_name: String,
    /// `swImageName`.
    pub name: String,
    /// `swImageVersion`.
    pub version: String,
    /// The artifact's `file`: where the image is (package path or URL).
    pub location: String,
    /// True when `location` is a URL outside the package.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub external: bool,
}

/// One manifest listed in the `index.json` of an OCI image layout in the package.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OciImage {
    /// Package-relative directory of the layout (the one holding `index.json`), e.g. `images/app`.
    pub layout: String,
    /// The `org.opencontainers.image.ref.name` annotation (a tag such as `1.2.0`, or a full
    /// reference), when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ref_name: Option<String>,
    /// The manifest's digest, e.g. `sha256:...`.
    pub digest: String,
    /// The manifest's media type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: &str, order: Option<u32>) -> DeploymentItem {
        DeploymentItem {
            id: id.into(),
            artifact_name: id.into(),
            artifact_type: DeploymentArtifactType::HelmChart,
            file: format!("Artifacts/{id}.tgz"),
            external: false,
            sha256: None,
            deployment_order: order,
            lifecycle_parameters: vec![],
            description: None,
            extensions: BTreeMap::new(),
        }
    }

    #[test]
    fn stages_are_ascending_with_unordered_items_last_and_none_dropped() {
        let items = [
            item("late", Some(7)),
            item("free1", None),
            item("a", Some(1)),
            item("b", Some(1)),
            item("zero", Some(0)),
            item("free2", None),
        ];
        let stages = stages_of(&items);
        let got: Vec<(Option<u32>, Vec<&str>)> = stages
            .iter()
            .map(|s| (s.order, s.items.iter().map(String::as_str).collect()))
            .collect();
        assert_eq!(
            got,
            vec![
                (Some(0), vec!["zero"]),
                (Some(1), vec!["a", "b"]),
                (Some(7), vec!["late"]),
                (None, vec!["free1", "free2"]),
            ]
        );
        let staged: usize = stages.iter().map(|s| s.items.len()).sum();
        assert_eq!(staged, items.len());
    }

    #[test]
    fn no_items_means_no_stages() {
        assert!(stages_of(&[]).is_empty());
    }

    #[test]
    fn artifact_type_spellings_round_trip() {
        for t in DeploymentArtifactType::ALL {
            assert_eq!(DeploymentArtifactType::parse(t.as_str()), Some(t));
            assert_eq!(
                serde_json::to_value(t).unwrap(),
                serde_json::Value::String(t.as_str().into())
            );
        }
        assert_eq!(DeploymentArtifactType::parse("kustomize"), None);
    }

    #[test]
    fn enums_serialize_with_oran_spellings() {
        assert_eq!(
            serde_json::to_value(InterfaceType::DirectUserspace).unwrap(),
            "direct.userspace"
        );
        assert_eq!(
            serde_json::to_value(InterfaceRedundancy::ActivePassiveBond).unwrap(),
            "activePassiveBond"
        );
        assert_eq!(
            serde_json::to_value(InterfaceRedundancy::ActivePassiveL3).unwrap(),
            "activePassiveL3"
        );
        assert_eq!(
            serde_json::to_value(AsdDialect::Oran20).unwrap(),
            "oran-2.0"
        );
    }
}
