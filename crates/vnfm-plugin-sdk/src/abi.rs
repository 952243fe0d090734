//! The C ABI between the VNFM (the host) and a plugin library, as defined by the
//! `vnfm-plugin-abi` crate (re-exported here), plus the SDK's own version.
//!
//! None of this is written by plugin authors: [`export_mgmt_driver!`](crate::export_mgmt_driver)
//! generates the entry symbol and the glue. See [`vnfm_plugin_abi`] for the version rule.

pub use vnfm_plugin_abi::ABI_VERSION;
pub use vnfm_plugin_abi::ffi::*;

/// The SDK version compiled into a plugin (this crate's version). Informational: the host
/// decides compatibility by [`ABI_VERSION`] alone.
pub const SDK_VERSION: &str = env!("CARGO_PKG_VERSION");
