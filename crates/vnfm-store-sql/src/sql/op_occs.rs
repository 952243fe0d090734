//! Operation occurrences: the per-instance lock, runner leases, the step journal and the
//! op-occ-scoped data of lifecycle hooks.

use std::collections::BTreeMap;

use serde_json::Value;
use vnfm_types::{LcmOperationStateType, VnfLcmOpOcc, VnfLcmOpOccId};

use super::{
    Arg, Col, Dialect, SqlConn, columns, from_json, now_ms, page, placeholders, probe_size,
    single_int, to_json,
};
use crate::sql::{instances, outbox};
use vnfm_store::{Conflict, StoreError};
use vnfm_store::{
    JournalEntry, JournalStep, Lease, OpOccQuery, Page, StartCondition, StepOutcome, StepRecord,
    StepWritten, Timestamp, Version, enum_str, parse_state, state_str,
};

pub(crate) const OP_OCC: &str = "op-occ";
const INSTANCE: &str = "VNF instance";

/// The version of an occurrence stored already begun: its start and its first move.
const BEGUN: Version = Version(2);

/// The states in which an occurrence holds its instance, as an SQL list.
const HOLDING: &str = "('STARTING', 'PROCESSING', 'ROLLING_BACK', 'FAILED_TEMP')";
/// The states in which an occurrence has a runner (and so a lease), as an SQL list.
const RUNNING: &str = "('STARTING', 'PROCESSING', 'ROLLING_BACK')";

fn parsed_state(id: &str, state: &str) -> Result<LcmOperationStateType, StoreError> {
    parse_state(state).ok_or_else(|| StoreError::Corrupt {
        kind: OP_OCC,
        id: id.to_owned(),
        reason: format!("unknown state {state:?}"),
    })
}

/// An `(id, doc, version)` row as the occurrence and its version.
fn occ_row(row: Vec<crate::sql::Cell>) -> Result<(VnfLcmOpOcc, Version), StoreError> {
    let [id, doc, version] = columns(row)?;
    let id = id.text()?;
    Ok((
        from_json(OP_OCC, &id, &doc.text()?)?,
        Version(version.int()?),
    ))
}

const OCC_COLS: [Col; 3] = [Col::Text, Col::Text, Col::Int];

