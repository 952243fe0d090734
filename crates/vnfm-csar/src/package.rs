//! [`Package`]: an opened CSAR, its metadata, and the integrity checks over it.
//!
//! Opening finds the package metadata (TOSCA.meta, or SOL004 short notation without it),
//! resolves the entry definitions, parses the manifest, and records what is off as
//! diagnostics; only problems that leave nothing usable are errors. [`Package::verify`] then
//! checks every digest listed in the manifest and TOSCA.meta against the bytes, and every
//! CMS signature against the package's certificate and, when given, trusted roots.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fs::{self, File};
use std::io::{BufReader, Write};
use std::path::Path;

use vnfm_descriptor::diag::{Diagnostic, Location};

use crate::archive::{Archive, Limits};
use crate::digest::{DigestAlgorithm, is_well_formed};
use crate::error::CsarError;
use crate::manifest::{CMS_BEGIN, Manifest, ManifestSignature};
use crate::meta::{Field, MetaOrigin, TOSCA_META_PATH, ToscaMeta};
use crate::path::{is_external_uri, normalize_path};
use crate::signature::{
    Certificate, SigFailure, Trust, VerifyOptions, canonical_text, parse_certificates,
    verify_detached,
};

/// An opened SOL004 package (CSAR): a zip archive or an unpacked directory.
///
/// Files are read on demand; nothing is extracted or written to disk.
pub struct Package {
    archive: Archive,
    meta: ToscaMeta,
    entry_definitions: String,
    manifest: Option<Manifest>,
    certificate: Option<String>,
    diagnostics: Vec<Diagnostic>,
}

impl std::fmt::Debug for Package {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Package")
            .field("entry_definitions", &self.entry_definitions)
            .field("manifest", &self.manifest.as_ref().map(|m| &m.file))
            .field("files", &self.archive.files().count())
            .finish_non_exhaustive()
    }
}

impl Package {
    /// Opens a zip file or an unpacked package directory with the default [`Limits`].
    pub fn open(path: &Path) -> Result<Package, CsarError> {
        Package::open_with(path, &Limits::default())
    }

    /// Opens a zip file or an unpacked package directory with the given limits.
    pub fn open_with(path: &Path, limits: &Limits) -> Result<Package, CsarError> {
        let meta = fs::metadata(path).map_err(|source| CsarError::Io {
            path: path.display().to_string(),
            source,
        })?;
        let mut diags = Vec::new();
        let archive = if meta.is_dir() {
            Archive::open_dir(path, limits, &mut diags)?
        } else {
            Archive::open_zip_file(path, limits, &mut diags)?
        };
        Package::from_archive(archive, diags)
    }

    /// Opens a zip archive from an open file whose entries are read on demand: nothing is
    /// read into memory whole, so memory does not grow with the package (for example an
    /// HTTP upload streamed to disk). `label` names the archive in errors instead of the
    /// file's path (which may be a server's private directory).
    pub fn from_zip_file(file: File, label: &str, limits: &Limits) -> Result<Package, CsarError> {
        let len = file
            .metadata()
            .map_err(|source| CsarError::Io {
                path: label.to_string(),
                source,
            })?
            .len();
        let mut diags = Vec::new();
        let reader = Box::new(BufReader::with_capacity(64 * 1024, file));
        let archive = Archive::open_zip(reader, len, label, limits, &mut diags)?;
        Package::from_archive(archive, diags)
    }

    /// Opens a zip archive held in memory (for example an HTTP upload).
    pub fn from_zip_bytes(bytes: Vec<u8>, limits: &Limits) -> Result<Package, CsarError> {
        let mut diags = Vec::new();
        let archive = Archive::open_zip_bytes(bytes, limits, &mut diags)?;
        Package::from_archive(archive, diags)
    }

    /// The package metadata (from TOSCA.meta, or derived for short notation).
    pub fn meta(&self) -> &ToscaMeta {
        &self.meta
    }

    /// Package-relative path of the main TOSCA definitions file.
    pub fn entry_definitions(&self) -> &str {
        &self.entry_definitions
    }

