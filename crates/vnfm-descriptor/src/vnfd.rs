//! The normalized VNFD (ETSI SOL001) model.
//!
//! This is what a TOSCA VNFD means, with the TOSCA machinery (imports, type hierarchy,
//! substitution mappings, policies) already resolved: one [`Vnfd`] with one [`Flavour`] per
//! deployment flavour, each listing its VDUs, connection points, virtual links, storage,
//! scaling aspects, instantiation levels, placement rules and the LCM hook bindings of its
//! `Vnflcm` interface. Sizes are in bytes, counts are integers; the original property values of
//! every node are kept in `properties` for drivers that need more than the model names.

use std::collections::BTreeMap;

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Free-form JSON value, used for property values the model keeps verbatim.
pub type Json = serde_json::Value;

/// A normalized VNF descriptor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Vnfd {
    /// `descriptor_id` of the VNF node: the VNFD id (vnfdId in SOL003).
    pub descriptor_id: String,
    /// `descriptor_version`.
    pub descriptor_version: String,
    /// `provider`.
    pub provider: String,
    /// `product_name`.
    pub product_name: String,
    /// `software_version`.
    pub software_version: String,
    /// `product_info_name`, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub product_info_name: Option<String>,
    /// `product_info_description`, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub product_info_description: Option<String>,
    /// `vnfm_info`: the VNFMs this VNF can be managed by.
    #[serde(default)]
    pub vnfm_info: Vec<String>,
    /// `tosca_definitions_version` of the entry definitions file.
    pub tosca_definitions_version: String,
    /// The SOL001 version of the ETSI type definitions the VNFD imports (e.g. `2.6.1`), when it
    /// can be told from the imports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sol001_version: Option<String>,
    /// The VNF node type (e.g. `company.provider.VNF`), derived from `tosca.nodes.nfv.VNF`.
    pub vnf_node_type: String,
    /// Package-relative path of the entry definitions file.
    pub entry_definitions: String,
    /// Deployment flavours, in declaration order.
    pub flavours: Vec<Flavour>,
    /// The VNF node's remaining properties (e.g. `lcm_operations_configuration`,
    /// `modifiable_attributes`), verbatim.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub properties: IndexMap<String, Json>,
    /// `tosca.policies.nfv.VnfPackageChange` policies of any flavour: the changes of current
    /// VNF package this VNFD declares, to or from other VNFDs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub package_changes: Vec<PackageChange>,
    /// `tosca.policies.nfv.VnfIndicator` policies (and policies of types derived from it) of
    /// any flavour: the indicators an instance of this VNFD reports.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub indicators: Vec<IndicatorDef>,
}

/// A VNF indicator the VNFD declares: a `tosca.policies.nfv.VnfIndicator` policy (or one of a
/// type derived from it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IndicatorDef {
    /// Policy name: the indicator's id.
    pub id: String,
    /// `metadata.name`: a human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `source`: `vnf`, `em` or `both_vnf_and_em`.
    pub source: String,
    /// `metadata.vnfm_promql`: the PromQL expression that computes the value, with
    /// `${vnf_instance_id}` standing for the instance's id. Without it the value is only what
    /// is pushed for the instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promql: Option<String>,
}

impl Vnfd {
    /// The flavour with id `flavour_id`.
    pub fn flavour(&self, flavour_id: &str) -> Option<&Flavour> {
        self.flavours.iter().find(|f| f.id == flavour_id)
    }

    /// The package change policy of this VNFD that covers moving an instance of flavour
    /// `source_flavour_id` from VNFD `source` to VNFD `destination`.
    pub fn package_change(
        &self,
        source: &str,
        destination: &str,
        source_flavour_id: &str,
    ) -> Option<&PackageChange> {
        self.package_changes.iter().find(|c| {
            c.selectors.iter().any(|s| {
                s.source_descriptor_id == source
                    && s.destination_descriptor_id == destination
                    && s.source_flavour_id == source_flavour_id
            })
        })
    }
}

