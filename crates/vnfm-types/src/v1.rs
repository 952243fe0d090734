//! SOL003 v2.6.1 (`/vnflcm/v1`) shapes that differ from v3.3.1, with conversions.
//!
//! Only types whose JSON differs have a v1 twin here; everything else is the same on both
//! API versions and v1 code uses the v3.3.1 types of the crate root directly. The v1 types
//! reuse v3.3.1 leaf types (resource handles, protocol data, affected resources ...), which
//! are supersets of their v2.6.1 counterparts.
//!
//! Conversions follow one rule: **up** (v1 → v2, `TryFrom`) fails when the v1 value says
//! something v3.3.1 cannot express (duplicate VIM connection ids, `vnfPkgId` in a
//! modification request, ...); **down** (v2 → v1, `TryFrom`) fails when the v3.3.1 value
//! carries a request that v2.6.1 cannot express (an operation type that does not exist in
//! v2.6.1, `parentCpConfigId`, `createExtLinkPort`) and drops purely informational v3.3.1
//! attributes (listed below). Errors name the attribute.
//!
//! | Where | v2.6.1 (`v1`) | v3.3.1 (`v2`) | Conversion |
//! |---|---|---|---|
//! | `vimConnectionInfo` (instance, instantiate, change flavour, change ext conn, changedInfo) | array of `VimConnectionInfo` with an `id` member | map from VIM connection id to `VimConnectionInfo` (no `id`) | `id` ↔ map key, order kept; duplicate ids fail up |
//! | `VnfExtCpData.cpConfig` | array of `VnfExtCpConfig` (`cpInstanceId`, `linkPortId`, `cpProtocolData`), as sent by Tacker v1 and the ETSI conformance tests | map from `cpConfigId` to `VnfExtCpConfig` (`parentCpConfigId`, `linkPortId`, `createExtLinkPort`, `cpProtocolData`) | up: key = `cpInstanceId`, else `<cpdId>-<index>`; down: keys dropped, `cpInstanceId` not set (it named an existing CP, a v3.3.1 key may not); `parentCpConfigId` / `createExtLinkPort` fail down |
//! | `VnfInstance.vnfPkgId` | mandatory | absent (the package is found by `vnfdId`) | dropped up; absent down |
//! | `InstantiatedVnfInfo.vnfVirtualLinkResourceInfo` | also read as `virtualLinkResourceInfo` (the ETSI v2.6.1 test schemas' name) | `vnfVirtualLinkResourceInfo` | renamed |
//! | `InstantiatedVnfInfo.maxScaleLevels` | absent | present | dropped down |
//! | `InstantiatedVnfInfo.additionalParams` (Tacker v1 extension, not SOL003) | present in Tacker v1 | absent | dropped up |
//! | `InstantiatedVnfInfo.extCpInfo` | optional | mandatory (1..N) | unchanged (the model keeps it possibly empty) |
//! | `VnfExtCpInfo.cpConfigId`, `VnfcInfo.vnfcResourceInfoId`, `ExtVirtualLinkInfo.currentVnfExtCpData` | absent / optional | mandatory | the v3.3.1 model keeps them optional so v1 records convert |
//! | `VnfInfoModificationRequest` | `vnfPkgId`, `vimConnectionInfo` array + `vimConnectionInfoDeleteIds`, `vnfcInfoModificationsDeleteIds` | `vnfdId`, `vimConnectionInfo` merge-patch map (`null` deletes) | delete ids ↔ `null` entries; `vnfPkgId` and `vnfcInfoModificationsDeleteIds` fail up |
//! | `VnfInfoModifications` (`changedInfo`) | `vnfPkgId`, `vimConnectionInfo` array, `vnfcInfoModificationsDeleteIds` | no `vnfPkgId`, map | `vnfPkgId` and delete ids dropped up |
//! | `LcmOperationType` | no `CREATE_SNAPSHOT`, `REVERT_TO_SNAPSHOT`, `CHANGE_VNFPKG` | has them | fail down |
//! | `VnfLcmOpOcc.operationParams` | v2.6.1 request shape | v3.3.1 request shape | converted with the request conversions |
//! | `VnfLcmOpOcc` / notification: `modificationsTriggeredByVnfPkgChange`, `vnfSnapshotInfoId`, `warnings`, `resourceChanges.affectedExtLinkPorts`, `verbosity` | absent | present | dropped down |
//! | `LccnSubscriptionRequest` / `LccnSubscription` `verbosity` | absent | present | same types; a v1 client does not send it |
//! | Create, Terminate, Heal, Scale, ScaleToLevel, Operate requests, `CancelMode`, `ProblemDetails`, identifier notifications | same | same | same types |

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::common::{
    CpProtocolData, KeyValuePairs, ProblemDetails, VimConnectionInfo as VimConnectionInfoV2,
};
use crate::ids::{DateTime, GrantId, NotificationId, SubscriptionId, VimId, VnfInstanceId};
use crate::ids::{VnfLcmOpOccId, VnfPkgId, VnfdId};
use crate::instance::{
    ExtManagedVirtualLinkInfo, ExtVirtualLinkInfo, InstantiationState, MonitoringParameter,
    VirtualStorageResourceInfo, VnfExtCpInfo, VnfInstanceLinks, VnfScaleInfo,
    VnfVirtualLinkResourceInfo, VnfcInfo, VnfcResourceInfo,
};
use crate::notification::{LccnLinks, LcmOpOccNotificationStatus};
use crate::op_occ::{
    AffectedVirtualLink, AffectedVirtualStorage, AffectedVnfc, LcmOperationStateType,
    LcmOperationType, ResourceChanges, VnfLcmOpOccLinks,
};
use crate::requests::{
    CancelModeType, ExtLinkPortData, ExtManagedVirtualLinkData, VnfExtCpConfig as VnfExtCpConfigV2,
    VnfOperationalState, VnfcInfoModifications,
};
use crate::subscription::NotificationType;

