//! VNF fault management (SOL003 v2.6.1 `vnffm/v1`), without HTTP or monitoring types: alarms
//! raised and cleared through the [`FaultSink`] port, de-duplicated in the store (one open
//! alarm per [`FaultId`]), acknowledged under a version precondition, and reported to FM
//! subscriptions ([`subscriptions`]) through the outbox the [`vnfm_lcm::Deliverer`] delivers.
//!
//! Every alarm write enqueues its notifications in the same store transaction
//! (`vnfm_store::AlarmStore::create_alarm`, `vnfm_store::AlarmStore::update_alarm`): an alarm change is never lost between the
//! write and the notification. A raise that changes nothing (the same severity, event type,
//! resource and details as the open alarm, e.g. Alertmanager repeating a firing alert) writes
//! and notifies nothing.

pub mod auto_heal;
pub mod auto_scale;
pub mod automatic;
pub mod indicator_scaling;
pub mod infra_watch;
pub mod subscriptions;

use std::sync::Arc;
use vnfm_store::FaultManagerStore;

use async_trait::async_trait;
use vnfm_driver_api::fault::{FaultId, FaultReport, FaultSink, Raised};
use vnfm_driver_api::{CallbackSender, DriverError};
use vnfm_store::{
    AlarmRecord, Conflict, NewOutboxRow, Page, ProjectScope, ScopedKind, StoreError, Timestamp,
    Version,
};
use vnfm_types::links::{ApiVersion, LinkTarget, ResourceLinks};
use vnfm_types::{
    AckState, Alarm, AlarmClearedNotification, AlarmClearedNotificationLinks, AlarmLinks,
    AlarmListRebuiltNotification, AlarmListRebuiltNotificationLinks, AlarmNotification,
    AlarmNotificationLinks, DateTime, FmNotification, FmNotificationType, FmNotificationsFilter,
    FmSubscription, Link, NotificationId, PerceivedSeverity, VnfInstanceId,
};

pub use auto_heal::{AutoHeal, AutoHealPolicy, DEFAULT_BATCH_WINDOW};
pub use auto_scale::{AutoScale, AutoScalePolicy};
pub use automatic::{AutomaticOutcome, Bounds};
pub use infra_watch::{InfraWatch, InfraWatchTask, Swept};
pub use subscriptions::FmKind;
use vnfm_lcm::LcmError;
use vnfm_lcm::secrets::{Keyring, new_id};
pub use vnfm_lcm::subscriptions::{ManagedSubscriptions, SubscriptionKind};
use vnfm_lcm::subscriptions::{NotificationContext, constraint, instance_matches, passes};
use vnfm_lcm::vim::store_err;

/// How often a write is tried again when a concurrent writer changed the same alarm.
const ATTEMPTS: usize = 5;

/// Whether a subscription with `filter` wants notification `ty` about `alarm` (of an instance
/// described by `ctx`): SOL003 `FmNotificationsFilter` semantics. The alarm attributes
/// (`faultyResourceTypes`, `perceivedSeverities`, `eventTypes`, `probableCauses`) constrain
/// only notifications that carry or name an alarm; `AlarmListRebuiltNotification` is matched
/// by its type alone.
pub fn matches(
    filter: Option<&FmNotificationsFilter>,
    ty: FmNotificationType,
    alarm: Option<&Alarm>,
    ctx: &NotificationContext,
) -> bool {
    let Some(f) = filter else {
        return true;
    };
    if !passes(constraint(&f.notification_types), Some(&ty)) {
        return false;
    }
    let Some(alarm) = alarm else {
        return true;
    };
    let resource_type = alarm
        .root_cause_faulty_resource
        .as_ref()
        .map(|r| r.faulty_resource_type);
    // A cleared alarm is also found by the severity it was raised with (the caller routes
    // it so): a subscriber to WARNING alarms hears that its WARNING alarm cleared.
    let severities = constraint(&f.perceived_severities);
    let severity_passes = passes(severities, Some(&alarm.perceived_severity))
        || (ty == FmNotificationType::AlarmClearedNotification
            && passes(severities, Some(&PerceivedSeverity::Cleared)));
    passes(constraint(&f.faulty_resource_types), resource_type.as_ref())
        && severity_passes
        && passes(constraint(&f.event_types), Some(&alarm.event_type))
        && passes(constraint(&f.probable_causes), Some(&alarm.probable_cause))
        && f.vnf_instance_subscription_filter
            .as_ref()
            .is_none_or(|i| instance_matches(i, &alarm.managed_object_id, ctx))
}

