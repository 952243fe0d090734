//! [`LcmError`]: why the core refuses or cannot carry out a lifecycle operation.
//!
//! Each variant says what is wrong and what is allowed, and has a kind ([`LcmError::kind`]):
//! a conflict when the request conflicts with the state of the instance or the occurrence,
//! unprocessable when it names things the VNFD or the instance does not have, invalid when the
//! request itself is malformed, internal when the core's own records disagree. The edge that
//! reports the error turns the kind into a status.

use std::fmt::{self, Write as _};
use std::sync::Arc;

use vnfm_types::{ErrorKind, LcmOperationType};

use crate::state::{InvalidTransition, state_name};

/// How many known values an error message lists before it says "and N more".
const MAX_LISTED: usize = 12;
/// How many characters of a request-supplied value an error message repeats.
const MAX_ECHO: usize = 80;

/// The error a failure came from, kept as the `source` of an [`LcmError`]. Shared, so that an
/// `LcmError` stays cloneable (every waiter of an occurrence gets a copy); two causes are equal
/// when they read the same.
#[derive(Clone)]
pub struct Cause(Arc<dyn std::error::Error + Send + Sync>);

impl Cause {
    /// Keeps `error` as a cause.
    pub fn new(error: impl std::error::Error + Send + Sync + 'static) -> Cause {
        Cause(Arc::new(error))
    }
}

impl fmt::Debug for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl std::error::Error for Cause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl PartialEq for Cause {
    fn eq(&self, other: &Cause) -> bool {
        self.to_string() == other.to_string()
    }
}

impl Eq for Cause {}

