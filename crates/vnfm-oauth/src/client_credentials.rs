//! [`ClientCredentials`]: access tokens for this server's own calls (to an NFVO, to a
//! notification subscriber) from the same authorization server, by the client credentials
//! grant (RFC 6749 clause 4.4), the client authenticating by any of the five methods of
//! [`ClientAuth`] (the code introspection uses). The token endpoint comes from the issuer's
//! metadata (its mutual-TLS alias for `tls_client_auth`, RFC 8705 clause 5) unless configured.
//! A token is kept until shortly before it expires; a caller whose token was refused (`401`)
//! says so ([`ClientCredentials::rejected`]) and the next call fetches a new one.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::client_auth::ClientAuthenticator;
use crate::config::{ClientAuth, DEFAULT_REQUEST_TIMEOUT, Secret};
use crate::error::{OAuthError, Step};
use crate::http::Metadata;

/// Lifetime assumed for a token whose answer has no `expires_in`.
const DEFAULT_TOKEN_LIFETIME: Duration = Duration::from_secs(60);
/// Longest a token is renewed before its expiry (a tenth of its lifetime when shorter).
const MAX_RENEWAL_MARGIN: Duration = Duration::from_secs(30);

/// Settings of a [`ClientCredentials`] token source.
#[derive(Debug, Clone)]
pub struct ClientCredentialsConfig {
    /// The issuer, whose metadata names the token endpoint.
    pub issuer: String,
    /// The token endpoint; from the metadata (`token_endpoint`, or
    /// `mtls_endpoint_aliases.token_endpoint` for `tls_client_auth`) when `None`.
    pub token_url: Option<String>,
    /// This server's client id at the authorization server.
    pub client_id: String,
    /// How it authenticates to the token endpoint.
    pub auth: ClientAuth,
    /// The `scope` asked for (space-separated), if any.
    pub scope: Option<String>,
    /// The `aud` of client assertions (`client_secret_jwt`, `private_key_jwt`); the token
    /// endpoint when `None` (RFC 7523).
    pub assertion_audience: Option<String>,
    /// CA certificates (PEM) trusted for the authorization server's TLS certificate, instead
    /// of the system's.
    pub ca_pem: Option<String>,
    /// Timeout of one request to the authorization server.
    pub request_timeout: Duration,
}

impl ClientCredentialsConfig {
    /// Tokens of `issuer` for the client `client_id` authenticating by `auth`, the token
    /// endpoint from the metadata, no scope.
    pub fn new(
        issuer: impl Into<String>,
        client_id: impl Into<String>,
        auth: ClientAuth,
    ) -> ClientCredentialsConfig {
        ClientCredentialsConfig {
            issuer: issuer.into(),
            token_url: None,
            client_id: client_id.into(),
            auth,
            scope: None,
            assertion_audience: None,
            ca_pem: None,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
        }
    }
}

/// A token held, and until when it is used.
struct Held {
    token: Secret,
    renew_at: Instant,
}

/// Access tokens of one client of the authorization server, fetched by the client credentials
/// grant and kept until shortly before they expire. Cheap to share behind an `Arc`: concurrent
/// callers wait for a single token request. Neither the token nor the client's credentials
/// appear in errors, logs or `Debug` output.
pub struct ClientCredentials {
    config: ClientCredentialsConfig,
    client: ClientAuthenticator,
    http: reqwest::Client,
    metadata: tokio::sync::Mutex<Option<Arc<Metadata>>>,
    held: tokio::sync::Mutex<Option<Held>>,
    fetched: AtomicU64,
}

impl std::fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCredentials")
            .field("issuer", &self.config.issuer)
            .field("client_id", &self.config.client_id)
            .field("method", &self.config.auth.method())
            .field("scope", &self.config.scope)
            .finish_non_exhaustive()
    }
}

impl ClientCredentials {
    /// A token source for `config` (no request is made yet). A URL that is not one, a private
    /// key that cannot sign, a certificate that is not one are refused now. The process must
    /// have installed a rustls crypto provider (ring) before.
    pub fn new(config: ClientCredentialsConfig) -> Result<ClientCredentials, OAuthError> {
        crate::verifier::check_url("the issuer", &config.issuer)?;
        if let Some(url) = &config.token_url {
            crate::verifier::check_url("the token endpoint", url)?;
        }
        let client = ClientAuthenticator::new(config.client_id.clone(), config.auth.clone())?;
        let http = crate::http::client(
            config.request_timeout,
            config.ca_pem.as_deref(),
            Some(&config.auth),
        )?;
        Ok(ClientCredentials {
            config,
            client,
            http,
            metadata: tokio::sync::Mutex::new(None),
            held: tokio::sync::Mutex::new(None),
            fetched: AtomicU64::new(0),
        })
    }

    /// The issuer.
    pub fn issuer(&self) -> &str {
        &self.config.issuer
    }

    /// The client id.
    pub fn client_id(&self) -> &str {
        self.client.client_id()
    }