/// The alarm a new report describes, with id `id`, raised at `now`, its links made by `links`
/// (the alarm and its instance in the v1 interfaces, as `vnffm/v1` has them).
pub fn new_alarm(
    links: &dyn ResourceLinks,
    id: &str,
    report: &FaultReport,
    now: &DateTime,
) -> Alarm {
    let fault = &report.fault;
    Alarm {
        id: id.to_owned(),
        managed_object_id: fault.instance_id.clone(),
        // A fault of several VNFCs names them comma-separated (an alert's label).
        vnfc_instance_ids: fault
            .vnfc_instance_id
            .as_deref()
            .map(|c| c.split(',').map(|v| v.trim().to_owned()).collect()),
        root_cause_faulty_resource: report.faulty_resource.clone(),
        alarm_raised_time: now.clone(),
        alarm_changed_time: None,
        alarm_cleared_time: None,
        ack_state: AckState::Unacknowledged,
        alarm_acknowledged_time: None,
        perceived_severity: report.severity,
        event_time: report.event_time.clone().unwrap_or_else(|| now.clone()),
        event_type: report.event_type,
        fault_type: fault.fault_type.clone(),
        probable_cause: fault.probable_cause.clone(),
        is_root_cause: true,
        correlated_alarm_ids: None,
        fault_details: (!report.details.is_empty()).then(|| report.details.clone()),
        links: AlarmLinks {
            self_: Link::new(links.href(LinkTarget::Alarm { id })),
            object_instance: Some(Link::new(links.href(LinkTarget::Instance {
                version: ApiVersion::V1,
                id: fault.instance_id.as_str(),
            }))),
        },
    }
}

/// `open` updated by a repeated `report`; `None` when the report changes nothing.
pub fn updated_alarm(open: &Alarm, report: &FaultReport, now: &DateTime) -> Option<Alarm> {
    let mut next = open.clone();
    next.perceived_severity = report.severity;
    next.event_type = report.event_type;
    if report.faulty_resource.is_some() {
        next.root_cause_faulty_resource = report.faulty_resource.clone();
    }
    if !report.details.is_empty() {
        next.fault_details = Some(report.details.clone());
    }
    if &next == open {
        return None;
    }
    next.event_time = report.event_time.clone().unwrap_or_else(|| now.clone());
    next.alarm_changed_time = Some(now.clone());
    Some(next)
}

/// Fault management: alarms and FM subscriptions over the store.
#[derive(Clone)]
pub struct FaultManager {
    store: Arc<dyn FaultManagerStore>,
    subscriptions: ManagedSubscriptions<FmKind>,
    auto_heal: Option<AutoHeal>,
    auto_scale: Option<AutoScale>,
}

impl std::fmt::Debug for FaultManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultManager").finish_non_exhaustive()
    }
}

impl FaultManager {
    /// Alarms and FM subscriptions in `store`; subscription credentials sealed by `keyring`,
    /// callbacks tested through `sender`.
    pub fn new(
        store: Arc<dyn FaultManagerStore>,
        keyring: Arc<Keyring>,
        sender: Arc<dyn CallbackSender>,
    ) -> Self {
        let subscriptions = ManagedSubscriptions::new(store.clone(), keyring, sender);
        FaultManager {
            store,
            subscriptions,
            auto_heal: None,
            auto_scale: None,
        }
    }

