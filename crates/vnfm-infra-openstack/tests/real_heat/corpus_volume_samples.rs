//! Tacker's v2 VM samples whose servers boot from Cinder volumes, from the corpus, unchanged,
//! through the same steps: instantiate, scale out and in where the template scales the VDU
//! (an autoscaling group, or one resource per VNFC with Tacker's `StandardUserData`), heal of
//! each VDU's VNFC, terminate. After each step the test checks what Nova, Neutron and Cinder
//! hold. The packages' images are not in the test cloud: the requests boot the servers and
//! volumes from `cirros-0.6` through `additionalParams.nfv`. They run as the cloud's
//! administrator, since the templates create volume types. `v2-vm-basic-lcms-max` and
//! `v2-vm-individual-vnfc-max` run one after the other, and not beside another test holding
//! [`support::fixed_volume_type_names`] (their volume types have fixed names, which Cinder
//! keeps unique); `v2-vm-userdata-standard` (volume types named after the nested
//! stack) is a test of its own.

use super::*;

/// An external CP `cpd` with one address Neutron picks on `subnet`.
fn dynamic_cp(cpd: &str, subnet: &str) -> Value {
    json!({"cpdId": cpd, "cpConfig": {format!("{cpd}_1"): {"cpProtocolData": [
        {"layerProtocol": "IP_OVER_ETHERNET", "ipOverEthernet": {"ipAddresses": [
            {"type": "IPV4", "numDynamicAddresses": 1, "subnetId": subnet}]}}]}}})
}

/// `VDU2_CP2` of the samples: `address` on `subnet-ext-2`, and a second address Neutron picks
/// there (`fixed_ips[1]` of the template).
fn vdu2_cp2_at(address: &str) -> Value {
    json!({"cpdId": "VDU2_CP2", "cpConfig": {"VDU2_CP2_1": {"cpProtocolData": [
        {"layerProtocol": "IP_OVER_ETHERNET", "ipOverEthernet": {"ipAddresses": [
            {"type": "IPV4", "fixedAddresses": [address], "subnetId": "subnet-ext-2"},
            {"type": "IPV4", "numDynamicAddresses": 1, "subnetId": "subnet-ext-2"}]}}]}}})
}

/// The `additionalParams` naming Tacker's `StandardUserData`, as Tacker's functional tests
/// send them (the package does not carry the file: the driver builds what the class builds).
fn standard_user_data() -> Value {
    json!({"lcm-operation-user-data": "./UserData/userdata_standard.py",
           "lcm-operation-user-data-class": "StandardUserData"})
}

/// One sample and what the test expects of it.
struct Sample {
    /// The corpus directory.
    dir: &'static str,
    /// The fixed address of `VDU2_CP2` on `net-ext-2`, for the samples whose `VDU2_CP2` is
    /// external.
    address: Option<&'static str>,
    /// Ports made before the request and passed as `extLinkPorts` of `net-ext-1`, to the CPs
    /// named here (`VDU2_CP1-1`, ... of `v2-vm-basic-lcms-max`).
    link_ports: &'static [&'static str],
    /// The scaling aspect of VDU1 when its template scales it.
    aspect: Option<&'static str>,
    /// Neutron ports per server of VDU1 and of VDU2 (the made ones included).
    ports: (usize, usize),
    /// The VDUs whose servers boot from a volume (the others boot from the image).
    on_volumes: &'static [&'static str],
    /// Whether the requests name Tacker's `StandardUserData`: one top-level resource per
    /// VNFC, `VDU1-0`, `VDU1-1`, ...
    standard: bool,
    /// The VDUs whose first VNFC is healed.
    heals: &'static [&'static str],
    /// The package the instance changes to before its termination, if any.
    change_to: Option<&'static str>,
}

const SAMPLES: &[Sample] = &[
    Sample {
        dir: "v2-vm-basic-lcms-max",
        address: Some("10.10.9.84"),
        link_ports: &["VDU2_CP1-1", "VDU2_CP1-2"],
        aspect: Some("VDU1_scale"),
        ports: (5, 6),
        on_volumes: &["VDU1", "VDU2"],
        standard: false,
        heals: &["VDU1", "VDU2"],
        change_to: None,
    },
    Sample {
        dir: "v2-vm-individual-vnfc-max",
        address: Some("10.10.9.85"),
        link_ports: &[],
        aspect: Some("VDU1_scale"),
        ports: (5, 4),
        on_volumes: &["VDU1", "VDU2"],
        standard: true,
        heals: &["VDU1", "VDU2"],
        change_to: None,
    },
];

