//! One tracing span per request (`http.request`), continuing the caller's W3C trace: when the
//! process exports traces ([`vnfm_trace::enable`]), a request's `traceparent` (and
//! `tracestate`) header makes its span, and every span opened under it (an operation
//! occurrence, its steps, hooks and driver calls), part of the caller's trace. When nothing
//! exports traces the layer only checks a flag: no span is made.

use axum::http::HeaderMap;
use axum::http::request::Parts;
use opentelemetry::propagation::Extractor;
use opentelemetry::trace::TraceContextExt;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The span a request runs in, when tracing is enabled (`None` otherwise: nothing is made).
/// Its `http.response.status_code` is recorded once answered.
pub(crate) fn request_span(req: &Parts) -> Option<Span> {
    if !vnfm_trace::is_enabled() {
        return None;
    }
    let span = tracing::info_span!(
        "http.request",
        otel.name = %format!("{} {}", req.method, req.uri.path()),
        otel.kind = "server",
        http.request.method = %req.method,
        url.path = %req.uri.path(),
        http.response.status_code = tracing::field::Empty,
    );
    // The propagator the exporting process installed (W3C trace context).
    let parent =
        opentelemetry::global::get_text_map_propagator(|p| p.extract(&Headers(&req.headers)));
    if parent.span().span_context().is_valid() {
        // Fails only when no OpenTelemetry layer is installed, and then nothing is exported.
        let _ = span.set_parent(parent);
    }
    Some(span)
}

/// The request's headers as the propagator reads them.
struct Headers<'a>(&'a HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|k| k.as_str()).collect()
    }
}
