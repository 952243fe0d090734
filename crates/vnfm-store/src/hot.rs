//! The statements on the lifecycle's hot path, written once against [`SqlConn`] so each
//! backend runs them its fastest way: the write transactions (creating a VNF identifier,
//! starting an operation, recording a step) and the reads the runner makes on every operation
//! (instance, occurrence, op-occ data, VIMs an instance registered). PostgreSQL runs them
//! statement by statement through sqlx; SQLite on connections the store drives through the C
//! API on the caller's thread, with no hand-over to a connection thread (see
//! `sqlite_direct`).
//!
//! Statements use `$n` placeholders numbered from 1, which both backends accept.

use std::collections::BTreeSet;
use std::future::Future;

use serde_json::Value;
use vnfm_types::{
    LcmOperationStateType, VimId, VnfInstance, VnfInstanceId, VnfLcmOpOcc, VnfLcmOpOccId,
};

use crate::error::{Conflict, StoreError};
use crate::model::{
    Lease, NewOutboxRow, StepRecord, StepWritten, Version, VimRecord, enum_str, parse_state,
    state_str,
};
use crate::sql::{from_json, now_ms, to_json, vim_ids};

const INSTANCE: &str = "VNF instance";
const OP_OCC: &str = "op-occ";

/// A statement argument.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Arg<'a> {
    Text(&'a str),
    Int(i64),
    Null,
}

impl<'a> From<&'a str> for Arg<'a> {
    fn from(s: &'a str) -> Self {
        Arg::Text(s)
    }
}

impl From<i64> for Arg<'_> {
    fn from(i: i64) -> Self {
        Arg::Int(i)
    }
}

impl<'a> From<Option<&'a str>> for Arg<'a> {
    fn from(s: Option<&'a str>) -> Self {
        s.map_or(Arg::Null, Arg::Text)
    }
}

/// The type a result column is read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Col {
    Int,
    Text,
    /// Text or NULL.
    OptText,
    /// Bytes.
    Blob,
}

/// A result value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cell {
    Int(i64),
    Text(String),
    Blob(Vec<u8>),
    Null,
}

impl Cell {
    fn int(&self) -> Result<i64, StoreError> {
        match self {
            Cell::Int(i) => Ok(*i),
            other => Err(StoreError::Backend(format!(
                "expected an integer column, got {other:?}"
            ))),
        }
    }

    fn text(self) -> Result<String, StoreError> {
        match self {
            Cell::Text(s) => Ok(s),
            other => Err(StoreError::Backend(format!(
                "expected a text column, got {other:?}"
            ))),
        }
    }

    fn opt_text(self) -> Result<Option<String>, StoreError> {
        match self {
            Cell::Null => Ok(None),
            other => other.text().map(Some),
        }
    }

    fn blob(self) -> Result<Vec<u8>, StoreError> {
        match self {
            Cell::Blob(b) => Ok(b),
            other => Err(StoreError::Backend(format!(
                "expected a blob column, got {other:?}"
            ))),
        }
    }
}

/// A database error as the hot path needs to tell them apart.
#[derive(Debug)]
pub(crate) struct DbError {
    /// A unique constraint or primary key was violated.
    pub unique: bool,
    /// The backend's message (with its code).
    pub message: String,
}

impl From<DbError> for StoreError {
    fn from(e: DbError) -> Self {
        StoreError::Backend(e.message)
    }
}

/// A connection, or an open transaction on one, that the hot path's statements run on. A
/// transaction dropped without commit rolls back.
pub(crate) trait SqlConn: Send {
    /// Whether `SELECT ... FOR UPDATE` locks rows (PostgreSQL); SQLite's write transaction
    /// already holds the database's write lock.
    const FOR_UPDATE: bool;

