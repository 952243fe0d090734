//! Outgoing calls with access tokens of the server's own authorization server, against the
//! real Keycloak of `scripts/test-env/keycloak.sh start` (realm `vnfm`): the VNFM's client
//! gets its tokens by client credentials, authenticating by `client_secret_basic`,
//! `private_key_jwt` or `tls_client_auth` (the token endpoint from the issuer's metadata, its
//! mutual-TLS alias for the last); an NFVO and subscriber stand-in on loopback introspects
//! every bearer token at Keycloak as its own client `nfvo` and accepts only an active token
//! of the expected client. Tokens are reused across calls (grants, VNFD fetches,
//! notifications), a `401` makes exactly one new token and one retry, a subscription's own
//! authentication wins over the server's tokens, a callback outside the configured prefixes
//! gets no token, and nothing of a token, secret or key reaches the log.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use serde_json::{Value, json};
use vnfm_driver_api::{
    CallbackMethod, CallbackRequest, CallbackSender, GrantDecision, Nfvo, NfvoAuth,
};
use vnfm_oauth::testing::TestKeycloak;
use vnfm_oauth::{ClientAuth, ClientCredentials, ClientCredentialsConfig, Secret};
use vnfm_outbound::{HttpCallbackSender, NfvoTimings, Sol003Nfvo};
use vnfm_types::{GrantRequest, SubscriptionAuthentication};

/// One request the stand-in received.
#[derive(Debug, Clone)]
struct Seen {
    method: Method,
    path: String,
    /// The `Authorization` header.
    authorization: Option<String>,
    /// The bearer token's client, when Keycloak says it is active.
    client: Option<String>,
    /// The status answered.
    status: u16,
}

/// The NFVO and subscriber stand-in.
#[derive(Clone)]
struct StandIn {
    seen: Arc<Mutex<Vec<Seen>>>,
    /// How many of the next requests are answered `401` whatever their token.
    refuse_next: Arc<Mutex<u32>>,
    /// The client whose tokens are accepted.
    expected_client: String,
    introspection_url: String,
    nfvo_secret: String,
    http: reqwest::Client,
}

impl StandIn {
    /// What Keycloak says of `token`: its client when it is active.
    async fn introspect(&self, token: &str) -> Option<String> {
        let answer: Value = self
            .http
            .post(&self.introspection_url)
            .basic_auth("nfvo", Some(&self.nfvo_secret))
            .form(&[("token", token)])
            .send()
            .await
            .ok()?
            .json()
            .await
            .ok()?;
        (answer["active"] == true)
            .then(|| answer["client_id"].as_str().map(str::to_owned))
            .flatten()
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn refuse(&self, n: u32) {
        *self.refuse_next.lock().unwrap() = n;
    }
}

async fn handle(
    State(s): State<StandIn>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let authorization = headers
        .get("authorization")
        .map(|v| v.to_str().unwrap().to_owned());
    let path = uri.path().to_owned();
    let client = match authorization
        .as_deref()
        .and_then(|a| a.strip_prefix("Bearer "))
    {
        Some(token) => s.introspect(token).await,
        None => None,
    };
    let refused = {
        let mut n = s.refuse_next.lock().unwrap();
        let refuse = *n > 0;
        *n = n.saturating_sub(1);
        refuse
    };
    // Callbacks outside the protected path and with Basic are answered without a token.
    let open = path.starts_with("/open/") || path.starts_with("/notify/basic");
    let authorized = !refused && (open || client.as_deref() == Some(s.expected_client.as_str()));
    let response = if !authorized {
        (
            StatusCode::UNAUTHORIZED,
            [("www-authenticate", "Bearer error=\"invalid_token\"")],
        )
            .into_response()
    } else if path == "/grant/v1/grants" {
        (
            StatusCode::CREATED,
            axum::Json(json!({
                "id": "grant-1", "vnfInstanceId": "inst-1", "vnfLcmOpOccId": "occ-1",
                "_links": {"self": {"href": "http://nfvo/grant/v1/grants/grant-1"}}
            })),
        )
            .into_response()
    } else if path.ends_with("/vnfd") {
        (StatusCode::OK, b"PK-not-really-a-zip".to_vec()).into_response()
    } else {
        StatusCode::NO_CONTENT.into_response()
    };
    s.seen.lock().unwrap().push(Seen {
        method,
        path,
        authorization,
        client,
        status: response.status().as_u16(),
    });
    response
}

/// Starts the stand-in accepting tokens of `expected_client`, introspecting at `issuer`
/// (trusting `ca_pem` for it when given); its base URL.
async fn stand_in(
    kc: &TestKeycloak,
    issuer: &str,
    ca_pem: Option<&str>,
    expected_client: &str,
) -> (String, StandIn) {
    let mut http = reqwest::Client::builder();
    if let Some(pem) = ca_pem {
        http = http.tls_certs_only([reqwest::Certificate::from_pem(pem.as_bytes()).unwrap()]);
    }
    let state = StandIn {
        seen: Arc::default(),
        refuse_next: Arc::default(),
        expected_client: expected_client.to_owned(),
        introspection_url: format!("{issuer}/protocol/openid-connect/token/introspect"),
        nfvo_secret: kc.secret("nfvo"),
        http: http.build().unwrap(),
    };
    let app = Router::new()
        .fallback(any(handle))
        .with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), state)
}

