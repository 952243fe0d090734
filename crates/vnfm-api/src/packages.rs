//! VNF package management (`/vnfpkgm/v2`, `/vnfpkgm/v1`; SOL003 clause 10, SOL005 clause 9
//! style): package resources, content upload (zip body or an allow-listed URI), onboarding
//! through the package layer's validation, the VNFD, the content and artifacts (with
//! `Range`), and the operational state.
//!
//! Onboarding states: `CREATED` -> (`PUT package_content`) `PROCESSING` -> `ONBOARDED` (the
//! package is then `ENABLED`) or `ERROR` with `onboardingFailureDetails` listing the error
//! diagnostics (code, file:line, help). The content is stored before `202 Accepted` is
//! answered, so a package whose onboarding was interrupted by a crash is onboarded again at
//! the next start. Content never passes through memory whole: uploads are streamed to disk,
//! stored in pieces, and read entry by entry from a local copy (`crate::spool`). The usage
//! state is computed: `IN_USE` while a VNF instance has the package's `vnfdId`.
//!
//! Changes are notified to the package management subscriptions
//! ([`vnfm_lcm::PkgmSubscriptions`]): reaching `ONBOARDED` (`VnfPackageOnboardingNotification`),
//! a PATCH of `operationalState` and the deletion of an onboarded package
//! (`VnfPackageChangeNotification`, `OP_STATE_CHANGE` / `PKG_DELETE`). The notifications are
//! written to the outbox in the same transaction as the package record.