    /// The parsed manifest, when the package has one.
    pub fn manifest(&self) -> Option<&Manifest> {
        self.manifest.as_ref()
    }

    /// Every regular file, package-relative, `/`-separated, sorted.
    pub fn files(&self) -> impl Iterator<Item = &str> {
        self.archive.files()
    }

    /// True when `path` (normalized first, so `./a//b` works) is a file of the package.
    pub fn contains(&self, path: &str) -> bool {
        normalize_path(path).is_ok_and(|p| self.archive.contains(&p))
    }

    /// Reads a whole file; the limits apply to the bytes actually decompressed.
    pub fn read(&self, path: &str) -> Result<Vec<u8>, CsarError> {
        self.archive.read(&normalize_path(path)?)
    }

    /// Copies a file to `out` by streaming, so memory does not grow with the file (the limits
    /// apply to the bytes actually decompressed); returns the number of bytes copied.
    pub fn copy_to(&self, path: &str, out: &mut dyn Write) -> Result<u64, CsarError> {
        self.archive
            .with_reader(&normalize_path(path)?, |r| std::io::copy(r, out))
    }

    /// The SHA-256 of a file as lowercase hex, computed by streaming.
    pub fn sha256_hex(&self, path: &str) -> Result<String, CsarError> {
        self.archive.with_reader(&normalize_path(path)?, |r| {
            DigestAlgorithm::Sha256.digest_hex(r)
        })
    }

