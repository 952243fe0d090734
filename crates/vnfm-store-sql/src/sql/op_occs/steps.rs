//! The writes that start an operation and record its steps: the per-instance lock taken by
//! inserting the occurrence, and each step's move, journal row, data, instance and outbox
//! rows in one transaction (on PostgreSQL, one chained statement; see [`Chain`]).
//!
//! A step reaches the transaction encoded ([`EncodedStep`]): its documents are turned into
//! text on the caller's task, so that a single writer (SQLite's) spends its time on SQL.

use std::collections::BTreeMap;

use vnfm_types::{LcmOperationStateType, VnfLcmOpOcc, VnfLcmOpOccId};

use super::{
    HOLDING, INSTANCE, OP_OCC, data_statement, data_statement_if, data_texts, holder, parsed_state,
    runner_refusal,
};
use crate::sql::chain::Chain;
use crate::sql::instances::EncodedInstance;
use crate::sql::outbox::EncodedOutboxRow;
use crate::sql::{
    Arg, Col, DbError, Dialect, SqlConn, columns, locked_version, now_ms, single_int, to_json,
};
use crate::sql::{instances, outbox};
use vnfm_store::{Conflict, StoreError};
use vnfm_store::{Lease, StartCondition, StepRecord, StepWritten, Version, enum_str, state_str};

mod alone;

pub(crate) use alone::{Alone, begin_alone, record_step_alone, steps_alone};

/// The version of an occurrence stored already begun: its start and its first move.
const BEGUN: Version = Version(2);

/// Takes the instance's lock by inserting `occ` in `STARTING` under `lease`; the instance's
/// version at that moment. With `expected`, the instance must still be at that version
/// ([`StoreError::VersionMismatch`] and nothing written otherwise): the compare of a
/// conditional request, made under the instance row's lock. A unique violation (a concurrent start took the instance, or the
/// id is taken) is [`Conflict::AlreadyExists`] of the op-occ: the caller tells the two apart
/// outside the transaction, which PostgreSQL has aborted.
pub(crate) async fn start<C: SqlConn>(
    tx: &mut C,
    occ: &VnfLcmOpOcc,
    lease: &Lease,
    expected: Option<Version>,
) -> Result<Version, StoreError> {
    let version = free_instance(tx, occ.vnf_instance_id.as_str(), occ.operation_state).await?;
    if let Some(expected) = expected
        && expected != version
    {
        return Err(StoreError::VersionMismatch {
            kind: INSTANCE,
            id: occ.vnf_instance_id.0.clone(),
            expected,
            found: version,
        });
    }
    let doc = to_json(OP_OCC, occ)?;
    insert(tx, &OccColumns::of(occ), Some(lease), Version::FIRST, &doc).await?;
    Ok(version)
}

/// What [`begin`] needs of the occurrence that starts, taken before the write.
pub(crate) struct Started {
    instance_id: String,
    state: LcmOperationStateType,
    /// Why the step cannot be its first move, reported once the start's condition held.
    refusal: Option<StoreError>,
}

impl Started {
    /// The start of `started` under `lease`, whose first move is `record`.
    pub(crate) fn of(started: &VnfLcmOpOcc, lease: &Lease, record: &StepRecord) -> Self {
        Started {
            instance_id: started.vnf_instance_id.0.clone(),
            state: started.operation_state,
            refusal: first_move_refusal(started, lease, record).err(),
        }
    }
}

