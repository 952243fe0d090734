//! The infrastructure driver's check of a request before the occurrence starts
//! (`InfraDriver::check_request`): a refusal is the answer to the request (422, the driver's
//! message), nothing of the operation is stored and the driver runs no step; an accepted
//! request runs as usual.

use crate::runner_support;

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use runner_support::*;
use serde_json::json;
use vnfm_driver_api::memory::{MemoryInfraDriver, RecordingMgmtDriver};
use vnfm_driver_api::{DriverError, InfraDriver, InfraOutcome, InfraRequest, InfraStep};
use vnfm_lcm::{LcmConfig, LcmError};
use vnfm_store::OpOccQuery;
use vnfm_types::{ErrorKind, InstantiationState, LcmOperationStateType as State, OperationParams};

/// The in-memory driver, refusing every request whose `additionalParams` carry `refuse`, and
/// recording the steps it was asked to check.
struct Picky {
    inner: MemoryInfraDriver,
    checked: Mutex<Vec<String>>,
}

#[async_trait]
impl InfraDriver for Picky {
    fn name(&self) -> &str {
        "picky"
    }

    fn vim_types(&self) -> &[&str] {
        self.inner.vim_types()
    }

    fn check_request(
        &self,
        step: &InfraStep,
        request: &OperationParams,
    ) -> Result<(), DriverError> {
        self.checked
            .lock()
            .unwrap()
            .push(step.operation().name().to_string());
        match vnfm_driver_api::additional_params_of(request).and_then(|p| p.get("refuse")) {
            Some(why) => Err(DriverError::invalid_input(format!("cannot do {why}"))),
            None => Ok(()),
        }
    }

    async fn instantiate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.inner.instantiate(req).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_the_driver_refuses_is_answered_422_and_nothing_starts() {
    let env = Env::builder().vnfd(hello_vnfd()).build().await;
    let picky = Arc::new(Picky {
        inner: MemoryInfraDriver::new(),
        checked: Mutex::new(Vec::new()),
    });
    let lcm = lcm_with(
        &env,
        picky.clone(),
        Arc::new(RecordingMgmtDriver::new()),
        LcmConfig::default(),
    );
    let inst = env.create(&hello_vnfd().descriptor_id).await;
    let refused = lcm
        .instantiate(
            &inst.id,
            req(
                json!({"flavourId": "simple", "vimConnectionInfo": memory_vims(),
                       "additionalParams": {"refuse": "that"}}),
            ),
        )
        .await
        .expect_err("the driver refuses");
    assert_eq!(refused.kind(), ErrorKind::Unprocessable, "{refused}");
    assert!(
        matches!(&refused, LcmError::RefusedByDriver { driver, message, .. }
            if driver == "picky" && message == "cannot do \"that\""),
        "{refused:?}"
    );
    assert!(refused.to_string().contains("cannot do"), "{refused}");
    assert_eq!(*picky.checked.lock().unwrap(), ["instantiate"]);
    let occs = env
        .store
        .list_op_occs(&OpOccQuery::default())
        .await
        .unwrap();
    assert!(occs.items.is_empty(), "{:?}", occs.items);
    let now = lcm.get_instance(&inst.id).await.unwrap();
    assert_eq!(now.instantiation_state, InstantiationState::NotInstantiated);

    // Without the parameter the driver accepts, and the operation runs on it.
    let op = lcm
        .instantiate(
            &inst.id,
            req(json!({"flavourId": "simple", "vimConnectionInfo": memory_vims()})),
        )
        .await
        .expect("accepted");
    let done = lcm.wait(&op.id, WAIT).await.unwrap();
    assert_eq!(done.operation_state, State::Completed, "{:?}", done.error);
    assert_eq!(picky.checked.lock().unwrap().len(), 2);
}