/// VDU1 boots from the image, VDU2 from a volume; three ports each, one on `net-ext-1`.
const USERDATA_STANDARD: Sample = Sample {
    dir: "v2-vm-userdata-standard",
    address: None,
    link_ports: &[],
    aspect: Some("VDU1_scale"),
    ports: (3, 3),
    on_volumes: &["VDU2"],
    standard: true,
    // A VNFC on a volume is healed in `v2-vm-individual-vnfc-max`, with the same class.
    heals: &["VDU1"],
    change_to: Some("v2-vm-change-vnfpkg-standard"),
};

/// The instantiate request of `sample`, with `made` (CP -> port id) as link ports.
fn request(cloud: &Cloud, sample: &Sample, made: &BTreeMap<String, String>) -> Value {
    let image = json!({"vcImageId": TEST_IMAGE});
    // The templates pass `locationConstraints` to the servers' availability zone.
    let zone = json!({"locationConstraints": "nova"});
    let mut ext1 = vec![dynamic_cp("VDU1_CP1", "subnet-ext-1")];
    let mut link_ports = Vec::new();
    for (cp, port) in made {
        ext1.push(json!({"cpdId": cp, "cpConfig": {format!("{cp}_1"): {"linkPortId": format!("lp-{cp}")}}}));
        link_ports.push(json!({"id": format!("lp-{cp}"), "resourceHandle": {"resourceId": port}}));
    }
    let mut links = vec![
        json!({"id": "ext-1", "resourceId": "net-ext-1", "extLinkPorts": link_ports, "extCps": ext1}),
    ];
    match sample.address {
        Some(address) => links.push(json!({"id": "ext-2", "resourceId": "net-ext-2",
            "extCps": [dynamic_cp("VDU1_CP2", "subnet-ext-2"), vdu2_cp2_at(address)]})),
        // VDU2_CP1 takes its subnet from `fixed_ips[0].subnet`.
        None => links[0]["extCps"]
            .as_array_mut()
            .unwrap()
            .push(dynamic_cp("VDU2_CP1", "subnet-ext-1")),
    }
    let mut additional = json!({"nfv": {"VDU": {
        "VDU1": {"locationConstraints": "nova", "vcImageId": TEST_IMAGE}, "VDU2": zone,
        "VDU1-VirtualStorage": image, "VDU2-VirtualStorage": image}}});
    if sample.standard {
        json_patch::merge(&mut additional, &standard_user_data());
    }
    json!({
        "flavourId": "simple",
        "vimConnectionInfo": {"vim1": cloud.vim_connection()},
        "extVirtualLinks": links,
        "additionalParams": additional
    })
}

/// Asserts that every VNFC of `id` is an `ACTIVE` server with `sample.ports` Neutron ports,
/// on a volume Cinder made from the test image for the VDUs of `sample.on_volumes`, else
/// booted from that image; with `sample.standard`, that each VNFC has a top-level resource
/// `<vdu>-<index>` of its own; answers the VNFCs' volumes.
async fn assert_on_volumes(env: &Env, sample: &Sample, id: &VnfInstanceId) -> BTreeSet<String> {
    let inst = env.instance(id).await;
    let services = env.services();
    let mut volumes = BTreeSet::new();
    for (vdu, count) in [("VDU1", sample.ports.0), ("VDU2", sample.ports.1)] {
        let of = of_vdu(&inst, vdu);
        for v in &of {
            let ports = services.ports_of(&v.compute_resource.resource_id).await;
            assert_eq!(ports.len(), count, "{}: {vdu}: {ports:?}", sample.dir);
        }
        if sample.on_volumes.contains(&vdu) {
            volumes.extend(
                services
                    .assert_servers_on_volumes(&inst, &of, TEST_IMAGE)
                    .await,
            );
        } else {
            env.assert_servers_built(&of).await;
        }
    }
    if sample.standard {
        assert_per_vnfc_resources(env, sample, id, &inst).await;
    }
    volumes
}

