//! The `VnfInstance` resource (SOL003 v3.3.1 clause 5.5.2.2) and its `instantiatedVnfInfo`.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::{CpProtocolInfo, KeyValuePairs, Link, ResourceHandle, VimConnectionInfo};
use crate::ids::{VnfInstanceId, VnfdId};
use crate::requests::{VnfExtCpData, VnfOperationalState};

/// Whether a VNF instance is instantiated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum InstantiationState {
    /// Created, not (or no longer) instantiated.
    NotInstantiated,
    /// Instantiated.
    Instantiated,
}

/// `VnfInstance`: an individual VNF instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VnfInstance {
    /// Identifier of the instance.
    pub id: VnfInstanceId,
    /// Name of the instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_instance_name: Option<String>,
    /// Description of the instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_instance_description: Option<String>,
    /// The VNFD the instance is based on.
    pub vnfd_id: VnfdId,
    /// Provider of the VNF (from the VNFD).
    pub vnf_provider: String,
    /// Product name of the VNF (from the VNFD).
    pub vnf_product_name: String,
    /// Software version of the VNF (from the VNFD).
    pub vnf_software_version: String,
    /// Version of the VNFD.
    pub vnfd_version: String,
    /// Configurable properties of the VNF (declared in the VNFD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_configurable_properties: Option<KeyValuePairs>,
    /// VIM connections, keyed by VIM connection id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vim_connection_info: Option<IndexMap<String, VimConnectionInfo>>,
    /// Instantiation state.
    pub instantiation_state: InstantiationState,
    /// Information present when `instantiationState` is `INSTANTIATED`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instantiated_vnf_info: Option<InstantiatedVnfInfo>,
    /// Metadata (not used by the VNFM itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<KeyValuePairs>,
    /// Extensions (declared in the VNFD, may be used by the VNFM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<KeyValuePairs>,
    /// Links to this resource and the tasks it allows.
    #[serde(rename = "_links")]
    pub links: VnfInstanceLinks,
}

/// `_links` of a `VnfInstance`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VnfInstanceLinks {
    /// This resource.
    #[serde(rename = "self")]
    pub self_: Link,
    /// Indicators of the instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub indicators: Option<Link>,
    /// Instantiate task (when `NOT_INSTANTIATED`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instantiate: Option<Link>,
    /// Terminate task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminate: Option<Link>,
    /// Scale task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<Link>,
    /// Scale-to-level task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_to_level: Option<Link>,
    /// Change-flavour task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change_flavour: Option<Link>,
    /// Heal task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heal: Option<Link>,
    /// Operate task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operate: Option<Link>,
    /// Change-external-connectivity task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change_ext_conn: Option<Link>,
    /// Create-snapshot task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create_snapshot: Option<Link>,
    /// Revert-to-snapshot task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revert_to_snapshot: Option<Link>,
}

/// `instantiatedVnfInfo` of a `VnfInstance`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstantiatedVnfInfo {
    /// The instantiated deployment flavour.
    pub flavour_id: String,
    /// Operational state of the VNF.
    pub vnf_state: VnfOperationalState,
    /// Current scale level per aspect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_status: Option<Vec<VnfScaleInfo>>,
    /// Maximum scale level per aspect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_scale_levels: Option<Vec<VnfScaleInfo>>,
    /// External CPs of the instance (mandatory, 1..N, in v3.3.1; empty means absent).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ext_cp_info: Vec<VnfExtCpInfo>,
    /// External VLs the instance is connected to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ext_virtual_link_info: Option<Vec<ExtVirtualLinkInfo>>,
    /// Externally-managed internal VLs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ext_managed_virtual_link_info: Option<Vec<ExtManagedVirtualLinkInfo>>,
    /// Active monitoring parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitoring_parameters: Option<Vec<MonitoringParameter>>,
    /// Localization language of the VNF.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub localization_language: Option<String>,
    /// Compute resources of the VNFCs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfc_resource_info: Option<Vec<VnfcResourceInfo>>,
    /// Network resources of the internal VLs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_virtual_link_resource_info: Option<Vec<VnfVirtualLinkResourceInfo>>,
    /// Storage resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtual_storage_resource_info: Option<Vec<VirtualStorageResourceInfo>>,
    /// VNFC information (state, configurable properties).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfc_info: Option<Vec<VnfcInfo>>,
    /// Implementation-specific metadata (a Tacker extension, e.g. the Heat `stack_id`; not in
    /// SOL003).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<KeyValuePairs>,
}

