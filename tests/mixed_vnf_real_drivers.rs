//! A mixed VNF on the real drivers, through the `vnfm` embedding facade: the sample package
//! `vnfd-samples/mixed-vnf` (two `Vdu.Compute` VDUs from a BaseHOT, one
//! `Vdu.OsContainerDeployableUnit` VDU from a manifest) is instantiated with its own request on
//! two registered VIMs: the test cloud of `scripts/test-env/openstack.sh` (Keystone, Heat,
//! Nova with its fake virt driver, Neutron) through the OpenStack driver, and the real
//! Kubernetes control plane of `scripts/test-env/kubernetes.sh` (KWOK's pods become Ready after
//! a delay) through the Kubernetes driver. Heat gets the VMs only, the cluster the containers
//! only, and the instance lists both with their VIM connection; the container aspect scales
//! out and in without touching the stack; a VM VNFC is healed without a write to the cluster
//! (the API server's audit log says); terminate removes both sides: Nova's servers, Neutron's
//! ports, the cluster's objects and namespace. A second test makes the Kubernetes side fail
//! after Heat succeeded (the pods' image never pulls): FAILED_TEMP naming the Kubernetes
//! driver, then a rollback that deletes the stack and the applied objects; a third lets the
//! pods become Ready only after the failure and retries: only the Kubernetes side runs again,
//! the stack is left as it was.
//!
//! Each test works in a namespace of its own and removes it and its stack afterwards, also
//! when it fails. Built as ignored tests when the services' variables were not set at build
//! time (`#[vnfm_test_env::needs(openstack, kubernetes)]`); `scripts/test.sh` always sets them.

use crate::e2e_support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use e2e_support::{Cloud, KUBERNETES, Kube, ROOT};
use serde_json::{Value, json};
use vnfm::lcm::types::{LcmOperationStateType, VnfInstanceId, VnfLcmOpOcc};
use vnfm::lcm::{Keyring, Lcm, LcmConfig, MemoryCatalog, VimRegistry};
use vnfm_infra_kubernetes::KubernetesDriver;
use vnfm_infra_openstack::{DriverConfig, OpenStackDriver, PollPolicy};

const WAIT: Duration = Duration::from_secs(600);
/// The sample request's VIM connection keys.
const OS: &str = "os";
const K8S: &str = "k8s";
/// A shared network of the test cloud (`openstack.sh` makes it).
const NETWORK: &str = "net-ext-1";
const INSTANCE_LABEL: &str = "vnfm.io/vnf-instance-id";
const APP_IMAGE: &str = "nginx:1.27-alpine";
/// The label that keeps a simulated pod from becoming Ready (`kubernetes.sh`'s KWOK stages).
const NEVER_READY: &str = "vnfm.test/never-ready";
/// The sample's application manifest.
const APP_MANIFEST: &str = "Files/kubernetes/app.yaml";

fn sample() -> std::path::PathBuf {
    Path::new(ROOT).join("vnfd-samples/mixed-vnf")
}

/// One embedded VNFM with both real drivers, the cloud and the cluster registered as VIMs,
/// and the sample onboarded (its application manifest replaced by `app`, when given).
struct Env {
    lcm: Lcm,
    cloud: Cloud,
    kube: Kube,
    /// The test's own namespace for the container VDU.
    ns: String,
    vnfd_id: String,
    os_vim: String,
    k8s_vim: String,
    /// The instances the test created, whose stacks the clean-up removes.
    instances: std::sync::Mutex<Vec<String>>,
    _dir: tempfile::TempDir,
}

