//! External CPs of several VNF instances on one external virtual link: two instances whose
//! `extVirtualLinks` name the same external network (`resourceId`), under the real lifecycle
//! runner, against real Keystone and Heat (`scripts/test-env/openstack.sh`). Each stack gets
//! its own ports on that network, each instance reports the link with its own ports, and
//! terminating one leaves the other's ports. A mixed VNF (VMs on Heat, a container VDU on a
//! second VIM served by another driver) puts the CPs of both sides on one external link, and
//! the OpenStack driver handles only the VDUs it is given. Ignored, with the reason, when
//! the test cloud was not there at build time (`#[vnfm_test_env::needs(openstack)]`).

use crate::support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use support::Cloud;
use vnfm_driver_api::memory::MemoryInfraDriver;
use vnfm_driver_api::{ArtifactSource, ResolvedVim, RunControl};
use vnfm_infra_openstack::OpenStackDriver;
use vnfm_infra_openstack::heat::{Heat, HeatResource};
use vnfm_lcm::testing::NoSubscribers;
use vnfm_lcm::{InlineVimDirectory, Lcm, LcmConfig, MemoryCatalog};
use vnfm_types::{
    ExtVirtualLinkInfo, InstantiationState, LcmOperationStateType, VnfInstance, VnfInstanceId,
    VnfLcmOpOcc,
};

const WAIT: Duration = Duration::from_secs(600);
/// The external network both instances attach to.
const SHARED_NET: &str = "net-shared-ext";
/// The external CPs of the test VNFD (VDU1 has two VNFCs, VDU2 one).
const EXT_CPDS: [&str; 2] = ["VDU1_CP1", "VDU2_CP1"];
const KUBERNETES: &str = "ETSINFV.KUBERNETES.V_1";

struct Env {
    lcm: Lcm,
    driver: Arc<OpenStackDriver>,
    /// The driver of the container VIM of the mixed VNF.
    pods: Arc<MemoryInfraDriver>,
    cloud: Cloud,
    /// Deletes the stacks of the instances the test created when it panics.
    guard: support::StackGuard,
    _dir: tempfile::TempDir,
}

/// The test VNFD plus a container VDU (`VDU3`, aspect `VDU3_scale`) with an external CP.
fn mixed_vnfd() -> vnfm_descriptor::Vnfd {
    let mut v = serde_json::to_value(support::vnfd("vnfd-mixed-heat")).unwrap();
    let f = &mut v["flavours"][0];
    f["vdus"].as_array_mut().unwrap().push(json!({
        "id": "VDU3", "name": "VDU3", "kind": "osContainerDeployableUnit",
        "nodeType": "tosca.nodes.nfv.Vdu.OsContainerDeployableUnit",
        "minInstances": 1, "maxInstances": 2, "initialDelta": 1
    }));
    f["vduCps"]
        .as_array_mut()
        .unwrap()
        .push(json!({"id": "VDU3_CP1", "vdu": "VDU3"}));
    f["scalingAspects"].as_array_mut().unwrap().push(json!({
        "id": "VDU3_scale", "maxScaleLevel": 1, "stepDeltas": ["delta_1"],
        "vduDeltas": {"VDU3": {"delta_1": 1}}
    }));
    f["instantiationLevels"][0]["vduInstances"]["VDU3"] = json!(1);
    f["instantiationLevels"][0]["scaleLevels"]["VDU3_scale"] = json!(0);
    serde_json::from_value(v).unwrap()
}

async fn env(cloud: Cloud) -> Env {
    let dir = tempfile::tempdir().unwrap();
    let store = vnfm_store_sql::open(&format!("sqlite://{}", dir.path().join("lcm.db").display()))
        .await
        .unwrap();
    let catalog = MemoryCatalog::new();
    let files: Arc<dyn ArtifactSource> = Arc::new(support::package(""));
    catalog.insert(support::vnfd("vnfd-shared-net"), files.clone());
    catalog.insert(mixed_vnfd(), files);
    let driver = Arc::new(OpenStackDriver::new(support::driver_config()));
    let pods = Arc::new(
        MemoryInfraDriver::new()
            .with_vim_types(&[KUBERNETES])
            .with_vim_kind(Arc::new(Containers))
            .with_id_prefix("pod"),
    );
    let lcm = Lcm::builder(
        store,
        Arc::new(InlineVimDirectory),
        Arc::new(NoSubscribers),
        Arc::new(catalog),
    )
    .infra_driver(driver.clone())
    .infra_driver(pods.clone())
    .config(LcmConfig {
        step_timeout: Duration::from_secs(600),
        ..LcmConfig::default()
    })
    .build();
    Env {
        lcm,
        guard: support::StackGuard::new(cloud.clone(), driver.clone()),
        driver,
        pods,
        cloud,
        _dir: dir,
    }
}

