//! When each step of an occurrence ran, for how long and how it ended, read from its step
//! journal (no tracing backend needed): what `vnfm op show --timeline` draws.
//!
//! A step row is written when the step ends and holds its start (`startedAt`); rows written
//! without it (by earlier versions) start when the row before them was written. A step running
//! now is the plan's next step, started at the newest row or at the occurrence's entry into its
//! current state (a retry), whichever is later.

use serde::Serialize;
use vnfm_store::{JournalEntry, StepOutcome, Timestamp};
use vnfm_types::time::{Timestamp as Instant, parse_rfc3339};
use vnfm_types::{LcmOperationStateType as State, LcmOperationType, VnfLcmOpOcc, VnfLcmOpOccId};

use super::journal::{JournalView, PLAN_FORWARD, PLAN_ROLLBACK, Phase, StepRow};
use crate::error::LcmError;

/// The steps of one operation occurrence in the order they ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OpOccTimeline {
    /// The occurrence.
    pub vnf_lcm_op_occ_id: VnfLcmOpOccId,
    /// Its operation.
    pub operation: LcmOperationType,
    /// Its state when the journal was read.
    pub operation_state: State,
    /// When the occurrence was created (its `startTime`).
    pub start_time: String,
    /// Each run of a step (a retried step appears once per run), oldest first.
    pub steps: Vec<TimelineStep>,
}

/// One run of one step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TimelineStep {
    /// `forward` (the operation) or `rollback`.
    pub phase: &'static str,
    /// Position in its phase's plan, from 1.
    pub number: usize,
    /// The step (`hook:instantiate_end`, `infra:instantiate`, ...).
    pub name: String,
    /// When it started (RFC 3339, milliseconds, UTC).
    pub start: String,
    /// When it ended; absent while it runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end: Option<String>,
    /// Milliseconds from start to end, or to the time the journal was read while it runs.
    pub duration_ms: i64,
    /// How it ended.
    pub outcome: TimelineOutcome,
    /// The error's `detail` when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// How a step run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TimelineOutcome {
    /// Finished.
    Completed,
    /// Failed.
    Failed,
    /// Its runner stopped during it (found by recovery).
    Interrupted,
    /// Being executed now.
    Running,
}

/// The timeline of occurrence `occ` from its journal rows (oldest first), read at `now`.
pub fn timeline(
    occ: &VnfLcmOpOcc,
    journal: &[JournalEntry],
    now: Timestamp,
) -> Result<OpOccTimeline, LcmError> {
    let view = JournalView::read(journal)?;
    let mut steps = Vec::new();
    // When the row before the current one was written: the start of a step whose row does
    // not say.
    let mut previous: Option<Timestamp> = None;
    for e in journal {
        if e.step == PLAN_FORWARD || e.step == PLAN_ROLLBACK {
            previous = Some(e.at);
            continue;
        }
        let Ok(row) = serde_json::from_value::<StepRow>(e.detail.clone()) else {
            continue;
        };
        let start = row.started_at.map(Timestamp).or(previous).unwrap_or(e.at);
        let outcome = match e.outcome {
            StepOutcome::Failed if row.interrupted => TimelineOutcome::Interrupted,
            StepOutcome::Failed => TimelineOutcome::Failed,
            _ => TimelineOutcome::Completed,
        };
        steps.push(TimelineStep {
            phase: row.phase.as_str(),
            number: row.index + 1,
            name: e.step.clone(),
            start: rfc3339(start),
            end: Some(rfc3339(e.at)),
            duration_ms: (e.at.0 - start.0).max(0),
            outcome,
            error: row.error.map(|p| p.detail),
        });
        previous = Some(e.at);
    }
    if let Some(running) = running_step(occ, &view, previous, now) {
        steps.push(running);
    }
    Ok(OpOccTimeline {
        vnf_lcm_op_occ_id: occ.id.clone(),
        operation: occ.operation,
        operation_state: occ.operation_state,
        start_time: occ.start_time.as_str().to_owned(),
        steps,
    })
}

/// The step executing now, when the occurrence is executing one.
fn running_step(
    occ: &VnfLcmOpOcc,
    view: &JournalView,
    previous: Option<Timestamp>,
    now: Timestamp,
) -> Option<TimelineStep> {
    let (phase, plan) = match occ.operation_state {
        State::Processing => (Phase::Forward, &view.forward.as_ref()?.plan),
        State::RollingBack => (Phase::Rollback, view.rollback.as_ref()?),
        _ => return None,
    };
    let index = view.next(phase);
    let step = plan.steps.get(index)?;
    let entered =
        parse_rfc3339(occ.state_entered_time.as_str()).map(|t| Timestamp(t.as_millisecond()));
    let start = previous.max(entered).unwrap_or(now);
    Some(TimelineStep {
        phase: phase.as_str(),
        number: index + 1,
        name: step.name(),
        start: rfc3339(start),
        end: None,
        duration_ms: (now.0 - start.0).max(0),
        outcome: TimelineOutcome::Running,
        error: None,
    })
}

