//! Operator actions on an occurrence (retry, rollback, fail, cancel), waiting for an
//! occurrence to come to rest, and stopping the runner.

use std::time::{Duration, Instant};

use serde_json::Value;
use vnfm_store::{JournalEntry, Version};
use vnfm_types::{
    CancelModeType, InstantiationState, LcmOperationStateType as State, LcmOperationType,
    VnfInstance, VnfLcmOpOcc, VnfLcmOpOccId,
};

use super::exec::{self, CANCEL_KEY, Entry, Run};
use super::journal::{self, JournalView, Phase, PlanRow};
use super::{Lcm, RunHandle, RunState, apply, panics, store_err, vims};
use crate::error::LcmError;
use crate::plan::rollback_plan;
use crate::state::{Event, transition};

/// Whether an occurrence is at rest: final, or `FAILED_TEMP` (waiting for the operator).
pub fn is_at_rest(state: State) -> bool {
    state.is_final() || state == State::FailedTemp
}

impl Lcm {
    /// The step journal of an occurrence, oldest row first (see the module docs for its rows).
    /// Inline VIM secrets of the instance a plan row records are shown as `"***"`.
    pub async fn journal(&self, id: &VnfLcmOpOccId) -> Result<Vec<JournalEntry>, LcmError> {
        let rows = self.inner.store.journal(id).await.map_err(store_err)?;
        Ok(rows.into_iter().map(vims::journal_entry_view).collect())
    }

    /// Where occurrence `id` stands in its plan: the steps done, the one running (or failed)
    /// and those left (see [`super::progress`]).
    pub async fn progress(&self, id: &VnfLcmOpOccId) -> Result<super::OpOccProgress, LcmError> {
        let (occ, _) = self.op_occ_with_version(id).await?;
        let rows = self.inner.store.journal(id).await.map_err(store_err)?;
        super::progress::progress(id, occ.operation_state, &rows)
    }

    /// When each step of occurrence `id` ran, for how long and how it ended (see
    /// [`super::timeline`]).
    pub async fn timeline(&self, id: &VnfLcmOpOccId) -> Result<super::OpOccTimeline, LcmError> {
        let (occ, _) = self.op_occ_with_version(id).await?;
        let rows = self.inner.store.journal(id).await.map_err(store_err)?;
        super::timeline::timeline(&occ, &rows, self.inner.now())
    }

    async fn journal_view(&self, id: &VnfLcmOpOccId) -> Result<JournalView, LcmError> {
        JournalView::read(&self.inner.store.journal(id).await.map_err(store_err)?)
    }

    /// Takes the lease of a `FAILED_TEMP` occurrence for an operator action and prepares its
    /// run. `ctx` may be adjusted by the caller before the run starts.
    async fn claimed_run(
        &self,
        occ: VnfLcmOpOcc,
        version: Version,
        ctx: exec::Ctx,
    ) -> Result<Run, LcmError> {
        let inner = &self.inner;
        let instance = self.instance_with_version(&occ.vnf_instance_id).await?;
        let request = exec::request_of(&occ)?;
        let lease = inner.lease();
        inner
            .store
            .claim_operation(&occ.id, version, &lease, inner.now())
            .await
            .map_err(store_err)?;
        Ok(
            Run::new(inner.clone(), occ, version, instance, ctx, request)
                .holding_until(lease.expires_at),
        )
    }

    async fn ctx_of(&self, occ: &VnfLcmOpOcc, view: &JournalView) -> Result<exec::Ctx, LcmError> {
        let (instance, _) = self.instance_with_version(&occ.vnf_instance_id).await?;
        exec::load_ctx(&self.inner, occ, view, &instance).await
    }

    async fn release(&self, id: &VnfLcmOpOccId) {
        let _ = self
            .inner
            .store
            .release_lease(id, &self.inner.config.runner_id)
            .await;
    }

    /// A leftover cancellation request must not cancel the next run, and the resumes recovery
    /// counted before the operator acted must not cut it short.
    async fn clear_stale_data(&self, id: &VnfLcmOpOccId) -> Result<(), LcmError> {
        let store = &self.inner.store;
        for key in [CANCEL_KEY, panics::RESUME_KEY] {
            if let Some(v) = store.get_op_occ_data(id, key).await.map_err(store_err)?
                && !v.is_null()
            {
                store
                    .put_op_occ_data(id, key, &serde_json::Value::Null)
                    .await
                    .map_err(store_err)?;
            }
        }
        Ok(())
    }

