//! Client certificates as an identity source (`vnfm serve --tls-client-map`): a request
//! without credentials, on a mutual TLS connection whose certificate the map knows, is the
//! map entry's caller, with its project and roles read by the same role mapping as an
//! external authorization server's tokens ([`crate::mtls`]).
//!
//! | outcome | answer |
//! |---|---|
//! | certificate mapped, a reader role | reads; `403` on `POST`, `PUT`, `PATCH`, `DELETE` |
//! | certificate mapped, a writer role | reads and writes |
//! | certificate not mapped (or none), no credentials | `401`, as without mutual TLS |

use axum::http::Method;

use super::{Caller, KeystoneCaller};
use crate::error::ApiError;
use crate::mtls::{CertificateIdentities, ClientCertificate};

/// The caller `cert` identifies under `map`, if any.
pub(crate) fn caller(map: &CertificateIdentities, cert: &ClientCertificate) -> Option<Caller> {
    let (client, access) = map.identify(cert)?;
    let who = KeystoneCaller {
        user_id: client.client_id.clone(),
        user_name: client.client_id.clone(),
        project_id: client.project_id.clone(),
        project_name: client.project_name.clone(),
        roles: client.roles.clone(),
    };
    tracing::debug!(
        client_id = %client.client_id,
        certificate = cert.name(),
        "caller identified by its client certificate"
    );
    Some(Caller {
        certificate: Some(cert.thumbprint().to_owned()),
        ..Caller::with_roles(
            client.client_id.clone(),
            who,
            access.write,
            access.all_projects,
        )
    })
}

/// `403` when `caller` (identified by its certificate) may not use `method`.
pub(crate) fn check_method(caller: &Caller, method: &Method) -> Result<(), ApiError> {
    if caller.may_write || !super::keystone::changes(method) {
        return Ok(());
    }
    let scope = caller
        .keystone
        .as_ref()
        .map(KeystoneCaller::scope)
        .unwrap_or_default();
    Err(ApiError::Forbidden(format!(
        "the client `{}` ({scope}), identified by its TLS client certificate, may only read: {method} needs a role that allows changes in its --tls-client-map entry (by default member or admin)",
        caller.client_id
    )))
}
