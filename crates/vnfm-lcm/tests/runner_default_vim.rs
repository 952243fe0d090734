//! The default VIM (`extra.isDefault` in the [`VimRegistry`]): an INSTANTIATE whose request
//! and instance name no VIM uses it, recorded as a reference under the key `default` in the
//! occurrence and the instance, while the driver receives its decrypted access information;
//! a request that names a VIM is left alone; marking another VIM clears the flag; a failed
//! default-VIM INSTANTIATE leaves no `default` entry and a later one naming a VIM uses it alone.

use crate::runner_support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use vnfm_driver_api::memory::{MemArtifacts, MemoryInfraDriver, RecordingMgmtDriver};
use vnfm_driver_api::{
    DriverError, InfraDriver, InfraOperation, InfraOutcome, InfraRequest, ResolvedVim,
};
use vnfm_infra_kubernetes::KUBERNETES_VIM_TYPE as KUBERNETES;
use vnfm_infra_openstack::OPENSTACK_VIM_TYPE as OPENSTACK;
use vnfm_lcm::ports::VimDirectory;
use vnfm_lcm::testing::SingleCallbackRouter;
use vnfm_lcm::vim::DEFAULT_FLAG;
use vnfm_lcm::{Keyring, Lcm, LcmError, MemoryCatalog, VimRegistry, VimUpdate};
use vnfm_store::Store;
use vnfm_store_sql::SqliteStore;
use vnfm_types::{
    CreateVnfRequest, LcmOperationStateType as State, VimConnectionInfo, VnfInstance,
};

use runner_support::{hooks_vnfd, req};

const OS_PASSWORD: &str = "default-vim-Pa55word-0d0d";

/// The memory driver for OpenStack and Kubernetes, keeping the VIMs of each instantiate.
struct Spy {
    inner: MemoryInfraDriver,
    seen: Mutex<Vec<Vec<ResolvedVim>>>,
}

#[async_trait]
impl InfraDriver for Spy {
    fn name(&self) -> &str {
        "spy"
    }
    fn vim_types(&self) -> &[&str] {
        &[OPENSTACK, KUBERNETES]
    }
    async fn instantiate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.seen.lock().unwrap().push(req.vims.clone());
        self.inner.instantiate(req).await
    }
    async fn terminate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.inner.terminate(req).await
    }
}

struct World {
    lcm: Lcm,
    registry: VimRegistry,
    spy: Arc<Spy>,
    _dir: tempfile::TempDir,
}

async fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(&dir.path().join("lcm.db")).await.unwrap());
    let ring = Arc::new(Keyring::from_keys([&Keyring::generate_key()]).unwrap());
    let kinds = vnfm_driver_api::VimKinds::new()
        .with(Arc::new(vnfm_infra_openstack::OpenStackVimKind))
        .with(Arc::new(vnfm_infra_kubernetes::KubernetesVimKind));
    let registry = VimRegistry::new(store.clone(), ring, kinds);
    let catalog = MemoryCatalog::new();
    catalog.insert(
        hooks_vnfd(),
        Arc::new(MemArtifacts::new().with("Scripts/mgmt.so", b"plugin".to_vec())),
    );
    let spy = Arc::new(Spy {
        inner: MemoryInfraDriver::new().with_vim_types(&[OPENSTACK, KUBERNETES]),
        seen: Mutex::new(Vec::new()),
    });
    let lcm = Lcm::builder(
        store,
        Arc::new(registry.clone()),
        Arc::new(SingleCallbackRouter::new(
            "sub-1",
            "http://127.0.0.1:9/notify",
        )),
        Arc::new(catalog),
    )
    .infra_driver(spy.clone())
    .mgmt_driver(Arc::new(RecordingMgmtDriver::new()))
    .build();
    World {
        lcm,
        registry,
        spy,
        _dir: dir,
    }
}

