//! The v2.6.1 resource shapes (instance, operation occurrence, notifications) and their
//! conversions.

use super::*;

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
