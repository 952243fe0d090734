//! The SQLite backend: one database file in WAL mode, one writer connection on a thread of its
//! own that commits concurrent writes together, one that checkpoints the WAL beside it, and a
//! few read connections.
//!
//! # Durability
//! By default the store runs WAL with `synchronous=NORMAL` ([`Durability::Normal`]): a commit
//! is written to the WAL before it is answered but the WAL is only fsynced at checkpoints,
//! which a connection of their own runs in the background, at most every
//! [`checkpointer::CHECKPOINT_INTERVAL`] while writes go on (see `checkpointer`). A
//! committed transaction survives a crash of the VNFM process (the data is in the OS page
//! cache and the WAL), and the database is never corrupted, but a power loss or kernel crash
//! may roll back the transactions committed since the last checkpoint. With
//! [`Durability::Full`] every commit fsyncs the WAL, which survives power loss too. Either way
//! a write is answered only after the commit that contains it.
//!
//! # Group commit
//! Writes go to the writer thread (see `writer`), which runs each caller's transaction in a
//! savepoint and commits the callers that arrived together in one transaction: with
//! [`Durability::Full`], one fsync for the batch instead of one per write. Each write still
//! reads and writes as if alone (the thread runs one at a time), a failing write is rolled
//! back alone, and the per-instance lock and "one step, one transaction" hold per operation.
//!
//! # Several processes
//! Every batch begins with `BEGIN IMMEDIATE`, so it takes SQLite's write lock before reading
//! anything: the check-then-insert of [`vnfm_store::OpOccStore::start_operation`] and the claims of
//! [`vnfm_store::OpOccStore::claim_expired`] are atomic across all processes sharing the file (another
//! process's writer waits up to the busy timeout).

mod checkpointer;
mod conn;
mod migrate;
mod readers;
mod writer;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures_core::future::BoxFuture;
use rusqlite::{Connection, OpenFlags};

use crate::database::{Database, SqlStore};
use checkpointer::Checkpointer;
use readers::{ReadConn, Readers};
use vnfm_store::StoreError;
use writer::Writer;

/// Default page cache of the writer connection: SQLite's own default. A larger one makes every
/// commit slower, not faster: at the end of each write transaction SQLite trims its page cache
/// (`pcache1TruncateUnsafe`), at a cost that grows with the pages cached (10 % of the writer
/// thread's time with 64 MiB, 3 % with 8 MiB, during REST lifecycle cycles), while the pages it
/// does not keep are read from the operating system's cache. See `docs/performance.md`.
pub const DEFAULT_WRITER_CACHE_KIB: u32 = 2 * 1024;
/// Default page cache of each reader connection.
pub const DEFAULT_READER_CACHE_KIB: u32 = 8 * 1024;
/// WAL pages between automatic checkpoints (SQLite's default is 1000).
const WAL_AUTOCHECKPOINT_PAGES: u32 = 10_000;
/// Size the WAL file is truncated to after a checkpoint.
const JOURNAL_SIZE_LIMIT_BYTES: u64 = 64 * 1024 * 1024;

/// How hard a commit is pushed to disk (SQLite `synchronous` in WAL mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// `synchronous=NORMAL`: survives process crashes; a power loss may lose the last
    /// commits (never corrupts).
    #[default]
    Normal,
    /// `synchronous=FULL`: every commit fsyncs; survives power loss.
    Full,
}

/// Options of [`SqliteStore::open_with`].
#[derive(Debug, Clone)]
pub struct SqliteOptions {
    /// Commit durability.
    pub durability: Durability,
    /// How long a writer waits for another process's write lock before failing.
    pub busy_timeout: Duration,
    /// Read connections (the writer is always one).
    pub readers: u32,
    /// Page cache of the writer connection, in KiB ([`DEFAULT_WRITER_CACHE_KIB`]).
    pub writer_cache_kib: u32,
    /// Page cache of each read connection, in KiB ([`DEFAULT_READER_CACHE_KIB`]). The store's
    /// caches hold at most `writer_cache_kib + readers * reader_cache_kib` (34 MiB with the
    /// defaults), filled only as the database grows.
    pub reader_cache_kib: u32,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions {
            durability: Durability::Normal,
            busy_timeout: Duration::from_secs(10),
            readers: 4,
            writer_cache_kib: DEFAULT_WRITER_CACHE_KIB,
            reader_cache_kib: DEFAULT_READER_CACHE_KIB,
        }
    }
}

/// How a connection is set up once opened.
#[derive(Debug, Clone)]
pub(crate) struct ConnectionSetup {
    busy_timeout: Duration,
    /// PRAGMA statements run after opening.
    pragmas: String,
}

/// Opens a connection to `path` (creating the file if missing) and applies `setup`.
fn open_connection(path: &Path, setup: &ConnectionSetup) -> Result<Connection, StoreError> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| StoreError::Backend(format!("opening {} failed: {e}", path.display())))?;
    conn.busy_timeout(setup.busy_timeout)
        .and_then(|()| conn.execute_batch(&setup.pragmas))
        .map_err(|e| StoreError::from(conn::db_error(e)))?;
    conn.set_prepared_statement_cache_capacity(conn::STATEMENT_CACHE);
    Ok(conn)
}

