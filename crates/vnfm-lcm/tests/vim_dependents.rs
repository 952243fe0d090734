//! VNF instances that depend on a VIM another instance's hook created: instance "creator-a"'s
//! `instantiate_end` hook builds a cluster and returns it as a VIM to register, its
//! `terminate_end` hook removes the connection and asks to deregister it; "cnf-b" is then
//! instantiated on that VIM by `vimId`. On a real [`VimRegistry`] over SQLite, and over
//! PostgreSQL when `VNFM_TEST_POSTGRES_URL` is set.

use crate::runner_support;

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::sync::watch;
use vnfm_driver_api::memory::{MEMORY_VIM_TYPE, MemArtifacts, MemoryInfraDriver};
use vnfm_driver_api::{
    DriverError, HookCall, HookOutcome, MgmtDriver, ResolvedVim, VimRegistration,
};
use vnfm_infra_kubernetes::KUBERNETES_VIM_TYPE as KUBERNETES;
use vnfm_lcm::ports::{SealedVim, VimDirectory};
use vnfm_lcm::runner::FORCE_WITH_DEPENDENTS;
use vnfm_lcm::testing::SingleCallbackRouter;
use vnfm_lcm::{
    DependentInstance, GuardedAction, Keyring, Lcm, LcmError, MemoryCatalog, VimRegistry,
};
use vnfm_store::{OpOccQuery, Store};
use vnfm_types::{
    CreateVnfRequest, InstantiationState, LcmOperationStateType as State, VimConnectionInfo, VimId,
    VnfInstance, VnfInstanceId, VnfLcmOpOcc,
};

use runner_support::{CALLBACK, WAIT, hooks_vnfd, memory_vims, req};

/// An open/closed gate tests hold a step at.
struct Gate(watch::Sender<bool>);

impl Gate {
    fn open() -> Gate {
        Gate(watch::channel(true).0)
    }
    fn close(&self) {
        self.0.send_replace(false);
    }
    fn release(&self) {
        self.0.send_replace(true);
    }
    async fn pass(&self) {
        let mut rx = self.0.subscribe();
        let _ = rx.wait_for(|open| *open).await;
    }
}

/// The management driver of "creator-*" instances: `instantiate_end` registers a cluster as
/// VIM connection `k8s`; `terminate_end` (and `heal_start`) removes that connection and
/// deregisters the VIM in the same outcome. Other instances' hooks do nothing.
struct ClusterHooks {
    terminate_end: Gate,
    calls: Mutex<Vec<String>>,
}

#[async_trait]
impl MgmtDriver for ClusterHooks {
    async fn call(&self, call: &HookCall) -> Result<HookOutcome, DriverError> {
        let name = call.instance["vnfInstanceName"].as_str().unwrap_or("");
        self.calls
            .lock()
            .unwrap()
            .push(format!("{name}:{}", call.operation));
        if !name.starts_with("creator") {
            return Ok(HookOutcome::default());
        }
        match call.operation.as_str() {
            "instantiate_end" => Ok(HookOutcome {
                vims_to_register: vec![VimRegistration {
                    name: format!("cluster-of-{name}"),
                    connection_id: Some("k8s".into()),
                    info: req(json!({
                        "vimType": KUBERNETES,
                        "interfaceInfo": {"endpoint": "https://10.10.0.1:6443"},
                        "accessInfo": {"bearer_token": "cluster-token-0f0f"}
                    })),
                }],
                ..Default::default()
            }),
            // heal_start does the same (a hook of any operation may deregister a VIM).
            "terminate_end" | "heal_start" => {
                if call.operation == "terminate_end" {
                    self.terminate_end.pass().await;
                }
                let vim = call.instance["vimConnectionInfo"]["k8s"]["vimId"]
                    .as_str()
                    .map(str::to_owned);
                Ok(HookOutcome {
                    vim_connection_info_remove: vec!["k8s".into()],
                    vims_to_deregister: vim.into_iter().collect(),
                    ..Default::default()
                })
            }
            _ => Ok(HookOutcome::default()),
        }
    }
}

