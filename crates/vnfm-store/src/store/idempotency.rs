//! Idempotency keys: written with the resource their request creates, answered once, swept
//! when expired.

use super::Result;
use crate::idempotency::IdempotencyRecord;
use crate::model::Timestamp;
use async_trait::async_trait;

/// Idempotency keys, unique per scope and key across every process sharing the database.
/// Part of [`crate::Store`].
///
/// A key is written by the transaction that creates its request's resource (see
/// [`crate::client_key`]), so it is committed exactly when the resource is, with the
/// request's answer when the request said how to make it from the resource.
#[async_trait]
pub trait IdempotencyStore: Send + Sync {
    /// The key `key` of `scope`, expired or not.
    async fn get_idempotency_key(
        &self,
        scope: &str,
        key: &str,
    ) -> Result<Option<IdempotencyRecord>>;

    /// Deletes the keys that expired at `now`; how many.
    async fn sweep_idempotency_keys(&self, now: Timestamp) -> Result<u64>;
}