/// The op-occ holding an instance (id, state).
pub(crate) async fn holder<C: SqlConn>(
    conn: &mut C,
    instance_id: &str,
) -> Result<Option<(VnfLcmOpOccId, LcmOperationStateType)>, StoreError> {
    let sql = format!(
        "SELECT id, state FROM op_occs WHERE instance_id = $1 AND state IN {HOLDING} LIMIT 1"
    );
    let Some(row) = conn
        .row(&sql, &[instance_id.into()], &[Col::Text, Col::Text])
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
/// version at that moment. A unique violation (a concurrent start took the instance, or the
/// id is taken) is [`Conflict::AlreadyExists`] of the op-occ: the caller tells the two apart
/// outside the transaction, which PostgreSQL has aborted.
pub(crate) async fn start<C: SqlConn>(
    tx: &mut C,
    occ: &VnfLcmOpOcc,
    lease: &Lease,
) -> Result<Version, StoreError> {
    let version = free_instance(tx, occ).await?;
    insert_starting(tx, occ, lease).await?;
    Ok(version)
}

/// [`start`] and [`record_step`] in one transaction when `condition` holds; `None`, with
/// nothing written, when it does not. The occurrence is inserted as the first move leaves it
/// (one row write, not an insert in `STARTING` and its update).
pub(crate) async fn begin<C: SqlConn>(
    tx: &mut C,
    started: &VnfLcmOpOcc,
    lease: &Lease,
    condition: &StartCondition,
    record: &StepRecord,
) -> Result<Option<StepWritten>, StoreError> {
    let version = free_instance(tx, started).await?;
    if version != condition.instance_version {
        return Ok(None);
    }
    if condition.no_vims_created
        && single_int(
            tx,
            "SELECT COUNT(*) FROM vims WHERE created_by_instance = $1",
            &[started.vnf_instance_id.as_str().into()],
        )
        .await?
        .is_some_and(|n| n > 0)
    {
        return Ok(None);
    }
    first_move_refusal(started, lease, record)?;
    check_instance(record)?;
    let kept_lease = (!drops_lease(record)).then_some(lease);
    insert(tx, &record.occ, kept_lease, BEGUN).await?;
    let journal_seq = journal_step(tx, record).await?;
    let instance_version = write_with_step(tx, record).await?;
    Ok(Some(StepWritten {
        op_occ_version: BEGUN,
        instance_version,
        journal_seq,
    }))
}

/// Why `record` cannot be the first move of `started` under `lease`, as [`record_step`] would
/// refuse it on the stored start.
fn first_move_refusal(
    started: &VnfLcmOpOcc,
    lease: &Lease,
    record: &StepRecord,
) -> Result<(), StoreError> {
    let id = &started.id;
    if record.occ.id != *id || record.occ.vnf_instance_id != started.vnf_instance_id {
        return Err(StoreError::Invalid(format!(
            "the first move of operation occurrence {id} names occurrence {} of VNF instance {}",
            record.occ.id, record.occ.vnf_instance_id
        )));
    }
    if record.owner != lease.owner {
        return Err(StoreError::Conflict(Conflict::LeaseLost {
            op_occ_id: id.clone(),
            owner: record.owner.clone(),
            holder: Some(lease.owner.clone()),
        }));
    }
    if record.expected_version != Version::FIRST {
        return Err(StoreError::VersionMismatch {
            kind: OP_OCC,
            id: id.0.clone(),
            expected: record.expected_version,
            found: Version::FIRST,
        });
    }
    if record.expected_state != LcmOperationStateType::Starting {
        return Err(StoreError::Invalid(format!(
            "operation occurrence {id} is in state STARTING, not the expected one"
        )));
    }
    Ok(())
}

/// Checks that `occ` is new (`STARTING`) and that its instance exists and is free; locks the
/// instance row (PostgreSQL) so concurrent starts and deletes of the same instance
/// serialise (SQLite's write transaction already has). The instance's version.
///
/// One statement reads both. On PostgreSQL the holder it reads is as of before the lock it
/// may have waited for: a holder that began meanwhile makes the insert that follows hit the
/// unique index of holding occurrences (which the caller reports as the instance being busy),
/// and a holder it found is looked for again with the lock held, since the transaction it
/// waited for may have been that holder's last step.
async fn free_instance<C: SqlConn>(tx: &mut C, occ: &VnfLcmOpOcc) -> Result<Version, StoreError> {
    if occ.operation_state != LcmOperationStateType::Starting {
        return Err(StoreError::Invalid(format!(
            "a new operation occurrence must be in STARTING, not {}",
            state_str(occ.operation_state)
        )));
    }
    let instance_id = occ.vnf_instance_id.as_str();
    let sql = format!(
        "SELECT i.version, o.id, o.state FROM vnf_instances i \
         LEFT JOIN op_occs o ON o.instance_id = i.id AND o.state IN {HOLDING} \
         WHERE i.id = $1 LIMIT 1{}",
        C::DIALECT.for_update_of("i")
    );
    let Some(row) = tx
        .row(
            &sql,
            &[instance_id.into()],
            &[Col::Int, Col::OptText, Col::OptText],
        )
        .await?
    else {
        return Err(StoreError::NotFound {
            kind: INSTANCE,
            id: instance_id.to_owned(),
        });
    };
    let [version, holder, state] = columns(row)?;
    let holder = match (holder.opt_text()?, state.opt_text()?) {
        (Some(_), Some(_)) if C::DIALECT == Dialect::Postgres => {
            self::holder(tx, instance_id).await?
        }
        (Some(op_occ_id), Some(state)) => {
            let state = parsed_state(&op_occ_id, &state)?;
            Some((VnfLcmOpOccId(op_occ_id), state))
        }
        _ => None,
    };
    if let Some((op_occ_id, state)) = holder {
        return Err(StoreError::Conflict(Conflict::InstanceBusy {
            instance_id: instance_id.to_owned(),
            op_occ_id,
            state,
        }));
    }
    Ok(Version(version.int()?))
}

/// Inserts `occ` in `STARTING` at [`Version::FIRST`] under `lease`.
async fn insert_starting<C: SqlConn>(
    tx: &mut C,
    occ: &VnfLcmOpOcc,
    lease: &Lease,
) -> Result<(), StoreError> {
    insert(tx, occ, Some(lease), Version::FIRST).await
}

/// Inserts `occ` in its state at `version`, under `lease` if any.
async fn insert<C: SqlConn>(
    tx: &mut C,
    occ: &VnfLcmOpOcc,
    lease: Option<&Lease>,
    version: Version,
) -> Result<(), StoreError> {
    let doc = to_json(OP_OCC, occ)?;
    let operation = enum_str(&occ.operation);
    let inserted = tx
        .execute(
            &format!(
                "INSERT INTO op_occs (id, instance_id, operation, state, version, \
                 lease_owner, lease_expires_at, doc, created_at, updated_at, project) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, {})",
                super::instance_project(2)
            ),
            &[
                occ.id.as_str().into(),
                occ.vnf_instance_id.as_str().into(),
                operation.as_str().into(),
                state_str(occ.operation_state).into(),
                version.0.into(),
                lease.map(|l| l.owner.as_str()).into(),
                lease.map_or(Arg::NullInt, |l| l.expires_at.0.into()),
                doc.as_str().into(),
                now_ms().into(),
            ],
        )
        .await;
    match inserted {
        Ok(_) => Ok(()),
        Err(e) if e.unique => Err(StoreError::Conflict(Conflict::AlreadyExists {
            kind: OP_OCC,
            id: occ.id.0.clone(),
        })),
        Err(e) => Err(e.into()),
    }
}

/// Upserts an op-occ data entry (the op-occ must exist).
pub(crate) async fn put_data<C: SqlConn>(
    tx: &mut C,
    op_occ_id: &str,
    key: &str,
    value: &Value,
) -> Result<(), StoreError> {
    put_data_all(tx, op_occ_id, [(key, value)]).await
}

/// Upserts op-occ data entries in one statement (the op-occ must exist); of entries with the
/// same key, the last is kept.
async fn put_data_all<'a, C: SqlConn>(
    tx: &mut C,
    op_occ_id: &str,
    entries: impl IntoIterator<Item = (&'a str, &'a Value)>,
) -> Result<(), StoreError> {
    let mut texts: BTreeMap<&str, String> = BTreeMap::new();
    for (key, value) in entries {
        texts.insert(key, to_json("op-occ data", value)?);
    }
    if texts.is_empty() {
        return Ok(());
    }
    let mut args: Vec<Arg<'_>> = vec![op_occ_id.into(), now_ms().into()];
    let mut rows = Vec::with_capacity(texts.len());
    for (key, text) in &texts {
        args.push((*key).into());
        args.push(text.as_str().into());
        rows.push(format!("($1, ${}, ${}, $2)", args.len() - 1, args.len()));
    }
    tx.execute(
        &format!(
            "INSERT INTO op_occ_data (op_occ_id, data_key, value, updated_at) VALUES {} \
             ON CONFLICT (op_occ_id, data_key) \
             DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
            rows.join(", ")
        ),
        &args,
    )
    .await?;
    Ok(())
}

