//! Tacker v2's coordination scripts (`lcm-operation-coordinate-new-vnf` / `-old-vnf`) during a
//! CHANGE_VNFPKG on the in-memory driver, run by the script management driver with real
//! `python3` processes: the new package's script runs for each VNFC of the VDUs `vdu_params`
//! names, with Tacker's input; a failing one fails the occurrence (FAILED_TEMP, with its
//! stderr), and the rollback runs the old package's script.

use crate::runner_support;

use std::sync::Arc;

use serde_json::{Value, json};
use vnfm_driver_api::infra::InfraOperation;
use vnfm_driver_api::memory::{MemArtifacts, MemoryInfraDriver};
use vnfm_lcm::testing::SingleCallbackRouter;
use vnfm_lcm::{InlineVimDirectory, Lcm, LcmConfig, MemoryCatalog};
use vnfm_mgmt_script::{ScriptConfig, ScriptMgmtDriver};
use vnfm_types::{LcmOperationStateType, VnfInstance};

use runner_support::{WAIT, hello_vnfd, memory_vims, req};

/// Appends what it received (as one JSON line) to the file its `record` parameter names.
const RECORDING: &str = r#"
import json, os, pickle, sys

vnfc_param = pickle.load(sys.stdin.buffer)
vnfc_param['script'] = os.path.relpath(sys.argv[0], os.getcwd())
with open(vnfc_param['record'], 'a') as f:
    f.write(json.dumps(vnfc_param) + '\n')
os._exit(0)
"#;

/// Tacker's `error_coordinate_new_vnf.py`, shortened.
const FAILING: &str = r#"
import os, pickle, sys

pickle.load(sys.stdin.buffer)
sys.stderr.write('ErrorNewCoordinateVNFScript')
sys.stderr.flush()
os._exit(1)
"#;

struct Env {
    lcm: Lcm,
    infra: Arc<MemoryInfraDriver>,
    _dir: tempfile::TempDir,
}

/// The `hello-vnf` sample's VNFD id: its package holds the old package's script.
const V1: &str = "6f0b7e1c-2d55-4c5e-9b3a-4e110a000001";

/// An `Lcm` with the in-memory driver (VNFCs get addresses) and the script driver; the
/// `hello-vnf` sample's package ([`V1`]) holds the old package's script, `hello-v2` the new
/// ones.
async fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let store = vnfm_store_sql::open(&format!("sqlite://{}", dir.path().join("lcm.db").display()))
        .await
        .unwrap();
    let v1 = hello_vnfd();
    let mut v2 = hello_vnfd();
    v2.descriptor_id = "hello-v2".into();
    v2.software_version = "2.0".into();
    let catalog = MemoryCatalog::new();
    catalog.insert(
        v1,
        Arc::new(MemArtifacts::new().with("Scripts/coordinate_old_vnf.py", RECORDING)),
    );
    catalog.insert(
        v2,
        Arc::new(
            MemArtifacts::new()
                .with("Scripts/coordinate_new_vnf.py", RECORDING)
                .with("Scripts/error_coordinate_new_vnf.py", FAILING),
        ),
    );
    let infra = Arc::new(
        MemoryInfraDriver::new().with_address_pool(vec!["192.0.2.11".into(), "192.0.2.12".into()]),
    );
    let lcm = Lcm::builder(
        store,
        Arc::new(InlineVimDirectory),
        Arc::new(SingleCallbackRouter::new("sub-1", runner_support::CALLBACK)),
        Arc::new(catalog),
    )
    .infra_driver(infra.clone())
    .mgmt_driver(Arc::new(ScriptMgmtDriver::new(ScriptConfig::default())))
    .nfvo(Arc::new(vnfm_driver_api::LocalNfvo))
    .config(LcmConfig::default())
    .build();
    Env {
        lcm,
        infra,
        _dir: dir,
    }
}

/// An instantiated `hello-vnf` instance.
async fn instantiated(env: &Env) -> VnfInstance {
    let inst = env
        .lcm
        .create_vnf_identifier(req(json!({"vnfdId": V1})))
        .await
        .unwrap();
    let op = env
        .lcm
        .instantiate(
            &inst.id,
            req(json!({"flavourId": "simple", "vimConnectionInfo": memory_vims()})),
        )
        .await
        .unwrap();
    let done = env.lcm.wait(&op.id, WAIT).await.unwrap();
    assert_eq!(
        done.operation_state,
        LcmOperationStateType::Completed,
        "{:?}",
        done.error
    );
    env.lcm.get_instance(&inst.id).await.unwrap()
}

/// Tacker's CHANGE_VNFPKG request (`paramgen.change_vnfpkg`) for VDU `web`, recording to
/// `record`.
fn change_request(new_script: &str, record: &std::path::Path) -> Value {
    let vnfc_param = |user: &str| json!({"cp_name": "web_cp", "username": user, "password": "ubuntu", "record": record});
    json!({
        "vnfdId": "hello-v2",
        "additionalParams": {
            "upgrade_type": "RollingUpdate",
            "lcm-operation-coordinate-old-vnf": "./Scripts/coordinate_old_vnf.py",
            "lcm-operation-coordinate-new-vnf": new_script,
            "vdu_params": [{"vdu_id": "web",
                            "old_vnfc_param": vnfc_param("old-user"),
                            "new_vnfc_param": vnfc_param("new-user")}]
        }
    })
}

