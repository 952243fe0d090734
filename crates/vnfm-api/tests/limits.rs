//! What one client can make the server hold: bodies refused by their `Content-Length` (and a
//! package upload by its `Content-Type`) before a byte of them is read, connections beyond
//! the limit left waiting while every one is busy, kept-alive ones and stalled bodies closed
//! to make room, and requests cut at their deadline.

use crate::support;

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{Method, Request, StatusCode};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower::ServiceExt;
use vnfm_api::ServerLimits;

/// A request body that records whether anything polled it, and never ends.
struct Untouched(Arc<AtomicBool>);

impl futures_core::Stream for Untouched {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.store(true, Ordering::SeqCst);
        Poll::Pending
    }
}

async fn refused_unread(
    h: &Harness,
    method: Method,
    uri: &str,
    headers: &[(&str, &str)],
) -> serde_json::Value {
    let polled = Arc::new(AtomicBool::new(false));
    let mut b = Request::builder().method(method).uri(uri);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    let auth = format!("Bearer {}", h.token);
    let request = b
        .header("authorization", auth)
        .body(Body::from_stream(Untouched(polled.clone())))
        .unwrap();
    let response = h.app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    assert!(!polled.load(Ordering::SeqCst), "{uri}: the body was read");
    let p: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(p["status"], status.as_u16(), "{p}");
    p
}

#[tokio::test]
async fn a_claimed_content_length_beyond_the_route_limit_is_refused_before_reading() {
    let h = Harness::new().await;
    let p = refused_unread(
        &h,
        Method::POST,
        "/oauth2/token",
        &[
            ("content-type", "application/x-www-form-urlencoded"),
            ("content-length", "1073741824"),
        ],
    )
    .await;
    assert_eq!(p["status"], 413, "{p}");
    assert!(p["detail"].as_str().unwrap().contains("16384"), "{p}");
    // 1 MiB and one byte on a JSON route.
    let p = refused_unread(
        &h,
        Method::POST,
        "/vnflcm/v2/vnf_instances",
        &[
            ("content-type", "application/json"),
            ("version", "2.0.0"),
            ("content-length", "1048577"),
        ],
    )
    .await;
    assert_eq!(p["status"], 413, "{p}");
    // Package content may be larger than JSON, but not beyond --max-package-mib.
    let (id, _) = h.onboard(zip_dir(std::path::Path::new(HELLO))).await;
    let p = refused_unread(
        &h,
        Method::PUT,
        &format!("/vnfpkgm/v2/vnf_packages/{id}/package_content"),
        &[
            ("content-type", "application/zip"),
            ("version", "2.0.0"),
            ("content-length", &(512u64 * 1024 * 1024 + 1).to_string()),
        ],
    )
    .await;
    assert_eq!(p["status"], 413, "{p}");
}

#[tokio::test]
async fn a_package_upload_of_the_wrong_content_type_is_refused_before_reading() {
    let h = Harness::new().await;
    let r = h
        .call(
            Method::POST,
            "/vnfpkgm/v2/vnf_packages",
            Some(serde_json::json!({})),
        )
        .await;
    let id = r.json()["id"].as_str().unwrap().to_owned();
    let p = refused_unread(
        &h,
        Method::PUT,
        &format!("/vnfpkgm/v2/vnf_packages/{id}/package_content"),
        &[
            ("content-type", "text/plain"),
            ("version", "2.0.0"),
            ("content-length", "1000000"),
        ],
    )
    .await;
    assert_eq!(p["status"], 415, "{p}");
}

const HEALTH: &[u8] = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";

async fn status_line(stream: &mut tokio::net::TcpStream) -> String {
    let mut buf = vec![0u8; 1024];
    let n = stream.read(&mut buf).await.unwrap();
    String::from_utf8_lossy(&buf[..n])
        .lines()
        .next()
        .unwrap_or("")
        .to_owned()
}

/// Serves `h`'s router on a loopback port with `limits`, as `vnfm serve` does.
async fn serve_limited(h: &Harness, limits: ServerLimits) -> std::net::SocketAddr {
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = tcp.local_addr().unwrap();
    let app = h.app.clone();
    tokio::spawn(async move {
        let _ =
            vnfm_api::server::serve_http1_limited(tcp, app, std::future::pending(), &limits).await;
    });
    addr
}

/// Reads until the connection ends or `limit` passes; `None` if it is still open then.
async fn read_to_end_within(stream: &mut tokio::net::TcpStream, limit: Duration) -> Option<String> {
    let mut all = Vec::new();
    match tokio::time::timeout(limit, stream.read_to_end(&mut all)).await {
        Ok(_) => Some(String::from_utf8_lossy(&all).into_owned()),
        Err(_) => None,
    }
}