/// Each VNFC of a `StandardUserData` stack is the server of the nested stack of a top-level
/// resource `<vdu>-<index>`, the indexes of a VDU are `0..n`, and the top template has no
/// resource named after the VDU itself.
async fn assert_per_vnfc_resources(
    env: &Env,
    sample: &Sample,
    id: &VnfInstanceId,
    inst: &VnfInstance,
) {
    let template = env.template(id).await;
    let resources = template["resources"].as_object().unwrap();
    for vdu in ["VDU1", "VDU2"] {
        assert!(!resources.contains_key(vdu), "{}: {vdu}", sample.dir);
        let of = of_vdu(inst, vdu);
        let mut indexes: Vec<u64> = of
            .iter()
            .map(|v| {
                let meta = v.metadata.as_ref().unwrap();
                let idx = meta["vdu_idx"]
                    .as_u64()
                    .unwrap_or_else(|| panic!("{meta:?}"));
                // Heat names a nested stack `<parent>-<resource>-<suffix>`.
                let stack = meta["stack_name"].as_str().unwrap();
                assert!(stack.contains(&format!("-{vdu}-{idx}-")), "{stack}");
                idx
            })
            .collect();
        indexes.sort_unstable();
        assert_eq!(indexes, (0..of.len() as u64).collect::<Vec<_>>(), "{vdu}");
        let named: BTreeSet<&String> = resources
            .keys()
            .filter(|k| {
                k.strip_prefix(vdu).is_some_and(|r| {
                    r.starts_with('-') && r[1..].bytes().all(|b| b.is_ascii_digit())
                })
            })
            .collect();
        assert_eq!(named.len(), of.len(), "{}: {named:?}", sample.dir);
    }
}

/// Scales `aspect` (of VDU1) out by one step and in again: one server more (on a volume of its
/// own when VDU1 boots from one), then that server, its volume and its ports gone, the others
/// untouched.
async fn scale_out_and_in(env: &Env, sample: &Sample, id: &VnfInstanceId, aspect: &str) {
    let before = of_vdu(&env.instance(id).await, "VDU1");
    let volumes = assert_on_volumes(env, sample, id).await;
    let done = env.scale_ok(id, "SCALE_OUT", aspect, 1).await;
    if sample.standard {
        // The one added is the next index: VDU1-<n>.
        let meta = of_vdu(&env.instance(id).await, "VDU1")
            .into_iter()
            .filter(|v| !ids(&before).contains(&v.id))
            .map(|v| v.metadata.unwrap())
            .collect::<Vec<_>>();
        assert_eq!(meta.len(), 1, "{meta:?}");
        assert_eq!(meta[0]["vdu_idx"], before.len(), "{meta:?}");
    }
    let out = of_vdu(&env.instance(id).await, "VDU1");
    assert_eq!(out.len(), before.len() + 1, "{}: {out:?}", sample.dir);
    let added: Vec<VnfcResourceInfo> = out
        .iter()
        .filter(|v| !ids(&before).contains(&v.id))
        .cloned()
        .collect();
    assert_eq!(
        changes_of(&done, ChangeType::Added),
        vec![added[0].id.clone()]
    );
    let out_volumes = assert_on_volumes(env, sample, id).await;
    let added_volumes = usize::from(sample.on_volumes.contains(&"VDU1"));
    assert_eq!(out_volumes.len(), volumes.len() + added_volumes);
    assert!(volumes.is_subset(&out_volumes));
    let added_ports = env.ports(&added).await;

    let done = env.scale_ok(id, "SCALE_IN", aspect, 1).await;
    assert_eq!(
        changes_of(&done, ChangeType::Removed),
        vec![added[0].id.clone()]
    );
    let services = env.services();
    services.assert_servers_gone(&servers(&added)).await;
    services.assert_ports_gone(&added_ports).await;
    services
        .assert_volumes_gone(out_volumes.difference(&volumes))
        .await;
    assert_eq!(
        servers(&of_vdu(&env.instance(id).await, "VDU1")),
        servers(&before)
    );
    assert_eq!(assert_on_volumes(env, sample, id).await, volumes);
}

