//! External CPs of several VNF instances on one external virtual link: two instances whose
//! `extVirtualLinks` name the same external network (`resourceId`), under the real lifecycle
//! runner, against real Keystone and Heat (`scripts/test-env/openstack.sh`). Each stack gets
//! its own ports on that network, each instance reports the link with its own ports, and
//! terminating one leaves the other's ports. Skipped (with a SKIPPED line) when
//! `VNFM_TEST_KEYSTONE_URL` is not set; `scripts/test.sh` always sets it.

mod support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use support::Cloud;
use vnfm_driver_api::{ArtifactSource, ResolvedVim, RunControl};
use vnfm_infra_openstack::OpenStackDriver;
use vnfm_infra_openstack::heat::{Heat, HeatResource};
use vnfm_lcm::runner::defaults::{InlineVimDirectory, MemoryCatalog, NoSubscribers};
use vnfm_lcm::{Lcm, LcmConfig};
use vnfm_types::{
    ExtVirtualLinkInfo, InstantiationState, LcmOperationStateType, VnfInstance, VnfInstanceId,
    VnfLcmOpOcc,
};

const WAIT: Duration = Duration::from_secs(600);
/// The external network both instances attach to.
const SHARED_NET: &str = "net-shared-ext";
/// The external CPs of the test VNFD (VDU1 has two VNFCs, VDU2 one).
const EXT_CPDS: [&str; 2] = ["VDU1_CP1", "VDU2_CP1"];

struct Env {
    lcm: Lcm,
    driver: Arc<OpenStackDriver>,
    cloud: Cloud,
    _dir: tempfile::TempDir,
}

async fn env(cloud: Cloud) -> Env {
    let dir = tempfile::tempdir().unwrap();
    let store = vnfm_store::open(&format!("sqlite://{}", dir.path().join("lcm.db").display()))
        .await
        .unwrap();
    let catalog = MemoryCatalog::new();
    let files: Arc<dyn ArtifactSource> = Arc::new(support::package(""));
    catalog.insert(support::vnfd("vnfd-shared-net"), files);
    let driver = Arc::new(OpenStackDriver::new(support::driver_config()));
    let lcm = Lcm::builder(
        store,
        Arc::new(InlineVimDirectory),
        Arc::new(NoSubscribers),
        Arc::new(catalog),
    )
    .infra_driver(driver.clone())
    .config(LcmConfig {
        step_timeout: Duration::from_secs(600),
        ..LcmConfig::default()
    })
    .build();
    Env {
        lcm,
        driver,
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
    async fn create(&self, name: &str) -> VnfInstance {
        self.lcm
            .create_vnf_identifier(
                serde_json::from_value(
                    json!({"vnfdId": "vnfd-shared-net", "vnfInstanceName": name}),
                )
                .unwrap(),
            )
            .await
            .unwrap()
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_share_one_external_network_with_their_own_ports() {
    let Some(cloud) =
        Cloud::from_env("two_instances_share_one_external_network_with_their_own_ports")
    else {
        return;
    };
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

    // Heat: both stacks have their ports on the shared network, the ones the instances report.
    let (ports_a, nfv_a) = env.ports(&a.id).await.expect("stack of A");
    let (ports_b, nfv_b) = env.ports(&b.id).await.expect("stack of B");
    for (ports, nfv, link) in [(&ports_a, &nfv_a, &link_a), (&ports_b, &nfv_b, &link_b)] {
        assert_eq!(ports.len(), 3, "{ports:?}");
        for p in ports.iter() {
            assert_eq!(p.attributes["network_id"], SHARED_NET, "{p:?}");
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
            .all(|p| p.attributes["network_id"] == SHARED_NET)
    );
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