impl Env {
    /// Runs `body` with a new environment, then removes the test's stacks and namespace
    /// whether it passed or not, and passes its panic on.
    async fn run<F, Fut>(app: Option<String>, body: F)
    where
        F: FnOnce(Arc<Env>) -> Fut,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        let env = Arc::new(Env::start(app).await);
        let run = tokio::spawn(body(env.clone())).await;
        let instances = env.instances.lock().unwrap().clone();
        for id in instances {
            env.cloud.delete_stack(&id).await;
        }
        env.kube
            .delete(&format!("/api/v1/namespaces/{}", env.ns))
            .await;
        if let Err(e) = run {
            std::panic::resume_unwind(e.into_panic());
        }
    }

    async fn start(app: Option<String>) -> Env {
        let cloud = Cloud::from_env();
        let kube = Kube::from_env();
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let ns = format!(
            "mixed-vnf-{}-{}",
            std::process::id(),
            N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
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
                    "interfaceInfo": {"endpoint": kube.server, "ssl_ca_cert": kube.ca_pem},
                    "accessInfo": {"bearer_token": kube.token}
                }))
                .unwrap(),
                None,
            )
            .await
            .unwrap();
        let catalog = MemoryCatalog::new();
        let package = match app {
            Some(app) => {
                let copy = dir.path().join("mixed-vnf");
                let replace = BTreeMap::from([(APP_MANIFEST.to_string(), app.into_bytes())]);
                e2e_support::package_copy("mixed-vnf", &copy, &replace);
                copy
            }
            None => sample(),
        };
        let vnfd_id = vnfm::lcm::onboard_dir(&catalog, &package).unwrap();
        let openstack = OpenStackDriver::new(DriverConfig {
            stack_timeout: Duration::from_secs(300),
            poll: PollPolicy {
                initial: Duration::from_millis(250),
                factor: 1.5,
                max: Duration::from_secs(1),
            },
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
            kube,
            ns,
            vnfd_id,
            os_vim: os_vim.id.as_str().to_string(),
            k8s_vim: k8s_vim.id.as_str().to_string(),
            instances: std::sync::Mutex::default(),
            _dir: dir,
        }
    }

    /// The sample's instantiate request with the registered VIMs, the test network, the test
    /// cloud's image and the test's namespace.
    fn request(&self) -> Value {
        let text = std::fs::read_to_string(sample().join("requests/instantiate.json")).unwrap();
        let text = text
            .replace("REPLACE-WITH-OPENSTACK-VIM-ID", &self.os_vim)
            .replace("REPLACE-WITH-KUBERNETES-VIM-ID", &self.k8s_vim)
            .replace("REPLACE-WITH-NEUTRON-NETWORK-ID", NETWORK);
        assert!(!text.contains("REPLACE-WITH"), "{text}");
        let mut r: Value = serde_json::from_str(&text).unwrap();
        r["additionalParams"]["namespace"] = json!(self.ns);
        for vdu in ["dbNode", "gwNode"] {
            r["additionalParams"]["nfv"]["VDU"][vdu]["vcImageId"] =
                json!(e2e_support::cloud::TEST_IMAGE);
        }
        r
    }

    async fn create(&self, name: &str) -> VnfInstanceId {
        let id = self
            .lcm
            .create_vnf_identifier(
                serde_json::from_value(json!({"vnfdId": self.vnfd_id, "vnfInstanceName": name}))
                    .unwrap(),
            )
            .await
            .unwrap()
            .id;
        self.instances.lock().unwrap().push(id.as_str().to_string());
        id
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

    /// `Kind/name` of the objects in the test's namespace labelled with the instance.
    async fn objects_of(&self, id: &VnfInstanceId) -> BTreeSet<String> {
        self.kube
            .labelled(&self.ns, INSTANCE_LABEL, id.as_str())
            .await
    }

    /// The names of the pods in the test's namespace.
    async fn pods(&self) -> BTreeSet<String> {
        self.kube
            .pods(&self.ns)
            .await
            .iter()
            .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
            .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
            .collect()
    }

    /// Checks what Nova and Neutron hold for the VM VNFCs `servers`: each server ACTIVE with
    /// one port on the test network.
    async fn assert_on_nova(&self, servers: &BTreeSet<(String, String)>) {
        let network = self
            .cloud
            .call(
                "network",
                reqwest::Method::GET,
                &format!("/v2.0/networks?name={NETWORK}"),
                None,
                &[],
            )
            .await;
        let network = network["networks"][0]["id"].as_str().unwrap().to_string();
        let ids: Vec<String> = servers.iter().map(|(_, id)| id.clone()).collect();
        for (id, server) in ids.iter().zip(self.cloud.servers(&ids).await) {
            let server = server.unwrap_or_else(|| panic!("Nova has no server {id}"));
            assert_eq!(server["status"], "ACTIVE", "{server:#}");
            let addresses = self.cloud.port_addresses(id, &network).await;
            assert_eq!(
                addresses.len(),
                1,
                "server {id} on {NETWORK}: {addresses:?}"
            );
            assert!(addresses[0].starts_with("10.10.0."), "{addresses:?}");
        }
    }

    /// Checks that Nova has none of `servers` any more.
    async fn assert_gone_from_nova(&self, servers: &BTreeSet<(String, String)>) {
        let ids: Vec<String> = servers.iter().map(|(_, id)| id.clone()).collect();
        for (id, server) in ids.iter().zip(self.cloud.servers(&ids).await) {
            assert!(server.is_none(), "Nova still has server {id}");
        }
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

#[vnfm_test_env::needs(openstack, kubernetes)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mixed_vnf_runs_on_heat_and_kubernetes_through_its_whole_lifecycle() {
    Env::run(None, whole_lifecycle).await;
}

async fn whole_lifecycle(env: Arc<Env>) {
    let ns = env.ns.clone();
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
    assert_eq!(state["byVim"][K8S]["namespace"], ns.as_str(), "{state:#}");

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
    env.assert_on_nova(&on_heat).await;
    let nfv = stack.nfv();
    let mut nfv_vdus: Vec<&String> = nfv["VDU"].as_object().unwrap().keys().collect();
    nfv_vdus.sort();
    assert_eq!(nfv_vdus, ["dbNode", "gwNode"], "{nfv:#}");
    assert_eq!(nfv["CP"]["dbNode_CP1"]["network"], NETWORK);
    assert_eq!(nfv["VDU"]["gwNode"]["desired_capacity"], 2);

    // The cluster has the container VDU only, in the request's namespace, one Ready pod.
    let objects = env.objects_of(&vnf).await;
    for o in ["ConfigMap/app-config", "Deployment/app", "Service/app"] {
        assert!(objects.contains(o), "{o} missing: {objects:?}");
    }
    assert!(
        objects
            .iter()
            .all(|o| !o.contains("dbNode") && !o.contains("gwNode")),
        "{objects:?}"
    );
    let pods = env.pods().await;
    let app = env.kube.deployment(&ns, "app").await.unwrap();
    assert_eq!(app["status"]["readyReplicas"], 1, "{:#}", app["status"]);
    let reported: BTreeSet<String> = on_k8s.iter().map(|(_, r)| r.clone()).collect();
    assert_eq!(reported, pods, "the instance reports the cluster's pod");
    let page = env
        .kube
        .get(&format!("/api/v1/namespaces/{ns}/configmaps/app-config"))
        .await
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
        let dep = env.kube.deployment(&ns, "app").await.unwrap();
        assert_eq!(dep["spec"]["replicas"], pods, "{kind}");
        if kind == "SCALE_OUT" {
            assert_eq!(
                dep["status"]["readyReplicas"], pods,
                "{kind}: {:#}",
                dep["status"]
            );
        }
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
    let mark = env.kube.audit_mark();
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
    let writes = env.kube.writes_since(mark, &ns);
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
    env.assert_on_nova(&now_on_heat).await;
    env.assert_gone_from_nova(&[("gwNode".to_string(), healed.clone())].into())
        .await;

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
    env.assert_gone_from_nova(&now_on_heat).await;
    let left = env.objects_of(&vnf).await;
    assert!(left.is_empty(), "{left:?}");
    assert!(
        !env.kube.namespace_exists(&ns).await,
        "the namespace is deleted"
    );
}

#[vnfm_test_env::needs(openstack, kubernetes)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kubernetes_failure_after_heat_succeeded_rolls_back_both_sides() {
    // The application's pods never start (their image never pulls): the Kubernetes side
    // fails once its objects are applied, after the VM side (which runs first) succeeded.
    let failing = vnfm_test_env::var("VNFM_TEST_KUBE_FAILING_IMAGE");
    Env::run(
        Some(app_manifest().replace(APP_IMAGE, &failing)),
        rolls_back_both_sides,
    )
    .await;
}

