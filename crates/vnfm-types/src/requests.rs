//! Request bodies of the VNF LCM interface (SOL003 v3.3.1 clause 5.5.2) and the data types they
//! carry (external virtual links, external CP configuration, ...).
//!
//! Request types reject unknown attributes (`deny_unknown_fields`): a misspelt attribute is a
//! client error rather than a silently ignored input. Free-form members (`additionalParams`,
//! `extensions`, `metadata`, `vnfConfigurableProperties`) accept anything.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::{CpProtocolData, KeyValuePairs, ResourceHandle, VimConnectionInfo};
use crate::ids::VnfdId;
use crate::instance::VnfScaleInfo;

/// `CreateVnfRequest`: body of `POST /vnf_instances`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateVnfRequest {
    /// The VNFD to create the instance from.
    pub vnfd_id: VnfdId,
    /// Human-readable name of the instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_instance_name: Option<String>,
    /// Human-readable description of the instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_instance_description: Option<String>,
    /// Initial `metadata` of the instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<KeyValuePairs>,
}

/// Changes a request makes to an instance's `vimConnectionInfo`, keyed by VIM connection id.
/// SOL003 has the VNFM apply a request's `vimConnectionInfo` to the instance's by JSON Merge
/// Patch (RFC 7396): `Some` sets the connection with that key, `None` (`null` on the wire)
/// removes it. [`apply_vim_connection_changes`] applies them.
pub type VimConnectionChanges = IndexMap<String, Option<VimConnectionInfo>>;

/// The connections `changes` sets (leaving out the removals).
pub fn vim_connections_set(
    changes: &VimConnectionChanges,
) -> impl Iterator<Item = (&String, &VimConnectionInfo)> {
    changes
        .iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| (k, v)))
}

/// The connections `changes` sets, for rewriting in place.
pub fn vim_connections_set_mut(
    changes: &mut VimConnectionChanges,
) -> impl Iterator<Item = (&String, &mut VimConnectionInfo)> {
    changes
        .iter_mut()
        .filter_map(|(k, v)| v.as_mut().map(|v| (k, v)))
}

/// Applies `changes` to the connections `map` (JSON Merge Patch: set or remove per key).
pub fn apply_vim_connection_changes(
    map: &mut IndexMap<String, VimConnectionInfo>,
    changes: &VimConnectionChanges,
) {
    for (key, change) in changes {
        match change {
            Some(v) => {
                map.insert(key.clone(), v.clone());
            }
            None => {
                map.shift_remove(key);
            }
        }
    }
}

/// Changes that set every connection of `map` (a request without removals).
pub fn vim_connections_to_changes(
    map: IndexMap<String, VimConnectionInfo>,
) -> VimConnectionChanges {
    map.into_iter().map(|(k, v)| (k, Some(v))).collect()
}

/// `InstantiateVnfRequest`: body of `POST /vnf_instances/{id}/instantiate`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InstantiateVnfRequest {
    /// The deployment flavour to instantiate.
    #[schemars(length(min = 1))]
    pub flavour_id: String,
    /// The instantiation level of the flavour; its default level when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instantiation_level_id: Option<String>,
    /// External virtual links to connect the VNF to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ext_virtual_links: Option<Vec<ExtVirtualLinkData>>,
    /// Externally-managed internal virtual links.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ext_managed_virtual_links: Option<Vec<ExtManagedVirtualLinkData>>,
    /// Changes to the instance's VIM connections, keyed by VIM connection id (merge patch:
    /// `null` removes the connection the instance holds under that key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vim_connection_info: Option<VimConnectionChanges>,
    /// Localization language of the VNF.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub localization_language: Option<String>,
    /// Additional input parameters for the instantiation (VNF-specific).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_params: Option<KeyValuePairs>,
    /// Initial `extensions` of the instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<KeyValuePairs>,
    /// Initial `vnfConfigurableProperties` of the instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_configurable_properties: Option<KeyValuePairs>,
}

/// `ExtVirtualLinkData`: an external virtual link and the external CPs to connect to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExtVirtualLinkData {
    /// Identifier of the external VL instance (chosen by the NFVO).
    #[schemars(length(min = 1))]
    pub id: String,
    /// Key of the `vimConnectionInfo` entry of the VIM managing the VL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vim_connection_id: Option<String>,
    /// Resource provider managing the VL, when not a VIM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_provider_id: Option<String>,
    /// Identifier of the network resource on the VIM.
    #[schemars(length(min = 1))]
    pub resource_id: String,
    /// External CPs to connect to this VL.
    #[schemars(length(min = 1))]
    pub ext_cps: Vec<VnfExtCpData>,
    /// Pre-created link ports to use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ext_link_ports: Option<Vec<ExtLinkPortData>>,
}

/// `VnfExtCpData`: configuration of the external CPs created from one CPD.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VnfExtCpData {
    /// The CPD (in the VNFD) the CPs are created from.
    #[schemars(length(min = 1))]
    pub cpd_id: String,
    /// CP configurations keyed by `cpConfigId` (a key chosen by the API consumer).
    #[schemars(extend("minProperties" = 1))]
    pub cp_config: IndexMap<String, VnfExtCpConfig>,
}

