//! Cached list pages.
//!
//! List pages are the hot path of the API (orchestrators poll them). A page is cached with the
//! request that produced it and served again while nothing it could depend on has changed:
//! every write through this process's store bumps an epoch ([`ObservedStore`]), which drops
//! every cached page at once, and a page lives at most [`PAGE_TTL`], which bounds how long a
//! write made by another replica sharing the database can go unseen here (plus the time one
//! recomputation takes: when a page has merely aged, one request recomputes it while the
//! others are still given the aged page). When a page is missing or a write dropped it, one
//! request computes it and the requests for the same page that arrive meanwhile wait for
//! its result ([`PageCache::flight`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use futures_core::stream::BoxStream;
use serde_json::Value;
use vnfm_lcm::DeliveryWaker;
use vnfm_store::{
    InstanceQuery, JournalEntry, Lease, NewOutboxRow, OpOccQuery, OutboxRow, OutboxSummary,
    PackageRecord, Page, PkgmSubscriptionRecord, Result, StepRecord, StepWritten, Store,
    SubscriptionRecord, Timestamp, Version, VimRecord,
};
use vnfm_types::{SubscriptionId, VimId, VnfInstance, VnfInstanceId, VnfLcmOpOcc, VnfLcmOpOccId};

/// How long a cached page may be served (the delay after which writes of other replicas are
/// seen).
pub const PAGE_TTL: Duration = Duration::from_millis(500);
/// Pages kept at most; the cache is emptied when it is full.
const MAX_PAGES: usize = 512;

/// A [`Store`] that counts the writes made through it, and wakes the notification deliverer
/// after a write that enqueued notifications.
pub struct ObservedStore {
    inner: Arc<dyn Store>,
    epoch: Arc<AtomicU64>,
    waker: Arc<OnceLock<DeliveryWaker>>,
}

impl ObservedStore {
    /// Wraps `inner`; every write increments `epoch`; once `waker` is set, every write that
    /// enqueued notifications wakes it.
    pub fn new(
        inner: Arc<dyn Store>,
        epoch: Arc<AtomicU64>,
        waker: Arc<OnceLock<DeliveryWaker>>,
    ) -> ObservedStore {
        ObservedStore {
            inner,
            epoch,
            waker,
        }
    }

    fn changed(&self) {
        self.epoch.fetch_add(1, Ordering::Release);
    }

    /// After a write of `rows` outbox rows that ended `ok`: the rows are committed, so the
    /// deliverer can send them now rather than at its next poll.
    fn enqueued(&self, ok: bool, rows: usize) {
        if ok
            && rows > 0
            && let Some(w) = self.waker.get()
        {
            w.wake();
        }
    }
}

#[async_trait]
impl Store for ObservedStore {
    async fn create_instance(
        &self,
        instance: &VnfInstance,
        notify: &[NewOutboxRow],
    ) -> Result<Version> {
        let out = self.inner.create_instance(instance, notify).await;
        self.changed();
        self.enqueued(out.is_ok(), notify.len());
        out
    }

    async fn get_instance(&self, id: &VnfInstanceId) -> Result<Option<(VnfInstance, Version)>> {
        self.inner.get_instance(id).await
    }

    async fn update_instance(&self, instance: &VnfInstance, expected: Version) -> Result<Version> {
        let out = self.inner.update_instance(instance, expected).await;
        self.changed();
        out
    }

    async fn delete_instance(
        &self,
        id: &VnfInstanceId,
        expected: Version,
        notify: &[NewOutboxRow],
    ) -> Result<()> {
        let out = self.inner.delete_instance(id, expected, notify).await;
        self.changed();
        self.enqueued(out.is_ok(), notify.len());
        out
    }

    async fn list_instances(&self, query: &InstanceQuery) -> Result<Page<VnfInstance>> {
        self.inner.list_instances(query).await
    }

