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
//! A VNFC and a storage follow their server and volume, as Tacker records them: the id is
//! the one the instance recorded for the same server (volume), else the server's (volume's)
//! own id, so a server Heat replaces (a heal, a change of package, their rollbacks) is a new
//! VNFC and its new volume a new storage ([`InventoryInputs::recorded`]). Ports and networks
//! have ids derived from the stack that holds them and their name: they stay while the stack
//! does and are new after a scale-out or a whole-VNF re-creation.

use std::collections::{BTreeMap, BTreeSet};

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
    AffectedExtLinkPort, AffectedVirtualLink, AffectedVirtualStorage, AffectedVnfc, ChangeType,
    CpInstanceType, CpProtocolInfo, ExtLinkPortInfo, ExtManagedVirtualLinkInfo, ExtVirtualLinkData,
    IpAddressInfo, IpAddressType, IpOverEthernetAddressInfo, LayerProtocol, ResourceChanges,
    ResourceHandle, VirtualStorageResourceInfo, VnfExtCpInfo, VnfLinkPortInfo, VnfOperationalState,
    VnfVirtualLinkResourceInfo, VnfcCpInfo, VnfcInfo, VnfcResourceInfo, VnfdId,
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
    /// The `nfv` parameter the stack was made with, for the flavour, images and zone each
    /// VNFC records in its metadata (none when not known).
    pub nfv: Option<&'a Value>,
    /// The resources the instance recorded before the step: a VNFC whose server, or a storage
    /// whose volume, the instance recorded keeps its recorded id (none: every id is new).
    pub recorded: Option<&'a InstanceResources>,
    /// The `vnfcInfo` ids the instance's metadata gives its VNFCs ([`vnfc_names`]).
    pub vnfc_names: Option<&'a Value>,
}

/// The `vnfcInfo` ids `instance`'s metadata gives its VNFCs
/// ([`vnfm_driver_api::vnfc_names`]), if any.
pub fn vnfc_names(instance: &vnfm_types::VnfInstance) -> Option<&Value> {
    vnfm_driver_api::vnfc_names::of(instance)
}

/// The `vnfcInfo` id of the VNFC `resource_id` of `vdu` with index `vdu_idx`: the one
/// `names` gives it, else `<VDU>-<resource id>`.
fn vnfc_info_id(
    names: Option<&Value>,
    vdu: &str,
    vdu_idx: Option<u32>,
    resource_id: &str,
) -> String {
    vdu_idx
        .and_then(|i| {
            names?
                .get(vdu)?
                .as_array()?
                .get(usize::try_from(i).ok()?)?
                .as_str()
        })
        .filter(|name| !name.is_empty())
        .map_or_else(|| format!("{vdu}-{resource_id}"), str::to_owned)
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

/// The id of the record of `r`, a server or a volume: the id the instance recorded for the
/// same VIM resource (`recorded`: record ids with their resource ids), so that it stays
/// while the resource lives; else the resource's own id, as Tacker records it, so that a
/// resource Heat replaced is a new record; one Heat has not made yet (no physical id) gets
/// an id derived from its stack and name.
fn record_id<'r>(
    r: &HeatResource,
    stack_id: &str,
    mut recorded: impl Iterator<Item = (&'r str, &'r str)>,
) -> String {
    if r.physical_resource_id.is_empty() {
        return derived_id(&[stack_id, &r.resource_name]);
    }
    recorded
        .find(|(_, resource)| *resource == r.physical_resource_id)
        .map_or_else(|| r.physical_resource_id.clone(), |(id, _)| id.to_string())
}

/// The link ports `r` recorded, `(id, port id)`: on internal, external and externally
/// managed virtual links.
fn recorded_ports(r: &InstanceResources) -> impl Iterator<Item = (&str, &str)> {
    let internal = r
        .vnf_virtual_link_resource_info
        .iter()
        .flat_map(|v| v.vnf_link_ports.iter().flatten())
        .map(|p| (p.id.as_str(), p.resource_handle.resource_id.as_str()));
    let managed = r
        .ext_managed_virtual_link_info
        .iter()
        .flat_map(|m| m.vnf_link_ports.iter().flatten())
        .map(|p| (p.id.as_str(), p.resource_handle.resource_id.as_str()));
    let external =
        ext_link_ports(r).map(|p| (p.id.as_str(), p.resource_handle.resource_id.as_str()));
    internal.chain(managed).chain(external)
}

/// Every external link port of `r`.
fn ext_link_ports(r: &InstanceResources) -> impl Iterator<Item = &ExtLinkPortInfo> {
    r.ext_virtual_link_info
        .iter()
        .flat_map(|l| l.ext_link_ports.iter().flatten())
}

