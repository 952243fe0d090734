//! What a hook returns: [`HookOutput`], re-exported from `vnfm-plugin-abi`.
//!
//! Build it with [`HookOutput::none`] and its `with_*` / `register_vim` / `deregister_vim` /
//! `report_alarm` methods. A VIM the hook created is a [`VimToRegister`] whose `info` is a
//! [`VimConnection`] (the SOL003 `VimConnectionInfo` fields, as a wire struct). A fault the
//! hook observed is an [`AlarmReport`]: the VNFM raises it as an alarm of the instance, or
//! clears that alarm when its severity is `CLEARED`; `with_indicator` sets a VNF indicator
//! value. An alarm or value the VNFM cannot take does not fail the hook: it becomes a
//! warning of the operation occurrence.

pub use vnfm_plugin_abi::output::{AlarmReport, HookOutput, KeyValuePairs, VimToRegister};
pub use vnfm_plugin_abi::vim::VimConnection;
