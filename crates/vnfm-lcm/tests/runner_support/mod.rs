//! Fixtures of the runner tests: VNFDs (corpus, the hello-vnf sample, a hand-written one with
//! hooks), an `Lcm` on a temporary SQLite file with the in-memory drivers, and readers for the
//! outbox and the journal.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use vnfm_descriptor::Vnfd;
use vnfm_driver_api::memory::{
    MEMORY_VIM_TYPE, MemArtifacts, MemoryInfraDriver, RecordingMgmtDriver,
};
use vnfm_driver_api::{ResolvedVim, VimRegistration};
use vnfm_lcm::ports::{SealedVim, VimDirectory};
use vnfm_lcm::runner::Clock;
use vnfm_lcm::testing::SingleCallbackRouter;
use vnfm_lcm::{InlineVimDirectory, Lcm, LcmConfig, LcmError, MemoryCatalog};
use vnfm_store::{JournalEntry, StepOutcome, Store, Timestamp};
use vnfm_types::{
    CreateVnfRequest, LcmOperationStateType, VimConnectionInfo, VimId, VnfInstance, VnfInstanceId,
    VnfLcmOpOcc,
};

/// The callback every notification is routed to.
pub const CALLBACK: &str = "http://127.0.0.1:9/notify";

/// Parses a JSON fixture into a request type.
pub fn req<T: DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("request fixture")
}

/// `vimConnectionInfo` naming the in-memory VIM.
pub fn memory_vims() -> Value {
    json!({"vim1": {"vimType": MEMORY_VIM_TYPE, "interfaceInfo": {"endpoint": "mem://"}}})
}

