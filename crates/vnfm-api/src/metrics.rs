//! Prometheus metrics, exposed in the OpenMetrics text format by `prometheus-client`: HTTP
//! requests by method, route and status with a latency histogram, lifecycle steps by name and
//! phase with a latency histogram, and op-occs by state (read from the store at scrape time,
//! so every replica reports the same numbers).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// The content type of [`Metrics::render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The op-occ states (`LcmOperationStateType`), each reported at every scrape, at 0 when no
/// occurrence is in it, so that no series vanishes and the gauge family is never empty.
const OP_OCC_STATES: [&str; 7] = [
    "STARTING",
    "PROCESSING",
    "COMPLETED",
    "FAILED_TEMP",
    "FAILED",
    "ROLLING_BACK",
    "ROLLED_BACK",
];

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 30.0,
];

fn latency_histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

/// A family of latency histograms.
type Latencies<L> = Family<L, Histogram, fn() -> Histogram>;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: String,
    route: String,
    status: u16,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    method: String,
    route: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StepLabels {
    step: String,
    phase: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutboxLabels {
    subscription: String,
    status: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SubscriptionLabels {
    subscription: String,
}

/// The notification outbox of one subscription, read from the store at scrape time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutboxStats {
    /// Notifications waiting for delivery (or for a retry).
    pub pending: i64,
    /// Notifications given up.
    pub dead: i64,
    /// Seconds since the oldest waiting notification was enqueued (0 when none waits).
    pub lag_seconds: i64,
}

/// The metrics of one server process.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    request_latency: Latencies<RouteLabels>,
    steps: Latencies<StepLabels>,
    op_occs: Family<StateLabels, Gauge>,
    notifications: Family<OutboxLabels, Gauge>,
    notification_lag: Family<SubscriptionLabels, Gauge>,
    /// Held while the op-occ gauges are replaced and the text is written, so that concurrent
    /// scrapes each see one store reading.
    render: Mutex<()>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let requests = Family::<RequestLabels, Counter>::default();
        let request_latency = Latencies::<RouteLabels>::new_with_constructor(latency_histogram);
        let steps = Latencies::<StepLabels>::new_with_constructor(latency_histogram);
        let op_occs = Family::<StateLabels, Gauge>::default();
        registry.register(
            "vnfm_http_requests",
            "HTTP requests by method, route and status",
            requests.clone(),
        );
        registry.register(
            "vnfm_http_request_duration_seconds",
            "HTTP request latency",
            request_latency.clone(),
        );
        registry.register(
            "vnfm_lcm_step_duration_seconds",
            "Lifecycle step latency by step and phase",
            steps.clone(),
        );
        registry.register(
            "vnfm_op_occs",
            "Operation occurrences by state",
            op_occs.clone(),
        );
        let notifications = Family::<OutboxLabels, Gauge>::default();
        registry.register(
            "vnfm_notifications",
            "Notifications in the outbox by subscription and status (pending, dead)",
            notifications.clone(),
        );
        let notification_lag = Family::<SubscriptionLabels, Gauge>::default();
        registry.register(
            "vnfm_notification_delivery_lag_seconds",
            "Age of the oldest notification waiting for delivery, by subscription",
            notification_lag.clone(),
        );
        Metrics {
            registry,
            notifications,
            notification_lag,
            requests,
            request_latency,
            steps,
            op_occs,
            render: Mutex::new(()),
        }
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    /// Counts one HTTP request.
    pub fn observe_request(&self, method: &str, route: &str, status: u16, elapsed: Duration) {
        self.requests
            .get_or_create(&RequestLabels {
                method: method.to_owned(),
                route: route.to_owned(),
                status,
            })
            .inc();
        self.request_latency
            .get_or_create(&RouteLabels {
                method: method.to_owned(),
                route: route.to_owned(),
            })
            .observe(elapsed.as_secs_f64());
    }

    /// Records one lifecycle step.
    pub fn observe_step(&self, step: &str, phase: &str, elapsed: Duration) {
        self.steps
            .get_or_create(&StepLabels {
                step: step.to_owned(),
                phase: phase.to_owned(),
            })
            .observe(elapsed.as_secs_f64());
    }

    /// The exposition text ([`CONTENT_TYPE`]); `op_occs` are the counts by state.
    pub fn render(&self, op_occs: &[(String, i64)]) -> String {
        self.render_with(op_occs, &BTreeMap::new())
    }

    /// [`Metrics::render`] with the outbox of each subscription (by subscription id).
    pub fn render_with(
        &self,
        op_occs: &[(String, i64)],
        outbox: &BTreeMap<String, OutboxStats>,
    ) -> String {
        let _one_at_a_time = self.render.lock().unwrap_or_else(|e| e.into_inner());
        self.notifications.clear();
        self.notification_lag.clear();
        for (subscription, stats) in outbox {
            for (status, n) in [("pending", stats.pending), ("dead", stats.dead)] {
                self.notifications
                    .get_or_create(&OutboxLabels {
                        subscription: subscription.clone(),
                        status: status.to_owned(),
                    })
                    .set(n);
            }
            self.notification_lag
                .get_or_create(&SubscriptionLabels {
                    subscription: subscription.clone(),
                })
                .set(stats.lag_seconds);
        }
        self.op_occs.clear();
        for state in OP_OCC_STATES {
            self.op_occs
                .get_or_create(&StateLabels {
                    state: state.to_owned(),
                })
                .set(0);
        }
        for (state, n) in op_occs {
            self.op_occs
                .get_or_create(&StateLabels {
                    state: state.clone(),
                })
                .set(*n);
        }
        let mut out = String::new();
        // Writing into a String does not fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposition_has_counters_histograms_and_gauges() {
        let m = Metrics::default();
        m.observe_request(
            "GET",
            "/vnflcm/v2/vnf_instances",
            200,
            Duration::from_millis(3),
        );
        m.observe_request(
            "GET",
            "/vnflcm/v2/vnf_instances",
            200,
            Duration::from_millis(30),
        );
        m.observe_step("instantiate", "forward", Duration::from_millis(2));
        let text = m.render(&[("COMPLETED".into(), 4)]);
        assert!(text.contains(
            "vnfm_http_requests_total{method=\"GET\",route=\"/vnflcm/v2/vnf_instances\",status=\"200\"} 2"
        ), "{text}");
        // prometheus-client writes `le` first; label order carries no meaning.
        assert!(text.contains(
            "vnfm_http_request_duration_seconds_bucket{le=\"0.005\",method=\"GET\",route=\"/vnflcm/v2/vnf_instances\"} 1"
        ), "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
        assert!(
            text.contains(
                "vnfm_lcm_step_duration_seconds_count{step=\"instantiate\",phase=\"forward\"} 1"
            ),
            "{text}"
        );
        assert!(
            text.contains("vnfm_op_occs{state=\"COMPLETED\"} 4"),
            "{text}"
        );
        // The op-occ counts are the store's of this scrape: a state gone from it is 0.
        let text = m.render(&[("FAILED_TEMP".into(), 1)]);
        assert!(
            text.contains("vnfm_op_occs{state=\"FAILED_TEMP\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("vnfm_op_occs{state=\"COMPLETED\"} 0"),
            "{text}"
        );
        let text = Metrics::default().render(&[]);
        assert!(text.contains("# TYPE vnfm_op_occs gauge"), "{text}");
        assert!(
            text.contains("vnfm_op_occs{state=\"ROLLED_BACK\"} 0"),
            "{text}"
        );
        let text = m.render(&[("a\"b".into(), 1)]);
        assert!(text.contains(r#"vnfm_op_occs{state="a\"b"} 1"#), "{text}");
    }
}