/// [`put_data`], refusing an unknown op-occ with [`StoreError::NotFound`].
pub(crate) async fn put_data_checked<C: SqlConn>(
    tx: &mut C,
    op_occ_id: &str,
    key: &str,
    value: &Value,
) -> Result<(), StoreError> {
    let exists = single_int(
        tx,
        "SELECT version FROM op_occs WHERE id = $1",
        &[op_occ_id.into()],
    )
    .await?;
    if exists.is_none() {
        return Err(StoreError::NotFound {
            kind: OP_OCC,
            id: op_occ_id.to_owned(),
        });
    }
    put_data(tx, op_occ_id, key, value).await
}

/// The value under `key` of the occurrence `op_occ_id`.
pub(crate) async fn get_data<C: SqlConn>(
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

/// What a conditional op-occ update found instead: (state, version, lease owner).
async fn facts<C: SqlConn>(
    tx: &mut C,
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

/// Why a runner's conditional write (record a step, renew or release the lease) matched no
/// row. A lost lease wins over a stale version: the runner must stop either way, and this
/// tells it why.
async fn runner_refusal<C: SqlConn>(
    tx: &mut C,
    id: &VnfLcmOpOccId,
    owner: &str,
    expected: Option<Version>,
) -> StoreError {
    let (state, version, holder) = match facts(tx, id).await {
        Ok(facts) => facts,
        Err(e) => return e,
    };
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

/// Whether the state `record` moves to keeps no lease: `FAILED_TEMP` waits for the operator
/// and final states are done, so neither has a runner.
fn drops_lease(record: &StepRecord) -> bool {
    let state = record.occ.operation_state;
    state.is_final() || state == LcmOperationStateType::FailedTemp
}

/// Refuses a record whose instance is not the occurrence's.
fn check_instance(record: &StepRecord) -> Result<(), StoreError> {
    let occ = &record.occ;
    match &record.instance {
        Some((instance, _)) if instance.id != occ.vnf_instance_id => {
            Err(StoreError::Invalid(format!(
                "operation occurrence {} operates on VNF instance {}, not {}",
                occ.id, occ.vnf_instance_id, instance.id
            )))
        }
        _ => Ok(()),
    }
}

/// The writes of one runner step ([`vnfm_store::Store::record_step`]).
pub(crate) async fn record_step<C: SqlConn>(
    tx: &mut C,
    record: &StepRecord,
) -> Result<StepWritten, StoreError> {
    check_instance(record)?;
    let moved = match (C::DIALECT, &record.journal) {
        // One round trip to the server instead of two.
        (Dialect::Postgres, Some(step)) => move_and_journal(tx, record, step).await?,
        _ => match move_occ(tx, record).await? {
            Some(version) => Some((version, journal_step(tx, record).await?)),
            None => None,
        },
    };
    let (op_occ_version, journal_seq) = match moved {
        Some(moved) => moved,
        None => {
            let refusal = runner_refusal(
                tx,
                &record.occ.id,
                &record.owner,
                Some(record.expected_version),
            );
            return Err(refusal.await);
        }
    };
    let instance_version = write_with_step(tx, record).await?;
    Ok(StepWritten {
        op_occ_version,
        instance_version,
        journal_seq,
    })
}

/// The conditional update that moves the occurrence as `record` says, its arguments `$1` to
/// `$8`, returning the new version.
fn move_statement(record: &StepRecord) -> &'static str {
    if drops_lease(record) {
        "UPDATE op_occs SET state = $1, doc = $2, version = version + 1, \
         updated_at = $3, lease_owner = NULL, lease_expires_at = NULL \
         WHERE id = $4 AND instance_id = $5 AND version = $6 AND state = $7 \
         AND lease_owner = $8 RETURNING version"
    } else {
        "UPDATE op_occs SET state = $1, doc = $2, version = version + 1, updated_at = $3 \
         WHERE id = $4 AND instance_id = $5 AND version = $6 AND state = $7 \
         AND lease_owner = $8 RETURNING version"
    }
}

/// The arguments of [`move_statement`].
fn move_args<'a>(record: &'a StepRecord, doc: &'a str) -> Vec<Arg<'a>> {
    let occ = &record.occ;
    vec![
        state_str(occ.operation_state).into(),
        doc.into(),
        now_ms().into(),
        occ.id.as_str().into(),
        occ.vnf_instance_id.as_str().into(),
        record.expected_version.0.into(),
        state_str(record.expected_state).into(),
        record.owner.as_str().into(),
    ]
}

/// Moves the occurrence; its new version, `None` when the move's condition did not hold.
async fn move_occ<C: SqlConn>(
    tx: &mut C,
    record: &StepRecord,
) -> Result<Option<Version>, StoreError> {
    let doc = to_json(OP_OCC, &record.occ)?;
    let Some(row) = tx
        .row(
            move_statement(record),
            &move_args(record, &doc),
            &[Col::Int],
        )
        .await?
    else {
        return Ok(None);
    };
    let [version] = columns(row)?;
    Ok(Some(Version(version.int()?)))
}

/// [`move_occ`] and [`journal_step`] of `step`, the record's journal row, in one statement
/// (PostgreSQL): the row is inserted only when the move's condition held.
async fn move_and_journal<C: SqlConn>(
    tx: &mut C,
    record: &StepRecord,
    step: &JournalStep,
) -> Result<Option<(Version, Option<i64>)>, StoreError> {
    let doc = to_json(OP_OCC, &record.occ)?;
    let detail = to_json("journal detail", &step.detail)?;
    let sql = format!(
        "WITH moved AS ({}), \
         noted AS (INSERT INTO op_occ_journal (op_occ_id, seq, step, outcome, recorded_at, detail) \
         SELECT $4, COALESCE((SELECT MAX(seq) FROM op_occ_journal WHERE op_occ_id = $4), 0) + 1, \
         $9, $10, $11, $12 FROM moved RETURNING seq) \
         SELECT moved.version, noted.seq FROM moved, noted",
        move_statement(record)
    );
    let mut args = move_args(record, &doc);
    args.extend::<[Arg<'_>; 4]>([
        step.step.as_str().into(),
        step.outcome.as_str().into(),
        step.at.0.into(),
        detail.as_str().into(),
    ]);
    let Some(row) = tx.row(&sql, &args, &[Col::Int, Col::Int]).await? else {
        return Ok(None);
    };
    let [version, seq] = columns(row)?;
    Ok(Some((Version(version.int()?), Some(seq.int()?))))
}

/// Appends the journal row of `record`, if it has one; its sequence number.
async fn journal_step<C: SqlConn>(
    tx: &mut C,
    record: &StepRecord,
) -> Result<Option<i64>, StoreError> {
    let Some(step) = &record.journal else {
        return Ok(None);
    };
    let detail = to_json("journal detail", &step.detail)?;
    let seq = single_int(
        tx,
        "INSERT INTO op_occ_journal (op_occ_id, seq, step, outcome, recorded_at, detail) \
         SELECT $1, COALESCE(MAX(seq), 0) + 1, $2, $3, $4, $5 \
         FROM op_occ_journal WHERE op_occ_id = $1 RETURNING seq",
        &[
            record.occ.id.as_str().into(),
            step.step.as_str().into(),
            step.outcome.as_str().into(),
            step.at.0.into(),
            detail.as_str().into(),
        ],
    )
    .await?
    .ok_or_else(|| StoreError::Backend("journal insert returned no row".into()))?;
    Ok(Some(seq))
}

/// What a step writes besides the occurrence and its journal: op-occ data, the instance, the
/// notifications. The instance's new version, if it was written.
async fn write_with_step<C: SqlConn>(
    tx: &mut C,
    record: &StepRecord,
) -> Result<Option<Version>, StoreError> {
    put_data_all(
        tx,
        record.occ.id.as_str(),
        record.data.iter().map(|(k, v)| (k.as_str(), v)),
    )
    .await?;
    let instance_version = match &record.instance {
        None => None,
        Some((instance, expected)) => Some(instances::update(tx, instance, *expected).await?),
    };
    outbox::insert(tx, &record.outbox).await?;
    Ok(instance_version)
}

/// The occurrence `id` and its version.
pub(crate) async fn get<C: SqlConn>(
    conn: &mut C,
    id: &str,
) -> Result<Option<(VnfLcmOpOcc, Version)>, StoreError> {
    conn.row(
        "SELECT id, doc, version FROM op_occs WHERE id = $1",
        &[id.into()],
        &OCC_COLS,
    )
    .await?
    .map(occ_row)
    .transpose()
}

/// The occurrence of `instance_id` that is not final, if any.
pub(crate) async fn active<C: SqlConn>(
    conn: &mut C,
    instance_id: &str,
) -> Result<Option<(VnfLcmOpOcc, Version)>, StoreError> {
    let sql = format!(
        "SELECT id, doc, version FROM op_occs WHERE instance_id = $1 AND state IN {HOLDING}"
    );
    conn.row(&sql, &[instance_id.into()], &OCC_COLS)
        .await?
        .map(occ_row)
        .transpose()
}

/// One page of the occurrences matching `query`, ordered by id.
pub(crate) async fn page_of<C: SqlConn>(
    conn: &mut C,
    query: &OpOccQuery,
) -> Result<Page<VnfLcmOpOcc>, StoreError> {
    let (limit, probe) = probe_size(query.limit);
    if query.states.as_ref().is_some_and(Vec::is_empty) {
        return Ok(Page {
            items: Vec::new(),
            next: None,
        });
    }
    let operation = query.operation.as_ref().map(enum_str);
    let mut sql = String::from("SELECT id, doc, version FROM op_occs WHERE 1 = 1");
    let mut args: Vec<Arg<'_>> = Vec::new();
    if let Some(v) = &query.vnf_instance_id {
        args.push(v.as_str().into());
        sql.push_str(&format!(" AND instance_id = ${}", args.len()));
    }
    if let Some(states) = &query.states {
        sql.push_str(&format!(
            " AND state IN ({})",
            placeholders(args.len() + 1, states.len())
        ));
        args.extend(states.iter().map(|s| Arg::from(state_str(*s))));
    }
    if let Some(op) = &operation {
        args.push(op.as_str().into());
        sql.push_str(&format!(" AND operation = ${}", args.len()));
    }
    super::push_scope(&query.scope, &mut sql, &mut args);
    if let Some(after) = &query.after {
        args.push(after.as_str().into());
        sql.push_str(&format!(" AND id > ${}", args.len()));
    }
    args.push(probe.into());
    sql.push_str(&format!(" ORDER BY id LIMIT ${}", args.len()));
    let items = conn
        .rows(&sql, &args, &OCC_COLS)
        .await?
        .into_iter()
        .map(|row| occ_row(row).map(|(o, _)| o))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(page(items, limit, |o| o.id.0.clone()))
}

/// How many occurrences are in each state, by state name.
pub(crate) async fn count_by_state<C: SqlConn>(
    conn: &mut C,
) -> Result<Vec<(String, i64)>, StoreError> {
    conn.rows(
        "SELECT state, COUNT(*) FROM op_occs GROUP BY state ORDER BY state",
        &[],
        &[Col::Text, Col::Int],
    )
    .await?
    .into_iter()
    .map(|row| {
        let [state, n] = columns(row)?;
        Ok((state.text()?, n.int()?))
    })
    .collect()
}

const JOURNAL_COLS: [Col; 6] = [
    Col::Text,
    Col::Int,
    Col::Text,
    Col::Text,
    Col::Int,
    Col::Text,
];

fn journal_row(row: Vec<crate::sql::Cell>) -> Result<JournalEntry, StoreError> {
    let [id, seq, step, outcome, at, detail] = columns(row)?;
    let id = id.text()?;
    let seq = seq.int()?;
    let outcome = outcome.text()?;
    let outcome = StepOutcome::parse(&outcome).ok_or_else(|| StoreError::Corrupt {
        kind: "journal entry",
        id: format!("{id}#{seq}"),
        reason: format!("unknown outcome {outcome:?}"),
    })?;
    Ok(JournalEntry {
        detail: from_json("journal entry", &id, &detail.text()?)?,
        op_occ_id: VnfLcmOpOccId(id),
        seq,
        step: step.text()?,
        outcome,
        at: Timestamp(at.int()?),
    })
}

/// The step journal of the occurrence, oldest first.
pub(crate) async fn journal<C: SqlConn>(
    conn: &mut C,
    op_occ_id: &str,
) -> Result<Vec<JournalEntry>, StoreError> {
    conn.rows(
        "SELECT op_occ_id, seq, step, outcome, recorded_at, detail \
         FROM op_occ_journal WHERE op_occ_id = $1 ORDER BY seq",
        &[op_occ_id.into()],
        &JOURNAL_COLS,
    )
    .await?
    .into_iter()
    .map(journal_row)
    .collect()
}

/// The newest journal row with outcome `completed`.
pub(crate) async fn last_completed_step<C: SqlConn>(
    conn: &mut C,
    op_occ_id: &str,
) -> Result<Option<JournalEntry>, StoreError> {
    conn.row(
        "SELECT op_occ_id, seq, step, outcome, recorded_at, detail \
         FROM op_occ_journal WHERE op_occ_id = $1 AND outcome = 'completed' \
         ORDER BY seq DESC LIMIT 1",
        &[op_occ_id.into()],
        &JOURNAL_COLS,
    )
    .await?
    .map(journal_row)
    .transpose()
}

/// The current lease of the occurrence.
pub(crate) async fn lease<C: SqlConn>(
    conn: &mut C,
    op_occ_id: &str,
) -> Result<Option<Lease>, StoreError> {
    let Some(row) = conn
        .row(
            "SELECT lease_owner, lease_expires_at FROM op_occs WHERE id = $1",
            &[op_occ_id.into()],
            &[Col::OptText, Col::OptInt],
        )
        .await?
    else {
        return Err(StoreError::NotFound {
            kind: OP_OCC,
            id: op_occ_id.to_owned(),
        });
    };
    let [owner, expires] = columns(row)?;
    let expires = expires.opt_int()?;
    Ok(owner.opt_text()?.map(|owner| Lease {
        owner,
        expires_at: Timestamp(expires.unwrap_or(0)),
    }))
}

/// Extends (`Some` expiry) or gives up (`None`) the lease `owner` holds.
pub(crate) async fn set_lease<C: SqlConn>(
    tx: &mut C,
    op_occ_id: &VnfLcmOpOccId,
    owner: &str,
    expires_at: Option<Timestamp>,
) -> Result<(), StoreError> {
    let done = match expires_at {
        Some(at) => {
            tx.execute(
                "UPDATE op_occs SET lease_expires_at = $1 WHERE id = $2 AND lease_owner = $3",
                &[at.0.into(), op_occ_id.as_str().into(), owner.into()],
            )
            .await?
        }
        None => {
            tx.execute(
                "UPDATE op_occs SET lease_owner = NULL, lease_expires_at = NULL \
                 WHERE id = $1 AND lease_owner = $2",
                &[op_occ_id.as_str().into(), owner.into()],
            )
            .await?
        }
    };
    if done == 0 {
        return Err(runner_refusal(tx, op_occ_id, owner, None).await);
    }
    Ok(())
}

/// Takes the lease of one non-final occurrence at `expected` that has no live lease.
pub(crate) async fn claim<C: SqlConn>(
    tx: &mut C,
    op_occ_id: &VnfLcmOpOccId,
    expected: Version,
    lease: &Lease,
    now: Timestamp,
) -> Result<(), StoreError> {
    let sql = format!(
        "UPDATE op_occs SET lease_owner = $1, lease_expires_at = $2 \
         WHERE id = $3 AND version = $4 AND state IN {HOLDING} \
         AND (lease_owner IS NULL OR lease_owner = $1 OR lease_expires_at < $5)"
    );
    let done = tx
        .execute(
            &sql,
            &[
                lease.owner.as_str().into(),
                lease.expires_at.0.into(),
                op_occ_id.as_str().into(),
                expected.0.into(),
                now.0.into(),
            ],
        )
        .await?;
    if done > 0 {
        return Ok(());
    }
    let (state, version, holder) = facts(tx, op_occ_id).await?;
    Err(if state.is_final() {
        StoreError::Conflict(Conflict::Finished {
            op_occ_id: op_occ_id.clone(),
            state,
        })
    } else if version != expected {
        StoreError::VersionMismatch {
            kind: OP_OCC,
            id: op_occ_id.0.clone(),
            expected,
            found: version,
        }
    } else {
        StoreError::Conflict(Conflict::LeaseHeld {
            op_occ_id: op_occ_id.clone(),
            holder: holder.unwrap_or_default(),
        })
    })
}

/// Takes over up to `limit` running occurrences whose lease expired or was released.
pub(crate) async fn claim_expired<C: SqlConn>(
    tx: &mut C,
    owner: &str,
    now: Timestamp,
    new_expiry: Timestamp,
    limit: u32,
) -> Result<Vec<(VnfLcmOpOcc, Version)>, StoreError> {
    let sql = format!(
        "UPDATE op_occs SET lease_owner = $1, lease_expires_at = $2 \
         WHERE id IN (SELECT id FROM op_occs WHERE state IN {RUNNING} \
         AND (lease_expires_at IS NULL OR lease_expires_at < $3) ORDER BY id LIMIT $4{}) \
         AND state IN {RUNNING} AND (lease_expires_at IS NULL OR lease_expires_at < $3) \
         RETURNING id, doc, version",
        C::DIALECT.skip_locked()
    );
    let mut claimed = tx
        .rows(
            &sql,
            &[
                owner.into(),
                new_expiry.0.into(),
                now.0.into(),
                i64::from(limit).into(),
            ],
            &OCC_COLS,
        )
        .await?
        .into_iter()
        .map(occ_row)
        .collect::<Result<Vec<_>, _>>()?;
    claimed.sort_by(|a, b| a.0.id.cmp(&b.0.id));
    Ok(claimed)
}
