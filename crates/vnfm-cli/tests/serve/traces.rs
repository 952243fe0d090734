//! `vnfm serve --otlp-endpoint` against a real OpenTelemetry Collector
//! (`scripts/test-env/otel-collector.sh`): an INSTANTIATE sent with a W3C `traceparent` is
//! exported as ONE trace under the caller's trace id, holding the request, the occurrence and
//! every step of it, read back from what the collector wrote (its file exporter: OTLP JSON, one
//! export per line). Once with the test VIM, with the occurrence's notifications delivered
//! (later, from the outbox) to a subscriber in the same trace; once as a CNF on the real
//! Kubernetes control plane with a management script bound to its hooks.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::*;

/// A span of an operation's edge (a hook, a grant, a notification delivery, a request to the
/// infrastructure) the trace must hold: its name and one attribute's value. The names and
/// attributes are those docs/rest-api.md#traces lists: `lcm.hook` (`hook`, `hook.kind`),
/// `lcm.grant`, `notification.delivery`, `infra.request` (`http.request.method`,
/// `server.address`, `url.path`, `http.response.status_code`, `vim.type`).
struct Edge {
    name: &'static str,
    key: &'static str,
    value: &'static str,
}

/// One span as the collector wrote it.
#[derive(Debug, Clone)]
struct TracedSpan {
    name: String,
    span_id: String,
    parent_span_id: String,
    attributes: BTreeMap<String, String>,
    /// The spans it links to, as `<trace id>-<span id>`.
    links: Vec<String>,
}

/// The collector of `VNFM_TEST_OTLP_URL`, read back through `VNFM_TEST_OTLP_SPANS_FILE`.
struct Collector {
    url: String,
    spans_file: PathBuf,
}

impl Collector {
    fn from_env() -> Collector {
        Collector {
            url: vnfm_test_env::var("VNFM_TEST_OTLP_URL"),
            spans_file: PathBuf::from(vnfm_test_env::var("VNFM_TEST_OTLP_SPANS_FILE")),
        }
    }

    /// Every span of `trace_id` the collector has written so far. The file is shared by every
    /// test that exports to this collector; each test has a trace id of its own.
    fn spans_of(&self, trace_id: &str) -> Vec<TracedSpan> {
        let text = std::fs::read_to_string(&self.spans_file).unwrap_or_else(|e| {
            panic!(
                "the collector's spans file {}: {e}",
                self.spans_file.display()
            )
        });
        // The last line may be half written while the collector flushes.
        let exports = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok());
        let mut out = Vec::new();
        for export in exports {
            let scope_spans = export["resourceSpans"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|rs| rs["scopeSpans"].as_array().into_iter().flatten());
            for span in scope_spans.flat_map(|ss| ss["spans"].as_array().into_iter().flatten()) {
                if span["traceId"].as_str() != Some(trace_id) {
                    continue;
                }
                out.push(traced_span(span));
            }
        }
        out
    }

    /// The spans of `trace_id` once the exporter has sent `at_least` step spans (the batch
    /// processor exports every 200 ms here), or after 20 s.
    async fn trace(&self, trace_id: &str, at_least: usize) -> Vec<TracedSpan> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let spans = self.spans_of(trace_id);
            let steps = spans.iter().filter(|s| s.name == "lcm.step").count();
            if steps >= at_least || Instant::now() > deadline {
                return spans;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

fn traced_span(span: &Value) -> TracedSpan {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let attributes = span["attributes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|kv| {
            // OTLP JSON: {"stringValue": "..."}, {"intValue": "202"} (64-bit integers as
            // strings), {"boolValue": true}.
            let value = kv["value"]
                .as_object()
                .and_then(|v| v.values().next())
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                .unwrap_or_default();
            (text(&kv["key"]), value)
        })
        .collect();
    let links = span["links"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|l| format!("{}-{}", text(&l["traceId"]), text(&l["spanId"])))
        .collect();
    TracedSpan {
        name: text(&span["name"]),
        span_id: text(&span["spanId"]),
        parent_span_id: text(&span["parentSpanId"]),
        attributes,
        links,
    }
}

/// A trace id no other run or test shares (32 hex digits, not all zero).
fn new_trace_id() -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let unique = (u128::from(std::process::id()) << 96)
        ^ (nanos << 16)
        ^ N.fetch_add(1, Ordering::SeqCst) as u128;
    format!("{unique:032x}")
}

const PARENT_ID: &str = "00f067aa0ba902b7";

/// `vnfm serve` exporting to `collector`, every 200 ms rather than every 5 s.
fn start_traced(data_dir: &Path, collector: &Collector) -> Server {
    let mut command = support::serve_command(data_dir);
    command
        .args(["--enable-test-vim", "--log-level", "warn"])
        .args(["--otlp-endpoint", &collector.url])
        .env("OTEL_BSP_SCHEDULE_DELAY", "200");
    Server::spawn(command, 3).0
}

