//! Heat templates from a VNF package, and the `nfv` parameter.
//!
//! # BaseHOT layout
//! A package carries, per deployment flavour, one top template in `BaseHOT/<flavourId>/` and
//! the templates it uses in `BaseHOT/<flavourId>/nested/` (the layout Tacker uses). Nested
//! templates are found by following the top template: every `type:` that names a template
//! file (`VDU1.yaml`, also inside `OS::Heat::AutoScalingGroup` and `ResourceGroup`
//! definitions) and every `get_file:` is looked up in `nested/`, next to the template, then as
//! a package path, recursively; Heat receives them as stack `files` under the name the
//! template uses.
//!
//! The package interface ([`ArtifactSource`]) reads files but does not list them, so the top
//! template is found by name, in this order: files under `BaseHOT/<flavourId>/` named in the
//! manifest (`Source:`) or `TOSCA.meta` (`Name:`); names derived from the VNFD's entry
//! definitions (`Definitions/v2_sample1_top.vnfd.yaml` gives `sample1.yaml`,
//! `v2_sample1.yaml`, `sample1_hot.yaml`, ...); then [`DriverConfig::base_hot_names`]
//! (`base_hot_top.yaml`, `<flavourId>_hot_top.yaml`, ...). The same names are tried directly
//! under `BaseHOT/` for packages without a flavour folder.
//!
//! # The `nfv` parameter
//! The top template declares one JSON parameter `nfv` and reads values from it with
//! `{get_param: [nfv, VDU, <name>, <key>]}` and `{get_param: [nfv, CP, <name>, <key>, ...]}`.
//! [`build_nfv`] makes an object with exactly the paths the template reads (as Tacker's
//! default user data does) and fills what the VNFD and the request say:
//!
//! | path | value |
//! |---|---|
//! | `VDU.<vdu>.computeFlavourId` / `flavor` | the VDU's `requested_additional_capability_name` |
//! | `VDU.<vdu or storage>.vcImageId` / `image` | the `sw_image_data.name` of the VDU or storage (Glance's id of the image when the driver uploaded it from the package) |
//! | `VDU.<vdu>.desired_capacity` | the VDU's instance count for the operation |
//! | `CP.<cp>.network` | `resourceId` of the external VL whose `extCps` has `cpdId` `<cp>` |
//! | `CP.<cp>.fixed_ips[i].ip_address` / `.subnet` | the i-th fixed address / subnet of that CP |
//! | `CP.<cp>.port` | the link port (`extLinkPorts[].resourceHandle.resourceId`) the CP uses |
//! | `CP.<cp>.mac_address` | `ipOverEthernet.macAddress` of that CP |
//!
//! Other paths stay `null` (Heat then applies the property's default). Finally
//! `additionalParams.nfv` of the request is merged over the result (JSON merge patch), so a
//! request can set anything the template reads.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};
use vnfm_descriptor::{Flavour, Vnfd};
use vnfm_driver_api::ArtifactSource;
use vnfm_types::{ExtManagedVirtualLinkData, ExtVirtualLinkData};

use crate::config::DriverConfig;
use crate::error::OpenStackError;

/// Files of one stack: the top template and the files it refers to.
#[derive(Debug, Clone, PartialEq)]
pub struct Hot {
    /// Package path of the top template, or `generated` for a template made from the VNFD.
    pub source: String,
    /// The top template, as a JSON object.
    pub template: Value,
    /// The files the template refers to, by the name it uses.
    pub files: BTreeMap<String, String>,
}

/// Most files one stack may bring (nested templates and `get_file` targets).
const MAX_FILES: usize = 256;
/// Deepest nesting of templates followed.
const MAX_DEPTH: usize = 8;

