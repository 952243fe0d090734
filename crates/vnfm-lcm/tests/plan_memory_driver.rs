//! Plans executed by the in-memory infrastructure driver: the targets the planner computes
//! from real VNFDs drive the fake VIM to the expected inventory, VNFC ids the driver reports
//! are accepted by the next plan, and rollback plans restore the previous inventory.

use crate::plan_support;

use std::sync::Arc;
use std::time::Duration;

use plan_support::*;
use serde_json::{Value, json};
use vnfm_descriptor::Vnfd;
use vnfm_driver_api::memory::{MEMORY_VIM_TYPE, MemArtifacts, MemoryInfraDriver};
use vnfm_driver_api::{InfraOutcome, InfraRequest, InfraStep, ResolvedVim, RunControl, execute};
use vnfm_lcm::{Plan, Step, plan, rollback_plan};
use vnfm_types::{InstantiationState, VnfInstance, VnfInstanceId, VnfLcmOpOccId, VnfScaleInfo};

/// Runs every infra step of `p` on `driver` and records the outcome on the instance, as the
/// runner does.
async fn run(
    driver: &MemoryInfraDriver,
    vnfd: &Arc<Vnfd>,
    p: &Plan,
    op: &str,
    body: Value,
    mut instance: VnfInstance,
) -> VnfInstance {
    let request = req(op, body).to_params();
    for step in &p.steps {
        let Step::Infra(step) = step else { continue };
        let infra = InfraRequest {
            op_occ_id: VnfLcmOpOccId::new("op-1"),
            operation: p.operation,
            step: step.clone(),
            request: request.clone(),
            instance: instance.clone(),
            vnfd: vnfd.clone(),
            flavour_id: p.flavour_id.clone().unwrap_or_default(),
            vims: vec![ResolvedVim::new(
                "vim1",
                serde_json::from_value(json!({"vimType": MEMORY_VIM_TYPE})).unwrap(),
            )],
            artifacts: Arc::new(MemArtifacts::new()),
            driver_state: Value::Null,
            grant: None,
            grant_request: None,
            restored_package: None,
            control: RunControl::with_timeout(Duration::from_secs(10)),
        };
        let out = execute(driver, &infra).await.expect("driver step");
        instance = record(instance, step, out);
    }
    instance
}

fn record(mut instance: VnfInstance, step: &InfraStep, out: InfraOutcome) -> VnfInstance {
    if matches!(
        step,
        InfraStep::Terminate { .. } | InfraStep::RollbackInstantiate
    ) {
        instance.instantiation_state = InstantiationState::NotInstantiated;
        instance.instantiated_vnf_info = None;
        return instance;
    }
    let mut info = instance.instantiated_vnf_info.take().unwrap_or_else(|| {
        serde_json::from_value(json!({"flavourId": "", "vnfState": "STARTED"})).unwrap()
    });
    if let Some(t) = step.target() {
        info.flavour_id = t.flavour_id.clone();
        info.scale_status = Some(
            t.scale_levels
                .iter()
                .map(|(a, l)| VnfScaleInfo {
                    aspect_id: a.clone(),
                    vnfd_id: None,
                    scale_level: *l,
                })
                .collect(),
        );
    }
    let r = out.resources;
    info.vnfc_resource_info = Some(r.vnfc_resource_info);
    info.vnfc_info = Some(r.vnfc_info);
    info.vnf_virtual_link_resource_info = Some(r.vnf_virtual_link_resource_info);
    info.virtual_storage_resource_info = Some(r.virtual_storage_resource_info);
    info.ext_cp_info = r.ext_cp_info;
    instance.instantiated_vnf_info = Some(info);
    instance.instantiation_state = InstantiationState::Instantiated;
    instance
}

