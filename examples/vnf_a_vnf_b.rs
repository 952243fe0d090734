//! The headline scenario from Rust: VNF-A builds a Kubernetes cluster on OpenStack VMs, VNF-B
//! runs on it; then both are terminated in the right order. `docs/embedding.md` walks through
//! it.
//!
//! ```text
//! cargo run --example vnf_a_vnf_b -- <VNF-A package> <VNF-A request.json> \
//!     <VNF-B package> <VNF-B request.json>
//! ```
//!
//! The packages are directories or CSAR zips with their management-driver libraries inside
//! (see `vnfd-samples/README.md`). VNF-A's request names the OpenStack VIM `openstack` (its
//! `vimId` is replaced by the one this program registers); VNF-B's request gets the cluster
//! VIM's id. The OpenStack credentials come from the usual variables: `OS_AUTH_URL`,
//! `OS_USERNAME`, `OS_PASSWORD`, `OS_PROJECT_NAME`, `OS_USER_DOMAIN_NAME`,
//! `OS_PROJECT_DOMAIN_NAME`, `OS_REGION_NAME`. Optional: `VNFM_STORE_URL` (default an SQLite
//! file in a temporary directory), `VNFM_HEAT_ENVIRONMENT` (a Heat environment file sent with
//! every stack; a cloud with Nova and Neutron needs none), `VNFM_HELM_C_LIB` (the Helm SDK library;
//! without it `helm` from PATH renders charts), `VNFM_PLUGIN_RUNNER` (the isolated plugin
//! runner; default `vnfm-plugin-runner` beside this program).
//!
//! It needs real services, as `tests/e2e_vnf_a_vnf_b.rs` runs the same flow on them: an
//! OpenStack cloud with Heat, Nova and Neutron; VNF-A's request naming a network whose port
//! addresses this machine reaches over SSH, and an image, flavour and key pair the cloud has
//! (`additionalParams.nfv.VDU.<vdu>.vcImageId`, `key_name`); VMs that accept the request's
//! login; and an install script in VNF-A's package that leaves a Kubernetes API server behind
//! and reports it (the package's runs kubeadm; the test's reports the control plane of
//! `scripts/test-env/kubernetes.sh`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use vnfm::lcm::types::{LcmOperationStateType, VimId, VnfInstanceId, VnfLcmOpOcc};
use vnfm::lcm::{self, Keyring, Lcm, LcmConfig, MemoryCatalog, VimRegistry};
use vnfm_infra_kubernetes::{HelmLibrary, KubernetesDriver};
use vnfm_infra_openstack::{DriverConfig, OpenStackDriver};
use vnfm_plugin_host::{HostConfig, Isolation, PluginHost};

type Error = Box<dyn std::error::Error>;

/// Waits for an occurrence; fails unless it COMPLETED.
async fn completed(lcm: &Lcm, op: VnfLcmOpOcc) -> Result<(), Error> {
    let done = lcm.wait(&op.id, Duration::from_secs(1800)).await?;
    println!(
        "  {:?} {} -> {:?}",
        done.operation, done.id, done.operation_state
    );
    if done.operation_state != LcmOperationStateType::Completed {
        return Err(format!("{:?} failed: {:?}", done.operation, done.error).into());
    }
    Ok(())
}

fn env(name: &str) -> Result<String, Error> {
    std::env::var(name).map_err(|_| format!("set {name}").into())
}

fn read_json(path: &str) -> Result<Value, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    Ok(serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))?)
}