    fn stream_instances(&self, query: &InstanceQuery) -> BoxStream<'static, Result<VnfInstance>> {
        self.inner.stream_instances(query)
    }

    async fn start_operation(&self, occ: &VnfLcmOpOcc, lease: &Lease) -> Result<Version> {
        let out = self.inner.start_operation(occ, lease).await;
        self.changed();
        out
    }

    async fn record_step(&self, record: &StepRecord) -> Result<StepWritten> {
        let out = self.inner.record_step(record).await;
        self.changed();
        self.enqueued(out.is_ok(), record.outbox.len());
        out
    }

    async fn get_op_occ(&self, id: &VnfLcmOpOccId) -> Result<Option<(VnfLcmOpOcc, Version)>> {
        self.inner.get_op_occ(id).await
    }

    async fn active_op_occ(
        &self,
        instance_id: &VnfInstanceId,
    ) -> Result<Option<(VnfLcmOpOcc, Version)>> {
        self.inner.active_op_occ(instance_id).await
    }

    async fn list_op_occs(&self, query: &OpOccQuery) -> Result<Page<VnfLcmOpOcc>> {
        self.inner.list_op_occs(query).await
    }

    async fn count_op_occs_by_state(&self) -> Result<Vec<(String, i64)>> {
        self.inner.count_op_occs_by_state().await
    }

    async fn journal(&self, op_occ_id: &VnfLcmOpOccId) -> Result<Vec<JournalEntry>> {
        self.inner.journal(op_occ_id).await
    }

    async fn last_completed_step(&self, op_occ_id: &VnfLcmOpOccId) -> Result<Option<JournalEntry>> {
        self.inner.last_completed_step(op_occ_id).await
    }

    async fn lease(&self, op_occ_id: &VnfLcmOpOccId) -> Result<Option<Lease>> {
        self.inner.lease(op_occ_id).await
    }

    async fn renew_lease(
        &self,
        op_occ_id: &VnfLcmOpOccId,
        owner: &str,
        expires_at: Timestamp,
    ) -> Result<()> {
        self.inner.renew_lease(op_occ_id, owner, expires_at).await
    }

    async fn release_lease(&self, op_occ_id: &VnfLcmOpOccId, owner: &str) -> Result<()> {
        self.inner.release_lease(op_occ_id, owner).await
    }

    async fn claim_operation(
        &self,
        op_occ_id: &VnfLcmOpOccId,
        expected: Version,
        lease: &Lease,
        now: Timestamp,
    ) -> Result<()> {
        self.inner
            .claim_operation(op_occ_id, expected, lease, now)
            .await
    }

    async fn claim_expired(
        &self,
        owner: &str,
        now: Timestamp,
        new_expiry: Timestamp,
        limit: u32,
    ) -> Result<Vec<(VnfLcmOpOcc, Version)>> {
        self.inner
            .claim_expired(owner, now, new_expiry, limit)
            .await
    }

    async fn get_op_occ_data(&self, op_occ_id: &VnfLcmOpOccId, key: &str) -> Result<Option<Value>> {
        self.inner.get_op_occ_data(op_occ_id, key).await
    }

    async fn put_op_occ_data(
        &self,
        op_occ_id: &VnfLcmOpOccId,
        key: &str,
        value: &Value,
    ) -> Result<()> {
        self.inner.put_op_occ_data(op_occ_id, key, value).await
    }

    async fn enqueue(&self, rows: &[NewOutboxRow]) -> Result<()> {
        let out = self.inner.enqueue(rows).await;
        self.enqueued(out.is_ok(), rows.len());
        out
    }

    async fn outbox_due(
        &self,
        now: Timestamp,
        limit: u32,
        claim_owner: &str,
        claim_until: Timestamp,
    ) -> Result<Vec<OutboxRow>> {
        self.inner
            .outbox_due(now, limit, claim_owner, claim_until)
            .await
    }

    async fn outbox_delivered(&self, id: i64) -> Result<()> {
        self.inner.outbox_delivered(id).await
    }

    async fn outbox_retry(&self, id: i64, next_attempt_at: Timestamp, error: &str) -> Result<()> {
        self.inner.outbox_retry(id, next_attempt_at, error).await
    }

    async fn outbox_dead(&self, id: i64, error: &str) -> Result<()> {
        self.inner.outbox_dead(id, error).await
    }

    async fn outbox_dead_rows(&self, after: Option<i64>, limit: u32) -> Result<Vec<OutboxRow>> {
        self.inner.outbox_dead_rows(after, limit).await
    }

    async fn outbox_pending_rows(&self, after: Option<i64>, limit: u32) -> Result<Vec<OutboxRow>> {
        self.inner.outbox_pending_rows(after, limit).await
    }

    async fn outbox_summary(&self) -> Result<Vec<OutboxSummary>> {
        self.inner.outbox_summary().await
    }

    async fn outbox_redeliver(&self, id: i64, now: Timestamp) -> Result<()> {
        let out = self.inner.outbox_redeliver(id, now).await;
        // The row is due now: send it without waiting for the next poll.
        self.enqueued(out.is_ok(), 1);
        out
    }

    async fn outbox_discard(&self, id: i64) -> Result<()> {
        self.inner.outbox_discard(id).await
    }

    async fn create_subscription(&self, record: &SubscriptionRecord) -> Result<()> {
        let out = self.inner.create_subscription(record).await;
        self.changed();
        out
    }

    async fn get_subscription(&self, id: &SubscriptionId) -> Result<Option<SubscriptionRecord>> {
        self.inner.get_subscription(id).await
    }

    async fn list_subscriptions(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<SubscriptionRecord>> {
        self.inner.list_subscriptions(after, limit).await
    }

    async fn delete_subscription(&self, id: &SubscriptionId) -> Result<()> {
        let out = self.inner.delete_subscription(id).await;
        self.changed();
        out
    }

    async fn find_duplicate_subscription(
        &self,
        canonical_filter: &str,
        callback_uri: &str,
    ) -> Result<Option<SubscriptionRecord>> {
        self.inner
            .find_duplicate_subscription(canonical_filter, callback_uri)
            .await
    }

    async fn create_pkgm_subscription(&self, record: &PkgmSubscriptionRecord) -> Result<()> {
        let out = self.inner.create_pkgm_subscription(record).await;
        self.changed();
        out
    }

    async fn get_pkgm_subscription(
        &self,
        id: &SubscriptionId,
    ) -> Result<Option<PkgmSubscriptionRecord>> {
        self.inner.get_pkgm_subscription(id).await
    }

    async fn list_pkgm_subscriptions(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<PkgmSubscriptionRecord>> {
        self.inner.list_pkgm_subscriptions(after, limit).await
    }

    async fn delete_pkgm_subscription(&self, id: &SubscriptionId) -> Result<()> {
        let out = self.inner.delete_pkgm_subscription(id).await;
        self.changed();
        out
    }

    async fn find_duplicate_pkgm_subscription(
        &self,
        canonical_filter: &str,
        callback_uri: &str,
    ) -> Result<Option<PkgmSubscriptionRecord>> {
        self.inner
            .find_duplicate_pkgm_subscription(canonical_filter, callback_uri)
            .await
    }

    async fn create_vim(&self, vim: &VimRecord) -> Result<Version> {
        let out = self.inner.create_vim(vim).await;
        self.changed();
        out
    }

    async fn get_vim(&self, id: &VimId) -> Result<Option<(VimRecord, Version)>> {
        self.inner.get_vim(id).await
    }

    async fn update_vim(&self, vim: &VimRecord, expected: Version) -> Result<Version> {
        let out = self.inner.update_vim(vim, expected).await;
        self.changed();
        out
    }

    async fn delete_vim(&self, id: &VimId, expected: Version) -> Result<()> {
        let out = self.inner.delete_vim(id, expected).await;
        self.changed();
        out
    }

    async fn list_vims(&self) -> Result<Vec<(VimRecord, Version)>> {
        self.inner.list_vims().await
    }

    async fn vims_created_by(
        &self,
        instance_id: &VnfInstanceId,
    ) -> Result<Vec<(VimRecord, Version)>> {
        self.inner.vims_created_by(instance_id).await
    }

    async fn instances_using_vim(&self, vim_id: &VimId) -> Result<Vec<VnfInstanceId>> {
        self.inner.instances_using_vim(vim_id).await
    }

    async fn vim_usage(&self) -> Result<Vec<(VimId, VnfInstanceId)>> {
        self.inner.vim_usage().await
    }

    async fn create_package(&self, package: &PackageRecord) -> Result<Version> {
        let out = self.inner.create_package(package).await;
        self.changed();
        out
    }

    async fn get_package(&self, id: &str) -> Result<Option<(PackageRecord, Version)>> {
        self.inner.get_package(id).await
    }

    async fn package_by_vnfd(&self, vnfd_id: &str) -> Result<Option<(PackageRecord, Version)>> {
        self.inner.package_by_vnfd(vnfd_id).await
    }

    async fn update_package_and_notify(
        &self,
        package: &PackageRecord,
        expected: Version,
        notify: &[NewOutboxRow],
    ) -> Result<Version> {
        let out = self
            .inner
            .update_package_and_notify(package, expected, notify)
            .await;
        self.changed();
        self.enqueued(out.is_ok(), notify.len());
        out
    }

    async fn delete_package_and_notify(
        &self,
        id: &str,
        expected: Version,
        notify: &[NewOutboxRow],
    ) -> Result<()> {
        let out = self
            .inner
            .delete_package_and_notify(id, expected, notify)
            .await;
        self.changed();
        self.enqueued(out.is_ok(), notify.len());
        out
    }

    async fn list_packages(&self, after: Option<&str>, limit: u32) -> Result<Page<PackageRecord>> {
        self.inner.list_packages(after, limit).await
    }

    async fn put_package_content(&self, id: &str, content: &[u8]) -> Result<()> {
        let out = self.inner.put_package_content(id, content).await;
        self.changed();
        out
    }

    async fn get_package_content(&self, id: &str) -> Result<Option<Vec<u8>>> {
        self.inner.get_package_content(id).await
    }

    async fn put_package_content_from(
        &self,
        id: &str,
        content: &mut (dyn tokio::io::AsyncRead + Unpin + Send),
    ) -> Result<u64> {
        let out = self.inner.put_package_content_from(id, content).await;
        self.changed();
        out
    }

    async fn copy_package_content_to(
        &self,
        id: &str,
        out: &mut (dyn tokio::io::AsyncWrite + Unpin + Send),
    ) -> Result<bool> {
        self.inner.copy_package_content_to(id, out).await
    }

    async fn get_setting(&self, name: &str) -> Result<Option<serde_json::Value>> {
        self.inner.get_setting(name).await
    }

    async fn put_setting(&self, name: &str, value: Option<&serde_json::Value>) -> Result<()> {
        self.inner.put_setting(name, value).await
    }

    async fn schema_version(&self) -> Result<i64> {
        self.inner.schema_version().await
    }
}

/// A cached response body.
#[derive(Clone)]
pub struct CachedPage {
    /// The JSON body.
    pub body: Bytes,
    /// The `Link` header, if the page has a next one.
    pub link: Option<String>,
}

/// Pages by request, valid for one store epoch.
pub struct PageCache {
    epoch: Arc<AtomicU64>,
    pages: Mutex<HashMap<String, (u64, Instant, CachedPage)>>,
    /// Pages being computed, by key.
    flights: Mutex<HashMap<String, Flying>>,
    /// The number of the next flight (tells a finished flight from a newer one of the same key).
    next_flight: AtomicU64,
}

/// A page being computed.
struct Flying {
    /// The epoch it was started at.
    epoch: u64,
    /// Which flight it is.
    number: u64,
    /// Where it will be published.
    receiver: FlightReceiver,
}

type FlightReceiver = tokio::sync::watch::Receiver<Option<CachedPage>>;

/// What a request that missed the cache does: compute the page, or wait for the request
/// already computing it.
pub enum Flight<'a> {
    /// Compute the page and hand it to [`FlightGuard::finish`].
    Lead(FlightGuard<'a>),
    /// Another request is computing the same page at the same epoch.
    Follow(FlightReceiver),
}

/// The computing request's duty: publish the page, or (when dropped without doing so, on
/// an error or a cancelled request) let the waiting requests compute it themselves.
pub struct FlightGuard<'a> {
    cache: &'a PageCache,
    key: String,
    number: u64,
    sender: tokio::sync::watch::Sender<Option<CachedPage>>,
}

