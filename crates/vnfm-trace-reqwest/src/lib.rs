//! The trace context of the VNFM's edges ([`vnfm_trace`]) on reqwest requests: a crate of
//! its own so that the crates using only the trace context (the lifecycle core) see no HTTP
//! client.

use tracing::{Instrument, Span};
use vnfm_trace::{Peer, infra_span, inject, is_enabled, record_status};

/// Sends `request` to infrastructure (`peer`: a VIM of a [`vnfm_trace::VimType`], or the
/// server's own Keystone) in its `infra.request` span, with the span's `traceparent`; with
/// tracing off, exactly `request.send()`.
pub async fn send(
    request: reqwest::RequestBuilder,
    peer: impl Into<Peer>,
) -> reqwest::Result<reqwest::Response> {
    if !is_enabled() {
        return request.send().await;
    }
    let (client, request) = request.build_split();
    let mut request = request?;
    let url = request.url();
    let span = infra_span(
        request.method(),
        url.host_str().unwrap_or_default(),
        url.path(),
        peer,
    );
    inject(&span, request.headers_mut());
    let sent = client.execute(request).instrument(span.clone()).await;
    record_status(
        &span,
        sent.as_ref().map(|r| r.status().as_u16()).map_err(|_| ()),
    );
    sent
}

/// `request` with the trace context of the current span (a request whose span the caller
/// made: a grant, a notification delivery); unchanged with tracing off.
pub fn with_current_context(request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    if !is_enabled() {
        return request;
    }
    let mut headers = http::HeaderMap::new();
    inject(&Span::current(), &mut headers);
    request.headers(headers)
}