/// A `tosca.policies.nfv.VnfPackageChange` policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PackageChange {
    /// Policy name.
    pub id: String,
    /// `selector`: the source and destination VNFDs and source flavours the policy covers (one
    /// selector in SOL001 v3, a list from v4).
    pub selectors: Vec<PackageChangeSelector>,
    /// `destination_flavour_id`: the flavour of the destination VNFD the instance ends in.
    pub destination_flavour_id: String,
    /// `modification_qualifier`: `up` (the destination is newer) or `down`.
    pub modification_qualifier: String,
    /// `additional_modification_description`, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `component_mappings`: identifiers that change between the two VNFDs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub component_mappings: Vec<ComponentMapping>,
}

/// A `tosca.datatypes.nfv.VnfPackageChangeSelector`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PackageChangeSelector {
    /// `source_descriptor_id`.
    pub source_descriptor_id: String,
    /// `destination_descriptor_id`.
    pub destination_descriptor_id: String,
    /// `source_flavour_id`.
    pub source_flavour_id: String,
}

/// A `tosca.datatypes.nfv.VnfPackageChangeComponentMapping`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ComponentMapping {
    /// `component_type`: `vdu`, `cp`, `virtual_link`, `virtual_storage`,
    /// `deployment_flavour`, `instantiation_level` or `scaling_aspect`.
    pub component_type: String,
    /// `source_id`: the identifier in the source VNFD.
    pub source_id: String,
    /// `destination_id`: the identifier in the destination VNFD.
    pub destination_id: String,
}

/// One deployment flavour (`tosca.nodes.nfv.VNF` substituted with `flavour_id`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Flavour {
    /// `flavour_id`.
    pub id: String,
    /// `flavour_description`.
    #[serde(default)]
    pub description: String,
    /// Package-relative path of the file that defines this flavour.
    pub file: String,
    /// Virtualisation deployment units (`Vdu.Compute` and `Vdu.OsContainerDeployableUnit`).
    pub vdus: Vec<Vdu>,
    /// Containers (`tosca.nodes.nfv.Vdu.OsContainer`) referenced by container VDUs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub containers: Vec<OsContainer>,
    /// Virtual storage (`Vdu.VirtualBlockStorage`, `VirtualObjectStorage`, `VirtualFileStorage`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub virtual_storages: Vec<VirtualStorage>,
    /// VDU connection points (`tosca.nodes.nfv.VduCp`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vdu_cps: Vec<VduCp>,
    /// External connection points: `tosca.nodes.nfv.VnfExtCp` templates and VduCps exposed through
    /// the substitution mapping's requirements.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ext_cps: Vec<VnfExtCp>,
    /// Internal virtual links (`tosca.nodes.nfv.VnfVirtualLink`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub virtual_links: Vec<VirtualLink>,
    /// Scaling aspects, with their per-VDU deltas filled in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scaling_aspects: Vec<ScalingAspect>,
    /// Instantiation levels, with their per-VDU instance counts filled in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instantiation_levels: Vec<InstantiationLevel>,
    /// `default_level` of the `InstantiationLevels` policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_instantiation_level: Option<String>,
    /// Affinity and anti-affinity rules.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placement_rules: Vec<PlacementRule>,
    /// Operations of the VNF's `Vnflcm` interface that are bound to an implementation artifact.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lcm_hooks: Vec<LcmHook>,
    /// Every artifact declared on a node template of this flavour (VNF node included).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
}

impl Flavour {
    /// A flavour `id` with nothing in it (no VDUs, links, aspects, levels, hooks or
    /// artifacts): what a projection of a VNFD that lacks the flavour works with.
    pub fn empty(id: impl Into<String>) -> Flavour {
        Flavour {
            id: id.into(),
            description: String::new(),
            file: String::new(),
            vdus: Vec::new(),
            containers: Vec::new(),
            virtual_storages: Vec::new(),
            vdu_cps: Vec::new(),
            ext_cps: Vec::new(),
            virtual_links: Vec::new(),
            scaling_aspects: Vec::new(),
            instantiation_levels: Vec::new(),
            default_instantiation_level: None,
            placement_rules: Vec::new(),
            lcm_hooks: Vec::new(),
            artifacts: Vec::new(),
        }
    }

