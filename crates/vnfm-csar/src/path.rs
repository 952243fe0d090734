//! Package-relative paths: normalization and reference resolution.
//!
//! Every path this crate hands out is *package-relative*: `/`-separated, no leading `/`, no `.`
//! or `..` components, no empty components. This module turns archive entry names and
//! references found inside package files into that form, and refuses anything that would name
//! a file outside the package root (absolute paths, drive letters, `..` escaping the root,
//! backslash separators, NUL bytes). It also recognizes external artifact URIs, which are kept
//! in the model but never resolved against the package.

use crate::error::CsarError;

/// True when `reference` is an external URI (`http://`, `https://`, `ftp://`, `sftp://`,
/// `file://`, ...): a scheme of two or more letters followed by `:`.
///
/// Drive letters (`C:`) have a one-letter "scheme" and are not URIs; they are refused as
/// absolute paths by [`normalize_path`].
pub fn is_external_uri(reference: &str) -> bool {
    let Some((scheme, _)) = reference.split_once(':') else {
        return false;
    };
    scheme.len() >= 2
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// Normalizes a package-relative path: drops `.` and empty components, applies `..`, and
/// refuses paths that are absolute, escape the package root, use `\` separators or a drive
/// letter, or contain NUL or other control characters.
///
/// ```
/// use vnfm_csar::normalize_path;
/// assert_eq!(normalize_path("Definitions/./x/../a.yaml").unwrap(), "Definitions/a.yaml");
/// assert!(normalize_path("../evil").is_err());
/// assert!(normalize_path("/etc/passwd").is_err());
/// ```
pub fn normalize_path(path: &str) -> Result<String, CsarError> {
    check_characters(path)?;
    if path.starts_with('/') || has_drive_letter(path) {
        return Err(CsarError::AbsolutePath {
            path: path.to_string(),
        });
    }
    join_components(Vec::new(), path, path)
}

/// Resolves `reference`, found in the package file `base_file`, to a package-relative path.
///
/// A relative reference is joined to the directory of `base_file` (so `../Files/x.yaml` in
/// `Definitions/a.yaml` is `Files/x.yaml`); a reference starting with `/` is taken from the
/// package root, as TOSCA does for paths inside a CSAR. The result is normalized; references
/// that escape the package root, external URIs and malformed paths are refused.
///
/// ```
/// use vnfm_csar::resolve_relative;
/// assert_eq!(resolve_relative("Definitions/a.yaml", "../Files/x.yaml").unwrap(), "Files/x.yaml");
/// assert_eq!(resolve_relative("Definitions/a.yaml", "b.yaml").unwrap(), "Definitions/b.yaml");
/// assert!(resolve_relative("Definitions/a.yaml", "../../x.yaml").is_err());
/// ```
pub fn resolve_relative(base_file: &str, reference: &str) -> Result<String, CsarError> {
    if is_external_uri(reference) {
        return Err(CsarError::InvalidPath {
            path: reference.to_string(),
            reason: "it is an external URI, not a file of the package".to_string(),
        });
    }
    check_characters(reference)?;
    if has_drive_letter(reference) {
        return Err(CsarError::AbsolutePath {
            path: reference.to_string(),
        });
    }
    if let Some(from_root) = reference.strip_prefix('/') {
        return join_components(Vec::new(), from_root, reference);
    }
    let base = normalize_path(base_file)?;
    let mut stack: Vec<&str> = base.split('/').collect();
    stack.pop(); // the file name itself; references are relative to its directory
    let joined = join_components(stack, reference, reference)?;
    Ok(joined)
}

/// Pushes the components of `path` onto `stack`, applying `.` and `..`.
/// `original` is what error messages show.
fn join_components<'a>(
    mut stack: Vec<&'a str>,
    path: &'a str,
    original: &str,
) -> Result<String, CsarError> {
    for component in path.split('/') {
        match component {
            "" | "." => {}
            ".." => {
                if stack.pop().is_none() {
                    return Err(CsarError::PathTraversal {
                        path: original.to_string(),
                    });
                }
            }
            c => stack.push(c),
        }
    }
    if stack.is_empty() {
        return Err(CsarError::InvalidPath {
            path: original.to_string(),
            reason: "it names the package root, not a file".to_string(),
        });
    }
    Ok(stack.join("/"))
}

