//! Prometheus metrics in the text exposition format: HTTP requests by method, route and
//! status with a latency histogram, lifecycle steps by name and phase with a latency
//! histogram, and op-occs by state (read from the store at scrape time, so every replica
//! reports the same numbers).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 30.0,
];

#[derive(Debug, Default, Clone)]
struct Histogram {
    buckets: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

impl Histogram {
    fn observe(&mut self, seconds: f64) {
        for (i, bound) in BUCKETS.iter().enumerate() {
            if seconds <= *bound {
                self.buckets[i] += 1;
            }
        }
        self.count += 1;
        self.sum += seconds;
    }

    fn write(&self, out: &mut String, name: &str, labels: &str) {
        for (i, bound) in BUCKETS.iter().enumerate() {
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels},le=\"{bound}\"}} {}",
                self.buckets[i]
            );
        }
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {}", self.count);
        let _ = writeln!(out, "{name}_sum{{{labels}}} {}", self.sum);
        let _ = writeln!(out, "{name}_count{{{labels}}} {}", self.count);
    }
}

/// The metrics of one server process.
#[derive(Debug, Default)]
pub struct Metrics {
    requests: Mutex<BTreeMap<(String, String, u16), u64>>,
    request_latency: Mutex<BTreeMap<(String, String), Histogram>>,
    steps: Mutex<BTreeMap<(String, String), Histogram>>,
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

impl Metrics {
    /// Counts one HTTP request.
    pub fn observe_request(&self, method: &str, route: &str, status: u16, elapsed: Duration) {
        let mut requests = self.requests.lock().unwrap_or_else(|e| e.into_inner());
        *requests
            .entry((method.to_owned(), route.to_owned(), status))
            .or_default() += 1;
        drop(requests);
        self.request_latency
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry((method.to_owned(), route.to_owned()))
            .or_default()
            .observe(elapsed.as_secs_f64());
    }

    /// Records one lifecycle step.
    pub fn observe_step(&self, step: &str, phase: &str, elapsed: Duration) {
        self.steps
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry((step.to_owned(), phase.to_owned()))
            .or_default()
            .observe(elapsed.as_secs_f64());
    }

    /// The exposition text; `op_occs` are the counts by state.
    pub fn render(&self, op_occs: &[(String, i64)]) -> String {
        let mut out = String::new();
        out.push_str(
            "# HELP vnfm_http_requests_total HTTP requests by method, route and status.\n",
        );
        out.push_str("# TYPE vnfm_http_requests_total counter\n");
        for ((method, route, status), n) in self
            .requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            let _ = writeln!(
                out,
                "vnfm_http_requests_total{{method=\"{}\",route=\"{}\",status=\"{status}\"}} {n}",
                escape(method),
                escape(route)
            );
        }
        out.push_str("# HELP vnfm_http_request_duration_seconds HTTP request latency.\n");
        out.push_str("# TYPE vnfm_http_request_duration_seconds histogram\n");
        for ((method, route), h) in self
            .request_latency
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            let labels = format!("method=\"{}\",route=\"{}\"", escape(method), escape(route));
            h.write(&mut out, "vnfm_http_request_duration_seconds", &labels);
        }
        out.push_str(
            "# HELP vnfm_lcm_step_duration_seconds Lifecycle step latency by step and phase.\n",
        );
        out.push_str("# TYPE vnfm_lcm_step_duration_seconds histogram\n");
        for ((step, phase), h) in self.steps.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            let labels = format!("step=\"{}\",phase=\"{}\"", escape(step), escape(phase));
            h.write(&mut out, "vnfm_lcm_step_duration_seconds", &labels);
        }
        out.push_str("# HELP vnfm_op_occs Operation occurrences by state.\n");
        out.push_str("# TYPE vnfm_op_occs gauge\n");
        for (state, n) in op_occs {
            let _ = writeln!(out, "vnfm_op_occs{{state=\"{}\"}} {n}", escape(state));
        }
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
        assert!(text.contains(
            "vnfm_http_request_duration_seconds_bucket{method=\"GET\",route=\"/vnflcm/v2/vnf_instances\",le=\"0.005\"} 1"
        ), "{text}");
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
    }
}
