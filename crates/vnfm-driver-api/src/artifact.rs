//! Read access to the files of the VNF package an instance was created from.
//!
//! Drivers read templates (Heat HOT files, Kubernetes manifests, Helm charts) and hook
//! artifacts through [`ArtifactSource`], by package-relative path as the VNFD names them
//! (`Artifact::file`). The core implements it over the stored package; tests use
//! [`crate::memory::MemArtifacts`].

use sha2::{Digest, Sha256};

/// Read-only access to package files by package-relative, `/`-separated path.
pub trait ArtifactSource: Send + Sync {
    /// The bytes of the file at `path`; `NotFound` when the package has no such file.
    fn read(&self, path: &str) -> std::io::Result<Vec<u8>>;

    /// Lowercase hex SHA-256 of the file at `path`.
    fn sha256_hex(&self, path: &str) -> std::io::Result<String> {
        self.read(path).map(|b| hex::encode(Sha256::digest(&b)))
    }

    /// Package-relative paths of every file in the package, when this source can list them;
    /// `None` (the default) when it cannot. Drivers that need the whole package on disk (the
    /// script management driver) copy what it lists.
    fn paths(&self) -> Option<Vec<String>> {
        None
    }
}

/// A package with no files (for operations that read none).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoArtifacts;

impl ArtifactSource for NoArtifacts {
    fn read(&self, path: &str) -> std::io::Result<Vec<u8>> {
        Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("no package files are available (asked for `{path}`)"),
        ))
    }

    fn paths(&self) -> Option<Vec<String>> {
        Some(Vec::new())
    }
}
