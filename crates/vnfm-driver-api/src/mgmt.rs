//! The management-driver port: the host side of LCM hooks.
//!
//! A VNFD binds operations of its `Vnflcm` interface (`instantiate_end`, `heal_start`,
//! `scale_rollback_start`, ...) to implementation artifacts. When a plan reaches such a hook,
//! the core calls [`MgmtDriver::call`] with a [`HookCall`]; the implementation (for example the
//! dynamic-library plugin host) runs the artifact and answers with a [`HookOutcome`]: changes to
//! apply to the instance, VIMs to register (a Kubernetes cluster the hook built) and data to
//! keep for a retry.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use vnfm_descriptor::Vnfd;
use vnfm_types::{
    Grant, GrantRequest, KeyValuePairs, LcmOperationType, VimConnectionInfo, VnfLcmOpOccId,
};

use crate::vim::RedactedVims;
use crate::{ArtifactSource, DriverError, ResolvedVim, RunControl};

/// The artifact a hook is bound to, as the planner resolved it from the VNFD.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookArtifact {
    /// Artifact name (key under `artifacts` in the VNFD).
    pub name: String,
    /// Package-relative path (or URI, when `external`).
    pub file: String,
    /// Artifact type, e.g. `tosca.artifacts.Implementation.Python`.
    pub artifact_type: String,
    /// Hex SHA-256 of the file in the package, when known: a plugin is bound to an artifact by
    /// name and digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// True when `file` is a URI outside the package.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub external: bool,
    /// Package-relative paths of the dependency artifacts (`implementation.dependencies`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<String>,
}

/// One hook invocation.
///
/// `Debug` leaves out the request, the instance and the hook inputs (they may hold
/// credentials) and redacts the VIM connections.
#[derive(Clone)]
pub struct HookCall {
    /// The operation occurrence.
    pub op_occ_id: VnfLcmOpOccId,
    /// The LCM operation of the occurrence.
    pub lcm_operation: LcmOperationType,
    /// The hook's operation name, e.g. `instantiate_end` or `scale_rollback_start`.
    pub operation: String,
    /// The artifact implementing the hook.
    pub artifact: HookArtifact,
    /// The operation's `inputs` from the VNFD, verbatim.
    pub inputs: IndexMap<String, serde_json::Value>,
    /// The request body of the LCM operation.
    pub request: serde_json::Value,
    /// The VNF instance as it is now.
    pub instance: serde_json::Value,
    /// The VNFD.
    pub vnfd: Arc<Vnfd>,
    /// The deployment flavour, when the instance has one.
    pub flavour_id: Option<String>,
    /// The instance's VIM connections, with secrets.
    pub vims: Vec<ResolvedVim>,
    /// The package files (the hook artifact among them).
    pub artifacts: Arc<dyn ArtifactSource>,
    /// Deadline and cancellation.
    pub control: RunControl,
    /// Data the hook returned from an earlier attempt of the same operation occurrence
    /// (`null` on the first), so a retried hook can resume.
    pub error_handling_data: serde_json::Value,
    /// The grant request the VNFM sent the NFVO for this occurrence, when it asked for one.
    pub grant_request: Option<Arc<GrantRequest>>,
    /// The NFVO's grant for this occurrence, when it has one.
    pub grant: Option<Arc<Grant>>,
    /// The package the operation moves the instance to, for the hook that gets it besides
    /// its own: `modify_information_end` of a MODIFY_INFO that changes `vnfdId` (Tacker's
    /// `new_csar_dir`).
    pub new_package: Option<TargetPackage>,
}