/// The registry, with gates that hold the resolution of one VIM and the sealing of inline
/// credentials.
struct GatedVims {
    registry: Arc<VimRegistry>,
    gated: Mutex<Option<VimId>>,
    resolve: Gate,
    seal: Gate,
}

#[async_trait]
impl VimDirectory for GatedVims {
    async fn resolve(
        &self,
        key: &str,
        info: &VimConnectionInfo,
        owner: &VnfInstanceId,
    ) -> Result<ResolvedVim, LcmError> {
        let held = self.gated.lock().unwrap().clone();
        if held.is_some() && info.vim_id == held {
            self.resolve.pass().await;
        }
        self.registry.resolve(key, info, owner).await
    }

    async fn register(
        &self,
        registration: &VimRegistration,
        created_by: &VnfInstanceId,
    ) -> Result<VimConnectionInfo, LcmError> {
        self.registry.register(registration, created_by).await
    }

    async fn deregister(&self, vim_id: &VimId) -> Result<(), LcmError> {
        self.registry.deregister(vim_id).await
    }

    async fn seal_inline(
        &self,
        key: &str,
        info: &VimConnectionInfo,
        owner: &VnfInstanceId,
        current: Option<&VimConnectionInfo>,
    ) -> Result<SealedVim, LcmError> {
        self.seal.pass().await;
        self.registry.seal_inline(key, info, owner, current).await
    }

    async fn release_inline(
        &self,
        owner: &VnfInstanceId,
        candidates: &[VimId],
    ) -> Result<Vec<VimId>, LcmError> {
        self.registry.release_inline(owner, candidates).await
    }

    async fn release_owned(&self, owner: &VnfInstanceId) -> Result<Vec<VimId>, LcmError> {
        self.registry.release_owned(owner).await
    }
}

struct World {
    lcm: Lcm,
    store: Arc<dyn Store>,
    registry: Arc<VimRegistry>,
    vims: Arc<GatedVims>,
    hooks: Arc<ClusterHooks>,
    _dir: tempfile::TempDir,
}

impl World {
    /// On a fresh SQLite file, or on `url`; the lifecycle manager resolves VIMs through the
    /// gates (which do not resolve from the store alone, so every occurrence is first stored
    /// in `STARTING`).
    async fn new(url: Option<&str>) -> World {
        World::with_directory(url, true).await
    }

    /// [`World::new`], the lifecycle manager resolving VIMs through the gates when `gated`,
    /// else through the registry itself.
    async fn with_directory(url: Option<&str>, gated: bool) -> World {
        vnfm_outbound::install_crypto_provider();
        let dir = tempfile::tempdir().unwrap();
        let url = url
            .map(str::to_owned)
            .unwrap_or_else(|| format!("sqlite://{}", dir.path().join("lcm.db").display()));
        let store = vnfm_store_sql::open(&url).await.unwrap();
        let keyring = Arc::new(Keyring::from_keys([&Keyring::generate_key()]).unwrap());
        let registry = Arc::new(VimRegistry::new(store.clone(), keyring, all_vim_kinds()));
        let vims = Arc::new(GatedVims {
            registry: registry.clone(),
            gated: Mutex::new(None),
            resolve: Gate::open(),
            seal: Gate::open(),
        });
        let hooks = Arc::new(ClusterHooks {
            terminate_end: Gate::open(),
            calls: Mutex::new(Vec::new()),
        });
        let catalog = MemoryCatalog::new();
        catalog.insert(
            hooks_vnfd(),
            Arc::new(MemArtifacts::new().with("Scripts/mgmt.so", b"plugin".to_vec())),
        );
        let directory: Arc<dyn VimDirectory> = if gated {
            vims.clone()
        } else {
            registry.clone()
        };
        let lcm = Lcm::builder(
            store.clone(),
            directory,
            Arc::new(SingleCallbackRouter::new("sub-1", CALLBACK)),
            Arc::new(catalog),
        )
        .infra_driver(Arc::new(
            MemoryInfraDriver::new().with_vim_types(&[MEMORY_VIM_TYPE, KUBERNETES]),
        ))
        .mgmt_driver(hooks.clone())
        .build();
        World {
            lcm,
            store,
            registry,
            vims,
            hooks,
            _dir: dir,
        }
    }

