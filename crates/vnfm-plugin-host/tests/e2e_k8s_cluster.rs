//! End to end: the real lifecycle runner (`vnfm_lcm::Lcm` on SQLite, VIM registry with a
//! keyring) instantiates the VNF-A sample package. The in-memory infrastructure driver
//! "creates" the VMs and gives them the addresses of SSH servers (`scripts/test-env/sshd.sh`);
//! `instantiate_end` runs the k8s-cluster plugin, shipped in the package and run in the
//! isolated runner, which installs the cluster (with a test install script that has the real
//! one's interface) and returns the Kubernetes VIM that ends up registered and referenced in
//! the instance's `vimConnectionInfo`. A scale-out joins a worker; terminate deregisters.

use crate::support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use vnfm_driver_api::memory::{MemArtifacts, MemoryInfraDriver};
use vnfm_lcm::testing::NoSubscribers;
use vnfm_lcm::{Keyring, Lcm, MemoryCatalog, VimRegistry};
use vnfm_plugin_host::{HostConfig, Isolation, PluginHost};
use vnfm_ssh::testing::TestHosts;
use vnfm_types::{LcmOperationStateType, VimId, VnfLcmOpOcc};

const OPENSTACK: &str = "ETSINFV.OPENSTACK_KEYSTONE.V_3";
const SAMPLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../vnfd-samples/vnf-a-k8s-cluster"
);
const LIBRARY: &str = "Plugins/libvnfm_plugin_k8s_cluster.so";

