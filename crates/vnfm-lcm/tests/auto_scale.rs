//! Automatic scaling, on SQLite with the in-memory infrastructure driver: a scale request of
//! the monitoring system scales an instance with `isAutoscaleEnabled` out and in
//! (`isAutomaticInvocation`), within the VNFD's levels and the cooldown; an instance without
//! the switch is not scaled.

mod runner_support;

use std::time::Duration;

use runner_support::*;
use serde_json::json;
use vnfm_lcm::fm::{AutoScale, AutoScalePolicy, AutomaticOutcome, Bounds};
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
