//! Write transactions run directly on an SQLite connection's handle.
//!
//! sqlx runs each SQLite connection on its own thread and hands every statement to it over a
//! channel; a transaction of eight statements costs eight round trips between threads, which
//! on a small virtual machine (about 40 µs each when the threads are on different cores) cost
//! more than the statements. [`DirectTx`] takes the connection's handle from that thread once
//! ([`sqlx::sqlite::SqliteConnection::lock_handle`], the supported way to call the SQLite C
//! API on a sqlx connection) and runs the whole transaction on the caller's thread.
//!
//! Everything here finalizes its statements before returning, so the connection goes back to
//! sqlx as it came (sqlx refuses to close a connection with statements left open), and a
//! transaction dropped before [`DirectTx::commit`] is rolled back.
#![allow(unsafe_code)]

use std::collections::HashMap;
use std::ffi::{CStr, c_int};
use std::marker::PhantomData;
use std::ptr::{self, NonNull};
use std::time::{Duration, Instant};

use libsqlite3_sys as ffi;
use sqlx::sqlite::LockedSqliteHandle;

use crate::hot::{Arg, Cell, Col, DbError, WriteTx};

/// The raw connection handle.
struct Handle(NonNull<ffi::sqlite3>);

// SAFETY: the handle is only used while its `LockedSqliteHandle` is borrowed by the
// `DirectTx` that holds it, which gives exclusive access to the connection; sqlx opens
// connections in SQLite's multi-thread mode, where a connection may be used from any thread
// as long as no two threads use it at once.
unsafe impl Send for Handle {}

/// Prepared statements kept with one connection, by SQL text (the hot path's statements are
/// string constants). Must be emptied ([`StatementCache::clear`]) before the connection closes.
#[derive(Default)]
pub(crate) struct StatementCache {
    statements: HashMap<(usize, usize), Statement>,
}

impl StatementCache {
    /// Finalizes every statement. The caller has the connection to itself.
    pub(crate) fn clear(&mut self) {
        self.statements.clear();
    }
}

impl std::fmt::Debug for StatementCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StatementCache({} statements)", self.statements.len())
    }
}

/// An open `BEGIN IMMEDIATE` transaction on a locked connection handle.
pub(crate) struct DirectTx<'h> {
    db: Handle,
    cache: Option<&'h mut StatementCache>,
    open: bool,
    _lock: PhantomData<&'h mut ()>,
}

