//! Mutual TLS on the server's own listener: `vnfm_api::serve` (what `vnfm serve` runs) on
//! loopback with certificates made by a CA of the test (`vnfm-oauth/tests/support/pki.rs`),
//! and a reqwest client presenting them. Required mode refuses a client without a certificate
//! from the configured CA at the handshake; optional mode serves it, but not with a
//! certificate-bound token (RFC 8705), which is good only with its own certificate; a mapped
//! certificate is a caller with the roles and project of its map entry. Against the test
//! Keycloak (`#[vnfm_test_env::needs(keycloak)]`): tokens it binds to a client certificate,
//! verified as JWTs and introspected by `tls_client_auth`.

use std::sync::Arc;
use std::time::Duration;

use axum::routing::post;
use axum::{Form, Json, Router};
use reqwest::StatusCode;
use serde_json::{Value, json};
use vnfm_api::mtls::{CertificateIdentities, ClientCertMode};
use vnfm_api::{ServeOptions, StateOptions};
use vnfm_oauth::{ClientAuth, IntrospectionConfig, OAuthConfig, OAuthVerifier, TokenCheck};

#[path = "../../vnfm-oauth/tests/support/pki.rs"]
mod pki;

use pki::{Issued, Pki, San};

const INSTANCES: &str = "/vnflcm/v2/vnf_instances";
const SUBSCRIPTIONS: &str = "/vnflcm/v2/subscriptions";

/// A running server and what its clients need.
struct Server {
    base: String,
    ca: Pki,
    _dir: tempfile::TempDir,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    /// `vnfm serve` with TLS, asking for client certificates of its CA as `mode` says, with
    /// `tweak` applied to its API options.
    async fn start(mode: ClientCertMode, tweak: impl FnOnce(&mut StateOptions)) -> Server {
        Server::start_with(mode, &[], tweak).await
    }

    /// [`Server::start`], also accepting client certificates of the CAs `client_cas` (PEM).
    async fn start_with(
        mode: ClientCertMode,
        client_cas: &[String],
        tweak: impl FnOnce(&mut StateOptions),
    ) -> Server {
        vnfm::lcm::install_crypto_provider();
        let dir = tempfile::tempdir().unwrap();
        let ca = Pki::new("vnfm test client CA");
        let server = ca.server("localhost", &[San::Ip("127.0.0.1"), San::Dns("localhost")]);
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let mut state = StateOptions::new(dir.path().join("data"));
        state.verify_callbacks = false;
        state.enable_test_vim = true;
        tweak(&mut state);
        let options = ServeOptions {
            listen: "127.0.0.1:0".parse().unwrap(),
            tls_cert: Some(write("server.pem", &server.cert_pem)),
            tls_key: Some(write("server.key", &server.key_pem)),
            tls_client_ca: std::iter::once(ca.ca_pem.as_str())
                .chain(client_cas.iter().map(String::as_str))
                .enumerate()
                .map(|(i, pem)| write(&format!("client-ca-{i}.pem"), pem))
                .collect(),
            tls_client_auth: Some(mode),
            shutdown_timeout: Duration::from_secs(1),
            state,
        };
        let services = vnfm::lcm::builder()
            .data_dir(dir.path().join("data"))
            .recovery_interval(None)
            .infra_driver(vnfm_api::test_vim_driver())
            .vim_kind(vnfm_api::test_vim_kind());
        let (started, listening) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(async move {
            let outcome = vnfm_api::serve(services, options, move |s| {
                let _ = started.send(format!("{}://{}", s.scheme, s.addr));
            })
            .await;
            if let Err(e) = outcome {
                panic!("serve: {e}");
            }
        });
        let base = tokio::time::timeout(Duration::from_secs(60), listening)
            .await
            .expect("the server starts")
            .expect("the server reports where it listens");
        assert!(base.starts_with("https://127.0.0.1:"), "{base}");
        Server {
            base,
            ca,
            _dir: dir,
            task,
        }
    }

    /// A client trusting the server's CA, presenting `identity` if given.
    fn client(&self, identity: Option<&Issued>) -> reqwest::Client {
        let ca = reqwest::Certificate::from_pem(self.ca.ca_pem.as_bytes()).unwrap();
        let mut b = reqwest::Client::builder()
            .tls_certs_only([ca])
            .timeout(Duration::from_secs(20));
        if let Some(id) = identity {
            b = b.identity(reqwest::Identity::from_pem(id.identity_pem().as_bytes()).unwrap());
        }
        b.build().unwrap()
    }

