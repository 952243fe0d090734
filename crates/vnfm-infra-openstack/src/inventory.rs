//! The instance's resources, read from its Heat stack ([`inventory`]), and what changed since
//! the instance was last recorded ([`changes`]).
//!
//! A Heat resource is taken for a VNF resource by its type and its name, at any depth of
//! nested stacks (Tacker's convention):
//!
//! - a compute resource (`OS::Nova::Server`) named after a VDU of the flavour is a VNFC;
//! - a port (`OS::Neutron::Port`) named after a CP of that VDU, in the same (nested) stack, is
//!   that VNFC's CP; its `fixed_ips` and `mac_address` attributes become the CP's addresses;
//! - a volume (`OS::Cinder::Volume`) named after a storage of that VDU, in the same stack, is
//!   the VNFC's storage;
//! - a network (`OS::Neutron::Net`) named after a VL of the flavour is that VL.
//!
//! Ids are derived from the stack that holds the resource and the resource's name, so they are
//! stable across stack updates and per-VNFC heals (only the compute resource id changes) and
//! new for VNFCs created by a scale-out or a whole-VNF re-creation.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use vnfm_descriptor::Flavour;
use vnfm_driver_api::InstanceResources;
use vnfm_driver_api::inventory::{
    affected_storage, affected_virtual_link, affected_vnfc, affected_vnfc_with_storage, diff,
    resource_handle,
};
/// Re-exported from [`vnfm_driver_api::inventory`], where every driver's inventory finds them.
pub use vnfm_driver_api::inventory::{derived_id, recorded};
use vnfm_types::{
    AffectedVirtualLink, AffectedVirtualStorage, AffectedVnfc, ChangeType, CpInstanceType,
    CpProtocolInfo, ExtLinkPortInfo, ExtManagedVirtualLinkInfo, ExtVirtualLinkData,
    ExtVirtualLinkInfo, IpAddressInfo, IpAddressType, IpOverEthernetAddressInfo, LayerProtocol,
    ResourceChanges, ResourceHandle, VirtualStorageResourceInfo, VnfExtCpInfo, VnfLinkPortInfo,
    VnfOperationalState, VnfVirtualLinkResourceInfo, VnfcCpInfo, VnfcInfo, VnfcResourceInfo,
    VnfdId,
};

use crate::config::DriverConfig;
use crate::heat::{HeatResource, StackRef};

/// What [`inventory`] needs besides the stack's resources.
#[derive(Debug, Clone, Copy)]
pub struct InventoryInputs<'a> {
    /// The flavour the stack was made for.
    pub flavour: &'a Flavour,
    /// The VNFD id to record.
    pub vnfd_id: &'a VnfdId,
    /// Key of the VIM connection the stack lives on.
    pub vim_connection_id: &'a str,
    /// The external virtual links in force.
    pub ext_virtual_links: &'a [ExtVirtualLinkData],
    /// The externally managed virtual links in force.
    pub ext_managed_virtual_links: &'a [ExtManagedVirtualLinkInfo],
    /// The VNFC states recorded before (by `vnfcInfo` id), for VNFCs that still exist.
    pub vnfc_states: &'a BTreeMap<String, VnfOperationalState>,
    /// The state of new VNFCs.
    pub default_state: VnfOperationalState,
}

struct Indexed<'a> {
    by_stack: BTreeMap<(String, String), &'a HeatResource>,
    owner_of_stack: BTreeMap<String, &'a HeatResource>,
}

fn index(resources: &[HeatResource]) -> Indexed<'_> {
    let mut by_stack = BTreeMap::new();
    let mut owner_of_stack = BTreeMap::new();
    for r in resources {
        if let Some(s) = r.stack() {
            by_stack.insert((s.id.clone(), r.resource_name.clone()), r);
        }
        if let Some(n) = r.nested() {
            owner_of_stack.insert(n.id, r);
        }
    }
    Indexed {
        by_stack,
        owner_of_stack,
    }
}

fn handle(r: &HeatResource, vim: &str) -> ResourceHandle {
    resource_handle(r.physical_resource_id.clone(), &r.resource_type, Some(vim))
}

/// The addresses a port resource reports (`fixed_ips`, `mac_address`).
fn port_protocol(r: &HeatResource) -> Option<Vec<CpProtocolInfo>> {
    let ips: Vec<IpAddressInfo> = r
        .attributes
        .get("fixed_ips")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|ip| {
            let addr = ip.get("ip_address")?.as_str()?.to_string();
            Some(IpAddressInfo {
                ip_type: if addr.contains(':') {
                    IpAddressType::Ipv6
                } else {
                    IpAddressType::Ipv4
                },
                addresses: Some(vec![addr]),
                is_dynamic: None,
                address_range: None,
                subnet_id: ip
                    .get("subnet_id")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            })
        })
        .collect();
    let mac = r
        .attributes
        .get("mac_address")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty())
        .map(str::to_string);
    if ips.is_empty() && mac.is_none() {
        return None;
    }
    Some(vec![CpProtocolInfo {
        layer_protocol: LayerProtocol::IpOverEthernet,
        ip_over_ethernet: Some(IpOverEthernetAddressInfo {
            mac_address: mac,
            segmentation_id: None,
            ip_addresses: (!ips.is_empty()).then_some(ips),
        }),
        virtual_cp_address: None,
    }])
}

