//! Who to connect to and how: [`SshTarget`], [`Auth`], [`HostKeyPolicy`], [`ConnectOptions`],
//! [`KexOrder`].

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// A secret string (password, private key text): `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps `s`.
    pub fn new(s: impl Into<String>) -> Self {
        Secret(s.into())
    }

    /// The secret; call sites that read it are the ones to audit.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// How to authenticate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Auth {
    /// A private key in OpenSSH or PEM format, with its passphrase if it has one.
    Key {
        /// The key text.
        private_key: Secret,
        /// The passphrase.
        passphrase: Option<Secret>,
    },
    /// A private key file.
    KeyFile(PathBuf),
    /// A password.
    Password(Secret),
}

/// How to decide whether the host's key is the right one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostKeyPolicy {
    /// The key must be in this OpenSSH `known_hosts` file (under `host` or `[host]:port`).
    KnownHosts(PathBuf),
    /// The key's SHA-256 fingerprint must be this (`SHA256:...`, as `ssh-keygen -l` prints).
    Fingerprint(String),
    /// Trust on first use: with `recorded: None` any key is accepted and its fingerprint is
    /// reported ([`crate::Session::host_key_fingerprint`]) so the caller can record it (e.g.
    /// in the VNF instance's metadata); with `Some(fingerprint)` the key must match it.
    AcceptNew {
        /// The fingerprint recorded at the first connection, if any.
        recorded: Option<String>,
    },
}

/// One SSH host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshTarget {
    /// Address or name.
    pub host: String,
    /// Port (22 by default).
    pub port: u16,
    /// User name.
    pub user: String,
    /// Credentials.
    pub auth: Auth,
    /// Host-key policy.
    pub host_key: HostKeyPolicy,
}

impl SshTarget {
    /// `user@host:22` with `auth`, trusting the host's key on first use.
    pub fn new(host: impl Into<String>, user: impl Into<String>, auth: Auth) -> Self {
        SshTarget {
            host: host.into(),
            port: 22,
            user: user.into(),
            auth,
            host_key: HostKeyPolicy::AcceptNew { recorded: None },
        }
    }

    /// Sets the port.
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// Sets the host-key policy.
    pub fn host_key(mut self, policy: HostKeyPolicy) -> Self {
        self.host_key = policy;
        self
    }

    /// `user@host:port`, for messages.
    pub fn label(&self) -> String {
        if self.host.contains(':') {
            format!("{}@[{}]:{}", self.user, self.host, self.port)
        } else {
            format!("{}@{}:{}", self.user, self.host, self.port)
        }
    }
}

/// Which key exchange the client prefers when the server offers several. Both orders take the
/// post-quantum hybrid (ML-KEM-768 with X25519) first when the server has it (OpenSSH 9.9 and
/// later) and end with the finite-field Diffie-Hellman groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KexOrder {
    /// ECDH on NIST P-256 before X25519 (the default). OpenSSH computes X25519 in its own
    /// portable reference code and P-256 in OpenSSL's optimised code: against OpenSSH 9.2 the
    /// server spends about a tenth less CPU per connection, which counts when one VNFM
    /// connects to many small VMs at once. FIPS-mode servers, which disable X25519, also
    /// agree on P-256 instead of a slow Diffie-Hellman group.
    #[default]
    NistP256First,
    /// X25519 before P-256, for sites whose policy avoids the NIST curves.
    Curve25519First,
}

/// Timeouts, retries and key-exchange preference of [`crate::Session::connect`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectOptions {
    /// Limit of one attempt (TCP connect, handshake and authentication).
    pub attempt_timeout: Duration,
    /// Keep retrying failed attempts until this much time has passed (zero: one attempt).
    /// Host-key and authentication failures are not retried.
    pub retry_for: Duration,
    /// Pause between attempts.
    pub retry_interval: Duration,
    /// Key-exchange preference.
    pub kex_order: KexOrder,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            attempt_timeout: Duration::from_secs(15),
            retry_for: Duration::ZERO,
            retry_interval: Duration::from_secs(2),
            kex_order: KexOrder::default(),
        }
    }
}

impl ConnectOptions {
    /// Retries for `total` (while a VM boots), pausing `interval` between attempts.
    pub fn retrying(mut self, total: Duration, interval: Duration) -> Self {
        self.retry_for = total;
        self.retry_interval = interval;
        self
    }

    /// Sets the limit of one attempt.
    pub fn attempt_timeout(mut self, timeout: Duration) -> Self {
        self.attempt_timeout = timeout;
        self
    }

    /// Sets the key-exchange preference.
    pub fn kex_order(mut self, order: KexOrder) -> Self {
        self.kex_order = order;
        self
    }
}
