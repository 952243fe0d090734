//! Lifecycle change notification subscriptions ([`LccnKind`], [`Subscriptions`]) and the
//! routing of notifications to them.
//!
//! [`Subscriptions`] creates, lists, shows and deletes `LccnSubscription`s with the checks,
//! duplicate detection, callback test and sealed credentials every kind shares
//! ([`super::ManagedSubscriptions`]), plus the lifecycle filter's own rule: `operationTypes`
//! and `operationStates` only with operation occurrence notifications.
//!
//! [`SubscriptionRouter`] implements [`NotificationRouter`]: a notification becomes one outbox
//! row per subscription whose filter matches ([`matches()`]), with `subscriptionId` and
//! `_links.subscription` filled in, among the subscriptions that receive the notifications
//! of the instance's project ([`super::managed::Routing`]). Subscriptions are read through the
//! snapshot that create and delete invalidate and that expires after a short TTL (other
//! replicas create and delete too).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use vnfm_store::{NewOutboxRow, ScopedKind, SubscriptionManagerStore, Timestamp, canonical_filter};
use vnfm_types::links::{ApiVersion, Interface, ResourceLinks, SolLinks};
use vnfm_types::{
    LccnNotification, LccnSubscription, LccnSubscriptionRequest, LcmOpOccNotificationVerbosityType,
    NotificationType, SubscriptionAuthentication, SubscriptionId, VnfInstance,
};

use super::managed::{ManagedSubscriptions, Routing, SubscriptionCache, SubscriptionKind};
use super::matching::{NotificationContext, constraint, matches, notification_instance};
use crate::LcmError;
use crate::ports::NotificationRouter;
use crate::vim::store_err;

/// Lifecycle change notification subscriptions (`vnflcm/v1`, `vnflcm/v2`).
#[derive(Debug, Clone, Copy)]
pub struct LccnKind;

/// The lifecycle subscriptions of the VNFM.
pub type Subscriptions = ManagedSubscriptions<LccnKind>;

impl SubscriptionKind for LccnKind {
    type Resource = LccnSubscription;
    type Request = LccnSubscriptionRequest;
    const LABEL: &'static str = "lcm";
    const INTERFACE: Interface = Interface::Lifecycle;
    const DEFAULT_VERSION: ApiVersion = ApiVersion::V2;
    const VERSIONS_APART: bool = true;

    fn callback_uri(request: &LccnSubscriptionRequest) -> &str {
        &request.callback_uri
    }
    fn authentication(request: &LccnSubscriptionRequest) -> Option<&SubscriptionAuthentication> {
        request.authentication.as_ref()
    }
    /// `operationTypes` and `operationStates` only when `notificationTypes` includes
    /// operation occurrence notifications.
    fn validate(request: &LccnSubscriptionRequest) -> Result<(), LcmError> {
        let Some(f) = &request.filter else {
            return Ok(());
        };
        let op_occ = NotificationType::VnfLcmOperationOccurrenceNotification;
        let excludes_op_occ = f
            .notification_types
            .as_ref()
            .is_some_and(|t| !t.is_empty() && !t.contains(&op_occ));
        if !excludes_op_occ {
            return Ok(());
        }
        for (attr, given) in [
            ("operationTypes", constraint(&f.operation_types).is_some()),
            ("operationStates", constraint(&f.operation_states).is_some()),
        ] {
            if given {
                return Err(LcmError::invalid(
                    format!("/filter/{attr}"),
                    "only allowed when notificationTypes includes VnfLcmOperationOccurrenceNotification",
                ));
            }
        }
        Ok(())
    }
    fn resource(
        id: SubscriptionId,
        request: &LccnSubscriptionRequest,
        href: String,
    ) -> LccnSubscription {
        LccnSubscription::from_request(id, request, href)
    }
    fn canonical_filter(request: &LccnSubscriptionRequest) -> String {
        canonical_filter(request.filter.as_ref())
    }
}

