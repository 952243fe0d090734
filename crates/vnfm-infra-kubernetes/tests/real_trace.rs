//! Each request of the driver to the real API server of `KUBECONFIG` runs in its
//! `infra.request` client span, under the span that made it.

use tracing::Instrument;
use vnfm_trace::testing::{attribute, capture, trace_id};

use crate::support::real::Kube;

#[vnfm_test_env::needs(kubeconfig)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_requests_are_infra_request_spans() {
    let captured = capture();
    let kube = Kube::get();
    let root = tracing::info_span!("test.root");
    let trace = trace_id(&root);
    kube.pod_names("kube-system").instrument(root.clone()).await;
    drop(root);
    let spans = captured.named(trace, "infra.request");
    let list = spans
        .iter()
        .find(|s| {
            attribute(s, "url.path").as_deref() == Some("/api/v1/namespaces/kube-system/pods")
        })
        .unwrap_or_else(|| panic!("a span of the pod list in {spans:#?}"));
    assert_eq!(
        attribute(list, "http.request.method").as_deref(),
        Some("GET")
    );
    assert_eq!(
        attribute(list, "http.response.status_code").as_deref(),
        Some("200")
    );
    assert_eq!(attribute(list, "vim.type").as_deref(), Some("kubernetes"));
    let endpoint = kube.vim_info["interfaceInfo"]["endpoint"].as_str().unwrap();
    let host = endpoint.parse::<http::Uri>().unwrap();
    assert_eq!(attribute(list, "server.address").as_deref(), host.host());
    let roots = captured.named(trace, "test.root");
    assert_eq!(list.parent_span_id, roots[0].span_context.span_id());
    assert_eq!(list.span_kind, opentelemetry::trace::SpanKind::Client);
}
