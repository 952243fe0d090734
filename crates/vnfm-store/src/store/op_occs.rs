//! Operation occurrences: the per-instance lock, runner leases, the step journal and hook data.

use super::Result;
use crate::idempotency::PendingKey;
use crate::model::{
    JournalEntry, Lease, OpOccQuery, Page, StartCondition, StepRecord, StepWritten, Timestamp,
    Version,
};
use async_trait::async_trait;
use serde_json::Value;
use vnfm_types::{VnfInstanceId, VnfLcmOpOcc, VnfLcmOpOccId};

/// Operation occurrences: the per-instance lock, runner leases, the step journal and hook data. Part of [`crate::Store`].
#[async_trait]
pub trait OpOccStore: Send + Sync {
    /// In one transaction: refuses with [`crate::Conflict::InstanceBusy`] (naming the holder and
    /// its state) if an op-occ of the same instance is in a non-final state, else inserts `occ`
    /// (which must be in `STARTING`) at [`crate::Version::FIRST`] under `lease`. Returns the
    /// instance's version at that moment (the caller planned against some version and can tell
    /// whether the instance changed since). [`crate::StoreError::NotFound`] if the instance does not
    /// exist.
    async fn start_operation(&self, occ: &VnfLcmOpOcc, lease: &Lease) -> Result<Version> {
        self.start_operation_keyed(occ, lease, None, None).await
    }

    /// [`crate::OpOccStore::start_operation`] of a conditional request (an HTTP `If-Match`): in the same
    /// transaction, the instance must still be at version `expected`, else
    /// [`crate::StoreError::VersionMismatch`] (naming the version found) and nothing is written. Of
    /// concurrent requests made against one version, across every process sharing the
    /// database, at most one starts: starting takes the instance's lock and every change
    /// of the instance happens under it.
    async fn start_operation_at(
        &self,
        occ: &VnfLcmOpOcc,
        lease: &Lease,
        expected: Version,
    ) -> Result<Version> {
        self.start_operation_keyed(occ, lease, Some(expected), None)
            .await
    }

    /// [`crate::OpOccStore::start_operation`] (or, with `expected`,
    /// [`crate::OpOccStore::start_operation_at`]) that also commits `key`, if given, with the
    /// occurrence's id in the same transaction; [`crate::Conflict::KeyTaken`] (nothing
    /// written) when another request committed the key first.
    async fn start_operation_keyed(
        &self,
        occ: &VnfLcmOpOcc,
        lease: &Lease,
        expected: Option<Version>,
        key: Option<&PendingKey>,
    ) -> Result<Version>;

    /// [`crate::OpOccStore::start_operation`] of `started` and [`crate::OpOccStore::record_step`] of `record` (its
    /// first move: `record.expected_state` is `STARTING`, `record.expected_version`
    /// [`crate::Version::FIRST`], `record.owner` the lease's owner) in one transaction, for an
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
    ) -> Result<Option<StepWritten>> {
        self.begin_operation_keyed(started, lease, condition, record, None)
            .await
    }

    /// [`crate::OpOccStore::begin_operation`] that also commits `key`, if given, with the
    /// occurrence's id in the same transaction when it writes; [`crate::Conflict::KeyTaken`]
    /// (nothing written) when another request committed the key first.
    async fn begin_operation_keyed(
        &self,
        started: &VnfLcmOpOcc,
        lease: &Lease,
        condition: &StartCondition,
        record: &StepRecord,
        key: Option<&PendingKey>,
    ) -> Result<Option<StepWritten>>;

    /// In one transaction: compare-and-swap the op-occ (expected state and version, and
    /// `record.owner` must hold its lease), write the new document, append the journal row,
    /// upsert `record.data`, update the instance (expected version) and enqueue the outbox
    /// rows. On any refusal
    /// nothing is written: a lost lease gives [`crate::Conflict::LeaseLost`], a stale op-occ or
    /// instance [`crate::StoreError::VersionMismatch`]. Entering `FAILED_TEMP` or a final state drops
    /// the lease; entering a final state releases the instance.
    async fn record_step(&self, record: &StepRecord) -> Result<StepWritten>;

    /// The op-occ and its version.
    async fn get_op_occ(&self, id: &VnfLcmOpOccId) -> Result<Option<(VnfLcmOpOcc, Version)>>;

    /// The op-occ as the JSON text of its document: for callers that answer with the
    /// document as it is (a polled occurrence), which saves parsing it into its type only to
    /// encode it again. The SQL stores return the stored text; the provided implementation
    /// encodes [`crate::OpOccStore::get_op_occ`]'s.
    async fn get_op_occ_text(&self, id: &VnfLcmOpOccId) -> Result<Option<String>> {
        self.get_op_occ(id)
            .await?
            .map(|(occ, _)| crate::json::document_to_json("operation occurrence", &occ))
            .transpose()
    }

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
    /// [`crate::OpOccStore::record_step`]. [`crate::Conflict::LeaseHeld`] while another owner's lease is live,
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

    /// Whether any op-occ in `STARTING`, `PROCESSING` or `ROLLING_BACK` has a lease that
    /// expired before `now` or was released: what [`crate::OpOccStore::claim_expired`] would
    /// take. One indexed read, no write: a live runner asks it often to take over a dead
    /// one's work within seconds.
    async fn has_expired_leases(&self, now: Timestamp) -> Result<bool>;

    /// Op-occ-scoped data of MgmtDriver hooks (error-handling data that survives retries).
    async fn get_op_occ_data(&self, op_occ_id: &VnfLcmOpOccId, key: &str) -> Result<Option<Value>>;

    /// Stores (or replaces) op-occ-scoped data. [`crate::StoreError::NotFound`] if the op-occ does
    /// not exist.
    async fn put_op_occ_data(
        &self,
        op_occ_id: &VnfLcmOpOccId,
        key: &str,
        value: &Value,
    ) -> Result<()>;
}