async fn rolls_back_both_sides(env: Arc<Env>) {
    let ns = env.ns.clone();
    let vnf = env.create("mixed-failing").await;
    let mut request = env.request();
    // The readiness budget only: the waits for deleted objects (the namespace controller of
    // a real control plane takes seconds to empty and remove a namespace) have their own.
    request["additionalParams"]["readinessTimeoutSeconds"] = json!(10);
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
    let (_, resources) = env.cloud.stack(vnf.as_str()).await.expect("Heat ran first");
    let servers: BTreeSet<(String, String)> = resources
        .iter()
        .filter(|r| r.resource_type == "OS::Nova::Server")
        .map(|r| (r.resource_name.clone(), r.physical_resource_id.clone()))
        .collect();
    assert_eq!(servers.len(), 3, "{resources:#?}");
    env.assert_on_nova(&servers).await;
    let applied = env.objects_of(&vnf).await;
    assert!(applied.contains("Deployment/app"), "{applied:?}");
    let waiting: Vec<Value> = env.kube.pods(&ns).await;
    assert!(
        waiting
            .iter()
            .all(|p| p.to_string().contains("ImagePullBackOff")),
        "the pods wait for their image: {waiting:#?}"
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
    env.assert_gone_from_nova(&servers).await;
    let left = env.objects_of(&vnf).await;
    assert!(left.is_empty(), "{left:?}");
    assert!(
        !env.kube.namespace_exists(&ns).await,
        "the namespace is deleted"
    );
    assert_eq!(
        env.instance(&vnf).await["instantiationState"],
        "NOT_INSTANTIATED"
    );
}

#[vnfm_test_env::needs(openstack, kubernetes)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_the_kubernetes_side_failed_runs_the_kubernetes_side_only() {
    // The application's pods do not become Ready until the test lets them (KWOK keeps a pod
    // labelled never-ready running but not Ready).
    let app = app_manifest().replace(
        "    metadata:\n      labels:\n        app: mixed-app\n",
        &format!("    metadata:\n      labels:\n        app: mixed-app\n        {NEVER_READY}: \"true\"\n"),
    );
    assert!(
        app.contains(NEVER_READY),
        "the pod template is labelled: {app}"
    );
    Env::run(Some(app), runs_the_kubernetes_side_only).await;
}

