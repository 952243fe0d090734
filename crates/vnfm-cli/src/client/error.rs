//! The client's error type: what failed, and the exit code it maps to.

use std::path::PathBuf;

use serde_json::Value;

/// Everything a client command can fail with. The message says what failed and what to do;
/// [`ClientError::exit_code`] maps it to the documented exit codes.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// A command-line value or combination of options that cannot be used.
    #[error("{0}")]
    Usage(String),
    /// A file named on the command line or in the configuration could not be read.
    #[error("cannot read {what} `{path}`: {source}")]
    ReadFile {
        /// What the file is for (e.g. "request file").
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A file was read but its content is not what the option expects.
    #[error("{what} `{path}` is not usable: {message}")]
    BadFile {
        /// What the file is for.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// The connection settings are incomplete or malformed.
    #[error("configuration: {0}")]
    Config(String),
    /// The server could not be reached (connection refused, DNS, TLS, timeout).
    #[error(
        "cannot reach the VNFM at {url}: {message}; check --url (or VNFM_URL) and that `vnfm serve` runs there"
    )]
    Connect {
        /// The URL requested.
        url: String,
        /// The cause, with its chain.
        message: String,
    },
    /// The token endpoint refused the client credentials.
    #[error(
        "{by} refused the client credentials ({status}): {detail}; check --client-id/--client-secret (or VNFM_CLIENT_ID/VNFM_CLIENT_SECRET)"
    )]
    Auth {
        /// Who refused them: the VNFM, or the authorization server (by its issuer).
        by: String,
        /// HTTP status.
        status: u16,
        /// The server's explanation.
        detail: String,
    },
    /// The server answered a request with an error (its ProblemDetails).
    #[error("{method} {path} failed: {problem}")]
    Problem {
        /// HTTP method.
        method: String,
        /// Request path.
        path: String,
        /// The ProblemDetails the server sent.
        problem: Box<Problem>,
    },
    /// The server answered with something the client cannot interpret.
    #[error("unexpected answer to {what}: {message}")]
    Unexpected {
        /// The request.
        what: String,
        /// What was wrong.
        message: String,
    },
    /// A lifecycle operation occurrence ended in FAILED_TEMP, FAILED or ROLLED_BACK.
    #[error("{operation} {id} ended in {state}: {problem}")]
    OperationFailed {
        /// The op-occ id.
        id: String,
        /// The operation (e.g. INSTANTIATE).
        operation: String,
        /// Its final state.
        state: String,
        /// Its `error` ProblemDetails.
        problem: Box<Problem>,
    },
    /// Package onboarding ended in ERROR.
    #[error(
        "package {id} was not onboarded: {}",
        onboarding_failure(detail, diagnostics)
    )]
    OnboardingFailed {
        /// The package id.
        id: String,
        /// `onboardingFailureDetails.detail`.
        detail: String,
        /// `onboardingFailureDetails.diagnostics`: the errors found, each with its code and
        /// `file:line:column` (the detail repeats them, so it is shown only when they are
        /// missing).
        diagnostics: Vec<String>,
    },
    /// `--timeout` expired before the awaited state was reached.
    #[error(
        "gave up waiting for {what} after {seconds} s (it is still running on the server; follow it with `vnfm op show`)"
    )]
    Timeout {
        /// What was awaited.
        what: String,
        /// The limit.
        seconds: u64,
    },
    /// Writing the output failed (other than a closed pipe).
    #[error("cannot write the output: {0}")]
    Output(#[source] std::io::Error),
}

impl ClientError {
    /// The process exit code: 1 when the server refused the request or an operation failed,
    /// 2 for usage and configuration errors, 3 when the server could not be reached or refused
    /// the credentials, 4 when `--timeout` expired.
    pub fn exit_code(&self) -> u8 {
        match self {
            ClientError::Usage(_)
            | ClientError::ReadFile { .. }
            | ClientError::BadFile { .. }
            | ClientError::Config(_) => 2,
            ClientError::Connect { .. } | ClientError::Auth { .. } => 3,
            ClientError::Timeout { .. } => 4,
            ClientError::Problem { .. }
            | ClientError::Unexpected { .. }
            | ClientError::OperationFailed { .. }
            | ClientError::OnboardingFailed { .. }
            | ClientError::Output(_) => 1,
        }
    }

    /// The server's ProblemDetails document, when the error carries one.
    pub fn problem(&self) -> Option<&Problem> {
        match self {
            ClientError::Problem { problem, .. } | ClientError::OperationFailed { problem, .. } => {
                Some(problem.as_ref())
            }
            _ => None,
        }
    }
}

