//! Crash recovery: taking over the occurrences of runners that died.
//!
//! An occurrence in `STARTING`, `PROCESSING` or `ROLLING_BACK` always has a lease; a runner
//! renews the leases of what it executes. [`Lcm::recover`] claims the occurrences whose lease
//! expired or was released ([`vnfm_store::OpOccStore::claim_expired`], each one goes to exactly one
//! process) and decides from the journal:
//!
//! - `STARTING`: nothing has been executed (no step runs before `PROCESSING`), so execution
//!   starts afresh.
//! - `PROCESSING` / `ROLLING_BACK`: the interrupted step is the first one of the current plan
//!   the journal does not record as completed. The occurrence is **resumed** at that step when
//!   [`LcmConfig::resume_idempotent`] is set and every step left to run is idempotent:
//!   infrastructure steps (an [`vnfm_driver_api::InfraDriver`] must be idempotent per step) and
//!   the instance-record steps of MODIFY_INFO are; hooks are only when
//!   [`LcmConfig::hooks_idempotent`] says so. Otherwise it goes to `FAILED_TEMP` with an
//!   `error` naming the interrupted step and a journal row marked `interrupted`, and the
//!   operator retries, rolls back or fails it.
//!
//! A runner that shut down ([`Lcm::shutdown`]) stopped at a step boundary and says so (the
//! phase and the step it did not start, in the op-occ data `handedOver`): that step is
//! resumed whatever it is, a hook too, as nothing of it ran, and the resume is not counted
//! against [`LcmConfig::max_resume_attempts`].
//!
//! A step that brings its process down every time would be resumed after every restart:
//! recovery counts the resumes of each step ([`LcmConfig::max_resume_attempts`], reset when
//! the operator retries or rolls back) and past that count goes to `FAILED_TEMP` instead,
//! saying so. A step that merely panics does not get here: the runner turns the panic into a
//! failed step.
//!
//! Either way a notification reports the outcome, and nothing stays in a running state
//! without a live lease. [`Lcm::spawn_recovery`] repeats the sweep periodically.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tracing::Instrument;
use vnfm_store::{StepOutcome, Timestamp, Version};
use vnfm_types::{
    ErrorKind, LcmOperationStateType as State, ProblemDetails, VnfLcmOpOcc, VnfLcmOpOccId,
};

use super::exec::{self, Entry, Run};
use super::journal::{self, JournalView, Phase, StepRow};
use super::{Inner, Lcm, LcmConfig, panics, store_err};
use crate::error::LcmError;
use crate::plan::Step;
use crate::state::Event;

/// How many occurrences one claim takes.
const BATCH: u32 = 32;

/// Op-occ data key of a hand-over at a step boundary ([`HandedOver`]).
pub(crate) const HANDOVER_KEY: &str = "handedOver";

/// What a runner that shut down left for the one that takes its occurrence over: it stopped
/// before it started step `next` of `phase`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HandedOver {
    phase: Phase,
    next: usize,
    /// The runner that stopped.
    by: String,
}

/// Records that this runner, shutting down, stopped `id` before step `next` of `phase` (before
/// it releases the lease: the step is not started by anybody until the lease is claimed).
pub(crate) async fn note_handover(
    inner: &Inner,
    id: &VnfLcmOpOccId,
    phase: Phase,
    next: usize,
) -> Result<(), LcmError> {
    let row = HandedOver {
        phase,
        next,
        by: inner.config.runner_id.clone(),
    };
    let value = serde_json::to_value(row)
        .map_err(|e| LcmError::inconsistent(format!("a hand-over of {id} does not encode: {e}")))?;
    inner
        .store
        .put_op_occ_data(id, HANDOVER_KEY, &value)
        .await
        .map_err(store_err)
}

/// Whether `id` was handed over before step `next` of `phase`, which has not run since; the
/// record is cleared (a later recovery of the same step finds it interrupted, not handed over).
async fn take_handover(
    inner: &Inner,
    id: &VnfLcmOpOccId,
    phase: Phase,
    next: usize,
) -> Result<Option<HandedOver>, LcmError> {
    let Some(row) = inner
        .store
        .get_op_occ_data(id, HANDOVER_KEY)
        .await
        .map_err(store_err)?
        .filter(|v| !v.is_null())
    else {
        return Ok(None);
    };
    inner
        .store
        .put_op_occ_data(id, HANDOVER_KEY, &serde_json::Value::Null)
        .await
        .map_err(store_err)?;
    Ok(serde_json::from_value::<HandedOver>(row)
        .ok()
        .filter(|h| h.phase == phase && h.next == next))
}

