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

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{Sqlite, Transaction};

use crate::error::{StoreError, backend};
use crate::sql::{MigrationSource, impl_sql_store, migrate};

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
];

/// Page cache of the writer connection: index pages of large tables stay in memory, which
/// keeps inserts at several thousand per second on a 50,000-instance table.
const WRITER_CACHE_KIB: u32 = 64 * 1024;
/// Page cache of each reader connection.
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
    writer: SqlitePool,
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
        let writer_options = connect
            .clone()
            .pragma("cache_size", format!("-{WRITER_CACHE_KIB}"));
        // Switching a fresh file to WAL needs an exclusive lock that SQLite does not wait for
        // (no busy handler): when several processes open a new file at once, the losers get
        // SQLITE_BUSY and retry (the file is in WAL mode from then on, so the retry is cheap).
        let mut attempt = 0;
        let writer = loop {
            match SqlitePoolOptions::new()
                .max_connections(1)
                .connect_with(writer_options.clone())
                .await
            {
                Ok(pool) => break pool,
                Err(e) if is_busy(&e) && attempt < 10 => {
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(10 * attempt)).await;
                }
                Err(e) => return Err(backend(e)),
            }
        };
        Self::migrate(&writer).await?;
        let reader = SqlitePoolOptions::new()
            .max_connections(options.readers.max(1))
            .connect_with(connect.pragma("cache_size", format!("-{READER_CACHE_KIB}")))
            .await
            .map_err(backend)?;
        Ok(SqliteStore { reader, writer })
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
        Self::migrate(&pool).await?;
        Ok(SqliteStore {
            reader: pool.clone(),
            writer: pool,
        })
    }

    /// Closes all connections (checkpointing the WAL).
    pub async fn close(&self) {
        self.reader.close().await;
        self.writer.close().await;
    }

    /// Migrates, retrying when another process migrated the same fresh file concurrently
    /// (SQLite has no lock the migrator could hold across its transactions: the loser fails
    /// on "table already exists" and, on retry, finds the migration applied).
    async fn migrate(pool: &SqlitePool) -> Result<(), StoreError> {
        let mut attempt = 0;
        loop {
            match Self::migrate_once(pool).await {
                Err(StoreError::Migration(_)) if attempt < 3 => {
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(20 * attempt)).await;
                }
                other => return other,
            }
        }
    }

    async fn migrate_once(pool: &SqlitePool) -> Result<(), StoreError> {
        let has_table: Option<i64> = sqlx::query_scalar(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'",
        )
        .fetch_optional(pool)
        .await
        .map_err(backend)?;
        let applied_max = match has_table {
            Some(_) => {
                sqlx::query_scalar::<_, Option<i64>>("SELECT MAX(version) FROM _sqlx_migrations")
                    .fetch_one(pool)
                    .await
                    .map_err(backend)?
            }
            None => None,
        };
        migrate(MIGRATIONS, applied_max, pool).await
    }

    fn reader(&self) -> &SqlitePool {
        &self.reader
    }

    async fn begin_write(&self) -> Result<Transaction<'static, Sqlite>, StoreError> {
        self.writer
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(backend)
    }
}

/// SQLITE_BUSY and its extended codes (e.g. SQLITE_BUSY_SNAPSHOT).
fn is_busy(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db)
        if db.code().and_then(|c| c.parse::<i32>().ok()).is_some_and(|c| c & 0xff == 5))
}

impl_sql_store!(
    store = SqliteStore,
    db = sqlx::Sqlite,
    conn = sqlx::SqliteConnection,
    for_update = "",
    skip_locked = "",
    contains_fn = "instr",
);
