//! [`SshError`]: what failed, on which host, and whether trying again can help.

use std::sync::Arc;
use std::time::Duration;

/// A failure of an SSH operation. Messages name the host (`user@address:port`) and never
/// carry passwords or keys.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SshError {
    /// No SSH session could be set up (refused, unreachable, reset during the handshake).
    #[error("cannot connect to {host} ({attempts} attempt(s) over {} s): {message}", elapsed.as_secs())]
    Connect {
        /// The host.
        host: String,
        /// How many attempts were made.
        attempts: u32,
        /// How long was spent trying.
        elapsed: Duration,
        /// The last attempt's error.
        message: String,
    },
    /// The host presented a key other than the expected one: possibly a machine in the middle.
    #[error(
        "host key of {host} does not match: expected {expected}, got {actual}; if the host was rebuilt, update the recorded key"
    )]
    HostKeyMismatch {
        /// The host.
        host: String,
        /// What was expected (a fingerprint, or the known_hosts file).
        expected: String,
        /// The fingerprint presented.
        actual: String,
    },
    /// The host's key is not in the known_hosts file.
    #[error(
        "host key {fingerprint} of {host} is not in {known_hosts}; add it, or pin its fingerprint"
    )]
    HostKeyUnknown {
        /// The host.
        host: String,
        /// The fingerprint presented.
        fingerprint: String,
        /// The known_hosts file consulted.
        known_hosts: String,
    },
    /// The server refused the credentials.
    #[error("{host} refused {method} authentication for user {user}")]
    AuthRejected {
        /// The host.
        host: String,
        /// The user.
        user: String,
        /// `publickey` or `password`.
        method: &'static str,
    },
    /// The private key cannot be used.
    #[error("the SSH private key for {host} cannot be read: {source}")]
    Key {
        /// The host.
        host: String,
        /// Why (never the key itself).
        #[source]
        source: KeyError,
    },
    /// An operation did not finish in time.
    #[error("{what} on {host} did not finish within {} s", after.as_secs_f32())]
    Timeout {
        /// The host.
        host: String,
        /// What was being done (a command description or `upload of <path>`).
        what: String,
        /// The time limit.
        after: Duration,
    },
    /// A session channel failed (the connection dropped, the server refused a request).
    #[error("{what} on {host} failed: {message}")]
    Channel {
        /// The host.
        host: String,
        /// What was being done.
        what: String,
        /// Why.
        message: String,
    },
    /// An SFTP operation failed.
    #[error("SFTP {what} of {path} on {host} failed: {message}")]
    Sftp {
        /// The host.
        host: String,
        /// `open`, `write`, `rename`, ...
        what: &'static str,
        /// The remote path.
        path: String,
        /// Why.
        message: String,
    },
    /// A command ended unsuccessfully (see [`crate::Output::check`]).
    #[error("`{command}` on {host} {status}{}", if stderr.is_empty() { String::new() } else { format!(": {stderr}") })]
    CommandFailed {
        /// The host.
        host: String,
        /// The command, with secret arguments hidden.
        command: String,
        /// `exited with status 2`, `was killed by signal KILL`.
        status: String,
        /// The end of its standard error.
        stderr: String,
    },
}

impl SshError {
    /// Whether retrying the same operation later may succeed (connection problems, timeouts,
    /// dropped channels); false for key mismatches, refused credentials and failed commands.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            SshError::Connect { .. } | SshError::Timeout { .. } | SshError::Channel { .. }
        )
    }
}

/// Why an SSH private key cannot be used (never the key or its passphrase). The causes are
/// shared so that [`SshError`] stays cloneable; two values are equal when they read the same.
#[derive(Debug, Clone, thiserror::Error)]
pub enum KeyError {
    /// The key file cannot be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The key file.
        path: String,
        /// The cause.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// The key (or key file) is not a private key russh can decode, or the passphrase is
    /// wrong.
    #[error("{0}")]
    Decode(#[source] Arc<russh::keys::Error>),
    /// Password authentication has no key.
    #[error("a password is not a key")]
    NotAKey,
}

impl PartialEq for KeyError {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}

impl Eq for KeyError {}
