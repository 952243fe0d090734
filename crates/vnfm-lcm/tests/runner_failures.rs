//! Failures, operator actions and cancellation through the runner: a step failure names the
//! step and leaves the occurrence FAILED_TEMP; retry resumes at the failed step; rollback
//! undoes what was done; fail ends it; cancellation (GRACEFUL, FORCEFUL, in STARTING) stops it;
//! the per-instance lock refuses concurrent operations (also under 50 parallel requests, on
//! SQLite and PostgreSQL); invalid requests leave nothing behind.

use crate::runner_support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use runner_support::*;
use serde_json::json;
use vnfm_driver_api::memory::MEMORY_VIM_TYPE;
use vnfm_driver_api::{DriverError, InfraOperation};
use vnfm_lcm::LcmError;
use vnfm_store::{OpOccQuery, StepOutcome};
use vnfm_types::{
    CancelModeType, InstantiationState, LcmOperationStateType as State, VnfInstance, VnfLcmOpOcc,
};

const INSTANTIATE_STEPS: [&str; 3] = [
    "hook:instantiate_start",
    "infra:instantiate",
    "hook:instantiate_end",
];

fn inject(env: &Env, step: &str) {
    match step {
        "hook:instantiate_start" => env.mgmt.fail_next(
            "instantiate_start",
            DriverError::transient("plugin lost its SSH session"),
        ),
        "infra:instantiate" => env.infra.fail_next(
            InfraOperation::Instantiate,
            DriverError::permanent("quota exceeded for instances"),
        ),
        "hook:instantiate_end" => env.mgmt.fail_next(
            "instantiate_end",
            DriverError::permanent("cluster bootstrap failed"),
        ),
        other => panic!("no injection for {other}"),
    }
}

async fn instantiate(env: &Env, inst: &VnfInstance) -> VnfLcmOpOcc {
    env.lcm
        .instantiate(
            &inst.id,
            req(json!({"flavourId": "simple", "vimConnectionInfo": memory_vims()})),
        )
        .await
        .expect("instantiate accepted")
}

