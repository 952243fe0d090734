//! The messages carried by the C ABI, as JSON: re-exported from `vnfm-plugin-abi`.
//!
//! The host sends a [`Request`]; the plugin answers with a [`Response`]. Plugin tests meet
//! [`WireError`] and [`ErrorKind`] as what [`HookHarness::run`](crate::testing::HookHarness::run)
//! returns for a failed hook.

pub use vnfm_plugin_abi::protocol::*;
