//! The SQL implementations of the [`vnfm_store::Store`] port: [`SqliteStore`] (the default,
//! embedded, on `rusqlite` with a writer thread that commits concurrent writes together) and
//! [`PostgresStore`] (for several replicas, on sqlx), and [`open`], which picks one by URL.
//!
//! Documents are stored as the exact JSON text serde produces, next to the indexed columns
//! queries need. The statements are written once, by aggregate (`sql/instances.rs`,
//! `sql/op_occs.rs`, `sql/outbox.rs`, `sql/subscriptions.rs`, `sql/vims.rs`,
//! `sql/packages.rs`, `sql/alarms.rs`), against a small connection trait, and one
//! implementation of the trait (`database.rs`) runs them on either backend. Schema migrations
//! run on open; a database migrated by a newer build is refused
//! ([`StoreError::SchemaTooNew`]).
//!
//! ```
//! # tokio_test_block_on(async {
//! use vnfm_store::{InstanceQuery, Store};
//!
//! let store = vnfm_store_sql::open("sqlite::memory:").await.unwrap();
//! let page = store.list_instances(&InstanceQuery::default()).await.unwrap();
//! assert!(page.items.is_empty() && page.next.is_none());
//! # });
//! # fn tokio_test_block_on<F: std::future::Future>(f: F) -> F::Output {
//! #     tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
//! # }
//! ```

mod backend;
mod database;
mod postgres;
mod sql;
mod sqlite;

use std::sync::Arc;

use vnfm_store::{Result, Store, StoreError};

pub use database::SqlStore;
pub use postgres::{DEFAULT_MAX_CONNECTIONS, PostgresStore};
pub use sqlite::{
    DEFAULT_READER_CACHE_KIB, DEFAULT_WRITER_CACHE_KIB, Durability, SqliteOptions, SqliteStore,
};

/// Opens the store named by `url`:
/// - `sqlite:///abs/path.db` (or `sqlite://relative/path.db`): an SQLite file, created if
///   missing; `?synchronous=full` fsyncs every commit ([`Durability::Full`]), the default is
///   `?synchronous=normal` ([`Durability::Normal`]);
/// - `sqlite::memory:`: a private in-memory SQLite database;
/// - `postgres://...` or `postgresql://...`: a PostgreSQL database.
///
/// The schema is migrated before the store is returned.
pub async fn open(url: &str) -> Result<Arc<dyn Store>> {
    if url == "sqlite::memory:" {
        return Ok(Arc::new(SqliteStore::memory().await?));
    }
    if let Some(rest) = url.strip_prefix("sqlite://") {
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        if path.is_empty() {
            return Err(StoreError::UnsupportedUrl(url.to_owned()));
        }
        let mut options = SqliteOptions::default();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            options.durability = match pair {
                "synchronous=normal" => Durability::Normal,
                "synchronous=full" => Durability::Full,
                _ => return Err(StoreError::UnsupportedUrl(url.to_owned())),
            };
        }
        return Ok(Arc::new(SqliteStore::open_with(path, options).await?));
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return Ok(Arc::new(PostgresStore::connect(url).await?));
    }
    Err(StoreError::UnsupportedUrl(backend::redact_url(url)))
}
