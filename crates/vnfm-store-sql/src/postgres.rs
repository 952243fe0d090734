//! The PostgreSQL backend, for several VNFM replicas sharing one database, on sqlx.
//!
//! The per-instance lock holds across replicas twice over: [`vnfm_store::OpOccStore::start_operation`]
//! locks the instance row (`SELECT ... FOR UPDATE`) before checking for a holder, and a unique
//! partial index on `op_occs(instance_id) WHERE state` is non-final refuses a second holder
//! whatever the code path. Lease and outbox claims use `FOR UPDATE SKIP LOCKED`, so concurrent
//! claimers never wait on each other and never take the same row. Each write is its own
//! transaction: PostgreSQL's commit already groups the WAL flushes of concurrent commits.

mod link;

use std::future::Future;
use std::sync::Arc;

use futures_core::future::BoxFuture;
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgArguments, PgConnectOptions, PgConnection, PgPool, PgRow};
use sqlx::{AssertSqlSafe, Connection, Postgres, Row, SqlSafeStr};

use crate::backend::backend;
use crate::database::{Database, SqlStore};
use crate::sql::{Arg, Cell, Col, DbError, Dialect, SqlConn};
use link::Link;
use vnfm_store::StoreError;

/// A schema migration: version, description, SQL.
type MigrationSource = (i64, &'static str, &'static str);

/// The PostgreSQL schema migrations.
const MIGRATIONS: &[MigrationSource] = &[
    (
        1,
        "init",
        include_str!("../migrations/postgres/0001_init.sql"),
    ),
    (
        2,
        "packages",
        include_str!("../migrations/postgres/0002_packages.sql"),
    ),
    (
        3,
        "outbox order",
        include_str!("../migrations/postgres/0003_outbox_order.sql"),
    ),
    (
        4,
        "pkgm subscriptions",
        include_str!("../migrations/postgres/0004_pkgm_subscriptions.sql"),
    ),
    (
        5,
        "settings",
        include_str!("../migrations/postgres/0005_settings.sql"),
    ),
    (
        6,
        "package content chunks",
        include_str!("../migrations/postgres/0006_package_content_chunks.sql"),
    ),
    (
        7,
        "outbox summary index",
        include_str!("../migrations/postgres/0007_outbox_summary.sql"),
    ),
    (
        8,
        "name search",
        include_str!("../migrations/postgres/0008_name_search.sql"),
    ),
    (
        9,
        "alarms",
        include_str!("../migrations/postgres/0009_alarms.sql"),
    ),
    (
        10,
        "instance default view",
        include_str!("../migrations/postgres/0010_instance_default_view.sql"),
    ),
    (
        11,
        "projects",
        include_str!("../migrations/postgres/0011_projects.sql"),
    ),
    (
        12,
        "performance management",
        include_str!("../migrations/postgres/0012_pm.sql"),
    ),
    (
        13,
        "indicators",
        include_str!("../migrations/postgres/0013_indicators.sql"),
    ),
    (
        14,
        "VIM projects",
        include_str!("../migrations/postgres/0014_vim_projects.sql"),
    ),
    (
        15,
        "idempotency keys",
        include_str!("../migrations/postgres/0015_idempotency_keys.sql"),
    ),
    (
        16,
        "VIM sharing",
        include_str!("../migrations/postgres/0016_vim_sharing.sql"),
    ),
    (
        17,
        "outbox trace context",
        include_str!("../migrations/postgres/0017_outbox_trace_context.sql"),
    ),
    (
        18,
        "idempotency answer etag",
        include_str!("../migrations/postgres/0018_idempotency_answer_etag.sql"),
    ),
    (
        19,
        "idempotency kept answer",
        include_str!("../migrations/postgres/0019_idempotency_kept_answer.sql"),
    ),
];

/// Default size of the connection pool.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 10;

/// A [`vnfm_store::Store`] on a PostgreSQL database.
pub type PostgresStore = SqlStore<PostgresBackend>;

