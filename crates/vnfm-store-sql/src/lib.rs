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

/// The page cache sizes an SQLite URL may ask for, in KiB.
const CACHE_KIB_RANGE: std::ops::RangeInclusive<u32> = 256..=4 * 1024 * 1024;
/// The numbers of read connections an SQLite URL may ask for.
const READERS_RANGE: std::ops::RangeInclusive<u32> = 1..=64;

/// Opens the store named by `url`:
/// - `sqlite:///abs/path.db` (or `sqlite://relative/path.db`): an SQLite file, created if
///   missing; `?synchronous=full` fsyncs every commit ([`Durability::Full`]), the default is
///   `?synchronous=normal` ([`Durability::Normal`]); `writer_cache_kib=N` and
///   `reader_cache_kib=N` size the page caches ([`SqliteOptions`], 256 KiB to 4 GiB) and
///   `readers=N` sets how many read connections there are (1 to 64, each with its own
///   cache), e.g. `sqlite:///var/lib/vnfm/vnfm.db?synchronous=full&writer_cache_kib=16384`;
/// - `sqlite::memory:`: a private in-memory SQLite database;
/// - `postgres://...` or `postgresql://...`: a PostgreSQL database, on one host or on the
///   first of several that takes writes (`postgres://u@db1:5432,db2:5432/vnfm`, see
///   [`PostgresStore::connect`]).
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
        let options = sqlite_options(url, query)?;
        return Ok(Arc::new(SqliteStore::open_with(path, options).await?));
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return Ok(Arc::new(PostgresStore::connect(url).await?));
    }
    Err(StoreError::UnsupportedUrl(backend::redact_url(url)))
}

/// The options an `sqlite://` URL's query asks for (see [`open`]); anything else in it is
/// refused, not ignored.
fn sqlite_options(url: &str, query: &str) -> Result<SqliteOptions> {
    let unsupported = || StoreError::UnsupportedUrl(url.to_owned());
    let within = |v: &str, range: std::ops::RangeInclusive<u32>| {
        v.parse::<u32>()
            .ok()
            .filter(|k| range.contains(k))
            .ok_or_else(unsupported)
    };
    let mut options = SqliteOptions::default();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=').unwrap_or((pair, "")) {
            ("synchronous", "normal") => options.durability = Durability::Normal,
            ("synchronous", "full") => options.durability = Durability::Full,
            ("writer_cache_kib", v) => options.writer_cache_kib = within(v, CACHE_KIB_RANGE)?,
            ("reader_cache_kib", v) => options.reader_cache_kib = within(v, CACHE_KIB_RANGE)?,
            ("readers", v) => options.readers = within(v, READERS_RANGE)?,
            _ => return Err(unsupported()),
        }
    }
    Ok(options)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_urls_set_durability_and_cache_sizes() {
        let o = sqlite_options("u", "").unwrap();
        assert_eq!(o.durability, Durability::Normal);
        assert_eq!(o.writer_cache_kib, DEFAULT_WRITER_CACHE_KIB);
        assert_eq!(o.reader_cache_kib, DEFAULT_READER_CACHE_KIB);
        assert_eq!(o.readers, SqliteOptions::default().readers);
        let o = sqlite_options(
            "u",
            "synchronous=full&writer_cache_kib=2048&reader_cache_kib=512&readers=2",
        )
        .unwrap();
        assert_eq!(o.durability, Durability::Full);
        assert_eq!((o.writer_cache_kib, o.reader_cache_kib), (2048, 512));
        assert_eq!(o.readers, 2);
        for bad in [
            "synchronous=off",
            "writer_cache_kib",
            "writer_cache_kib=",
            "writer_cache_kib=lots",
            "writer_cache_kib=0",
            "reader_cache_kib=8388608",
            "readers=0",
            "readers=65",
            "cache=1",
        ] {
            assert!(
                matches!(sqlite_options("u", bad), Err(StoreError::UnsupportedUrl(_))),
                "{bad}"
            );
        }
    }
}
