//! Idempotency keys: claimed before a request runs, answered once, swept when expired.

use super::Result;
use crate::idempotency::{IdempotencyRecord, KeyClaim, KeyClaimed, StoredResponse};
use crate::model::Timestamp;
use async_trait::async_trait;

/// Idempotency keys (see [`crate::KeyClaim`]), unique per scope and key, across every process
/// sharing the database. Part of [`crate::Store`].
///
/// A request with a key claims it first ([`IdempotencyStore::claim_idempotency_key`]), in its
/// own transaction, so a second request with the key sees it in flight. The claim reserves
/// the id of what the request creates: the resource is committed with that id in its own
/// transaction, which is what tells, after a crash between that commit and the answer,
/// that the request took effect.
#[async_trait]
pub trait IdempotencyStore: Send + Sync {
    /// In one transaction: stores `claim` as a new in-flight key if `(scope, key)` is free or
    /// expired ([`KeyClaimed::New`]); takes over an in-flight key whose lock has passed and
    /// whose request has the same fingerprint, keeping its reserved id
    /// ([`KeyClaimed::TakenOver`]); otherwise changes nothing ([`KeyClaimed::Existing`]).
    async fn claim_idempotency_key(&self, claim: &KeyClaim) -> Result<KeyClaimed>;

    /// The key `key` of `scope`, expired or not.
    async fn get_idempotency_key(
        &self,
        scope: &str,
        key: &str,
    ) -> Result<Option<IdempotencyRecord>>;

    /// Records the key's first answer, if it has none yet (a later one is ignored: the first
    /// answer stays). `false` if the key is gone or was answered already.
    async fn complete_idempotency_key(
        &self,
        scope: &str,
        key: &str,
        response: &StoredResponse,
    ) -> Result<bool>;

    /// Ends `owner`'s hold of the in-flight key without an answer (its request failed in a way
    /// worth retrying), so the next request with it takes it over at once.
    async fn release_idempotency_key(&self, scope: &str, key: &str, owner: &str) -> Result<()>;

    /// Deletes the keys that expired at `now`; how many.
    async fn sweep_idempotency_keys(&self, now: Timestamp) -> Result<u64>;
}
