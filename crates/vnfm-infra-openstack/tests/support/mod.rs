//! Fixtures of the tests against the test cloud of `scripts/test-env/openstack.sh` (real
//! Keystone, Heat, Nova with its fake virt driver, Neutron, Placement, Glance and Cinder on a
//! backend that stores no data): the connection from the environment, a test package (VNFD +
//! BaseHOT), and readers of what Nova, Neutron, Glance and Cinder hold.
//!
//! Servers, ports, networks, subnets and volumes are real: the flavours `m1.tiny`/`m1.small`, the image `cirros-0.6`
//! and the shared networks `net-ext-1` (`subnet-ext-1`, 10.10.0.0/24), `net-ext-2`
//! (`subnet-ext-2`, 10.10.9.0/24) and `net-shared-ext` (`subnet-shared`, also 10.10.0.0/24) are
//! created by the script.

#![allow(dead_code)]

use std::collections::BTreeSet;
use std::sync::Once;
use std::time::Duration;

use serde_json::{Value, json};
use vnfm_descriptor::Vnfd;
use vnfm_driver_api::memory::MemArtifacts;
use vnfm_infra_openstack::config::PollPolicy;
use vnfm_infra_openstack::{DriverConfig, OPENSTACK_VIM_TYPE};
use vnfm_types::{VnfInstance, VnfInstanceId, VnfcResourceInfo};

pub fn init() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The test cloud, from the variables `scripts/test-env/openstack.sh start` prints.
#[derive(Debug, Clone)]
pub struct Cloud {
    pub keystone_url: String,
    pub username: String,
    pub password: String,
    pub project: String,
    pub project_domain: String,
    pub user_domain: String,
    pub region: String,
}

impl Cloud {
    /// The cloud, from its variables. The tests that call it carry
    /// `#[vnfm_test_env::needs(openstack)]`: ignored, with the reason, when the cloud was not
    /// there at build time; failing, naming the variable, when it is gone at run time.
    pub fn from_env() -> Cloud {
        let var = |k: &str, default: &str| std::env::var(k).unwrap_or_else(|_| default.into());
        init();
        Cloud {
            keystone_url: vnfm_test_env::var("VNFM_TEST_KEYSTONE_URL"),
            username: var("VNFM_TEST_OS_USERNAME", "vnfm"),
            password: vnfm_test_env::var("VNFM_TEST_OS_PASSWORD"),
            project: var("VNFM_TEST_OS_PROJECT", "vnfm"),
            project_domain: var("VNFM_TEST_OS_PROJECT_DOMAIN", "Default"),
            user_domain: var("VNFM_TEST_OS_USER_DOMAIN", "Default"),
            region: var("VNFM_TEST_OS_REGION", "RegionOne"),
        }
    }

    /// The cloud administrator's `vimConnectionInfo` entry (from `VNFM_TEST_OS_ADMIN_*`), for
    /// what only an administrator may do, e.g. reset a server's state.
    pub fn admin_connection(&self) -> Value {
        let var = |k: &str| {
            std::env::var(k).unwrap_or_else(|_| {
                panic!("{k} is not set (scripts/test-env/openstack.sh start prints it)")
            })
        };
        json!({
            "vimId": "test-cloud-admin",
            "vimType": OPENSTACK_VIM_TYPE,
            "interfaceInfo": {"endpoint": self.keystone_url},
            "accessInfo": {
                "username": var("VNFM_TEST_OS_ADMIN_USERNAME"),
                "password": var("VNFM_TEST_OS_ADMIN_PASSWORD"),
                "project": var("VNFM_TEST_OS_ADMIN_PROJECT"),
                "projectDomain": self.project_domain,
                "userDomain": self.user_domain, "region": self.region
            }
        })
    }

    /// A `vimConnectionInfo` entry for this cloud (password authentication), in the layout
    /// Tacker uses.
    pub fn vim_connection(&self) -> Value {
        json!({
            "vimId": "test-cloud",
            "vimType": OPENSTACK_VIM_TYPE,
            "interfaceInfo": {"endpoint": self.keystone_url},
            "accessInfo": {
                "username": self.username, "password": self.password,
                "project": self.project, "projectDomain": self.project_domain,
                "userDomain": self.user_domain, "region": self.region
            }
        })
    }
}

/// The driver settings for the test cloud: quick polling.
pub fn driver_config() -> DriverConfig {
    DriverConfig {
        stack_timeout: Duration::from_secs(300),
        poll: PollPolicy {
            initial: Duration::from_millis(250),
            factor: 1.5,
            max: Duration::from_secs(1),
        },
        ..DriverConfig::default()
    }
}

