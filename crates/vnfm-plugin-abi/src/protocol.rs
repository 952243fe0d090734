//! The messages carried by [`PluginHeader::call`](crate::ffi::PluginHeader::call), as JSON.
//!
//! The host sends a [`Request`]; the plugin answers with a [`Response`]. The first request is
//! [`Request::Hello`], answered by [`Response::Hello`]; every later one is a
//! [`Request::Hook`]. A plugin whose handshake says [`PluginHello::observes`] also gets
//! [`Request::Hook`]s for [`OBSERVE_HOOK`], outside any operation: the VNFM asks it, every
//! sweep of its infrastructure watch, what it sees of an instantiated instance, and raises or
//! clears the alarms (and sets the indicator values) of its answer. Unknown fields are ignored on both sides, so an optional field may be
//! added without a new ABI version (see the crate docs for the rule). The isolated runner
//! forwards the same messages over a pipe, unchanged.

use std::collections::BTreeMap;

use crate::output::HookOutput;
use crate::vim::VimConnection;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The `hook` of the request that asks an observing plugin ([`PluginHello::observes`]) about an
/// instance outside any operation. Its `opOccId` and `lcmOperation` are empty and its
/// `request` is `null`; the answer's `alarms` and `indicatorValues` are applied as after a
/// hook, and its other members are ignored.
pub const OBSERVE_HOOK: &str = "vnfm_observe";

/// A message from the host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Request {
    /// The handshake: the host's versions.
    Hello(HostHello),
    /// Run one hook.
    Hook(Box<HookRequest>),
}

/// The host's side of the handshake.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HostHello {
    /// The host's [`ABI_VERSION`](crate::ABI_VERSION).
    pub abi_version: u32,
    /// What the host is (for the plugin's logs), e.g. `vnfm 0.1.0`.
    pub host: String,
}

/// The plugin's side of the handshake.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginHello {
    /// The plugin's ABI version.
    pub abi_version: u32,
    /// The version of the SDK the plugin was built with (informational).
    pub sdk_version: String,
    /// The plugin's name.
    pub name: String,
    /// The plugin's version.
    pub version: String,
    /// Whether the plugin answers [`OBSERVE_HOOK`] requests (absent: it does not; plugins of
    /// SDKs before this field never get them).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub observes: bool,
}

/// The artifact a hook is bound to in the VNFD.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactRef {
    /// Artifact name in the VNFD.
    pub name: String,
    /// Package-relative path of the library.
    pub file: String,
    /// The artifact's type.
    #[serde(default)]
    pub artifact_type: String,
    /// Hex SHA-256 of the file, when the VNFD or the package gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// One hook call.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookRequest {
    /// The hook, e.g. `instantiate_end`: one of the SOL001 `Vnflcm` hooks, snake case.
    pub hook: String,
    /// The LCM operation, e.g. `INSTANTIATE`.
    pub lcm_operation: String,
    /// The operation occurrence.
    pub op_occ_id: String,
    /// The artifact the hook is bound to.
    pub artifact: ArtifactRef,
    /// The hook's `inputs` from the VNFD.
    #[serde(default)]
    pub inputs: Map<String, Value>,
    /// The LCM operation's request body.
    #[serde(default)]
    pub request: Value,
    /// The VNF instance (`VnfInstance`, SOL003 v3.3.1 JSON).
    #[serde(default)]
    pub instance: Value,
    /// The VNFD in the VNFM's normalized form (JSON).
    #[serde(default)]
    pub vnfd: Value,
    /// The deployment flavour.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flavour_id: Option<String>,
    /// The instance's VIM connections, with their credentials.
    #[serde(default)]
    pub vim_connection_info: BTreeMap<String, VimConnection>,
    /// Milliseconds left before the hook's deadline when the host sent the request.
    pub deadline_ms: u64,
    /// What an earlier attempt of the same occurrence returned as error handling data
    /// (`null` on the first attempt).
    #[serde(default)]
    pub error_handling_data: Value,
    /// The W3C trace context of the hook's span (`00-<trace id>-<span id>-<flags>`) when the
    /// VNFM exports traces: a plugin that calls out (or records spans of its own) continues
    /// the operation's trace with it. Absent otherwise, and from hosts that predate it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

