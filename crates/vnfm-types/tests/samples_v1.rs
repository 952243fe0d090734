//! SOL003 v2.6.1 samples (Tacker `/vnflcm/v1` API reference and the ETSI conformance-test
//! request bodies) read as the v1 shapes, convert to v3.3.1 and back.

use crate::common;

use std::fmt::Debug;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use vnfm_types::v1;
use vnfm_types::*;

/// Reads `original` as `V1`, converts it up to `V2` and back down, and checks that the
/// result equals the original except at the `lossy` pointers (attributes the module docs list
/// as having no v3.3.1 counterpart). Returns the v3.3.1 JSON.
fn up_and_down<V1, V2>(original: &Value, lossy: &[&str], what: &str) -> Value
where
    V1: DeserializeOwned + Serialize + TryInto<V2>,
    <V1 as TryInto<V2>>::Error: Debug,
    V2: Serialize + TryInto<V1>,
    <V2 as TryInto<V1>>::Error: Debug,
{
    let mut original = original.clone();
    common::strip_nulls(&mut original);
    let typed: V1 = serde_json::from_value(original.clone())
        .unwrap_or_else(|e| panic!("{what} does not read as v1: {e}"));
    let v2: V2 = typed
        .try_into()
        .unwrap_or_else(|e| panic!("{what} does not convert up: {e:?}"));
    let v2_json = serde_json::to_value(&v2).expect("serializes");
    let back: V1 = v2
        .try_into()
        .unwrap_or_else(|e| panic!("{what} does not convert down: {e:?}"));
    let back = serde_json::to_value(&back).expect("serializes");
    for p in lossy {
        common::remove(&mut original, p);
    }
    let d = common::diff(&original, &back);
    assert!(
        d.is_empty(),
        "{what}: v1 -> v2 -> v1 differs:\n{}",
        d.join("\n")
    );
    v2_json
}

/// For types that are the same in both versions: a plain serde round trip.
fn same<T: DeserializeOwned + Serialize>(original: &Value, what: &str) {
    let t: T = serde_json::from_value(original.clone())
        .unwrap_or_else(|e| panic!("{what} does not read: {e}"));
    let d = common::diff(original, &serde_json::to_value(&t).unwrap());
    assert!(
        d.is_empty(),
        "{what} does not round-trip:\n{}",
        d.join("\n")
    );
}

fn tacker(name: &str) -> Value {
    let mut v = common::load(&format!("tacker/api-ref-samples/v1/vnflcm/{name}"));
    common::strip_nulls(&mut v);
    v
}

