//! The infrastructure driver port: [`InfraDriver`], what it is asked ([`InfraRequest`],
//! [`InfraStep`]) and what it answers ([`InfraOutcome`]).
//!
//! One driver serves a family of VIM types (OpenStack, Kubernetes, ...). The core plans an
//! operation into steps; each infrastructure step is one [`InfraStep`] value, which already
//! holds what the planner computed from the VNFD (target scale levels, instance counts per VDU,
//! the VNFCs to heal). [`execute`] dispatches a request to the trait method of its step.
//!
//! Drivers must be idempotent per step: after a crash or a retry, the same step is executed
//! again with the same request, and `driver_state` holds what the driver persisted last time.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use vnfm_descriptor::{Flavour, Vnfd};
use vnfm_types::{
    ExtManagedVirtualLinkInfo, ExtVirtualLinkInfo, LcmOperationType, OperationParams,
    ResourceChanges, ScaleType, StopType, TerminationType, VirtualStorageResourceInfo,
    VnfExtCpInfo, VnfInstance, VnfLcmOpOccId, VnfOperationalState, VnfVirtualLinkResourceInfo,
    VnfcInfo, VnfcResourceInfo, VnfdId,
};

use crate::vim::RedactedVims;
use crate::{ArtifactSource, DriverError, ResolvedVim, RunControl};

/// The resources a VNF should have: the result of planning, from the VNFD.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTarget {
    /// The deployment flavour.
    pub flavour_id: String,
    /// The instantiation level the counts come from, when the operation named one (or the
    /// flavour's default level was used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instantiation_level_id: Option<String>,
    /// Scale level per scaling aspect of the flavour (every aspect listed).
    #[serde(default)]
    pub scale_levels: BTreeMap<String, u32>,
    /// Number of VNFC instances per VDU of the flavour (every VDU listed).
    #[serde(default)]
    pub vdu_instances: BTreeMap<String, u32>,
}

impl ResourceTarget {
    /// The number of instances planned for `vdu_id` (0 when the VDU is not listed).
    pub fn instances_of(&self, vdu_id: &str) -> u32 {
        self.vdu_instances.get(vdu_id).copied().unwrap_or(0)
    }
}

/// One VNFC to heal, resolved by the planner from the request's `vnfcInstanceId`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HealVnfc {
    /// `vnfcInfo[].id` named in the request, when the request named a `vnfcInfo` entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfc_info_id: Option<String>,
    /// `vnfcResourceInfo[].id` of the compute resource to heal.
    pub vnfc_resource_id: String,
    /// Its VDU.
    pub vdu_id: String,
}

/// What a heal step covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "scope",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum HealScope {
    /// The whole VNF (no `vnfcInstanceId` in the request).
    WholeVnf,
    /// The listed VNFCs.
    Vnfcs {
        /// The VNFCs, in request order.
        vnfcs: Vec<HealVnfc>,
    },
}

/// The kind of an infrastructure step: one per [`InfraDriver`] method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InfraOperation {
    /// [`InfraDriver::instantiate`].
    Instantiate,
    /// [`InfraDriver::terminate`].
    Terminate,
    /// [`InfraDriver::scale`].
    Scale,
    /// [`InfraDriver::scale_to_level`].
    ScaleToLevel,
    /// [`InfraDriver::heal`].
    Heal,
    /// [`InfraDriver::operate`].
    Operate,
    /// [`InfraDriver::change_ext_conn`].
    ChangeExtConn,
    /// [`InfraDriver::change_flavour`].
    ChangeFlavour,
    /// [`InfraDriver::change_vnfpkg`].
    ChangeVnfpkg,
    /// [`InfraDriver::rollback_instantiate`].
    RollbackInstantiate,
    /// [`InfraDriver::rollback_scale`].
    RollbackScale,
    /// [`InfraDriver::rollback_change_ext_conn`].
    RollbackChangeExtConn,
    /// [`InfraDriver::rollback_change_vnfpkg`].
    RollbackChangeVnfpkg,
}