/// `VimConnectionInfo` of v2.6.1: the VIM connection id is a member.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VimConnectionInfo {
    /// The VIM connection id (the map key in v3.3.1).
    pub id: String,
    /// Identifier of the VIM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vim_id: Option<VimId>,
    /// Type of the VIM.
    pub vim_type: String,
    /// Interface information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface_info: Option<KeyValuePairs>,
    /// Credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_info: Option<KeyValuePairs>,
    /// VIM-type specific information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<KeyValuePairs>,
}

/// v2.6.1 `vimConnectionInfo` array to the v3.3.1 map. Fails on a duplicate id.
pub fn vim_connections_to_v2(
    list: Vec<VimConnectionInfo>,
    at: &str,
) -> Result<IndexMap<String, VimConnectionInfoV2>, Error> {
    let mut map = IndexMap::with_capacity(list.len());
    for v in list {
        let id = v.id;
        let value = VimConnectionInfoV2 {
            vim_id: v.vim_id,
            vim_type: v.vim_type,
            interface_info: v.interface_info,
            access_info: v.access_info,
            extra: v.extra,
        };
        if map.insert(id.clone(), value).is_some() {
            return Err(Error::Conversion {
                what: format!("{at}/vimConnectionInfo"),
                reason: format!(
                    "VIM connection id {:?} appears twice",
                    crate::truncate(&id, 60)
                ),
            });
        }
    }
    Ok(map)
}

/// The v3.3.1 `vimConnectionInfo` map to the v2.6.1 array, in map order.
pub fn vim_connections_to_v1(map: IndexMap<String, VimConnectionInfoV2>) -> Vec<VimConnectionInfo> {
    map.into_iter()
        .map(|(id, v)| VimConnectionInfo {
            id,
            vim_id: v.vim_id,
            vim_type: v.vim_type,
            interface_info: v.interface_info,
            access_info: v.access_info,
            extra: v.extra,
        })
        .collect()
}

fn opt_vims_to_v2(
    list: Option<Vec<VimConnectionInfo>>,
    at: &str,
) -> Result<Option<IndexMap<String, VimConnectionInfoV2>>, Error> {
    list.map(|l| vim_connections_to_v2(l, at)).transpose()
}

/// `VnfExtCpConfig` of v2.6.1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VnfExtCpConfig {
    /// Existing external CP instance to modify.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cp_instance_id: Option<String>,
    /// Pre-created link port to use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_port_id: Option<String>,
    /// Protocol data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cp_protocol_data: Option<Vec<CpProtocolData>>,
}

/// `VnfExtCpData` of v2.6.1: `cpConfig` is an array.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VnfExtCpData {
    /// The CPD.
    pub cpd_id: String,
    /// CP configurations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cp_config: Vec<VnfExtCpConfig>,
}

/// `ExtVirtualLinkData` of v2.6.1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExtVirtualLinkData {
    /// Identifier of the external VL instance.
    pub id: String,
    /// VIM connection managing the VL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vim_connection_id: Option<String>,
    /// Resource provider managing the VL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_provider_id: Option<String>,
    /// The network resource.
    pub resource_id: String,
    /// External CPs.
    pub ext_cps: Vec<VnfExtCpData>,
    /// Pre-created link ports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ext_link_ports: Option<Vec<ExtLinkPortData>>,
}

impl TryFrom<VnfExtCpData> for crate::requests::VnfExtCpData {
    type Error = Error;

    fn try_from(v: VnfExtCpData) -> Result<Self, Error> {
        let mut cp_config = IndexMap::with_capacity(v.cp_config.len());
        for (i, c) in v.cp_config.into_iter().enumerate() {
            let key = c
                .cp_instance_id
                .unwrap_or_else(|| format!("{}-{i}", v.cpd_id));
            let cfg = VnfExtCpConfigV2 {
                parent_cp_config_id: None,
                link_port_id: c.link_port_id,
                create_ext_link_port: None,
                cp_protocol_data: c.cp_protocol_data,
            };
            if cp_config.insert(key.clone(), cfg).is_some() {
                return Err(Error::Conversion {
                    what: format!("extCps[cpdId={}]/cpConfig", crate::truncate(&v.cpd_id, 60)),
                    reason: format!(
                        "two CP configurations map to the key {:?}",
                        crate::truncate(&key, 60)
                    ),
                });
            }
        }
        Ok(Self {
            cpd_id: v.cpd_id,
            cp_config,
        })
    }
}

impl TryFrom<crate::requests::VnfExtCpData> for VnfExtCpData {
    type Error = Error;

    fn try_from(v: crate::requests::VnfExtCpData) -> Result<Self, Error> {
        let mut cp_config = Vec::with_capacity(v.cp_config.len());
        for (key, c) in v.cp_config {
            let at = || {
                format!(
                    "extCps[cpdId={}]/cpConfig/{}",
                    crate::truncate(&v.cpd_id, 60),
                    crate::truncate(&key, 60)
                )
            };
            if c.parent_cp_config_id.is_some() {
                return Err(Error::Conversion {
                    what: format!("{}/parentCpConfigId", at()),
                    reason: "trunk sub-port configuration does not exist in SOL003 v2.6.1".into(),
                });
            }
            if c.create_ext_link_port.is_some() {
                return Err(Error::Conversion {
                    what: format!("{}/createExtLinkPort", at()),
                    reason: "does not exist in SOL003 v2.6.1".into(),
                });
            }
            cp_config.push(VnfExtCpConfig {
                cp_instance_id: None,
                link_port_id: c.link_port_id,
                cp_protocol_data: c.cp_protocol_data,
            });
        }
        Ok(Self {
            cpd_id: v.cpd_id,
            cp_config,
        })
    }
}

