//! Operation occurrences: the per-instance lock, runner leases, the step journal and the
//! op-occ-scoped data of lifecycle hooks.

use std::collections::BTreeMap;

use serde_json::Value;
use vnfm_types::{LcmOperationStateType, VnfLcmOpOcc, VnfLcmOpOccId};

use super::{
    Arg, Col, SqlConn, columns, from_json, limit_clause, now_ms, placeholders, probe_size,
    single_int, to_json,
};
use crate::sql::search::{DocumentSearch, searched_page};
use vnfm_store::{Conflict, StoreError};
use vnfm_store::{
    JournalEntry, Lease, OpOccQuery, Page, StepOutcome, Timestamp, Version, enum_str, parse_state,
    state_str,
};

mod steps;

pub(crate) use steps::{
    Alone, EncodedStep, Started, begin, begin_alone, record_step, record_step_alone, start,
    steps_alone,
};

pub(crate) const OP_OCC: &str = "op-occ";
const INSTANCE: &str = "VNF instance";

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

/// Upserts an op-occ data entry (the op-occ must exist).
pub(crate) async fn put_data<C: SqlConn>(
    tx: &mut C,
    op_occ_id: &str,
    key: &str,
    value: &Value,
) -> Result<(), StoreError> {
    put_data_all(tx, op_occ_id, [(key, value)]).await
}

/// Op-occ data entries encoded, by key; of entries with the same key, the last.
fn data_texts<'a>(
    entries: impl IntoIterator<Item = (&'a str, &'a Value)>,
) -> Result<BTreeMap<String, String>, StoreError> {
    let mut texts = BTreeMap::new();
    for (key, value) in entries {
        texts.insert(key.to_owned(), to_json("op-occ data", value)?);
    }
    Ok(texts)
}

/// The statement upserting the encoded entries `texts` (not empty) of the op-occ
/// `op_occ_id`, and its arguments.
fn data_statement<'a>(
    op_occ_id: &'a str,
    texts: &'a BTreeMap<String, String>,
) -> (String, Vec<Arg<'a>>) {
    data_statement_if(op_occ_id, texts, None)
}

/// [`data_statement`]; with `gate`, the name of an expression of a [`Chain`] statement
/// (PostgreSQL), the entries are written only when that expression has a row.
///
/// [`Chain`]: crate::sql::chain::Chain
fn data_statement_if<'a>(
    op_occ_id: &'a str,
    texts: &'a BTreeMap<String, String>,
    gate: Option<&str>,
) -> (String, Vec<Arg<'a>>) {
    let mut args: Vec<Arg<'_>> = vec![op_occ_id.into(), now_ms().into()];
    let mut rows = Vec::with_capacity(texts.len());
    for (key, text) in texts {
        args.push(key.as_str().into());
        args.push(text.as_str().into());
        rows.push(format!("($1, ${}, ${}, $2)", args.len() - 1, args.len()));
    }
    let rows = rows.join(", ");
    let source = match gate {
        None => format!("VALUES {rows}"),
        Some(gate) => {
            format!("SELECT * FROM (VALUES {rows}) AS v WHERE EXISTS (SELECT 1 FROM {gate})")
        }
    };
    let sql = format!(
        "INSERT INTO op_occ_data (op_occ_id, data_key, value, updated_at) {source} \
         ON CONFLICT (op_occ_id, data_key) \
         DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at"
    );
    (sql, args)
}

/// Upserts op-occ data entries in one statement (the op-occ must exist); of entries with the
/// same key, the last is kept.
async fn put_data_all<'a, C: SqlConn>(
    tx: &mut C,
    op_occ_id: &str,
    entries: impl IntoIterator<Item = (&'a str, &'a Value)>,
) -> Result<(), StoreError> {
    let texts = data_texts(entries)?;
    if texts.is_empty() {
        return Ok(());
    }
    let (sql, args) = data_statement(op_occ_id, &texts);
    tx.execute(&sql, &args).await?;
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

/// The occurrence's document as stored (JSON text), not parsed.
pub(crate) async fn get_text<C: SqlConn>(
    conn: &mut C,
    id: &str,
) -> Result<Option<String>, StoreError> {
    conn.row(
        "SELECT doc FROM op_occs WHERE id = $1",
        &[id.into()],
        &[Col::Text],
    )
    .await?
    .map(|row| {
        let [doc] = columns(row)?;
        doc.text()
    })
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
    // Made before `args`, which borrows it.
    let search = DocumentSearch::new(&query.document_strings, query.scan_limit);
    let mut conds = String::from("1 = 1");
    let mut args: Vec<Arg<'_>> = Vec::new();
    if let Some(v) = &query.vnf_instance_id {
        args.push(v.as_str().into());
        conds.push_str(&format!(" AND instance_id = ${}", args.len()));
    }
    if let Some(states) = &query.states {
        conds.push_str(&format!(
            " AND state IN ({})",
            placeholders(args.len() + 1, states.len())
        ));
        args.extend(states.iter().map(|s| Arg::from(state_str(*s))));
    }
    if let Some(op) = &operation {
        args.push(op.as_str().into());
        conds.push_str(&format!(" AND operation = ${}", args.len()));
    }
    super::push_scope(&query.scope, &mut conds, &mut args);
    if let Some(after) = &query.after {
        args.push(after.as_str().into());
        conds.push_str(&format!(" AND id > ${}", args.len()));
    }
    let mut sql = format!("SELECT id, doc, version FROM op_occs WHERE {conds}");
    let searched_to = search
        .push(conn, "op_occs", &conds, &mut sql, &mut args)
        .await?;
    sql.push_str(" ORDER BY id");
    sql.push_str(&limit_clause(probe));
    let items = conn
        .rows(&sql, &args, &OCC_COLS)
        .await?
        .into_iter()
        .map(|row| occ_row(row).map(|(o, _)| o))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(searched_page(items, limit, |o| o.id.0.clone(), searched_to))
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

/// Whether some running occurrence's lease expired before `now` or was released.
pub(crate) async fn has_expired<C: SqlConn>(
    conn: &mut C,
    now: Timestamp,
) -> Result<bool, StoreError> {
    let sql = format!(
        "SELECT id FROM op_occs WHERE state IN {RUNNING} \
         AND (lease_expires_at IS NULL OR lease_expires_at < $1){}",
        limit_clause(1)
    );
    Ok(conn
        .row(&sql, &[now.0.into()], &[Col::Text])
        .await?
        .is_some())
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
         AND (lease_expires_at IS NULL OR lease_expires_at < $3) ORDER BY id{}{}) \
         AND state IN {RUNNING} AND (lease_expires_at IS NULL OR lease_expires_at < $3) \
         RETURNING id, doc, version",
        limit_clause(i64::from(limit)),
        C::DIALECT.skip_locked()
    );
    let mut claimed = tx
        .rows(
            &sql,
            &[owner.into(), new_expiry.0.into(), now.0.into()],
            &OCC_COLS,
        )
        .await?
        .into_iter()
        .map(occ_row)
        .collect::<Result<Vec<_>, _>>()?;
    claimed.sort_by(|a, b| a.0.id.cmp(&b.0.id));
    Ok(claimed)
}
