//! The HTTP layer under hostile clients, on raw loopback sockets against the server loop `vnfm
//! serve` runs (`serve_http1_limited` over the whole router): request heads hyper cannot parse
//! answered with ProblemDetails, the `Version` header, one address holding connections open
//! while other clients are served, the back-off after failed client secrets, and identity
//! checked before size.

use crate::support;

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use axum::http::{Method, StatusCode};
use base64::Engine;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use vnfm_api::{AuthBackoff, ServerLimits};

/// The client address of the "other" clients; hostile ones use 127.0.0.2.
const HOSTILE: &str = "127.0.0.2";

/// A harness whose router is served on a loopback port with `limits`.
async fn serve(limits: ServerLimits) -> (Harness, SocketAddr) {
    let backoff = limits.auth_backoff.clone();
    let h = Harness::with(|o| o.limits.auth_backoff = backoff).await;
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = tcp.local_addr().unwrap();
    let app = h.app.clone();
    tokio::spawn(async move {
        let _ =
            vnfm_api::server::serve_http1_limited(tcp, app, std::future::pending(), &limits).await;
    });
    (h, addr)
}

/// A connection to `addr` from the loopback address `from`.
async fn connect_from(from: &str, addr: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    let from: IpAddr = from.parse().unwrap();
    socket.bind(SocketAddr::new(from, 0)).unwrap();
    socket.connect(addr).await.unwrap()
}

/// An answer read off the wire.
struct Answer {
    status: u16,
    head: String,
    body: String,
}

impl Answer {
    fn problem(&self, status: u16) -> serde_json::Value {
        assert_eq!(self.status, status, "{}\r\n\r\n{}", self.head, self.body);
        assert!(
            self.head
                .to_ascii_lowercase()
                .contains("content-type: application/problem+json"),
            "{}",
            self.head
        );
        let p: serde_json::Value = serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body));
        assert_eq!(p["status"], status, "{p}");
        assert!(p["detail"].as_str().is_some_and(|d| !d.is_empty()), "{p}");
        p
    }

    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    }
}

/// Reads one answer (head and a `Content-Length` body) from `stream`.
async fn read_answer(stream: &mut TcpStream) -> Answer {
    let mut raw = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        if let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&raw[..end]).into_owned();
            let length: usize = head
                .lines()
                .find_map(|l| {
                    let (n, v) = l.split_once(':')?;
                    n.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse().ok())
                        .flatten()
                })
                .unwrap_or(0);
            if raw.len() >= end + 4 + length {
                let status = head
                    .split(' ')
                    .nth(1)
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0);
                let body = String::from_utf8_lossy(&raw[end + 4..end + 4 + length]).into_owned();
                return Answer { status, head, body };
            }
        }
        let n = tokio::time::timeout(Duration::from_secs(30), stream.read(&mut buf))
            .await
            .expect("no answer within 30 s")
            .unwrap_or(0);
        assert!(
            n > 0,
            "the connection closed after {:?}",
            String::from_utf8_lossy(&raw)
        );
        raw.extend_from_slice(&buf[..n]);
    }
}

