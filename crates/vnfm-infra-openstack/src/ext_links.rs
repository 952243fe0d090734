//! The instance's external virtual links and their link ports.
//!
//! A link port of an external VL comes from one of two places:
//!
//! - **the request**: a port the NFVO made and passed in `extLinkPorts`, used by the CP whose
//!   `cpConfig` names it in `linkPortId`. The stack does not know it as a port resource, so
//!   it is carried from one operation to the next in the links in force ([`links_from_info`])
//!   and recorded with the external CP `cp-<portId>` it serves ([`link_info`]), as Tacker
//!   does;
//! - **the stack**: a port Heat made for a CP connected to the link, read back from the
//!   stack's resources after every step ([`crate::inventory`]), with its own external CP.
//!
//! Only the first kind is request data. Carrying the second kind over as if the request had
//! passed it would list it twice (once from the data without its CP, once from Heat) and,
//! after its CP moved to another link, on both links. So the links in force keep only the
//! ports a CP of the link names, and a request's links are laid over those in force
//! ([`overlay_links`]) the way Tacker's `_make_ext_vl_info_from_req_and_inst` does: a CP the
//! request connects leaves its old link (with the port it named there), a link the request
//! names again keeps its other CPs, and a link left without CPs is no longer listed
//! (`currentVnfExtCpData` has at least one entry in SOL003).

use std::collections::BTreeSet;

use vnfm_types::{
    ExtLinkPortData, ExtLinkPortInfo, ExtVirtualLinkData, ExtVirtualLinkInfo, ResourceHandle,
    VnfExtCpData, VnfExtCpInfo, VnfdId,
};

/// The link ports the CPs of `cps` name (`cpConfig.*.linkPortId`).
fn named_ports(cps: &[VnfExtCpData]) -> BTreeSet<&str> {
    cps.iter()
        .flat_map(|c| c.cp_config.values())
        .filter_map(|conf| conf.link_port_id.as_deref())
        .collect()
}

/// Keeps the request's link ports of `link` that a CP of the link still names.
fn keep_named_ports(link: &mut ExtVirtualLinkData) {
    let Some(ports) = link.ext_link_ports.take() else {
        return;
    };
    let named = named_ports(&link.ext_cps);
    let kept: Vec<ExtLinkPortData> = ports
        .into_iter()
        .filter(|p| named.contains(p.id.as_str()))
        .collect();
    link.ext_link_ports = (!kept.is_empty()).then_some(kept);
}

/// The external CP id of a link port (Tacker's `cp-<portId>`).
pub fn ext_cp_id(port_id: &str) -> String {
    format!("cp-{port_id}")
}

/// The external virtual links recorded on an instance, as request data (the links in force
/// for the next operation): each link with its CPs and the link ports of the request a CP
/// names; the ports the stack made are left out, they are read back from the stack.
pub fn links_from_info(info: &[ExtVirtualLinkInfo]) -> Vec<ExtVirtualLinkData> {
    info.iter()
        .map(|l| {
            let mut data = ExtVirtualLinkData {
                id: l.id.clone(),
                vim_connection_id: l.resource_handle.vim_connection_id.clone(),
                resource_provider_id: l.resource_handle.resource_provider_id.clone(),
                resource_id: l.resource_handle.resource_id.clone(),
                ext_cps: l.current_vnf_ext_cp_data.clone(),
                ext_link_ports: l.ext_link_ports.as_ref().map(|ports| {
                    ports
                        .iter()
                        .map(|p| ExtLinkPortData {
                            id: p.id.clone(),
                            resource_handle: p.resource_handle.clone(),
                            trunk_resource_id: p.trunk_resource_id.clone(),
                        })
                        .collect()
                }),
            };
            keep_named_ports(&mut data);
            data
        })
        .collect()
}