impl<'h> DirectTx<'h> {
    /// Begins an immediate (write-locked) transaction. Waits for another connection's write
    /// lock up to `busy_timeout` by sleeping on the async runtime, not by blocking the thread
    /// in SQLite's busy handler.
    /// `cache` keeps prepared statements across transactions; it must belong to this
    /// connection.
    pub(crate) async fn begin(
        handle: &'h mut LockedSqliteHandle<'_>,
        cache: Option<&'h mut StatementCache>,
        busy_timeout: Duration,
    ) -> Result<DirectTx<'h>, DbError> {
        let mut tx = DirectTx {
            db: Handle(handle.as_raw_handle()),
            cache,
            open: false,
            _lock: PhantomData,
        };
        let started = Instant::now();
        let mut pause = Duration::from_millis(1);
        tx.set_busy_timeout(Duration::ZERO);
        let begun = loop {
            match tx.exec_batch(c"BEGIN IMMEDIATE") {
                Err((code, _)) if code & 0xff == ffi::SQLITE_BUSY => {
                    if started.elapsed() >= busy_timeout {
                        break Err(tx.error(code));
                    }
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(50));
                }
                Err((code, _)) => break Err(tx.error(code)),
                Ok(()) => break Ok(()),
            }
        };
        tx.set_busy_timeout(busy_timeout);
        begun?;
        tx.open = true;
        Ok(tx)
    }

    /// Commits.
    pub(crate) fn commit(mut self) -> Result<(), DbError> {
        self.open = false;
        self.exec_batch(c"COMMIT").map_err(|(code, _)| {
            let e = self.error(code);
            // A failed COMMIT may leave the transaction open: end it.
            let _ = self.exec_batch(c"ROLLBACK");
            e
        })
    }

    fn set_busy_timeout(&mut self, t: Duration) {
        let ms = c_int::try_from(t.as_millis()).unwrap_or(c_int::MAX);
        // SAFETY: valid handle, exclusively ours (see `Handle`).
        unsafe { ffi::sqlite3_busy_timeout(self.db.0.as_ptr(), ms) };
    }

    /// Runs SQL without arguments or results; the extended result code on failure.
    fn exec_batch(&mut self, sql: &CStr) -> Result<(), (c_int, ())> {
        // SAFETY: valid handle and NUL-terminated SQL; no callback.
        let rc = unsafe {
            ffi::sqlite3_exec(
                self.db.0.as_ptr(),
                sql.as_ptr(),
                None,
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
        if rc == ffi::SQLITE_OK {
            Ok(())
        } else {
            // SAFETY: valid handle.
            Err((
                unsafe { ffi::sqlite3_extended_errcode(self.db.0.as_ptr()) },
                (),
            ))
        }
    }

    /// The connection's current error as a [`DbError`].
    fn error(&self, code: c_int) -> DbError {
        // SAFETY: valid handle; sqlite3_errmsg returns a NUL-terminated string owned by the
        // connection, copied before any other call.
        let message = unsafe { CStr::from_ptr(ffi::sqlite3_errmsg(self.db.0.as_ptr())) }
            .to_string_lossy()
            .into_owned();
        DbError {
            unique: code == ffi::SQLITE_CONSTRAINT_UNIQUE
                || code == ffi::SQLITE_CONSTRAINT_PRIMARYKEY,
            message: format!("{message} (code {code})"),
        }
    }

    /// Prepares one statement.
    fn prepare(&self, sql: &str) -> Result<Statement, DbError> {
        let db = self.db.0.as_ptr();
        let len = c_int::try_from(sql.len()).map_err(|_| DbError {
            unique: false,
            message: "statement too long".into(),
        })?;
        let mut raw: *mut ffi::sqlite3_stmt = ptr::null_mut();
        let mut tail: *const std::ffi::c_char = ptr::null();
        // SAFETY: `sql` is valid for `len` bytes; out-pointers are valid. PERSISTENT: the
        // statement may be kept for the connection's lifetime.
        let rc = unsafe {
            ffi::sqlite3_prepare_v3(
                db,
                sql.as_ptr().cast(),
                len,
                ffi::SQLITE_PREPARE_PERSISTENT,
                &mut raw,
                &mut tail,
            )
        };
        if rc != ffi::SQLITE_OK {
            // SAFETY: valid handle.
            return Err(self.error(unsafe { ffi::sqlite3_extended_errcode(db) }));
        }
        let Some(stmt) = NonNull::new(raw) else {
            return Err(DbError {
                unique: false,
                message: "empty statement".into(),
            });
        };
        let stmt = Statement(stmt);
        // SAFETY: `tail` points into `sql` (or at its end).
        let rest = unsafe { tail.cast::<u8>().offset_from(sql.as_ptr()) };
        if usize::try_from(rest).ok() != Some(sql.len()) {
            return Err(DbError {
                unique: false,
                message: "one statement expected".into(),
            });
        }
        Ok(stmt)
    }

    /// Prepares (or takes from the cache), binds and steps one statement to its end;
    /// (rows changed, first row).
    fn run(
        &mut self,
        sql: &'static str,
        args: &[Arg<'_>],
        cols: &[Col],
    ) -> Result<(u64, Option<Vec<Cell>>), DbError> {
        let key = (sql.as_ptr() as usize, sql.len());
        let cached = self.cache.as_mut().and_then(|c| c.statements.remove(&key));
        let stmt = match cached {
            Some(stmt) => stmt,
            None => self.prepare(sql)?,
        };
        let out = self.execute_prepared(&stmt, args, cols);
        // SAFETY: statement of this connection; reset ends its execution and releases the
        // borrowed argument text before it goes back to the cache.
        unsafe {
            ffi::sqlite3_reset(stmt.0.as_ptr());
            ffi::sqlite3_clear_bindings(stmt.0.as_ptr());
        }
        if let Some(cache) = self.cache.as_mut() {
            cache.statements.insert(key, stmt);
        }
        out
    }

    fn execute_prepared(
        &mut self,
        stmt: &Statement,
        args: &[Arg<'_>],
        cols: &[Col],
    ) -> Result<(u64, Option<Vec<Cell>>), DbError> {
        let db = self.db.0.as_ptr();
        self.bind(stmt, args)?;
        let mut first = None;
        loop {
            // SAFETY: prepared statement of this connection, arguments bound and alive.
            let rc = unsafe { ffi::sqlite3_step(stmt.0.as_ptr()) };
            match rc {
                ffi::SQLITE_ROW => {
                    if first.is_none() {
                        first = Some(Self::read_row(stmt, cols)?);
                    }
                }
                ffi::SQLITE_DONE => break,
                _ => {
                    // SAFETY: valid handle.
                    return Err(self.error(unsafe { ffi::sqlite3_extended_errcode(db) }));
                }
            }
        }
        // SAFETY: valid handle.
        let changed = unsafe { ffi::sqlite3_changes64(db) };
        Ok((u64::try_from(changed).unwrap_or(0), first))
    }

    fn bind(&self, stmt: &Statement, args: &[Arg<'_>]) -> Result<(), DbError> {
        let s = stmt.0.as_ptr();
        // SAFETY: prepared statement.
        let count = unsafe { ffi::sqlite3_bind_parameter_count(s) };
        for i in 1..=count {
            // `$n` names argument n (1-based) wherever it appears, as in sqlx; SQLite numbers
            // named parameters by first appearance.
            // SAFETY: prepared statement, index in range; the name lives with the statement.
            let name = unsafe { ffi::sqlite3_bind_parameter_name(s, i) };
            let n = (!name.is_null())
                .then(|| unsafe { CStr::from_ptr(name) })
                .and_then(|c| c.to_str().ok())
                .and_then(|n| n.strip_prefix('$'))
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|n| (1..=args.len()).contains(n))
                .ok_or_else(|| DbError {
                    unique: false,
                    message: format!("statement parameter {i} has no argument"),
                })?;
            // SAFETY: prepared statement and index; text stays alive (borrowed from `args`)
            // until the statement is finalized, so SQLITE_STATIC (no copy) is sound.
            let rc = unsafe {
                match args[n - 1] {
                    Arg::Text(t) => ffi::sqlite3_bind_text64(
                        s,
                        i,
                        t.as_ptr().cast(),
                        t.len() as u64,
                        ffi::SQLITE_STATIC(),
                        ffi::SQLITE_UTF8 as u8,
                    ),
                    Arg::Int(v) => ffi::sqlite3_bind_int64(s, i, v),
                    Arg::Null => ffi::sqlite3_bind_null(s, i),
                }
            };
            if rc != ffi::SQLITE_OK {
                return Err(self.error(rc));
            }
        }
        Ok(())
    }

    fn read_row(stmt: &Statement, cols: &[Col]) -> Result<Vec<Cell>, DbError> {
        let s = stmt.0.as_ptr();
        cols.iter()
            .enumerate()
            .map(|(i, col)| {
                let i = c_int::try_from(i).unwrap_or(c_int::MAX);
                // SAFETY: the statement has a current row; column index checked by SQLite
                // (out of range reads as NULL).
                let kind = unsafe { ffi::sqlite3_column_type(s, i) };
                match (col, kind) {
                    (Col::OptText, ffi::SQLITE_NULL) => Ok(Cell::Null),
                    (Col::Int, ffi::SQLITE_INTEGER) => {
                        // SAFETY: as above.
                        Ok(Cell::Int(unsafe { ffi::sqlite3_column_int64(s, i) }))
                    }
                    (Col::Text | Col::OptText, ffi::SQLITE_TEXT) => {
                        // SAFETY: as above; the text pointer is valid for `n` bytes until the
                        // next step, and is copied at once.
                        let text = unsafe {
                            let p = ffi::sqlite3_column_text(s, i);
                            let n = usize::try_from(ffi::sqlite3_column_bytes(s, i)).unwrap_or(0);
                            if p.is_null() {
                                Vec::new()
                            } else {
                                std::slice::from_raw_parts(p, n).to_vec()
                            }
                        };
                        String::from_utf8(text)
                            .map(Cell::Text)
                            .map_err(|_| DbError {
                                unique: false,
                                message: format!("column {i} is not UTF-8"),
                            })
                    }
                    (col, kind) => Err(DbError {
                        unique: false,
                        message: format!("column {i}: expected {col:?}, found SQLite type {kind}"),
                    }),
                }
            })
            .collect()
    }
}

impl Drop for DirectTx<'_> {
    fn drop(&mut self) {
        if self.open {
            let _ = self.exec_batch(c"ROLLBACK");
        }
    }
}

/// A prepared statement, finalized when dropped.
struct Statement(NonNull<ffi::sqlite3_stmt>);

// SAFETY: a statement is only used, and finalized, by whoever has its connection to itself
// (a locked handle, or the connection's owner when closing it), as for `Handle`.
unsafe impl Send for Statement {}

impl Drop for Statement {
    fn drop(&mut self) {
        // SAFETY: prepared by `run` and finalized exactly once, here.
        unsafe { ffi::sqlite3_finalize(self.0.as_ptr()) };
    }
}

impl WriteTx for DirectTx<'_> {
    const FOR_UPDATE: bool = false;

    async fn execute(&mut self, sql: &'static str, args: &[Arg<'_>]) -> Result<u64, DbError> {
        self.run(sql, args, &[]).map(|(n, _)| n)
    }

    async fn row(
        &mut self,
        sql: &'static str,
        args: &[Arg<'_>],
        cols: &[Col],
    ) -> Result<Option<Vec<Cell>>, DbError> {
        self.run(sql, args, cols).map(|(_, row)| row)
    }
}
