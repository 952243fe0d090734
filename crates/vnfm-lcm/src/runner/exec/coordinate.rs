//! Coordination scripts of a package change: Tacker v2's `lcm-operation-coordinate-new-vnf`
//! (run for each VNFC the CHANGE_VNFPKG moved to the new package) and
//! `lcm-operation-coordinate-old-vnf` (for each VNFC its rollback moved back), with the
//! VNFC's `vdu_params` entry.
//!
//! They run after the infrastructure step succeeded and before it is recorded, so a failing
//! script fails that step (`FAILED_TEMP`, the step's outcome not kept): a retry runs the step
//! and the scripts again, a rollback runs the rollback step and the old package's script, as
//! Tacker runs them inside its driver's package change. The core chooses the VNFCs (those of
//! the VDUs `vdu_params` names, on VIMs that do not run containers: Tacker's Kubernetes
//! driver runs no coordination scripts) and gathers their parameters; the management driver
//! runs the script ([`MgmtDriver::coordinate`](vnfm_driver_api::MgmtDriver::coordinate)).

use serde_json::{Map, Value as Json};
use vnfm_driver_api::{CoordinateCall, CoordinatedVnfc, additional_params_of};
use vnfm_types::VnfcResourceInfo;

use super::*;

/// The `additionalParams` member naming the script run after a VNFC moved to the new package.
pub(crate) const COORDINATE_NEW_VNF: &str = "lcm-operation-coordinate-new-vnf";
/// The `additionalParams` member naming the script run after a rollback moved a VNFC back.
pub(crate) const COORDINATE_OLD_VNF: &str = "lcm-operation-coordinate-old-vnf";
/// The `additionalParams` member with each VDU's parameters.
pub(crate) const VDU_PARAMS: &str = "vdu_params";

/// The script of a package-change step and the VNFCs to run it for.
#[derive(Debug, PartialEq)]
struct Coordination {
    script: String,
    rollback: bool,
    targets: Vec<Target>,
}

/// One VNFC to coordinate, with the parameters of its VDU.
#[derive(Debug, PartialEq)]
struct Target {
    vnfc: CoordinatedVnfc,
    params: Map<String, Json>,
    /// The key of the VIM connection its compute resource is on, when recorded.
    vim_connection_id: Option<String>,
}

impl Run {
    /// Runs the coordination scripts of `step` for the VNFCs of `after` (the instance as the
    /// step left it), one VNFC at a time, stopping at the first failure; `Ok(Ok(()))` when
    /// every script succeeded or there is none to run.
    pub(super) async fn coordinate(
        &mut self,
        step: &InfraStep,
        after: &VnfInstance,
        vims: &[ResolvedVim],
        (name, i, n): (&str, usize, usize),
    ) -> Result<Result<(), ProblemDetails>, Stop> {
        let plan = match coordination(step, &self.request, after) {
            Ok(Some(plan)) => plan,
            Ok(None) => return Ok(Ok(())),
            Err(e) => return Ok(Err(lcm_problem(name, i, n, &e, vims))),
        };
        let targets: Vec<Target> = plan
            .targets
            .into_iter()
            .filter(|t| !self.runs_containers(after, t.vim_connection_id.as_deref()))
            .collect();
        if targets.is_empty() {
            return Ok(Ok(()));
        }
        let member = if plan.rollback {
            COORDINATE_OLD_VNF
        } else {
            COORDINATE_NEW_VNF
        };
        let Some(mgmt) = self.inner.mgmt.clone() else {
            let e = LcmError::invalid(
                format!("/additionalParams/{member}"),
                "names a coordination script, but no management driver is configured to run it",
            );
            return Ok(Err(lcm_problem(name, i, n, &e, vims)));
        };
        // The script is in the package the VNFCs were moved to: the new one, or for a
        // rollback the one it restores.
        let package = match self.restored_package(step).await {
            Ok(restored) => restored.unwrap_or_else(|| self.ctx.vnfd.clone()),
            Err(e) => return Ok(Err(lcm_problem(name, i, n, &e, vims))),
        };
        let instance = serde_json::to_value(after).unwrap_or(Json::Null);
        let coordination_request = self.coordination_request(after);
        let budget = self.budget(&Step::Infra(step.clone()));
        for target in targets {
            let what = format!(
                "coordination script {} for VNFC {}",
                plan.script, target.vnfc.resource_id
            );
            let call = CoordinateCall {
                op_occ_id: self.occ.id.clone(),
                lcm_operation: self.occ.operation,
                script: plan.script.clone(),
                rollback: plan.rollback,
                vnfc: target.vnfc,
                params: target.params,
                coordination_request: coordination_request.clone(),
                instance: instance.clone(),
                vnfd: package.vnfd.clone(),
                artifacts: package.files.clone(),
                vims: vims.to_vec(),
                control: RunControl::new(budget, self.flag.clone()),
            };
            let span = tracing::info_span!(
                "lcm.coordinate",
                script = %call.script,
                vnfc = %call.vnfc.resource_id,
            );
            let mgmt = mgmt.clone();
            let fut: StepFuture<()> = Box::pin(panics::caught(
                name,
                async move { mgmt.coordinate(&call).await }.instrument(span),
            ));
            if let Err(e) = self.drive(fut, budget, &what).await? {
                return Ok(Err(self.driver_problem(
                    name,
                    i,
                    n,
                    e,
                    DriverLayer::Management,
                    vims,
                )));
            }
        }
        Ok(Ok(()))
    }