/// A question to a management driver outside any operation: what does the artifact (a plugin
/// that observes) see of the instance now? Asked by the core's infrastructure watch; the
/// answer's alarms and indicator values are applied as after a hook.
///
/// `Debug` leaves out the instance and redacts the VIM connections.
#[derive(Clone)]
pub struct ObserveCall {
    /// The artifact asked (one the instance's VNFD binds to a hook).
    pub artifact: HookArtifact,
    /// The VNF instance as it is now.
    pub instance: serde_json::Value,
    /// The VNFD.
    pub vnfd: Arc<Vnfd>,
    /// The deployment flavour.
    pub flavour_id: Option<String>,
    /// The instance's VIM connections, with secrets.
    pub vims: Vec<ResolvedVim>,
    /// The package files.
    pub artifacts: Arc<dyn ArtifactSource>,
    /// Deadline of the answer.
    pub control: RunControl,
}

impl fmt::Debug for ObserveCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObserveCall")
            .field("artifact", &self.artifact)
            .field("vnfd_id", &self.vnfd.descriptor_id)
            .field("flavour_id", &self.flavour_id)
            .field("vims", &self.vims)
            .field("control", &self.control)
            .finish_non_exhaustive()
    }
}

/// A coordination script to run for one VNFC during a package change: Tacker v2's
/// `lcm-operation-coordinate-new-vnf` (after the VNFC was moved to the new package) and
/// `lcm-operation-coordinate-old-vnf` (after a rollback moved it back), which a script runs to
/// coordinate with the VNF (over SSH) or an EM (SOL002 `LcmCoordRequest`) before the next
/// VNFC is touched.
///
/// The core chooses the VNFCs and gathers what Tacker hands the script; how the script runs
/// is the management driver's. `Debug` leaves out the parameters (they hold the VNFC's login),
/// the instance and the coordination request, and redacts the VIM connections.
#[derive(Clone)]
pub struct CoordinateCall {
    /// The operation occurrence.
    pub op_occ_id: VnfLcmOpOccId,
    /// The LCM operation of the occurrence.
    pub lcm_operation: LcmOperationType,
    /// The script, a path inside the package as the request names it (e.g.
    /// `./Scripts/coordinate_new_vnf.py`).
    pub script: String,
    /// True when the VNFC was moved back by a rollback (the old package's script).
    pub rollback: bool,
    /// The VNFC coordinated.
    pub vnfc: CoordinatedVnfc,
    /// The `new_vnfc_param` (or, in a rollback, `old_vnfc_param`) of the request's
    /// `vdu_params` entry for the VNFC's VDU, verbatim (`cp_name`, `username`, `password`, and
    /// whatever else the script reads).
    pub params: serde_json::Map<String, serde_json::Value>,
    /// The coordination request the script may complete and send (SOL002 `LcmCoordRequest`:
    /// instance, occurrence, operation, links), as JSON.
    pub coordination_request: serde_json::Value,
    /// The VNF instance after the infrastructure step that moved the VNFC.
    pub instance: serde_json::Value,
    /// The VNFD of the package that holds the script.
    pub vnfd: Arc<Vnfd>,
    /// The files of that package (the script among them).
    pub artifacts: Arc<dyn ArtifactSource>,
    /// The instance's VIM connections, with secrets.
    pub vims: Vec<ResolvedVim>,
    /// Deadline and cancellation.
    pub control: RunControl,
}

/// The VNFC a [`CoordinateCall`] is about.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CoordinatedVnfc {
    /// Its VDU.
    pub vdu_id: String,
    /// Its `vnfcResourceInfo` id.
    pub resource_id: String,
    /// The id of its `vnfcInfo` entry, when the instance has one.
    pub info_id: Option<String>,
    /// The IP address the instance records for the VNFC on the connection point the
    /// parameters name (`cp_name`), when it records one.
    pub address: Option<String>,
}

impl fmt::Debug for CoordinateCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CoordinateCall")
            .field("op_occ_id", &self.op_occ_id)
            .field("lcm_operation", &self.lcm_operation)
            .field("script", &self.script)
            .field("rollback", &self.rollback)
            .field("vnfc", &self.vnfc)
            .field("vnfd_id", &self.vnfd.descriptor_id)
            .field("vims", &self.vims)
            .field("control", &self.control)
            .finish_non_exhaustive()
    }
}

