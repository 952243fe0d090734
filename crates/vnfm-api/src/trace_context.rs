//! One tracing span per request (`http.request`), continuing the caller's W3C trace: when the
//! process exports traces ([`vnfm_trace::enable`]), a request's `traceparent` (and
//! `tracestate`) header makes its span, and every span opened under it (an operation
//! occurrence, its steps, hooks and driver calls), part of the caller's trace. When nothing
//! exports traces the layer only checks a flag: no span is made.

use axum::extract::Request;
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::Response;
use opentelemetry::propagation::Extractor;
use opentelemetry::trace::TraceContextExt;
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The middleware: the request runs inside its span when tracing is enabled.
pub(crate) async fn request_span(req: Request, next: Next) -> Response {
    if !vnfm_trace::is_enabled() {
        return next.run(req).await;
    }
    let span = tracing::info_span!(
        "http.request",
        otel.name = %format!("{} {}", req.method(), req.uri().path()),
        otel.kind = "server",
        http.request.method = %req.method(),
        url.path = %req.uri().path(),
        http.response.status_code = tracing::field::Empty,
    );
    // The propagator the exporting process installed (W3C trace context).
    let parent =
        opentelemetry::global::get_text_map_propagator(|p| p.extract(&Headers(req.headers())));
    if parent.span().span_context().is_valid() {
        // Fails only when no OpenTelemetry layer is installed, and then nothing is exported.
        let _ = span.set_parent(parent);
    }
    let response = next.run(req).instrument(span.clone()).await;
    span.record("http.response.status_code", response.status().as_u16());
    response
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