impl ManagedSubscriptions<LccnKind> {
    /// The router over these subscriptions (sharing their snapshot, so that a subscription
    /// created or deleted here is routed to at once).
    pub fn router(&self) -> SubscriptionRouter {
        SubscriptionRouter {
            store: self.store().clone(),
            cache: self.cache().clone(),
            links: self.links().clone(),
        }
    }
}

/// Checks what the JSON schema cannot: the callback URI, the authentication parameters and
/// the filter's operation attributes.
pub fn validate_request(request: &LccnSubscriptionRequest) -> Result<(), LcmError> {
    super::managed::validate_request::<LccnKind>(request)
}

/// Attributes a `SHORT` operation occurrence notification leaves out (SOL003 5.5.2.17).
const SHORT_OMITS: &[&str] = &[
    "affectedVnfcs",
    "affectedVirtualLinks",
    "affectedExtLinkPorts",
    "affectedVirtualStorages",
    "changedInfo",
    "changedExtConnectivity",
    "modificationsTriggeredByVnfPkgChange",
];

/// The body sent to `sub` for `n`: `subscriptionId` and `_links.subscription` point at the
/// subscription, and an operation occurrence notification has the subscription's verbosity.
///
/// A subscription created through the v1 API (its `_links.self`, read by `links`, is in v1)
/// gets the SOL003 v2.6.1 shape, with links into the v1 resources.
pub fn payload_for(
    n: &LccnNotification,
    sub: &LccnSubscription,
    links: &dyn ResourceLinks,
) -> Result<Value, LcmError> {
    let v1 = links.version_of(&sub.links.self_.href) == Some(ApiVersion::V1);
    let serialized = match n {
        LccnNotification::OperationOccurrence(o) if v1 => {
            vnfm_types::v1::VnfLcmOperationOccurrenceNotification::try_from((**o).clone())
                .and_then(|o| {
                    serde_json::to_value(o).map_err(|e| vnfm_types::Error::Json {
                        what: "v1 notification",
                        source: e,
                    })
                })
                .map_err(|e| {
                    LcmError::inconsistent(format!("notification has no v1 shape: {e}")).because(e)
                })
        }
        _ => serde_json::to_value(n).map_err(|e| {
            LcmError::inconsistent(format!("notification does not serialize: {e}")).because(e)
        }),
    };
    let mut v = serialized?;
    if v1 {
        links.relink_all(&mut v, ApiVersion::V1);
    }
    let Value::Object(map) = &mut v else {
        return Err(LcmError::inconsistent("notification is not a JSON object"));
    };
    map.insert("subscriptionId".into(), Value::String(sub.id.to_string()));
    let links = map
        .entry("_links")
        .or_insert_with(|| Value::Object(Default::default()));
    if let Value::Object(links) = links {
        links.insert(
            "subscription".into(),
            serde_json::json!({"href": sub.links.self_.href}),
        );
    }
    if matches!(n, LccnNotification::OperationOccurrence(_)) {
        let verbosity = sub
            .verbosity
            .unwrap_or(LcmOpOccNotificationVerbosityType::Full);
        if verbosity == LcmOpOccNotificationVerbosityType::Short {
            for k in SHORT_OMITS {
                map.remove(*k);
            }
        }
        if !v1 {
            // v2.6.1 has no verbosity.
            map.insert(
                "verbosity".into(),
                serde_json::to_value(verbosity).unwrap_or(Value::Null),
            );
        }
    }
    Ok(v)
}

/// Routes notifications to the subscriptions whose filters match.
#[derive(Clone)]
pub struct SubscriptionRouter {
    store: Arc<dyn SubscriptionManagerStore>,
    cache: Arc<SubscriptionCache<LccnSubscription>>,
    links: Arc<dyn ResourceLinks>,
}

impl std::fmt::Debug for SubscriptionRouter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubscriptionRouter").finish_non_exhaustive()
    }
}

