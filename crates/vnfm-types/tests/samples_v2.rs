//! Every Tacker `/vnflcm/v2` API sample that is one of the model's types deserializes and
//! re-serializes to the same JSON value.

use crate::common;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use vnfm_types::*;

fn roundtrip<T: DeserializeOwned + Serialize>(original: &Value, what: &str) -> T {
    let typed: T = serde_json::from_value(original.clone())
        .unwrap_or_else(|e| panic!("{what} does not deserialize: {e}"));
    let back = serde_json::to_value(&typed).expect("serializes");
    let d = common::diff(original, &back);
    assert!(
        d.is_empty(),
        "{what} does not round-trip:\n{}",
        d.join("\n")
    );
    typed
}

fn sample(name: &str) -> Value {
    common::load(&format!("tacker/api-ref-samples/v2/vnflcm/{name}"))
}

/// (file, type) for every vnflcm v2 sample; all 18 files are covered.
const SAMPLES: &[(&str, &str)] = &[
    (
        "change-ext-conn-request.json",
        "ChangeExtVnfConnectivityRequest",
    ),
    ("change-vnfpkg-request.json", "ChangeCurrentVnfPkgRequest"),
    (
        "create-subscription-request.json",
        "LccnSubscriptionRequest",
    ),
    ("create-subscription-response.json", "LccnSubscription"),
    ("create-vnf-instance-request.json", "CreateVnfRequest"),
    ("create-vnf-instance-response.json", "VnfInstance"),
    (
        "fail-vnflcm-operation-occurrence-response.json",
        "VnfLcmOpOcc",
    ),
    ("heal-vnf-instance-request.json", "HealVnfRequest"),
    (
        "instantiate-vnf-instance-request.json",
        "InstantiateVnfRequest",
    ),
    ("list-subscription-response.json", "[LccnSubscription]"),
    ("list-vnf-instance-response.json", "[VnfInstance]"),
    (
        "list-vnflcm-operation-occurrence-response.json",
        "[VnfLcmOpOcc]",
    ),
    ("scale-vnf-instance-request.json", "ScaleVnfRequest"),
    ("show-subscription-response.json", "LccnSubscription"),
    ("show-vnf-instance-response.json", "VnfInstance"),
    (
        "show-vnflcm-operation-occurrence-response.json",
        "VnfLcmOpOcc",
    ),
    ("terminate-vnf-instance-request.json", "TerminateVnfRequest"),
    (
        "update-vnf-instance-request.json",
        "VnfInfoModificationRequest",
    ),
];

#[vnfm_test_env::needs(corpus)]
#[test]
fn every_vnflcm_v2_sample_round_trips() {
    let dir = common::corpus("tacker/api-ref-samples/v2/vnflcm");
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .expect("sample dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let listed: Vec<String> = SAMPLES.iter().map(|(f, _)| f.to_string()).collect();
    assert_eq!(
        on_disk, listed,
        "a vnflcm v2 sample is not mapped to a type"
    );

    for (file, ty) in SAMPLES {
        let v = sample(file);
        let what = format!("{file} as {ty}");
        match *ty {
            "ChangeExtVnfConnectivityRequest" => {
                roundtrip::<ChangeExtVnfConnectivityRequest>(&v, &what);
            }
            "ChangeCurrentVnfPkgRequest" => {
                roundtrip::<ChangeCurrentVnfPkgRequest>(&v, &what);
            }
            "LccnSubscriptionRequest" => {
                roundtrip::<LccnSubscriptionRequest>(&v, &what);
            }
            "LccnSubscription" => {
                roundtrip::<LccnSubscription>(&v, &what);
            }
            "[LccnSubscription]" => {
                roundtrip::<Vec<LccnSubscription>>(&v, &what);
            }
            "CreateVnfRequest" => {
                roundtrip::<CreateVnfRequest>(&v, &what);
            }
            "VnfInstance" => {
                roundtrip::<VnfInstance>(&v, &what);
            }
            "[VnfInstance]" => {
                roundtrip::<Vec<VnfInstance>>(&v, &what);
            }
            "VnfLcmOpOcc" => {
                let occ = roundtrip::<VnfLcmOpOcc>(&v, &what);
                // operationParams of a sample occurrence are a valid typed request too.
                assert!(
                    matches!(
                        occ.typed_operation_params(),
                        Ok(OperationParams::Instantiate(_))
                    ),
                    "{what}: operationParams"
                );
            }
            "[VnfLcmOpOcc]" => {
                roundtrip::<Vec<VnfLcmOpOcc>>(&v, &what);
            }
            "HealVnfRequest" => {
                roundtrip::<HealVnfRequest>(&v, &what);
            }
            "InstantiateVnfRequest" => {
                roundtrip::<InstantiateVnfRequest>(&v, &what);
            }
            "ScaleVnfRequest" => {
                roundtrip::<ScaleVnfRequest>(&v, &what);
            }
            "TerminateVnfRequest" => {
                roundtrip::<TerminateVnfRequest>(&v, &what);
            }
            "VnfInfoModificationRequest" => {
                roundtrip::<VnfInfoModificationRequest>(&v, &what);
            }
            other => panic!("unmapped type {other}"),
        }
    }
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn show_vnf_instance_sample_has_the_expected_content() {
    let inst: VnfInstance =
        serde_json::from_value(sample("show-vnf-instance-response.json")).unwrap();
    assert_eq!(inst.instantiation_state, InstantiationState::Instantiated);
    let info = inst.instantiated_vnf_info.as_ref().expect("instantiated");
    assert_eq!(info.flavour_id, "simple");
    assert_eq!(info.vnf_state, VnfOperationalState::Started);
    assert!(!info.ext_cp_info.is_empty());
    let vims = inst.vim_connection_info.as_ref().expect("vims");
    assert_eq!(vims["vim1"].vim_type, "ETSINFV.OPENSTACK_KEYSTONE.V_3");
    assert!(inst.links.self_.href.ends_with(inst.id.as_str()));
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn change_ext_conn_sample_cp_config_is_a_map_in_document_order() {
    let req: ChangeExtVnfConnectivityRequest =
        serde_json::from_value(sample("change-ext-conn-request.json")).unwrap();
    let keys: Vec<&str> = req.ext_virtual_links[0]
        .ext_cps
        .iter()
        .flat_map(|cp| cp.cp_config.keys().map(String::as_str))
        .collect();
    assert_eq!(keys, ["VDU1_CP1", "VDU2_CP1-1", "VDU2_CP1-2"]);
    let vims = req.vim_connection_info.unwrap();
    assert_eq!(vims.keys().collect::<Vec<_>>(), ["vim1", "vim2"]);
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn failed_occurrence_sample_carries_problem_details() {
    let occ: VnfLcmOpOcc =
        serde_json::from_value(sample("fail-vnflcm-operation-occurrence-response.json")).unwrap();
    assert_eq!(occ.operation_state, LcmOperationStateType::Failed);
    let err = occ.error.expect("error");
    assert_eq!(err.status, 422);
    assert_eq!(err.title.as_deref(), Some("Mgmt driver execution failed"));
}

#[test]
fn diff_helper_reports_dropped_and_changed_members() {
    let a = serde_json::json!({"a": 1, "b": {"c": [1, 2]}, "d": "x"});
    let b = serde_json::json!({"a": 1, "b": {"c": [1, 3]}});
    assert_eq!(
        common::diff(&a, &b),
        ["/b/c/1: 2 vs 3", "/d: missing on the right"]
    );
}
