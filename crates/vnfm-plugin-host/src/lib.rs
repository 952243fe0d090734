//! The plugin host: runs LCM hooks in management-driver plugin libraries.
//!
//! [`PluginHost`] implements the lifecycle core's [`vnfm_driver_api::MgmtDriver`]. For each
//! hook call it
//!
//! 1. picks the library for the hook's VNFD artifact: the one installed under the artifact's
//!    name ([`HostConfig::plugins`]), or the file shipped in the package when
//!    [`HostConfig::package_libraries`] allows it;
//! 2. checks the library's SHA-256 against the digest the VNFD declares (a mismatch fails the
//!    hook with an `invalidInput` error and nothing is loaded);
//! 3. loads it (once; libraries are never unloaded), checks the ABI version (exactly
//!    [`vnfm_plugin_abi::ABI_VERSION`]) and the handshake;
//! 4. runs the hook on a thread of its own ([`Isolation::InProcess`]) or in a child process
//!    ([`Isolation::Process`], the `vnfm-plugin-runner` binary), never on the async runtime;
//! 5. enforces the step's deadline and cancellation: the host stops waiting, raises the
//!    plugin's cancellation flag, and kills an isolated child;
//! 6. turns the plugin's answer into a `HookOutcome` ([`convert`]), or its error (including a caught panic
//!    or a crashed child) into a `DriverError`, with VIM secrets scrubbed from messages.
//!
//! Plugin log lines are emitted as `tracing` events with target `vnfm_plugin` and the fields
//! `artifact`, `hook` and `op_occ_id`.
//!
//! ```no_run
//! use std::sync::Arc;
//! use vnfm_plugin_host::{HostConfig, Isolation, PluginHost};
//!
//! let host = PluginHost::new(
//!     HostConfig::new("/var/lib/vnfm/plugins")
//!         .plugin("mgmt-drivers-kubernetes", "/usr/lib/vnfm/libvnfm_plugin_k8s_cluster.so", Isolation::Process),
//! );
//! let driver: Arc<dyn vnfm_driver_api::MgmtDriver> = Arc::new(host);
//! # drop(driver);
//! ```

pub mod config;
pub mod convert;
pub mod error;
pub mod frames;
mod host;
mod isolated;
pub mod library;
pub mod runner;

pub use config::{HostConfig, Isolation, PluginSpec};
pub use error::HostError;
pub use host::PluginHost;