    async fn create(&self, name: &str) -> VnfInstanceId {
        self.lcm
            .create_vnf_identifier(CreateVnfRequest {
                vnfd_id: "vnfd-hooks".into(),
                vnf_instance_name: Some(name.into()),
                vnf_instance_description: None,
                metadata: None,
            })
            .await
            .unwrap()
            .id
    }

    async fn done(&self, occ: &VnfLcmOpOcc) -> VnfLcmOpOcc {
        self.lcm.wait(&occ.id, WAIT).await.unwrap()
    }

    async fn completed(&self, occ: VnfLcmOpOcc) -> VnfLcmOpOcc {
        let done = self.done(&occ).await;
        assert_eq!(
            done.operation_state,
            State::Completed,
            "{:?}: {:?}",
            done.operation,
            done.error
        );
        done
    }

    async fn instance(&self, id: &VnfInstanceId) -> VnfInstance {
        self.lcm.get_instance(id).await.unwrap()
    }

    /// "creator-*" instantiated: returns it and the VIM its hook registered.
    async fn creator(&self, name: &str) -> (VnfInstanceId, VimId) {
        let a = self.create(name).await;
        let op = self
            .lcm
            .instantiate(
                &a,
                req(json!({"flavourId": "simple", "vimConnectionInfo": memory_vims()})),
            )
            .await
            .unwrap();
        self.completed(op).await;
        let vim = self.instance(&a).await.vim_connection_info.unwrap()["k8s"]
            .vim_id
            .clone()
            .expect("the hook's VIM is referenced by connection k8s");
        assert_eq!(
            self.registry.show(&vim).await.unwrap().created_by_instance,
            Some(a.clone())
        );
        (a, vim)
    }

    /// A CNF instantiate request on `vim` by reference.
    fn on(vim: &VimId) -> Value {
        json!({"flavourId": "simple",
               "vimConnectionInfo": {"k8s": {"vimId": vim.as_str(), "vimType": KUBERNETES}}})
    }

    /// A CNF instantiated on `vim`.
    async fn cnf(&self, name: &str, vim: &VimId) -> VnfInstanceId {
        let b = self.create(name).await;
        let op = self.lcm.instantiate(&b, req(World::on(vim))).await.unwrap();
        self.completed(op).await;
        b
    }

    async fn terminate(&self, id: &VnfInstanceId, extra: Value) -> Result<VnfLcmOpOcc, LcmError> {
        let mut body = json!({"terminationType": "FORCEFUL"});
        if !extra.is_null() {
            body["additionalParams"] = extra;
        }
        self.lcm.terminate(id, req(body)).await
    }

    async fn op_occs(&self, id: &VnfInstanceId) -> Vec<VnfLcmOpOcc> {
        self.store
            .list_op_occs(&OpOccQuery {
                vnf_instance_id: Some(id.clone()),
                ..OpOccQuery::default()
            })
            .await
            .unwrap()
            .items
    }
}