impl InfraOperation {
    /// Every operation.
    pub const ALL: [InfraOperation; 13] = [
        InfraOperation::Instantiate,
        InfraOperation::Terminate,
        InfraOperation::Scale,
        InfraOperation::ScaleToLevel,
        InfraOperation::Heal,
        InfraOperation::Operate,
        InfraOperation::ChangeExtConn,
        InfraOperation::ChangeFlavour,
        InfraOperation::ChangeVnfpkg,
        InfraOperation::RollbackInstantiate,
        InfraOperation::RollbackScale,
        InfraOperation::RollbackChangeExtConn,
        InfraOperation::RollbackChangeVnfpkg,
    ];

    /// The snake_case name, as the trait method is called (`rollback_scale`, ...).
    pub fn name(self) -> &'static str {
        match self {
            InfraOperation::Instantiate => "instantiate",
            InfraOperation::Terminate => "terminate",
            InfraOperation::Scale => "scale",
            InfraOperation::ScaleToLevel => "scale_to_level",
            InfraOperation::Heal => "heal",
            InfraOperation::Operate => "operate",
            InfraOperation::ChangeExtConn => "change_ext_conn",
            InfraOperation::ChangeFlavour => "change_flavour",
            InfraOperation::ChangeVnfpkg => "change_vnfpkg",
            InfraOperation::RollbackInstantiate => "rollback_instantiate",
            InfraOperation::RollbackScale => "rollback_scale",
            InfraOperation::RollbackChangeExtConn => "rollback_change_ext_conn",
            InfraOperation::RollbackChangeVnfpkg => "rollback_change_vnfpkg",
        }
    }

    /// True for the rollback operations.
    pub fn is_rollback(self) -> bool {
        matches!(
            self,
            InfraOperation::RollbackInstantiate
                | InfraOperation::RollbackScale
                | InfraOperation::RollbackChangeExtConn
                | InfraOperation::RollbackChangeVnfpkg
        )
    }
}

impl fmt::Display for InfraOperation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One infrastructure step of a plan, with what the planner computed for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum InfraStep {
    /// Create the VNF's resources.
    Instantiate {
        /// Flavour, instantiation level, scale levels and instance counts to create.
        target: ResourceTarget,
    },
    /// Delete every resource of the VNF.
    Terminate {
        /// Forceful or graceful.
        termination_type: TerminationType,
        /// Seconds to wait for a graceful termination.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        graceful_timeout_seconds: Option<u32>,
    },
    /// Scale one aspect out or in.
    Scale {
        /// The aspect.
        aspect_id: String,
        /// Out or in.
        scale_type: ScaleType,
        /// Number of steps (at least 1).
        steps: u32,
        /// The resources before the step.
        from: ResourceTarget,
        /// The resources after the step.
        target: ResourceTarget,
    },
    /// Scale to an instantiation level or to given aspect levels.
    ScaleToLevel {
        /// The resources before the step.
        from: ResourceTarget,
        /// The resources after the step.
        target: ResourceTarget,
    },
    /// Heal (re-create) VNFCs.
    Heal {
        /// The VNFCs, or the whole VNF.
        scope: HealScope,
    },
    /// Start or stop the VNF or some VNFCs.
    Operate {
        /// The state to reach.
        change_state_to: VnfOperationalState,
        /// How to stop.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stop_type: Option<StopType>,
        /// Seconds to wait for a graceful stop.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        graceful_stop_timeout_seconds: Option<u32>,
        /// `vnfcResourceInfo` ids to operate; empty for the whole VNF.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        vnfc_resource_ids: Vec<String>,
    },
    /// Change the external connectivity (the request's `extVirtualLinks`).
    ChangeExtConn {
        /// The external CPDs whose connectivity changes.
        cpd_ids: Vec<String>,
    },
    /// Move the VNF to another flavour.
    ChangeFlavour {
        /// The resources before the step.
        from: ResourceTarget,
        /// The resources after the step (in the new flavour).
        target: ResourceTarget,
    },
    /// Move the VNF to another package (VNFD).
    ChangeVnfpkg {
        /// The VNFD before.
        from_vnfd_id: VnfdId,
        /// The VNFD after.
        to_vnfd_id: VnfdId,
    },
    /// Undo an instantiation (delete whatever it created, even partially).
    RollbackInstantiate,
    /// Undo a scale (or scale-to-level) by returning to the resources before it.
    RollbackScale {
        /// The resources to return to.
        restore: ResourceTarget,
    },
    /// Undo a change of external connectivity (return to the instance's recorded links).
    RollbackChangeExtConn,
    /// Undo a package change.
    RollbackChangeVnfpkg {
        /// The VNFD to return to.
        restore_vnfd_id: VnfdId,
    },
}

