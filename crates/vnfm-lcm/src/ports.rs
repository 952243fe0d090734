//! The seams between the lifecycle runner and the services around it.
//!
//! The runner executes operation occurrences; it does not itself know how a VIM's secrets are
//! stored, which subscriptions want which notification, or where onboarded VNFDs live. Those
//! are the three traits here, each with implementations elsewhere in the crate
//! ([`crate::VimRegistry`] and [`crate::InlineVimDirectory`], [`crate::SubscriptionRouter`],
//! [`crate::MemoryCatalog`]):
//!
//! - [`VimDirectory`]: turns the `vimConnectionInfo` of an instance into [`ResolvedVim`]s (a
//!   reference to a registered VIM has its secrets decrypted; inline access info is used as
//!   given), seals the inline access info of a request into a VIM of its own before anything
//!   of the operation is stored ([`VimDirectory::seal_inline`]), and registers / deregisters
//!   the VIMs that LCM hooks create, and names the default VIM of an INSTANTIATE that names
//!   none ([`VimDirectory::default_vim`]);
//! - [`NotificationRouter`]: turns one notification into the outbox rows of the subscriptions
//!   that want it, so they are written in the same store transaction as the state change;
//! - [`PackageCatalog`]: finds the onboarded VNFD (and its package files) for a `vnfdId`
//!   (in memory, [`crate::MemoryCatalog`], or from the store's package records, as the
//!   composition root assembles it).

use std::sync::Arc;

use async_trait::async_trait;
use vnfm_descriptor::Vnfd;
use vnfm_driver_api::{ArtifactSource, ResolvedVim, VimRegistration};
use vnfm_store::{NewOutboxRow, ProjectScope};
use vnfm_types::{LccnNotification, VimConnectionInfo, VimId, VnfInstance, VnfInstanceId};

use crate::LcmError;

/// Resolves and registers VIMs.
#[async_trait]
pub trait VimDirectory: Send + Sync {
    /// Resolves the entry `key` of the `vimConnectionInfo` of instance `owner`: when it
    /// references a registered VIM (`vimId` without inline `accessInfo`), the registered access
    /// information with decrypted secrets; otherwise the inline access information as given.
    ///
    /// A registry resolves only the VIMs `owner` may use: those of its project, or any when it
    /// belongs to no project (only callers that see every project reach such an instance). A
    /// VIM of another project is answered as one that is not registered
    /// ([`LcmError::UnknownVim`]), so that its existence does not leak.
    async fn resolve(
        &self,
        key: &str,
        info: &VimConnectionInfo,
        owner: &VnfInstanceId,
    ) -> Result<ResolvedVim, LcmError>;

    /// Checks that the entry `key` a request of `caller` writes into the `vimConnectionInfo` of
    /// instance `owner` may be stored there. Called for every write of `vimConnectionInfo`
    /// before anything of the operation is stored, so that MODIFY_INFO cannot store what an
    /// operation would refuse.
    ///
    /// A reference to a registered VIM must name one that [`VimDirectory::resolve`] would find
    /// for `owner` (`Ok(None)`), or one of a project `caller` sees (an administrator naming
    /// another project's VIM, as Tacker allows): then the answer is `Ok(Some(copy))`, the
    /// registered VIM's access information (secrets included), which the runner seals as a
    /// VIM of the instance in place of the reference, so the instance keeps working for its
    /// own project's callers (Tacker v2 copies the VIM's access information into the
    /// instance). A VIM neither may use is [`LcmError::UnknownVim`], as one that does not
    /// exist. By default nothing is checked (the directory resolves lazily).
    async fn check_reference(
        &self,
        key: &str,
        info: &VimConnectionInfo,
        owner: &VnfInstanceId,
        caller: &ProjectScope,
    ) -> Result<Option<VimConnectionInfo>, LcmError> {
        let _ = (key, info, owner, caller);
        Ok(None)
    }

    /// Whether [`VimDirectory::resolve`] answers from this process's own records (the store),
    /// without waiting on anyone else. The runner then resolves an operation's VIMs before it
    /// stores the occurrence, and stores it already begun; otherwise the occurrence is stored
    /// in `STARTING` first, so it can be seen and cancelled while the directory answers.
    fn resolves_locally(&self) -> bool {
        false
    }

    /// Registers a VIM that a lifecycle hook of `created_by` created (for example a Kubernetes
    /// cluster built on the instance's VMs), encrypting its secrets, and returns the
    /// `vimConnectionInfo` entry that references it.
    async fn register(
        &self,
        registration: &VimRegistration,
        created_by: &VnfInstanceId,
    ) -> Result<VimConnectionInfo, LcmError>;

    /// Removes a registered VIM (refused while an instance still uses it).
    async fn deregister(&self, vim_id: &VimId) -> Result<(), LcmError>;

    /// Prepares the request entry `key` of `vimConnectionInfo`, which carries inline
    /// `accessInfo`, for storage: the runner calls it for every such entry of an operation
    /// request before the occurrence, the instance or the journal record anything, and stores
    /// only the returned [`SealedVim::reference`].
    ///
    /// A registry validates the access information (errors point into the request, e.g.
    /// `/vimConnectionInfo/vim1/accessInfo/password`), stores it with its secrets encrypted as
    /// a VIM owned by `owner`, and returns an entry that references it (`vimId` the VIM's, an
    /// empty `accessInfo` marking it as sealed for [`VimDirectory::shown`]).
    /// `current` is the instance's entry under the same key, if any: when it references such a
    /// VIM with the same content, that VIM is reused instead of registering a duplicate.
    ///
    /// A directory without a registry returns the entry unchanged (its secrets are then stored
    /// as given).
    async fn seal_inline(
        &self,
        key: &str,
        info: &VimConnectionInfo,
        owner: &VnfInstanceId,
        current: Option<&VimConnectionInfo>,
    ) -> Result<SealedVim, LcmError>;

