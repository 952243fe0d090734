//! Package records: notifications of changes, fetching from the NFVO, resuming interrupted
//! onboardings, the `vnfdId` -> package map, the computed usage state, and the creation,
//! modification and deletion of package resources.

use vnfm_lcm::{PackageChange, PackageEvent};
use vnfm_store::{InstanceQuery, NewOutboxRow, PackageRecord, ProjectScope, Version};
use vnfm_types::{
    CreateVnfPkgInfoRequest, PackageOnboardingState, PackageOperationalState, PackageUsageState,
    VnfPkgInfo, VnfPkgInfoModifications, VnfdId,
};

use crate::lcm::EmbedError;

use super::PackageResult;

use super::{Packages, info_of, record_of};

impl Packages {
    /// The outbox rows reporting `event` about `info` (none without subscriptions).
    pub(super) async fn notify(
        &self,
        event: PackageEvent,
        info: &VnfPkgInfo,
    ) -> PackageResult<Vec<NewOutboxRow>> {
        match &self.notifications {
            Some(subs) => subs
                .route(&PackageChange {
                    event,
                    package: info,
                })
                .await
                .map_err(EmbedError::PackageNotification),
            None => Ok(Vec::new()),
        }
    }

    /// Fetches the package of `vnfd_id` from the NFVO and onboards it here (SOL003 VNFMs
    /// that take packages from the NFVO). `false` when there is no NFVO or it has none.
    async fn fetch_from_nfvo(&self, vnfd_id: &str) -> PackageResult<bool> {
        let Some(nfvo) = &self.nfvo else {
            return Ok(false);
        };
        let content = nfvo.fetch_package(vnfd_id).await.map_err(|e| {
            EmbedError::PackageUnavailable(format!(
                "fetching the package of VNFD {} from the NFVO ({}) failed: {e}",
                super::cut(vnfd_id, 100),
                nfvo.describe()
            ))
        })?;
        let Some(content) = content else {
            return Ok(false);
        };
        let mut writer = self.spool().writer(content.len() as u64)?;
        writer.push(&content).await?;
        drop(content);
        let spooled = writer.finish().await?;
        // Fetched for whoever asked first, it belongs to no project.
        let info = self
            .create(CreateVnfPkgInfoRequest::default(), None)
            .await?;
        let local = self.store_content(&info.id, spooled).await?;
        self.onboard(&info.id, local).await?;
        tracing::info!(package = %info.id, vnfd_id, nfvo = %nfvo.describe(), "package fetched from the NFVO");
        Ok(true)
    }

    /// Onboards again the packages whose onboarding a previous run did not finish (the
    /// onboarded ones the catalog reads from the store when an operation first needs them).
    /// Returns how many were onboarded.
    pub async fn resume_onboarding(&self) -> usize {
        let mut after: Option<String> = None;
        let mut resumed = 0;
        loop {
            let page = match self
                .store
                .list_packages(&ProjectScope::All, after.as_deref(), 200)
                .await
            {
                Ok(p) => p,
                Err(e) => {
                    tracing::error!(error = %e, "listing packages failed");
                    return resumed;
                }
            };
            for record in &page.items {
                let Ok(info) = info_of(record) else { continue };
                if !matches!(
                    info.onboarding_state,
                    PackageOnboardingState::Processing | PackageOnboardingState::Uploading
                ) {
                    continue;
                }
                let digest = info.checksum.as_ref().map(|c| c.hash.as_str());
                match self.local_content(&record.id, digest).await {
                    Ok(Some(local)) => {
                        tracing::info!(package = %record.id, "resuming an interrupted onboarding");
                        if self.onboard(&record.id, local).await.is_ok() {
                            resumed += 1;
                        }
                    }
                    Ok(None) => {}
                    Err(e) => {
                        tracing::error!(package = %record.id, error = %e, "reading the content of an interrupted onboarding failed");
                    }
                }
            }
            match page.next {
                Some(n) => after = Some(n),
                None => return resumed,
            }
        }
    }

