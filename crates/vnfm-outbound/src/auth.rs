//! Authenticated HTTP exchanges: HTTP Basic, and OAuth 2.0 client credentials with a token
//! cache.
//!
//! Tokens are fetched from the token endpoint with the client credentials grant (form-encoded
//! body, client id and secret in HTTP Basic authentication, RFC 6749 §4.4), cached until
//! shortly before `expires_in`, and fetched again when the server answers 401. Tokens of the
//! server's own authorization server ([`Credentials::Issuer`]) come from a
//! [`vnfm_oauth::ClientCredentials`], which authenticates by any of its five methods and keeps
//! its token the same way. Neither credentials nor tokens appear in errors or logs: reqwest
//! marks the `Authorization` header sensitive, and every error is built from status codes and
//! URLs only.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use std::time::{Duration, Instant};
use vnfm_oauth::ClientCredentials;

use reqwest::{Client, Method, StatusCode};
use serde::Deserialize;
use serde_json::Value;
use vnfm_types::{AuthType, SecretString, SubscriptionAuthentication};

use crate::OutboundError;

/// Lifetime assumed for a token whose response has no `expires_in`.
const DEFAULT_TOKEN_LIFETIME: Duration = Duration::from_secs(60);
/// Largest response body read from a token endpoint.
const MAX_TOKEN_RESPONSE: usize = 64 * 1024;

/// How the VNFM authenticates to one endpoint.
#[derive(Clone)]
pub(crate) enum Credentials {
    /// No authentication.
    None,
    /// HTTP Basic.
    Basic {
        user: String,
        password: SecretString,
    },
    /// OAuth 2.0 client credentials.
    OAuth2(OAuth2Client),
    /// OAuth 2.0 client credentials at the server's own authorization server (the issuer of
    /// `vnfm serve --oauth-issuer`), as its client there.
    Issuer(Arc<ClientCredentials>),
}

/// OAuth 2.0 client credentials and where to exchange them for tokens.
#[derive(Clone, PartialEq)]
pub(crate) struct OAuth2Client {
    pub(crate) client_id: String,
    pub(crate) client_secret: SecretString,
    pub(crate) token_endpoint: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credentials::None => f.write_str("None"),
            Credentials::Basic { user, .. } => write!(f, "Basic({user}:***)"),
            Credentials::OAuth2(c) => {
                write!(f, "OAuth2({} at {})", c.client_id, c.token_endpoint)
            }
            Credentials::Issuer(c) => {
                write!(f, "OAuth2({} at the issuer {})", c.client_id(), c.issuer())
            }
        }
    }
}

impl Credentials {
    /// The scheme to use for a subscription's `auth`: the first listed type whose parameters
    /// are complete (the subscription was validated when it was created). `TLS_CERT` is not
    /// supported.
    pub(crate) fn of_subscription(auth: Option<&SubscriptionAuthentication>) -> Credentials {
        let Some(auth) = auth else {
            return Credentials::None;
        };
        for t in &auth.auth_type {
            match t {
                AuthType::Basic => {
                    if let Some(p) = &auth.params_basic
                        && let (Some(user), Some(password)) = (&p.user_name, &p.password)
                    {
                        return Credentials::Basic {
                            user: user.clone(),
                            password: password.clone(),
                        };
                    }
                }
                AuthType::Oauth2ClientCredentials => {
                    if let Some(p) = &auth.params_oauth2_client_credentials
                        && let (Some(id), Some(secret), Some(endpoint)) =
                            (&p.client_id, &p.client_password, &p.token_endpoint)
                    {
                        return Credentials::OAuth2(OAuth2Client {
                            client_id: id.clone(),
                            client_secret: secret.clone(),
                            token_endpoint: endpoint.clone(),
                        });
                    }
                }
                AuthType::TlsCert => {}
            }
        }
        Credentials::None
    }
}

struct CachedToken {
    token: SecretString,
    valid_until: Instant,
}

type Slot = Arc<tokio::sync::Mutex<Option<CachedToken>>>;

