//! [`OAuthVerifier`]: the issuer's metadata and key set, kept and refreshed; each token
//! verified locally (a JWT) or introspected (an opaque token, or every token when so
//! configured).

use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use crate::config::{Access, ClientAuth, OAuthConfig, TokenCheck};
use crate::error::{OAuthError, Refusal, Step};
use crate::http::Metadata;
use crate::identity::{TokenIdentity, Verified};
use crate::introspection::Introspector;
use crate::jwt::{self, KeySet};

/// The key set, and when it was read.
struct Keys {
    set: Arc<KeySet>,
    read: Instant,
}

/// Verifies the access tokens of one issuer. Cheap to share behind an `Arc`; one per server.
pub struct OAuthVerifier {
    config: OAuthConfig,
    http: reqwest::Client,
    metadata: tokio::sync::Mutex<Option<Arc<Metadata>>>,
    keys: RwLock<Option<Keys>>,
    /// When the key set or the metadata was last asked for (read or not): a token with an
    /// unknown `kid`, or metadata that could not be read, asks again only
    /// [`OAuthConfig::jwks_min_refresh`] later.
    last_attempt: Mutex<Option<Instant>>,
    refreshing: tokio::sync::Mutex<()>,
    introspector: Option<Introspector>,
}

impl std::fmt::Debug for OAuthVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthVerifier")
            .field("issuer", &self.config.issuer)
            .field("audiences", &self.config.audiences)
            .field("check", &self.config.check)
            .field("introspection", &self.config.introspection)
            .field("claims", &self.config.claims)
            .field("roles", &self.config.roles)
            .finish_non_exhaustive()
    }
}

pub(crate) fn check_url(what: &str, url: &str) -> Result<(), OAuthError> {
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| OAuthError::Config(format!("{what} `{url}` is not a URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(OAuthError::Config(format!(
            "{what} `{url}` is not an http or https URL"
        )));
    }
    Ok(())
}

/// The HTTP client towards the authorization server: the configured CAs, and the client
/// certificate of `tls_client_auth`.
fn http_client(config: &OAuthConfig) -> Result<reqwest::Client, OAuthError> {
    crate::http::client(
        config.request_timeout,
        config.ca_pem.as_deref(),
        config.introspection.as_ref().map(|i| &i.auth),
    )
}

impl OAuthVerifier {
    /// A verifier for `config` (no request is made yet; see [`OAuthVerifier::prepare`]). The
    /// process must have installed a rustls crypto provider (ring) before.
    pub fn new(config: OAuthConfig) -> Result<OAuthVerifier, OAuthError> {
        check_url("the issuer", &config.issuer)?;
        if let Some(url) = &config.jwks_url {
            check_url("the JWKS URL", url)?;
        }
        if config.audiences.iter().all(|a| a.is_empty()) {
            return Err(OAuthError::Config(
                "at least one audience is needed: tokens meant for other servers must be refused"
                    .into(),
            ));
        }
        let introspector = match &config.introspection {
            Some(i) => {
                if let Some(url) = &i.url {
                    check_url("the introspection URL", url)?;
                }
                Some(Introspector::new(i.clone())?)
            }
            None if config.check != TokenCheck::Jwt => {
                return Err(OAuthError::Config(
                    "introspection needs this server's client at the authorization server (a client id and its authentication)".into(),
                ));
            }
            None => None,
        };
        let http = http_client(&config)?;
        Ok(OAuthVerifier {
            config,
            http,
            metadata: tokio::sync::Mutex::new(None),
            keys: RwLock::new(None),
            last_attempt: Mutex::new(None),
            refreshing: tokio::sync::Mutex::new(()),
            introspector,
        })
    }

    /// The issuer.
    pub fn issuer(&self) -> &str {
        &self.config.issuer
    }

    /// The configuration.
    pub fn config(&self) -> &OAuthConfig {
        &self.config
    }

