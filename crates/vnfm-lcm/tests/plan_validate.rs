//! One test per refusal: each request the validator must refuse, with the exact message and
//! HTTP status, plus the requests it must accept.

use crate::plan_support;

use plan_support::*;
use serde_json::json;
use vnfm_lcm::{LcmError, OperationRequest, validate};
use vnfm_types::VnfInstance;

fn refuse(op: OperationRequest, instance: &VnfInstance) -> (u16, String) {
    let e: LcmError = validate(&op, &vnfd(), instance).expect_err("the request must be refused");
    (e.kind().status(), e.to_string())
}

fn accept(op: OperationRequest, instance: &VnfInstance) {
    if let Err(e) = validate(&op, &vnfd(), instance) {
        panic!("refused: {e}");
    }
}

fn instantiate(body: serde_json::Value) -> OperationRequest {
    req("instantiate", body)
}

#[test]
fn instantiate_twice_is_a_conflict() {
    let (status, msg) = refuse(instantiate(json!({"flavourId": "simple"})), &running(1));
    assert_eq!(status, 409);
    assert_eq!(
        msg,
        "instance inst-1 is already INSTANTIATED (flavour `simple`); terminate it before instantiating again"
    );
}

#[test]
fn instantiate_unknown_flavour_lists_the_flavours() {
    let (status, msg) = refuse(instantiate(json!({"flavourId": "huge"})), &fresh());
    assert_eq!(status, 422);
    assert_eq!(
        msg,
        "VNFD vnfd-1 has no deployment flavour `huge`; known flavours: simple, big, broken"
    );
}

#[test]
fn instantiate_unknown_level() {
    let (status, msg) = refuse(
        instantiate(json!({"flavourId": "simple", "instantiationLevelId": "level_9"})),
        &fresh(),
    );
    assert_eq!(status, 422);
    assert_eq!(
        msg,
        "flavour `simple` has no instantiation level `level_9`; known instantiation levels: level_1, level_2, level_too_big"
    );
}

#[test]
fn instantiate_level_beyond_the_vdu_profile() {
    let (status, msg) = refuse(
        instantiate(json!({"flavourId": "simple", "instantiationLevelId": "level_too_big"})),
        &fresh(),
    );
    assert_eq!(status, 422);
    assert_eq!(
        msg,
        "VDU `VDU1` would have 7 instances, outside its vdu_profile bounds 1..=3"
    );
}

fn ext_vl(cpd: &str) -> serde_json::Value {
    json!({"id": "ext1", "resourceId": "net-1",
           "extCps": [{"cpdId": cpd, "cpConfig": {"c1": {}}}]})
}

#[test]
fn instantiate_unknown_ext_cp_points_at_the_cpd() {
    let (status, msg) = refuse(
        instantiate(json!({"flavourId": "simple", "extVirtualLinks": [ext_vl("VDU9_CP1")]})),
        &fresh(),
    );
    assert_eq!(status, 422);
    assert_eq!(
        msg,
        "/extVirtualLinks/0/extCps/0/cpdId: flavour `simple` has no external connection point `VDU9_CP1`; known external connection points: VDU1_CP1 (a request may also name, as Tacker accepts them, the VDU connection points the VNFD does not expose: VDU2_CP1)"
    );
    // External CPs and VDU CPs are both accepted.
    accept(
        instantiate(json!({"flavourId": "simple",
            "extVirtualLinks": [ext_vl("VDU1_CP1"), {"id": "ext2", "resourceId": "n",
                "extCps": [{"cpdId": "VDU2_CP1", "cpConfig": {"c": {}}}]}]})),
        &fresh(),
    );
}

#[test]
fn instantiate_duplicate_ext_link_ids() {
    let (status, msg) = refuse(
        instantiate(
            json!({"flavourId": "simple", "extVirtualLinks": [ext_vl("VDU1_CP1"), ext_vl("VDU1_CP1")]}),
        ),
        &fresh(),
    );
    assert_eq!(status, 400);
    assert_eq!(
        msg,
        "/extVirtualLinks/1/id: external virtual link id `ext1` is used more than once; ids must be unique"
    );
}

