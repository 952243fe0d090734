//! What a backend provides ([`Database`]: read connections and write transactions) and the
//! one implementation of [`Store`] on top of it, which calls the statements of `crate::sql`
//! (the package, VIM and operation occurrence stores in modules of their own).

use std::collections::VecDeque;
use std::future::Future;
use std::ops::DerefMut;
use std::sync::{Arc, PoisonError, RwLock};

use async_trait::async_trait;
use futures_core::future::BoxFuture;
use futures_core::stream::BoxStream;
use serde_json::Value;
use vnfm_types::{SubscriptionId, VnfInstance, VnfInstanceId};

use crate::sql::{SqlConn, instances, outbox, settings, subscriptions};
use vnfm_store::prelude::*;
use vnfm_store::{EnqueueListener, Result};
use vnfm_store::{
    InstanceQuery, NewOutboxRow, OutboxRow, OutboxSummary, Page, PendingKey, PmResource,
    ProjectScope, ScopedKind, StoredPm, SubscriptionDocument, SubscriptionKind, Timestamp, Version,
    WaitingCallback,
};

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
mod occurrences;
mod packages;
mod vims;

/// A [`Store`] on the database backend `D` (see `SqliteStore`, `PostgresStore`).
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

#[async_trait]
impl<D: Database> InstanceStore for SqlStore<D> {
    async fn create_instance_keyed(
        &self,
        instance: &VnfInstance,
        project: Option<&str>,
        notify: &[NewOutboxRow],
        key: Option<&PendingKey>,
    ) -> Result<Version> {
        let (instance, notify) = (
            instances::EncodedInstance::of(instance)?,
            outbox::encode(notify)?,
        );
        let project = project.map(str::to_owned);
        let (rows, id) = (notify.len(), instance.id().to_owned());
        let created = self
            .write_creating(key, &id, move |tx| {
                Box::pin(async move {
                    instances::create(tx, &instance, project.as_deref(), &notify).await
                })
            })
            .await;
        if created.is_ok() && rows > 0 {
            self.enqueued();
        }
        created
    }

    async fn project_of(&self, kind: ScopedKind, id: &str) -> Result<Option<Option<String>>> {
        on_reader!(self, |c| crate::sql::project_of(c, kind, id).await)
    }

    async fn projects_of(
        &self,
        kind: ScopedKind,
        ids: &[&str],
    ) -> Result<Vec<(String, Option<String>)>> {
        on_reader!(self, |c| crate::sql::projects_of(c, kind, ids).await)
    }

    async fn get_instance(&self, id: &VnfInstanceId) -> Result<Option<(VnfInstance, Version)>> {
        on_reader!(self, |c| instances::get(c, id.as_str()).await)
    }

    async fn update_instance(&self, instance: &VnfInstance, expected: Version) -> Result<Version> {
        let instance = instances::EncodedInstance::of(instance)?;
        in_transaction!(self, |tx| instances::update(tx, &instance, expected).await).await
    }

    async fn delete_instance(
        &self,
        id: &VnfInstanceId,
        expected: Version,
        notify: &[NewOutboxRow],
    ) -> Result<()> {
        let (id, notify) = (id.clone(), outbox::encode(notify)?);
        in_notifying_transaction!(self, notify.len(), |tx| instances::delete(
            tx,
            id.as_str(),
            expected,
            &notify
        )
        .await)
        .await
    }

    async fn list_instances(&self, query: &InstanceQuery) -> Result<Page<VnfInstance>> {
        on_reader!(self, |c| instances::page_of(c, query).await)
    }

    async fn list_instance_documents(&self, query: &InstanceQuery) -> Result<Page<Value>> {
        on_reader!(self, |c| instances::documents_of(c, query).await)
    }

    async fn list_instance_default_views(&self, query: &InstanceQuery) -> Result<Page<String>> {
        on_reader!(self, |c| instances::default_views_of(c, query).await)
    }