/// OAuth 2.0 access tokens by (token endpoint, client id). Concurrent requests of one client
/// wait for a single token request instead of each making their own.
#[derive(Default)]
pub(crate) struct TokenCache {
    slots: Mutex<HashMap<(String, String), Slot>>,
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    #[serde(default)]
    expires_in: Option<u64>,
}

impl TokenCache {
    fn slot(&self, c: &OAuth2Client) -> Slot {
        let key = (c.token_endpoint.clone(), c.client_id.clone());
        match self.slots.lock() {
            Ok(mut slots) => slots.entry(key).or_default().clone(),
            // A poisoned map only loses the sharing of tokens.
            Err(_) => Slot::default(),
        }
    }

    /// Drops the cached token if it is still `rejected` (another request may have replaced
    /// it already).
    async fn forget(&self, c: &OAuth2Client, rejected: &SecretString) {
        let slot = self.slot(c);
        let mut cached = slot.lock().await;
        if cached.as_ref().is_some_and(|t| &t.token == rejected) {
            *cached = None;
        }
    }

    /// A valid token for `c`: the cached one, or a new one from the token endpoint.
    async fn token(
        &self,
        http: &Client,
        c: &OAuth2Client,
        timeout: Duration,
    ) -> Result<SecretString, OutboundError> {
        let slot = self.slot(c);
        let mut cached = slot.lock().await;
        if let Some(t) = cached.as_ref().filter(|t| t.valid_until > Instant::now()) {
            return Ok(t.token.clone());
        }
        let fetched = fetch_token(http, c, timeout).await?;
        let token = fetched.token.clone();
        *cached = Some(fetched);
        Ok(token)
    }
}

async fn fetch_token(
    http: &Client,
    c: &OAuth2Client,
    timeout: Duration,
) -> Result<CachedToken, OutboundError> {
    let endpoint = || c.token_endpoint.clone();
    let request = http
        .post(&c.token_endpoint)
        .basic_auth(&c.client_id, Some(c.client_secret.expose()))
        .form(&[("grant_type", "client_credentials")])
        .header(reqwest::header::ACCEPT, "application/json")
        .timeout(timeout);
    let resp = vnfm_trace_reqwest::with_current_context(request)
        .send()
        .await
        .map_err(|e| OutboundError::TokenRequest {
            endpoint: endpoint(),
            source: e.without_url(),
        })?;
    let status = resp.status();
    if !status.is_success() {
        return Err(OutboundError::TokenStatus {
            endpoint: endpoint(),
            status: status.as_u16(),
        });
    }
    let body =
        read_limited(resp, MAX_TOKEN_RESPONSE)
            .await
            .map_err(|e| OutboundError::TokenBody {
                endpoint: endpoint(),
                source: Box::new(e),
            })?;
    // The body holds the token: report only where parsing failed.
    let parsed: TokenResponse =
        serde_json::from_slice(&body).map_err(|e| OutboundError::TokenUnusable {
            endpoint: endpoint(),
            line: e.line(),
            column: e.column(),
        })?;
    let lifetime = parsed
        .expires_in
        .map(Duration::from_secs)
        .unwrap_or(DEFAULT_TOKEN_LIFETIME);
    // Renew a little early so a token does not expire in flight: a tenth of its life, at
    // most 30 s.
    let margin = (lifetime / 10).min(Duration::from_secs(30));
    tracing::debug!(
        token_endpoint = %c.token_endpoint,
        client_id = %c.client_id,
        lifetime_s = lifetime.as_secs(),
        "OAuth2 token fetched"
    );
    Ok(CachedToken {
        token: SecretString::new(parsed.access_token),
        valid_until: Instant::now() + lifetime.saturating_sub(margin),
    })
}