#[test]
fn instantiate_empty_cp_config() {
    let (status, msg) = refuse(
        instantiate(
            json!({"flavourId": "simple", "extVirtualLinks": [{"id": "e", "resourceId": "n",
            "extCps": [{"cpdId": "VDU1_CP1", "cpConfig": {}}]}]}),
        ),
        &fresh(),
    );
    assert_eq!(status, 400);
    assert_eq!(
        msg,
        "/extVirtualLinks/0/extCps/0/cpConfig: cpConfig is empty: give at least one CP configuration"
    );
}

#[test]
fn instantiate_unknown_vim_connection() {
    let (status, msg) = refuse(
        instantiate(
            json!({"flavourId": "simple", "extVirtualLinks": [{"id": "e", "resourceId": "n",
            "vimConnectionId": "vimX", "extCps": [{"cpdId": "VDU1_CP1", "cpConfig": {"c": {}}}]}]}),
        ),
        &fresh(),
    );
    assert_eq!(status, 422);
    assert_eq!(
        msg,
        "/extVirtualLinks/0/vimConnectionId: no VIM connection `vimX` in the request or the instance; known VIM connections: vim1"
    );
    // A connection the request itself brings is known.
    accept(
        instantiate(json!({"flavourId": "simple",
            "vimConnectionInfo": {"vimX": {"vimType": "kubernetes"}},
            "extVirtualLinks": [{"id": "e", "resourceId": "n", "vimConnectionId": "vimX",
                "extCps": [{"cpdId": "VDU1_CP1", "cpConfig": {"c": {}}}]}]})),
        &fresh(),
    );
}

#[test]
fn instantiate_unknown_ext_managed_link() {
    let (status, msg) = refuse(
        instantiate(json!({"flavourId": "simple", "extManagedVirtualLinks": [
            {"id": "m1", "vnfVirtualLinkDescId": "internalVL7", "resourceId": "net"}]})),
        &fresh(),
    );
    assert_eq!(status, 422);
    assert_eq!(
        msg,
        "/extManagedVirtualLinks/0/vnfVirtualLinkDescId: flavour `simple` has no internal virtual link `internalVL7`; known virtual links: internalVL1"
    );
}

#[test]
fn instantiate_with_a_hook_bound_to_a_missing_artifact() {
    let (status, msg) = refuse(instantiate(json!({"flavourId": "broken"})), &fresh());
    assert_eq!(status, 422);
    assert_eq!(
        msg,
        "the VNFD binds hook `instantiate_start` to artifact `missing`, which flavour `broken` does not declare; fix the package"
    );
}

#[test]
fn operations_on_a_fresh_instance_are_conflicts() {
    let cases = [
        (
            req("terminate", json!({"terminationType": "FORCEFUL"})),
            "TERMINATE",
        ),
        (req("heal", json!({})), "HEAL"),
        (
            req(
                "scale",
                json!({"type": "SCALE_OUT", "aspectId": "VDU1_scale"}),
            ),
            "SCALE",
        ),
        (
            req("scale_to_level", json!({"instantiationLevelId": "level_2"})),
            "SCALE_TO_LEVEL",
        ),
        (
            req("change_flavour", json!({"newFlavourId": "big"})),
            "CHANGE_FLAVOUR",
        ),
        (
            req("operate", json!({"changeStateTo": "STOPPED"})),
            "OPERATE",
        ),
        (
            req(
                "change_ext_conn",
                json!({"extVirtualLinks": [ext_vl("VDU1_CP1")]}),
            ),
            "CHANGE_EXT_CONN",
        ),
        (
            req("change_vnfpkg", json!({"vnfdId": "vnfd-1"})),
            "CHANGE_VNFPKG",
        ),
    ];
    for (op, name) in cases {
        let (status, msg) = refuse(op, &fresh());
        assert_eq!(status, 409, "{name}");
        assert_eq!(
            msg,
            format!(
                "{name} requires an INSTANTIATED VNF instance, but instance inst-1 is NOT_INSTANTIATED; instantiate it first"
            )
        );
    }
}