    /// Retries a `FAILED_TEMP` occurrence: `PROCESSING` again, resuming with the step that
    /// failed (the steps completed before it do not run again). Refused (409) in any other
    /// state, and for an occurrence that failed while rolling back.
    pub async fn retry(&self, id: &VnfLcmOpOccId) -> Result<VnfLcmOpOcc, LcmError> {
        let (occ, version) = self.op_occ_with_version(id).await?;
        transition(occ.operation_state, Event::Retry)?;
        let view = self.journal_view(id).await?;
        if view.last_phase == Some(Phase::Rollback) {
            return Err(LcmError::RetryAfterRollback {
                op_occ_id: id.to_string(),
            });
        }
        self.clear_stale_data(id).await?;
        let ctx = self.ctx_of(&occ, &view).await?;
        let mut run = self.claimed_run(occ, version, ctx).await?;
        if let Err(e) = run.transition_to(Event::Retry, None, None).await {
            self.release(id).await;
            return Err(e);
        }
        tracing::info!(op_occ_id = %id, from_step = view.forward_next, "retrying");
        let occ = run.occ().clone();
        run.spawn(Entry::Resume {
            phase: Phase::Forward,
            next: view.forward_next,
        });
        Ok(vims::op_occ_view(occ))
    }

    /// Rolls back a `FAILED_TEMP` occurrence: `ROLLING_BACK` through the inverse of the steps
    /// it completed ([`rollback_plan`]), then `ROLLED_BACK`. An occurrence whose rollback failed
    /// resumes that rollback. Refused (409) where the operation cannot be rolled back.
    pub async fn rollback(&self, id: &VnfLcmOpOccId) -> Result<VnfLcmOpOcc, LcmError> {
        let (occ, version) = self.op_occ_with_version(id).await?;
        transition(occ.operation_state, Event::Rollback)?;
        let view = self.journal_view(id).await?;
        self.clear_stale_data(id).await?;
        let mut ctx = self.ctx_of(&occ, &view).await?;
        let (plan, next, row) = match &view.rollback {
            Some(p) => (p.clone(), view.rollback_next, None),
            None => {
                let p = rollback_plan(&ctx.forward, view.forward_next)?;
                let row = journal::plan_row(
                    Phase::Rollback,
                    &PlanRow {
                        plan: p.clone(),
                        vnfd_id: None,
                        instance_before: None,
                    },
                    self.inner.now(),
                );
                (p, 0, Some(row))
            }
        };
        ctx.rollback = Some(plan);
        let mut run = self.claimed_run(occ, version, ctx).await?;
        if let Err(e) = run.transition_to(Event::Rollback, None, row).await {
            self.release(id).await;
            return Err(e);
        }
        tracing::info!(op_occ_id = %id, from_step = next, "rolling back");
        let occ = run.occ().clone();
        run.spawn(Entry::Resume {
            phase: Phase::Rollback,
            next,
        });
        Ok(vims::op_occ_view(occ))
    }

    /// Marks a `FAILED_TEMP` occurrence `FAILED` (final): the instance is released as it is,
    /// except after an INSTANTIATE, whose instance goes back to `NOT_INSTANTIATED` without
    /// the resources it had made (they stay on the VIM, named in the occurrence's warnings).
    pub async fn fail(&self, id: &VnfLcmOpOccId) -> Result<VnfLcmOpOcc, LcmError> {
        let inner = &self.inner;
        let (mut occ, version) = self.op_occ_with_version(id).await?;
        transition(occ.operation_state, Event::Fail)?;
        let before = self
            .journal_view(id)
            .await
            .ok()
            .and_then(|v| v.forward)
            .and_then(|row| row.instance_before);
        let (current, instance_version) = self.instance_with_version(&occ.vnf_instance_id).await?;
        let reset = failed_instantiate(&mut occ, before.as_ref(), &current);
        inner
            .store
            .claim_operation(id, version, &inner.lease(), inner.now())
            .await
            .map_err(store_err)?;
        let written = reset.clone().map(|i| (i, instance_version));
        match exec::record_transition(inner, &occ, version, Event::Fail, None, None, written).await
        {
            Ok(occ) => {
                tracing::info!(op_occ_id = %id, "marked FAILED");
                // The sealed VIMs the request's connections replaced, or that a failed
                // INSTANTIATE's brought, are released.
                let after = reset.unwrap_or(current);
                vims::release_after(inner, &occ, before.as_ref(), Some(&after)).await;
                Ok(vims::op_occ_view(occ))
            }
            Err(e) => {
                self.release(id).await;
                Err(e)
            }
        }
    }

    /// Requests the cancellation of a `STARTING`, `PROCESSING` or `ROLLING_BACK` occurrence
    /// (409 otherwise, or when a cancellation is already pending).
    ///
    /// The runner executing it (in this process or another one sharing the store) records
    /// `isCancelPending`, then: a `STARTING` occurrence ends `ROLLED_BACK`; otherwise GRACEFUL
    /// lets the running step finish and FORCEFUL trips the step's cancellation flag, and the
    /// occurrence ends `FAILED_TEMP`.
    pub async fn cancel(&self, id: &VnfLcmOpOccId, mode: CancelModeType) -> Result<(), LcmError> {
        let (occ, _) = self.op_occ_with_version(id).await?;
        transition(occ.operation_state, Event::CancelRequested)?;
        if occ.is_cancel_pending {
            return Err(LcmError::CancelPending {
                op_occ_id: id.to_string(),
            });
        }
        let request = serde_json::json!({ "cancelMode": mode });
        self.inner
            .store
            .put_op_occ_data(id, CANCEL_KEY, &request)
            .await
            .map_err(store_err)?;
        let handle = self.inner.running().get(id).cloned();
        if let Some(h) = handle {
            h.cancel.send_if_modified(|v| {
                let first = v.is_none();
                if first {
                    *v = Some(mode);
                }
                first
            });
        }
        tracing::info!(op_occ_id = %id, cancel_mode = ?mode, "cancellation requested");
        Ok(())
    }