    /// The same fault manager, its alarms and subscriptions linked by `links`.
    pub fn with_links(mut self, links: Arc<dyn ResourceLinks>) -> Self {
        self.subscriptions = self.subscriptions.with_links(links);
        self
    }

    /// The same fault manager, healing automatically: an alarm that becomes severe enough
    /// makes `auto_heal` consider a HEAL of its VNFCs (see [`auto_heal`]), in the background
    /// so that raising the alarm does not wait for it.
    pub fn with_auto_heal(mut self, auto_heal: AutoHeal) -> Self {
        self.auto_heal = Some(auto_heal);
        self
    }

    /// The automatic healing in force, if any.
    pub fn auto_heal(&self) -> Option<&AutoHeal> {
        self.auto_heal.as_ref()
    }

    /// The same fault manager, also carrying the automatic scaling that the monitoring
    /// system's scale requests ([`FaultManager::request_scale`]) go to.
    pub fn with_auto_scale(mut self, auto_scale: AutoScale) -> Self {
        self.auto_scale = Some(auto_scale);
        self
    }

    /// The automatic scaling in force, if any.
    pub fn auto_scale(&self) -> Option<&AutoScale> {
        self.auto_scale.as_ref()
    }

    /// A monitoring system asks for a SCALE of `aspect_id` by `steps` on `instance` (e.g. a
    /// firing `auto_scale` alert): handed to automatic scaling in the background (see
    /// [`auto_scale`]), and logged. `false` when automatic scaling is off.
    pub fn request_scale(
        &self,
        instance: &VnfInstanceId,
        scale_out: bool,
        aspect_id: &str,
        steps: u32,
        cause: &str,
    ) -> bool {
        let Some(auto_scale) = &self.auto_scale else {
            return false;
        };
        let (auto_scale, instance) = (auto_scale.clone(), instance.clone());
        let (aspect_id, cause) = (aspect_id.to_owned(), cause.to_owned());
        tokio::spawn(async move {
            let outcome = auto_scale
                .consider(&instance, scale_out, &aspect_id, steps, &cause)
                .await;
            let direction = if scale_out { "SCALE_OUT" } else { "SCALE_IN" };
            outcome.log(&format!("{direction} of {aspect_id} ({cause})"), &instance);
        });
        true
    }

    /// A monitoring system asks for a HEAL of `vnfcs` (`vnfcInfo` ids) of `instance` (e.g. a
    /// firing `auto_heal` alert of Tacker's plugin): gathered with the other requests for the
    /// instance and healed in the background (see [`AutoHeal::request`]). `false` when
    /// automatic healing is off.
    pub fn request_heal(&self, instance: &VnfInstanceId, vnfcs: &[String], cause: &str) -> bool {
        let Some(auto_heal) = &self.auto_heal else {
            return false;
        };
        auto_heal.request(instance, vnfcs, cause);
        true
    }

    /// The FM subscriptions.
    pub fn subscriptions(&self) -> &ManagedSubscriptions<FmKind> {
        &self.subscriptions
    }

