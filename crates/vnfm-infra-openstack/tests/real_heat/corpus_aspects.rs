//! Tacker's VM samples with one scaling aspect per VDU, from the corpus, unchanged:
//! `v1-vm-functional7-multi-aspect` (aspects `VDU1_scale` and `VDU2_scale`) and
//! `v1-vm-functional6-vdu2-scale` (`VDU2_scale` only). Their autoscaling groups have a constant
//! `desired_capacity` and Tacker v1 `OS::Heat::ScalingPolicy` resources; the driver reads the
//! count from `nfv` instead (`vnfm_infra_openstack::capacity`). Each VNFC has five ports: two
//! on the external networks, three on the stack's own networks. Their images are the test
//! cloud's `cirros-0.6` through `additionalParams.nfv` (v1 names: `image`).

use super::*;

/// The instantiate request of both samples: `VDU1_CP1`/`VDU2_CP1` on `net-ext-1`,
/// `VDU1_CP2`/`VDU2_CP2` on `net-ext-2` (`VDU2_CP2` at `address`), the test image, and the
/// availability zone the templates read from `nfv.vdu.VDU1.zone`.
fn request(cloud: &Cloud, address: &str) -> Value {
    let dynamic = |subnet: &str| {
        json!({"cpProtocolData": [{"layerProtocol": "IP_OVER_ETHERNET", "ipOverEthernet": {
            "ipAddresses": [{"type": "IPV4", "numDynamicAddresses": 1, "subnetId": subnet}]}}]})
    };
    let image = json!({"image": TEST_IMAGE});
    json!({
        "flavourId": "simple",
        "vimConnectionInfo": {"vim1": cloud.vim_connection()},
        "extVirtualLinks": [
            {"id": "ext-1", "resourceId": "net-ext-1", "extCps": [
                {"cpdId": "VDU1_CP1", "cpConfig": {"VDU1_CP1_1": dynamic("subnet-ext-1")}},
                {"cpdId": "VDU2_CP1", "cpConfig": {"VDU2_CP1_1": dynamic("subnet-ext-1")}}]},
            {"id": "ext-2", "resourceId": "net-ext-2", "extCps": [
                {"cpdId": "VDU1_CP2", "cpConfig": {"VDU1_CP2_1": dynamic("subnet-ext-2")}},
                {"cpdId": "VDU2_CP2", "cpConfig": {"VDU2_CP2_1": {"cpProtocolData": [
                    {"layerProtocol": "IP_OVER_ETHERNET", "ipOverEthernet": {"ipAddresses": [
                        {"type": "IPV4", "fixedAddresses": [address], "subnetId": "subnet-ext-2"}]}}]}}}]}
        ],
        "additionalParams": {"nfv": {
            "VDU": {"VDU1": image, "VDU2": image},
            "vdu": {"VDU1": {"zone": "nova"}}
        }}
    })
}

/// Asserts that Nova holds `vnfcs`' servers `ACTIVE` from the test image, each with its five
/// Neutron ports: the first on `net-ext-1`, the second on `net-ext-2`.
async fn assert_vnfcs_on_nova_and_neutron(env: &Env, vnfcs: &[VnfcResourceInfo]) {
    env.assert_servers_built(vnfcs).await;
    let services = env.services();
    for v in vnfcs {
        let server = &v.compute_resource.resource_id;
        assert_eq!(services.ports_of(server).await.len(), 5, "{v:?}");
        assert_eq!(v.vnfc_cp_info.as_ref().map(Vec::len), Some(5), "{v:?}");
        assert_eq!(
            services.addresses_on(server, "net-ext-1").await.len(),
            1,
            "{server}"
        );
        assert_eq!(
            services.addresses_on(server, "net-ext-2").await.len(),
            1,
            "{server}"
        );
    }
}

/// The servers of VDU `vdu` of `id` and the Neutron ports on them.
async fn servers_and_ports(
    env: &Env,
    id: &VnfInstanceId,
    vdu: &str,
) -> (Vec<VnfcResourceInfo>, BTreeSet<String>) {
    let v = of_vdu(&env.instance(id).await, vdu);
    let ports = env.ports(&v).await;
    (v, ports)
}

