//! A mixed VNF on the real drivers, through the `vnfm` embedding facade: the sample package
//! `vnfd-samples/mixed-vnf` (two `Vdu.Compute` VDUs from a BaseHOT, one
//! `Vdu.OsContainerDeployableUnit` VDU from a manifest) is instantiated with its own request on
//! two registered VIMs: the test cloud's real Keystone + Heat (`scripts/test-env/openstack.sh`,
//! the stand-in environment for Nova and Neutron) through the OpenStack driver, and the
//! Kubernetes API emulation through the Kubernetes driver. Heat gets the VMs only, the cluster
//! the containers only, and the instance lists both with their VIM connection; the container
//! aspect scales out and in without touching the stack; a VM VNFC is healed without touching
//! the cluster; terminate removes both sides. A second test makes the Kubernetes side fail
//! after Heat succeeded (the pods' image never pulls): FAILED_TEMP naming the Kubernetes
//! driver, then a rollback that deletes the stack and the applied objects; a third repairs the
//! cluster instead and retries: only the Kubernetes side runs again, the stack is left as it
//! was.
//!
//! Built as ignored tests when the variables `openstack.sh start` prints were not set at build
//! time (`#[vnfm_test_env::needs(openstack)]`); `scripts/test.sh` always sets them.

use crate::e2e_support;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use e2e_support::{Cloud, KUBERNETES, ROOT};
use serde_json::{Value, json};
use vnfm::lcm::types::{LcmOperationStateType, VnfInstanceId, VnfLcmOpOcc};
use vnfm::lcm::{Keyring, Lcm, LcmConfig, MemoryCatalog, VimRegistry};
use vnfm_infra_kubernetes::KubernetesDriver;
use vnfm_infra_openstack::testing::StandIns;
use vnfm_infra_openstack::{DriverConfig, OpenStackDriver, PollPolicy};
use vnfm_kube_emulator::{Emulator, EmulatorConfig};

const WAIT: Duration = Duration::from_secs(600);
/// The sample request's VIM connection keys and namespace.
const OS: &str = "os";
const K8S: &str = "k8s";
const NS: &str = "mixed-vnf";
const NETWORK: &str = "net-mixed-ext";
const INSTANCE_LABEL: &str = "vnfm.io/vnf-instance-id";
const APP_IMAGE: &str = "nginx:1.27-alpine";

fn sample() -> std::path::PathBuf {
    Path::new(ROOT).join("vnfd-samples/mixed-vnf")
}

/// One embedded VNFM with both real drivers, the cloud and the cluster registered as VIMs,
/// and the sample onboarded.
struct Env {
    lcm: Lcm,
    cloud: Cloud,
    emu: Emulator,
    vnfd_id: String,
    os_vim: String,
    k8s_vim: String,
    _dir: tempfile::TempDir,
}

impl Env {
    async fn start() -> Env {
        let cloud = Cloud::from_env();
        let emu = Emulator::start(EmulatorConfig::default()).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let store = vnfm_store_sql::open(&format!(
            "sqlite://{}",
            dir.path().join("vnfm.db").display()
        ))
        .await
        .unwrap();
        let keyring = Arc::new(Keyring::from_keys([Keyring::generate_key()]).unwrap());
        let registry = Arc::new(VimRegistry::new(
            store.clone(),
            keyring.clone(),
            all_vim_kinds(),
        ));
        let os_vim = registry
            .create(
                "test-cloud",
                &serde_json::from_value(cloud.vim()).unwrap(),
                None,
            )
            .await
            .unwrap();
        let k8s_vim = registry
            .create(
                "test-cluster",
                &serde_json::from_value(json!({
                    "vimType": KUBERNETES,
                    "interfaceInfo": {"endpoint": emu.url()},
                    "accessInfo": {"bearer_token": emu.token()}
                }))
                .unwrap(),
                None,
            )
            .await
            .unwrap();
        let catalog = MemoryCatalog::new();
        let vnfd_id = vnfm::lcm::onboard_dir(&catalog, &sample()).unwrap();
        let (environment, files) = StandIns::default().environment();
        let openstack = OpenStackDriver::new(DriverConfig {
            stack_timeout: Duration::from_secs(300),
            poll: PollPolicy {
                initial: Duration::from_millis(250),
                factor: 1.5,
                max: Duration::from_secs(1),
            },
            environment: Some(environment),
            environment_files: files,
            ..DriverConfig::default()
        });
        let kubernetes = KubernetesDriver::new()
            .without_helm()
            .with_ready_timeout(Duration::from_secs(60))
            .with_delete_timeout(Duration::from_secs(60));
        let lcm = vnfm::lcm::builder()
            .store(store)
            .keyring(keyring)
            .vim_directory(registry)
            .catalog(Arc::new(catalog))
            .infra_driver(Arc::new(openstack))
            .infra_driver(Arc::new(kubernetes))
            .config(LcmConfig {
                step_timeout: WAIT,
                ..LcmConfig::default()
            })
            .build()
            .await
            .unwrap();
        Env {
            lcm,
            cloud,
            emu,
            vnfd_id,
            os_vim: os_vim.id.as_str().to_string(),
            k8s_vim: k8s_vim.id.as_str().to_string(),
            _dir: dir,
        }
    }