fn records(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_new_packages_coordination_script_runs_for_each_vnfc_with_tackers_input() {
    let env = env().await;
    let inst = instantiated(&env).await;
    let out = tempfile::tempdir().unwrap();
    let record = out.path().join("coordinated.jsonl");
    let op = env
        .lcm
        .change_vnfpkg(
            &inst.id,
            req(change_request("./Scripts/coordinate_new_vnf.py", &record)),
        )
        .await
        .unwrap();
    let done = env.lcm.wait(&op.id, WAIT).await.unwrap();
    assert_eq!(
        done.operation_state,
        LcmOperationStateType::Completed,
        "{:?}",
        done.error
    );

    let after = env.lcm.get_instance(&inst.id).await.unwrap();
    assert_eq!(after.vnfd_id.as_str(), "hello-v2");
    let info = after.instantiated_vnf_info.as_ref().unwrap();
    let vnfcs = info.vnfc_resource_info.as_deref().unwrap();
    let seen = records(&record);
    assert_eq!(seen.len(), vnfcs.len(), "one run per VNFC: {seen:#?}");
    for (s, vnfc) in seen.iter().zip(vnfcs) {
        assert_eq!(s["script"], "Scripts/coordinate_new_vnf.py", "{s:#}");
        assert_eq!(s["username"], "new-user");
        assert_eq!(s["cp_name"], "web_cp");
        assert_eq!(s["is_rollback"], false);
        assert!(
            s["ssh_ip"].as_str().unwrap().starts_with("192.0.2.1"),
            "{s:#}"
        );
        assert_eq!(s["vnfc_info_id"], format!("web-{}", vnfc.id));
        let coord = &s["LcmCoordRequest"];
        assert_eq!(coord["vnfInstanceId"], inst.id.as_str());
        assert_eq!(coord["vnfLcmOpOccId"], op.id.as_str());
        assert_eq!(coord["lcmOperationType"], "CHANGE_VNFPKG");
        assert_eq!(coord["coordinationActionName"], "should_be_set_by_script");
        assert!(
            coord["_links"]["vnfLcmOpOcc"]["href"]
                .as_str()
                .unwrap()
                .ends_with(&format!("/vnf_lcm_op_occs/{}", op.id)),
            "{coord:#}"
        );
        assert_eq!(s["inst"]["id"], inst.id.as_str());
        assert_eq!(s["inst"]["vnfdId"], "hello-v2");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_coordination_script_fails_the_change_and_the_rollback_runs_the_old_one() {
    let env = env().await;
    let inst = instantiated(&env).await;
    let out = tempfile::tempdir().unwrap();
    let record = out.path().join("coordinated.jsonl");
    let op = env
        .lcm
        .change_vnfpkg(
            &inst.id,
            req(change_request(
                "./Scripts/error_coordinate_new_vnf.py",
                &record,
            )),
        )
        .await
        .unwrap();
    let failed = env.lcm.wait(&op.id, WAIT).await.unwrap();
    assert_eq!(failed.operation_state, LcmOperationStateType::FailedTemp);
    let error = failed.error.unwrap();
    assert!(
        error.detail.contains("ErrorNewCoordinateVNFScript"),
        "{error:?}"
    );
    assert!(
        error
            .detail
            .contains("coordination script ./Scripts/error_coordinate_new_vnf.py"),
        "{error:?}"
    );
    assert_eq!(error.extra["layer"], "managementDriver", "{error:?}");
    // The step's outcome is not kept: the instance is still on the old package.
    let now = env.lcm.get_instance(&inst.id).await.unwrap();
    assert_eq!(now.vnfd_id.as_str(), V1);
    assert!(records(&record).is_empty());

    env.lcm.rollback(&op.id).await.unwrap();
    let rolled = env.lcm.wait(&op.id, WAIT).await.unwrap();
    assert_eq!(
        rolled.operation_state,
        LcmOperationStateType::RolledBack,
        "{:?}",
        rolled.error
    );
    let seen = records(&record);
    assert!(!seen.is_empty());
    for s in &seen {
        assert_eq!(s["script"], "Scripts/coordinate_old_vnf.py", "{s:#}");
        assert_eq!(s["username"], "old-user");
        assert_eq!(s["is_rollback"], true);
        assert_eq!(s["inst"]["vnfdId"], V1);
    }
    let back = env.lcm.get_instance(&inst.id).await.unwrap();
    assert_eq!(back.vnfd_id.as_str(), V1);
    // The driver's rollback step gets the package it restores beside the one changed to
    // (Tacker's user data classes rebuild the stack from the restored one).
    let calls = env.infra.calls();
    let change = calls
        .iter()
        .find(|c| c.operation == InfraOperation::ChangeVnfpkg)
        .expect("the change step");
    assert_eq!(
        (change.vnfd_id.as_str(), change.restored_vnfd_id.as_deref()),
        ("hello-v2", None)
    );
    let rollback = calls
        .iter()
        .find(|c| c.operation == InfraOperation::RollbackChangeVnfpkg)
        .expect("the rollback step");
    assert_eq!(
        (
            rollback.vnfd_id.as_str(),
            rollback.restored_vnfd_id.as_deref()
        ),
        ("hello-v2", Some(V1))
    );
}
