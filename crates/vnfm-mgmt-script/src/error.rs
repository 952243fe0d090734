//! [`ScriptError`]: what failed while running a hook script, by step.

use std::time::Duration;

use vnfm_driver_api::DriverError;

/// A failure of one hook script run. [`ScriptError::into_driver_error`] turns it into the
/// [`DriverError`] the core records, prefixed with the hook and artifact.
///
/// No variant carries the script's input (it holds the request, the instance and VIM
/// credentials).
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The artifact is not a Python script, or lies outside the package.
    #[error("{0}")]
    NotRunnable(String),
    /// The configured Python interpreter is not on the `PATH` or not executable.
    #[error("the Python interpreter `{python}` was not found or is not executable ({source})")]
    NoInterpreter {
        /// The interpreter as configured.
        python: String,
        /// The cause.
        #[source]
        source: which::Error,
    },
    /// Creating the temporary package directory failed.
    #[error("creating the temporary package directory failed")]
    TempDir(#[source] std::io::Error),
    /// A package path is absolute or leaves the package (`..`).
    #[error("package path `{0}` is not a relative path inside the package")]
    UnsafePath(String),
    /// Reading a file from the package failed.
    #[error("reading `{path}` from the package failed")]
    ReadPackageFile {
        /// Package-relative path.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Writing a package file into the temporary directory failed.
    #[error("writing `{path}` into the temporary package directory failed")]
    WritePackageFile {
        /// Package-relative path.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Encoding the script input as a pickle failed.
    #[error("encoding the script input as a pickle failed")]
    EncodeInput(#[source] serde_pickle::Error),
    /// Starting the interpreter failed.
    #[error("starting `{python}` failed")]
    Spawn {
        /// The interpreter.
        python: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Waiting for the script or reading its output failed.
    #[error("waiting for the script failed")]
    Wait(#[source] std::io::Error),
    /// The script exited with a non-zero status (or was killed by a signal). The text says
    /// `<what> failed`, as Tacker's does (`instantiate_end failed: ...`), which its clients
    /// and functional tests look for.
    #[error("{subject} failed ({status}); last lines of its stderr:\n{stderr_tail}")]
    Exit {
        /// What ran: the hook (`instantiate_end`), the coordination script, the user data
        /// class's method.
        subject: String,
        /// `exit status 3`, `killed by signal 9`.
        status: String,
        /// The last lines of stderr (secrets of the call's VIMs redacted).
        stderr_tail: String,
    },
    /// The script wrote more to stdout than the configured limit.
    #[error("the script wrote more than {limit} bytes to stdout")]
    OutputTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// Stdout is not empty and not a pickle.
    #[error("the script's stdout is not a pickle")]
    DecodeOutput(#[source] serde_pickle::Error),
    /// The unpickled output does not have the expected shape.
    #[error("the script's output {0}")]
    OutputShape(String),
    /// An entry of `vnf_instance.vimConnectionInfo` in the output is not a VIM connection.
    #[error("the script returned an invalid vimConnectionInfo entry `{key}`")]
    VimConnection {
        /// Key of the entry.
        key: String,
        /// The cause.
        #[source]
        source: serde_json::Error,
    },
    /// The returned `vnf_instance` changes fields a hook cannot change here.
    #[error(
        "the script changed vnf_instance fields that hook outcomes cannot carry: {}; only vimConnectionInfo, metadata and extensions are taken",
        .0.join(", ")
    )]
    UnsupportedChange(Vec<String>),
    /// A user data class cannot be called as named: its module has no such class, or the
    /// class no such method.
    #[error("{0}")]
    UserDataClass(String),
    /// The deadline passed while the script ran; its process group was killed.
    #[error("the script did not finish within {0:?}")]
    Timeout(Duration),
    /// The operation occurrence was cancelled while the script ran; its process group was
    /// killed.
    #[error("the script was cancelled")]
    Cancelled,
}

impl ScriptError {
    /// The [`DriverError`] for this failure; `what` names the hook and artifact and is put in
    /// front of the message.
    pub fn into_driver_error(self, what: &str) -> DriverError {
        // A script without the hook fails every run the same way: a retry cannot help.
        if let ScriptError::Exit { stderr_tail, .. } = &self
            && let Some(hook) = unknown_hook(stderr_tail)
        {
            return DriverError::permanent(format!(
                "{what}: {self}\nthe script has no `{hook}` method (Tacker's sample scripts \
                 answer so for a hook they do not implement), so running it again cannot \
                 help: add the method to the script or bind the hook to another artifact in \
                 the VNFD, then fail or roll back this operation"
            ));
        }
        match self {
            ScriptError::Timeout(budget) => DriverError::timeout(what, budget),
            ScriptError::Cancelled => DriverError::cancelled(what),
            ScriptError::NotRunnable(m) => DriverError::invalid_input(format!("{what}: {m}")),
            // The package does not change: running it again cannot help.
            ScriptError::UserDataClass(m) => DriverError::permanent(format!("{what}: {m}")),
            e @ ScriptError::NoInterpreter { .. } => {
                DriverError::invalid_input(format!("{what}: {e}")).with_source(e)
            }
            e @ (ScriptError::TempDir(_)
            | ScriptError::WritePackageFile { .. }
            | ScriptError::Wait(_)) => {
                DriverError::transient(format!("{what}: {e}")).with_source(e)
            }
            // The script decides what its failure means, and a retry runs it again with the
            // error-handling data it returned (Tacker's design for resumable scripts): a
            // retry may help.
            e @ ScriptError::Exit { .. } => DriverError::transient(format!("{what}: {e}")),
            e => DriverError::permanent(format!("{what}: {e}")).with_source(e),
        }
    }
}

/// The hook a script's stderr says it does not implement: the last non-empty line is Tacker's
/// sample scripts' `<hook> is not included in the script.` (also after an `Exception: `
/// prefix, as a traceback prints it).
fn unknown_hook(stderr_tail: &str) -> Option<&str> {
    let line = stderr_tail
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())?
        .trim();
    let sentence = line.rsplit_once(": ").map_or(line, |(_, s)| s);
    let hook = sentence
        .strip_suffix('.')
        .unwrap_or(sentence)
        .strip_suffix(" is not included in the script")?;
    let identifier =
        !hook.is_empty() && hook.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    identifier.then_some(hook)
}

#[cfg(test)]
mod tests {
    use super::unknown_hook;

    #[test]
    fn tackers_unknown_hook_message_is_recognised() {
        for (tail, hook) in [
            (
                "instantiate_start is not included in the script.",
                Some("instantiate_start"),
            ),
            (
                "a\nException: scale_end is not included in the script.\n\n",
                Some("scale_end"),
            ),
            ("heal_end is not included in the script", Some("heal_end")),
            (
                "instantiate_start failed: the VM is not included in the script.",
                None,
            ),
            ("is not included in the script.", None),
            ("the NFS mount failed", None),
            (
                "scale_end is not included in the script.\nretrying later",
                None,
            ),
        ] {
            assert_eq!(unknown_hook(tail), hook, "{tail:?}");
        }
    }
}
