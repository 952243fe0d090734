//! The crate's error type: failures that make a package unreadable.
//!
//! Problems that still leave a readable package (a digest that does not match, a deprecated
//! TOSCA.meta key, an unsigned manifest) are [`Diagnostic`]s instead. Every [`CsarError`] has
//! a stable code (`csar.path-traversal`, `csar.zip-bomb`, ...) and converts into a
//! [`Diagnostic`] with [`CsarError::to_diagnostic`], so a tool can print both kinds uniformly.

use std::io;

use thiserror::Error;
use vnfm_descriptor::diag::{Diagnostic, Location};

/// A failure that makes a package (or one of its files) unreadable.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum CsarError {
    /// The package file or directory could not be read.
    #[error("cannot read `{path}`: {source}")]
    Io {
        /// The file system path or package-relative path involved.
        path: String,
        /// The underlying I/O error.
        #[source]
        source: io::Error,
    },

    /// The package file is empty (zero bytes).
    #[error("the package `{path}` is empty (0 bytes)")]
    EmptyPackage {
        /// The file system path, or `<memory>` for in-memory bytes.
        path: String,
    },

    /// The bytes are not a zip archive.
    #[error("`{path}` is not a zip archive: {reason}")]
    NotAZip {
        /// The file system path, or `<memory>` for in-memory bytes.
        path: String,
        /// What the zip reader reported.
        reason: String,
    },

    /// The bytes start like a zip archive but its central directory is missing or cut off.
    #[error("`{path}` is a truncated zip archive: {reason}")]
    TruncatedZip {
        /// The file system path, or `<memory>` for in-memory bytes.
        path: String,
        /// What the zip reader reported.
        reason: String,
    },

    /// An entry's data could not be decompressed or failed its CRC check.
    #[error("entry `{path}` is corrupt: {reason}")]
    CorruptEntry {
        /// Package-relative path of the entry.
        path: String,
        /// What the zip reader reported.
        reason: String,
    },

    /// An entry is encrypted; packages must not be.
    #[error("entry `{path}` is encrypted")]
    EncryptedEntry {
        /// Package-relative path of the entry.
        path: String,
    },

    /// An entry uses a compression method other than stored or deflate.
    #[error("entry `{path}` uses the unsupported compression method {method}")]
    UnsupportedCompression {
        /// Package-relative path of the entry.
        path: String,
        /// The method, as the zip reader names it.
        method: String,
    },

    /// A path is absolute (leading `/`, `\` or a drive letter).
    #[error("path `{path}` is absolute; package paths must be relative to the package root")]
    AbsolutePath {
        /// The offending path as written.
        path: String,
    },

    /// A path climbs out of the package root with `..`.
    #[error("path `{path}` escapes the package root")]
    PathTraversal {
        /// The offending path as written.
        path: String,
    },

    /// A path is malformed (empty, NUL, control characters, `\` separators, ...).
    #[error("path `{path}` is invalid: {reason}")]
    InvalidPath {
        /// The offending path (control characters escaped).
        path: String,
        /// Why it is refused.
        reason: String,
    },

    /// A path is longer than [`Limits::max_path_len`](crate::Limits::max_path_len).
    #[error("path `{path}` is {len} characters long; the limit is {max}")]
    PathTooLong {
        /// The offending path (possibly shortened for display).
        path: String,
        /// Its length in characters.
        len: usize,
        /// The configured limit.
        max: usize,
    },

    /// A zip entry is a symbolic link, or a link in a directory package points outside the
    /// package or nowhere.
    #[error("`{path}` is a symbolic link{detail}")]
    Symlink {
        /// Package-relative path of the link.
        path: String,
        /// Where it points, when that explains the refusal (starts with a space or is empty).
        detail: String,
    },

    /// The zip's central directory lists one name more than once (the zip reader keeps one
    /// entry per name and does not say which name repeats).
    #[error(
        "an entry name appears more than once in the archive's central directory ({distinct} distinct names); rebuild the archive so that every name is unique"
    )]
    DuplicateNames {
        /// Distinct names in the central directory.
        distinct: usize,
    },

    /// Two entries have the same name, possibly only after normalization, or a name is both
    /// a file and a directory.
    #[error("duplicate entry `{path}`: {detail}")]
    DuplicateEntry {
        /// The normalized path that is duplicated.
        path: String,
        /// How the duplicates are spelled.
        detail: String,
    },

    /// The package has more entries than [`Limits::max_entries`](crate::Limits::max_entries).
    #[error("the package has {count} entries; the limit is {max}")]
    TooManyEntries {
        /// Number of entries seen (a lower bound when counting stopped early).
        count: u64,
        /// The configured limit.
        max: usize,
    },

    /// A file, or the package as a whole, is larger than the configured limits.
    #[error("{what} is {size} bytes uncompressed; the limit is {max}")]
    TooLarge {
        /// What is too large, e.g. "entry `Files/x.img`" or "the package".
        what: String,
        /// Package-relative path of the file, if the limit is per file.
        path: Option<String>,
        /// Size seen (declared or actually read).
        size: u64,
        /// The configured limit.
        max: u64,
    },

    /// An entry expands far more than real data does, or entries share compressed data.
    #[error("entry `{path}` looks like a zip bomb: {detail}")]
    ZipBomb {
        /// Package-relative path of the entry.
        path: String,
        /// The ratio or overlap that gave it away.
        detail: String,
    },

    /// A file requested from the package is not in it.
    #[error("`{path}` is not a file of the package")]
    FileNotFound {
        /// The package-relative path asked for.
        path: String,
    },

    /// A text file the package structure depends on (TOSCA.meta, manifest) is not UTF-8.
    #[error("`{path}` is not valid UTF-8")]
    NotUtf8 {
        /// Package-relative path of the file.
        path: String,
    },

    /// The package has neither `TOSCA-Metadata/TOSCA.meta` nor a single root YAML file with a
    /// `metadata:` section.
    #[error(
        "the package has no TOSCA-Metadata/TOSCA.meta and no root YAML file with a `metadata:` section{detail}"
    )]
    NoEntryDefinitions {
        /// What was found instead (starts with a space or is empty).
        detail: String,
    },

    /// Without TOSCA.meta, several root YAML files could be the entry definitions.
    #[error("the package has no TOSCA-Metadata/TOSCA.meta and several root YAML files with a `metadata:` section: {}", candidates.join(", "))]
    AmbiguousEntryDefinitions {
        /// The candidate files.
        candidates: Vec<String>,
    },

    /// TOSCA.meta has no `Entry-Definitions` key.
    #[error("`{file}` has no Entry-Definitions key")]
    MissingEntryDefinitions {
        /// Package-relative path of the TOSCA.meta file.
        file: String,
        /// Line of the first block, where the key belongs.
        line: u32,
    },

    /// The `Entry-Definitions` value is not a usable package path.
    #[error("Entry-Definitions `{value}` is not a valid package path: {reason}")]
    InvalidEntryDefinitions {
        /// The value as written.
        value: String,
        /// Why it is refused.
        reason: String,
        /// Package-relative path of the TOSCA.meta file.
        file: String,
        /// Line of the key.
        line: u32,
    },

    /// The file named by `Entry-Definitions` is not in the package.
    #[error("Entry-Definitions names `{path}`, which is not in the package")]
    EntryDefinitionsNotFound {
        /// The normalized path named.
        path: String,
        /// Package-relative path of the TOSCA.meta file.
        file: String,
        /// Line of the key.
        line: u32,
    },

    /// A DER (or BER) element of a signature or certificate is not well-formed.
    #[error("{what}: {problem} at byte {offset}")]
    Der {
        /// The element being read (`SignerInfo`, `validity`, ...).
        what: &'static str,
        /// What is wrong with its encoding.
        problem: DerProblem,
        /// Offset of the element in the structure being read.
        offset: usize,
    },

    /// A DER element of a signature or certificate is not of the type its place requires.
    #[error("{what}: expected tag 0x{expected:02x}, found 0x{found:02x}")]
    DerTag {
        /// The element being read.
        what: &'static str,
        /// The tag required there.
        expected: u8,
        /// The tag found.
        found: u8,
    },

    /// A CMS signature is well-formed DER, but not a SOL004 detached `SignedData`.
    #[error("{problem}")]
    Cms {
        /// What is wrong with the structure.
        problem: String,
    },

    /// A signature uses an algorithm or an option that is not accepted.
    #[error("{problem}")]
    UnsupportedSignature {
        /// The algorithm or option, and what to use instead.
        problem: String,
    },

    /// A certificate is well-formed DER, but not a usable X.509 certificate.
    #[error("{problem}")]
    Certificate {
        /// What is wrong with it.
        problem: String,
    },

    /// A PEM file (certificate, trusted root or signature) is malformed.
    #[error("{problem}")]
    Pem {
        /// What is wrong with it.
        problem: &'static str,
    },

    /// A PEM block's body is not base64.
    #[error("bad base64 in a PEM block: {source}")]
    PemBase64 {
        /// The decoder's error.
        #[source]
        source: base64::DecodeError,
    },

    /// A trusted root certificate cannot be used as a trust anchor.
    #[error(
        "a trusted root cannot be read: {}",
        crate::signature::describe(source)
    )]
    TrustedRoot {
        /// The certificate library's error.
        #[source]
        source: webpki::Error,
    },

    /// The certificate library refused a signer's certificate, its chain or its signature.
    #[error("{}", crate::signature::describe(source))]
    CertificateCheck {
        /// The certificate library's error.
        #[source]
        source: webpki::Error,
    },

    /// A signature does not match its content or its signer's key, or the signer's
    /// certificate is not valid or not issued by a trusted root.
    #[error("{problem}")]
    SignatureCheck {
        /// What did not hold.
        problem: String,
    },
}