impl TryFrom<ExtVirtualLinkData> for crate::requests::ExtVirtualLinkData {
    type Error = Error;

    fn try_from(v: ExtVirtualLinkData) -> Result<Self, Error> {
        Ok(Self {
            id: v.id,
            vim_connection_id: v.vim_connection_id,
            resource_provider_id: v.resource_provider_id,
            resource_id: v.resource_id,
            ext_cps: v
                .ext_cps
                .into_iter()
                .map(TryInto::try_into)
                .collect::<Result<_, _>>()?,
            ext_link_ports: v.ext_link_ports,
        })
    }
}

impl TryFrom<crate::requests::ExtVirtualLinkData> for ExtVirtualLinkData {
    type Error = Error;

    fn try_from(v: crate::requests::ExtVirtualLinkData) -> Result<Self, Error> {
        Ok(Self {
            id: v.id,
            vim_connection_id: v.vim_connection_id,
            resource_provider_id: v.resource_provider_id,
            resource_id: v.resource_id,
            ext_cps: v
                .ext_cps
                .into_iter()
                .map(TryInto::try_into)
                .collect::<Result<_, _>>()?,
            ext_link_ports: v.ext_link_ports,
        })
    }
}

fn links_to_v2(
    v: Option<Vec<ExtVirtualLinkData>>,
) -> Result<Option<Vec<crate::requests::ExtVirtualLinkData>>, Error> {
    v.map(|l| l.into_iter().map(TryInto::try_into).collect())
        .transpose()
}

fn links_to_v1(
    v: Option<Vec<crate::requests::ExtVirtualLinkData>>,
) -> Result<Option<Vec<ExtVirtualLinkData>>, Error> {
    v.map(|l| l.into_iter().map(TryInto::try_into).collect())
        .transpose()
}

/// `InstantiateVnfRequest` of v2.6.1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InstantiateVnfRequest {
    /// The flavour.
    pub flavour_id: String,
    /// The instantiation level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instantiation_level_id: Option<String>,
    /// External VLs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ext_virtual_links: Option<Vec<ExtVirtualLinkData>>,
    /// Externally-managed internal VLs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ext_managed_virtual_links: Option<Vec<ExtManagedVirtualLinkData>>,
    /// VIM connections (array).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vim_connection_info: Option<Vec<VimConnectionInfo>>,
    /// Localization language.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub localization_language: Option<String>,
    /// Additional parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_params: Option<KeyValuePairs>,
    /// Extensions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<KeyValuePairs>,
    /// Configurable properties.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_configurable_properties: Option<KeyValuePairs>,
}

impl TryFrom<InstantiateVnfRequest> for crate::requests::InstantiateVnfRequest {
    type Error = Error;

    fn try_from(v: InstantiateVnfRequest) -> Result<Self, Error> {
        Ok(Self {
            flavour_id: v.flavour_id,
            instantiation_level_id: v.instantiation_level_id,
            ext_virtual_links: links_to_v2(v.ext_virtual_links)?,
            ext_managed_virtual_links: v.ext_managed_virtual_links,
            vim_connection_info: opt_vims_to_v2(v.vim_connection_info, "")?,
            localization_language: v.localization_language,
            additional_params: v.additional_params,
            extensions: v.extensions,
            vnf_configurable_properties: v.vnf_configurable_properties,
        })
    }
}

impl TryFrom<crate::requests::InstantiateVnfRequest> for InstantiateVnfRequest {
    type Error = Error;

    fn try_from(v: crate::requests::InstantiateVnfRequest) -> Result<Self, Error> {
        Ok(Self {
            flavour_id: v.flavour_id,
            instantiation_level_id: v.instantiation_level_id,
            ext_virtual_links: links_to_v1(v.ext_virtual_links)?,
            ext_managed_virtual_links: v.ext_managed_virtual_links,
            vim_connection_info: v.vim_connection_info.map(vim_connections_to_v1),
            localization_language: v.localization_language,
            additional_params: v.additional_params,
            extensions: v.extensions,
            vnf_configurable_properties: v.vnf_configurable_properties,
        })
    }
}

/// `ChangeVnfFlavourRequest` of v2.6.1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChangeVnfFlavourRequest {
    /// The new flavour.
    pub new_flavour_id: String,
    /// The instantiation level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instantiation_level_id: Option<String>,
    /// External VLs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ext_virtual_links: Option<Vec<ExtVirtualLinkData>>,
    /// Externally-managed internal VLs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ext_managed_virtual_links: Option<Vec<ExtManagedVirtualLinkData>>,
    /// VIM connections (array).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vim_connection_info: Option<Vec<VimConnectionInfo>>,
    /// Additional parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_params: Option<KeyValuePairs>,
    /// Extensions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<KeyValuePairs>,
    /// Configurable properties.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_configurable_properties: Option<KeyValuePairs>,
}

impl TryFrom<ChangeVnfFlavourRequest> for crate::requests::ChangeVnfFlavourRequest {
    type Error = Error;

    fn try_from(v: ChangeVnfFlavourRequest) -> Result<Self, Error> {
        Ok(Self {
            new_flavour_id: v.new_flavour_id,
            instantiation_level_id: v.instantiation_level_id,
            ext_virtual_links: links_to_v2(v.ext_virtual_links)?,
            ext_managed_virtual_links: v.ext_managed_virtual_links,
            vim_connection_info: opt_vims_to_v2(v.vim_connection_info, "")?,
            additional_params: v.additional_params,
            extensions: v.extensions,
            vnf_configurable_properties: v.vnf_configurable_properties,
        })
    }
}

impl TryFrom<crate::requests::ChangeVnfFlavourRequest> for ChangeVnfFlavourRequest {
    type Error = Error;

