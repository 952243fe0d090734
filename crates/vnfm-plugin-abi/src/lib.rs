//! The frozen wire format between the VNFM (the host) and its management-driver plugins.
//!
//! A plugin is a `cdylib` that exports one C symbol and then talks JSON. This crate defines
//! that boundary and nothing else:
//!
//! - [`ffi`]: the `#[repr(C)]` [`PluginHeader`](ffi::PluginHeader) behind the entry symbol
//!   [`ENTRY_SYMBOL`], the buffers, the host's callbacks ([`HostApi`](ffi::HostApi)) and the
//!   log levels ([`level`]);
//! - [`protocol`]: the messages: the handshake ([`HostHello`], [`PluginHello`]), the hook
//!   request ([`HookRequest`]: operation, hook, LCM request, VNF instance, VNFD, VIM
//!   connections, artifact, deadline, error handling data) and the answers, including the
//!   error shape ([`WireError`], [`ErrorKind`]);
//! - [`output`]: what a hook returns ([`HookOutput`]), with the VIMs it registers
//!   ([`VimToRegister`]), the faults it observed ([`AlarmReport`]) and VNF indicator values;
//! - [`vim`]: [`VimConnection`], a VIM connection on the wire;
//! - [`log`]: [`LogRecord`], one log line of a plugin.
//!
//! It depends on `serde` and `serde_json` only. SOL payloads (the instance, the request, the
//! VNFD) travel as [`serde_json::Value`], so a change of the VNFM's SOL types never changes the
//! ABI: the plugin SDK (`vnfm-plugin-sdk`) builds on this crate for plugin authors, the plugin
//! host (`vnfm-plugin-host`) converts between these types and the lifecycle core's.
//!
//! # Versions
//!
//! [`ABI_VERSION`] is the version of everything in this crate. The rule:
//!
//! - A host accepts exactly the versions in [`ACCEPTED_ABI_VERSIONS`] (today only `2`), and a
//!   plugin library announces one version: the first `u32` of its header, read before anything
//!   else. Any other version is refused when the library is loaded, with an error that names
//!   both versions and says to rebuild the plugin against an SDK of the host's ABI version.
//! - Adding an optional message field (one with a default, that an older peer may ignore) or
//!   an [`ErrorKind`] (older peers read it as [`ErrorKind::Unknown`]) keeps the version.
//! - Anything else bumps it: a field removed, renamed or retyped, a new required field, a new
//!   message, a change of the header or of the host's callbacks, or a change of meaning.
//! - The entry symbol's name and the position of the header's first field never change, so
//!   that every host can read the version of every plugin.
//!
//! Version 1 was the wire format of `vnfm-plugin-sdk` before this crate existed: the same C
//! header, but a host handshake that carried the SDK version and a host that also required a
//! semver-compatible SDK. Version 2 is decided by the ABI version alone; the plugin's SDK
//! version is informational.
//!
//! ```
//! use vnfm_plugin_abi::{ABI_VERSION, is_supported};
//!
//! assert_eq!(ABI_VERSION, 2);
//! assert!(is_supported(2));
//! assert!(!is_supported(1));
//! ```

pub mod ffi;
pub mod log;
pub mod output;
pub mod protocol;
pub mod vim;

pub use ffi::{ENTRY_SYMBOL, level};
pub use log::LogRecord;
pub use output::{AlarmReport, HookOutput, KeyValuePairs, VimToRegister};
pub use protocol::{
    ArtifactRef, ErrorKind, HookRequest, HostHello, OBSERVE_HOOK, PluginHello, Request, Response,
    WireError,
};
pub use vim::VimConnection;

/// The version of this wire format (see [Versions](crate#versions)).
pub const ABI_VERSION: u32 = 2;

/// The ABI versions a host built with this crate accepts: exactly [`ABI_VERSION`].
pub const ACCEPTED_ABI_VERSIONS: &[u32] = &[ABI_VERSION];

/// Whether a host built with this crate accepts a plugin of ABI version `version`.
pub fn is_supported(version: u32) -> bool {
    ACCEPTED_ABI_VERSIONS.contains(&version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_current_version_is_accepted() {
        assert!(is_supported(ABI_VERSION));
        for other in [0, 1, 3, u32::MAX] {
            assert!(!is_supported(other), "{other}");
        }
    }

    #[test]
    fn the_entry_symbol_never_changes() {
        assert_eq!(ENTRY_SYMBOL, b"vnfm_mgmt_driver_v1\0");
    }
}