/// The PostgreSQL backend: the link to the server (its connection pool, and the monitor that
/// finds the server again after it went away, see `link`).
///
/// Public only inside a private module: the store's implementation detail, not its API.
#[derive(Debug, Clone)]
pub struct PostgresBackend {
    link: Arc<Link>,
}

impl SqlStore<PostgresBackend> {
    /// Connects to `url` with a pool of [`DEFAULT_MAX_CONNECTIONS`] and migrates the database.
    ///
    /// `url` is `postgres://user[:password]@host[:port]/database[?...]`, or names several hosts
    /// as libpq does (`postgres://user@db1:5432,db2:5432/database`): the store then uses the
    /// first one, in that order, that accepts a connection and takes writes (a standby is
    /// passed over), and moves to another one when that server goes away.
    /// `target_session_attrs=read-write` (or `primary`) asks for a server that takes writes
    /// with one host too; `any` takes the first host that answers.
    ///
    /// While the server cannot be reached every call fails at once with
    /// [`StoreError::Unavailable`]; the store finds it again by itself (checking it every
    /// second, trying the hosts every 250 ms while none answers).
    pub async fn connect(url: &str) -> Result<PostgresStore, StoreError> {
        Self::open_targets(link::targets(url)?, DEFAULT_MAX_CONNECTIONS).await
    }

    /// Connects with explicit options and pool size, and migrates the database.
    pub async fn connect_with(
        options: PgConnectOptions,
        max_connections: u32,
    ) -> Result<PostgresStore, StoreError> {
        Self::open_targets(link::Targets::one(options), max_connections).await
    }

    async fn open_targets(
        targets: link::Targets,
        max_connections: u32,
    ) -> Result<PostgresStore, StoreError> {
        let link = Link::open(targets, max_connections).await?;
        migrate(&link.pool()).await?;
        Ok(SqlStore(PostgresBackend { link }, Default::default()))
    }

    /// Closes all connections.
    pub async fn close(&self) {
        self.0.link.close().await;
    }
}

/// Runs the migrations, refusing a database migrated by a newer build.
async fn migrate(pool: &PgPool) -> Result<(), StoreError> {
    let has_table: bool = sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations') IS NOT NULL")
        .fetch_one(pool)
        .await
        .map_err(backend)?;
    let applied_max = if has_table {
        sqlx::query_scalar::<_, Option<i64>>("SELECT MAX(version) FROM _sqlx_migrations")
            .fetch_one(pool)
            .await
            .map_err(backend)?
    } else {
        None
    };
    let supported = MIGRATIONS.iter().map(|m| m.0).max().unwrap_or(0);
    if let Some(found) = applied_max.filter(|v| *v > supported) {
        return Err(StoreError::SchemaTooNew { found, supported });
    }
    let migrator = Migrator::with_migrations(
        MIGRATIONS
            .iter()
            .map(|(version, description, sql)| {
                Migration::new(
                    *version,
                    (*description).into(),
                    MigrationType::Simple,
                    sql.into_sql_str(),
                    false,
                )
            })
            .collect(),
    );
    let mut conn = pool.acquire().await.map_err(backend)?;
    migrator
        .run_direct(None, &mut *conn, false)
        .await
        .map_err(|e| match e {
            sqlx::migrate::MigrateError::VersionMissing(found) => {
                StoreError::SchemaTooNew { found, supported }
            }
            other => StoreError::Migration(other.to_string()),
        })
}

impl Database for PostgresBackend {
    type Conn = PgConnection;
    type Reader = PoolConnection<Postgres>;

    async fn reader(&self) -> Result<PoolConnection<Postgres>, StoreError> {
        self.link.acquire().await
    }

