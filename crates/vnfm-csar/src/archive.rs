//! Where package bytes come from, and the safety rules applied to them.
//!
//! A package is either a zip archive (a file on disk, kept open, or bytes in memory) or an
//! unpacked directory. This module lists its regular files under normalized package-relative
//! names and opens them on demand. Listing refuses everything an extractor could be tricked
//! with: absolute names, `..` escaping the root, backslash and drive-letter names, NUL bytes,
//! symbolic links (zip entries with a link mode; directory links pointing outside the
//! package), duplicate names (also after normalization; names differing only in case are a
//! warning), too many entries, entries or totals larger than [`Limits`], and compression
//! ratios typical of zip bombs. Reading enforces the same limits on the bytes actually
//! produced by the decompressor, so lying headers gain nothing. Nothing is ever written to
//! disk.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, Cursor, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use vnfm_descriptor::diag::{Diagnostic, Location};
use zip::{CompressionMethod, ZipArchive};

use crate::error::CsarError;
use crate::path::normalize_path;

/// Entries smaller than this are never judged by their compression ratio: small files of
/// zeros or repeated text legitimately compress very well.
pub const RATIO_CHECK_MIN_BYTES: u64 = 1 << 20;

/// Bounds applied while opening and reading a package.
///
/// The defaults suit production use: large VM images pass, zip bombs and path tricks do not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Maximum number of entries (files and directories) in the package.
    pub max_entries: usize,
    /// Maximum sum of the uncompressed sizes of all files.
    pub max_total_uncompressed_bytes: u64,
    /// Maximum uncompressed size of one file.
    pub max_entry_uncompressed_bytes: u64,
    /// Maximum uncompressed/compressed ratio of a zip entry larger than
    /// [`RATIO_CHECK_MIN_BYTES`].
    pub max_compression_ratio: u64,
    /// Maximum length of an entry path, in characters.
    pub max_path_len: usize,
    /// Maximum size of the text files parsed while opening (TOSCA.meta, manifest, signature
    /// and certificate files).
    pub max_meta_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_entries: 10_000,
            max_total_uncompressed_bytes: 64 << 30,
            max_entry_uncompressed_bytes: 32 << 30,
            max_compression_ratio: 200,
            max_path_len: 1024,
            max_meta_bytes: 16 << 20,
        }
    }
}

/// Anything a zip archive can be read from.
pub(crate) trait ReadSeek: Read + Seek + Send {}
impl<T: Read + Seek + Send> ReadSeek for T {}

type Zip = ZipArchive<Box<dyn ReadSeek>>;

/// Largest zip file read into memory whole when opened (see [`Archive::open_zip_file`]).
const READ_WHOLE_MAX: u64 = 4 << 20;

/// One regular file of the package.
#[derive(Debug, Clone)]
struct FileEntry {
    /// Uncompressed size (declared by the zip header, or the size on disk).
    size: u64,
    /// Compressed size (zip only; equal to `size` for directories).
    compressed: u64,
    /// Index in the zip central directory (zip only).
    index: usize,
}

enum Source {
    Zip(Mutex<Zip>),
    /// An unpacked package: its canonical root, and the root opened as a directory (where
    /// that worked) for opening files beneath it in one step.
    Dir(PathBuf, Option<File>),
}

/// A package's files, listed safely and opened on demand.
pub(crate) struct Archive {
    source: Source,
    files: BTreeMap<String, FileEntry>,
    limits: Limits,
}

