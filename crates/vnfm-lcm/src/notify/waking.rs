//! [`WakingStore`]: every write that enqueued notifications wakes the notification
//! deliverer, so they go out at once rather than at its next poll.

use std::sync::{Arc, OnceLock};

use super::DeliveryWaker;
use async_trait::async_trait;
use futures_util::stream::BoxStream;
use serde_json::Value;
use vnfm_store::{
    InstanceQuery, JournalEntry, Lease, NewOutboxRow, OpOccQuery, OutboxRow, OutboxSummary,
    PackageRecord, Page, ProjectScope, Result, ScopedKind, StartCondition, StepRecord, StepWritten,
    Store, SubscriptionDocument, SubscriptionKind, Timestamp, Version, VimRecord,
};
use vnfm_types::{SubscriptionId, VimId, VnfInstance, VnfInstanceId, VnfLcmOpOcc, VnfLcmOpOccId};

/// A [`Store`] that wakes the notification deliverer after a write that enqueued
/// notifications.
pub struct WakingStore {
    inner: Arc<dyn Store>,
    waker: Arc<OnceLock<DeliveryWaker>>,
}

impl WakingStore {
    /// Wraps `inner`; once `waker` is set, every write that enqueued notifications wakes it.
    pub fn new(inner: Arc<dyn Store>, waker: Arc<OnceLock<DeliveryWaker>>) -> WakingStore {
        WakingStore { inner, waker }
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
impl Store for WakingStore {
    async fn create_instance_in(
        &self,
        instance: &VnfInstance,
        project: Option<&str>,
        notify: &[NewOutboxRow],
    ) -> Result<Version> {
        let out = self
            .inner
            .create_instance_in(instance, project, notify)
            .await;
        self.enqueued(out.is_ok(), notify.len());
        out
    }

    async fn project_of(&self, kind: ScopedKind, id: &str) -> Result<Option<Option<String>>> {
        self.inner.project_of(kind, id).await
    }

    async fn get_instance(&self, id: &VnfInstanceId) -> Result<Option<(VnfInstance, Version)>> {
        self.inner.get_instance(id).await
    }

    async fn update_instance(&self, instance: &VnfInstance, expected: Version) -> Result<Version> {
        self.inner.update_instance(instance, expected).await
    }

    async fn delete_instance(
        &self,
        id: &VnfInstanceId,
        expected: Version,
        notify: &[NewOutboxRow],
    ) -> Result<()> {
        let out = self.inner.delete_instance(id, expected, notify).await;
        self.enqueued(out.is_ok(), notify.len());
        out
    }

    async fn list_instances(&self, query: &InstanceQuery) -> Result<Page<VnfInstance>> {
        self.inner.list_instances(query).await
    }

    async fn list_instance_documents(&self, query: &InstanceQuery) -> Result<Page<Value>> {
        self.inner.list_instance_documents(query).await
    }

    async fn list_instance_default_views(&self, query: &InstanceQuery) -> Result<Page<String>> {
        self.inner.list_instance_default_views(query).await
    }

    fn stream_instances(&self, query: &InstanceQuery) -> BoxStream<'static, Result<VnfInstance>> {
        self.inner.stream_instances(query)
    }

    async fn start_operation(&self, occ: &VnfLcmOpOcc, lease: &Lease) -> Result<Version> {
        self.inner.start_operation(occ, lease).await
    }

    async fn start_operation_at(
        &self,
        occ: &VnfLcmOpOcc,
        lease: &Lease,
        expected: Version,
    ) -> Result<Version> {
        self.inner.start_operation_at(occ, lease, expected).await
    }

    async fn begin_operation(
        &self,
        started: &VnfLcmOpOcc,
        lease: &Lease,
        condition: &StartCondition,
        record: &StepRecord,
    ) -> Result<Option<StepWritten>> {
        let out = self
            .inner
            .begin_operation(started, lease, condition, record)
            .await;
        self.enqueued(matches!(out, Ok(Some(_))), record.outbox.len());
        out
    }

    async fn record_step(&self, record: &StepRecord) -> Result<StepWritten> {
        let out = self.inner.record_step(record).await;
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

    async fn outbox_delivered(&self, id: i64, now: Timestamp) -> Result<()> {
        self.inner.outbox_delivered(id, now).await
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

    async fn create_subscription_document(&self, document: &SubscriptionDocument) -> Result<()> {
        self.inner.create_subscription_document(document).await
    }

    async fn subscription_document(
        &self,
        kind: SubscriptionKind,
        id: &SubscriptionId,
    ) -> Result<Option<SubscriptionDocument>> {
        self.inner.subscription_document(kind, id).await
    }

    async fn subscription_documents(
        &self,
        kind: SubscriptionKind,
        scope: &ProjectScope,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<SubscriptionDocument>> {
        self.inner
            .subscription_documents(kind, scope, after, limit)
            .await
    }

    async fn delete_subscription_document(
        &self,
        kind: SubscriptionKind,
        id: &SubscriptionId,
    ) -> Result<()> {
        self.inner.delete_subscription_document(kind, id).await
    }

    async fn duplicate_subscription_document(
        &self,
        kind: SubscriptionKind,
        canonical_filter: &str,
        callback_uri: &str,
        project: Option<&str>,
    ) -> Result<Option<SubscriptionDocument>> {
        self.inner
            .duplicate_subscription_document(kind, canonical_filter, callback_uri, project)
            .await
    }

    async fn create_alarm(
        &self,
        record: &vnfm_store::AlarmRecord,
        notify: &[NewOutboxRow],
    ) -> Result<Version> {
        let out = self.inner.create_alarm(record, notify).await;
        self.enqueued(out.is_ok(), notify.len());
        out
    }

    async fn update_alarm(
        &self,
        record: &vnfm_store::AlarmRecord,
        expected: Version,
        notify: &[NewOutboxRow],
    ) -> Result<Version> {
        let out = self.inner.update_alarm(record, expected, notify).await;
        self.enqueued(out.is_ok(), notify.len());
        out
    }

    async fn get_alarm(&self, id: &str) -> Result<Option<(vnfm_store::AlarmRecord, Version)>> {
        self.inner.get_alarm(id).await
    }

    async fn open_alarm(
        &self,
        dedup_key: &str,
    ) -> Result<Option<(vnfm_store::AlarmRecord, Version)>> {
        self.inner.open_alarm(dedup_key).await
    }

    async fn open_alarms(
        &self,
        instance: Option<&VnfInstanceId>,
    ) -> Result<Vec<(vnfm_store::AlarmRecord, Version)>> {
        self.inner.open_alarms(instance).await
    }

    async fn list_alarms(
        &self,
        scope: &ProjectScope,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<(vnfm_store::AlarmRecord, Version)>> {
        self.inner.list_alarms(scope, after, limit).await
    }

    async fn callback_authentication(
        &self,
        id: &SubscriptionId,
    ) -> Result<Option<Option<Vec<u8>>>> {
        self.inner.callback_authentication(id).await
    }

    async fn put_indicator(
        &self,
        indicator: &vnfm_types::VnfIndicator,
        notify: &[NewOutboxRow],
    ) -> Result<()> {
        let out = self.inner.put_indicator(indicator, notify).await;
        self.enqueued(out.is_ok(), notify.len());
        out
    }

    async fn get_indicator(
        &self,
        instance: &VnfInstanceId,
        indicator_id: &str,
    ) -> Result<Option<vnfm_types::VnfIndicator>> {
        self.inner.get_indicator(instance, indicator_id).await
    }

    async fn list_indicators(
        &self,
        scope: &ProjectScope,
        instance: Option<&VnfInstanceId>,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<vnfm_types::VnfIndicator>> {
        self.inner
            .list_indicators(scope, instance, after, limit)
            .await
    }

    async fn retain_indicators(&self, instance: &VnfInstanceId, keep: &[String]) -> Result<u64> {
        self.inner.retain_indicators(instance, keep).await
    }

    async fn instances_with_indicators(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<String>> {
        self.inner.instances_with_indicators(after, limit).await
    }

    async fn create_pm_job(&self, record: &vnfm_store::PmJobRecord) -> Result<Version> {
        self.inner.create_pm_job(record).await
    }

    async fn get_pm_job(&self, id: &str) -> Result<Option<(vnfm_store::PmJobRecord, Version)>> {
        self.inner.get_pm_job(id).await
    }

    async fn update_pm_job(
        &self,
        record: &vnfm_store::PmJobRecord,
        expected: Version,
        notify: &[NewOutboxRow],
    ) -> Result<Version> {
        let out = self.inner.update_pm_job(record, expected, notify).await;
        self.enqueued(out.is_ok(), notify.len());
        out
    }

    async fn delete_pm_job(&self, id: &str) -> Result<()> {
        self.inner.delete_pm_job(id).await
    }

    async fn list_pm_jobs(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<(vnfm_store::PmJobRecord, Version)>> {
        self.inner.list_pm_jobs(after, limit).await
    }

    async fn add_pm_report(
        &self,
        report: &vnfm_store::PmReportRecord,
        job: &vnfm_store::PmJobRecord,
        expected: Version,
        dropped: &[String],
        notify: &[NewOutboxRow],
    ) -> Result<Version> {
        let out = self
            .inner
            .add_pm_report(report, job, expected, dropped, notify)
            .await;
        self.enqueued(out.is_ok(), notify.len());
        out
    }

    async fn get_pm_report(
        &self,
        job_id: &str,
        id: &str,
    ) -> Result<Option<vnfm_store::PmReportRecord>> {
        self.inner.get_pm_report(job_id, id).await
    }

    async fn create_threshold(&self, record: &vnfm_store::ThresholdRecord) -> Result<Version> {
        self.inner.create_threshold(record).await
    }

    async fn get_threshold(
        &self,
        id: &str,
    ) -> Result<Option<(vnfm_store::ThresholdRecord, Version)>> {
        self.inner.get_threshold(id).await
    }

    async fn update_threshold(
        &self,
        record: &vnfm_store::ThresholdRecord,
        expected: Version,
        notify: &[NewOutboxRow],
    ) -> Result<Version> {
        let out = self.inner.update_threshold(record, expected, notify).await;
        self.enqueued(out.is_ok(), notify.len());
        out
    }

    async fn delete_threshold(&self, id: &str) -> Result<()> {
        self.inner.delete_threshold(id).await
    }

    async fn list_thresholds(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<(vnfm_store::ThresholdRecord, Version)>> {
        self.inner.list_thresholds(after, limit).await
    }

    async fn create_vim(&self, vim: &VimRecord) -> Result<Version> {
        self.inner.create_vim(vim).await
    }

    async fn get_vim(&self, id: &VimId) -> Result<Option<(VimRecord, Version)>> {
        self.inner.get_vim(id).await
    }

    async fn update_vim(&self, vim: &VimRecord, expected: Version) -> Result<Version> {
        self.inner.update_vim(vim, expected).await
    }

    async fn delete_vim(&self, id: &VimId, expected: Version) -> Result<()> {
        self.inner.delete_vim(id, expected).await
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
        self.inner.create_package(package).await
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
        self.enqueued(out.is_ok(), notify.len());
        out
    }

    async fn list_packages(
        &self,
        scope: &ProjectScope,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<PackageRecord>> {
        self.inner.list_packages(scope, after, limit).await
    }

    async fn put_package_content(&self, id: &str, content: &[u8]) -> Result<()> {
        self.inner.put_package_content(id, content).await
    }

    async fn get_package_content(&self, id: &str) -> Result<Option<Vec<u8>>> {
        self.inner.get_package_content(id).await
    }

    async fn put_package_content_from(
        &self,
        id: &str,
        content: &mut (dyn tokio::io::AsyncRead + Unpin + Send),
    ) -> Result<u64> {
        self.inner.put_package_content_from(id, content).await
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