/// `h` served with one connection slot, taken by a `POST /oauth2/token` whose body (100 bytes
/// announced) has begun with `begun`; then a second connection from the same client, sending
/// `GET /healthz`: the first connection and the second.
async fn one_slot_taken_by_a_body(
    h: &Harness,
    begun: &[u8],
) -> (tokio::net::TcpStream, tokio::net::TcpStream) {
    let addr = serve_limited(
        h,
        ServerLimits {
            max_connections: 1,
            ..ServerLimits::default()
        },
    )
    .await;
    let mut first = tokio::net::TcpStream::connect(addr).await.unwrap();
    first
        .write_all(
            b"POST /oauth2/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\n",
        )
        .await
        .unwrap();
    first.write_all(begun).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut second = tokio::net::TcpStream::connect(addr).await.unwrap();
    second.write_all(HEALTH).await.unwrap();
    (first, second)
}

/// A connection in the middle of a request whose body keeps arriving (a byte every 200 ms)
/// is never closed to make room: a new connection waits until it closes.
#[tokio::test]
async fn connections_beyond_the_limit_wait_while_every_one_is_busy() {
    let h = Harness::new().await;
    let (mut first, mut second) = one_slot_taken_by_a_body(&h, b"grant_type").await;
    let closed = Arc::new(AtomicBool::new(false));
    let closing = closed.clone();
    tokio::spawn(async move {
        // Longer than a body may be awaited before its connection is closable for room.
        for _ in 0..10 {
            tokio::time::sleep(Duration::from_millis(200)).await;
            first.write_all(b"&").await.unwrap();
        }
        closing.store(true, Ordering::SeqCst);
        drop(first);
    });
    assert!(status_line(&mut second).await.contains("200"));
    assert!(
        closed.load(Ordering::SeqCst),
        "the second connection was served while the first was busy"
    );
    assert_eq!(
        h.call(Method::GET, "/healthz", None).await.status,
        StatusCode::OK
    );
}

/// Issue 67: a connection whose request body stopped arriving (a slow-body attack: a byte
/// now and then) is closed to make room for a new client once its body has been awaited
/// for a second, though it is in the middle of a request.
#[tokio::test]
async fn a_request_body_that_stopped_arriving_makes_room_for_a_new_client() {
    let h = Harness::new().await;
    let (mut slow, mut newcomer) = one_slot_taken_by_a_body(&h, b"g").await;
    // Well within the slow request's own deadline (--request-timeout, 60 s), which alone
    // would have freed the slot.
    let line = tokio::time::timeout(Duration::from_secs(20), status_line(&mut newcomer))
        .await
        .expect("the new client was not answered while a stalled body held the only slot");
    assert!(line.contains("200"), "{line}");
    assert_eq!(
        read_to_end_within(&mut slow, Duration::from_secs(5))
            .await
            .as_deref(),
        Some(""),
        "the slow body's connection is still open"
    );
}

/// Issue 67: kept-alive connections that have each sent one request and hold every slot do
/// not keep a new client out: the idlest is closed to make room, and the new client is
/// answered.
#[tokio::test]
async fn kept_alive_connections_make_room_for_a_new_client() {
    const SLOTS: usize = 20;
    let h = Harness::new().await;
    let addr = serve_limited(
        &h,
        ServerLimits {
            max_connections: SLOTS,
            ..ServerLimits::default()
        },
    )
    .await;
    // With credentials, so that a crowded server does not close them after the answer.
    let kept = format!(
        "GET /healthz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n\r\n",
        h.token
    );
    let mut held = Vec::new();
    for _ in 0..SLOTS {
        let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
        c.write_all(kept.as_bytes()).await.unwrap();
        let line = status_line(&mut c).await;
        assert!(line.contains("200"), "{line}");
        held.push(c);
    }
    let mut newcomer = tokio::net::TcpStream::connect(addr).await.unwrap();
    newcomer.write_all(HEALTH).await.unwrap();
    let answered = tokio::time::timeout(Duration::from_secs(20), status_line(&mut newcomer)).await;
    let line = answered
        .expect("the new client was not answered while kept-alive connections held every slot");
    assert!(line.contains("200"), "{line}");
    // The idlest of them, the first answered, was closed for it.
    let first = read_to_end_within(&mut held[0], Duration::from_secs(20)).await;
    assert_eq!(
        first.as_deref(),
        Some(""),
        "the idlest connection is still open"
    );
}

/// Issue 67: once half the slots are taken, the answer to a request without credentials
/// closes its connection, so that anonymous requests cannot keep connections open; one with
/// credentials is kept alive.
#[tokio::test]
async fn a_crowded_server_closes_connections_after_anonymous_answers() {
    let h = Harness::new().await;
    let addr = serve_limited(
        &h,
        ServerLimits {
            max_connections: 2,
            ..ServerLimits::default()
        },
    )
    .await;
    let mut anonymous = tokio::net::TcpStream::connect(addr).await.unwrap();
    anonymous.write_all(HEALTH).await.unwrap();
    let text = read_to_end_within(&mut anonymous, Duration::from_secs(20))
        .await
        .expect("the anonymous connection was kept alive");
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.to_lowercase().contains("connection: close"), "{text}");
    let mut known = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "GET /healthz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n\r\n",
        h.token
    );
    known.write_all(request.as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 4096];
    let n = known.read(&mut buf).await.unwrap();
    let text = String::from_utf8_lossy(&buf[..n]).to_lowercase();
    assert!(text.starts_with("http/1.1 200"), "{text}");
    assert!(!text.contains("connection: close"), "{text}");
    assert_eq!(
        read_to_end_within(&mut known, Duration::from_millis(300)).await,
        None,
        "the connection with credentials was closed"
    );
}