/// [`start`] and [`record_step`] in one transaction when `condition` holds; `None`, with
/// nothing written, when it does not. The occurrence is inserted as the first move leaves it
/// (one row write, not an insert in `STARTING` and its update).
pub(crate) async fn begin<C: SqlConn>(
    tx: &mut C,
    started: Started,
    lease: &Lease,
    condition: &StartCondition,
    step: &EncodedStep,
) -> Result<Option<StepWritten>, StoreError> {
    let version = free_instance(tx, &started.instance_id, started.state).await?;
    if version != condition.instance_version {
        return Ok(None);
    }
    if condition.no_vims_created
        && single_int(
            tx,
            "SELECT COUNT(*) FROM vims WHERE created_by_instance = $1",
            &[started.instance_id.as_str().into()],
        )
        .await?
        .is_some_and(|n| n > 0)
    {
        return Ok(None);
    }
    if let Some(refusal) = started.refusal {
        return Err(refusal);
    }
    check_instance(step)?;
    let kept_lease = (!step.drops_lease()).then_some(lease);
    if C::DIALECT == Dialect::Postgres {
        return insert_begun_at_once(tx, step, kept_lease).await.map(Some);
    }
    insert(tx, &step.occ, kept_lease, BEGUN, &step.doc).await?;
    let journal_seq = journal_step(tx, step).await?;
    let instance_version = write_with_step(tx, step).await?;
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
    step: &EncodedStep,
    lease: Option<&Lease>,
) -> Result<StepWritten, StoreError> {
    let (insert_sql, insert_args) = insert_statement(&step.occ, lease, BEGUN, &step.doc, None);
    let mut chain = Chain::new();
    chain.push("occ_inserted", &insert_sql, &insert_args);
    let written = chain_writes(&mut chain, step, "", None);
    let (sql, args) = chain.finish(&format!("SELECT {written}"));
    let row = tx
        .row(&sql, &args, &[Col::OptInt, Col::OptInt])
        .await
        .map_err(|e| insert_error(&step.occ.id, e))?
        .ok_or_else(|| StoreError::Backend("a step's statement returned no row".into()))?;
    let [journal_seq, instance_version] = columns(row)?;
    let instance_version = chained_instance_version(tx, step, instance_version).await?;
    outbox::insert(tx, &step.outbox).await?;
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

/// Checks that an occurrence in `state` is new (`STARTING`) and that its instance exists and
/// is free; locks the
/// instance row (PostgreSQL) so concurrent starts and deletes of the same instance
/// serialise (SQLite's write transaction already has). The instance's version.
///
/// One statement reads both. On PostgreSQL the holder it reads is as of before the lock it
/// may have waited for: a holder that began meanwhile makes the insert that follows hit the
/// unique index of holding occurrences (which the caller reports as the instance being busy),
/// and a holder it found is looked for again with the lock held, since the transaction it
/// waited for may have been that holder's last step.
async fn free_instance<C: SqlConn>(
    tx: &mut C,
    instance_id: &str,
    state: LcmOperationStateType,
) -> Result<Version, StoreError> {
    if state != LcmOperationStateType::Starting {
        return Err(StoreError::Invalid(format!(
            "a new operation occurrence must be in STARTING, not {}",
            state_str(state)
        )));
    }
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

/// The columns of an occurrence's row besides its document.
pub(crate) struct OccColumns {
    id: VnfLcmOpOccId,
    instance_id: String,
    operation: String,
    state: LcmOperationStateType,
}

impl OccColumns {
    fn of(occ: &VnfLcmOpOcc) -> Self {
        OccColumns {
            id: occ.id.clone(),
            instance_id: occ.vnf_instance_id.0.clone(),
            operation: enum_str(&occ.operation),
            state: occ.operation_state,
        }
    }
}

/// The statement inserting the occurrence `occ` (its document `doc`) in its state at
/// `version`, under `lease` if any, and its arguments. With `gate`, the name of an expression
/// of a [`Chain`] statement, the row is inserted only when that expression has a row.
fn insert_statement<'a>(
    occ: &'a OccColumns,
    lease: Option<&'a Lease>,
    version: Version,
    doc: &'a str,
    gate: Option<&str>,
) -> (String, Vec<Arg<'a>>) {
    let values = format!(
        "$1, $2, $3, $4, $5, $6, $7, $8, $9, $9, {}",
        crate::sql::instance_project(2)
    );
    let source = match gate {
        None => format!("VALUES ({values})"),
        Some(gate) => format!("SELECT {values} FROM {gate}"),
    };
    let sql = format!(
        "INSERT INTO op_occs (id, instance_id, operation, state, version, \
         lease_owner, lease_expires_at, doc, created_at, updated_at, project) {source}"
    );
    let args = vec![
        occ.id.as_str().into(),
        occ.instance_id.as_str().into(),
        occ.operation.as_str().into(),
        state_str(occ.state).into(),
        version.0.into(),
        lease.map(|l| l.owner.as_str()).into(),
        lease.map_or(Arg::NullInt, |l| l.expires_at.0.into()),
        doc.into(),
        now_ms().into(),
    ];
    (sql, args)
}

/// The error of inserting the occurrence `id`: a unique violation (a concurrent start took its
/// instance, or its id is taken) is [`Conflict::AlreadyExists`] of the occurrence.
fn insert_error(id: &VnfLcmOpOccId, e: DbError) -> StoreError {
    if e.unique {
        StoreError::Conflict(Conflict::AlreadyExists {
            kind: OP_OCC,
            id: id.0.clone(),
        })
    } else {
        e.into()
    }
}

/// Inserts the occurrence `occ` (its document `doc`) in its state at `version`, under `lease`
/// if any.
async fn insert<C: SqlConn>(
    tx: &mut C,
    occ: &OccColumns,
    lease: Option<&Lease>,
    version: Version,
    doc: &str,
) -> Result<(), StoreError> {
    let (sql, args) = insert_statement(occ, lease, version, doc, None);
    tx.execute(&sql, &args)
        .await
        .map_err(|e| insert_error(&occ.id, e))?;
    Ok(())
}

/// A step as it is written ([`StepRecord`] with its documents encoded), built on the caller's
/// task before the write.
pub(crate) struct EncodedStep {
    occ: OccColumns,
    expected_state: LcmOperationStateType,
    expected_version: Version,
    owner: String,
    /// The occurrence's new document.
    doc: String,
    journal: Option<EncodedJournal>,
    /// Op-occ data entries by key (of entries with the same key, the last).
    data: BTreeMap<String, String>,
    instance: Option<(EncodedInstance, Version)>,
    outbox: Vec<EncodedOutboxRow>,
}

/// A journal row to append, its detail encoded.
struct EncodedJournal {
    step: String,
    outcome: &'static str,
    at: i64,
    detail: String,
}

impl EncodedStep {
    /// `record`, encoded.
    pub(crate) fn of(record: &StepRecord) -> Result<Self, StoreError> {
        Ok(EncodedStep {
            occ: OccColumns::of(&record.occ),
            expected_state: record.expected_state,
            expected_version: record.expected_version,
            owner: record.owner.clone(),
            doc: to_json(OP_OCC, &record.occ)?,
            journal: record
                .journal
                .as_ref()
                .map(|step| {
                    Ok::<_, StoreError>(EncodedJournal {
                        step: step.step.clone(),
                        outcome: step.outcome.as_str(),
                        at: step.at.0,
                        detail: step.detail.get().to_owned(),
                    })
                })
                .transpose()?,
            data: data_texts(record.data.iter().map(|(k, v)| (k.as_str(), v)))?,
            instance: record
                .instance
                .as_ref()
                .map(|(instance, expected)| {
                    Ok::<_, StoreError>((EncodedInstance::of(instance)?, *expected))
                })
                .transpose()?,
            outbox: outbox::encode(&record.outbox)?,
        })
    }

    /// Whether the state the step moves to keeps no lease: `FAILED_TEMP` waits for the
    /// operator and final states are done, so neither has a runner.
    fn drops_lease(&self) -> bool {
        let state = self.occ.state;
        state.is_final() || state == LcmOperationStateType::FailedTemp
    }
}

/// Refuses a step whose instance is not the occurrence's.
fn check_instance(step: &EncodedStep) -> Result<(), StoreError> {
    let occ = &step.occ;
    match &step.instance {
        Some((instance, _)) if instance.id() != occ.instance_id => {
            Err(StoreError::Invalid(format!(
                "operation occurrence {} operates on VNF instance {}, not {}",
                occ.id,
                occ.instance_id,
                instance.id()
            )))
        }
        _ => Ok(()),
    }
}

/// The writes of one runner step ([`vnfm_store::OpOccStore::record_step`]).
pub(crate) async fn record_step<C: SqlConn>(
    tx: &mut C,
    step: &EncodedStep,
) -> Result<StepWritten, StoreError> {
    check_instance(step)?;
    if C::DIALECT == Dialect::Postgres {
        return record_step_at_once(tx, step).await;
    }
    let Some(op_occ_version) = move_occ(tx, step).await? else {
        return Err(refusal_of(tx, step).await);
    };
    let journal_seq = journal_step(tx, step).await?;
    let instance_version = write_with_step(tx, step).await?;
    Ok(StepWritten {
        op_occ_version,
        instance_version,
        journal_seq,
    })
}

/// Why the move of `step` matched no row.
async fn refusal_of<C: SqlConn>(tx: &mut C, step: &EncodedStep) -> StoreError {
    runner_refusal(tx, &step.occ.id, &step.owner, Some(step.expected_version)).await
}

/// [`record_step`] on PostgreSQL: the occurrence's move, its journal row, its data and the
/// instance in one statement ([`Chain`]), the outbox rows after it. The journal row is
/// written only when the move's condition held; the other writes do not wait for it, and a
/// move or an instance update that did not match fails the step, whose transaction is then
/// rolled back.
///
/// A step that writes the instance locks the instance's row first, in a statement of its
/// own: every transaction that writes both takes the instance before the occurrence, as
/// starting an operation does (it locks the instance, then inserts the occurrence, whose
/// unique index waits for a transaction moving the instance's active occurrence). Moving the
/// occurrence first deadlocked against a concurrent start on the same instance (PostgreSQL
/// `40P01`, answered 500), as concurrent conditional `PATCH`es showed.
async fn record_step_at_once<C: SqlConn>(
    tx: &mut C,
    step: &EncodedStep,
) -> Result<StepWritten, StoreError> {
    if let Some((instance, _)) = &step.instance {
        locked_version(tx, "vnf_instances", instance.id()).await?;
    }
    let mut chain = Chain::new();
    chain.push("occ_moved", &move_statement(step, ""), &move_args(step));
    let written = chain_writes(&mut chain, step, " FROM occ_moved", None);
    let (sql, args) = chain.finish(&format!(
        "SELECT (SELECT version FROM occ_moved), {written}"
    ));
    let row = tx
        .row(&sql, &args, &[Col::OptInt, Col::OptInt, Col::OptInt])
        .await?
        .ok_or_else(|| StoreError::Backend("a step's statement returned no row".into()))?;
    let [op_occ_version, journal_seq, instance_version] = columns(row)?;
    let Some(op_occ_version) = op_occ_version.opt_int()? else {
        return Err(refusal_of(tx, step).await);
    };
    let instance_version = chained_instance_version(tx, step, instance_version).await?;
    outbox::insert(tx, &step.outbox).await?;
    Ok(StepWritten {
        op_occ_version: Version(op_occ_version),
        instance_version,
        journal_seq: journal_seq.opt_int()?,
    })
}

/// Adds the journal row (read from `journal_source`), data and instance of `step` to
/// `chain`; the `SELECT` list of the journal row's number and the instance's new version
/// (`NULL` for what the step does not write). With `gate`, the name of an expression of the
/// chain, the data and the instance are written only when that expression has a row.
fn chain_writes<'a>(
    chain: &mut Chain<'a>,
    step: &'a EncodedStep,
    journal_source: &str,
    gate: Option<&str>,
) -> String {
    let occ_id = step.occ.id.as_str();
    let mut journal_seq = "NULL::bigint";
    if let Some(journal) = &step.journal {
        chain.push(
            "journal_noted",
            &journal_statement(journal_source),
            &journal_args(occ_id, journal),
        );
        journal_seq = "(SELECT seq FROM journal_noted)";
    }
    if !step.data.is_empty() {
        let (sql, args) = data_statement_if(occ_id, &step.data, gate);
        chain.push("data_put", &sql, &args);
    }
    let mut instance_version = "NULL::bigint";
    if let Some((instance, expected)) = &step.instance {
        instances::update_in(chain, instance, *expected, gate);
        instance_version = "(SELECT version FROM instance_moved)";
    }
    format!("{journal_seq}, {instance_version}")
}

