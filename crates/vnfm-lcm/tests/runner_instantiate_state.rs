//! When an instance becomes INSTANTIATED: with the move of its INSTANTIATE to COMPLETED, not
//! with the INSTANTIATE's infrastructure step (SOL003; Tacker's `test_instantiate_rollback`
//! reads NOT_INSTANTIATED while the occurrence is FAILED_TEMP). In FAILED_TEMP the store keeps
//! the resources created so far for retry, rollback and fail, while the instance is shown
//! NOT_INSTANTIATED without `instantiatedVnfInfo`; the per-instance lock still refuses every
//! other operation. FAIL leaves it NOT_INSTANTIATED, RETRY makes it INSTANTIATED, and a failed
//! SCALE leaves an instantiated instance as it was. The occurrence records its grant's id.

use crate::runner_support;

use runner_support::*;
use serde_json::json;
use vnfm_driver_api::{DriverError, InfraOperation};
use vnfm_lcm::LcmError;
use vnfm_store::InstanceQuery;
use vnfm_types::{InstantiationState, LcmOperationStateType as State, VnfInstance, VnfLcmOpOcc};

/// An INSTANTIATE of a new `vnfd-hooks` instance whose `instantiate_end` hook fails after the
/// infrastructure step created the resources: the instance and the FAILED_TEMP occurrence.
async fn failed_after_the_infra_step(env: &Env) -> (VnfInstance, VnfLcmOpOcc) {
    let inst = env.create("vnfd-hooks").await;
    env.mgmt.fail_next(
        "instantiate_end",
        DriverError::permanent("cluster bootstrap failed"),
    );
    let op = env
        .lcm
        .instantiate(
            &inst.id,
            req(json!({"flavourId": "simple", "vimConnectionInfo": memory_vims()})),
        )
        .await
        .expect("instantiate accepted");
    let done = env.done(&op).await;
    assert_eq!(done.operation_state, State::FailedTemp, "{:?}", done.error);
    (inst, done)
}

