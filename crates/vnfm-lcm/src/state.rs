//! The operation-occurrence state machine (ETSI SOL003 v3.3.1 clause 5.6.2.2, figure 5.6.2.2-1).
//!
//! ```text
//!            Begin             Succeeded
//! STARTING ───────▶ PROCESSING ─────────▶ COMPLETED
//!    │  │              │    ▲
//!    │  │   StepFailed │    │ Retry
//!    │  │   Cancelled  ▼    │
//!    │  └──────────▶ FAILED_TEMP ── Fail ──▶ FAILED
//!    │   StepFailed   │    ▲
//!    │       Rollback │    │ StepFailed, Cancelled
//!    │                ▼    │
//!    │            ROLLING_BACK ── RolledBack ──▶ ROLLED_BACK
//!    └──────── GrantRejected, Cancelled ────────────▲
//! ```
//!
//! [`transition`] is the whole machine: a lookup in one table of `(from, event) -> to` rows.
//! Cancellation is two-step: [`Event::CancelRequested`] is accepted in STARTING, PROCESSING and
//! ROLLING_BACK and leaves the state as it is (the occurrence becomes "cancel pending"); the
//! runner then reports [`Event::Cancelled`] when the cancellation takes effect (GRACEFUL: after
//! the current step; FORCEFUL: at once). A cancelled STARTING occurrence has done nothing, so it
//! ends ROLLED_BACK; a cancelled PROCESSING or ROLLING_BACK one ends FAILED_TEMP, from where the
//! operator retries, rolls back or fails it (as the ETSI conformance suite expects, tests 5.4.20).

use vnfm_types::LcmOperationStateType as State;

/// What happened to an operation occurrence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Event {
    /// Preconditions (and the grant) are satisfied: the runner starts executing steps.
    Begin,
    /// The NFVO rejected the grant: nothing was done.
    GrantRejected,
    /// Every step finished.
    Succeeded,
    /// A step failed (or the runner died and recovery gave up on the step).
    StepFailed,
    /// The operator asked to retry a failed occurrence.
    Retry,
    /// The operator asked to roll back a failed occurrence.
    Rollback,
    /// Every rollback step finished.
    RolledBack,
    /// The operator declared a failed occurrence finally failed.
    Fail,
    /// The operator asked to cancel a running occurrence.
    CancelRequested,
    /// The requested cancellation took effect.
    Cancelled,
}

impl Event {
    /// What the event is, in the words an operator uses (the task resource names for the
    /// operator's own requests).
    pub fn action(self) -> &'static str {
        match self {
            Event::Begin => "starting the operation",
            Event::GrantRejected => "a rejected grant",
            Event::Succeeded => "completing the operation",
            Event::StepFailed => "failing a step",
            Event::Retry => "retry",
            Event::Rollback => "rollback",
            Event::RolledBack => "completing the rollback",
            Event::Fail => "fail",
            Event::CancelRequested => "cancel",
            Event::Cancelled => "cancelling",
        }
    }

    /// Every event, for exhaustive tests and documentation.
    pub const ALL: [Event; 10] = [
        Event::Begin,
        Event::GrantRejected,
        Event::Succeeded,
        Event::StepFailed,
        Event::Retry,
        Event::Rollback,
        Event::RolledBack,
        Event::Fail,
        Event::CancelRequested,
        Event::Cancelled,
    ];
}

/// Every state, for exhaustive tests.
pub const ALL_STATES: [State; 7] = [
    State::Starting,
    State::Processing,
    State::Completed,
    State::FailedTemp,
    State::Failed,
    State::RollingBack,
    State::RolledBack,
];

/// The machine: `(from, event, to)`. Pairs that are not listed are refused.
const TRANSITIONS: &[(State, Event, State)] = &[
    (State::Starting, Event::Begin, State::Processing),
    (State::Starting, Event::GrantRejected, State::RolledBack),
    (State::Starting, Event::StepFailed, State::FailedTemp),
    (State::Starting, Event::CancelRequested, State::Starting),
    (State::Starting, Event::Cancelled, State::RolledBack),
    (State::Processing, Event::Succeeded, State::Completed),
    (State::Processing, Event::StepFailed, State::FailedTemp),
    (State::Processing, Event::CancelRequested, State::Processing),
    (State::Processing, Event::Cancelled, State::FailedTemp),
    (State::FailedTemp, Event::Retry, State::Processing),
    (State::FailedTemp, Event::Rollback, State::RollingBack),
    (State::FailedTemp, Event::Fail, State::Failed),
    (State::RollingBack, Event::RolledBack, State::RolledBack),
    (State::RollingBack, Event::StepFailed, State::FailedTemp),
    (
        State::RollingBack,
        Event::CancelRequested,
        State::RollingBack,
    ),
    (State::RollingBack, Event::Cancelled, State::FailedTemp),
];

/// An event that is not allowed in the current state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "{} is not allowed while the operation occurrence is {}{}",
    event.action(),
    state_name(*from),
    hint(*from, *event)
)]
pub struct InvalidTransition {
    /// The state the occurrence is in.
    pub from: State,
    /// The refused event.
    pub event: Event,
}

