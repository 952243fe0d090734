//! [`VimConnection`]: a VIM connection as it crosses the boundary.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A VIM connection (the fields of SOL003 `VimConnectionInfo`), with its credentials.
///
/// The JSON form is the SOL003 one (`vimId`, `vimType`, `interfaceInfo`, `accessInfo`,
/// `extra`), so a plugin that wants the VNFM's SOL type can convert with `serde_json`. `Debug`
/// shows the keys of `accessInfo`, never its values.
#[derive(Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VimConnection {
    /// Identifier of the VIM, as known to the VNFM or the NFVO.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vim_id: Option<String>,
    /// Type of the VIM, e.g. `ETSINFV.OPENSTACK_KEYSTONE.V_3` or `ETSINFV.KUBERNETES.V_1`.
    pub vim_type: String,
    /// Information about the VIM's interface (e.g. `endpoint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface_info: Option<Map<String, Value>>,
    /// Authentication credentials (secrets: never log them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_info: Option<Map<String, Value>>,
    /// VIM-type specific additional information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Map<String, Value>>,
}

impl std::fmt::Debug for VimConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys: Option<Vec<&String>> = self.access_info.as_ref().map(|a| a.keys().collect());
        f.debug_struct("VimConnection")
            .field("vim_id", &self.vim_id)
            .field("vim_type", &self.vim_type)
            .field("interface_info", &self.interface_info)
            .field("access_info_keys", &keys)
            .field("extra", &self.extra)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sol_json_form_and_debug_without_secrets() {
        let v = json!({
            "vimId": "vim-1", "vimType": "ETSINFV.KUBERNETES.V_1",
            "interfaceInfo": {"endpoint": "https://k8s:6443"},
            "accessInfo": {"bearer_token": "s3cr3t-token"}
        });
        let c: VimConnection = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(c.vim_id.as_deref(), Some("vim-1"));
        assert_eq!(serde_json::to_value(&c).unwrap(), v);
        let dbg = format!("{c:?}");
        assert!(!dbg.contains("s3cr3t-token"), "{dbg}");
        assert!(dbg.contains("bearer_token"), "{dbg}");
    }
}
