//! Failures and rollbacks on the real Heat: a failing resource, a scale-out whose new VNFCs
//! fail, and the rollbacks of external connectivity and package changes.

use super::*;

#[vnfm_test_env::needs(openstack)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_resource_ends_in_failed_temp_naming_it_and_rollback_deletes_the_stack() {
    let cloud = Cloud::from_env();
    let env = env(cloud.clone()).await;
    let vnf = env.create("vnfd-heat-fail").await;
    let op = env.instantiate_at(&vnf.id, &cloud, "10.10.0.52").await;
    let failed = env.done(op).await;
    assert_eq!(failed.operation_state, LcmOperationStateType::FailedTemp);
    let detail = failed
        .error
        .as_ref()
        .map(|e| e.detail.clone())
        .unwrap_or_default();
    assert!(
        detail.contains("CREATE_FAILED")
            && detail.contains("`VNF_config`")
            && detail.contains("Test Resource failed VNF_config"),
        "{detail}"
    );
    assert!(!detail.contains(&cloud.password), "{detail}");
    // The failed stack is kept for inspection until the rollback.
    let (status, _) = env.stack(&vnf.id).await.expect("the failed stack is kept");
    assert_eq!(status, "CREATE_FAILED");

    let op = env.lcm.rollback(&failed.id).await.unwrap();
    let rolled = env.done(op).await;
    assert_eq!(
        rolled.operation_state,
        LcmOperationStateType::RolledBack,
        "{:?}",
        rolled.error
    );
    assert!(env.stack(&vnf.id).await.is_none());
    let inst = env.instance(&vnf.id).await;
    assert_eq!(
        inst.instantiation_state,
        InstantiationState::NotInstantiated
    );
    env.lcm.shutdown(Duration::from_secs(5)).await;
}

fn detail(occ: &VnfLcmOpOcc) -> String {
    occ.error
        .as_ref()
        .map(|e| e.detail.clone())
        .unwrap_or_default()
}

#[vnfm_test_env::needs(openstack)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scale_out_whose_new_vnfcs_fail_rolls_back_to_the_original_vnfcs_on_real_heat() {
    let cloud = Cloud::from_env();
    let env = env(cloud.clone()).await;
    let vnf = env.create("vnfd-heat-ready").await;
    // Nested stack ids of the VDU1 members whose readiness was reported.
    let mut answered = BTreeSet::new();

    // Instantiate: both VDU1 VNFCs report ready.
    let op = env.instantiate_at(&vnf.id, &cloud, "10.10.0.53").await;
    let done = env
        .done_answering(op, "SUCCESS", "VNFC is up", &mut answered)
        .await;
    assert_eq!(
        done.operation_state,
        LcmOperationStateType::Completed,
        "{:?}",
        done.error
    );
    assert_eq!(answered.len(), 2);
    let original = of_vdu(&env.instance(&vnf.id).await, "VDU1");
    assert_eq!(original.len(), 2);
    let members = env.group_members(&vnf.id, "VDU1_scale_group").await;
    assert_eq!(members.len(), 2, "{members:?}");

    // Scale out by two steps: both new VNFCs report failure.
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
    let failed = env
        .done_answering(
            op,
            "FAILURE",
            "health check of the new VNFC failed",
            &mut answered,
        )
        .await;
    assert_eq!(failed.operation_state, LcmOperationStateType::FailedTemp);
    // Two original handles and the new VNFCs' whose handles appeared before Heat failed the
    // update on the first FAILURE signal: one or both of the new ones, depending on timing.
    assert!(
        (3..=4).contains(&answered.len()),
        "the new VNFCs were created: {answered:?}"
    );
    let detail = detail(&failed);
    assert!(
        detail.contains("is UPDATE_FAILED")
            && detail.contains("resource `ready` (CREATE_FAILED)")
            && detail.contains("health check of the new VNFC failed"),
        "{detail}"
    );
    let (status, nfv) = env.stack(&vnf.id).await.unwrap();
    assert_eq!(status, "UPDATE_FAILED");
    assert_eq!(nfv["VDU"]["VDU1"]["desired_capacity"], 4);
    let grown = env.group_members(&vnf.id, "VDU1_scale_group").await;
    assert_eq!(grown.len(), 4, "{grown:?}");
    assert!(
        members.keys().all(|m| grown.contains_key(m)),
        "{members:?} {grown:?}"
    );

    // Rollback: the failed members go, the original ones stay untouched.
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
    assert_eq!(nfv["VDU"]["VDU1"]["desired_capacity"], 2);
    // The same two members (same nested stacks), healthy.
    let kept = env.group_members(&vnf.id, "VDU1_scale_group").await;
    assert!(kept.keys().eq(members.keys()), "{members:?} {kept:?}");
    assert!(kept.values().all(|s| s.ends_with("_COMPLETE")), "{kept:?}");
    let after = of_vdu(&env.instance(&vnf.id).await, "VDU1");
    assert_eq!(ids(&after), ids(&original));
    for v in &after {
        let o = original.iter().find(|o| o.id == v.id).unwrap();
        assert_eq!(
            v.compute_resource.resource_id,
            o.compute_resource.resource_id
        );
    }

    env.terminate_forcefully(&vnf.id).await;
    assert!(env.stack(&vnf.id).await.is_none());
    env.lcm.shutdown(Duration::from_secs(5)).await;
}