/// A [`vnfm_store::Store`] on an SQLite database.
pub type SqliteStore = SqlStore<SqliteBackend>;

/// The SQLite backend: the writer thread and the pool of read connections.
///
/// Public only inside a private module: the store's implementation detail, not its API.
#[derive(Debug, Clone)]
pub struct SqliteBackend {
    writer: Arc<Writer>,
    readers: Arc<Readers>,
    /// The directory of a [`SqliteStore::memory`] database, removed with the last clone.
    _scratch: Option<Arc<tempfile::TempDir>>,
}

impl SqlStore<SqliteBackend> {
    /// Opens (creating it if needed) the database file at `path` with default options and
    /// migrates it.
    pub async fn open(path: impl AsRef<Path>) -> Result<SqliteStore, StoreError> {
        Self::open_with(path, SqliteOptions::default()).await
    }

    /// Opens the database file at `path` with `options` and migrates it.
    pub async fn open_with(
        path: impl AsRef<Path>,
        options: SqliteOptions,
    ) -> Result<SqliteStore, StoreError> {
        let path = path.as_ref().to_path_buf();
        let synchronous = match options.durability {
            Durability::Normal => "NORMAL",
            Durability::Full => "FULL",
        };
        let writer_setup = ConnectionSetup {
            busy_timeout: options.busy_timeout,
            pragmas: format!(
                "PRAGMA foreign_keys = ON; PRAGMA synchronous = {synchronous}; \
                 PRAGMA cache_size = -{}; \
                 PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT_PAGES}; \
                 PRAGMA journal_size_limit = {JOURNAL_SIZE_LIMIT_BYTES}",
                options.writer_cache_kib
            ),
        };
        // The checkpointer syncs as the writer would.
        let checkpoint_setup = ConnectionSetup {
            busy_timeout: options.busy_timeout,
            pragmas: format!("PRAGMA synchronous = {synchronous}"),
        };
        // Opening may wait for another process's lock: off the async threads.
        let opened = path.clone();
        let (conn, checkpoint_conn) = tokio::task::spawn_blocking(move || {
            let writer = open_writer(&opened, &writer_setup)?;
            Ok::<_, StoreError>((writer, open_connection(&opened, &checkpoint_setup)?))
        })
        .await
        .map_err(|e| StoreError::Backend(format!("opening the SQLite store failed: {e}")))??;
        let checkpoints = Checkpointer::spawn(checkpoint_conn)?;
        let reader_setup = ConnectionSetup {
            busy_timeout: options.busy_timeout,
            pragmas: format!(
                "PRAGMA query_only = ON; PRAGMA cache_size = -{}",
                options.reader_cache_kib
            ),
        };
        Ok(SqlStore(
            SqliteBackend {
                writer: Arc::new(Writer::spawn(conn, checkpoints)?),
                readers: Arc::new(Readers::new(
                    path,
                    reader_setup,
                    options.readers.max(1) as usize,
                )),
                _scratch: None,
            },
            Default::default(),
        ))
    }

    /// A private database that disappears with the store (a file in a temporary directory,
    /// so that reads and writes can use connections of their own), for tests and throwaway
    /// runs.
    pub async fn memory() -> Result<SqliteStore, StoreError> {
        let dir = tempfile::tempdir()
            .map_err(|e| StoreError::Backend(format!("creating a temporary directory: {e}")))?;
        let mut store = Self::open(dir.path().join("vnfm.db")).await?;
        store.0._scratch = Some(Arc::new(dir));
        Ok(store)
    }

    /// Commits what was written, closes all connections (checkpointing the WAL) and refuses
    /// further use.
    pub async fn close(&self) {
        self.0.readers.close();
        self.0.writer.close().await;
    }
}

/// Opens the writer connection: WAL mode, then the migrations.
fn open_writer(path: &Path, setup: &ConnectionSetup) -> Result<Connection, StoreError> {
    let mut conn = open_connection(path, setup)?;
    // Switching a fresh file to WAL needs an exclusive lock that SQLite does not wait for (no
    // busy handler): when several processes open a new file at once, the losers get
    // SQLITE_BUSY and retry (the file is in WAL mode from then on, so the retry is cheap).
    let mut attempt = 0;
    loop {
        match conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get::<_, String>(0))
        {
            Ok(_) => break,
            Err(e) if conn::is_busy(&e) && attempt < 20 => {
                attempt += 1;
                std::thread::sleep(Duration::from_millis(10 * attempt));
            }
            Err(e) => return Err(conn::db_error(e).into()),
        }
    }
    migrate::migrate(&mut conn)?;
    // Each write runs in a savepoint of its batch's transaction, and SQLite keeps the pages a
    // savepoint changes in a sub-journal, which past 64 KiB spills to a temporary file: a file
    // created, written and deleted per batch, taking as many writes as the WAL. In memory it
    // is bounded by the pages one batch changes. Set after the migrations, whose index builds
    // may sort more than a batch changes; readers keep the default for their sorts.
    conn.execute_batch("PRAGMA temp_store = MEMORY")
        .map_err(|e| StoreError::from(conn::db_error(e)))?;
    Ok(conn)
}

