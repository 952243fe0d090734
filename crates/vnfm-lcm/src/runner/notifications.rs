//! The lifecycle change notifications the runner emits, built from the occurrence or instance
//! they report (SOL003 v3.3.1 clause 5.5.2.17-19).
//!
//! The payloads are complete except for the per-subscription members: `subscriptionId` and
//! `_links.subscription` are left empty for the [`crate::ports::NotificationRouter`] to fill
//! for each subscription it routes the notification to. Every subscription receives the same
//! notification `id`, as SOL003 requires.
//!
//! A `VnfLcmOperationOccurrenceNotification` has `notificationStatus` START for the states an
//! occurrence passes through (`STARTING`, `PROCESSING`, `ROLLING_BACK`) and RESULT for the
//! states it rests in (`COMPLETED`, `FAILED_TEMP`, `FAILED`, `ROLLED_BACK`). Only RESULT
//! notifications carry the affected resources, `changedInfo` and `changedExtConnectivity`;
//! `error` is carried whenever the occurrence has one.

use vnfm_types::links::{ApiVersion, LinkTarget, ResourceLinks};
use vnfm_types::{
    DateTime, LccnLinks, LccnNotification, LcmOpOccNotificationStatus, LcmOperationStateType, Link,
    NotificationId, NotificationType, SubscriptionId, VnfIdentifierNotification, VnfInstanceId,
    VnfLcmOpOcc, VnfLcmOperationOccurrenceNotification,
};

/// START for transient states, RESULT for the states an occurrence rests in.
pub fn notification_status(state: LcmOperationStateType) -> LcmOpOccNotificationStatus {
    match state {
        LcmOperationStateType::Starting
        | LcmOperationStateType::Processing
        | LcmOperationStateType::RollingBack => LcmOpOccNotificationStatus::Start,
        LcmOperationStateType::Completed
        | LcmOperationStateType::FailedTemp
        | LcmOperationStateType::Failed
        | LcmOperationStateType::RolledBack => LcmOpOccNotificationStatus::Result,
    }
}

fn links(
    links: &dyn ResourceLinks,
    instance_id: &VnfInstanceId,
    occ: Option<&VnfLcmOpOcc>,
) -> LccnLinks {
    let version = ApiVersion::V2;
    LccnLinks {
        vnf_instance: Link::new(links.href(LinkTarget::Instance {
            version,
            id: instance_id.as_str(),
        })),
        subscription: Link::new(String::new()),
        vnf_lcm_op_occ: occ.map(|o| {
            Link::new(links.href(LinkTarget::OpOcc {
                version,
                id: o.id.as_str(),
            }))
        }),
    }
}

/// The `VnfLcmOperationOccurrenceNotification` reporting that `occ` is in its current state.
pub fn op_occ_notification(
    occ: &VnfLcmOpOcc,
    resource_links: &dyn ResourceLinks,
    at: DateTime,
) -> LccnNotification {
    let status = notification_status(occ.operation_state);
    let result = status == LcmOpOccNotificationStatus::Result;
    let changes = occ
        .resource_changes
        .clone()
        .filter(|_| result)
        .unwrap_or_default();
    LccnNotification::OperationOccurrence(Box::new(VnfLcmOperationOccurrenceNotification {
        id: NotificationId::new(super::new_uuid()),
        notification_type: NotificationType::VnfLcmOperationOccurrenceNotification,
        subscription_id: SubscriptionId::new(String::new()),
        time_stamp: at,
        notification_status: status,
        operation_state: occ.operation_state,
        vnf_instance_id: occ.vnf_instance_id.clone(),
        operation: occ.operation,
        is_automatic_invocation: occ.is_automatic_invocation,
        verbosity: None,
        vnf_lcm_op_occ_id: occ.id.clone(),
        affected_vnfcs: changes.affected_vnfcs,
        affected_virtual_links: changes.affected_virtual_links,
        affected_ext_link_ports: changes.affected_ext_link_ports,
        affected_virtual_storages: changes.affected_virtual_storages,
        changed_info: occ.changed_info.clone().filter(|_| result).map(|mut c| {
            // Inline VIM secrets (kept by a directory without a registry) never leave.
            for v in c.vim_connection_info.iter_mut().flatten() {
                crate::vim::redact_connection(v.1);
            }
            c
        }),
        changed_ext_connectivity: occ.changed_ext_connectivity.clone().filter(|_| result),
        modifications_triggered_by_vnf_pkg_change: occ
            .modifications_triggered_by_vnf_pkg_change
            .clone()
            .filter(|_| result),
        error: occ.error.clone(),
        links: links(resource_links, &occ.vnf_instance_id, Some(occ)),
    }))
}

