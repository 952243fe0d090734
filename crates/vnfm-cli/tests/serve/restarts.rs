//! What survives a `kill -9` of the server.

use super::*;

/// Issue 29: what fault and performance management keep survives a kill -9 of the server:
/// an acknowledged alarm, FM and PM subscriptions, a PM job and a threshold read the same
/// after a restart on the same data directory, and the alarm is still the one a repeated
/// alert finds (no second alarm, no second notification row).
#[vnfm_test_env::needs(corpus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alarms_pm_jobs_thresholds_and_subscriptions_survive_a_kill_9() {
    rustls::crypto::ring::default_provider()
        .install_default()
        .ok();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let token_file = dir.path().join("am-token");
    std::fs::write(&token_file, "am-token-3f9a").unwrap();
    let args = [
        "--no-callback-check",
        "--alertmanager-token-file",
        token_file.to_str().unwrap(),
        // Nothing listens there: the collector only logs that it cannot read.
        "--prometheus-url",
        "http://127.0.0.1:9",
    ];
    let server = start_with(&data, &args, None);
    let api = Api::connect(&server.base, &data).await;
    let vnfd_id = api.onboard_corpus_package().await;
    let vnf = api.create_vnf(&vnfd_id).await;
    api.instantiate(&vnf).await;
    let (_, _, inst) = api
        .json(
            reqwest::Method::GET,
            &format!("/vnflcm/v2/vnf_instances/{vnf}"),
            None,
        )
        .await;
    let vnfc = inst["instantiatedVnfInfo"]["vnfcInfo"][0]["id"]
        .as_str()
        .expect("a VNFC")
        .to_owned();

    let alert = json!({
        "version": "4", "groupKey": "{}:{}", "truncatedAlerts": 0, "status": "firing",
        "receiver": "vnfm", "groupLabels": {}, "commonLabels": {}, "commonAnnotations": {},
        "externalURL": "http://alertmanager",
        "alerts": [{
            "status": "firing",
            "labels": {"alertname": "VnfcDown", "vnf_instance_id": vnf,
                       "vnfc_instance_id": vnfc, "perceived_severity": "major",
                       "event_type": "EQUIPMENT_ALARM", "function_type": "vnffm"},
            "annotations": {"probable_cause": "the VNFC stopped answering"},
            "startsAt": "2026-11-25T07:00:00Z", "endsAt": "0001-01-01T00:00:00Z",
            "generatorURL": "http://prometheus/graph", "fingerprint": "f1"
        }]
    });
    let post_alert = async |base: &str| {
        api.http
            .post(format!("{base}/vnffm/v1/alertmanager"))
            .bearer_auth("am-token-3f9a")
            .json(&alert)
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    };
    assert_eq!(post_alert(&server.base).await, 204);
    // `Api::req` speaks LCM's 2.0.0; FM and PM have versions of their own.
    let versioned = |api: &Api, method: reqwest::Method, path: &str, version: &str| {
        api.http
            .request(method, format!("{}{path}", api.base))
            .bearer_auth(&api.token)
            .header("Version", version)
    };
    let send = async |r: reqwest::RequestBuilder| -> (u16, Value) {
        let resp = r.send().await.unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    };
    let (status, alarms) = send(versioned(
        &api,
        reqwest::Method::GET,
        "/vnffm/v1/alarms",
        "1.2.0",
    ))
    .await;
    assert_eq!(status, 200, "{alarms}");
    let alarm_id = alarms[0]["id"].as_str().expect("an alarm").to_owned();
    let alarm_path = format!("/vnffm/v1/alarms/{alarm_id}");
    let etag = versioned(&api, reqwest::Method::GET, &alarm_path, "1.2.0")
        .send()
        .await
        .unwrap()
        .headers()["etag"]
        .to_str()
        .unwrap()
        .to_owned();
    let (status, ack) = send(
        versioned(&api, reqwest::Method::PATCH, &alarm_path, "1.2.0")
            .header("If-Match", etag)
            .header("Content-Type", "application/merge-patch+json")
            .body(r#"{"ackState":"ACKNOWLEDGED"}"#),
    )
    .await;
    assert_eq!(status, 200, "{ack}");
    let (status, fm_sub) = send(
        versioned(
            &api,
            reqwest::Method::POST,
            "/vnffm/v1/subscriptions",
            "1.2.0",
        )
        .json(&json!({"callbackUri": "http://127.0.0.1:9/fm",
                          "filter": {"notificationTypes": ["AlarmNotification"]}})),
    )
    .await;
    assert_eq!(status, 201, "{fm_sub}");
    let mut created = Vec::new();
    for (path, body) in [
        (
            "/vnfpm/v2/pm_jobs",
            json!({"objectType": "Vnf", "objectInstanceIds": [vnf],
                   "criteria": {"performanceMetric": ["VCpuUsageMeanVnf"],
                                "collectionPeriod": 60, "reportingPeriod": 300},
                   "callbackUri": "http://127.0.0.1:9/job"}),
        ),
        (
            "/vnfpm/v2/thresholds",
            json!({"objectType": "Vnf", "objectInstanceId": vnf,
                   "criteria": {"performanceMetric": "VCpuUsageMeanVnf",
                                "thresholdType": "SIMPLE",
                                "simpleThresholdDetails": {"thresholdValue": 80,
                                                           "hysteresis": 5}},
                   "callbackUri": "http://127.0.0.1:9/threshold"}),
        ),
        (
            "/vnfpm/v2/subscriptions",
            json!({"callbackUri": "http://127.0.0.1:9/pm"}),
        ),
    ] {
        let (status, made) =
            send(versioned(&api, reqwest::Method::POST, path, "2.1.0").json(&body)).await;
        assert_eq!(status, 201, "{path}: {made}");
        created.push(format!("{path}/{}", made["id"].as_str().unwrap()));
    }
    let read_all = async |api: &Api| -> Vec<Value> {
        let mut out = Vec::new();
        let (_, alarm) = send(versioned(api, reqwest::Method::GET, &alarm_path, "1.2.0")).await;
        out.push(alarm);
        let fm_path = format!("/vnffm/v1/subscriptions/{}", fm_sub["id"].as_str().unwrap());
        out.push(
            send(versioned(api, reqwest::Method::GET, &fm_path, "1.2.0"))
                .await
                .1,
        );
        for path in &created {
            out.push(
                send(versioned(api, reqwest::Method::GET, path, "2.1.0"))
                    .await
                    .1,
            );
        }
        out
    };
    let before = read_all(&api).await;
    assert_eq!(before[0]["ackState"], "ACKNOWLEDGED", "{:#}", before[0]);

    // kill -9, then a restart on the same data directory.
    let old_base = server.base.clone();
    let mut server = server;
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    drop(server);
    let server = start_with(&data, &args, None);
    let api = Api::connect(&server.base, &data).await;
    let after = read_all(&api).await;
    // The links name the restarted server's port; everything else reads the same.
    let before = serde_json::to_string(&before)
        .unwrap()
        .replace(&old_base, &server.base);
    assert_eq!(serde_json::to_string(&after).unwrap(), before);

    // The same alert again finds the alarm it raised before the kill.
    assert_eq!(post_alert(&server.base).await, 204);
    let (_, alarms) = send(versioned(
        &api,
        reqwest::Method::GET,
        "/vnffm/v1/alarms",
        "1.2.0",
    ))
    .await;
    assert_eq!(alarms.as_array().map(Vec::len), Some(1), "{alarms:#}");
    assert_eq!(alarms[0]["id"], alarm_id.as_str());
}
