//! Tacker's `v2-vm-userdata-standard-non-boot-volume` sample (the corpus, unchanged) on the
//! real Nova, Neutron and Cinder, through the steps of Tacker's functional test
//! `test_instantiate_attach_non_boot_volume`: VDU1 boots from the image and holds a data volume
//! that its template attaches with an `OS::Cinder::VolumeAttachment`. A heal of the VNFC
//! replaces its server and moves that volume to the new one; a heal with
//! `additionalParams.all` makes the volume anew too; terminate leaves nothing.

use super::*;

/// Tacker's `sample7_instantiate`, on the test cloud's `net-ext-1`, with `StandardUserData`
/// named and the test image and zone given through `additionalParams.nfv`.
fn request(cloud: &Cloud) -> Value {
    json!({
        "flavourId": "simple",
        "instantiationLevelId": "instantiation_level_1",
        "vimConnectionInfo": {"vim1": cloud.vim_connection()},
        "extVirtualLinks": [{"id": "ext-1", "resourceId": "net-ext-1", "extCps": [
            {"cpdId": "VDU1_CP1", "cpConfig": {"VDU1_CP1_1": {"cpProtocolData": [
                {"layerProtocol": "IP_OVER_ETHERNET", "ipOverEthernet": {"ipAddresses": [
                    {"type": "IPV4", "numDynamicAddresses": 1}]}}]}}}]}],
        "additionalParams": {
            "lcm-operation-user-data": "./UserData/userdata_standard.py",
            "lcm-operation-user-data-class": "StandardUserData",
            "nfv": {"VDU": {"VDU1": {"vcImageId": TEST_IMAGE, "locationConstraints": "nova"}}}
        }
    })
}

/// Asserts that Nova holds `vnfc`'s server `ACTIVE`, booted from an image, and that Cinder
/// holds each of the VNFC's volumes `in-use`, attached to that server only; answers the
/// volume ids.
async fn assert_data_volumes(
    services: &support::Services,
    inst: &VnfInstance,
    vnfc: &VnfcResourceInfo,
) -> BTreeSet<String> {
    let id = &vnfc.compute_resource.resource_id;
    let server = services
        .server(id)
        .await
        .unwrap_or_else(|| panic!("Nova has no server {id}"));
    assert_eq!(server["status"], "ACTIVE", "{server}");
    assert_ne!(
        server["image"], "",
        "the server boots from its image: {server}"
    );
    let volumes: BTreeSet<String> = support::volumes_of(inst, vnfc).into_iter().collect();
    assert_eq!(volumes.len(), 1, "VNFC {}: {volumes:?}", vnfc.id);
    for v in &volumes {
        let volume = services
            .volume(v)
            .await
            .unwrap_or_else(|| panic!("Cinder has no volume {v}"));
        assert_eq!(volume["status"], "in-use", "{volume}");
        support::assert_attached_to(&volume, id);
    }
    volumes
}

/// Heals `vnfc` of `id` with `additional_params`; answers the completed occurrence.
async fn heal(
    env: &Env,
    id: &VnfInstanceId,
    vnfc: &VnfcResourceInfo,
    additional_params: Value,
) -> VnfLcmOpOcc {
    let inst = env.instance(id).await;
    let request = json!({
        "vnfcInstanceId": [support::vnfc_info_id(&inst, vnfc)],
        "additionalParams": additional_params,
    });
    let op = env
        .lcm
        .heal(id, serde_json::from_value(request).unwrap())
        .await
        .unwrap();
    env.completed(op).await
}

#[vnfm_test_env::needs(openstack, corpus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tacker_non_boot_volume_moves_to_the_healed_server_and_is_renewed_with_all() {
    let started = std::time::Instant::now();
    let cloud = Cloud::from_env();
    let env = env(cloud.clone()).await;
    let services = env.services();
    let vnfd_id = env.corpus_vnfd("v2-vm-userdata-standard-non-boot-volume");
    let vnf = env.create(&vnfd_id).await;
    env.instantiate_ok(&vnf.id, request(&cloud)).await;
    let inst = env.instance(&vnf.id).await;
    let first = of_vdu(&inst, "VDU1");
    assert_eq!(first.len(), 1, "{first:?}");
    let volumes = assert_data_volumes(&services, &inst, &first[0]).await;

    // Without `all`: a new server, the same volume, now attached to it.
    heal(&env, &vnf.id, &first[0], json!({})).await;
    let inst = env.instance(&vnf.id).await;
    let second = of_vdu(&inst, "VDU1");
    assert_ne!(servers(&second), servers(&first));
    services.assert_servers_gone(&servers(&first)).await;
    assert_eq!(
        assert_data_volumes(&services, &inst, &second[0]).await,
        volumes,
        "a heal without `all` replaced the data volume"
    );

    // With `all`: a new server and a new volume; the old volume is gone.
    heal(&env, &vnf.id, &second[0], json!({"all": true})).await;
    let inst = env.instance(&vnf.id).await;
    let third = of_vdu(&inst, "VDU1");
    assert_ne!(servers(&third), servers(&second));
    let renewed = assert_data_volumes(&services, &inst, &third[0]).await;
    assert!(renewed.is_disjoint(&volumes), "{renewed:?}");
    services.assert_volumes_gone(&volumes).await;

    let ports = env.ports(&third).await;
    env.terminate_and_check_gone(&vnf.id, &servers(&third), &ports)
        .await;
    services.assert_volumes_gone(&renewed).await;
    env.lcm.shutdown(Duration::from_secs(5)).await;
    eprintln!(
        "v2-vm-userdata-standard-non-boot-volume: {:.0?}",
        started.elapsed()
    );
}
