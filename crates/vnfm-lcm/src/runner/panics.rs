//! Panics in steps, and steps that keep interrupting their runner.
//!
//! A driver or hook that panics must not leave its occurrence `PROCESSING` with a live lease:
//! [`caught`] turns the panic into a failed step (`FAILED_TEMP`, with the step and the panic
//! message in the error), and a panic in the runner's own code ends the run the same way
//! (see `Run::spawn`). A step that takes the whole process down every time (an abort, the
//! kernel's OOM killer) cannot be caught; recovery counts how often it resumed the same step
//! ([`note_resume`]) and, after [`LcmConfig::max_resume_attempts`], leaves the occurrence
//! `FAILED_TEMP` instead of running the step once more.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;

use futures_util::FutureExt;
use serde::{Deserialize, Serialize};
use vnfm_driver_api::DriverError;
use vnfm_types::VnfLcmOpOccId;

#[cfg(doc)]
use super::LcmConfig;
use super::journal::Phase;
use super::{Inner, store_err};
use crate::error::LcmError;

/// Op-occ data key of the resume count ([`ResumeCount`]).
pub(crate) const RESUME_KEY: &str = "recoveryResumes";

/// The text of a panic payload (`panic!` with a message gives a `&str` or a `String`).
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_owned()
    }
}

/// `fut` with a panic while it is polled turned into a permanent [`DriverError`] with the
/// panic message (logged with `step`).
pub(crate) fn caught<T>(
    step: &str,
    fut: impl Future<Output = Result<T, DriverError>> + Send + 'static,
) -> impl Future<Output = Result<T, DriverError>> + Send + 'static {
    let step = step.to_owned();
    // The driver's state is not used again after the panic except through its own calls,
    // which the drivers guard with their own (poison-tolerant) locks.
    AssertUnwindSafe(fut).catch_unwind().map(move |r| {
        r.unwrap_or_else(|payload| {
            let msg = panic_message(&*payload);
            tracing::error!(step = %step, panic = %msg, "step panicked");
            // The runner's error names the step already.
            Err(DriverError::permanent(format!(
                "the driver panicked: {msg}"
            )))
        })
    })
}

/// How often recovery resumed one step of an occurrence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ResumeCount {
    /// The phase of the step (`None`: the occurrence had not started).
    pub phase: Option<Phase>,
    /// The step's index in its plan.
    pub index: usize,
    /// Resumes of that step so far.
    pub count: u32,
}

/// Records that recovery is about to resume `phase` at step `index`, and returns the count
/// including this resume, or `None` when the step was already resumed
/// [`LcmConfig::max_resume_attempts`] times (the occurrence is to go to `FAILED_TEMP`).
pub(crate) async fn note_resume(
    inner: &Inner,
    id: &VnfLcmOpOccId,
    phase: Option<Phase>,
    index: usize,
) -> Result<Option<u32>, LcmError> {
    let stored = inner
        .store
        .get_op_occ_data(id, RESUME_KEY)
        .await
        .map_err(store_err)?
        .and_then(|v| serde_json::from_value::<ResumeCount>(v).ok())
        .filter(|c| c.phase == phase && c.index == index);
    let count = stored.map_or(0, |c| c.count) + 1;
    if count > inner.config.max_resume_attempts {
        return Ok(None);
    }
    let row = ResumeCount {
        phase,
        index,
        count,
    };
    let value = serde_json::to_value(row).map_err(|e| {
        LcmError::inconsistent(format!(
            "the resume count of operation occurrence {id} does not encode: {e}"
        ))
    })?;
    inner
        .store
        .put_op_occ_data(id, RESUME_KEY, &value)
        .await
        .map_err(store_err)?;
    Ok(Some(count))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panic_messages_are_read_from_str_and_string_payloads() {
        let p = std::panic::catch_unwind(|| panic!("boom {}", 7)).unwrap_err();
        assert_eq!(panic_message(&*p), "boom 7");
        let p = std::panic::catch_unwind(|| std::panic::panic_any("plain")).unwrap_err();
        assert_eq!(panic_message(&*p), "plain");
        let p = std::panic::catch_unwind(|| std::panic::panic_any(5_u8)).unwrap_err();
        assert_eq!(panic_message(&*p), "a panic without a message");
    }
}