    fn try_from(v: crate::requests::ChangeVnfFlavourRequest) -> Result<Self, Error> {
        Ok(Self {
            new_flavour_id: v.new_flavour_id,
            instantiation_level_id: v.instantiation_level_id,
            ext_virtual_links: links_to_v1(v.ext_virtual_links)?,
            ext_managed_virtual_links: v.ext_managed_virtual_links,
            vim_connection_info: v.vim_connection_info.map(vim_connections_to_v1),
            additional_params: v.additional_params,
            extensions: v.extensions,
            vnf_configurable_properties: v.vnf_configurable_properties,
        })
    }
}

/// `ChangeExtVnfConnectivityRequest` of v2.6.1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChangeExtVnfConnectivityRequest {
    /// External VLs.
    pub ext_virtual_links: Vec<ExtVirtualLinkData>,
    /// VIM connections (array).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vim_connection_info: Option<Vec<VimConnectionInfo>>,
    /// Additional parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_params: Option<KeyValuePairs>,
}

impl TryFrom<ChangeExtVnfConnectivityRequest> for crate::requests::ChangeExtVnfConnectivityRequest {
    type Error = Error;

    fn try_from(v: ChangeExtVnfConnectivityRequest) -> Result<Self, Error> {
        Ok(Self {
            ext_virtual_links: v
                .ext_virtual_links
                .into_iter()
                .map(TryInto::try_into)
                .collect::<Result<_, _>>()?,
            vim_connection_info: opt_vims_to_v2(v.vim_connection_info, "")?,
            additional_params: v.additional_params,
        })
    }
}

impl TryFrom<crate::requests::ChangeExtVnfConnectivityRequest> for ChangeExtVnfConnectivityRequest {
    type Error = Error;

    fn try_from(v: crate::requests::ChangeExtVnfConnectivityRequest) -> Result<Self, Error> {
        Ok(Self {
            ext_virtual_links: v
                .ext_virtual_links
                .into_iter()
                .map(TryInto::try_into)
                .collect::<Result<_, _>>()?,
            vim_connection_info: v.vim_connection_info.map(vim_connections_to_v1),
            additional_params: v.additional_params,
        })
    }
}

/// `VnfInfoModificationRequest` of v2.6.1.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VnfInfoModificationRequest {
    /// New name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_instance_name: Option<String>,
    /// New description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_instance_description: Option<String>,
    /// New VNFD (accepted by Tacker's v1 API).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfd_id: Option<VnfdId>,
    /// New VNF package (v2.6.1 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_pkg_id: Option<VnfPkgId>,
    /// Changes to configurable properties.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_configurable_properties: Option<KeyValuePairs>,
    /// Changes to metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<KeyValuePairs>,
    /// Changes to extensions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<KeyValuePairs>,
    /// VIM connections to add or replace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vim_connection_info: Option<Vec<VimConnectionInfo>>,
    /// VIM connections to delete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vim_connection_info_delete_ids: Option<Vec<String>>,
    /// Changes to VNFC configurable properties.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfc_info_modifications: Option<Vec<VnfcInfoModifications>>,
    /// VNFC entries whose configurable properties are deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfc_info_modifications_delete_ids: Option<Vec<String>>,
}

impl TryFrom<VnfInfoModificationRequest> for crate::requests::VnfInfoModificationRequest {
    type Error = Error;

    fn try_from(v: VnfInfoModificationRequest) -> Result<Self, Error> {
        if v.vnf_pkg_id.is_some() {
            return Err(Error::Conversion {
                what: "/vnfPkgId".into(),
                reason: "SOL003 v3.3.1 changes the package by vnfdId; send vnfdId instead".into(),
            });
        }
        if v.vnfc_info_modifications_delete_ids
            .as_ref()
            .is_some_and(|d| !d.is_empty())
        {
            return Err(Error::Conversion {
                what: "/vnfcInfoModificationsDeleteIds".into(),
                reason: "SOL003 v3.3.1 has no way to delete VNFC information entries".into(),
            });
        }
        let vim_connection_info =
            if v.vim_connection_info.is_none() && v.vim_connection_info_delete_ids.is_none() {
                None
            } else {
                let mut map: IndexMap<String, Option<VimConnectionInfoV2>> =
                    vim_connections_to_v2(v.vim_connection_info.unwrap_or_default(), "")?
                        .into_iter()
                        .map(|(k, v)| (k, Some(v)))
                        .collect();
                for id in v.vim_connection_info_delete_ids.unwrap_or_default() {
                    if map.insert(id.clone(), None).is_some() {
                        return Err(Error::Conversion {
                            what: "/vimConnectionInfoDeleteIds".into(),
                            reason: format!(
                                "VIM connection {:?} is both updated and deleted",
                                crate::truncate(&id, 60)
                            ),
                        });
                    }
                }
                Some(map)
            };
        Ok(Self {
            vnf_instance_name: v.vnf_instance_name,
            vnf_instance_description: v.vnf_instance_description,
            vnfd_id: v.vnfd_id,
            vnf_configurable_properties: v.vnf_configurable_properties,
            metadata: v.metadata,
            extensions: v.extensions,
            vim_connection_info,
            vnfc_info_modifications: v.vnfc_info_modifications,
        })
    }
}

impl From<crate::requests::VnfInfoModificationRequest> for VnfInfoModificationRequest {
    fn from(v: crate::requests::VnfInfoModificationRequest) -> Self {
        let (mut upserts, mut deletes) = (None::<Vec<_>>, None::<Vec<_>>);
        for (id, entry) in v.vim_connection_info.into_iter().flatten() {
            match entry {
                Some(info) => upserts
                    .get_or_insert_with(Vec::new)
                    .extend(vim_connections_to_v1(IndexMap::from([(id, info)]))),
                None => deletes.get_or_insert_with(Vec::new).push(id),
            }
        }
        Self {
            vnf_instance_name: v.vnf_instance_name,
            vnf_instance_description: v.vnf_instance_description,
            vnfd_id: v.vnfd_id,
            vnf_pkg_id: None,
            vnf_configurable_properties: v.vnf_configurable_properties,
            metadata: v.metadata,
            extensions: v.extensions,
            vim_connection_info: upserts,
            vim_connection_info_delete_ids: deletes,
            vnfc_info_modifications: v.vnfc_info_modifications,
            vnfc_info_modifications_delete_ids: None,
        }
    }
}

