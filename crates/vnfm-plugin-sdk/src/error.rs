//! [`PluginError`]: how a hook fails.

use std::time::Duration;

use crate::protocol::{ErrorKind, WireError};

/// A hook's failure. Messages end up in the operation occurrence's `error`, shown to API
/// users: never put credentials in them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PluginError {
    /// Something failed that may work when the operation is retried (a host still booting,
    /// a lost connection).
    #[error("{0}")]
    Transient(String),
    /// Something failed that a retry will not fix.
    #[error("{0}")]
    Permanent(String),
    /// The request, the VNFD or the instance cannot be processed (a missing
    /// `additionalParams` entry, a VDU without addresses); say what is expected.
    #[error("{0}")]
    InvalidInput(String),
    /// The hook gave up at its deadline.
    #[error("{what} did not finish within the hook's time budget of {} s", budget.as_secs())]
    Timeout {
        /// What was being done.
        what: String,
        /// The hook's whole budget.
        budget: Duration,
    },
    /// The operation occurrence was cancelled.
    #[error("{0} was cancelled")]
    Cancelled(String),
    /// A package file could not be read.
    #[error("cannot read package file `{path}`: {message}")]
    PackageFile {
        /// The package-relative path.
        path: String,
        /// Why.
        message: String,
    },
}

impl PluginError {
    /// A [`PluginError::Transient`].
    pub fn transient(message: impl Into<String>) -> Self {
        PluginError::Transient(message.into())
    }

    /// A [`PluginError::Permanent`].
    pub fn permanent(message: impl Into<String>) -> Self {
        PluginError::Permanent(message.into())
    }

    /// A [`PluginError::InvalidInput`].
    pub fn invalid_input(message: impl Into<String>) -> Self {
        PluginError::InvalidInput(message.into())
    }

    /// The form that crosses the boundary.
    pub fn to_wire(&self) -> WireError {
        let kind = match self {
            PluginError::Transient(_) => ErrorKind::Transient,
            PluginError::Permanent(_) => ErrorKind::Permanent,
            PluginError::InvalidInput(_) | PluginError::PackageFile { .. } => {
                ErrorKind::InvalidInput
            }
            PluginError::Timeout { .. } => ErrorKind::Timeout,
            PluginError::Cancelled(_) => ErrorKind::Cancelled,
        };
        WireError {
            kind,
            message: self.to_string(),
        }
    }
}