/// The test VNFD: VDU1 (2 to 4 VNFCs, scaling aspect `VDU1_scale`, one volume, one external
/// and one internal CP) and VDU2 (one VNFC, one external CP), internal VL `internalVL1`.
pub fn vnfd(id: &str) -> Vnfd {
    serde_json::from_value(json!({
        "descriptorId": id, "descriptorVersion": "1.0", "provider": "Acme",
        "productName": "HeatTest", "softwareVersion": "1.0",
        "toscaDefinitionsVersion": "tosca_simple_yaml_1_2", "vnfNodeType": "acme.HeatTest",
        "entryDefinitions": "Definitions/heat_test_top.vnfd.yaml",
        "flavours": [{
            "id": "simple", "file": "Definitions/heat_test_df_simple.yaml",
            "vdus": [
                {"id": "VDU1", "name": "VDU1", "kind": "compute", "nodeType": "tosca.nodes.nfv.Vdu.Compute",
                 "minInstances": 1, "maxInstances": 4, "initialDelta": 2,
                 "virtualCompute": {"additionalCapabilityNames": ["m1.tiny"]},
                 "swImage": {"name": "cirros-0.6"},
                 "virtualStorages": ["VDU1-VirtualStorage"]},
                {"id": "VDU2", "name": "VDU2", "kind": "compute", "nodeType": "tosca.nodes.nfv.Vdu.Compute",
                 "minInstances": 1, "maxInstances": 1, "initialDelta": 1,
                 "virtualCompute": {"additionalCapabilityNames": ["m1.small"]},
                 "swImage": {"name": "cirros-0.6"}}
            ],
            "virtualStorages": [{"id": "VDU1-VirtualStorage", "kind": "block", "sizeBytes": 1073741824}],
            "vduCps": [
                {"id": "VDU1_CP1", "vdu": "VDU1", "order": 0},
                {"id": "VDU1_CP2", "vdu": "VDU1", "virtualLink": "internalVL1", "order": 1},
                {"id": "VDU2_CP1", "vdu": "VDU2", "order": 0}
            ],
            "virtualLinks": [{"id": "internalVL1"}],
            "scalingAspects": [{"id": "VDU1_scale", "maxScaleLevel": 2, "stepDeltas": ["delta_1"],
                                "vduDeltas": {"VDU1": {"delta_1": 1}}}],
            "instantiationLevels": [{"id": "instantiation_level_1", "scaleLevels": {"VDU1_scale": 0},
                                     "vduInstances": {"VDU1": 2, "VDU2": 1}}],
            "defaultInstantiationLevel": "instantiation_level_1"
        }]
    }))
    .expect("test VNFD")
}

/// The test VNFD for a generated template: without VDU1's volume and without the internal
/// network and VDU1's CP on it. The test changes the package to the BaseHOT, whose VDU1 is
/// another server: Heat builds it before deleting the old one, and Cinder refuses to attach
/// the volume the old server still holds (`status must be available or downloading to
/// reserve`). A package change from a generated template to a BaseHOT with another internal
/// subnet is tested on its own (`real_heat::generated_to_base_hot`).
pub fn vnfd_for_generated(id: &str) -> Vnfd {
    let mut v = serde_json::to_value(vnfd(id)).unwrap();
    let flavour = &mut v["flavours"][0];
    flavour["vdus"][0]
        .as_object_mut()
        .unwrap()
        .remove("virtualStorages");
    flavour["virtualStorages"] = json!([]);
    flavour["virtualLinks"] = json!([]);
    flavour["vduCps"]
        .as_array_mut()
        .unwrap()
        .retain(|c| c["id"] != "VDU1_CP2");
    serde_json::from_value(v).expect("test VNFD for a generated template")
}

/// The BaseHOT of the test package, in Tacker's layout and `nfv` convention.
pub const TOP_HOT: &str = r#"heat_template_version: 2013-05-23
description: Test VNF
parameters:
  nfv:
    type: json
