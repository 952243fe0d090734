//! Why an operation failed: the occurrence's `error` names the layer that failed
//! (infrastructure driver, management driver hook, VNFM) and whether a retry can help, does not
//! repeat itself, and the failure is logged once at warn with the occurrence, step and error.

use crate::log_capture::logs;
use crate::runner_support;

use runner_support::*;
use serde_json::json;
use vnfm_driver_api::{DriverError, InfraOperation};
use vnfm_types::{LcmOperationStateType as State, VnfLcmOpOcc};

async fn failed(env: &Env) -> VnfLcmOpOcc {
    let inst = env.create("vnfd-hooks").await;
    let op = env
        .lcm
        .instantiate(
            &inst.id,
            req(json!({"flavourId": "simple", "vimConnectionInfo": memory_vims()})),
        )
        .await
        .expect("instantiate accepted");
    let done = env.done(&op).await;
    assert_eq!(done.operation_state, State::FailedTemp);
    done
}

/// The log lines reporting a failed step of `occ`.
fn failure_lines(occ: &VnfLcmOpOcc) -> Vec<String> {
    logs()
        .lines()
        .filter(|l| l.contains("operation step failed") && l.contains(&occ.id.to_string()))
        .map(str::to_owned)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_infrastructure_failure_is_titled_as_such_and_logged_once() {
    logs();
    let env = Env::builder().build().await;
    env.infra.fail_next(
        InfraOperation::Instantiate,
        DriverError::permanent("quota exceeded for instances"),
    );
    let done = failed(&env).await;
    let error = done.error.clone().expect("error");
    assert_eq!(
        error.title.as_deref(),
        Some("Infrastructure operation failed")
    );
    assert_eq!(
        error.detail,
        "step infra:instantiate (2/3) failed: quota exceeded for instances"
    );
    assert_eq!(error.extra["layer"], "infrastructure");
    assert_eq!(error.extra["errorKind"], "permanent");
    assert_eq!(error.extra["retryable"], false);
    let lines = failure_lines(&done);
    assert_eq!(lines.len(), 1, "{lines:#?}");
    let line = &lines[0];
    assert!(line.contains("WARN"), "{line}");
    assert!(line.contains("step=\"infra:instantiate\""), "{line}");
    assert!(line.contains("layer=\"infrastructure\""), "{line}");
    assert!(
        line.contains("error=step infra:instantiate (2/3) failed: quota exceeded for instances"),
        "{line}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_failure_names_the_management_driver_and_says_it_once() {
    logs();
    let env = Env::builder().build().await;
    // As a script driver reports an exit: its stderr both in the message and as the source.
    let stderr = std::io::Error::other("Exception: bootstrap failed on purpose");
    env.mgmt.fail_next(
        "instantiate_end",
        DriverError::transient(
            "hook instantiate_end: the script failed (exit status 3): Exception: bootstrap failed on purpose",
        )
        .with_source(stderr),
    );
    let done = failed(&env).await;
    let error = done.error.clone().expect("error");
    assert_eq!(
        error.title.as_deref(),
        Some("Management driver hook failed (retrying may succeed)")
    );
    assert_eq!(
        error.detail,
        "step hook:instantiate_end (3/3) failed: hook instantiate_end: the script failed (exit status 3): Exception: bootstrap failed on purpose (transient: retrying may succeed)"
    );
    assert_eq!(
        error.detail.matches("bootstrap failed on purpose").count(),
        1
    );
    assert_eq!(error.extra["layer"], "managementDriver");
    assert_eq!(error.extra["retryable"], true);
    let lines = failure_lines(&done);
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert!(
        lines[0].contains("step=\"hook:instantiate_end\""),
        "{}",
        lines[0]
    );

    // A permanent hook failure is not retryable, and still names the management driver.
    let env = Env::builder().build().await;
    env.mgmt.fail_next(
        "instantiate_start",
        DriverError::permanent("cluster bootstrap failed"),
    );
    let done = failed(&env).await;
    let error = done.error.expect("error");
    assert_eq!(
        error.title.as_deref(),
        Some("Management driver hook failed")
    );
    assert_eq!(
        error.detail,
        "step hook:instantiate_start (1/3) failed: cluster bootstrap failed"
    );
    assert_eq!(error.extra["retryable"], false);
}
