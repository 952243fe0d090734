//! Mixed VNFs through the runner: one instance with a compute VDU on an "OpenStack" VIM and a
//! container VDU on a "Kubernetes" VIM, each served by its own in-memory driver. Each driver
//! must see only its VDU and its VIM; outcomes merge; scale, heal, terminate, failures,
//! retries and rollbacks go to the right driver; the explicit VDU-to-VIM mapping overrides
//! the kind convention and is checked before any operation occurrence exists.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use vnfm_descriptor::Vnfd;
use vnfm_driver_api::memory::{MemArtifacts, MemoryInfraDriver};
use vnfm_driver_api::{
    DriverError, HealScope, InfraDriver, InfraOperation, InfraOutcome, InfraRequest, InfraStep,
};
use vnfm_lcm::mixed::PROGRESS_KEY;
use vnfm_lcm::testing::NoSubscribers;
use vnfm_lcm::{InlineVimDirectory, Lcm, LcmConfig, MemoryCatalog};
use vnfm_store::{OpOccQuery, Store};
use vnfm_types::{
    InstantiationState, LcmOperationStateType, VnfInstance, VnfInstanceId, VnfLcmOpOcc,
    VnfcResourceInfo,
};

const OPENSTACK: &str = "ETSINFV.OPENSTACK_KEYSTONE.V_3";
const KUBERNETES: &str = "ETSINFV.KUBERNETES.V_1";
const WAIT: Duration = Duration::from_secs(20);

fn req<T: DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("request fixture")
}

/// Records, across drivers, the order in which they are called (`vm:instantiate`, ...), and
/// apart, which were asked to check a request.
struct Tap {
    label: &'static str,
    inner: Arc<MemoryInfraDriver>,
    log: Arc<Mutex<Vec<String>>>,
    checks: Arc<Mutex<Vec<String>>>,
}

impl Tap {
    async fn call(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.log
            .lock()
            .unwrap()
            .push(format!("{}:{}", self.label, req.step.operation()));
        vnfm_driver_api::execute(&*self.inner, req).await
    }
}

#[async_trait]
impl InfraDriver for Tap {
    fn name(&self) -> &str {
        self.label
    }
    fn vim_types(&self) -> &[&str] {
        self.inner.vim_types()
    }
    fn vim_kind(&self) -> Option<Arc<dyn vnfm_driver_api::VimKind>> {
        self.inner.vim_kind()
    }
    /// Refuses a request whose `additionalParams.refuse` names this driver.
    fn check_request(
        &self,
        _step: &InfraStep,
        request: &vnfm_types::OperationParams,
    ) -> Result<(), DriverError> {
        self.checks.lock().unwrap().push(self.label.to_string());
        match vnfm_driver_api::additional_params_of(request).and_then(|p| p.get("refuse")) {
            Some(who) if who == self.label => Err(DriverError::invalid_input(format!(
                "{} cannot do this",
                self.label
            ))),
            _ => Ok(()),
        }
    }
    async fn instantiate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.call(req).await
    }
    async fn terminate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.call(req).await
    }
    async fn scale(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.call(req).await
    }
    async fn heal(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.call(req).await
    }
    async fn operate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.call(req).await
    }
    async fn rollback_instantiate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.call(req).await
    }
    async fn rollback_scale(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.call(req).await
    }
    async fn change_vnfpkg(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.call(req).await
    }
    async fn change_ext_conn(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.call(req).await
    }
}