/// An instantiate request attaching both external CPs to the shared network; `address` is
/// the fixed address of VDU2's CP (each instance its own).
fn request(cloud: &Cloud, address: &str) -> Value {
    json!({
        "flavourId": "simple",
        "vimConnectionInfo": {"vim1": cloud.vim_connection()},
        "extVirtualLinks": [
            {"id": "ext-shared", "resourceId": SHARED_NET, "extCps": [
                {"cpdId": "VDU1_CP1", "cpConfig": {"VDU1_CP1_1": {"cpProtocolData": [
                    {"layerProtocol": "IP_OVER_ETHERNET", "ipOverEthernet": {"ipAddresses": [
                        {"type": "IPV4", "numDynamicAddresses": 1, "subnetId": "subnet-shared"}]}}]}}},
                {"cpdId": "VDU2_CP1", "cpConfig": {"VDU2_CP1_1": {"cpProtocolData": [
                    {"layerProtocol": "IP_OVER_ETHERNET", "ipOverEthernet": {"ipAddresses": [
                        {"type": "IPV4", "fixedAddresses": [address]}]}}]}}}
            ]}
        ]
    })
}

impl Env {
    /// What Nova and Neutron hold.
    fn services(&self) -> support::Services {
        let vim = ResolvedVim::new(
            "vim1",
            serde_json::from_value(self.cloud.vim_connection()).unwrap(),
        );
        support::Services::new(self.driver.session(&vim).unwrap())
    }

    async fn create(&self, name: &str) -> VnfInstance {
        self.create_from("vnfd-shared-net", name).await
    }

    async fn create_from(&self, vnfd_id: &str, name: &str) -> VnfInstance {
        let vnf = self
            .lcm
            .create_vnf_identifier(
                serde_json::from_value(json!({"vnfdId": vnfd_id, "vnfInstanceName": name}))
                    .unwrap(),
            )
            .await
            .unwrap();
        self.guard.watch(&vnf.id);
        vnf
    }

    async fn completed(&self, occ: VnfLcmOpOcc) -> VnfLcmOpOcc {
        let d = self.lcm.wait(&occ.id, WAIT).await.unwrap();
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

    /// The external-CP ports of the stack of `id`, as Heat lists them (`None` when the
    /// stack does not exist), and its `nfv` parameter.
    async fn ports(&self, id: &VnfInstanceId) -> Option<(Vec<HeatResource>, Value)> {
        let vim = ResolvedVim::new(
            "vim1",
            serde_json::from_value(self.cloud.vim_connection()).unwrap(),
        );
        let session = self.driver.session(&vim).unwrap();
        let control = RunControl::with_timeout(Duration::from_secs(60));
        let heat = Heat::connect(&session, &control, self.driver.config().poll.clone())
            .await
            .unwrap();
        let stack = heat
            .find(&self.driver.stack_name(id.as_str()))
            .await
            .unwrap()?;
        let ports = heat
            .resources(&stack.reference(), self.driver.config().nested_depth)
            .await
            .unwrap()
            .into_iter()
            .filter(|r| {
                r.resource_type == "OS::Neutron::Port"
                    && EXT_CPDS.contains(&r.resource_name.as_str())
            })
            .collect();
        Some((ports, stack.nfv()))
    }
}

fn shared_link(i: &VnfInstance) -> ExtVirtualLinkInfo {
    let links = i
        .instantiated_vnf_info
        .as_ref()
        .and_then(|x| x.ext_virtual_link_info.clone())
        .unwrap_or_default();
    assert_eq!(links.len(), 1, "{links:?}");
    links.into_iter().next().unwrap()
}

/// The physical ids of the link's ports.
fn port_resources(l: &ExtVirtualLinkInfo) -> BTreeSet<String> {
    l.ext_link_ports
        .iter()
        .flatten()
        .map(|p| p.resource_handle.resource_id.clone())
        .collect()
}

fn port_ids(l: &ExtVirtualLinkInfo) -> BTreeSet<String> {
    l.ext_link_ports
        .iter()
        .flatten()
        .map(|p| p.id.clone())
        .collect()
}

#[vnfm_test_env::needs(openstack)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_share_one_external_network_with_their_own_ports() {
    let cloud = Cloud::from_env();
    let env = env(cloud.clone()).await;
    let a = env.create("vnf-a").await;
    let b = env.create("vnf-b").await;

