//! Writing a package directory as a zip archive: what an operator uploads when the package
//! is kept as a directory (`vnfm pkg upload DIR`), and how tests and benchmarks build
//! packages from sample directories.

use std::collections::HashSet;
use std::fs;
use std::io::{self, Cursor, Write};
use std::path::{Path, PathBuf};

use crate::error::CsarError;

/// The zip archive of the package directory `dir`: every regular file below it, in sorted
/// path order (so the same directory always gives the same archive), named by its path
/// relative to `dir` with `/` separators, deflated. Symbolic links are followed; a file that
/// cannot be read, or a link cycle, is [`CsarError::Io`] naming its path.
pub fn zip_directory(dir: &Path) -> Result<Vec<u8>, CsarError> {
    let mut files = Vec::new();
    collect_files(dir, &mut files)?;
    files.sort();
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    let write_error = |e: zip::result::ZipError| io_error(dir, io::Error::other(e));
    for path in files {
        let Ok(relative) = path.strip_prefix(dir) else {
            continue;
        };
        let name = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        let bytes = fs::read(&path).map_err(|e| io_error(&path, e))?;
        zip.start_file(name, options).map_err(write_error)?;
        zip.write_all(&bytes).map_err(|e| io_error(dir, e))?;
    }
    let archive = zip.finish().map_err(write_error)?;
    Ok(archive.into_inner())
}

/// Adds the files below `dir` to `out`, following symbolic links; a directory reached twice
/// (a link cycle) is an error rather than an endless walk.
fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), CsarError> {
    let mut seen = HashSet::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        let real = fs::canonicalize(&current).map_err(|e| io_error(&current, e))?;
        if !seen.insert(real) {
            return Err(io_error(
                &current,
                io::Error::other("a symbolic link leads back to a directory already zipped"),
            ));
        }
        for entry in fs::read_dir(&current).map_err(|e| io_error(&current, e))? {
            let path = entry.map_err(|e| io_error(&current, e))?.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                out.push(path);
            }
        }
    }
    Ok(())
}

fn io_error(path: &Path, source: io::Error) -> CsarError {
    CsarError::Io {
        path: path.display().to_string(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    fn names_and_texts(bytes: Vec<u8>) -> Vec<(String, String)> {
        let mut zip = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
        let names: Vec<String> = zip.file_names().map(|n| n.unwrap().into_owned()).collect();
        names
            .into_iter()
            .map(|name| {
                let mut text = String::new();
                zip.by_name(&name)
                    .unwrap()
                    .read_to_string(&mut text)
                    .unwrap();
                (name, text)
            })
            .collect()
    }

    #[test]
    fn files_are_named_relative_to_the_directory_in_sorted_order() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("TOSCA-Metadata")).unwrap();
        fs::create_dir_all(dir.path().join("Definitions/nested")).unwrap();
        fs::write(dir.path().join("TOSCA-Metadata/TOSCA.meta"), "meta").unwrap();
        fs::write(dir.path().join("Definitions/nested/b.yaml"), "b").unwrap();
        fs::write(dir.path().join("Definitions/a.yaml"), "a").unwrap();
        let bytes = zip_directory(dir.path()).unwrap();
        assert_eq!(
            names_and_texts(bytes.clone()),
            [
                ("Definitions/a.yaml".to_owned(), "a".to_owned()),
                ("Definitions/nested/b.yaml".to_owned(), "b".to_owned()),
                ("TOSCA-Metadata/TOSCA.meta".to_owned(), "meta".to_owned()),
            ]
        );
        assert_eq!(
            zip_directory(dir.path()).unwrap(),
            bytes,
            "the same archive twice"
        );
    }

    #[test]
    fn a_missing_directory_names_its_path() {
        let err = zip_directory(Path::new("/nonexistent/pkg")).unwrap_err();
        assert!(
            matches!(&err, CsarError::Io { path, .. } if path == "/nonexistent/pkg"),
            "{err:?}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn linked_directories_are_followed() {
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("common.yaml"), "c").unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("Shared")).unwrap();
        let bytes = zip_directory(dir.path()).unwrap();
        assert_eq!(
            names_and_texts(bytes),
            [("Shared/common.yaml".to_owned(), "c".to_owned())]
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_link_cycle_is_an_error_not_an_endless_walk() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.yaml"), "a").unwrap();
        std::os::unix::fs::symlink(dir.path(), dir.path().join("loop")).unwrap();
        let err = zip_directory(dir.path()).unwrap_err();
        assert!(
            matches!(&err, CsarError::Io { path, .. } if path.ends_with("loop")),
            "{err:?}"
        );
    }
}
