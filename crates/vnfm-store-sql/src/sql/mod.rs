//! The store's statements, written once against [`SqlConn`] and grouped by aggregate: each
//! function runs on a connection or inside a write transaction that the backend provides
//! (see `crate::database`), so both backends run the same code and differ only where their
//! SQL differs ([`Dialect`]).
//!
//! Statements use `$n` placeholders numbered from 1; the SQLite connection renumbers them as
//! `?n`, which binds by position.

pub(crate) mod alarms;
pub(crate) mod chain;
pub(crate) mod idempotency;
pub(crate) mod indicators;
pub(crate) mod instances;
pub(crate) mod op_occs;
pub(crate) mod outbox;
pub(crate) mod packages;
pub(crate) mod pm;
pub(crate) mod search;
pub(crate) mod settings;
pub(crate) mod subscriptions;
pub(crate) mod vims;

use std::future::Future;
use std::time::{SystemTime, UNIX_EPOCH};

use vnfm_store::StoreError;
use vnfm_store::{Page, ProjectScope, ScopedKind, Version, page_size};

/// Where the two SQL dialects differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// SQLite: a write transaction holds the database's write lock, so rows need no locks.
    Sqlite,
    /// PostgreSQL: rows are locked by the statements that must serialise on them.
    Postgres,
}

impl Dialect {
    /// Suffix that locks the rows a `SELECT` reads until the transaction ends.
    pub(crate) fn for_update(self) -> &'static str {
        match self {
            Dialect::Sqlite => "",
            Dialect::Postgres => " FOR UPDATE",
        }
    }

    /// Suffix that locks the rows a `SELECT` reads, skipping those another transaction has
    /// locked (claims by concurrent replicas never wait on each other).
    pub(crate) fn skip_locked(self) -> &'static str {
        match self {
            Dialect::Sqlite => "",
            Dialect::Postgres => " FOR UPDATE SKIP LOCKED",
        }
    }

    /// Suffix that locks the rows of the table aliased `alias` that a `SELECT` reads (the
    /// other side of an outer join cannot be locked).
    pub(crate) fn for_update_of(self, alias: &str) -> String {
        match self {
            Dialect::Sqlite => String::new(),
            Dialect::Postgres => format!(" FOR UPDATE OF {alias}"),
        }
    }
}

/// A statement argument.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Arg<'a> {
    Text(&'a str),
    Int(i64),
    Blob(&'a [u8]),
    /// A NULL text value.
    Null,
    /// A NULL bytes value.
    NullBlob,
    /// A NULL integer value.
    NullInt,
}

impl<'a> From<&'a str> for Arg<'a> {
    fn from(s: &'a str) -> Self {
        Arg::Text(s)
    }
}

impl<'a> From<&'a String> for Arg<'a> {
    fn from(s: &'a String) -> Self {
        Arg::Text(s)
    }
}

impl From<i64> for Arg<'_> {
    fn from(i: i64) -> Self {
        Arg::Int(i)
    }
}

impl<'a> From<&'a [u8]> for Arg<'a> {
    fn from(b: &'a [u8]) -> Self {
        Arg::Blob(b)
    }
}

