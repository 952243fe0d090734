//! [`TokenIdentity`]: who a verified token belongs to, read from its claims (a JWT's payload
//! or an introspection answer) through the [`ClaimMapping`].

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

use crate::config::ClaimMapping;

/// How a token was verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verified {
    /// A JWT whose signature was checked against the issuer's key set.
    Jwt,
    /// The authorization server's introspection endpoint said it is active.
    Introspection,
}

/// The caller behind a valid token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenIdentity {
    /// `sub`, else the client id.
    pub subject: String,
    /// A name for messages and logs: `preferred_username`, `username`, the client id or `sub`.
    pub name: String,
    /// The client the token was issued to (`client_id`, else `azp`).
    pub client_id: Option<String>,
    /// The project, from [`ClaimMapping::project_claim`].
    pub project_id: Option<String>,
    /// The project's name, from [`ClaimMapping::project_name_claim`].
    pub project_name: Option<String>,
    /// The values of [`ClaimMapping::role_claims`], in order, without repeats.
    pub roles: Vec<String>,
    /// When the token expires (`exp`), if it says.
    pub expires_at: Option<SystemTime>,
    /// The client certificate the token is bound to (RFC 8705 clause 3.1, the confirmation
    /// `cnf.x5t#S256`): the base64url SHA-256 thumbprint (no padding) of its DER. Such a token
    /// is good only on a TLS connection whose client certificate has this thumbprint; the
    /// resource server checks that (this crate does not see connections).
    pub certificate_thumbprint: Option<String>,
    /// How it was verified.
    pub verified: Verified,
}

/// The value at a dotted `path` of `claims` (`realm_access.roles`). A top-level member whose
/// name holds dots itself (`https://example.com/roles`) is found too.
pub(crate) fn claim<'a>(claims: &'a Map<String, Value>, path: &str) -> Option<&'a Value> {
    if let Some(v) = claims.get(path) {
        return Some(v);
    }
    let mut parts = path.split('.');
    let mut value = claims.get(parts.next()?)?;
    for part in parts {
        value = value.as_object()?.get(part)?;
    }
    Some(value)
}

/// A claim as a string (a number is written out: project ids are sometimes numbers).
fn text(claims: &Map<String, Value>, path: &str) -> Option<String> {
    match claim(claims, path)? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The values of a role claim: an array's strings, or a string's space-separated words.
fn values(value: &Value) -> Vec<String> {
    match value {
        Value::String(s) => s.split_whitespace().map(str::to_owned).collect(),
        Value::Array(items) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

/// A NumericDate claim (`exp`) as an instant.
pub(crate) fn instant(claims: &Map<String, Value>, name: &str) -> Option<SystemTime> {
    let secs = claims.get(name)?.as_f64()?;
    (secs.is_finite() && secs >= 0.0).then(|| UNIX_EPOCH + Duration::from_secs_f64(secs))
}

impl TokenIdentity {
    /// The identity `claims` describe under `mapping`.
    pub(crate) fn from_claims(
        claims: &Map<String, Value>,
        mapping: &ClaimMapping,
        verified: Verified,
    ) -> TokenIdentity {
        let client_id = text(claims, "client_id").or_else(|| text(claims, "azp"));
        let subject = text(claims, "sub")
            .or_else(|| client_id.clone())
            .unwrap_or_default();
        let name = ["preferred_username", "username"]
            .iter()
            .find_map(|c| text(claims, c))
            .or_else(|| client_id.clone())
            .unwrap_or_else(|| subject.clone());
        let mut roles: Vec<String> = Vec::new();
        for path in &mapping.role_claims {
            for role in claim(claims, path).map(values).unwrap_or_default() {
                if !roles.contains(&role) {
                    roles.push(role);
                }
            }
        }
        TokenIdentity {
            subject,
            name,
            client_id,
            project_id: mapping
                .project_claim
                .as_deref()
                .and_then(|p| text(claims, p)),
            project_name: mapping
                .project_name_claim
                .as_deref()
                .and_then(|p| text(claims, p)),
            roles,
            expires_at: instant(claims, "exp"),
            certificate_thumbprint: claims
                .get("cnf")
                .and_then(Value::as_object)
                .and_then(|cnf| cnf.get("x5t#S256"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            verified,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn claims(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn keycloak_claims_give_roles_scopes_and_the_project() {
        let c = claims(json!({
            "sub": "8d3c", "azp": "tenant-a", "preferred_username": "service-account-tenant-a",
            "scope": "profile vnfm email", "exp": 1_900_000_000u64,
            "realm_access": {"roles": ["member", "offline_access", "member"]},
            "project_id": "proj-a", "project_name": "Project A"
        }));
        let id = TokenIdentity::from_claims(&c, &ClaimMapping::default(), Verified::Jwt);
        assert_eq!(id.subject, "8d3c");
        assert_eq!(id.name, "service-account-tenant-a");
        assert_eq!(id.client_id.as_deref(), Some("tenant-a"));
        assert_eq!(
            id.roles,
            ["member", "offline_access", "profile", "vnfm", "email"]
        );
        assert_eq!(id.project_id.as_deref(), Some("proj-a"));
        assert_eq!(id.project_name.as_deref(), Some("Project A"));
        assert_eq!(
            id.expires_at,
            Some(UNIX_EPOCH + Duration::from_secs(1_900_000_000))
        );
    }

    #[test]
    fn paths_reach_nested_members_and_dotted_names() {
        let c = claims(json!({
            "client_id": "c1", "project": {"id": 42},
            "https://vnfm.example/roles": ["admin"], "scp": ["vnfm.read"]
        }));
        let mapping = ClaimMapping {
            role_claims: vec!["https://vnfm.example/roles".into(), "scp".into()],
            project_claim: Some("project.id".into()),
            project_name_claim: None,
        };
        let id = TokenIdentity::from_claims(&c, &mapping, Verified::Introspection);
        assert_eq!(id.subject, "c1");
        assert_eq!(id.name, "c1");
        assert_eq!(id.roles, ["admin", "vnfm.read"]);
        assert_eq!(id.project_id.as_deref(), Some("42"));
        assert_eq!(id.project_name, None);
        assert_eq!(id.certificate_thumbprint, None);
    }

    #[test]
    fn a_certificate_bound_token_names_its_thumbprint() {
        let c = claims(json!({
            "sub": "u1", "cnf": {"x5t#S256": "bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2"}
        }));
        let id = TokenIdentity::from_claims(&c, &ClaimMapping::default(), Verified::Jwt);
        assert_eq!(
            id.certificate_thumbprint.as_deref(),
            Some("bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2")
        );
        // Another confirmation method (a DPoP key) binds to no certificate.
        let c = claims(json!({"sub": "u1", "cnf": {"jkt": "0ZcOCORZNYy"}}));
        let id = TokenIdentity::from_claims(&c, &ClaimMapping::default(), Verified::Jwt);
        assert_eq!(id.certificate_thumbprint, None);
    }
}
