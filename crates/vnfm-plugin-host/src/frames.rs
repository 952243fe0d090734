//! The stdio protocol between the host and an isolated runner process.
//!
//! One JSON object per line. The runner writes its frames to stdout, each on a line of its
//! own that starts with [`MARKER`], so that whatever a plugin prints to stdout itself is told
//! apart (and logged) instead of breaking the protocol. The host writes plain JSON lines to
//! the runner's stdin.
//!
//! ```text
//! runner -> host   ready{hello} | failed{error}       after loading the library
//! host -> runner   call{request}                      one hook request (protocol::Request)
//! runner -> host   read{id,path} | log{level,message}  while the hook runs
//! host -> runner   file{id,status,data} | cancel
//! runner -> host   response{response}                 the plugin's protocol::Response
//! ```

use serde::{Deserialize, Serialize};
use vnfm_plugin_abi::protocol::{PluginHello, Request, Response, WireError};

/// Prefix of every runner frame line on stdout.
pub const MARKER: &str = "\u{1e}vnfm-plugin ";

/// A frame the runner sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "camelCase")]
pub enum RunnerFrame {
    /// The library loaded and answered the handshake.
    Ready {
        /// The plugin's handshake answer.
        hello: PluginHello,
    },
    /// The library could not be loaded or refused the handshake.
    Failed {
        /// Why.
        error: WireError,
    },
    /// The plugin reads a package file.
    Read {
        /// Request id, echoed in the answer.
        id: u64,
        /// Package-relative path.
        path: String,
    },
    /// The plugin logs a line.
    Log {
        /// One of `vnfm_plugin_abi::level`.
        level: u32,
        /// The text.
        message: String,
    },
    /// The plugin's answer to the call.
    Response {
        /// The answer.
        response: Response,
    },
}

/// A frame the host sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "camelCase")]
pub enum HostFrame {
    /// Run this request.
    Call {
        /// The request.
        request: Request,
    },
    /// The answer to a `read`.
    File {
        /// The id of the `read`.
        id: u64,
        /// `vnfm_plugin_abi::ffi::READ_*`.
        status: i32,
        /// The file (base64), or the error message (base64 of its UTF-8).
        data: String,
    },
    /// The call is cancelled (deadline or occurrence cancelled): stop at the next check.
    Cancel,
}

/// `frame` as one runner output line (with the marker and a trailing newline). The line
/// starts with a newline too, which ends any partial line a plugin left on stdout.
pub fn runner_line(frame: &RunnerFrame) -> String {
    // Frames hold only JSON-compatible data; an empty line would be reported by the host as
    // a protocol error.
    let json = serde_json::to_string(frame).unwrap_or_default();
    format!("\n{MARKER}{json}\n")
}

/// The frame on a runner output line, `None` for lines that are not frames (plugin output).
pub fn parse_runner_line(line: &str) -> Option<Result<RunnerFrame, serde_json::Error>> {
    line.strip_prefix(MARKER).map(serde_json::from_str)
}