impl FlightGuard<'_> {
    /// Publishes `page` to the requests waiting for it.
    pub fn finish(self, page: CachedPage) {
        self.sender.send_replace(Some(page));
    }
}

impl Drop for FlightGuard<'_> {
    fn drop(&mut self) {
        let mut flights = self.cache.flights.lock().unwrap_or_else(|e| e.into_inner());
        // A newer flight of the same key (started after a write) is not this one's to end.
        if flights
            .get(&self.key)
            .is_some_and(|flying| flying.number == self.number)
        {
            flights.remove(&self.key);
        }
    }
}

impl PageCache {
    /// A cache invalidated by `epoch`.
    pub fn new(epoch: Arc<AtomicU64>) -> PageCache {
        PageCache {
            epoch,
            pages: Mutex::new(HashMap::new()),
            flights: Mutex::new(HashMap::new()),
            next_flight: AtomicU64::new(0),
        }
    }

    /// After a miss on `key` at `epoch`: lead the computation of the page, or follow the
    /// request already computing it at this epoch. When a cached page expires under load,
    /// one request recomputes it instead of every request that arrives meanwhile (each
    /// costs milliseconds of CPU: together they would stall every other request). A
    /// computation started before a write (an older epoch) is not followed.
    pub fn flight(&self, key: &str, epoch: u64) -> Flight<'_> {
        let mut flights = self.flights.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(flying) = flights.get(key)
            && flying.epoch == epoch
        {
            return Flight::Follow(flying.receiver.clone());
        }
        let (sender, receiver) = tokio::sync::watch::channel(None);
        let number = self.next_flight.fetch_add(1, Ordering::Relaxed);
        flights.insert(
            key.to_owned(),
            Flying {
                epoch,
                number,
                receiver,
            },
        );
        Flight::Lead(FlightGuard {
            cache: self,
            key: key.to_owned(),
            number,
            sender,
        })
    }

    /// The current epoch (read it before computing a page, and store the page with it).
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// The page cached for `key`, if still valid.
    pub fn get(&self, key: &str) -> Option<CachedPage> {
        let epoch = self.epoch();
        let pages = self.pages.lock().unwrap_or_else(|e| e.into_inner());
        let (at_epoch, at, page) = pages.get(key)?;
        (*at_epoch == epoch && at.elapsed() < PAGE_TTL).then(|| page.clone())
    }

    /// The page cached for `key` that is older than [`PAGE_TTL`] but was computed at the
    /// current epoch: no write through this process changed it, only another replica's
    /// writes could have. While one request recomputes it, the others may still be given
    /// this one.
    pub fn get_expired(&self, key: &str) -> Option<CachedPage> {
        let epoch = self.epoch();
        let pages = self.pages.lock().unwrap_or_else(|e| e.into_inner());
        let (at_epoch, _, page) = pages.get(key)?;
        (*at_epoch == epoch).then(|| page.clone())
    }

    /// Caches `page` for `key`, computed at `epoch`.
    pub fn put(&self, key: String, epoch: u64, page: CachedPage) {
        let mut pages = self.pages.lock().unwrap_or_else(|e| e.into_inner());
        if pages.len() >= MAX_PAGES {
            pages.clear();
        }
        pages.insert(key, (epoch, Instant::now(), page));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_dropped_by_writes_and_by_age() {
        let epoch = Arc::new(AtomicU64::new(0));
        let cache = PageCache::new(epoch.clone());
        let page = CachedPage {
            body: Bytes::from_static(b"[]"),
            link: None,
        };
        cache.put("k".into(), cache.epoch(), page.clone());
        assert!(cache.get("k").is_some());
        epoch.fetch_add(1, Ordering::Release);
        assert!(cache.get("k").is_none());
        // A page computed before a write is never served after it.
        cache.put("k".into(), 0, page.clone());
        assert!(cache.get("k").is_none());
        assert!(cache.get_expired("k").is_none());
        // An aged page computed at the current epoch is still there for the waiting.
        let aged = Instant::now().checked_sub(PAGE_TTL * 2).unwrap();
        cache
            .pages
            .lock()
            .unwrap()
            .insert("k".into(), (cache.epoch(), aged, page));
        assert!(cache.get("k").is_none());
        assert!(cache.get_expired("k").is_some());
    }

    fn page(body: &'static [u8]) -> CachedPage {
        CachedPage {
            body: Bytes::from_static(body),
            link: None,
        }
    }

    #[tokio::test]
    async fn one_request_computes_a_missing_page_while_the_others_wait() {
        let epoch = Arc::new(AtomicU64::new(0));
        let cache = PageCache::new(epoch.clone());
        let Flight::Lead(guard) = cache.flight("k", 0) else {
            panic!("the first miss leads");
        };
        let Flight::Follow(mut follower) = cache.flight("k", 0) else {
            panic!("a second miss at the same epoch follows");
        };
        // Another key, or the same key after a write, is computed independently.
        assert!(matches!(cache.flight("other", 0), Flight::Lead(_)));
        let Flight::Lead(after_write) = cache.flight("k", 1) else {
            panic!("a miss after a write does not wait for a page computed before it");
        };
        drop(after_write);
        guard.finish(page(b"[1]"));
        let published = follower.wait_for(Option::is_some).await.unwrap().clone();
        assert_eq!(published.unwrap().body, Bytes::from_static(b"[1]"));
        // Finished flights are forgotten: the next miss leads again.
        assert!(matches!(cache.flight("k", 0), Flight::Lead(_)));
    }

    #[test]
    fn an_older_flight_ending_leaves_a_newer_one_of_the_same_key() {
        let cache = PageCache::new(Arc::new(AtomicU64::new(0)));
        let Flight::Lead(before_write) = cache.flight("k", 0) else {
            panic!("the first miss leads");
        };
        let Flight::Lead(after_write) = cache.flight("k", 1) else {
            panic!("a miss after a write leads its own flight");
        };
        drop(before_write);
        assert!(
            matches!(cache.flight("k", 1), Flight::Follow(_)),
            "the newer flight is still followed"
        );
        drop(after_write);
        assert!(matches!(cache.flight("k", 1), Flight::Lead(_)));
    }

    #[tokio::test]
    async fn followers_of_a_failed_computation_are_released() {
        let cache = PageCache::new(Arc::new(AtomicU64::new(0)));
        let Flight::Lead(guard) = cache.flight("k", 0) else {
            panic!("the first miss leads");
        };
        let Flight::Follow(mut follower) = cache.flight("k", 0) else {
            panic!("a second miss follows");
        };
        drop(guard);
        assert!(follower.wait_for(Option::is_some).await.is_err());
        assert!(matches!(cache.flight("k", 0), Flight::Lead(_)));
    }
}
