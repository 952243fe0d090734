//! Diagnostics shared by every layer that reads packages and descriptors.
//!
//! A [`Diagnostic`] says what is wrong (`message`), where (`location`: package-relative file,
//! 1-based line and column), how bad it is ([`Severity`]), a stable machine-readable `code`
//! that tests and tools can match on, and optionally what to do about it (`help`).

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};

/// How serious a [`Diagnostic`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The package or descriptor is invalid and must not be used.
    Error,
    /// Accepted, but something is off (a known defect of a published sample, a deprecated form).
    Warning,
}

/// A position in a file of the package: package-relative path, 1-based line and column.
///
/// `line == 0` means the position inside the file is unknown (the diagnostic is about the
/// whole file).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Location {
    /// Package-relative path with `/` separators, e.g. `Definitions/vnfd_df_simple.yaml`.
    pub file: String,
    /// 1-based line number; 0 when unknown.
    pub line: u32,
    /// 1-based column number; 0 when unknown.
    pub column: u32,
}

impl Location {
    /// A location at `line`:`column` of `file`.
    pub fn new(file: impl Into<String>, line: u32, column: u32) -> Self {
        Location {
            file: file.into(),
            line,
            column,
        }
    }

    /// A location naming a whole file.
    pub fn file(file: impl Into<String>) -> Self {
        Location {
            file: file.into(),
            line: 0,
            column: 0,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column) {
            (0, _) => write!(f, "{}", self.file),
            (l, 0) => write!(f, "{}:{}", self.file, l),
            (l, c) => write!(f, "{}:{}:{}", self.file, l, c),
        }
    }
}

/// One problem found while reading a package or descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// Stable identifier of the kind of problem, e.g. `tosca.unknown-type` or `csar.digest-mismatch`.
    pub code: Cow<'static, str>,
    /// Plain-language description of what is wrong.
    pub message: String,
    /// Where it is, when it can be pinned to a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    /// What the author can do about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
}

impl Diagnostic {
    /// An error with the given code and message and no location.
    pub fn error(code: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            code: code.into(),
            message: message.into(),
            location: None,
            help: None,
        }
    }

    /// A warning with the given code and message and no location.
    pub fn warning(code: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(code, message)
        }
    }

    /// Sets the location.
    pub fn at(mut self, location: Location) -> Self {
        self.location = Some(location);
        self
    }

    /// Sets the location from its parts.
    pub fn at_pos(self, file: impl Into<String>, line: u32, column: u32) -> Self {
        self.at(Location::new(file, line, column))
    }

    /// Adds advice on how to fix the problem.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// True for [`Severity::Error`].
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(loc) = &self.location {
            write!(f, "{loc}: ")?;
        }
        let sev = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(f, "{sev}[{}]: {}", self.code, self.message)?;
        if let Some(help) = &self.help {
            write!(f, "\n  help: {help}")?;
        }
        Ok(())
    }
}

/// True when any diagnostic in `diags` is an error.
pub fn has_errors<'a>(diags: impl IntoIterator<Item = &'a Diagnostic>) -> bool {
    diags.into_iter().any(Diagnostic::is_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_includes_location_code_and_help() {
        let d = Diagnostic::error("tosca.unknown-type", "node type `x.Y` is not defined")
            .at_pos("Definitions/a.yaml", 12, 7)
            .with_help("import the file that defines it");
        assert_eq!(
            d.to_string(),
            "Definitions/a.yaml:12:7: error[tosca.unknown-type]: node type `x.Y` is not defined\n  help: import the file that defines it"
        );
        assert!(has_errors([&d]));
        assert!(!has_errors([&Diagnostic::warning("w", "m")]));
    }
}
