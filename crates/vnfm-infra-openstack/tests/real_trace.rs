//! Each request of the driver to the test cloud (the Keystone token, then a service from the
//! catalog) runs in its `infra.request` client span, under the span that made it.

use std::sync::Arc;
use std::time::Duration;

use tracing::Instrument;
use vnfm_driver_api::{ResolvedVim, RunControl};
use vnfm_infra_openstack::OpenStackDriver;
use vnfm_trace::testing::{attribute, capture, trace_id};

use crate::support::{self, Cloud};

#[vnfm_test_env::needs(openstack)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_keystone_token_and_a_nova_request_are_infra_request_spans() {
    let cloud = Cloud::from_env();
    let captured = capture();
    let driver = Arc::new(OpenStackDriver::new(support::driver_config()));
    let vim = ResolvedVim::new(
        "vim1",
        serde_json::from_value(cloud.vim_connection()).unwrap(),
    );
    let session = driver.session(&vim).unwrap();
    let root = tracing::info_span!("test.root");
    let trace = trace_id(&root);
    async {
        let control = RunControl::with_timeout(Duration::from_secs(60));
        let nova = session.endpoint(&control, "compute").await.unwrap();
        let url = format!("{}/flavors", nova.trim_end_matches('/'));
        let reply = session
            .call(
                &control,
                "listing flavors",
                reqwest::Method::GET,
                &url,
                None,
                &[],
            )
            .await
            .unwrap();
        assert_eq!(reply.status.as_u16(), 200);
    }
    .instrument(root.clone())
    .await;
    drop(root);
    let spans = captured.named(trace, "infra.request");
    let keystone_host = reqwest::Url::parse(&cloud.keystone_url).unwrap();
    let token = spans
        .iter()
        .find(|s| attribute(s, "url.path").is_some_and(|p| p.ends_with("/auth/tokens")))
        .unwrap_or_else(|| panic!("a span of the token request in {spans:#?}"));
    assert_eq!(
        attribute(token, "http.request.method").as_deref(),
        Some("POST")
    );
    assert_eq!(
        attribute(token, "http.response.status_code").as_deref(),
        Some("201")
    );
    assert_eq!(attribute(token, "vim.type").as_deref(), Some("openstack"));
    assert_eq!(
        attribute(token, "server.address").as_deref(),
        keystone_host.host_str()
    );
    let flavors = spans
        .iter()
        .find(|s| attribute(s, "url.path").is_some_and(|p| p.ends_with("/flavors")))
        .unwrap_or_else(|| panic!("a span of the Nova request in {spans:#?}"));
    assert_eq!(
        attribute(flavors, "http.request.method").as_deref(),
        Some("GET")
    );
    assert_eq!(
        attribute(flavors, "http.response.status_code").as_deref(),
        Some("200")
    );
    let roots = captured.named(trace, "test.root");
    for span in [token, flavors] {
        assert_eq!(span.parent_span_id, roots[0].span_context.span_id());
        assert_eq!(span.span_kind, opentelemetry::trace::SpanKind::Client);
    }
}
