//! From the script's output dict to a [`HookOutcome`], as Tacker merges it.
//!
//! Tacker rebuilds a `VnfInstanceV2` from `output['vnf_instance']` and copies every field it
//! has over the instance (`inst.__dict__.update(...)`): a field present in the output
//! replaces the instance's, a field absent is kept. It then runs
//! `user_script_err_handling_data.update(output['user_script_err_handling_data'])`.
//!
//! Here the returned instance is compared with the one the script received; a changed
//! field becomes:
//! - `vimConnectionInfo`: entries added or changed go to `vim_connection_info_add`, entries
//!   gone to `vim_connection_info_remove`;
//! - `metadata`, `extensions`, `instantiatedVnfInfo`: the JSON Merge Patch that turns the old
//!   value into the new one (an `instantiatedVnfInfo` that no longer reads as one is an error);
//! - any other field: an error ([`ScriptError::UnsupportedChange`]), since a hook outcome
//!   cannot carry it (and dropping it silently would lose what the script meant).

use serde_json::{Map, Value as Json};
use vnfm_driver_api::HookOutcome;
use vnfm_types::{InstantiatedVnfInfo, VimConnectionInfo};

use crate::ScriptError;

/// The outcome of a script whose unpickled stdout is `output` (`None`: empty stdout), given
/// the instance it received and the error-handling data it received.
pub(crate) fn outcome(
    output: Option<Json>,
    sent_instance: &Json,
    sent_data: &Map<String, Json>,
) -> Result<HookOutcome, ScriptError> {
    let mut out = HookOutcome::default();
    let output = match output {
        None | Some(Json::Null) => return Ok(out),
        Some(Json::Object(map)) => map,
        Some(_) => return Err(ScriptError::OutputShape("is not a dict".into())),
    };
    if let Some(data) = output.get("user_script_err_handling_data") {
        let Json::Object(update) = data else {
            return Err(ScriptError::OutputShape(
                "has a user_script_err_handling_data that is not a dict".into(),
            ));
        };
        out.error_handling_data = Some(Json::Object(updated(sent_data, update)));
    }
    let Some(returned) = output.get("vnf_instance") else {
        return Ok(out);
    };
    let Json::Object(returned) = returned else {
        return Err(ScriptError::OutputShape(
            "has a vnf_instance that is not a dict".into(),
        ));
    };
    let empty = Map::new();
    let sent = sent_instance.as_object().unwrap_or(&empty);
    let mut unsupported = Vec::new();
    for (field, new) in returned {
        let old = sent.get(field).unwrap_or(&Json::Null);
        if old == new {
            continue;
        }
        match field.as_str() {
            "vimConnectionInfo" => vim_changes(old, new, &mut out)?,
            "metadata" => out.metadata = Some(diff(old, new)),
            "instantiatedVnfInfo" => {
                // Taken over as Tacker does, once it is known to still be an
                // instantiatedVnfInfo.
                if let Err(e) = serde_json::from_value::<InstantiatedVnfInfo>(new.clone()) {
                    return Err(ScriptError::OutputShape(format!(
                        "has a vnf_instance.instantiatedVnfInfo that is not a SOL003 InstantiatedVnfInfo: {e}"
                    )));
                }
                out.instantiated_vnf_info = Some(diff(old, new));
            }
            "extensions" => out.extensions = Some(diff(old, new)),
            _ => unsupported.push(field.clone()),
        }
    }
    if !unsupported.is_empty() {
        return Err(ScriptError::UnsupportedChange(unsupported));
    }
    Ok(out)
}

/// The error-handling data after `output` (the data sent, updated with the output's
/// `user_script_err_handling_data` dict), when the output has one.
pub(crate) fn error_data(
    output: &Json,
    sent_data: &Map<String, Json>,
) -> Option<Map<String, Json>> {
    match output.get("user_script_err_handling_data") {
        Some(Json::Object(update)) => Some(updated(sent_data, update)),
        _ => None,
    }
}

/// Python's `dict.update`.
fn updated(base: &Map<String, Json>, update: &Map<String, Json>) -> Map<String, Json> {
    let mut merged = base.clone();
    merged.extend(update.iter().map(|(k, v)| (k.clone(), v.clone())));
    merged
}

fn vim_changes(old: &Json, new: &Json, out: &mut HookOutcome) -> Result<(), ScriptError> {
    let empty = Map::new();
    let old = old.as_object().unwrap_or(&empty);
    let new = match new {
        Json::Object(m) => m,
        Json::Null => &empty,
        _ => {
            return Err(ScriptError::OutputShape(
                "has a vnf_instance.vimConnectionInfo that is not a dict".into(),
            ));
        }
    };
    for (key, info) in new {
        if old.get(key) == Some(info) {
            continue;
        }
        let parsed: VimConnectionInfo =
            serde_json::from_value(info.clone()).map_err(|source| ScriptError::VimConnection {
                key: key.clone(),
                source,
            })?;
        out.vim_connection_info_add.insert(key.clone(), parsed);
    }
    for key in old.keys() {
        if !new.contains_key(key) {
            out.vim_connection_info_remove.push(key.clone());
        }
    }
    Ok(())
}