/// Why a lifecycle operation is refused or cannot be planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LcmError {
    /// The operation needs an instantiated VNF.
    #[error(
        "{} requires an INSTANTIATED VNF instance, but instance {instance_id} is NOT_INSTANTIATED; instantiate it first",
        op_name(*operation)
    )]
    NotInstantiated {
        /// The instance.
        instance_id: String,
        /// The refused operation.
        operation: LcmOperationType,
    },
    /// INSTANTIATE on an instance that is already instantiated.
    #[error(
        "instance {instance_id} is already INSTANTIATED (flavour `{flavour_id}`); terminate it before instantiating again"
    )]
    AlreadyInstantiated {
        /// The instance.
        instance_id: String,
        /// Its current flavour.
        flavour_id: String,
    },
    /// A flavour the VNFD does not have.
    #[error(
        "VNFD {vnfd_id} has no deployment flavour `{}`; {}",
        echo(flavour),
        listing("flavours", known)
    )]
    UnknownFlavour {
        /// The VNFD.
        vnfd_id: String,
        /// The requested flavour.
        flavour: String,
        /// The VNFD's flavours.
        known: Vec<String>,
    },
    /// CHANGE_FLAVOUR to the flavour the instance already has.
    #[error("instance is already in flavour `{flavour}`; choose a different newFlavourId")]
    SameFlavour {
        /// The flavour.
        flavour: String,
    },
    /// An instantiation level the flavour does not have.
    #[error(
        "flavour `{flavour}` has no instantiation level `{}`; {}",
        echo(level),
        listing("instantiation levels", known)
    )]
    UnknownInstantiationLevel {
        /// The flavour.
        flavour: String,
        /// The requested level.
        level: String,
        /// The flavour's levels.
        known: Vec<String>,
    },
    /// A scaling aspect the flavour does not have.
    #[error(
        "flavour `{flavour}` has no scaling aspect `{}`; {}",
        echo(aspect),
        listing("scaling aspects", known)
    )]
    UnknownAspect {
        /// The flavour.
        flavour: String,
        /// The requested aspect.
        aspect: String,
        /// The flavour's aspects.
        known: Vec<String>,
    },
    /// A scale request that would leave the aspect's allowed levels.
    #[error(
        "scaling aspect `{aspect}` from level {current} to level {requested} is out of bounds: levels 0..={max} are allowed"
    )]
    ScaleOutOfBounds {
        /// The aspect.
        aspect: String,
        /// Its current level.
        current: u32,
        /// The level the request would reach (negative below zero).
        requested: i64,
        /// Its `max_scale_level`.
        max: u32,
    },
    /// A planned instance count outside the VDU's profile.
    #[error(
        "VDU `{vdu}` would have {requested} instances, outside its vdu_profile bounds {min}..={max}"
    )]
    VduInstancesOutOfBounds {
        /// The VDU.
        vdu: String,
        /// The planned count.
        requested: u64,
        /// `min_number_of_instances`.
        min: u32,
        /// `max_number_of_instances`.
        max: u32,
    },
    /// A VNFC id the instance does not have.
    #[error(
        "{pointer}: instance has no VNFC `{}`; {}",
        echo(id),
        listing("VNFC ids", known)
    )]
    UnknownVnfc {
        /// JSON pointer into the request.
        pointer: String,
        /// The id.
        id: String,
        /// The instance's VNFC ids (`vnfcInfo` and `vnfcResourceInfo`).
        known: Vec<String>,
    },
    /// An external CPD the flavour does not have.
    #[error(
        "{pointer}: flavour `{flavour}` has no external connection point `{}`; {}{}",
        echo(cpd),
        listing("external connection points", known),
        tolerated_cps(tolerated)
    )]
    UnknownExtCp {
        /// JSON pointer into the request.
        pointer: String,
        /// The flavour.
        flavour: String,
        /// The CPD id.
        cpd: String,
        /// The flavour's external CPs (SOL001: its `VnfExtCp` templates and the `VduCp`s its
        /// substitution mapping exposes).
        known: Vec<String>,
        /// The other VDU CPs of the flavour, which a request may connect too (as Tacker
        /// accepts them), although the VNFD does not expose them and some attach to an
        /// internal virtual link.
        tolerated: Vec<String>,
    },
    /// A virtual link descriptor the flavour does not have.
    #[error(
        "{pointer}: flavour `{flavour}` has no internal virtual link `{}`; {}",
        echo(vld),
        listing("virtual links", known)
    )]
    UnknownVirtualLink {
        /// JSON pointer into the request.
        pointer: String,
        /// The flavour.
        flavour: String,
        /// The VLD id.
        vld: String,
        /// The flavour's virtual links.
        known: Vec<String>,
    },
    /// A VIM connection id that neither the request nor the instance defines.
    #[error(
        "{pointer}: no VIM connection `{}` in the request or the instance; {}",
        echo(id),
        listing("VIM connections", known)
    )]
    UnknownVimConnection {
        /// JSON pointer into the request.
        pointer: String,
        /// The id.
        id: String,
        /// The known connection ids.
        known: Vec<String>,
    },
    /// Removing a VIM connection that instantiated resources still live on.
    #[error(
        "{pointer}: VIM connection `{id}` cannot be removed: resource `{resource}` of the instance lives on it"
    )]
    VimConnectionInUse {
        /// JSON pointer into the request.
        pointer: String,
        /// The connection id.
        id: String,
        /// A resource on it (e.g. a `vnfcResourceInfo` id).
        resource: String,
    },
    /// A hook bound in the VNFD to an artifact the flavour does not declare.
    #[error(
        "the VNFD binds hook `{operation}` to artifact `{artifact}`, which flavour `{flavour}` does not declare; fix the package"
    )]
    HookArtifactMissing {
        /// The hook operation.
        operation: String,
        /// The artifact name.
        artifact: String,
        /// The flavour.
        flavour: String,
    },
    /// A malformed request (violates a rule of SOL003 the schema cannot express).
    #[error("{pointer}: {message}")]
    InvalidRequest {
        /// JSON pointer to the offending attribute (`""` for the whole body).
        pointer: String,
        /// What is wrong and what is allowed.
        message: String,
    },
    /// An operation the core does not run (snapshots).
    #[error("{} is not supported by this VNFM", op_name(*operation))]
    UnsupportedOperation {
        /// The operation.
        operation: LcmOperationType,
    },
    /// The operation cannot be rolled back; the occurrence can be retried or failed.
    #[error("{} cannot be rolled back ({reason}); retry it or mark it FAILED", op_name(*operation))]
    RollbackNotSupported {
        /// The operation.
        operation: LcmOperationType,
        /// Why.
        reason: String,
    },
    /// An event the occurrence's state does not allow.
    #[error(transparent)]
    InvalidTransition(#[from] InvalidTransition),
    /// Another operation occurrence holds the VNF instance (the per-instance lock).
    #[error(
        "VNF instance {instance_id} is busy: operation occurrence {op_occ_id} is {}; wait for it to finish, or retry, roll back or fail it",
        state_name(*state)
    )]
    InstanceBusy {
        /// The instance.
        instance_id: String,
        /// The occurrence holding it.
        op_occ_id: String,
        /// Its state.
        state: vnfm_types::LcmOperationStateType,
    },
    /// A VNFD that no onboarded package provides.
    #[error(
        "no onboarded VNF package provides VNFD {}; onboard it first",
        echo(vnfd_id)
    )]
    UnknownVnfd {
        /// The VNFD id.
        vnfd_id: String,
    },
    /// CHANGE_VNFPKG to a VNFD the instance cannot move to.
    #[error(
        "CHANGE_VNFPKG from VNFD {} to VNFD {} is refused: {}",
        echo(from_vnfd_id),
        echo(to_vnfd_id),
        reasons.join("; ")
    )]
    PackageChangeRefused {
        /// The instance's VNFD.
        from_vnfd_id: String,
        /// The requested VNFD.
        to_vnfd_id: String,
        /// Each reason, with what would make the change acceptable.
        reasons: Vec<String>,
    },
    /// No registered infrastructure driver serves the instance's VIMs.
    #[error(
        "no infrastructure driver serves the VIM type(s) of the instance ({}); {}",
        if vim_types.is_empty() { "it has no vimConnectionInfo".to_string() } else { vim_types.join(", ") },
        listing("driver VIM types", known)
    )]
    NoInfraDriver {
        /// The VIM types of the instance's (and the request's) `vimConnectionInfo`.
        vim_types: Vec<String>,
        /// The VIM types the registered drivers serve.
        known: Vec<String>,
    },
    /// The VNFD binds a hook but no management driver is configured.
    #[error("the VNFD binds hook `{hook}` but no management driver is configured")]
    NoMgmtDriver {
        /// The hook operation.
        hook: String,
    },
    /// The VNFD binds a hook that the configured management driver cannot run (no plugin
    /// library for its artifact, no interpreter for a script, an artifact type no driver
    /// takes).
    #[error(
        "hook `{hook}` of flavour `{flavour}` needs management driver artifact `{artifact}`, which this server cannot run: {reason}; the operation was not started"
    )]
    HookNotRunnable {
        /// The hook operation.
        hook: String,
        /// The flavour that binds it.
        flavour: String,
        /// The artifact name.
        artifact: String,
        /// What is missing, as the management driver says.
        reason: String,
    },
    /// Deleting the identifier of an instantiated VNF.
    #[error(
        "VNF instance {instance_id} is INSTANTIATED; terminate it before deleting its identifier"
    )]
    InstanceInstantiated {
        /// The instance.
        instance_id: String,
    },
    /// Cancelling an occurrence whose cancellation is already under way.
    #[error("operation occurrence {op_occ_id} is already being cancelled")]
    CancelPending {
        /// The occurrence.
        op_occ_id: String,
    },
    /// Retrying an occurrence that failed while rolling back.
    #[error(
        "operation occurrence {op_occ_id} failed while rolling back; roll it back again or mark it FAILED"
    )]
    RetryAfterRollback {
        /// The occurrence.
        op_occ_id: String,
    },
    /// Another runner process is working on the occurrence.
    #[error("operation occurrence {op_occ_id} is being processed by runner {holder}")]
    OpOccLeased {
        /// The occurrence.
        op_occ_id: String,
        /// The runner holding its lease.
        holder: String,
    },
    /// [`crate::runner::Lcm::wait`] gave up.
    #[error("operation occurrence {op_occ_id} is still {} after {waited_ms} ms", state_name(*state))]
    WaitTimeout {
        /// The occurrence.
        op_occ_id: String,
        /// Its state when the wait ended.
        state: vnfm_types::LcmOperationStateType,
        /// How long was waited.
        waited_ms: u64,
    },
    /// The instance record, the VNFD and the plan disagree (a bug or a corrupted record).
    #[error("inconsistent lifecycle data: {message}")]
    Inconsistent {
        /// What disagrees.
        message: String,
        /// The error that revealed it (a record that does not read back), if any.
        #[source]
        source: Option<Cause>,
    },
    /// A record the request names does not exist.
    #[error("{kind} {} not found", echo(id))]
    NotFound {
        /// Kind of record (`VIM`, `subscription`).
        kind: &'static str,
        /// Its identifier.
        id: String,
    },
    /// A `vimConnectionInfo` entry references a VIM that is not registered.
    #[error(
        "{pointer}: no VIM `{}` is registered; register it first or give its accessInfo inline",
        echo(vim_id)
    )]
    UnknownVim {
        /// JSON pointer to the entry.
        pointer: String,
        /// The referenced `vimId`.
        vim_id: String,
    },
    /// Deleting a VIM that VNF instances still use.
    #[error(
        "VIM {vim_id} is still used by VNF instance(s) {}; terminate them or change their vimConnectionInfo first",
        instances.join(", ")
    )]
    VimInUse {
        /// The VIM.
        vim_id: String,
        /// The instances using it (at most a few).
        instances: Vec<String>,
    },
    /// Terminating a VNF instance, or deleting its identifier, while other instances use VIMs
    /// that its lifecycle hooks registered: they would lose their VIM.
    #[error(
        "{} VNF instance {instance_id}: VIM(s) its lifecycle hooks registered are still used by {}; {}",
        match action {
            GuardedAction::Terminate => "cannot terminate",
            GuardedAction::DeleteIdentifier => "cannot delete the identifier of",
        },
        dependents_listing(dependents),
        match action {
            GuardedAction::Terminate => "terminate those instances (or remove the VIM from their vimConnectionInfo) first, or terminate with additionalParams.forceWithDependents = true to leave them without it",
            GuardedAction::DeleteIdentifier => "terminate those instances (or remove the VIM from their vimConnectionInfo) first",
        }
    )]
    VimDependents {
        /// The instance whose hooks registered the VIMs.
        instance_id: String,
        /// What was refused.
        action: GuardedAction,
        /// The instances using them, with the VIM each uses (all of them; the message lists
        /// the first few).
        dependents: Vec<DependentInstance>,
    },
    /// A request references a VIM whose creating instance is going away or gone: it is not
    /// instantiated, is being terminated, or was deleted.
    #[error(
        "{pointer}: VIM {} was registered by a lifecycle hook of VNF instance {creator_id}, which {reason}; the VIM goes away with it, so it cannot be newly referenced: use another VIM",
        echo(vim_id)
    )]
    VimCreatorUnavailable {
        /// JSON pointer to the request's `vimConnectionInfo` entry.
        pointer: String,
        /// The referenced VIM.
        vim_id: String,
        /// The instance whose hook registered it.
        creator_id: String,
        /// Its state (`is NOT_INSTANTIATED`, `is being terminated by operation occurrence ...`,
        /// `no longer exists`).
        reason: String,
    },
    /// A well-formed request the VNFM cannot carry out (an unsupported option, a callback URI
    /// that failed its test).
    #[error("{pointer}: {message}")]
    Unprocessable {
        /// JSON pointer to the offending attribute.
        pointer: String,
        /// What is wrong.
        message: String,
    },
    /// An infrastructure driver refused the request before the operation started
    /// ([`vnfm_driver_api::InfraDriver::check_request`]): it cannot carry it out.
    #[error("the {driver} infrastructure driver refuses the request: {message}")]
    RefusedByDriver {
        /// The driver's name.
        driver: String,
        /// What the driver cannot carry out (the refusal's message).
        message: String,
        /// The driver's refusal.
        #[source]
        source: Cause,
    },
    /// The record changed concurrently or conflicts with another one.
    #[error("conflict: {message}")]
    Conflict {
        /// What conflicts, and what to do.
        message: String,
        /// The store's refusal, if it came from the store.
        #[source]
        source: Option<Cause>,
    },
    /// The alarm is not at the version the request expected (`If-Match`): someone changed it.
    #[error(
        "alarm {id} changed: its entity tag is now {current}; GET it again and retry with that If-Match"
    )]
    AlarmChanged {
        /// The alarm.
        id: String,
        /// Its current entity tag.
        current: String,
    },
    /// A write under an `If-Match` precondition found the resource (a VNF instance, a VIM, a
    /// PM job, a threshold) changed since; nothing was written.
    #[error(
        "{kind} {id} changed: its entity tag is now {current}; GET it again and retry with that If-Match"
    )]
    Changed {
        /// What the resource is.
        kind: &'static str,
        /// Its id.
        id: String,
        /// Its current entity tag.
        current: String,
    },
    /// The encryption keys cannot be loaded (never contains key material).
    #[error("encryption keys: {message}")]
    Keys {
        /// What is wrong with the keys or where they are read from.
        message: String,
        /// The failure reading or writing them, if any.
        #[source]
        source: Option<Cause>,
    },
    /// A stored secret cannot be decrypted with any configured key (never contains key material
    /// or plaintext).
    #[error(
        "cannot decrypt {what}: none of the {keys} configured encryption key(s) opens it; the key file is not the one it was encrypted with, or the stored value is corrupt"
    )]
    Decrypt {
        /// What was being decrypted (`the secrets of VIM v1`).
        what: String,
        /// How many keys were tried.
        keys: usize,
    },
    /// The store failed.
    #[error("store: {0}")]
    Store(#[source] Cause),
    /// The runner is shutting down ([`crate::Lcm::shutdown`]): it starts no operation. Another
    /// replica (or this one once restarted) takes the request.
    #[error(
        "this server is shutting down and starts no operation: send the request again (to another replica)"
    )]
    ShuttingDown,
    /// The store's database cannot be reached now (restarting, a standby being promoted):
    /// nothing was done, and the same call may succeed in a moment. The cause (kept as the
    /// source) is logged where the store notices it; the message names none.
    #[error("the database is unavailable; retry in a moment")]
    StoreUnavailable(#[source] Cause),
    /// The NFVO could not be asked for a grant, or refused it after the operation started.
    #[error("grant from the NFVO ({nfvo}) failed: {message}")]
    Grant {
        /// Which NFVO (`local`, `sol003 https://...`).
        nfvo: String,
        /// What went wrong.
        message: String,
    },
}

