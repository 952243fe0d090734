//! A runner step, or an operation stored already begun, as one statement that commits by
//! itself (PostgreSQL): one round trip, where the transaction of [`record_step`] and
//! [`begin`] costs `BEGIN`, the instance's row lock and read, the chained writes and `COMMIT`.
//!
//! The row lock and the checks are the statement's first expressions ([`Chain`]), and every
//! write reads the one before it, so each is made only when the checks held: the statement
//! writes all of the step or nothing. The instance's row is locked by the first expression
//! (`FOR UPDATE`, `MATERIALIZED`) and read by the occurrence's write, so the instance is
//! locked before the occurrence, as in every other transaction that writes both (see
//! [`record_step`] on the deadlock that order avoids).
//!
//! When the statement writes nothing (a check did not hold: a stale version, a lost lease,
//! an instance that is busy or gone), the caller makes the write again the ordinary way, in a
//! transaction, which writes it or says why not exactly as before: the statement alone never
//! has to explain a refusal. Writes that enqueue notifications (outbox rows, numbered in the
//! order they are inserted) keep the transaction.
//!
//! A connection lost while the statement runs leaves it unknown whether it committed, as a
//! connection lost during `COMMIT` did: the caller gets [`StoreError::Unavailable`], and a
//! runner that writes its step again finds it written (a stale version) and leaves the
//! occurrence to recovery, as then.

use super::*;

/// The expression locking the instance's row and reading its version.
const INSTANCE_LOCKED: &str = "SELECT version FROM vnf_instances WHERE id = $1 FOR UPDATE";

/// Whether [`record_step_alone`] can write `step` on a connection of `C`: on PostgreSQL, a
/// step that enqueues no notification and names the occurrence's own instance.
pub(crate) fn steps_alone<C: SqlConn>(step: &EncodedStep) -> bool {
    C::DIALECT == Dialect::Postgres && step.outbox.is_empty() && check_instance(step).is_ok()
}

/// [`record_step`] as one statement that commits by itself, for a step [`steps_alone`]
/// accepts: `None` when it wrote nothing, because the occurrence did not move (its version,
/// state or lease is not the expected one) or the instance is not at its expected version.
pub(crate) async fn record_step_alone<C: SqlConn>(
    conn: &mut C,
    step: &EncodedStep,
) -> Result<Option<StepWritten>, StoreError> {
    let mut chain = Chain::new();
    let mut also = "";
    let mut args = move_args(step);
    if let Some((instance, expected)) = &step.instance {
        chain.push_materialized("instance_locked", INSTANCE_LOCKED, &[instance.id().into()]);
        also = " AND EXISTS (SELECT 1 FROM instance_locked WHERE version = $9)";
        args.push(expected.0.into());
    }
    chain.push("occ_moved", &move_statement(step, also), &args);
    let written = chain_writes(&mut chain, step, " FROM occ_moved", Some("occ_moved"));
    let (sql, args) = chain.finish(&format!(
        "SELECT (SELECT version FROM occ_moved), {written}"
    ));
    let [op_occ_version, journal_seq, instance_version] = one_row(conn, &sql, &args).await?;
    let Some(op_occ_version) = op_occ_version.opt_int()? else {
        return Ok(None);
    };
    Ok(Some(StepWritten {
        op_occ_version: Version(op_occ_version),
        instance_version: written_instance(step, instance_version)?,
        journal_seq: journal_seq.opt_int()?,
    }))
}

/// What [`begin_alone`] needs of an operation's start, when it can be written alone.
pub(crate) struct Alone {
    instance_id: String,
    condition: StartCondition,
    lease: Option<Lease>,
}

impl Alone {
    /// The start of `started` under `lease` and `condition`, whose first move is `step`, when
    /// [`begin_alone`] can write it on a connection of `C`: on PostgreSQL, with no
    /// notification to enqueue, nothing [`begin`] would refuse before writing (see
    /// [`Started`]), and the instance's expected version the condition's.
    pub(crate) fn of<C: SqlConn>(
        started: &Started,
        lease: &Lease,
        condition: &StartCondition,
        step: &EncodedStep,
    ) -> Option<Alone> {
        let instance_expected = step.instance.as_ref().map(|(_, expected)| *expected);
        let writable = steps_alone::<C>(step)
            && started.refusal.is_none()
            && started.state == LcmOperationStateType::Starting
            && step.occ.instance_id == started.instance_id
            && instance_expected.is_none_or(|v| v == condition.instance_version);
        writable.then(|| Alone {
            instance_id: started.instance_id.clone(),
            condition: *condition,
            lease: (!step.drops_lease()).then(|| lease.clone()),
        })
    }
}