    /// Problems found while opening: deprecated keys, missing versions, manifest syntax,
    /// files named by TOSCA.meta that are absent, ... These may include errors that did not
    /// prevent reading; check them with [`vnfm_descriptor::diag::has_errors`].
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// Checks digests and signatures; returns what is wrong (empty when all is well).
    ///
    /// - every artifact listed with `Algorithm`/`Hash` in the manifest or TOSCA.meta is hashed
    ///   and compared (`csar.digest-mismatch`); listed files that are absent are
    ///   `csar.missing-artifact`, an error except for images (see [`is_image_path`], a
    ///   warning); external URIs are never fetched;
    /// - files not listed in the manifest are `csar.unlisted-file` (an error when
    ///   `require_signature` is set, since the signature would not cover them);
    /// - the manifest's CMS signature and per-artifact `Signature:` files are verified
    ///   (`csar.bad-signature`); without trusted roots a valid signature still yields a
    ///   `csar.signature-untrusted` warning; with roots, a signer outside them is
    ///   `csar.untrusted-signer`.
    pub fn verify(&self, opts: &VerifyOptions) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        let trust = match Trust::from_pem_roots(&opts.trusted_roots_pem) {
            Ok(t) => t,
            Err(e) => {
                out.push(Diagnostic::error(
                    "csar.bad-trust-anchor",
                    format!("a trusted root certificate cannot be read: {e}"),
                ));
                return out;
            }
        };
        self.verify_digests(&mut out);
        self.check_unlisted(opts, &mut out);
        self.verify_signatures(opts, &trust, &mut out);
        out
    }

    fn from_archive(
        archive: Archive,
        mut diagnostics: Vec<Diagnostic>,
    ) -> Result<Package, CsarError> {
        let (meta, entry_definitions, manifest_path, certificate) =
            if archive.contains(TOSCA_META_PATH) {
                read_tosca_meta(&archive, &mut diagnostics)?
            } else {
                short_notation(&archive)?
            };
        let manifest = match manifest_path {
            Some(path) => {
                let text = archive.read_text(&path)?;
                let (manifest, diags) = Manifest::parse(&path, &text);
                diagnostics.extend(diags);
                Some(manifest)
            }
            None => None,
        };
        Ok(Package {
            archive,
            meta,
            entry_definitions,
            manifest,
            certificate,
            diagnostics,
        })
    }

    /// Every place a file is declared with (optionally) a digest, manifest first.
    fn declarations(&self) -> Vec<Declaration<'_>> {
        let mut decls = Vec::new();
        if let Some(m) = &self.manifest {
            for a in &m.artifacts {
                decls.push(Declaration {
                    file: &m.file,
                    path: &a.source,
                    algorithm: a.algorithm.as_ref(),
                    hash: a.hash.as_ref(),
                    digest_expected: true,
                });
            }
            for set in m.non_mano_artifact_sets.values() {
                for source in &set.sources {
                    decls.push(Declaration {
                        file: &m.file,
                        path: source,
                        algorithm: None,
                        hash: None,
                        digest_expected: false,
                    });
                }
            }
        }
        for a in &self.meta.artifacts {
            decls.push(Declaration {
                file: &self.meta.file,
                path: &a.name,
                algorithm: a.algorithm.as_ref(),
                hash: a.hash.as_ref(),
                digest_expected: false,
            });
        }
        decls
    }

    fn verify_digests(&self, out: &mut Vec<Diagnostic>) {
        let mut missing_reported: HashSet<String> = HashSet::new();
        let mut computed: HashMap<(String, DigestAlgorithm), Result<String, CsarError>> =
            HashMap::new();
        for d in self.declarations() {
            if is_external_uri(&d.path.value) {
                continue;
            }
            let at = |line: u32| Location::new(d.file, line, 0);
            let path = match normalize_path(&d.path.value) {
                Ok(p) => p,
                Err(e) => {
                    out.push(e.to_diagnostic().at(at(d.path.line)));
                    continue;
                }
            };
            if !self.archive.contains(&path) {
                if missing_reported.insert(path.clone()) {
                    out.push(missing_artifact(&path, d.file, d.path.line));
                }
                continue;
            }
            let (algorithm, hash) = match (d.algorithm, d.hash) {
                (Some(a), Some(h)) => (a, h),
                (None, Some(h)) => {
                    out.push(
                        Diagnostic::error(
                            "csar.missing-algorithm",
                            format!("the digest of `{path}` has no Algorithm"),
                        )
                        .at(at(h.line)),
                    );
                    continue;
                }
                (_, None) => {
                    if d.digest_expected {
                        out.push(
                            Diagnostic::warning(
                                "csar.missing-digest",
                                format!("`{path}` is listed without Algorithm and Hash; its integrity is not protected"),
                            )
                            .at(at(d.path.line)),
                        );
                    }
                    continue;
                }
            };
            let Some(alg) = DigestAlgorithm::parse(&algorithm.value) else {
                out.push(
                    Diagnostic::error(
                        "csar.unknown-algorithm",
                        format!(
                            "digest algorithm `{}` of `{path}` is not SHA-256, SHA-384 or SHA-512",
                            algorithm.value
                        ),
                    )
                    .at(at(algorithm.line)),
                );
                continue;
            };
            if !is_well_formed(alg, &hash.value) {
                out.push(
                    Diagnostic::error(
                        "csar.invalid-digest",
                        format!(
                            "the {alg} digest of `{path}` should be {} hex digits, found `{}`",
                            alg.hex_len(),
                            hash.value
                        ),
                    )
                    .at(at(hash.line)),
                );
                continue;
            }
            let actual = computed
                .entry((path.clone(), alg))
                .or_insert_with(|| self.archive.with_reader(&path, |r| alg.digest_hex(r)));
            match actual {
                Err(e) => out.push(e.to_diagnostic()),
                Ok(actual) if !actual.eq_ignore_ascii_case(hash.value.trim()) => out.push(
                    Diagnostic::error(
                        "csar.digest-mismatch",
                        format!(
                            "{alg} digest mismatch for `{path}`: `{}:{}` declares {}, the file has {actual}",
                            d.file,
                            hash.line,
                            hash.value.trim()
                        ),
                    )
                    .at(at(hash.line))
                    .with_help("the file was changed after the package was built, or the declared digest is wrong"),
                ),
                Ok(_) => {}
            }
        }
    }

    /// Files the manifest does not list are not covered by its digests or signature.
    fn check_unlisted(&self, opts: &VerifyOptions, out: &mut Vec<Diagnostic>) {
        let Some(m) = &self.manifest else {
            out.push(
                Diagnostic::warning(
                    "csar.no-manifest",
                    "the package has no manifest, so the integrity of its files cannot be checked",
                )
                .with_help("SOL004 requires a manifest (ETSI-Entry-Manifest in TOSCA.meta)"),
            );
            return;
        };
        let mut covered: BTreeSet<String> = BTreeSet::new();
        covered.insert(m.file.clone());
        covered.extend(self.certificate.iter().cloned());
        // TOSCA.meta indexes the package as the manifest does, and packages commonly leave it
        // out of the manifest. A required signature must still cover it: it names the entry
        // definitions.
        if !opts.require_signature {
            covered.insert(self.meta.file.clone());
        }
        let listed = m
            .artifacts
            .iter()
            .flat_map(|a| {
                [
                    Some(&a.source),
                    a.signature.as_ref(),
                    a.certificate.as_ref(),
                ]
            })
            .flatten()
            .chain(m.non_mano_artifact_sets.values().flat_map(|s| &s.sources));
        for field in listed {
            if let Ok(p) = normalize_path(&field.value) {
                covered.insert(p);
            }
        }
        for file in self.archive.files().filter(|f| !covered.contains(*f)) {
            let message = format!("`{file}` is not listed in the manifest `{}`", m.file);
            let diag = if opts.require_signature {
                Diagnostic::error(
                    "csar.unlisted-file",
                    format!("{message}; the signature does not cover it"),
                )
            } else {
                Diagnostic::warning("csar.unlisted-file", message)
            };
            out.push(diag.at(Location::file(file)));
        }
    }

    fn verify_signatures(&self, opts: &VerifyOptions, trust: &Trust, out: &mut Vec<Diagnostic>) {
        let Some(m) = &self.manifest else {
            if opts.require_signature {
                out.push(Diagnostic::error(
                    "csar.unsigned",
                    "a signed package is required, but the package has no manifest",
                ));
            }
            return;
        };
        let package_certs = match &self.certificate {
            None => Some(Vec::new()),
            Some(path) => self.load_certificates(path, &self.meta.file, 0, out),
        };
        match &m.signature {
            None if opts.require_signature => out.push(
                Diagnostic::error(
                    "csar.unsigned",
                    format!(
                        "a signed package is required, but `{}` has no CMS signature",
                        m.file
                    ),
                )
                .at(Location::file(m.file.clone())),
            ),
            None => {}
            Some(sig) => {
                // Without a readable package certificate the signer cannot be checked; that
                // problem is already reported.
                if let Some(certs) = &package_certs {
                    self.verify_manifest_signature(m, sig, certs, trust, out);
                }
            }
        }
        for a in &m.artifacts {
            let Some(sig_field) = &a.signature else {
                continue;
            };
            let at = Location::new(m.file.clone(), sig_field.line, 0);
            let (Ok(artifact), Ok(sig_path)) = (
                normalize_path(&a.source.value),
                normalize_path(&sig_field.value),
            ) else {
                continue; // an external or malformed source is reported with the digests
            };
            if !self.archive.contains(&artifact) {
                continue; // reported as a missing artifact
            }
            if !self.archive.contains(&sig_path) {
                out.push(
                    Diagnostic::error(
                        "csar.missing-signature",
                        format!(
                            "signature file `{sig_path}` of `{artifact}` is not in the package"
                        ),
                    )
                    .at(at),
                );
                continue;
            }
            let certs = match &a.certificate {
                Some(c) => match normalize_path(&c.value) {
                    Ok(p) => self.load_certificates(&p, &m.file, c.line, out),
                    Err(e) => {
                        out.push(
                            e.to_diagnostic()
                                .at(Location::new(m.file.clone(), c.line, 0)),
                        );
                        None
                    }
                },
                None => package_certs.clone(),
            };
            let Some(certs) = certs else {
                continue;
            };
            let loaded = self
                .archive
                .read_small(&sig_path)
                .and_then(|sig| Ok((sig, self.archive.read(&artifact)?)));
            match loaded {
                Ok((sig, content)) => {
                    let outcome = verify_detached(&sig, &[&content], &certs, trust);
                    report(outcome, &format!("the signature of `{artifact}`"), at, out);
                }
                Err(e) => out.push(e.to_diagnostic()),
            }
        }
    }

    fn verify_manifest_signature(
        &self,
        m: &Manifest,
        sig: &ManifestSignature,
        certs: &[Certificate],
        trust: &Trust,
        out: &mut Vec<Diagnostic>,
    ) {
        let raw = match self.archive.read_small(&m.file) {
            Ok(raw) => raw,
            Err(e) => {
                out.push(e.to_diagnostic());
                return;
            }
        };
        let content = signed_prefix(&raw);
        let trimmed = trim_line_ends(content);
        // `openssl cms -sign` without `-binary` signs the text with CRLF line ends.
        let (crlf, crlf_trimmed) = (canonical_text(content), canonical_text(trimmed));
        let candidates = [content, trimmed, &crlf, &crlf_trimmed];
        let outcome = verify_detached(sig.pem.as_bytes(), &candidates, certs, trust);
        let at = Location::new(m.file.clone(), sig.line, 0);
        report(outcome, "the manifest signature", at, out);
    }

    /// Loads the certificates in `path`; reports and returns `None` when that fails.
    fn load_certificates(
        &self,
        path: &str,
        declared_in: &str,
        line: u32,
        out: &mut Vec<Diagnostic>,
    ) -> Option<Vec<Certificate>> {
        let at = Location::new(declared_in, line, 0);
        if !self.archive.contains(path) {
            out.push(
                Diagnostic::error(
                    "csar.missing-certificate",
                    format!("certificate `{path}` is not in the package"),
                )
                .at(at),
            );
            return None;
        }
        match self
            .archive
            .read_small(path)
            .map(|b| parse_certificates(&b))
        {
            Ok(Ok(certs)) => Some(certs),
            Ok(Err(e)) => {
                out.push(
                    Diagnostic::error(
                        "csar.bad-certificate",
                        format!("certificate `{path}` cannot be read: {e}"),
                    )
                    .at(Location::file(path)),
                );
                None
            }
            Err(e) => {
                out.push(e.to_diagnostic());
                None
            }
        }
    }
}

