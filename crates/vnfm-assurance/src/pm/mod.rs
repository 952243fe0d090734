//! VNF performance management (SOL003 v3.3.1 `vnfpm/v2`), without HTTP or monitoring types:
//! PM jobs and thresholds checked against what the [`MetricsSource`] port can measure and
//! kept in the store, performance reports collected through that port ([`collector`]),
//! threshold crossings with hysteresis ([`logic::crossing`]), and the notifications about them
//! written to the outbox the [`vnfm_lcm::Deliverer`] delivers.
//!
//! Where notifications go: SOL003 v3.3.1 gives each PM job and threshold its own
//! `callbackUri` (and credentials), so each notification goes there, as an outbox row whose
//! subscription id is the job's or threshold's id (the deliverer finds its credentials by
//! that id; deleting the job drops its pending notifications). The v2.6.1 PM subscriptions
//! ([`PmKind`], `/subscriptions`) get the notifications their filter selects as well, with
//! their `subscriptionId`.
//!
//! A monitoring system may push the values instead ([`pushed`]: OpenStack Tacker's
//! Prometheus plugin measures in its alerting rules and posts each value): a pushed value
//! makes a report or is followed by its threshold as a collected one.

pub mod collector;
pub mod logic;
pub mod pushed;

use std::sync::Arc;
use std::time::Duration;
use vnfm_store::PmManagerStore;

use vnfm_driver_api::CallbackSender;
use vnfm_driver_api::metrics::MetricsSource;
use vnfm_store::{
    NewOutboxRow, Page, PmResource, ScopedKind, StoreError, StoredPm, Timestamp, Version,
    canonical_pm_filter,
};
use vnfm_types::links::{ApiVersion, Interface, LinkTarget, ResourceLinks};
use vnfm_types::{
    CreatePmJobRequest, CreateThresholdRequest, Link, NotificationId, PmJob, PmJobLinks,
    PmJobModifications, PmNotificationType, PmNotificationsFilter, PmSubscription,
    PmSubscriptionRequest, SubscriptionAuthentication, SubscriptionId, Threshold, ThresholdLinks,
    ThresholdModifications, VnfInstanceId,
};

use crate::fm::AutoScale;
use vnfm_lcm::LcmError;
use vnfm_lcm::secrets::{Keyring, new_id};
use vnfm_lcm::subscriptions::{
    CreateOptions, ManagedSubscriptions, NotificationContext, SubscriptionKind, check_url,
    constraint, instance_matches, passes, seal_authentication, validate_authentication,
    verify_callback,
};
use vnfm_lcm::vim::store_err;

/// The version of the PM interface a job or threshold is created through: its `_links` (and
/// those of its notifications) name the resources of that version (`V1`: `vnfpm/v1` with
/// `vnflcm/v1` instances; `V2`: `vnfpm/v2` with `vnflcm/v2` instances).
pub use vnfm_types::links::ApiVersion as PmApi;

/// Settings of performance management.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PmOptions {
    /// How often thresholds are evaluated (SOL003 thresholds have no collection period of
    /// their own); also the period each measured value summarizes.
    pub threshold_period: Duration,
    /// How many reports a PM job keeps; older ones are deleted.
    pub max_reports: usize,
}

impl Default for PmOptions {
    fn default() -> Self {
        PmOptions {
            threshold_period: Duration::from_secs(60),
            max_reports: 100,
        }
    }
}

/// Whether a PM subscription with `filter` wants a notification of type `ty` about
/// `instance` (described by `ctx`).
pub fn matches(
    filter: Option<&PmNotificationsFilter>,
    ty: PmNotificationType,
    instance: &VnfInstanceId,
    ctx: &NotificationContext,
) -> bool {
    let Some(f) = filter else {
        return true;
    };
    passes(constraint(&f.notification_types), Some(&ty))
        && f.vnf_instance_subscription_filter
            .as_ref()
            .is_none_or(|i| instance_matches(i, instance, ctx))
}

