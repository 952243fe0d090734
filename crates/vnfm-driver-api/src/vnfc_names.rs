//! The instance `metadata` member that names VNFCs, `VDU_VNFc_mapping`: per VDU, the
//! `vnfcInfo` ids of its VNFCs in the order of their index (`{"VDU1": ["a-001", "a-010"]}`),
//! as OpenStack Tacker reads it for VNFCs made one resource each (`VDU1-0`, `VDU1-1`, its
//! `StandardUserData`). A driver that makes such VNFCs names them from it ([`of`]); the API
//! refuses a mapping that could not name them ([`check`]) when an instance is created or
//! modified, as Tacker does at creation.
//!
//! ```
//! use serde_json::json;
//! use vnfm_driver_api::vnfc_names::check;
//!
//! assert!(check(&json!({"VDU1": ["a-001", "a-010"], "VDU2": ["b-001"]})).is_ok());
//! let e = check(&json!({"VDU1": ["a-001"], "VDU2": ["a-001"]})).unwrap_err();
//! assert_eq!(e.pointer, "/VDU2/0");
//! ```

use std::collections::BTreeMap;

use serde_json::Value;
use vnfm_types::VnfInstance;

/// The member of an instance's `metadata` that names its VNFCs.
pub const METADATA_KEY: &str = "VDU_VNFc_mapping";

/// The `vnfcInfo` ids `instance`'s metadata gives its VNFCs, if any.
pub fn of(instance: &VnfInstance) -> Option<&Value> {
    instance.metadata.as_ref()?.get(METADATA_KEY)
}

/// Why a `VDU_VNFc_mapping` cannot name VNFCs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidVnfcNames {
    /// Where, as a JSON pointer inside the mapping (`/VDU1/0`; empty for the mapping itself).
    pub pointer: String,
    /// What is wrong and what to do.
    pub detail: String,
}

/// Checks a `VDU_VNFc_mapping` value: an object whose members are arrays of non-empty
/// strings (SOL003's IdentifierInVnf), no id given twice, in one VDU or across VDUs (a
/// `vnfcInfo` id names one VNFC of the instance).
pub fn check(mapping: &Value) -> Result<(), InvalidVnfcNames> {
    let invalid = |pointer: String, detail: String| InvalidVnfcNames { pointer, detail };
    let Some(vdus) = mapping.as_object() else {
        return Err(invalid(
            String::new(),
            format!("{METADATA_KEY} must be an object of VDU ids to arrays of vnfcInfo ids"),
        ));
    };
    let mut seen: BTreeMap<&str, String> = BTreeMap::new();
    for (vdu, ids) in vdus {
        let at = format!("/{}", escape(vdu));
        let Some(ids) = ids.as_array() else {
            return Err(invalid(
                at,
                format!("{METADATA_KEY}.{vdu} must be an array of vnfcInfo ids"),
            ));
        };
        for (i, id) in ids.iter().enumerate() {
            let here = format!("{at}/{i}");
            let Some(id) = id.as_str().filter(|s| !s.is_empty()) else {
                return Err(invalid(
                    here,
                    format!("{METADATA_KEY}.{vdu}[{i}] must be a non-empty string (a vnfcInfo id)"),
                ));
            };
            if let Some(first) = seen.insert(id, here.clone()) {
                return Err(invalid(
                    here,
                    format!(
                        "duplicated vnfcInfo id {id:?} in {METADATA_KEY} (also at {first}): each id names one VNFC"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// `s` as one JSON pointer reference token (RFC 6901).
fn escape(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn duplicates_in_one_vdu_or_across_vdus_are_refused_where_they_repeat() {
        let e = check(&json!({"VDU1": ["a", "b", "a"]})).unwrap_err();
        assert_eq!(e.pointer, "/VDU1/2");
        assert!(
            e.detail.contains("\"a\"") && e.detail.contains("/VDU1/0"),
            "{e:?}"
        );
        let e = check(&json!({"VDU1": ["a"], "VDU2": ["b", "a"]})).unwrap_err();
        assert_eq!(e.pointer, "/VDU2/1");
    }

    #[test]
    fn shapes_other_than_arrays_of_ids_are_refused() {
        assert_eq!(check(&json!(["a"])).unwrap_err().pointer, "");
        assert_eq!(check(&json!({"a/b": "x"})).unwrap_err().pointer, "/a~1b");
        assert_eq!(
            check(&json!({"VDU1": [""]})).unwrap_err().pointer,
            "/VDU1/0"
        );
        assert_eq!(check(&json!({"VDU1": [1]})).unwrap_err().pointer, "/VDU1/0");
        assert!(check(&json!({})).is_ok());
        assert!(check(&json!({"VDU1": []})).is_ok());
    }
}
