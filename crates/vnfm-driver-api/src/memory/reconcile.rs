//! How the fake VIM changes an inventory: ids, external links, counts, and the resources
//! and resource changes it reports.

use std::collections::BTreeMap;

use vnfm_descriptor::Flavour;
use vnfm_types::{
    AffectedVirtualLink, AffectedVirtualStorage, AffectedVnfc, ChangeType, CpProtocolData,
    CpProtocolInfo, ExtVirtualLinkData, ExtVirtualLinkInfo, IpAddressInfo, IpAddressType,
    IpOverEthernetAddressInfo, LayerProtocol, OperationParams, ResourceChanges, ResourceHandle,
    VirtualCpAddressInfo, VirtualStorageResourceInfo, VnfExtCpInfo, VnfInstanceId, VnfLinkPortInfo,
    VnfVirtualLinkResourceInfo, VnfcCpInfo, VnfcInfo, VnfcResourceInfo,
};

use super::infra::*;
use crate::{DriverError, InfraRequest, InstanceResources, ResourceTarget};

/// Id generator borrowed from the state while an inventory is borrowed mutably: the
/// counter and the driver's id prefix.
pub(super) struct Ids<'a>(pub(super) &'a mut u64, pub(super) &'a str);

impl Ids<'_> {
    pub(super) fn next(&mut self, prefix: &str) -> String {
        *self.0 += 1;
        format!("{}{prefix}-{:04}", self.1, *self.0)
    }
}

pub(super) fn with_inventory(
    st: &mut InfraState,
    id: &VnfInstanceId,
    f: impl FnOnce(&mut Inventory, &mut Ids<'_>) -> Result<(), DriverError>,
) -> Result<(), DriverError> {
    let InfraState {
        inventories,
        seq,
        id_prefix,
        ..
    } = st;
    let inv = inventories.get_mut(id).ok_or_else(|| {
        DriverError::permanent(format!(
            "the memory VIM holds no resources for instance {id}"
        ))
    })?;
    f(inv, &mut Ids(seq, id_prefix))
}

pub(super) fn flavour_of<'a>(
    req: &'a InfraRequest,
    flavour_id: &str,
) -> Result<&'a Flavour, DriverError> {
    req.vnfd.flavour(flavour_id).ok_or_else(|| {
        DriverError::invalid_input(format!(
            "the VNFD {} has no flavour `{flavour_id}`",
            req.vnfd.descriptor_id
        ))
    })
}

pub(super) fn ext_links_of(request: &OperationParams) -> Option<&[ExtVirtualLinkData]> {
    match request {
        OperationParams::Instantiate(r) => r.ext_virtual_links.as_deref(),
        OperationParams::ChangeFlavour(r) => r.ext_virtual_links.as_deref(),
        OperationParams::ChangeExtConn(r) => Some(&r.ext_virtual_links),
        OperationParams::ChangeVnfpkg(r) => r.ext_virtual_links.as_deref(),
        _ => None,
    }
}

pub(super) fn externally_managed(request: &OperationParams) -> Vec<String> {
    let list = match request {
        OperationParams::Instantiate(r) => r.ext_managed_virtual_links.as_deref(),
        OperationParams::ChangeFlavour(r) => r.ext_managed_virtual_links.as_deref(),
        _ => None,
    };
    list.unwrap_or_default()
        .iter()
        .map(|l| l.vnf_virtual_link_desc_id.clone())
        .collect()
}

/// Replaces the external links named in `vls` (by id) and the external CPs of their CPDs.
pub(super) fn set_ext_links(inv: &mut Inventory, vls: &[ExtVirtualLinkData], ids: &mut Ids<'_>) {
    for vl in vls {
        let unchanged = inv.ext_virtual_links.iter().any(|l| {
            l.id == vl.id
                && l.resource_handle.resource_id == vl.resource_id
                && l.current_vnf_ext_cp_data == vl.ext_cps
        });
        if unchanged {
            // A retried step: the link is already as requested.
            continue;
        }
        let cpds: Vec<&str> = vl.ext_cps.iter().map(|c| c.cpd_id.as_str()).collect();
        inv.ext_cps.retain(|cp| !cpds.contains(&cp.cpd_id.as_str()));
        for cp in &vl.ext_cps {
            for (config_id, config) in &cp.cp_config {
                inv.ext_cps.push(VnfExtCpInfo {
                    id: ids.next("extcp"),
                    cpd_id: cp.cpd_id.clone(),
                    cp_config_id: Some(config_id.clone()),
                    vnfd_id: Some(inv.vnfd_id.clone()),
                    cp_protocol_info: Some(ext_cp_protocol_info(
                        config.cp_protocol_data.as_deref().unwrap_or_default(),
                    )),
                    ext_link_port_id: None,
                    metadata: None,
                    associated_vnfc_cp_id: None,
                    associated_vip_cp_id: None,
                    associated_virtual_cp_id: None,
                    associated_vnf_virtual_link_id: None,
                });
            }
        }
        inv.ext_virtual_links.retain(|l| l.id != vl.id);
        let mut handle = ResourceHandle::new(vl.resource_id.clone());
        handle.vim_connection_id = vl.vim_connection_id.clone();
        inv.ext_virtual_links.push(ExtVirtualLinkInfo {
            id: vl.id.clone(),
            resource_handle: handle,
            ext_link_ports: None,
            current_vnf_ext_cp_data: vl.ext_cps.clone(),
        });
    }
}