/// A PM resource with a callback of its own (PM jobs, thresholds): what a `PATCH` changes.
/// Reading, listing, modifying and deleting either kind is one path
/// ([`PerformanceManager::get`], [`PerformanceManager::list`], [`PerformanceManager::modify`],
/// [`PerformanceManager::delete`]).
pub trait CallbackResource: PmResource {
    /// The body of a `PATCH`: a new callback and credentials.
    type Modifications: Send + Sync;
    /// The resource's callback (none for one created through `/vnfpm/v1`).
    fn callback_uri(&mut self) -> &mut Option<String>;
    /// The callback and credentials `modifications` ask for.
    fn requested(
        modifications: &Self::Modifications,
    ) -> (Option<&str>, Option<&SubscriptionAuthentication>);
    /// The modifications as SOL003 answers them: the callback when changed, never the
    /// credentials.
    fn answered(callback_uri: Option<String>) -> Self::Modifications;
}

impl CallbackResource for PmJob {
    type Modifications = PmJobModifications;
    fn callback_uri(&mut self) -> &mut Option<String> {
        &mut self.callback_uri
    }
    fn requested(m: &PmJobModifications) -> (Option<&str>, Option<&SubscriptionAuthentication>) {
        (m.callback_uri.as_deref(), m.authentication.as_ref())
    }
    fn answered(callback_uri: Option<String>) -> PmJobModifications {
        PmJobModifications {
            callback_uri,
            authentication: None,
        }
    }
}

impl CallbackResource for Threshold {
    type Modifications = ThresholdModifications;
    fn callback_uri(&mut self) -> &mut Option<String> {
        &mut self.callback_uri
    }
    fn requested(
        m: &ThresholdModifications,
    ) -> (Option<&str>, Option<&SubscriptionAuthentication>) {
        (m.callback_uri.as_deref(), m.authentication.as_ref())
    }
    fn answered(callback_uri: Option<String>) -> ThresholdModifications {
        ThresholdModifications {
            callback_uri,
            authentication: None,
        }
    }
}

/// Performance management: PM jobs, thresholds and PM subscriptions over the store.
#[derive(Clone)]
pub struct PerformanceManager {
    store: Arc<dyn PmManagerStore>,
    keyring: Arc<Keyring>,
    sender: Arc<dyn CallbackSender>,
    metrics: Arc<dyn MetricsSource>,
    subscriptions: ManagedSubscriptions<PmKind>,
    options: PmOptions,
    auto_scale: Option<AutoScale>,
}

impl std::fmt::Debug for PerformanceManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PerformanceManager")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// A new resource's callback and sealed credentials, checked.
struct Callback {
    uri: Option<String>,
    sealed: Option<Vec<u8>>,
}

impl PerformanceManager {
    /// PM jobs and thresholds in `store`, measured through `metrics`; callback credentials
    /// sealed by `keyring`, callbacks tested through `sender`.
    pub fn new(
        store: Arc<dyn PmManagerStore>,
        keyring: Arc<Keyring>,
        sender: Arc<dyn CallbackSender>,
        metrics: Arc<dyn MetricsSource>,
        options: PmOptions,
    ) -> Self {
        let subscriptions =
            ManagedSubscriptions::new(store.clone(), keyring.clone(), sender.clone());
        PerformanceManager {
            store,
            keyring,
            sender,
            metrics,
            subscriptions,
            options,
            auto_scale: None,
        }
    }

    /// The same performance manager, its resources, notifications and subscriptions linked by
    /// `links`.
    pub fn with_links(mut self, links: Arc<dyn ResourceLinks>) -> Self {
        self.subscriptions = self.subscriptions.with_links(links);
        self
    }

    /// Where the resources live.
    pub fn links(&self) -> &dyn ResourceLinks {
        &**self.subscriptions.links()
    }

    /// The same performance manager, scaling automatically: a threshold crossing on an
    /// instance makes `auto_scale` consider the SCALE the instance's `thresholdScaling` rule
    /// names (see [`AutoScale::consider_crossing`]).
    pub fn with_auto_scale(mut self, auto_scale: AutoScale) -> Self {
        self.auto_scale = Some(auto_scale);
        self
    }

