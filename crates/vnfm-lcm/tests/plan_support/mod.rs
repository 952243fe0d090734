//! Fixtures shared by the planner tests: a hand-written VNFD, instances in various states,
//! request builders, and corpus package loading.

#![allow(dead_code)]

use std::path::Path;

use serde_json::{Value, json};
use vnfm_descriptor::Vnfd;
use vnfm_driver_api::ResourceTarget;
use vnfm_lcm::OperationRequest;
use vnfm_types::{VnfInstance, VnfcInfo, VnfcResourceInfo};

/// A VNFD with flavours `simple` (hooks, one aspect, two levels), `big` (no hooks) and `broken`
/// (a hook bound to an undeclared artifact).
pub fn vnfd() -> Vnfd {
    let vdus = json!([
        {"id": "VDU1", "name": "VDU1", "kind": "compute", "nodeType": "tosca.nodes.nfv.Vdu.Compute",
         "minInstances": 1, "maxInstances": 3, "initialDelta": 1},
        {"id": "VDU2", "name": "VDU2", "kind": "compute", "nodeType": "tosca.nodes.nfv.Vdu.Compute",
         "minInstances": 1, "maxInstances": 1, "initialDelta": 1}
    ]);
    let aspects = json!([{
        "id": "VDU1_scale", "maxScaleLevel": 2, "stepDeltas": ["delta_1"],
        "vduDeltas": {"VDU1": {"delta_1": 1}}
    }]);
    let artifact = json!([{
        "name": "mgmt", "owner": "VNF", "artifactType": "tosca.artifacts.Implementation",
        "file": "Scripts/mgmt.so", "sha256": "ab12"
    }]);
    let hook = |op: &str| json!({"operation": op, "artifact": "mgmt"});
    serde_json::from_value(json!({
        "descriptorId": "vnfd-1", "descriptorVersion": "1.0", "provider": "Acme",
        "productName": "Demo", "softwareVersion": "1.0",
        "toscaDefinitionsVersion": "tosca_simple_yaml_1_2", "vnfNodeType": "acme.VNF",
        "entryDefinitions": "Definitions/top.yaml",
        "flavours": [
            {
                "id": "simple", "file": "Definitions/df_simple.yaml",
                "vdus": vdus,
                "vduCps": [{"id": "VDU2_CP1", "vdu": "VDU2"}],
                "extCps": [{"id": "VDU1_CP1", "vdu": "VDU1"}],
                "virtualLinks": [{"id": "internalVL1"}],
                "scalingAspects": aspects,
                "instantiationLevels": [
                    {"id": "level_1", "scaleLevels": {"VDU1_scale": 0}},
                    {"id": "level_2", "scaleLevels": {"VDU1_scale": 2}, "vduInstances": {"VDU1": 3, "VDU2": 1}},
                    {"id": "level_too_big", "vduInstances": {"VDU1": 7}}
                ],
                "defaultInstantiationLevel": "level_1",
                "lcmHooks": [
                    hook("instantiate_start"), hook("instantiate_end"),
                    hook("instantiate_rollback_start"), hook("instantiate_rollback_end"),
                    hook("scale_start"), hook("scale_end"), hook("scale_rollback_end"),
                    hook("heal_start"), hook("terminate_end"),
                    hook("modify_information_start"),
                    hook("change_external_connectivity_end"),
                    hook("change_flavour_start")
                ],
                "artifacts": artifact
            },
            {
                "id": "big", "file": "Definitions/df_big.yaml",
                "vdus": vdus,
                "scalingAspects": aspects,
                "lcmHooks": [hook("change_flavour_end")],
                "artifacts": artifact
            },
            {
                "id": "broken", "file": "Definitions/df_broken.yaml",
                "vdus": vdus,
                "lcmHooks": [{"operation": "instantiate_start", "artifact": "missing"}]
            }
        ]
    }))
    .expect("fixture VNFD")
}

/// A NOT_INSTANTIATED instance of `vnfd-1`.
pub fn fresh() -> VnfInstance {
    serde_json::from_value(json!({
        "id": "inst-1", "vnfdId": "vnfd-1", "vnfProvider": "Acme", "vnfProductName": "Demo",
        "vnfSoftwareVersion": "1.0", "vnfdVersion": "1.0",
        "instantiationState": "NOT_INSTANTIATED",
        "vimConnectionInfo": {"vim1": {"vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3"}},
        "_links": {"self": {"href": "/vnflcm/v2/vnf_instances/inst-1"}}
    }))
    .expect("fixture instance")
}

