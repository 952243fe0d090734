//! [`PrometheusMetrics`]: the performance management port
//! ([`vnfm_driver_api::metrics::MetricsSource`]) on a Prometheus server, measuring each
//! metric with the PromQL of a [`PmCatalogue`].
//!
//! One range query per read: the catalogue's PromQL for the metric and object type,
//! evaluated at every collection period from the start to the end of the range. A series is
//! told apart by its sub-object label: `vnfc_instance_id` for `Vnfc`, `cp_instance_id` for the
//! connection point types; for `Vnf` every series is the object itself (the default PromQL
//! aggregates to one).

use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use vnfm_driver_api::DriverError;
use vnfm_driver_api::metrics::{MetricPoint, MetricQuery, MetricSeries, MetricsSource};

use crate::{Error, InstantResult, PmCatalogue, PmTarget, PrometheusClient, RangeQuery};

/// Measurements from Prometheus.
#[derive(Debug, Clone)]
pub struct PrometheusMetrics {
    client: PrometheusClient,
    catalogue: PmCatalogue,
}

impl PrometheusMetrics {
    /// Reads through `client` with the PromQL of `catalogue`.
    pub fn new(client: PrometheusClient, catalogue: PmCatalogue) -> Self {
        PrometheusMetrics { client, catalogue }
    }
}

/// The label naming the sub-object of a series of `t`, if any.
fn sub_object_label(t: vnfm_types::PmObjectType) -> Option<&'static str> {
    match t {
        vnfm_types::PmObjectType::Vnf => None,
        vnfm_types::PmObjectType::Vnfc => Some("vnfc_instance_id"),
        vnfm_types::PmObjectType::VnfIntCp | vnfm_types::PmObjectType::VnfExtCp => {
            Some("cp_instance_id")
        }
    }
}

/// The port's error for a Prometheus error: what the query names wrongly is invalid input,
/// an unreachable or overloaded server is transient, the rest permanent.
fn driver_error(e: Error) -> DriverError {
    let message = e.to_string();
    match e {
        Error::UnknownMetric { .. }
        | Error::UnknownObjectType { .. }
        | Error::UnsupportedObjectType { .. } => DriverError::invalid_input(message),
        Error::Unreachable { .. } | Error::Timeout { .. } => DriverError::Transient {
            message,
            source: Some(std::sync::Arc::new(e)),
        },
        Error::Http { status, .. } if status >= 500 || status == 429 => DriverError::Transient {
            message,
            source: Some(std::sync::Arc::new(e)),
        },
        other => DriverError::Permanent {
            message,
            source: Some(std::sync::Arc::new(other)),
        },
    }
}

fn timestamp(t: SystemTime) -> Result<jiff::Timestamp, DriverError> {
    jiff::Timestamp::try_from(t)
        .map_err(|e| DriverError::invalid_input(format!("time out of range: {e}")))
}

/// Whether `catalogue` measures `metric` on `t`, as the port answers it.
fn check_in(
    catalogue: &PmCatalogue,
    metric: &str,
    t: vnfm_types::PmObjectType,
) -> Result<(), DriverError> {
    let parsed = metric.parse().map_err(driver_error)?;
    catalogue
        .template(parsed, t)
        .map(|_| ())
        .map_err(driver_error)
}

/// Measurements that the monitoring system pushes rather than the VNFM reads (OpenStack
/// Tacker's Prometheus plugin posts each value to `/pm_event` and `/pm_threshold`): PM jobs
/// and thresholds of the catalogue's metrics are accepted, and reading measures nothing, so
/// the reports and crossings are the pushed values' only.
#[derive(Debug, Clone, Default)]
pub struct PushedMetrics {
    catalogue: PmCatalogue,
}

#[async_trait]
impl MetricsSource for PushedMetrics {
    fn check(&self, metric: &str, t: vnfm_types::PmObjectType) -> Result<(), DriverError> {
        check_in(&self.catalogue, metric, t)
    }

