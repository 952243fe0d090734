//! Tacker's v2 VM samples whose servers boot from Cinder volumes, from the corpus, unchanged,
//! one after the other through the same steps (their volume types have fixed names, which
//! Cinder keeps unique, so they cannot run side by side): instantiate, scale out and in where
//! the template scales the VDU, heal of each VDU's VNFC, terminate. After each step the test
//! checks what Nova, Neutron and Cinder hold. The packages' images are not in the test cloud:
//! the requests boot the volumes from `cirros-0.6` through `additionalParams.nfv`. They run as
//! the cloud's administrator, since the templates create volume types.

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

/// One sample and what the test expects of it.
struct Sample {
    /// The corpus directory.
    dir: &'static str,
    /// The fixed address of `VDU2_CP2` on `net-ext-2`.
    address: &'static str,
    /// Ports made before the request and passed as `extLinkPorts` of `net-ext-1`, to the CPs
    /// named here (`VDU2_CP1-1`, ... of `v2-vm-basic-lcms-max`).
    link_ports: &'static [&'static str],
    /// The scaling aspect of VDU1 when its template scales it (an autoscaling group).
    aspect: Option<&'static str>,
    /// Neutron ports per server of VDU1 and of VDU2 (the made ones included).
    ports: (usize, usize),
}

const SAMPLES: &[Sample] = &[
    Sample {
        dir: "v2-vm-basic-lcms-max",
        address: "10.10.9.84",
        link_ports: &["VDU2_CP1-1", "VDU2_CP1-2"],
        aspect: Some("VDU1_scale"),
        ports: (5, 6),
    },
    Sample {
        dir: "v2-vm-individual-vnfc-max",
        address: "10.10.9.85",
        link_ports: &[],
        aspect: None,
        ports: (5, 4),
    },
];

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
    json!({
        "flavourId": "simple",
        "vimConnectionInfo": {"vim1": cloud.vim_connection()},
        "extVirtualLinks": [
            {"id": "ext-1", "resourceId": "net-ext-1", "extLinkPorts": link_ports, "extCps": ext1},
            {"id": "ext-2", "resourceId": "net-ext-2",
             "extCps": [dynamic_cp("VDU1_CP2", "subnet-ext-2"), vdu2_cp2_at(sample.address)]}
        ],
        "additionalParams": {"nfv": {"VDU": {
            "VDU1": zone, "VDU2": zone,
            "VDU1-VirtualStorage": image, "VDU2-VirtualStorage": image}}}
    })
}

/// Asserts that every VNFC of `id` is an `ACTIVE` server on a volume Cinder made from the
/// test image, with `sample.ports` Neutron ports; answers the VNFCs' volumes.
async fn assert_on_volumes(env: &Env, sample: &Sample, id: &VnfInstanceId) -> BTreeSet<String> {
    let inst = env.instance(id).await;
    let services = env.services();
    for (vdu, count) in [("VDU1", sample.ports.0), ("VDU2", sample.ports.1)] {
        for v in of_vdu(&inst, vdu) {
            let ports = services.ports_of(&v.compute_resource.resource_id).await;
            assert_eq!(ports.len(), count, "{}: {vdu}: {ports:?}", sample.dir);
        }
    }
    services
        .assert_servers_on_volumes(&inst, &vnfcs(&inst), TEST_IMAGE)
        .await
}

/// Scales `aspect` (of VDU1) out by one step and in again: one server more on a volume of its
/// own, then that server, its volume and its ports gone, the others untouched.
async fn scale_out_and_in(env: &Env, sample: &Sample, id: &VnfInstanceId, aspect: &str) {
    let before = of_vdu(&env.instance(id).await, "VDU1");
    let volumes = assert_on_volumes(env, sample, id).await;
    let done = env.scale_ok(id, "SCALE_OUT", aspect, 1).await;
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
    assert_eq!(out_volumes.len(), volumes.len() + 1);
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

/// Heals the first VNFC of `vdu`: Nova holds a new server on a new volume made from the image,
/// on the same ports; the old server and its volume are gone; the other VNFCs keep theirs.
async fn heal_with_volume(env: &Env, sample: &Sample, id: &VnfInstanceId, vdu: &str) {
    let inst = env.instance(id).await;
    let target = of_vdu(&inst, vdu)[0].clone();
    let others: Vec<VnfcResourceInfo> = vnfcs(&inst)
        .into_iter()
        .filter(|v| v.id != target.id)
        .collect();
    let old_volumes: BTreeSet<String> = support::volumes_of(&inst, &target).into_iter().collect();
    let old_ports = env.ports(std::slice::from_ref(&target)).await;
    let done = env.heal_vnfcs_ok(id, std::slice::from_ref(&target)).await;
    assert_eq!(
        changes_of(&done, ChangeType::Modified),
        vec![target.id.clone()]
    );
    let inst = env.instance(id).await;
    let healed: Vec<VnfcResourceInfo> = vnfcs(&inst)
        .into_iter()
        .filter(|v| v.id == target.id)
        .collect();
    assert_ne!(
        healed[0].compute_resource.resource_id, target.compute_resource.resource_id,
        "{}: {vdu}'s server was not replaced",
        sample.dir
    );
    let services = env.services();
    services
        .assert_servers_gone([&target.compute_resource.resource_id])
        .await;
    let new_volumes = services
        .assert_servers_on_volumes(&inst, &healed, TEST_IMAGE)
        .await;
    assert!(new_volumes.is_disjoint(&old_volumes), "{new_volumes:?}");
    services.assert_volumes_gone(&old_volumes).await;
    assert_eq!(env.ports(&healed).await, old_ports);
    let kept: Vec<VnfcResourceInfo> = vnfcs(&inst)
        .into_iter()
        .filter(|v| v.id != target.id)
        .collect();
    assert_eq!(
        servers(&kept),
        servers(&others),
        "healing {vdu} touched another server"
    );
    assert_on_volumes(env, sample, id).await;
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
    assert!(
        services
            .addresses_on(&vdu2, "net-ext-2")
            .await
            .contains(&sample.address.to_string()),
        "{}",
        sample.dir
    );
    // The ports made before the request are VDU2's.
    for port in made.values() {
        let p = services.port(port).await.unwrap();
        assert_eq!(p["device_id"], vdu2.as_str(), "{p}");
    }

    if let Some(aspect) = sample.aspect {
        scale_out_and_in(env, sample, &vnf.id, aspect).await;
    }
    for vdu in ["VDU1", "VDU2"] {
        heal_with_volume(env, sample, &vnf.id, vdu).await;
    }
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
    for port in made.values() {
        let p = services.port(port).await.unwrap();
        assert_eq!(p["device_id"], "", "{p}");
        services.delete_port(port).await;
    }
}

#[vnfm_test_env::needs(openstack, corpus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tacker_v2_samples_on_cinder_volumes_through_scale_heal_and_terminate() {
    let cloud = Cloud::from_env().as_admin();
    let env = env(cloud.clone()).await;
    for sample in SAMPLES {
        run(&env, &cloud, sample).await;
    }
    env.lcm.shutdown(Duration::from_secs(5)).await;
}