impl<'a> From<Option<&'a [u8]>> for Arg<'a> {
    fn from(b: Option<&'a [u8]>) -> Self {
        b.map_or(Arg::NullBlob, Arg::Blob)
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
    /// An integer or NULL.
    OptInt,
    Text,
    /// Text or NULL.
    OptText,
    Blob,
    /// Bytes or NULL.
    OptBlob,
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
    pub(crate) fn int(self) -> Result<i64, StoreError> {
        match self {
            Cell::Int(i) => Ok(i),
            other => Err(unexpected("an integer", &other)),
        }
    }

    pub(crate) fn opt_int(self) -> Result<Option<i64>, StoreError> {
        match self {
            Cell::Null => Ok(None),
            other => other.int().map(Some),
        }
    }

    pub(crate) fn text(self) -> Result<String, StoreError> {
        match self {
            Cell::Text(s) => Ok(s),
            other => Err(unexpected("a text", &other)),
        }
    }

    pub(crate) fn opt_text(self) -> Result<Option<String>, StoreError> {
        match self {
            Cell::Null => Ok(None),
            other => other.text().map(Some),
        }
    }

    pub(crate) fn blob(self) -> Result<Vec<u8>, StoreError> {
        match self {
            Cell::Blob(b) => Ok(b),
            other => Err(unexpected("a blob", &other)),
        }
    }

    pub(crate) fn opt_blob(self) -> Result<Option<Vec<u8>>, StoreError> {
        match self {
            Cell::Null => Ok(None),
            other => other.blob().map(Some),
        }
    }
}

/// Names the column type found, never its value (it may be a secret).
fn unexpected(wanted: &str, found: &Cell) -> StoreError {
    let found = match found {
        Cell::Int(_) => "an integer",
        Cell::Text(_) => "a text",
        Cell::Blob(_) => "a blob",
        Cell::Null => "a NULL",
    };
    StoreError::Backend(format!("expected {wanted} column, got {found}"))
}

/// A database error, as the statements need to tell them apart.
#[derive(Debug)]
pub(crate) struct DbError {
    /// A unique constraint or primary key was violated.
    pub unique: bool,
    /// The database could not be used (the connection broke, the server is going down or
    /// became read-only): [`StoreError::Unavailable`], not a fault of the statement.
    pub unavailable: bool,
    /// The backend's message (with its code); never a bound value.
    pub message: String,
}

impl From<DbError> for StoreError {
    fn from(e: DbError) -> Self {
        if e.unavailable {
            StoreError::Unavailable(e.message)
        } else {
            StoreError::Backend(e.message)
        }
    }
}

/// A connection, or an open transaction on one, that statements run on.
pub(crate) trait SqlConn: Send {
    /// The SQL this connection speaks.
    const DIALECT: Dialect;

