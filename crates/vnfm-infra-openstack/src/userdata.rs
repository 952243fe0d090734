//! Tacker's user data classes (`lcm-operation-user-data`, `lcm-operation-user-data-class` in
//! a request's `additionalParams`): which template and `nfv` convention a stack follows.
//!
//! Tacker runs a Python class that turns the BaseHOT into the stack's template and parameters.
//! The driver builds what Tacker's two shipped classes build itself, and runs any other class
//! through a [`vnfm_driver_api::UserDataScripts`] when it was given one:
//!
//! - [`UserData::Default`] (`userdata_default.py`, `DefaultUserData`, also when the request
//!   names none): the BaseHOT as it is, [`crate::hot::build_nfv`].
//! - [`UserData::Standard`] (`userdata_standard.py`, `StandardUserData`): the top template's
//!   resource named after a VDU (`VDU1: {type: VDU1.yaml}`) stands for one VNFC; it is copied
//!   once per VNFC as `VDU1-0`, `VDU1-1`, ... ([`expand`]), and in each copy the third element
//!   of every `get_param` of its properties gets the index (`[nfv, CP, VDU1_CP1, network]`
//!   becomes `[nfv, CP, VDU1_CP1-0, network]`). The `nfv` entries of `VDU1-0` are those of
//!   `VDU1` ([`nfv`]). A scale out adds the lowest unused indexes, a scale in removes the
//!   highest ones (Tacker removes the newest VNFC, which has the highest index)
//!   ([`next_indexes`]).
//! - [`UserData::Script`]: any other class, the package's own: the driver calls its method
//!   for the operation and applies the stack fields it returns as Tacker does (module
//!   `driver::scripted`).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::OpenStackError;
use crate::hot::{self, NfvInputs, Seg};

/// `additionalParams` key naming the user data file.
pub const USER_DATA_FILE: &str = "lcm-operation-user-data";
/// `additionalParams` key naming the user data class.
pub const USER_DATA_CLASS: &str = "lcm-operation-user-data-class";

/// The template and `nfv` convention of a stack.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum UserData {
    /// Tacker's `DefaultUserData`: the BaseHOT as it is.
    #[default]
    Default,
    /// Tacker's `StandardUserData`: one top-level resource per VNFC.
    Standard,
    /// A class of the package, run through the driver's
    /// [`vnfm_driver_api::UserDataScripts`].
    #[serde(rename_all = "camelCase")]
    Script {
        /// The file, as the request names it (`./UserData/userdata.py`).
        file: String,
        /// The class (`UserData`).
        class: String,
    },
}

impl UserData {
    /// The convention `params` (a request's `additionalParams`) name: `None` when they name
    /// none. Tacker's standard and default classes are known by file name (any directory,
    /// whether or not the package carries the file) and class name; any other class is a
    /// [`UserData::Script`]. Only one of the two keys (Tacker needs both), or a key that is
    /// not a string, is refused.
    pub fn from_params(
        params: Option<&Map<String, Value>>,
    ) -> Result<Option<Self>, OpenStackError> {
        let get = |k| params.and_then(|p| p.get(k));
        let (file, class) = (get(USER_DATA_FILE), get(USER_DATA_CLASS));
        if file.is_none() && class.is_none() {
            return Ok(None);
        }
        let (Some(Value::String(file)), Some(Value::String(class))) = (file, class) else {
            return Err(OpenStackError::Input(format!(
                "additionalParams must name both `{USER_DATA_FILE}` and `{USER_DATA_CLASS}` as strings (as Tacker requires), e.g. \"./UserData/userdata_standard.py\" and \"StandardUserData\""
            )));
        };
        let name = file.rsplit('/').next().unwrap_or(file);
        Ok(Some(match (name, class.as_str()) {
            ("userdata_standard.py", "StandardUserData") => UserData::Standard,
            ("userdata_default.py", "DefaultUserData") => UserData::Default,
            _ => UserData::Script {
                file: file.clone(),
                class: class.clone(),
            },
        }))
    }

    /// `self`, or the refusal of a [`UserData::Script`] when the driver has no
    /// [`vnfm_driver_api::UserDataScripts`] (`runnable` false) to run it with.
    pub fn runnable(self, runnable: bool) -> Result<Self, OpenStackError> {
        match &self {
            UserData::Script { file, class } if !runnable => Err(OpenStackError::Input(format!(
                "user data class `{class}` of `{file}` cannot run: this OpenStack driver was not given a runner for Python user data classes (`vnfm serve` gives it one, with the --python interpreter; an embedder passes one to `OpenStackDriver::with_user_data_scripts`). Without one, the driver builds what Tacker's `StandardUserData` (userdata_standard.py) or `DefaultUserData` (userdata_default.py) builds; name one of them, or pass what the class would compute in additionalParams.nfv without naming a class"
            ))),
            _ => Ok(self),
        }
    }
}

