//! VNF indicators (SOL003 v2.6.1 clause 8, API `vnfind/v1`): the indicator values of VNF
//! instances, indicator subscriptions and `VnfIndicatorValueChangeNotification`.
//!
//! An indicator is declared in the VNFD; its value is whatever JSON the VNFD says it is (a
//! number when it is computed from a monitoring query).
//!
//! ```
//! use vnfm_types::{VnfIndicator, VnfIndicatorSubscriptionRequest};
//!
//! let request: VnfIndicatorSubscriptionRequest = serde_json::from_value(serde_json::json!({
//!     "filter": {"indicatorIds": ["load"]},
//!     "callbackUri": "http://nfvo.example/indicators"
//! })).unwrap();
//! assert!(request.filter.unwrap().matches_indicator("load"));
//! let indicator: VnfIndicator = serde_json::from_value(serde_json::json!({
//!     "id": "load", "value": 0.75, "vnfInstanceId": "i1",
//!     "_links": {"self": {"href": "/vnfind/v1/indicators/i1/load"},
//!                "vnfInstance": {"href": "/vnflcm/v1/vnf_instances/i1"}}
//! })).unwrap();
//! assert_eq!(indicator.value, serde_json::json!(0.75));
//! ```

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::Link;
use crate::ids::{DateTime, NotificationId, SubscriptionId, VnfInstanceId};
use crate::subscription::{SubscriptionAuthentication, VnfInstanceSubscriptionFilter};

/// `VnfIndicator`: the current value of one indicator of one VNF instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VnfIndicator {
    /// The indicator's id in the VNFD.
    pub id: String,
    /// Its human-readable name, when the VNFD gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its value, in the format the VNFD defines.
    pub value: serde_json::Value,
    /// The VNF instance.
    pub vnf_instance_id: VnfInstanceId,
    /// Links.
    #[serde(rename = "_links")]
    pub links: VnfIndicatorLinks,
}

/// `_links` of a [`VnfIndicator`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VnfIndicatorLinks {
    /// This resource.
    #[serde(rename = "self")]
    pub self_: Link,
    /// The VNF instance.
    pub vnf_instance: Link,
}

/// `VnfIndicatorNotificationsFilter`: which indicator value changes a subscription wants.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VnfIndicatorNotificationsFilter {
    /// Which VNF instances.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_instance_subscription_filter: Option<VnfInstanceSubscriptionFilter>,
    /// Which indicators (ids in the VNFD); all when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub indicator_ids: Option<Vec<String>>,
}

impl VnfIndicatorNotificationsFilter {
    /// Whether the `indicatorIds` part lets changes of `indicator_id` through.
    pub fn matches_indicator(&self, indicator_id: &str) -> bool {
        self.indicator_ids
            .as_ref()
            .is_none_or(|ids| ids.is_empty() || ids.iter().any(|i| i == indicator_id))
    }
}

/// `VnfIndicatorSubscriptionRequest`: body of `POST /vnfind/v1/subscriptions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VnfIndicatorSubscriptionRequest {
    /// Which notifications to send; all when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<VnfIndicatorNotificationsFilter>,
    /// Where to send them.
    #[schemars(length(min = 1), url)]
    pub callback_uri: String,
    /// Credentials the VNFM uses towards the callback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<SubscriptionAuthentication>,
}

/// `VnfIndicatorSubscription`: an indicator subscription as returned by the VNFM (never
/// carries the `authentication` of the request).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VnfIndicatorSubscription {
    /// Identifier of the subscription.
    pub id: SubscriptionId,
    /// The filter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<VnfIndicatorNotificationsFilter>,
    /// Where notifications are sent.
    pub callback_uri: String,
    /// Links.
    #[serde(rename = "_links")]
    pub links: VnfIndicatorSubscriptionLinks,
}

impl VnfIndicatorSubscription {
    /// The resource for a stored request: everything but the credentials.
    pub fn from_request(
        id: SubscriptionId,
        request: &VnfIndicatorSubscriptionRequest,
        self_href: impl Into<String>,
    ) -> Self {
        Self {
            id,
            filter: request.filter.clone(),
            callback_uri: request.callback_uri.clone(),
            links: VnfIndicatorSubscriptionLinks {
                self_: Link::new(self_href),
            },
        }
    }
}

/// `_links` of a [`VnfIndicatorSubscription`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct VnfIndicatorSubscriptionLinks {
    /// This resource.
    #[serde(rename = "self")]
    pub self_: Link,
}

/// `VnfIndicatorValueChangeNotification`: an indicator of a VNF instance has a new value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VnfIndicatorValueChangeNotification {
    /// Identifier of the notification (the same for retransmissions).
    pub id: NotificationId,
    /// Always `VnfIndicatorValueChangeNotification`.
    pub notification_type: String,
    /// The subscription.
    pub subscription_id: SubscriptionId,
    /// When the notification was generated.
    pub time_stamp: DateTime,
    /// The indicator's id in the VNFD.
    pub vnf_indicator_id: String,
    /// Its name, when the VNFD gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The new value.
    pub value: serde_json::Value,
    /// The VNF instance.
    pub vnf_instance_id: VnfInstanceId,
    /// Links.
    #[serde(rename = "_links")]
    pub links: VnfIndicatorValueChangeNotificationLinks,
}

/// The `notificationType` of a [`VnfIndicatorValueChangeNotification`].
pub const VNF_INDICATOR_VALUE_CHANGE: &str = "VnfIndicatorValueChangeNotification";

/// `_links` of a [`VnfIndicatorValueChangeNotification`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VnfIndicatorValueChangeNotificationLinks {
    /// The VNF instance.
    pub vnf_instance: Link,
    /// The subscription the notification is sent for.
    pub subscription: Link,
}