impl InfraStep {
    /// The driver method this step runs.
    pub fn operation(&self) -> InfraOperation {
        match self {
            InfraStep::Instantiate { .. } => InfraOperation::Instantiate,
            InfraStep::Terminate { .. } => InfraOperation::Terminate,
            InfraStep::Scale { .. } => InfraOperation::Scale,
            InfraStep::ScaleToLevel { .. } => InfraOperation::ScaleToLevel,
            InfraStep::Heal { .. } => InfraOperation::Heal,
            InfraStep::Operate { .. } => InfraOperation::Operate,
            InfraStep::ChangeExtConn { .. } => InfraOperation::ChangeExtConn,
            InfraStep::ChangeFlavour { .. } => InfraOperation::ChangeFlavour,
            InfraStep::ChangeVnfpkg { .. } => InfraOperation::ChangeVnfpkg,
            InfraStep::RollbackInstantiate => InfraOperation::RollbackInstantiate,
            InfraStep::RollbackScale { .. } => InfraOperation::RollbackScale,
            InfraStep::RollbackChangeExtConn => InfraOperation::RollbackChangeExtConn,
            InfraStep::RollbackChangeVnfpkg { .. } => InfraOperation::RollbackChangeVnfpkg,
        }
    }

    /// The resources the step aims at, for steps that change instance counts.
    pub fn target(&self) -> Option<&ResourceTarget> {
        match self {
            InfraStep::Instantiate { target }
            | InfraStep::Scale { target, .. }
            | InfraStep::ScaleToLevel { target, .. }
            | InfraStep::ChangeFlavour { target, .. } => Some(target),
            InfraStep::RollbackScale { restore } => Some(restore),
            _ => None,
        }
    }
}

/// Everything a driver gets for one step.
///
/// `Debug` leaves out the request body and the instance (both may hold VIM credentials) and
/// redacts the VIM connections.
#[derive(Clone)]
pub struct InfraRequest {
    /// The operation occurrence the step belongs to.
    pub op_occ_id: VnfLcmOpOccId,
    /// The LCM operation of the occurrence (for a rollback step: the operation rolled back).
    pub operation: LcmOperationType,
    /// The step, with what the planner computed.
    pub step: InfraStep,
    /// The request body of the operation, typed.
    pub request: OperationParams,
    /// The VNF instance as it is now (as recorded before this step).
    pub instance: VnfInstance,
    /// The VNFD of the instance (for CHANGE_VNFPKG: the VNFD being changed to).
    pub vnfd: Arc<Vnfd>,
    /// The deployment flavour the step runs in.
    pub flavour_id: String,
    /// The instance's VIM connections, with secrets.
    pub vims: Vec<ResolvedVim>,
    /// The package files.
    pub artifacts: Arc<dyn ArtifactSource>,
    /// What this driver persisted with the instance after its last successful step (e.g. a
    /// Heat stack id); `null` before the first.
    pub driver_state: serde_json::Value,
    /// The NFVO's grant for the operation (SOL003 clause 9): VIM zones and assets (images,
    /// flavours) to use. `None` for steps that need none (rollbacks reuse the forward grant).
    pub grant: Option<Arc<vnfm_types::Grant>>,
    /// The grant request [`InfraRequest::grant`] answers, as the VNFM sent it to the NFVO
    /// (its `addResources`, `removeResources`, `dstVnfdId`, ...), when known.
    pub grant_request: Option<Arc<vnfm_types::GrantRequest>>,
    /// For a rollback of CHANGE_VNFPKG: the package it restores, the instance's own before
    /// the change ([`InfraRequest::vnfd`] and [`InfraRequest::artifacts`] stay the package
    /// changed to, whose objects a driver may have to find). Tacker's user data classes build
    /// the restored stack from it. `None` for every other step.
    pub restored_package: Option<crate::mgmt::TargetPackage>,
    /// Deadline and cancellation.
    pub control: RunControl,
}

