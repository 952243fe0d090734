//! VNF indicators (SOL003 `vnfind/v1`): the values of the indicators a VNFD declares
//! ([`vnfm_descriptor::vnfd::IndicatorDef`]) for each instantiated instance, indicator
//! subscriptions, and `VnfIndicatorValueChangeNotification`s through the outbox.
//!
//! A value comes from the indicator's PromQL, evaluated for every instantiated instance by the
//! [`collector`] through the [`MetricsSource`] port, or is pushed ([`IndicatorManager::set`]).
//! A value is stored, and notified to every subscription whose filter selects it, only when it
//! differs from the stored one, in one transaction. The values of an instance that is no
//! longer instantiated, or of indicators its VNFD no longer declares, are dropped.
//!
//! With automatic scaling ([`IndicatorManager::with_auto_scale`]), a numeric value that
//! moves into another band of the instance's `indicatorScaling` rule starts a SCALE or a
//! SCALE_TO_LEVEL ([`crate::fm::indicator_scaling`]), once the value is stored.

pub mod collector;
mod subscriptions;

use std::sync::Arc;

use serde_json::Value;
use vnfm_descriptor::vnfd::IndicatorDef;
use vnfm_driver_api::metrics::MetricsSource;
use vnfm_store::{IndicatorManagerStore, NewOutboxRow, Page, ProjectScope, ScopedKind, Timestamp};
use vnfm_types::links::{ApiVersion, Interface, LinkTarget, ResourceLinks};
use vnfm_types::{
    DateTime, InstantiationState, Link, NotificationId, SubscriptionId, VNF_INDICATOR_VALUE_CHANGE,
    VnfIndicator, VnfIndicatorLinks, VnfIndicatorSubscription, VnfIndicatorValueChangeNotification,
    VnfIndicatorValueChangeNotificationLinks, VnfInstance, VnfInstanceId,
};

use crate::fm::AutoScale;
use vnfm_lcm::ports::PackageCatalog;
use vnfm_lcm::runner::store_err;
use vnfm_lcm::secrets::new_id;
use vnfm_lcm::subscriptions::{ManagedSubscriptions, NotificationContext, instance_matches};
use vnfm_lcm::{Keyring, LcmError};

pub use subscriptions::IndicatorKind;

/// VNF indicators: values, subscriptions, notifications.
#[derive(Clone)]
pub struct IndicatorManager {
    store: Arc<dyn IndicatorManagerStore>,
    catalog: Arc<dyn PackageCatalog>,
    metrics: Option<Arc<dyn MetricsSource>>,
    subscriptions: ManagedSubscriptions<IndicatorKind>,
    auto_scale: Option<AutoScale>,
}

impl std::fmt::Debug for IndicatorManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndicatorManager").finish_non_exhaustive()
    }
}

/// The indicator document of `def` for `instance` with `value`, its links made by `links`
/// (the indicator and its instance in the v1 interfaces, as `vnfind/v1` has them).
pub fn indicator_of(
    links: &dyn ResourceLinks,
    instance: &VnfInstanceId,
    def: &IndicatorDef,
    value: Value,
) -> VnfIndicator {
    VnfIndicator {
        id: def.id.clone(),
        name: def.name.clone(),
        value,
        vnf_instance_id: instance.clone(),
        links: VnfIndicatorLinks {
            self_: Link::new(links.href(LinkTarget::Indicator {
                instance: instance.as_str(),
                indicator: &def.id,
            })),
            vnf_instance: Link::new(links.href(LinkTarget::Instance {
                version: ApiVersion::V1,
                id: instance.as_str(),
            })),
        },
    }
}

/// Whether a subscription wants the change of `indicator` (of an instance described by
/// `ctx`): SOL003 `VnfIndicatorNotificationsFilter` semantics.
pub fn matches(
    sub: &VnfIndicatorSubscription,
    indicator: &VnfIndicator,
    ctx: &NotificationContext,
) -> bool {
    sub.filter.as_ref().is_none_or(|f| {
        f.matches_indicator(&indicator.id)
            && f.vnf_instance_subscription_filter
                .as_ref()
                .is_none_or(|i| instance_matches(i, &indicator.vnf_instance_id, ctx))
    })
}