/// The resources of the stack as SOL003 resource information.
pub fn inventory(
    resources: &[HeatResource],
    inputs: &InventoryInputs<'_>,
    config: &DriverConfig,
) -> InstanceResources {
    let idx = index(resources);
    let flavour = inputs.flavour;
    let vim = inputs.vim_connection_id;
    let is = |types: &[String], r: &HeatResource| types.iter().any(|t| t == &r.resource_type);
    let mut out = InstanceResources::default();

    // Internal VLs first: ports link to them.
    let mut vl_infos: BTreeMap<String, VnfVirtualLinkResourceInfo> = BTreeMap::new();
    for r in resources.iter().filter(|r| is(&config.network_types, r)) {
        if !flavour
            .virtual_links
            .iter()
            .any(|v| v.id == r.resource_name)
        {
            continue;
        }
        let Some(stack) = r.stack() else { continue };
        vl_infos.insert(
            r.resource_name.clone(),
            VnfVirtualLinkResourceInfo {
                id: derived_id(&[&stack.id, &r.resource_name]),
                vnf_virtual_link_desc_id: r.resource_name.clone(),
                vnfd_id: Some(inputs.vnfd_id.clone()),
                network_resource: handle(r, vim),
                zone_id: None,
                reservation_id: None,
                vnf_link_ports: None,
                metadata: Some(stack_meta(&stack, &r.resource_name)),
            },
        );
    }
    let mut managed: Vec<ExtManagedVirtualLinkInfo> = inputs.ext_managed_virtual_links.to_vec();
    for m in managed.iter_mut() {
        m.vnf_link_ports = None;
    }
    let mut ext_links: Vec<ExtVirtualLinkInfo> = inputs
        .ext_virtual_links
        .iter()
        .map(|l| {
            let mut h = ResourceHandle::new(l.resource_id.clone());
            h.vim_connection_id = l
                .vim_connection_id
                .clone()
                .or_else(|| Some(vim.to_string()));
            h.resource_provider_id = l.resource_provider_id.clone();
            ExtVirtualLinkInfo {
                id: l.id.clone(),
                resource_handle: h,
                ext_link_ports: l.ext_link_ports.as_ref().map(|ports| {
                    ports
                        .iter()
                        .map(|p| ExtLinkPortInfo {
                            id: p.id.clone(),
                            resource_handle: p.resource_handle.clone(),
                            cp_instance_id: None,
                            secondary_cp_instance_id: None,
                            trunk_resource_id: p.trunk_resource_id.clone(),
                        })
                        .collect()
                }),
                current_vnf_ext_cp_data: l.ext_cps.clone(),
            }
        })
        .collect();

    let mut servers: Vec<&HeatResource> = resources
        .iter()
        .filter(|r| is(&config.compute_types, r) && flavour.vdu(&r.resource_name).is_some())
        .collect();
    // Oldest first, so scale-in picks from the end.
    servers.sort_by(|a, b| {
        (a.creation_time.as_deref(), &a.physical_resource_id)
            .cmp(&(b.creation_time.as_deref(), &b.physical_resource_id))
    });
    for server in servers {
        let Some(stack) = server.stack() else {
            continue;
        };
        let Some(vdu) = flavour.vdu(&server.resource_name) else {
            continue;
        };
        let id = derived_id(&[&stack.id, &server.resource_name]);
        let mut meta = stack_meta(&stack, &server.resource_name);
        if let Some(t) = &server.creation_time {
            meta.insert("creationTime".into(), json!(t));
        }
        if let Some(member) = idx.owner_of_stack.get(&stack.id)
            && let Some(group_stack) = member.stack()
        {
            let group = idx.owner_of_stack.get(&group_stack.id);
            if group.is_some_and(|g| g.resource_type == "OS::Heat::AutoScalingGroup") {
                meta.insert("parentStackId".into(), json!(group_stack.id));
                meta.insert("parentStackName".into(), json!(group_stack.name));
                meta.insert("parentResourceName".into(), json!(member.resource_name));
            } else if let Some((base, i)) = crate::userdata::split_index(&member.resource_name)
                && base == vdu.id
            {
                // One resource per VNFC (Tacker's StandardUserData): `VDU1-0`.
                meta.insert("vduIdx".into(), json!(i));
            }
        }
        if let Some(addr) = server.attributes.get("addresses").filter(|a| a.is_object()) {
            meta.insert("addresses".into(), addr.clone());
        }

        // Storage of this VNFC.
        let mut storage_ids = Vec::new();
        for sid in &vdu.virtual_storages {
            let Some(r) = idx.by_stack.get(&(stack.id.clone(), sid.clone())) else {
                continue;
            };
            if !is(&config.storage_types, r) {
                continue;
            }
            let vs_id = derived_id(&[&stack.id, sid]);
            storage_ids.push(vs_id.clone());
            out.virtual_storage_resource_info
                .push(VirtualStorageResourceInfo {
                    id: vs_id,
                    virtual_storage_desc_id: sid.clone(),
                    vnfd_id: Some(inputs.vnfd_id.clone()),
                    storage_resource: handle(r, vim),
                    zone_id: None,
                    reservation_id: None,
                    metadata: Some(stack_meta(&stack, sid)),
                });
        }

        // Connection points of this VNFC.
        let mut cps = Vec::new();
        let mut vdu_cps: Vec<_> = flavour
            .vdu_cps
            .iter()
            .filter(|c| c.vdu.as_deref() == Some(vdu.id.as_str()))
            .collect();
        vdu_cps.sort_by_key(|c| (c.order.unwrap_or(u32::MAX), c.id.clone()));
        for cpd in vdu_cps {
            let port = idx
                .by_stack
                .get(&(stack.id.clone(), cpd.id.clone()))
                .filter(|r| is(&config.port_types, r));
            let cp_id = format!("{}-{id}", cpd.id);
            let mut cp = VnfcCpInfo {
                id: cp_id.clone(),
                cpd_id: cpd.id.clone(),
                vnf_ext_cp_id: None,
                cp_protocol_info: port.and_then(|p| port_protocol(p)),
                vnf_link_port_id: None,
                parent_cp_id: None,
                metadata: None,
            };
            if let Some(port) = port {
                let port_id = derived_id(&[&stack.id, &cpd.id]);
                let link_port = VnfLinkPortInfo {
                    id: port_id.clone(),
                    resource_handle: handle(port, vim),
                    cp_instance_id: Some(cp_id.clone()),
                    cp_instance_type: Some(CpInstanceType::VnfcCp),
                    vip_cp_instance_id: None,
                    trunk_resource_id: None,
                };
                let internal = cpd
                    .virtual_link
                    .as_ref()
                    .and_then(|vl| vl_infos.get_mut(vl));
                let managed_vl = cpd.virtual_link.as_ref().and_then(|vl| {
                    managed
                        .iter_mut()
                        .find(|m| &m.vnf_virtual_link_desc_id == vl)
                });
                if let Some(vl) = internal {
                    cp.vnf_link_port_id = Some(port_id.clone());
                    vl.vnf_link_ports
                        .get_or_insert_with(Vec::new)
                        .push(link_port);
                } else if let Some(m) = managed_vl {
                    cp.vnf_link_port_id = Some(port_id.clone());
                    m.vnf_link_ports
                        .get_or_insert_with(Vec::new)
                        .push(link_port);
                } else if let Some(link) = ext_links
                    .iter_mut()
                    .find(|l| l.current_vnf_ext_cp_data.iter().any(|c| c.cpd_id == cpd.id))
                {
                    let ext_cp_id = format!("cp-{port_id}");
                    let config_id = link
                        .current_vnf_ext_cp_data
                        .iter()
                        .find(|c| c.cpd_id == cpd.id)
                        .and_then(|c| c.cp_config.keys().next().cloned());
                    link.ext_link_ports
                        .get_or_insert_with(Vec::new)
                        .push(ExtLinkPortInfo {
                            id: port_id.clone(),
                            resource_handle: handle(port, vim),
                            cp_instance_id: Some(ext_cp_id.clone()),
                            secondary_cp_instance_id: None,
                            trunk_resource_id: None,
                        });
                    out.ext_cp_info.push(VnfExtCpInfo {
                        id: ext_cp_id.clone(),
                        cpd_id: cpd.id.clone(),
                        cp_config_id: config_id,
                        vnfd_id: Some(inputs.vnfd_id.clone()),
                        cp_protocol_info: cp.cp_protocol_info.clone(),
                        ext_link_port_id: Some(port_id.clone()),
                        metadata: None,
                        associated_vnfc_cp_id: Some(cp_id.clone()),
                        associated_vip_cp_id: None,
                        associated_virtual_cp_id: None,
                        associated_vnf_virtual_link_id: None,
                    });
                    cp.vnf_ext_cp_id = Some(ext_cp_id);
                }
            }
            cps.push(cp);
        }

        let info_id = format!("{}-{id}", vdu.id);
        out.vnfc_info.push(VnfcInfo {
            id: info_id.clone(),
            vdu_id: vdu.id.clone(),
            vnfc_resource_info_id: Some(id.clone()),
            vnfc_state: inputs
                .vnfc_states
                .get(&info_id)
                .copied()
                .unwrap_or(inputs.default_state),
            vnfc_configurable_properties: None,
        });
        out.vnfc_resource_info.push(VnfcResourceInfo {
            id,
            vdu_id: vdu.id.clone(),
            vnfd_id: Some(inputs.vnfd_id.clone()),
            compute_resource: handle(server, vim),
            zone_id: None,
            storage_resource_ids: (!storage_ids.is_empty()).then_some(storage_ids),
            reservation_id: None,
            vnfc_cp_info: (!cps.is_empty()).then_some(cps),
            metadata: Some(meta),
        });
    }
    out.vnf_virtual_link_resource_info = vl_infos.into_values().collect();
    out.ext_virtual_link_info = ext_links;
    out.ext_managed_virtual_link_info = managed;
    out
}

