//! The VNF-A sample package (`vnfd-samples/vnf-a-k8s-cluster`) as this plugin and the
//! OpenStack driver read it, without a cloud: both flavours bind every hook to the plugin, the
//! BaseHOT of each flavour is found and yields the nodes the plugin looks for, and the example
//! instantiate request fits SOL003, the additionalParams schema
//! (`schemas/vnf-a-k8s-cluster/instantiate-additional-params.schema.json`) and this plugin's
//! parameter types alike.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use vnfm_driver_api::memory::MemArtifacts;
use vnfm_infra_openstack::DriverConfig;
use vnfm_infra_openstack::hot::{NfvInputs, build_nfv, load_base_hot, nfv_paths, scalable_vdus};
use vnfm_plugin_k8s_cluster::PARAM_KEY;
use vnfm_plugin_k8s_cluster::params::{InstallParams, NodeParams, ProxyParams};
use vnfm_types::InstantiateVnfRequest;

fn repo() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn sample() -> PathBuf {
    repo().join("vnfd-samples/vnf-a-k8s-cluster")
}

fn files_of(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn add(dir: &Path, root: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                add(&p, root, out);
            } else {
                let rel = p
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    add(root, root, &mut out);
    out
}

fn vnfd(files: &BTreeMap<String, Vec<u8>>) -> vnfm_descriptor::Vnfd {
    let mut mem = vnfm_tosca::MemFiles::new("Definitions/k8s_cluster_top.vnfd.yaml");
    for (p, b) in files {
        mem.files.insert(p.clone(), b.clone());
    }
    let loaded = vnfm_tosca::load(&mem);
    assert!(!loaded.has_errors(), "{:#?}", loaded.diagnostics);
    loaded
        .descriptor
        .and_then(|d| d.as_vnfd().cloned())
        .unwrap()
}

fn request() -> Value {
    let text = std::fs::read_to_string(sample().join("requests/instantiate.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn schema() -> Value {
    let path = repo().join("schemas/vnf-a-k8s-cluster/instantiate-additional-params.schema.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `(instance pointer, message)` of every violation.
fn violations(instance: &Value) -> Vec<(String, String)> {
    let validator = jsonschema::draft202012::new(&schema()).expect("the schema compiles");
    validator
        .iter_errors(instance)
        .map(|e| (e.instance_path().as_str().to_string(), e.to_string()))
        .collect()
}

#[test]
fn both_flavours_bind_every_hook_to_the_plugin_and_scale_workers_only() {
    let vnfd = vnfd(&files_of(&sample()));
    let hooks = [
        "instantiate_end",
        "terminate_start",
        "terminate_end",
        "scale_start",
        "scale_end",
        "heal_start",
        "heal_end",
    ];
    for (id, masters) in [("simple", 1), ("ha", 3)] {
        let f = vnfd.flavour(id).unwrap_or_else(|| panic!("flavour {id}"));
        for h in hooks {
            assert_eq!(
                f.hook(h).map(|h| h.artifact.as_str()),
                Some("mgmt-driver-k8s-cluster"),
                "{id} {h}"
            );
        }
        let art = f.artifact(Some("VNF"), "mgmt-driver-k8s-cluster").unwrap();
        assert_eq!(art.file, "Plugins/libvnfm_plugin_k8s_cluster.so");
        assert_eq!(art.artifact_type, "tosca.artifacts.Implementation");
        let master = f.vdu("masterNode").unwrap();
        assert_eq!(
            (master.min_instances, master.max_instances),
            (masters, masters)
        );
        let aspect = f.scaling_aspect("worker_instance").unwrap();
        assert_eq!(aspect.max_scale_level, 2);
        assert_eq!(aspect.vdu_deltas.keys().collect::<Vec<_>>(), ["workerNode"]);
        let default = f.default_instantiation_level.as_deref().unwrap();
        let level = f.instantiation_level(default).unwrap();
        assert_eq!(level.vdu_instances["masterNode"], masters);
        assert_eq!(level.vdu_instances["workerNode"], 2);
        assert_eq!(
            f.instantiation_level("large").unwrap().vdu_instances["workerNode"],
            4
        );
    }
}

#[test]
fn each_flavour_has_a_base_hot_with_the_nodes_the_plugin_looks_for() {
    let files = files_of(&sample());
    let vnfd = vnfd(&files);
    let mut artifacts = MemArtifacts::new();
    for (p, b) in &files {
        artifacts = artifacts.with(p.clone(), b.clone());
    }
    let body = request();
    let additional_nfv = body["additionalParams"]["nfv"].clone();
    let request: InstantiateVnfRequest = serde_json::from_value(body).unwrap();
    let links = request.ext_virtual_links.clone().unwrap_or_default();
    for (id, masters) in [("simple", 1u32), ("ha", 3)] {
        let flavour = vnfd.flavour(id).unwrap();
        let hot = load_base_hot(&artifacts, &vnfd, id, &DriverConfig::default())
            .unwrap()
            .unwrap_or_else(|| panic!("no BaseHOT found for {id}"));
        assert_eq!(hot.source, format!("BaseHOT/{id}/k8s_cluster_{id}.yaml"));
        assert_eq!(
            hot.files.keys().collect::<Vec<_>>(),
            ["k8s_cluster_master.yaml", "k8s_cluster_worker.yaml"]
        );
        // One autoscaling group per role, named after the role's aspect, sized by the VNFD.
        let res = &hot.template["resources"];
        for (group, size) in [("master_instance", masters), ("worker_instance", 2)] {
            assert_eq!(
                res[group]["type"], "OS::Heat::AutoScalingGroup",
                "{id} {group}"
            );
            assert_eq!(res[group]["properties"]["min_size"], size, "{id} {group}");
        }
        assert_eq!(res["worker_instance"]["properties"]["max_size"], 4);
        // Each member: a server named after the VDU and a port named after its CP, in the
        // same nested stack (how the driver reports VNFCs and their addresses).
        for (file, vdu, cp) in [
            ("k8s_cluster_master.yaml", "masterNode", "masterNode_CP1"),
            ("k8s_cluster_worker.yaml", "workerNode", "workerNode_CP2"),
        ] {
            let nested =
                vnfm_infra_openstack::hot::parse_template(file, hot.files[file].as_bytes())
                    .unwrap();
            let r = &nested["resources"];
            assert_eq!(r[vdu]["type"], "OS::Nova::Server", "{id} {file}");
            assert_eq!(
                r[vdu]["properties"]["networks"][0]["port"]["get_resource"],
                cp
            );
            assert_eq!(r[cp]["type"], "OS::Neutron::Port", "{id} {file}");
            assert!(flavour.vdu(vdu).is_some());
            assert!(
                flavour
                    .vdu_cps
                    .iter()
                    .any(|c| c.id == cp && c.vdu.as_deref() == Some(vdu))
            );
        }
        // The nfv parameter: flavours and images from the VNFD, networks from the request,
        // counts from the default instantiation level, the key pair from additionalParams.
        let paths = nfv_paths([&hot.template]);
        assert_eq!(
            scalable_vdus(&paths),
            BTreeSet::from(["masterNode".to_string(), "workerNode".to_string()])
        );
        let counts: BTreeMap<String, u32> = [
            ("masterNode".to_string(), masters),
            ("workerNode".to_string(), 2),
        ]
        .into();
        let nfv = build_nfv(
            &paths,
            &NfvInputs {
                flavour,
                capacity: Some(&counts),
                ext_virtual_links: &links,
                additional: Some(&additional_nfv),
                grant: None,
                images: None,
            },
        );
        assert_eq!(
            nfv,
            json!({
                "VDU": {
                    "masterNode": {"computeFlavourId": "m1.medium", "desired_capacity": masters,
                                   "vcImageId": "ubuntu-24.04-server-cloudimg-amd64",
                                   "key_name": "vnfm"},
                    "workerNode": {"computeFlavourId": "m1.medium", "desired_capacity": 2,
                                   "vcImageId": "ubuntu-24.04-server-cloudimg-amd64",
                                   "key_name": "vnfm"}
                },
                "CP": {
                    "masterNode_CP1": {"network": "REPLACE-WITH-NEUTRON-NETWORK-ID"},
                    "workerNode_CP2": {"network": "REPLACE-WITH-NEUTRON-NETWORK-ID"}
                }
            }),
            "{id}"
        );
    }
}

#[test]
fn the_example_request_fits_sol003_the_schema_and_the_plugin() {
    let req = request();
    if let Err(v) = vnfm_schemas::validate(vnfm_schemas::SchemaId::InstantiateVnfRequest, &req) {
        panic!("{v:?}");
    }
    let params = &req["additionalParams"];
    assert_eq!(violations(params), []);
    let install: InstallParams = serde_json::from_value(params[PARAM_KEY].clone()).unwrap();
    // What the request names exists in the package and the VNFD.
    assert!(sample().join(&install.script_path).is_file());
    let vnfd = vnfd(&files_of(&sample()));
    let flavour = vnfd.flavour(req["flavourId"].as_str().unwrap()).unwrap();
    for node in [Some(&install.master_node), install.worker_node.as_ref()]
        .into_iter()
        .flatten()
    {
        assert!(flavour.vdu(node.vdu_id.as_deref().unwrap()).is_some());
        assert!(flavour.vdu_cps.iter().any(|c| c.id == node.ssh_cp_name));
    }
    assert_eq!(
        install
            .worker_node
            .as_ref()
            .and_then(|w| w.aspect_id.as_deref()),
        Some("worker_instance")
    );
}

/// A change made to a valid document.
type Change = Box<dyn Fn(&mut Value)>;

#[test]
fn documents_the_schema_refuses_the_plugin_refuses_too_with_a_pointer() {
    let base = request()["additionalParams"].clone();
    let p = format!("/{PARAM_KEY}");
    // (change, pointer of the violation, words of the message)
    let cases: Vec<(Change, String, &str)> = vec![
        (
            Box::new(|v| v[PARAM_KEY]["master_node"]["usrname"] = json!("ubuntu")),
            format!("{p}/master_node"),
            "usrname",
        ),
        (
            Box::new(|v| {
                v[PARAM_KEY]["worker_node"]
                    .as_object_mut()
                    .unwrap()
                    .remove("username");
            }),
            format!("{p}/worker_node"),
            "username",
        ),
        (
            Box::new(|v| v[PARAM_KEY]["ssh_port"] = json!(70000)),
            format!("{p}/ssh_port"),
            "65535",
        ),
        (
            Box::new(|v| v[PARAM_KEY]["ssh_retry_seconds"] = json!(-1)),
            format!("{p}/ssh_retry_seconds"),
            "minimum",
        ),
        (
            Box::new(|v| v[PARAM_KEY]["master_node"] = Value::Null),
            format!("{p}/master_node"),
            "object",
        ),
        (
            Box::new(|v| v[PARAM_KEY]["proxy"] = json!({"http_proxy": 8080})),
            format!("{p}/proxy/http_proxy"),
            "string",
        ),
        (
            Box::new(|v| {
                v[PARAM_KEY].as_object_mut().unwrap().remove("script_path");
            }),
            p.clone(),
            "script_path",
        ),
    ];
    for (change, pointer, words) in cases {
        let mut doc = base.clone();
        change(&mut doc);
        let found = violations(&doc);
        assert!(
            found
                .iter()
                .any(|(at, msg)| *at == pointer && msg.contains(words)),
            "expected a violation at {pointer} mentioning {words}, got {found:?}"
        );
        assert!(
            serde_json::from_value::<InstallParams>(doc[PARAM_KEY].clone()).is_err(),
            "the plugin accepts what the schema refuses at {pointer}"
        );
    }
    // The parameter itself is required.
    let found = violations(&json!({"nfv": {}}));
    assert!(
        found
            .iter()
            .any(|(at, msg)| at.is_empty() && msg.contains(PARAM_KEY)),
        "{found:?}"
    );
}

/// The keys of a schema object definition.
fn schema_keys(def: &str) -> BTreeSet<String> {
    schema()["$defs"][def]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

#[test]
fn the_schema_names_exactly_the_members_of_the_parameter_types() {
    // Every optional member set, so that serialization shows every field name; the two
    // credentials are never serialized, so they are added by hand.
    let node = NodeParams {
        vdu_id: Some("v".into()),
        aspect_id: Some("a".into()),
        ssh_cp_name: "cp".into(),
        nic_cp_name: Some("nic".into()),
        username: "u".into(),
        password: None,
        ssh_private_key: None,
        ssh_private_key_file: Some("/k".into()),
        pod_cidr: Some("10.0.0.0/16".into()),
        cluster_cidr: Some("10.1.0.0/16".into()),
        cluster_cp_name: Some("vip".into()),
    };
    let params = InstallParams {
        script_path: "s".into(),
        vim_name: Some("n".into()),
        vim_connection_id: Some("c".into()),
        master_node: node.clone(),
        worker_node: Some(node.clone()),
        proxy: Some(ProxyParams {
            http_proxy: Some("h".into()),
            https_proxy: Some("h".into()),
            no_proxy: Some("n".into()),
            k8s_node_cidr: Some("c".into()),
        }),
        ssh_port: Some(22),
        remote_dir: Some("/tmp".into()),
        ssh_retry_seconds: Some(1),
        parallel_workers: Some(1),
        kubernetes_version: Some("1.33".into()),
    };
    let keys = |v: Value| -> BTreeSet<String> { v.as_object().unwrap().keys().cloned().collect() };
    let as_json = serde_json::to_value(&params).unwrap();
    assert_eq!(keys(as_json.clone()), schema_keys("InstallParams"));
    let mut node_keys = keys(as_json["master_node"].clone());
    node_keys.extend(["password".to_string(), "ssh_private_key".to_string()]);
    assert_eq!(node_keys, schema_keys("NodeParams"));
    assert_eq!(keys(as_json["proxy"].clone()), schema_keys("ProxyParams"));
    // And the fully populated document, credentials included, passes both.
    let mut doc = as_json;
    doc["master_node"]["password"] = json!("secret");
    doc["worker_node"]["ssh_private_key"] = json!("-----BEGIN OPENSSH PRIVATE KEY-----");
    assert_eq!(violations(&json!({ PARAM_KEY: doc.clone() })), []);
    let back: InstallParams = serde_json::from_value(doc).unwrap();
    assert_eq!(back.master_node.password.as_deref(), Some("secret"));
}
