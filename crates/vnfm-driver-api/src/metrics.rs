//! The metrics port: how performance management reads measurements without knowing the
//! monitoring system (Prometheus, ...).
//!
//! A [`MetricsSource`] answers, for one metric of one object (a VNF instance) and its
//! sub-objects (VNFCs or connection points), the values at every collection period of a time
//! range, one [`MetricSeries`] per measured (sub-)object. It also says which metrics it can
//! measure on which object type, so that a PM job naming an unknown metric is refused when it
//! is created rather than failing at every collection.
//!
//! ```
//! use std::time::{Duration, SystemTime};
//! use vnfm_driver_api::metrics::{MetricQuery, MetricsSource, StaticMetrics};
//! use vnfm_types::PmObjectType;
//!
//! let source = StaticMetrics::new(&[("VCpuUsageMeanVnf", PmObjectType::Vnf)]).with_value(42.0);
//! assert!(source.check("VCpuUsageMeanVnf", PmObjectType::Vnf).is_ok());
//! assert!(source.check("VCpuUsageMeanVnf", PmObjectType::Vnfc).is_err());
//! let end = SystemTime::UNIX_EPOCH + Duration::from_secs(100);
//! let query = MetricQuery {
//!     metric: "VCpuUsageMeanVnf",
//!     object_type: PmObjectType::Vnf,
//!     object_instance_id: "i1",
//!     sub_object_instance_ids: &[],
//!     collection_period: Duration::from_secs(10),
//!     start: end - Duration::from_secs(20),
//!     end,
//! };
//! let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
//! let series = rt.block_on(source.read(&query)).unwrap();
//! assert_eq!(series[0].points.len(), 3);
//! ```

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use vnfm_types::PmObjectType;

use crate::DriverError;

/// What to measure: a metric of one object and its sub-objects, at every
/// `collection_period` from `start` to `end` (both included).
#[derive(Debug, Clone, Copy)]
pub struct MetricQuery<'a> {
    /// The metric name (`VCpuUsageMeanVnf`, ...; a `.suffix` is allowed).
    pub metric: &'a str,
    /// The object type.
    pub object_type: PmObjectType,
    /// The measured VNF instance.
    pub object_instance_id: &'a str,
    /// The sub-objects (VNFC or connection point instance ids); all of them when empty.
    pub sub_object_instance_ids: &'a [String],
    /// The period each value summarizes, and the time between values.
    pub collection_period: Duration,
    /// The first evaluation time.
    pub start: SystemTime,
    /// The last evaluation time.
    pub end: SystemTime,
}

/// One value at one time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MetricPoint {
    /// When.
    pub at: SystemTime,
    /// The value.
    pub value: f64,
}

/// The values of one measured object or sub-object, oldest first.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricSeries {
    /// The sub-object (VNFC or connection point instance), `None` for the object itself.
    pub sub_object_instance_id: Option<String>,
    /// The values.
    pub points: Vec<MetricPoint>,
}

/// Reads performance measurements.
#[async_trait]
pub trait MetricsSource: Send + Sync {
    /// `Ok` when `metric` can be measured on `object_type`; otherwise
    /// [`DriverError::InvalidInput`] saying what can be.
    fn check(&self, metric: &str, object_type: PmObjectType) -> Result<(), DriverError>;

    /// The values of `query`; an object without data has no series. A monitoring system
    /// that cannot be reached is [`DriverError::Transient`]; a query it refuses is
    /// [`DriverError::Permanent`].
    async fn read(&self, query: &MetricQuery<'_>) -> Result<Vec<MetricSeries>, DriverError>;

    /// The current value of a VNF indicator of instance `vnf_instance_id`: `expression`, in
    /// the monitoring system's query language (PromQL for Prometheus) with
    /// `${vnf_instance_id}` standing for the instance, evaluated now. `None` when the
    /// expression yields no data. The default measures nothing and says so.
    async fn indicator(
        &self,
        expression: &str,
        vnf_instance_id: &str,
    ) -> Result<Option<f64>, DriverError> {
        let _ = (expression, vnf_instance_id);
        Err(DriverError::invalid_input(
            "VNF indicators cannot be computed: the server is not connected to Prometheus",
        ))
    }
}

/// The [`MetricsSource`] of a VNFM without a monitoring system: it measures nothing, so PM
/// jobs and thresholds are refused with a message saying so.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoMetrics;

#[async_trait]
impl MetricsSource for NoMetrics {
    fn check(&self, metric: &str, _: PmObjectType) -> Result<(), DriverError> {
        Err(DriverError::invalid_input(format!(
            "metric {metric:?} cannot be measured: performance management has no metrics \
             source (the server is not connected to Prometheus)"
        )))
    }

    async fn read(&self, query: &MetricQuery<'_>) -> Result<Vec<MetricSeries>, DriverError> {
        self.check(query.metric, query.object_type)
            .map(|()| Vec::new())
    }
}

/// A [`MetricsSource`] for tests and examples: fixed metric names, and one value (settable
/// while in use) at every evaluation time, for the object itself or each given sub-object.
#[derive(Debug, Clone)]
pub struct StaticMetrics {
    known: Vec<(String, PmObjectType)>,
    value: Arc<Mutex<Option<f64>>>,
}

impl StaticMetrics {
    /// Knows `known`; measures nothing until [`StaticMetrics::set`].
    pub fn new(known: &[(&str, PmObjectType)]) -> Self {
        StaticMetrics {
            known: known.iter().map(|(m, t)| ((*m).to_owned(), *t)).collect(),
            value: Arc::new(Mutex::new(None)),
        }
    }

    /// The same, measuring `value`.
    pub fn with_value(self, value: f64) -> Self {
        self.set(Some(value));
        self
    }

    /// Measures `value` from now on (`None`: no data).
    pub fn set(&self, value: Option<f64>) {
        *self.value.lock().unwrap_or_else(|e| e.into_inner()) = value;
    }
}

#[async_trait]
impl MetricsSource for StaticMetrics {
    fn check(&self, metric: &str, object_type: PmObjectType) -> Result<(), DriverError> {
        let name = metric.split('.').next().unwrap_or(metric);
        if self
            .known
            .iter()
            .any(|(m, t)| m == name && *t == object_type)
        {
            return Ok(());
        }
        Err(DriverError::invalid_input(format!(
            "metric {metric:?} cannot be measured on {object_type}"
        )))
    }

    async fn indicator(&self, _: &str, _: &str) -> Result<Option<f64>, DriverError> {
        Ok(*self.value.lock().unwrap_or_else(|e| e.into_inner()))
    }

    async fn read(&self, query: &MetricQuery<'_>) -> Result<Vec<MetricSeries>, DriverError> {
        self.check(query.metric, query.object_type)?;
        let Some(value) = *self.value.lock().unwrap_or_else(|e| e.into_inner()) else {
            return Ok(Vec::new());
        };
        let step = query.collection_period.max(Duration::from_millis(1));
        let mut points = Vec::new();
        let mut at = query.start;
        while at <= query.end {
            points.push(MetricPoint { at, value });
            at += step;
        }
        let subs: Vec<Option<String>> = if query.sub_object_instance_ids.is_empty() {
            vec![None]
        } else {
            query
                .sub_object_instance_ids
                .iter()
                .cloned()
                .map(Some)
                .collect()
        };
        Ok(subs
            .into_iter()
            .map(|sub_object_instance_id| MetricSeries {
                sub_object_instance_id,
                points: points.clone(),
            })
            .collect())
    }
}
