//! [`SqlConn`] on a `rusqlite` connection: statements run synchronously on the calling
//! thread (the writer's own thread, or a reader's caller) from a cache of prepared statements.

use std::future::{Future, ready};

use rusqlite::types::{Null, ToSqlOutput, Value as SqlValue, ValueRef};
use rusqlite::{CachedStatement, Connection, ErrorCode, ToSql};

use crate::sql::{Arg, Cell, Col, DbError, Dialect, SqlConn};

/// Prepared statements kept per connection (the store runs about a hundred distinct ones).
pub(super) const STATEMENT_CACHE: usize = 256;

impl SqlConn for Connection {
    const DIALECT: Dialect = Dialect::Sqlite;

    fn execute(
        &mut self,
        sql: &str,
        args: &[Arg<'_>],
    ) -> impl Future<Output = Result<u64, DbError>> + Send {
        ready(execute(self, sql, args))
    }

    fn rows(
        &mut self,
        sql: &str,
        args: &[Arg<'_>],
        cols: &[Col],
    ) -> impl Future<Output = Result<Vec<Vec<Cell>>, DbError>> + Send {
        ready(rows(self, sql, args, cols))
    }
}

impl ToSql for Arg<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match *self {
            Arg::Text(t) => ToSqlOutput::Borrowed(ValueRef::Text(t.as_bytes())),
            Arg::Int(i) => ToSqlOutput::Owned(SqlValue::Integer(i)),
            Arg::Blob(b) => ToSqlOutput::Borrowed(ValueRef::Blob(b)),
            Arg::Null | Arg::NullBlob | Arg::NullInt => return Null.to_sql(),
        })
    }
}

fn statement<'c>(
    conn: &'c Connection,
    sql: &str,
    args: &[Arg<'_>],
) -> Result<CachedStatement<'c>, DbError> {
    let mut stmt = conn.prepare_cached(&numbered(sql)).map_err(db_error)?;
    for (i, arg) in args.iter().enumerate() {
        stmt.raw_bind_parameter(i + 1, arg).map_err(db_error)?;
    }
    Ok(stmt)
}

fn execute(conn: &Connection, sql: &str, args: &[Arg<'_>]) -> Result<u64, DbError> {
    let mut stmt = statement(conn, sql, args)?;
    stmt.raw_execute().map(|n| n as u64).map_err(db_error)
}

fn rows(
    conn: &Connection,
    sql: &str,
    args: &[Arg<'_>],
    cols: &[Col],
) -> Result<Vec<Vec<Cell>>, DbError> {
    let mut stmt = statement(conn, sql, args)?;
    let mut rows = stmt.raw_query();
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(db_error)? {
        let cells = cols
            .iter()
            .enumerate()
            .map(|(i, col)| {
                Ok(match col {
                    Col::Int => Cell::Int(row.get(i)?),
                    Col::OptInt => row.get::<_, Option<i64>>(i)?.map_or(Cell::Null, Cell::Int),
                    Col::Text => Cell::Text(row.get(i)?),
                    Col::OptText => row
                        .get::<_, Option<String>>(i)?
                        .map_or(Cell::Null, Cell::Text),
                    Col::Blob => Cell::Blob(row.get(i)?),
                    Col::OptBlob => row
                        .get::<_, Option<Vec<u8>>>(i)?
                        .map_or(Cell::Null, Cell::Blob),
                })
            })
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(db_error)?;
        out.push(cells);
    }
    Ok(out)
}

/// `sql` with `$n` placeholders written `?n`: SQLite numbers `$n` parameters in order of first
/// appearance, `?n` by the number itself, which is what the statements mean.
fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('?');
        } else {
            out.push(c);
        }
    }
    out
}

/// A rusqlite error as the statements need it. SQLite's messages name tables, columns and
/// constraints, never bound values.
pub(super) fn db_error(e: rusqlite::Error) -> DbError {
    let unique = match &e {
        rusqlite::Error::SqliteFailure(f, _) => {
            f.code == ErrorCode::ConstraintViolation
                && matches!(
                    f.extended_code,
                    rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
                        | rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY
                )
        }
        _ => false,
    };
    let message = match &e {
        rusqlite::Error::SqliteFailure(f, Some(msg)) => {
            format!("{msg} (SQLite code {})", f.extended_code)
        }
        other => other.to_string(),
    };
    DbError {
        unique,
        unavailable: false,
        message,
    }
}

/// Whether the error is SQLite's "the database is locked by another connection".
pub(super) fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_bind_by_number() {
        assert_eq!(numbered("SELECT $2, $1, $10"), "SELECT ?2, ?1, ?10");
        assert_eq!(numbered("SELECT '$' || x"), "SELECT '$' || x");
        let mut conn = Connection::open_in_memory().unwrap();
        let row = crate::sql::SqlConn::rows(
            &mut conn,
            "SELECT $2 || $1",
            &[Arg::Text("a"), Arg::Text("b")],
            &[Col::Text],
        );
        let row = futures_executor_ready(row).unwrap();
        assert_eq!(row, vec![vec![Cell::Text("ba".into())]]);
    }

    #[test]
    fn unique_violations_are_told_apart() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (id TEXT PRIMARY KEY, v TEXT UNIQUE)")
            .unwrap();
        let insert = |conn: &mut Connection, id: &str, v: &str| {
            futures_executor_ready(crate::sql::SqlConn::execute(
                conn,
                "INSERT INTO t (id, v) VALUES ($1, $2)",
                &[Arg::Text(id), Arg::Text(v)],
            ))
        };
        insert(&mut conn, "a", "secret-1").unwrap();
        let e = insert(&mut conn, "a", "secret-2").unwrap_err();
        assert!(e.unique, "{e:?}");
        let e = insert(&mut conn, "b", "secret-1").unwrap_err();
        assert!(e.unique && e.message.contains("t.v"), "{e:?}");
        assert!(!e.message.contains("secret"), "{e:?}");
        let e = futures_executor_ready(crate::sql::SqlConn::execute(
            &mut conn,
            "INSERT INTO nowhere VALUES (1)",
            &[],
        ))
        .unwrap_err();
        assert!(!e.unique && e.message.contains("nowhere"), "{e:?}");
    }

    /// The output of a future that is ready at once (SQLite statements are).
    fn futures_executor_ready<F: Future>(f: F) -> F::Output {
        super::super::writer::run_ready(f).expect("ready")
    }
}
