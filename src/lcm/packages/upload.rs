//! Content upload: the acceptance of content (`PROCESSING`, onboarding in the background),
//! and content fetched from an allow-listed URI through the content port (`ContentFetcher`,
//! no redirects) into the package directory with the size limit enforced while reading.

use std::sync::Arc;

use std::time::Duration;

use crate::lcm::{ContentRequest, ContentSink};
use async_trait::async_trait;
use vnfm_types::{Checksum, PackageOnboardingState, UploadVnfPackageFromUriRequest, VnfPkgInfo};

use crate::lcm::EmbedError;

use super::PackageResult;
use crate::lcm::spool::{SpoolWriter, SpooledContent};

use super::{Packages, record_of};

impl Packages {
    /// Refuses content for a package that cannot take it (409): one not in `CREATED` or
    /// `ERROR` state.
    pub fn check_uploadable(id: &str, info: &VnfPkgInfo) -> PackageResult<()> {
        if matches!(
            info.onboarding_state,
            PackageOnboardingState::Created | PackageOnboardingState::Error
        ) {
            return Ok(());
        }
        Err(EmbedError::PackageConflict(format!(
            "VNF package {id} is {:?}: content can be uploaded only once, to a package in CREATED (or ERROR) state",
            info.onboarding_state
        )))
    }

    /// Stores uploaded content and moves the package to `PROCESSING`; onboarding then runs in
    /// the background.
    pub async fn accept_content(
        self: &Arc<Self>,
        id: &str,
        content: SpooledContent,
    ) -> PackageResult<()> {
        let (mut info, version) = self.get(id).await?;
        Self::check_uploadable(id, &info)?;
        let local = self.store_content(id, content).await?;
        info.onboarding_state = PackageOnboardingState::Processing;
        info.onboarding_failure_details = None;
        info.onboarding_warnings = None;
        // Known now (computed while the content streamed in); names the local copy for a
        // server that resumes this onboarding after a restart.
        info.checksum = Some(Checksum {
            algorithm: "SHA-256".into(),
            hash: local.sha256.clone(),
        });
        self.store
            .update_package(&record_of(&info)?, version)
            .await?;
        let this = self.clone();
        let id = id.to_owned();
        tokio::spawn(async move {
            if let Err(e) = this.onboard(&id, local).await {
                tracing::warn!(package = %id, error = %e, "onboarding failed");
            }
        });
        Ok(())
    }

    /// Checks `uri` against the allow-list.
    fn allowed(&self, uri: &str) -> bool {
        self.allow_list
            .iter()
            .any(|prefix| uri.starts_with(prefix.as_str()))
    }

    /// Fetches the content from an allow-listed URI, then onboards it (in the background).
    pub async fn upload_from_uri(
        self: &Arc<Self>,
        id: &str,
        req: UploadVnfPackageFromUriRequest,
    ) -> PackageResult<()> {
        let uri = req.address_information.clone();
        if !self.allowed(&uri) {
            return Err(EmbedError::PackageRequest {
                pointer: "/addressInformation".into(),
                message: format!(
                    "{} is not on this server's upload allow-list; ask the operator to add its prefix with --upload-allow",
                    super::cut(&uri, 120)
                ),
            });
        }
        let (info, _) = self.get(id).await?;
        if !matches!(
            info.onboarding_state,
            PackageOnboardingState::Created | PackageOnboardingState::Error
        ) {
            return Err(EmbedError::PackageConflict(format!(
                "VNF package {id} is {:?}: content can be uploaded only to a package in CREATED (or ERROR) state",
                info.onboarding_state
            )));
        }
        let max = self.limits.max_package_bytes as u64;
        let this = self.clone();
        let id = id.to_owned();
        tokio::spawn(async move {
            // Streamed to the package directory like an upload: constant memory, the limit
            // enforced while reading, the file removed on failure.
            let fetched: Result<SpooledContent, String> = async {
                let mut sink = SpoolSink {
                    writer: this.spool().writer(max).map_err(|e| e.to_string())?,
                    max,
                };
                let basic = req
                    .user_name
                    .as_deref()
                    .zip(req.password.as_ref().map(|p| p.expose()));
                let request = ContentRequest {
                    uri: &uri,
                    basic,
                    timeout: FETCH_TIMEOUT,
                };
                this.content
                    .fetch(request, &mut sink)
                    .await
                    .map_err(|e| e.to_string())?;
                sink.writer.finish().await.map_err(|e| e.to_string())
            }
            .await;
            let outcome = match fetched {
                Ok(content) => this.accept_content(&id, content).await,
                Err(message) => match this.get(&id).await {
                    Ok((info, version)) => this.fail_onboarding(info, version, vec![message]).await,
                    Err(e) => Err(e),
                },
            };
            if let Err(e) = outcome {
                tracing::warn!(package = %id, error = %e, "upload from URI failed");
            }
        });
        Ok(())
    }
}

/// How long fetching a package from its URI may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(300);

/// The package directory's spool as the sink of a fetch: the size limit enforced chunk by
/// chunk.
struct SpoolSink {
    writer: SpoolWriter,
    max: u64,
}

#[async_trait]
impl ContentSink for SpoolSink {
    async fn push(&mut self, chunk: &[u8]) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        self.writer.push(chunk).await.map_err(|e| match e {
            crate::lcm::EmbedError::PackageTooLarge { .. } => {
                format!("the package is larger than the limit of {} bytes", self.max).into()
            }
            other => Box::new(other) as Box<dyn std::error::Error + Send + Sync>,
        })
    }
}
