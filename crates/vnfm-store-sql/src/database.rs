//! What a backend provides ([`Database`]: read connections and write transactions) and the
//! one implementation of [`vnfm_store::Store`] on top of it, [`SqlStore`]: this module keeps the
//! shared machinery (the transaction macros, the idempotency-key writes, the enqueue listener);
//! each aggregate's port is implemented in a module of its own, beside the statements of
//! `crate::sql` it calls.

use std::future::Future;
use std::ops::DerefMut;
use std::sync::{Arc, PoisonError, RwLock};

use futures_core::future::BoxFuture;

use crate::sql::SqlConn;
use vnfm_store::{EnqueueListener, PendingKey, Result};

/// A database backend: where reads run and how writes are made durable.
///
/// Public only inside a private module: the store's implementation detail, not its API.
pub trait Database: Clone + Send + Sync + 'static {
    /// The connection statements run on.
    #[allow(private_bounds)]
    type Conn: SqlConn;
    /// A read connection held exclusively until dropped.
    type Reader: DerefMut<Target = Self::Conn> + Send;

    /// A read connection (reads see every write answered before).
    fn reader(&self) -> impl Future<Output = Result<Self::Reader>> + Send;

    /// Runs `job` in a write transaction and answers once it is committed; an error from
    /// `job` writes nothing of it. The backend may commit several callers' jobs in one
    /// transaction (group commit): each job still sees only committed data and its own
    /// writes, and a failing job does not affect the others.
    fn write<T, F>(&self, job: F) -> impl Future<Output = Result<T>> + Send
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut Self::Conn) -> BoxFuture<'c, Result<T>> + Send + 'static;

    /// Runs `job`, which makes exactly one statement, as that statement alone: on PostgreSQL
    /// the statement commits by itself, one round trip with no `BEGIN` and no `COMMIT`. The
    /// statement must therefore write all of what it writes or nothing (its writes chained,
    /// each under the checks of the others, see `sql::chain`). SQLite, whose statements are
    /// calls within the process, runs `job` as [`Database::write`] does.
    fn write_alone<T, F>(&self, job: F) -> impl Future<Output = Result<T>> + Send
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut Self::Conn) -> BoxFuture<'c, Result<T>> + Send + 'static;
}

/// `$body` on a read connection of `$db`, named `$conn`.
macro_rules! on_reader {
    ($db:expr, |$conn:ident| $body:expr) => {{
        let mut guard = $db.0.reader().await?;
        let $conn = &mut *guard;
        $body
    }};
}

/// `$body` in a write transaction of `$db`, named `$tx`; the captured values must be owned.
macro_rules! in_transaction {
    ($db:expr, |$tx:ident| $body:expr) => {
        $db.0.write(move |$tx| Box::pin(async move { $body }))
    };
}

/// [`in_transaction!`] of a write that enqueues `rows` outbox rows: once it has committed,
/// the store's enqueue listener ([`vnfm_store::OutboxStore::on_enqueue`]) is called.
macro_rules! in_notifying_transaction {
    ($db:expr, $rows:expr, |$tx:ident| $body:expr) => {
        async {
            let rows: usize = $rows;
            let out = $db.0.write(move |$tx| Box::pin(async move { $body })).await;
            if out.is_ok() && rows > 0 {
                $db.enqueued();
            }
            out
        }
    };
}

// After the macros, which they use.
mod alarms;
mod indicators;
mod instances;
mod occurrences;
mod outbox;
mod packages;
mod pm;
mod settings;
mod subscriptions;
mod vims;

/// A [`vnfm_store::Store`] on the database backend `D` (see `SqliteStore`, `PostgresStore`).
#[derive(Debug, Clone)]
pub struct SqlStore<D>(pub(crate) D, pub(crate) EnqueueListeners);

/// The listener a [`SqlStore`] calls after a write that enqueued notifications (shared by its
/// clones).
#[derive(Clone, Default)]
pub(crate) struct EnqueueListeners(Arc<RwLock<Option<EnqueueListener>>>);

impl std::fmt::Debug for EnqueueListeners {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EnqueueListeners")
    }
}

impl<D: Database> SqlStore<D> {
    /// [`Database::write`] of `job`, which creates the resource `resource_id`: `key`, if
    /// given, is written in the same transaction with that id.
    async fn write_creating<T, F>(
        &self,
        key: Option<&PendingKey>,
        resource_id: &str,
        job: F,
    ) -> Result<T>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut D::Conn) -> BoxFuture<'c, Result<T>> + Send + 'static,
    {
        self.write_creating_if(key, resource_id, job, |_| true)
            .await
    }

    /// [`SqlStore::write_creating`] of a `job` that created its resource only when `created`
    /// says so of its result: the key is written only then.
    async fn write_creating_if<T, F>(
        &self,
        key: Option<&PendingKey>,
        resource_id: &str,
        job: F,
        created: fn(&T) -> bool,
    ) -> Result<T>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut D::Conn) -> BoxFuture<'c, Result<T>> + Send + 'static,
    {
        let key = key.map(|k| (k.clone(), resource_id.to_owned()));
        self.0
            .write(move |tx| {
                Box::pin(async move {
                    let out = job(&mut *tx).await?;
                    if let Some((key, id)) = &key
                        && created(&out)
                    {
                        crate::sql::idempotency::attach(tx, key, id).await?;
                    }
                    Ok(out)
                })
            })
            .await
    }

    /// A write enqueued notifications and committed: tells the listener, if any.
    fn enqueued(&self) {
        let listener = self
            .1
            .0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(listener) = listener {
            listener();
        }
    }
}
