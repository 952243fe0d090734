//! A notification endpoint and OAuth 2.0 token endpoint on 127.0.0.1 for tests.
//!
//! `POST /cb` records each request and answers from a script of status codes (then a
//! default), after checking the configured authentication; `GET /cb` is the subscription test
//! (answers `get_status`); `POST /token` issues client-credentials tokens with a configurable
//! lifetime.

#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU16, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use base64::Engine as _;

/// One request the endpoint received.
#[derive(Debug, Clone)]
pub struct Received {
    pub authorization: Option<String>,
    pub content_type: Option<String>,
    pub body: serde_json::Value,
    /// The status the endpoint answered.
    pub status: u16,
}

#[derive(Default)]
pub struct OAuth {
    pub client_id: String,
    pub client_secret: String,
    pub lifetime: Duration,
    /// Token -> expiry.
    pub issued: HashMap<String, Instant>,
}

#[derive(Default)]
pub struct Endpoint {
    pub received: Mutex<Vec<Received>>,
    pub script: Mutex<VecDeque<u16>>,
    pub default_status: AtomicU16,
    pub get_status: AtomicU16,
    pub delay_ms: AtomicU64,
    pub basic: Mutex<Option<(String, String)>>,
    pub oauth: Mutex<Option<OAuth>>,
    pub tokens_issued: AtomicUsize,
    pub rejected_401: AtomicUsize,
    /// Deliveries in progress per (notification id, subscription), and the most ever seen at
    /// once.
    in_flight: Mutex<HashMap<String, usize>>,
    pub max_same_in_flight: AtomicUsize,
}

pub struct Server {
    pub addr: SocketAddr,
    pub endpoint: Arc<Endpoint>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    pub async fn start() -> Server {
        Server::start_at("127.0.0.1:0".parse().unwrap()).await
    }

    /// The endpoint listening on `addr` (a port chosen earlier, nobody listening on it until
    /// now: a subscriber coming back).
    pub async fn start_at(addr: SocketAddr) -> Server {
        let endpoint = Arc::new(Endpoint::default());
        endpoint.default_status.store(204, Ordering::SeqCst);
        endpoint.get_status.store(204, Ordering::SeqCst);
        let app = Router::new()
            .route("/cb", post(callback).get(test_get))
            .route("/token", post(token))
            .with_state(endpoint.clone());
        let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Server {
            addr,
            endpoint,
            task,
        }
    }

    pub fn callback(&self) -> String {
        format!("http://{}/cb", self.addr)
    }

    pub fn token_endpoint(&self) -> String {
        format!("http://{}/token", self.addr)
    }

    pub fn script(&self, statuses: &[u16]) {
        self.endpoint
            .script
            .lock()
            .unwrap()
            .extend(statuses.iter().copied());
    }

    pub fn received(&self) -> Vec<Received> {
        self.endpoint.received.lock().unwrap().clone()
    }

    /// Bodies of the requests answered with a 2xx.
    pub fn delivered(&self) -> Vec<serde_json::Value> {
        self.received()
            .into_iter()
            .filter(|r| (200..300).contains(&r.status))
            .map(|r| r.body)
            .collect()
    }

    pub fn require_basic(&self, user: &str, password: &str) {
        *self.endpoint.basic.lock().unwrap() = Some((user.into(), password.into()));
    }

    pub fn require_oauth(&self, client_id: &str, secret: &str, lifetime: Duration) {
        *self.endpoint.oauth.lock().unwrap() = Some(OAuth {
            client_id: client_id.into(),
            client_secret: secret.into(),
            lifetime,
            issued: HashMap::new(),
        });
    }

    /// Invalidates every issued token (the callback will answer 401 to them).
    pub fn revoke_tokens(&self) {
        if let Some(o) = self.endpoint.oauth.lock().unwrap().as_mut() {
            o.issued.clear();
        }
    }

    pub fn set_delay(&self, d: Duration) {
        self.endpoint
            .delay_ms
            .store(d.as_millis() as u64, Ordering::SeqCst);
    }
}

/// Polls `cond` every 20 ms until it holds or `within` passes.
pub async fn eventually(within: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + within;
    while Instant::now() < end {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cond()
}

fn basic_header(user: &str, password: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
    )
}

fn authorized(e: &Endpoint, headers: &HeaderMap) -> bool {
    let auth = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if let Some((u, p)) = &*e.basic.lock().unwrap()
        && auth != Some(basic_header(u, p).as_str())
    {
        return false;
    }
    if let Some(o) = &*e.oauth.lock().unwrap() {
        let Some(token) = auth.and_then(|a| a.strip_prefix("Bearer ")) else {
            return false;
        };
        return o.issued.get(token).is_some_and(|exp| *exp > Instant::now());
    }
    true
}

async fn callback(State(e): State<Arc<Endpoint>>, headers: HeaderMap, body: Bytes) -> Response {
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
    let auth = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if !authorized(&e, &headers) {
        e.rejected_401.fetch_add(1, Ordering::SeqCst);
        e.received.lock().unwrap().push(Received {
            authorization: auth,
            content_type,
            body,
            status: 401,
        });
        return StatusCode::UNAUTHORIZED.into_response();
    }
    // One outbox row: the notification as sent to one subscription.
    let id = format!(
        "{}/{}",
        body.get("id").and_then(|v| v.as_str()).unwrap_or(""),
        body.get("subscriptionId")
            .and_then(|v| v.as_str())
            .unwrap_or("")
    );
    {
        let mut f = e.in_flight.lock().unwrap();
        let n = f.entry(id.clone()).or_default();
        *n += 1;
        e.max_same_in_flight.fetch_max(*n, Ordering::SeqCst);
    }
    let delay = e.delay_ms.load(Ordering::SeqCst);
    if delay > 0 {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    if let Some(n) = e.in_flight.lock().unwrap().get_mut(&id) {
        *n -= 1;
    }
    let status = e
        .script
        .lock()
        .unwrap()
        .pop_front()
        .unwrap_or_else(|| e.default_status.load(Ordering::SeqCst));
    e.received.lock().unwrap().push(Received {
        authorization: auth,
        content_type,
        body,
        status,
    });
    StatusCode::from_u16(status).unwrap().into_response()
}

async fn test_get(State(e): State<Arc<Endpoint>>, headers: HeaderMap) -> Response {
    if !authorized(&e, &headers) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let delay = e.delay_ms.load(Ordering::SeqCst);
    if delay > 0 {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    StatusCode::from_u16(e.get_status.load(Ordering::SeqCst))
        .unwrap()
        .into_response()
}

async fn token(State(e): State<Arc<Endpoint>>, headers: HeaderMap, body: Bytes) -> Response {
    let mut guard = e.oauth.lock().unwrap();
    let Some(o) = guard.as_mut() else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let auth = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if auth != Some(basic_header(&o.client_id, &o.client_secret).as_str()) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let form_ok = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        == Some("application/x-www-form-urlencoded")
        && &body[..] == b"grant_type=client_credentials";
    if !form_ok {
        return StatusCode::BAD_REQUEST.into_response();
    }
    let n = e.tokens_issued.fetch_add(1, Ordering::SeqCst) + 1;
    let token = format!("tok-secret-{n}");
    o.issued.insert(token.clone(), Instant::now() + o.lifetime);
    let body = serde_json::json!({
        "access_token": token,
        "token_type": "Bearer",
        "expires_in": o.lifetime.as_secs(),
    });
    (
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}
