//! The driver under the real lifecycle runner (`vnfm_lcm::Lcm`, SQLite store), against real
//! Keystone and Heat started by `scripts/test-env/openstack.sh`. Ignored, with the reason,
//! when the test cloud was not there at build time (`#[vnfm_test_env::needs(openstack)]`).

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use support::Cloud;
use vnfm_driver_api::memory::{MemArtifacts, RecordingMgmtDriver};
use vnfm_driver_api::{ArtifactSource, ResolvedVim, RunControl};
use vnfm_infra_openstack::OpenStackDriver;
use vnfm_infra_openstack::heat::{Heat, HeatResource};
use vnfm_infra_openstack::inventory::{meta_key, meta_str};
use vnfm_infra_openstack::keystone::Session;
use vnfm_lcm::testing::NoSubscribers;
use vnfm_lcm::{InlineVimDirectory, Lcm, LcmConfig, MemoryCatalog};
use vnfm_types::{
    ChangeType, InstantiationState, LcmOperationStateType, VnfInstance, VnfInstanceId, VnfLcmOpOcc,
    VnfcResourceInfo,
};

const WAIT: Duration = Duration::from_secs(600);

/// The image of the test cloud (`scripts/test-env/openstack.sh`) the test packages boot from.
const TEST_IMAGE: &str = "cirros-0.6";

#[path = "real_heat/corpus.rs"]
mod corpus;
#[path = "real_heat/corpus_aspects.rs"]
mod corpus_aspects;
#[path = "real_heat/corpus_heal_rollback.rs"]
mod corpus_heal_rollback;
#[path = "real_heat/corpus_new_volume.rs"]
mod corpus_new_volume;
#[path = "real_heat/corpus_non_boot_volume.rs"]
mod corpus_non_boot_volume;
#[path = "real_heat/corpus_volume_samples.rs"]
mod corpus_volume_samples;
#[path = "real_heat/corpus_volumes.rs"]
mod corpus_volumes;
#[path = "real_heat/generated_to_base_hot.rs"]
mod generated_to_base_hot;
#[path = "real_heat/lifecycle.rs"]
mod lifecycle;
#[path = "real_heat/rollbacks.rs"]
mod rollbacks;
#[path = "real_heat/steps.rs"]
mod steps;

struct Env {
    lcm: Lcm,
    catalog: MemoryCatalog,
    /// The LCM hooks the packages bind (Tacker's samples bind scripts the corpus lacks): recorded.
    hooks: Arc<RecordingMgmtDriver>,
    driver: Arc<OpenStackDriver>,
    cloud: Cloud,
    /// Deletes the stacks of the instances the test created when it panics.
    guard: support::StackGuard,
    _dir: tempfile::TempDir,
}

async fn env(cloud: Cloud) -> Env {
    let dir = tempfile::tempdir().unwrap();
    let store = vnfm_store_sql::open(&format!("sqlite://{}", dir.path().join("lcm.db").display()))
        .await
        .unwrap();
    let catalog = MemoryCatalog::new();
    let ok: Arc<dyn ArtifactSource> = Arc::new(support::package(""));
    let failing: Arc<dyn ArtifactSource> = Arc::new(support::package(support::FAILING));
    let no_base_hot: Arc<dyn ArtifactSource> = Arc::new(MemArtifacts::new());
    catalog.insert(support::vnfd("vnfd-heat-test"), ok);
    catalog.insert(support::vnfd("vnfd-heat-fail"), failing);
    // Without the volume and the internal network: see support::vnfd_for_generated.
    catalog.insert(
        support::vnfd_for_generated("vnfd-heat-generated"),
        no_base_hot,
    );
    let readiness: Arc<dyn ArtifactSource> = Arc::new(support::package_from(
        support::TOP_HOT.to_string(),
        support::vdu1_with_readiness_check(),
    ));
    catalog.insert(support::vnfd("vnfd-heat-ready"), readiness);
    let network_check: Arc<dyn ArtifactSource> = Arc::new(support::package_from(
        support::top_with_network_check(),
        support::VDU1_HOT.to_string(),
    ));
    catalog.insert(support::vnfd("vnfd-heat-netcheck"), network_check);
    let serverless: Arc<dyn ArtifactSource> = Arc::new(
        MemArtifacts::new().with("BaseHOT/simple/heat_test.yaml", support::SERVERLESS_HOT),
    );
    catalog.insert(support::vnfd("vnfd-heat-serverless"), serverless);
    let packages = catalog.clone();
    let hooks = Arc::new(RecordingMgmtDriver::new());
    let driver = Arc::new(OpenStackDriver::new(support::driver_config()));
    let lcm = Lcm::builder(
        store,
        Arc::new(InlineVimDirectory),
        Arc::new(NoSubscribers),
        Arc::new(catalog),
    )
    .infra_driver(driver.clone())
    .mgmt_driver(hooks.clone())
    .config(LcmConfig {
        step_timeout: Duration::from_secs(600),
        ..LcmConfig::default()
    })
    .build();
    Env {
        lcm,
        catalog: packages,
        hooks,
        guard: support::StackGuard::new(cloud.clone(), driver.clone()),
        driver,
        cloud,
        _dir: dir,
    }
}