/// Scales aspect `aspect` (of VDU `vdu`) out by one step and in again, asserting what Nova
/// and Neutron hold after each: one server more with its five ports, then that server and
/// its ports gone, the others untouched.
async fn scale_out_and_in(env: &Env, id: &VnfInstanceId, aspect: &str, vdu: &str) {
    let (before, before_ports) = servers_and_ports(env, id, vdu).await;
    let others: Vec<VnfcResourceInfo> = vnfcs(&env.instance(id).await)
        .into_iter()
        .filter(|v| v.vdu_id != vdu)
        .collect();
    let done = env.scale_ok(id, "SCALE_OUT", aspect, 1).await;
    let (out, out_ports) = servers_and_ports(env, id, vdu).await;
    assert_eq!(out.len(), before.len() + 1, "{aspect}: {out:?}");
    assert!(ids(&before).is_subset(&ids(&out)));
    let added: Vec<VnfcResourceInfo> = out
        .iter()
        .filter(|v| !ids(&before).contains(&v.id))
        .cloned()
        .collect();
    assert_eq!(
        changes_of(&done, ChangeType::Added),
        vec![added[0].id.clone()]
    );
    assert_vnfcs_on_nova_and_neutron(env, &out).await;
    assert!(before_ports.is_subset(&out_ports));
    assert_eq!(out_ports.len(), before_ports.len() + 5);
    // The other VDU's servers are untouched.
    let inst = env.instance(id).await;
    let now: Vec<VnfcResourceInfo> = vnfcs(&inst)
        .into_iter()
        .filter(|v| v.vdu_id != vdu)
        .collect();
    assert_eq!(servers(&now), servers(&others));

    let done = env.scale_ok(id, "SCALE_IN", aspect, 1).await;
    assert_eq!(
        changes_of(&done, ChangeType::Removed),
        vec![added[0].id.clone()]
    );
    let (after, after_ports) = servers_and_ports(env, id, vdu).await;
    assert_eq!(ids(&after), ids(&before));
    assert_eq!(servers(&after), servers(&before));
    assert_eq!(after_ports, before_ports);
    let services = env.services();
    services.assert_servers_gone(&servers(&added)).await;
    services
        .assert_ports_gone(out_ports.difference(&before_ports))
        .await;
    assert_vnfcs_on_nova_and_neutron(env, &after).await;
}

/// Asserts that a scale-out of `aspect` is refused, the reason naming `why`, and that Nova
/// holds the same servers afterwards.
async fn scale_out_is_refused(env: &Env, id: &VnfInstanceId, aspect: &str, why: &str) {
    let before = servers(&vnfcs(&env.instance(id).await));
    let refused = env
        .lcm
        .scale(
            id,
            serde_json::from_value(json!({"type": "SCALE_OUT", "aspectId": aspect})).unwrap(),
        )
        .await;
    match refused {
        Err(e) => assert!(e.to_string().contains(why), "{e}"),
        Ok(op) => {
            let done = env.done(op).await;
            assert_ne!(
                done.operation_state,
                LcmOperationStateType::Completed,
                "{done:?}"
            );
            let detail = done.error.map(|e| e.detail).unwrap_or_default();
            assert!(detail.contains(why), "{detail}");
        }
    }
    let after = servers(&vnfcs(&env.instance(id).await));
    assert_eq!(after, before);
    env.services().assert_servers_status(&after, "ACTIVE").await;
}

