//! What a hook returns: [`HookOutput`], with the VIMs to register ([`VimToRegister`]), the
//! faults it observed ([`AlarmReport`]) and VNF indicator values.
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
    /// Faults of the instance the hook observed, to raise as alarms (or clear).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alarms: Vec<AlarmReport>,
    /// New values of the instance's VNF indicators, by indicator id (ids its VNFD declares).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub indicator_values: BTreeMap<String, Value>,
}

/// A fault of the VNF instance a hook observed, in SOL003 alarm terms: the VNFM raises it as
/// an alarm (one open alarm per VNFC, fault type and probable cause; raising it again updates
/// that alarm), or clears that alarm when `perceivedSeverity` is `CLEARED`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AlarmReport {
    /// The VNFC instance concerned, if the fault is of one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfc_instance_id: Option<String>,
    /// The type of fault.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault_type: Option<String>,
    /// The probable cause (with the VNFC and fault type, what identifies the fault).
    pub probable_cause: String,
    /// `CRITICAL`, `MAJOR`, `MINOR`, `WARNING`, `INDETERMINATE`, or `CLEARED` to clear.
    pub perceived_severity: String,
    /// `COMMUNICATIONS_ALARM`, `PROCESSING_ERROR_ALARM`, `ENVIRONMENTAL_ALARM`, `QOS_ALARM`
    /// or `EQUIPMENT_ALARM`.
    pub event_type: String,
    /// Free-text details.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fault_details: Vec<String>,
}

impl AlarmReport {
    /// A fault of `probable_cause` with `perceived_severity` and `event_type`.
    pub fn new(
        probable_cause: impl Into<String>,
        perceived_severity: impl Into<String>,
        event_type: impl Into<String>,
    ) -> Self {
        AlarmReport {
            vnfc_instance_id: None,
            fault_type: None,
            probable_cause: probable_cause.into(),
            perceived_severity: perceived_severity.into(),
            event_type: event_type.into(),
            fault_details: Vec::new(),
        }
    }

    /// The same, of VNFC `vnfc_instance_id`.
    pub fn of_vnfc(mut self, vnfc_instance_id: impl Into<String>) -> Self {
        self.vnfc_instance_id = Some(vnfc_instance_id.into());
        self
    }

    /// The same, of fault type `fault_type`.
    pub fn of_type(mut self, fault_type: impl Into<String>) -> Self {
        self.fault_type = Some(fault_type.into());
        self
    }

    /// The same fault, cleared (severity `CLEARED`): its open alarm is cleared.
    pub fn cleared(mut self) -> Self {
        self.perceived_severity = "CLEARED".into();
        self
    }
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

    /// Reports a fault to raise as an alarm, or to clear (severity `CLEARED`).
    pub fn report_alarm(mut self, alarm: AlarmReport) -> Self {
        self.alarms.push(alarm);
        self
    }

    /// Sets the value of VNF indicator `indicator_id` of the instance.
    pub fn with_indicator(mut self, indicator_id: impl Into<String>, value: Value) -> Self {
        self.indicator_values.insert(indicator_id.into(), value);
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
        let out = HookOutput::none()
            .report_alarm(
                AlarmReport::new("disk full", "MAJOR", "PROCESSING_ERROR_ALARM")
                    .of_vnfc("VDU1-0")
                    .of_type("DiskFull"),
            )
            .with_indicator("load", json!(7));
        let v = serde_json::to_value(&out).unwrap();
        assert_eq!(
            v,
            json!({"alarms": [{"vnfcInstanceId": "VDU1-0", "faultType": "DiskFull",
                               "probableCause": "disk full", "perceivedSeverity": "MAJOR",
                               "eventType": "PROCESSING_ERROR_ALARM"}],
                   "indicatorValues": {"load": 7}})
        );
        // An older plugin's output, without these members, still reads.
        let old: HookOutput = serde_json::from_value(json!({"metadata": {"a": 1}})).unwrap();
        assert!(old.alarms.is_empty() && old.indicator_values.is_empty());
        assert!(!format!("{out:?}").contains("tok-secret"));
    }
}