struct Declaration<'a> {
    file: &'a str,
    path: &'a Field,
    algorithm: Option<&'a Field>,
    hash: Option<&'a Field>,
    /// True for manifest `Source:` blocks, where SOL004 requires a digest.
    digest_expected: bool,
}

/// File extensions of VM images, as OpenStack Tacker tells them (`IMAGE_FORMAT_LIST` of its
/// CSAR reader, which skips these entries when checking the manifest).
const IMAGE_EXTENSIONS: [&str; 12] = [
    "raw", "vhd", "vhdx", "vmdk", "vdi", "iso", "ploop", "qcow2", "aki", "ari", "ami", "img",
];

/// Whether `path` names a VM image by its extension, in any case: `raw`, `vhd`, `vhdx`,
/// `vmdk`, `vdi`, `iso`, `ploop`, `qcow2`, `aki`, `ari`, `ami` or `img` (Tacker's list).
///
/// A listed image may be absent from the package: the image can already be on the VIM
/// (a BaseHOT naming it), or be uploaded separately.
pub fn is_image_path(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty() && IMAGE_EXTENSIONS.iter().any(|i| ext.eq_ignore_ascii_case(i))
    })
}

/// `csar.missing-artifact` for `path`, listed at `file:line` but absent from the package: an
/// error (as OpenStack Tacker refuses it), except for an image ([`is_image_path`]), which is
/// a warning (Tacker's own exception).
fn missing_artifact(path: &str, file: &str, line: u32) -> Diagnostic {
    let at = Location::new(file, line, 0);
    if is_image_path(path) {
        Diagnostic::warning(
            "csar.missing-artifact",
            format!("image `{path}` is listed in `{file}` (line {line}) but is not in the package"),
        )
        .at(at)
        .with_help(
            "add the image, or make sure the VIM already has it: operations that upload it will fail",
        )
    } else {
        Diagnostic::error(
            "csar.missing-artifact",
            format!("`{path}` is listed in `{file}` (line {line}) but is not in the package"),
        )
        .at(at)
        .with_help("add the file to the package, or remove its entry from the listing")
    }
}