    /// The automatic scaling threshold crossings go to, if any.
    pub fn auto_scale(&self) -> Option<&AutoScale> {
        self.auto_scale.as_ref()
    }

    /// The PM subscriptions.
    pub fn subscriptions(&self) -> &ManagedSubscriptions<PmKind> {
        &self.subscriptions
    }

    /// The settings.
    pub fn options(&self) -> &PmOptions {
        &self.options
    }

    /// Checks a callback and its credentials (testing the endpoint when `options` say so)
    /// and seals the credentials. No callback (a `/vnfpm/v1` resource) takes no
    /// credentials.
    async fn callback(
        &self,
        uri: Option<&str>,
        authentication: Option<&SubscriptionAuthentication>,
        options: &CreateOptions,
    ) -> Result<Callback, LcmError> {
        let Some(uri) = uri else {
            if authentication.is_some() {
                return Err(LcmError::invalid(
                    "/authentication",
                    "credentials need a callbackUri to be used towards",
                ));
            }
            return Ok(Callback {
                uri: None,
                sealed: None,
            });
        };
        check_url(uri, "/callbackUri")?;
        validate_authentication(authentication)?;
        if options.verify_callback {
            verify_callback(&*self.sender, uri, authentication, options.verify_timeout).await?;
        }
        Ok(Callback {
            uri: Some(uri.to_owned()),
            sealed: seal_authentication(&self.keyring, authentication)?,
        })
    }

    /// Checks that `id` names a VNF instance (answering 422 at `pointer` otherwise) and, when
    /// given, that the VNFC ids `subs` are among its VNFCs.
    async fn check_instance(
        &self,
        id: &str,
        pointer: &str,
        t: vnfm_types::PmObjectType,
        subs: &[String],
    ) -> Result<(), LcmError> {
        let found = self
            .store
            .get_instance(&VnfInstanceId::new(id))
            .await
            .map_err(store_err)?;
        let Some((instance, _)) = found else {
            return Err(LcmError::Unprocessable {
                pointer: pointer.to_owned(),
                message: format!("there is no VNF instance {id}"),
            });
        };
        if t != vnfm_types::PmObjectType::Vnfc || subs.is_empty() {
            return Ok(());
        }
        let info = instance.instantiated_vnf_info.as_ref();
        let known: Vec<&str> = info
            .and_then(|i| i.vnfc_info.as_ref())
            .into_iter()
            .flatten()
            .map(|c| c.id.as_str())
            .chain(
                info.and_then(|i| i.vnfc_resource_info.as_ref())
                    .into_iter()
                    .flatten()
                    .map(|c| c.id.as_str()),
            )
            .collect();
        if let Some(i) = subs.iter().position(|s| !known.contains(&s.as_str())) {
            return Err(LcmError::Unprocessable {
                pointer: format!("/subObjectInstanceIds/{i}"),
                message: format!("VNF instance {id} has no VNFC {}", subs[i]),
            });
        }
        Ok(())
    }