/// What the fake VIM reports of an external CP's protocols: the `cpProtocolData` requested
/// (fixed addresses as its addresses, dynamic ones flagged `isDynamic`), or IP over Ethernet
/// with nothing known when none was given, so the CP always has its protocol information
/// (SOL003 v2.6.1 makes `VnfExtCpInfo.cpProtocolInfo` mandatory).
pub(super) fn ext_cp_protocol_info(data: &[CpProtocolData]) -> Vec<CpProtocolInfo> {
    if data.is_empty() {
        return vec![CpProtocolInfo {
            layer_protocol: LayerProtocol::IpOverEthernet,
            ip_over_ethernet: None,
            virtual_cp_address: None,
        }];
    }
    data.iter()
        .map(|d| CpProtocolInfo {
            layer_protocol: d.layer_protocol,
            ip_over_ethernet: d
                .ip_over_ethernet
                .as_ref()
                .map(|e| IpOverEthernetAddressInfo {
                    mac_address: e.mac_address.clone(),
                    segmentation_id: e.segmentation_id.clone(),
                    ip_addresses: e.ip_addresses.as_ref().map(|list| {
                        list.iter()
                            .map(|a| IpAddressInfo {
                                ip_type: a.ip_type,
                                addresses: a.fixed_addresses.clone(),
                                is_dynamic: a.num_dynamic_addresses.map(|n| n > 0),
                                address_range: a.address_range.clone(),
                                subnet_id: a.subnet_id.clone(),
                            })
                            .collect()
                    }),
                }),
            virtual_cp_address: d.virtual_cp_address.as_ref().map(|v| VirtualCpAddressInfo {
                ip_type: v.ip_type,
                load_balancer_ip: v.load_balancer_ip.clone(),
            }),
        })
        .collect()
}

/// Adds the flavour's internal VLs that are missing and removes those the flavour no longer has.
pub(super) fn sync_virtual_links(
    inv: &mut Inventory,
    flavour: &Flavour,
    managed: &[String],
    ids: &mut Ids<'_>,
    changes: &mut Changes,
) {
    let wanted: Vec<&str> = flavour
        .virtual_links
        .iter()
        .map(|v| v.id.as_str())
        .filter(|v| !managed.iter().any(|m| m == v))
        .collect();
    let vim = inv.vim_connection_id.clone();
    let (keep, drop): (Vec<_>, Vec<_>) = std::mem::take(&mut inv.virtual_links)
        .into_iter()
        .partition(|vl| wanted.contains(&vl.vld_id.as_str()));
    for vl in &drop {
        changes.vl(vl, ChangeType::Removed, &vim);
    }
    inv.virtual_links = keep;
    for vld in wanted {
        if !inv.virtual_links.iter().any(|v| v.vld_id == vld) {
            let vl = MemVirtualLink {
                id: ids.next("vl"),
                vld_id: vld.to_string(),
                network_id: ids.next("net"),
            };
            changes.vl(&vl, ChangeType::Added, &vim);
            inv.virtual_links.push(vl);
        }
    }
}

