//! Automatic healing through the fault manager, on SQLite with the in-memory infrastructure
//! driver: an alarm on a VNFC of an instance with `isAutohealEnabled` starts a HEAL of that
//! VNFC marked `isAutomaticInvocation`; the cooldown, the rate limit, the severity floor, an
//! instance without the switch and an instance held by another operation start none.

use crate::runner_support;

use std::sync::Arc;
use std::time::Duration;

use runner_support::*;
use serde_json::json;
use vnfm_assurance::FaultManager;
use vnfm_assurance::fm::{AutoHeal, AutoHealPolicy, AutomaticOutcome, Bounds};
use vnfm_driver_api::FixedAnswer;
use vnfm_driver_api::fault::{FaultId, FaultReport};
use vnfm_lcm::Keyring;
use vnfm_store::OpOccQuery;
use vnfm_types::{
    EventType, LcmOperationStateType, LcmOperationType, PerceivedSeverity, VnfInstanceId,
    VnfLcmOpOcc,
};

fn policy(cooldown: Duration, max_in_window: usize) -> AutoHealPolicy {
    AutoHealPolicy {
        bounds: Bounds {
            cooldown,
            max_in_window,
            window: Duration::from_secs(3600),
        },
        ..AutoHealPolicy::default()
    }
}

fn fault_manager(env: &Env, policy: AutoHealPolicy) -> FaultManager {
    let keyring = Arc::new(Keyring::from_key_list(&Keyring::generate_key()).unwrap());
    FaultManager::new(env.store.clone(), keyring, Arc::new(FixedAnswer(204)))
        .with_auto_heal(AutoHeal::new(env.lcm.clone(), policy))
}

/// An instantiated hello VNF (one `web` VNFC); `properties` are its instantiate request's
/// `vnfConfigurableProperties`, `additional` its `additionalParams`. Returns the instance id
/// and its VNFC's `vnfcInfo` id.
async fn instantiated(
    env: &Env,
    properties: serde_json::Value,
    additional: serde_json::Value,
) -> (VnfInstanceId, String) {
    let inst = env.create(&hello_vnfd().descriptor_id).await;
    let op = env
        .lcm
        .instantiate(
            &inst.id,
            req(
                json!({"flavourId": "simple", "vimConnectionInfo": memory_vims(),
                       "vnfConfigurableProperties": properties,
                       "additionalParams": additional}),
            ),
        )
        .await
        .unwrap();
    env.completed(op).await;
    let i = env.instance(&inst.id).await;
    let vnfc = i.instantiated_vnf_info.unwrap().vnfc_info.unwrap()[0]
        .id
        .clone();
    (inst.id, vnfc)
}

fn report(
    instance: &VnfInstanceId,
    vnfc: &str,
    cause: &str,
    sev: PerceivedSeverity,
) -> FaultReport {
    FaultReport::new(
        FaultId {
            instance_id: instance.clone(),
            vnfc_instance_id: Some(vnfc.to_owned()),
            fault_type: Some("VnfcDown".into()),
            probable_cause: cause.into(),
        },
        sev,
        EventType::EquipmentAlarm,
    )
}

/// The HEAL occurrences of `instance`, oldest first.
async fn heals(env: &Env, instance: &VnfInstanceId) -> Vec<VnfLcmOpOcc> {
    let mut ops: Vec<_> = env
        .lcm
        .list_op_occs(&OpOccQuery {
            vnf_instance_id: Some(instance.clone()),
            ..Default::default()
        })
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|o| o.operation == LcmOperationType::Heal)
        .collect();
    ops.sort_by(|a, b| a.start_time.cmp(&b.start_time));
    ops
}