/// The instance's new version as a chained step wrote it (`cell`), or the error of a stale
/// expected version.
async fn chained_instance_version<C: SqlConn>(
    tx: &mut C,
    step: &EncodedStep,
    cell: crate::sql::Cell,
) -> Result<Option<Version>, StoreError> {
    let Some((instance, expected)) = &step.instance else {
        return Ok(None);
    };
    match cell.opt_int()? {
        Some(version) => Ok(Some(Version(version))),
        None => Err(instances::stale_update(tx, instance.id(), *expected).await),
    }
}

/// The conditional update that moves the occurrence as `step` says, its arguments `$1` to
/// `$8`, returning the new version; `also` is added to its condition (`""`: nothing).
fn move_statement(step: &EncodedStep, also: &str) -> String {
    let lease = if step.drops_lease() {
        ", lease_owner = NULL, lease_expires_at = NULL"
    } else {
        ""
    };
    format!(
        "UPDATE op_occs SET state = $1, doc = $2, version = version + 1, updated_at = $3{lease} \
         WHERE id = $4 AND instance_id = $5 AND version = $6 AND state = $7 \
         AND lease_owner = $8{also} RETURNING version"
    )
}

/// The arguments of [`move_statement`].
fn move_args(step: &EncodedStep) -> Vec<Arg<'_>> {
    let occ = &step.occ;
    vec![
        state_str(occ.state).into(),
        step.doc.as_str().into(),
        now_ms().into(),
        occ.id.as_str().into(),
        occ.instance_id.as_str().into(),
        step.expected_version.0.into(),
        state_str(step.expected_state).into(),
        step.owner.as_str().into(),
    ]
}