async fn failed_at(env: &Env, step: &str) -> (VnfInstance, VnfLcmOpOcc) {
    let inst = env.create("vnfd-hooks").await;
    inject(env, step);
    let op = instantiate(env, &inst).await;
    let done = env.done(&op).await;
    assert_eq!(done.operation_state, State::FailedTemp, "{step}");
    (inst, done)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_at_each_instantiate_step_names_the_step_and_retry_resumes_there() {
    for (k, step) in INSTANTIATE_STEPS.iter().enumerate() {
        let env = Env::builder().build().await;
        let (inst, done) = failed_at(&env, step).await;
        let error = done.error.clone().expect("error");
        assert!(error.detail.contains(step), "{step}: {}", error.detail);
        assert_eq!(error.extra["step"], *step);
        assert!(done.links.retry.is_some() && done.links.cancel.is_none());
        assert_eq!(
            env.steps(&done, StepOutcome::Completed).await,
            INSTANTIATE_STEPS[..k]
        );
        assert_eq!(env.steps(&done, StepOutcome::Failed).await, [*step]);
        assert_eq!(
            env.op_notes(&done).await,
            notes(&[
                ("STARTING", "START"),
                ("PROCESSING", "START"),
                ("FAILED_TEMP", "RESULT")
            ])
        );
        // The RESULT notification carries the error.
        let last = env.outbox().await.pop().unwrap();
        assert_eq!(last["error"]["detail"], error.detail.as_str());
        // FAILED_TEMP holds the instance, which stays NOT_INSTANTIATED until the INSTANTIATE
        // completes; the store keeps what the infrastructure step created.
        let holder = env.store.active_op_occ(&inst.id).await.unwrap().unwrap();
        assert_eq!(holder.0.id, done.id);
        let state = env.instance(&inst.id).await.instantiation_state;
        assert_eq!(state, InstantiationState::NotInstantiated, "{step}");
        let (stored, _) = env.store.get_instance(&inst.id).await.unwrap().unwrap();
        let infra_done = k > 1;
        assert_eq!(
            vnfcs(&stored, None),
            if infra_done { 2 } else { 0 },
            "{step}"
        );

        let retried = env.lcm.retry(&done.id).await.unwrap();
        assert_eq!(retried.operation_state, State::Processing);
        assert_eq!(retried.error, Some(error), "the error stays while retrying");
        let done = env.completed(retried).await;
        assert!(done.error.is_none());
        assert_eq!(
            env.steps(&done, StepOutcome::Completed).await,
            INSTANTIATE_STEPS
        );
        // The failed step ran again; the ones before it did not.
        let (hooks, infra): (Vec<String>, Vec<InfraOperation>) =
            (env.mgmt.operations(), env.infra.operations());
        let (want_hooks, want_infra): (&[&str], &[InfraOperation]) = match k {
            0 => (
                &["instantiate_start", "instantiate_start", "instantiate_end"],
                &[InfraOperation::Instantiate],
            ),
            1 => (
                &["instantiate_start", "instantiate_end"],
                &[InfraOperation::Instantiate, InfraOperation::Instantiate],
            ),
            _ => (
                &["instantiate_start", "instantiate_end", "instantiate_end"],
                &[InfraOperation::Instantiate],
            ),
        };
        assert_eq!(hooks, want_hooks, "{step}");
        assert_eq!(infra, want_infra, "{step}");
        assert_eq!(
            env.op_notes(&done).await[3..],
            notes(&[("PROCESSING", "START"), ("COMPLETED", "RESULT")])
        );
        let i = env.instance(&inst.id).await;
        assert_eq!(i.instantiation_state, InstantiationState::Instantiated);
        assert_eq!(vnfcs(&i, None), 2);
        assert!(env.store.active_op_occ(&inst.id).await.unwrap().is_none());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_after_a_failure_at_each_step_undoes_the_infrastructure() {
    for (k, step) in INSTANTIATE_STEPS.iter().enumerate() {
        let env = Env::builder().build().await;
        let (inst, done) = failed_at(&env, step).await;
        let rolling = env.lcm.rollback(&done.id).await.unwrap();
        assert_eq!(rolling.operation_state, State::RollingBack);
        let done = env.done(&rolling).await;
        assert_eq!(
            done.operation_state,
            State::RolledBack,
            "{step}: {:?}",
            done.error
        );
        let (want_hooks, want_infra): (&[&str], &[InfraOperation]) = match k {
            // Nothing had been done: nothing to undo, no rollback hooks.
            0 => (&["instantiate_start"], &[]),
            // The failed infra step may have created resources: its inverse runs.
            1 => (
                &[
                    "instantiate_start",
                    "instantiate_rollback_start",
                    "instantiate_rollback_end",
                ],
                &[
                    InfraOperation::Instantiate,
                    InfraOperation::RollbackInstantiate,
                ],
            ),
            _ => (
                &[
                    "instantiate_start",
                    "instantiate_end",
                    "instantiate_rollback_start",
                    "instantiate_rollback_end",
                ],
                &[
                    InfraOperation::Instantiate,
                    InfraOperation::RollbackInstantiate,
                ],
            ),
        };
        assert_eq!(env.mgmt.operations(), want_hooks, "{step}");
        assert_eq!(env.infra.operations(), want_infra, "{step}");
        assert!(env.infra.inventory(&inst.id).is_none(), "{step}");
        let i = env.instance(&inst.id).await;
        assert_eq!(i.instantiation_state, InstantiationState::NotInstantiated);
        assert!(i.instantiated_vnf_info.is_none());
        // The VIM connections the request brought are gone with it.
        assert!(
            i.vim_connection_info.as_ref().is_none_or(|m| m.is_empty()),
            "{step}: {:?}",
            i.vim_connection_info
        );
        assert_eq!(
            env.op_notes(&done).await[3..],
            notes(&[("ROLLING_BACK", "START"), ("ROLLED_BACK", "RESULT")])
        );
        // The instance is free again.
        let op = instantiate(&env, &inst).await;
        env.completed(op).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_rollback_is_resumed_by_rolling_back_again_but_not_retried() {
    let env = Env::builder().build().await;
    let (inst, done) = failed_at(&env, "hook:instantiate_end").await;
    env.infra.fail_next(
        InfraOperation::RollbackInstantiate,
        DriverError::transient("Heat is unavailable"),
    );
    let rolling = env.lcm.rollback(&done.id).await.unwrap();
    let failed = env.done(&rolling).await;
    assert_eq!(failed.operation_state, State::FailedTemp);
    assert!(
        failed
            .error
            .as_ref()
            .unwrap()
            .detail
            .contains("infra:rollback_instantiate")
    );
    let err = env.lcm.retry(&done.id).await.unwrap_err();
    assert!(matches!(err, LcmError::RetryAfterRollback { .. }), "{err}");
    assert_eq!(err.kind().status(), 409);
    let rolling = env.lcm.rollback(&done.id).await.unwrap();
    let done = env.done(&rolling).await;
    assert_eq!(done.operation_state, State::RolledBack);
    // The rollback resumed at its failed step: the start hook ran once.
    assert_eq!(
        env.mgmt.operations(),
        [
            "instantiate_start",
            "instantiate_end",
            "instantiate_rollback_start",
            "instantiate_rollback_end"
        ]
    );
    assert_eq!(
        env.infra.operations(),
        [
            InfraOperation::Instantiate,
            InfraOperation::RollbackInstantiate,
            InfraOperation::RollbackInstantiate
        ]
    );
    assert_eq!(
        env.instance(&inst.id).await.instantiation_state,
        InstantiationState::NotInstantiated
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_ends_the_occurrence_and_frees_the_instance() {
    let env = Env::builder().build().await;
    let (inst, done) = failed_at(&env, "infra:instantiate").await;
    let failed = env.lcm.fail(&done.id).await.unwrap();
    assert_eq!(failed.operation_state, State::Failed);
    assert!(failed.error.is_some());
    assert!(failed.links.retry.is_none());
    assert_eq!(
        env.op_notes(&failed).await.last().unwrap(),
        &("FAILED".to_string(), "RESULT".to_string())
    );
    assert!(env.store.active_op_occ(&inst.id).await.unwrap().is_none());
    for e in [
        env.lcm.retry(&done.id).await.unwrap_err(),
        env.lcm.rollback(&done.id).await.unwrap_err(),
        env.lcm.fail(&done.id).await.unwrap_err(),
    ] {
        assert_eq!(e.kind().status(), 409, "{e}");
    }
    let op = instantiate(&env, &inst).await;
    env.completed(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminate_cannot_be_rolled_back() {
    let env = Env::builder().build().await;
    let inst = env.create("vnfd-hooks").await;
    let op = instantiate(&env, &inst).await;
    env.completed(op).await;
    env.infra.fail_next(
        InfraOperation::Terminate,
        DriverError::permanent("stack delete failed"),
    );
    let op = env
        .lcm
        .terminate(&inst.id, req(json!({"terminationType": "FORCEFUL"})))
        .await
        .unwrap();
    let done = env.done(&op).await;
    assert_eq!(done.operation_state, State::FailedTemp);
    let err = env.lcm.rollback(&op.id).await.unwrap_err();
    assert!(
        matches!(err, LcmError::RollbackNotSupported { .. }),
        "{err}"
    );
    assert_eq!(err.kind().status(), 409);
    assert_eq!(
        env.lcm.get_op_occ(&op.id).await.unwrap().operation_state,
        State::FailedTemp
    );
    // Retrying the terminate works.
    let op = env.lcm.retry(&op.id).await.unwrap();
    env.completed(op).await;
}

async fn until(what: &str, mut f: impl AsyncFnMut() -> bool) {
    let started = Instant::now();
    while !f().await {
        assert!(started.elapsed() < WAIT, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_cancel_lets_the_running_step_finish_then_stops() {
    let env = Env::builder()
        .infra_delay(Duration::from_millis(800))
        .build()
        .await;
    let inst = env.create("vnfd-hooks").await;
    let op = instantiate(&env, &inst).await;
    until("the infra step", async || !env.infra.calls().is_empty()).await;
    env.lcm
        .cancel(&op.id, CancelModeType::Graceful)
        .await
        .unwrap();
    until("isCancelPending", async || {
        env.lcm.get_op_occ(&op.id).await.unwrap().is_cancel_pending
    })
    .await;
    let pending = env.lcm.get_op_occ(&op.id).await.unwrap();
    assert_eq!(pending.operation_state, State::Processing);
    assert_eq!(pending.cancel_mode, Some(CancelModeType::Graceful));
    let err = env
        .lcm
        .cancel(&op.id, CancelModeType::Forceful)
        .await
        .unwrap_err();
    assert!(matches!(err, LcmError::CancelPending { .. }), "{err}");

    let done = env.done(&op).await;
    assert_eq!(done.operation_state, State::FailedTemp);
    assert!(!done.is_cancel_pending && done.cancel_mode.is_none());
    let detail = &done.error.as_ref().unwrap().detail;
    assert!(
        detail.contains("GRACEFUL") && detail.contains("after step infra:instantiate"),
        "{detail}"
    );
    // The infra step finished; the end hook never ran.
    assert_eq!(env.infra.calls()[0].error, None);
    assert_eq!(env.mgmt.operations(), ["instantiate_start"]);
    assert_eq!(
        env.steps(&done, StepOutcome::Completed).await,
        INSTANTIATE_STEPS[..2]
    );
    assert_eq!(
        env.op_notes(&done).await,
        notes(&[
            ("STARTING", "START"),
            ("PROCESSING", "START"),
            ("FAILED_TEMP", "RESULT")
        ])
    );
    // Retry runs only what is left.
    let op = env.lcm.retry(&op.id).await.unwrap();
    env.completed(op).await;
    assert_eq!(
        env.mgmt.operations(),
        ["instantiate_start", "instantiate_end"]
    );
    assert_eq!(env.infra.operations(), [InfraOperation::Instantiate]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forceful_cancel_interrupts_the_running_step() {
    let env = Env::builder()
        .infra_delay(Duration::from_secs(5))
        .build()
        .await;
    let inst = env.create("vnfd-hooks").await;
    let op = instantiate(&env, &inst).await;
    until("the infra step", async || !env.infra.calls().is_empty()).await;
    let t0 = Instant::now();
    env.lcm
        .cancel(&op.id, CancelModeType::Forceful)
        .await
        .unwrap();
    let done = env.done(&op).await;
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    assert_eq!(done.operation_state, State::FailedTemp);
    let error = done.error.clone().unwrap();
    assert!(error.detail.contains("FORCEFUL"), "{}", error.detail);
    assert_eq!(error.extra["step"], "infra:instantiate");
    // The driver saw the cancellation flag.
    assert_eq!(env.infra.calls()[0].error, Some("cancelled"));
    assert_eq!(
        env.steps(&done, StepOutcome::Failed).await,
        ["infra:instantiate"]
    );
    assert_eq!(env.mgmt.operations(), ["instantiate_start"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_in_starting_rolls_back_without_doing_anything() {
    let env = Env::builder()
        .vims(Arc::new(SlowVims(Duration::from_secs(3))))
        .build()
        .await;
    let inst = env.create("vnfd-hooks").await;
    let op = instantiate(&env, &inst).await;
    assert_eq!(
        env.lcm.get_op_occ(&op.id).await.unwrap().operation_state,
        State::Starting
    );
    let t0 = Instant::now();
    env.lcm
        .cancel(&op.id, CancelModeType::Graceful)
        .await
        .unwrap();
    let done = env.done(&op).await;
    assert!(t0.elapsed() < Duration::from_secs(2));
    assert_eq!(done.operation_state, State::RolledBack);
    assert!(env.infra.calls().is_empty() && env.mgmt.calls().is_empty());
    assert_eq!(
        env.op_notes(&done).await,
        notes(&[("STARTING", "START"), ("ROLLED_BACK", "RESULT")])
    );
    assert!(env.store.active_op_occ(&inst.id).await.unwrap().is_none());
    assert_eq!(
        env.instance(&inst.id).await.instantiation_state,
        InstantiationState::NotInstantiated
    );
    // Final occurrences cannot be cancelled.
    let err = env
        .lcm
        .cancel(&op.id, CancelModeType::Graceful)
        .await
        .unwrap_err();
    assert_eq!(err.kind().status(), 409);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_instance_is_busy_while_an_occurrence_holds_it() {
    let env = Env::builder()
        .infra_delay(Duration::from_millis(400))
        .build()
        .await;
    let inst = env.create("vnfd-hooks").await;
    env.infra.fail_next(
        InfraOperation::Instantiate,
        DriverError::transient("VIM busy"),
    );
    let op = instantiate(&env, &inst).await;
    let modify = || {
        env.lcm
            .modify_info(&inst.id, req(json!({"vnfInstanceName": "x"})))
    };
    match modify().await.unwrap_err() {
        LcmError::InstanceBusy {
            op_occ_id, state, ..
        } => {
            assert_eq!(op_occ_id, op.id.as_str());
            assert!(matches!(state, State::Starting | State::Processing));
        }
        other => panic!("expected InstanceBusy, got {other}"),
    }
    let done = env.done(&op).await;
    assert_eq!(done.operation_state, State::FailedTemp);
    let err = modify().await.unwrap_err();
    assert_eq!(err.kind().status(), 409);
    assert!(err.to_string().contains(op.id.as_str()), "{err}");
    assert!(err.to_string().contains("FAILED_TEMP"), "{err}");
    env.lcm.fail(&op.id).await.unwrap();
    let op = modify().await.unwrap();
    env.completed(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_requests_leave_nothing_behind() {
    let env = Env::builder().build().await;
    let inst = env.create("vnfd-hooks").await;
    let outbox = env.outbox().await.len();
    let (_, version) = env.store.get_instance(&inst.id).await.unwrap().unwrap();
    let cases: Vec<(LcmError, u16)> = vec![
        (
            env.lcm
                .instantiate(&inst.id, req(json!({"flavourId": "nope"})))
                .await
                .unwrap_err(),
            422,
        ),
        (
            env.lcm
                .scale(&inst.id, req(json!({"type": "SCALE_OUT", "aspectId": "VDU1_scale"})))
                .await
                .unwrap_err(),
            409,
        ),
        (
            env.lcm
                .instantiate(
                    &inst.id,
                    req(json!({"flavourId": "simple", "vimConnectionInfo": {"v": {"vimType": "no.such.TYPE"}}})),
                )
                .await
                .unwrap_err(),
            422,
        ),
    ];
    for (e, status) in cases {
        assert_eq!(e.kind().status(), status, "{e}");
    }
    let ops = env
        .lcm
        .list_op_occs(&OpOccQuery {
            vnf_instance_id: Some(inst.id.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(ops.items.is_empty());
    assert_eq!(env.outbox().await.len(), outbox);
    let (_, after) = env.store.get_instance(&inst.id).await.unwrap().unwrap();
    assert_eq!(after, version);
    assert!(env.infra.calls().is_empty() && env.mgmt.calls().is_empty());
    let missing = vnfm_types::VnfLcmOpOccId::new("nope");
    assert_eq!(
        env.lcm.retry(&missing).await.unwrap_err().kind().status(),
        404
    );
    assert_eq!(
        env.lcm
            .cancel(&missing, CancelModeType::Graceful)
            .await
            .unwrap_err()
            .kind()
            .status(),
        404
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn step_errors_never_carry_vim_secrets() {
    let env = Env::builder().build().await;
    let inst = env.create("vnfd-hooks").await;
    env.infra.fail_next(
        InfraOperation::Instantiate,
        DriverError::permanent("authentication with password s3cr3t-pa55 refused"),
    );
    let op = env
        .lcm
        .instantiate(
            &inst.id,
            req(
                json!({"flavourId": "simple", "vimConnectionInfo": {"vim1": {
                    "vimType": MEMORY_VIM_TYPE, "accessInfo": {"password": "s3cr3t-pa55"}
                }}}),
            ),
        )
        .await
        .unwrap();
    let done = env.done(&op).await;
    let detail = &done.error.as_ref().unwrap().detail;
    assert!(!detail.contains("s3cr3t-pa55"), "{detail}");
    assert!(detail.contains("password ***"), "{detail}");
    let last = env.outbox().await.pop().unwrap();
    assert!(!last["error"].to_string().contains("s3cr3t-pa55"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_over_its_time_budget_fails_with_a_timeout() {
    let env = Env::builder()
        .infra_delay(Duration::from_secs(5))
        .config(|mut c| {
            c.step_timeout = Duration::from_millis(200);
            c.forceful_grace = Duration::from_millis(200);
            c
        })
        .build()
        .await;
    let inst = env.create("vnfd-hooks").await;
    let t0 = Instant::now();
    let op = instantiate(&env, &inst).await;
    let done = env.done(&op).await;
    assert!(t0.elapsed() < Duration::from_secs(3));
    assert_eq!(done.operation_state, State::FailedTemp);
    let error = done.error.unwrap();
    assert_eq!(error.status, 504);
    assert_eq!(error.extra["errorKind"], "timeout");
}

async fn fifty_conflicting_instantiates(env: Env) {
    let inst = env.create("vnfd-hooks").await;
    let barrier = Arc::new(tokio::sync::Barrier::new(50));
    let mut tasks = Vec::new();
    for _ in 0..50 {
        let lcm = env.lcm.clone();
        let id = inst.id.clone();
        let barrier = barrier.clone();
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            lcm.instantiate(&id, req(json!({"flavourId": "simple"})))
                .await
        }));
    }
    let mut accepted = Vec::new();
    for t in tasks {
        match t.await.unwrap() {
            Ok(op) => accepted.push(op),
            Err(e) => {
                assert!(
                    matches!(
                        e,
                        LcmError::InstanceBusy { .. } | LcmError::AlreadyInstantiated { .. }
                    ),
                    "{e}"
                );
                assert_eq!(e.kind().status(), 409);
            }
        }
    }
    assert_eq!(accepted.len(), 1, "exactly one request is accepted");
    let ops = env
        .lcm
        .list_op_occs(&OpOccQuery {
            vnf_instance_id: Some(inst.id.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(ops.items.len(), 1);
    env.completed(accepted.remove(0)).await;
    assert_eq!(env.infra.operations(), [InfraOperation::Instantiate]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_parallel_instantiates_one_accepted_sqlite() {
    let env = Env::builder()
        .infra_delay(Duration::from_millis(300))
        .build()
        .await;
    fifty_conflicting_instantiates(env).await;
}

#[vnfm_test_env::needs(postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_parallel_instantiates_one_accepted_postgres() {
    let url = vnfm_test_env::var("VNFM_TEST_POSTGRES_URL");
    let env = Env::builder()
        .infra_delay(Duration::from_millis(300))
        .store_url(url)
        .build()
        .await;
    fifty_conflicting_instantiates(env).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hook_error_handling_data_is_handed_back_on_retry() {
    let env = Env::builder().build().await;
    env.mgmt.set_outcome(
        "instantiate_start",
        vnfm_driver_api::HookOutcome {
            error_handling_data: Some(json!({"bootstrapToken": "t-1"})),
            ..Default::default()
        },
    );
    let (_, done) = failed_at(&env, "hook:instantiate_end").await;
    let op = env.lcm.retry(&done.id).await.unwrap();
    env.completed(op).await;
    let data: Vec<(String, serde_json::Value)> = env
        .mgmt
        .calls()
        .into_iter()
        .map(|c| (c.operation, c.error_handling_data))
        .collect();
    assert_eq!(
        data,
        [
            ("instantiate_start".to_string(), serde_json::Value::Null),
            (
                "instantiate_end".to_string(),
                json!({"bootstrapToken": "t-1"})
            ),
            (
                "instantiate_end".to_string(),
                json!({"bootstrapToken": "t-1"})
            ),
        ]
    );
}