fn check_characters(path: &str) -> Result<(), CsarError> {
    if path.is_empty() {
        return Err(CsarError::InvalidPath {
            path: String::new(),
            reason: "the path is empty".to_string(),
        });
    }
    if path.contains('\0') {
        return Err(CsarError::InvalidPath {
            path: path.replace('\0', "\\0"),
            reason: "it contains a NUL byte".to_string(),
        });
    }
    if path.contains('\\') {
        // On Windows `..\x` climbs out of the root; report that as the graver problem.
        if path.split(['/', '\\']).any(|c| c == "..") {
            return Err(CsarError::PathTraversal {
                path: path.to_string(),
            });
        }
        if path.starts_with('\\') || has_drive_letter(path) {
            return Err(CsarError::AbsolutePath {
                path: path.to_string(),
            });
        }
        return Err(CsarError::InvalidPath {
            path: path.to_string(),
            reason: "it uses `\\` as a separator; package paths use `/`".to_string(),
        });
    }
    if path.chars().any(char::is_control) {
        return Err(CsarError::InvalidPath {
            path: path.escape_default().to_string(),
            reason: "it contains control characters".to_string(),
        });
    }
    Ok(())
}

/// `C:`, `c:/x`, `C:x`: a Windows drive prefix.
fn has_drive_letter(path: &str) -> bool {
    let b = path.as_bytes();
    b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':'
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(r: Result<String, CsarError>) -> &'static str {
        match r {
            Ok(p) => panic!("expected an error, got {p}"),
            Err(e) => e.code(),
        }
    }

    #[test]
    fn normalizes_dot_empty_and_inner_dotdot() {
        assert_eq!(normalize_path("a/b.yaml").unwrap(), "a/b.yaml");
        assert_eq!(normalize_path("./a//b/./c.yaml").unwrap(), "a/b/c.yaml");
        assert_eq!(normalize_path("a/x/../b.yaml").unwrap(), "a/b.yaml");
        assert_eq!(normalize_path("a/").unwrap(), "a");
    }

    #[test]
    fn refuses_escapes_and_absolute_paths() {
        assert_eq!(code(normalize_path("../evil")), "csar.path-traversal");
        assert_eq!(code(normalize_path("a/../../evil")), "csar.path-traversal");
        assert_eq!(code(normalize_path("/etc/passwd")), "csar.absolute-path");
        assert_eq!(code(normalize_path("C:/Windows/x")), "csar.absolute-path");
        assert_eq!(code(normalize_path("c:x")), "csar.absolute-path");
        assert_eq!(code(normalize_path("..\\evil")), "csar.path-traversal");
        assert_eq!(
            code(normalize_path("\\\\server\\share")),
            "csar.absolute-path"
        );
        assert_eq!(code(normalize_path("a\\b")), "csar.invalid-path");
        assert_eq!(code(normalize_path("C:\\evil.txt")), "csar.absolute-path");
        assert_eq!(code(normalize_path("a\0b")), "csar.invalid-path");
        assert_eq!(code(normalize_path("a\nb")), "csar.invalid-path");
        assert_eq!(code(normalize_path("")), "csar.invalid-path");
        assert_eq!(code(normalize_path("a/..")), "csar.invalid-path");
    }

    #[test]
    fn resolves_relative_to_the_base_directory() {
        assert_eq!(
            resolve_relative("Definitions/a.yaml", "../Files/x.yaml").unwrap(),
            "Files/x.yaml"
        );
        assert_eq!(
            resolve_relative("Definitions/a.yaml", "./types.yaml").unwrap(),
            "Definitions/types.yaml"
        );
        assert_eq!(
            resolve_relative("top.yaml", "Definitions/b.yaml").unwrap(),
            "Definitions/b.yaml"
        );
        assert_eq!(
            resolve_relative("Definitions/a.yaml", "/Files/x.yaml").unwrap(),
            "Files/x.yaml"
        );
        assert_eq!(
            code(resolve_relative("Definitions/a.yaml", "../../x.yaml")),
            "csar.path-traversal"
        );
        assert_eq!(
            code(resolve_relative("Definitions/a.yaml", "/../x.yaml")),
            "csar.path-traversal"
        );
        assert_eq!(
            code(resolve_relative(
                "Definitions/a.yaml",
                "https://example.com/x.yaml"
            )),
            "csar.invalid-path"
        );
        assert_eq!(
            code(resolve_relative("../a.yaml", "b.yaml")),
            "csar.path-traversal"
        );
    }

    #[test]
    fn recognizes_external_uris() {
        assert!(is_external_uri(
            "http://127.0.0.1:44380/storage-class-url.yaml"
        ));
        assert!(is_external_uri("https://example.com/a"));
        assert!(is_external_uri("ftp://example.com/a"));
        assert!(is_external_uri("sftp://example.com/a"));
        assert!(!is_external_uri("Files/images/cirros.img"));
        assert!(!is_external_uri("C:/x"));
        assert!(!is_external_uri("a/b:c"));
        assert!(!is_external_uri(":x"));
    }
}