#[vnfm_test_env::needs(corpus)]
#[tokio::test]
async fn k8s_cluster_vnf_lifecycle_on_the_memory_vim() {
    let vnfd = Arc::new(corpus_vnfd("mgmt-k8s-cluster-v1"));
    let driver = MemoryInfraDriver::new();
    let id = VnfInstanceId::new("inst-1");
    let fresh = fresh_of(&vnfd);

    let body = json!({"flavourId": "simple"});
    let p = plan(&req("instantiate", body.clone()), &vnfd, &fresh).unwrap();
    let inst = run(&driver, &vnfd, &p, "instantiate", body, fresh.clone()).await;
    let inv = driver.inventory(&id).unwrap();
    assert_eq!((inv.count("masterNode"), inv.count("workerNode")), (1, 2));

    // Scale out workers, then roll the scale back.
    let body = json!({"type": "SCALE_OUT", "aspectId": "worker_instance", "numberOfSteps": 2});
    let p = plan(&req("scale", body.clone()), &vnfd, &inst).unwrap();
    let scaled = run(&driver, &vnfd, &p, "scale", body.clone(), inst.clone()).await;
    assert_eq!(driver.inventory(&id).unwrap().count("workerNode"), 4);
    let r = rollback_plan(&p, p.steps.len()).unwrap();
    let back = run(&driver, &vnfd, &r, "scale", body, scaled.clone()).await;
    let inv = driver.inventory(&id).unwrap();
    assert_eq!(inv.count("workerNode"), 2);
    // The rollback removed the VNFCs the scale added, not the original ones.
    let before: Vec<String> = inst
        .instantiated_vnf_info
        .as_ref()
        .unwrap()
        .vnfc_resource_info
        .as_ref()
        .unwrap()
        .iter()
        .map(|v| v.id.clone())
        .collect();
    let after: Vec<String> = back
        .instantiated_vnf_info
        .as_ref()
        .unwrap()
        .vnfc_resource_info
        .as_ref()
        .unwrap()
        .iter()
        .map(|v| v.id.clone())
        .collect();
    assert_eq!(before, after);

    // Heal one worker by the vnfcInfo id the driver reported.
    let worker = back
        .instantiated_vnf_info
        .as_ref()
        .unwrap()
        .vnfc_info
        .as_ref()
        .unwrap()
        .iter()
        .find(|v| v.vdu_id == "workerNode")
        .unwrap()
        .clone();
    let body = json!({"vnfcInstanceId": [worker.id]});
    let p = plan(&req("heal", body.clone()), &vnfd, &back).unwrap();
    let old_server = back
        .instantiated_vnf_info
        .as_ref()
        .unwrap()
        .vnfc_resource_info
        .as_ref()
        .unwrap()
        .iter()
        .find(|v| Some(&v.id) == worker.vnfc_resource_info_id.as_ref())
        .unwrap()
        .compute_resource
        .resource_id
        .clone();
    let healed = run(&driver, &vnfd, &p, "heal", body, back).await;
    let new_server = healed
        .instantiated_vnf_info
        .as_ref()
        .unwrap()
        .vnfc_resource_info
        .as_ref()
        .unwrap()
        .iter()
        .find(|v| Some(&v.id) == worker.vnfc_resource_info_id.as_ref())
        .unwrap()
        .compute_resource
        .resource_id
        .clone();
    assert_ne!(old_server, new_server);

    // Terminate empties the fake VIM.
    let body = json!({"terminationType": "FORCEFUL"});
    let p = plan(&req("terminate", body.clone()), &vnfd, &healed).unwrap();
    let done = run(&driver, &vnfd, &p, "terminate", body, healed).await;
    assert!(driver.inventory(&id).is_none());
    assert_eq!(
        done.instantiation_state,
        InstantiationState::NotInstantiated
    );
    assert_eq!(
        driver
            .operations()
            .iter()
            .map(|o| o.name())
            .collect::<Vec<_>>(),
        [
            "instantiate",
            "scale",
            "rollback_scale",
            "heal",
            "terminate"
        ]
    );
}

#[vnfm_test_env::needs(corpus)]
#[tokio::test]
async fn cnf_scale_to_level_and_back_on_the_memory_vim() {
    let vnfd = Arc::new(corpus_vnfd("v2-cnf-instantiate-resources"));
    let driver = MemoryInfraDriver::new();
    let id = VnfInstanceId::new("inst-1");
    let fresh = fresh_of(&vnfd);
    let body = json!({"flavourId": "simple"});
    let p = plan(&req("instantiate", body.clone()), &vnfd, &fresh).unwrap();
    let inst = run(&driver, &vnfd, &p, "instantiate", body, fresh).await;

    let body = json!({"instantiationLevelId": "instantiation_level_2"});
    let p = plan(&req("scale_to_level", body.clone()), &vnfd, &inst).unwrap();
    let big = run(&driver, &vnfd, &p, "scale_to_level", body, inst).await;
    let inv = driver.inventory(&id).unwrap();
    let counts: Vec<u32> = ["VDU1", "VDU2", "VDU3", "VDU5", "VDU6"]
        .iter()
        .map(|v| inv.count(v))
        .collect();
    assert_eq!(counts, [1, 3, 3, 3, 1]);

    // Back down by scaleInfo: the recorded levels and VNFCs are the starting point.
    let body = json!({"scaleInfo": [{"aspectId": "vdu3_aspect", "scaleLevel": 0}]});
    let p = plan(&req("scale_to_level", body.clone()), &vnfd, &big).unwrap();
    run(&driver, &vnfd, &p, "scale_to_level", body, big).await;
    let inv = driver.inventory(&id).unwrap();
    let counts: Vec<u32> = ["VDU1", "VDU2", "VDU3", "VDU5", "VDU6"]
        .iter()
        .map(|v| inv.count(v))
        .collect();
    assert_eq!(counts, [1, 3, 1, 3, 1]);
}
