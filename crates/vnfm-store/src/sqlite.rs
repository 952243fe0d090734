//! The SQLite backend: one database file, WAL journal, one in-process writer connection and a
//! small pool of readers.
//!
//! # Durability
//! By default the store runs WAL with `synchronous=NORMAL` ([`Durability::Normal`]): a commit
//! is written to the WAL before it returns but the WAL is only fsynced at checkpoints. A
//! committed transaction survives a crash of the VNFM process (the data is in the OS page
//! cache and the WAL), and the database is never corrupted, but a power loss or kernel crash
//! may roll back the transactions committed since the last checkpoint. With
//! [`Durability::Full`] every commit fsyncs the WAL, which survives power loss too at the
//! price of one fsync per write transaction (typically 0.5-10 ms, disk dependent, which caps
//! instance creation well below 2,000 per second on ordinary disks).
//!
//! # Concurrency
//! Every write transaction starts with `BEGIN IMMEDIATE`, so it takes SQLite's write lock
//! before reading anything: the check-then-insert of [`crate::Store::start_operation`] and the
//! claims of [`crate::Store::claim_expired`] are atomic across all processes that share the
//! file (other writers wait up to the busy timeout).
//!
//! # Connections
//! sqlx runs every SQLite connection on a thread of its own and hands each statement over to
//! it. The lifecycle's hot path (reading instances, op-occs, op-occ data and the VIMs an
//! instance registered; creating an identifier, starting an operation, recording a step) runs
//! instead on connections the store drives through the SQLite C API on the caller's thread,
//! with their statements kept prepared (`sqlite_direct`; `docs/performance.md` has the
//! figures): a few read connections, and with [`Durability::Normal`] a writer. Everything else
//! goes through sqlx: one writer connection, kept by the store rather than in sqlx's pool
//! (which tests every connection it gets back with a round trip to the connection's thread),
//! and a pool of readers. Writes of this process take turns on one lock, whichever connection
//! they use.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use sqlx::pool::PoolConnection;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePool, SqlitePoolOptions,
    SqliteSynchronous, SqliteTransactionManager,
};
use sqlx::{Connection, Sqlite};
use sqlx_core::transaction::TransactionManager;
use tokio::sync::{Mutex, OwnedMutexGuard, OwnedSemaphorePermit, Semaphore};

use crate::error::{StoreError, backend};
use crate::sql::{MigrationSource, impl_sql_store, migrate};
use crate::sqlite_direct::{DirectTx, RawConnection};

/// The SQLite schema migrations.
pub(crate) const MIGRATIONS: &[MigrationSource] = &[
    (
        1,
        "init",
        include_str!("../migrations/sqlite/0001_init.sql"),
    ),
    (
        2,
        "packages",
        include_str!("../migrations/sqlite/0002_packages.sql"),
    ),
    (
        3,
        "outbox order",
        include_str!("../migrations/sqlite/0003_outbox_order.sql"),
    ),
    (
        4,
        "pkgm subscriptions",
        include_str!("../migrations/sqlite/0004_pkgm_subscriptions.sql"),
    ),
    (
        5,
        "settings",
        include_str!("../migrations/sqlite/0005_settings.sql"),
    ),
    (
        6,
        "package content chunks",
        include_str!("../migrations/sqlite/0006_package_content_chunks.sql"),
    ),
    (
        7,
        "outbox summary index",
        include_str!("../migrations/sqlite/0007_outbox_summary.sql"),
    ),
];

/// Page cache of the writer connection: index pages of large tables stay in memory, which
/// keeps inserts at several thousand per second on a 50,000-instance table.
const WRITER_CACHE_KIB: u32 = 64 * 1024;
/// Page cache of each reader connection, and of the sqlx writer when the hot path has a
/// writer of its own.
const READER_CACHE_KIB: u32 = 8 * 1024;
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
}

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions {
            durability: Durability::Normal,
            busy_timeout: Duration::from_secs(10),
            readers: 4,
        }
    }
}

/// A [`crate::Store`] on an SQLite database.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    reader: SqlitePool,
    /// The hot path's read connections (none for the in-memory store, whose reads share its
    /// one sqlx connection).
    raw_readers: Option<Arc<RawReaders>>,
    writer: Writer,
    busy_timeout: Duration,
}

