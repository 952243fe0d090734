//! The PostgreSQL backend, for several VNFM replicas sharing one database.
//!
//! The per-instance lock holds across replicas twice over: [`crate::Store::start_operation`]
//! locks the instance row (`SELECT ... FOR UPDATE`) before checking for a holder, and a unique
//! partial index on `op_occs(instance_id) WHERE state` is non-final refuses a second holder
//! whatever the code path. Lease and outbox claims use `FOR UPDATE SKIP LOCKED`, so concurrent
//! claimers never wait on each other and never take the same row.

use std::str::FromStr;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{Postgres, Transaction};

use crate::error::{StoreError, backend, redact_url};
use crate::sql::{MigrationSource, impl_sql_store, migrate};

/// The PostgreSQL schema migrations.
pub(crate) const MIGRATIONS: &[MigrationSource] = &[
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
];

/// Default size of the connection pool.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 10;

/// A [`crate::Store`] on a PostgreSQL database.
#[derive(Debug, Clone)]
pub struct PostgresStore {
    pool: PgPool,
}

impl PostgresStore {
    /// Connects to `url` (`postgres://user[:password]@host[:port]/database`) with a pool of
    /// [`DEFAULT_MAX_CONNECTIONS`] and migrates the database.
    pub async fn connect(url: &str) -> Result<PostgresStore, StoreError> {
        let options = PgConnectOptions::from_str(url).map_err(|e| {
            StoreError::Backend(format!("invalid PostgreSQL URL {}: {e}", redact_url(url)))
        })?;
        Self::connect_with(options, DEFAULT_MAX_CONNECTIONS).await
    }

    /// Connects with explicit options and pool size, and migrates the database.
    pub async fn connect_with(
        options: PgConnectOptions,
        max_connections: u32,
    ) -> Result<PostgresStore, StoreError> {
        let pool = PgPoolOptions::new()
            .max_connections(max_connections.max(1))
            .connect_with(options)
            .await
            .map_err(backend)?;
        let has_table: bool =
            sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations') IS NOT NULL")
                .fetch_one(&pool)
                .await
                .map_err(backend)?;
        let applied_max = if has_table {
            sqlx::query_scalar::<_, Option<i64>>("SELECT MAX(version) FROM _sqlx_migrations")
                .fetch_one(&pool)
                .await
                .map_err(backend)?
        } else {
            None
        };
        migrate(
            MIGRATIONS,
            applied_max,
            &mut *pool.acquire().await.map_err(backend)?,
        )
        .await?;
        Ok(PostgresStore { pool })
    }

    /// Closes all connections.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    fn reader(&self) -> &PgPool {
        &self.pool
    }

    /// A connection for reads that need one to themselves.
    async fn read_conn(&self) -> Result<sqlx::pool::PoolConnection<Postgres>, StoreError> {
        self.pool.acquire().await.map_err(backend)
    }

    async fn begin_write(&self) -> Result<Transaction<'static, Postgres>, StoreError> {
        self.pool.begin().await.map_err(backend)
    }
}

/// Runs `$body` (an expression using `$tx`, a `&mut` [`crate::hot::SqlConn`] inside a
/// transaction, evaluating to a `Result`) in a transaction of `$store`, committed when the body
/// succeeded and rolled back otherwise.
macro_rules! postgres_hot_write {
    ($store:expr, |$tx:ident| $body:expr) => {{
        let store: &PostgresStore = $store;
        let mut inner = store.begin_write().await?;
        let out = {
            let $tx = &mut crate::sql::SqlxConn(&mut *inner);
            $body
        };
        if out.is_ok() {
            if let Err(e) = inner.commit().await {
                return Err(crate::error::backend(e).into());
            }
        }
        out
    }};
}

/// Runs `$body` (an expression using `$conn`, a `&mut` [`crate::hot::SqlConn`]) on a
/// connection from the pool.
macro_rules! postgres_hot_read {
    ($store:expr, |$conn:ident| $body:expr) => {{
        let store: &PostgresStore = $store;
        let mut pooled = store.read_conn().await?;
        let $conn = &mut crate::sql::SqlxConn(&mut *pooled);
        $body
    }};
}

impl_sql_store!(
    store = PostgresStore,
    db = sqlx::Postgres,
    conn = sqlx::PgConnection,
    for_update = " FOR UPDATE",
    skip_locked = " FOR UPDATE SKIP LOCKED",
    contains_fn = "strpos",
    hot_write = postgres_hot_write,
    hot_read = postgres_hot_read,
);
