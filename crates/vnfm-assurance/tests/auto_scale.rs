//! Automatic scaling, on SQLite with the in-memory infrastructure driver: a scale request of
//! the monitoring system scales an instance with `isAutoscaleEnabled` out and in
//! (`isAutomaticInvocation`), within the VNFD's levels and the cooldown; an instance without
//! the switch is not scaled.

use crate::runner_support;

use std::time::Duration;

use runner_support::*;
use serde_json::json;
use vnfm_assurance::fm::{AutoScale, AutoScalePolicy, AutomaticOutcome, Bounds};
use vnfm_types::{LcmOperationType, VnfInstanceId};

fn auto_scale(env: &Env, cooldown: Duration) -> AutoScale {
    AutoScale::new(
        env.lcm.clone(),
        AutoScalePolicy {
            bounds: Bounds {
                cooldown,
                max_in_window: 100,
                window: Duration::from_secs(3600),
            },
        },
    )
}

async fn instantiated(env: &Env, properties: serde_json::Value) -> VnfInstanceId {
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
    inst.id
}

/// Starts the scale and waits for it: the occurrence, completed.
async fn scaled(
    env: &Env,
    auto: &AutoScale,
    id: &VnfInstanceId,
    out: bool,
) -> vnfm_types::VnfLcmOpOcc {
    match auto
        .consider(id, out, "web_scale", 1, "alert CpuHigh")
        .await
    {
        AutomaticOutcome::Started { op_occ_id } => {
            let occ = env
                .lcm
                .get_op_occ(&op_occ_id.as_str().into())
                .await
                .unwrap();
            env.completed(occ).await
        }
        other => panic!("no scale started: {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scale_request_scales_out_and_in_within_the_levels() {
    let env = Env::with(vec![hello_vnfd()]).await;
    let auto = auto_scale(&env, Duration::ZERO);
    let id = instantiated(&env, json!({"isAutoscaleEnabled": true})).await;

    let occ = scaled(&env, &auto, &id, true).await;
    assert!(occ.is_automatic_invocation, "{occ:?}");
    assert_eq!(occ.operation, LcmOperationType::Scale);
    let params = occ.operation_params.unwrap();
    assert_eq!(params["type"], "SCALE_OUT");
    assert_eq!(params["additionalParams"]["cause"], "alert CpuHigh");
    let i = env.instance(&id).await;
    assert_eq!(
        (vnfcs(&i, Some("web")), scale_level(&i, "web_scale")),
        (2, Some(1))
    );

    // Level 2 is the aspect's maximum: a second step out is fine, a third is refused.
    scaled(&env, &auto, &id, true).await;
    let beyond = auto
        .consider(&id, true, "web_scale", 1, "alert CpuHigh")
        .await;
    assert!(
        matches!(&beyond, AutomaticOutcome::Refused { reason } if reason.contains("web_scale")),
        "{beyond}"
    );
    let occ = scaled(&env, &auto, &id, false).await;
    assert_eq!(occ.operation_params.unwrap()["type"], "SCALE_IN");
    let i = env.instance(&id).await;
    assert_eq!(
        (vnfcs(&i, Some("web")), scale_level(&i, "web_scale")),
        (2, Some(1))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_automatic_scale_without_the_switch_or_within_the_cooldown() {
    let env = Env::with(vec![hello_vnfd()]).await;
    let auto = auto_scale(&env, Duration::from_secs(3600));
    let off = instantiated(&env, json!({"isAutohealEnabled": true})).await;
    assert_eq!(
        auto.consider(&off, true, "web_scale", 1, "alert").await,
        AutomaticOutcome::Disabled {
            switch: "isAutoscaleEnabled"
        }
    );
    assert_eq!(
        auto.consider(
            &VnfInstanceId::new("nowhere"),
            true,
            "web_scale",
            1,
            "alert"
        )
        .await,
        AutomaticOutcome::UnknownInstance
    );
    let on = instantiated(&env, json!({"isAutoscaleEnabled": true})).await;
    scaled(&env, &auto, &on, true).await;
    assert!(matches!(
        auto.consider(&on, false, "web_scale", 1, "alert").await,
        AutomaticOutcome::CoolingDown { .. }
    ));
}

/// Performance management over the environment's store, measuring `VCpuUsageMeanVnf` of VNFs
/// with `metrics`, threshold crossings going to `auto`.
fn performance(
    env: &Env,
    metrics: &vnfm_driver_api::metrics::StaticMetrics,
    auto: &AutoScale,
) -> vnfm_assurance::PerformanceManager {
    let keyring = vnfm_lcm::Keyring::from_key_list(&vnfm_lcm::Keyring::generate_key()).unwrap();
    vnfm_assurance::PerformanceManager::new(
        env.store.clone(),
        std::sync::Arc::new(keyring),
        std::sync::Arc::new(vnfm_driver_api::FixedAnswer(204)),
        std::sync::Arc::new(metrics.clone()),
        vnfm_assurance::pm::PmOptions {
            threshold_period: Duration::from_secs(10),
            max_reports: 2,
        },
    )
    .with_auto_scale(auto.clone())
}

/// The SCALE occurrences of `id`, completed.
async fn scales_of(env: &Env, id: &VnfInstanceId) -> Vec<vnfm_types::VnfLcmOpOcc> {
    let query = vnfm_store::OpOccQuery {
        vnf_instance_id: Some(id.clone()),
        operation: Some(LcmOperationType::Scale),
        ..Default::default()
    };
    let mut out = Vec::new();
    for occ in env.store.list_op_occs(&query).await.unwrap().items {
        out.push(env.completed(occ).await);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_threshold_crossing_scales_by_the_instances_rule() {
    let env = Env::with(vec![hello_vnfd()]).await;
    let auto = auto_scale(&env, Duration::ZERO);
    let metrics = vnfm_driver_api::metrics::StaticMetrics::new(&[(
        "VCpuUsageMeanVnf",
        vnfm_types::PmObjectType::Vnf,
    )]);
    let pm = performance(&env, &metrics, &auto);
    // The rule comes in the INSTANTIATE request's additionalParams, as the switch may.
    let inst = env.create(&hello_vnfd().descriptor_id).await;
    let op = env
        .lcm
        .instantiate(
            &inst.id,
            req(
                json!({"flavourId": "simple", "vimConnectionInfo": memory_vims(),
                "additionalParams": {
                    "isAutoscaleEnabled": true,
                    "thresholdScaling": {"VCpuUsageMeanVnf": {"aspectId": "web_scale"}}
                }}),
            ),
        )
        .await
        .unwrap();
    env.completed(op).await;
    let id = inst.id;
    let threshold = pm
        .create_threshold(
            &req(json!({
                "objectType": "Vnf", "objectInstanceId": id.as_str(),
                "criteria": {"performanceMetric": "VCpuUsageMeanVnf", "thresholdType": "SIMPLE",
                             "simpleThresholdDetails": {"thresholdValue": 80, "hysteresis": 5}},
                "callbackUri": "http://127.0.0.1:9/threshold"
            })),
            &vnfm_lcm::CreateOptions::default(),
            vnfm_assurance::pm::PmApi::V2,
        )
        .await
        .unwrap();

    let t0 = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
    let mut started = Vec::new();
    let mut kinds = Vec::new();
    let mut seen = std::collections::HashSet::new();
    // Below, crossing up (scale out), staying up (nothing), crossing down (scale in).
    for (k, value) in [50.0, 90.0, 95.0, 60.0].into_iter().enumerate() {
        metrics.set(Some(value));
        let collected = pm
            .collect_due(t0 + Duration::from_secs(10 * k as u64))
            .await
            .unwrap();
        started.push(collected.scalings);
        // Each SCALE finishes before the next crossing needs the instance.
        for occ in scales_of(&env, &id).await {
            if !seen.insert(occ.id.clone()) {
                continue;
            }
            assert_eq!(
                occ.operation_state,
                vnfm_types::LcmOperationStateType::Completed
            );
            assert!(occ.is_automatic_invocation, "{occ:?}");
            let params = occ.operation_params.as_ref().unwrap();
            assert_eq!(params["aspectId"], "web_scale");
            kinds.push((
                params["type"].as_str().unwrap().to_owned(),
                params["additionalParams"]["cause"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            ));
        }
    }
    assert_eq!(started, [0, 1, 0, 1]);
    assert_eq!(
        kinds,
        [
            (
                "SCALE_OUT".to_owned(),
                format!("threshold {} crossed UP", threshold.id)
            ),
            (
                "SCALE_IN".to_owned(),
                format!("threshold {} crossed DOWN", threshold.id)
            ),
        ]
    );
    assert_eq!(scale_level(&env.instance(&id).await, "web_scale"), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crossing_without_a_rule_or_with_a_malformed_one_scales_nothing() {
    let env = Env::with(vec![hello_vnfd()]).await;
    let auto = auto_scale(&env, Duration::ZERO);
    let none = instantiated(&env, json!({"isAutoscaleEnabled": true})).await;
    assert_eq!(
        auto.consider_crossing(&none, "VCpuUsageMeanVnf", true, "threshold t crossed UP")
            .await,
        AutomaticOutcome::NoScalingRule {
            property: "thresholdScaling",
            key: "VCpuUsageMeanVnf".into()
        }
    );
    let bad = instantiated(
        &env,
        json!({"isAutoscaleEnabled": true,
               "thresholdScaling": {"VCpuUsageMeanVnf": {"aspect": "web_scale"}}}),
    )
    .await;
    let outcome = auto
        .consider_crossing(&bad, "VCpuUsageMeanVnf", true, "threshold t crossed UP")
        .await;
    assert!(
        matches!(&outcome, AutomaticOutcome::Refused { reason }
            if reason.contains("thresholdScaling.VCpuUsageMeanVnf is malformed")
                && reason.contains("aspect")),
        "{outcome}"
    );
    let off = instantiated(
        &env,
        json!({"thresholdScaling": {"VCpuUsageMeanVnf": {"aspectId": "web_scale"}}}),
    )
    .await;
    assert_eq!(
        auto.consider_crossing(&off, "VCpuUsageMeanVnf", true, "t")
            .await,
        AutomaticOutcome::Disabled {
            switch: "isAutoscaleEnabled"
        }
    );
    assert!(scales_of(&env, &none).await.is_empty());
}

/// The occurrences of `id` of `operation` not in `seen` yet, each waited for (completed).
async fn new_ops_of(
    env: &Env,
    id: &VnfInstanceId,
    operation: LcmOperationType,
    seen: &mut std::collections::HashSet<String>,
) -> Vec<vnfm_types::VnfLcmOpOcc> {
    let query = vnfm_store::OpOccQuery {
        vnf_instance_id: Some(id.clone()),
        operation: Some(operation),
        ..Default::default()
    };
    let mut out = Vec::new();
    for occ in env.store.list_op_occs(&query).await.unwrap().items {
        if seen.insert(occ.id.to_string()) {
            out.push(env.completed(occ).await);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn indicator_rules_scale_by_steps_and_to_levels_when_the_value_changes_band() {
    let mut vnfd = hello_vnfd();
    for id in ["load", "tier"] {
        vnfd.indicators.push(vnfm_descriptor::vnfd::IndicatorDef {
            id: id.into(),
            name: None,
            source: "em".into(),
            promql: None,
        });
    }
    let env = Env::with(vec![vnfd]).await;
    let keyring = vnfm_lcm::Keyring::from_key_list(&vnfm_lcm::Keyring::generate_key()).unwrap();
    let indicators = vnfm_assurance::IndicatorManager::new(
        env.store.clone(),
        std::sync::Arc::new(keyring),
        std::sync::Arc::new(vnfm_driver_api::FixedAnswer(204)),
        std::sync::Arc::new(env.catalog.clone()),
        None,
    )
    .with_auto_scale(auto_scale(&env, Duration::ZERO));
    let inst = env.create(&hello_vnfd().descriptor_id).await;
    let op = env
        .lcm
        .instantiate(
            &inst.id,
            req(
                json!({"flavourId": "simple", "vimConnectionInfo": memory_vims(),
                "additionalParams": {
                    "isAutoscaleEnabled": true,
                    "indicatorScaling": {
                        "load": {"aspectId": "web_scale", "scaleOutAbove": 80, "scaleInBelow": 20},
                        "tier": {"levels": [{"atLeast": 0, "instantiationLevelId": "small"},
                                            {"atLeast": 100, "instantiationLevelId": "large"}]}
                    }
                }}),
            ),
        )
        .await
        .unwrap();
    env.completed(op).await;
    let id = inst.id;
    let mut seen = std::collections::HashSet::new();

    // Steps: the middle band, above (out), still above (nothing), below (in).
    let mut scales = Vec::new();
    for value in [50.0, 90.0, 95.0, 10.0] {
        assert!(indicators.set(&id, "load", json!(value)).await.unwrap());
        for occ in new_ops_of(&env, &id, LcmOperationType::Scale, &mut seen).await {
            assert!(occ.is_automatic_invocation, "{occ:?}");
            let params = occ.operation_params.unwrap();
            assert_eq!(params["aspectId"], "web_scale");
            scales.push((
                value,
                params["type"].as_str().unwrap().to_owned(),
                params["additionalParams"]["cause"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            ));
        }
    }
    assert_eq!(
        scales,
        [
            (
                90.0,
                "SCALE_OUT".into(),
                "indicator load changed to 90".into()
            ),
            (
                10.0,
                "SCALE_IN".into(),
                "indicator load changed to 10".into()
            ),
        ]
    );
    assert_eq!(scale_level(&env.instance(&id).await, "web_scale"), Some(0));

    // Levels: into the large range, within it, back into the small one.
    let mut levels = Vec::new();
    for value in [150.0, 120.0, 5.0] {
        indicators.set(&id, "tier", json!(value)).await.unwrap();
        for occ in new_ops_of(&env, &id, LcmOperationType::ScaleToLevel, &mut seen).await {
            assert!(occ.is_automatic_invocation, "{occ:?}");
            let level = occ.operation_params.unwrap()["instantiationLevelId"]
                .as_str()
                .unwrap()
                .to_owned();
            levels.push((
                value,
                level,
                scale_level(&env.instance(&id).await, "web_scale"),
            ));
        }
    }
    assert_eq!(
        levels,
        [
            (150.0, "large".into(), Some(2)),
            (5.0, "small".into(), Some(0)),
        ]
    );

    // A value that is not a number scales nothing; nor does a malformed rule (logged).
    assert!(indicators.set(&id, "load", json!("high")).await.unwrap());
    assert!(
        new_ops_of(&env, &id, LcmOperationType::Scale, &mut seen)
            .await
            .is_empty()
    );
}