    /// The sample's instantiate request with the registered VIMs and the test network.
    fn request(&self) -> Value {
        let text = std::fs::read_to_string(sample().join("requests/instantiate.json")).unwrap();
        let text = text
            .replace("REPLACE-WITH-OPENSTACK-VIM-ID", &self.os_vim)
            .replace("REPLACE-WITH-KUBERNETES-VIM-ID", &self.k8s_vim)
            .replace("REPLACE-WITH-NEUTRON-NETWORK-ID", NETWORK);
        assert!(!text.contains("REPLACE-WITH"), "{text}");
        serde_json::from_str(&text).unwrap()
    }

    async fn create(&self, name: &str) -> VnfInstanceId {
        self.lcm
            .create_vnf_identifier(
                serde_json::from_value(json!({"vnfdId": self.vnfd_id, "vnfInstanceName": name}))
                    .unwrap(),
            )
            .await
            .unwrap()
            .id
    }

    async fn done(&self, op: VnfLcmOpOcc) -> VnfLcmOpOcc {
        self.lcm.wait(&op.id, WAIT).await.unwrap()
    }

    async fn completed(&self, op: VnfLcmOpOcc) -> VnfLcmOpOcc {
        let done = self.done(op).await;
        assert_eq!(
            done.operation_state,
            LcmOperationStateType::Completed,
            "{:?} ended {:?}: {:#?}",
            done.operation,
            done.operation_state,
            done.error
        );
        done
    }

    async fn instance(&self, id: &VnfInstanceId) -> Value {
        serde_json::to_value(self.lcm.get_instance(id).await.unwrap()).unwrap()
    }

    /// `Kind/namespace/name` of the cluster objects labelled with the instance.
    fn objects_of(&self, id: &VnfInstanceId) -> BTreeSet<String> {
        self.emu
            .labelled(INSTANCE_LABEL, id.as_str())
            .into_iter()
            .collect()
    }
}

