//! VNF package management subscriptions (SOL003 v2.6.1 clauses 10.4.7-10.4.9) and the
//! routing of package notifications to them.
//!
//! [`PkgmSubscriptions`] creates, lists, shows and deletes `PkgmSubscription`s: the
//! [`PkgmKind`] of [`ManagedSubscriptions`], with the checks, duplicate detection, callback
//! test and sealed credentials every kind shares, plus the package filter's own rule
//! (`vnfPkgId` only with change notifications).
//!
//! [`PkgmSubscriptions::route`] turns a [`PackageChange`] into one outbox row per matching
//! subscription ([`matches()`]), with [`ordering_key`](vnfm_store::NewOutboxRow::ordering_key)
//! the package id: a subscriber gets one package's notifications in the order they happened.
//! The caller writes the rows in the transaction of the package change
//! (`vnfm_store::PackageStore::update_package_and_notify`, `vnfm_store::PackageStore::delete_package_and_notify`).
//!
//! ```
//! use vnfm_lcm::pkgm_subscriptions::{PackageEvent, matches};
//! use vnfm_types::{PkgmNotificationType, PkgmNotificationsFilter, VnfPkgInfo};
//!
//! let package: VnfPkgInfo = serde_json::from_value(serde_json::json!({
//!     "id": "p1", "vnfdId": "d1", "vnfProvider": "ETSI", "vnfProductName": "hello",
//!     "vnfSoftwareVersion": "1.0", "vnfdVersion": "1.0",
//!     "onboardingState": "ONBOARDED", "operationalState": "DISABLED", "usageState": "NOT_IN_USE",
//!     "_links": {"self": {"href": "/p1"}, "packageContent": {"href": "/p1/package_content"}}
//! })).unwrap();
//! let filter: PkgmNotificationsFilter = serde_json::from_value(serde_json::json!({
//!     "notificationTypes": ["VnfPackageChangeNotification"], "operationalState": ["DISABLED"]
//! })).unwrap();
//! let ty = PackageEvent::OperationalStateChanged.notification_type();
//! assert!(matches(Some(&filter), ty, &package));
//! assert!(!matches(Some(&filter), PackageEvent::Onboarded.notification_type(), &package));
//! ```

use vnfm_store::{NewOutboxRow, ScopedKind, Timestamp, canonical_pkgm_filter};
use vnfm_types::links::{ApiVersion, Interface, LinkTarget, ResourceLinks};
use vnfm_types::{
    DateTime, Link, NotificationId, PackageChangeType, PkgmLinks, PkgmNotification,
    PkgmNotificationType, PkgmNotificationsFilter, PkgmSubscription, PkgmSubscriptionRequest,
    SubscriptionAuthentication, SubscriptionId, VnfPackageChangeNotification,
    VnfPackageOnboardingNotification, VnfPkgInfo,
};

use crate::LcmError;
use crate::secrets::new_id;
use crate::subscriptions::{
    ManagedSubscriptions, SubscriptionKind, constraint, passes, products_match,
};

/// What happened to a VNF package.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PackageEvent {
    /// Its `onboardingState` became `ONBOARDED` (`VnfPackageOnboardingNotification`).
    Onboarded,
    /// The `operationalState` of the onboarded package changed
    /// (`VnfPackageChangeNotification`, `OP_STATE_CHANGE`).
    OperationalStateChanged,
    /// The onboarded package was deleted (`VnfPackageChangeNotification`, `PKG_DELETE`).
    Deleted,
}

impl PackageEvent {
    /// The notification type that reports the event.
    pub fn notification_type(self) -> PkgmNotificationType {
        match self {
            PackageEvent::Onboarded => PkgmNotificationType::VnfPackageOnboardingNotification,
            PackageEvent::OperationalStateChanged | PackageEvent::Deleted => {
                PkgmNotificationType::VnfPackageChangeNotification
            }
        }
    }
}

/// A change to notify: the event and the package as it is after it (for a deletion, as it
/// was when deleted).
#[derive(Debug, Clone, Copy)]
pub struct PackageChange<'a> {
    /// What happened.
    pub event: PackageEvent,
    /// The package.
    pub package: &'a VnfPkgInfo,
}

