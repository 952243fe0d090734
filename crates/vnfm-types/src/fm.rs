//! VNF fault management (SOL003 v2.6.1 clauses 7.5.2-7.5.4, API `vnffm/v1`): alarms, their
//! modifications, FM subscriptions and the three FM notifications.
//!
//! As for the other subscriptions, the request ([`FmSubscriptionRequest`]) may carry callback
//! credentials and the resource ([`FmSubscription`]) never does. [`FmNotification`] is any of
//! the three notifications, told apart by `notificationType`.
//!
//! ```
//! use vnfm_types::{AckState, Alarm, PerceivedSeverity};
//!
//! let alarm: Alarm = serde_json::from_value(serde_json::json!({
//!     "id": "a1", "managedObjectId": "i1",
//!     "rootCauseFaultyResource": {
//!         "faultyResource": {"vimConnectionId": "v1", "resourceId": "vm-1"},
//!         "faultyResourceType": "COMPUTE"},
//!     "alarmRaisedTime": "2021-09-06T07:07:15Z", "ackState": "UNACKNOWLEDGED",
//!     "perceivedSeverity": "MAJOR", "eventTime": "2021-09-06T07:07:15Z",
//!     "eventType": "EQUIPMENT_ALARM", "probableCause": "VNFC down", "isRootCause": true,
//!     "_links": {"self": {"href": "/vnffm/v1/alarms/a1"}}
//! })).unwrap();
//! assert_eq!(alarm.perceived_severity, PerceivedSeverity::Major);
//! assert_eq!(alarm.ack_state, AckState::Unacknowledged);
//! ```

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::{Link, ResourceHandle};
use crate::ids::{DateTime, NotificationId, SubscriptionId, VnfInstanceId};
use crate::subscription::{SubscriptionAuthentication, VnfInstanceSubscriptionFilter};

/// `PerceivedSeverityType`: how urgent an alarm is (ITU-T X.733).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PerceivedSeverity {
    /// Service affecting, immediate corrective action required.
    Critical,
    /// Service affecting, urgent corrective action required.
    Major,
    /// Not service affecting, corrective action should be taken.
    Minor,
    /// A potential or impending service affecting fault.
    Warning,
    /// The severity cannot be determined.
    Indeterminate,
    /// The alarm is cleared.
    Cleared,
}

/// `EventType`: the kind of event that triggered an alarm (ITU-T X.733).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum EventType {
    /// Conveying information from one point to another.
    CommunicationsAlarm,
    /// A software or processing fault.
    ProcessingErrorAlarm,
    /// A condition of the enclosure the equipment resides in.
    EnvironmentalAlarm,
    /// A degradation of the quality of a service.
    QosAlarm,
    /// An equipment fault.
    EquipmentAlarm,
}

/// `FaultyResourceType`: the type of a faulty virtualised resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum FaultyResourceType {
    /// A virtual compute resource.
    Compute,
    /// A virtual storage resource.
    Storage,
    /// A virtual network resource.
    Network,
}

/// Acknowledgement state of an alarm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AckState {
    /// Not acknowledged yet.
    Unacknowledged,
    /// Acknowledged by the consumer.
    Acknowledged,
}

/// `FaultyResourceInfo`: the faulty virtualised resource that has a negative impact on a VNF.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FaultyResourceInfo {
    /// The resource, as the VIM knows it.
    pub faulty_resource: ResourceHandle,
    /// Its type.
    pub faulty_resource_type: FaultyResourceType,
}

/// `_links` of an [`Alarm`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AlarmLinks {
    /// This resource.
    #[serde(rename = "self")]
    pub self_: Link,
    /// The VNF instance the alarm is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_instance: Option<Link>,
}