/// Why onboarding failed, each error once: the diagnostics one per line when the server
/// listed them, else the detail.
fn onboarding_failure(detail: &str, diagnostics: &[String]) -> String {
    if diagnostics.is_empty() {
        return detail.to_owned();
    }
    let mut out = format!(
        "{} error{}",
        diagnostics.len(),
        if diagnostics.len() == 1 { "" } else { "s" }
    );
    for d in diagnostics {
        for (i, line) in d.lines().enumerate() {
            out.push_str(if i == 0 { "\n  " } else { "\n    " });
            out.push_str(line.trim_start());
        }
    }
    out
}

/// A ProblemDetails (RFC 7807) document as the server sent it.
#[derive(Debug, Clone)]
pub struct Problem {
    /// `status` (or the HTTP status when the body has none).
    pub status: u16,
    /// `title`.
    pub title: Option<String>,
    /// `detail`.
    pub detail: String,
    /// The whole document.
    pub raw: Value,
}

impl Problem {
    /// Reads a ProblemDetails from a response body; a body that is not one becomes a problem
    /// whose detail is the (cut) body text.
    pub fn from_body(status: u16, body: &str) -> Problem {
        match serde_json::from_str::<Value>(body) {
            Ok(raw @ Value::Object(_)) => Problem::from_value(status, raw),
            _ => Problem {
                status,
                title: None,
                detail: if body.trim().is_empty() {
                    "no detail given".into()
                } else {
                    cut(body.trim(), 300)
                },
                raw: Value::Null,
            },
        }
    }

    /// Reads a ProblemDetails from a JSON value (e.g. an op-occ's `error`).
    pub fn from_value(status: u16, raw: Value) -> Problem {
        let status = raw
            .get("status")
            .and_then(Value::as_u64)
            .and_then(|s| u16::try_from(s).ok())
            .unwrap_or(status);
        let title = raw.get("title").and_then(Value::as_str).map(str::to_owned);
        let detail = raw
            .get("detail")
            .and_then(Value::as_str)
            .unwrap_or("no detail given")
            .to_owned();
        Problem {
            status,
            title,
            detail,
            raw,
        }
    }

    /// `pointer` (the offending request member) when the server named one.
    pub fn pointer(&self) -> Option<&str> {
        self.raw.get("pointer").and_then(Value::as_str)
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.title {
            Some(t) => write!(f, "{} {t}: {}", self.status, self.detail)?,
            None => write!(f, "{}: {}", self.status, self.detail)?,
        }
        if let Some(p) = self.pointer() {
            write!(f, " (at {p})")?;
        }
        Ok(())
    }
}

/// At most `max` characters of `s`, with an ellipsis when cut.
pub fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let mut out: String = s.chars().take(max).collect();
        out.push('…');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problem_from_json_body_keeps_title_detail_and_pointer() {
        let p = Problem::from_body(
            400,
            r#"{"status": 400, "title": "Bad Request", "detail": "flavourId is missing", "pointer": "/flavourId"}"#,
        );
        assert_eq!(p.title.as_deref(), Some("Bad Request"));
        assert_eq!(
            p.to_string(),
            "400 Bad Request: flavourId is missing (at /flavourId)"
        );
    }

    #[test]
    fn problem_from_non_json_body_uses_the_text() {
        let p = Problem::from_body(502, "bad gateway\n");
        assert_eq!(p.to_string(), "502: bad gateway");
        assert_eq!(Problem::from_body(500, "").detail, "no detail given");
    }

    #[test]
    fn an_onboarding_failure_lists_each_error_once() {
        let e = ClientError::OnboardingFailed {
            id: "p1".into(),
            detail: "the VNF package is invalid: a.yaml:1:1: error[x]: bad; b".into(),
            diagnostics: vec![
                "a.yaml:1:1: error[x]: bad\n    help: fix it".into(),
                "b".into(),
            ],
        };
        assert_eq!(
            e.to_string(),
            "package p1 was not onboarded: 2 errors\n  a.yaml:1:1: error[x]: bad\n    help: fix it\n  b"
        );
        let e = ClientError::OnboardingFailed {
            id: "p1".into(),
            detail: "the source answered 404".into(),
            diagnostics: Vec::new(),
        };
        assert_eq!(
            e.to_string(),
            "package p1 was not onboarded: the source answered 404"
        );
    }

    #[test]
    fn exit_codes_follow_the_documented_classes() {
        assert_eq!(ClientError::Usage("x".into()).exit_code(), 2);
        assert_eq!(
            ClientError::Connect {
                url: "u".into(),
                message: "m".into()
            }
            .exit_code(),
            3
        );
        assert_eq!(
            ClientError::Timeout {
                what: "w".into(),
                seconds: 1
            }
            .exit_code(),
            4
        );
        let problem = Box::new(Problem::from_body(409, "{}"));
        assert_eq!(
            ClientError::OperationFailed {
                id: "i".into(),
                operation: "SCALE".into(),
                state: "FAILED_TEMP".into(),
                problem
            }
            .exit_code(),
            1
        );
    }
}