    /// Raises the fault of `report`, or updates its open alarm. Returns the alarm as stored
    /// and what was done.
    pub async fn raise(&self, report: &FaultReport) -> Result<(Alarm, Raised), LcmError> {
        if report.severity == PerceivedSeverity::Cleared {
            return Err(LcmError::invalid(
                "/perceivedSeverity",
                "a raise cannot have severity CLEARED; clear the fault instead",
            ));
        }
        let key = report.fault.dedup_key();
        for _ in 0..ATTEMPTS {
            let now = DateTime::now();
            let open = self.store.open_alarm(&key).await.map_err(store_err)?;
            let before = open.as_ref().map(|(o, _)| o.alarm.perceived_severity);
            let (alarm, version) = match open {
                Some((open, version)) => match updated_alarm(&open.alarm, report, &now) {
                    Some(alarm) => (alarm, Some(version)),
                    None => {
                        let id = open.alarm.id.clone();
                        return Ok((open.alarm, Raised::Unchanged(id)));
                    }
                },
                None => {
                    let links = &**self.subscriptions.links();
                    (new_alarm(links, &new_id(), report, &now), None)
                }
            };
            let ty = FmNotificationType::AlarmNotification;
            if let Some(alarm) = self.write(alarm, &key, ty, version).await? {
                tracing::info!(
                    alarm_id = %alarm.id,
                    vnf_instance_id = %report.fault.instance_id,
                    severity = ?report.severity,
                    new = version.is_none(),
                    "alarm raised"
                );
                self.heal_if_wanted(before, &alarm);
                let id = alarm.id.clone();
                let raised = match version {
                    None => Raised::New(id),
                    Some(_) => Raised::Updated(id),
                };
                return Ok((alarm, raised));
            }
        }
        Err(LcmError::conflict(format!(
            "the alarm of fault {key} kept changing under {ATTEMPTS} attempts to raise it; retry"
        )))
    }

    /// Hands `alarm` (previously at severity `before`, `None` when new) to automatic
    /// healing when it just became severe enough, and logs what came of it.
    fn heal_if_wanted(&self, before: Option<PerceivedSeverity>, alarm: &Alarm) {
        let Some(auto_heal) = &self.auto_heal else {
            return;
        };
        if !auto_heal.triggered_by(before, alarm.perceived_severity) {
            return;
        }
        let (auto_heal, alarm) = (auto_heal.clone(), alarm.clone());
        tokio::spawn(async move {
            let outcome = auto_heal.consider(&alarm).await;
            outcome.log(
                &format!("HEAL for alarm {}", alarm.id),
                &alarm.managed_object_id,
            );
        });
    }

    /// Clears the open alarm of `fault` at `at` (now when absent): severity `CLEARED`,
    /// `alarmClearedTime` set, an `AlarmClearedNotification` to the matching subscriptions.
    /// `None` when no alarm of the fault is open.
    pub async fn clear(
        &self,
        fault: &FaultId,
        at: Option<DateTime>,
    ) -> Result<Option<Alarm>, LcmError> {
        let key = fault.dedup_key();
        for _ in 0..ATTEMPTS {
            let Some((open, version)) = self.store.open_alarm(&key).await.map_err(store_err)?
            else {
                return Ok(None);
            };
            let now = DateTime::now();
            let mut alarm = open.alarm;
            let raised_as = alarm.perceived_severity;
            alarm.perceived_severity = PerceivedSeverity::Cleared;
            alarm.alarm_cleared_time = Some(at.clone().unwrap_or_else(|| now.clone()));
            alarm.alarm_changed_time = Some(now);
            let ty = FmNotificationType::AlarmClearedNotification;
            let written = self
                .write_routed(alarm, &key, ty, Some(version), Some(raised_as))
                .await?;
            if let Some(alarm) = written {
                tracing::info!(alarm_id = %alarm.id, "alarm cleared");
                return Ok(Some(alarm));
            }
        }
        Err(LcmError::conflict(format!(
            "the alarm of fault {key} kept changing under {ATTEMPTS} attempts to clear it; retry"
        )))
    }

    /// Writes `alarm` (new when `version` is `None`, else over that version) with the
    /// notifications of type `ty` about it. `None` when a concurrent writer got there first
    /// (another open alarm of the fault, or a newer version): the caller reads again.
    async fn write(
        &self,
        alarm: Alarm,
        key: &str,
        ty: FmNotificationType,
        version: Option<Version>,
    ) -> Result<Option<Alarm>, LcmError> {
        self.write_routed(alarm, key, ty, version, None).await
    }