/// `current` with the links of `request` laid over it. A CP the request connects leaves the
/// link it was on, together with the request's link port it named there; a link the request
/// names by the id of a current one keeps its other CPs and their ports and takes the
/// request's network, CPs and ports; a link left without CPs is dropped; links new to the
/// instance come last.
pub fn overlay_links(
    current: &[ExtVirtualLinkData],
    request: &[ExtVirtualLinkData],
) -> Vec<ExtVirtualLinkData> {
    let moved: BTreeSet<&str> = request
        .iter()
        .flat_map(|l| l.ext_cps.iter().map(|c| c.cpd_id.as_str()))
        .collect();
    let mut out: Vec<ExtVirtualLinkData> = Vec::new();
    for l in current {
        let mut l = l.clone();
        l.ext_cps.retain(|c| !moved.contains(c.cpd_id.as_str()));
        keep_named_ports(&mut l);
        if let Some(r) = request.iter().find(|r| r.id == l.id) {
            l.vim_connection_id = r.vim_connection_id.clone();
            l.resource_provider_id = r.resource_provider_id.clone();
            l.resource_id = r.resource_id.clone();
            l.ext_cps.extend(r.ext_cps.iter().cloned());
            let mut ports = l.ext_link_ports.take().unwrap_or_default();
            for p in r.ext_link_ports.iter().flatten() {
                ports.retain(|o| o.id != p.id);
                ports.push(p.clone());
            }
            l.ext_link_ports = (!ports.is_empty()).then_some(ports);
        }
        if !l.ext_cps.is_empty() {
            out.push(l);
        }
    }
    out.extend(
        request
            .iter()
            .filter(|r| !current.iter().any(|c| c.id == r.id))
            .cloned(),
    );
    out
}

/// The links in force as recorded information, before the ports the stack made are added:
/// each link's resource (on `vim` unless the link names its VIM connection), its CPs, and
/// the request's link ports, each with the external CP `cp-<portId>` of the CP that names it
/// (in the second list, with the CPD and the `cpConfig` key that name it; Tacker records
/// the same).
pub fn link_info(
    links: &[ExtVirtualLinkData],
    vim: &str,
    vnfd_id: &VnfdId,
) -> (Vec<ExtVirtualLinkInfo>, Vec<VnfExtCpInfo>) {
    let mut ext_cps = Vec::new();
    let infos = links
        .iter()
        .map(|l| {
            let mut h = ResourceHandle::new(l.resource_id.clone());
            h.vim_connection_id = l
                .vim_connection_id
                .clone()
                .or_else(|| Some(vim.to_string()));
            h.resource_provider_id = l.resource_provider_id.clone();
            let ports: Vec<ExtLinkPortInfo> = l
                .ext_link_ports
                .iter()
                .flatten()
                .map(|p| {
                    let user = l.ext_cps.iter().find_map(|c| {
                        c.cp_config
                            .iter()
                            .find(|(_, conf)| conf.link_port_id.as_deref() == Some(&p.id))
                            .map(|(key, _)| (c.cpd_id.clone(), key.clone()))
                    });
                    let cp_instance_id = user.map(|(cpd_id, config_id)| {
                        let id = ext_cp_id(&p.id);
                        ext_cps.push(VnfExtCpInfo {
                            id: id.clone(),
                            cpd_id,
                            cp_config_id: Some(config_id),
                            vnfd_id: Some(vnfd_id.clone()),
                            cp_protocol_info: None,
                            ext_link_port_id: Some(p.id.clone()),
                            metadata: None,
                            associated_vnfc_cp_id: None,
                            associated_vip_cp_id: None,
                            associated_virtual_cp_id: None,
                            associated_vnf_virtual_link_id: None,
                        });
                        id
                    });
                    ExtLinkPortInfo {
                        id: p.id.clone(),
                        resource_handle: p.resource_handle.clone(),
                        cp_instance_id,
                        secondary_cp_instance_id: None,
                        trunk_resource_id: p.trunk_resource_id.clone(),
                    }
                })
                .collect();
            ExtVirtualLinkInfo {
                id: l.id.clone(),
                resource_handle: h,
                ext_link_ports: (!ports.is_empty()).then_some(ports),
                current_vnf_ext_cp_data: l.ext_cps.clone(),
            }
        })
        .collect();
    (infos, ext_cps)
}