impl Env {
    /// Adds the corpus package `name` to the catalog; answers its VNFD id.
    fn corpus_vnfd(&self, name: &str) -> String {
        let (vnfd, files) = corpus::corpus_package(name);
        self.catalog.insert(vnfd, files)
    }

    async fn create(&self, vnfd_id: &str) -> VnfInstance {
        let vnf = self
            .lcm
            .create_vnf_identifier(
                serde_json::from_value(json!({"vnfdId": vnfd_id, "vnfInstanceName": "heat-test"}))
                    .unwrap(),
            )
            .await
            .unwrap();
        self.guard.watch(&vnf.id);
        vnf
    }

    /// Starts the instantiation of `id` with the test request on `cloud`'s networks, its
    /// fixed address `address` ([`support::instantiate_request_at`]).
    async fn instantiate_at(
        &self,
        id: &VnfInstanceId,
        cloud: &Cloud,
        address: &str,
    ) -> VnfLcmOpOcc {
        self.lcm
            .instantiate(
                id,
                serde_json::from_value(support::instantiate_request_at(cloud, address)).unwrap(),
            )
            .await
            .unwrap()
    }

    /// Terminates `id` forcefully; the completed occurrence.
    async fn terminate_forcefully(&self, id: &VnfInstanceId) -> VnfLcmOpOcc {
        let op = self
            .lcm
            .terminate(
                id,
                serde_json::from_value(json!({"terminationType": "FORCEFUL"})).unwrap(),
            )
            .await
            .unwrap();
        self.completed(op).await
    }

    async fn done(&self, occ: VnfLcmOpOcc) -> VnfLcmOpOcc {
        self.lcm.wait(&occ.id, WAIT).await.unwrap()
    }

    /// Starts a change of instance `id`'s package to the VNFD `to` (no other parameter).
    async fn change_vnfpkg_to(&self, id: &VnfInstanceId, to: &str) -> VnfLcmOpOcc {
        self.lcm
            .change_vnfpkg(id, serde_json::from_value(json!({"vnfdId": to})).unwrap())
            .await
            .unwrap()
    }

