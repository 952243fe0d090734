//! Keystone authentication: a request with `X-Auth-Token` (what python-tackerclient and
//! keystoneauth send) is authenticated through the configured [`KeystoneValidator`], and its
//! roles decide whether the caller may read, write and see every project.
//!
//! | outcome | answer |
//! |---|---|
//! | token valid, a reader role | reads; `403` on `POST`, `PUT`, `PATCH`, `DELETE` |
//! | token valid, a writer role | reads and writes |
//! | token valid, none of the mapped roles | `403` |
//! | token unknown, malformed, expired or revoked | `401` |
//! | Keystone unreachable or failing, service credentials refused | `503` |

use axum::http::{HeaderValue, Method};
use vnfm_keystone::{KeystoneError, KeystoneValidator};

use super::{Caller, KeystoneCaller};
use crate::error::ApiError;

/// The header Keystone clients send their token in.
pub(crate) const X_AUTH_TOKEN: &str = "x-auth-token";

/// The caller behind an `X-Auth-Token` value.
pub(crate) async fn authenticate(
    validator: &KeystoneValidator,
    value: &HeaderValue,
) -> Result<Caller, ApiError> {
    let token = value.to_str().map_err(|_| invalid())?;
    let identity = validator.validate(token).await.map_err(edge_error)?;
    let access = validator.access(&identity);
    let keystone = KeystoneCaller {
        user_id: identity.user_id.clone(),
        user_name: identity.user_name.clone(),
        project_id: identity.project_id.clone(),
        project_name: identity.project_name.clone(),
        roles: identity.roles.clone(),
    };
    if !access.read {
        let roles = validator.roles();
        let mut known: Vec<&str> = roles
            .reader
            .iter()
            .chain(&roles.writer)
            .chain(&roles.admin)
            .map(String::as_str)
            .collect();
        known.sort_unstable();
        known.dedup();
        return Err(ApiError::Forbidden(format!(
            "the Keystone user `{}` has none of the roles this server maps ({}) in {}",
            keystone.user_name,
            known.join(", "),
            keystone.scope()
        )));
    }
    Ok(Caller::with_roles(
        identity.user_id.clone(),
        keystone,
        access.write,
        access.all_projects,
    ))
}

fn invalid() -> ApiError {
    ApiError::Unauthorized(
        "the Keystone token (X-Auth-Token) is invalid, expired or revoked: get a new one from Keystone"
            .into(),
    )
}

/// `401` for a token at fault, `503` when Keystone could not tell (the cause is logged).
fn edge_error(e: KeystoneError) -> ApiError {
    if e.is_invalid_token() {
        return invalid();
    }
    let mut causes = String::new();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        causes.push_str(": ");
        causes.push_str(&s.to_string());
        source = s.source();
    }
    tracing::warn!(error = %e, causes = %causes, "Keystone token validation failed");
    ApiError::Unavailable(format!(
        "the Keystone token cannot be validated now ({e}); retry later"
    ))
}

/// Whether `method` changes resources.
pub(super) fn changes(method: &Method) -> bool {
    matches!(
        *method,
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    )
}

/// `403` when `caller` may not use `method`.
pub(crate) fn check_method(caller: &Caller, method: &Method) -> Result<(), ApiError> {
    if caller.may_write || !changes(method) {
        return Ok(());
    }
    let who = caller
        .keystone
        .as_ref()
        .map(|k| format!("the Keystone user `{}` in {}", k.user_name, k.scope()))
        .unwrap_or_else(|| format!("the client `{}`", caller.client_id));
    Err(ApiError::Forbidden(format!(
        "{who} may only read: {method} needs a Keystone role that allows changes (`vnfm serve --keystone-writer-roles`, by default member or admin)"
    )))
}

impl KeystoneCaller {
    /// The token's project, for messages.
    pub(super) fn scope(&self) -> String {
        match (&self.project_name, &self.project_id) {
            (Some(name), Some(id)) => format!("project `{name}` ({id})"),
            (None, Some(id)) => format!("project {id}"),
            _ => "no project".to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader() -> Caller {
        Caller {
            client_id: "u1".into(),
            keystone: Some(KeystoneCaller {
                user_id: "u1".into(),
                user_name: "alice".into(),
                project_id: Some("p1".into()),
                project_name: Some("demo".into()),
                roles: vec!["reader".into()],
            }),
            may_write: false,
            all_projects: false,
            oauth_issuer: None,
            certificate: None,
        }
    }

    #[test]
    fn readers_may_only_use_methods_that_change_nothing() {
        let r = reader();
        for m in [Method::GET, Method::HEAD, Method::OPTIONS] {
            assert!(check_method(&r, &m).is_ok(), "{m}");
        }
        for m in [Method::POST, Method::PUT, Method::PATCH, Method::DELETE] {
            let e = check_method(&r, &m).unwrap_err();
            assert_eq!(e.status(), axum::http::StatusCode::FORBIDDEN);
            assert!(e.to_string().contains("`alice` in project `demo`"), "{e}");
        }
        assert!(check_method(&Caller::client("c1"), &Method::DELETE).is_ok());
    }

    #[test]
    fn only_a_token_at_fault_is_a_401() {
        assert_eq!(
            edge_error(KeystoneError::InvalidToken).status(),
            axum::http::StatusCode::UNAUTHORIZED
        );
        let e = edge_error(KeystoneError::ServiceCredentials {
            status: 401,
            message: "The request you have made requires authentication.".into(),
        });
        assert_eq!(e.status(), axum::http::StatusCode::SERVICE_UNAVAILABLE);
    }
}
