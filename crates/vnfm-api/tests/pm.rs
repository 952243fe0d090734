//! VNF performance management over the API (`/vnfpm/v2`), with a scripted metrics source:
//! PM jobs and thresholds are checked, listed with SOL013 filters, read with an `ETag`,
//! modified under `If-Match` and deleted; the collector's reports are readable and announced
//! to the job's callback and to PM subscriptions, over HTTP on loopback, by the notification
//! deliverer; a threshold crossed is notified to its own callback. The same end to end on a
//! real Prometheus is `pm_prometheus.rs`.

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
use support::{HELLO, Harness, zip_dir};
use vnfm_driver_api::metrics::StaticMetrics;
use vnfm_lcm::DelivererConfig;
use vnfm_types::{PmObjectType, Threshold};

pub(crate) type Posts = Arc<Mutex<Vec<(String, Value)>>>;

async fn record(State(posts): State<Posts>, uri: axum::http::Uri, body: Bytes) -> StatusCode {
    posts.lock().unwrap().push((
        uri.path().to_owned(),
        serde_json::from_slice(&body).unwrap_or(Value::Null),
    ));
    StatusCode::NO_CONTENT
}

/// A notification receiver on 127.0.0.1: its base URL and what it received (path, body).
pub(crate) async fn receiver() -> (String, Posts) {
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

pub(crate) async fn eventually<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(v) = probe() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn harness(metrics: &StaticMetrics) -> Harness {
    let source = Arc::new(metrics.clone());
    Harness::with_services(
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
                    ..DelivererConfig::new("pm-api")
                })
        },
        |_| {},
    )
    .await
}