/// `VnfExtCpConfig`: configuration of one external CP instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VnfExtCpConfig {
    /// `cpConfigId` of the parent CP configuration (for trunk sub-ports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_cp_config_id: Option<String>,
    /// Identifier of a pre-created link port (`extLinkPorts[].id`) to use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_port_id: Option<String>,
    /// Whether the VNFM shall create a link port for this CP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create_ext_link_port: Option<bool>,
    /// Protocol data (addresses) of the CP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cp_protocol_data: Option<Vec<CpProtocolData>>,
}

/// `ExtLinkPortData`: a link port pre-created on an external VL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExtLinkPortData {
    /// Identifier of the link port.
    #[schemars(length(min = 1))]
    pub id: String,
    /// Where the port lives.
    pub resource_handle: ResourceHandle,
    /// Trunk the port belongs to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trunk_resource_id: Option<String>,
}

/// `ExtManagedVirtualLinkData`: an internal VL of the VNF managed outside the VNFM.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExtManagedVirtualLinkData {
    /// Identifier of the externally-managed VL instance.
    #[schemars(length(min = 1))]
    pub id: String,
    /// The VLD (in the VNFD) this VL implements.
    #[schemars(length(min = 1))]
    pub vnf_virtual_link_desc_id: String,
    /// Key of the `vimConnectionInfo` entry of the VIM managing the VL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vim_connection_id: Option<String>,
    /// Resource provider managing the VL, when not a VIM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_provider_id: Option<String>,
    /// Identifier of the network resource on the VIM.
    #[schemars(length(min = 1))]
    pub resource_id: String,
    /// Pre-created link ports on this VL (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_link_port: Option<Vec<VnfLinkPortData>>,
    /// Multi-site VL this VL is part of (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ext_managed_multisite_virtual_link_id: Option<String>,
}

/// `VnfLinkPortData`: a link port pre-created on an externally-managed VL (v3.3.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VnfLinkPortData {
    /// Identifier of the link port.
    #[schemars(length(min = 1))]
    pub vnf_link_port_id: String,
    /// Where the port lives.
    pub resource_handle: ResourceHandle,
}

/// How a VNF is terminated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TerminationType {
    /// Shut down immediately.
    Forceful,
    /// Take the VNF out of service first, waiting up to `gracefulTerminationTimeout`.
    Graceful,
}

/// `TerminateVnfRequest`: body of `POST /vnf_instances/{id}/terminate`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TerminateVnfRequest {
    /// Forceful or graceful termination.
    pub termination_type: TerminationType,
    /// Seconds to wait for graceful termination before shutting down (GRACEFUL only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graceful_termination_timeout: Option<u32>,
    /// Additional input parameters (VNF-specific).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_params: Option<KeyValuePairs>,
}

/// `HealVnfRequest`: body of `POST /vnf_instances/{id}/heal`.
///
/// SOL003 defines `cause` and `additionalParams`; `vnfcInstanceId` and `healScript` come from
/// the SOL002 variant and are accepted here too (Tacker does).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HealVnfRequest {
    /// VNFC instances to heal (`vnfcInfo[].id`); the whole VNF when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfc_instance_id: Option<Vec<String>>,
    /// Why healing is requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// Additional input parameters (VNF-specific).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_params: Option<KeyValuePairs>,
    /// Script to run for healing (SOL002).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heal_script: Option<String>,
}

/// Direction of a scale operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ScaleType {
    /// Add resources.
    ScaleOut,
    /// Remove resources.
    ScaleIn,
}

/// `ScaleVnfRequest`: body of `POST /vnf_instances/{id}/scale`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScaleVnfRequest {
    /// Scale out or in.
    #[serde(rename = "type")]
    pub scale_type: ScaleType,
    /// The scaling aspect (from the VNFD).
    #[schemars(length(min = 1))]
    pub aspect_id: String,
    /// Number of scaling steps; 1 when absent. Must be positive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub number_of_steps: Option<u32>,
    /// Additional input parameters (VNF-specific).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_params: Option<KeyValuePairs>,
}

impl ScaleVnfRequest {
    /// `numberOfSteps`, defaulting to 1 as the specification says.
    pub fn steps(&self) -> u32 {
        self.number_of_steps.unwrap_or(1)
    }
}

/// `ScaleVnfToLevelRequest`: body of `POST /vnf_instances/{id}/scale_to_level`. Exactly one of
/// `instantiationLevelId` and `scaleInfo` is present.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(extend("oneOf" = [
    {"required": ["instantiationLevelId"]},
    {"required": ["scaleInfo"]}
]))]
pub struct ScaleVnfToLevelRequest {
    /// Target instantiation level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instantiation_level_id: Option<String>,
    /// Target scale level per aspect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_info: Option<Vec<VnfScaleInfo>>,
    /// Additional input parameters (VNF-specific).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_params: Option<KeyValuePairs>,
}