impl std::fmt::Debug for HookRequest {
    // Leaves out the request, the instance and the VIMs: they may hold credentials.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookRequest")
            .field("hook", &self.hook)
            .field("lcm_operation", &self.lcm_operation)
            .field("op_occ_id", &self.op_occ_id)
            .field("artifact", &self.artifact)
            .field("flavour_id", &self.flavour_id)
            .field("deadline_ms", &self.deadline_ms)
            .finish_non_exhaustive()
    }
}

/// A message from the plugin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Response {
    /// Answer to [`Request::Hello`].
    Hello(PluginHello),
    /// A hook succeeded.
    Hook(Box<HookOutput>),
    /// The request failed.
    Error(WireError),
}

/// A failure, as it crosses the boundary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireError {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// What failed, without secrets.
    pub message: String,
}

/// Kinds of [`WireError`]; they map onto the VNFM's driver errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ErrorKind {
    /// May succeed when retried.
    Transient,
    /// Will not succeed when retried.
    Permanent,
    /// The request, VNFD or instance cannot be processed.
    InvalidInput,
    /// The hook gave up at its deadline.
    Timeout,
    /// The hook stopped because the occurrence was cancelled.
    Cancelled,
    /// The hook panicked (caught inside the plugin).
    Panic,
    /// A message could not be read or written.
    Protocol,
    /// A kind this side does not know (sent by a newer peer).
    #[serde(other)]
    Unknown,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_are_tagged_camel_case() {
        let r = Request::Hello(HostHello {
            abi_version: 2,
            host: "test".into(),
        });
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v, json!({"type": "hello", "abiVersion": 2, "host": "test"}));
        // A v1 host's hello (with its SDK version) still reads.
        let old: Request = serde_json::from_value(
            json!({"type": "hello", "abiVersion": 1, "sdkVersion": "0.1.0", "host": "old"}),
        )
        .unwrap();
        assert!(matches!(
            old,
            Request::Hello(HostHello { abi_version: 1, .. })
        ));
        let e: Response = serde_json::from_value(
            json!({"type": "error", "kind": "fromTheFuture", "message": "m"}),
        )
        .unwrap();
        assert_eq!(
            e,
            Response::Error(WireError {
                kind: ErrorKind::Unknown,
                message: "m".into()
            })
        );
        let h: Response = serde_json::from_value(json!({"type": "hook", "newField": 1})).unwrap();
        assert_eq!(h, Response::Hook(Box::default()));
    }

    #[test]
    fn observing_is_an_optional_part_of_the_handshake() {
        // A plugin of an SDK before `observes` does not observe.
        let old: PluginHello = serde_json::from_value(
            json!({"abiVersion": 2, "sdkVersion": "0.1.0", "name": "p", "version": "1"}),
        )
        .unwrap();
        assert!(!old.observes);
        assert!(
            serde_json::to_value(&old)
                .unwrap()
                .get("observes")
                .is_none()
        );
        let new = PluginHello {
            observes: true,
            ..old
        };
        assert_eq!(serde_json::to_value(&new).unwrap()["observes"], true);
    }

    #[test]
    fn hook_request_reads_with_defaults_and_hides_secrets_in_debug() {
        let r: Request = serde_json::from_value(json!({
            "type": "hook", "hook": "instantiate_end", "lcmOperation": "INSTANTIATE",
            "opOccId": "op-1", "artifact": {"name": "mgmt", "file": "Plugins/p.so"},
            "deadlineMs": 5000,
            "vimConnectionInfo": {"vim1": {"vimType": "kubernetes",
                "accessInfo": {"password": "pw-secret"}}},
            "request": {"additionalParams": {"token": "req-secret"}}
        }))
        .unwrap();
        let Request::Hook(h) = r else {
            panic!("not a hook request")
        };
        assert_eq!(h.deadline_ms, 5000);
        assert_eq!(h.instance, Value::Null);
        assert_eq!(h.error_handling_data, Value::Null);
        assert_eq!(h.artifact.artifact_type, "");
        assert_eq!(h.vim_connection_info["vim1"].vim_type, "kubernetes");
        let dbg = format!("{h:?}");
        assert!(
            !dbg.contains("pw-secret") && !dbg.contains("req-secret"),
            "{dbg}"
        );
    }
}
