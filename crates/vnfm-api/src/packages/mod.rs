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
//! stored in pieces, and read entry by entry from a local copy (`vnfm::lcm::spool`). The usage
//! state is computed: `IN_USE` while a VNF instance has the package's `vnfdId`.
//!
//! Changes are notified to the package management subscriptions
//! ([`vnfm_lcm::PkgmSubscriptions`]): reaching `ONBOARDED` (`VnfPackageOnboardingNotification`),
//! a PATCH of `operationalState` and the deletion of an onboarded package
//! (`VnfPackageChangeNotification`, `OP_STATE_CHANGE` / `PKG_DELETE`). The notifications are
//! written to the outbox in the same transaction as the package record.
//!
//! The module is split by concern:
//! - this file: the `Packages` repository type and its construction, `PackageLimits`, the
//!   record and link helpers shared by the submodules, and the routes;
//! - `repository`: package records, the catalog of onboarded VNFDs, usage, create, modify
//!   and delete;
//! - `upload`: content upload (streamed body or allow-listed URI) and its acceptance;
//! - `content`: the local copies of package content;
//! - `onboarding`: validation of the content and the recorded outcome;
//! - `handlers`: the HTTP handlers of the package resources;
//! - `download`: the content, VNFD and artifact downloads (with `Range`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::DefaultBodyLimit;
use vnfm::lcm::spool::Spool;
use vnfm::lcm::{ContentFetcher, StoreCatalog};
use vnfm_csar::Limits;
use vnfm_lcm::PkgmSubscriptions;
use vnfm_store::{PackageRecord, Store};
use vnfm_types::{Link, VnfPkgInfo, VnfPkgLinks};

use crate::error::{ApiError, ApiResult};
use crate::route_table::{self, doc, get, patch, post, put, route};
use crate::state::AppState;
use crate::version::{ApiFamily, major_versions, versioned_routes};
use utoipa_axum::router::OpenApiRouter;

mod content;
mod download;
mod handlers;
mod onboarding;
mod repository;
mod upload;

use download::{artifact, package_content, vnfd};
use handlers::{
    create, delete, list, modify, onboarded_artifact, onboarded_content, onboarded_show,
    onboarded_vnfd, show, upload, upload_from_uri,
};

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
/// lifecycle core's catalog (which the composition root assembled, and which reads the
/// packages of the store by itself).
pub struct Packages {
    store: Arc<dyn Store>,
    catalog: Arc<StoreCatalog>,
    limits: PackageLimits,
    allow_list: Vec<String>,
    package_of_vnfd: Mutex<HashMap<String, String>>,
    nfvo: Option<Arc<dyn vnfm::lcm::Nfvo>>,
    notifications: Option<PkgmSubscriptions>,
    /// The server's management driver (`None`: hooks do not run), asked at onboarding
    /// whether it can run the VNFD's hooks.
    mgmt: Option<Arc<dyn vnfm::lcm::MgmtDriver>>,
    /// Fetches `upload_from_uri` content.
    content: Arc<dyn ContentFetcher>,
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
        // Written on creation only: updates keep the stored project.
        project: None,
    })
}

impl Packages {
    /// A repository over `store`, onboarding into `catalog`; uploads are streamed to, and
    /// local copies of the content kept in, the catalog's package directory (see
    /// `vnfm::lcm::spool`).
    pub fn new(
        store: Arc<dyn Store>,
        catalog: Arc<StoreCatalog>,
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
            mgmt: None,
            content: Arc::new(vnfm::lcm::NoContent),
        }
    }

    /// Fetches the content of `upload_from_uri` with `content` (without one, such uploads
    /// fail with a message saying so).
    pub fn with_content_fetcher(mut self, content: Arc<dyn ContentFetcher>) -> Packages {
        self.content = content;
        self
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

    /// The package directory (uploads and local copies of the content).
    pub(crate) fn spool(&self) -> &Spool {
        self.catalog.spool()
    }
}

// ----- HTTP -----