    fn stream_instances(&self, query: &InstanceQuery) -> BoxStream<'static, Result<VnfInstance>> {
        struct State<D> {
            db: D,
            query: InstanceQuery,
            buffer: VecDeque<VnfInstance>,
            done: bool,
        }
        let state = State {
            db: self.0.clone(),
            query: query.clone(),
            buffer: VecDeque::new(),
            done: false,
        };
        Box::pin(futures_util::stream::unfold(state, |mut st| async move {
            loop {
                if let Some(item) = st.buffer.pop_front() {
                    return Some((Ok(item), st));
                }
                if st.done {
                    return None;
                }
                let page = match st.db.reader().await {
                    Ok(mut conn) => instances::page_of(&mut *conn, &st.query).await,
                    Err(e) => Err(e),
                };
                match page {
                    Ok(page) => {
                        st.done = page.next.is_none();
                        st.query.after = page.next;
                        st.buffer.extend(page.items);
                    }
                    Err(e) => {
                        st.done = true;
                        return Some((Err(e), st));
                    }
                }
            }
        }))
    }
}

#[async_trait]
impl<D: Database> OutboxStore for SqlStore<D> {
    fn on_enqueue(&self, listener: EnqueueListener) {
        *self.1.0.write().unwrap_or_else(PoisonError::into_inner) = Some(listener);
    }

    async fn enqueue(&self, rows: &[NewOutboxRow]) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let rows = outbox::encode(rows)?;
        in_notifying_transaction!(self, rows.len(), |tx| outbox::insert(tx, &rows).await).await
    }

    async fn outbox_due(
        &self,
        now: Timestamp,
        limit: u32,
        claim_owner: &str,
        claim_until: Timestamp,
    ) -> Result<Vec<OutboxRow>> {
        let owner = claim_owner.to_owned();
        in_transaction!(self, |tx| {
            outbox::claim_due(tx, now, limit, &owner, claim_until).await
        })
        .await?
        .decode()
    }

    async fn outbox_delivered(&self, id: i64, now: Timestamp) -> Result<()> {
        in_transaction!(self, |tx| outbox::delivered(tx, id, now).await).await
    }

    async fn outbox_waiting_callbacks(
        &self,
        later_than: Timestamp,
        limit: u32,
    ) -> Result<Vec<WaitingCallback>> {
        on_reader!(self, |c| outbox::waiting_callbacks(c, later_than, limit)
            .await)
    }

    async fn outbox_callback_answers(&self, callback_uri: &str, now: Timestamp) -> Result<u64> {
        let uri = callback_uri.to_owned();
        in_transaction!(self, |tx| outbox::callback_answers(tx, &uri, now).await).await
    }

    async fn outbox_retry(&self, id: i64, next_attempt_at: Timestamp, error: &str) -> Result<()> {
        let error = error.to_owned();
        in_transaction!(self, |tx| outbox::failed(
            tx,
            id,
            Some(next_attempt_at),
            &error
        )
        .await)
        .await
    }

    async fn outbox_dead(&self, id: i64, error: &str) -> Result<()> {
        let error = error.to_owned();
        in_transaction!(self, |tx| outbox::failed(tx, id, None, &error).await).await
    }

    async fn outbox_dead_rows(&self, after: Option<i64>, limit: u32) -> Result<Vec<OutboxRow>> {
        on_reader!(self, |c| outbox::rows_in(c, "dead", after, limit).await)
    }

    async fn outbox_pending_rows(&self, after: Option<i64>, limit: u32) -> Result<Vec<OutboxRow>> {
        on_reader!(self, |c| outbox::rows_in(c, "pending", after, limit).await)
    }

    async fn outbox_summary(&self) -> Result<Vec<OutboxSummary>> {
        on_reader!(self, |c| outbox::summary(c).await)
    }

    async fn outbox_redeliver(&self, id: i64, now: Timestamp) -> Result<()> {
        in_notifying_transaction!(self, 1, |tx| outbox::redeliver(tx, id, now).await).await
    }

    async fn outbox_discard(&self, id: i64) -> Result<()> {
        in_transaction!(self, |tx| outbox::discard(tx, id).await).await
    }
}

#[async_trait]
impl<D: Database> SubscriptionDocumentStore for SqlStore<D> {
    async fn create_subscription_document_keyed(
        &self,
        document: &SubscriptionDocument,
        key: Option<&PendingKey>,
    ) -> Result<()> {
        let id = document.id.as_str().to_owned();
        let document = document.clone();
        self.write_creating(key, &id, move |tx| {
            Box::pin(async move { subscriptions::create(tx, &document).await })
        })
        .await
    }