    /// What a caller with `identity` may do under the role mapping.
    pub fn access(&self, identity: &TokenIdentity) -> Access {
        self.config.roles.access(&identity.roles)
    }

    /// Number of introspection answers in the cache.
    pub fn cached_answers(&self) -> usize {
        self.introspector
            .as_ref()
            .map_or(0, Introspector::cached_answers)
    }

    /// Reads the metadata and the key set now, so that a wrong issuer shows at start rather
    /// than at the first request.
    pub async fn prepare(&self) -> Result<(), OAuthError> {
        if self.config.check != TokenCheck::Introspection {
            self.refresh_keys(None).await?;
        } else {
            self.introspection_url().await?;
        }
        Ok(())
    }

    /// The caller behind `token`.
    ///
    /// [`OAuthError::Invalid`] when the token is at fault (malformed, too large, signed with
    /// an algorithm or key not accepted, forged, of another issuer or audience, expired,
    /// inactive); any other error when the authorization server could not tell.
    pub async fn verify(&self, token: &str) -> Result<Arc<TokenIdentity>, OAuthError> {
        let token = token.trim();
        if token.is_empty() || token.len() > self.config.max_token_bytes {
            return Err(Refusal::TooLarge.into());
        }
        let local = match self.config.check {
            TokenCheck::Jwt => true,
            TokenCheck::Introspection => false,
            TokenCheck::Auto => jwt::is_jwt(token),
        };
        if local {
            return self.verify_jwt(token).await;
        }
        let introspector = self
            .introspector
            .as_ref()
            .ok_or(OAuthError::Invalid(Refusal::NotVerifiable))?;
        let url = self.introspection_url().await?;
        let audience = self.assertion_audience(introspector).await;
        introspector
            .introspect(&self.http, &url, &audience, token, &self.config)
            .await
    }

    async fn verify_jwt(&self, token: &str) -> Result<Arc<TokenIdentity>, OAuthError> {
        let header = jwt::header(token)?;
        let set = self.key_set(&header).await?;
        let claims = set.verify(token, &header, &self.config)?;
        Ok(Arc::new(TokenIdentity::from_claims(
            &claims,
            &self.config.claims,
            Verified::Jwt,
        )))
    }

    /// The key set to verify a token with `header`: the one held, read again when it is older
    /// than [`OAuthConfig::jwks_refresh`] (the keys held stay in use while the server does
    /// not answer), or when it has no key for the token. The server is asked at most once per
    /// [`OAuthConfig::jwks_min_refresh`] however many tokens name unknown keys.
    async fn key_set(&self, header: &jwt::Header) -> Result<Arc<KeySet>, OAuthError> {
        let Some((mut set, mut read)) = self.held_keys() else {
            if self.recently_attempted() {
                return Err(OAuthError::Backoff(Step::Keys));
            }
            let set = self.refresh_keys(None).await?;
            return if set.knows(header) {
                Ok(set)
            } else {
                Err(Refusal::UnknownKey.into())
            };
        };
        if read.elapsed() >= self.config.jwks_refresh && !self.recently_attempted() {
            match self.refresh_keys(Some(read)).await {
                Ok(fresh) => {
                    set = fresh;
                    read = Instant::now();
                }
                Err(e) => {
                    tracing::warn!(error = %e, "reading the authorization server's key set again failed; the keys held are used");
                }
            }
        }
        if set.knows(header) {
            return Ok(set);
        }
        if self.recently_attempted() {
            return Err(Refusal::UnknownKey.into());
        }
        let set = self.refresh_keys(Some(read)).await?;
        if set.knows(header) {
            Ok(set)
        } else {
            Err(Refusal::UnknownKey.into())
        }
    }

    fn recently_attempted(&self) -> bool {
        self.last_attempt()
            .is_some_and(|at| at.elapsed() < self.config.jwks_min_refresh())
    }