impl SqliteStore {
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
        let connect = SqliteConnectOptions::new()
            .filename(path.as_ref())
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(match options.durability {
                Durability::Normal => SqliteSynchronous::Normal,
                Durability::Full => SqliteSynchronous::Full,
            })
            .busy_timeout(options.busy_timeout)
            .foreign_keys(true)
            // Checkpoint (which fsyncs) every ~40 MB of WAL rather than every 4 MB, and keep
            // the file from staying that large afterwards.
            .pragma("wal_autocheckpoint", WAL_AUTOCHECKPOINT_PAGES.to_string())
            .pragma("journal_size_limit", JOURNAL_SIZE_LIMIT_BYTES.to_string());
        // With Durability::Full the hot path writes through sqlx (below), so the fsync of every
        // commit blocks sqlx's connection thread rather than the caller's: that connection
        // then gets the writer's page cache.
        let raw_writer = options.durability == Durability::Normal;
        let sqlx_writer_cache = if raw_writer {
            READER_CACHE_KIB
        } else {
            WRITER_CACHE_KIB
        };
        let writer_options = connect
            .clone()
            .pragma("cache_size", format!("-{sqlx_writer_cache}"));
        // Switching a fresh file to WAL needs an exclusive lock that SQLite does not wait for
        // (no busy handler): when several processes open a new file at once, the losers get
        // SQLITE_BUSY and retry (the file is in WAL mode from then on, so the retry is cheap).
        let mut attempt = 0;
        let mut writer = loop {
            match SqliteConnection::connect_with(&writer_options).await {
                Ok(conn) => break conn,
                Err(e) if is_busy(&e) && attempt < 10 => {
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(10 * attempt)).await;
                }
                Err(e) => return Err(backend(e)),
            }
        };
        Self::migrate(&mut writer).await?;
        let path = path.as_ref().to_path_buf();
        let raw = if raw_writer {
            let setup = format!(
                "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; \
                 PRAGMA cache_size = -{WRITER_CACHE_KIB}; \
                 PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT_PAGES}; \
                 PRAGMA journal_size_limit = {JOURNAL_SIZE_LIMIT_BYTES}"
            );
            Some(open_raw(path.clone(), setup, options.busy_timeout).await?)
        } else {
            None
        };
        let reader_options = connect.pragma("cache_size", format!("-{READER_CACHE_KIB}"));
        let reader = SqlitePoolOptions::new()
            .max_connections(options.readers.max(1))
            .test_before_acquire(false)
            .connect_with(reader_options)
            .await
            .map_err(backend)?;
        Ok(SqliteStore {
            reader,
            raw_readers: Some(Arc::new(RawReaders {
                idle: std::sync::Mutex::new(Vec::new()),
                permits: Arc::new(Semaphore::new(options.readers.max(1) as usize)),
                path,
                busy_timeout: options.busy_timeout,
            })),
            writer: Writer::Own(Arc::new(Mutex::new(WriterState {
                conn: Some(writer),
                raw,
            }))),
            busy_timeout: options.busy_timeout,
        })
    }

    /// A private in-memory database (lost when the store is dropped), for tests and
    /// throwaway runs. Reads and writes share its single connection.
    pub async fn memory() -> Result<SqliteStore, StoreError> {
        let connect = SqliteConnectOptions::from_str("sqlite::memory:")
            .map_err(backend)?
            .foreign_keys(true);
        // Each connection to :memory: is its own database: keep exactly one, forever.
        let pool = SqlitePoolOptions::new()
            .min_connections(1)
            .max_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(connect)
            .await
            .map_err(backend)?;
        Self::migrate(&mut *pool.acquire().await.map_err(backend)?).await?;
        Ok(SqliteStore {
            reader: pool.clone(),
            raw_readers: None,
            writer: Writer::Pool(pool),
            busy_timeout: SqliteOptions::default().busy_timeout,
        })
    }

    /// Closes all connections (checkpointing the WAL).
    pub async fn close(&self) {
        self.reader.close().await;
        if let Some(r) = &self.raw_readers {
            r.permits.close();
            // Connections in use close when their readers hand them back.
            drop(std::mem::take(
                &mut *r.idle.lock().unwrap_or_else(|e| e.into_inner()),
            ));
        }
        match &self.writer {
            Writer::Pool(pool) => pool.close().await,
            Writer::Own(state) => {
                let mut state = state.lock().await;
                drop(state.raw.take());
                if let Some(conn) = state.conn.take() {
                    let _ = conn.close().await;
                }
            }
        }
    }

    /// Migrates, retrying when another process migrated the same fresh file concurrently
    /// (SQLite has no lock the migrator could hold across its transactions: the loser fails
    /// on "table already exists" and, on retry, finds the migration applied).
    async fn migrate(conn: &mut SqliteConnection) -> Result<(), StoreError> {
        let mut attempt = 0;
        loop {
            match Self::migrate_once(conn).await {
                Err(StoreError::Migration(_)) if attempt < 3 => {
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(20 * attempt)).await;
                }
                other => return other,
            }
        }
    }

    async fn migrate_once(conn: &mut SqliteConnection) -> Result<(), StoreError> {
        let has_table: Option<i64> = sqlx::query_scalar(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'",
        )
        .fetch_optional(&mut *conn)
        .await
        .map_err(backend)?;
        let applied_max = match has_table {
            Some(_) => {
                sqlx::query_scalar::<_, Option<i64>>("SELECT MAX(version) FROM _sqlx_migrations")
                    .fetch_one(&mut *conn)
                    .await
                    .map_err(backend)?
            }
            None => None,
        };
        migrate(MIGRATIONS, applied_max, conn).await
    }

    fn reader(&self) -> &SqlitePool {
        &self.reader
    }

    /// A connection of the sqlx reader pool, for reads that need one to themselves.
    async fn read_conn(&self) -> Result<PoolConnection<Sqlite>, StoreError> {
        self.reader.acquire().await.map_err(backend)
    }

    /// A read connection of the hot path, waiting while all are in use; `None` for the
    /// in-memory store.
    async fn raw_reader(&self) -> Result<Option<RawReader>, StoreError> {
        let Some(r) = &self.raw_readers else {
            return Ok(None);
        };
        let permit = r
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| StoreError::Backend("the SQLite store is closed".into()))?;
        let idle = r.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let conn = match idle {
            Some(c) => c,
            None => {
                let setup = format!("PRAGMA cache_size = -{READER_CACHE_KIB}");
                open_raw(r.path.clone(), setup, r.busy_timeout).await?
            }
        };
        Ok(Some(RawReader {
            conn: Some(conn),
            readers: r.clone(),
            _permit: permit,
        }))
    }

    /// The writer connection, waiting for other writes of this process to finish.
    async fn write_conn(&self) -> Result<WriteConn, StoreError> {
        match &self.writer {
            Writer::Pool(pool) => Ok(WriteConn::Pool(pool.acquire().await.map_err(backend)?)),
            Writer::Own(state) => {
                let guard = state.clone().lock_owned().await;
                if guard.conn.is_none() {
                    return Err(StoreError::Backend("the SQLite store is closed".into()));
                }
                Ok(WriteConn::Own(guard))
            }
        }
    }

    async fn begin_write(&self) -> Result<SqliteWriteTransaction, StoreError> {
        SqliteWriteTransaction::begin(self.write_conn().await?).await
    }
}

