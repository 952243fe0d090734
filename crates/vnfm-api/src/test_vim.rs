//! The driver of the test VIM type `TEST.NOOP.V_1` (`--enable-test-vim`): the in-memory
//! driver, plus faults a client asks for per operation, so that conformance suites and demos
//! reach the states a VIM that never fails cannot show (`FAILED_TEMP`, a long `PROCESSING`,
//! a failing rollback) through the public API alone.
//!
//! The request's `additionalParams.testVim` object steers it:
//!
//! | key | effect |
//! |---|---|
//! | `failures` | the first N forward infrastructure steps of the occurrence fail (a retry after them succeeds) |
//! | `rollbackFailures` | the first N rollback steps of the occurrence fail (a rollback after them succeeds) |
//!
//! An injected failure is transient (`errorKind: transient`, `retryable: true`, status 503):
//! retrying the occurrence (or rolling it back again) succeeds once the requested failures
//! are used up, and the error says how many remain.
//! | `delaySeconds` | every step of the occurrence takes that long (cut short by cancel and the step deadline) |
//!
//! The resources live in the memory of the server process: after a restart (or on another
//! replica) an instance instantiated before has none here, and every step that needs them
//! (scale, heal, operate, change flavour, external connectivity or package, and their
//! rollbacks) fails permanently saying so; terminate still succeeds, so the instance can be
//! terminated and instantiated again.
//!
//! A task request whose `testVim` holds anything else (a negative count, a delay beyond an
//! hour) is refused with a 400 naming the member. Requests without it behave exactly as with the in-memory driver. Other VIM types are not
//! affected: this driver serves `TEST.NOOP.V_1` only.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, Request, State};
use axum::http::{Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use vnfm_driver_api::infra::InfraOperation;
use vnfm_driver_api::memory::MemoryInfraDriver;
use vnfm_driver_api::{DriverError, InfraDriver, InfraOutcome, InfraRequest};
use vnfm_types::{KeyValuePairs, OperationParams, VnfLcmOpOccId};

use crate::error::ApiError;
use crate::route_table::Effect;
use crate::state::AppState;

/// Longest delay honoured (a step deadline normally ends it sooner).
const MAX_DELAY: Duration = Duration::from_secs(3600);

/// What `additionalParams.testVim` asks for.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(crate) struct Faults {
    failures: u64,
    rollback_failures: u64,
    delay: Duration,
}

impl Faults {
    /// Reads `testVim` from the request's `additionalParams`; absent or malformed members
    /// mean no fault.
    pub(crate) fn of(params: &OperationParams) -> Faults {
        let Some(test) = additional_params(params).and_then(|p| p.get("testVim")) else {
            return Faults::default();
        };
        let count = |key: &str| test.get(key).and_then(Value::as_u64).unwrap_or(0);
        let delay = test
            .get("delaySeconds")
            .and_then(Value::as_f64)
            .filter(|s| s.is_finite() && *s > 0.0)
            .map(|s| Duration::try_from_secs_f64(s).map_or(MAX_DELAY, |d| d.min(MAX_DELAY)))
            .unwrap_or_default();
        Faults {
            failures: count("failures"),
            rollback_failures: count("rollbackFailures"),
            delay,
        }
    }
}

/// The fault hook of the crash tests, honoured only with `vnfm serve --enable-test-vim`: a
/// request whose `Idempotency-Key` is this environment variable's value stops for good once
/// its handler answered it with a success (its change committed) and before the idempotency
/// layer keeps that answer, so a test can kill the process in that window.
pub const STALL_AFTER_COMMIT_ENV: &str = "VNFM_TEST_STALL_AFTER_COMMIT";

/// Middleware the router adds only when the test VIM is enabled, inside the idempotency
/// layer: the hook of [`STALL_AFTER_COMMIT_ENV`].
pub(crate) async fn stall_after_commit(request: Request, next: Next) -> Response {
    let stall = std::env::var(STALL_AFTER_COMMIT_ENV)
        .is_ok_and(|k| crate::idempotency::key_of(request.headers()).is_some_and(|key| key == k));
    let response = next.run(request).await;
    if stall && response.status().is_success() {
        tracing::warn!(
            "{STALL_AFTER_COMMIT_ENV}: the request is committed and will not be answered"
        );
        std::future::pending::<()>().await;
    }
    response
}

