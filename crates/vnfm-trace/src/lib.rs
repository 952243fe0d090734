//! W3C trace context on the VNFM's outgoing edges.
//!
//! When the process exports traces (it calls [`enable`] after installing an OpenTelemetry
//! `tracing` layer and the W3C propagator), every request the VNFM makes to infrastructure
//! runs in an `infra.request` client span, and every outgoing request carries the
//! `traceparent` (and `tracestate`) of its span, so a caller's trace continues through the
//! VNFM to the VIM, the NFVO and the subscribers. When nothing exports traces each edge only
//! reads a flag: no span is made and nothing is formatted.
//!
//! - [`infra_span`] / [`record_status`]: the `infra.request` span of one request;
//! - [`inject`]: a span's trace context into HTTP headers;
//! - [`traceparent`] / [`link`] / [`continue_from`]: a span's context as a plain `traceparent`
//!   string (for a plugin hook's input, a script's `TRACEPARENT`, or kept with an operation
//!   occurrence or a notification) and back;
//! - `InfraLayer` (feature `tower`): the above around each request of a tower HTTP client
//!   (kube-rs); `vnfm-trace-reqwest` does the same for a reqwest request;
//! - `testing` (feature `testing`): spans captured in memory for tests.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::trace::TraceContextExt;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

#[cfg(feature = "tower")]
mod tower_edge;
#[cfg(feature = "tower")]
pub use tower_edge::{InfraLayer, InfraService};

#[cfg(feature = "testing")]
pub mod testing;

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Turns the edges' spans and headers on for the rest of the process: call it once an
/// OpenTelemetry layer and the W3C text-map propagator are installed.
pub fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// Whether [`enable`] was called.
pub fn is_enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// The infrastructure a request goes to: the `vim.type` attribute of its span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VimType {
    /// OpenStack (Keystone, Heat, Nova, Neutron, Glance, Cinder).
    OpenStack,
    /// A Kubernetes API server.
    Kubernetes,
}

impl VimType {
    /// The attribute value: `openstack` or `kubernetes`.
    pub fn as_str(self) -> &'static str {
        match self {
            VimType::OpenStack => "openstack",
            VimType::Kubernetes => "kubernetes",
        }
    }
}

/// What an `infra.request` goes to: a VIM, or the server's own Keystone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// A VIM of the given type: the span's `vim.type` attribute.
    Vim(VimType),
    /// The Keystone that authenticates the callers of the VNFM's own API (`--keystone-url`:
    /// token validation and the server's service token). It is not a VIM: the span says
    /// `vnfm.api_auth = keystone` instead of a `vim.type`.
    ApiKeystone,
}

impl From<VimType> for Peer {
    fn from(vim: VimType) -> Peer {
        Peer::Vim(vim)
    }
}

/// The `infra.request` client span of one request to `host` (`server.address`) at `path`
/// (`url.path`: the caller passes no query string, header or body, so no secret reaches a
/// trace) of `peer`; a disabled span when tracing is off. [`record_status`] completes it.
pub fn infra_span(method: &http::Method, host: &str, path: &str, peer: impl Into<Peer>) -> Span {
    if !is_enabled() {
        return Span::none();
    }
    let span = tracing::info_span!(
        "infra.request",
        otel.kind = "client",
        http.request.method = method.as_str(),
        server.address = host,
        url.path = path,
        http.response.status_code = tracing::field::Empty,
        "vim.type" = tracing::field::Empty,
        "vnfm.api_auth" = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    );
    match peer.into() {
        Peer::Vim(vim) => span.record("vim.type", vim.as_str()),
        Peer::ApiKeystone => span.record("vnfm.api_auth", "keystone"),
    };
    span
}

/// Records the answer's status on `span` (`Err`: no answer), marking server errors and
/// failed requests as errors.
pub fn record_status(span: &Span, status: Result<u16, ()>) {
    if span.is_disabled() {
        return;
    }
    match status {
        Ok(code) => {
            span.record("http.response.status_code", code);
            if code >= 500 {
                span.record("otel.status_code", "ERROR");
            }
        }
        Err(()) => {
            span.record("otel.status_code", "ERROR");
        }
    }
}

/// The OpenTelemetry context of `span` when it is recorded by an exporting layer.
fn context_of(span: &Span) -> Option<opentelemetry::Context> {
    if !is_enabled() || span.is_disabled() {
        return None;
    }
    let cx = span.context();
    cx.span().span_context().is_valid().then_some(cx)
}

/// Adds the trace context of `span` (`traceparent`, and `tracestate` when it has one) to
/// `headers`; nothing when tracing is off.
pub fn inject(span: &Span, headers: &mut http::HeaderMap) {
    if let Some(cx) = context_of(span) {
        opentelemetry::global::get_text_map_propagator(|p| {
            p.inject_context(&cx, &mut HeaderInjector(headers))
        });
    }
}

/// HTTP headers as the propagator writes them (`opentelemetry-http` has the same, but with
/// the workspace's features it brings an HTTP client into the crates that use this one).
struct HeaderInjector<'a>(&'a mut http::HeaderMap);

impl opentelemetry::propagation::Injector for HeaderInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(key.as_bytes()),
            http::HeaderValue::from_str(&value),
        ) {
            self.0.insert(name, value);
        }
    }
}

/// The W3C `traceparent` of `span` (`00-<trace id>-<span id>-<flags>`); `None` when tracing
/// is off.
pub fn traceparent(span: &Span) -> Option<String> {
    let cx = context_of(span)?;
    let mut fields: HashMap<String, String> = HashMap::new();
    opentelemetry::global::get_text_map_propagator(|p| p.inject_context(&cx, &mut fields));
    fields.remove("traceparent")
}

/// Links `span` to the span a `traceparent` names (e.g. an operation occurrence's first run,
/// continued after a restart); nothing when tracing is off or the value does not parse.
pub fn link(span: &Span, traceparent: &str) {
    if let Some(cx) = remote_context(span, traceparent) {
        span.add_link(cx.span().span_context().clone());
    }
}

/// Makes `span`, before it is first entered, a child of the span a `traceparent` names, and
/// links it to that span too: a message's processing continuing the trace the message was
/// made in (OpenTelemetry's messaging conventions ask for the link; the parent is theirs to
/// choose for a message processed on its own, and puts the processing in the maker's trace).
/// Nothing when tracing is off or the value does not parse.
pub fn continue_from(span: &Span, traceparent: &str) {
    if let Some(cx) = remote_context(span, traceparent) {
        let linked = cx.span().span_context().clone();
        if let Err(e) = span.set_parent(cx) {
            tracing::debug!(error = ?e, "the span is not continued from its traceparent");
        }
        span.add_link(linked);
    }
}

/// The remote context `traceparent` names, for the recorded `span`; `None` when tracing is
/// off, `span` is not recorded, or the value does not parse.
fn remote_context(span: &Span, traceparent: &str) -> Option<opentelemetry::Context> {
    if !is_enabled() || span.is_disabled() {
        return None;
    }
    let carrier = HashMap::from([("traceparent".to_owned(), traceparent.to_owned())]);
    let cx = opentelemetry::global::get_text_map_propagator(|p| p.extract(&carrier));
    cx.span().span_context().is_valid().then_some(cx)
}