impl Archive {
    /// Opens a zip archive from `reader`, whose total length is `len`; `label` names it in errors.
    pub(crate) fn open_zip(
        mut reader: Box<dyn ReadSeek>,
        len: u64,
        label: &str,
        limits: &Limits,
        diags: &mut Vec<Diagnostic>,
    ) -> Result<Archive, CsarError> {
        if len == 0 {
            return Err(CsarError::EmptyPackage {
                path: label.to_string(),
            });
        }
        let io_err = |source| CsarError::Io {
            path: label.to_string(),
            source,
        };
        let declared = declared_entry_count(&mut reader, len).map_err(io_err)?;
        if declared > limits.max_entries as u64 {
            return Err(CsarError::TooManyEntries {
                count: declared,
                max: limits.max_entries,
            });
        }
        let starts_like_zip = starts_with_local_header(&mut reader).map_err(io_err)?;
        let mut zip = ZipArchive::new(reader).map_err(|e| {
            let reason = e.to_string();
            if starts_like_zip {
                CsarError::TruncatedZip {
                    path: label.to_string(),
                    reason,
                }
            } else {
                CsarError::NotAZip {
                    path: label.to_string(),
                    reason,
                }
            }
        })?;
        if zip.len() > limits.max_entries {
            return Err(CsarError::TooManyEntries {
                count: zip.len() as u64,
                max: limits.max_entries,
            });
        }
        if zip.has_duplicate_names() {
            return Err(CsarError::DuplicateNames {
                distinct: zip.len(),
            });
        }
        let files = list_zip(&mut zip, len, limits, diags)?;
        Ok(Archive {
            source: Source::Zip(Mutex::new(zip)),
            files,
            limits: limits.clone(),
        })
    }

    /// Opens a zip file on disk. A file of at most [`READ_WHOLE_MAX`] bytes is read into memory
    /// at once (one read instead of a seek and two reads per entry); a larger one stays open and
    /// its entries are read on demand.
    pub(crate) fn open_zip_file(
        path: &Path,
        limits: &Limits,
        diags: &mut Vec<Diagnostic>,
    ) -> Result<Archive, CsarError> {
        let label = path.display().to_string();
        let io_err = |source| CsarError::Io {
            path: label.clone(),
            source,
        };
        let mut file = File::open(path).map_err(io_err)?;
        let len = file.metadata().map_err(io_err)?.len();
        if len <= READ_WHOLE_MAX {
            // Bounded by what was read, not by the size the metadata gave, in case the file
            // changes under us.
            let mut bytes = Vec::with_capacity(len as usize + 1);
            file.by_ref()
                .take(READ_WHOLE_MAX + 1)
                .read_to_end(&mut bytes)
                .map_err(io_err)?;
            if bytes.len() as u64 <= READ_WHOLE_MAX {
                let len = bytes.len() as u64;
                return Archive::open_zip(Box::new(Cursor::new(bytes)), len, &label, limits, diags);
            }
            file.rewind().map_err(io_err)?;
        }
        let len = file.metadata().map_err(io_err)?.len();
        Archive::open_zip(Box::new(file), len, &label, limits, diags)
    }

    /// Opens zip bytes held in memory.
    pub(crate) fn open_zip_bytes(
        bytes: Vec<u8>,
        limits: &Limits,
        diags: &mut Vec<Diagnostic>,
    ) -> Result<Archive, CsarError> {
        let len = bytes.len() as u64;
        Archive::open_zip(Box::new(Cursor::new(bytes)), len, "<memory>", limits, diags)
    }

    /// Opens an unpacked package directory.
    pub(crate) fn open_dir(
        root: &Path,
        limits: &Limits,
        diags: &mut Vec<Diagnostic>,
    ) -> Result<Archive, CsarError> {
        let root = root.canonicalize().map_err(|source| CsarError::Io {
            path: root.display().to_string(),
            source,
        })?;
        // Opened before the listing, so that the files listed and the files read later are
        // looked up beneath the same directory.
        let handle = File::open(&root).ok();
        let files = list_dir(&root, limits, diags)?;
        Ok(Archive {
            source: Source::Dir(root, handle),
            files,
            limits: limits.clone(),
        })
    }

    /// Package-relative paths of all regular files, sorted.
    pub(crate) fn files(&self) -> impl Iterator<Item = &str> {
        self.files.keys().map(String::as_str)
    }

    /// True when `path` (already normalized) is a regular file of the package.
    pub(crate) fn contains(&self, path: &str) -> bool {
        self.files.contains_key(path)
    }

    /// True when some file lives under the directory `dir` (normalized, no trailing `/`).
    pub(crate) fn contains_dir(&self, dir: &str) -> bool {
        let prefix = format!("{dir}/");
        self.files
            .range(prefix.clone()..)
            .next()
            .is_some_and(|(k, _)| k.starts_with(&prefix))
    }

    /// The uncompressed size of `path`, as listed when the package was opened.
    pub(crate) fn size(&self, path: &str) -> Option<u64> {
        self.files.get(path).map(|e| e.size)
    }