    async fn write<T, F>(&self, job: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut PgConnection) -> BoxFuture<'c, Result<T, StoreError>>
            + Send
            + 'static,
    {
        let mut conn = self.link.acquire().await?;
        let mut tx = conn.begin().await.map_err(|e| self.link.failed(e))?;
        let out = job(&mut tx).await;
        match &out {
            Ok(_) => tx.commit().await.map_err(|e| self.link.failed(e))?,
            Err(e) if e.is_unavailable() => self.link.suspect(),
            // Rolled back now rather than when the connection is next used, so that the rows a
            // refused write locked are free before its refusal is answered (a recovery scan's
            // `SKIP LOCKED` would otherwise pass over them).
            Err(_) => {
                if let Err(e) = tx.rollback().await {
                    self.link.failed(e);
                }
            }
        }
        out
    }

    async fn write_alone<T, F>(&self, job: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut PgConnection) -> BoxFuture<'c, Result<T, StoreError>>
            + Send
            + 'static,
    {
        let mut conn = self.link.acquire().await?;
        let out = job(&mut conn).await;
        if let Err(e) = &out
            && e.is_unavailable()
        {
            self.link.suspect();
        }
        out
    }
}

/// `sql` with `args` bound.
fn bound<'q>(sql: &str, args: &[Arg<'q>]) -> sqlx::query::Query<'q, Postgres, PgArguments> {
    let mut q = sqlx::query(AssertSqlSafe(sql.to_owned()));
    for a in args {
        q = match *a {
            Arg::Text(t) => q.bind(t),
            Arg::Int(i) => q.bind(i),
            Arg::Blob(b) => q.bind(b),
            Arg::Null => q.bind(None::<&str>),
            Arg::NullBlob => q.bind(None::<&[u8]>),
            Arg::NullInt => q.bind(None::<i64>),
        };
    }
    q
}

fn db_error(e: sqlx::Error) -> DbError {
    let unique = matches!(&e, sqlx::Error::Database(db) if db.is_unique_violation());
    let unavailable = link::is_unavailable(&e);
    let message = match backend(e) {
        StoreError::Backend(m) => m,
        other => other.to_string(),
    };
    DbError {
        unique,
        unavailable,
        message,
    }
}

/// A row's columns read as `cols`.
fn cells(row: &PgRow, cols: &[Col]) -> Result<Vec<Cell>, DbError> {
    cols.iter()
        .enumerate()
        .map(|(i, col)| match col {
            Col::Int => row.try_get::<i64, _>(i).map(Cell::Int),
            Col::OptInt => row
                .try_get::<Option<i64>, _>(i)
                .map(|v| v.map_or(Cell::Null, Cell::Int)),
            Col::Text => row.try_get::<String, _>(i).map(Cell::Text),
            Col::OptText => row
                .try_get::<Option<String>, _>(i)
                .map(|t| t.map_or(Cell::Null, Cell::Text)),
            Col::Blob => row.try_get::<Vec<u8>, _>(i).map(Cell::Blob),
            Col::OptBlob => row
                .try_get::<Option<Vec<u8>>, _>(i)
                .map(|b| b.map_or(Cell::Null, Cell::Blob)),
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(db_error)
}

impl SqlConn for PgConnection {
    const DIALECT: Dialect = Dialect::Postgres;

    fn execute(
        &mut self,
        sql: &str,
        args: &[Arg<'_>],
    ) -> impl Future<Output = Result<u64, DbError>> + Send {
        let query = bound(sql, args);
        async move {
            query
                .execute(self)
                .await
                .map(|r| r.rows_affected())
                .map_err(db_error)
        }
    }

    fn rows(
        &mut self,
        sql: &str,
        args: &[Arg<'_>],
        cols: &[Col],
    ) -> impl Future<Output = Result<Vec<Vec<Cell>>, DbError>> + Send {
        let query = bound(sql, args);
        async move {
            query
                .fetch_all(self)
                .await
                .map_err(db_error)?
                .iter()
                .map(|row| cells(row, cols))
                .collect()
        }
    }
}
