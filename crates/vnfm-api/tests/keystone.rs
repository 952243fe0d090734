//! Keystone authentication (`X-Auth-Token`) of the router against the real Keystone that
//! `scripts/test-env/openstack.sh start` runs: the tests create projects and users with the
//! admin token. Ignored, saying so, when built without Keystone's variables
//! (`#[vnfm_test_env::needs(keystone)]`).

use std::sync::Arc;
use std::time::Duration;

use axum::http::{Method, StatusCode};
use serde_json::json;
use vnfm_keystone::testing::TestKeystone;
use vnfm_keystone::{KeystoneConfig, KeystoneValidator, ServiceCredentials};

use crate::support;

use support::*;

async fn harness(ks: &TestKeystone, credentials: ServiceCredentials, bound: Duration) -> Harness {
    harness_at(ks.url.clone(), credentials, bound).await
}

async fn harness_at(url: String, credentials: ServiceCredentials, bound: Duration) -> Harness {
    let mut config = KeystoneConfig::new(url, credentials);
    config.revalidate_after = bound;
    let validator = Arc::new(KeystoneValidator::new(config).unwrap());
    Harness::with(|o| o.keystone = Some(validator)).await
}

/// A request with `X-Auth-Token: token`; a JSON body for `POST`.
async fn ks_call(h: &Harness, method: Method, uri: &str, token: &str) -> Reply {
    let mut headers = vec![("x-auth-token", token), ("version", "2.0.0")];
    let body = if method == Method::POST {
        headers.push(("content-type", "application/json"));
        serde_json::to_vec(&json!({"userDefinedData": {"by": "keystone"}})).unwrap()
    } else {
        Vec::new()
    };
    h.raw(method, uri, &headers, body).await
}

const PACKAGES: &str = "/vnfpkgm/v2/vnf_packages";

#[vnfm_test_env::needs(keystone)]
#[tokio::test]
async fn members_list_and_create_readers_only_list_and_oauth_stays_on() {
    let ks = TestKeystone::from_env().await;
    let (_svc, credentials) = ks.service_user().await;
    let a = ks.project("proj-a").await;
    let b = ks.project("proj-b").await;
    let member = ks.user("member", &a, &["member"]).await;
    let reader = ks.user("reader", &b, &["reader"]).await;
    let nobody = ks.user("nobody", &a, &["vnfm_unmapped_role"]).await;
    let h = harness(&ks, credentials, Duration::from_secs(60)).await;
    let member_token = ks.token(&member).await;
    let reader_token = ks.token(&reader).await;

    let r = ks_call(&h, Method::POST, PACKAGES, &member_token).await;
    assert_eq!(
        r.status,
        StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    let id = r.json()["id"].as_str().unwrap().to_owned();
    let r = ks_call(&h, Method::GET, PACKAGES, &member_token).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(
        r.json()
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["id"] == id.as_str())
    );

    let r = ks_call(&h, Method::GET, PACKAGES, &reader_token).await;
    assert_eq!(r.status, StatusCode::OK);
    let p = ks_call(&h, Method::POST, PACKAGES, &reader_token)
        .await
        .problem(403);
    let detail = p["detail"].as_str().unwrap();
    assert!(
        detail.contains(&reader.name) && detail.contains(&b.name),
        "{detail}"
    );
    ks_call(
        &h,
        Method::DELETE,
        &format!("{PACKAGES}/{id}"),
        &reader_token,
    )
    .await
    .problem(403);
    // Nothing was created by the refused request.
    let r = ks_call(&h, Method::GET, PACKAGES, &member_token).await;
    assert_eq!(r.json().as_array().unwrap().len(), 1);

    // A user with none of the mapped roles may not even read.
    let p = ks_call(&h, Method::GET, PACKAGES, &ks.token(&nobody).await)
        .await
        .problem(403);
    assert!(
        p["detail"].as_str().unwrap().contains("none of the roles"),
        "{p}"
    );

    // OAuth 2.0 bearer tokens keep working next to Keystone.
    assert_eq!(
        h.call(Method::GET, PACKAGES, None).await.status,
        StatusCode::OK
    );
    let r = h
        .raw(Method::GET, PACKAGES, &[("version", "2.0.0")], vec![])
        .await;
    let p = r.problem(401);
    assert!(
        p["detail"].as_str().unwrap().contains("X-Auth-Token"),
        "{p}"
    );
}

