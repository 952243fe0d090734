//! The collector: at each run ([`PerformanceManager::collect_due`], called every few seconds
//! by a [`Collector`] task), every PM job whose report is due reads its metrics through the
//! [`vnfm_driver_api::metrics::MetricsSource`] port, stores a performance report and
//! notifies; every threshold whose evaluation is due reads its metric and notifies the
//! crossings, and, once that is stored, hands each crossing to automatic scaling (when on).
//!
//! The schedule lives in the store with the job or threshold (its `state`), written in the
//! same transaction as the report and the notifications, under the record's version: the
//! schedule survives restarts, and when several replicas collect, the one whose write lands
//! first makes the report and the others drop theirs. A reporting period the collector missed
//! entirely (the server was down) is not reported afterwards; the next one is.

use std::time::{Duration, SystemTime};

use serde_json::Value;
use vnfm_driver_api::metrics::{MetricQuery, MetricSeries};
use vnfm_store::{
    Page, PmJobRecord, PmReportRecord, PmResource, StoreError, StoredPm, ThresholdRecord, Version,
};
use vnfm_types::links::{LinkTarget, ResourceLinks};
use vnfm_types::{
    CrossingDirection, DateTime, Link, NotificationId, PerformanceInformationAvailableLinks,
    PerformanceInformationAvailableNotification, PerformanceReport, PmJob, PmJobReport,
    PmNotificationType, PmObjectType, PmSubscription, Threshold, ThresholdCrossedLinks,
    ThresholdCrossedNotification,
};

use super::logic::{self, JobState, ThresholdState};
use super::{PerformanceManager, PmApi, to_state};
use vnfm_lcm::LcmError;
use vnfm_lcm::secrets::new_id;
use vnfm_lcm::vim::store_err;

/// What one run of the collector did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Collected {
    /// Reports stored.
    pub reports: usize,
    /// Threshold crossings notified.
    pub crossings: usize,
    /// Automatic SCALEs that threshold crossings started.
    pub scalings: usize,
    /// Reads that failed (logged).
    pub failures: usize,
}

/// The background task running the collector.
#[derive(Debug)]
pub struct Collector {
    _task: vnfm_lcm::periodic::Periodic,
}

impl Collector {
    /// Runs `pm`'s collector every `tick` until dropped. Must be called inside a tokio
    /// runtime.
    pub fn start(pm: PerformanceManager, tick: Duration) -> Collector {
        let task = vnfm_lcm::periodic::Periodic::start(tick, move || {
            let pm = pm.clone();
            async move {
                if let Err(e) = pm.collect_due(SystemTime::now()).await {
                    tracing::warn!(error = %e, "PM collection failed; trying again at the next run");
                }
            }
        });
        Collector { _task: task }
    }
}

pub(super) fn parse_state<T: serde::de::DeserializeOwned + Default>(state: Option<&str>) -> T {
    state
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or_default()
}

fn object_type(s: &str) -> Result<PmObjectType, LcmError> {
    s.parse().map_err(|e: vnfm_types::UnknownObjectType| {
        LcmError::inconsistent(format!("stored PM resource: {e}"))
    })
}

impl PerformanceManager {
    /// Reports every due PM job and evaluates every due threshold, as of `now`.
    pub async fn collect_due(&self, now: SystemTime) -> Result<Collected, LcmError> {
        let mut out = Collected::default();
        let mut cursor = Some(None);
        while let Some(after) = cursor.take() {
            let page = self.page_of::<PmJob>(after).await?;
            cursor = page.next.map(Some);
            for (record, version) in page.items {
                let id = record.resource.id.clone();
                if let Err(e) = self.report_job(record, version, now, &mut out).await {
                    tracing::warn!(pm_job_id = %id, error = %e, "PM job report failed");
                    out.failures += 1;
                }
            }
        }
        let mut cursor = Some(None);
        while let Some(after) = cursor.take() {
            let page = self.page_of::<Threshold>(after).await?;
            cursor = page.next.map(Some);
            for (record, version) in page.items {
                let id = record.resource.id.clone();
                if let Err(e) = self.evaluate(record, version, now, &mut out).await {
                    tracing::warn!(threshold_id = %id, error = %e, "threshold evaluation failed");
                    out.failures += 1;
                }
            }
        }
        Ok(out)
    }