/// VDU1: a VM (compute) with an external CP and a CP on internalVL1, aspect VDU1_scale;
/// VDU2: a container VDU with an external CP, aspect VDU2_scale.
fn mixed_vnfd() -> Vnfd {
    serde_json::from_value(json!({
        "descriptorId": "vnfd-mixed", "descriptorVersion": "1.0", "provider": "Acme",
        "productName": "Mixed", "softwareVersion": "1.0",
        "toscaDefinitionsVersion": "tosca_simple_yaml_1_3", "vnfNodeType": "acme.Mixed",
        "entryDefinitions": "Definitions/top.yaml",
        "flavours": [{
            "id": "simple", "file": "Definitions/df.yaml",
            "vdus": [
                {"id": "VDU1", "name": "vm", "kind": "compute", "nodeType": "tosca.nodes.nfv.Vdu.Compute",
                 "minInstances": 1, "maxInstances": 3, "initialDelta": 1,
                 "virtualStorages": ["VDU1-Storage"]},
                {"id": "VDU2", "name": "pod", "kind": "osContainerDeployableUnit",
                 "nodeType": "tosca.nodes.nfv.Vdu.OsContainerDeployableUnit",
                 "minInstances": 1, "maxInstances": 3, "initialDelta": 1, "containers": ["C1"]}
            ],
            "containers": [{"id": "C1", "name": "app"}],
            "virtualStorages": [{"id": "VDU1-Storage", "kind": "block", "sizeBytes": 1073741824}],
            "vduCps": [
                {"id": "VDU1_CP1", "vdu": "VDU1", "order": 0},
                {"id": "VDU1_CP2", "vdu": "VDU1", "virtualLink": "internalVL1", "order": 1},
                {"id": "VDU2_CP1", "vdu": "VDU2"}
            ],
            "extCps": [{"id": "VDU1_CP1", "vdu": "VDU1"}, {"id": "VDU2_CP1", "vdu": "VDU2"}],
            "virtualLinks": [{"id": "internalVL1"}],
            "scalingAspects": [
                {"id": "VDU1_scale", "maxScaleLevel": 2, "stepDeltas": ["d"], "vduDeltas": {"VDU1": {"d": 1}}},
                {"id": "VDU2_scale", "maxScaleLevel": 2, "stepDeltas": ["d"], "vduDeltas": {"VDU2": {"d": 1}}}
            ],
            "instantiationLevels": [{"id": "level_1", "scaleLevels": {"VDU1_scale": 0, "VDU2_scale": 0},
                                     "vduInstances": {"VDU1": 1, "VDU2": 1}}],
            "defaultInstantiationLevel": "level_1"
        }]
    }))
    .expect("mixed VNFD")
}

/// A new version of the mixed VNFD, and one without the container VDU (VMs only).
fn package_versions() -> [Vnfd; 2] {
    let mut same = mixed_vnfd();
    same.descriptor_id = "vnfd-mixed-v2".into();
    same.software_version = "2.0".into();
    let mut vms = same.clone();
    vms.descriptor_id = "vnfd-mixed-vms".into();
    let f = &mut vms.flavours[0];
    f.vdus.retain(|v| v.id != "VDU2");
    f.containers.clear();
    f.vdu_cps.retain(|c| c.id != "VDU2_CP1");
    f.ext_cps.retain(|c| c.id != "VDU2_CP1");
    f.scaling_aspects.retain(|a| a.id != "VDU2_scale");
    for l in &mut f.instantiation_levels {
        l.vdu_instances.remove("VDU2");
        l.scale_levels.remove("VDU2_scale");
    }
    [same, vms]
}

struct Env {
    lcm: Lcm,
    store: Arc<dyn Store>,
    vm: Arc<MemoryInfraDriver>,
    k8s: Arc<MemoryInfraDriver>,
    log: Arc<Mutex<Vec<String>>>,
    checks: Arc<Mutex<Vec<String>>>,
    _dir: tempfile::TempDir,
}

async fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let store = vnfm_store_sql::open(&format!("sqlite://{}", dir.path().join("lcm.db").display()))
        .await
        .unwrap();
    let catalog = MemoryCatalog::new();
    catalog.insert(mixed_vnfd(), Arc::new(MemArtifacts::new()));
    for v in package_versions() {
        catalog.insert(v, Arc::new(MemArtifacts::new()));
    }
    let vm = Arc::new(
        MemoryInfraDriver::new()
            .with_vim_types(&[OPENSTACK])
            .with_vim_kind(Arc::new(vnfm_infra_openstack::OpenStackVimKind))
            .with_id_prefix("os"),
    );
    let k8s = Arc::new(
        MemoryInfraDriver::new()
            .with_vim_types(&[KUBERNETES])
            .with_vim_kind(Arc::new(vnfm_infra_kubernetes::KubernetesVimKind))
            .with_id_prefix("k8s"),
    );
    let log = Arc::new(Mutex::new(Vec::new()));
    let checks = Arc::new(Mutex::new(Vec::new()));
    let lcm = Lcm::builder(
        store.clone(),
        Arc::new(InlineVimDirectory),
        Arc::new(NoSubscribers),
        Arc::new(catalog),
    )
    .infra_driver(Arc::new(Tap {
        label: "vm",
        inner: vm.clone(),
        log: log.clone(),
        checks: checks.clone(),
    }))
    .infra_driver(Arc::new(Tap {
        label: "k8s",
        inner: k8s.clone(),
        log: log.clone(),
        checks: checks.clone(),
    }))
    .config(LcmConfig::default())
    .build();
    Env {
        lcm,
        store,
        vm,
        k8s,
        log,
        checks,
        _dir: dir,
    }
}

