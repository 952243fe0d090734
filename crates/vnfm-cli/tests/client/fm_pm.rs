//! Fault and performance management through `vnfm`: alarms from Alertmanager, automatic healing, PM jobs.

use super::*;

const HELLO_SAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../vnfd-samples/hello-vnf");

const ALERTMANAGER_TOKEN: &str = "alertmanager-token-5d1c9e";

fn webhook(instance: &str, vnfc: &str) -> Value {
    json!({
        "version": "4", "groupKey": "{}:{}", "truncatedAlerts": 0, "status": "firing",
        "receiver": "vnfm", "groupLabels": {}, "commonLabels": {}, "commonAnnotations": {},
        "externalURL": "http://alertmanager",
        "alerts": [{
            "status": "firing",
            "labels": {"alertname": "VnfcDown", "vnf_instance_id": instance,
                       "vnfc_instance_id": vnfc, "perceived_severity": "critical",
                       "event_type": "EQUIPMENT_ALARM", "function_type": "vnffm"},
            "annotations": {"probable_cause": "the VNFC stopped answering"},
            "startsAt": "2026-11-25T07:00:00Z", "endsAt": "0001-01-01T00:00:00Z",
            "generatorURL": "http://prometheus/graph", "fingerprint": "f1"
        }]
    })
}

fn post_webhook(base: &str, body: &Value) -> u16 {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        rustls::crypto::ring::default_provider()
            .install_default()
            .ok();
        reqwest::Client::new()
            .post(format!("{base}/vnffm/v1/alertmanager"))
            .bearer_auth(ALERTMANAGER_TOKEN)
            .json(body)
            .send()
            .await
            .expect("the receiver answers")
            .status()
            .as_u16()
    })
}