#[test]
fn terminate_graceful_timeout_must_be_sane() {
    let (status, msg) = refuse(
        req(
            "terminate",
            json!({"terminationType": "GRACEFUL", "gracefulTerminationTimeout": 90000}),
        ),
        &running(1),
    );
    assert_eq!(status, 400);
    assert_eq!(
        msg,
        "/gracefulTerminationTimeout: 90000 s is longer than the maximum of 86400 s (one day); the value is in seconds"
    );
    // SOL003: the timeout is ignored for a forceful termination.
    accept(
        req(
            "terminate",
            json!({"terminationType": "FORCEFUL", "gracefulTerminationTimeout": 90000}),
        ),
        &running(1),
    );
}

#[test]
fn heal_unknown_vnfc_lists_the_known_ones() {
    let (status, msg) = refuse(
        req(
            "heal",
            json!({"vnfcInstanceId": ["VDU1-VDU1-res-0", "nope"]}),
        ),
        &running(1),
    );
    assert_eq!(status, 422);
    assert_eq!(
        msg,
        "/vnfcInstanceId/1: instance has no VNFC `nope`; known VNFC ids: VDU1-VDU1-res-0, VDU2-VDU2-res-0"
    );
}

#[test]
fn heal_empty_and_duplicate_vnfc_lists() {
    let (status, msg) = refuse(req("heal", json!({"vnfcInstanceId": []})), &running(1));
    assert_eq!(status, 400);
    assert_eq!(
        msg,
        "/vnfcInstanceId: vnfcInstanceId is empty: omit it to address the whole VNF, or list VNFC ids"
    );
    let (status, msg) = refuse(
        req(
            "heal",
            json!({"vnfcInstanceId": ["VDU1-res-0", "VDU1-res-0"]}),
        ),
        &running(1),
    );
    assert_eq!(status, 400);
    assert_eq!(
        msg,
        "/vnfcInstanceId/1: VNFC `VDU1-res-0` is listed more than once"
    );
}

#[test]
fn scale_unknown_aspect() {
    let (status, msg) = refuse(
        req(
            "scale",
            json!({"type": "SCALE_OUT", "aspectId": "VDU2_scale"}),
        ),
        &running(1),
    );
    assert_eq!(status, 422);
    assert_eq!(
        msg,
        "flavour `simple` has no scaling aspect `VDU2_scale`; known scaling aspects: VDU1_scale"
    );
}

#[test]
fn scale_out_beyond_max_and_in_below_zero() {
    let (status, msg) = refuse(
        req(
            "scale",
            json!({"type": "SCALE_OUT", "aspectId": "VDU1_scale", "numberOfSteps": 2}),
        ),
        &running(2),
    );
    assert_eq!(status, 422);
    assert_eq!(
        msg,
        "scaling aspect `VDU1_scale` from level 1 to level 3 is out of bounds: levels 0..=2 are allowed"
    );
    let (_, msg) = refuse(
        req(
            "scale",
            json!({"type": "SCALE_IN", "aspectId": "VDU1_scale"}),
        ),
        &running(1),
    );
    assert_eq!(
        msg,
        "scaling aspect `VDU1_scale` from level 0 to level -1 is out of bounds: levels 0..=2 are allowed"
    );
    accept(
        req(
            "scale",
            json!({"type": "SCALE_OUT", "aspectId": "VDU1_scale", "numberOfSteps": 2}),
        ),
        &running(1),
    );
}

#[test]
fn scale_zero_steps() {
    let (status, msg) = refuse(
        req(
            "scale",
            json!({"type": "SCALE_OUT", "aspectId": "VDU1_scale", "numberOfSteps": 0}),
        ),
        &running(1),
    );
    assert_eq!(status, 400);
    assert_eq!(
        msg,
        "/numberOfSteps: numberOfSteps must be a positive integer (1 when omitted)"
    );
}

#[test]
fn scale_to_level_needs_exactly_one_target() {
    let (status, msg) = refuse(
        req(
            "scale_to_level",
            json!({"instantiationLevelId": "level_2",
                   "scaleInfo": [{"aspectId": "VDU1_scale", "scaleLevel": 1}]}),
        ),
        &running(1),
    );
    assert_eq!(status, 400);
    assert_eq!(
        msg,
        ": give either instantiationLevelId or scaleInfo, not both"
    );
    let (_, msg) = refuse(req("scale_to_level", json!({})), &running(1));
    assert_eq!(
        msg,
        ": give instantiationLevelId or scaleInfo: the request names no target level"
    );
    let (_, msg) = refuse(req("scale_to_level", json!({"scaleInfo": []})), &running(1));
    assert_eq!(
        msg,
        "/scaleInfo: scaleInfo is empty: list at least one aspect and its target level"
    );
}