pub(crate) fn routes(family: ApiFamily, max_package_bytes: usize) -> OpenApiRouter<Arc<AppState>> {
    let routes = OpenApiRouter::new()
        .routes(route(
            "/api_versions",
            [get(
                move || async move { major_versions(family) },
                doc("API versions of VNF package management of this major version")
                    .returns("ApiVersionInformation"),
            )],
        ))
        .routes(route(
            "/vnf_packages",
            [
                get(
                    move |s, t, u, h| list(family, false, s, t, u, h),
                    doc("List VNF packages").returns("[VnfPkgInfo]"),
                ),
                post(
                    move |s, t, h, b| create(family, s, t, h, b),
                    doc("Create a VNF package resource")
                        .body("CreateVnfPkgInfoRequest")
                        .status(201)
                        .returns("VnfPkgInfo"),
                ),
            ],
        ))
        .routes(route(
            "/vnf_packages/{vnfPkgId}",
            [
                get(
                    move |s, p, u, h| show(family, s, p, u, h),
                    doc("Read a VNF package").returns("VnfPkgInfo"),
                ),
                patch(
                    modify,
                    doc("Enable/disable a package, change user data")
                        .body("VnfPkgInfoModifications")
                        .returns("VnfPkgInfoModifications"),
                ),
                route_table::delete(delete, doc("Delete a DISABLED, unused package").status(204)),
            ],
        ))
        .routes(route(
            "/vnf_packages/{vnfPkgId}/package_content",
            [
                get(package_content, doc("Download the CSAR (Range supported)")),
                put(
                    upload,
                    doc("Upload the CSAR (application/zip); onboarding runs asynchronously")
                        .status(202),
                )
                .map(|r| r.layer(DefaultBodyLimit::max(max_package_bytes))),
            ],
        ))
        .routes(route(
            "/vnf_packages/{vnfPkgId}/package_content/upload_from_uri",
            [post(
                upload_from_uri,
                doc("Upload from an allow-listed URI")
                    .body("UploadVnfPackageFromUriRequest")
                    .status(202),
            )],
        ))
        .routes(route(
            "/vnf_packages/{vnfPkgId}/vnfd",
            [get(
                vnfd,
                doc("The VNFD (text/plain single file, or application/zip)"),
            )],
        ))
        .routes(route(
            "/vnf_packages/{vnfPkgId}/artifacts/{*artifactPath}",
            [get(artifact, doc("One artifact (Range supported)"))],
        ))
        // SOL003 v2.6.1 clause 10.4.2a-10.4.5a: the same resources addressed by vnfdId.
        .routes(route(
            "/onboarded_vnf_packages",
            [get(
                move |s, t, u, h| list(family, true, s, t, u, h),
                doc("List the ONBOARDED VNF packages").returns("[VnfPkgInfo]"),
            )],
        ))
        .routes(route(
            "/onboarded_vnf_packages/{vnfdId}",
            [get(
                move |s, p, u, h| onboarded_show(family, s, p, u, h),
                doc("Read the VNF package of a vnfdId").returns("VnfPkgInfo"),
            )],
        ))
        .routes(route(
            "/onboarded_vnf_packages/{vnfdId}/package_content",
            [get(
                onboarded_content,
                doc("Download the CSAR of a vnfdId (Range supported)"),
            )],
        ))
        .routes(route(
            "/onboarded_vnf_packages/{vnfdId}/vnfd",
            [get(
                onboarded_vnfd,
                doc("The VNFD of a vnfdId (text/plain single file, or application/zip)"),
            )],
        ))
        .routes(route(
            "/onboarded_vnf_packages/{vnfdId}/artifacts/{*artifactPath}",
            [get(
                onboarded_artifact,
                doc("One artifact of the package of a vnfdId (Range supported)"),
            )],
        ))
        .merge(crate::subscriptions::routes::<crate::subscriptions::Pkgm>(
            family,
        ));
    versioned_routes(family, routes)
}
