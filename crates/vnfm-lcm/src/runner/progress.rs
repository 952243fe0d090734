//! Where an occurrence stands in its plan, read from its journal: which steps are done, which
//! one runs (or failed, or resumes on retry) and which are left. SOL003's `VnfLcmOpOcc` has no
//! such attribute; clients use this to show progress.

use serde::Serialize;
use vnfm_store::{JournalEntry, StepOutcome};
use vnfm_types::{LcmOperationStateType as State, VnfLcmOpOccId};

use super::journal::{JournalView, Phase, StepRow};
use crate::error::LcmError;

/// Progress of one operation occurrence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OpOccProgress {
    /// The occurrence.
    pub vnf_lcm_op_occ_id: VnfLcmOpOccId,
    /// Its state when the journal was read.
    pub operation_state: State,
    /// `forward` (the operation) or `rollback`; absent before the plan exists (`STARTING`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<&'static str>,
    /// The steps of that phase's plan, in order.
    pub steps: Vec<StepProgress>,
    /// The step running now, or the one that failed and a retry resumes at; absent when the
    /// occurrence is final or has not started executing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_step: Option<String>,
}

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepProgress {
    /// Position in the plan, from 1.
    pub number: usize,
    /// The step (`hook:instantiate_end`, `infra:instantiate`, ...).
    pub name: String,
    /// Where it stands.
    pub status: StepStatus,
}

/// Where a step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum StepStatus {
    /// Finished.
    Completed,
    /// Being executed.
    Running,
    /// Failed; a retry runs it again.
    Failed,
    /// Not reached (yet).
    Pending,
}

/// The progress of occurrence `id` in `state` from its journal rows (oldest first).
pub fn progress(
    id: &VnfLcmOpOccId,
    state: State,
    journal: &[JournalEntry],
) -> Result<OpOccProgress, LcmError> {
    let view = JournalView::read(journal)?;
    let phase = match state {
        State::RollingBack | State::RolledBack => Some(Phase::Rollback),
        State::Starting => None,
        // A rollback that failed leaves FAILED_TEMP/FAILED in the rollback phase.
        _ => view
            .last_phase
            .or(view.forward.as_ref().map(|_| Phase::Forward)),
    };
    let plan = match phase {
        Some(Phase::Forward) => view.forward.as_ref().map(|row| &row.plan),
        Some(Phase::Rollback) => view.rollback.as_ref(),
        None => None,
    };
    let Some((phase, plan)) = phase.zip(plan) else {
        return Ok(OpOccProgress {
            vnf_lcm_op_occ_id: id.clone(),
            operation_state: state,
            phase: None,
            steps: Vec::new(),
            current_step: None,
        });
    };
    let next = view.next(phase);
    let failed_at_next = last_outcome(journal, phase, next) == Some(StepOutcome::Failed);
    let at_next = match state {
        State::Processing | State::RollingBack => StepStatus::Running,
        State::FailedTemp | State::Failed if failed_at_next => StepStatus::Failed,
        _ => StepStatus::Pending,
    };
    let steps: Vec<StepProgress> = plan
        .steps
        .iter()
        .enumerate()
        .map(|(i, step)| StepProgress {
            number: i + 1,
            name: step.name(),
            status: if i < next {
                StepStatus::Completed
            } else if i == next {
                at_next
            } else {
                StepStatus::Pending
            },
        })
        .collect();
    let current_step = if state.is_final() && state != State::Failed {
        None
    } else {
        steps
            .get(next)
            .filter(|s| s.status != StepStatus::Pending)
            .map(|s| s.name.clone())
    };
    Ok(OpOccProgress {
        vnf_lcm_op_occ_id: id.clone(),
        operation_state: state,
        phase: Some(phase.as_str()),
        steps,
        current_step,
    })
}