impl Database for SqliteBackend {
    type Conn = Connection;
    type Reader = ReadConn;

    async fn reader(&self) -> Result<ReadConn, StoreError> {
        self.readers.get().await
    }

    async fn write<T, F>(&self, job: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut Connection) -> BoxFuture<'c, Result<T, StoreError>>
            + Send
            + 'static,
    {
        self.writer.write(job).await
    }

    async fn write_alone<T, F>(&self, job: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut Connection) -> BoxFuture<'c, Result<T, StoreError>>
            + Send
            + 'static,
    {
        self.writer.write(job).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::SqlConn;

    /// Runs `sql` on the writer, failing the write afterwards when `fail`.
    async fn write(store: &SqliteStore, sql: &'static str, fail: bool) -> Result<(), StoreError> {
        store
            .0
            .write(move |conn| {
                Box::pin(async move {
                    conn.execute(sql, &[]).await?;
                    if fail {
                        return Err(StoreError::Invalid("refused after writing".into()));
                    }
                    Ok(())
                })
            })
            .await
    }

    /// Creates table `t` with 5,000 rows of 400 bytes (about 500 pages of 4 KiB), in two
    /// writes.
    async fn fill_table(store: &SqliteStore) {
        write(
            store,
            "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)",
            false,
        )
        .await
        .unwrap();
        write(
            store,
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000) \
             INSERT INTO t SELECT i, printf('%.400c', 'x') FROM n",
            false,
        )
        .await
        .unwrap();
    }

    /// A write that changed far more pages than the savepoint's sub-journal keeps before it
    /// would spill is undone whole, and the writes around it stand.
    #[tokio::test]
    async fn a_failed_write_of_many_pages_is_undone_whole() {
        let store = SqliteStore::memory().await.unwrap();
        // About 500 pages of 4 KiB: 2 MiB in the failed write's sub-journal.
        fill_table(&store).await;
        let (kept, failed, added) = tokio::join!(
            write(&store, "UPDATE t SET v = printf('%.400c', 'a')", false),
            write(&store, "UPDATE t SET v = printf('%.400c', 'b')", true),
            write(&store, "INSERT INTO t VALUES (0, 'added')", false),
        );
        kept.unwrap();
        assert!(failed.is_err());
        added.unwrap();
        let mut reader = store.0.reader().await.unwrap();
        for (sql, expected) in [
            (
                "SELECT COUNT(*) FROM t WHERE v = printf('%.400c', 'a')",
                5000,
            ),
            ("SELECT COUNT(*) FROM t WHERE v = printf('%.400c', 'b')", 0),
            ("SELECT COUNT(*) FROM t WHERE id = 0 AND v = 'added'", 1),
        ] {
            let found = crate::sql::single_int(&mut *reader, sql, &[])
                .await
                .unwrap();
            assert_eq!(found, Some(expected), "{sql}");
        }
        // The sub-journal is kept in memory.
        let temp_store = store
            .0
            .write(|conn| {
                Box::pin(async move {
                    conn.rows("PRAGMA temp_store", &[], &[crate::sql::Col::Int])
                        .await
                        .map_err(StoreError::from)
                })
            })
            .await
            .unwrap();
        assert_eq!(temp_store, vec![vec![crate::sql::Cell::Int(2)]]);
    }

    /// Committed pages reach the database file without the writer checkpointing (its own
    /// automatic checkpoint waits for 10,000 WAL pages, far more than written here), and
    /// closing the store still checkpoints and removes the WAL.
    #[tokio::test]
    async fn commits_are_checkpointed_in_the_background_and_close_removes_the_wal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vnfm.db");
        let store = SqliteStore::open(&path).await.unwrap();
        let size = || std::fs::metadata(&path).unwrap().len();
        let before = size();
        // About 500 pages of 4 KiB, in the WAL once committed.
        fill_table(&store).await;
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while size() < before + 2 * 1024 * 1024 {
            assert!(
                std::time::Instant::now() < deadline,
                "the database file stayed at {} bytes: nothing was checkpointed",
                size()
            );
            tokio::time::sleep(checkpointer::CHECKPOINT_INTERVAL).await;
        }
        let wal = dir.path().join("vnfm.db-wal");
        assert!(wal.exists(), "the WAL is in use while the store is open");
        store.close().await;
        assert!(!wal.exists(), "closing the store removes the WAL");
        let reopened = SqliteStore::open(&path).await.unwrap();
        let mut reader = reopened.0.reader().await.unwrap();
        let rows = crate::sql::single_int(&mut *reader, "SELECT COUNT(*) FROM t", &[])
            .await
            .unwrap();
        assert_eq!(rows, Some(5000));
    }
}
