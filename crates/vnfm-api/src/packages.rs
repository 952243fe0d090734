//! VNF package management (`/vnfpkgm/v2`, `/vnfpkgm/v1`; SOL003 clause 10, SOL005 clause 9
//! style): package resources, content upload (zip body or an allow-listed URI), onboarding
//! through the package layer's validation, the VNFD, the content and artifacts (with
//! `Range`), and the operational state.
//!
//! Onboarding states: `CREATED` -> (`PUT package_content`) `PROCESSING` -> `ONBOARDED` (the
//! package is then `ENABLED`) or `ERROR` with `onboardingFailureDetails` listing the error
//! diagnostics (code, file:line, help). The content is stored before `202 Accepted` is
//! answered, so a package whose onboarding was interrupted by a crash is onboarded again at
//! the next start. The usage state is computed: `IN_USE` while a VNF instance has the
//! package's `vnfdId`.
//!
//! Changes are notified to the package management subscriptions
//! ([`vnfm_lcm::PkgmSubscriptions`]): reaching `ONBOARDED` (`VnfPackageOnboardingNotification`),
//! a PATCH of `operationalState` and the deletion of an onboarded package
//! (`VnfPackageChangeNotification`, `OP_STATE_CHANGE` / `PKG_DELETE`). The notifications are
//! written to the outbox in the same transaction as the package record.

use std::collections::HashMap;
use std::io::{Cursor, Write};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, OriginalUri, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::Value;
use sha2::{Digest, Sha256};
use vnfm::lcm::{MemoryCatalog, OnboardedVnfd, PackageCatalog};
use vnfm::package::{InspectOptions, inspect_package};
use vnfm_csar::{Limits, Package};
use vnfm_descriptor::Descriptor;
use vnfm_lcm::{PackageChange, PackageEvent, PkgmSubscriptions};
use vnfm_store::{InstanceQuery, NewOutboxRow, PackageRecord, Page, Store, Version};
use vnfm_types::{
    Checksum, CreateVnfPkgInfoRequest, Link, PackageOnboardingState, PackageOperationalState,
    PackageUsageState, ProblemDetails, UploadVnfPackageFromUriRequest, VnfPackageArtifactInfo,
    VnfPackageSoftwareImageInfo, VnfPkgInfo, VnfPkgInfoModifications, VnfPkgLinks, VnfdId,
};

use crate::error::{ApiError, ApiResult};
use crate::listing::ListRequest;
use crate::state::AppState;
use crate::util::{
    json_body, json_response, merge_patch_body, origin, require_accept, with_location,
};
use crate::version::{ApiFamily, major_versions, versioned};

/// Size limits of uploaded packages.
#[derive(Debug, Clone)]
pub struct PackageLimits {
    /// Largest package content accepted, in bytes (the upload body limit).
    pub max_package_bytes: usize,
    /// Archive limits applied when the package is opened (entries, uncompressed size, ratio).
    pub archive: Limits,
}

impl Default for PackageLimits {
    fn default() -> Self {
        PackageLimits {
            max_package_bytes: 512 * 1024 * 1024,
            archive: Limits::default(),
        }
    }
}

/// The package repository: records and content in the store, onboarded VNFDs in the
/// lifecycle core's catalog.
pub struct Packages {
    store: Arc<dyn Store>,
    catalog: Arc<MemoryCatalog>,
    limits: PackageLimits,
    allow_list: Vec<String>,
    package_of_vnfd: Mutex<HashMap<String, String>>,
    nfvo: Option<Arc<dyn vnfm::lcm::Nfvo>>,
    notifications: Option<PkgmSubscriptions>,
}

fn now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    vnfm_types::DateTime::from_unix_seconds(secs).to_string()
}

fn links(id: &str, onboarded: bool) -> VnfPkgLinks {
    let base = format!("{}/vnf_packages/{id}", ApiFamily::PkgmV2.prefix());
    VnfPkgLinks {
        self_: Link::new(base.clone()),
        vnfd: onboarded.then(|| Link::new(format!("{base}/vnfd"))),
        package_content: Link::new(format!("{base}/package_content")),
    }
}

fn info_of(record: &PackageRecord) -> ApiResult<VnfPkgInfo> {
    serde_json::from_value(record.info.clone())
        .map_err(|e| ApiError::Internal(format!("stored package {} is unreadable: {e}", record.id)))
}

fn record_of(info: &VnfPkgInfo) -> ApiResult<PackageRecord> {
    Ok(PackageRecord {
        id: info.id.clone(),
        vnfd_id: info.vnfd_id.clone(),
        info: serde_json::to_value(info)
            .map_err(|e| ApiError::Internal(format!("package does not serialize: {e}")))?,
    })
}