/// Lists `port`, the stack's port of a CP of `link`, on the link: in place of an entry with
/// its id (so that it is listed once), else at the end.
pub fn attach_stack_port(link: &mut ExtVirtualLinkInfo, port: ExtLinkPortInfo) {
    let ports = link.ext_link_ports.get_or_insert_with(Vec::new);
    match ports.iter_mut().find(|p| p.id == port.id) {
        Some(slot) => *slot = port,
        None => ports.push(port),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::{Value, json};
    use vnfm_descriptor::Flavour;
    use vnfm_driver_api::InstanceResources;
    use vnfm_types::VnfOperationalState;

    use super::*;
    use crate::config::DriverConfig;
    use crate::heat::HeatResource;
    use crate::inventory::{InventoryInputs, inventory};

    /// VDU1 with two external CPs: `VDU1_CP1` gets a port from the stack, `VDU1_CP2` uses
    /// the port `lp-2` the request made.
    fn flavour() -> Flavour {
        serde_json::from_value(json!({
            "id": "simple", "file": "Definitions/df.yaml",
            "vdus": [{"id": "VDU1", "name": "VDU1", "kind": "compute",
                      "nodeType": "tosca.nodes.nfv.Vdu.Compute",
                      "minInstances": 1, "maxInstances": 1}],
            "vduCps": [{"id": "VDU1_CP1", "vdu": "VDU1", "order": 0},
                       {"id": "VDU1_CP2", "vdu": "VDU1", "order": 1}]
        }))
        .unwrap()
    }

    fn link(id: &str, net: &str, cps: Value, ports: Value) -> ExtVirtualLinkData {
        let mut l = json!({"id": id, "resourceId": net, "extCps": cps});
        if !ports.is_null() {
            l["extLinkPorts"] = ports;
        }
        serde_json::from_value(l).unwrap()
    }

    fn cp1() -> Value {
        json!({"cpdId": "VDU1_CP1", "cpConfig": {"VDU1_CP1": {"cpProtocolData": [
            {"layerProtocol": "IP_OVER_ETHERNET", "ipOverEthernet": {"ipAddresses": [
                {"type": "IPV4", "numDynamicAddresses": 1}]}}]}}})
    }

    fn cp2() -> Value {
        json!({"cpdId": "VDU1_CP2", "cpConfig": {"VDU1_CP2": {"linkPortId": "lp-2"}}})
    }

    /// The stack's resources: the server and the port of `VDU1_CP1` (`port` is its Neutron id).
    fn stack(port: &str) -> Vec<HeatResource> {
        let res = |name: &str, ty: &str, id: &str| {
            serde_json::from_value::<HeatResource>(json!({
                "resource_name": name, "physical_resource_id": id, "resource_type": ty,
                "resource_status": "CREATE_COMPLETE", "creation_time": "2026-01-01T00:00:00Z",
                "links": [{"rel": "stack", "href": "http://heat/v1/p/stacks/vnf-1/sid-1"}],
                "attributes": {}
            }))
            .unwrap()
        };
        vec![
            res("VDU1", "OS::Nova::Server", "srv-1"),
            res("VDU1_CP1", "OS::Neutron::Port", port),
        ]
    }

    fn record(links: &[ExtVirtualLinkData], port: &str) -> InstanceResources {
        let flavour = flavour();
        inventory(
            &stack(port),
            &InventoryInputs {
                flavour: &flavour,
                vnfd_id: &VnfdId::new("vnfd-1"),
                vim_connection_id: "vim1",
                ext_virtual_links: links,
                ext_managed_virtual_links: &[],
                vnfc_states: &BTreeMap::new(),
                default_state: VnfOperationalState::Started,
                nfv: None,
                recorded: None,
                vnfc_names: None,
            },
            &DriverConfig::default(),
        )
    }

    /// `(port resource id, cpInstanceId)` of each port of a link.
    type Ports = Vec<(String, Option<String>)>;

    /// `(link id, ports)` of every link.
    fn ports_by_link(r: &InstanceResources) -> Vec<(String, Ports)> {
        r.ext_virtual_link_info
            .iter()
            .map(|l| {
                let ports = l
                    .ext_link_ports
                    .iter()
                    .flatten()
                    .map(|p| {
                        (
                            p.resource_handle.resource_id.clone(),
                            p.cp_instance_id.clone(),
                        )
                    })
                    .collect();
                (l.id.clone(), ports)
            })
            .collect()
    }

    /// Every `cpInstanceId` of a link port names an `extCpInfo` that names the port back.
    fn assert_cps_consistent(r: &InstanceResources) {
        for l in &r.ext_virtual_link_info {
            for p in l.ext_link_ports.iter().flatten() {
                let cp = p
                    .cp_instance_id
                    .as_deref()
                    .expect("a link port without its CP");
                let info = r.ext_cp_info.iter().find(|c| c.id == cp).unwrap();
                assert_eq!(info.ext_link_port_id.as_deref(), Some(p.id.as_str()));
            }
        }
        let mut ids: Vec<&str> = r.ext_cp_info.iter().map(|c| c.id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), r.ext_cp_info.len(), "{:?}", r.ext_cp_info);
    }

    #[test]
    fn a_cp_moved_to_another_link_is_listed_once_on_its_new_link_only() {
        // Instantiated: both CPs on link A (net-a), VDU1_CP2 through the request's port.
        let lp2 = json!([{"id": "lp-2", "resourceHandle": {"resourceId": "port-lp-2"}}]);
        let a = link("A", "net-a", json!([cp1(), cp2()]), lp2);
        let instantiated = record(&[a], "port-1");
        assert_eq!(
            ports_by_link(&instantiated),
            vec![(
                "A".to_string(),
                vec![
                    ("port-lp-2".to_string(), Some("cp-lp-2".to_string())),
                    (
                        "port-1".to_string(),
                        instantiated.ext_cp_info[1].id.clone().into()
                    ),
                ]
            )]
        );
        assert_cps_consistent(&instantiated);

        // An operation that changes no link (heal, scale): the same ports, each once.
        let again = record(
            &links_from_info(&instantiated.ext_virtual_link_info),
            "port-1",
        );
        assert_eq!(ports_by_link(&again), ports_by_link(&instantiated));
        assert_eq!(again.ext_cp_info, instantiated.ext_cp_info);

        // CHANGE_EXT_CONN: VDU1_CP1 moves to link B (net-b); Heat makes its port anew.
        let request = [link("B", "net-b", json!([cp1()]), Value::Null)];
        let links = overlay_links(
            &links_from_info(&instantiated.ext_virtual_link_info),
            &request,
        );
        let changed = record(&links, "port-1-new");
        let stack_cp = changed
            .ext_cp_info
            .iter()
            .find(|c| c.cpd_id == "VDU1_CP1")
            .map(|c| c.id.clone());
        assert_eq!(
            ports_by_link(&changed),
            vec![
                (
                    "A".to_string(),
                    vec![("port-lp-2".to_string(), Some("cp-lp-2".to_string()))]
                ),
                ("B".to_string(), vec![("port-1-new".to_string(), stack_cp)]),
            ]
        );
        assert_cps_consistent(&changed);
        assert_eq!(changed.ext_cp_info.len(), 2, "{:?}", changed.ext_cp_info);
        let a = &changed.ext_virtual_link_info[0];
        let cpds: Vec<&str> = a
            .current_vnf_ext_cp_data
            .iter()
            .map(|c| c.cpd_id.as_str())
            .collect();
        assert_eq!(cpds, ["VDU1_CP2"]);
    }

    #[test]
    fn a_link_whose_cps_all_moved_is_no_longer_listed() {
        let current = [link("A", "net-a", json!([cp1()]), Value::Null)];
        let request = [link("B", "net-b", json!([cp1()]), Value::Null)];
        let links = overlay_links(&current, &request);
        let ids: Vec<&str> = links.iter().map(|l| l.id.as_str()).collect();
        assert_eq!(ids, ["B"]);
    }

    #[test]
    fn a_request_naming_a_link_again_keeps_its_other_cps_and_their_ports() {
        let lp2 = json!([{"id": "lp-2", "resourceHandle": {"resourceId": "port-lp-2"}}]);
        let current = [link("A", "net-a", json!([cp1(), cp2()]), lp2)];
        // The request reconfigures VDU1_CP1 on link A only; VDU1_CP2 is unchanged.
        let request = [link("A", "net-a2", json!([cp1()]), Value::Null)];
        let links = overlay_links(&current, &request);
        assert_eq!(links.len(), 1);
        let cpds: Vec<&str> = links[0].ext_cps.iter().map(|c| c.cpd_id.as_str()).collect();
        assert_eq!(cpds, ["VDU1_CP2", "VDU1_CP1"]);
        assert_eq!(links[0].resource_id, "net-a2");
        let ports: Vec<&str> = links[0]
            .ext_link_ports
            .iter()
            .flatten()
            .map(|p| p.id.as_str())
            .collect();
        assert_eq!(ports, ["lp-2"]);
    }

    #[test]
    fn recorded_ports_no_cp_names_are_not_carried_over() {
        // What the earlier code recorded: the stack's port copied without its CP, and twice.
        let info: ExtVirtualLinkInfo = serde_json::from_value(json!({
            "id": "A", "resourceHandle": {"resourceId": "net-a"},
            "currentVnfExtCpData": [cp1(), cp2()],
            "extLinkPorts": [
                {"id": "lp-2", "resourceHandle": {"resourceId": "port-lp-2"}},
                {"id": "p1", "resourceHandle": {"resourceId": "port-1"}},
                {"id": "p1", "resourceHandle": {"resourceId": "port-1"}, "cpInstanceId": "cp-p1"}
            ]
        }))
        .unwrap();
        let data = links_from_info(&[info]);
        let ports: Vec<&str> = data[0]
            .ext_link_ports
            .iter()
            .flatten()
            .map(|p| p.id.as_str())
            .collect();
        assert_eq!(ports, ["lp-2"]);
    }
}
