//! VNF package management subscriptions and notifications (SOL003 v2.6.1 clauses 10.5.2.4-9,
//! 10.5.3.2-4; the same shapes in v3.3.1).
//!
//! The request ([`PkgmSubscriptionRequest`]) may carry credentials for the callback
//! (`authentication`); the resource ([`PkgmSubscription`]) has no such attribute, so a
//! response built from it cannot leak them. [`PkgmNotification`] is either notification,
//! told apart by `notificationType`.
//!
//! ```
//! use vnfm_types::{PkgmNotification, PackageChangeType};
//!
//! let n = PkgmNotification::from_value(serde_json::json!({
//!     "id": "n1", "notificationType": "VnfPackageChangeNotification",
//!     "subscriptionId": "s1", "timeStamp": "2021-09-06T07:07:15Z",
//!     "vnfPkgId": "p1", "vnfdId": "d1", "changeType": "OP_STATE_CHANGE",
//!     "operationalState": "DISABLED",
//!     "_links": {"vnfPackage": {"href": "/vnfpkgm/v1/vnf_packages/p1"},
//!                "subscription": {"href": "/vnfpkgm/v1/subscriptions/s1"}}
//! })).unwrap();
//! let PkgmNotification::Change(change) = n else { panic!() };
//! assert_eq!(change.change_type, PackageChangeType::OpStateChange);
//! ```

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::common::Link;
use crate::ids::{DateTime, NotificationId, SubscriptionId};
use crate::package::{PackageOperationalState, PackageUsageState};
use crate::subscription::{SubscriptionAuthentication, VnfProductsFromProvider};

/// Kind of a VNF package management notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum PkgmNotificationType {
    /// A package reached `ONBOARDED`.
    VnfPackageOnboardingNotification,
    /// An onboarded package changed its operational state or was deleted.
    VnfPackageChangeNotification,
}

/// `PackageChangeType`: what a [`VnfPackageChangeNotification`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PackageChangeType {
    /// The `operationalState` of the package changed.
    OpStateChange,
    /// The package was deleted.
    PkgDelete,
}

/// `PkgmNotificationsFilter`: which package notifications a subscription wants. Attributes
/// must all match; the values of one attribute are alternatives; an absent (or empty)
/// attribute matches everything.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PkgmNotificationsFilter {
    /// Which notification types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notification_types: Option<Vec<PkgmNotificationType>>,
    /// Packages of these providers, products and versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_products_from_providers: Option<Vec<VnfProductsFromProvider>>,
    /// Packages whose VNFD has one of these ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfd_id: Option<Vec<String>>,
    /// These packages (only with `VnfPackageChangeNotification` among the types).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_pkg_id: Option<Vec<String>>,
    /// Packages in one of these operational states.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operational_state: Option<Vec<PackageOperationalState>>,
    /// Packages in one of these usage states.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_state: Option<Vec<PackageUsageState>>,
    /// Packages whose VNFD names one of these VNFM info values (`vnfm_info`, e.g.
    /// `0:etsivnfm:v3.3.1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfm_info: Option<Vec<String>>,
}

/// `PkgmSubscriptionRequest`: body of `POST /vnfpkgm/v{1,2}/subscriptions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PkgmSubscriptionRequest {
    /// Which notifications to send; all when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<PkgmNotificationsFilter>,
    /// Where to send them.
    #[schemars(length(min = 1), url)]
    pub callback_uri: String,
    /// Credentials the VNFM uses towards the callback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<SubscriptionAuthentication>,
}

/// `PkgmSubscription`: a package management subscription as returned by the VNFM (never
/// carries the `authentication` of the request).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PkgmSubscription {
    /// Identifier of the subscription.
    pub id: SubscriptionId,
    /// The filter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<PkgmNotificationsFilter>,
    /// Where notifications are sent.
    pub callback_uri: String,
    /// Links.
    #[serde(rename = "_links")]
    pub links: PkgmSubscriptionLinks,
}

