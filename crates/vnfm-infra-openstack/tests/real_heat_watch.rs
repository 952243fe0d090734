//! The infrastructure watch against the test cloud (`scripts/test-env/openstack.sh`: real
//! Keystone, Heat, Nova, Neutron): a VNFC's server that Heat holds in `CHECK_FAILED`, or that
//! Nova puts in `ERROR`, raises an alarm on that VNFC through the core's fault manager, and
//! healing the VNFC clears it; with automatic healing on, the alarm of a server in `ERROR`
//! heals the VNFC by itself (Nova builds a new server) and is cleared. Ignored, with the
//! reason, when the test cloud was not there at build time
//! (`#[vnfm_test_env::needs(openstack)]`).

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use support::Cloud;
use vnfm_assurance::FaultManager;
use vnfm_assurance::fm::{AutoHeal, AutoHealPolicy, InfraWatch, Swept};
use vnfm_driver_api::memory::RecordingMgmtDriver;
use vnfm_driver_api::{ArtifactSource, FixedAnswer, ResolvedVim, RunControl};
use vnfm_infra_openstack::OpenStackDriver;
use vnfm_infra_openstack::heat::Heat;
use vnfm_infra_openstack::inventory::{meta_key, meta_str};
use vnfm_lcm::testing::NoSubscribers;
use vnfm_lcm::{InlineVimDirectory, Keyring, Lcm, LcmConfig, MemoryCatalog};
use vnfm_types::{
    LcmOperationStateType, LcmOperationType, PerceivedSeverity, VnfInstance, VnfcResourceInfo,
};

const WAIT: Duration = Duration::from_secs(600);

/// The lifecycle runner on the test cloud with the infrastructure watch over it, and one
/// instance of the test package instantiated with `request` (its stack deleted if the test
/// panics).
struct Watched {
    lcm: Lcm,
    store: Arc<dyn vnfm_store::Store>,
    watch: InfraWatch,
    driver: Arc<OpenStackDriver>,
    vnf: VnfInstance,
    _guard: support::StackGuard,
    _dir: tempfile::TempDir,
}

/// See [`Watched`]; with `auto_heal`, the fault manager heals the VNFCs of alarms
/// automatically (for instances that ask for it). The package is the test package.
async fn watched(cloud: &Cloud, auto_heal: bool, request: serde_json::Value) -> Watched {
    let package: Arc<dyn ArtifactSource> = Arc::new(support::package(""));
    watched_package(
        cloud,
        auto_heal,
        (support::vnfd("vnfd-heat-watch"), package),
        request,
    )
    .await
}

/// See [`Watched`], for the package `vnfd` and its files (its LCM hooks recorded).
async fn watched_package(
    cloud: &Cloud,
    auto_heal: bool,
    (vnfd, files): (vnfm_descriptor::Vnfd, Arc<dyn ArtifactSource>),
    request: serde_json::Value,
) -> Watched {
    let dir = tempfile::tempdir().unwrap();
    let store = vnfm_store_sql::open(&format!("sqlite://{}", dir.path().join("lcm.db").display()))
        .await
        .unwrap();
    let catalog = MemoryCatalog::new();
    let vnfd_id = catalog.insert(vnfd, files);
    let driver = Arc::new(OpenStackDriver::new(support::driver_config()));
    let lcm = Lcm::builder(
        store.clone(),
        Arc::new(InlineVimDirectory),
        Arc::new(NoSubscribers),
        Arc::new(catalog),
    )
    .infra_driver(driver.clone())
    .mgmt_driver(Arc::new(RecordingMgmtDriver::new()))
    .config(LcmConfig {
        step_timeout: Duration::from_secs(600),
        ..LcmConfig::default()
    })
    .build();
    let keyring = Arc::new(Keyring::from_key_list(&Keyring::generate_key()).unwrap());
    let mut faults = FaultManager::new(store.clone(), keyring, Arc::new(FixedAnswer(204)));
    if auto_heal {
        faults = faults.with_auto_heal(AutoHeal::new(lcm.clone(), AutoHealPolicy::default()));
    }
    let watch = InfraWatch::new(lcm.clone(), faults, Duration::from_secs(60));
    let vnf = lcm
        .create_vnf_identifier(serde_json::from_value(json!({"vnfdId": vnfd_id})).unwrap())
        .await
        .unwrap();
    let guard = support::StackGuard::new(cloud.clone(), driver.clone());
    guard.watch(&vnf.id);
    let op = lcm
        .instantiate(&vnf.id, serde_json::from_value(request).unwrap())
        .await
        .unwrap();
    completed(lcm.wait(&op.id, WAIT).await.unwrap());
    Watched {
        lcm,
        store,
        watch,
        driver,
        vnf,
        _guard: guard,
        _dir: dir,
    }
}

