//! Subscriptions over a real SQLite store: validation, duplicates, sealed credentials, the
//! callback test, and routing through the cache.

use crate::notify_support;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use vnfm_store::SubscriptionStore;

use notify_support::Server;
use serde_json::{Value, json};
use vnfm_lcm::ports::NotificationRouter;
use vnfm_lcm::{CreateOptions, Created, Keyring, LcmError, NotificationContext, Subscriptions};
use vnfm_store::Store;
use vnfm_store_sql::SqliteStore;
use vnfm_types::links::SolLinks;
use vnfm_types::{LccnNotification, LccnSubscriptionRequest, VnfInstance};

struct Db {
    _dir: tempfile::TempDir,
    path: PathBuf,
    store: Arc<dyn Store>,
}

async fn sqlite() -> Db {
    vnfm_outbound::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vnfm.db");
    let store = SqliteStore::open(&path).await.unwrap();
    Db {
        _dir: dir,
        path,
        store: Arc::new(store),
    }
}

fn keyring() -> Arc<Keyring> {
    Arc::new(Keyring::from_keys([Keyring::generate_key()]).unwrap())
}

fn req(v: Value) -> LccnSubscriptionRequest {
    serde_json::from_value(v).unwrap()
}

fn invalid_pointer(e: &LcmError) -> &str {
    match e {
        LcmError::InvalidRequest { pointer, .. } | LcmError::Unprocessable { pointer, .. } => {
            pointer
        }
        other => panic!("unexpected {other:?}"),
    }
}

fn instance(id: &str, vnfd: &str, name: &str) -> VnfInstance {
    serde_json::from_value(json!({
        "id": id, "vnfInstanceName": name, "vnfdId": vnfd, "vnfProvider": "Acme",
        "vnfProductName": "Demo", "vnfSoftwareVersion": "1.0", "vnfdVersion": "1.0",
        "instantiationState": "NOT_INSTANTIATED", "_links": {"self": {"href": "/i"}}
    }))
    .unwrap()
}

fn op_occ(instance: &str, operation: &str, state: &str) -> LccnNotification {
    LccnNotification::from_value(json!({
        "id": format!("n-{instance}-{operation}-{state}"),
        "notificationType": "VnfLcmOperationOccurrenceNotification",
        "subscriptionId": "", "timeStamp": "2024-01-01T00:00:00Z",
        "notificationStatus": "RESULT", "operationState": state,
        "vnfInstanceId": instance, "operation": operation, "isAutomaticInvocation": false,
        "vnfLcmOpOccId": "o1",
        "_links": {"vnfInstance": {"href": "/i"}, "subscription": {"href": ""}}
    }))
    .unwrap()
}