/// Issue 67: a body sent a byte at a time, each within the pause allowed between two chunks,
/// is cut at the request's total deadline: 408 with ProblemDetails, and the connection is
/// closed.
#[tokio::test]
async fn a_body_trickling_in_is_cut_at_the_request_deadline() {
    let h = Harness::new().await;
    let addr = serve_limited(
        &h,
        ServerLimits {
            request_timeout: Duration::from_secs(1),
            ..ServerLimits::default()
        },
    )
    .await;
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    writer
        .write_all(
            b"POST /oauth2/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\n",
        )
        .await
        .unwrap();
    // One byte every 100 ms: well within the 30 s allowed between two chunks.
    let trickle = tokio::spawn(async move {
        for _ in 0..1000 {
            if writer.write_all(b"a").await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    let mut all = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(30), reader.read_to_end(&mut all)).await;
    trickle.abort();
    assert!(read.is_ok(), "the trickling request is still open");
    let text = String::from_utf8_lossy(&all).to_lowercase();
    assert!(text.starts_with("http/1.1 408"), "{text}");
    assert!(
        text.contains("content-type: application/problem+json"),
        "{text}"
    );
    assert!(text.contains("\"status\":408"), "{text}");
}

#[tokio::test]
async fn a_client_that_never_finishes_its_headers_is_disconnected() {
    let h = Harness::new().await;
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = tcp.local_addr().unwrap();
    let limits = ServerLimits {
        header_read_timeout: Duration::from_millis(200),
        ..ServerLimits::default()
    };
    let app = h.app.clone();
    tokio::spawn(async move {
        let _ =
            vnfm_api::server::serve_http1_limited(tcp, app, std::future::pending(), &limits).await;
    });
    let mut slow = tokio::net::TcpStream::connect(addr).await.unwrap();
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    // The server ends the connection (at most a 408 first); without the timer it would wait
    // for the rest of the headers forever.
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(30), slow.read_to_end(&mut rest)).await;
    assert!(read.is_ok(), "the connection is still open");
    let text = String::from_utf8_lossy(&rest);
    assert!(
        text.is_empty() || text.starts_with("HTTP/1.1 408"),
        "{text}"
    );
}

#[tokio::test]
async fn a_body_that_stops_arriving_is_given_up() {
    let h = Harness::with(|o| o.limits.body_read_timeout = Duration::from_millis(200)).await;
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = tcp.local_addr().unwrap();
    let app = h.app.clone();
    tokio::spawn(async move {
        let _ = vnfm_api::server::serve_http1(tcp, app, std::future::pending()).await;
    });
    let mut slow = tokio::net::TcpStream::connect(addr).await.unwrap();
    slow.write_all(
        b"POST /oauth2/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\ngrant_type",
    )
    .await
    .unwrap();
    // Without the body timer the server would wait for the other 90 bytes forever.
    let mut buf = vec![0u8; 4096];
    let read = tokio::time::timeout(Duration::from_secs(30), slow.read(&mut buf)).await;
    let n = read
        .expect("the server is still waiting for the body")
        .unwrap_or(0);
    let text = String::from_utf8_lossy(&buf[..n]);
    assert!(text.is_empty() || text.starts_with("HTTP/1.1 4"), "{text}");
}

/// Heads beyond the server's own limits, but within hyper's, are refused by the router with
/// ProblemDetails that give the counts (`http_layer` has the heads beyond hyper's limits).
#[tokio::test]
async fn long_targets_and_many_headers_are_answered_with_problem_details() {
    let h = Harness::new().await;
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = tcp.local_addr().unwrap();
    let app = h.app.clone();
    tokio::spawn(async move {
        let _ = vnfm_api::server::serve_http1(tcp, app, std::future::pending()).await;
    });
    let long_target = format!(
        "GET /vnflcm/v2/vnf_instances?filter={} HTTP/1.1\r\nHost: x\r\n\r\n",
        "a".repeat(9000)
    );
    let mut many = String::from("GET /healthz HTTP/1.1\r\nHost: x\r\n");
    for i in 0..150 {
        many.push_str(&format!("X-Filler-{i}: {i}\r\n"));
    }
    many.push_str("\r\n");
    for (request, status) in [(long_target, "414"), (many, "431")] {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        let mut buf = vec![0u8; 4096];
        while !String::from_utf8_lossy(&answer).contains("\"status\"") {
            let n = stream.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            answer.extend_from_slice(&buf[..n]);
        }
        let text = String::from_utf8_lossy(&answer).to_lowercase();
        assert!(text.starts_with(&format!("http/1.1 {status}")), "{text}");
        assert!(
            text.contains("content-type: application/problem+json"),
            "{text}"
        );
    }
}