impl InstantiatedVnfInfo {
    /// The information of a VNF just instantiated with `flavour_id`: started, and nothing
    /// known yet of its scale, connections or resources.
    pub fn started(flavour_id: impl Into<String>) -> Self {
        InstantiatedVnfInfo {
            flavour_id: flavour_id.into(),
            vnf_state: VnfOperationalState::Started,
            scale_status: None,
            max_scale_levels: None,
            ext_cp_info: Vec::new(),
            ext_virtual_link_info: None,
            ext_managed_virtual_link_info: None,
            monitoring_parameters: None,
            localization_language: None,
            vnfc_resource_info: None,
            vnf_virtual_link_resource_info: None,
            virtual_storage_resource_info: None,
            vnfc_info: None,
            metadata: None,
        }
    }
}

/// `VnfScaleInfo`: a scale level of one aspect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VnfScaleInfo {
    /// The scaling aspect.
    #[schemars(length(min = 1))]
    pub aspect_id: String,
    /// The VNFD the aspect is declared in (v3.3.1, during a package change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfd_id: Option<VnfdId>,
    /// The scale level.
    pub scale_level: u32,
}

/// `VnfExtCpInfo`: an external CP of the instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VnfExtCpInfo {
    /// Identifier of the external CP instance.
    pub id: String,
    /// The CPD it was created from.
    pub cpd_id: String,
    /// Key of the `cpConfig` entry it was configured from. Mandatory in v3.3.1; optional
    /// here so that v2.6.1 records, which lack it, convert.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cp_config_id: Option<String>,
    /// The VNFD the CPD belongs to (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfd_id: Option<VnfdId>,
    /// Protocol information (addresses).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cp_protocol_info: Option<Vec<CpProtocolInfo>>,
    /// The external link port the CP is exposed through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ext_link_port_id: Option<String>,
    /// Metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<KeyValuePairs>,
    /// The VNFC CP the external CP is exposed by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub associated_vnfc_cp_id: Option<String>,
    /// The VIP CP the external CP is exposed by (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub associated_vip_cp_id: Option<String>,
    /// The virtual CP the external CP is exposed by (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub associated_virtual_cp_id: Option<String>,
    /// The internal VL the external CP is exposed by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub associated_vnf_virtual_link_id: Option<String>,
}

/// `ExtVirtualLinkInfo`: an external VL the instance is connected to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtVirtualLinkInfo {
    /// Identifier of the external VL (`ExtVirtualLinkData.id`).
    pub id: String,
    /// The network resource.
    pub resource_handle: ResourceHandle,
    /// Link ports of the VL used by the instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ext_link_ports: Option<Vec<ExtLinkPortInfo>>,
    /// The external CP configuration currently applied (mandatory in v3.3.1; empty means
    /// absent, as in v2.6.1 records).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub current_vnf_ext_cp_data: Vec<VnfExtCpData>,
}

/// `ExtLinkPortInfo`: a link port on an external VL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtLinkPortInfo {
    /// Identifier of the link port.
    pub id: String,
    /// Where it lives.
    pub resource_handle: ResourceHandle,
    /// The external CP instance connected through it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cp_instance_id: Option<String>,
    /// A second external CP instance (v3.3.1, e.g. for a trunk).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secondary_cp_instance_id: Option<String>,
    /// Trunk the port belongs to (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trunk_resource_id: Option<String>,
}

/// `ExtManagedVirtualLinkInfo`: an externally-managed internal VL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtManagedVirtualLinkInfo {
    /// Identifier of the VL (`ExtManagedVirtualLinkData.id`).
    pub id: String,
    /// The VLD it implements.
    pub vnf_virtual_link_desc_id: String,
    /// The VNFD the VLD belongs to (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfd_id: Option<VnfdId>,
    /// The network resource.
    pub network_resource: ResourceHandle,
    /// Link ports of the VL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_link_ports: Option<Vec<VnfLinkPortInfo>>,
    /// Multi-site VL this VL is part of (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ext_managed_multisite_virtual_link_id: Option<String>,
}

/// Kind of CP a link port connects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CpInstanceType {
    /// An internal CP of a VNFC.
    VnfcCp,
    /// An external CP.
    ExtCp,
    /// A virtual IP CP (v3.3.1).
    VipCp,
    /// A virtual CP (v3.3.1).
    VirtualCp,
}