/// Opens a [`RawConnection`] to `path` and runs `setup`, on a blocking thread (opening may wait
/// for the file's lock).
async fn open_raw(
    path: PathBuf,
    setup: String,
    busy_timeout: Duration,
) -> Result<RawConnection, StoreError> {
    tokio::task::spawn_blocking(move || RawConnection::open(&path, &setup, busy_timeout))
        .await
        .map_err(|e| StoreError::Backend(format!("opening an SQLite connection failed: {e}")))?
        .map_err(StoreError::from)
}

impl SqliteWriteTransaction {
    /// Begins a `BEGIN IMMEDIATE` transaction on the sqlx writer.
    async fn begin(mut conn: WriteConn) -> Result<SqliteWriteTransaction, StoreError> {
        SqliteTransactionManager::begin(
            &mut conn,
            Some(sqlx::SqlSafeStr::into_sql_str("BEGIN IMMEDIATE")),
        )
        .await
        .map_err(backend)?;
        Ok(SqliteWriteTransaction { conn, open: true })
    }
}

/// The hot path's read connections, opened on demand up to the permits' number.
#[derive(Debug)]
struct RawReaders {
    idle: std::sync::Mutex<Vec<RawConnection>>,
    permits: Arc<Semaphore>,
    path: PathBuf,
    busy_timeout: Duration,
}

/// A hot-path read connection, held exclusively and handed back when dropped.
struct RawReader {
    conn: Option<RawConnection>,
    readers: Arc<RawReaders>,
    _permit: OwnedSemaphorePermit,
}

impl RawReader {
    fn conn(&mut self) -> &mut RawConnection {
        self.conn.as_mut().expect("connection until dropped")
    }
}

impl Drop for RawReader {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take()
            && !self.readers.permits.is_closed()
        {
            self.readers
                .idle
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(conn);
        }
    }
}

/// The connection writes go through. A file store keeps its one writer connection outside
/// sqlx's pool: the pool would test every connection it gets back with a round trip to the
/// connection's thread, in a task spawned per release, before the next write could have it.
#[derive(Debug, Clone)]
enum Writer {
    /// The in-memory store's single connection, shared with reads.
    Pool(SqlitePool),
    /// The file store's writer.
    Own(Arc<Mutex<WriterState>>),
}

