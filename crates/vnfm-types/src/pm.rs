//! VNF performance management (SOL003 v3.3.1 clause 6, API `vnfpm/v2`): PM jobs, their
//! performance reports, thresholds, and the two PM notifications.
//!
//! In v3.3.1 a PM job and a threshold carry their own `callbackUri` (and, in the request,
//! `authentication`): the notifications about them go there. The v2.6.1 PM subscriptions
//! ([`PmSubscriptionRequest`], [`PmSubscription`], [`PmNotificationsFilter`]) are kept for
//! consumers that subscribe separately; a notification sent for one carries its
//! `subscriptionId` and `_links.subscription`, which the v3.3.1 notifications lack.
//!
//! ```
//! use vnfm_types::{CreatePmJobRequest, PmObjectType};
//!
//! let req: CreatePmJobRequest = serde_json::from_value(serde_json::json!({
//!     "objectType": "Vnf", "objectInstanceIds": ["i1"],
//!     "criteria": {"performanceMetric": ["VCpuUsageMeanVnf"],
//!                  "collectionPeriod": 5, "reportingPeriod": 10},
//!     "callbackUri": "http://nfvo.example/pm"
//! })).unwrap();
//! assert_eq!(req.object_type.parse::<PmObjectType>().unwrap(), PmObjectType::Vnf);
//! assert_eq!(req.criteria.reporting_period, 10);
//! ```

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::common::Link;
use crate::ids::{DateTime, NotificationId, SubscriptionId};
use crate::subscription::{SubscriptionAuthentication, VnfInstanceSubscriptionFilter};

/// The object types a PM job or threshold measures (SOL003 clause 6.5.4.3 `objectType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PmObjectType {
    /// A VNF instance.
    Vnf,
    /// The VNFC instances of a VNF instance.
    Vnfc,
    /// The internal connection points of a VNF instance.
    VnfIntCp,
    /// The external connection points of a VNF instance.
    VnfExtCp,
}

impl PmObjectType {
    /// Every object type.
    pub const ALL: [PmObjectType; 4] = [
        PmObjectType::Vnf,
        PmObjectType::Vnfc,
        PmObjectType::VnfIntCp,
        PmObjectType::VnfExtCp,
    ];

    /// The SOL003 v3.3.1 spelling (`Vnf`, `Vnfc`, `VnfIntCp`, `VnfExtCp`).
    pub fn as_str(self) -> &'static str {
        match self {
            PmObjectType::Vnf => "Vnf",
            PmObjectType::Vnfc => "Vnfc",
            PmObjectType::VnfIntCp => "VnfIntCp",
            PmObjectType::VnfExtCp => "VnfExtCp",
        }
    }
}

