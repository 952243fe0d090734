//! Coordination scripts of a package change, run as Tacker v2's OpenStack driver runs them
//! (`_execute_coordinate_vnf_script`): after each VNFC was moved to the new package
//! (`lcm-operation-coordinate-new-vnf`), or back by a rollback (`-old-vnf`), `python3
//! <tmp_csar_dir>/<script>` runs with one pickled dict on stdin:
//!
//! | key | value |
//! |---|---|
//! | every member of the VDU's `new_vnfc_param` (`old_vnfc_param` in a rollback) | verbatim: `cp_name`, `username`, `password`, ... |
//! | `ssh_ip` | the VNFC's address on the connection point `cp_name`, `None` when the instance records none |
//! | `is_rollback` | `True` in a rollback |
//! | `LcmCoordRequest` | the SOL002 coordination request (a dict), `coordinationActionName` for the script to set |
//! | `inst` | the VNF instance, its VIM connections with their `accessInfo` |
//! | `vnfc_info_id` | the VNFC's `vnfcInfo` id, when it has one |
//!
//! Exit status 0 is success; stdout is not read (Tacker ignores it). Anything else fails the
//! step with the status and the last lines of stderr, as a failed hook does.

use std::collections::BTreeSet;

use serde_json::{Map, Value as Json};
use vnfm_driver_api::CoordinateCall;

use crate::{ScriptError, ScriptMgmtDriver, materialize_package, pickle, safe_relative, with_vims};

impl ScriptMgmtDriver {
    /// Runs `call`'s script for its VNFC in a fresh copy of the package.
    pub(crate) async fn coordinate_vnfc(&self, call: &CoordinateCall) -> Result<(), ScriptError> {
        let script = package_path(&call.script)?;
        self.interpreter()?;
        let stdin = pickle::encode(&Json::Object(input(call)))?;
        let dir = materialize_package(
            &call.vnfd,
            &*call.artifacts,
            BTreeSet::from([script.as_str()]),
            self.config.work_dir.as_deref(),
        )?;
        let result = self
            .exec(dir.path(), dir.path().join(&script), stdin, &call.control)
            .await;
        if let Err(e) = dir.close() {
            tracing::warn!(script = %call.script, error = %e, "removing the temporary package directory of a coordination script failed");
        }
        let finished = result?;
        if finished.status.success() {
            Ok(())
        } else {
            Err(self.exit_error(
                format!("coordination script {}", call.script),
                &finished,
                &call.vims,
            ))
        }
    }
}

/// The dict the script reads from stdin (see the [module documentation](self)).
pub(crate) fn input(call: &CoordinateCall) -> Map<String, Json> {
    let mut input = call.params.clone();
    input.insert(
        "ssh_ip".into(),
        call.vnfc.address.clone().map_or(Json::Null, Json::String),
    );
    input.insert("is_rollback".into(), Json::Bool(call.rollback));
    input.insert("LcmCoordRequest".into(), call.coordination_request.clone());
    input.insert("inst".into(), with_vims(&call.instance, &call.vims));
    if let Some(id) = &call.vnfc.info_id {
        input.insert("vnfc_info_id".into(), Json::String(id.clone()));
    }
    input
}

/// The package path of a script the request names as Tacker's samples do
/// (`./Scripts/coordinate_vnf.py` is `Scripts/coordinate_vnf.py`); an absolute path or one
/// that climbs out of the package is refused.
pub(crate) fn package_path(script: &str) -> Result<String, ScriptError> {
    let unsafe_path = || ScriptError::UnsafePath(script.to_string());
    if script.starts_with('/') {
        return Err(unsafe_path());
    }
    let path = script
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect::<Vec<_>>()
        .join("/");
    safe_relative(&path).map_err(|_| unsafe_path())?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Arc;
    use vnfm_driver_api::{CoordinatedVnfc, NoArtifacts, ResolvedVim, RunControl};

    #[test]
    fn script_paths_are_read_as_package_paths() {
        assert_eq!(
            package_path("./Scripts/coordinate_vnf.py").unwrap(),
            "Scripts/coordinate_vnf.py"
        );
        assert_eq!(package_path("Scripts//a.py").unwrap(), "Scripts/a.py");
        for bad in ["/etc/x.py", "../x.py", "Scripts/../../x.py", "", "./"] {
            assert!(
                matches!(package_path(bad), Err(ScriptError::UnsafePath(p)) if p == bad),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_input_is_tackers_vnfc_param_with_the_instances_credentials() {
        let vnfd: vnfm_descriptor::Vnfd = serde_json::from_value(json!({
            "descriptorId": "d1", "descriptorVersion": "1.0", "provider": "Acme",
            "productName": "Demo", "softwareVersion": "1.0",
            "toscaDefinitionsVersion": "tosca_simple_yaml_1_2", "vnfNodeType": "acme.VNF",
            "entryDefinitions": "Definitions/top.yaml", "flavours": []
        }))
        .unwrap();
        let vim = ResolvedVim::new(
            "vim1",
            serde_json::from_value(json!({
                "vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3",
                "accessInfo": {"username": "nfv", "password": "pw"}
            }))
            .unwrap(),
        );
        let params = json!({"cp_name": "VDU1_CP1", "username": "ubuntu", "password": "ubuntu"});
        let call = CoordinateCall {
            op_occ_id: vnfm_types::VnfLcmOpOccId::new("occ-1"),
            lcm_operation: vnfm_types::LcmOperationType::ChangeVnfpkg,
            script: "./Scripts/c.py".into(),
            rollback: true,
            vnfc: CoordinatedVnfc {
                vdu_id: "VDU1".into(),
                resource_id: "r1".into(),
                info_id: Some("VDU1-r1".into()),
                address: Some("10.0.0.5".into()),
            },
            params: params.as_object().unwrap().clone(),
            coordination_request: json!({"vnfInstanceId": "inst-1"}),
            instance: json!({"id": "inst-1", "vimConnectionInfo": {"vim1": {"vimType": "x"}}}),
            vnfd: Arc::new(vnfd),
            artifacts: Arc::new(NoArtifacts),
            vims: vec![vim],
            control: RunControl::with_timeout(std::time::Duration::from_secs(1)),
        };
        let input = Json::Object(input(&call));
        assert_eq!(
            input,
            json!({
                "cp_name": "VDU1_CP1", "username": "ubuntu", "password": "ubuntu",
                "ssh_ip": "10.0.0.5", "is_rollback": true,
                "LcmCoordRequest": {"vnfInstanceId": "inst-1"},
                "inst": {"id": "inst-1", "vimConnectionInfo": {"vim1": {
                    "vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3",
                    "accessInfo": {"username": "nfv", "password": "pw"}}}},
                "vnfc_info_id": "VDU1-r1"
            })
        );
        let dbg = format!("{call:?}");
        assert!(!dbg.contains("ubuntu") && !dbg.contains("\"pw\""), "{dbg}");
    }
}
