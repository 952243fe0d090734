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
//! - [`HookOutput`] ([`output`]): instance changes and VIMs to register or deregister.
//! - [`PluginError`] ([`error`]): how a hook fails.
//! - [`testing::HookHarness`]: run hooks in a unit test, without a VNFM.
//! - `runtime` (feature `runtime`): a tokio runtime for hooks that use async libraries.
//! - [`abi`] and [`protocol`]: the C ABI and the JSON messages, for hosts.
//!
//! This crate depends on `vnfm-types`, `serde`, `serde_json` and `thiserror` only (plus
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
pub use output::{HookOutput, VimToRegister};
pub use vnfm_types as types;