/// Whether a subscription with `filter` wants a notification of type `ty` about `package`:
/// SOL003 `PkgmNotificationsFilter` semantics (every given attribute must match; the values of
/// one attribute are alternatives; an absent or empty attribute matches everything; an
/// attribute the package does not have yet, e.g. `vnfdId`, matches no constraint on it).
pub fn matches(
    filter: Option<&PkgmNotificationsFilter>,
    ty: PkgmNotificationType,
    package: &VnfPkgInfo,
) -> bool {
    let Some(f) = filter else {
        return true;
    };
    passes(constraint(&f.notification_types), Some(&ty))
        && passes(constraint(&f.vnfd_id), package.vnfd_id.as_ref())
        && passes(constraint(&f.vnf_pkg_id), Some(&package.id))
        && passes(
            constraint(&f.operational_state),
            Some(&package.operational_state),
        )
        && passes(constraint(&f.usage_state), Some(&package.usage_state))
        && constraint(&f.vnfm_info).is_none_or(|wanted| {
            package
                .vnfm_info
                .iter()
                .flatten()
                .any(|v| wanted.contains(v))
        })
        && products_match(
            &f.vnf_products_from_providers,
            package.vnf_provider.as_deref(),
            package.vnf_product_name.as_deref(),
            package.vnf_software_version.as_deref(),
            package.vnfd_version.as_deref(),
        )
}

/// The `href` of the package in the interface version of `sub` (that of its `_links.self`,
/// v2 when `links` did not make it).
fn package_href(links: &dyn ResourceLinks, sub: &PkgmSubscription, package_id: &str) -> String {
    let version = links
        .version_of(&sub.links.self_.href)
        .unwrap_or(ApiVersion::V2);
    links.href(LinkTarget::Package {
        version,
        id: package_id,
    })
}

/// The notification `sub` receives for `change`, with notification id `id` and time stamp
/// `at`, its links made by `links`. `None` when the package has no `vnfdId` (it was never onboarded: SOL003 reports only
/// onboarded packages, and both notifications require `vnfdId`).
pub fn notification_for(
    change: &PackageChange<'_>,
    sub: &PkgmSubscription,
    links: &dyn ResourceLinks,
    id: NotificationId,
    at: DateTime,
) -> Option<PkgmNotification> {
    let package = change.package;
    let vnfd_id = package.vnfd_id.clone()?;
    let links = PkgmLinks {
        vnf_package: Link::new(package_href(links, sub, &package.id)),
        subscription: Link::new(sub.links.self_.href.clone()),
    };
    let ty = change.event.notification_type();
    Some(match change.event {
        PackageEvent::Onboarded => PkgmNotification::Onboarding(VnfPackageOnboardingNotification {
            id,
            notification_type: ty,
            subscription_id: sub.id.clone(),
            time_stamp: at,
            vnf_pkg_id: package.id.clone(),
            vnfd_id,
            links,
        }),
        PackageEvent::OperationalStateChanged | PackageEvent::Deleted => {
            let changed = change.event == PackageEvent::OperationalStateChanged;
            PkgmNotification::Change(VnfPackageChangeNotification {
                id,
                notification_type: ty,
                subscription_id: sub.id.clone(),
                time_stamp: at,
                vnf_pkg_id: package.id.clone(),
                vnfd_id,
                change_type: if changed {
                    PackageChangeType::OpStateChange
                } else {
                    PackageChangeType::PkgDelete
                },
                // SOL003: present only for OP_STATE_CHANGE.
                operational_state: changed.then_some(package.operational_state),
                links,
            })
        }
    })
}

/// Checks what deserialization cannot: the callback URI, the authentication parameters, and
/// that `vnfPkgId` is given only when change notifications are wanted (SOL003: "shall be
/// absent otherwise").
pub fn validate_request(request: &PkgmSubscriptionRequest) -> Result<(), LcmError> {
    crate::subscriptions::managed::validate_request::<PkgmKind>(request)
}

/// VNF package management subscriptions (`vnfpkgm/v1`, `vnfpkgm/v2`). They share the store's
/// subscription table and id space with the other kinds, so the [`crate::Deliverer`] finds
/// any kind's credentials by the outbox row's subscription id.
#[derive(Debug, Clone, Copy)]
pub struct PkgmKind;

/// The VNF package management subscriptions of the VNFM.
pub type PkgmSubscriptions = ManagedSubscriptions<PkgmKind>;

impl SubscriptionKind for PkgmKind {
    type Resource = PkgmSubscription;
    type Request = PkgmSubscriptionRequest;
    const LABEL: &'static str = "pkgm";
    const INTERFACE: Interface = Interface::Packages;
    const DEFAULT_VERSION: ApiVersion = ApiVersion::V2;