    /// The VDU with node template name `id`.
    pub fn vdu(&self, id: &str) -> Option<&Vdu> {
        self.vdus.iter().find(|v| v.id == id)
    }

    /// The scaling aspect with id `id`.
    pub fn scaling_aspect(&self, id: &str) -> Option<&ScalingAspect> {
        self.scaling_aspects.iter().find(|a| a.id == id)
    }

    /// The instantiation level with id `id`.
    pub fn instantiation_level(&self, id: &str) -> Option<&InstantiationLevel> {
        self.instantiation_levels.iter().find(|l| l.id == id)
    }

    /// The hook bound to `operation` (e.g. `instantiate_start`), if any.
    pub fn hook(&self, operation: &str) -> Option<&LcmHook> {
        self.lcm_hooks.iter().find(|h| h.operation == operation)
    }

    /// The artifact named `name` declared on node template `owner`, or on any node when `owner`
    /// is `None`.
    pub fn artifact(&self, owner: Option<&str>, name: &str) -> Option<&Artifact> {
        self.artifacts
            .iter()
            .find(|a| a.name == name && owner.is_none_or(|o| a.owner == o))
    }
}

/// What a VDU is deployed as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum VduKind {
    /// `tosca.nodes.nfv.Vdu.Compute`: a virtual machine (or, in Tacker CNF packages, a
    /// Kubernetes workload named after the VDU).
    Compute,
    /// `tosca.nodes.nfv.Vdu.OsContainerDeployableUnit`: a set of containers (a pod).
    OsContainerDeployableUnit,
}

/// A virtualisation deployment unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Vdu {
    /// Node template name (the VDU id used in requests and `vnfcResourceInfo`).
    pub id: String,
    /// `name` property.
    pub name: String,
    /// `description` property.
    #[serde(default)]
    pub description: String,
    /// Compute or container deployable unit.
    pub kind: VduKind,
    /// The node template's type (may be derived from the SOL001 type).
    pub node_type: String,
    /// `vdu_profile.min_number_of_instances`.
    pub min_instances: u32,
    /// `vdu_profile.max_number_of_instances`.
    pub max_instances: u32,
    /// `initial_delta.number_of_instances` of the `VduInitialDelta` policy targeting this VDU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_delta: Option<u32>,
    /// Requested compute resources (`virtual_compute` capability), for `Compute` VDUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtual_compute: Option<VirtualCompute>,
    /// Software image (`sw_image_data` property and `sw_image` artifact).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sw_image: Option<SwImage>,
    /// Ids of the virtual storages required through `virtual_storage`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub virtual_storages: Vec<String>,
    /// Ids of the containers required through `container` (container VDUs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub containers: Vec<String>,
    /// All properties of the node template, verbatim (after defaults and inputs).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub properties: IndexMap<String, Json>,
}

/// Compute resources requested by a VDU.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VirtualCompute {
    /// `virtual_cpu.num_virtual_cpu`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_virtual_cpu: Option<u32>,
    /// `virtual_memory.virtual_mem_size`, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtual_mem_size_bytes: Option<u64>,
    /// `virtual_local_storage[*].size_of_storage`, in bytes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub local_storage_bytes: Vec<u64>,
    /// `requested_additional_capabilities[*].requested_additional_capability_name` (e.g. a
    /// compute flavour name).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_capability_names: Vec<String>,
}