/// The external link ports of `after` that `before` does not have (`ADDED`), and those of
/// `before` that `after` does not have (`REMOVED`), by id.
fn affected_ext_link_ports(
    before: &InstanceResources,
    after: &InstanceResources,
) -> Vec<AffectedExtLinkPort> {
    let ids = |r| {
        ext_link_ports(r)
            .map(|p| p.id.clone())
            .collect::<BTreeSet<_>>()
    };
    let (ids_before, ids_after) = (ids(before), ids(after));
    let affected = |p: &ExtLinkPortInfo, change_type| AffectedExtLinkPort {
        id: p.id.clone(),
        change_type,
        ext_cp_instance_id: p.cp_instance_id.clone().unwrap_or_default(),
        resource_handle: p.resource_handle.clone(),
        resource_definition_id: None,
    };
    ext_link_ports(after)
        .filter(|p| !ids_before.contains(&p.id))
        .map(|p| affected(p, ChangeType::Added))
        .chain(
            ext_link_ports(before)
                .filter(|p| !ids_after.contains(&p.id))
                .map(|p| affected(p, ChangeType::Removed)),
        )
        .collect()
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
    // The request's link ports come with the links in force; the stack's are added below.
    let (mut ext_links, request_cps) =
        crate::ext_links::link_info(inputs.ext_virtual_links, vim, inputs.vnfd_id);
    out.ext_cp_info = request_cps;

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
        let recorded_vnfcs = inputs
            .recorded
            .into_iter()
            .flat_map(|r| &r.vnfc_resource_info)
            .map(|v| (v.id.as_str(), v.compute_resource.resource_id.as_str()));
        let id = record_id(server, &stack.id, recorded_vnfcs);
        let mut meta = stack_meta(&stack, &server.resource_name);
        if let Some(t) = &server.creation_time {
            meta.insert(meta_key::CREATION_TIME.into(), json!(t));
        }
        let mut vdu_idx = None;
        if let Some(member) = idx.owner_of_stack.get(&stack.id)
            && let Some(group_stack) = member.stack()
        {
            let group = idx.owner_of_stack.get(&group_stack.id);
            if group.is_some_and(|g| g.resource_type == "OS::Heat::AutoScalingGroup") {
                meta.insert(meta_key::PARENT_STACK_ID.into(), json!(group_stack.id));
                meta.insert(meta_key::PARENT_STACK_NAME.into(), json!(group_stack.name));
                meta.insert(
                    meta_key::PARENT_RESOURCE_NAME.into(),
                    json!(member.resource_name),
                );
            } else if let Some((base, i)) = crate::userdata::split_index(&member.resource_name)
                && base == vdu.id
            {
                // One resource per VNFC (Tacker's StandardUserData): `VDU1-0`.
                meta.insert(meta_key::VDU_IDX.into(), json!(i));
                vdu_idx = Some(i);
            }
        }
        let from_nfv = inputs.nfv.map_or_else(Map::new, |nfv| {
            nfv_meta(nfv, &vdu.id, &vdu.virtual_storages, vdu_idx)
        });
        let zone_id = from_nfv
            .get(meta_key::ZONE)
            .and_then(Value::as_str)
            .map(str::to_string);
        meta.extend(from_nfv);
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
            let recorded_storages = inputs
                .recorded
                .into_iter()
                .flat_map(|r| &r.virtual_storage_resource_info)
                .map(|s| (s.id.as_str(), s.storage_resource.resource_id.as_str()));
            let vs_id = record_id(r, &stack.id, recorded_storages);
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
                // As a server, a port is recorded by its own id (Tacker's), an id recorded
                // for the same port kept: a port Heat replaced is a new link port.
                let recorded_ports = inputs.recorded.into_iter().flat_map(recorded_ports);
                let port_id = record_id(port, &stack.id, recorded_ports);
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
                    let ext_cp_id = crate::ext_links::ext_cp_id(&port_id);
                    let config_id = link
                        .current_vnf_ext_cp_data
                        .iter()
                        .find(|c| c.cpd_id == cpd.id)
                        .and_then(|c| c.cp_config.keys().next().cloned());
                    crate::ext_links::attach_stack_port(
                        link,
                        ExtLinkPortInfo {
                            id: port_id.clone(),
                            resource_handle: handle(port, vim),
                            cp_instance_id: Some(ext_cp_id.clone()),
                            secondary_cp_instance_id: None,
                            trunk_resource_id: None,
                        },
                    );
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

        let info_id = vnfc_info_id(inputs.vnfc_names, &vdu.id, vdu_idx, &id);
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
            zone_id,
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

/// The keys of the `metadata` of the resources the inventory records, Tacker's where Tacker
/// writes the same information (its functional tests read `vdu_idx`, `flavor` and the
/// `image-*` keys), in Tacker's style otherwise. Records made before these names were
/// written with camelCase keys (`stackId`, `vduIdx`, ...); [`meta_str`] reads both.
pub mod meta_key {
    /// The id of the (nested) stack that holds the resource (Tacker's).
    pub const STACK_ID: &str = "stack_id";
    /// The name of that stack.
    pub const STACK_NAME: &str = "stack_name";
    /// The resource's name in that stack's template.
    pub const RESOURCE_NAME: &str = "resource_name";
    /// When Heat created the server (Tacker's).
    pub const CREATION_TIME: &str = "creation_time";
    /// The id of the stack of the `OS::Heat::AutoScalingGroup` the VNFC is a member of
    /// (Tacker's).
    pub const PARENT_STACK_ID: &str = "parent_stack_id";
    /// The name of that stack.
    pub const PARENT_STACK_NAME: &str = "parent_stack_name";
    /// The member's resource name in that group (Tacker's).
    pub const PARENT_RESOURCE_NAME: &str = "parent_resource_name";
    /// The VNFC's index with one resource per VNFC, `VDU1-<n>` (Tacker's `StandardUserData`;
    /// Tacker's).
    pub const VDU_IDX: &str = "vdu_idx";
    /// The compute flavour the VNFC was made with, from the `nfv` parameter (Tacker's).
    pub const FLAVOR: &str = "flavor";
    /// The availability zone the VNFC was placed in, from the `nfv` parameter (Tacker's).
    pub const ZONE: &str = "zone";
    /// Prefix of the image of the VDU or of one of its storages, from the `nfv` parameter:
    /// `image-VDU1`, `image-VDU1-VirtualStorage-0` (Tacker's).
    pub const IMAGE_PREFIX: &str = "image-";

    /// The key records made before these names used for `key`.
    pub(crate) fn former(key: &str) -> Option<&'static str> {
        Some(match key {
            STACK_ID => "stackId",
            STACK_NAME => "stackName",
            RESOURCE_NAME => "resourceName",
            CREATION_TIME => "creationTime",
            PARENT_STACK_ID => "parentStackId",
            PARENT_STACK_NAME => "parentStackName",
            PARENT_RESOURCE_NAME => "parentResourceName",
            VDU_IDX => "vduIdx",
            _ => return None,
        })
    }
}