    /// The largest page of stored PM jobs or thresholds after `after`.
    async fn page_of<T: PmResource>(
        &self,
        after: Option<String>,
    ) -> Result<Page<(StoredPm<T>, Version)>, LcmError> {
        self.store()
            .pm::<T>()
            .list_pm(after.as_deref(), vnfm_store::MAX_PAGE_SIZE)
            .await
            .map_err(store_err)
    }

    /// The series of `metric` of `object` (with `subs`) from `start` to `end`; `None` (logged)
    /// when the read failed.
    #[allow(clippy::too_many_arguments)]
    async fn read(
        &self,
        metric: &str,
        t: PmObjectType,
        object: &str,
        subs: &[String],
        period: Duration,
        start: SystemTime,
        end: SystemTime,
    ) -> Option<Vec<MetricSeries>> {
        let query = MetricQuery {
            metric,
            object_type: t,
            object_instance_id: object,
            sub_object_instance_ids: subs,
            collection_period: period,
            start,
            end,
        };
        match self.metrics().read(&query).await {
            Ok(series) => Some(series),
            Err(e) => {
                tracing::warn!(metric, vnf_instance_id = object, error = %e, "reading a metric failed");
                None
            }
        }
    }

    async fn report_job(
        &self,
        mut record: PmJobRecord,
        version: Version,
        now: SystemTime,
        out: &mut Collected,
    ) -> Result<(), LcmError> {
        let now_s = logic::unix_seconds(now);
        let job = &record.resource;
        let c = &job.criteria;
        let mut state: JobState = parse_state(record.state.as_deref());
        if state.next_report_at == 0 {
            state.next_report_at = now_s + c.reporting_period;
        }
        if state.next_report_at > now_s {
            return Ok(());
        }
        let due = state.next_report_at;
        let past_boundary = c
            .reporting_boundary
            .as_ref()
            .and_then(|b| vnfm_types::time::parse_rfc3339(b.as_str()))
            .is_some_and(|b| b.as_second() < i64::try_from(due).unwrap_or(i64::MAX));
        state.next_report_at = logic::next_due(due, c.reporting_period, now_s);
        let t = object_type(&job.object_type)?;
        let period = Duration::from_secs(c.collection_period);
        let end = logic::from_unix_seconds(due);
        let start = end - Duration::from_secs(c.reporting_period - c.collection_period);
        let subs = job.sub_object_instance_ids.clone().unwrap_or_default();
        let mut entries = Vec::new();
        if !past_boundary {
            for object in &job.object_instance_ids {
                for metric in c.performance_metric.iter().flatten() {
                    match self
                        .read(metric, t, object, &subs, period, start, end)
                        .await
                    {
                        Some(series) => {
                            entries.extend(logic::report_entries(t, object, metric, &series));
                        }
                        None => out.failures += 1,
                    }
                }
            }
        }
        record.state = Some(to_state(&state)?);
        if entries.is_empty() {
            // Nothing measured: the schedule moves on, nobody is notified.
            return self.write_job_state(&record, version).await;
        }
        if self.store_report(record, version, entries).await? {
            out.reports += 1;
        }
        Ok(())
    }

    /// Stores a report of `entries` for the job of `record` (at `version`, with the state it
    /// carries) and its notifications; `false` when the job changed or was deleted meanwhile
    /// (nothing written).
    pub(super) async fn store_report(
        &self,
        mut record: PmJobRecord,
        version: Version,
        entries: Vec<vnfm_types::PerformanceReportEntry>,
    ) -> Result<bool, LcmError> {
        let job = &record.resource;
        let report_id = new_id();
        let href = self.links().href(LinkTarget::PmReport {
            version: version_of(self.links(), &job.links.self_.href),
            job: &job.id,
            report: &report_id,
        });
        let ready = DateTime::now();
        let job = &mut record.resource;
        let reports = job.reports.get_or_insert_with(Vec::new);
        reports.push(PmJobReport {
            href: href.clone(),
            ready_time: ready.clone(),
            expiry_time: None,
            file_size: None,
        });
        let excess = reports
            .len()
            .saturating_sub(self.options().max_reports.max(1));
        let dropped: Vec<String> = reports
            .drain(..excess)
            .filter_map(|r| r.href.rsplit('/').next().map(str::to_owned))
            .collect();
        let mut rows = Vec::new();
        for object in &job.object_instance_ids {
            let payload = |sub: Option<&PmSubscription>, id: NotificationId| {
                available(self.links(), job, object, &href, sub, id)
            };
            rows.extend(
                self.route(
                    PmNotificationType::PerformanceInformationAvailableNotification,
                    object,
                    &job.id,
                    job.callback_uri.as_deref(),
                    payload,
                )
                .await?,
            );
        }
        let report = PmReportRecord {
            id: report_id.clone(),
            job_id: job.id.clone(),
            ready_time: ready,
            report: PerformanceReport { entries },
        };
        match self
            .store()
            .add_pm_report(&report, &record, version, &dropped, &rows)
            .await
        {
            Ok(_) => {
                tracing::info!(pm_job_id = %record.resource.id, report_id, "performance report stored");
                Ok(true)
            }
            // Changed meanwhile (modified, deleted, or reported by another replica).
            Err(StoreError::VersionMismatch { .. } | StoreError::NotFound { .. }) => Ok(false),
            Err(e) => Err(store_err(e)),
        }
    }

