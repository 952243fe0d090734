//! `vnfm alarm list|show|ack` and automatic healing, through the `vnfm` binary against a real
//! `vnfm serve --enable-test-vim --alertmanager-token-file`: an Alertmanager webhook about a
//! VNFC of an instance instantiated with Tacker's `isAutohealEnabled` raises an alarm, the
//! server heals that VNFC by itself (`isAutomaticInvocation`), and the client lists, shows
//! and acknowledges the alarm.

mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::Server;

const BIN: &str = env!("CARGO_BIN_EXE_vnfm");
const SAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../vnfd-samples/hello-vnf");
const TOKEN: &str = "alertmanager-token-5d1c9e";

fn start(data: &Path, token_file: &Path) -> Server {
    let mut child = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--enable-test-vim"])
        .args(["--log-level", "warn", "--no-callback-check"])
        .args(["--auto-heal-cooldown", "0"])
        .arg("--alertmanager-token-file")
        .arg(token_file)
        .arg("--data-dir")
        .arg(data)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("vnfm serve starts");
    let stdout = child.stdout.take().expect("stdout piped");
    let mut lines = BufReader::new(stdout).lines();
    let deadline = Instant::now() + Duration::from_secs(60);
    let base = loop {
        assert!(Instant::now() < deadline, "vnfm serve printed no address");
        let line = lines.next().expect("server output").expect("text");
        if let Some(addr) = line.strip_prefix("vnfm listening on ") {
            break addr.trim().to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    Server { child, base }
}

struct Client {
    base: String,
    creds: PathBuf,
    home: tempfile::TempDir,
}

impl Client {
    fn run(&self, args: &[&str]) -> Output {
        Command::new(BIN)
            .args(args)
            .env("VNFM_URL", &self.base)
            .env("VNFM_CREDENTIALS_FILE", &self.creds)
            .env("VNFM_CACHE_DIR", self.home.path().join("cache"))
            .env("XDG_CONFIG_HOME", self.home.path().join("config"))
            .env_remove("VNFM_CLIENT_ID")
            .env_remove("VNFM_CLIENT_SECRET")
            .env_remove("VNFM_CONFIG")
            .stdin(Stdio::null())
            .output()
            .expect("vnfm runs")
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "vnfm {args:?} failed ({:?}):\n{}{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("UTF-8")
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        let text = self.ok(&all);
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
    }
}

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
            .bearer_auth(TOKEN)
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
    std::fs::write(&token_file, TOKEN).expect("write");
    let server = start(&dir.path().join("data"), &token_file);
    let c = Client {
        base: server.base.clone(),
        creds: dir.path().join("data").join("credentials.json"),
        home: tempfile::tempdir().expect("tempdir"),
    };

    let pkg = c.json(&["pkg", "upload", SAMPLE]);
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