fn report(outcome: Result<bool, SigFailure>, what: &str, at: Location, out: &mut Vec<Diagnostic>) {
    let diag = match outcome {
        Ok(true) => return,
        Ok(false) => Diagnostic::warning(
            "csar.signature-untrusted",
            format!("{what} matches its content, but was not checked against a trusted root"),
        )
        .with_help("pass the vendor's root certificate in VerifyOptions::trusted_roots_pem"),
        Err(SigFailure::Malformed(e)) => Diagnostic::error(
            "csar.bad-signature",
            format!("{what} is not a valid CMS signature: {e}"),
        ),
        Err(SigFailure::Unsupported(e)) => Diagnostic::error(
            "csar.unsupported-signature",
            format!("{what} cannot be checked: {e}"),
        ),
        Err(SigFailure::Mismatch(e)) => Diagnostic::error(
            "csar.bad-signature",
            format!("{what} does not match the signed content or the package certificate: {e}"),
        )
        .with_help(
            "the signed content was changed after signing, or it was signed with another key",
        ),
        Err(SigFailure::Untrusted(e)) => Diagnostic::error(
            "csar.untrusted-signer",
            format!("{what} is intact, but its signer does not chain to a trusted root: {e}"),
        ),
    };
    out.push(diag.at(at));
}