    // Both at once: the network is the NFVO's, neither instance owns it.
    let op_a = env
        .lcm
        .instantiate(
            &a.id,
            serde_json::from_value(request(&cloud, "10.10.0.61")).unwrap(),
        )
        .await
        .unwrap();
    let op_b = env
        .lcm
        .instantiate(
            &b.id,
            serde_json::from_value(request(&cloud, "10.10.0.62")).unwrap(),
        )
        .await
        .unwrap();
    env.completed(op_a).await;
    env.completed(op_b).await;

    let inst_a = env.instance(&a.id).await;
    let inst_b = env.instance(&b.id).await;
    let (link_a, link_b) = (shared_link(&inst_a), shared_link(&inst_b));
    for (inst, link) in [(&inst_a, &link_a), (&inst_b, &link_b)] {
        assert_eq!(link.id, "ext-shared");
        assert_eq!(link.resource_handle.resource_id, SHARED_NET);
        assert_eq!(
            link.resource_handle.vim_connection_id.as_deref(),
            Some("vim1")
        );
        // Two VNFCs of VDU1 and one of VDU2, one port each on the shared network.
        assert_eq!(
            link.ext_link_ports.as_ref().map(Vec::len),
            Some(3),
            "{link:?}"
        );
        let cps = &inst.instantiated_vnf_info.as_ref().unwrap().ext_cp_info;
        assert_eq!(cps.len(), 3);
        // Each external CP is on one of its own instance's ports.
        let ports = port_ids(link);
        for cp in cps {
            let port = cp.ext_link_port_id.as_deref().unwrap();
            assert!(ports.contains(port), "{port} not in {ports:?}");
        }
        let mut cpds: Vec<&str> = link
            .current_vnf_ext_cp_data
            .iter()
            .map(|c| c.cpd_id.as_str())
            .collect();
        cpds.sort();
        assert_eq!(cpds, EXT_CPDS);
    }
    // Their own ports: no port is reported by both.
    assert!(port_resources(&link_a).is_disjoint(&port_resources(&link_b)));
    assert!(port_ids(&link_a).is_disjoint(&port_ids(&link_b)));

    // Heat: both stacks have their ports on the shared network, the ones the instances report;
    // Neutron holds them there.
    let services = env.services();
    let shared_id = services.network_id(SHARED_NET).await;
    let (ports_a, nfv_a) = env.ports(&a.id).await.expect("stack of A");
    let (ports_b, nfv_b) = env.ports(&b.id).await.expect("stack of B");
    for (ports, nfv, link) in [(&ports_a, &nfv_a, &link_a), (&ports_b, &nfv_b, &link_b)] {
        assert_eq!(ports.len(), 3, "{ports:?}");
        for p in ports.iter() {
            assert_eq!(p.attributes["network_id"], shared_id.as_str(), "{p:?}");
            let port = services
                .port(&p.physical_resource_id)
                .await
                .unwrap_or_else(|| panic!("Neutron has no port {}", p.physical_resource_id));
            assert_eq!(port["network_id"], shared_id.as_str(), "{port}");
        }
        let physical: BTreeSet<String> = ports
            .iter()
            .map(|p| p.physical_resource_id.clone())
            .collect();
        assert_eq!(physical, port_resources(link));
        for cpd in EXT_CPDS {
            assert_eq!(nfv["CP"][cpd]["network"], SHARED_NET);
        }
    }
    assert_eq!(
        nfv_a["CP"]["VDU2_CP1"]["fixed_ips"][0]["ip_address"],
        "10.10.0.61"
    );
    assert_eq!(
        nfv_b["CP"]["VDU2_CP1"]["fixed_ips"][0]["ip_address"],
        "10.10.0.62"
    );

