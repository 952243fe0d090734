//! OpenTelemetry trace export of `vnfm serve` (OTLP over HTTP/protobuf): off unless
//! `--otlp-endpoint` or the standard `OTEL_EXPORTER_OTLP_ENDPOINT` /
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` variables name a collector (and `OTEL_SDK_DISABLED` or
//! `OTEL_TRACES_EXPORTER=none` do not turn it off). When on, the server's `tracing` spans at
//! info level and above (requests, operation occurrences, steps, hooks, grants, notification
//! deliveries, infrastructure requests) are exported, and a request's
//! W3C `traceparent` is continued (see [`vnfm_api::trace_context`]).

use clap::Args;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};

/// Options of trace export.
#[derive(Debug, Clone, Args)]
pub struct OtelArgs {
    /// Export traces by OTLP over HTTP (protobuf) to this collector, e.g.
    /// `http://127.0.0.1:4318` (spans are posted to `/v1/traces` under it). Without it the
    /// standard `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` turn
    /// export on; with neither, nothing is exported.
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
}

/// The tracer provider while traces are exported; [`Exporting::shutdown`] sends the spans
/// still buffered.
pub struct Exporting {
    provider: SdkTracerProvider,
}

impl Exporting {
    /// Flushes and stops the exporter.
    pub fn shutdown(self) {
        if let Err(e) = self.provider.shutdown() {
            tracing::warn!(error = %e, "trace export did not shut down cleanly");
        }
    }
}

/// Whether export is asked for, from the option and the environment.
fn wanted(args: &OtelArgs) -> bool {
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
    let is = |name: &str, value: &str| {
        std::env::var(name).is_ok_and(|v| v.trim().eq_ignore_ascii_case(value))
    };
    if is("OTEL_SDK_DISABLED", "true") || is("OTEL_TRACES_EXPORTER", "none") {
        return false;
    }
    args.otlp_endpoint.is_some()
        || set("OTEL_EXPORTER_OTLP_ENDPOINT")
        || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
}

/// The traces URL for a collector's base URL.
fn traces_url(base: &str) -> String {
    format!("{}/v1/traces", base.trim_end_matches('/'))
}

/// The exporter and tracer when export is asked for; `Err` says why it cannot start.
pub fn start(args: &OtelArgs) -> Result<Option<(Exporting, SdkTracer)>, String> {
    if !wanted(args) {
        return Ok(None);
    }
    // The exporter's HTTP client needs the process's TLS provider (ring), which the server
    // would install only later.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut builder = SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary);
    if let Some(base) = &args.otlp_endpoint {
        builder = builder.with_endpoint(traces_url(base));
    }
    let exporter = builder
        .build()
        .map_err(|e| format!("--otlp-endpoint / OTEL_EXPORTER_OTLP_*: {e}"))?;
    let mut resource = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name("vnfm");
    }
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build();
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    let tracer = provider.tracer("vnfm");
    // A span per request, and spans and traceparent headers on the outgoing edges (drivers,
    // NFVO, subscribers, hooks).
    vnfm_trace::enable();
    Ok(Some((Exporting { provider }, tracer)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_option_names_the_collector_base() {
        assert_eq!(traces_url("http://c:4318/"), "http://c:4318/v1/traces");
        assert_eq!(traces_url("http://c:4318"), "http://c:4318/v1/traces");
    }
}
