//! VNF fault management subscriptions: the [`FmKind`] of [`ManagedSubscriptions`].

use async_trait::async_trait;
use vnfm_store::{FmSubscriptionRecord, Page, ProjectScope, Store, canonical_fm_filter};
use vnfm_types::{
    FmSubscription, FmSubscriptionRequest, SubscriptionAuthentication, SubscriptionId,
};

#[cfg(doc)]
use crate::subscriptions::ManagedSubscriptions;
use crate::subscriptions::SubscriptionKind;

/// VNF fault management subscriptions (`vnffm/v1`).
#[derive(Debug, Clone, Copy)]
pub struct FmKind;

#[async_trait]
impl SubscriptionKind for FmKind {
    type Resource = FmSubscription;
    type Request = FmSubscriptionRequest;
    const LABEL: &'static str = "fm";
    const DEFAULT_BASE: &'static str = super::SUBSCRIPTIONS_BASE;

    fn callback_uri(request: &FmSubscriptionRequest) -> &str {
        &request.callback_uri
    }
    fn authentication(request: &FmSubscriptionRequest) -> Option<&SubscriptionAuthentication> {
        request.authentication.as_ref()
    }
    fn resource(
        id: SubscriptionId,
        request: &FmSubscriptionRequest,
        href: String,
    ) -> FmSubscription {
        FmSubscription::from_request(id, request, href)
    }
    fn canonical_filter(request: &FmSubscriptionRequest) -> String {
        canonical_fm_filter(request.filter.as_ref())
    }
    async fn create(store: &dyn Store, record: &FmSubscriptionRecord) -> vnfm_store::Result<()> {
        store.create_fm_subscription(record).await
    }
    async fn get(
        store: &dyn Store,
        id: &SubscriptionId,
    ) -> vnfm_store::Result<Option<FmSubscriptionRecord>> {
        store.get_fm_subscription(id).await
    }
    async fn list(
        store: &dyn Store,
        scope: &ProjectScope,
        after: Option<&str>,
        limit: u32,
    ) -> vnfm_store::Result<Page<FmSubscriptionRecord>> {
        store.list_fm_subscriptions(scope, after, limit).await
    }
    async fn delete(store: &dyn Store, id: &SubscriptionId) -> vnfm_store::Result<()> {
        store.delete_fm_subscription(id).await
    }
    async fn duplicate(
        store: &dyn Store,
        canonical_filter: &str,
        callback_uri: &str,
        project: Option<&str>,
    ) -> vnfm_store::Result<Option<FmSubscriptionRecord>> {
        store
            .find_duplicate_fm_subscription(canonical_filter, callback_uri, project)
            .await
    }
}
