//! The SDK for VNFM management-driver plugins.
//!
//! A management driver (MgmtDriver) runs the LCM hooks a VNFD binds in its `Vnflcm`
//! interface: `instantiate_end`, `scale_start`, `heal_end`, ... A plugin is a Rust `cdylib`
//! that implements [`MgmtDriver`] and exports it with [`export_mgmt_driver!`]; the VNFD names
//! the library as the hook's implementation artifact, and the VNFM checks the library's
//! SHA-256 before loading it.
//!
//! ```
//! use serde_json::json;
//! use vnfm_plugin_sdk::{HookContext, HookOutput, HookResult, MgmtDriver, export_mgmt_driver};
//!
//! #[derive(Default)]
//! pub struct Hello;
//!
//! impl MgmtDriver for Hello {
//!     fn instantiate_end(&self, ctx: &HookContext<'_>) -> HookResult {
//!         ctx.log().info(format!("hello, {}", ctx.vnf_instance_id()));
//!         Ok(HookOutput::none().with_metadata("greeted", json!(true)))
//!     }
//! }
//!
//! export_mgmt_driver!(Hello);
//! # fn main() {}
//! ```
//!
//! - [`MgmtDriver`] ([`driver`]): one method per hook, each a no-op by default.
//! - [`HookContext`] ([`context`]): the request, the instance, the VNFD, the package files,
//!   the VIM connections, deadline and cancellation, error handling data, a logger.
//! - [`HookOutput`] ([`output`]): instance changes, VIMs to register or deregister, alarms
//!   to raise or clear ([`AlarmReport`]) and VNF indicator values.
//! - [`VimConnection`]: a VIM connection as the plugin sees and returns it.
//! - [`PluginError`] ([`error`]): how a hook fails.
//! - [`testing::HookHarness`]: run hooks in a unit test, without a VNFM.
//! - `runtime` (feature `runtime`): a tokio runtime for hooks that use async libraries.
//! - [`abi`] and [`protocol`]: the C ABI and the JSON messages, re-exported from
//!   [`vnfm_plugin_abi`], the frozen wire format (its docs hold the version rule).
//!
//! # SOL data
//!
//! The SDK does not depend on the VNFM's SOL data model (`vnfm-types`): the wire format
//! carries the VNF instance, the LCM request and the VNFD as JSON, so that the SDK and the ABI
//! do not change when the SOL types do. A hook reads them as JSON
//! ([`HookContext::instance_json`], [`HookContext::request`]) or typed with
//! [`HookContext::instance_as`] / [`HookContext::request_as`] into a type of its choice. A
//! plugin that wants the VNFM's SOL structs adds `vnfm-types` to its own `Cargo.toml` and asks
//! for them: `ctx.instance_as::<vnfm_types::VnfInstance>()?`. VIM connections are the ABI's
//! [`VimConnection`] (the SOL003 `VimConnectionInfo` fields).
//!
//! This crate depends on `vnfm-plugin-abi`, `serde`, `serde_json` and `thiserror` only (plus
//! tokio with the `runtime` feature), so plugins stay small and do not pull in the VNFM.
//! See `docs/plugin-authoring.md` for a walk-through.

pub mod abi;
pub mod context;
pub mod driver;
pub mod error;
#[doc(hidden)]
pub mod export;
pub mod output;
pub mod protocol;
#[cfg(feature = "runtime")]
pub mod runtime;
pub mod testing;

pub use context::{HookContext, Logger, Package};
pub use driver::{HOOKS, HookResult, MgmtDriver};
pub use error::PluginError;
pub use output::{AlarmReport, HookOutput, VimConnection, VimToRegister};
pub use vnfm_plugin_abi;
