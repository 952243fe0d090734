//! VNF indicators over the API (`/vnfind/v1`), with a scripted metrics source: a package whose
//! VNFD declares a `tosca.policies.nfv.VnfIndicator` with PromQL; the instantiated instance
//! links to its indicators, the collector's value is listed (with SOL013 filters) and read, a
//! change is notified to an indicator subscription over HTTP on loopback, and the values go
//! when the instance is terminated. The PromQL itself is evaluated by a real Prometheus in
//! `vnfm-prometheus`'s `real_services.rs`.

use crate::support;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{Method, StatusCode};
use axum::routing::get;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use support::{HELLO, Harness, zip_dir};
use vnfm_driver_api::metrics::StaticMetrics;
use vnfm_lcm::DelivererConfig;

type Posts = Arc<Mutex<Vec<Value>>>;

async fn record(State(posts): State<Posts>, body: Bytes) -> StatusCode {
    posts
        .lock()
        .unwrap()
        .push(serde_json::from_slice(&body).unwrap_or(Value::Null));
    StatusCode::NO_CONTENT
}

/// A notification receiver on 127.0.0.1: its base URL and the bodies it received.
async fn receiver() -> (String, Posts) {
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
    (base, posts)
}

/// The hello package on SOL001 v3.3.1 types with one indicator, its manifest's hashes
/// recomputed.
fn package_with_indicator(dir: &Path) -> Vec<u8> {
    let src = Path::new(HELLO);
    for sub in ["TOSCA-Metadata", "Definitions"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
        for entry in std::fs::read_dir(src.join(sub)).unwrap() {
            let path = entry.unwrap().path();
            let mut text = std::fs::read_to_string(&path).unwrap();
            text = text.replace("/raw/v2.6.1/", "/raw/v3.3.1/");
            if path.ends_with("hello_df_simple.yaml") {
                text = text.replace(
                    "  policies:\n",
                    "  policies:\n    - session_load:\n        type: tosca.policies.nfv.VnfIndicator\n        metadata:\n          name: Session load\n          vnfm_promql: 'sum(sessions{vnf_instance_id=\"${vnf_instance_id}\"})'\n        properties:\n          source: vnf\n        targets: [ VNF ]\n\n",
                );
            }
            std::fs::write(dir.join(sub).join(path.file_name().unwrap()), text).unwrap();
        }
    }
    let manifest = std::fs::read_to_string(src.join("hello.mf")).unwrap();
    let mut out = String::new();
    let mut source = String::new();
    for line in manifest.lines() {
        if let Some(s) = line.strip_prefix("Source: ") {
            source = s.to_owned();
        }
        if line.starts_with("Hash: ") {
            let digest = Sha256::digest(std::fs::read(dir.join(&source)).unwrap());
            let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            out.push_str(&format!("Hash: {hex}\n"));
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    std::fs::write(dir.join("hello.mf"), out).unwrap();
    zip_dir(dir)
}

async fn eventually<T>(what: &str, mut probe: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(v) = probe().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn indicators_are_listed_read_notified_and_dropped_with_the_instance() {
    let metrics = StaticMetrics::new(&[]);
    let source = Arc::new(metrics.clone());
    let h = Harness::with_services(
        move |b| {
            b.metrics_source(source)
                .performance(
                    vnfm::lcm::PmOptions {
                        threshold_period: Duration::from_secs(1),
                        max_reports: 10,
                    },
                    Duration::from_millis(100),
                )
                .deliver_notifications(DelivererConfig {
                    poll_interval: Duration::from_millis(100),
                    ..DelivererConfig::new("indicator-api")
                })
        },
        |_| {},
    )
    .await;
    let (base, posts) = receiver().await;

    let v = h.call(Method::GET, "/vnfind/v1/api_versions", None).await;
    assert_eq!(v.json()["apiVersions"][0]["version"], "1.2.0");
    let v = h.call(Method::GET, "/vnfind/api_versions", None).await;
    assert_eq!(v.json()["uriPrefix"], "/vnfind");

    let dir = tempfile::tempdir().unwrap();
    let (_, pkg) = h.onboard(package_with_indicator(dir.path())).await;
    assert_eq!(pkg["onboardingState"], "ONBOARDED", "{pkg:#}");
    let vnf = h.create_instance().await;
    h.call(Method::GET, &format!("/vnfind/v1/indicators/{vnf}"), None)
        .await
        .json()
        .as_array()
        .filter(|a| a.is_empty())
        .expect("no values before instantiation");
    h.call(Method::GET, "/vnfind/v1/indicators/ghost", None)
        .await
        .problem(404);

    let sub = h
        .call(
            Method::POST,
            "/vnfind/v1/subscriptions",
            Some(json!({"filter": {"indicatorIds": ["session_load"]},
                        "callbackUri": format!("{base}/ind")})),
        )
        .await;
    assert_eq!(sub.status, StatusCode::CREATED, "{:?}", sub.json());
    let sub_id = sub.json()["id"].as_str().unwrap().to_owned();
    // The same filter and callback again: 303 See Other to the existing one.
    let again = h
        .call(
            Method::POST,
            "/vnfind/v1/subscriptions",
            Some(json!({"filter": {"indicatorIds": ["session_load"]},
                        "callbackUri": format!("{base}/ind")})),
        )
        .await;
    assert_eq!(again.status, StatusCode::SEE_OTHER);
    assert!(
        again
            .header("location")
            .is_some_and(|l| l.ends_with(&format!("/vnfind/v1/subscriptions/{sub_id}")))
    );

    metrics.set(Some(7.0));
    let occ = h
        .task(
            &vnf,
            "instantiate",
            json!({"flavourId": "simple",
                   "vimConnectionInfo": {"vim1": {"vimType": "TEST.NOOP.V_1"}}}),
        )
        .await;
    assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");
    let inst = h
        .call(
            Method::GET,
            &format!("/vnflcm/v2/vnf_instances/{vnf}"),
            None,
        )
        .await
        .json();
    let link = inst["_links"]["indicators"]["href"].as_str().unwrap();
    assert!(
        link.ends_with(&format!("/vnfind/v1/indicators/{vnf}")),
        "{link}"
    );

    let one = format!("/vnfind/v1/indicators/{vnf}/session_load");
    let value = eventually("the collector's value", async || {
        let r = h.call(Method::GET, &one, None).await;
        (r.status == StatusCode::OK).then(|| r.json())
    })
    .await;
    assert_eq!(value["value"], json!(7.0));
    assert_eq!(value["name"], "Session load");
    assert_eq!(value["vnfInstanceId"], vnf.as_str());
    assert!(
        value["_links"]["self"]["href"]
            .as_str()
            .unwrap()
            .starts_with("http"),
        "links are absolute: {value}"
    );
    let all = h
        .call(Method::GET, "/vnfind/v1/indicators", None)
        .await
        .json();
    assert_eq!(all.as_array().map(Vec::len), Some(1), "{all}");
    let filtered = h
        .call(
            Method::GET,
            "/vnfind/v1/indicators?filter=(eq,id,other)",
            None,
        )
        .await
        .json();
    assert_eq!(filtered, json!([]));
    h.call(
        Method::GET,
        "/vnfind/v1/indicators?filter=(eq,nope,1)",
        None,
    )
    .await
    .problem(400);

    let note = eventually("the value change notification", async || {
        posts.lock().unwrap().first().cloned()
    })
    .await;
    assert_eq!(
        note["notificationType"],
        "VnfIndicatorValueChangeNotification"
    );
    assert_eq!(note["subscriptionId"], sub_id.as_str());
    assert_eq!(note["vnfIndicatorId"], "session_load");
    assert_eq!(note["value"], json!(7.0));

    // A new value is a new notification; the same value again is none.
    metrics.set(Some(9.0));
    eventually("the second notification", async || {
        (posts.lock().unwrap().len() >= 2).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(posts.lock().unwrap().len(), 2);

    // A value set through the API (an EM's), and what is refused.
    let push = format!("/vnfm/v1/indicators/{vnf}/session_load");
    let r = h
        .call(Method::PUT, &push, Some(json!({"value": {"sessions": 11}})))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.json());
    assert_eq!(r.json()["value"], json!({"sessions": 11}));
    let r = h
        .call(
            Method::PUT,
            &format!("/vnfm/v1/indicators/{vnf}/nope"),
            Some(json!({"value": 1})),
        )
        .await;
    let p = r.problem(422);
    assert!(
        p["detail"].as_str().unwrap().contains("session_load"),
        "{p}"
    );
    h.call(
        Method::PUT,
        "/vnfm/v1/indicators/ghost/session_load",
        Some(json!({"value": 1})),
    )
    .await
    .problem(404);
    let p = h
        .call(Method::PUT, &push, Some(json!({"value": null})))
        .await
        .problem(400);
    assert_eq!(p["pointer"], "/value");
    h.call(Method::PUT, &push, Some(json!({"valeu": 1})))
        .await
        .problem(400);

    let occ = h
        .task(&vnf, "terminate", json!({"terminationType": "FORCEFUL"}))
        .await;
    assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");
    eventually("the values to go", async || {
        let r = h.call(Method::GET, &one, None).await;
        (r.status == StatusCode::NOT_FOUND).then_some(())
    })
    .await;
    let p = h
        .call(Method::PUT, &push, Some(json!({"value": 1})))
        .await
        .problem(422);
    assert!(
        p["detail"].as_str().unwrap().contains("not instantiated"),
        "{p}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_prometheus_values_set_by_an_em_go_with_the_instances_termination() {
    let h = Harness::with_services(
        |b| {
            b.performance(
                vnfm::lcm::PmOptions {
                    threshold_period: Duration::from_secs(1),
                    max_reports: 10,
                },
                Duration::from_millis(100),
            )
        },
        |_| {},
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    h.onboard(package_with_indicator(dir.path())).await;
    let vnf = h.create_instance().await;
    let occ = h
        .task(
            &vnf,
            "instantiate",
            json!({"flavourId": "simple",
                   "vimConnectionInfo": {"vim1": {"vimType": "TEST.NOOP.V_1"}}}),
        )
        .await;
    assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");
    let push = format!("/vnfm/v1/indicators/{vnf}/session_load");
    let r = h.call(Method::PUT, &push, Some(json!({"value": 3}))).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.json());
    let one = format!("/vnfind/v1/indicators/{vnf}/session_load");
    // The collector runs, and leaves a value it cannot compute (no Prometheus) as set.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        h.call(Method::GET, &one, None).await.json()["value"],
        json!(3)
    );

    let occ = h
        .task(&vnf, "terminate", json!({"terminationType": "FORCEFUL"}))
        .await;
    assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");
    eventually("the value to go", async || {
        let r = h.call(Method::GET, &one, None).await;
        (r.status == StatusCode::NOT_FOUND).then_some(())
    })
    .await;
}
