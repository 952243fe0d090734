//! The store's view of VNF indicators: indicator subscriptions share the subscriptions table
//! (kind `indicator`); indicator values are plain [`vnfm_types::VnfIndicator`] documents.

use vnfm_types::{SubscriptionId, VnfIndicatorNotificationsFilter, VnfIndicatorSubscription};

use crate::model::{StoredSubscription, SubscriptionResource, canonical_of};

impl SubscriptionResource for VnfIndicatorSubscription {
    const KIND: &'static str = "indicator";
    const WHAT: &'static str = "VNF indicator subscription";
    fn id(&self) -> &SubscriptionId {
        &self.id
    }
    fn callback_uri(&self) -> &str {
        &self.callback_uri
    }
    fn canonical_filter(&self) -> String {
        canonical_of(self.filter.as_ref())
    }
}

/// A stored VNF indicator subscription (same table and id space as the others).
pub type IndicatorSubscriptionRecord = StoredSubscription<VnfIndicatorSubscription>;

/// [`crate::canonical_filter`] of a VNF indicator filter, for
/// [`crate::SubscriptionStore::find_duplicate_subscription`].
pub fn canonical_indicator_filter(filter: Option<&VnfIndicatorNotificationsFilter>) -> String {
    canonical_of(filter)
}
