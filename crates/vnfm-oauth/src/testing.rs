//! Test support: the Keycloak that `scripts/test-env/keycloak.sh start` runs, its realm `vnfm`
//! and clients (see that script), tokens from it, and its admin REST API for what tests change
//! (signing keys, revocations). Tests using it carry `#[vnfm_test_env::needs(keycloak)]`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{Value, json};

use crate::config::{ClientAuth, IntrospectionConfig, OAuthConfig, Secret};

/// The test Keycloak.
#[derive(Debug, Clone)]
pub struct TestKeycloak {
    /// Keycloak's base URL.
    pub url: String,
    /// The realm `vnfm`'s issuer.
    pub issuer: String,
    /// The script's working directory (`clients.json`, `client-key.pem`).
    pub dir: PathBuf,
    admin_password: String,
    http: reqwest::Client,
}

/// The realm the script sets up.
pub const REALM: &str = "vnfm";

/// The audience of the realm's tokens.
pub const AUDIENCE: &str = "vnfm";

impl TestKeycloak {
    /// The Keycloak the `VNFM_TEST_KEYCLOAK_*` variables describe. Installs the ring TLS
    /// provider (the HTTP client needs one).
    pub fn from_env() -> TestKeycloak {
        let _ = rustls_provider();
        TestKeycloak {
            url: vnfm_test_env::var("VNFM_TEST_KEYCLOAK_URL"),
            issuer: vnfm_test_env::var("VNFM_TEST_KEYCLOAK_ISSUER"),
            dir: PathBuf::from(vnfm_test_env::var("VNFM_TEST_KEYCLOAK_DIR")),
            admin_password: vnfm_test_env::var("VNFM_TEST_KEYCLOAK_ADMIN_PASSWORD"),
            http: reqwest::Client::new(),
        }
    }

    /// The secret of a confidential client of the realm.
    pub fn secret(&self, client: &str) -> String {
        let path = self.dir.join("clients.json");
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let all: BTreeMap<String, String> = serde_json::from_str(&text).unwrap();
        all.get(client)
            .unwrap_or_else(|| panic!("no client {client} in {}", path.display()))
            .clone()
    }

    /// The private key (PEM) of the `private_key_jwt` client `vnfm-pkjwt` (kid `vnfm-pkjwt-1`).
    pub fn client_key_pem(&self) -> String {
        std::fs::read_to_string(self.dir.join("client-key.pem")).unwrap()
    }

    /// A verifier configuration for the realm: its issuer, audience `vnfm`, the defaults
    /// otherwise.
    pub fn config(&self) -> OAuthConfig {
        OAuthConfig::new(self.issuer.clone(), AUDIENCE)
    }

    /// Introspection as the VNFM's client `client` (`vnfm`, `vnfm-jwt` or `vnfm-pkjwt`) by the
    /// method `method` (`client_secret_basic`, `client_secret_post`, `client_secret_jwt`,
    /// `private_key_jwt`).
    pub fn introspection(&self, client: &str, method: &str) -> IntrospectionConfig {
        let auth = match method {
            "client_secret_basic" => ClientAuth::SecretBasic(Secret::new(self.secret(client))),
            "client_secret_post" => ClientAuth::SecretPost(Secret::new(self.secret(client))),
            "client_secret_jwt" => ClientAuth::SecretJwt(Secret::new(self.secret(client))),
            "private_key_jwt" => ClientAuth::PrivateKeyJwt {
                pem: Secret::new(self.client_key_pem()),
                key_id: Some("vnfm-pkjwt-1".into()),
            },
            other => panic!("no client authentication method {other}"),
        };
        IntrospectionConfig::new(client, auth)
    }

    /// An access token of `client` (client credentials grant).
    pub async fn token(&self, client: &str) -> String {
        let url = format!("{}/protocol/openid-connect/token", self.issuer);
        let secret = self.secret(client);
        let form = [
            ("grant_type", "client_credentials"),
            ("client_id", client),
            ("client_secret", secret.as_str()),
        ];
        let r = self.http.post(&url).form(&form).send().await.unwrap();
        let status = r.status();
        let body: Value = r.json().await.unwrap();
        assert!(status.is_success(), "token of {client}: {status} {body}");
        body["access_token"].as_str().unwrap().to_owned()
    }

    /// The same Keycloak over HTTPS, asking clients for a certificate (mutual TLS).
    pub fn tls_url(&self) -> String {
        vnfm_test_env::var("VNFM_TEST_KEYCLOAK_TLS_URL")
    }

    /// The realm's issuer as the HTTPS endpoint names it (the `iss` of tokens got there).
    pub fn tls_issuer(&self) -> String {
        format!("{}/realms/{REALM}", self.tls_url())
    }