    /// [`Self::write`], the subscriptions matched as if the alarm's severity were
    /// `routed_severity` when given (a cleared alarm is routed by the severity it had).
    async fn write_routed(
        &self,
        alarm: Alarm,
        key: &str,
        ty: FmNotificationType,
        version: Option<Version>,
        routed_severity: Option<PerceivedSeverity>,
    ) -> Result<Option<Alarm>, LcmError> {
        let rows = match routed_severity {
            Some(severity) => {
                let mut routed = alarm.clone();
                routed.perceived_severity = severity;
                self.route(ty, Some(&routed)).await?
            }
            None => self.route(ty, Some(&alarm)).await?,
        };
        let record = AlarmRecord {
            alarm,
            dedup_key: key.to_owned(),
        };
        let written = match version {
            None => self.store.create_alarm(&record, &rows).await,
            Some(v) => self.store.update_alarm(&record, v, &rows).await,
        };
        match written {
            Ok(_) => Ok(Some(record.alarm)),
            Err(
                StoreError::Conflict(Conflict::AlreadyExists { .. })
                | StoreError::VersionMismatch { .. }
                | StoreError::NotFound { .. },
            ) => Ok(None),
            Err(e) => Err(store_err(e)),
        }
    }

    /// The alarm and its version (the entity tag of its resource).
    pub async fn get(&self, id: &str) -> Result<(Alarm, Version), LcmError> {
        let (record, version) = self.record(id).await?;
        Ok((record.alarm, version))
    }

    /// The stored alarm `id` and its version; [`LcmError::NotFound`] when there is none.
    async fn record(&self, id: &str) -> Result<(AlarmRecord, Version), LcmError> {
        self.store
            .get_alarm(id)
            .await
            .map_err(store_err)?
            .ok_or_else(|| LcmError::NotFound {
                kind: "alarm",
                id: id.to_owned(),
            })
    }

