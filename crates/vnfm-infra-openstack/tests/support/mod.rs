//! Fixtures of the tests against the test cloud of `scripts/test-env/openstack.sh` (real
//! Keystone, Heat, Nova with its fake virt driver, Neutron, Placement, Glance and Cinder on a
//! backend that stores no data): the connection from the environment, a test package (VNFD +
//! BaseHOT), and readers of what Nova, Neutron, Glance and Cinder hold.
//!
//! Servers, ports, networks, subnets and volumes are real: the flavours `m1.tiny`/`m1.small`, the image `cirros-0.6`
//! and the shared networks `net-ext-1` (`subnet-ext-1`, 10.10.0.0/24), `net-ext-2`
//! (`subnet-ext-2`, 10.10.9.0/24) and `net-shared-ext` (`subnet-shared`, also 10.10.0.0/24) are
//! created by the script.
//!
//! This file holds the connection; the test package is in `package`, the readers of Nova,
//! Neutron and Glance (and the runner the tests drive) in `services`, Cinder's in `volumes`,
//! the clean-up after a panicking test in `guard`; all re-exported here.

#![allow(dead_code)]

use std::sync::Once;
use std::time::Duration;

use serde_json::{Value, json};
use vnfm_infra_openstack::config::PollPolicy;
use vnfm_infra_openstack::{DriverConfig, OPENSTACK_VIM_TYPE};
use vnfm_types::{VnfInstance, VnfcResourceInfo};

mod guard;
mod package;
mod services;
mod volumes;

pub use guard::*;
pub use package::*;
pub use services::*;
pub use volumes::*;

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
