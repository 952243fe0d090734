//! The notification outbox: rows written in the transaction of the change they report,
//! claimed by one sender at a time, retried and dead-lettered.

use vnfm_types::SubscriptionId;

use super::{Col, SqlConn, columns, from_json, limit_clause, now_ms, page_size_of, to_json};
use vnfm_store::StoreError;
use vnfm_store::{
    NewOutboxRow, OutboxRow, OutboxStatus, OutboxSummary, Timestamp, WaitingCallback,
};

const OUTBOX: &str = "outbox row";
const COLUMNS: &str = "id, subscription_id, callback_uri, payload, attempts, next_attempt_at, last_error, status, \
     traceparent";
const COLS: [Col; 9] = [
    Col::Int,
    Col::Text,
    Col::Text,
    Col::Text,
    Col::Int,
    Col::Int,
    Col::OptText,
    Col::Text,
    Col::OptText,
];

fn status(s: &str) -> OutboxStatus {
    if s == "dead" {
        OutboxStatus::Dead
    } else {
        OutboxStatus::Pending
    }
}

fn row_of(row: Vec<super::Cell>) -> Result<OutboxRow, StoreError> {
    let [
        id,
        subscription,
        callback,
        payload,
        attempts,
        next,
        last_error,
        state,
        traceparent,
    ] = columns(row)?;
    let id = id.int()?;
    Ok(OutboxRow {
        id,
        subscription_id: SubscriptionId(subscription.text()?),
        callback_uri: callback.text()?,
        payload: from_json(OUTBOX, &id.to_string(), &payload.text()?)?,
        attempts: attempts.int()?,
        next_attempt_at: Timestamp(next.int()?),
        last_error: last_error.opt_text()?,
        status: status(&state.text()?),
        traceparent: traceparent.opt_text()?,
    })
}

/// An outbox row to insert, its payload encoded: rows are encoded on the caller's task, before
/// the write, so that a single writer (SQLite's) spends its time on SQL.
#[derive(Debug)]
pub(crate) struct EncodedOutboxRow {
    subscription_id: String,
    callback_uri: String,
    payload: String,
    not_before: Timestamp,
    ordering_key: String,
    traceparent: Option<String>,
}

/// `rows`, encoded for [`insert`].
pub(crate) fn encode(rows: &[NewOutboxRow]) -> Result<Vec<EncodedOutboxRow>, StoreError> {
    rows.iter()
        .map(|r| {
            Ok(EncodedOutboxRow {
                subscription_id: r.subscription_id.0.clone(),
                callback_uri: r.callback_uri.clone(),
                payload: to_json("notification", &r.payload)?,
                not_before: r.not_before,
                ordering_key: r.ordering_key.clone(),
                traceparent: r.traceparent.clone(),
            })
        })
        .collect()
}

/// Inserts outbox rows.
pub(crate) async fn insert<C: SqlConn>(
    tx: &mut C,
    rows: &[EncodedOutboxRow],
) -> Result<(), StoreError> {
    let now = now_ms();
    for r in rows {
        tx.execute(
            "INSERT INTO outbox (subscription_id, callback_uri, payload, \
             next_attempt_at, created_at, ordering_key, traceparent) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
            &[
                r.subscription_id.as_str().into(),
                r.callback_uri.as_str().into(),
                r.payload.as_str().into(),
                r.not_before.0.into(),
                now.into(),
                r.ordering_key.as_str().into(),
                r.traceparent.as_deref().into(),
            ],
        )
        .await?;
    }
    Ok(())
}

