//! VNF fault management alarms: the document with its indexed columns (instance, de-duplication
//! key, severity, acknowledgement, times) and a version for compare-and-swap updates.

use vnfm_types::{AckState, PerceivedSeverity};

use super::{
    Col, SqlConn, columns, from_json, limit_clause, locked_version, page, page_size_of, push_scope,
    stale, to_json,
};
use vnfm_store::{AlarmRecord, Page, ProjectScope, Version};
use vnfm_store::{Conflict, StoreError};

const ALARM: &str = "alarm";
const COLUMNS: &str = "id, dedup_key, version, doc";
const COLS: [Col; 4] = [Col::Text, Col::Text, Col::Int, Col::Text];

fn record(row: Vec<super::Cell>) -> Result<(AlarmRecord, Version), StoreError> {
    let [id, key, version, doc] = columns(row)?;
    Ok((
        AlarmRecord {
            alarm: from_json(ALARM, &id.text()?, &doc.text()?)?,
            dedup_key: key.text()?,
        },
        Version(version.int()?),
    ))
}

fn severity(s: PerceivedSeverity) -> &'static str {
    match s {
        PerceivedSeverity::Critical => "CRITICAL",
        PerceivedSeverity::Major => "MAJOR",
        PerceivedSeverity::Minor => "MINOR",
        PerceivedSeverity::Warning => "WARNING",
        PerceivedSeverity::Indeterminate => "INDETERMINATE",
        PerceivedSeverity::Cleared => "CLEARED",
    }
}

fn ack(a: AckState) -> &'static str {
    match a {
        AckState::Unacknowledged => "UNACKNOWLEDGED",
        AckState::Acknowledged => "ACKNOWLEDGED",
    }
}

/// Stores a new alarm at [`Version::FIRST`] and enqueues `notify`. An alarm with the same id,
/// or an open alarm with the same de-duplication key, is a conflict.
pub(crate) async fn create<C: SqlConn>(
    tx: &mut C,
    record: &AlarmRecord,
    notify: &[super::outbox::EncodedOutboxRow],
) -> Result<Version, StoreError> {
    let a = &record.alarm;
    let doc = to_json(ALARM, a)?;
    let done = tx
        .execute(
            &format!(
                "INSERT INTO alarms (id, instance_id, dedup_key, severity, ack_state, \
                 raised_at, changed_at, cleared_at, version, doc, project) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 1, $9, {}) ON CONFLICT DO NOTHING",
                super::instance_project(2)
            ),
            &[
                a.id.as_str().into(),
                a.managed_object_id.as_str().into(),
                record.dedup_key.as_str().into(),
                severity(a.perceived_severity).into(),
                ack(a.ack_state).into(),
                a.alarm_raised_time.as_str().into(),
                a.alarm_changed_time.as_ref().map(|t| t.as_str()).into(),
                a.alarm_cleared_time.as_ref().map(|t| t.as_str()).into(),
                doc.as_str().into(),
            ],
        )
        .await?;
    if done == 0 {
        return Err(StoreError::Conflict(Conflict::AlreadyExists {
            kind: "open alarm with this key",
            id: record.dedup_key.clone(),
        }));
    }
    super::outbox::insert(tx, notify).await?;
    Ok(Version::FIRST)
}

/// Replaces the alarm document at `expected` and enqueues `notify`; returns the new version.
pub(crate) async fn update<C: SqlConn>(
    tx: &mut C,
    record: &AlarmRecord,
    expected: Version,
    notify: &[super::outbox::EncodedOutboxRow],
) -> Result<Version, StoreError> {
    let a = &record.alarm;
    let doc = to_json(ALARM, a)?;
    let version = super::single_int(
        tx,
        "UPDATE alarms SET severity = $3, ack_state = $4, changed_at = $5, cleared_at = $6, \
         doc = $7, version = version + 1 WHERE id = $1 AND version = $2 RETURNING version",
        &[
            a.id.as_str().into(),
            expected.0.into(),
            severity(a.perceived_severity).into(),
            ack(a.ack_state).into(),
            a.alarm_changed_time.as_ref().map(|t| t.as_str()).into(),
            a.alarm_cleared_time.as_ref().map(|t| t.as_str()).into(),
            doc.as_str().into(),
        ],
    )
    .await?;
    match version {
        Some(v) => {
            super::outbox::insert(tx, notify).await?;
            Ok(Version(v))
        }
        None => {
            let found = locked_version(tx, "alarms", a.id.as_str()).await?;
            Err(stale(ALARM, a.id.as_str(), expected, found))
        }
    }
}

/// The alarm `id`.
pub(crate) async fn get<C: SqlConn>(
    conn: &mut C,
    id: &str,
) -> Result<Option<(AlarmRecord, Version)>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM alarms WHERE id = $1");
    conn.row(&sql, &[id.into()], &COLS)
        .await?
        .map(record)
        .transpose()
}

/// The open (not cleared) alarm with de-duplication key `key`.
pub(crate) async fn open_by_key<C: SqlConn>(
    conn: &mut C,
    key: &str,
) -> Result<Option<(AlarmRecord, Version)>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM alarms WHERE dedup_key = $1 AND cleared_at IS NULL");
    conn.row(&sql, &[key.into()], &COLS)
        .await?
        .map(record)
        .transpose()
}

/// Every open alarm, of `instance` only when given, ordered by id (found through the
/// partial index of open alarms, `alarms_open_key`, or the instance's, `alarms_instance`).
pub(crate) async fn open<C: SqlConn>(
    conn: &mut C,
    instance: Option<&str>,
) -> Result<Vec<(AlarmRecord, Version)>, StoreError> {
    let rows = match instance {
        Some(i) => {
            let sql = format!(
                "SELECT {COLUMNS} FROM alarms WHERE instance_id = $1 AND cleared_at IS NULL \
                 ORDER BY id"
            );
            conn.rows(&sql, &[i.into()], &COLS).await?
        }
        None => {
            let sql = format!("SELECT {COLUMNS} FROM alarms WHERE cleared_at IS NULL ORDER BY id");
            conn.rows(&sql, &[], &COLS).await?
        }
    };
    rows.into_iter().map(record).collect()
}

/// One page of the alarms in `scope` after id `after`, ordered by id.
pub(crate) async fn page_of<C: SqlConn>(
    conn: &mut C,
    scope: &ProjectScope,
    after: Option<&str>,
    limit: u32,
) -> Result<Page<(AlarmRecord, Version)>, StoreError> {
    let limit = page_size_of(limit);
    let probe = limit + 1;
    let mut sql = format!("SELECT {COLUMNS} FROM alarms WHERE id > $1");
    let mut args = vec![after.unwrap_or("").into()];
    push_scope(scope, &mut sql, &mut args);
    sql.push_str(" ORDER BY id");
    sql.push_str(&limit_clause(probe));
    let items = conn
        .rows(&sql, &args, &COLS)
        .await?
        .into_iter()
        .map(record)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(page(items, limit, |(r, _)| r.alarm.id.clone()))
}
