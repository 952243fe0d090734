//! The headline scenario, end to end, composed only of packages, drivers and plugins:
//!
//! VNF-A (`vnfd-samples/vnf-a-k8s-cluster`) gets its VMs from real Heat, Nova (fake virt
//! driver) and Neutron: its ports are on a network of the test whose subnet allocates loopback
//! addresses, where the test sshd answers. Its `instantiate_end` hook, the k8s-cluster plugin
//! loaded from the package as a dynamic library and run in the isolated runner, installs
//! Kubernetes on the VMs Nova created over SSH (a test install script with the real one's
//! interface, reporting the real control plane of `scripts/test-env/kubernetes.sh` as the
//! cluster) and returns the cluster as a VIM, which the VNFM registers with its secrets
//! encrypted. VNF-B (`vnfd-samples/vnf-b-cnf`) is then deployed on that VIM by the Kubernetes
//! driver (its pods become Ready after KWOK's delay), checked by its own plugin. Then: VNF-A's
//! terminate is refused while VNF-B uses its cluster; a worker of VNF-A is healed (drained
//! before, re-joined after); VNF-B terminates (its objects and namespace gone from the
//! cluster); VNF-A terminates (VIM deregistered, stack, servers and ports gone). Every
//! occurrence ends COMPLETED, the subscriber gets every notification, and what Nova, Neutron
//! and the cluster hold is checked after each step.
//!
//! The same flow runs once through the embedding API and once through `vnfm serve` over HTTP;
//! a third test breaks a worker's install: FAILED_TEMP naming the host and its stderr, retry
//! after the repair, and a rollback that leaves no stack and no VIM.

use crate::e2e_support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use e2e_support::{KUBERNETES, World};
use serde_json::{Value, json};
use vnfm::lcm::types::{LcmOperationStateType, VimId, VnfInstanceId, VnfLcmOpOcc};
use vnfm::lcm::{DelivererConfig, Keyring, Lcm, LcmConfig, LcmError, MemoryCatalog, VimRegistry};
use vnfm_infra_kubernetes::{HelmLibrary, KubernetesDriver};
use vnfm_infra_openstack::{DriverConfig, OpenStackDriver, PollPolicy};
use vnfm_plugin_host::{HostConfig, Isolation, PluginHost};

const WAIT: Duration = Duration::from_secs(600);

/// The embedded VNFM of a flow.
struct Vnfm {
    lcm: Lcm,
    registry: Arc<VimRegistry>,
    db: std::path::PathBuf,
    world: Arc<World>,
    _services: vnfm::lcm::Vnfm,
}

fn openstack_driver() -> OpenStackDriver {
    OpenStackDriver::new(DriverConfig {
        stack_timeout: Duration::from_secs(300),
        poll: PollPolicy {
            initial: Duration::from_millis(250),
            factor: 1.5,
            max: Duration::from_secs(1),
        },
        ..DriverConfig::default()
    })
}

fn kubernetes_driver() -> KubernetesDriver {
    let driver = KubernetesDriver::new();
    match std::env::var_os("VNFM_HELM_C_LIB") {
        Some(lib) => driver.with_helm(Arc::new(HelmLibrary::load(lib).unwrap())),
        None => driver,
    }
}