#[test]
fn an_alert_heals_its_vnfc_automatically_and_the_alarm_is_listed_and_acknowledged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let token_file = dir.path().join("am-token");
    std::fs::write(&token_file, ALERTMANAGER_TOKEN).expect("write");
    let token_arg = token_file.to_str().expect("path");
    let server = Server::start_with(
        &dir.path().join("data"),
        &[
            "--auto-heal-cooldown",
            "0",
            "--alertmanager-token-file",
            token_arg,
        ],
    );
    let c = Client::new(&server);

    let pkg = c.json(&["pkg", "upload", HELLO_SAMPLE]);
    let vnfd_id = pkg["vnfdId"].as_str().expect("vnfdId").to_owned();
    let vnf = c.json(&["vnf", "create", "--vnfd-id", &vnfd_id, "--name", "auto"]);
    let id = vnf["id"].as_str().expect("id").to_owned();
    c.ok(&[
        "vnf",
        "instantiate",
        &id,
        "--flavour",
        "simple",
        "--vim-type",
        "TEST.NOOP.V_1",
        "--param",
        "isAutohealEnabled=true",
        "--wait",
    ]);
    let shown = c.json(&["vnf", "show", &id]);
    assert_eq!(
        shown["vnfConfigurableProperties"]["isAutohealEnabled"], true,
        "{shown:#}"
    );
    let vnfc = shown["instantiatedVnfInfo"]["vnfcInfo"][0]["id"]
        .as_str()
        .expect("a VNFC")
        .to_owned();
    assert_eq!(c.json(&["alarm", "list"]), json!([]));

    // The alert: an alarm, and a HEAL of that VNFC the server started by itself.
    assert_eq!(post_webhook(&c.base, &webhook(&id, &vnfc)), 204);
    let alarms = c.json(&["alarm", "list", "--vnf", &id, "--open"]);
    let alarm = &alarms.as_array().expect("a list")[0];
    assert_eq!(alarm["perceivedSeverity"], "CRITICAL", "{alarms:#}");
    assert_eq!(alarm["vnfcInstanceIds"], json!([vnfc]));
    let alarm_id = alarm["id"].as_str().expect("id").to_owned();
    let deadline = Instant::now() + Duration::from_secs(30);
    let heal = loop {
        let ops = c.json(&["op", "list", "--vnf", &id]);
        let heal = ops
            .as_array()
            .expect("a list")
            .iter()
            .find(|o| o["operation"] == "HEAL")
            .cloned();
        if let Some(h) = heal.filter(|h| h["operationState"] == "COMPLETED") {
            break h;
        }
        assert!(Instant::now() < deadline, "no completed HEAL: {ops:#}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(heal["isAutomaticInvocation"], true, "{heal:#}");
    let heal_id = heal["id"].as_str().expect("id");
    let full = c.json(&["op", "show", heal_id]);
    assert_eq!(
        full["operationParams"]["vnfcInstanceId"],
        json!([vnfc]),
        "{full:#}"
    );
    let table = c.ok(&["op", "show", heal_id]);
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("Automatic") && l.ends_with("yes")),
        "{table}"
    );

    // The client: the table, one alarm, acknowledged once.
    let table = c.ok(&["alarm", "list", "--severity", "critical"]);
    assert!(table.starts_with("ID"), "{table}");
    assert!(
        table
            .lines()
            .any(|l| l.starts_with(&alarm_id) && l.contains("CRITICAL") && l.contains(&vnfc)),
        "{table}"
    );
    assert_eq!(c.json(&["alarm", "list", "--severity", "minor"]), json!([]));
    let shown = c.ok(&["alarm", "show", &alarm_id]);
    assert!(shown.contains("the VNFC stopped answering"), "{shown}");
    let out = c.ok(&["alarm", "ack", &alarm_id]);
    assert_eq!(out.trim(), format!("alarm {alarm_id} acknowledged"));
    assert_eq!(c.json(&["alarm", "list", "--unacknowledged"]), json!([]));
    let again = c.run(&["alarm", "ack", &alarm_id]);
    assert_eq!(again.status.code(), Some(1));
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(
        err.contains("409") && err.contains("already ACKNOWLEDGED"),
        "{err}"
    );
    let unknown = c.run(&["alarm", "show", "no-such-alarm"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("404"));
}

// `vnfm pm job create|list|show|delete` against a real `vnfm serve --prometheus-url`: the job
// is checked against the PromQL catalogue (no query is needed to create it), served, and
// deleted; an unknown metric is refused with the list of known ones.

#[test]
fn pm_jobs_are_created_listed_shown_and_deleted() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Nothing listens there: the collector only logs that it cannot read.
    let server = Server::start_with(
        &dir.path().join("data"),
        &["--prometheus-url", "http://127.0.0.1:9"],
    );
    let c = Client::new(&server);
    let pkg = c.json(&["pkg", "upload", HELLO_SAMPLE]);
    let vnfd_id = pkg["vnfdId"].as_str().expect("vnfdId").to_owned();
    let vnf = c.json(&["vnf", "create", "--vnfd-id", &vnfd_id]);
    let id = vnf["id"].as_str().expect("id").to_owned();

    assert_eq!(c.json(&["pm", "job", "list"]), json!([]));
    let job = c.json(&[
        "pm",
        "job",
        "create",
        "--vnf",
        &id,
        "--metric",
        "VCpuUsageMeanVnf",
        "--collection-period",
        "60",
        "--reporting-period",
        "300",
        "--callback",
        "http://127.0.0.1:9/pm",
    ]);
    let job_id = job["id"].as_str().expect("job id").to_owned();
    assert_eq!(job["objectInstanceIds"], json!([id]));
    let table = c.ok(&["pm", "job", "list"]);
    assert!(
        table.contains(&job_id) && table.contains("VCpuUsageMeanVnf"),
        "{table}"
    );
    assert!(table.contains("60s/300s"), "{table}");
    let shown = c.ok(&["pm", "job", "show", &job_id]);
    assert!(shown.contains("http://127.0.0.1:9/pm"), "{shown}");

    let bad = c.run(&[
        "pm",
        "job",
        "create",
        "--vnf",
        &id,
        "--metric",
        "CpuLoad",
        "--callback",
        "http://127.0.0.1:9/pm",
    ]);
    assert_eq!(bad.status.code(), Some(1), "{}", text(&bad.stderr));
    let err = text(&bad.stderr);
    assert!(
        err.contains("VCpuUsageMeanVnf"),
        "the known metrics are listed: {err}"
    );

    let out = c.ok(&["pm", "job", "delete", &job_id]);
    assert!(out.contains("deleted"), "{out}");
    assert_eq!(c.json(&["pm", "job", "list"]), json!([]));
    let gone = c.run(&["pm", "job", "show", &job_id]);
    assert!(text(&gone.stderr).contains("404"), "{}", text(&gone.stderr));

    assert_eq!(c.json(&["pm", "threshold", "list"]), json!([]));
    let th = c.json(&[
        "pm",
        "threshold",
        "create",
        "--vnf",
        &id,
        "--metric",
        "VCpuUsageMeanVnf",
        "--value",
        "80",
        "--hysteresis",
        "5",
        "--callback",
        "http://127.0.0.1:9/th",
    ]);
    let th_id = th["id"].as_str().expect("threshold id").to_owned();
    assert_eq!(
        th["criteria"]["simpleThresholdDetails"],
        json!({"thresholdValue": 80.0, "hysteresis": 5.0})
    );
    let table = c.ok(&["pm", "threshold", "list"]);
    assert!(
        table.contains(&th_id) && table.contains("VCpuUsageMeanVnf") && table.contains("80"),
        "{table}"
    );
    let shown = c.ok(&["pm", "threshold", "show", &th_id]);
    assert!(shown.contains("http://127.0.0.1:9/th"), "{shown}");
    let out = c.ok(&["pm", "threshold", "delete", &th_id]);
    assert!(
        out.contains("threshold") && out.contains("deleted"),
        "{out}"
    );
    let gone = c.run(&["pm", "threshold", "show", &th_id]);
    assert!(text(&gone.stderr).contains("404"), "{}", text(&gone.stderr));

    // Indicators: the hello VNFD declares none, so there are no values; an unknown instance
    // or indicator is the server's 404.
    assert_eq!(c.json(&["indicator", "list"]), json!([]));
    assert_eq!(c.json(&["indicator", "list", "--vnf", &id]), json!([]));
    let gone = c.run(&["indicator", "list", "--vnf", "ghost"]);
    assert!(text(&gone.stderr).contains("404"), "{}", text(&gone.stderr));
    let gone = c.run(&["indicator", "show", &id, "load"]);
    assert!(text(&gone.stderr).contains("404"), "{}", text(&gone.stderr));
}