impl Packages {
    /// A repository over `store`, onboarding into `catalog`.
    pub fn new(
        store: Arc<dyn Store>,
        catalog: Arc<MemoryCatalog>,
        limits: PackageLimits,
        allow_list: Vec<String>,
        nfvo: Option<Arc<dyn vnfm::lcm::Nfvo>>,
    ) -> Packages {
        Packages {
            store,
            catalog,
            limits,
            allow_list,
            package_of_vnfd: Mutex::new(HashMap::new()),
            nfvo,
            notifications: None,
        }
    }

    /// Notifies package changes to these subscriptions.
    pub fn with_notifications(mut self, subscriptions: PkgmSubscriptions) -> Packages {
        self.notifications = Some(subscriptions);
        self
    }

    /// The outbox rows reporting `event` about `info` (none without subscriptions).
    async fn notify(&self, event: PackageEvent, info: &VnfPkgInfo) -> ApiResult<Vec<NewOutboxRow>> {
        match &self.notifications {
            Some(subs) => Ok(subs
                .route(&PackageChange {
                    event,
                    package: info,
                })
                .await?),
            None => Ok(Vec::new()),
        }
    }

    /// Fetches the package of `vnfd_id` from the NFVO and onboards it here (SOL003 VNFMs
    /// that take packages from the NFVO). `false` when there is no NFVO or it has none.
    async fn fetch_from_nfvo(&self, vnfd_id: &str) -> ApiResult<bool> {
        let Some(nfvo) = &self.nfvo else {
            return Ok(false);
        };
        let content = nfvo.fetch_package(vnfd_id).await.map_err(|e| {
            ApiError::Unavailable(format!(
                "fetching the package of VNFD {} from the NFVO ({}) failed: {e}",
                crate::util::cut(vnfd_id, 100),
                nfvo.describe()
            ))
        })?;
        let Some(content) = content else {
            return Ok(false);
        };
        let info = self.create(CreateVnfPkgInfoRequest::default()).await?;
        self.store.put_package_content(&info.id, &content).await?;
        self.onboard(&info.id, content).await?;
        tracing::info!(package = %info.id, vnfd_id, nfvo = %nfvo.describe(), "package fetched from the NFVO");
        Ok(true)
    }

    /// Loads every onboarded package into the catalog, and onboards again the packages whose
    /// onboarding a previous run did not finish. Returns how many are onboarded.
    pub async fn load_all(&self) -> usize {
        let mut after: Option<String> = None;
        let mut loaded = 0;
        loop {
            let page = match self.store.list_packages(after.as_deref(), 200).await {
                Ok(p) => p,
                Err(e) => {
                    tracing::error!(error = %e, "listing packages failed");
                    return loaded;
                }
            };
            for record in &page.items {
                let Ok(info) = info_of(record) else { continue };
                match info.onboarding_state {
                    PackageOnboardingState::Onboarded => {
                        if let Some(vnfd) = &info.vnfd_id
                            && self.ensure_loaded(vnfd).await.is_ok()
                        {
                            loaded += 1;
                        }
                    }
                    PackageOnboardingState::Processing | PackageOnboardingState::Uploading => {
                        if let Ok(Some(content)) = self.store.get_package_content(&record.id).await
                        {
                            tracing::info!(package = %record.id, "resuming an interrupted onboarding");
                            if self.onboard(&record.id, content).await.is_ok() {
                                loaded += 1;
                            }
                        }
                    }
                    _ => {}
                }
            }
            match page.next {
                Some(n) => after = Some(n),
                None => return loaded,
            }
        }
    }

    /// Makes sure the VNFD `vnfd_id` is in the catalog when a package has it: another replica
    /// may have onboarded it. An unknown VNFD is left to the lifecycle core to report.
    pub async fn ensure_loaded(&self, vnfd_id: &str) -> ApiResult<()> {
        if self.catalog.vnfd(vnfd_id).is_some() {
            return Ok(());
        }
        let Some((record, _)) = self.store.package_by_vnfd(vnfd_id).await? else {
            return Ok(());
        };
        let info = info_of(&record)?;
        if info.onboarding_state != PackageOnboardingState::Onboarded {
            return Ok(());
        }
        let Some(content) = self.store.get_package_content(&record.id).await? else {
            return Ok(());
        };
        let limits = self.limits.archive.clone();
        let report = tokio::task::spawn_blocking(move || {
            Package::from_zip_bytes(content, &limits)
                .map(|p| inspect_package(p, &InspectOptions::default()))
        })
        .await
        .map_err(|e| ApiError::Internal(format!("loading a package failed: {e}")))?
        .map_err(|e| {
            ApiError::Internal(format!(
                "stored package {} cannot be opened: {e}",
                record.id
            ))
        })?;
        if let (Some(Descriptor::Vnfd(vnfd)), Some(package)) = (report.descriptor, report.package) {
            self.catalog.insert_onboarded(OnboardedVnfd {
                vnfd: Arc::new(*vnfd),
                files: vnfm::lcm::package_files(package),
            });
            self.remember(vnfd_id, &record.id);
        }
        Ok(())
    }