impl fmt::Display for PmObjectType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An `objectType` that is none of [`PmObjectType::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown objectType {0:?}: expected one of Vnf, Vnfc, VnfIntCp, VnfExtCp")]
pub struct UnknownObjectType(pub String);

impl FromStr for PmObjectType {
    type Err = UnknownObjectType;

    /// Any case, with the v2.6.1 / IFA 027 spellings (`VNF`, `VNFC`, `VnfIntCP`, `VnfExtCP`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PmObjectType::ALL
            .into_iter()
            .find(|t| t.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownObjectType(crate::truncate(s, 40)))
    }
}

/// `PmJobCriteria`: what a PM job collects and how often.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PmJobCriteria {
    /// Metrics to collect (`VCpuUsageMeanVnf`, ...; a `.suffix` is allowed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub performance_metric: Option<Vec<String>>,
    /// Groups of metrics to collect (`VirtualisedComputeResource`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub performance_metric_group: Option<Vec<String>>,
    /// Seconds between two collections.
    pub collection_period: u64,
    /// Seconds between two reports (a multiple of `collectionPeriod`).
    pub reporting_period: u64,
    /// When reporting stops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reporting_boundary: Option<DateTime>,
}

/// `CreatePmJobRequest`: body of `POST /vnfpm/v2/pm_jobs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreatePmJobRequest {
    /// `Vnf`, `Vnfc`, `VnfIntCp` or `VnfExtCp`.
    pub object_type: String,
    /// The measured VNF instances.
    pub object_instance_ids: Vec<String>,
    /// Sub-objects (VNFC or connection point instances) of the one object instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_object_instance_ids: Option<Vec<String>>,
    /// What to collect.
    pub criteria: PmJobCriteria,
    /// Where the notifications about the job go. Required by `/vnfpm/v2`; a job created
    /// through `/vnfpm/v1` (SOL003 v2.6.1) has none and notifies PM subscriptions only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1), url)]
    pub callback_uri: Option<String>,
    /// Credentials the VNFM uses towards the callback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<SubscriptionAuthentication>,
    /// Free-form metadata (Tacker puts its monitoring target here); not interpreted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

/// `CreatePmJobRequest` of SOL003 v2.6.1: body of `POST /vnfpm/v1/pm_jobs`. The jobs are
/// of VNF instances (no object type), without a callback of their own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatePmJobRequestV1 {
    /// The measured VNF instances.
    pub object_instance_ids: Vec<String>,
    /// VNFCs of the one VNF instance to measure (v2.6.1 names no sub-objects; accepted as
    /// in later versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_object_instance_ids: Option<Vec<String>>,
    /// What to collect.
    pub criteria: PmJobCriteria,
}

impl From<CreatePmJobRequestV1> for CreatePmJobRequest {
    /// The same job as `/vnfpm/v2` would create it: of object type `Vnf`, without callback.
    fn from(r: CreatePmJobRequestV1) -> Self {
        CreatePmJobRequest {
            object_type: "Vnf".into(),
            object_instance_ids: r.object_instance_ids,
            sub_object_instance_ids: r.sub_object_instance_ids,
            criteria: r.criteria,
            callback_uri: None,
            authentication: None,
            metadata: None,
        }
    }
}

/// `CreateThresholdRequest` of SOL003 v2.6.1: body of `POST /vnfpm/v1/thresholds`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateThresholdRequestV1 {
    /// The VNF instance.
    pub object_instance_id: String,
    /// What to watch.
    pub criteria: ThresholdCriteria,
}

impl From<CreateThresholdRequestV1> for CreateThresholdRequest {
    /// The same threshold as `/vnfpm/v2` would create it: of object type `Vnf`, without
    /// callback.
    fn from(r: CreateThresholdRequestV1) -> Self {
        CreateThresholdRequest {
            object_type: "Vnf".into(),
            object_instance_id: r.object_instance_id,
            sub_object_instance_ids: None,
            criteria: r.criteria,
            callback_uri: None,
            authentication: None,
            metadata: None,
        }
    }
}

/// A report of a [`PmJob`], as listed in the job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PmJobReport {
    /// Where to read it.
    pub href: String,
    /// When it became available.
    pub ready_time: DateTime,
    /// When it will be deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiry_time: Option<DateTime>,
    /// Its size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_size: Option<u64>,
}

/// `_links` of a [`PmJob`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PmJobLinks {
    /// This resource.
    #[serde(rename = "self")]
    pub self_: Link,
    /// The measured objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objects: Option<Vec<Link>>,
}

/// `PmJob`: a PM job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PmJob {
    /// Identifier of the job.
    pub id: String,
    /// `Vnf`, `Vnfc`, `VnfIntCp` or `VnfExtCp`.
    pub object_type: String,
    /// The measured VNF instances.
    pub object_instance_ids: Vec<String>,
    /// Sub-objects of the one object instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_object_instance_ids: Option<Vec<String>>,
    /// What is collected.
    pub criteria: PmJobCriteria,
    /// Where the notifications about the job go (none for a job created through
    /// `/vnfpm/v1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback_uri: Option<String>,
    /// The available reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reports: Option<Vec<PmJobReport>>,
    /// Links.
    #[serde(rename = "_links")]
    pub links: PmJobLinks,
}

/// `PmJobModifications`: the body of `PATCH /pm_jobs/{pmJobId}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PmJobModifications {
    /// The new callback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback_uri: Option<String>,
    /// The new callback credentials (never echoed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<SubscriptionAuthentication>,
}

/// One value of a [`PerformanceReportEntry`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PerformanceValue {
    /// When it was measured.
    pub time_stamp: DateTime,
    /// The value.
    pub value: Value,
    /// Measurement context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Value>,
}

/// The values of one metric of one object (or sub-object) in a [`PerformanceReport`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PerformanceReportEntry {
    /// The object type.
    pub object_type: String,
    /// The VNF instance.
    pub object_instance_id: String,
    /// The sub-object (VNFC or connection point instance), when measured per sub-object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_object_instance_id: Option<String>,
    /// The metric.
    pub performance_metric: String,
    /// Its values, oldest first.
    pub performance_values: Vec<PerformanceValue>,
}

