//! Package content on disk, so that memory does not grow with a package.
//!
//! An upload (`PUT .../package_content`, an `upload_from_uri` fetch, a package fetched from
//! the NFVO) is streamed into a temporary file of the package directory (`packages/` in the
//! data directory; files mode 0600): its SHA-256 is computed and the size limit enforced while
//! it is written, and the file is removed when the upload fails, is refused or the client goes
//! away (the file is deleted when its [`SpooledContent`] or [`SpoolWriter`] is dropped).
//!
//! The store keeps the durable copy of the content (shared by every replica, written in
//! pieces: [`vnfm_store::PackageStore::put_package_content_from`]); the package directory keeps a
//! local copy named after the package and the content's digest, `<id>-<sha256>.zip`, which
//! onboarding, the onboarded package's artifacts and `GET .../package_content` read. A replica
//! without the local copy (another replica took the upload, or the directory was cleared)
//! writes it again from the store ([`super::StoreCatalog::local_content`]).

use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use sha2::{Digest, Sha256};
use tokio::io::{AsyncWriteExt, BufWriter};

use super::EmbedError;

type Result<T> = std::result::Result<T, EmbedError>;

/// Size of the write buffer of a spooled upload.
const WRITE_BUFFER_BYTES: usize = 1 << 20;

/// The package directory: spooled uploads and local copies of package content.
#[derive(Debug, Clone)]
pub struct Spool {
    dir: PathBuf,
    /// A temporary directory the spool owns: removed with its last clone.
    _owned: Option<Arc<tempfile::TempDir>>,
}

fn io_failure(what: &'static str, path: &Path, source: std::io::Error) -> EmbedError {
    EmbedError::PackageFile {
        what,
        path: path.to_owned(),
        source,
    }
}

impl Spool {
    /// The package directory `dir` (created, mode 0700, by [`Spool::prepare`]).
    pub fn new(dir: PathBuf) -> Spool {
        Spool { dir, _owned: None }
    }

    /// A new temporary package directory (mode 0700, under the system's temporary
    /// directory), removed by [`Spool::remove_temporary`] or when the last clone of the spool
    /// is dropped.
    pub fn temporary() -> std::io::Result<Spool> {
        let owned = tempfile::Builder::new()
            .prefix("vnfm-packages-")
            .tempdir()?;
        Ok(Spool {
            dir: owned.path().to_owned(),
            _owned: Some(Arc::new(owned)),
        })
    }

    /// Removes the directory and what it holds if it is a temporary one
    /// ([`Spool::temporary`]); a package directory that was given is kept.
    pub fn remove_temporary(&self) -> std::io::Result<()> {
        match &self._owned {
            Some(_) if self.dir.exists() => std::fs::remove_dir_all(&self.dir),
            _ => Ok(()),
        }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Creates the directory (mode 0700) and removes the temporary files an interrupted
    /// upload left behind.
    pub fn prepare(&self) -> std::io::Result<()> {
        create_private_dir(&self.dir)?;
        for entry in std::fs::read_dir(&self.dir)? {
            let entry = entry?;
            if entry.file_name().to_string_lossy().starts_with(".upload-") {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        Ok(())
    }

    /// A new temporary file for an upload of at most `max` bytes (the directory is created,
    /// mode 0700, when missing).
    pub fn writer(&self, max: u64) -> Result<SpoolWriter> {
        if !self.dir.is_dir() {
            create_private_dir(&self.dir)
                .map_err(|e| io_failure("creating the package directory", &self.dir, e))?;
        }
        // tempfile creates the file with mode 0600, and deletes it when dropped.
        let file = tempfile::Builder::new()
            .prefix(".upload-")
            .suffix(".zip")
            .tempfile_in(&self.dir)
            .map_err(|e| io_failure("creating an upload file in", &self.dir, e))?;
        let handle = file
            .as_file()
            .try_clone()
            .map_err(|e| io_failure("opening", file.path(), e))?;
        Ok(SpoolWriter {
            out: BufWriter::with_capacity(WRITE_BUFFER_BYTES, tokio::fs::File::from_std(handle)),
            file,
            hasher: Sha256::new(),
            len: 0,
            max,
        })
    }

    /// An unnamed temporary file in the directory (removed when closed), for extracting
    /// an artifact before streaming it.
    pub fn scratch(&self) -> Result<std::fs::File> {
        tempfile::tempfile_in(&self.dir)
            .map_err(|e| io_failure("creating a temporary file in", &self.dir, e))
    }

    /// The local copy of package `id`'s content whose SHA-256 is `sha256`.
    pub fn content_path(&self, id: &str, sha256: &str) -> Result<PathBuf> {
        let safe = |s: &str| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        };
        if !safe(id) || !safe(sha256) {
            return Err(EmbedError::PackageFileName {
                id: id.chars().take(80).collect(),
            });
        }
        Ok(self.dir.join(format!("{id}-{sha256}.zip")))
    }

    /// Removes the local copies of package `id`'s content, except `keep` (best effort: a
    /// file left behind is only disk space, and is never read for another content).
    pub fn remove_copies(&self, id: &str, keep: Option<&Path>) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let prefix = format!("{id}-");
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with(&prefix)
                && name.ends_with(".zip")
                && name.len() == prefix.len() + 64 + 4
                && Some(path.as_path()) != keep
                && let Err(e) = std::fs::remove_file(&path)
            {
                tracing::warn!(path = %path.display(), error = %e, "removing an old package copy failed");
            }
        }
    }
}

