//! SOL003 subscription filter matching shared by the kinds: the instance a lifecycle
//! notification is about, `vnfInstanceSubscriptionFilter` and `vnfProductsFromProviders`
//! semantics, and the lifecycle filter ([`matches()`]). Pure functions.

use vnfm_types::{
    LccnNotification, LifecycleChangeNotificationsFilter, VnfInstance, VnfInstanceId,
    VnfInstanceSubscriptionFilter, VnfProductsFromProvider,
};

/// What the router knows about the VNF instance a notification is about (for the
/// `vnfInstanceSubscriptionFilter`). Attributes left `None` match no filter that constrains
/// them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NotificationContext {
    /// `vnfdId`.
    pub vnfd_id: Option<String>,
    /// `vnfProvider`.
    pub vnf_provider: Option<String>,
    /// `vnfProductName`.
    pub vnf_product_name: Option<String>,
    /// `vnfSoftwareVersion`.
    pub vnf_software_version: Option<String>,
    /// `vnfdVersion`.
    pub vnfd_version: Option<String>,
    /// `vnfInstanceName`.
    pub vnf_instance_name: Option<String>,
}

impl NotificationContext {
    /// The context of `instance`.
    pub fn from_instance(instance: &VnfInstance) -> Self {
        NotificationContext {
            vnfd_id: Some(instance.vnfd_id.to_string()),
            vnf_provider: Some(instance.vnf_provider.clone()),
            vnf_product_name: Some(instance.vnf_product_name.clone()),
            vnf_software_version: Some(instance.vnf_software_version.clone()),
            vnfd_version: Some(instance.vnfd_version.clone()),
            vnf_instance_name: instance.vnf_instance_name.clone(),
        }
    }
}

/// The instance a notification is about.
pub fn notification_instance(n: &LccnNotification) -> &VnfInstanceId {
    match n {
        LccnNotification::OperationOccurrence(o) => &o.vnf_instance_id,
        LccnNotification::IdentifierCreation(i) | LccnNotification::IdentifierDeletion(i) => {
            &i.vnf_instance_id
        }
    }
}

/// `Some(list)` when the filter attribute constrains (absent and empty lists match all, as
/// in the store's canonical filter).
pub fn constraint<T>(v: &Option<Vec<T>>) -> Option<&[T]> {
    v.as_deref().filter(|l| !l.is_empty())
}

/// Whether `value` passes a filter attribute.
pub fn passes<T, V: ?Sized>(list: Option<&[T]>, value: Option<&V>) -> bool
where
    T: PartialEq<V>,
{
    match list {
        None => true,
        Some(l) => value.is_some_and(|v| l.iter().any(|x| x == v)),
    }
}

/// Whether a subscription with `filter` wants notification `n` about an instance described
/// by `ctx`: SOL003 `LifecycleChangeNotificationsFilter` semantics (an absent attribute
/// matches everything, values within an attribute are alternatives, attributes must all
/// match; `operationTypes` and `operationStates` only constrain operation occurrence
/// notifications).
pub fn matches(
    filter: Option<&LifecycleChangeNotificationsFilter>,
    n: &LccnNotification,
    ctx: &NotificationContext,
) -> bool {
    let Some(f) = filter else {
        return true;
    };
    if !passes(
        constraint(&f.notification_types),
        Some(&n.notification_type()),
    ) {
        return false;
    }
    if let LccnNotification::OperationOccurrence(o) = n
        && (!passes(constraint(&f.operation_types), Some(&o.operation))
            || !passes(constraint(&f.operation_states), Some(&o.operation_state)))
    {
        return false;
    }
    match &f.vnf_instance_subscription_filter {
        None => true,
        Some(i) => instance_matches(i, notification_instance(n), ctx),
    }
}

/// Whether a `vnfInstanceSubscriptionFilter` selects instance `id` (described by `ctx`),
/// for every subscription kind whose filter has one.
pub fn instance_matches(
    f: &VnfInstanceSubscriptionFilter,
    id: &VnfInstanceId,
    ctx: &NotificationContext,
) -> bool {
    let vnfd_ok = match constraint(&f.vnfd_ids) {
        None => true,
        Some(ids) => ctx
            .vnfd_id
            .as_deref()
            .is_some_and(|d| ids.iter().any(|x| x.as_str() == d)),
    };
    let ids_ok = passes(constraint(&f.vnf_instance_ids), Some(id));
    let names_ok = passes(
        constraint(&f.vnf_instance_names),
        ctx.vnf_instance_name.as_ref(),
    );
    let products_ok = products_match(
        &f.vnf_products_from_providers,
        ctx.vnf_provider.as_deref(),
        ctx.vnf_product_name.as_deref(),
        ctx.vnf_software_version.as_deref(),
        ctx.vnfd_version.as_deref(),
    );
    vnfd_ok && ids_ok && names_ok && products_ok
}

/// Whether a `vnfProductsFromProviders` filter attribute matches a VNF of `provider`,
/// `product`, `software_version` and `vnfd_version` (unknown values match no constraint on
/// them).
pub(crate) fn products_match(
    providers: &Option<Vec<VnfProductsFromProvider>>,
    provider: Option<&str>,
    product: Option<&str>,
    software_version: Option<&str>,
    vnfd_version: Option<&str>,
) -> bool {
    match constraint(providers) {
        None => true,
        Some(providers) => providers.iter().any(|p| {
            provider == Some(p.vnf_provider.as_str())
                && match constraint(&p.vnf_products) {
                    None => true,
                    Some(products) => products.iter().any(|prod| {
                        product == Some(prod.vnf_product_name.as_str())
                            && match constraint(&prod.versions) {
                                None => true,
                                Some(versions) => versions.iter().any(|v| {
                                    software_version == Some(v.vnf_software_version.as_str())
                                        && match constraint(&v.vnfd_versions) {
                                            None => true,
                                            Some(vs) => vnfd_version
                                                .is_some_and(|d| vs.iter().any(|x| x == d)),
                                        }
                                }),
                            }
                    }),
                }
        }),
    }
}
