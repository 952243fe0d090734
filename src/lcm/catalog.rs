//! [`StoreCatalog`]: the package catalog the composition root gives the core, backed by the
//! store's package records.
//!
//! The core asks it for the VNFD of every operation ([`PackageCatalog::vnfd`]). It answers from
//! its parse cache (a [`MemoryCatalog`]: the VNFDs onboarded by this process, or read once
//! before); on a miss it looks the `vnfdId` up in the store ([`vnfm_store::PackageStore::package_by_vnfd`]),
//! and when an onboarded package has it, reads the package from its local copy (written from
//! the store when this process has none: another replica took the upload, see
//! [`super::spool`]), keeps the parsed VNFD in the cache and answers with it. So a package
//! onboarded by any replica, or before a restart, is found the first time an operation needs
//! it, and the caller of the core never loads a package and asks again.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use vnfm_csar::{Limits, Package};
use vnfm_descriptor::Descriptor;
use vnfm_lcm::ports::{OnboardedVnfd, PackageCatalog};
use vnfm_lcm::{LcmError, MemoryCatalog};
use vnfm_store::PackageStore;
use vnfm_types::{PackageOnboardingState, VnfPkgInfo};

use super::EmbedError;
use super::spool::{Spool, SpooledContent};
use crate::package::{InspectOptions, inspect_package};

/// Onboarded VNFDs: a parse cache over the package records and content of the store.
pub struct StoreCatalog {
    store: Arc<dyn PackageStore>,
    cache: Arc<MemoryCatalog>,
    spool: Spool,
    limits: Limits,
}

impl std::fmt::Debug for StoreCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreCatalog")
            .field("cached", &self.cache)
            .field("spool", &self.spool)
            .finish_non_exhaustive()
    }
}

/// The local copy of a package's content ([`super::spool`]) and its SHA-256.
#[derive(Debug, Clone)]
pub struct LocalContent {
    /// The file, `<package directory>/<id>-<sha256>.zip`.
    pub path: PathBuf,
    /// The content's SHA-256, lowercase hex.
    pub sha256: String,
}

impl StoreCatalog {
    /// A catalog over the package records of `store`, caching parsed VNFDs in `cache` (which
    /// may already hold VNFDs onboarded in process), keeping local copies of package content
    /// in `package_dir` and opening them with the archive `limits`.
    pub fn new(
        store: Arc<dyn PackageStore>,
        cache: Arc<MemoryCatalog>,
        package_dir: PathBuf,
        limits: Limits,
    ) -> StoreCatalog {
        StoreCatalog::with_spool(store, cache, Spool::new(package_dir), limits)
    }

    /// [`StoreCatalog::new`] with the package directory `spool` (e.g.
    /// [`Spool::temporary`]).
    pub fn with_spool(
        store: Arc<dyn PackageStore>,
        cache: Arc<MemoryCatalog>,
        spool: Spool,
        limits: Limits,
    ) -> StoreCatalog {
        StoreCatalog {
            store,
            cache,
            spool,
            limits,
        }
    }

    /// The parse cache: onboarding puts the VNFD it read here, deleting a package takes it out.
    pub fn cache(&self) -> &Arc<MemoryCatalog> {
        &self.cache
    }

    /// The package directory: uploads being received and local copies of package content.
    pub fn spool(&self) -> &Spool {
        &self.spool
    }

    /// The archive limits packages are opened with.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Stores spooled content as package `id`'s (in the store, in pieces, constant memory) and
    /// keeps the file as its local copy.
    pub async fn store_content(
        &self,
        id: &str,
        content: SpooledContent,
    ) -> Result<LocalContent, EmbedError> {
        let mut reader = content.open().await?;
        self.store
            .put_package_content_from(id, &mut reader)
            .await
            .map_err(EmbedError::PackageStore)?;
        drop(reader);
        tracing::info!(package = %id, bytes = content.len, sha256 = %content.sha256, "package content stored");
        let path = self.spool.content_path(id, &content.sha256)?;
        let sha256 = content.sha256.clone();
        content.keep(&path)?;
        self.spool.remove_copies(id, Some(&path));
        Ok(LocalContent { path, sha256 })
    }