/// Parses a YAML (or JSON) Heat template.
pub fn parse_template(path: &str, bytes: &[u8]) -> Result<Value, OpenStackError> {
    let text = std::str::from_utf8(bytes).map_err(|_| OpenStackError::Template {
        path: path.to_string(),
        message: "is not UTF-8 text".into(),
    })?;
    let v: Value = serde_saphyr::from_str(text).map_err(|source| OpenStackError::TemplateYaml {
        path: path.to_string(),
        source: Box::new(source),
    })?;
    if !v.is_object() || v.get("heat_template_version").is_none() {
        return Err(OpenStackError::Template {
            path: path.to_string(),
            message: "is not a Heat template (no heat_template_version)".into(),
        });
    }
    Ok(v)
}

/// The BaseHOT of `flavour_id`, or `None` when the package has none (see the module docs for
/// how the top template is found).
pub fn load_base_hot(
    artifacts: &dyn ArtifactSource,
    vnfd: &Vnfd,
    flavour_id: &str,
    config: &DriverConfig,
) -> Result<Option<Hot>, OpenStackError> {
    let dir = format!("BaseHOT/{flavour_id}");
    for candidate in top_candidates(artifacts, vnfd, flavour_id, config) {
        let bytes = match artifacts.read(&candidate) {
            Ok(b) => b,
            Err(_) => continue,
        };
        let template = parse_template(&candidate, &bytes)?;
        let base_dir = if candidate.starts_with(&format!("{dir}/")) {
            dir.clone()
        } else {
            "BaseHOT".to_string()
        };
        let files = collect_files(artifacts, &template, &candidate, &base_dir)?;
        return Ok(Some(Hot {
            source: candidate,
            template,
            files,
        }));
    }
    Ok(None)
}

fn top_candidates(
    artifacts: &dyn ArtifactSource,
    vnfd: &Vnfd,
    flavour_id: &str,
    config: &DriverConfig,
) -> Vec<String> {
    let dir = format!("BaseHOT/{flavour_id}");
    let mut names: Vec<String> = Vec::new();
    let mut listed = listed_files(artifacts, vnfd);
    listed.retain(|p| {
        p.strip_prefix(&format!("{dir}/"))
            .is_some_and(|rest| !rest.contains('/') && is_yaml_name(rest))
    });
    let mut out: Vec<String> = listed;
    for stem in entry_stems(&vnfd.entry_definitions) {
        names.push(format!("{stem}.yaml"));
        names.push(format!("{stem}_hot.yaml"));
        names.push(format!("{stem}_hot_top.yaml"));
    }
    for n in &config.base_hot_names {
        names.push(n.replace("{flavour}", flavour_id));
    }
    for n in &names {
        out.push(format!("{dir}/{n}"));
    }
    for n in &names {
        out.push(format!("BaseHOT/{n}"));
    }
    let mut seen = BTreeSet::new();
    out.retain(|p| seen.insert(p.clone()));
    out
}

fn is_yaml_name(name: &str) -> bool {
    name.ends_with(".yaml") || name.ends_with(".yml")
}

/// `Definitions/v2_sample1_top.vnfd.yaml` -> `v2_sample1_top.vnfd`, `v2_sample1_top`,
/// `v2_sample1`, `sample1`.
fn entry_stems(entry: &str) -> Vec<String> {
    let base = entry.rsplit('/').next().unwrap_or(entry);
    let base = base
        .strip_suffix(".yaml")
        .or_else(|| base.strip_suffix(".yml"))
        .unwrap_or(base);
    let mut stems = vec![base.to_string()];
    let mut s = base.to_string();
    for suffix in [".tosca", ".vnfd", "_top", "_vnfd"] {
        if let Some(t) = s.strip_suffix(suffix) {
            s = t.to_string();
            stems.push(s.clone());
        }
    }
    for prefix in ["v2_", "v1_"] {
        if let Some(t) = s.strip_prefix(prefix) {
            stems.push(t.to_string());
        }
    }
    stems.retain(|s| !s.is_empty());
    stems.dedup();
    stems
}