    fn callback_uri(request: &PkgmSubscriptionRequest) -> &str {
        &request.callback_uri
    }
    fn authentication(request: &PkgmSubscriptionRequest) -> Option<&SubscriptionAuthentication> {
        request.authentication.as_ref()
    }
    fn validate(request: &PkgmSubscriptionRequest) -> Result<(), LcmError> {
        if let Some(f) = &request.filter {
            let change = PkgmNotificationType::VnfPackageChangeNotification;
            let excludes_change =
                constraint(&f.notification_types).is_some_and(|t| !t.contains(&change));
            if excludes_change && constraint(&f.vnf_pkg_id).is_some() {
                return Err(LcmError::invalid(
                    "/filter/vnfPkgId",
                    "only allowed when notificationTypes includes VnfPackageChangeNotification",
                ));
            }
        }
        Ok(())
    }
    fn resource(
        id: SubscriptionId,
        request: &PkgmSubscriptionRequest,
        href: String,
    ) -> PkgmSubscription {
        PkgmSubscription::from_request(id, request, href)
    }
    fn canonical_filter(request: &PkgmSubscriptionRequest) -> String {
        canonical_pkgm_filter(request.filter.as_ref())
    }
}

impl ManagedSubscriptions<PkgmKind> {
    /// The outbox rows for `change`: one per subscription whose filter matches, each with the
    /// notification in that subscription's API version and `ordering_key` the package id.
    ///
    /// Subscriptions are read from the store on every call (package changes are rare), so a
    /// subscription created by another replica is seen at once. Only the subscriptions of the
    /// package's project, and those of no project, receive them.
    pub async fn route(&self, change: &PackageChange<'_>) -> Result<Vec<NewOutboxRow>, LcmError> {
        let package = change.package;
        if package.vnfd_id.is_none() {
            return Ok(Vec::new());
        }
        let ty = change.event.notification_type();
        let now = Timestamp::now();
        let at = DateTime::now();
        let mut rows = Vec::new();
        let traceparent = crate::subscriptions::current_traceparent();
        let subs = self.routing().await?;
        let project = subs
            .project_of(&**self.store(), ScopedKind::Package, &package.id)
            .await?;
        for sub in subs.receiving(project.as_deref()) {
            if !matches(sub.filter.as_ref(), ty, package) {
                continue;
            }
            let id = NotificationId::new(new_id());
            let Some(n) = notification_for(change, sub, &**self.links(), id, at.clone()) else {
                continue;
            };
            let payload = serde_json::to_value(&n).map_err(|e| {
                LcmError::inconsistent(format!("notification does not serialize: {e}")).because(e)
            })?;
            rows.push(NewOutboxRow {
                subscription_id: sub.id.clone(),
                callback_uri: sub.callback_uri.clone(),
                payload,
                not_before: now,
                ordering_key: package.id.clone(),
                traceparent: traceparent.clone(),
            });
        }
        tracing::debug!(
            notification_type = ?ty,
            vnf_pkg_id = %package.id,
            subscriptions = rows.len(),
            "package notification routed"
        );
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use vnfm_types::links::SolLinks;
    use vnfm_types::{PackageOperationalState, PackageUsageState};

    fn package() -> VnfPkgInfo {
        serde_json::from_value(json!({
            "id": "p1", "vnfdId": "d1", "vnfProvider": "ETSI", "vnfProductName": "hello",
            "vnfSoftwareVersion": "1.0", "vnfdVersion": "2.0",
            "onboardingState": "ONBOARDED", "operationalState": "ENABLED",
            "usageState": "NOT_IN_USE", "vnfmInfo": ["0:etsivnfm:v3.3.1", "acme-vnfm"],
            "_links": {"self": {"href": "/p1"}, "packageContent": {"href": "/p1/c"}}
        }))
        .unwrap()
    }

    fn filter(v: serde_json::Value) -> PkgmNotificationsFilter {
        serde_json::from_value(v).unwrap()
    }

    fn sub(href: &str) -> PkgmSubscription {
        serde_json::from_value(json!({"id": "s1", "callbackUri": "http://nfvo/cb",
            "_links": {"self": {"href": href}}}))
        .unwrap()
    }

    const ONBOARDING: PkgmNotificationType = PkgmNotificationType::VnfPackageOnboardingNotification;
    const CHANGE: PkgmNotificationType = PkgmNotificationType::VnfPackageChangeNotification;

    #[test]
    fn no_filter_and_empty_attributes_match_everything() {
        let p = package();
        assert!(matches(None, ONBOARDING, &p));
        assert!(matches(Some(&filter(json!({}))), CHANGE, &p));
        let empty = filter(
            json!({"notificationTypes": [], "vnfdId": [], "vnfPkgId": [],
            "operationalState": [], "usageState": [], "vnfProductsFromProviders": [],
            "vnfmInfo": []}),
        );
        assert!(matches(Some(&empty), CHANGE, &p));
    }

    #[test]
    fn each_attribute_constrains_and_values_are_alternatives() {
        let p = package();
        let cases = [
            (
                json!({"notificationTypes": ["VnfPackageChangeNotification"]}),
                false,
                true,
            ),
            (
                json!({"notificationTypes": ["VnfPackageOnboardingNotification",
                "VnfPackageChangeNotification"]}),
                true,
                true,
            ),
            (json!({"vnfdId": ["other", "d1"]}), true, true),
            (json!({"vnfdId": ["other"]}), false, false),
            (json!({"vnfPkgId": ["p1"]}), true, true),
            (json!({"vnfPkgId": ["p2"]}), false, false),
            (json!({"operationalState": ["ENABLED"]}), true, true),
            (json!({"operationalState": ["DISABLED"]}), false, false),
            (json!({"usageState": ["IN_USE"]}), false, false),
            (json!({"usageState": ["NOT_IN_USE", "IN_USE"]}), true, true),
            (json!({"vnfmInfo": ["other", "acme-vnfm"]}), true, true),
            (json!({"vnfmInfo": ["other"]}), false, false),
            // Every attribute must match.
            (
                json!({"vnfdId": ["d1"], "operationalState": ["DISABLED"]}),
                false,
                false,
            ),
        ];
        for (f, onboarding, change) in cases {
            let f = filter(f);
            assert_eq!(matches(Some(&f), ONBOARDING, &p), onboarding, "{f:?}");
            assert_eq!(matches(Some(&f), CHANGE, &p), change, "{f:?}");
        }
    }

    #[test]
    fn products_match_provider_product_software_and_vnfd_versions() {
        let p = package();
        let m = |v: serde_json::Value| {
            matches(
                Some(&filter(json!({"vnfProductsFromProviders": v}))),
                CHANGE,
                &p,
            )
        };
        assert!(m(json!([{"vnfProvider": "ETSI"}])));
        assert!(!m(json!([{"vnfProvider": "Other"}])));
        assert!(m(
            json!([{"vnfProvider": "Other"}, {"vnfProvider": "ETSI"}])
        ));
        assert!(m(
            json!([{"vnfProvider": "ETSI", "vnfProducts": [{"vnfProductName": "hello"}]}])
        ));
        assert!(!m(
            json!([{"vnfProvider": "ETSI", "vnfProducts": [{"vnfProductName": "bye"}]}])
        ));
        assert!(m(
            json!([{"vnfProvider": "ETSI", "vnfProducts": [{"vnfProductName": "hello",
            "versions": [{"vnfSoftwareVersion": "1.0", "vnfdVersions": ["2.0"]}]}]}])
        ));
        assert!(!m(
            json!([{"vnfProvider": "ETSI", "vnfProducts": [{"vnfProductName": "hello",
            "versions": [{"vnfSoftwareVersion": "1.0", "vnfdVersions": ["1.0"]}]}]}])
        ));
        assert!(!m(
            json!([{"vnfProvider": "ETSI", "vnfProducts": [{"vnfProductName": "hello",
            "versions": [{"vnfSoftwareVersion": "9"}]}]}])
        ));
    }

    #[test]
    fn a_package_without_vnfd_id_matches_no_vnfd_constraint_and_is_not_notified() {
        let mut p = package();
        p.vnfd_id = None;
        assert!(!matches(
            Some(&filter(json!({"vnfdId": ["d1"]}))),
            CHANGE,
            &p
        ));
        let change = PackageChange {
            event: PackageEvent::Deleted,
            package: &p,
        };
        let n = notification_for(
            &change,
            &sub("/vnfpkgm/v2/subscriptions/s1"),
            &SolLinks::default(),
            NotificationId::new("n"),
            DateTime::from_unix_seconds(0),
        );
        assert_eq!(n, None);
    }

    #[test]
    fn notifications_carry_the_spec_attributes_and_links_of_the_subscription_version() {
        let mut p = package();
        let at = DateTime::from_unix_seconds(0);
        let v1 = sub("http://vnfm:8080/vnfpkgm/v1/subscriptions/s1");
        let onboarded = notification_for(
            &PackageChange {
                event: PackageEvent::Onboarded,
                package: &p,
            },
            &v1,
            &SolLinks::new("http://vnfm:8080"),
            NotificationId::new("n1"),
            at.clone(),
        )
        .unwrap();
        assert_eq!(
            serde_json::to_value(&onboarded).unwrap(),
            json!({"id": "n1", "notificationType": "VnfPackageOnboardingNotification",
                "subscriptionId": "s1", "timeStamp": "1970-01-01T00:00:00Z",
                "vnfPkgId": "p1", "vnfdId": "d1",
                "_links": {"vnfPackage": {"href": "http://vnfm:8080/vnfpkgm/v1/vnf_packages/p1"},
                           "subscription": {"href": "http://vnfm:8080/vnfpkgm/v1/subscriptions/s1"}}})
        );
        p.operational_state = PackageOperationalState::Disabled;
        let v2 = sub("/vnfpkgm/v2/subscriptions/s1");
        let change = |event| {
            serde_json::to_value(
                notification_for(
                    &PackageChange { event, package: &p },
                    &v2,
                    &SolLinks::default(),
                    NotificationId::new("n2"),
                    at.clone(),
                )
                .unwrap(),
            )
            .unwrap()
        };
        let disabled = change(PackageEvent::OperationalStateChanged);
        assert_eq!(disabled["changeType"], "OP_STATE_CHANGE");
        assert_eq!(disabled["operationalState"], "DISABLED");
        assert_eq!(
            disabled["_links"]["vnfPackage"]["href"],
            "/vnfpkgm/v2/vnf_packages/p1"
        );
        let deleted = change(PackageEvent::Deleted);
        assert_eq!(deleted["changeType"], "PKG_DELETE");
        assert!(deleted.get("operationalState").is_none(), "{deleted}");
        assert_eq!(deleted["notificationType"], "VnfPackageChangeNotification");
    }

    #[test]
    fn requests_are_checked_with_json_pointers() {
        let req = |v: serde_json::Value| -> PkgmSubscriptionRequest {
            serde_json::from_value(v).unwrap()
        };
        assert!(validate_request(&req(json!({"callbackUri": "http://nfvo/cb"}))).is_ok());
        let pointer = |v| match validate_request(&req(v)).unwrap_err() {
            LcmError::InvalidRequest { pointer, .. } | LcmError::Unprocessable { pointer, .. } => {
                pointer
            }
            other => panic!("{other:?}"),
        };
        assert_eq!(
            pointer(json!({"callbackUri": "ftp://nfvo/cb"})),
            "/callbackUri"
        );
        assert_eq!(
            pointer(json!({"callbackUri": "http://nfvo/cb", "authentication":
                {"authType": ["BASIC"], "paramsBasic": {"userName": "u"}}})),
            "/authentication/paramsBasic/password"
        );
        assert_eq!(
            pointer(json!({"callbackUri": "http://nfvo/cb", "filter": {
                "notificationTypes": ["VnfPackageOnboardingNotification"], "vnfPkgId": ["p1"]}})),
            "/filter/vnfPkgId"
        );
        assert!(
            validate_request(&req(json!({"callbackUri": "http://nfvo/cb", "filter": {
            "notificationTypes": ["VnfPackageChangeNotification"], "vnfPkgId": ["p1"]}})))
            .is_ok()
        );
    }

    #[test]
    fn vnfm_info_needs_a_package_that_names_it() {
        let f = filter(json!({"vnfmInfo": ["acme-vnfm"]}));
        let mut p = package();
        assert!(matches(Some(&f), CHANGE, &p));
        p.vnfm_info = None;
        assert!(!matches(Some(&f), CHANGE, &p), "a package without vnfmInfo");
    }

    #[test]
    fn usage_state_follows_the_package() {
        let mut p = package();
        let f = filter(json!({"usageState": ["IN_USE"]}));
        assert!(!matches(Some(&f), CHANGE, &p));
        p.usage_state = PackageUsageState::InUse;
        assert!(matches(Some(&f), CHANGE, &p));
    }
}