impl InfraRequest {
    /// The flavour named by [`InfraRequest::flavour_id`], or `InvalidInput` when the VNFD has
    /// no such flavour.
    pub fn flavour(&self) -> Result<&Flavour, DriverError> {
        self.vnfd.flavour(&self.flavour_id).ok_or_else(|| {
            DriverError::invalid_input(format!(
                "the VNFD {} has no flavour `{}`",
                self.vnfd.descriptor_id, self.flavour_id
            ))
        })
    }

    /// The VIM connection for resources of a driver serving `types`: the one the grant chose
    /// (the `vimConnectionId` of its resources, [`Grant::chosen_vim_connections`]) when it is
    /// of one of `types`, else the first VIM connection whose type is one of `types`.
    ///
    /// [`Grant::chosen_vim_connections`]: vnfm_types::Grant::chosen_vim_connections
    pub fn vim_of_type(&self, types: &[&str]) -> Option<&ResolvedVim> {
        self.granted_vim(types)
            .or_else(|| self.vims.iter().find(|v| types.contains(&v.vim_type())))
    }

    /// The first VIM connection the grant chose that the request carries and whose type is
    /// one of `types` (any type when `types` is empty).
    pub fn granted_vim(&self, types: &[&str]) -> Option<&ResolvedVim> {
        let grant = self.grant.as_ref()?;
        grant.chosen_vim_connections().into_iter().find_map(|id| {
            self.vims.iter().find(|v| {
                v.connection_id == id && (types.is_empty() || types.contains(&v.vim_type()))
            })
        })
    }

    /// `additionalParams` of the request, when it has any.
    pub fn additional_params(&self) -> Option<&vnfm_types::KeyValuePairs> {
        additional_params_of(&self.request)
    }
}

/// `additionalParams` of `request`, when it has any.
pub fn additional_params_of(request: &OperationParams) -> Option<&vnfm_types::KeyValuePairs> {
    match request {
        OperationParams::Instantiate(r) => r.additional_params.as_ref(),
        OperationParams::Scale(r) => r.additional_params.as_ref(),
        OperationParams::ScaleToLevel(r) => r.additional_params.as_ref(),
        OperationParams::ChangeFlavour(r) => r.additional_params.as_ref(),
        OperationParams::Terminate(r) => r.additional_params.as_ref(),
        OperationParams::Heal(r) => r.additional_params.as_ref(),
        OperationParams::Operate(r) => r.additional_params.as_ref(),
        OperationParams::ChangeExtConn(r) => r.additional_params.as_ref(),
        OperationParams::ChangeVnfpkg(r) => r.additional_params.as_ref(),
        OperationParams::ModifyInfo(_) | OperationParams::Other(_) => None,
    }
}

/// `request` as its SOL003 request body (JSON), whatever its operation.
pub fn request_body_of(request: &OperationParams) -> serde_json::Value {
    let body = match request {
        OperationParams::Instantiate(r) => serde_json::to_value(r),
        OperationParams::Scale(r) => serde_json::to_value(r),
        OperationParams::ScaleToLevel(r) => serde_json::to_value(r),
        OperationParams::ChangeFlavour(r) => serde_json::to_value(r),
        OperationParams::Terminate(r) => serde_json::to_value(r),
        OperationParams::Heal(r) => serde_json::to_value(r),
        OperationParams::Operate(r) => serde_json::to_value(r),
        OperationParams::ChangeExtConn(r) => serde_json::to_value(r),
        OperationParams::ModifyInfo(r) => serde_json::to_value(r),
        OperationParams::ChangeVnfpkg(r) => serde_json::to_value(r),
        OperationParams::Other(r) => serde_json::to_value(r),
    };
    // The request types serialize to JSON objects; nothing else can fail.
    body.unwrap_or(serde_json::Value::Null)
}

