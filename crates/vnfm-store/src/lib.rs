//! The durable store of the VNF lifecycle-management core.
//!
//! [`Store`] is everything the LCM core persists, behind one object-safe async trait
//! (`Arc<dyn Store>`):
//! - VNF instances (SOL003 `VnfInstance` documents with a [`Version`] for optimistic
//!   concurrency and HTTP entity tags), filtered keyset-paginated lists and a lazy stream;
//! - operation occurrences with the **per-instance lock** (at most one non-final op-occ per
//!   instance, across processes), runner **leases** with takeover of dead runners' work, the
//!   per-op-occ **step journal**, and hook data that survives retries;
//! - the notification **outbox** (written in the same transaction as the change it reports,
//!   claimed by one sender at a time, retried, dead-lettered);
//! - lifecycle and VNF package management subscriptions (with their encrypted credentials and
//!   duplicate detection) and VIMs (with the index of instances using each);
//! - VNF packages and their content; package changes enqueue their notifications in the same
//!   transaction ([`Store::update_package_and_notify`]).
//!
//! Documents are stored as the exact JSON text serde produces, next to the indexed columns
//! queries need. The statements are written once, by aggregate (`sql/instances.rs`,
//! `sql/op_occs.rs`, `sql/outbox.rs`, `sql/subscriptions.rs`, `sql/vims.rs`,
//! `sql/packages.rs`), against a small connection trait, and one [`Store`] implementation
//! (`database.rs`) runs them on either backend: [`SqliteStore`] (the default, embedded, on
//! `rusqlite` with a writer thread that commits concurrent writes together) or
//! [`PostgresStore`] (for several replicas, on sqlx). Schema migrations run on open; a
//! database migrated by a newer build is refused ([`StoreError::SchemaTooNew`]).
//!
//! ```
//! # tokio_test_block_on(async {
//! use vnfm_store::{InstanceQuery, Store};
//!
//! let store = vnfm_store::open("sqlite::memory:").await.unwrap();
//! let page = store.list_instances(&InstanceQuery::default()).await.unwrap();
//! assert!(page.items.is_empty() && page.next.is_none());
//! # });
//! # fn tokio_test_block_on<F: std::future::Future>(f: F) -> F::Output {
//! #     tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
//! # }
//! ```

mod database;
mod error;
mod model;
mod postgres;
mod sql;
mod sqlite;
mod store;

use std::sync::Arc;

pub use error::{Conflict, StoreError};
pub use model::{
    AlarmRecord, DEFAULT_PAGE_SIZE, FmSubscriptionRecord, InstanceQuery, JournalEntry, JournalStep,
    Lease, MAX_PAGE_SIZE, NameFilter, NewOutboxRow, OpOccQuery, OutboxRow, OutboxStatus,
    OutboxSummary, PackageRecord, Page, PkgmSubscriptionRecord, ProjectScope, ScopedKind,
    StepOutcome, StepRecord, StepWritten, StoredSubscription, SubscriptionRecord,
    SubscriptionResource, Timestamp, Version, VimRecord, canonical_filter, canonical_fm_filter,
    canonical_pkgm_filter, state_str,
};
pub use postgres::{DEFAULT_MAX_CONNECTIONS, PostgresStore};
pub use sqlite::{
    DEFAULT_READER_CACHE_KIB, DEFAULT_WRITER_CACHE_KIB, Durability, SqliteOptions, SqliteStore,
};
pub use store::{CONTENT_CHUNK_BYTES, Result, Store};

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
    Err(StoreError::UnsupportedUrl(error::redact_url(url)))
}