impl LcmError {
    /// What kind of failure this is: a conflict with the state of the instance or the
    /// occurrence, a reference the VNFD or instance cannot resolve (unprocessable), a
    /// malformed request (invalid), an inconsistent record (internal), ... The edge that
    /// reports the error (the REST API, an occurrence's ProblemDetails) turns the kind into a
    /// status.
    pub fn kind(&self) -> ErrorKind {
        match self {
            LcmError::InstanceBusy { .. }
            | LcmError::InstanceInstantiated { .. }
            | LcmError::CancelPending { .. }
            | LcmError::RetryAfterRollback { .. }
            | LcmError::OpOccLeased { .. } => ErrorKind::Conflict,
            LcmError::UnknownVnfd { .. }
            | LcmError::NoInfraDriver { .. }
            | LcmError::NoMgmtDriver { .. }
            | LcmError::HookNotRunnable { .. } => ErrorKind::Unprocessable,
            LcmError::WaitTimeout { .. } => ErrorKind::Timeout,
            LcmError::NotInstantiated { .. }
            | LcmError::AlreadyInstantiated { .. }
            | LcmError::VimConnectionInUse { .. }
            | LcmError::RollbackNotSupported { .. }
            | LcmError::InvalidTransition(_) => ErrorKind::Conflict,
            LcmError::UnknownFlavour { .. }
            | LcmError::PackageChangeRefused { .. }
            | LcmError::SameFlavour { .. }
            | LcmError::UnknownInstantiationLevel { .. }
            | LcmError::UnknownAspect { .. }
            | LcmError::ScaleOutOfBounds { .. }
            | LcmError::VduInstancesOutOfBounds { .. }
            | LcmError::UnknownVnfc { .. }
            | LcmError::UnknownExtCp { .. }
            | LcmError::UnknownVirtualLink { .. }
            | LcmError::UnknownVimConnection { .. }
            | LcmError::HookArtifactMissing { .. }
            | LcmError::UnsupportedOperation { .. }
            | LcmError::UnknownVim { .. }
            | LcmError::Unprocessable { .. }
            | LcmError::RefusedByDriver { .. } => ErrorKind::Unprocessable,
            LcmError::InvalidRequest { .. } => ErrorKind::Invalid,
            LcmError::NotFound { .. } => ErrorKind::NotFound,
            LcmError::VimInUse { .. }
            | LcmError::VimDependents { .. }
            | LcmError::VimCreatorUnavailable { .. }
            | LcmError::Conflict { .. }
            | LcmError::AlarmChanged { .. }
            | LcmError::Changed { .. } => ErrorKind::Conflict,
            LcmError::Inconsistent { .. }
            | LcmError::Keys { .. }
            | LcmError::Decrypt { .. }
            | LcmError::Store(_) => ErrorKind::Internal,
            LcmError::Grant { .. } | LcmError::StoreUnavailable(_) | LcmError::ShuttingDown => {
                ErrorKind::Unavailable
            }
        }
    }

