//! Performance management end to end on the real Prometheus (`scripts/test-env/prometheus.sh`;
//! `scripts/test.sh` starts it): an exporter the test serves on 127.0.0.1 plays the VNFC of
//! an instance; the VNFM reads its CPU usage through Prometheus' query API with the default
//! PromQL of the catalogue. A PM job on the instance produces a report whose values are the
//! exporter's, announced to the job's callback by a `PerformanceInformationAvailableNotification`
//! over HTTP; a threshold on the same metric is crossed upwards when the exporter's value rises,
//! and its callback gets a `ThresholdCrossedNotification`.
//!
//! Built as an ignored test when the variables `prometheus.sh start` prints were not set at
//! build time (`#[vnfm_test_env::needs(prometheus)]`).

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
use prom::{Env, Exporter, eventually};
use serde_json::{Value, json};
use support::{HELLO, Harness, zip_dir};
use vnfm_lcm::DelivererConfig;
use vnfm_types::Threshold;

const WAIT: Duration = Duration::from_secs(120);

type Posts = Arc<Mutex<Vec<(String, Value)>>>;

async fn record(State(posts): State<Posts>, uri: axum::http::Uri, body: Bytes) -> StatusCode {
    posts.lock().unwrap().push((
        uri.path().to_owned(),
        serde_json::from_slice(&body).unwrap_or(Value::Null),
    ));
    StatusCode::NO_CONTENT
}

fn find(posts: &Posts, path: &str) -> Option<Value> {
    posts
        .lock()
        .unwrap()
        .iter()
        .find(|(p, _)| p == path)
        .map(|(_, b)| b.clone())
}

#[vnfm_test_env::needs(prometheus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pm_job_reports_prometheus_values_and_a_threshold_is_crossed() {
    let env = Env::get();

    // The subscriber of the job's and the threshold's notifications.
    let posts = Posts::default();
    let app = Router::new()
        .route(
            "/{*path}",
            get(|| async { StatusCode::NO_CONTENT }).post(record),
        )
        .with_state(posts.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    // The VNFM reading Prometheus, as `vnfm serve --prometheus-url` does.
    let source = vnfm::lcm::prometheus_metrics(
        &env.prometheus_url,
        vnfm::lcm::PrometheusOptions::default(),
        &vnfm::lcm::PromqlOverrides::default(),
    )
    .unwrap();
    let h = Harness::with_services(
        move |b| {
            b.metrics_source(source)
                .performance(
                    vnfm::lcm::PmOptions {
                        threshold_period: Duration::from_secs(2),
                        max_reports: 10,
                    },
                    Duration::from_millis(200),
                )
                .deliver_notifications(DelivererConfig {
                    poll_interval: Duration::from_millis(200),
                    ..DelivererConfig::new("pm-e2e")
                })
        },
        |_| {},
    )
    .await;

    // An instance of the hello VNF, its VNFC played by the exporter.
    h.onboard(zip_dir(Path::new(HELLO))).await;
    let vnf = h.create_instance().await;
    let done = h
        .task(
            &vnf,
            "instantiate",
            json!({"flavourId": "simple",
                   "vimConnectionInfo": {"vim1": {"vimType": "TEST.NOOP.V_1"}}}),
        )
        .await;
    assert_eq!(done["operationState"], "COMPLETED", "{done}");
    let instance = h
        .call(
            Method::GET,
            &format!("/vnflcm/v2/vnf_instances/{vnf}"),
            None,
        )
        .await
        .json();
    let vnfc = instance["instantiatedVnfInfo"]["vnfcInfo"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let exporter = Exporter::start().await;
    let labels = [
        ("vnf_instance_id", vnf.as_str()),
        ("vnfc_instance_id", vnfc.as_str()),
    ];
    exporter.set("vnfc_cpu_usage", &labels, 42.0);
    let _target = env.scrape(&vnf, exporter.addr);

    // A PM job: every 5 s, the mean CPU usage of the VNF over the last 5 s.
    let r = h
        .call(
            Method::POST,
            "/vnfpm/v2/pm_jobs",
            Some(json!({"objectType": "Vnf", "objectInstanceIds": [vnf],
                        "criteria": {"performanceMetric": ["VCpuUsageMeanVnf"],
                                     "collectionPeriod": 5, "reportingPeriod": 5},
                        "callbackUri": format!("{base}/job")})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json());
    let job = r.json()["id"].as_str().unwrap().to_owned();
    let available = eventually(
        WAIT,
        "a PerformanceInformationAvailableNotification",
        || async { find(&posts, "/job") },
    )
    .await;
    assert_eq!(
        available["notificationType"],
        "PerformanceInformationAvailableNotification"
    );
    assert_eq!(available["pmJobId"], job.as_str());
    let href = available["_links"]["performanceReport"]["href"]
        .as_str()
        .unwrap();
    let path = &href[href.find("/vnfpm/").unwrap()..];
    let report = h.call(Method::GET, path, None).await.json();
    let values = report["entries"][0]["performanceValues"]
        .as_array()
        .unwrap();
    assert!(!values.is_empty(), "{report}");
    assert!(
        values.iter().all(|v| v["value"].as_f64() == Some(42.0)),
        "the values are the exporter's: {report}"
    );

    // A threshold at 50 +- 5: seen below first, then crossed upwards.
    let r = h
        .call(
            Method::POST,
            "/vnfpm/v2/thresholds",
            Some(json!({"objectType": "Vnf", "objectInstanceId": vnf,
                        "criteria": {"performanceMetric": "VCpuUsageMeanVnf",
                                     "thresholdType": "SIMPLE",
                                     "simpleThresholdDetails": {"thresholdValue": 50,
                                                                "hysteresis": 5}},
                        "callbackUri": format!("{base}/threshold")})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json());
    let th = r.json()["id"].as_str().unwrap().to_owned();
    let store = h.store.clone();
    eventually(WAIT, "the threshold seen below", || {
        let (store, th) = (store.clone(), th.clone());
        async move {
            let (r, _) = store.pm::<Threshold>().get_pm(&th).await.unwrap()?;
            r.state?.contains("BELOW").then_some(())
        }
    })
    .await;
    assert!(find(&posts, "/threshold").is_none());
    exporter.set("vnfc_cpu_usage", &labels, 95.0);
    let crossed = eventually(WAIT, "a ThresholdCrossedNotification", || async {
        find(&posts, "/threshold")
    })
    .await;
    assert_eq!(crossed["crossingDirection"], "UP", "{crossed}");
    assert_eq!(crossed["thresholdId"], th.as_str());
    assert!(
        crossed["performanceValue"].as_f64().unwrap() > 55.0,
        "{crossed}"
    );
}