impl IndicatorManager {
    /// Indicators kept in `store`, declared by the VNFDs of `catalog`, computed through
    /// `metrics` (without one, only pushed values exist); subscription credentials sealed
    /// with `keyring`, callbacks tested with `sender`.
    pub fn new(
        store: Arc<dyn IndicatorManagerStore>,
        keyring: Arc<Keyring>,
        sender: Arc<dyn vnfm_driver_api::CallbackSender>,
        catalog: Arc<dyn PackageCatalog>,
        metrics: Option<Arc<dyn MetricsSource>>,
    ) -> Self {
        IndicatorManager {
            subscriptions: ManagedSubscriptions::new(store.clone(), keyring, sender),
            store,
            catalog,
            metrics,
            auto_scale: None,
        }
    }

    /// The same, its indicators and subscriptions linked by `links`.
    pub fn with_links(mut self, links: Arc<dyn ResourceLinks>) -> Self {
        self.subscriptions = self.subscriptions.with_links(links);
        self
    }

    /// The same, scaling instances by their `indicatorScaling` rules through `auto_scale`
    /// (shared with the other automatic scalings, so that one cooldown bounds them all).
    pub fn with_auto_scale(mut self, auto_scale: AutoScale) -> Self {
        self.auto_scale = Some(auto_scale);
        self
    }

    /// The indicator subscriptions.
    pub fn subscriptions(&self) -> &ManagedSubscriptions<IndicatorKind> {
        &self.subscriptions
    }