#[tokio::test]
async fn create_get_list_delete_and_duplicates() {
    let db = sqlite().await;
    let subs = Subscriptions::new(db.store.clone(), keyring(), callback_sender())
        .with_links(Arc::new(SolLinks::new("https://vnfm.example/")));
    let opts = CreateOptions::default();
    let r = req(json!({
        "callbackUri": "http://nfvo.example/cb",
        "filter": {"operationTypes": ["SCALE", "INSTANTIATE"],
                   "vnfInstanceSubscriptionFilter": {"vnfdIds": ["b", "a"]}},
        "authentication": {"authType": ["BASIC"],
                           "paramsBasic": {"userName": "nfvo", "password": "cb-Pa55-secret"}}
    }));
    let Created::New(sub) = subs.create(&r, &opts).await.unwrap() else {
        panic!("expected a new subscription");
    };
    assert_eq!(
        sub.links.self_.href,
        format!("https://vnfm.example/vnflcm/v2/subscriptions/{}", sub.id)
    );
    let shown = serde_json::to_value(&sub).unwrap();
    assert!(shown.get("authentication").is_none());
    assert!(!shown.to_string().contains("cb-Pa55-secret"));

    // Same filter (other order) and callback: the existing one, for a 303.
    let same = req(json!({
        "callbackUri": "http://nfvo.example/cb",
        "filter": {"vnfInstanceSubscriptionFilter": {"vnfdIds": ["a", "b"]},
                   "operationTypes": ["INSTANTIATE", "SCALE"]}
    }));
    match subs.create(&same, &opts).await.unwrap() {
        Created::Existing(s) => assert_eq!(s.id, sub.id),
        other => panic!("expected the existing subscription, got {other:?}"),
    }
    let other = req(json!({"callbackUri": "http://nfvo.example/other"}));
    let second = subs.create(&other, &opts).await.unwrap();
    assert!(matches!(second, Created::New(_)));

    assert_eq!(subs.get(&sub.id).await.unwrap(), sub);
    let page = subs
        .list(&vnfm_store::ProjectScope::All, None, 1)
        .await
        .unwrap();
    assert_eq!(page.items.len(), 1);
    let rest = subs
        .list(&vnfm_store::ProjectScope::All, page.next.as_deref(), 10)
        .await
        .unwrap();
    assert_eq!(rest.items.len(), 1);
    assert!(rest.next.is_none());

    // The credentials are sealed: not in the file, but they open with the keyring.
    let raw: Vec<u8> = ["", "-wal"]
        .iter()
        .flat_map(|s| std::fs::read(format!("{}{s}", db.path.display())).unwrap_or_default())
        .collect();
    assert!(!raw.windows(14).any(|w| w == b"cb-Pa55-secret"));
    let auth = subs.authentication(&sub.id).await.unwrap().unwrap();
    assert_eq!(
        auth.params_basic.unwrap().password.unwrap().expose(),
        "cb-Pa55-secret"
    );

    subs.delete(&sub.id).await.unwrap();
    let e = subs.get(&sub.id).await.unwrap_err();
    assert_eq!(e.kind().status(), 404);
    assert_eq!(subs.delete(&sub.id).await.unwrap_err().kind().status(), 404);
    assert!(subs.get(&second.subscription().id).await.is_ok());
}

