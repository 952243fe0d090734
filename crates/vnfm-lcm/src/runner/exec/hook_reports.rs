//! What a hook reports besides the changes it asks for: faults of the instance, raised or
//! cleared as alarms through the [`FaultSink`](vnfm_driver_api::FaultSink), and VNF
//! indicator values, set through the [`IndicatorSink`](vnfm_driver_api::IndicatorSink).
//!
//! A report that cannot be delivered does not fail the operation (the hook did its work): it
//! becomes a warning of the occurrence, saying what was lost and why.

use vnfm_driver_api::{FaultId, FaultReport, HookOutcome};
use vnfm_types::{PerceivedSeverity, VnfInstanceId};

use crate::runner::Inner;

/// Delivers the alarms and indicator values of `out`, a hook's outcome for `instance`; the
/// warnings for what could not be delivered.
pub(crate) async fn deliver(
    inner: &Inner,
    instance: &VnfInstanceId,
    out: &HookOutcome,
) -> Vec<String> {
    let mut warnings = Vec::new();
    if !out.alarms.is_empty() {
        match &inner.faults {
            None => warnings.push(format!(
                "the hook reported {} alarm(s), but this VNFM has no fault management to raise \
                 them in",
                out.alarms.len()
            )),
            Some(faults) => {
                for alarm in &out.alarms {
                    let fault = FaultId {
                        instance_id: instance.clone(),
                        vnfc_instance_id: alarm.vnfc_instance_id.clone(),
                        fault_type: alarm.fault_type.clone(),
                        probable_cause: alarm.probable_cause.clone(),
                    };
                    let done = if alarm.severity == PerceivedSeverity::Cleared {
                        faults.clear(&fault, None).await.map(drop)
                    } else {
                        let mut report = FaultReport::new(fault, alarm.severity, alarm.event_type);
                        report.details = alarm.details.clone();
                        faults.raise(report).await.map(drop)
                    };
                    if let Err(e) = done {
                        warnings.push(format!(
                            "the hook's alarm {:?} could not be {}: {e}",
                            alarm.probable_cause,
                            if alarm.severity == PerceivedSeverity::Cleared {
                                "cleared"
                            } else {
                                "raised"
                            }
                        ));
                    }
                }
            }
        }
    }
    if !out.indicator_values.is_empty() {
        match &inner.indicators {
            None => warnings.push(format!(
                "the hook reported {} indicator value(s), but this VNFM keeps no indicators",
                out.indicator_values.len()
            )),
            Some(indicators) => {
                for (id, value) in &out.indicator_values {
                    if let Err(e) = indicators.set_indicator(instance, id, value.clone()).await {
                        warnings.push(format!(
                            "the hook's value of indicator {id} could not be set: {e}"
                        ));
                    }
                }
            }
        }
    }
    for w in &warnings {
        tracing::warn!(vnf_instance_id = %instance, "{w}");
    }
    warnings
}
