use super::*;

fn vnfc(id: &str, server: &str) -> VnfcResourceInfo {
    serde_json::from_value(json!({
        "id": id, "vduId": "VDU1",
        "computeResource": {"resourceId": server, "vimLevelResourceType": "OS::Nova::Server"},
        "storageResourceIds": [format!("st-{id}")]
    }))
    .unwrap()
}

/// A VNFC made the way Tacker's `StandardUserData` makes it: the top stack's `VDU1-0`
/// is a nested stack holding the server and its volume.
fn standard_vnfc() -> Vec<HeatResource> {
    let res = |name: &str, ty: &str, stack: &str, nested: Option<&str>| {
        let mut links =
            vec![json!({"rel": "stack", "href": format!("http://heat/v1/p/stacks/{stack}")})];
        if let Some(n) = nested {
            links.push(json!({"rel": "nested", "href": format!("http://heat/v1/p/stacks/{n}")}));
        }
        serde_json::from_value::<HeatResource>(json!({
            "resource_name": name, "physical_resource_id": format!("id-{name}"),
            "resource_type": ty, "resource_status": "CREATE_COMPLETE",
            "creation_time": "2026-01-01T00:00:00Z", "links": links, "attributes": {}
        }))
        .unwrap()
    };
    vec![
        res("VDU1-0", "VDU1.yaml", "vnf-1/top", Some("vnf-1-VDU1-0/n0")),
        res("VDU1", "OS::Nova::Server", "vnf-1-VDU1-0/n0", None),
        res(
            "VDU1-VirtualStorage",
            "OS::Cinder::Volume",
            "vnf-1-VDU1-0/n0",
            None,
        ),
    ]
}

fn standard_inventory(nfv: Option<&Value>) -> InstanceResources {
    inventory_of(&standard_vnfc(), nfv, None)
}

/// The inventory of `resources`, VNFCs of VDU1 with a volume each, over `recorded`.
fn inventory_of(
    resources: &[HeatResource],
    nfv: Option<&Value>,
    recorded: Option<&InstanceResources>,
) -> InstanceResources {
    let flavour: Flavour = serde_json::from_value(json!({
        "id": "simple", "file": "Definitions/df.yaml",
        "vdus": [{"id": "VDU1", "name": "VDU1", "kind": "compute",
                  "nodeType": "tosca.nodes.nfv.Vdu.Compute",
                  "minInstances": 1, "maxInstances": 3,
                  "virtualStorages": ["VDU1-VirtualStorage"]}]
    }))
    .unwrap();
    inventory_with(resources, &flavour, &[], nfv, recorded)
}

/// The inventory of `resources` made for `flavour` and the external links `links`.
fn inventory_with(
    resources: &[HeatResource],
    flavour: &Flavour,
    links: &[ExtVirtualLinkData],
    nfv: Option<&Value>,
    recorded: Option<&InstanceResources>,
) -> InstanceResources {
    inventory(
        resources,
        &InventoryInputs {
            flavour,
            vnfd_id: &VnfdId::new("vnfd-1"),
            vim_connection_id: "vim1",
            ext_virtual_links: links,
            ext_managed_virtual_links: &[],
            vnfc_states: &BTreeMap::new(),
            default_state: VnfOperationalState::Started,
            nfv,
            recorded,
            vnfc_names: None,
        },
        &DriverConfig::default(),
    )
}

/// `(VNFC id, its storage ids)` of every VNFC.
fn vnfc_ids(r: &InstanceResources) -> Vec<(String, Vec<String>)> {
    r.vnfc_resource_info
        .iter()
        .map(|v| {
            (
                v.id.clone(),
                v.storage_resource_ids.clone().unwrap_or_default(),
            )
        })
        .collect()
}

/// `resources` with the server and the volume Heat holds under other ids.
fn replaced(resources: &[HeatResource], server: &str, volume: &str) -> Vec<HeatResource> {
    let mut out = resources.to_vec();
    for r in &mut out {
        match r.resource_type.as_str() {
            "OS::Nova::Server" => r.physical_resource_id = server.into(),
            "OS::Cinder::Volume" => r.physical_resource_id = volume.into(),
            _ => {}
        }
    }
    out
}