/// A `VnfIdentifierCreationNotification` or `VnfIdentifierDeletionNotification` (by `kind`).
pub fn identifier_notification(
    kind: NotificationType,
    instance_id: &VnfInstanceId,
    resource_links: &dyn ResourceLinks,
    at: DateTime,
) -> LccnNotification {
    let n = VnfIdentifierNotification {
        id: NotificationId::new(super::new_uuid()),
        notification_type: kind,
        subscription_id: SubscriptionId::new(String::new()),
        time_stamp: at,
        vnf_instance_id: instance_id.clone(),
        links: links(resource_links, instance_id, None),
    };
    match kind {
        NotificationType::VnfIdentifierDeletionNotification => {
            LccnNotification::IdentifierDeletion(n)
        }
        _ => LccnNotification::IdentifierCreation(n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use vnfm_types::links::SolLinks;

    fn occ(state: &str) -> VnfLcmOpOcc {
        serde_json::from_value(json!({
            "id": "op1", "operationState": state, "stateEnteredTime": "2024-01-01T00:00:00Z",
            "startTime": "2024-01-01T00:00:00Z", "vnfInstanceId": "i1", "operation": "SCALE",
            "isAutomaticInvocation": false, "isCancelPending": false,
            "error": {"status": 500, "detail": "boom"},
            "resourceChanges": {"affectedVnfcs": [{
                "id": "v1", "vduId": "VDU1", "changeType": "ADDED",
                "computeResource": {"resourceId": "s1"}
            }]},
            "_links": {"self": {"href": "/o/op1"}, "vnfInstance": {"href": "/i/i1"}}
        }))
        .unwrap()
    }

    #[test]
    fn start_notifications_omit_resources_and_results_carry_them() {
        let at = DateTime::from_unix_seconds(0);
        let LccnNotification::OperationOccurrence(start) =
            op_occ_notification(&occ("PROCESSING"), &SolLinks::default(), at.clone())
        else {
            panic!("wrong kind")
        };
        assert_eq!(start.notification_status, LcmOpOccNotificationStatus::Start);
        assert!(start.affected_vnfcs.is_none());
        let LccnNotification::OperationOccurrence(result) =
            op_occ_notification(&occ("FAILED_TEMP"), &SolLinks::default(), at)
        else {
            panic!("wrong kind")
        };
        assert_eq!(
            result.notification_status,
            LcmOpOccNotificationStatus::Result
        );
        assert_eq!(result.affected_vnfcs.as_ref().map(Vec::len), Some(1));
        assert_eq!(result.error.as_ref().map(|e| e.status), Some(500));
        assert_eq!(
            result.links.vnf_lcm_op_occ.as_ref().unwrap().href,
            "/vnflcm/v2/vnf_lcm_op_occs/op1"
        );
        // The body round-trips through the typed reader.
        let v = serde_json::to_value(LccnNotification::OperationOccurrence(result)).unwrap();
        assert_eq!(v["notificationStatus"], "RESULT");
        assert!(LccnNotification::from_value(v).is_ok());
    }

    #[test]
    fn identifier_notifications_have_the_requested_type() {
        let n = identifier_notification(
            NotificationType::VnfIdentifierDeletionNotification,
            &VnfInstanceId::new("i1"),
            &SolLinks::new("/r"),
            DateTime::from_unix_seconds(0),
        );
        assert!(matches!(n, LccnNotification::IdentifierDeletion(_)));
        let v = serde_json::to_value(&n).unwrap();
        assert_eq!(v["notificationType"], "VnfIdentifierDeletionNotification");
        assert_eq!(
            v["_links"]["vnfInstance"]["href"],
            "/r/vnflcm/v2/vnf_instances/i1"
        );
    }
}