impl SubscriptionRouter {
    /// A router over the subscriptions in `store`, with its own cache (prefer
    /// [`ManagedSubscriptions::router`], whose snapshot is invalidated by create and delete),
    /// reading the subscriptions' links in the SOL layout ([`SolLinks`]).
    pub fn new(store: Arc<dyn SubscriptionManagerStore>, ttl: Duration) -> Self {
        SubscriptionRouter {
            store,
            cache: Arc::new(SubscriptionCache::new(ttl)),
            links: Arc::new(SolLinks::default()),
        }
    }

    /// Sets where the resources live (the subscriptions' links were made by `links`).
    pub fn with_links(mut self, links: Arc<dyn ResourceLinks>) -> Self {
        self.links = links;
        self
    }

    /// The outbox rows for `n` about an instance described by `ctx`, of `project` (`None`:
    /// of no project). Use this when the instance is not in the store (yet): a
    /// `VnfIdentifierCreationNotification` is routed before the instance is written, in the
    /// same transaction.
    pub async fn route_with(
        &self,
        n: &LccnNotification,
        ctx: &NotificationContext,
        project: Option<&str>,
    ) -> Result<Vec<NewOutboxRow>, LcmError> {
        let subs = self.cache.all::<LccnKind>(self.store.as_ref()).await?;
        self.rows(n, ctx, &subs, project)
    }

    /// The outbox rows for `n` to the subscriptions of `subs` that receive `project`'s
    /// notifications and whose filters select it.
    fn rows(
        &self,
        n: &LccnNotification,
        ctx: &NotificationContext,
        subs: &Routing<LccnSubscription>,
        project: Option<&str>,
    ) -> Result<Vec<NewOutboxRow>, LcmError> {
        let now = Timestamp::now();
        let mut rows = Vec::new();
        let traceparent = crate::subscriptions::current_traceparent();
        for sub in subs
            .receiving(project)
            .filter(|s| matches(s.filter.as_ref(), n, ctx))
        {
            rows.push(NewOutboxRow {
                subscription_id: sub.id.clone(),
                callback_uri: sub.callback_uri.clone(),
                payload: payload_for(n, sub, &*self.links)?,
                not_before: now,
                ordering_key: notification_instance(n).to_string(),
                traceparent: traceparent.clone(),
            });
        }
        tracing::debug!(
            notification_type = ?n.notification_type(),
            vnf_instance_id = %notification_instance(n),
            subscriptions = rows.len(),
            "notification routed"
        );
        Ok(rows)
    }
}

#[async_trait]
impl NotificationRouter for SubscriptionRouter {
    /// Uses `instance` for the filter's instance attributes; without it, looks the instance up
    /// in the store, and when it is not there only `vnfInstanceIds` can match (see
    /// [`SubscriptionRouter::route_with`]). The instance's project is looked up in the store
    /// when some subscription receives one project's notifications only.
    async fn route(
        &self,
        n: &LccnNotification,
        instance: Option<&VnfInstance>,
    ) -> Result<Vec<NewOutboxRow>, LcmError> {
        let subs = self.cache.all::<LccnKind>(self.store.as_ref()).await?;
        if subs.is_empty() {
            return Ok(Vec::new());
        }
        let ctx = match instance {
            Some(instance) => NotificationContext::from_instance(instance),
            None => match self
                .store
                .get_instance(notification_instance(n))
                .await
                .map_err(store_err)?
            {
                Some((instance, _)) => NotificationContext::from_instance(&instance),
                None => NotificationContext::default(),
            },
        };
        let project = subs
            .project_of(
                &*self.store,
                ScopedKind::Instance,
                notification_instance(n).as_str(),
            )
            .await?;
        self.rows(n, &ctx, &subs, project.as_deref())
    }

    async fn route_created(
        &self,
        n: &LccnNotification,
        instance: &VnfInstance,
        project: Option<&str>,
    ) -> Result<Vec<NewOutboxRow>, LcmError> {
        self.route_with(n, &NotificationContext::from_instance(instance), project)
            .await
    }
}