    /// Runs `f` on a reader of `path` (normalized) that enforces the limits on the bytes
    /// actually produced.
    pub(crate) fn with_reader<T>(
        &self,
        path: &str,
        f: impl FnOnce(&mut dyn Read) -> io::Result<T>,
    ) -> Result<T, CsarError> {
        let entry = self
            .files
            .get(path)
            .ok_or_else(|| CsarError::FileNotFound {
                path: path.to_string(),
            })?;
        match &self.source {
            Source::Zip(zip) => {
                let mut zip = zip.lock().unwrap_or_else(PoisonError::into_inner);
                let file = zip
                    .by_index(entry.index)
                    .map_err(|e| CsarError::CorruptEntry {
                        path: path.to_string(),
                        reason: e.to_string(),
                    })?;
                let mut guarded =
                    Guarded::new(file, path, entry, Some(entry.compressed), &self.limits);
                let result = f(&mut guarded);
                guarded.finish(result, |reason| CsarError::CorruptEntry {
                    path: path.to_string(),
                    reason,
                })
            }
            Source::Dir(root, handle) => {
                let file = match handle.as_ref().and_then(|dir| open_beneath(dir, path)) {
                    Some(file) => file,
                    None => {
                        let full = checked_dir_path(root, path)?;
                        File::open(&full).map_err(|source| CsarError::Io {
                            path: path.to_string(),
                            source,
                        })?
                    }
                };
                let mut guarded = Guarded::new(file, path, entry, None, &self.limits);
                let result = f(&mut guarded);
                guarded.finish(result, |reason| CsarError::Io {
                    path: path.to_string(),
                    source: io::Error::other(reason),
                })
            }
        }
    }

    /// Reads all of `path` into memory.
    pub(crate) fn read(&self, path: &str) -> Result<Vec<u8>, CsarError> {
        // The size the archive declares sizes the buffer, up to 4 MiB: a hostile header cannot
        // make it allocate more, and a file that turns out larger grows it, up to the limits.
        const PREALLOCATE_MAX: u64 = 4 << 20;
        let declared = self.size(path).unwrap_or(0).min(PREALLOCATE_MAX) as usize;
        self.with_reader(path, |r| {
            let mut buf = Vec::with_capacity(declared);
            r.read_to_end(&mut buf)?;
            Ok(buf)
        })
    }

    /// Reads `path` as a structural file (TOSCA.meta, manifest, signature, certificate),
    /// refusing files above [`Limits::max_meta_bytes`].
    pub(crate) fn read_small(&self, path: &str) -> Result<Vec<u8>, CsarError> {
        let size = self.size(path).ok_or_else(|| CsarError::FileNotFound {
            path: path.to_string(),
        })?;
        let max = self.limits.max_meta_bytes;
        if size > max {
            return Err(CsarError::TooLarge {
                what: format!("`{path}`"),
                path: Some(path.to_string()),
                size,
                max,
            });
        }
        self.read(path)
    }

    /// Reads `path` as UTF-8 text (see [`Archive::read_small`]); a BOM is dropped.
    pub(crate) fn read_text(&self, path: &str) -> Result<String, CsarError> {
        let bytes = self.read_small(path)?;
        let mut text = String::from_utf8(bytes).map_err(|_| CsarError::NotUtf8 {
            path: path.to_string(),
        })?;
        if text.starts_with('\u{feff}') {
            text.drain(..'\u{feff}'.len_utf8());
        }
        Ok(text)
    }
}