    /// Whether the VNFC on VIM connection `key` (the instance's driver's when unknown) runs
    /// in a container.
    fn runs_containers(&self, instance: &VnfInstance, key: Option<&str>) -> bool {
        let map = instance.vim_connection_info.clone().unwrap_or_default();
        key.and_then(|k| map.get(k))
            .and_then(|v| self.inner.infra.get(&v.vim_type).cloned())
            .or_else(|| select_driver(&self.inner, instance, &map).ok())
            .is_some_and(|d| crate::mixed::runs_containers(&*d))
    }

    /// The SOL002 `LcmCoordRequest` a script may complete and send to an EM, as Tacker makes
    /// it: `coordinationActionName` is for the script to set.
    fn coordination_request(&self, instance: &VnfInstance) -> Json {
        let links = &*self.inner.config.links;
        let version = ApiVersion::V2;
        serde_json::json!({
            "vnfInstanceId": instance.id,
            "vnfLcmOpOccId": self.occ.id,
            "lcmOperationType": self.occ.operation,
            "coordinationActionName": "should_be_set_by_script",
            "_links": {
                "vnfLcmOpOcc": {"href": links.href(LinkTarget::OpOcc {
                    version,
                    id: self.occ.id.as_str(),
                })},
                "vnfInstance": {"href": links.href(LinkTarget::Instance {
                    version,
                    id: instance.id.as_str(),
                })},
            }
        })
    }
}