/// `Alarm`: an alarm about a VNF instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Alarm {
    /// Identifier of the alarm.
    pub id: String,
    /// The VNF instance the alarm is about.
    pub managed_object_id: VnfInstanceId,
    /// The VNFC instances the alarm is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfc_instance_ids: Option<Vec<String>>,
    /// The faulty virtualised resource, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_cause_faulty_resource: Option<FaultyResourceInfo>,
    /// When the alarm was raised.
    pub alarm_raised_time: DateTime,
    /// When the alarm last changed (absent until it does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alarm_changed_time: Option<DateTime>,
    /// When the alarm was cleared (absent while it is not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alarm_cleared_time: Option<DateTime>,
    /// Acknowledgement state.
    pub ack_state: AckState,
    /// When the alarm was acknowledged (SOL003 v3.3.1: present while `ackState` is
    /// `ACKNOWLEDGED`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alarm_acknowledged_time: Option<DateTime>,
    /// Severity (`CLEARED` once cleared).
    pub perceived_severity: PerceivedSeverity,
    /// When the fault was observed.
    pub event_time: DateTime,
    /// The kind of event.
    pub event_type: EventType,
    /// Additional information on the type of the fault.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault_type: Option<String>,
    /// The probable cause.
    pub probable_cause: String,
    /// Whether this fault is the root of the correlated alarms.
    pub is_root_cause: bool,
    /// Other alarms this one correlates with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlated_alarm_ids: Option<Vec<String>>,
    /// Details of the fault.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault_details: Option<Vec<String>>,
    /// Links.
    #[serde(rename = "_links")]
    pub links: AlarmLinks,
}

/// `AlarmModifications`: the body of `PATCH /alarms/{alarmId}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AlarmModifications {
    /// The new acknowledgement state: `ACKNOWLEDGED`, or `UNACKNOWLEDGED` (SOL003 v3.3.1,
    /// FM API 1.3.0, permits both; v2.6.1 only the first).
    pub ack_state: AckState,
}

/// `PerceivedSeverityRequest` (SOL002 v2.6.1 clause 7.5.2.6): the body of
/// `POST /alarms/{alarmId}/escalate`, by which the EM escalates an alarm's severity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PerceivedSeverityRequest {
    /// The severity the alarm is to have (not `CLEARED`).
    pub proposed_perceived_severity: PerceivedSeverity,
}

/// Kind of an FM notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum FmNotificationType {
    /// An alarm was raised or changed.
    AlarmNotification,
    /// An alarm was cleared.
    AlarmClearedNotification,
    /// The alarm list was rebuilt: the consumer should read it again.
    AlarmListRebuiltNotification,
}

/// `FmNotificationsFilter`: which FM notifications a subscription wants. Attributes must all
/// match; the values of one attribute are alternatives; an absent (or empty) attribute matches
/// everything.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FmNotificationsFilter {
    /// Which VNF instances.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_instance_subscription_filter: Option<VnfInstanceSubscriptionFilter>,
    /// Which notification types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notification_types: Option<Vec<FmNotificationType>>,
    /// Alarms whose faulty resource has one of these types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faulty_resource_types: Option<Vec<FaultyResourceType>>,
    /// Alarms with one of these severities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perceived_severities: Option<Vec<PerceivedSeverity>>,
    /// Alarms of one of these event types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_types: Option<Vec<EventType>>,
    /// Alarms with one of these probable causes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probable_causes: Option<Vec<String>>,
}

/// `FmSubscriptionRequest`: body of `POST /vnffm/v1/subscriptions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FmSubscriptionRequest {
    /// Which notifications to send; all when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<FmNotificationsFilter>,
    /// Where to send them.
    #[schemars(length(min = 1), url)]
    pub callback_uri: String,
    /// Credentials the VNFM uses towards the callback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<SubscriptionAuthentication>,
}

/// `FmSubscription`: an FM subscription as returned by the VNFM (never carries the
/// `authentication` of the request).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FmSubscription {
    /// Identifier of the subscription.
    pub id: SubscriptionId,
    /// The filter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<FmNotificationsFilter>,
    /// Where notifications are sent.
    pub callback_uri: String,
    /// Links.
    #[serde(rename = "_links")]
    pub links: FmSubscriptionLinks,
}

impl FmSubscription {
    /// The resource for a stored request: everything but the credentials.
    pub fn from_request(
        id: SubscriptionId,
        request: &FmSubscriptionRequest,
        self_href: impl Into<String>,
    ) -> Self {
        Self {
            id,
            filter: request.filter.clone(),
            callback_uri: request.callback_uri.clone(),
            links: FmSubscriptionLinks {
                self_: Link::new(self_href),
            },
        }
    }
}

/// `_links` of an [`FmSubscription`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FmSubscriptionLinks {
    /// This resource.
    #[serde(rename = "self")]
    pub self_: Link,
}

/// `_links` of an [`AlarmNotification`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AlarmNotificationLinks {
    /// The subscription the notification is sent for.
    pub subscription: Link,
}

