//! Fault management over real HTTP on loopback, with the load generator in the same process
//! (it shares the machine's cores with the server, as Alertmanager would):
//!
//! 1. Ingestion: batches of 100 firing alerts posted to `POST /vnffm/v1/alertmanager` one
//!    after the other, every alert a new fault (a new alarm and its `AlarmNotification` to an
//!    FM subscriber); alarms per second and the latency of a batch.
//! 2. Automatic healing: instances of the hello VNF on the test VIM with
//!    `isAutohealEnabled`; for each, one alert about its VNFC, and the time from sending the
//!    webhook until the HEAL's `STARTING` notification (`isAutomaticInvocation: true`)
//!    reaches an LCM subscriber's callback on loopback.
//!
//! `cargo bench -p vnfm-api --bench fm`; sizes from `VNFM_FM_BATCHES` (50 batches of 100
//! alerts) and `VNFM_FM_HEALS` (30 instances).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use serde_json::{Value, json};
use tokio::sync::Notify;
use vnfm_api::{AppState, StateOptions};

mod common;
use common::{env_or, percentile};

const TOKEN: &str = "bench-alertmanager-token";
const VNFD_ID: &str = "6f0b7e1c-2d55-4c5e-9b3a-4e110a000001";

/// When each instance's automatic HEAL was announced as STARTING.
#[derive(Default)]
struct Announced {
    at: Mutex<HashMap<String, Instant>>,
    changed: Notify,
}

async fn callback(State(seen): State<Arc<Announced>>, body: Bytes) -> StatusCode {
    let now = Instant::now();
    let n: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if n["operation"] == "HEAL"
        && n["operationState"] == "STARTING"
        && n["isAutomaticInvocation"] == true
        && let Some(id) = n["vnfInstanceId"].as_str()
    {
        seen.at.lock().expect("lock").insert(id.to_owned(), now);
        seen.changed.notify_waiters();
    }
    StatusCode::NO_CONTENT
}

fn alert(instance: &str, vnfc: &str, cause: &str) -> Value {
    json!({
        "status": "firing",
        "labels": {"alertname": "VnfcDown", "vnf_instance_id": instance,
                   "vnfc_instance_id": vnfc, "perceived_severity": "critical",
                   "function_type": "vnffm"},
        "annotations": {"probable_cause": cause},
        "startsAt": "2026-11-25T07:00:00Z", "endsAt": "0001-01-01T00:00:00Z",
        "generatorURL": "http://prometheus/graph", "fingerprint": cause
    })
}

fn webhook(alerts: Vec<Value>) -> Value {
    json!({
        "version": "4", "groupKey": "{}:{}", "truncatedAlerts": 0, "status": "firing",
        "receiver": "vnfm", "groupLabels": {}, "commonLabels": {}, "commonAnnotations": {},
        "externalURL": "http://alertmanager", "alerts": alerts
    })
}

struct Api {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Api {
    /// `POST path` with `body`; `Version: 2.0.0` on the v2 APIs (the v1 ones take none).
    async fn post(&self, path: &str, body: &Value) -> reqwest::Response {
        let mut request = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .json(body);
        if path.contains("/v2/") {
            request = request.header("Version", "2.0.0");
        }
        request.send().await.expect(path)
    }

    async fn get(&self, url: &str) -> Value {
        self.http
            .get(url)
            .bearer_auth(&self.token)
            .header("Version", "2.0.0")
            .send()
            .await
            .expect(url)
            .json()
            .await
            .expect("JSON")
    }

    async fn alertmanager(&self, body: &Value) {
        let r = self
            .http
            .post(format!("{}/vnffm/v1/alertmanager", self.base))
            .bearer_auth(TOKEN)
            .json(body)
            .send()
            .await
            .expect("webhook");
        assert_eq!(
            r.status().as_u16(),
            204,
            "{}",
            r.text().await.unwrap_or_default()
        );
    }

