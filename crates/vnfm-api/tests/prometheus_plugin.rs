//! OpenStack Tacker's Prometheus-plugin endpoints, with the payloads of Tacker's functional
//! tests (`sol_kubernetes_v2/paramgen.py`), on the test VIM: `POST /alert` raises an alarm
//! on the VNFC whose resource its `pod` label names (with `rootCauseFaultyResource`) and
//! clears it; `POST /alert/auto_scaling` scales out and, at once, back in;
//! `POST /alert/auto_healing` answers 404 when automatic healing is off; `POST /pm_event`
//! makes a PM job's report and `POST /pm_threshold` crosses a threshold, each notified. Every
//! endpoint answers 204 even for what it cannot use, as Tacker's, and needs credentials.

use crate::support;

use std::path::Path;
use std::sync::Arc;

use axum::http::{Method, StatusCode};
use serde_json::{Value, json};
use support::{HELLO, Harness, zip_dir};
use vnfm_driver_api::metrics::StaticMetrics;
use vnfm_lcm::DelivererConfig;
use vnfm_types::PmObjectType;

use crate::pm::{eventually, receiver};

/// Tacker's alert payload around one alert's labels and annotations.
fn payload(status: &str, labels: Value, annotations: Value) -> Value {
    json!({
        "receiver": "receiver", "status": status,
        "alerts": [{
            "status": status, "labels": labels, "annotations": annotations,
            "startsAt": "2022-06-21T23:47:36.453Z",
            "endsAt": if status == "resolved" { "2022-06-22T23:47:36.453Z" } else { "0001-01-01T00:00:00Z" },
            "generatorURL": "http://controller147:9090/graph?g0.expr=up",
            "fingerprint": "5ef77f1f8a3ecb8d"
        }],
        "groupLabels": {}, "commonLabels": {"alertname": "NodeInstanceDown", "job": "node"},
        "commonAnnotations": {"description": "sample"},
        "externalURL": "http://controller147:9093", "version": "4", "groupKey": "{}:{}",
        "truncatedAlerts": 0
    })
}

async fn post(h: &Harness, path: &str, body: &Value) -> StatusCode {
    let r = h.call(Method::POST, path, Some(body.clone())).await;
    assert!(
        r.status == StatusCode::NO_CONTENT || r.status.is_client_error(),
        "{path}: {} {}",
        r.status,
        String::from_utf8_lossy(&r.body)
    );
    r.status
}