    /// `GET path` (v2) as `client`, with `Authorization: Bearer token` if given.
    async fn get(
        &self,
        client: &reqwest::Client,
        path: &str,
        token: Option<&str>,
    ) -> reqwest::Result<reqwest::Response> {
        let mut r = client
            .get(format!("{}{path}", self.base))
            .header("version", "2.0.0");
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        r.send().await
    }
}

/// Asserts a `401` with RFC 6750's `invalid_token` challenge whose body does not quote `token`.
async fn invalid_token(r: reqwest::Response, token: &str, what: &str) -> String {
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{what}");
    let challenge = r
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(
        challenge.starts_with("Bearer") && challenge.contains("error=\"invalid_token\""),
        "{what}: {challenge}"
    );
    let body = r.text().await.unwrap();
    assert!(!body.contains(token), "{what}: {body}");
    body
}

#[tokio::test]
async fn required_mode_refuses_a_client_without_a_certificate_of_the_ca_at_the_handshake() {
    let server = Server::start(ClientCertMode::Required, |_| {}).await;
    // No certificate: the handshake fails, nothing is answered, not even /healthz.
    let e = server
        .get(&server.client(None), "/healthz", None)
        .await
        .unwrap_err();
    assert!(e.status().is_none(), "{e}");
    // A certificate of another CA: the same.
    let stranger = Pki::new("another CA").client("reader-1", &[]);
    let e = server
        .get(&server.client(Some(&stranger)), "/healthz", None)
        .await
        .unwrap_err();
    assert!(e.status().is_none(), "{e}");
    // A certificate of the CA: served; without credentials or a map entry, still a 401.
    let known = server.ca.client("anyone", &[]);
    let client = server.client(Some(&known));
    let r = server.get(&client, "/healthz", None).await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let r = server.get(&client, INSTANCES, None).await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
}

/// Introspection answers by token, settable after the endpoint started.
type Answers = Arc<std::sync::Mutex<Vec<(String, Value)>>>;