    fn remember(&self, vnfd_id: &str, package_id: &str) {
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

    /// Refuses (422) a `vnfdId` that no onboarded, enabled package has; loads it otherwise.
    pub async fn ensure_instantiable(&self, vnfd_id: &str) -> ApiResult<()> {
        if self.store.package_by_vnfd(vnfd_id).await?.is_none() {
            self.fetch_from_nfvo(vnfd_id).await?;
        }
        let Some((record, _)) = self.store.package_by_vnfd(vnfd_id).await? else {
            return Err(ApiError::Unprocessable(format!(
                "no onboarded VNF package has vnfdId {}: onboard it through /vnfpkgm/v2/vnf_packages first",
                crate::util::cut(vnfd_id, 100)
            )));
        };
        let info = info_of(&record)?;
        if info.onboarding_state != PackageOnboardingState::Onboarded {
            return Err(ApiError::Unprocessable(format!(
                "VNF package {} with vnfdId {vnfd_id} is not onboarded (onboardingState {:?})",
                record.id, info.onboarding_state
            )));
        }
        if info.operational_state != PackageOperationalState::Enabled {
            return Err(ApiError::Conflict(format!(
                "VNF package {} with vnfdId {vnfd_id} is DISABLED: enable it with PATCH /vnfpkgm/v2/vnf_packages/{} before creating instances from it",
                record.id, record.id
            )));
        }
        self.ensure_loaded(vnfd_id).await?;
        if self.catalog.vnfd(vnfd_id).is_none() {
            return Err(ApiError::Unprocessable(format!(
                "VNF package {} holds an ASD, not a VNFD: it cannot be instantiated through the VNF LCM API",
                record.id
            )));
        }
        Ok(())
    }

    async fn in_use(&self, vnfd_id: Option<&str>) -> ApiResult<bool> {
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
    pub async fn get(&self, id: &str) -> ApiResult<(VnfPkgInfo, Version)> {
        let (record, version) = self.store.get_package(id).await?.ok_or_else(|| {
            ApiError::NotFound(format!(
                "VNF package {} does not exist",
                crate::util::cut(id, 100)
            ))
        })?;
        Ok((self.described(&record).await?, version))
    }

    /// The `VnfPkgInfo` of a stored record, with its computed usage state.
    pub async fn described(&self, record: &PackageRecord) -> ApiResult<VnfPkgInfo> {
        let mut info = info_of(record)?;
        info.usage_state = if self.in_use(info.vnfd_id.as_deref()).await? {
            PackageUsageState::InUse
        } else {
            PackageUsageState::NotInUse
        };
        Ok(info)
    }

    /// Creates a package resource (`CREATED`, `DISABLED`).
    pub async fn create(&self, req: CreateVnfPkgInfoRequest) -> ApiResult<VnfPkgInfo> {
        let id = vnfm_lcm::secrets::new_id();
        let info = VnfPkgInfo {
            links: links(&id, false),
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
        self.store.create_package(&record_of(&info)?).await?;
        Ok(info)
    }

    /// Stores uploaded content and moves the package to `PROCESSING`; onboarding then runs in
    /// the background.
    pub async fn accept_content(self: &Arc<Self>, id: &str, content: Vec<u8>) -> ApiResult<()> {
        let (mut info, version) = self.get(id).await?;
        if !matches!(
            info.onboarding_state,
            PackageOnboardingState::Created | PackageOnboardingState::Error
        ) {
            return Err(ApiError::Conflict(format!(
                "VNF package {id} is {:?}: content can be uploaded only once, to a package in CREATED (or ERROR) state",
                info.onboarding_state
            )));
        }
        self.store.put_package_content(id, &content).await?;
        info.onboarding_state = PackageOnboardingState::Processing;
        info.onboarding_failure_details = None;
        info.onboarding_warnings = None;
        self.store
            .update_package(&record_of(&info)?, version)
            .await?;
        let this = self.clone();
        let id = id.to_owned();
        tokio::spawn(async move {
            if let Err(e) = this.onboard(&id, content).await {
                tracing::warn!(package = %id, error = %e, "onboarding failed");
            }
        });
        Ok(())
    }

    /// Validates `content` and records the outcome: `ONBOARDED` + `ENABLED`, or `ERROR`.
    async fn onboard(&self, id: &str, content: Vec<u8>) -> ApiResult<()> {
        let checksum = hex::encode(Sha256::digest(&content));
        let limits = self.limits.archive.clone();
        let opened = tokio::task::spawn_blocking(move || {
            Package::from_zip_bytes(content, &limits)
                .map(|p| inspect_package(p, &InspectOptions::default()))
        })
        .await
        .map_err(|e| ApiError::Internal(format!("onboarding task failed: {e}")))?;
        let (mut info, version) = self.get(id).await?;
        info.checksum = Some(Checksum {
            algorithm: "SHA-256".into(),
            hash: checksum,
        });
        let report = match opened {
            Ok(report) => report,
            Err(e) => {
                return self
                    .fail_onboarding(info, version, vec![e.to_diagnostic().to_string()])
                    .await;
            }
        };
        if !report.is_valid() {
            let errors = report
                .diagnostics
                .iter()
                .filter(|d| d.is_error())
                .take(20)
                .map(|d| d.to_string())
                .collect();
            return self.fail_onboarding(info, version, errors).await;
        }
        let (Some(descriptor), Some(package)) = (report.descriptor, report.package) else {
            return self
                .fail_onboarding(
                    info,
                    version,
                    vec!["the package holds no descriptor".into()],
                )
                .await;
        };
        describe(&mut info, &descriptor, &package);
        info.onboarding_state = PackageOnboardingState::Onboarded;
        info.operational_state = PackageOperationalState::Enabled;
        info.links = links(id, true);
        let warnings: Vec<String> = report
            .diagnostics
            .iter()
            .filter(|d| !d.is_error())
            .map(|d| d.to_string())
            .collect();
        let warnings_count = warnings.len();
        info.onboarding_warnings = (!warnings.is_empty()).then_some(warnings);
        let notify = self.notify(PackageEvent::Onboarded, &info).await?;
        match self
            .store
            .update_package_and_notify(&record_of(&info)?, version, &notify)
            .await
        {
            Ok(_) => {}
            Err(vnfm_store::StoreError::Conflict(vnfm_store::Conflict::AlreadyExists {
                ..
            })) => {
                let vnfd = info.vnfd_id.clone().unwrap_or_default();
                info.vnfd_id = None;
                info.links = links(id, false);
                return self
                    .fail_onboarding(
                        info,
                        version,
                        vec![format!(
                            "another VNF package already has vnfdId {vnfd}: delete it, or change the VNFD's descriptor_id"
                        )],
                    )
                    .await;
            }
            Err(e) => return Err(e.into()),
        }
        if let Descriptor::Vnfd(vnfd) = descriptor {
            let vnfd_id = vnfd.descriptor_id.clone();
            self.catalog.insert_onboarded(OnboardedVnfd {
                vnfd: Arc::new(*vnfd),
                files: vnfm::lcm::package_files(package),
            });
            self.remember(&vnfd_id, id);
        }
        tracing::info!(package = %id, warnings = warnings_count, "VNF package onboarded");
        Ok(())
    }

    async fn fail_onboarding(
        &self,
        mut info: VnfPkgInfo,
        version: Version,
        errors: Vec<String>,
    ) -> ApiResult<()> {
        let mut details = ProblemDetails::new(
            422,
            format!("the VNF package is invalid: {}", errors.join("; ")),
        );
        details.title = Some("VNF package onboarding failed".into());
        details
            .extra
            .insert("diagnostics".into(), Value::from(errors));
        info.onboarding_state = PackageOnboardingState::Error;
        // A package that did not onboard serves nothing: DISABLED, so it can be deleted (the
        // vnfdId conflict is found after the state was set to ENABLED).
        info.operational_state = PackageOperationalState::Disabled;
        info.onboarding_failure_details = Some(details);
        self.store
            .update_package(&record_of(&info)?, version)
            .await?;
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
    ) -> ApiResult<()> {
        let uri = req.address_information.clone();
        if !self.allowed(&uri) {
            return Err(ApiError::invalid(
                "/addressInformation",
                format!(
                    "{} is not on this server's upload allow-list; ask the operator to add its prefix with --upload-allow",
                    crate::util::cut(&uri, 120)
                ),
            ));
        }
        let (info, _) = self.get(id).await?;
        if !matches!(
            info.onboarding_state,
            PackageOnboardingState::Created | PackageOnboardingState::Error
        ) {
            return Err(ApiError::Conflict(format!(
                "VNF package {id} is {:?}: content can be uploaded only to a package in CREATED (or ERROR) state",
                info.onboarding_state
            )));
        }
        let client = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(300))
            .build()
            .map_err(|e| ApiError::Internal(format!("HTTP client: {e}")))?;
        let mut request = client.get(&uri);
        if let (Some(user), Some(password)) = (&req.user_name, &req.password) {
            request = request.basic_auth(user, Some(password.expose()));
        }
        let max = self.limits.max_package_bytes;
        let this = self.clone();
        let id = id.to_owned();
        tokio::spawn(async move {
            let fetched: Result<Vec<u8>, String> = async {
                let mut response = request
                    .send()
                    .await
                    .map_err(|e| format!("fetching failed: {e}"))?;
                if !response.status().is_success() {
                    return Err(format!("the source answered {}", response.status()));
                }
                let mut buf = Vec::new();
                while let Some(chunk) = response
                    .chunk()
                    .await
                    .map_err(|e| format!("reading failed: {e}"))?
                {
                    if buf.len() + chunk.len() > max {
                        return Err(format!(
                            "the package is larger than the limit of {max} bytes"
                        ));
                    }
                    buf.extend_from_slice(&chunk);
                }
                Ok(buf)
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

    /// Applies `VnfPkgInfoModifications`.
    pub async fn modify(&self, id: &str, mods: &VnfPkgInfoModifications) -> ApiResult<()> {
        let (mut info, version) = self.get(id).await?;
        let mut notify = Vec::new();
        if let Some(state) = mods.operational_state {
            if info.onboarding_state != PackageOnboardingState::Onboarded {
                return Err(ApiError::Conflict(format!(
                    "VNF package {id} is not onboarded: its operational state cannot change"
                )));
            }
            if info.operational_state == state {
                return Err(ApiError::Conflict(format!(
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
    pub async fn delete(&self, id: &str) -> ApiResult<()> {
        let (info, version) = self.get(id).await?;
        if info.onboarding_state == PackageOnboardingState::Processing {
            return Err(ApiError::Conflict(format!(
                "VNF package {id} is being onboarded: retry when it is done"
            )));
        }
        if info.operational_state != PackageOperationalState::Disabled {
            return Err(ApiError::Conflict(format!(
                "VNF package {id} is ENABLED: disable it (PATCH operationalState DISABLED) before deleting it"
            )));
        }
        if info.usage_state == PackageUsageState::InUse {
            return Err(ApiError::Conflict(format!(
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
            self.catalog.remove(vnfd);
            self.package_of_vnfd
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(vnfd);
        }
        Ok(())
    }

    /// The stored zip of an onboarded package.
    async fn content(&self, id: &str) -> ApiResult<(VnfPkgInfo, Vec<u8>)> {
        let (info, _) = self.get(id).await?;
        let content = self.store.get_package_content(id).await?;
        match content {
            Some(c) if info.onboarding_state == PackageOnboardingState::Onboarded => Ok((info, c)),
            _ => Err(ApiError::Conflict(format!(
                "VNF package {id} is {:?}: its content is available once it is ONBOARDED",
                info.onboarding_state
            ))),
        }
    }
}

/// Fills the descriptor-derived attributes of `info`.
fn describe(info: &mut VnfPkgInfo, descriptor: &Descriptor, package: &Package) {
    let created = now();
    match descriptor {
        Descriptor::Vnfd(vnfd) => {
            info.vnfd_id = Some(vnfd.descriptor_id.clone());
            info.vnf_provider = Some(vnfd.provider.clone());
            info.vnf_product_name = Some(vnfd.product_name.clone());
            info.vnf_software_version = Some(vnfd.software_version.clone());
            info.vnfd_version = Some(vnfd.descriptor_version.clone());
            if !vnfd.vnfm_info.is_empty() {
                info.vnfm_info = Some(vnfd.vnfm_info.clone());
            }
            if let Some(v) = &vnfd.sol001_version {
                info.compatible_specification_versions = Some(vec![v.clone()]);
            }
            let mut images = Vec::new();
            let mut seen = std::collections::HashSet::new();
            for flavour in &vnfd.flavours {
                let from_vdus = flavour
                    .vdus
                    .iter()
                    .filter_map(|v| v.sw_image.as_ref().map(|i| (v.id.clone(), i)));
                let from_storage = flavour
                    .virtual_storages
                    .iter()
                    .filter_map(|s| s.sw_image.as_ref().map(|i| (s.id.clone(), i)));
                for (id, image) in from_vdus.chain(from_storage) {
                    if !seen.insert(id.clone()) {
                        continue;
                    }
                    images.push(VnfPackageSoftwareImageInfo {
                        id,
                        name: image.name.clone(),
                        provider: vnfd.provider.clone(),
                        version: image.version.clone(),
                        checksum: Checksum {
                            algorithm: image.checksum_algorithm.clone().unwrap_or_default(),
                            hash: image.checksum_hash.clone().unwrap_or_default(),
                        },
                        is_encrypted: None,
                        container_format: image
                            .container_format
                            .clone()
                            .unwrap_or_default()
                            .to_uppercase(),
                        disk_format: image.disk_format.clone().unwrap_or_default().to_uppercase(),
                        created_at: created.clone(),
                        min_disk: image.min_disk_bytes.unwrap_or(0),
                        min_ram: image.min_ram_bytes.unwrap_or(0),
                        size: image.size_bytes.unwrap_or(0),
                        image_path: image.file.clone().unwrap_or_default(),
                        image_uri: None,
                        user_metadata: None,
                    });
                }
            }
            info.software_images = Some(images);
        }
        Descriptor::Asd(asd) => {
            info.vnfd_id = Some(asd.asd_id.clone());
            info.vnf_provider = Some(asd.provider.clone());
            info.vnf_product_name = Some(asd.application_name.clone());
            info.vnf_software_version = Some(asd.application_version.clone());
            info.vnfd_version = Some(asd.asd_version.clone());
            info.software_images = Some(Vec::new());
        }
    }
    let image_paths: std::collections::HashSet<String> = info
        .software_images
        .iter()
        .flatten()
        .map(|i| i.image_path.clone())
        .collect();
    if let Some(manifest) = package.manifest() {
        let mut artifacts = Vec::new();
        for a in &manifest.artifacts {
            let path = a.source.value.clone();
            if image_paths.contains(&path) {
                continue;
            }
            let external = path.contains("://");
            artifacts.push(VnfPackageArtifactInfo {
                artifact_path: if external {
                    String::new()
                } else {
                    path.clone()
                },
                artifact_uri: external.then(|| path.clone()),
                checksum: Checksum {
                    algorithm: a
                        .algorithm
                        .as_ref()
                        .map(|f| f.value.clone())
                        .unwrap_or_default(),
                    hash: a
                        .hash
                        .as_ref()
                        .map(|f| f.value.to_ascii_lowercase())
                        .unwrap_or_default(),
                },
                is_encrypted: None,
                metadata: None,
            });
        }
        info.additional_artifacts = Some(artifacts);
        if manifest.signature.is_some() {
            info.package_security_option = Some("OPTION_1".into());
        }
    }
    if let Some(cert) = &package.meta().etsi_entry_certificate
        && let Ok(bytes) = package.read(&cert.value)
        && let Ok(text) = String::from_utf8(bytes)
    {
        info.signing_certificate = Some(text);
    }
}

// ----- HTTP -----

pub(crate) fn routes(family: ApiFamily, max_package_bytes: usize) -> Router<Arc<AppState>> {
    Router::new()
        .route(
            "/api_versions",
            get(move || async move { major_versions(family) }),
        )
        .route(
            "/vnf_packages",
            get(move |s, u, h| list(family, false, s, u, h))
                .post(move |s, h, b| create(family, s, h, b)),
        )
        .route(
            "/vnf_packages/{id}",
            get(move |s, p, u, h| show(family, s, p, u, h))
                .patch(modify)
                .delete(delete),
        )
        .route(
            "/vnf_packages/{id}/package_content",
            get(package_content)
                .put(upload)
                .layer(DefaultBodyLimit::max(max_package_bytes)),
        )
        .route(
            "/vnf_packages/{id}/package_content/upload_from_uri",
            post(upload_from_uri),
        )
        .route("/vnf_packages/{id}/vnfd", get(vnfd))
        .route("/vnf_packages/{id}/artifacts/{*path}", get(artifact))
        // SOL003 v2.6.1 clause 10.4.2a-10.4.5a: the same resources addressed by vnfdId.
        .route(
            "/onboarded_vnf_packages",
            get(move |s, u, h| list(family, true, s, u, h)),
        )
        .route(
            "/onboarded_vnf_packages/{vnfd_id}",
            get(move |s, p, u, h| onboarded_show(family, s, p, u, h)),
        )
        .route(
            "/onboarded_vnf_packages/{vnfd_id}/package_content",
            get(onboarded_content),
        )
        .route(
            "/onboarded_vnf_packages/{vnfd_id}/vnfd",
            get(onboarded_vnfd),
        )
        .route(
            "/onboarded_vnf_packages/{vnfd_id}/artifacts/{*path}",
            get(onboarded_artifact),
        )
        .merge(crate::pkgm_subscriptions::routes(family))
        .layer(middleware::from_fn(move |req, next| {
            versioned(family, req, next)
        }))
}

fn view(family: ApiFamily, info: &VnfPkgInfo) -> ApiResult<Value> {
    let shaped = if family == ApiFamily::PkgmV1 {
        info.to_v1()
    } else {
        info.clone()
    };
    let mut doc = serde_json::to_value(shaped)
        .map_err(|e| ApiError::Internal(format!("package does not serialize: {e}")))?;
    if family == ApiFamily::PkgmV1 {
        relink_pkgm(&mut doc);
    }
    Ok(doc)
}

fn relink_pkgm(doc: &mut Value) {
    if let Some(links) = doc.get_mut("_links").and_then(Value::as_object_mut) {
        for link in links.values_mut() {
            if let Some(Value::String(href)) = link.get_mut("href")
                && let Some(rest) = href.strip_prefix(ApiFamily::PkgmV2.prefix())
            {
                *href = format!("{}{rest}", ApiFamily::PkgmV1.prefix());
            }
        }
    }
}

fn schema() -> &'static Value {
    static S: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    S.get_or_init(|| serde_json::to_value(schemars::schema_for!(VnfPkgInfo)).unwrap_or_default())
}

async fn list(
    family: ApiFamily,
    onboarded_only: bool,
    State(state): State<Arc<AppState>>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/json"])?;
    if let Some(page) = crate::listing::cached_page(&state.pages, &uri) {
        return Ok(page);
    }
    let list = ListRequest::parse(&uri, schema())?;
    let excluded = if family == ApiFamily::PkgmV1 {
        vnfm_sol013::defaults::vnfpkgm::V1_VNF_PKG_INFO_EXCLUDED
    } else {
        vnfm_sol013::defaults::vnfpkgm::V2_VNF_PKG_INFO_EXCLUDED
    };
    list.run(
        &state.pages,
        |after| {
            let state = state.clone();
            async move {
                let page = state
                    .store
                    .list_packages(after.as_deref(), crate::listing::PAGE_SIZE)
                    .await?;
                let mut items = Vec::with_capacity(page.items.len());
                for record in &page.items {
                    let info = state.packages.described(record).await?;
                    if onboarded_only && info.onboarding_state != PackageOnboardingState::Onboarded
                    {
                        continue;
                    }
                    items.push(view(family, &info)?);
                }
                Ok(Page {
                    items,
                    next: page.next,
                })
            }
        },
        excluded,
    )
    .await
}

async fn create(
    family: ApiFamily,
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/json"])?;
    let req: CreateVnfPkgInfoRequest = if body.is_empty() {
        CreateVnfPkgInfoRequest::default()
    } else {
        json_body(&headers, &body, None)?
    };
    let info = state.packages.create(req).await?;
    let location = format!(
        "{}{}/vnf_packages/{}",
        origin(&headers, false),
        family.prefix(),
        info.id
    );
    Ok(with_location(
        json_response(StatusCode::CREATED, &view(family, &info)?),
        &location,
    ))
}

async fn show(
    family: ApiFamily,
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/json"])?;
    let list = ListRequest::parse(&uri, schema())?;
    let (info, version) = state.packages.get(&id).await?;
    let mut doc = view(family, &info)?;
    list.select(&mut doc);
    Ok(crate::lcm_v2::with_etag(
        json_response(StatusCode::OK, &doc),
        version,
    ))
}

async fn modify(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    let mods: VnfPkgInfoModifications = merge_patch_body(&headers, &body, None)?;
    if mods.operational_state.is_none() && mods.user_defined_data.is_none() {
        return Err(ApiError::bad_request(
            "the patch changes nothing: give operationalState and/or userDefinedData",
        ));
    }
    state.packages.modify(&id, &mods).await?;
    Ok(json_response(StatusCode::OK, &mods))
}

async fn delete(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> ApiResult<Response> {
    state.packages.delete(&id).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn upload(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    crate::util::require_content_type(&headers, &["application/zip", "application/octet-stream"])?;
    let max = state.options.package_limits.max_package_bytes;
    if body.len() > max {
        return Err(ApiError::PayloadTooLarge(format!(
            "the package has {} bytes; this server accepts at most {max}",
            body.len()
        )));
    }
    if body.is_empty() {
        return Err(ApiError::bad_request(
            "the package content is empty: send the CSAR zip as the body",
        ));
    }
    state.packages.accept_content(&id, body.to_vec()).await?;
    Ok(StatusCode::ACCEPTED.into_response())
}

async fn upload_from_uri(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    let req: UploadVnfPackageFromUriRequest = json_body(&headers, &body, None)?;
    state.packages.upload_from_uri(&id, req).await?;
    Ok(StatusCode::ACCEPTED.into_response())
}

/// Serves `bytes` honouring a single `Range: bytes=...` request.
fn ranged(headers: &HeaderMap, bytes: Vec<u8>, content_type: &str) -> ApiResult<Response> {
    let total = bytes.len();
    let ct = HeaderValue::from_str(content_type)
        .unwrap_or(HeaderValue::from_static("application/octet-stream"));
    let Some(range) = headers.get(header::RANGE).and_then(|v| v.to_str().ok()) else {
        let mut r = (StatusCode::OK, bytes).into_response();
        r.headers_mut().insert(header::CONTENT_TYPE, ct);
        r.headers_mut()
            .insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
        return Ok(r);
    };
    let unsatisfiable = || {
        ApiError::RangeNotSatisfiable(format!(
            "the Range {} cannot be served: the content has {total} bytes; use one range bytes=first-last",
            crate::util::cut(range, 60)
        ))
    };
    let spec = range
        .trim()
        .strip_prefix("bytes=")
        .ok_or_else(unsatisfiable)?;
    if spec.contains(',') || total == 0 {
        return Err(unsatisfiable());
    }
    let (first, last) = spec.split_once('-').ok_or_else(unsatisfiable)?;
    let (start, end) = if first.is_empty() {
        let n: usize = last.parse().map_err(|_| unsatisfiable())?;
        if n == 0 {
            return Err(unsatisfiable());
        }
        (total.saturating_sub(n), total - 1)
    } else {
        let s: usize = first.parse().map_err(|_| unsatisfiable())?;
        let e: usize = if last.is_empty() {
            total - 1
        } else {
            last.parse().map_err(|_| unsatisfiable())?
        };
        (s, e.min(total - 1))
    };
    if start > end || start >= total {
        return Err(unsatisfiable());
    }
    let mut r = (StatusCode::PARTIAL_CONTENT, bytes[start..=end].to_vec()).into_response();
    r.headers_mut().insert(header::CONTENT_TYPE, ct);
    if let Ok(v) = HeaderValue::from_str(&format!("bytes {start}-{end}/{total}")) {
        r.headers_mut().insert(header::CONTENT_RANGE, v);
    }
    Ok(r)
}

/// The id of the package whose VNFD has `vnfd_id` (404 when none has been onboarded).
async fn package_of(state: &AppState, vnfd_id: &str) -> ApiResult<String> {
    state.packages.package_id_for(vnfd_id).await.ok_or_else(|| {
        ApiError::NotFound(format!(
            "no onboarded VNF package has vnfdId {}",
            crate::util::cut(vnfd_id, 100)
        ))
    })
}

async fn onboarded_show(
    family: ApiFamily,
    State(state): State<Arc<AppState>>,
    Path(vnfd_id): Path<String>,
    uri: OriginalUri,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let id = package_of(&state, &vnfd_id).await?;
    show(family, State(state), Path(id), uri, headers).await
}

async fn onboarded_content(
    State(state): State<Arc<AppState>>,
    Path(vnfd_id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let id = package_of(&state, &vnfd_id).await?;
    package_content(State(state), Path(id), headers).await
}

async fn onboarded_vnfd(
    State(state): State<Arc<AppState>>,
    Path(vnfd_id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let id = package_of(&state, &vnfd_id).await?;
    vnfd(State(state), Path(id), headers).await
}

async fn onboarded_artifact(
    State(state): State<Arc<AppState>>,
    Path((vnfd_id, path)): Path<(String, String)>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let id = package_of(&state, &vnfd_id).await?;
    artifact(State(state), Path((id, path)), headers).await
}

async fn package_content(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/zip"])?;
    let (_, content) = state.packages.content(&id).await?;
    ranged(&headers, content, "application/zip")
}

async fn artifact(
    State(state): State<Arc<AppState>>,
    Path((id, path)): Path<(String, String)>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let (info, content) = state.packages.content(&id).await?;
    let listed = info
        .additional_artifacts
        .iter()
        .flatten()
        .any(|a| a.artifact_path == path)
        || info
            .software_images
            .iter()
            .flatten()
            .any(|i| i.image_path == path);
    if !listed {
        return Err(ApiError::NotFound(format!(
            "VNF package {id} has no artifact {}: see additionalArtifacts and softwareImages of the package",
            crate::util::cut(&path, 200)
        )));
    }
    let limits = state.options.package_limits.archive.clone();
    let bytes = tokio::task::spawn_blocking(move || {
        Package::from_zip_bytes(content, &limits).and_then(|p| p.read(&path))
    })
    .await
    .map_err(|e| ApiError::Internal(format!("reading the artifact failed: {e}")))?
    .map_err(|e| ApiError::NotFound(format!("the artifact is not in the package content: {e}")))?;
    ranged(&headers, bytes, "application/octet-stream")
}

async fn vnfd(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let (_, content) = state.packages.content(&id).await?;
    let limits = state.options.package_limits.archive.clone();
    let package = tokio::task::spawn_blocking(move || Package::from_zip_bytes(content, &limits))
        .await
        .map_err(|e| ApiError::Internal(format!("reading the VNFD failed: {e}")))?
        .map_err(|e| ApiError::Internal(format!("stored package cannot be opened: {e}")))?;
    // The VNFD files: TOSCA.meta and every YAML file under the entry definitions' directory.
    let entry = package.entry_definitions().to_owned();
    let dir = entry
        .rsplit_once('/')
        .map(|(d, _)| format!("{d}/"))
        .unwrap_or_default();
    let mut files: Vec<String> = package
        .files()
        .filter(|f| {
            (f.starts_with(&dir) && (f.ends_with(".yaml") || f.ends_with(".yml")))
                || *f == "TOSCA-Metadata/TOSCA.meta"
        })
        .map(str::to_owned)
        .collect();
    files.sort();
    let yaml_files: Vec<&String> = files
        .iter()
        .filter(|f| !f.starts_with("TOSCA-Metadata/"))
        .collect();
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("*/*");
    let wants_zip = accept.contains("application/zip");
    let wants_text = accept.contains("text/plain");
    let single = yaml_files.len() == 1;
    if single && (wants_text || !wants_zip) {
        let text = package
            .read(&entry)
            .map_err(|e| ApiError::Internal(e.to_string()))?;
        let mut r = (StatusCode::OK, text).into_response();
        r.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        return Ok(r);
    }
    if !wants_zip && wants_text {
        return Err(ApiError::NotAcceptable(
            "the VNFD consists of several files: request it with Accept: application/zip".into(),
        ));
    }
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for f in &files {
        let bytes = package
            .read(f)
            .map_err(|e| ApiError::Internal(e.to_string()))?;
        zip.start_file(f.as_str(), options)
            .and_then(|_| zip.write_all(&bytes).map_err(Into::into))
            .map_err(|e| ApiError::Internal(format!("building the VNFD zip failed: {e}")))?;
    }
    let bytes = zip
        .finish()
        .map_err(|e| ApiError::Internal(format!("building the VNFD zip failed: {e}")))?
        .into_inner();
    let mut r = (StatusCode::OK, bytes).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/zip"),
    );
    Ok(r)
}