    /// Creates a PM job through `api`: checked (object type, instances, metrics, periods,
    /// callback), then stored; its first report is due one reporting period from now.
    pub async fn create_job(
        &self,
        request: &CreatePmJobRequest,
        options: &CreateOptions,
        api: PmApi,
    ) -> Result<PmJob, LcmError> {
        let checked = logic::check_job(request, &*self.metrics)?;
        let subs = request.sub_object_instance_ids.clone().unwrap_or_default();
        for (i, id) in request.object_instance_ids.iter().enumerate() {
            let pointer = format!("/objectInstanceIds/{i}");
            self.check_instance(id, &pointer, checked.object_type, &subs)
                .await?;
        }
        let callback = self
            .callback(
                request.callback_uri.as_deref(),
                request.authentication.as_ref(),
                options,
            )
            .await?;
        let id = new_id();
        let mut criteria = request.criteria.clone();
        if criteria.performance_metric_group.is_some() {
            // The groups are expanded: the job says exactly what it collects.
            criteria.performance_metric = Some(checked.metrics);
            criteria.performance_metric_group = None;
        }
        let job = PmJob {
            id: id.clone(),
            object_type: checked.object_type.as_str().to_owned(),
            object_instance_ids: request.object_instance_ids.clone(),
            sub_object_instance_ids: request.sub_object_instance_ids.clone(),
            criteria,
            callback_uri: callback.uri,
            reports: None,
            links: PmJobLinks {
                self_: Link::new(self.links().href(LinkTarget::PmJob {
                    version: api,
                    id: &id,
                })),
                objects: Some(
                    request
                        .object_instance_ids
                        .iter()
                        .map(|i| {
                            Link::new(self.links().href(LinkTarget::Instance {
                                version: api,
                                id: i,
                            }))
                        })
                        .collect(),
                ),
            },
        };
        let now = logic::unix_seconds(std::time::SystemTime::now());
        let state = logic::JobState {
            next_report_at: now + job.criteria.reporting_period,
        };
        let record = StoredPm {
            resource: job,
            authentication: callback.sealed,
            state: Some(to_state(&state)?),
        };
        self.store_new(record, options.key.as_ref()).await
    }

    /// The report `report_id` of PM job `job_id`.
    pub async fn report(
        &self,
        job_id: &str,
        report_id: &str,
    ) -> Result<vnfm_types::PerformanceReport, LcmError> {
        self.store
            .get_pm_report(job_id, report_id)
            .await
            .map_err(store_err)?
            .map(|r| r.report)
            .ok_or_else(|| LcmError::NotFound {
                kind: "performance report",
                id: format!("{job_id}/{report_id}"),
            })
    }

    /// Creates a threshold through `api`: checked (object type, instance, metric, details,
    /// callback), then stored; it is first evaluated at the collector's next run.
    pub async fn create_threshold(
        &self,
        request: &CreateThresholdRequest,
        options: &CreateOptions,
        api: PmApi,
    ) -> Result<Threshold, LcmError> {
        let (t, _) = logic::check_threshold(request, &*self.metrics)?;
        let subs = request.sub_object_instance_ids.clone().unwrap_or_default();
        self.check_instance(&request.object_instance_id, "/objectInstanceId", t, &subs)
            .await?;
        let callback = self
            .callback(
                request.callback_uri.as_deref(),
                request.authentication.as_ref(),
                options,
            )
            .await?;
        let id = new_id();
        let threshold = Threshold {
            id: id.clone(),
            object_type: t.as_str().to_owned(),
            object_instance_id: request.object_instance_id.clone(),
            sub_object_instance_ids: request.sub_object_instance_ids.clone(),
            criteria: request.criteria.clone(),
            callback_uri: callback.uri,
            links: ThresholdLinks {
                self_: Link::new(self.links().href(LinkTarget::Threshold {
                    version: api,
                    id: &id,
                })),
                object: Some(Link::new(self.links().href(LinkTarget::Instance {
                    version: api,
                    id: &request.object_instance_id,
                }))),
            },
        };
        let record = StoredPm {
            resource: threshold,
            authentication: callback.sealed,
            state: Some(to_state(&logic::ThresholdState::default())?),
        };
        self.store_new(record, options.key.as_ref()).await
    }

    /// Stores a new resource (its callback checked, its credentials sealed), committing `key`
    /// (the request's client key) with it.
    async fn store_new<T: PmResource>(
        &self,
        record: StoredPm<T>,
        key: Option<&vnfm_store::PendingKey>,
    ) -> Result<T, LcmError> {
        self.store
            .pm::<T>()
            .create_pm_keyed(&record, key)
            .await
            .map_err(store_err)?;
        tracing::info!(
            kind = T::WHAT,
            id = record.resource.id(),
            "PM resource created"
        );
        Ok(record.resource)
    }

    async fn record<T: PmResource>(&self, id: &str) -> Result<(StoredPm<T>, Version), LcmError> {
        self.store
            .pm::<T>()
            .get_pm(id)
            .await
            .map_err(store_err)?
            .ok_or_else(|| LcmError::NotFound {
                kind: T::WHAT,
                id: id.to_owned(),
            })
    }

