//! The Tacker VM packages of the corpus: their BaseHOTs are found with their nested templates,
//! and the `nfv` parameter built for an instantiation is what their templates read (snapshots),
//! filled from the VNFD (flavours, images, counts of the default instantiation level) and the
//! request (networks, fixed addresses, link ports, `additionalParams.nfv`).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use vnfm_descriptor::Vnfd;
use vnfm_driver_api::{ArtifactSource, ResourceTarget};
use vnfm_infra_openstack::hot::{self, NfvInputs};
use vnfm_infra_openstack::{DriverConfig, generate};
use vnfm_lcm::OperationRequest;
use vnfm_types::{InstantiateVnfRequest, VnfInstance};

/// Tacker's sample package `name` in the corpus.
pub(crate) fn tacker(name: &str) -> PathBuf {
    vnfm_test_env::corpus("tacker").join(name)
}

/// Package files read from a directory.
pub(crate) struct Dir(pub(crate) PathBuf);

impl ArtifactSource for Dir {
    fn read(&self, path: &str) -> std::io::Result<Vec<u8>> {
        if path.split('/').any(|s| s == "..") {
            return Err(std::io::Error::other("path leaves the package"));
        }
        std::fs::read(self.0.join(path))
    }
}

/// The VNFD of the package at `root`, every file of the package given to the reader (which,
/// like Tacker, also reads the flavour files of `Definitions/` that nothing imports).
pub(crate) fn load_vnfd(root: &Path) -> Vnfd {
    fn add(dir: &Path, root: &Path, out: &mut vnfm_tosca::MemFiles) {
        for e in std::fs::read_dir(dir).expect("package directory") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                add(&p, root, out);
            } else {
                let rel = p
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                out.files.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let meta = std::fs::read_to_string(root.join("TOSCA-Metadata/TOSCA.meta")).unwrap();
    let entry = meta
        .lines()
        .find_map(|l| l.strip_prefix("Entry-Definitions:"))
        .unwrap()
        .trim()
        .to_string();
    let mut files = vnfm_tosca::MemFiles::new(entry);
    add(root, root, &mut files);
    let loaded = vnfm_tosca::load(&files);
    assert!(
        !loaded.has_errors(),
        "{}: {:#?}",
        root.display(),
        loaded.diagnostics
    );
    loaded
        .descriptor
        .and_then(|d| d.as_vnfd().cloned())
        .unwrap()
}

fn instance(vnfd: &Vnfd) -> VnfInstance {
    serde_json::from_value(json!({
        "id": "inst-1", "vnfdId": vnfd.descriptor_id, "vnfProvider": vnfd.provider,
        "vnfProductName": vnfd.product_name, "vnfSoftwareVersion": vnfd.software_version,
        "vnfdVersion": vnfd.descriptor_version, "instantiationState": "NOT_INSTANTIATED",
        "_links": {"self": {"href": "/i/inst-1"}}
    }))
    .unwrap()
}

/// An instantiate request like Tacker's functional tests send: two external networks, CPs
/// with dynamic and fixed addresses, pre-created link ports; only the CPs the flavour has are
/// connected (the request validator refuses others).
pub(crate) fn request(vnfd: &Vnfd, flavour: &str) -> InstantiateVnfRequest {
    let dynamic = |subnet: Option<&str>| {
        let mut addr = json!({"type": "IPV4", "numDynamicAddresses": 1});
        if let Some(s) = subnet {
            addr["subnetId"] = json!(s);
        }
        json!({"cpProtocolData": [{"layerProtocol": "IP_OVER_ETHERNET",
            "ipOverEthernet": {"ipAddresses": [addr]}}]})
    };
    let fixed = json!({"cpProtocolData": [{"layerProtocol": "IP_OVER_ETHERNET", "ipOverEthernet": {
        "macAddress": "fa:16:3e:00:00:01",
        "ipAddresses": [{"type": "IPV4", "fixedAddresses": ["10.10.0.102"]}]}}]});
    let net1 = vec![
        json!({"cpdId": "VDU1_CP1", "cpConfig": {"VDU1_CP1_1": dynamic(Some("subnet1-uuid"))}}),
        json!({"cpdId": "CP1", "cpConfig": {"CP1_1": dynamic(None)}}),
        json!({"cpdId": "VDU2_CP1", "cpConfig": {"VDU2_CP1_1": fixed}}),
        json!({"cpdId": "VDU2_CP1-1", "cpConfig": {"VDU2_CP1-1_1": {"linkPortId": "lp-1"}}}),
        json!({"cpdId": "VDU2_CP1-2", "cpConfig": {"VDU2_CP1-2_1": {"linkPortId": "lp-2"}}}),
    ];
    let net2 = vec![
        json!({"cpdId": "VDU1_CP2", "cpConfig": {"VDU1_CP2_1": dynamic(Some("subnet2-uuid"))}}),
        json!({"cpdId": "VDU2_CP2", "cpConfig": {"VDU2_CP2_1": {"cpProtocolData": [
        {"layerProtocol": "IP_OVER_ETHERNET", "ipOverEthernet": {"ipAddresses": [
            {"type": "IPV4", "fixedAddresses": ["10.10.1.102"], "subnetId": "subnet2-uuid"},
            {"type": "IPV4", "numDynamicAddresses": 1, "subnetId": "subnet2b-uuid"}
        ]}}]}}}),
    ];
    let fl = vnfd.flavour(flavour).unwrap();
    let known = |c: &Value| {
        let id = c["cpdId"].as_str().unwrap();
        fl.vdu_cps.iter().any(|v| v.id == id) || fl.ext_cps.iter().any(|v| v.id == id)
    };
    let net1: Vec<Value> = net1.into_iter().filter(known).collect();
    let net2: Vec<Value> = net2.into_iter().filter(known).collect();
    let mut links = Vec::new();
    if !net1.is_empty() {
        links.push(json!({"id": "ext-net1", "resourceId": "net1-uuid",
            "extLinkPorts": [{"id": "lp-1", "resourceHandle": {"resourceId": "port-uuid-1"}},
                             {"id": "lp-2", "resourceHandle": {"resourceId": "port-uuid-2"}}],
            "extCps": net1}));
    }
    if !net2.is_empty() {
        links.push(json!({"id": "ext-net2", "resourceId": "net2-uuid", "extCps": net2}));
    }
    serde_json::from_value(json!({
        "flavourId": flavour,
        "extVirtualLinks": links,
        "additionalParams": {"nfv": {"VDU": {"VDU1": {"locationConstraints": "az-1"}}}}
    }))
    .unwrap()
}

/// What the instantiation plan of `req` asks the infrastructure for (its first step's target).
pub(crate) fn instantiate_target(vnfd: &Vnfd, req: &InstantiateVnfRequest) -> ResourceTarget {
    let plan = vnfm_lcm::plan(
        &OperationRequest::Instantiate(req.clone()),
        vnfd,
        &instance(vnfd),
    )
    .unwrap();
    plan.infra_steps()
        .next()
        .and_then(|s| s.target())
        .cloned()
        .unwrap()
}

/// The `nfv` parameter for instantiating `package` in `flavour`, with where the top template
/// was found and which nested files came with it.
fn instantiate_nfv(package: &str, flavour: &str) -> Value {
    let root = tacker(package);
    let vnfd = load_vnfd(&root);
    let req = request(&vnfd, flavour);
    let target = instantiate_target(&vnfd, &req);
    let fl = vnfd.flavour(flavour).unwrap();
    let h = hot::load_base_hot(&Dir(root), &vnfd, flavour, &DriverConfig::default())
        .unwrap()
        .unwrap_or_else(|| panic!("{package}: no BaseHOT found"));
    let paths = hot::nfv_paths([&h.template]);
    let nfv = hot::build_nfv(
        &paths,
        &NfvInputs {
            flavour: fl,
            capacity: Some(&target.vdu_instances),
            ext_virtual_links: req.ext_virtual_links.as_deref().unwrap_or_default(),
            additional: req.additional_params.as_ref().and_then(|p| p.get("nfv")),
            grant: None,
            images: None,
        },
    );
    json!({
        "top": h.source,
        "files": h.files.keys().collect::<Vec<_>>(),
        "nfv": nfv,
    })
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn v2_basic_lcms_max() {
    insta::assert_json_snapshot!(instantiate_nfv("v2-vm-basic-lcms-max", "simple"));
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn v2_basic_lcms_min() {
    insta::assert_json_snapshot!(instantiate_nfv("v2-vm-basic-lcms-min", "simple"));
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn v2_userdata_standard() {
    insta::assert_json_snapshot!(instantiate_nfv("v2-vm-userdata-standard", "simple"));
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn v2_change_vnfpkg_new_image() {
    insta::assert_json_snapshot!(instantiate_nfv("v2-vm-change-vnfpkg-new-image", "simple"));
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn v1_functional() {
    insta::assert_json_snapshot!(instantiate_nfv("v1-vm-functional", "simple"));
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn v1_functional7_multi_aspect() {
    insta::assert_json_snapshot!(instantiate_nfv("v1-vm-functional7-multi-aspect", "simple"));
}

/// Every corpus VM package with a BaseHOT: the top template is found and every nested
/// template it uses comes along.
#[vnfm_test_env::needs(corpus)]
#[test]
fn every_corpus_basehot_is_found_with_its_nested_templates() {
    let cases = [
        (
            "v2-vm-basic-lcms-max",
            "simple",
            "BaseHOT/simple/sample1.yaml",
            vec!["VDU1.yaml"],
        ),
        (
            "v2-vm-basic-lcms-min",
            "simple",
            "BaseHOT/simple/sample2.yaml",
            vec!["VDU1.yaml"],
        ),
        (
            "v2-vm-change-vnfpkg-new-image",
            "simple",
            "BaseHOT/simple/base_hot_top.yaml",
            vec!["base_hot_nested_VDU1.yaml"],
        ),
        (
            "v2-vm-change-vnfpkg-standard",
            "simple",
            "BaseHOT/simple/sample4.yaml",
            vec!["VDU1.yaml", "VDU2.yaml"],
        ),
        (
            "v2-vm-error-network",
            "simple",
            "BaseHOT/simple/sample2.yaml",
            vec!["VDU1.yaml"],
        ),
        (
            "v2-vm-individual-vnfc-max",
            "simple",
            "BaseHOT/simple/sample3.yaml",
            vec!["VDU1.yaml", "VDU2.yaml"],
        ),
        (
            "v2-vm-scale-ng",
            "simple",
            "BaseHOT/simple/sample1.yaml",
            vec!["VDU1.yaml"],
        ),
        (
            "v2-vm-userdata-standard",
            "simple",
            "BaseHOT/simple/sample3.yaml",
            vec!["VDU1.yaml", "VDU2.yaml"],
        ),
        (
            "v2-vm-userdata-standard-non-boot-volume",
            "simple",
            "BaseHOT/simple/sample7.yaml",
            vec!["VDU1.yaml"],
        ),
        (
            "v1-vm-functional",
            "simple",
            "BaseHOT/simple/helloworld3.yaml",
            vec!["VDU1.yaml", "VDU2.yaml"],
        ),
        (
            "v1-vm-enhanced-policy",
            "simple",
            "BaseHOT/simple/base_hot_top.yaml",
            vec!["vdu1.yaml"],
        ),
        (
            "v1-vm-userdata-normal-scaling",
            "simple",
            "BaseHOT/simple/helloworld3.yaml",
            vec!["VDU1.yaml", "VDU2.yaml"],
        ),
        (
            "mgmt-k8s-cluster-v2",
            "simple",
            "BaseHOT/simple/simple_hot_top.yaml",
            vec!["simple_nested_master.yaml", "simple_nested_worker.yaml"],
        ),
    ];
    for (package, flavour, top, nested) in cases {
        let root = tacker(package);
        let vnfd = load_vnfd(&root);
        let h = hot::load_base_hot(&Dir(root), &vnfd, flavour, &DriverConfig::default())
            .unwrap_or_else(|e| panic!("{package}: {e}"))
            .unwrap_or_else(|| panic!("{package}: no BaseHOT found"));
        assert_eq!(h.source, top, "{package}");
        let names: Vec<&str> = h.files.keys().map(String::as_str).collect();
        assert_eq!(names, nested, "{package}");
    }
}

/// A package without BaseHOT gets a template generated from its VNFD.
#[vnfm_test_env::needs(corpus)]
#[test]
fn a_package_without_basehot_gets_a_generated_template() {
    let root = tacker("v1-vm-tosca-only-vnflcm1");
    let vnfd = load_vnfd(&root);
    assert!(
        hot::load_base_hot(&Dir(root), &vnfd, "simple", &DriverConfig::default())
            .unwrap()
            .is_none()
    );
    let fl = vnfd.flavour("simple").unwrap();
    let h = generate::generate(&vnfd.descriptor_id, fl).unwrap();
    let req = request(&vnfd, "simple");
    let target = instantiate_target(&vnfd, &req);
    let nested: Vec<Value> = h
        .files
        .values()
        .map(|t| serde_json::from_str(t).unwrap())
        .collect();
    let nfv = hot::build_nfv(
        &hot::nfv_paths([&h.template]),
        &NfvInputs {
            flavour: fl,
            capacity: Some(&target.vdu_instances),
            ext_virtual_links: req.ext_virtual_links.as_deref().unwrap_or_default(),
            additional: None,
            grant: None,
            images: None,
        },
    );
    insta::assert_json_snapshot!(json!({
        "template": h.template,
        "files": nested,
        "nfv": nfv,
    }));
}

/// A grant's `vimAssets` and zones take precedence over the VNFD's flavour and image names.
#[vnfm_test_env::needs(corpus)]
#[test]
fn grant_assets_and_zones_reach_the_nfv_parameter() {
    let vnfd = load_vnfd(&tacker("v2-vm-basic-lcms-max"));
    let fl = vnfd.flavour("simple").unwrap();
    let template: serde_json::Value = serde_json::json!({
        "parameters": {"nfv": {"type": "json"}},
        "resources": {"VDU1": {"type": "OS::Nova::Server", "properties": {
            "flavor": {"get_param": ["nfv", "VDU", "VDU1", "computeFlavourId"]},
            "image": {"get_param": ["nfv", "VDU", "VDU1", "vcImageId"]},
            "availability_zone": {"get_param": ["nfv", "VDU", "VDU1", "locationConstraints"]}
        }}}
    });
    let paths = hot::nfv_paths([&template]);
    let without = hot::build_nfv(
        &paths,
        &NfvInputs {
            flavour: fl,
            capacity: None,
            ext_virtual_links: &[],
            additional: None,
            grant: None,
            images: None,
        },
    );
    let grant: vnfm_types::Grant = serde_json::from_value(serde_json::json!({
        "id": "g1", "vnfInstanceId": "i1", "vnfLcmOpOccId": "o1",
        "zones": [{"id": "z1", "zoneId": "az-2"}],
        "addResources": [{"resourceDefinitionId": "VDU1-0", "zoneId": "z1"}],
        "vimAssets": {
            "computeResourceFlavours": [{"vnfdVirtualComputeDescId": "VDU1", "vimFlavourId": "m1.granted"}],
            "softwareImages": [{"vnfdSoftwareImageId": "VDU1", "vimSoftwareImageId": "img-granted"}]
        }
    }))
    .unwrap();
    let with = hot::build_nfv(
        &paths,
        &NfvInputs {
            flavour: fl,
            capacity: None,
            ext_virtual_links: &[],
            additional: None,
            grant: Some(&grant),
            images: None,
        },
    );
    assert_ne!(without["VDU"]["VDU1"]["computeFlavourId"], "m1.granted");
    assert_eq!(with["VDU"]["VDU1"]["computeFlavourId"], "m1.granted");
    assert_eq!(with["VDU"]["VDU1"]["vcImageId"], "img-granted");
    assert_eq!(with["VDU"]["VDU1"]["locationConstraints"], "az-2");
}

/// The `nfv` a CHANGE_VNFPKG sends with the default user data (Tacker's `DefaultUserData`),
/// built for the BaseHOT of `package` in `flavour` from the links recorded on the instance with
/// the request's `links` laid over them, as the driver builds it.
fn change_vnfpkg_nfv(package: &str, flavour: &str, links: Value) -> Value {
    // As recorded after `paramgen.change_vnfpkg_instantiate` (Tacker's functional tests):
    // VDU1_CP1 with an address Neutron picks, VDU2_CP1 at the fixed address 10.10.0.101.
    let recorded: Vec<vnfm_types::ExtVirtualLinkInfo> = serde_json::from_value(json!([{
        "id": "af775baf-ef37-4b2b-b6b9-18ca201bfce9",
        "resourceHandle": {"vimConnectionId": "vim1", "resourceId": "net0-uuid"},
        "extLinkPorts": [
            {"id": "lp-1", "resourceHandle": {"vimConnectionId": "vim1", "resourceId": "port-1",
             "vimLevelResourceType": "OS::Neutron::Port"}, "cpInstanceId": "cp-lp-1"},
            {"id": "lp-2", "resourceHandle": {"vimConnectionId": "vim1", "resourceId": "port-2",
             "vimLevelResourceType": "OS::Neutron::Port"}, "cpInstanceId": "cp-lp-2"}],
        "currentVnfExtCpData": [
            {"cpdId": "VDU1_CP1", "cpConfig": {"VDU1_CP1_1": {"cpProtocolData": [
                {"layerProtocol": "IP_OVER_ETHERNET", "ipOverEthernet": {"ipAddresses": [
                    {"type": "IPV4", "numDynamicAddresses": 1}]}}]}}},
            {"cpdId": "VDU2_CP1", "cpConfig": {"VDU2_CP1_1": {"cpProtocolData": [
                {"layerProtocol": "IP_OVER_ETHERNET", "ipOverEthernet": {"ipAddresses": [
                    {"type": "IPV4", "fixedAddresses": ["10.10.0.101"]}]}}]}}}]
    }]))
    .unwrap();
    let request: Vec<vnfm_types::ExtVirtualLinkData> = serde_json::from_value(links).unwrap();
    let links = vnfm_infra_openstack::ext_links::overlay_links(
        &vnfm_infra_openstack::ext_links::links_from_info(&recorded),
        &request,
    );
    let root = tacker(package);
    let vnfd = load_vnfd(&root);
    let h = hot::load_base_hot(&Dir(root), &vnfd, flavour, &DriverConfig::default())
        .unwrap()
        .unwrap_or_else(|| panic!("{package}: no BaseHOT for {flavour}"));
    let capacity = [("VDU1".to_string(), 1), ("VDU2".to_string(), 1)].into();
    hot::build_nfv(
        &hot::nfv_paths([&h.template]),
        &NfvInputs {
            flavour: vnfd.flavour(flavour).unwrap(),
            capacity: Some(&capacity),
            ext_virtual_links: &links,
            additional: None,
            grant: None,
            images: None,
        },
    )
}

/// Tacker's `change_vnfpkg` functional tests change the package of an instance whose VDU2_CP1
/// has a fixed address, without `extVirtualLinks` (`paramgen.change_vnfpkg`) or moving VDU1_CP1
/// to another network (`change_vnfpkg_with_ext_vl`): the new BaseHOT reads VDU2_CP1's network
/// and address, and gets them from the links recorded on the instance. The package of
/// `test_change_vnfpkg_failed_in_update` reads the address of `VDU2_CP2`, a CP no link has, on
/// purpose: it gets none, and Heat refuses the update (`Error validating value ''`), as it
/// does for Tacker, whose test expects the failure.
#[vnfm_test_env::needs(corpus)]
#[test]
fn change_vnfpkg_keeps_the_fixed_address_recorded_for_vdu2_cp1() {
    let vdu2_cp1 = json!({"network": "net0-uuid", "fixed_ips": [{"ip_address": "10.10.0.101"}]});
    for (package, flavour) in [
        ("v2-vm-change-vnfpkg-new-image", "simple"),
        ("v2-vm-change-vnfpkg-new-image", "volume"),
        ("v2-vm-change-vnfpkg-new-volume", "simple"),
        ("v2-vm-change-vnfpkg-new-volume", "volume"),
    ] {
        let nfv = change_vnfpkg_nfv(package, flavour, json!([]));
        assert_eq!(
            nfv["CP"]["VDU2_CP1"], vdu2_cp1,
            "{package} {flavour}: {nfv}"
        );
        assert_eq!(nfv["CP"]["VDU1_CP1"]["network"], "net0-uuid", "{package}");
    }
    // `change_vnfpkg_with_ext_vl`: VDU1_CP1 moves to net1, VDU2_CP1 stays where it was.
    let moved = json!([{"id": "ext-net1", "resourceId": "net1-uuid", "extCps": [
        {"cpdId": "VDU1_CP1", "cpConfig": {"VDU1_CP1_1": {"cpProtocolData": [
            {"layerProtocol": "IP_OVER_ETHERNET", "ipOverEthernet": {"ipAddresses": [
                {"type": "IPV4", "numDynamicAddresses": 1}]}}]}}}]}]);
    let nfv = change_vnfpkg_nfv("v2-vm-change-vnfpkg-new-image", "simple", moved);
    assert_eq!(nfv["CP"]["VDU2_CP1"], vdu2_cp1, "{nfv}");
    assert_eq!(nfv["CP"]["VDU1_CP1"]["network"], "net1-uuid");
    // The package broken on purpose.
    let nfv = change_vnfpkg_nfv("v2-vm-change-vnfpkg-update-failed", "simple", json!([]));
    assert_eq!(
        nfv["CP"]["VDU2_CP1"],
        json!({"network": "net0-uuid"}),
        "{nfv}"
    );
    assert_eq!(
        nfv["CP"]["VDU2_CP2"]["fixed_ips"][0]["ip_address"],
        Value::Null
    );
}

/// CHANGE_EXT_CONN of Tacker's `test_basic_lcms_max` (`change_ext_conn_max`): only the CPs
/// the request connects change; VDU2_CP1-2's port, which the INSTANTIATE's
/// `additionalParams.nfv` gave over its `extLinkPorts` placeholder, stays.
#[vnfm_test_env::needs(corpus)]
#[test]
fn a_change_of_connectivity_changes_only_the_cps_it_connects() {
    let root = tacker("v2-vm-basic-lcms-max");
    let vnfd = load_vnfd(&root);
    let fl = vnfd.flavour("simple").unwrap();
    let h = hot::load_base_hot(&Dir(root), &vnfd, "simple", &DriverConfig::default())
        .unwrap()
        .unwrap();
    let paths = hot::nfv_paths([&h.template]);
    let mut stack_nfv = json!({"CP": {
        "VDU1_CP1": {"network": "net0-uuid", "fixed_ips": [{"subnet": "subnet0-uuid"}]},
        "VDU2_CP1-2": {"port": "port-from-additional-params"},
        "VDU2_CP2": {"network": "ft-net0-uuid",
            "fixed_ips": [{"ip_address": "10.10.1.102", "subnet": "a"}, {"subnet": "b"}]}
    }});
    stack_nfv["VDU"] = json!({"VDU1": {"desired_capacity": 1}});
    let links: Vec<vnfm_types::ExtVirtualLinkData> = serde_json::from_value(json!([{
        "id": "ext-vl-1", "resourceId": "ft-net1-uuid",
        "extCps": [
            {"cpdId": "VDU1_CP1", "cpConfig": {"VDU1_CP1": {"cpProtocolData": [{
                "layerProtocol": "IP_OVER_ETHERNET", "ipOverEthernet": {"ipAddresses": [
                    {"type": "IPV4", "numDynamicAddresses": 1, "subnetId": "ft-subnet1-uuid"}]}}]}}},
            {"cpdId": "VDU2_CP2", "cpConfig": {"VDU2_CP2": {"cpProtocolData": [{
                "layerProtocol": "IP_OVER_ETHERNET", "ipOverEthernet": {"ipAddresses": [
                    {"type": "IPV4", "fixedAddresses": ["22.22.22.101"], "subnetId": "ft-subnet1-uuid"},
                    {"type": "IPV6", "numDynamicAddresses": 1, "subnetId": "ft-ipv6-subnet1-uuid"}]}}]}}}
        ]
    }]))
    .unwrap();
    let rebuilt = hot::build_nfv(
        &paths,
        &NfvInputs {
            flavour: fl,
            capacity: None,
            ext_virtual_links: &links,
            additional: None,
            grant: None,
            images: None,
        },
    );
    let nfv = hot::merge_connected_cps(stack_nfv.clone(), &rebuilt, &links, false);
    assert_eq!(nfv["CP"]["VDU2_CP1-2"], stack_nfv["CP"]["VDU2_CP1-2"]);
    assert_eq!(nfv["VDU"], stack_nfv["VDU"]);
    assert_eq!(nfv["CP"]["VDU1_CP1"]["network"], "ft-net1-uuid");
    assert_eq!(
        nfv["CP"]["VDU1_CP1"]["fixed_ips"][0]["subnet"],
        "ft-subnet1-uuid"
    );
    assert_eq!(nfv["CP"]["VDU2_CP2"]["network"], "ft-net1-uuid");
    assert_eq!(
        nfv["CP"]["VDU2_CP2"]["fixed_ips"],
        json!([{"ip_address": "22.22.22.101", "subnet": "ft-subnet1-uuid"},
               {"subnet": "ft-ipv6-subnet1-uuid"}])
    );
}

/// Tacker's `StandardUserData` names a CP once per VNFC (`VDU1_CP1-0`): a change of
/// connectivity of `VDU1_CP1` changes every one of them (its `change_ext_conn` reads the CP
/// less its index), and leaves the CPs it does not connect; without the index style, an
/// indexed name is a CP of its own.
#[test]
fn a_change_of_connectivity_reaches_the_cps_of_each_vnfc_of_standard_user_data() {
    let stack_nfv = json!({"CP": {
        "VDU1_CP1-0": {"network": "net0-uuid", "fixed_ips": [{"subnet": "subnet0-uuid"}]},
        "VDU1_CP1-1": {"network": "net0-uuid", "fixed_ips": [{"subnet": "subnet0-uuid"}]},
        "VDU1_CP2-0": {"network": "ft-net0-uuid"}
    }});
    let rebuilt = json!({"CP": {
        "VDU1_CP1-0": {"network": "ft-net1-uuid", "fixed_ips": [{"subnet": "ft-subnet1-uuid"}]},
        "VDU1_CP1-1": {"network": "ft-net1-uuid", "fixed_ips": [{"subnet": "ft-subnet1-uuid"}]},
        "VDU1_CP2-0": {"network": "elsewhere"}
    }});
    let links: Vec<vnfm_types::ExtVirtualLinkData> = serde_json::from_value(json!([{
        "id": "ext-vl-1", "resourceId": "ft-net1-uuid",
        "extCps": [{"cpdId": "VDU1_CP1", "cpConfig": {"VDU1_CP1": {}}}]
    }]))
    .unwrap();
    let nfv = hot::merge_connected_cps(stack_nfv.clone(), &rebuilt, &links, true);
    for cp in ["VDU1_CP1-0", "VDU1_CP1-1"] {
        assert_eq!(nfv["CP"][cp], rebuilt["CP"][cp], "{cp}");
    }
    assert_eq!(nfv["CP"]["VDU1_CP2-0"], stack_nfv["CP"]["VDU1_CP2-0"]);
    let unindexed = hot::merge_connected_cps(stack_nfv.clone(), &rebuilt, &links, false);
    assert_eq!(
        unindexed, stack_nfv,
        "VDU1_CP1-0 is not VDU1_CP1 without the index style"
    );
}