resources:
  VDU1_scale_group:
    type: OS::Heat::AutoScalingGroup
    properties:
      min_size: 1
      max_size: 4
      desired_capacity: { get_param: [ nfv, VDU, VDU1, desired_capacity ] }
      resource:
        type: VDU1_nested.yaml
        properties:
          flavor: { get_param: [ nfv, VDU, VDU1, computeFlavourId ] }
          image: { get_param: [ nfv, VDU, VDU1, vcImageId ] }
          net1: { get_param: [ nfv, CP, VDU1_CP1, network ] }
          subnet1: { get_param: [ nfv, CP, VDU1_CP1, fixed_ips, 0, subnet ] }
          net2: { get_resource: internalVL1 }
  VDU2:
    type: OS::Nova::Server
    properties:
      flavor: { get_param: [ nfv, VDU, VDU2, computeFlavourId ] }
      image: { get_param: [ nfv, VDU, VDU2, vcImageId ] }
      networks:
      - port: { get_resource: VDU2_CP1 }
  VDU2_CP1:
    type: OS::Neutron::Port
    properties:
      network: { get_param: [ nfv, CP, VDU2_CP1, network ] }
      fixed_ips:
      - ip_address: { get_param: [ nfv, CP, VDU2_CP1, fixed_ips, 0, ip_address ] }
  internalVL1:
    type: OS::Neutron::Net
  internalVL1_subnet:
    type: OS::Neutron::Subnet
    properties:
      network: { get_resource: internalVL1 }
      cidr: 192.168.3.0/24
      ip_version: 4
"#;

/// VDU1's nested template.
pub const VDU1_HOT: &str = r#"heat_template_version: 2013-05-23
description: VDU1
parameters:
  flavor: { type: string }
  image: { type: string }
  net1: { type: string }
  subnet1: { type: string, default: "" }
  net2: { type: string }
resources:
  VDU1:
    type: OS::Nova::Server
    properties:
      flavor: { get_param: flavor }
      image: { get_param: image }
      networks:
      - port: { get_resource: VDU1_CP1 }
      - port: { get_resource: VDU1_CP2 }
      block_device_mapping_v2:
      - volume_id: { get_resource: VDU1-VirtualStorage }
        boot_index: -1
  VDU1-VirtualStorage:
    type: OS::Cinder::Volume
    properties:
      size: 1
  VDU1_CP1:
    type: OS::Neutron::Port
    properties:
      network: { get_param: net1 }
      fixed_ips:
      - subnet: { get_param: subnet1 }
  VDU1_CP2:
    type: OS::Neutron::Port
    properties:
      network: { get_param: net2 }
"#;

/// The package files: BaseHOT top (with `extra` appended to its resources, e.g. a failing
/// resource) and nested template.
pub fn package(extra: &str) -> MemArtifacts {
    MemArtifacts::new()
        .with("BaseHOT/simple/heat_test.yaml", format!("{TOP_HOT}{extra}"))
        .with("BaseHOT/simple/nested/VDU1_nested.yaml", VDU1_HOT)
}

/// A resource that makes the stack fail.
pub const FAILING: &str = r#"  VNF_config:
    type: OS::Heat::TestResource
    properties:
      fail: true
      value: provisioning script exited with 3
"#;

/// An instantiate request connecting the external CPs, VDU2_CP1 at `address` (on
/// `subnet-ext-1`, 10.10.0.0/24; Neutron gives an address to one port at a time, so tests
/// that run side by side use their own).
pub fn instantiate_request_at(cloud: &Cloud, address: &str) -> Value {
    json!({
        "flavourId": "simple",
        "vimConnectionInfo": {"vim1": cloud.vim_connection()},
        "extVirtualLinks": [
            {"id": "ext-1", "resourceId": "net-ext-1", "extCps": [
                {"cpdId": "VDU1_CP1", "cpConfig": {"VDU1_CP1_1": {"cpProtocolData": [
                    {"layerProtocol": "IP_OVER_ETHERNET", "ipOverEthernet": {"ipAddresses": [
                        {"type": "IPV4", "numDynamicAddresses": 1, "subnetId": "subnet-ext-1"}]}}]}}},
                {"cpdId": "VDU2_CP1", "cpConfig": {"VDU2_CP1_1": {"cpProtocolData": [
                    {"layerProtocol": "IP_OVER_ETHERNET", "ipOverEthernet": {"ipAddresses": [
                        {"type": "IPV4", "fixedAddresses": [address]}]}}]}}}
            ]}
        ]
    })
}

/// The package files from a top template and VDU1's nested template.
pub fn package_from(top: String, vdu1: String) -> MemArtifacts {
    MemArtifacts::new()
        .with("BaseHOT/simple/heat_test.yaml", top)
        .with("BaseHOT/simple/nested/VDU1_nested.yaml", vdu1)
}

