//! Spans captured in memory, for tests of the edges: [`capture`] installs (once per process)
//! a global subscriber exporting every span to memory, the W3C propagator, and turns the
//! edges on; a test runs its code under a root span and reads back the spans of that trace.

use std::sync::OnceLock;

use opentelemetry::trace::{TraceContextExt, TraceId, TracerProvider as _};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;

/// A trace id (e.g. `TraceId::from_hex` of a test's own `traceparent`).
pub use opentelemetry::trace::TraceId as CapturedTraceId;
pub use opentelemetry_sdk::trace::SpanData as CapturedSpan;

/// The spans finished so far in this process.
#[derive(Debug)]
pub struct Capture {
    exporter: InMemorySpanExporter,
    provider: SdkTracerProvider,
}

/// The process's capture, installed on the first call.
///
/// # Panics
/// When another global `tracing` subscriber was installed first.
pub fn capture() -> &'static Capture {
    static CAPTURE: OnceLock<Capture> = OnceLock::new();
    CAPTURE.get_or_init(|| {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("vnfm-test"));
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer))
            .expect("no other global tracing subscriber is installed in this test binary");
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        crate::enable();
        Capture { exporter, provider }
    })
}

impl Capture {
    /// The finished spans of the trace `trace_id`.
    pub fn spans_of(&self, trace_id: TraceId) -> Vec<SpanData> {
        let _ = self.provider.force_flush();
        self.exporter
            .get_finished_spans()
            .unwrap_or_default()
            .into_iter()
            .filter(|s| s.span_context.trace_id() == trace_id)
            .collect()
    }

    /// The finished spans named `name` of the trace `trace_id`.
    pub fn named(&self, trace_id: TraceId, name: &str) -> Vec<SpanData> {
        self.spans_of(trace_id)
            .into_iter()
            .filter(|s| s.name == name)
            .collect()
    }
}

/// The trace id of `span` (a test's root span, made after [`capture`]).
pub fn trace_id(span: &Span) -> TraceId {
    span.context().span().span_context().trace_id()
}

/// The value of attribute `key` of `span`, as a string.
pub fn attribute(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.to_string())
}

/// The `traceparent` that names `span` (`00-<trace id>-<span id>-01`).
pub fn traceparent_of(span: &SpanData) -> String {
    format!(
        "00-{}-{}-{:02x}",
        span.span_context.trace_id(),
        span.span_context.span_id(),
        span.span_context.trace_flags().to_u8()
    )
}
