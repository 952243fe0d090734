//! The plugin's own async runtime (feature `runtime`).
//!
//! Hooks are synchronous methods that run on a thread of their own; a hook that uses async
//! libraries (SSH, HTTP clients) runs its futures with [`block_on`]. The runtime is a tokio
//! multi-thread runtime built on first use and kept for the life of the process (plugin
//! libraries are never unloaded). It is separate from the VNFM's runtime: the plugin has its
//! own copy of tokio.
//!
//! Do not call [`block_on`] from inside an async context (for example a `#[tokio::test]`):
//! tokio refuses to nest runtimes. Test hooks with plain `#[test]` functions and
//! [`crate::testing::HookHarness`].

use std::future::Future;
use std::sync::OnceLock;

use crate::PluginError;

fn runtime() -> Result<&'static tokio::runtime::Runtime, PluginError> {
    // The build error is kept as it is; it reaches the host as plain data (the ABI's error
    // shape has no cause chain), so only its message crosses.
    static RT: OnceLock<std::io::Result<tokio::runtime::Runtime>> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("vnfm-plugin-rt")
            .enable_all()
            .build()
    })
    .as_ref()
    .map_err(|e| PluginError::permanent(format!("the plugin's async runtime cannot start: {e}")))
}

/// Runs `fut` to completion on the plugin's runtime.
pub fn block_on<F: Future>(fut: F) -> Result<F::Output, PluginError> {
    Ok(runtime()?.block_on(fut))
}

/// A handle to the plugin's runtime, to spawn tasks.
pub fn handle() -> Result<tokio::runtime::Handle, PluginError> {
    Ok(runtime()?.handle().clone())
}