/// What is wrong with the encoding of a DER element ([`CsarError::Der`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DerProblem {
    /// The data ends inside the element.
    Truncated,
    /// A tag number too high for one byte.
    MultiByteTag,
    /// An indefinite length on a value that is not constructed.
    IndefinitePrimitive,
    /// Indefinite-length values nested too deeply.
    TooDeep,
    /// A length of more than four bytes.
    LengthTooLarge,
}

impl std::fmt::Display for DerProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DerProblem::Truncated => "truncated encoding",
            DerProblem::MultiByteTag => "multi-byte tags are not used in CMS",
            DerProblem::IndefinitePrimitive => "indefinite length on a primitive value",
            DerProblem::TooDeep => "nesting too deep",
            DerProblem::LengthTooLarge => "length too large",
        })
    }
}

impl CsarError {
    /// The stable, machine-readable code of this error, e.g. `csar.zip-bomb`.
    pub fn code(&self) -> &'static str {
        match self {
            CsarError::Io { .. } => "csar.io",
            CsarError::EmptyPackage { .. } => "csar.empty-package",
            CsarError::NotAZip { .. } => "csar.not-a-zip",
            CsarError::TruncatedZip { .. } => "csar.truncated-zip",
            CsarError::CorruptEntry { .. } => "csar.corrupt-entry",
            CsarError::EncryptedEntry { .. } => "csar.encrypted-entry",
            CsarError::UnsupportedCompression { .. } => "csar.unsupported-compression",
            CsarError::AbsolutePath { .. } => "csar.absolute-path",
            CsarError::PathTraversal { .. } => "csar.path-traversal",
            CsarError::InvalidPath { .. } => "csar.invalid-path",
            CsarError::PathTooLong { .. } => "csar.path-too-long",
            CsarError::Symlink { .. } => "csar.symlink",
            CsarError::DuplicateEntry { .. } | CsarError::DuplicateNames { .. } => {
                "csar.duplicate-entry"
            }
            CsarError::TooManyEntries { .. } => "csar.too-many-entries",
            CsarError::TooLarge { .. } => "csar.too-large",
            CsarError::ZipBomb { .. } => "csar.zip-bomb",
            CsarError::FileNotFound { .. } => "csar.file-not-found",
            CsarError::NotUtf8 { .. } => "csar.not-utf8",
            CsarError::NoEntryDefinitions { .. } => "csar.no-entry-definitions",
            CsarError::AmbiguousEntryDefinitions { .. } => "csar.ambiguous-entry-definitions",
            CsarError::MissingEntryDefinitions { .. } => "csar.missing-entry-definitions",
            CsarError::InvalidEntryDefinitions { .. } => "csar.invalid-entry-definitions",
            CsarError::EntryDefinitionsNotFound { .. } => "csar.entry-definitions-not-found",
            CsarError::Der { .. }
            | CsarError::DerTag { .. }
            | CsarError::Cms { .. }
            | CsarError::SignatureCheck { .. } => "csar.bad-signature",
            CsarError::UnsupportedSignature { .. } => "csar.unsupported-signature",
            CsarError::Certificate { .. } | CsarError::Pem { .. } | CsarError::PemBase64 { .. } => {
                "csar.bad-certificate"
            }
            CsarError::TrustedRoot { .. } => "csar.bad-trust-anchor",
            CsarError::CertificateCheck { .. } => "csar.untrusted-signer",
        }
    }

    /// This error as an error-severity [`Diagnostic`] with the same code, located where
    /// possible.
    pub fn to_diagnostic(&self) -> Diagnostic {
        let diag = Diagnostic::error(self.code(), self.to_string());
        let location = match self {
            CsarError::MissingEntryDefinitions { file, line }
            | CsarError::InvalidEntryDefinitions { file, line, .. }
            | CsarError::EntryDefinitionsNotFound { file, line, .. } => {
                Some(Location::new(file.clone(), *line, 0))
            }
            CsarError::CorruptEntry { path, .. }
            | CsarError::EncryptedEntry { path }
            | CsarError::UnsupportedCompression { path, .. }
            | CsarError::Symlink { path, .. }
            | CsarError::ZipBomb { path, .. }
            | CsarError::NotUtf8 { path } => Some(Location::file(path.clone())),
            CsarError::TooLarge { path: Some(p), .. } => Some(Location::file(p.clone())),
            _ => None,
        };
        let diag = match location {
            Some(loc) => diag.at(loc),
            None => diag,
        };
        match self.help() {
            Some(help) => diag.with_help(help),
            None => diag,
        }
    }

    fn help(&self) -> Option<&'static str> {
        Some(match self {
            CsarError::MissingEntryDefinitions { .. } => {
                "add `Entry-Definitions: <path of the main TOSCA file>` to the first block of TOSCA.meta"
            }
            CsarError::EntryDefinitionsNotFound { .. } => {
                "check the path: it is relative to the package root and case-sensitive"
            }
            CsarError::NoEntryDefinitions { .. } => {
                "add TOSCA-Metadata/TOSCA.meta with an Entry-Definitions key, or put exactly one YAML file with a `metadata:` section at the package root"
            }
            CsarError::TooLarge { .. } | CsarError::TooManyEntries { .. } => {
                "if the package is legitimate, raise the limit in `Limits`"
            }
            CsarError::ZipBomb { .. } => {
                "real package content does not compress this well; if it is legitimate, raise `Limits::max_compression_ratio`"
            }
            _ => return None,
        })
    }
}
