//! [`KeystoneValidator`]: gets and renews its own service token, and validates callers'
//! tokens with it (`GET /v3/auth/tokens`, `X-Subject-Token`), through the bounded cache.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use reqwest::StatusCode;
use reqwest::header::HeaderValue;
use serde_json::json;
use tokio::sync::Mutex;

use crate::cache::{Lookup, TokenCache, key};
use crate::config::{Access, KeystoneConfig, RolePolicy, ServiceCredentials};
use crate::error::{KeystoneError, Step, keystone_message};
use crate::identity::{KeystoneIdentity, TokenDocument};

/// How many times a token validation asks a Keystone that does not answer (a refused
/// connection, a timeout) before the request is answered 503: as keystonemiddleware, which
/// retries such requests (`http_request_max_retries`), a busy Keystone delays a request
/// rather than failing it.
const UNREACHABLE_ATTEMPTS: u32 = 3;

/// Longest token accepted for validation; longer values are refused without asking Keystone
/// (Fernet tokens are under 300 bytes, PKI tokens of old releases a few KiB).
const MAX_TOKEN_LEN: usize = 16 * 1024;

/// The service token is renewed this long before it expires.
const RENEW_MARGIN: Duration = Duration::from_secs(60);

struct ServiceToken {
    value: HeaderValue,
    renew_at: Instant,
}

/// Validates Keystone v3 tokens for the REST server. Cheap to share behind an `Arc`; one per
/// server.
pub struct KeystoneValidator {
    base: String,
    credentials: ServiceCredentials,
    config: KeystoneConfig,
    http: reqwest::Client,
    service: Mutex<Option<ServiceToken>>,
    cache: TokenCache,
}

impl std::fmt::Debug for KeystoneValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeystoneValidator")
            .field("url", &self.base)
            .field("credentials", &self.credentials)
            .field("revalidate_after", &self.config.revalidate_after)
            .field("cache_capacity", &self.config.cache_capacity)
            .field("roles", &self.config.roles)
            .finish_non_exhaustive()
    }
}