/// The name of VNFC `index` of `name` (`VDU1-0`).
pub fn with_index(name: &str, index: u32) -> String {
    format!("{name}-{index}")
}

/// `VDU1-0` as (`VDU1`, 0); `None` for a name without a numeric index.
pub fn split_index(name: &str) -> Option<(&str, u32)> {
    let (base, idx) = name.rsplit_once('-')?;
    if base.is_empty() || idx.is_empty() || !idx.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((base, idx.parse().ok()?))
}

/// The VNFC indexes per VDU that `template` (expanded) holds: its resources `<vdu>-<n>` of
/// the VDUs `vdus`.
pub fn indexes_in(template: &Value, vdus: &[String]) -> BTreeMap<String, BTreeSet<u32>> {
    let mut out: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
    let Some(res) = template.get("resources").and_then(Value::as_object) else {
        return out;
    };
    for name in res.keys() {
        if let Some((base, i)) = split_index(name)
            && vdus.iter().any(|v| v == base)
        {
            out.entry(base.to_string()).or_default().insert(i);
        }
    }
    out
}

/// The indexes for `want` VNFCs of each VDU, from the indexes `now`: the highest go first
/// when there are too many, the lowest unused are added when there are too few.
pub fn next_indexes(
    now: &BTreeMap<String, BTreeSet<u32>>,
    want: &BTreeMap<String, u32>,
) -> BTreeMap<String, BTreeSet<u32>> {
    let mut out = BTreeMap::new();
    for (vdu, &n) in want {
        let mut set: BTreeSet<u32> = now.get(vdu).cloned().unwrap_or_default();
        while set.len() > n as usize {
            set.pop_last();
        }
        let mut candidate = 0;
        while set.len() < n as usize {
            if set.insert(candidate) {
                continue;
            }
            candidate += 1;
        }
        out.insert(vdu.clone(), set);
    }
    out
}

/// Replaces each top-level resource named after a VDU of `vdus` by one copy per index of
/// `indexes` (none for a VDU with no index), as Tacker's `add_idx_to_vdu_template`: in
/// each copy, every property that is a `get_param` with at least four elements gets the
/// index on its third (`[nfv, VDU, VDU1, vcImageId]` -> `[nfv, VDU, VDU1-0, vcImageId]`).
/// A VDU the top template has no resource for (a generated template, a VDU inside a group)
/// is left as it is. Copies refer to nothing by name, so other resources are unchanged.
pub fn expand(template: &mut Value, vdus: &[String], indexes: &BTreeMap<String, BTreeSet<u32>>) {
    let Some(res) = template.get_mut("resources").and_then(Value::as_object_mut) else {
        return;
    };
    for vdu in vdus {
        let Some(def) = res.remove(vdu) else { continue };
        for &i in indexes.get(vdu).into_iter().flatten() {
            let mut copy = def.clone();
            if let Some(props) = copy.get_mut("properties").and_then(Value::as_object_mut) {
                for value in props.values_mut() {
                    if let Some(Value::Array(items)) = value.get_mut("get_param")
                        && items.len() >= 4
                        && let Some(Value::String(name)) = items.get(2)
                    {
                        items[2] = Value::String(with_index(name, i));
                    }
                }
            }
            res.insert(with_index(vdu, i), copy);
        }
    }
}

/// The `nfv` parameter for an expanded template that reads `paths`: every entry `VDU.<x>-<n>`
/// / `CP.<x>-<n>` is what [`hot::build_nfv`] gives `<x>` (so `additionalParams.nfv` may name a
/// VDU or CP for all its VNFCs), then `inputs.additional` is merged over the result (and may
/// name a VNFC's entry, `VDU1-0`, as with Tacker's class).
pub fn nfv(paths: &[Vec<Seg>], inputs: &NfvInputs<'_>) -> Value {
    let base_paths: BTreeSet<Vec<Seg>> = paths.iter().map(|p| unindexed(p)).collect();
    let base = hot::build_nfv(&base_paths.into_iter().collect::<Vec<_>>(), inputs);
    let mut out = Map::new();
    for p in paths {
        let (Some(Seg::Key(section)), Some(Seg::Key(name))) = (p.first(), p.get(1)) else {
            continue;
        };
        let base_name = split_index(name).map_or(name.as_str(), |(b, _)| b);
        let value = base
            .get(section)
            .and_then(|s| s.get(base_name))
            .cloned()
            .unwrap_or(Value::Null);
        if let Value::Object(sec) = out
            .entry(section.clone())
            .or_insert_with(|| Value::Object(Map::new()))
        {
            sec.insert(name.clone(), value);
        }
    }
    let mut out = Value::Object(out);
    if let Some(patch) = inputs.additional {
        json_patch::merge(&mut out, patch);
    }
    out
}

