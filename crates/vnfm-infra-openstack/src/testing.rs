//! Test support (cargo feature `testing`, not part of production builds): Heat stand-ins for
//! clouds without Nova, Neutron or Cinder, for tests and demonstrations. The test cloud of
//! `scripts/test-env/openstack.sh` runs real Nova, Neutron and Glance and has no Cinder: its
//! tests use [`StandIns::volumes_only`]; the full set stands in for every service on a cloud of
//! Keystone and Heat alone (the end-to-end test whose VMs are loopback addresses with an sshd).
//!
//! A package's BaseHOT keeps using `OS::Nova::Server`, `OS::Neutron::Port`,
//! `OS::Neutron::Net`, `OS::Neutron::Subnet` and `OS::Cinder::Volume`, as on a real cloud; the
//! Heat environment [`StandIns::environment`] builds maps each of these types to a provider
//! template made of Heat's own resources (`OS::Heat::RandomString`), with the same properties
//! and attributes as the real type (Heat checks that), so ports report `fixed_ips` and
//! `mac_address` like Neutron does and the driver's inventory reads them unchanged.
//!
//! ```
//! use vnfm_infra_openstack::DriverConfig;
//! use vnfm_infra_openstack::testing::{PortAddresses, StandIns};
//!
//! let (environment, files) = StandIns::default()
//!     .port_addresses(PortAddresses::Loopback)
//!     .environment();
//! let config = DriverConfig {
//!     environment: Some(environment),
//!     environment_files: files,
//!     ..DriverConfig::default()
//! };
//! # let _ = config;
//! ```

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

/// The addresses stood-in ports get.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PortAddresses {
    /// `10.20.<a>.<b>`: addresses nothing answers at.
    #[default]
    Private,
    /// `127.<a>.<b>.<c>`: loopback addresses, so a server listening on all addresses of the
    /// machine (e.g. an sshd standing in for the VMs) answers at every port's address.
    Loopback,
}

/// The stand-in environment's settings.
#[derive(Debug, Clone, Default)]
pub struct StandIns {
    port_addresses: PortAddresses,
    volumes_only: bool,
}

impl StandIns {
    /// Which addresses ports get.
    pub fn port_addresses(mut self, addresses: PortAddresses) -> Self {
        self.port_addresses = addresses;
        self
    }

    /// Stands in for `OS::Cinder::Volume` alone (a cloud with real Nova and Neutron and no
    /// block storage service). A volume stood in for has no Cinder ID: a template must not
    /// attach it to a real server (Nova would look it up in Cinder).
    pub fn volumes_only() -> Self {
        StandIns {
            volumes_only: true,
            ..StandIns::default()
        }
    }
}

/// A stood-in resource type: its name, `(property, HOT parameter type)` pairs and attributes.
type Facade = (
    &'static str,
    Vec<(&'static str, &'static str)>,
    Vec<&'static str>,
);

/// The stood-in resource types, as Heat 27 defines them (the provider template must match).
fn facades() -> Vec<Facade> {
    const S: &str = "string";
    const L: &str = "comma_delimited_list";
    const M: &str = "json";
    const B: &str = "boolean";
    const I: &str = "number";
    vec![
        (
            "OS::Nova::Server",
            vec![
                ("admin_pass", S),
                ("admin_user", S),
                ("availability_zone", S),
                ("block_device_mapping", L),
                ("block_device_mapping_v2", L),
                ("config_drive", B),
                ("deployment_swift_data", M),
                ("diskConfig", S),
                ("flavor", S),
                ("flavor_update_policy", S),
                ("image", S),
                ("image_update_policy", S),
                ("key_name", S),
                ("metadata", M),
                ("name", S),
                ("networks", L),
                ("personality", M),
                ("reservation_id", S),
                ("scheduler_hints", M),
                ("security_groups", L),
                ("software_config_transport", S),
                ("tags", L),
                ("user_data", S),
                ("user_data_format", S),
                ("user_data_update_policy", S),
            ],
            vec![
                "accessIPv4",
                "accessIPv6",
                "addresses",
                "console_urls",
                "first_address",
                "instance_name",
                "name",
                "networks",
                "os_collect_config",
                "tags",
            ],
        ),
        (
            "OS::Neutron::Port",
            vec![
                ("admin_state_up", B),
                ("allowed_address_pairs", L),
                ("device_id", S),
                ("device_owner", S),
                ("dns_name", S),
                ("fixed_ips", L),
                ("mac_address", S),
                ("name", S),
                ("network", S),
                ("network_id", S),
                ("no_fixed_ips", B),
                ("port_security_enabled", B),
                ("propagate_uplink_status", B),
                ("qos_policy", S),
                ("replacement_policy", S),
                ("security_groups", L),
                ("tags", L),
                ("value_specs", M),
            ],
            vec![
                "admin_state_up",
                "allowed_address_pairs",
                "device_id",
                "device_owner",
                "dns_assignment",
                "fixed_ips",
                "mac_address",
                "name",
                "network",
                "network_id",
                "port_security_enabled",
                "propagate_uplink_status",
                "qos_policy_id",
                "security_groups",
                "status",
                "subnets",
                "tenant_id",
            ],
        ),
        (
            "OS::Neutron::Net",
            vec![
                ("admin_state_up", B),
                ("availability_zone_hints", L),
                ("dhcp_agent_ids", L),
                ("dns_domain", S),
                ("name", S),
                ("port_security_enabled", B),
                ("qos_policy", S),
                ("shared", B),
                ("tags", L),
                ("tenant_id", S),
                ("value_specs", M),
            ],
            vec![
                "admin_state_up",
                "l2_adjacency",
                "mtu",
                "name",
                "port_security_enabled",
                "qos_policy_id",
                "segments",
                "status",
                "subnets",
                "tenant_id",
            ],
        ),
        (
            "OS::Neutron::Subnet",
            vec![
                ("allocation_pools", L),
                ("cidr", S),
                ("dns_nameservers", L),
                ("enable_dhcp", B),
                ("gateway_ip", S),
                ("host_routes", L),
                ("ip_version", I),
                ("ipv6_address_mode", S),
                ("ipv6_ra_mode", S),
                ("name", S),
                ("network", S),
                ("network_id", S),
                ("prefixlen", I),
                ("segment", S),
                ("subnetpool", S),
                ("tags", L),
                ("tenant_id", S),
                ("value_specs", M),
            ],
            vec![
                "allocation_pools",
                "cidr",
                "dns_nameservers",
                "enable_dhcp",
                "gateway_ip",
                "host_routes",
                "ip_version",
                "name",
                "network_id",
                "tenant_id",
            ],
        ),
        (
            "OS::Cinder::Volume",
            vec![
                ("availability_zone", S),
                ("backup_id", S),
                ("description", S),
                ("image", S),
                ("imageRef", S),
                ("metadata", M),
                ("multiattach", B),
                ("name", S),
                ("read_only", B),
                ("scheduler_hints", M),
                ("size", I),
                ("snapshot_id", S),
                ("source_volid", S),
                ("volume_type", S),
            ],
            vec![
                "attachments",
                "attachments_list",
                "availability_zone",
                "bootable",
                "created_at",
                "display_description",
                "display_name",
                "encrypted",
                "metadata",
                "metadata_values",
                "multiattach",
                "size",
                "snapshot_id",
                "source_volid",
                "status",
                "volume_type",
            ],
        ),
    ]
}

