//! VNF fault management through the REST API: Alertmanager webhooks raise and clear alarms,
//! alarms are listed with SOL013 filters, read with an ETag and acknowledged with If-Match,
//! FM subscriptions are created, found as duplicates and deleted, and everything is still
//! there after a restart on the same data directory.

use crate::support;

use std::path::PathBuf;

use axum::http::{Method, StatusCode};
use serde_json::{Value, json};
use support::Harness;

const TOKEN: &str = "am-token-0123456789";

fn alert(status: &str, labels: Value) -> Value {
    json!({
        "status": status,
        "labels": labels,
        "annotations": {"summary": "CPU above 90%"},
        "startsAt": "2030-01-01T00:00:00Z",
        "endsAt": if status == "resolved" { "2030-01-01T00:05:00Z" } else { "0001-01-01T00:00:00Z" },
        "generatorURL": "http://prometheus/graph",
        "fingerprint": "f1"
    })
}

fn webhook(alerts: Vec<Value>) -> Value {
    json!({
        "version": "4", "groupKey": "{}:{}", "truncatedAlerts": 0, "status": "firing",
        "receiver": "vnfm", "groupLabels": {}, "commonLabels": {}, "commonAnnotations": {},
        "externalURL": "http://alertmanager", "alerts": alerts
    })
}

fn cpu_labels() -> Value {
    json!({"alertname": "HighCpu", "vnf_instance_id": "i1", "vnfc_instance_id": "c1",
           "perceived_severity": "major", "event_type": "QOS_ALARM", "function_type": "vnffm"})
}

async fn post_webhook(h: &Harness, auth: Option<&str>, body: &Value) -> support::Reply {
    let mut headers = vec![("content-type", "application/json")];
    let bearer;
    if let Some(a) = auth {
        bearer = format!("Bearer {a}");
        headers.push(("authorization", bearer.as_str()));
    }
    h.raw(
        Method::POST,
        "/vnffm/v1/alertmanager",
        &headers,
        serde_json::to_vec(body).unwrap(),
    )
    .await
}

async fn harness(data: Option<PathBuf>) -> Harness {
    Harness::with(|o| {
        o.alertmanager_token = Some(vnfm_types::SecretString::new(TOKEN));
        if let Some(d) = data {
            o.data_dir = d;
        }
    })
    .await
}