/// `VnfLinkPortInfo`: a link port of an internal VL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VnfLinkPortInfo {
    /// Identifier of the link port.
    pub id: String,
    /// Where it lives.
    pub resource_handle: ResourceHandle,
    /// The CP instance connected through it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cp_instance_id: Option<String>,
    /// Kind of that CP instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cp_instance_type: Option<CpInstanceType>,
    /// The VIP CP instance sharing the port (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vip_cp_instance_id: Option<String>,
    /// Trunk the port belongs to (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trunk_resource_id: Option<String>,
}

/// `MonitoringParameter` of an instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MonitoringParameter {
    /// Identifier of the parameter (from the VNFD).
    pub id: String,
    /// The VNFD declaring it (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfd_id: Option<VnfdId>,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The performance metric monitored.
    pub performance_metric: String,
}

/// `VnfcResourceInfo`: the compute resource of one VNFC.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VnfcResourceInfo {
    /// Identifier of the VNFC resource.
    pub id: String,
    /// The VDU the VNFC is an instance of.
    pub vdu_id: String,
    /// The VNFD the VDU belongs to (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfd_id: Option<VnfdId>,
    /// The compute resource.
    pub compute_resource: ResourceHandle,
    /// Resource zone (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone_id: Option<String>,
    /// `virtualStorageResourceInfo[].id` of the attached storage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_resource_ids: Option<Vec<String>>,
    /// Resource reservation used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservation_id: Option<String>,
    /// CPs of the VNFC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfc_cp_info: Option<Vec<VnfcCpInfo>>,
    /// Metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<KeyValuePairs>,
}

/// `vnfcCpInfo` entry of a `VnfcResourceInfo`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VnfcCpInfo {
    /// Identifier of the VNFC CP instance.
    pub id: String,
    /// The CPD it was created from.
    pub cpd_id: String,
    /// The external CP it is exposed as, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_ext_cp_id: Option<String>,
    /// Protocol information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cp_protocol_info: Option<Vec<CpProtocolInfo>>,
    /// The internal link port it is connected through, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_link_port_id: Option<String>,
    /// Parent CP (for trunk sub-ports, v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_cp_id: Option<String>,
    /// Metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<KeyValuePairs>,
}

/// `VnfVirtualLinkResourceInfo`: the network resource of an internal VL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VnfVirtualLinkResourceInfo {
    /// Identifier of the VL resource.
    pub id: String,
    /// The VLD it implements.
    pub vnf_virtual_link_desc_id: String,
    /// The VNFD the VLD belongs to (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfd_id: Option<VnfdId>,
    /// The network resource.
    pub network_resource: ResourceHandle,
    /// Resource zone (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone_id: Option<String>,
    /// Resource reservation used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservation_id: Option<String>,
    /// Link ports of the VL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_link_ports: Option<Vec<VnfLinkPortInfo>>,
    /// Metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<KeyValuePairs>,
}

/// `VirtualStorageResourceInfo`: a storage resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VirtualStorageResourceInfo {
    /// Identifier of the storage resource.
    pub id: String,
    /// The virtual storage descriptor it implements.
    pub virtual_storage_desc_id: String,
    /// The VNFD the descriptor belongs to (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfd_id: Option<VnfdId>,
    /// The storage resource.
    pub storage_resource: ResourceHandle,
    /// Resource zone (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone_id: Option<String>,
    /// Resource reservation used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservation_id: Option<String>,
    /// Metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<KeyValuePairs>,
}

/// `VnfcInfo`: state and configurable properties of one VNFC.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VnfcInfo {
    /// Identifier of the VNFC (the `vnfcInstanceId` of heal/operate requests).
    pub id: String,
    /// The VDU the VNFC is an instance of.
    pub vdu_id: String,
    /// `vnfcResourceInfo[].id` of its compute resource. Mandatory in v3.3.1; optional here
    /// so that v2.6.1 records, which may lack it, convert.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfc_resource_info_id: Option<String>,
    /// Operational state of the VNFC.
    pub vnfc_state: VnfOperationalState,
    /// Configurable properties of the VNFC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfc_configurable_properties: Option<KeyValuePairs>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_started_vnf_shows_its_flavour_and_state_only() {
        let info = InstantiatedVnfInfo::started("simple");
        assert_eq!(
            serde_json::to_value(&info).unwrap(),
            serde_json::json!({"flavourId": "simple", "vnfState": "STARTED"})
        );
    }
}
