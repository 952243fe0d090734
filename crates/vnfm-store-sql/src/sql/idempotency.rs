//! Idempotency keys: one row per (scope, key), claimed in flight, answered once, swept when
//! expired; and the [`IdempotencyStore`] of [`SqlStore`].

use async_trait::async_trait;

use super::{Arg, Cell, Col, SqlConn, columns};
use crate::database::{Database, SqlStore};
use vnfm_store::{
    IdempotencyRecord, IdempotencyStore, KeyClaim, KeyClaimed, RequestFingerprint, Result,
    StoreError, StoredResponse, Timestamp,
};

const COLUMNS: &str = "scope, idem_key, method, route, body_sha256, reserved_id, owner, \
     locked_until, created_at, expires_at, response_status, response_location, \
     response_content_type, response_body";
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
    Col::Int,
    Col::OptInt,
    Col::OptText,
    Col::OptText,
    Col::OptBlob,
];

fn record(row: Vec<Cell>) -> Result<IdempotencyRecord> {
    let [
        scope,
        key,
        method,
        route,
        body,
        reserved,
        owner,
        locked,
        created,
        expires,
        status,
        location,
        content_type,
        response_body,
    ] = columns(row)?;
    let response = match status.opt_int()? {
        None => None,
        Some(s) => Some(StoredResponse {
            status: u16::try_from(s)
                .map_err(|_| StoreError::Backend(format!("stored HTTP status {s} is invalid")))?,
            location: location.opt_text()?,
            content_type: content_type.opt_text()?,
            body: response_body.opt_blob()?.unwrap_or_default(),
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
        reserved_id: reserved.text()?,
        owner: owner.text()?,
        locked_until: Timestamp(locked.int()?),
        created_at: Timestamp(created.int()?),
        expires_at: Timestamp(expires.int()?),
        response,
    })
}

/// The key, locking its row (PostgreSQL) until the transaction ends.
async fn get<C: SqlConn>(
    conn: &mut C,
    scope: &str,
    key: &str,
    lock: bool,
) -> Result<Option<IdempotencyRecord>> {
    let suffix = if lock { C::DIALECT.for_update() } else { "" };
    conn.row(
        &format!(
            "SELECT {COLUMNS} FROM idempotency_keys WHERE scope = $1 AND idem_key = $2{suffix}"
        ),
        &[scope.into(), key.into()],
        &COLS,
    )
    .await?
    .map(record)
    .transpose()
}

fn claimed_record(c: &KeyClaim, reserved_id: String, created_at: Timestamp) -> IdempotencyRecord {
    IdempotencyRecord {
        scope: c.scope.clone(),
        key: c.key.clone(),
        fingerprint: c.fingerprint.clone(),
        reserved_id,
        owner: c.owner.clone(),
        locked_until: c.locked_until,
        created_at,
        expires_at: c.expires_at,
        response: None,
    }
}

/// The columns a claim writes, as `$1`..`$10` of its INSERT and of its UPDATE of an expired
/// key: scope, key, method, route, body hash, reserved id, owner, locked until, created, expires.
fn claim_args(c: &KeyClaim) -> [Arg<'_>; 10] {
    let f = &c.fingerprint;
    [
        c.scope.as_str().into(),
        c.key.as_str().into(),
        f.method.as_str().into(),
        f.route.as_str().into(),
        f.body_sha256.as_str().into(),
        c.reserved_id.as_str().into(),
        c.owner.as_str().into(),
        c.locked_until.0.into(),
        c.now.0.into(),
        c.expires_at.0.into(),
    ]
}

/// See [`IdempotencyStore::claim_idempotency_key`].
async fn claim<C: SqlConn>(tx: &mut C, c: &KeyClaim) -> Result<KeyClaimed> {
    let f = &c.fingerprint;
    for _ in 0..2 {
        let Some(found) = get(tx, &c.scope, &c.key, true).await? else {
            let inserted = tx
                .execute(
                    "INSERT INTO idempotency_keys (scope, idem_key, method, route, body_sha256, \
                     reserved_id, state, owner, locked_until, created_at, expires_at) \
                     VALUES ($1, $2, $3, $4, $5, $6, 'IN_FLIGHT', $7, $8, $9, $10) \
                     ON CONFLICT DO NOTHING",
                    &claim_args(c),
                )
                .await?;
            if inserted == 1 {
                return Ok(KeyClaimed::New(claimed_record(
                    c,
                    c.reserved_id.clone(),
                    c.now,
                )));
            }
            // Another replica inserted it meanwhile (PostgreSQL): read what it wrote.
            continue;
        };
        if found.expires_at <= c.now {
            tx.execute(
                "UPDATE idempotency_keys SET method = $3, route = $4, body_sha256 = $5, \
                 reserved_id = $6, state = 'IN_FLIGHT', owner = $7, locked_until = $8, \
                 created_at = $9, expires_at = $10, response_status = NULL, \
                 response_location = NULL, response_content_type = NULL, response_body = NULL \
                 WHERE scope = $1 AND idem_key = $2",
                &claim_args(c),
            )
            .await?;
            return Ok(KeyClaimed::New(claimed_record(
                c,
                c.reserved_id.clone(),
                c.now,
            )));
        }
        if found.response.is_none() && found.locked_until <= c.now && found.fingerprint == *f {
            tx.execute(
                "UPDATE idempotency_keys SET owner = $3, locked_until = $4 \
                 WHERE scope = $1 AND idem_key = $2",
                &[
                    c.scope.as_str().into(),
                    c.key.as_str().into(),
                    c.owner.as_str().into(),
                    c.locked_until.0.into(),
                ],
            )
            .await?;
            return Ok(KeyClaimed::TakenOver(IdempotencyRecord {
                owner: c.owner.clone(),
                locked_until: c.locked_until,
                ..found
            }));
        }
        return Ok(KeyClaimed::Existing(found));
    }
    Err(StoreError::Backend(format!(
        "idempotency key {:?} neither inserted nor found",
        c.key
    )))
}

#[async_trait]
impl<D: Database> IdempotencyStore for SqlStore<D> {
    async fn claim_idempotency_key(&self, claim: &KeyClaim) -> Result<KeyClaimed> {
        let claim = claim.clone();
        self.0
            .write(move |tx| Box::pin(async move { self::claim(tx, &claim).await }))
            .await
    }

    async fn get_idempotency_key(
        &self,
        scope: &str,
        key: &str,
    ) -> Result<Option<IdempotencyRecord>> {
        let mut conn = self.0.reader().await?;
        get(&mut *conn, scope, key, false).await
    }

    async fn complete_idempotency_key(
        &self,
        scope: &str,
        key: &str,
        response: &StoredResponse,
    ) -> Result<bool> {
        let (scope, key, r) = (scope.to_owned(), key.to_owned(), response.clone());
        self.0
            .write(move |tx| {
                Box::pin(async move {
                    let n = tx
                        .execute(
                            "UPDATE idempotency_keys SET state = 'COMPLETED', \
                             response_status = $3, response_location = $4, \
                             response_content_type = $5, response_body = $6 \
                             WHERE scope = $1 AND idem_key = $2 AND state = 'IN_FLIGHT'",
                            &[
                                scope.as_str().into(),
                                key.as_str().into(),
                                i64::from(r.status).into(),
                                r.location.as_deref().into(),
                                r.content_type.as_deref().into(),
                                Arg::Blob(&r.body),
                            ],
                        )
                        .await?;
                    Ok(n == 1)
                })
            })
            .await
    }

    async fn release_idempotency_key(&self, scope: &str, key: &str, owner: &str) -> Result<()> {
        let (scope, key, owner) = (scope.to_owned(), key.to_owned(), owner.to_owned());
        self.0
            .write(move |tx| {
                Box::pin(async move {
                    tx.execute(
                        "UPDATE idempotency_keys SET locked_until = 0 \
                         WHERE scope = $1 AND idem_key = $2 AND owner = $3 \
                         AND state = 'IN_FLIGHT'",
                        &[
                            scope.as_str().into(),
                            key.as_str().into(),
                            owner.as_str().into(),
                        ],
                    )
                    .await?;
                    Ok(())
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