/// Brings the VNFC counts to `target`: adds VNFCs, or removes the newest ones.
pub(super) fn reconcile(
    inv: &mut Inventory,
    flavour: &Flavour,
    target: &ResourceTarget,
    ids: &mut Ids<'_>,
    pool: &[String],
    changes: &mut Changes,
) {
    let vim = inv.vim_connection_id.clone();
    // VDUs that the (possibly new) flavour does not have lose all their VNFCs.
    let (keep, drop): (Vec<_>, Vec<_>) = std::mem::take(&mut inv.vnfcs)
        .into_iter()
        .partition(|v| flavour.vdu(&v.vdu_id).is_some());
    for v in &drop {
        changes.vnfc(v, ChangeType::Removed, &vim);
    }
    inv.vnfcs = keep;
    for vdu in &flavour.vdus {
        let want = target.instances_of(&vdu.id);
        let have = inv.count(&vdu.id);
        for _ in have..want {
            let address = pool
                .iter()
                .find(|a| !inv.vnfcs.iter().any(|v| v.address.as_ref() == Some(*a)))
                .cloned();
            let address_cps = if address.is_some() {
                flavour
                    .vdu_cps
                    .iter()
                    .filter(|cp| cp.vdu.as_deref() == Some(vdu.id.as_str()))
                    .filter(|cp| cp.virtual_link.is_none())
                    .map(|cp| cp.id.clone())
                    .collect()
            } else {
                Vec::new()
            };
            let vnfc = MemVnfc {
                id: ids.next("vnfc"),
                vdu_id: vdu.id.clone(),
                compute_id: ids.next("server"),
                storages: vdu
                    .virtual_storages
                    .iter()
                    .map(|s| (s.clone(), ids.next("storage"), ids.next("volume")))
                    .collect(),
                state: inv.vnf_state,
                address,
                address_cps,
            };
            changes.vnfc(&vnfc, ChangeType::Added, &vim);
            inv.vnfcs.push(vnfc);
        }
        for _ in want..have {
            if let Some(pos) = inv.vnfcs.iter().rposition(|v| v.vdu_id == vdu.id) {
                let v = inv.vnfcs.remove(pos);
                changes.vnfc(&v, ChangeType::Removed, &vim);
            }
        }
    }
}

pub(super) fn remove_all(inv: &Inventory, changes: &mut Changes) {
    let vim = inv.vim_connection_id.clone();
    for v in &inv.vnfcs {
        changes.vnfc(v, ChangeType::Removed, &vim);
    }
    for vl in &inv.virtual_links {
        changes.vl(vl, ChangeType::Removed, &vim);
    }
}

pub(super) fn handle(id: &str, kind: &str, vim: &Option<String>) -> ResourceHandle {
    let mut h = ResourceHandle::new(id);
    h.vim_connection_id = vim.clone();
    h.vim_level_resource_type = Some(kind.to_string());
    h
}

pub(super) fn resources_of(inv: &Inventory) -> InstanceResources {
    let vim = &inv.vim_connection_id;
    let mut vl_ports: BTreeMap<String, Vec<VnfLinkPortInfo>> = BTreeMap::new();
    let mut res = InstanceResources::default();
    for v in &inv.vnfcs {
        res.vnfc_resource_info.push(VnfcResourceInfo {
            id: v.id.clone(),
            vdu_id: v.vdu_id.clone(),
            vnfd_id: Some(inv.vnfd_id.clone()),
            compute_resource: handle(&v.compute_id, "memory.Compute", vim),
            zone_id: None,
            storage_resource_ids: (!v.storages.is_empty())
                .then(|| v.storages.iter().map(|s| s.1.clone()).collect()),
            reservation_id: None,
            vnfc_cp_info: None,
            metadata: None,
        });
        res.vnfc_info.push(VnfcInfo {
            // Tacker's convention: `<vduId>-<vnfcResourceInfo id>`.
            id: format!("{}-{}", v.vdu_id, v.id),
            vdu_id: v.vdu_id.clone(),
            vnfc_resource_info_id: Some(v.id.clone()),
            vnfc_state: v.state,
            vnfc_configurable_properties: None,
        });
        for (desc, sid, rid) in &v.storages {
            res.virtual_storage_resource_info
                .push(VirtualStorageResourceInfo {
                    id: sid.clone(),
                    virtual_storage_desc_id: desc.clone(),
                    vnfd_id: Some(inv.vnfd_id.clone()),
                    storage_resource: handle(rid, "memory.Volume", vim),
                    zone_id: None,
                    reservation_id: None,
                    metadata: None,
                });
        }
    }
    // One port per VNFC on each internal VL, named after the VNFC.
    for vl in &inv.virtual_links {
        for v in &inv.vnfcs {
            vl_ports
                .entry(vl.id.clone())
                .or_default()
                .push(VnfLinkPortInfo {
                    id: format!("port-{}-{}", vl.id, v.id),
                    resource_handle: handle(
                        &format!("port-{}-{}", vl.network_id, v.compute_id),
                        "memory.Port",
                        vim,
                    ),
                    cp_instance_id: Some(format!("cp-{}-{}", vl.vld_id, v.id)),
                    cp_instance_type: Some(vnfm_types::CpInstanceType::VnfcCp),
                    vip_cp_instance_id: None,
                    trunk_resource_id: None,
                });
        }
        res.vnf_virtual_link_resource_info
            .push(VnfVirtualLinkResourceInfo {
                id: vl.id.clone(),
                vnf_virtual_link_desc_id: vl.vld_id.clone(),
                vnfd_id: Some(inv.vnfd_id.clone()),
                network_resource: handle(&vl.network_id, "memory.Network", vim),
                zone_id: None,
                reservation_id: None,
                vnf_link_ports: vl_ports.remove(&vl.id),
                metadata: None,
            });
    }
    for r in res.vnfc_resource_info.iter_mut() {
        let cps: Vec<VnfcCpInfo> = inv
            .virtual_links
            .iter()
            .map(|vl| VnfcCpInfo {
                id: format!("cp-{}-{}", vl.vld_id, r.id),
                cpd_id: vl.vld_id.clone(),
                vnf_ext_cp_id: None,
                cp_protocol_info: None,
                vnf_link_port_id: Some(format!("port-{}-{}", vl.id, r.id)),
                parent_cp_id: None,
                metadata: None,
            })
            .collect();
        let mut cps = cps;
        if let Some(v) = inv.vnfcs.iter().find(|v| v.id == r.id)
            && let Some(addr) = &v.address
        {
            for cpd in &v.address_cps {
                cps.push(VnfcCpInfo {
                    id: format!("cp-{cpd}-{}", r.id),
                    cpd_id: cpd.clone(),
                    vnf_ext_cp_id: None,
                    cp_protocol_info: Some(vec![CpProtocolInfo {
                        layer_protocol: LayerProtocol::IpOverEthernet,
                        ip_over_ethernet: Some(IpOverEthernetAddressInfo {
                            mac_address: None,
                            segmentation_id: None,
                            ip_addresses: Some(vec![IpAddressInfo {
                                ip_type: IpAddressType::Ipv4,
                                addresses: Some(vec![addr.clone()]),
                                is_dynamic: None,
                                address_range: None,
                                subnet_id: None,
                            }]),
                        }),
                        virtual_cp_address: None,
                    }]),
                    vnf_link_port_id: None,
                    parent_cp_id: None,
                    metadata: None,
                });
            }
        }
        r.vnfc_cp_info = (!cps.is_empty()).then_some(cps);
    }
    res.ext_cp_info = inv.ext_cps.clone();
    res.ext_virtual_link_info = inv.ext_virtual_links.clone();
    res
}

