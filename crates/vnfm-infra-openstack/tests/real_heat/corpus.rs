//! Tacker's VM sample package `v2-vm-basic-lcms-min` (the corpus, unchanged: its BaseHOT with
//! an autoscaling group of nested templates, a plain server, an internal network and an
//! affinity server group; its LCM hooks recorded, their script is not in the corpus) through
//! the whole lifecycle on the real Nova and Neutron, checking
//! what they hold after each step. The image the package names is not in the test cloud: the
//! request sets `vcImageId` through `additionalParams.nfv`, as a Tacker user data class would.

use super::*;

/// The corpus package `name`: its VNFD and files.
pub(super) fn corpus_package(name: &str) -> (vnfm_descriptor::Vnfd, Arc<dyn ArtifactSource>) {
    let root = crate::corpus_nfv::tacker(name);
    let vnfd = crate::corpus_nfv::load_vnfd(&root);
    let files = Arc::new(crate::corpus_nfv::Dir(root));
    (vnfd, Arc::new(OwnVolumeTypeNames(files)))
}

/// A corpus package whose templates name the Cinder volume types they create with
/// [`support::VOLUME_TYPE_SUFFIX`] appended (`VDU1-multi` becomes `VDU1-multi-vnfm-test`):
/// volume type names are unique in the whole cloud, and Tacker's own functional tests, which
/// the test command runs on the same cloud at the same time, create these types under
/// Tacker's names.
struct OwnVolumeTypeNames(Arc<dyn ArtifactSource>);

impl ArtifactSource for OwnVolumeTypeNames {
    fn read(&self, path: &str) -> std::io::Result<Vec<u8>> {
        let bytes = self.0.read(path)?;
        if !path.starts_with("BaseHOT/") {
            return Ok(bytes);
        }
        let Ok(text) = String::from_utf8(bytes.clone()) else {
            return Ok(bytes);
        };
        let mut out = text;
        for name in support::FIXED_VOLUME_TYPES {
            out = out.replace(
                &format!("name: {name}\n"),
                &format!("name: {name}{}\n", support::VOLUME_TYPE_SUFFIX),
            );
        }
        Ok(out.into_bytes())
    }

    fn paths(&self) -> Option<Vec<String>> {
        self.0.paths()
    }
}

#[vnfm_test_env::needs(openstack, corpus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tacker_basic_lcms_min_through_its_lifecycle_on_real_nova_and_neutron() {
    let cloud = Cloud::from_env();
    let env = env(cloud.clone()).await;
    let vnfd_id = env.corpus_vnfd("v2-vm-basic-lcms-min");
    let vnf = env.create(&vnfd_id).await;
    let image = json!({"vcImageId": "cirros-0.6"});
    env.instantiate_ok(
        &vnf.id,
        json!({
            "flavourId": "simple",
            "vimConnectionInfo": {"vim1": cloud.vim_connection()},
            "additionalParams": {"nfv": {"VDU": {"VDU1": image, "VDU2": image}}}
        }),
    )
    .await;
    // The package's hooks ran (its script is not in the corpus: recorded).
    let hooks = env.hooks.operations();
    assert!(
        hooks.contains(&"instantiate_start".to_string())
            && hooks.contains(&"instantiate_end".to_string()),
        "{hooks:?}"
    );
    let inst = env.instance(&vnf.id).await;
    let (vdu1, vdu2) = (of_vdu(&inst, "VDU1"), of_vdu(&inst, "VDU2"));
    assert_eq!((vdu1.len(), vdu2.len()), (1, 1));
    // Every server built from the image, with one port on the stack's internal network.
    env.assert_servers_built(&vnfcs(&inst)).await;
    let services = env.services();
    for v in vnfcs(&inst) {
        let ports = services.ports_of(&v.compute_resource.resource_id).await;
        assert_eq!(ports.len(), 1, "{ports:?}");
        let ip = ports[0]["fixed_ips"][0]["ip_address"].as_str().unwrap();
        assert!(ip.starts_with("192.168.5."), "{ip}");
        assert_eq!(cp_addresses(&v, &format!("{}_CP1", v.vdu_id)), vec![ip]);
    }
    let all_ports = env.ports(&vnfcs(&inst)).await;

    // Scale out VDU1 by one step, then in again: Nova builds a second VDU1 server, then
    // deletes it with its port.
    env.scale_ok(&vnf.id, "SCALE_OUT", "VDU1_scale", 1).await;
    let out = of_vdu(&env.instance(&vnf.id).await, "VDU1");
    assert_eq!(out.len(), 2);
    env.assert_servers_built(&out).await;
    let added: Vec<String> = servers(&out)
        .into_iter()
        .filter(|s| *s != vdu1[0].compute_resource.resource_id)
        .collect();
    let added_ports = services.ports_of_servers(&added).await;
    assert_eq!(added_ports.len(), 1);
    env.scale_ok(&vnf.id, "SCALE_IN", "VDU1_scale", 1).await;
    let inst = env.instance(&vnf.id).await;
    assert_eq!(ids(&of_vdu(&inst, "VDU1")), ids(&vdu1));
    env.services().assert_servers_gone(&added).await;
    services.assert_ports_gone(&added_ports).await;

    // Heal VDU2's VNFC: a new server on the same port.
    let old = vdu2[0].compute_resource.resource_id.clone();
    let old_ports = services.ports_of_servers(std::slice::from_ref(&old)).await;
    env.heal_vnfcs_ok(&vnf.id, &vdu2).await;
    let inst = env.instance(&vnf.id).await;
    let healed = of_vdu(&inst, "VDU2");
    assert_replaced_in_place(&healed, &vdu2);
    let new = healed[0].compute_resource.resource_id.clone();
    assert_ne!(new, old);
    env.services()
        .assert_servers_gone(&BTreeSet::from([old]))
        .await;
    env.assert_servers_built(&healed).await;
    assert_eq!(
        services.ports_of_servers(std::slice::from_ref(&new)).await,
        old_ports
    );

    // Operate: Nova stops and starts the servers.
    env.stop_and_start_checked(&vnf.id).await;

    // Terminate: Nova and Neutron hold none of the servers and ports any more.
    let inst = env.instance(&vnf.id).await;
    let last_ports = env.ports(&vnfcs(&inst)).await;
    assert_eq!(last_ports.len(), 2);
    assert!(all_ports.iter().all(|p| last_ports.contains(p)));
    env.terminate_and_check_gone(&vnf.id, &servers(&vnfcs(&inst)), &last_ports)
        .await;
    env.lcm.shutdown(Duration::from_secs(5)).await;
}