/// VDU1's nested template with a readiness check: each member waits for a signal on its
/// `ready_handle` (what a VM's boot script sends when the VNFC is up); a `FAILURE` signal
/// fails the member, as a VM that does not come up does. Heat needs its stack user domain for
/// the handle (`scripts/test-env/openstack.sh` sets it up).
pub fn vdu1_with_readiness_check() -> String {
    format!(
        r#"{VDU1_HOT}  ready_handle:
    type: OS::Heat::WaitConditionHandle
  ready:
    type: OS::Heat::WaitCondition
    depends_on: VDU1
    properties:
      handle: {{ get_resource: ready_handle }}
      timeout: 600
"#
    )
}

/// The top template with a check of VDU2_CP1's network that fails for `net-unreachable` (as
/// Neutron refuses a port on a network it does not have).
pub fn top_with_network_check() -> String {
    format!(
        r#"{}  VDU2_CP1_check:
    type: OS::Heat::TestResource
    properties:
      value: {{ get_param: [ nfv, CP, VDU2_CP1, network ] }}
      fail: {{ yaql: {{ expression: "$.data.net = 'net-unreachable'", data: {{ net: {{ get_param: [ nfv, CP, VDU2_CP1, network ] }} }} }} }}
"#,
        // yaql needs a newer template version than the base's.
        TOP_HOT.replace("2013-05-23", "2016-10-14")
    )
}

/// A top template with no server: only the internal network (a VNF whose VDUs the template
/// does not deploy, e.g. all scaled to zero elsewhere).
pub const SERVERLESS_HOT: &str = r#"heat_template_version: 2013-05-23
description: Test VNF without servers
parameters:
  nfv:
    type: json
resources:
  internalVL1:
    type: OS::Neutron::Net
  internalVL1_subnet:
    type: OS::Neutron::Subnet
    properties:
      network: { get_resource: internalVL1 }
      cidr: 192.168.3.0/24
      ip_version: 4
"#;

/// What Nova and Neutron hold, read with the test user's token (the services the catalog
/// lists), to check the driver's work behind its back.
pub struct Services {
    session: std::sync::Arc<vnfm_infra_openstack::keystone::Session>,
}

impl Services {
    /// Readers on `session` (the driver's session for the test cloud).
    pub fn new(session: std::sync::Arc<vnfm_infra_openstack::keystone::Session>) -> Services {
        Services { session }
    }

    async fn get(&self, service_type: &str, path: &str) -> Value {
        self.send(reqwest::Method::GET, service_type, path, None)
            .await
    }

    /// Sends `method` with `body` to `path` of `service_type`; answers the reply's JSON
    /// (`Null` for an empty reply).
    async fn send(
        &self,
        method: reqwest::Method,
        service_type: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Value {
        let control = vnfm_driver_api::RunControl::with_timeout(Duration::from_secs(60));
        let base = self.session.endpoint(&control, service_type).await.unwrap();
        let url = format!("{}{path}", base.trim_end_matches('/'));
        let reply = self
            .session
            .call(&control, "test", method, &url, body, &[])
            .await
            .unwrap_or_else(|e| panic!("{service_type} {path}: {e}"));
        reply.json(&url, "test").unwrap_or(Value::Null)
    }

    /// Creates a port named `name` on the network named `network`, as a user makes the ports
    /// of `extLinkPorts` before the request; answers its id.
    pub async fn create_port(&self, network: &str, name: &str) -> String {
        let network_id = self.network_id(network).await;
        let body = json!({"port": {"network_id": network_id, "name": name}});
        let port = self
            .send(reqwest::Method::POST, "network", "/v2.0/ports", Some(&body))
            .await;
        port["port"]["id"].as_str().unwrap().to_string()
    }

    /// Deletes port `id`.
    pub async fn delete_port(&self, id: &str) {
        self.send(
            reqwest::Method::DELETE,
            "network",
            &format!("/v2.0/ports/{id}"),
            None,
        )
        .await;
    }

    /// Nova's server `id` (`status`, `addresses`, ...), `None` when Nova has none.
    pub async fn server(&self, id: &str) -> Option<Value> {
        let all = self.get("compute", "/servers/detail").await;
        all["servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
            .cloned()
    }

    /// The IDs of the servers Nova holds for the test project. A server in status `DELETED`
    /// is not counted: Nova destroyed it and still lists it while it releases its ports and
    /// Placement allocations (seconds on a loaded machine), and Heat's deletion ends there.
    pub async fn server_ids(&self) -> BTreeSet<String> {
        let all = self.get("compute", "/servers/detail").await;
        all["servers"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["status"] != "DELETED")
            .map(|s| s["id"].as_str().unwrap().to_string())
            .collect()
    }

    /// Neutron's port `id`, `None` when Neutron has none.
    pub async fn port(&self, id: &str) -> Option<Value> {
        let all = self.get("network", &format!("/v2.0/ports?id={id}")).await;
        all["ports"].as_array().unwrap().first().cloned()
    }

    /// The ports Neutron has on the server `device_id`.
    pub async fn ports_of(&self, device_id: &str) -> Vec<Value> {
        let all = self
            .get("network", &format!("/v2.0/ports?device_id={device_id}"))
            .await;
        all["ports"].as_array().unwrap().clone()
    }

    /// The ID of Glance's image named `name`.
    pub async fn image_id(&self, name: &str) -> String {
        let images = self.get("image", &format!("/v2/images?name={name}")).await;
        images["images"][0]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("Glance has no image {name}: {images}"))
            .to_string()
    }

    /// The ID of the network named `name`.
    pub async fn network_id(&self, name: &str) -> String {
        let nets = self
            .get("network", &format!("/v2.0/networks?name={name}"))
            .await;
        nets["networks"][0]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("Neutron has no network {name}: {nets}"))
            .to_string()
    }

