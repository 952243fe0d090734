//! Idempotency keys: written with the resource their request creates, answered once, swept
//! when expired.

use super::Result;
use crate::idempotency::{IdempotencyRecord, PendingKey, StoredResponse};
use crate::model::Timestamp;
use async_trait::async_trait;

/// Idempotency keys, unique per scope and key across every process sharing the database.
/// Part of [`crate::Store`].
///
/// A key is written by the transaction that creates its request's resource (see
/// [`crate::client_key`]), so it is committed exactly when the resource is; the request's
/// answer is kept afterwards ([`IdempotencyStore::keep_idempotency_answer`]), also for a
/// request that created nothing.
#[async_trait]
pub trait IdempotencyStore: Send + Sync {
    /// The key `key` of `scope`, expired or not.
    async fn get_idempotency_key(
        &self,
        scope: &str,
        key: &str,
    ) -> Result<Option<IdempotencyRecord>>;

    /// Keeps `response` as the first answer of `key`: on the key its request's resource
    /// committed, or as a new key when the request created nothing (an expired key is
    /// replaced). A key answered already keeps its first answer (`false`).
    async fn keep_idempotency_answer(
        &self,
        key: &PendingKey,
        response: &StoredResponse,
    ) -> Result<bool>;

    /// Deletes the keys that expired at `now`; how many.
    async fn sweep_idempotency_keys(&self, now: Timestamp) -> Result<u64>;
}
