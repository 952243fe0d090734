//! The typed lifecycle operation request ([`OperationRequest`]) and the stem of each
//! operation's hook names: what the checks, the lookups and the planner all read.

use vnfm_types::{
    ChangeCurrentVnfPkgRequest, ChangeExtVnfConnectivityRequest, ChangeVnfFlavourRequest,
    HealVnfRequest, InstantiateVnfRequest, LcmOperationType, OperateVnfRequest, OperationParams,
    ScaleVnfRequest, ScaleVnfToLevelRequest, TerminateVnfRequest, VimConnectionChanges,
    VnfInfoModificationRequest,
};

use crate::error::LcmError;

/// Declares [`OperationRequest`], one variant per task with its request type, and `From` each
/// request, so a caller generic over the tasks names none.
macro_rules! operation_requests {
    ($($variant:ident($req:ty) = $doc:literal),* $(,)?) => {
        /// A lifecycle operation request, typed.
        #[derive(Debug, Clone, PartialEq)]
        pub enum OperationRequest {
            $(#[doc = $doc] $variant($req),)*
        }
        $(impl From<$req> for OperationRequest {
            fn from(r: $req) -> Self {
                OperationRequest::$variant(r)
            }
        })*
    };
}

operation_requests!(
    Instantiate(InstantiateVnfRequest) = "`INSTANTIATE`.",
    Terminate(TerminateVnfRequest) = "`TERMINATE`.",
    Heal(HealVnfRequest) = "`HEAL`.",
    Scale(ScaleVnfRequest) = "`SCALE`.",
    ScaleToLevel(ScaleVnfToLevelRequest) = "`SCALE_TO_LEVEL`.",
    ChangeFlavour(ChangeVnfFlavourRequest) = "`CHANGE_FLAVOUR`.",
    Operate(OperateVnfRequest) = "`OPERATE`.",
    ChangeExtConn(ChangeExtVnfConnectivityRequest) = "`CHANGE_EXT_CONN`.",
    ModifyInfo(VnfInfoModificationRequest) = "`MODIFY_INFO`.",
    ChangeVnfPkg(ChangeCurrentVnfPkgRequest) = "`CHANGE_VNFPKG`.",
);

impl OperationRequest {
    /// The changes the request makes to the instance's `vimConnectionInfo` (INSTANTIATE,
    /// CHANGE_FLAVOUR, CHANGE_EXT_CONN, CHANGE_VNFPKG, MODIFY_INFO), when it makes any.
    pub fn vim_changes(&self) -> Option<&VimConnectionChanges> {
        match self {
            OperationRequest::Instantiate(r) => r.vim_connection_info.as_ref(),
            OperationRequest::ChangeFlavour(r) => r.vim_connection_info.as_ref(),
            OperationRequest::ChangeExtConn(r) => r.vim_connection_info.as_ref(),
            OperationRequest::ChangeVnfPkg(r) => r.vim_connection_info.as_ref(),
            OperationRequest::ModifyInfo(r) => r.vim_connection_info.as_ref(),
            OperationRequest::Terminate(_)
            | OperationRequest::Heal(_)
            | OperationRequest::Scale(_)
            | OperationRequest::ScaleToLevel(_)
            | OperationRequest::Operate(_) => None,
        }
    }

    /// [`OperationRequest::vim_changes`], for rewriting in place.
    pub fn vim_changes_mut(&mut self) -> Option<&mut VimConnectionChanges> {
        match self {
            OperationRequest::Instantiate(r) => r.vim_connection_info.as_mut(),
            OperationRequest::ChangeFlavour(r) => r.vim_connection_info.as_mut(),
            OperationRequest::ChangeExtConn(r) => r.vim_connection_info.as_mut(),
            OperationRequest::ChangeVnfPkg(r) => r.vim_connection_info.as_mut(),
            OperationRequest::ModifyInfo(r) => r.vim_connection_info.as_mut(),
            OperationRequest::Terminate(_)
            | OperationRequest::Heal(_)
            | OperationRequest::Scale(_)
            | OperationRequest::ScaleToLevel(_)
            | OperationRequest::Operate(_) => None,
        }
    }

    /// The SOL003 operation type.
    pub fn operation_type(&self) -> LcmOperationType {
        match self {
            OperationRequest::Instantiate(_) => LcmOperationType::Instantiate,
            OperationRequest::Terminate(_) => LcmOperationType::Terminate,
            OperationRequest::Heal(_) => LcmOperationType::Heal,
            OperationRequest::Scale(_) => LcmOperationType::Scale,
            OperationRequest::ScaleToLevel(_) => LcmOperationType::ScaleToLevel,
            OperationRequest::ChangeFlavour(_) => LcmOperationType::ChangeFlavour,
            OperationRequest::Operate(_) => LcmOperationType::Operate,
            OperationRequest::ChangeExtConn(_) => LcmOperationType::ChangeExtConn,
            OperationRequest::ModifyInfo(_) => LcmOperationType::ModifyInfo,
            OperationRequest::ChangeVnfPkg(_) => LcmOperationType::ChangeVnfpkg,
        }
    }

    /// The request as the `operationParams` of an operation occurrence.
    pub fn to_params(&self) -> OperationParams {
        match self.clone() {
            OperationRequest::Instantiate(r) => OperationParams::Instantiate(r),
            OperationRequest::Terminate(r) => OperationParams::Terminate(r),
            OperationRequest::Heal(r) => OperationParams::Heal(r),
            OperationRequest::Scale(r) => OperationParams::Scale(r),
            OperationRequest::ScaleToLevel(r) => OperationParams::ScaleToLevel(r),
            OperationRequest::ChangeFlavour(r) => OperationParams::ChangeFlavour(r),
            OperationRequest::Operate(r) => OperationParams::Operate(r),
            OperationRequest::ChangeExtConn(r) => OperationParams::ChangeExtConn(r),
            OperationRequest::ModifyInfo(r) => OperationParams::ModifyInfo(r),
            OperationRequest::ChangeVnfPkg(r) => OperationParams::ChangeVnfpkg(r),
        }
    }

    /// The request as JSON (the body the API received, re-serialized).
    pub fn to_json(&self) -> serde_json::Value {
        let v = match self {
            OperationRequest::Instantiate(r) => serde_json::to_value(r),
            OperationRequest::Terminate(r) => serde_json::to_value(r),
            OperationRequest::Heal(r) => serde_json::to_value(r),
            OperationRequest::Scale(r) => serde_json::to_value(r),
            OperationRequest::ScaleToLevel(r) => serde_json::to_value(r),
            OperationRequest::ChangeFlavour(r) => serde_json::to_value(r),
            OperationRequest::Operate(r) => serde_json::to_value(r),
            OperationRequest::ChangeExtConn(r) => serde_json::to_value(r),
            OperationRequest::ModifyInfo(r) => serde_json::to_value(r),
            OperationRequest::ChangeVnfPkg(r) => serde_json::to_value(r),
        };
        // These types serialize to JSON objects infallibly (string keys, no custom serializers).
        v.unwrap_or(serde_json::Value::Null)
    }

    /// The stem of the operation's hook names (`instantiate`, `change_external_connectivity`,
    /// `modify_information`, `change_current_package`, ...).
    pub fn hook_prefix(&self) -> &'static str {
        hook_prefix(self.operation_type()).unwrap_or("unsupported")
    }
}

