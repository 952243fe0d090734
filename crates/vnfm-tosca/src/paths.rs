//! Package-relative path arithmetic for references found in definitions files.
//!
//! A reference (`../Files/x.img`, `types.yaml`, `/Scripts/a.sh`) written in a definitions file is
//! resolved against that file's directory (or the package root for a leading `/`) into a
//! normalized package path: `/`-separated, without `.`, `..` or empty components. References
//! that climb out of the package, or that use backslashes, drive letters or control characters,
//! are refused. External URIs (`https://...`) are recognized so callers can keep them as such.

/// Why a reference cannot be resolved inside the package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PathError {
    /// `..` climbs above the package root.
    Escapes,
    /// Malformed (empty, backslashes, drive letter, control characters, names the root).
    Invalid(&'static str),
}

/// True for `scheme:` references with a scheme of two or more characters (`http:`, `file:`).
pub(crate) fn is_external_uri(reference: &str) -> bool {
    let Some((scheme, _)) = reference.split_once(':') else {
        return false;
    };
    scheme.len() >= 2
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// Resolves `reference`, written in the package file `base_file`, to a package path.
pub(crate) fn resolve_relative(base_file: &str, reference: &str) -> Result<String, PathError> {
    if reference.is_empty() {
        return Err(PathError::Invalid("the path is empty"));
    }
    if reference.chars().any(char::is_control) {
        return Err(PathError::Invalid("it contains control characters"));
    }
    if reference.contains('\\') {
        if reference.split(['/', '\\']).any(|c| c == "..") {
            return Err(PathError::Escapes);
        }
        return Err(PathError::Invalid("it uses `\\` as a separator"));
    }
    let b = reference.as_bytes();
    if b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
        return Err(PathError::Invalid("it starts with a drive letter"));
    }
    let mut stack: Vec<&str> = Vec::new();
    let rest = match reference.strip_prefix('/') {
        Some(from_root) => from_root,
        None => {
            stack.extend(base_file.split('/').filter(|c| !c.is_empty() && *c != "."));
            // The file name itself: references are relative to its directory.
            stack.pop();
            reference
        }
    };
    for component in rest.split('/') {
        match component {
            "" | "." => {}
            ".." => {
                if stack.pop().is_none() {
                    return Err(PathError::Escapes);
                }
            }
            c => stack.push(c),
        }
    }
    if stack.is_empty() {
        return Err(PathError::Invalid("it names the package root, not a file"));
    }
    Ok(stack.join("/"))
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
        assert!(matches!(
            resolve_relative("Definitions/a.yaml", ".."),
            Err(PathError::Invalid(_)) | Err(PathError::Escapes)
        ));
    }

    #[test]
    fn recognizes_external_uris() {
        assert!(is_external_uri("https://forge.etsi.org/x.yaml"));
        assert!(!is_external_uri("Files/a.yaml"));
        assert!(!is_external_uri("C:/x"));
    }
}
