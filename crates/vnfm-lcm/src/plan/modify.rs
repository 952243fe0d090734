//! MODIFY_INFO: applying a `VnfInfoModificationRequest` to an instance (JSON Merge Patch,
//! RFC 7396, on the free-form members and on `vimConnectionInfo`).

use vnfm_types::{KeyValuePairs, VnfInfoModificationRequest, VnfInfoModifications, VnfInstance};

use crate::error::LcmError;

/// Applies the RFC 7396 JSON Merge Patch `patch` to the object `target` ([`json_patch::merge`]
/// on two objects): members of an object patch are merged recursively, `null` members
/// delete, anything else replaces.
pub fn merge_object(target: &mut KeyValuePairs, patch: &KeyValuePairs) {
    let mut doc = serde_json::Value::Object(std::mem::take(target));
    json_patch::merge(&mut doc, &serde_json::Value::Object(patch.clone()));
    if let serde_json::Value::Object(merged) = doc {
        *target = merged;
    }
}

fn patched(current: Option<&KeyValuePairs>, patch: &KeyValuePairs) -> KeyValuePairs {
    let mut out = current.cloned().unwrap_or_default();
    merge_object(&mut out, patch);
    out
}

/// The instance after `req`, and the `changedInfo` to record on the operation occurrence.
///
/// The instance's VNFD-derived attributes (provider, product name, versions) are not touched
/// when `vnfdId` changes: the caller fills them from the new VNFD.
pub fn apply_modifications(
    instance: &VnfInstance,
    req: &VnfInfoModificationRequest,
) -> Result<(VnfInstance, VnfInfoModifications), LcmError> {
    let mut out = instance.clone();
    let mut changed = VnfInfoModifications::default();
    if let Some(name) = &req.vnf_instance_name {
        out.vnf_instance_name = Some(name.clone());
        changed.vnf_instance_name = Some(name.clone());
    }
    if let Some(d) = &req.vnf_instance_description {
        out.vnf_instance_description = Some(d.clone());
        changed.vnf_instance_description = Some(d.clone());
    }
    if let Some(id) = &req.vnfd_id {
        out.vnfd_id = id.clone();
        changed.vnfd_id = Some(id.clone());
    }
    if let Some(p) = &req.vnf_configurable_properties {
        out.vnf_configurable_properties =
            Some(patched(instance.vnf_configurable_properties.as_ref(), p));
        changed.vnf_configurable_properties = Some(p.clone());
    }
    if let Some(p) = &req.metadata {
        out.metadata = Some(patched(instance.metadata.as_ref(), p));
        changed.metadata = Some(p.clone());
    }
    if let Some(p) = &req.extensions {
        out.extensions = Some(patched(instance.extensions.as_ref(), p));
        changed.extensions = Some(p.clone());
    }
    if let Some(vims) = &req.vim_connection_info {
        let mut map = instance.vim_connection_info.clone().unwrap_or_default();
        let mut changed_vims = indexmap::IndexMap::new();
        for (k, v) in vims {
            match v {
                Some(info) => {
                    map.insert(k.clone(), info.clone());
                    changed_vims.insert(k.clone(), info.clone());
                }
                None => {
                    map.shift_remove(k);
                }
            }
        }
        out.vim_connection_info = Some(map);
        changed.vim_connection_info = Some(changed_vims);
    }
    if let Some(mods) = &req.vnfc_info_modifications {
        let infos = out
            .instantiated_vnf_info
            .as_mut()
            .and_then(|i| i.vnfc_info.as_mut());
        let Some(infos) = infos else {
            return Err(LcmError::invalid(
                "/vnfcInfoModifications",
                "the instance has no VNFCs to modify",
            ));
        };
        for (i, m) in mods.iter().enumerate() {
            let Some(info) = infos.iter_mut().find(|v| v.id == m.id) else {
                return Err(LcmError::UnknownVnfc {
                    pointer: format!("/vnfcInfoModifications/{i}/id"),
                    id: m.id.clone(),
                    known: infos.iter().map(|v| v.id.clone()).collect(),
                });
            };
            info.vnfc_configurable_properties = Some(patched(
                info.vnfc_configurable_properties.as_ref(),
                &m.vnfc_configurable_properties,
            ));
        }
        changed.vnfc_info_modifications = Some(mods.clone());
    }
    Ok((out, changed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_object_follows_rfc7396_examples() {
        // RFC 7396 appendix A, a selection.
        let cases = [
            (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
            (
                json!({"a": "b"}),
                json!({"b": "c"}),
                json!({"a": "b", "b": "c"}),
            ),
            (json!({"a": "b"}), json!({"a": null}), json!({})),
            (
                json!({"a": {"b": "c"}}),
                json!({"a": {"b": "d", "c": null}}),
                json!({"a": {"b": "d"}}),
            ),
            (
                json!({"a": [{"b": "c"}]}),
                json!({"a": [1]}),
                json!({"a": [1]}),
            ),
            (json!(["a", "b"]), json!({"a": "c"}), json!({"a": "c"})),
            (
                json!({"e": null}),
                json!({"a": 1}),
                json!({"e": null, "a": 1}),
            ),
            (
                json!({}),
                json!({"a": {"bb": {"ccc": null}}}),
                json!({"a": {"bb": {}}}),
            ),
        ];
        for (target, patch, want) in cases {
            let mut t = target.as_object().cloned().unwrap_or_default();
            merge_object(&mut t, patch.as_object().unwrap());
            assert_eq!(serde_json::Value::Object(t), want, "{target} + {patch}");
        }
    }
}
