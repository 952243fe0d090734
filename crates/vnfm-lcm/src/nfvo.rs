//! [`Sol003Nfvo`]: a remote NFVO over the SOL003 Grant and VNF package management interfaces.
//!
//! - `POST {base}/grant/v1/grants`: `201` with the Grant; `202` with a `Location` that is
//!   polled until it answers `200` with the Grant (asynchronous granting); `403` is a rejection
//!   (its ProblemDetails becomes the occurrence's error).
//! - `GET {base}/vnfpkgm/v2/onboarded_vnf_packages/{vnfdId}/package_content`: the package, for
//!   VNFMs that take packages from the NFVO; `.../{vnfdId}/vnfd`: the VNFD alone (a zip).
//!
//! Authentication: none, HTTP Basic, or OAuth 2.0 client credentials (tokens cached and renewed
//! on `401`). A CA certificate can be given for TLS. Connection failures, `5xx` and `429` are
//! retried with exponential backoff; other answers are not.

use std::time::{Duration, Instant};

use async_trait::async_trait;
use reqwest::{Client, Method, StatusCode};
use serde_json::Value;
use vnfm_driver_api::{DriverError, GrantDecision, Nfvo};
use vnfm_types::{Grant, GrantRequest, ProblemDetails, SecretString};

use crate::LcmError;
use crate::notify::auth::{CallbackAuth, OAuth2Client, TokenCache, describe};
use crate::notify::backoff_delay;

/// Largest grant, VNFD or error body read.
const MAX_BODY: usize = 4 * 1024 * 1024;

/// Largest package content read by default (see [`Sol003Nfvo::with_max_package_bytes`]).
pub const DEFAULT_MAX_PACKAGE_BYTES: usize = 1024 * 1024 * 1024;

/// How the VNFM authenticates to the NFVO.
#[derive(Clone)]
pub enum NfvoAuth {
    /// No authentication.
    None,
    /// HTTP Basic.
    Basic {
        /// User name.
        user: String,
        /// Password.
        password: SecretString,
    },
    /// OAuth 2.0 client credentials.
    OAuth2 {
        /// Client id.
        client_id: String,
        /// Client secret.
        client_secret: SecretString,
        /// Token endpoint URL.
        token_endpoint: String,
    },
}

impl std::fmt::Debug for NfvoAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NfvoAuth::None => f.write_str("None"),
            NfvoAuth::Basic { user, .. } => write!(f, "Basic({user}:***)"),
            NfvoAuth::OAuth2 {
                client_id,
                token_endpoint,
                ..
            } => write!(f, "OAuth2({client_id} at {token_endpoint})"),
        }
    }
}

/// Timing of [`Sol003Nfvo`].
#[derive(Debug, Clone)]
pub struct NfvoTimings {
    /// Time limit of one HTTP request.
    pub request_timeout: Duration,
    /// Attempts for a transient failure (connection error, 5xx, 429).
    pub attempts: u32,
    /// First backoff delay (doubles per attempt).
    pub backoff: Duration,
    /// Interval between polls of an asynchronous grant.
    pub poll_interval: Duration,
    /// How long an asynchronous grant is waited for.
    pub grant_timeout: Duration,
}

impl Default for NfvoTimings {
    fn default() -> Self {
        NfvoTimings {
            request_timeout: Duration::from_secs(30),
            attempts: 5,
            backoff: Duration::from_millis(200),
            poll_interval: Duration::from_secs(1),
            grant_timeout: Duration::from_secs(600),
        }
    }
}

/// A SOL003 NFVO reached over HTTP.
pub struct Sol003Nfvo {
    base: String,
    auth: CallbackAuth,
    http: Client,
    tokens: TokenCache,
    timings: NfvoTimings,
    max_package_bytes: usize,
}

impl std::fmt::Debug for Sol003Nfvo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sol003Nfvo")
            .field("base", &self.base)
            .field("auth", &self.auth)
            .finish_non_exhaustive()
    }
}