    async fn subscription_document(
        &self,
        kind: SubscriptionKind,
        id: &SubscriptionId,
    ) -> Result<Option<SubscriptionDocument>> {
        on_reader!(self, |c| subscriptions::get(c, kind, id.as_str()).await)
    }

    async fn subscription_documents(
        &self,
        kind: SubscriptionKind,
        scope: &ProjectScope,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<SubscriptionDocument>> {
        on_reader!(self, |c| subscriptions::page_of(
            c, kind, scope, after, limit
        )
        .await)
    }

    async fn delete_subscription_document(
        &self,
        kind: SubscriptionKind,
        id: &SubscriptionId,
    ) -> Result<()> {
        let id = id.clone();
        in_transaction!(self, |tx| subscriptions::delete(tx, kind, id.as_str())
            .await)
        .await
    }

    async fn duplicate_subscription_document(
        &self,
        kind: SubscriptionKind,
        canonical_filter: &str,
        callback_uri: &str,
        project: Option<&str>,
    ) -> Result<Option<SubscriptionDocument>> {
        on_reader!(self, |c| subscriptions::duplicate(
            c,
            kind,
            canonical_filter,
            callback_uri,
            project
        )
        .await)
    }

    async fn callback_authentication(
        &self,
        id: &SubscriptionId,
    ) -> Result<Option<Option<Vec<u8>>>> {
        on_reader!(self, |c| subscriptions::callback_authentication(
            c,
            id.as_str()
        )
        .await)
    }
}

#[async_trait]
impl<D: Database> AlarmStore for SqlStore<D> {
    async fn create_alarm(
        &self,
        record: &vnfm_store::AlarmRecord,
        notify: &[NewOutboxRow],
    ) -> Result<Version> {
        let (record, notify) = (record.clone(), outbox::encode(notify)?);
        in_notifying_transaction!(self, notify.len(), |tx| crate::sql::alarms::create(
            tx, &record, &notify
        )
        .await)
        .await
    }

    async fn update_alarm(
        &self,
        record: &vnfm_store::AlarmRecord,
        expected: Version,
        notify: &[NewOutboxRow],
    ) -> Result<Version> {
        let (record, notify) = (record.clone(), outbox::encode(notify)?);
        in_notifying_transaction!(self, notify.len(), |tx| crate::sql::alarms::update(
            tx, &record, expected, &notify
        )
        .await)
        .await
    }

    async fn get_alarm(&self, id: &str) -> Result<Option<(vnfm_store::AlarmRecord, Version)>> {
        on_reader!(self, |c| crate::sql::alarms::get(c, id).await)
    }

    async fn open_alarm(
        &self,
        dedup_key: &str,
    ) -> Result<Option<(vnfm_store::AlarmRecord, Version)>> {
        on_reader!(self, |c| crate::sql::alarms::open_by_key(c, dedup_key)
            .await)
    }

    async fn open_alarms(
        &self,
        instance: Option<&VnfInstanceId>,
    ) -> Result<Vec<(vnfm_store::AlarmRecord, Version)>> {
        let instance = instance.map(|i| i.to_string());
        on_reader!(self, |c| crate::sql::alarms::open(c, instance.as_deref())
            .await)
    }

    async fn list_alarms(
        &self,
        scope: &ProjectScope,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<(vnfm_store::AlarmRecord, Version)>> {
        on_reader!(self, |c| crate::sql::alarms::page_of(
            c, scope, after, limit
        )
        .await)
    }
}

#[async_trait]
impl<D: Database, T: PmResource> PmResourceStore<T> for SqlStore<D> {
    async fn create_pm_keyed(
        &self,
        record: &StoredPm<T>,
        key: Option<&PendingKey>,
    ) -> Result<Version> {
        let id = record.resource.id().to_owned();
        let record = record.clone();
        self.write_creating(key, &id, move |tx| {
            Box::pin(async move { crate::sql::pm::create(tx, &record).await })
        })
        .await
    }

