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

use axum::http::{Method, StatusCode};
use serde_json::json;
use vnfm_keystone::testing::TestKeystone;

use crate::support::HELLO_VNFD;
use crate::support::Harness;
use crate::support::keystone::{
    Tenant, as_user, keystone_harness, onboard_hello_as, scripted_keystone_harness,
};

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
    onboard_hello_as(h, demo).await;
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
    let rows = h.store.outbox_pending_rows(None, 100).await.unwrap();
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
    let store = &h.store;
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