struct Answer {
    status: StatusCode,
    location: Option<String>,
    body: Vec<u8>,
}

impl Sol003Nfvo {
    /// An NFVO at `base` (e.g. `https://nfvo.example:9443`), trusting `ca_pem` in addition to
    /// the system roots when given.
    pub fn new(
        base: impl Into<String>,
        auth: NfvoAuth,
        ca_pem: Option<&[u8]>,
        timings: NfvoTimings,
    ) -> Result<Sol003Nfvo, LcmError> {
        crate::notify::install_crypto_provider();
        let mut builder = Client::builder()
            .tcp_nodelay(true)
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("vnfm/", env!("CARGO_PKG_VERSION")));
        if let Some(pem) = ca_pem {
            let cert = reqwest::Certificate::from_pem(pem)
                .map_err(|e| LcmError::invalid("/ca", format!("not a PEM certificate: {e}")))?;
            builder = builder.add_root_certificate(cert);
        }
        let http = builder
            .build()
            .map_err(|e| LcmError::Inconsistent(format!("cannot build the HTTP client: {e}")))?;
        let auth = match auth {
            NfvoAuth::None => CallbackAuth::None,
            NfvoAuth::Basic { user, password } => CallbackAuth::Basic { user, password },
            NfvoAuth::OAuth2 {
                client_id,
                client_secret,
                token_endpoint,
            } => CallbackAuth::OAuth2(OAuth2Client {
                client_id,
                client_secret,
                token_endpoint,
            }),
        };
        Ok(Sol003Nfvo {
            base: base.into().trim_end_matches('/').to_owned(),
            auth,
            http,
            tokens: TokenCache::default(),
            timings,
            max_package_bytes: DEFAULT_MAX_PACKAGE_BYTES,
        })
    }

    /// Sets the largest package content accepted from the NFVO (default
    /// [`DEFAULT_MAX_PACKAGE_BYTES`]); a larger one is refused while it downloads.
    pub fn with_max_package_bytes(mut self, bytes: usize) -> Sol003Nfvo {
        self.max_package_bytes = bytes;
        self
    }

    fn url(&self, path_or_url: &str) -> String {
        if path_or_url.starts_with("http://") || path_or_url.starts_with("https://") {
            path_or_url.to_owned()
        } else {
            format!("{}{path_or_url}", self.base)
        }
    }

    /// One request with authentication (a new token once on `401`), retried on transient
    /// failures.
    async fn call(
        &self,
        method: Method,
        target: &str,
        body: Option<&Value>,
        accept: &str,
        limit: usize,
    ) -> Result<Answer, DriverError> {
        let url = self.url(target);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let outcome = self
                .call_once(method.clone(), &url, body, accept, limit)
                .await;
            let transient = match &outcome {
                Ok(a) => a.status.is_server_error() || a.status == StatusCode::TOO_MANY_REQUESTS,
                Err(_) => true,
            };
            if !transient || attempt >= self.timings.attempts {
                return match outcome {
                    Ok(a) => Ok(a),
                    Err(e) => Err(DriverError::transient(format!(
                        "the NFVO at {} did not answer {method} {target}: {e}",
                        self.base
                    ))),
                };
            }
            tokio::time::sleep(backoff_delay(
                attempt,
                self.timings.backoff,
                Duration::from_secs(10),
            ))
            .await;
        }
    }

    async fn call_once(
        &self,
        method: Method,
        url: &str,
        body: Option<&Value>,
        accept: &str,
        limit: usize,
    ) -> Result<Answer, String> {
        let mut refreshed = false;
        loop {
            let mut req = self
                .http
                .request(method.clone(), url)
                .timeout(self.timings.request_timeout)
                .header("Accept", accept)
                .header("Version", "1.4.0");
            if let Some(b) = body {
                req = req.json(b);
            }
            let mut used = None;
            match &self.auth {
                CallbackAuth::None => {}
                CallbackAuth::Basic { user, password } => {
                    req = req.basic_auth(user, Some(password.expose()));
                }
                CallbackAuth::OAuth2(c) => {
                    let token = self
                        .tokens
                        .token(&self.http, c, self.timings.request_timeout)
                        .await?;
                    req = req.bearer_auth(token.expose());
                    used = Some(token);
                }
            }
            let resp = req.send().await.map_err(|e| describe(&e.without_url()))?;
            let status = resp.status();
            if status == StatusCode::UNAUTHORIZED
                && let (CallbackAuth::OAuth2(c), Some(token)) = (&self.auth, &used)
                && !refreshed
            {
                self.tokens.forget(c, token).await;
                refreshed = true;
                continue;
            }
            let location = resp
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let mut body = Vec::new();
            let mut resp = resp;
            while let Some(chunk) = resp.chunk().await.map_err(|e| describe(&e.without_url()))? {
                if body.len() + chunk.len() > limit {
                    return Err(format!("the NFVO's answer is larger than {limit} bytes"));
                }
                body.extend_from_slice(&chunk);
            }
            return Ok(Answer {
                status,
                location,
                body,
            });
        }
    }

    fn problem_of(answer: &Answer) -> ProblemDetails {
        serde_json::from_slice::<ProblemDetails>(&answer.body).unwrap_or_else(|_| {
            let text = String::from_utf8_lossy(&answer.body);
            let text: String = text.chars().take(300).collect();
            ProblemDetails::new(
                answer.status.as_u16(),
                format!("HTTP {}: {text}", answer.status),
            )
        })
    }

    /// The body of a `200` download; `None` for `404`.
    fn content_of(
        answer: Answer,
        what: &str,
        vnfd_id: &str,
    ) -> Result<Option<Vec<u8>>, DriverError> {
        match answer.status {
            StatusCode::OK => Ok(Some(answer.body)),
            StatusCode::NOT_FOUND => Ok(None),
            s => {
                let p = Self::problem_of(&answer);
                Err(DriverError::permanent(format!(
                    "fetching the {what} of VNFD {vnfd_id} failed ({s}): {}",
                    p.detail
                )))
            }
        }
    }

    fn grant_of(answer: &Answer) -> Result<Grant, DriverError> {
        serde_json::from_slice(&answer.body).map_err(|e| {
            DriverError::permanent(format!(
                "the NFVO answered with a Grant that does not parse: {e}"
            ))
        })
    }
}