/// The OpenStack driver, with the Heat environment of `VNFM_HEAT_ENVIRONMENT` if set.
fn openstack_driver() -> Result<OpenStackDriver, Error> {
    let mut config = DriverConfig::default();
    if let Ok(path) = std::env::var("VNFM_HEAT_ENVIRONMENT") {
        config = config.with_environment_file(Path::new(&path))?;
    }
    Ok(OpenStackDriver::new(config))
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [package_a, request_a, package_b, request_b] = &args[..] else {
        return Err("usage: vnf_a_vnf_b <VNF-A package> <VNF-A request.json> <VNF-B package> <VNF-B request.json>".into());
    };
    let dir = tempfile::tempdir()?;
    let url = std::env::var("VNFM_STORE_URL")
        .unwrap_or_else(|_| format!("sqlite://{}", dir.path().join("vnfm.db").display()));

    // Packages: checked (digests, VNFD) and added to the catalog.
    let catalog = MemoryCatalog::new();
    let vnfd_a = lcm::onboard_dir(&catalog, Path::new(package_a))?;
    let vnfd_b = lcm::onboard_dir(&catalog, Path::new(package_b))?;

    // The VNFM: store, VIM registry with Fernet-encrypted secrets, both drivers, the plugin
    // host running the packages' management drivers in child processes.
    let store = vnfm_store_sql::open(&url).await?;
    let keyring = Arc::new(Keyring::from_keys([Keyring::generate_key()])?);
    let registry = Arc::new(VimRegistry::new(
        store.clone(),
        keyring.clone(),
        all_vim_kinds(),
    ));
    let mut kubernetes = KubernetesDriver::new();
    if let Ok(lib) = std::env::var("VNFM_HELM_C_LIB") {
        kubernetes = kubernetes.with_helm(Arc::new(HelmLibrary::load(lib)?));
    }
    let mut plugins =
        HostConfig::new(dir.path().join("plugins")).package_libraries(Isolation::Process);
    if let Ok(runner) = std::env::var("VNFM_PLUGIN_RUNNER") {
        plugins = plugins.runner(PathBuf::from(runner));
    }
    let lcm = lcm::builder()
        .store(store)
        .keyring(keyring)
        .vim_directory(registry.clone())
        .catalog(Arc::new(catalog))
        .infra_driver(Arc::new(openstack_driver()?))
        .infra_driver(Arc::new(kubernetes))
        .mgmt_driver(Arc::new(PluginHost::new(plugins)))
        .config(LcmConfig {
            step_timeout: Duration::from_secs(1800),
            ..LcmConfig::default()
        })
        .build()
        .await?;

    // The operator's OpenStack VIM.
    let openstack = registry
        .create(
            "openstack",
            &serde_json::from_value(json!({
                "vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3",
                "interfaceInfo": {"endpoint": env("OS_AUTH_URL")?},
                "accessInfo": {
                    "username": env("OS_USERNAME")?, "password": env("OS_PASSWORD")?,
                    "project": env("OS_PROJECT_NAME")?,
                    "userDomain": std::env::var("OS_USER_DOMAIN_NAME").unwrap_or("Default".into()),
                    "projectDomain": std::env::var("OS_PROJECT_DOMAIN_NAME").unwrap_or("Default".into()),
                    "region": std::env::var("OS_REGION_NAME").unwrap_or("RegionOne".into())
                }
            }))?,
            None,
        )
        .await?;
    println!("OpenStack VIM {}", openstack.id);

    // VNF-A: VMs, then Kubernetes on them (instantiate_end), registered as a VIM.
    let mut req_a = read_json(request_a)?;
    for conn in req_a["vimConnectionInfo"]
        .as_object_mut()
        .ok_or("VNF-A's request has no vimConnectionInfo")?
        .values_mut()
    {
        if conn["vimType"] == "ETSINFV.OPENSTACK_KEYSTONE.V_3" {
            conn["vimId"] = json!(openstack.id);
        }
    }
    let a = create(&lcm, &vnfd_a, "vnf-a").await?;
    println!("VNF-A {a}: instantiate");
    completed(
        &lcm,
        lcm.instantiate(&a, serde_json::from_value(req_a)?).await?,
    )
    .await?;
    let cluster = lcm
        .get_instance(&a)
        .await?
        .vim_connection_info
        .unwrap_or_default()
        .values()
        .find(|c| c.vim_type == "ETSINFV.KUBERNETES.V_1")
        .and_then(|c| c.vim_id.clone())
        .ok_or("VNF-A registered no Kubernetes VIM")?;
    let view = registry.show(&cluster).await?;
    println!(
        "cluster VIM {} ({}) at {}",
        view.id,
        view.name,
        view.interface_info.unwrap_or_default()["endpoint"]
    );

    // VNF-B on the cluster.
    let mut req_b = read_json(request_b)?;
    for conn in req_b["vimConnectionInfo"]
        .as_object_mut()
        .ok_or("VNF-B's request has no vimConnectionInfo")?
        .values_mut()
    {
        conn["vimId"] = json!(cluster);
    }
    let b = create(&lcm, &vnfd_b, "vnf-b").await?;
    println!("VNF-B {b}: instantiate on {cluster}");
    completed(
        &lcm,
        lcm.instantiate(&b, serde_json::from_value(req_b)?).await?,
    )
    .await?;

    // VNF-A cannot go first.
    let forceful = || serde_json::from_value(json!({"terminationType": "FORCEFUL"}));
    match lcm.terminate(&a, forceful()?).await {
        Err(e) => println!("terminating VNF-A first is refused: {e}"),
        Ok(op) => return Err(format!("terminating VNF-A first was accepted: {}", op.id).into()),
    }

    // Terminate in order; VNF-A's terminate hooks deregister the cluster VIM.
    println!("VNF-B {b}: terminate");
    completed(&lcm, lcm.terminate(&b, forceful()?).await?).await?;
    println!("VNF-A {a}: terminate");
    completed(&lcm, lcm.terminate(&a, forceful()?).await?).await?;
    let gone = registry
        .show(&VimId::new(cluster.to_string()))
        .await
        .is_err();
    println!("cluster VIM deregistered: {gone}");
    lcm.delete_vnf_identifier(&b).await?;
    lcm.delete_vnf_identifier(&a).await?;
    Ok(())
}

async fn create(lcm: &Lcm, vnfd_id: &str, name: &str) -> Result<VnfInstanceId, Error> {
    let vnf = lcm
        .create_vnf_identifier(serde_json::from_value(
            json!({"vnfdId": vnfd_id, "vnfInstanceName": name}),
        )?)
        .await?;
    Ok(vnf.id)
}

/// The VIM kinds of the OpenStack and Kubernetes drivers.
fn all_vim_kinds() -> vnfm_driver_api::VimKinds {
    vnfm_driver_api::VimKinds::new()
        .with(std::sync::Arc::new(vnfm_infra_openstack::OpenStackVimKind))
        .with(std::sync::Arc::new(
            vnfm_infra_kubernetes::KubernetesVimKind,
        ))
}
