//! What a hook returns: [`HookOutput`], re-exported from `vnfm-plugin-abi`.
//!
//! Build it with [`HookOutput::none`] and its `with_*` / `register_vim` / `deregister_vim`
//! methods. A VIM the hook created is a [`VimToRegister`] whose `info` is a
//! [`VimConnection`] (the SOL003 `VimConnectionInfo` fields, as a wire struct).

pub use vnfm_plugin_abi::output::{HookOutput, KeyValuePairs, VimToRegister};
pub use vnfm_plugin_abi::vim::VimConnection;
