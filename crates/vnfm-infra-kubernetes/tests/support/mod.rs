//! Fixtures of the driver tests: the emulated API server, VIM connections to it, corpus
//! packages read from disk, and infrastructure requests.

#![allow(dead_code)]

pub mod real;

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use vnfm_descriptor::Vnfd;
use vnfm_driver_api::{
    ArtifactSource, DriverError, InfraOutcome, InfraRequest, InfraStep, ResolvedVim, RunControl,
    execute,
};
use vnfm_infra_kubernetes::KubernetesDriver;
use vnfm_kube_emulator::{Emulator, EmulatorConfig, LogEntry};
use vnfm_types::{LcmOperationType, OperationParams, VnfInstance, VnfLcmOpOccId};

/// Installs the ring provider (the only rustls provider of the build).
pub fn crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

pub async fn emulator() -> Emulator {
    crypto();
    Emulator::start(EmulatorConfig::default())
        .await
        .expect("emulator")
}

/// Tacker's sample package `name` in the corpus.
pub fn corpus_dir(name: &str) -> PathBuf {
    vnfm_test_env::corpus("tacker").join(name)
}

/// Package files under a directory, read by package-relative path.
#[derive(Debug, Clone)]
pub struct DirArtifacts(pub PathBuf);

impl ArtifactSource for DirArtifacts {
    fn read(&self, path: &str) -> std::io::Result<Vec<u8>> {
        let rel = Path::new(path);
        if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("`{path}` is not a package path"),
            ));
        }
        std::fs::read(self.0.join(rel))
    }
}

/// Reads a package directory's VNFD with `vnfm_tosca::load`.
pub fn load_vnfd(root: &Path) -> Vnfd {
    fn add(dir: &Path, root: &Path, out: &mut vnfm_tosca::MemFiles) {
        for e in std::fs::read_dir(dir).expect("package directory") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                add(&p, root, out);
            } else {
                let rel = p
                    .strip_prefix(root)
                    .expect("under root")
                    .to_string_lossy()
                    .replace('\\', "/");
                out.files.insert(rel, std::fs::read(&p).expect("file"));
            }
        }
    }
    let meta = std::fs::read_to_string(root.join("TOSCA-Metadata/TOSCA.meta")).expect("TOSCA.meta");
    let entry = meta
        .lines()
        .find_map(|l| l.strip_prefix("Entry-Definitions:"))
        .expect("Entry-Definitions")
        .trim()
        .to_string();
    let mut files = vnfm_tosca::MemFiles::new(entry);
    add(root, root, &mut files);
    let loaded = vnfm_tosca::load(&files);
    assert!(
        !loaded.has_errors(),
        "{}: {:#?}",
        root.display(),
        loaded.diagnostics
    );
    loaded
        .descriptor
        .and_then(|d| d.as_vnfd().cloned())
        .expect("a VNFD")
}

pub fn vim_info(emu: &Emulator, token: &str) -> Value {
    json!({
        "vimId": "vim-k8s",
        "vimType": "ETSINFV.KUBERNETES.V_1",
        "interfaceInfo": {"endpoint": emu.url()},
        "accessInfo": {"bearer_token": token}
    })
}

pub fn vim(emu: &Emulator) -> ResolvedVim {
    ResolvedVim::new(
        "vim1",
        serde_json::from_value(vim_info(emu, &emu.token())).expect("vim"),
    )
}

pub fn instance(id: &str, vnfd: &Vnfd) -> VnfInstance {
    serde_json::from_value(json!({
        "id": id, "vnfdId": vnfd.descriptor_id, "vnfProvider": vnfd.provider,
        "vnfProductName": vnfd.product_name, "vnfSoftwareVersion": vnfd.software_version,
        "vnfdVersion": vnfd.descriptor_version, "vnfInstanceName": "cnf-test",
        "instantiationState": "NOT_INSTANTIATED", "_links": {"self": {"href": format!("/i/{id}")}}
    }))
    .expect("instance")
}

/// A request against the driver; `params` are the operation's additionalParams.
pub struct Call {
    pub vnfd: Arc<Vnfd>,
    pub flavour: String,
    pub vims: Vec<ResolvedVim>,
    pub files: Arc<dyn ArtifactSource>,
    pub instance: VnfInstance,
    pub state: Value,
}

impl Call {
    pub fn new(vnfd: Vnfd, files: Arc<dyn ArtifactSource>, vim: ResolvedVim, id: &str) -> Call {
        let flavour = vnfd
            .flavours
            .first()
            .map(|f| f.id.clone())
            .unwrap_or_default();
        let instance = instance(id, &vnfd);
        Call {
            vnfd: Arc::new(vnfd),
            flavour,
            vims: vec![vim],
            files,
            instance,
            state: Value::Null,
        }
    }