    /// An [`LcmError::Inconsistent`] found by a check (no error caused it).
    pub fn inconsistent(message: impl Into<String>) -> Self {
        LcmError::Inconsistent {
            message: message.into(),
            source: None,
        }
    }

    /// An [`LcmError::Conflict`] found by the core itself.
    pub fn conflict(message: impl Into<String>) -> Self {
        LcmError::Conflict {
            message: message.into(),
            source: None,
        }
    }

    /// An [`LcmError::Keys`] found by a check.
    pub fn keys(message: impl Into<String>) -> Self {
        LcmError::Keys {
            message: message.into(),
            source: None,
        }
    }

    /// The error with `source` kept as its cause: for [`LcmError::Inconsistent`],
    /// [`LcmError::Conflict`] and [`LcmError::Keys`] (made with [`LcmError::inconsistent`],
    /// [`LcmError::conflict`], [`LcmError::keys`]); any other error is returned unchanged.
    #[must_use]
    pub fn because(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        if let LcmError::Inconsistent { source: s, .. }
        | LcmError::Conflict { source: s, .. }
        | LcmError::Keys { source: s, .. } = &mut self
        {
            *s = Some(Cause::new(source));
        }
        self
    }

    /// An [`LcmError::Store`] with the store's error as its cause
    /// ([`LcmError::StoreUnavailable`] for a [`vnfm_store::StoreError::Unavailable`]).
    pub fn store(source: impl std::error::Error + Send + Sync + 'static) -> Self {
        let unavailable = (&source as &(dyn std::error::Error + 'static))
            .downcast_ref::<vnfm_store::StoreError>()
            .is_some_and(vnfm_store::StoreError::is_unavailable);
        if unavailable {
            LcmError::StoreUnavailable(Cause::new(source))
        } else {
            LcmError::Store(Cause::new(source))
        }
    }

    /// An [`LcmError::InvalidRequest`].
    pub fn invalid(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        LcmError::InvalidRequest {
            pointer: pointer.into(),
            message: message.into(),
        }
    }
}

/// What [`LcmError::VimDependents`] refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuardedAction {
    /// TERMINATE (can be forced with `additionalParams.forceWithDependents`).
    Terminate,
    /// Deleting the VNF identifier.
    DeleteIdentifier,
}

/// A VNF instance that uses a VIM another instance's lifecycle hooks registered (the
/// `dependents` extension member of the API's 409 ProblemDetails).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DependentInstance {
    /// The instance using the VIM.
    pub vnf_instance_id: String,
    /// Its `vnfInstanceName`, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_instance_name: Option<String>,
    /// The VIM it uses.
    pub vim_id: String,
    /// When the instance does not reference the VIM yet: the operation occurrence (not yet
    /// begun, or failed before it began) whose request brings the reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_lcm_op_occ_id: Option<String>,
}