    /// A file of the script's TLS material (`ca.pem`, `<client>.pem`, `<client>.key`).
    pub fn tls_file(&self, name: &str) -> String {
        let path = self.dir.join("tls").join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// Introspection at the HTTPS endpoint as `vnfm-mtls`, by `tls_client_auth` with its
    /// certificate.
    pub fn tls_introspection(&self) -> IntrospectionConfig {
        IntrospectionConfig::new(
            "vnfm-mtls",
            ClientAuth::TlsClientAuth {
                cert_pem: self.tls_file("vnfm-mtls.pem"),
                key_pem: Secret::new(self.tls_file("vnfm-mtls.key")),
            },
        )
    }

    /// An access token of the certificate client `client` (`tenant-a-mtls`): the client
    /// credentials grant at the HTTPS endpoint, authenticated by its certificate, so that the
    /// token is bound to it (`cnf.x5t#S256`).
    pub async fn bound_token(&self, client: &str) -> String {
        let identity = format!(
            "{}{}",
            self.tls_file(&format!("{client}.pem")),
            self.tls_file(&format!("{client}.key"))
        );
        let ca = reqwest::Certificate::from_pem(self.tls_file("ca.pem").as_bytes()).unwrap();
        let http = reqwest::Client::builder()
            .tls_certs_only([ca])
            .identity(reqwest::Identity::from_pem(identity.as_bytes()).unwrap())
            .build()
            .unwrap();
        let url = format!("{}/protocol/openid-connect/token", self.tls_issuer());
        let form = [("grant_type", "client_credentials"), ("client_id", client)];
        let r = http.post(&url).form(&form).send().await.unwrap();
        let status = r.status();
        let body: Value = r.json().await.unwrap();
        assert!(status.is_success(), "token of {client}: {status} {body}");
        body["access_token"].as_str().unwrap().to_owned()
    }

    /// Revokes `token` of `client` (RFC 7009 at the realm's revocation endpoint).
    pub async fn revoke(&self, client: &str, token: &str) {
        let url = format!("{}/protocol/openid-connect/revoke", self.issuer);
        let secret = self.secret(client);
        let form = [
            ("token", token),
            ("token_type_hint", "access_token"),
            ("client_id", client),
            ("client_secret", secret.as_str()),
        ];
        let r = self.http.post(&url).form(&form).send().await.unwrap();
        assert!(r.status().is_success(), "revoke: {}", r.status());
    }

    async fn admin_token(&self) -> String {
        let url = format!("{}/realms/master/protocol/openid-connect/token", self.url);
        let form = [
            ("grant_type", "password"),
            ("client_id", "admin-cli"),
            ("username", "admin"),
            ("password", self.admin_password.as_str()),
        ];
        let body: Value = self
            .http
            .post(&url)
            .form(&form)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        body["access_token"].as_str().unwrap().to_owned()
    }

    /// `METHOD <url>/admin/realms/vnfm<path>` with the master admin's token; the answer's
    /// JSON (null when empty).
    pub async fn admin(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}/admin/realms/{REALM}{path}", self.url);
        let mut request = self
            .http
            .request(method.clone(), &url)
            .bearer_auth(self.admin_token().await);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let r = request.send().await.unwrap();
        let status = r.status();
        let text = r.text().await.unwrap();
        assert!(status.is_success(), "{method} {path}: {status} {text}");
        serde_json::from_str(&text).unwrap_or(Value::Null)
    }

    /// The realm's key providers: (component id, name, provider id).
    pub async fn key_providers(&self) -> Vec<(String, String, String)> {
        let all = self
            .admin(
                reqwest::Method::GET,
                "/components?type=org.keycloak.keys.KeyProvider",
                None,
            )
            .await;
        all.as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["id"].as_str().unwrap().to_owned(),
                    c["name"].as_str().unwrap().to_owned(),
                    c["providerId"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    }

    /// Adds an RS256 key (provider `rsa-generated`) named `name` with `priority` (the highest
    /// active key of an algorithm signs): the realm signs with it from then on.
    pub async fn add_rsa_key(&self, name: &str, priority: u32) {
        let realm = self.admin(reqwest::Method::GET, "", None).await;
        let body = json!({
            "name": name, "providerId": "rsa-generated",
            "providerType": "org.keycloak.keys.KeyProvider",
            "parentId": realm["id"],
            "config": {"priority": [priority.to_string()], "keySize": ["2048"],
                       "active": ["true"], "enabled": ["true"], "algorithm": ["RS256"]}
        });
        self.admin(reqwest::Method::POST, "/components", Some(body))
            .await;
    }

    /// Sets a key provider's `active` (signs new tokens) and `enabled` (published, verifies)
    /// flags.
    pub async fn set_key_flags(&self, component: &str, active: bool, enabled: bool) {
        let path = format!("/components/{component}");
        let mut c = self.admin(reqwest::Method::GET, &path, None).await;
        c["config"]["active"] = json!([active.to_string()]);
        c["config"]["enabled"] = json!([enabled.to_string()]);
        self.admin(reqwest::Method::PUT, &path, Some(c)).await;
    }
}

fn rustls_provider() -> Result<(), ()> {
    // Only when no provider is installed yet: a test binary may have installed ring already.
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        rustls::crypto::ring::default_provider()
            .install_default()
            .map_err(|_| ())?;
    }
    Ok(())
}
