//! Test support (cargo feature `testing`, not part of production builds): a Heat stand-in for
//! `OS::Cinder::Volume`, for the test cloud of `scripts/test-env/openstack.sh`, which runs real
//! Nova, Neutron, Placement and Glance and no Cinder (docs/openstack.md says why).
//!
//! A package's BaseHOT keeps using `OS::Cinder::Volume`, as on a real cloud; the Heat
//! environment [`volume_stand_in`] builds maps the type to a provider template made of Heat's
//! own resources (`OS::Heat::RandomString`), with the same properties and attributes as the
//! real type (Heat checks that). Such a volume has no Cinder ID: a template must not attach it
//! to a real server (Nova would look it up in Cinder).
//!
//! ```
//! use vnfm_infra_openstack::DriverConfig;
//! use vnfm_infra_openstack::testing::volume_stand_in;
//!
//! let (environment, files) = volume_stand_in();
//! let config = DriverConfig {
//!     environment: Some(environment),
//!     environment_files: files,
//!     ..DriverConfig::default()
//! };
//! # let _ = config;
//! ```

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

/// The stood-in type.
const VOLUME: &str = "OS::Cinder::Volume";

/// The provider template's file name.
const FILE: &str = "vnfm-test-os-cinder-volume.yaml";

/// `OS::Cinder::Volume`'s properties as Heat 27 defines them, with their HOT parameter types
/// (the provider template must match).
const PROPERTIES: &[(&str, &str)] = &[
    ("availability_zone", "string"),
    ("backup_id", "string"),
    ("description", "string"),
    ("image", "string"),
    ("imageRef", "string"),
    ("metadata", "json"),
    ("multiattach", "boolean"),
    ("name", "string"),
    ("read_only", "boolean"),
    ("scheduler_hints", "json"),
    ("size", "number"),
    ("snapshot_id", "string"),
    ("source_volid", "string"),
    ("volume_type", "string"),
];

/// `OS::Cinder::Volume`'s attributes as Heat 27 defines them.
const ATTRIBUTES: &[&str] = &[
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
];

fn default_of(t: &str) -> Value {
    match t {
        "string" => json!(""),
        "json" => json!({}),
        "boolean" => json!(false),
        _ => json!(0),
    }
}

/// The Heat environment mapping `OS::Cinder::Volume` to its provider template
/// (`resource_registry`), and that template by file name (send it as the stack's files).
pub fn volume_stand_in() -> (Value, BTreeMap<String, String>) {
    let parameters: Map<String, Value> = PROPERTIES
        .iter()
        .map(|(p, t)| ((*p).into(), json!({"type": t, "default": default_of(t)})))
        .collect();
    let mut outputs: Map<String, Value> = ATTRIBUTES
        .iter()
        .map(|a| ((*a).into(), json!({"value": null})))
        .collect();
    outputs.insert("size".into(), json!({"value": {"get_param": "size"}}));
    outputs.insert("status".into(), json!({"value": "in-use"}));
    // A resource of its own, so the volume has a physical resource id like a real one.
    let resources = json!({"seed": {"type": "OS::Heat::RandomString", "properties": {
        "length": 2, "character_classes": [],
        "character_sequences": [{"sequence": "123456789", "min": 2}]}}});
    let template = json!({
        "heat_template_version": "2016-10-14",
        "description": format!("Test stand-in for {VOLUME}"),
        "parameters": parameters,
        "resources": resources,
        "outputs": outputs,
    });
    (
        json!({"resource_registry": {VOLUME: FILE}}),
        BTreeMap::from([(FILE.to_string(), template.to_string())]),
    )
}
