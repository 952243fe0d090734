//! Issue 67, tenants' notifications apart, through the API: members of projects `demo` and
//! `other` and an admin subscribe (lifecycle through v1 and v2, package management); `demo`
//! onboards a package and creates an instance; its notifications go to `demo`'s
//! subscriptions and the admin's, never to `other`'s.
//!
//! Twice: against a scripted Keystone on loopback (no service needed: it answers the
//! validator's two requests for three fixed tokens), and against the real Keystone that
//! `scripts/test-env/openstack.sh start` runs (ignored, saying so, when built without
//! Keystone's variables).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::IntoResponse;
use serde_json::{Value, json};
use vnfm_keystone::testing::TestKeystone;
use vnfm_keystone::{KeystoneConfig, KeystoneValidator, ServiceCredentials};

use crate::support::keystone::{Tenant, as_user, as_user_raw, keystone_harness};
use crate::support::{HELLO, HELLO_VNFD, Harness, zip_dir};

/// A Keystone token document of `user` in `project` with `roles`.
fn token_document(user: &str, project: &str, roles: &[&str], admin_project: bool) -> Value {
    let domain = json!({"id": "default", "name": "Default"});
    json!({"token": {
        "expires_at": "2099-01-01T00:00:00.000000Z",
        "user": {"id": user, "name": user, "domain": domain},
        "project": {"id": project, "name": project, "domain": domain},
        "roles": roles.iter().map(|r| json!({"id": r, "name": r})).collect::<Vec<_>>(),
        "is_admin_project": admin_project,
    }})
}

/// `GET /v3/auth/tokens`: the identity behind `X-Subject-Token` (`demo`, `other`, `admin`).
async fn validate(headers: HeaderMap) -> axum::response::Response {
    let subject = headers
        .get("x-subject-token")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let doc = match subject {
        "demo" => token_document("alice", "demo", &["member", "reader"], false),
        "other" => token_document("bob", "other", &["member", "reader"], false),
        "admin" => token_document("root", "admin", &["admin", "member", "reader"], true),
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    Json(doc).into_response()
}

/// `POST /v3/auth/tokens`: the service token.
async fn issue() -> axum::response::Response {
    let doc = token_document("vnfm", "service", &["service"], false);
    (
        StatusCode::CREATED,
        [("x-subject-token", "service-token")],
        Json(doc),
    )
        .into_response()
}

/// A harness whose Keystone is a scripted one on loopback knowing the tokens `demo`,
/// `other` (members of those projects) and `admin` (an admin).
async fn scripted_keystone_harness() -> Harness {
    vnfm::lcm::install_crypto_provider();
    let app =
        axum::Router::new().route("/v3/auth/tokens", axum::routing::get(validate).post(issue));
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v3", tcp.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(tcp, app).await;
    });
    let credentials = ServiceCredentials::Password {
        user: "vnfm".into(),
        password: vnfm_types::SecretString::new("scripted".to_owned()),
        user_domain: "Default".into(),
        project: "service".into(),
        project_domain: "Default".into(),
    };
    let validator =
        Arc::new(KeystoneValidator::new(KeystoneConfig::new(url, credentials)).unwrap());
    Harness::with_services(|b| b, |o| o.keystone = Some(validator)).await
}

/// Subscribes as `token` through each of `lists`; the new subscriptions' ids.
async fn subscribe(h: &Harness, token: &str, lists: &[&str]) -> Vec<String> {
    let mut ids = Vec::new();
    for list in lists {
        let body = json!({"callbackUri": format!("http://127.0.0.1:9/{token}{list}")});
        let r = as_user(h, token, Method::POST, list, Some(body)).await;
        assert_eq!(
            r.status,
            StatusCode::CREATED,
            "{list}: {}",
            String::from_utf8_lossy(&r.body)
        );
        ids.push(r.json()["id"].as_str().unwrap().to_owned());
    }
    ids
}