    async fn completed(&self, occ: VnfLcmOpOcc) -> VnfLcmOpOcc {
        let d = self.done(occ).await;
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

    /// The template of the stack of `id`.
    async fn template(&self, id: &VnfInstanceId) -> Value {
        let vim = ResolvedVim::new(
            "vim1",
            serde_json::from_value(self.cloud.vim_connection()).unwrap(),
        );
        let session = self.driver.session(&vim).unwrap();
        let control = RunControl::with_timeout(Duration::from_secs(60));
        let heat = Heat::connect(&session, &control, self.driver.config().poll.clone())
            .await
            .unwrap();
        let s = heat
            .find(&self.driver.stack_name(id.as_str()))
            .await
            .unwrap()
            .unwrap();
        heat.template(&s.reference()).await.unwrap()
    }

    /// A Heat client on the test cloud, for checks behind the driver's back.
    fn session(&self) -> Arc<Session> {
        let vim = ResolvedVim::new(
            "vim1",
            serde_json::from_value(self.cloud.vim_connection()).unwrap(),
        );
        self.driver.session(&vim).unwrap()
    }

    /// What Nova and Neutron hold.
    fn services(&self) -> support::Services {
        support::Services::new(self.session())
    }

    /// Asserts that Nova holds each VNFC's server, built (`ACTIVE`) from the test cloud's
    /// image, with its Neutron ports.
    async fn assert_servers_built(&self, v: &[VnfcResourceInfo]) {
        self.services().assert_servers_built(v, TEST_IMAGE).await;
    }

    /// The ports Neutron has on the servers of these VNFCs.
    async fn ports(&self, v: &[VnfcResourceInfo]) -> BTreeSet<String> {
        self.services().ports_of_servers(&servers(v)).await
    }

    /// Terminates `id` and asserts that Nova and Neutron hold none of `servers` and `ports`
    /// any more.
    async fn terminate_and_check_gone(
        &self,
        id: &VnfInstanceId,
        servers: &[String],
        ports: &BTreeSet<String>,
    ) {
        self.terminate_forcefully(id).await;
        let services = self.services();
        services.assert_servers_gone(servers).await;
        services.assert_ports_gone(ports).await;
    }

    /// The resources of the stack of `id`, `depth` levels of nested stacks down.
    async fn resources(&self, id: &VnfInstanceId, depth: u32) -> Vec<HeatResource> {
        let session = self.session();
        let control = RunControl::with_timeout(Duration::from_secs(60));
        let heat = Heat::connect(&session, &control, self.driver.config().poll.clone())
            .await
            .unwrap();
        let s = heat
            .find(&self.driver.stack_name(id.as_str()))
            .await
            .unwrap()
            .expect("the stack exists");
        heat.resources(&s.reference(), depth).await.unwrap()
    }

    /// The members of autoscaling group `group` of the stack of `id`: (name, nested stack
    /// id) and status.
    async fn group_members(
        &self,
        id: &VnfInstanceId,
        group: &str,
    ) -> BTreeMap<(String, String), String> {
        self.resources(id, 1)
            .await
            .into_iter()
            .filter(|r| r.parent_resource.as_deref() == Some(group))
            .map(|r| ((r.resource_name, r.physical_resource_id), r.resource_status))
            .collect()
    }

    /// Sends `status` (`SUCCESS` or `FAILURE`) with `reason` to every wait condition handle
    /// of the stack of `id` not in `answered` (nested stack ids), as the VNFC's boot script
    /// would.
    async fn answer_handles(
        &self,
        id: &VnfInstanceId,
        status: &str,
        reason: &str,
        answered: &mut BTreeSet<String>,
    ) {
        let session = self.session();
        // Heat answers a signal once its engine took it, which can take a while on a busy
        // test machine.
        let control = RunControl::with_timeout(Duration::from_secs(300));
        let heat = Heat::connect(&session, &control, self.driver.config().poll.clone())
            .await
            .unwrap();
        // The stack or its nested stacks may not be there yet: try again on the next round.
        let Ok(Some(s)) = heat.find(&self.driver.stack_name(id.as_str())).await else {
            return;
        };
        let Ok(resources) = heat.resources(&s.reference(), 5).await else {
            return;
        };
        for r in resources.iter().filter(|r| {
            r.resource_type == "OS::Heat::WaitConditionHandle"
                && r.resource_status == "CREATE_COMPLETE"
        }) {
            let Some(stack) = r.stack() else { continue };
            if answered.contains(&stack.id) {
                continue;
            }
            let url = format!(
                "{}/stacks/{}/{}/resources/{}/signal",
                heat.base(),
                stack.name,
                stack.id,
                r.resource_name
            );
            let body = json!({"status": status, "reason": reason, "data": reason});
            session
                .call(&control, "heat", Method::POST, &url, Some(&body), &[])
                .await
                .unwrap();
            answered.insert(stack.id);
        }
    }

    /// Waits for `occ` to end while answering the wait condition handles of its instance's
    /// stack (see [`Env::answer_handles`]).
    async fn done_answering(
        &self,
        occ: VnfLcmOpOcc,
        status: &str,
        reason: &str,
        answered: &mut BTreeSet<String>,
    ) -> VnfLcmOpOcc {
        let id = occ.vnf_instance_id.clone();
        let wait = self.lcm.wait(&occ.id, WAIT);
        tokio::pin!(wait);
        loop {
            tokio::select! {
                done = &mut wait => return done.unwrap(),
                _ = tokio::time::sleep(Duration::from_millis(500)) => {
                    self.answer_handles(&id, status, reason, answered).await;
                }
            }
        }
    }

    /// The stack of `id` as Heat shows it (`None` when there is none), and its `nfv`.
    async fn stack(&self, id: &VnfInstanceId) -> Option<(String, Value)> {
        let vim = ResolvedVim::new(
            "vim1",
            serde_json::from_value(self.cloud.vim_connection()).unwrap(),
        );
        let session = self.driver.session(&vim).unwrap();
        let control = RunControl::with_timeout(Duration::from_secs(60));
        let heat = Heat::connect(&session, &control, self.driver.config().poll.clone())
            .await
            .unwrap();
        let s = heat
            .find(&self.driver.stack_name(id.as_str()))
            .await
            .unwrap()?;
        Some((s.stack_status.clone(), s.nfv()))
    }
}

fn vnfcs(i: &VnfInstance) -> Vec<VnfcResourceInfo> {
    i.instantiated_vnf_info
        .as_ref()
        .and_then(|x| x.vnfc_resource_info.clone())
        .unwrap_or_default()
}

fn of_vdu(i: &VnfInstance, vdu: &str) -> Vec<VnfcResourceInfo> {
    vnfcs(i).into_iter().filter(|v| v.vdu_id == vdu).collect()
}

/// The servers of these VNFCs.
fn servers(v: &[VnfcResourceInfo]) -> Vec<String> {
    v.iter()
        .map(|c| c.compute_resource.resource_id.clone())
        .collect()
}

fn ids(v: &[VnfcResourceInfo]) -> BTreeSet<String> {
    v.iter().map(|v| v.id.clone()).collect()
}

/// Where a VNFC's server is: the (nested) stack that holds it and its name there. A server
/// Heat replaces is a new VNFC in the same place.
fn place(v: &VnfcResourceInfo) -> (String, String) {
    let meta = |k| meta_str(v, k).unwrap_or_default().to_string();
    (meta(meta_key::STACK_ID), meta(meta_key::RESOURCE_NAME))
}

/// Asserts that the VNFCs `healed` replaced those of `before`: a new server is a new VNFC (a
/// new id, as Tacker records it), in the place of the old one.
fn assert_replaced_in_place(healed: &[VnfcResourceInfo], before: &[VnfcResourceInfo]) {
    assert!(
        ids(healed).is_disjoint(&ids(before)),
        "{healed:?} {before:?}"
    );
    let places = |v: &[VnfcResourceInfo]| v.iter().map(place).collect::<BTreeSet<_>>();
    assert_eq!(places(healed), places(before));
}

fn changes_of(occ: &VnfLcmOpOcc, change: ChangeType) -> Vec<String> {
    occ.resource_changes
        .as_ref()
        .and_then(|r| r.affected_vnfcs.as_ref())
        .into_iter()
        .flatten()
        .filter(|a| a.change_type == change)
        .map(|a| a.id.clone())
        .collect()
}

/// The IPv4 addresses a VNFC's CP reports.
fn cp_addresses(v: &VnfcResourceInfo, cpd: &str) -> Vec<String> {
    v.vnfc_cp_info
        .iter()
        .flatten()
        .filter(|c| c.cpd_id == cpd)
        .flat_map(|c| c.cp_protocol_info.iter().flatten())
        .flat_map(|p| p.ip_over_ethernet.iter())
        .flat_map(|ip| ip.ip_addresses.iter().flatten())
        .flat_map(|a| a.addresses.iter().flatten().cloned())
        .collect()
}

#[vnfm_test_env::needs(openstack)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_template_whole_vnf_heal_and_package_change_on_real_heat() {
    let cloud = Cloud::from_env();
    let env = env(cloud.clone()).await;
    let vnf = env.create("vnfd-heat-generated").await;