use std::collections::HashMap;
use std::io::{Cursor, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, OriginalUri, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::Value;
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
use crate::spool::{Spool, SpooledContent};
use crate::state::AppState;
use crate::util::{json_body, json_response, merge_patch_body, require_accept, with_location};
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
    spool: Spool,
    package_of_vnfd: Mutex<HashMap<String, String>>,
    nfvo: Option<Arc<dyn vnfm::lcm::Nfvo>>,
    notifications: Option<PkgmSubscriptions>,
    /// The server's management driver (`None`: hooks do not run), asked at onboarding
    /// whether it can run the VNFD's hooks.
    mgmt: Option<Arc<dyn vnfm::lcm::MgmtDriver>>,
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
    /// A repository over `store`, onboarding into `catalog`; uploads are streamed to, and
    /// local copies of the content kept in, `content_dir` (see `crate::spool`).
    pub fn new(
        store: Arc<dyn Store>,
        catalog: Arc<MemoryCatalog>,
        limits: PackageLimits,
        allow_list: Vec<String>,
        nfvo: Option<Arc<dyn vnfm::lcm::Nfvo>>,
        content_dir: PathBuf,
    ) -> Packages {
        Packages {
            store,
            catalog,
            limits,
            allow_list,
            spool: Spool::new(content_dir),
            package_of_vnfd: Mutex::new(HashMap::new()),
            nfvo,
            notifications: None,
            mgmt: None,
        }
    }

    /// Notifies package changes to these subscriptions.
    pub fn with_notifications(mut self, subscriptions: PkgmSubscriptions) -> Packages {
        self.notifications = Some(subscriptions);
        self
    }

    /// Onboarding warns about the LCM hooks `mgmt` (the server's management driver; `None`
    /// when it has none) cannot run.
    pub fn with_mgmt_driver(mut self, mgmt: Option<Arc<dyn vnfm::lcm::MgmtDriver>>) -> Packages {
        self.mgmt = mgmt;
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
        let mut writer = self.spool.writer(content.len() as u64)?;
        writer.push(&content).await?;
        drop(content);
        let spooled = writer.finish().await?;
        let info = self.create(CreateVnfPkgInfoRequest::default()).await?;
        let local = self.store_content(&info.id, spooled).await?;
        self.onboard(&info.id, local).await?;
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
                        let digest = info.checksum.as_ref().map(|c| c.hash.as_str());
                        match self.local_content(&record.id, digest).await {
                            Ok(Some(local)) => {
                                tracing::info!(package = %record.id, "resuming an interrupted onboarding");
                                if self.onboard(&record.id, local).await.is_ok() {
                                    loaded += 1;
                                }
                            }
                            Ok(None) => {}
                            Err(e) => {
                                tracing::error!(package = %record.id, error = %e, "reading the content of an interrupted onboarding failed");
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
        let digest = info.checksum.as_ref().map(|c| c.hash.as_str());
        let Some(local) = self.local_content(&record.id, digest).await? else {
            return Ok(());
        };
        let limits = self.limits.archive.clone();
        let report = tokio::task::spawn_blocking(move || {
            open_content(&local.path, &limits)
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

    /// Refuses content for a package that cannot take it (409): one not in `CREATED` or
    /// `ERROR` state.
    fn check_uploadable(id: &str, info: &VnfPkgInfo) -> ApiResult<()> {
        if matches!(
            info.onboarding_state,
            PackageOnboardingState::Created | PackageOnboardingState::Error
        ) {
            return Ok(());
        }
        Err(ApiError::Conflict(format!(
            "VNF package {id} is {:?}: content can be uploaded only once, to a package in CREATED (or ERROR) state",
            info.onboarding_state
        )))
    }

    /// Streams an upload body to a temporary file of the package directory, enforcing the
    /// package size limit while reading (413) and refusing an empty body (400). The file is
    /// removed if reading fails or the client goes away.
    pub(crate) async fn spool_body(&self, mut body: axum::body::Body) -> ApiResult<SpooledContent> {
        use http_body_util::BodyExt;
        let max = self.limits.max_package_bytes as u64;
        let mut writer = self.spool.writer(max)?;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| {
                // The route's DefaultBodyLimit cuts a body at the same size as the writer.
                if is_length_limit(&e) {
                    return ApiError::PayloadTooLarge(format!(
                        "the package has more than {max} bytes; this server accepts at most {max} (--max-package-mib)"
                    ));
                }
                ApiError::bad_request(format!(
                    "reading the package content failed after {} bytes: {e}",
                    writer.len()
                ))
            })?;
            if let Ok(data) = frame.into_data() {
                writer.push(&data).await?;
            }
        }
        if writer.len() == 0 {
            return Err(ApiError::bad_request(
                "the package content is empty: send the CSAR zip as the body",
            ));
        }
        writer.finish().await
    }

    /// Stores spooled content in the store (in pieces, constant memory) and keeps the file
    /// as the package's local copy.
    async fn store_content(&self, id: &str, content: SpooledContent) -> ApiResult<LocalContent> {
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
    async fn local_content(
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

    /// Stores uploaded content and moves the package to `PROCESSING`; onboarding then runs in
    /// the background.
    pub(crate) async fn accept_content(
        self: &Arc<Self>,
        id: &str,
        content: SpooledContent,
    ) -> ApiResult<()> {
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

    /// Validates the content and records the outcome: `ONBOARDED` + `ENABLED`, or `ERROR`.
    /// The package is read from its local copy on demand, never whole into memory.
    async fn onboard(&self, id: &str, content: LocalContent) -> ApiResult<()> {
        let checksum = content.sha256;
        let limits = self.limits.archive.clone();
        let path = content.path;
        let opened = tokio::task::spawn_blocking(move || {
            open_content(&path, &limits).map(|p| inspect_package(p, &InspectOptions::default()))
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
        let mut warnings: Vec<String> = report
            .diagnostics
            .iter()
            .filter(|d| !d.is_error())
            .map(|d| d.to_string())
            .collect();
        if let Descriptor::Vnfd(vnfd) = &descriptor {
            warnings.extend(
                hook_warnings(vnfd, self.mgmt.as_deref())
                    .iter()
                    .map(ToString::to_string),
            );
        }
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
            // Streamed to the package directory like an upload: constant memory, the limit
            // enforced while reading, the file removed on failure.
            let fetched: Result<SpooledContent, String> = async {
                let mut response = request
                    .send()
                    .await
                    .map_err(|e| format!("fetching failed: {e}"))?;
                if !response.status().is_success() {
                    return Err(format!("the source answered {}", response.status()));
                }
                let mut writer = this.spool.writer(max as u64).map_err(|e| e.to_string())?;
                while let Some(chunk) = response
                    .chunk()
                    .await
                    .map_err(|e| format!("reading failed: {e}"))?
                {
                    writer.push(&chunk).await.map_err(|e| match e {
                        ApiError::PayloadTooLarge(_) => {
                            format!("the package is larger than the limit of {max} bytes")
                        }
                        other => other.to_string(),
                    })?;
                }
                writer.finish().await.map_err(|e| e.to_string())
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
        self.spool.remove_copies(id, None);
        Ok(())
    }

    /// The local copy of an onboarded package's zip.
    async fn content(&self, id: &str) -> ApiResult<(VnfPkgInfo, PathBuf)> {
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

/// Whether reading a body failed because it passed the route's body limit.
fn is_length_limit(e: &axum::Error) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if c.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        cause = c.source();
    }
    false
}

/// The local copy of a package's content (`crate::spool`) and its SHA-256.
struct LocalContent {
    path: PathBuf,
    sha256: String,
}

/// Opens the package at `path` (a local copy), reading entries on demand.
fn open_content(
    path: &std::path::Path,
    limits: &vnfm_csar::Limits,
) -> Result<Package, vnfm_csar::CsarError> {
    let file = std::fs::File::open(path).map_err(|source| vnfm_csar::CsarError::Io {
        path: "the package content".into(),
        source,
    })?;
    Package::from_zip_file(file, "the package content", limits)
}

impl Packages {
    /// The package directory (uploads and local copies of the content).
    pub(crate) fn spool(&self) -> &Spool {
        &self.spool
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

/// Warnings (`package.hook-not-runnable`) for the LCM hooks of `vnfd` that `mgmt` cannot
/// run, one per flavour and artifact: without them a package whose hooks need a management
/// driver the server lacks onboards silently and fails only when an operation reaches the
/// hook (with 422).
fn hook_warnings(
    vnfd: &vnfm_descriptor::Vnfd,
    mgmt: Option<&dyn vnfm::lcm::MgmtDriver>,
) -> Vec<vnfm_descriptor::Diagnostic> {
    let mut out = Vec::new();
    for flavour in &vnfd.flavours {
        // Hooks by artifact, in the order the VNFD binds them.
        let mut by_artifact: Vec<(&str, Vec<&str>)> = Vec::new();
        for hook in &flavour.lcm_hooks {
            match by_artifact.iter_mut().find(|(a, _)| *a == hook.artifact) {
                Some((_, ops)) => ops.push(&hook.operation),
                None => by_artifact.push((&hook.artifact, vec![&hook.operation])),
            }
        }
        for (name, operations) in by_artifact {
            // An undeclared artifact is already an error of the descriptor.
            let Some(a) = flavour.artifact(None, name) else {
                continue;
            };
            let artifact = vnfm_driver_api::HookArtifact {
                name: a.name.clone(),
                file: a.file.clone(),
                artifact_type: a.artifact_type.clone(),
                sha256: a.sha256.clone(),
                external: a.external,
                dependencies: Vec::new(),
            };
            let reason = match mgmt {
                None => Some("this server runs no management driver".to_owned()),
                Some(m) => m.cannot_run(&artifact),
            };
            let Some(reason) = reason else {
                continue;
            };
            let hooks = operations
                .iter()
                .map(|o| format!("`{o}`"))
                .collect::<Vec<_>>()
                .join(", ");
            out.push(
                vnfm_descriptor::Diagnostic::warning(
                    "package.hook-not-runnable",
                    format!(
                        "hook{} {hooks} of flavour `{}` need{} management driver artifact `{name}` ({}), which this server cannot run: {reason}",
                        if operations.len() == 1 { "" } else { "s" },
                        flavour.id,
                        if operations.len() == 1 { "s" } else { "" },
                        a.file,
                    ),
                )
                .with_help(format!(
                    "the operations that reach {} fail with 422 until the server runs it: start vnfm serve with --plugin {name}=LIBRARY, or with --package-plugins for a library in the package",
                    if operations.len() == 1 { "it" } else { "them" },
                )),
            );
        }
    }
    out
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
        state.origin(&headers),
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

/// `PUT package_content`: the body is streamed to a temporary file (constant memory, the
/// digest computed and the size limit enforced while reading; see `crate::spool`). A package
/// that cannot take content is refused before the body is read.
async fn upload(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> ApiResult<Response> {
    crate::util::require_content_type(&headers, &["application/zip", "application/octet-stream"])?;
    let (info, _) = state.packages.get(&id).await?;
    Packages::check_uploadable(&id, &info)?;
    let content = state.packages.spool_body(body).await?;
    state.packages.accept_content(&id, content).await?;
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

/// Streams the file at `path` (constant memory) honouring a single `Range: bytes=...`.
async fn ranged_file(
    headers: &HeaderMap,
    path: &std::path::Path,
    content_type: &'static str,
) -> ApiResult<Response> {
    let file = tokio::fs::File::open(path)
        .await
        .map_err(|e| ApiError::Internal(format!("reading {} failed: {e}", path.display())))?;
    ranged_stream(headers, file, content_type).await
}

/// Streams `file` from its start (constant memory) honouring a single `Range: bytes=...`.
async fn ranged_stream(
    headers: &HeaderMap,
    mut file: tokio::fs::File,
    content_type: &'static str,
) -> ApiResult<Response> {
    use tokio::io::{AsyncReadExt, AsyncSeekExt};
    let failed =
        |e: std::io::Error| ApiError::Internal(format!("reading package content failed: {e}"));
    let total = file.metadata().await.map_err(failed)?.len();
    let total_usize = usize::try_from(total)
        .map_err(|_| ApiError::Internal(format!("{total} bytes are too many to serve")))?;
    let range = requested_range(headers, total_usize)?;
    let (status, start, len) = match range {
        Some((start, end)) => (
            StatusCode::PARTIAL_CONTENT,
            start as u64,
            (end - start + 1) as u64,
        ),
        None => (StatusCode::OK, 0, total),
    };
    if start > 0 {
        file.seek(std::io::SeekFrom::Start(start))
            .await
            .map_err(failed)?;
    }
    let stream = tokio_util::io::ReaderStream::with_capacity(file.take(len), 64 * 1024);
    let mut r = (status, axum::body::Body::from_stream(stream)).into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    match range {
        Some((start, end)) => {
            if let Ok(v) = HeaderValue::from_str(&format!("bytes {start}-{end}/{total}")) {
                h.insert(header::CONTENT_RANGE, v);
            }
        }
        None => {
            h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
        }
    }
    Ok(r)
}

/// The first and last byte of the single `Range: bytes=...` of the request over `total`
/// bytes (`None` without a `Range`); 416 for a range that cannot be served.
fn requested_range(headers: &HeaderMap, total: usize) -> ApiResult<Option<(usize, usize)>> {
    let Some(range) = headers.get(header::RANGE).and_then(|v| v.to_str().ok()) else {
        return Ok(None);
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
    Ok(Some((start, end)))
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
    let (_, path) = state.packages.content(&id).await?;
    ranged_file(&headers, &path, "application/zip").await
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
    let spool = state.packages.spool().clone();
    // Extracted to an unnamed temporary file (gone when closed), then streamed: an image
    // artifact is never held in memory.
    let file = tokio::task::spawn_blocking(move || -> ApiResult<std::fs::File> {
        let package = open_content(&content, &limits).map_err(|e| {
            ApiError::Internal(format!("stored package {id} cannot be opened: {e}"))
        })?;
        let mut out = spool.scratch()?;
        package.copy_to(&path, &mut out).map_err(|e| {
            ApiError::NotFound(format!("the artifact is not in the package content: {e}"))
        })?;
        std::io::Seek::rewind(&mut out)
            .map_err(|e| ApiError::Internal(format!("reading the artifact failed: {e}")))?;
        Ok(out)
    })
    .await
    .map_err(|e| ApiError::Internal(format!("reading the artifact failed: {e}")))??;
    ranged_stream(
        &headers,
        tokio::fs::File::from_std(file),
        "application/octet-stream",
    )
    .await
}

async fn vnfd(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let (_, content) = state.packages.content(&id).await?;
    let limits = state.options.package_limits.archive.clone();
    let package = tokio::task::spawn_blocking(move || open_content(&content, &limits))
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
