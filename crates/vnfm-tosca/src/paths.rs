//! Package-relative path arithmetic for references found in definitions files.
//!
//! A reference (`../Files/x.img`, `types.yaml`, `/Scripts/a.sh`) written in a definitions file is
//! resolved against that file's directory (or the package root for a leading `/`) into a
//! normalized package path: `/`-separated, without `.`, `..` or empty components. References
//! that climb out of the package, or that use backslashes, drive letters or control characters,
//! are refused. External URIs (`https://...`) are recognized so callers can keep them as such.
//! The arithmetic is `vnfm_csar`'s, so package paths mean the same in both crates; this module
//! only sorts its errors into the two cases the TOSCA diagnostics distinguish.

/// Why a reference cannot be resolved inside the package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PathError {
    /// `..` climbs above the package root.
    Escapes,
    /// Malformed (empty, backslashes, drive letter, control characters, names the root).
    Invalid(String),
}

/// True for `scheme:` references with a scheme of two or more characters (`http:`, `file:`).
pub(crate) fn is_external_uri(reference: &str) -> bool {
    vnfm_csar::is_external_uri(reference)
}

/// Resolves `reference`, written in the package file `base_file`, to a package path.
pub(crate) fn resolve_relative(base_file: &str, reference: &str) -> Result<String, PathError> {
    vnfm_csar::resolve_relative(base_file, reference).map_err(|e| match e.code() {
        "csar.path-traversal" => PathError::Escapes,
        _ => PathError::Invalid(e.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_against_the_directory_of_the_base_file() {
        assert_eq!(
            resolve_relative("Definitions/a.yaml", "../Files/x.img").unwrap(),
            "Files/x.img"
        );
        assert_eq!(
            resolve_relative("Definitions/a.yaml", "./b.yaml").unwrap(),
            "Definitions/b.yaml"
        );
        assert_eq!(
            resolve_relative("Definitions/a.yaml", "/Scripts/s.sh").unwrap(),
            "Scripts/s.sh"
        );
        assert_eq!(resolve_relative("top.yaml", "b.yaml").unwrap(), "b.yaml");
    }

    #[test]
    fn refuses_escapes_and_malformed_paths() {
        assert_eq!(
            resolve_relative("Definitions/a.yaml", "../../x.yaml"),
            Err(PathError::Escapes)
        );
        assert_eq!(
            resolve_relative("Definitions/a.yaml", "..\\x.yaml"),
            Err(PathError::Escapes)
        );
        assert!(matches!(
            resolve_relative("a.yaml", "C:/x"),
            Err(PathError::Invalid(_))
        ));
        assert!(matches!(
            resolve_relative("a.yaml", ""),
            Err(PathError::Invalid(_))
        ));
        assert!(resolve_relative("Definitions/a.yaml", "..").is_err());
    }

    #[test]
    fn recognizes_external_uris() {
        assert!(is_external_uri("https://forge.etsi.org/x.yaml"));
        assert!(!is_external_uri("Files/a.yaml"));
        assert!(!is_external_uri("C:/x"));
    }
}
