//! More of Tacker's VM samples on the real Nova and Neutron: `v2-vm-individual-vnfc-min` (each
//! VDU a nested template of its own, no autoscaling group) healed one VNFC at a time, and
//! `v2-vm-change-vnfpkg-update-failed` (a package Heat refuses) as the target of a package
//! change that fails and is rolled back. Both from the corpus, unchanged;
//! their images are the test cloud's `cirros-0.6` through `additionalParams.nfv`.

use super::*;

/// `additionalParams.nfv` booting VDU1 and VDU2 from the test cloud's image.
fn test_image() -> Value {
    let image = json!({"vcImageId": TEST_IMAGE});
    json!({"VDU": {"VDU1": image, "VDU2": image}})
}

#[vnfm_test_env::needs(openstack, corpus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tacker_individual_vnfc_min_heals_each_vnfc_with_a_new_nova_server_on_its_port() {
    let cloud = Cloud::from_env();
    let env = env(cloud.clone()).await;
    let vnfd_id = env.corpus_vnfd("v2-vm-individual-vnfc-min");
    let vnf = env.create(&vnfd_id).await;
    env.instantiate_ok(
        &vnf.id,
        json!({
            "flavourId": "simple",
            "vimConnectionInfo": {"vim1": cloud.vim_connection()},
            "additionalParams": {"nfv": test_image()}
        }),
    )
    .await;
    let inst = env.instance(&vnf.id).await;
    let (vdu1, vdu2) = (of_vdu(&inst, "VDU1"), of_vdu(&inst, "VDU2"));
    assert_eq!((vdu1.len(), vdu2.len()), (1, 1));
    env.assert_servers_built(&vnfcs(&inst)).await;
    // Nova holds the servers under the template's names, each with one port on the stack's
    // internal network (192.168.5.0/24), both in the template's affinity group.
    let services = env.services();
    for (v, name) in [(&vdu1[0], "VDU1"), (&vdu2[0], "VDU2")] {
        let id = &v.compute_resource.resource_id;
        let server = services.server(id).await.unwrap();
        assert_eq!(server["name"], name, "{server}");
        let ports = services.ports_of(id).await;
        let ip = ports[0]["fixed_ips"][0]["ip_address"].as_str().unwrap();
        assert!(ip.starts_with("192.168.5."), "{ip}");
    }

    // Heal each VNFC in turn: Nova deletes its server and builds a new one on the same port
    // (Heat replaces the server it was told is unhealthy); the other VNFC keeps its server.
    for vdu in ["VDU1", "VDU2"] {
        let inst = env.instance(&vnf.id).await;
        let target = of_vdu(&inst, vdu)[0].clone();
        let others: Vec<String> = servers(&vnfcs(&inst))
            .into_iter()
            .filter(|s| *s != target.compute_resource.resource_id)
            .collect();
        let old = target.compute_resource.resource_id.clone();
        let old_ports = env.ports(std::slice::from_ref(&target)).await;
        let op = env
            .lcm
            .heal(
                &vnf.id,
                serde_json::from_value(
                    json!({"vnfcInstanceId": [support::vnfc_info_id(&inst, &target)]}),
                )
                .unwrap(),
            )
            .await
            .unwrap();
        let done = env.completed(op).await;
        // The new server is a new VNFC (Tacker's): the old one REMOVED, the new one ADDED.
        assert_eq!(
            changes_of(&done, ChangeType::Removed),
            vec![target.id.clone()]
        );
        let inst = env.instance(&vnf.id).await;
        let healed = of_vdu(&inst, vdu);
        assert_eq!(
            changes_of(&done, ChangeType::Added),
            vec![healed[0].id.clone()]
        );
        assert_replaced_in_place(&healed, std::slice::from_ref(&target));
        let new = healed[0].compute_resource.resource_id.clone();
        assert_ne!(new, old, "{vdu}'s server was not replaced");
        services.assert_servers_gone([&old]).await;
        env.assert_servers_built(&healed).await;
        assert_eq!(env.ports(&healed).await, old_ports);
        let kept: Vec<String> = servers(&vnfcs(&inst))
            .into_iter()
            .filter(|s| *s != new)
            .collect();
        assert_eq!(kept, others, "healing {vdu} touched another server");
    }

    let inst = env.instance(&vnf.id).await;
    let last_ports = env.ports(&vnfcs(&inst)).await;
    assert_eq!(last_ports.len(), 2);
    env.terminate_and_check_gone(&vnf.id, &servers(&vnfcs(&inst)), &last_ports)
        .await;
    assert!(env.stack(&vnf.id).await.is_none());
    env.lcm.shutdown(Duration::from_secs(5)).await;
}

#[vnfm_test_env::needs(openstack, corpus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tacker_change_vnfpkg_update_failed_is_rolled_back_to_the_servers_and_image_before() {
    let cloud = Cloud::from_env();
    let env = env(cloud.clone()).await;
    let from = env.corpus_vnfd("v2-vm-change-vnfpkg-new-image");
    // Tacker's change_vnfpkg samples share one VNFD id: the target gets an id of its own.
    let (vnfd, files) = corpus::corpus_package("v2-vm-change-vnfpkg-update-failed");
    let mut v = serde_json::to_value(&vnfd).unwrap();
    v["descriptorId"] = json!(format!("{from}-update-failed"));
    let to = env
        .catalog
        .insert(serde_json::from_value(v).unwrap(), files);
    let vnf = env.create(&from).await;
    env.instantiate_ok(
        &vnf.id,
        corpus::change_vnfpkg_request(&cloud, "10.10.0.72", test_image()),
    )
    .await;
    let inst = env.instance(&vnf.id).await;
    env.assert_servers_built(&vnfcs(&inst)).await;
    let servers_before = servers(&vnfcs(&inst));
    let ports_before = env.ports(&vnfcs(&inst)).await;
    let template_before = env.template(&vnf.id).await;

    // The new package is broken on purpose, as in Tacker's own test: its VDU2_CP1 takes its
    // fixed address from `VDU2_CP2`, which no request gives, and its VDUs boot from images
    // nobody uploaded. Heat refuses the update (HTTP 400); the servers are the ones from
    // before.
    let op = env.change_vnfpkg_to(&vnf.id, &to).await;
    let failed = env.done(op).await;
    assert_eq!(
        failed.operation_state,
        LcmOperationStateType::FailedTemp,
        "{:?}",
        failed.error
    );
    let detail = failed
        .error
        .as_ref()
        .map(|e| e.detail.clone())
        .unwrap_or_default();
    assert!(detail.contains("HTTP 400 from heat"), "{detail}");

    let op = env.lcm.rollback(&failed.id).await.unwrap();
    let rolled = env.done(op).await;
    assert_eq!(
        rolled.operation_state,
        LcmOperationStateType::RolledBack,
        "{:?}",
        rolled.error
    );
    // The package, the template, the servers (from the test image) and their ports are the
    // ones from before the change.
    let inst = env.instance(&vnf.id).await;
    assert_eq!(inst.vnfd_id.as_str(), from);
    assert_eq!(env.template(&vnf.id).await, template_before);
    assert_eq!(servers(&vnfcs(&inst)), servers_before);
    env.assert_servers_built(&vnfcs(&inst)).await;
    assert_eq!(env.ports(&vnfcs(&inst)).await, ports_before);
    assert!(
        env.services().images_named("VDU1-image").await.is_empty(),
        "nothing was uploaded for the failed package"
    );

    env.terminate_and_check_gone(&vnf.id, &servers_before, &ports_before)
        .await;
    env.lcm.shutdown(Duration::from_secs(5)).await;
}
