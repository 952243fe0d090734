//! What the `vnfm` binary's integration tests share.

use std::process::Child;

/// A `vnfm serve` process started by a test; killed when dropped.
pub struct Server {
    /// The process.
    pub child: Child,
    /// The address it printed (`http://127.0.0.1:PORT`).
    pub base: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
