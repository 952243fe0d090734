//! Fault management end to end on the real Prometheus and Alertmanager
//! (`scripts/test-env/prometheus.sh`; `scripts/test.sh` starts them): an exporter the test
//! serves on 127.0.0.1 plays the VNFC of an instance instantiated on the test VIM with
//! `isAutohealEnabled`, a rule alerts when it is down, Alertmanager posts to the VNFM's
//! receiver (served on a socket the way `vnfm serve` serves it), the alarm appears in the API,
//! an `AlarmNotification` reaches the FM subscriber, and the VNFM heals the VNFC by itself
//! (the HEAL's `STARTING` notification says `isAutomaticInvocation`); when the VNFC is up
//! again the alarm is cleared and an `AlarmClearedNotification` follows. Then CPU thresholds
//! in `auto_scale` rules scale the instance out while the VNFC is busy and in once it is
//! idle, each an automatic SCALE.
//!
//! Built as an ignored test when the variables `prometheus.sh start` prints were not set at
//! build time (`#[vnfm_test_env::needs(prometheus)]`). The one test here rewrites Alertmanager's
//! webhook URL, which every test of the environment shares: keep it the only one per binary.

use crate::support;

use crate::prom;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{Method, StatusCode};
use axum::routing::get;
use prom::{Env, Exporter, eventually, unique};
use serde_json::{Value, json};
use support::{HELLO, Harness, zip_dir};
use vnfm_lcm::DelivererConfig;

const WAIT: Duration = Duration::from_secs(120);
/// The automatic scaling cooldown of the test's server.
const COOLDOWN: Duration = Duration::from_secs(3);

type Posts = Arc<Mutex<Vec<Value>>>;

async fn callback_post(State(posts): State<Posts>, body: Bytes) -> StatusCode {
    posts
        .lock()
        .unwrap()
        .push(serde_json::from_slice(&body).unwrap_or(Value::Null));
    StatusCode::NO_CONTENT
}

