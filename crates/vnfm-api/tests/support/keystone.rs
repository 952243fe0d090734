//! Keystone callers of the API tests: projects of the real test Keystone
//! (`scripts/test-env/openstack.sh start`) with one user each and the user's token, a harness
//! that validates those tokens, and requests made with them; or a scripted Keystone on
//! loopback (no service needed: it answers the validator's two requests for three fixed
//! tokens).

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::IntoResponse;
use serde_json::{Value, json};
use vnfm_keystone::testing::{TestKeystone, TestProject};
use vnfm_keystone::{KeystoneConfig, KeystoneValidator, ServiceCredentials};

use super::{HELLO, Harness, Reply, zip_dir};

/// A project of the test Keystone with one user of given roles in it, and that user's token.
pub struct Tenant {
    /// The project.
    pub project: TestProject,
    /// A token of its user, scoped to the project.
    pub token: String,
}

impl Tenant {
    /// A new project named after `prefix` with a user of `roles` in it.
    pub async fn new(ks: &TestKeystone, prefix: &str, roles: &[&str]) -> Tenant {
        let project = ks.project(prefix).await;
        let user = ks.user(prefix, &project, roles).await;
        let token = ks.token(&user).await;
        Tenant { project, token }
    }

    /// The project's id.
    pub fn id(&self) -> &str {
        &self.project.id
    }
}

/// A harness (with `services`, as [`Harness::with_services`]) whose callers authenticate with
/// tokens of `ks`, validated by a service user of its own.
pub async fn keystone_harness(
    ks: &TestKeystone,
    services: impl FnOnce(vnfm::lcm::Builder) -> vnfm::lcm::Builder,
) -> Harness {
    let (_service, credentials) = ks.service_user().await;
    let validator =
        Arc::new(KeystoneValidator::new(KeystoneConfig::new(ks.url.clone(), credentials)).unwrap());
    Harness::with_services(services, |o| o.keystone = Some(validator)).await
}

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
pub async fn scripted_keystone_harness() -> Harness {
    let validator = scripted_keystone(axum::routing::get(validate)).await;
    Harness::with_services(|b| b, |o| o.keystone = Some(validator)).await
}

/// A scripted Keystone on loopback whose token validation (`GET /v3/auth/tokens`) is
/// `validate`, and which issues the service token; the validator the server uses with it.
pub async fn scripted_keystone(validate: axum::routing::MethodRouter) -> Arc<KeystoneValidator> {
    vnfm::lcm::install_crypto_provider();
    let app = axum::Router::new().route("/v3/auth/tokens", validate.post(issue));
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
    Arc::new(KeystoneValidator::new(KeystoneConfig::new(url, credentials)).unwrap())
}

/// A request with `X-Auth-Token: token` and an optional body of a content type.
pub async fn as_user_raw(
    h: &Harness,
    token: &str,
    method: Method,
    uri: &str,
    body: Option<(&str, Vec<u8>)>,
) -> Reply {
    let mut headers = vec![("x-auth-token", token)];
    if uri.contains("/v2/") {
        headers.push(("version", "2.0.0"));
    }
    let bytes = match body {
        Some((content_type, bytes)) => {
            headers.push(("content-type", content_type));
            bytes
        }
        None => Vec::new(),
    };
    h.raw(method, uri, &headers, bytes).await
}

/// [`as_user_raw`] with an optional JSON body (a merge patch for `PATCH`).
pub async fn as_user(
    h: &Harness,
    token: &str,
    method: Method,
    uri: &str,
    body: Option<Value>,
) -> Reply {
    let content_type = if method == Method::PATCH {
        "application/merge-patch+json"
    } else {
        "application/json"
    };
    let body = body.map(|v| (content_type, serde_json::to_vec(&v).unwrap()));
    as_user_raw(h, token, method, uri, body).await
}

/// `token`'s caller creates a package and onboards the hello VNF into it; the package's id.
pub async fn onboard_hello_as(h: &Harness, token: &str) -> String {
    let r = as_user(
        h,
        token,
        Method::POST,
        "/vnfpkgm/v2/vnf_packages",
        Some(json!({})),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let pkg = r.json()["id"].as_str().unwrap().to_owned();
    let content = format!("/vnfpkgm/v2/vnf_packages/{pkg}/package_content");
    let zip = Some(("application/zip", zip_dir(HELLO.as_ref())));
    let r = as_user_raw(h, token, Method::PUT, &content, zip).await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    let pkg_uri = format!("/vnfpkgm/v2/vnf_packages/{pkg}");
    for _ in 0..300 {
        let info = as_user(h, token, Method::GET, &pkg_uri, None).await.json();
        if info["onboardingState"] == "ONBOARDED" {
            return pkg;
        }
        assert_ne!(info["onboardingState"], "ERROR", "{info}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("package {pkg} was not onboarded");
}

/// `r`'s JSON body (`Null` when empty), after checking its status.
pub fn answered(r: &Reply, status: u16) -> Value {
    assert_eq!(
        r.status.as_u16(),
        status,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    if r.body.is_empty() {
        Value::Null
    } else {
        r.json()
    }
}

/// The `detail` of a `404` ProblemDetails, with `id` replaced by `<id>` (to compare the answer
/// about another project's resource with the one about a missing resource).
pub fn not_found(r: &Reply, id: &str) -> String {
    r.problem(404)["detail"]
        .as_str()
        .unwrap()
        .replace(id, "<id>")
}
