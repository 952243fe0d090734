//! The [`Store`] trait: everything the LCM core persists.

use async_trait::async_trait;
use futures_core::stream::BoxStream;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use vnfm_types::{SubscriptionId, VimId, VnfInstance, VnfInstanceId, VnfLcmOpOcc, VnfLcmOpOccId};

use crate::error::StoreError;
use crate::model::{
    InstanceQuery, JournalEntry, Lease, NewOutboxRow, OpOccQuery, OutboxRow, OutboxSummary,
    PackageRecord, Page, ProjectScope, ScopedKind, StartCondition, StepRecord, StepWritten,
    Timestamp, Version, VimRecord,
};
use crate::subscriptions::{SubscriptionDocument, SubscriptionKind};

/// Result of store operations.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Largest piece package content is stored in ([`Store::put_package_content_from`]).
pub const CONTENT_CHUNK_BYTES: usize = 1 << 20;

/// The durable store of the LCM core. Object-safe: use it as `Arc<dyn Store>`.
///
/// # Records and versions
/// VNF instances, op-occs and VIMs carry a [`Version`] that grows with every change of the
/// document. Updates are compare-and-swap on it: a stale version gives
/// [`StoreError::VersionMismatch`] and writes nothing.
///
/// # The per-instance lock
/// At most one op-occ per VNF instance is in a non-final state (`STARTING`, `PROCESSING`,
/// `ROLLING_BACK`, `FAILED_TEMP`; see `vnfm_lcm::state::holds_instance`). The store enforces
/// it in [`Store::start_operation`], across every process sharing the database.
///
/// # Leases
/// A runner works on an op-occ under a [`Lease`]. Op-occs in `STARTING`, `PROCESSING` and
/// `ROLLING_BACK` are leased; when the runner dies its lease expires and
/// [`Store::claim_expired`] hands the op-occ to exactly one live process. `FAILED_TEMP` and final
/// op-occs have no lease ([`Store::record_step`] drops it on entering those states): an operator
/// action (retry, rollback, fail) takes one with [`Store::claim_operation`]. Lease operations
/// do not change the op-occ's version.
///
/// A runner's loop: `start_operation` (or `claim_*`), then for each step `record_step` with the
/// version returned by the previous call, `renew_lease` in the background, and on a
/// [`crate::Conflict::LeaseLost`] stop at once: another process owns the op-occ now.
#[async_trait]
pub trait Store: Send + Sync {
    // ----- VNF instances -----

    /// [`Store::create_instance_in`] of no project.
    async fn create_instance(
        &self,
        instance: &VnfInstance,
        notify: &[NewOutboxRow],
    ) -> Result<Version> {
        self.create_instance_in(instance, None, notify).await
    }

    /// Stores a new instance of `project` (see [`ProjectScope`]) at [`Version::FIRST`], and
    /// enqueues `notify` (e.g. the `VnfIdentifierCreationNotification`s) in the same
    /// transaction. [`crate::Conflict::AlreadyExists`] if the id is taken. The instance's
    /// op-occs and alarms belong to the same project.
    async fn create_instance_in(
        &self,
        instance: &VnfInstance,
        project: Option<&str>,
        notify: &[NewOutboxRow],
    ) -> Result<Version>;

    /// The project of the resource `id` of `kind` (to tell whether a caller's
    /// [`ProjectScope`] admits it): `None` if no such resource exists, `Some(None)` if it
    /// belongs to no project.
    async fn project_of(&self, kind: ScopedKind, id: &str) -> Result<Option<Option<String>>>;

    /// The instance and its version.
    async fn get_instance(&self, id: &VnfInstanceId) -> Result<Option<(VnfInstance, Version)>>;

    /// Replaces the instance document if its version is still `expected`; returns the new
    /// version. Keeps the index of VIMs the instance uses up to date.
    async fn update_instance(&self, instance: &VnfInstance, expected: Version) -> Result<Version>;

    /// Deletes the instance if its version is still `expected` and no op-occ holds it
    /// ([`crate::Conflict::InstanceBusy`] otherwise); enqueues `notify` in the same transaction.
    /// Its op-occs stay (they are history).
    async fn delete_instance(
        &self,
        id: &VnfInstanceId,
        expected: Version,
        notify: &[NewOutboxRow],
    ) -> Result<()>;