impl fmt::Debug for InfraRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InfraRequest")
            .field("op_occ_id", &self.op_occ_id)
            .field("operation", &self.operation)
            .field("step", &self.step)
            .field("instance_id", &self.instance.id)
            .field("vnfd_id", &self.vnfd.descriptor_id)
            .field("flavour_id", &self.flavour_id)
            .field("vims", &self.vims)
            .field(
                "instance_vims",
                &RedactedVims::of(self.instance.vim_connection_info.iter().flatten()),
            )
            .field("driver_state", &self.driver_state)
            .field("restored_package", &self.restored_package)
            .field("control", &self.control)
            .finish_non_exhaustive()
    }
}

/// The resources of an instance after a step: what the core writes into
/// `instantiatedVnfInfo`. Each list replaces the recorded one.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InstanceResources {
    /// `vnfcResourceInfo`.
    #[serde(default)]
    pub vnfc_resource_info: Vec<VnfcResourceInfo>,
    /// `vnfcInfo`.
    #[serde(default)]
    pub vnfc_info: Vec<VnfcInfo>,
    /// `vnfVirtualLinkResourceInfo`.
    #[serde(default)]
    pub vnf_virtual_link_resource_info: Vec<VnfVirtualLinkResourceInfo>,
    /// `virtualStorageResourceInfo`.
    #[serde(default)]
    pub virtual_storage_resource_info: Vec<VirtualStorageResourceInfo>,
    /// `extCpInfo`.
    #[serde(default)]
    pub ext_cp_info: Vec<VnfExtCpInfo>,
    /// `extVirtualLinkInfo`.
    #[serde(default)]
    pub ext_virtual_link_info: Vec<ExtVirtualLinkInfo>,
    /// `extManagedVirtualLinkInfo`.
    #[serde(default)]
    pub ext_managed_virtual_link_info: Vec<ExtManagedVirtualLinkInfo>,
}

/// What a driver reports after a successful step.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InfraOutcome {
    /// The instance's resources after the step (empty after terminate and rollback of
    /// instantiate).
    pub resources: InstanceResources,
    /// Resources added, removed or modified by this step, for the operation occurrence.
    pub resource_changes: ResourceChanges,
    /// The operational state of the VNF after the step, when the step changed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_state: Option<VnfOperationalState>,
    /// Driver-private state to persist with the instance and hand back in the next request
    /// (`null` to clear it).
    #[serde(default)]
    pub driver_state: serde_json::Value,
    /// Keys the driver publishes in `instantiatedVnfInfo.metadata`, which clients and
    /// management scripts read (e.g. Tacker's `namespace` and `vdu_reses` of a CNF); each
    /// replaces the recorded key of that name, a `null` value removes it, and keys not named
    /// are kept.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub published_metadata: serde_json::Map<String, serde_json::Value>,
}

/// An infrastructure driver: deploys and changes VNF resources on one family of VIMs.
///
/// Every method has a default that returns [`DriverError::Unsupported`], so a driver
/// implements what its infrastructure can do. Methods are called with the step in
/// [`InfraRequest::step`] matching the method; [`execute`] does that dispatch.
#[async_trait]
pub trait InfraDriver: Send + Sync {
    /// A short name for messages and logs (e.g. `openstack`).
    fn name(&self) -> &str;

    /// The `vimType` values this driver serves (e.g. `ETSINFV.OPENSTACK_KEYSTONE.V_3`).
    fn vim_types(&self) -> &[&str];

    /// How the core validates, stores and shows VIM connections of this driver's types
    /// (`None`: the driver declares no kind, and VIMs of its types cannot be registered or
    /// given inline with credentials).
    fn vim_kind(&self) -> Option<std::sync::Arc<dyn crate::VimKind>> {
        None
    }

    /// Checks what the driver can tell from the request alone, before the operation
    /// occurrence is stored: an error refuses the request at once (the API answers 422 with
    /// its message) instead of failing the occurrence once it runs. `step` is the operation's
    /// first infrastructure step, `request` its parameters. Nothing is asked of the VIM
    /// here. The default accepts every request.
    fn check_request(
        &self,
        step: &InfraStep,
        request: &OperationParams,
    ) -> Result<(), DriverError> {
        let _ = (step, request);
        Ok(())
    }