    pub fn request(&self, op: LcmOperationType, step: InfraStep, request: Value) -> InfraRequest {
        let request = match op {
            LcmOperationType::Instantiate => {
                OperationParams::Instantiate(serde_json::from_value(request).expect("req"))
            }
            LcmOperationType::Terminate => {
                OperationParams::Terminate(serde_json::from_value(request).expect("req"))
            }
            LcmOperationType::Heal => {
                OperationParams::Heal(serde_json::from_value(request).expect("req"))
            }
            LcmOperationType::Scale => {
                OperationParams::Scale(serde_json::from_value(request).expect("req"))
            }
            LcmOperationType::ChangeVnfpkg => {
                OperationParams::ChangeVnfpkg(serde_json::from_value(request).expect("req"))
            }
            LcmOperationType::Operate => {
                OperationParams::Operate(serde_json::from_value(request).expect("req"))
            }
            LcmOperationType::ChangeFlavour => {
                OperationParams::ChangeFlavour(serde_json::from_value(request).expect("req"))
            }
            _ => OperationParams::Other(Default::default()),
        };
        InfraRequest {
            op_occ_id: VnfLcmOpOccId::new("op-1"),
            operation: op,
            step,
            request,
            instance: self.instance.clone(),
            vnfd: self.vnfd.clone(),
            flavour_id: self.flavour.clone(),
            vims: self.vims.clone(),
            artifacts: self.files.clone(),
            driver_state: self.state.clone(),
            grant: None,
            grant_request: None,
            restored_package: None,
            control: RunControl::with_timeout(Duration::from_secs(60)),
        }
    }

    /// Runs a step; on success records the outcome in the instance, as the core does.
    pub async fn run(
        &mut self,
        driver: &KubernetesDriver,
        op: LcmOperationType,
        step: InfraStep,
        request: Value,
    ) -> Result<InfraOutcome, DriverError> {
        let req = self.request(op, step, request);
        let out = execute(driver, &req).await?;
        self.record(&out);
        Ok(out)
    }

    pub fn record(&mut self, out: &InfraOutcome) {
        self.state = out.driver_state.clone();
        let info = if out.resources.vnfc_resource_info.is_empty()
            && out.resources.virtual_storage_resource_info.is_empty()
            && out.driver_state.is_null()
        {
            Value::Null
        } else {
            json!({
                "flavourId": self.flavour, "vnfState": "STARTED", "extCpInfo": [],
                "vnfcResourceInfo": out.resources.vnfc_resource_info,
                "vnfcInfo": out.resources.vnfc_info,
                "virtualStorageResourceInfo": out.resources.virtual_storage_resource_info,
            })
        };
        self.instance.instantiated_vnf_info = serde_json::from_value(info).expect("info");
    }
}

/// A driver with short readiness and deletion budgets (tests fail fast). Deletion gets 90 s: a
/// custom resource deleted in the foreground keeps its `foregroundDeletion` finalizer until the
/// controller manager's garbage collector watches its kind, which it learns from discovery
/// every 30 s, so a kind created moments before may wait that long.
pub fn driver() -> KubernetesDriver {
    KubernetesDriver::new()
        .with_ready_timeout(Duration::from_secs(20))
        .with_delete_timeout(Duration::from_secs(90))
}

/// `Kind/ns/name` of the successful requests with `verb`, without the driver's
/// namespace bookkeeping.
pub fn objects(log: &[LogEntry], verb: &str) -> Vec<String> {
    log.iter()
        .filter(|e| e.verb == verb && e.code < 300)
        .map(LogEntry::object)
        .collect()
}

/// `(group, kind)` of a log entry.
pub fn group_kind(e: &LogEntry) -> (String, String) {
    let group = e
        .api_version
        .split_once('/')
        .map_or("", |(g, _)| g)
        .to_string();
    (group, e.kind.clone())
}

/// Pods per VDU in an outcome.
pub fn pods_per_vdu(out: &InfraOutcome) -> std::collections::BTreeMap<String, usize> {
    let mut m = std::collections::BTreeMap::new();
    for v in &out.resources.vnfc_resource_info {
        *m.entry(v.vdu_id.clone()).or_insert(0) += 1;
    }
    m
}

/// The Helm SDK library of `VNFM_HELM_C_LIB` (a test that calls this needs `helm`).
pub fn helm_library() -> vnfm_infra_kubernetes::HelmLibrary {
    vnfm_infra_kubernetes::HelmLibrary::load(vnfm_test_env::var("VNFM_HELM_C_LIB"))
        .expect("libhelm_c loads")
}
