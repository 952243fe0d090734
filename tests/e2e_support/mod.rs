//! The world of the VNF-A / VNF-B end-to-end tests: real Keystone + Heat
//! (`scripts/test-env/openstack.sh`), the SSH server that answers at every loopback address
//! (`scripts/test-env/sshd.sh`), the Kubernetes API emulation, the plugin libraries built from
//! this workspace, the sample packages with the test install script, and a notification
//! subscriber on loopback.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};

use axum::routing::post;
use serde_json::{Value, json};
use sha2::Digest;
use vnfm_kube_emulator::{Emulator, EmulatorConfig, TlsIdentity};
use vnfm_ssh::testing::TestHosts;

/// The OpenStack VIM type.
pub const OPENSTACK: &str = "ETSINFV.OPENSTACK_KEYSTONE.V_3";
/// The Kubernetes VIM type.
pub const KUBERNETES: &str = "ETSINFV.KUBERNETES.V_1";
/// Where the workspace is.
pub const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The test cloud's Keystone and credentials, from the variables `openstack.sh start` prints.
#[derive(Debug, Clone)]
pub struct Cloud {
    pub keystone_url: String,
    pub username: String,
    pub password: String,
    pub project: String,
    pub project_domain: String,
    pub user_domain: String,
    pub region: String,
}

impl Cloud {
    /// The test cloud, for tests that carry `#[vnfm_test_env::needs(openstack)]` (panics when
    /// its variables are not set); installs the ring provider.
    pub fn from_env() -> Cloud {
        let var = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.into());
        let cloud = Cloud {
            keystone_url: vnfm_test_env::var("VNFM_TEST_KEYSTONE_URL"),
            username: var("VNFM_TEST_OS_USERNAME", "vnfm"),
            password: vnfm_test_env::var("VNFM_TEST_OS_PASSWORD"),
            project: var("VNFM_TEST_OS_PROJECT", "vnfm"),
            project_domain: var("VNFM_TEST_OS_PROJECT_DOMAIN", "Default"),
            user_domain: var("VNFM_TEST_OS_USER_DOMAIN", "Default"),
            region: var("VNFM_TEST_OS_REGION", "RegionOne"),
        };
        let _ = rustls::crypto::ring::default_provider().install_default();
        cloud
    }

    /// The stack of VNF instance `instance_id` and its resources down to the nested stacks'
    /// (`None` when Heat has no such stack), asked through the driver's own Keystone session
    /// and Heat client.
    pub async fn stack(
        &self,
        instance_id: &str,
    ) -> Option<(
        vnfm_infra_openstack::heat::Stack,
        Vec<vnfm_infra_openstack::heat::HeatResource>,
    )> {
        use vnfm_driver_api::{ResolvedVim, RunControl};
        use vnfm_infra_openstack::heat::Heat;
        use vnfm_infra_openstack::{DriverConfig, OpenStackDriver};
        let driver = OpenStackDriver::new(DriverConfig::default());
        let vim = ResolvedVim::new("vim1", serde_json::from_value(self.vim()).unwrap());
        let session = driver.session(&vim).unwrap();
        let control = RunControl::with_timeout(std::time::Duration::from_secs(60));
        let heat = Heat::connect(&session, &control, driver.config().poll.clone())
            .await
            .unwrap();
        let stack = heat.find(&driver.stack_name(instance_id)).await.unwrap()?;
        let resources = heat
            .resources(&stack.reference(), driver.config().nested_depth)
            .await
            .unwrap();
        Some((stack, resources))
    }

    /// The VIM registration of the test cloud (password authentication).
    pub fn vim(&self) -> Value {
        json!({
            "vimType": OPENSTACK,
            "interfaceInfo": {"endpoint": self.keystone_url},
            "accessInfo": {
                "username": self.username, "password": self.password,
                "project": self.project, "projectDomain": self.project_domain,
                "userDomain": self.user_domain, "region": self.region
            }
        })
    }

    /// Whether Heat still has the stack of VNF instance `instance_id` (asked through the
    /// driver's own Keystone session and Heat client).
    pub async fn stack_exists(&self, instance_id: &str) -> bool {
        use vnfm_driver_api::{ResolvedVim, RunControl};
        use vnfm_infra_openstack::heat::Heat;
        use vnfm_infra_openstack::{DriverConfig, OpenStackDriver};
        let driver = OpenStackDriver::new(DriverConfig::default());
        let vim = ResolvedVim::new("vim1", serde_json::from_value(self.vim()).unwrap());
        let session = driver.session(&vim).unwrap();
        let control = RunControl::with_timeout(std::time::Duration::from_secs(60));
        let heat = Heat::connect(&session, &control, driver.config().poll.clone())
            .await
            .unwrap();
        heat.find(&driver.stack_name(instance_id))
            .await
            .unwrap()
            .is_some()
    }
}