#[tokio::test]
async fn requests_are_validated_with_pointers() {
    let db = sqlite().await;
    let subs = Subscriptions::new(db.store.clone(), keyring(), callback_sender());
    let opts = CreateOptions::default();
    let cases = [
        (json!({"callbackUri": "ftp://nfvo/cb"}), "/callbackUri", 400),
        (json!({"callbackUri": "not a uri"}), "/callbackUri", 400),
        (
            json!({"callbackUri": "http://user:pw@nfvo/cb"}),
            "/callbackUri",
            400,
        ),
        (
            json!({"callbackUri": "http://nfvo/cb", "authentication": {"authType": []}}),
            "/authentication/authType",
            400,
        ),
        (
            json!({"callbackUri": "http://nfvo/cb", "authentication": {"authType": ["BASIC"]}}),
            "/authentication/paramsBasic/userName",
            400,
        ),
        (
            json!({"callbackUri": "http://nfvo/cb", "authentication": {"authType": ["BASIC"],
                   "paramsBasic": {"userName": "u"}}}),
            "/authentication/paramsBasic/password",
            400,
        ),
        (
            json!({"callbackUri": "http://nfvo/cb", "authentication": {
                "authType": ["OAUTH2_CLIENT_CREDENTIALS"],
                "paramsOauth2ClientCredentials": {"clientId": "c", "clientPassword": "p"}}}),
            "/authentication/paramsOauth2ClientCredentials/tokenEndpoint",
            400,
        ),
        (
            json!({"callbackUri": "http://nfvo/cb", "authentication": {
                "authType": ["OAUTH2_CLIENT_CREDENTIALS"],
                "paramsOauth2ClientCredentials": {"clientPassword": "p",
                                                  "tokenEndpoint": "http://as/token"}}}),
            "/authentication/paramsOauth2ClientCredentials/clientId",
            400,
        ),
        (
            json!({"callbackUri": "http://nfvo/cb", "authentication": {
                "authType": ["OAUTH2_CLIENT_CREDENTIALS"],
                "paramsOauth2ClientCredentials": {"clientId": "c", "clientPassword": "p",
                                                  "tokenEndpoint": "file:///etc/passwd"}}}),
            "/authentication/paramsOauth2ClientCredentials/tokenEndpoint",
            400,
        ),
        (
            json!({"callbackUri": "http://nfvo/cb", "authentication": {"authType": ["TLS_CERT"]}}),
            "/authentication/authType",
            422,
        ),
        (
            json!({"callbackUri": "http://nfvo/cb", "filter": {
                "notificationTypes": ["VnfIdentifierCreationNotification"],
                "operationStates": ["COMPLETED"]}}),
            "/filter/operationStates",
            400,
        ),
    ];
    for (body, pointer, status) in cases {
        let e = subs.create(&req(body.clone()), &opts).await.unwrap_err();
        assert_eq!(invalid_pointer(&e), pointer, "{body}");
        assert_eq!(e.kind().status(), status, "{body}");
    }
    let e = subs
        .create(
            &req(json!({"callbackUri": "http://nfvo/cb", "authentication": {"authType": ["TLS_CERT"]}})),
            &opts,
        )
        .await
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("TLS_CERT authentication is not supported"),
        "{e}"
    );
    assert!(
        subs.list(&vnfm_store::ProjectScope::All, None, 10)
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn the_callback_test_must_answer_204() {
    let db = sqlite().await;
    let server = Server::start().await;
    server.require_basic("nfvo", "s3cret");
    let subs = Subscriptions::new(db.store.clone(), keyring(), callback_sender());
    let verify = CreateOptions {
        verify_callback: true,
        verify_timeout: Duration::from_millis(500),
        ..CreateOptions::default()
    };
    let with_auth = |cb: String| {
        req(
            json!({"callbackUri": cb, "authentication": {"authType": ["BASIC"],
                   "paramsBasic": {"userName": "nfvo", "password": "s3cret"}}}),
        )
    };
    // The test GET carries the subscription's credentials.
    assert!(matches!(
        subs.create(&with_auth(server.callback()), &verify)
            .await
            .unwrap(),
        Created::New(_)
    ));

    let no_auth = req(json!({"callbackUri": format!("{}?x=1", server.callback())}));
    let e = subs.create(&no_auth, &verify).await.unwrap_err();
    assert_eq!(e.kind().status(), 422);
    assert_eq!(
        e.to_string(),
        "/callbackUri: the notification endpoint test failed: GET answered 401 Unauthorized, expected 204 No Content"
    );

    server.endpoint.get_status.store(200, Ordering::SeqCst);
    let e = subs
        .create(&with_auth(format!("{}?x=2", server.callback())), &verify)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("GET answered 200 OK"), "{e}");

    server.endpoint.get_status.store(204, Ordering::SeqCst);
    server.set_delay(Duration::from_secs(2));
    let started = std::time::Instant::now();
    let e = subs
        .create(&with_auth(format!("{}?x=3", server.callback())), &verify)
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_millis(1500));
    assert_eq!(e.kind().status(), 422, "{e}");

    // Nothing listens there.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let e = subs
        .create(
            &req(json!({"callbackUri": format!("http://{closed}/cb")})),
            &verify,
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind().status(), 422, "{e}");
    assert!(!e.to_string().contains("s3cret"));
    // Without the option no request is made.
    let unverified = req(json!({"callbackUri": format!("http://{closed}/cb")}));
    assert!(
        subs.create(&unverified, &CreateOptions::default())
            .await
            .is_ok()
    );
    assert_eq!(
        subs.list(&vnfm_store::ProjectScope::All, None, 10)
            .await
            .unwrap()
            .items
            .len(),
        2
    );
}

