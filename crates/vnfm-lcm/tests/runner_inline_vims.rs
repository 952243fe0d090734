//! Inline VIM credentials in operation requests (`vimConnectionInfo` entries with `accessInfo`)
//! on a SQLite file with a [`VimRegistry`]: they are sealed into VIMs of the instance before
//! anything is stored, so the database files, the API views, the notifications and the logs
//! never hold them in clear, while drivers still receive them decrypted; the sealed VIMs go
//! away when a rollback drops them, when a later request replaces them and with the VNF
//! identifier. Without a registry ([`InlineVimDirectory`]) the API views still redact them.
//!
//! The file stays whole: every test is one case of the same guarantee, on the same `World`
//! (runner, registry, database file) and the same scans for secrets.

use crate::log_capture::logs;
use crate::runner_support;

use std::path::{Path, PathBuf};
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
use vnfm_lcm::vim::REDACTED;
use vnfm_lcm::{InlineVimDirectory, Keyring, Lcm, LcmError, MemoryCatalog, VimRegistry};
use vnfm_store::{InstanceQuery, OpOccQuery, Store};
use vnfm_store_sql::SqliteStore;
use vnfm_types::{
    CreateVnfRequest, LcmOperationStateType as State, VimConnectionInfo, VimId, VnfInstance,
    VnfInstanceId, VnfLcmOpOcc,
};

use runner_support::{hooks_vnfd, req};

const OS_PASSWORD: &str = "os-Inline-Pa55word-71c3";
const K8S_TOKEN: &str = "eyJhbGciOiJSUzI1NiJ9.inline-bearer-token-5e5e";
const K8S_TOKEN_2: &str = "eyJhbGciOiJSUzI1NiJ9.rotated-bearer-token-7a7a";
const SECRETS: [&str; 3] = [OS_PASSWORD, K8S_TOKEN, K8S_TOKEN_2];
const WAIT: Duration = Duration::from_secs(20);

fn openstack_inline() -> Value {
    json!({
        "vimType": OPENSTACK,
        "interfaceInfo": {"endpoint": "http://keystone.inline.example:5000/v3"},
        "accessInfo": {"username": "nfv_user", "password": OS_PASSWORD, "project": "nfv",
                       "projectDomain": "Default", "userDomain": "Default", "region": "RegionOne"}
    })
}

fn kubernetes_inline(token: &str) -> Value {
    json!({
        "vimType": KUBERNETES,
        "interfaceInfo": {"endpoint": "https://k8s.inline.example:6443"},
        "accessInfo": {"bearerToken": token, "namespace": "vnf-ns"}
    })
}

/// An instantiate request with both inline connections; the OpenStack one comes first, so the
/// infrastructure driver of the instance is chosen by it.
fn instantiate_both() -> Value {
    json!({
        "flavourId": "simple",
        "vimConnectionInfo": {"vim-os": openstack_inline(), "vim-k8s": kubernetes_inline(K8S_TOKEN)}
    })
}

// ----- a driver that records the VIMs it is handed -----

/// The memory driver, serving OpenStack and Kubernetes, recording the resolved VIMs of every
/// call it gets.
struct SpyInfra {
    inner: MemoryInfraDriver,
    seen: Mutex<Vec<(InfraOperation, Vec<ResolvedVim>)>>,
}

impl SpyInfra {
    fn new(delay: Duration) -> Self {
        SpyInfra {
            inner: MemoryInfraDriver::new()
                .with_vim_types(&[OPENSTACK, KUBERNETES])
                .with_delay(delay),
            seen: Mutex::new(Vec::new()),
        }
    }

    fn record(&self, req: &InfraRequest) {
        self.seen
            .lock()
            .unwrap()
            .push((req.step.operation(), req.vims.clone()));
    }

    /// The secret `key` of connection `conn` as the `n`-th call of `op` received it.
    fn secret(&self, op: InfraOperation, n: usize, conn: &str, key: &str) -> Option<String> {
        let seen = self.seen.lock().unwrap();
        let (_, vims) = seen.iter().filter(|(o, _)| *o == op).nth(n)?;
        vims.iter()
            .find(|v| v.connection_id == conn)?
            .access_str(key)
            .map(str::to_owned)
    }

    fn calls(&self, op: InfraOperation) -> usize {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(o, _)| *o == op)
            .count()
    }
}

