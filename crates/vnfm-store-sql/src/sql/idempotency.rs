//! Idempotency keys: one row per (scope, key), written with its request's first answer by
//! the transaction that creates its request's resource ([`attach`]), swept when expired; and
//! the [`IdempotencyStore`] of [`SqlStore`].
//!
//! The table is migration 0015's, with 0018's `response_etag`: `reserved_id` holds the
//! created resource's id, `state` is `COMPLETED` when the answer is written with the key and
//! `IN_FLIGHT` when it is not (the answer is made again from the resource), `locked_until` is
//! no longer used (0). The comments in the migration
//! still describe the design before this one (a row claimed in flight before its request
//! ran) and stay as they are: a migration's text, comments included, is checksummed by every
//! database that applied it, and a changed one is refused by them ("migration 15 was
//! previously applied but has been modified").

use async_trait::async_trait;

use super::{Arg, Cell, Col, SqlConn, columns};
use crate::database::{Database, SqlStore};
use vnfm_store::{
    Conflict, IdempotencyRecord, IdempotencyStore, PendingKey, RequestFingerprint, Result,
    StoreError, StoredResponse, Timestamp,
};

const COLUMNS: &str = "scope, idem_key, method, route, body_sha256, reserved_id, owner, \
     created_at, expires_at, response_status, response_location, \
     response_content_type, response_body, response_etag";
const COLS: [Col; 14] = [
    Col::Text,
    Col::Text,
    Col::Text,
    Col::Text,
    Col::Text,
    Col::Text,
    Col::Text,
    Col::Int,
    Col::Int,
    Col::OptInt,
    Col::OptText,
    Col::OptText,
    Col::OptBlob,
    Col::OptText,
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
        status,
        location,
        content_type,
        response_body,
        etag,
    ] = columns(row)?;
    let response = match status.opt_int()? {
        None => None,
        Some(s) => Some(StoredResponse {
            status: u16::try_from(s)
                .map_err(|_| StoreError::Backend(format!("stored HTTP status {s} is invalid")))?,
            location: location.opt_text()?,
            content_type: content_type.opt_text()?,
            body: response_body.opt_blob()?.unwrap_or_default(),
            etag: etag.opt_text()?,
        }),
    };
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
        response,
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

/// Writes a key with its resource and answer, or replaces the same key once it expired by its
/// request's `now` (`$15`): one statement, which changes no row when the key is taken.
const ATTACH: &str = "INSERT INTO idempotency_keys (scope, idem_key, method, route, body_sha256, \
     reserved_id, owner, created_at, expires_at, state, locked_until, response_status, \
     response_location, response_content_type, response_body, response_etag) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 0, $11, $12, $13, $14, $16) \
     ON CONFLICT (scope, idem_key) DO UPDATE SET method = excluded.method, \
     route = excluded.route, body_sha256 = excluded.body_sha256, \
     reserved_id = excluded.reserved_id, owner = excluded.owner, \
     created_at = excluded.created_at, expires_at = excluded.expires_at, \
     state = excluded.state, response_status = excluded.response_status, \
     response_location = excluded.response_location, \
     response_content_type = excluded.response_content_type, \
     response_body = excluded.response_body, response_etag = excluded.response_etag \
     WHERE idempotency_keys.expires_at <= $15";

/// In the transaction that creates `resource_id`: writes `key` with it and the request's
/// first `answer`, if it has one. If the key is taken (another request committed it; on
/// PostgreSQL this waits for that request's transaction), [`Conflict::KeyTaken`], which rolls
/// the whole transaction back.
pub(crate) async fn attach<C: SqlConn>(
    tx: &mut C,
    key: &PendingKey,
    resource_id: &str,
    answer: Option<&StoredResponse>,
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
        if answer.is_some() {
            "COMPLETED"
        } else {
            "IN_FLIGHT"
        }
        .into(),
        answer.map_or(Arg::NullInt, |a| i64::from(a.status).into()),
        answer.and_then(|a| a.location.as_deref()).into(),
        answer.and_then(|a| a.content_type.as_deref()).into(),
        answer.map(|a| a.body.as_slice()).into(),
        key.now.0.into(),
        answer.and_then(|a| a.etag.as_deref()).into(),
    ];
    if tx.execute(ATTACH, &args).await? == 1 {
        Ok(())
    } else {
        Err(StoreError::Conflict(Conflict::KeyTaken {
            key: key.key.clone(),
        }))
    }
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
