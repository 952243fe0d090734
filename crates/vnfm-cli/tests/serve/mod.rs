//! `vnfm serve` over real HTTP on loopback, the binary started on the embedded defaults:
//! a whole VNF life with every notification, and a restart on the same data directory
//! (`end_to_end`); what it refuses and how it keeps serving (`bad_input`); notifications held,
//! given up and redelivered (`delivery`); what survives a `kill -9` (`restarts`); PostgreSQL
//! restarted or switched to its standby under load (`database`); a replica sent SIGTERM
//! beside another (`replicas`); an external OAuth 2.0 authorization server's tokens (`oauth`). The helpers shared by these are here.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Json;
use axum::http::StatusCode;
use axum::routing::get;
use serde_json::{Value, json};

use crate::support;
use support::Server;

mod bad_input;
mod database;
mod delivery;
mod end_to_end;
mod enhanced_policy;
mod idempotent_crash;
mod oauth;
mod replicas;
mod restarts;
mod traces;

fn start(data_dir: &Path) -> Server {
    start_with(data_dir, &[], None)
}

/// Starts `vnfm serve` with extra arguments; logs go to `log` (debug level) when given.
fn start_with(data_dir: &Path, extra: &[&str], log: Option<&Path>) -> Server {
    let stderr = match log {
        Some(p) => Stdio::from(std::fs::File::create(p).unwrap()),
        None => Stdio::inherit(),
    };
    let level = if log.is_some() { "debug" } else { "warn" };
    let mut command = support::serve_command(data_dir);
    command
        .args(["--enable-test-vim", "--log-level", level])
        .args(extra)
        .stderr(stderr);
    let (server, rest) = Server::spawn(command, 3);
    assert!(rest[0].starts_with("credentials: "), "{rest:?}");
    assert!(rest[0].contains("credentials.json"), "{rest:?}");
    server
}

/// The package directory `dir` as a zip archive.
fn zip_dir(dir: &Path) -> Vec<u8> {
    vnfm::csar::zip_directory(dir).expect("zip the package directory")
}

