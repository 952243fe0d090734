//! VNF indicator subscriptions: the [`IndicatorKind`] of [`ManagedSubscriptions`].

use vnfm_store::canonical_indicator_filter;
use vnfm_types::links::{ApiVersion, Interface};
use vnfm_types::{
    SubscriptionAuthentication, SubscriptionId, VnfIndicatorSubscription,
    VnfIndicatorSubscriptionRequest,
};

#[cfg(doc)]
use vnfm_lcm::subscriptions::ManagedSubscriptions;
use vnfm_lcm::subscriptions::SubscriptionKind;

/// VNF indicator subscriptions (`vnfind/v1`).
#[derive(Debug, Clone, Copy)]
pub struct IndicatorKind;

impl SubscriptionKind for IndicatorKind {
    type Resource = VnfIndicatorSubscription;
    type Request = VnfIndicatorSubscriptionRequest;
    const LABEL: &'static str = "indicator";
    const INTERFACE: Interface = Interface::Indicators;
    const DEFAULT_VERSION: ApiVersion = ApiVersion::V1;

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
}
