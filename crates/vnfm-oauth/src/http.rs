//! The requests to the authorization server: JSON answers read with a size bound, and its
//! metadata (OpenID Connect Discovery, else RFC 8414).

use std::time::Duration;

use serde_json::Value;

use crate::config::ClientAuth;
use crate::error::{OAuthError, Step};

/// Largest answer read from the authorization server (metadata, key set, introspection).
const MAX_ANSWER_BYTES: usize = 1024 * 1024;

/// Sends `request` and reads its JSON answer (a `2xx` with at most 1 MiB of JSON).
pub(crate) async fn json(
    step: Step,
    url: &str,
    request: reqwest::RequestBuilder,
) -> Result<Value, OAuthError> {
    let unreachable = |source| OAuthError::Unreachable {
        step,
        url: url.to_owned(),
        source,
    };
    let mut response = request.send().await.map_err(unreachable)?;
    let status = response.status();
    if !status.is_success() {
        return Err(OAuthError::Status {
            step,
            url: url.to_owned(),
            status: status.as_u16(),
        });
    }
    let unusable = |reason: &str| OAuthError::Answer {
        step,
        url: url.to_owned(),
        reason: reason.to_owned(),
    };
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(unreachable)? {
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(unusable("larger than 1 MiB"));
        }
        body.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&body).map_err(|_| unusable("not JSON"))
}

/// The HTTP client towards the authorization server: `request_timeout` per request, no
/// redirects, the CAs of `ca_pem` (instead of the system's) when given, and the client
/// certificate of `tls_client_auth` when `auth` is that method.
pub(crate) fn client(
    request_timeout: Duration,
    ca_pem: Option<&str>,
    auth: Option<&ClientAuth>,
) -> Result<reqwest::Client, OAuthError> {
    let mut builder = reqwest::Client::builder()
        .timeout(request_timeout)
        .connect_timeout(request_timeout.min(Duration::from_secs(5)))
        // Tokens and client secrets go to the configured server only.
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("vnfm-oauth/", env!("CARGO_PKG_VERSION")));
    if let Some(pem) = ca_pem {
        let certs = reqwest::Certificate::from_pem_bundle(pem.as_bytes())
            .ok()
            .filter(|c| !c.is_empty())
            .ok_or_else(|| {
                OAuthError::Config(
                    "the CA file for the authorization server holds no PEM certificate".into(),
                )
            })?;
        builder = builder.tls_certs_only(certs);
    }
    if let Some(ClientAuth::TlsClientAuth { cert_pem, key_pem }) = auth {
        // Errors about the key never quote it.
        let mut pem = Vec::with_capacity(cert_pem.len() + key_pem.expose().len() + 1);
        pem.extend_from_slice(key_pem.expose().as_bytes());
        pem.push(b'\n');
        pem.extend_from_slice(cert_pem.as_bytes());
        let identity = reqwest::Identity::from_pem(&pem).map_err(|_| {
            OAuthError::Config(
                "the client certificate and key for tls_client_auth are not a PEM certificate and its private key (PKCS#8, PKCS#1 or SEC1)".into(),
            )
        })?;
        builder = builder.identity(identity);
    }
    builder.build().map_err(OAuthError::Client)
}

/// The endpoints of the authorization server's metadata this server uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Metadata {
    pub(crate) jwks_uri: Option<String>,
    pub(crate) introspection_endpoint: Option<String>,
    pub(crate) token_endpoint: Option<String>,
    /// `mtls_endpoint_aliases.introspection_endpoint` (RFC 8705 clause 5): where clients
    /// authenticating with mutual TLS introspect.
    pub(crate) mtls_introspection_endpoint: Option<String>,
    /// `mtls_endpoint_aliases.token_endpoint`: where they get tokens.
    pub(crate) mtls_token_endpoint: Option<String>,
}

/// RFC 8414's metadata URL of `issuer`: the well-known segment goes between the host and the
/// issuer's path.
fn rfc8414_url(issuer: &str) -> Option<String> {
    let url = reqwest::Url::parse(issuer).ok()?;
    let path = url.path().trim_end_matches('/');
    let mut out = url.clone();
    out.set_path(&format!("/.well-known/oauth-authorization-server{path}"));
    Some(out.to_string())
}

/// Reads `issuer`'s metadata: `<issuer>/.well-known/openid-configuration`, else (when that is
/// `404`) RFC 8414's `oauth-authorization-server`. Its `issuer` must be exactly `issuer`
/// (RFC 8414 clause 3.3), or another server could hand out keys for it.
pub(crate) async fn discover(http: &reqwest::Client, issuer: &str) -> Result<Metadata, OAuthError> {
    let oidc = format!(
        "{}/.well-known/openid-configuration",
        issuer.trim_end_matches('/')
    );
    let (url, doc) = match json(Step::Metadata, &oidc, http.get(&oidc)).await {
        Err(OAuthError::Status { status: 404, .. }) => {
            let url = rfc8414_url(issuer)
                .ok_or_else(|| OAuthError::Config(format!("the issuer `{issuer}` is not a URL")))?;
            let doc = json(Step::Metadata, &url, http.get(&url)).await?;
            (url, doc)
        }
        other => (oidc, other?),
    };
    if doc.get("issuer").and_then(Value::as_str) != Some(issuer) {
        return Err(OAuthError::Answer {
            step: Step::Metadata,
            url,
            reason: "its `issuer` is not the configured issuer".into(),
        });
    }
    let endpoint = |name: &str| doc.get(name).and_then(Value::as_str).map(str::to_owned);
    let alias = |name: &str| {
        doc.get("mtls_endpoint_aliases")
            .and_then(|a| a.get(name))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    Ok(Metadata {
        jwks_uri: endpoint("jwks_uri"),
        introspection_endpoint: endpoint("introspection_endpoint"),
        token_endpoint: endpoint("token_endpoint"),
        mtls_introspection_endpoint: alias("introspection_endpoint"),
        mtls_token_endpoint: alias("token_endpoint"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc8414_puts_the_well_known_segment_before_the_path() {
        assert_eq!(
            rfc8414_url("https://as.example/realms/nfv").as_deref(),
            Some("https://as.example/.well-known/oauth-authorization-server/realms/nfv")
        );
        assert_eq!(
            rfc8414_url("https://as.example").as_deref(),
            Some("https://as.example/.well-known/oauth-authorization-server")
        );
        assert_eq!(rfc8414_url("not a url"), None);
    }
}