impl Vnfm {
    async fn start(world: &Arc<World>, catalog: MemoryCatalog) -> Vnfm {
        let db = world.dir.path().join("vnfm.db");
        let keyring = Arc::new(Keyring::from_keys([Keyring::generate_key()]).unwrap());
        let host = PluginHost::new(
            HostConfig::new(world.dir.path().join("plugin-cache"))
                .package_libraries(Isolation::Process)
                .runner(world.profile.join("vnfm-plugin-runner")),
        );
        // Assembled as `vnfm serve` assembles it: the composition root with its defaults
        // (VIM registry, subscriptions, HTTP notifications through the deliverer).
        let services = vnfm::lcm::builder()
            .store_url(format!("sqlite://{}", db.display()))
            .keyring(keyring)
            .catalog(Arc::new(catalog))
            .infra_driver(Arc::new(openstack_driver()))
            .infra_driver(Arc::new(kubernetes_driver()))
            .mgmt_driver(Arc::new(host))
            .config(LcmConfig {
                step_timeout: WAIT,
                ..LcmConfig::default()
            })
            .deliver_notifications(DelivererConfig::new("e2e"))
            .assemble()
            .await
            .unwrap();
        let created = services
            .subscriptions
            .create(
                &serde_json::from_value(json!({"callbackUri": world.subscriber.url})).unwrap(),
                &vnfm::lcm::CreateOptions {
                    verify_callback: true,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        drop(created);
        services.start().await.unwrap();
        Vnfm {
            lcm: services.lcm.clone(),
            registry: Arc::new(services.vims.clone()),
            db,
            world: world.clone(),
            _services: services,
        }
    }

    async fn done(&self, op: VnfLcmOpOcc) -> VnfLcmOpOcc {
        self.lcm.wait(&op.id, WAIT).await.unwrap()
    }

    async fn completed(&self, world: &World, op: VnfLcmOpOcc) -> VnfLcmOpOcc {
        let done = self.done(op).await;
        assert_eq!(
            done.operation_state,
            LcmOperationStateType::Completed,
            "{:?} ended {:?}: {:#?}",
            done.operation,
            done.operation_state,
            done.error
        );
        world
            .subscriber
            .wait_for(done.id.as_str(), "COMPLETED")
            .await;
        // The notifications of one instance arrive in order (a repeated delivery may
        // duplicate one in place).
        let mut states = world.subscriber.states_of(done.id.as_str());
        states.dedup();
        assert_eq!(
            (
                states.first().map(String::as_str),
                states.get(1).map(String::as_str),
                states.last().map(String::as_str)
            ),
            (Some("STARTING"), Some("PROCESSING"), Some("COMPLETED")),
            "{states:?}"
        );
        done
    }

    /// Registers the test cloud as the operator's OpenStack VIM.
    async fn register_cloud(&self, world: &World) -> vnfm_lcm::VimView {
        self.registry
            .create(
                "test-cloud",
                &serde_json::from_value(world.cloud.vim()).unwrap(),
                None,
            )
            .await
            .unwrap()
    }

    async fn instance(&self, id: &VnfInstanceId) -> Value {
        serde_json::to_value(self.lcm.get_instance(id).await.unwrap()).unwrap()
    }

    async fn create(&self, vnfd_id: &str, name: &str) -> VnfInstanceId {
        let id = self
            .lcm
            .create_vnf_identifier(
                serde_json::from_value(json!({"vnfdId": vnfd_id, "vnfInstanceName": name}))
                    .unwrap(),
            )
            .await
            .unwrap()
            .id;
        self.world.track(id.as_str());
        id
    }
}

fn cluster_vim_id(instance: &Value) -> String {
    let conn = &instance["vimConnectionInfo"]["k8s_cluster"];
    assert_eq!(conn["vimType"], KUBERNETES, "{instance:#}");
    conn["vimId"].as_str().unwrap().to_string()
}

/// The id of a VNFC of `vdu` (its `vnfcInfo` id, as heal requests name VNFCs).
fn vnfc_info_id(instance: &Value, vdu: &str) -> (String, String) {
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
fn onboard(world: &World) -> (MemoryCatalog, String, String) {
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
async fn on_nova(world: &World, instance: &Value) -> BTreeSet<String> {
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
async fn assert_vnf_b_runs(world: &World, b: &VnfInstanceId) {
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
async fn assert_vnf_b_gone(world: &World, b: &VnfInstanceId) {
    let left = vnf_b_objects(world, b).await;
    assert!(left.is_empty(), "VNF-B left on the cluster: {left:?}");
    assert!(
        !world.kube.namespace_exists(&world.namespace).await,
        "VNF-B's namespace {} is deleted",
        world.namespace
    );
}

/// Checks that Nova no longer has server `id` nor Neutron a port of it.
async fn assert_vms_gone_of(world: &World, id: &str) {
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
async fn assert_vms_gone(world: &World, servers: &BTreeSet<String>) {
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

#[vnfm_test_env::needs(openstack, sshd, helm, kubernetes)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn vnf_a_builds_a_cluster_and_vnf_b_runs_on_it() {
    World::run(vnf_a_builds_a_cluster_and_vnf_b_runs_on_it_in).await;
}

async fn vnf_a_builds_a_cluster_and_vnf_b_runs_on_it_in(world: Arc<World>) {
    let (catalog, vnfd_a, vnfd_b) = onboard(&world);
    let vnfm = Vnfm::start(&world, catalog).await;

    // The operator registers the OpenStack VIM.
    let os_vim = vnfm.register_cloud(&world).await;

    // VNF-A: VMs from Heat and Nova, Kubernetes installed over SSH by the plugin, cluster
    // registered.
    let a = vnfm.create(&vnfd_a, "vnf-a").await;
    let op = vnfm
        .lcm
        .instantiate(
            &a,
            serde_json::from_value(world.vnf_a_request(os_vim.id.as_str())).unwrap(),
        )
        .await
        .unwrap();
    vnfm.completed(&world, op).await;
    let inst_a = vnfm.instance(&a).await;
    let masters = World::addresses(&inst_a, "masterNode", "masterNode_CP1");
    let workers = World::addresses(&inst_a, "workerNode", "workerNode_CP2");
    assert_eq!((masters.len(), workers.len()), (1, 2), "{inst_a:#}");
    let servers = on_nova(&world, &inst_a).await;
    assert_eq!(servers.len(), 3, "{inst_a:#}");
    let steps = world.steps();
    assert_eq!(World::hosts_of(&steps, "init-master"), masters, "{steps:?}");
    assert_eq!(World::hosts_of(&steps, "join-worker"), workers, "{steps:?}");

    // The cluster is a registered VIM created by VNF-A; its token is sealed in the store.
    let cluster = cluster_vim_id(&inst_a);
    let view = vnfm
        .registry
        .show(&VimId::new(cluster.clone()))
        .await
        .unwrap();
    assert_eq!(view.vim_type, KUBERNETES);
    assert_eq!(
        view.interface_info.as_ref().unwrap()["endpoint"],
        world.kube.server.as_str()
    );
    assert_eq!(view.access_info.as_ref().unwrap()["bearer_token"], "***");
    let token = world.kube.token.clone();
    let db = std::fs::read(&vnfm.db).unwrap();
    assert!(
        !db.windows(token.len()).any(|w| w == token.as_bytes()),
        "the cluster's token is stored encrypted"
    );
    assert!(!serde_json::to_string(&inst_a).unwrap().contains(&token));

    // VNF-B on VNF-A's cluster, through the Kubernetes driver; its plugin checks the Service.
    let b = vnfm.create(&vnfd_b, "vnf-b").await;
    let op = vnfm
        .lcm
        .instantiate(
            &b,
            serde_json::from_value(world.vnf_b_request(&cluster)).unwrap(),
        )
        .await
        .unwrap();
    vnfm.completed(&world, op).await;
    let inst_b = vnfm.instance(&b).await;
    assert_vnf_b_runs(&world, &b).await;
    assert!(
        inst_b["metadata"]["cnfCheck"].is_object(),
        "the CNF check ran: {inst_b:#}"
    );

    // VNF-A cannot go while VNF-B uses its cluster: refused before an occurrence exists.
    let before = vnfm.lcm.list_op_occs(&Default::default()).await.unwrap();
    let refused = vnfm
        .lcm
        .terminate(
            &a,
            serde_json::from_value(json!({"terminationType": "FORCEFUL"})).unwrap(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(refused, LcmError::VimDependents { .. }),
        "{refused:?}"
    );
    assert_eq!(refused.kind().status(), 409);
    let detail = refused.to_string();
    assert!(
        detail.contains(b.as_str()) && detail.contains("vnf-b") && detail.contains(&cluster),
        "{detail}"
    );
    let after = vnfm.lcm.list_op_occs(&Default::default()).await.unwrap();
    assert_eq!(before.items.len(), after.items.len());

    // Heal one worker of VNF-A: drained (removed from the cluster) before the VM is rebuilt,
    // joined again after.
    let (vnfc_info, resource) = vnfc_info_id(&inst_a, "workerNode");
    let healed_server = inst_a["instantiatedVnfInfo"]["vnfcResourceInfo"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["id"] == resource.as_str())
        .unwrap()["computeResource"]["resourceId"]
        .as_str()
        .unwrap()
        .to_string();
    let healed_addr = World::addresses(
        &json!({"instantiatedVnfInfo": {"vnfcResourceInfo": [
            inst_a["instantiatedVnfInfo"]["vnfcResourceInfo"].as_array().unwrap().iter()
                .find(|v| v["id"] == resource.as_str()).unwrap()
        ]}}),
        "workerNode",
        "workerNode_CP2",
    );
    let op = vnfm
        .lcm
        .heal(
            &a,
            serde_json::from_value(json!({"vnfcInstanceId": [vnfc_info], "cause": "e2e"})).unwrap(),
        )
        .await
        .unwrap();
    vnfm.completed(&world, op).await;
    let steps = world.steps();
    let remove = steps
        .iter()
        .position(|s| s.contains("remove-node"))
        .unwrap_or_else(|| panic!("no drain: {steps:?}"));
    let join = steps
        .iter()
        .position(|s| s.contains("join-worker"))
        .unwrap_or_else(|| panic!("no re-join: {steps:?}"));
    assert!(remove < join, "drained before re-joined: {steps:?}");
    assert_eq!(
        World::hosts_of(&steps, "remove-node"),
        masters,
        "the master removes the node"
    );
    let inst_a = vnfm.instance(&a).await;
    let rejoined = World::hosts_of(&steps, "join-worker");
    assert_eq!(rejoined.len(), 1, "{steps:?}");
    assert!(
        World::addresses(&inst_a, "workerNode", "workerNode_CP2").contains(&rejoined[0]),
        "the healed VNFC joined at its current address ({healed_addr:?} before)"
    );
    let after_heal = on_nova(&world, &inst_a).await;
    assert_eq!(after_heal.len(), 3, "{inst_a:#}");
    if !after_heal.contains(&healed_server) {
        assert_vms_gone_of(&world, &healed_server).await;
    }
    // The cluster's workload was not touched by the heal of a VM.
    assert_vnf_b_runs(&world, &b).await;

    // Scale out: the new worker joins; scale in: the leaving worker is drained (removed by
    // the master, reset) before its VM goes.
    let scale = |kind: &str| {
        serde_json::from_value(
            json!({"type": kind, "aspectId": "worker_instance", "numberOfSteps": 1}),
        )
        .unwrap()
    };
    let op = vnfm.lcm.scale(&a, scale("SCALE_OUT")).await.unwrap();
    vnfm.completed(&world, op).await;
    let inst_grown = vnfm.instance(&a).await;
    let grown = World::addresses(&inst_grown, "workerNode", "workerNode_CP2");
    assert_eq!(grown.len(), 3);
    let grown_servers = on_nova(&world, &inst_grown).await;
    assert_eq!(grown_servers.len(), 4, "{inst_grown:#}");
    let steps = world.steps();
    let joined = World::hosts_of(&steps, "join-worker");
    assert_eq!(joined.len(), 1, "{steps:?}");
    assert!(grown.contains(&joined[0]));
    let op = vnfm.lcm.scale(&a, scale("SCALE_IN")).await.unwrap();
    vnfm.completed(&world, op).await;
    let inst_shrunk = vnfm.instance(&a).await;
    let shrunk = World::addresses(&inst_shrunk, "workerNode", "workerNode_CP2");
    assert_eq!(shrunk.len(), 2);
    let shrunk_servers = on_nova(&world, &inst_shrunk).await;
    assert_eq!(shrunk_servers.len(), 3);
    let removed: Vec<&String> = grown_servers.difference(&shrunk_servers).collect();
    assert_eq!(removed.len(), 1, "one server removed: {removed:?}");
    assert_vms_gone_of(&world, removed[0]).await;
    let steps = world.steps();
    let left: Vec<&String> = grown.iter().filter(|w| !shrunk.contains(w)).collect();
    assert_eq!(left.len(), 1);
    assert_eq!(World::hosts_of(&steps, "remove-node"), masters, "{steps:?}");
    assert_eq!(
        World::hosts_of(&steps, "reset"),
        vec![left[0].clone()],
        "the leaving worker is reset: {steps:?}"
    );

    // VNF-B goes first, then VNF-A: its VIM is deregistered and its stack deleted.
    let op = vnfm
        .lcm
        .terminate(
            &b,
            serde_json::from_value(json!({"terminationType": "FORCEFUL"})).unwrap(),
        )
        .await
        .unwrap();
    vnfm.completed(&world, op).await;
    assert_vnf_b_gone(&world, &b).await;
    let op = vnfm
        .lcm
        .terminate(
            &a,
            serde_json::from_value(json!({"terminationType": "FORCEFUL"})).unwrap(),
        )
        .await
        .unwrap();
    vnfm.completed(&world, op).await;
    assert!(
        vnfm.registry
            .show(&VimId::new(cluster.clone()))
            .await
            .is_err(),
        "the cluster's VIM is deregistered"
    );
    assert!(!world.cloud.stack_exists(a.as_str()).await);
    assert_vms_gone(
        &world,
        &shrunk_servers.union(&after_heal).cloned().collect(),
    )
    .await;
    vnfm.lcm.delete_vnf_identifier(&b).await.unwrap();
    vnfm.lcm.delete_vnf_identifier(&a).await.unwrap();
}

#[vnfm_test_env::needs(openstack, sshd, helm, kubernetes)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failed_worker_install_is_retried_after_the_repair_and_rolled_back_cleanly() {
    World::run(a_failed_worker_install_is_retried_after_the_repair_and_rolled_back_cleanly_in)
        .await;
}

async fn a_failed_worker_install_is_retried_after_the_repair_and_rolled_back_cleanly_in(
    world: Arc<World>,
) {
    let (catalog, vnfd_a, _) = onboard(&world);
    let vnfm = Vnfm::start(&world, catalog).await;
    let os_vim = vnfm.register_cloud(&world).await;
    let request = world.vnf_a_request(os_vim.id.as_str());

    // One worker's install fails: FAILED_TEMP, naming that host and what it printed.
    world.break_a_worker();
    let a = vnfm.create(&vnfd_a, "vnf-a").await;
    let op = vnfm
        .lcm
        .instantiate(&a, serde_json::from_value(request.clone()).unwrap())
        .await
        .unwrap();
    let failed = vnfm.done(op).await;
    assert_eq!(
        failed.operation_state,
        LcmOperationStateType::FailedTemp,
        "{failed:#?}"
    );
    world
        .subscriber
        .wait_for(failed.id.as_str(), "FAILED_TEMP")
        .await;
    let broken = world.broken_host().expect("a worker tried to join");
    let detail = failed.error.as_ref().unwrap().detail.clone();
    assert!(detail.contains(&broken), "{detail}");
    assert!(
        detail.contains("container runtime is not running"),
        "the host's stderr: {detail}"
    );
    let vims = vnfm.registry.list().await.unwrap();
    assert_eq!(vims.len(), 1, "no cluster VIM yet: {vims:?}");

    // The operator repairs the host and retries.
    world.fix_broken_host();
    world.steps();
    let op = vnfm.lcm.retry(&failed.id).await.unwrap();
    vnfm.completed(&world, op).await;
    let steps = world.steps();
    assert!(
        World::hosts_of(&steps, "join-worker").contains(&broken),
        "the repaired worker joined: {steps:?}"
    );
    let inst = vnfm.instance(&a).await;
    let cluster = cluster_vim_id(&inst);
    let servers = on_nova(&world, &inst).await;
    assert_eq!(servers.len(), 3, "{inst:#}");

    // A second cluster fails the same way and is rolled back: no stack, no VIM left.
    world.break_a_worker();
    let a2 = vnfm.create(&vnfd_a, "vnf-a2").await;
    let op = vnfm
        .lcm
        .instantiate(&a2, serde_json::from_value(request).unwrap())
        .await
        .unwrap();
    let failed = vnfm.done(op).await;
    assert_eq!(failed.operation_state, LcmOperationStateType::FailedTemp);
    let (_, resources) = world.cloud.stack(a2.as_str()).await.expect("a2's stack");
    let a2_servers: Vec<String> = resources
        .iter()
        .filter(|r| r.resource_type == "OS::Nova::Server")
        .map(|r| r.physical_resource_id.clone())
        .collect();
    assert_eq!(a2_servers.len(), 3, "{resources:#?}");
    for server in world.cloud.servers(&a2_servers).await {
        assert_eq!(server.expect("Nova has a2's server")["status"], "ACTIVE");
    }
    let op = vnfm.lcm.rollback(&failed.id).await.unwrap();
    let rolled = vnfm.done(op).await;
    assert_eq!(
        rolled.operation_state,
        LcmOperationStateType::RolledBack,
        "{rolled:#?}"
    );
    world
        .subscriber
        .wait_for(rolled.id.as_str(), "ROLLED_BACK")
        .await;
    assert!(!world.cloud.stack_exists(a2.as_str()).await);
    for id in &a2_servers {
        assert_vms_gone_of(&world, id).await;
    }
    let vims = vnfm.registry.list().await.unwrap();
    assert_eq!(
        vims.iter()
            .map(|v| v.id.to_string())
            .collect::<Vec<_>>()
            .len(),
        2,
        "the OpenStack VIM and the first cluster only: {vims:?}"
    );
    assert!(vims.iter().any(|v| v.id.as_str() == cluster));
    world.fix_broken_host();

    let op = vnfm
        .lcm
        .terminate(
            &a,
            serde_json::from_value(json!({"terminationType": "FORCEFUL"})).unwrap(),
        )
        .await
        .unwrap();
    vnfm.completed(&world, op).await;
    assert_eq!(vnfm.registry.list().await.unwrap().len(), 1);
    assert_vms_gone(&world, &servers).await;
}

/// A client of `vnfm serve`, as curl would be.
struct Rest {
    base: String,
    token: String,
    http: reqwest::Client,
}

impl Rest {
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value, Option<String>) {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .header("Version", "2.0.0");
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let location = resp
            .headers()
            .get("location")
            .map(|l| l.to_str().unwrap().to_string());
        let text = resp.text().await.unwrap();
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        (status, body, location)
    }

    async fn get(&self, path: &str) -> Value {
        let (status, body, _) = self.call(reqwest::Method::GET, path, None).await;
        assert_eq!(status, 200, "GET {path}: {body}");
        body
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value, Option<String>) {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }

    /// Onboards a package directory; returns its VNFD id.
    async fn onboard(&self, dir: &std::path::Path) -> String {
        let (status, pkg, _) = self.post("/vnfpkgm/v2/vnf_packages", json!({})).await;
        assert_eq!(status, 201, "{pkg}");
        let id = pkg["id"].as_str().unwrap();
        let resp = self
            .http
            .put(format!(
                "{}/vnfpkgm/v2/vnf_packages/{id}/package_content",
                self.base
            ))
            .bearer_auth(&self.token)
            .header("Version", "2.0.0")
            .header("Content-Type", "application/zip")
            .body(e2e_support::zip_dir(dir))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 202);
        for _ in 0..600 {
            let pkg = self.get(&format!("/vnfpkgm/v2/vnf_packages/{id}")).await;
            match pkg["onboardingState"].as_str() {
                Some("ONBOARDED") => return pkg["vnfdId"].as_str().unwrap().to_string(),
                Some("ERROR") => panic!("onboarding failed: {pkg:#}"),
                _ => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
        panic!("package {id} not onboarded");
    }

    /// Runs a task (`POST .../{task}`, 202 + Location) and waits for its occurrence.
    async fn task(&self, world: &World, vnf: &str, task: &str, body: Value) -> Value {
        let (status, problem, location) = self
            .post(&format!("/vnflcm/v2/vnf_instances/{vnf}/{task}"), body)
            .await;
        assert_eq!(status, 202, "{task}: {problem}");
        let location = location.unwrap();
        let path = location.strip_prefix(&self.base).unwrap().to_string();
        for _ in 0..6000 {
            let occ = self.get(&path).await;
            match occ["operationState"].as_str().unwrap() {
                "COMPLETED" => {
                    let id = occ["id"].as_str().unwrap();
                    world.subscriber.wait_for(id, "COMPLETED").await;
                    return occ;
                }
                "STARTING" | "PROCESSING" | "ROLLING_BACK" => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                other => panic!("{task} ended {other}: {occ:#}"),
            }
        }
        panic!("{task} did not end");
    }
}

/// `vnfm serve` on a free port; killed on drop.
struct Server {
    child: std::process::Child,
    base: String,
    data: std::path::PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(world: &World) -> Server {
    use std::io::BufRead;
    let data = world.dir.path().join("serve-data");
    let mut child = std::process::Command::new(world.profile.join("vnfm"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--package-plugins",
            "--data-dir",
        ])
        .arg(&data)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = std::io::BufReader::new(stdout).lines();
    let base = loop {
        let line = lines
            .next()
            .expect("vnfm serve printed its address")
            .unwrap();
        if let Some(b) = line.strip_prefix("vnfm listening on ") {
            break b.trim().to_string();
        }
    };
    // Keep reading so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    Server { child, base, data }
}

#[vnfm_test_env::needs(openstack, sshd, helm, kubernetes)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_same_scenario_through_the_rest_api() {
    World::run(the_same_scenario_through_the_rest_api_in).await;
}

async fn the_same_scenario_through_the_rest_api_in(world: Arc<World>) {
    let server = serve(&world);
    let creds: Value = serde_json::from_str(
        &std::fs::read_to_string(server.data.join("credentials.json")).unwrap(),
    )
    .unwrap();
    let http = reqwest::Client::new();
    let token: Value = http
        .post(format!("{}/oauth2/token", server.base))
        .basic_auth(
            creds["client_id"].as_str().unwrap(),
            creds["client_secret"].as_str(),
        )
        .form(&[("grant_type", "client_credentials")])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let api = Rest {
        base: server.base.clone(),
        token: token["access_token"].as_str().unwrap().to_string(),
        http,
    };

    let (status, sub, _) = api
        .post(
            "/vnflcm/v2/subscriptions",
            json!({"callbackUri": world.subscriber.url}),
        )
        .await;
    assert_eq!(status, 201, "{sub}");
    let mut vim = world.cloud.vim();
    vim["name"] = json!("test-cloud");
    let (status, os_vim, _) = api.post("/vnfm/v1/vims", vim).await;
    assert_eq!(status, 201, "{os_vim}");
    assert_eq!(os_vim["accessInfo"]["password"], "***");
    let vnfd_a = api.onboard(&world.vnf_a_package()).await;
    let vnfd_b = api.onboard(&world.vnf_b_package()).await;

    let (status, a, _) = api
        .post(
            "/vnflcm/v2/vnf_instances",
            json!({"vnfdId": vnfd_a, "vnfInstanceName": "vnf-a"}),
        )
        .await;
    assert_eq!(status, 201, "{a}");
    let a = a["id"].as_str().unwrap().to_string();
    world.track(&a);
    api.task(
        &world,
        &a,
        "instantiate",
        world.vnf_a_request(os_vim["vimId"].as_str().or(os_vim["id"].as_str()).unwrap()),
    )
    .await;
    let inst_a = api.get(&format!("/vnflcm/v2/vnf_instances/{a}")).await;
    let workers = World::addresses(&inst_a, "workerNode", "workerNode_CP2");
    assert_eq!(workers.len(), 2, "{inst_a:#}");
    let servers = on_nova(&world, &inst_a).await;
    assert_eq!(servers.len(), 3, "{inst_a:#}");
    let steps = world.steps();
    assert_eq!(World::hosts_of(&steps, "join-worker"), workers);
    let cluster = cluster_vim_id(&inst_a);
    let cluster_view = api.get(&format!("/vnfm/v1/vims/{cluster}")).await;
    assert_eq!(cluster_view["vimType"], KUBERNETES);
    assert_eq!(cluster_view["accessInfo"]["bearer_token"], "***");

    let (status, b, _) = api
        .post(
            "/vnflcm/v2/vnf_instances",
            json!({"vnfdId": vnfd_b, "vnfInstanceName": "vnf-b"}),
        )
        .await;
    assert_eq!(status, 201, "{b}");
    let b = b["id"].as_str().unwrap().to_string();
    api.task(&world, &b, "instantiate", world.vnf_b_request(&cluster))
        .await;
    let b_id = VnfInstanceId::new(b.clone());
    assert_vnf_b_runs(&world, &b_id).await;

    // 409 with the dependents named.
    let (status, problem, _) = api
        .post(
            &format!("/vnflcm/v2/vnf_instances/{a}/terminate"),
            json!({"terminationType": "FORCEFUL"}),
        )
        .await;
    assert_eq!(status, 409, "{problem}");
    assert!(
        problem["detail"].as_str().unwrap().contains(&b),
        "{problem}"
    );
    assert_eq!(
        problem["dependents"][0]["vnfInstanceId"],
        b.as_str(),
        "{problem}"
    );

    // Heal a worker of VNF-A: drain, rebuild, re-join.
    let (vnfc_info, _) = vnfc_info_id(&inst_a, "workerNode");
    api.task(
        &world,
        &a,
        "heal",
        json!({"vnfcInstanceId": [vnfc_info], "cause": "e2e over REST"}),
    )
    .await;
    let steps = world.steps();
    let remove = steps.iter().position(|s| s.contains("remove-node"));
    let join = steps.iter().position(|s| s.contains("join-worker"));
    assert!(
        matches!((remove, join), (Some(r), Some(j)) if r < j),
        "{steps:?}"
    );

    api.task(
        &world,
        &b,
        "terminate",
        json!({"terminationType": "FORCEFUL"}),
    )
    .await;
    assert_vnf_b_gone(&world, &b_id).await;
    let healed = api.get(&format!("/vnflcm/v2/vnf_instances/{a}")).await;
    let servers: BTreeSet<String> = servers
        .union(&on_nova(&world, &healed).await)
        .cloned()
        .collect();
    api.task(
        &world,
        &a,
        "terminate",
        json!({"terminationType": "FORCEFUL"}),
    )
    .await;
    let (status, _, _) = api
        .call(
            reqwest::Method::GET,
            &format!("/vnfm/v1/vims/{cluster}"),
            None,
        )
        .await;
    assert_eq!(status, 404, "the cluster's VIM is deregistered");
    assert!(!world.cloud.stack_exists(a.as_str()).await);
    assert_vms_gone(&world, &servers).await;
    for id in [&b, &a] {
        let (status, body, _) = api
            .call(
                reqwest::Method::DELETE,
                &format!("/vnflcm/v2/vnf_instances/{id}"),
                None,
            )
            .await;
        assert_eq!(status, 204, "{body}");
    }
}