    // No BaseHOT: the template is generated from the VNFD, and Heat accepts it.
    let op = env.instantiate_at(&vnf.id, &cloud, "10.10.0.51").await;
    env.completed(op).await;
    let inst = env.instance(&vnf.id).await;
    let before = vnfcs(&inst);
    assert_eq!(
        (of_vdu(&inst, "VDU1").len(), of_vdu(&inst, "VDU2").len()),
        (2, 1)
    );
    for v in &before {
        let cp = if v.vdu_id == "VDU1" {
            "VDU1_CP1"
        } else {
            "VDU2_CP1"
        };
        assert_eq!(cp_addresses(v, cp).len(), 1, "{v:?}");
        assert!(v.storage_resource_ids.is_none(), "{v:?}");
    }
    env.assert_servers_built(&before).await;
    let template = env.template(&vnf.id).await;
    assert!(
        template["resources"]["VDU2_scale_group"].is_object(),
        "{template}"
    );
    let (_, nfv) = env.stack(&vnf.id).await.unwrap();
    assert_eq!(
        nfv["CP"]["VDU2_CP1"]["fixed_ips"][0]["ip_address"],
        "10.10.0.51"
    );
    assert_eq!(nfv["VDU"]["VDU1"]["vcImageId"], "cirros-0.6");