/// `v1-vm-functional7-multi-aspect`: instantiate, `VDU1_scale` out and in by one step and by
/// two, `VDU2_scale` refused, terminate.
async fn functional7_multi_aspect(env: &Env, cloud: &Cloud) {
    let cloud = cloud.clone();
    let vnfd_id = env.corpus_vnfd("v1-vm-functional7-multi-aspect");
    let vnf = env.create(&vnfd_id).await;
    env.instantiate_ok(&vnf.id, request(&cloud, "10.10.9.82"))
        .await;
    let inst = env.instance(&vnf.id).await;
    assert_eq!(
        (of_vdu(&inst, "VDU1").len(), of_vdu(&inst, "VDU2").len()),
        (1, 1)
    );
    assert_vnfcs_on_nova_and_neutron(env, &vnfcs(&inst)).await;
    let vdu2 = of_vdu(&inst, "VDU2")[0]
        .compute_resource
        .resource_id
        .clone();
    assert_eq!(
        env.services().addresses_on(&vdu2, "net-ext-2").await,
        vec!["10.10.9.82"]
    );

    // VDU1_scale: one VDU1 server more, then back.
    scale_out_and_in(env, &vnf.id, "VDU1_scale", "VDU1").await;
    // Two steps at once: VDU1 at its maximum of 3.
    env.scale_ok(&vnf.id, "SCALE_OUT", "VDU1_scale", 2).await;
    let three = of_vdu(&env.instance(&vnf.id).await, "VDU1");
    assert_eq!(three.len(), 3);
    assert_vnfcs_on_nova_and_neutron(env, &three).await;
    let done = env.scale_ok(&vnf.id, "SCALE_IN", "VDU1_scale", 2).await;
    assert_eq!(changes_of(&done, ChangeType::Removed).len(), 2);
    assert_eq!(of_vdu(&env.instance(&vnf.id).await, "VDU1").len(), 1);
    // VDU2_scale: the VNFD allows VDU2 one instance only (its profile says 1 to 1, the aspect
    // says up to level 2): the scale-out is refused and Nova keeps what it has.
    scale_out_is_refused(env, &vnf.id, "VDU2_scale", "VDU2").await;

    let inst = env.instance(&vnf.id).await;
    let ports = env.ports(&vnfcs(&inst)).await;
    assert_eq!(ports.len(), 10);
    env.terminate_and_check_gone(&vnf.id, &servers(&vnfcs(&inst)), &ports)
        .await;
}

/// `v1-vm-functional6-vdu2-scale`: instantiate, its only aspect (`VDU2_scale`) refused,
/// terminate.
async fn functional6_vdu2_scale(env: &Env, cloud: &Cloud) {
    let cloud = cloud.clone();
    let vnfd_id = env.corpus_vnfd("v1-vm-functional6-vdu2-scale");
    let vnf = env.create(&vnfd_id).await;
    env.instantiate_ok(&vnf.id, request(&cloud, "10.10.9.83"))
        .await;
    let inst = env.instance(&vnf.id).await;
    assert_eq!(
        (of_vdu(&inst, "VDU1").len(), of_vdu(&inst, "VDU2").len()),
        (1, 1)
    );
    assert_vnfcs_on_nova_and_neutron(env, &vnfcs(&inst)).await;
    // Its only aspect scales VDU2, whose profile allows one instance: refused, nothing moves.
    scale_out_is_refused(env, &vnf.id, "VDU2_scale", "VDU2").await;
    // VDU1 has no aspect here.
    scale_out_is_refused(env, &vnf.id, "VDU1_scale", "VDU1_scale").await;

    let inst = env.instance(&vnf.id).await;
    let ports = env.ports(&vnfcs(&inst)).await;
    assert_eq!(ports.len(), 10);
    env.terminate_and_check_gone(&vnf.id, &servers(&vnfcs(&inst)), &ports)
        .await;
}

/// Both samples, one after the other. Their `POST /servers` (five ports per server) is the
/// slowest of the tests: on a loaded cloud it outlasted the 60 s HTTP timeout the test cloud's
/// routers had, and Heat's resend failed with `PortInUse` (docs/openstack.md).
#[vnfm_test_env::needs(openstack, corpus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tacker_functional6_and_7_scale_each_aspect_on_real_nova_and_neutron() {
    let cloud = Cloud::from_env();
    let env = env(cloud.clone()).await;
    functional7_multi_aspect(&env, &cloud).await;
    functional6_vdu2_scale(&env, &cloud).await;
    env.lcm.shutdown(Duration::from_secs(5)).await;
}
