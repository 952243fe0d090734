//! A Heat template made from the VNFD, for packages without a BaseHOT.
//!
//! | VNFD | Heat |
//! |---|---|
//! | `tosca.nodes.nfv.Vdu.Compute` `<VDU>` | `OS::Heat::AutoScalingGroup` `<VDU>_scale_group` (`desired_capacity` from `nfv`, `min_size`/`max_size` from the VDU profile) of nested template `<VDU>.yaml`, which holds `OS::Nova::Server` `<VDU>` |
//! | `tosca.nodes.nfv.VduCp` `<CP>` | `OS::Neutron::Port` `<CP>` in `<VDU>.yaml`, attached to the server in `order`; on the internal VL it names, else on the network of `nfv.CP.<CP>` (an external VL), with `fixed_ips` from `nfv.CP.<CP>.fixed_ips` |
//! | `tosca.nodes.nfv.VnfVirtualLink` `<VL>` | `OS::Neutron::Net` `<VL>` and `OS::Neutron::Subnet` `<VL>_subnet` (first CIDR of `vl_profile.virtual_link_protocol_data`, else `192.168.<n>.0/24`); removed when the request manages the VL externally |
//! | `tosca.nodes.nfv.Vdu.VirtualBlockStorage` `<VS>` | `OS::Cinder::Volume` `<VS>` in `<VDU>.yaml` (size rounded up to GiB, image from `nfv.VDU.<VS>.vcImageId`); the server boots from the first volume that has an image, the others are attached |
//! | scaling aspects | the instance count per VDU becomes `desired_capacity` of its group |
//!
//! The generated templates read their values from the same `nfv` parameter as a BaseHOT
//! (`computeFlavourId`, `vcImageId`, `locationConstraints`, `desired_capacity`, `network`,
//! `fixed_ips`), so [`crate::hot::build_nfv`] fills them, and the inventory, scaling and
//! healing code is the same. They use `heat_template_version: 2018-08-31` (Heat Rocky or
//! newer).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use vnfm_descriptor::{Flavour, StorageKind, Vdu, VduKind};

use crate::error::OpenStackError;
use crate::hot::Hot;

const VERSION: &str = "2018-08-31";

fn nfv(path: &[&str]) -> Value {
    let mut p = vec![json!("nfv")];
    p.extend(path.iter().map(|s| json!(s)));
    json!({ "get_param": p })
}

/// The template for `flavour`.
pub fn generate(vnfd_id: &str, flavour: &Flavour) -> Result<Hot, OpenStackError> {
    let mut resources = Map::new();
    for (n, vl) in flavour.virtual_links.iter().enumerate() {
        resources.insert(vl.id.clone(), json!({"type": "OS::Neutron::Net"}));
        let cidr = vl
            .cidrs
            .first()
            .cloned()
            .unwrap_or_else(|| format!("192.168.{}.0/24", 100 + n % 150));
        let ip_version = if cidr.contains(':') { 6 } else { 4 };
        resources.insert(
            format!("{}_subnet", vl.id),
            json!({"type": "OS::Neutron::Subnet", "properties": {
                "network": {"get_resource": vl.id}, "cidr": cidr, "ip_version": ip_version
            }}),
        );
    }
    let mut files = BTreeMap::new();
    let compute: Vec<&Vdu> = flavour
        .vdus
        .iter()
        .filter(|v| v.kind == VduKind::Compute)
        .collect();
    if compute.is_empty() {
        return Err(OpenStackError::Template {
            path: "generated".into(),
            message: format!(
                "flavour `{}` of VNFD {vnfd_id} has no compute VDU to create servers for",
                flavour.id
            ),
        });
    }
    for vdu in compute {
        let (nested, props) = vdu_template(flavour, vdu)?;
        let file = format!("{}.yaml", vdu.id);
        let text = serde_json::to_string_pretty(&nested).map_err(|source| {
            OpenStackError::TemplateSerialize {
                path: file.clone(),
                source,
            }
        })?;
        files.insert(file.clone(), text);
        let max_size = vdu.max_instances.max(vdu.min_instances).max(1);
        resources.insert(
            format!("{}_scale_group", vdu.id),
            json!({"type": "OS::Heat::AutoScalingGroup", "properties": {
                "min_size": vdu.min_instances,
                "max_size": max_size,
                "desired_capacity": nfv(&["VDU", &vdu.id, "desired_capacity"]),
                // All members in one batch: Heat's default batch of one keeps a member that a
                // failed update left behind on its failed definition, so the rollback would
                // retry it instead of replacing it.
                "rolling_updates": {"max_batch_size": max_size, "min_in_service": 0, "pause_time": 0},
                "resource": {"type": file, "properties": props}
            }}),
        );
    }
    let template = json!({
        "heat_template_version": VERSION,
        "description": format!("Generated from VNFD {vnfd_id}, flavour {}", flavour.id),
        "parameters": {"nfv": {"type": "json"}},
        "resources": resources,
    });
    Ok(Hot {
        source: "generated".into(),
        template,
        files,
    })
}