fn metrics() -> StaticMetrics {
    StaticMetrics::new(&[
        ("VCpuUsageMeanVnf", PmObjectType::Vnf),
        ("VMemoryUsageMeanVnf", PmObjectType::Vnf),
        ("VCpuUsageMeanVnf", PmObjectType::Vnfc),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pm_jobs_and_thresholds_are_checked_served_and_notified() {
    let metrics = metrics();
    let h = harness(&metrics).await;
    let (base, posts) = receiver().await;

    // API versions, and the Version header a v2 API needs.
    let v = h.call(Method::GET, "/vnfpm/v2/api_versions", None).await;
    assert_eq!(v.status, StatusCode::OK);
    assert_eq!(v.json()["apiVersions"][0]["version"], "2.1.0");
    let auth = format!("Bearer {}", h.token);
    let r = h
        .raw(
            Method::GET,
            "/vnfpm/v2/pm_jobs",
            &[("authorization", &auth)],
            vec![],
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = h
        .raw(
            Method::GET,
            "/vnfpm/v2/pm_jobs",
            &[("version", "2.1.0")],
            vec![],
        )
        .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);

    h.onboard(zip_dir(Path::new(HELLO))).await;
    let vnf = h.create_instance().await;
    let job = |metric: &str, instance: &str| {
        json!({"objectType": "Vnf", "objectInstanceIds": [instance],
               "criteria": {"performanceMetric": [metric],
                            "collectionPeriod": 1, "reportingPeriod": 2},
               "callbackUri": format!("{base}/job")})
    };

    // Bad requests: the pointer names the fault; an unknown instance is 422.
    let r = h
        .call(
            Method::POST,
            "/vnfpm/v2/pm_jobs",
            Some(job("VCpuUsage", &vnf)),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.json()["pointer"], "/criteria/performanceMetric/0");
    let mut bad = job("VCpuUsageMeanVnf", &vnf);
    bad["criteria"]["reportingPeriod"] = json!(3);
    bad["criteria"]["collectionPeriod"] = json!(2);
    let r = h.call(Method::POST, "/vnfpm/v2/pm_jobs", Some(bad)).await;
    assert_eq!(r.json()["pointer"], "/criteria/reportingPeriod");
    let r = h
        .call(
            Method::POST,
            "/vnfpm/v2/pm_jobs",
            Some(job("VCpuUsageMeanVnf", "nope")),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.json());

    // A PM subscription (v2.6.1 shape) that wants reports of this instance.
    let r = h
        .call(
            Method::POST,
            "/vnfpm/v2/subscriptions",
            Some(json!({"callbackUri": format!("{base}/sub"),
                        "filter": {"vnfInstanceSubscriptionFilter": {"vnfInstanceIds": [vnf]},
                                   "notificationTypes": ["PerformanceInformationAvailableNotification"]}})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json());
    let sub = r.json()["id"].as_str().unwrap().to_owned();

    // The job: created, read with an ETag, listed with a filter.
    metrics.set(Some(37.5));
    let r = h
        .call(
            Method::POST,
            "/vnfpm/v2/pm_jobs",
            Some(job("VCpuUsageMeanVnf", &vnf)),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json());
    let created = r.json();
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(
        r.header("location")
            .unwrap()
            .ends_with(&format!("/vnfpm/v2/pm_jobs/{id}"))
    );
    assert_eq!(created["callbackUri"], format!("{base}/job"));
    let r = h
        .call(Method::GET, &format!("/vnfpm/v2/pm_jobs/{id}"), None)
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.header("etag").is_some());
    let listed = h
        .call(
            Method::GET,
            "/vnfpm/v2/pm_jobs?filter=(eq,objectType,Vnf)",
            None,
        )
        .await
        .json();
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    let none = h
        .call(
            Method::GET,
            "/vnfpm/v2/pm_jobs?filter=(eq,objectType,Vnfc)",
            None,
        )
        .await
        .json();
    assert_eq!(none, json!([]));

    // The collector reports, the deliverer tells the job's callback and the subscription.
    let to_job = eventually(
        "the job's PerformanceInformationAvailableNotification",
        || {
            posts
                .lock()
                .unwrap()
                .iter()
                .find(|(p, _)| p == "/job")
                .map(|(_, b)| b.clone())
        },
    )
    .await;
    assert_eq!(
        to_job["notificationType"],
        "PerformanceInformationAvailableNotification"
    );
    assert_eq!(to_job["pmJobId"], id.as_str());
    assert_eq!(to_job["objectInstanceId"], vnf.as_str());
    assert!(to_job.get("subscriptionId").is_none(), "{to_job}");
    let to_sub = eventually("the subscription's notification", || {
        posts
            .lock()
            .unwrap()
            .iter()
            .find(|(p, _)| p == "/sub")
            .map(|(_, b)| b.clone())
    })
    .await;
    assert_eq!(to_sub["subscriptionId"], sub.as_str());
    let href = to_job["_links"]["performanceReport"]["href"]
        .as_str()
        .unwrap();
    let path = &href[href.find("/vnfpm/").unwrap()..];
    let report = h.call(Method::GET, path, None).await;
    assert_eq!(report.status, StatusCode::OK, "{path}");
    let entry = &report.json()["entries"][0];
    assert_eq!(entry["performanceMetric"], "VCpuUsageMeanVnf");
    assert_eq!(entry["objectInstanceId"], vnf.as_str());
    assert_eq!(entry["performanceValues"][0]["value"], 37.5);
    assert_eq!(entry["performanceValues"].as_array().unwrap().len(), 2);
    let r = h
        .call(
            Method::GET,
            &format!("/vnfpm/v2/pm_jobs/{id}/reports/nope"),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);

    // PATCH under If-Match: the current ETag works, a stale one is 412.
    let auth = format!("Bearer {}", h.token);
    let patch = |tag: String| {
        let auth = auth.clone();
        let id = id.clone();
        let base = base.clone();
        let h = &h;
        async move {
            h.raw(
                Method::PATCH,
                &format!("/vnfpm/v2/pm_jobs/{id}"),
                &[
                    ("authorization", &auth),
                    ("version", "2.1.0"),
                    ("content-type", "application/merge-patch+json"),
                    ("if-match", &tag),
                ],
                serde_json::to_vec(&json!({"callbackUri": format!("{base}/job2")})).unwrap(),
            )
            .await
        }
    };
    // The collector writes the job with each report: retry until no report came between
    // the GET and the PATCH.
    let mut used = None;
    for _ in 0..20 {
        let etag = h
            .call(Method::GET, &format!("/vnfpm/v2/pm_jobs/{id}"), None)
            .await
            .header("etag")
            .unwrap()
            .to_owned();
        let r = patch(etag.clone()).await;
        if r.status == StatusCode::PRECONDITION_FAILED {
            continue;
        }
        assert_eq!(
            r.status,
            StatusCode::OK,
            "{}",
            String::from_utf8_lossy(&r.body)
        );
        assert_eq!(r.json(), json!({"callbackUri": format!("{base}/job2")}));
        used = Some(etag);
        break;
    }
    let r = patch(used.expect("a PATCH with the current ETag succeeded")).await;
    assert_eq!(r.status, StatusCode::PRECONDITION_FAILED);
    let after = h
        .call(Method::GET, &format!("/vnfpm/v2/pm_jobs/{id}"), None)
        .await
        .json();
    assert_eq!(after["callbackUri"], format!("{base}/job2"));

    // A threshold: crossed UP when the value goes above 50 + 5.
    metrics.set(Some(40.0));
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
    let listed = h
        .call(Method::GET, "/vnfpm/v2/thresholds", None)
        .await
        .json();
    assert_eq!(listed[0]["id"], th.as_str());
    // Evaluated below first (no notification), then above.
    let (record, _) = h
        .store
        .pm::<Threshold>()
        .get_pm(&th)
        .await
        .unwrap()
        .unwrap();
    let seen_below = || {
        let store = h.store.clone();
        let th = th.clone();
        async move {
            let (r, _) = store.pm::<Threshold>().get_pm(&th).await.unwrap().unwrap();
            r.state.unwrap_or_default().contains("BELOW")
        }
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !seen_below().await {
        assert!(
            Instant::now() < deadline,
            "the threshold was never evaluated: {record:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    metrics.set(Some(80.0));
    let crossed = eventually("the ThresholdCrossedNotification", || {
        posts
            .lock()
            .unwrap()
            .iter()
            .find(|(p, _)| p == "/threshold")
            .map(|(_, b)| b.clone())
    })
    .await;
    assert_eq!(crossed["notificationType"], "ThresholdCrossedNotification");
    assert_eq!(crossed["crossingDirection"], "UP");
    assert_eq!(crossed["thresholdId"], th.as_str());
    assert_eq!(crossed["performanceValue"], 80.0);

    // Deleted: 204, then 404.
    for path in [
        format!("/vnfpm/v2/pm_jobs/{id}"),
        format!("/vnfpm/v2/thresholds/{th}"),
    ] {
        assert_eq!(
            h.call(Method::DELETE, &path, None).await.status,
            StatusCode::NO_CONTENT
        );
        assert_eq!(
            h.call(Method::GET, &path, None).await.status,
            StatusCode::NOT_FOUND
        );
    }
    let r = h
        .call(
            Method::DELETE,
            &format!("/vnfpm/v2/subscriptions/{sub}"),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
}

/// `/vnfpm/v1` (SOL003 v2.6.1): jobs and thresholds of VNF instances without a callback,
/// whose notifications go to PM subscriptions only; each version links to its own resources.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v1_jobs_and_thresholds_have_no_callback_and_notify_subscriptions() {
    let metrics = metrics();
    let h = harness(&metrics).await;
    let (base, posts) = receiver().await;
    let v = h.call(Method::GET, "/vnfpm/v1/api_versions", None).await;
    assert_eq!(v.json()["apiVersions"][0]["version"], "1.2.0");
    let all = h
        .call(Method::GET, "/vnfpm/api_versions", None)
        .await
        .json();
    assert_eq!(all["apiVersions"].as_array().unwrap().len(), 2, "{all}");

    h.onboard(zip_dir(Path::new(HELLO))).await;
    let vnf = h.create_instance().await;
    let criteria = json!({"performanceMetric": ["VCpuUsageMeanVnf"],
                          "collectionPeriod": 1, "reportingPeriod": 2});

    // v2 needs the callback v1 does not have.
    let r = h
        .call(
            Method::POST,
            "/vnfpm/v2/pm_jobs",
            Some(json!({"objectType": "Vnf", "objectInstanceIds": [vnf], "criteria": criteria})),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.json()["pointer"], "/callbackUri");

    let r = h
        .call(
            Method::POST,
            "/vnfpm/v1/subscriptions",
            Some(json!({"callbackUri": format!("{base}/v1sub")})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json());
    let sub = r.json();
    assert!(
        sub["_links"]["self"]["href"]
            .as_str()
            .unwrap()
            .contains("/vnfpm/v1/subscriptions/"),
        "{sub}"
    );
    // The same callback and filter again: 303 See Other to the existing one.
    let again = h
        .call(
            Method::POST,
            "/vnfpm/v1/subscriptions",
            Some(json!({"callbackUri": format!("{base}/v1sub")})),
        )
        .await;
    assert_eq!(again.status, StatusCode::SEE_OTHER);
    assert!(again.header("location").unwrap().ends_with(&format!(
        "/vnfpm/v1/subscriptions/{}",
        sub["id"].as_str().unwrap()
    )));

    metrics.set(Some(12.0));
    let r = h
        .call(
            Method::POST,
            "/vnfpm/v1/pm_jobs",
            Some(json!({"objectInstanceIds": [vnf], "criteria": criteria})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json());
    let job = r.json();
    let id = job["id"].as_str().unwrap().to_owned();
    assert!(job.get("callbackUri").is_none(), "{job}");
    assert_eq!(job["objectType"], "Vnf");
    assert!(
        r.header("location")
            .unwrap()
            .ends_with(&format!("/vnfpm/v1/pm_jobs/{id}"))
    );
    assert!(
        job["_links"]["objects"][0]["href"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/vnflcm/v1/vnf_instances/{vnf}")),
        "{job}"
    );
    // The same job through v2 links into v2.
    let v2 = h
        .call(Method::GET, &format!("/vnfpm/v2/pm_jobs/{id}"), None)
        .await
        .json();
    assert!(
        v2["_links"]["self"]["href"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/vnfpm/v2/pm_jobs/{id}")),
        "{v2}"
    );
    // v2.6.1 has no PATCH of a job.
    let r = h
        .call(
            Method::PATCH,
            &format!("/vnfpm/v1/pm_jobs/{id}"),
            Some(json!({"callbackUri": format!("{base}/x")})),
        )
        .await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);

    // The report goes to the v1 subscription, with v1 links; nothing else is sent.
    let note = eventually("the v1 subscription's notification", || {
        posts
            .lock()
            .unwrap()
            .iter()
            .find(|(p, _)| p == "/v1sub")
            .map(|(_, b)| b.clone())
    })
    .await;
    assert_eq!(note["subscriptionId"], sub["id"]);
    assert_eq!(note["pmJobId"], id.as_str());
    let pm_job = note["_links"]["pmJob"]["href"].as_str().unwrap();
    assert!(pm_job.contains("/vnfpm/v1/pm_jobs/"), "{note}");
    let report = note["_links"]["performanceReport"]["href"]
        .as_str()
        .unwrap();
    let path = &report[report.find("/vnfpm/").unwrap()..];
    assert!(path.starts_with("/vnfpm/v1/"), "{path}");
    let r = h.call(Method::GET, path, None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(posts.lock().unwrap().iter().all(|(p, _)| p == "/v1sub"));
    // A list leaves the reports out unless asked for them (SOL003 clause 6.4.2.3.2).
    let listed = h.call(Method::GET, "/vnfpm/v1/pm_jobs", None).await.json();
    assert!(listed[0].get("reports").is_none(), "{listed}");
    // A selector keeps what a PmJob cannot do without.
    let selected = h
        .call(Method::GET, "/vnfpm/v1/pm_jobs?fields=reports", None)
        .await
        .json();
    assert!(selected[0]["objectInstanceIds"].is_array(), "{selected}");
    assert!(selected[0]["criteria"].is_object(), "{selected}");
    let all = h
        .call(Method::GET, "/vnfpm/v2/pm_jobs?all_fields", None)
        .await
        .json();
    assert!(
        all[0]["reports"].as_array().is_some_and(|r| !r.is_empty()),
        "{all}"
    );

    // A threshold without callback, read, listed and deleted through v1.
    let r = h
        .call(
            Method::POST,
            "/vnfpm/v1/thresholds",
            Some(json!({"objectInstanceId": vnf,
                        "criteria": {"performanceMetric": "VCpuUsageMeanVnf",
                                     "thresholdType": "SIMPLE",
                                     "simpleThresholdDetails": {"thresholdValue": 50,
                                                                "hysteresis": 5}}})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json());
    let th = r.json()["id"].as_str().unwrap().to_owned();
    assert!(r.json().get("callbackUri").is_none());
    let listed = h
        .call(Method::GET, "/vnfpm/v1/thresholds", None)
        .await
        .json();
    assert_eq!(listed[0]["id"], th.as_str());
    for path in [
        format!("/vnfpm/v1/thresholds/{th}"),
        format!("/vnfpm/v1/pm_jobs/{id}"),
    ] {
        let r = h.call(Method::DELETE, &path, None).await;
        assert_eq!(r.status, StatusCode::NO_CONTENT, "{path}");
    }
}

/// A threshold created with an `Idempotency-Key` is answered again as it was first answered
/// (body, `Location`, `ETag`), also after a `PATCH` changed it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyed_threshold_creation_is_answered_again_as_first_answered() {
    let metrics = metrics();
    let h = harness(&metrics).await;
    let (base, _posts) = receiver().await;
    h.onboard(zip_dir(Path::new(HELLO))).await;
    let vnf = h.create_instance().await;
    let auth = format!("Bearer {}", h.token);
    let body = json!({"objectType": "Vnf", "objectInstanceId": vnf,
                      "criteria": {"performanceMetric": "VCpuUsageMeanVnf",
                                   "thresholdType": "SIMPLE",
                                   "simpleThresholdDetails": {"thresholdValue": 50,
                                                              "hysteresis": 5}},
                      "callbackUri": format!("{base}/threshold")});
    let headers = [
        ("authorization", auth.as_str()),
        ("version", "2.1.0"),
        ("content-type", "application/json"),
        ("idempotency-key", "\"k-threshold\""),
    ];
    let create = || {
        h.raw(
            Method::POST,
            "/vnfpm/v2/thresholds",
            &headers,
            serde_json::to_vec(&body).unwrap(),
        )
    };
    let first = create().await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.json());
    let id = first.json()["id"].as_str().unwrap().to_owned();
    let r = h
        .raw(
            Method::PATCH,
            &format!("/vnfpm/v2/thresholds/{id}"),
            &[
                ("authorization", &auth),
                ("version", "2.1.0"),
                ("content-type", "application/merge-patch+json"),
            ],
            serde_json::to_vec(&json!({"callbackUri": format!("{base}/threshold2")})).unwrap(),
        )
        .await;
    assert_eq!(
        r.status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    let replay = create().await;
    assert_eq!(replay.status, StatusCode::CREATED);
    assert_eq!(
        replay.body, first.body,
        "the first body, not the threshold now"
    );
    assert_eq!(replay.json()["callbackUri"], format!("{base}/threshold"));
    assert_eq!(replay.header("location"), first.header("location"));
    assert!(first.header("etag").is_some());
    assert_eq!(replay.header("etag"), first.header("etag"));
    let thresholds = h
        .call(Method::GET, "/vnfpm/v2/thresholds", None)
        .await
        .json();
    assert_eq!(thresholds.as_array().unwrap().len(), 1, "{thresholds}");
}