    /// The subnets Neutron has on the network `network_id`.
    pub async fn subnets_of(&self, network_id: &str) -> Vec<Value> {
        let all = self
            .get("network", &format!("/v2.0/subnets?network_id={network_id}"))
            .await;
        all["subnets"].as_array().unwrap().clone()
    }

    /// The fixed addresses of the server's ports on the network named `network`.
    pub async fn addresses_on(&self, device_id: &str, network: &str) -> Vec<String> {
        let nets = self
            .get("network", &format!("/v2.0/networks?name={network}"))
            .await;
        let Some(net) = nets["networks"].as_array().unwrap().first().cloned() else {
            return Vec::new();
        };
        self.ports_of(device_id)
            .await
            .iter()
            .filter(|p| p["network_id"] == net["id"])
            .flat_map(|p| p["fixed_ips"].as_array().unwrap().clone())
            .map(|ip| ip["ip_address"].as_str().unwrap().to_string())
            .collect()
    }
}

/// Sets Nova's server `id` to `state` (`error` or `active`: the administrator's
/// `os-resetState`), as Nova does with a server whose host failed, or an operator once it
/// recovered.
pub async fn reset_state(
    cloud: &Cloud,
    driver: &vnfm_infra_openstack::OpenStackDriver,
    id: &str,
    state: &str,
) {
    let vim = vnfm_driver_api::ResolvedVim::new(
        "admin",
        serde_json::from_value(cloud.admin_connection()).unwrap(),
    );
    let session = driver.session(&vim).unwrap();
    let control = vnfm_driver_api::RunControl::with_timeout(Duration::from_secs(60));
    let base = session.endpoint(&control, "compute").await.unwrap();
    let url = format!("{}/servers/{id}/action", base.trim_end_matches('/'));
    let body = json!({"os-resetState": {"state": state}});
    session
        .call(
            &control,
            "test",
            reqwest::Method::POST,
            &url,
            Some(&body),
            &[],
        )
        .await
        .unwrap();
}

/// The lifecycle runner on a SQLite store in `dir`, with `driver` and the packages of
/// `catalog`, a step budget of 10 minutes (Heat on a busy machine).
pub async fn lcm(
    dir: &std::path::Path,
    catalog: vnfm_lcm::MemoryCatalog,
    driver: std::sync::Arc<vnfm_infra_openstack::OpenStackDriver>,
) -> vnfm_lcm::Lcm {
    let store = vnfm_store_sql::open(&format!("sqlite://{}", dir.join("lcm.db").display()))
        .await
        .unwrap();
    vnfm_lcm::Lcm::builder(
        store,
        std::sync::Arc::new(vnfm_lcm::InlineVimDirectory),
        std::sync::Arc::new(vnfm_lcm::testing::NoSubscribers),
        std::sync::Arc::new(catalog),
    )
    .infra_driver(driver)
    .config(vnfm_lcm::LcmConfig {
        step_timeout: Duration::from_secs(600),
        ..vnfm_lcm::LcmConfig::default()
    })
    .build()
}