    /// Creates the resources of [`InfraStep::Instantiate`].
    async fn instantiate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        Err(unsupported(self.name(), req))
    }

    /// Deletes every resource of the instance ([`InfraStep::Terminate`]).
    async fn terminate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        Err(unsupported(self.name(), req))
    }

    /// Scales one aspect ([`InfraStep::Scale`]).
    async fn scale(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        Err(unsupported(self.name(), req))
    }

    /// Scales to a level ([`InfraStep::ScaleToLevel`]).
    async fn scale_to_level(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        Err(unsupported(self.name(), req))
    }

    /// Heals VNFCs or the whole VNF ([`InfraStep::Heal`]).
    async fn heal(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        Err(unsupported(self.name(), req))
    }

    /// Starts or stops ([`InfraStep::Operate`]).
    async fn operate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        Err(unsupported(self.name(), req))
    }

    /// Changes external connectivity ([`InfraStep::ChangeExtConn`]).
    async fn change_ext_conn(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        Err(unsupported(self.name(), req))
    }

    /// Changes the flavour ([`InfraStep::ChangeFlavour`]).
    async fn change_flavour(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        Err(unsupported(self.name(), req))
    }

    /// Changes the package ([`InfraStep::ChangeVnfpkg`]).
    async fn change_vnfpkg(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        Err(unsupported(self.name(), req))
    }

    /// Undoes an instantiation, complete or partial ([`InfraStep::RollbackInstantiate`]).
    async fn rollback_instantiate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        Err(unsupported(self.name(), req))
    }

    /// Undoes a scale ([`InfraStep::RollbackScale`]).
    async fn rollback_scale(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        Err(unsupported(self.name(), req))
    }

    /// Undoes a change of external connectivity ([`InfraStep::RollbackChangeExtConn`]).
    async fn rollback_change_ext_conn(
        &self,
        req: &InfraRequest,
    ) -> Result<InfraOutcome, DriverError> {
        Err(unsupported(self.name(), req))
    }

    /// Undoes a package change ([`InfraStep::RollbackChangeVnfpkg`]).
    async fn rollback_change_vnfpkg(
        &self,
        req: &InfraRequest,
    ) -> Result<InfraOutcome, DriverError> {
        Err(unsupported(self.name(), req))
    }

    /// Looks at the instance's resources on the VIM now, outside any operation, and reports
    /// those in trouble (at most one condition per resource; none when all is well). The
    /// core calls it periodically and keeps an alarm open per reported condition (see
    /// [`crate::observe`]). The default answers [`DriverError::Unsupported`]: the driver
    /// observes nothing.
    async fn observe(
        &self,
        req: &crate::observe::ObserveRequest,
    ) -> Result<Vec<crate::observe::ObservedCondition>, DriverError> {
        let _ = req;
        Err(DriverError::unsupported(self.name(), "observe"))
    }
}

fn unsupported(driver: &str, req: &InfraRequest) -> DriverError {
    DriverError::unsupported(driver, req.step.operation().name())
}

/// Runs `req` on `driver`: calls the method that matches `req.step`, after checking that the
/// step has not already been cancelled or run out of time.
pub async fn execute(
    driver: &dyn InfraDriver,
    req: &InfraRequest,
) -> Result<InfraOutcome, DriverError> {
    let op = req.step.operation();
    req.control.check(&format!("infra step {op}"))?;
    match op {
        InfraOperation::Instantiate => driver.instantiate(req).await,
        InfraOperation::Terminate => driver.terminate(req).await,
        InfraOperation::Scale => driver.scale(req).await,
        InfraOperation::ScaleToLevel => driver.scale_to_level(req).await,
        InfraOperation::Heal => driver.heal(req).await,
        InfraOperation::Operate => driver.operate(req).await,
        InfraOperation::ChangeExtConn => driver.change_ext_conn(req).await,
        InfraOperation::ChangeFlavour => driver.change_flavour(req).await,
        InfraOperation::ChangeVnfpkg => driver.change_vnfpkg(req).await,
        InfraOperation::RollbackInstantiate => driver.rollback_instantiate(req).await,
        InfraOperation::RollbackScale => driver.rollback_scale(req).await,
        InfraOperation::RollbackChangeExtConn => driver.rollback_change_ext_conn(req).await,
        InfraOperation::RollbackChangeVnfpkg => driver.rollback_change_vnfpkg(req).await,
    }
}
