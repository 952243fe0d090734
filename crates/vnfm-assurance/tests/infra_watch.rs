//! The infrastructure watch on SQLite with the in-memory infrastructure driver: a VNFC whose
//! compute resource the driver reports in trouble gets one alarm (on its `vnfcInfo` id, with
//! the faulty resource), which heals it automatically when the instance asks for it and is
//! cleared once the driver no longer reports it; repeats change nothing; an instance held by
//! an operation, or whose driver cannot tell, keeps its alarms; a terminated instance's are
//! cleared. A plugin that observes raises and clears alarms between operations.

use crate::runner_support;

use std::sync::Arc;
use std::time::Duration;

use runner_support::*;
use serde_json::json;
use vnfm_assurance::FaultManager;
use vnfm_assurance::fm::infra_watch::FAULT_TYPE_PREFIX;
use vnfm_assurance::fm::{AutoHeal, AutoHealPolicy, InfraWatch, Swept};
use vnfm_driver_api::{DriverError, FixedAnswer, InfraOperation};
use vnfm_lcm::Keyring;
use vnfm_store::OpOccQuery;
use vnfm_types::{
    Alarm, FaultyResourceType, LcmOperationStateType, LcmOperationType, PerceivedSeverity,
    VnfInstanceId,
};

fn fault_manager(env: &Env, heal: bool) -> FaultManager {
    let keyring = Arc::new(Keyring::from_key_list(&Keyring::generate_key()).unwrap());
    let fm = FaultManager::new(env.store.clone(), keyring, Arc::new(FixedAnswer(204)));
    if heal {
        fm.with_auto_heal(AutoHeal::new(env.lcm.clone(), AutoHealPolicy::default()))
    } else {
        fm
    }
}

/// An instantiated hello VNF with `properties`; its id, its VNFC's `vnfcInfo` id and
/// `vnfcResourceInfo` id.
async fn instantiated(env: &Env, properties: serde_json::Value) -> (VnfInstanceId, String, String) {
    let inst = env.create(&hello_vnfd().descriptor_id).await;
    let op = env
        .lcm
        .instantiate(
            &inst.id,
            req(
                json!({"flavourId": "simple", "vimConnectionInfo": memory_vims(),
                       "vnfConfigurableProperties": properties}),
            ),
        )
        .await
        .unwrap();
    env.completed(op).await;
    let info = env.instance(&inst.id).await.instantiated_vnf_info.unwrap();
    let vnfc = &info.vnfc_info.unwrap()[0];
    (
        inst.id,
        vnfc.id.clone(),
        vnfc.vnfc_resource_info_id.clone().unwrap(),
    )
}

async fn open_alarms(env: &Env, id: &VnfInstanceId) -> Vec<Alarm> {
    env.store
        .open_alarms(Some(id))
        .await
        .unwrap()
        .into_iter()
        .map(|(r, _)| r.alarm)
        .collect()
}

fn swept(observed: usize, busy: usize, raised: usize, cleared: usize, failures: usize) -> Swept {
    Swept {
        observed,
        busy,
        raised,
        cleared,
        failures,
        plugin_answers: 0,
    }
}

/// The fault manager of an [`Env`] as the runner's fault sink, bound once the Env (and so its
/// store) exists.
#[derive(Default)]
struct LateFaults(std::sync::OnceLock<FaultManager>);

#[async_trait::async_trait]
impl vnfm_driver_api::FaultSink for LateFaults {
    async fn raise(
        &self,
        report: vnfm_driver_api::FaultReport,
    ) -> Result<vnfm_driver_api::Raised, DriverError> {
        vnfm_driver_api::FaultSink::raise(self.0.get().expect("bound"), report).await
    }
    async fn clear(
        &self,
        fault: &vnfm_driver_api::FaultId,
        at: Option<vnfm_types::DateTime>,
    ) -> Result<Option<String>, DriverError> {
        vnfm_driver_api::FaultSink::clear(self.0.get().expect("bound"), fault, at).await
    }
}

#[async_trait::async_trait]
impl vnfm_driver_api::IndicatorSink for LateFaults {
    async fn set_indicator(
        &self,
        _: &VnfInstanceId,
        _: &str,
        _: serde_json::Value,
    ) -> Result<bool, DriverError> {
        Err(DriverError::invalid_input("no indicators here"))
    }
}