#[test]
fn a_vnfc_and_its_storage_are_recorded_by_their_server_and_volume() {
    // Instantiated: Tacker's ids, the server's and the volume's.
    let first = inventory_of(&standard_vnfc(), None, None);
    assert_eq!(
        vnfc_ids(&first),
        [("id-VDU1".into(), vec!["id-VDU1-VirtualStorage".into()])]
    );
    assert_eq!(first.vnfc_info[0].id, "VDU1-id-VDU1");
    // The same server and volume after an update: the same records.
    let again = inventory_of(&standard_vnfc(), None, Some(&first));
    assert_eq!(again, first);
    // Heat replaced both (a heal, a package change or its rollback): a new VNFC and a
    // new storage in the same place, the old ones removed.
    let healed = replaced(&standard_vnfc(), "srv-new", "vol-new");
    let after = inventory_of(&healed, None, Some(&first));
    assert_eq!(
        vnfc_ids(&after),
        [("srv-new".into(), vec!["vol-new".into()])]
    );
    assert_eq!(after.vnfc_info[0].id, "VDU1-srv-new");
    let c = changes(&first, &after);
    let vnfcs: Vec<(String, ChangeType)> = c
        .affected_vnfcs
        .unwrap()
        .into_iter()
        .map(|a| (a.id, a.change_type))
        .collect();
    assert_eq!(
        vnfcs,
        [
            ("srv-new".into(), ChangeType::Added),
            ("id-VDU1".into(), ChangeType::Removed)
        ]
    );
    let storages: Vec<(String, ChangeType)> = c
        .affected_virtual_storages
        .unwrap()
        .into_iter()
        .map(|a| (a.id, a.change_type))
        .collect();
    assert_eq!(
        storages,
        [
            ("vol-new".into(), ChangeType::Added),
            ("id-VDU1-VirtualStorage".into(), ChangeType::Removed)
        ]
    );
}

#[test]
fn a_port_heat_replaced_is_a_new_external_link_port() {
    let flavour: Flavour = serde_json::from_value(json!({
        "id": "simple", "file": "Definitions/df.yaml",
        "vdus": [{"id": "VDU1", "name": "VDU1", "kind": "compute",
                  "nodeType": "tosca.nodes.nfv.Vdu.Compute",
                  "minInstances": 1, "maxInstances": 1}],
        "vduCps": [{"id": "VDU1_CP1", "vdu": "VDU1", "order": 0}]
    }))
    .unwrap();
    let links: Vec<ExtVirtualLinkData> = serde_json::from_value(json!([{
        "id": "ext-1", "resourceId": "net-1",
        "extCps": [{"cpdId": "VDU1_CP1", "cpConfig": {"c1": {"cpProtocolData": [{
            "layerProtocol": "IP_OVER_ETHERNET",
            "ipOverEthernet": {"ipAddresses": [{"type": "IPV4", "numDynamicAddresses": 1}]}}]}}}]
    }]))
    .unwrap();
    let mut resources = standard_vnfc();
    let mut port = resources[1].clone();
    port.resource_name = "VDU1_CP1".into();
    port.resource_type = "OS::Neutron::Port".into();
    port.physical_resource_id = "port-old".into();
    resources.push(port);
    let run = |resources: &[HeatResource], recorded: Option<&InstanceResources>| {
        inventory_with(resources, &flavour, &links, None, recorded)
    };
    let ports = |r: &InstanceResources| {
        ext_link_ports(r)
            .map(|p| (p.id.clone(), p.resource_handle.resource_id.clone()))
            .collect::<Vec<_>>()
    };
    let first = run(&resources, None);
    assert_eq!(ports(&first), [("port-old".into(), "port-old".into())]);
    // The same port again: the same record, nothing changed.
    let again = run(&resources, Some(&first));
    assert_eq!(ports(&again), ports(&first));
    assert_eq!(changes(&first, &again).affected_ext_link_ports, None);
    // Heat replaced the port (a CHANGE_EXT_CONN): a new link port, the old one removed.
    resources[3].physical_resource_id = "port-new".into();
    let after = run(&resources, Some(&first));
    assert_eq!(ports(&after), [("port-new".into(), "port-new".into())]);
    let affected: Vec<(String, ChangeType)> = changes(&first, &after)
        .affected_ext_link_ports
        .unwrap()
        .into_iter()
        .map(|a| (a.id, a.change_type))
        .collect();
    assert_eq!(
        affected,
        [
            ("port-new".into(), ChangeType::Added),
            ("port-old".into(), ChangeType::Removed)
        ]
    );
}

#[test]
fn ids_recorded_before_are_kept_while_their_server_and_volume_are() {
    // Recorded by an earlier version, with ids derived from the stack and the name.
    let mut old = inventory_of(&standard_vnfc(), None, None);
    let (vnfc, storage) = (
        derived_id(&["n0", "VDU1"]),
        derived_id(&["n0", "VDU1-VirtualStorage"]),
    );
    old.vnfc_resource_info[0].id = vnfc.clone();
    old.vnfc_resource_info[0].storage_resource_ids = Some(vec![storage.clone()]);
    old.virtual_storage_resource_info[0].id = storage.clone();
    let now = inventory_of(&standard_vnfc(), None, Some(&old));
    assert_eq!(vnfc_ids(&now), [(vnfc.clone(), vec![storage.clone()])]);
    assert_eq!(now.vnfc_info[0].id, format!("VDU1-{vnfc}"));
    assert_eq!(changes(&old, &now), ResourceChanges::default());
    // Only the server replaced: a new VNFC on the volume it had.
    let healed = replaced(&standard_vnfc(), "srv-new", "id-VDU1-VirtualStorage");
    let after = inventory_of(&healed, None, Some(&old));
    assert_eq!(vnfc_ids(&after), [("srv-new".into(), vec![storage])]);
}