#[test]
fn scale_to_level_checks_aspects_and_bounds() {
    let (status, msg) = refuse(
        req(
            "scale_to_level",
            json!({"scaleInfo": [{"aspectId": "VDU1_scale", "scaleLevel": 5}]}),
        ),
        &running(2),
    );
    assert_eq!(status, 422);
    assert_eq!(
        msg,
        "scaling aspect `VDU1_scale` from level 1 to level 5 is out of bounds: levels 0..=2 are allowed"
    );
    let (status, msg) = refuse(
        req(
            "scale_to_level",
            json!({"scaleInfo": [{"aspectId": "VDU1_scale", "scaleLevel": 1},
                                 {"aspectId": "VDU1_scale", "scaleLevel": 2}]}),
        ),
        &running(1),
    );
    assert_eq!(status, 400);
    assert_eq!(
        msg,
        "/scaleInfo/1/aspectId: aspect `VDU1_scale` is listed more than once"
    );
    let (status, _) = refuse(
        req(
            "scale_to_level",
            json!({"scaleInfo": [{"aspectId": "nope", "scaleLevel": 1}]}),
        ),
        &running(1),
    );
    assert_eq!(status, 422);
    let (status, msg) = refuse(
        req("scale_to_level", json!({"instantiationLevelId": "level_0"})),
        &running(1),
    );
    assert_eq!(status, 422);
    assert!(msg.starts_with("flavour `simple` has no instantiation level `level_0`"));
}

#[test]
fn change_flavour_must_name_another_existing_flavour() {
    let (status, msg) = refuse(
        req("change_flavour", json!({"newFlavourId": "simple"})),
        &running(1),
    );
    assert_eq!(status, 422);
    assert_eq!(
        msg,
        "instance is already in flavour `simple`; choose a different newFlavourId"
    );
    let (status, msg) = refuse(
        req("change_flavour", json!({"newFlavourId": "tiny"})),
        &running(1),
    );
    assert_eq!(status, 422);
    assert_eq!(
        msg,
        "VNFD vnfd-1 has no deployment flavour `tiny`; known flavours: simple, big, broken"
    );
    accept(
        req("change_flavour", json!({"newFlavourId": "big"})),
        &running(1),
    );
}

#[test]
fn operate_stop_parameters_only_when_stopping_gracefully() {
    let (status, msg) = refuse(
        req(
            "operate",
            json!({"changeStateTo": "STARTED", "stopType": "GRACEFUL"}),
        ),
        &running(1),
    );
    assert_eq!(status, 400);
    assert_eq!(
        msg,
        "/stopType: stopType applies only when changeStateTo is STOPPED"
    );
    let (_, msg) = refuse(
        req(
            "operate",
            json!({"changeStateTo": "STOPPED", "stopType": "FORCEFUL", "gracefulStopTimeout": 10}),
        ),
        &running(1),
    );
    assert_eq!(
        msg,
        "/gracefulStopTimeout: gracefulStopTimeout applies only when stopType is GRACEFUL"
    );
    let (_, msg) = refuse(
        req(
            "operate",
            json!({"changeStateTo": "STARTED", "gracefulStopTimeout": 10}),
        ),
        &running(1),
    );
    assert_eq!(
        msg,
        "/gracefulStopTimeout: gracefulStopTimeout applies only when changeStateTo is STOPPED"
    );
    accept(
        req(
            "operate",
            json!({"changeStateTo": "STOPPED", "stopType": "GRACEFUL", "gracefulStopTimeout": 10,
                   "vnfcInstanceId": ["VDU1-VDU1-res-0"]}),
        ),
        &running(1),
    );
}