/// Sends `request` on a new connection while reading its answer (the server may answer before
/// the request is all sent).
async fn exchange(addr: SocketAddr, request: Vec<u8>) -> Answer {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    let writing = tokio::spawn(async move {
        // The server may close before the rest is sent: that is not the test's failure.
        let _ = writer.write_all(&request).await;
        writer
    });
    let mut raw = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(30), reader.read_to_end(&mut raw)).await;
    let _ = writing.await;
    assert!(read.is_ok(), "the server neither answered nor closed");
    let text = String::from_utf8_lossy(&raw);
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        panic!("no answer: {text:?}");
    };
    let (head, body) = (head.to_owned(), body.to_owned());
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Answer { status, head, body }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_hyper_cannot_parse_are_answered_with_problem_details() {
    let (_h, addr) = serve(ServerLimits::default()).await;
    let long_filter = format!(
        "GET /vnflcm/v2/vnf_instances?filter=(eq,vnfInstanceName,{}) HTTP/1.1\r\nHost: x\r\n\r\n",
        "a".repeat(100 * 1024)
    );
    let mut large_head = String::from("GET /healthz HTTP/1.1\r\nHost: x\r\n");
    for i in 0..1024 {
        large_head.push_str(&format!("X-Filler-{i}: {}\r\n", "b".repeat(1000)));
    }
    large_head.push_str("\r\n");
    let mut many = String::from("GET /healthz HTTP/1.1\r\nHost: x\r\n");
    for i in 0..1000 {
        many.push_str(&format!("X-F{i}: {i}\r\n"));
    }
    many.push_str("\r\n");
    // The start of a TLS 1.2 ClientHello record.
    let tls = vec![
        0x16, 0x03, 0x01, 0x00, 0xa5, 0x01, 0x00, 0x00, 0xa1, 0x03, 0x03, 0x5b, 0x90, 0x9d, 0x9b,
        0x72, 0x0b, 0xbc, 0x0c, 0xbc, 0x2b, 0x92, 0xa8, 0x48, 0x97, 0xcf, 0xbd, 0x39, 0x04, 0xcc,
    ];
    let cases: Vec<(&str, Vec<u8>, u16)> = vec![
        ("a 100 KB filter", long_filter.into_bytes(), 414),
        ("1 MB of header fields", large_head.into_bytes(), 431),
        ("1,000 header fields", many.into_bytes(), 431),
        (
            "a garbage request line",
            b"\x01\x02 garbage \xff\r\n\r\n".to_vec(),
            400,
        ),
        ("HTTP/0.9", b"GET /healthz\r\n".to_vec(), 400),
        ("TLS on the plain port", tls, 400),
    ];
    for (what, request, status) in cases {
        let answer = exchange(addr, request).await;
        let p = answer.problem(status);
        assert_eq!(
            answer.header("connection").as_deref(),
            Some("close"),
            "{what}"
        );
        if what.starts_with("TLS") {
            assert!(
                p["detail"].as_str().unwrap().contains("TLS handshake"),
                "{p}"
            );
        }
    }
    // The server still serves.
    let answer = exchange(
        addr,
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".to_vec(),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.head);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_request_after_served_ones_on_one_connection_gets_problem_details() {
    let (_h, addr) = serve(ServerLimits::default()).await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    for _ in 0..3 {
        stream
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        assert_eq!(read_answer(&mut stream).await.status, 200);
    }
    stream
        .write_all(b"GET / HTTP/1.1\r\nBad Header\r\n\r\n")
        .await
        .unwrap();
    read_answer(&mut stream).await.problem(400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_the_api_does_not_offer_is_refused_with_406() {
    let (h, addr) = serve(ServerLimits::default()).await;
    let long = format!("2.{}", "9".repeat(5000));
    for (version, status) in [
        ("2.9.9", 406),
        ("2", 406),
        (long.as_str(), 406),
        ("2.1.0", 406),
        ("2.0.0", 200),
    ] {
        let request = format!(
            "GET /vnflcm/v2/vnf_instances HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nVersion: {version}\r\nConnection: close\r\n\r\n",
            h.token
        );
        let answer = exchange(addr, request.into_bytes()).await;
        assert_eq!(
            answer.status,
            status,
            "{}: {}",
            &version[..5.min(version.len())],
            answer.body
        );
        assert_eq!(answer.header("version").as_deref(), Some("2.0.0"));
        if status == 406 {
            let p = answer.problem(406);
            let detail = p["detail"].as_str().unwrap();
            assert!(detail.contains("it serves 2.0.0"), "{detail}");
            assert!(detail.len() < 400, "{detail}");
        }
    }
    // v1 serves an earlier minor version of its major version, and no other major version.
    for (version, status) in [
        ("1.2.0", StatusCode::OK),
        ("2.0.0", StatusCode::NOT_ACCEPTABLE),
    ] {
        let r = h
            .raw(
                Method::GET,
                "/vnflcm/v1/vnf_instances",
                &[
                    ("authorization", &format!("Bearer {}", h.token)),
                    ("version", version),
                ],
                vec![],
            )
            .await;
        assert_eq!(r.status, status, "{version}");
    }
}

/// `/healthz` and an authenticated request, each on a new connection from 127.0.0.1.
async fn other_client_is_served(h: &Harness, addr: SocketAddr) {
    let requests = [
        "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".to_owned(),
        format!(
            "GET /vnflcm/v2/vnf_instances HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nVersion: 2.0.0\r\nConnection: close\r\n\r\n",
            h.token
        ),
    ];
    for request in requests {
        // Generous bound: without the limits these waited for the 30 s header timeout.
        let answer =
            tokio::time::timeout(Duration::from_secs(5), exchange(addr, request.into_bytes()))
                .await
                .expect(
                    "another client's request was not answered while one address held connections",
                );
        assert_eq!(answer.status, 200, "{}", answer.body);
    }
}

/// Whether the server closed `stream` (it reads end of file, or a reset).
async fn closed(stream: &mut TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 64];
    matches!(
        tokio::time::timeout(within, stream.read(&mut buf)).await,
        Ok(Ok(0)) | Ok(Err(_))
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_address_holding_connections_open_does_not_stall_other_clients() {
    // The first-request timeout is out of the way: only the per-address limit is tested.
    let (h, addr) = serve(ServerLimits {
        max_connections: 64,
        max_connections_per_peer: 16,
        first_request_timeout: Duration::from_secs(60),
        header_read_timeout: Duration::from_secs(60),
        ..ServerLimits::default()
    })
    .await;
    let mut held = Vec::new();
    for _ in 0..64 {
        held.push(connect_from(HOSTILE, addr).await);
    }
    other_client_is_served(&h, addr).await;
    // The address holds its 16; the server closed the rest at once.
    let mut refused = 0;
    for stream in &mut held {
        if closed(stream, Duration::from_millis(200)).await {
            refused += 1;
        }
    }
    assert_eq!(refused, 64 - 16);
}

/// A server of 8 connection slots, no limit per address and no timeout in the way, and `n`
/// connections from `from` without a request, accepted in order (20 ms apart).
async fn eight_slots_with_connections_from(
    from: &str,
    n: usize,
) -> (Harness, SocketAddr, Vec<TcpStream>) {
    let (h, addr) = serve(ServerLimits {
        max_connections: 8,
        max_connections_per_peer: 0,
        first_request_timeout: Duration::from_secs(60),
        header_read_timeout: Duration::from_secs(60),
        ..ServerLimits::default()
    })
    .await;
    let mut held = Vec::new();
    for _ in 0..n {
        held.push(connect_from(from, addr).await);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (h, addr, held)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_server_closes_the_oldest_connection_without_a_request_for_a_new_one() {
    // No limit per address: many addresses (here one) fill every slot.
    let (h, addr, mut held) = eight_slots_with_connections_from(HOSTILE, 8).await;
    other_client_is_served(&h, addr).await;
    assert!(closed(&mut held[0], Duration::from_secs(5)).await);
    assert!(!closed(&mut held[7], Duration::from_millis(200)).await);
}

/// Issue 67: when every slot is taken, a new connection from an address that holds more than
/// an equal share of them is closed at once instead of making room (a flood of reconnections
/// cannot make the server close connections for it); one from an address below its share
/// still makes room.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_server_closes_a_new_connection_from_an_address_over_its_share() {
    let (h, addr, mut held) = eight_slots_with_connections_from(HOSTILE, 6).await;
    let _others = [
        connect_from("127.0.0.3", addr).await,
        connect_from("127.0.0.3", addr).await,
    ];
    tokio::time::sleep(Duration::from_millis(100)).await;
    // 7 of 8 slots over two addresses: over its share of 4; closed, and nothing else.
    let mut flood = connect_from(HOSTILE, addr).await;
    assert!(closed(&mut flood, Duration::from_secs(5)).await);
    assert!(!closed(&mut held[0], Duration::from_millis(200)).await);
    // A third address is below its share: the oldest connection without a request makes room.
    other_client_is_served(&h, addr).await;
    assert!(closed(&mut held[0], Duration::from_secs(5)).await);
}

/// Issue 67: a new connection that must wait for a slot waits on its own, and the server goes
/// on taking others meanwhile: with every slot busy with bodies that keep arriving, a waiting
/// client from one address does not keep a connection from an address over its share from
/// being closed at once (it waited, unaccepted, behind the first one before).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_waiting_for_a_slot_does_not_stop_the_server_taking_connections() {
    let (h, addr) = serve(ServerLimits {
        max_connections: 4,
        max_connections_per_peer: 0,
        first_request_timeout: Duration::from_secs(60),
        header_read_timeout: Duration::from_secs(60),
        ..ServerLimits::default()
    })
    .await;
    let head = b"POST /oauth2/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\ng";
    let mut busy = Vec::new();
    for from in [HOSTILE, HOSTILE, HOSTILE, "127.0.0.4"] {
        let mut stream = connect_from(from, addr).await;
        stream.write_all(head).await.unwrap();
        busy.push(stream);
    }
    // Their bodies keep arriving (a byte every 200 ms), so none is closed for room.
    let trickling = tokio::spawn(async move {
        for _ in 0..25 {
            tokio::time::sleep(Duration::from_millis(200)).await;
            for stream in &mut busy {
                stream.write_all(b"a").await.unwrap();
            }
        }
        drop(busy);
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut waiting = connect_from("127.0.0.3", addr).await;
    waiting
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    // 4 of 4 slots over three addresses: over its share, closed at once.
    let mut flood = connect_from(HOSTILE, addr).await;
    assert!(
        closed(&mut flood, Duration::from_secs(2)).await,
        "the server took no connection while a client waited for a slot"
    );
    assert!(
        !trickling.is_finished(),
        "the bodies stopped before the check"
    );
    // Once the busy connections end, the waiting client is served.
    trickling.await.unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(20), read_answer(&mut waiting))
        .await
        .expect("the waiting client was not served once slots freed");
    assert_eq!(answer.status, 200, "{}", answer.body);
    drop(h);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_without_a_request_is_closed_after_the_first_request_timeout() {
    let (_h, addr) = serve(ServerLimits {
        first_request_timeout: Duration::from_millis(300),
        ..ServerLimits::default()
    })
    .await;
    let mut silent = TcpStream::connect(addr).await.unwrap();
    let mut served = TcpStream::connect(addr).await.unwrap();
    served
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    assert_eq!(read_answer(&mut served).await.status, 200);
    assert!(closed(&mut silent, Duration::from_secs(10)).await);
    // A connection that sent a request stays open (keep-alive) past that timeout.
    tokio::time::sleep(Duration::from_millis(600)).await;
    served
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    assert_eq!(read_answer(&mut served).await.status, 200);
}

/// `POST /oauth2/token` from `from` with a client secret.
async fn token_from(addr: SocketAddr, from: &str, client: &str, secret: &str) -> Answer {
    let form = format!("grant_type=client_credentials&client_id={client}&client_secret={secret}");
    let request = format!(
        "POST /oauth2/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{form}",
        form.len()
    );
    let mut stream = connect_from(from, addr).await;
    stream.write_all(request.as_bytes()).await.unwrap();
    read_answer(&mut stream).await
}

/// `GET /vnflcm/v2/vnf_instances` from `from` with HTTP Basic.
async fn basic_from(addr: SocketAddr, from: &str, client: &str, secret: &str) -> Answer {
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{client}:{secret}"));
    let request = format!(
        "GET /vnflcm/v2/vnf_instances HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {basic}\r\nVersion: 2.0.0\r\nConnection: close\r\n\r\n"
    );
    let mut stream = connect_from(from, addr).await;
    stream.write_all(request.as_bytes()).await.unwrap();
    read_answer(&mut stream).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_client_secrets_back_off_per_client_and_address_without_locking_the_client_out() {
    let (h, addr) = serve(ServerLimits {
        auth_backoff: AuthBackoff {
            max: Duration::from_secs(60),
            free_failures: 2,
            free_failures_per_peer: 20,
        },
        ..ServerLimits::default()
    })
    .await;
    let client = h.state.bootstrap_client().unwrap();
    let (id, secret) = (client.client_id.as_str(), client.client_secret.expose());
    // Two free failures (401), then back-off: refused without a verdict, each refusal
    // lengthening it (1 s, 2 s, ... 60 s).
    let mut statuses = Vec::new();
    for _ in 0..10 {
        statuses.push(token_from(addr, HOSTILE, id, "wrong").await.status);
    }
    assert_eq!(&statuses[..3], &[401, 401, 401], "{statuses:?}");
    assert_eq!(statuses[9], 429, "{statuses:?}");
    // In the back-off even the right secret is refused from that address.
    let refused = token_from(addr, HOSTILE, id, secret).await;
    assert_eq!(refused.status, 429, "{}", refused.body);
    let seconds: u64 = refused.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&seconds), "{seconds}");
    let refused = basic_from(addr, HOSTILE, id, secret).await;
    let p = refused.problem(429);
    assert!(p["detail"].as_str().unwrap().contains("retry in"), "{p}");
    assert!(refused.header("retry-after").is_some(), "{}", refused.head);
    // The real client at its own address is not locked out.
    assert_eq!(token_from(addr, "127.0.0.1", id, secret).await.status, 200);
    assert_eq!(basic_from(addr, "127.0.0.1", id, secret).await.status, 200);
    // Other client ids from the attacker's address: 401 until the address has failed 20
    // times (12 so far), then the whole address backs off.
    let a = basic_from(addr, HOSTILE, "guess-0", "x").await;
    assert_eq!(a.status, 401, "{}", a.body);
    for i in 1..14 {
        basic_from(addr, HOSTILE, &format!("guess-{i}"), "x").await;
    }
    basic_from(addr, HOSTILE, "never-tried", "x")
        .await
        .problem(429);
    assert_eq!(token_from(addr, "127.0.0.3", id, secret).await.status, 200);
}

#[tokio::test]
async fn an_oversize_body_without_credentials_is_refused_as_unauthenticated_first() {
    let h = Harness::new().await;
    let huge = (64u64 * 1024 * 1024 * 1024).to_string();
    let (package, _) = h.onboard(zip_dir(std::path::Path::new(HELLO))).await;
    let upload = format!("/vnfpkgm/v2/vnf_packages/{package}/package_content");
    let bearer = format!("Bearer {}", h.token);
    for (method, uri, content_type, length, refused) in [
        (
            Method::POST,
            "/vnflcm/v2/vnf_instances",
            "application/json",
            huge.as_str(),
            413,
        ),
        (
            Method::PUT,
            upload.as_str(),
            "application/zip",
            huge.as_str(),
            413,
        ),
        (Method::PUT, upload.as_str(), "text/plain", "1000", 415),
        (
            Method::POST,
            "/vnffm/v1/alertmanager",
            "application/json",
            huge.as_str(),
            413,
        ),
    ] {
        let headers = [
            ("content-type", content_type),
            ("content-length", length),
            ("version", "2.0.0"),
        ];
        let r = h.raw(method.clone(), uri, &headers, vec![]).await;
        r.problem(401);
        let mut authenticated = headers.to_vec();
        authenticated.push(("authorization", bearer.as_str()));
        let r = h.raw(method, uri, &authenticated, vec![]).await;
        r.problem(refused);
    }
    // The token endpoint needs no prior identity: its size is refused at once.
    let r = h
        .raw(
            Method::POST,
            "/oauth2/token",
            &[
                ("content-type", "application/x-www-form-urlencoded"),
                ("content-length", huge.as_str()),
            ],
            vec![],
        )
        .await;
    assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE);
}