    /// The entry `key` of the `vimConnectionInfo` of instance `owner` as users see it, when it
    /// is a reference [`VimDirectory::seal_inline`] returned (marked by an empty `accessInfo`):
    /// what the request gave, with the NFVO's `vimId` (the sealed VIM's when the request gave
    /// none) and `accessInfo` without its secret members (SOL003 shows no passwords in
    /// responses). `None` when the entry is not such a reference or its VIM is gone; the
    /// runner then shows the reference.
    ///
    /// The default has none (a directory that never seals).
    async fn shown(
        &self,
        key: &str,
        entry: &VimConnectionInfo,
        owner: &VnfInstanceId,
    ) -> Result<Option<VimConnectionInfo>, LcmError> {
        let _ = (key, entry, owner);
        Ok(None)
    }

    /// Deletes those of `candidates` that [`VimDirectory::seal_inline`] registered for `owner`
    /// and that no instance references any more; returns the ids deleted. The runner calls it
    /// when an operation ends (`COMPLETED`, `FAILED`, `ROLLED_BACK`) with the VIMs its request
    /// and the instance before it referenced, and when an operation could not be started.
    ///
    /// The default deletes nothing (a directory that never registers).
    async fn release_inline(
        &self,
        owner: &VnfInstanceId,
        candidates: &[VimId],
    ) -> Result<Vec<VimId>, LcmError> {
        let _ = (owner, candidates);
        Ok(Vec::new())
    }

    /// Deletes every VIM registered on behalf of `owner` (sealed inline credentials and VIMs its
    /// hooks created) that no instance references; returns the ids deleted. The runner calls
    /// it after deleting the VNF identifier `owner`.
    ///
    /// The default deletes nothing (a directory that never registers).
    async fn release_owned(&self, owner: &VnfInstanceId) -> Result<Vec<VimId>, LcmError> {
        let _ = owner;
        Ok(Vec::new())
    }

    /// The VIM an INSTANTIATE of an instance of `project` (`None`: of no project) uses when
    /// neither its request nor the instance names any (as Tacker does with the default VIM of
    /// the instance's project): an entry that references it (`vimId` and `vimType`, no
    /// `accessInfo`), which the runner puts in the request under the key `default`, so the
    /// occurrence and the instance record the reference. `None` when the project has no
    /// default VIM.
    ///
    /// The default has none (a directory without a registry).
    async fn default_vim(
        &self,
        project: Option<&str>,
    ) -> Result<Option<VimConnectionInfo>, LcmError> {
        let _ = project;
        Ok(None)
    }
}

/// What [`VimDirectory::seal_inline`] made of a request's `vimConnectionInfo` entry.
#[derive(Clone, PartialEq)]
pub struct SealedVim {
    /// The entry to store in place of the request's: a reference to the registered VIM, or the
    /// entry as given by a directory without a registry.
    pub reference: VimConnectionInfo,
    /// Whether a VIM was registered for it (false when an existing one was reused or nothing
    /// was registered): the runner deletes it again if the operation then cannot start.
    pub created: bool,
}

impl std::fmt::Debug for SealedVim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SealedVim")
            .field(
                "reference",
                &vnfm_driver_api::RedactedVimInfo(&self.reference),
            )
            .field("created", &self.created)
            .finish()
    }
}

/// Decides who is told about a notification.
#[async_trait]
pub trait NotificationRouter: Send + Sync {
    /// The outbox rows (one per matching subscription) for `notification`.
    ///
    /// `instance` is the VNF instance the notification is about, as it is after the change (for
    /// a deletion, as it was), so that filters on its VNFD, product or name can be evaluated
    /// even before it is stored or after it is gone. `None` when the caller does not have it at
    /// hand; a router may then look it up.
    async fn route(
        &self,
        notification: &LccnNotification,
        instance: Option<&VnfInstance>,
    ) -> Result<Vec<NewOutboxRow>, LcmError>;

    /// [`NotificationRouter::route`] for a notification about `instance`, of `project`
    /// (`None`: of no project), before the instance is stored (its creation): a router that
    /// gives subscriptions only their own project's notifications cannot look its project
    /// up yet. Routers that do not divide notifications by project route it as `route` does.
    async fn route_created(
        &self,
        notification: &LccnNotification,
        instance: &VnfInstance,
        project: Option<&str>,
    ) -> Result<Vec<NewOutboxRow>, LcmError> {
        let _ = project;
        self.route(notification, Some(instance)).await
    }
}

/// An onboarded VNF package, as the runner needs it.
#[derive(Clone)]
pub struct OnboardedVnfd {
    /// The normalized VNFD.
    pub vnfd: Arc<Vnfd>,
    /// Read access to the package's files (hook artifacts, templates, manifests).
    pub files: Arc<dyn ArtifactSource>,
}

impl std::fmt::Debug for OnboardedVnfd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OnboardedVnfd")
            .field("vnfd", &self.vnfd.descriptor_id)
            .finish()
    }
}

/// Finds onboarded VNFDs: the core asks it for the VNFD of every operation, and whatever
/// backs it (memory, the package records of the store with their parsed VNFDs cached) answers,
/// so the caller of the core never has to load a package and ask again.
#[async_trait]
pub trait PackageCatalog: Send + Sync {
    /// The onboarded VNFD with descriptor id `vnfd_id`; `None` when no onboarded package has
    /// it. An error when the catalog could not tell (its store failed, a stored package could
    /// not be read).
    async fn vnfd(&self, vnfd_id: &str) -> Result<Option<OnboardedVnfd>, LcmError>;
}