#[async_trait]
impl InfraDriver for SpyInfra {
    fn name(&self) -> &str {
        "spy"
    }
    fn vim_types(&self) -> &[&str] {
        &[OPENSTACK, KUBERNETES]
    }
    async fn instantiate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.record(req);
        self.inner.instantiate(req).await
    }
    async fn terminate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.record(req);
        self.inner.terminate(req).await
    }
    async fn rollback_instantiate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.record(req);
        self.inner.rollback_instantiate(req).await
    }
}

// ----- the environment -----

struct World {
    lcm: Lcm,
    store: Arc<dyn Store>,
    registry: Option<VimRegistry>,
    infra: Arc<SpyInfra>,
    path: Option<PathBuf>,
    _dir: tempfile::TempDir,
}

/// An `Lcm` on a SQLite file, with a VIM registry (`sealed`) or [`InlineVimDirectory`].
async fn world(sealed: bool) -> World {
    world_with(sealed, Duration::ZERO).await
}

/// [`world`] with driver calls taking `delay`.
async fn world_with(sealed: bool, delay: Duration) -> World {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lcm.db");
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).await.unwrap());
    world_on(store, Some(path), dir, sealed, delay)
}

/// [`world`] on `store`, whose database file (if it is SQLite) is `path`.
fn world_on(
    store: Arc<dyn Store>,
    path: Option<PathBuf>,
    dir: tempfile::TempDir,
    sealed: bool,
    delay: Duration,
) -> World {
    logs();
    let registry = sealed.then(|| {
        let ring = Arc::new(Keyring::from_keys([&Keyring::generate_key()]).unwrap());
        VimRegistry::new(store.clone(), ring, all_vim_kinds())
    });
    let vims: Arc<dyn VimDirectory> = match &registry {
        Some(r) => Arc::new(r.clone()),
        None => Arc::new(InlineVimDirectory),
    };
    let catalog = MemoryCatalog::new();
    catalog.insert(
        hooks_vnfd(),
        Arc::new(MemArtifacts::new().with("Scripts/mgmt.so", b"plugin".to_vec())),
    );
    let infra = Arc::new(SpyInfra::new(delay));
    let lcm = Lcm::builder(
        store.clone(),
        vims,
        Arc::new(SingleCallbackRouter::new(
            "sub-1",
            "http://127.0.0.1:9/notify",
        )),
        Arc::new(catalog),
    )
    .infra_driver(infra.clone())
    .mgmt_driver(Arc::new(RecordingMgmtDriver::new()))
    .build();
    World {
        lcm,
        store,
        registry,
        infra,
        path,
        _dir: dir,
    }
}

impl World {
    /// The instance as stored (its `vimConnectionInfo` holds references to sealed VIMs).
    async fn stored(&self, id: &VnfInstanceId) -> VnfInstance {
        self.store.get_instance(id).await.unwrap().unwrap().0
    }

    async fn create(&self) -> VnfInstance {
        self.lcm
            .create_vnf_identifier(CreateVnfRequest {
                vnfd_id: "vnfd-hooks".into(),
                vnf_instance_name: Some("inline".into()),
                vnf_instance_description: None,
                metadata: None,
            })
            .await
            .unwrap()
    }

    async fn done(&self, occ: &VnfLcmOpOcc) -> VnfLcmOpOcc {
        self.lcm.wait(&occ.id, WAIT).await.unwrap()
    }

    async fn completed(&self, occ: &VnfLcmOpOcc) -> VnfLcmOpOcc {
        let done = self.done(occ).await;
        assert_eq!(done.operation_state, State::Completed, "{:?}", done.error);
        done
    }

    fn registry(&self) -> &VimRegistry {
        self.registry.as_ref().expect("a registry")
    }

    /// Ids of the registered VIMs.
    async fn vim_ids(&self) -> Vec<VimId> {
        self.registry()
            .list()
            .await
            .unwrap()
            .into_iter()
            .map(|v| v.id)
            .collect()
    }

    /// Every byte of the database files (main file, WAL, shared memory).
    fn db_bytes(&self) -> Vec<u8> {
        db_bytes(self.path.as_deref().expect("a SQLite file"))
    }

    /// Every outbox payload so far.
    async fn outbox(&self) -> String {
        let rows = self.store.outbox_pending_rows(None, 100_000).await.unwrap();
        serde_json::to_string(&rows.into_iter().map(|r| r.payload).collect::<Vec<_>>()).unwrap()
    }
}