fn openstack(default: bool) -> VimConnectionInfo {
    let mut v = json!({
        "vimType": OPENSTACK,
        "interfaceInfo": {"endpoint": "http://keystone.example:5000/v3"},
        "accessInfo": {"username": "nfv_user", "password": OS_PASSWORD, "project": "nfv",
                       "projectDomain": "Default", "userDomain": "Default"}
    });
    if default {
        v["extra"] = json!({DEFAULT_FLAG: true});
    }
    serde_json::from_value(v).unwrap()
}

impl World {
    async fn create(&self) -> VnfInstance {
        self.lcm
            .create_vnf_identifier(CreateVnfRequest {
                vnfd_id: "vnfd-hooks".into(),
                vnf_instance_name: Some("default-vim".into()),
                vnf_instance_description: None,
                metadata: None,
            })
            .await
            .unwrap()
    }

    async fn instantiate(&self, body: Value) -> (VnfInstance, Value) {
        let vnf = self.create().await;
        let occ = self.lcm.instantiate(&vnf.id, req(body)).await.unwrap();
        let done = self
            .lcm
            .wait(&occ.id, Duration::from_secs(20))
            .await
            .unwrap();
        assert_eq!(done.operation_state, State::Completed, "{:?}", done.error);
        let params = serde_json::to_value(&done.operation_params).unwrap();
        (self.lcm.get_instance(&vnf.id).await.unwrap(), params)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instantiate_naming_no_vim_uses_the_default_vim() {
    let w = world().await;
    assert_eq!(w.registry.default_vim(None).await.unwrap(), None);
    w.registry
        .create("plain", &openstack(false), None)
        .await
        .unwrap();
    let default = w
        .registry
        .create("lab", &openstack(true), None)
        .await
        .unwrap();
    let reference = w
        .registry
        .default_vim(None)
        .await
        .unwrap()
        .expect("a default");
    assert_eq!(reference.vim_id.as_ref(), Some(&default.id));
    assert_eq!(reference.vim_type, OPENSTACK);
    assert!(reference.access_info.is_none());

    let (instance, params) = w.instantiate(json!({"flavourId": "simple"})).await;
    let expected = json!({"default": {"vimId": default.id, "vimType": OPENSTACK}});
    assert_eq!(params["vimConnectionInfo"], expected, "{params:#}");
    assert_eq!(
        serde_json::to_value(instance.vim_connection_info).unwrap(),
        expected
    );
    // The driver got the registered VIM with its secret decrypted.
    let seen = w.spy.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0][0].connection_id, "default");
    assert_eq!(seen[0][0].access_str("password"), Some(OS_PASSWORD));
    // In use now: the registry refuses to delete it.
    assert!(matches!(
        w.registry.delete(&default.id).await,
        Err(LcmError::VimInUse { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_naming_a_vim_keeps_it_and_the_flag_moves_between_vims() {
    let w = world().await;
    let a = w
        .registry
        .create("a", &openstack(true), None)
        .await
        .unwrap();
    let b = w
        .registry
        .create("b", &openstack(false), None)
        .await
        .unwrap();
    let (_, params) = w
        .instantiate(json!({"flavourId": "simple",
                            "vimConnectionInfo": {"mine": {"vimId": b.id, "vimType": OPENSTACK}}}))
        .await;
    let keys: Vec<&String> = params["vimConnectionInfo"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, ["mine"]);

    // Marking b clears a.
    let mark = VimUpdate {
        extra: Some(json!({DEFAULT_FLAG: true}).as_object().unwrap().clone()),
        ..VimUpdate::default()
    };
    w.registry.update(&b.id, &mark, None).await.unwrap();
    let a_now = w.registry.show(&a.id).await.unwrap();
    assert!(
        a_now
            .extra
            .as_ref()
            .is_none_or(|e| !e.contains_key(DEFAULT_FLAG)),
        "{a_now:?}"
    );
    let d = w
        .registry
        .default_vim(None)
        .await
        .unwrap()
        .expect("a default");
    assert_eq!(d.vim_id.as_ref(), Some(&b.id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_default_vim_instantiate_does_not_stick_to_the_instance() {
    let w = world().await;
    let lab = w
        .registry
        .create("lab", &openstack(true), None)
        .await
        .unwrap();
    let other = w
        .registry
        .create("other", &openstack(false), None)
        .await
        .unwrap();
    let vnf = w.create().await;
    let keys = |i: &VnfInstance| -> Vec<String> {
        i.vim_connection_info
            .iter()
            .flatten()
            .map(|(k, _)| k.clone())
            .collect()
    };

    // The default VIM's INSTANTIATE fails, and is marked FAILED.
    w.spy.inner.fail_next(
        InfraOperation::Instantiate,
        DriverError::permanent("the default VIM refused the stack"),
    );
    let occ = w
        .lcm
        .instantiate(&vnf.id, req(json!({"flavourId": "simple"})))
        .await
        .unwrap();
    let done = w.lcm.wait(&occ.id, Duration::from_secs(20)).await.unwrap();
    assert_eq!(done.operation_state, State::FailedTemp, "{:?}", done.error);
    assert_eq!(
        keys(&w.lcm.get_instance(&vnf.id).await.unwrap()),
        ["default"]
    );
    let failed = w.lcm.fail(&occ.id).await.unwrap();
    assert_eq!(failed.operation_state, State::Failed);
    let instance = w.lcm.get_instance(&vnf.id).await.unwrap();
    assert!(
        keys(&instance).is_empty(),
        "the failed INSTANTIATE left {:?}",
        instance.vim_connection_info
    );
    // Nothing refers to the default VIM any more: it can be deleted.
    w.registry.delete(&lab.id).await.unwrap();

    // A later INSTANTIATE naming another VIM uses that one alone.
    let occ = w
        .lcm
        .instantiate(
            &vnf.id,
            req(json!({"flavourId": "simple",
                       "vimConnectionInfo": {"mine": {"vimId": other.id, "vimType": OPENSTACK}}})),
        )
        .await
        .unwrap();
    let done = w.lcm.wait(&occ.id, Duration::from_secs(20)).await.unwrap();
    assert_eq!(done.operation_state, State::Completed, "{:?}", done.error);
    assert_eq!(keys(&w.lcm.get_instance(&vnf.id).await.unwrap()), ["mine"]);
    let seen = w.spy.seen.lock().unwrap().clone();
    let last: Vec<&str> = seen
        .last()
        .unwrap()
        .iter()
        .map(|v| v.connection_id.as_str())
        .collect();
    assert_eq!(last, ["mine"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instantiate_naming_a_vim_does_not_inherit_an_earlier_default_entry() {
    // Instantiated on the default VIM, terminated (the instance keeps `default`), then
    // instantiated again naming another VIM: the driver gets that VIM alone.
    let w = world().await;
    w.registry
        .create("lab", &openstack(true), None)
        .await
        .unwrap();
    let other = w
        .registry
        .create("other", &openstack(false), None)
        .await
        .unwrap();
    let (vnf, _) = w.instantiate(json!({"flavourId": "simple"})).await;
    let occ = w
        .lcm
        .terminate(
            &vnf.id,
            serde_json::from_value(json!({"terminationType": "FORCEFUL"})).unwrap(),
        )
        .await
        .unwrap();
    let done = w.lcm.wait(&occ.id, Duration::from_secs(20)).await.unwrap();
    assert_eq!(done.operation_state, State::Completed, "{:?}", done.error);
    let occ = w
        .lcm
        .instantiate(
            &vnf.id,
            req(json!({"flavourId": "simple",
                       "vimConnectionInfo": {"mine": {"vimId": other.id, "vimType": OPENSTACK}}})),
        )
        .await
        .unwrap();
    let done = w.lcm.wait(&occ.id, Duration::from_secs(20)).await.unwrap();
    assert_eq!(done.operation_state, State::Completed, "{:?}", done.error);
    let seen = w.spy.seen.lock().unwrap().clone();
    let last: Vec<&str> = seen
        .last()
        .unwrap()
        .iter()
        .map(|v| v.connection_id.as_str())
        .collect();
    assert_eq!(last, ["mine"]);
}