/// A log writer keeping every line of every level, to look for secrets in.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<u8>>>);

impl Write for Log {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Log {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

/// Captures the test's log (its current-thread runtime runs every task on this thread).
fn capture_log() -> (Log, tracing::subscriber::DefaultGuard) {
    let log = Log::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    (log, tracing::subscriber::set_default(subscriber))
}

fn grant_request() -> GrantRequest {
    serde_json::from_value(json!({
        "vnfInstanceId": "inst-1", "vnfLcmOpOccId": "occ-1", "vnfdId": "vnfd-1",
        "operation": "INSTANTIATE", "isAutomaticInvocation": false,
        "_links": {"vnfLcmOpOcc": {"href": "http://vnfm/occ-1"},
                   "vnfInstance": {"href": "http://vnfm/inst-1"}}
    }))
    .unwrap()
}

fn timings() -> NfvoTimings {
    NfvoTimings {
        request_timeout: Duration::from_secs(10),
        attempts: 1,
        backoff: Duration::from_millis(10),
        ..NfvoTimings::default()
    }
}

async fn notify(
    sender: &HttpCallbackSender,
    uri: &str,
    authentication: Option<&SubscriptionAuthentication>,
) -> u16 {
    let body = json!({"notificationType": "VnfIdentifierCreationNotification",
                      "subscriptionId": "sub-1"});
    sender
        .send(CallbackRequest {
            method: CallbackMethod::Post,
            uri,
            body: Some(&body),
            authentication,
            timeout: Duration::from_secs(10),
            traceparent: None,
        })
        .await
        .expect("the subscriber answers")
        .status
}

fn bearer(seen: &Seen) -> &str {
    seen.authorization
        .as_deref()
        .and_then(|a| a.strip_prefix("Bearer "))
        .unwrap_or_else(|| panic!("no bearer token: {seen:?}"))
}

/// Asserts that nothing of `tokens` (any long piece of a JWT) nor any of `secrets` is in
/// `log`.
fn nothing_secret_in(log: &str, tokens: &[&str], secrets: &[&str]) {
    for token in tokens {
        for part in token.split('.').filter(|p| p.len() >= 16) {
            assert!(!log.contains(part), "a token reached the log");
        }
    }
    for secret in secrets {
        assert!(!log.contains(secret), "a secret reached the log");
    }
}

/// The whole exchange with one client authentication method: a grant and a VNFD fetch from
/// the NFVO, notifications and an endpoint test to subscribers, sharing one token; a `401`
/// renews it once; a second `401` in a row is the answer.
async fn exercise(tokens: Arc<ClientCredentials>, base: &str, standin: &StandIn) -> Vec<String> {
    let nfvo = Sol003Nfvo::new(base, NfvoAuth::None, None, timings())
        .unwrap()
        .with_issuer_tokens(tokens.clone());
    let sender = HttpCallbackSender::new(Duration::from_secs(5))
        .unwrap()
        .with_issuer_tokens(tokens.clone(), &[format!("{base}/notify")])
        .unwrap();
    let client = tokens.client_id().to_owned();

    // A grant, a VNFD fetch, a notification, an endpoint test: one token for all four.
    let decision = nfvo.grant(&grant_request()).await.unwrap();
    assert!(
        matches!(decision, GrantDecision::Granted(_)),
        "{decision:?}"
    );
    let vnfd = nfvo.fetch_vnfd("vnfd-1").await.unwrap();
    assert_eq!(vnfd.as_deref(), Some(&b"PK-not-really-a-zip"[..]));
    assert_eq!(
        notify(&sender, &format!("{base}/notify/lcm"), None).await,
        204
    );
    let test = sender
        .send(CallbackRequest {
            method: CallbackMethod::Get,
            uri: &format!("{base}/notify/lcm"),
            body: None,
            authentication: None,
            timeout: Duration::from_secs(10),
            traceparent: None,
        })
        .await
        .unwrap();
    assert_eq!(test.status, 204);
    let seen = standin.seen();
    assert_eq!(seen.len(), 4, "{seen:?}");
    assert_eq!(
        (seen[0].method.clone(), seen[0].path.as_str()),
        (Method::POST, "/grant/v1/grants")
    );
    for s in &seen {
        assert!((200..300).contains(&s.status), "{s:?}");
        assert_eq!(s.client.as_deref(), Some(client.as_str()), "{s:?}");
    }
    let first = bearer(&seen[0]).to_owned();
    assert!(seen.iter().all(|s| bearer(s) == first), "one token reused");
    assert_eq!(tokens.tokens_fetched(), 1);

    // The NFVO refuses the token once (revoked at its side): one new token, one retry.
    standin.refuse(1);
    let decision = nfvo.grant(&grant_request()).await.unwrap();
    assert!(
        matches!(decision, GrantDecision::Granted(_)),
        "{decision:?}"
    );
    let seen = standin.seen();
    assert_eq!(seen.len(), 6, "{seen:?}");
    assert_eq!((seen[4].status, seen[5].status), (401, 201));
    assert_eq!(bearer(&seen[4]), first);
    let second = bearer(&seen[5]).to_owned();
    assert_ne!(second, first, "a new token after the 401");
    assert_eq!(seen[5].client.as_deref(), Some(client.as_str()));
    assert_eq!(tokens.tokens_fetched(), 2);

    // A subscriber refusing twice in a row: one retry only, its 401 is the answer.
    standin.refuse(2);
    assert_eq!(
        notify(&sender, &format!("{base}/notify/lcm"), None).await,
        401
    );
    let seen = standin.seen();
    assert_eq!(seen.len(), 8, "{seen:?}");
    assert_eq!(tokens.tokens_fetched(), 3);
    let third = bearer(&seen[7]).to_owned();

    // The subscription's own authentication wins; a callback outside the prefixes gets no
    // token.
    let basic: SubscriptionAuthentication = serde_json::from_value(json!({
        "authType": ["BASIC"], "paramsBasic": {"userName": "sub", "password": "sub-password"}
    }))
    .unwrap();
    assert_eq!(
        notify(&sender, &format!("{base}/notify/basic"), Some(&basic)).await,
        204
    );
    assert_eq!(notify(&sender, &format!("{base}/open/x"), None).await, 204);
    let seen = standin.seen();
    assert!(
        seen[8]
            .authorization
            .as_deref()
            .is_some_and(|a| a.starts_with("Basic ")),
        "{:?}",
        seen[8]
    );
    assert_eq!(seen[9].authorization, None, "{:?}", seen[9]);
    // The last token is still the one in use.
    assert_eq!(
        notify(&sender, &format!("{base}/notify/lcm"), None).await,
        204
    );
    assert_eq!(bearer(&standin.seen()[10]), third);
    assert_eq!(tokens.tokens_fetched(), 3);
    vec![first, second, third]
}

#[vnfm_test_env::needs(keycloak)]
#[tokio::test]
async fn client_secret_basic_tokens_reach_the_nfvo_and_subscribers_and_are_reused() {
    let (log, _guard) = capture_log();
    let kc = TestKeycloak::from_env();
    let (base, standin) = stand_in(&kc, &kc.issuer, None, "vnfm").await;
    let secret = kc.secret("vnfm");
    let tokens = Arc::new(
        ClientCredentials::new(ClientCredentialsConfig::new(
            kc.issuer.clone(),
            "vnfm",
            ClientAuth::SecretBasic(Secret::new(secret.clone())),
        ))
        .unwrap(),
    );
    assert!(
        tokens
            .token_endpoint()
            .await
            .unwrap()
            .starts_with(&kc.issuer)
    );
    let used = exercise(tokens, &base, &standin).await;
    let used: Vec<&str> = used.iter().map(String::as_str).collect();
    let text = log.text();
    assert!(text.contains("access token fetched"), "the log is captured");
    nothing_secret_in(&text, &used, &[&secret, "sub-password"]);
}

#[vnfm_test_env::needs(keycloak)]
#[tokio::test]
async fn private_key_jwt_tokens_reach_the_nfvo_and_subscribers_and_are_reused() {
    let (log, _guard) = capture_log();
    let kc = TestKeycloak::from_env();
    let (base, standin) = stand_in(&kc, &kc.issuer, None, "vnfm-pkjwt").await;
    let key = kc.client_key_pem();
    let tokens = Arc::new(
        ClientCredentials::new(ClientCredentialsConfig::new(
            kc.issuer.clone(),
            "vnfm-pkjwt",
            ClientAuth::PrivateKeyJwt {
                pem: Secret::new(key.clone()),
                key_id: Some("vnfm-pkjwt-1".into()),
            },
        ))
        .unwrap(),
    );
    let used = exercise(tokens, &base, &standin).await;
    let used: Vec<&str> = used.iter().map(String::as_str).collect();
    let key_body: String = key
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .take(2)
        .collect();
    nothing_secret_in(&log.text(), &used, &[&key_body, "sub-password"]);
}

/// `tls_client_auth` at Keycloak's HTTPS endpoint: the token endpoint is the metadata's
/// mutual-TLS alias, the client certificate goes with the handshake.
#[vnfm_test_env::needs(keycloak)]
#[tokio::test]
async fn tls_client_auth_tokens_reach_the_nfvo() {
    let (log, _guard) = capture_log();
    let kc = TestKeycloak::from_env();
    let issuer = kc.tls_issuer();
    let ca = kc.tls_file("ca.pem");
    let (base, standin) = stand_in(&kc, &issuer, Some(&ca), "vnfm-mtls").await;
    let mut config = ClientCredentialsConfig::new(
        issuer.clone(),
        "vnfm-mtls",
        ClientAuth::TlsClientAuth {
            cert_pem: kc.tls_file("vnfm-mtls.pem"),
            key_pem: Secret::new(kc.tls_file("vnfm-mtls.key")),
        },
    );
    config.ca_pem = Some(ca);
    let tokens = Arc::new(ClientCredentials::new(config).unwrap());
    let nfvo = Sol003Nfvo::new(&base, NfvoAuth::None, None, timings())
        .unwrap()
        .with_issuer_tokens(tokens.clone());
    for _ in 0..2 {
        let decision = nfvo.grant(&grant_request()).await.unwrap();
        assert!(
            matches!(decision, GrantDecision::Granted(_)),
            "{decision:?}"
        );
    }
    let seen = standin.seen();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(
        seen.iter()
            .all(|s| s.client.as_deref() == Some("vnfm-mtls") && s.status == 201),
        "{seen:?}"
    );
    assert_eq!(bearer(&seen[0]), bearer(&seen[1]));
    assert_eq!(tokens.tokens_fetched(), 1);
    let key = kc.tls_file("vnfm-mtls.key");
    let key_body: String = key.lines().filter(|l| !l.starts_with("-----")).collect();
    nothing_secret_in(&log.text(), &[bearer(&seen[0])], &[&key_body]);
}

/// A wrong client secret: the grant fails saying the authorization server refused, without
/// the secret; nothing reaches the NFVO.
#[vnfm_test_env::needs(keycloak)]
#[tokio::test]
async fn a_refused_client_fails_the_call_without_reaching_the_nfvo() {
    let (log, _guard) = capture_log();
    let kc = TestKeycloak::from_env();
    let (base, standin) = stand_in(&kc, &kc.issuer, None, "vnfm").await;
    let tokens = Arc::new(
        ClientCredentials::new(ClientCredentialsConfig::new(
            kc.issuer.clone(),
            "vnfm",
            ClientAuth::SecretPost(Secret::new("not-the-secret-of-vnfm")),
        ))
        .unwrap(),
    );
    let nfvo = Sol003Nfvo::new(&base, NfvoAuth::None, None, timings())
        .unwrap()
        .with_issuer_tokens(tokens);
    let e = nfvo.grant(&grant_request()).await.unwrap_err().to_string();
    assert!(
        e.contains("getting an access token from the authorization server")
            && e.contains(&kc.issuer),
        "{e}"
    );
    assert!(!e.contains("not-the-secret-of-vnfm"), "{e}");
    assert!(standin.seen().is_empty());
    let text = log.text();
    assert!(
        text.contains("refused this server's client authentication"),
        "{text}"
    );
    assert!(!text.contains("not-the-secret-of-vnfm"));
}
