//! [`Sol003Nfvo`]: a remote NFVO over the SOL003 Grant and VNF package management interfaces.
//!
//! - `POST {base}/grant/v1/grants`: `201` with the Grant; `202` with a `Location` that is
//!   polled until it answers `200` with the Grant (asynchronous granting); `403` is a rejection
//!   (its ProblemDetails becomes the occurrence's error).
//! - `GET {base}/vnfpkgm/v2/onboarded_vnf_packages/{vnfdId}/package_content`: the package, for
//!   VNFMs that take packages from the NFVO; `.../{vnfdId}/vnfd`: the VNFD alone (a zip).
//!
//! Authentication: none, HTTP Basic, or OAuth 2.0 client credentials (tokens cached and renewed
//! on `401`), either with a token endpoint and client secret of the NFVO's settings or, with
//! [`Sol003Nfvo::with_issuer_tokens`], from the server's own authorization server. A CA certificate can be given for TLS. Connection failures, `5xx` and `429` are
//! retried with exponential backoff; other answers are not.

use std::time::{Duration, Instant};

use async_trait::async_trait;
use reqwest::{Client, Method, StatusCode};
use serde_json::Value;
use vnfm_driver_api::{DriverError, GrantDecision, Nfvo, NfvoAuth, NfvoSettings, backoff_delay};
use vnfm_types::{Grant, GrantRequest, ProblemDetails};

use crate::OutboundError;
use crate::auth::{
    Answer, Credentials, Exchange, OAuth2Client, TokenCache, client_builder, exchange,
};

/// Largest grant, VNFD or error body read.
const MAX_BODY: usize = 4 * 1024 * 1024;

/// Largest package content read by default (see [`Sol003Nfvo::with_max_package_bytes`]).
pub const DEFAULT_MAX_PACKAGE_BYTES: usize = 1024 * 1024 * 1024;

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
    auth: Credentials,
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

impl Sol003Nfvo {
    /// An NFVO at `base` (e.g. `https://nfvo.example:9443`), trusting `ca_pem` in addition to
    /// the system roots when given.
    pub fn new(
        base: impl Into<String>,
        auth: NfvoAuth,
        ca_pem: Option<&[u8]>,
        timings: NfvoTimings,
    ) -> Result<Sol003Nfvo, OutboundError> {
        let mut builder = client_builder(Duration::from_secs(10));
        if let Some(pem) = ca_pem {
            let cert = reqwest::Certificate::from_pem(pem).map_err(|source| {
                OutboundError::CaCertificate {
                    pointer: "/ca",
                    source,
                }
            })?;
            builder = builder.add_root_certificate(cert);
        }
        let http = builder.build().map_err(OutboundError::Client)?;
        let auth = match auth {
            NfvoAuth::None => Credentials::None,
            NfvoAuth::Basic { user, password } => Credentials::Basic { user, password },
            NfvoAuth::OAuth2 {
                client_id,
                client_secret,
                token_endpoint,
            } => Credentials::OAuth2(OAuth2Client {
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

    /// The client for the connection `settings` describe.
    pub fn from_settings(
        settings: &NfvoSettings,
        timings: NfvoTimings,
    ) -> Result<Sol003Nfvo, OutboundError> {
        Sol003Nfvo::new(
            settings.url.clone(),
            settings.auth.clone(),
            settings.ca_pem.as_deref().map(str::as_bytes),
            timings,
        )
    }

    /// Calls the NFVO with access tokens of `tokens` (the server's own authorization server,
    /// by client credentials) instead of the authentication of its settings.
    pub fn with_issuer_tokens(
        mut self,
        tokens: std::sync::Arc<vnfm_oauth::ClientCredentials>,
    ) -> Sol003Nfvo {
        self.auth = Credentials::Issuer(tokens);
        self
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
                // The same answer would be too large again.
                Err(OutboundError::TooLarge { .. }) => false,
                Err(_) => true,
            };
            if !transient || attempt >= self.timings.attempts {
                return match outcome {
                    Ok(a) => Ok(a),
                    Err(e @ OutboundError::TooLarge { .. }) => Err(DriverError::permanent(
                        format!("the NFVO's answer to {method} {target} is too large: {e}"),
                    )
                    .with_source(e)),
                    Err(e) => Err(DriverError::transient(format!(
                        "the NFVO at {} did not answer {method} {target}: {e}",
                        self.base
                    ))
                    .with_source(e)),
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
    ) -> Result<Answer, OutboundError> {
        let x = Exchange {
            method,
            url,
            body,
            headers: &[("Accept", accept), ("Version", "1.4.0")],
            timeout: self.timings.request_timeout,
            read_body: Some(limit),
        };
        exchange(&self.http, &self.tokens, &self.auth, &x).await
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