impl std::fmt::Display for DependentInstance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "VNF instance {}", self.vnf_instance_id)?;
        if let Some(n) = &self.vnf_instance_name {
            write!(f, " (\"{}\")", echo(n))?;
        }
        write!(f, " on VIM {}", self.vim_id)?;
        if let Some(o) = &self.vnf_lcm_op_occ_id {
            write!(f, " (requested by operation occurrence {o})")?;
        }
        Ok(())
    }
}

/// "VNF instance b (\"name\") on VIM v, ...", listing at most [`MAX_LISTED`].
pub(crate) fn dependents_listing(dependents: &[DependentInstance]) -> String {
    let mut out = String::new();
    for (i, d) in dependents.iter().take(MAX_LISTED).enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{d}");
    }
    if dependents.len() > MAX_LISTED {
        let _ = write!(out, " and {} more", dependents.len() - MAX_LISTED);
    }
    out
}

/// The operation's SOL003 name (`SCALE_TO_LEVEL`).
pub(crate) fn op_name(op: LcmOperationType) -> String {
    serde_json::to_value(op)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{op:?}"))
}

/// `s` cut to [`MAX_ECHO`] characters: request values are repeated in messages, and a long
/// (possibly hostile) value must not be.
pub(crate) fn echo(s: &str) -> String {
    match s.char_indices().nth(MAX_ECHO) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

/// "known flavours: a, b" / "the flavour has no flavours", listing at most [`MAX_LISTED`].
/// The VDU CPs accepted beyond the external ones, said apart from them (they are not
/// external in the VNFD).
fn tolerated_cps(tolerated: &[String]) -> String {
    if tolerated.is_empty() {
        return String::new();
    }
    format!(
        " (a request may also name, as Tacker accepts them, the VDU connection points the VNFD does not expose: {})",
        names(tolerated)
    )
}

fn listing(what: &str, known: &[String]) -> String {
    if known.is_empty() {
        return format!("there are no {what}");
    }
    format!("known {what}: {}", names(known))
}

/// The first [`MAX_LISTED`] of `known`, comma-separated, and how many more there are.
fn names(known: &[String]) -> String {
    let mut out = String::new();
    for (i, k) in known.iter().take(MAX_LISTED).enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&echo(k));
    }
    if known.len() > MAX_LISTED {
        let _ = write!(out, " and {} more", known.len() - MAX_LISTED);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_values_are_cut_and_long_lists_summarised() {
        let e = LcmError::UnknownFlavour {
            vnfd_id: "d".into(),
            flavour: "x".repeat(500),
            known: (0..20).map(|i| format!("f{i}")).collect(),
        };
        let msg = e.to_string();
        assert!(msg.len() < 250, "{msg}");
        assert!(msg.contains("…"), "{msg}");
        assert!(msg.ends_with("f11 and 8 more"), "{msg}");
        assert_eq!(e.kind(), ErrorKind::Unprocessable);
    }

    #[test]
    fn transitions_are_conflicts() {
        let t = crate::state::transition(
            vnfm_types::LcmOperationStateType::Completed,
            crate::state::Event::Retry,
        )
        .unwrap_err();
        let e = LcmError::from(t);
        assert_eq!(e.kind(), ErrorKind::Conflict);
        assert!(
            e.to_string()
                .starts_with("retry is not allowed while the operation occurrence is COMPLETED")
        );
    }

    #[test]
    fn an_unavailable_store_is_unavailable_and_names_no_cause() {
        use std::error::Error as _;
        let e = LcmError::store(vnfm_store::StoreError::Unavailable(
            "127.0.0.1:5432: connection refused".into(),
        ));
        assert_eq!(e.kind(), ErrorKind::Unavailable);
        assert!(!e.to_string().contains("refused"), "{e}");
        assert!(e.source().unwrap().to_string().contains("refused"));
        let e = LcmError::store(vnfm_store::StoreError::Backend("syntax".into()));
        assert_eq!(e.kind(), ErrorKind::Internal);
    }

    #[test]
    fn store_keys_and_conflict_errors_keep_their_cause() {
        use std::error::Error as _;
        let io = || std::io::Error::new(std::io::ErrorKind::PermissionDenied, "denied");
        let e = LcmError::store(io());
        assert_eq!(e.to_string(), "store: denied");
        assert_eq!(e.source().unwrap().to_string(), "denied");
        assert_eq!(e.kind(), ErrorKind::Internal);
        let k = LcmError::keys("cannot read key file k: denied").because(io());
        assert_eq!(
            k.to_string(),
            "encryption keys: cannot read key file k: denied"
        );
        assert!(k.source().is_some());
        assert!(
            LcmError::keys("no encryption key configured")
                .source()
                .is_none()
        );
        let c = LcmError::conflict("changed").because(io());
        assert_eq!(c.kind(), ErrorKind::Conflict);
        assert!(c.source().is_some());
        // Clones compare equal: waiters of an occurrence each get a copy.
        assert_eq!(c.clone(), c);
        assert_ne!(c, LcmError::conflict("changed"));
    }
}