/// The state's SOL003 name (`FAILED_TEMP`).
pub(crate) fn state_name(state: State) -> String {
    serde_json::to_value(state)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{state:?}"))
}

fn hint(from: State, event: Event) -> &'static str {
    match event {
        Event::Retry | Event::Rollback | Event::Fail => {
            "; retry, rollback and fail apply only to an occurrence in FAILED_TEMP"
        }
        Event::CancelRequested if from.is_final() => "; the operation has already ended",
        Event::CancelRequested => "; cancel applies only to STARTING, PROCESSING or ROLLING_BACK",
        _ => "",
    }
}

/// The state reached from `from` on `event`, or why the event is refused.
pub fn transition(from: State, event: Event) -> Result<State, InvalidTransition> {
    TRANSITIONS
        .iter()
        .find(|(f, e, _)| *f == from && *e == event)
        .map(|(_, _, to)| *to)
        .ok_or(InvalidTransition { from, event })
}

/// True while an occurrence holds its VNF instance: no other operation may start on the
/// instance until it reaches a final state (FAILED_TEMP holds it too: it awaits retry, rollback
/// or fail).
pub fn holds_instance(state: State) -> bool {
    !state.is_final()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The expected outcome of every (state, event) pair, written out as a matrix so that a change
    /// to the table must be mirrored here deliberately. Columns follow [`Event::ALL`].
    #[test]
    fn every_state_event_pair_matches_the_spec_matrix() {
        use State::*;
        let x = None;
        let expected: [(State, [Option<State>; 10]); 7] = [
            //          Begin             GrantRej          Succeeded        StepFailed        Retry             Rollback           RolledBack        Fail          CancelReq          Cancelled
            (
                Starting,
                [
                    Some(Processing),
                    Some(RolledBack),
                    x,
                    Some(FailedTemp),
                    x,
                    x,
                    x,
                    x,
                    Some(Starting),
                    Some(RolledBack),
                ],
            ),
            (
                Processing,
                [
                    x,
                    x,
                    Some(Completed),
                    Some(FailedTemp),
                    x,
                    x,
                    x,
                    x,
                    Some(Processing),
                    Some(FailedTemp),
                ],
            ),
            (Completed, [x, x, x, x, x, x, x, x, x, x]),
            (
                FailedTemp,
                [
                    x,
                    x,
                    x,
                    x,
                    Some(Processing),
                    Some(RollingBack),
                    x,
                    Some(Failed),
                    x,
                    x,
                ],
            ),
            (Failed, [x, x, x, x, x, x, x, x, x, x]),
            (
                RollingBack,
                [
                    x,
                    x,
                    x,
                    Some(FailedTemp),
                    x,
                    x,
                    Some(RolledBack),
                    x,
                    Some(RollingBack),
                    Some(FailedTemp),
                ],
            ),
            (RolledBack, [x, x, x, x, x, x, x, x, x, x]),
        ];
        for (from, row) in expected {
            for (event, want) in Event::ALL.into_iter().zip(row) {
                let got = transition(from, event).ok();
                assert_eq!(got, want, "{from:?} on {event:?}");
            }
        }
        assert_eq!(expected.len(), ALL_STATES.len());
    }

    #[test]
    fn final_states_accept_no_event() {
        for state in ALL_STATES.into_iter().filter(|s| s.is_final()) {
            for event in Event::ALL {
                assert!(
                    transition(state, event).is_err(),
                    "{state:?} accepted {event:?}"
                );
            }
            assert!(!holds_instance(state));
        }
    }

    #[test]
    fn non_final_states_hold_the_instance_and_can_reach_a_final_state() {
        for state in ALL_STATES.into_iter().filter(|s| !s.is_final()) {
            assert!(holds_instance(state));
            // Breadth-first search over the table: no state may be a dead end.
            let mut frontier = vec![state];
            let mut seen = vec![state];
            let mut reaches_final = false;
            while let Some(s) = frontier.pop() {
                for event in Event::ALL {
                    if let Ok(next) = transition(s, event) {
                        reaches_final |= next.is_final();
                        if !seen.contains(&next) {
                            seen.push(next);
                            frontier.push(next);
                        }
                    }
                }
            }
            assert!(reaches_final, "{state:?} cannot reach a final state");
        }
    }

    #[test]
    fn refusals_explain_what_is_allowed() {
        let e = transition(State::Processing, Event::Retry).unwrap_err();
        assert_eq!(
            e.to_string(),
            "retry is not allowed while the operation occurrence is PROCESSING; retry, rollback and fail apply only to an occurrence in FAILED_TEMP"
        );
        // The SOL003 names, never the enum's.
        let e = transition(State::RolledBack, Event::CancelRequested).unwrap_err();
        assert_eq!(
            e.to_string(),
            "cancel is not allowed while the operation occurrence is ROLLED_BACK; the operation has already ended"
        );
        let e = transition(State::Completed, Event::CancelRequested).unwrap_err();
        assert!(
            e.to_string().ends_with("the operation has already ended"),
            "{e}"
        );
    }
}
