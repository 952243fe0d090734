//! One VNF through the operations in turn, on real Heat: instantiate, scale out and in, heal,
//! change of external connectivity, a failing change of package rolled back, operate,
//! terminate.

use super::*;

#[vnfm_test_env::needs(openstack)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lifecycle_instantiate_scale_heal_change_ext_conn_change_vnfpkg_terminate_on_real_heat() {
    let cloud = Cloud::from_env();
    let env = env(cloud.clone()).await;
    let vnf = env.create("vnfd-heat-test").await;

    // Instantiate: 2 x VDU1, 1 x VDU2.
    let op = env.instantiate_at(&vnf.id, &cloud, "10.10.0.50").await;
    let done = env.completed(op).await;
    let inst = env.instance(&vnf.id).await;
    assert_eq!(inst.instantiation_state, InstantiationState::Instantiated);
    let vdu1 = of_vdu(&inst, "VDU1");
    let vdu2 = of_vdu(&inst, "VDU2");
    assert_eq!((vdu1.len(), vdu2.len()), (2, 1));
    assert_eq!(changes_of(&done, ChangeType::Added).len(), 3);
    for v in &vdu1 {
        assert_eq!(
            v.compute_resource.vim_level_resource_type.as_deref(),
            Some("OS::Nova::Server")
        );
        assert_eq!(
            v.compute_resource.vim_connection_id.as_deref(),
            Some("vim1")
        );
        // Addresses by VDU, as a management driver needs them.
        let addrs = cp_addresses(v, "VDU1_CP1");
        assert_eq!(addrs.len(), 1, "{v:?}");
        // The address Neutron allocated on subnet-ext-1, as the server's port holds it.
        assert!(addrs[0].starts_with("10.10.0."), "{addrs:?}");
        assert_eq!(
            env.services()
                .addresses_on(&v.compute_resource.resource_id, "net-ext-1")
                .await,
            addrs
        );
        let cps = v.vnfc_cp_info.as_ref().unwrap();
        let ext = cps.iter().find(|c| c.cpd_id == "VDU1_CP1").unwrap();
        let int = cps.iter().find(|c| c.cpd_id == "VDU1_CP2").unwrap();
        assert!(ext.vnf_ext_cp_id.is_some() && int.vnf_link_port_id.is_some());
        assert_eq!(v.storage_resource_ids.as_ref().map(Vec::len), Some(1));
    }
    let info = inst.instantiated_vnf_info.as_ref().unwrap();
    let vls = info.vnf_virtual_link_resource_info.as_ref().unwrap();
    assert_eq!(vls.len(), 1);
    assert_eq!(vls[0].vnf_virtual_link_desc_id, "internalVL1");
    assert_eq!(vls[0].vnf_link_ports.as_ref().map(Vec::len), Some(2));
    let ext = info.ext_virtual_link_info.as_ref().unwrap();
    assert_eq!(ext[0].resource_handle.resource_id, "net-ext-1");
    assert_eq!(ext[0].ext_link_ports.as_ref().map(Vec::len), Some(3));
    assert_eq!(info.ext_cp_info.len(), 3);
    assert_eq!(
        info.virtual_storage_resource_info.as_ref().map(Vec::len),
        Some(2)
    );
    // What Heat got: the nfv parameter from the VNFD and the request.
    let (status, nfv) = env.stack(&vnf.id).await.expect("the stack exists");
    assert_eq!(status, "CREATE_COMPLETE");
    assert_eq!(nfv["VDU"]["VDU1"]["desired_capacity"], 2);
    assert_eq!(nfv["VDU"]["VDU1"]["computeFlavourId"], "m1.tiny");
    assert_eq!(nfv["VDU"]["VDU2"]["computeFlavourId"], "m1.small");
    assert_eq!(
        nfv["CP"]["VDU1_CP1"]["fixed_ips"][0]["subnet"],
        "subnet-ext-1"
    );
    assert_eq!(nfv["CP"]["VDU2_CP1"]["network"], "net-ext-1");
    assert_eq!(
        nfv["CP"]["VDU2_CP1"]["fixed_ips"][0]["ip_address"],
        "10.10.0.50"
    );
    env.assert_servers_built(&vnfcs(&inst)).await;
    assert_eq!(
        env.services()
            .addresses_on(&vdu2[0].compute_resource.resource_id, "net-ext-1")
            .await,
        vec!["10.10.0.50"]
    );

    // Scale out by two steps: 2 -> 4 VNFCs of VDU1, the first two kept.
    let op = env
        .lcm
        .scale(
            &vnf.id,
            serde_json::from_value(
                json!({"type": "SCALE_OUT", "aspectId": "VDU1_scale", "numberOfSteps": 2}),
            )
            .unwrap(),
        )
        .await
        .unwrap();
    let done = env.completed(op).await;
    let inst = env.instance(&vnf.id).await;
    let out = of_vdu(&inst, "VDU1");
    assert_eq!(out.len(), 4);
    assert!(ids(&vdu1).is_subset(&ids(&out)));
    let added: BTreeSet<String> = changes_of(&done, ChangeType::Added).into_iter().collect();
    assert_eq!(added, &ids(&out) - &ids(&vdu1));
    assert_eq!(
        env.stack(&vnf.id).await.unwrap().1["VDU"]["VDU1"]["desired_capacity"],
        4
    );
    env.assert_servers_built(&out).await;

    // Scale in by one step: one of the VNFCs the scale-out added goes (the newest first).
    let op = env
        .lcm
        .scale(
            &vnf.id,
            serde_json::from_value(json!({"type": "SCALE_IN", "aspectId": "VDU1_scale"})).unwrap(),
        )
        .await
        .unwrap();
    let done = env.completed(op).await;
    let inst = env.instance(&vnf.id).await;
    let after_in = of_vdu(&inst, "VDU1");
    assert_eq!(after_in.len(), 3);
    let removed = changes_of(&done, ChangeType::Removed);
    assert_eq!(removed.len(), 1);
    assert!(
        added.contains(&removed[0]),
        "removed {removed:?}, added {added:?}"
    );
    assert!(ids(&vdu1).is_subset(&ids(&after_in)));
    let gone = out
        .iter()
        .find(|v| v.id == removed[0])
        .map(|v| v.compute_resource.resource_id.clone())
        .unwrap();
    env.services().assert_servers_gone([&gone]).await;
    env.assert_servers_built(&after_in).await;

    // Heal one of the original VNFCs: Heat replaces its server in the same place, so it is a
    // new VNFC (the old one REMOVED, the new one ADDED, as Tacker reports it); the others
    // untouched.
    let target = &vdu1[0];
    let info_id = support::vnfc_info_id(&inst, target);
    let before_heal = vnfcs(&inst);
    let op = env
        .lcm
        .heal(
            &vnf.id,
            serde_json::from_value(json!({"vnfcInstanceId": [info_id], "cause": "test"})).unwrap(),
        )
        .await
        .unwrap();
    let done = env.completed(op).await;
    assert_eq!(
        changes_of(&done, ChangeType::Removed),
        vec![target.id.clone()]
    );
    let added = changes_of(&done, ChangeType::Added);
    assert_eq!(added.len(), 1, "{:?}", done.resource_changes);
    assert!(changes_of(&done, ChangeType::Modified).is_empty());
    let inst = env.instance(&vnf.id).await;
    let after_heal = vnfcs(&inst);
    let mut expected = ids(&before_heal);
    expected.remove(&target.id);
    expected.insert(added[0].clone());
    assert_eq!(ids(&after_heal), expected);
    for v in &after_heal {
        if v.id == added[0] {
            assert_eq!(place(v), place(target));
            assert_ne!(
                v.compute_resource.resource_id,
                target.compute_resource.resource_id
            );
            // Nova replaced the server.
            env.services()
                .assert_servers_gone([&target.compute_resource.resource_id])
                .await;
        } else {
            let old = before_heal.iter().find(|o| o.id == v.id).unwrap();
            assert_eq!(
                v.compute_resource.resource_id,
                old.compute_resource.resource_id
            );
        }
    }

    // Change external connectivity: VDU2_CP1 moves to another network and address.
    let op = env
        .lcm
        .change_ext_conn(
            &vnf.id,
            serde_json::from_value(json!({"extVirtualLinks": [
                {"id": "ext-2", "resourceId": "net-ext-2", "extCps": [
                    {"cpdId": "VDU2_CP1", "cpConfig": {"VDU2_CP1_1": {"cpProtocolData": [
                        {"layerProtocol": "IP_OVER_ETHERNET", "ipOverEthernet": {"ipAddresses": [
                            {"type": "IPV4", "fixedAddresses": ["10.10.9.9"]}]}}]}}}]}
            ]}))
            .unwrap(),
        )
        .await
        .unwrap();
    env.completed(op).await;
    let (_, nfv) = env.stack(&vnf.id).await.unwrap();
    assert_eq!(nfv["CP"]["VDU2_CP1"]["network"], "net-ext-2");
    assert_eq!(
        nfv["CP"]["VDU2_CP1"]["fixed_ips"][0]["ip_address"],
        "10.10.9.9"
    );
    assert_eq!(nfv["CP"]["VDU1_CP1"]["network"], "net-ext-1");
    assert_eq!(nfv["VDU"]["VDU1"]["desired_capacity"], 3);
    let inst = env.instance(&vnf.id).await;
    // Neutron moved VDU2's port: the server's address is on net-ext-2 now.
    let vdu2_server = of_vdu(&inst, "VDU2")[0]
        .compute_resource
        .resource_id
        .clone();
    let services = env.services();
    assert_eq!(
        services.addresses_on(&vdu2_server, "net-ext-2").await,
        vec!["10.10.9.9"]
    );
    assert!(
        services
            .addresses_on(&vdu2_server, "net-ext-1")
            .await
            .is_empty()
    );
    env.assert_servers_built(&vnfcs(&inst)).await;
    let links = inst
        .instantiated_vnf_info
        .as_ref()
        .and_then(|i| i.ext_virtual_link_info.clone())
        .unwrap();
    let by_id = |id: &str| links.iter().find(|l| l.id == id).cloned().unwrap();
    assert_eq!(by_id("ext-2").resource_handle.resource_id, "net-ext-2");
    assert_eq!(
        by_id("ext-1")
            .current_vnf_ext_cp_data
            .iter()
            .map(|c| c.cpd_id.as_str())
            .collect::<Vec<_>>(),
        vec!["VDU1_CP1"]
    );
    // Each link lists the ports on it now, each once with its external CP: VDU2's port on
    // ext-2 only, the three VDU1 ports on ext-1.
    let ports = |id: &str| -> Vec<(String, Option<String>)> {
        by_id(id)
            .ext_link_ports
            .iter()
            .flatten()
            .map(|p| (p.id.clone(), p.cp_instance_id.clone()))
            .collect()
    };
    let vdu2_cp = |id: &str| {
        ports(id)
            .iter()
            .filter(|(_, cp)| {
                inst.instantiated_vnf_info
                    .as_ref()
                    .unwrap()
                    .ext_cp_info
                    .iter()
                    .any(|c| Some(&c.id) == cp.as_ref() && c.cpd_id == "VDU2_CP1")
            })
            .count()
    };
    assert_eq!((ports("ext-1").len(), ports("ext-2").len()), (3, 1));
    assert_eq!((vdu2_cp("ext-1"), vdu2_cp("ext-2")), (0, 1));
    for (port, cp) in ports("ext-1").into_iter().chain(ports("ext-2")) {
        assert!(cp.is_some(), "port {port} without its external CP");
    }

    // A package change whose templates fail: FAILED_TEMP naming the failing resource (the
    // stack keeps the failed template), then the LCM rollback restores the previous one.
    let before_change = vnfcs(&env.instance(&vnf.id).await);
    let op = env
        .lcm
        .change_vnfpkg(
            &vnf.id,
            serde_json::from_value(json!({"vnfdId": "vnfd-heat-fail"})).unwrap(),
        )
        .await
        .unwrap();
    let failed = env.done(op).await;
    assert_eq!(failed.operation_state, LcmOperationStateType::FailedTemp);
    let detail = failed
        .error
        .as_ref()
        .map(|e| e.detail.clone())
        .unwrap_or_default();
    assert!(
        detail.contains("`VNF_config`") && detail.contains("Test Resource failed VNF_config"),
        "{detail}"
    );
    let op = env.lcm.rollback(&failed.id).await.unwrap();
    let rolled = env.done(op).await;
    assert_eq!(
        rolled.operation_state,
        LcmOperationStateType::RolledBack,
        "{:?}",
        rolled.error
    );
    let (status, nfv) = env.stack(&vnf.id).await.unwrap();
    assert_eq!(status, "UPDATE_COMPLETE");
    assert_eq!(nfv["CP"]["VDU2_CP1"]["network"], "net-ext-2");
    let template = env.template(&vnf.id).await;
    assert!(
        template["resources"].get("VNF_config").is_none(),
        "{template}"
    );
    let inst = env.instance(&vnf.id).await;
    assert_eq!(inst.vnfd_id.as_str(), "vnfd-heat-test");
    assert_eq!(ids(&vnfcs(&inst)), ids(&before_change));

    // Operate: Nova stops every server, then starts them again.
    for (request, status) in [
        (
            json!({"changeStateTo": "STOPPED", "stopType": "FORCEFUL"}),
            "SHUTOFF",
        ),
        (json!({"changeStateTo": "STARTED"}), "ACTIVE"),
    ] {
        let op = env
            .lcm
            .operate(&vnf.id, serde_json::from_value(request).unwrap())
            .await
            .unwrap();
        env.completed(op).await;
        let inst = env.instance(&vnf.id).await;
        env.services()
            .assert_servers_status(&servers(&vnfcs(&inst)), status)
            .await;
    }

    // Terminate: the stack is deleted, and with it every server.
    let servers = servers(&vnfcs(&inst));
    let done = env.terminate_forcefully(&vnf.id).await;
    assert_eq!(changes_of(&done, ChangeType::Removed).len(), 4);
    assert!(env.stack(&vnf.id).await.is_none());
    env.services().assert_servers_gone(&servers).await;
    let inst = env.instance(&vnf.id).await;
    assert_eq!(
        inst.instantiation_state,
        InstantiationState::NotInstantiated
    );
    env.lcm.shutdown(Duration::from_secs(5)).await;
}