#[test]
fn a_resource_heat_has_not_made_yet_gets_an_id_of_its_place() {
    let pending = replaced(&standard_vnfc(), "", "");
    let r = inventory_of(&pending, None, None);
    assert_eq!(
        vnfc_ids(&r),
        [(
            derived_id(&["n0", "VDU1"]),
            vec![derived_id(&["n0", "VDU1-VirtualStorage"])]
        )]
    );
}

#[test]
fn vnfc_metadata_has_the_keys_tacker_writes() {
    let nfv = json!({"VDU": {
        "VDU1-0": {"computeFlavourId": "m1.tiny", "locationConstraints": "az-1",
                   "vcImageId": null},
        "VDU1-VirtualStorage-0": {"vcImageId": "img-1"}
    }});
    let r = standard_inventory(Some(&nfv));
    let v = &r.vnfc_resource_info[0];
    let meta = v.metadata.as_ref().unwrap();
    assert_eq!(meta["vdu_idx"], json!(0), "{meta:?}");
    assert_eq!(meta["creation_time"], json!("2026-01-01T00:00:00Z"));
    assert_eq!(meta["stack_id"], json!("n0"));
    assert_eq!(meta["stack_name"], json!("vnf-1-VDU1-0"));
    assert_eq!(meta["resource_name"], json!("VDU1"));
    assert_eq!(meta["flavor"], json!("m1.tiny"));
    assert_eq!(meta["image-VDU1-VirtualStorage-0"], json!("img-1"));
    assert_eq!(meta["zone"], json!("az-1"));
    assert_eq!(v.zone_id.as_deref(), Some("az-1"));
    // No image of its own (boots from the volume), no camelCase keys.
    for k in [
        "image-VDU1-0",
        "vduIdx",
        "creationTime",
        "stackId",
        "stackName",
    ] {
        assert!(!meta.contains_key(k), "{k} in {meta:?}");
    }
    // Without the `nfv` parameter, the keys Heat gives.
    let bare = standard_inventory(None);
    let meta = bare.vnfc_resource_info[0].metadata.as_ref().unwrap();
    assert_eq!(meta["vdu_idx"], json!(0));
    assert!(!meta.contains_key("flavor"), "{meta:?}");
}

#[test]
fn metadata_recorded_with_the_former_camel_case_keys_is_still_read() {
    let old: VnfcResourceInfo = serde_json::from_value(json!({
        "id": "a", "vduId": "VDU1",
        "computeResource": {"resourceId": "srv-1"},
        "metadata": {"stackId": "n0", "resourceName": "VDU1", "vduIdx": 2}
    }))
    .unwrap();
    assert_eq!(meta_str(&old, meta_key::STACK_ID), Some("n0"));
    assert_eq!(meta_str(&old, meta_key::RESOURCE_NAME), Some("VDU1"));
    assert_eq!(meta_str(&old, meta_key::STACK_NAME), None);
    let new = &standard_inventory(None).vnfc_resource_info[0];
    assert_eq!(meta_str(new, meta_key::STACK_ID), Some("n0"));
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

/// Tacker's `VDU_VNFc_mapping` names the VNFCs made one resource each by their index; a VNFC
/// it does not name (no index, an index past its list, a VDU it lists not) keeps
/// `<VDU>-<resource id>`.
#[test]
fn the_instance_metadata_names_vnfcs_by_their_index() {
    let names = serde_json::json!({"VDU1": ["a-001", "a-010"], "VDU2": ["b-000"]});
    let id = |vdu: &str, idx: Option<u32>| super::vnfc_info_id(Some(&names), vdu, idx, "srv");
    assert_eq!(id("VDU1", Some(0)), "a-001");
    assert_eq!(id("VDU1", Some(1)), "a-010");
    assert_eq!(id("VDU1", Some(2)), "VDU1-srv");
    assert_eq!(id("VDU1", None), "VDU1-srv");
    assert_eq!(id("VDU3", Some(0)), "VDU3-srv");
    assert_eq!(
        super::vnfc_info_id(None, "VDU2", Some(0), "srv"),
        "VDU2-srv"
    );
    let instance: vnfm_types::VnfInstance = serde_json::from_value(serde_json::json!({
        "id": "i", "vnfdId": "d", "vnfProvider": "p", "vnfProductName": "n",
        "vnfSoftwareVersion": "1", "vnfdVersion": "1", "instantiationState": "NOT_INSTANTIATED",
        "metadata": {"VDU_VNFc_mapping": names.clone()},
        "_links": {"self": {"href": "/i"}}
    }))
    .expect("an instance");
    assert_eq!(super::vnfc_names(&instance), Some(&names));
}