/// Reads at most `max` bytes of `resp`'s body.
async fn read_limited(mut resp: reqwest::Response, max: usize) -> Result<Vec<u8>, OutboundError> {
    let mut body = Vec::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| OutboundError::Transport(e.without_url()))?
    {
        if body.len() + chunk.len() > max {
            return Err(OutboundError::TooLarge { limit: max });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// A short description of a transport error (no URL, no headers): its kind and the innermost
/// cause (connection refused, DNS, TLS).
pub(crate) fn describe(e: &reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "connection failed"
    } else if e.is_request() {
        "request failed"
    } else if e.is_body() {
        "body error"
    } else {
        "transport error"
    };
    let mut cause = String::new();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        cause = s.to_string();
        src = s.source();
    }
    if cause.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind}: {cause}")
    }
}

/// One authenticated request.
pub(crate) struct Exchange<'a> {
    pub(crate) method: Method,
    pub(crate) url: &'a str,
    pub(crate) body: Option<&'a Value>,
    /// Extra request headers.
    pub(crate) headers: &'a [(&'static str, &'a str)],
    pub(crate) timeout: Duration,
    /// Read the answer's body up to this many bytes (`None`: leave it unread).
    pub(crate) read_body: Option<usize>,
}

/// What came back.
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) location: Option<String>,
    pub(crate) body: Vec<u8>,
}

/// Sends one request with `credentials`; on a 401 with OAuth 2.0, fetches a new token and
/// sends once more. Returns the final answer, or why none came.
pub(crate) async fn exchange(
    http: &Client,
    tokens: &TokenCache,
    credentials: &Credentials,
    x: &Exchange<'_>,
) -> Result<Answer, OutboundError> {
    let mut refreshed = false;
    loop {
        let mut req = http.request(x.method.clone(), x.url).timeout(x.timeout);
        for (name, value) in x.headers {
            req = req.header(*name, *value);
        }
        if let Some(b) = x.body {
            // `json` sets Content-Type: application/json.
            req = req.json(b);
        }
        let mut used = None;
        let mut issued = None;
        match credentials {
            Credentials::None => {}
            Credentials::Basic { user, password } => {
                req = req.basic_auth(user, Some(password.expose()));
            }
            Credentials::OAuth2(c) => {
                let token = tokens.token(http, c, x.timeout).await?;
                req = req.bearer_auth(token.expose());
                used = Some(token);
            }
            Credentials::Issuer(c) => {
                let token = c
                    .token()
                    .await
                    .map_err(|source| OutboundError::IssuerToken {
                        issuer: c.issuer().to_owned(),
                        source,
                    })?;
                req = req.bearer_auth(token.expose());
                issued = Some(token);
            }
        }
        // The caller's span (a grant, a notification delivery) continues at the other end.
        let resp = vnfm_trace_reqwest::with_current_context(req)
            .send()
            .await
            .map_err(|e| OutboundError::Transport(e.without_url()))?;
        let status = resp.status();
        if status == StatusCode::UNAUTHORIZED && !refreshed {
            // The token may have been revoked or have expired early: once, with a new one.
            match (credentials, &used, &issued) {
                (Credentials::OAuth2(c), Some(token), _) => {
                    tokens.forget(c, token).await;
                    refreshed = true;
                    continue;
                }
                (Credentials::Issuer(c), _, Some(token)) => {
                    tracing::debug!(
                        url = x.url,
                        client_id = c.client_id(),
                        "the access token was refused (401); getting a new one"
                    );
                    c.rejected(token).await;
                    refreshed = true;
                    continue;
                }
                _ => {}
            }
        }
        let location = resp
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = match x.read_body {
            Some(limit) => read_limited(resp, limit).await?,
            None => Vec::new(),
        };
        return Ok(Answer {
            status,
            location,
            body,
        });
    }
}

/// Installs ring as the process's rustls crypto provider unless one is installed already
/// (reqwest is built without a provider of its own; see STACK.md).
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A client builder with the settings every outbound client shares: TCP_NODELAY, no
/// redirects (a redirect would carry the credentials elsewhere), bounded connect time.
pub(crate) fn client_builder(connect_timeout: Duration) -> reqwest::ClientBuilder {
    install_crypto_provider();
    Client::builder()
        .tcp_nodelay(true)
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(connect_timeout)
        .user_agent(concat!("vnfm/", env!("CARGO_PKG_VERSION")))
}