/// A software image (`tosca.datatypes.nfv.SwImageData` plus its artifact).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SwImage {
    /// `name`.
    pub name: String,
    /// `version`.
    #[serde(default)]
    pub version: String,
    /// `checksum.algorithm` (e.g. `sha-256`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum_algorithm: Option<String>,
    /// `checksum.hash`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum_hash: Option<String>,
    /// `container_format` (e.g. `bare`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_format: Option<String>,
    /// `disk_format` (e.g. `qcow2`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_format: Option<String>,
    /// `min_disk`, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_disk_bytes: Option<u64>,
    /// `min_ram`, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_ram_bytes: Option<u64>,
    /// `size`, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    /// Package-relative path or URI of the image file (the `sw_image` artifact), when declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

/// A container of a container VDU (`tosca.nodes.nfv.Vdu.OsContainer`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OsContainer {
    /// Node template name.
    pub id: String,
    /// `name` property.
    pub name: String,
    /// `description` property.
    #[serde(default)]
    pub description: String,
    /// Software image (`sw_image` artifact / `sw_image_data`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sw_image: Option<SwImage>,
    /// All properties verbatim (CPU/memory requests and limits...).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub properties: IndexMap<String, Json>,
}

/// Kind of virtual storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum StorageKind {
    /// `tosca.nodes.nfv.Vdu.VirtualBlockStorage`.
    Block,
    /// `tosca.nodes.nfv.Vdu.VirtualObjectStorage`.
    Object,
    /// `tosca.nodes.nfv.Vdu.VirtualFileStorage`.
    File,
}

/// A virtual storage node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VirtualStorage {
    /// Node template name.
    pub id: String,
    /// Block, object or file storage.
    pub kind: StorageKind,
    /// Size in bytes (`size_of_storage` / `max_size_of_storage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    /// Image to create the volume from, when declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sw_image: Option<SwImage>,
    /// All properties verbatim.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub properties: IndexMap<String, Json>,
}

/// A VDU connection point (`tosca.nodes.nfv.VduCp`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VduCp {
    /// Node template name (the CPD id).
    pub id: String,
    /// The VDU it binds to (`virtual_binding` requirement).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vdu: Option<String>,
    /// The internal virtual link it attaches to (`virtual_link` requirement), if internal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtual_link: Option<String>,
    /// `layer_protocols`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layer_protocols: Vec<String>,
    /// `order`: position of the NIC on the VDU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<u32>,
    /// All properties verbatim.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub properties: IndexMap<String, Json>,
}

/// An external connection point of the VNF.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VnfExtCp {
    /// The CPD id: the node template that realises it (a `VnfExtCp` or an exposed `VduCp`).
    pub id: String,
    /// The VNF-level requirement it is exposed as (substitution mapping key), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requirement: Option<String>,
    /// The internal virtual link a `VnfExtCp` re-exposes, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub internal_virtual_link: Option<String>,
    /// The VDU this CP belongs to, when it is an exposed `VduCp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vdu: Option<String>,
    /// `layer_protocols`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layer_protocols: Vec<String>,
}

/// An internal virtual link (`tosca.nodes.nfv.VnfVirtualLink`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VirtualLink {
    /// Node template name.
    pub id: String,
    /// `description`.
    #[serde(default)]
    pub description: String,
    /// `connectivity_type.layer_protocols`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layer_protocols: Vec<String>,
    /// `vl_profile.virtual_link_protocol_data[*].l3_protocol_data.cidr`, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cidrs: Vec<String>,
    /// All properties verbatim.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub properties: IndexMap<String, Json>,
}

/// A scaling aspect (`tosca.policies.nfv.ScalingAspects` entry).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScalingAspect {
    /// Aspect id (key in `aspects`).
    pub id: String,
    /// `name`.
    #[serde(default)]
    pub name: String,
    /// `description`.
    #[serde(default)]
    pub description: String,
    /// `max_scale_level`.
    pub max_scale_level: u32,
    /// `step_deltas`: the delta id applied at each step (one entry per step, or one for all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub step_deltas: Vec<String>,
    /// Per VDU, from `VduScalingAspectDeltas`: delta id -> number of instances.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub vdu_deltas: BTreeMap<String, BTreeMap<String, u32>>,
}