    /// Waits until the occurrence is at rest (final, or `FAILED_TEMP`) and returns it;
    /// [`LcmError::WaitTimeout`] after `timeout`.
    pub async fn wait(
        &self,
        id: &VnfLcmOpOccId,
        timeout: Duration,
    ) -> Result<VnfLcmOpOcc, LcmError> {
        let started = Instant::now();
        // Executed here: wait for the task, which hands over the occurrence it left at rest.
        let local: Option<RunHandle> = self.inner.running().get(id).cloned();
        if let Some(h) = local {
            let mut done = h.done;
            if let Ok(Ok(state)) =
                tokio::time::timeout(timeout, done.wait_for(RunState::ended)).await
                && let RunState::Ended(Some(occ)) = &*state
            {
                return Ok(vims::op_occ_view(VnfLcmOpOcc::clone(occ)));
            }
        }
        loop {
            let occ = self.get_op_occ(id).await?;
            if is_at_rest(occ.operation_state) {
                return Ok(occ);
            }
            let elapsed = started.elapsed();
            if elapsed >= timeout {
                return Err(LcmError::WaitTimeout {
                    op_occ_id: id.to_string(),
                    state: occ.operation_state,
                    waited_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
                });
            }
            let left = timeout - elapsed;
            let handle: Option<RunHandle> = self.inner.running().get(id).cloned();
            match handle {
                // Executed here: wake when the task ends.
                Some(h) => {
                    let mut done = h.done;
                    let _ = tokio::time::timeout(left, done.wait_for(RunState::ended)).await;
                }
                // Executed elsewhere (or not at all yet): poll.
                None => tokio::time::sleep(left.min(Duration::from_millis(20))).await,
            }
        }
    }

    /// Stops executing: every running occurrence stops at its next step boundary and gives up
    /// its lease, so another runner (or this process's next start) recovers it. Waits up to
    /// `timeout` for the tasks to stop. Operations started afterwards are refused.
    pub async fn shutdown(&self, timeout: Duration) {
        self.inner.shutdown.send_replace(true);
        let started = Instant::now();
        let handles: Vec<RunHandle> = self.inner.running().values().cloned().collect();
        for h in handles {
            let left = timeout.saturating_sub(started.elapsed());
            let mut done = h.done;
            let _ = tokio::time::timeout(left, done.wait_for(RunState::ended)).await;
        }
    }

    /// Number of occurrences this process is executing now.
    pub fn running_count(&self) -> usize {
        self.inner.running().len()
    }
}

/// The instance a failed INSTANTIATE leaves, written with the move to `FAILED` (`None` for
/// other operations, which leave it as it is): `NOT_INSTANTIATED` as before the operation
/// (SOL003 and Tacker make it `INSTANTIATED` only when the occurrence completes), without the
/// resources its infrastructure step recorded, and without the VIM connections its request
/// brought (as Tacker: a later INSTANTIATE takes its own as they are). What the VNFM no
/// longer records but the VIM still holds is named in the occurrence's `warnings` (its
/// `resourceChanges` list the resources) and logged: nothing terminates it.
fn failed_instantiate(
    occ: &mut VnfLcmOpOcc,
    before: Option<&VnfInstance>,
    instance: &VnfInstance,
) -> Option<VnfInstance> {
    if occ.operation != LcmOperationType::Instantiate {
        return None;
    }
    let mut out = instance.clone();
    out.instantiation_state = InstantiationState::NotInstantiated;
    if let Some(info) = out.instantiated_vnf_info.take() {
        let vnfcs = info.vnfc_resource_info.as_ref().map_or(0, Vec::len);
        let links = info
            .vnf_virtual_link_resource_info
            .as_ref()
            .map_or(0, Vec::len);
        let storages = info
            .virtual_storage_resource_info
            .as_ref()
            .map_or(0, Vec::len);
        if vnfcs + links + storages > 0 {
            let warning = format!(
                "the INSTANTIATE created resources before it failed ({vnfcs} VNFC(s), {links} virtual link(s), {storages} storage(s), listed in resourceChanges); the instance is NOT_INSTANTIATED and no longer records them, so they stay on the VIM until removed there"
            );
            tracing::warn!(op_occ_id = %occ.id, vnf_instance_id = %occ.vnf_instance_id, "{warning}");
            occ.warnings.get_or_insert_default().push(warning);
        }
    }
    if let (Some(before), Some(keys)) = (
        before,
        occ.operation_params
            .as_ref()
            .and_then(|p| p.get("vimConnectionInfo"))
            .and_then(Value::as_object),
    ) {
        let keys: Vec<String> = keys.keys().cloned().collect();
        apply::restore_vims(&mut out, before, &keys);
    }
    (out != *instance).then_some(out)
}