/// Waits until `instance` has `n` HEAL occurrences, all at rest.
async fn wait_heals(env: &Env, instance: &VnfInstanceId, n: usize) -> Vec<VnfLcmOpOcc> {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let ops = heals(env, instance).await;
        if ops.len() >= n
            && ops
                .iter()
                .all(|o| vnfm_lcm::runner::is_at_rest(o.operation_state))
        {
            assert_eq!(ops.len(), n, "more heals than expected: {ops:?}");
            return ops;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{n} heal(s) expected, found {ops:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_alarm_on_a_vnfc_heals_it_automatically_once_per_cooldown() {
    let env = Env::with(vec![hello_vnfd()]).await;
    let fm = fault_manager(&env, policy(Duration::from_secs(3600), 5));
    let (id, vnfc) = instantiated(&env, json!({"isAutohealEnabled": true}), json!({})).await;

    let (alarm, _) = fm
        .raise(&report(
            &id,
            &vnfc,
            "VNFC down",
            PerceivedSeverity::Critical,
        ))
        .await
        .unwrap();
    let ops = wait_heals(&env, &id, 1).await;
    let heal = env.completed(ops[0].clone()).await;
    assert!(heal.is_automatic_invocation, "{heal:?}");
    let params = heal.operation_params.clone().unwrap();
    assert_eq!(params["vnfcInstanceId"], json!([vnfc]));
    assert!(
        params["cause"].as_str().unwrap().contains(&alarm.id),
        "the cause names the alarm: {params:?}"
    );
    // The STARTING notification says the operation was automatic.
    let starting = env
        .outbox()
        .await
        .into_iter()
        .find(|n| n["vnfLcmOpOccId"] == heal.id.as_str() && n["operationState"] == "STARTING")
        .expect("a STARTING notification of the heal");
    assert_eq!(starting["isAutomaticInvocation"], true);
    let healed = heal.resource_changes.unwrap().affected_vnfcs.unwrap();
    assert_eq!(healed.len(), 1);

    // The same alarm repeated heals nothing more; a new alarm within the cooldown neither.
    fm.raise(&report(
        &id,
        &vnfc,
        "VNFC down",
        PerceivedSeverity::Critical,
    ))
    .await
    .unwrap();
    fm.raise(&report(&id, &vnfc, "disk failed", PerceivedSeverity::Major))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    wait_heals(&env, &id, 1).await;
    let auto = fm.auto_heal().unwrap();
    let other = fm
        .raise(&report(&id, &vnfc, "fan failed", PerceivedSeverity::Major))
        .await
        .unwrap()
        .0;
    assert!(matches!(
        auto.consider(&other).await,
        AutomaticOutcome::CoolingDown { .. }
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rate_limit_and_the_severity_floor_bound_automatic_heals() {
    let env = Env::with(vec![hello_vnfd()]).await;
    let fm = fault_manager(&env, policy(Duration::ZERO, 2));
    // Tacker's name in additionalParams turns it on too.
    let (id, vnfc) = instantiated(&env, json!({}), json!({"isAutohealEnabled": true})).await;
    let props = env.instance(&id).await.vnf_configurable_properties.unwrap();
    assert_eq!(props["isAutohealEnabled"], true);

    // A MINOR alarm is below the default floor (MAJOR).
    let (minor, _) = fm
        .raise(&report(&id, &vnfc, "latency", PerceivedSeverity::Minor))
        .await
        .unwrap();
    let auto = fm.auto_heal().unwrap();
    assert_eq!(auto.consider(&minor).await, AutomaticOutcome::BelowSeverity);
    // Escalated to MAJOR, the same alarm heals.
    fm.raise(&report(&id, &vnfc, "latency", PerceivedSeverity::Major))
        .await
        .unwrap();
    wait_heals(&env, &id, 1).await;
    // Two heals per window at most.
    fm.raise(&report(&id, &vnfc, "crash 1", PerceivedSeverity::Critical))
        .await
        .unwrap();
    wait_heals(&env, &id, 2).await;
    let (third, _) = fm
        .raise(&report(&id, &vnfc, "crash 2", PerceivedSeverity::Critical))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let ops = wait_heals(&env, &id, 2).await;
    assert!(ops.iter().all(
        |o| o.is_automatic_invocation && o.operation_state == LcmOperationStateType::Completed
    ));
    assert!(matches!(
        auto.consider(&third).await,
        AutomaticOutcome::RateLimited { max: 2, .. }
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_automatic_heal_without_the_switch_for_unknown_vnfcs_or_while_the_instance_is_held() {
    let env = Env::builder()
        .vnfd(hello_vnfd())
        .infra_delay(Duration::from_millis(600))
        .build()
        .await;
    let fm = fault_manager(&env, policy(Duration::ZERO, 100));
    let auto = fm.auto_heal().unwrap().clone();

    // No switch: nothing.
    let (off, vnfc_off) = instantiated(&env, json!({}), json!({})).await;
    let (alarm, _) = fm
        .raise(&report(
            &off,
            &vnfc_off,
            "down",
            PerceivedSeverity::Critical,
        ))
        .await
        .unwrap();
    assert_eq!(
        auto.consider(&alarm).await,
        AutomaticOutcome::Disabled {
            switch: "isAutohealEnabled"
        }
    );

    // A VNFC the instance does not have: refused, nothing started.
    let (on, vnfc) = instantiated(&env, json!({"isAutohealEnabled": true}), json!({})).await;
    let (ghost, _) = fm
        .raise(&report(
            &on,
            "no-such-vnfc",
            "down",
            PerceivedSeverity::Critical,
        ))
        .await
        .unwrap();
    assert!(matches!(
        auto.consider(&ghost).await,
        AutomaticOutcome::Refused { .. }
    ));

    // Another operation holds the instance: the heal is dropped and names the holder.
    let scale = env
        .lcm
        .scale(
            &on,
            req(json!({"type": "SCALE_OUT", "aspectId": "web_scale", "numberOfSteps": 1})),
        )
        .await
        .unwrap();
    let (alarm, _) = fm
        .raise(&report(&on, &vnfc, "held", PerceivedSeverity::Critical))
        .await
        .unwrap();
    assert_eq!(
        auto.consider(&alarm).await,
        AutomaticOutcome::Busy {
            op_occ_id: scale.id.to_string()
        }
    );
    env.completed(scale).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(heals(&env, &off).await.is_empty());
    assert!(
        heals(&env, &on).await.is_empty(),
        "{:?}",
        heals(&env, &on).await
    );
}

/// The bounds are counted from the stored occurrences: a fresh process (a restarted server,
/// another replica) with nothing in memory still finds the instance cooling down, and then
/// at its hourly limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bounds_hold_for_a_fresh_process() {
    let env = Env::with(vec![hello_vnfd()]).await;
    let fm = fault_manager(&env, policy(Duration::from_secs(3600), 5));
    let (id, vnfc) = instantiated(&env, json!({"isAutohealEnabled": true}), json!({})).await;
    fm.raise(&report(
        &id,
        &vnfc,
        "VNFC down",
        PerceivedSeverity::Critical,
    ))
    .await
    .unwrap();
    env.completed(wait_heals(&env, &id, 1).await[0].clone())
        .await;

    let fresh = fault_manager(&env, policy(Duration::from_secs(3600), 5));
    let (alarm, _) = fresh
        .raise(&report(
            &id,
            &vnfc,
            "disk failed",
            PerceivedSeverity::Critical,
        ))
        .await
        .unwrap();
    let outcome = fresh.auto_heal().unwrap().consider(&alarm).await;
    assert!(
        matches!(outcome, AutomaticOutcome::CoolingDown { remaining } if remaining > Duration::from_secs(3500)),
        "{outcome:?}"
    );
    // Without a cooldown, a limit of one an hour: reached by the stored heal.
    let limited = fault_manager(&env, policy(Duration::ZERO, 1));
    let outcome = limited.auto_heal().unwrap().consider(&alarm).await;
    assert!(
        matches!(outcome, AutomaticOutcome::RateLimited { max: 1, .. }),
        "{outcome:?}"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    wait_heals(&env, &id, 1).await;
}

/// Tacker's `auto_heal` alerts name VNFCs one by one: those asked for within the batch
/// window heal together in one HEAL (Tacker's `timer_interval`), a VNFC the instance does not
/// have is left out, and a second HEAL follows at once for a later request (no cooldown by
/// default, as Tacker).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heal_requests_within_the_window_heal_their_vnfcs_in_one_heal() {
    let env = Env::with(vec![hello_vnfd()]).await;
    let keyring = Arc::new(Keyring::from_key_list(&Keyring::generate_key()).unwrap());
    let auto = AutoHeal::new(env.lcm.clone(), AutoHealPolicy::default())
        .with_batch_window(Duration::from_millis(300));
    let fm = FaultManager::new(env.store.clone(), keyring, Arc::new(FixedAnswer(204)))
        .with_auto_heal(auto);
    let (id, _) = instantiated(
        &env,
        json!({"isAutohealEnabled": true, "isAutoscaleEnabled": true}),
        json!({}),
    )
    .await;
    // A second VNFC.
    let scale = vnfm_assurance::fm::AutoScale::new(env.lcm.clone(), Default::default());
    match scale.consider(&id, true, "web_scale", 1, "test").await {
        AutomaticOutcome::Started { op_occ_id } => {
            let occ = env
                .lcm
                .get_op_occ(&op_occ_id.as_str().into())
                .await
                .unwrap();
            env.completed(occ).await;
        }
        other => panic!("no scale out: {other}"),
    }
    let vnfcs: Vec<String> = env
        .instance(&id)
        .await
        .instantiated_vnf_info
        .unwrap()
        .vnfc_info
        .unwrap()
        .into_iter()
        .map(|v| v.id)
        .collect();
    assert_eq!(vnfcs.len(), 2, "{vnfcs:?}");

    assert!(fm.request_heal(&id, &vnfcs[..1], "alert VnfcDown"));
    assert!(fm.request_heal(&id, &[vnfcs[1].clone(), "nope".into()], "alert VnfcDown"));
    let ops = wait_heals(&env, &id, 1).await;
    let heal = env.completed(ops[0].clone()).await;
    assert!(heal.is_automatic_invocation, "{heal:?}");
    let mut healed: Vec<String> =
        serde_json::from_value(heal.operation_params.unwrap()["vnfcInstanceId"].clone()).unwrap();
    healed.sort();
    let mut expected = vnfcs.clone();
    expected.sort();
    assert_eq!(healed, expected);

    // A later request heals again at once: the default policy has no cooldown.
    let now: Vec<String> = env
        .instance(&id)
        .await
        .instantiated_vnf_info
        .unwrap()
        .vnfc_info
        .unwrap()
        .into_iter()
        .map(|v| v.id)
        .collect();
    assert!(fm.request_heal(&id, &now[..1], "alert VnfcDown"));
    wait_heals(&env, &id, 2).await;
    // Automatic healing off: nothing is asked for.
    let off = FaultManager::new(
        env.store.clone(),
        Arc::new(Keyring::from_key_list(&Keyring::generate_key()).unwrap()),
        Arc::new(FixedAnswer(204)),
    );
    assert!(!off.request_heal(&id, &now, "alert VnfcDown"));
}
