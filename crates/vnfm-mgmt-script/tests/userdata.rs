//! User data classes (Tacker's `lcm-operation-user-data` / `-class`) run through the
//! `UserDataScripts` port against real `python3` subprocesses, with a class written as
//! Tacker's are: static methods taking `(req, inst, grant_req, grant, tmp_csar_dir)` and
//! returning a dict of stack fields. No Tacker module is imported.

use crate::support;

use std::sync::Arc;

use serde_json::{Value as Json, json};
use support::*;
use vnfm_driver_api::memory::MemArtifacts;
use vnfm_driver_api::{UserDataCall, UserDataScripts};
use vnfm_mgmt_script::{ScriptConfig, ScriptMgmtDriver};
use vnfm_types::VnfLcmOpOccId;

/// The class: `instantiate` and `scale_rollback` record what they received (as JSON, to the
/// file `additionalParams.record` names) and return stack fields; `heal` raises;
/// `change_ext_conn` returns a list. It imports a module of its own package, as Tacker's
/// classes import theirs.
const CLASS: &str = r#"
import json, os, sys

from UserData.consts import TEMPLATE


def _record(method, req, inst, grant_req, grant, tmp_csar_dir):
    print('chatter on stdout does not spoil the answer')
    files = sorted(os.path.relpath(os.path.join(d, f), tmp_csar_dir)
                   for d, _, fs in os.walk(tmp_csar_dir) for f in fs
                   if '__pycache__' not in d)
    with open(req['additionalParams']['record'], 'w') as f:
        json.dump({'method': method, 'req': req, 'inst': inst, 'grant_req': grant_req,
                   'grant': grant, 'tmp_csar_dir': tmp_csar_dir, 'cwd': os.getcwd(),
                   'files': files, 'argv': sys.argv}, f)


class UserData:
    @staticmethod
    def instantiate(req, inst, grant_req, grant, tmp_csar_dir):
        _record('instantiate', req, inst, grant_req, grant, tmp_csar_dir)
        nfv = {'VDU': {'VDU1': {'computeFlavourId': grant['vimAssets']['computeResourceFlavours'][0]['vimFlavourId']}}}
        return {'template': TEMPLATE, 'files': {'VDU1.yaml': 'resources: {}\n'},
                'parameters': {'nfv': nfv}}

    @staticmethod
    def scale_rollback(req, inst, grant_req, grant, tmp_csar_dir):
        _record('scale_rollback', req, inst, grant_req, grant, tmp_csar_dir)
        return {'parameters': {'nfv': {'VDU': {'VDU1': {'desired_capacity': 1}}}}}

    @staticmethod
    def heal(req, inst, grant_req, grant, tmp_csar_dir):
        raise ValueError('no heal today')

    @staticmethod
    def change_ext_conn(req, inst, grant_req, grant, tmp_csar_dir):
        return ['not', 'a', 'dict']
"#;

const CONSTS: &str = "TEMPLATE = 'heat_template_version: 2013-05-23\\nresources: {}\\n'\n";

fn user_data_package() -> MemArtifacts {
    package("")
        .with("UserData/userdata.py", CLASS)
        .with("UserData/consts.py", CONSTS)
}

fn user_data_call(method: &str, class: &str, request: Json) -> UserDataCall {
    UserDataCall {
        op_occ_id: VnfLcmOpOccId::new("occ-ud"),
        file: "./UserData/userdata.py".into(),
        class: class.into(),
        method: method.into(),
        request,
        instance: instance(),
        grant_request: json!({"vnfInstanceId": "inst-1", "operation": "INSTANTIATE",
                              "addResources": [{"id": "r1", "type": "COMPUTE",
                                                "resourceTemplateId": "VDU1"}]}),
        grant: json!({"id": "g1", "vimAssets": {"computeResourceFlavours": [
            {"vnfdVirtualComputeDescId": "VDU1", "vimFlavourId": "m1.tiny"}]}}),
        vnfd: Arc::new(vnfd()),
        artifacts: Arc::new(user_data_package()),
        vims: vec![vim()],
        control: control(),
    }
}