fn vims() -> Value {
    json!({
        "vm": {"vimType": OPENSTACK, "interfaceInfo": {"endpoint": "http://keystone.example/v3"}},
        "k8s": {"vimType": KUBERNETES, "interfaceInfo": {"endpoint": "https://k8s.example:6443"}}
    })
}

fn cp(cpd: &str) -> Value {
    json!({"cpdId": cpd, "cpConfig": {format!("{cpd}_1"): {"cpProtocolData": [
        {"layerProtocol": "IP_OVER_ETHERNET", "ipOverEthernet": {"ipAddresses": [
            {"type": "IPV4", "numDynamicAddresses": 1}]}}]}}})
}

/// INSTANTIATE with both VIMs, both external CPs on one external link, and `extra`
/// additional parameters.
fn instantiate_request(additional: Value) -> Value {
    json!({
        "flavourId": "simple",
        "vimConnectionInfo": vims(),
        "extVirtualLinks": [{"id": "ext-1", "resourceId": "net-shared",
                             "extCps": [cp("VDU1_CP1"), cp("VDU2_CP1")]}],
        "additionalParams": additional
    })
}

impl Env {
    async fn create(&self) -> VnfInstance {
        self.lcm
            .create_vnf_identifier(req(
                json!({"vnfdId": "vnfd-mixed", "vnfInstanceName": "mixed"}),
            ))
            .await
            .unwrap()
    }

    async fn done(&self, occ: &VnfLcmOpOcc) -> VnfLcmOpOcc {
        self.lcm.wait(&occ.id, WAIT).await.unwrap()
    }

    async fn completed(&self, occ: VnfLcmOpOcc) -> VnfLcmOpOcc {
        let d = self.done(&occ).await;
        assert_eq!(
            d.operation_state,
            LcmOperationStateType::Completed,
            "{:?} ended {:?}: {:?}",
            d.operation,
            d.operation_state,
            d.error
        );
        d
    }

    async fn instance(&self, id: &VnfInstanceId) -> VnfInstance {
        self.lcm.get_instance(id).await.unwrap()
    }

    /// Asserts that nothing was done to instance `id`: no occurrence, no driver call, still
    /// not instantiated.
    async fn assert_untouched(&self, id: &VnfInstanceId) {
        let ops = self
            .lcm
            .list_op_occs(&OpOccQuery {
                vnf_instance_id: Some(id.clone()),
                ..Default::default()
            })
            .await
            .unwrap();
        assert!(ops.items.is_empty(), "{:?}", ops.items);
        assert!(self.vm.calls().is_empty() && self.k8s.calls().is_empty());
        assert_eq!(
            self.instance(id).await.instantiation_state,
            InstantiationState::NotInstantiated
        );
    }

    fn log(&self) -> Vec<String> {
        std::mem::take(&mut *self.log.lock().unwrap())
    }

    /// The drivers asked to check a request since the last call, sorted.
    fn checks(&self) -> Vec<String> {
        let mut c = std::mem::take(&mut *self.checks.lock().unwrap());
        c.sort();
        c
    }

    async fn instantiated(&self, additional: Value) -> VnfInstance {
        let inst = self.create().await;
        let op = self
            .lcm
            .instantiate(&inst.id, req(instantiate_request(additional)))
            .await
            .unwrap();
        self.completed(op).await;
        self.instance(&inst.id).await
    }
}

fn vnfcs(i: &VnfInstance) -> Vec<VnfcResourceInfo> {
    i.instantiated_vnf_info
        .as_ref()
        .and_then(|x| x.vnfc_resource_info.clone())
        .unwrap_or_default()
}