    pub(super) fn remember(&self, vnfd_id: &str, package_id: &str) {
        self.package_of_vnfd
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(vnfd_id.to_owned(), package_id.to_owned());
    }

    /// The id of the package holding VNFD `vnfd_id`.
    pub async fn package_id_for(&self, vnfd_id: &str) -> Option<String> {
        if let Some(id) = self
            .package_of_vnfd
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(vnfd_id)
        {
            return Some(id.clone());
        }
        let (record, _) = self.store.package_by_vnfd(vnfd_id).await.ok()??;
        self.remember(vnfd_id, &record.id);
        Some(record.id)
    }

    /// Refuses (422) a `vnfdId` that no onboarded, enabled package in `scope` has, or whose
    /// package holds an ASD (asked of the core's catalog, which then keeps the VNFD it read).
    pub async fn ensure_instantiable(
        &self,
        vnfd_id: &str,
        scope: &ProjectScope,
    ) -> PackageResult<()> {
        if self.store.package_by_vnfd(vnfd_id).await?.is_none() {
            self.fetch_from_nfvo(vnfd_id).await?;
        }
        // A package of another project is answered as one that is not there.
        let found = self.store.package_by_vnfd(vnfd_id).await?;
        let Some((record, _)) = found.filter(|(r, _)| scope.admits(r.project.as_deref())) else {
            return Err(EmbedError::PackageUnprocessable(format!(
                "no onboarded VNF package has vnfdId {}: onboard it through /vnfpkgm/v2/vnf_packages first",
                super::cut(vnfd_id, 100)
            )));
        };
        let info = info_of(&record)?;
        if info.onboarding_state != PackageOnboardingState::Onboarded {
            return Err(EmbedError::PackageUnprocessable(format!(
                "VNF package {} with vnfdId {vnfd_id} is not onboarded (onboardingState {:?})",
                record.id, info.onboarding_state
            )));
        }
        if info.operational_state != PackageOperationalState::Enabled {
            return Err(EmbedError::PackageConflict(format!(
                "VNF package {} with vnfdId {vnfd_id} is DISABLED: enable it with PATCH /vnfpkgm/v2/vnf_packages/{} before creating instances from it",
                record.id, record.id
            )));
        }
        if self.catalog.load(vnfd_id).await?.is_none() {
            return Err(EmbedError::PackageUnprocessable(format!(
                "VNF package {} holds an ASD, not a VNFD: it cannot be instantiated through the VNF LCM API",
                record.id
            )));
        }
        Ok(())
    }

    async fn in_use(&self, vnfd_id: Option<&str>) -> PackageResult<bool> {
        let Some(vnfd) = vnfd_id else {
            return Ok(false);
        };
        let page = self
            .store
            .list_instances(&InstanceQuery {
                vnfd_id: Some(VnfdId::new(vnfd)),
                limit: Some(1),
                ..Default::default()
            })
            .await?;
        Ok(!page.items.is_empty())
    }

    /// The package with its computed usage state.
    pub async fn get(&self, id: &str) -> PackageResult<(VnfPkgInfo, Version)> {
        let (record, version) = self.store.get_package(id).await?.ok_or_else(|| {
            EmbedError::PackageNotFound(format!(
                "VNF package {} does not exist",
                super::cut(id, 100)
            ))
        })?;
        Ok((self.described(&record).await?, version))
    }

    /// The `VnfPkgInfo` of a stored record, with its computed usage state.
    pub async fn described(&self, record: &PackageRecord) -> PackageResult<VnfPkgInfo> {
        let mut info = info_of(record)?;
        info.usage_state = if self.in_use(info.vnfd_id.as_deref()).await? {
            PackageUsageState::InUse
        } else {
            PackageUsageState::NotInUse
        };
        Ok(info)
    }

    /// Creates a package resource (`CREATED`, `DISABLED`) belonging to `project` (see
    /// the API's project scoping).
    pub async fn create(
        &self,
        req: CreateVnfPkgInfoRequest,
        project: Option<String>,
    ) -> PackageResult<VnfPkgInfo> {
        self.create_with_key(req, project, None).await
    }