impl PkgmSubscription {
    /// The resource for a stored request: everything but the credentials.
    pub fn from_request(
        id: SubscriptionId,
        request: &PkgmSubscriptionRequest,
        self_href: impl Into<String>,
    ) -> Self {
        Self {
            id,
            filter: request.filter.clone(),
            callback_uri: request.callback_uri.clone(),
            links: PkgmSubscriptionLinks {
                self_: Link::new(self_href),
            },
        }
    }
}

/// `_links` of a [`PkgmSubscription`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PkgmSubscriptionLinks {
    /// This resource.
    #[serde(rename = "self")]
    pub self_: Link,
}

/// `PkgmLinks`: `_links` of a package management notification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PkgmLinks {
    /// The VNF package (`.../vnf_packages/{vnfPkgId}`).
    pub vnf_package: Link,
    /// The subscription the notification is sent for.
    pub subscription: Link,
}

/// `VnfPackageOnboardingNotification`: a package has been onboarded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VnfPackageOnboardingNotification {
    /// Identifier of the notification (the same for retransmissions).
    pub id: NotificationId,
    /// Always `VnfPackageOnboardingNotification`.
    pub notification_type: PkgmNotificationType,
    /// The subscription.
    pub subscription_id: SubscriptionId,
    /// When the notification was generated.
    pub time_stamp: DateTime,
    /// The package.
    pub vnf_pkg_id: String,
    /// The `vnfdId` of its VNFD.
    pub vnfd_id: String,
    /// Links.
    #[serde(rename = "_links")]
    pub links: PkgmLinks,
}

/// `VnfPackageChangeNotification`: an onboarded package changed its operational state or
/// was deleted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VnfPackageChangeNotification {
    /// Identifier of the notification (the same for retransmissions).
    pub id: NotificationId,
    /// Always `VnfPackageChangeNotification`.
    pub notification_type: PkgmNotificationType,
    /// The subscription.
    pub subscription_id: SubscriptionId,
    /// When the notification was generated.
    pub time_stamp: DateTime,
    /// The package.
    pub vnf_pkg_id: String,
    /// The `vnfdId` of its VNFD.
    pub vnfd_id: String,
    /// What changed.
    pub change_type: PackageChangeType,
    /// The new operational state; present only when `changeType` is `OP_STATE_CHANGE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operational_state: Option<PackageOperationalState>,
    /// Links.
    #[serde(rename = "_links")]
    pub links: PkgmLinks,
}

/// Any VNF package management notification, told apart by `notificationType`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum PkgmNotification {
    /// A package was onboarded.
    Onboarding(VnfPackageOnboardingNotification),
    /// A package changed or was deleted.
    Change(VnfPackageChangeNotification),
}

impl PkgmNotification {
    /// Reads a notification body, dispatching on its `notificationType` and checking that the
    /// type matches the shape.
    pub fn from_value(value: serde_json::Value) -> Result<Self, Error> {
        let ty = value
            .get("notificationType")
            .cloned()
            .ok_or(Error::MissingNotificationType)?;
        let ty: PkgmNotificationType =
            serde_json::from_value(ty).map_err(|source| Error::Json {
                what: "notificationType",
                source,
            })?;
        let what = "package management notification body";
        Ok(match ty {
            PkgmNotificationType::VnfPackageOnboardingNotification => Self::Onboarding(
                serde_json::from_value(value).map_err(|source| Error::Json { what, source })?,
            ),
            PkgmNotificationType::VnfPackageChangeNotification => Self::Change(
                serde_json::from_value(value).map_err(|source| Error::Json { what, source })?,
            ),
        })
    }

    /// The `notificationType`.
    pub fn notification_type(&self) -> PkgmNotificationType {
        match self {
            Self::Onboarding(_) => PkgmNotificationType::VnfPackageOnboardingNotification,
            Self::Change(_) => PkgmNotificationType::VnfPackageChangeNotification,
        }
    }