#[vnfm_test_env::needs(keystone)]
#[tokio::test]
async fn revoked_expired_and_garbage_tokens_are_401_and_keystone_down_is_503() {
    use tracing_subscriber::layer::SubscriberExt;
    let ks = TestKeystone::from_env().await;
    let capture = LogCapture::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(capture.clone()));
    let (svc, credentials) = ks.service_user().await;
    let p = ks.project("proj").await;
    let member = ks.user("member", &p, &["member"]).await;
    let h = harness(&ks, credentials.clone(), Duration::from_secs(1)).await;
    let token = ks.token(&member).await;
    let mut bodies = Vec::new();

    // A real expired token: valid, then past its expiry (Keystone ends a trust-scoped token
    // with its trust), refused although the server had cached it as valid.
    // Long enough for its first use on a loaded machine (each Keystone login hashes a
    // password; 10 s ran out while Tacker's suite ran beside the tests).
    let (expiring, expires) = ks
        .expiring_token(&member, "member", Duration::from_secs(30))
        .await;
    let r = ks_call(&h, Method::GET, PACKAGES, &expiring).await;
    assert_eq!(
        r.status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&r.body)
    );

    let r = ks_call(&h, Method::GET, PACKAGES, &token).await;
    assert_eq!(r.status, StatusCode::OK);
    ks.revoke(&token).await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let r = ks_call(&h, Method::GET, PACKAGES, &token).await;
    let p = r.problem(401);
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("invalid, expired or revoked"),
        "{p}"
    );
    bodies.push(r.body);
    // Once it has expired and the server's revalidation bound (1 s) has passed.
    tokio::time::sleep_until(expires + Duration::from_millis(1300)).await;
    let r = ks_call(&h, Method::GET, PACKAGES, &expiring).await;
    let p = r.problem(401);
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("invalid, expired or revoked"),
        "{p}"
    );
    bodies.push(r.body);
    for garbage in [
        "garbage",
        "gAAAAABthisisnotarealtoken0000000000000000000000000",
    ] {
        let r = ks_call(&h, Method::GET, PACKAGES, garbage).await;
        r.problem(401);
        bodies.push(r.body);
    }

    // Keystone unreachable (a closed port): 503, not 401; OAuth still works.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let down = harness_at(
        format!("http://127.0.0.1:{port}/v3"),
        credentials,
        Duration::from_secs(1),
    )
    .await;
    let fresh = ks.token(&member).await;
    let r = ks_call(&down, Method::GET, PACKAGES, &fresh).await;
    let p = r.problem(503);
    assert!(p["detail"].as_str().unwrap().contains("unreachable"), "{p}");
    bodies.push(r.body);
    assert_eq!(
        down.call(Method::GET, PACKAGES, None).await.status,
        StatusCode::OK
    );

    let logs = capture.0.lock().unwrap().clone();
    assert!(logs.contains("Keystone token validation failed"), "{logs}");
    for text in bodies
        .iter()
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .chain([logs])
    {
        for secret in [
            token.as_str(),
            expiring.as_str(),
            fresh.as_str(),
            svc.password.expose(),
            member.password.expose(),
        ] {
            assert!(!text.contains(secret), "a secret is shown:\n{text}");
        }
    }
}

#[tokio::test]
async fn without_keystone_an_x_auth_token_is_refused_saying_so() {
    let h = Harness::new().await;
    let p = h
        .raw(
            Method::GET,
            PACKAGES,
            &[("x-auth-token", "whatever"), ("version", "2.0.0")],
            vec![],
        )
        .await
        .problem(401);
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("not accepted by this server"),
        "{p}"
    );
}