/// Sends the INSTANTIATE `body` for `vnf` as a child of `trace_id`/[`PARENT_ID`], waits until
/// it completed; returns its occurrence id and the names of its steps (its timeline).
async fn traced_instantiate(
    api: &Api,
    vnf: &str,
    trace_id: &str,
    body: Value,
) -> (String, Vec<String>) {
    let r = api
        .req(
            reqwest::Method::POST,
            &format!("/vnflcm/v2/vnf_instances/{vnf}/instantiate"),
        )
        .header("traceparent", format!("00-{trace_id}-{PARENT_ID}-01"))
        .json(&body)
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
    // Up to 120 s: the CNF waits for its pods to be Ready on a shared, loaded control plane.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (_, _, t) = api.json(reqwest::Method::GET, &timeline_path, None).await;
        if t["operationState"] == "COMPLETED" {
            let steps = t["steps"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["name"].as_str().unwrap().to_owned())
                .collect();
            return (occ_id, steps);
        }
        assert!(
            !["FAILED_TEMP", "FAILED", "ROLLED_BACK"]
                .contains(&t["operationState"].as_str().unwrap_or("")),
            "INSTANTIATE failed: {t:#}"
        );
        assert!(
            Instant::now() < deadline,
            "INSTANTIATE never completed: {t:#}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Asserts `traced` is the whole trace of the INSTANTIATE `occ_id` of `vnf`: the request span
/// a child of the caller's, the occurrence span (with its attributes) a child of the request,
/// one step span per step of the timeline a child of the occurrence, and a span of each of
/// `edges` under a span of the same trace. Returns the occurrence span.
fn assert_one_trace(
    traced: &[TracedSpan],
    occ_id: &str,
    vnf: &str,
    steps: &[String],
    edges: &[Edge],
) -> TracedSpan {
    let names: Vec<&str> = traced.iter().map(|s| s.name.as_str()).collect();
    let request = traced
        .iter()
        .find(|s| s.name.starts_with("POST ") && s.name.ends_with("/instantiate"))
        .unwrap_or_else(|| panic!("no request span in the caller's trace: {names:?}"));
    assert_eq!(request.parent_span_id, PARENT_ID, "{names:?}");
    assert_eq!(
        request
            .attributes
            .get("http.response.status_code")
            .map(String::as_str),
        Some("202"),
        "{request:?}"
    );
    let occ = traced
        .iter()
        .find(|s| s.name == "lcm.op_occ")
        .unwrap_or_else(|| panic!("no occurrence span in the caller's trace: {names:?}"));
    assert_eq!(occ.parent_span_id, request.span_id, "{names:?}");
    let attr = |key: &str| occ.attributes.get(key).map(String::as_str);
    assert_eq!(attr("op_occ_id"), Some(occ_id), "{occ:?}");
    assert_eq!(attr("vnf_instance_id"), Some(vnf), "{occ:?}");
    assert_eq!(attr("operation"), Some("INSTANTIATE"), "{occ:?}");
    let mut traced_steps: Vec<(String, String)> = traced
        .iter()
        .filter(|s| s.name == "lcm.step")
        .map(|s| {
            (
                s.attributes.get("step").cloned().unwrap_or_default(),
                s.parent_span_id.clone(),
            )
        })
        .collect();
    traced_steps.sort();
    let mut expected: Vec<(String, String)> = steps
        .iter()
        .map(|s| (s.clone(), occ.span_id.clone()))
        .collect();
    expected.sort();
    assert_eq!(traced_steps, expected, "{names:?}");
    for edge in edges {
        let found = traced.iter().find(|s| {
            s.name == edge.name
                && s.attributes.get(edge.key).map(String::as_str) == Some(edge.value)
        });
        let found = found.unwrap_or_else(|| {
            panic!(
                "no `{}` span with {}={} in the caller's trace: {traced:#?}",
                edge.name, edge.key, edge.value
            )
        });
        assert!(
            traced.iter().any(|s| s.span_id == found.parent_span_id),
            "`{}` is not under a span of the trace: {found:?}",
            edge.name
        );
    }
    occ.clone()
}

#[vnfm_test_env::needs(otel_collector, corpus)]
#[tokio::test]
async fn an_instantiate_with_a_traceparent_is_one_trace_in_the_collector() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let collector = Collector::from_env();
    let dir = tempfile::tempdir().unwrap();
    let server = start_traced(dir.path(), &collector);
    let api = Api::connect(&server.base, dir.path()).await;
    let subscriber = Subscriber::start().await;
    api.subscribe(&subscriber.callback).await;
    let vnfd = api.onboard_corpus_package().await;
    let vnf = api.create_vnf(&vnfd).await;
    let trace_id = new_trace_id();
    let (occ_id, steps) = traced_instantiate(
        &api,
        &vnf,
        &trace_id,
        json!({"flavourId": "simple", "vimConnectionInfo": {"vim1": {"vimType": "TEST.NOOP.V_1"}}}),
    )
    .await;
    assert!(!steps.is_empty(), "an INSTANTIATE without steps");
    let notified = ["STARTING", "PROCESSING", "COMPLETED"].map(|s| format!("INSTANTIATE {s}"));
    eventually(20, "the INSTANTIATE notifications", async || {
        subscriber.sequence(&vnf).ends_with(&notified)
    })
    .await;
    // The deliveries are exported after the steps: wait for them too.
    let deadline = Instant::now() + Duration::from_secs(20);
    let traced = loop {
        let traced = collector.trace(&trace_id, steps.len()).await;
        let deliveries = traced
            .iter()
            .filter(|s| s.name == "notification.delivery")
            .count();
        if deliveries >= notified.len() || Instant::now() > deadline {
            break traced;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let delivery = Edge {
        name: "notification.delivery",
        key: "notification_type",
        value: "VnfLcmOperationOccurrenceNotification",
    };
    assert_one_trace(&traced, &occ_id, &vnf, &steps, &[delivery]);
    assert_deliveries_in_trace(&traced, &trace_id, &subscriber, &vnf);
    drop(server);
}

/// Asserts each INSTANTIATE notification `subscriber` received about `vnf` was delivered in
/// the caller's trace `trace_id`: a `notification.delivery` span of `traced` whose parent (and
/// link) is the span the notification was written in, and whose `traceparent` the subscriber
/// received.
fn assert_deliveries_in_trace(
    traced: &[TracedSpan],
    trace_id: &str,
    subscriber: &Subscriber,
    vnf: &str,
) {
    let received = subscriber.received.lock().unwrap().clone();
    let headers = subscriber.traceparents.lock().unwrap().clone();
    let instantiate: Vec<(&Value, &Option<String>)> = received
        .iter()
        .zip(&headers)
        .filter(|(n, _)| n["vnfInstanceId"] == vnf && n["operation"] == "INSTANTIATE")
        .collect();
    assert!(instantiate.len() >= 3, "{received:#?}");
    for (notification, header) in instantiate {
        let header = header
            .as_deref()
            .unwrap_or_else(|| panic!("no traceparent with {notification:#}"));
        let (header_trace, header_span) = header
            .strip_prefix("00-")
            .and_then(|h| h.split_once('-'))
            .map(|(t, rest)| (t, rest.split('-').next().unwrap_or_default()))
            .unwrap_or_else(|| panic!("traceparent {header:?} is not W3C"));
        assert_eq!(
            header_trace, trace_id,
            "{} was delivered outside the caller's trace",
            notification["operationState"]
        );
        let delivery = traced
            .iter()
            .find(|s| s.name == "notification.delivery" && s.span_id == header_span)
            .unwrap_or_else(|| {
                panic!("the collector has no delivery span {header_span}: {traced:#?}")
            });
        let made_in = traced
            .iter()
            .find(|s| s.span_id == delivery.parent_span_id)
            .unwrap_or_else(|| panic!("the delivery's parent is not in the trace: {delivery:?}"));
        assert!(
            made_in.name.starts_with("POST ") || made_in.name.starts_with("lcm."),
            "delivered under {made_in:?}"
        );
        assert_eq!(
            delivery.links,
            [format!("{trace_id}-{}", made_in.span_id)],
            "{delivery:?}"
        );
    }
}

/// A Tacker v2 management script for every hook: records the hook it ran in the instance's
/// `metadata` (`lastScriptHook`), as the pickle protocol of `docs/mgmt-scripts.md` returns it.
const HOOK_SCRIPT: &str = r#"import os, pickle, sys
d = pickle.load(sys.stdin.buffer)
inst = d['vnf_instance']
inst.setdefault('metadata', {})['lastScriptHook'] = d['operation']
sys.stdout.buffer.write(pickle.dumps({'vnf_instance': inst}))
sys.stdout.flush()
os._exit(0)
"#;

/// The real Kubernetes control plane of `VNFM_TEST_KUBE_*`, with a namespace of the test's own
/// that it removes when dropped.
struct KubeNamespace {
    server: String,
    ca_pem: String,
    token: String,
    name: String,
    http: reqwest::Client,
}

impl KubeNamespace {
    async fn create(prefix: &str) -> KubeNamespace {
        let read = |var: &str| {
            let path = vnfm_test_env::var(var);
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{var} ({path}): {e}"))
        };
        let server = vnfm_test_env::var("VNFM_TEST_KUBE_SERVER");
        let ca_pem = read("VNFM_TEST_KUBE_CA_FILE");
        let token = read("VNFM_TEST_KUBE_TOKEN_FILE").trim().to_owned();
        let certs = reqwest::Certificate::from_pem_bundle(ca_pem.as_bytes()).unwrap();
        let http = reqwest::Client::builder()
            .tls_certs_only(certs)
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap();
        let name = format!(
            "{prefix}-{}-{}",
            std::process::id(),
            new_trace_id()[..6].to_owned()
        );
        let r = http
            .post(format!("{server}/api/v1/namespaces"))
            .bearer_auth(&token)
            .json(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}))
            .send()
            .await
            .unwrap_or_else(|e| panic!("POST /api/v1/namespaces on {server}: {e}"));
        assert_eq!(
            r.status(),
            201,
            "creating namespace {name}: {}",
            r.text().await.unwrap_or_default()
        );
        KubeNamespace {
            server,
            ca_pem,
            token,
            name,
            http,
        }
    }

    /// The VIM connection of the cluster's administrator.
    fn vim_connection(&self) -> Value {
        json!({
            "vimType": "ETSINFV.KUBERNETES.V_1",
            "interfaceInfo": {"endpoint": self.server, "ssl_ca_cert": self.ca_pem},
            "accessInfo": {"bearer_token": self.token}
        })
    }

    /// The names of the Deployments in the namespace.
    async fn deployments(&self) -> Vec<String> {
        let r = self
            .http
            .get(format!(
                "{}/apis/apps/v1/namespaces/{}/deployments",
                self.server, self.name
            ))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap();
        let list: Value = r.json().await.unwrap();
        list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|d| {
                d["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect()
    }
}

impl Drop for KubeNamespace {
    fn drop(&mut self) {
        // Deleting the namespace deletes what the CNF left in it, also when the test failed.
        let (http, url, token) = (
            self.http.clone(),
            format!("{}/api/v1/namespaces/{}", self.server, self.name),
            self.token.clone(),
        );
        let _ = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(async { http.delete(url).bearer_auth(token).send().await })
        })
        .join();
    }
}

#[vnfm_test_env::needs(otel_collector, kubernetes, corpus)]
#[tokio::test]
async fn a_cnf_instantiate_with_hooks_on_a_real_cluster_is_one_trace_in_the_collector() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let collector = Collector::from_env();
    let ns = KubeNamespace::create("traces").await;
    let dir = tempfile::tempdir().unwrap();
    // Tacker's CNF sample binds every `Vnflcm` hook to `Scripts/sample_script.py`, which it does
    // not ship: the package gets the test's script there.
    let package = dir.path().join("cnf");
    copy_tree(
        &vnfm_test_env::corpus("tacker/v2-cnf-instantiate-resources"),
        &package,
    );
    std::fs::create_dir_all(package.join("Scripts")).unwrap();
    std::fs::write(package.join("Scripts/sample_script.py"), HOOK_SCRIPT).unwrap();
    let data = dir.path().join("data");
    let server = start_traced(&data, &collector);
    let api = Api::connect(&server.base, &data).await;
    let vnfd = api.onboard_package(&package).await;
    let vnf = api.create_vnf(&vnfd).await;
    let trace_id = new_trace_id();
    let (occ_id, steps) = traced_instantiate(
        &api,
        &vnf,
        &trace_id,
        json!({
            "flavourId": "simple",
            "vimConnectionInfo": {"vim1": ns.vim_connection()},
            "additionalParams": {
                "lcm-kubernetes-def-files": ["Files/kubernetes/deployment.yaml"],
                "namespace": ns.name
            }
        }),
    )
    .await;
    // The driver created the CNF on the cluster and the script ran the hooks.
    assert_eq!(ns.deployments().await, ["vdu2"]);
    let (_, _, instance) = api
        .json(
            reqwest::Method::GET,
            &format!("/vnflcm/v2/vnf_instances/{vnf}"),
            None,
        )
        .await;
    assert_eq!(
        instance["metadata"]["lastScriptHook"], "instantiate_end",
        "{instance:#}"
    );
    let traced = collector.trace(&trace_id, steps.len()).await;
    let edges = [
        Edge {
            name: "lcm.hook",
            key: "hook",
            value: "instantiate_start",
        },
        Edge {
            name: "lcm.hook",
            key: "hook",
            value: "instantiate_end",
        },
        Edge {
            name: "lcm.hook",
            key: "hook.kind",
            value: "script",
        },
        Edge {
            name: "infra.request",
            key: "vim.type",
            value: "kubernetes",
        },
    ];
    let occ = assert_one_trace(&traced, &occ_id, &vnf, &steps, &edges);
    assert!(occ.attributes.contains_key("vim_id"), "{occ:?}");
    api.task(&vnf, "terminate", json!({"terminationType": "FORCEFUL"}))
        .await;
    drop(server);
}

/// Copies the directory `from` to `to` (created), recursively.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}