/// `p` with the index of its entry name removed (`[CP, VDU1_CP1-0, network]` -> `[CP,
/// VDU1_CP1, network]`).
fn unindexed(p: &[Seg]) -> Vec<Seg> {
    let mut p = p.to_vec();
    if let Some(Seg::Key(name)) = p.get_mut(1)
        && let Some((base, _)) = split_index(name)
    {
        *name = base.to_string();
    }
    p
}

/// The `nfv` for a scale of a stack whose parameter is `current`: the VNFCs `current` has keep
/// their entries (their servers must not change); the VNFCs the scale adds get [`nfv`]'s, with
/// the VDU- and CP-level entries `current` holds (those an earlier request's
/// `additionalParams.nfv` set) under `inputs.additional`.
pub fn scaled_nfv(paths: &[Vec<Seg>], inputs: &NfvInputs<'_>, current: &Value) -> Value {
    let mut levels = Value::Object(Map::new());
    if let Value::Object(sections) = current {
        for (section, entries) in sections {
            let Value::Object(entries) = entries else {
                continue;
            };
            let kept: Map<String, Value> = entries
                .iter()
                .filter(|(name, _)| split_index(name).is_none())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            if !kept.is_empty() {
                levels[section] = Value::Object(kept);
            }
        }
    }
    if let Some(a) = inputs.additional {
        json_patch::merge(&mut levels, a);
    }
    let mut out = nfv(
        paths,
        &NfvInputs {
            additional: Some(&levels),
            ..*inputs
        },
    );
    if let (Value::Object(out), Value::Object(cur)) = (&mut out, current) {
        for (section, entries) in cur {
            let (Some(Value::Object(o)), Value::Object(entries)) = (out.get_mut(section), entries)
            else {
                continue;
            };
            for (name, v) in entries {
                if split_index(name).is_some() && o.contains_key(name) {
                    o.insert(name.clone(), v.clone());
                }
            }
        }
    }
    out
}