    /// The local copy of package `id`'s content, written from the store when this process has
    /// none (another replica took the upload) or only one of other content; `None` when no
    /// content was uploaded. `digest` is the SHA-256 the package records, if any.
    pub async fn local_content(
        &self,
        id: &str,
        digest: Option<&str>,
    ) -> Result<Option<LocalContent>, EmbedError> {
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
        let found = self
            .store
            .copy_package_content_to(id, &mut writer)
            .await
            .map_err(EmbedError::PackageStore)?;
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

    /// The onboarded VNFD `vnfd_id`: from the cache, else read from the onboarded package of
    /// the store that has it (and cached). `None` when no onboarded package has it, or the
    /// package holds an ASD.
    pub async fn load(&self, vnfd_id: &str) -> Result<Option<OnboardedVnfd>, EmbedError> {
        if let Some(found) = self.cache.get(vnfd_id) {
            return Ok(Some(found));
        }
        let Some((record, _)) = self
            .store
            .package_by_vnfd(vnfd_id)
            .await
            .map_err(EmbedError::PackageStore)?
        else {
            return Ok(None);
        };
        let unreadable = |message: String| EmbedError::StoredPackage {
            id: record.id.clone(),
            message,
        };
        let info: VnfPkgInfo =
            serde_json::from_value(record.info.clone()).map_err(|e| unreadable(e.to_string()))?;
        if info.onboarding_state != PackageOnboardingState::Onboarded {
            return Ok(None);
        }
        let digest = info.checksum.as_ref().map(|c| c.hash.as_str());
        let Some(local) = self.local_content(&record.id, digest).await? else {
            return Ok(None);
        };
        let limits = self.limits.clone();
        let report = tokio::task::spawn_blocking(move || {
            open_content(&local.path, &limits)
                .map(|p| inspect_package(p, &InspectOptions::default()))
        })
        .await
        .map_err(|e| unreadable(format!("reading it was interrupted: {e}")))?
        .map_err(|e| unreadable(e.to_string()))?;
        let (Some(Descriptor::Vnfd(vnfd)), Some(package)) = (report.descriptor, report.package)
        else {
            return Ok(None);
        };
        let onboarded = OnboardedVnfd {
            vnfd: Arc::new(*vnfd),
            files: super::package_files(package),
        };
        self.cache.insert_onboarded(onboarded.clone());
        tracing::debug!(vnfd_id, package = %record.id, "VNFD read from the store");
        Ok(Some(onboarded))
    }
}

#[async_trait]
impl PackageCatalog for StoreCatalog {
    async fn vnfd(&self, vnfd_id: &str) -> Result<Option<OnboardedVnfd>, LcmError> {
        self.load(vnfd_id).await.map_err(|e| match e {
            EmbedError::PackageStore(source) => LcmError::Store(vnfm_lcm::Cause::new(source)),
            other => LcmError::inconsistent(other.to_string()),
        })
    }
}

/// Opens the package at `path` (a local copy), reading entries on demand.
pub fn open_content(
    path: &std::path::Path,
    limits: &Limits,
) -> Result<Package, vnfm_csar::CsarError> {
    let file = std::fs::File::open(path).map_err(|source| vnfm_csar::CsarError::Io {
        path: "the package content".into(),
        source,
    })?;
    Package::from_zip_file(file, "the package content", limits)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use vnfm_store::PackageRecord;
    use vnfm_store::prelude::*;

    use super::*;

    /// The `descriptor_id` of `vnfd-samples/hello-vnf`.
    const HELLO_VNFD: &str = "6f0b7e1c-2d55-4c5e-9b3a-4e110a000001";

    fn hello_zip() -> Vec<u8> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("vnfd-samples/hello-vnf");
        vnfm_csar::zip_directory(&dir).expect("zip hello-vnf")
    }

    /// Records package `id` with the hello VNFD in `state`, and its content.
    async fn record(store: &Arc<dyn Store>, id: &str, state: &str) {
        let info = serde_json::json!({
            "id": id, "vnfdId": HELLO_VNFD, "onboardingState": state,
            "operationalState": "ENABLED", "usageState": "NOT_IN_USE",
            "_links": {"self": {"href": "/p"}, "packageContent": {"href": "/p/c"}}
        });
        let record = PackageRecord {
            id: id.into(),
            vnfd_id: Some(HELLO_VNFD.into()),
            info,
            project: None,
        };
        store.create_package(&record).await.unwrap();
        let zip = hello_zip();
        let mut content: &[u8] = &zip;
        store
            .put_package_content_from(id, &mut content)
            .await
            .unwrap();
    }

    async fn catalog(dir: &Path) -> (Arc<dyn Store>, StoreCatalog) {
        let store = vnfm_store_sql::open("sqlite::memory:").await.unwrap();
        let catalog = StoreCatalog::new(
            store.clone(),
            Arc::default(),
            dir.join("packages"),
            Limits::default(),
        );
        (store, catalog)
    }

    #[tokio::test]
    async fn reads_a_package_onboarded_in_the_store_once_and_keeps_it() {
        let dir = tempfile::tempdir().unwrap();
        let (store, catalog) = catalog(dir.path()).await;
        assert!(catalog.vnfd(HELLO_VNFD).await.unwrap().is_none());
        record(&store, "p1", "ONBOARDED").await;

        let found = catalog
            .vnfd(HELLO_VNFD)
            .await
            .unwrap()
            .expect("read from the store");
        assert_eq!(found.vnfd.descriptor_id, HELLO_VNFD);
        assert!(found.files.read("hello.mf").is_ok());
        assert_eq!(catalog.cache().ids(), vec![HELLO_VNFD.to_owned()]);
        let copies: Vec<String> = std::fs::read_dir(dir.path().join("packages"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            copies.len() == 1 && copies[0].starts_with("p1-") && copies[0].ends_with(".zip"),
            "{copies:?}"
        );

        // Answered from the cache: the record and its content are no longer read.
        let (_, version) = store.get_package("p1").await.unwrap().unwrap();
        store.delete_package("p1", version).await.unwrap();
        std::fs::remove_dir_all(dir.path().join("packages")).unwrap();
        let again = catalog.vnfd(HELLO_VNFD).await.unwrap().expect("cached");
        assert!(Arc::ptr_eq(&again.vnfd, &found.vnfd));
    }

    #[tokio::test]
    async fn a_package_still_being_onboarded_has_no_vnfd_yet() {
        let dir = tempfile::tempdir().unwrap();
        let (store, catalog) = catalog(dir.path()).await;
        record(&store, "p1", "PROCESSING").await;
        assert!(catalog.vnfd(HELLO_VNFD).await.unwrap().is_none());
        assert!(catalog.cache().ids().is_empty());
    }
}
