//! An external OAuth 2.0 authorization server as the identity source, against the real
//! Keycloak that `scripts/test-env/keycloak.sh start` runs (realm `vnfm`, its clients described
//! in that script): tokens it issues are mapped to roles and projects as Keystone tokens are;
//! hostile and stale tokens are 401 `invalid_token` with nothing of them logged; keys rotate in
//! Keycloak without a restart here; opaque-token introspection with each client authentication
//! method, and a revoked token refused. Ignored, saying so, when built without Keycloak's
//! variables (`#[vnfm_test_env::needs(keycloak)]`).

use std::sync::Arc;
use std::time::Duration;

use axum::http::{Method, StatusCode};
use base64::Engine;
use serde_json::{Value, json};
use vnfm_oauth::testing::TestKeycloak;
use vnfm_oauth::{OAuthConfig, OAuthVerifier, TokenCheck};

use crate::support;

use support::*;

const PACKAGES: &str = "/vnfpkgm/v2/vnf_packages";
const INSTANCES: &str = "/vnflcm/v2/vnf_instances";

/// A harness whose bearer tokens may be the realm's, verified as `config` says.
async fn harness(config: OAuthConfig) -> Harness {
    let verifier = Arc::new(OAuthVerifier::new(config).unwrap());
    Harness::with(|o| o.oauth = Some(verifier)).await
}

/// A request with `Authorization: Bearer token`; a JSON body for `POST`.
async fn bearer(h: &Harness, method: Method, uri: &str, token: &str, body: Option<Value>) -> Reply {
    let auth = format!("Bearer {token}");
    let mut headers = vec![("authorization", auth.as_str())];
    if uri.contains("/v2/") {
        headers.push(("version", "2.0.0"));
    }
    let bytes = match body {
        Some(v) => {
            headers.push(("content-type", "application/json"));
            serde_json::to_vec(&v).unwrap()
        }
        None => Vec::new(),
    };
    h.raw(method, uri, &headers, bytes).await
}

/// Asserts a `401` with RFC 6750's `invalid_token` challenge and a ProblemDetails.
fn invalid_token(r: &Reply, what: &str) {
    assert_eq!(
        r.status,
        StatusCode::UNAUTHORIZED,
        "{what}: {}",
        String::from_utf8_lossy(&r.body)
    );
    let challenge = r.header("www-authenticate").unwrap_or_default();
    assert!(
        challenge.starts_with("Bearer") && challenge.contains("error=\"invalid_token\""),
        "{what}: {challenge}"
    );
    r.problem(401);
}

