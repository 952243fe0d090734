//! The VIM registry and the index of the instances using each VIM.

use super::Result;
use crate::idempotency::PendingKey;
use crate::model::{Version, VimRecord};
use async_trait::async_trait;
use vnfm_types::{VimId, VnfInstanceId};

/// The VIM registry and the index of the instances using each VIM. Part of [`crate::Store`].
#[async_trait]
pub trait VimStore: Send + Sync {
    /// Stores a VIM at [`crate::Version::FIRST`].
    async fn create_vim(&self, vim: &VimRecord) -> Result<Version> {
        self.create_vim_keyed(vim, None).await
    }

    /// [`crate::VimStore::create_vim`] that also commits `key`, if given, with the VIM's id in
    /// the same transaction; [`crate::Conflict::KeyTaken`] (nothing written) when another
    /// request committed the key first.
    async fn create_vim_keyed(&self, vim: &VimRecord, key: Option<&PendingKey>) -> Result<Version>;

    /// The VIM and its version.
    async fn get_vim(&self, id: &VimId) -> Result<Option<(VimRecord, Version)>>;

    /// Replaces the VIM if its version is still `expected`.
    async fn update_vim(&self, vim: &VimRecord, expected: Version) -> Result<Version>;

    /// Deletes the VIM if its version is still `expected` and no instance's
    /// `vimConnectionInfo` references it ([`crate::Conflict::InUse`] otherwise).
    async fn delete_vim(&self, id: &VimId, expected: Version) -> Result<()>;

    /// All VIMs, ordered by id.
    async fn list_vims(&self) -> Result<Vec<(VimRecord, Version)>>;

    /// VIMs registered by the hooks of this instance.
    async fn vims_created_by(
        &self,
        instance_id: &VnfInstanceId,
    ) -> Result<Vec<(VimRecord, Version)>>;

    /// Instances that use the VIM, ordered by id: their `vimConnectionInfo` references it, or
    /// a resource handle's `vimConnectionId` names it directly.
    async fn instances_using_vim(&self, vim_id: &VimId) -> Result<Vec<VnfInstanceId>>;

    /// For every registered VIM that instances use, the `(VIM, instance)` pairs, ordered by VIM
    /// id, then instance id ([`crate::VimStore::instances_using_vim`] for all VIMs at once).
    ///
    /// The default asks [`crate::VimStore::instances_using_vim`] once per VIM; the SQL backends read the
    /// index once.
    async fn vim_usage(&self) -> Result<Vec<(VimId, VnfInstanceId)>> {
        let mut out = Vec::new();
        for (vim, _) in self.list_vims().await? {
            for instance in self.instances_using_vim(&vim.id).await? {
                out.push((vim.id.clone(), instance));
            }
        }
        out.sort();
        Ok(out)
    }
}
