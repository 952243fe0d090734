//! The test cloud of `scripts/test-env/openstack.sh` (real Keystone, Heat, Nova with its fake
//! virt driver, Neutron, Placement and Glance) as the end-to-end tests see it: the VIM
//! registration, what Heat, Nova and Neutron hold (read behind the VNFM's back with the test
//! user's token), and the resources a test makes for itself and removes again: a network whose
//! subnet allocates loopback addresses (where the SSH test hosts answer) and a key pair.

use std::sync::Arc;
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use vnfm_driver_api::{ResolvedVim, RunControl};
use vnfm_infra_openstack::heat::Heat;
use vnfm_infra_openstack::keystone::Session;
use vnfm_infra_openstack::{DriverConfig, OpenStackDriver};

use super::OPENSTACK;

/// The test cloud's Keystone and credentials, from the variables `openstack.sh start` prints.
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

/// The image and flavour of the test cloud VNF-A's VMs boot with (`openstack.sh` creates
/// them; the sample VNFD names an Ubuntu cloud image the fake virt driver has no use for).
pub const TEST_IMAGE: &str = "cirros-0.6";

fn control() -> RunControl {
    RunControl::with_timeout(Duration::from_secs(120))
}

impl Cloud {
    /// The test cloud, for tests that carry `#[vnfm_test_env::needs(openstack)]` (panics when
    /// its variables are not set); installs the ring provider.
    pub fn from_env() -> Cloud {
        let var = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.into());
        let cloud = Cloud {
            keystone_url: vnfm_test_env::var("VNFM_TEST_KEYSTONE_URL"),
            username: var("VNFM_TEST_OS_USERNAME", "vnfm"),
            password: vnfm_test_env::var("VNFM_TEST_OS_PASSWORD"),
            project: var("VNFM_TEST_OS_PROJECT", "vnfm"),
            project_domain: var("VNFM_TEST_OS_PROJECT_DOMAIN", "Default"),
            user_domain: var("VNFM_TEST_OS_USER_DOMAIN", "Default"),
            region: var("VNFM_TEST_OS_REGION", "RegionOne"),
        };
        let _ = rustls::crypto::ring::default_provider().install_default();
        cloud
    }

    /// The VIM registration of the test cloud (password authentication).
    pub fn vim(&self) -> Value {
        json!({
            "vimType": OPENSTACK,
            "interfaceInfo": {"endpoint": self.keystone_url},
            "accessInfo": {
                "username": self.username, "password": self.password,
                "project": self.project, "projectDomain": self.project_domain,
                "userDomain": self.user_domain, "region": self.region
            }
        })
    }

    fn driver() -> OpenStackDriver {
        OpenStackDriver::new(DriverConfig::default())
    }

    /// A Keystone session of the test user (the driver's own client).
    pub fn session(&self) -> Arc<Session> {
        let vim = ResolvedVim::new("vim1", serde_json::from_value(self.vim()).unwrap());
        Self::driver().session(&vim).unwrap()
    }

    /// Calls `method` on `path` of the catalog's `service_type` endpoint; the answer's JSON,
    /// `Value::Null` for a status in `accept` that is 400 or above.
    pub async fn call(
        &self,
        service_type: &str,
        method: Method,
        path: &str,
        body: Option<&Value>,
        accept: &[u16],
    ) -> Value {
        let session = self.session();
        let control = control();
        let base = session.endpoint(&control, service_type).await.unwrap();
        let url = format!("{}{path}", base.trim_end_matches('/'));
        let what = format!("{method} {path}");
        let reply = session
            .call(&control, "e2e", method, &url, body, accept)
            .await
            .unwrap_or_else(|e| panic!("{what} on the test cloud's {service_type}: {e}"));
        if reply.status.as_u16() >= 400 {
            return Value::Null;
        }
        reply.json(&url, "e2e").unwrap()
    }

    async fn get(&self, service_type: &str, path: &str) -> Value {
        self.call(service_type, Method::GET, path, None, &[]).await
    }

    /// The stack of VNF instance `instance_id` and its resources down to the nested stacks'
    /// (`None` when Heat has no such stack), asked through the driver's own Heat client.
    pub async fn stack(
        &self,
        instance_id: &str,
    ) -> Option<(
        vnfm_infra_openstack::heat::Stack,
        Vec<vnfm_infra_openstack::heat::HeatResource>,
    )> {
        let driver = Self::driver();
        let control = control();
        let session = self.session();
        let heat = Heat::connect(&session, &control, driver.config().poll.clone())
            .await
            .unwrap();
        let stack = heat.find(&driver.stack_name(instance_id)).await.unwrap()?;
        let resources = heat
            .resources(&stack.reference(), driver.config().nested_depth)
            .await
            .unwrap();
        Some((stack, resources))
    }

    /// Whether Heat still has the stack of VNF instance `instance_id`.
    pub async fn stack_exists(&self, instance_id: &str) -> bool {
        let driver = Self::driver();
        let control = control();
        let session = self.session();
        let heat = Heat::connect(&session, &control, driver.config().poll.clone())
            .await
            .unwrap();
        heat.find(&driver.stack_name(instance_id))
            .await
            .unwrap()
            .is_some()
    }

    /// Deletes the stack of VNF instance `instance_id` if Heat still has it and waits (up to
    /// two minutes) until it is gone: what a failed test leaves.
    pub async fn delete_stack(&self, instance_id: &str) {
        let driver = Self::driver();
        let control = control();
        let session = self.session();
        let Ok(heat) = Heat::connect(&session, &control, driver.config().poll.clone()).await else {
            return;
        };
        let name = driver.stack_name(instance_id);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        while let Ok(Some(stack)) = heat.find(&name).await {
            if stack.stack_status != "DELETE_IN_PROGRESS"
                && let Err(e) = heat.delete(&stack.reference()).await
            {
                eprintln!("cleaning up stack {name}: {e}");
            }
            if tokio::time::Instant::now() > deadline {
                eprintln!("cleaning up stack {name}: still there after two minutes");
                return;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// Nova's servers `ids` (`None` for one Nova does not have).
    pub async fn servers(&self, ids: &[String]) -> Vec<Option<Value>> {
        let all = self.get("compute", "/servers/detail").await;
        let all = all["servers"].as_array().cloned().unwrap_or_default();
        ids.iter()
            .map(|id| all.iter().find(|s| s["id"] == id.as_str()).cloned())
            .collect()
    }

    /// The fixed addresses of Neutron's ports on server `device_id` in network `network_id`.
    pub async fn port_addresses(&self, device_id: &str, network_id: &str) -> Vec<String> {
        let ports = self
            .get(
                "network",
                &format!("/v2.0/ports?device_id={device_id}&network_id={network_id}"),
            )
            .await;
        let mut out: Vec<String> = ports["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|p| p["fixed_ips"].as_array().cloned().unwrap_or_default())
            .filter_map(|ip| ip["ip_address"].as_str().map(String::from))
            .collect();
        out.sort();
        out
    }

    /// The number of Neutron's ports in network `network_id`.
    pub async fn ports_in(&self, network_id: &str) -> usize {
        let ports = self
            .get("network", &format!("/v2.0/ports?network_id={network_id}"))
            .await;
        ports["ports"].as_array().map_or(0, Vec::len)
    }

    /// Creates a network of the test project named `name` with one subnet `cidr` without
    /// DHCP (Neutron allocates a loopback range only without it); returns its ID.
    pub async fn create_network(&self, name: &str, cidr: &str) -> String {
        let net = self
            .call(
                "network",
                Method::POST,
                "/v2.0/networks",
                Some(&json!({"network": {"name": name}})),
                &[],
            )
            .await;
        let id = net["network"]["id"].as_str().unwrap().to_string();
        self.call(
            "network",
            Method::POST,
            "/v2.0/subnets",
            Some(&json!({"subnet": {
                "network_id": id, "name": name, "cidr": cidr, "ip_version": 4,
                "enable_dhcp": false, "gateway_ip": null
            }})),
            &[],
        )
        .await;
        id
    }

    /// Deletes network `id` (and its subnet); Neutron refuses while ports are on it.
    pub async fn delete_network(&self, id: &str) {
        self.call(
            "network",
            Method::DELETE,
            &format!("/v2.0/networks/{id}"),
            None,
            &[404, 409],
        )
        .await;
    }

    /// Adds the key pair `name` with `public_key` to the test user's.
    pub async fn create_keypair(&self, name: &str, public_key: &str) {
        self.call(
            "compute",
            Method::POST,
            "/os-keypairs",
            Some(&json!({"keypair": {"name": name, "public_key": public_key.trim()}})),
            &[],
        )
        .await;
    }

    /// Removes the test user's key pair `name`.
    pub async fn delete_keypair(&self, name: &str) {
        self.call(
            "compute",
            Method::DELETE,
            &format!("/os-keypairs/{name}"),
            None,
            &[404],
        )
        .await;
    }
}