/// With the registry as VIM directory an occurrence nobody can contest is stored already
/// begun, but a request a concurrent start could contest still takes the instance's lock
/// first and is checked again under it: the TERMINATE of an instance that registered a VIM,
/// and a request referencing a VIM another instance registered, are returned in `STARTING`.
#[tokio::test]
async fn contested_requests_take_the_lock_before_they_begin() {
    let w = World::with_directory(None, false).await;
    let a = w.create("creator-a").await;
    let op = w
        .lcm
        .instantiate(
            &a,
            req(json!({"flavourId": "simple", "vimConnectionInfo": memory_vims()})),
        )
        .await
        .unwrap();
    assert_eq!(op.operation_state, State::Processing, "uncontested");
    w.completed(op).await;
    let vim = w.instance(&a).await.vim_connection_info.unwrap()["k8s"]
        .vim_id
        .clone()
        .unwrap();

    let b = w.create("cnf-b").await;
    let op = w.lcm.instantiate(&b, req(World::on(&vim))).await.unwrap();
    assert_eq!(op.operation_state, State::Starting, "on creator-a's VIM");
    w.completed(op).await;

    let op = w.terminate(&b, Value::Null).await.unwrap();
    assert_eq!(
        op.operation_state,
        State::Processing,
        "cnf-b registered no VIM"
    );
    w.completed(op).await;

    let op = w.terminate(&a, Value::Null).await.unwrap();
    assert_eq!(
        op.operation_state,
        State::Starting,
        "creator-a registered a VIM"
    );
    w.completed(op).await;
}

fn dependent(b: &VnfInstanceId, name: &str, vim: &VimId) -> DependentInstance {
    DependentInstance {
        vnf_instance_id: b.to_string(),
        vnf_instance_name: Some(name.into()),
        vim_id: vim.to_string(),
        vnf_lcm_op_occ_id: None,
    }
}

/// The whole story: refused while used, allowed once the user is gone, VIM deregistered.
async fn creator_terminates_only_after_its_users(w: World) {
    let (a, vim) = w.creator("creator-a").await;
    // The creator references its own VIM: that does not make it its own dependent.
    assert!(w.lcm.vim_dependents(&a).await.unwrap().is_empty());

    let b = w.cnf("cnf-b", &vim).await;
    let on_k8s = w.instance(&b).await;
    assert!(
        on_k8s
            .instantiated_vnf_info
            .as_ref()
            .and_then(|i| i.vnfc_resource_info.as_ref())
            .is_some_and(|r| r
                .iter()
                .all(|c| c.compute_resource.vim_connection_id.as_deref() == Some("k8s")))
    );
    assert_eq!(
        w.lcm.vim_dependents(&a).await.unwrap(),
        [dependent(&b, "cnf-b", &vim)]
    );
    let view = w.registry.show(&vim).await.unwrap();
    let mut users = vec![a.clone(), b.clone()];
    users.sort();
    assert_eq!(view.used_by_instances, users);
    let listed = w.registry.list().await.unwrap();
    assert_eq!(
        listed
            .iter()
            .find(|v| v.id == vim)
            .unwrap()
            .used_by_instances,
        users
    );

    // TERMINATE of the creator is refused before any occurrence exists.
    let (before, version) = w.lcm.get_instance_versioned(&a).await.unwrap();
    let occs = w.op_occs(&a).await.len();
    let e = w.terminate(&a, Value::Null).await.unwrap_err();
    assert_eq!(e.kind().status(), 409);
    match &e {
        LcmError::VimDependents {
            instance_id,
            action,
            dependents,
        } => {
            assert_eq!(instance_id, a.as_str());
            assert_eq!(*action, GuardedAction::Terminate);
            assert_eq!(dependents, &[dependent(&b, "cnf-b", &vim)]);
        }
        other => panic!("expected VimDependents, got {other:?}"),
    }
    let msg = e.to_string();
    for needle in [
        a.as_str(),
        b.as_str(),
        "\"cnf-b\"",
        vim.as_str(),
        "terminate those instances",
        "forceWithDependents",
    ] {
        assert!(msg.contains(needle), "{needle} missing from: {msg}");
    }
    assert_eq!(w.op_occs(&a).await.len(), occs, "no occurrence was created");
    assert_eq!(
        w.lcm.get_instance_versioned(&a).await.unwrap(),
        (before, version)
    );

    // B terminates: it drops its connection to the VIM A created, so A is free to go.
    let done = w
        .completed(w.terminate(&b, Value::Null).await.unwrap())
        .await;
    assert!(done.warnings.is_none());
    let b_after = w.instance(&b).await;
    assert!(
        b_after
            .vim_connection_info
            .as_ref()
            .is_none_or(|m| !m.contains_key("k8s")),
        "{:?}",
        b_after.vim_connection_info
    );
    assert!(w.lcm.vim_dependents(&a).await.unwrap().is_empty());
    assert_eq!(
        w.registry.show(&vim).await.unwrap().used_by_instances,
        std::slice::from_ref(&a)
    );

    let done = w
        .completed(w.terminate(&a, Value::Null).await.unwrap())
        .await;
    assert!(done.warnings.is_none(), "{:?}", done.warnings);
    assert_eq!(
        w.registry.show(&vim).await.unwrap_err().kind().status(),
        404
    );
    let a_after = w.instance(&a).await;
    assert_eq!(
        a_after.instantiation_state,
        InstantiationState::NotInstantiated
    );
    assert_eq!(
        a_after
            .vim_connection_info
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["vim1"]
    );
    w.lcm.delete_vnf_identifier(&a).await.unwrap();
    w.lcm.delete_vnf_identifier(&b).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creator_terminates_only_after_its_users_sqlite() {
    creator_terminates_only_after_its_users(World::new(None).await).await;
}

#[vnfm_test_env::needs(postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creator_terminates_only_after_its_users_postgres() {
    let url = vnfm_test_env::var("VNFM_TEST_POSTGRES_URL");
    creator_terminates_only_after_its_users(World::new(Some(&url)).await).await;
}