/// Package files named in TOSCA.meta (`Name:` entries) and in the manifest (`Source:` lines).
fn listed_files(artifacts: &dyn ArtifactSource, vnfd: &Vnfd) -> Vec<String> {
    let mut out = Vec::new();
    let mut manifests = Vec::new();
    if let Ok(meta) = artifacts.read("TOSCA-Metadata/TOSCA.meta") {
        for line in String::from_utf8_lossy(&meta).lines() {
            if let Some((k, v)) = line.split_once(':') {
                let v = v.trim().to_string();
                match k.trim() {
                    "Name" => out.push(v),
                    "ETSI-Entry-Manifest" | "Entry-Manifest" => manifests.push(v),
                    _ => {}
                }
            }
        }
    }
    let entry = &vnfd.entry_definitions;
    if let Some(base) = entry.rsplit('/').next()
        && let Some(stem) = base
            .strip_suffix(".yaml")
            .or_else(|| base.strip_suffix(".yml"))
    {
        manifests.push(format!("{stem}.mf"));
    }
    for m in manifests {
        if let Ok(text) = artifacts.read(&m) {
            for line in String::from_utf8_lossy(&text).lines() {
                if let Some(v) = line.trim().strip_prefix("Source:") {
                    out.push(v.trim().to_string());
                }
            }
        }
    }
    out.iter()
        .map(|p| p.trim_start_matches("./").to_string())
        .collect()
}

/// Files a template refers to: nested templates (`type: X.yaml`) and `get_file` targets,
/// recursively, keyed by the name used in the template.
fn collect_files(
    artifacts: &dyn ArtifactSource,
    top: &Value,
    top_path: &str,
    base_dir: &str,
) -> Result<BTreeMap<String, String>, OpenStackError> {
    let mut files = BTreeMap::new();
    let mut queue: Vec<(String, Value, usize)> = vec![(top_path.to_string(), top.clone(), 0)];
    while let Some((path, tmpl, depth)) = queue.pop() {
        let mut refs = Vec::new();
        references(&tmpl, false, &mut refs);
        for (name, is_template) in refs {
            if files.contains_key(&name) || name.contains("://") {
                continue;
            }
            if files.len() >= MAX_FILES {
                return Err(OpenStackError::Template {
                    path: top_path.into(),
                    message: format!("refers to more than {MAX_FILES} files"),
                });
            }
            let here = path.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
            let candidates = [
                format!("{base_dir}/nested/{name}"),
                format!("{base_dir}/{name}"),
                format!("{here}/{name}"),
                name.trim_start_matches("./").to_string(),
            ];
            let found = candidates
                .iter()
                .find_map(|c| artifacts.read(c).ok().map(|b| (c.clone(), b)));
            let Some((found_path, bytes)) = found else {
                if is_template {
                    return Err(OpenStackError::Template {
                        path: path.clone(),
                        message: format!(
                            "uses `{name}`, which the package does not have (looked in {base_dir}/nested/, {base_dir}/ and next to the template)"
                        ),
                    });
                }
                return Err(OpenStackError::Template {
                    path: path.clone(),
                    message: format!("get_file `{name}`: the package has no such file"),
                });
            };
            let text = String::from_utf8(bytes).map_err(|_| OpenStackError::Template {
                path: found_path.clone(),
                message: "is not UTF-8 text".into(),
            })?;
            if is_template {
                if depth + 1 > MAX_DEPTH {
                    return Err(OpenStackError::Template {
                        path: found_path,
                        message: format!("templates nest deeper than {MAX_DEPTH} levels"),
                    });
                }
                let nested = parse_template(&found_path, text.as_bytes())?;
                queue.push((found_path, nested, depth + 1));
            }
            files.insert(name, text);
        }
    }
    Ok(files)
}

/// `(name, is_template)` of every nested template type and `get_file` in `v`.
fn references(v: &Value, in_parameters: bool, out: &mut Vec<(String, bool)>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("parameters" | "parameter_groups", _) => references(v, true, out),
                    ("type", Value::String(t)) if !in_parameters && is_template_ref(t) => {
                        out.push((t.clone(), true));
                    }
                    ("get_file", Value::String(f)) => out.push((f.clone(), false)),
                    _ => references(v, in_parameters, out),
                }
            }
        }
        Value::Array(items) => {
            for i in items {
                references(i, in_parameters, out);
            }
        }
        _ => {}
    }
}

