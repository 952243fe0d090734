//! Lifecycle change notifications (SOL003 v3.3.1 clauses 5.5.2.17-19), sent by the VNFM to
//! subscribers' callback URIs.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::common::{Link, ProblemDetails};
use crate::ids::{DateTime, NotificationId, SubscriptionId, VnfInstanceId, VnfLcmOpOccId};
use crate::instance::ExtVirtualLinkInfo;
use crate::op_occ::{
    AffectedExtLinkPort, AffectedVirtualLink, AffectedVirtualStorage, AffectedVnfc,
    LcmOperationStateType, LcmOperationType, ModificationsTriggeredByVnfPkgChange,
    VnfInfoModifications,
};
use crate::subscription::{LcmOpOccNotificationVerbosityType, NotificationType};

/// Whether an operation occurrence notification reports the start or the result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum LcmOpOccNotificationStatus {
    /// The operation started.
    Start,
    /// The operation reached a result (final or `FAILED_TEMP`).
    Result,
}

/// `_links` of a notification (`LccnLinks`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LccnLinks {
    /// The VNF instance.
    pub vnf_instance: Link,
    /// The subscription the notification is sent for.
    pub subscription: Link,
    /// The operation occurrence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_lcm_op_occ: Option<Link>,
}

/// `VnfLcmOperationOccurrenceNotification`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VnfLcmOperationOccurrenceNotification {
    /// Identifier of the notification (the same for retransmissions).
    pub id: NotificationId,
    /// Always `VnfLcmOperationOccurrenceNotification`.
    pub notification_type: NotificationType,
    /// The subscription.
    pub subscription_id: SubscriptionId,
    /// When the notification was generated.
    pub time_stamp: DateTime,
    /// Start or result.
    pub notification_status: LcmOpOccNotificationStatus,
    /// State of the occurrence.
    pub operation_state: LcmOperationStateType,
    /// The VNF instance.
    pub vnf_instance_id: VnfInstanceId,
    /// The operation.
    pub operation: LcmOperationType,
    /// Whether the VNFM triggered the operation itself.
    pub is_automatic_invocation: bool,
    /// Verbosity of this notification (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verbosity: Option<LcmOpOccNotificationVerbosityType>,
    /// The operation occurrence.
    pub vnf_lcm_op_occ_id: VnfLcmOpOccId,
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
    /// Changed instance information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_info: Option<VnfInfoModifications>,
    /// External connectivity after the operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_ext_connectivity: Option<Vec<ExtVirtualLinkInfo>>,
    /// Instance information changed by a package change (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modifications_triggered_by_vnf_pkg_change: Option<ModificationsTriggeredByVnfPkgChange>,
    /// Why the operation failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ProblemDetails>,
    /// Links.
    #[serde(rename = "_links")]
    pub links: LccnLinks,
}

/// `VnfIdentifierCreationNotification` and `VnfIdentifierDeletionNotification` share this
/// shape; `notificationType` tells them apart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VnfIdentifierNotification {
    /// Identifier of the notification.
    pub id: NotificationId,
    /// `VnfIdentifierCreationNotification` or `VnfIdentifierDeletionNotification`.
    pub notification_type: NotificationType,
    /// The subscription.
    pub subscription_id: SubscriptionId,
    /// When the notification was generated.
    pub time_stamp: DateTime,
    /// The VNF instance created or deleted.
    pub vnf_instance_id: VnfInstanceId,
    /// Links.
    #[serde(rename = "_links")]
    pub links: LccnLinks,
}

/// `VnfIdentifierCreationNotification`.
pub type VnfIdentifierCreationNotification = VnfIdentifierNotification;
/// `VnfIdentifierDeletionNotification`.
pub type VnfIdentifierDeletionNotification = VnfIdentifierNotification;

/// Any lifecycle change notification, told apart by `notificationType`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum LccnNotification {
    /// An operation occurrence notification.
    OperationOccurrence(Box<VnfLcmOperationOccurrenceNotification>),
    /// A VNF instance was created.
    IdentifierCreation(VnfIdentifierCreationNotification),
    /// A VNF instance was deleted.
    IdentifierDeletion(VnfIdentifierDeletionNotification),
}

impl LccnNotification {
    /// Reads a notification body, dispatching on its `notificationType` and checking that the
    /// type matches the shape.
    pub fn from_value(value: serde_json::Value) -> Result<Self, Error> {
        let ty = value
            .get("notificationType")
            .cloned()
            .ok_or(Error::MissingNotificationType)?;
        let ty: NotificationType = serde_json::from_value(ty).map_err(|source| Error::Json {
            what: "notificationType",
            source,
        })?;
        let what = "notification body";
        Ok(match ty {
            NotificationType::VnfLcmOperationOccurrenceNotification => Self::OperationOccurrence(
                serde_json::from_value(value).map_err(|source| Error::Json { what, source })?,
            ),
            NotificationType::VnfIdentifierCreationNotification => Self::IdentifierCreation(
                serde_json::from_value(value).map_err(|source| Error::Json { what, source })?,
            ),
            NotificationType::VnfIdentifierDeletionNotification => Self::IdentifierDeletion(
                serde_json::from_value(value).map_err(|source| Error::Json { what, source })?,
            ),
        })
    }

    /// The `notificationType`.
    pub fn notification_type(&self) -> NotificationType {
        match self {
            Self::OperationOccurrence(_) => NotificationType::VnfLcmOperationOccurrenceNotification,
            Self::IdentifierCreation(_) => NotificationType::VnfIdentifierCreationNotification,
            Self::IdentifierDeletion(_) => NotificationType::VnfIdentifierDeletionNotification,
        }
    }
}