/// The instantiate request of Tacker's `v2-vm-change-vnfpkg-*` samples: `VDU1_CP1` with an
/// address Neutron allocates and `VDU2_CP1` at `vdu2_address` on `net-ext-1`, `nfv` merged
/// over the driver's parameter.
pub(super) fn change_vnfpkg_request(cloud: &Cloud, vdu2_address: &str, nfv: Value) -> Value {
    json!({
        "flavourId": "simple",
        "vimConnectionInfo": {"vim1": cloud.vim_connection()},
        "extVirtualLinks": [{"id": "ext-1", "resourceId": "net-ext-1", "extCps": [
            {"cpdId": "VDU1_CP1", "cpConfig": {"VDU1_CP1_1": {"cpProtocolData": [
                {"layerProtocol": "IP_OVER_ETHERNET", "ipOverEthernet": {"ipAddresses": [
                    {"type": "IPV4", "numDynamicAddresses": 1}]}}]}}},
            {"cpdId": "VDU2_CP1", "cpConfig": {"VDU2_CP1_1": {"cpProtocolData": [
                {"layerProtocol": "IP_OVER_ETHERNET", "ipOverEthernet": {"ipAddresses": [
                    {"type": "IPV4", "fixedAddresses": [vdu2_address]}]}}]}}}]}],
        "additionalParams": {"nfv": nfv}
    })
}

/// Package files: a corpus package's, plus files laid over them.
struct Overlay {
    base: Arc<dyn ArtifactSource>,
    extra: MemArtifacts,
}

impl ArtifactSource for Overlay {
    fn read(&self, path: &str) -> std::io::Result<Vec<u8>> {
        self.extra.read(path).or_else(|_| self.base.read(path))
    }
}

/// The nodes of a VNFD whose software image [`with_own_image`] replaces.
#[derive(Clone, Copy)]
pub(super) enum ImageHolders {
    /// Every VDU (servers booted from the image).
    Vdus,
    /// Every virtual storage (volumes made from the image).
    Storages,
}