#[test]
fn change_ext_conn_checks_cpds_of_the_current_flavour() {
    let (status, msg) = refuse(
        req(
            "change_ext_conn",
            json!({"extVirtualLinks": [ext_vl("VDU3_CP1")]}),
        ),
        &running(1),
    );
    assert_eq!(status, 422);
    assert_eq!(
        msg,
        "/extVirtualLinks/0/extCps/0/cpdId: flavour `simple` has no external connection point `VDU3_CP1`; known external connection points: VDU1_CP1 (a request may also name, as Tacker accepts them, the VDU connection points the VNFD does not expose: VDU2_CP1)"
    );
    accept(
        req(
            "change_ext_conn",
            json!({"extVirtualLinks": [ext_vl("VDU1_CP1")]}),
        ),
        &running(1),
    );
}

#[test]
fn modify_info_is_allowed_in_any_state() {
    let body = json!({"vnfInstanceName": "renamed", "metadata": {"a": 1}});
    accept(req("modify_info", body.clone()), &fresh());
    accept(req("modify_info", body), &running(1));
}

#[test]
fn modify_info_unknown_and_duplicate_vnfcs() {
    let (status, msg) = refuse(
        req(
            "modify_info",
            json!({"vnfcInfoModifications": [{"id": "x", "vnfcConfigurableProperties": {}}]}),
        ),
        &running(1),
    );
    assert_eq!(status, 422);
    assert_eq!(
        msg,
        "/vnfcInfoModifications/0/id: instance has no VNFC `x`; known VNFC ids: VDU1-VDU1-res-0, VDU2-VDU2-res-0"
    );
    let (status, msg) = refuse(
        req(
            "modify_info",
            json!({"vnfcInfoModifications": [
                {"id": "VDU1-VDU1-res-0", "vnfcConfigurableProperties": {}},
                {"id": "VDU1-VDU1-res-0", "vnfcConfigurableProperties": {}}]}),
        ),
        &running(1),
    );
    assert_eq!(status, 400);
    assert_eq!(
        msg,
        "/vnfcInfoModifications/1/id: VNFC `VDU1-VDU1-res-0` is listed more than once"
    );
}

#[test]
fn modify_info_cannot_remove_a_vim_in_use() {
    let (status, msg) = refuse(
        req("modify_info", json!({"vimConnectionInfo": {"vim1": null}})),
        &running(1),
    );
    assert_eq!(status, 409);
    assert_eq!(
        msg,
        "/vimConnectionInfo/vim1: VIM connection `vim1` cannot be removed: resource `vnfcResourceInfo VDU1-res-0` of the instance lives on it"
    );
    // Before instantiation nothing lives on it.
    accept(
        req("modify_info", json!({"vimConnectionInfo": {"vim1": null}})),
        &fresh(),
    );
}

#[test]
fn change_vnfpkg_needs_the_current_flavour_in_the_new_vnfd() {
    let mut new = vnfd();
    new.descriptor_id = "vnfd-2".into();
    new.flavours.retain(|f| f.id != "simple");
    let op = req("change_vnfpkg", json!({"vnfdId": "vnfd-2"}));
    let e = validate(&op, &new, &running(1)).unwrap_err();
    assert_eq!(e.kind().status(), 422);
    assert_eq!(
        e.to_string(),
        "VNFD vnfd-2 has no deployment flavour `simple`; known flavours: big, broken"
    );
    // Planning with a VNFD other than the requested one is the caller's bug.
    let e = validate(&op, &vnfd(), &running(1)).unwrap_err();
    assert_eq!(e.kind().status(), 500);
    assert_eq!(
        e.to_string(),
        "inconsistent lifecycle data: CHANGE_VNFPKG to VNFD vnfd-2 was planned with VNFD vnfd-1"
    );
}

#[test]
fn planning_with_the_wrong_vnfd_is_inconsistent() {
    let mut other = vnfd();
    other.descriptor_id = "vnfd-9".into();
    let e = validate(
        &req("terminate", json!({"terminationType": "FORCEFUL"})),
        &other,
        &running(1),
    )
    .unwrap_err();
    assert_eq!(e.kind().status(), 500);
    assert_eq!(
        e.to_string(),
        "inconsistent lifecycle data: instance inst-1 is based on VNFD vnfd-1 but was planned with VNFD vnfd-9"
    );
}

#[test]
fn hostile_values_are_not_echoed_in_full() {
    let long = "f".repeat(10_000);
    let (_, msg) = refuse(instantiate(json!({"flavourId": long})), &fresh());
    assert!(msg.len() < 200, "{msg}");
}
