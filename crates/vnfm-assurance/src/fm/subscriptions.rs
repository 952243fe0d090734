//! VNF fault management subscriptions: the [`FmKind`] of [`ManagedSubscriptions`].

use vnfm_store::canonical_fm_filter;
use vnfm_types::links::{ApiVersion, Interface};
use vnfm_types::{
    FmSubscription, FmSubscriptionRequest, SubscriptionAuthentication, SubscriptionId,
};

#[cfg(doc)]
use vnfm_lcm::subscriptions::ManagedSubscriptions;
use vnfm_lcm::subscriptions::SubscriptionKind;

/// VNF fault management subscriptions (`vnffm/v1`).
#[derive(Debug, Clone, Copy)]
pub struct FmKind;

impl SubscriptionKind for FmKind {
    type Resource = FmSubscription;
    type Request = FmSubscriptionRequest;
    const LABEL: &'static str = "fm";
    const INTERFACE: Interface = Interface::Faults;
    const DEFAULT_VERSION: ApiVersion = ApiVersion::V1;

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
}
