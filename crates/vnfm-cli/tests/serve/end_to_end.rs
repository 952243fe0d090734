//! A whole life over HTTP: onboarding, instances, notifications, TLS.

use super::*;

#[vnfm_test_env::needs(corpus)]
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
    let content = zip_dir(&vnfm_test_env::corpus("tacker/v2-vm-basic-lcms-max"));
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