/// The RFC 7396 merge patch that turns `old` into `new` (both taken as objects; a value that
/// is not an object counts as empty). Limit of merge patches: a `null` inside the new value
/// cannot be expressed (it means "delete").
fn diff(old: &Json, new: &Json) -> Map<String, Json> {
    let empty = Map::new();
    let old = old.as_object().unwrap_or(&empty);
    let new = new.as_object().unwrap_or(&empty);
    let mut patch = Map::new();
    for key in old.keys() {
        if !new.contains_key(key) {
            patch.insert(key.clone(), Json::Null);
        }
    }
    for (key, value) in new {
        match (old.get(key), value) {
            (Some(o), n) if o == n => {}
            (Some(o @ Json::Object(_)), n @ Json::Object(_)) => {
                patch.insert(key.clone(), Json::Object(diff(o, n)));
            }
            _ => {
                patch.insert(key.clone(), value.clone());
            }
        }
    }
    patch
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn apply(old: &Json, patch: &Map<String, Json>) -> Json {
        let mut doc = old.clone();
        fn merge(doc: &mut Json, patch: &Json) {
            if let Json::Object(p) = patch {
                if !doc.is_object() {
                    *doc = Json::Object(Map::new());
                }
                let d = doc.as_object_mut().unwrap();
                for (k, v) in p {
                    if v.is_null() {
                        d.remove(k);
                    } else {
                        merge(d.entry(k.clone()).or_insert(Json::Null), v);
                    }
                }
            } else {
                *doc = patch.clone();
            }
        }
        merge(&mut doc, &Json::Object(patch.clone()));
        doc
    }

    #[test]
    fn diff_is_a_merge_patch_from_old_to_new() {
        let old = json!({"a": 1, "b": {"x": 1, "y": 2}, "gone": true});
        let new = json!({"a": 1, "b": {"x": 5}, "c": [1]});
        let patch = diff(&old, &new);
        assert_eq!(
            Json::Object(patch.clone()),
            json!({"gone": null, "b": {"x": 5, "y": null}, "c": [1]})
        );
        assert_eq!(apply(&old, &patch), new);
    }

    #[test]
    fn instance_fields_map_to_the_outcome_and_others_are_refused() {
        let vim = json!({"vimType": "kubernetes", "accessInfo": {"bearer_token": "t"}});
        let sent = json!({
            "id": "i1", "vimConnectionInfo": {"old": vim, "keep": vim},
            "metadata": {"a": 1}, "vnfInstanceName": "n"
        });
        let data = Map::new();
        let output = json!({"vnf_instance": {
            "id": "i1",
            "vimConnectionInfo": {"keep": vim, "new": vim},
            "metadata": {"a": 2},
            "extensions": {"e": "x"}
        }});
        let out = outcome(Some(output), &sent, &data).unwrap();
        assert_eq!(
            out.vim_connection_info_add.keys().collect::<Vec<_>>(),
            ["new"]
        );
        assert_eq!(out.vim_connection_info_remove, ["old"]);
        assert_eq!(Json::Object(out.metadata.unwrap()), json!({"a": 2}));
        assert_eq!(Json::Object(out.extensions.unwrap()), json!({"e": "x"}));
        assert_eq!(out.error_handling_data, None);

        let output = json!({"vnf_instance": {"vnfInstanceName": "m", "vnfdId": "d2"}});
        let err = outcome(Some(output), &sent, &data).unwrap_err().to_string();
        assert!(err.contains("vnfInstanceName, vnfdId"), "{err}");
        let output = json!({"vnf_instance": {"vimConnectionInfo": {"x": {"bogus": 1}}}});
        assert!(matches!(
            outcome(Some(output), &sent, &data),
            Err(ScriptError::VimConnection { .. })
        ));
    }

    /// Tacker takes a script's instantiatedVnfInfo over (a container update replaces VNFCs).
    #[test]
    fn a_changed_instantiated_vnf_info_is_a_patch_and_must_stay_one() {
        let vnfc = |id: &str| {
            json!({"id": id, "vduId": "VDU1",
                   "computeResource": {"resourceId": id, "vimLevelResourceType": "Deployment"}})
        };
        let info = |pods: &[&str]| {
            json!({"flavourId": "simple", "vnfState": "STARTED",
                   "vnfcResourceInfo": pods.iter().map(|p| vnfc(p)).collect::<Vec<_>>(),
                   "metadata": {"namespace": "default", "driverState": {"v": 1}}})
        };
        let sent = json!({"id": "i1", "instantiatedVnfInfo": info(&["vdu1-a"])});
        let data = Map::new();
        let output =
            json!({"vnf_instance": {"id": "i1", "instantiatedVnfInfo": info(&["vdu1-b"])}});
        let out = outcome(Some(output), &sent, &data).unwrap();
        let patch = Json::Object(out.instantiated_vnf_info.unwrap());
        assert_eq!(patch, json!({"vnfcResourceInfo": [vnfc("vdu1-b")]}));

        let output = json!({"vnf_instance": {"instantiatedVnfInfo": {"vnfcResourceInfo": 3}}});
        let err = outcome(Some(output), &sent, &data).unwrap_err();
        assert!(matches!(err, ScriptError::OutputShape(_)), "{err}");
        assert!(err.to_string().contains("instantiatedVnfInfo"), "{err}");
    }

    #[test]
    fn error_handling_data_is_updated_like_a_python_dict() {
        let sent: Map<String, Json> = json!({"a": 1, "b": 2}).as_object().unwrap().clone();
        let out = outcome(
            Some(json!({"user_script_err_handling_data": {"b": 3, "c": 4}})),
            &json!({}),
            &sent,
        )
        .unwrap();
        assert_eq!(
            out.error_handling_data,
            Some(json!({"a": 1, "b": 3, "c": 4}))
        );
        assert!(outcome(None, &json!({}), &sent).unwrap().is_noop());
        assert!(
            outcome(Some(Json::Null), &json!({}), &sent)
                .unwrap()
                .is_noop()
        );
        assert!(matches!(
            outcome(Some(json!([1])), &json!({}), &sent),
            Err(ScriptError::OutputShape(_))
        ));
    }
}