/// `ChangeVnfFlavourRequest`: body of `POST /vnf_instances/{id}/change_flavour`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChangeVnfFlavourRequest {
    /// The flavour to change to.
    #[schemars(length(min = 1))]
    pub new_flavour_id: String,
    /// The instantiation level of the new flavour.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instantiation_level_id: Option<String>,
    /// External virtual links to connect the VNF to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ext_virtual_links: Option<Vec<ExtVirtualLinkData>>,
    /// Externally-managed internal virtual links.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ext_managed_virtual_links: Option<Vec<ExtManagedVirtualLinkData>>,
    /// Changes to the instance's VIM connections, keyed by VIM connection id (merge patch:
    /// `null` removes the connection the instance holds under that key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vim_connection_info: Option<VimConnectionChanges>,
    /// Additional input parameters (VNF-specific).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_params: Option<KeyValuePairs>,
    /// New `extensions` (merged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<KeyValuePairs>,
    /// New `vnfConfigurableProperties` (merged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_configurable_properties: Option<KeyValuePairs>,
}

/// Target state of an operate request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum VnfOperationalState {
    /// Running.
    Started,
    /// Stopped.
    Stopped,
}

/// How a VNF is stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum StopType {
    /// Stop immediately.
    Forceful,
    /// Stop after taking out of service, waiting up to `gracefulStopTimeout`.
    Graceful,
}

/// `OperateVnfRequest`: body of `POST /vnf_instances/{id}/operate`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OperateVnfRequest {
    /// VNFC instances to operate (SOL002); the whole VNF when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfc_instance_id: Option<Vec<String>>,
    /// The state to change to.
    pub change_state_to: VnfOperationalState,
    /// How to stop (when stopping).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_type: Option<StopType>,
    /// Seconds to wait for a graceful stop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graceful_stop_timeout: Option<u32>,
    /// Additional input parameters (VNF-specific).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_params: Option<KeyValuePairs>,
}

/// `ChangeExtVnfConnectivityRequest`: body of `POST /vnf_instances/{id}/change_ext_conn`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChangeExtVnfConnectivityRequest {
    /// External VLs to change the connectivity of.
    #[schemars(length(min = 1))]
    pub ext_virtual_links: Vec<ExtVirtualLinkData>,
    /// Changes to the instance's VIM connections, keyed by VIM connection id (merge patch:
    /// `null` removes the connection the instance holds under that key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vim_connection_info: Option<VimConnectionChanges>,
    /// Additional input parameters (VNF-specific).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_params: Option<KeyValuePairs>,
}

/// `VnfInfoModificationRequest`: body of `PATCH /vnf_instances/{id}` (JSON Merge Patch).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VnfInfoModificationRequest {
    /// New name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_instance_name: Option<String>,
    /// New description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_instance_description: Option<String>,
    /// New VNFD (of the same VNF product), without an LCM operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfd_id: Option<VnfdId>,
    /// Changes to `vnfConfigurableProperties` (merge patch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_configurable_properties: Option<KeyValuePairs>,
    /// Changes to `metadata` (merge patch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<KeyValuePairs>,
    /// Changes to `extensions` (merge patch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<KeyValuePairs>,
    /// Changes to `vimConnectionInfo` (merge patch): an entry replaces the connection with
    /// that key; a `null` entry deletes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vim_connection_info: Option<VimConnectionChanges>,
    /// Changes to the configurable properties of individual VNFCs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfc_info_modifications: Option<Vec<VnfcInfoModifications>>,
}

/// `VnfcInfoModifications`: new configurable properties of one VNFC.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VnfcInfoModifications {
    /// `vnfcInfo[].id` of the VNFC.
    #[schemars(length(min = 1))]
    pub id: String,
    /// Changes to its `vnfcConfigurableProperties` (merge patch).
    pub vnfc_configurable_properties: KeyValuePairs,
}

/// `ChangeCurrentVnfPkgRequest`: body of `POST /vnf_instances/{id}/change_vnfpkg`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChangeCurrentVnfPkgRequest {
    /// The VNFD of the package to change to.
    pub vnfd_id: VnfdId,
    /// External virtual links to connect the VNF to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ext_virtual_links: Option<Vec<ExtVirtualLinkData>>,
    /// Externally-managed internal virtual links.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ext_managed_virtual_links: Option<Vec<ExtManagedVirtualLinkData>>,
    /// Changes to the instance's VIM connections, keyed by VIM connection id (merge patch:
    /// `null` removes the connection the instance holds under that key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vim_connection_info: Option<VimConnectionChanges>,
    /// Additional input parameters (VNF-specific).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_params: Option<KeyValuePairs>,
    /// New `extensions` (merged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<KeyValuePairs>,
    /// New `vnfConfigurableProperties` (merged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_configurable_properties: Option<KeyValuePairs>,
}

/// How a running operation is cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CancelModeType {
    /// Let the current resource-management step finish, then stop.
    Graceful,
    /// Stop resource management immediately.
    Forceful,
}

/// `CancelMode`: body of `POST /vnf_lcm_op_occs/{id}/cancel`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CancelMode {
    /// The cancellation mode.
    pub cancel_mode: CancelModeType,
}
