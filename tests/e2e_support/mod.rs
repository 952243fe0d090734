//! The world of the VNF-A / VNF-B end-to-end tests, all real services: the test cloud of
//! `scripts/test-env/openstack.sh` (Keystone, Heat, Nova with its fake virt driver, Neutron),
//! the SSH server that answers at every loopback address (`scripts/test-env/sshd.sh`), the
//! Kubernetes control plane of `scripts/test-env/kubernetes.sh`, the plugin libraries built from
//! this workspace, the sample packages with the test install script, and a notification
//! subscriber on loopback. Each test gets a Neutron network of its own whose subnet allocates
//! loopback addresses, a Nova key pair, a Kubernetes namespace for VNF-B and its volume; they
//! are removed after the test, whether it passed or not ([`World::run`]).

#![allow(dead_code)]

pub mod cloud;
pub mod kube;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use axum::routing::post;
pub use cloud::Cloud;
pub use kube::Kube;
use serde_json::{Value, json};
use sha2::Digest;
use vnfm_ssh::testing::TestHosts;

/// The OpenStack VIM type.
pub const OPENSTACK: &str = "ETSINFV.OPENSTACK_KEYSTONE.V_3";
/// The Kubernetes VIM type.
pub const KUBERNETES: &str = "ETSINFV.KUBERNETES.V_1";
/// Where the workspace is.
pub const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The directory holding the plugin libraries, the isolated plugin runner and the `vnfm`
/// binary ([`vnfm_test_env::built`]).
pub fn build_binaries() -> PathBuf {
    vnfm_test_env::built(&[
        "vnfm-plugin-k8s-cluster",
        "vnfm-plugin-cnf-check",
        "vnfm-plugin-host",
        "vnfm-cli",
    ])
}

/// Hex SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(bytes))
}