/// The file store's writer connections (`None` once closed): sqlx's, and the hot path's own
/// (with [`Durability::Normal`]).
#[derive(Debug)]
struct WriterState {
    conn: Option<SqliteConnection>,
    raw: Option<RawConnection>,
}

/// The writer connection, held exclusively.
enum WriteConn {
    Pool(PoolConnection<Sqlite>),
    Own(OwnedMutexGuard<WriterState>),
}

impl WriteConn {
    /// The hot path's own writer, if the store has one.
    fn raw(&mut self) -> Option<&mut RawConnection> {
        match self {
            WriteConn::Pool(_) => None,
            WriteConn::Own(g) => g.raw.as_mut(),
        }
    }
}

impl Deref for WriteConn {
    type Target = SqliteConnection;

    fn deref(&self) -> &SqliteConnection {
        match self {
            WriteConn::Pool(c) => c,
            // `write_conn` hands out only guards of an open connection.
            WriteConn::Own(g) => g.conn.as_ref().expect("open writer connection"),
        }
    }
}

impl DerefMut for WriteConn {
    fn deref_mut(&mut self) -> &mut SqliteConnection {
        match self {
            WriteConn::Pool(c) => c,
            WriteConn::Own(g) => g.conn.as_mut().expect("open writer connection"),
        }
    }
}

/// A `BEGIN IMMEDIATE` transaction on the writer connection; rolled back unless committed.
pub(crate) struct SqliteWriteTransaction {
    conn: WriteConn,
    open: bool,
}

impl SqliteWriteTransaction {
    /// Commits.
    pub(crate) async fn commit(mut self) -> Result<(), sqlx::Error> {
        SqliteTransactionManager::commit(&mut self.conn).await?;
        self.open = false;
        Ok(())
    }
}

impl Deref for SqliteWriteTransaction {
    type Target = SqliteConnection;

    fn deref(&self) -> &SqliteConnection {
        &self.conn
    }
}

impl DerefMut for SqliteWriteTransaction {
    fn deref_mut(&mut self) -> &mut SqliteConnection {
        &mut self.conn
    }
}

impl Drop for SqliteWriteTransaction {
    fn drop(&mut self) {
        if self.open {
            // Queued on the connection; runs before its next statement.
            SqliteTransactionManager::start_rollback(&mut self.conn);
        }
    }
}

/// SQLITE_BUSY and its extended codes (e.g. SQLITE_BUSY_SNAPSHOT).
fn is_busy(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db)
        if db.code().and_then(|c| c.parse::<i32>().ok()).is_some_and(|c| c & 0xff == 5))
}

/// Runs `$body` (an expression using `$tx`, a `&mut` [`crate::hot::SqlConn`] inside a write
/// transaction, evaluating to a `Result`) in a write transaction of `$store`, committed when
/// the body succeeded and rolled back otherwise.
macro_rules! sqlite_hot_write {
    ($store:expr, |$tx:ident| $body:expr) => {{
        let store: &SqliteStore = $store;
        let mut conn = store.write_conn().await?;
        if let Some(raw) = conn.raw() {
            let mut direct = DirectTx::begin(raw, store.busy_timeout)
                .await
                .map_err(StoreError::from)?;
            let out = {
                let $tx = direct.conn();
                $body
            };
            if out.is_ok() {
                if let Err(e) = direct.commit() {
                    return Err(StoreError::from(e).into());
                }
            }
            out
        } else {
            let mut inner = SqliteWriteTransaction::begin(conn).await?;
            let out = {
                let $tx = &mut crate::sql::SqlxConn(&mut *inner);
                $body
            };
            if out.is_ok() {
                if let Err(e) = inner.commit().await {
                    return Err(backend(e).into());
                }
            }
            out
        }
    }};
}

/// Runs `$body` (an expression using `$conn`, a `&mut` [`crate::hot::SqlConn`]) on a read
/// connection of the hot path (the in-memory store's one sqlx connection).
macro_rules! sqlite_hot_read {
    ($store:expr, |$conn:ident| $body:expr) => {{
        let store: &SqliteStore = $store;
        match store.raw_reader().await? {
            Some(mut reader) => {
                let $conn = reader.conn();
                $body
            }
            None => {
                let mut pooled = store.read_conn().await?;
                let $conn = &mut crate::sql::SqlxConn(&mut *pooled);
                $body
            }
        }
    }};
}

impl_sql_store!(
    store = SqliteStore,
    db = sqlx::Sqlite,
    conn = sqlx::SqliteConnection,
    for_update = "",
    skip_locked = "",
    contains_fn = "instr",
    hot_write = sqlite_hot_write,
    hot_read = sqlite_hot_read,
);
