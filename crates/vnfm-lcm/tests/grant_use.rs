//! Using the grant (SOL003 clause 9.5.2.3): the VIM connections and external virtual links an
//! NFVO adds in its grant reach the drivers and the instance, and go again on rollback; a
//! grant whose additions do not fit the VNFD fails the occurrence before anything is done;
//! grants decided later through a callback ([`DeferredGrants`]); a retry after the NFVO was
//! unreachable still records the request's VIM connections.

use crate::runner_support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use runner_support::*;
use serde_json::{Value, json};
use vnfm_driver_api::nfvo::grant_everything;
use vnfm_driver_api::{
    DecideError, DeferredGrants, DriverError, GrantDecision, InfraOperation, Nfvo,
};
use vnfm_types::{
    CancelModeType, Grant, GrantRequest, InstantiationState, LcmOperationStateType as State_,
    ProblemDetails,
};

/// Grants everything and adds `extra` (Grant attributes) to every grant; records requests.
struct AddingNfvo {
    extra: Value,
    asked: Mutex<Vec<GrantRequest>>,
    fail_next: Mutex<bool>,
}

impl AddingNfvo {
    fn new(extra: Value) -> Arc<AddingNfvo> {
        Arc::new(AddingNfvo {
            extra,
            asked: Mutex::new(Vec::new()),
            fail_next: Mutex::new(false),
        })
    }
}

#[async_trait]
impl Nfvo for AddingNfvo {
    async fn grant(&self, request: &GrantRequest) -> Result<GrantDecision, DriverError> {
        self.asked.lock().unwrap().push(request.clone());
        if std::mem::take(&mut *self.fail_next.lock().unwrap()) {
            return Err(DriverError::transient("NFVO unreachable"));
        }
        let base = grant_everything(request, format!("g-{}", request.vnf_lcm_op_occ_id));
        let mut value = serde_json::to_value(base).unwrap();
        let operation = serde_json::to_value(request.operation).unwrap();
        let applies = self
            .extra
            .get("_onlyFor")
            .is_none_or(|only| *only == operation);
        for (k, v) in self.extra.as_object().unwrap() {
            if applies && !k.starts_with('_') {
                value[k] = v.clone();
            }
        }
        // Every added resource goes to the VIM connection the NFVO names in `extra`.
        if let Some(vim) = self.extra.get("_resourcesOn").and_then(Value::as_str) {
            for r in value["addResources"].as_array_mut().unwrap() {
                r["vimConnectionId"] = json!(vim);
            }
        }
        let grant: Grant = serde_json::from_value(value).unwrap();
        Ok(GrantDecision::Granted(Box::new(grant)))
    }

    fn describe(&self) -> String {
        "adding".into()
    }
}

fn memory_vim(id: &str) -> Value {
    json!({"vimId": id, "vimType": vnfm_driver_api::memory::MEMORY_VIM_TYPE,
           "interfaceInfo": {"endpoint": format!("mem://{id}")}})
}

fn web_link(id: &str, network: &str) -> Value {
    json!({"id": id, "resourceId": network, "extCps": [{"cpdId": "web_cp", "cpConfig": {
        "web_cp_1": {"cpProtocolData": [{"layerProtocol": "IP_OVER_ETHERNET",
            "ipOverEthernet": {"ipAddresses": [{"type": "IPV4", "numDynamicAddresses": 1}]}}]}}}]})
}

fn vim_keys(i: &vnfm_types::VnfInstance) -> Vec<String> {
    i.vim_connection_info
        .iter()
        .flat_map(|m| m.keys().cloned())
        .collect()
}