    // Heal the whole VNF (Tacker's `additionalParams.all` omitted): the stack stays and is
    // updated; every VNFC gets a new server (so a new id, as Tacker records it) in the place
    // of the old one, on the ports it had.
    // By place: the inventory lists the healed VNFCs in another order (their new servers'
    // order).
    let ports_of = |vs: &[VnfcResourceInfo]| -> BTreeMap<(String, String), Option<Vec<String>>> {
        vs.iter()
            .map(|v| {
                let macs = v.vnfc_cp_info.as_ref().map(|cps| {
                    cps.iter()
                        .flat_map(|c| c.cp_protocol_info.iter().flatten())
                        .filter_map(|p| p.ip_over_ethernet.as_ref()?.mac_address.clone())
                        .collect()
                });
                (place(v), macs)
            })
            .collect()
    };
    let op = env
        .lcm
        .heal(
            &vnf.id,
            serde_json::from_value(json!({"cause": "servers"})).unwrap(),
        )
        .await
        .unwrap();
    let done = env.completed(op).await;
    let inst = env.instance(&vnf.id).await;
    let replaced = vnfcs(&inst);
    assert_eq!(replaced.len(), before.len());
    assert!(ids(&replaced).is_disjoint(&ids(&before)), "{replaced:?}");
    assert!(
        servers(&replaced)
            .iter()
            .all(|s| !servers(&before).contains(s)),
        "{replaced:?}"
    );
    assert_eq!(ports_of(&replaced), ports_of(&before));
    assert_eq!(changes_of(&done, ChangeType::Removed).len(), 3);
    assert_eq!(changes_of(&done, ChangeType::Added).len(), 3);
    let (status, _) = env.stack(&vnf.id).await.unwrap();
    assert_eq!(status, "UPDATE_COMPLETE");
    env.assert_servers_built(&replaced).await;
    env.services().assert_servers_gone(&servers(&before)).await;
    let before = replaced;

    // Heal the whole VNF with `all: true`: the stack is created again, every VNFC is new.
    let op = env
        .lcm
        .heal(
            &vnf.id,
            serde_json::from_value(json!({"cause": "all", "additionalParams": {"all": true}}))
                .unwrap(),
        )
        .await
        .unwrap();
    let done = env.completed(op).await;
    let inst = env.instance(&vnf.id).await;
    let healed = vnfcs(&inst);
    assert_eq!(healed.len(), 3);
    assert!(ids(&healed).is_disjoint(&ids(&before)));
    let (status, _) = env.stack(&vnf.id).await.unwrap();
    assert_eq!(status, "CREATE_COMPLETE");
    env.assert_servers_built(&healed).await;
    env.services().assert_servers_gone(&servers(&before)).await;
    assert_eq!(changes_of(&done, ChangeType::Removed).len(), 3);
    assert_eq!(changes_of(&done, ChangeType::Added).len(), 3);

    // Change the package to one with a BaseHOT: the stack now runs its templates, the counts
    // and external connections carry over.
    let op = env
        .lcm
        .change_vnfpkg(
            &vnf.id,
            serde_json::from_value(json!({"vnfdId": "vnfd-heat-test"})).unwrap(),
        )
        .await
        .unwrap();
    env.completed(op).await;
    let inst = env.instance(&vnf.id).await;
    assert_eq!(inst.vnfd_id.as_str(), "vnfd-heat-test");
    assert_eq!(
        (of_vdu(&inst, "VDU1").len(), of_vdu(&inst, "VDU2").len()),
        (2, 1)
    );
    let template = env.template(&vnf.id).await;
    assert!(template["resources"]["VDU2"].is_object(), "{template}");
    assert!(
        template["resources"].get("VDU2_scale_group").is_none(),
        "{template}"
    );
    let (_, nfv) = env.stack(&vnf.id).await.unwrap();
    assert_eq!(nfv["VDU"]["VDU1"]["desired_capacity"], 2);
    assert_eq!(
        nfv["CP"]["VDU2_CP1"]["fixed_ips"][0]["ip_address"],
        "10.10.0.51"
    );