    /// One page of the indicator values in `scope`, of `instance` only when given (which must
    /// exist: [`LcmError::NotFound`] otherwise).
    pub async fn list(
        &self,
        scope: &ProjectScope,
        instance: Option<&VnfInstanceId>,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<VnfIndicator>, LcmError> {
        if let Some(id) = instance {
            self.instance(id).await?;
        }
        self.store
            .list_indicators(scope, instance, after, limit)
            .await
            .map_err(store_err)
    }

    /// The value of indicator `indicator_id` of `instance`.
    pub async fn get(
        &self,
        instance: &VnfInstanceId,
        indicator_id: &str,
    ) -> Result<VnfIndicator, LcmError> {
        self.store
            .get_indicator(instance, indicator_id)
            .await
            .map_err(store_err)?
            .ok_or_else(|| LcmError::NotFound {
                kind: "VNF indicator",
                id: format!("{indicator_id} of VNF instance {instance}"),
            })
    }

    /// Sets indicator `indicator_id` of `instance` to `value` (a value pushed by the VNF, the
    /// EM or a management driver): the VNFD must declare the indicator and the instance be
    /// instantiated. Whether the value changed (and was notified).
    pub async fn set(
        &self,
        instance: &VnfInstanceId,
        indicator_id: &str,
        value: Value,
    ) -> Result<bool, LcmError> {
        let inst = self.instance(instance).await?;
        if inst.instantiation_state != InstantiationState::Instantiated {
            return Err(LcmError::Unprocessable {
                pointer: "/vnfInstanceId".into(),
                message: format!(
                    "VNF instance {instance} is not instantiated: it has no indicator values"
                ),
            });
        }
        let defs = self.declared(&inst).await?;
        let Some(def) = defs.iter().find(|d| d.id == indicator_id) else {
            return Err(LcmError::Unprocessable {
                pointer: "/indicatorId".into(),
                message: format!(
                    "the VNFD of instance {instance} declares no indicator {indicator_id:?} \
                     (it declares: {})",
                    defs.iter()
                        .map(|d| d.id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        };
        self.record(&inst, def, value).await
    }

    /// Stores `value` for indicator `def` of `instance` and notifies the subscriptions that
    /// select it, when it differs from the stored value. Whether it did.
    pub async fn record(
        &self,
        instance: &VnfInstance,
        def: &IndicatorDef,
        value: Value,
    ) -> Result<bool, LcmError> {
        let old = self
            .store
            .get_indicator(&instance.id, &def.id)
            .await
            .map_err(store_err)?;
        if let Some(old) = &old
            && old.value == value
            && old.name == def.name
        {
            return Ok(false);
        }
        let indicator = indicator_of(&**self.subscriptions.links(), &instance.id, def, value);
        let rows = self.notifications(instance, &indicator).await?;
        self.store
            .put_indicator(&indicator, &rows)
            .await
            .map_err(store_err)?;
        if let (Some(auto), Some(new)) = (&self.auto_scale, indicator.value.as_f64()) {
            let before = old.as_ref().and_then(|o| o.value.as_f64());
            let cause = format!("indicator {} changed to {new}", def.id);
            auto.consider_indicator(&instance.id, &def.id, before, new, &cause)
                .await
                .log(&format!("SCALE for indicator {}", def.id), &instance.id);
        }
        Ok(true)
    }

    /// The outbox rows notifying the change of `indicator` to the subscriptions that select it.
    async fn notifications(
        &self,
        instance: &VnfInstance,
        indicator: &VnfIndicator,
    ) -> Result<Vec<NewOutboxRow>, LcmError> {
        let subs = self.subscriptions.cached().await?;
        let project = subs
            .project_of(&*self.store, ScopedKind::Instance, instance.id.as_str())
            .await?;
        let ctx = NotificationContext::from_instance(instance);
        let now = Timestamp::now();
        let stamp = DateTime::now();
        let traceparent = vnfm_lcm::subscriptions::current_traceparent();
        Ok(subs
            .receiving(project.as_deref())
            .filter(|s| matches(s, indicator, &ctx))
            .map(|s| {
                let body = VnfIndicatorValueChangeNotification {
                    id: NotificationId::new(new_id()),
                    notification_type: VNF_INDICATOR_VALUE_CHANGE.into(),
                    subscription_id: s.id.clone(),
                    time_stamp: stamp.clone(),
                    vnf_indicator_id: indicator.id.clone(),
                    name: indicator.name.clone(),
                    value: indicator.value.clone(),
                    vnf_instance_id: indicator.vnf_instance_id.clone(),
                    links: VnfIndicatorValueChangeNotificationLinks {
                        vnf_instance: indicator.links.vnf_instance.clone(),
                        subscription: Link::new(self.subscriptions.links().href(
                            LinkTarget::Subscription {
                                interface: Interface::Indicators,
                                version: ApiVersion::V1,
                                id: s.id.as_str(),
                            },
                        )),
                    },
                };
                NewOutboxRow {
                    subscription_id: SubscriptionId::clone(&s.id),
                    callback_uri: s.callback_uri.clone(),
                    payload: serde_json::to_value(&body).unwrap_or_default(),
                    not_before: now,
                    ordering_key: instance.id.to_string(),
                    traceparent: traceparent.clone(),
                }
            })
            .collect())
    }

    /// The indicators the VNFD of `instance` declares (none when the VNFD is not onboarded).
    pub async fn declared(&self, instance: &VnfInstance) -> Result<Vec<IndicatorDef>, LcmError> {
        Ok(self
            .catalog
            .vnfd(instance.vnfd_id.as_str())
            .await?
            .map(|o| o.vnfd.indicators.clone())
            .unwrap_or_default())
    }

    async fn instance(&self, id: &VnfInstanceId) -> Result<VnfInstance, LcmError> {
        match self.store.get_instance(id).await.map_err(store_err)? {
            Some((i, _)) => Ok(i),
            None => Err(LcmError::NotFound {
                kind: "VNF instance",
                id: id.to_string(),
            }),
        }
    }

    pub(crate) fn store(&self) -> &Arc<dyn IndicatorManagerStore> {
        &self.store
    }

    pub(crate) fn metrics(&self) -> Option<&Arc<dyn MetricsSource>> {
        self.metrics.as_ref()
    }
}

#[async_trait::async_trait]
impl vnfm_driver_api::IndicatorSink for IndicatorManager {
    async fn set_indicator(
        &self,
        instance: &VnfInstanceId,
        indicator_id: &str,
        value: Value,
    ) -> Result<bool, vnfm_driver_api::DriverError> {
        self.set(instance, indicator_id, value)
            .await
            .map_err(|e| match e {
                LcmError::NotFound { .. } | LcmError::Unprocessable { .. } => {
                    vnfm_driver_api::DriverError::invalid_input(e.to_string())
                }
                other => crate::fm::driver_error(other),
            })
    }
}

#[cfg(test)]
mod tests;
