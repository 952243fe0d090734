//! Alarms and VNF indicator values a hook reports: the runner raises and clears the alarms
//! through the fault sink and sets the values through the indicator sink once the hook
//! succeeded; what a sink refuses, or a VNFM without the sink, becomes a warning of the
//! occurrence, and the operation completes.

use crate::runner_support;

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use runner_support::*;
use serde_json::json;
use vnfm_driver_api::{
    DriverError, FaultId, FaultReport, FaultSink, HookAlarm, HookOutcome, IndicatorSink, Raised,
};
use vnfm_types::{DateTime, EventType, PerceivedSeverity, VnfInstanceId};

#[derive(Default)]
struct Recorded {
    raised: Mutex<Vec<FaultReport>>,
    cleared: Mutex<Vec<FaultId>>,
    values: Mutex<Vec<(String, String, serde_json::Value)>>,
}

#[async_trait]
impl FaultSink for Recorded {
    async fn raise(&self, report: FaultReport) -> Result<Raised, DriverError> {
        self.raised.lock().unwrap().push(report);
        Ok(Raised::New("a1".into()))
    }
    async fn clear(
        &self,
        fault: &FaultId,
        _: Option<DateTime>,
    ) -> Result<Option<String>, DriverError> {
        self.cleared.lock().unwrap().push(fault.clone());
        Ok(None)
    }
}

#[async_trait]
impl IndicatorSink for Recorded {
    async fn set_indicator(
        &self,
        instance: &VnfInstanceId,
        indicator_id: &str,
        value: serde_json::Value,
    ) -> Result<bool, DriverError> {
        if indicator_id != "load" {
            return Err(DriverError::invalid_input(format!(
                "the VNFD declares no indicator {indicator_id:?}"
            )));
        }
        self.values
            .lock()
            .unwrap()
            .push((instance.to_string(), indicator_id.to_owned(), value));
        Ok(true)
    }
}

fn outcome() -> HookOutcome {
    let alarm = |severity, cause: &str| HookAlarm {
        vnfc_instance_id: Some("VDU1-0".into()),
        fault_type: Some("DiskFull".into()),
        probable_cause: cause.into(),
        severity,
        event_type: EventType::ProcessingErrorAlarm,
        details: vec!["/var at 97%".into()],
    };
    HookOutcome {
        alarms: vec![
            alarm(PerceivedSeverity::Major, "disk full"),
            alarm(PerceivedSeverity::Cleared, "disk slow"),
        ],
        indicator_values: [("load".to_owned(), json!(5)), ("nope".to_owned(), json!(1))].into(),
        ..Default::default()
    }
}

async fn instantiate(env: &Env) -> (VnfInstanceId, vnfm_types::VnfLcmOpOcc) {
    env.mgmt.set_outcome("instantiate_end", outcome());
    let inst = env.create("vnfd-hooks").await;
    let op = env
        .lcm
        .instantiate(
            &inst.id,
            req(json!({"flavourId": "simple", "vimConnectionInfo": memory_vims()})),
        )
        .await
        .unwrap();
    (inst.id, env.completed(op).await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hooks_alarms_and_indicator_values_reach_the_sinks() {
    let sinks = Arc::new(Recorded::default());
    let env = Env::builder()
        .hook_sinks(sinks.clone(), sinks.clone())
        .build()
        .await;
    let (id, occ) = instantiate(&env).await;

    let raised = sinks.raised.lock().unwrap().clone();
    assert_eq!(raised.len(), 1, "{raised:?}");
    assert_eq!(raised[0].fault.instance_id, id);
    assert_eq!(raised[0].fault.vnfc_instance_id.as_deref(), Some("VDU1-0"));
    assert_eq!(raised[0].fault.fault_type.as_deref(), Some("DiskFull"));
    assert_eq!(raised[0].severity, PerceivedSeverity::Major);
    assert_eq!(raised[0].details, ["/var at 97%"]);
    let cleared = sinks.cleared.lock().unwrap().clone();
    assert_eq!(cleared.len(), 1);
    assert_eq!(cleared[0].probable_cause, "disk slow");
    assert_eq!(
        *sinks.values.lock().unwrap(),
        [(id.to_string(), "load".to_owned(), json!(5))]
    );
    // The refused value is a warning; the operation completed.
    let warnings = occ.warnings.unwrap_or_default();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("indicator nope") && warnings[0].contains("declares no indicator"),
        "{warnings:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_sinks_the_reports_become_warnings() {
    let env = Env::builder().build().await;
    let (_, occ) = instantiate(&env).await;
    let warnings = occ.warnings.unwrap_or_default();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("2 alarm(s)") && w.contains("no fault management")),
        "{warnings:?}"
    );
    assert!(
        warnings.iter().any(|w| w.contains("2 indicator value(s)")),
        "{warnings:?}"
    );
}