/// `VnfInstance` of v2.6.1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VnfInstance {
    /// Identifier of the instance.
    pub id: VnfInstanceId,
    /// Name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_instance_name: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_instance_description: Option<String>,
    /// The VNFD.
    pub vnfd_id: VnfdId,
    /// Provider.
    pub vnf_provider: String,
    /// Product name.
    pub vnf_product_name: String,
    /// Software version.
    pub vnf_software_version: String,
    /// VNFD version.
    pub vnfd_version: String,
    /// The on-boarded package (mandatory in v2.6.1; absent when converted from v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_pkg_id: Option<VnfPkgId>,
    /// Configurable properties.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_configurable_properties: Option<KeyValuePairs>,
    /// VIM connections (array).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vim_connection_info: Option<Vec<VimConnectionInfo>>,
    /// Instantiation state.
    pub instantiation_state: InstantiationState,
    /// Instantiated information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instantiated_vnf_info: Option<InstantiatedVnfInfo>,
    /// Metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<KeyValuePairs>,
    /// Extensions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<KeyValuePairs>,
    /// Links.
    #[serde(rename = "_links")]
    pub links: VnfInstanceLinks,
}

/// `instantiatedVnfInfo` of v2.6.1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InstantiatedVnfInfo {
    /// The flavour.
    pub flavour_id: String,
    /// Operational state.
    pub vnf_state: VnfOperationalState,
    /// Scale levels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_status: Option<Vec<VnfScaleInfo>>,
    /// External CPs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ext_cp_info: Option<Vec<VnfExtCpInfo>>,
    /// External VLs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ext_virtual_link_info: Option<Vec<ExtVirtualLinkInfo>>,
    /// Externally-managed internal VLs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ext_managed_virtual_link_info: Option<Vec<ExtManagedVirtualLinkInfo>>,
    /// Monitoring parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitoring_parameters: Option<Vec<MonitoringParameter>>,
    /// Localization language.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub localization_language: Option<String>,
    /// VNFC compute resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfc_resource_info: Option<Vec<VnfcResourceInfo>>,
    /// Internal VL resources (`virtualLinkResourceInfo` in the ETSI v2.6.1 test schemas).
    #[serde(
        default,
        alias = "virtualLinkResourceInfo",
        skip_serializing_if = "Option::is_none"
    )]
    pub vnf_virtual_link_resource_info: Option<Vec<VnfVirtualLinkResourceInfo>>,
    /// Storage resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtual_storage_resource_info: Option<Vec<VirtualStorageResourceInfo>>,
    /// VNFC information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfc_info: Option<Vec<VnfcInfo>>,
    /// Implementation-specific metadata (Tacker extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<KeyValuePairs>,
    /// The `additionalParams` of the instantiation (Tacker v1 extension, not in SOL003).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_params: Option<KeyValuePairs>,
}

impl From<InstantiatedVnfInfo> for crate::instance::InstantiatedVnfInfo {
    fn from(v: InstantiatedVnfInfo) -> Self {
        Self {
            flavour_id: v.flavour_id,
            vnf_state: v.vnf_state,
            scale_status: v.scale_status,
            max_scale_levels: None,
            ext_cp_info: v.ext_cp_info.unwrap_or_default(),
            ext_virtual_link_info: v.ext_virtual_link_info,
            ext_managed_virtual_link_info: v.ext_managed_virtual_link_info,
            monitoring_parameters: v.monitoring_parameters,
            localization_language: v.localization_language,
            vnfc_resource_info: v.vnfc_resource_info,
            vnf_virtual_link_resource_info: v.vnf_virtual_link_resource_info,
            virtual_storage_resource_info: v.virtual_storage_resource_info,
            vnfc_info: v.vnfc_info,
            metadata: v.metadata,
        }
    }
}

impl From<crate::instance::InstantiatedVnfInfo> for InstantiatedVnfInfo {
    fn from(v: crate::instance::InstantiatedVnfInfo) -> Self {
        Self {
            flavour_id: v.flavour_id,
            vnf_state: v.vnf_state,
            scale_status: v.scale_status,
            ext_cp_info: (!v.ext_cp_info.is_empty()).then_some(v.ext_cp_info),
            ext_virtual_link_info: v.ext_virtual_link_info,
            ext_managed_virtual_link_info: v.ext_managed_virtual_link_info,
            monitoring_parameters: v.monitoring_parameters,
            localization_language: v.localization_language,
            vnfc_resource_info: v.vnfc_resource_info,
            vnf_virtual_link_resource_info: v.vnf_virtual_link_resource_info,
            virtual_storage_resource_info: v.virtual_storage_resource_info,
            vnfc_info: v.vnfc_info,
            metadata: v.metadata,
            additional_params: None,
        }
    }
}

impl TryFrom<VnfInstance> for crate::instance::VnfInstance {
    type Error = Error;

    fn try_from(v: VnfInstance) -> Result<Self, Error> {
        Ok(Self {
            id: v.id,
            vnf_instance_name: v.vnf_instance_name,
            vnf_instance_description: v.vnf_instance_description,
            vnfd_id: v.vnfd_id,
            vnf_provider: v.vnf_provider,
            vnf_product_name: v.vnf_product_name,
            vnf_software_version: v.vnf_software_version,
            vnfd_version: v.vnfd_version,
            vnf_configurable_properties: v.vnf_configurable_properties,
            vim_connection_info: opt_vims_to_v2(v.vim_connection_info, "")?,
            instantiation_state: v.instantiation_state,
            instantiated_vnf_info: v.instantiated_vnf_info.map(Into::into),
            metadata: v.metadata,
            extensions: v.extensions,
            links: v.links,
        })
    }
}

