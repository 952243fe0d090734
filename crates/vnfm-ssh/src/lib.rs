//! An SSH toolkit for management-driver plugins (russh, ring crypto).
//!
//! - [`Session::connect`]: key or password authentication, a host-key policy
//!   ([`HostKeyPolicy`]: a known_hosts file, a pinned fingerprint, or trust-on-first-use with
//!   the fingerprint reported for the caller to record), and retries while a VM boots
//!   ([`ConnectOptions`]). The key exchange prefers the post-quantum hybrid, then ECDH on
//!   P-256, which costs an OpenSSH server less CPU than X25519 ([`KexOrder`] reverses the
//!   curves).
//! - [`Session::exec`]: exit status and separate stdout/stderr, with a per-command timeout.
//! - [`Session::upload`]: SFTP upload, atomically replacing the target.
//! - [`fan_out`] / [`run_on_all`]: bounded parallel work over many hosts, per-host results.
//! - [`RemoteCommand`] / [`shell_quote`]: the only way commands are built; every argument is
//!   quoted, so no shell string is ever assembled from input.
//!
//! ```no_run
//! # async fn demo() -> Result<(), vnfm_ssh::SshError> {
//! use std::time::Duration;
//! use vnfm_ssh::*;
//!
//! let target = SshTarget::new("192.0.2.10", "ubuntu", Auth::KeyFile("/etc/vnfm/id_ed25519".into()))
//!     .host_key(HostKeyPolicy::Fingerprint("SHA256:...".into()));
//! let options = ConnectOptions::default().retrying(Duration::from_secs(300), Duration::from_secs(5));
//! let session = Session::connect(&target, &options).await?;
//! session.upload(b"#!/bin/sh\necho hi\n", "/tmp/vnfm/hi.sh", 0o755, Duration::from_secs(30)).await?;
//! let out = session
//!     .run(&RemoteCommand::new("/tmp/vnfm/hi.sh").arg("it's safe"), Duration::from_secs(60))
//!     .await?;
//! assert_eq!(out.stdout_text(), "hi\n");
//! # Ok(()) }
//! ```
//!
//! The crate uses russh with the `ring` provider only; it installs no process-wide TLS state.

mod error;
mod fanout;
mod quote;
mod session;
mod target;
pub mod testing;

pub use error::{KeyError, SshError};
pub use fanout::{HostOutcome, fan_out, run_on_all};
pub use quote::{RemoteCommand, shell_quote};
pub use session::{OUTPUT_LIMIT, Output, Session};
pub use target::{Auth, ConnectOptions, HostKeyPolicy, KexOrder, Secret, SshTarget};