#[async_trait]
impl Nfvo for Sol003Nfvo {
    async fn grant(&self, request: &GrantRequest) -> Result<GrantDecision, DriverError> {
        let body = serde_json::to_value(request).map_err(|e| {
            DriverError::permanent(format!("grant request does not serialize: {e}"))
        })?;
        let answer = self
            .call(
                Method::POST,
                "/grant/v1/grants",
                Some(&body),
                "application/json",
                MAX_BODY,
            )
            .await?;
        match answer.status {
            StatusCode::CREATED | StatusCode::OK => {
                Ok(GrantDecision::Granted(Box::new(Self::grant_of(&answer)?)))
            }
            StatusCode::FORBIDDEN => Ok(GrantDecision::Rejected(Self::problem_of(&answer))),
            StatusCode::ACCEPTED => {
                let Some(location) = answer.location else {
                    return Err(DriverError::permanent(
                        "the NFVO answered 202 Accepted without a Location to poll for the grant",
                    ));
                };
                let started = Instant::now();
                loop {
                    if started.elapsed() > self.timings.grant_timeout {
                        return Err(DriverError::timeout(
                            "the asynchronous grant",
                            self.timings.grant_timeout,
                        ));
                    }
                    tokio::time::sleep(self.timings.poll_interval).await;
                    let polled = self
                        .call(Method::GET, &location, None, "application/json", MAX_BODY)
                        .await?;
                    match polled.status {
                        StatusCode::OK | StatusCode::CREATED => {
                            return Ok(GrantDecision::Granted(Box::new(Self::grant_of(&polled)?)));
                        }
                        StatusCode::ACCEPTED => continue,
                        StatusCode::FORBIDDEN => {
                            return Ok(GrantDecision::Rejected(Self::problem_of(&polled)));
                        }
                        _ => {
                            let p = Self::problem_of(&polled);
                            return Err(DriverError::permanent(format!(
                                "polling the grant failed: {}",
                                p.detail
                            )));
                        }
                    }
                }
            }
            _ if answer.status.is_server_error()
                || answer.status == StatusCode::TOO_MANY_REQUESTS =>
            {
                let p = Self::problem_of(&answer);
                Err(DriverError::transient(format!(
                    "the NFVO is unavailable: {}",
                    p.detail
                )))
            }
            _ => {
                let p = Self::problem_of(&answer);
                Err(DriverError::permanent(format!(
                    "the NFVO refused the grant request ({}): {}",
                    answer.status, p.detail
                )))
            }
        }
    }

