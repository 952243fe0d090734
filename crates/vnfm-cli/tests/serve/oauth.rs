//! `vnfm serve --oauth-issuer` against the real Keycloak of `scripts/test-env/keycloak.sh
//! start`: the options as an operator gives them (introspection by client_secret_post, its
//! secret from a file), a member's JWT accepted, a reader's change refused with
//! `insufficient_scope`, another project's instance answered 404, an opaque token introspected
//! and refused, hostile tokens 401 `invalid_token`, the `vnfm` client logging in at the realm,
//! and nothing of any token in the server's debug log; with mutual TLS, tokens bound to a
//! client certificate and the VNFM introspecting by `tls_client_auth`.

use std::path::Path;

use serde_json::{Value, json};
use vnfm_oauth::testing::TestKeycloak;

use super::{start_with, zip_dir};

async fn send(
    http: &reqwest::Client,
    method: reqwest::Method,
    url: String,
    token: &str,
    body: Option<Value>,
) -> (u16, String, Value) {
    let mut r = http
        .request(method, url)
        .bearer_auth(token)
        .header("Version", "2.0.0");
    if let Some(b) = body {
        r = r.json(&b);
    }
    let resp = r.send().await.unwrap();
    let status = resp.status().as_u16();
    let challenge = resp
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body = serde_json::from_str(&resp.text().await.unwrap()).unwrap_or(Value::Null);
    (status, challenge, body)
}

#[vnfm_test_env::needs(keycloak)]
#[tokio::test]
async fn serve_takes_the_realms_tokens_and_logs_nothing_of_them() {
    let kc = TestKeycloak::from_env();
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("oauth-secret");
    std::fs::write(&secret, format!("{}\n", kc.secret("vnfm"))).unwrap();
    let log = dir.path().join("serve.log");
    let data = dir.path().join("data");
    let server = start_with(
        &data,
        &[
            "--oauth-issuer",
            &kc.issuer,
            "--oauth-audience",
            "vnfm",
            "--oauth-client-id",
            "vnfm",
            "--oauth-client-auth",
            "client_secret_post",
            "--oauth-client-secret-file",
            secret.to_str().unwrap(),
            "--oauth-introspection-cache-secs",
            "0",
        ],
        Some(&log),
    );
    let base = server.base.clone();
    let http = reqwest::Client::new();
    let (a, b, reader) = (
        kc.token("tenant-a").await,
        kc.token("tenant-b").await,
        kc.token("reader-a").await,
    );
    let url = |p: &str| format!("{base}{p}");

    // tenant-a onboards the hello package and creates an instance: proj-a's.
    let (status, _, pkg) = send(
        &http,
        reqwest::Method::POST,
        url("/vnfpkgm/v2/vnf_packages"),
        &a,
        Some(json!({})),
    )
    .await;
    assert_eq!(status, 201, "{pkg}");
    let pkg = pkg["id"].as_str().unwrap().to_owned();
    let r = http
        .put(url(&format!(
            "/vnfpkgm/v2/vnf_packages/{pkg}/package_content"
        )))
        .bearer_auth(&a)
        .header("content-type", "application/zip")
        .header("Version", "2.1.0")
        .body(zip_dir(Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../vnfd-samples/hello-vnf"
        ))))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    for _ in 0..300 {
        let (_, _, info) = send(
            &http,
            reqwest::Method::GET,
            url(&format!("/vnfpkgm/v2/vnf_packages/{pkg}")),
            &a,
            None,
        )
        .await;
        if info["onboardingState"] == "ONBOARDED" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let body = json!({"vnfdId": "6f0b7e1c-2d55-4c5e-9b3a-4e110a000001"});
    let (status, _, inst) = send(
        &http,
        reqwest::Method::POST,
        url("/vnflcm/v2/vnf_instances"),
        &a,
        Some(body),
    )
    .await;
    assert_eq!(status, 201, "{inst}");
    let inst_url = url(&format!(
        "/vnflcm/v2/vnf_instances/{}",
        inst["id"].as_str().unwrap()
    ));

    assert_eq!(
        send(&http, reqwest::Method::GET, inst_url.clone(), &a, None)
            .await
            .0,
        200
    );
    assert_eq!(
        send(&http, reqwest::Method::GET, inst_url.clone(), &b, None)
            .await
            .0,
        404
    );
    assert_eq!(
        send(&http, reqwest::Method::GET, inst_url.clone(), &reader, None)
            .await
            .0,
        200
    );
    // The `vnfm` client logs in at the realm (token endpoint from its metadata) and sees
    // its project's instance; another project's client does not.
    let inst_id = inst["id"].as_str().unwrap();
    for (client_id, sees) in [("tenant-a", true), ("tenant-b", false)] {
        let listed = super::client_ok(
            &server,
            &data,
            &[
                "vnf",
                "list",
                "-o",
                "json",
                "--oauth-issuer",
                &kc.issuer,
                "--client-id",
                client_id,
                "--client-secret",
                &kc.secret(client_id),
            ],
        );
        assert_eq!(listed.contains(inst_id), sees, "{client_id}: {listed}");
    }
    let wrong = super::client(
        &server,
        &data,
        &[
            "vnf",
            "list",
            "--oauth-issuer",
            &kc.issuer,
            "--client-id",
            "tenant-a",
            "--client-secret",
            "not-the-secret",
        ],
    );
    assert!(!wrong.status.success());
    let stderr = String::from_utf8_lossy(&wrong.stderr);
    assert!(
        stderr.contains(&format!(
            "the authorization server {} refused the client credentials",
            kc.issuer
        )),
        "{stderr}"
    );
    assert_eq!(wrong.status.code(), Some(3), "{stderr}");

    let (status, challenge, _) = send(
        &http,
        reqwest::Method::DELETE,
        inst_url.clone(),
        &reader,
        None,
    )
    .await;
    assert_eq!(status, 403);
    assert!(challenge.contains("insufficient_scope"), "{challenge}");

    // Refused: an opaque token (introspected: inactive), alg none, tampered claims.
    let parts: Vec<&str> = a.split('.').collect();
    let none = format!("eyJhbGciOiJub25lIn0.{}.", parts[1]);
    let tampered = format!("{}.{}x.{}", parts[0], parts[1], parts[2]);
    let refused = [
        "opaque-9f8e7d6c5b4a39281706f5e4d3c2b1a0",
        none.as_str(),
        tampered.as_str(),
    ];
    for token in refused {
        let (status, challenge, p) = send(
            &http,
            reqwest::Method::GET,
            url("/vnflcm/v2/vnf_instances"),
            token,
            None,
        )
        .await;
        assert_eq!(status, 401, "{p}");
        assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    }
    server.stop();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("the bearer token is refused"),
        "the refusals are logged"
    );
    for token in [a.as_str(), b.as_str(), reader.as_str()]
        .into_iter()
        .chain(refused)
    {
        for part in token.split('.').filter(|p| p.len() >= 16) {
            assert!(!text.contains(part), "a token reached the log");
        }
    }
    assert!(
        !text.contains(&kc.secret("vnfm")),
        "the client secret reached the log"
    );
}

