//! An external OAuth 2.0 authorization server's tokens (`Authorization: Bearer`), when an
//! [`OAuthVerifier`] is configured: verified locally (JWT) or by introspection, and mapped to
//! the same [`Caller`] a Keystone token gives (user, project, roles, read/write, every
//! project), so project scoping and read-only callers behave the same with either identity
//! source.
//!
//! | outcome | answer |
//! |---|---|
//! | token valid, a reader role (or scope) | reads; `403` `insufficient_scope` on `POST`, `PUT`, `PATCH`, `DELETE` |
//! | token valid, a writer role | reads and writes |
//! | token valid, none of the mapped roles | `403` `insufficient_scope` |
//! | token malformed, forged, of another issuer or audience, expired, inactive, too large | `401` `invalid_token` |
//! | token bound to a client certificate (`cnf.x5t#S256`, RFC 8705) on a connection without that certificate | `401` `invalid_token` |
//! | the authorization server cannot be asked (introspection, or keys not yet read) | `503` |
//!
//! Nothing of the token is logged or answered: refusals name the reason only.

use axum::http::Method;
use vnfm_oauth::{OAuthError, OAuthVerifier};

use super::{Caller, KeystoneCaller};
use crate::error::ApiError;
use crate::mtls::ClientCertificate;

/// Whether `token` is one of this server's own access tokens (Fernet: version byte 0x80,
/// base64url `gAAAAA...`), which the built-in token endpoint issues.
pub(crate) fn is_own_token(token: &str) -> bool {
    token.starts_with("gAAAAA")
}

/// The caller behind a bearer token of the external authorization server.
pub(crate) async fn authenticate(
    verifier: &OAuthVerifier,
    token: &str,
    certificate: Option<&ClientCertificate>,
) -> Result<Caller, ApiError> {
    let identity = verifier.verify(token).await.map_err(edge_error)?;
    if let Some(bound) = &identity.certificate_thumbprint {
        check_binding(bound, certificate)?;
    }
    let access = verifier.access(&identity);
    let who = KeystoneCaller {
        user_id: identity.subject.clone(),
        user_name: identity.name.clone(),
        project_id: identity.project_id.clone(),
        project_name: identity.project_name.clone(),
        roles: identity.roles.clone(),
    };
    if !access.read {
        return Err(ApiError::InsufficientScope(format!(
            "the token of `{}` ({}) has none of the roles or scopes this server maps ({}): see `vnfm serve --oauth-reader-roles`, `--oauth-writer-roles`, `--oauth-admin-roles` and `--oauth-role-claims`",
            who.user_name,
            who.scope(),
            verifier.config().roles.known().join(", ")
        )));
    }
    Ok(Caller {
        oauth_issuer: Some(verifier.issuer().to_owned()),
        ..Caller::with_roles(
            identity
                .client_id
                .clone()
                .unwrap_or_else(|| identity.subject.clone()),
            who,
            access.write,
            access.all_projects,
        )
    })
}

/// `401` `invalid_token` unless the connection's client certificate is the one a
/// certificate-bound token (RFC 8705 clause 3) was issued for: the token's `cnf.x5t#S256` is
/// `bound`, the certificate's SHA-256 thumbprint must equal it.
fn check_binding(bound: &str, certificate: Option<&ClientCertificate>) -> Result<(), ApiError> {
    match certificate {
        Some(cert) if cert.thumbprint() == bound => Ok(()),
        Some(_) => Err(ApiError::InvalidToken(
            "the bearer token is bound to another client certificate than the one this connection presented (RFC 8705): send it over mutual TLS with the certificate it was issued for".into(),
        )),
        None => Err(ApiError::InvalidToken(
            "the bearer token is bound to a client certificate (RFC 8705) and this connection presented none: send it over mutual TLS with the certificate it was issued for".into(),
        )),
    }
}

/// `401` `invalid_token` for a token at fault (the reason only, never the token), `503` when
/// the authorization server could not tell (the cause is logged).
fn edge_error(e: OAuthError) -> ApiError {
    if let Some(refusal) = e.refusal() {
        return ApiError::InvalidToken(format!(
            "the bearer token is refused: {refusal}; get a new one from the authorization server"
        ));
    }
    let mut causes = String::new();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        causes.push_str(": ");
        causes.push_str(&s.to_string());
        source = s.source();
    }
    tracing::warn!(error = %e, causes = %causes, "bearer token verification failed");
    ApiError::Unavailable(format!(
        "the bearer token cannot be verified now ({e}); retry later"
    ))
}

/// `403` `insufficient_scope` when `caller` (authenticated by the external authorization
/// server) may not use `method`.
pub(crate) fn check_method(caller: &Caller, method: &Method) -> Result<(), ApiError> {
    if caller.may_write || !super::keystone::changes(method) {
        return Ok(());
    }
    let scope = caller
        .keystone
        .as_ref()
        .map(KeystoneCaller::scope)
        .unwrap_or_default();
    let name = caller
        .keystone
        .as_ref()
        .map_or(caller.client_id.as_str(), |k| k.user_name.as_str());
    Err(ApiError::InsufficientScope(format!(
        "the token of `{name}` ({scope}) may only read: {method} needs a role or scope that allows changes (`vnfm serve --oauth-writer-roles`, by default member or admin)"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_tokens_are_told_from_the_authorization_servers() {
        assert!(is_own_token("gAAAAABnQ2x0b2tlbg"));
        assert!(!is_own_token("eyJhbGciOiJSUzI1NiJ9.e30.c2ln"));
        assert!(!is_own_token("2YotnFZFEjr1zCsicMWpAA"));
    }

    #[test]
    fn refusals_are_401_invalid_token_and_the_server_away_a_503() {
        let e = edge_error(OAuthError::Invalid(vnfm_oauth::Refusal::Expired));
        assert!(matches!(e, ApiError::InvalidToken(_)), "{e}");
        assert!(e.to_string().contains("expired"), "{e}");
        let e = edge_error(OAuthError::Backoff(vnfm_oauth::Step::Keys));
        assert_eq!(e.status(), axum::http::StatusCode::SERVICE_UNAVAILABLE);
    }

    #[test]
    fn a_certificate_bound_token_needs_its_certificate() {
        let der = b"a certificate";
        let cert = ClientCertificate::from_der(der);
        let bound = crate::mtls::thumbprint(der);
        assert!(check_binding(&bound, Some(&cert)).is_ok());
        let other = ClientCertificate::from_der(b"another certificate");
        for (presented, why) in [(None, "presented none"), (Some(&other), "another client")] {
            let e = check_binding(&bound, presented).unwrap_err();
            assert!(matches!(e, ApiError::InvalidToken(_)), "{e}");
            assert!(e.to_string().contains(why), "{e}");
        }
    }

    #[test]
    fn read_only_callers_get_insufficient_scope_on_changes() {
        let reader = Caller {
            client_id: "reader-a".into(),
            keystone: Some(KeystoneCaller {
                user_id: "u".into(),
                user_name: "reader-a".into(),
                project_id: Some("proj-a".into()),
                project_name: None,
                roles: vec!["reader".into()],
            }),
            may_write: false,
            all_projects: false,
            oauth_issuer: Some("https://as.example".into()),
            certificate: None,
        };
        assert!(check_method(&reader, &Method::GET).is_ok());
        let e = check_method(&reader, &Method::POST).unwrap_err();
        assert!(matches!(e, ApiError::InsufficientScope(_)), "{e}");
        assert!(e.to_string().contains("`reader-a` (project proj-a)"), "{e}");
    }
}