impl Watched {
    /// What Nova and Neutron hold, read as the test user.
    fn services(&self, cloud: &Cloud) -> support::Services {
        let vim = ResolvedVim::new(
            "vim1",
            serde_json::from_value(cloud.vim_connection()).unwrap(),
        );
        support::Services::new(self.driver.session(&vim).unwrap())
    }

    /// Sweeps once and asserts (raised, cleared, failures).
    async fn sweep_expecting(&self, raised: usize, cleared: usize) -> Swept {
        let sweep = self.watch.sweep().await.unwrap();
        assert_eq!(
            (sweep.raised, sweep.cleared, sweep.failures),
            (raised, cleared, 0),
            "{sweep:?}"
        );
        sweep
    }

    /// Waits for the HEAL the fault manager started on its own, and answers it once ended.
    async fn automatic_heal(&self) -> vnfm_types::VnfLcmOpOcc {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let ops = self
                .lcm
                .list_op_occs(&vnfm_store::OpOccQuery {
                    vnf_instance_id: Some(self.vnf.id.clone()),
                    operation: Some(LcmOperationType::Heal),
                    ..Default::default()
                })
                .await
                .unwrap()
                .items;
            if let Some(op) = ops.into_iter().next() {
                return self.lcm.wait(&op.id, WAIT).await.unwrap();
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the alarm started no HEAL"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Terminates the instance and stops the runner.
    async fn terminate(self) {
        let op = self
            .lcm
            .terminate(
                &self.vnf.id,
                serde_json::from_value(json!({"terminationType": "FORCEFUL"})).unwrap(),
            )
            .await
            .unwrap();
        completed(self.lcm.wait(&op.id, WAIT).await.unwrap());
        self.lcm.shutdown(Duration::from_secs(5)).await;
    }
}

fn completed(occ: vnfm_types::VnfLcmOpOcc) {
    assert_eq!(
        occ.operation_state,
        LcmOperationStateType::Completed,
        "{:?}",
        occ.error
    );
}

#[vnfm_test_env::needs(openstack)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_heat_holds_failed_raises_an_alarm_on_its_vnfc_until_healed() {
    let cloud = Cloud::from_env();
    let w = watched(
        &cloud,
        false,
        support::instantiate_request_at(&cloud, "10.10.0.55"),
    )
    .await;
    let (lcm, store, driver, vnf) = (&w.lcm, &w.store, &w.driver, &w.vnf);
    let sweep = w.watch.sweep().await.unwrap();
    assert_eq!(
        (sweep.observed, sweep.raised, sweep.failures),
        (1, 0, 0),
        "{sweep:?}"
    );

    // Heat marks one VNFC's server unhealthy (CHECK_FAILED), as an operator or a monitor would.
    let inst: VnfInstance = lcm.get_instance(&vnf.id).await.unwrap();
    let info = inst.instantiated_vnf_info.clone().unwrap();
    let target = info.vnfc_resource_info.as_ref().unwrap()[0].clone();
    let vnfc_id = support::vnfc_info_id(&inst, &target);
    let vim = ResolvedVim::new(
        "vim1",
        serde_json::from_value(cloud.vim_connection()).unwrap(),
    );
    let session = driver.session(&vim).unwrap();
    let control = RunControl::with_timeout(Duration::from_secs(60));
    let heat = Heat::connect(&session, &control, driver.config().poll.clone())
        .await
        .unwrap();
    let stack = heat
        .find(&driver.stack_name(vnf.id.as_str()))
        .await
        .unwrap()
        .unwrap();
    let server = heat
        .resources(&stack.reference(), 5)
        .await
        .unwrap()
        .into_iter()
        .find(|r| r.physical_resource_id == target.compute_resource.resource_id)
        .expect("the VNFC's server is a resource of the stack");
    heat.mark_unhealthy(&server.stack().unwrap(), &server.resource_name, "disk lost")
        .await
        .unwrap();

    let sweep = w.watch.sweep().await.unwrap();
    assert_eq!(
        sweep,
        Swept {
            observed: 1,
            raised: 1,
            ..Swept::default()
        }
    );
    let open = store.open_alarms(Some(&vnf.id)).await.unwrap();
    assert_eq!(open.len(), 1, "{open:?}");
    let alarm = &open[0].0.alarm;
    assert_eq!(alarm.probable_cause, "CHECK_FAILED");
    assert_eq!(alarm.perceived_severity, PerceivedSeverity::Major);
    assert_eq!(
        alarm.vnfc_instance_ids.as_deref(),
        Some(&[vnfc_id.clone()][..])
    );
    assert_eq!(
        alarm.fault_type.as_deref(),
        Some("infrastructure/openstack")
    );
    let details = alarm.fault_details.clone().unwrap_or_default();
    assert!(
        details.iter().any(|d| d.contains("disk lost")),
        "{details:?}"
    );

    // Healing the VNFC replaces its server: the alarm is cleared.
    let op = lcm
        .heal(
            &vnf.id,
            serde_json::from_value(json!({"vnfcInstanceId": [vnfc_id]})).unwrap(),
        )
        .await
        .unwrap();
    completed(lcm.wait(&op.id, WAIT).await.unwrap());
    w.sweep_expecting(0, 1).await;
    assert!(store.open_alarms(Some(&vnf.id)).await.unwrap().is_empty());

    // Nova puts another VNFC's server in ERROR: a critical alarm on that VNFC, whatever Heat
    // says of the server; once Nova reports it ACTIVE again, the alarm is cleared.
    let inst: VnfInstance = lcm.get_instance(&vnf.id).await.unwrap();
    let info = inst.instantiated_vnf_info.clone().unwrap();
    let target = info.vnfc_resource_info.as_ref().unwrap()[1].clone();
    let vnfc_id = support::vnfc_info_id(&inst, &target);
    let server_id = target.compute_resource.resource_id.clone();
    support::reset_state(&cloud, driver, &server_id, "error").await;
    let services = support::Services::new(session.clone());
    assert_eq!(
        services.server(&server_id).await.unwrap()["status"],
        "ERROR"
    );
    w.sweep_expecting(1, 0).await;
    let open = store.open_alarms(Some(&vnf.id)).await.unwrap();
    assert_eq!(open.len(), 1, "{open:?}");
    let alarm = &open[0].0.alarm;
    assert_eq!(alarm.probable_cause, "ERROR");
    assert_eq!(alarm.perceived_severity, PerceivedSeverity::Critical);
    assert_eq!(
        alarm.vnfc_instance_ids.as_deref(),
        Some(&[vnfc_id.clone()][..])
    );
    support::reset_state(&cloud, driver, &server_id, "active").await;
    w.sweep_expecting(0, 1).await;
    assert!(store.open_alarms(Some(&vnf.id)).await.unwrap().is_empty());

    // In ERROR again, the VNFC is healed: the driver deletes the server through Nova (Heat
    // alone cannot detach the ports of a server in ERROR, and its replacement failed with
    // Neutron's `Port ... is still in use`), Heat builds a new server on the same ports, and
    // the alarm is cleared.
    let ports_before = services
        .ports_of_servers(std::slice::from_ref(&server_id))
        .await;
    assert!(!ports_before.is_empty(), "{server_id} has no ports");
    support::reset_state(&cloud, driver, &server_id, "error").await;
    w.sweep_expecting(1, 0).await;
    let op = lcm
        .heal(
            &vnf.id,
            serde_json::from_value(json!({"vnfcInstanceId": [vnfc_id]})).unwrap(),
        )
        .await
        .unwrap();
    completed(lcm.wait(&op.id, WAIT).await.unwrap());
    let inst: VnfInstance = lcm.get_instance(&vnf.id).await.unwrap();
    let healed = inst
        .instantiated_vnf_info
        .clone()
        .unwrap()
        .vnfc_resource_info
        .unwrap();
    let healed = in_place_of(&healed, &target);
    let new_server = healed.compute_resource.resource_id.clone();
    assert_ne!(new_server, server_id);
    services.assert_servers_gone([&server_id]).await;
    services
        .assert_servers_status(std::slice::from_ref(&new_server), "ACTIVE")
        .await;
    assert_eq!(
        services
            .ports_of_servers(std::slice::from_ref(&new_server))
            .await,
        ports_before,
        "the new server has the old server's ports"
    );
    w.sweep_expecting(0, 1).await;
    assert!(store.open_alarms(Some(&vnf.id)).await.unwrap().is_empty());

    w.terminate().await;
}

/// Nova puts the first VNFC's server of `w` (instantiated with automatic healing on) in
/// `ERROR`: the watch raises a critical alarm on that VNFC, the fault manager heals it on its
/// own, Nova holds a new `ACTIVE` server on the old server's ports, and the next sweep clears
/// the alarm. Terminates the instance.
async fn auto_heal_of_a_server_in_error(cloud: &Cloud, w: Watched) {
    let inst: VnfInstance = w.lcm.get_instance(&w.vnf.id).await.unwrap();
    let target = inst
        .instantiated_vnf_info
        .as_ref()
        .and_then(|i| i.vnfc_resource_info.as_ref())
        .unwrap()[0]
        .clone();
    let vnfc_id = support::vnfc_info_id(&inst, &target);
    let server_id = target.compute_resource.resource_id.clone();
    let services = w.services(cloud);
    let ports_before = services
        .ports_of_servers(std::slice::from_ref(&server_id))
        .await;
    assert!(!ports_before.is_empty(), "{server_id} has no ports");

    // Nova puts the server in ERROR (the administrator's os-resetState, as Nova does when
    // its host fails): the watch raises a critical alarm on the VNFC, and the fault manager
    // starts a HEAL of that VNFC on its own.
    support::reset_state(cloud, &w.driver, &server_id, "error").await;
    w.sweep_expecting(1, 0).await;
    let open = w.store.open_alarms(Some(&w.vnf.id)).await.unwrap();
    assert_eq!(open.len(), 1, "{open:?}");
    let alarm = open[0].0.alarm.clone();
    assert_eq!(alarm.perceived_severity, PerceivedSeverity::Critical);
    assert_eq!(
        alarm.vnfc_instance_ids.as_deref(),
        Some(&[vnfc_id.clone()][..])
    );
    let heal = w.automatic_heal().await;
    completed(heal.clone());
    assert!(heal.is_automatic_invocation);

    // Nova deleted the server in ERROR and built a new one, ACTIVE, on the same ports.
    let inst: VnfInstance = w.lcm.get_instance(&w.vnf.id).await.unwrap();
    let healed = inst
        .instantiated_vnf_info
        .as_ref()
        .and_then(|i| i.vnfc_resource_info.as_ref())
        .unwrap();
    let healed = in_place_of(healed, &target).clone();
    let new_server = healed.compute_resource.resource_id.clone();
    assert_ne!(new_server, server_id);
    services.assert_servers_gone([&server_id]).await;
    services
        .assert_servers_status(std::slice::from_ref(&new_server), "ACTIVE")
        .await;
    assert_eq!(
        services
            .ports_of_servers(std::slice::from_ref(&new_server))
            .await,
        ports_before
    );

    // The next sweep finds the VNFC fine: the alarm is cleared.
    w.sweep_expecting(0, 1).await;
    assert!(
        w.store
            .open_alarms(Some(&w.vnf.id))
            .await
            .unwrap()
            .is_empty()
    );
    w.terminate().await;
}

#[vnfm_test_env::needs(openstack)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_nova_puts_in_error_is_healed_automatically_and_its_alarm_cleared() {
    let cloud = Cloud::from_env();
    let mut request = support::instantiate_request_at(&cloud, "10.10.0.57");
    request["vnfConfigurableProperties"] = json!({"isAutohealEnabled": true});
    let w = watched(&cloud, true, request).await;
    auto_heal_of_a_server_in_error(&cloud, w).await;
}