/// `instance` instantiated at `target`: one `vnfcResourceInfo` (on `vim1`) and one `vnfcInfo`
/// per planned VNFC, `scaleStatus` from the target's levels.
pub fn instantiated_at(instance: &VnfInstance, target: &ResourceTarget) -> VnfInstance {
    let mut out = instance.clone();
    let mut resources = Vec::new();
    let mut infos = Vec::new();
    for (vdu, n) in &target.vdu_instances {
        for i in 0..*n {
            let id = format!("{vdu}-res-{i}");
            let r: VnfcResourceInfo = serde_json::from_value(json!({
                "id": id, "vduId": vdu,
                "computeResource": {"vimConnectionId": "vim1", "resourceId": format!("server-{vdu}-{i}")}
            }))
            .expect("vnfc resource");
            resources.push(r);
            let c: VnfcInfo = serde_json::from_value(json!({
                "id": format!("{vdu}-{id}"), "vduId": vdu, "vnfcResourceInfoId": id,
                "vnfcState": "STARTED"
            }))
            .expect("vnfc info");
            infos.push(c);
        }
    }
    let scale_status: Vec<Value> = target
        .scale_levels
        .iter()
        .map(|(a, l)| json!({"aspectId": a, "scaleLevel": l}))
        .collect();
    out.instantiation_state = vnfm_types::InstantiationState::Instantiated;
    out.instantiated_vnf_info = Some(
        serde_json::from_value(json!({
            "flavourId": target.flavour_id,
            "vnfState": "STARTED",
            "scaleStatus": scale_status,
            "vnfcResourceInfo": resources,
            "vnfcInfo": infos,
        }))
        .expect("instantiated info"),
    );
    out
}

/// An instance of `vnfd-1` instantiated in `simple` with `vdu1` VNFCs of VDU1 (scale level
/// `vdu1 - 1`) and one of VDU2.
pub fn running(vdu1: u32) -> VnfInstance {
    let target = ResourceTarget {
        flavour_id: "simple".into(),
        instantiation_level_id: None,
        scale_levels: [("VDU1_scale".to_string(), vdu1 - 1)].into(),
        vdu_instances: [("VDU1".to_string(), vdu1), ("VDU2".to_string(), 1)].into(),
    };
    instantiated_at(&fresh(), &target)
}

/// Parses a request body into the typed request of `op` (`"instantiate"`, `"scale"`, ...).
pub fn req(op: &str, body: Value) -> OperationRequest {
    fn p<T: serde::de::DeserializeOwned>(v: Value) -> T {
        serde_json::from_value(v).expect("request fixture")
    }
    match op {
        "instantiate" => OperationRequest::Instantiate(p(body)),
        "terminate" => OperationRequest::Terminate(p(body)),
        "heal" => OperationRequest::Heal(p(body)),
        "scale" => OperationRequest::Scale(p(body)),
        "scale_to_level" => OperationRequest::ScaleToLevel(p(body)),
        "change_flavour" => OperationRequest::ChangeFlavour(p(body)),
        "operate" => OperationRequest::Operate(p(body)),
        "change_ext_conn" => OperationRequest::ChangeExtConn(p(body)),
        "modify_info" => OperationRequest::ModifyInfo(p(body)),
        "change_vnfpkg" => OperationRequest::ChangeVnfPkg(p(body)),
        other => panic!("unknown operation {other}"),
    }
}

/// The Tacker sample package directory `name`.
pub fn corpus_dir(name: &str) -> std::path::PathBuf {
    vnfm_test_env::corpus("tacker").join(name)
}

fn add_files(dir: &Path, root: &Path, out: &mut vnfm_tosca::MemFiles) {
    let entries = std::fs::read_dir(dir).expect("corpus directory");
    for e in entries {
        let p = e.expect("directory entry").path();
        if p.is_dir() {
            add_files(&p, root, out);
        } else {
            let rel = p
                .strip_prefix(root)
                .expect("under root")
                .to_string_lossy()
                .replace('\\', "/");
            out.files
                .insert(rel, std::fs::read(&p).expect("corpus file"));
        }
    }
}

/// The VNFD of Tacker sample package `name`, read with `vnfm_tosca::load`.
pub fn corpus_vnfd(name: &str) -> Vnfd {
    let root = corpus_dir(name);
    let meta = std::fs::read_to_string(root.join("TOSCA-Metadata/TOSCA.meta")).expect("TOSCA.meta");
    let entry = meta
        .lines()
        .find_map(|l| l.strip_prefix("Entry-Definitions:"))
        .expect("Entry-Definitions")
        .trim()
        .to_string();
    let mut files = vnfm_tosca::MemFiles::new(entry);
    add_files(&root, &root, &mut files);
    let loaded = vnfm_tosca::load(&files);
    assert!(!loaded.has_errors(), "{name}: {:#?}", loaded.diagnostics);
    loaded
        .descriptor
        .and_then(|d| d.as_vnfd().cloned())
        .expect("a VNFD")
}

/// A NOT_INSTANTIATED instance of `vnfd`.
pub fn fresh_of(vnfd: &Vnfd) -> VnfInstance {
    let mut i = fresh();
    i.vnfd_id = vnfm_types::VnfdId::new(vnfd.descriptor_id.clone());
    i
}