#[tokio::test]
async fn router_matches_filters_and_sees_changes() {
    let db = sqlite().await;
    for (id, vnfd, name) in [("i1", "vnfd-a", "edge-1"), ("i2", "vnfd-b", "core-1")] {
        db.store
            .create_instance(&instance(id, vnfd, name), &[])
            .await
            .unwrap();
    }
    let subs = Subscriptions::new(db.store.clone(), keyring(), callback_sender())
        .with_cache_ttl(Duration::from_millis(300));
    let router = subs.router();
    let opts = CreateOptions::default();
    let mut ids = Vec::new();
    for body in [
        json!({"callbackUri": "http://a/all"}),
        json!({"callbackUri": "http://a/vnfd-a",
               "filter": {"vnfInstanceSubscriptionFilter": {"vnfdIds": ["vnfd-a"]}}}),
        json!({"callbackUri": "http://a/scale-done",
               "filter": {"operationTypes": ["SCALE"], "operationStates": ["COMPLETED"]}}),
        json!({"callbackUri": "http://a/core",
               "filter": {"vnfInstanceSubscriptionFilter": {"vnfInstanceNames": ["core-1"]}}}),
    ] {
        ids.push(
            subs.create(&req(body), &opts)
                .await
                .unwrap()
                .subscription()
                .id
                .clone(),
        );
    }
    let routed = |rows: &[vnfm_store::NewOutboxRow]| {
        let mut uris: Vec<String> = rows.iter().map(|r| r.callback_uri.clone()).collect();
        uris.sort();
        uris
    };

    let rows = router
        .route(&op_occ("i1", "SCALE", "COMPLETED"), None)
        .await
        .unwrap();
    assert_eq!(
        routed(&rows),
        ["http://a/all", "http://a/scale-done", "http://a/vnfd-a"]
    );
    for r in &rows {
        assert_eq!(
            r.payload["subscriptionId"],
            json!(r.subscription_id.as_str())
        );
        assert!(
            r.payload["_links"]["subscription"]["href"]
                .as_str()
                .unwrap()
                .ends_with(r.subscription_id.as_str())
        );
    }
    let rows = router
        .route(&op_occ("i2", "HEAL", "PROCESSING"), None)
        .await
        .unwrap();
    assert_eq!(routed(&rows), ["http://a/all", "http://a/core"]);

    // An instance not (yet) in the store: only filters without instance attributes match,
    // unless the caller gives the context.
    let creation = LccnNotification::from_value(json!({
        "id": "c1", "notificationType": "VnfIdentifierCreationNotification",
        "subscriptionId": "", "timeStamp": "2024-01-01T00:00:00Z", "vnfInstanceId": "i3",
        "_links": {"vnfInstance": {"href": "/i"}, "subscription": {"href": ""}}
    }))
    .unwrap();
    let rows = router.route(&creation, None).await.unwrap();
    assert_eq!(routed(&rows), ["http://a/all", "http://a/scale-done"]);
    let new = instance("i3", "vnfd-a", "new");
    let rows = router.route(&creation, Some(&new)).await.unwrap();
    assert_eq!(
        routed(&rows),
        ["http://a/all", "http://a/scale-done", "http://a/vnfd-a"]
    );
    let ctx = NotificationContext::from_instance(&new);
    assert_eq!(
        routed(&router.route_with(&creation, &ctx, None).await.unwrap()),
        routed(&rows)
    );

    // Deleting through the same service is seen at once.
    subs.delete(&ids[0]).await.unwrap();
    let rows = router
        .route(&op_occ("i2", "HEAL", "PROCESSING"), None)
        .await
        .unwrap();
    assert_eq!(routed(&rows), ["http://a/core"]);

    // Another replica's new subscription is seen once the cache expires.
    let replica = Subscriptions::new(db.store.clone(), keyring(), callback_sender());
    replica
        .create(&req(json!({"callbackUri": "http://b/replica"})), &opts)
        .await
        .unwrap();
    let rows = router
        .route(&op_occ("i2", "HEAL", "PROCESSING"), None)
        .await
        .unwrap();
    assert_eq!(routed(&rows), ["http://a/core"], "still cached");
    tokio::time::sleep(Duration::from_millis(350)).await;
    let rows = router
        .route(&op_occ("i2", "HEAL", "PROCESSING"), None)
        .await
        .unwrap();
    assert_eq!(routed(&rows), ["http://a/core", "http://b/replica"]);
}