/// A package other than the one whose VNFD binds the hook (see [`HookCall::new_package`]).
#[derive(Clone)]
pub struct TargetPackage {
    /// Its VNFD.
    pub vnfd: Arc<Vnfd>,
    /// Its files.
    pub files: Arc<dyn ArtifactSource>,
}

impl fmt::Debug for TargetPackage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TargetPackage")
            .field("vnfd_id", &self.vnfd.descriptor_id)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for HookCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HookCall")
            .field("op_occ_id", &self.op_occ_id)
            .field("lcm_operation", &self.lcm_operation)
            .field("operation", &self.operation)
            .field("artifact", &self.artifact)
            .field("vnfd_id", &self.vnfd.descriptor_id)
            .field("flavour_id", &self.flavour_id)
            .field("vims", &self.vims)
            .field("control", &self.control)
            .field("error_handling_data", &self.error_handling_data)
            .field("new_package", &self.new_package)
            .finish_non_exhaustive()
    }
}

/// A VIM that a hook created and the core should register (e.g. a Kubernetes cluster built on
/// the VNF's VMs). `Debug` shows the `accessInfo` keys only.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VimRegistration {
    /// Name to register the VIM under.
    pub name: String,
    /// Key under which to add the VIM to the instance's `vimConnectionInfo` (the
    /// registration is not attached to the instance when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_id: Option<String>,
    /// The connection: type, interface info, access info with secrets.
    pub info: VimConnectionInfo,
}

impl fmt::Debug for VimRegistration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VimRegistration")
            .field("name", &self.name)
            .field("connection_id", &self.connection_id)
            .field("info", &crate::vim::RedactedVimInfo(&self.info))
            .finish()
    }
}

/// What a hook asks the core to change. Everything defaults to "no change".
#[derive(Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookOutcome {
    /// VIM connections to add to (or replace in) the instance's `vimConnectionInfo`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub vim_connection_info_add: BTreeMap<String, VimConnectionInfo>,
    /// Keys to remove from the instance's `vimConnectionInfo`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vim_connection_info_remove: Vec<String>,
    /// JSON Merge Patch (RFC 7396) to apply to the instance's `metadata`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<KeyValuePairs>,
    /// JSON Merge Patch to apply to the instance's `extensions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<KeyValuePairs>,
    /// JSON Merge Patch to apply to the instance's `instantiatedVnfInfo` (a Tacker script
    /// returns the whole instance, and Tacker takes its `instantiatedVnfInfo` over, e.g. the
    /// VNFCs a container update replaced); the drivers' private state in its `metadata` is
    /// kept as recorded. Ignored when the instance is not instantiated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instantiated_vnf_info: Option<KeyValuePairs>,
    /// VIMs the hook created, to register.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vims_to_register: Vec<VimRegistration>,
    /// Names of VIMs (registered earlier by a hook) to deregister.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vims_to_deregister: Vec<String>,
    /// Data to persist with the operation occurrence and hand back on a retry; `None` keeps
    /// what was there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_handling_data: Option<serde_json::Value>,
    /// Faults of the instance the hook observed: raised as alarms (or cleared, with severity
    /// `CLEARED`) through the core's [`crate::fault::FaultSink`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alarms: Vec<HookAlarm>,
    /// New values of the instance's VNF indicators (ids the VNFD declares), set through the
    /// core's [`crate::fault::IndicatorSink`].
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub indicator_values: BTreeMap<String, serde_json::Value>,
}

/// A fault of the instance a hook observed (SOL003 alarm attributes): raised, or cleared
/// when `severity` is `CLEARED`. The same fault (VNFC, type, cause) raised again updates its
/// open alarm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookAlarm {
    /// The VNFC concerned, if the fault is of one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfc_instance_id: Option<String>,
    /// The type of fault.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault_type: Option<String>,
    /// The probable cause.
    pub probable_cause: String,
    /// How urgent; `CLEARED` clears the fault's open alarm.
    pub severity: vnfm_types::PerceivedSeverity,
    /// The kind of event.
    pub event_type: vnfm_types::EventType,
    /// Free-text details.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<String>,
}