/// Copies the sample package `name` to `dest`, applies `replace` (package path -> new
/// content, adding files that are not there), and rewrites the manifest's digests so the
/// package stays valid.
pub fn package_copy(name: &str, dest: &Path, replace: &BTreeMap<String, Vec<u8>>) {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if p.is_dir() {
                copy(&p, &to.join(e.file_name()));
            } else {
                std::fs::copy(&p, to.join(e.file_name())).unwrap();
            }
        }
    }
    copy(&Path::new(ROOT).join("vnfd-samples").join(name), dest);
    for (path, bytes) in replace {
        let p = dest.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
    }
    let manifest = std::fs::read_dir(dest)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "mf"))
        .expect("the sample has a manifest");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let mut out = String::new();
    let mut listed = Vec::new();
    let mut source: Option<String> = None;
    for line in text.lines() {
        if let Some(s) = line.strip_prefix("Source:") {
            source = Some(s.trim().to_string());
            listed.push(s.trim().to_string());
        }
        match (line.strip_prefix("Hash:"), &source) {
            (Some(_), Some(s)) if dest.join(s).is_file() => {
                let digest = sha256(&std::fs::read(dest.join(s)).unwrap());
                out.push_str(&format!("Hash: {digest}\n"));
                source = None;
            }
            _ => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    for path in replace.keys().filter(|p| !listed.contains(p)) {
        let digest = sha256(&std::fs::read(dest.join(path)).unwrap());
        out.push_str(&format!(
            "\nSource: {path}\nAlgorithm: SHA-256\nHash: {digest}\n"
        ));
    }
    std::fs::write(&manifest, out).unwrap();
}

/// A notification subscriber on loopback: answers the callback check (`GET`, 204) and keeps
/// every notification it is sent.
#[derive(Clone)]
pub struct Subscriber {
    pub url: String,
    received: Arc<Mutex<Vec<Value>>>,
}

impl Subscriber {
    pub async fn start() -> Subscriber {
        let received: Arc<Mutex<Vec<Value>>> = Arc::default();
        let keep = received.clone();
        let app = axum::Router::new().route(
            "/notify",
            post(move |axum::Json(body): axum::Json<Value>| {
                let keep = keep.clone();
                async move {
                    keep.lock().unwrap().push(body);
                    axum::http::StatusCode::NO_CONTENT
                }
            })
            .get(|| async { axum::http::StatusCode::NO_CONTENT }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Subscriber {
            url: format!("http://{addr}/notify"),
            received,
        }
    }

    /// Every notification received so far.
    pub fn received(&self) -> Vec<Value> {
        self.received.lock().unwrap().clone()
    }

    /// The `operationState`s notified for occurrence `op`, in arrival order.
    pub fn states_of(&self, op: &str) -> Vec<String> {
        self.received()
            .iter()
            .filter(|n| n["vnfLcmOpOccId"] == op)
            .filter_map(|n| n["operationState"].as_str().map(String::from))
            .collect()
    }

    /// Waits until the final notification of `op` (`state`) arrived.
    pub async fn wait_for(&self, op: &str, state: &str) {
        for _ in 0..600 {
            if self.states_of(op).iter().any(|s| s == state) {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!(
            "no {state} notification for {op}; received: {:?}",
            self.states_of(op)
        );
    }
}

/// Everything a flow needs, for tests that carry
/// `#[vnfm_test_env::needs(openstack, sshd, helm, kubernetes)]`.
pub struct World {
    pub cloud: Cloud,
    pub kube: Kube,
    pub hosts: TestHosts,
    pub any_port: u16,
    pub dir: tempfile::TempDir,
    /// The install script's step log: `<address> <arguments>` per line.
    pub log: PathBuf,
    pub subscriber: Subscriber,
    pub profile: PathBuf,
    /// The test's own Neutron network (VNF-A's external virtual link): its ID and the
    /// loopback prefix its subnet allocates from (`127.77.<n>.`).
    pub network_id: String,
    pub network_prefix: String,
    /// The test's Nova key pair (the SSH test hosts' client key), VNF-A's VMs boot with.
    pub keypair: String,
    /// VNF-B's namespace, and the volume made for its claim.
    pub namespace: String,
    pub volume: String,
    /// The VNF instances the test created, whose stacks the clean-up removes.
    instances: Mutex<Vec<String>>,
}

/// A name no other test (of this or another run) uses: `prefix-<pid>-<n>`, and `n`.
fn unique(prefix: &str) -> (String, u32) {
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    (format!("{prefix}-{}-{n}", std::process::id()), n)
}

/// The claim of VNF-B's web server (`vnfd-samples/vnf-b-cnf/Files/kubernetes/web-pvc.yaml`).
const VNF_B_CLAIM: &str = "web-data";

impl World {
    /// Runs `body` with a new world, then removes what the test made on the cloud and the
    /// cluster whether it passed or not, and passes its panic on.
    pub async fn run<F, Fut>(body: F)
    where
        F: FnOnce(Arc<World>) -> Fut,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        let world = Arc::new(World::new().await);
        let run = tokio::spawn(body(world.clone())).await;
        world.clean_up().await;
        if let Err(e) = run {
            std::panic::resume_unwind(e.into_panic());
        }
    }

    async fn new() -> World {
        let cloud = Cloud::from_env();
        let kube = Kube::from_env();
        let hosts = TestHosts::from_env();
        let Some((any_port, _)) = hosts.any_address.clone() else {
            panic!(
                "{} has no any_host: sshd.sh is outdated",
                hosts.dir.display()
            );
        };
        let profile = build_binaries();
        let dir = tempfile::tempdir_in(&hosts.dir).unwrap();
        let log = dir.path().join("steps.log");
        std::fs::write(&log, "").unwrap();
        let subscriber = Subscriber::start().await;
        let (name, n) = unique("vnfm-e2e");
        // Neutron allocates 127.x addresses from a subnet without DHCP; the SSH test hosts
        // answer at every one of them.
        let network_prefix = format!("127.77.{}.", n % 250);
        let network_id = cloud
            .create_network(&name, &format!("{network_prefix}0/24"))
            .await;
        let public_key = std::fs::read_to_string(hosts.client_key.with_extension("pub")).unwrap();
        cloud.create_keypair(&name, &public_key).await;
        let (namespace, _) = unique("vnf-b");
        let volume = format!("{namespace}-data");
        kube.create_volume_for(&volume, &namespace, VNF_B_CLAIM)
            .await;
        World {
            cloud,
            kube,
            hosts,
            any_port,
            dir,
            log,
            subscriber,
            profile,
            network_id,
            network_prefix,
            keypair: name,
            namespace,
            volume,
            instances: Mutex::default(),
        }
    }

    /// Notes VNF instance `id`, whose stack the clean-up deletes if the test left it.
    pub fn track(&self, id: &str) {
        self.instances.lock().unwrap().push(id.to_string());
    }

    /// Removes what the test left: its instances' stacks, then the network (once the ports
    /// are gone), the key pair, VNF-B's namespace and volume.
    async fn clean_up(&self) {
        let instances = self.instances.lock().unwrap().clone();
        for id in instances {
            self.cloud.delete_stack(&id).await;
        }
        self.cloud.delete_network(&self.network_id).await;
        self.cloud.delete_keypair(&self.keypair).await;
        self.kube
            .delete(&format!("/api/v1/namespaces/{}", self.namespace))
            .await;
        self.kube
            .delete(&format!("/api/v1/persistentvolumes/{}", self.volume))
            .await;
    }

    /// The test install script, reporting the control plane as the cluster kubeadm made.
    pub fn install_script(&self) -> String {
        use base64::Engine;
        include_str!("../data/e2e/install_k8s_cluster.sh")
            .replace("@LOG@", self.log.to_str().unwrap())
            .replace("@SERVER@", &self.kube.server)
            .replace("@TOKEN@", &self.kube.token)
            .replace("@CA_HASH@", &self.kube.ca_cert_hash())
            .replace(
                "@CA_B64@",
                &base64::engine::general_purpose::STANDARD.encode(self.kube.ca_pem.as_bytes()),
            )
    }

    /// A built plugin library.
    pub fn library(&self, name: &str) -> Vec<u8> {
        let p = self.profile.join(format!("libvnfm_plugin_{name}.so"));
        std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    /// VNF-A's package (the sample, its plugin library added, the test install script).
    pub fn vnf_a_package(&self) -> PathBuf {
        let dest = self.dir.path().join("vnf-a");
        let mut replace = BTreeMap::new();
        replace.insert(
            "Scripts/install_k8s_cluster.sh".to_string(),
            self.install_script().into_bytes(),
        );
        replace.insert(
            "Plugins/libvnfm_plugin_k8s_cluster.so".to_string(),
            self.library("k8s_cluster"),
        );
        package_copy("vnf-a-k8s-cluster", &dest, &replace);
        dest
    }

    /// VNF-B's package (the sample with its plugin library added).
    pub fn vnf_b_package(&self) -> PathBuf {
        let dest = self.dir.path().join("vnf-b");
        let mut replace = BTreeMap::new();
        replace.insert(
            "Plugins/libvnfm_plugin_cnf_check.so".to_string(),
            self.library("cnf_check"),
        );
        package_copy("vnf-b-cnf", &dest, &replace);
        dest
    }

    /// VNF-A's instantiate request: the sample's, with the test cloud's VIM, the test's
    /// network and key pair, the test cloud's image and the SSH settings of the test hosts.
    pub fn vnf_a_request(&self, openstack_vim_id: &str) -> Value {
        let text = std::fs::read_to_string(
            Path::new(ROOT).join("vnfd-samples/vnf-a-k8s-cluster/requests/instantiate.json"),
        )
        .unwrap();
        let mut r: Value = serde_json::from_str(&text).unwrap();
        r["extVirtualLinks"][0]["resourceId"] = json!(self.network_id);
        r["vimConnectionInfo"]["vim1"]["vimId"] = json!(openstack_vim_id);
        for vdu in ["masterNode", "workerNode"] {
            r["additionalParams"]["nfv"]["VDU"][vdu] =
                json!({"key_name": self.keypair, "vcImageId": cloud::TEST_IMAGE});
        }
        let p = &mut r["additionalParams"]["k8s_cluster_installation_param"];
        let key = self.hosts.client_key.to_str().unwrap();
        for node in ["master_node", "worker_node"] {
            p[node]["username"] = json!(self.hosts.user);
            p[node]["ssh_private_key_file"] = json!(key);
        }
        p["ssh_port"] = json!(self.any_port);
        p["remote_dir"] = json!(self.dir.path().join("remote").to_str().unwrap());
        p["ssh_retry_seconds"] = json!(20);
        r
    }

    /// The install steps so far (`<address> <arguments>`); clears the log.
    pub fn steps(&self) -> Vec<String> {
        let text = std::fs::read_to_string(&self.log).unwrap();
        std::fs::write(&self.log, "").unwrap();
        text.lines().map(String::from).collect()
    }

    /// The first word of the steps whose arguments start with `step`.
    pub fn hosts_of(steps: &[String], step: &str) -> Vec<String> {
        let mut v: Vec<String> = steps
            .iter()
            .filter_map(|l| l.split_once(' '))
            .filter(|(_, args)| args.starts_with(step))
            .map(|(h, _)| h.to_string())
            .collect();
        v.sort();
        v
    }

    /// Makes the next worker that joins fail until [`World::fix_broken_host`].
    pub fn break_a_worker(&self) {
        let _ = std::fs::remove_dir(format!("{}.claim", self.log.display()));
        let _ = std::fs::remove_file(format!("{}.broken", self.log.display()));
        std::fs::write(format!("{}.fail-join-worker", self.log.display()), "").unwrap();
    }

    /// The worker [`World::break_a_worker`] broke, if one tried to join.
    pub fn broken_host(&self) -> Option<String> {
        std::fs::read_to_string(format!("{}.broken", self.log.display()))
            .ok()
            .map(|s| s.trim().to_string())
    }

    /// Repairs the broken worker.
    pub fn fix_broken_host(&self) {
        let _ = std::fs::remove_file(format!("{}.fail-join-worker", self.log.display()));
    }

    /// VNF-B's instantiate request: the sample's, with the cluster VIM's id and the test's
    /// namespace.
    pub fn vnf_b_request(&self, cluster_vim_id: &str) -> Value {
        let text = std::fs::read_to_string(
            Path::new(ROOT).join("vnfd-samples/vnf-b-cnf/requests/instantiate.json"),
        )
        .unwrap();
        let mut r: Value = serde_json::from_str(&text).unwrap();
        let conns = r["vimConnectionInfo"].as_object_mut().unwrap();
        for c in conns.values_mut() {
            c["vimId"] = json!(cluster_vim_id);
        }
        r["additionalParams"]["namespace"] = json!(self.namespace);
        r
    }

    /// The addresses VNF-A's VNFCs of `vdu` have on `cpd`.
    pub fn addresses(instance: &Value, vdu: &str, cpd: &str) -> Vec<String> {
        let mut out = Vec::new();
        for v in instance["instantiatedVnfInfo"]["vnfcResourceInfo"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|v| v["vduId"] == vdu)
        {
            for cp in v["vnfcCpInfo"].as_array().into_iter().flatten() {
                if cp["cpdId"] != cpd {
                    continue;
                }
                for p in cp["cpProtocolInfo"].as_array().into_iter().flatten() {
                    for a in p["ipOverEthernet"]["ipAddresses"]
                        .as_array()
                        .into_iter()
                        .flatten()
                    {
                        for addr in a["addresses"].as_array().into_iter().flatten() {
                            out.push(addr.as_str().unwrap().to_string());
                        }
                    }
                }
            }
        }
        out.sort();
        out
    }
}

/// The package directory `dir` as a zip archive.
pub fn zip_dir(dir: &Path) -> Vec<u8> {
    vnfm::csar::zip_directory(dir).expect("zip the package directory")
}
