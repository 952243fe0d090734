//! Keystone callers of the API tests: projects of the real test Keystone
//! (`scripts/test-env/openstack.sh start`) with one user each and the user's token, a harness
//! that validates those tokens, and requests made with them.

use std::sync::Arc;

use axum::http::Method;
use serde_json::Value;
use vnfm_keystone::testing::{TestKeystone, TestProject};
use vnfm_keystone::{KeystoneConfig, KeystoneValidator};

use super::{Harness, Reply};

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