/// [`begin`] as one statement that commits by itself: the occurrence as its first move
/// leaves it, its journal row, its data and the instance, written only when the instance
/// exists at the condition's version, no occurrence holds it and (when the condition asks)
/// it created no VIM. `None` when it wrote nothing. A concurrent start that took the
/// instance meanwhile makes the insert hit the unique index of holding occurrences:
/// [`Conflict::AlreadyExists`] of the occurrence, as from [`begin`].
pub(crate) async fn begin_alone<C: SqlConn>(
    conn: &mut C,
    alone: &Alone,
    step: &EncodedStep,
) -> Result<Option<StepWritten>, StoreError> {
    let id = alone.instance_id.as_str();
    let mut chain = Chain::new();
    chain.push_materialized("instance_locked", INSTANCE_LOCKED, &[id.into()]);
    let no_vims = if alone.condition.no_vims_created {
        " AND NOT EXISTS (SELECT 1 FROM vims WHERE created_by_instance = $1)"
    } else {
        ""
    };
    chain.push(
        "start_free",
        &format!(
            "SELECT 1 FROM instance_locked WHERE version = $2 AND NOT EXISTS \
             (SELECT 1 FROM op_occs WHERE instance_id = $1 AND state IN {HOLDING}){no_vims}"
        ),
        &[id.into(), alone.condition.instance_version.0.into()],
    );
    let (insert_sql, insert_args) = insert_statement(
        &step.occ,
        alone.lease.as_ref(),
        BEGUN,
        &step.doc,
        Some("start_free"),
    );
    chain.push(
        "occ_inserted",
        &format!("{insert_sql} RETURNING version"),
        &insert_args,
    );
    let written = chain_writes(&mut chain, step, " FROM occ_inserted", Some("occ_inserted"));
    let (sql, args) = chain.finish(&format!(
        "SELECT (SELECT version FROM occ_inserted), {written}"
    ));
    let [op_occ_version, journal_seq, instance_version] =
        one_row(conn, &sql, &args).await.map_err(|e| match e {
            Written::Db(e) => insert_error(&step.occ.id, e),
            Written::Store(e) => e,
        })?;
    if op_occ_version.opt_int()?.is_none() {
        return Ok(None);
    }
    Ok(Some(StepWritten {
        op_occ_version: BEGUN,
        instance_version: written_instance(step, instance_version)?,
        journal_seq: journal_seq.opt_int()?,
    }))
}

/// Why a statement of this module failed: the database refused it, or its answer was not
/// what the statement selects.
enum Written {
    Db(DbError),
    Store(StoreError),
}

impl From<Written> for StoreError {
    fn from(e: Written) -> Self {
        match e {
            Written::Db(e) => e.into(),
            Written::Store(e) => e,
        }
    }
}

/// The one row of the chained statement `sql`: the occurrence's new version, the journal
/// row's number and the instance's new version, each `NULL` when not written.
async fn one_row<C: SqlConn>(
    conn: &mut C,
    sql: &str,
    args: &[Arg<'_>],
) -> Result<[crate::sql::Cell; 3], Written> {
    let row = conn
        .row(sql, args, &[Col::OptInt, Col::OptInt, Col::OptInt])
        .await
        .map_err(Written::Db)?
        .ok_or_else(|| {
            Written::Store(StoreError::Backend(
                "a step's statement returned no row".into(),
            ))
        })?;
    columns(row).map_err(Written::Store)
}

/// The instance's new version as a statement that wrote the occurrence wrote it (`cell`).
/// The occurrence is written only when the instance is locked at the expected version, so an
/// instance not written beside it would be a fault of the statement, reported as such.
fn written_instance(
    step: &EncodedStep,
    cell: crate::sql::Cell,
) -> Result<Option<Version>, StoreError> {
    if step.instance.is_none() {
        return Ok(None);
    }
    match cell.opt_int()? {
        Some(version) => Ok(Some(Version(version))),
        None => Err(StoreError::Backend(format!(
            "operation occurrence {} was written without its instance",
            step.occ.id
        ))),
    }
}