impl From<crate::instance::VnfInstance> for VnfInstance {
    fn from(v: crate::instance::VnfInstance) -> Self {
        Self {
            id: v.id,
            vnf_instance_name: v.vnf_instance_name,
            vnf_instance_description: v.vnf_instance_description,
            vnfd_id: v.vnfd_id,
            vnf_provider: v.vnf_provider,
            vnf_product_name: v.vnf_product_name,
            vnf_software_version: v.vnf_software_version,
            vnfd_version: v.vnfd_version,
            vnf_pkg_id: None,
            vnf_configurable_properties: v.vnf_configurable_properties,
            vim_connection_info: v.vim_connection_info.map(vim_connections_to_v1),
            instantiation_state: v.instantiation_state,
            instantiated_vnf_info: v.instantiated_vnf_info.map(Into::into),
            metadata: v.metadata,
            extensions: v.extensions,
            links: v.links,
        }
    }
}

/// `VnfInfoModifications` (`changedInfo`) of v2.6.1.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VnfInfoModifications {
    /// New name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_instance_name: Option<String>,
    /// New description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_instance_description: Option<String>,
    /// Changed configurable properties.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_configurable_properties: Option<KeyValuePairs>,
    /// Changed metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<KeyValuePairs>,
    /// Changed extensions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<KeyValuePairs>,
    /// Changed VIM connections (array).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vim_connection_info: Option<Vec<VimConnectionInfo>>,
    /// New package.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_pkg_id: Option<VnfPkgId>,
    /// New VNFD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfd_id: Option<VnfdId>,
    /// New provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_provider: Option<String>,
    /// New product name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_product_name: Option<String>,
    /// New software version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_software_version: Option<String>,
    /// New VNFD version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfd_version: Option<String>,
    /// Changed VNFC configurable properties.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfc_info_modifications: Option<Vec<VnfcInfoModifications>>,
    /// VNFC entries deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfc_info_modifications_delete_ids: Option<Vec<String>>,
}

impl TryFrom<VnfInfoModifications> for crate::op_occ::VnfInfoModifications {
    type Error = Error;

    fn try_from(v: VnfInfoModifications) -> Result<Self, Error> {
        Ok(Self {
            vnf_instance_name: v.vnf_instance_name,
            vnf_instance_description: v.vnf_instance_description,
            vnf_configurable_properties: v.vnf_configurable_properties,
            metadata: v.metadata,
            extensions: v.extensions,
            vim_connection_info: opt_vims_to_v2(v.vim_connection_info, "/changedInfo")?,
            vnfd_id: v.vnfd_id,
            vnf_provider: v.vnf_provider,
            vnf_product_name: v.vnf_product_name,
            vnf_software_version: v.vnf_software_version,
            vnfd_version: v.vnfd_version,
            vnfc_info_modifications: v.vnfc_info_modifications,
        })
    }
}

impl From<crate::op_occ::VnfInfoModifications> for VnfInfoModifications {
    fn from(v: crate::op_occ::VnfInfoModifications) -> Self {
        Self {
            vnf_instance_name: v.vnf_instance_name,
            vnf_instance_description: v.vnf_instance_description,
            vnf_configurable_properties: v.vnf_configurable_properties,
            metadata: v.metadata,
            extensions: v.extensions,
            vim_connection_info: v.vim_connection_info.map(vim_connections_to_v1),
            vnf_pkg_id: None,
            vnfd_id: v.vnfd_id,
            vnf_provider: v.vnf_provider,
            vnf_product_name: v.vnf_product_name,
            vnf_software_version: v.vnf_software_version,
            vnfd_version: v.vnfd_version,
            vnfc_info_modifications: v.vnfc_info_modifications,
            vnfc_info_modifications_delete_ids: None,
        }
    }
}

/// `AffectedVirtualLink` of v2.6.1: `virtualLinkDescId` (v3.3.1 renamed it
/// `vnfVirtualLinkDescId`), no `vnfdId`, `vnfLinkPortIds`, `resourceDefinitionId`, `zoneId`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AffectedVirtualLinkV1 {
    /// Identifier of the VL instance.
    pub id: String,
    /// The VLD in the VNFD.
    pub virtual_link_desc_id: String,
    /// Kind of change.
    pub change_type: crate::op_occ::ChangeType,
    /// The network resource.
    pub network_resource: crate::common::ResourceHandle,
    /// Metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<KeyValuePairs>,
}

impl From<AffectedVirtualLink> for AffectedVirtualLinkV1 {
    fn from(v: AffectedVirtualLink) -> Self {
        AffectedVirtualLinkV1 {
            id: v.id,
            virtual_link_desc_id: v.vnf_virtual_link_desc_id,
            change_type: v.change_type,
            network_resource: v.network_resource,
            metadata: v.metadata,
        }
    }
}

impl From<AffectedVirtualLinkV1> for AffectedVirtualLink {
    fn from(v: AffectedVirtualLinkV1) -> Self {
        AffectedVirtualLink {
            id: v.id,
            vnf_virtual_link_desc_id: v.virtual_link_desc_id,
            vnfd_id: None,
            change_type: v.change_type,
            network_resource: v.network_resource,
            vnf_link_port_ids: None,
            resource_definition_id: None,
            zone_id: None,
            metadata: v.metadata,
        }
    }
}

fn affected_links_to_v2(v: Option<Vec<AffectedVirtualLinkV1>>) -> Option<Vec<AffectedVirtualLink>> {
    v.map(|l| l.into_iter().map(Into::into).collect())
}

fn affected_links_to_v1(v: Option<Vec<AffectedVirtualLink>>) -> Option<Vec<AffectedVirtualLinkV1>> {
    v.map(|l| l.into_iter().map(Into::into).collect())
}