    async fn get_pm(&self, id: &str) -> Result<Option<(StoredPm<T>, Version)>> {
        on_reader!(self, |c| crate::sql::pm::get(c, id).await)
    }

    async fn update_pm(
        &self,
        record: &StoredPm<T>,
        expected: Version,
        notify: &[NewOutboxRow],
    ) -> Result<Version> {
        let (record, notify) = (record.clone(), outbox::encode(notify)?);
        in_notifying_transaction!(self, notify.len(), |tx| crate::sql::pm::update(
            tx, &record, expected, &notify
        )
        .await)
        .await
    }

    async fn delete_pm(&self, id: &str) -> Result<()> {
        let id = id.to_owned();
        in_transaction!(self, |tx| crate::sql::pm::delete::<_, T>(tx, &id).await).await
    }

    async fn list_pm(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<(StoredPm<T>, Version)>> {
        on_reader!(self, |c| crate::sql::pm::page_of(c, after, limit).await)
    }
}

#[async_trait]
impl<D: Database> PmStore for SqlStore<D> {
    async fn add_pm_report(
        &self,
        report: &vnfm_store::PmReportRecord,
        job: &vnfm_store::PmJobRecord,
        expected: Version,
        dropped: &[String],
        notify: &[NewOutboxRow],
    ) -> Result<Version> {
        let (report, job) = (report.clone(), job.clone());
        let (dropped, notify) = (dropped.to_vec(), outbox::encode(notify)?);
        in_notifying_transaction!(self, notify.len(), |tx| crate::sql::pm::add_report(
            tx, &report, &job, expected, &dropped, &notify
        )
        .await)
        .await
    }

    async fn get_pm_report(
        &self,
        job_id: &str,
        id: &str,
    ) -> Result<Option<vnfm_store::PmReportRecord>> {
        on_reader!(self, |c| crate::sql::pm::report(c, job_id, id).await)
    }
}

#[async_trait]
impl<D: Database> IndicatorStore for SqlStore<D> {
    async fn put_indicator(
        &self,
        indicator: &vnfm_types::VnfIndicator,
        notify: &[NewOutboxRow],
    ) -> Result<()> {
        let (indicator, notify) = (indicator.clone(), outbox::encode(notify)?);
        in_notifying_transaction!(self, notify.len(), |tx| crate::sql::indicators::put(
            tx, &indicator, &notify
        )
        .await)
        .await
    }

    async fn get_indicator(
        &self,
        instance: &VnfInstanceId,
        indicator_id: &str,
    ) -> Result<Option<vnfm_types::VnfIndicator>> {
        on_reader!(self, |c| crate::sql::indicators::get(
            c,
            instance.as_str(),
            indicator_id
        )
        .await)
    }

    async fn list_indicators(
        &self,
        scope: &ProjectScope,
        instance: Option<&VnfInstanceId>,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<vnfm_types::VnfIndicator>> {
        on_reader!(self, |c| crate::sql::indicators::page_of(
            c,
            scope,
            instance.map(VnfInstanceId::as_str),
            after,
            limit
        )
        .await)
    }

    async fn retain_indicators(&self, instance: &VnfInstanceId, keep: &[String]) -> Result<u64> {
        let (instance, keep) = (instance.clone(), keep.to_vec());
        in_transaction!(self, |tx| {
            crate::sql::indicators::retain(tx, instance.as_str(), &keep).await
        })
        .await
    }

    async fn instances_with_indicators(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<String>> {
        on_reader!(self, |c| crate::sql::indicators::instances(c, after, limit)
            .await)
    }
}

#[async_trait]
impl<D: Database> SettingStore for SqlStore<D> {
    async fn get_setting(&self, name: &str) -> Result<Option<Value>> {
        on_reader!(self, |c| settings::get(c, name).await)
    }

    async fn put_setting(&self, name: &str, value: Option<&Value>) -> Result<()> {
        let (name, value) = (name.to_owned(), value.cloned());
        in_transaction!(self, |tx| settings::put(tx, &name, value.as_ref()).await).await
    }

    async fn schema_version(&self) -> Result<i64> {
        on_reader!(self, |c| settings::schema_version(c).await)
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