/// `(vduId, computeResource.resourceId)` of the instance's VNFCs on VIM connection `vim`.
fn vnfcs_on(instance: &Value, vim: &str) -> BTreeSet<(String, String)> {
    instance["instantiatedVnfInfo"]["vnfcResourceInfo"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["computeResource"]["vimConnectionId"] == vim)
        .map(|v| {
            (
                v["vduId"].as_str().unwrap().to_string(),
                v["computeResource"]["resourceId"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            )
        })
        .collect()
}

fn vdus(v: &BTreeSet<(String, String)>) -> Vec<&str> {
    let mut out: Vec<&str> = v.iter().map(|(d, _)| d.as_str()).collect();
    out.sort();
    out
}

fn all_vnfcs(instance: &Value) -> usize {
    instance["instantiatedVnfInfo"]["vnfcResourceInfo"]
        .as_array()
        .map_or(0, Vec::len)
}

/// The `vnfcInfo` id of the VNFC whose compute resource is `resource_id`.
fn vnfc_info_id(instance: &Value, resource_id: &str) -> String {
    let info = &instance["instantiatedVnfInfo"];
    let resource = info["vnfcResourceInfo"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["computeResource"]["resourceId"] == resource_id)
        .unwrap();
    info["vnfcInfo"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["vnfcResourceInfoId"] == resource["id"])
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// `(resource_name, resource_type)` of the stack's servers and ports.
fn servers_and_ports(resources: &[vnfm_infra_openstack::heat::HeatResource]) -> Vec<String> {
    let mut out: Vec<String> = resources
        .iter()
        .filter(|r| {
            matches!(
                r.resource_type.as_str(),
                "OS::Nova::Server" | "OS::Neutron::Port"
            )
        })
        .map(|r| format!("{} {}", r.resource_type, r.resource_name))
        .collect();
    out.sort();
    out
}

#[vnfm_test_env::needs(openstack)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mixed_vnf_runs_on_heat_and_kubernetes_through_its_whole_lifecycle() {
    let env = Env::start().await;
    let vnf = env.create("mixed").await;

    // Instantiate: one operation, two VIMs.
    let op = env
        .lcm
        .instantiate(&vnf, serde_json::from_value(env.request()).unwrap())
        .await
        .unwrap();
    env.completed(op).await;
    let inst = env.instance(&vnf).await;
    assert_eq!(inst["instantiationState"], "INSTANTIATED");
    let on_heat = vnfcs_on(&inst, OS);
    let on_k8s = vnfcs_on(&inst, K8S);
    assert_eq!(vdus(&on_heat), ["dbNode", "gwNode", "gwNode"], "{inst:#}");
    assert_eq!(vdus(&on_k8s), ["app"], "{inst:#}");
    assert_eq!(all_vnfcs(&inst), 4, "every VNFC is on one of the two VIMs");
    let state = &inst["instantiatedVnfInfo"]["metadata"]["driverState"];
    assert_eq!(
        state["vduVimConnections"],
        json!({"dbNode": OS, "gwNode": OS, "app": K8S})
    );
    assert!(state["byVim"][OS]["stackId"].is_string(), "{state:#}");
    assert_eq!(state["byVim"][K8S]["namespace"], NS, "{state:#}");

    // Heat has the VMs only: three servers and their ports, fed from the VMs' part of the
    // request.
    let (stack, resources) = env.cloud.stack(vnf.as_str()).await.expect("the stack");
    assert_eq!(
        servers_and_ports(&resources),
        [
            "OS::Neutron::Port dbNode_CP1",
            "OS::Neutron::Port gwNode_CP1",
            "OS::Neutron::Port gwNode_CP1",
            "OS::Nova::Server dbNode",
            "OS::Nova::Server gwNode",
            "OS::Nova::Server gwNode",
        ]
    );
    assert!(resources.iter().all(|r| !r.resource_name.contains("app")));
    let servers: BTreeSet<(String, String)> = resources
        .iter()
        .filter(|r| r.resource_type == "OS::Nova::Server")
        .map(|r| (r.resource_name.clone(), r.physical_resource_id.clone()))
        .collect();
    assert_eq!(servers, on_heat, "the instance reports Heat's servers");
    let nfv = stack.nfv();
    let mut nfv_vdus: Vec<&String> = nfv["VDU"].as_object().unwrap().keys().collect();
    nfv_vdus.sort();
    assert_eq!(nfv_vdus, ["dbNode", "gwNode"], "{nfv:#}");
    assert_eq!(nfv["CP"]["dbNode_CP1"]["network"], NETWORK);
    assert_eq!(nfv["VDU"]["gwNode"]["desired_capacity"], 2);

    // The cluster has the container VDU only, in the request's namespace, one pod.
    let objects = env.objects_of(&vnf);
    for o in [
        format!("ConfigMap/{NS}/app-config"),
        format!("Deployment/{NS}/app"),
        format!("Service/{NS}/app"),
    ] {
        assert!(objects.contains(&o), "{o} missing: {objects:?}");
    }
    assert!(
        objects
            .iter()
            .all(|o| o.starts_with("Namespace/") || o.contains(&format!("/{NS}/"))),
        "{objects:?}"
    );
    assert!(
        objects
            .iter()
            .all(|o| !o.contains("dbNode") && !o.contains("gwNode")),
        "{objects:?}"
    );
    let pods: BTreeSet<String> = env
        .emu
        .objects("v1", "Pod")
        .iter()
        .filter(|p| p["metadata"]["namespace"] == NS)
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    let reported: BTreeSet<String> = on_k8s.iter().map(|(_, r)| r.clone()).collect();
    assert_eq!(reported, pods, "the instance reports the cluster's pod");
    let page = env
        .emu
        .object("v1", "ConfigMap", Some(NS), "app-config")
        .unwrap();
    assert!(
        page["data"]["index.html"]
            .as_str()
            .unwrap()
            .contains(vnf.as_str()),
        "placeholders are filled in: {page:#}"
    );

    // Scale the container aspect out and in: the stack is not touched.
    for (kind, pods) in [("SCALE_OUT", 2), ("SCALE_IN", 1)] {
        let op = env
            .lcm
            .scale(
                &vnf,
                serde_json::from_value(json!({"type": kind, "aspectId": "app_aspect"})).unwrap(),
            )
            .await
            .unwrap();
        env.completed(op).await;
        let inst = env.instance(&vnf).await;
        assert_eq!(vnfcs_on(&inst, OS), on_heat, "{kind}: the VMs stay");
        assert_eq!(vdus(&vnfcs_on(&inst, K8S)).len(), pods, "{kind}: {inst:#}");
        assert_eq!(all_vnfcs(&inst), 3 + pods);
        let dep = env
            .emu
            .object("apps/v1", "Deployment", Some(NS), "app")
            .unwrap();
        assert_eq!(dep["spec"]["replicas"], pods, "{kind}");
        let (after, _) = env.cloud.stack(vnf.as_str()).await.unwrap();
        assert_eq!(
            (&after.stack_status, &after.updated_time),
            (&stack.stack_status, &stack.updated_time),
            "{kind} updated the stack"
        );
    }
    let inst = env.instance(&vnf).await;
    let on_k8s = vnfcs_on(&inst, K8S);

    // Heal one gateway VM: Heat replaces that server only; the cluster is not called.
    let healed = on_heat
        .iter()
        .find(|(vdu, _)| vdu == "gwNode")
        .map(|(_, id)| id.clone())
        .unwrap();
    env.emu.clear_log();
    let op = env
        .lcm
        .heal(
            &vnf,
            serde_json::from_value(json!({
                "vnfcInstanceId": [vnfc_info_id(&inst, &healed)],
                "cause": "gateway unresponsive"
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    env.completed(op).await;
    let inst = env.instance(&vnf).await;
    let now_on_heat = vnfcs_on(&inst, OS);
    assert_eq!(vdus(&now_on_heat), ["dbNode", "gwNode", "gwNode"]);
    let gone: Vec<_> = on_heat.difference(&now_on_heat).collect();
    let new: Vec<_> = now_on_heat.difference(&on_heat).collect();
    assert_eq!(gone, [&("gwNode".to_string(), healed.clone())], "{inst:#}");
    assert_eq!(new.len(), 1, "one new gateway server: {new:?}");
    assert_eq!(new[0].0, "gwNode");
    assert_eq!(vnfcs_on(&inst, K8S), on_k8s, "the pods are not healed");
    let writes: Vec<String> = [
        "apply",
        "create",
        "update",
        "patch",
        "delete",
        "deletecollection",
    ]
    .iter()
    .flat_map(|v| env.emu.objects_with_verb(v))
    .collect();
    assert!(
        writes.is_empty(),
        "heal of a VM wrote to the cluster: {writes:?}"
    );
    let (_, resources) = env.cloud.stack(vnf.as_str()).await.unwrap();
    let servers: BTreeSet<(String, String)> = resources
        .iter()
        .filter(|r| r.resource_type == "OS::Nova::Server")
        .map(|r| (r.resource_name.clone(), r.physical_resource_id.clone()))
        .collect();
    assert_eq!(servers, now_on_heat);

    // Terminate: the stack and the objects are gone.
    let op = env
        .lcm
        .terminate(
            &vnf,
            serde_json::from_value(json!({"terminationType": "FORCEFUL"})).unwrap(),
        )
        .await
        .unwrap();
    env.completed(op).await;
    assert_eq!(
        env.instance(&vnf).await["instantiationState"],
        "NOT_INSTANTIATED"
    );
    assert!(
        !env.cloud.stack_exists(vnf.as_str()).await,
        "the stack is gone"
    );
    assert!(
        env.objects_of(&vnf).is_empty(),
        "{:?}",
        env.objects_of(&vnf)
    );
    assert!(env.emu.object("v1", "Namespace", None, NS).is_none());
    assert!(
        env.emu
            .objects("v1", "Pod")
            .iter()
            .all(|p| p["metadata"]["namespace"] != NS)
    );
}

#[vnfm_test_env::needs(openstack)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kubernetes_failure_after_heat_succeeded_rolls_back_both_sides() {
    let env = Env::start().await;
    // The application's pods never start: the Kubernetes side fails once its objects are
    // applied, after the VM side (which runs first) succeeded.
    env.emu.fail_image(APP_IMAGE);
    let vnf = env.create("mixed-failing").await;
    let mut request = env.request();
    request["additionalParams"]["readinessTimeoutSeconds"] = json!(5);
    let op = env
        .lcm
        .instantiate(&vnf, serde_json::from_value(request).unwrap())
        .await
        .unwrap();
    let failed = env.done(op).await;
    assert_eq!(
        failed.operation_state,
        LcmOperationStateType::FailedTemp,
        "{:#?}",
        failed.error
    );
    let detail = failed
        .error
        .as_ref()
        .map(|e| e.detail.clone())
        .unwrap_or_default();
    assert!(
        detail.contains("VIM connection `k8s` (driver kubernetes, VDUs app)"),
        "{detail}"
    );
    assert!(
        detail.contains("Deployment") && detail.contains("app"),
        "{detail}"
    );
    // Heat had succeeded; the cluster holds what was applied before the wait failed.
    assert!(env.cloud.stack_exists(vnf.as_str()).await, "Heat ran first");
    let applied = env.objects_of(&vnf);
    assert!(
        applied.contains(&format!("Deployment/{NS}/app")),
        "{applied:?}"
    );

    let op = env.lcm.rollback(&failed.id).await.unwrap();
    let rolled = env.done(op).await;
    assert_eq!(
        rolled.operation_state,
        LcmOperationStateType::RolledBack,
        "{:#?}",
        rolled.error
    );
    assert!(
        !env.cloud.stack_exists(vnf.as_str()).await,
        "the stack is deleted"
    );
    assert!(
        env.objects_of(&vnf).is_empty(),
        "{:?}",
        env.objects_of(&vnf)
    );
    assert!(env.emu.object("v1", "Namespace", None, NS).is_none());
    assert_eq!(
        env.instance(&vnf).await["instantiationState"],
        "NOT_INSTANTIATED"
    );
}

#[vnfm_test_env::needs(openstack)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_the_kubernetes_side_failed_runs_the_kubernetes_side_only() {
    let env = Env::start().await;
    // The application's pods do not become ready until the test lets them.
    env.emu.never_ready("Deployment", "app");
    let vnf = env.create("mixed-retried").await;
    let mut request = env.request();
    request["additionalParams"]["readinessTimeoutSeconds"] = json!(5);
    let op = env
        .lcm
        .instantiate(&vnf, serde_json::from_value(request).unwrap())
        .await
        .unwrap();
    let failed = env.done(op).await;
    assert_eq!(
        failed.operation_state,
        LcmOperationStateType::FailedTemp,
        "{:#?}",
        failed.error
    );
    let (stack, _) = env.cloud.stack(vnf.as_str()).await.expect("Heat ran first");

    env.emu.allow_ready("Deployment", "app");
    let op = env.lcm.retry(&failed.id).await.unwrap();
    env.completed(op).await;
    // Heat's part had succeeded and is not run again: same stack, not updated.
    let (after, _) = env.cloud.stack(vnf.as_str()).await.expect("the stack");
    assert_eq!(
        (&after.id, &after.stack_status, &after.updated_time),
        (&stack.id, &stack.stack_status, &stack.updated_time)
    );
    let inst = env.instance(&vnf).await;
    assert_eq!(vdus(&vnfcs_on(&inst, OS)), ["dbNode", "gwNode", "gwNode"]);
    assert_eq!(vdus(&vnfcs_on(&inst, K8S)), ["app"]);
    assert_eq!(
        inst["instantiatedVnfInfo"]["metadata"]["driverState"]["byVim"][OS]["stackId"],
        after.id.as_str(),
        "the VM side's state survived the retry"
    );

    let op = env
        .lcm
        .terminate(
            &vnf,
            serde_json::from_value(json!({"terminationType": "FORCEFUL"})).unwrap(),
        )
        .await
        .unwrap();
    env.completed(op).await;
    assert!(!env.cloud.stack_exists(vnf.as_str()).await);
    assert!(
        env.objects_of(&vnf).is_empty(),
        "{:?}",
        env.objects_of(&vnf)
    );
}

/// The VIM kinds of the OpenStack and Kubernetes drivers.
fn all_vim_kinds() -> vnfm_driver_api::VimKinds {
    vnfm_driver_api::VimKinds::new()
        .with(std::sync::Arc::new(vnfm_infra_openstack::OpenStackVimKind))
        .with(std::sync::Arc::new(
            vnfm_infra_kubernetes::KubernetesVimKind,
        ))
}
