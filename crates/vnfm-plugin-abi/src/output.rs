//! What a hook returns: [`HookOutput`], with the VIMs to register ([`VimToRegister`]).
//!
//! Everything defaults to "no change", and empty parts are left out of the JSON. The host
//! converts it into the lifecycle core's own types field by field.

use std::collections::BTreeMap;

use crate::vim::VimConnection;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A JSON object (SOL `KeyValuePairs`).
pub type KeyValuePairs = serde_json::Map<String, Value>;

/// A VIM the hook created (a Kubernetes cluster it built), for the VNFM to register with its
/// secrets encrypted. `Debug` leaves out `accessInfo` values.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VimToRegister {
    /// Name to register the VIM under.
    pub name: String,
    /// Key under which the VNFM adds a reference to the registered VIM to the instance's
    /// `vimConnectionInfo` (not added when `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_id: Option<String>,
    /// Type, interface info and access info (with secrets).
    pub info: VimConnection,
}

impl std::fmt::Debug for VimToRegister {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys: Option<Vec<&String>> = self.info.access_info.as_ref().map(|a| a.keys().collect());
        f.debug_struct("VimToRegister")
            .field("name", &self.name)
            .field("connection_id", &self.connection_id)
            .field("vim_type", &self.info.vim_type)
            .field("interface_info", &self.info.interface_info)
            .field("access_info_keys", &keys)
            .finish()
    }
}

/// The changes a hook asks for. Everything defaults to "no change".
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookOutput {
    /// VIM connections to add to (or replace in) the instance's `vimConnectionInfo`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub vim_connection_info_add: BTreeMap<String, VimConnection>,
    /// Keys to remove from the instance's `vimConnectionInfo`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vim_connection_info_remove: Vec<String>,
    /// JSON Merge Patch (RFC 7396) for the instance's `metadata`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<KeyValuePairs>,
    /// JSON Merge Patch for the instance's `extensions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<KeyValuePairs>,
    /// VIMs to register.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vims_to_register: Vec<VimToRegister>,
    /// Ids (`vimId`) of VIMs registered by an earlier hook, to deregister.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vims_to_deregister: Vec<String>,
    /// Data to keep with the operation occurrence and hand to later hook calls of it
    /// (retries included); `None` keeps what was there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_handling_data: Option<Value>,
}

impl HookOutput {
    /// No change.
    pub fn none() -> Self {
        Self::default()
    }

    /// Whether the output asks for no change.
    pub fn is_empty(&self) -> bool {
        *self == HookOutput::default()
    }

    /// Adds `key: value` to the metadata merge patch.
    pub fn with_metadata(mut self, key: impl Into<String>, value: Value) -> Self {
        self.metadata
            .get_or_insert_with(KeyValuePairs::new)
            .insert(key.into(), value);
        self
    }

    /// Adds `key: value` to the extensions merge patch.
    pub fn with_extension(mut self, key: impl Into<String>, value: Value) -> Self {
        self.extensions
            .get_or_insert_with(KeyValuePairs::new)
            .insert(key.into(), value);
        self
    }

    /// Asks the VNFM to register `vim`.
    pub fn register_vim(mut self, vim: VimToRegister) -> Self {
        self.vims_to_register.push(vim);
        self
    }

    /// Asks the VNFM to deregister the VIM with id `vim_id`.
    pub fn deregister_vim(mut self, vim_id: impl Into<String>) -> Self {
        self.vims_to_deregister.push(vim_id.into());
        self
    }

    /// Sets the error handling data to keep.
    pub fn with_error_handling_data(mut self, data: Value) -> Self {
        self.error_handling_data = Some(data);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn empty_output_is_an_empty_object_and_builders_fill_it() {
        assert_eq!(serde_json::to_value(HookOutput::none()).unwrap(), json!({}));
        assert!(HookOutput::none().is_empty());
        let out = HookOutput::none()
            .with_metadata("a", json!(1))
            .with_extension("b", json!(2))
            .deregister_vim("vim-9")
            .with_error_handling_data(json!({"step": 3}))
            .register_vim(VimToRegister {
                name: "cluster".into(),
                connection_id: Some("k8s".into()),
                info: VimConnection {
                    vim_type: "ETSINFV.KUBERNETES.V_1".into(),
                    access_info: Some(
                        json!({"bearer_token": "tok-secret"})
                            .as_object()
                            .cloned()
                            .unwrap(),
                    ),
                    ..VimConnection::default()
                },
            });
        assert!(!out.is_empty());
        let v = serde_json::to_value(&out).unwrap();
        assert_eq!(v["metadata"], json!({"a": 1}));
        assert_eq!(v["extensions"], json!({"b": 2}));
        assert_eq!(v["vimsToDeregister"], json!(["vim-9"]));
        assert_eq!(v["errorHandlingData"], json!({"step": 3}));
        assert_eq!(v["vimsToRegister"][0]["connectionId"], "k8s");
        assert_eq!(
            v["vimsToRegister"][0]["info"]["accessInfo"]["bearer_token"],
            "tok-secret"
        );
        let back: HookOutput = serde_json::from_value(v).unwrap();
        assert_eq!(back, out);
        assert!(!format!("{out:?}").contains("tok-secret"));
    }
}