impl ScalingAspect {
    /// The delta id applied when going from `level` to `level + 1` (SOL001: when fewer deltas
    /// than levels are listed, the last one repeats).
    pub fn step_delta(&self, level: u32) -> Option<&str> {
        let i = (level as usize).min(self.step_deltas.len().checked_sub(1)?);
        self.step_deltas.get(i).map(String::as_str)
    }

    /// Instances this aspect adds to VDU `vdu` between level 0 and `level`. Computed in closed
    /// form, so a huge `max_scale_level` in a hostile VNFD cannot make it loop.
    pub fn instances_added(&self, vdu: &str, level: u32) -> u64 {
        let Some(deltas) = self.vdu_deltas.get(vdu) else {
            return 0;
        };
        let delta_at = |step: u32| -> u64 {
            self.step_delta(step)
                .and_then(|d| deltas.get(d))
                .map_or(0, |n| u64::from(*n))
        };
        let listed = u32::try_from(self.step_deltas.len()).unwrap_or(u32::MAX);
        let explicit = level.min(listed);
        let mut sum: u64 = (0..explicit).map(delta_at).sum();
        if level > explicit {
            // Beyond the listed deltas the last one repeats.
            let last = delta_at(explicit.saturating_sub(1));
            sum = sum.saturating_add(u64::from(level - explicit).saturating_mul(last));
        }
        sum
    }
}

/// An instantiation level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstantiationLevel {
    /// Level id.
    pub id: String,
    /// `description`.
    #[serde(default)]
    pub description: String,
    /// `scale_info`: aspect id -> scale level.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scale_levels: BTreeMap<String, u32>,
    /// From `VduInstantiationLevels`: VDU id -> number of instances at this level.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub vdu_instances: BTreeMap<String, u32>,
}

/// Affinity or anti-affinity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum PlacementKind {
    /// `tosca.policies.nfv.AffinityRule`.
    Affinity,
    /// `tosca.policies.nfv.AntiAffinityRule`.
    AntiAffinity,
}

/// A placement rule (`AffinityRule` / `AntiAffinityRule` policy).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlacementRule {
    /// Policy name.
    pub id: String,
    /// Affinity or anti-affinity.
    pub kind: PlacementKind,
    /// `scope` (e.g. `nfvi_node`, `zone`).
    pub scope: String,
    /// VDUs the rule applies to (groups in `targets` are expanded to their members).
    pub vdus: Vec<String>,
}

/// An operation of the `Vnflcm` interface bound to an implementation (a hook).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LcmHook {
    /// Operation name as declared in the interface, e.g. `instantiate_start`,
    /// `scale_end`, `instantiate_rollback_start`.
    pub operation: String,
    /// Name of the primary implementation artifact.
    pub artifact: String,
    /// Names of dependency artifacts (`implementation.dependencies`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<String>,
    /// Operation `inputs`, verbatim.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub inputs: IndexMap<String, Json>,
    /// Operation timeout in seconds (`timeout` keyword, TOSCA 1.3), when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<u64>,
}

/// An artifact declared on a node template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// Artifact name (key under `artifacts`).
    pub name: String,
    /// Node template that declares it.
    pub owner: String,
    /// Artifact type, e.g. `tosca.artifacts.Implementation.Python`, `tosca.artifacts.nfv.SwImage`.
    pub artifact_type: String,
    /// `file`: resolved to a package-relative path (or kept as a URI for external artifacts).
    pub file: String,
    /// True when `file` is a URI outside the package.
    #[serde(default)]
    pub external: bool,
    /// Hex SHA-256 of the file as found in the package, when it is present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// `checksum` declared in TOSCA 1.3 artifact definitions, as `algorithm:hash`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared_checksum: Option<String>,
    /// `deploy_path`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deploy_path: Option<String>,
    /// `description`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `properties`, verbatim.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub properties: IndexMap<String, Json>,
}