/// The manifest bytes covered by its signature: everything before the `-----BEGIN CMS-----`
/// line.
fn signed_prefix(raw: &[u8]) -> &[u8] {
    let mut start = 0;
    for line in raw.split_inclusive(|b| *b == b'\n') {
        if line.trim_ascii_start().starts_with(CMS_BEGIN.as_bytes()) {
            return &raw[..start];
        }
        start += line.len();
    }
    raw
}

/// Signers disagree on whether the line break before the signature is signed.
fn trim_line_ends(content: &[u8]) -> &[u8] {
    let end = content
        .iter()
        .rposition(|b| !matches!(b, b'\n' | b'\r'))
        .map_or(0, |i| i + 1);
    &content[..end]
}

type OpenedMeta = (ToscaMeta, String, Option<String>, Option<String>);

/// Reads TOSCA.meta and resolves the files it names.
fn read_tosca_meta(
    archive: &Archive,
    diags: &mut Vec<Diagnostic>,
) -> Result<OpenedMeta, CsarError> {
    let text = archive.read_text(TOSCA_META_PATH)?;
    let (meta, meta_diags) = ToscaMeta::parse(TOSCA_META_PATH, &text);
    diags.extend(meta_diags);
    let Some(entry) = &meta.entry_definitions else {
        return Err(CsarError::MissingEntryDefinitions {
            file: TOSCA_META_PATH.to_string(),
            line: meta.blocks.first().map_or(1, |b| b.line),
        });
    };
    let entry_path =
        normalize_path(&entry.value).map_err(|e| CsarError::InvalidEntryDefinitions {
            value: entry.value.clone(),
            reason: e.to_string(),
            file: TOSCA_META_PATH.to_string(),
            line: entry.line,
        })?;
    if !archive.contains(&entry_path) {
        return Err(CsarError::EntryDefinitionsNotFound {
            path: entry_path,
            file: TOSCA_META_PATH.to_string(),
            line: entry.line,
        });
    }
    let named = |field: &Option<Field>, what: &str, dir_ok: bool, diags: &mut Vec<Diagnostic>| {
        let f = field.as_ref()?;
        match normalize_path(&f.value) {
            Ok(p) if archive.contains(&p) || (dir_ok && archive.contains_dir(&p)) => Some(p),
            Ok(p) => {
                diags.push(
                    Diagnostic::error(
                        "csar.missing-file",
                        format!("{what} `{p}` named in TOSCA.meta is not in the package"),
                    )
                    .at_pos(TOSCA_META_PATH, f.line, 0),
                );
                None
            }
            Err(e) => {
                diags.push(
                    e.to_diagnostic()
                        .at(Location::new(TOSCA_META_PATH, f.line, 0)),
                );
                None
            }
        }
    };
    let mut manifest = named(&meta.etsi_entry_manifest, "the manifest", false, diags);
    let certificate = named(
        &meta.etsi_entry_certificate,
        "the certificate",
        false,
        diags,
    );
    named(&meta.etsi_entry_change_log, "the change log", true, diags);
    named(&meta.etsi_entry_licenses, "the licenses", true, diags);
    for other in &meta.other_definitions {
        named(&Some(other.clone()), "Other-Definitions file", false, diags);
    }
    if meta.etsi_entry_manifest.is_none() {
        let root_mf: Vec<&str> = archive
            .files()
            .filter(|f| !f.contains('/') && f.to_ascii_lowercase().ends_with(".mf"))
            .collect();
        if let [only] = root_mf.as_slice() {
            diags.push(
                Diagnostic::warning(
                    "csar.manifest-not-declared",
                    format!("TOSCA.meta has no ETSI-Entry-Manifest key; using `{only}`, the only manifest at the package root"),
                )
                .at_pos(TOSCA_META_PATH, meta.blocks.first().map_or(1, |b| b.line), 0)
                .with_help(format!("add `ETSI-Entry-Manifest: {only}` to TOSCA.meta")),
            );
            manifest = Some((*only).to_string());
        }
    }
    Ok((meta, entry_path, manifest, certificate))
}

