//! [`InlineVimDirectory`]: the VIM directory of a VNFM without a VIM registry (no keyring), which
//! uses `vimConnectionInfo` entries as given.

use async_trait::async_trait;
use vnfm_driver_api::{ResolvedVim, VimRegistration};
use vnfm_types::{VimConnectionInfo, VimId, VnfInstanceId};

use crate::error::LcmError;
use crate::ports::{SealedVim, VimDirectory};

/// A VIM directory without a registry: `vimConnectionInfo` entries are used as given, an entry
/// that only references a registered VIM (`vimId` without `accessInfo`) is refused, and hooks
/// cannot register VIMs.
///
/// Without a registry there is nowhere to keep secrets encrypted: inline `accessInfo` (passwords,
/// tokens) is stored **as given** in the occurrence's `operationParams`, the instance's
/// `vimConnectionInfo` and the journal, because the runner needs it at execution time. The
/// first time that happens in a runner ([`crate::Lcm`]) a warning is logged. The views the [`crate::Lcm`]
/// returns still show such secrets as `"***"`. For secrets encrypted at rest use
/// [`super::VimRegistry`] (the `vnfm::lcm` builder does when given a keyring).
#[derive(Debug, Clone, Copy, Default)]
pub struct InlineVimDirectory;

#[async_trait]
impl VimDirectory for InlineVimDirectory {
    fn resolves_locally(&self) -> bool {
        true
    }

    async fn resolve(
        &self,
        key: &str,
        info: &VimConnectionInfo,
        _owner: &VnfInstanceId,
    ) -> Result<ResolvedVim, LcmError> {
        if let (Some(id), None) = (&info.vim_id, &info.access_info)
            && info.interface_info.is_none()
        {
            return Err(LcmError::UnknownVim {
                pointer: format!("/vimConnectionInfo/{key}"),
                vim_id: id.to_string(),
            });
        }
        Ok(ResolvedVim::new(key, info.clone()))
    }

    async fn register(
        &self,
        registration: &VimRegistration,
        _created_by: &VnfInstanceId,
    ) -> Result<VimConnectionInfo, LcmError> {
        Err(LcmError::Unprocessable {
            pointer: String::new(),
            message: format!(
                "a hook asked to register VIM `{}`, but this VNFM has no VIM registry",
                registration.name
            ),
        })
    }

    async fn deregister(&self, vim_id: &VimId) -> Result<(), LcmError> {
        Err(LcmError::Unprocessable {
            pointer: String::new(),
            message: format!(
                "a hook asked to deregister VIM `{vim_id}`, but this VNFM has no VIM registry"
            ),
        })
    }

    async fn seal_inline(
        &self,
        _key: &str,
        info: &VimConnectionInfo,
        _owner: &VnfInstanceId,
        _current: Option<&VimConnectionInfo>,
    ) -> Result<SealedVim, LcmError> {
        Ok(SealedVim {
            reference: info.clone(),
            created: false,
        })
    }
}
