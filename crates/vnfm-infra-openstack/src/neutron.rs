//! A Neutron networking API (v2.0) client ([`Neutron`]) for what Heat leaves to the driver:
//! the subnets of a network, its ports, and a port's fixed addresses.

use reqwest::Method;
use serde::Deserialize;
use serde_json::{Value, json};
use vnfm_driver_api::{DriverError, RunControl};

use crate::config::PollPolicy;
use crate::error::OpenStackError;
use crate::heat::enc;
use crate::keystone::{ServiceApi, Session};

/// A subnet (the members the driver needs).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Subnet {
    /// The id.
    pub id: String,
    /// 4 or 6.
    pub ip_version: u8,
    /// The CIDR.
    #[serde(default)]
    pub cidr: String,
}

/// A port (the members the driver needs).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Port {
    /// The id.
    pub id: String,
    /// `compute:nova` for a server's port, `network:dhcp` for Neutron's own, ...
    #[serde(default)]
    pub device_owner: String,
    /// Its addresses.
    #[serde(default)]
    pub fixed_ips: Vec<FixedIp>,
}

/// One address of a port.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct FixedIp {
    /// The subnet the address is from.
    pub subnet_id: String,
    /// The address.
    pub ip_address: String,
}

/// Neutron of one VIM, for one step.
pub struct Neutron<'a> {
    api: ServiceApi<'a>,
}

impl<'a> Neutron<'a> {
    /// Finds Neutron (service type `network`) in the session's catalog.
    pub async fn connect(
        session: &'a Session,
        control: &'a RunControl,
        poll: PollPolicy,
    ) -> Result<Neutron<'a>, DriverError> {
        Ok(Neutron {
            api: ServiceApi::connect(session, control, poll, "network").await?,
        })
    }

    fn url(&self, path: &str) -> String {
        format!("{}/v2.0/{path}", self.api.base.trim_end_matches('/'))
    }

    async fn list<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        member: &str,
    ) -> Result<Vec<T>, DriverError> {
        let url = self.url(path);
        let what = format!("GET /v2.0/{path}");
        let v = self
            .api
            .session
            .call(self.api.control, "neutron", Method::GET, &url, None, &[])
            .await?
            .json(&what, "neutron")?;
        let items = v.get(member).cloned().unwrap_or(Value::Null);
        serde_json::from_value(items).map_err(|source| {
            OpenStackError::ResponseBody {
                what,
                service: "neutron",
                problem: format!("`{member}` is missing or malformed"),
                source,
            }
            .into()
        })
    }

    /// The subnets of network `network_id`.
    pub async fn subnets(&self, network_id: &str) -> Result<Vec<Subnet>, DriverError> {
        self.list(
            &format!("subnets?network_id={}", enc(network_id)),
            "subnets",
        )
        .await
    }

    /// The ports on network `network_id`.
    pub async fn ports(&self, network_id: &str) -> Result<Vec<Port>, DriverError> {
        self.list(&format!("ports?network_id={}", enc(network_id)), "ports")
            .await
    }

    /// Gives port `id` these `fixed_ips` (`[{subnet_id[, ip_address]}]`; an entry without an
    /// address gets one Neutron allocates).
    pub async fn set_fixed_ips(&self, id: &str, fixed_ips: Vec<Value>) -> Result<(), DriverError> {
        let url = self.url(&format!("ports/{}", enc(id)));
        let body = json!({"port": {"fixed_ips": fixed_ips}});
        self.api
            .session
            .call(
                self.api.control,
                "neutron",
                Method::PUT,
                &url,
                Some(&body),
                &[],
            )
            .await?;
        Ok(())
    }
}