/// The script `step` runs and the VNFCs of `after` to run it for: those whose VDU has an
/// entry in `vdu_params` (Tacker's package change moves only those), in the order of
/// `vnfcResourceInfo`. `None` for another step, or a request that names no script.
fn coordination(
    step: &InfraStep,
    request: &OperationParams,
    after: &VnfInstance,
) -> Result<Option<Coordination>, LcmError> {
    let (rollback, member, param) = match step {
        InfraStep::ChangeVnfpkg { .. } => (false, COORDINATE_NEW_VNF, "new_vnfc_param"),
        InfraStep::RollbackChangeVnfpkg { .. } => (true, COORDINATE_OLD_VNF, "old_vnfc_param"),
        _ => return Ok(None),
    };
    let Some(params) = additional_params_of(request) else {
        return Ok(None);
    };
    let script = match params.get(member) {
        None | Some(Json::Null) => return Ok(None),
        // Tacker: `if not script: return`.
        Some(Json::String(s)) if s.is_empty() => return Ok(None),
        Some(Json::String(s)) => s.clone(),
        Some(_) => {
            return Err(LcmError::invalid(
                format!("/additionalParams/{member}"),
                "must be a string: the path of a script in the package",
            ));
        }
    };
    let entries: &[Json] = match params.get(VDU_PARAMS) {
        None | Some(Json::Null) => &[],
        Some(Json::Array(a)) => a,
        Some(_) => {
            return Err(LcmError::invalid(
                format!("/additionalParams/{VDU_PARAMS}"),
                "must be an array of objects with vdu_id",
            ));
        }
    };
    let info = after.instantiated_vnf_info.as_ref();
    let vnfcs = info
        .and_then(|i| i.vnfc_resource_info.as_deref())
        .unwrap_or_default();
    let mut targets = Vec::new();
    for vnfc in vnfcs {
        let Some((index, entry)) = entries
            .iter()
            .enumerate()
            .find(|(_, e)| e.get("vdu_id").and_then(Json::as_str) == Some(vnfc.vdu_id.as_str()))
        else {
            continue;
        };
        let Some(Json::Object(p)) = entry.get(param) else {
            return Err(LcmError::invalid(
                format!("/additionalParams/{VDU_PARAMS}/{index}/{param}"),
                format!(
                    "must be an object (cp_name, username, password) when additionalParams.{member} names a script"
                ),
            ));
        };
        let info_id = info
            .and_then(|i| i.vnfc_info.as_deref())
            .unwrap_or_default()
            .iter()
            .find(|c| c.vnfc_resource_info_id.as_deref() == Some(vnfc.id.as_str()))
            .map(|c| c.id.clone());
        let address = p
            .get("cp_name")
            .and_then(Json::as_str)
            .and_then(|cp| address_on(vnfc, cp));
        targets.push(Target {
            vnfc: CoordinatedVnfc {
                vdu_id: vnfc.vdu_id.clone(),
                resource_id: vnfc.id.clone(),
                info_id,
                address,
            },
            params: p.clone(),
            vim_connection_id: vnfc.compute_resource.vim_connection_id.clone(),
        });
    }
    Ok(Some(Coordination {
        script,
        rollback,
        targets,
    }))
}