/// SOL004 short notation: no TOSCA.meta; exactly one YAML file at the root, with a
/// `metadata:` section; the manifest and certificate share its base name.
fn short_notation(archive: &Archive) -> Result<OpenedMeta, CsarError> {
    let root_yaml: Vec<&str> = archive
        .files()
        .filter(|f| {
            let lower = f.to_ascii_lowercase();
            !f.contains('/') && (lower.ends_with(".yaml") || lower.ends_with(".yml"))
        })
        .collect();
    let entry = match root_yaml.as_slice() {
        [] => {
            return Err(CsarError::NoEntryDefinitions {
                detail: " (there is no YAML file at the root)".to_string(),
            });
        }
        [only] => *only,
        several => {
            return Err(CsarError::AmbiguousEntryDefinitions {
                candidates: several.iter().map(|s| s.to_string()).collect(),
            });
        }
    };
    let text = archive.read_text(entry)?;
    if !text.lines().any(|l| {
        l.strip_prefix("metadata:")
            .is_some_and(|rest| rest.trim().is_empty() || rest.trim_start().starts_with('#'))
    }) {
        return Err(CsarError::NoEntryDefinitions {
            detail: format!(" (`{entry}` has no top-level `metadata:` section)"),
        });
    }
    let base = entry.rsplit_once('.').map_or(entry, |(b, _)| b);
    let sibling = |ext: &str| {
        let name = format!("{base}.{ext}");
        archive.contains(&name).then_some(name)
    };
    let manifest = sibling("mf");
    let certificate = sibling("cert");
    let mut meta = ToscaMeta::empty(entry, MetaOrigin::ShortNotation);
    meta.entry_definitions = Some(Field::new(entry, 0));
    meta.etsi_entry_manifest = manifest.as_ref().map(|m| Field::new(m.clone(), 0));
    meta.etsi_entry_certificate = certificate.as_ref().map(|c| Field::new(c.clone(), 0));
    Ok((meta, entry.to_string(), manifest, certificate))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signed_prefix_stops_at_the_begin_line() {
        let raw = b"a: 1\r\nb: 2\n\n-----BEGIN CMS-----\nxx\n-----END CMS-----\n";
        assert_eq!(signed_prefix(raw), b"a: 1\r\nb: 2\n\n");
        assert_eq!(trim_line_ends(signed_prefix(raw)), b"a: 1\r\nb: 2");
        assert_eq!(signed_prefix(b"no signature\n"), b"no signature\n");
        assert_eq!(trim_line_ends(b"\n\n"), b"");
    }
}