fn db_bytes(path: &Path) -> Vec<u8> {
    let mut all = Vec::new();
    for suffix in ["", "-wal", "-shm"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        if let Ok(b) = std::fs::read(PathBuf::from(p)) {
            all.extend(b);
        }
    }
    all
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

fn assert_no_secret(what: &str, text: &str) {
    for s in SECRETS {
        assert!(!text.contains(s), "{s} is in {what}: {text}");
    }
}

/// The `vimId` the entry `key` of a `vimConnectionInfo` JSON object references; asserts the
/// entry carries no `accessInfo` (or, stored, the empty one that marks a sealed reference).
fn reference(vims: &Value, key: &str) -> VimId {
    let entry = &vims[key];
    assert!(
        entry.get("accessInfo").is_none_or(|a| a == &json!({})),
        "entry {key} still carries accessInfo: {entry}"
    );
    VimId::new(entry["vimId"].as_str().expect("a vimId"))
}

fn instance_vims(i: &VnfInstance) -> Value {
    serde_json::to_value(i.vim_connection_info.clone().unwrap_or_default()).unwrap()
}

// ----- tests -----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inline_credentials_are_sealed_before_anything_is_stored() {
    logs();
    let w = world(true).await;
    let vnf = w.create().await;
    let started = w
        .lcm
        .instantiate(&vnf.id, req(instantiate_both()))
        .await
        .unwrap();
    // Already the occurrence as created holds references only.
    assert_no_secret(
        "the occurrence as created",
        &serde_json::to_string(&started).unwrap(),
    );
    let done = w.completed(&started).await;
    // The occurrence as text (what a polled GET answers) is the stored document as it is.
    assert_eq!(
        w.lcm.get_op_occ_text(&done.id).await.unwrap(),
        serde_json::to_string(&done).unwrap()
    );

    // operationParams references registered VIMs, whose views are redacted.
    let params = Value::Object(done.operation_params.clone().unwrap());
    let os_id = reference(&params["vimConnectionInfo"], "vim-os");
    let k8s_id = reference(&params["vimConnectionInfo"], "vim-k8s");
    assert_ne!(os_id, k8s_id);
    let os = w.registry().show(&os_id).await.unwrap();
    assert_eq!(
        os.access_info.as_ref().unwrap()["password"],
        json!(REDACTED)
    );
    assert_eq!(
        os.access_info.as_ref().unwrap()["username"],
        json!("nfv_user")
    );
    assert_eq!(os.created_by_instance.as_ref(), Some(&vnf.id));
    assert_eq!(os.name, format!("inline:{}:vim-os", vnf.id));
    let k8s = w.registry().show(&k8s_id).await.unwrap();
    // The alias bearerToken is stored under its canonical name.
    assert_eq!(
        k8s.access_info.as_ref().unwrap()["bearer_token"],
        json!(REDACTED)
    );
    assert_eq!(
        k8s.access_info.as_ref().unwrap()["namespace"],
        json!("vnf-ns")
    );
    // The reference keeps the public interface information.
    assert_eq!(
        params["vimConnectionInfo"]["vim-k8s"]["interfaceInfo"]["endpoint"],
        json!("https://k8s.inline.example:6443")
    );

    // The instance shows each connection as the request gave it, less its secret members
    // (SOL003: no passwords in responses), under the sealed VIM's id, as the request gave none.
    let instance = w.lcm.get_instance(&vnf.id).await.unwrap();
    let iv = instance_vims(&instance);
    let mut given = openstack_inline();
    given["accessInfo"]
        .as_object_mut()
        .unwrap()
        .remove("password");
    given["vimId"] = json!(os_id.to_string());
    assert_eq!(iv["vim-os"], given);
    assert_eq!(
        iv["vim-k8s"],
        json!({
            "vimId": k8s_id.to_string(),
            "vimType": KUBERNETES,
            "interfaceInfo": {"endpoint": "https://k8s.inline.example:6443"},
            "accessInfo": {"namespace": "vnf-ns"}
        })
    );
    // Stored, it references the sealed VIMs.
    let sv = instance_vims(&w.stored(&vnf.id).await);
    assert_eq!(sv["vim-os"]["vimId"], json!(os_id.to_string()));
    assert_eq!(sv["vim-k8s"]["vimId"], json!(k8s_id.to_string()));
    assert_eq!(sv["vim-os"]["accessInfo"], json!({}));

    // The driver received the decrypted secrets.
    assert_eq!(
        w.infra
            .secret(InfraOperation::Instantiate, 0, "vim-os", "password")
            .as_deref(),
        Some(OS_PASSWORD)
    );
    assert_eq!(
        w.infra
            .secret(InfraOperation::Instantiate, 0, "vim-k8s", "bearer_token")
            .as_deref(),
        Some(K8S_TOKEN)
    );

    // Nothing in clear: database files, journal, views, notifications, logs.
    let file = w.db_bytes();
    for s in SECRETS {
        assert!(!contains(&file, s), "{s} is in the database files");
    }
    // (The public part is stored, so the grep would have found plain text.)
    assert!(contains(&file, "keystone.inline.example"));
    let journal = w.lcm.journal(&done.id).await.unwrap();
    assert!(journal.iter().any(|e| e.step == "plan:forward"));
    assert_no_secret("the journal", &format!("{journal:?}"));
    let listed = w.lcm.list_op_occs(&OpOccQuery::default()).await.unwrap();
    assert_no_secret(
        "the op-occ list",
        &serde_json::to_string(&listed.items).unwrap(),
    );
    let instances = w
        .lcm
        .list_instances(&InstanceQuery::default())
        .await
        .unwrap();
    assert_no_secret(
        "the instance list",
        &serde_json::to_string(&instances.items).unwrap(),
    );
    let documents = w
        .lcm
        .list_instance_documents(&InstanceQuery::default())
        .await
        .unwrap();
    assert_no_secret(
        "the instance documents",
        &serde_json::to_string(&documents.items).unwrap(),
    );
    assert_no_secret("the notifications", &w.outbox().await);
    let text = logs();
    assert!(
        text.contains("inline VIM credentials sealed"),
        "the capture works: {text}"
    );
    assert_no_secret("the logs", &text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_a_failure_still_resolves_the_sealed_secret() {
    logs();
    let w = world(true).await;
    let vnf = w.create().await;
    // The driver fails, quoting the password (a careless error body).
    w.infra.inner.fail_next(
        InfraOperation::Instantiate,
        DriverError::transient(format!("keystone refused password {OS_PASSWORD}")),
    );
    let occ = w
        .lcm
        .instantiate(&vnf.id, req(instantiate_both()))
        .await
        .unwrap();
    let failed = w.done(&occ).await;
    assert_eq!(failed.operation_state, State::FailedTemp);
    assert_no_secret("the error", &serde_json::to_string(&failed.error).unwrap());

    w.lcm.retry(&occ.id).await.unwrap();
    w.completed(&occ).await;
    assert_eq!(w.infra.calls(InfraOperation::Instantiate), 2);
    assert_eq!(
        w.infra
            .secret(InfraOperation::Instantiate, 1, "vim-os", "password")
            .as_deref(),
        Some(OS_PASSWORD)
    );
    assert_eq!(
        w.infra
            .secret(InfraOperation::Instantiate, 1, "vim-k8s", "bearer_token")
            .as_deref(),
        Some(K8S_TOKEN)
    );
    let file = w.db_bytes();
    for s in SECRETS {
        assert!(!contains(&file, s), "{s} is in the database files");
    }
    assert_no_secret("the logs", &logs());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_removes_the_sealed_vims_and_delete_removes_the_rest() {
    let w = world(true).await;
    let vnf = w.create().await;
    w.infra.inner.fail_next(
        InfraOperation::Instantiate,
        DriverError::permanent("no capacity"),
    );
    let occ = w
        .lcm
        .instantiate(&vnf.id, req(instantiate_both()))
        .await
        .unwrap();
    assert_eq!(w.done(&occ).await.operation_state, State::FailedTemp);
    assert_eq!(w.vim_ids().await.len(), 2, "both sealed while it runs");
    w.lcm.rollback(&occ.id).await.unwrap();
    assert_eq!(w.done(&occ).await.operation_state, State::RolledBack);
    assert!(w.vim_ids().await.is_empty(), "the rollback released them");
    let instance = w.lcm.get_instance(&vnf.id).await.unwrap();
    assert!(
        instance
            .vim_connection_info
            .as_ref()
            .is_none_or(|m| m.is_empty()),
        "{:?}",
        instance.vim_connection_info
    );

    // Instantiate, terminate: the terminated instance keeps its VIMs (it may be instantiated
    // again); deleting the identifier deletes them.
    let occ = w
        .lcm
        .instantiate(&vnf.id, req(instantiate_both()))
        .await
        .unwrap();
    w.completed(&occ).await;
    let occ = w
        .lcm
        .terminate(&vnf.id, req(json!({"terminationType": "FORCEFUL"})))
        .await
        .unwrap();
    w.completed(&occ).await;
    assert_eq!(w.vim_ids().await.len(), 2, "terminate leaves them");
    // A VIM registered by the operator is not the instance's to delete.
    let own = w
        .registry()
        .create("operator-k8s", &req(kubernetes_inline(K8S_TOKEN_2)), None)
        .await
        .unwrap();
    w.lcm.delete_vnf_identifier(&vnf.id).await.unwrap();
    assert_eq!(w.vim_ids().await, vec![own.id]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_credentials_reuse_their_vim_and_new_ones_replace_it() {
    let w = world(true).await;
    let vnf = w.create().await;
    let occ = w
        .lcm
        .instantiate(&vnf.id, req(instantiate_both()))
        .await
        .unwrap();
    w.completed(&occ).await;
    let first = instance_vims(&w.stored(&vnf.id).await);
    let (os1, k8s1) = (reference(&first, "vim-os"), reference(&first, "vim-k8s"));
    let occ = w
        .lcm
        .terminate(&vnf.id, req(json!({"terminationType": "FORCEFUL"})))
        .await
        .unwrap();
    w.completed(&occ).await;

    // Same OpenStack credentials, a rotated Kubernetes token.
    let again = json!({
        "flavourId": "simple",
        "vimConnectionInfo": {"vim-os": openstack_inline(), "vim-k8s": kubernetes_inline(K8S_TOKEN_2)}
    });
    let occ = w.lcm.instantiate(&vnf.id, req(again)).await.unwrap();
    let done = w.completed(&occ).await;
    let params = Value::Object(done.operation_params.unwrap());
    assert_eq!(reference(&params["vimConnectionInfo"], "vim-os"), os1);
    let k8s2 = reference(&params["vimConnectionInfo"], "vim-k8s");
    assert_ne!(k8s2, k8s1);
    let mut ids = w.vim_ids().await;
    ids.sort();
    let mut want = vec![os1, k8s2.clone()];
    want.sort();
    assert_eq!(ids, want, "the replaced token's VIM is gone, no duplicate");
    assert_eq!(
        w.infra
            .secret(InfraOperation::Instantiate, 1, "vim-k8s", "bearer_token")
            .as_deref(),
        Some(K8S_TOKEN_2)
    );

    // MODIFY_INFO with inline credentials is sealed too; the replaced VIM is released.
    let modify = json!({"vimConnectionInfo": {"vim-k8s": kubernetes_inline(K8S_TOKEN)}});
    let occ = w.lcm.modify_info(&vnf.id, req(modify)).await.unwrap();
    let done = w.completed(&occ).await;
    let changed = serde_json::to_value(done.changed_info.unwrap()).unwrap();
    let k8s3 = reference(&changed["vimConnectionInfo"], "vim-k8s");
    assert!(!w.vim_ids().await.contains(&k8s2));
    assert!(w.vim_ids().await.contains(&k8s3));
    let file = w.db_bytes();
    for s in SECRETS {
        assert!(!contains(&file, s), "{s} is in the database files");
    }
    assert_no_secret("the notifications", &w.outbox().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modify_info_shows_the_nfvo_vim_id_and_access_info_without_secrets() {
    // As OpenStack Tacker's basic_max functional test reads back a VIM given to MODIFY_INFO.
    let w = world(true).await;
    let vnf = w.create().await;
    let occ = w
        .lcm
        .instantiate(&vnf.id, req(instantiate_both()))
        .await
        .unwrap();
    w.completed(&occ).await;
    let mut vim2 = openstack_inline();
    vim2["vimId"] = json!("ac2d2ece-5e49-4b15-b92d-b681e9c096d8");
    vim2["extra"] = json!({"dummy-key": "dummy-val"});
    let modify = json!({"vimConnectionInfo": {"vim2": vim2}});
    let occ = w.lcm.modify_info(&vnf.id, req(modify)).await.unwrap();
    w.completed(&occ).await;

    let mut want = vim2.clone();
    want["accessInfo"]
        .as_object_mut()
        .unwrap()
        .remove("password");
    let shown = instance_vims(&w.lcm.get_instance(&vnf.id).await.unwrap());
    assert_eq!(shown["vim2"], want);
    let listed = w
        .lcm
        .list_instance_documents(&InstanceQuery::default())
        .await
        .unwrap();
    assert_eq!(listed.items[0]["vimConnectionInfo"]["vim2"], want);
    let listed = w
        .lcm
        .list_instances(&InstanceQuery::default())
        .await
        .unwrap();
    assert_eq!(instance_vims(&listed.items[0])["vim2"], want);

    // Stored, the entry references a VIM of its own, not the NFVO's id.
    let sealed = reference(&instance_vims(&w.stored(&vnf.id).await), "vim2");
    assert_ne!(sealed.as_str(), "ac2d2ece-5e49-4b15-b92d-b681e9c096d8");
    // The same content again (with its NFVO id) reuses that VIM; another NFVO id does not.
    let modify = json!({"vimConnectionInfo": {"vim2": vim2}});
    let occ = w.lcm.modify_info(&vnf.id, req(modify)).await.unwrap();
    w.completed(&occ).await;
    assert_eq!(
        reference(&instance_vims(&w.stored(&vnf.id).await), "vim2"),
        sealed
    );
    vim2["vimId"] = json!("7e0f5c5e-0000-4000-8000-000000000002");
    let modify = json!({"vimConnectionInfo": {"vim2": vim2}});
    let occ = w.lcm.modify_info(&vnf.id, req(modify)).await.unwrap();
    w.completed(&occ).await;
    let shown = instance_vims(&w.lcm.get_instance(&vnf.id).await.unwrap());
    assert_eq!(
        shown["vim2"]["vimId"],
        json!("7e0f5c5e-0000-4000-8000-000000000002")
    );
    assert!(
        !w.vim_ids().await.contains(&sealed),
        "the replaced one is released"
    );
    assert_no_secret(
        "the instance",
        &serde_json::to_string(&w.lcm.get_instance(&vnf.id).await.unwrap()).unwrap(),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_inline_access_info_is_refused_before_any_occurrence_exists() {
    let w = world(true).await;
    let vnf = w.create().await;
    let mut os = openstack_inline();
    os["accessInfo"].as_object_mut().unwrap().remove("password");
    // The valid Kubernetes entry comes first and is sealed before the invalid one is seen.
    let body = json!({
        "flavourId": "simple",
        "vimConnectionInfo": {"vim-k8s": kubernetes_inline(K8S_TOKEN), "vim-os": os}
    });
    let err = w.lcm.instantiate(&vnf.id, req(body)).await.unwrap_err();
    assert!(
        matches!(&err, LcmError::InvalidRequest { pointer, .. }
            if pointer == "/vimConnectionInfo/vim-os/accessInfo/password"),
        "{err:?}"
    );
    assert_eq!(err.kind().status(), 400);
    assert!(
        err.to_string()
            .starts_with("/vimConnectionInfo/vim-os/accessInfo/password: missing"),
        "{err}"
    );
    assert!(
        w.lcm
            .list_op_occs(&OpOccQuery::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert!(
        w.vim_ids().await.is_empty(),
        "the sealed k8s entry was released"
    );

    // An unsupported VIM type with inline credentials is refused too (its secrets cannot be
    // told apart), naming the entry.
    let body = json!({
        "flavourId": "simple",
        "vimConnectionInfo": {
            "vim-os": openstack_inline(),
            "vim-x": {"vimType": "acme.CLOUD.V_1", "accessInfo": {"apiKey": "k-123456"}}
        }
    });
    let err = w.lcm.instantiate(&vnf.id, req(body)).await.unwrap_err();
    assert_eq!(err.kind().status(), 422, "{err}");
    assert!(
        err.to_string()
            .starts_with("/vimConnectionInfo/vim-x/vimType"),
        "{err}"
    );
    assert!(w.vim_ids().await.is_empty());
    assert!(!contains(&w.db_bytes(), OS_PASSWORD));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_refused_as_busy_leaves_no_vim_behind() {
    let w = world_with(true, Duration::from_millis(500)).await;
    let vnf = w.create().await;
    let first = w
        .lcm
        .instantiate(
            &vnf.id,
            req(json!({"flavourId": "simple",
                       "vimConnectionInfo": {"vim-os": openstack_inline()}})),
        )
        .await
        .unwrap();
    // The first one holds the instance (its driver call takes a while): the second is valid
    // against the NOT_INSTANTIATED instance, gets sealed, then cannot take the lock.
    let err = w
        .lcm
        .instantiate(
            &vnf.id,
            req(json!({"flavourId": "simple",
                       "vimConnectionInfo": {"vim-k8s": kubernetes_inline(K8S_TOKEN)}})),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, LcmError::InstanceBusy { .. }), "{err}");
    w.completed(&first).await;
    let ids = w.vim_ids().await;
    assert_eq!(ids.len(), 1, "only the first request's VIM");
    assert_eq!(
        w.registry().show(&ids[0]).await.unwrap().vim_type,
        OPENSTACK
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_registry_the_views_still_redact_inline_secrets() {
    let w = world(false).await;
    let vnf = w.create().await;
    let started = w
        .lcm
        .instantiate(&vnf.id, req(instantiate_both()))
        .await
        .unwrap();
    assert_no_secret(
        "the occurrence as created",
        &serde_json::to_string(&started).unwrap(),
    );
    let done = w.completed(&started).await;
    // The driver still gets the secrets as given.
    assert_eq!(
        w.infra
            .secret(InfraOperation::Instantiate, 0, "vim-k8s", "bearerToken")
            .as_deref(),
        Some(K8S_TOKEN)
    );
    let params = Value::Object(done.operation_params.clone().unwrap());
    assert_eq!(
        params["vimConnectionInfo"]["vim-os"]["accessInfo"]["password"],
        json!(REDACTED)
    );
    assert_eq!(
        params["vimConnectionInfo"]["vim-os"]["accessInfo"]["username"],
        json!("nfv_user")
    );
    // The occurrence as text (what a polled GET answers) is the redacted view, not the
    // stored document, which holds the secrets.
    let text = w.lcm.get_op_occ_text(&done.id).await.unwrap();
    assert_no_secret("the occurrence as text", &text);
    assert_eq!(
        serde_json::from_str::<VnfLcmOpOcc>(&text).unwrap(),
        w.lcm.get_op_occ(&done.id).await.unwrap()
    );
    let instance = w.lcm.get_instance(&vnf.id).await.unwrap();
    let iv = instance_vims(&instance);
    assert_eq!(iv["vim-k8s"]["accessInfo"]["bearerToken"], json!(REDACTED));
    assert_eq!(iv["vim-k8s"]["accessInfo"]["namespace"], json!("vnf-ns"));
    assert_no_secret(
        "the journal",
        &format!("{:?}", w.lcm.journal(&done.id).await.unwrap()),
    );
    let listed = w.lcm.list_op_occs(&OpOccQuery::default()).await.unwrap();
    assert_no_secret(
        "the op-occ list",
        &serde_json::to_string(&listed.items).unwrap(),
    );
    let instances = w
        .lcm
        .list_instances(&InstanceQuery::default())
        .await
        .unwrap();
    assert_no_secret(
        "the instance list",
        &serde_json::to_string(&instances.items).unwrap(),
    );
    let documents = w
        .lcm
        .list_instance_documents(&InstanceQuery::default())
        .await
        .unwrap();
    assert_no_secret(
        "the instance documents",
        &serde_json::to_string(&documents.items).unwrap(),
    );

    // MODIFY_INFO's RESULT notification carries changedInfo: redacted too.
    let modify = json!({"vimConnectionInfo": {"vim-k8s": kubernetes_inline(K8S_TOKEN_2)}});
    let occ = w.lcm.modify_info(&vnf.id, req(modify)).await.unwrap();
    let done = w.completed(&occ).await;
    assert_no_secret("the changedInfo", &serde_json::to_string(&done).unwrap());
    // `wait` hands over the occurrence the run left, exactly as a read shows it.
    assert_eq!(done, w.lcm.get_op_occ(&done.id).await.unwrap());
    let outbox = w.outbox().await;
    assert!(outbox.contains("changedInfo"), "{outbox}");
    assert_no_secret("the notifications", &outbox);
    // As documented, the store itself holds them as given.
    assert!(contains(&w.db_bytes(), K8S_TOKEN_2));
    assert!(
        logs().contains("inline VIM credentials (accessInfo) are stored as given"),
        "the one-time warning"
    );
}

#[tokio::test]
async fn inline_entries_are_resolved_like_references_after_sealing() {
    // The reference a registry returns resolves to the full, decrypted connection.
    let w = world(true).await;
    let vnf = w.create().await;
    let entry: VimConnectionInfo = req(kubernetes_inline(K8S_TOKEN));
    let sealed = w
        .registry()
        .seal_inline("k", &entry, &vnf.id, None)
        .await
        .unwrap();
    assert!(sealed.created);
    // A reference: an empty accessInfo, which marks it as sealed.
    assert_eq!(sealed.reference.access_info, Some(Default::default()));
    assert!(!format!("{sealed:?}").contains(K8S_TOKEN));
    let r = w
        .registry()
        .resolve("k", &sealed.reference, &vnf.id)
        .await
        .unwrap();
    assert_eq!(r.access_str("bearer_token"), Some(K8S_TOKEN));
    assert_eq!(r.access_str("namespace"), Some("vnf-ns"));
    // Sealing the same content again with the reference as the current entry reuses it.
    let again = w
        .registry()
        .seal_inline("k", &entry, &vnf.id, Some(&sealed.reference))
        .await
        .unwrap();
    assert!(!again.created);
    assert_eq!(again.reference, sealed.reference);
    // Another instance's VIM is never reused, even with the same content.
    let other = w.create().await;
    let theirs = w
        .registry()
        .seal_inline("k", &entry, &other.id, Some(&sealed.reference))
        .await
        .unwrap();
    assert!(theirs.created);
    assert_ne!(theirs.reference.vim_id, sealed.reference.vim_id);
    // release_inline deletes only the owner's sealed VIMs that nothing references.
    let released = w
        .registry()
        .release_inline(
            &vnf.id,
            &[
                sealed.reference.vim_id.clone().unwrap(),
                theirs.reference.vim_id.clone().unwrap(),
            ],
        )
        .await
        .unwrap();
    assert_eq!(released, vec![sealed.reference.vim_id.clone().unwrap()]);
    assert_eq!(w.vim_ids().await, vec![theirs.reference.vim_id.unwrap()]);
}

#[vnfm_test_env::needs(postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inline_credentials_are_sealed_on_postgres() {
    let url = vnfm_test_env::var("VNFM_TEST_POSTGRES_URL");
    let store = vnfm_store_sql::open(&url).await.unwrap();
    let w = world_on(
        store,
        None,
        tempfile::tempdir().unwrap(),
        true,
        Duration::ZERO,
    );
    let vnf = w.create().await;
    let occ = w
        .lcm
        .instantiate(&vnf.id, req(instantiate_both()))
        .await
        .unwrap();
    w.completed(&occ).await;
    assert_eq!(
        w.infra
            .secret(InfraOperation::Instantiate, 0, "vim-os", "password")
            .as_deref(),
        Some(OS_PASSWORD)
    );
    // The records as stored (not the redacted views) hold references only.
    let (stored_occ, _) = w.store.get_op_occ(&occ.id).await.unwrap().unwrap();
    assert_no_secret(
        "the stored occurrence",
        &serde_json::to_string(&stored_occ).unwrap(),
    );
    let params = Value::Object(stored_occ.operation_params.unwrap());
    let os_id = reference(&params["vimConnectionInfo"], "vim-os");
    let (stored, _) = w.store.get_instance(&vnf.id).await.unwrap().unwrap();
    assert_eq!(reference(&instance_vims(&stored), "vim-os"), os_id);
    let journal = w.store.journal(&occ.id).await.unwrap();
    assert_no_secret("the stored journal", &format!("{journal:?}"));
    let owned = w.store.vims_created_by(&vnf.id).await.unwrap();
    assert_eq!(owned.len(), 2);
    for (record, _) in &owned {
        assert_no_secret("a VIM's public part", &record.public.to_string());
        for s in SECRETS {
            assert!(!contains(&record.secret, s), "{s} is in a sealed blob");
        }
    }

    let occ = w
        .lcm
        .terminate(&vnf.id, req(json!({"terminationType": "FORCEFUL"})))
        .await
        .unwrap();
    w.completed(&occ).await;
    w.lcm.delete_vnf_identifier(&vnf.id).await.unwrap();
    assert!(w.store.vims_created_by(&vnf.id).await.unwrap().is_empty());
}

/// The VIM kinds of the OpenStack and Kubernetes drivers.
fn all_vim_kinds() -> vnfm_driver_api::VimKinds {
    vnfm_driver_api::VimKinds::new()
        .with(std::sync::Arc::new(vnfm_infra_openstack::OpenStackVimKind))
        .with(std::sync::Arc::new(
            vnfm_infra_kubernetes::KubernetesVimKind,
        ))
}
