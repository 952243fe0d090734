//! The writes that start an operation and record its steps: the per-instance lock taken by
//! inserting the occurrence, and each step's move, journal row, data, instance and outbox
//! rows in one transaction (on PostgreSQL, one chained statement; see [`Chain`]).

use std::collections::BTreeMap;

use vnfm_types::{LcmOperationStateType, VnfLcmOpOcc, VnfLcmOpOccId};

use super::{
    HOLDING, INSTANCE, OP_OCC, data_statement, data_texts, holder, parsed_state, put_data_all,
    runner_refusal,
};
use crate::sql::chain::Chain;
use crate::sql::{Arg, Col, DbError, Dialect, SqlConn, columns, now_ms, single_int, to_json};
use crate::sql::{instances, outbox};
use vnfm_store::{Conflict, StoreError};
use vnfm_store::{
    JournalStep, Lease, StartCondition, StepRecord, StepWritten, Version, enum_str, state_str,
};

/// The version of an occurrence stored already begun: its start and its first move.
const BEGUN: Version = Version(2);

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
    if C::DIALECT == Dialect::Postgres {
        return insert_begun_at_once(tx, record, kept_lease).await.map(Some);
    }
    insert(tx, &record.occ, kept_lease, BEGUN).await?;
    let journal_seq = journal_step(tx, record).await?;
    let instance_version = write_with_step(tx, record).await?;
    Ok(Some(StepWritten {
        op_occ_version: BEGUN,
        instance_version,
        journal_seq,
    }))
}

/// The writes of [`begin`] once its checks passed, on PostgreSQL: the occurrence as its first
/// move leaves it, its journal row, its data and the instance in one statement ([`Chain`]),
/// the outbox rows after it.
async fn insert_begun_at_once<C: SqlConn>(
    tx: &mut C,
    record: &StepRecord,
    lease: Option<&Lease>,
) -> Result<StepWritten, StoreError> {
    let texts = StepTexts::of(record)?;
    let operation = enum_str(&record.occ.operation);
    let (insert_sql, insert_args) =
        insert_statement(&record.occ, lease, BEGUN, &texts.occ, &operation);
    let mut chain = Chain::new();
    chain.push("occ_inserted", &insert_sql, &insert_args);
    let written = chain_writes(&mut chain, record, &texts, "");
    let (sql, args) = chain.finish(&format!("SELECT {written}"));
    let row = tx
        .row(&sql, &args, &[Col::OptInt, Col::OptInt])
        .await
        .map_err(|e| insert_error(&record.occ, e))?
        .ok_or_else(|| StoreError::Backend("a step's statement returned no row".into()))?;
    let [journal_seq, instance_version] = columns(row)?;
    let instance_version = chained_instance_version(tx, record, instance_version).await?;
    outbox::insert(tx, &record.outbox).await?;
    Ok(StepWritten {
        op_occ_version: BEGUN,
        instance_version,
        journal_seq: journal_seq.opt_int()?,
    })
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

/// The statement inserting `occ` (encoded as `doc`) in its state at `version`, under
/// `lease` if any, and its arguments.
fn insert_statement<'a>(
    occ: &'a VnfLcmOpOcc,
    lease: Option<&'a Lease>,
    version: Version,
    doc: &'a str,
    operation: &'a str,
) -> (String, Vec<Arg<'a>>) {
    let sql = format!(
        "INSERT INTO op_occs (id, instance_id, operation, state, version, \
         lease_owner, lease_expires_at, doc, created_at, updated_at, project) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, {})",
        crate::sql::instance_project(2)
    );
    let args = vec![
        occ.id.as_str().into(),
        occ.vnf_instance_id.as_str().into(),
        operation.into(),
        state_str(occ.operation_state).into(),
        version.0.into(),
        lease.map(|l| l.owner.as_str()).into(),
        lease.map_or(Arg::NullInt, |l| l.expires_at.0.into()),
        doc.into(),
        now_ms().into(),
    ];
    (sql, args)
}

/// The error of inserting `occ`: a unique violation (a concurrent start took its instance,
/// or its id is taken) is [`Conflict::AlreadyExists`] of the occurrence.
fn insert_error(occ: &VnfLcmOpOcc, e: DbError) -> StoreError {
    if e.unique {
        StoreError::Conflict(Conflict::AlreadyExists {
            kind: OP_OCC,
            id: occ.id.0.clone(),
        })
    } else {
        e.into()
    }
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
    let (sql, args) = insert_statement(occ, lease, version, &doc, &operation);
    tx.execute(&sql, &args)
        .await
        .map_err(|e| insert_error(occ, e))?;
    Ok(())
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
    if C::DIALECT == Dialect::Postgres {
        return record_step_at_once(tx, record).await;
    }
    let Some(op_occ_version) = move_occ(tx, record).await? else {
        return Err(refusal_of(tx, record).await);
    };
    let journal_seq = journal_step(tx, record).await?;
    let instance_version = write_with_step(tx, record).await?;
    Ok(StepWritten {
        op_occ_version,
        instance_version,
        journal_seq,
    })
}

/// Why the move of `record` matched no row.
async fn refusal_of<C: SqlConn>(tx: &mut C, record: &StepRecord) -> StoreError {
    runner_refusal(
        tx,
        &record.occ.id,
        &record.owner,
        Some(record.expected_version),
    )
    .await
}