    /// Runs a statement; the number of rows it changed.
    fn execute(
        &mut self,
        sql: &'static str,
        args: &[Arg<'_>],
    ) -> impl Future<Output = Result<u64, DbError>> + Send;

    /// Runs a statement that yields at most one row (a key lookup, `RETURNING`); that row,
    /// read as `cols`.
    fn row(
        &mut self,
        sql: &'static str,
        args: &[Arg<'_>],
        cols: &[Col],
    ) -> impl Future<Output = Result<Option<Vec<Cell>>, DbError>> + Send {
        async move { Ok(self.rows(sql, args, cols).await?.into_iter().next()) }
    }

    /// Runs a statement; all its rows, read as `cols`.
    fn rows(
        &mut self,
        sql: &'static str,
        args: &[Arg<'_>],
        cols: &[Col],
    ) -> impl Future<Output = Result<Vec<Vec<Cell>>, DbError>> + Send;
}

/// Why [`start_operation`] did not insert the occurrence.
pub(crate) enum StartRefused {
    /// A store error (not found, busy instance, backend failure).
    Store(StoreError),
    /// The insert hit a unique constraint: a concurrent start took the instance, or the
    /// op-occ id exists. The transaction is unusable (PostgreSQL); the caller looks outside it.
    Raced,
}

impl From<StoreError> for StartRefused {
    fn from(e: StoreError) -> Self {
        StartRefused::Store(e)
    }
}

impl From<DbError> for StartRefused {
    fn from(e: DbError) -> Self {
        StartRefused::Store(e.into())
    }
}

fn columns<const N: usize>(row: Vec<Cell>) -> Result<[Cell; N], StoreError> {
    let n = row.len();
    <[Cell; N]>::try_from(row)
        .map_err(|_| StoreError::Backend(format!("expected {N} columns, got {n}")))
}

fn parsed_state(id: &str, state: &str) -> Result<LcmOperationStateType, StoreError> {
    parse_state(state).ok_or_else(|| StoreError::Corrupt {
        kind: OP_OCC,
        id: id.to_owned(),
        reason: format!("unknown state {state:?}"),
    })
}

/// Inserts outbox rows.
pub(crate) async fn insert_outbox<T: SqlConn>(
    tx: &mut T,
    rows: &[NewOutboxRow],
) -> Result<(), StoreError> {
    let now = now_ms();
    for r in rows {
        let payload = to_json("notification", &r.payload)?;
        tx.execute(
            "INSERT INTO outbox (subscription_id, callback_uri, payload, \
             next_attempt_at, created_at, ordering_key) \
             VALUES ($1, $2, $3, $4, $5, $6)",
            &[
                r.subscription_id.as_str().into(),
                r.callback_uri.as_str().into(),
                payload.as_str().into(),
                r.not_before.0.into(),
                now.into(),
                r.ordering_key.as_str().into(),
            ],
        )
        .await?;
    }
    Ok(())
}

/// Brings the VIM index rows of an instance in line with its document (`fresh`: it has none
/// yet). Rows that stay are not rewritten: every row written dirties the index's pages, which
/// the commit then writes out.
async fn write_instance_vims<T: SqlConn>(
    tx: &mut T,
    instance: &VnfInstance,
    fresh: bool,
) -> Result<(), StoreError> {
    let wanted: BTreeSet<String> = vim_ids(instance).into_iter().collect();
    let current: BTreeSet<String> = if fresh {
        BTreeSet::new()
    } else {
        tx.rows(
            "SELECT vim_id FROM instance_vims WHERE instance_id = $1",
            &[instance.id.as_str().into()],
            &[Col::Text],
        )
        .await?
        .into_iter()
        .map(|row| {
            let [vim] = columns(row)?;
            vim.text()
        })
        .collect::<Result<_, StoreError>>()?
    };
    for gone in current.difference(&wanted) {
        tx.execute(
            "DELETE FROM instance_vims WHERE instance_id = $1 AND vim_id = $2",
            &[instance.id.as_str().into(), gone.as_str().into()],
        )
        .await?;
    }
    for new in wanted.difference(&current) {
        tx.execute(
            "INSERT INTO instance_vims (vim_id, instance_id) VALUES ($1, $2)",
            &[new.as_str().into(), instance.id.as_str().into()],
        )
        .await?;
    }
    Ok(())
}

/// Version of the instance, locking its row where the backend can.
async fn instance_version<T: SqlConn>(tx: &mut T, id: &str) -> Result<Option<Version>, DbError> {
    let sql = if T::FOR_UPDATE {
        "SELECT version FROM vnf_instances WHERE id = $1 FOR UPDATE"
    } else {
        "SELECT version FROM vnf_instances WHERE id = $1"
    };
    Ok(tx
        .row(sql, &[id.into()], &[Col::Int])
        .await?
        .and_then(|r| match r.first() {
            Some(Cell::Int(v)) => Some(Version(*v)),
            _ => None,
        }))
}

/// Inserts a new instance at [`Version::FIRST`] with its VIM index and creation notifications.
pub(crate) async fn create_instance<T: SqlConn>(
    tx: &mut T,
    instance: &VnfInstance,
    notify: &[NewOutboxRow],
) -> Result<Version, StoreError> {
    let doc = to_json(INSTANCE, instance)?;
    let now = now_ms();
    let done = tx
        .execute(
            "INSERT INTO vnf_instances (id, version, vnfd_id, vnf_provider, \
             vnf_product_name, instantiation_state, vnf_instance_name, doc, \
             created_at, updated_at) VALUES ($1, 1, $2, $3, $4, $5, $6, $7, $8, $8) \
             ON CONFLICT (id) DO NOTHING",
            &[
                instance.id.as_str().into(),
                instance.vnfd_id.as_str().into(),
                instance.vnf_provider.as_str().into(),
                instance.vnf_product_name.as_str().into(),
                enum_str(&instance.instantiation_state).as_str().into(),
                instance.vnf_instance_name.as_deref().into(),
                doc.as_str().into(),
                now.into(),
            ],
        )
        .await?;
    if done == 0 {
        return Err(StoreError::Conflict(Conflict::AlreadyExists {
            kind: INSTANCE,
            id: instance.id.0.clone(),
        }));
    }
    write_instance_vims(tx, instance, true).await?;
    insert_outbox(tx, notify).await?;
    Ok(Version::FIRST)
}

/// Compare-and-swap of an instance document. The indexed columns are written only when they
/// change (SQLite rewrites the entries of every index whose column an `UPDATE` sets, changed or
/// not, and each rewritten entry dirties a page the commit writes out).
pub(crate) async fn update_instance<T: SqlConn>(
    tx: &mut T,
    instance: &VnfInstance,
    expected: Version,
) -> Result<Version, StoreError> {
    let doc = to_json(INSTANCE, instance)?;
    let id = instance.id.as_str();
    let row = tx
        .row(
            "UPDATE vnf_instances SET version = version + 1, doc = $3, updated_at = $4 \
             WHERE id = $1 AND version = $2 RETURNING version, vnfd_id, vnf_provider, \
             vnf_product_name, instantiation_state, vnf_instance_name",
            &[
                id.into(),
                expected.0.into(),
                doc.as_str().into(),
                now_ms().into(),
            ],
            &[
                Col::Int,
                Col::Text,
                Col::Text,
                Col::Text,
                Col::Text,
                Col::OptText,
            ],
        )
        .await?;
    let Some(row) = row else {
        let found = instance_version(tx, id).await?;
        return Err(match found {
            None => StoreError::NotFound {
                kind: INSTANCE,
                id: instance.id.0.clone(),
            },
            Some(found) => StoreError::VersionMismatch {
                kind: INSTANCE,
                id: instance.id.0.clone(),
                expected,
                found,
            },
        });
    };
    let [version, vnfd_id, provider, product, state, name] = columns(row)?;
    let state_now = enum_str(&instance.instantiation_state);
    let changes: [(&'static str, bool, Arg<'_>); 5] = [
        (
            "UPDATE vnf_instances SET vnfd_id = $2 WHERE id = $1",
            vnfd_id.text()? != instance.vnfd_id.as_str(),
            instance.vnfd_id.as_str().into(),
        ),
        (
            "UPDATE vnf_instances SET vnf_provider = $2 WHERE id = $1",
            provider.text()? != instance.vnf_provider,
            instance.vnf_provider.as_str().into(),
        ),
        (
            "UPDATE vnf_instances SET vnf_product_name = $2 WHERE id = $1",
            product.text()? != instance.vnf_product_name,
            instance.vnf_product_name.as_str().into(),
        ),
        (
            "UPDATE vnf_instances SET instantiation_state = $2 WHERE id = $1",
            state.text()? != state_now,
            state_now.as_str().into(),
        ),
        (
            "UPDATE vnf_instances SET vnf_instance_name = $2 WHERE id = $1",
            name.opt_text()? != instance.vnf_instance_name,
            instance.vnf_instance_name.as_deref().into(),
        ),
    ];
    for (sql, changed, value) in changes {
        if changed {
            tx.execute(sql, &[id.into(), value]).await?;
        }
    }
    write_instance_vims(tx, instance, false).await?;
    Ok(Version(version.int()?))
}

/// The op-occ holding an instance (id, state).
pub(crate) async fn holder<T: SqlConn>(
    tx: &mut T,
    instance_id: &str,
) -> Result<Option<(VnfLcmOpOccId, LcmOperationStateType)>, StoreError> {
    let Some(row) = tx
        .row(
            "SELECT id, state FROM op_occs WHERE instance_id = $1 AND state IN \
             ('STARTING', 'PROCESSING', 'ROLLING_BACK', 'FAILED_TEMP') LIMIT 1",
            &[instance_id.into()],
            &[Col::Text, Col::Text],
        )
        .await?
    else {
        return Ok(None);
    };
    let [id, state] = columns(row)?;
    let id = id.text()?;
    let state = parsed_state(&id, &state.text()?)?;
    Ok(Some((VnfLcmOpOccId(id), state)))
}

/// Takes the instance's lock by inserting `occ` in `STARTING` under `lease`; the instance's
/// version at that moment.
pub(crate) async fn start_operation<T: SqlConn>(
    tx: &mut T,
    occ: &VnfLcmOpOcc,
    lease: &Lease,
) -> Result<Version, StartRefused> {
    if occ.operation_state != LcmOperationStateType::Starting {
        return Err(StoreError::Invalid(format!(
            "a new operation occurrence must be in STARTING, not {}",
            state_str(occ.operation_state)
        ))
        .into());
    }
    let doc = to_json(OP_OCC, occ)?;
    let instance_id = occ.vnf_instance_id.as_str();
    // Locks the instance row (PostgreSQL) so concurrent starts and deletes of the same
    // instance serialise; SQLite's immediate transaction already has.
    let Some(version) = instance_version(tx, instance_id).await? else {
        return Err(StoreError::NotFound {
            kind: INSTANCE,
            id: instance_id.to_owned(),
        }
        .into());
    };
    if let Some((op_occ_id, state)) = holder(tx, instance_id).await? {
        return Err(StoreError::Conflict(Conflict::InstanceBusy {
            instance_id: instance_id.to_owned(),
            op_occ_id,
            state,
        })
        .into());
    }
    let now = now_ms();
    let inserted = tx
        .execute(
            "INSERT INTO op_occs (id, instance_id, operation, state, version, \
             lease_owner, lease_expires_at, doc, created_at, updated_at) \
             VALUES ($1, $2, $3, 'STARTING', 1, $4, $5, $6, $7, $7)",
            &[
                occ.id.as_str().into(),
                instance_id.into(),
                enum_str(&occ.operation).as_str().into(),
                lease.owner.as_str().into(),
                lease.expires_at.0.into(),
                doc.as_str().into(),
                now.into(),
            ],
        )
        .await;
    match inserted {
        Ok(_) => Ok(version),
        // The partial unique index caught a concurrent start, or the op-occ id is taken.
        Err(e) if e.unique => Err(StartRefused::Raced),
        Err(e) => Err(e.into()),
    }
}

/// Upserts an op-occ data entry (the op-occ must exist).
pub(crate) async fn put_op_occ_data<T: SqlConn>(
    tx: &mut T,
    op_occ_id: &VnfLcmOpOccId,
    key: &str,
    value: &Value,
) -> Result<(), StoreError> {
    let text = to_json("op-occ data", value)?;
    tx.execute(
        "INSERT INTO op_occ_data (op_occ_id, data_key, value, updated_at) \
         VALUES ($1, $2, $3, $4) ON CONFLICT (op_occ_id, data_key) \
         DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
        &[
            op_occ_id.as_str().into(),
            key.into(),
            text.as_str().into(),
            now_ms().into(),
        ],
    )
    .await?;
    Ok(())
}

/// What a conditional op-occ update found instead: (state, version, lease owner).
pub(crate) async fn op_occ_facts<T: SqlConn>(
    tx: &mut T,
    id: &VnfLcmOpOccId,
) -> Result<(LcmOperationStateType, Version, Option<String>), StoreError> {
    let Some(row) = tx
        .row(
            "SELECT state, version, lease_owner FROM op_occs WHERE id = $1",
            &[id.as_str().into()],
            &[Col::Text, Col::Int, Col::OptText],
        )
        .await?
    else {
        return Err(StoreError::NotFound {
            kind: OP_OCC,
            id: id.0.clone(),
        });
    };
    let [state, version, holder] = columns(row)?;
    let state = parsed_state(id.as_str(), &state.text()?)?;
    Ok((state, Version(version.int()?), holder.opt_text()?))
}

/// Why a runner's conditional write (record step, renew or release the lease) matched no
/// row.
pub(crate) async fn runner_refusal<T: SqlConn>(
    tx: &mut T,
    id: &VnfLcmOpOccId,
    owner: &str,
    expected: Option<Version>,
) -> StoreError {
    match op_occ_facts(tx, id).await {
        Ok(facts) => refusal(id, owner, expected, facts),
        Err(e) => e,
    }
}

/// Why a runner's conditional write matched no row. A lost lease wins over a stale version:
/// the runner must stop either way, and this tells it why.
fn refusal(
    id: &VnfLcmOpOccId,
    owner: &str,
    expected: Option<Version>,
    (state, version, holder): (LcmOperationStateType, Version, Option<String>),
) -> StoreError {
    if state.is_final() {
        return StoreError::Conflict(Conflict::Finished {
            op_occ_id: id.clone(),
            state,
        });
    }
    if holder.as_deref() != Some(owner) {
        return StoreError::Conflict(Conflict::LeaseLost {
            op_occ_id: id.clone(),
            owner: owner.to_owned(),
            holder,
        });
    }
    match expected {
        Some(expected) if expected != version => StoreError::VersionMismatch {
            kind: OP_OCC,
            id: id.0.clone(),
            expected,
            found: version,
        },
        _ => StoreError::Invalid(format!(
            "operation occurrence {id} is in state {}, not the expected one",
            state_str(state)
        )),
    }
}

/// The writes of [`crate::Store::record_step`].
pub(crate) async fn record_step<T: SqlConn>(
    tx: &mut T,
    record: &StepRecord,
) -> Result<StepWritten, StoreError> {
    let occ = &record.occ;
    if let Some((instance, _)) = &record.instance
        && instance.id != occ.vnf_instance_id
    {
        return Err(StoreError::Invalid(format!(
            "operation occurrence {} operates on VNF instance {}, not {}",
            occ.id, occ.vnf_instance_id, instance.id
        )));
    }
    let doc = to_json(OP_OCC, occ)?;
    let new_state = occ.operation_state;
    // FAILED_TEMP waits for the operator and final states are done: neither has a runner, so
    // neither keeps a lease.
    let drop_lease = new_state.is_final() || new_state == LcmOperationStateType::FailedTemp;
    let sql = if drop_lease {
        "UPDATE op_occs SET state = $1, doc = $2, version = version + 1, \
         updated_at = $3, lease_owner = NULL, lease_expires_at = NULL \
         WHERE id = $4 AND instance_id = $5 AND version = $6 AND state = $7 \
         AND lease_owner = $8 RETURNING version"
    } else {
        "UPDATE op_occs SET state = $1, doc = $2, version = version + 1, \
         updated_at = $3 \
         WHERE id = $4 AND instance_id = $5 AND version = $6 AND state = $7 \
         AND lease_owner = $8 RETURNING version"
    };
    let row = tx
        .row(
            sql,
            &[
                state_str(new_state).into(),
                doc.as_str().into(),
                now_ms().into(),
                occ.id.as_str().into(),
                occ.vnf_instance_id.as_str().into(),
                record.expected_version.0.into(),
                state_str(record.expected_state).into(),
                record.owner.as_str().into(),
            ],
            &[Col::Int],
        )
        .await?;
    let Some(row) = row else {
        return Err(
            runner_refusal(tx, &occ.id, &record.owner, Some(record.expected_version)).await,
        );
    };
    let [version] = columns(row)?;
    let op_occ_version = Version(version.int()?);
    let journal_seq = match &record.journal {
        None => None,
        Some(step) => {
            let detail = to_json("journal detail", &step.detail)?;
            let row = tx
                .row(
                    "INSERT INTO op_occ_journal (op_occ_id, seq, step, outcome, \
                     recorded_at, detail) \
                     SELECT $1, COALESCE(MAX(seq), 0) + 1, $2, $3, $4, $5 \
                     FROM op_occ_journal WHERE op_occ_id = $1 RETURNING seq",
                    &[
                        occ.id.as_str().into(),
                        step.step.as_str().into(),
                        step.outcome.as_str().into(),
                        step.at.0.into(),
                        detail.as_str().into(),
                    ],
                    &[Col::Int],
                )
                .await?
                .ok_or_else(|| StoreError::Backend("journal insert returned no row".into()))?;
            let [seq] = columns(row)?;
            Some(seq.int()?)
        }
    };
    for (key, value) in &record.data {
        put_op_occ_data(tx, &occ.id, key, value).await?;
    }
    let instance_version = match &record.instance {
        None => None,
        Some((instance, expected)) => Some(update_instance(tx, instance, *expected).await?),
    };
    insert_outbox(tx, &record.outbox).await?;
    Ok(StepWritten {
        op_occ_version,
        instance_version,
        journal_seq,
    })
}

/// The instance `id` and its version.
pub(crate) async fn get_instance<C: SqlConn>(
    conn: &mut C,
    id: &str,
) -> Result<Option<(VnfInstance, Version)>, StoreError> {
    document(
        conn,
        "SELECT doc, version FROM vnf_instances WHERE id = $1",
        INSTANCE,
        id,
    )
    .await
}

/// The occurrence `id` and its version.
pub(crate) async fn get_op_occ<C: SqlConn>(
    conn: &mut C,
    id: &str,
) -> Result<Option<(VnfLcmOpOcc, Version)>, StoreError> {
    document(
        conn,
        "SELECT doc, version FROM op_occs WHERE id = $1",
        OP_OCC,
        id,
    )
    .await
}

/// The occurrence of `instance_id` that is not final, if any.
pub(crate) async fn active_op_occ<C: SqlConn>(
    conn: &mut C,
    instance_id: &str,
) -> Result<Option<(VnfLcmOpOcc, Version)>, StoreError> {
    let Some(row) = conn
        .row(
            "SELECT id, doc, version FROM op_occs WHERE instance_id = $1 AND state IN \
             ('STARTING', 'PROCESSING', 'ROLLING_BACK', 'FAILED_TEMP')",
            &[instance_id.into()],
            &[Col::Text, Col::Text, Col::Int],
        )
        .await?
    else {
        return Ok(None);
    };
    let [id, doc, version] = columns(row)?;
    let id = id.text()?;
    Ok(Some((
        from_json(OP_OCC, &id, &doc.text()?)?,
        Version(version.int()?),
    )))
}

/// A document of `kind` by id (`sql` selects its `doc` and `version`).
async fn document<C: SqlConn, T: serde::de::DeserializeOwned>(
    conn: &mut C,
    sql: &'static str,
    kind: &'static str,
    id: &str,
) -> Result<Option<(T, Version)>, StoreError> {
    let Some(row) = conn.row(sql, &[id.into()], &[Col::Text, Col::Int]).await? else {
        return Ok(None);
    };
    let [doc, version] = columns(row)?;
    Ok(Some((
        from_json(kind, id, &doc.text()?)?,
        Version(version.int()?),
    )))
}

/// The value under `key` of the occurrence `op_occ_id`.
pub(crate) async fn get_op_occ_data<C: SqlConn>(
    conn: &mut C,
    op_occ_id: &str,
    key: &str,
) -> Result<Option<Value>, StoreError> {
    let Some(row) = conn
        .row(
            "SELECT value FROM op_occ_data WHERE op_occ_id = $1 AND data_key = $2",
            &[op_occ_id.into(), key.into()],
            &[Col::Text],
        )
        .await?
    else {
        return Ok(None);
    };
    let [value] = columns(row)?;
    Ok(Some(from_json("op-occ data", op_occ_id, &value.text()?)?))
}

/// The VIMs that lifecycle hooks of `instance_id` registered, by id.
pub(crate) async fn vims_created_by<C: SqlConn>(
    conn: &mut C,
    instance_id: &str,
) -> Result<Vec<(VimRecord, Version)>, StoreError> {
    conn.rows(
        "SELECT id, name, vim_type, public_info, secret, created_by_instance, version \
         FROM vims WHERE created_by_instance = $1 ORDER BY id",
        &[instance_id.into()],
        &[
            Col::Text,
            Col::Text,
            Col::Text,
            Col::Text,
            Col::Blob,
            Col::OptText,
            Col::Int,
        ],
    )
    .await?
    .into_iter()
    .map(|row| {
        let [id, name, vim_type, public, secret, created_by, version] = columns(row)?;
        let id = id.text()?;
        Ok((
            VimRecord {
                public: from_json("VIM", &id, &public.text()?)?,
                id: VimId(id),
                name: name.text()?,
                vim_type: vim_type.text()?,
                secret: secret.blob()?,
                created_by_instance: created_by.opt_text()?.map(VnfInstanceId),
            },
            Version(version.int()?),
        ))
    })
    .collect()
}

/// The ids of the VIMs that lifecycle hooks of `creator` registered.
pub(crate) async fn vim_ids_created_by<C: SqlConn>(
    conn: &mut C,
    creator: &str,
) -> Result<BTreeSet<String>, StoreError> {
    conn.rows(
        "SELECT id FROM vims WHERE created_by_instance = $1",
        &[creator.into()],
        &[Col::Text],
    )
    .await?
    .into_iter()
    .map(|row| {
        let [id] = columns(row)?;
        id.text()
    })
    .collect()
}