fn stack_meta(stack: &StackRef, name: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("stackId".into(), json!(stack.id));
    m.insert("stackName".into(), json!(stack.name));
    m.insert("resourceName".into(), json!(name));
    m
}

/// What changed from the recorded resources `before` to `after`: VNFCs, VLs and storages that
/// appeared (`ADDED`), disappeared (`REMOVED`) or kept their id with a new backing resource
/// (`MODIFIED`, e.g. a healed server).
pub fn changes(before: &InstanceResources, after: &InstanceResources) -> ResourceChanges {
    let storage_of = |v: &VnfcResourceInfo| v.storage_resource_ids.clone().unwrap_or_default();
    let d = diff(&before.vnfc_resource_info, &after.vnfc_resource_info);
    let vnfcs: Vec<AffectedVnfc> = d
        .changed
        .into_iter()
        .map(|(v, change)| match change {
            ChangeType::Added => affected_vnfc_with_storage(v, change, storage_of(v), vec![]),
            _ => affected_vnfc(v, change),
        })
        .chain(
            d.removed
                .into_iter()
                .map(|v| affected_vnfc_with_storage(v, ChangeType::Removed, vec![], storage_of(v))),
        )
        .collect();
    let d = diff(
        &before.vnf_virtual_link_resource_info,
        &after.vnf_virtual_link_resource_info,
    );
    let vls: Vec<AffectedVirtualLink> = d
        .changed
        .into_iter()
        .map(|(v, change)| affected_virtual_link(v, change))
        .chain(
            d.removed
                .into_iter()
                .map(|v| affected_virtual_link(v, ChangeType::Removed)),
        )
        .collect();
    let d = diff(
        &before.virtual_storage_resource_info,
        &after.virtual_storage_resource_info,
    );
    let storages: Vec<AffectedVirtualStorage> = d
        .changed
        .into_iter()
        .map(|(s, change)| affected_storage(s, change))
        .chain(
            d.removed
                .into_iter()
                .map(|s| affected_storage(s, ChangeType::Removed)),
        )
        .collect();
    ResourceChanges {
        affected_vnfcs: (!vnfcs.is_empty()).then_some(vnfcs),
        affected_virtual_links: (!vls.is_empty()).then_some(vls),
        affected_ext_link_ports: None,
        affected_virtual_storages: (!storages.is_empty()).then_some(storages),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vnfc(id: &str, server: &str) -> VnfcResourceInfo {
        serde_json::from_value(json!({
            "id": id, "vduId": "VDU1",
            "computeResource": {"resourceId": server, "vimLevelResourceType": "OS::Nova::Server"},
            "storageResourceIds": [format!("st-{id}")]
        }))
        .unwrap()
    }

    #[test]
    fn changes_report_added_removed_and_replaced_servers() {
        let before = InstanceResources {
            vnfc_resource_info: vec![vnfc("a", "srv-1"), vnfc("b", "srv-2"), vnfc("d", "srv-5")],
            ..Default::default()
        };
        let after = InstanceResources {
            vnfc_resource_info: vec![vnfc("a", "srv-1"), vnfc("b", "srv-3"), vnfc("c", "srv-4")],
            ..Default::default()
        };
        let c = changes(&before, &after);
        let got: Vec<(String, ChangeType, String)> = c
            .affected_vnfcs
            .unwrap()
            .into_iter()
            .map(|a| (a.id, a.change_type, a.compute_resource.resource_id))
            .collect();
        assert_eq!(
            got,
            vec![
                ("b".into(), ChangeType::Modified, "srv-3".into()),
                ("c".into(), ChangeType::Added, "srv-4".into()),
                ("d".into(), ChangeType::Removed, "srv-5".into()),
            ]
        );
        assert!(changes(&after, &after).affected_vnfcs.is_none());
    }
}