/// Heals the first VNFC of `vdu`: Nova holds a new server (on a new volume made from the image
/// for a VDU of `sample.on_volumes`), on the same ports; the old server (and its volume) are
/// gone; the other VNFCs keep theirs.
async fn heal_one(env: &Env, sample: &Sample, id: &VnfInstanceId, vdu: &str) {
    let inst = env.instance(id).await;
    let target = of_vdu(&inst, vdu)[0].clone();
    let others: Vec<VnfcResourceInfo> = vnfcs(&inst)
        .into_iter()
        .filter(|v| v.id != target.id)
        .collect();
    let old_volumes: BTreeSet<String> = support::volumes_of(&inst, &target).into_iter().collect();
    let old_ports = env.ports(std::slice::from_ref(&target)).await;
    let done = env.heal_vnfcs_ok(id, std::slice::from_ref(&target)).await;
    // The new server is a new VNFC (Tacker's): the old one REMOVED, the new one ADDED.
    assert_eq!(
        changes_of(&done, ChangeType::Removed),
        vec![target.id.clone()]
    );
    let inst = env.instance(id).await;
    let healed: Vec<VnfcResourceInfo> = vnfcs(&inst)
        .into_iter()
        .filter(|v| place(v) == place(&target))
        .collect();
    assert_eq!(
        changes_of(&done, ChangeType::Added),
        ids(&healed).into_iter().collect::<Vec<_>>()
    );
    assert_replaced_in_place(&healed, std::slice::from_ref(&target));
    assert_ne!(
        healed[0].compute_resource.resource_id, target.compute_resource.resource_id,
        "{}: {vdu}'s server was not replaced",
        sample.dir
    );
    let services = env.services();
    services
        .assert_servers_gone([&target.compute_resource.resource_id])
        .await;
    if sample.on_volumes.contains(&vdu) {
        let new_volumes = services
            .assert_servers_on_volumes(&inst, &healed, TEST_IMAGE)
            .await;
        assert!(new_volumes.is_disjoint(&old_volumes), "{new_volumes:?}");
        services.assert_volumes_gone(&old_volumes).await;
    }
    assert_eq!(env.ports(&healed).await, old_ports);
    let kept: Vec<VnfcResourceInfo> = vnfcs(&inst)
        .into_iter()
        .filter(|v| v.id != healed[0].id)
        .collect();
    assert_eq!(
        servers(&kept),
        servers(&others),
        "healing {vdu} touched another server"
    );
    assert_on_volumes(env, sample, id).await;
}

/// Changes the package of `id` to `to` (`StandardUserData` named again and Tacker's
/// `RollingUpdate`, as Tacker's functional test sends), VDU1's image a file of the new package
/// under a name of this run: Glance gets it, VDU1's servers are rebuilt from it (Heat rebuilds
/// a server whose image changes: the same servers), every VNFC keeps its ports and its
/// resource `<vdu>-<index>`, VDU2 keeps its volume. Answers the image's name.
async fn change_package(env: &Env, sample: &Sample, id: &VnfInstanceId, to: &str) -> String {
    let (vnfd, files) = super::corpus::corpus_package(to);
    let (to, image) = super::corpus::with_own_image(
        env,
        vnfd,
        files,
        &format!("{to}-for-{id}"),
        super::corpus::ImageHolders::Vdus,
    );
    let inst = env.instance(id).await;
    let before: BTreeSet<String> = servers(&vnfcs(&inst)).into_iter().collect();
    let ports = env.ports(&vnfcs(&inst)).await;
    let volumes: BTreeSet<String> = vnfcs(&inst)
        .iter()
        .flat_map(|c| support::volumes_of(&inst, c))
        .collect();
    let mut additional = standard_user_data();
    additional["upgrade_type"] = json!("RollingUpdate");
    // VDU2 boots from a volume of the test image (the new package names an image the cloud
    // does not have); VDU1 stays in the zone it is in.
    additional["nfv"] = json!({"VDU": {"VDU1": {"locationConstraints": "nova"},
        "VDU2-VirtualStorage": {"vcImageId": TEST_IMAGE}}});
    let op = env
        .lcm
        .change_vnfpkg(
            id,
            serde_json::from_value(json!({"vnfdId": to, "additionalParams": additional})).unwrap(),
        )
        .await
        .unwrap();
    env.completed(op).await;
    let inst = env.instance(id).await;
    assert_eq!(inst.vnfd_id.as_str(), to);
    let services = env.services();
    services
        .assert_servers_built(&of_vdu(&inst, "VDU1"), &image)
        .await;
    let vdu2_volumes = services
        .assert_servers_on_volumes(&inst, &of_vdu(&inst, "VDU2"), TEST_IMAGE)
        .await;
    assert_eq!(vdu2_volumes, volumes, "{}", sample.dir);
    let after: BTreeSet<String> = servers(&vnfcs(&inst)).into_iter().collect();
    assert_eq!(after, before);
    assert_eq!(env.ports(&vnfcs(&inst)).await, ports);
    assert_per_vnfc_resources(env, sample, id, &inst).await;
    image
}

