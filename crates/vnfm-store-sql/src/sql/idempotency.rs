//! Idempotency keys: one row per (scope, key), written by the transaction that creates its
//! request's resource ([`attach`]), with what the caller keeps of its first answer added after
//! ([`keep_answer`]), swept when expired; and the [`IdempotencyStore`] of [`SqlStore`].
//!
//! The table is migration 0015's, with 0019's `kept_answer`: `reserved_id` holds the created
//! resource's id, `state` is `COMPLETED` once an answer is kept and `IN_FLIGHT` before,
//! `locked_until` is no longer used (0), and the `response_*` columns (0015, 0018) of keys
//! written before 0019 are no longer read. The comments in the migration
//! still describe the design before this one (a row claimed in flight before its request
//! ran) and stay as they are: a migration's text, comments included, is checksummed by every
//! database that applied it, and a changed one is refused by them ("migration 15 was
//! previously applied but has been modified").

use async_trait::async_trait;

use super::{Cell, Col, SqlConn, columns};
use crate::database::{Database, SqlStore};
use vnfm_store::{
    Conflict, IdempotencyRecord, IdempotencyStore, PendingKey, RequestFingerprint, Result,
    StoreError, Timestamp,
};

const COLUMNS: &str = "scope, idem_key, method, route, body_sha256, reserved_id, owner, \
     created_at, expires_at, kept_answer";
const COLS: [Col; 10] = [
    Col::Text,
    Col::Text,
    Col::Text,
    Col::Text,
    Col::Text,
    Col::Text,
    Col::Text,
    Col::Int,
    Col::Int,
    Col::OptBlob,
];

fn record(row: Vec<Cell>) -> Result<IdempotencyRecord> {
    let [
        scope,
        key,
        method,
        route,
        body,
        resource,
        owner,
        created,
        expires,
        kept_answer,
    ] = columns(row)?;
    Ok(IdempotencyRecord {
        scope: scope.text()?,
        key: key.text()?,
        fingerprint: RequestFingerprint {
            method: method.text()?,
            route: route.text()?,
            body_sha256: body.text()?,
        },
        resource_id: resource.text()?,
        owner: owner.text()?,
        created_at: Timestamp(created.int()?),
        expires_at: Timestamp(expires.int()?),
        kept_answer: kept_answer.opt_blob()?,
    })
}

/// The key, expired or not.
async fn get<C: SqlConn>(
    conn: &mut C,
    scope: &str,
    key: &str,
) -> Result<Option<IdempotencyRecord>> {
    conn.row(
        &format!("SELECT {COLUMNS} FROM idempotency_keys WHERE scope = $1 AND idem_key = $2"),
        &[scope.into(), key.into()],
        &COLS,
    )
    .await?
    .map(record)
    .transpose()
}

/// Writes a key with its resource, or replaces the same key once it expired by its request's
/// `now` (`$8`): one statement, which changes no row when the key is taken. The answer
/// columns are emptied: an expired key's answer is not the new request's.
const ATTACH: &str = "INSERT INTO idempotency_keys (scope, idem_key, method, route, body_sha256, \
     reserved_id, owner, created_at, expires_at, state, locked_until) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'IN_FLIGHT', 0) \
     ON CONFLICT (scope, idem_key) DO UPDATE SET method = excluded.method, \
     route = excluded.route, body_sha256 = excluded.body_sha256, \
     reserved_id = excluded.reserved_id, owner = excluded.owner, \
     created_at = excluded.created_at, expires_at = excluded.expires_at, \
     state = excluded.state, response_status = NULL, response_location = NULL, \
     response_content_type = NULL, response_body = NULL, response_etag = NULL, \
     kept_answer = NULL \
     WHERE idempotency_keys.expires_at <= excluded.created_at";

/// In the transaction that creates `resource_id`: writes `key` with it. If the key is taken
/// (another request committed it; on PostgreSQL this waits for that request's transaction),
/// [`Conflict::KeyTaken`], which rolls the whole transaction back.
pub(crate) async fn attach<C: SqlConn>(
    tx: &mut C,
    key: &PendingKey,
    resource_id: &str,
) -> Result<()> {
    let f = &key.fingerprint;
    let args = [
        key.scope.as_str().into(),
        key.key.as_str().into(),
        f.method.as_str().into(),
        f.route.as_str().into(),
        f.body_sha256.as_str().into(),
        resource_id.into(),
        key.owner.as_str().into(),
        key.now.0.into(),
        key.expires_at.0.into(),
    ];
    if tx.execute(ATTACH, &args).await? == 1 {
        Ok(())
    } else {
        Err(StoreError::Conflict(Conflict::KeyTaken {
            key: key.key.clone(),
        }))
    }
}

/// Keeps `answer` with the key `key` of `scope`, if the attempt `owner` wrote its row and it
/// keeps no answer yet: whether it did.
async fn keep_answer<C: SqlConn>(
    tx: &mut C,
    [scope, key, owner]: [&str; 3],
    answer: &[u8],
) -> Result<bool> {
    let changed = tx
        .execute(
            "UPDATE idempotency_keys SET kept_answer = $1, state = 'COMPLETED' \
             WHERE scope = $2 AND idem_key = $3 AND owner = $4 AND kept_answer IS NULL",
            &[answer.into(), scope.into(), key.into(), owner.into()],
        )
        .await?;
    Ok(changed == 1)
}

#[async_trait]
impl<D: Database> IdempotencyStore for SqlStore<D> {
    async fn get_idempotency_key(
        &self,
        scope: &str,
        key: &str,
    ) -> Result<Option<IdempotencyRecord>> {
        let mut conn = self.0.reader().await?;
        get(&mut *conn, scope, key).await
    }

    async fn keep_idempotency_answer(
        &self,
        scope: &str,
        key: &str,
        owner: &str,
        answer: &[u8],
    ) -> Result<bool> {
        let ids = [scope.to_owned(), key.to_owned(), owner.to_owned()];
        let answer = answer.to_vec();
        self.0
            .write(move |tx| {
                Box::pin(async move {
                    let [scope, key, owner] = &ids;
                    keep_answer(tx, [scope, key, owner], &answer).await
                })
            })
            .await
    }

    async fn sweep_idempotency_keys(&self, now: Timestamp) -> Result<u64> {
        self.0
            .write(move |tx| {
                Box::pin(async move {
                    Ok(tx
                        .execute(
                            "DELETE FROM idempotency_keys WHERE expires_at <= $1",
                            &[now.0.into()],
                        )
                        .await?)
                })
            })
            .await
    }
}
