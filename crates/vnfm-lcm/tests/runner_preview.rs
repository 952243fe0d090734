//! Operation preview (`Lcm::preview`): the ordered steps, drivers, VIMs and grant of an
//! operation, from the same checks and planner as the operation itself, leaving nothing behind.

use crate::runner_support;

use std::path::PathBuf;

use runner_support::*;
use serde_json::json;
use vnfm_lcm::OperationRequest;
use vnfm_store::OpOccQuery;
use vnfm_types::{InstantiationState, LcmOperationType};

fn vnf_a() -> vnfm_descriptor::Vnfd {
    load_dir(&PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../vnfd-samples/vnf-a-k8s-cluster"
    )))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vnf_a_preview_lists_its_hooks_and_infra_step_in_order_and_changes_nothing() {
    let env = Env::with(vec![vnf_a()]).await;
    let inst = env.create(&vnf_a().descriptor_id).await;
    let outbox_before = env.outbox().await.len();

    let preview = env
        .lcm
        .preview(
            &inst.id,
            OperationRequest::Instantiate(req(
                json!({"flavourId": "simple", "vimConnectionInfo": memory_vims()}),
            )),
        )
        .await
        .expect("preview");

    assert_eq!(preview.operation, LcmOperationType::Instantiate);
    assert_eq!(preview.flavour_id.as_deref(), Some("simple"));
    let names: Vec<&str> = preview.steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["infra:instantiate", "hook:instantiate_end"]);
    let infra = &preview.steps[0];
    assert_eq!(infra.driver.as_deref(), Some("memory"));
    assert_eq!(infra.vim_connection_ids, ["vim1"]);
    let json = serde_json::to_value(&preview).unwrap();
    // The hook names the artifact that implements it.
    assert_eq!(json["steps"][1]["step"], "hook");
    assert!(
        json["steps"][1]["artifact"]["file"]
            .as_str()
            .is_some_and(|f| !f.is_empty()),
        "{json:#}"
    );
    // The grant: one master and two workers to add, no occurrence id yet.
    let grant = preview.grant.as_ref().expect("a grant request");
    let added = grant.request["addResources"].as_array().unwrap();
    assert_eq!(
        added.iter().filter(|r| r["type"] == "COMPUTE").count(),
        3,
        "{:#}",
        grant.request
    );
    assert!(grant.request.get("vnfLcmOpOccId").is_none());

    // Nothing happened: no occurrence, no hook, no infrastructure call, no notification, the
    // instance still NOT_INSTANTIATED.
    let occs = env.lcm.list_op_occs(&OpOccQuery::default()).await.unwrap();
    assert!(occs.items.is_empty());
    assert!(env.mgmt.calls().is_empty());
    assert!(env.infra.calls().is_empty());
    assert_eq!(env.outbox().await.len(), outbox_before);
    assert_eq!(
        env.instance(&inst.id).await.instantiation_state,
        InstantiationState::NotInstantiated
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preview_refuses_a_scale_beyond_the_max_level_as_the_operation_would() {
    let env = Env::with(vec![vnf_a()]).await;
    let inst = env.create(&vnf_a().descriptor_id).await;
    let op = env
        .lcm
        .instantiate(
            &inst.id,
            req(json!({"flavourId": "simple", "vimConnectionInfo": memory_vims()})),
        )
        .await
        .unwrap();
    env.completed(op).await;
    let beyond = json!({"type": "SCALE_OUT", "aspectId": "worker_instance", "numberOfSteps": 3});

    let previewed = env
        .lcm
        .preview(&inst.id, OperationRequest::Scale(req(beyond.clone())))
        .await
        .expect_err("beyond max_scale_level 2");
    let started = env.lcm.scale(&inst.id, req(beyond)).await.unwrap_err();
    assert_eq!(previewed.to_string(), started.to_string());
    assert!(
        previewed.to_string().contains("worker_instance"),
        "{previewed}"
    );

    // Within the bound, the preview shows the scale wrapped in its hooks.
    let within = json!({"type": "SCALE_OUT", "aspectId": "worker_instance", "numberOfSteps": 1});
    let preview = env
        .lcm
        .preview(&inst.id, OperationRequest::Scale(req(within)))
        .await
        .unwrap();
    let names: Vec<&str> = preview.steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["hook:scale_start", "infra:scale", "hook:scale_end"]);
    let occs = env.lcm.list_op_occs(&OpOccQuery::default()).await.unwrap();
    assert_eq!(occs.items.len(), 1, "only the instantiation");
}
