//! The SOL003 Grant interface (clause 9, v3.3.1): what the VNFM asks the NFVO before it
//! changes resources (`GrantRequest`), and the NFVO's answer (`Grant`).

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::{KeyValuePairs, Link, ResourceHandle, VimConnectionInfo};
use crate::ids::{VnfInstanceId, VnfLcmOpOccId, VnfdId};
use crate::requests::{ExtManagedVirtualLinkData, ExtVirtualLinkData};

/// `GrantedLcmOperationType`: the operations that need a grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum GrantedLcmOperationType {
    /// INSTANTIATE.
    Instantiate,
    /// SCALE.
    Scale,
    /// SCALE_TO_LEVEL.
    ScaleToLevel,
    /// CHANGE_FLAVOUR.
    ChangeFlavour,
    /// TERMINATE.
    Terminate,
    /// HEAL.
    Heal,
    /// OPERATE.
    Operate,
    /// CHANGE_EXT_CONN.
    ChangeExtConn,
    /// CHANGE_VNFPKG.
    ChangeVnfpkg,
}

/// Kind of a resource in a grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ResourceDefinitionType {
    /// A VNFC's compute resource.
    Compute,
    /// An internal virtual link.
    Vl,
    /// A virtual storage.
    Storage,
    /// A link port of a VNFC's connection point.
    Linkport,
}

/// `ResourceDefinition`: one resource to add, remove or update.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceDefinition {
    /// Identifier within the grant request.
    pub id: String,
    /// Kind of resource.
    #[serde(rename = "type")]
    pub resource_type: ResourceDefinitionType,
    /// The VDU of a COMPUTE, LINKPORT or STORAGE resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vdu_id: Option<String>,
    /// The VNFD the template comes from (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfd_id: Option<VnfdId>,
    /// The descriptor of the resource in the VNFD (VDU, VnfVirtualLink, VirtualStorage, VduCp).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_template_id: Option<String>,
    /// The existing resource (for removals and updates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<ResourceHandle>,
}

/// `PlacementConstraint`: affinity or anti-affinity between resources.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlacementConstraint {
    /// `AFFINITY` or `ANTI_AFFINITY`.
    pub affinity_or_anti_affinity: String,
    /// `NFVI_POP`, `ZONE`, `ZONE_GROUP`, `NFVI_NODE`.
    pub scope: String,
    /// The resources it applies to.
    pub resource: Vec<ConstraintResourceRef>,
    /// Whether the NFVO may relax it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_best_effort: Option<bool>,
}

/// A reference to a resource in a placement constraint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConstraintResourceRef {
    /// `RES_MGMT` or `GRANT`.
    pub id_type: String,
    /// The resource definition id.
    pub resource_id: String,
}

/// Links of a grant request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GrantRequestLinks {
    /// The occurrence.
    pub vnf_lcm_op_occ: Link,
    /// The instance.
    pub vnf_instance: Link,
}

/// `GrantRequest`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GrantRequest {
    /// The VNF instance.
    pub vnf_instance_id: VnfInstanceId,
    /// The occurrence asking.
    pub vnf_lcm_op_occ_id: VnfLcmOpOccId,
    /// The VNFD.
    pub vnfd_id: VnfdId,
    /// The deployment flavour (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flavour_id: Option<String>,
    /// The operation.
    pub operation: GrantedLcmOperationType,
    /// Whether the operation was triggered automatically.
    pub is_automatic_invocation: bool,
    /// The instantiation level (INSTANTIATE, SCALE_TO_LEVEL, CHANGE_FLAVOUR).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instantiation_level_id: Option<String>,
    /// Resources to create.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub add_resources: Vec<ResourceDefinition>,
    /// Resources used only during the operation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub temp_resources: Vec<ResourceDefinition>,
    /// Resources to delete.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remove_resources: Vec<ResourceDefinition>,
    /// Resources to modify.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub update_resources: Vec<ResourceDefinition>,
    /// Placement constraints.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placement_constraints: Vec<PlacementConstraint>,
    /// The operation's additional parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_params: Option<KeyValuePairs>,
    /// Links.
    #[serde(rename = "_links")]
    pub links: GrantRequestLinks,
}

/// `ZoneInfo`: a zone the NFVO chose.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ZoneInfo {
    /// Identifier within the grant.
    pub id: String,
    /// The zone on the VIM (availability zone).
    pub zone_id: String,
    /// The `vimConnectionInfo` key of its VIM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vim_connection_id: Option<String>,
}

/// `GrantInfo`: the NFVO's decision about one resource definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GrantInfo {
    /// The resource definition of the request.
    pub resource_definition_id: String,
    /// Reservation to use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservation_id: Option<String>,
    /// The VIM (`vimConnectionInfo` key) to create it on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vim_connection_id: Option<String>,
    /// Resource provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_provider_id: Option<String>,
    /// The zone (a `zones[].id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone_id: Option<String>,
    /// Resource group (e.g. OpenStack project).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_group_id: Option<String>,
}

/// `VimComputeResourceFlavour`: VDU compute descriptor -> VIM flavour.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VimComputeResourceFlavour {
    /// The VIM (`vimConnectionInfo` key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vim_connection_id: Option<String>,
    /// The `VirtualCompute` descriptor id in the VNFD.
    pub vnfd_virtual_compute_desc_id: String,
    /// The flavour id on the VIM.
    pub vim_flavour_id: String,
}