/// What [`Lcm::recover`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Occurrences taken over and resumed (now executing in this process).
    pub resumed: Vec<VnfLcmOpOccId>,
    /// Occurrences moved to `FAILED_TEMP` because their interrupted step cannot safely run
    /// again (or their context is gone).
    pub failed: Vec<VnfLcmOpOccId>,
    /// Occurrences that could not be handled now (their lease was released again; a later
    /// sweep retries), with why.
    pub errors: Vec<(VnfLcmOpOccId, String)>,
}

/// Whether an occurrence may resume with `steps` left to run.
pub(crate) fn resumable(config: &LcmConfig, steps: &[Step]) -> bool {
    config.resume_idempotent
        && steps
            .iter()
            .all(|s| !matches!(s, Step::Hook(_)) || config.hooks_idempotent)
}

impl Lcm {
    /// Takes over the occurrences of dead runners (see the [module docs](self)). Call it at
    /// start-up and periodically ([`Lcm::spawn_recovery`]).
    pub async fn recover(&self) -> Result<RecoveryReport, LcmError> {
        let inner = &self.inner;
        let mut report = RecoveryReport::default();
        let mut seen = HashSet::new();
        loop {
            let now = inner.now();
            let until = now.plus(inner.config.lease_ttl);
            let batch = inner
                .store
                .claim_expired(&inner.config.runner_id, now, until, BATCH)
                .await
                .map_err(store_err)?;
            let full = batch.len() == BATCH as usize;
            let fresh: Vec<_> = batch
                .into_iter()
                .filter(|(o, _)| seen.insert(o.id.clone()))
                .collect();
            if fresh.is_empty() {
                break;
            }
            for (occ, version) in fresh {
                // Still executing here (its renewal was late): the task keeps it.
                if inner.running().contains_key(&occ.id) {
                    continue;
                }
                let id = occ.id.clone();
                let span = exec::op_span(&occ);
                match recover_one(inner, occ, version, until)
                    .instrument(span)
                    .await
                {
                    Ok(true) => report.resumed.push(id),
                    Ok(false) => report.failed.push(id),
                    Err(e) => {
                        tracing::warn!(op_occ_id = %id, error = %e, "recovery failed; released for a later sweep");
                        let _ = inner
                            .store
                            .release_lease(&id, &inner.config.runner_id)
                            .await;
                        report.errors.push((id, e.to_string()));
                    }
                }
            }
            if !full {
                break;
            }
        }
        if !report.resumed.is_empty() || !report.failed.is_empty() {
            tracing::info!(
                resumed = report.resumed.len(),
                failed = report.failed.len(),
                "recovered operation occurrences of stopped runners"
            );
        }
        Ok(report)
    }

    /// Runs [`Lcm::recover`] (and [`Lcm::sweep_client_keys`]) every `every` until
    /// [`Lcm::shutdown`], and in between, every [`LcmConfig::takeover_poll`], as soon as an
    /// occurrence's lease has expired or was released
    /// ([`vnfm_store::OpOccStore::has_expired_leases`], a read): the occurrences of a runner
    /// that died are taken over within seconds of its lease's end, those of one that shut
    /// down within the poll.
    pub fn spawn_recovery(&self, every: Duration) -> tokio::task::JoinHandle<()> {
        let lcm = self.clone();
        tokio::spawn(async move {
            let mut stop = lcm.inner.shutdown.subscribe();
            let poll = lcm.inner.config.takeover_poll.min(every);
            let mut swept = tokio::time::Instant::now();
            loop {
                tokio::select! {
                    () = tokio::time::sleep(poll) => {}
                    _ = stop.wait_for(|s| *s) => return,
                }
                let full = swept.elapsed() >= every;
                if !full {
                    match lcm.inner.store.has_expired_leases(lcm.inner.now()).await {
                        Ok(true) => {}
                        Ok(false) => continue,
                        Err(e) => {
                            tracing::warn!(error = %e, "looking for expired leases failed");
                            continue;
                        }
                    }
                }
                if let Err(e) = lcm.recover().await {
                    tracing::warn!(error = %e, "recovery sweep failed");
                }
                if full {
                    swept = tokio::time::Instant::now();
                    // Expired client keys go with the periodic sweep.
                    if let Err(e) = lcm.sweep_client_keys().await {
                        tracing::warn!(error = %e, "sweeping expired idempotency keys failed");
                    }
                }
            }
        })
    }
}