/// `(vduId, vimConnectionId)` of every VNFC, sorted.
fn placement(i: &VnfInstance) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = vnfcs(i)
        .into_iter()
        .map(|r| {
            (
                r.vdu_id,
                r.compute_resource.vim_connection_id.unwrap_or_default(),
            )
        })
        .collect();
    v.sort();
    v
}

fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

fn driver_state(i: &VnfInstance) -> Value {
    i.instantiated_vnf_info
        .as_ref()
        .and_then(|x| x.metadata.as_ref())
        .and_then(|m| m.get("driverState").cloned())
        .unwrap_or(Value::Null)
}

fn counts(step: &InfraStep) -> BTreeMap<String, u32> {
    step.target()
        .map(|t| t.vdu_instances.clone())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_driver_gets_only_its_vdus_and_vim_and_the_outcomes_merge() {
    let env = env().await;
    let inst = env.instantiated(json!({})).await;
    let id = inst.id.clone();

    // The VM side first.
    assert_eq!(env.log(), ["vm:instantiate", "k8s:instantiate"]);
    let vm = env.vm.calls();
    let k8s = env.k8s.calls();
    assert_eq!((vm.len(), k8s.len()), (1, 1));
    assert_eq!(vm[0].vim_connection_ids, ["vm"]);
    assert_eq!(vm[0].vdu_ids, ["VDU1"]);
    assert_eq!(counts(&vm[0].step), BTreeMap::from([("VDU1".into(), 1)]));
    assert_eq!(k8s[0].vim_connection_ids, ["k8s"]);
    assert_eq!(k8s[0].vdu_ids, ["VDU2"]);
    assert_eq!(counts(&k8s[0].step), BTreeMap::from([("VDU2".into(), 1)]));

    // Each VIM holds its own VDU; the internal VL (attached to VDU1 only) is the VM side's.
    let vm_inv = env.vm.inventory(&id).unwrap();
    let k8s_inv = env.k8s.inventory(&id).unwrap();
    assert_eq!((vm_inv.count("VDU1"), vm_inv.count("VDU2")), (1, 0));
    assert_eq!((k8s_inv.count("VDU1"), k8s_inv.count("VDU2")), (0, 1));
    assert_eq!(vm_inv.vim_connection_id.as_deref(), Some("vm"));
    assert_eq!(k8s_inv.vim_connection_id.as_deref(), Some("k8s"));
    assert_eq!(vm_inv.virtual_links.len(), 1);
    assert!(k8s_inv.virtual_links.is_empty());
    // The VM's volume is created by the VM side only.
    assert_eq!(vm_inv.vnfcs[0].storages.len(), 1);

    // The instance carries both VNFCs with their VIM, and both drivers' states.
    assert_eq!(inst.instantiation_state, InstantiationState::Instantiated);
    assert_eq!(placement(&inst), pairs(&[("VDU1", "vm"), ("VDU2", "k8s")]));
    let info = inst.instantiated_vnf_info.as_ref().unwrap();
    assert_eq!(info.vnfc_info.as_ref().unwrap().len(), 2);
    assert_eq!(
        info.virtual_storage_resource_info.as_ref().unwrap().len(),
        1
    );
    assert_eq!(
        info.vnf_virtual_link_resource_info.as_ref().unwrap().len(),
        1
    );
    let state = driver_state(&inst);
    assert_eq!(
        state["vduVimConnections"],
        json!({"VDU1": "vm", "VDU2": "k8s"})
    );
    assert!(state["byVim"]["vm"]["stackId"].is_string(), "{state}");
    assert!(state["byVim"]["k8s"]["stackId"].is_string(), "{state}");
    // One external link, with the CPs of both sides.
    let links = info.ext_virtual_link_info.as_ref().unwrap();
    assert_eq!(links.len(), 1);
    let mut cpds: Vec<&str> = links[0]
        .current_vnf_ext_cp_data
        .iter()
        .map(|c| c.cpd_id.as_str())
        .collect();
    cpds.sort();
    assert_eq!(cpds, ["VDU1_CP1", "VDU2_CP1"]);
    let mut ext_cps: Vec<&str> = info.ext_cp_info.iter().map(|c| c.cpd_id.as_str()).collect();
    ext_cps.sort();
    assert_eq!(ext_cps, ["VDU1_CP1", "VDU2_CP1"]);

    // Scale the container aspect: only the Kubernetes side is called.
    let op = env
        .lcm
        .scale(
            &id,
            req(json!({"type": "SCALE_OUT", "aspectId": "VDU2_scale"})),
        )
        .await
        .unwrap();
    let done = env.completed(op).await;
    assert_eq!(env.log(), ["k8s:scale"]);
    let call = env.k8s.calls().pop().unwrap();
    assert_eq!(counts(&call.step), BTreeMap::from([("VDU2".into(), 2)]));
    // It saw only its own VNFC and its own state.
    assert_eq!(call.instance_vdu_ids, ["VDU2"]);
    assert_eq!(call.driver_state, state["byVim"]["k8s"]);
    let added = done.resource_changes.unwrap().affected_vnfcs.unwrap();
    assert_eq!(added.len(), 1);
    assert_eq!(added[0].vdu_id, "VDU2");
    let inst = env.instance(&id).await;
    assert_eq!(
        placement(&inst),
        pairs(&[("VDU1", "vm"), ("VDU2", "k8s"), ("VDU2", "k8s")])
    );
    // The VM side's resources and state are kept as they were.
    assert_eq!(driver_state(&inst)["byVim"]["vm"], state["byVim"]["vm"]);
    assert_eq!(env.vm.calls().len(), 1);

    // Heal the VM's VNFC: the VM side only, with only that VNFC.
    let vm_vnfc = vnfcs(&inst)
        .into_iter()
        .find(|v| v.vdu_id == "VDU1")
        .unwrap();
    let op = env
        .lcm
        .heal(&id, req(json!({"vnfcInstanceId": [vm_vnfc.id]})))
        .await
        .unwrap();
    env.completed(op).await;
    assert_eq!(env.log(), ["vm:heal"]);
    let call = env.vm.calls().pop().unwrap();
    let InfraStep::Heal {
        scope: HealScope::Vnfcs { vnfcs: healed },
    } = &call.step
    else {
        panic!("not a heal of VNFCs: {:?}", call.step);
    };
    assert_eq!(healed.len(), 1);
    assert_eq!(healed[0].vnfc_resource_id, vm_vnfc.id);
    assert_eq!(call.instance_vdu_ids, ["VDU1"]);
    let healed_inst = env.instance(&id).await;
    let after = vnfcs(&healed_inst)
        .into_iter()
        .find(|v| v.id == vm_vnfc.id)
        .unwrap();
    assert_ne!(
        after.compute_resource.resource_id,
        vm_vnfc.compute_resource.resource_id
    );

    // Heal a container VNFC: the Kubernetes side only.
    let pod = vnfcs(&healed_inst)
        .into_iter()
        .find(|v| v.vdu_id == "VDU2")
        .unwrap();
    let op = env
        .lcm
        .heal(&id, req(json!({"vnfcInstanceId": [pod.id]})))
        .await
        .unwrap();
    env.completed(op).await;
    assert_eq!(env.log(), ["k8s:heal"]);

    // Terminate: both, the container side first; nothing is left on either VIM.
    let op = env
        .lcm
        .terminate(&id, req(json!({"terminationType": "FORCEFUL"})))
        .await
        .unwrap();
    let done = env.completed(op).await;
    assert_eq!(env.log(), ["k8s:terminate", "vm:terminate"]);
    let removed = done.resource_changes.unwrap().affected_vnfcs.unwrap();
    assert_eq!(removed.len(), 3);
    assert!(env.vm.inventory(&id).is_none() && env.k8s.inventory(&id).is_none());
    let inst = env.instance(&id).await;
    assert_eq!(
        inst.instantiation_state,
        InstantiationState::NotInstantiated
    );
    assert!(inst.instantiated_vnf_info.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_of_the_second_driver_names_it_and_rollback_undoes_both() {
    let env = env().await;
    let inst = env.create().await;
    env.k8s.fail_next(
        InfraOperation::Instantiate,
        DriverError::permanent("image pull failed for container app"),
    );
    let op = env
        .lcm
        .instantiate(&inst.id, req(instantiate_request(json!({}))))
        .await
        .unwrap();
    let failed = env.done(&op).await;
    assert_eq!(failed.operation_state, LcmOperationStateType::FailedTemp);
    let error = failed.error.clone().unwrap();
    assert!(
        error.detail.contains("VIM connection `k8s`")
            && error.detail.contains("VDUs VDU2")
            && error.detail.contains("image pull failed"),
        "{}",
        error.detail
    );
    assert_eq!(error.extra["errorKind"], "permanent");
    // The VM side had succeeded: its stack exists, although the instance records nothing.
    assert!(env.vm.inventory(&inst.id).is_some());
    assert_eq!(env.log(), ["vm:instantiate", "k8s:instantiate"]);
    let recorded_vm_state = env.vm.calls()[0].clone();
    assert_eq!(recorded_vm_state.error, None);

    let rolling = env.lcm.rollback(&failed.id).await.unwrap();
    let rolled = env.done(&rolling).await;
    assert_eq!(
        rolled.operation_state,
        LcmOperationStateType::RolledBack,
        "{:?}",
        rolled.error
    );
    // Both sides are undone, the container side first.
    assert_eq!(
        env.log(),
        ["k8s:rollback_instantiate", "vm:rollback_instantiate"]
    );
    assert!(env.vm.inventory(&inst.id).is_none());
    assert!(env.k8s.inventory(&inst.id).is_none());
    // The VM side's rollback got the state its instantiation produced.
    let rb = env.vm.calls().pop().unwrap();
    assert_eq!(rb.operation, InfraOperation::RollbackInstantiate);
    assert!(
        rb.driver_state["stackId"].is_string(),
        "{}",
        rb.driver_state
    );
    assert_eq!(rb.instance_vdu_ids, ["VDU1"]);
    let removed = rolled.resource_changes.unwrap().affected_vnfcs.unwrap();
    assert_eq!(removed.len(), 1);
    assert_eq!(removed[0].vdu_id, "VDU1");
    let after = env.instance(&inst.id).await;
    assert_eq!(
        after.instantiation_state,
        InstantiationState::NotInstantiated
    );
    assert!(after.vim_connection_info.unwrap_or_default().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_runs_only_the_driver_that_failed() {
    let env = env().await;
    let inst = env.create().await;
    env.k8s.fail_next(
        InfraOperation::Instantiate,
        DriverError::transient("API server unavailable"),
    );
    let op = env
        .lcm
        .instantiate(&inst.id, req(instantiate_request(json!({}))))
        .await
        .unwrap();
    let failed = env.done(&op).await;
    assert_eq!(failed.operation_state, LcmOperationStateType::FailedTemp);
    // The VM side's success was kept with the occurrence.
    let progress = env
        .store
        .get_op_occ_data(&failed.id, PROGRESS_KEY)
        .await
        .unwrap()
        .unwrap();
    assert!(
        progress["forward"]["outcomes"]["vm"].is_object(),
        "{progress}"
    );
    assert!(progress["forward"]["outcomes"].get("k8s").is_none());
    env.log();

    let retried = env.lcm.retry(&failed.id).await.unwrap();
    let done = env.completed(retried).await;
    assert_eq!(env.log(), ["k8s:instantiate"]);
    assert_eq!(env.vm.calls().len(), 1);
    // The merged outcome still has both sides, and the changes of both.
    let inst = env.instance(&inst.id).await;
    assert_eq!(placement(&inst), pairs(&[("VDU1", "vm"), ("VDU2", "k8s")]));
    let added = done.resource_changes.unwrap().affected_vnfcs.unwrap();
    let mut vdus: Vec<&str> = added.iter().map(|a| a.vdu_id.as_str()).collect();
    vdus.sort();
    assert_eq!(vdus, ["VDU1", "VDU2"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_explicit_mapping_overrides_the_kind_convention_and_is_kept() {
    let env = env().await;
    // Swapped: the compute VDU on the Kubernetes VIM, the container VDU on OpenStack.
    let inst = env
        .instantiated(json!({"vduVimConnections": {"VDU1": "k8s", "VDU2": "vm"}}))
        .await;
    assert_eq!(env.vm.calls()[0].vdu_ids, ["VDU2"]);
    assert_eq!(env.k8s.calls()[0].vdu_ids, ["VDU1"]);
    assert_eq!(placement(&inst), pairs(&[("VDU1", "k8s"), ("VDU2", "vm")]));
    assert_eq!(
        driver_state(&inst)["vduVimConnections"],
        json!({"VDU1": "k8s", "VDU2": "vm"})
    );
    env.log();
    // A later scale follows the recorded mapping, not the convention.
    let op = env
        .lcm
        .scale(
            &inst.id,
            req(json!({"type": "SCALE_OUT", "aspectId": "VDU1_scale"})),
        )
        .await
        .unwrap();
    env.completed(op).await;
    assert_eq!(env.log(), ["k8s:scale"]);
    assert_eq!(env.k8s.inventory(&inst.id).unwrap().count("VDU1"), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_mapping_is_a_400_before_any_operation_occurrence() {
    let env = env().await;
    let inst = env.create().await;
    let cases = [
        (
            json!({"vduVimConnections": {"VDU9": "vm"}}),
            "/additionalParams/vduVimConnections/VDU9",
            "no VDU `VDU9`",
        ),
        (
            json!({"vduVimConnections": {"VDU1": "nowhere"}}),
            "/additionalParams/vduVimConnections/VDU1",
            "no VIM connection `nowhere`",
        ),
        (
            json!({"vduVimConnections": {"VDU1": 7}}),
            "/additionalParams/vduVimConnections/VDU1",
            "must be a string",
        ),
        (
            json!({"vduVimConnections": ["VDU1"]}),
            "/additionalParams/vduVimConnections",
            "must be an object",
        ),
        (
            json!({"vduVimConnections": {"a/b~c": "vm"}}),
            "/additionalParams/vduVimConnections/a~1b~0c",
            "no VDU",
        ),
    ];
    for (params, pointer, says) in cases {
        let err = env
            .lcm
            .instantiate(&inst.id, req(instantiate_request(params.clone())))
            .await
            .unwrap_err();
        assert_eq!(err.kind().status(), 400, "{params}: {err}");
        let msg = err.to_string();
        assert!(msg.starts_with(&format!("{pointer}: ")), "{msg}");
        assert!(msg.contains(says), "{msg}");
        // The validator refuses it the same way.
        let vnfd = mixed_vnfd();
        let v = vnfm_lcm::validate(
            &vnfm_lcm::OperationRequest::Instantiate(req(instantiate_request(params))),
            &vnfd,
            &inst,
        )
        .unwrap_err();
        assert_eq!(v.kind().status(), 400);
    }
    env.assert_untouched(&inst.id).await;
}

/// Each driver of the split is asked before anything is stored; one refusing (either one)
/// refuses the whole request with its name and message, and no driver runs a step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_driver_of_the_split_refusing_refuses_the_request_before_any_occurrence() {
    let env = env().await;
    let inst = env.create().await;
    for refusing in ["vm", "k8s"] {
        let err = env
            .lcm
            .instantiate(
                &inst.id,
                req(instantiate_request(json!({"refuse": refusing}))),
            )
            .await
            .expect_err("one driver refuses");
        assert_eq!(err.kind().status(), 422, "{err}");
        assert!(
            matches!(&err, vnfm_lcm::LcmError::RefusedByDriver { driver, message, .. }
                if driver == refusing && *message == format!("{refusing} cannot do this")),
            "{err:?}"
        );
        assert!(
            env.checks().contains(&refusing.to_string()),
            "{refusing} was asked"
        );
        assert!(env.log().is_empty(), "no step runs");
    }
    env.assert_untouched(&inst.id).await;
    // Neither refusing, both are asked and the split runs.
    let op = env
        .lcm
        .instantiate(&inst.id, req(instantiate_request(json!({}))))
        .await
        .unwrap();
    env.completed(op).await;
    assert_eq!(env.checks(), ["k8s", "vm"]);
    assert_eq!(env.log(), ["vm:instantiate", "k8s:instantiate"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_one_vim_one_driver_gets_every_vdu_as_before() {
    let env = env().await;
    let inst = env.create().await;
    let mut body = instantiate_request(json!({}));
    body["vimConnectionInfo"] = json!({"vm": vims()["vm"].clone()});
    let op = env.lcm.instantiate(&inst.id, req(body)).await.unwrap();
    env.completed(op).await;
    assert!(env.k8s.calls().is_empty());
    let call = &env.vm.calls()[0];
    assert_eq!(call.vdu_ids, ["VDU1", "VDU2"]);
    assert_eq!(
        counts(&call.step),
        BTreeMap::from([("VDU1".into(), 1), ("VDU2".into(), 1)])
    );
    let inst = env.instance(&inst.id).await;
    // The driver's own state, not a split one.
    let state = driver_state(&inst);
    assert!(
        state["stackId"].is_string() && state.get("byVim").is_none(),
        "{state}"
    );
    assert_eq!(placement(&inst), pairs(&[("VDU1", "vm"), ("VDU2", "vm")]));
    // Nothing was kept with the occurrence.
    let ops = env
        .lcm
        .list_op_occs(&OpOccQuery {
            vnf_instance_id: Some(inst.id.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    let progress = env
        .store
        .get_op_occ_data(&ops.items[0].id, PROGRESS_KEY)
        .await
        .unwrap();
    assert!(progress.is_none());

    // A Kubernetes VIM the instance gains later does not split it: the container aspect
    // still scales on the one driver it was instantiated with.
    let op = env
        .lcm
        .change_ext_conn(
            &inst.id,
            req(json!({
                "extVirtualLinks": [{"id": "ext-2", "resourceId": "net-2", "extCps": [cp("VDU1_CP1")]}],
                "vimConnectionInfo": {"k8s": vims()["k8s"].clone()}
            })),
        )
        .await
        .unwrap();
    env.completed(op).await;
    let inst = env.instance(&inst.id).await;
    assert!(
        inst.vim_connection_info
            .as_ref()
            .unwrap()
            .contains_key("k8s")
    );
    env.log();
    let op = env
        .lcm
        .scale(
            &inst.id,
            req(json!({"type": "SCALE_OUT", "aspectId": "VDU2_scale"})),
        )
        .await
        .unwrap();
    env.completed(op).await;
    assert_eq!(env.log(), ["vm:scale"]);
    assert!(env.k8s.calls().is_empty());
    assert_eq!(env.vm.inventory(&inst.id).unwrap().count("VDU2"), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_package_change_keeps_each_vdu_on_its_vim_and_one_moving_vdus_is_refused() {
    let env = env().await;
    let inst = env.instantiated(json!({})).await;
    env.log();
    // The new package has no VDU on the Kubernetes VIM, whose pods would be left behind:
    // refused before an occurrence exists.
    let err = env
        .lcm
        .change_vnfpkg(&inst.id, req(json!({"vnfdId": "vnfd-mixed-vms"})))
        .await
        .unwrap_err();
    assert_eq!(err.kind().status(), 422, "{err}");
    assert!(
        err.to_string()
            .starts_with("/vnfdId: moving the VDUs of a mixed VNF to other VIMs is not supported"),
        "{err}"
    );
    let ops = env
        .lcm
        .list_op_occs(&OpOccQuery {
            vnf_instance_id: Some(inst.id.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(ops.items.len(), 1, "only the INSTANTIATE");

    // Same mapping: both sides change, each with its part of the new VNFD.
    let op = env
        .lcm
        .change_vnfpkg(&inst.id, req(json!({"vnfdId": "vnfd-mixed-v2"})))
        .await
        .unwrap();
    env.completed(op).await;
    assert_eq!(env.log(), ["vm:change_vnfpkg", "k8s:change_vnfpkg"]);
    assert_eq!(env.vm.calls().pop().unwrap().vdu_ids, ["VDU1"]);
    assert_eq!(env.k8s.calls().pop().unwrap().vdu_ids, ["VDU2"]);
    let after = env.instance(&inst.id).await;
    assert_eq!(after.vnfd_id.as_str(), "vnfd-mixed-v2");
    assert_eq!(placement(&after), pairs(&[("VDU1", "vm"), ("VDU2", "k8s")]));
    assert_eq!(
        env.vm.inventory(&inst.id).unwrap().vnfd_id.as_str(),
        "vnfd-mixed-v2"
    );
    assert_eq!(
        env.k8s.inventory(&inst.id).unwrap().vnfd_id.as_str(),
        "vnfd-mixed-v2"
    );
}
