//! [`KeystoneIdentity`]: who a validated token belongs to, read from Keystone's token
//! document (`{"token": {"user": ..., "project": ..., "roles": ..., "expires_at": ...}}`).

use std::time::SystemTime;

use serde::Deserialize;

use crate::error::{KeystoneError, Step};

/// A domain named in a token.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Domain {
    /// Domain id (`default`).
    pub id: String,
    /// Domain name (`Default`).
    #[serde(default)]
    pub name: String,
}

/// The caller behind a valid Keystone token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeystoneIdentity {
    /// The user's id.
    pub user_id: String,
    /// The user's name.
    pub user_name: String,
    /// The user's domain.
    pub user_domain: Option<Domain>,
    /// The project a project-scoped token is scoped to.
    pub project_id: Option<String>,
    /// That project's name.
    pub project_name: Option<String>,
    /// That project's domain.
    pub project_domain: Option<Domain>,
    /// The domain a domain-scoped token is scoped to.
    pub domain: Option<Domain>,
    /// Whether the token is system-scoped (`"system": {"all": true}`).
    pub system_scope: bool,
    /// The names of the token's roles (implied roles included, as Keystone lists them).
    pub roles: Vec<String>,
    /// When the token expires.
    pub expires_at: SystemTime,
    /// Keystone's `is_admin_project`: whether the project is the cloud's admin project.
    /// Keystone sends it only when an admin project is configured; absent means true (as
    /// keystonemiddleware reads it).
    pub is_admin_project: bool,
}

#[derive(Deserialize)]
pub(crate) struct TokenDocument {
    token: RawToken,
}

#[derive(Deserialize)]
struct RawToken {
    expires_at: String,
    user: RawUser,
    #[serde(default)]
    project: Option<RawProject>,
    #[serde(default)]
    domain: Option<Domain>,
    #[serde(default)]
    system: Option<serde_json::Value>,
    #[serde(default)]
    roles: Vec<RawRole>,
    #[serde(default)]
    is_admin_project: Option<bool>,
}

#[derive(Deserialize)]
struct RawUser {
    id: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    domain: Option<Domain>,
}

#[derive(Deserialize)]
struct RawProject {
    id: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    domain: Option<Domain>,
}

#[derive(Deserialize)]
struct RawRole {
    name: String,
}

/// Reads an RFC 3339 `expires_at` (`2026-11-25T01:00:00.000000Z`).
pub(crate) fn parse_expiry(value: &str, step: Step) -> Result<SystemTime, KeystoneError> {
    value
        .parse::<jiff::Timestamp>()
        .map(SystemTime::from)
        .map_err(|source| KeystoneError::Expiry {
            step,
            value: value.to_owned(),
            source,
        })
}

impl TokenDocument {
    /// The expiry of the token (for the service token, which needs nothing else).
    pub(crate) fn expires_at(&self, step: Step) -> Result<SystemTime, KeystoneError> {
        parse_expiry(&self.token.expires_at, step)
    }

    /// The identity the document describes.
    pub(crate) fn into_identity(self) -> Result<KeystoneIdentity, KeystoneError> {
        let expires_at = self.expires_at(Step::Validate)?;
        let t = self.token;
        let system_scope = t
            .system
            .as_ref()
            .and_then(|s| s.get("all"))
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false);
        let (project_id, project_name, project_domain) = match t.project {
            Some(p) => (Some(p.id), Some(p.name), p.domain),
            None => (None, None, None),
        };
        Ok(KeystoneIdentity {
            user_id: t.user.id,
            user_name: t.user.name,
            user_domain: t.user.domain,
            project_id,
            project_name,
            project_domain,
            domain: t.domain,
            system_scope,
            roles: t.roles.into_iter().map(|r| r.name).collect(),
            expires_at,
            is_admin_project: t.is_admin_project.unwrap_or(true),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_project_scoped_token_document_is_read() {
        let doc: TokenDocument = serde_json::from_str(
            r#"{"token": {
                "methods": ["password"], "audit_ids": ["x"],
                "user": {"id": "u1", "name": "alice", "domain": {"id": "default", "name": "Default"},
                         "password_expires_at": null},
                "project": {"id": "p1", "name": "demo", "domain": {"id": "default", "name": "Default"}},
                "is_domain": false,
                "roles": [{"id": "r1", "name": "member"}, {"id": "r2", "name": "reader"}],
                "expires_at": "2026-11-25T01:00:00.000000Z", "issued_at": "2026-11-25T00:00:00.000000Z"
            }}"#,
        )
        .unwrap();
        let id = doc.into_identity().unwrap();
        assert_eq!(id.user_id, "u1");
        assert_eq!(id.user_name, "alice");
        assert_eq!(id.project_id.as_deref(), Some("p1"));
        assert_eq!(id.project_name.as_deref(), Some("demo"));
        assert_eq!(id.project_domain.as_ref().unwrap().name, "Default");
        assert_eq!(id.roles, ["member", "reader"]);
        assert!(id.is_admin_project && !id.system_scope);
        let expected = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_568_400);
        assert_eq!(id.expires_at, expected);
    }

    #[test]
    fn system_scope_and_admin_project_flags_are_read() {
        let doc: TokenDocument = serde_json::from_str(
            r#"{"token": {"user": {"id": "u"}, "system": {"all": true}, "is_admin_project": false,
                "roles": [{"name": "admin"}], "expires_at": "2030-01-01T00:00:00Z"}}"#,
        )
        .unwrap();
        let id = doc.into_identity().unwrap();
        assert!(id.system_scope && !id.is_admin_project && id.project_id.is_none());
    }

    #[test]
    fn an_unreadable_expiry_is_an_error_naming_the_value() {
        let doc: TokenDocument =
            serde_json::from_str(r#"{"token": {"user": {"id": "u"}, "expires_at": "soon"}}"#)
                .unwrap();
        let e = doc.into_identity().unwrap_err();
        assert!(e.to_string().contains("`soon`"), "{e}");
    }
}
