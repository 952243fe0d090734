//! Test support (feature `testing`): a real Keystone from the environment that
//! `scripts/test-env/openstack.sh start` prints, administered through its REST API to create
//! projects, users with roles, tokens and application credentials for the tests.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use vnfm_types::SecretString;

use crate::config::ServiceCredentials;

/// A user the fixture created.
#[derive(Debug, Clone)]
pub struct TestUser {
    /// User name.
    pub name: String,
    /// User id.
    pub id: String,
    /// Password.
    pub password: SecretString,
    /// The project the user has its roles in.
    pub project: TestProject,
}

/// A project the fixture created.
#[derive(Debug, Clone)]
pub struct TestProject {
    /// Project name.
    pub name: String,
    /// Project id.
    pub id: String,
}

/// A catalog entry the fixture created: a service with one public endpoint in a region of
/// its own, so that clients of concurrent tests (`OS_REGION_NAME`) each find their own.
#[derive(Debug, Clone)]
pub struct TestEndpoint {
    /// The region clients name to find this endpoint.
    pub region: String,
    /// The service id.
    pub service_id: String,
    /// The endpoint id.
    pub endpoint_id: String,
}

/// The test Keystone, administered with an admin token.
pub struct TestKeystone {
    /// The identity endpoint (`.../v3`).
    pub url: String,
    admin_token: SecretString,
    http: reqwest::Client,
}

impl std::fmt::Debug for TestKeystone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestKeystone")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

