//! Values a monitoring system measures and pushes, instead of the collector reading them
//! (OpenStack Tacker's Prometheus plugin: its alerting rules measure each PM job's and
//! threshold's metric and post the value): a value for a PM job makes a performance report
//! of it, with its notifications, as a collected one does; a value for a threshold is
//! followed through the threshold's hysteresis band, as an evaluated one is, and a crossing
//! is notified (and may scale automatically).
//!
//! What the push names must fit the job or threshold, as Tacker checks it: the object
//! instance one of the job's (the threshold's), the sub-object one of its sub-objects when
//! given, and for a threshold the metric its own. A job past its `reportingBoundary` takes no
//! more values, and a job reported less than its reporting period ago (less a second, for the
//! clocks of the two systems) takes none yet: the push is answered [`Pushed::Skipped`].

use std::time::{Duration, SystemTime};

use vnfm_driver_api::metrics::{MetricPoint, MetricSeries};
use vnfm_types::time::{Timestamp, parse_rfc3339};
use vnfm_types::{PmJob, PmObjectType, Threshold};

use super::PerformanceManager;
use super::collector::{Collected, parse_state};
use super::logic::{self, ThresholdState};
use vnfm_lcm::LcmError;

/// How many times a push is tried again when the job changed under it.
const ATTEMPTS: usize = 3;

/// Slack for the two clocks when a job's reporting period is measured (Tacker's
/// `reporting_period_margin`).
const REPORTING_MARGIN: Duration = Duration::from_secs(1);

/// One value a monitoring system measured.
#[derive(Debug, Clone, PartialEq)]
pub struct PushedValue {
    /// The measured VNF instance.
    pub object_instance_id: String,
    /// The measured VNFC or connection point, if any.
    pub sub_object_instance_id: Option<String>,
    /// The performance metric, as the job or threshold names it.
    pub metric: String,
    /// The value.
    pub value: f64,
    /// When it was measured.
    pub at: SystemTime,
}

impl PushedValue {
    fn series(&self) -> [MetricSeries; 1] {
        [MetricSeries {
            sub_object_instance_id: self.sub_object_instance_id.clone(),
            points: vec![MetricPoint {
                at: self.at,
                value: self.value,
            }],
        }]
    }
}

/// What came of a pushed value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pushed {
    /// A performance report of the job was stored and notified.
    Reported,
    /// The threshold followed the value; this many crossings were notified.
    Evaluated {
        /// Crossings notified.
        crossings: usize,
    },
    /// The value does not fit the job or threshold, or comes too early: nothing was written.
    Skipped {
        /// Why.
        reason: String,
    },
}

fn skipped(reason: String) -> Result<Pushed, LcmError> {
    Ok(Pushed::Skipped { reason })
}

/// Why `sub` is not one of `subs`, if it is not.
fn foreign_sub(sub: Option<&String>, subs: Option<&Vec<String>>) -> Option<String> {
    let sub = sub?;
    (!subs.is_some_and(|s| s.contains(sub))).then(|| format!("it has no sub-object {sub:?}"))
}

impl PerformanceManager {
    /// Makes a performance report of PM job `job_id` of the pushed `value`, and notifies it
    /// (see the [module documentation](self)). [`LcmError::NotFound`] for an unknown job.
    pub async fn push_job_value(
        &self,
        job_id: &str,
        value: &PushedValue,
    ) -> Result<Pushed, LcmError> {
        for _ in 0..ATTEMPTS {
            let (record, version) = self.record::<PmJob>(job_id).await?;
            let job = &record.resource;
            if !job.object_instance_ids.contains(&value.object_instance_id) {
                return skipped(format!(
                    "PM job {job_id} does not measure instance {}",
                    value.object_instance_id
                ));
            }
            let subs = job.sub_object_instance_ids.as_ref();
            if let Some(why) = foreign_sub(value.sub_object_instance_id.as_ref(), subs) {
                return skipped(format!("PM job {job_id}: {why}"));
            }
            let now = Timestamp::try_from(value.at).unwrap_or_else(|_| Timestamp::now());
            let boundary = job.criteria.reporting_boundary.as_ref();
            if boundary
                .and_then(|b| parse_rfc3339(b.as_str()))
                .is_some_and(|b| now > b)
            {
                return skipped(format!("PM job {job_id} is past its reportingBoundary"));
            }
            let period =
                Duration::from_secs(job.criteria.reporting_period).saturating_sub(REPORTING_MARGIN);
            let last = job.reports.iter().flatten().last();
            let last = last.and_then(|r| parse_rfc3339(r.ready_time.as_str()));
            if let Some(last) = last
                && now >= last
                && now.duration_since(last).unsigned_abs() < period
            {
                return skipped(format!(
                    "PM job {job_id} was reported less than its reporting period ago"
                ));
            }
            let t: PmObjectType =
                job.object_type
                    .parse()
                    .map_err(|e: vnfm_types::UnknownObjectType| {
                        LcmError::inconsistent(format!("stored PM job {job_id}: {e}"))
                    })?;
            let entries =
                logic::report_entries(t, &value.object_instance_id, &value.metric, &value.series());
            if self.store_report(record, version, entries).await? {
                return Ok(Pushed::Reported);
            }
        }
        Err(LcmError::conflict(format!(
            "PM job {job_id} kept changing under {ATTEMPTS} attempts to report a pushed value"
        )))
    }

    /// Follows threshold `threshold_id` through the pushed `value` and notifies a crossing
    /// (see the [module documentation](self)). [`LcmError::NotFound`] for an unknown
    /// threshold.
    pub async fn push_threshold_value(
        &self,
        threshold_id: &str,
        value: &PushedValue,
    ) -> Result<Pushed, LcmError> {
        let (record, version) = self.record::<Threshold>(threshold_id).await?;
        let th = &record.resource;
        if th.object_instance_id != value.object_instance_id {
            return skipped(format!(
                "threshold {threshold_id} is not of instance {}",
                value.object_instance_id
            ));
        }
        let subs = th.sub_object_instance_ids.as_ref();
        if let Some(why) = foreign_sub(value.sub_object_instance_id.as_ref(), subs) {
            return skipped(format!("threshold {threshold_id}: {why}"));
        }
        if th.criteria.performance_metric != value.metric {
            return skipped(format!(
                "threshold {threshold_id} is of metric {}, not {}",
                th.criteria.performance_metric, value.metric
            ));
        }
        let state: ThresholdState = parse_state(record.state.as_deref());
        let mut out = Collected::default();
        self.apply_threshold_values(record, version, state, &value.series(), &mut out)
            .await?;
        Ok(Pushed::Evaluated {
            crossings: out.crossings,
        })
    }
}
