//! Tacker's `v2-vm-change-vnfpkg-new-volume` sample (the corpus, unchanged, its volumes' image
//! a file of this run) as the target of a change of package on the real Nova, Neutron, Cinder
//! and Glance, in its `volume` flavour, as Tacker's functional test
//! `test_change_vnfpkg_from_volume_to_volume` runs it. The instance is made from the `volume`
//! flavour of `v2-vm-change-vnfpkg-new-image` (Tacker's own "old" package is not in the
//! corpus): VDU1 boots from a Cinder volume made from an image, VDU2 from an image. The new
//! package gives VDU1's volume another image and adds a volume to VDU2: Heat makes both
//! volumes anew from the image the package carries (uploaded to Glance) and replaces both
//! servers, on the same Neutron ports; the old servers and VDU1's old volume are gone.

use super::*;

/// VDU2's fixed address on `net-ext-1`.
const VDU2_ADDRESS: &str = "10.10.0.73";

/// Asserts that Cinder holds the volume types of the new package's template, `VDU1-multi` and
/// `VDU2-multi` (renamed for these tests, see `corpus_package`), each once, multi-attach.
async fn assert_volume_types(services: &support::Services) {
    for name in support::FIXED_VOLUME_TYPES {
        let name = format!("{name}{}", support::VOLUME_TYPE_SUFFIX);
        let types = services.volume_types_named(&name).await;
        assert_eq!(types.len(), 1, "{name}: {types:?}");
        assert_eq!(
            types[0]["extra_specs"]["multiattach"], "<is> True",
            "{types:?}"
        );
    }
}

#[vnfm_test_env::needs(openstack, corpus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tacker_change_vnfpkg_new_volume_replaces_the_servers_on_volumes_of_the_new_image() {
    let _types = support::fixed_volume_type_names().await;
    let started = std::time::Instant::now();
    // The templates create volume types: as the administrator, as Tacker's tests run.
    let cloud = Cloud::from_env().as_admin();
    let env = env(cloud.clone()).await;
    // Both packages' top-level VNFDs import their `simple` flavour only: the reader finds the
    // `volume` one among the files of `Definitions/`, as Tacker does.
    let (vnfd, files) = corpus::corpus_package("v2-vm-change-vnfpkg-new-image");
    let from = env.catalog.insert(vnfd, files);
    // Tacker's change_vnfpkg samples share one VNFD id: the target gets an id of its own.
    let (vnfd, files) = corpus::corpus_package("v2-vm-change-vnfpkg-new-volume");
    let (to, image) = corpus::with_own_image(
        &env,
        vnfd,
        files,
        &format!("{from}-new-volume"),
        corpus::ImageHolders::Storages,
    );

    let vnf = env.create(&from).await;
    let mut request = corpus::change_vnfpkg_request(
        &cloud,
        VDU2_ADDRESS,
        json!({"VDU": {"VDU1-VirtualStorage": {"vcImageId": TEST_IMAGE},
                       "VDU2": {"vcImageId": TEST_IMAGE}}}),
    );
    request["flavourId"] = json!("volume");
    env.instantiate_ok(&vnf.id, request).await;
    let inst = env.instance(&vnf.id).await;
    let (vdu1, vdu2) = (of_vdu(&inst, "VDU1"), of_vdu(&inst, "VDU2"));
    assert_eq!((vdu1.len(), vdu2.len()), (1, 1));
    let services = env.services();
    // VDU1 on a volume of the test image, VDU2 booted from that image, without a volume.
    let old_volumes = services
        .assert_servers_on_volumes(&inst, &vdu1, TEST_IMAGE)
        .await;
    assert_eq!(old_volumes.len(), 1);
    env.assert_servers_built(&vdu2).await;
    assert!(support::volumes_of(&inst, &vdu2[0]).is_empty(), "{vdu2:?}");
    let old_servers: BTreeSet<String> = servers(&vnfcs(&inst)).into_iter().collect();
    let ports = env.ports(&vnfcs(&inst)).await;
    assert_eq!(ports.len(), 2, "{ports:?}");
    assert_eq!(
        services
            .addresses_on(&vdu2[0].compute_resource.resource_id, "net-ext-1")
            .await,
        vec![VDU2_ADDRESS]
    );

    // The change of package: Glance gets the package's image once, and both VNFCs are new
    // servers on new volumes made from it.
    let op = env.change_vnfpkg_to(&vnf.id, &to).await;
    env.completed(op).await;
    let inst = env.instance(&vnf.id).await;
    assert_eq!(inst.vnfd_id.as_str(), to);
    let images = services.images_named(&image).await;
    assert_eq!(images.len(), 1, "{images:?}");
    let (vdu1, vdu2) = (of_vdu(&inst, "VDU1"), of_vdu(&inst, "VDU2"));
    assert_eq!((vdu1.len(), vdu2.len()), (1, 1));
    let all = vnfcs(&inst);
    let new_volumes = services
        .assert_servers_on_volumes(&inst, &all, &image)
        .await;
    assert_eq!(new_volumes.len(), 2, "{new_volumes:?}");
    assert!(new_volumes.is_disjoint(&old_volumes), "{new_volumes:?}");
    let new_servers: BTreeSet<String> = servers(&all).into_iter().collect();
    assert!(new_servers.is_disjoint(&old_servers), "{new_servers:?}");
    services.assert_servers_gone(&old_servers).await;
    services.assert_volumes_gone(&old_volumes).await;
    assert_volume_types(&services).await;
    // The same Neutron ports, VDU2 still at its address.
    assert_eq!(env.ports(&all).await, ports);
    assert_eq!(
        services
            .addresses_on(&vdu2[0].compute_resource.resource_id, "net-ext-1")
            .await,
        vec![VDU2_ADDRESS]
    );

    // Terminate: servers, ports, volumes, volume types and the uploaded image are gone.
    env.terminate_and_check_gone(&vnf.id, &servers(&all), &ports)
        .await;
    services.assert_volumes_gone(&new_volumes).await;
    for name in support::FIXED_VOLUME_TYPES {
        let name = format!("{name}{}", support::VOLUME_TYPE_SUFFIX);
        assert!(
            services.volume_types_named(&name).await.is_empty(),
            "{name}"
        );
    }
    assert!(services.images_named(&image).await.is_empty(), "{image}");
    env.lcm.shutdown(Duration::from_secs(5)).await;
    eprintln!("v2-vm-change-vnfpkg-new-volume: {:.0?}", started.elapsed());
}