    async fn write_job_state(
        &self,
        record: &PmJobRecord,
        version: Version,
    ) -> Result<(), LcmError> {
        match self
            .store()
            .pm::<PmJob>()
            .update_pm(record, version, &[])
            .await
        {
            Ok(_) | Err(StoreError::VersionMismatch { .. } | StoreError::NotFound { .. }) => Ok(()),
            Err(e) => Err(store_err(e)),
        }
    }

    async fn evaluate(
        &self,
        mut record: ThresholdRecord,
        version: Version,
        now: SystemTime,
        out: &mut Collected,
    ) -> Result<(), LcmError> {
        let now_s = logic::unix_seconds(now);
        let mut state: ThresholdState = parse_state(record.state.as_deref());
        if state.next_at > now_s {
            return Ok(());
        }
        let period = self.options().threshold_period.max(Duration::from_secs(1));
        state.next_at = now_s + period.as_secs();
        let th = &record.resource;
        let t = object_type(&th.object_type)?;
        let subs = th.sub_object_instance_ids.clone().unwrap_or_default();
        let metric = th.criteria.performance_metric.clone();
        let at = logic::from_unix_seconds(now_s);
        let series = self
            .read(&metric, t, &th.object_instance_id, &subs, period, at, at)
            .await;
        let Some(series) = series else {
            out.failures += 1;
            record.state = Some(to_state(&state)?);
            return self.write_threshold(&record, version, &[]).await.map(drop);
        };
        self.apply_threshold_values(record, version, state, &series, out)
            .await
    }

    /// Follows the threshold of `record` (at `version`, last in `state`) through the last
    /// value of each of `series`: stores its new state with a notification per crossing and,
    /// once stored, hands each crossing to automatic scaling (when on).
    pub(super) async fn apply_threshold_values(
        &self,
        mut record: ThresholdRecord,
        version: Version,
        mut state: ThresholdState,
        series: &[MetricSeries],
        out: &mut Collected,
    ) -> Result<(), LcmError> {
        let th = &record.resource;
        let Some(details) = th.criteria.simple_threshold_details else {
            return Err(LcmError::inconsistent(format!(
                "threshold {} has no simpleThresholdDetails",
                th.id
            )));
        };
        let mut rows = Vec::new();
        let mut directions = Vec::new();
        for s in series {
            let Some(point) = s.points.last() else {
                continue;
            };
            let key = s.sub_object_instance_id.clone().unwrap_or_default();
            let (side, crossed) =
                logic::crossing(state.sides.get(&key).copied(), point.value, &details);
            match side {
                Some(side) => state.sides.insert(key, side),
                None => state.sides.remove(&key),
            };
            let Some(direction) = crossed else {
                continue;
            };
            tracing::info!(threshold_id = %th.id, ?direction, value = point.value, "threshold crossed");
            out.crossings += 1;
            directions.push(direction);
            let payload = |sub: Option<&PmSubscription>, id: NotificationId| {
                let links = self.links();
                crossed_notification(links, th, s, point.value, direction, sub, id)
            };
            rows.extend(
                self.route(
                    PmNotificationType::ThresholdCrossedNotification,
                    &th.object_instance_id,
                    &th.id,
                    th.callback_uri.as_deref(),
                    payload,
                )
                .await?,
            );
        }
        record.state = Some(to_state(&state)?);
        if !self.write_threshold(&record, version, &rows).await? {
            // Another collector evaluated it first: the crossings are its own.
            return Ok(());
        }
        let th = &record.resource;
        if let Some(auto_scale) = self.auto_scale() {
            let instance = vnfm_types::VnfInstanceId::new(&th.object_instance_id);
            for direction in directions {
                let up = direction == CrossingDirection::Up;
                let cause = format!(
                    "threshold {} crossed {}",
                    th.id,
                    if up { "UP" } else { "DOWN" }
                );
                let outcome = auto_scale
                    .consider_crossing(&instance, &th.criteria.performance_metric, up, &cause)
                    .await;
                let what = if up { "SCALE_OUT" } else { "SCALE_IN" };
                outcome.log(&format!("{what} ({cause})"), &instance);
                if matches!(outcome, crate::fm::AutomaticOutcome::Started { .. }) {
                    out.scalings += 1;
                }
            }
        }
        Ok(())
    }