/// Resumes (true) or fails (false) one occurrence claimed until `until`.
async fn recover_one(
    inner: &Arc<Inner>,
    occ: VnfLcmOpOcc,
    version: Version,
    until: Timestamp,
) -> Result<bool, LcmError> {
    let entries = inner.store.journal(&occ.id).await.map_err(store_err)?;
    let view = JournalView::read(&entries)?;
    let instance = inner
        .store
        .get_instance(&occ.vnf_instance_id)
        .await
        .map_err(store_err)?
        .ok_or_else(|| {
            LcmError::inconsistent(format!(
                "operation occurrence {} holds VNF instance {}, which does not exist",
                occ.id, occ.vnf_instance_id
            ))
        })?;
    let phase = match occ.operation_state {
        State::Starting | State::Processing => Phase::Forward,
        State::RollingBack => Phase::Rollback,
        _ => return Ok(false),
    };
    let ctx = match exec::load_ctx(inner, &occ, &view, &instance.0).await {
        Ok(ctx) => ctx,
        Err(e) => {
            let p = interrupted_problem(
                inner,
                e.kind(),
                format!(
                    "the runner executing this operation occurrence stopped and it cannot be resumed: {e}"
                ),
            );
            exec::record_transition(inner, &occ, version, Event::StepFailed, Some(p), None, None)
                .await?;
            return Ok(false);
        }
    };
    let request = exec::request_of(&occ)?;
    let max = inner.config.max_resume_attempts;
    if occ.operation_state == State::Starting {
        if panics::note_resume(inner, &occ.id, None, 0)
            .await?
            .is_none()
        {
            let p = interrupted_problem(
                inner,
                ErrorKind::Internal,
                format!(
                    "the runner executing this operation occurrence stopped before its first step {} times in a row (recovery resumes it at most {max} times); retry starts it again, fail ends it",
                    max + 1
                ),
            );
            exec::record_transition(inner, &occ, version, Event::StepFailed, Some(p), None, None)
                .await?;
            tracing::warn!(
                resumes = max,
                "occurrence keeps stopping before its first step: FAILED_TEMP"
            );
            return Ok(false);
        }
        tracing::info!("resuming an occurrence that had not started");
        Run::new(inner.clone(), occ, version, instance, ctx, request)
            .holding_until(until)
            .spawn(Entry::Orphan);
        return Ok(true);
    }
    let plan = ctx.plan(phase);
    let next = view.next(phase);
    if let Some(handed) = take_handover(inner, &occ.id, phase, next).await? {
        tracing::info!(
            phase = phase.as_str(),
            from_step = next,
            from = %handed.by,
            "resuming an occurrence handed over at a step boundary"
        );
        Run::new(inner.clone(), occ, version, instance, ctx, request)
            .holding_until(until)
            .spawn(Entry::Resume { phase, next });
        return Ok(true);
    }
    let remaining = plan.steps.get(next..).unwrap_or(&[]);
    let n = plan.steps.len();
    let name = plan
        .steps
        .get(next)
        .map(Step::name)
        .unwrap_or_else(|| "finish".into());
    let detail = if !resumable(&inner.config, remaining) {
        format!(
            "the runner executing this operation occurrence stopped (it crashed or lost its lease) during step {name} ({}/{n}); the step may have run partially: retry runs it again, rollback undoes the operation",
            next + 1
        )
    } else if let Some(count) = panics::note_resume(inner, &occ.id, Some(phase), next).await? {
        tracing::info!(
            phase = phase.as_str(),
            from_step = next,
            resume = count,
            "resuming"
        );
        Run::new(inner.clone(), occ, version, instance, ctx, request)
            .holding_until(until)
            .spawn(Entry::Resume { phase, next });
        return Ok(true);
    } else {
        format!(
            "the runner executing this operation occurrence stopped during step {name} ({}/{n}) {} times in a row (recovery resumes a step at most {max} times; the step may crash its process): retry runs it again, rollback undoes the operation",
            next + 1,
            max + 1
        )
    };
    let p = interrupted_problem(inner, ErrorKind::Internal, detail);
    let row = journal::step_row(
        name.clone(),
        StepRow {
            phase,
            index: next,
            error: Some(p.clone()),
            interrupted: true,
            started_at: None,
        },
        StepOutcome::Failed,
        inner.now(),
    );
    exec::record_transition(
        inner,
        &occ,
        version,
        Event::StepFailed,
        Some(p),
        Some(row),
        None,
    )
    .await?;
    tracing::info!(step = %name, "interrupted step is not idempotent: FAILED_TEMP");
    Ok(false)
}

fn interrupted_problem(_inner: &Inner, kind: ErrorKind, detail: String) -> ProblemDetails {
    ProblemDetails::of_kind(kind, "Runner interrupted", detail)
}
