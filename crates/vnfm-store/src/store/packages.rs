//! VNF packages and their content.

use super::Result;
use crate::idempotency::PendingKey;
use crate::model::{NewOutboxRow, PackageRecord, Page, ProjectScope, Version};
use async_trait::async_trait;
use tokio::io::{AsyncRead, AsyncWrite};

/// VNF packages and their content. Part of [`crate::Store`].
#[async_trait]
pub trait PackageStore: Send + Sync {
    /// Stores a new package at [`crate::Version::FIRST`]. [`crate::Conflict::AlreadyExists`] if the id,
    /// or the `vnfd_id` (kind `VNF package for vnfdId`), is taken.
    async fn create_package(&self, package: &PackageRecord) -> Result<Version> {
        self.create_package_keyed(package, None).await
    }

    /// [`crate::PackageStore::create_package`] that also commits `key`, if given, with the
    /// package's id in the same transaction; [`crate::Conflict::KeyTaken`] (nothing written)
    /// when another request committed the key first.
    async fn create_package_keyed(
        &self,
        package: &PackageRecord,
        key: Option<&PendingKey>,
    ) -> Result<Version>;

    /// The package and its version.
    async fn get_package(&self, id: &str) -> Result<Option<(PackageRecord, Version)>>;

    /// The package whose VNFD has `vnfd_id`.
    async fn package_by_vnfd(&self, vnfd_id: &str) -> Result<Option<(PackageRecord, Version)>>;

    /// Replaces the package record if its version is still `expected`.
    /// [`crate::Conflict::AlreadyExists`] if another package has the same `vnfd_id`.
    async fn update_package(&self, package: &PackageRecord, expected: Version) -> Result<Version> {
        self.update_package_and_notify(package, expected, &[]).await
    }

    /// [`crate::PackageStore::update_package`], enqueueing `notify` (the package management notifications
    /// about the change) in the same transaction: both are written, or neither.
    async fn update_package_and_notify(
        &self,
        package: &PackageRecord,
        expected: Version,
        notify: &[NewOutboxRow],
    ) -> Result<Version>;

    /// Deletes the package and its content if its version is still `expected`.
    async fn delete_package(&self, id: &str, expected: Version) -> Result<()> {
        self.delete_package_and_notify(id, expected, &[]).await
    }

    /// [`crate::PackageStore::delete_package`], enqueueing `notify` in the same transaction.
    async fn delete_package_and_notify(
        &self,
        id: &str,
        expected: Version,
        notify: &[NewOutboxRow],
    ) -> Result<()>;

    /// One page of the packages in `scope`, ordered by id.
    async fn list_packages(
        &self,
        scope: &ProjectScope,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<PackageRecord>>;

    /// Stores (or replaces) the content (zip bytes) of an existing package.
    /// [`crate::StoreError::NotFound`] if the package does not exist.
    async fn put_package_content(&self, id: &str, content: &[u8]) -> Result<()>;

    /// The content of the package, if uploaded, in one buffer. For large packages use
    /// [`crate::PackageStore::copy_package_content_to`], whose memory does not grow with the package.
    async fn get_package_content(&self, id: &str) -> Result<Option<Vec<u8>>>;

    /// Stores (or replaces) the content of an existing package, read from `content` to its
    /// end in pieces of at most [`crate::CONTENT_CHUNK_BYTES`]: memory stays constant whatever the
    /// size. The content is replaced in one transaction (readers see the old or the new
    /// content, never a mix). Returns the number of bytes stored.
    /// [`crate::StoreError::NotFound`] if the package does not exist; [`crate::StoreError::ContentIo`] if
    /// `content` cannot be read.
    async fn put_package_content_from(
        &self,
        id: &str,
        content: &mut (dyn AsyncRead + Unpin + Send),
    ) -> Result<u64>;

    /// Writes the content of the package to `out` piece by piece (constant memory) and
    /// flushes it; `false`, with nothing written, when no content was uploaded.
    /// [`crate::StoreError::ContentIo`] if writing to `out` fails.
    async fn copy_package_content_to(
        &self,
        id: &str,
        out: &mut (dyn AsyncWrite + Unpin + Send),
    ) -> Result<bool>;
}