    async fn fetch_package(&self, vnfd_id: &str) -> Result<Option<Vec<u8>>, DriverError> {
        let path = format!("/vnfpkgm/v2/onboarded_vnf_packages/{vnfd_id}/package_content");
        let answer = self
            .call(
                Method::GET,
                &path,
                None,
                "application/zip",
                self.max_package_bytes,
            )
            .await?;
        Self::content_of(answer, "package", vnfd_id)
    }

    async fn fetch_vnfd(&self, vnfd_id: &str) -> Result<Option<Vec<u8>>, DriverError> {
        let path = format!("/vnfpkgm/v2/onboarded_vnf_packages/{vnfd_id}/vnfd");
        let answer = self
            .call(Method::GET, &path, None, "application/zip", MAX_BODY)
            .await?;
        Self::content_of(answer, "VNFD", vnfd_id)
    }

    fn describe(&self) -> String {
        format!("sol003 {}", self.base)
    }
}

/// Name of the store setting that holds the NFVO connection.
pub const NFVO_SETTING: &str = "nfvo";

/// The connection to a remote SOL003 NFVO as the operator configures it: kept in the store
/// (setting [`NFVO_SETTING`], shared by every replica) with its secret sealed by the keyring
/// like VIM secrets ([`save_nfvo_settings`], [`load_nfvo_settings`]).
#[derive(Clone)]
pub struct NfvoSettings {
    /// Base URL (`https://nfvo.example:9443`).
    pub url: String,
    /// Authentication towards the NFVO.
    pub auth: NfvoAuth,
    /// Extra CA certificate (PEM) to trust.
    pub ca_pem: Option<String>,
}

impl std::fmt::Debug for NfvoSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NfvoSettings")
            .field("url", &self.url)
            .field("auth", &self.auth)
            .field("ca_pem", &self.ca_pem.as_ref().map(|_| "<PEM>"))
            .finish()
    }
}

impl NfvoSettings {
    /// The client for these settings.
    pub fn connect(&self, timings: NfvoTimings) -> Result<Sol003Nfvo, LcmError> {
        Sol003Nfvo::new(
            self.url.clone(),
            self.auth.clone(),
            self.ca_pem.as_deref().map(str::as_bytes),
            timings,
        )
    }
}

/// The stored form of [`NfvoSettings`]: everything but the secret in clear, the secret as a
/// Fernet token.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredNfvo {
    url: String,
    /// `none`, `basic` or `oauth2`.
    auth: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    user: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    token_endpoint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sealed_secret: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ca_pem: Option<String>,
}

const SECRET_LABEL: &str = "the NFVO secret";

fn seal(keyring: &crate::Keyring, secret: &SecretString) -> String {
    String::from_utf8_lossy(&keyring.encrypt(secret.expose().as_bytes())).into_owned()
}

