//! Steps that panic or keep stopping their runner: a panic in a driver or hook step ends the
//! occurrence `FAILED_TEMP` naming the step and the panic, with the lease released, and
//! recovery stops resuming a step that took its runner down too many times in a row.

use crate::runner_support;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use runner_support::*;
use serde_json::json;
use vnfm_driver_api::memory::{MemoryInfraDriver, RecordingMgmtDriver};
use vnfm_driver_api::{
    DriverError, HookCall, HookOutcome, InfraDriver, InfraOutcome, InfraRequest, MgmtDriver,
};
use vnfm_lcm::runner::Clock;
use vnfm_lcm::{Lcm, LcmConfig};
use vnfm_store::{StepOutcome, Timestamp};
use vnfm_types::{LcmOperationStateType as State, VnfInstance, VnfLcmOpOcc};

/// The in-memory driver, except that instantiate panics.
struct PanickingInfra(MemoryInfraDriver);

#[async_trait]
impl InfraDriver for PanickingInfra {
    fn name(&self) -> &str {
        "panicking"
    }

    fn vim_types(&self) -> &[&str] {
        self.0.vim_types()
    }

    async fn instantiate(&self, _req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        // What `Duration::from_secs_f64(1e308)` does in a driver.
        let secs: f64 = std::hint::black_box(1e308);
        let _ = Duration::from_secs_f64(secs);
        unreachable!("from_secs_f64 panics on overflow")
    }

    async fn terminate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.0.terminate(req).await
    }
}

/// A management driver whose every hook panics.
struct PanickingMgmt;

#[async_trait]
impl MgmtDriver for PanickingMgmt {
    async fn call(&self, call: &HookCall) -> Result<HookOutcome, DriverError> {
        panic!("hook script table has no entry for {}", call.operation)
    }
}

/// A clock `ahead` of the wall clock.
struct Ahead(Duration);

impl Clock for Ahead {
    fn now(&self) -> Timestamp {
        Timestamp::now().plus(self.0)
    }
}

async fn instantiate(lcm: &Lcm, inst: &VnfInstance) -> VnfLcmOpOcc {
    lcm.instantiate(
        &inst.id,
        req(json!({"flavourId": "simple", "vimConnectionInfo": memory_vims()})),
    )
    .await
    .expect("instantiate accepted")
}

/// Asserts `done` ended FAILED_TEMP at `step` because of a panic saying `says`, that nothing
/// holds its lease and that the operator can end it.
async fn failed_by_panic(env: &Env, lcm: &Lcm, done: VnfLcmOpOcc, step: &str, says: &str) {
    assert_eq!(done.operation_state, State::FailedTemp, "{:?}", done.error);
    let error = done.error.clone().expect("error");
    assert!(error.detail.contains(step), "{}", error.detail);
    assert!(error.detail.contains("panicked"), "{}", error.detail);
    assert!(error.detail.contains(says), "{}", error.detail);
    assert_eq!(error.extra["step"], step);
    assert_eq!(env.steps(&done, StepOutcome::Failed).await, [step]);
    let t0 = std::time::Instant::now();
    while lcm.running_count() > 0 {
        assert!(t0.elapsed() < WAIT, "the panicked run is still registered");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let lease = env.store.lease(&done.id).await.expect("lease");
    assert!(lease.is_none(), "lease kept: {lease:?}");
    let failed = lcm.fail(&done.id).await.expect("fail accepted");
    assert_eq!(failed.operation_state, State::Failed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_driver_step_ends_failed_temp_and_frees_the_instance() {
    let env = Env::builder().vnfd(hello_vnfd()).build().await;
    let lcm = lcm_with(
        &env,
        Arc::new(PanickingInfra(MemoryInfraDriver::new())),
        Arc::new(RecordingMgmtDriver::new()),
        LcmConfig::default(),
    );
    let inst = env.create(&hello_vnfd().descriptor_id).await;
    let op = instantiate(&lcm, &inst).await;
    let done = lcm
        .wait(&op.id, WAIT)
        .await
        .expect("the occurrence came to rest");
    failed_by_panic(&env, &lcm, done, "infra:instantiate", "too big").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_hook_ends_failed_temp_and_frees_the_instance() {
    let env = Env::builder().build().await;
    let lcm = lcm_with(
        &env,
        Arc::new(MemoryInfraDriver::new()),
        Arc::new(PanickingMgmt),
        LcmConfig::default(),
    );
    let inst = env.create("vnfd-hooks").await;
    let op = instantiate(&lcm, &inst).await;
    let done = lcm
        .wait(&op.id, WAIT)
        .await
        .expect("the occurrence came to rest");
    failed_by_panic(
        &env,
        &lcm,
        done,
        "hook:instantiate_start",
        "hook script table has no entry for instantiate_start",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_that_keeps_stopping_its_runner_is_not_resumed_forever() {
    // Runner A starts the (slow) step; B and C, each an hour further ahead, see the previous
    // runner's lease as expired: as if the step had taken each process down.
    let slow = || Arc::new(MemoryInfraDriver::new().with_delay(Duration::from_secs(30)));
    let env = Env::builder()
        .vnfd(hello_vnfd())
        .infra_delay(Duration::from_secs(30))
        .config(|c| c.with_lease_ttl(Duration::from_millis(600)))
        .build()
        .await;
    let inst = env.create(&hello_vnfd().descriptor_id).await;
    let op = instantiate(&env.lcm, &inst).await;
    let t0 = std::time::Instant::now();
    while env.infra.calls().is_empty() {
        assert!(t0.elapsed() < WAIT);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let ahead = |hours: u64| LcmConfig {
        clock: Arc::new(Ahead(Duration::from_secs(3600 * hours))),
        max_resume_attempts: 1,
        ..LcmConfig::default()
    };
    let b = lcm_with(&env, slow(), Arc::new(RecordingMgmtDriver::new()), ahead(1));
    assert_eq!(
        b.recover().await.unwrap().resumed,
        std::slice::from_ref(&op.id)
    );
    let c = lcm_with(&env, slow(), Arc::new(RecordingMgmtDriver::new()), ahead(2));
    let report = c.recover().await.unwrap();
    assert_eq!(report.failed, std::slice::from_ref(&op.id), "{report:?}");
    let occ = c.get_op_occ(&op.id).await.unwrap();
    assert_eq!(occ.operation_state, State::FailedTemp);
    let detail = occ.error.expect("error").detail;
    assert!(
        detail.contains("during step infra:instantiate (1/1) 2 times in a row"),
        "{detail}"
    );
    // The operator's retry starts a fresh count: recovery would resume it again.
    let retried = c.retry(&op.id).await.expect("retry accepted");
    assert_eq!(retried.operation_state, State::Processing);
    let d = lcm_with(&env, slow(), Arc::new(RecordingMgmtDriver::new()), ahead(3));
    assert_eq!(
        d.recover().await.unwrap().resumed,
        std::slice::from_ref(&op.id)
    );
    d.shutdown(Duration::from_millis(100)).await;
    c.shutdown(Duration::from_millis(100)).await;
    b.shutdown(Duration::from_millis(100)).await;
    env.lcm.shutdown(Duration::from_millis(100)).await;
}