/// `PerformanceReport`: what a PM job collected in one reporting period.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PerformanceReport {
    /// The entries.
    pub entries: Vec<PerformanceReportEntry>,
}

/// `thresholdType` of a threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ThresholdType {
    /// One value with a hysteresis.
    Simple,
}

/// `simpleThresholdDetails`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SimpleThresholdDetails {
    /// The value to cross.
    pub threshold_value: f64,
    /// The band around it (non-negative): crossing UP means going above `value + hysteresis`,
    /// crossing DOWN going below `value - hysteresis`.
    pub hysteresis: f64,
}

/// `ThresholdCriteria`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ThresholdCriteria {
    /// The metric.
    pub performance_metric: String,
    /// Always `SIMPLE`.
    pub threshold_type: ThresholdType,
    /// The details of a `SIMPLE` threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simple_threshold_details: Option<SimpleThresholdDetails>,
}

/// `CreateThresholdRequest`: body of `POST /vnfpm/v2/thresholds`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateThresholdRequest {
    /// `Vnf`, `Vnfc`, `VnfIntCp` or `VnfExtCp`.
    pub object_type: String,
    /// The VNF instance.
    pub object_instance_id: String,
    /// Sub-objects of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_object_instance_ids: Option<Vec<String>>,
    /// What to watch.
    pub criteria: ThresholdCriteria,
    /// Where the notifications about the threshold go. Required by `/vnfpm/v2`; a
    /// threshold created through `/vnfpm/v1` has none and notifies PM subscriptions only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1), url)]
    pub callback_uri: Option<String>,
    /// Credentials the VNFM uses towards the callback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<SubscriptionAuthentication>,
    /// Free-form metadata; not interpreted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

/// `_links` of a [`Threshold`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ThresholdLinks {
    /// This resource.
    #[serde(rename = "self")]
    pub self_: Link,
    /// The measured object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<Link>,
}

/// `Threshold`: a threshold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Threshold {
    /// Identifier of the threshold.
    pub id: String,
    /// The object type.
    pub object_type: String,
    /// The VNF instance.
    pub object_instance_id: String,
    /// Sub-objects of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_object_instance_ids: Option<Vec<String>>,
    /// What is watched.
    pub criteria: ThresholdCriteria,
    /// Where the notifications go (none for a threshold created through `/vnfpm/v1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback_uri: Option<String>,
    /// Links.
    #[serde(rename = "_links")]
    pub links: ThresholdLinks,
}

/// `ThresholdModifications`: the body of `PATCH /thresholds/{thresholdId}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ThresholdModifications {
    /// The new callback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback_uri: Option<String>,
    /// The new callback credentials (never echoed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<SubscriptionAuthentication>,
}

/// Kind of a PM notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum PmNotificationType {
    /// A PM job has a new report.
    PerformanceInformationAvailableNotification,
    /// A threshold was crossed.
    ThresholdCrossedNotification,
}

/// `PmNotificationsFilter` (v2.6.1): which PM notifications a subscription wants.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PmNotificationsFilter {
    /// Which VNF instances.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_instance_subscription_filter: Option<VnfInstanceSubscriptionFilter>,
    /// Which notification types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notification_types: Option<Vec<PmNotificationType>>,
}

/// `PmSubscriptionRequest` (v2.6.1): body of `POST .../subscriptions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PmSubscriptionRequest {
    /// Which notifications to send; all when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<PmNotificationsFilter>,
    /// Where to send them.
    #[schemars(length(min = 1), url)]
    pub callback_uri: String,
    /// Credentials the VNFM uses towards the callback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<SubscriptionAuthentication>,
}

/// `_links` of a [`PmSubscription`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PmSubscriptionLinks {
    /// This resource.
    #[serde(rename = "self")]
    pub self_: Link,
}

/// `PmSubscription` (v2.6.1): a PM subscription (never carries the request's
/// `authentication`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PmSubscription {
    /// Identifier of the subscription.
    pub id: SubscriptionId,
    /// The filter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<PmNotificationsFilter>,
    /// Where notifications are sent.
    pub callback_uri: String,
    /// Links.
    #[serde(rename = "_links")]
    pub links: PmSubscriptionLinks,
}