/// `_links` of an [`AlarmClearedNotification`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AlarmClearedNotificationLinks {
    /// The subscription the notification is sent for.
    pub subscription: Link,
    /// The cleared alarm.
    pub alarm: Link,
}

/// `_links` of an [`AlarmListRebuiltNotification`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AlarmListRebuiltNotificationLinks {
    /// The subscription the notification is sent for.
    pub subscription: Link,
    /// The alarm list.
    pub alarms: Link,
}

/// `AlarmNotification`: an alarm was raised or its severity changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AlarmNotification {
    /// Identifier of the notification (the same for retransmissions).
    pub id: NotificationId,
    /// Always `AlarmNotification`.
    pub notification_type: FmNotificationType,
    /// The subscription.
    pub subscription_id: SubscriptionId,
    /// When the notification was generated.
    pub time_stamp: DateTime,
    /// The alarm as it is now.
    pub alarm: Alarm,
    /// Links.
    #[serde(rename = "_links")]
    pub links: AlarmNotificationLinks,
}

/// `AlarmClearedNotification`: an alarm was cleared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AlarmClearedNotification {
    /// Identifier of the notification (the same for retransmissions).
    pub id: NotificationId,
    /// Always `AlarmClearedNotification`.
    pub notification_type: FmNotificationType,
    /// The subscription.
    pub subscription_id: SubscriptionId,
    /// When the notification was generated.
    pub time_stamp: DateTime,
    /// The cleared alarm.
    pub alarm_id: String,
    /// When it was cleared.
    pub alarm_cleared_time: DateTime,
    /// Links.
    #[serde(rename = "_links")]
    pub links: AlarmClearedNotificationLinks,
}

/// `AlarmListRebuiltNotification`: the alarm list was rebuilt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AlarmListRebuiltNotification {
    /// Identifier of the notification (the same for retransmissions).
    pub id: NotificationId,
    /// Always `AlarmListRebuiltNotification`.
    pub notification_type: FmNotificationType,
    /// The subscription.
    pub subscription_id: SubscriptionId,
    /// When the notification was generated.
    pub time_stamp: DateTime,
    /// Links.
    #[serde(rename = "_links")]
    pub links: AlarmListRebuiltNotificationLinks,
}

/// Any FM notification, told apart by `notificationType`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum FmNotification {
    /// `AlarmNotification`.
    Alarm(Box<AlarmNotification>),
    /// `AlarmClearedNotification`.
    Cleared(AlarmClearedNotification),
    /// `AlarmListRebuiltNotification`.
    Rebuilt(AlarmListRebuiltNotification),
}

impl FmNotification {
    /// The notification's type.
    pub fn notification_type(&self) -> FmNotificationType {
        match self {
            FmNotification::Alarm(n) => n.notification_type,
            FmNotification::Cleared(n) => n.notification_type,
            FmNotification::Rebuilt(n) => n.notification_type,
        }
    }

