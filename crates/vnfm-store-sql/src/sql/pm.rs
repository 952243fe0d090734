//! VNF performance management: PM jobs and thresholds (one table each, one implementation
//! generic over [`PmResource`]) and the performance reports of the jobs.

use super::{
    Col, SqlConn, columns, from_json, limit_clause, locked_version, now_ms, page, page_size_of,
    stale, to_json,
};
use vnfm_store::{
    Conflict, Page, PmJobRecord, PmKind, PmReportRecord, PmResource, StoreError, StoredPm, Version,
};

const COLUMNS: &str = "id, version, doc, authentication, state";
const COLS: [Col; 5] = [Col::Text, Col::Int, Col::Text, Col::OptBlob, Col::OptText];
const REPORT: &str = "performance report";

fn record<T: PmResource>(row: Vec<super::Cell>) -> Result<(StoredPm<T>, Version), StoreError> {
    let [id, version, doc, auth, state] = columns(row)?;
    Ok((
        StoredPm {
            resource: from_json(T::WHAT, &id.text()?, &doc.text()?)?,
            authentication: auth.opt_blob()?,
            state: state.opt_text()?,
        },
        Version(version.int()?),
    ))
}

/// Stores a new resource at [`Version::FIRST`]; a taken id is a conflict.
pub(crate) async fn create<C: SqlConn, T: PmResource>(
    tx: &mut C,
    record: &StoredPm<T>,
) -> Result<Version, StoreError> {
    let id = record.resource.id();
    let doc = to_json(T::WHAT, &record.resource)?;
    let sql = format!(
        "INSERT INTO {} (id, version, doc, authentication, state, created_at) \
         VALUES ($1, 1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING",
        table::<T>()
    );
    let done = tx
        .execute(
            &sql,
            &[
                id.into(),
                doc.as_str().into(),
                record.authentication.as_deref().into(),
                record.state.as_deref().into(),
                now_ms().into(),
            ],
        )
        .await?;
    if done == 0 {
        return Err(StoreError::Conflict(Conflict::AlreadyExists {
            kind: T::WHAT,
            id: id.to_owned(),
        }));
    }
    Ok(Version::FIRST)
}

/// Replaces the resource at `expected` and enqueues `notify`; returns the new version.
pub(crate) async fn update<C: SqlConn, T: PmResource>(
    tx: &mut C,
    record: &StoredPm<T>,
    expected: Version,
    notify: &[super::outbox::EncodedOutboxRow],
) -> Result<Version, StoreError> {
    let id = record.resource.id();
    let doc = to_json(T::WHAT, &record.resource)?;
    let sql = format!(
        "UPDATE {} SET doc = $3, authentication = $4, state = $5, version = version + 1 \
         WHERE id = $1 AND version = $2 RETURNING version",
        table::<T>()
    );
    let version = super::single_int(
        tx,
        &sql,
        &[
            id.into(),
            expected.0.into(),
            doc.as_str().into(),
            record.authentication.as_deref().into(),
            record.state.as_deref().into(),
        ],
    )
    .await?;
    match version {
        Some(v) => {
            super::outbox::insert(tx, notify).await?;
            Ok(Version(v))
        }
        None => {
            let found = locked_version(tx, table::<T>(), id).await?;
            Err(stale(T::WHAT, id, expected, found))
        }
    }
}

/// The resource `id`.
pub(crate) async fn get<C: SqlConn, T: PmResource>(
    conn: &mut C,
    id: &str,
) -> Result<Option<(StoredPm<T>, Version)>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM {} WHERE id = $1", table::<T>());
    conn.row(&sql, &[id.into()], &COLS)
        .await?
        .map(record)
        .transpose()
}

/// One page of resources after id `after`, ordered by id.
pub(crate) async fn page_of<C: SqlConn, T: PmResource>(
    conn: &mut C,
    after: Option<&str>,
    limit: u32,
) -> Result<Page<(StoredPm<T>, Version)>, StoreError> {
    let limit = page_size_of(limit);
    let sql = format!(
        "SELECT {COLUMNS} FROM {} WHERE id > $1 ORDER BY id{}",
        table::<T>(),
        limit_clause(limit + 1)
    );
    let items = conn
        .rows(&sql, &[after.unwrap_or("").into()], &COLS)
        .await?
        .into_iter()
        .map(record)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(page(items, limit, |(r, _)| r.resource.id().to_owned()))
}

/// Deletes the resource, its reports (of a job) and the notifications about it that are
/// still pending (their outbox rows carry its id as subscription; dead rows stay).
pub(crate) async fn delete<C: SqlConn, T: PmResource>(
    tx: &mut C,
    id: &str,
) -> Result<(), StoreError> {
    let sql = format!("DELETE FROM {} WHERE id = $1", table::<T>());
    if tx.execute(&sql, &[id.into()]).await? == 0 {
        return Err(StoreError::NotFound {
            kind: T::WHAT,
            id: id.to_owned(),
        });
    }
    tx.execute("DELETE FROM pm_reports WHERE job_id = $1", &[id.into()])
        .await?;
    tx.execute(
        "DELETE FROM outbox WHERE subscription_id = $1 AND status = 'pending'",
        &[id.into()],
    )
    .await?;
    Ok(())
}

/// Stores `report`, replaces its job with `job` at `expected` (which lists it), deletes the
/// reports `dropped` of the job and enqueues `notify`; returns the job's new version.
pub(crate) async fn add_report<C: SqlConn>(
    tx: &mut C,
    report: &PmReportRecord,
    job: &PmJobRecord,
    expected: Version,
    dropped: &[String],
    notify: &[super::outbox::EncodedOutboxRow],
) -> Result<Version, StoreError> {
    let version = update(tx, job, expected, notify).await?;
    let doc = to_json(REPORT, &report.report)?;
    tx.execute(
        "INSERT INTO pm_reports (id, job_id, ready_at, doc) VALUES ($1, $2, $3, $4)",
        &[
            report.id.as_str().into(),
            report.job_id.as_str().into(),
            report.ready_time.as_str().into(),
            doc.as_str().into(),
        ],
    )
    .await?;
    for id in dropped {
        tx.execute(
            "DELETE FROM pm_reports WHERE id = $1 AND job_id = $2",
            &[id.as_str().into(), report.job_id.as_str().into()],
        )
        .await?;
    }
    Ok(version)
}

/// The report `id` of job `job_id`.
pub(crate) async fn report<C: SqlConn>(
    conn: &mut C,
    job_id: &str,
    id: &str,
) -> Result<Option<PmReportRecord>, StoreError> {
    let row = conn
        .row(
            "SELECT id, job_id, ready_at, doc FROM pm_reports WHERE id = $1 AND job_id = $2",
            &[id.into(), job_id.into()],
            &[Col::Text, Col::Text, Col::Text, Col::Text],
        )
        .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let [id, job, ready, doc] = columns(row)?;
    let id = id.text()?;
    let ready = ready.text()?;
    Ok(Some(PmReportRecord {
        report: from_json(REPORT, &id, &doc.text()?)?,
        ready_time: vnfm_types::DateTime::parse(&ready).map_err(|e| StoreError::Corrupt {
            kind: REPORT,
            id: id.clone(),
            reason: e.to_string(),
        })?,
        job_id: job.text()?,
        id,
    }))
}

/// The table of `T`'s kind of resource.
fn table<T: PmResource>() -> &'static str {
    match T::KIND {
        PmKind::Job => "pm_jobs",
        PmKind::Threshold => "thresholds",
    }
}
