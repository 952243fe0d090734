//! The `VnfLcmOpOcc` resource (SOL003 v3.3.1 clause 5.5.2.13): one lifecycle management
//! operation occurrence, with its state, parameters, resource changes and error.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::common::{KeyValuePairs, Link, ProblemDetails, ResourceHandle, VimConnectionInfo};
use crate::ids::{DateTime, GrantId, VnfInstanceId, VnfLcmOpOccId, VnfdId};
use crate::instance::ExtVirtualLinkInfo;
use crate::requests::{
    CancelModeType, ChangeCurrentVnfPkgRequest, ChangeExtVnfConnectivityRequest,
    ChangeVnfFlavourRequest, HealVnfRequest, InstantiateVnfRequest, OperateVnfRequest,
    ScaleVnfRequest, ScaleVnfToLevelRequest, TerminateVnfRequest, VnfInfoModificationRequest,
    VnfcInfoModifications,
};

/// `LcmOperationType`: the kind of a lifecycle operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum LcmOperationType {
    /// Instantiate VNF.
    Instantiate,
    /// Scale VNF.
    Scale,
    /// Scale VNF to level.
    ScaleToLevel,
    /// Change VNF flavour.
    ChangeFlavour,
    /// Terminate VNF.
    Terminate,
    /// Heal VNF.
    Heal,
    /// Operate VNF.
    Operate,
    /// Change external VNF connectivity.
    ChangeExtConn,
    /// Modify VNF information.
    ModifyInfo,
    /// Create VNF snapshot (v3.3.1).
    CreateSnapshot,
    /// Revert to VNF snapshot (v3.3.1).
    RevertToSnapshot,
    /// Change current VNF package (v3.3.1).
    ChangeVnfpkg,
}

/// `LcmOperationStateType`: the state of an operation occurrence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum LcmOperationStateType {
    /// Waiting for the grant (and, where used, the LCM coordination).
    Starting,
    /// Running.
    Processing,
    /// Finished successfully (final).
    Completed,
    /// Failed, may be retried, rolled back or marked failed.
    FailedTemp,
    /// Failed (final).
    Failed,
    /// Being rolled back.
    RollingBack,
    /// Rolled back (final).
    RolledBack,
}

impl LcmOperationStateType {
    /// Whether the state is final (`COMPLETED`, `FAILED`, `ROLLED_BACK`).
    pub fn is_final(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::RolledBack)
    }
}

/// `VnfLcmOpOcc`: an individual lifecycle management operation occurrence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VnfLcmOpOcc {
    /// Identifier of the occurrence.
    pub id: VnfLcmOpOccId,
    /// Current state.
    pub operation_state: LcmOperationStateType,
    /// When the current state was entered.
    pub state_entered_time: DateTime,
    /// When the operation started.
    pub start_time: DateTime,
    /// The VNF instance operated on.
    pub vnf_instance_id: VnfInstanceId,
    /// The grant obtained for the operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_id: Option<GrantId>,
    /// The operation.
    pub operation: LcmOperationType,
    /// Whether the VNFM triggered the operation itself (auto-scale, auto-heal).
    pub is_automatic_invocation: bool,
    /// The request body of the operation; see [`VnfLcmOpOcc::typed_operation_params`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_params: Option<KeyValuePairs>,
    /// Whether a cancellation is in progress.
    pub is_cancel_pending: bool,
    /// Mode of the pending cancellation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel_mode: Option<CancelModeType>,
    /// Why the operation failed (in `FAILED_TEMP`, `FAILED`, or a failed rollback).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ProblemDetails>,
    /// Resources added, removed or modified so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_changes: Option<ResourceChanges>,
    /// Changes to the instance information (MODIFY_INFO, CHANGE_VNFPKG).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_info: Option<VnfInfoModifications>,
    /// External connectivity after the operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_ext_connectivity: Option<Vec<ExtVirtualLinkInfo>>,
    /// Instance information changed by a package change (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modifications_triggered_by_vnf_pkg_change: Option<ModificationsTriggeredByVnfPkgChange>,
    /// Snapshot created or reverted to (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_snapshot_info_id: Option<String>,
    /// Warnings raised during the operation (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Vec<String>>,
    /// Links to this resource and the tasks it allows.
    #[serde(rename = "_links")]
    pub links: VnfLcmOpOccLinks,
}