#[vnfm_test_env::needs(openstack, corpus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tacker_basic_lcms_min_server_in_error_is_healed_automatically() {
    let cloud = Cloud::from_env();
    let root = crate::corpus_nfv::tacker("v2-vm-basic-lcms-min");
    let vnfd = crate::corpus_nfv::load_vnfd(&root);
    let files: Arc<dyn ArtifactSource> = Arc::new(crate::corpus_nfv::Dir(root));
    let image = json!({"vcImageId": "cirros-0.6"});
    let request = json!({
        "flavourId": "simple",
        "vimConnectionInfo": {"vim1": cloud.vim_connection()},
        "vnfConfigurableProperties": {"isAutohealEnabled": true},
        "additionalParams": {"nfv": {"VDU": {"VDU1": image, "VDU2": image}}}
    });
    let w = watched_package(&cloud, true, (vnfd, files), request).await;
    auto_heal_of_a_server_in_error(&cloud, w).await;
}

/// The VNFC of `vnfcs` in the place of `old` (the same stack and server name): after a heal,
/// a new VNFC with its own id (a new server, as Tacker records it).
fn in_place_of<'v>(vnfcs: &'v [VnfcResourceInfo], old: &VnfcResourceInfo) -> &'v VnfcResourceInfo {
    let place = |v: &VnfcResourceInfo| {
        (
            meta_str(v, meta_key::STACK_ID).map(str::to_string),
            meta_str(v, meta_key::RESOURCE_NAME).map(str::to_string),
        )
    };
    let new = vnfcs
        .iter()
        .find(|v| place(v) == place(old))
        .expect("a VNFC in the place of the healed one");
    assert_ne!(new.id, old.id, "a new server is a new VNFC");
    new
}