/// Fails with [`LcmError::UnsupportedOperation`] for the untyped parameters of the snapshot
/// operations (reported as CREATE_SNAPSHOT: `OperationParams::Other` does not say which).
impl TryFrom<OperationParams> for OperationRequest {
    type Error = LcmError;

    fn try_from(p: OperationParams) -> Result<Self, LcmError> {
        Ok(match p {
            OperationParams::Instantiate(r) => OperationRequest::Instantiate(r),
            OperationParams::Terminate(r) => OperationRequest::Terminate(r),
            OperationParams::Heal(r) => OperationRequest::Heal(r),
            OperationParams::Scale(r) => OperationRequest::Scale(r),
            OperationParams::ScaleToLevel(r) => OperationRequest::ScaleToLevel(r),
            OperationParams::ChangeFlavour(r) => OperationRequest::ChangeFlavour(r),
            OperationParams::Operate(r) => OperationRequest::Operate(r),
            OperationParams::ChangeExtConn(r) => OperationRequest::ChangeExtConn(r),
            OperationParams::ModifyInfo(r) => OperationRequest::ModifyInfo(r),
            OperationParams::ChangeVnfpkg(r) => OperationRequest::ChangeVnfPkg(r),
            OperationParams::Other(_) => {
                return Err(LcmError::UnsupportedOperation {
                    operation: LcmOperationType::CreateSnapshot,
                });
            }
        })
    }
}

/// The stem of the hook names of `op`, `None` for operations without hooks (snapshots).
pub fn hook_prefix(op: LcmOperationType) -> Option<&'static str> {
    Some(match op {
        LcmOperationType::Instantiate => "instantiate",
        LcmOperationType::Terminate => "terminate",
        LcmOperationType::Heal => "heal",
        LcmOperationType::Scale => "scale",
        LcmOperationType::ScaleToLevel => "scale_to_level",
        LcmOperationType::ChangeFlavour => "change_flavour",
        LcmOperationType::Operate => "operate",
        LcmOperationType::ChangeExtConn => "change_external_connectivity",
        LcmOperationType::ModifyInfo => "modify_information",
        LcmOperationType::ChangeVnfpkg => "change_current_package",
        LcmOperationType::CreateSnapshot | LcmOperationType::RevertToSnapshot => return None,
    })
}