/// The `operationParams` of an operation occurrence, typed by its `operation`.
#[derive(Debug, Clone, PartialEq)]
pub enum OperationParams {
    /// `INSTANTIATE`.
    Instantiate(InstantiateVnfRequest),
    /// `SCALE`.
    Scale(ScaleVnfRequest),
    /// `SCALE_TO_LEVEL`.
    ScaleToLevel(ScaleVnfToLevelRequest),
    /// `CHANGE_FLAVOUR`.
    ChangeFlavour(ChangeVnfFlavourRequest),
    /// `TERMINATE`.
    Terminate(TerminateVnfRequest),
    /// `HEAL`.
    Heal(HealVnfRequest),
    /// `OPERATE`.
    Operate(OperateVnfRequest),
    /// `CHANGE_EXT_CONN`.
    ChangeExtConn(ChangeExtVnfConnectivityRequest),
    /// `MODIFY_INFO`.
    ModifyInfo(VnfInfoModificationRequest),
    /// `CHANGE_VNFPKG`.
    ChangeVnfpkg(ChangeCurrentVnfPkgRequest),
    /// An operation whose parameters this model keeps untyped (snapshots).
    Other(KeyValuePairs),
}

impl OperationParams {
    /// The changes the request makes to the instance's `vimConnectionInfo`, when its
    /// operation carries them (INSTANTIATE, CHANGE_FLAVOUR, CHANGE_EXT_CONN, CHANGE_VNFPKG,
    /// MODIFY_INFO).
    pub fn vim_changes(&self) -> Option<&crate::requests::VimConnectionChanges> {
        match self {
            OperationParams::Instantiate(r) => r.vim_connection_info.as_ref(),
            OperationParams::ChangeFlavour(r) => r.vim_connection_info.as_ref(),
            OperationParams::ChangeExtConn(r) => r.vim_connection_info.as_ref(),
            OperationParams::ChangeVnfpkg(r) => r.vim_connection_info.as_ref(),
            OperationParams::ModifyInfo(r) => r.vim_connection_info.as_ref(),
            OperationParams::Scale(_)
            | OperationParams::ScaleToLevel(_)
            | OperationParams::Terminate(_)
            | OperationParams::Heal(_)
            | OperationParams::Operate(_)
            | OperationParams::Other(_) => None,
        }
    }
}

impl VnfLcmOpOcc {
    /// Parses `operationParams` as the request type of `operation`. Absent parameters read as
    /// an empty object.
    pub fn typed_operation_params(&self) -> Result<OperationParams, Error> {
        let params = self.operation_params.clone().unwrap_or_default();
        let value = serde_json::Value::Object(params.clone());
        let op = self.operation;
        let wrap = |e: serde_json::Error| Error::OperationParams {
            operation: op,
            source: e,
        };
        Ok(match op {
            LcmOperationType::Instantiate => {
                OperationParams::Instantiate(serde_json::from_value(value).map_err(wrap)?)
            }
            LcmOperationType::Scale => {
                OperationParams::Scale(serde_json::from_value(value).map_err(wrap)?)
            }
            LcmOperationType::ScaleToLevel => {
                OperationParams::ScaleToLevel(serde_json::from_value(value).map_err(wrap)?)
            }
            LcmOperationType::ChangeFlavour => {
                OperationParams::ChangeFlavour(serde_json::from_value(value).map_err(wrap)?)
            }
            LcmOperationType::Terminate => {
                OperationParams::Terminate(serde_json::from_value(value).map_err(wrap)?)
            }
            LcmOperationType::Heal => {
                OperationParams::Heal(serde_json::from_value(value).map_err(wrap)?)
            }
            LcmOperationType::Operate => {
                OperationParams::Operate(serde_json::from_value(value).map_err(wrap)?)
            }
            LcmOperationType::ChangeExtConn => {
                OperationParams::ChangeExtConn(serde_json::from_value(value).map_err(wrap)?)
            }
            LcmOperationType::ModifyInfo => {
                OperationParams::ModifyInfo(serde_json::from_value(value).map_err(wrap)?)
            }
            LcmOperationType::ChangeVnfpkg => {
                OperationParams::ChangeVnfpkg(serde_json::from_value(value).map_err(wrap)?)
            }
            LcmOperationType::CreateSnapshot | LcmOperationType::RevertToSnapshot => {
                OperationParams::Other(params)
            }
        })
    }
}

