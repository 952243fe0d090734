//! The local copies of package content (`crate::lcm::spool`): content stored in the store and
//! kept as a local file by the catalog (`crate::lcm::StoreCatalog`), written again from the
//! store when this server lacks it.

use std::path::PathBuf;

use crate::lcm::LocalContent;
use crate::lcm::spool::SpooledContent;
use vnfm_types::{PackageOnboardingState, VnfPkgInfo};

use crate::lcm::EmbedError;

use super::PackageResult;

use super::Packages;

impl Packages {
    /// Stores spooled content in the store (in pieces, constant memory) and keeps the file
    /// as the package's local copy.
    pub(super) async fn store_content(
        &self,
        id: &str,
        content: SpooledContent,
    ) -> PackageResult<LocalContent> {
        self.catalog.store_content(id, content).await
    }

    /// The local copy of package `id`'s content (see `StoreCatalog::local_content`).
    pub(super) async fn local_content(
        &self,
        id: &str,
        digest: Option<&str>,
    ) -> PackageResult<Option<LocalContent>> {
        self.catalog.local_content(id, digest).await
    }

    /// The local copy of an onboarded package's zip.
    pub async fn content(&self, id: &str) -> PackageResult<(VnfPkgInfo, PathBuf)> {
        let (info, _) = self.get(id).await?;
        let not_yet = || {
            EmbedError::PackageConflict(format!(
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
