//! Readers of what Nova, Neutron and Glance hold, behind the driver's back; the administrator's
//! reset of a server's state; the lifecycle runner the tests drive.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};
use vnfm_types::VnfcResourceInfo;

use super::Cloud;

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

    pub(super) async fn get(&self, service_type: &str, path: &str) -> Value {
        self.send(reqwest::Method::GET, service_type, path, None)
            .await
    }

    /// The member of list `key` in the answer of `path` of `service_type` whose `id` is `id`.
    pub(super) async fn find(
        &self,
        service_type: &str,
        path: &str,
        key: &str,
        id: &str,
    ) -> Option<Value> {
        let all = self.get(service_type, path).await;
        all[key]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .cloned()
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
        self.find("compute", "/servers/detail", "servers", id).await
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