/// Lists a zip archive's regular files after checking every entry.
fn list_zip(
    zip: &mut Zip,
    archive_len: u64,
    limits: &Limits,
    diags: &mut Vec<Diagnostic>,
) -> Result<BTreeMap<String, FileEntry>, CsarError> {
    let mut files = BTreeMap::new();
    let mut spelled: BTreeMap<String, String> = BTreeMap::new();
    // (header offset, compressed size, name) of every entry, to find overlapping data.
    let mut extents: Vec<(u64, u64, String)> = Vec::with_capacity(zip.len());
    let mut total: u64 = 0;
    for index in 0..zip.len() {
        let entry = zip.by_index_data(index).map_err(|e| CsarError::NotAZip {
            path: "<archive>".to_string(),
            reason: e.to_string(),
        })?;
        let raw = entry.name_raw();
        if raw.contains(&0) {
            return Err(CsarError::InvalidPath {
                path: String::from_utf8_lossy(raw).replace('\0', "\\0"),
                reason: "it contains a NUL byte".to_string(),
            });
        }
        let name = entry
            .name()
            .map_err(|e| CsarError::InvalidPath {
                path: String::from_utf8_lossy(raw).into_owned(),
                reason: format!("the name cannot be decoded: {e}"),
            })?
            .into_owned();
        check_path_len(&name, limits)?;
        let is_symlink = entry.is_symlink()
            || entry
                .unix_mode()
                .is_some_and(|mode| mode & 0o170_000 == 0o120_000);
        if is_symlink {
            return Err(CsarError::Symlink {
                path: name,
                detail: String::new(),
            });
        }
        let normalized = normalize_path(&name)?;
        extents.push((entry.header_start(), entry.compressed_size(), name.clone()));
        if entry.is_dir() {
            continue;
        }
        if entry.encrypted() {
            return Err(CsarError::EncryptedEntry { path: normalized });
        }
        match entry.compression() {
            CompressionMethod::Stored | CompressionMethod::Deflated => {}
            other => {
                return Err(CsarError::UnsupportedCompression {
                    path: normalized,
                    method: format!("{other:?}"),
                });
            }
        }
        let size = entry.size();
        let compressed = entry.compressed_size();
        check_entry_size(&normalized, size, limits)?;
        total = total.saturating_add(size);
        check_total_size(total, limits)?;
        if size > RATIO_CHECK_MIN_BYTES
            && size
                > compressed
                    .max(1)
                    .saturating_mul(limits.max_compression_ratio)
        {
            return Err(CsarError::ZipBomb {
                path: normalized,
                detail: format!(
                    "{size} bytes declared from {compressed} compressed bytes (ratio {} > {})",
                    size / compressed.max(1),
                    limits.max_compression_ratio
                ),
            });
        }
        add_file(&mut spelled, &normalized, &name)?;
        files.insert(
            normalized,
            FileEntry {
                size,
                compressed,
                index,
            },
        );
    }
    check_overlaps(&mut extents, archive_len)?;
    check_file_dir_conflicts(&files)?;
    warn_case_duplicates(files.keys(), diags);
    Ok(files)
}

/// Records `normalized` (spelled `name` in the archive), refusing a second spelling.
fn add_file(
    spelled: &mut BTreeMap<String, String>,
    normalized: &str,
    name: &str,
) -> Result<(), CsarError> {
    if let Some(first) = spelled.insert(normalized.to_string(), name.to_string()) {
        return Err(CsarError::DuplicateEntry {
            path: normalized.to_string(),
            detail: if first == name {
                format!("`{name}` appears twice")
            } else {
                format!("`{first}` and `{name}` name the same file")
            },
        });
    }
    Ok(())
}

/// Refuses entries whose compressed data would extend into the next entry (or past the end
/// of the archive): overlapping entries let a small archive expand many times over.
fn check_overlaps(extents: &mut [(u64, u64, String)], archive_len: u64) -> Result<(), CsarError> {
    extents.sort_by_key(|(start, _, _)| *start);
    for i in 0..extents.len() {
        let (start, compressed, name) = &extents[i];
        let end = extents.get(i + 1).map_or(archive_len, |(next, _, _)| *next);
        if end <= *start {
            let other = extents.get(i + 1).map_or("", |(_, _, n)| n.as_str());
            return Err(CsarError::ZipBomb {
                path: name.clone(),
                detail: format!("it starts at the same offset as `{other}` (overlapping entries)"),
            });
        }
        if *compressed > end - start {
            return Err(CsarError::ZipBomb {
                path: name.clone(),
                detail: format!(
                    "it declares {compressed} compressed bytes but only {} bytes lie before the next entry (overlapping entries)",
                    end - start
                ),
            });
        }
    }
    Ok(())
}

