//! The v2.6.1 request shapes (external connectivity, instantiate, change flavour, change
//! external connectivity, modify information) and their conversions.

use super::*;

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

/// Each of `v` converted.
fn each<T: TryInto<U, Error = Error>, U>(v: Vec<T>) -> Result<Vec<U>, Error> {
    v.into_iter().map(TryInto::try_into).collect()
}

/// Each of `v`, if given, converted.
fn each_given<T: TryInto<U, Error = Error>, U>(v: Option<Vec<T>>) -> Result<Option<Vec<U>>, Error> {
    v.map(each).transpose()
}

/// The conversions both ways between a v2.6.1 request and its v3.3.1 form, whose members are
/// the same (`$same`) but for the external virtual links (converted one by one with `$links`,
/// [`each`] or [`each_given`]) and the VIM connections (an array in v2.6.1, a map in v3.3.1).
macro_rules! request_conversions {
    ($name:ident, $links:ident, [$($same:ident),* $(,)?]) => {
        impl TryFrom<$name> for crate::requests::$name {
            type Error = Error;

            fn try_from(v: $name) -> Result<Self, Error> {
                Ok(Self {
                    ext_virtual_links: $links(v.ext_virtual_links)?,
                    vim_connection_info: opt_changes_to_v2(v.vim_connection_info, "")?,
                    $($same: v.$same,)*
                })
            }
        }

        impl TryFrom<crate::requests::$name> for $name {
            type Error = Error;

            fn try_from(v: crate::requests::$name) -> Result<Self, Error> {
                Ok(Self {
                    ext_virtual_links: $links(v.ext_virtual_links)?,
                    vim_connection_info: v.vim_connection_info.map(changes_to_v1),
                    $($same: v.$same,)*
                })
            }
        }
    };
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

request_conversions!(
    InstantiateVnfRequest,
    each_given,
    [
        flavour_id,
        instantiation_level_id,
        ext_managed_virtual_links,
        localization_language,
        additional_params,
        extensions,
        vnf_configurable_properties,
    ]
);

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

request_conversions!(
    ChangeVnfFlavourRequest,
    each_given,
    [
        new_flavour_id,
        instantiation_level_id,
        ext_managed_virtual_links,
        additional_params,
        extensions,
        vnf_configurable_properties,
    ]
);

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

request_conversions!(ChangeExtVnfConnectivityRequest, each, [additional_params]);

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
