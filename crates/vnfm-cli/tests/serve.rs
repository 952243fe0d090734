//! `vnfm serve` end to end over real HTTP on loopback: the binary is started on the embedded
//! defaults, a corpus package is onboarded, a VNF is created, instantiated (in-memory test
//! VIM), scaled, healed, terminated and deleted, and a subscription on a local callback server
//! receives every notification. Then the server is stopped with SIGTERM and started again on
//! the same data directory: the same credentials and data are there.

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

mod support;
use support::Server;

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/corpus");

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

fn zip_dir(dir: &Path) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let mut stack = vec![dir.to_path_buf()];
    let mut files = Vec::new();
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                files.push(p);
            }
        }
    }
    files.sort();
    for p in files {
        let name = p
            .strip_prefix(dir)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        zip.start_file(name, zip::write::SimpleFileOptions::default())
            .unwrap();
        let mut bytes = Vec::new();
        std::fs::File::open(&p)
            .unwrap()
            .read_to_end(&mut bytes)
            .unwrap();
        zip.write_all(&bytes).unwrap();
    }
    zip.finish().unwrap().into_inner()
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_end_to_end_with_notifications() {
    rustls::crypto::ring::default_provider()
        .install_default()
        .ok();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");

    // The subscriber: answers the callback test with 204 and records every notification.
    let received: Arc<Mutex<Vec<Value>>> = Arc::default();
    let sink = received.clone();
    let app = axum::Router::new().route(
        "/notify",
        get(|| async { StatusCode::NO_CONTENT }).post(move |Json(body): Json<Value>| {
            let sink = sink.clone();
            async move {
                sink.lock().unwrap().push(body);
                StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let callback_addr: SocketAddr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let log = dir.path().join("server.log");
    let server = start_with(&data, &["--log-format", "json"], Some(&log));
    let api = Api::connect(&server.base, &data).await;
    const VIM_SECRET: &str = "vim-password-must-never-be-logged-8841";
    let (status, _, vim) = api
        .json(
            reqwest::Method::POST,
            "/vnfm/v1/vims",
            Some(
                json!({"name": "os", "vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3",
                "interfaceInfo": {"endpoint": "http://127.0.0.1:5/identity/v3"},
                "accessInfo": {"username": "admin", "password": VIM_SECRET, "project": "p",
                               "projectDomain": "Default", "userDomain": "Default"}}),
            ),
        )
        .await;
    assert_eq!(status, 201, "{vim}");
    assert!(!vim.to_string().contains(VIM_SECRET));

    let (status, _, _) = api
        .json(reqwest::Method::GET, "/vnflcm/v2/vnf_instances", None)
        .await;
    assert_eq!(status, 200);
    let unauthenticated = api
        .http
        .get(format!("{}/vnflcm/v2/vnf_instances", server.base))
        .header("Version", "2.0.0")
        .send()
        .await
        .unwrap();
    assert_eq!(unauthenticated.status(), 401);

    // On the wire, header names have their canonical capitalisation.
    let raw = {
        let addr = server.base.trim_start_matches("http://").to_owned();
        tokio::task::spawn_blocking(move || {
            let mut tcp = std::net::TcpStream::connect(addr).unwrap();
            write!(
                tcp,
                "GET /vnflcm/v2/api_versions HTTP/1.1\r\nHost: vnfm\r\nConnection: close\r\n\r\n"
            )
            .unwrap();
            let mut raw = String::new();
            tcp.read_to_string(&mut raw).unwrap();
            raw
        })
        .await
        .unwrap()
    };
    let head = raw.split("\r\n\r\n").next().unwrap();
    assert!(head.starts_with("HTTP/1.1 "), "{head}");
    assert!(head.contains("\r\nContent-Type: application/"), "{head}");
    assert!(head.contains("\r\nContent-Length: "), "{head}");

    let (status, _, sub) = api
        .json(
            reqwest::Method::POST,
            "/vnflcm/v2/subscriptions",
            Some(json!({"callbackUri": format!("http://{callback_addr}/notify")})),
        )
        .await;
    assert_eq!(status, 201, "{sub}");
    // A callback that does not answer the test GET with 204 is refused.
    let (status, _, problem) = api
        .json(
            reqwest::Method::POST,
            "/vnflcm/v2/subscriptions",
            Some(json!({"callbackUri": format!("http://{callback_addr}/missing")})),
        )
        .await;
    assert!(status == 400 || status == 422, "{status} {problem}");

    // Onboard a Tacker corpus package over HTTP.
    let (status, _, pkg) = api
        .json(
            reqwest::Method::POST,
            "/vnfpkgm/v2/vnf_packages",
            Some(json!({})),
        )
        .await;
    assert_eq!(status, 201);
    let pkg_id = pkg["id"].as_str().unwrap().to_owned();
    let content = zip_dir(&Path::new(CORPUS).join("tacker/v2-vm-basic-lcms-max"));
    let r = api
        .req(
            reqwest::Method::PUT,
            &format!("/vnfpkgm/v2/vnf_packages/{pkg_id}/package_content"),
        )
        .header("Content-Type", "application/zip")
        .body(content)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let mut info = Value::Null;
    for _ in 0..300 {
        info = api
            .json(
                reqwest::Method::GET,
                &format!("/vnfpkgm/v2/vnf_packages/{pkg_id}"),
                None,
            )
            .await
            .2;
        if info["onboardingState"] != "PROCESSING" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(info["onboardingState"], "ONBOARDED", "{info:#}");
    let vnfd_id = info["vnfdId"].as_str().unwrap().to_owned();

    let (status, headers, vnf) = api
        .json(
            reqwest::Method::POST,
            "/vnflcm/v2/vnf_instances",
            Some(json!({"vnfdId": vnfd_id, "vnfInstanceName": "e2e"})),
        )
        .await;
    assert_eq!(status, 201, "{vnf}");
    let vnf_id = vnf["id"].as_str().unwrap().to_owned();
    assert_eq!(
        headers["location"].to_str().unwrap(),
        format!("{}/vnflcm/v2/vnf_instances/{vnf_id}", server.base)
    );

    api.task(
        &vnf_id,
        "instantiate",
        json!({"flavourId": "simple", "vimConnectionInfo": {"vim1": {"vimType": "TEST.NOOP.V_1"}}}),
    )
    .await;
    let before = api
        .json(
            reqwest::Method::GET,
            &format!("/vnflcm/v2/vnf_instances/{vnf_id}"),
            None,
        )
        .await
        .2;
    let vnfcs_before = before["instantiatedVnfInfo"]["vnfcResourceInfo"]
        .as_array()
        .unwrap()
        .len();
    api.task(
        &vnf_id,
        "scale",
        json!({"type": "SCALE_OUT", "aspectId": "VDU1_scale", "numberOfSteps": 1}),
    )
    .await;
    let after = api
        .json(
            reqwest::Method::GET,
            &format!("/vnflcm/v2/vnf_instances/{vnf_id}"),
            None,
        )
        .await
        .2;
    assert_eq!(
        after["instantiatedVnfInfo"]["vnfcResourceInfo"]
            .as_array()
            .unwrap()
            .len(),
        vnfcs_before + 1
    );
    assert_eq!(
        after["instantiatedVnfInfo"]["scaleStatus"][0]["scaleLevel"],
        1
    );
    let vnfc = after["instantiatedVnfInfo"]["vnfcInfo"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    api.task(
        &vnf_id,
        "heal",
        json!({"vnfcInstanceId": [vnfc], "cause": "e2e"}),
    )
    .await;
    api.task(
        &vnf_id,
        "terminate",
        json!({"terminationType": "GRACEFUL", "gracefulTerminationTimeout": 1}),
    )
    .await;
    let r = api
        .req(
            reqwest::Method::DELETE,
            &format!("/vnflcm/v2/vnf_instances/{vnf_id}"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);

    // Every notification arrives: creation, STARTING/PROCESSING/COMPLETED of each of the four
    // operations, deletion.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = received.lock().unwrap().clone();
        let creation = got
            .iter()
            .filter(|n| n["notificationType"] == "VnfIdentifierCreationNotification")
            .count();
        let deletion = got
            .iter()
            .filter(|n| n["notificationType"] == "VnfIdentifierDeletionNotification")
            .count();
        let completed: Vec<&str> = got
            .iter()
            .filter(|n| {
                n["notificationType"] == "VnfLcmOperationOccurrenceNotification"
                    && n["operationState"] == "COMPLETED"
            })
            .map(|n| n["operation"].as_str().unwrap())
            .collect();
        let starting = got
            .iter()
            .filter(|n| n["operationState"] == "STARTING")
            .count();
        if creation == 1 && deletion == 1 && completed.len() == 4 && starting == 4 {
            let mut ops = completed.clone();
            ops.sort_unstable();
            assert_eq!(ops, ["HEAL", "INSTANTIATE", "SCALE", "TERMINATE"]);
            assert!(
                got.iter().all(|n| n["subscriptionId"] == sub["id"]),
                "{got:#?}"
            );
            assert!(got.iter().all(|n| n["vnfInstanceId"] == vnf_id.as_str()));
            // They are about one instance, so they arrive in the order they happened (a
            // repeated delivery would only duplicate one in place).
            let mut sequence: Vec<String> = got
                .iter()
                .map(|n| match n["notificationType"].as_str().unwrap() {
                    "VnfIdentifierCreationNotification" => "created".to_owned(),
                    "VnfIdentifierDeletionNotification" => "deleted".to_owned(),
                    _ => format!(
                        "{} {}",
                        n["operation"].as_str().unwrap(),
                        n["operationState"].as_str().unwrap()
                    ),
                })
                .collect();
            sequence.dedup();
            let mut expected = vec!["created".to_owned()];
            for op in ["INSTANTIATE", "SCALE", "HEAL", "TERMINATE"] {
                for state in ["STARTING", "PROCESSING", "COMPLETED"] {
                    expected.push(format!("{op} {state}"));
                }
            }
            expected.push("deleted".to_owned());
            assert_eq!(sequence, expected);
            break;
        }
        assert!(Instant::now() < deadline, "notifications missing: {got:#?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Step latencies reach the metrics through the tracing layer of the binary.
    let metrics = api
        .req(reqwest::Method::GET, "/metrics")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("vnfm_lcm_step_duration_seconds_count{step="),
        "{metrics}"
    );
    assert!(
        metrics.contains("vnfm_op_occs{state=\"COMPLETED\"} 4"),
        "{metrics}"
    );

    // SIGTERM: graceful stop; a restart on the same data dir keeps credentials and data.
    let mut server = server;
    #[cfg(unix)]
    {
        let pid = server.child.id().to_string();
        assert!(
            Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .unwrap()
                .success()
        );
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = server.child.try_wait().unwrap() {
                assert!(status.success(), "{status:?}");
                break;
            }
            assert!(
                Instant::now() < deadline,
                "vnfm serve did not stop on SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    drop(server);
    // The debug log holds no secret: not the VIM password, the client secret or the token.
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.lines().count() > 10, "{logged}");
    let creds: Value =
        serde_json::from_str(&std::fs::read_to_string(data.join("credentials.json")).unwrap())
            .unwrap();
    for secret in [
        VIM_SECRET,
        creds["client_secret"].as_str().unwrap(),
        api.token.as_str(),
    ] {
        assert!(!logged.contains(secret), "a secret is in the log");
    }
    for line in logged.lines() {
        serde_json::from_str::<Value>(line)
            .unwrap_or_else(|e| panic!("not a JSON log line ({e}): {line}"));
    }
    let again = start(&data);
    let api = Api::connect(&again.base, &data).await;
    let (status, _, occs) = api
        .json(reqwest::Method::GET, "/vnflcm/v2/vnf_lcm_op_occs", None)
        .await;
    assert_eq!(status, 200);
    assert_eq!(occs.as_array().unwrap().len(), 4);
    let (_, _, info) = api
        .json(
            reqwest::Method::GET,
            &format!("/vnfpkgm/v2/vnf_packages/{pkg_id}"),
            None,
        )
        .await;
    assert_eq!(info["onboardingState"], "ONBOARDED");
    // The package is loaded again: new instances can be created from it.
    let (status, _, _) = api
        .json(
            reqwest::Method::POST,
            "/vnflcm/v2/vnf_instances",
            Some(json!({"vnfdId": vnfd_id})),
        )
        .await;
    assert_eq!(status, 201);
}

/// `--tls-cert`/`--tls-key`: HTTPS with rustls; a client that trusts the certificate talks to
/// it, plain HTTP to the same port does not get an answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_over_tls() {
    rustls::crypto::ring::default_provider()
        .install_default()
        .ok();
    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("cert.pem");
    let key = dir.path().join("key.pem");
    let made = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
        ])
        .args(["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl runs");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let data = dir.path().join("data");
    let server = start_with(
        &data,
        &[
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
        None,
    );
    assert!(
        server.base.starts_with("https://127.0.0.1:"),
        "{}",
        server.base
    );
    let ca = reqwest::Certificate::from_pem(&std::fs::read(&cert).unwrap()).unwrap();
    let https = reqwest::Client::builder()
        .add_root_certificate(ca)
        .build()
        .unwrap();
    let r = https
        .get(format!("{}/healthz", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let plain = server.base.replacen("https://", "http://", 1);
    let r = reqwest::Client::new()
        .get(format!("{plain}/healthz"))
        .timeout(Duration::from_secs(5))
        .send()
        .await;
    assert!(r.is_err() || !r.unwrap().status().is_success());
}

/// The limits of `vnfm serve`: a claimed `Content-Length` beyond the token endpoint's limit is
/// answered 413 (ProblemDetails) without waiting for the body, and a client that never
/// finishes its headers is disconnected after `--header-timeout`.
#[test]
fn serve_refuses_oversized_bodies_unread_and_drops_silent_clients() {
    let dir = tempfile::tempdir().unwrap();
    let server = start_with(dir.path(), &["--header-timeout", "1"], None);
    let addr = server.base.trim_start_matches("http://").to_owned();
    let mut big = std::net::TcpStream::connect(&addr).unwrap();
    big.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    big.write_all(
        b"POST /oauth2/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1073741824\r\n\r\n",
    )
    .unwrap();
    let mut head = vec![0u8; 4096];
    let n = big.read(&mut head).unwrap();
    let text = String::from_utf8_lossy(&head[..n]);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(text.contains("application/problem+json"), "{text}");
    let mut silent = std::net::TcpStream::connect(&addr).unwrap();
    silent
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    silent.write_all(b"GET /healthz HTTP/1.1\r\n").unwrap();
    let mut rest = Vec::new();
    // EOF (or a 408 then EOF) once the header timer fires; a read timeout means still open.
    silent
        .read_to_end(&mut rest)
        .expect("the server closed the connection");
    drop(server);
}

/// An address that cannot be bound stops `vnfm serve` before it creates the data directory.
#[test]
fn serve_checks_the_listen_address_before_creating_the_data_directory() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("fresh");
    let out = Command::new(env!("CARGO_BIN_EXE_vnfm"))
        .args(["serve", "--listen", &addr, "--data-dir"])
        .arg(&data)
        .output()
        .expect("vnfm serve runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&addr), "{stderr}");
    assert!(!data.exists(), "the data directory was created: {stderr}");
}

/// Bad input against `vnfm serve`: a test-VIM delay no duration holds, a NUL character and a
/// secret of the wrong type are each a 400 naming the member, and the secret is not quoted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_refuses_bad_input_naming_the_member() {
    rustls::crypto::ring::default_provider()
        .install_default()
        .ok();
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    let api = Api::connect(&server.base, dir.path()).await;
    let cases = [
        (
            "/vnflcm/v2/vnf_instances/any/scale",
            json!({"type": "SCALE_OUT", "aspectId": "a",
                   "additionalParams": {"testVim": {"delaySeconds": 1e308}}}),
            "/additionalParams/testVim/delaySeconds",
        ),
        (
            "/vnflcm/v2/vnf_instances",
            json!({"vnfdId": "x", "vnfInstanceName": "a\u{0}b"}),
            "/vnfInstanceName",
        ),
        (
            "/vnflcm/v2/subscriptions",
            json!({"callbackUri": "http://127.0.0.1:9/cb", "authentication": {
                "authType": ["BASIC"],
                "paramsBasic": {"userName": "u", "password": {"p": "SECRETOBJ42"}}}}),
            "/authentication/paramsBasic/password",
        ),
    ];
    for (path, body, pointer) in cases {
        let (status, _, problem) = api.json(reqwest::Method::POST, path, Some(body)).await;
        assert_eq!(status, 400, "{path}: {problem}");
        assert_eq!(problem["pointer"], pointer, "{problem}");
        assert!(!problem.to_string().contains("SECRETOBJ42"), "{problem}");
    }
    drop(server);
}

/// A notification subscriber on loopback that can be taken down: while down it answers every
/// notification `503 Service Unavailable` (the callback test `GET` is always answered 204);
/// while up it records them.
struct Subscriber {
    callback: String,
    down: Arc<AtomicBool>,
    received: Arc<Mutex<Vec<Value>>>,
    refused: Arc<AtomicUsize>,
}

impl Subscriber {
    async fn start() -> Subscriber {
        let down = Arc::new(AtomicBool::new(false));
        let received: Arc<Mutex<Vec<Value>>> = Arc::default();
        let refused = Arc::new(AtomicUsize::new(0));
        let (d, r, f) = (down.clone(), received.clone(), refused.clone());
        let app = axum::Router::new().route(
            "/notify",
            get(|| async { StatusCode::NO_CONTENT }).post(move |Json(body): Json<Value>| {
                let (d, r, f) = (d.clone(), r.clone(), f.clone());
                async move {
                    if d.load(Ordering::SeqCst) {
                        f.fetch_add(1, Ordering::SeqCst);
                        return StatusCode::SERVICE_UNAVAILABLE;
                    }
                    r.lock().unwrap().push(body);
                    StatusCode::NO_CONTENT
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Subscriber {
            callback: format!("http://{addr}/notify"),
            down,
            received,
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
            .body(zip_dir(
                &Path::new(CORPUS).join("tacker/v2-vm-basic-lcms-max"),
            ))
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

/// Issue 25, item 2: a subscriber down for a while lost notifications. Here it is down (503)
/// while two VNF instances go through their lifecycles, the server retries (backoff capped at
/// 1 s, more than 10 attempts) and holds each instance's later notifications behind the first undelivered one; once
/// the subscriber is back every notification arrives, each instance's in the order they
/// happened, none given up; `/metrics` shows the outbox while it waits and empty after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_held_while_the_subscriber_is_down_arrive_in_order_when_it_returns() {
    rustls::crypto::ring::default_provider()
        .install_default()
        .ok();
    let dir = tempfile::tempdir().unwrap();
    let subscriber = Subscriber::start().await;
    let server = start_with(dir.path(), &["--notify-backoff-max", "1"], None);
    let api = Api::connect(&server.base, dir.path()).await;
    let sub = api.subscribe(&subscriber.callback).await;
    let vnfd_id = api.onboard_corpus_package().await;

    subscriber.set_down(true);
    let a = api.create_vnf(&vnfd_id).await;
    let b = api.create_vnf(&vnfd_id).await;
    api.instantiate(&a).await;
    api.instantiate(&b).await;
    api.task(
        &a,
        "scale",
        json!({"type": "SCALE_OUT", "aspectId": "VDU1_scale", "numberOfSteps": 1}),
    )
    .await;
    // Retried, not delivered, not given up: the outbox holds them. Each instance's first
    // notification is refused about 12 times, beyond the 10 attempts after which the server
    // used to give up.
    eventually(60, "delivery attempts to the down subscriber", async || {
        subscriber.refused.load(Ordering::SeqCst) >= 24
    })
    .await;
    let pending = format!(r#"vnfm_notifications{{subscription="{sub}",status="pending"}}"#);
    let dead = format!(r#"vnfm_notifications{{subscription="{sub}",status="dead"}}"#);
    let lag = format!(r#"vnfm_notification_delivery_lag_seconds{{subscription="{sub}"}}"#);
    assert_eq!(api.metric(&pending).await, Some(11));
    assert_eq!(api.metric(&dead).await, Some(0));
    eventually(30, "a delivery lag of a second", async || {
        api.metric(&lag).await.is_some_and(|l| l >= 1)
    })
    .await;
    assert!(subscriber.received.lock().unwrap().is_empty());

    subscriber.set_down(false);
    let (want_a, want_b) = (
        lifecycle(&["INSTANTIATE", "SCALE"]),
        lifecycle(&["INSTANTIATE"]),
    );
    eventually(
        60,
        "every notification after the subscriber returned",
        async || {
            subscriber.sequence(&a).len() >= want_a.len()
                && subscriber.sequence(&b).len() >= want_b.len()
        },
    )
    .await;
    assert_eq!(subscriber.sequence(&a), want_a);
    assert_eq!(subscriber.sequence(&b), want_b);
    // An empty outbox has no series: absent counts as 0.
    eventually(10, "an empty outbox", async || {
        api.metric(&pending).await.unwrap_or(0) == 0
    })
    .await;
    assert_eq!(api.metric(&dead).await.unwrap_or(0), 0);
    assert_eq!(api.metric(&lag).await.unwrap_or(0), 0);
    let (status, _, given_up) = api
        .json(reqwest::Method::GET, "/vnfm/v1/notifications/dead", None)
        .await;
    assert_eq!(status, 200);
    assert_eq!(given_up, json!([]));
    drop(server);
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

/// Issue 25, item 2: a notification given up (here at once: `--notify-max-age-hours 0`) was
/// lost for good. Now it is kept: `vnfm sub dead` lists it, `/metrics` counts it, and once the
/// subscriber is back `vnfm sub redeliver --all` sends every one again, in order; `vnfm sub
/// discard` refuses a row that is not given up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn given_up_notifications_are_listed_and_redelivered_with_the_cli_once_the_subscriber_is_back()
 {
    rustls::crypto::ring::default_provider()
        .install_default()
        .ok();
    let dir = tempfile::tempdir().unwrap();
    let subscriber = Subscriber::start().await;
    let server = start_with(dir.path(), &["--notify-max-age-hours", "0"], None);
    let api = Api::connect(&server.base, dir.path()).await;
    let sub = api.subscribe(&subscriber.callback).await;
    let vnfd_id = api.onboard_corpus_package().await;

    subscriber.set_down(true);
    let vnf = api.create_vnf(&vnfd_id).await;
    api.instantiate(&vnf).await;
    let dead = format!(r#"vnfm_notifications{{subscription="{sub}",status="dead"}}"#);
    eventually(30, "four given-up notifications", async || {
        api.metric(&dead).await == Some(4)
    })
    .await;

    let root = dir.path();
    let listed: Value =
        serde_json::from_str(&client_ok(&server, root, &["sub", "dead", "-o", "json"])).unwrap();
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 4, "{listed:#?}");
    assert!(listed.iter().all(|d| d["subscriptionId"] == sub.as_str()));
    assert!(
        listed
            .iter()
            .all(|d| d["lastError"].as_str().unwrap().contains("503"))
    );
    let table = client_ok(&server, root, &["sub", "dead", "--subscription", &sub]);
    assert!(
        table.contains("VnfLcmOperationOccurrence INSTANTIATE COMPLETED"),
        "{table}"
    );
    assert!(
        client_ok(
            &server,
            root,
            &["sub", "dead", "--subscription", "other", "-o", "json"]
        )
        .trim()
            == "[]"
    );
    let refused = client(&server, root, &["sub", "discard", "999999999"]);
    assert_eq!(refused.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("404") && stderr.contains("999999999"),
        "{stderr}"
    );

    subscriber.set_down(false);
    let said = client_ok(&server, root, &["sub", "redeliver", "--all"]);
    assert!(
        said.contains("4 notifications put back for delivery"),
        "{said}"
    );
    eventually(30, "the redelivered notifications", async || {
        subscriber.sequence(&vnf).len() >= 4
    })
    .await;
    assert_eq!(subscriber.sequence(&vnf), lifecycle(&["INSTANTIATE"]));
    assert_eq!(
        client_ok(&server, root, &["sub", "dead", "-o", "json"]).trim(),
        "[]"
    );
    assert_eq!(api.metric(&dead).await.unwrap_or(0), 0);
    drop(server);
}

/// `vnfm serve` whose standard output is a pipe nobody reads any more (`vnfm serve | head -1`
/// after `head` exits) keeps serving: its start lines are not worth a crash.
#[test]
fn serve_with_a_closed_standard_output_keeps_serving() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_vnfm"))
        .args([
            "serve",
            "--listen",
            &port.to_string(),
            "--log-level",
            "warn",
        ])
        .arg("--data-dir")
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("vnfm serve starts");
    // Close the reading end before the server writes its start lines.
    drop(child.stdout.take());
    let deadline = Instant::now() + Duration::from_secs(60);
    let answered = loop {
        if let Ok(Some(status)) = child.try_wait() {
            let mut err = String::new();
            child.stderr.take().unwrap().read_to_string(&mut err).ok();
            panic!("vnfm serve exited ({status}) with a closed stdout: {err}");
        }
        if let Ok(mut s) = std::net::TcpStream::connect(port) {
            s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .unwrap();
            let mut reply = String::new();
            s.read_to_string(&mut reply).ok();
            if !reply.is_empty() {
                break reply;
            }
        }
        assert!(Instant::now() < deadline, "vnfm serve never answered");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(answered.starts_with("HTTP/1.1 200"), "{answered}");
    // Still running after writing (and failing to write) every start line.
    std::thread::sleep(Duration::from_millis(300));
    assert!(child.try_wait().unwrap().is_none(), "vnfm serve exited");
    child.kill().ok();
    child.wait().ok();
}

/// Issue 29: what fault and performance management keep survives a kill -9 of the server:
/// an acknowledged alarm, FM and PM subscriptions, a PM job and a threshold read the same
/// after a restart on the same data directory, and the alarm is still the one a repeated
/// alert finds (no second alarm, no second notification row).
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