/// `url` without a trailing `/`, ending in `/v3`.
fn identity_base(url: &str) -> Result<String, KeystoneError> {
    let invalid = |reason: &str| KeystoneError::InvalidUrl {
        url: url.to_owned(),
        reason: reason.to_owned(),
    };
    let parsed = reqwest::Url::parse(url).map_err(|e| invalid(&e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(invalid("the scheme must be http or https"));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(invalid("a query or fragment is not allowed"));
    }
    let trimmed = url.trim_end_matches('/');
    Ok(if trimmed.ends_with("/v3") {
        trimmed.to_owned()
    } else {
        format!("{trimmed}/v3")
    })
}

fn sensitive(value: &str) -> Option<HeaderValue> {
    let mut v = HeaderValue::from_str(value).ok()?;
    v.set_sensitive(true);
    Some(v)
}

impl KeystoneValidator {
    /// A validator for `config` (no request is made yet; see
    /// [`KeystoneValidator::authenticate_service`]). The process must have installed a
    /// rustls crypto provider (ring) before.
    pub fn new(config: KeystoneConfig) -> Result<KeystoneValidator, KeystoneError> {
        let base = identity_base(&config.url)?;
        let http = reqwest::Client::builder()
            .timeout(config.request_timeout)
            .connect_timeout(config.request_timeout.min(Duration::from_secs(5)))
            // Tokens go to the configured Keystone only.
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("vnfm-keystone/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(KeystoneError::Client)?;
        Ok(KeystoneValidator {
            base,
            credentials: config.credentials.clone(),
            cache: TokenCache::new(config.cache_capacity, config.revalidate_after),
            config,
            http,
            service: Mutex::new(None),
        })
    }

    /// The identity endpoint requests go to (`.../v3`).
    pub fn url(&self) -> &str {
        &self.base
    }

    /// What `identity` may do under the configured role mapping.
    pub fn access(&self, identity: &KeystoneIdentity) -> Access {
        self.config.roles.access(identity)
    }

    /// The role mapping.
    pub fn roles(&self) -> &RolePolicy {
        &self.config.roles
    }

    /// Number of tokens in the cache.
    pub fn cached_tokens(&self) -> usize {
        self.cache.len()
    }

    /// Gets a service token now (when none is held or it is due for renewal), so that wrong
    /// service credentials show at start rather than at the first request.
    pub async fn authenticate_service(&self) -> Result<(), KeystoneError> {
        self.service_token(false).await.map(|_| ())
    }

    /// The caller behind `token`: from the cache when Keystone confirmed it within
    /// [`KeystoneConfig::revalidate_after`] and it has not expired, else from Keystone; when
    /// Keystone does not answer, from a confirmation of the last 5 minutes.
    ///
    /// [`KeystoneError::InvalidToken`] when the token is unknown, malformed, expired or
    /// revoked; any other error when Keystone could not tell.
    pub async fn validate(&self, token: &str) -> Result<Arc<KeystoneIdentity>, KeystoneError> {
        let token = token.trim();
        if token.is_empty() || token.len() > MAX_TOKEN_LEN {
            return Err(KeystoneError::InvalidToken);
        }
        let subject = sensitive(token).ok_or(KeystoneError::InvalidToken)?;
        let k = key(token);
        match self.cache.lookup(&k, Instant::now(), SystemTime::now()) {
            Lookup::Fresh(identity) => return Ok(identity),
            Lookup::Expired => return Err(KeystoneError::InvalidToken),
            Lookup::Ask => {}
        }
        let asked = Instant::now();
        let mut attempt = 1;
        let answer = loop {
            match self.ask(&subject).await {
                Err(e @ KeystoneError::Unreachable { .. }) if attempt < UNREACHABLE_ATTEMPTS => {
                    tracing::warn!(attempt, error = %e, "Keystone did not answer a token validation; asking again");
                    attempt += 1;
                }
                answer => break answer,
            }
        };
        match answer {
            Ok(identity) if identity.expires_at > SystemTime::now() => {
                let identity = Arc::new(identity);
                self.cache.confirm(k, identity.clone(), asked);
                Ok(identity)
            }
            Ok(_) | Err(KeystoneError::InvalidToken) => {
                self.cache.forget(&k);
                Err(KeystoneError::InvalidToken)
            }
            Err(e @ KeystoneError::Unreachable { .. }) => {
                // As keystonemiddleware, which asks nothing for its token_cache_time: a busy
                // or restarting Keystone does not turn away callers it confirmed recently.
                match self.cache.stale(&k, Instant::now(), SystemTime::now()) {
                    Some((identity, age)) => {
                        tracing::warn!(error = %e, confirmed_secs_ago = age.as_secs(), "Keystone did not answer a token validation; the token's last confirmation stands");
                        Ok(identity)
                    }
                    None => Err(e),
                }
            }
            Err(e) => Err(e),
        }
    }

    /// `GET /v3/auth/tokens` for `subject`, renewing the service token once if Keystone
    /// refuses it.
    async fn ask(&self, subject: &HeaderValue) -> Result<KeystoneIdentity, KeystoneError> {
        let url = format!("{}/auth/tokens?nocatalog", self.base);
        let mut renewed = false;
        loop {
            let service = self.service_token(renewed).await?;
            let request = self
                .http
                .get(&url)
                .header("X-Auth-Token", service)
                .header("X-Subject-Token", subject.clone());
            let response = vnfm_trace_reqwest::send(request, vnfm_trace::Peer::ApiKeystone)
                .await
                .map_err(|source| KeystoneError::Unreachable {
                    step: Step::Validate,
                    source,
                })?;
            let status = response.status();
            match status {
                StatusCode::OK => {
                    let doc: TokenDocument =
                        response
                            .json()
                            .await
                            .map_err(|source| KeystoneError::Decode {
                                step: Step::Validate,
                                source,
                            })?;
                    return doc.into_identity();
                }
                StatusCode::NOT_FOUND => return Err(KeystoneError::InvalidToken),
                // Keystone answers 401 when the service token is no longer valid (revoked,
                // its user disabled): renew it once, then a 401 is about the subject token.
                StatusCode::UNAUTHORIZED if !renewed => {
                    tracing::debug!("Keystone refused the service token; renewing it");
                    renewed = true;
                }
                StatusCode::UNAUTHORIZED => return Err(KeystoneError::InvalidToken),
                _ => {
                    let body = response.text().await.unwrap_or_default();
                    return Err(KeystoneError::Status {
                        step: Step::Validate,
                        status: status.as_u16(),
                        message: keystone_message(&body, status),
                    });
                }
            }
        }
    }

    /// The service token: the held one unless it is due for renewal or `renew` is set.
    async fn service_token(&self, renew: bool) -> Result<HeaderValue, KeystoneError> {
        let mut held = self.service.lock().await;
        if let Some(t) = held.as_ref()
            && !renew
            && Instant::now() < t.renew_at
        {
            return Ok(t.value.clone());
        }
        *held = None;
        let fresh = self.issue_service_token().await?;
        let value = fresh.value.clone();
        *held = Some(fresh);
        Ok(value)
    }

    /// `POST /v3/auth/tokens` with the service credentials.
    async fn issue_service_token(&self) -> Result<ServiceToken, KeystoneError> {
        let (value, expires_at) = issue(
            &self.http,
            &self.base,
            &self.credentials,
            Step::ServiceToken,
        )
        .await?;
        let left = expires_at
            .duration_since(SystemTime::now())
            .unwrap_or_default();
        // Renew a minute before expiry; a short-lived token at half its life.
        let renew_in = if left > 2 * RENEW_MARGIN {
            left - RENEW_MARGIN
        } else {
            left / 2
        };
        tracing::debug!(
            url = %self.base,
            expires_in_secs = left.as_secs(),
            "Keystone service token obtained"
        );
        Ok(ServiceToken {
            value,
            renew_at: Instant::now() + renew_in,
        })
    }
}

/// A token Keystone issued ([`login`]); its value stays out of `Debug`.
pub struct IssuedToken {
    /// The token (`X-Auth-Token`).
    pub value: vnfm_types::SecretString,
    /// When it expires.
    pub expires_at: SystemTime,
}

impl std::fmt::Debug for IssuedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IssuedToken")
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

/// Logs in to the Keystone at `url` (`/v3` is appended when missing) with `credentials`, as a
/// client does (`POST /v3/auth/tokens`): the token a VNFM accepts from a user of the
/// credentials' project. `http` should not follow redirects (the credentials go to `url` only).
pub async fn login(
    http: &reqwest::Client,
    url: &str,
    credentials: &ServiceCredentials,
) -> Result<IssuedToken, KeystoneError> {
    let base = identity_base(url)?;
    let (value, expires_at) = issue(http, &base, credentials, Step::Login).await?;
    let value = value.to_str().unwrap_or_default().to_owned();
    Ok(IssuedToken {
        value: vnfm_types::SecretString::new(value),
        expires_at,
    })
}

/// `POST {base}/auth/tokens` with `credentials`: the token and when it expires.
async fn issue(
    http: &reqwest::Client,
    base: &str,
    credentials: &ServiceCredentials,
    step: Step,
) -> Result<(HeaderValue, SystemTime), KeystoneError> {
    let body = match credentials {
        ServiceCredentials::Password {
            user,
            password,
            user_domain,
            project,
            project_domain,
        } => json!({"auth": {
            "identity": {"methods": ["password"], "password": {"user": {
                "name": user, "domain": {"name": user_domain},
                "password": password.expose()}}},
            "scope": {"project": {"name": project, "domain": {"name": project_domain}}}
        }}),
        ServiceCredentials::ApplicationCredential { id, secret } => json!({"auth": {
            "identity": {"methods": ["application_credential"],
                "application_credential": {"id": id, "secret": secret.expose()}}
        }}),
    };
    let request = http
        .post(format!("{base}/auth/tokens?nocatalog"))
        .json(&body);
    let response = vnfm_trace_reqwest::send(request, vnfm_trace::Peer::ApiKeystone)
        .await
        .map_err(|source| KeystoneError::Unreachable { step, source })?;
    drop(body);
    let status = response.status();
    if !status.is_success() {
        let text = response.text().await.unwrap_or_default();
        let message = keystone_message(&text, status);
        return Err(match (status, step) {
            (StatusCode::UNAUTHORIZED, Step::ServiceToken) => KeystoneError::ServiceCredentials {
                status: status.as_u16(),
                message,
            },
            (StatusCode::UNAUTHORIZED, _) => KeystoneError::Credentials {
                status: status.as_u16(),
                message,
            },
            _ => KeystoneError::Status {
                step,
                status: status.as_u16(),
                message,
            },
        });
    }
    let value = response
        .headers()
        .get("X-Subject-Token")
        .and_then(|v| v.to_str().ok())
        .and_then(sensitive)
        .ok_or(KeystoneError::MissingSubjectToken(step))?;
    let doc: TokenDocument = response
        .json()
        .await
        .map_err(|source| KeystoneError::Decode { step, source })?;
    Ok((value, doc.expires_at(step)?))
}

/// Keeps the service token's value out of reach of `Debug`.
impl std::fmt::Debug for ServiceToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceToken")
            .field("renew_at", &self.renew_at)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use vnfm_types::SecretString;

    use super::*;

    #[test]
    fn the_identity_endpoint_ends_in_v3() {
        assert_eq!(
            identity_base("http://127.0.0.1:5000").unwrap(),
            "http://127.0.0.1:5000/v3"
        );
        assert_eq!(
            identity_base("https://cloud.example/identity/v3/").unwrap(),
            "https://cloud.example/identity/v3"
        );
        assert!(identity_base("ftp://x/v3").is_err());
        assert!(identity_base("keystone:5000").is_err());
        assert!(identity_base("http://k/v3?x=1").is_err());
    }

    /// A Keystone that takes longer than the request timeout to answer the first validation
    /// (busy): the validation asks again and succeeds, as keystonemiddleware does.
    #[tokio::test]
    async fn a_validation_keystone_does_not_answer_in_time_is_asked_again() {
        use std::sync::atomic::{AtomicU32, Ordering};
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let _ = rustls::crypto::ring::default_provider().install_default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let validations = Arc::new(AtomicU32::new(0));
        let seen = validations.clone();
        tokio::spawn(async move {
            loop {
                let (mut conn, _) = listener.accept().await.unwrap();
                let seen = seen.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 16 * 1024];
                    let n = conn.read(&mut buf).await.unwrap_or(0);
                    let head = String::from_utf8_lossy(&buf[..n]).to_string();
                    let expires = "2999-01-01T00:00:00.000000Z";
                    let (status, extra, body) = if head.starts_with("POST") {
                        let body = json!({"token": {"expires_at": expires,
                            "user": {"id": "svc"}}});
                        ("201 Created", "X-Subject-Token: service\r\n", body)
                    } else {
                        if seen.fetch_add(1, Ordering::SeqCst) == 0 {
                            // Busy: no answer within the client's timeout.
                            tokio::time::sleep(Duration::from_secs(30)).await;
                        }
                        let body = json!({"token": {"expires_at": expires,
                            "user": {"id": "u1", "name": "alice"},
                            "project": {"id": "p1", "name": "demo"},
                            "roles": [{"name": "reader"}]}});
                        ("200 OK", "", body)
                    };
                    let body = body.to_string();
                    let answer = format!(
                        "HTTP/1.1 {status}\r\n{extra}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = conn.write_all(answer.as_bytes()).await;
                });
            }
        });
        let mut config = KeystoneConfig::new(
            format!("http://127.0.0.1:{port}/v3"),
            ServiceCredentials::ApplicationCredential {
                id: "x".into(),
                secret: SecretString::new("y"),
            },
        );
        config.request_timeout = Duration::from_millis(500);
        let v = KeystoneValidator::new(config).unwrap();
        let identity = v.validate("a-user-token").await.unwrap();
        assert_eq!(identity.project_id.as_deref(), Some("p1"));
        assert_eq!(validations.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn malformed_tokens_are_refused_without_asking_keystone() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        // A closed port: asking Keystone would answer Unreachable, not InvalidToken.
        let v = KeystoneValidator::new(KeystoneConfig::new(
            "http://127.0.0.1:9/v3",
            ServiceCredentials::ApplicationCredential {
                id: "x".into(),
                secret: SecretString::new("y"),
            },
        ))
        .unwrap();
        for token in ["", "   ", "line\nbreak", &"a".repeat(MAX_TOKEN_LEN + 1)] {
            assert!(v.validate(token).await.unwrap_err().is_invalid_token());
        }
        let e = v.validate("well-formed").await.unwrap_err();
        assert!(matches!(e, KeystoneError::Unreachable { .. }), "{e:?}");
    }
}
