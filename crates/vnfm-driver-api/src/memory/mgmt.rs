//! [`RecordingMgmtDriver`]: hooks that record their calls and answer as told.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use vnfm_types::{LcmOperationType, VnfLcmOpOccId};

use super::{lock, pause};
use crate::{DriverError, HookCall, HookOutcome, MgmtDriver};

/// One hook call a [`RecordingMgmtDriver`] received.
#[derive(Debug, Clone, PartialEq)]
pub struct HookRecord {
    /// The hook operation (e.g. `instantiate_end`).
    pub operation: String,
    /// The artifact name.
    pub artifact: String,
    /// The LCM operation.
    pub lcm_operation: LcmOperationType,
    /// The operation occurrence.
    pub op_occ_id: VnfLcmOpOccId,
    /// The `error_handling_data` the call carried.
    pub error_handling_data: serde_json::Value,
    /// The VNFD id of the [`HookCall::new_package`] the call carried.
    pub new_vnfd_id: Option<String>,
    /// The error kind when the call failed.
    pub error: Option<&'static str>,
}

#[derive(Default)]
struct HookState {
    calls: Vec<HookRecord>,
    outcomes: BTreeMap<String, HookOutcome>,
    fail_next: Vec<(String, DriverError)>,
    fail_on_call: BTreeMap<usize, DriverError>,
    /// What [`MgmtDriver::observe`] answers, by artifact name (unsupported for the others).
    observations: BTreeMap<String, HookOutcome>,
    /// The artifacts asked through [`MgmtDriver::observe`], in order.
    observed: Vec<String>,
}

/// A management driver that records hook calls and answers with configured outcomes
/// (no change by default).
#[derive(Default)]
pub struct RecordingMgmtDriver {
    delay: Duration,
    state: Mutex<HookState>,
}

impl std::fmt::Debug for RecordingMgmtDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordingMgmtDriver")
            .field("delay", &self.delay)
            .finish_non_exhaustive()
    }
}

impl RecordingMgmtDriver {
    /// A driver whose hooks succeed with no change.
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes every call take `delay` (cut short by cancellation or the deadline).
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Answers every successful call of hook `operation` with `outcome`.
    pub fn set_outcome(&self, operation: impl Into<String>, outcome: HookOutcome) {
        lock(&self.state).outcomes.insert(operation.into(), outcome);
    }

    /// Makes the next call of hook `operation` fail with `error`.
    pub fn fail_next(&self, operation: impl Into<String>, error: DriverError) {
        lock(&self.state).fail_next.push((operation.into(), error));
    }

    /// Makes the `n`-th call (1-based, counting every hook call) fail with `error`.
    pub fn fail_on_call(&self, n: usize, error: DriverError) {
        lock(&self.state).fail_on_call.insert(n, error);
    }

    /// Every call so far, in order.
    pub fn calls(&self) -> Vec<HookRecord> {
        lock(&self.state).calls.clone()
    }

    /// The hook operations called so far, in order.
    pub fn operations(&self) -> Vec<String> {
        lock(&self.state)
            .calls
            .iter()
            .map(|c| c.operation.clone())
            .collect()
    }
}

#[async_trait]
impl MgmtDriver for RecordingMgmtDriver {
    async fn call(&self, call: &HookCall) -> Result<HookOutcome, DriverError> {
        let index = {
            let mut st = lock(&self.state);
            st.calls.push(HookRecord {
                operation: call.operation.clone(),
                artifact: call.artifact.name.clone(),
                lcm_operation: call.lcm_operation,
                op_occ_id: call.op_occ_id.clone(),
                error_handling_data: call.error_handling_data.clone(),
                new_vnfd_id: call
                    .new_package
                    .as_ref()
                    .map(|p| p.vnfd.descriptor_id.clone()),
                error: None,
            });
            st.calls.len() - 1
        };
        let what = format!("hook {}", call.operation);
        let result = match pause(self.delay, &call.control, &what).await {
            Err(e) => Err(e),
            Ok(()) => {
                let mut st = lock(&self.state);
                if let Some(e) = st.fail_on_call.remove(&(index + 1)) {
                    Err(e)
                } else if let Some(pos) =
                    st.fail_next.iter().position(|(o, _)| *o == call.operation)
                {
                    Err(st.fail_next.remove(pos).1)
                } else {
                    Ok(st
                        .outcomes
                        .get(&call.operation)
                        .cloned()
                        .unwrap_or_default())
                }
            }
        };
        if let Err(e) = &result {
            lock(&self.state).calls[index].error = Some(e.kind());
        }
        result
    }

    async fn observe(&self, call: &crate::ObserveCall) -> Result<HookOutcome, DriverError> {
        let mut st = lock(&self.state);
        st.observed.push(call.artifact.name.clone());
        st.observations
            .get(&call.artifact.name)
            .cloned()
            .ok_or_else(|| DriverError::unsupported("recording", "observe"))
    }
}

impl RecordingMgmtDriver {
    /// Makes artifact `artifact` observe: [`MgmtDriver::observe`] answers `outcome` for it
    /// (`None`: it no longer observes).
    pub fn set_observation(&self, artifact: &str, outcome: Option<HookOutcome>) {
        let mut st = lock(&self.state);
        match outcome {
            Some(o) => st.observations.insert(artifact.to_owned(), o),
            None => st.observations.remove(artifact),
        };
    }

    /// The artifacts asked through [`MgmtDriver::observe`] so far, in order.
    pub fn observed(&self) -> Vec<String> {
        lock(&self.state).observed.clone()
    }
}