/// What Tacker's `StandardUserData.heal` changes in `nfv`: each healed VNFC (its VDU and
/// index) boots from the image the grant gives its VDU, else from the package's image of that
/// VDU the driver uploaded to Glance (`images`, by `sw_image_data.name`, as Tacker's NFVO
/// grants it); with neither, its entry keeps its image (Tacker's `fallback_vnfd=False`). After
/// a MODIFY_INFO onto another package, a heal so rebuilds the VNFC on that package's image.
pub fn heal_images(
    nfv: &mut Value,
    healed: &[(String, u32)],
    flavour: &vnfm_descriptor::Flavour,
    grant: Option<&vnfm_types::Grant>,
    images: &BTreeMap<String, String>,
) {
    for (vdu, index) in healed {
        let uploaded = || {
            let sw = flavour
                .vdus
                .iter()
                .find(|v| &v.id == vdu)?
                .sw_image
                .as_ref()?;
            images.get(&sw.name).map(String::as_str)
        };
        let Some(image) = grant.and_then(|g| g.image_for(vdu)).or_else(uploaded) else {
            continue;
        };
        if let Some(Value::Object(entry)) = nfv
            .get_mut("VDU")
            .and_then(|v| v.get_mut(with_index(vdu, *index)))
        {
            entry.insert("vcImageId".into(), Value::String(image.to_owned()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    /// Tacker's `StandardUserData.heal`: the healed VNFCs' `vcImageId` becomes the grant's
    /// image of their VDU, else the package's uploaded one; others, and VDUs with neither,
    /// keep theirs.
    #[test]
    fn a_heal_gives_the_healed_vnfcs_the_granted_or_uploaded_image() {
        let flavour: vnfm_descriptor::Flavour = serde_json::from_value(json!({
            "id": "simple", "file": "Definitions/df.yaml",
            "vdus": [{"id": "VDU1", "name": "VDU1", "kind": "compute",
                      "nodeType": "tosca.nodes.nfv.Vdu.Compute", "minInstances": 1,
                      "maxInstances": 3, "swImage": {"name": "img-vdu1", "file": "Files/a.img"}},
                     {"id": "VDU2", "name": "VDU2", "kind": "compute",
                      "nodeType": "tosca.nodes.nfv.Vdu.Compute", "minInstances": 1,
                      "maxInstances": 1, "swImage": {"name": "img-vdu2"}},
                     {"id": "VDU3", "name": "VDU3", "kind": "compute",
                      "nodeType": "tosca.nodes.nfv.Vdu.Compute", "minInstances": 1,
                      "maxInstances": 1, "swImage": {"name": "img-vdu3"}}]
        }))
        .unwrap();
        let entry = |image: &str| json!({"computeFlavourId": "m1.tiny", "vcImageId": image});
        let mut nfv = json!({"VDU": {"VDU1-0": entry("old"), "VDU1-1": entry("old"),
                                     "VDU2-0": entry("old"), "VDU3-0": entry("old")}});
        let images = BTreeMap::from([("img-vdu1".to_string(), "glance-1".to_string())]);
        let grant: vnfm_types::Grant = serde_json::from_value(json!({
            "id": "g", "vnfInstanceId": "i", "vnfLcmOpOccId": "o",
            "vimAssets": {"softwareImages": [
                {"vnfdSoftwareImageId": "VDU2", "vimSoftwareImageId": "granted-2"}]},
            "_links": {"vnfLcmOpOcc": {"href": "x"}, "vnfInstance": {"href": "y"}}
        }))
        .unwrap();
        let healed = [
            ("VDU1".to_string(), 1),
            ("VDU2".to_string(), 0),
            ("VDU3".to_string(), 0),
        ];
        heal_images(&mut nfv, &healed, &flavour, Some(&grant), &images);
        assert_eq!(
            nfv["VDU"],
            json!({"VDU1-0": entry("old"), "VDU1-1": entry("glance-1"),
                   "VDU2-0": entry("granted-2"), "VDU3-0": entry("old")})
        );
    }

    #[test]
    fn the_standard_and_default_classes_are_known_others_run_as_scripts() {
        let std = params(
            json!({USER_DATA_FILE: "./UserData/userdata_standard.py", USER_DATA_CLASS: "StandardUserData"}),
        );
        assert_eq!(
            UserData::from_params(Some(&std)).unwrap(),
            Some(UserData::Standard)
        );
        let def = params(
            json!({USER_DATA_FILE: "userdata_default.py", USER_DATA_CLASS: "DefaultUserData"}),
        );
        assert_eq!(
            UserData::from_params(Some(&def)).unwrap(),
            Some(UserData::Default)
        );
        assert_eq!(
            UserData::from_params(Some(&params(json!({"x": 1})))).unwrap(),
            None
        );
        assert_eq!(UserData::from_params(None).unwrap(), None);
        let other = params(
            json!({USER_DATA_FILE: "./UserData/lcm_user_data.py", USER_DATA_CLASS: "SampleUserData"}),
        );
        let script = UserData::from_params(Some(&other)).unwrap().unwrap();
        assert_eq!(
            script,
            UserData::Script {
                file: "./UserData/lcm_user_data.py".into(),
                class: "SampleUserData".into()
            }
        );
        assert_eq!(script.clone().runnable(true).unwrap(), script);
        let e = script.runnable(false).unwrap_err().to_string();
        assert!(
            e.contains("`SampleUserData`") && e.contains("lcm_user_data.py"),
            "{e}"
        );
        assert!(e.contains("with_user_data_scripts"), "{e}");
        assert_eq!(
            UserData::Standard.runnable(false).unwrap(),
            UserData::Standard
        );
        let half = params(json!({USER_DATA_FILE: "./UserData/userdata_standard.py"}));
        let e = UserData::from_params(Some(&half)).unwrap_err().to_string();
        assert!(e.contains(USER_DATA_CLASS), "{e}");
        // Recorded in the driver state.
        let recorded = serde_json::to_value(UserData::Script {
            file: "./UserData/userdata.py".into(),
            class: "UserData".into(),
        })
        .unwrap();
        assert_eq!(
            recorded,
            json!({"script": {"file": "./UserData/userdata.py", "class": "UserData"}})
        );
        assert_eq!(
            serde_json::to_value(UserData::Standard).unwrap(),
            json!("standard")
        );
    }

    #[test]
    fn indexes_scale_in_from_the_highest_and_out_into_the_lowest_unused() {
        let now = BTreeMap::from([
            ("VDU1".to_string(), BTreeSet::from([0, 1, 2])),
            ("VDU2".to_string(), BTreeSet::from([0, 2])),
        ]);
        let want = BTreeMap::from([("VDU1".to_string(), 1), ("VDU2".to_string(), 4)]);
        let got = next_indexes(&now, &want);
        assert_eq!(got["VDU1"], BTreeSet::from([0]));
        assert_eq!(got["VDU2"], BTreeSet::from([0, 1, 2, 3]));
        assert_eq!(split_index("VDU2-VirtualStorage"), None);
        assert_eq!(
            split_index("VDU2-VirtualStorage-3"),
            Some(("VDU2-VirtualStorage", 3))
        );
        assert_eq!(split_index("-1"), None);
    }
}
