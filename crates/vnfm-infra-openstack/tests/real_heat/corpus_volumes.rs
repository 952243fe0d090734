//! Tacker's VM sample packages with volumes (the corpus, unchanged) on the real Cinder of the
//! test cloud: each server boots from a volume Cinder creates from Glance's image
//! (`block_device_mapping_v2`), in a volume type the package's template creates
//! (`OS::Cinder::VolumeType`, which Cinder lets only an administrator manage: these tests run
//! as the cloud's administrator, as Tacker's own functional tests do). After each step the
//! tests check what Nova, Neutron and Cinder hold: servers, ports, volumes attached to the
//! right server, volumes gone with their servers. The images the packages name are not in the
//! test cloud: the requests set them through `additionalParams.nfv`.

use super::*;

/// An external CP of `cpd` with one address Neutron picks.
fn dynamic_cp(cpd: &str) -> Value {
    json!({"cpdId": cpd, "cpConfig": {format!("{cpd}_1"): {"cpProtocolData": [
        {"layerProtocol": "IP_OVER_ETHERNET", "ipOverEthernet": {"ipAddresses": [
            {"type": "IPV4", "numDynamicAddresses": 1}]}}]}}})
}

/// Heals the VNFC of `resource`.
async fn heal_vnfc(env: &Env, vnf: &VnfInstanceId, resource: &VnfcResourceInfo) {
    let inst = env.instance(vnf).await;
    let vnfc_id = support::vnfc_info_id(&inst, resource);
    let op = env
        .lcm
        .heal(
            vnf,
            serde_json::from_value(json!({"vnfcInstanceId": [vnfc_id]})).unwrap(),
        )
        .await
        .unwrap();
    env.completed(op).await;
}

#[vnfm_test_env::needs(openstack, corpus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tacker_v1_functional_boots_from_cinder_volumes_through_scale_heal_and_terminate() {
    let cloud = Cloud::from_env().as_admin();
    let env = env(cloud.clone()).await;
    let vnfd_id = env.corpus_vnfd("v1-vm-functional");
    let vnf = env.create(&vnfd_id).await;
    let image = json!({"image": TEST_IMAGE});
    let op = env
        .lcm
        .instantiate(
            &vnf.id,
            serde_json::from_value(json!({
                "flavourId": "simple",
                "vimConnectionInfo": {"vim1": cloud.vim_connection()},
                "extVirtualLinks": [
                    {"id": "ext-1", "resourceId": "net-ext-1",
                     "extCps": [dynamic_cp("VDU1_CP1"), dynamic_cp("VDU2_CP1")]},
                    {"id": "ext-2", "resourceId": "net-ext-2",
                     "extCps": [dynamic_cp("VDU1_CP2"), dynamic_cp("VDU2_CP2")]}
                ],
                "additionalParams": {"nfv": {"VDU": {"VirtualStorage": image, "VDU2": image}}}
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    env.completed(op).await;
    let inst = env.instance(&vnf.id).await;
    let (vdu1, vdu2) = (of_vdu(&inst, "VDU1"), of_vdu(&inst, "VDU2"));
    assert_eq!((vdu1.len(), vdu2.len()), (1, 2));
    let services = env.services();
    // VDU1 boots from its volume, VDU2 from the image; five ports each.
    let first_volumes = services
        .assert_servers_on_volumes(&inst, &vdu1, TEST_IMAGE)
        .await;
    assert_eq!(first_volumes.len(), 1);
    env.assert_servers_built(&vdu2).await;
    for v in &vdu1 {
        let ports = services.ports_of(&v.compute_resource.resource_id).await;
        assert_eq!(ports.len(), 5, "{ports:?}");
    }

    // Scale `worker_instance` (VDU1, whose group has the constant size of Tacker's v1 API:
    // the driver reads it from `nfv`) out by one step: a second VDU1 server on a volume of its
    // own, with five ports; then in again: that server, its volume and its ports are gone.
    let done = env
        .scale_ok(&vnf.id, "SCALE_OUT", "worker_instance", 1)
        .await;
    let inst = env.instance(&vnf.id).await;
    let out = of_vdu(&inst, "VDU1");
    assert_eq!(out.len(), 2, "{out:?}");
    assert!(ids(&vdu1).is_subset(&ids(&out)));
    let added: Vec<VnfcResourceInfo> = out
        .iter()
        .filter(|v| !ids(&vdu1).contains(&v.id))
        .cloned()
        .collect();
    assert_eq!(
        changes_of(&done, ChangeType::Added),
        vec![added[0].id.clone()]
    );
    let out_volumes = services
        .assert_servers_on_volumes(&inst, &out, TEST_IMAGE)
        .await;
    assert_eq!(out_volumes.len(), 2);
    assert!(first_volumes.is_subset(&out_volumes));
    let added_ports = env.ports(&added).await;
    assert_eq!(added_ports.len(), 5, "{added_ports:?}");
    let done = env
        .scale_ok(&vnf.id, "SCALE_IN", "worker_instance", 1)
        .await;
    assert_eq!(
        changes_of(&done, ChangeType::Removed),
        vec![added[0].id.clone()]
    );
    let inst = env.instance(&vnf.id).await;
    assert_eq!(servers(&of_vdu(&inst, "VDU1")), servers(&vdu1));
    services.assert_servers_gone(&servers(&added)).await;
    services.assert_ports_gone(&added_ports).await;
    services
        .assert_volumes_gone(out_volumes.difference(&first_volumes))
        .await;
    assert_eq!(
        services
            .assert_servers_on_volumes(&inst, &vdu1, TEST_IMAGE)
            .await,
        first_volumes
    );

    // Heal VDU1's VNFC: Nova builds a new server on a new volume, on the same ports.
    let old = vdu1[0].compute_resource.resource_id.clone();
    let old_ports = services.ports_of_servers(std::slice::from_ref(&old)).await;
    heal_vnfc(&env, &vnf.id, &vdu1[0]).await;
    let inst = env.instance(&vnf.id).await;
    let healed = of_vdu(&inst, "VDU1");
    assert_replaced_in_place(&healed, &vdu1);
    let new = healed[0].compute_resource.resource_id.clone();
    assert_ne!(new, old);
    services.assert_servers_gone(&BTreeSet::from([old])).await;
    let healed_volumes = services
        .assert_servers_on_volumes(&inst, &healed, TEST_IMAGE)
        .await;
    assert_eq!(healed_volumes.len(), 1);
    // The volume is replaced with the server (made again from the image).
    assert!(healed_volumes.is_disjoint(&first_volumes));
    services.assert_volumes_gone(&first_volumes).await;
    assert_eq!(
        services.ports_of_servers(std::slice::from_ref(&new)).await,
        old_ports
    );

    // Terminate: no server, port or volume of the VNF is left.
    let inst = env.instance(&vnf.id).await;
    let all = vnfcs(&inst);
    let volumes: BTreeSet<String> = all
        .iter()
        .flat_map(|c| support::volumes_of(&inst, c))
        .collect();
    let ports = env.ports(&all).await;
    env.terminate_and_check_gone(&vnf.id, &servers(&all), &ports)
        .await;
    services.assert_volumes_gone(&volumes).await;
    env.lcm.shutdown(Duration::from_secs(5)).await;
}