fn is_template_ref(t: &str) -> bool {
    [".yaml", ".yml", ".template", ".hot", ".json"]
        .iter()
        .any(|s| t.ends_with(s))
}

/// One step of a `get_param` path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Seg {
    /// An object member.
    Key(String),
    /// A list index.
    Index(usize),
}

/// Every `get_param` path under `nfv` that `templates` read (without the leading `nfv`).
/// Only templates that declare an `nfv` parameter count.
pub fn nfv_paths<'a>(templates: impl IntoIterator<Item = &'a Value>) -> Vec<Vec<Seg>> {
    let mut out = BTreeSet::new();
    for t in templates {
        if t.pointer("/parameters/nfv").is_none() {
            continue;
        }
        if let Some(res) = t.get("resources") {
            collect_get_params(res, &mut out);
        }
        if let Some(outputs) = t.get("outputs") {
            collect_get_params(outputs, &mut out);
        }
    }
    out.into_iter().collect()
}

fn collect_get_params(v: &Value, out: &mut BTreeSet<Vec<Seg>>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                if k == "get_param"
                    && let Value::Array(items) = v
                    && items.first().and_then(Value::as_str) == Some("nfv")
                    && items.len() >= 3
                {
                    let path: Option<Vec<Seg>> = items[1..]
                        .iter()
                        .map(|i| match i {
                            Value::String(s) => Some(Seg::Key(s.clone())),
                            Value::Number(n) => n
                                .as_u64()
                                .and_then(|n| usize::try_from(n).ok())
                                .filter(|n| *n < 64)
                                .map(Seg::Index),
                            _ => None,
                        })
                        .collect();
                    if let Some(p) = path {
                        out.insert(p);
                    }
                    continue;
                }
                collect_get_params(v, out);
            }
        }
        Value::Array(items) => {
            for i in items {
                collect_get_params(i, out);
            }
        }
        _ => {}
    }
}

/// The object with every path of `paths` present, leaves `null`.
fn skeleton(paths: &[Vec<Seg>]) -> Value {
    let mut root = json!({});
    for p in paths {
        let mut cur = &mut root;
        for (i, seg) in p.iter().enumerate() {
            let last = i + 1 == p.len();
            let next_is_index = matches!(p.get(i + 1), Some(Seg::Index(_)));
            let fresh = || {
                if last {
                    Value::Null
                } else if next_is_index {
                    json!([])
                } else {
                    json!({})
                }
            };
            cur = match (seg, cur) {
                (Seg::Key(k), Value::Object(m)) => {
                    let e = m.entry(k.clone()).or_insert_with(fresh);
                    if e.is_null() && !last {
                        *e = fresh();
                    }
                    e
                }
                (Seg::Index(n), Value::Array(a)) => {
                    while a.len() <= *n {
                        a.push(Value::Null);
                    }
                    if a[*n].is_null() && !last {
                        a[*n] = fresh();
                    }
                    &mut a[*n]
                }
                // A template that reads the same path both as a list and as an object:
                // keep the first shape.
                _ => break,
            };
        }
    }
    root
}

/// What [`build_nfv`] fills the `nfv` skeleton with.
#[derive(Debug, Clone, Copy)]
pub struct NfvInputs<'a> {
    /// The deployment flavour.
    pub flavour: &'a Flavour,
    /// Instance count per VDU, for `desired_capacity` (left `null` when `None`).
    pub capacity: Option<&'a BTreeMap<String, u32>>,
    /// The external virtual links in force.
    pub ext_virtual_links: &'a [ExtVirtualLinkData],
    /// `additionalParams.nfv` of the request.
    pub additional: Option<&'a Value>,
    /// The NFVO's grant: its `vimAssets` choose the flavour and image of each VDU, its zones
    /// the availability zone (`locationConstraints`), ahead of the VNFD's names.
    pub grant: Option<&'a vnfm_types::Grant>,
    /// Glance's ids of the package's software images the driver uploaded or found, by
    /// `sw_image_data.name` ([`crate::glance`]): `vcImageId` gets the id instead of the name.
    pub images: Option<&'a BTreeMap<String, String>>,
}