    /// The client authentication method's registered name.
    pub fn method(&self) -> &'static str {
        self.client.method()
    }

    /// How many tokens were fetched from the token endpoint so far.
    pub fn tokens_fetched(&self) -> u64 {
        self.fetched.load(Ordering::Relaxed)
    }

    /// An access token: the one held while it is not about to expire, else a new one.
    pub async fn token(&self) -> Result<Secret, OAuthError> {
        let mut held = self.held.lock().await;
        if let Some(h) = held.as_ref().filter(|h| h.renew_at > Instant::now()) {
            return Ok(h.token.clone());
        }
        let fresh = self.fetch().await?;
        let token = fresh.token.clone();
        *held = Some(fresh);
        Ok(token)
    }

    /// Says that `token` was refused (`401`): it is dropped, unless another caller already
    /// replaced it, and the next [`ClientCredentials::token`] fetches a new one.
    pub async fn rejected(&self, token: &Secret) {
        let mut held = self.held.lock().await;
        if held
            .as_ref()
            .is_some_and(|h| h.token.expose() == token.expose())
        {
            *held = None;
        }
    }

    /// The token endpoint: as configured, else the metadata's (its mutual-TLS alias for
    /// `tls_client_auth`, when it names one).
    pub async fn token_endpoint(&self) -> Result<String, OAuthError> {
        if let Some(url) = &self.config.token_url {
            return Ok(url.clone());
        }
        let metadata = self.metadata().await?;
        self.client
            .is_mutual_tls()
            .then(|| metadata.mtls_token_endpoint.clone())
            .flatten()
            .or_else(|| metadata.token_endpoint.clone())
            .ok_or(OAuthError::NoEndpoint("token_endpoint"))
    }

    async fn metadata(&self) -> Result<Arc<Metadata>, OAuthError> {
        let mut held = self.metadata.lock().await;
        if let Some(m) = held.as_ref() {
            return Ok(m.clone());
        }
        let m = Arc::new(crate::http::discover(&self.http, &self.config.issuer).await?);
        *held = Some(m.clone());
        Ok(m)
    }

    /// One client credentials grant at the token endpoint.
    async fn fetch(&self) -> Result<Held, OAuthError> {
        let url = self.token_endpoint().await?;
        let audience = match &self.config.assertion_audience {
            Some(aud) => aud.clone(),
            None if self.client.needs_assertion_audience() => url.clone(),
            None => String::new(),
        };
        let mut form: Vec<(&str, String)> = vec![("grant_type", "client_credentials".to_owned())];
        if let Some(scope) = self.config.scope.as_deref().filter(|s| !s.is_empty()) {
            form.push(("scope", scope.to_owned()));
        }
        let request = self.http.post(&url).header("accept", "application/json");
        let request = self.client.authenticate(request, &mut form, &audience)?;
        let doc = match crate::http::json(Step::Token, &url, request.form(&form)).await {
            Ok(doc) => doc,
            Err(e) => {
                if let OAuthError::Status { status, .. } = &e
                    && matches!(status, 400 | 401 | 403)
                {
                    tracing::warn!(
                        url,
                        status,
                        client_id = self.client.client_id(),
                        method = self.client.method(),
                        "the authorization server refused this server's client authentication (or grant) at its token endpoint"
                    );
                }
                return Err(e);
            }
        };
        let unusable = |reason: &str| OAuthError::Answer {
            step: Step::Token,
            url: url.clone(),
            reason: reason.to_owned(),
        };
        let token = doc
            .get("access_token")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| unusable("it has no access_token"))?;
        if let Some(kind) = doc.get("token_type").and_then(Value::as_str)
            && !kind.eq_ignore_ascii_case("bearer")
        {
            return Err(unusable("its token_type is not Bearer"));
        }
        let lifetime = doc
            .get("expires_in")
            .and_then(Value::as_u64)
            .map_or(DEFAULT_TOKEN_LIFETIME, Duration::from_secs);
        self.fetched.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(
            url,
            client_id = self.client.client_id(),
            method = self.client.method(),
            lifetime_s = lifetime.as_secs(),
            "access token fetched (client credentials)"
        );
        Ok(Held {
            token: Secret::new(token),
            renew_at: Instant::now() + lifetime.saturating_sub(renewal_margin(lifetime)),
        })
    }
}

/// How long before its expiry a token of `lifetime` is renewed, so that it does not expire in
/// flight: a tenth of its lifetime, at most 30 s.
fn renewal_margin(lifetime: Duration) -> Duration {
    (lifetime / 10).min(MAX_RENEWAL_MARGIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_renewed_a_little_before_they_expire() {
        assert_eq!(
            renewal_margin(Duration::from_secs(300)),
            Duration::from_secs(30)
        );
        assert_eq!(
            renewal_margin(Duration::from_secs(3600)),
            Duration::from_secs(30)
        );
        assert_eq!(
            renewal_margin(Duration::from_secs(5)),
            Duration::from_millis(500)
        );
    }

    #[test]
    fn debug_output_and_bad_settings_hide_the_credentials() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let c = ClientCredentials::new(ClientCredentialsConfig::new(
            "https://as.example/realms/nfv",
            "vnfm",
            ClientAuth::SecretBasic(Secret::new("s3cret-value")),
        ))
        .unwrap();
        let shown = format!("{c:?}");
        assert!(shown.contains("client_secret_basic") && shown.contains("vnfm"));
        assert!(!shown.contains("s3cret-value"), "{shown}");
        let e = ClientCredentials::new(ClientCredentialsConfig::new(
            "https://as.example/realms/nfv",
            "vnfm",
            ClientAuth::PrivateKeyJwt {
                pem: Secret::new("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"),
                key_id: None,
            },
        ))
        .unwrap_err();
        assert!(!e.to_string().contains("AAAA"), "{e}");
        let e = ClientCredentials::new(ClientCredentialsConfig::new(
            "not a url",
            "vnfm",
            ClientAuth::SecretPost(Secret::new("x")),
        ))
        .unwrap_err();
        assert!(e.to_string().contains("issuer"), "{e}");
    }
}