#[derive(Default)]
pub(super) struct Changes {
    pub(super) vnfcs: Vec<AffectedVnfc>,
    pub(super) vls: Vec<AffectedVirtualLink>,
    pub(super) storages: Vec<AffectedVirtualStorage>,
}

impl Changes {
    pub(super) fn vnfc(&mut self, v: &MemVnfc, change: ChangeType, vim: &Option<String>) {
        let storage_ids: Vec<String> = v.storages.iter().map(|s| s.1.clone()).collect();
        self.vnfcs.push(AffectedVnfc {
            id: v.id.clone(),
            vdu_id: v.vdu_id.clone(),
            vnfd_id: None,
            change_type: change,
            compute_resource: handle(&v.compute_id, "memory.Compute", vim),
            resource_definition_id: None,
            zone_id: None,
            metadata: None,
            affected_vnfc_cp_ids: None,
            added_storage_resource_ids: (change == ChangeType::Added && !storage_ids.is_empty())
                .then(|| storage_ids.clone()),
            removed_storage_resource_ids: (change == ChangeType::Removed
                && !storage_ids.is_empty())
            .then(|| storage_ids.clone()),
        });
        if matches!(change, ChangeType::Added | ChangeType::Removed) {
            for (desc, sid, rid) in &v.storages {
                self.storages.push(AffectedVirtualStorage {
                    id: sid.clone(),
                    virtual_storage_desc_id: desc.clone(),
                    vnfd_id: None,
                    change_type: change,
                    storage_resource: handle(rid, "memory.Volume", vim),
                    resource_definition_id: None,
                    zone_id: None,
                    metadata: None,
                });
            }
        }
    }

    pub(super) fn vl(&mut self, vl: &MemVirtualLink, change: ChangeType, vim: &Option<String>) {
        self.vls.push(AffectedVirtualLink {
            id: vl.id.clone(),
            vnf_virtual_link_desc_id: vl.vld_id.clone(),
            vnfd_id: None,
            change_type: change,
            network_resource: handle(&vl.network_id, "memory.Network", vim),
            vnf_link_port_ids: None,
            resource_definition_id: None,
            zone_id: None,
            metadata: None,
        });
    }

    pub(super) fn into_resource_changes(self) -> ResourceChanges {
        ResourceChanges {
            affected_vnfcs: (!self.vnfcs.is_empty()).then_some(self.vnfcs),
            affected_virtual_links: (!self.vls.is_empty()).then_some(self.vls),
            affected_ext_link_ports: None,
            affected_virtual_storages: (!self.storages.is_empty()).then_some(self.storages),
        }
    }
}