/// Reads a package directory's VNFD with `vnfm_tosca::load`.
pub fn load_dir(root: &Path) -> Vnfd {
    fn add(dir: &Path, root: &Path, out: &mut vnfm_tosca::MemFiles) {
        for e in std::fs::read_dir(dir).expect("package directory") {
            let p = e.expect("directory entry").path();
            if p.is_dir() {
                add(&p, root, out);
            } else {
                let rel = p
                    .strip_prefix(root)
                    .expect("under root")
                    .to_string_lossy()
                    .replace('\\', "/");
                out.files
                    .insert(rel, std::fs::read(&p).expect("package file"));
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

/// A Tacker corpus package's VNFD.
pub fn corpus_vnfd(name: &str) -> Vnfd {
    load_dir(&vnfm_test_env::corpus("tacker").join(name))
}

/// The `vnfd-samples/hello-vnf` VNFD.
pub fn hello_vnfd() -> Vnfd {
    load_dir(&PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../vnfd-samples/hello-vnf"
    )))
}

/// A VNFD (`vnfd-hooks`) whose flavour `simple` binds hooks around instantiate, scale, heal,
/// terminate, modify-information, change-external-connectivity and change-flavour, with a
/// rollback pair for instantiate; flavour `big` binds `change_flavour_end`.
pub fn hooks_vnfd() -> Vnfd {
    let vdus = json!([
        {"id": "VDU1", "name": "VDU1", "kind": "compute", "nodeType": "tosca.nodes.nfv.Vdu.Compute",
         "minInstances": 1, "maxInstances": 3, "initialDelta": 1},
        {"id": "VDU2", "name": "VDU2", "kind": "compute", "nodeType": "tosca.nodes.nfv.Vdu.Compute",
         "minInstances": 1, "maxInstances": 1, "initialDelta": 1}
    ]);
    let aspects = json!([{
        "id": "VDU1_scale", "maxScaleLevel": 2, "stepDeltas": ["delta_1"],
        "vduDeltas": {"VDU1": {"delta_1": 1}}
    }]);
    let artifact = json!([{
        "name": "mgmt", "owner": "VNF", "artifactType": "tosca.artifacts.Implementation",
        "file": "Scripts/mgmt.so", "sha256": "ab12"
    }]);
    let hook = |op: &str| json!({"operation": op, "artifact": "mgmt"});
    serde_json::from_value(json!({
        "descriptorId": "vnfd-hooks", "descriptorVersion": "1.0", "provider": "Acme",
        "productName": "Hooked", "softwareVersion": "1.0",
        "toscaDefinitionsVersion": "tosca_simple_yaml_1_2", "vnfNodeType": "acme.VNF",
        "entryDefinitions": "Definitions/top.yaml",
        "flavours": [
            {
                "id": "simple", "file": "Definitions/df_simple.yaml",
                "vdus": vdus,
                "extCps": [{"id": "VDU1_CP1", "vdu": "VDU1"}],
                "virtualLinks": [{"id": "internalVL1"}],
                "scalingAspects": aspects,
                "instantiationLevels": [
                    {"id": "level_1", "scaleLevels": {"VDU1_scale": 0}},
                    {"id": "level_2", "scaleLevels": {"VDU1_scale": 2}, "vduInstances": {"VDU1": 3, "VDU2": 1}}
                ],
                "defaultInstantiationLevel": "level_1",
                "lcmHooks": [
                    hook("instantiate_start"), hook("instantiate_end"),
                    hook("instantiate_rollback_start"), hook("instantiate_rollback_end"),
                    hook("scale_start"), hook("scale_end"),
                    hook("heal_start"), hook("terminate_end"),
                    hook("modify_information_start"),
                    hook("change_external_connectivity_end"),
                    hook("change_flavour_start")
                ],
                "artifacts": artifact
            },
            {
                "id": "big", "file": "Definitions/df_big.yaml",
                "vdus": vdus,
                "scalingAspects": aspects,
                "lcmHooks": [hook("change_flavour_end")],
                "artifacts": artifact
            }
        ]
    }))
    .expect("fixture VNFD")
}

/// A VIM directory that takes `delay` to resolve each connection (a slow VIM registry).
pub struct SlowVims(pub Duration);

#[async_trait]
impl VimDirectory for SlowVims {
    async fn resolve(
        &self,
        key: &str,
        info: &VimConnectionInfo,
        owner: &VnfInstanceId,
    ) -> Result<ResolvedVim, LcmError> {
        tokio::time::sleep(self.0).await;
        InlineVimDirectory.resolve(key, info, owner).await
    }

    async fn register(
        &self,
        r: &VimRegistration,
        by: &VnfInstanceId,
    ) -> Result<VimConnectionInfo, LcmError> {
        InlineVimDirectory.register(r, by).await
    }

    async fn deregister(&self, id: &VimId) -> Result<(), LcmError> {
        InlineVimDirectory.deregister(id).await
    }

    async fn seal_inline(
        &self,
        key: &str,
        info: &VimConnectionInfo,
        owner: &VnfInstanceId,
        current: Option<&VimConnectionInfo>,
    ) -> Result<SealedVim, LcmError> {
        InlineVimDirectory
            .seal_inline(key, info, owner, current)
            .await
    }
}

/// A VIM directory that registers VIMs by returning a reference to them (and records what it
/// was asked).
#[derive(Default)]
pub struct RecordingVims {
    pub registered: std::sync::Mutex<Vec<String>>,
    pub deregistered: std::sync::Mutex<Vec<String>>,
}

#[async_trait]
impl VimDirectory for RecordingVims {
    async fn resolve(
        &self,
        key: &str,
        info: &VimConnectionInfo,
        _owner: &VnfInstanceId,
    ) -> Result<ResolvedVim, LcmError> {
        Ok(ResolvedVim::new(key, info.clone()))
    }

    async fn register(
        &self,
        r: &VimRegistration,
        _: &VnfInstanceId,
    ) -> Result<VimConnectionInfo, LcmError> {
        self.registered.lock().unwrap().push(r.name.clone());
        Ok(VimConnectionInfo {
            vim_id: Some(VimId::new(format!("vim-{}", r.name))),
            vim_type: r.info.vim_type.clone(),
            interface_info: None,
            access_info: None,
            extra: None,
        })
    }

    async fn deregister(&self, id: &VimId) -> Result<(), LcmError> {
        self.deregistered.lock().unwrap().push(id.to_string());
        Ok(())
    }

    async fn seal_inline(
        &self,
        _: &str,
        info: &VimConnectionInfo,
        _: &VnfInstanceId,
        _: Option<&VimConnectionInfo>,
    ) -> Result<SealedVim, LcmError> {
        Ok(SealedVim {
            reference: info.clone(),
            created: false,
        })
    }
}

/// How to build an [`Env`].
pub struct EnvBuilder {
    pub infra_delay: Duration,
    pub mgmt_delay: Duration,
    pub vims: Option<Arc<dyn VimDirectory>>,
    pub config: LcmConfig,
    pub store_url: Option<String>,
    pub vnfds: Vec<Vnfd>,
    pub nfvo: Option<Arc<dyn vnfm_driver_api::Nfvo>>,
    pub faults: Option<Arc<dyn vnfm_driver_api::FaultSink>>,
    pub indicators: Option<Arc<dyn vnfm_driver_api::IndicatorSink>>,
}

impl EnvBuilder {
    pub fn infra_delay(mut self, d: Duration) -> Self {
        self.infra_delay = d;
        self
    }

    pub fn mgmt_delay(mut self, d: Duration) -> Self {
        self.mgmt_delay = d;
        self
    }

    pub fn vims(mut self, v: Arc<dyn VimDirectory>) -> Self {
        self.vims = Some(v);
        self
    }

    pub fn config(mut self, f: impl FnOnce(LcmConfig) -> LcmConfig) -> Self {
        self.config = f(self.config);
        self
    }

    pub fn store_url(mut self, url: impl Into<String>) -> Self {
        self.store_url = Some(url.into());
        self
    }

    pub fn nfvo(mut self, n: Arc<dyn vnfm_driver_api::Nfvo>) -> Self {
        self.nfvo = Some(n);
        self
    }

    pub fn hook_sinks(
        mut self,
        faults: Arc<dyn vnfm_driver_api::FaultSink>,
        indicators: Arc<dyn vnfm_driver_api::IndicatorSink>,
    ) -> Self {
        self.faults = Some(faults);
        self.indicators = Some(indicators);
        self
    }

    pub fn vnfd(mut self, v: Vnfd) -> Self {
        self.vnfds.push(v);
        self
    }

    pub async fn build(self) -> Env {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = self
            .store_url
            .unwrap_or_else(|| format!("sqlite://{}", dir.path().join("lcm.db").display()));
        let store = vnfm_store_sql::open(&url).await.expect("store");
        let infra = Arc::new(MemoryInfraDriver::new().with_delay(self.infra_delay));
        let mgmt = Arc::new(RecordingMgmtDriver::new().with_delay(self.mgmt_delay));
        let catalog = MemoryCatalog::new();
        let files = Arc::new(MemArtifacts::new().with("Scripts/mgmt.so", b"plugin".to_vec()));
        for v in self.vnfds {
            catalog.insert(v, files.clone());
        }
        let mut builder = Lcm::builder(
            store.clone(),
            self.vims.unwrap_or_else(|| Arc::new(InlineVimDirectory)),
            Arc::new(SingleCallbackRouter::new("sub-1", CALLBACK)),
            Arc::new(catalog.clone()),
        );
        if let Some(faults) = self.faults {
            builder = builder.fault_sink(faults);
        }
        if let Some(indicators) = self.indicators {
            builder = builder.indicator_sink(indicators);
        }
        let lcm = builder
            .infra_driver(infra.clone())
            .mgmt_driver(mgmt.clone())
            .nfvo(
                self.nfvo
                    .unwrap_or_else(|| Arc::new(vnfm_driver_api::LocalNfvo)),
            )
            .config(self.config)
            .build();
        Env {
            lcm,
            store,
            infra,
            mgmt,
            catalog,
            _dir: dir,
        }
    }
}

/// An `Lcm` on a fresh SQLite file, with a memory infrastructure driver, a recording
/// management driver and every notification routed to [`CALLBACK`].
pub struct Env {
    pub lcm: Lcm,
    pub store: Arc<dyn Store>,
    pub infra: Arc<MemoryInfraDriver>,
    pub mgmt: Arc<RecordingMgmtDriver>,
    pub catalog: MemoryCatalog,
    _dir: tempfile::TempDir,
}

/// How long tests wait for an occurrence.
pub const WAIT: Duration = Duration::from_secs(20);

impl Env {
    pub fn builder() -> EnvBuilder {
        EnvBuilder {
            infra_delay: Duration::ZERO,
            mgmt_delay: Duration::ZERO,
            vims: None,
            config: LcmConfig::default(),
            store_url: None,
            vnfds: vec![hooks_vnfd()],
            faults: None,
            indicators: None,
            nfvo: None,
        }
    }

    pub async fn with(vnfds: Vec<Vnfd>) -> Env {
        let mut b = Env::builder();
        b.vnfds = vnfds;
        b.build().await
    }

    pub async fn create(&self, vnfd_id: &str) -> VnfInstance {
        self.lcm
            .create_vnf_identifier(CreateVnfRequest {
                vnfd_id: vnfd_id.into(),
                vnf_instance_name: Some("test".into()),
                vnf_instance_description: None,
                metadata: None,
            })
            .await
            .expect("create")
    }

    /// Waits for `occ` to come to rest.
    pub async fn done(&self, occ: &VnfLcmOpOcc) -> VnfLcmOpOcc {
        self.lcm.wait(&occ.id, WAIT).await.expect("wait")
    }

    /// Instantiates `id` in flavour `simple` on the in-memory VIMs and waits for it to
    /// complete.
    pub async fn instantiated(&self, id: &VnfInstanceId) -> VnfLcmOpOcc {
        let op = self
            .lcm
            .instantiate(
                id,
                req(json!({"flavourId": "simple", "vimConnectionInfo": memory_vims()})),
            )
            .await
            .unwrap();
        self.completed(op).await
    }

    /// Waits for `occ` and asserts it COMPLETED.
    pub async fn completed(&self, occ: VnfLcmOpOcc) -> VnfLcmOpOcc {
        let done = self.done(&occ).await;
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

    pub async fn instance(&self, id: &VnfInstanceId) -> VnfInstance {
        self.lcm.get_instance(id).await.expect("instance")
    }

    /// Every outbox payload so far, oldest first.
    pub async fn outbox(&self) -> Vec<Value> {
        self.store
            .outbox_pending_rows(None, 100_000)
            .await
            .expect("outbox")
            .into_iter()
            .map(|r| r.payload)
            .collect()
    }

    /// `(operationState, notificationStatus)` of the occurrence's notifications, in order.
    pub async fn op_notes(&self, occ: &VnfLcmOpOcc) -> Vec<(String, String)> {
        self.outbox()
            .await
            .into_iter()
            .filter(|p| p["vnfLcmOpOccId"] == occ.id.as_str())
            .map(|p| {
                (
                    p["operationState"].as_str().unwrap_or("").to_string(),
                    p["notificationStatus"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    }

    pub async fn journal(&self, occ: &VnfLcmOpOcc) -> Vec<JournalEntry> {
        self.store.journal(&occ.id).await.expect("journal")
    }

    /// Names of the journal's step rows with `outcome`, in order.
    pub async fn steps(&self, occ: &VnfLcmOpOcc, outcome: StepOutcome) -> Vec<String> {
        self.journal(occ)
            .await
            .into_iter()
            .filter(|e| e.outcome == outcome && !e.step.starts_with("plan:"))
            .map(|e| e.step)
            .collect()
    }
}

/// Pairs `(state, status)` from string literals.
pub fn notes(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// The normal notification sequence of an occurrence that completed.
pub fn completed_notes() -> Vec<(String, String)> {
    notes(&[
        ("STARTING", "START"),
        ("PROCESSING", "START"),
        ("COMPLETED", "RESULT"),
    ])
}

/// Number of `vnfcResourceInfo` entries of `vdu` (all VDUs when `None`).
pub fn vnfcs(instance: &VnfInstance, vdu: Option<&str>) -> usize {
    instance
        .instantiated_vnf_info
        .as_ref()
        .and_then(|i| i.vnfc_resource_info.as_ref())
        .map(|v| {
            v.iter()
                .filter(|r| vdu.is_none_or(|d| r.vdu_id == d))
                .count()
        })
        .unwrap_or(0)
}

/// The scale level of `aspect` in `scaleStatus`.
pub fn scale_level(instance: &VnfInstance, aspect: &str) -> Option<u32> {
    instance
        .instantiated_vnf_info
        .as_ref()?
        .scale_status
        .as_ref()?
        .iter()
        .find(|s| s.aspect_id == aspect)
        .map(|s| s.scale_level)
}

/// A clock `ahead` of the wall clock.
pub struct Ahead(Duration);

impl Clock for Ahead {
    fn now(&self) -> Timestamp {
        Timestamp::now().plus(self.0)
    }
}

/// A second runner ([`second_runner`]).
pub struct Second {
    pub lcm: Lcm,
    pub infra: Arc<MemoryInfraDriver>,
    pub mgmt: Arc<RecordingMgmtDriver>,
}

/// Another runner on `env`'s store and packages, with `infra`, `mgmt` and `config`.
pub fn lcm_with(
    env: &Env,
    infra: Arc<dyn vnfm_driver_api::InfraDriver>,
    mgmt: Arc<dyn vnfm_driver_api::MgmtDriver>,
    config: LcmConfig,
) -> Lcm {
    let catalog = MemoryCatalog::new();
    for id in env.catalog.ids() {
        catalog.insert_onboarded(env.catalog.get(&id).unwrap());
    }
    Lcm::builder(
        env.store.clone(),
        Arc::new(InlineVimDirectory),
        Arc::new(SingleCallbackRouter::new("sub-1", CALLBACK)),
        Arc::new(catalog),
    )
    .infra_driver(infra)
    .mgmt_driver(mgmt)
    .config(config)
    .build()
}

/// Another runner on `env`'s store, an hour in the future.
pub fn second_runner(env: &Env, configure: impl FnOnce(LcmConfig) -> LcmConfig) -> Second {
    let catalog = MemoryCatalog::new();
    for id in env.catalog.ids() {
        catalog.insert_onboarded(env.catalog.get(&id).unwrap());
    }
    let infra = Arc::new(MemoryInfraDriver::new());
    let mgmt = Arc::new(RecordingMgmtDriver::new());
    let config = LcmConfig {
        clock: Arc::new(Ahead(Duration::from_secs(3600))),
        ..LcmConfig::default()
    };
    let lcm = Lcm::builder(
        env.store.clone(),
        Arc::new(InlineVimDirectory),
        Arc::new(SingleCallbackRouter::new("sub-1", CALLBACK)),
        Arc::new(catalog),
    )
    .infra_driver(infra.clone())
    .mgmt_driver(mgmt.clone())
    .config(configure(config))
    .build();
    Second { lcm, infra, mgmt }
}