struct Api {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Api {
    async fn connect(base: &str, data_dir: &Path) -> Api {
        let creds: Value = serde_json::from_str(
            &std::fs::read_to_string(data_dir.join("credentials.json")).unwrap(),
        )
        .unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(data_dir.join("credentials.json"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let http = reqwest::Client::new();
        let r = http
            .post(format!("{base}/oauth2/token"))
            .basic_auth(
                creds["client_id"].as_str().unwrap(),
                creds["client_secret"].as_str(),
            )
            .form(&[("grant_type", "client_credentials")])
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let token = r.json::<Value>().await.unwrap()["access_token"]
            .as_str()
            .unwrap()
            .to_owned();
        Api {
            http,
            base: base.to_owned(),
            token,
        }
    }

    fn req(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .header("Version", "2.0.0")
    }

    async fn json(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, reqwest::header::HeaderMap, Value) {
        let mut r = self.req(method, path);
        if let Some(b) = body {
            r = r.json(&b);
        }
        let resp = r.send().await.unwrap();
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let text = resp.text().await.unwrap();
        (
            status,
            headers,
            serde_json::from_str(&text).unwrap_or(Value::Null),
        )
    }

    async fn task(&self, vnf: &str, task: &str, body: Value) -> Value {
        let (status, headers, problem) = self
            .json(
                reqwest::Method::POST,
                &format!("/vnflcm/v2/vnf_instances/{vnf}/{task}"),
                Some(body),
            )
            .await;
        assert_eq!(status, 202, "{task}: {problem}");
        let location = headers["location"].to_str().unwrap().to_owned();
        let path = location.strip_prefix(&self.base).unwrap().to_owned();
        for _ in 0..500 {
            let (_, _, occ) = self.json(reqwest::Method::GET, &path, None).await;
            let state = occ["operationState"].as_str().unwrap_or("");
            if ["COMPLETED", "FAILED_TEMP", "FAILED", "ROLLED_BACK"].contains(&state) {
                assert_eq!(state, "COMPLETED", "{task}: {occ:#}");
                return occ;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("{task} never finished");
    }
}

/// A notification subscriber on loopback that can be taken down: while down it answers every
/// notification `503 Service Unavailable` (the callback test `GET` is always answered 204);
/// while up it records them.
struct Subscriber {
    callback: String,
    down: Arc<AtomicBool>,
    /// The notifications received, with the `traceparent` header each came with.
    received: Arc<Mutex<Vec<Value>>>,
    traceparents: Arc<Mutex<Vec<Option<String>>>>,
    refused: Arc<AtomicUsize>,
}

impl Subscriber {
    async fn start() -> Subscriber {
        let down = Arc::new(AtomicBool::new(false));
        let received: Arc<Mutex<Vec<Value>>> = Arc::default();
        let traceparents: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
        let refused = Arc::new(AtomicUsize::new(0));
        let (d, r, t, f) = (
            down.clone(),
            received.clone(),
            traceparents.clone(),
            refused.clone(),
        );
        let app = axum::Router::new().route(
            "/notify",
            get(|| async { StatusCode::NO_CONTENT }).post(
                move |headers: axum::http::HeaderMap, Json(body): Json<Value>| {
                    let (d, r, t, f) = (d.clone(), r.clone(), t.clone(), f.clone());
                    async move {
                        if d.load(Ordering::SeqCst) {
                            f.fetch_add(1, Ordering::SeqCst);
                            return StatusCode::SERVICE_UNAVAILABLE;
                        }
                        let traceparent = headers
                            .get("traceparent")
                            .and_then(|v| v.to_str().ok())
                            .map(str::to_owned);
                        // One lock for both, so that they stay in step.
                        let mut received = r.lock().unwrap();
                        received.push(body);
                        t.lock().unwrap().push(traceparent);
                        StatusCode::NO_CONTENT
                    }
                },
            ),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Subscriber {
            callback: format!("http://{addr}/notify"),
            down,
            received,
            traceparents,
            refused,
        }
    }

    fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    /// What one VNF instance's notifications said, in arrival order, with repeated
    /// deliveries (at-least-once) collapsed: `created`, `INSTANTIATE STARTING`, ...
    fn sequence(&self, vnf: &str) -> Vec<String> {
        let mut out: Vec<String> = self
            .received
            .lock()
            .unwrap()
            .iter()
            .filter(|n| n["vnfInstanceId"] == vnf)
            .map(
                |n| match n["notificationType"].as_str().unwrap_or_default() {
                    "VnfIdentifierCreationNotification" => "created".to_owned(),
                    "VnfIdentifierDeletionNotification" => "deleted".to_owned(),
                    _ => format!(
                        "{} {}",
                        n["operation"].as_str().unwrap_or_default(),
                        n["operationState"].as_str().unwrap_or_default()
                    ),
                },
            )
            .collect();
        out.dedup();
        out
    }
}

/// `created`, then STARTING, PROCESSING, COMPLETED of each operation.
fn lifecycle(ops: &[&str]) -> Vec<String> {
    let mut out = vec!["created".to_owned()];
    for op in ops {
        for state in ["STARTING", "PROCESSING", "COMPLETED"] {
            out.push(format!("{op} {state}"));
        }
    }
    out
}

impl Api {
    /// Onboards the corpus package the end-to-end test uses; returns its vnfdId.
    async fn onboard_corpus_package(&self) -> String {
        self.onboard_package(&vnfm_test_env::corpus("tacker/v2-vm-basic-lcms-max"))
            .await
    }

    /// Onboards the package directory `dir`; returns its vnfdId.
    async fn onboard_package(&self, dir: &Path) -> String {
        let (status, _, pkg) = self
            .json(
                reqwest::Method::POST,
                "/vnfpkgm/v2/vnf_packages",
                Some(json!({})),
            )
            .await;
        assert_eq!(status, 201, "{pkg}");
        let pkg_id = pkg["id"].as_str().unwrap().to_owned();
        let r = self
            .req(
                reqwest::Method::PUT,
                &format!("/vnfpkgm/v2/vnf_packages/{pkg_id}/package_content"),
            )
            .header("Content-Type", "application/zip")
            .body(zip_dir(dir))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 202);
        for _ in 0..1500 {
            let (_, _, info) = self
                .json(
                    reqwest::Method::GET,
                    &format!("/vnfpkgm/v2/vnf_packages/{pkg_id}"),
                    None,
                )
                .await;
            if info["onboardingState"] != "PROCESSING" {
                assert_eq!(info["onboardingState"], "ONBOARDED", "{info:#}");
                return info["vnfdId"].as_str().unwrap().to_owned();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("package {pkg_id} was never onboarded");
    }

    /// Creates a VNF instance of `vnfd_id`; returns its id.
    async fn create_vnf(&self, vnfd_id: &str) -> String {
        let (status, _, vnf) = self
            .json(
                reqwest::Method::POST,
                "/vnflcm/v2/vnf_instances",
                Some(json!({"vnfdId": vnfd_id})),
            )
            .await;
        assert_eq!(status, 201, "{vnf}");
        vnf["id"].as_str().unwrap().to_owned()
    }

    async fn instantiate(&self, vnf: &str) {
        self.task(
            vnf,
            "instantiate",
            json!({"flavourId": "simple", "vimConnectionInfo": {"vim1": {"vimType": "TEST.NOOP.V_1"}}}),
        )
        .await;
    }

    /// Subscribes `callback` to every lifecycle notification; returns the subscription id.
    async fn subscribe(&self, callback: &str) -> String {
        let (status, _, sub) = self
            .json(
                reqwest::Method::POST,
                "/vnflcm/v2/subscriptions",
                Some(json!({"callbackUri": callback})),
            )
            .await;
        assert_eq!(status, 201, "{sub}");
        sub["id"].as_str().unwrap().to_owned()
    }

    /// The value of the `/metrics` sample `name{labels}`.
    async fn metric(&self, name_and_labels: &str) -> Option<i64> {
        let text = self
            .req(reqwest::Method::GET, "/metrics")
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix(name_and_labels)?.strip_prefix(' '))
            .and_then(|v| v.trim().parse().ok())
    }
}

/// Waits up to `secs` seconds for `done`, polling every 100 ms.
async fn eventually(secs: u64, what: &str, mut done: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !done().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Runs the `vnfm` client against `server` (credentials from its data directory, no
/// configuration or token cache of the user's).
fn client(server: &Server, data_dir: &Path, args: &[&str]) -> std::process::Output {
    let home = tempfile::tempdir().unwrap();
    Command::new(env!("CARGO_BIN_EXE_vnfm"))
        .args(args)
        .env("VNFM_URL", &server.base)
        .env("VNFM_CREDENTIALS_FILE", data_dir.join("credentials.json"))
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env_remove("VNFM_CLIENT_ID")
        .env_remove("VNFM_CLIENT_SECRET")
        .env_remove("VNFM_CONFIG")
        .arg("--no-token-cache")
        .stdin(Stdio::null())
        .output()
        .expect("vnfm runs")
}

fn client_ok(server: &Server, data_dir: &Path, args: &[&str]) -> String {
    let out = client(server, data_dir, args);
    assert!(
        out.status.success(),
        "vnfm {args:?}: {:?}\n{}{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}