/// Regression: a `terminate_end` hook that removes its cluster's connection and asks to
/// deregister the cluster's VIM in the same outcome failed, because the VIM was deregistered
/// before the removal was written (the registry refuses to delete a VIM an instance still
/// references).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminate_end_hook_removing_and_deregistering_its_cluster_vim() {
    let w = World::new(None).await;
    let (a, vim) = w.creator("creator-solo").await;
    let done = w
        .completed(w.terminate(&a, Value::Null).await.unwrap())
        .await;
    assert!(done.error.is_none());
    assert_eq!(
        w.registry.show(&vim).await.unwrap_err().kind().status(),
        404
    );
    assert!(
        !w.instance(&a)
            .await
            .vim_connection_info
            .unwrap()
            .contains_key("k8s")
    );
    assert!(
        w.hooks
            .calls
            .lock()
            .unwrap()
            .contains(&"creator-solo:terminate_end".to_string())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forced_terminate_records_the_dependents_it_leaves() {
    let w = World::new(None).await;
    let (a, vim) = w.creator("creator-a").await;
    let b = w.cnf("cnf-b", &vim).await;

    let e = w
        .terminate(&a, json!({FORCE_WITH_DEPENDENTS: "yes"}))
        .await
        .unwrap_err();
    assert_eq!(e.kind().status(), 400);
    assert!(
        e.to_string()
            .starts_with("/additionalParams/forceWithDependents"),
        "{e}"
    );
    let e = w
        .terminate(&a, json!({FORCE_WITH_DEPENDENTS: false}))
        .await
        .unwrap_err();
    assert_eq!(e.kind().status(), 409);

    let op = w
        .terminate(&a, json!({FORCE_WITH_DEPENDENTS: true}))
        .await
        .unwrap();
    // The warning is on the occurrence from the start.
    let started = op.warnings.clone().unwrap_or_default();
    assert_eq!(started.len(), 1, "{started:?}");
    for needle in [b.as_str(), "\"cnf-b\"", vim.as_str(), "forceWithDependents"] {
        assert!(started[0].contains(needle), "{needle}: {started:?}");
    }
    let done = w.completed(op).await;
    let warnings = done.warnings.unwrap();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert_eq!(warnings[0], started[0]);
    assert_eq!(
        warnings[1],
        format!(
            "VIM {vim} was not deregistered: VNF instance(s) {b} still use it (terminated with additionalParams.forceWithDependents)"
        )
    );
    // The VIM stays (B still runs on it), still marked with its creator.
    let view = w.registry.show(&vim).await.unwrap();
    assert_eq!(view.created_by_instance, Some(a.clone()));
    assert_eq!(view.used_by_instances, std::slice::from_ref(&b));
    assert_eq!(
        w.instance(&a).await.instantiation_state,
        InstantiationState::NotInstantiated
    );

    // Its creator's identifier cannot be deleted while B uses the VIM (no force here).
    let e = w.lcm.delete_vnf_identifier(&a).await.unwrap_err();
    assert_eq!(e.kind().status(), 409);
    assert!(matches!(
        &e,
        LcmError::VimDependents { action: GuardedAction::DeleteIdentifier, dependents, .. }
            if dependents == &[dependent(&b, "cnf-b", &vim)]
    ));
    assert!(!e.to_string().contains("forceWithDependents"), "{e}");
    w.lcm.get_instance(&a).await.unwrap();

    // Nobody new may start using a VIM whose creator is not instantiated.
    let c = w.create("cnf-c").await;
    let e = w
        .lcm
        .instantiate(&c, req(World::on(&vim)))
        .await
        .unwrap_err();
    assert_eq!(e.kind().status(), 409);
    assert_eq!(
        e.to_string(),
        format!(
            "/vimConnectionInfo/k8s: VIM {vim} was registered by a lifecycle hook of VNF instance {a}, which is NOT_INSTANTIATED; the VIM goes away with it, so it cannot be newly referenced: use another VIM"
        )
    );
    assert!(w.op_occs(&c).await.is_empty());

    // Once B is gone, A's identifier goes, and the VIM with it.
    w.completed(w.terminate(&b, Value::Null).await.unwrap())
        .await;
    w.lcm.delete_vnf_identifier(&a).await.unwrap();
    assert_eq!(
        w.registry.show(&vim).await.unwrap_err().kind().status(),
        404
    );
}

/// An instantiate that has not begun yet (its request references the VIM, its instance does
/// not) already counts as a dependent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_instantiate_on_the_vim_blocks_its_creator() {
    let w = World::new(None).await;
    let (a, vim) = w.creator("creator-a").await;
    *w.vims.gated.lock().unwrap() = Some(vim.clone());
    w.vims.resolve.close();
    let b = w.create("cnf-b").await;
    let pending = w.lcm.instantiate(&b, req(World::on(&vim))).await.unwrap();
    assert_eq!(pending.operation_state, State::Starting);
    let e = w.terminate(&a, Value::Null).await.unwrap_err();
    match &e {
        LcmError::VimDependents { dependents, .. } => assert_eq!(
            dependents,
            &[DependentInstance {
                vnf_lcm_op_occ_id: Some(pending.id.to_string()),
                ..dependent(&b, "cnf-b", &vim)
            }]
        ),
        other => panic!("expected VimDependents, got {other:?}"),
    }
    assert!(
        e.to_string().contains(&format!(
            "(requested by operation occurrence {})",
            pending.id
        )),
        "{e}"
    );
    w.vims.resolve.release();
    w.completed(pending).await;
}