/// The first IP address the instance records for `vnfc` on its connection point `cp`.
fn address_on(vnfc: &VnfcResourceInfo, cp: &str) -> Option<String> {
    vnfc.vnfc_cp_info
        .as_deref()?
        .iter()
        .filter(|c| c.cpd_id == cp)
        .flat_map(|c| c.cp_protocol_info.as_deref().unwrap_or_default())
        .filter_map(|p| p.ip_over_ethernet.as_ref()?.ip_addresses.as_deref())
        .flatten()
        .find_map(|a| a.addresses.as_deref()?.first().cloned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use vnfm_types::VnfdId;

    fn instance() -> VnfInstance {
        let ip = |a: &str| {
            json!([{"layerProtocol": "IP_OVER_ETHERNET",
                    "ipOverEthernet": {"ipAddresses": [{"type": "IPV4", "addresses": [a]}]}}])
        };
        serde_json::from_value(json!({
            "id": "inst-1", "vnfdId": "v2", "vnfProvider": "Acme", "vnfProductName": "P",
            "vnfSoftwareVersion": "2.0", "vnfdVersion": "2.0",
            "instantiationState": "INSTANTIATED",
            "_links": {"self": {"href": "/vnflcm/v2/vnf_instances/inst-1"}},
            "instantiatedVnfInfo": {
                "flavourId": "simple", "vnfState": "STARTED",
                "vnfcResourceInfo": [
                    {"id": "a", "vduId": "VDU1", "computeResource": {"resourceId": "s-a", "vimConnectionId": "vim1"},
                     "vnfcCpInfo": [{"id": "cp-a", "cpdId": "VDU1_CP1", "cpProtocolInfo": ip("192.0.2.1")}]},
                    {"id": "b", "vduId": "VDU2", "computeResource": {"resourceId": "s-b"}},
                    {"id": "c", "vduId": "VDU1", "computeResource": {"resourceId": "s-c"}}
                ],
                "vnfcInfo": [{"id": "VDU1-a", "vduId": "VDU1", "vnfcResourceInfoId": "a", "vnfcState": "STARTED"}]
            }
        }))
        .unwrap()
    }

    fn request(params: Json) -> OperationParams {
        OperationParams::ChangeVnfpkg(
            serde_json::from_value(json!({"vnfdId": "v2", "additionalParams": params})).unwrap(),
        )
    }

    fn forward() -> InfraStep {
        InfraStep::ChangeVnfpkg {
            from_vnfd_id: VnfdId::new("v1"),
            to_vnfd_id: VnfdId::new("v2"),
        }
    }

    #[test]
    fn the_vnfcs_of_the_vdus_vdu_params_names_are_coordinated_with_their_params() {
        let params = json!({
            "upgrade_type": "RollingUpdate",
            "lcm-operation-coordinate-new-vnf": "./Scripts/new.py",
            "lcm-operation-coordinate-old-vnf": "./Scripts/old.py",
            "vdu_params": [{"vdu_id": "VDU1",
                "new_vnfc_param": {"cp_name": "VDU1_CP1", "username": "u", "password": "p"},
                "old_vnfc_param": {"cp_name": "VDU1_CP9", "username": "o", "password": "q"}}]
        });
        let got = coordination(&forward(), &request(params.clone()), &instance())
            .unwrap()
            .unwrap();
        assert_eq!(
            (got.script.as_str(), got.rollback),
            ("./Scripts/new.py", false)
        );
        let vnfcs: Vec<&CoordinatedVnfc> = got.targets.iter().map(|t| &t.vnfc).collect();
        assert_eq!(
            vnfcs,
            [
                &CoordinatedVnfc {
                    vdu_id: "VDU1".into(),
                    resource_id: "a".into(),
                    info_id: Some("VDU1-a".into()),
                    address: Some("192.0.2.1".into()),
                },
                &CoordinatedVnfc {
                    vdu_id: "VDU1".into(),
                    resource_id: "c".into(),
                    info_id: None,
                    address: None,
                },
            ]
        );
        assert_eq!(got.targets[0].params["username"], "u");
        assert_eq!(got.targets[0].vim_connection_id.as_deref(), Some("vim1"));

        let back = InfraStep::RollbackChangeVnfpkg {
            restore_vnfd_id: VnfdId::new("v1"),
        };
        let got = coordination(&back, &request(params), &instance())
            .unwrap()
            .unwrap();
        assert_eq!(
            (got.script.as_str(), got.rollback),
            ("./Scripts/old.py", true)
        );
        assert_eq!(got.targets[0].params["username"], "o");
        assert_eq!(got.targets[0].vnfc.address, None, "no address on VDU1_CP9");
    }

    #[test]
    fn without_a_script_nothing_runs_and_malformed_parameters_are_named() {
        let none = |params: Json| coordination(&forward(), &request(params), &instance());
        assert_eq!(
            none(json!({"upgrade_type": "RollingUpdate"})).unwrap(),
            None
        );
        assert_eq!(
            none(json!({"lcm-operation-coordinate-new-vnf": ""})).unwrap(),
            None
        );
        let scale = InfraStep::RollbackChangeExtConn;
        assert_eq!(
            coordination(
                &scale,
                &request(json!({"lcm-operation-coordinate-new-vnf": "a.py"})),
                &instance()
            )
            .unwrap(),
            None
        );
        let err = none(json!({"lcm-operation-coordinate-new-vnf": "a.py",
                              "vdu_params": [{"vdu_id": "VDU2"}]}))
        .unwrap_err();
        assert!(
            matches!(&err, LcmError::InvalidRequest { pointer, .. }
                if pointer == "/additionalParams/vdu_params/0/new_vnfc_param"),
            "{err:?}"
        );
        let err = none(json!({"lcm-operation-coordinate-new-vnf": 3})).unwrap_err();
        assert!(err.to_string().contains("must be a string"), "{err}");
    }
}