    /// The package the notification is about.
    pub fn vnf_pkg_id(&self) -> &str {
        match self {
            Self::Onboarding(n) => &n.vnf_pkg_id,
            Self::Change(n) => &n.vnf_pkg_id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn request_spells_the_spec_names_and_refuses_unknown_members() {
        let req: PkgmSubscriptionRequest = serde_json::from_value(json!({
            "callbackUri": "http://nfvo/cb",
            "filter": {
                "notificationTypes": ["VnfPackageChangeNotification"],
                "vnfProductsFromProviders": [{"vnfProvider": "ETSI",
                    "vnfProducts": [{"vnfProductName": "hello",
                        "versions": [{"vnfSoftwareVersion": "1.0", "vnfdVersions": ["1"]}]}]}],
                "vnfdId": ["d1"], "vnfPkgId": ["p1"],
                "operationalState": ["ENABLED"], "usageState": ["NOT_IN_USE"]
            },
            "authentication": {"authType": ["BASIC"],
                "paramsBasic": {"userName": "u", "password": "p"}}
        }))
        .unwrap();
        let f = req.filter.as_ref().unwrap();
        assert_eq!(f.vnfd_id.as_deref(), Some(&["d1".to_owned()][..]));
        assert_eq!(
            f.operational_state.as_deref(),
            Some(&[PackageOperationalState::Enabled][..])
        );
        let back = serde_json::to_value(f).unwrap();
        for key in [
            "notificationTypes",
            "vnfProductsFromProviders",
            "vnfdId",
            "vnfPkgId",
            "operationalState",
            "usageState",
        ] {
            assert!(back.get(key).is_some(), "{key} missing in {back}");
        }
        let err = serde_json::from_value::<PkgmSubscriptionRequest>(json!({
            "callbackUri": "http://nfvo/cb", "filter": {"vnfInstanceIds": ["x"]}
        }))
        .unwrap_err();
        assert!(err.to_string().contains("vnfInstanceIds"), "{err}");
    }

    #[test]
    fn subscription_resource_has_no_authentication() {
        let req: PkgmSubscriptionRequest = serde_json::from_value(json!({
            "callbackUri": "http://nfvo/cb",
            "authentication": {"authType": ["BASIC"],
                "paramsBasic": {"userName": "u", "password": "s3cret"}}
        }))
        .unwrap();
        let sub = PkgmSubscription::from_request(
            SubscriptionId::new("s1"),
            &req,
            "/vnfpkgm/v2/subscriptions/s1",
        );
        let text = serde_json::to_string(&sub).unwrap();
        assert!(!text.contains("s3cret") && !text.contains("authentication"));
        assert_eq!(
            serde_json::to_value(&sub).unwrap()["_links"]["self"]["href"],
            "/vnfpkgm/v2/subscriptions/s1"
        );
    }

    #[test]
    fn notifications_dispatch_on_their_type() {
        let links = json!({"vnfPackage": {"href": "/p"}, "subscription": {"href": "/s"}});
        let onboarding = json!({"id": "n", "notificationType": "VnfPackageOnboardingNotification",
            "subscriptionId": "s", "timeStamp": "2021-09-06T07:07:15Z", "vnfPkgId": "p",
            "vnfdId": "d", "_links": links});
        let n = PkgmNotification::from_value(onboarding.clone()).unwrap();
        assert_eq!(
            n.notification_type(),
            PkgmNotificationType::VnfPackageOnboardingNotification
        );
        assert_eq!(n.vnf_pkg_id(), "p");
        assert_eq!(serde_json::to_value(&n).unwrap(), onboarding);
        let delete = json!({"id": "n", "notificationType": "VnfPackageChangeNotification",
            "subscriptionId": "s", "timeStamp": "2021-09-06T07:07:15Z", "vnfPkgId": "p",
            "vnfdId": "d", "changeType": "PKG_DELETE", "_links": links});
        let n = PkgmNotification::from_value(delete.clone()).unwrap();
        assert_eq!(serde_json::to_value(&n).unwrap(), delete);
        // A change notification without changeType is not a change notification.
        let mut bad = delete;
        bad.as_object_mut().unwrap().remove("changeType");
        assert!(PkgmNotification::from_value(bad).is_err());
        assert!(matches!(
            PkgmNotification::from_value(json!({"id": "n"})),
            Err(Error::MissingNotificationType)
        ));
    }
}
