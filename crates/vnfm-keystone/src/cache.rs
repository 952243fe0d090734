//! The bounded cache of validated tokens: keyed by the SHA-256 of the token (the token itself
//! is never kept), an entry is used until the token expires but no longer than the
//! revalidation bound after Keystone last confirmed it (longer, up to a grace, while Keystone
//! does not answer); the least recently used entry goes when the cache is full.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use hashlink::LruCache;
use sha2::{Digest, Sha256};

use crate::identity::KeystoneIdentity;

/// How long after Keystone confirmed a token its validation still stands while Keystone does
/// not answer (keystonemiddleware's default `token_cache_time`, for which it does not ask
/// Keystone at all).
pub(crate) const STALE_GRACE: Duration = Duration::from_secs(300);

/// The cache key of a token.
pub(crate) type TokenKey = [u8; 32];

/// The key of `token`.
pub(crate) fn key(token: &str) -> TokenKey {
    Sha256::digest(token.as_bytes()).into()
}

/// What the cache knows about a token.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Lookup {
    /// Confirmed by Keystone within the revalidation bound, not expired.
    Fresh(Arc<KeystoneIdentity>),
    /// Known, but past its `expires_at`: refused without asking Keystone.
    Expired,
    /// Not known, or due for revalidation.
    Ask,
}

struct Entry {
    identity: Arc<KeystoneIdentity>,
    confirmed: Instant,
}

pub(crate) struct TokenCache {
    entries: Mutex<LruCache<TokenKey, Entry>>,
    revalidate_after: Duration,
}

impl TokenCache {
    pub(crate) fn new(capacity: usize, revalidate_after: Duration) -> TokenCache {
        TokenCache {
            entries: Mutex::new(LruCache::new(capacity.max(1))),
            revalidate_after,
        }
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, LruCache<TokenKey, Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn lookup(&self, key: &TokenKey, now: Instant, wall: SystemTime) -> Lookup {
        let mut entries = self.entries();
        let Some(entry) = entries.get(key) else {
            return Lookup::Ask;
        };
        if entry.identity.expires_at <= wall {
            entries.remove(key);
            return Lookup::Expired;
        }
        if now.saturating_duration_since(entry.confirmed) < self.revalidate_after {
            return Lookup::Fresh(entry.identity.clone());
        }
        Lookup::Ask
    }

    /// The identity of a token Keystone confirmed within [`STALE_GRACE`] and that has not
    /// expired, for when Keystone cannot be asked again.
    pub(crate) fn stale(
        &self,
        key: &TokenKey,
        now: Instant,
        wall: SystemTime,
    ) -> Option<(Arc<KeystoneIdentity>, Duration)> {
        let mut entries = self.entries();
        let entry = entries.get(key)?;
        let age = now.saturating_duration_since(entry.confirmed);
        (entry.identity.expires_at > wall && age < STALE_GRACE)
            .then(|| (entry.identity.clone(), age))
    }

    pub(crate) fn confirm(&self, key: TokenKey, identity: Arc<KeystoneIdentity>, now: Instant) {
        self.entries().insert(
            key,
            Entry {
                identity,
                confirmed: now,
            },
        );
    }

    pub(crate) fn forget(&self, key: &TokenKey) {
        self.entries().remove(key);
    }

    pub(crate) fn len(&self) -> usize {
        self.entries().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(expires_in: Duration) -> Arc<KeystoneIdentity> {
        Arc::new(KeystoneIdentity {
            user_id: "u".into(),
            user_name: "alice".into(),
            user_domain: None,
            project_id: Some("p".into()),
            project_name: None,
            project_domain: None,
            domain: None,
            system_scope: false,
            roles: vec!["member".into()],
            expires_at: SystemTime::now() + expires_in,
            is_admin_project: true,
        })
    }

    #[test]
    fn a_confirmed_token_stands_for_the_grace_while_keystone_does_not_answer() {
        let cache = TokenCache::new(10, Duration::from_secs(60));
        let t0 = Instant::now();
        let wall = SystemTime::now();
        let k = key("gAAAAA-token");
        assert_eq!(cache.stale(&k, t0, wall), None);
        let id = identity(Duration::from_secs(3600));
        cache.confirm(k, id.clone(), t0);
        let later = t0 + Duration::from_secs(120);
        assert_eq!(cache.lookup(&k, later, wall), Lookup::Ask);
        assert_eq!(
            cache.stale(&k, later, wall),
            Some((id, Duration::from_secs(120)))
        );
        assert_eq!(cache.stale(&k, t0 + STALE_GRACE, wall), None);
        // An expired token never stands.
        let gone = key("gAAAAA-expired");
        cache.confirm(gone, identity(Duration::from_secs(1)), t0);
        assert_eq!(
            cache.stale(&gone, later, wall + Duration::from_secs(2)),
            None
        );
    }

    #[test]
    fn entries_are_fresh_until_the_revalidation_bound() {
        let cache = TokenCache::new(10, Duration::from_secs(60));
        let t0 = Instant::now();
        let wall = SystemTime::now();
        let k = key("gAAAAA-token");
        assert_eq!(cache.lookup(&k, t0, wall), Lookup::Ask);
        let id = identity(Duration::from_secs(3600));
        cache.confirm(k, id.clone(), t0);
        assert_eq!(
            cache.lookup(&k, t0 + Duration::from_secs(59), wall),
            Lookup::Fresh(id)
        );
        assert_eq!(
            cache.lookup(&k, t0 + Duration::from_secs(60), wall),
            Lookup::Ask
        );
        cache.forget(&k);
        assert_eq!(cache.lookup(&k, t0, wall), Lookup::Ask);
    }

    #[test]
    fn an_expired_token_is_refused_and_dropped() {
        let cache = TokenCache::new(10, Duration::from_secs(60));
        let t0 = Instant::now();
        let k = key("t");
        cache.confirm(k, identity(Duration::from_secs(30)), t0);
        let later = SystemTime::now() + Duration::from_secs(31);
        assert_eq!(cache.lookup(&k, t0, later), Lookup::Expired);
        assert_eq!(cache.len(), 0);
    }

    #[test]
    fn the_size_is_bounded_and_the_least_recently_used_goes() {
        let cache = TokenCache::new(2, Duration::from_secs(60));
        let t0 = Instant::now();
        let wall = SystemTime::now();
        let id = identity(Duration::from_secs(3600));
        cache.confirm(key("a"), id.clone(), t0);
        cache.confirm(key("b"), id.clone(), t0);
        // Using `a` makes `b` the least recently used.
        assert!(matches!(
            cache.lookup(&key("a"), t0, wall),
            Lookup::Fresh(_)
        ));
        cache.confirm(key("c"), id, t0);
        assert_eq!(cache.len(), 2);
        assert_eq!(cache.lookup(&key("b"), t0, wall), Lookup::Ask);
        assert!(matches!(
            cache.lookup(&key("a"), t0, wall),
            Lookup::Fresh(_)
        ));
    }

    #[test]
    fn keys_are_digests_not_tokens() {
        let k = key("secret-token-value");
        assert_eq!(k.len(), 32);
        assert_ne!(&k[..], &b"secret-token-value"[..]);
        assert_eq!(k, key("secret-token-value"));
        assert_ne!(k, key("secret-token-valuf"));
    }
}