/// The nested template of one VNFC of `vdu`, and the properties the group passes to it.
fn vdu_template(
    flavour: &Flavour,
    vdu: &Vdu,
) -> Result<(Value, Map<String, Value>), OpenStackError> {
    let mut params = Map::new();
    let mut conditions = Map::new();
    let mut resources = Map::new();
    let mut props = Map::new();

    params.insert("flavor".into(), json!({"type": "string"}));
    props.insert("flavor".into(), nfv(&["VDU", &vdu.id, "computeFlavourId"]));
    params.insert("zone".into(), json!({"type": "string", "default": ""}));
    props.insert("zone".into(), nfv(&["VDU", &vdu.id, "locationConstraints"]));
    conditions.insert(
        "has_zone".into(),
        json!({"not": {"equals": [{"get_param": "zone"}, ""]}}),
    );

    // Volumes: the first one with an image is the boot disk.
    let mut bdm = Vec::new();
    let mut boots_from_volume = false;
    for sid in &vdu.virtual_storages {
        let Some(vs) = flavour.virtual_storages.iter().find(|s| &s.id == sid) else {
            continue;
        };
        if vs.kind != StorageKind::Block {
            continue;
        }
        let gib = vs
            .size_bytes
            .map(|b| b.div_ceil(1 << 30).max(1))
            .unwrap_or(1);
        let mut vprops = json!({"size": gib});
        let boot = vs.sw_image.is_some() && !boots_from_volume;
        if vs.sw_image.is_some() {
            let p = format!("image-{}", vs.id);
            params.insert(p.clone(), json!({"type": "string"}));
            props.insert(p.clone(), nfv(&["VDU", &vs.id, "vcImageId"]));
            vprops["image"] = json!({"get_param": p});
        }
        resources.insert(
            vs.id.clone(),
            json!({"type": "OS::Cinder::Volume", "properties": vprops}),
        );
        bdm.push(json!({
            "volume_id": {"get_resource": vs.id},
            "boot_index": if boot { 0 } else { -1 },
            "delete_on_termination": false
        }));
        boots_from_volume |= boot;
    }

    let mut cps: Vec<_> = flavour
        .vdu_cps
        .iter()
        .filter(|c| c.vdu.as_deref() == Some(vdu.id.as_str()))
        .collect();
    cps.sort_by_key(|c| (c.order.unwrap_or(u32::MAX), c.id.clone()));
    let mut networks = Vec::new();
    for cp in cps {
        let net_param = format!("net-{}", cp.id);
        params.insert(net_param.clone(), json!({"type": "string"}));
        let mut port = json!({"network": {"get_param": net_param}});
        match cp
            .virtual_link
            .as_ref()
            .filter(|vl| flavour.virtual_links.iter().any(|l| &l.id == *vl))
        {
            Some(vl) => {
                props.insert(net_param, json!({"get_resource": vl}));
            }
            None => {
                props.insert(net_param, nfv(&["CP", &cp.id, "network"]));
                let ips = format!("fixed_ips-{}", cp.id);
                params.insert(ips.clone(), json!({"type": "json", "default": []}));
                props.insert(ips.clone(), nfv(&["CP", &cp.id, "fixed_ips"]));
                let cond = format!("has_fixed_ips_{}", cond_name(&cp.id));
                conditions.insert(
                    cond.clone(),
                    json!({"not": {"equals": [{"get_param": ips}, []]}}),
                );
                port["fixed_ips"] = json!({"if": [cond, {"get_param": ips}, null]});
            }
        }
        resources.insert(
            cp.id.clone(),
            json!({"type": "OS::Neutron::Port", "properties": port}),
        );
        networks.push(json!({"port": {"get_resource": cp.id}}));
    }

    let mut server = json!({
        "flavor": {"get_param": "flavor"},
        "availability_zone": {"if": ["has_zone", {"get_param": "zone"}, null]},
        "networks": networks,
    });
    if !boots_from_volume {
        params.insert("image".into(), json!({"type": "string"}));
        props.insert("image".into(), nfv(&["VDU", &vdu.id, "vcImageId"]));
        server["image"] = json!({"get_param": "image"});
    }
    if !bdm.is_empty() {
        server["block_device_mapping_v2"] = Value::Array(bdm);
    }
    resources.insert(
        vdu.id.clone(),
        json!({"type": "OS::Nova::Server", "properties": server}),
    );
    let template = json!({
        "heat_template_version": VERSION,
        "description": format!("One VNFC of VDU {}", vdu.id),
        "parameters": params,
        "conditions": conditions,
        "resources": resources,
    });
    Ok((template, props))
}

fn cond_name(id: &str) -> String {
    id.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}