    /// [`Packages::create`] that commits `key`, the client key of a retry-safe request
    /// ([`vnfm_lcm::runner::keyed`]), with the package in the transaction that creates it; a
    /// key committed by another request first refuses the creation with nothing stored.
    pub async fn create_with_key(
        &self,
        req: CreateVnfPkgInfoRequest,
        project: Option<String>,
        key: Option<&vnfm_store::PendingKey>,
    ) -> PackageResult<VnfPkgInfo> {
        let id = vnfm_lcm::secrets::new_id();
        let info = VnfPkgInfo {
            links: self.links(&id, false, vnfm_types::links::ApiVersion::V2),
            id,
            vnfd_id: None,
            vnf_provider: None,
            vnf_product_name: None,
            vnf_software_version: None,
            vnfd_version: None,
            compatible_specification_versions: None,
            checksum: None,
            package_security_option: None,
            signing_certificate: None,
            software_images: None,
            additional_artifacts: None,
            onboarding_state: PackageOnboardingState::Created,
            operational_state: PackageOperationalState::Disabled,
            usage_state: PackageUsageState::NotInUse,
            vnfm_info: None,
            user_defined_data: req.user_defined_data,
            onboarding_failure_details: None,
            onboarding_warnings: None,
        };
        let record = PackageRecord {
            project,
            ..record_of(&info)?
        };
        self.store.create_package_keyed(&record, key).await?;
        Ok(info)
    }

    /// Applies `VnfPkgInfoModifications`.
    pub async fn modify(&self, id: &str, mods: &VnfPkgInfoModifications) -> PackageResult<()> {
        let (mut info, version) = self.get(id).await?;
        let mut notify = Vec::new();
        if let Some(state) = mods.operational_state {
            if info.onboarding_state != PackageOnboardingState::Onboarded {
                return Err(EmbedError::PackageConflict(format!(
                    "VNF package {id} is not onboarded: its operational state cannot change"
                )));
            }
            if info.operational_state == state {
                return Err(EmbedError::PackageConflict(format!(
                    "VNF package {id} is already {state:?}"
                )));
            }
            info.operational_state = state;
            notify = self
                .notify(PackageEvent::OperationalStateChanged, &info)
                .await?;
        }
        if let Some(data) = &mods.user_defined_data {
            let target = info.user_defined_data.get_or_insert_with(Default::default);
            for (k, v) in data {
                if v.is_null() {
                    target.remove(k);
                } else {
                    target.insert(k.clone(), v.clone());
                }
            }
        }
        self.store
            .update_package_and_notify(&record_of(&info)?, version, &notify)
            .await?;
        Ok(())
    }

    /// Deletes a `DISABLED` package that no instance uses.
    pub async fn delete(&self, id: &str) -> PackageResult<()> {
        let (info, version) = self.get(id).await?;
        if info.onboarding_state == PackageOnboardingState::Processing {
            return Err(EmbedError::PackageConflict(format!(
                "VNF package {id} is being onboarded: retry when it is done"
            )));
        }
        if info.operational_state != PackageOperationalState::Disabled {
            return Err(EmbedError::PackageConflict(format!(
                "VNF package {id} is ENABLED: disable it (PATCH operationalState DISABLED) before deleting it"
            )));
        }
        if info.usage_state == PackageUsageState::InUse {
            return Err(EmbedError::PackageConflict(format!(
                "VNF package {id} is IN_USE: delete the VNF instances created from it first"
            )));
        }
        // Only an onboarded package is reported (the notification names its vnfdId).
        let notify = if info.onboarding_state == PackageOnboardingState::Onboarded {
            self.notify(PackageEvent::Deleted, &info).await?
        } else {
            Vec::new()
        };
        self.store
            .delete_package_and_notify(id, version, &notify)
            .await?;
        if let Some(vnfd) = &info.vnfd_id {
            self.catalog.cache().remove(vnfd);
            self.package_of_vnfd
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(vnfd);
        }
        self.spool().remove_copies(id, None);
        Ok(())
    }
}