/// `ResourceChanges` of v2.6.1 (no `affectedExtLinkPorts`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceChangesV1 {
    /// Changed VNFCs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affected_vnfcs: Option<Vec<AffectedVnfc>>,
    /// Changed internal VLs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affected_virtual_links: Option<Vec<AffectedVirtualLinkV1>>,
    /// Changed storage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affected_virtual_storages: Option<Vec<AffectedVirtualStorage>>,
}

/// `VnfLcmOpOcc` of v2.6.1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VnfLcmOpOcc {
    /// Identifier of the occurrence.
    pub id: VnfLcmOpOccId,
    /// State.
    pub operation_state: LcmOperationStateType,
    /// When the state was entered.
    pub state_entered_time: DateTime,
    /// When the operation started.
    pub start_time: DateTime,
    /// The VNF instance.
    pub vnf_instance_id: VnfInstanceId,
    /// The grant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_id: Option<GrantId>,
    /// The operation (one of the v2.6.1 operations).
    pub operation: LcmOperationType,
    /// Automatic invocation.
    pub is_automatic_invocation: bool,
    /// The v2.6.1 request body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_params: Option<KeyValuePairs>,
    /// Cancellation pending.
    pub is_cancel_pending: bool,
    /// Cancellation mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel_mode: Option<CancelModeType>,
    /// Error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ProblemDetails>,
    /// Resource changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_changes: Option<ResourceChangesV1>,
    /// Changed information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_info: Option<VnfInfoModifications>,
    /// Changed external connectivity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_ext_connectivity: Option<Vec<ExtVirtualLinkInfo>>,
    /// Links.
    #[serde(rename = "_links")]
    pub links: VnfLcmOpOccLinks,
}

fn check_v1_operation(op: LcmOperationType) -> Result<LcmOperationType, Error> {
    match op {
        LcmOperationType::CreateSnapshot
        | LcmOperationType::RevertToSnapshot
        | LcmOperationType::ChangeVnfpkg => Err(Error::Conversion {
            what: "/operation".into(),
            reason: format!("{op:?} does not exist in SOL003 v2.6.1"),
        }),
        other => Ok(other),
    }
}

fn to_object<T: Serialize>(v: &T) -> Result<KeyValuePairs, Error> {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::Object(m)) => Ok(m),
        Ok(_) => Err(Error::Conversion {
            what: "/operationParams".into(),
            reason: "request did not serialize to a JSON object".into(),
        }),
        Err(source) => Err(Error::Json {
            what: "operationParams",
            source,
        }),
    }
}

fn from_object<T: serde::de::DeserializeOwned>(m: KeyValuePairs) -> Result<T, Error> {
    serde_json::from_value(serde_json::Value::Object(m)).map_err(|source| Error::Json {
        what: "operationParams",
        source,
    })
}

/// Converts `operationParams` between the versions for the operations whose request shape
/// differs; other operations' parameters are the same in both versions.
fn params_to_v2(op: LcmOperationType, p: KeyValuePairs) -> Result<KeyValuePairs, Error> {
    match op {
        LcmOperationType::Instantiate => {
            to_object(&crate::requests::InstantiateVnfRequest::try_from(
                from_object::<InstantiateVnfRequest>(p)?,
            )?)
        }
        LcmOperationType::ChangeFlavour => {
            to_object(&crate::requests::ChangeVnfFlavourRequest::try_from(
                from_object::<ChangeVnfFlavourRequest>(p)?,
            )?)
        }
        LcmOperationType::ChangeExtConn => {
            to_object(&crate::requests::ChangeExtVnfConnectivityRequest::try_from(
                from_object::<ChangeExtVnfConnectivityRequest>(p)?,
            )?)
        }
        LcmOperationType::ModifyInfo => {
            to_object(&crate::requests::VnfInfoModificationRequest::try_from(
                from_object::<VnfInfoModificationRequest>(p)?,
            )?)
        }
        _ => Ok(p),
    }
}

fn params_to_v1(op: LcmOperationType, p: KeyValuePairs) -> Result<KeyValuePairs, Error> {
    match op {
        LcmOperationType::Instantiate => {
            to_object(&InstantiateVnfRequest::try_from(from_object::<
                crate::requests::InstantiateVnfRequest,
            >(p)?)?)
        }
        LcmOperationType::ChangeFlavour => {
            to_object(&ChangeVnfFlavourRequest::try_from(from_object::<
                crate::requests::ChangeVnfFlavourRequest,
            >(p)?)?)
        }
        LcmOperationType::ChangeExtConn => {
            to_object(&ChangeExtVnfConnectivityRequest::try_from(from_object::<
                crate::requests::ChangeExtVnfConnectivityRequest,
            >(
                p
            )?)?)
        }
        LcmOperationType::ModifyInfo => {
            to_object(&VnfInfoModificationRequest::from(from_object::<
                crate::requests::VnfInfoModificationRequest,
            >(p)?))
        }
        _ => Ok(p),
    }
}

impl TryFrom<VnfLcmOpOcc> for crate::op_occ::VnfLcmOpOcc {
    type Error = Error;

    fn try_from(v: VnfLcmOpOcc) -> Result<Self, Error> {
        let operation = check_v1_operation(v.operation)?;
        Ok(Self {
            id: v.id,
            operation_state: v.operation_state,
            state_entered_time: v.state_entered_time,
            start_time: v.start_time,
            vnf_instance_id: v.vnf_instance_id,
            grant_id: v.grant_id,
            operation,
            is_automatic_invocation: v.is_automatic_invocation,
            operation_params: v
                .operation_params
                .map(|p| params_to_v2(operation, p))
                .transpose()?,
            is_cancel_pending: v.is_cancel_pending,
            cancel_mode: v.cancel_mode,
            error: v.error,
            resource_changes: v.resource_changes.map(|r| ResourceChanges {
                affected_vnfcs: r.affected_vnfcs,
                affected_virtual_links: affected_links_to_v2(r.affected_virtual_links),
                affected_ext_link_ports: None,
                affected_virtual_storages: r.affected_virtual_storages,
            }),
            changed_info: v.changed_info.map(TryInto::try_into).transpose()?,
            changed_ext_connectivity: v.changed_ext_connectivity,
            modifications_triggered_by_vnf_pkg_change: None,
            vnf_snapshot_info_id: None,
            warnings: None,
            links: v.links,
        })
    }
}