async fn runs_the_kubernetes_side_only(env: Arc<Env>) {
    let ns = env.ns.clone();
    let vnf = env.create("mixed-retried").await;
    let mut request = env.request();
    // The readiness budget only: the waits for deleted objects (the namespace controller of
    // a real control plane takes seconds to empty and remove a namespace) have their own.
    request["additionalParams"]["readinessTimeoutSeconds"] = json!(10);
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

    // The pods become Ready once they lose the label; the retry re-applies the same template,
    // so no new pod gets it back.
    for pod in env.pods().await {
        env.kube
            .merge_patch(
                &format!("/api/v1/namespaces/{ns}/pods/{pod}"),
                &json!({"metadata": {"labels": {NEVER_READY: "false"}}}),
            )
            .await;
    }
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
    let left = env.objects_of(&vnf).await;
    assert!(left.is_empty(), "{left:?}");
}

/// The sample's application manifest.
fn app_manifest() -> String {
    std::fs::read_to_string(sample().join(APP_MANIFEST)).unwrap()
}

/// The VIM kinds of the OpenStack and Kubernetes drivers.
fn all_vim_kinds() -> vnfm_driver_api::VimKinds {
    vnfm_driver_api::VimKinds::new()
        .with(std::sync::Arc::new(vnfm_infra_openstack::OpenStackVimKind))
        .with(std::sync::Arc::new(
            vnfm_infra_kubernetes::KubernetesVimKind,
        ))
}