/// Moves the occurrence; its new version, `None` when the move's condition did not hold.
async fn move_occ<C: SqlConn>(
    tx: &mut C,
    step: &EncodedStep,
) -> Result<Option<Version>, StoreError> {
    let Some(row) = tx
        .row(&move_statement(step, ""), &move_args(step), &[Col::Int])
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
fn journal_args<'a>(op_occ_id: &'a str, journal: &'a EncodedJournal) -> Vec<Arg<'a>> {
    vec![
        op_occ_id.into(),
        journal.step.as_str().into(),
        journal.outcome.into(),
        journal.at.into(),
        journal.detail.as_str().into(),
    ]
}

/// Appends the journal row of `step`, if it has one; its sequence number.
async fn journal_step<C: SqlConn>(
    tx: &mut C,
    step: &EncodedStep,
) -> Result<Option<i64>, StoreError> {
    let Some(journal) = &step.journal else {
        return Ok(None);
    };
    let seq = single_int(
        tx,
        &journal_statement(""),
        &journal_args(step.occ.id.as_str(), journal),
    )
    .await?
    .ok_or_else(|| StoreError::Backend("journal insert returned no row".into()))?;
    Ok(Some(seq))
}

/// What a step writes besides the occurrence and its journal: op-occ data, the instance, the
/// notifications. The instance's new version, if it was written.
async fn write_with_step<C: SqlConn>(
    tx: &mut C,
    step: &EncodedStep,
) -> Result<Option<Version>, StoreError> {
    if !step.data.is_empty() {
        let (sql, args) = data_statement(step.occ.id.as_str(), &step.data);
        tx.execute(&sql, &args).await?;
    }
    let instance_version = match &step.instance {
        None => None,
        Some((instance, expected)) => Some(instances::update(tx, instance, *expected).await?),
    };
    outbox::insert(tx, &step.outbox).await?;
    Ok(instance_version)
}