    /// The PM job or threshold `id` and its version.
    pub async fn get<T: PmResource>(&self, id: &str) -> Result<(T, Version), LcmError> {
        let (record, v) = self.record::<T>(id).await?;
        Ok((record.resource, v))
    }

    /// One page of PM jobs or thresholds, ordered by id.
    pub async fn list<T: PmResource>(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<T>, LcmError> {
        let page = self
            .store
            .pm::<T>()
            .list_pm(after, limit)
            .await
            .map_err(store_err)?;
        Ok(Page {
            items: page.items.into_iter().map(|(r, _)| r.resource).collect(),
            next: page.next,
        })
    }

    /// Changes a PM job's or threshold's callback and credentials if it is still at
    /// `expected` (when given). Returns the modifications as SOL003 answers them (no
    /// credentials) and the new version.
    pub async fn modify<T: CallbackResource>(
        &self,
        id: &str,
        modifications: &T::Modifications,
        expected: Option<Version>,
        options: &CreateOptions,
    ) -> Result<(T::Modifications, Version), LcmError> {
        let (record, found) = self.record::<T>(id).await?;
        let (uri, authentication) = T::requested(modifications);
        let (record, answer) = self.modified(record, uri, authentication, options).await?;
        let version = self
            .replace(T::WHAT, id, expected, found, |v| {
                let record = record.clone();
                async move { self.store.pm::<T>().update_pm(&record, v, &[]).await }
            })
            .await?;
        tracing::info!(kind = T::WHAT, id, "PM resource modified");
        Ok((T::answered(answer), version))
    }

    /// Deletes a PM job (with its reports) or a threshold, and its pending notifications.
    pub async fn delete<T: PmResource>(&self, id: &str) -> Result<(), LcmError> {
        self.store
            .pm::<T>()
            .delete_pm(id)
            .await
            .map_err(|e| match e {
                StoreError::NotFound { .. } => LcmError::NotFound {
                    kind: T::WHAT,
                    id: id.to_owned(),
                },
                other => store_err(other),
            })?;
        tracing::info!(kind = T::WHAT, id, "PM resource deleted");
        Ok(())
    }

    /// `record` with the callback `uri` and credentials `authentication` of a PATCH (each
    /// when given; new credentials without a new URI apply to the current one), and the
    /// callback the answer names. Nothing to change is a 422.
    async fn modified<T: CallbackResource>(
        &self,
        mut record: StoredPm<T>,
        uri: Option<&str>,
        authentication: Option<&SubscriptionAuthentication>,
        options: &CreateOptions,
    ) -> Result<(StoredPm<T>, Option<String>), LcmError> {
        if uri.is_none() && authentication.is_none() {
            return Err(LcmError::invalid(
                "",
                "the modifications name nothing to change (callbackUri, authentication)",
            ));
        }
        let Some(target) = uri
            .map(str::to_owned)
            .or_else(|| record.resource.callback_uri().clone())
        else {
            return Err(LcmError::invalid(
                "/callbackUri",
                "the resource has no callback (it was created through the v1 PM interface, which has none): give a callbackUri with the credentials",
            ));
        };
        let callback = self
            .callback(Some(&target), authentication, options)
            .await?;
        *record.resource.callback_uri() = callback.uri;
        if authentication.is_some() {
            record.authentication = callback.sealed;
        }
        Ok((record, uri.map(str::to_owned)))
    }

    /// Writes through `write` at the version `expected` (else the `found` one), turning a
    /// version mismatch into [`LcmError::Changed`].
    async fn replace<F, Fut>(
        &self,
        kind: &'static str,
        id: &str,
        expected: Option<Version>,
        found: Version,
        write: F,
    ) -> Result<Version, LcmError>
    where
        F: FnOnce(Version) -> Fut,
        Fut: std::future::Future<Output = vnfm_store::Result<Version>>,
    {
        let changed = |current: Version| LcmError::Changed {
            kind,
            id: id.to_owned(),
            current: current.etag(),
        };
        let version = expected.unwrap_or(found);
        if version != found {
            return Err(changed(found));
        }
        match write(version).await {
            Ok(v) => Ok(v),
            Err(StoreError::VersionMismatch { found, .. }) => Err(changed(found)),
            Err(StoreError::NotFound { .. }) => Err(LcmError::NotFound {
                kind,
                id: id.to_owned(),
            }),
            Err(e) => Err(store_err(e)),
        }
    }

    /// The outbox rows of one notification: to `callback` (the job's or threshold's, under
    /// its id `owner`; none for a `/vnfpm/v1` one), and to every PM subscription whose
    /// filter selects it. `payload`
    /// builds the body for a subscription (`Some`) or for the callback (`None`).
    pub(crate) async fn route(
        &self,
        ty: PmNotificationType,
        instance: &str,
        owner: &str,
        callback: Option<&str>,
        payload: impl Fn(Option<&PmSubscription>, NotificationId) -> serde_json::Value,
    ) -> Result<Vec<NewOutboxRow>, LcmError> {
        let now = Timestamp::now();
        let traceparent = vnfm_lcm::subscriptions::current_traceparent();
        let row = |sub: SubscriptionId, uri: &str, body| NewOutboxRow {
            subscription_id: sub,
            callback_uri: uri.to_owned(),
            payload: body,
            not_before: now,
            ordering_key: instance.to_owned(),
            traceparent: traceparent.clone(),
        };
        let mut rows: Vec<NewOutboxRow> = callback
            .map(|uri| {
                row(
                    SubscriptionId::new(owner),
                    uri,
                    payload(None, NotificationId::new(new_id())),
                )
            })
            .into_iter()
            .collect();
        let subs = self.subscriptions.routing().await?;
        if subs.is_empty() {
            return Ok(rows);
        }
        let project = subs
            .project_of(&*self.store, ScopedKind::Instance, instance)
            .await?;
        let id = VnfInstanceId::new(instance);
        let ctx = match self.store.get_instance(&id).await.map_err(store_err)? {
            Some((i, _)) => NotificationContext::from_instance(&i),
            None => NotificationContext::default(),
        };
        for sub in subs
            .receiving(project.as_deref())
            .filter(|s| matches(s.filter.as_ref(), ty, &id, &ctx))
        {
            let body = payload(Some(sub), NotificationId::new(new_id()));
            rows.push(row(sub.id.clone(), &sub.callback_uri, body));
        }
        Ok(rows)
    }

    /// The store.
    pub(crate) fn store(&self) -> &Arc<dyn PmManagerStore> {
        &self.store
    }

    /// The metrics port.
    pub(crate) fn metrics(&self) -> &Arc<dyn MetricsSource> {
        &self.metrics
    }
}

/// The JSON text of collector state.
pub(crate) fn to_state<T: serde::Serialize>(state: &T) -> Result<String, LcmError> {
    serde_json::to_string(state)
        .map_err(|e| LcmError::inconsistent("PM collector state does not serialize").because(e))
}

/// VNF performance management subscriptions (the v2.6.1 `PmSubscription`).
#[derive(Debug, Clone, Copy)]
pub struct PmKind;

impl SubscriptionKind for PmKind {
    type Resource = PmSubscription;
    type Request = PmSubscriptionRequest;
    const LABEL: &'static str = "pm";
    const INTERFACE: Interface = Interface::Performance;
    const DEFAULT_VERSION: ApiVersion = ApiVersion::V2;

    fn callback_uri(request: &PmSubscriptionRequest) -> &str {
        &request.callback_uri
    }
    fn authentication(request: &PmSubscriptionRequest) -> Option<&SubscriptionAuthentication> {
        request.authentication.as_ref()
    }
    fn resource(
        id: SubscriptionId,
        request: &PmSubscriptionRequest,
        href: String,
    ) -> PmSubscription {
        PmSubscription::from_request(id, request, href)
    }
    fn canonical_filter(request: &PmSubscriptionRequest) -> String {
        canonical_pm_filter(request.filter.as_ref())
    }
}

#[cfg(test)]
mod tests;
