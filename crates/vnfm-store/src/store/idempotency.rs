//! Idempotency keys: written with the resource their request creates, answered again by their
//! caller, swept when expired.

use super::Result;
use crate::idempotency::IdempotencyRecord;
use crate::model::Timestamp;
use async_trait::async_trait;

/// Idempotency keys, unique per scope and key across every process sharing the database.
/// Part of [`crate::Store`].
///
/// A key is written by the transaction that creates its request's resource (the creating
/// methods ending in `_keyed` take it as [`crate::PendingKey`]), so it is committed exactly when the
/// resource is; a key committed by another request meanwhile refuses that write
/// ([`crate::Conflict::KeyTaken`]) and rolls it back.
#[async_trait]
pub trait IdempotencyStore: Send + Sync {
    /// The key `key` of `scope`, expired or not.
    async fn get_idempotency_key(
        &self,
        scope: &str,
        key: &str,
    ) -> Result<Option<IdempotencyRecord>>;

    /// Keeps `answer` (the caller's bytes, not read by the store) with the key `key` of
    /// `scope`, if the stored key is the one the attempt `owner` committed
    /// ([`crate::PendingKey::owner`]) and has no answer yet: whether it was kept (`false` also tells
    /// an attempt that it did not commit the key).
    async fn keep_idempotency_answer(
        &self,
        scope: &str,
        key: &str,
        owner: &str,
        answer: &[u8],
    ) -> Result<bool>;

    /// Deletes the keys that expired at `now`; how many.
    async fn sweep_idempotency_keys(&self, now: Timestamp) -> Result<u64>;
}