#[tokio::test]
async fn webhook_raises_acknowledges_clears_and_survives_restart() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let h = harness(Some(data.clone())).await;

    // Receiver authentication: none or a wrong token is 401; the token or the server's
    // credentials are accepted.
    let body = webhook(vec![alert("firing", cpu_labels())]);
    post_webhook(&h, None, &body).await.problem(401);
    post_webhook(&h, Some("wrong"), &body).await.problem(401);
    let r = post_webhook(&h, Some(TOKEN), &body).await;
    assert_eq!(
        r.status,
        StatusCode::NO_CONTENT,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    // Alertmanager repeats a firing alert: still one alarm.
    let token = h.token.clone();
    assert_eq!(
        post_webhook(&h, Some(&token), &body).await.status,
        StatusCode::NO_CONTENT
    );

    let list = h.call(Method::GET, "/vnffm/v1/alarms", None).await;
    assert_eq!(list.status, StatusCode::OK);
    let alarms = list.json();
    assert_eq!(alarms.as_array().unwrap().len(), 1, "{alarms}");
    let a = &alarms[0];
    assert_eq!(a["managedObjectId"], "i1");
    assert_eq!(a["vnfcInstanceIds"], json!(["c1"]));
    assert_eq!(a["perceivedSeverity"], "MAJOR");
    assert_eq!(a["eventType"], "QOS_ALARM");
    assert_eq!(a["probableCause"], "CPU above 90%");
    assert_eq!(a["faultType"], "HighCpu");
    assert_eq!(a["ackState"], "UNACKNOWLEDGED");
    assert_eq!(a["eventTime"], "2030-01-01T00:00:00Z");
    let id = a["id"].as_str().unwrap().to_owned();
    // Links are absolute, as every link the server writes.
    let href = a["_links"]["self"]["href"].as_str().unwrap();
    assert!(href.ends_with(&format!("/vnffm/v1/alarms/{id}")), "{href}");

    // SOL013 filters.
    let some = h
        .call(
            Method::GET,
            "/vnffm/v1/alarms?filter=(eq,perceivedSeverity,MAJOR)",
            None,
        )
        .await
        .json();
    assert_eq!(some.as_array().unwrap().len(), 1);
    let none = h
        .call(
            Method::GET,
            "/vnffm/v1/alarms?filter=(eq,managedObjectId,other)",
            None,
        )
        .await
        .json();
    assert_eq!(none, json!([]));
    h.call(Method::GET, "/vnffm/v1/alarms?filter=(eq,nope,1)", None)
        .await
        .problem(400);

    // Read with an ETag; PATCH needs the current one.
    let one = h
        .call(Method::GET, &format!("/vnffm/v1/alarms/{id}"), None)
        .await;
    assert_eq!(one.status, StatusCode::OK);
    assert_eq!(one.header("etag"), Some("\"1\""));
    let ack = serde_json::to_vec(&json!({"ackState": "ACKNOWLEDGED"})).unwrap();
    let auth = format!("Bearer {}", h.token);
    let patch = |etag: &'static str| {
        let mut headers = vec![
            ("authorization", auth.as_str()),
            ("content-type", "application/merge-patch+json"),
        ];
        if !etag.is_empty() {
            headers.push(("if-match", etag));
        }
        (headers, ack.clone())
    };
    let uri = format!("/vnffm/v1/alarms/{id}");
    let (headers, b) = patch("\"7\"");
    let p = h.raw(Method::PATCH, &uri, &headers, b).await.problem(412);
    assert!(p["detail"].as_str().unwrap().contains("\"1\""), "{p}");
    let (headers, b) = patch("\"1\"");
    let r = h.raw(Method::PATCH, &uri, &headers, b).await;
    assert_eq!(
        r.status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    assert_eq!(r.json(), json!({"ackState": "ACKNOWLEDGED"}));
    assert_eq!(r.header("etag"), Some("\"2\""));
    let (headers, b) = patch("");
    h.raw(Method::PATCH, &uri, &headers, b).await.problem(409);
    let (mut headers, _) = patch("");
    headers[1] = ("content-type", "application/xml");
    h.raw(Method::PATCH, &uri, &headers, ack.clone())
        .await
        .problem(415);
    // SOL003 v3.3.1: an acknowledged alarm says when; Tacker's clients unacknowledge it
    // again (FM API 1.3.0), which removes the time.
    let acked = h.call(Method::GET, &uri, None).await.json();
    assert!(acked["alarmAcknowledgedTime"].is_string(), "{acked}");
    let (headers, _) = patch("");
    let unack = serde_json::to_vec(&json!({"ackState": "UNACKNOWLEDGED"})).unwrap();
    let r = h.raw(Method::PATCH, &uri, &headers, unack).await;
    assert_eq!(
        r.status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    let back = h.call(Method::GET, &uri, None).await.json();
    assert_eq!(back["ackState"], "UNACKNOWLEDGED");
    assert!(back.get("alarmAcknowledgedTime").is_none(), "{back}");
    let (headers, b) = patch("");
    assert_eq!(
        h.raw(Method::PATCH, &uri, &headers, b).await.status,
        StatusCode::OK
    );
    let bad = serde_json::to_vec(&json!({"ackState": "MAYBE"})).unwrap();
    let (headers, _) = patch("");
    h.raw(Method::PATCH, &uri, &headers, bad).await.problem(400);
    h.call(Method::GET, "/vnffm/v1/alarms/nope", None)
        .await
        .problem(404);

    // The EM escalates the severity (SOL002 clause 7.4.4): the alarm changes, its ETag too.
    let escalate = format!("/vnffm/v1/alarms/{id}/escalate");
    let r = h
        .call(
            Method::POST,
            &escalate,
            Some(json!({"proposedPerceivedSeverity": "CRITICAL"})),
        )
        .await;
    assert_eq!(
        r.status,
        StatusCode::NO_CONTENT,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    let one = h.call(Method::GET, &uri, None).await;
    assert_eq!(one.json()["perceivedSeverity"], "CRITICAL");
    assert!(one.json()["alarmChangedTime"].is_string());
    assert_eq!(one.header("etag"), Some("\"5\""));
    let p = h
        .call(
            Method::POST,
            &escalate,
            Some(json!({"proposedPerceivedSeverity": "CLEARED"})),
        )
        .await
        .problem(400);
    assert_eq!(p["pointer"], "/proposedPerceivedSeverity");
    h.call(
        Method::POST,
        "/vnffm/v1/alarms/nope/escalate",
        Some(json!({"proposedPerceivedSeverity": "MINOR"})),
    )
    .await
    .problem(404);
    h.call(Method::GET, &escalate, None).await.problem(405);

    // An FM subscription, and its duplicate.
    let sub = json!({"callbackUri": "http://127.0.0.1:9/fm", "filter": {"perceivedSeverities": ["CRITICAL"]}});
    let created = h
        .call(Method::POST, "/vnffm/v1/subscriptions", Some(sub.clone()))
        .await;
    assert_eq!(
        created.status,
        StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&created.body)
    );
    let sub_id = created.json()["id"].as_str().unwrap().to_owned();
    let again = h
        .call(Method::POST, "/vnffm/v1/subscriptions", Some(sub))
        .await;
    assert_eq!(again.status, StatusCode::SEE_OTHER);
    assert!(
        again
            .header("location")
            .unwrap()
            .ends_with(&format!("/vnffm/v1/subscriptions/{sub_id}"))
    );
    let bad = json!({"callbackUri": "http://127.0.0.1:9/fm", "filter": {"severity": []}});
    h.call(Method::POST, "/vnffm/v1/subscriptions", Some(bad))
        .await
        .problem(400);

    // Restart on the same data directory: the alarm and the subscription are still there.
    drop(h);
    let h = harness(Some(data)).await;
    let a = h.call(Method::GET, &uri, None).await.json();
    assert_eq!(a["ackState"], "ACKNOWLEDGED");
    let subs = h
        .call(Method::GET, "/vnffm/v1/subscriptions", None)
        .await
        .json();
    assert_eq!(subs.as_array().unwrap().len(), 1, "{subs}");
    assert_eq!(subs[0]["id"], sub_id.as_str());

    // The resolved alert clears the alarm.
    let resolved = webhook(vec![alert("resolved", cpu_labels())]);
    assert_eq!(
        post_webhook(&h, Some(TOKEN), &resolved).await.status,
        StatusCode::NO_CONTENT
    );
    let a = h.call(Method::GET, &uri, None).await.json();
    assert_eq!(a["perceivedSeverity"], "CLEARED");
    assert_eq!(a["alarmClearedTime"], "2030-01-01T00:05:00Z");
    let r = h
        .call(
            Method::DELETE,
            &format!("/vnffm/v1/subscriptions/{sub_id}"),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    h.call(
        Method::GET,
        &format!("/vnffm/v1/subscriptions/{sub_id}"),
        None,
    )
    .await
    .problem(404);
}

#[tokio::test]
async fn bad_webhooks_say_where_and_lose_no_good_alert() {
    let h = harness(None).await;
    // Not a webhook payload: the pointer names the place.
    let mut body = webhook(vec![alert("firing", cpu_labels())]);
    body["alerts"][0]["startsAt"] = json!("yesterday");
    let p = post_webhook(&h, Some(TOKEN), &body).await.problem(400);
    assert_eq!(p["pointer"], "/alerts/0/startsAt", "{p}");
    let p = post_webhook(&h, Some(TOKEN), &json!([1]))
        .await
        .problem(400);
    assert!(p["detail"].as_str().unwrap().contains("not valid"), "{p}");
    assert_eq!(
        h.call(Method::GET, "/vnffm/v1/alarms", None).await.json(),
        json!([])
    );

    // One alert names no instance: it is reported, the other one is processed.
    let body = webhook(vec![
        alert(
            "firing",
            json!({"alertname": "Lost", "function_type": "vnffm"}),
        ),
        alert("firing", cpu_labels()),
    ]);
    let p = post_webhook(&h, Some(TOKEN), &body).await.problem(400);
    assert_eq!(p["pointer"], "/alerts/0/labels", "{p}");
    assert!(
        p["detail"].as_str().unwrap().contains("1 of 2 alerts"),
        "{p}"
    );
    let alarms = h.call(Method::GET, "/vnffm/v1/alarms", None).await.json();
    assert_eq!(alarms.as_array().unwrap().len(), 1, "{alarms}");

    // Alerts of other functions (Tacker's PM and scaling alerts) are not faults: a PM value
    // for a job that does not exist is logged and answered 204; one that does not say which
    // job is refused naming the label.
    let mut pm_alert = alert(
        "firing",
        json!({"alertname": "Pm", "function_type": "vnfpm", "job_id": "nope",
               "object_instance_id": "i1", "metric": "VCpuUsageMeanVnf.i1"}),
    );
    pm_alert["annotations"]["value"] = json!("99");
    let pm = webhook(vec![pm_alert.clone()]);
    assert_eq!(
        post_webhook(&h, Some(TOKEN), &pm).await.status,
        StatusCode::NO_CONTENT
    );
    pm_alert["labels"].as_object_mut().unwrap().remove("job_id");
    let p = post_webhook(&h, Some(TOKEN), &webhook(vec![pm_alert]))
        .await
        .problem(400);
    assert!(p["detail"].as_str().unwrap().contains("job_id"), "{p}");
    let alarms = h.call(Method::GET, "/vnffm/v1/alarms", None).await.json();
    assert_eq!(alarms.as_array().unwrap().len(), 1);

    // A scaling alert that does not say what to scale is refused naming the label; one that
    // does, for an instance that does not exist, raises no alarm and is answered 204.
    let scale = |labels: Value| webhook(vec![alert("firing", labels)]);
    let p = post_webhook(
        &h,
        Some(TOKEN),
        &scale(json!({"alertname": "Busy", "function_type": "auto_scale",
                      "vnf_instance_id": "i1", "auto_scale_type": "SCALE_OUT"})),
    )
    .await
    .problem(400);
    assert_eq!(p["pointer"], "/alerts/0/labels", "{p}");
    assert!(p["detail"].as_str().unwrap().contains("aspect_id"), "{p}");
    let ok = scale(json!({"alertname": "Busy", "function_type": "auto_scale",
                          "vnf_instance_id": "i1", "auto_scale_type": "SCALE_OUT",
                          "aspect_id": "web_scale"}));
    assert_eq!(
        post_webhook(&h, Some(TOKEN), &ok).await.status,
        StatusCode::NO_CONTENT
    );
    let alarms = h.call(Method::GET, "/vnffm/v1/alarms", None).await.json();
    assert_eq!(alarms.as_array().unwrap().len(), 1);
}