/// Refuses a name that is both a file and the parent directory of another file.
fn check_file_dir_conflicts(files: &BTreeMap<String, FileEntry>) -> Result<(), CsarError> {
    for path in files.keys() {
        let mut parent = path.as_str();
        while let Some((dir, _)) = parent.rsplit_once('/') {
            if files.contains_key(dir) {
                return Err(CsarError::DuplicateEntry {
                    path: dir.to_string(),
                    detail: format!("it is a file and also the directory of `{path}`"),
                });
            }
            parent = dir;
        }
    }
    Ok(())
}

/// Names that differ only in case collide when extracted on case-insensitive file systems.
fn warn_case_duplicates<'a>(paths: impl Iterator<Item = &'a String>, diags: &mut Vec<Diagnostic>) {
    let mut seen: BTreeMap<String, &str> = BTreeMap::new();
    for path in paths {
        if let Some(first) = seen.insert(path.to_lowercase(), path) {
            diags.push(
                Diagnostic::warning(
                    "csar.case-duplicate",
                    format!("`{first}` and `{path}` differ only in letter case"),
                )
                .at(Location::file(path.clone()))
                .with_help("rename one of them: they collide on case-insensitive file systems"),
            );
        }
    }
}

fn check_path_len(name: &str, limits: &Limits) -> Result<(), CsarError> {
    let len = name.chars().count();
    if len > limits.max_path_len {
        let shown: String = name.chars().take(80).collect();
        return Err(CsarError::PathTooLong {
            path: format!("{shown}..."),
            len,
            max: limits.max_path_len,
        });
    }
    Ok(())
}

fn check_entry_size(path: &str, size: u64, limits: &Limits) -> Result<(), CsarError> {
    if size > limits.max_entry_uncompressed_bytes {
        return Err(CsarError::TooLarge {
            what: format!("entry `{path}`"),
            path: Some(path.to_string()),
            size,
            max: limits.max_entry_uncompressed_bytes,
        });
    }
    Ok(())
}

fn check_total_size(total: u64, limits: &Limits) -> Result<(), CsarError> {
    if total > limits.max_total_uncompressed_bytes {
        return Err(CsarError::TooLarge {
            what: "the package".to_string(),
            path: None,
            size: total,
            max: limits.max_total_uncompressed_bytes,
        });
    }
    Ok(())
}

/// Lists a directory package's regular files, walking without following directory links.
fn list_dir(
    root: &Path,
    limits: &Limits,
    diags: &mut Vec<Diagnostic>,
) -> Result<BTreeMap<String, FileEntry>, CsarError> {
    let mut files = BTreeMap::new();
    let mut count: u64 = 0;
    let mut total: u64 = 0;
    let mut pending: Vec<(PathBuf, String)> = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, prefix)) = pending.pop() {
        let io_err = |source| CsarError::Io {
            path: dir.display().to_string(),
            source,
        };
        for item in fs::read_dir(&dir).map_err(io_err)? {
            let item = item.map_err(io_err)?;
            count += 1;
            if count > limits.max_entries as u64 {
                return Err(CsarError::TooManyEntries {
                    count,
                    max: limits.max_entries,
                });
            }
            let name = item
                .file_name()
                .into_string()
                .map_err(|n| CsarError::InvalidPath {
                    path: format!("{prefix}{}", n.to_string_lossy()),
                    reason: "the name is not valid UTF-8".to_string(),
                })?;
            let rel = format!("{prefix}{name}");
            check_path_len(&rel, limits)?;
            let normalized = normalize_path(&rel)?;
            let full = item.path();
            let meta = fs::symlink_metadata(&full).map_err(|source| CsarError::Io {
                path: rel.clone(),
                source,
            })?;
            let file_type = meta.file_type();
            let size = if file_type.is_dir() {
                pending.push((full, format!("{rel}/")));
                continue;
            } else if file_type.is_file() {
                meta.len()
            } else if file_type.is_symlink() {
                match inside_link_target(root, &full, &rel)? {
                    LinkTarget::File(len) => len,
                    LinkTarget::Dir => {
                        diags.push(
                            Diagnostic::warning(
                                "csar.symlink",
                                format!("`{rel}` links to a directory inside the package; its content is not listed under this name"),
                            )
                            .at(Location::file(normalized)),
                        );
                        continue;
                    }
                }
            } else {
                diags.push(
                    Diagnostic::warning(
                        "csar.special-file",
                        format!(
                            "`{rel}` is not a regular file (device, socket or FIFO) and is ignored"
                        ),
                    )
                    .at(Location::file(normalized)),
                );
                continue;
            };
            check_entry_size(&normalized, size, limits)?;
            total = total.saturating_add(size);
            check_total_size(total, limits)?;
            files.insert(
                normalized,
                FileEntry {
                    size,
                    compressed: size,
                    index: 0,
                },
            );
        }
    }
    warn_case_duplicates(files.keys(), diags);
    Ok(files)
}