    // Terminating A removes its stack and ports only.
    let op = env
        .lcm
        .terminate(
            &a.id,
            serde_json::from_value(json!({"terminationType": "FORCEFUL"})).unwrap(),
        )
        .await
        .unwrap();
    env.completed(op).await;
    assert!(env.ports(&a.id).await.is_none(), "A's stack is gone");
    assert_eq!(
        env.instance(&a.id).await.instantiation_state,
        InstantiationState::NotInstantiated
    );
    let (left, _) = env.ports(&b.id).await.expect("B's stack stays");
    let physical: BTreeSet<String> = left
        .iter()
        .map(|p| p.physical_resource_id.clone())
        .collect();
    assert_eq!(physical, port_resources(&link_b));
    assert!(
        left.iter()
            .all(|p| p.attributes["network_id"] == shared_id.as_str())
    );
    services.assert_ports_gone(&port_resources(&link_a)).await;
    for p in port_resources(&link_b) {
        assert!(
            services.port(&p).await.is_some(),
            "Neutron lost B's port {p}"
        );
    }
    assert!(
        left.iter()
            .all(|p| p.resource_status.ends_with("_COMPLETE"))
    );
    let still_b = env.instance(&b.id).await;
    assert_eq!(shared_link(&still_b), link_b);

    let op = env
        .lcm
        .terminate(
            &b.id,
            serde_json::from_value(json!({"terminationType": "FORCEFUL"})).unwrap(),
        )
        .await
        .unwrap();
    env.completed(op).await;
    assert!(env.ports(&b.id).await.is_none());
}

fn vnfcs_on(i: &VnfInstance, vim: &str) -> BTreeSet<(String, String)> {
    i.instantiated_vnf_info
        .as_ref()
        .and_then(|x| x.vnfc_resource_info.clone())
        .unwrap_or_default()
        .into_iter()
        .filter(|v| v.compute_resource.vim_connection_id.as_deref() == Some(vim))
        .map(|v| (v.vdu_id, v.id))
        .collect()
}

fn vdus(v: &BTreeSet<(String, String)>) -> Vec<&str> {
    v.iter().map(|(d, _)| d.as_str()).collect()
}