/// The check an operation bringing a new reference makes again once its occurrence exists:
/// here the creator's TERMINATE started (and passed its own checks) while B's instantiate was
/// between its first check and creating its occurrence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_user_racing_its_creators_terminate_is_refused_under_the_lock() {
    let w = World::new(None).await;
    let (a, vim) = w.creator("creator-a").await;
    w.hooks.terminate_end.close();
    w.vims.seal.close();
    let b = w.create("cnf-b").await;
    // An inline entry makes B's instantiate stop at sealing, after its first check.
    let mut body = World::on(&vim);
    body["vimConnectionInfo"]["extra"] = json!({
        "vimType": KUBERNETES, "interfaceInfo": {"endpoint": "https://10.20.0.1:6443"},
        "accessInfo": {"bearer_token": "other-cluster-token"}
    });
    let lcm = w.lcm.clone();
    let b_id = b.clone();
    let racing = tokio::spawn(async move { lcm.instantiate(&b_id, req(body)).await });
    // Wait until B is parked at sealing (it then waits on the gate).
    let deadline = std::time::Instant::now() + WAIT;
    while w.vims.seal.0.receiver_count() == 0 {
        assert!(
            std::time::Instant::now() < deadline && !racing.is_finished(),
            "B's instantiate never reached sealing"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(w.op_occs(&b).await.is_empty());
    // A's TERMINATE sees no dependent and starts; its terminate_end hook is held.
    let terminating = w.terminate(&a, Value::Null).await.unwrap();
    w.vims.seal.release();
    let e = racing.await.unwrap().unwrap_err();
    assert_eq!(e.kind().status(), 409);
    assert!(
        matches!(&e, LcmError::VimCreatorUnavailable { reason, creator_id, .. }
            if creator_id == a.as_str()
                && reason == &format!("is being terminated (operation occurrence {})", terminating.id)),
        "{e}"
    );
    // Its occurrence had been created; it ended at once without doing anything.
    let occs = w.op_occs(&b).await;
    assert_eq!(occs.len(), 1);
    let b_occ = w.done(&occs[0]).await;
    assert_eq!(b_occ.operation_state, State::RolledBack);
    assert_eq!(
        w.instance(&b).await.instantiation_state,
        InstantiationState::NotInstantiated
    );
    w.hooks.terminate_end.release();
    w.completed(terminating).await;
    assert_eq!(
        w.registry.show(&vim).await.unwrap_err().kind().status(),
        404
    );
    assert!(
        !w.hooks
            .calls
            .lock()
            .unwrap()
            .iter()
            .any(|c| c.starts_with("cnf-b:"))
    );
}

/// A creator being terminated refuses new users of its VIM before they start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_creator_being_terminated_refuses_new_users() {
    let w = World::new(None).await;
    let (a, vim) = w.creator("creator-a").await;
    w.hooks.terminate_end.close();
    let terminating = w.terminate(&a, Value::Null).await.unwrap();
    let c = w.create("cnf-c").await;
    let e = w
        .lcm
        .instantiate(&c, req(World::on(&vim)))
        .await
        .unwrap_err();
    assert!(
        matches!(&e, LcmError::VimCreatorUnavailable { pointer, .. } if pointer == "/vimConnectionInfo/k8s"),
        "{e}"
    );
    assert!(w.op_occs(&c).await.is_empty());
    w.hooks.terminate_end.release();
    w.completed(terminating).await;
}