#[vnfm_test_env::needs(prometheus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alerts_raise_an_alarm_heal_the_vnfc_and_scale_the_instance_automatically() {
    let env = Env::get();

    // The subscriber of fault and lifecycle notifications.
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

    // The VNFM, with the notification deliverer and the test VIM, on a socket.
    let h = Harness::with_services(
        |b| {
            b.deliver_notifications(DelivererConfig {
                poll_interval: Duration::from_millis(500),
                ..DelivererConfig::new("fm-e2e")
            })
            .auto_scale(Some(vnfm::lcm::AutoScalePolicy {
                bounds: vnfm::lcm::Bounds {
                    cooldown: COOLDOWN,
                    max_in_window: 10,
                    window: Duration::from_secs(3600),
                },
            }))
        },
        |_| {},
    )
    .await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let api = h.app.clone();
    tokio::spawn(async move { axum::serve(listener, api).await });
    let client = h.state.bootstrap_client().unwrap();
    let get = |path: String| {
        let h = &h;
        async move { h.call(Method::GET, &path, None).await.json() }
    };

    // An instance of the hello VNF on the test VIM, healed automatically.
    h.onboard(zip_dir(Path::new(HELLO))).await;
    let vnf = h.create_instance().await;
    let done = h
        .task(
            &vnf,
            "instantiate",
            json!({"flavourId": "simple",
                   "vimConnectionInfo": {"vim1": {"vimType": "TEST.NOOP.V_1"}},
                   "vnfConfigurableProperties": {"isAutohealEnabled": true,
                                                 "isAutoscaleEnabled": true}}),
        )
        .await;
    assert_eq!(done["operationState"], "COMPLETED", "{done}");
    let instance = get(format!("/vnflcm/v2/vnf_instances/{vnf}")).await;
    let vnfc = instance["instantiatedVnfInfo"]["vnfcInfo"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for (path, filter) in [
        (
            "/vnffm/v1/subscriptions",
            json!({"vnfInstanceSubscriptionFilter": {"vnfInstanceIds": [vnf]}}),
        ),
        (
            "/vnflcm/v2/subscriptions",
            json!({"vnfInstanceSubscriptionFilter": {"vnfInstanceIds": [vnf]},
                   "operationTypes": ["HEAL"]}),
        ),
    ] {
        let r = h
            .call(
                Method::POST,
                path,
                Some(json!({"callbackUri": callback, "filter": filter})),
            )
            .await;
        assert_eq!(
            r.status,
            201,
            "{path}: {}",
            String::from_utf8_lossy(&r.body)
        );
    }

    // The VNFC's exporter, scraped; the rule; Alertmanager's receiver (Basic credentials in
    // the URL, which Alertmanager sends as an Authorization header).
    let exporter = Exporter::start().await;
    let labels = [
        ("vnf_instance_id", vnf.as_str()),
        ("vnfc_instance_id", vnfc.as_str()),
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
        let list = get(filter.clone()).await;
        list.as_array()?.first().cloned()
    })
    .await;
    assert_eq!(alarm["perceivedSeverity"], "CRITICAL", "{alarm}");
    assert_eq!(alarm["eventType"], "EQUIPMENT_ALARM");
    assert_eq!(alarm["probableCause"], "VNFC stopped answering");
    assert_eq!(alarm["faultType"], alert.as_str());
    assert_eq!(alarm["vnfcInstanceIds"], json!([vnfc]));
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

    // The VNFM heals the VNFC by itself, and says the operation was automatic.
    let starting = eventually(
        WAIT,
        "the automatic HEAL's STARTING notification",
        || async {
            posts
                .lock()
                .unwrap()
                .iter()
                .find(|p| p["operation"] == "HEAL" && p["operationState"] == "STARTING")
                .cloned()
        },
    )
    .await;
    assert_eq!(starting["isAutomaticInvocation"], true, "{starting}");
    let occ = starting["vnfLcmOpOccId"].as_str().unwrap().to_owned();
    let healed = h
        .wait_op(&format!("/vnflcm/v2/vnf_lcm_op_occs/{occ}"))
        .await;
    assert_eq!(healed["operationState"], "COMPLETED", "{healed}");
    assert_eq!(healed["isAutomaticInvocation"], true);
    assert_eq!(healed["operationParams"]["vnfcInstanceId"], json!([vnfc]));
    assert!(
        healed["operationParams"]["cause"]
            .as_str()
            .unwrap()
            .contains(&id),
        "{healed}"
    );

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
    let now = get(format!("/vnffm/v1/alarms/{id}")).await;
    assert_eq!(now["perceivedSeverity"], "CLEARED", "{now}");
    assert!(now["alarmClearedTime"].is_string());
    // One alarm for the whole episode, however often Alertmanager repeated the alert, and
    // one heal.
    let list = get(filter).await;
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    let heals = get(format!(
        "/vnflcm/v2/vnf_lcm_op_occs?filter=(eq,vnfInstanceId,{vnf});(eq,operation,HEAL)"
    ))
    .await;
    assert_eq!(heals.as_array().unwrap().len(), 1, "{heals}");

    // A threshold in a Prometheus rule scales the instance out while the VNFC is busy, and
    // in once it is idle.
    let cpu_rule = |name: &str, op: &str, direction: &str| {
        format!(
            "  - alert: {name}\n    expr: vnfc_cpu_usage{{vnf_instance_id=\"{vnf}\"}} {op}\n    labels:\n      function_type: auto_scale\n      auto_scale_type: {direction}\n      aspect_id: web_scale\n"
        )
    };
    let _scaling = env
        .rules(
            &format!("{vnf}-scaling"),
            &format!(
                "groups:\n- name: {vnf}-scaling\n  rules:\n{}{}",
                cpu_rule(&unique("CpuHigh"), "> 80", "SCALE_OUT"),
                cpu_rule(&unique("CpuLow"), "< 20", "SCALE_IN")
            ),
        )
        .await;
    let scales = || async {
        let list = get(format!(
            "/vnflcm/v2/vnf_lcm_op_occs?all_fields&filter=(eq,vnfInstanceId,{vnf});(eq,operation,SCALE)"
        ))
        .await;
        list.as_array().cloned().unwrap_or_default()
    };
    let level = || async {
        let i = get(format!("/vnflcm/v2/vnf_instances/{vnf}")).await;
        i["instantiatedVnfInfo"]["scaleStatus"][0]["scaleLevel"].as_u64()
    };
    exporter.set("vnfc_cpu_usage", &labels, 95.0);
    let out = eventually(WAIT, "an automatic SCALE_OUT", || async {
        scales().await.into_iter().find(|o| {
            o["operationState"] == "COMPLETED" && o["operationParams"]["type"] == "SCALE_OUT"
        })
    })
    .await;
    assert_eq!(out["isAutomaticInvocation"], true, "{out}");
    assert_eq!(level().await, Some(1));
    // Alertmanager sends a firing alert once (then every repeat_interval, an hour here): the
    // idle VNFC is reported after the cooldown, so its request is not dropped.
    tokio::time::sleep(COOLDOWN + Duration::from_secs(1)).await;
    exporter.set("vnfc_cpu_usage", &labels, 5.0);
    let scale_in = eventually(WAIT, "an automatic SCALE_IN", || async {
        scales().await.into_iter().find(|o| {
            o["operationState"] == "COMPLETED" && o["operationParams"]["type"] == "SCALE_IN"
        })
    })
    .await;
    assert_eq!(scale_in["isAutomaticInvocation"], true, "{scale_in}");
    let started = |o: &Value| {
        vnfm_types::time::parse_rfc3339(o["startTime"].as_str().unwrap())
            .expect("an RFC 3339 time")
            .as_second()
    };
    assert!(
        started(&scale_in) - started(&out) >= COOLDOWN.as_secs() as i64 - 1,
        "the scale in waited for the cooldown: {out} then {scale_in}"
    );
    assert_eq!(level().await, Some(0));
    exporter.set("vnfc_cpu_usage", &labels, 50.0);
}