/// Builds (once per test process) the plugin libraries, the isolated plugin runner and the
/// `vnfm` binary with the test's own cargo, target directory and profile.
pub fn build_binaries() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().unwrap();
            let profile = exe.parent().and_then(Path::parent).unwrap().to_path_buf();
            let target = profile.parent().unwrap().to_path_buf();
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let mut cmd = Command::new(cargo);
            cmd.args(["build", "--quiet", "--target-dir"])
                .arg(&target)
                .current_dir(ROOT);
            if profile.file_name().is_some_and(|n| n == "release") {
                cmd.arg("--release");
            }
            for p in [
                "vnfm-plugin-k8s-cluster",
                "vnfm-plugin-cnf-check",
                "vnfm-plugin-host",
                "vnfm-cli",
            ] {
                cmd.arg("-p").arg(p);
            }
            let status = cmd.status().expect("cargo runs");
            assert!(status.success(), "building the plugins and binaries failed");
            profile
        })
        .clone()
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
/// `#[vnfm_test_env::needs(openstack, sshd, helm)]`.
pub struct World {
    /// The CA that issued the emulated API server's certificate (what kubeadm's CA is).
    pub ca_pem: String,
    pub cloud: Cloud,
    pub hosts: TestHosts,
    pub any_port: u16,
    pub emulator: Emulator,
    pub dir: tempfile::TempDir,
    /// The install script's step log: `<address> <arguments>` per line.
    pub log: PathBuf,
    pub subscriber: Subscriber,
    pub profile: PathBuf,
}

impl World {
    pub async fn new() -> World {
        let cloud = Cloud::from_env();
        let hosts = TestHosts::from_env();
        let Some((any_port, _)) = hosts.any_address.clone() else {
            panic!(
                "{} has no any_host: sshd.sh is outdated",
                hosts.dir.display()
            );
        };
        let profile = build_binaries();
        let (ca_pem, identity) = cluster_certificates();
        let emulator = Emulator::start_tls(
            "127.0.0.1:0".parse().unwrap(),
            EmulatorConfig::default(),
            &identity,
        )
        .await
        .unwrap();
        let dir = tempfile::tempdir_in(&hosts.dir).unwrap();
        let log = dir.path().join("steps.log");
        std::fs::write(&log, "").unwrap();
        let subscriber = Subscriber::start().await;
        World {
            ca_pem,
            cloud,
            hosts,
            any_port,
            emulator,
            dir,
            log,
            subscriber,
            profile,
        }
    }