/// Issue 67: tenants' notifications apart. A subscription of a project receives the
/// notifications about its project's instances only, one of no project (created by a caller
/// that sees every project) about every instance; an instance of no project reaches only the
/// subscriptions of no project. The creation of an instance, routed before it is stored, is
/// routed by the project its creator gives.
#[tokio::test]
async fn a_subscription_receives_only_its_own_projects_notifications() {
    let db = sqlite().await;
    let subs = Subscriptions::new(db.store.clone(), keyring(), callback_sender());
    let router = subs.router();
    for (uri, project) in [
        ("http://a/demo", Some("demo")),
        ("http://a/other", Some("other")),
        ("http://a/admin", None),
    ] {
        let opts = CreateOptions {
            project: project.map(str::to_owned),
            ..CreateOptions::default()
        };
        subs.create(&req(json!({"callbackUri": uri})), &opts)
            .await
            .unwrap();
    }
    for (id, project) in [("i-demo", Some("demo")), ("i-none", None)] {
        db.store
            .create_instance_in(&instance(id, "vnfd-a", id), project, &[])
            .await
            .unwrap();
    }
    let routed = |rows: Vec<vnfm_store::NewOutboxRow>| {
        let mut uris: Vec<String> = rows.into_iter().map(|r| r.callback_uri).collect();
        uris.sort();
        uris
    };
    let demo = router
        .route(&op_occ("i-demo", "SCALE", "COMPLETED"), None)
        .await
        .unwrap();
    assert_eq!(routed(demo), ["http://a/admin", "http://a/demo"]);
    let stored = instance("i-demo", "vnfd-a", "i-demo");
    let demo = router
        .route(&op_occ("i-demo", "HEAL", "STARTING"), Some(&stored))
        .await
        .unwrap();
    assert_eq!(routed(demo), ["http://a/admin", "http://a/demo"]);
    let none = router
        .route(&op_occ("i-none", "SCALE", "COMPLETED"), None)
        .await
        .unwrap();
    assert_eq!(routed(none), ["http://a/admin"]);
    // An instance that is not stored (any more) is of no project.
    let gone = router
        .route(&op_occ("i-gone", "SCALE", "COMPLETED"), None)
        .await
        .unwrap();
    assert_eq!(routed(gone), ["http://a/admin"]);

    let creation = LccnNotification::from_value(json!({
        "id": "c1", "notificationType": "VnfIdentifierCreationNotification",
        "subscriptionId": "", "timeStamp": "2024-01-01T00:00:00Z", "vnfInstanceId": "i-new",
        "_links": {"vnfInstance": {"href": "/i"}, "subscription": {"href": ""}}
    }))
    .unwrap();
    let new = instance("i-new", "vnfd-a", "new");
    let rows = router
        .route_created(&creation, &new, Some("other"))
        .await
        .unwrap();
    assert_eq!(routed(rows), ["http://a/admin", "http://a/other"]);
    let rows = router.route_created(&creation, &new, None).await.unwrap();
    assert_eq!(routed(rows), ["http://a/admin"]);
}

/// The HTTP implementation of the callback port.
fn callback_sender() -> std::sync::Arc<dyn vnfm_driver_api::CallbackSender> {
    vnfm_outbound::install_crypto_provider();
    std::sync::Arc::new(
        vnfm_outbound::HttpCallbackSender::new(std::time::Duration::from_secs(5)).unwrap(),
    )
}

#[tokio::test]
async fn subscriptions_belong_to_a_project_and_duplicates_are_found_within_it() {
    let db = sqlite().await;
    let subs = Subscriptions::new(db.store.clone(), keyring(), callback_sender());
    let of = |project: Option<&str>| CreateOptions {
        project: project.map(str::to_owned),
        ..CreateOptions::default()
    };
    let body = req(json!({"callbackUri": "http://nfvo/cb"}));
    let a = subs.create(&body, &of(Some("A"))).await.unwrap();
    assert!(matches!(a, Created::New(_)), "{a:?}");
    // Another project's identical subscription is not a duplicate: B gets its own.
    let b = subs.create(&body, &of(Some("B"))).await.unwrap();
    assert!(matches!(b, Created::New(_)), "{b:?}");
    assert_ne!(a.subscription().id, b.subscription().id);
    // Within a project it is (303 See Other to the first).
    let again = subs.create(&body, &of(Some("B"))).await.unwrap();
    assert_eq!(again, Created::Existing(b.subscription().clone()));
    let none = subs.create(&body, &of(None)).await.unwrap();
    assert!(matches!(none, Created::New(_)), "{none:?}");
    let record = db
        .store
        .get_subscription::<vnfm_types::LccnSubscription>(&b.subscription().id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.project.as_deref(), Some("B"));
    let only_a = subs
        .list(&vnfm_store::ProjectScope::Project("A".into()), None, 10)
        .await
        .unwrap();
    assert_eq!(only_a.items, [a.subscription().clone()]);
    let all = subs
        .list(&vnfm_store::ProjectScope::All, None, 10)
        .await
        .unwrap();
    assert_eq!(all.items.len(), 3);
}