    /// Instantiates a new hello VNF with `isAutohealEnabled`; its id and its VNFC's id.
    async fn healable_instance(&self, n: usize) -> (String, String) {
        let created: Value = self
            .post(
                "/vnflcm/v2/vnf_instances",
                &json!({"vnfdId": VNFD_ID, "vnfInstanceName": format!("auto-{n}")}),
            )
            .await
            .json()
            .await
            .expect("instance");
        let id = created["id"].as_str().expect("id").to_owned();
        let r = self
            .post(
                &format!("/vnflcm/v2/vnf_instances/{id}/instantiate"),
                &json!({"flavourId": "simple",
                        "vimConnectionInfo": {"v": {"vimType": "TEST.NOOP.V_1"}},
                        "vnfConfigurableProperties": {"isAutohealEnabled": true}}),
            )
            .await;
        let occ = r.headers()["location"]
            .to_str()
            .expect("location")
            .to_owned();
        loop {
            let o = self.get(&occ).await;
            match o["operationState"].as_str() {
                Some("COMPLETED") => break,
                Some("STARTING" | "PROCESSING") => {
                    tokio::time::sleep(Duration::from_millis(2)).await
                }
                other => panic!("instantiate ended {other:?}"),
            }
        }
        let instance = self
            .get(&format!("{}/vnflcm/v2/vnf_instances/{id}", self.base))
            .await;
        let vnfc = instance["instantiatedVnfInfo"]["vnfcInfo"][0]["id"]
            .as_str()
            .expect("a VNFC")
            .to_owned();
        (id, vnfc)
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    vnfm::lcm::install_crypto_provider();
    let batches = env_or("VNFM_FM_BATCHES", 50);
    let heals = env_or("VNFM_FM_HEALS", 30);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        // The subscriber.
        let announced = Arc::new(Announced::default());
        let app = Router::new()
            .route("/n", get(|| async { StatusCode::NO_CONTENT }).post(callback))
            .with_state(announced.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let callback_uri = format!("http://{}/n", listener.local_addr().expect("addr"));
        tokio::spawn(async move { axum::serve(listener, app).await });

        // The server: default SQLite store, test VIM, notification delivery, auto-heal with
        // no cooldown (every instance is healed once).
        let dir = tempfile::tempdir().expect("temp dir");
        let data = dir.path().join("data");
        let mut options = StateOptions::new(&data);
        options.enable_test_vim = true;
        options.verify_callbacks = false;
        options.alertmanager_token = Some(vnfm_types::SecretString::new(TOKEN));
        let services = vnfm::lcm::builder()
            .data_dir(&data)
            .recovery_interval(None)
            .infra_driver(vnfm_api::test_vim_driver())
            .deliver_notifications(vnfm::lcm::DelivererConfig::new("bench"))
            .auto_heal(Some(vnfm::lcm::AutoHealPolicy {
                bounds: vnfm::lcm::Bounds {
                    cooldown: Duration::ZERO,
                    max_in_window: 5,
                    window: Duration::from_secs(3600),
                },
                ..Default::default()
            }))
            .assemble()
            .await
            .expect("services");
        let state = AppState::new(services, options).await.expect("state");
        let router = vnfm_api::router(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            let _ = vnfm_api::server::serve_http1(listener, router, std::future::pending()).await;
        });
        let base = format!("http://{addr}");
        let http = reqwest::Client::builder().tcp_nodelay(true).build().expect("client");
        let client = state.bootstrap_client().expect("client");
        let token = common::token(&http, &base, &client).await;
        let api = Api {
            http,
            base,
            token,
        };
        for (path, body) in [
            ("/vnffm/v1/subscriptions", json!({"callbackUri": callback_uri})),
            (
                "/vnflcm/v2/subscriptions",
                json!({"callbackUri": callback_uri, "filter": {"operationTypes": ["HEAL"]}}),
            ),
        ] {
            let r = api.post(path, &body).await;
            assert_eq!(r.status().as_u16(), 201, "{path}");
        }
        common::onboard_hello(&api.http, &api.base, &api.token).await;

        // 1. Ingestion: every alert a new fault of a VNF instance that is not there (alarms
        // are kept for any managed object id), so no heal is started.
        let mut latencies = Vec::new();
        let started = Instant::now();
        for b in 0..batches {
            let alerts = (0..100)
                .map(|i| alert(&format!("ghost-{}", i % 10), "c1", &format!("fault {b}-{i}")))
                .collect();
            let body = webhook(alerts);
            let t = Instant::now();
            api.alertmanager(&body).await;
            latencies.push(t.elapsed());
        }
        let elapsed = started.elapsed();
        latencies.sort_unstable();
        println!(
            "ingestion: {} alarms in {:.2} s = {:.0} alarms/s; a batch of 100: p50 {:.1} ms, p90 {:.1} ms, max {:.1} ms",
            batches * 100,
            elapsed.as_secs_f64(),
            (batches * 100) as f64 / elapsed.as_secs_f64(),
            ms(percentile(&latencies, 0.5)),
            ms(percentile(&latencies, 0.9)),
            ms(latencies.last().copied().unwrap_or_default()),
        );

        // 2. Webhook to the automatic HEAL's STARTING notification, one instance at a time.
        let mut instances = Vec::new();
        for n in 0..heals {
            instances.push(api.healable_instance(n).await);
        }
        let mut delays = Vec::new();
        for (id, vnfc) in &instances {
            let body = webhook(vec![alert(id, vnfc, "the VNFC stopped answering")]);
            let sent = Instant::now();
            api.alertmanager(&body).await;
            let deadline = sent + Duration::from_secs(30);
            loop {
                let waiting = announced.changed.notified();
                if let Some(at) = announced.at.lock().expect("lock").get(id) {
                    delays.push(at.saturating_duration_since(sent));
                    break;
                }
                assert!(Instant::now() < deadline, "no automatic HEAL of {id}");
                let _ = tokio::time::timeout(Duration::from_millis(50), waiting).await;
            }
        }
        delays.sort_unstable();
        println!(
            "webhook to the automatic HEAL's STARTING notification: {} heals; p50 {:.1} ms, p90 {:.1} ms, max {:.1} ms",
            delays.len(),
            ms(percentile(&delays, 0.5)),
            ms(percentile(&delays, 0.9)),
            ms(delays.last().copied().unwrap_or_default()),
        );
    });
}