/// Runs `sample` through its lifecycle on the real cloud.
async fn run(env: &Env, cloud: &Cloud, sample: &Sample) {
    let services = env.services();
    let vnfd_id = env.corpus_vnfd(sample.dir);
    let vnf = env.create(&vnfd_id).await;
    let mut made = BTreeMap::new();
    for cp in sample.link_ports {
        let port = services
            .create_port("net-ext-1", &format!("vnfm-test-{}-{cp}", vnf.id))
            .await;
        made.insert(cp.to_string(), port);
    }
    env.instantiate_ok(&vnf.id, request(cloud, sample, &made))
        .await;
    let inst = env.instance(&vnf.id).await;
    assert_eq!(
        (of_vdu(&inst, "VDU1").len(), of_vdu(&inst, "VDU2").len()),
        (1, 1),
        "{}",
        sample.dir
    );
    assert_on_volumes(env, sample, &vnf.id).await;
    let vdu2 = of_vdu(&inst, "VDU2")[0]
        .compute_resource
        .resource_id
        .clone();
    if let Some(address) = sample.address {
        assert!(
            services
                .addresses_on(&vdu2, "net-ext-2")
                .await
                .contains(&address.to_string()),
            "{}",
            sample.dir
        );
    }
    // The ports made before the request are VDU2's.
    for port in made.values() {
        let p = services.port(port).await.unwrap();
        assert_eq!(p["device_id"], vdu2.as_str(), "{p}");
    }

    if let Some(aspect) = sample.aspect {
        scale_out_and_in(env, sample, &vnf.id, aspect).await;
    }
    for vdu in sample.heals {
        heal_one(env, sample, &vnf.id, vdu).await;
    }
    let image = match sample.change_to {
        Some(to) => Some(change_package(env, sample, &vnf.id, to).await),
        None => None,
    };
    for port in made.values() {
        let p = services.port(port).await.unwrap();
        assert_eq!(
            p["device_id"],
            of_vdu(&env.instance(&vnf.id).await, "VDU2")[0]
                .compute_resource
                .resource_id
                .as_str(),
            "{p}"
        );
    }

    // Terminate: the servers, the ports the stack made and the volumes are gone; the ports
    // made before the request stay, released, for their owner to delete.
    let inst = env.instance(&vnf.id).await;
    let all = vnfcs(&inst);
    let volumes: BTreeSet<String> = all
        .iter()
        .flat_map(|c| support::volumes_of(&inst, c))
        .collect();
    let ports: BTreeSet<String> = env
        .ports(&all)
        .await
        .into_iter()
        .filter(|p| !made.values().any(|m| m == p))
        .collect();
    env.terminate_and_check_gone(&vnf.id, &servers(&all), &ports)
        .await;
    services.assert_volumes_gone(&volumes).await;
    if let Some(image) = image {
        assert!(services.images_named(&image).await.is_empty(), "{image}");
    }
    for port in made.values() {
        let p = services.port(port).await.unwrap();
        assert_eq!(p["device_id"], "", "{p}");
        services.delete_port(port).await;
    }
}

#[vnfm_test_env::needs(openstack, corpus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tacker_v2_samples_on_cinder_volumes_through_scale_heal_and_terminate() {
    let _types = support::fixed_volume_type_names().await;
    let cloud = Cloud::from_env().as_admin();
    let env = env(cloud.clone()).await;
    for sample in SAMPLES {
        let started = std::time::Instant::now();
        run(&env, &cloud, sample).await;
        eprintln!("{}: {:.0?}", sample.dir, started.elapsed());
    }
    env.lcm.shutdown(Duration::from_secs(5)).await;
}

#[vnfm_test_env::needs(openstack, corpus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tacker_userdata_standard_scales_and_heals_each_vnfc_on_real_nova_neutron_and_cinder() {
    let cloud = Cloud::from_env().as_admin();
    let env = env(cloud.clone()).await;
    run(&env, &cloud, &USERDATA_STANDARD).await;
    env.lcm.shutdown(Duration::from_secs(5)).await;
}
