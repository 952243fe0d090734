//! Collecting diagnostics while the phases run.
//!
//! Parsed files are cached and shared between loads (and may sit at different paths in
//! different packages), so what is found while parsing one file is kept as a [`Problem`]: a
//! diagnostic with a position but no file name. The [`Sink`] of a load turns problems into
//! [`Diagnostic`]s once the file's path in that package is known.

use std::borrow::Cow;

use vnfm_descriptor::{Diagnostic, Severity};

use crate::quirks::Quirk;
use crate::yaml::Pos;

/// A diagnostic without its file: position, code, message, help.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Problem {
    pub severity: Severity,
    pub code: Cow<'static, str>,
    pub message: String,
    pub pos: Pos,
    pub help: Option<String>,
}

impl Problem {
    pub fn error(code: &'static str, pos: Pos, message: impl Into<String>) -> Problem {
        Problem {
            severity: Severity::Error,
            code: Cow::Borrowed(code),
            message: message.into(),
            pos,
            help: None,
        }
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Problem {
        self.help = Some(help.into());
        self
    }

    /// Recovers the position of a diagnostic that already names a file (as the YAML loader
    /// returns them), so it can be cached without the file.
    pub fn from_diagnostic(d: Diagnostic) -> Problem {
        let pos = d
            .location
            .as_ref()
            .map(|l| Pos {
                line: l.line,
                column: l.column,
            })
            .unwrap_or_default();
        Problem {
            severity: d.severity,
            code: d.code,
            message: d.message,
            pos,
            help: d.help,
        }
    }

    pub fn into_diagnostic(self, file: &str) -> Diagnostic {
        Diagnostic {
            severity: self.severity,
            code: self.code,
            message: self.message,
            location: Some(vnfm_descriptor::Location::new(
                file,
                self.pos.line,
                self.pos.column,
            )),
            help: self.help,
        }
    }
}

/// Where the diagnostics of one load go.
#[derive(Debug, Default)]
pub(crate) struct Sink {
    pub diags: Vec<Diagnostic>,
}

impl Sink {
    /// Records an error at `file`:`pos` and returns it so a caller can add help.
    pub fn error(
        &mut self,
        file: &str,
        pos: Pos,
        code: &'static str,
        message: impl Into<String>,
    ) -> &mut Diagnostic {
        self.push(Diagnostic::error(code, message).at_pos(file, pos.line, pos.column))
    }

    /// Records a warning at `file`:`pos`.
    pub fn warning(
        &mut self,
        file: &str,
        pos: Pos,
        code: &'static str,
        message: impl Into<String>,
    ) -> &mut Diagnostic {
        self.push(Diagnostic::warning(code, message).at_pos(file, pos.line, pos.column))
    }

    /// Records the warning of a tolerated deviation, naming the quirk.
    pub fn quirk(&mut self, quirk: Quirk, file: &str, pos: Pos, message: impl Into<String>) {
        let message = format!("{} (tolerated as quirk `{}`)", message.into(), quirk.name());
        self.push(
            Diagnostic::warning(quirk.code(), message)
                .at_pos(file, pos.line, pos.column)
                .with_help(quirk.help()),
        );
    }

    pub fn problem(&mut self, file: &str, p: Problem) {
        self.push(p.into_diagnostic(file));
    }

    pub fn push(&mut self, d: Diagnostic) -> &mut Diagnostic {
        self.diags.push(d);
        let last = self.diags.len() - 1;
        &mut self.diags[last]
    }

    pub fn has_errors(&self) -> bool {
        vnfm_descriptor::diag::has_errors(&self.diags)
    }
}
