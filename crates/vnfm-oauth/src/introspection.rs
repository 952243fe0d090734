//! RFC 7662 token introspection: the request (with this server's client authentication, RFC
//! 6749 clause 2.3 and RFC 7523), the checks of the answer, and the bounded cache of answers.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use hashlink::LruCache;
use jsonwebtoken::{Algorithm, EncodingKey};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::config::{ClientAuth, IntrospectionConfig, OAuthConfig};
use crate::error::{OAuthError, Refusal, Step};
use crate::identity::{TokenIdentity, Verified, claim, instant};

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

/// One answer of the cache.
struct Entry {
    answer: Result<Arc<TokenIdentity>, Refusal>,
    until: Instant,
}

/// The introspection client and its cache of answers (keyed by the SHA-256 of the token; the
/// token itself is never kept).
pub(crate) struct Introspector {
    config: IntrospectionConfig,
    key: Option<AssertionKey>,
    cache: Mutex<LruCache<[u8; 32], Entry>>,
}

impl Introspector {
    pub(crate) fn new(config: IntrospectionConfig) -> Result<Introspector, OAuthError> {
        let key = match &config.auth {
            ClientAuth::PrivateKeyJwt { pem, .. } => Some(AssertionKey::from_pem(pem.expose())?),
            _ => None,
        };
        Ok(Introspector {
            cache: Mutex::new(LruCache::new(config.cache_capacity.max(1))),
            config,
            key,
        })
    }

    pub(crate) fn config(&self) -> &IntrospectionConfig {
        &self.config
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, LruCache<[u8; 32], Entry>> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The cached answer about the token with digest `key`, if still fresh.
    fn cached(&self, key: &[u8; 32]) -> Option<Result<Arc<TokenIdentity>, Refusal>> {
        let mut cache = self.cache();
        let entry = cache.get(key)?;
        if entry.until <= Instant::now() {
            cache.remove(key);
            return None;
        }
        let answer = entry.answer.clone();
        // An active token is never trusted past its expiry, whatever the cache time.
        if let Ok(identity) = &answer
            && identity.expires_at.is_some_and(|e| e <= SystemTime::now())
        {
            cache.remove(key);
            return Some(Err(Refusal::Expired));
        }
        Some(answer)
    }

    /// Number of answers kept.
    pub(crate) fn cached_answers(&self) -> usize {
        self.cache().len()
    }

    /// What the introspection endpoint `url` says about `token`, from the cache when it
    /// answered within the cache time. `assertion_audience` is the `aud` of client
    /// assertions.
    pub(crate) async fn introspect(
        &self,
        http: &reqwest::Client,
        url: &str,
        assertion_audience: &str,
        token: &str,
        config: &OAuthConfig,
    ) -> Result<Arc<TokenIdentity>, OAuthError> {
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(answer) = self.cached(&digest) {
            return answer.map_err(OAuthError::Invalid);
        }
        let doc = self.ask(http, url, assertion_audience, token).await?;
        let answer = judge(&doc, config);
        let ttl = match &answer {
            Ok(identity) => identity
                .expires_at
                .and_then(|e| e.duration_since(SystemTime::now()).ok())
                .map_or(self.config.cache_ttl, |left| {
                    left.min(self.config.cache_ttl)
                }),
            Err(_) => self.config.cache_ttl,
        };
        if !ttl.is_zero() {
            self.cache().insert(
                digest,
                Entry {
                    answer: answer.clone(),
                    until: Instant::now() + ttl,
                },
            );
        }
        answer.map_err(OAuthError::Invalid)
    }

    /// `POST url` with the token and this server's client authentication.
    async fn ask(
        &self,
        http: &reqwest::Client,
        url: &str,
        assertion_audience: &str,
        token: &str,
    ) -> Result<Value, OAuthError> {
        let client_id = self.config.client_id.as_str();
        let mut form: Vec<(&str, String)> = vec![
            ("token", token.to_owned()),
            ("token_type_hint", "access_token".to_owned()),
        ];
        let mut request = http.post(url).header("accept", "application/json");
        const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
        match &self.config.auth {
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
            // The certificate went with the TLS handshake (the HTTP client holds it).
            ClientAuth::TlsClientAuth { .. } => form.push(("client_id", client_id.to_owned())),
        }
        let doc = crate::http::json(Step::Introspection, url, request.form(&form)).await;
        if let Err(OAuthError::Status { status, .. }) = &doc
            && matches!(status, 400 | 401 | 403)
        {
            tracing::warn!(
                url,
                status,
                client_id,
                method = self.config.auth.method(),
                "the authorization server refused this server's client authentication at its introspection endpoint"
            );
        }
        doc
    }
}

/// The identity an introspection answer gives, or why the token is refused: inactive, of
/// another issuer, for another audience, expired or not yet valid (checked here too: the
/// answer is taken as it is, but what it says must hold).
fn judge(doc: &Value, config: &OAuthConfig) -> Result<Arc<TokenIdentity>, Refusal> {
    let Some(claims) = doc.as_object() else {
        return Err(Refusal::Inactive);
    };
    if claims.get("active") != Some(&Value::Bool(true)) {
        return Err(Refusal::Inactive);
    }
    if let Some(iss) = claims.get("iss")
        && iss.as_str() != Some(config.issuer.as_str())
    {
        return Err(Refusal::Issuer);
    }
    if let Some(aud) = claim(claims, "aud") {
        let ours = |a: &str| config.audiences.iter().any(|x| x == a);
        let fits = match aud {
            Value::String(a) => ours(a),
            Value::Array(all) => all.iter().filter_map(Value::as_str).any(ours),
            _ => false,
        };
        if !fits {
            return Err(Refusal::Audience);
        }
    }
    let now = SystemTime::now();
    if instant(claims, "exp").is_some_and(|exp| exp + config.leeway <= now) {
        return Err(Refusal::Expired);
    }
    if instant(claims, "nbf").is_some_and(|nbf| nbf > now + config.leeway) {
        return Err(Refusal::NotYetValid);
    }
    let claims: &Map<String, Value> = claims;
    Ok(Arc::new(TokenIdentity::from_claims(
        claims,
        &config.claims,
        Verified::Introspection,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> OAuthConfig {
        OAuthConfig::new("https://as.example/realms/nfv", "vnfm")
    }

    #[test]
    fn answers_are_judged_on_activity_issuer_audience_and_time() {
        let c = config();
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let ok = json!({"active": true, "iss": c.issuer, "aud": ["account", "vnfm"],
                        "exp": now + 60, "sub": "u1", "scope": "member"});
        let id = judge(&ok, &c).unwrap();
        assert_eq!(id.subject, "u1");
        assert_eq!(id.roles, ["member"]);
        assert_eq!(id.verified, Verified::Introspection);
        let cases = [
            (json!({"active": false}), Refusal::Inactive),
            (json!({"active": "true"}), Refusal::Inactive),
            (json!([]), Refusal::Inactive),
            (
                json!({"active": true, "iss": "https://other"}),
                Refusal::Issuer,
            ),
            (json!({"active": true, "aud": "account"}), Refusal::Audience),
            (json!({"active": true, "exp": now - 3600}), Refusal::Expired),
            (
                json!({"active": true, "nbf": now + 3600}),
                Refusal::NotYetValid,
            ),
        ];
        for (doc, want) in cases {
            assert_eq!(judge(&doc, &c).unwrap_err(), want, "{doc}");
        }
        // A bare answer (no iss, aud or exp) is the server's word.
        assert!(judge(&json!({"active": true, "client_id": "c"}), &c).is_ok());
    }

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
