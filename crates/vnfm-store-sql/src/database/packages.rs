//! Packages: their records and their content, stored in pieces of [`CONTENT_CHUNK_BYTES`] and
//! streamed in and out with constant memory ([`PackageStore`] on the statements of
//! `crate::sql::packages`).

use async_trait::async_trait;
use tokio::io::{AsyncRead, AsyncSeekExt, AsyncWrite, AsyncWriteExt};
use vnfm_store::prelude::*;
use vnfm_store::{CONTENT_CHUNK_BYTES, Result};
use vnfm_store::{
    NewOutboxRow, PackageRecord, Page, PendingKey, ProjectScope, StoreError, Version,
};

use super::{Database, SqlStore};
use crate::sql::packages::ByColumn;
use crate::sql::{outbox, packages};

#[async_trait]
impl<D: Database> PackageStore for SqlStore<D> {
    async fn create_package_keyed(
        &self,
        package: &PackageRecord,
        key: Option<&PendingKey>,
    ) -> Result<Version> {
        let id = package.id.clone();
        let package = package.clone();
        self.write_creating(key, &id, move |tx| {
            Box::pin(async move { packages::create(tx, &package).await })
        })
        .await
    }

    async fn get_package(&self, id: &str) -> Result<Option<(PackageRecord, Version)>> {
        on_reader!(self, |c| packages::get_by(c, ByColumn::Id, id).await)
    }

    async fn package_by_vnfd(&self, vnfd_id: &str) -> Result<Option<(PackageRecord, Version)>> {
        on_reader!(self, |c| packages::get_by(c, ByColumn::VnfdId, vnfd_id)
            .await)
    }

    async fn update_package_and_notify(
        &self,
        package: &PackageRecord,
        expected: Version,
        notify: &[NewOutboxRow],
    ) -> Result<Version> {
        let (package, notify) = (package.clone(), outbox::encode(notify)?);
        in_notifying_transaction!(self, notify.len(), |tx| packages::update(
            tx, &package, expected, &notify
        )
        .await)
        .await
    }

    async fn delete_package_and_notify(
        &self,
        id: &str,
        expected: Version,
        notify: &[NewOutboxRow],
    ) -> Result<()> {
        let (id, notify) = (id.to_owned(), outbox::encode(notify)?);
        in_notifying_transaction!(self, notify.len(), |tx| packages::delete(
            tx, &id, expected, &notify
        )
        .await)
        .await
    }

    async fn list_packages(
        &self,
        scope: &ProjectScope,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<PackageRecord>> {
        on_reader!(self, |c| packages::page_of(c, scope, after, limit).await)
    }

    async fn put_package_content(&self, id: &str, content: &[u8]) -> Result<()> {
        let mut reader = content;
        self.put_package_content_from(id, &mut reader)
            .await
            .map(|_| ())
    }

    async fn get_package_content(&self, id: &str) -> Result<Option<Vec<u8>>> {
        let mut out = Vec::new();
        let found = self.copy_package_content_to(id, &mut out).await?;
        Ok(found.then_some(out))
    }

    async fn put_package_content_from(
        &self,
        id: &str,
        content: &mut (dyn AsyncRead + Unpin + Send),
    ) -> Result<u64> {
        let io_err = |source| StoreError::ContentIo {
            id: id.to_owned(),
            source,
        };
        if !on_reader!(self, |c| packages::exists(c, id).await)? {
            return Err(StoreError::NotFound {
                kind: "VNF package",
                id: id.to_owned(),
            });
        }
        // The upload is spooled to a temporary file first, so a slow client never holds the
        // write transaction (which every other write waits for); the file is then stored in
        // one transaction, piece by piece, with constant memory.
        let spool = tempfile::tempfile().map_err(io_err)?;
        let mut spool = tokio::fs::File::from_std(spool);
        let total = tokio::io::copy(content, &mut spool).await.map_err(io_err)?;
        spool.flush().await.map_err(io_err)?;
        spool.rewind().await.map_err(io_err)?;
        let spool = spool.into_std().await;
        let id = id.to_owned();
        in_transaction!(self, |tx| {
            packages::begin_content(tx, &id).await?;
            use std::io::Read;
            let mut spool = spool;
            let mut buf = Vec::with_capacity(CONTENT_CHUNK_BYTES);
            let mut seq: i64 = 0;
            loop {
                buf.clear();
                (&mut spool)
                    .take(CONTENT_CHUNK_BYTES as u64)
                    .read_to_end(&mut buf)
                    .map_err(|source| StoreError::ContentIo {
                        id: id.clone(),
                        source,
                    })?;
                // An empty content is one empty piece, so that it reads back as uploaded.
                if buf.is_empty() && seq > 0 {
                    break;
                }
                packages::put_piece(tx, &id, seq, &buf).await?;
                seq += 1;
                if buf.len() < CONTENT_CHUNK_BYTES {
                    break;
                }
            }
            Ok(total)
        })
        .await
    }

    async fn copy_package_content_to(
        &self,
        id: &str,
        out: &mut (dyn AsyncWrite + Unpin + Send),
    ) -> Result<bool> {
        let io_err = |source| StoreError::ContentIo {
            id: id.to_owned(),
            source,
        };
        if let Some(bytes) = on_reader!(self, |c| packages::legacy_content(c, id).await)? {
            out.write_all(&bytes).await.map_err(io_err)?;
            out.flush().await.map_err(io_err)?;
            return Ok(true);
        }
        // One piece per query, so that at most one piece is held at a time. A concurrent
        // replacement shows as a gap or a shorter tail: the content is only replaced before a
        // package is onboarded, when nobody reads it.
        let mut seq: i64 = 0;
        while let Some(bytes) = on_reader!(self, |c| packages::piece(c, id, seq).await)? {
            out.write_all(&bytes).await.map_err(io_err)?;
            seq += 1;
        }
        out.flush().await.map_err(io_err)?;
        Ok(seq > 0)
    }
}