/// The instance as the store keeps it (what the engine works from).
async fn stored(env: &Env, inst: &VnfInstance) -> VnfInstance {
    env.store
        .get_instance(&inst.id)
        .await
        .expect("store read")
        .expect("stored instance")
        .0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instantiate_in_failed_temp_shows_the_instance_not_instantiated() {
    let env = Env::builder().build().await;
    let (inst, done) = failed_after_the_infra_step(&env).await;

    // Shown NOT_INSTANTIATED, without the resources, through every read.
    let shown = env.instance(&inst.id).await;
    assert_eq!(
        shown.instantiation_state,
        InstantiationState::NotInstantiated
    );
    assert!(shown.instantiated_vnf_info.is_none(), "{shown:?}");
    assert!(shown.links.instantiate.is_some() && shown.links.terminate.is_none());
    let (versioned, _) = env.lcm.get_instance_versioned(&inst.id).await.unwrap();
    assert_eq!(versioned, shown);
    let listed = env
        .lcm
        .list_instances(&InstanceQuery::default())
        .await
        .unwrap();
    assert_eq!(listed.items, std::slice::from_ref(&shown));
    let docs = env
        .lcm
        .list_instance_documents(&InstanceQuery::default())
        .await
        .unwrap();
    assert_eq!(docs.items[0]["instantiationState"], "NOT_INSTANTIATED");
    assert!(
        docs.items[0].get("instantiatedVnfInfo").is_none(),
        "{}",
        docs.items[0]
    );

    // The store keeps what the infrastructure step created, for retry, rollback and fail.
    let kept = stored(&env, &inst).await;
    assert_eq!(
        kept.instantiation_state,
        InstantiationState::NotInstantiated
    );
    assert_eq!(vnfcs(&kept, None), 2);
    assert!(env.infra.inventory(&inst.id).is_some());

    // The occurrence holds the instance: every other request is refused, as before.
    let terminate = env
        .lcm
        .terminate(&inst.id, req(json!({"terminationType": "FORCEFUL"})))
        .await
        .unwrap_err();
    assert_eq!(terminate.kind().status(), 409, "{terminate}");
    let again = env
        .lcm
        .instantiate(
            &inst.id,
            req(json!({"flavourId": "simple", "vimConnectionInfo": memory_vims()})),
        )
        .await
        .unwrap_err();
    assert!(matches!(again, LcmError::InstanceBusy { .. }), "{again}");
    let scale = env
        .lcm
        .scale(
            &inst.id,
            req(json!({"type": "SCALE_OUT", "aspectId": "VDU1_scale"})),
        )
        .await
        .unwrap_err();
    assert_eq!(scale.kind().status(), 409, "{scale}");
    let delete = env.lcm.delete_vnf_identifier(&inst.id).await.unwrap_err();
    assert_eq!(delete.kind().status(), 409, "{delete}");
    assert!(env.store.get_instance(&inst.id).await.unwrap().is_some());

    // A retry that succeeds makes it INSTANTIATED, with the resources it kept.
    let retried = env.lcm.retry(&done.id).await.unwrap();
    env.completed(retried).await;
    let i = env.instance(&inst.id).await;
    assert_eq!(i.instantiation_state, InstantiationState::Instantiated);
    assert_eq!(vnfcs(&i, None), 2);
    assert!(i.links.terminate.is_some() && i.links.instantiate.is_none());
    assert_eq!(env.infra.operations(), [InfraOperation::Instantiate]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_of_a_failed_temp_instantiate_leaves_it_not_instantiated() {
    let env = Env::builder().build().await;
    let (inst, done) = failed_after_the_infra_step(&env).await;
    let failed = env.lcm.fail(&done.id).await.unwrap();
    assert_eq!(failed.operation_state, State::Failed);
    // What the VNFM no longer records but the VIM still holds is said.
    let warnings = failed.warnings.clone().unwrap_or_default();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("2 VNFC(s)") && w.contains("stay on the VIM")),
        "{warnings:?}"
    );
    assert_eq!(
        env.lcm.get_op_occ(&done.id).await.unwrap().warnings,
        failed.warnings
    );
    for i in [env.instance(&inst.id).await, stored(&env, &inst).await] {
        assert_eq!(i.instantiation_state, InstantiationState::NotInstantiated);
        assert!(i.instantiated_vnf_info.is_none(), "{i:?}");
        // Without the VIM connections the failed request brought (as Tacker).
        assert!(
            i.vim_connection_info.as_ref().is_none_or(|m| m.is_empty()),
            "{:?}",
            i.vim_connection_info
        );
    }
    // Free again: TERMINATE is refused for a NOT_INSTANTIATED instance, a new INSTANTIATE
    // completes, and the identifier of a NOT_INSTANTIATED instance can be deleted.
    let err = env
        .lcm
        .terminate(&inst.id, req(json!({"terminationType": "FORCEFUL"})))
        .await
        .unwrap_err();
    assert!(matches!(err, LcmError::NotInstantiated { .. }), "{err}");
    env.instantiated(&inst.id).await;
    assert_eq!(
        env.instance(&inst.id).await.instantiation_state,
        InstantiationState::Instantiated
    );
    let other = failed_after_the_infra_step(&env).await;
    env.lcm.fail(&other.1.id).await.unwrap();
    env.lcm.delete_vnf_identifier(&other.0.id).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_of_a_failed_temp_instantiate_removes_what_it_created() {
    let env = Env::builder().build().await;
    let (inst, done) = failed_after_the_infra_step(&env).await;
    let rolling = env.lcm.rollback(&done.id).await.unwrap();
    let rolled = env.done(&rolling).await;
    assert_eq!(
        rolled.operation_state,
        State::RolledBack,
        "{:?}",
        rolled.error
    );
    assert_eq!(
        env.infra.operations(),
        [
            InfraOperation::Instantiate,
            InfraOperation::RollbackInstantiate
        ]
    );
    assert!(env.infra.inventory(&inst.id).is_none());
    let kept = stored(&env, &inst).await;
    assert_eq!(
        kept.instantiation_state,
        InstantiationState::NotInstantiated
    );
    assert!(kept.instantiated_vnf_info.is_none());
    env.lcm.delete_vnf_identifier(&inst.id).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_scale_leaves_the_instance_instantiated() {
    let env = Env::builder().build().await;
    let inst = env.create("vnfd-hooks").await;
    env.instantiated(&inst.id).await;
    env.mgmt
        .fail_next("scale_end", DriverError::permanent("scale_end broke"));
    let op = env
        .lcm
        .scale(
            &inst.id,
            req(json!({"type": "SCALE_OUT", "aspectId": "VDU1_scale"})),
        )
        .await
        .unwrap();
    let done = env.done(&op).await;
    assert_eq!(done.operation_state, State::FailedTemp);
    let i = env.instance(&inst.id).await;
    assert_eq!(i.instantiation_state, InstantiationState::Instantiated);
    // The scaled-out VNFC is recorded and shown while the SCALE waits for the operator.
    assert_eq!(vnfcs(&i, Some("VDU1")), 2);
    let failed = env.lcm.fail(&done.id).await.unwrap();
    assert!(failed.warnings.is_none(), "{:?}", failed.warnings);
    let i = env.instance(&inst.id).await;
    assert_eq!(i.instantiation_state, InstantiationState::Instantiated);
    assert_eq!(vnfcs(&i, Some("VDU1")), 2);
}