/// The sample package's files, with the built plugin library added and the install script
/// replaced by the test script.
fn package(script: &str) -> (vnfm_tosca::MemFiles, MemArtifacts) {
    fn add(dir: &Path, root: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                add(&p, root, out);
            } else {
                let rel = p
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    let root = Path::new(SAMPLE);
    let mut files = Vec::new();
    add(root, root, &mut files);
    files.retain(|(p, _)| p != "Scripts/install_k8s_cluster.sh");
    files.push((
        "Scripts/install_k8s_cluster.sh".into(),
        script.as_bytes().to_vec(),
    ));
    files.push((
        LIBRARY.into(),
        std::fs::read(support::library("k8s_cluster")).unwrap(),
    ));
    let mut mem = vnfm_tosca::MemFiles::new("Definitions/k8s_cluster_top.vnfd.yaml");
    let mut arts = MemArtifacts::new();
    for (p, b) in files {
        mem.files.insert(p.clone(), b.clone());
        arts = arts.with(p, b);
    }
    (mem, arts)
}

async fn completed(lcm: &Lcm, op: VnfLcmOpOcc) -> VnfLcmOpOcc {
    let done = lcm.wait(&op.id, Duration::from_secs(120)).await.unwrap();
    assert_eq!(
        done.operation_state,
        LcmOperationStateType::Completed,
        "{:?} ended {:?}: {:?}",
        done.operation,
        done.operation_state,
        done.error
    );
    done
}

fn steps(log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap();
    std::fs::write(log, "").unwrap();
    text.lines().map(String::from).collect()
}

#[vnfm_test_env::needs(sshd)]
#[tokio::test(flavor = "multi_thread")]
async fn instantiate_registers_the_cluster_as_a_vim_of_the_instance() {
    let hosts = TestHosts::from_env();
    vnfm_outbound::install_crypto_provider();
    assert!(
        hosts.hosts.len() >= 4,
        "sshd.sh must start at least 4 hosts"
    );
    let dir = tempfile::tempdir_in(&hosts.dir).unwrap();
    let log = dir.path().join("steps.log");
    std::fs::write(&log, "").unwrap();
    let script = include_str!("../../../plugins/k8s-cluster/tests/fake_install.sh")
        .replace("@LOG@", log.to_str().unwrap());

    // The package: VNFD from the sample, plugin library inside, digest computed on load.
    let (mem, files) = package(&script);
    let loaded = vnfm_tosca::load(&mem);
    assert!(!loaded.has_errors(), "{:#?}", loaded.diagnostics);
    let vnfd = loaded
        .descriptor
        .and_then(|d| d.as_vnfd().cloned())
        .unwrap();
    let flavour = vnfd.flavour("simple").unwrap();
    let artifact = flavour.artifact(None, "mgmt-driver-k8s-cluster").unwrap();
    assert_eq!(
        artifact.sha256.as_deref(),
        Some(support::sha256_file(&support::library("k8s_cluster")).as_str())
    );
    let catalog = MemoryCatalog::new();
    let vnfd_id = catalog.insert(vnfd, Arc::new(files));

    // VMs get the SSH hosts' addresses: the master first, then the workers, then one spare
    // for the scale-out.
    let pool = [1, 2, 3, 0]
        .map(|i| hosts.hosts[i].address.clone())
        .to_vec();
    let infra = Arc::new(
        MemoryInfraDriver::new()
            .with_vim_types(&[OPENSTACK])
            .with_address_pool(pool.clone()),
    );
    let host = PluginHost::new(
        HostConfig::new(dir.path().join("plugin-cache"))
            .package_libraries(Isolation::Process)
            .runner(support::runner()),
    );
    let store = vnfm_store_sql::open(&format!("sqlite://{}", dir.path().join("lcm.db").display()))
        .await
        .unwrap();
    let keyring = Arc::new(Keyring::from_keys([Keyring::generate_key()]).unwrap());
    let registry = Arc::new(VimRegistry::new(store.clone(), keyring, all_vim_kinds()));
    let lcm = Lcm::builder(
        store,
        registry.clone(),
        Arc::new(NoSubscribers),
        Arc::new(catalog),
    )
    .infra_driver(infra.clone())
    .mgmt_driver(Arc::new(host))
    .build();

    let vnf = lcm
        .create_vnf_identifier(
            serde_json::from_value(json!({"vnfdId": vnfd_id, "vnfInstanceName": "vnf-a"})).unwrap(),
        )
        .await
        .unwrap();
    let key = hosts.client_key.to_str().unwrap();
    let node =
        |cp: &str| json!({"ssh_cp_name": cp, "username": hosts.user, "ssh_private_key_file": key});
    let mut master = node("masterNode_CP1");
    master["pod_cidr"] = json!("10.244.0.0/16");
    let request = json!({
        "flavourId": "simple",
        "vimConnectionInfo": {"vim1": {
            "vimType": OPENSTACK,
            "interfaceInfo": {"endpoint": "http://127.0.0.1:35000/v3"},
            "accessInfo": {"username": "nfv", "password": "os-pa55word", "project": "nfv",
                           "projectDomain": "Default", "userDomain": "Default"}
        }},
        "additionalParams": {"k8s_cluster_installation_param": {
            "script_path": "Scripts/install_k8s_cluster.sh",
            "vim_name": "vnf-a-cluster",
            "master_node": master,
            "worker_node": node("workerNode_CP2"),
            "ssh_port": hosts.hosts[0].port,
            "remote_dir": dir.path().join("remote").to_str().unwrap(),
            "ssh_retry_seconds": 10
        }}
    });
    let op = lcm
        .instantiate(&vnf.id, serde_json::from_value(request).unwrap())
        .await
        .unwrap();
    completed(&lcm, op).await;

    // The install ran on the VMs' addresses: init on the master, joins on both workers.
    let ran = steps(&log);
    assert_eq!(ran.len(), 3, "{ran:?}");
    assert!(
        ran[0].starts_with(&format!("{} init-master ", pool[0])),
        "{ran:?}"
    );
    let mut workers: Vec<&str> = ran[1..]
        .iter()
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    workers.sort();
    let mut expected = vec![pool[1].as_str(), pool[2].as_str()];
    expected.sort();
    assert_eq!(workers, expected);

    // The cluster is a registered VIM, referenced by the instance.
    let inst = lcm.get_instance(&vnf.id).await.unwrap();
    let conns = inst.vim_connection_info.clone().unwrap();
    let k8s = &conns["k8s_cluster"];
    assert_eq!(k8s.vim_type, "ETSINFV.KUBERNETES.V_1");
    assert!(
        k8s.access_info.is_none(),
        "the instance holds a reference, not the token"
    );
    let vim_id: VimId = k8s.vim_id.clone().unwrap();
    let view = registry.show(&vim_id).await.unwrap();
    assert_eq!(view.name, "vnf-a-cluster");
    assert_eq!(view.vim_type, "ETSINFV.KUBERNETES.V_1");
    let iface = view.interface_info.clone().unwrap();
    assert_eq!(iface["endpoint"], format!("https://{}:6443", pool[0]));
    assert!(
        iface["ssl_ca_cert"]
            .as_str()
            .unwrap()
            .contains("BEGIN CERTIFICATE")
    );
    assert_eq!(view.access_info.unwrap()["bearer_token"], "***");
    assert!(conns.contains_key("vim1"));
    let meta = inst.metadata.clone().unwrap();
    assert_eq!(meta["k8sCluster"]["workers"].as_array().unwrap().len(), 2);
    assert!(
        !serde_json::to_string(&inst)
            .unwrap()
            .contains("fake-bearer-token-123")
    );

    // Scale out by one worker: the VM with the spare address joins.
    let op = lcm
        .scale(
            &vnf.id,
            serde_json::from_value(json!({
                "type": "SCALE_OUT", "aspectId": "worker_instance", "numberOfSteps": 1
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    completed(&lcm, op).await;
    let ran = steps(&log);
    assert_eq!(ran.len(), 2, "{ran:?}");
    assert_eq!(ran[0], format!("{} join-info", pool[0]));
    assert!(
        ran[1].starts_with(&format!("{} join-worker ", pool[3])),
        "{ran:?}"
    );
    let inst = lcm.get_instance(&vnf.id).await.unwrap();
    let meta: Value = Value::Object(inst.metadata.unwrap());
    assert_eq!(meta["k8sCluster"]["workers"].as_array().unwrap().len(), 3);

    // Terminate: the VIM is deregistered and no longer referenced.
    let op = lcm
        .terminate(
            &vnf.id,
            serde_json::from_value(json!({"terminationType": "FORCEFUL"})).unwrap(),
        )
        .await
        .unwrap();
    completed(&lcm, op).await;
    let inst = lcm.get_instance(&vnf.id).await.unwrap();
    assert!(
        !inst
            .vim_connection_info
            .unwrap_or_default()
            .contains_key("k8s_cluster")
    );
    assert_eq!(
        registry.show(&vim_id).await.unwrap_err().kind().status(),
        404
    );
    lcm.shutdown(Duration::from_secs(5)).await;
}

/// The VIM kinds of the OpenStack and Kubernetes drivers.
fn all_vim_kinds() -> vnfm_driver_api::VimKinds {
    vnfm_driver_api::VimKinds::new()
        .with(std::sync::Arc::new(vnfm_infra_openstack::OpenStackVimKind))
        .with(std::sync::Arc::new(
            vnfm_infra_kubernetes::KubernetesVimKind,
        ))
}