#[vnfm_test_env::needs(openstack)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollbacks_of_ext_conn_and_package_changes_restore_parameters_and_templates_on_real_heat() {
    let cloud = Cloud::from_env();
    let env = env(cloud.clone()).await;
    let vnf = env.create("vnfd-heat-netcheck").await;
    let op = env.instantiate_at(&vnf.id, &cloud, "10.10.0.54").await;
    env.completed(op).await;
    let (_, nfv_before) = env.stack(&vnf.id).await.unwrap();
    assert_eq!(nfv_before["CP"]["VDU2_CP1"]["network"], "net-ext-1");
    let template_before = env.template(&vnf.id).await;
    let vnfcs_before = ids(&vnfcs(&env.instance(&vnf.id).await));

    // Move VDU2_CP1 to a network the cloud does not have: Heat refuses the update (it checks
    // the network with Neutron) and the stack keeps its parameters.
    let op = env
        .lcm
        .change_ext_conn(
            &vnf.id,
            serde_json::from_value(json!({"extVirtualLinks": [
                {"id": "ext-9", "resourceId": "net-unreachable", "extCps": [
                    {"cpdId": "VDU2_CP1", "cpConfig": {"VDU2_CP1_1": {"cpProtocolData": [
                        {"layerProtocol": "IP_OVER_ETHERNET", "ipOverEthernet": {"ipAddresses": [
                            {"type": "IPV4", "fixedAddresses": ["10.10.9.9"]}]}}]}}}]}
            ]}))
            .unwrap(),
        )
        .await
        .unwrap();
    let failed = env.done(op).await;
    assert_eq!(failed.operation_state, LcmOperationStateType::FailedTemp);
    let d = detail(&failed);
    assert!(
        d.contains("HTTP 400 from heat")
            && d.contains("Unable to find network with name or id 'net-unreachable'"),
        "{d}"
    );
    let (status, nfv) = env.stack(&vnf.id).await.unwrap();
    assert_eq!(status, "CREATE_COMPLETE");
    assert_eq!(nfv["CP"], nfv_before["CP"]);

    let op = env.lcm.rollback(&failed.id).await.unwrap();
    let rolled = env.done(op).await;
    assert_eq!(
        rolled.operation_state,
        LcmOperationStateType::RolledBack,
        "{:?}",
        rolled.error
    );
    let (status, nfv) = env.stack(&vnf.id).await.unwrap();
    assert!(status.ends_with("_COMPLETE"), "{status}");
    assert_eq!(nfv["CP"], nfv_before["CP"]);
    assert_eq!(nfv["CP"]["VDU2_CP1"]["network"], "net-ext-1");
    assert_eq!(
        nfv["CP"]["VDU2_CP1"]["fixed_ips"][0]["ip_address"],
        "10.10.0.54"
    );
    let inst = env.instance(&vnf.id).await;
    let links = inst
        .instantiated_vnf_info
        .as_ref()
        .and_then(|i| i.ext_virtual_link_info.clone())
        .unwrap();
    assert_eq!(
        links
            .iter()
            .map(|l| l.resource_handle.resource_id.as_str())
            .collect::<Vec<_>>(),
        vec!["net-ext-1"]
    );

    // A package change whose template fails, then its rollback: the previous template (with
    // its network check, which the new package does not have) is back.
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
    let d = detail(&failed);
    assert!(d.contains("resource `VNF_config`"), "{d}");
    let during = env.template(&vnf.id).await;
    assert!(during["resources"].get("VNF_config").is_some(), "{during}");
    assert!(
        during["resources"].get("VDU2_CP1_check").is_none(),
        "{during}"
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
    assert_eq!(nfv["CP"], nfv_before["CP"]);
    assert_eq!(env.template(&vnf.id).await, template_before);
    let top: BTreeSet<(String, String)> = env
        .resources(&vnf.id, 0)
        .await
        .into_iter()
        .map(|r| (r.resource_name, r.resource_status))
        .collect();
    assert!(
        top.iter()
            .any(|(n, s)| n == "VDU2_CP1_check" && s.ends_with("_COMPLETE")),
        "{top:?}"
    );
    assert!(!top.iter().any(|(n, _)| n == "VNF_config"), "{top:?}");
    let inst = env.instance(&vnf.id).await;
    assert_eq!(inst.vnfd_id.as_str(), "vnfd-heat-netcheck");
    assert_eq!(ids(&vnfcs(&inst)), vnfcs_before);

    env.terminate_forcefully(&vnf.id).await;
    env.lcm.shutdown(Duration::from_secs(5)).await;
}