/// An introspection endpoint on loopback answering `answers` by token (`{"active": false}`
/// for others); its URL.
async fn introspection(answers: Answers) -> String {
    let app = Router::new().route(
        "/introspect",
        post(move |Form(form): Form<Vec<(String, String)>>| {
            let answers = answers.clone();
            async move {
                let token = form
                    .iter()
                    .find(|(k, _)| k == "token")
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default();
                let answer = answers
                    .lock()
                    .unwrap()
                    .iter()
                    .find(|(t, _)| *t == token)
                    .map_or(json!({"active": false}), |(_, a)| a.clone());
                Json(answer)
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/introspect", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    url
}

fn verifier(introspection_url: String) -> Arc<OAuthVerifier> {
    let mut config = OAuthConfig::new("http://127.0.0.1:1/realms/test", "vnfm");
    config.check = TokenCheck::Introspection;
    let mut i =
        IntrospectionConfig::new("vnfm", ClientAuth::SecretPost(vnfm_oauth::Secret::new("s")));
    i.url = Some(introspection_url);
    config.introspection = Some(i);
    Arc::new(OAuthVerifier::new(config).unwrap())
}

#[tokio::test]
async fn optional_mode_serves_a_client_without_a_certificate_but_a_bound_token_needs_its_own() {
    // The tokens name the thumbprints of certificates of the server's CA, which exists once
    // the server does: the answers are set up after.
    let answers = Answers::default();
    let url = introspection(answers.clone()).await;
    let oauth = verifier(url);
    let server = Server::start(ClientCertMode::Optional, |o| o.oauth = Some(oauth)).await;
    let holder = server.ca.client("holder", &[]);
    let other = server.ca.client("other", &[]);
    let thumbprint = vnfm_api::mtls::thumbprint(&holder.der);
    let bound = "opaque-bound-to-holder";
    let unbound = "opaque-not-bound";
    let member = |cnf: Option<&str>| {
        let mut a = json!({"active": true, "sub": "u-1", "client_id": "tenant-a",
                           "scope": "member", "project_id": "proj-a"});
        if let Some(t) = cnf {
            a["cnf"] = json!({"x5t#S256": t});
        }
        a
    };
    answers.lock().unwrap().extend([
        (bound.to_owned(), member(Some(&thumbprint))),
        (unbound.to_owned(), member(None)),
    ]);

    // Without a certificate: served (the handshake succeeds), an unbound token works, the
    // bound one does not, and no credentials at all is a 401.
    let plain = server.client(None);
    let r = server.get(&plain, "/healthz", None).await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let r = server.get(&plain, INSTANCES, Some(unbound)).await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let r = server.get(&plain, INSTANCES, Some(bound)).await.unwrap();
    let body = invalid_token(r, bound, "bound token, no certificate").await;
    assert!(body.contains("presented none"), "{body}");
    let r = server.get(&plain, INSTANCES, None).await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);

    // With the certificate the token was bound to: accepted.
    let r = server
        .get(&server.client(Some(&holder)), INSTANCES, Some(bound))
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    // With another certificate of the same CA: refused, 401 not 500.
    let r = server
        .get(&server.client(Some(&other)), INSTANCES, Some(bound))
        .await
        .unwrap();
    let body = invalid_token(r, bound, "bound token, another certificate").await;
    assert!(body.contains("another client certificate"), "{body}");
    // An unbound token is good with any certificate.
    let r = server
        .get(&server.client(Some(&other)), INSTANCES, Some(unbound))
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    // A certificate of another CA fails the handshake even in optional mode.
    let stranger = Pki::new("another CA").client("holder", &[]);
    let e = server
        .get(&server.client(Some(&stranger)), "/healthz", None)
        .await
        .unwrap_err();
    assert!(e.status().is_none(), "{e}");
}

#[tokio::test]
async fn mapped_certificates_are_callers_with_their_roles_and_project() {
    let map = CertificateIdentities::from_json(
        r#"[
          {"subject_cn": "reader-1", "client_id": "reader-a", "roles": ["reader"],
           "project_id": "proj-a", "project_name": "Project A"},
          {"san_uri": "spiffe://nfv/writer", "client_id": "writer-a", "roles": ["member"],
           "project_id": "proj-a"},
          {"san_dns": "writer.proj-b.example", "client_id": "writer-b", "roles": ["member"],
           "project_id": "proj-b"},
          {"san_email": "noc@example.com", "client_id": "noc", "roles": ["admin"]}
        ]"#,
        vnfm_oauth::RoleMapping::default(),
    )
    .unwrap();
    let server = Server::start(ClientCertMode::Required, |o| {
        o.client_certificates = Some(Arc::new(map));
    })
    .await;
    let reader = server.client(Some(&server.ca.client("reader-1", &[])));
    let writer = server.client(Some(
        &server.ca.client("w", &[San::Uri("spiffe://nfv/writer")]),
    ));
    let writer_b = server.client(Some(
        &server.ca.client("wb", &[San::Dns("writer.proj-b.example")]),
    ));
    let noc = server.client(Some(
        &server.ca.client("ops", &[San::Email("noc@example.com")]),
    ));
    let unmapped = server.client(Some(&server.ca.client("nobody", &[])));

    let subscribe = |client: &reqwest::Client, name: &str| {
        client
            .post(format!("{}{SUBSCRIPTIONS}", server.base))
            .header("version", "2.0.0")
            .json(&json!({"callbackUri": format!("http://127.0.0.1:9/{name}")}))
            .send()
    };
    // The writer of proj-a subscribes; its subscription belongs to proj-a.
    let r = subscribe(&writer, "writer-a").await.unwrap();
    assert_eq!(
        r.status(),
        StatusCode::CREATED,
        "{}",
        r.text().await.unwrap()
    );
    // The reader of proj-a reads it, but may not write (403, no token involved).
    let r = server.get(&reader, SUBSCRIPTIONS, None).await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let listed: Value = r.json().await.unwrap();
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    let r = subscribe(&reader, "reader-a").await.unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let problem: Value = r.json().await.unwrap();
    let detail = problem["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("`reader-a`") && detail.contains("may only read"),
        "{problem}"
    );
    // The writer of proj-b does not see proj-a's subscription; the admin sees every one.
    let r = server.get(&writer_b, SUBSCRIPTIONS, None).await.unwrap();
    let listed: Value = r.json().await.unwrap();
    assert_eq!(listed.as_array().map(Vec::len), Some(0), "{listed}");
    let r = server.get(&noc, SUBSCRIPTIONS, None).await.unwrap();
    let listed: Value = r.json().await.unwrap();
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    // A certificate of the CA that the map does not know identifies no one.
    let r = server.get(&unmapped, SUBSCRIPTIONS, None).await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    // Credentials win over the certificate: a wrong token on the writer's connection is a
    // 401, not the writer.
    let r = server
        .get(&writer, SUBSCRIPTIONS, Some("not-a-valid-token"))
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn client_certificate_options_that_cannot_work_stop_the_start() {
    vnfm::lcm::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let ca = Pki::new("ca");
    let server = ca.server("localhost", &[San::Ip("127.0.0.1")]);
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let (cert, key) = (
        write("s.pem", &server.cert_pem),
        write("s.key", &server.key_pem),
    );
    let options =
        |tls: bool, cas: Vec<std::path::PathBuf>, mode: Option<ClientCertMode>| ServeOptions {
            listen: "127.0.0.1:0".parse().unwrap(),
            tls_cert: tls.then(|| cert.clone()),
            tls_key: tls.then(|| key.clone()),
            tls_client_ca: cas,
            tls_client_auth: mode,
            shutdown_timeout: Duration::from_secs(1),
            state: StateOptions::new(dir.path().join("data")),
        };
    let not_a_ca = write("not-a-ca.pem", "no certificate here");
    let cases = [
        (
            options(false, vec![], Some(ClientCertMode::Required)),
            "need TLS",
        ),
        (
            options(true, vec![], Some(ClientCertMode::Optional)),
            "at least one CA",
        ),
        (
            options(true, vec![not_a_ca.clone()], Some(ClientCertMode::Required)),
            "no certificate found",
        ),
        (
            options(true, vec![not_a_ca], None),
            "needs --tls-client-auth",
        ),
    ];
    for (options, want) in cases {
        let e = vnfm_api::serve(vnfm::lcm::builder(), options, |_| panic!("started"))
            .await
            .unwrap_err();
        assert!(e.to_string().contains(want), "{want}: {e}");
    }
}

/// Keycloak's certificate-bound tokens (its client `tenant-a-mtls` gets them over mutual TLS at
/// the HTTPS endpoint, `cnf.x5t#S256`), verified as JWTs and introspected by `tls_client_auth`
/// (the VNFM's client `vnfm-mtls` presenting its certificate), on a server accepting client
/// certificates of Keycloak's CA: good with their certificate only.
#[vnfm_test_env::needs(keycloak)]
#[tokio::test]
async fn keycloak_bound_tokens_need_their_certificate_introspected_by_tls_client_auth_or_not() {
    let kc = vnfm_oauth::testing::TestKeycloak::from_env();
    let holder = Issued {
        cert_pem: kc.tls_file("tenant-a-mtls.pem"),
        key_pem: kc.tls_file("tenant-a-mtls.key"),
        der: Vec::new(),
    };
    // Another certificate of the same CA (the VNFM's own client certificate).
    let other = Issued {
        cert_pem: kc.tls_file("vnfm-mtls.pem"),
        key_pem: kc.tls_file("vnfm-mtls.key"),
        der: Vec::new(),
    };
    for check in [TokenCheck::Introspection, TokenCheck::Jwt] {
        let mut config = OAuthConfig::new(kc.tls_issuer(), vnfm_oauth::testing::AUDIENCE);
        config.check = check;
        config.ca_pem = Some(kc.tls_file("ca.pem"));
        if check == TokenCheck::Introspection {
            config.introspection = Some(kc.tls_introspection());
        }
        let oauth = Arc::new(OAuthVerifier::new(config).unwrap());
        let server = Server::start_with(ClientCertMode::Optional, &[kc.tls_file("ca.pem")], |o| {
            o.oauth = Some(oauth.clone())
        })
        .await;
        let token = kc.bound_token("tenant-a-mtls").await;
        let what = format!("{check:?}");
        let r = server
            .get(&server.client(Some(&holder)), INSTANCES, Some(&token))
            .await
            .unwrap();
        assert_eq!(
            r.status(),
            StatusCode::OK,
            "{what}: {}",
            r.text().await.unwrap()
        );
        let r = server
            .get(&server.client(None), INSTANCES, Some(&token))
            .await
            .unwrap();
        invalid_token(r, &token, &format!("{what}, no certificate")).await;
        let r = server
            .get(&server.client(Some(&other)), INSTANCES, Some(&token))
            .await
            .unwrap();
        invalid_token(r, &token, &format!("{what}, another certificate")).await;
        if check == TokenCheck::Introspection {
            assert!(
                oauth.cached_answers() >= 1,
                "introspected by tls_client_auth"
            );
        }
    }
}