    /// The test install script, reporting the emulator as the cluster.
    pub fn install_script(&self) -> String {
        use base64::Engine;
        let ca = self.ca_pem.as_bytes();
        include_str!("../data/e2e/install_k8s_cluster.sh")
            .replace("@LOG@", self.log.to_str().unwrap())
            .replace("@SERVER@", &self.emulator.url())
            .replace("@TOKEN@", &self.emulator.token())
            .replace(
                "@CA_B64@",
                &base64::engine::general_purpose::STANDARD.encode(ca),
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

    /// VNF-A's instantiate request: the sample's, with the test cloud's VIM, a network, the
    /// SSH settings of the test hosts and the flavour `flavour`.
    pub fn vnf_a_request(&self, openstack_vim_id: &str) -> Value {
        let text = std::fs::read_to_string(
            Path::new(ROOT).join("vnfd-samples/vnf-a-k8s-cluster/requests/instantiate.json"),
        )
        .unwrap();
        let mut r: Value = serde_json::from_str(&text).unwrap();
        r["extVirtualLinks"][0]["resourceId"] = json!("net-k8s-nodes");
        r["vimConnectionInfo"]["vim1"]["vimId"] = json!(openstack_vim_id);
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

    /// VNF-B's instantiate request: the sample's, with the cluster VIM's id.
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

/// A cluster CA and the API server's certificate for 127.0.0.1 issued by it.
pub fn cluster_certificates() -> (String, TlsIdentity) {
    use openssl::asn1::Asn1Time;
    use openssl::bn::BigNum;
    use openssl::ec::{EcGroup, EcKey};
    use openssl::hash::MessageDigest;
    use openssl::nid::Nid;
    use openssl::pkey::PKey;
    use openssl::x509::extension::{
        BasicConstraints, ExtendedKeyUsage, KeyUsage, SubjectAlternativeName,
    };
    use openssl::x509::{X509Builder, X509NameBuilder};

    let key = || {
        let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).unwrap();
        PKey::from_ec_key(EcKey::generate(&group).unwrap()).unwrap()
    };
    let name = |cn: &str| {
        let mut n = X509NameBuilder::new().unwrap();
        n.append_entry_by_text("CN", cn).unwrap();
        n.build()
    };
    let ca_key = key();
    let mut ca = X509Builder::new().unwrap();
    ca.set_version(2).unwrap();
    ca.set_serial_number(&BigNum::from_u32(1).unwrap().to_asn1_integer().unwrap())
        .unwrap();
    ca.set_subject_name(&name("kubernetes")).unwrap();
    ca.set_issuer_name(&name("kubernetes")).unwrap();
    ca.set_pubkey(&ca_key).unwrap();
    ca.set_not_before(&Asn1Time::days_from_now(0).unwrap())
        .unwrap();
    ca.set_not_after(&Asn1Time::days_from_now(2).unwrap())
        .unwrap();
    ca.append_extension(BasicConstraints::new().critical().ca().build().unwrap())
        .unwrap();
    ca.append_extension(
        KeyUsage::new()
            .critical()
            .key_cert_sign()
            .crl_sign()
            .build()
            .unwrap(),
    )
    .unwrap();
    ca.sign(&ca_key, MessageDigest::sha256()).unwrap();
    let ca = ca.build();

    let server_key = key();
    let mut server = X509Builder::new().unwrap();
    server.set_version(2).unwrap();
    server
        .set_serial_number(&BigNum::from_u32(2).unwrap().to_asn1_integer().unwrap())
        .unwrap();
    server.set_subject_name(&name("kube-apiserver")).unwrap();
    server.set_issuer_name(ca.subject_name()).unwrap();
    server.set_pubkey(&server_key).unwrap();
    server
        .set_not_before(&Asn1Time::days_from_now(0).unwrap())
        .unwrap();
    server
        .set_not_after(&Asn1Time::days_from_now(2).unwrap())
        .unwrap();
    let san = SubjectAlternativeName::new()
        .ip("127.0.0.1")
        .dns("localhost")
        .build(&server.x509v3_context(Some(&ca), None))
        .unwrap();
    server.append_extension(san).unwrap();
    server
        .append_extension(ExtendedKeyUsage::new().server_auth().build().unwrap())
        .unwrap();
    server.sign(&ca_key, MessageDigest::sha256()).unwrap();
    let server = server.build();
    let pem = |b: Vec<u8>| String::from_utf8(b).unwrap();
    let ca_pem = pem(ca.to_pem().unwrap());
    (
        ca_pem,
        TlsIdentity {
            cert_chain_pem: pem(server.to_pem().unwrap()),
            key_pem: pem(server_key.private_key_to_pem_pkcs8().unwrap()),
        },
    )
}
