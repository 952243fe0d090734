//! SQLite connections the store drives itself, through the SQLite C API, for the lifecycle's
//! hot path (reading instances and op-occs, creating an identifier, starting an operation,
//! recording a step).
//!
//! sqlx runs each SQLite connection on its own thread and hands every statement to it over a
//! channel, and its supported way to use the C API on such a connection (`lock_handle`) is
//! itself a hand-over to that thread. On a small virtual machine a hand-over between threads on
//! different cores costs about 40 µs, more than the hot path's statements. A
//! [`RawConnection`] has no thread of its own: its statements run on the caller's thread,
//! prepared once and kept for the connection's lifetime. The rest of the store (migrations,
//! listings, VIMs, subscriptions, packages) keeps using sqlx on its own connections to the
//! same file.
//!
//! A [`DirectTx`] dropped before [`DirectTx::commit`] is rolled back.
#![allow(unsafe_code)]

use std::collections::HashMap;
use std::ffi::{CStr, CString, c_int};
use std::path::Path;
use std::ptr::{self, NonNull};
use std::time::{Duration, Instant};

use libsqlite3_sys as ffi;

use crate::hot::{Arg, Cell, Col, DbError, SqlConn};

/// An SQLite connection opened and used directly through the C API, by one user at a time
/// (`&mut`), with the statements it ran kept prepared.
pub(crate) struct RawConnection {
    db: NonNull<ffi::sqlite3>,
    /// Prepared statements by SQL text (the hot path's statements are string constants, so
    /// their address and length identify them).
    statements: HashMap<(usize, usize), Statement>,
}

// SAFETY: the connection is opened with SQLITE_OPEN_NOMUTEX (multi-thread mode), where a
// connection may be used from any thread as long as no two threads use it at once; every use
// goes through `&mut RawConnection` (or `&mut` of a transaction borrowing it).
unsafe impl Send for RawConnection {}

impl std::fmt::Debug for RawConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RawConnection({} statements)", self.statements.len())
    }
}

