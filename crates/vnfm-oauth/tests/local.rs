//! The verifier against an authorization server of the test's own (metadata, key set and
//! introspection served by axum on 127.0.0.1) with keys made here (`tests/data/*.pem`, made
//! with `openssl genpkey`): the accepted algorithms, the hostile tokens (alg none, an HMAC made
//! with the public key, forged and tampered signatures, wrong issuer and audience, expired,
//! huge), key rotation, the rate limit of key-set reads, introspection with each client
//! authentication method, its cache, and the server going away.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::{get, post};
use axum::{Form, Json, Router};
use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use vnfm_oauth::{
    ClientAuth, IntrospectionConfig, OAuthConfig, OAuthError, OAuthVerifier, Refusal, Secret,
    TokenCheck, Verified,
};

const RSA: &str = include_str!("data/rsa.pem");
const RSA_OTHER: &str = include_str!("data/rsa-other.pem");
const RSA_PUBLIC: &str = include_str!("data/rsa.pub.pem");
const EC: &str = include_str!("data/ec.pem");
const ED: &str = include_str!("data/ed.pem");
/// The public keys of the PEM files above, as a JWKS (kids rsa-1, rsa-2, ec-1, ed-1).
const JWKS: &str = include_str!("data/jwks.json");
const CLIENT_SECRET: &str = "introspection-s3cret";

/// The test's authorization server.
#[derive(Default)]
struct As {
    issuer: Mutex<String>,
    keys: Mutex<Vec<Value>>,
    jwks_reads: AtomicUsize,
    introspections: AtomicUsize,
    /// Introspection answers by token.
    answers: Mutex<Vec<(String, Value)>>,
    /// The client authentication each introspection used.
    methods: Mutex<Vec<String>>,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn key(pem: &str, alg: Algorithm) -> EncodingKey {
    match alg {
        Algorithm::ES256 => EncodingKey::from_ec_pem(pem.as_bytes()).unwrap(),
        Algorithm::EdDSA => EncodingKey::from_ed_pem(pem.as_bytes()).unwrap(),
        _ => EncodingKey::from_rsa_pem(pem.as_bytes()).unwrap(),
    }
}

/// The public key `kid` of [`JWKS`].
fn jwk(kid: &str) -> Value {
    let all: Value = serde_json::from_str(JWKS).unwrap();
    all["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["kid"] == kid)
        .unwrap()
        .clone()
}

/// A token signed with `pem` under `kid`.
fn sign(pem: &str, alg: Algorithm, kid: &str, claims: &Value) -> String {
    let mut header = Header::new(alg);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, claims, &key(pem, alg)).unwrap()
}

/// A token whose header and claims are as given, its signature `sig`, whatever they say.
fn raw_token(header: &Value, claims: &Value, sig: &[u8]) -> String {
    format!(
        "{}.{}.{}",
        b64(&serde_json::to_vec(header).unwrap()),
        b64(&serde_json::to_vec(claims).unwrap()),
        b64(sig)
    )
}

async fn metadata(State(s): State<Arc<As>>) -> Json<Value> {
    let issuer = s.issuer.lock().unwrap().clone();
    Json(json!({
        "issuer": issuer, "jwks_uri": format!("{issuer}/jwks"),
        "introspection_endpoint": format!("{issuer}/introspect"),
        "token_endpoint": format!("{issuer}/token"),
    }))
}

async fn jwks(State(s): State<Arc<As>>) -> Json<Value> {
    s.jwks_reads.fetch_add(1, Ordering::SeqCst);
    Json(json!({"keys": s.keys.lock().unwrap().clone()}))
}

/// Checks the client's authentication as the real server would, then answers.
async fn introspect(
    State(s): State<Arc<As>>,
    headers: HeaderMap,
    Form(form): Form<Vec<(String, String)>>,
) -> Result<Json<Value>, axum::http::StatusCode> {
    s.introspections.fetch_add(1, Ordering::SeqCst);
    let field = |name: &str| form.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let issuer = s.issuer.lock().unwrap().clone();
    let method = if let Some(basic) = headers.get("authorization") {
        let encoded = basic.to_str().unwrap().strip_prefix("Basic ").unwrap();
        let pair = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .unwrap();
        let expected = format!("vnfm:{CLIENT_SECRET}");
        (pair == expected.as_bytes()).then_some("client_secret_basic")
    } else if let Some(secret) = field("client_secret") {
        (field("client_id").as_deref() == Some("vnfm") && secret == CLIENT_SECRET)
            .then_some("client_secret_post")
    } else if let Some(assertion) = field("client_assertion") {
        let header = jsonwebtoken::decode_header(&assertion).unwrap();
        let (key, method) = if header.alg == Algorithm::HS256 {
            (
                jsonwebtoken::DecodingKey::from_secret(CLIENT_SECRET.as_bytes()),
                "client_secret_jwt",
            )
        } else {
            (
                jsonwebtoken::DecodingKey::from_rsa_pem(RSA_PUBLIC.as_bytes()).unwrap(),
                "private_key_jwt",
            )
        };
        let mut v = jsonwebtoken::Validation::new(header.alg);
        v.set_audience(&[format!("{issuer}/token")]);
        v.set_issuer(&["vnfm"]);
        let ok = jsonwebtoken::decode::<Value>(&assertion, &key, &v)
            .is_ok_and(|d| d.claims["sub"] == "vnfm" && d.claims["jti"].is_string());
        ok.then_some(method)
    } else {
        None
    };
    let Some(method) = method else {
        return Err(axum::http::StatusCode::UNAUTHORIZED);
    };
    s.methods.lock().unwrap().push(method.to_owned());
    let token = field("token").unwrap_or_default();
    let answer = s
        .answers
        .lock()
        .unwrap()
        .iter()
        .find(|(t, _)| *t == token)
        .map(|(_, a)| a.clone())
        .unwrap_or(json!({"active": false}));
    Ok(Json(answer))
}

/// The server, on a free port; dropping the handle's task stops it.
async fn server() -> (Arc<As>, String, tokio::task::JoinHandle<()>) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let state = Arc::new(As::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}/realms/test", listener.local_addr().unwrap());
    *state.issuer.lock().unwrap() = issuer.clone();
    state
        .keys
        .lock()
        .unwrap()
        .extend([jwk("rsa-1"), jwk("ec-1"), jwk("ed-1")]);
    let app = Router::new()
        .route(
            "/realms/test/.well-known/openid-configuration",
            get(metadata),
        )
        .route("/realms/test/jwks", get(jwks))
        .route("/realms/test/introspect", post(introspect))
        .with_state(state.clone());
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (state, issuer, task)
}

