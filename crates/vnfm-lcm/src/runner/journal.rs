//! The rows the runner writes to an occurrence's step journal, and reading them back (see the
//! module docs of [`crate::runner`] for the format).

use serde::{Deserialize, Serialize};
use vnfm_store::{JournalEntry, JournalStep, StepOutcome, Timestamp};
use vnfm_types::{ProblemDetails, VnfInstance};

use crate::error::LcmError;
use crate::plan::Plan;

/// Name of the row holding the forward plan.
pub(crate) const PLAN_FORWARD: &str = "plan:forward";
/// Name of the row holding the rollback plan.
pub(crate) const PLAN_ROLLBACK: &str = "plan:rollback";

/// Which plan a step belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum Phase {
    /// The operation itself.
    Forward,
    /// Its rollback.
    Rollback,
}

impl Phase {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Phase::Forward => "forward",
            Phase::Rollback => "rollback",
        }
    }
}

/// Detail of a `plan:*` row.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PlanRow {
    /// The plan.
    pub plan: Plan,
    /// The VNFD it was made with (for CHANGE_VNFPKG, the target VNFD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfd_id: Option<String>,
    /// The instance before the operation (forward plan only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_before: Option<VnfInstance>,
}

/// Detail of a step row.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StepRow {
    pub phase: Phase,
    pub index: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ProblemDetails>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// When the step started (ms since the epoch); the row is written when it ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<i64>,
}

pub(crate) fn plan_row(phase: Phase, row: &PlanRow, at: Timestamp) -> JournalStep {
    let step = match phase {
        Phase::Forward => PLAN_FORWARD,
        Phase::Rollback => PLAN_ROLLBACK,
    };
    JournalStep::new(step, StepOutcome::Started, at, row)
}

pub(crate) fn step_row(
    name: String,
    row: StepRow,
    outcome: StepOutcome,
    at: Timestamp,
) -> JournalStep {
    JournalStep::new(name, outcome, at, &row)
}

/// What the journal says about an occurrence.
#[derive(Debug, Clone, Default)]
pub(crate) struct JournalView {
    /// The forward plan row.
    pub forward: Option<PlanRow>,
    /// The rollback plan.
    pub rollback: Option<Plan>,
    /// Index of the first forward step not completed.
    pub forward_next: usize,
    /// Index of the first rollback step not completed.
    pub rollback_next: usize,
    /// The phase of the newest plan or step row.
    pub last_phase: Option<Phase>,
}

impl JournalView {
    /// Reads the rows of one occurrence (oldest first).
    pub(crate) fn read(entries: &[JournalEntry]) -> Result<JournalView, LcmError> {
        let mut view = JournalView::default();
        for e in entries {
            let corrupt = |err: serde_json::Error| {
                LcmError::inconsistent(format!(
                    "journal row {} of operation occurrence {} ({}) does not decode: {err}",
                    e.seq, e.op_occ_id, e.step
                ))
            };
            match e.step.as_str() {
                PLAN_FORWARD => {
                    view.forward = Some(serde_json::from_value(e.detail.clone()).map_err(corrupt)?);
                    view.last_phase = Some(Phase::Forward);
                }
                PLAN_ROLLBACK => {
                    let row: PlanRow = serde_json::from_value(e.detail.clone()).map_err(corrupt)?;
                    view.rollback = Some(row.plan);
                    view.last_phase = Some(Phase::Rollback);
                }
                _ => {
                    let Ok(row) = serde_json::from_value::<StepRow>(e.detail.clone()) else {
                        // Rows written by something else are not steps of a plan.
                        continue;
                    };
                    view.last_phase = Some(row.phase);
                    if e.outcome == StepOutcome::Completed {
                        let next = match row.phase {
                            Phase::Forward => &mut view.forward_next,
                            Phase::Rollback => &mut view.rollback_next,
                        };
                        *next = (*next).max(row.index + 1);
                    }
                }
            }
        }
        Ok(view)
    }

    /// Index of the first step of `phase` not completed.
    pub(crate) fn next(&self, phase: Phase) -> usize {
        match phase {
            Phase::Forward => self.forward_next,
            Phase::Rollback => self.rollback_next,
        }
    }
}