/// A minimal valid qcow2 image (version 2, 1 MiB virtual size, no data): 512-byte clusters
/// holding the header, the refcount table, one refcount block and the L1 table. Glance
/// inspects uploads and refuses data that does not match the image's `disk_format`; Cinder
/// opens an image it makes a volume from with `qemu-img`, which refuses a bare header; Nova's
/// fake virt driver boots anything.
pub fn qcow2_image() -> Vec<u8> {
    const CLUSTER: usize = 512;
    let mut data = vec![0u8; 4 * CLUSTER];
    let mut put = |at: usize, bytes: &[u8]| data[at..at + bytes.len()].copy_from_slice(bytes);
    put(0, b"QFI\xfb");
    put(4, &2u32.to_be_bytes()); // version
    put(20, &9u32.to_be_bytes()); // cluster_bits: 512-byte clusters
    put(24, &(1u64 << 20).to_be_bytes()); // virtual size
    // One L1 entry per L2 table, each mapping 64 clusters of 512 bytes: 32 for 1 MiB.
    put(36, &32u32.to_be_bytes()); // l1_size
    put(40, &(3 * CLUSTER as u64).to_be_bytes()); // l1_table_offset
    put(48, &(CLUSTER as u64).to_be_bytes()); // refcount_table_offset
    put(56, &1u32.to_be_bytes()); // refcount_table_clusters
    // The refcount table points at the refcount block, which counts the four clusters once.
    put(CLUSTER, &(2 * CLUSTER as u64).to_be_bytes());
    for c in 0..4 {
        put(2 * CLUSTER + 2 * c, &1u16.to_be_bytes());
    }
    data
}

impl Services {
    /// The ports Neutron has on each of the servers.
    pub async fn ports_of_servers(&self, servers: &[String]) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for s in servers {
            for p in self.ports_of(s).await {
                out.insert(p["id"].as_str().unwrap().to_string());
            }
        }
        out
    }

    /// Asserts that Nova holds each VNFC's server `ACTIVE`, built from Glance's image
    /// `image`, with as many ports of Nova's as the VNFC has CPs.
    pub async fn assert_servers_built(&self, vnfcs: &[VnfcResourceInfo], image: &str) {
        let image = self.image_id(image).await;
        for c in vnfcs {
            let id = &c.compute_resource.resource_id;
            let server = self
                .server(id)
                .await
                .unwrap_or_else(|| panic!("Nova has no server {id} of VNFC {}", c.id));
            assert_eq!(server["status"], "ACTIVE", "{server}");
            assert_eq!(server["image"]["id"], image.as_str(), "{server}");
            let ports = self.ports_of(id).await;
            let want = c.vnfc_cp_info.as_ref().map_or(0, Vec::len);
            assert_eq!(ports.len(), want, "ports of {id}: {ports:?}");
            for p in &ports {
                assert_eq!(p["device_owner"], "compute:nova", "{p}");
            }
        }
    }

    /// Asserts that Nova holds each of the servers with `status` (`ACTIVE`, `SHUTOFF`, ...).
    pub async fn assert_servers_status(&self, servers: &[String], status: &str) {
        for s in servers {
            let server = self
                .server(s)
                .await
                .unwrap_or_else(|| panic!("Nova has no server {s}"));
            assert_eq!(server["status"], status, "{server}");
        }
    }

    /// Asserts that Nova holds none of these servers any more.
    pub async fn assert_servers_gone<'a>(&self, servers: impl IntoIterator<Item = &'a String>) {
        let held = self.server_ids().await;
        let left: Vec<_> = servers.into_iter().filter(|s| held.contains(*s)).collect();
        assert!(left.is_empty(), "Nova still holds {left:?}");
    }

    /// Asserts that Neutron holds none of these ports any more.
    pub async fn assert_ports_gone<'a>(&self, ports: impl IntoIterator<Item = &'a String>) {
        for p in ports {
            assert!(self.port(p).await.is_none(), "Neutron still holds port {p}");
        }
    }

    /// Glance's images named `name` (every member Glance shows).
    pub async fn images_named(&self, name: &str) -> Vec<Value> {
        let images = self.get("image", &format!("/v2/images?name={name}")).await;
        images["images"].as_array().unwrap().clone()
    }
}

/// The id of the VNFC (`vnfcInfo`) of the VNFC resource `resource` of `i`, as heal takes it.
pub fn vnfc_info_id(i: &VnfInstance, resource: &VnfcResourceInfo) -> String {
    i.instantiated_vnf_info
        .as_ref()
        .and_then(|x| x.vnfc_info.as_ref())
        .and_then(|v| {
            v.iter()
                .find(|c| c.vnfc_resource_info_id.as_deref() == Some(resource.id.as_str()))
        })
        .map(|c| c.id.clone())
        .unwrap_or_else(|| panic!("no VNFC of resource {}", resource.id))
}

