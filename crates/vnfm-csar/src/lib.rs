//! # vnfm-csar: reading ETSI NFV SOL004 packages (CSAR)
//!
//! A VNF package is a zip archive (or, during development, an unpacked directory) holding
//! TOSCA definitions, artifacts, `TOSCA-Metadata/TOSCA.meta`, a manifest with digests, and
//! optionally CMS signatures. This crate opens such packages safely and exposes what the
//! rest of the VNF Manager needs:
//!
//! - [`Package`]: open a zip file, a directory or zip bytes; find the entry definitions
//!   (TOSCA.meta or SOL004 short notation); list and read files on demand;
//! - [`ToscaMeta`] and [`Manifest`]: the parsed metadata, every value with its line number;
//! - [`Package::verify`]: digests (SHA-256/384/512) of every listed artifact and CMS
//!   signatures (`rustls-webpki` on *ring*), reported as [`Diagnostic`](vnfm_descriptor::diag::Diagnostic)s;
//! - [`Limits`]: archive safety. Path traversal, absolute names, symbolic links, duplicate
//!   names, too many entries, oversized files and zip bombs are refused while opening, and
//!   limits are enforced again on the bytes actually decompressed. Nothing is ever written
//!   to disk.
//!
//! Failures that leave nothing to read are [`CsarError`]s; each has a stable code
//! (`csar.zip-bomb`, `csar.missing-entry-definitions`, ...) and converts into a diagnostic
//! with [`CsarError::to_diagnostic`].
//!
//! ## Example
//!
//! ```
//! use std::io::Write;
//! use vnfm_csar::{Limits, Package, VerifyOptions};
//!
//! // A tiny package, built in memory.
//! let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
//! let opts = zip::write::SimpleFileOptions::default();
//! zip.start_file("TOSCA-Metadata/TOSCA.meta", opts)?;
//! zip.write_all(b"TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-by: me\nEntry-Definitions: Definitions/top.yaml\n")?;
//! zip.start_file("Definitions/top.yaml", opts)?;
//! zip.write_all(b"tosca_definitions_version: tosca_simple_yaml_1_3\n")?;
//! let bytes = zip.finish()?.into_inner();
//!
//! let package = Package::from_zip_bytes(bytes, &Limits::default())?;
//! println!("entry definitions: {}", package.entry_definitions());
//! assert_eq!(package.entry_definitions(), "Definitions/top.yaml");
//! assert_eq!(package.files().collect::<Vec<_>>(), ["Definitions/top.yaml", "TOSCA-Metadata/TOSCA.meta"]);
//!
//! // No manifest: verification warns that integrity cannot be checked.
//! let problems = package.verify(&VerifyOptions::default());
//! assert_eq!(problems[0].code, "csar.no-manifest");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod archive;
mod cms;
mod der;
mod digest;
mod error;
mod manifest;
mod meta;
mod pack;
mod package;
mod path;
mod signature;
mod x509;

pub use archive::{Limits, RATIO_CHECK_MIN_BYTES};
pub use digest::DigestAlgorithm;
pub use error::{CsarError, DerProblem};
pub use manifest::{
    CMS_BEGIN, CMS_END, Manifest, ManifestArtifact, ManifestSignature, NonManoArtifactSet,
};
pub use meta::{Field, MetaArtifact, MetaBlock, MetaEntry, MetaOrigin, TOSCA_META_PATH, ToscaMeta};
pub use pack::zip_directory;
pub use package::{Package, is_image_path};
pub use path::{is_external_uri, normalize_path, resolve_relative};
pub use signature::VerifyOptions;
