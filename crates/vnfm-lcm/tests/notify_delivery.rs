//! The notification deliverer against a real HTTP endpoint on 127.0.0.1 and a real SQLite
//! outbox: authentication, retries, dead rows, restarts, shutdown, and two deliverers on one
//! database.

use crate::log_capture::logs;
use crate::notify_support;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use notify_support::{Server, eventually};
use serde_json::{Value, json};
use vnfm_lcm::{
    CreateOptions, Deliverer, DelivererConfig, Keyring, NotificationContext, Subscriptions,
};
use vnfm_store::Store;
use vnfm_store_sql::SqliteStore;
use vnfm_types::{LccnNotification, LccnSubscriptionRequest};

const WAIT: Duration = Duration::from_secs(10);

struct Env {
    _dir: tempfile::TempDir,
    path: PathBuf,
    store: Arc<dyn Store>,
    keyring: Arc<Keyring>,
    subs: Subscriptions,
}

async fn env() -> Env {
    logs();
    vnfm_outbound::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vnfm.db");
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).await.unwrap());
    let keyring = Arc::new(Keyring::from_keys([Keyring::generate_key()]).unwrap());
    let subs = Subscriptions::new(store.clone(), keyring.clone(), callback_sender());
    Env {
        _dir: dir,
        path,
        store,
        keyring,
        subs,
    }
}

fn config(owner: &str) -> DelivererConfig {
    DelivererConfig {
        poll_interval: Duration::from_millis(50),
        request_timeout: Duration::from_secs(2),
        backoff_base: Duration::from_millis(50),
        backoff_max: Duration::from_millis(200),
        max_attempts: 5,
        ..DelivererConfig::new(owner)
    }
}

fn notification(id: &str, time: &str) -> LccnNotification {
    notification_about("i1", id, time)
}

fn notification_about(instance: &str, id: &str, time: &str) -> LccnNotification {
    LccnNotification::from_value(json!({
        "id": id, "notificationType": "VnfLcmOperationOccurrenceNotification",
        "subscriptionId": "", "timeStamp": time, "notificationStatus": "START",
        "operationState": "STARTING", "vnfInstanceId": instance, "operation": "INSTANTIATE",
        "isAutomaticInvocation": false, "vnfLcmOpOccId": "o1",
        "_links": {"vnfInstance": {"href": format!("/i/{instance}")}, "subscription": {"href": ""}}
    }))
    .unwrap()
}

fn now_rfc3339() -> String {
    vnfm_types::DateTime::now().as_str().to_owned()
}

impl Env {
    async fn subscribe(&self, body: Value) {
        let req: LccnSubscriptionRequest = serde_json::from_value(body).unwrap();
        self.subs
            .create(&req, &CreateOptions::default())
            .await
            .unwrap();
    }

    /// Routes and enqueues notifications `ids`, all about one instance.
    async fn notify(&self, ids: &[String], time: &str) {
        let notes: Vec<_> = ids.iter().map(|id| notification(id, time)).collect();
        self.enqueue(&notes).await;
    }

    /// Routes and enqueues notifications `ids`, each about an instance of its own (so they
    /// are delivered concurrently).
    async fn notify_each_instance(&self, ids: &[String], time: &str) {
        let notes: Vec<_> = ids
            .iter()
            .map(|id| notification_about(id, id, time))
            .collect();
        self.enqueue(&notes).await;
    }

    async fn enqueue(&self, notes: &[LccnNotification]) {
        let router = self.subs.router();
        let mut rows = Vec::new();
        for n in notes {
            rows.extend(
                router
                    .route_with(n, &NotificationContext::default(), None)
                    .await
                    .unwrap(),
            );
        }
        self.store.enqueue(&rows).await.unwrap();
    }

    /// Pending rows.
    async fn pending(&self) -> usize {
        self.store
            .outbox_pending_rows(None, 10_000)
            .await
            .unwrap()
            .len()
    }
}

fn ids(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i}")).collect()
}