fn plugin_alarm(severity: PerceivedSeverity) -> vnfm_driver_api::HookOutcome {
    vnfm_driver_api::HookOutcome {
        alarms: vec![vnfm_driver_api::HookAlarm {
            vnfc_instance_id: None,
            fault_type: Some("AppDown".into()),
            probable_cause: "the application does not answer".into(),
            severity,
            event_type: vnfm_types::EventType::ProcessingErrorAlarm,
            details: vec![],
        }],
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_that_observes_raises_and_clears_alarms_between_operations() {
    let sinks = Arc::new(LateFaults::default());
    let env = Env::builder()
        .hook_sinks(sinks.clone(), sinks.clone())
        .build()
        .await;
    let fm = fault_manager(&env, false);
    let _ = sinks.0.set(fm.clone());
    let watch = InfraWatch::new(env.lcm.clone(), fm, Duration::from_secs(10));
    let inst = env.create("vnfd-hooks").await;
    let op = env
        .lcm
        .instantiate(
            &inst.id,
            req(json!({"flavourId": "simple", "vimConnectionInfo": memory_vims()})),
        )
        .await
        .unwrap();
    env.completed(op).await;
    let id = inst.id;
    // The hooks' artifact does not observe yet: nothing to apply, nothing failed.
    let s = watch.sweep().await.unwrap();
    assert_eq!((s.plugin_answers, s.failures), (0, 0), "{s:?}");

    env.mgmt
        .set_observation("mgmt", Some(plugin_alarm(PerceivedSeverity::Major)));
    let s = watch.sweep().await.unwrap();
    assert_eq!((s.plugin_answers, s.failures), (1, 0), "{s:?}");
    let open = open_alarms(&env, &id).await;
    assert_eq!(open.len(), 1, "{open:?}");
    assert_eq!(open[0].fault_type.as_deref(), Some("AppDown"));
    assert_eq!(open[0].perceived_severity, PerceivedSeverity::Major);

    env.mgmt
        .set_observation("mgmt", Some(plugin_alarm(PerceivedSeverity::Cleared)));
    let s = watch.sweep().await.unwrap();
    assert_eq!(s.plugin_answers, 1);
    assert!(open_alarms(&env, &id).await.is_empty());
    // One question per artifact and sweep, though the VNFD binds it to many hooks.
    assert_eq!(env.mgmt.observed(), ["mgmt", "mgmt", "mgmt"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vnfc_in_trouble_raises_an_alarm_that_heals_it_and_is_cleared_after() {
    let env = Env::with(vec![hello_vnfd()]).await;
    let fm = fault_manager(&env, true);
    let watch = InfraWatch::new(env.lcm.clone(), fm.clone(), Duration::from_secs(10));
    let (id, vnfc, resource) = instantiated(&env, json!({"isAutohealEnabled": true})).await;
    assert_eq!(watch.sweep().await.unwrap(), swept(1, 0, 0, 0, 0));
    let compute = env.infra.inventory(&id).unwrap().vnfcs[0]
        .compute_id
        .clone();

    assert!(
        env.infra
            .break_vnfc(&id, &resource, "ERROR", PerceivedSeverity::Critical)
    );
    assert_eq!(watch.sweep().await.unwrap(), swept(1, 0, 1, 0, 0));
    let alarms = open_alarms(&env, &id).await;
    assert_eq!(alarms.len(), 1, "{alarms:?}");
    let a = &alarms[0];
    assert_eq!(a.vnfc_instance_ids.as_deref(), Some(&[vnfc.clone()][..]));
    assert_eq!(a.probable_cause, "ERROR");
    assert_eq!(a.perceived_severity, PerceivedSeverity::Critical);
    assert_eq!(
        a.fault_type.as_deref(),
        Some(format!("{FAULT_TYPE_PREFIX}memory").as_str())
    );
    let faulty = a.root_cause_faulty_resource.as_ref().unwrap();
    assert_eq!(faulty.faulty_resource.resource_id, compute);
    assert_eq!(faulty.faulty_resource_type, FaultyResourceType::Compute);

    // The alarm started an automatic HEAL of the VNFC, which moves it to a new compute
    // resource.
    let deadline = tokio::time::Instant::now() + WAIT;
    let heal = loop {
        let ops = env
            .lcm
            .list_op_occs(&OpOccQuery {
                vnf_instance_id: Some(id.clone()),
                operation: Some(LcmOperationType::Heal),
                ..Default::default()
            })
            .await
            .unwrap()
            .items;
        if let Some(op) = ops
            .into_iter()
            .find(|o| o.operation_state == LcmOperationStateType::Completed)
        {
            break op;
        }
        assert!(tokio::time::Instant::now() < deadline, "no completed heal");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(heal.is_automatic_invocation);
    assert_ne!(
        env.infra.inventory(&id).unwrap().vnfcs[0].compute_id,
        compute
    );

    // The new compute resource is fine: the alarm is cleared, once.
    assert_eq!(watch.sweep().await.unwrap(), swept(1, 0, 0, 1, 0));
    assert!(open_alarms(&env, &id).await.is_empty());
    let (cleared, _) = fm.get(&a.id).await.unwrap();
    assert_eq!(cleared.perceived_severity, PerceivedSeverity::Cleared);
    assert!(cleared.alarm_cleared_time.is_some());
    assert_eq!(watch.sweep().await.unwrap(), swept(1, 0, 0, 0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alarms_stay_while_unknown_or_held_and_go_with_the_instance() {
    let env = Env::with(vec![hello_vnfd()]).await;
    let fm = fault_manager(&env, false);
    let watch = InfraWatch::new(env.lcm.clone(), fm.clone(), Duration::from_secs(10));
    let (id, _, resource) = instantiated(&env, json!({})).await;
    env.infra
        .break_vnfc(&id, &resource, "NotReady", PerceivedSeverity::Minor);
    assert_eq!(watch.sweep().await.unwrap(), swept(1, 0, 1, 0, 0));
    // The same report again writes nothing.
    assert_eq!(watch.sweep().await.unwrap(), swept(1, 0, 0, 0, 0));
    assert_eq!(open_alarms(&env, &id).await.len(), 1);

    // The VIM cannot be reached: nobody knows whether the condition ended.
    env.infra.repair(&id);
    env.infra
        .fail_observations(Some(DriverError::transient("VIM unreachable")));
    assert_eq!(watch.sweep().await.unwrap(), swept(1, 0, 0, 0, 1));
    assert_eq!(open_alarms(&env, &id).await.len(), 1);
    env.infra.fail_observations(None);

    // An operation left in FAILED_TEMP holds the instance: left alone.
    env.infra.fail_next(
        InfraOperation::Operate,
        DriverError::permanent("power controller refused"),
    );
    let op = env
        .lcm
        .operate(&id, req(json!({"changeStateTo": "STOPPED"})))
        .await
        .unwrap();
    let op = env.done(&op).await;
    assert_eq!(op.operation_state, LcmOperationStateType::FailedTemp);
    assert_eq!(watch.sweep().await.unwrap(), swept(0, 1, 0, 0, 0));
    assert_eq!(open_alarms(&env, &id).await.len(), 1);

    // Failed for good, the instance is observed again: the repaired VNFC clears its alarm.
    let op = env.lcm.fail(&op.id).await.unwrap();
    assert_eq!(op.operation_state, LcmOperationStateType::Failed);
    assert_eq!(watch.sweep().await.unwrap(), swept(1, 0, 0, 1, 0));
    assert!(open_alarms(&env, &id).await.is_empty());
    env.infra
        .break_vnfc(&id, &resource, "NotReady", PerceivedSeverity::Minor);
    assert_eq!(watch.sweep().await.unwrap(), swept(1, 0, 1, 0, 0));

    // Terminated, the instance's alarms go.
    let op = env
        .lcm
        .terminate(&id, req(json!({"terminationType": "FORCEFUL"})))
        .await
        .unwrap();
    env.completed(op).await;
    assert_eq!(watch.sweep().await.unwrap(), swept(0, 0, 0, 1, 0));
    assert!(open_alarms(&env, &id).await.is_empty());
}