fn ext_link_ids(i: &vnfm_types::VnfInstance) -> Vec<String> {
    i.instantiated_vnf_info
        .iter()
        .flat_map(|x| x.ext_virtual_link_info.iter().flatten())
        .map(|l| l.id.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_grants_vims_and_external_links_reach_the_driver_and_the_instance() {
    let nfvo = AddingNfvo::new(json!({
        "vimConnectionInfo": {"granted-vim": memory_vim("nfvo-chosen")},
        "_resourcesOn": "granted-vim",
        "extVirtualLinks": [web_link("from-grant", "net-grant")]
    }));
    let env = Env::builder()
        .vnfd(hello_vnfd())
        .nfvo(nfvo.clone())
        .build()
        .await;
    let inst = env.create(&hello_vnfd().descriptor_id).await;
    let op = env
        .lcm
        .instantiate(
            &inst.id,
            req(json!({"flavourId": "simple", "vimConnectionInfo": {"vim1": memory_vim("requested")}})),
        )
        .await
        .unwrap();
    let done = env.completed(op).await;
    // The client's request is shown as sent.
    assert!(
        done.operation_params
            .as_ref()
            .unwrap()
            .get("extVirtualLinks")
            .is_none(),
        "operationParams must stay the client's request"
    );
    let after = env.instance(&inst.id).await;
    assert_eq!(vim_keys(&after), ["vim1", "granted-vim"]);
    assert_eq!(ext_link_ids(&after), ["from-grant"]);
    let call = &env.infra.calls()[0];
    assert_eq!(call.vim_connection_ids, ["vim1", "granted-vim"]);
    assert_eq!(
        env.infra
            .inventory(&inst.id)
            .unwrap()
            .vim_connection_id
            .as_deref(),
        Some("granted-vim"),
        "the resources go to the VIM connection the grant chose"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_request_wins_over_the_grant_and_rollback_removes_the_grants_vims() {
    let nfvo = AddingNfvo::new(json!({
        "vimConnectionInfo": {
            "vim1": memory_vim("nfvo-would-replace"),
            "granted-vim": memory_vim("nfvo-chosen")
        },
        "extVirtualLinks": [web_link("shared", "net-from-grant")]
    }));
    let env = Env::builder()
        .vnfd(hello_vnfd())
        .nfvo(nfvo.clone())
        .build()
        .await;
    let inst = env.create(&hello_vnfd().descriptor_id).await;
    env.infra.fail_next(
        InfraOperation::Instantiate,
        DriverError::permanent("no capacity"),
    );
    let op = env
        .lcm
        .instantiate(
            &inst.id,
            req(json!({
                "flavourId": "simple",
                "vimConnectionInfo": {"vim1": memory_vim("requested")},
                "extVirtualLinks": [web_link("shared", "net-from-request")]
            })),
        )
        .await
        .unwrap();
    let failed = env.done(&op).await;
    assert_eq!(failed.operation_state, State_::FailedTemp);
    let during = env.instance(&inst.id).await;
    assert_eq!(vim_keys(&during), ["vim1", "granted-vim"]);
    assert_eq!(
        during.vim_connection_info.as_ref().unwrap()["vim1"]
            .vim_id
            .as_ref()
            .map(|v| v.to_string()),
        Some("requested".to_string()),
        "a grant never replaces a VIM connection the request names"
    );
    let rolled = env.lcm.rollback(&failed.id).await.unwrap();
    assert_eq!(env.done(&rolled).await.operation_state, State_::RolledBack);
    let after = env.instance(&inst.id).await;
    assert_eq!(
        after.instantiation_state,
        InstantiationState::NotInstantiated
    );
    assert!(
        vim_keys(&after).is_empty(),
        "rollback leaves neither the request's nor the grant's VIM connections: {:?}",
        vim_keys(&after)
    );
    assert_eq!(
        nfvo.asked.lock().unwrap().len(),
        1,
        "rollback asks for nothing"
    );

    // Instantiated for real: the link the request names is the request's.
    let op = env
        .lcm
        .instantiate(
            &inst.id,
            req(json!({
                "flavourId": "simple",
                "vimConnectionInfo": {"vim1": memory_vim("requested")},
                "extVirtualLinks": [web_link("shared", "net-from-request")]
            })),
        )
        .await
        .unwrap();
    env.completed(op).await;
    let info = env.instance(&inst.id).await.instantiated_vnf_info.unwrap();
    let links = info.ext_virtual_link_info.unwrap();
    assert_eq!(links.len(), 1);
    assert_eq!(links[0].resource_handle.resource_id, "net-from-request");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scale_grant_adds_its_vim_to_the_instance() {
    let nfvo = AddingNfvo::new(json!({
        "vimConnectionInfo": {"burst-vim": memory_vim("burst")},
        "_onlyFor": "SCALE"
    }));
    let env = Env::builder()
        .vnfd(hello_vnfd())
        .nfvo(nfvo.clone())
        .build()
        .await;
    let inst = env.create(&hello_vnfd().descriptor_id).await;
    let op = env
        .lcm
        .instantiate(
            &inst.id,
            req(json!({"flavourId": "simple", "vimConnectionInfo": {"vim1": memory_vim("requested")}})),
        )
        .await
        .unwrap();
    env.completed(op).await;
    assert_eq!(vim_keys(&env.instance(&inst.id).await), ["vim1"]);
    let aspect = hello_vnfd().flavours[0].scaling_aspects[0].id.clone();
    let op = env
        .lcm
        .scale(
            &inst.id,
            req(json!({"type": "SCALE_OUT", "aspectId": aspect})),
        )
        .await
        .unwrap();
    env.completed(op).await;
    // SCALE requests cannot carry VIM connections: the grant's go to the instance (SOL003).
    assert_eq!(
        vim_keys(&env.instance(&inst.id).await),
        ["vim1", "burst-vim"]
    );
    let scale_call = env.infra.calls().last().unwrap().clone();
    assert_eq!(scale_call.operation, InfraOperation::Scale);
    assert_eq!(scale_call.vim_connection_ids, ["vim1", "burst-vim"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_whose_links_do_not_fit_the_vnfd_fails_before_anything_is_done() {
    let mut bad = web_link("odd", "net-x");
    bad["extCps"][0]["cpdId"] = json!("no_such_cp");
    let nfvo = AddingNfvo::new(json!({"extVirtualLinks": [bad]}));
    let env = Env::builder()
        .vnfd(hello_vnfd())
        .nfvo(nfvo.clone())
        .build()
        .await;
    let inst = env.create(&hello_vnfd().descriptor_id).await;
    let op = env
        .lcm
        .instantiate(
            &inst.id,
            req(json!({"flavourId": "simple", "vimConnectionInfo": memory_vims()})),
        )
        .await
        .unwrap();
    let failed = env.done(&op).await;
    assert_eq!(failed.operation_state, State_::FailedTemp);
    let detail = failed.error.unwrap().detail;
    assert!(
        detail.contains("grant") && detail.contains("no_such_cp"),
        "{detail}"
    );
    assert!(env.infra.calls().is_empty(), "nothing may be done");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_the_nfvo_was_unreachable_records_the_requests_vims() {
    let nfvo = AddingNfvo::new(json!({}));
    *nfvo.fail_next.lock().unwrap() = true;
    let env = Env::builder()
        .vnfd(hello_vnfd())
        .nfvo(nfvo.clone())
        .build()
        .await;
    let inst = env.create(&hello_vnfd().descriptor_id).await;
    let op = env
        .lcm
        .instantiate(
            &inst.id,
            req(json!({"flavourId": "simple", "vimConnectionInfo": {"vim1": memory_vim("requested")}})),
        )
        .await
        .unwrap();
    let failed = env.done(&op).await;
    assert_eq!(failed.operation_state, State_::FailedTemp);
    let retried = env.lcm.retry(&failed.id).await.unwrap();
    assert_eq!(env.done(&retried).await.operation_state, State_::Completed);
    let after = env.instance(&inst.id).await;
    assert_eq!(vim_keys(&after), ["vim1"]);
    assert_eq!(env.infra.calls()[0].vim_connection_ids, ["vim1"]);
}

async fn wait_pending(grants: &DeferredGrants) -> Vec<GrantRequest> {
    tokio::time::timeout(Duration::from_secs(10), grants.wait_pending())
        .await
        .expect("a grant request waits")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deferred_grants_are_decided_later_through_the_callback() {
    let grants = DeferredGrants::new();
    let env = Env::builder()
        .vnfd(hello_vnfd())
        .nfvo(Arc::new(grants.clone()))
        .build()
        .await;
    let vnfd_id = hello_vnfd().descriptor_id;

    // Granted later: the occurrence waits in STARTING, then completes.
    let inst = env.create(&vnfd_id).await;
    let op = env
        .lcm
        .instantiate(
            &inst.id,
            req(json!({"flavourId": "simple", "vimConnectionInfo": memory_vims()})),
        )
        .await
        .unwrap();
    let waiting = wait_pending(&grants).await;
    assert_eq!(waiting.len(), 1);
    assert_eq!(waiting[0].vnf_lcm_op_occ_id, op.id);
    assert_eq!(
        env.lcm.get_op_occ(&op.id).await.unwrap().operation_state,
        State_::Starting
    );
    assert!(env.infra.calls().is_empty());
    grants
        .decide(
            &op.id,
            Ok(GrantDecision::Granted(Box::new(grant_everything(
                &waiting[0],
                "later-1".into(),
            )))),
        )
        .unwrap();
    env.completed(op.clone()).await;
    assert_eq!(env.infra.calls()[0].grant_id.as_deref(), Some("later-1"));
    assert!(grants.pending().is_empty());
    assert_eq!(
        grants.decide(
            &op.id,
            Ok(GrantDecision::Rejected(ProblemDetails::new(403, "late")))
        ),
        Err(DecideError::NotWaiting(op.id.clone())),
        "a decision for nothing waiting is refused"
    );

    // Rejected later: ROLLED_BACK with the reason.
    let inst2 = env.create(&vnfd_id).await;
    let op2 = env
        .lcm
        .instantiate(
            &inst2.id,
            req(json!({"flavourId": "simple", "vimConnectionInfo": memory_vims()})),
        )
        .await
        .unwrap();
    wait_pending(&grants).await;
    grants
        .decide(
            &op2.id,
            Ok(GrantDecision::Rejected(ProblemDetails::new(
                403,
                "the approver said no",
            ))),
        )
        .unwrap();
    let done = env.done(&op2).await;
    assert_eq!(done.operation_state, State_::RolledBack);
    assert!(done.error.unwrap().detail.contains("the approver said no"));

    // Cancelled while waiting: ROLLED_BACK, and the request is no longer pending.
    let inst3 = env.create(&vnfd_id).await;
    let op3 = env
        .lcm
        .instantiate(
            &inst3.id,
            req(json!({"flavourId": "simple", "vimConnectionInfo": memory_vims()})),
        )
        .await
        .unwrap();
    wait_pending(&grants).await;
    env.lcm
        .cancel(&op3.id, CancelModeType::Forceful)
        .await
        .unwrap();
    let done = env.done(&op3).await;
    assert_eq!(done.operation_state, State_::RolledBack);
    assert!(grants.pending().is_empty());
    assert!(matches!(
        grants.decide(
            &op3.id,
            Ok(GrantDecision::Rejected(ProblemDetails::new(403, "x")))
        ),
        Err(DecideError::NotWaiting(_))
    ));
    assert_eq!(
        env.infra.calls().len(),
        1,
        "only the granted occurrence ran"
    );
    assert_eq!(
        env.instance(&inst3.id).await.instantiation_state,
        InstantiationState::NotInstantiated
    );
}