enum LinkTarget {
    File(u64),
    Dir,
}

/// Follows the link at `full` and refuses it unless it ends inside `root` (canonical).
fn inside_link_target(root: &Path, full: &Path, rel: &str) -> Result<LinkTarget, CsarError> {
    let target = fs::canonicalize(full).map_err(|_| CsarError::Symlink {
        path: rel.to_string(),
        detail: " that points to nothing".to_string(),
    })?;
    if !target.starts_with(root) {
        return Err(CsarError::Symlink {
            path: rel.to_string(),
            detail: format!(
                " that points outside the package (to `{}`)",
                target.display()
            ),
        });
    }
    let meta = fs::metadata(&target).map_err(|source| CsarError::Io {
        path: rel.to_string(),
        source,
    })?;
    if meta.is_dir() {
        Ok(LinkTarget::Dir)
    } else {
        Ok(LinkTarget::File(meta.len()))
    }
}

/// Opens package file `rel` beneath the package directory `root` in one system call, which
/// the kernel refuses if any step of the path, links included, would leave the directory
/// (`openat2` with `RESOLVE_BENEATH`, Linux 5.6). `None` when it cannot: the kernel lacks the
/// call, a link is absolute or leads outside, the file is missing. The caller then takes the
/// portable path, [`checked_dir_path`], which tells these cases apart for the diagnostic; this
/// one only saves it from asking the kernel about every directory on the way (a
/// canonicalisation costs one `readlink` per path component, root's ancestors included).
#[cfg(target_os = "linux")]
fn open_beneath(root: &File, rel: &str) -> Option<File> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    let fd = rustix::fs::openat2(
        root,
        rel,
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
    )
    .ok()?;
    Some(File::from(fd))
}

#[cfg(not(target_os = "linux"))]
fn open_beneath(_root: &File, _rel: &str) -> Option<File> {
    None
}

/// The on-disk path of package file `rel`, re-checked at read time: a link created after
/// the package was opened must still not lead outside it.
fn checked_dir_path(root: &Path, rel: &str) -> Result<PathBuf, CsarError> {
    let full = root.join(rel);
    let canonical = fs::canonicalize(&full).map_err(|source| CsarError::Io {
        path: rel.to_string(),
        source,
    })?;
    if !canonical.starts_with(root) {
        return Err(CsarError::Symlink {
            path: rel.to_string(),
            detail: format!(
                " that points outside the package (to `{}`)",
                canonical.display()
            ),
        });
    }
    Ok(canonical)
}

/// A reader that stops at the size the entry was listed with, and at the compression ratio
/// limit, counting the bytes actually produced rather than trusting headers.
struct Guarded<'l, R> {
    inner: R,
    path: &'l str,
    produced: u64,
    /// Bytes this entry may produce: its listed size, itself within the entry limit.
    cap: u64,
    compressed: Option<u64>,
    max_ratio: u64,
    violation: Option<CsarError>,
}

impl<'l, R: Read> Guarded<'l, R> {
    fn new(
        inner: R,
        path: &'l str,
        entry: &FileEntry,
        compressed: Option<u64>,
        limits: &Limits,
    ) -> Self {
        Guarded {
            inner,
            path,
            produced: 0,
            cap: entry.size.min(limits.max_entry_uncompressed_bytes),
            compressed,
            max_ratio: limits.max_compression_ratio,
            violation: None,
        }
    }

    /// Turns the closure's result into the caller's: a limit violation wins over the I/O
    /// error it caused; other I/O errors become `other(reason)`.
    fn finish<T>(
        self,
        result: io::Result<T>,
        other: impl FnOnce(String) -> CsarError,
    ) -> Result<T, CsarError> {
        if let Some(v) = self.violation {
            return Err(v);
        }
        result.map_err(|e| other(e.to_string()))
    }
}

