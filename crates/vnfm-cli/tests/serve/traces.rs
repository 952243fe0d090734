//! `vnfm serve --otlp-endpoint`: an INSTANTIATE sent with a W3C `traceparent` is exported as
//! part of the caller's trace, with the request, the occurrence and every step of it. The
//! receiver here decodes the OTLP/HTTP protobuf requests the exporter posts.

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;

use super::*;

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID: &str = "00f067aa0ba902b7";

/// Every span posted to `/v1/traces`.
async fn receiver() -> (String, Arc<Mutex<Vec<Span>>>) {
    let spans: Arc<Mutex<Vec<Span>>> = Arc::default();
    let s = spans.clone();
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: axum::body::Bytes| {
            let s = s.clone();
            async move {
                let req = ExportTraceServiceRequest::decode(body).expect("an OTLP trace request");
                let mut s = s.lock().unwrap();
                for rs in req.resource_spans {
                    for ss in rs.scope_spans {
                        s.extend(ss.spans);
                    }
                }
                StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), spans)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn attribute(span: &Span, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
            any_value::Value::StringValue(s) => Some(s.clone()),
            any_value::Value::IntValue(i) => Some(i.to_string()),
            _ => None,
        })
}

#[tokio::test]
async fn an_instantiate_with_a_traceparent_is_one_trace_with_the_request_and_every_step() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (collector, spans) = receiver().await;
    let dir = tempfile::tempdir().unwrap();
    let mut command = support::serve_command(dir.path());
    command
        .args(["--enable-test-vim", "--log-level", "warn"])
        .args(["--otlp-endpoint", &collector])
        // Export every 200 ms rather than every 5 s.
        .env("OTEL_BSP_SCHEDULE_DELAY", "200");
    let (server, _) = Server::spawn(command, 3);
    let api = Api::connect(&server.base, dir.path()).await;
    let vnfd = api.onboard_corpus_package().await;
    let vnf = api.create_vnf(&vnfd).await;
    let r = api
        .req(
            reqwest::Method::POST,
            &format!("/vnflcm/v2/vnf_instances/{vnf}/instantiate"),
        )
        .header("traceparent", format!("00-{TRACE_ID}-{PARENT_ID}-01"))
        .json(&json!({"flavourId": "simple", "vimConnectionInfo": {"vim1": {"vimType": "TEST.NOOP.V_1"}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let occ_id = r.headers()["location"]
        .to_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();
    let timeline_path = format!("/vnfm/v1/vnf_lcm_op_occs/{occ_id}/timeline");
    let mut steps = Vec::new();
    for _ in 0..500 {
        let (_, _, t) = api.json(reqwest::Method::GET, &timeline_path, None).await;
        if t["operationState"] == "COMPLETED" {
            steps = t["steps"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["name"].as_str().unwrap().to_owned())
                .collect();
            break;
        }
        assert_ne!(t["operationState"], "FAILED_TEMP", "{t:#}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!steps.is_empty(), "INSTANTIATE never completed");

    // The spans of the caller's trace, once the exporter has sent the last step.
    let deadline = Instant::now() + Duration::from_secs(20);
    let traced = loop {
        let traced: Vec<Span> = spans
            .lock()
            .unwrap()
            .iter()
            .filter(|s| hex(&s.trace_id) == TRACE_ID)
            .cloned()
            .collect();
        let step_spans = traced.iter().filter(|s| s.name == "lcm.step").count();
        if step_spans >= steps.len() || Instant::now() > deadline {
            break traced;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let names: Vec<&str> = traced.iter().map(|s| s.name.as_str()).collect();
    let request = traced
        .iter()
        .find(|s| s.name.starts_with("POST ") && s.name.ends_with("/instantiate"))
        .unwrap_or_else(|| panic!("no request span in the caller's trace: {names:?}"));
    assert_eq!(hex(&request.parent_span_id), PARENT_ID, "{names:?}");
    assert_eq!(
        attribute(request, "http.response.status_code").as_deref(),
        Some("202")
    );
    let occ = traced
        .iter()
        .find(|s| s.name == "lcm.op_occ")
        .unwrap_or_else(|| panic!("no occurrence span in the caller's trace: {names:?}"));
    assert_eq!(occ.parent_span_id, request.span_id, "{names:?}");
    assert_eq!(
        attribute(occ, "op_occ_id").as_deref(),
        Some(occ_id.as_str())
    );
    assert_eq!(
        attribute(occ, "vnf_instance_id").as_deref(),
        Some(vnf.as_str())
    );
    assert_eq!(attribute(occ, "operation").as_deref(), Some("INSTANTIATE"));
    let mut traced_steps: Vec<(String, Vec<u8>)> = traced
        .iter()
        .filter(|s| s.name == "lcm.step")
        .map(|s| {
            (
                attribute(s, "step").unwrap_or_default(),
                s.parent_span_id.clone(),
            )
        })
        .collect();
    traced_steps.sort();
    let mut expected: Vec<(String, Vec<u8>)> = steps
        .iter()
        .map(|s| (s.clone(), occ.span_id.clone()))
        .collect();
    expected.sort();
    assert_eq!(traced_steps, expected, "{names:?}");
    drop(server);
}