/// Deletes the Heat stacks of the VNF instances it was given, and the Glance images the driver
/// uploaded for them, when the test panics (a failed assertion leaves no servers, ports,
/// networks and images behind on the shared test cloud); a test that ends well terminates
/// them itself.
pub struct StackGuard {
    cloud: Cloud,
    driver: std::sync::Arc<vnfm_infra_openstack::OpenStackDriver>,
    instances: std::sync::Mutex<Vec<VnfInstanceId>>,
}

impl StackGuard {
    /// A guard for stacks `driver` creates on `cloud`.
    pub fn new(
        cloud: Cloud,
        driver: std::sync::Arc<vnfm_infra_openstack::OpenStackDriver>,
    ) -> Self {
        StackGuard {
            cloud,
            driver,
            instances: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Deletes the stack of `id` too if the test panics.
    pub fn watch(&self, id: &VnfInstanceId) {
        self.instances.lock().unwrap().push(id.clone());
    }
}

impl Drop for StackGuard {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        let ids = std::mem::take(&mut *self.instances.lock().unwrap());
        let (cloud, driver) = (self.cloud.clone(), self.driver.clone());
        // A thread with a runtime of its own: the test's runtime is unwinding.
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let vim = vnfm_driver_api::ResolvedVim::new(
                    "vim1",
                    serde_json::from_value(cloud.vim_connection()).unwrap(),
                );
                let Ok(session) = driver.session(&vim) else {
                    return;
                };
                let control = vnfm_driver_api::RunControl::with_timeout(Duration::from_secs(60));
                let Ok(heat) = vnfm_infra_openstack::heat::Heat::connect(
                    &session,
                    &control,
                    driver.config().poll.clone(),
                )
                .await
                else {
                    return;
                };
                let glance = vnfm_infra_openstack::glance::Glance::connect(
                    &session,
                    &control,
                    driver.config().poll.clone(),
                    "vim1",
                )
                .await;
                for id in ids {
                    if let Ok(Some(stack)) = heat.find(&driver.stack_name(id.as_str())).await {
                        match heat.delete(&stack.reference()).await {
                            Ok(()) => eprintln!("deleted the stack of {id} after the panic"),
                            Err(e) => eprintln!("could not delete the stack of {id}: {e}"),
                        }
                    }
                    // The images the driver uploaded to Glance for the instance, as its
                    // terminate would.
                    if let Ok(glance) = &glance {
                        match glance.release(id.as_str()).await {
                            Ok(deleted) if !deleted.is_empty() => {
                                eprintln!("deleted the images {deleted:?} of {id} after the panic")
                            }
                            Ok(_) => {}
                            Err(e) => eprintln!("could not delete the images of {id}: {e}"),
                        }
                    }
                }
            });
        })
        .join();
    }
}

impl Cloud {
    /// The same cloud as its administrator (project `admin`): Tacker's samples with volumes
    /// create `OS::Cinder::VolumeType`s, which Cinder lets only an administrator manage.
    pub fn as_admin(&self) -> Cloud {
        let var = |k: &str| {
            std::env::var(k).unwrap_or_else(|_| {
                panic!("{k} is not set (scripts/test-env/openstack.sh start prints it)")
            })
        };
        Cloud {
            username: var("VNFM_TEST_OS_ADMIN_USERNAME"),
            password: var("VNFM_TEST_OS_ADMIN_PASSWORD"),
            project: var("VNFM_TEST_OS_ADMIN_PROJECT"),
            ..self.clone()
        }
    }
}

/// The volume type names Tacker's samples create (`name: VDU1-multi` in their templates).
pub const FIXED_VOLUME_TYPES: [&str; 2] = ["VDU1-multi", "VDU2-multi"];

/// What the corpus packages of these tests append to [`FIXED_VOLUME_TYPES`], so that they do
/// not meet the types Tacker's own tests make on the same cloud at the same time.
pub const VOLUME_TYPE_SUFFIX: &str = "-vnfm-test";

/// Holds the tests whose templates create Cinder volume types under fixed names
/// ([`FIXED_VOLUME_TYPES`] with [`VOLUME_TYPE_SUFFIX`]) one after the other while the guard
/// lives: Cinder keeps volume type names unique, so a second stack making the same type fails.
pub async fn fixed_volume_type_names() -> tokio::sync::MutexGuard<'static, ()> {
    static NAMES: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    NAMES.lock().await
}

