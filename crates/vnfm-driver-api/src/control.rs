//! Deadlines and cancellation for a running step.
//!
//! The runner gives every driver call and hook call a [`RunControl`]: a deadline and a
//! [`CancellationFlag`] the runner raises when the operation occurrence is cancelled. Drivers
//! call [`RunControl::check`] between the calls they make to the infrastructure (and while
//! polling), so a cancelled or overdue step stops at the next safe point.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::DriverError;

/// A flag shared between the runner (which raises it) and a driver (which polls it).
/// Clones share the flag.
#[derive(Debug, Clone, Default)]
pub struct CancellationFlag(Arc<AtomicBool>);

impl CancellationFlag {
    /// A flag that is not raised.
    pub fn new() -> Self {
        Self::default()
    }

    /// Raises the flag (for every clone).
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether the flag has been raised.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// The deadline and cancellation flag of one step.
#[derive(Debug, Clone)]
pub struct RunControl {
    started: Instant,
    deadline: Instant,
    cancel: CancellationFlag,
}

impl RunControl {
    /// A control that expires `budget` from now and is cancelled through `cancel`.
    pub fn new(budget: Duration, cancel: CancellationFlag) -> Self {
        let started = Instant::now();
        // A budget too large to represent is as good as no deadline.
        let deadline = started
            .checked_add(budget)
            .unwrap_or_else(|| started + Duration::from_secs(100 * 365 * 24 * 3600));
        RunControl {
            started,
            deadline,
            cancel,
        }
    }

    /// A control with `budget` and a fresh flag (for tests and one-off calls).
    pub fn with_timeout(budget: Duration) -> Self {
        Self::new(budget, CancellationFlag::new())
    }

    /// When the step must have finished.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// The whole time budget of the step.
    pub fn budget(&self) -> Duration {
        self.deadline.saturating_duration_since(self.started)
    }

    /// Time left before the deadline (zero once it has passed).
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// The cancellation flag.
    pub fn cancellation(&self) -> &CancellationFlag {
        &self.cancel
    }

    /// Whether the occurrence has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// `Err(Cancelled)` when the flag is raised, `Err(Timeout)` when the deadline has passed,
    /// `Ok(())` otherwise. `what` names the work in progress, for the error message.
    pub fn check(&self, what: &str) -> Result<(), DriverError> {
        if self.is_cancelled() {
            return Err(DriverError::cancelled(what));
        }
        if Instant::now() >= self.deadline {
            return Err(DriverError::timeout(what, self.budget()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_reports_cancellation_before_timeout() {
        let flag = CancellationFlag::new();
        let ctl = RunControl::new(Duration::ZERO, flag.clone());
        assert!(matches!(
            ctl.check("scale"),
            Err(DriverError::Timeout { .. })
        ));
        flag.cancel();
        assert!(matches!(
            ctl.check("scale"),
            Err(DriverError::Cancelled { .. })
        ));
    }

    #[test]
    fn a_generous_budget_passes_and_huge_budgets_do_not_overflow() {
        let ctl = RunControl::with_timeout(Duration::from_secs(60));
        assert!(ctl.check("x").is_ok());
        assert!(ctl.remaining() > Duration::from_secs(50));
        let huge = RunControl::with_timeout(Duration::MAX);
        assert!(huge.check("x").is_ok());
    }
}
