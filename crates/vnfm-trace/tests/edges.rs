//! The trace context of a span, as a header and a plain string, and the link to it.

use tracing::Instrument;
use vnfm_trace::testing::{attribute, capture, trace_id, traceparent_of};
use vnfm_trace::{Peer, VimType, infra_span, inject, link, record_status, traceparent};

#[tokio::test]
async fn an_infra_span_carries_its_attributes_and_its_traceparent() {
    let captured = capture();
    let root = tracing::info_span!("test.root");
    let trace = trace_id(&root);
    let (header, plain) = async {
        let span = infra_span(
            &http::Method::POST,
            "keystone.example",
            "/v3/auth/tokens",
            VimType::OpenStack,
        );
        let mut headers = http::HeaderMap::new();
        inject(&span, &mut headers);
        let plain = traceparent(&span);
        record_status(&span, Ok(201));
        drop(span);
        (
            headers
                .get("traceparent")
                .map(|v| v.to_str().unwrap().to_owned()),
            plain,
        )
    }
    .instrument(root.clone())
    .await;
    drop(root);
    let spans = captured.named(trace, "infra.request");
    assert_eq!(
        spans.len(),
        1,
        "one infra.request span in {:?}",
        captured.spans_of(trace)
    );
    let span = &spans[0];
    for (key, want) in [
        ("http.request.method", "POST"),
        ("server.address", "keystone.example"),
        ("url.path", "/v3/auth/tokens"),
        ("http.response.status_code", "201"),
        ("vim.type", "openstack"),
    ] {
        assert_eq!(
            attribute(span, key).as_deref(),
            Some(want),
            "attribute {key}"
        );
    }
    assert_eq!(span.span_kind, opentelemetry::trace::SpanKind::Client);
    assert_eq!(header.as_deref(), Some(traceparent_of(span).as_str()));
    assert_eq!(plain.as_deref(), Some(traceparent_of(span).as_str()));
}

#[tokio::test]
async fn a_request_to_the_servers_own_keystone_is_not_a_vim_request() {
    let captured = capture();
    let root = tracing::info_span!("test.root");
    let trace = trace_id(&root);
    {
        let _in_root = root.enter();
        let span = infra_span(
            &http::Method::GET,
            "keystone.example",
            "/v3/auth/tokens",
            Peer::ApiKeystone,
        );
        record_status(&span, Ok(200));
    }
    drop(root);
    let spans = captured.named(trace, "infra.request");
    assert_eq!(spans.len(), 1, "{:?}", captured.spans_of(trace));
    assert_eq!(
        attribute(&spans[0], "vnfm.api_auth").as_deref(),
        Some("keystone")
    );
    assert_eq!(attribute(&spans[0], "vim.type"), None);
    assert_eq!(
        attribute(&spans[0], "server.address").as_deref(),
        Some("keystone.example")
    );
}

#[tokio::test]
async fn a_span_links_to_the_traceparent_it_is_given() {
    let captured = capture();
    let first = tracing::info_span!("test.first");
    let first_parent = traceparent(&first).expect("a traceparent while tracing is on");
    drop(first);
    let later = tracing::info_span!("test.later");
    let trace = trace_id(&later);
    link(&later, &first_parent);
    drop(later);
    let spans = captured.named(trace, "test.later");
    let links: Vec<String> = spans[0]
        .links
        .iter()
        .map(|l| {
            format!(
                "00-{}-{}-01",
                l.span_context.trace_id(),
                l.span_context.span_id()
            )
        })
        .collect();
    assert_eq!(links, [first_parent]);
}

#[tokio::test]
async fn the_tower_layer_sends_each_request_in_its_span_with_its_traceparent() {
    use tower::{Layer, ServiceExt};
    let captured = capture();
    let received = std::sync::Arc::new(std::sync::Mutex::new(None));
    let kept = received.clone();
    let inner = tower::service_fn(move |req: http::Request<()>| {
        *kept.lock().unwrap() = req
            .headers()
            .get("traceparent")
            .map(|v| v.to_str().unwrap().to_owned());
        async {
            Ok::<_, std::convert::Infallible>(
                http::Response::builder().status(404).body(()).unwrap(),
            )
        }
    });
    let service = vnfm_trace::InfraLayer::new(VimType::Kubernetes, "10.0.0.1").layer(inner);
    let root = tracing::info_span!("test.root");
    let trace = trace_id(&root);
    let request = http::Request::get("/api/v1/pods?labelSelector=secret")
        .body(())
        .unwrap();
    let answer = service
        .oneshot(request)
        .instrument(root.clone())
        .await
        .unwrap();
    assert_eq!(answer.status(), 404);
    drop(root);
    let spans = captured.named(trace, "infra.request");
    assert_eq!(spans.len(), 1);
    assert_eq!(
        attribute(&spans[0], "url.path").as_deref(),
        Some("/api/v1/pods")
    );
    assert_eq!(
        attribute(&spans[0], "server.address").as_deref(),
        Some("10.0.0.1")
    );
    assert_eq!(
        attribute(&spans[0], "vim.type").as_deref(),
        Some("kubernetes")
    );
    assert_eq!(
        attribute(&spans[0], "http.response.status_code").as_deref(),
        Some("404")
    );
    assert_eq!(*received.lock().unwrap(), Some(traceparent_of(&spans[0])));
}