impl HookOutcome {
    /// True when the outcome asks for no change at all.
    pub fn is_noop(&self) -> bool {
        *self == HookOutcome::default()
    }
}

impl fmt::Debug for HookOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HookOutcome")
            .field(
                "vim_connection_info_add",
                &RedactedVims::of(&self.vim_connection_info_add),
            )
            .field(
                "vim_connection_info_remove",
                &self.vim_connection_info_remove,
            )
            .field("metadata", &self.metadata)
            .field("extensions", &self.extensions)
            // Only the attributes changed: the patch can be large.
            .field(
                "instantiated_vnf_info",
                &self
                    .instantiated_vnf_info
                    .as_ref()
                    .map(|p| p.keys().collect::<Vec<_>>()),
            )
            .field("vims_to_register", &self.vims_to_register)
            .field("vims_to_deregister", &self.vims_to_deregister)
            .field("error_handling_data", &self.error_handling_data)
            .field("alarms", &self.alarms)
            .field("indicator_values", &self.indicator_values)
            .finish()
    }
}

/// The host side of LCM hooks.
#[async_trait]
pub trait MgmtDriver: Send + Sync {
    /// Runs the hook `call.operation` with `call.artifact`.
    async fn call(&self, call: &HookCall) -> Result<HookOutcome, DriverError>;

    /// Why this driver, as configured, cannot run hooks bound to `artifact`, or `None` when
    /// it can (or cannot tell before running one, the default). Asked when a package is
    /// onboarded, so that a hook nothing will run is reported then rather than when an
    /// operation reaches it.
    fn cannot_run(&self, artifact: &HookArtifact) -> Option<String> {
        let _ = artifact;
        None
    }

    /// What `call.artifact` sees of the instance now, outside any operation (see
    /// [`ObserveCall`]): only [`HookOutcome::alarms`] and [`HookOutcome::indicator_values`]
    /// are applied. The default, and an artifact that does not observe, answer
    /// [`DriverError::Unsupported`].
    async fn observe(&self, call: &ObserveCall) -> Result<HookOutcome, DriverError> {
        Err(DriverError::unsupported(
            format!("management driver of `{}`", call.artifact.name),
            "observe",
        ))
    }

    /// Runs the coordination script of `call` for its VNFC; a failure of the script fails
    /// the step that moved the VNFC. The default, and a driver that runs no such scripts,
    /// answer [`DriverError::Unsupported`].
    async fn coordinate(&self, call: &CoordinateCall) -> Result<(), DriverError> {
        Err(DriverError::unsupported(
            format!("management driver (coordination script `{}`)", call.script),
            "coordinate",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn outcome_debug_redacts_and_json_is_camel_case() {
        let info: VimConnectionInfo = serde_json::from_value(json!({
            "vimType": "kubernetes",
            "interfaceInfo": {"endpoint": "https://10.0.0.1:6443"},
            "accessInfo": {"bearer_token": "very-secret-token"}
        }))
        .unwrap();
        let outcome = HookOutcome {
            vim_connection_info_add: [("k8s".to_string(), info.clone())].into(),
            vims_to_register: vec![VimRegistration {
                name: "cluster-a".into(),
                connection_id: Some("k8s".into()),
                info,
            }],
            ..Default::default()
        };
        let dbg = format!("{outcome:?}");
        assert!(!dbg.contains("very-secret-token"), "{dbg}");
        assert!(dbg.contains("bearer_token"), "{dbg}");
        let v = serde_json::to_value(&outcome).unwrap();
        assert_eq!(v["vimsToRegister"][0]["connectionId"], "k8s");
        assert_eq!(
            v["vimConnectionInfoAdd"]["k8s"]["accessInfo"]["bearer_token"],
            "very-secret-token"
        );
        assert!(!outcome.is_noop());
        assert!(HookOutcome::default().is_noop());
    }
}
