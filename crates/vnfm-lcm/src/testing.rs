//! Test support (cargo feature `testing`, not part of production builds): notification routers
//! for tests and benchmarks that run the runner without a subscription store.
//! [`NoSubscribers`] drops every notification; [`SingleCallbackRouter`] sends every one to one
//! callback URI, as one subscription.

use async_trait::async_trait;
use vnfm_store::{NewOutboxRow, Timestamp};
use vnfm_types::{LccnNotification, SubscriptionId, VnfInstance};

use crate::error::LcmError;
use crate::ports::NotificationRouter;

/// Routes every notification to nobody.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSubscribers;

#[async_trait]
impl NotificationRouter for NoSubscribers {
    async fn route(
        &self,
        _: &LccnNotification,
        _: Option<&VnfInstance>,
    ) -> Result<Vec<NewOutboxRow>, LcmError> {
        Ok(Vec::new())
    }
}

/// Routes every notification to one callback URI, as one subscription: fills in
/// `subscriptionId` and `_links.subscription`.
#[derive(Debug, Clone)]
pub struct SingleCallbackRouter {
    subscription_id: SubscriptionId,
    callback_uri: String,
    subscription_href: String,
}

impl SingleCallbackRouter {
    /// Notifications for subscription `subscription_id`, POSTed to `callback_uri`.
    pub fn new(subscription_id: impl Into<String>, callback_uri: impl Into<String>) -> Self {
        let subscription_id = SubscriptionId::new(subscription_id.into());
        SingleCallbackRouter {
            subscription_href: format!("/vnflcm/v2/subscriptions/{subscription_id}"),
            subscription_id,
            callback_uri: callback_uri.into(),
        }
    }
}

#[async_trait]
impl NotificationRouter for SingleCallbackRouter {
    async fn route(
        &self,
        n: &LccnNotification,
        _: Option<&VnfInstance>,
    ) -> Result<Vec<NewOutboxRow>, LcmError> {
        let mut payload = serde_json::to_value(n).map_err(|e| {
            LcmError::inconsistent(format!("notification does not serialize: {e}")).because(e)
        })?;
        if let Some(obj) = payload.as_object_mut() {
            obj.insert(
                "subscriptionId".into(),
                self.subscription_id.as_str().into(),
            );
            if let Some(links) = obj.get_mut("_links").and_then(|l| l.as_object_mut()) {
                links.insert(
                    "subscription".into(),
                    serde_json::json!({ "href": self.subscription_href }),
                );
            }
        }
        Ok(vec![NewOutboxRow {
            subscription_id: self.subscription_id.clone(),
            callback_uri: self.callback_uri.clone(),
            payload,
            not_before: Timestamp::now(),
            ordering_key: crate::subscriptions::notification_instance(n).to_string(),
            traceparent: crate::subscriptions::current_traceparent(),
        }])
    }
}
