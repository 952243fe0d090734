//! How the client fails when no Prometheus answers, or something else does: an unreachable
//! server, one that never answers, an HTTP error page; and that credentials are sent but
//! never shown. Needs nothing but loopback.

use std::time::{Duration, Instant};

use axum::Router;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use vnfm_prometheus::{Auth, ClientOptions, Error, InstantResult, PrometheusClient};

fn client(url: &str, timeout: Duration, auth: Option<Auth>) -> PrometheusClient {
    PrometheusClient::new(
        url,
        ClientOptions {
            timeout,
            auth,
            ..ClientOptions::default()
        },
    )
    .unwrap()
}

async fn serve(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

#[tokio::test]
async fn nobody_listening_is_unreachable() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}");
    let e = client(&url, Duration::from_secs(5), None)
        .query("up", None)
        .await
        .unwrap_err();
    match &e {
        Error::Unreachable { url: called, .. } => {
            assert_eq!(called, &format!("{url}/api/v1/query"))
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        e.to_string(),
        format!("Prometheus at {url}/api/v1/query is unreachable")
    );
    assert!(std::error::Error::source(&e).is_some(), "the cause is kept");
}

#[tokio::test]
async fn a_server_that_never_answers_times_out() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    // Accepts connections and keeps them open without a word.
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let started = Instant::now();
    let e = client(&url, Duration::from_millis(500), None)
        .query("up", None)
        .await
        .unwrap_err();
    assert!(
        matches!(&e, Error::Timeout { timeout, .. } if *timeout == Duration::from_millis(500)),
        "{e:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn an_error_page_is_an_http_error() {
    let url = serve(Router::new().route(
        "/api/v1/query",
        post(|| async { (StatusCode::BAD_GATEWAY, "upstream unavailable") }),
    ))
    .await;
    match client(&url, Duration::from_secs(5), None)
        .query("up", None)
        .await
    {
        Err(Error::Http { status, body, .. }) => {
            assert_eq!(status, 502);
            assert_eq!(body, "upstream unavailable");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn credentials_are_sent_and_never_shown() {
    let app = Router::new().route(
        "/prom/api/v1/query",
        post(|headers: HeaderMap, body: String| async move {
            let auth = headers.get("authorization").and_then(|v| v.to_str().ok());
            if auth != Some("Bearer t0ken-s3cret") {
                return (StatusCode::UNAUTHORIZED, "who are you?".to_string());
            }
            assert!(body.contains("query=up%7Bjob%3D%22a%22%7D"), "{body}");
            (
                StatusCode::OK,
                r#"{"status":"success","data":{"resultType":"vector","result":[
                    {"metric":{"job":"a"},"value":[1767607200,"1"]}]}}"#
                    .to_string(),
            )
        }),
    );
    let url = format!("{}/prom", serve(app).await);
    let token = Some(Auth::Bearer {
        token: "t0ken-s3cret".into(),
    });
    let answer = client(&url, Duration::from_secs(5), token)
        .query(r#"up{job="a"}"#, None)
        .await
        .unwrap();
    let InstantResult::Vector(v) = answer.result else {
        panic!("not a vector")
    };
    assert_eq!(v[0].value, 1.0);
    assert_eq!(v[0].at.to_string(), "2026-01-05T10:00:00Z");

    let wrong = client(
        &url,
        Duration::from_secs(5),
        Some(Auth::Basic {
            username: "alice".into(),
            password: "pa55-s3cret".into(),
        }),
    );
    let e = wrong.query("up", None).await.unwrap_err();
    assert!(matches!(&e, Error::Http { status: 401, .. }), "{e:?}");
    for shown in [e.to_string(), format!("{e:?}"), format!("{wrong:?}")] {
        assert!(!shown.contains("s3cret"), "{shown}");
    }
}