    /// One page of instances matching `query`, ordered by id.
    async fn list_instances(&self, query: &InstanceQuery) -> Result<Page<VnfInstance>>;

    /// [`Store::list_instances`] with each instance as its stored JSON document, decoded
    /// straight into a [`Value`]: for callers that filter and reshape documents anyway (the
    /// REST lists), which saves building each typed instance only to turn it into JSON.
    async fn list_instance_documents(&self, query: &InstanceQuery) -> Result<Page<Value>> {
        let page = self.list_instances(query).await?;
        let items = page
            .items
            .iter()
            .map(|i| {
                serde_json::to_value(i).map_err(|e| {
                    StoreError::Invalid(format!("VNF instance {} is not JSON: {e}", i.id))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Page {
            items,
            next: page.next,
        })
    }

    /// [`Store::list_instances`] with each instance as the JSON text of its default view: its
    /// document without the members a SOL003 list leaves out when the request selects
    /// nothing (`vnfm_sol013::defaults::v2::VNF_INSTANCE_EXCLUDED`, among them
    /// `vimConnectionInfo`, so a view holds no VIM secret). The SQL stores keep this text
    /// next to each document, written by the same statement, so a page of them is read
    /// without parsing any document; the provided implementation derives it from
    /// [`Store::list_instance_documents`].
    async fn list_instance_default_views(&self, query: &InstanceQuery) -> Result<Page<String>> {
        let page = self.list_instance_documents(query).await?;
        let items = page
            .items
            .into_iter()
            .map(|mut doc| {
                if let Value::Object(members) = &mut doc {
                    for m in vnfm_sol013::defaults::v2::VNF_INSTANCE_EXCLUDED {
                        members.shift_remove(*m);
                    }
                }
                doc.to_string()
            })
            .collect();
        Ok(Page {
            items,
            next: page.next,
        })
    }

    /// All instances matching `query` (from `query.after`), ordered by id, fetched lazily in
    /// batches of `query.limit`: memory stays bounded by one batch whatever the table size.
    /// Instances created while streaming appear if their id sorts after the last batch read.
    fn stream_instances(&self, query: &InstanceQuery) -> BoxStream<'static, Result<VnfInstance>>;

    // ----- Op-occs and the per-instance lock -----

    /// In one transaction: refuses with [`crate::Conflict::InstanceBusy`] (naming the holder and
    /// its state) if an op-occ of the same instance is in a non-final state, else inserts `occ`
    /// (which must be in `STARTING`) at [`Version::FIRST`] under `lease`. Returns the
    /// instance's version at that moment (the caller planned against some version and can tell
    /// whether the instance changed since). [`StoreError::NotFound`] if the instance does not
    /// exist.
    async fn start_operation(&self, occ: &VnfLcmOpOcc, lease: &Lease) -> Result<Version>;

    /// [`Store::start_operation`] of a conditional request (an HTTP `If-Match`): in the same
    /// transaction, the instance must still be at version `expected`, else
    /// [`StoreError::VersionMismatch`] (naming the version found) and nothing is written. Of
    /// concurrent requests made against one version, across every process sharing the
    /// database, at most one starts: starting takes the instance's lock and every change
    /// of the instance happens under it.
    async fn start_operation_at(
        &self,
        occ: &VnfLcmOpOcc,
        lease: &Lease,
        expected: Version,
    ) -> Result<Version>;

    /// [`Store::start_operation`] of `started` and [`Store::record_step`] of `record` (its
    /// first move: `record.expected_state` is `STARTING`, `record.expected_version`
    /// [`Version::FIRST`], `record.owner` the lease's owner) in one transaction, for an
    /// occurrence that can begin without waiting for anyone. Refuses as `start_operation` does
    /// (busy instance, unknown instance) and as `record_step` does; `Ok(None)`, with nothing
    /// written, when `condition` no longer holds (the instance changed since the caller read
    /// it, or registered a VIM), so the caller can start the occurrence the ordinary way.
    async fn begin_operation(
        &self,
        started: &VnfLcmOpOcc,
        lease: &Lease,
        condition: &StartCondition,
        record: &StepRecord,
    ) -> Result<Option<StepWritten>>;

    /// In one transaction: compare-and-swap the op-occ (expected state and version, and
    /// `record.owner` must hold its lease), write the new document, append the journal row,
    /// upsert `record.data`, update the instance (expected version) and enqueue the outbox
    /// rows. On any refusal
    /// nothing is written: a lost lease gives [`crate::Conflict::LeaseLost`], a stale op-occ or
    /// instance [`StoreError::VersionMismatch`]. Entering `FAILED_TEMP` or a final state drops
    /// the lease; entering a final state releases the instance.
    async fn record_step(&self, record: &StepRecord) -> Result<StepWritten>;

    /// The op-occ and its version.
    async fn get_op_occ(&self, id: &VnfLcmOpOccId) -> Result<Option<(VnfLcmOpOcc, Version)>>;

    /// The op-occ currently holding the instance (the one in a non-final state), if any.
    async fn active_op_occ(
        &self,
        instance_id: &VnfInstanceId,
    ) -> Result<Option<(VnfLcmOpOcc, Version)>>;

    /// One page of op-occs matching `query`, ordered by id.
    async fn list_op_occs(&self, query: &OpOccQuery) -> Result<Page<VnfLcmOpOcc>>;

    /// How many op-occs are in each state (states with none are omitted), by state name
    /// (`PROCESSING`, ...), ordered by name.
    async fn count_op_occs_by_state(&self) -> Result<Vec<(String, i64)>>;

    /// The step journal of the op-occ, oldest first.
    async fn journal(&self, op_occ_id: &VnfLcmOpOccId) -> Result<Vec<JournalEntry>>;

    /// The newest journal row with outcome `completed`: where a resumed runner continues.
    async fn last_completed_step(&self, op_occ_id: &VnfLcmOpOccId) -> Result<Option<JournalEntry>>;

    /// The current lease of the op-occ, if it has one.
    async fn lease(&self, op_occ_id: &VnfLcmOpOccId) -> Result<Option<Lease>>;

    /// Extends the lease held by `owner`; [`crate::Conflict::LeaseLost`] if `owner` does not hold
    /// it any more.
    async fn renew_lease(
        &self,
        op_occ_id: &VnfLcmOpOccId,
        owner: &str,
        expires_at: Timestamp,
    ) -> Result<()>;

    /// Gives up the lease held by `owner` (graceful shutdown): another process may claim the
    /// op-occ at once. [`crate::Conflict::LeaseLost`] if `owner` does not hold it.
    async fn release_lease(&self, op_occ_id: &VnfLcmOpOccId, owner: &str) -> Result<()>;

    /// Takes the lease of one non-final op-occ whose version is still `expected` and that has
    /// no live lease at `now` (or is already leased by `lease.owner`): how an operator action
    /// (retry, rollback, fail of a `FAILED_TEMP` op-occ) gets the right to call
    /// [`Store::record_step`]. [`crate::Conflict::LeaseHeld`] while another owner's lease is live,
    /// [`crate::Conflict::Finished`] for a final op-occ.
    async fn claim_operation(
        &self,
        op_occ_id: &VnfLcmOpOccId,
        expected: Version,
        lease: &Lease,
        now: Timestamp,
    ) -> Result<()>;

    /// Atomically takes over up to `limit` op-occs in `STARTING`, `PROCESSING` or
    /// `ROLLING_BACK` whose lease expired before `now` or was released (their runner died or
    /// stopped): each goes to exactly one caller, even with concurrent callers in several
    /// processes. Returns them with their versions.
    async fn claim_expired(
        &self,
        owner: &str,
        now: Timestamp,
        new_expiry: Timestamp,
        limit: u32,
    ) -> Result<Vec<(VnfLcmOpOcc, Version)>>;

    /// Op-occ-scoped data of MgmtDriver hooks (error-handling data that survives retries).
    async fn get_op_occ_data(&self, op_occ_id: &VnfLcmOpOccId, key: &str) -> Result<Option<Value>>;

    /// Stores (or replaces) op-occ-scoped data. [`StoreError::NotFound`] if the op-occ does
    /// not exist.
    async fn put_op_occ_data(
        &self,
        op_occ_id: &VnfLcmOpOccId,
        key: &str,
        value: &Value,
    ) -> Result<()>;

    // ----- Outbox -----

    /// Enqueues notifications on their own (prefer the `notify`/`outbox` arguments of the
    /// writes they report, which enqueue atomically with the change).
    async fn enqueue(&self, rows: &[NewOutboxRow]) -> Result<()>;

    /// Claims up to `limit` pending rows due at `now` that no other sender has claimed (or
    /// whose claim ended before `now`), for `claim_owner` until `claim_until`, oldest first.
    /// Two processes never receive the same row while a claim is live; a sender that dies
    /// loses its claims at `claim_until` (delivery is at-least-once).
    ///
    /// Only the oldest pending row of each queue (subscription and
    /// [`NewOutboxRow::ordering_key`]) is claimable: while it is claimed or waits for a retry,
    /// the rows behind it wait, so a queue is delivered in enqueue order. A dead row no longer
    /// holds its queue back.
    async fn outbox_due(
        &self,
        now: Timestamp,
        limit: u32,
        claim_owner: &str,
        claim_until: Timestamp,
    ) -> Result<Vec<OutboxRow>>;

    /// Removes a delivered row, and makes due at `now` every row to the same callback that
    /// waits for a retry after failed attempts (the subscriber answers again: its backlog
    /// goes at once, each queue still in order).
    async fn outbox_delivered(&self, id: i64, now: Timestamp) -> Result<()>;

    /// Records a failed attempt and schedules the next one; releases the claim.
    async fn outbox_retry(&self, id: i64, next_attempt_at: Timestamp, error: &str) -> Result<()>;

    /// Records the last failed attempt and marks the row dead (kept for inspection).
    async fn outbox_dead(&self, id: i64, error: &str) -> Result<()>;

    /// Dead rows, oldest first, after id `after`.
    async fn outbox_dead_rows(&self, after: Option<i64>, limit: u32) -> Result<Vec<OutboxRow>>;

    /// Pending rows (claimed or not), oldest first, after id `after`: the queues as they
    /// stand, for inspection.
    async fn outbox_pending_rows(&self, after: Option<i64>, limit: u32) -> Result<Vec<OutboxRow>>;

    /// The outbox counted by subscription and status, with the enqueue time of the oldest row
    /// of each: one aggregate query (`COUNT`, `MIN`), so its cost does not grow with the
    /// rows returned. Ordered by subscription, then pending before dead.
    async fn outbox_summary(&self) -> Result<Vec<OutboxSummary>>;

    /// Puts a dead row back in its queue: pending, due at `now`, unclaimed; its attempts and
    /// last error are kept. Being older than the rows behind it, it is the next one of its
    /// queue to be sent. [`StoreError::NotFound`] if no dead row has this id.
    async fn outbox_redeliver(&self, id: i64, now: Timestamp) -> Result<()>;

    /// Deletes a dead row for good. [`StoreError::NotFound`] if no dead row has this id.
    async fn outbox_discard(&self, id: i64) -> Result<()>;

    // ----- Subscriptions -----
    //
    // Subscriptions of every kind share one table and one id space; each call names the kind
    // it sees. Callers use the typed methods of [`crate::SubscriptionStore`].

    /// Stores a subscription. [`crate::Conflict::AlreadyExists`] if the id is taken (by a
    /// subscription of any kind).
    async fn create_subscription_document(&self, document: &SubscriptionDocument) -> Result<()>;

    /// The subscription `id` of `kind`, with its encrypted credentials.
    async fn subscription_document(
        &self,
        kind: SubscriptionKind,
        id: &SubscriptionId,
    ) -> Result<Option<SubscriptionDocument>>;

    /// One page of the subscriptions of `kind` in `scope`, ordered by id.
    async fn subscription_documents(
        &self,
        kind: SubscriptionKind,
        scope: &ProjectScope,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<SubscriptionDocument>>;

    /// Deletes the subscription `id` of `kind` and its pending outbox rows (dead rows stay).
    /// [`StoreError::NotFound`] if there is none of that kind.
    async fn delete_subscription_document(
        &self,
        kind: SubscriptionKind,
        id: &SubscriptionId,
    ) -> Result<()>;

    /// The oldest subscription of `kind` of `project` (`None`: of no project) with the same
    /// canonical filter (e.g. [`crate::canonical_filter`]) and callback URI, for SOL003's
    /// `303 See Other`.
    async fn duplicate_subscription_document(
        &self,
        kind: SubscriptionKind,
        canonical_filter: &str,
        callback_uri: &str,
        project: Option<&str>,
    ) -> Result<Option<SubscriptionDocument>>;

    /// The encrypted callback credentials of whatever an outbox row's `subscription_id`
    /// names, in one lookup: a subscription of any kind, or a PM job or threshold (SOL003
    /// v3.3.1 notifies those at their own callback). `None` when nothing has the id (any
    /// more); `Some(None)` when it has no credentials.
    async fn callback_authentication(&self, id: &SubscriptionId)
    -> Result<Option<Option<Vec<u8>>>>;

    // ----- Fault management -----

    /// Stores a new alarm at [`Version::FIRST`] and enqueues `notify` in the same transaction.
    /// The alarm belongs to the project of its instance (`managedObjectId`).
    /// [`crate::Conflict::AlreadyExists`] if the id is taken or an open alarm (one without
    /// `alarmClearedTime`) has the same [`crate::AlarmRecord::dedup_key`]: the caller then updates
    /// that one.
    async fn create_alarm(
        &self,
        record: &crate::model::AlarmRecord,
        notify: &[NewOutboxRow],
    ) -> Result<Version>;

    /// Replaces the alarm if its version is still `expected` and enqueues `notify` in the same
    /// transaction; returns the new version. [`StoreError::VersionMismatch`] if it changed.
    async fn update_alarm(
        &self,
        record: &crate::model::AlarmRecord,
        expected: Version,
        notify: &[NewOutboxRow],
    ) -> Result<Version>;

    /// The alarm and its version.
    async fn get_alarm(&self, id: &str) -> Result<Option<(crate::model::AlarmRecord, Version)>>;

    /// The open alarm with this de-duplication key, if any.
    async fn open_alarm(
        &self,
        dedup_key: &str,
    ) -> Result<Option<(crate::model::AlarmRecord, Version)>>;

    /// Every open alarm (one without `alarmClearedTime`), of `instance` only when given,
    /// ordered by id. Open alarms are the faults present now, so there are few.
    async fn open_alarms(
        &self,
        instance: Option<&VnfInstanceId>,
    ) -> Result<Vec<(crate::model::AlarmRecord, Version)>>;

    /// One page of the alarms (open and cleared) in `scope`, ordered by id.
    async fn list_alarms(
        &self,
        scope: &ProjectScope,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<(crate::model::AlarmRecord, Version)>>;

    // ----- Performance management -----

    /// Stores a new PM job at [`Version::FIRST`]. [`crate::Conflict::AlreadyExists`] if the
    /// id is taken.
    async fn create_pm_job(&self, record: &crate::PmJobRecord) -> Result<Version>;

    /// The PM job and its version.
    async fn get_pm_job(&self, id: &str) -> Result<Option<(crate::PmJobRecord, Version)>>;

    /// Replaces the PM job if its version is still `expected` and enqueues `notify` in the
    /// same transaction; returns the new version.
    async fn update_pm_job(
        &self,
        record: &crate::PmJobRecord,
        expected: Version,
        notify: &[NewOutboxRow],
    ) -> Result<Version>;

    /// Deletes the PM job, its reports and its pending notifications (outbox rows whose
    /// subscription id is the job's; dead rows stay).
    async fn delete_pm_job(&self, id: &str) -> Result<()>;

    /// One page of PM jobs, ordered by id.
    async fn list_pm_jobs(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<(crate::PmJobRecord, Version)>>;

    /// In one transaction: stores `report`, replaces its job with `job` if the job's version
    /// is still `expected`, deletes the job's reports `dropped` and enqueues `notify`; returns
    /// the job's new version.
    async fn add_pm_report(
        &self,
        report: &crate::PmReportRecord,
        job: &crate::PmJobRecord,
        expected: Version,
        dropped: &[String],
        notify: &[NewOutboxRow],
    ) -> Result<Version>;

    /// The report `id` of PM job `job_id`.
    async fn get_pm_report(&self, job_id: &str, id: &str) -> Result<Option<crate::PmReportRecord>>;

    /// Stores a new threshold at [`Version::FIRST`]. [`crate::Conflict::AlreadyExists`] if
    /// the id is taken.
    async fn create_threshold(&self, record: &crate::ThresholdRecord) -> Result<Version>;

    /// The threshold and its version.
    async fn get_threshold(&self, id: &str) -> Result<Option<(crate::ThresholdRecord, Version)>>;

    /// Replaces the threshold if its version is still `expected` and enqueues `notify` in the
    /// same transaction; returns the new version.
    async fn update_threshold(
        &self,
        record: &crate::ThresholdRecord,
        expected: Version,
        notify: &[NewOutboxRow],
    ) -> Result<Version>;

    /// Deletes the threshold and its pending notifications.
    async fn delete_threshold(&self, id: &str) -> Result<()>;

    /// One page of thresholds, ordered by id.
    async fn list_thresholds(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<(crate::ThresholdRecord, Version)>>;

    // ----- VNF indicators -----

    /// Writes the value of an indicator of an instance (the instance's project is recorded
    /// with it) and enqueues `notify` in the same transaction. The values of an instance are
    /// deleted with it.
    async fn put_indicator(
        &self,
        indicator: &vnfm_types::VnfIndicator,
        notify: &[NewOutboxRow],
    ) -> Result<()>;

    /// The indicator `indicator_id` of `instance`.
    async fn get_indicator(
        &self,
        instance: &VnfInstanceId,
        indicator_id: &str,
    ) -> Result<Option<vnfm_types::VnfIndicator>>;

    /// One page of the indicators in `scope` (of `instance` only, when given), ordered by
    /// instance and indicator id; `after` is the `next` marker of the previous page.
    async fn list_indicators(
        &self,
        scope: &ProjectScope,
        instance: Option<&VnfInstanceId>,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<vnfm_types::VnfIndicator>>;

    /// Deletes the indicators of `instance` whose ids are not in `keep` (all of them when
    /// `keep` is empty); how many went.
    async fn retain_indicators(&self, instance: &VnfInstanceId, keep: &[String]) -> Result<u64>;

    /// One page of the instances that have indicator values, ordered by id.
    async fn instances_with_indicators(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<String>>;

    // ----- VIMs -----

    /// Stores a VIM at [`Version::FIRST`].
    async fn create_vim(&self, vim: &VimRecord) -> Result<Version>;

    /// The VIM and its version.
    async fn get_vim(&self, id: &VimId) -> Result<Option<(VimRecord, Version)>>;

    /// Replaces the VIM if its version is still `expected`.
    async fn update_vim(&self, vim: &VimRecord, expected: Version) -> Result<Version>;

    /// Deletes the VIM if its version is still `expected` and no instance's
    /// `vimConnectionInfo` references it ([`crate::Conflict::InUse`] otherwise).
    async fn delete_vim(&self, id: &VimId, expected: Version) -> Result<()>;

    /// All VIMs, ordered by id.
    async fn list_vims(&self) -> Result<Vec<(VimRecord, Version)>>;

    /// VIMs registered by the hooks of this instance.
    async fn vims_created_by(
        &self,
        instance_id: &VnfInstanceId,
    ) -> Result<Vec<(VimRecord, Version)>>;

    /// Instances that use the VIM, ordered by id: their `vimConnectionInfo` references it, or
    /// a resource handle's `vimConnectionId` names it directly.
    async fn instances_using_vim(&self, vim_id: &VimId) -> Result<Vec<VnfInstanceId>>;

    /// For every registered VIM that instances use, the `(VIM, instance)` pairs, ordered by VIM
    /// id, then instance id ([`Store::instances_using_vim`] for all VIMs at once).
    ///
    /// The default asks [`Store::instances_using_vim`] once per VIM; the SQL backends read the
    /// index once.
    async fn vim_usage(&self) -> Result<Vec<(VimId, VnfInstanceId)>> {
        let mut out = Vec::new();
        for (vim, _) in self.list_vims().await? {
            for instance in self.instances_using_vim(&vim.id).await? {
                out.push((vim.id.clone(), instance));
            }
        }
        out.sort();
        Ok(out)
    }

    // ----- VNF packages -----

    /// Stores a new package at [`Version::FIRST`]. [`crate::Conflict::AlreadyExists`] if the id,
    /// or the `vnfd_id` (kind `VNF package for vnfdId`), is taken.
    async fn create_package(&self, package: &PackageRecord) -> Result<Version>;

    /// The package and its version.
    async fn get_package(&self, id: &str) -> Result<Option<(PackageRecord, Version)>>;

    /// The package whose VNFD has `vnfd_id`.
    async fn package_by_vnfd(&self, vnfd_id: &str) -> Result<Option<(PackageRecord, Version)>>;

    /// Replaces the package record if its version is still `expected`.
    /// [`crate::Conflict::AlreadyExists`] if another package has the same `vnfd_id`.
    async fn update_package(&self, package: &PackageRecord, expected: Version) -> Result<Version> {
        self.update_package_and_notify(package, expected, &[]).await
    }

    /// [`Store::update_package`], enqueueing `notify` (the package management notifications
    /// about the change) in the same transaction: both are written, or neither.
    async fn update_package_and_notify(
        &self,
        package: &PackageRecord,
        expected: Version,
        notify: &[NewOutboxRow],
    ) -> Result<Version>;

    /// Deletes the package and its content if its version is still `expected`.
    async fn delete_package(&self, id: &str, expected: Version) -> Result<()> {
        self.delete_package_and_notify(id, expected, &[]).await
    }

    /// [`Store::delete_package`], enqueueing `notify` in the same transaction.
    async fn delete_package_and_notify(
        &self,
        id: &str,
        expected: Version,
        notify: &[NewOutboxRow],
    ) -> Result<()>;

    /// One page of the packages in `scope`, ordered by id.
    async fn list_packages(
        &self,
        scope: &ProjectScope,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<PackageRecord>>;

    /// Stores (or replaces) the content (zip bytes) of an existing package.
    /// [`StoreError::NotFound`] if the package does not exist.
    async fn put_package_content(&self, id: &str, content: &[u8]) -> Result<()>;

    /// The content of the package, if uploaded, in one buffer. For large packages use
    /// [`Store::copy_package_content_to`], whose memory does not grow with the package.
    async fn get_package_content(&self, id: &str) -> Result<Option<Vec<u8>>>;

    /// Stores (or replaces) the content of an existing package, read from `content` to its
    /// end in pieces of at most [`CONTENT_CHUNK_BYTES`]: memory stays constant whatever the
    /// size. The content is replaced in one transaction (readers see the old or the new
    /// content, never a mix). Returns the number of bytes stored.
    /// [`StoreError::NotFound`] if the package does not exist; [`StoreError::ContentIo`] if
    /// `content` cannot be read.
    async fn put_package_content_from(
        &self,
        id: &str,
        content: &mut (dyn AsyncRead + Unpin + Send),
    ) -> Result<u64>;

    /// Writes the content of the package to `out` piece by piece (constant memory) and
    /// flushes it; `false`, with nothing written, when no content was uploaded.
    /// [`StoreError::ContentIo`] if writing to `out` fails.
    async fn copy_package_content_to(
        &self,
        id: &str,
        out: &mut (dyn AsyncWrite + Unpin + Send),
    ) -> Result<bool>;

    // ----- Settings -----

    /// The deployment-wide setting `name` (e.g. the NFVO connection), shared by every replica.
    async fn get_setting(&self, name: &str) -> Result<Option<Value>>;

    /// Stores (`Some`) or removes (`None`) the setting `name`.
    async fn put_setting(&self, name: &str, value: Option<&Value>) -> Result<()>;

    // ----- Schema -----

    /// The newest schema migration applied to the database.
    async fn schema_version(&self) -> Result<i64>;
}