/// Stores `settings` (their secret sealed with `keyring`), or removes the stored ones
/// (`None`: the built-in NFVO is used from then on).
pub async fn save_nfvo_settings(
    store: &dyn vnfm_store::Store,
    keyring: &crate::Keyring,
    settings: Option<&NfvoSettings>,
) -> Result<(), LcmError> {
    let value = match settings {
        None => None,
        Some(s) => {
            let (auth, user, token_endpoint, sealed_secret) = match &s.auth {
                NfvoAuth::None => ("none", None, None, None),
                NfvoAuth::Basic { user, password } => (
                    "basic",
                    Some(user.clone()),
                    None,
                    Some(seal(keyring, password)),
                ),
                NfvoAuth::OAuth2 {
                    client_id,
                    client_secret,
                    token_endpoint,
                } => (
                    "oauth2",
                    Some(client_id.clone()),
                    Some(token_endpoint.clone()),
                    Some(seal(keyring, client_secret)),
                ),
            };
            let stored = StoredNfvo {
                url: s.url.clone(),
                auth: auth.into(),
                user,
                token_endpoint,
                sealed_secret,
                ca_pem: s.ca_pem.clone(),
            };
            Some(serde_json::to_value(&stored).map_err(|e| {
                LcmError::Inconsistent(format!("the NFVO settings do not serialize: {e}"))
            })?)
        }
    };
    store
        .put_setting(NFVO_SETTING, value.as_ref())
        .await
        .map_err(|e| LcmError::Store(e.to_string()))
}

/// The stored NFVO settings with their secret unsealed, `None` when none are stored. A secret
/// sealed with an older key of `keyring` is sealed again with the newest one (key rotation).
pub async fn load_nfvo_settings(
    store: &dyn vnfm_store::Store,
    keyring: &crate::Keyring,
) -> Result<Option<NfvoSettings>, LcmError> {
    let Some(value) = store
        .get_setting(NFVO_SETTING)
        .await
        .map_err(|e| LcmError::Store(e.to_string()))?
    else {
        return Ok(None);
    };
    let mut stored: StoredNfvo = serde_json::from_value(value).map_err(|e| {
        LcmError::Inconsistent(format!(
            "the stored NFVO settings (setting `{NFVO_SETTING}`) are unreadable: {e}"
        ))
    })?;
    let secret = match &stored.sealed_secret {
        Some(blob) => {
            let plain = keyring.decrypt(blob.as_bytes(), SECRET_LABEL)?;
            let text = String::from_utf8(plain)
                .map_err(|_| LcmError::Inconsistent(format!("{SECRET_LABEL} is not UTF-8 text")))?;
            Some(SecretString::new(text))
        }
        None => None,
    };
    let missing = |what: &str| {
        LcmError::Inconsistent(format!(
            "the stored NFVO settings use {} authentication but have no {what}; configure the NFVO again",
            stored.auth
        ))
    };
    let auth = match stored.auth.as_str() {
        "none" => NfvoAuth::None,
        "basic" => NfvoAuth::Basic {
            user: stored.user.clone().ok_or_else(|| missing("user"))?,
            password: secret.clone().ok_or_else(|| missing("secret"))?,
        },
        "oauth2" => NfvoAuth::OAuth2 {
            client_id: stored.user.clone().ok_or_else(|| missing("client id"))?,
            client_secret: secret.clone().ok_or_else(|| missing("secret"))?,
            token_endpoint: stored
                .token_endpoint
                .clone()
                .ok_or_else(|| missing("token endpoint"))?,
        },
        other => {
            return Err(LcmError::Inconsistent(format!(
                "the stored NFVO settings name an unknown authentication `{other}`; configure the NFVO again"
            )));
        }
    };
    if let (Some(blob), Some(secret)) = (&stored.sealed_secret, &secret)
        && !keyring.is_current(blob.as_bytes())
    {
        stored.sealed_secret = Some(seal(keyring, secret));
        if let Ok(v) = serde_json::to_value(&stored) {
            // Best effort: the secret opens with the old key until the next start.
            if let Err(e) = store.put_setting(NFVO_SETTING, Some(&v)).await {
                tracing::warn!(error = %e, "could not re-seal the NFVO secret with the newest key");
            }
        }
    }
    Ok(Some(NfvoSettings {
        url: stored.url,
        auth,
        ca_pem: stored.ca_pem,
    }))
}