fn etsi(name: &str) -> Value {
    common::load(&format!(
        "etsi/api-tests/SOL003/VNFLifecycleManagement-API/jsons/{name}"
    ))
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn tacker_v1_samples_convert_up_and_back() {
    same::<CreateVnfRequest>(&tacker("create-vnf-instance-request.json"), "create req");
    same::<HealVnfRequest>(&tacker("heal-vnf-instance-request.json"), "heal");
    same::<TerminateVnfRequest>(&tacker("terminate-vnf-instance-request.json"), "terminate");
    up_and_down::<v1::VnfInfoModificationRequest, VnfInfoModificationRequest>(
        &tacker("modify-vnf-instance-request.json"),
        &[],
        "modify",
    );

    let created = up_and_down::<v1::VnfInstance, VnfInstance>(
        &tacker("create-vnf-instance-response.json"),
        &["/vnfPkgId"],
        "create response",
    );
    assert_eq!(created["instantiationState"], "NOT_INSTANTIATED");
    assert!(created.get("vnfPkgId").is_none());

    let shown = up_and_down::<v1::VnfInstance, VnfInstance>(
        &tacker("show-vnf-instance-response.json"),
        &["/vnfPkgId", "/instantiatedVnfInfo/additionalParams"],
        "show instance",
    );
    // The v2.6.1 array became the v3.3.1 map keyed by the former `id`.
    let v1_vims = tacker("show-vnf-instance-response.json")["vimConnectionInfo"].clone();
    let id = v1_vims[0]["id"].as_str().unwrap();
    assert_eq!(shown["vimConnectionInfo"][id]["vimId"], v1_vims[0]["vimId"]);
    assert!(shown["vimConnectionInfo"][id].get("id").is_none());

    let list = tacker("list-vnf-instance-response.json");
    for (i, inst) in list.as_array().unwrap().iter().enumerate() {
        up_and_down::<v1::VnfInstance, VnfInstance>(
            inst,
            &["/vnfPkgId", "/instantiatedVnfInfo/additionalParams"],
            &format!("list instance {i}"),
        );
    }
}

/// Tacker v1 API-reference samples that are not valid SOL003 v2.6.1, and why. Each must fail
/// to read, so this list stays true.
const TACKER_V1_NON_CONFORMANT: &[(&str, &str)] = &[
    (
        "instantiate-vnf-instance-request.json",
        "not JSON: a comma is missing after extVirtualLinks[0].id",
    ),
    (
        "show-vnflcm-operation-occurrence-response.json",
        "not JSON: operationParams is an unterminated string with raw newlines",
    ),
    (
        "list-vnflcm-operation-occurrence-response.json",
        "not JSON: same broken operationParams",
    ),
    (
        "scale-vnf-instance-request.json",
        "numberOfSteps is the string \"1\", not an integer",
    ),
    (
        "change-ext-conn-request.json",
        "vimConnectionInfo[0] has an unknown member vimConnectionId",
    ),
    (
        "create-subscription-request.json",
        "vnfProductsFromProviders is an object, not an array",
    ),
    (
        "create-subscription-response.json",
        "vnfProductsFromProviders is an object, not an array",
    ),
    (
        "list-subscription-response.json",
        "filter repeats the notificationTypes member (the second holds operation types)",
    ),
    (
        "fail-vnf-instance-response.json",
        "operationParams is a JSON-encoded string and the timestamps are not RFC 3339",
    ),
];

#[vnfm_test_env::needs(corpus)]
#[test]
fn tacker_v1_non_conformant_samples_are_rejected() {
    for (file, reason) in TACKER_V1_NON_CONFORMANT {
        let path = common::corpus(&format!("tacker/api-ref-samples/v1/vnflcm/{file}"));
        let text = std::fs::read_to_string(&path).unwrap();
        let Ok(v) = serde_json::from_str::<Value>(&text) else {
            assert!(reason.starts_with("not JSON"), "{file}: parses as JSON");
            continue;
        };
        let rejected = match *file {
            "scale-vnf-instance-request.json" => {
                serde_json::from_value::<ScaleVnfRequest>(v).is_err()
            }
            "change-ext-conn-request.json" => {
                serde_json::from_value::<v1::ChangeExtVnfConnectivityRequest>(v).is_err()
            }
            "create-subscription-request.json" => {
                serde_json::from_value::<LccnSubscriptionRequest>(v).is_err()
            }
            "create-subscription-response.json" => {
                serde_json::from_value::<LccnSubscription>(v).is_err()
            }
            // serde_json's Value keeps the last duplicate; the typed read sees both.
            "list-subscription-response.json" => {
                serde_json::from_str::<Vec<LccnSubscription>>(&text).is_err()
            }
            "fail-vnf-instance-response.json" => {
                serde_json::from_value::<v1::VnfLcmOpOcc>(v).is_err()
            }
            other => panic!("no check for {other}"),
        };
        assert!(rejected, "{file} was accepted although: {reason}");
    }
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn etsi_conformance_request_bodies_convert_up_and_back() {
    // cpInstanceId becomes the cpConfig key and is not restored (see the v1 module docs).
    let conn = up_and_down::<v1::ChangeExtVnfConnectivityRequest, ChangeExtVnfConnectivityRequest>(
        &etsi("changeExtVnfConnectivityRequest.json"),
        &["/extVirtualLinks/0/extCps/0/cpConfig/0/cpInstanceId"],
        "changeExtVnfConnectivityRequest",
    );
    assert!(conn["extVirtualLinks"][0]["extCps"][0]["cpConfig"]["string"].is_object());
    assert_eq!(conn["vimConnectionInfo"]["string"]["vimType"], "string");

    up_and_down::<v1::ChangeVnfFlavourRequest, ChangeVnfFlavourRequest>(
        &etsi("changeVnfFlavourRequest.json"),
        &[],
        "changeVnfFlavourRequest",
    );
    up_and_down::<v1::VnfInfoModificationRequest, VnfInfoModificationRequest>(
        &etsi("patchBodyRequest.json"),
        &[],
        "patchBodyRequest",
    );
    same::<CreateVnfRequest>(&etsi("createVnfRequest.json"), "createVnfRequest");
    same::<HealVnfRequest>(&etsi("healVnfRequest.json"), "healVnfRequest");
    same::<LccnSubscriptionRequest>(
        &etsi("lccnSubscriptionRequest.json"),
        "lccnSubscriptionRequest",
    );
    same::<OperateVnfRequest>(&etsi("operateVnfRequest.json"), "operateVnfRequest");
    same::<ScaleVnfRequest>(&etsi("scaleVnfRequest.json"), "scaleVnfRequest");
    same::<ScaleVnfToLevelRequest>(
        &etsi("scaleVnfToLevelRequest.json"),
        "scaleVnfToLevelRequest",
    );
    same::<TerminateVnfRequest>(&etsi("terminateVnfRequest.json"), "terminateVnfRequest");

    // instantiateVnfRequest.json names the VLD of an externally-managed VL
    // `virtualLinkDescId`; SOL003 (every version) calls it `vnfVirtualLinkDescId`.
    let inst = etsi("instantiateVnfRequest.json");
    let err = serde_json::from_value::<v1::InstantiateVnfRequest>(inst.clone()).unwrap_err();
    assert!(err.to_string().contains("virtualLinkDescId"), "{err}");
    let mut fixed = inst;
    let emvl = fixed["extManagedVirtualLinks"][0].as_object_mut().unwrap();
    let vld = emvl.shift_remove("virtualLinkDescId").unwrap();
    emvl.insert("vnfVirtualLinkDescId".into(), vld);
    up_and_down::<v1::InstantiateVnfRequest, InstantiateVnfRequest>(
        &fixed,
        &["/extVirtualLinks/0/extCps/0/cpConfig/0/cpInstanceId"],
        "instantiateVnfRequest (VLD name fixed)",
    );
}

fn v1_instantiate_occ() -> Value {
    json!({
        "id": "occ-1", "operationState": "COMPLETED",
        "stateEnteredTime": "2021-09-06T07:07:15Z", "startTime": "2021-09-06T07:07:00Z",
        "vnfInstanceId": "inst-1", "operation": "INSTANTIATE",
        "isAutomaticInvocation": false, "isCancelPending": false,
        "operationParams": {
            "flavourId": "simple",
            "vimConnectionInfo": [{"id": "vim1", "vimType": "kubernetes"}],
            "extVirtualLinks": [{"id": "vl1", "resourceId": "net1", "extCps": [
                {"cpdId": "CP1", "cpConfig": [{"cpProtocolData": [{"layerProtocol": "IP_OVER_ETHERNET"}]}]}
            ]}]
        },
        "changedInfo": {"vimConnectionInfo": [{"id": "vim1", "vimType": "kubernetes"}]},
        "_links": {"self": {"href": "s"}, "vnfInstance": {"href": "i"}}
    })
}

#[test]
fn v1_occurrence_operation_params_are_converted_to_the_v2_request_shape() {
    let v2_json = up_and_down::<v1::VnfLcmOpOcc, VnfLcmOpOcc>(&v1_instantiate_occ(), &[], "occ");
    let params = &v2_json["operationParams"];
    assert_eq!(params["vimConnectionInfo"]["vim1"]["vimType"], "kubernetes");
    assert!(params["extVirtualLinks"][0]["extCps"][0]["cpConfig"]["CP1-0"].is_object());
    assert_eq!(
        v2_json["changedInfo"]["vimConnectionInfo"]["vim1"]["vimType"],
        "kubernetes"
    );
    let occ: VnfLcmOpOcc = serde_json::from_value(v2_json).unwrap();
    assert!(matches!(
        occ.typed_operation_params(),
        Ok(OperationParams::Instantiate(_))
    ));
}

#[test]
fn duplicate_vim_connection_ids_fail_up() {
    let req: v1::InstantiateVnfRequest = serde_json::from_value(json!({
        "flavourId": "f",
        "vimConnectionInfo": [{"id": "a", "vimType": "x"}, {"id": "a", "vimType": "y"}]
    }))
    .unwrap();
    let err = InstantiateVnfRequest::try_from(req)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("vimConnectionInfo") && err.contains("appears twice"),
        "{err}"
    );
}

#[test]
fn vnf_pkg_id_in_a_modification_fails_up_with_advice() {
    let req: v1::VnfInfoModificationRequest =
        serde_json::from_value(json!({"vnfPkgId": "p"})).unwrap();
    let err = VnfInfoModificationRequest::try_from(req)
        .unwrap_err()
        .to_string();
    assert!(err.contains("/vnfPkgId") && err.contains("vnfdId"), "{err}");
}

#[test]
fn vim_delete_ids_become_null_merge_patch_entries_and_back() {
    let v1_json = json!({
        "vimConnectionInfo": [{"id": "new", "vimType": "kubernetes"}],
        "vimConnectionInfoDeleteIds": ["old"]
    });
    let v2_json = up_and_down::<v1::VnfInfoModificationRequest, VnfInfoModificationRequest>(
        &v1_json,
        &[],
        "modify with deletes",
    );
    assert_eq!(
        v2_json["vimConnectionInfo"],
        json!({"new": {"vimType": "kubernetes"}, "old": null})
    );
    // Updating and deleting the same connection is contradictory.
    let both: v1::VnfInfoModificationRequest = serde_json::from_value(json!({
        "vimConnectionInfo": [{"id": "x", "vimType": "k"}],
        "vimConnectionInfoDeleteIds": ["x"]
    }))
    .unwrap();
    assert!(VnfInfoModificationRequest::try_from(both).is_err());
}

#[test]
fn v3_only_requests_fail_down() {
    let mut occ: VnfLcmOpOcc = {
        let v2 = up_and_down::<v1::VnfLcmOpOcc, VnfLcmOpOcc>(&v1_instantiate_occ(), &[], "occ");
        serde_json::from_value(v2).unwrap()
    };
    occ.operation = LcmOperationType::ChangeVnfpkg;
    occ.operation_params = None;
    let err = v1::VnfLcmOpOcc::try_from(occ).unwrap_err().to_string();
    assert!(
        err.contains("/operation") && err.contains("ChangeVnfpkg"),
        "{err}"
    );

    let link: ExtVirtualLinkData = serde_json::from_value(json!({
        "id": "vl", "resourceId": "n",
        "extCps": [{"cpdId": "CP", "cpConfig": {"sub": {"parentCpConfigId": "trunk"}}}]
    }))
    .unwrap();
    let err = v1::ExtVirtualLinkData::try_from(link)
        .unwrap_err()
        .to_string();
    assert!(err.contains("parentCpConfigId"), "{err}");
}

#[test]
fn etsi_v1_schema_name_virtual_link_resource_info_is_read() {
    let v: v1::InstantiatedVnfInfo = serde_json::from_value(json!({
        "flavourId": "f", "vnfState": "STARTED",
        "virtualLinkResourceInfo": [{"id": "vl", "vnfVirtualLinkDescId": "d",
            "networkResource": {"resourceId": "n"}}]
    }))
    .unwrap();
    let v2: InstantiatedVnfInfo = v.into();
    assert_eq!(v2.vnf_virtual_link_resource_info.unwrap()[0].id, "vl");
}