#[tokio::test]
async fn a_user_data_class_gets_tackers_arguments_and_its_dict_comes_back() {
    let outside = tempfile::tempdir().unwrap();
    let record = outside.path().join("record.json");
    let request = json!({"flavourId": "simple", "additionalParams": {
        "lcm-operation-user-data": "./UserData/userdata.py",
        "lcm-operation-user-data-class": "UserData",
        "record": record}});
    let driver = ScriptMgmtDriver::new(ScriptConfig::default());
    let fields = driver
        .run(&user_data_call("instantiate", "UserData", request.clone()))
        .await
        .unwrap();
    assert_eq!(
        fields,
        json!({
            "template": "heat_template_version: 2013-05-23\nresources: {}\n",
            "files": {"VDU1.yaml": "resources: {}\n"},
            "parameters": {"nfv": {"VDU": {"VDU1": {"computeFlavourId": "m1.tiny"}}}}
        })
    );
    let seen: Json = serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    assert_eq!(seen["method"], "instantiate");
    assert_eq!(seen["req"], request);
    assert_eq!(
        seen["grant_req"]["addResources"][0]["resourceTemplateId"],
        "VDU1"
    );
    assert_eq!(seen["grant"]["id"], "g1");
    // The instance carries the resolved VIM connection, credentials included, as Tacker's.
    assert_eq!(seen["inst"]["id"], "inst-1");
    assert_eq!(
        seen["inst"]["vimConnectionInfo"]["vim1"]["accessInfo"]["password"],
        "s3cr3t-Pa55w0rd"
    );
    let tmp = seen["tmp_csar_dir"].as_str().unwrap();
    assert_eq!(
        seen["cwd"], tmp,
        "the package copy is the working directory"
    );
    assert_eq!(
        seen["files"],
        json!([
            "Definitions/vnfd_top.yaml",
            "Files/config/app.conf",
            "Scripts/hook.py",
            "UserData/consts.py",
            "UserData/userdata.py"
        ]),
        "the package files, and nothing else"
    );
    assert!(
        !std::path::Path::new(tmp).exists(),
        "the temporary package directory is removed"
    );

    // A rollback calls `<operation>_rollback`.
    let fields = driver
        .run(&user_data_call("scale_rollback", "UserData", request))
        .await
        .unwrap();
    assert_eq!(
        fields,
        json!({"parameters": {"nfv": {"VDU": {"VDU1": {"desired_capacity": 1}}}}})
    );
    let seen: Json = serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    assert_eq!(seen["method"], "scale_rollback");
}

#[tokio::test]
async fn a_failing_or_missing_class_or_method_says_what_failed() {
    let driver = ScriptMgmtDriver::new(ScriptConfig::default());
    let request = json!({"additionalParams": {}});

    // The method raises: its exception, after the traceback; a retry runs it again.
    let err = driver
        .run(&user_data_call("heal", "UserData", request.clone()))
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("user data class `UserData` of `./UserData/userdata.py` (method `heal`)"),
        "{msg}"
    );
    assert!(msg.contains("exit status 1"), "{msg}");
    assert!(
        msg.contains("UserData.heal raised ValueError: no heal today"),
        "{msg}"
    );
    assert!(err.is_retryable(), "{err:?}");

    // No such class, no such method: permanent, named.
    let err = driver
        .run(&user_data_call(
            "instantiate",
            "NoSuchClass",
            request.clone(),
        ))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("module `UserData.userdata` has no class `NoSuchClass`"),
        "{err}"
    );
    assert!(!err.is_retryable(), "{err:?}");
    let err = driver
        .run(&user_data_call(
            "change_vnfpkg",
            "UserData",
            request.clone(),
        ))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains(
            "class `UserData` of module `UserData.userdata` has no method `change_vnfpkg`"
        ),
        "{err}"
    );
    assert!(!err.is_retryable(), "{err:?}");

    // An answer that is not a dict.
    let err = driver
        .run(&user_data_call(
            "change_ext_conn",
            "UserData",
            request.clone(),
        ))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("UserData.change_ext_conn returned list, not a dict"),
        "{err}"
    );

    // A file the package does not hold, a module that does not import.
    let mut missing = user_data_call("instantiate", "UserData", request.clone());
    missing.file = "./UserData/nope.py".into();
    let err = driver.run(&missing).await.unwrap_err();
    assert!(err.to_string().contains("`UserData/nope.py`"), "{err}");
    let mut broken = user_data_call("instantiate", "UserData", request);
    broken.artifacts = Arc::new(package("").with(
        "UserData/userdata.py",
        "from tacker.sol_refactored.common import common_script_utils\n",
    ));
    let err = driver.run(&broken).await.unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("importing module `UserData.userdata` from the package failed"),
        "{msg}"
    );
    assert!(msg.contains("--python"), "{msg}");
    assert!(
        !msg.contains("s3cr3t-Pa55w0rd"),
        "VIM secrets are never in the message: {msg}"
    );
}