    fn held_keys(&self) -> Option<(Arc<KeySet>, Instant)> {
        let keys = self.keys.read().unwrap_or_else(|e| e.into_inner());
        keys.as_ref().map(|k| (k.set.clone(), k.read))
    }

    fn last_attempt(&self) -> Option<Instant> {
        *self.last_attempt.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn attempted(&self) {
        *self.last_attempt.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
    }

    /// Reads the key set, one reader at a time: a caller that waited while another read it
    /// (the set held is newer than `seen`) takes that one.
    async fn refresh_keys(&self, seen: Option<Instant>) -> Result<Arc<KeySet>, OAuthError> {
        let waited_from = Instant::now();
        let _one = self.refreshing.lock().await;
        let held = self.held_keys();
        if let Some((set, read)) = &held
            && seen.is_none_or(|s| *read > s)
        {
            return Ok(set.clone());
        }
        // Another caller asked while this one waited, and got nothing newer.
        if self.last_attempt().is_some_and(|at| at > waited_from) {
            return match held {
                Some((set, _)) => Ok(set),
                None => Err(OAuthError::Backoff(Step::Keys)),
            };
        }
        self.attempted();
        let url = match &self.config.jwks_url {
            Some(url) => url.clone(),
            None => self
                .metadata()
                .await?
                .jwks_uri
                .clone()
                .ok_or(OAuthError::NoEndpoint("jwks_uri"))?,
        };
        let doc = crate::http::json(Step::Keys, &url, self.http.get(&url)).await?;
        let set = Arc::new(KeySet::parse(&doc).ok_or_else(|| OAuthError::Answer {
            step: Step::Keys,
            url: url.clone(),
            reason: "it has no `keys` array".into(),
        })?);
        tracing::info!(
            url,
            keys = set.len(),
            "read the authorization server's key set"
        );
        *self.keys.write().unwrap_or_else(|e| e.into_inner()) = Some(Keys {
            set: set.clone(),
            read: Instant::now(),
        });
        Ok(set)
    }

    /// The issuer's metadata, read once (again after a failure, at most once per
    /// [`OAuthConfig::jwks_min_refresh`]).
    async fn metadata(&self) -> Result<Arc<Metadata>, OAuthError> {
        let mut held = self.metadata.lock().await;
        if let Some(m) = held.as_ref() {
            return Ok(m.clone());
        }
        let m = Arc::new(crate::http::discover(&self.http, &self.config.issuer).await?);
        *held = Some(m.clone());
        Ok(m)
    }

    /// The introspection endpoint: as configured, else the metadata's (its mutual-TLS alias
    /// for `tls_client_auth`, when it names one).
    async fn introspection_url(&self) -> Result<String, OAuthError> {
        let introspector = self.introspector.as_ref();
        if let Some(url) = introspector.and_then(|i| i.config().url.clone()) {
            return Ok(url);
        }
        let metadata = self.metadata().await?;
        let mutual = introspector
            .is_some_and(|i| matches!(i.config().auth, ClientAuth::TlsClientAuth { .. }));
        mutual
            .then(|| metadata.mtls_introspection_endpoint.clone())
            .flatten()
            .or_else(|| metadata.introspection_endpoint.clone())
            .ok_or(OAuthError::NoEndpoint("introspection_endpoint"))
    }

    /// The `aud` of client assertions: as configured, else the token endpoint, else the
    /// issuer.
    async fn assertion_audience(&self, introspector: &Introspector) -> String {
        if let Some(aud) = &introspector.config().assertion_audience {
            return aud.clone();
        }
        if matches!(
            introspector.config().auth,
            ClientAuth::SecretBasic(_)
                | ClientAuth::SecretPost(_)
                | ClientAuth::TlsClientAuth { .. }
        ) {
            return String::new();
        }
        match self.metadata().await {
            Ok(m) => m
                .token_endpoint
                .clone()
                .unwrap_or_else(|| self.config.issuer.clone()),
            Err(_) => self.config.issuer.clone(),
        }
    }
}