/// The Cinder volume IDs of the storages of `vnfc` (its `storageResourceIds`, resolved through
/// the instance's `virtualStorageResourceInfo`).
pub fn volumes_of(i: &VnfInstance, vnfc: &VnfcResourceInfo) -> Vec<String> {
    let storages = i
        .instantiated_vnf_info
        .as_ref()
        .and_then(|x| x.virtual_storage_resource_info.clone())
        .unwrap_or_default();
    vnfc.storage_resource_ids
        .iter()
        .flatten()
        .map(|id| {
            storages
                .iter()
                .find(|s| &s.id == id)
                .unwrap_or_else(|| panic!("no virtualStorageResourceInfo {id}"))
                .storage_resource
                .resource_id
                .clone()
        })
        .collect()
}

/// Asserts that Cinder's `volume` is attached to `server` and to no other server.
pub fn assert_attached_to(volume: &Value, server: &str) {
    let servers: Vec<&Value> = volume["attachments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["server_id"])
        .collect();
    assert_eq!(servers, vec![server], "{volume}");
}

impl Services {
    /// Cinder's volume `id` (`status`, `attachments`, `bootable`, ...), `None` when Cinder has
    /// none.
    pub async fn volume(&self, id: &str) -> Option<Value> {
        let all = self.get("block-storage", "/volumes/detail").await;
        all["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["id"] == id)
            .cloned()
    }

    /// The IDs of the volumes Cinder holds for the project.
    pub async fn volume_ids(&self) -> BTreeSet<String> {
        let all = self.get("block-storage", "/volumes").await;
        all["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["id"].as_str().unwrap().to_string())
            .collect()
    }

    /// Asserts that Nova holds each VNFC's server `ACTIVE`, booted from a volume (no image of
    /// its own), and that Cinder holds each of the VNFC's volumes `in-use`, attached to that
    /// server only, created from Glance's image `image` (Cinder copied the image's metadata and
    /// marked the volume bootable). Answers the volume IDs.
    pub async fn assert_servers_on_volumes(
        &self,
        inst: &VnfInstance,
        vnfcs: &[VnfcResourceInfo],
        image: &str,
    ) -> BTreeSet<String> {
        let image_id = self.image_id(image).await;
        let mut all = BTreeSet::new();
        for c in vnfcs {
            let id = &c.compute_resource.resource_id;
            let server = self
                .server(id)
                .await
                .unwrap_or_else(|| panic!("Nova has no server {id} of VNFC {}", c.id));
            assert_eq!(server["status"], "ACTIVE", "{server}");
            // A server booted from a volume has no image (Nova answers "").
            assert_eq!(server["image"], "", "{server}");
            let volumes = volumes_of(inst, c);
            assert!(!volumes.is_empty(), "VNFC {} has no storage", c.id);
            let attached: BTreeSet<String> = server["os-extended-volumes:volumes_attached"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v["id"].as_str().unwrap().to_string())
                .collect();
            for v in &volumes {
                assert!(
                    attached.contains(v),
                    "Nova's server {id} lacks volume {v}: {server}"
                );
                let volume = self
                    .volume(v)
                    .await
                    .unwrap_or_else(|| panic!("Cinder has no volume {v} of VNFC {}", c.id));
                assert_eq!(volume["status"], "in-use", "{volume}");
                assert_eq!(volume["bootable"], "true", "{volume}");
                assert_eq!(
                    volume["volume_image_metadata"]["image_id"],
                    image_id.as_str(),
                    "{volume}"
                );
                assert_attached_to(&volume, id);
                all.insert(v.clone());
            }
        }
        all
    }

    /// Cinder's volume types named `name` (the administrator sees them all).
    pub async fn volume_types_named(&self, name: &str) -> Vec<Value> {
        let all = self.get("block-storage", "/types?is_public=None").await;
        all["volume_types"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["name"] == name)
            .cloned()
            .collect()
    }

    /// Asserts that Cinder holds none of these volumes any more.
    pub async fn assert_volumes_gone<'a>(&self, volumes: impl IntoIterator<Item = &'a String>) {
        let held = self.volume_ids().await;
        let left: Vec<_> = volumes.into_iter().filter(|v| held.contains(*v)).collect();
        assert!(left.is_empty(), "Cinder still holds {left:?}");
    }
}