/// `vnfm serve` with mutual TLS, as an operator configures it against the Keycloak's HTTPS
/// endpoint: the client certificates of Keycloak's CA asked for (`--tls-client-auth
/// optional`), one of them mapped to a reader of proj-a, introspection by `tls_client_auth`.
/// A token Keycloak bound to a certificate works with that certificate only; the mapped
/// certificate without a token reads and may not write; nothing of the token is logged.
#[vnfm_test_env::needs(keycloak)]
#[tokio::test]
async fn serve_with_client_certificates_takes_bound_tokens_with_their_certificate_only() {
    let kc = TestKeycloak::from_env();
    let tls = |name: &str| kc.dir.join("tls").join(name).to_str().unwrap().to_owned();
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("client-map.json");
    std::fs::write(
        &map,
        r#"[{"subject_cn": "tenant-a-mtls", "client_id": "monitor-a", "roles": ["reader"],
             "project_id": "proj-a"}]"#,
    )
    .unwrap();
    let log = dir.path().join("serve.log");
    let issuer = kc.tls_issuer();
    let server = start_with(
        &dir.path().join("data"),
        &[
            "--tls-cert",
            &tls("server.pem"),
            "--tls-key",
            &tls("server.key"),
            "--tls-client-ca",
            &tls("ca.pem"),
            "--tls-client-auth",
            "optional",
            "--tls-client-map",
            map.to_str().unwrap(),
            "--oauth-issuer",
            &issuer,
            "--oauth-audience",
            "vnfm",
            "--oauth-ca-file",
            &tls("ca.pem"),
            "--oauth-client-id",
            "vnfm-mtls",
            "--oauth-client-auth",
            "tls_client_auth",
            "--oauth-client-cert-file",
            &tls("vnfm-mtls.pem"),
            "--oauth-client-key-file",
            &tls("vnfm-mtls.key"),
            "--oauth-token-check",
            "introspection",
            "--oauth-introspection-cache-secs",
            "0",
        ],
        Some(&log),
    );
    assert!(server.base.starts_with("https://"), "{}", server.base);
    let client = |who: Option<&str>| {
        let ca = reqwest::Certificate::from_pem(kc.tls_file("ca.pem").as_bytes()).unwrap();
        let mut b = reqwest::Client::builder().tls_certs_only([ca]);
        if let Some(who) = who {
            let pem = format!(
                "{}{}",
                kc.tls_file(&format!("{who}.pem")),
                kc.tls_file(&format!("{who}.key"))
            );
            b = b.identity(reqwest::Identity::from_pem(pem.as_bytes()).unwrap());
        }
        b.build().unwrap()
    };
    let (holder, other, plain) = (
        client(Some("tenant-a-mtls")),
        client(Some("vnfm-mtls")),
        client(None),
    );
    let token = kc.bound_token("tenant-a-mtls").await;
    let url = format!("{}/vnflcm/v2/vnf_instances", server.base);
    let get = reqwest::Method::GET;
    // The token with its certificate: introspected by tls_client_auth, a member of proj-a.
    let (status, _, body) = send(&holder, get.clone(), url.clone(), &token, None).await;
    assert_eq!(status, 200, "{body}");
    // Without a certificate, or with another one: 401 invalid_token.
    for (who, http) in [("no certificate", &plain), ("another certificate", &other)] {
        let (status, challenge, body) = send(http, get.clone(), url.clone(), &token, None).await;
        assert_eq!(status, 401, "{who}: {body}");
        assert!(
            challenge.contains("error=\"invalid_token\""),
            "{who}: {challenge}"
        );
    }
    // The mapped certificate without a token: a reader of proj-a.
    let r = holder
        .get(&url)
        .header("Version", "2.0.0")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = holder
        .post(format!("{}/vnflcm/v2/subscriptions", server.base))
        .header("Version", "2.0.0")
        .json(&json!({"callbackUri": "http://127.0.0.1:9/cb"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let r = plain
        .get(&url)
        .header("Version", "2.0.0")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    server.stop();
    let logged = std::fs::read_to_string(&log).unwrap();
    for part in token.split('.').filter(|p| p.len() >= 16) {
        assert!(!logged.contains(part), "the token reached the log");
    }
    assert!(
        !logged.contains(&kc.tls_file("vnfm-mtls.key")[40..80]),
        "the client key reached the log"
    );
}

/// The NFVO and notification subscriber that `vnfm serve` calls, on loopback: every request's
/// bearer token is introspected at the realm as the client `nfvo`, and only an active token
/// of the expected client is taken. It grants everything, serves the hello package, and
/// answers callbacks 204; it can refuse the next request(s) with 401.
#[derive(Clone)]
struct Receiver {
    seen: std::sync::Arc<std::sync::Mutex<Vec<Received>>>,
    refuse_next: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    expected: String,
    introspect: String,
    secret: String,
    package: std::sync::Arc<Vec<u8>>,
    http: reqwest::Client,
}

/// A request the receiver got: its method and path, its bearer token, whose token Keycloak
/// says it is, and the status answered.
#[derive(Debug, Clone)]
struct Received {
    what: String,
    token: Option<String>,
    client: Option<String>,
    status: u16,
}

async fn receive(
    axum::extract::State(r): axum::extract::State<Receiver>,
    method: axum::http::Method,
    uri: axum::http::Uri,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    use std::sync::atomic::Ordering;
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned);
    let mut client = None;
    if let Some(t) = &token {
        let answer: Value = r
            .http
            .post(&r.introspect)
            .basic_auth("nfvo", Some(&r.secret))
            .form(&[("token", t.as_str())])
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if answer["active"] == true {
            client = answer["client_id"].as_str().map(str::to_owned);
        }
    }
    let refused = r
        .refuse_next
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    let path = uri.path().to_owned();
    let response = if refused || client.as_deref() != Some(r.expected.as_str()) {
        axum::http::StatusCode::UNAUTHORIZED.into_response()
    } else if path == "/grant/v1/grants" {
        let req: Value = serde_json::from_slice(&body).unwrap();
        (
            axum::http::StatusCode::CREATED,
            axum::Json(json!({"id": "g-1", "vnfInstanceId": req["vnfInstanceId"],
                              "vnfLcmOpOccId": req["vnfLcmOpOccId"]})),
        )
            .into_response()
    } else if path.ends_with("/package_content") {
        r.package.as_ref().clone().into_response()
    } else {
        axum::http::StatusCode::NO_CONTENT.into_response()
    };
    r.seen.lock().unwrap().push(Received {
        what: format!("{method} {path}"),
        token,
        client,
        status: response.status().as_u16(),
    });
    response
}

impl Receiver {
    /// A receiver taking tokens of `expected`, introspecting them at `issuer` (trusting
    /// `ca_pem` for it when given).
    async fn start(
        kc: &TestKeycloak,
        issuer: &str,
        ca_pem: Option<&str>,
        expected: &str,
    ) -> (String, Receiver) {
        let mut http = reqwest::Client::builder();
        if let Some(pem) = ca_pem {
            http = http.tls_certs_only([reqwest::Certificate::from_pem(pem.as_bytes()).unwrap()]);
        }
        let r = Receiver {
            seen: Default::default(),
            refuse_next: Default::default(),
            expected: expected.to_owned(),
            introspect: format!("{issuer}/protocol/openid-connect/token/introspect"),
            secret: kc.secret("nfvo"),
            package: std::sync::Arc::new(zip_dir(Path::new(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../vnfd-samples/hello-vnf"
            )))),
            http: http.build().unwrap(),
        };
        let app = axum::Router::new().fallback(receive).with_state(r.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (format!("http://{addr}"), r)
    }

    fn seen(&self) -> Vec<Received> {
        self.seen.lock().unwrap().clone()
    }

    /// Waits until a request whose `what` starts with `prefix` has been answered `status`.
    async fn wait_for(&self, prefix: &str, status: u16) -> Received {
        for _ in 0..500 {
            if let Some(r) = self
                .seen()
                .into_iter()
                .find(|r| r.what.starts_with(prefix) && r.status == status)
            {
                return r;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        panic!("no {prefix} answered {status}: {:#?}", self.seen());
    }
}

/// `vnfm serve --nfvo-oauth-from-issuer --notify-oauth-from-issuer` as an operator gives them,
/// with the realm at `issuer` (its CA `ca_pem`), the VNFM's client `client` authenticating by
/// `extra`'s method: the package comes from the
/// NFVO, the subscription's callback test, the notification and the grant reach the receiver
/// with the realm's tokens of that client; the grant refused once with 401 goes again with a
/// new token; nothing of a token, the secret or the key in the debug log.
async fn serve_calls_out_with_the_realms_tokens(
    issuer: &str,
    ca_pem: Option<&str>,
    client: &str,
    extra: &[&str],
    secrets: &[String],
) {
    let kc = TestKeycloak::from_env();
    let (nfvo, receiver) = Receiver::start(&kc, issuer, ca_pem, client).await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("serve.log");
    let data = dir.path().join("data");
    let notify = format!("{nfvo}/notify");
    let mut line = vec![
        "--oauth-issuer",
        issuer,
        "--oauth-audience",
        "vnfm",
        "--oauth-client-id",
        client,
        "--nfvo-url",
        &nfvo,
        "--nfvo-oauth-from-issuer",
        "--notify-oauth-from-issuer",
        &notify,
    ];
    line.extend(extra);
    let server = start_with(&data, &line, Some(&log));
    let api = super::Api::connect(&server.base, &data).await;

    // The subscription's callback test carries a token.
    let (status, _, sub) = api
        .json(
            reqwest::Method::POST,
            "/vnflcm/v2/subscriptions",
            Some(json!({"callbackUri": format!("{notify}/lcm")})),
        )
        .await;
    assert_eq!(status, 201, "{sub}");
    // The VNFD is the NFVO's: its package is fetched with a token.
    let (status, _, inst) = api
        .json(
            reqwest::Method::POST,
            "/vnflcm/v2/vnf_instances",
            Some(json!({"vnfdId": "6f0b7e1c-2d55-4c5e-9b3a-4e110a000001"})),
        )
        .await;
    assert_eq!(status, 201, "{inst}");
    receiver.wait_for("POST /notify/lcm", 204).await;
    // The grant is refused once: a new token, and it goes through.
    receiver
        .refuse_next
        .store(1, std::sync::atomic::Ordering::SeqCst);
    let id = inst["id"].as_str().unwrap();
    api.task(
        id,
        "instantiate",
        json!({"flavourId": "simple", "vimConnectionInfo": {"v": {"vimType": "TEST.NOOP.V_1"}}}),
    )
    .await;
    receiver.wait_for("POST /grant/v1/grants", 201).await;
    let seen = receiver.seen();
    let kinds = |prefix: &str| -> Vec<&Received> {
        seen.iter().filter(|r| r.what.starts_with(prefix)).collect()
    };
    assert_eq!(kinds("GET /notify/lcm").len(), 1, "{seen:#?}");
    assert_eq!(
        kinds("GET /vnfpkgm/v2/onboarded_vnf_packages/").len(),
        1,
        "{seen:#?}"
    );
    let grants = kinds("POST /grant/v1/grants");
    assert_eq!(
        grants.iter().map(|g| g.status).collect::<Vec<_>>(),
        [401, 201],
        "{seen:#?}"
    );
    // Every request came with a token of the VNFM's client; one token until the 401, then
    // another.
    for r in &seen {
        assert_eq!(r.client.as_deref(), Some(client), "{r:?}");
    }
    let first = seen[0].token.clone().unwrap();
    assert_eq!(grants[0].token.as_deref(), Some(first.as_str()));
    assert_ne!(grants[1].token.as_deref(), Some(first.as_str()));
    let before_401: Vec<&Received> = seen.iter().take_while(|r| r.status != 401).collect();
    assert!(before_401.len() >= 3, "{seen:#?}");
    assert!(
        before_401
            .iter()
            .all(|r| r.token.as_deref() == Some(first.as_str())),
        "one token reused until refused: {seen:#?}"
    );
    server.stop();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("access token fetched"),
        "the debug log is there"
    );
    for r in &seen {
        for part in r
            .token
            .as_deref()
            .unwrap()
            .split('.')
            .filter(|p| p.len() >= 16)
        {
            assert!(!text.contains(part), "a token reached the log");
        }
    }
    for s in secrets {
        assert!(!text.contains(s.as_str()), "a secret reached the log");
    }
}

#[vnfm_test_env::needs(keycloak)]
#[tokio::test]
async fn serve_calls_the_nfvo_and_subscribers_with_tokens_by_client_secret_basic() {
    let kc = TestKeycloak::from_env();
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret");
    std::fs::write(&secret, format!("{}\n", kc.secret("vnfm"))).unwrap();
    serve_calls_out_with_the_realms_tokens(
        &kc.issuer,
        None,
        "vnfm",
        &[
            "--oauth-client-auth",
            "client_secret_basic",
            "--oauth-client-secret-file",
            secret.to_str().unwrap(),
        ],
        &[kc.secret("vnfm")],
    )
    .await;
}

#[vnfm_test_env::needs(keycloak)]
#[tokio::test]
async fn serve_calls_the_nfvo_and_subscribers_with_tokens_by_private_key_jwt() {
    let kc = TestKeycloak::from_env();
    let key = kc.dir.join("client-key.pem");
    let pem = kc.client_key_pem();
    let key_body: String = pem
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .take(2)
        .collect();
    serve_calls_out_with_the_realms_tokens(
        &kc.issuer,
        None,
        "vnfm-pkjwt",
        &[
            "--oauth-client-auth",
            "private_key_jwt",
            "--oauth-client-key-file",
            key.to_str().unwrap(),
            "--oauth-client-key-id",
            "vnfm-pkjwt-1",
        ],
        &[key_body],
    )
    .await;
}

/// The same with `tls_client_auth` at Keycloak's HTTPS endpoint: the client certificate goes
/// with the handshake to the metadata's mutual-TLS token endpoint.
#[vnfm_test_env::needs(keycloak)]
#[tokio::test]
async fn serve_calls_the_nfvo_and_subscribers_with_tokens_by_tls_client_auth() {
    let kc = TestKeycloak::from_env();
    let tls = |name: &str| kc.dir.join("tls").join(name).to_str().unwrap().to_owned();
    let ca = kc.tls_file("ca.pem");
    let key_body: String = kc
        .tls_file("vnfm-mtls.key")
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect();
    serve_calls_out_with_the_realms_tokens(
        &kc.tls_issuer(),
        Some(&ca),
        "vnfm-mtls",
        &[
            "--oauth-ca-file",
            &tls("ca.pem"),
            "--oauth-client-auth",
            "tls_client_auth",
            "--oauth-client-cert-file",
            &tls("vnfm-mtls.pem"),
            "--oauth-client-key-file",
            &tls("vnfm-mtls.key"),
        ],
        &[key_body],
    )
    .await;
}