fn counts(server: &Server) -> HashMap<String, usize> {
    let mut m = HashMap::new();
    for b in server.delivered() {
        *m.entry(b["id"].as_str().unwrap_or("").to_owned())
            .or_default() += 1;
    }
    m
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delivers_with_basic_auth_and_json() {
    let env = env().await;
    let server = Server::start().await;
    server.require_basic("nfvo", "basic-Pa55-secret");
    env.subscribe(json!({"callbackUri": server.callback(), "authentication": {
        "authType": ["BASIC"], "paramsBasic": {"userName": "nfvo", "password": "basic-Pa55-secret"}}}))
        .await;
    env.notify(&ids("basic", 3), &now_rfc3339()).await;
    let d = Deliverer::start(
        env.store.clone(),
        env.keyring.clone(),
        callback_sender(),
        config("a"),
    )
    .unwrap();
    assert!(eventually(WAIT, || server.delivered().len() == 3).await);
    d.shutdown().await;

    let received = server.received();
    assert_eq!(received.len(), 3, "no failed attempt: {received:?}");
    for r in &received {
        assert_eq!(r.status, 204);
        assert_eq!(r.content_type.as_deref(), Some("application/json"));
        assert_eq!(
            r.authorization.as_deref(),
            Some("Basic bmZ2bzpiYXNpYy1QYTU1LXNlY3JldA==")
        );
        assert!(
            r.body["subscriptionId"]
                .as_str()
                .is_some_and(|s| !s.is_empty())
        );
    }
    assert_eq!(env.pending().await, 0);
    assert!(
        env.store
            .outbox_dead_rows(None, 10)
            .await
            .unwrap()
            .is_empty()
    );
    let log = logs();
    assert!(log.contains("notification delivered"), "the capture works");
    assert!(!log.contains("basic-Pa55-secret") && !log.contains("bmZ2bzpiYXNpYy1QYTU1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oauth2_tokens_are_cached_refetched_on_expiry_and_on_401() {
    let env = env().await;
    let server = Server::start().await;
    server.require_oauth("vnfm-client", "client-Secret-xyz", Duration::from_secs(1));
    env.subscribe(json!({"callbackUri": server.callback(), "authentication": {
        "authType": ["OAUTH2_CLIENT_CREDENTIALS"],
        "paramsOauth2ClientCredentials": {"clientId": "vnfm-client",
            "clientPassword": "client-Secret-xyz", "tokenEndpoint": server.token_endpoint()}}}))
        .await;
    let d = Deliverer::start(
        env.store.clone(),
        env.keyring.clone(),
        callback_sender(),
        config("a"),
    )
    .unwrap();
    let e = &server.endpoint;

    // Two deliveries within the token's life share one token.
    env.notify(&ids("o-first", 2), &now_rfc3339()).await;
    d.wake();
    assert!(eventually(WAIT, || server.delivered().len() == 2).await);
    assert_eq!(e.tokens_issued.load(Ordering::SeqCst), 1);

    // After expiry the token is fetched again before sending (no 401 needed).
    tokio::time::sleep(Duration::from_millis(1100)).await;
    env.notify(&ids("o-after-expiry", 1), &now_rfc3339()).await;
    d.wake();
    assert!(eventually(WAIT, || server.delivered().len() == 3).await);
    assert_eq!(e.tokens_issued.load(Ordering::SeqCst), 2);
    assert_eq!(e.rejected_401.load(Ordering::SeqCst), 0);

    // The endpoint stops accepting the cached token: 401, new token, delivered.
    server.revoke_tokens();
    env.notify(&ids("o-revoked", 1), &now_rfc3339()).await;
    d.wake();
    assert!(eventually(WAIT, || server.delivered().len() == 4).await);
    assert_eq!(e.rejected_401.load(Ordering::SeqCst), 1);
    assert_eq!(e.tokens_issued.load(Ordering::SeqCst), 3);
    d.shutdown().await;

    assert!(counts(&server).values().all(|n| *n == 1));
    let last = server.received().pop().unwrap();
    assert_eq!(last.authorization.as_deref(), Some("Bearer tok-secret-3"));
    let log = logs();
    assert!(!log.contains("tok-secret") && !log.contains("client-Secret-xyz"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_failures_then_success_delivers_exactly_once() {
    let env = env().await;
    let server = Server::start().await;
    server.script(&[500, 503]);
    env.subscribe(json!({"callbackUri": server.callback()}))
        .await;
    env.notify(&ids("retry", 1), &now_rfc3339()).await;
    let d = Deliverer::start(
        env.store.clone(),
        env.keyring.clone(),
        callback_sender(),
        config("a"),
    )
    .unwrap();
    assert!(eventually(WAIT, || server.delivered().len() == 1).await);
    // Give a wrong implementation the chance to send again.
    tokio::time::sleep(Duration::from_millis(300)).await;
    d.shutdown().await;
    let statuses: Vec<u16> = server.received().iter().map(|r| r.status).collect();
    assert_eq!(statuses, [500, 503, 204]);
    assert_eq!(counts(&server)["retry-0"], 1);
    assert_eq!(env.pending().await, 0);
    assert!(
        env.store
            .outbox_dead_rows(None, 10)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permanent_failure_is_dead_after_max_attempts_or_max_age() {
    let env = env().await;
    let server = Server::start().await;
    server.endpoint.default_status.store(500, Ordering::SeqCst);
    env.subscribe(json!({"callbackUri": server.callback()}))
        .await;
    env.notify(&ids("dead", 1), &now_rfc3339()).await;
    let cfg = DelivererConfig {
        max_attempts: 3,
        ..config("a")
    };
    let d = Deliverer::start(
        env.store.clone(),
        env.keyring.clone(),
        callback_sender(),
        cfg,
    )
    .unwrap();
    let store = env.store.clone();
    let mut dead = Vec::new();
    for _ in 0..200 {
        dead = store.outbox_dead_rows(None, 10).await.unwrap();
        if !dead.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].attempts, 3);
    assert_eq!(
        dead[0].last_error.as_deref(),
        Some("callback answered 500 Internal Server Error")
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(server.received().len(), 3, "no attempt after the row died");

    // A notification older than max_age is given up after its first failure.
    env.notify(&ids("old", 1), "2000-01-01T00:00:00Z").await;
    d.wake();
    let mut dead = Vec::new();
    for _ in 0..200 {
        dead = store.outbox_dead_rows(None, 10).await.unwrap();
        if dead.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    d.shutdown().await;
    assert_eq!(dead.len(), 2);
    assert_eq!(dead[1].attempts, 1);
    assert_eq!(dead[1].payload["id"], json!("old-0"));
    assert!(logs().contains("notification given up"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_finishes_in_flight_and_a_new_deliverer_takes_over() {
    let env = env().await;
    let server = Server::start().await;
    server.set_delay(Duration::from_millis(300));
    env.subscribe(json!({"callbackUri": server.callback()}))
        .await;
    env.notify_each_instance(&ids("gs", 6), &now_rfc3339())
        .await;
    let cfg = DelivererConfig {
        concurrency: 2,
        batch: 2,
        ..config("first")
    };
    let d = Deliverer::start(
        env.store.clone(),
        env.keyring.clone(),
        callback_sender(),
        cfg,
    )
    .unwrap();
    // Shut down while the first two are in flight: they complete, nothing else starts.
    tokio::time::sleep(Duration::from_millis(100)).await;
    d.shutdown().await;
    let after_shutdown = server.delivered().len();
    assert_eq!(after_shutdown, 2, "in-flight deliveries finish");
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(server.received().len(), 2, "nothing is sent after shutdown");

    // "Restart": a new deliverer on a new store handle delivers the rest.
    let store2: Arc<dyn Store> = Arc::new(SqliteStore::open(&env.path).await.unwrap());
    let d2 = Deliverer::start(
        store2,
        env.keyring.clone(),
        callback_sender(),
        config("second"),
    )
    .unwrap();
    assert!(eventually(WAIT, || server.delivered().len() == 6).await);
    d2.shutdown().await;
    let c = counts(&server);
    assert_eq!(c.len(), 6);
    assert!(c.values().all(|n| *n == 1), "{c:?}");
    assert_eq!(env.pending().await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_deliverers_claims_expire_and_are_delivered_again() {
    let env = env().await;
    let server = Server::start().await;
    server.set_delay(Duration::from_millis(400));
    env.subscribe(json!({"callbackUri": server.callback()}))
        .await;
    env.notify_each_instance(&ids("crash", 3), &now_rfc3339())
        .await;
    let cfg = DelivererConfig {
        request_timeout: Duration::from_secs(1),
        claim_ttl: Duration::from_secs(1),
        ..config("crashing")
    };
    let d = Deliverer::start(
        env.store.clone(),
        env.keyring.clone(),
        callback_sender(),
        cfg,
    )
    .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    drop(d); // in-flight requests are abandoned with their claims
    server.set_delay(Duration::ZERO);

    let d2 = Deliverer::start(
        env.store.clone(),
        env.keyring.clone(),
        callback_sender(),
        config("restarted"),
    )
    .unwrap();
    // Not before the claims (3 × request timeout = 3 s) expire...
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let early = server.received().len();
    assert!(early <= 3, "only the abandoned attempts: {early}");
    // ...but then every notification arrives (at least once).
    assert!(eventually(WAIT, || counts(&server).len() == 3).await);
    d2.shutdown().await;
    assert_eq!(env.pending().await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_deliverers_never_send_the_same_row_concurrently() {
    let env = env().await;
    let server = Server::start().await;
    server.set_delay(Duration::from_millis(20));
    env.subscribe(json!({"callbackUri": server.callback()}))
        .await;
    env.subscribe(json!({"callbackUri": format!("{}?second", server.callback())}))
        .await;
    env.notify(&ids("pair", 30), &now_rfc3339()).await;
    let other: Arc<dyn Store> = Arc::new(SqliteStore::open(&env.path).await.unwrap());
    let cfg = |o: &str| DelivererConfig {
        concurrency: 4,
        batch: 3,
        poll_interval: Duration::from_millis(10),
        ..config(o)
    };
    let a = Deliverer::start(
        env.store.clone(),
        env.keyring.clone(),
        callback_sender(),
        cfg("a"),
    )
    .unwrap();
    let b = Deliverer::start(other, env.keyring.clone(), callback_sender(), cfg("b")).unwrap();
    assert!(eventually(WAIT, || server.delivered().len() >= 60).await);
    tokio::time::sleep(Duration::from_millis(200)).await;
    a.shutdown().await;
    b.shutdown().await;
    // 30 notifications × 2 subscriptions, each delivered exactly once.
    let mut per_row: HashMap<(String, String), usize> = HashMap::new();
    for b in server.delivered() {
        *per_row
            .entry((
                b["id"].as_str().unwrap().to_owned(),
                b["subscriptionId"].as_str().unwrap().to_owned(),
            ))
            .or_default() += 1;
    }
    assert_eq!(per_row.len(), 60);
    assert!(per_row.values().all(|n| *n == 1), "{per_row:?}");
    assert_eq!(server.received().len(), 60);
    assert_eq!(server.endpoint.max_same_in_flight.load(Ordering::SeqCst), 1);
    assert_eq!(env.pending().await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_instances_notifications_arrive_in_order_through_failures_and_two_deliverers() {
    let env = env().await;
    let server = Server::start().await;
    server.set_delay(Duration::from_millis(5));
    // The first sends fail: a head that waits for its retry holds its queue back.
    server.script(&[503, 500, 503]);
    env.subscribe(json!({"callbackUri": server.callback()}))
        .await;
    let time = now_rfc3339();
    let mut notes = Vec::new();
    for i in 0..20 {
        for instance in ["i1", "i2", "i3"] {
            notes.push(notification_about(
                instance,
                &format!("{instance}-{i}"),
                &time,
            ));
        }
    }
    env.enqueue(&notes).await;
    let other: Arc<dyn Store> = Arc::new(SqliteStore::open(&env.path).await.unwrap());
    let cfg = |o: &str| DelivererConfig {
        concurrency: 8,
        batch: 8,
        ..config(o)
    };
    let a = Deliverer::start(
        env.store.clone(),
        env.keyring.clone(),
        callback_sender(),
        cfg("a"),
    )
    .unwrap();
    let b = Deliverer::start(other, env.keyring.clone(), callback_sender(), cfg("b")).unwrap();
    assert!(eventually(WAIT, || server.delivered().len() >= 60).await);
    a.shutdown().await;
    b.shutdown().await;

    let received = server.received();
    assert_eq!(received.iter().filter(|r| r.status >= 500).count(), 3);
    for instance in ["i1", "i2", "i3"] {
        // Every attempt, failed or not, in the order the endpoint saw them.
        let attempts: Vec<&str> = received
            .iter()
            .filter(|r| r.body["vnfInstanceId"] == instance)
            .map(|r| r.body["id"].as_str().unwrap())
            .collect();
        let mut delivered = attempts.clone();
        delivered.dedup();
        let expected: Vec<String> = (0..20).map(|i| format!("{instance}-{i}")).collect();
        assert_eq!(delivered, expected, "{instance}: {attempts:?}");
    }
    assert_eq!(env.pending().await, 0);
}

/// A subscriber back after an outage received its backlog only at the next scheduled retry
/// of the head of its queue (up to `backoff_max` later: 194 s after a 10-minute outage): the
/// deliverer now probes the callback of notifications waiting in back-off and sends the
/// backlog, in order, within seconds of the subscriber's return.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backlog_drains_within_seconds_of_its_subscribers_return() {
    let env = env().await;
    // A port nobody listens on: the subscriber is down.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    env.subscribe(json!({"callbackUri": format!("http://{addr}/cb")}))
        .await;
    let backlog = ids("backlog", 64);
    env.notify(&backlog, &now_rfc3339()).await;
    // The head's first retry is 30 s after its failure: long after the bound below.
    let cfg = DelivererConfig {
        poll_interval: Duration::from_millis(50),
        request_timeout: Duration::from_secs(2),
        backoff_base: Duration::from_secs(30),
        ..DelivererConfig::new("a")
    };
    assert_eq!(cfg.probe_interval, Duration::from_secs(3), "the default");
    let d = Deliverer::start(
        env.store.clone(),
        env.keyring.clone(),
        callback_sender(),
        cfg,
    )
    .unwrap();
    let store = env.store.clone();
    let mut failed = false;
    for _ in 0..250 {
        let rows = store.outbox_pending_rows(None, 1).await.unwrap();
        if rows.first().is_some_and(|r| r.attempts > 0) {
            failed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        failed,
        "the head of the queue was never tried while the subscriber was down"
    );
    // Down a little longer, then back on the same address.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let server = Server::start_at(addr).await;
    let back = std::time::Instant::now();
    let drained = eventually(Duration::from_secs(10), || server.delivered().len() == 64).await;
    let took = back.elapsed();
    d.shutdown().await;
    assert!(
        drained,
        "{} of 64 delivered within 10 s of the subscriber's return",
        server.delivered().len()
    );
    eprintln!("64 queued notifications delivered {took:?} after the subscriber's return");
    let order: Vec<String> = server
        .delivered()
        .iter()
        .map(|b| b["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(order, backlog, "in order, each once");
    assert_eq!(env.pending().await, 0);
}

/// The HTTP implementation of the callback port.
fn callback_sender() -> std::sync::Arc<dyn vnfm_driver_api::CallbackSender> {
    vnfm_outbound::install_crypto_provider();
    std::sync::Arc::new(
        vnfm_outbound::HttpCallbackSender::new(std::time::Duration::from_secs(5)).unwrap(),
    )
}