/// Claims the due heads of their queues ([`vnfm_store::OutboxStore::outbox_due`]).
pub(crate) async fn claim_due<C: SqlConn>(
    tx: &mut C,
    now: Timestamp,
    limit: u32,
    claim_owner: &str,
    claim_until: Timestamp,
) -> Result<Claimed, StoreError> {
    let sql = format!(
        // Materialized so the locking subquery runs exactly once: the rows it locks are the
        // rows updated.
        "WITH due AS MATERIALIZED (\
         SELECT o.id AS due_id FROM outbox o WHERE o.status = 'pending' \
         AND o.next_attempt_at <= $3 AND (o.claim_until IS NULL OR o.claim_until < $3) \
         AND NOT EXISTS (SELECT 1 FROM outbox e WHERE e.status = 'pending' \
         AND e.subscription_id = o.subscription_id \
         AND e.ordering_key = o.ordering_key AND e.id < o.id) \
         ORDER BY o.next_attempt_at, o.id{}{}) \
         UPDATE outbox SET claim_owner = $1, claim_until = $2 \
         FROM due WHERE id = due.due_id RETURNING {COLUMNS}",
        limit_clause(i64::from(limit)),
        C::DIALECT.skip_locked()
    );
    let rows = tx
        .rows(
            &sql,
            &[claim_owner.into(), claim_until.0.into(), now.0.into()],
            &COLS,
        )
        .await?;
    Ok(Claimed(rows))
}

/// Rows [`claim_due`] claimed, as the database returned them: decoded ([`Claimed::decode`])
/// after the write, off the writer.
pub(crate) struct Claimed(Vec<Vec<super::Cell>>);

impl Claimed {
    /// The claimed rows, in delivery order.
    pub(crate) fn decode(self) -> Result<Vec<OutboxRow>, StoreError> {
        let mut rows = self
            .0
            .into_iter()
            .map(row_of)
            .collect::<Result<Vec<_>, _>>()?;
        rows.sort_by_key(|r| (r.next_attempt_at, r.id));
        Ok(rows)
    }
}