impl RawConnection {
    /// Opens the existing database file at `path` and runs `setup` (`PRAGMA` statements
    /// separated by `;`). The file's schema and WAL mode are the sqlx side's business.
    pub(crate) fn open(path: &Path, setup: &str, busy_timeout: Duration) -> Result<Self, DbError> {
        let name = CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| DbError {
            unique: false,
            message: format!("database path {} contains a NUL byte", path.display()),
        })?;
        let mut raw: *mut ffi::sqlite3 = ptr::null_mut();
        // SAFETY: NUL-terminated name, valid out-pointer, no VFS name.
        let rc = unsafe {
            ffi::sqlite3_open_v2(
                name.as_ptr(),
                &mut raw,
                ffi::SQLITE_OPEN_READWRITE | ffi::SQLITE_OPEN_NOMUTEX,
                ptr::null(),
            )
        };
        let Some(db) = NonNull::new(raw) else {
            return Err(DbError {
                unique: false,
                message: format!("cannot open {} (SQLite code {rc})", path.display()),
            });
        };
        // From here on `Drop` closes the handle, also when opening failed.
        let mut conn = RawConnection {
            db,
            statements: HashMap::new(),
        };
        if rc != ffi::SQLITE_OK {
            return Err(conn.error(rc));
        }
        conn.set_busy_timeout(busy_timeout);
        let setup = CString::new(setup).map_err(|_| DbError {
            unique: false,
            message: "connection setup contains a NUL byte".into(),
        })?;
        conn.exec_batch(&setup).map_err(|code| conn.error(code))?;
        Ok(conn)
    }

    fn set_busy_timeout(&mut self, t: Duration) {
        let ms = c_int::try_from(t.as_millis()).unwrap_or(c_int::MAX);
        // SAFETY: valid handle, exclusively ours.
        unsafe { ffi::sqlite3_busy_timeout(self.db.as_ptr(), ms) };
    }

    /// Runs SQL without arguments or results; the extended result code on failure.
    fn exec_batch(&mut self, sql: &CStr) -> Result<(), c_int> {
        // SAFETY: valid handle and NUL-terminated SQL; no callback.
        let rc = unsafe {
            ffi::sqlite3_exec(
                self.db.as_ptr(),
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
            Err(unsafe { ffi::sqlite3_extended_errcode(self.db.as_ptr()) })
        }
    }

    /// The connection's current error as a [`DbError`].
    fn error(&self, code: c_int) -> DbError {
        // SAFETY: valid handle; sqlite3_errmsg returns a NUL-terminated string owned by the
        // connection, copied before any other call.
        let message = unsafe { CStr::from_ptr(ffi::sqlite3_errmsg(self.db.as_ptr())) }
            .to_string_lossy()
            .into_owned();
        DbError {
            unique: code == ffi::SQLITE_CONSTRAINT_UNIQUE
                || code == ffi::SQLITE_CONSTRAINT_PRIMARYKEY,
            message: format!("{message} (code {code})"),
        }
    }

    /// The connection's current extended error.
    fn last_error(&self) -> DbError {
        // SAFETY: valid handle.
        self.error(unsafe { ffi::sqlite3_extended_errcode(self.db.as_ptr()) })
    }

    /// Prepares one statement.
    fn prepare(&self, sql: &str) -> Result<Statement, DbError> {
        let db = self.db.as_ptr();
        let len = c_int::try_from(sql.len()).map_err(|_| DbError {
            unique: false,
            message: "statement too long".into(),
        })?;
        let mut raw: *mut ffi::sqlite3_stmt = ptr::null_mut();
        let mut tail: *const std::ffi::c_char = ptr::null();
        // SAFETY: `sql` is valid for `len` bytes; out-pointers are valid. PERSISTENT: the
        // statement is kept for the connection's lifetime.
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
            return Err(self.last_error());
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

    /// Prepares (or takes from the cache), binds and steps one statement to its end: the rows
    /// it changed and its rows read as `cols`.
    fn run(
        &mut self,
        sql: &'static str,
        args: &[Arg<'_>],
        cols: &[Col],
    ) -> Result<(u64, Vec<Vec<Cell>>), DbError> {
        let key = (sql.as_ptr() as usize, sql.len());
        let stmt = match self.statements.remove(&key) {
            Some(stmt) => stmt,
            None => self.prepare(sql)?,
        };
        let out = self.execute_prepared(&stmt, args, cols);
        // SAFETY: statement of this connection; reset ends its execution (releasing its read
        // snapshot) and clearing drops the borrowed argument text before it is kept.
        unsafe {
            ffi::sqlite3_reset(stmt.0.as_ptr());
            ffi::sqlite3_clear_bindings(stmt.0.as_ptr());
        }
        self.statements.insert(key, stmt);
        out
    }

    fn execute_prepared(
        &mut self,
        stmt: &Statement,
        args: &[Arg<'_>],
        cols: &[Col],
    ) -> Result<(u64, Vec<Vec<Cell>>), DbError> {
        let db = self.db.as_ptr();
        self.bind(stmt, args)?;
        let mut rows = Vec::new();
        loop {
            // SAFETY: prepared statement of this connection, arguments bound and alive.
            let rc = unsafe { ffi::sqlite3_step(stmt.0.as_ptr()) };
            match rc {
                ffi::SQLITE_ROW => rows.push(Self::read_row(stmt, cols)?),
                ffi::SQLITE_DONE => break,
                _ => return Err(self.last_error()),
            }
        }
        // SAFETY: valid handle.
        let changed = unsafe { ffi::sqlite3_changes64(db) };
        Ok((u64::try_from(changed).unwrap_or(0), rows))
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
                    (Col::Blob, ffi::SQLITE_BLOB | ffi::SQLITE_TEXT) => {
                        // SAFETY: as above (a zero-length blob reads as a null pointer).
                        let bytes = unsafe {
                            let p = ffi::sqlite3_column_blob(s, i).cast::<u8>();
                            let n = usize::try_from(ffi::sqlite3_column_bytes(s, i)).unwrap_or(0);
                            if p.is_null() {
                                Vec::new()
                            } else {
                                std::slice::from_raw_parts(p, n).to_vec()
                            }
                        };
                        Ok(Cell::Blob(bytes))
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

impl Drop for RawConnection {
    fn drop(&mut self) {
        // Statements first: a connection closes only once its statements are finalized.
        self.statements.clear();
        // SAFETY: valid handle, closed exactly once, here.
        unsafe { ffi::sqlite3_close(self.db.as_ptr()) };
    }
}

/// A prepared statement, finalized when dropped.
struct Statement(NonNull<ffi::sqlite3_stmt>);

// SAFETY: a statement lives in its connection's cache and is used and finalized only by
// whoever has that connection to itself (see `RawConnection`).
unsafe impl Send for Statement {}

impl Drop for Statement {
    fn drop(&mut self) {
        // SAFETY: prepared by `prepare` and finalized exactly once, here.
        unsafe { ffi::sqlite3_finalize(self.0.as_ptr()) };
    }
}

/// Statements outside a transaction: each is its own (a read sees one snapshot).
impl SqlConn for RawConnection {
    const FOR_UPDATE: bool = false;

    async fn execute(&mut self, sql: &'static str, args: &[Arg<'_>]) -> Result<u64, DbError> {
        self.run(sql, args, &[]).map(|(n, _)| n)
    }

    async fn rows(
        &mut self,
        sql: &'static str,
        args: &[Arg<'_>],
        cols: &[Col],
    ) -> Result<Vec<Vec<Cell>>, DbError> {
        self.run(sql, args, cols).map(|(_, rows)| rows)
    }
}

/// An open `BEGIN IMMEDIATE` transaction on a [`RawConnection`].
pub(crate) struct DirectTx<'c> {
    conn: &'c mut RawConnection,
    open: bool,
}

impl<'c> DirectTx<'c> {
    /// Begins an immediate (write-locked) transaction. Waits for another connection's write
    /// lock up to `busy_timeout` by sleeping on the async runtime, not by blocking the thread
    /// in SQLite's busy handler.
    pub(crate) async fn begin(
        conn: &'c mut RawConnection,
        busy_timeout: Duration,
    ) -> Result<DirectTx<'c>, DbError> {
        let started = Instant::now();
        let mut pause = Duration::from_millis(1);
        conn.set_busy_timeout(Duration::ZERO);
        let begun = loop {
            match conn.exec_batch(c"BEGIN IMMEDIATE") {
                Err(code) if code & 0xff == ffi::SQLITE_BUSY => {
                    if started.elapsed() >= busy_timeout {
                        break Err(conn.error(code));
                    }
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(50));
                }
                Err(code) => break Err(conn.error(code)),
                Ok(()) => break Ok(()),
            }
        };
        conn.set_busy_timeout(busy_timeout);
        begun?;
        Ok(DirectTx { conn, open: true })
    }

    /// The connection, to run the transaction's statements on.
    pub(crate) fn conn(&mut self) -> &mut RawConnection {
        self.conn
    }

    /// Commits.
    pub(crate) fn commit(mut self) -> Result<(), DbError> {
        self.open = false;
        self.conn.exec_batch(c"COMMIT").map_err(|code| {
            let e = self.conn.error(code);
            // A failed COMMIT may leave the transaction open: end it.
            let _ = self.conn.exec_batch(c"ROLLBACK");
            e
        })
    }
}

impl Drop for DirectTx<'_> {
    fn drop(&mut self) {
        if self.open {
            let _ = self.conn.exec_batch(c"ROLLBACK");
        }
    }
}