    /// One page of the alarms (open and cleared) in `scope`, ordered by id. An alarm belongs
    /// to the project of its VNF instance.
    pub async fn list(
        &self,
        scope: &ProjectScope,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<(Alarm, Version)>, LcmError> {
        let page = self
            .store
            .list_alarms(scope, after, limit)
            .await
            .map_err(store_err)?;
        Ok(Page {
            items: page.items.into_iter().map(|(r, v)| (r.alarm, v)).collect(),
            next: page.next,
        })
    }

    /// Sets `ackState` to `ACKNOWLEDGED` (see [`FaultManager::set_ack_state`]).
    pub async fn acknowledge(
        &self,
        id: &str,
        expected: Option<Version>,
    ) -> Result<(Alarm, Version), LcmError> {
        self.set_ack_state(id, AckState::Acknowledged, expected)
            .await
    }

    /// Sets `ackState` to `state` if the alarm is still at version `expected` (when given):
    /// [`LcmError::AlarmChanged`] if it is not, [`LcmError::Conflict`] if the alarm is already
    /// in that state. Acknowledging sets `alarmAcknowledgedTime` to now; unacknowledging
    /// (SOL003 v3.3.1, as OpenStack Tacker allows) removes it. Returns the alarm and its new
    /// version.
    pub async fn set_ack_state(
        &self,
        id: &str,
        state: AckState,
        expected: Option<Version>,
    ) -> Result<(Alarm, Version), LcmError> {
        let (record, found) = self.record(id).await?;
        let version = expected.unwrap_or(found);
        if version != found {
            return Err(LcmError::AlarmChanged {
                id: id.to_owned(),
                current: found.etag(),
            });
        }
        if record.alarm.ack_state == state {
            let name = match state {
                AckState::Acknowledged => "ACKNOWLEDGED",
                AckState::Unacknowledged => "UNACKNOWLEDGED",
            };
            return Err(LcmError::conflict(format!("alarm {id} is already {name}")));
        }
        let mut record = record;
        record.alarm.ack_state = state;
        record.alarm.alarm_acknowledged_time =
            (state == AckState::Acknowledged).then(DateTime::now);
        match self.store.update_alarm(&record, version, &[]).await {
            Ok(v) => {
                tracing::info!(alarm_id = %id, ?state, "alarm acknowledgement changed");
                Ok((record.alarm, v))
            }
            Err(StoreError::VersionMismatch { found, .. }) => Err(LcmError::AlarmChanged {
                id: id.to_owned(),
                current: found.etag(),
            }),
            Err(e) => Err(store_err(e)),
        }
    }

    /// Escalates (or lowers) the perceived severity of the open alarm `id` to `severity`, as
    /// the EM asks through SOL002's escalate task: the alarm changes and an
    /// `AlarmNotification` goes out (nothing when it already has that severity); a severity
    /// that becomes severe enough may start an automatic heal. [`LcmError::NotFound`] for an
    /// unknown alarm, a conflict for a cleared one, invalid for `CLEARED` (clear the fault
    /// instead).
    pub async fn escalate(&self, id: &str, severity: PerceivedSeverity) -> Result<Alarm, LcmError> {
        if severity == PerceivedSeverity::Cleared {
            return Err(LcmError::invalid(
                "/proposedPerceivedSeverity",
                "an alarm cannot be escalated to CLEARED; the condition's end clears it",
            ));
        }
        for _ in 0..ATTEMPTS {
            let (record, version) = self.record(id).await?;
            let mut alarm = record.alarm;
            if alarm.alarm_cleared_time.is_some() {
                return Err(LcmError::conflict(format!(
                    "alarm {id} is cleared: its severity can no longer change"
                )));
            }
            let before = alarm.perceived_severity;
            if before == severity {
                return Ok(alarm);
            }
            alarm.perceived_severity = severity;
            alarm.alarm_changed_time = Some(DateTime::now());
            let ty = FmNotificationType::AlarmNotification;
            if let Some(alarm) = self
                .write(alarm, &record.dedup_key, ty, Some(version))
                .await?
            {
                tracing::info!(alarm_id = %id, ?before, ?severity, "alarm severity escalated");
                self.heal_if_wanted(Some(before), &alarm);
                return Ok(alarm);
            }
        }
        Err(LcmError::conflict(format!(
            "alarm {id} kept changing under {ATTEMPTS} attempts to escalate it; retry"
        )))
    }

    /// Sends an `AlarmListRebuiltNotification` to every subscription that wants it (after the
    /// alarm list was rebuilt, e.g. restored from a backup).
    pub async fn announce_rebuilt(&self) -> Result<usize, LcmError> {
        let rows = self
            .route(FmNotificationType::AlarmListRebuiltNotification, None)
            .await?;
        let n = rows.len();
        self.store.enqueue(&rows).await.map_err(store_err)?;
        Ok(n)
    }

    /// The outbox rows of a notification of type `ty` (about `alarm`): one per subscription
    /// whose filter matches, `ordering_key` the alarm's instance, so a subscriber gets one
    /// instance's alarms in the order they happened.
    async fn route(
        &self,
        ty: FmNotificationType,
        alarm: Option<&Alarm>,
    ) -> Result<Vec<NewOutboxRow>, LcmError> {
        let subs = self.subscriptions.routing().await?;
        if subs.is_empty() {
            return Ok(Vec::new());
        }
        // An alarm is its instance's project's; a rebuilt alarm list concerns no project.
        let project = match alarm {
            Some(a) => {
                subs.project_of(
                    &*self.store,
                    ScopedKind::Instance,
                    a.managed_object_id.as_str(),
                )
                .await?
            }
            None => None,
        };
        let receivers: Vec<&FmSubscription> = match alarm {
            Some(_) => subs.receiving(project.as_deref()).collect(),
            None => subs.everyone().collect(),
        };
        let ctx = match alarm {
            Some(a) => match self
                .store
                .get_instance(&a.managed_object_id)
                .await
                .map_err(store_err)?
            {
                Some((instance, _)) => NotificationContext::from_instance(&instance),
                None => NotificationContext::default(),
            },
            None => NotificationContext::default(),
        };
        let now = Timestamp::now();
        let at = DateTime::now();
        let mut rows = Vec::new();
        let traceparent = vnfm_lcm::subscriptions::current_traceparent();
        for sub in receivers
            .into_iter()
            .filter(|s| matches(s.filter.as_ref(), ty, alarm, &ctx))
        {
            let links = &**self.subscriptions.links();
            let id = NotificationId::new(new_id());
            let n = notification(links, ty, sub, alarm, id, at.clone());
            let payload = serde_json::to_value(&n).map_err(|e| {
                LcmError::inconsistent("FM notification does not serialize").because(e)
            })?;
            rows.push(NewOutboxRow {
                subscription_id: sub.id.clone(),
                callback_uri: sub.callback_uri.clone(),
                payload,
                not_before: now,
                ordering_key: alarm
                    .map(|a| a.managed_object_id.to_string())
                    .unwrap_or_default(),
                traceparent: traceparent.clone(),
            });
        }
        Ok(rows)
    }
}

/// The notification of type `ty` for `sub` (about `alarm`, which the alarm types need).
fn notification(
    links: &dyn ResourceLinks,
    ty: FmNotificationType,
    sub: &FmSubscription,
    alarm: Option<&Alarm>,
    id: NotificationId,
    at: DateTime,
) -> FmNotification {
    let subscription = Link::new(sub.links.self_.href.clone());
    match (ty, alarm) {
        (FmNotificationType::AlarmNotification, Some(a)) => {
            FmNotification::Alarm(Box::new(AlarmNotification {
                id,
                notification_type: ty,
                subscription_id: sub.id.clone(),
                time_stamp: at,
                alarm: a.clone(),
                links: AlarmNotificationLinks { subscription },
            }))
        }
        (FmNotificationType::AlarmClearedNotification, Some(a)) => {
            FmNotification::Cleared(AlarmClearedNotification {
                id,
                notification_type: ty,
                subscription_id: sub.id.clone(),
                time_stamp: at.clone(),
                alarm_id: a.id.clone(),
                alarm_cleared_time: a.alarm_cleared_time.clone().unwrap_or(at),
                links: AlarmClearedNotificationLinks {
                    subscription,
                    alarm: a.links.self_.clone(),
                },
            })
        }
        _ => FmNotification::Rebuilt(AlarmListRebuiltNotification {
            id,
            notification_type: FmNotificationType::AlarmListRebuiltNotification,
            subscription_id: sub.id.clone(),
            time_stamp: at,
            links: AlarmListRebuiltNotificationLinks {
                subscription,
                alarms: Link::new(links.href(LinkTarget::Alarms)),
            },
        }),
    }
}

/// A core error as a port's error: retryable kinds transient, the rest permanent.
pub(crate) fn driver_error(e: LcmError) -> DriverError {
    let message = e.to_string();
    match e.kind() {
        vnfm_types::ErrorKind::Conflict
        | vnfm_types::ErrorKind::Unavailable
        | vnfm_types::ErrorKind::Timeout
        | vnfm_types::ErrorKind::Internal => DriverError::Transient {
            message,
            source: Some(Arc::new(e)),
        },
        _ => DriverError::Permanent {
            message,
            source: Some(Arc::new(e)),
        },
    }
}

#[async_trait]
impl FaultSink for FaultManager {
    async fn raise(&self, report: FaultReport) -> Result<Raised, DriverError> {
        FaultManager::raise(self, &report)
            .await
            .map(|(_, r)| r)
            .map_err(driver_error)
    }

    async fn clear(
        &self,
        fault: &FaultId,
        at: Option<DateTime>,
    ) -> Result<Option<String>, DriverError> {
        FaultManager::clear(self, fault, at)
            .await
            .map(|a| a.map(|a| a.id))
            .map_err(driver_error)
    }
}

#[cfg(test)]
mod tests;