/// `_links` of a `VnfLcmOpOcc`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VnfLcmOpOccLinks {
    /// This resource.
    #[serde(rename = "self")]
    pub self_: Link,
    /// The VNF instance.
    pub vnf_instance: Link,
    /// The grant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant: Option<Link>,
    /// Cancel task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<Link>,
    /// Retry task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<Link>,
    /// Rollback task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback: Option<Link>,
    /// Fail task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fail: Option<Link>,
    /// The snapshot created or reverted to (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_snapshot: Option<Link>,
}

/// How a resource was changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ChangeType {
    /// Added.
    Added,
    /// Removed.
    Removed,
    /// Modified.
    Modified,
    /// Created and removed again during the operation.
    Temporary,
    /// A link port was added to the VL (virtual links only).
    LinkPortAdded,
    /// A link port was removed from the VL (virtual links only).
    LinkPortRemoved,
}

/// `resourceChanges` of an operation occurrence.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceChanges {
    /// Changed VNFCs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affected_vnfcs: Option<Vec<AffectedVnfc>>,
    /// Changed internal VLs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affected_virtual_links: Option<Vec<AffectedVirtualLink>>,
    /// Changed external link ports (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affected_ext_link_ports: Option<Vec<AffectedExtLinkPort>>,
    /// Changed storage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affected_virtual_storages: Option<Vec<AffectedVirtualStorage>>,
}

/// `AffectedVnfc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AffectedVnfc {
    /// `vnfcResourceInfo[].id` of the VNFC.
    pub id: String,
    /// Its VDU.
    pub vdu_id: String,
    /// The VNFD of the VDU (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfd_id: Option<VnfdId>,
    /// The change.
    pub change_type: ChangeType,
    /// The compute resource.
    pub compute_resource: ResourceHandle,
    /// Grant resource definition used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_definition_id: Option<String>,
    /// Resource zone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone_id: Option<String>,
    /// Metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<KeyValuePairs>,
    /// VNFC CPs affected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affected_vnfc_cp_ids: Option<Vec<String>>,
    /// Storage attached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub added_storage_resource_ids: Option<Vec<String>>,
    /// Storage detached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed_storage_resource_ids: Option<Vec<String>>,
}

/// `AffectedVirtualLink`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AffectedVirtualLink {
    /// `vnfVirtualLinkResourceInfo[].id` of the VL.
    pub id: String,
    /// Its VLD.
    pub vnf_virtual_link_desc_id: String,
    /// The VNFD of the VLD (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfd_id: Option<VnfdId>,
    /// The change.
    pub change_type: ChangeType,
    /// The network resource.
    pub network_resource: ResourceHandle,
    /// Link ports affected (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_link_port_ids: Option<Vec<String>>,
    /// Grant resource definition used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_definition_id: Option<String>,
    /// Resource zone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone_id: Option<String>,
    /// Metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<KeyValuePairs>,
}

/// `AffectedExtLinkPort` (v3.3.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AffectedExtLinkPort {
    /// Identifier of the link port.
    pub id: String,
    /// The change (`ADDED` or `REMOVED`).
    pub change_type: ChangeType,
    /// The external CP instance connected through it.
    pub ext_cp_instance_id: String,
    /// Where it lives.
    pub resource_handle: ResourceHandle,
    /// Grant resource definition used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_definition_id: Option<String>,
}

/// `AffectedVirtualStorage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AffectedVirtualStorage {
    /// `virtualStorageResourceInfo[].id` of the storage.
    pub id: String,
    /// Its virtual storage descriptor.
    pub virtual_storage_desc_id: String,
    /// The VNFD of the descriptor (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfd_id: Option<VnfdId>,
    /// The change.
    pub change_type: ChangeType,
    /// The storage resource.
    pub storage_resource: ResourceHandle,
    /// Grant resource definition used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_definition_id: Option<String>,
    /// Resource zone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone_id: Option<String>,
    /// Metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<KeyValuePairs>,
}

/// `VnfInfoModifications`: the `changedInfo` of a MODIFY_INFO (or CHANGE_VNFPKG) occurrence.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
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
    /// Changed VIM connections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vim_connection_info: Option<IndexMap<String, VimConnectionInfo>>,
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
}

/// `ModificationsTriggeredByVnfPkgChange` (v3.3.1).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModificationsTriggeredByVnfPkgChange {
    /// Changed configurable properties.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_configurable_properties: Option<KeyValuePairs>,
    /// Changed metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<KeyValuePairs>,
    /// Changed extensions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<KeyValuePairs>,
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
}