impl PmSubscription {
    /// The resource for a stored request: everything but the credentials.
    pub fn from_request(
        id: SubscriptionId,
        request: &PmSubscriptionRequest,
        self_href: impl Into<String>,
    ) -> Self {
        Self {
            id,
            filter: request.filter.clone(),
            callback_uri: request.callback_uri.clone(),
            links: PmSubscriptionLinks {
                self_: Link::new(self_href),
            },
        }
    }
}

/// `_links` of a [`PerformanceInformationAvailableNotification`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PerformanceInformationAvailableLinks {
    /// The subscription (v2.6.1 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscription: Option<Link>,
    /// The measured VNF instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_instance: Option<Link>,
    /// The PM job.
    pub pm_job: Link,
    /// The new report.
    pub performance_report: Link,
}

/// `PerformanceInformationAvailableNotification`: a PM job has a new report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PerformanceInformationAvailableNotification {
    /// Identifier of the notification (the same for retransmissions).
    pub id: NotificationId,
    /// Always `PerformanceInformationAvailableNotification`.
    pub notification_type: PmNotificationType,
    /// The subscription (v2.6.1 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscription_id: Option<SubscriptionId>,
    /// When the notification was generated.
    pub time_stamp: DateTime,
    /// The PM job.
    pub pm_job_id: String,
    /// The object type.
    pub object_type: String,
    /// The VNF instance.
    pub object_instance_id: String,
    /// The sub-objects measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_object_instance_ids: Option<Vec<String>>,
    /// Links.
    #[serde(rename = "_links")]
    pub links: PerformanceInformationAvailableLinks,
}

/// Which way a threshold was crossed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CrossingDirection {
    /// The value went above `thresholdValue + hysteresis`.
    Up,
    /// The value went below `thresholdValue - hysteresis`.
    Down,
}

/// `_links` of a [`ThresholdCrossedNotification`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThresholdCrossedLinks {
    /// The subscription (v2.6.1 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscription: Option<Link>,
    /// The measured VNF instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_instance: Option<Link>,
    /// The threshold.
    pub threshold: Link,
}

/// `ThresholdCrossedNotification`: a threshold was crossed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThresholdCrossedNotification {
    /// Identifier of the notification (the same for retransmissions).
    pub id: NotificationId,
    /// Always `ThresholdCrossedNotification`.
    pub notification_type: PmNotificationType,
    /// The subscription (v2.6.1 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscription_id: Option<SubscriptionId>,
    /// When the notification was generated.
    pub time_stamp: DateTime,
    /// The threshold.
    pub threshold_id: String,
    /// Which way.
    pub crossing_direction: CrossingDirection,
    /// The object type.
    pub object_type: String,
    /// The VNF instance.
    pub object_instance_id: String,
    /// The sub-object whose value crossed, when measured per sub-object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_object_instance_id: Option<String>,
    /// The metric.
    pub performance_metric: String,
    /// The value that crossed.
    pub performance_value: Value,
    /// Measurement context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Value>,
    /// Links.
    #[serde(rename = "_links")]
    pub links: ThresholdCrossedLinks,
}

/// Any PM notification, told apart by `notificationType`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum PmNotification {
    /// `PerformanceInformationAvailableNotification`.
    Available(PerformanceInformationAvailableNotification),
    /// `ThresholdCrossedNotification`.
    Crossed(ThresholdCrossedNotification),
}

impl PmNotification {
    /// The notification's type.
    pub fn notification_type(&self) -> PmNotificationType {
        match self {
            PmNotification::Available(n) => n.notification_type,
            PmNotification::Crossed(n) => n.notification_type,
        }
    }