/// The string under `key` in a VNFC's metadata, or under the key records made before
/// [`meta_key`] used for it.
pub fn meta_str<'a>(v: &'a VnfcResourceInfo, key: &str) -> Option<&'a str> {
    let m = v.metadata.as_ref()?;
    m.get(key)
        .or_else(|| meta_key::former(key).and_then(|k| m.get(k)))?
        .as_str()
}

fn stack_meta(stack: &StackRef, name: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(meta_key::STACK_ID.into(), json!(stack.id));
    m.insert(meta_key::STACK_NAME.into(), json!(stack.name));
    m.insert(meta_key::RESOURCE_NAME.into(), json!(name));
    m
}

/// What the `nfv` parameter says of a VNFC of `vdu` (with the storages `storages`; `idx`
/// with one resource per VNFC), as Tacker records it: `flavor` (`computeFlavourId` or
/// `flavor`), `image-<name>` per VDU and storage with an image (`vcImageId` or `image`) and
/// `zone` (`locationConstraints`), under the names `<vdu>` / `<vdu>-<idx>`.
fn nfv_meta(nfv: &Value, vdu: &str, storages: &[String], idx: Option<u32>) -> Map<String, Value> {
    let named = |name: &str| match idx {
        Some(i) => format!("{name}-{i}"),
        None => name.to_string(),
    };
    let entry = |name: &str, keys: &[&str]| -> Option<Value> {
        let e = nfv.get("VDU")?.get(name)?;
        keys.iter()
            .find_map(|k| e.get(*k).filter(|v| v.is_string()).cloned())
    };
    let mut m = Map::new();
    let vdu_name = named(vdu);
    if let Some(f) = entry(&vdu_name, &["computeFlavourId", "flavor"]) {
        m.insert(meta_key::FLAVOR.into(), f);
    }
    for name in std::iter::once(vdu_name.clone()).chain(storages.iter().map(|s| named(s))) {
        if let Some(image) = entry(&name, &["vcImageId", "image"]) {
            m.insert(format!("{}{name}", meta_key::IMAGE_PREFIX), image);
        }
    }
    if let Some(z) = entry(&vdu_name, &["locationConstraints"]) {
        m.insert(meta_key::ZONE.into(), z);
    }
    m
}

/// What changed from the recorded resources `before` to `after`: VNFCs, VLs and storages that
/// appeared (`ADDED`), disappeared (`REMOVED`) or kept their id with a new backing resource
/// (`MODIFIED`, e.g. a healed server), and external link ports that appeared or disappeared
/// (a port Heat replaced, as a CHANGE_EXT_CONN replaces them, is both).
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
    let ports = affected_ext_link_ports(before, after);
    ResourceChanges {
        affected_vnfcs: (!vnfcs.is_empty()).then_some(vnfcs),
        affected_virtual_links: (!vls.is_empty()).then_some(vls),
        affected_ext_link_ports: (!ports.is_empty()).then_some(ports),
        affected_virtual_storages: (!storages.is_empty()).then_some(storages),
    }
}

#[cfg(test)]
mod tests;
