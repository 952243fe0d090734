//! The notification outbox: rows written with the change they report, claimed, retried, dead-lettered.

use std::sync::Arc;

use super::Result;
use crate::model::{NewOutboxRow, OutboxRow, OutboxSummary, Timestamp, WaitingCallback};
use async_trait::async_trait;

/// What a store calls after a write that enqueued notifications has committed.
pub type EnqueueListener = Arc<dyn Fn() + Send + Sync>;

/// The notification outbox: rows written with the change they report, claimed, retried, dead-lettered. Part of [`crate::Store`].
#[async_trait]
pub trait OutboxStore: Send + Sync {
    /// Has `listener` called after every write of this store that enqueued notifications
    /// (in this process) has committed, so that a deliverer here sends them at once rather
    /// than at its next poll (another process's deliverer finds them by polling). A later
    /// call replaces the listener.
    fn on_enqueue(&self, listener: EnqueueListener);

    /// Enqueues notifications on their own (prefer the `notify`/`outbox` arguments of the
    /// writes they report, which enqueue atomically with the change).
    async fn enqueue(&self, rows: &[NewOutboxRow]) -> Result<()>;

    /// Claims up to `limit` pending rows due at `now` that no other sender has claimed (or
    /// whose claim ended before `now`), for `claim_owner` until `claim_until`, oldest first.
    /// Two processes never receive the same row while a claim is live; a sender that dies
    /// loses its claims at `claim_until` (delivery is at-least-once).
    ///
    /// Only the oldest pending row of each queue (subscription and
    /// [`crate::NewOutboxRow::ordering_key`]) is claimable: while it is claimed or waits for a retry,
    /// the rows behind it wait, so a queue is delivered in enqueue order. A dead row no longer
    /// holds its queue back.
    async fn outbox_due(
        &self,
        now: Timestamp,
        limit: u32,
        claim_owner: &str,
        claim_until: Timestamp,
    ) -> Result<Vec<OutboxRow>>;

    /// Removes a delivered row, and makes due at `now` every row to the same callback that
    /// waits for a retry after failed attempts (the subscriber answers again: its backlog
    /// goes at once, each queue still in order).
    async fn outbox_delivered(&self, id: i64, now: Timestamp) -> Result<()>;

    /// The callbacks that pending rows wait for after failed attempts, whose next attempt
    /// is later than `later_than` (their subscriber did not answer and the row is in
    /// back-off), each with one subscription of those rows; at most `limit`, ordered by
    /// callback URI. Reads only the rows scheduled after `later_than`.
    async fn outbox_waiting_callbacks(
        &self,
        later_than: Timestamp,
        limit: u32,
    ) -> Result<Vec<WaitingCallback>>;

    /// The subscriber at `callback_uri` answers again (a probe of its callback succeeded):
    /// makes due at `now` every row to it that waits for a retry after failed attempts, as
    /// [`OutboxStore::outbox_delivered`] does after a delivery. Returns how many rows.
    async fn outbox_callback_answers(&self, callback_uri: &str, now: Timestamp) -> Result<u64>;

    /// Records a failed attempt and schedules the next one; releases the claim.
    async fn outbox_retry(&self, id: i64, next_attempt_at: Timestamp, error: &str) -> Result<()>;

    /// Records the last failed attempt and marks the row dead (kept for inspection).
    async fn outbox_dead(&self, id: i64, error: &str) -> Result<()>;

    /// Dead rows, oldest first, after id `after`.
    async fn outbox_dead_rows(&self, after: Option<i64>, limit: u32) -> Result<Vec<OutboxRow>>;

    /// Pending rows (claimed or not), oldest first, after id `after`: the queues as they
    /// stand, for inspection.
    async fn outbox_pending_rows(&self, after: Option<i64>, limit: u32) -> Result<Vec<OutboxRow>>;

    /// The outbox counted by subscription and status, with the enqueue time of the oldest row
    /// of each: one aggregate query (`COUNT`, `MIN`), so its cost does not grow with the
    /// rows returned. Ordered by subscription, then pending before dead.
    async fn outbox_summary(&self) -> Result<Vec<OutboxSummary>>;

    /// Puts a dead row back in its queue: pending, due at `now`, unclaimed; its attempts and
    /// last error are kept. Being older than the rows behind it, it is the next one of its
    /// queue to be sent. [`crate::StoreError::NotFound`] if no dead row has this id.
    async fn outbox_redeliver(&self, id: i64, now: Timestamp) -> Result<()>;

    /// Deletes a dead row for good. [`crate::StoreError::NotFound`] if no dead row has this id.
    async fn outbox_discard(&self, id: i64) -> Result<()>;
}
