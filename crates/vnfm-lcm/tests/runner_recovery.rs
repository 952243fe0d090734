//! Recovery decisions, deterministically in one process: a second runner whose clock runs an
//! hour ahead sees the first runner's leases as expired and takes its occurrences over while
//! the first still runs (as if it had hung), which also exercises fencing: the first runner's
//! writes are refused from then on.

use crate::runner_support;

use std::sync::Arc;
use std::time::Duration;

use runner_support::*;
use serde_json::json;
use vnfm_driver_api::InfraOperation;
use vnfm_store::StepOutcome;
use vnfm_types::{CancelModeType, LcmOperationStateType as State, VnfInstance};

async fn instantiating(env: &Env, vnfd: &str) -> (VnfInstance, vnfm_types::VnfLcmOpOcc) {
    let inst = env.create(vnfd).await;
    let op = env
        .lcm
        .instantiate(
            &inst.id,
            req(json!({"flavourId": "simple", "vimConnectionInfo": memory_vims()})),
        )
        .await
        .unwrap();
    // Wait until the (slow) infra step is running.
    let t0 = std::time::Instant::now();
    while env.infra.calls().is_empty() {
        assert!(t0.elapsed() < WAIT);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    (inst, op)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_infra_step_is_resumed_and_the_old_runner_is_fenced_out() {
    let env = Env::builder()
        .vnfd(hello_vnfd())
        .infra_delay(Duration::from_secs(10))
        .config(|c| c.with_lease_ttl(Duration::from_millis(600)))
        .build()
        .await;
    let (inst, op) = instantiating(&env, &hello_vnfd().descriptor_id).await;
    let b = second_runner(&env, |c| c);
    let report = b.lcm.recover().await.unwrap();
    assert_eq!(report.resumed, std::slice::from_ref(&op.id));
    let done = b.lcm.wait(&op.id, WAIT).await.unwrap();
    assert_eq!(done.operation_state, State::Completed, "{:?}", done.error);
    // B ran the interrupted step again; A's call was cancelled when it lost its lease.
    assert_eq!(b.infra.operations(), [InfraOperation::Instantiate]);
    let t0 = std::time::Instant::now();
    while env.infra.calls()[0].error.is_none() {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "A's step was not cancelled"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(env.infra.calls()[0].error, Some("cancelled"));
    // A's task gave up without writing anything.
    let t0 = std::time::Instant::now();
    while env.lcm.running_count() > 0 {
        assert!(t0.elapsed() < Duration::from_secs(5));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        env.steps(&done, StepOutcome::Completed).await,
        ["infra:instantiate"]
    );
    assert!(env.steps(&done, StepOutcome::Failed).await.is_empty());
    assert_eq!(
        env.lcm.get_op_occ(&op.id).await.unwrap().operation_state,
        State::Completed
    );
    assert!(b.infra.inventory(&inst.id).is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_occurrence_with_a_hook_left_goes_to_failed_temp() {
    let env = Env::builder()
        .infra_delay(Duration::from_secs(10))
        .config(|c| c.with_lease_ttl(Duration::from_millis(600)))
        .build()
        .await;
    let (inst, op) = instantiating(&env, "vnfd-hooks").await;
    let b = second_runner(&env, |c| c);
    let report = b.lcm.recover().await.unwrap();
    assert_eq!(report.failed, std::slice::from_ref(&op.id));
    let occ = b.lcm.get_op_occ(&op.id).await.unwrap();
    assert_eq!(occ.operation_state, State::FailedTemp);
    let error = occ.error.clone().unwrap();
    assert!(
        error.detail.contains("during step infra:instantiate (2/3)"),
        "{}",
        error.detail
    );
    let journal = env.journal(&occ).await;
    let last = journal.last().unwrap();
    assert_eq!(
        (last.step.as_str(), last.outcome),
        ("infra:instantiate", StepOutcome::Failed)
    );
    assert_eq!(last.detail["interrupted"], true);
    assert!(b.infra.calls().is_empty() && b.mgmt.calls().is_empty());
    assert_eq!(
        env.op_notes(&occ).await.last().unwrap(),
        &("FAILED_TEMP".to_string(), "RESULT".to_string())
    );
    // The operator retries through B: the interrupted step and the end hook run.
    let op = b.lcm.retry(&op.id).await.unwrap();
    let done = b.lcm.wait(&op.id, WAIT).await.unwrap();
    assert_eq!(done.operation_state, State::Completed, "{:?}", done.error);
    assert_eq!(b.mgmt.operations(), ["instantiate_end"]);
    assert_eq!(b.infra.operations(), [InfraOperation::Instantiate]);
    assert!(b.infra.inventory(&inst.id).is_some());
}

/// A runner that shuts down stops at a step boundary and says so: the runner that takes the
/// occurrence over runs the step it did not start, a hook too (an interrupted hook would leave
/// it FAILED_TEMP, as above). Before, a SIGTERM hand-over before a hook ended FAILED_TEMP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shut_down_runners_occurrence_is_resumed_at_the_hook_it_did_not_start() {
    let env = Env::builder()
        .infra_delay(Duration::from_millis(500))
        .build()
        .await;
    let (inst, op) = instantiating(&env, "vnfd-hooks").await;
    // The infrastructure step in progress finishes; the end hook does not start.
    env.lcm.shutdown(WAIT).await;
    let occ = env.lcm.get_op_occ(&op.id).await.unwrap();
    assert_eq!(occ.operation_state, State::Processing);
    assert!(env.store.lease(&op.id).await.unwrap().is_none());
    assert_eq!(env.mgmt.operations(), ["instantiate_start"]);
    let b = second_runner(&env, |c| c);
    let report = b.lcm.recover().await.unwrap();
    assert_eq!(report.resumed, std::slice::from_ref(&op.id));
    let done = b.lcm.wait(&op.id, WAIT).await.unwrap();
    assert_eq!(done.operation_state, State::Completed, "{:?}", done.error);
    assert_eq!(b.mgmt.operations(), ["instantiate_end"]);
    assert!(b.infra.calls().is_empty());
    assert!(env.infra.inventory(&inst.id).is_some());
    // Taken over once: a later recovery finds nothing handed over.
    assert_eq!(b.lcm.recover().await.unwrap(), Default::default());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resuming_can_be_turned_off() {
    let env = Env::builder()
        .vnfd(hello_vnfd())
        .infra_delay(Duration::from_secs(10))
        .config(|c| c.with_lease_ttl(Duration::from_millis(600)))
        .build()
        .await;
    let (_, op) = instantiating(&env, &hello_vnfd().descriptor_id).await;
    let b = second_runner(&env, |mut c| {
        c.resume_idempotent = false;
        c
    });
    let report = b.lcm.recover().await.unwrap();
    assert_eq!(report.failed, std::slice::from_ref(&op.id));
    assert!(report.resumed.is_empty());
    assert_eq!(
        b.lcm.get_op_occ(&op.id).await.unwrap().operation_state,
        State::FailedTemp
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orphaned_starting_occurrence_honours_its_cancellation() {
    let env = Env::builder()
        .vims(Arc::new(SlowVims(Duration::from_secs(30))))
        .config(|c| c.with_lease_ttl(Duration::from_millis(600)))
        .build()
        .await;
    let inst = env.create("vnfd-hooks").await;
    let op = env
        .lcm
        .instantiate(
            &inst.id,
            req(json!({"flavourId": "simple", "vimConnectionInfo": memory_vims()})),
        )
        .await
        .unwrap();
    // B takes the STARTING occurrence over; A's run is now fenced out.
    let b = second_runner(&env, |c| c);
    // The cancellation is requested through B, which does not execute it yet.
    b.lcm
        .cancel(&op.id, CancelModeType::Graceful)
        .await
        .unwrap();
    let t0 = std::time::Instant::now();
    let report = b.lcm.recover().await.unwrap();
    assert_eq!(report.resumed, std::slice::from_ref(&op.id));
    let done = b.lcm.wait(&op.id, WAIT).await.unwrap();
    assert_eq!(done.operation_state, State::RolledBack);
    // Read at take-over, not at the first poll of the lease keeper (1 s later).
    assert!(
        t0.elapsed() < Duration::from_millis(700),
        "{:?}",
        t0.elapsed()
    );
    assert!(b.infra.calls().is_empty() && env.infra.calls().is_empty());
    assert!(env.store.active_op_occ(&inst.id).await.unwrap().is_none());
}
