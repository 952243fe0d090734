//! The fault and indicator sinks the lifecycle runner reports hooks' alarms and indicator
//! values to. The fault and indicator managers are built on the lifecycle manager (automatic
//! healing and scaling start operations on it), so the runner gets these handles first and
//! the composition root binds them once the managers exist.

use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use vnfm_assurance::{FaultManager, IndicatorManager};
use vnfm_driver_api::{DriverError, FaultId, FaultReport, FaultSink, IndicatorSink, Raised};
use vnfm_types::{DateTime, VnfInstanceId};

fn not_bound(what: &str) -> DriverError {
    DriverError::transient(format!("{what} is not started yet"))
}

/// A [`FaultSink`] bound to the fault manager once it is built.
#[derive(Clone, Default)]
pub(super) struct LateFaults(pub Arc<OnceLock<FaultManager>>);

#[async_trait]
impl FaultSink for LateFaults {
    async fn raise(&self, report: FaultReport) -> Result<Raised, DriverError> {
        match self.0.get() {
            Some(faults) => FaultSink::raise(faults, report).await,
            None => Err(not_bound("fault management")),
        }
    }

    async fn clear(
        &self,
        fault: &FaultId,
        at: Option<DateTime>,
    ) -> Result<Option<String>, DriverError> {
        match self.0.get() {
            Some(faults) => FaultSink::clear(faults, fault, at).await,
            None => Err(not_bound("fault management")),
        }
    }
}

/// An [`IndicatorSink`] bound to the indicator manager once it is built.
#[derive(Clone, Default)]
pub(super) struct LateIndicators(pub Arc<OnceLock<IndicatorManager>>);

#[async_trait]
impl IndicatorSink for LateIndicators {
    async fn set_indicator(
        &self,
        instance: &VnfInstanceId,
        indicator_id: &str,
        value: serde_json::Value,
    ) -> Result<bool, DriverError> {
        match self.0.get() {
            Some(indicators) => {
                indicators
                    .set_indicator(instance, indicator_id, value)
                    .await
            }
            None => Err(not_bound("indicator management")),
        }
    }
}
