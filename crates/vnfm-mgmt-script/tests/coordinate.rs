//! Coordination scripts (Tacker v2's `lcm-operation-coordinate-new-vnf` / `-old-vnf`) against
//! real `python3` subprocesses, written as Tacker's sample `coordinate_*.py` are:
//! `pickle.load(sys.stdin.buffer)` in, the exit status out.

use crate::support;

use std::sync::Arc;

use serde_json::{Value as Json, json};
use support::*;
use vnfm_driver_api::memory::MemArtifacts;
use vnfm_driver_api::{CoordinateCall, CoordinatedVnfc, MgmtDriver};
use vnfm_mgmt_script::{ScriptConfig, ScriptMgmtDriver};
use vnfm_types::{LcmOperationType, VnfLcmOpOccId};

/// Records what it received (as JSON, to the file its `record` parameter names) and where it
/// ran, then succeeds.
const RECORDING: &str = r#"
import json, os, pickle, sys

vnfc_param = pickle.load(sys.stdin.buffer)
vnfc_param['cwd'] = os.getcwd()
vnfc_param['argv0'] = sys.argv[0]
with open(vnfc_param['record'], 'w') as f:
    json.dump(vnfc_param, f)
os._exit(0)
"#;

/// Tacker's `error_coordinate_new_vnf.py`, shortened.
const FAILING: &str = r#"
import os, pickle, sys

pickle.load(sys.stdin.buffer)
sys.stderr.write("ErrorNewCoordinateVNFScript (password s3cr3t-Pa55w0rd)")
sys.stderr.flush()
os._exit(1)
"#;

fn coordinate_call(script: &str, files: MemArtifacts, params: Json) -> CoordinateCall {
    CoordinateCall {
        op_occ_id: VnfLcmOpOccId::new("occ-coord"),
        lcm_operation: LcmOperationType::ChangeVnfpkg,
        script: script.into(),
        rollback: false,
        vnfc: CoordinatedVnfc {
            vdu_id: "VDU1".into(),
            resource_id: "vnfc-1".into(),
            info_id: Some("VDU1-vnfc-1".into()),
            address: Some("192.0.2.10".into()),
        },
        params: params.as_object().cloned().unwrap_or_default(),
        coordination_request: json!({
            "vnfInstanceId": "inst-1", "vnfLcmOpOccId": "occ-coord",
            "lcmOperationType": "CHANGE_VNFPKG",
            "coordinationActionName": "should_be_set_by_script"
        }),
        instance: instance(),
        vnfd: Arc::new(vnfd()),
        artifacts: Arc::new(files),
        vims: vec![vim()],
        control: control(),
    }
}

#[tokio::test]
async fn a_coordination_script_runs_in_the_package_with_tackers_vnfc_param() {
    let outside = tempfile::tempdir().unwrap();
    let record = outside.path().join("record.json");
    let files = package("").with("Scripts/coordinate_new_vnf.py", RECORDING);
    let call = coordinate_call(
        "./Scripts/coordinate_new_vnf.py",
        files,
        json!({"cp_name": "VDU1_CP1", "username": "ubuntu", "password": "ubuntu",
               "record": record}),
    );
    ScriptMgmtDriver::new(ScriptConfig::default())
        .coordinate(&call)
        .await
        .unwrap();
    let seen: Json = serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    assert_eq!(seen["cp_name"], "VDU1_CP1");
    assert_eq!(seen["username"], "ubuntu");
    assert_eq!(seen["ssh_ip"], "192.0.2.10");
    assert_eq!(seen["is_rollback"], false);
    assert_eq!(seen["vnfc_info_id"], "VDU1-vnfc-1");
    assert_eq!(
        seen["LcmCoordRequest"]["coordinationActionName"],
        "should_be_set_by_script"
    );
    // Tacker's instance carries the VIM's credentials.
    assert_eq!(
        seen["inst"]["vimConnectionInfo"]["vim1"]["accessInfo"]["password"],
        "s3cr3t-Pa55w0rd"
    );
    let cwd = seen["cwd"].as_str().unwrap();
    assert_eq!(
        seen["argv0"].as_str().unwrap(),
        format!("{cwd}/Scripts/coordinate_new_vnf.py")
    );
    assert!(
        !std::path::Path::new(cwd).exists(),
        "the temporary package directory is removed"
    );
}

#[tokio::test]
async fn a_failing_coordination_script_fails_with_its_stderr_and_may_be_retried() {
    let files = package("").with("Scripts/error_coordinate_new_vnf.py", FAILING);
    let call = coordinate_call("./Scripts/error_coordinate_new_vnf.py", files, json!({}));
    let err = ScriptMgmtDriver::new(ScriptConfig::default())
        .coordinate(&call)
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("ErrorNewCoordinateVNFScript"), "{msg}");
    assert!(msg.contains("exit status 1"), "{msg}");
    assert!(
        msg.contains("coordination script ./Scripts/error_coordinate_new_vnf.py for VNFC vnfc-1"),
        "{msg}"
    );
    assert!(
        !msg.contains("s3cr3t-Pa55w0rd"),
        "VIM secrets are redacted: {msg}"
    );
    assert!(err.is_retryable(), "{err:?}");

    // A script the package does not hold, or outside it, fails naming it.
    let missing = coordinate_call("./Scripts/nope.py", package(""), json!({}));
    let err = ScriptMgmtDriver::default()
        .coordinate(&missing)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("Scripts/nope.py"), "{err}");
    let outside = coordinate_call("../x.py", package(""), json!({}));
    let err = ScriptMgmtDriver::default()
        .coordinate(&outside)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("`../x.py`"), "{err}");
}
