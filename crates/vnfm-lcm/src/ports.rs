//! The seams between the lifecycle runner and the services around it.
//!
//! The runner executes operation occurrences; it does not itself know how a VIM's secrets are
//! stored, which subscriptions want which notification, or where onboarded VNFDs live. Those
//! are the three traits here, each with a production implementation elsewhere in the crate and
//! simple ones for tests:
//!
//! - [`VimDirectory`]: turns the `vimConnectionInfo` of an instance into [`ResolvedVim`]s (a
//!   reference to a registered VIM has its secrets decrypted; inline access info is used as
//!   given), and registers / deregisters the VIMs that LCM hooks create;
//! - [`NotificationRouter`]: turns one notification into the outbox rows of the subscriptions
//!   that want it, so they are written in the same store transaction as the state change;
//! - [`PackageCatalog`]: finds the onboarded VNFD (and its package files) for a `vnfdId`.

use std::sync::Arc;

use async_trait::async_trait;
use vnfm_descriptor::Vnfd;
use vnfm_driver_api::{ArtifactSource, ResolvedVim, VimRegistration};
use vnfm_store::NewOutboxRow;
use vnfm_types::{LccnNotification, VimConnectionInfo, VimId, VnfInstance, VnfInstanceId};

use crate::LcmError;

/// Resolves and registers VIMs.
#[async_trait]
pub trait VimDirectory: Send + Sync {
    /// Resolves the entry `key` of an instance's `vimConnectionInfo`: when it references a
    /// registered VIM (`vimId` without inline `accessInfo`), the registered access information
    /// with decrypted secrets; otherwise the inline access information as given.
    async fn resolve(&self, key: &str, info: &VimConnectionInfo) -> Result<ResolvedVim, LcmError>;

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

/// Finds onboarded VNFDs.
pub trait PackageCatalog: Send + Sync {
    /// The onboarded VNFD with descriptor id `vnfd_id`, if any.
    fn vnfd(&self, vnfd_id: &str) -> Option<OnboardedVnfd>;
}
