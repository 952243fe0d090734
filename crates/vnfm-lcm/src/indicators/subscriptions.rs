//! VNF indicator subscriptions: the [`IndicatorKind`] of [`ManagedSubscriptions`].

use async_trait::async_trait;
use vnfm_store::{
    IndicatorSubscriptionRecord, Page, ProjectScope, Store, canonical_indicator_filter,
};
use vnfm_types::{
    SubscriptionAuthentication, SubscriptionId, VnfIndicatorSubscription,
    VnfIndicatorSubscriptionRequest,
};

#[cfg(doc)]
use crate::subscriptions::ManagedSubscriptions;
use crate::subscriptions::SubscriptionKind;

/// VNF indicator subscriptions (`vnfind/v1`).
#[derive(Debug, Clone, Copy)]
pub struct IndicatorKind;

#[async_trait]
impl SubscriptionKind for IndicatorKind {
    type Resource = VnfIndicatorSubscription;
    type Request = VnfIndicatorSubscriptionRequest;
    const LABEL: &'static str = "indicator";
    const DEFAULT_BASE: &'static str = super::SUBSCRIPTIONS_BASE;

    fn callback_uri(request: &VnfIndicatorSubscriptionRequest) -> &str {
        &request.callback_uri
    }
    fn authentication(
        request: &VnfIndicatorSubscriptionRequest,
    ) -> Option<&SubscriptionAuthentication> {
        request.authentication.as_ref()
    }
    fn resource(
        id: SubscriptionId,
        request: &VnfIndicatorSubscriptionRequest,
        href: String,
    ) -> VnfIndicatorSubscription {
        VnfIndicatorSubscription::from_request(id, request, href)
    }
    fn canonical_filter(request: &VnfIndicatorSubscriptionRequest) -> String {
        canonical_indicator_filter(request.filter.as_ref())
    }
    async fn create(
        store: &dyn Store,
        record: &IndicatorSubscriptionRecord,
    ) -> vnfm_store::Result<()> {
        store.create_indicator_subscription(record).await
    }
    async fn get(
        store: &dyn Store,
        id: &SubscriptionId,
    ) -> vnfm_store::Result<Option<IndicatorSubscriptionRecord>> {
        store.get_indicator_subscription(id).await
    }
    async fn list(
        store: &dyn Store,
        scope: &ProjectScope,
        after: Option<&str>,
        limit: u32,
    ) -> vnfm_store::Result<Page<IndicatorSubscriptionRecord>> {
        store
            .list_indicator_subscriptions(scope, after, limit)
            .await
    }
    async fn delete(store: &dyn Store, id: &SubscriptionId) -> vnfm_store::Result<()> {
        store.delete_indicator_subscription(id).await
    }
    async fn duplicate(
        store: &dyn Store,
        canonical_filter: &str,
        callback_uri: &str,
        project: Option<&str>,
    ) -> vnfm_store::Result<Option<IndicatorSubscriptionRecord>> {
        store
            .find_duplicate_indicator_subscription(canonical_filter, callback_uri, project)
            .await
    }
}