    /// Reads a notification body, choosing the type by its `notificationType`.
    pub fn from_value(value: Value) -> Result<Self, serde_json::Error> {
        let ty = value
            .get("notificationType")
            .cloned()
            .unwrap_or(Value::Null);
        match serde_json::from_value::<PmNotificationType>(ty)? {
            PmNotificationType::PerformanceInformationAvailableNotification => {
                Ok(PmNotification::Available(serde_json::from_value(value)?))
            }
            PmNotificationType::ThresholdCrossedNotification => {
                Ok(PmNotification::Crossed(serde_json::from_value(value)?))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn object_types_read_every_spelling() {
        for (s, t) in [
            ("Vnf", PmObjectType::Vnf),
            ("VNF", PmObjectType::Vnf),
            ("VNFC", PmObjectType::Vnfc),
            ("VnfIntCP", PmObjectType::VnfIntCp),
            ("VnfExtCp", PmObjectType::VnfExtCp),
        ] {
            assert_eq!(s.parse::<PmObjectType>().unwrap(), t);
        }
        let e = "Pod".parse::<PmObjectType>().unwrap_err();
        assert!(e.to_string().contains("VnfIntCp"), "{e}");
    }

    #[test]
    fn pm_job_round_trips_every_member() {
        let v = json!({
            "id": "j1", "objectType": "Vnfc", "objectInstanceIds": ["i1"],
            "subObjectInstanceIds": ["c1"],
            "criteria": {"performanceMetric": ["VCpuUsageMeanVnf"],
                         "performanceMetricGroup": ["VirtualisedComputeResource"],
                         "collectionPeriod": 5, "reportingPeriod": 10,
                         "reportingBoundary": "2022-08-05T02:24:46Z"},
            "callbackUri": "http://nfvo/cb",
            "reports": [{"href": "/vnfpm/v2/pm_jobs/j1/reports/r1",
                         "readyTime": "2022-08-05T02:24:46Z",
                         "expiryTime": "2022-08-06T02:24:46Z", "fileSize": 12}],
            "_links": {"self": {"href": "/vnfpm/v2/pm_jobs/j1"},
                       "objects": [{"href": "/vnflcm/v2/vnf_instances/i1"}]}
        });
        let job: PmJob = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&job).unwrap(), v);
    }

    #[test]
    fn tacker_threshold_crossed_sample_reads() {
        // OpenStack Tacker's api-ref sample of a v2 ThresholdCrossedNotification.
        let v = json!({
            "id": "0aa6500e", "notificationType": "ThresholdCrossedNotification",
            "timeStamp": "2023-12-06T09:08:06Z", "thresholdId": "135db472",
            "crossingDirection": "DOWN", "objectType": "Vnf", "objectInstanceId": "c21fd71b",
            "performanceMetric": "VCpuUsageMeanVnf.c21fd71b",
            "performanceValue": "0.0004428400000000465",
            "_links": {"objectInstance": {"href": "/vnflcm/v2/vnf_instances/c21fd71b"},
                       "threshold": {"href": "/vnfpm/v2/thresholds/135db472"}}
        });
        let n = PmNotification::from_value(v.clone()).unwrap();
        let PmNotification::Crossed(c) = &n else {
            panic!("not a crossing: {n:?}");
        };
        assert_eq!(c.crossing_direction, CrossingDirection::Down);
        assert_eq!(serde_json::to_value(&n).unwrap(), v);
    }

    #[test]
    fn threshold_request_needs_the_spec_members() {
        let v = json!({
            "objectType": "Vnf", "objectInstanceId": "i1",
            "criteria": {"performanceMetric": "VCpuUsageMeanVnf", "thresholdType": "SIMPLE",
                         "simpleThresholdDetails": {"thresholdValue": 55.5, "hysteresis": 3}},
            "callbackUri": "http://nfvo/cb"
        });
        let r: CreateThresholdRequest = serde_json::from_value(v.clone()).unwrap();
        let d = r.criteria.simple_threshold_details.unwrap();
        assert_eq!((d.threshold_value, d.hysteresis), (55.5, 3.0));
        let mut bad = v;
        bad["criteria"]["thresholdType"] = json!("COMPLEX");
        assert!(serde_json::from_value::<CreateThresholdRequest>(bad).is_err());
    }

    #[test]
    fn v3_notifications_have_no_subscription() {
        let n = PerformanceInformationAvailableNotification {
            id: NotificationId::new("n1"),
            notification_type: PmNotificationType::PerformanceInformationAvailableNotification,
            subscription_id: None,
            time_stamp: DateTime::parse("2022-08-05T02:24:46Z").unwrap(),
            pm_job_id: "j1".into(),
            object_type: "Vnf".into(),
            object_instance_id: "i1".into(),
            sub_object_instance_ids: None,
            links: PerformanceInformationAvailableLinks {
                subscription: None,
                object_instance: None,
                pm_job: Link::new("/j1"),
                performance_report: Link::new("/j1/reports/r1"),
            },
        };
        let v = serde_json::to_value(&n).unwrap();
        assert!(v.get("subscriptionId").is_none());
        assert_eq!(v["_links"]["performanceReport"]["href"], "/j1/reports/r1");
        assert_eq!(v["pmJobId"], "j1");
    }
}