/// Asserts a `403` with RFC 6750's `insufficient_scope` challenge.
fn insufficient_scope(r: &Reply, what: &str) -> Value {
    let p = r.problem(403);
    let challenge = r.header("www-authenticate").unwrap_or_default();
    assert!(
        challenge.contains("error=\"insufficient_scope\""),
        "{what}: {challenge}"
    );
    p
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn segments(token: &str) -> Vec<String> {
    token.split('.').map(str::to_owned).collect()
}

/// Onboards the hello package as `token`'s caller and creates an instance of it; its id.
async fn instance_of(h: &Harness, token: &str) -> String {
    let r = bearer(h, Method::POST, PACKAGES, token, Some(json!({}))).await;
    assert_eq!(
        r.status,
        StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    let pkg = r.json()["id"].as_str().unwrap().to_owned();
    let auth = format!("Bearer {token}");
    let r = h
        .raw(
            Method::PUT,
            &format!("{PACKAGES}/{pkg}/package_content"),
            &[
                ("authorization", auth.as_str()),
                ("content-type", "application/zip"),
                ("version", "2.1.0"),
            ],
            zip_dir(HELLO.as_ref()),
        )
        .await;
    assert_eq!(
        r.status,
        StatusCode::ACCEPTED,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    for _ in 0..300 {
        let info = bearer(h, Method::GET, &format!("{PACKAGES}/{pkg}"), token, None)
            .await
            .json();
        if info["onboardingState"] == "ONBOARDED" {
            break;
        }
        assert_ne!(info["onboardingState"], "ERROR", "{info}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let body = json!({"vnfdId": HELLO_VNFD, "vnfInstanceName": "by-oauth"});
    let r = bearer(h, Method::POST, INSTANCES, token, Some(body)).await;
    assert_eq!(
        r.status,
        StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    r.json()["id"].as_str().unwrap().to_owned()
}

#[vnfm_test_env::needs(keycloak)]
#[tokio::test]
async fn keycloak_tokens_carry_roles_and_projects_as_keystone_tokens_do() {
    let kc = TestKeycloak::from_env();
    let h = harness(kc.config()).await;
    let (a, b, reader, nobody, admin) = (
        kc.token("tenant-a").await,
        kc.token("tenant-b").await,
        kc.token("reader-a").await,
        kc.token("nobody-a").await,
        kc.token("cloud-admin").await,
    );

    // tenant-a (member of proj-a) creates; its instance is proj-a's.
    let inst = instance_of(&h, &a).await;
    let uri = format!("{INSTANCES}/{inst}");
    assert_eq!(
        bearer(&h, Method::GET, &uri, &a, None).await.status,
        StatusCode::OK
    );
    // Another project's token gets the answer of an instance that does not exist.
    let theirs = bearer(&h, Method::GET, &uri, &b, None).await;
    let p = theirs.problem(404);
    let missing = format!("{INSTANCES}/00000000-0000-0000-0000-000000000000");
    let none = bearer(&h, Method::GET, &missing, &b, None)
        .await
        .problem(404);
    assert_eq!(
        p["detail"].as_str().unwrap().replace(&inst, "ID"),
        none["detail"]
            .as_str()
            .unwrap()
            .replace("00000000-0000-0000-0000-000000000000", "ID")
    );
    let listed = |r: &Reply| {
        r.json()
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["id"] == inst.as_str())
    };
    assert!(!listed(&bearer(&h, Method::GET, INSTANCES, &b, None).await));
    let r = bearer(&h, Method::DELETE, &uri, &b, None).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);

    // A reader of proj-a reads it and may not change it (insufficient_scope).
    let r = bearer(&h, Method::GET, &uri, &reader, None).await;
    assert_eq!(r.status, StatusCode::OK);
    let p = insufficient_scope(
        &bearer(&h, Method::DELETE, &uri, &reader, None).await,
        "reader",
    );
    assert!(
        p["detail"].as_str().unwrap().contains("may only read"),
        "{p}"
    );
    // A token with none of the mapped roles may do nothing.
    let p = insufficient_scope(
        &bearer(&h, Method::GET, INSTANCES, &nobody, None).await,
        "nobody",
    );
    assert!(
        p["detail"].as_str().unwrap().contains("none of the roles"),
        "{p}"
    );
    // An admin sees every project.
    assert!(listed(
        &bearer(&h, Method::GET, INSTANCES, &admin, None).await
    ));
    assert_eq!(
        bearer(&h, Method::GET, &uri, &admin, None).await.status,
        StatusCode::OK
    );
    // EdDSA tokens of the realm are verified too.
    let ed = kc.token("tenant-a-eddsa").await;
    assert_eq!(
        bearer(&h, Method::GET, &uri, &ed, None).await.status,
        StatusCode::OK
    );
    // The server's own OAuth 2.0 clients keep working beside the authorization server.
    assert_eq!(
        h.call(Method::GET, INSTANCES, None).await.status,
        StatusCode::OK
    );
}

#[vnfm_test_env::needs(keycloak)]
#[tokio::test]
async fn hostile_and_stale_tokens_are_401_invalid_token_and_nothing_of_them_is_logged() {
    let capture = LogCapture::global();
    let kc = TestKeycloak::from_env();
    let mut config = kc.config();
    config.leeway = Duration::from_secs(1);
    let h = harness(config).await;
    let good = kc.token("tenant-a").await;
    assert_eq!(
        bearer(&h, Method::GET, INSTANCES, &good, None).await.status,
        StatusCode::OK
    );
    let parts = segments(&good);
    let header: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(&parts[0])
            .unwrap(),
    )
    .unwrap();
    let mut claims: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(&parts[1])
            .unwrap(),
    )
    .unwrap();
    // alg none: the real claims, no signature.
    let none = format!("{}.{}.", b64(br#"{"alg":"none","typ":"JWT"}"#), parts[1]);
    // HS256 keyed with the realm's public key (as Keycloak publishes it), under its kid.
    let realm: Value = reqwest::get(&kc.issuer)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let public = realm["public_key"].as_str().unwrap();
    let pem = format!("-----BEGIN PUBLIC KEY-----\n{public}\n-----END PUBLIC KEY-----\n");
    let mut hs = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
    hs.kid = header["kid"].as_str().map(str::to_owned);
    let confused = jsonwebtoken::encode(
        &hs,
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(pem.as_bytes()),
    )
    .unwrap();
    // Another project's claims under tenant-a's signature.
    claims["project_id"] = json!("proj-b");
    let tampered = format!(
        "{}.{}.{}",
        parts[0],
        b64(&serde_json::to_vec(&claims).unwrap()),
        parts[2]
    );
    // tenant-a's header and claims with tenant-b's signature.
    let other = segments(&kc.token("tenant-b").await);
    let forged = format!("{}.{}.{}", parts[0], parts[1], other[2]);
    // Over the verifier's 16 KiB (a header over the server's 64 KiB is 431 before this).
    let huge = format!("{good}{}", "A".repeat(20 * 1024));
    let wrong_audience = kc.token("other-audience").await;
    let short = kc.token("short-lived").await;
    // The master realm's token: another issuer (and keys).
    let master = {
        let url = format!("{}/realms/master/protocol/openid-connect/token", kc.url);
        let form = [
            ("grant_type", "password"),
            ("client_id", "admin-cli"),
            ("username", "admin"),
            (
                "password",
                &vnfm_test_env::var("VNFM_TEST_KEYCLOAK_ADMIN_PASSWORD"),
            ),
        ];
        let r: Value = reqwest::Client::new()
            .post(&url)
            .form(&form)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        r["access_token"].as_str().unwrap().to_owned()
    };
    // Past its 5 s life and the 1 s leeway.
    tokio::time::sleep(Duration::from_secs(7)).await;
    let cases = [
        ("alg none", none),
        ("HS256 keyed with the public key", confused),
        ("tampered claims", tampered),
        ("forged signature", forged),
        ("huge", huge),
        ("wrong audience", wrong_audience),
        ("expired", short),
        ("another issuer", master),
    ];
    for (what, token) in &cases {
        let r = bearer(&h, Method::GET, INSTANCES, token, None).await;
        invalid_token(&r, what);
        let body = String::from_utf8_lossy(&r.body);
        for part in token.split('.').filter(|p| p.len() >= 16) {
            assert!(!body.contains(part), "{what}: {body}");
        }
    }
    // An issuer this server was configured with but the token does not name (the same
    // Keycloak under another host name): the token's `iss` is refused.
    let mut localhost = kc.config();
    localhost.issuer = kc.issuer.replace("127.0.0.1", "localhost");
    let h2 = harness(localhost).await;
    let fresh = kc.token("tenant-a").await;
    let r = bearer(&h2, Method::GET, INSTANCES, &fresh, None).await;
    invalid_token(&r, "wrong issuer");
    assert!(
        r.json()["detail"]
            .as_str()
            .unwrap()
            .contains("another issuer"),
        "{}",
        r.json()
    );
    // Nothing of any token reached the log (the refusals were logged, by reason).
    let log = capture.text();
    assert!(
        log.contains("the bearer token is refused"),
        "nothing logged"
    );
    for (what, token) in cases.iter().chain([("fresh", fresh)].iter()) {
        for part in token.split('.').filter(|p| p.len() >= 16) {
            assert!(!log.contains(&part[..16]), "{what} logged");
        }
    }
}

/// The realm's ECDSA key providers (only `tenant-a-es256` signs with them, so rotating them
/// disturbs no other test): (id, priority, active and enabled).
async fn ecdsa_keys(kc: &TestKeycloak) -> Vec<(String, i64, bool)> {
    let all = kc
        .admin(
            reqwest::Method::GET,
            "/components?type=org.keycloak.keys.KeyProvider",
            None,
        )
        .await;
    let flag = |c: &Value, k: &str| c["config"][k][0].as_str() != Some("false");
    all.as_array()
        .unwrap()
        .iter()
        .filter(|c| c["providerId"] == "ecdsa-generated")
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_owned(),
                c["config"]["priority"][0]
                    .as_str()
                    .unwrap_or("0")
                    .parse()
                    .unwrap(),
                flag(c, "active") && flag(c, "enabled"),
            )
        })
        .collect()
}

#[vnfm_test_env::needs(keycloak)]
#[tokio::test]
async fn keys_rotated_in_keycloak_are_followed_without_a_restart() {
    let kc = TestKeycloak::from_env();
    let mut config = kc.config();
    config.jwks_refresh = Duration::from_secs(2);
    let h = harness(config).await;
    let before = ecdsa_keys(&kc).await;
    let old: Vec<String> = before.iter().filter(|k| k.2).map(|k| k.0.clone()).collect();
    assert!(!old.is_empty(), "{before:?}");
    let top = before.iter().map(|k| k.1).max().unwrap();
    let t1 = kc.token("tenant-a-es256").await;
    assert_eq!(
        bearer(&h, Method::GET, INSTANCES, &t1, None).await.status,
        StatusCode::OK
    );

    // A new key, of a higher priority: the realm signs with it from now on.
    let realm = kc.admin(reqwest::Method::GET, "", None).await;
    let name = format!("ecdsa-rotated-{}", top + 1);
    let body = json!({
        "name": name, "providerId": "ecdsa-generated",
        "providerType": "org.keycloak.keys.KeyProvider", "parentId": realm["id"],
        "config": {"priority": [(top + 1).to_string()], "ecdsaEllipticCurveKey": ["P-256"],
                   "active": ["true"], "enabled": ["true"]}
    });
    kc.admin(reqwest::Method::POST, "/components", Some(body))
        .await;
    // The old keys only verify now (passive).
    for id in &old {
        kc.set_key_flags(id, false, true).await;
    }
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let t2 = kc.token("tenant-a-es256").await;
    assert_ne!(segments(&t1)[0], segments(&t2)[0], "a new kid");
    assert_eq!(
        bearer(&h, Method::GET, INSTANCES, &t2, None).await.status,
        StatusCode::OK
    );
    assert_eq!(
        bearer(&h, Method::GET, INSTANCES, &t1, None).await.status,
        StatusCode::OK
    );

    // The old keys disabled (no longer published): once the set is read again, tokens they
    // signed are refused; the new key's still pass.
    for id in &old {
        kc.set_key_flags(id, false, false).await;
    }
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert_eq!(
        bearer(&h, Method::GET, INSTANCES, &t2, None).await.status,
        StatusCode::OK
    );
    invalid_token(
        &bearer(&h, Method::GET, INSTANCES, &t1, None).await,
        "old key",
    );
}

#[vnfm_test_env::needs(keycloak)]
#[tokio::test]
async fn introspection_authenticates_each_way_and_a_revoked_token_is_refused() {
    let kc = TestKeycloak::from_env();
    for (client, method) in [
        ("vnfm", "client_secret_basic"),
        ("vnfm", "client_secret_post"),
        ("vnfm-jwt", "client_secret_jwt"),
        ("vnfm-pkjwt", "private_key_jwt"),
    ] {
        let mut config = kc.config();
        config.check = TokenCheck::Introspection;
        let mut introspection = kc.introspection(client, method);
        // Every request asks, so that the revocation shows at once.
        introspection.cache_ttl = Duration::ZERO;
        config.introspection = Some(introspection);
        let h = harness(config).await;
        let token = kc.token("tenant-a").await;
        let r = bearer(&h, Method::GET, INSTANCES, &token, None).await;
        assert_eq!(
            r.status,
            StatusCode::OK,
            "{method}: {}",
            String::from_utf8_lossy(&r.body)
        );
        let reader = kc.token("reader-a").await;
        insufficient_scope(
            &bearer(
                &h,
                Method::POST,
                INSTANCES,
                &reader,
                Some(json!({"vnfdId": HELLO_VNFD})),
            )
            .await,
            method,
        );
        invalid_token(
            &bearer(
                &h,
                Method::GET,
                INSTANCES,
                "an-opaque-token-nobody-issued",
                None,
            )
            .await,
            method,
        );
        kc.revoke("tenant-a", &token).await;
        invalid_token(
            &bearer(&h, Method::GET, INSTANCES, &token, None).await,
            &format!("{method}: revoked"),
        );
    }
}

#[vnfm_test_env::needs(keycloak)]
#[tokio::test]
async fn an_unreachable_introspection_endpoint_is_a_503_while_jwts_keep_working() {
    let kc = TestKeycloak::from_env();
    let mut config = kc.config();
    config.check = TokenCheck::Auto;
    let mut introspection = kc.introspection("vnfm", "client_secret_basic");
    // Nothing listens there.
    introspection.url = Some("http://127.0.0.1:9/introspect".into());
    config.introspection = Some(introspection);
    let h = harness(config).await;
    let jwt = kc.token("tenant-a").await;
    assert_eq!(
        bearer(&h, Method::GET, INSTANCES, &jwt, None).await.status,
        StatusCode::OK
    );
    let r = bearer(&h, Method::GET, INSTANCES, "an-opaque-token", None).await;
    let p = r.problem(503);
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("cannot be verified now"),
        "{p}"
    );
    assert_eq!(
        bearer(&h, Method::GET, INSTANCES, &jwt, None).await.status,
        StatusCode::OK
    );
}