/// The zone the grant gives the COMPUTE resources of `vdu`.
fn granted_zone(grant: &vnfm_types::Grant, vdu: &str) -> Option<String> {
    grant
        .add_resources
        .iter()
        .filter_map(|g| {
            let zone = grant.zone_of(&g.resource_definition_id)?;
            g.resource_definition_id
                .strip_prefix(vdu)
                .filter(|rest| rest.starts_with('-'))
                .map(|_| zone.to_owned())
        })
        .next()
}

/// The `nfv` parameter for templates that read `paths` (see the module docs).
pub fn build_nfv(paths: &[Vec<Seg>], inputs: &NfvInputs<'_>) -> Value {
    let mut nfv = skeleton(paths);
    if let Some(Value::Object(vdus)) = nfv.get_mut("VDU") {
        for (name, entry) in vdus.iter_mut() {
            let Value::Object(keys) = entry else { continue };
            for (key, value) in keys.iter_mut() {
                let grant = inputs.grant;
                let filled = match key.as_str() {
                    "computeFlavourId" | "flavor" => grant
                        .and_then(|g| g.flavour_for(name))
                        .map(|f| json!(f))
                        .or_else(|| flavour_name(inputs.flavour, name)),
                    "vcImageId" | "image" => grant
                        .and_then(|g| g.image_for(name))
                        .map(|i| json!(i))
                        .or_else(|| image_name(inputs.flavour, name))
                        .map(|n| match (n.as_str(), inputs.images) {
                            (Some(s), Some(ids)) => ids.get(s).map_or(n.clone(), |id| json!(id)),
                            _ => n,
                        }),
                    "locationConstraints" => {
                        grant.and_then(|g| granted_zone(g, name)).map(|z| json!(z))
                    }
                    "desired_capacity" => {
                        inputs.capacity.and_then(|c| c.get(name)).map(|n| json!(n))
                    }
                    _ => None,
                };
                if let Some(f) = filled {
                    *value = f;
                }
            }
        }
    }
    if let Some(Value::Object(cps)) = nfv.get_mut("CP") {
        for (name, entry) in cps.iter_mut() {
            let Value::Object(keys) = entry else { continue };
            let Some((vl, cp)) = find_ext_cp(inputs.ext_virtual_links, name) else {
                continue;
            };
            let fixed = fixed_ips(cp);
            for (key, value) in keys.iter_mut() {
                match key.as_str() {
                    "network" => *value = json!(vl.resource_id),
                    "fixed_ips" => *value = fill_fixed_ips(value, &fixed),
                    "port" => {
                        if let Some(p) = link_port(vl, cp) {
                            *value = json!(p);
                        }
                    }
                    "mac_address" => {
                        if let Some(m) = mac_address(cp) {
                            *value = json!(m);
                        }
                    }
                    "subnet" => {
                        if let Some(s) = fixed.iter().find_map(|f| f.get("subnet")) {
                            *value = s.clone();
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    if let Some(patch) = inputs.additional {
        json_patch::merge(&mut nfv, patch);
    }
    nfv
}

fn flavour_name(flavour: &Flavour, name: &str) -> Option<Value> {
    let vdu = flavour.vdu(name)?;
    let vc = vdu.virtual_compute.as_ref()?;
    vc.additional_capability_names.first().map(|n| json!(n))
}

fn image_name(flavour: &Flavour, name: &str) -> Option<Value> {
    if let Some(vdu) = flavour.vdu(name) {
        if let Some(img) = &vdu.sw_image {
            return Some(json!(img.name));
        }
        // A VDU that boots from a volume: the image of its first storage that has one.
        return vdu
            .virtual_storages
            .iter()
            .filter_map(|s| flavour.virtual_storages.iter().find(|v| &v.id == s))
            .find_map(|s| s.sw_image.as_ref())
            .map(|img| json!(img.name));
    }
    flavour
        .virtual_storages
        .iter()
        .find(|s| s.id == name)
        .and_then(|s| s.sw_image.as_ref())
        .map(|img| json!(img.name))
}

/// `stack_nfv` with the `CP` entries of `rebuilt` (an `nfv` built for `links`) merged over it
/// for the CPs `links` connect, as Tacker's `DefaultUserData.change_ext_conn` changes a
/// stack: the other CPs keep their values (a port an INSTANTIATE's `additionalParams.nfv`
/// gave, say), and so do the values of a connected CP that `links` do not fill. With
/// `indexed` (Tacker's `StandardUserData`, whose CPs are `VDU1_CP1-0`, `VDU1_CP1-1`, one per
/// VNFC), an entry is the CP its name less the index names, as that class's `change_ext_conn`
/// reads them.
pub fn merge_connected_cps(
    mut stack_nfv: Value,
    rebuilt: &Value,
    links: &[ExtVirtualLinkData],
    indexed: bool,
) -> Value {
    let mut cps = Map::new();
    for (name, entry) in rebuilt
        .get("CP")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let Value::Object(keys) = entry else { continue };
        let cpd = match crate::userdata::split_index(name) {
            Some((base, _)) if indexed => base,
            _ => name.as_str(),
        };
        if find_ext_cp(links, cpd).is_none() {
            continue;
        }
        // A `null` would remove the stack's value in the merge.
        let filled: Map<String, Value> = keys
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        cps.insert(name.clone(), Value::Object(filled));
    }
    json_patch::merge(&mut stack_nfv, &json!({ "CP": cps }));
    stack_nfv
}

fn find_ext_cp<'a>(
    vls: &'a [ExtVirtualLinkData],
    cpd: &str,
) -> Option<(&'a ExtVirtualLinkData, &'a vnfm_types::VnfExtCpData)> {
    vls.iter()
        .find_map(|vl| vl.ext_cps.iter().find(|c| c.cpd_id == cpd).map(|c| (vl, c)))
}

/// `[{ip_address?, subnet?}]` of a CP, one per address entry (Tacker picks the first fixed
/// address of each).
fn fixed_ips(cp: &vnfm_types::VnfExtCpData) -> Vec<Map<String, Value>> {
    let mut out = Vec::new();
    for conf in cp.cp_config.values() {
        for proto in conf.cp_protocol_data.iter().flatten() {
            let Some(ip) = &proto.ip_over_ethernet else {
                continue;
            };
            for addr in ip.ip_addresses.iter().flatten() {
                let mut m = Map::new();
                if let Some(a) = addr.fixed_addresses.as_ref().and_then(|f| f.first()) {
                    m.insert("ip_address".into(), json!(a));
                }
                if let Some(s) = &addr.subnet_id {
                    m.insert("subnet".into(), json!(s));
                }
                if !m.is_empty() {
                    out.push(m);
                }
            }
        }
    }
    out
}

/// Fills the template's `fixed_ips` shape: per listed index, the keys it reads; the whole list
/// when it reads `fixed_ips` as one value.
fn fill_fixed_ips(shape: &Value, fixed: &[Map<String, Value>]) -> Value {
    match shape {
        Value::Array(items) => {
            let mut out = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let Some(src) = fixed.get(i) else { break };
                let mut m = Map::new();
                if let Value::Object(keys) = item {
                    for k in keys.keys() {
                        m.insert(k.clone(), src.get(k).cloned().unwrap_or(Value::Null));
                    }
                } else {
                    m = src.clone();
                }
                out.push(Value::Object(m));
            }
            Value::Array(out)
        }
        _ => Value::Array(fixed.iter().cloned().map(Value::Object).collect()),
    }
}

fn link_port(vl: &ExtVirtualLinkData, cp: &vnfm_types::VnfExtCpData) -> Option<String> {
    let port_id = cp
        .cp_config
        .values()
        .find_map(|c| c.link_port_id.as_ref())?;
    vl.ext_link_ports
        .iter()
        .flatten()
        .find(|p| &p.id == port_id)
        .map(|p| p.resource_handle.resource_id.clone())
}

fn mac_address(cp: &vnfm_types::VnfExtCpData) -> Option<String> {
    cp.cp_config
        .values()
        .flat_map(|c| c.cp_protocol_data.iter().flatten())
        .find_map(|p| p.ip_over_ethernet.as_ref()?.mac_address.clone())
}

/// Tacker's handling of externally managed VLs in a BaseHOT: the network resource of each
/// such VL and its subnets are removed from the template, and `{get_resource: <vl>}` becomes
/// the given network id.
pub fn apply_ext_managed_vls(template: &mut Value, links: &[ExtManagedVirtualLinkData]) {
    for link in links {
        let vl = &link.vnf_virtual_link_desc_id;
        let Some(Value::Object(resources)) = template.get_mut("resources") else {
            return;
        };
        let get_res = json!({ "get_resource": vl });
        let drop: Vec<String> = resources
            .iter()
            .filter(|(name, def)| {
                *name == vl
                    || (def.get("type").and_then(Value::as_str) == Some("OS::Neutron::Subnet")
                        && def.pointer("/properties/network") == Some(&get_res))
            })
            .map(|(n, _)| n.clone())
            .collect();
        for d in drop {
            resources.remove(&d);
        }
        for def in resources.values_mut() {
            replace_value(def, &get_res, &json!(link.resource_id));
        }
    }
}

fn replace_value(v: &mut Value, from: &Value, to: &Value) {
    if v == from {
        *v = to.clone();
        return;
    }
    match v {
        Value::Object(m) => m.values_mut().for_each(|x| replace_value(x, from, to)),
        Value::Array(a) => a.iter_mut().for_each(|x| replace_value(x, from, to)),
        _ => {}
    }
}

/// The VDUs whose instance count the templates set through `desired_capacity`.
pub fn scalable_vdus(paths: &[Vec<Seg>]) -> BTreeSet<String> {
    paths
        .iter()
        .filter_map(|p| match p.as_slice() {
            [Seg::Key(s), Seg::Key(vdu), Seg::Key(k)] if s == "VDU" && k == "desired_capacity" => {
                Some(vdu.clone())
            }
            _ => None,
        })
        .collect()
}

/// The volumes `template` attaches to a server with an `OS::Cinder::VolumeAttachment`
/// (`volume_id: {get_resource: <name>}`): data disks, apart from a server's boot volume
/// (its `block_device_mapping`), which is made with the server and goes with it.
pub fn attached_volumes(template: &Value) -> BTreeSet<String> {
    let Some(resources) = template.get("resources").and_then(Value::as_object) else {
        return BTreeSet::new();
    };
    resources
        .values()
        .filter(|r| r.get("type").and_then(Value::as_str) == Some("OS::Cinder::VolumeAttachment"))
        .filter_map(|r| {
            r.pointer("/properties/volume_id/get_resource")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tacker's `userdata_standard_with_non_boot_volume` VDU template: its attached volume
    /// is found, a boot volume and a volume named by a parameter are not.
    #[test]
    fn attached_volumes_are_those_of_volume_attachments_by_resource() {
        let t = json!({"resources": {
            "VDU1": {"type": "OS::Nova::Server", "properties": {
                "block_device_mapping_v2": [{"volume_id": {"get_resource": "VDU1-BootStorage"}}]}},
            "VDU1-BootStorage": {"type": "OS::Cinder::Volume"},
            "VDU1-VirtualStorage": {"type": "OS::Cinder::Volume"},
            "volume_attachment": {"type": "OS::Cinder::VolumeAttachment", "properties": {
                "instance_uuid": {"get_resource": "VDU1"},
                "volume_id": {"get_resource": "VDU1-VirtualStorage"},
                "mountpoint": "/dev/vdb"}},
            "other_attachment": {"type": "OS::Cinder::VolumeAttachment", "properties": {
                "instance_uuid": {"get_resource": "VDU1"},
                "volume_id": {"get_param": "shared_volume"}}}
        }});
        assert_eq!(
            attached_volumes(&t),
            BTreeSet::from(["VDU1-VirtualStorage".to_string()])
        );
        assert!(attached_volumes(&json!({"heat_template_version": "2013-05-23"})).is_empty());
    }

    #[test]
    fn skeleton_follows_the_paths_with_lists_for_indices() {
        let t = json!({
            "heat_template_version": "2013-05-23",
            "parameters": {"nfv": {"type": "json"}},
            "resources": {
                "P": {"type": "OS::Neutron::Port", "properties": {
                    "network": {"get_param": ["nfv", "CP", "CP1", "network"]},
                    "fixed_ips": [
                        {"ip_address": {"get_param": ["nfv", "CP", "CP1", "fixed_ips", 0, "ip_address"]},
                         "subnet": {"get_param": ["nfv", "CP", "CP1", "fixed_ips", 0, "subnet"]}},
                        {"subnet": {"get_param": ["nfv", "CP", "CP1", "fixed_ips", 1, "subnet"]}}
                    ]}},
                "S": {"type": "OS::Nova::Server", "properties": {
                    "flavor": {"get_param": ["nfv", "VDU", "VDU1", "computeFlavourId"]},
                    "x": {"get_param": "other"}}}
            }
        });
        let paths = nfv_paths([&t]);
        assert_eq!(
            skeleton(&paths),
            json!({"CP": {"CP1": {"network": null, "fixed_ips": [
                {"ip_address": null, "subnet": null}, {"subnet": null}]}},
                "VDU": {"VDU1": {"computeFlavourId": null}}})
        );
    }

    #[test]
    fn templates_without_an_nfv_parameter_are_ignored() {
        let t = json!({"heat_template_version": "2013-05-23",
            "resources": {"S": {"properties": {"f": {"get_param": ["nfv", "VDU", "V", "flavor"]}}}}});
        assert!(nfv_paths([&t]).is_empty());
    }

    #[test]
    fn merge_patch_follows_rfc_7386() {
        let mut t = json!({"a": {"b": 1, "c": 2}, "d": [1]});
        json_patch::merge(&mut t, &json!({"a": {"b": null, "e": 3}, "d": {"x": 1}}));
        assert_eq!(t, json!({"a": {"c": 2, "e": 3}, "d": {"x": 1}}));
    }

    #[test]
    fn entry_stems_cover_tacker_names() {
        assert_eq!(
            entry_stems("Definitions/v2_sample1_top.vnfd.yaml"),
            vec![
                "v2_sample1_top.vnfd",
                "v2_sample1_top",
                "v2_sample1",
                "sample1"
            ]
        );
        assert!(
            entry_stems("Definitions/helloworld3_top.vnfd.yaml").contains(&"helloworld3".into())
        );
    }

    #[test]
    fn ext_managed_vls_replace_the_network_and_drop_its_subnet() {
        let mut t = json!({"resources": {
            "internalVL1": {"type": "OS::Neutron::Net"},
            "internalVL1_subnet": {"type": "OS::Neutron::Subnet", "properties": {"network": {"get_resource": "internalVL1"}}},
            "CP": {"type": "OS::Neutron::Port", "properties": {"network": {"get_resource": "internalVL1"}}}
        }});
        let link: ExtManagedVirtualLinkData = serde_json::from_value(json!({
            "id": "m1", "vnfVirtualLinkDescId": "internalVL1", "resourceId": "net-42"
        }))
        .unwrap();
        apply_ext_managed_vls(&mut t, &[link]);
        assert_eq!(
            t,
            json!({"resources": {"CP": {"type": "OS::Neutron::Port", "properties": {"network": "net-42"}}}})
        );
    }
}