/// `vnfd` as package `id` in the catalog, the software image of every node of `holders` a file
/// the package carries (a small qcow2 image under a name of this run only: the cloud is
/// shared); answers the package id and the image name.
pub(super) fn with_own_image(
    env: &Env,
    vnfd: vnfm_descriptor::Vnfd,
    files: Arc<dyn ArtifactSource>,
    id: &str,
    holders: ImageHolders,
) -> (String, String) {
    let data = support::qcow2_image();
    let sha256 = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&data));
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let image_name = format!("vnfm-test-image-{}-{stamp}", std::process::id());
    let mut v = serde_json::to_value(&vnfd).unwrap();
    v["descriptorId"] = json!(id);
    let key = match holders {
        ImageHolders::Vdus => "vdus",
        ImageHolders::Storages => "virtualStorages",
    };
    for flavour in v["flavours"].as_array_mut().unwrap() {
        for node in flavour[key].as_array_mut().unwrap() {
            node["swImage"] = json!({
                "name": image_name, "checksumAlgorithm": "sha-256", "checksumHash": sha256,
                "containerFormat": "bare", "diskFormat": "qcow2",
                "file": "Files/images/new-image.qcow2"
            });
        }
    }
    let to = env.catalog.insert(
        serde_json::from_value(v).unwrap(),
        Arc::new(Overlay {
            base: files,
            extra: MemArtifacts::new().with("Files/images/new-image.qcow2", data),
        }),
    );
    (to, image_name)
}

#[vnfm_test_env::needs(openstack, corpus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tacker_change_vnfpkg_new_image_moves_ports_and_rebuilds_from_the_uploaded_image() {
    let cloud = Cloud::from_env();
    let env = env(cloud.clone()).await;
    let (vnfd, files) = corpus_package("v2-vm-change-vnfpkg-new-image");
    let from = env.catalog.insert(vnfd.clone(), files.clone());
    let (to, image_name) = with_own_image(
        &env,
        vnfd,
        files,
        &format!("{from}-with-image"),
        ImageHolders::Vdus,
    );

    let vnf = env.create(&from).await;
    let image = json!({"vcImageId": "cirros-0.6"});
    env.instantiate_ok(
        &vnf.id,
        change_vnfpkg_request(
            &cloud,
            "10.10.0.71",
            json!({"VDU": {"VDU1": image, "VDU2": image}}),
        ),
    )
    .await;
    let inst = env.instance(&vnf.id).await;
    env.assert_servers_built(&vnfcs(&inst)).await;
    let vdu2 = of_vdu(&inst, "VDU2")[0]
        .compute_resource
        .resource_id
        .clone();
    let services = env.services();
    assert_eq!(
        services.addresses_on(&vdu2, "net-ext-1").await,
        vec!["10.10.0.71"]
    );

    // change_ext_conn: Neutron moves VDU2's port to net-ext-2 with the new address.
    let op = env
        .lcm
        .change_ext_conn(
            &vnf.id,
            serde_json::from_value(json!({"extVirtualLinks": [
                {"id": "ext-2", "resourceId": "net-ext-2", "extCps": [
                    {"cpdId": "VDU2_CP1", "cpConfig": {"VDU2_CP1_1": {"cpProtocolData": [
                        {"layerProtocol": "IP_OVER_ETHERNET", "ipOverEthernet": {"ipAddresses": [
                            {"type": "IPV4", "fixedAddresses": ["10.10.9.71"]}]}}]}}}]}
            ]}))
            .unwrap(),
        )
        .await
        .unwrap();
    env.completed(op).await;
    let inst = env.instance(&vnf.id).await;
    let vdu2 = of_vdu(&inst, "VDU2")[0]
        .compute_resource
        .resource_id
        .clone();
    assert_eq!(
        services.addresses_on(&vdu2, "net-ext-2").await,
        vec!["10.10.9.71"]
    );
    assert!(services.addresses_on(&vdu2, "net-ext-1").await.is_empty());
    let before: BTreeSet<String> = servers(&vnfcs(&inst)).into_iter().collect();
    let ports_before = env.ports(&vnfcs(&inst)).await;

    // change_vnfpkg to the package with its image: uploaded to Glance, and every server
    // rebuilt (or replaced) from it, still on its ports.
    let op = env.change_vnfpkg_to(&vnf.id, &to).await;
    env.completed(op).await;
    let images = services.images_named(&image_name).await;
    assert_eq!(images.len(), 1, "{images:?}");
    let inst = env.instance(&vnf.id).await;
    assert_eq!(inst.vnfd_id.as_str(), to);
    services
        .assert_servers_built(&vnfcs(&inst), &image_name)
        .await;
    assert_eq!(env.ports(&vnfcs(&inst)).await, ports_before);
    let after: BTreeSet<String> = servers(&vnfcs(&inst)).into_iter().collect();
    // Heat rebuilds a server whose image changes (same server, new image).
    assert_eq!(after, before);

    // Terminate: servers, ports and the uploaded image are gone.
    let after: Vec<String> = after.into_iter().collect();
    env.terminate_and_check_gone(&vnf.id, &after, &ports_before)
        .await;
    assert!(services.images_named(&image_name).await.is_empty());
    env.lcm.shutdown(Duration::from_secs(5)).await;
}
