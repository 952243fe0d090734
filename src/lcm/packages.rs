//! VNF package onboarding and lookup, as `vnfm serve` has them and embedders get them from
//! the builder ([`crate::lcm::Vnfm::packages`]): package records, content accepted from a
//! spooled upload, from an allow-listed URI or from the NFVO, onboarding through the package
//! layer's validation, the operational state, and the checks before an instance is created
//! from a package.
//!
//! Onboarding states: `CREATED` -> (content accepted) `PROCESSING` -> `ONBOARDED` (the
//! package is then `ENABLED`) or `ERROR` with `onboardingFailureDetails` listing the error
//! diagnostics (code, file:line, help). The content is stored before the upload is answered,
//! so a package whose onboarding was interrupted by a crash is onboarded again at the next
//! start ([`Packages::resume_onboarding`]). Content never passes through memory whole: it is
//! spooled to disk, stored in pieces, and read entry by entry from a local copy
//! ([`crate::lcm::spool`]). The usage state is computed: `IN_USE` while a VNF instance has the
//! package's `vnfdId`.
//!
//! Changes are notified to the package management subscriptions
//! ([`vnfm_lcm::PkgmSubscriptions`]): reaching `ONBOARDED` (`VnfPackageOnboardingNotification`),
//! a change of `operationalState` and the deletion of an onboarded package
//! (`VnfPackageChangeNotification`, `OP_STATE_CHANGE` / `PKG_DELETE`). The notifications are
//! written to the outbox in the same transaction as the package record.
//!
//! The module is split by concern:
//! - this file: the `Packages` type and its construction, `PackageLimits`, the record and
//!   link helpers shared by the submodules;
//! - `records`: package records, the catalog of onboarded VNFDs, usage, create, modify and
//!   delete;
//! - `upload`: accepting content, and content fetched from an allow-listed URI;
//! - `content`: the local copies of package content;
//! - `onboarding`: validation of the content and the recorded outcome.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use vnfm_csar::Limits;
use vnfm_lcm::PkgmSubscriptions;
use vnfm_store::{PackageRecord, PackageRepositoryStore};
use vnfm_types::links::{ApiVersion, LinkTarget, ResourceLinks, SolLinks};
use vnfm_types::{Link, VnfPkgInfo, VnfPkgLinks};

use crate::lcm::spool::Spool;
use crate::lcm::{ContentFetcher, EmbedError, MgmtDriver, Nfvo, StoreCatalog};

mod content;
mod onboarding;
mod records;
mod upload;

/// What the package operations answer.
pub type PackageResult<T> = Result<T, EmbedError>;

/// Size limits of packages.
#[derive(Debug, Clone)]
pub struct PackageLimits {
    /// Largest package content accepted, in bytes.
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
/// lifecycle core's catalog (which reads the packages of the store by itself).
pub struct Packages {
    store: Arc<dyn PackageRepositoryStore>,
    catalog: Arc<StoreCatalog>,
    limits: PackageLimits,
    allow_list: Vec<String>,
    package_of_vnfd: Mutex<HashMap<String, String>>,
    nfvo: Option<Arc<dyn Nfvo>>,
    notifications: Option<PkgmSubscriptions>,
    /// The management driver (`None`: hooks do not run), asked at onboarding whether it can
    /// run the VNFD's hooks.
    mgmt: Option<Arc<dyn MgmtDriver>>,
    /// Fetches `upload_from_uri` content.
    content: Arc<dyn ContentFetcher>,
    /// Where the package resources live.
    links: Arc<dyn ResourceLinks>,
}

impl std::fmt::Debug for Packages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Packages")
            .field("limits", &self.limits)
            .field("allow_list", &self.allow_list)
            .finish_non_exhaustive()
    }
}

fn now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    vnfm_types::DateTime::from_unix_seconds(secs).to_string()
}

/// `s` cut to `max` characters (an ellipsis marks the cut): what error messages quote of
/// values a client sent.
fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

fn info_of(record: &PackageRecord) -> PackageResult<VnfPkgInfo> {
    serde_json::from_value(record.info.clone()).map_err(|e| EmbedError::StoredPackage {
        id: record.id.clone(),
        message: format!("its record is unreadable: {e}"),
    })
}

fn record_of(info: &VnfPkgInfo) -> PackageResult<PackageRecord> {
    Ok(PackageRecord {
        id: info.id.clone(),
        vnfd_id: info.vnfd_id.clone(),
        info: serde_json::to_value(info).map_err(|e| EmbedError::StoredPackage {
            id: info.id.clone(),
            message: format!("it does not serialize: {e}"),
        })?,
        // Written on creation only: updates keep the stored project.
        project: None,
    })
}

impl Packages {
    /// A repository over `store`, onboarding into `catalog`; content is spooled to, and
    /// local copies of it kept in, the catalog's package directory (see
    /// [`crate::lcm::spool`]). Packages are fetched from `nfvo` when an instance names a
    /// `vnfdId` no package has.
    pub fn new(
        store: Arc<dyn PackageRepositoryStore>,
        catalog: Arc<StoreCatalog>,
        limits: PackageLimits,
        allow_list: Vec<String>,
        nfvo: Option<Arc<dyn Nfvo>>,
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
            content: Arc::new(crate::lcm::NoContent),
            links: Arc::new(SolLinks::default()),
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

    /// Onboarding warns about the LCM hooks `mgmt` (the management driver; `None` when there
    /// is none) cannot run.
    pub fn with_mgmt_driver(mut self, mgmt: Option<Arc<dyn MgmtDriver>>) -> Packages {
        self.mgmt = mgmt;
        self
    }

    /// The package resources' links are made by `links`.
    pub fn with_links(mut self, links: Arc<dyn ResourceLinks>) -> Packages {
        self.links = links;
        self
    }

    /// The package directory (uploads and local copies of the content).
    pub fn spool(&self) -> &Spool {
        self.catalog.spool()
    }

    /// The size limits.
    pub fn limits(&self) -> &PackageLimits {
        &self.limits
    }

    /// `_links` of package `id` (with `vnfd` once it is onboarded) into `version` of the
    /// package management interface (stored for `V2`; an API serving another version renders
    /// them for it).
    pub fn links(&self, id: &str, onboarded: bool, version: ApiVersion) -> VnfPkgLinks {
        let part = |part| {
            Link::new(
                self.links
                    .href(LinkTarget::PackagePart { version, id, part }),
            )
        };
        VnfPkgLinks {
            self_: Link::new(self.links.href(LinkTarget::Package { version, id })),
            vnfd: onboarded.then(|| part("vnfd")),
            package_content: part("package_content"),
        }
    }
}
