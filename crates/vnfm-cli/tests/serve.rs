//! `vnfm serve` end to end over real HTTP on loopback: the binary is started on the embedded
//! defaults, a corpus package is onboarded, a VNF is created, instantiated (in-memory test
//! VIM), scaled, healed, terminated and deleted, and a subscription on a local callback server
//! receives every notification. Then the server is stopped with SIGTERM and started again on
//! the same data directory: the same credentials and data are there.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Json;
use axum::http::StatusCode;
use axum::routing::get;
use serde_json::{Value, json};

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/corpus");

struct Server {
    child: Child,
    base: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

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
    let mut child = Command::new(env!("CARGO_BIN_EXE_vnfm"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--enable-test-vim",
            "--log-level",
            level,
        ])
        .args(extra)
        .arg("--data-dir")
        .arg(data_dir)
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("vnfm serve starts");
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut printed = Vec::new();
    let base = loop {
        assert!(
            Instant::now() < deadline,
            "vnfm serve printed no address: {printed:?}"
        );
        let line = lines.next().expect("server output").unwrap();
        if let Some(addr) = line.strip_prefix("vnfm listening on ") {
            break addr.trim().to_owned();
        }
        printed.push(line);
    };
    let rest: Vec<String> = lines.by_ref().take(3).map(|l| l.unwrap()).collect();
    assert!(rest[0].starts_with("credentials: "), "{rest:?}");
    assert!(rest[0].contains("credentials.json"), "{rest:?}");
    std::thread::spawn(move || for _ in lines {});
    Server { child, base }
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