/// An instantiated hello VNF on the test VIM with both automatic switches on.
async fn instantiated(h: &Harness) -> String {
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
    vnf
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tackers_fault_and_scaling_alerts_raise_alarms_and_scale() {
    let h = Harness::with_services(|b| b.auto_heal(None), |_| {}).await;
    let vnf = instantiated(&h).await;
    let instance = h
        .call(
            Method::GET,
            &format!("/vnflcm/v2/vnf_instances/{vnf}"),
            None,
        )
        .await
        .json();
    let info = &instance["instantiatedVnfInfo"];
    let pod = info["vnfcResourceInfo"][0]["computeResource"]["resourceId"]
        .as_str()
        .unwrap()
        .to_owned();
    let vnfc = info["vnfcInfo"][0]["id"].as_str().unwrap().to_owned();

    // paramgen.alert_event_firing: the pod names the VNFC.
    let labels = json!({"receiver_type": "tacker", "function_type": "vnffm",
        "vnf_instance_id": vnf, "pod": pod, "perceived_severity": "WARNING",
        "event_type": "PROCESSING_ERROR_ALARM"});
    let annotations = json!({"fault_type": "Server Down", "probable_cause": "Process Terminated",
        "fault_details": "pid 12345"});
    let firing = payload("firing", labels.clone(), annotations.clone());
    let r = h
        .raw(
            Method::POST,
            "/alert",
            &[("content-type", "application/json")],
            serde_json::to_vec(&firing).unwrap(),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "credentials are needed");
    assert_eq!(post(&h, "/alert", &firing).await, StatusCode::NO_CONTENT);
    let alarms = h
        .call(
            Method::GET,
            &format!("/vnffm/v1/alarms?filter=(eq,managedObjectId,{vnf})"),
            None,
        )
        .await
        .json();
    assert_eq!(alarms.as_array().unwrap().len(), 1, "{alarms}");
    let alarm = &alarms[0];
    assert_eq!(alarm["vnfcInstanceIds"], json!([vnfc]));
    assert_eq!(
        alarm["rootCauseFaultyResource"]["faultyResourceType"],
        "COMPUTE"
    );
    assert_eq!(
        alarm["rootCauseFaultyResource"]["faultyResource"]["resourceId"],
        pod.as_str()
    );
    assert_eq!(alarm["perceivedSeverity"], "WARNING");
    assert_eq!(alarm["probableCause"], "Process Terminated");
    // paramgen.alert_event_resolved clears it.
    let resolved = payload("resolved", labels, annotations);
    assert_eq!(post(&h, "/alert", &resolved).await, StatusCode::NO_CONTENT);
    let id = alarm["id"].as_str().unwrap();
    let cleared = h
        .call(Method::GET, &format!("/vnffm/v1/alarms/{id}"), None)
        .await
        .json();
    assert_eq!(cleared["perceivedSeverity"], "CLEARED", "{cleared}");
    // What Tacker would not use is answered 204 too: not a payload, another function.
    let r = h
        .call(Method::POST, "/alert", Some(json!({"alerts": "none"})))
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let pm = payload("firing", json!({"function_type": "vnfpm"}), json!({}));
    assert_eq!(post(&h, "/alert", &pm).await, StatusCode::NO_CONTENT);

    // paramgen.prometheus_auto_scaling_alert: out, then at once in (no cooldown).
    let mut scale = payload(
        "firing",
        json!({"receiver_type": "tacker", "function_type": "auto_scale",
               "vnf_instance_id": vnf, "auto_scale_type": "SCALE_OUT", "aspect_id": "web_scale"}),
        json!({}),
    );
    let scales = |n: usize| {
        let h = &h;
        let vnf = vnf.clone();
        async move {
            for _ in 0..500 {
                let ops = h
                    .call(
                        Method::GET,
                        &format!("/vnflcm/v2/vnf_lcm_op_occs?filter=(eq,vnfInstanceId,{vnf});(eq,operation,SCALE);(eq,operationState,COMPLETED)"),
                        None,
                    )
                    .await
                    .json();
                if ops.as_array().unwrap().len() == n {
                    return ops;
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            panic!("{n} completed scales expected");
        }
    };
    assert_eq!(
        post(&h, "/alert/auto_scaling", &scale).await,
        StatusCode::NO_CONTENT
    );
    scales(1).await;
    scale["alerts"][0]["labels"]["auto_scale_type"] = json!("SCALE_IN");
    assert_eq!(
        post(&h, "/alert/auto_scaling", &scale).await,
        StatusCode::NO_CONTENT
    );
    let ops = scales(2).await;
    assert!(
        ops.as_array()
            .unwrap()
            .iter()
            .all(|o| o["isAutomaticInvocation"] == true),
        "{ops}"
    );

    // Automatic healing is off: Tacker's "Auto healing API is not enabled".
    let heal = payload(
        "firing",
        json!({"receiver_type": "tacker", "function_type": "auto_heal",
               "vnf_instance_id": vnf, "vnfc_info_id": vnfc}),
        json!({}),
    );
    assert_eq!(
        post(&h, "/alert/auto_healing", &heal).await,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tackers_pm_events_make_reports_and_cross_thresholds() {
    let metrics = StaticMetrics::new(&[("VCpuUsageMeanVnf", PmObjectType::Vnf)]);
    let h = Harness::with_services(
        move |b| {
            b.metrics_source(Arc::new(metrics))
                .deliver_notifications(DelivererConfig {
                    poll_interval: std::time::Duration::from_millis(100),
                    ..DelivererConfig::new("prometheus-plugin")
                })
        },
        |_| {},
    )
    .await;
    let (base, posts) = receiver().await;
    let vnf = instantiated(&h).await;
    let metric = format!("VCpuUsageMeanVnf.{vnf}");
    let v2 = |path: &str, body: Value| {
        let h = &h;
        let path = path.to_owned();
        async move {
            let auth = format!("Bearer {}", h.token);
            h.raw(
                Method::POST,
                &path,
                &[
                    ("authorization", auth.as_str()),
                    ("version", "2.1.0"),
                    ("content-type", "application/json"),
                ],
                serde_json::to_vec(&body).unwrap(),
            )
            .await
        }
    };
    // paramgen.pm_job_min, with Tacker's monitoring metadata.
    let r = v2(
        "/vnfpm/v2/pm_jobs",
        json!({"objectType": "Vnf", "objectInstanceIds": [vnf],
               "criteria": {"performanceMetric": [metric], "collectionPeriod": 5,
                            "reportingPeriod": 10},
               "callbackUri": format!("{base}/job")}),
    )
    .await;
    assert_eq!(
        r.status,
        StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    let job = r.json()["id"].as_str().unwrap().to_owned();
    // paramgen.pm_event: the value a number.
    let event = payload(
        "firing",
        json!({"receiver_type": "tacker", "function_type": "vnfpm", "job_id": job,
               "metric": metric, "object_instance_id": vnf}),
        json!({"value": 99}),
    );
    assert_eq!(post(&h, "/pm_event", &event).await, StatusCode::NO_CONTENT);
    let n = eventually("the report's notification", || {
        posts
            .lock()
            .unwrap()
            .iter()
            .find(|(p, _)| p == "/job")
            .map(|(_, n)| n.clone())
    })
    .await;
    assert_eq!(
        n["notificationType"],
        "PerformanceInformationAvailableNotification"
    );
    let href = n["_links"]["performanceReport"]["href"].as_str().unwrap();
    let path = &href[href.find("/vnfpm").unwrap()..];
    let auth = format!("Bearer {}", h.token);
    let report = h
        .raw(
            Method::GET,
            path,
            &[("authorization", auth.as_str()), ("version", "2.1.0")],
            vec![],
        )
        .await
        .json();
    assert_eq!(report["entries"][0]["performanceValues"][0]["value"], 99.0);
    assert_eq!(report["entries"][0]["performanceMetric"], metric.as_str());

    // paramgen.pm_threshold_min and paramgen.pm_threshold (sub_object_instance_id null).
    let r = v2(
        "/vnfpm/v2/thresholds",
        json!({"objectType": "Vnf", "objectInstanceId": vnf, "subObjectInstanceIds": [],
               "criteria": {"performanceMetric": metric, "thresholdType": "SIMPLE",
                            "simpleThresholdDetails": {"thresholdValue": 55, "hysteresis": 30}},
               "callbackUri": format!("{base}/threshold")}),
    )
    .await;
    assert_eq!(
        r.status,
        StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    let threshold = r.json()["id"].as_str().unwrap().to_owned();
    let crossing = payload(
        "firing",
        json!({"receiver_type": "tacker", "function_type": "vnfpm_threshold",
               "threshold_id": threshold, "metric": metric, "object_instance_id": vnf,
               "sub_object_instance_id": null}),
        json!({"value": 99}),
    );
    assert_eq!(
        post(&h, "/pm_threshold", &crossing).await,
        StatusCode::NO_CONTENT
    );
    let n = eventually("the crossing's notification", || {
        posts
            .lock()
            .unwrap()
            .iter()
            .find(|(p, _)| p == "/threshold")
            .map(|(_, n)| n.clone())
    })
    .await;
    assert_eq!(n["notificationType"], "ThresholdCrossedNotification");
    assert_eq!(n["crossingDirection"], "UP");
    assert_eq!(n["thresholdId"], threshold.as_str());
    // An unknown job is Tacker's 204 too.
    let mut unknown = event.clone();
    unknown["alerts"][0]["labels"]["job_id"] = json!("nope");
    assert_eq!(
        post(&h, "/pm_event", &unknown).await,
        StatusCode::NO_CONTENT
    );
}
