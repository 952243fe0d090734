//! RFC 7662 token introspection: the request (with this server's client authentication, RFC
//! 6749 clause 2.3 and RFC 7523), the checks of the answer, and the bounded cache of answers.

use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use hashlink::LruCache;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::client_auth::ClientAuthenticator;
use crate::config::{IntrospectionConfig, OAuthConfig};
use crate::error::{OAuthError, Refusal, Step};
use crate::identity::{TokenIdentity, Verified, claim, instant};

/// One answer of the cache.
struct Entry {
    answer: Result<Arc<TokenIdentity>, Refusal>,
    until: Instant,
}

/// The introspection client and its cache of answers (keyed by the SHA-256 of the token; the
/// token itself is never kept).
pub(crate) struct Introspector {
    config: IntrospectionConfig,
    client: ClientAuthenticator,
    cache: Mutex<LruCache<[u8; 32], Entry>>,
}

impl Introspector {
    pub(crate) fn new(config: IntrospectionConfig) -> Result<Introspector, OAuthError> {
        let client = ClientAuthenticator::new(config.client_id.clone(), config.auth.clone())?;
        Ok(Introspector {
            cache: Mutex::new(LruCache::new(config.cache_capacity.max(1))),
            config,
            client,
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
        let request = http.post(url).header("accept", "application/json");
        let request = self
            .client
            .authenticate(request, &mut form, assertion_audience)?;
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
    use std::time::UNIX_EPOCH;

    use serde_json::json;

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
}
