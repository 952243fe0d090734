//! VNF package management subscriptions over a real SQLite store and a real callback on
//! 127.0.0.1: sealed credentials, duplicates, the callback test, kinds kept apart from the
//! lifecycle subscriptions, routing, and delivery in order by the same `Deliverer`.

use crate::notify_support;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use notify_support::{Server, eventually};
use serde_json::{Value, json};
use vnfm_lcm::{
    CreateOptions, Created, Deliverer, DelivererConfig, Keyring, PackageChange, PackageEvent,
    PkgmSubscriptions, Subscriptions,
};
use vnfm_store::{PackageRecord, Store, Version};
use vnfm_store_sql::SqliteStore;
use vnfm_types::links::ApiVersion;
use vnfm_types::{PackageOperationalState, PkgmSubscriptionRequest, VnfPkgInfo};

const WAIT: Duration = Duration::from_secs(10);

struct Db {
    _dir: tempfile::TempDir,
    path: PathBuf,
    store: Arc<dyn Store>,
    keyring: Arc<Keyring>,
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
        keyring: Arc::new(Keyring::from_keys([Keyring::generate_key()]).unwrap()),
    }
}

fn req(v: Value) -> PkgmSubscriptionRequest {
    serde_json::from_value(v).unwrap()
}

fn package(id: &str, state: &str) -> VnfPkgInfo {
    serde_json::from_value(json!({
        "id": id, "vnfdId": format!("vnfd-{id}"), "vnfProvider": "ETSI",
        "vnfProductName": "hello", "vnfSoftwareVersion": "1.0", "vnfdVersion": "1.0",
        "onboardingState": "ONBOARDED", "operationalState": state, "usageState": "NOT_IN_USE",
        "_links": {"self": {"href": format!("/vnfpkgm/v2/vnf_packages/{id}")},
                   "packageContent": {"href": format!("/vnfpkgm/v2/vnf_packages/{id}/package_content")}}
    }))
    .unwrap()
}