/// A hook of another operation asking to deregister a VIM another instance uses fails its
/// step with the users named, before anything of its outcome is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_deregistering_a_vim_in_use_fails_its_step_and_changes_nothing() {
    let w = World::new(None).await;
    let (a, vim) = w.creator("creator-a").await;
    let b = w.cnf("cnf-b", &vim).await;
    let (before, _) = w.lcm.get_instance_versioned(&a).await.unwrap();
    let op = w.lcm.heal(&a, req(json!({"cause": "test"}))).await.unwrap();
    let failed = w.done(&op).await;
    assert_eq!(failed.operation_state, State::FailedTemp);
    let detail = failed.error.unwrap().detail;
    assert!(
        detail.contains(&format!("VIM {vim} is still used by VNF instance(s) {b}")),
        "{detail}"
    );
    assert_eq!(
        w.instance(&a).await.vim_connection_info,
        before.vim_connection_info
    );
    assert_eq!(
        w.registry.show(&vim).await.unwrap().created_by_instance,
        Some(a.clone())
    );
}

/// The VIM kinds of the OpenStack and Kubernetes drivers.
fn all_vim_kinds() -> vnfm_driver_api::VimKinds {
    vnfm_driver_api::VimKinds::new()
        .with(std::sync::Arc::new(vnfm_infra_openstack::OpenStackVimKind))
        .with(std::sync::Arc::new(
            vnfm_infra_kubernetes::KubernetesVimKind,
        ))
}
