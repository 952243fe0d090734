//! The notification outbox: [`OutboxStore`] on the statements of `crate::sql::outbox`.

use std::sync::PoisonError;

use async_trait::async_trait;
use vnfm_store::prelude::*;
use vnfm_store::{
    EnqueueListener, NewOutboxRow, OutboxRow, OutboxSummary, Result, Timestamp, WaitingCallback,
};

use super::{Database, SqlStore};
use crate::sql::outbox;

#[async_trait]
impl<D: Database> OutboxStore for SqlStore<D> {
    fn on_enqueue(&self, listener: EnqueueListener) {
        *self.1.0.write().unwrap_or_else(PoisonError::into_inner) = Some(listener);
    }

    async fn enqueue(&self, rows: &[NewOutboxRow]) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let rows = outbox::encode(rows)?;
        in_notifying_transaction!(self, rows.len(), |tx| outbox::insert(tx, &rows).await).await
    }

    async fn outbox_due(
        &self,
        now: Timestamp,
        limit: u32,
        claim_owner: &str,
        claim_until: Timestamp,
    ) -> Result<Vec<OutboxRow>> {
        let owner = claim_owner.to_owned();
        in_transaction!(self, |tx| {
            outbox::claim_due(tx, now, limit, &owner, claim_until).await
        })
        .await?
        .decode()
    }

    async fn outbox_delivered(&self, id: i64, now: Timestamp) -> Result<()> {
        in_transaction!(self, |tx| outbox::delivered(tx, id, now).await).await
    }

    async fn outbox_waiting_callbacks(
        &self,
        later_than: Timestamp,
        limit: u32,
    ) -> Result<Vec<WaitingCallback>> {
        on_reader!(self, |c| outbox::waiting_callbacks(c, later_than, limit)
            .await)
    }

    async fn outbox_callback_answers(&self, callback_uri: &str, now: Timestamp) -> Result<u64> {
        let uri = callback_uri.to_owned();
        in_transaction!(self, |tx| outbox::callback_answers(tx, &uri, now).await).await
    }

    async fn outbox_retry(&self, id: i64, next_attempt_at: Timestamp, error: &str) -> Result<()> {
        let error = error.to_owned();
        in_transaction!(self, |tx| outbox::failed(
            tx,
            id,
            Some(next_attempt_at),
            &error
        )
        .await)
        .await
    }

    async fn outbox_dead(&self, id: i64, error: &str) -> Result<()> {
        let error = error.to_owned();
        in_transaction!(self, |tx| outbox::failed(tx, id, None, &error).await).await
    }

    async fn outbox_dead_rows(&self, after: Option<i64>, limit: u32) -> Result<Vec<OutboxRow>> {
        on_reader!(self, |c| outbox::rows_in(c, "dead", after, limit).await)
    }

    async fn outbox_pending_rows(&self, after: Option<i64>, limit: u32) -> Result<Vec<OutboxRow>> {
        on_reader!(self, |c| outbox::rows_in(c, "pending", after, limit).await)
    }

    async fn outbox_summary(&self) -> Result<Vec<OutboxSummary>> {
        on_reader!(self, |c| outbox::summary(c).await)
    }

    async fn outbox_redeliver(&self, id: i64, now: Timestamp) -> Result<()> {
        in_notifying_transaction!(self, 1, |tx| outbox::redeliver(tx, id, now).await).await
    }

    async fn outbox_discard(&self, id: i64) -> Result<()> {
        in_transaction!(self, |tx| outbox::discard(tx, id).await).await
    }
}