    async fn read(&self, query: &MetricQuery<'_>) -> Result<Vec<MetricSeries>, DriverError> {
        self.check(query.metric, query.object_type)
            .map(|()| Vec::new())
    }
}

#[async_trait]
impl MetricsSource for PrometheusMetrics {
    fn check(&self, metric: &str, t: vnfm_types::PmObjectType) -> Result<(), DriverError> {
        check_in(&self.catalogue, metric, t)
    }

    async fn indicator(
        &self,
        expression: &str,
        vnf_instance_id: &str,
    ) -> Result<Option<f64>, DriverError> {
        let promql = crate::catalogue::with_instance(expression, vnf_instance_id);
        let answer = self
            .client
            .query(&promql, None)
            .await
            .map_err(driver_error)?;
        let value = match answer.result {
            InstantResult::Scalar(p) => Some(p.value),
            InstantResult::Vector(samples) => match samples.as_slice() {
                [] => None,
                [one] => Some(one.value),
                more => {
                    return Err(DriverError::invalid_input(format!(
                        "the indicator's PromQL yields {} series; it must yield one (aggregate \
                         it, e.g. with sum or max): {promql}",
                        more.len()
                    )));
                }
            },
            InstantResult::Matrix(_) | InstantResult::String { .. } => {
                return Err(DriverError::invalid_input(format!(
                    "the indicator's PromQL must yield a number or one series: {promql}"
                )));
            }
        };
        Ok(value.filter(|v| v.is_finite()))
    }

    async fn read(&self, query: &MetricQuery<'_>) -> Result<Vec<MetricSeries>, DriverError> {
        let promql = self
            .catalogue
            .promql(
                query.metric,
                query.object_type,
                &PmTarget {
                    object_instance_id: query.object_instance_id,
                    sub_object_instance_ids: query.sub_object_instance_ids,
                    collection_period: query.collection_period,
                },
            )
            .map_err(driver_error)?;
        let range = RangeQuery {
            start: timestamp(query.start)?,
            end: timestamp(query.end)?,
            step: query.collection_period.max(Duration::from_secs(1)),
        };
        let answer = self
            .client
            .query_range(&promql, &range)
            .await
            .map_err(driver_error)?;
        for w in &answer.warnings {
            tracing::warn!(metric = query.metric, "Prometheus warned: {w}");
        }
        let label = sub_object_label(query.object_type);
        Ok(answer
            .series
            .into_iter()
            .map(|s| MetricSeries {
                sub_object_instance_id: label.and_then(|l| s.labels.get(l).cloned()),
                points: s
                    .points
                    .into_iter()
                    .filter(|p| p.value.is_finite())
                    .map(|p| MetricPoint {
                        at: SystemTime::from(p.at),
                        value: p.value,
                    })
                    .collect(),
            })
            .filter(|s| !s.points.is_empty())
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vnfm_types::PmObjectType;

    /// Without a Prometheus to read, Tacker's PM jobs (`VCpuUsageMeanVnf.<instance>`) are
    /// still accepted, for values pushed to them; reading measures nothing.
    #[tokio::test]
    async fn pushed_metrics_accept_the_catalogues_metrics_and_read_nothing() {
        let m = PushedMetrics::default();
        assert!(m.check("VCpuUsageMeanVnf.i1", PmObjectType::Vnf).is_ok());
        assert!(
            m.check("ByteIncomingVnfIntCp", PmObjectType::VnfIntCp)
                .is_ok()
        );
        let e = m.check("Nope", PmObjectType::Vnf).unwrap_err();
        assert!(e.to_string().contains("Nope"), "{e}");
        let now = SystemTime::now();
        let q = MetricQuery {
            metric: "VCpuUsageMeanVnf",
            object_type: PmObjectType::Vnf,
            object_instance_id: "i1",
            sub_object_instance_ids: &[],
            collection_period: Duration::from_secs(5),
            start: now,
            end: now,
        };
        assert!(m.read(&q).await.unwrap().is_empty());
    }
}