    /// Writes the threshold's state and notifications; `false` when another collector
    /// changed or deleted it first (nothing written).
    async fn write_threshold(
        &self,
        record: &ThresholdRecord,
        version: Version,
        rows: &[vnfm_store::NewOutboxRow],
    ) -> Result<bool, LcmError> {
        match self
            .store()
            .pm::<Threshold>()
            .update_pm(record, version, rows)
            .await
        {
            Ok(_) => Ok(true),
            Err(StoreError::VersionMismatch { .. } | StoreError::NotFound { .. }) => Ok(false),
            Err(e) => Err(store_err(e)),
        }
    }
}

fn subscription_parts(
    sub: Option<&PmSubscription>,
) -> (Option<vnfm_types::SubscriptionId>, Option<Link>) {
    match sub {
        Some(s) => (Some(s.id.clone()), Some(s.links.self_.clone())),
        None => (None, None),
    }
}

/// The interface version of a PM resource whose `_links.self` is `href` (v2 unless `links`
/// reads another).
fn version_of(links: &dyn ResourceLinks, href: &str) -> PmApi {
    links.version_of(href).unwrap_or(PmApi::V2)
}

/// The `PerformanceInformationAvailableNotification` about `object` of `job`'s report `href`.
fn available(
    links: &dyn ResourceLinks,
    job: &vnfm_types::PmJob,
    object: &str,
    href: &str,
    sub: Option<&PmSubscription>,
    id: NotificationId,
) -> Value {
    let (subscription_id, subscription) = subscription_parts(sub);
    let n = PerformanceInformationAvailableNotification {
        id,
        notification_type: PmNotificationType::PerformanceInformationAvailableNotification,
        subscription_id,
        time_stamp: DateTime::now(),
        pm_job_id: job.id.clone(),
        object_type: job.object_type.clone(),
        object_instance_id: object.to_owned(),
        sub_object_instance_ids: job.sub_object_instance_ids.clone(),
        links: PerformanceInformationAvailableLinks {
            subscription,
            object_instance: Some(Link::new(links.href(LinkTarget::Instance {
                version: version_of(links, &job.links.self_.href),
                id: object,
            }))),
            pm_job: job.links.self_.clone(),
            performance_report: Link::new(href),
        },
    };
    serde_json::to_value(n).unwrap_or(Value::Null)
}

/// The `ThresholdCrossedNotification` of `th` for the value `value` of series `s`.
fn crossed_notification(
    links: &dyn ResourceLinks,
    th: &vnfm_types::Threshold,
    s: &MetricSeries,
    value: f64,
    direction: CrossingDirection,
    sub: Option<&PmSubscription>,
    id: NotificationId,
) -> Value {
    let (subscription_id, subscription) = subscription_parts(sub);
    let n = ThresholdCrossedNotification {
        id,
        notification_type: PmNotificationType::ThresholdCrossedNotification,
        subscription_id,
        time_stamp: DateTime::now(),
        threshold_id: th.id.clone(),
        crossing_direction: direction,
        object_type: th.object_type.clone(),
        object_instance_id: th.object_instance_id.clone(),
        sub_object_instance_id: s.sub_object_instance_id.clone(),
        performance_metric: th.criteria.performance_metric.clone(),
        performance_value: serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number),
        context: None,
        links: ThresholdCrossedLinks {
            subscription,
            object_instance: Some(Link::new(links.href(LinkTarget::Instance {
                version: version_of(links, &th.links.self_.href),
                id: &th.object_instance_id,
            }))),
            threshold: th.links.self_.clone(),
        },
    };
    serde_json::to_value(n).unwrap_or(Value::Null)
}