#[tokio::test]
async fn create_get_list_delete_duplicates_and_sealed_credentials() {
    let db = sqlite().await;
    let subs = PkgmSubscriptions::new(db.store.clone(), db.keyring.clone(), callback_sender());
    let opts = CreateOptions::default();
    let r = req(json!({
        "callbackUri": "http://nfvo.example/pkg",
        "filter": {"vnfdId": ["b", "a"], "notificationTypes": ["VnfPackageChangeNotification"]},
        "authentication": {"authType": ["OAUTH2_CLIENT_CREDENTIALS"],
            "paramsOauth2ClientCredentials": {"clientId": "nfvo",
                "clientPassword": "pkg-Cl1ent-secret", "tokenEndpoint": "http://nfvo.example/token"}}
    }));
    let Created::New(sub) = subs.create(&r, &opts).await.unwrap() else {
        panic!("expected a new subscription");
    };
    assert_eq!(
        sub.links.self_.href,
        format!("/vnfpkgm/v2/subscriptions/{}", sub.id)
    );
    let shown = serde_json::to_value(&sub).unwrap().to_string();
    assert!(!shown.contains("authentication") && !shown.contains("pkg-Cl1ent-secret"));

    let same = req(json!({"callbackUri": "http://nfvo.example/pkg",
        "filter": {"notificationTypes": ["VnfPackageChangeNotification"], "vnfdId": ["a", "b"]}}));
    match subs.create(&same, &opts).await.unwrap() {
        Created::Existing(s) => assert_eq!(s.id, sub.id),
        other => panic!("expected the existing subscription, got {other:?}"),
    }
    let second = subs
        .create(
            &req(json!({"callbackUri": "http://nfvo.example/pkg"})),
            &opts,
        )
        .await
        .unwrap();
    assert!(matches!(second, Created::New(_)));
    assert_eq!(subs.get(&sub.id).await.unwrap(), sub);
    let page = subs
        .list(&vnfm_store::ProjectScope::All, None, 1)
        .await
        .unwrap();
    let rest = subs
        .list(&vnfm_store::ProjectScope::All, page.next.as_deref(), 10)
        .await
        .unwrap();
    assert_eq!(page.items.len() + rest.items.len(), 2);
    assert!(rest.next.is_none());

    // Sealed at rest, open with the keyring.
    let raw: Vec<u8> = ["", "-wal"]
        .iter()
        .flat_map(|s| std::fs::read(format!("{}{s}", db.path.display())).unwrap_or_default())
        .collect();
    assert!(!raw.windows(17).any(|w| w == b"pkg-Cl1ent-secret"));
    let auth = subs.authentication(&sub.id).await.unwrap().unwrap();
    assert_eq!(
        auth.params_oauth2_client_credentials
            .unwrap()
            .client_password
            .unwrap()
            .expose(),
        "pkg-Cl1ent-secret"
    );

    // The lifecycle subscriptions neither list nor delete package ones.
    let lcm = Subscriptions::new(db.store.clone(), db.keyring.clone(), callback_sender());
    assert!(
        lcm.list(&vnfm_store::ProjectScope::All, None, 10)
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert_eq!(lcm.delete(&sub.id).await.unwrap_err().kind().status(), 404);

    subs.delete(&sub.id).await.unwrap();
    assert_eq!(subs.get(&sub.id).await.unwrap_err().kind().status(), 404);
    assert_eq!(subs.delete(&sub.id).await.unwrap_err().kind().status(), 404);
    assert!(subs.get(&second.subscription().id).await.is_ok());
}

#[tokio::test]
async fn the_callback_test_must_answer_204() {
    let db = sqlite().await;
    let server = Server::start().await;
    let subs = PkgmSubscriptions::new(db.store.clone(), db.keyring.clone(), callback_sender());
    let verify = CreateOptions {
        verify_callback: true,
        verify_timeout: Duration::from_millis(500),
        ..CreateOptions::default()
    };
    assert!(matches!(
        subs.create(&req(json!({"callbackUri": server.callback()})), &verify)
            .await
            .unwrap(),
        Created::New(_)
    ));
    server.endpoint.get_status.store(404, Ordering::SeqCst);
    let e = subs
        .create(
            &req(json!({"callbackUri": format!("{}?x=1", server.callback())})),
            &verify,
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind().status(), 422);
    assert!(e.to_string().starts_with("/callbackUri:"), "{e}");
    assert_eq!(
        subs.list(&vnfm_store::ProjectScope::All, None, 10)
            .await
            .unwrap()
            .items
            .len(),
        1
    );
}

/// Onboarding, disable, enable and delete of one package, written through the store with
/// their notifications, reach the subscriber in that order through the `Deliverer`, with
/// Basic authentication; a subscription whose filter excludes them gets nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn package_changes_are_delivered_in_order_to_matching_subscriptions() {
    let db = sqlite().await;
    let server = Server::start().await;
    server.require_basic("nfvo", "pkg-Pa55");
    let v1 = PkgmSubscriptions::new(db.store.clone(), db.keyring.clone(), callback_sender())
        .with_version(ApiVersion::V1);
    let opts = CreateOptions::default();
    let Created::New(sub) = v1
        .create(
            &req(json!({"callbackUri": server.callback(), "authentication": {
                "authType": ["BASIC"], "paramsBasic": {"userName": "nfvo", "password": "pkg-Pa55"}}})),
            &opts,
        )
        .await
        .unwrap()
    else {
        panic!("new subscription expected");
    };
    // Only another package: must stay silent.
    let other = format!("{}?other", server.callback());
    v1.create(
        &req(json!({"callbackUri": other, "filter": {"vnfPkgId": ["pkg-other"]}})),
        &opts,
    )
    .await
    .unwrap();

    let mut info = package("pkg-1", "ENABLED");
    let record = |info: &VnfPkgInfo| PackageRecord {
        id: info.id.clone(),
        vnfd_id: info.vnfd_id.clone(),
        info: serde_json::to_value(info).unwrap(),
        project: None,
    };
    db.store.create_package(&record(&info)).await.unwrap();
    let mut version = Version::FIRST;
    let steps = [
        (PackageEvent::Onboarded, PackageOperationalState::Enabled),
        (
            PackageEvent::OperationalStateChanged,
            PackageOperationalState::Disabled,
        ),
        (
            PackageEvent::OperationalStateChanged,
            PackageOperationalState::Enabled,
        ),
        (
            PackageEvent::OperationalStateChanged,
            PackageOperationalState::Disabled,
        ),
    ];
    for (event, state) in steps {
        info.operational_state = state;
        let rows = v1
            .route(&PackageChange {
                event,
                package: &info,
            })
            .await
            .unwrap();
        assert_eq!(rows.len(), 1, "only the unfiltered subscription matches");
        assert!(rows.iter().all(|r| r.ordering_key == "pkg-1"));
        version = db
            .store
            .update_package_and_notify(&record(&info), version, &rows)
            .await
            .unwrap();
    }
    let rows = v1
        .route(&PackageChange {
            event: PackageEvent::Deleted,
            package: &info,
        })
        .await
        .unwrap();
    db.store
        .delete_package_and_notify("pkg-1", version, &rows)
        .await
        .unwrap();

    let config = DelivererConfig {
        poll_interval: Duration::from_millis(50),
        ..DelivererConfig::new("pkgm-test")
    };
    let d = Deliverer::start(
        db.store.clone(),
        db.keyring.clone(),
        callback_sender(),
        config,
    )
    .unwrap();
    assert!(eventually(WAIT, || server.delivered().len() == 5).await);
    d.shutdown().await;

    let received = server.received();
    assert!(received.iter().all(|r| {
        r.authorization.as_deref() == Some("Basic bmZ2bzpwa2ctUGE1NQ==")
            && r.content_type.as_deref() == Some("application/json")
    }));
    let kinds: Vec<(String, String, String)> = server
        .delivered()
        .iter()
        .map(|b| {
            (
                b["notificationType"].as_str().unwrap_or("").to_owned(),
                b["changeType"].as_str().unwrap_or("").to_owned(),
                b["operationalState"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    let k = |a: &str, b: &str, c: &str| (a.to_owned(), b.to_owned(), c.to_owned());
    assert_eq!(
        kinds,
        vec![
            k("VnfPackageOnboardingNotification", "", ""),
            k(
                "VnfPackageChangeNotification",
                "OP_STATE_CHANGE",
                "DISABLED"
            ),
            k("VnfPackageChangeNotification", "OP_STATE_CHANGE", "ENABLED"),
            k(
                "VnfPackageChangeNotification",
                "OP_STATE_CHANGE",
                "DISABLED"
            ),
            k("VnfPackageChangeNotification", "PKG_DELETE", ""),
        ]
    );
    for body in server.delivered() {
        assert_eq!(body["subscriptionId"], sub.id.as_str());
        assert_eq!(body["vnfPkgId"], "pkg-1");
        assert_eq!(body["vnfdId"], "vnfd-pkg-1");
        assert_eq!(
            body["_links"]["vnfPackage"]["href"],
            "/vnfpkgm/v1/vnf_packages/pkg-1"
        );
        assert_eq!(
            body["_links"]["subscription"]["href"],
            format!("/vnfpkgm/v1/subscriptions/{}", sub.id)
        );
    }
    assert!(
        db.store
            .outbox_pending_rows(None, 10)
            .await
            .unwrap()
            .is_empty()
    );
}

/// Issue 67: a package's notifications reach the subscriptions of the package's project and
/// those of no project (created by callers that see every project), not another project's;
/// a package of no project (an OAuth 2.0 client's, one fetched from the NFVO) reaches only
/// the subscriptions of no project.
#[tokio::test]
async fn package_notifications_stay_in_the_packages_project() {
    let db = sqlite().await;
    let subs = PkgmSubscriptions::new(db.store.clone(), db.keyring.clone(), callback_sender());
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
    for (id, project) in [("pkg-demo", Some("demo")), ("pkg-none", None)] {
        let info = package(id, "ENABLED");
        db.store
            .create_package(&PackageRecord {
                id: info.id.clone(),
                vnfd_id: info.vnfd_id.clone(),
                info: serde_json::to_value(&info).unwrap(),
                project: project.map(str::to_owned),
            })
            .await
            .unwrap();
    }
    for (id, want) in [
        ("pkg-demo", &["http://a/admin", "http://a/demo"][..]),
        ("pkg-none", &["http://a/admin"][..]),
    ] {
        let info = package(id, "ENABLED");
        let rows = subs
            .route(&PackageChange {
                event: PackageEvent::Onboarded,
                package: &info,
            })
            .await
            .unwrap();
        let mut uris: Vec<String> = rows.into_iter().map(|r| r.callback_uri).collect();
        uris.sort();
        assert_eq!(uris, want, "{id}");
    }
}

/// The HTTP implementation of the callback port.
fn callback_sender() -> std::sync::Arc<dyn vnfm_driver_api::CallbackSender> {
    vnfm_outbound::install_crypto_provider();
    std::sync::Arc::new(
        vnfm_outbound::HttpCallbackSender::new(std::time::Duration::from_secs(5)).unwrap(),
    )
}