/// [`record_step`] on PostgreSQL: the occurrence's move, its journal row, its data and the
/// instance in one statement ([`Chain`]), the outbox rows after it. The journal row is
/// written only when the move's condition held; the other writes do not wait for it, and a
/// move or an instance update that did not match fails the step, whose transaction is then
/// rolled back.
async fn record_step_at_once<C: SqlConn>(
    tx: &mut C,
    record: &StepRecord,
) -> Result<StepWritten, StoreError> {
    let texts = StepTexts::of(record)?;
    let mut chain = Chain::new();
    chain.push(
        "occ_moved",
        move_statement(record),
        &move_args(record, &texts.occ),
    );
    let written = chain_writes(&mut chain, record, &texts, " FROM occ_moved");
    let (sql, args) = chain.finish(&format!(
        "SELECT (SELECT version FROM occ_moved), {written}"
    ));
    let row = tx
        .row(&sql, &args, &[Col::OptInt, Col::OptInt, Col::OptInt])
        .await?
        .ok_or_else(|| StoreError::Backend("a step's statement returned no row".into()))?;
    let [op_occ_version, journal_seq, instance_version] = columns(row)?;
    let Some(op_occ_version) = op_occ_version.opt_int()? else {
        return Err(refusal_of(tx, record).await);
    };
    let instance_version = chained_instance_version(tx, record, instance_version).await?;
    outbox::insert(tx, &record.outbox).await?;
    Ok(StepWritten {
        op_occ_version: Version(op_occ_version),
        instance_version,
        journal_seq: journal_seq.opt_int()?,
    })
}

/// What a step writes besides its occurrence, encoded once so that a chained statement can
/// borrow it.
struct StepTexts<'a> {
    occ: String,
    journal_detail: Option<String>,
    data: BTreeMap<&'a str, String>,
    instance: Option<instances::InstanceTexts>,
}

impl<'a> StepTexts<'a> {
    fn of(record: &'a StepRecord) -> Result<Self, StoreError> {
        Ok(Self {
            occ: to_json(OP_OCC, &record.occ)?,
            journal_detail: record
                .journal
                .as_ref()
                .map(|step| to_json("journal detail", &step.detail))
                .transpose()?,
            data: data_texts(record.data.iter().map(|(k, v)| (k.as_str(), v)))?,
            instance: record
                .instance
                .as_ref()
                .map(|(instance, _)| instances::InstanceTexts::of(instance))
                .transpose()?,
        })
    }
}

/// Adds the journal row (read from `journal_source`), data and instance of `record` to
/// `chain`; the `SELECT` list of the journal row's number and the instance's new version
/// (`NULL` for what the step does not write).
fn chain_writes<'a>(
    chain: &mut Chain<'a>,
    record: &'a StepRecord,
    texts: &'a StepTexts<'a>,
    journal_source: &str,
) -> String {
    let occ_id = record.occ.id.as_str();
    let mut journal_seq = "NULL::bigint";
    if let (Some(step), Some(detail)) = (&record.journal, &texts.journal_detail) {
        chain.push(
            "journal_noted",
            &journal_statement(journal_source),
            &journal_args(occ_id, step, detail),
        );
        journal_seq = "(SELECT seq FROM journal_noted)";
    }
    if !texts.data.is_empty() {
        let (sql, args) = data_statement(occ_id, &texts.data);
        chain.push("data_put", &sql, &args);
    }
    let mut instance_version = "NULL::bigint";
    if let (Some((instance, expected)), Some(instance_texts)) = (&record.instance, &texts.instance)
    {
        instances::update_in(chain, instance, *expected, instance_texts);
        instance_version = "(SELECT version FROM instance_moved)";
    }
    format!("{journal_seq}, {instance_version}")
}

/// The instance's new version as a chained step wrote it (`cell`), or the error of a stale
/// expected version.
async fn chained_instance_version<C: SqlConn>(
    tx: &mut C,
    record: &StepRecord,
    cell: crate::sql::Cell,
) -> Result<Option<Version>, StoreError> {
    let Some((instance, expected)) = &record.instance else {
        return Ok(None);
    };
    match cell.opt_int()? {
        Some(version) => Ok(Some(Version(version))),
        None => Err(instances::stale_update(tx, instance.id.as_str(), *expected).await),
    }
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

/// The statement appending a journal row to the occurrence `$1`, numbered after its last,
/// with the step `$2`, outcome `$3`, time `$4` and detail `$5`, returning its number; written
/// once per row of `source` (`""`: once).
fn journal_statement(source: &str) -> String {
    format!(
        "INSERT INTO op_occ_journal (op_occ_id, seq, step, outcome, recorded_at, detail) \
         SELECT $1, COALESCE((SELECT MAX(seq) FROM op_occ_journal WHERE op_occ_id = $1), 0) + 1, \
         $2, $3, $4, $5{source} RETURNING seq"
    )
}

/// The arguments of [`journal_statement`].
fn journal_args<'a>(op_occ_id: &'a str, step: &'a JournalStep, detail: &'a str) -> Vec<Arg<'a>> {
    vec![
        op_occ_id.into(),
        step.step.as_str().into(),
        step.outcome.as_str().into(),
        step.at.0.into(),
        detail.into(),
    ]
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
        &journal_statement(""),
        &journal_args(record.occ.id.as_str(), step, &detail),
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