/// The outcome of the newest row of step `index` of `phase`.
fn last_outcome(journal: &[JournalEntry], phase: Phase, index: usize) -> Option<StepOutcome> {
    journal.iter().rev().find_map(|e| {
        let row = serde_json::from_value::<StepRow>(e.detail.clone()).ok()?;
        (row.phase == phase && row.index == index).then_some(e.outcome)
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use vnfm_store::Timestamp;
    use vnfm_types::LcmOperationType;

    use super::*;
    use crate::plan::{Plan, PlanKind, Step};
    use crate::runner::journal::PlanRow;

    const APPLY: &str = "info:apply_modifications";
    const REVERT: &str = "info:revert_modifications";

    /// A plan row of `steps` (each `true` applies, `false` reverts the modifications: two
    /// steps with distinct names that need no VNFD).
    fn plan(kind: PlanKind, steps: &[bool]) -> serde_json::Value {
        let steps = steps
            .iter()
            .map(|apply| {
                if *apply {
                    Step::ApplyModifications
                } else {
                    Step::RevertModifications
                }
            })
            .collect();
        let row = PlanRow {
            plan: Plan {
                operation: LcmOperationType::ModifyInfo,
                kind,
                flavour_id: None,
                steps,
                rollback_hooks: Default::default(),
            },
            vnfd_id: None,
            instance_before: None,
        };
        serde_json::to_value(row).unwrap()
    }

    fn entry(
        seq: i64,
        step: &str,
        outcome: StepOutcome,
        detail: serde_json::Value,
    ) -> JournalEntry {
        JournalEntry {
            op_occ_id: VnfLcmOpOccId::new("o1"),
            seq,
            step: step.into(),
            outcome,
            at: Timestamp(seq),
            detail,
        }
    }

    fn statuses(p: &OpOccProgress) -> Vec<(String, StepStatus)> {
        p.steps.iter().map(|s| (s.name.clone(), s.status)).collect()
    }

    fn journal() -> Vec<JournalEntry> {
        vec![
            entry(
                1,
                "plan:forward",
                StepOutcome::Started,
                plan(PlanKind::Forward, &[true, false]),
            ),
            entry(
                2,
                APPLY,
                StepOutcome::Completed,
                json!({"phase": "forward", "index": 0}),
            ),
        ]
    }

    #[test]
    fn a_running_occurrence_shows_done_running_and_pending_steps() {
        let id = VnfLcmOpOccId::new("o1");
        let p = progress(&id, State::Processing, &journal()).unwrap();
        assert_eq!(p.phase, Some("forward"));
        assert_eq!(p.current_step.as_deref(), Some(REVERT));
        assert_eq!(
            statuses(&p),
            [
                (APPLY.to_owned(), StepStatus::Completed),
                (REVERT.to_owned(), StepStatus::Running),
            ]
        );
        let doc = serde_json::to_value(&p).unwrap();
        assert_eq!(doc["currentStep"], REVERT);
        assert_eq!(doc["steps"][1]["status"], "RUNNING");
        assert_eq!(doc["steps"][0]["number"], 1);
    }

    #[test]
    fn a_failed_step_is_where_a_retry_resumes_and_completion_clears_the_current_step() {
        let id = VnfLcmOpOccId::new("o1");
        let mut rows = journal();
        rows.push(entry(
            3,
            REVERT,
            StepOutcome::Failed,
            json!({"phase": "forward", "index": 1}),
        ));
        let p = progress(&id, State::FailedTemp, &rows).unwrap();
        assert_eq!(p.current_step.as_deref(), Some(REVERT));
        assert_eq!(p.steps[1].status, StepStatus::Failed);

        // Retried: running again, then completed.
        let p = progress(&id, State::Processing, &rows).unwrap();
        assert_eq!(p.steps[1].status, StepStatus::Running);
        rows.push(entry(
            4,
            REVERT,
            StepOutcome::Completed,
            json!({"phase": "forward", "index": 1}),
        ));
        let p = progress(&id, State::Completed, &rows).unwrap();
        assert_eq!(p.current_step, None);
        assert!(p.steps.iter().all(|s| s.status == StepStatus::Completed));
    }

    #[test]
    fn a_rollback_shows_the_rollback_plan_and_starting_shows_nothing() {
        let id = VnfLcmOpOccId::new("o1");
        let mut rows = journal();
        rows.push(entry(
            3,
            "plan:rollback",
            StepOutcome::Started,
            plan(PlanKind::Rollback, &[false]),
        ));
        let p = progress(&id, State::RollingBack, &rows).unwrap();
        assert_eq!(p.phase, Some("rollback"));
        assert_eq!(p.current_step.as_deref(), Some(REVERT));
        assert_eq!(p.steps.len(), 1);

        let p = progress(&id, State::Starting, &[]).unwrap();
        assert_eq!((p.phase, p.steps.len(), p.current_step), (None, 0, None));
    }
}