/// `t` as an RFC 3339 UTC date-time with milliseconds.
fn rfc3339(t: Timestamp) -> String {
    Instant::from_millisecond(t.0)
        .unwrap_or(Instant::UNIX_EPOCH)
        .strftime("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::plan::{Plan, PlanKind, Step};
    use crate::runner::journal::PlanRow;

    const APPLY: &str = "info:apply_modifications";
    const REVERT: &str = "info:revert_modifications";
    /// 2026-01-01T00:00:00Z.
    const T0: i64 = 1_767_225_600_000;

    fn occ(state: State, entered: &str) -> VnfLcmOpOcc {
        serde_json::from_value(json!({
            "id": "o1", "operationState": state, "stateEnteredTime": entered,
            "startTime": "2026-01-01T00:00:00Z", "vnfInstanceId": "v1",
            "operation": "MODIFY_INFO", "isAutomaticInvocation": false,
            "isCancelPending": false,
            "_links": {"self": {"href": "/o1"}, "vnfInstance": {"href": "/v1"}}
        }))
        .unwrap()
    }

    fn entry(
        seq: i64,
        step: &str,
        outcome: StepOutcome,
        at: i64,
        detail: serde_json::Value,
    ) -> JournalEntry {
        JournalEntry {
            op_occ_id: VnfLcmOpOccId::new("o1"),
            seq,
            step: step.into(),
            outcome,
            at: Timestamp(T0 + at),
            detail,
        }
    }

    fn plan_entry(at: i64) -> JournalEntry {
        let row = PlanRow {
            plan: Plan {
                operation: LcmOperationType::ModifyInfo,
                kind: PlanKind::Forward,
                flavour_id: None,
                steps: vec![Step::ApplyModifications, Step::RevertModifications],
                rollback_hooks: Default::default(),
            },
            vnfd_id: None,
            instance_before: None,
        };
        entry(
            1,
            PLAN_FORWARD,
            StepOutcome::Started,
            at,
            serde_json::to_value(row).unwrap(),
        )
    }

    #[test]
    fn steps_start_when_their_row_says_and_run_until_it_was_written() {
        let rows = vec![
            plan_entry(0),
            entry(
                2,
                APPLY,
                StepOutcome::Completed,
                1_500,
                json!({"phase": "forward", "index": 0, "startedAt": T0 + 250}),
            ),
            entry(
                3,
                REVERT,
                StepOutcome::Failed,
                4_000,
                json!({"phase": "forward", "index": 1, "startedAt": T0 + 1_600,
                       "error": {"status": 500, "detail": "boom"}}),
            ),
        ];
        let t = timeline(
            &occ(State::FailedTemp, "2026-01-01T00:00:04Z"),
            &rows,
            Timestamp(T0 + 9_000),
        )
        .unwrap();
        let got: Vec<_> = t
            .steps
            .iter()
            .map(|s| (s.name.as_str(), s.number, s.duration_ms, s.outcome))
            .collect();
        assert_eq!(
            got,
            [
                (APPLY, 1, 1_250, TimelineOutcome::Completed),
                (REVERT, 2, 2_400, TimelineOutcome::Failed),
            ]
        );
        assert_eq!(t.steps[0].start, "2026-01-01T00:00:00.250Z");
        assert_eq!(t.steps[1].end.as_deref(), Some("2026-01-01T00:00:04.000Z"));
        assert_eq!(t.steps[1].error.as_deref(), Some("boom"));
        let doc = serde_json::to_value(&t).unwrap();
        assert_eq!(doc["steps"][1]["outcome"], "FAILED");
        assert_eq!(doc["steps"][0]["durationMs"], 1_250);
        assert_eq!(doc["operation"], "MODIFY_INFO");
    }

    #[test]
    fn rows_without_a_start_begin_at_the_previous_row_and_a_retried_step_runs_since_the_retry() {
        let rows = vec![
            plan_entry(100),
            entry(
                2,
                APPLY,
                StepOutcome::Completed,
                700,
                json!({"phase": "forward", "index": 0}),
            ),
            entry(
                3,
                REVERT,
                StepOutcome::Failed,
                900,
                json!({"phase": "forward", "index": 1, "interrupted": true}),
            ),
        ];
        // Retried at 00:00:05; read at 00:00:07.
        let t = timeline(
            &occ(State::Processing, "2026-01-01T00:00:05Z"),
            &rows,
            Timestamp(T0 + 7_000),
        )
        .unwrap();
        let got: Vec<_> = t
            .steps
            .iter()
            .map(|s| (s.name.as_str(), s.duration_ms, s.outcome))
            .collect();
        assert_eq!(
            got,
            [
                (APPLY, 600, TimelineOutcome::Completed),
                (REVERT, 200, TimelineOutcome::Interrupted),
                (REVERT, 2_000, TimelineOutcome::Running),
            ]
        );
        assert_eq!(t.steps[2].start, "2026-01-01T00:00:05.000Z");
        assert_eq!(t.steps[2].end, None);
    }
}