#[vnfm_test_env::needs(openstack)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mixed_vnf_runs_its_vms_on_heat_and_its_container_vdu_on_the_other_vim() {
    let cloud = Cloud::from_env();
    let env = env(cloud.clone()).await;
    let vnf = env.create_from("vnfd-mixed-heat", "mixed").await;
    let mut body = request(&cloud, "10.10.0.63");
    body["vimConnectionInfo"]["k8s"] =
        json!({"vimType": KUBERNETES, "interfaceInfo": {"endpoint": "https://k8s.example:6443"}});
    let pod_cp = json!({"cpdId": "VDU3_CP1", "cpConfig": {"VDU3_CP1_1": {"cpProtocolData": [
        {"layerProtocol": "IP_OVER_ETHERNET", "ipOverEthernet": {"ipAddresses": [
            {"type": "IPV4", "numDynamicAddresses": 1}]}}]}}});
    body["extVirtualLinks"][0]["extCps"]
        .as_array_mut()
        .unwrap()
        .push(pod_cp);
    let op = env
        .lcm
        .instantiate(&vnf.id, serde_json::from_value(body).unwrap())
        .await
        .unwrap();
    env.completed(op).await;
    let inst = env.instance(&vnf.id).await;
    let on_heat = vnfcs_on(&inst, "vim1");
    let on_k8s = vnfcs_on(&inst, "k8s");
    assert_eq!(vdus(&on_heat), ["VDU1", "VDU1", "VDU2"]);
    assert_eq!(vdus(&on_k8s), ["VDU3"]);
    // Heat got only the VMs' part of the request.
    let (ports, nfv) = env.ports(&vnf.id).await.expect("the stack exists");
    assert_eq!(ports.len(), 3);
    assert!(nfv["VDU"].get("VDU3").is_none(), "{nfv}");
    assert!(nfv["CP"].get("VDU3_CP1").is_none(), "{nfv}");
    assert_eq!(nfv["CP"]["VDU1_CP1"]["network"], SHARED_NET);
    // The other driver got only the container VDU and its VIM.
    let call = env.pods.calls().pop().unwrap();
    assert_eq!(call.vdu_ids, ["VDU3"]);
    assert_eq!(call.vim_connection_ids, ["k8s"]);
    // One external link with the CPs of both sides; the ports are Heat's.
    let link = shared_link(&inst);
    let mut cpds: Vec<&str> = link
        .current_vnf_ext_cp_data
        .iter()
        .map(|c| c.cpd_id.as_str())
        .collect();
    cpds.sort();
    assert_eq!(cpds, ["VDU1_CP1", "VDU2_CP1", "VDU3_CP1"]);
    let physical: BTreeSet<String> = ports
        .iter()
        .map(|p| p.physical_resource_id.clone())
        .collect();
    assert_eq!(port_resources(&link), physical);
    let heat_state = inst
        .instantiated_vnf_info
        .as_ref()
        .unwrap()
        .metadata
        .as_ref()
        .unwrap()["driverState"]["byVim"]["vim1"]
        .clone();
    assert!(heat_state["stackId"].is_string(), "{heat_state}");

    // Scaling the container aspect leaves the stack alone.
    let op = env
        .lcm
        .scale(
            &vnf.id,
            serde_json::from_value(json!({"type": "SCALE_OUT", "aspectId": "VDU3_scale"})).unwrap(),
        )
        .await
        .unwrap();
    env.completed(op).await;
    let inst = env.instance(&vnf.id).await;
    assert_eq!(vnfcs_on(&inst, "vim1"), on_heat);
    assert_eq!(vdus(&vnfcs_on(&inst, "k8s")), ["VDU3", "VDU3"]);
    assert_eq!(env.ports(&vnf.id).await.unwrap().1, nfv);

    // Scaling a VM aspect goes to Heat only.
    let pod_calls = env.pods.calls().len();
    let op = env
        .lcm
        .scale(
            &vnf.id,
            serde_json::from_value(json!({"type": "SCALE_OUT", "aspectId": "VDU1_scale"})).unwrap(),
        )
        .await
        .unwrap();
    env.completed(op).await;
    assert_eq!(env.pods.calls().len(), pod_calls);
    let inst = env.instance(&vnf.id).await;
    assert_eq!(
        vdus(&vnfcs_on(&inst, "vim1")),
        ["VDU1", "VDU1", "VDU1", "VDU2"]
    );
    assert_eq!(
        env.ports(&vnf.id).await.unwrap().1["VDU"]["VDU1"]["desired_capacity"],
        3
    );

    // Terminate removes both sides.
    let op = env
        .lcm
        .terminate(
            &vnf.id,
            serde_json::from_value(json!({"terminationType": "FORCEFUL"})).unwrap(),
        )
        .await
        .unwrap();
    env.completed(op).await;
    assert!(env.ports(&vnf.id).await.is_none());
    assert!(env.pods.inventory(&vnf.id).is_none());
}

/// Stands in for the Kubernetes driver's VIM kind: its VIMs run containers, so the mixed VNF's
/// container VDU goes to them.
struct Containers;

impl vnfm_driver_api::VimKind for Containers {
    fn vim_types(&self) -> &[&'static str] {
        &[KUBERNETES]
    }
    fn canonical(
        &self,
        info: &vnfm_types::VimConnectionInfo,
    ) -> Result<vnfm_types::VimConnectionInfo, vnfm_driver_api::InvalidVimInfo> {
        Ok(info.clone())
    }
    fn secret_members(&self) -> &[&'static str] {
        &[]
    }
    fn runs_containers(&self) -> bool {
        true
    }
}
