//! A change of package from a package without BaseHOT (the template generated from the VNFD)
//! to one with a BaseHOT whose internal subnet differs: Heat replaces the internal subnet, and
//! Neutron refuses to delete the old one while the VNFCs' ports still hold addresses on it.
//! The driver moves those ports to the new subnet. Heat replaces VDU1's servers, each holding
//! a volume: the driver deletes the old server so that the new one takes its volume. The test
//! checks what Nova, Neutron and Cinder hold.

use super::*;

/// Asserts that Cinder holds each of `vnfcs`' volumes `in-use`, attached to the VNFC's server
/// only; answers the volumes.
async fn assert_volumes_attached(
    services: &support::Services,
    inst: &VnfInstance,
    vnfcs: &[VnfcResourceInfo],
) -> BTreeSet<String> {
    let mut all = BTreeSet::new();
    for c in vnfcs {
        let server = &c.compute_resource.resource_id;
        let volumes = support::volumes_of(inst, c);
        assert_eq!(volumes.len(), 1, "{c:?}");
        for id in volumes {
            let v = services
                .volume(&id)
                .await
                .unwrap_or_else(|| panic!("Cinder holds no volume {id} of server {server}"));
            assert_eq!(v["status"], "in-use", "{v}");
            let attached: Vec<&str> = v["attachments"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a["server_id"].as_str().unwrap())
                .collect();
            assert_eq!(attached, vec![server.as_str()], "{v}");
            all.insert(id);
        }
    }
    all
}

/// The subnets Neutron has on network `network_id`: id -> CIDR.
async fn subnets_of(services: &support::Services, network_id: &str) -> BTreeMap<String, String> {
    services
        .subnets_of(network_id)
        .await
        .into_iter()
        .map(|s| {
            (
                s["id"].as_str().unwrap().to_string(),
                s["cidr"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[vnfm_test_env::needs(openstack)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn package_change_from_a_generated_template_to_a_base_hot_with_another_internal_subnet() {
    let cloud = Cloud::from_env();
    let env = env(cloud.clone()).await;
    let from = env.catalog.insert(
        support::vnfd("vnfd-heat-generated-vl"),
        Arc::new(MemArtifacts::new()),
    );
    let to = env.catalog.insert(
        support::vnfd("vnfd-heat-base-hot-vl"),
        Arc::new(support::package("")),
    );
    let vnf = env.create(&from).await;
    let op = env.instantiate_at(&vnf.id, &cloud, "10.10.0.81").await;
    env.completed(op).await;
    let inst = env.instance(&vnf.id).await;
    let vdu1 = of_vdu(&inst, "VDU1");
    assert_eq!(vdu1.len(), 2);
    env.assert_servers_built(&vnfcs(&inst)).await;
    let services = env.services();
    // The internal network and its generated subnet, as Neutron holds them.
    let vl = inst
        .instantiated_vnf_info
        .as_ref()
        .and_then(|i| i.vnf_virtual_link_resource_info.clone())
        .unwrap();
    assert_eq!(vl.len(), 1);
    let network = vl[0].network_resource.resource_id.clone();
    let old_subnets = subnets_of(&services, &network).await;
    assert_eq!(
        old_subnets.values().collect::<Vec<_>>(),
        vec!["192.168.100.0/24"],
        "{old_subnets:?}"
    );
    for v in &vdu1 {
        let addrs = cp_addresses(v, "VDU1_CP2");
        assert_eq!(addrs.len(), 1, "{v:?}");
        assert!(addrs[0].starts_with("192.168.100."), "{addrs:?}");
    }
    let old_volumes = assert_volumes_attached(&services, &inst, &vdu1).await;
    let old_servers: BTreeSet<String> = servers(&vdu1).into_iter().collect();

    // The change of package: the stack runs the BaseHOT, the ports are on its subnet.
    let op = env.change_vnfpkg_to(&vnf.id, &to).await;
    env.completed(op).await;
    let inst = env.instance(&vnf.id).await;
    assert_eq!(inst.vnfd_id.as_str(), to);
    let (status, _) = env.stack(&vnf.id).await.unwrap();
    assert_eq!(status, "UPDATE_COMPLETE");
    let template = env.template(&vnf.id).await;
    assert!(template["resources"]["VDU2"].is_object(), "{template}");
    let vdu1 = of_vdu(&inst, "VDU1");
    assert_eq!((vdu1.len(), of_vdu(&inst, "VDU2").len()), (2, 1));
    env.assert_servers_built(&vnfcs(&inst)).await;
    // Heat replaced VDU1's servers (the BaseHOT's server differs from the generated one): the
    // new server failed on the volume the old one held, the driver deleted the old server,
    // and the new one took the same volume. The old servers are gone.
    assert!(
        servers(&vdu1).iter().all(|s| !old_servers.contains(s)),
        "{vdu1:?}"
    );
    services.assert_servers_gone(&old_servers).await;
    let new_volumes = assert_volumes_attached(&services, &inst, &vdu1).await;
    assert_eq!(new_volumes, old_volumes);
    // Neutron: the old subnet is gone, the network has the BaseHOT's subnet only, and every
    // VDU1 server's internal port has its address there.
    let new_subnets = subnets_of(&services, &network).await;
    assert_eq!(
        new_subnets.values().collect::<Vec<_>>(),
        vec!["192.168.3.0/24"],
        "{new_subnets:?}"
    );
    let new_subnet = new_subnets.keys().next().unwrap().clone();
    for v in &vdu1 {
        let server = &v.compute_resource.resource_id;
        let internal: Vec<Value> = services
            .ports_of(server)
            .await
            .into_iter()
            .filter(|p| p["network_id"] == network.as_str())
            .collect();
        assert_eq!(internal.len(), 1, "{internal:?}");
        let ips = internal[0]["fixed_ips"].as_array().unwrap();
        assert_eq!(ips.len(), 1, "{ips:?}");
        assert_eq!(ips[0]["subnet_id"], new_subnet.as_str(), "{ips:?}");
        let ip = ips[0]["ip_address"].as_str().unwrap();
        assert!(ip.starts_with("192.168.3."), "{ip}");
        assert_eq!(cp_addresses(v, "VDU1_CP2"), vec![ip]);
    }
    // VDU2's address on the external network carried over.
    let vdu2 = of_vdu(&inst, "VDU2")[0]
        .compute_resource
        .resource_id
        .clone();
    assert_eq!(
        services.addresses_on(&vdu2, "net-ext-1").await,
        vec!["10.10.0.81"]
    );

    let all = servers(&vnfcs(&inst));
    let ports = env.ports(&vnfcs(&inst)).await;
    env.terminate_and_check_gone(&vnf.id, &all, &ports).await;
    services.assert_volumes_gone(&new_volumes).await;
    assert!(subnets_of(&services, &network).await.is_empty());
    env.lcm.shutdown(Duration::from_secs(5)).await;
}
