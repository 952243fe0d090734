//! Fault management end to end on the real Prometheus and Alertmanager
//! (`scripts/test-env/prometheus.sh`; `scripts/test.sh` starts them): an exporter the test
//! serves on 127.0.0.1 plays a VNFC, a rule alerts when it is down, Alertmanager posts to the
//! VNFM's receiver (served on a socket the way `vnfm serve` serves it), the alarm appears in
//! the API and an `AlarmNotification` reaches the FM subscriber; when the VNFC is up again
//! the alarm is cleared and an `AlarmClearedNotification` follows.
//!
//! Built as an ignored test when `VNFM_TEST_PROMETHEUS_URL` and `VNFM_TEST_ALERTMANAGER_URL`
//! are not set at build time (the build script is `vnfm-prometheus`'s); on CI (`CI=true`)
//! their absence fails `ci_has_the_services`. The one test here rewrites Alertmanager's
//! webhook URL, which every test of the environment shares: keep it the only one per binary.

#[path = "../../vnfm-prometheus/tests/support/mod.rs"]
mod prom;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use prom::{Env, Exporter, eventually, unique};
use serde_json::{Value, json};
use vnfm_api::{AppState, StateOptions};
use vnfm_lcm::DelivererConfig;

const WAIT: Duration = Duration::from_secs(120);

#[test]
fn ci_has_the_services() {
    if std::env::var("CI").as_deref() != Ok("true") {
        return;
    }
    if !cfg!(vnfm_test_prometheus) {
        panic!(
            "CI=true but the fault management tests were built without VNFM_TEST_PROMETHEUS_URL \
             and VNFM_TEST_ALERTMANAGER_URL: scripts/test.sh must start scripts/test-env/prometheus.sh"
        );
    }
    Env::get();
}

type Posts = Arc<Mutex<Vec<Value>>>;

async fn callback_post(State(posts): State<Posts>, body: Bytes) -> StatusCode {
    posts
        .lock()
        .unwrap()
        .push(serde_json::from_slice(&body).unwrap_or(Value::Null));
    StatusCode::NO_CONTENT
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(vnfm_test_prometheus),
    ignore = "needs Prometheus and Alertmanager: eval \"$(scripts/test-env/prometheus.sh start)\" before building the tests"
)]
async fn an_alert_raises_notifies_and_clears_an_alarm() {
    let env = Env::get();
    vnfm::lcm::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();

    // The FM subscriber.
    let posts = Posts::default();
    let app = Router::new()
        .route(
            "/fm",
            get(|| async { StatusCode::NO_CONTENT }).post(callback_post),
        )
        .with_state(posts.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let callback = format!("http://{}/fm", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    // The VNFM, with the notification deliverer.
    let data = dir.path().join("data");
    let services = vnfm::lcm::builder()
        .data_dir(&data)
        .recovery_interval(None)
        .deliver_notifications(DelivererConfig {
            poll_interval: Duration::from_millis(500),
            ..DelivererConfig::new("fm-e2e")
        })
        .assemble()
        .await
        .unwrap();
    let mut options = StateOptions::new(&data);
    options.allow_basic_auth = true;
    let state = AppState::new(services, options).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let api = vnfm_api::router(state.clone());
    tokio::spawn(async move { axum::serve(listener, api).await });
    let base = format!("http://{addr}");
    let client = state.bootstrap_client().unwrap();
    let http = reqwest::Client::new();
    let get = |path: String| {
        http.get(format!("{base}{path}"))
            .basic_auth(&client.client_id, Some(client.client_secret.expose()))
            .send()
    };

    let vnf = unique("vnf");
    let r = http
        .post(format!("{base}/vnffm/v1/subscriptions"))
        .basic_auth(&client.client_id, Some(client.client_secret.expose()))
        .json(&json!({"callbackUri": callback,
                      "filter": {"vnfInstanceSubscriptionFilter": {"vnfInstanceIds": [vnf]}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());

    // The VNFC's exporter, scraped; the rule; Alertmanager's receiver (Basic credentials in
    // the URL, which Alertmanager sends as an Authorization header).
    let exporter = Exporter::start().await;
    let labels = [
        ("vnf_instance_id", vnf.as_str()),
        ("vnfc_instance_id", "c1"),
    ];
    exporter.set("vnfc_up", &labels, 1.0);
    let _target = env.scrape(&vnf, exporter.addr);
    let alert = unique("VnfcDown");
    let _rules = env
        .rules(
            &vnf,
            &format!(
                "groups:\n- name: {vnf}\n  rules:\n  - alert: {alert}\n    expr: vnfc_up{{vnf_instance_id=\"{vnf}\"}} == 0\n    labels:\n      function_type: vnffm\n      perceived_severity: critical\n      event_type: EQUIPMENT_ALARM\n    annotations:\n      probable_cause: VNFC stopped answering\n"
            ),
        )
        .await;
    env.set_webhook(&format!(
        "http://{}:{}@{addr}/vnffm/v1/alertmanager",
        client.client_id,
        client.client_secret.expose()
    ))
    .await;

    // Down: the alarm appears and the subscriber hears of it.
    exporter.set("vnfc_up", &labels, 0.0);
    let filter = format!("/vnffm/v1/alarms?filter=(eq,managedObjectId,{vnf})");
    let alarm: Value = eventually(WAIT, "the alarm in the API", || async {
        let list: Value = get(filter.clone()).await.ok()?.json().await.ok()?;
        list.as_array()?.first().cloned()
    })
    .await;
    assert_eq!(alarm["perceivedSeverity"], "CRITICAL", "{alarm}");
    assert_eq!(alarm["eventType"], "EQUIPMENT_ALARM");
    assert_eq!(alarm["probableCause"], "VNFC stopped answering");
    assert_eq!(alarm["faultType"], alert.as_str());
    assert_eq!(alarm["vnfcInstanceIds"], json!(["c1"]));
    let id = alarm["id"].as_str().unwrap().to_owned();
    let raised = eventually(WAIT, "the AlarmNotification", || async {
        posts
            .lock()
            .unwrap()
            .iter()
            .find(|p| p["notificationType"] == "AlarmNotification")
            .cloned()
    })
    .await;
    assert_eq!(raised["alarm"]["id"], id.as_str());
    assert_eq!(raised["alarm"]["managedObjectId"], vnf.as_str());

    // Up again: cleared, and notified.
    exporter.set("vnfc_up", &labels, 1.0);
    let cleared = eventually(WAIT, "the AlarmClearedNotification", || async {
        posts
            .lock()
            .unwrap()
            .iter()
            .find(|p| p["notificationType"] == "AlarmClearedNotification")
            .cloned()
    })
    .await;
    assert_eq!(cleared["alarmId"], id.as_str());
    let now: Value = get(format!("/vnffm/v1/alarms/{id}"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(now["perceivedSeverity"], "CLEARED", "{now}");
    assert!(now["alarmClearedTime"].is_string());
    // One alarm for the whole episode, however often Alertmanager repeated the alert.
    let list: Value = get(filter).await.unwrap().json().await.unwrap();
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
}