/// `VimSoftwareImage`: VNFD software image -> VIM image.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VimSoftwareImage {
    /// The VIM (`vimConnectionInfo` key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vim_connection_id: Option<String>,
    /// The software image id in the VNFD (the VDU or storage carrying it).
    pub vnfd_software_image_id: String,
    /// The image id on the VIM.
    pub vim_software_image_id: String,
}

/// `vimAssets` of a grant.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VimAssets {
    /// Compute flavours.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compute_resource_flavours: Vec<VimComputeResourceFlavour>,
    /// Software images.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub software_images: Vec<VimSoftwareImage>,
}

/// `Grant`: the NFVO's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Grant {
    /// Identifier of the grant.
    pub id: String,
    /// The VNF instance.
    pub vnf_instance_id: VnfInstanceId,
    /// The occurrence.
    pub vnf_lcm_op_occ_id: VnfLcmOpOccId,
    /// VIMs to use, by key (override or complete the instance's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vim_connection_info: Option<IndexMap<String, VimConnectionInfo>>,
    /// Zones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zones: Vec<ZoneInfo>,
    /// Decisions about the requested additions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub add_resources: Vec<GrantInfo>,
    /// Decisions about temporary resources.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub temp_resources: Vec<GrantInfo>,
    /// Decisions about removals.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remove_resources: Vec<GrantInfo>,
    /// Decisions about updates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub update_resources: Vec<GrantInfo>,
    /// VIM flavours and images to use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vim_assets: Option<VimAssets>,
    /// External VLs to use (merged with the request's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ext_virtual_links: Option<Vec<ExtVirtualLinkData>>,
    /// Externally managed internal VLs (merged with the request's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ext_managed_virtual_links: Option<Vec<ExtManagedVirtualLinkData>>,
    /// Additional parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_params: Option<KeyValuePairs>,
    /// Links (`self`, `vnfLcmOpOcc`, `vnfInstance`).
    #[serde(rename = "_links", default, skip_serializing_if = "Option::is_none")]
    pub links: Option<KeyValuePairs>,
}

impl Grant {
    /// The zone (`zones[].zoneId`) granted for resource definition `id`, if any.
    pub fn zone_of(&self, resource_definition_id: &str) -> Option<&str> {
        let info = self
            .add_resources
            .iter()
            .find(|g| g.resource_definition_id == resource_definition_id)?;
        let zone = info.zone_id.as_deref()?;
        self.zones
            .iter()
            .find(|z| z.id == zone)
            .map(|z| z.zone_id.as_str())
    }

    /// The VIM connections the grant chose for its resources (`vimConnectionId` of the added,
    /// then updated resources, then of the zones), first use first, without repeats.
    pub fn chosen_vim_connections(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        let ids = self
            .add_resources
            .iter()
            .chain(&self.update_resources)
            .filter_map(|g| g.vim_connection_id.as_deref())
            .chain(
                self.zones
                    .iter()
                    .filter_map(|z| z.vim_connection_id.as_deref()),
            );
        for id in ids {
            if !out.contains(&id) {
                out.push(id);
            }
        }
        out
    }

    /// The VIM image granted for the software image of `vnfd_software_image_id`.
    pub fn image_for(&self, vnfd_software_image_id: &str) -> Option<&str> {
        self.vim_assets
            .as_ref()?
            .software_images
            .iter()
            .find(|i| i.vnfd_software_image_id == vnfd_software_image_id)
            .map(|i| i.vim_software_image_id.as_str())
    }

    /// The VIM flavour granted for compute descriptor `vnfd_virtual_compute_desc_id`.
    pub fn flavour_for(&self, vnfd_virtual_compute_desc_id: &str) -> Option<&str> {
        self.vim_assets
            .as_ref()?
            .compute_resource_flavours
            .iter()
            .find(|f| f.vnfd_virtual_compute_desc_id == vnfd_virtual_compute_desc_id)
            .map(|f| f.vim_flavour_id.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grant_lookups_follow_the_spec_references() {
        let g: Grant = serde_json::from_value(serde_json::json!({
            "id": "g1", "vnfInstanceId": "i1", "vnfLcmOpOccId": "o1",
            "zones": [{"id": "z1", "zoneId": "nova-az2", "vimConnectionId": "vim1"}],
            "addResources": [{"resourceDefinitionId": "r1", "zoneId": "z1", "vimConnectionId": "vim1"}],
            "vimAssets": {
                "computeResourceFlavours": [{"vnfdVirtualComputeDescId": "VDU1", "vimFlavourId": "m1.large"}],
                "softwareImages": [{"vnfdSoftwareImageId": "VDU1", "vimSoftwareImageId": "img-42"}]
            }
        }))
        .unwrap();
        assert_eq!(g.zone_of("r1"), Some("nova-az2"));
        assert_eq!(g.zone_of("r2"), None);
        assert_eq!(g.image_for("VDU1"), Some("img-42"));
        assert_eq!(g.flavour_for("VDU1"), Some("m1.large"));
        assert_eq!(g.chosen_vim_connections(), vec!["vim1"]);
        let back = serde_json::to_value(&g).unwrap();
        assert_eq!(back["zones"][0]["zoneId"], "nova-az2");
    }
}