/// `demo`, `other` and the admin (tokens) subscribe; `demo` onboards a package and creates an
/// instance; the notifications go to `demo`'s and the admin's subscriptions only.
async fn notifications_stay_in_their_project(h: &Harness, demo: &str, other: &str, admin: &str) {
    let lists = [
        "/vnflcm/v2/subscriptions",
        "/vnflcm/v1/subscriptions",
        "/vnfpkgm/v2/subscriptions",
    ];
    let demo_subs = subscribe(h, demo, &lists).await;
    let other_subs = subscribe(h, other, &lists).await;
    let admin_subs = subscribe(h, admin, &lists).await;

    // `demo` onboards a package and creates an instance from it.
    let r = as_user(
        h,
        demo,
        Method::POST,
        "/vnfpkgm/v2/vnf_packages",
        Some(json!({})),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let pkg = r.json()["id"].as_str().unwrap().to_owned();
    let content = format!("/vnfpkgm/v2/vnf_packages/{pkg}/package_content");
    let zip = Some(("application/zip", zip_dir(HELLO.as_ref())));
    let r = as_user_raw(h, demo, Method::PUT, &content, zip).await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    let pkg_uri = format!("/vnfpkgm/v2/vnf_packages/{pkg}");
    let mut onboarded = false;
    for _ in 0..300 {
        let info = as_user(h, demo, Method::GET, &pkg_uri, None).await.json();
        if info["onboardingState"] == "ONBOARDED" {
            onboarded = true;
            break;
        }
        assert_ne!(info["onboardingState"], "ERROR", "{info}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(onboarded, "package {pkg} was not onboarded");
    let r = as_user(
        h,
        demo,
        Method::POST,
        "/vnflcm/v2/vnf_instances",
        Some(json!({"vnfdId": HELLO_VNFD})),
    )
    .await;
    assert_eq!(
        r.status,
        StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&r.body)
    );

    // Every notification written went to `demo`'s or the admin's subscriptions: the
    // package's onboarding to the package subscriptions, the instance's creation to the
    // lifecycle ones (v1 and v2).
    let rows = h
        .state
        .store()
        .outbox_pending_rows(None, 100)
        .await
        .unwrap();
    let notified: BTreeSet<String> = rows.iter().map(|r| r.subscription_id.to_string()).collect();
    let expected: BTreeSet<String> = demo_subs.iter().chain(&admin_subs).cloned().collect();
    assert_eq!(notified, expected, "{rows:#?}");
    for id in &other_subs {
        assert!(
            !notified.contains(id),
            "other's subscription {id} was notified"
        );
    }
}

#[tokio::test]
async fn notifications_stay_in_their_project_with_a_scripted_keystone() {
    let h = scripted_keystone_harness().await;
    notifications_stay_in_their_project(&h, "demo", "other", "admin").await;
    // A member's subscription belongs to its project; an admin's to none.
    let store = h.state.store();
    let mine = subscribe(&h, "demo", &["/vnffm/v1/subscriptions"]).await;
    let all = subscribe(&h, "admin", &["/vnffm/v1/subscriptions"]).await;
    for (id, project) in [(&mine[0], Some("demo")), (&all[0], None)] {
        assert_eq!(
            store
                .project_of(vnfm_store::ScopedKind::Subscription, id)
                .await
                .unwrap(),
            Some(project.map(str::to_owned)),
            "{id}"
        );
    }
}

#[vnfm_test_env::needs(keystone)]
#[tokio::test]
async fn notifications_stay_in_their_project_with_keystone() {
    let ks = TestKeystone::from_env().await;
    let (demo, other, admin) = (
        Tenant::new(&ks, "notify-demo", &["member"]).await,
        Tenant::new(&ks, "notify-other", &["member"]).await,
        Tenant::new(&ks, "notify-admin", &["admin"]).await,
    );
    let h = keystone_harness(&ks, |b| b).await;
    notifications_stay_in_their_project(&h, &demo.token, &other.token, &admin.token).await;
}
