//! Client authentication at the authorization server's endpoints (RFC 6749 clause 2.3, RFC
//! 7523, RFC 8705): the one implementation of the five methods of [`ClientAuth`], used by
//! introspection and by the client credentials grant of [`crate::ClientCredentials`].

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey};
use serde_json::json;

use crate::config::ClientAuth;
use crate::error::OAuthError;

/// How long a client assertion is valid.
const ASSERTION_LIFETIME: Duration = Duration::from_secs(60);

/// The key that signs `private_key_jwt` assertions, read once.
pub(crate) struct AssertionKey {
    key: EncodingKey,
    alg: Algorithm,
}

impl AssertionKey {
    /// The key of a PEM file: RSA (RS256), P-256 (ES256) or Ed25519 (EdDSA).
    pub(crate) fn from_pem(pem: &str) -> Result<AssertionKey, OAuthError> {
        let bytes = pem.as_bytes();
        let (key, alg) = if let Ok(k) = EncodingKey::from_rsa_pem(bytes) {
            (k, Algorithm::RS256)
        } else if let Ok(k) = EncodingKey::from_ec_pem(bytes) {
            (k, Algorithm::ES256)
        } else if let Ok(k) = EncodingKey::from_ed_pem(bytes) {
            (k, Algorithm::EdDSA)
        } else {
            return Err(OAuthError::Config(
                "the private key for private_key_jwt is not an RSA, P-256 or Ed25519 key in PEM (PKCS#8, or PKCS#1 for RSA)".into(),
            ));
        };
        // A key that cannot sign fails now rather than at the first introspection.
        jsonwebtoken::encode(&jsonwebtoken::Header::new(alg), &json!({}), &key).map_err(|_| {
            OAuthError::Config("the private key for private_key_jwt cannot sign".into())
        })?;
        Ok(AssertionKey { key, alg })
    }
}

/// 16 random bytes, base64url: a `jti`.
fn random_id() -> String {
    let mut buf = [0u8; 16];
    if getrandom::fill(&mut buf).is_err() {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        buf = nanos.to_be_bytes();
    }
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(buf)
}

/// A client assertion (RFC 7523 clause 3) of `client_id` for `audience`.
fn assertion(
    client_id: &str,
    audience: &str,
    key: &EncodingKey,
    alg: Algorithm,
    kid: Option<&str>,
) -> Result<String, OAuthError> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let claims = json!({
        "iss": client_id, "sub": client_id, "aud": audience, "jti": random_id(),
        "iat": now, "exp": now + ASSERTION_LIFETIME.as_secs(),
    });
    let mut header = jsonwebtoken::Header::new(alg);
    header.kid = kid.map(str::to_owned);
    jsonwebtoken::encode(&header, &claims, key)
        .map_err(|_| OAuthError::Config("signing the client assertion failed".into()))
}

/// RFC 6749 appendix B: the client id and secret are form-encoded before Basic encoding.
fn form_encoded(s: &str) -> String {
    reqwest::Url::parse_with_params("x:", [("v", s)])
        .ok()
        .and_then(|u| u.query().map(|q| q.trim_start_matches("v=").to_owned()))
        .unwrap_or_default()
}

/// `urn:ietf:params:oauth:client-assertion-type:jwt-bearer` (RFC 7523 clause 2.2).
const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// A client of the authorization server and how it authenticates (its private key read once).
pub(crate) struct ClientAuthenticator {
    client_id: String,
    auth: ClientAuth,
    key: Option<AssertionKey>,
}

impl ClientAuthenticator {
    /// The client `client_id` authenticating by `auth`; a private key that cannot sign is
    /// refused now.
    pub(crate) fn new(
        client_id: String,
        auth: ClientAuth,
    ) -> Result<ClientAuthenticator, OAuthError> {
        let key = match &auth {
            ClientAuth::PrivateKeyJwt { pem, .. } => Some(AssertionKey::from_pem(pem.expose())?),
            _ => None,
        };
        Ok(ClientAuthenticator {
            client_id,
            auth,
            key,
        })
    }

    /// The client id.
    pub(crate) fn client_id(&self) -> &str {
        &self.client_id
    }

    /// The method's registered name.
    pub(crate) fn method(&self) -> &'static str {
        self.auth.method()
    }

    /// Whether the method is `tls_client_auth` (its endpoints are the metadata's mutual-TLS
    /// aliases, RFC 8705 clause 5).
    pub(crate) fn is_mutual_tls(&self) -> bool {
        matches!(self.auth, ClientAuth::TlsClientAuth { .. })
    }

    /// Whether the method signs a client assertion (whose `aud` must then be known).
    pub(crate) fn needs_assertion_audience(&self) -> bool {
        matches!(
            self.auth,
            ClientAuth::SecretJwt(_) | ClientAuth::PrivateKeyJwt { .. }
        )
    }

    /// Adds this client's authentication to `request` (the `Authorization` header of
    /// `client_secret_basic`, marked sensitive) or to its `form` (the other methods; the
    /// certificate of `tls_client_auth` goes with the TLS handshake, the HTTP client holds
    /// it). `assertion_audience` is the `aud` of client assertions.
    pub(crate) fn authenticate(
        &self,
        mut request: reqwest::RequestBuilder,
        form: &mut Vec<(&'static str, String)>,
        assertion_audience: &str,
    ) -> Result<reqwest::RequestBuilder, OAuthError> {
        let client_id = self.client_id.as_str();
        match &self.auth {
            ClientAuth::SecretBasic(secret) => {
                let pair = format!(
                    "{}:{}",
                    form_encoded(client_id),
                    form_encoded(secret.expose())
                );
                let mut value = reqwest::header::HeaderValue::from_str(&format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(pair)
                ))
                .map_err(|_| OAuthError::Config("the client id cannot be sent".into()))?;
                value.set_sensitive(true);
                request = request.header(reqwest::header::AUTHORIZATION, value);
            }
            ClientAuth::SecretPost(secret) => {
                form.push(("client_id", client_id.to_owned()));
                form.push(("client_secret", secret.expose().to_owned()));
            }
            ClientAuth::SecretJwt(secret) => {
                let key = EncodingKey::from_secret(secret.expose().as_bytes());
                let jwt = assertion(client_id, assertion_audience, &key, Algorithm::HS256, None)?;
                form.push(("client_id", client_id.to_owned()));
                form.push(("client_assertion_type", ASSERTION_TYPE.to_owned()));
                form.push(("client_assertion", jwt));
            }
            ClientAuth::PrivateKeyJwt { key_id, .. } => {
                let key = self
                    .key
                    .as_ref()
                    .ok_or_else(|| OAuthError::Config("no private key was read".into()))?;
                let jwt = assertion(
                    client_id,
                    assertion_audience,
                    &key.key,
                    key.alg,
                    key_id.as_deref(),
                )?;
                form.push(("client_id", client_id.to_owned()));
                form.push(("client_assertion_type", ASSERTION_TYPE.to_owned()));
                form.push(("client_assertion", jwt));
            }
            ClientAuth::TlsClientAuth { .. } => form.push(("client_id", client_id.to_owned())),
        }
        Ok(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_credentials_are_form_encoded_first() {
        assert_eq!(form_encoded("a b:c/é"), "a+b%3Ac%2F%C3%A9");
        assert_eq!(form_encoded("plain-id_1.x"), "plain-id_1.x");
    }

    #[test]
    fn a_file_that_is_no_key_is_refused_at_start() {
        let e = AssertionKey::from_pem(
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
        )
        .err()
        .unwrap();
        assert!(e.to_string().contains("RSA, P-256 or Ed25519"), "{e}");
    }
}