fn claims(issuer: &str) -> Value {
    json!({"iss": issuer, "aud": ["account", "vnfm"], "sub": "u-1", "azp": "tenant-a",
           "exp": now() + 300, "iat": now(), "scope": "profile member",
           "realm_access": {"roles": ["reader"]}, "project_id": "proj-a"})
}

fn refusal(r: Result<Arc<vnfm_oauth::TokenIdentity>, OAuthError>) -> Refusal {
    match r {
        Err(OAuthError::Invalid(r)) => r,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn accepted_algorithms_give_the_roles_and_project_of_the_claims() {
    let (_as, issuer, _task) = server().await;
    let v = OAuthVerifier::new(OAuthConfig::new(&issuer, "vnfm")).unwrap();
    let c = claims(&issuer);
    for (pem, alg, kid) in [
        (RSA, Algorithm::RS256, "rsa-1"),
        (RSA, Algorithm::PS256, "rsa-1"),
        (EC, Algorithm::ES256, "ec-1"),
        (ED, Algorithm::EdDSA, "ed-1"),
    ] {
        let id = v.verify(&sign(pem, alg, kid, &c)).await.unwrap();
        assert_eq!(id.subject, "u-1", "{alg:?}");
        assert_eq!(id.client_id.as_deref(), Some("tenant-a"));
        assert_eq!(id.project_id.as_deref(), Some("proj-a"));
        assert_eq!(id.roles, ["reader", "profile", "member"]);
        assert_eq!(id.verified, Verified::Jwt);
        let access = v.access(&id);
        assert!(access.read && access.write && !access.all_projects);
    }
}

#[tokio::test]
async fn hostile_tokens_are_refused_and_no_error_quotes_them() {
    let (auth_server, issuer, _task) = server().await;
    let mut config = OAuthConfig::new(&issuer, "vnfm");
    config.leeway = Duration::from_secs(30);
    let v = OAuthVerifier::new(config).unwrap();
    let c = claims(&issuer);
    let good = sign(RSA, Algorithm::RS256, "rsa-1", &c);
    v.verify(&good).await.unwrap();
    let with = |k: &str, val: Value| {
        let mut c = c.clone();
        c[k] = val;
        c
    };
    let mut tampered = good.split('.').map(str::to_owned).collect::<Vec<_>>();
    tampered[1] = b64(&serde_json::to_vec(&with("project_id", json!("proj-b"))).unwrap());
    let tampered = tampered.join(".");
    // The classic confusion: an HMAC keyed with the verifier's public key (PEM and DER).
    let hmac = |secret: &[u8]| {
        let mut h = Header::new(Algorithm::HS256);
        h.kid = Some("rsa-1".into());
        jsonwebtoken::encode(&h, &c, &EncodingKey::from_secret(secret)).unwrap()
    };
    let der = base64::engine::general_purpose::STANDARD
        .decode(
            RSA_PUBLIC
                .lines()
                .filter(|l| !l.starts_with("-----"))
                .collect::<String>(),
        )
        .unwrap();
    let cases: Vec<(&str, String, Refusal)> = vec![
        (
            "alg none",
            raw_token(&json!({"alg": "none", "typ": "JWT"}), &c, b""),
            Refusal::Algorithm,
        ),
        (
            "alg None with a kid",
            raw_token(&json!({"alg": "None", "kid": "rsa-1"}), &c, b"x"),
            Refusal::Algorithm,
        ),
        (
            "HS256 keyed with the public key PEM",
            hmac(RSA_PUBLIC.as_bytes()),
            Refusal::Algorithm,
        ),
        (
            "HS256 keyed with the public key DER",
            hmac(&der),
            Refusal::Algorithm,
        ),
        (
            "forged: signed by another key under a known kid",
            sign(RSA_OTHER, Algorithm::RS256, "rsa-1", &c),
            Refusal::Signature,
        ),
        ("tampered claims", tampered, Refusal::Signature),
        (
            "an EC signature under an RSA kid",
            sign(EC, Algorithm::ES256, "rsa-1", &c),
            Refusal::UnknownKey,
        ),
        (
            "wrong issuer",
            sign(
                RSA,
                Algorithm::RS256,
                "rsa-1",
                &with("iss", json!("http://evil.example/realms/test")),
            ),
            Refusal::Issuer,
        ),
        (
            "wrong audience",
            sign(
                RSA,
                Algorithm::RS256,
                "rsa-1",
                &with("aud", json!("account")),
            ),
            Refusal::Audience,
        ),
        (
            "no audience",
            sign(RSA, Algorithm::RS256, "rsa-1", &with("aud", Value::Null)),
            Refusal::MissingClaim,
        ),
        (
            "expired beyond the leeway",
            sign(
                RSA,
                Algorithm::RS256,
                "rsa-1",
                &with("exp", json!(now() - 60)),
            ),
            Refusal::Expired,
        ),
        (
            "not yet valid",
            sign(
                RSA,
                Algorithm::RS256,
                "rsa-1",
                &with("nbf", json!(now() + 600)),
            ),
            Refusal::NotYetValid,
        ),
        (
            "huge",
            format!("{good}{}", "A".repeat(1024 * 1024)),
            Refusal::TooLarge,
        ),
        ("a JWE", "a.b.c.d.e".into(), Refusal::Malformed),
        ("garbage", "not a token at all".into(), Refusal::Malformed),
    ];
    for (what, token, want) in cases {
        let e = v
            .verify(&token)
            .await
            .err()
            .unwrap_or_else(|| panic!("{what} was accepted"));
        assert_eq!(e.refusal(), Some(want), "{what}: {e}");
        let shown = format!("{e} {e:?}");
        for part in token.split('.').filter(|p| p.len() >= 16) {
            assert!(!shown.contains(part), "{what}: {shown}");
        }
        assert!(
            !shown.contains("proj-a") && !shown.contains("u-1"),
            "{what}: {shown}"
        );
    }
    // Within the leeway an expired token still passes.
    let late = sign(
        RSA,
        Algorithm::RS256,
        "rsa-1",
        &with("exp", json!(now() - 5)),
    );
    assert!(v.verify(&late).await.is_ok());
    assert!(auth_server.jwks_reads.load(Ordering::SeqCst) >= 1);
}

#[tokio::test]
async fn keys_rotate_without_a_restart_and_unknown_kids_read_the_set_at_a_bounded_rate() {
    let (auth_server, issuer, _task) = server().await;
    let mut config = OAuthConfig::new(&issuer, "vnfm");
    config.jwks_refresh = Duration::from_secs(2);
    let v = OAuthVerifier::new(config).unwrap();
    let c = claims(&issuer);
    let old = sign(RSA, Algorithm::RS256, "rsa-1", &c);
    v.verify(&old).await.unwrap();
    assert_eq!(auth_server.jwks_reads.load(Ordering::SeqCst), 1);

    // A flood of tokens naming keys nobody publishes reads the set at most once per interval.
    for i in 0..50 {
        let t = sign(RSA_OTHER, Algorithm::RS256, &format!("nobody-{i}"), &c);
        assert_eq!(refusal(v.verify(&t).await), Refusal::UnknownKey);
    }
    assert!(auth_server.jwks_reads.load(Ordering::SeqCst) <= 2);

    // The issuer adds a key and signs with it: the first token naming it reads the set again.
    auth_server.keys.lock().unwrap().push(jwk("rsa-2"));
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let new = sign(RSA_OTHER, Algorithm::RS256, "rsa-2", &c);
    v.verify(&new).await.unwrap();
    v.verify(&old).await.unwrap();

    // The issuer drops the old key: once the set is read again, its tokens are refused.
    auth_server
        .keys
        .lock()
        .unwrap()
        .retain(|k| k["kid"] != "rsa-1");
    tokio::time::sleep(Duration::from_millis(2100)).await;
    v.verify(&new).await.unwrap();
    assert_eq!(refusal(v.verify(&old).await), Refusal::UnknownKey);
}

fn introspecting(issuer: &str, auth: ClientAuth, check: TokenCheck) -> OAuthVerifier {
    let mut config = OAuthConfig::new(issuer, "vnfm");
    config.check = check;
    config.introspection = Some(IntrospectionConfig::new("vnfm", auth));
    OAuthVerifier::new(config).unwrap()
}

#[tokio::test]
async fn opaque_tokens_are_introspected_with_each_client_authentication_and_cached() {
    let (auth_server, issuer, _task) = server().await;
    auth_server.answers.lock().unwrap().extend([
        (
            "opaque-active".to_owned(),
            json!({"active": true, "iss": issuer, "aud": "vnfm", "sub": "u-2",
                   "client_id": "tenant-b", "exp": now() + 300, "scope": "member",
                   "project_id": "proj-b"}),
        ),
        (
            "opaque-other-audience".to_owned(),
            json!({"active": true, "aud": "account", "sub": "u-3"}),
        ),
    ]);
    let methods = [
        ClientAuth::SecretBasic(Secret::new(CLIENT_SECRET)),
        ClientAuth::SecretPost(Secret::new(CLIENT_SECRET)),
        ClientAuth::SecretJwt(Secret::new(CLIENT_SECRET)),
        ClientAuth::PrivateKeyJwt {
            pem: Secret::new(RSA),
            key_id: Some("client-1".into()),
        },
    ];
    for auth in methods {
        let method = auth.method();
        let v = introspecting(&issuer, auth, TokenCheck::Auto);
        let id = v.verify("opaque-active").await.unwrap();
        assert_eq!(id.verified, Verified::Introspection);
        assert_eq!(id.project_id.as_deref(), Some("proj-b"));
        assert_eq!(id.roles, ["member"]);
        assert_eq!(
            auth_server
                .methods
                .lock()
                .unwrap()
                .last()
                .map(String::as_str),
            Some(method)
        );
        // The answer is cached: no second request.
        let before = auth_server.introspections.load(Ordering::SeqCst);
        v.verify("opaque-active").await.unwrap();
        assert_eq!(auth_server.introspections.load(Ordering::SeqCst), before);
        assert_eq!(refusal(v.verify("opaque-revoked").await), Refusal::Inactive);
        assert_eq!(
            refusal(v.verify("opaque-other-audience").await),
            Refusal::Audience
        );
    }
    // A wrong client secret is the server's refusal of this server, not the token's fault.
    let wrong = introspecting(
        &issuer,
        ClientAuth::SecretBasic(Secret::new("wrong")),
        TokenCheck::Auto,
    );
    let e = wrong.verify("opaque-active").await.unwrap_err();
    assert!(matches!(e, OAuthError::Status { status: 401, .. }), "{e}");
    assert!(!e.to_string().contains("wrong"), "{e}");
}

#[tokio::test]
async fn the_server_going_away_is_unavailability_for_introspection_while_held_keys_still_verify() {
    let (_as, issuer, task) = server().await;
    let v = introspecting(
        &issuer,
        ClientAuth::SecretPost(Secret::new(CLIENT_SECRET)),
        TokenCheck::Auto,
    );
    let jwt = sign(RSA, Algorithm::RS256, "rsa-1", &claims(&issuer));
    v.verify(&jwt).await.unwrap();
    task.abort();
    let _ = task.await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    // The keys held verify JWTs; an opaque token cannot be asked about.
    v.verify(&jwt).await.unwrap();
    let e = v.verify("opaque-unknown").await.unwrap_err();
    assert!(!e.is_invalid_token(), "{e}");
    assert!(matches!(e, OAuthError::Unreachable { .. }), "{e}");
    // A JWT naming a key the set read a moment ago did not have is refused without asking.
    let other = sign(RSA_OTHER, Algorithm::RS256, "rsa-9", &claims(&issuer));
    assert_eq!(refusal(v.verify(&other).await), Refusal::UnknownKey);
}

#[tokio::test]
async fn an_issuer_whose_metadata_names_another_issuer_is_not_trusted() {
    let (auth_server, issuer, _task) = server().await;
    *auth_server.issuer.lock().unwrap() = "http://evil.example".into();
    let v = OAuthVerifier::new(OAuthConfig::new(&issuer, "vnfm")).unwrap();
    let e = v
        .verify(&sign(RSA, Algorithm::RS256, "rsa-1", &claims(&issuer)))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("not the configured issuer"), "{e}");
    assert!(!e.is_invalid_token());
}

#[test]
fn configurations_that_cannot_work_are_refused() {
    let e = OAuthVerifier::new(OAuthConfig::new("not a url", "vnfm")).unwrap_err();
    assert!(e.to_string().contains("not a URL"), "{e}");
    let e = OAuthVerifier::new(OAuthConfig::new("https://as.example", "")).unwrap_err();
    assert!(e.to_string().contains("audience"), "{e}");
    let mut c = OAuthConfig::new("https://as.example", "vnfm");
    c.check = TokenCheck::Introspection;
    assert!(OAuthVerifier::new(c).is_err());
}

#[path = "support/pki.rs"]
mod pki;

/// What the mutual TLS authorization server saw of one request: the CN of the client
/// certificate, the request line and the form.
#[derive(Debug, Clone)]
struct Seen {
    client_cn: Option<String>,
    request_line: String,
    form: Vec<(String, String)>,
    authorization: bool,
}

/// An authorization server on HTTPS that requires a client certificate from `client_ca` at the
/// handshake (as Keycloak with `https-client-auth=required`): its metadata names a plain and a
/// mutual-TLS (`mtls_endpoint_aliases`) introspection endpoint; the latter answers `answer`
/// when the form's `client_id` is `vnfm` and the certificate's CN `vnfm-client`, else 401.
async fn mtls_server(
    server: &pki::Issued,
    client_ca: &str,
    answer: Value,
) -> (String, Arc<Mutex<Vec<Seen>>>) {
    use rustls_pki_types::pem::PemObject;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut roots = rustls::RootCertStore::empty();
    for ca in rustls_pki_types::CertificateDer::pem_slice_iter(client_ca.as_bytes()) {
        roots.add(ca.unwrap()).unwrap();
    }
    let verifier = rustls::server::WebPkiClientVerifier::builder(Arc::new(roots))
        .build()
        .unwrap();
    let certs = rustls_pki_types::CertificateDer::pem_slice_iter(server.cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = rustls_pki_types::PrivateKeyDer::from_pem_slice(server.key_pem.as_bytes()).unwrap();
    let config = rustls::ServerConfig::builder()
        .with_client_cert_verifier(verifier)
        .with_single_cert(certs, key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("https://{}", listener.local_addr().unwrap());
    let issuer = format!("{base}/realms/test");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let realm = issuer.clone();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            let (log, issuer, answer) = (log.clone(), realm.clone(), answer.clone());
            tokio::spawn(async move {
                // A client without a certificate from the CA fails here.
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let client_cn = tls
                    .get_ref()
                    .1
                    .peer_certificates()
                    .and_then(|c| c.first())
                    .and_then(|der| openssl::x509::X509::from_der(der).ok())
                    .and_then(|x| {
                        x.subject_name()
                            .entries_by_nid(openssl::nid::Nid::COMMONNAME)
                            .next()
                            .map(|e| e.data().to_string().unwrap())
                    });
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let head_end = loop {
                    let n = tls.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break i + 4;
                    }
                };
                let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
                let length = head
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse::<usize>().ok())?
                    })
                    .unwrap_or(0);
                while buf.len() < head_end + length {
                    let n = tls.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                // The test's values need no percent-decoding.
                let form: Vec<(String, String)> = String::from_utf8_lossy(&buf[head_end..])
                    .split('&')
                    .filter_map(|pair| pair.split_once('='))
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect();
                let request_line = head.lines().next().unwrap_or_default().to_owned();
                let authorization = head
                    .lines()
                    .any(|l| l.to_ascii_lowercase().starts_with("authorization:"));
                let field = |name: &str| {
                    form.iter()
                        .find(|(k, _)| k == name)
                        .map(|(_, v)| v.as_str())
                };
                let (status, body) = if request_line
                    .starts_with("GET /realms/test/.well-known/openid-configuration")
                {
                    (
                        "200 OK",
                        json!({
                            "issuer": issuer,
                            "introspection_endpoint": format!("{issuer}/introspect"),
                            "mtls_endpoint_aliases": {
                                "introspection_endpoint": format!("{issuer}/mtls/introspect")
                            },
                        }),
                    )
                } else if request_line.starts_with("POST /realms/test/mtls/introspect ")
                    && field("client_id") == Some("vnfm")
                    && client_cn.as_deref() == Some("vnfm-client")
                {
                    ("200 OK", answer)
                } else {
                    ("401 Unauthorized", json!({"error": "invalid_client"}))
                };
                log.lock().unwrap().push(Seen {
                    client_cn,
                    request_line,
                    form,
                    authorization,
                });
                let body = body.to_string();
                let reply = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = tls.write_all(reply.as_bytes()).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    (issuer, seen)
}

/// A verifier that introspects at `issuer` by tls_client_auth with `client`, trusting `ca`.
fn tls_client_auth(
    issuer: &str,
    ca: &str,
    client: &pki::Issued,
) -> Result<OAuthVerifier, OAuthError> {
    let mut config = OAuthConfig::new(issuer, "vnfm");
    config.check = TokenCheck::Introspection;
    config.ca_pem = Some(ca.to_owned());
    config.introspection = Some(IntrospectionConfig::new(
        "vnfm",
        ClientAuth::TlsClientAuth {
            cert_pem: client.cert_pem.clone(),
            key_pem: Secret::new(client.key_pem.clone()),
        },
    ));
    OAuthVerifier::new(config)
}

#[tokio::test]
async fn tls_client_auth_presents_the_client_certificate_at_the_mutual_tls_alias_and_sends_only_the_client_id()
 {
    let ca = pki::Pki::new("test CA");
    let server = ca.server("localhost", &[pki::San::Ip("127.0.0.1")]);
    let answer = json!({"active": true, "sub": "u-9", "client_id": "tenant-a",
                        "scope": "member", "project_id": "proj-a", "exp": now() + 300,
                        "cnf": {"x5t#S256": "bound-thumbprint"}});
    let (issuer, seen) = mtls_server(&server, &ca.ca_pem, answer).await;
    let client = ca.client("vnfm-client", &[]);
    let v = tls_client_auth(&issuer, &ca.ca_pem, &client).unwrap();
    assert_eq!(
        v.config().introspection.as_ref().unwrap().auth.method(),
        "tls_client_auth"
    );
    let id = v.verify("opaque-mtls").await.unwrap();
    assert_eq!(id.verified, Verified::Introspection);
    assert_eq!(id.project_id.as_deref(), Some("proj-a"));
    assert_eq!(id.roles, ["member"]);
    assert_eq!(
        id.certificate_thumbprint.as_deref(),
        Some("bound-thumbprint")
    );
    let requests = seen.lock().unwrap().clone();
    let introspection = requests
        .iter()
        .find(|s| s.request_line.starts_with("POST "))
        .expect("an introspection request");
    // The metadata's mutual-TLS alias, the certificate at the handshake, and in the form the
    // token and the client id only: no secret, no assertion, no Authorization.
    assert!(
        introspection
            .request_line
            .starts_with("POST /realms/test/mtls/introspect "),
        "{introspection:?}"
    );
    assert_eq!(introspection.client_cn.as_deref(), Some("vnfm-client"));
    let mut names: Vec<&str> = introspection.form.iter().map(|(k, _)| k.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["client_id", "token", "token_type_hint"]);
    assert!(!introspection.authorization);

    // A client certificate of another CA fails the handshake: the server could not be
    // asked (503 for the API), not a refusal of the token.
    let stranger = pki::Pki::new("another CA").client("vnfm-client", &[]);
    let v = tls_client_auth(&issuer, &ca.ca_pem, &stranger).unwrap();
    let e = v.verify("opaque-mtls-2").await.unwrap_err();
    assert!(!e.is_invalid_token(), "{e}");
    // The right CA, another client: the authorization server refuses this server's client.
    let other = ca.client("someone-else", &[]);
    let v = tls_client_auth(&issuer, &ca.ca_pem, &other).unwrap();
    let e = v.verify("opaque-mtls-3").await.unwrap_err();
    assert!(matches!(e, OAuthError::Status { status: 401, .. }), "{e}");
    // Without the CA of the server's certificate (the system's roots), nothing is sent.
    let mut config = OAuthConfig::new(&issuer, "vnfm");
    config.check = TokenCheck::Introspection;
    config.introspection = Some(IntrospectionConfig::new(
        "vnfm",
        ClientAuth::TlsClientAuth {
            cert_pem: client.cert_pem.clone(),
            key_pem: Secret::new(client.key_pem.clone()),
        },
    ));
    let before = seen.lock().unwrap().len();
    let e = OAuthVerifier::new(config)
        .unwrap()
        .verify("opaque-mtls-4")
        .await
        .unwrap_err();
    assert!(!e.is_invalid_token(), "{e}");
    assert_eq!(seen.lock().unwrap().len(), before);
}

#[test]
fn tls_client_auth_without_a_certificate_and_key_is_refused_at_start() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let ca = pki::Pki::new("test CA");
    let client = ca.client("vnfm-client", &[]);
    let bad = pki::Issued {
        cert_pem: client.cert_pem.clone(),
        key_pem: "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWtleQ==\n-----END PRIVATE KEY-----\n"
            .into(),
        der: client.der.clone(),
    };
    for (cert, key) in [
        (client.cert_pem.as_str(), "no key at all"),
        ("no certificate", client.key_pem.as_str()),
    ] {
        let broken = pki::Issued {
            cert_pem: cert.into(),
            key_pem: key.into(),
            der: Vec::new(),
        };
        let e = tls_client_auth("https://127.0.0.1:1/realms/x", &ca.ca_pem, &broken)
            .err()
            .unwrap();
        assert!(e.to_string().contains("tls_client_auth"), "{e}");
        assert!(!e.to_string().contains("BEGIN"), "{e}");
    }
    // A key that is no key is refused when the TLS client is built, or at the handshake; it
    // is never quoted.
    if let Err(e) = tls_client_auth("https://127.0.0.1:1/realms/x", &ca.ca_pem, &bad) {
        assert!(!e.to_string().contains("c2VjcmV0"), "{e}");
    }
    let e = tls_client_auth("https://127.0.0.1:1/realms/x", "no CA here", &client)
        .err()
        .unwrap();
    assert!(e.to_string().contains("CA file"), "{e}");
}