/// A name no other test run uses.
pub fn unique(prefix: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = N.fetch_add(1, Ordering::Relaxed);
    let digest = Sha256::digest(format!("{nanos}-{n}-{}", std::process::id()));
    format!("{prefix}-{}", &hex(&digest)[..12])
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl TestKeystone {
    /// The Keystone of `VNFM_TEST_KEYSTONE_URL`, logged in as its admin
    /// (`VNFM_TEST_OS_ADMIN_*`), for tests that carry `#[vnfm_test_env::needs(keystone)]`;
    /// panics when the variables are not set.
    pub async fn from_env() -> TestKeystone {
        let url = vnfm_test_env::var("VNFM_TEST_KEYSTONE_URL");
        let _ = rustls::crypto::ring::default_provider().install_default();
        let var = |k: &str, default: &str| std::env::var(k).unwrap_or_else(|_| default.into());
        let http = reqwest::Client::new();
        let body = json!({"auth": {
            "identity": {"methods": ["password"], "password": {"user": {
                "name": var("VNFM_TEST_OS_ADMIN_USERNAME", "admin"), "domain": {"id": "default"},
                "password": vnfm_test_env::var("VNFM_TEST_OS_ADMIN_PASSWORD")}}},
            "scope": {"project": {"name": var("VNFM_TEST_OS_ADMIN_PROJECT", "admin"),
                                  "domain": {"id": "default"}}}}});
        let r = http
            .post(format!("{url}/auth/tokens?nocatalog"))
            .json(&body)
            .send()
            .await
            .expect("Keystone answers");
        assert_eq!(
            r.status().as_u16(),
            201,
            "admin login (VNFM_TEST_OS_ADMIN_*)"
        );
        let token = header_token(&r);
        TestKeystone {
            url: url.trim_end_matches('/').to_owned(),
            admin_token: SecretString::new(token),
            http,
        }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut req = self
            .http
            .request(method.clone(), format!("{}{path}", self.url))
            .header("X-Auth-Token", self.admin_token.expose());
        if let Some(b) = body {
            req = req.json(&b);
        }
        let r = req.send().await.expect("Keystone answers");
        let status = r.status();
        let text = r.text().await.unwrap_or_default();
        assert!(status.is_success(), "{method} {path}: {status} {text}");
        serde_json::from_str(&text).unwrap_or(Value::Null)
    }

    /// A new project.
    pub async fn project(&self, prefix: &str) -> TestProject {
        let name = unique(prefix);
        let out = self
            .call(
                reqwest::Method::POST,
                "/projects",
                Some(json!({"project": {"name": name, "domain_id": "default"}})),
            )
            .await;
        TestProject {
            name,
            id: out["project"]["id"].as_str().unwrap().to_owned(),
        }
    }

    /// The id of role `name`, created when missing.
    pub async fn role(&self, name: &str) -> String {
        let out = self
            .call(reqwest::Method::GET, &format!("/roles?name={name}"), None)
            .await;
        if let Some(id) = out["roles"][0]["id"].as_str() {
            return id.to_owned();
        }
        let out = self
            .call(
                reqwest::Method::POST,
                "/roles",
                Some(json!({"role": {"name": name}})),
            )
            .await;
        out["role"]["id"].as_str().unwrap().to_owned()
    }

    /// A new user with `roles` in `project`.
    pub async fn user(&self, prefix: &str, project: &TestProject, roles: &[&str]) -> TestUser {
        let name = unique(prefix);
        let password = unique("pw");
        let out = self
            .call(
                reqwest::Method::POST,
                "/users",
                Some(json!({"user": {"name": name, "domain_id": "default", "password": password}})),
            )
            .await;
        let id = out["user"]["id"].as_str().unwrap().to_owned();
        for role in roles {
            let role_id = self.role(role).await;
            self.call(
                reqwest::Method::PUT,
                &format!("/projects/{}/users/{id}/roles/{role_id}", project.id),
                None,
            )
            .await;
        }
        TestUser {
            name,
            id,
            password: SecretString::new(password),
            project: project.clone(),
        }
    }

    /// A token of `user`, scoped to its project.
    pub async fn token(&self, user: &TestUser) -> String {
        let body = json!({"auth": {
            "identity": {"methods": ["password"], "password": {"user": {
                "name": user.name, "domain": {"id": "default"}, "password": user.password.expose()}}},
            "scope": {"project": {"id": user.project.id}}}});
        let r = self
            .http
            .post(format!("{}/auth/tokens?nocatalog", self.url))
            .json(&body)
            .send()
            .await
            .expect("Keystone answers");
        assert_eq!(r.status().as_u16(), 201, "login of {}", user.name);
        header_token(&r)
    }

    /// A token of `user` with `role` in its project that Keystone stops honouring
    /// `lifetime` after the returned instant: a trust-scoped token (a new trustor with `role`
    /// in the project delegates it to `user` by a trust expiring then), since Keystone ends a
    /// trust-scoped token with its trust. A real expired token once that time has passed.
    pub async fn expiring_token(
        &self,
        user: &TestUser,
        role: &str,
        lifetime: std::time::Duration,
    ) -> (String, tokio::time::Instant) {
        let trustor = self.user("trustor", &user.project, &[role]).await;
        let trustor_token = self.token(&trustor).await;
        let expires = tokio::time::Instant::now() + lifetime;
        let expires_at = jiff::Timestamp::now()
            .checked_add(jiff::SignedDuration::try_from(lifetime).expect("a short lifetime"))
            .expect("a near time")
            .strftime("%Y-%m-%dT%H:%M:%S%.6fZ")
            .to_string();
        let r = self
            .http
            .post(format!("{}/OS-TRUST/trusts", self.url))
            .header("X-Auth-Token", trustor_token)
            .json(&json!({"trust": {
                "trustor_user_id": trustor.id, "trustee_user_id": user.id,
                "project_id": user.project.id, "impersonation": false,
                "roles": [{"name": role}], "expires_at": expires_at}}))
            .send()
            .await
            .expect("Keystone answers");
        let status = r.status().as_u16();
        let out: Value = r.json().await.unwrap_or_default();
        assert_eq!(status, 201, "creating a trust: {out}");
        let trust = out["trust"]["id"].as_str().unwrap().to_owned();
        let body = json!({"auth": {
            "identity": {"methods": ["password"], "password": {"user": {
                "name": user.name, "domain": {"id": "default"}, "password": user.password.expose()}}},
            "scope": {"OS-TRUST:trust": {"id": trust}}}});
        let r = self
            .http
            .post(format!("{}/auth/tokens?nocatalog", self.url))
            .json(&body)
            .send()
            .await
            .expect("Keystone answers");
        assert_eq!(
            r.status().as_u16(),
            201,
            "trust-scoped login of {}",
            user.name
        );
        (header_token(&r), expires)
    }

    /// Revokes `token` (`DELETE /v3/auth/tokens`).
    pub async fn revoke(&self, token: &str) {
        let r = self
            .http
            .delete(format!("{}/auth/tokens", self.url))
            .header("X-Auth-Token", self.admin_token.expose())
            .header("X-Subject-Token", token)
            .send()
            .await
            .expect("Keystone answers");
        assert_eq!(r.status().as_u16(), 204, "revoking a token");
    }

    /// An application credential of `user` (created with the user's own token).
    pub async fn application_credential(&self, user: &TestUser) -> (String, SecretString) {
        let token = self.token(user).await;
        let r = self
            .http
            .post(format!(
                "{}/users/{}/application_credentials",
                self.url, user.id
            ))
            .header("X-Auth-Token", token)
            .json(&json!({"application_credential": {"name": unique("vnfm-test")}}))
            .send()
            .await
            .expect("Keystone answers");
        let status = r.status().as_u16();
        let out: Value = r.json().await.unwrap_or_default();
        assert_eq!(status, 201, "creating an application credential: {out}");
        let cred = &out["application_credential"];
        (
            cred["id"].as_str().unwrap().to_owned(),
            SecretString::new(cred["secret"].as_str().unwrap()),
        )
    }

    /// A service identity allowed to validate tokens: a new user with the `service` role in
    /// a new project, with its password credentials.
    pub async fn service_user(&self) -> (TestUser, ServiceCredentials) {
        let project = self.project("svc").await;
        let user = self.user("vnfm-svc", &project, &["service"]).await;
        let credentials = ServiceCredentials::Password {
            user: user.name.clone(),
            password: user.password.clone(),
            user_domain: "Default".into(),
            project: project.name.clone(),
            project_domain: "Default".into(),
        };
        (user, credentials)
    }

    /// Registers `url` in the catalog as the public endpoint of a new service of
    /// `service_type` (`nfv-orchestration` is where python-tackerclient looks for Tacker), in
    /// a new region; [`TestKeystone::remove_endpoint`] takes it out again.
    pub async fn register_endpoint(&self, service_type: &str, url: &str) -> TestEndpoint {
        let region = unique("region");
        self.call(
            reqwest::Method::POST,
            "/regions",
            Some(json!({"region": {"id": region}})),
        )
        .await;
        let out = self
            .call(
                reqwest::Method::POST,
                "/services",
                Some(json!({"service": {"type": service_type, "name": unique("vnfm"), "enabled": true}})),
            )
            .await;
        let service_id = out["service"]["id"].as_str().unwrap().to_owned();
        let out = self
            .call(
                reqwest::Method::POST,
                "/endpoints",
                Some(
                    json!({"endpoint": {"service_id": service_id, "interface": "public",
                                         "url": url, "region_id": region}}),
                ),
            )
            .await;
        TestEndpoint {
            region,
            service_id,
            endpoint_id: out["endpoint"]["id"].as_str().unwrap().to_owned(),
        }
    }

    /// Removes what [`TestKeystone::register_endpoint`] created.
    pub async fn remove_endpoint(&self, endpoint: &TestEndpoint) {
        for path in [
            format!("/endpoints/{}", endpoint.endpoint_id),
            format!("/services/{}", endpoint.service_id),
            format!("/regions/{}", endpoint.region),
        ] {
            self.call(reqwest::Method::DELETE, &path, None).await;
        }
    }
}

fn header_token(r: &reqwest::Response) -> String {
    r.headers()
        .get("X-Subject-Token")
        .and_then(|v| v.to_str().ok())
        .expect("X-Subject-Token")
        .to_owned()
}