fn default_of(t: &str) -> Value {
    match t {
        "string" => json!(""),
        "comma_delimited_list" => json!([]),
        "json" => json!({}),
        "boolean" => json!(false),
        _ => json!(0),
    }
}

/// Two random digits from 1 to 9 (a RandomString resource's value): an address octet
/// from 11 to 99, never with a leading zero.
fn digits(name: &str, resources: &mut Map<String, Value>) -> Value {
    resources.insert(
        name.into(),
        json!({"type": "OS::Heat::RandomString", "properties": {
            "length": 2, "character_classes": [],
            "character_sequences": [{"sequence": "123456789", "min": 2}]}}),
    );
    json!({ "get_resource": name })
}

impl StandIns {
    /// The Heat environment mapping the service types to provider templates (`resource_registry`),
    /// and those templates by file name (send them as the stack's files, or write them beside
    /// an environment file for `vnfm serve --heat-environment`).
    pub fn environment(&self) -> (Value, BTreeMap<String, String>) {
        let mut registry = Map::new();
        let mut files = BTreeMap::new();
        for (ty, props, attrs) in facades() {
            if self.volumes_only && ty != "OS::Cinder::Volume" {
                continue;
            }
            let file = format!(
                "vnfm-test-{}.yaml",
                ty.to_ascii_lowercase().replace("::", "-")
            );
            let mut params = Map::new();
            for (p, t) in &props {
                params.insert((*p).into(), json!({"type": t, "default": default_of(t)}));
            }
            let mut resources = Map::new();
            let mut outputs = Map::new();
            for a in &attrs {
                outputs.insert((*a).into(), json!({"value": null}));
            }
            match ty {
                "OS::Neutron::Port" => {
                    let a = digits("a", &mut resources);
                    let b = digits("b", &mut resources);
                    let ip = match self.port_addresses {
                        PortAddresses::Private => json!({"list_join": ["", ["10.20.", a, ".", b]]}),
                        PortAddresses::Loopback => {
                            let c = digits("c", &mut resources);
                            json!({"list_join": ["", ["127.", a, ".", b, ".", c]]})
                        }
                    };
                    outputs.insert(
                        "fixed_ips".into(),
                        json!({"value": [{"ip_address": ip, "subnet_id": "subnet-test"}]}),
                    );
                    outputs.insert(
                        "mac_address".into(),
                        json!({"value": {"list_join": ["", ["fa:16:3e:00:", a, ":", b]]}}),
                    );
                    outputs.insert(
                        "network_id".into(),
                        json!({"value": {"get_param": "network"}}),
                    );
                    outputs.insert("status".into(), json!({"value": "ACTIVE"}));
                }
                "OS::Nova::Server" => {
                    digits("seed", &mut resources);
                    outputs.insert("name".into(), json!({"value": {"get_param": "name"}}));
                    outputs.insert("addresses".into(), json!({"value": {}}));
                }
                "OS::Cinder::Volume" => {
                    digits("seed", &mut resources);
                    outputs.insert("size".into(), json!({"value": {"get_param": "size"}}));
                    outputs.insert("status".into(), json!({"value": "in-use"}));
                }
                _ => {
                    digits("seed", &mut resources);
                }
            }
            let template = json!({
                "heat_template_version": "2016-10-14",
                "description": format!("Test stand-in for {ty}"),
                "parameters": params,
                "resources": resources,
                "outputs": outputs,
            });
            files.insert(file.clone(), template.to_string());
            registry.insert(ty.into(), json!(file));
        }
        (json!({ "resource_registry": registry }), files)
    }
}