/// Runs a statement on the row `id`, [`StoreError::NotFound`] (as `what`) if none matched.
pub(crate) async fn change<C: SqlConn>(
    tx: &mut C,
    what: &'static str,
    sql: &str,
    args: &[super::Arg<'_>],
    id: i64,
) -> Result<(), StoreError> {
    if tx.execute(sql, args).await? == 0 {
        return Err(StoreError::NotFound {
            kind: what,
            id: id.to_string(),
        });
    }
    Ok(())
}

/// Makes due at `$1` the rows waiting for a retry after failed attempts whose callback is
/// the one the caller appends (`= ...`): the subscriber answers again.
const DUE_AGAIN: &str = "UPDATE outbox SET next_attempt_at = $1 \
     WHERE status = 'pending' AND next_attempt_at > $1 AND attempts > 0 AND callback_uri";

/// Removes a delivered row. Its callback answers again, so the rows to the same callback
/// that wait for a retry after failed attempts (the heads of its other queues, each on its
/// own back-off) become due at `now`: a subscriber back after an outage gets its backlog within
/// seconds of the first delivery that succeeds, not at each queue's next back-off. The
/// statement reads only rows scheduled later than now (the `outbox_pending` index range).
pub(crate) async fn delivered<C: SqlConn>(
    tx: &mut C,
    id: i64,
    now: Timestamp,
) -> Result<(), StoreError> {
    tx.execute(
        &format!("{DUE_AGAIN} = (SELECT callback_uri FROM outbox WHERE id = $2)"),
        &[now.0.into(), id.into()],
    )
    .await?;
    change(
        tx,
        OUTBOX,
        "DELETE FROM outbox WHERE id = $1",
        &[id.into()],
        id,
    )
    .await
}

/// A probe found the subscriber at `callback_uri` answering: its rows waiting for a retry
/// become due at `now` (see [`delivered`]). How many did.
pub(crate) async fn callback_answers<C: SqlConn>(
    tx: &mut C,
    callback_uri: &str,
    now: Timestamp,
) -> Result<u64, StoreError> {
    let n = tx
        .execute(
            &format!("{DUE_AGAIN} = $2"),
            &[now.0.into(), callback_uri.into()],
        )
        .await?;
    Ok(n)
}

/// The callbacks of rows in back-off after failed attempts, next tried after `later_than`
/// (the `outbox_pending` index range), each with its smallest subscription id.
pub(crate) async fn waiting_callbacks<C: SqlConn>(
    conn: &mut C,
    later_than: Timestamp,
    limit: u32,
) -> Result<Vec<WaitingCallback>, StoreError> {
    let sql = format!(
        "SELECT callback_uri, MIN(subscription_id) FROM outbox \
         WHERE status = 'pending' AND next_attempt_at > $1 AND attempts > 0 \
         GROUP BY callback_uri ORDER BY callback_uri{}",
        limit_clause(page_size_of(limit))
    );
    conn.rows(&sql, &[later_than.0.into()], &[Col::Text, Col::Text])
        .await?
        .into_iter()
        .map(|row| {
            let [callback, subscription] = columns(row)?;
            Ok(WaitingCallback {
                callback_uri: callback.text()?,
                subscription_id: SubscriptionId(subscription.text()?),
            })
        })
        .collect()
}

/// Records a failed attempt: retried at `next` (`Some`), or dead (`None`).
pub(crate) async fn failed<C: SqlConn>(
    tx: &mut C,
    id: i64,
    next: Option<Timestamp>,
    error: &str,
) -> Result<(), StoreError> {
    match next {
        Some(next) => {
            change(
                tx,
                "pending outbox row",
                "UPDATE outbox SET attempts = attempts + 1, next_attempt_at = $1, \
                 last_error = $2, claim_owner = NULL, claim_until = NULL \
                 WHERE id = $3 AND status = 'pending'",
                &[next.0.into(), error.into(), id.into()],
                id,
            )
            .await
        }
        None => {
            change(
                tx,
                "pending outbox row",
                "UPDATE outbox SET attempts = attempts + 1, status = 'dead', \
                 last_error = $1, claim_owner = NULL, claim_until = NULL \
                 WHERE id = $2 AND status = 'pending'",
                &[error.into(), id.into()],
                id,
            )
            .await
        }
    }
}

/// Puts a dead row back at the head of its queue.
pub(crate) async fn redeliver<C: SqlConn>(
    tx: &mut C,
    id: i64,
    now: Timestamp,
) -> Result<(), StoreError> {
    change(
        tx,
        "dead outbox row",
        "UPDATE outbox SET status = 'pending', next_attempt_at = $1, \
         claim_owner = NULL, claim_until = NULL WHERE id = $2 AND status = 'dead'",
        &[now.0.into(), id.into()],
        id,
    )
    .await
}

/// Deletes a dead row.
pub(crate) async fn discard<C: SqlConn>(tx: &mut C, id: i64) -> Result<(), StoreError> {
    change(
        tx,
        "dead outbox row",
        "DELETE FROM outbox WHERE id = $1 AND status = 'dead'",
        &[id.into()],
        id,
    )
    .await
}

/// Rows in `status` (`pending` or `dead`), oldest first, after id `after`.
pub(crate) async fn rows_in<C: SqlConn>(
    conn: &mut C,
    status: &str,
    after: Option<i64>,
    limit: u32,
) -> Result<Vec<OutboxRow>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM outbox WHERE status = $1 AND id > $2 ORDER BY id{}",
        limit_clause(page_size_of(limit))
    );
    conn.rows(
        &sql,
        &[status.into(), after.unwrap_or(i64::MIN).into()],
        &COLS,
    )
    .await?
    .into_iter()
    .map(row_of)
    .collect()
}

/// The outbox counted by subscription and status.
pub(crate) async fn summary<C: SqlConn>(conn: &mut C) -> Result<Vec<OutboxSummary>, StoreError> {
    conn.rows(
        "SELECT subscription_id, status, COUNT(*), MIN(created_at) FROM outbox \
         GROUP BY subscription_id, status ORDER BY subscription_id, status DESC",
        &[],
        &[Col::Text, Col::Text, Col::Int, Col::Int],
    )
    .await?
    .into_iter()
    .map(|row| {
        let [subscription, state, rows, oldest] = columns(row)?;
        Ok(OutboxSummary {
            subscription_id: SubscriptionId(subscription.text()?),
            status: status(&state.text()?),
            rows: rows.int()?,
            oldest: Timestamp(oldest.int()?),
        })
    })
    .collect()
}