/// Middleware the router adds only when the test VIM is enabled (`--enable-test-vim`): a
/// lifecycle task's JSON body is checked with [`check_request`] before the task's handler
/// runs, so the handlers of the production path know nothing of the test VIM.
pub(crate) async fn check_task_requests(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    let is_task = request.method() == Method::POST
        && state
            .route_of(request.extensions())
            .is_some_and(|route| route.effect(&Method::POST) == Effect::Task)
        && request
            .headers()
            .get(header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !is_task {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    // The same body limit and rejection the handler's extractor would give.
    let body = match Bytes::from_request(Request::from_parts(parts.clone(), body), &()).await {
        Ok(body) => body,
        Err(rejection) => return rejection.into_response(),
    };
    if let Err(e) = check_request(&state, &body) {
        return e.into_response();
    }
    next.run(Request::from_parts(parts, Body::from(body))).await
}

/// Refuses a task request body whose `additionalParams.testVim` the test VIM could not honour
/// (a request the test VIM is not enabled for is not looked at): `failures` and
/// `rollbackFailures` are counts, `delaySeconds` a number of seconds from 0 to 3600.
pub(crate) fn check_request(state: &AppState, body: &[u8]) -> Result<(), ApiError> {
    const MARK: &[u8] = b"testVim";
    if !state.options.enable_test_vim || !body.windows(MARK.len()).any(|w| w == MARK) {
        return Ok(());
    }
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        return Ok(());
    };
    let Some(test) = value.pointer("/additionalParams/testVim") else {
        return Ok(());
    };
    let pointer = |key: &str| format!("/additionalParams/testVim/{key}");
    let Some(test) = test.as_object() else {
        return Err(ApiError::invalid(
            "/additionalParams/testVim",
            "additionalParams.testVim must be an object (keys failures, rollbackFailures, delaySeconds)",
        ));
    };
    for key in ["failures", "rollbackFailures"] {
        if let Some(v) = test.get(key)
            && v.as_u64().is_none()
        {
            return Err(ApiError::invalid(
                pointer(key),
                format!("additionalParams.testVim.{key} must be a whole number of at least 0"),
            ));
        }
    }
    if let Some(v) = test.get("delaySeconds") {
        let max = MAX_DELAY.as_secs_f64();
        if !v.as_f64().is_some_and(|s| (0.0..=max).contains(&s)) {
            return Err(ApiError::invalid(
                pointer("delaySeconds"),
                format!(
                    "additionalParams.testVim.delaySeconds must be a number of seconds from 0 to {max}"
                ),
            ));
        }
    }
    Ok(())
}

fn additional_params(params: &OperationParams) -> Option<&KeyValuePairs> {
    match params {
        OperationParams::Other(map) => map.get("additionalParams").and_then(Value::as_object),
        known => vnfm_driver_api::additional_params_of(known),
    }
}

fn is_rollback(op: InfraOperation) -> bool {
    matches!(
        op,
        InfraOperation::RollbackInstantiate
            | InfraOperation::RollbackScale
            | InfraOperation::RollbackChangeExtConn
            | InfraOperation::RollbackChangeVnfpkg
    )
}

/// The driver of the test VIM type [`crate::state::TEST_VIM_TYPE`], for the composition root
/// to register (`vnfm serve --enable-test-vim`) together with
/// [`crate::StateOptions::enable_test_vim`].
pub fn test_vim_driver() -> std::sync::Arc<dyn InfraDriver> {
    std::sync::Arc::new(TestVimDriver::new(crate::state::TEST_VIM_TYPE))
}

/// The in-memory driver with per-operation faults (see the module documentation).
pub(crate) struct TestVimDriver {
    inner: MemoryInfraDriver,
    /// Failures already injected, per occurrence: (forward, rollback).
    injected: Mutex<HashMap<VnfLcmOpOccId, (u64, u64)>>,
}

impl TestVimDriver {
    pub(crate) fn new(vim_type: &'static str) -> TestVimDriver {
        TestVimDriver {
            inner: MemoryInfraDriver::new()
                .with_vim_types(&[vim_type])
                .without_call_log(),
            injected: Mutex::new(HashMap::new()),
        }
    }

    /// Refuses a step that needs resources this process does not hold: the test VIM keeps
    /// them in memory, so a restarted server (or another replica) has none for an instance
    /// instantiated before. Instantiate creates them and terminate needs none.
    fn check_resources(&self, req: &InfraRequest) -> Result<(), DriverError> {
        let creates_or_ends = matches!(
            req.step.operation(),
            InfraOperation::Instantiate
                | InfraOperation::Terminate
                | InfraOperation::RollbackInstantiate
        );
        if creates_or_ends || self.inner.inventory(&req.instance.id).is_some() {
            return Ok(());
        }
        Err(DriverError::permanent(format!(
            "the test VIM keeps VNF resources in the memory of the server process that made them, and holds no resources for VNF instance {}: they were lost when the server restarted (or another replica made them); fail this occurrence (vnfm op fail), terminate the instance and instantiate it again",
            req.instance.id
        )))
    }

    /// Applies the requested delay and failure before the in-memory driver runs the step.
    async fn inject(&self, req: &InfraRequest) -> Result<(), DriverError> {
        let faults = Faults::of(&req.request);
        let op = req.step.operation();
        let what = format!("test VIM {op}");
        if !faults.delay.is_zero() {
            let end = Instant::now() + faults.delay;
            while Instant::now() < end {
                req.control.check(&what)?;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        let rollback = is_rollback(op);
        let allowed = if rollback {
            faults.rollback_failures
        } else {
            faults.failures
        };
        if allowed == 0 {
            return Ok(());
        }
        let mut injected = self.injected.lock().unwrap_or_else(|e| e.into_inner());
        let counts = injected.entry(req.op_occ_id.clone()).or_default();
        let done = if rollback {
            &mut counts.1
        } else {
            &mut counts.0
        };
        if *done < allowed {
            *done += 1;
            // Transient (`retryable: true`): the failures are counted per occurrence, so
            // retrying it (or its rollback) succeeds once they are used up.
            let next = match allowed - *done {
                0 => "the next attempt succeeds".to_owned(),
                1 => "1 more attempt fails before one succeeds".to_owned(),
                n => format!("{n} more attempts fail before one succeeds"),
            };
            return Err(DriverError::transient(format!(
                "{what}: failure {done} of {allowed} requested by additionalParams.testVim; {next}"
            )));
        }
        Ok(())
    }
}

// `#[async_trait]` must see the methods themselves, so the macro writes the whole impl.
macro_rules! faulty_impl {
    ($($method:ident),* $(,)?) => {
        #[async_trait]
        impl InfraDriver for TestVimDriver {
            fn name(&self) -> &str {
                "test-vim"
            }

            fn vim_types(&self) -> &[&str] {
                self.inner.vim_types()
            }

            $(
                async fn $method(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
                    self.check_resources(req)?;
                    self.inject(req).await?;
                    self.inner.$method(req).await
                }
            )*
        }
    };
}

faulty_impl!(
    instantiate,
    terminate,
    scale,
    scale_to_level,
    heal,
    operate,
    change_ext_conn,
    change_flavour,
    change_vnfpkg,
    rollback_instantiate,
    rollback_scale,
    rollback_change_ext_conn,
    rollback_change_vnfpkg,
);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn scale(additional: Value) -> OperationParams {
        OperationParams::Scale(
            serde_json::from_value(json!({
                "type": "SCALE_OUT", "aspectId": "a", "additionalParams": additional
            }))
            .unwrap_or_else(|e| panic!("{e}")),
        )
    }

    #[test]
    fn faults_are_read_from_additional_params() {
        let f = Faults::of(&scale(
            json!({"testVim": {"failures": 2, "rollbackFailures": 1, "delaySeconds": 1.5}}),
        ));
        assert_eq!(f.failures, 2);
        assert_eq!(f.rollback_failures, 1);
        assert_eq!(f.delay, Duration::from_millis(1500));
    }

    #[test]
    fn malformed_or_absent_faults_mean_none() {
        assert_eq!(Faults::of(&scale(json!({}))), Faults::default());
        let f = Faults::of(&scale(
            json!({"testVim": {"failures": "x", "delaySeconds": -3}}),
        ));
        assert_eq!(f, Faults::default());
        let f = Faults::of(&scale(json!({"testVim": {"delaySeconds": 1e12}})));
        assert_eq!(f.delay, MAX_DELAY);
        let f = Faults::of(&scale(json!({"testVim": {"delaySeconds": 1e308}})));
        assert_eq!(f.delay, MAX_DELAY);
    }
}