    /// Reads a notification body, choosing the type by its `notificationType`.
    pub fn from_value(value: serde_json::Value) -> Result<Self, serde_json::Error> {
        let ty = value
            .get("notificationType")
            .cloned()
            .unwrap_or(serde_json::Value::Null);
        match serde_json::from_value::<FmNotificationType>(ty)? {
            FmNotificationType::AlarmNotification => Ok(FmNotification::Alarm(Box::new(
                serde_json::from_value(value)?,
            ))),
            FmNotificationType::AlarmClearedNotification => {
                Ok(FmNotification::Cleared(serde_json::from_value(value)?))
            }
            FmNotificationType::AlarmListRebuiltNotification => {
                Ok(FmNotification::Rebuilt(serde_json::from_value(value)?))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn alarm() -> serde_json::Value {
        json!({
            "id": "a1", "managedObjectId": "i1", "vnfcInstanceIds": ["c1"],
            "rootCauseFaultyResource": {
                "faultyResource": {"vimConnectionId": "v1", "resourceId": "vm-1",
                                   "vimLevelResourceType": "OS::Nova::Server"},
                "faultyResourceType": "COMPUTE"},
            "alarmRaisedTime": "2021-09-06T07:07:15Z",
            "alarmChangedTime": "2021-09-06T07:08:15Z",
            "alarmClearedTime": "2021-09-06T07:09:15Z",
            "ackState": "ACKNOWLEDGED", "perceivedSeverity": "CLEARED",
            "eventTime": "2021-09-06T07:07:15Z", "eventType": "PROCESSING_ERROR_ALARM",
            "faultType": "crash", "probableCause": "process died", "isRootCause": false,
            "correlatedAlarmIds": ["a0"], "faultDetails": ["exit 137"],
            "_links": {"self": {"href": "/vnffm/v1/alarms/a1"},
                       "objectInstance": {"href": "/vnflcm/v1/vnf_instances/i1"}}
        })
    }

    #[test]
    fn alarm_round_trips_every_member() {
        let a: Alarm = serde_json::from_value(alarm()).unwrap();
        assert_eq!(a.event_type, EventType::ProcessingErrorAlarm);
        assert_eq!(
            a.root_cause_faulty_resource
                .as_ref()
                .unwrap()
                .faulty_resource_type,
            FaultyResourceType::Compute
        );
        assert_eq!(serde_json::to_value(&a).unwrap(), alarm());
    }

    #[test]
    fn modifications_accept_only_ack_state() {
        let m: AlarmModifications =
            serde_json::from_value(json!({"ackState": "ACKNOWLEDGED"})).unwrap();
        assert_eq!(m.ack_state, AckState::Acknowledged);
        assert!(serde_json::from_value::<AlarmModifications>(json!({"ackState": "X"})).is_err());
        assert!(
            serde_json::from_value::<AlarmModifications>(
                json!({"ackState": "ACKNOWLEDGED", "perceivedSeverity": "MAJOR"})
            )
            .is_err()
        );
    }

    #[test]
    fn filter_members_are_the_spec_names() {
        let v = json!({
            "vnfInstanceSubscriptionFilter": {"vnfInstanceIds": ["i1"]},
            "notificationTypes": ["AlarmNotification", "AlarmClearedNotification",
                                  "AlarmListRebuiltNotification"],
            "faultyResourceTypes": ["COMPUTE", "STORAGE", "NETWORK"],
            "perceivedSeverities": ["CRITICAL", "MAJOR", "MINOR", "WARNING",
                                    "INDETERMINATE", "CLEARED"],
            "eventTypes": ["COMMUNICATIONS_ALARM", "PROCESSING_ERROR_ALARM",
                           "ENVIRONMENTAL_ALARM", "QOS_ALARM", "EQUIPMENT_ALARM"],
            "probableCauses": ["disk full"]
        });
        let f: FmNotificationsFilter = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&f).unwrap(), v);
        assert!(serde_json::from_value::<FmNotificationsFilter>(json!({"severity": []})).is_err());
    }

    #[test]
    fn notifications_are_told_apart_by_type() {
        let cleared = json!({
            "id": "n1", "notificationType": "AlarmClearedNotification", "subscriptionId": "s1",
            "timeStamp": "2021-09-06T07:07:15Z", "alarmId": "a1",
            "alarmClearedTime": "2021-09-06T07:07:15Z",
            "_links": {"subscription": {"href": "/s1"}, "alarm": {"href": "/a1"}}
        });
        let n = FmNotification::from_value(cleared.clone()).unwrap();
        assert_eq!(
            n.notification_type(),
            FmNotificationType::AlarmClearedNotification
        );
        assert_eq!(serde_json::to_value(&n).unwrap(), cleared);
        let raised = json!({
            "id": "n2", "notificationType": "AlarmNotification", "subscriptionId": "s1",
            "timeStamp": "2021-09-06T07:07:15Z", "alarm": alarm(),
            "_links": {"subscription": {"href": "/s1"}}
        });
        let n = FmNotification::from_value(raised.clone()).unwrap();
        assert!(matches!(n, FmNotification::Alarm(_)));
        assert_eq!(serde_json::to_value(&n).unwrap(), raised);
        let rebuilt = json!({
            "id": "n3", "notificationType": "AlarmListRebuiltNotification",
            "subscriptionId": "s1", "timeStamp": "2021-09-06T07:07:15Z",
            "_links": {"subscription": {"href": "/s1"}, "alarms": {"href": "/alarms"}}
        });
        assert!(matches!(
            FmNotification::from_value(rebuilt).unwrap(),
            FmNotification::Rebuilt(_)
        ));
    }
}