    let op = env
        .lcm
        .terminate(
            &vnf.id,
            serde_json::from_value(
                json!({"terminationType": "GRACEFUL", "gracefulTerminationTimeout": 1}),
            )
            .unwrap(),
        )
        .await
        .unwrap();
    env.completed(op).await;
    assert!(env.stack(&vnf.id).await.is_none());
    env.lcm.shutdown(Duration::from_secs(5)).await;
}

#[vnfm_test_env::needs(openstack)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operate_on_a_stack_without_servers_changes_nothing_on_real_heat() {
    let cloud = Cloud::from_env();
    let env = env(cloud.clone()).await;
    let vnf = env.create("vnfd-heat-serverless").await;
    let op = env.instantiate_at(&vnf.id, &cloud, "10.10.0.56").await;
    env.completed(op).await;
    let before = env.resources(&vnf.id, 5).await;
    assert!(
        !before.iter().any(|r| r.resource_type == "OS::Nova::Server"),
        "{before:?}"
    );
    let show = || async {
        let session = env.session();
        let control = RunControl::with_timeout(Duration::from_secs(60));
        let heat = Heat::connect(&session, &control, env.driver.config().poll.clone())
            .await
            .unwrap();
        heat.find(&env.driver.stack_name(vnf.id.as_str()))
            .await
            .unwrap()
            .unwrap()
    };
    let stack_before = show().await;

    // Operate must not need the compute service for a VNF without
    // servers (nor wait the graceful period for nothing).
    let op = env
        .lcm
        .operate(
            &vnf.id,
            serde_json::from_value(json!({"changeStateTo": "STOPPED", "stopType": "GRACEFUL",
                                           "gracefulStopTimeout": 3600}))
            .unwrap(),
        )
        .await
        .unwrap();
    let done = env.completed(op).await;
    assert!(
        done.resource_changes
            .as_ref()
            .and_then(|r| r.affected_vnfcs.as_ref())
            .is_none_or(Vec::is_empty),
        "{:?}",
        done.resource_changes
    );
    let stack_after = show().await;
    assert_eq!(stack_after.id, stack_before.id);
    assert_eq!(stack_after.stack_status, stack_before.stack_status);
    assert_eq!(stack_after.updated_time, stack_before.updated_time);
    assert_eq!(stack_after.parameters, stack_before.parameters);
    let after = env.resources(&vnf.id, 5).await;
    let physical = |rs: &[HeatResource]| {
        rs.iter()
            .map(|r| (r.resource_name.clone(), r.physical_resource_id.clone()))
            .collect::<BTreeSet<_>>()
    };
    assert_eq!(physical(&after), physical(&before));
    let inst = env.instance(&vnf.id).await;
    assert_eq!(
        inst.instantiated_vnf_info.as_ref().map(|i| i.vnf_state),
        Some(vnfm_types::VnfOperationalState::Stopped)
    );

    env.terminate_forcefully(&vnf.id).await;
    env.lcm.shutdown(Duration::from_secs(5)).await;
}

#[vnfm_test_env::needs(openstack)]
#[tokio::test]
async fn application_credentials_reach_heat() {
    let cloud = Cloud::from_env();
    // The test user's application credential, made by scripts/test-env/openstack.sh.
    let (Ok(id), Ok(secret)) = (
        std::env::var("VNFM_TEST_OS_APP_CRED_ID"),
        std::env::var("VNFM_TEST_OS_APP_CRED_SECRET"),
    ) else {
        panic!("VNFM_TEST_KEYSTONE_URL is set but VNFM_TEST_OS_APP_CRED_ID/SECRET are not");
    };
    let vim = ResolvedVim::new(
        "vim-ac",
        serde_json::from_value(json!({
            "vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3",
            "interfaceInfo": {"endpoint": cloud.keystone_url},
            "accessInfo": {"applicationCredentialId": id, "applicationCredentialSecret": secret,
                           "region": cloud.region}
        }))
        .unwrap(),
    );
    let driver = OpenStackDriver::new(support::driver_config());
    let session = driver.session(&vim).unwrap();
    let control = RunControl::with_timeout(Duration::from_secs(60));
    let heat = Heat::connect(&session, &control, driver.config().poll.clone())
        .await
        .unwrap();
    assert!(heat.base().contains("/v1/"), "{}", heat.base());
    assert!(heat.find("vnf-does-not-exist").await.unwrap().is_none());
    // The same connection shares the session (and its token).
    assert!(Arc::ptr_eq(&session, &driver.session(&vim).unwrap()));
}