/// Creates `dir` (and its parents) with mode 0700.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// An upload being written to its temporary file (removed when dropped unfinished).
pub struct SpoolWriter {
    out: BufWriter<tokio::fs::File>,
    file: tempfile::NamedTempFile,
    hasher: Sha256,
    len: u64,
    max: u64,
}

impl SpoolWriter {
    /// Appends `bytes`; 413 when the upload grows beyond its limit.
    pub async fn push(&mut self, bytes: &[u8]) -> Result<()> {
        let len = self.len + bytes.len() as u64;
        if len > self.max {
            return Err(EmbedError::PackageTooLarge { max: self.max });
        }
        self.hasher.update(bytes);
        self.out
            .write_all(bytes)
            .await
            .map_err(|e| io_failure("writing", self.file.path(), e))?;
        self.len = len;
        Ok(())
    }

    /// The bytes written so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing was written yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Flushes the file to disk and returns the content with its size and digest.
    pub async fn finish(mut self) -> Result<SpooledContent> {
        self.out
            .flush()
            .await
            .map_err(|e| io_failure("writing", self.file.path(), e))?;
        self.out
            .get_mut()
            .sync_all()
            .await
            .map_err(|e| io_failure("writing", self.file.path(), e))?;
        Ok(SpooledContent {
            file: self.file,
            len: self.len,
            sha256: hex::encode(self.hasher.finalize()),
        })
    }
}

/// Writing through [`tokio::io::AsyncWrite`] (the store copying content out) hashes and counts
/// the same way as [`SpoolWriter::push`]; beyond the limit a write fails.
impl tokio::io::AsyncWrite for SpoolWriter {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        if this.len + buf.len() as u64 > this.max {
            return Poll::Ready(Err(std::io::Error::other(format!(
                "the package has more than {} bytes",
                this.max
            ))));
        }
        match Pin::new(&mut this.out).poll_write(cx, buf) {
            Poll::Ready(Ok(n)) => {
                this.hasher.update(&buf[..n]);
                this.len += n as u64;
                Poll::Ready(Ok(n))
            }
            other => other,
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.out).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.out).poll_shutdown(cx)
    }
}

/// A complete upload in its temporary file (removed when dropped, unless kept).
#[derive(Debug)]
pub struct SpooledContent {
    file: tempfile::NamedTempFile,
    /// Its size in bytes.
    pub len: u64,
    /// Its SHA-256, lowercase hex.
    pub sha256: String,
}

impl SpooledContent {
    /// Opens the content for reading.
    pub async fn open(&self) -> Result<tokio::fs::File> {
        tokio::fs::File::open(self.file.path())
            .await
            .map_err(|e| io_failure("opening", self.file.path(), e))
    }

    /// Moves the file to `path` (same directory: a rename), replacing what is there.
    pub fn keep(self, path: &Path) -> Result<()> {
        self.file
            .persist(path)
            .map(|_| ())
            .map_err(|e| io_failure("keeping the upload as", path, e.error))
    }
}