impl TryFrom<crate::op_occ::VnfLcmOpOcc> for VnfLcmOpOcc {
    type Error = Error;

    fn try_from(v: crate::op_occ::VnfLcmOpOcc) -> Result<Self, Error> {
        let operation = check_v1_operation(v.operation)?;
        Ok(Self {
            id: v.id,
            operation_state: v.operation_state,
            state_entered_time: v.state_entered_time,
            start_time: v.start_time,
            vnf_instance_id: v.vnf_instance_id,
            grant_id: v.grant_id,
            operation,
            is_automatic_invocation: v.is_automatic_invocation,
            operation_params: v
                .operation_params
                .map(|p| params_to_v1(operation, p))
                .transpose()?,
            is_cancel_pending: v.is_cancel_pending,
            cancel_mode: v.cancel_mode,
            error: v.error,
            resource_changes: v.resource_changes.map(|r| ResourceChangesV1 {
                affected_vnfcs: r.affected_vnfcs,
                affected_virtual_links: affected_links_to_v1(r.affected_virtual_links),
                affected_virtual_storages: r.affected_virtual_storages,
            }),
            changed_info: v.changed_info.map(Into::into),
            changed_ext_connectivity: v.changed_ext_connectivity,
            links: v.links,
        })
    }
}

/// `VnfLcmOperationOccurrenceNotification` of v2.6.1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VnfLcmOperationOccurrenceNotification {
    /// Identifier of the notification.
    pub id: NotificationId,
    /// Always `VnfLcmOperationOccurrenceNotification`.
    pub notification_type: NotificationType,
    /// The subscription.
    pub subscription_id: SubscriptionId,
    /// When generated.
    pub time_stamp: DateTime,
    /// Start or result.
    pub notification_status: LcmOpOccNotificationStatus,
    /// State.
    pub operation_state: LcmOperationStateType,
    /// The VNF instance.
    pub vnf_instance_id: VnfInstanceId,
    /// The operation.
    pub operation: LcmOperationType,
    /// Automatic invocation.
    pub is_automatic_invocation: bool,
    /// The occurrence.
    pub vnf_lcm_op_occ_id: VnfLcmOpOccId,
    /// Changed VNFCs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affected_vnfcs: Option<Vec<AffectedVnfc>>,
    /// Changed internal VLs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affected_virtual_links: Option<Vec<AffectedVirtualLinkV1>>,
    /// Changed storage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affected_virtual_storages: Option<Vec<AffectedVirtualStorage>>,
    /// Changed information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_info: Option<VnfInfoModifications>,
    /// Changed external connectivity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_ext_connectivity: Option<Vec<ExtVirtualLinkInfo>>,
    /// Error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ProblemDetails>,
    /// Links.
    #[serde(rename = "_links")]
    pub links: LccnLinks,
}

impl TryFrom<VnfLcmOperationOccurrenceNotification>
    for crate::notification::VnfLcmOperationOccurrenceNotification
{
    type Error = Error;

    fn try_from(v: VnfLcmOperationOccurrenceNotification) -> Result<Self, Error> {
        Ok(Self {
            id: v.id,
            notification_type: v.notification_type,
            subscription_id: v.subscription_id,
            time_stamp: v.time_stamp,
            notification_status: v.notification_status,
            operation_state: v.operation_state,
            vnf_instance_id: v.vnf_instance_id,
            operation: check_v1_operation(v.operation)?,
            is_automatic_invocation: v.is_automatic_invocation,
            verbosity: None,
            vnf_lcm_op_occ_id: v.vnf_lcm_op_occ_id,
            affected_vnfcs: v.affected_vnfcs,
            affected_virtual_links: affected_links_to_v2(v.affected_virtual_links),
            affected_ext_link_ports: None,
            affected_virtual_storages: v.affected_virtual_storages,
            changed_info: v.changed_info.map(TryInto::try_into).transpose()?,
            changed_ext_connectivity: v.changed_ext_connectivity,
            modifications_triggered_by_vnf_pkg_change: None,
            error: v.error,
            links: v.links,
        })
    }
}

impl TryFrom<crate::notification::VnfLcmOperationOccurrenceNotification>
    for VnfLcmOperationOccurrenceNotification
{
    type Error = Error;

    fn try_from(
        v: crate::notification::VnfLcmOperationOccurrenceNotification,
    ) -> Result<Self, Error> {
        Ok(Self {
            id: v.id,
            notification_type: v.notification_type,
            subscription_id: v.subscription_id,
            time_stamp: v.time_stamp,
            notification_status: v.notification_status,
            operation_state: v.operation_state,
            vnf_instance_id: v.vnf_instance_id,
            operation: check_v1_operation(v.operation)?,
            is_automatic_invocation: v.is_automatic_invocation,
            vnf_lcm_op_occ_id: v.vnf_lcm_op_occ_id,
            affected_vnfcs: v.affected_vnfcs,
            affected_virtual_links: affected_links_to_v1(v.affected_virtual_links),
            affected_virtual_storages: v.affected_virtual_storages,
            changed_info: v.changed_info.map(Into::into),
            changed_ext_connectivity: v.changed_ext_connectivity,
            error: v.error,
            links: v.links,
        })
    }
}
