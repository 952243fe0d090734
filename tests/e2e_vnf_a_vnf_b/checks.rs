//! Readers of a VNF instance (its cluster VIM, VNFCs, servers) and checks of what Nova,
//! Neutron and the cluster hold after each step.

use std::collections::BTreeSet;

use crate::e2e_support::{KUBERNETES, World};
use serde_json::Value;
use vnfm::lcm::MemoryCatalog;
use vnfm::lcm::types::VnfInstanceId;

pub(crate) fn cluster_vim_id(instance: &Value) -> String {
    let conn = &instance["vimConnectionInfo"]["k8s_cluster"];
    assert_eq!(conn["vimType"], KUBERNETES, "{instance:#}");
    conn["vimId"].as_str().unwrap().to_string()
}

/// The id of a VNFC of `vdu` (its `vnfcInfo` id, as heal requests name VNFCs).
pub(crate) fn vnfc_info_id(instance: &Value, vdu: &str) -> (String, String) {
    let info = &instance["instantiatedVnfInfo"];
    let resource = info["vnfcResourceInfo"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["vduId"] == vdu)
        .unwrap();
    let id = resource["id"].as_str().unwrap().to_string();
    let vnfc_info = info["vnfcInfo"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["vnfcResourceInfoId"] == id.as_str())
        .unwrap();
    (vnfc_info["id"].as_str().unwrap().to_string(), id)
}

/// Onboards VNF-A and VNF-B into a catalog; returns their VNFD ids.
pub(crate) fn onboard(world: &World) -> (MemoryCatalog, String, String) {
    let catalog = MemoryCatalog::new();
    let a = vnfm::lcm::onboard_dir(&catalog, &world.vnf_a_package()).unwrap();
    let b = vnfm::lcm::onboard_dir(&catalog, &world.vnf_b_package()).unwrap();
    (catalog, a, b)
}

/// The Nova server IDs of the VNFCs of `vdu` (their `computeResource.resourceId`), sorted.
fn servers_of(instance: &Value, vdu: &str) -> Vec<String> {
    let mut out: Vec<String> = instance["instantiatedVnfInfo"]["vnfcResourceInfo"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["vduId"] == vdu)
        .map(|v| {
            v["computeResource"]["resourceId"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    out.sort();
    out
}

/// Checks what Nova and Neutron hold for VNF-A: every VNFC's server is ACTIVE, and its port
/// on the test's network has the loopback address the instance reports for its CP (where
/// the install reached it). Returns the server IDs.
pub(crate) async fn on_nova(world: &World, instance: &Value) -> BTreeSet<String> {
    let mut all = BTreeSet::new();
    for (vdu, cpd) in [
        ("masterNode", "masterNode_CP1"),
        ("workerNode", "workerNode_CP2"),
    ] {
        let ids = servers_of(instance, vdu);
        let servers = world.cloud.servers(&ids).await;
        let mut addresses = Vec::new();
        for (id, server) in ids.iter().zip(&servers) {
            let server = server
                .as_ref()
                .unwrap_or_else(|| panic!("Nova has no server {id} of {vdu}"));
            assert_eq!(server["status"], "ACTIVE", "{server:#}");
            let on_port = world.cloud.port_addresses(id, &world.network_id).await;
            assert_eq!(on_port.len(), 1, "{vdu} server {id}: {on_port:?}");
            assert!(
                on_port[0].starts_with(&world.network_prefix),
                "Neutron allocated {} from the test's loopback subnet",
                on_port[0]
            );
            addresses.extend(on_port);
            all.insert(id.clone());
        }
        addresses.sort();
        assert_eq!(
            addresses,
            World::addresses(instance, vdu, cpd),
            "the instance reports Neutron's addresses of {vdu}"
        );
    }
    all
}

/// VNF-B's objects on the cluster (`Kind/name` in the test's namespace, labelled with the
/// instance).
async fn vnf_b_objects(world: &World, b: &VnfInstanceId) -> BTreeSet<String> {
    world
        .kube
        .labelled(
            &world.namespace,
            vnfm_infra_kubernetes::plan::INSTANCE_LABEL,
            b.as_str(),
        )
        .await
}

/// Checks that VNF-B runs on the real cluster: its manifests' objects in its namespace, the
/// web Deployment's pods all Ready.
pub(crate) async fn assert_vnf_b_runs(world: &World, b: &VnfInstanceId) {
    let objects = vnf_b_objects(world, b).await;
    for o in [
        "ConfigMap/web-config",
        "PersistentVolumeClaim/web-data",
        "Deployment/web",
        "Service/web",
    ] {
        assert!(
            objects.contains(o),
            "{o} missing on the cluster: {objects:?}"
        );
    }
    assert!(objects.iter().any(|o| o.starts_with("Pod/")), "{objects:?}");
    let web = world
        .kube
        .deployment(&world.namespace, "web")
        .await
        .expect("Deployment web");
    let wanted = web["spec"]["replicas"].as_u64().unwrap();
    assert!(wanted >= 1);
    assert_eq!(
        web["status"]["readyReplicas"].as_u64(),
        Some(wanted),
        "COMPLETED only once the pods are Ready: {:#}",
        web["status"]
    );
}

/// Checks that VNF-B left nothing on the cluster: no object labelled with it, no namespace.
pub(crate) async fn assert_vnf_b_gone(world: &World, b: &VnfInstanceId) {
    let left = vnf_b_objects(world, b).await;
    assert!(left.is_empty(), "VNF-B left on the cluster: {left:?}");
    assert!(
        !world.kube.namespace_exists(&world.namespace).await,
        "VNF-B's namespace {} is deleted",
        world.namespace
    );
}

/// Checks that Nova no longer has server `id` nor Neutron a port of it.
pub(crate) async fn assert_vms_gone_of(world: &World, id: &str) {
    let server = world.cloud.servers(&[id.to_string()]).await.remove(0);
    assert!(server.is_none(), "Nova still has server {id}: {server:#?}");
    assert!(
        world
            .cloud
            .port_addresses(id, &world.network_id)
            .await
            .is_empty()
    );
}

/// Checks that VNF-A's servers and the ports on the test's network are gone.
pub(crate) async fn assert_vms_gone(world: &World, servers: &BTreeSet<String>) {
    let ids: Vec<String> = servers.iter().cloned().collect();
    let left: Vec<&String> = ids
        .iter()
        .zip(world.cloud.servers(&ids).await)
        .filter(|(_, s)| s.is_some())
        .map(|(id, _)| id)
        .collect();
    assert!(left.is_empty(), "Nova still has servers {left:?}");
    assert_eq!(world.cloud.ports_in(&world.network_id).await, 0);
}
