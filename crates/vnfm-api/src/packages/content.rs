//! The local copies of package content (`crate::spool`): content stored in the store and kept
//! as a local file, written again from the store when this server lacks it, and opened entry
//! by entry.

use std::path::PathBuf;

use vnfm_csar::Package;
use vnfm_types::{PackageOnboardingState, VnfPkgInfo};

use crate::error::{ApiError, ApiResult};
use crate::spool::SpooledContent;

use super::Packages;

impl Packages {
    /// Stores spooled content in the store (in pieces, constant memory) and keeps the file
    /// as the package's local copy.
    pub(super) async fn store_content(
        &self,
        id: &str,
        content: SpooledContent,
    ) -> ApiResult<LocalContent> {
        let mut reader = content.open().await?;
        self.store.put_package_content_from(id, &mut reader).await?;
        drop(reader);
        tracing::info!(package = %id, bytes = content.len, sha256 = %content.sha256, "package content stored");
        let path = self.spool.content_path(id, &content.sha256)?;
        let sha256 = content.sha256.clone();
        content.keep(&path)?;
        self.spool.remove_copies(id, Some(&path));
        Ok(LocalContent { path, sha256 })
    }

    /// The local copy of package `id`'s content, written from the store when this server has
    /// none (another replica took the upload) or only one of other content; `None` when no
    /// content was uploaded. `digest` is the SHA-256 the package records, if any.
    pub(super) async fn local_content(
        &self,
        id: &str,
        digest: Option<&str>,
    ) -> ApiResult<Option<LocalContent>> {
        if let Some(sha256) = digest {
            let path = self.spool.content_path(id, sha256)?;
            if tokio::fs::try_exists(&path).await.unwrap_or(false) {
                return Ok(Some(LocalContent {
                    path,
                    sha256: sha256.to_owned(),
                }));
            }
        }
        let mut writer = self.spool.writer(u64::MAX)?;
        let found = self.store.copy_package_content_to(id, &mut writer).await?;
        if !found {
            return Ok(None);
        }
        let spooled = writer.finish().await?;
        let path = self.spool.content_path(id, &spooled.sha256)?;
        let sha256 = spooled.sha256.clone();
        spooled.keep(&path)?;
        self.spool.remove_copies(id, Some(&path));
        Ok(Some(LocalContent { path, sha256 }))
    }

    /// The local copy of an onboarded package's zip.
    pub(super) async fn content(&self, id: &str) -> ApiResult<(VnfPkgInfo, PathBuf)> {
        let (info, _) = self.get(id).await?;
        let not_yet = || {
            ApiError::Conflict(format!(
                "VNF package {id} is {:?}: its content is available once it is ONBOARDED",
                info.onboarding_state
            ))
        };
        if info.onboarding_state != PackageOnboardingState::Onboarded {
            return Err(not_yet());
        }
        let digest = info.checksum.as_ref().map(|c| c.hash.as_str());
        match self.local_content(id, digest).await? {
            Some(local) => Ok((info, local.path)),
            None => Err(not_yet()),
        }
    }
}

/// The local copy of a package's content (`crate::spool`) and its SHA-256.
pub(super) struct LocalContent {
    pub(super) path: PathBuf,
    pub(super) sha256: String,
}

/// Opens the package at `path` (a local copy), reading entries on demand.
pub(super) fn open_content(
    path: &std::path::Path,
    limits: &vnfm_csar::Limits,
) -> Result<Package, vnfm_csar::CsarError> {
    let file = std::fs::File::open(path).map_err(|source| vnfm_csar::CsarError::Io {
        path: "the package content".into(),
        source,
    })?;
    Package::from_zip_file(file, "the package content", limits)
}
