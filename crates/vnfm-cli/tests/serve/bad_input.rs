//! What `vnfm serve` refuses, and how it keeps serving: oversized bodies, silent clients, request heads its HTTP parser refuses, one address holding connections open, bad addresses and requests, a closed standard output.

use super::*;

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

/// Sends `request` on a new connection from a writer thread while reading the answer (the
/// server may answer before the request is all sent); returns the whole answer.
fn exchange(addr: &str, request: Vec<u8>) -> String {
    let stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut writer = stream.try_clone().unwrap();
    // The server may close before the rest is sent: that is not the test's failure.
    let writing = std::thread::spawn(move || {
        let _ = writer.write_all(&request);
    });
    let mut answer = Vec::new();
    let mut reader = stream;
    reader
        .read_to_end(&mut answer)
        .expect("the server answered and closed");
    let _ = writing.join();
    String::from_utf8_lossy(&answer).into_owned()
}

/// A connection to `addr` from the loopback address `from` (std sockets cannot bind before
/// connecting; tokio's can, and hand the socket over).
async fn connect_from(from: &str, addr: &str) -> std::net::TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket
        .bind(std::net::SocketAddr::new(from.parse().unwrap(), 0))
        .unwrap();
    let stream = socket.connect(addr.parse().unwrap()).await.unwrap();
    let stream = stream.into_std().unwrap();
    stream.set_nonblocking(false).unwrap();
    stream
}

/// `vnfm serve` answers request heads its HTTP parser refuses with ProblemDetails (1 MB of
/// header fields: 431; TLS on the plain port: 400 saying so), and one address holding idle
/// connections neither stalls `/healthz` nor an authenticated client at another address: it
/// keeps its `--max-connections-per-address`, the rest are closed at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_answers_unparseable_heads_and_outlasts_one_address_holding_connections() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let server = start_with(
        dir.path(),
        &[
            "--max-connections",
            "32",
            "--max-connections-per-address",
            "8",
            "--first-request-timeout",
            "60",
        ],
        None,
    );
    let addr = server.base.trim_start_matches("http://").to_owned();
    let mut large = String::from("GET /healthz HTTP/1.1\r\nHost: x\r\n");
    for i in 0..1024 {
        large.push_str(&format!("X-Filler-{i}: {}\r\n", "b".repeat(1000)));
    }
    large.push_str("\r\n");
    let tls = vec![
        0x16, 0x03, 0x01, 0x00, 0xa5, 0x01, 0x00, 0x00, 0xa1, 0x03, 0x03,
    ];
    for (request, status) in [(large.into_bytes(), "431"), (tls, "400")] {
        let a = addr.clone();
        let answer = tokio::task::spawn_blocking(move || exchange(&a, request))
            .await
            .unwrap();
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {status} ")),
            "{answer}"
        );
        assert!(
            answer.contains("Content-Type: application/problem+json"),
            "{answer}"
        );
        let body: Value = serde_json::from_str(answer.split_once("\r\n\r\n").unwrap().1).unwrap();
        assert_eq!(body["status"].to_string(), status, "{body}");
    }
    let mut held = Vec::new();
    for _ in 0..32 {
        held.push(connect_from("127.0.0.2", &addr).await);
    }
    let api = Api::connect(&server.base, dir.path()).await;
    let health = api
        .http
        .get(format!("{}/healthz", server.base))
        .timeout(Duration::from_secs(5))
        .send()
        .await
        .expect("/healthz answered while one address held connections");
    assert_eq!(health.status(), 200);
    let (status, _, body) = api
        .json(reqwest::Method::GET, "/vnflcm/v2/vnf_instances", None)
        .await;
    assert_eq!(status, 200, "{body}");
    // A closed connection reads end of file (or a reset); a held one times out.
    let closed = tokio::task::spawn_blocking(move || {
        held.iter()
            .filter(|s| {
                s.set_read_timeout(Some(Duration::from_millis(200)))
                    .unwrap();
                let mut s: &std::net::TcpStream = s;
                match s.read(&mut [0u8; 16]) {
                    Ok(n) => n == 0,
                    Err(e) => !matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ),
                }
            })
            .count()
    })
    .await
    .unwrap();
    assert_eq!(closed, 32 - 8);
    drop(server);
}