    /// Runs a statement; the number of rows it changed.
    fn execute(
        &mut self,
        sql: &str,
        args: &[Arg<'_>],
    ) -> impl Future<Output = Result<u64, DbError>> + Send;

    /// Runs a statement; all its rows, read as `cols`.
    fn rows(
        &mut self,
        sql: &str,
        args: &[Arg<'_>],
        cols: &[Col],
    ) -> impl Future<Output = Result<Vec<Vec<Cell>>, DbError>> + Send;

    /// Runs a statement that yields at most one row (a key lookup, `RETURNING`); that row.
    fn row(
        &mut self,
        sql: &str,
        args: &[Arg<'_>],
        cols: &[Col],
    ) -> impl Future<Output = Result<Option<Vec<Cell>>, DbError>> + Send {
        async move { Ok(self.rows(sql, args, cols).await?.into_iter().next()) }
    }
}

/// The `N` cells of a row.
pub(crate) fn columns<const N: usize>(row: Vec<Cell>) -> Result<[Cell; N], StoreError> {
    let n = row.len();
    <[Cell; N]>::try_from(row)
        .map_err(|_| StoreError::Backend(format!("expected {N} columns, got {n}")))
}

/// The single integer of a one-column row, if there is a row.
pub(crate) async fn single_int<C: SqlConn>(
    conn: &mut C,
    sql: &str,
    args: &[Arg<'_>],
) -> Result<Option<i64>, StoreError> {
    match conn.row(sql, args, &[Col::Int]).await? {
        None => Ok(None),
        Some(row) => {
            let [v] = columns(row)?;
            v.int().map(Some)
        }
    }
}

/// The first column of every row, as text.
pub(crate) async fn texts<C: SqlConn>(
    conn: &mut C,
    sql: &str,
    args: &[Arg<'_>],
) -> Result<Vec<String>, StoreError> {
    conn.rows(sql, args, &[Col::Text])
        .await?
        .into_iter()
        .map(|row| {
            let [v] = columns(row)?;
            v.text()
        })
        .collect()
}

/// `$first, $first+1, ...` for `n` arguments.
pub(crate) fn placeholders(first: usize, n: usize) -> String {
    (first..first + n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A page of `limit` items from a query that asked for `limit + 1`: the extra row says there
/// is a next page, whose cursor is the last item's key.
pub(crate) fn page<T>(mut items: Vec<T>, limit: i64, key: impl Fn(&T) -> String) -> Page<T> {
    let next = if items.len() as i64 > limit {
        items.truncate(limit as usize);
        items.last().map(key)
    } else {
        None
    };
    Page { items, next }
}

/// The page size of a request, plus one (to tell whether a next page exists).
pub(crate) fn probe_size(limit: Option<u32>) -> (i64, i64) {
    let limit = page_size(limit);
    (limit, limit + 1)
}

/// ` LIMIT n`, with `n` written into the statement rather than bound. SQLite (since 3.48) plans
/// a statement with the value of a bound `LIMIT`, and so marks it to be prepared again every
/// time that parameter is bound: a page read parsed and planned its statement anew on every
/// request (about a tenth of the server's CPU per page). With the number in the text the
/// prepared statement is reused (one per page size), and the plan is the same.
pub(crate) fn limit_clause(n: i64) -> String {
    format!(" LIMIT {n}")
}

/// The page size of an explicit limit, clamped to the store's bounds.
pub(crate) fn page_size_of(limit: u32) -> i64 {
    page_size(Some(limit))
}

/// Milliseconds since the epoch, for `created_at`/`updated_at`.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

pub(crate) use vnfm_store::{document_from_json as from_json, document_to_json as to_json};

/// Why a write expecting record `id` at `expected` cannot go on, given the version `found`:
/// the record is gone, or it is at another version.
pub(crate) fn stale(
    kind: &'static str,
    id: &str,
    expected: Version,
    found: Option<Version>,
) -> StoreError {
    match found {
        None => StoreError::NotFound {
            kind,
            id: id.to_owned(),
        },
        Some(found) => StoreError::VersionMismatch {
            kind,
            id: id.to_owned(),
            expected,
            found,
        },
    }
}

/// `Ok` when the record exists at `expected`.
pub(crate) fn expect_version(
    kind: &'static str,
    id: &str,
    expected: Version,
    found: Option<Version>,
) -> Result<(), StoreError> {
    match found {
        Some(found) if found == expected => Ok(()),
        other => Err(stale(kind, id, expected, other)),
    }
}

/// The version of the row `id` of `table` (which has `id` and `version` columns), locked
/// until the transaction ends where the dialect locks rows.
pub(crate) async fn locked_version<C: SqlConn>(
    conn: &mut C,
    table: &str,
    id: &str,
) -> Result<Option<Version>, StoreError> {
    let sql = format!(
        "SELECT version FROM {table} WHERE id = $1{}",
        C::DIALECT.for_update()
    );
    Ok(single_int(conn, &sql, &[id.into()]).await?.map(Version))
}

/// Appends the condition of `scope` on the `project` column (nothing for
/// [`ProjectScope::All`]), its value as the next argument: the scope is a predicate of the
/// query, so a page holds `limit` visible rows and the keyset cursor stays exact.
pub(crate) fn push_scope<'a>(scope: &'a ProjectScope, sql: &mut String, args: &mut Vec<Arg<'a>>) {
    match scope {
        ProjectScope::All => {}
        ProjectScope::Project(p) => {
            args.push(p.as_str().into());
            sql.push_str(&format!(" AND project = ${}", args.len()));
        }
        ProjectScope::Nothing => sql.push_str(" AND 1 = 0"),
    }
}

/// The project of resource `id` of `kind`: `None` if there is no such resource,
/// `Some(None)` if it belongs to no project.
pub(crate) async fn project_of<C: SqlConn>(
    conn: &mut C,
    kind: ScopedKind,
    id: &str,
) -> Result<Option<Option<String>>, StoreError> {
    let sql = format!("SELECT project FROM {} WHERE id = $1", table_of(kind));
    match conn.row(&sql, &[id.into()], &[Col::OptText]).await? {
        None => Ok(None),
        Some(row) => {
            let [project] = columns(row)?;
            project.opt_text().map(Some)
        }
    }
}

/// Ids bound in one `IN (...)` list of [`projects_of`]: far under the bound-parameter limits of
/// SQLite (32,766) and PostgreSQL (65,535).
const IDS_PER_STATEMENT: usize = 500;

/// The projects of the resources `ids` of `kind` that exist: one statement per
/// [`IDS_PER_STATEMENT`] ids.
pub(crate) async fn projects_of<C: SqlConn>(
    conn: &mut C,
    kind: ScopedKind,
    ids: &[&str],
) -> Result<Vec<(String, Option<String>)>, StoreError> {
    let mut found = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(IDS_PER_STATEMENT) {
        let sql = format!(
            "SELECT id, project FROM {} WHERE id IN ({})",
            table_of(kind),
            placeholders(1, chunk.len())
        );
        let args: Vec<Arg<'_>> = chunk.iter().map(|&id| id.into()).collect();
        for row in conn.rows(&sql, &args, &[Col::Text, Col::OptText]).await? {
            let [id, project] = columns(row)?;
            found.push((id.text()?, project.opt_text()?));
        }
    }
    Ok(found)
}

/// The SQL expression of the project of instance `$arg`, which an op-occ or alarm copies
/// when it is inserted (NULL when the instance is gone or has none).
pub(crate) fn instance_project(arg: usize) -> String {
    format!("(SELECT project FROM vnf_instances WHERE id = ${arg})")
}

/// The table holding resources of `kind`.
fn table_of(kind: ScopedKind) -> &'static str {
    match kind {
        ScopedKind::Instance => "vnf_instances",
        ScopedKind::OpOcc => "op_occs",
        ScopedKind::Package => "vnf_packages",
        ScopedKind::Subscription => "subscriptions",
        ScopedKind::Alarm => "alarms",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_is_a_predicate_on_the_project_column() {
        let mut sql = String::from("SELECT id FROM t WHERE 1 = 1");
        let mut args = vec![Arg::Int(1)];
        push_scope(&ProjectScope::All, &mut sql, &mut args);
        assert_eq!(
            (sql.as_str(), args.len()),
            ("SELECT id FROM t WHERE 1 = 1", 1)
        );
        let a = ProjectScope::Project("a".into());
        push_scope(&a, &mut sql, &mut args);
        assert!(sql.ends_with(" AND project = $2"), "{sql}");
        assert!(matches!(args[1], Arg::Text("a")));
        push_scope(&ProjectScope::Nothing, &mut sql, &mut args);
        assert!(sql.ends_with(" AND 1 = 0"), "{sql}");
    }

    #[test]
    fn placeholders_count_from_first() {
        assert_eq!(placeholders(3, 3), "$3, $4, $5");
        assert_eq!(placeholders(1, 0), "");
    }

    #[test]
    fn page_keeps_limit_and_names_the_cursor() {
        let p = page(vec![1, 2, 3], 2, |i| i.to_string());
        assert_eq!(p.items, vec![1, 2]);
        assert_eq!(p.next.as_deref(), Some("2"));
        let p = page(vec![1, 2], 2, |i| i.to_string());
        assert_eq!(p.next, None);
    }

    #[test]
    fn cell_errors_do_not_echo_values() {
        let e = Cell::Text("s3cret".into()).int().unwrap_err().to_string();
        assert!(!e.contains("s3cret"), "{e}");
        assert!(e.contains("expected an integer column, got a text"), "{e}");
    }
}