impl<R: Read> Read for Guarded<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.violation.is_some() {
            return Err(io::Error::other("package limit exceeded"));
        }
        let n = self.inner.read(buf)?;
        self.produced = self.produced.saturating_add(n as u64);
        if self.produced > self.cap {
            self.violation = Some(match self.compressed {
                Some(_) => CsarError::ZipBomb {
                    path: self.path.to_string(),
                    detail: format!(
                        "it expanded beyond the {} bytes its header declares",
                        self.cap
                    ),
                },
                None => CsarError::TooLarge {
                    what: format!("`{}` (it grew after the package was opened)", self.path),
                    path: Some(self.path.to_string()),
                    size: self.produced,
                    max: self.cap,
                },
            });
        } else if let Some(compressed) = self.compressed
            && self.produced > RATIO_CHECK_MIN_BYTES
            && self.produced > compressed.max(1).saturating_mul(self.max_ratio)
        {
            self.violation = Some(CsarError::ZipBomb {
                path: self.path.to_string(),
                detail: format!(
                    "{compressed} compressed bytes expanded to more than {} bytes (ratio above {})",
                    self.produced, self.max_ratio
                ),
            });
        }
        if self.violation.is_some() {
            return Err(io::Error::other("package limit exceeded"));
        }
        Ok(n)
    }
}

/// True when the data starts with a zip local file header (`PK\x03\x04`).
fn starts_with_local_header(reader: &mut Box<dyn ReadSeek>) -> io::Result<bool> {
    reader.seek(SeekFrom::Start(0))?;
    let mut magic = [0u8; 4];
    let mut got = 0;
    while got < magic.len() {
        match reader.read(&mut magic[got..])? {
            0 => break,
            n => got += n,
        }
    }
    reader.seek(SeekFrom::Start(0))?;
    Ok(got == 4 && magic == *b"PK\x03\x04")
}

/// The largest entry count declared by any end-of-central-directory record near the end of
/// the archive (zip64 included), read before the zip reader allocates for that many entries.
fn declared_entry_count(reader: &mut Box<dyn ReadSeek>, len: u64) -> io::Result<u64> {
    const EOCD_LEN: usize = 22;
    let tail_len = len.min((EOCD_LEN + 0xFFFF + 20) as u64);
    reader.seek(SeekFrom::Start(len - tail_len))?;
    let mut tail = vec![0u8; tail_len as usize];
    reader.read_exact(&mut tail)?;
    let mut max: u64 = 0;
    let mut pos = tail.len().saturating_sub(EOCD_LEN);
    loop {
        if tail[pos..].starts_with(b"PK\x05\x06") && pos + EOCD_LEN <= tail.len() {
            let on_disk = u64::from(u16::from_le_bytes([tail[pos + 8], tail[pos + 9]]));
            let total = u64::from(u16::from_le_bytes([tail[pos + 10], tail[pos + 11]]));
            let mut count = on_disk.max(total);
            if count == 0xFFFF && pos >= 20 && tail[pos - 20..].starts_with(b"PK\x06\x07") {
                let at = pos - 20 + 8;
                let mut off = [0u8; 8];
                off.copy_from_slice(&tail[at..at + 8]);
                if let Some(n) = zip64_entry_count(reader, u64::from_le_bytes(off), len)? {
                    count = count.max(n);
                }
            }
            max = max.max(count);
        }
        if pos == 0 {
            break;
        }
        pos -= 1;
    }
    reader.seek(SeekFrom::Start(0))?;
    Ok(max)
}

fn zip64_entry_count(
    reader: &mut Box<dyn ReadSeek>,
    offset: u64,
    len: u64,
) -> io::Result<Option<u64>> {
    if offset.saturating_add(56) > len {
        return Ok(None);
    }
    reader.seek(SeekFrom::Start(offset))?;
    let mut rec = [0u8; 56];
    reader.read_exact(&mut rec)?;
    if !rec.starts_with(b"PK\x06\x06") {
        return Ok(None);
    }
    let field = |at: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&rec[at..at + 8]);
        u64::from_le_bytes(b)
    };
    Ok(Some(field(24).max(field(32))))
}

#[cfg(test)]
mod tests;
