//! Real request bodies validate; broken ones fail at the exact JSON pointer.

use serde_json::{Value, json};
use vnfm_schemas::{SchemaId, Violation, validate};

fn corpus(rel: &str) -> Value {
    let path = vnfm_test_env::corpus(rel);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn violations(id: SchemaId, v: &Value) -> Vec<Violation> {
    validate(id, v).expect_err("expected the instance to be invalid")
}

fn assert_valid(id: SchemaId, v: &Value, what: &str) {
    if let Err(vs) = validate(id, v) {
        let lines: Vec<String> = vs.iter().map(ToString::to_string).collect();
        panic!("{what} is not a valid {id}:\n{}", lines.join("\n"));
    }
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn tacker_v2_request_samples_validate() {
    let cases = [
        (
            "instantiate-vnf-instance-request.json",
            SchemaId::InstantiateVnfRequest,
        ),
        (
            "terminate-vnf-instance-request.json",
            SchemaId::TerminateVnfRequest,
        ),
        ("heal-vnf-instance-request.json", SchemaId::HealVnfRequest),
        ("scale-vnf-instance-request.json", SchemaId::ScaleVnfRequest),
        (
            "change-ext-conn-request.json",
            SchemaId::ChangeExtVnfConnectivityRequest,
        ),
        (
            "update-vnf-instance-request.json",
            SchemaId::VnfInfoModificationRequest,
        ),
        (
            "change-vnfpkg-request.json",
            SchemaId::ChangeCurrentVnfPkgRequest,
        ),
        (
            "create-subscription-request.json",
            SchemaId::LccnSubscriptionRequest,
        ),
        (
            "create-vnf-instance-request.json",
            SchemaId::CreateVnfRequest,
        ),
    ];
    for (file, id) in cases {
        assert_valid(
            id,
            &corpus(&format!("tacker/api-ref-samples/v2/vnflcm/{file}")),
            file,
        );
    }
    // Every *-request.json of the v2 vnflcm samples is covered above.
    let dir = vnfm_test_env::corpus("tacker/api-ref-samples/v2/vnflcm");
    let requests = std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with("-request.json")
        })
        .count();
    assert_eq!(requests, cases.len());
}

fn etsi(name: &str) -> Value {
    corpus(&format!(
        "etsi/api-tests/SOL003/VNFLifecycleManagement-API/jsons/{name}"
    ))
}

/// ETSI conformance-test request bodies (SOL003 v2.6.1) that are also valid v3.3.1.
const ETSI_VALID_V3: &[(&str, SchemaId)] = &[
    (
        "changeVnfFlavourRequest.json",
        SchemaId::ChangeVnfFlavourRequest,
    ),
    ("createVnfRequest.json", SchemaId::CreateVnfRequest),
    ("healVnfRequest.json", SchemaId::HealVnfRequest),
    (
        "lccnSubscriptionRequest.json",
        SchemaId::LccnSubscriptionRequest,
    ),
    ("operateVnfRequest.json", SchemaId::OperateVnfRequest),
    (
        "patchBodyRequest.json",
        SchemaId::VnfInfoModificationRequest,
    ),
    ("scaleVnfRequest.json", SchemaId::ScaleVnfRequest),
    (
        "scaleVnfToLevelRequest.json",
        SchemaId::ScaleVnfToLevelRequest,
    ),
    ("terminateVnfRequest.json", SchemaId::TerminateVnfRequest),
];

/// Those that are not, why, and one pointer each must be reported at.
const ETSI_NOT_V3: &[(&str, SchemaId, &str, &str)] = &[
    (
        "instantiateVnfRequest.json",
        SchemaId::InstantiateVnfRequest,
        "/vimConnectionInfo",
        "vimConnectionInfo is a v2.6.1 array (v3.3.1: a map), cpConfig is an array (v3.3.1: a map), \
         and extManagedVirtualLinks[0] says virtualLinkDescId instead of vnfVirtualLinkDescId",
    ),
    (
        "changeExtVnfConnectivityRequest.json",
        SchemaId::ChangeExtVnfConnectivityRequest,
        "/extVirtualLinks/0/extCps/0/cpConfig",
        "vimConnectionInfo and cpConfig are v2.6.1 arrays (v3.3.1: maps)",
    ),
];

#[vnfm_test_env::needs(corpus)]
#[test]
fn etsi_request_bodies_valid_in_v3_validate() {
    for (file, id) in ETSI_VALID_V3 {
        assert_valid(*id, &etsi(file), file);
    }
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn etsi_request_bodies_in_v2_6_1_shape_are_rejected_for_the_listed_reason() {
    for (file, id, pointer, reason) in ETSI_NOT_V3 {
        let vs = violations(*id, &etsi(file));
        assert!(
            vs.iter().any(|v| v.pointer == *pointer),
            "{file} ({reason}): no violation at {pointer}; got {vs:#?}"
        );
    }
    // instantiateVnfRequest: all three problems are reported.
    let vs = violations(
        SchemaId::InstantiateVnfRequest,
        &etsi("instantiateVnfRequest.json"),
    );
    let pointers: Vec<&str> = vs.iter().map(|v| v.pointer.as_str()).collect();
    for p in [
        "/vimConnectionInfo",
        "/extVirtualLinks/0/extCps/0/cpConfig",
        "/extManagedVirtualLinks/0/vnfVirtualLinkDescId",
        "/extManagedVirtualLinks/0/virtualLinkDescId",
    ] {
        assert!(pointers.contains(&p), "missing {p} in {pointers:?}");
    }
    // grantRequest.json is a Grant API body (SOL003 clause 9), outside these schemas; the
    // two lists cover every other file of jsons/.
    let dir = vnfm_test_env::corpus("etsi/api-tests/SOL003/VNFLifecycleManagement-API/jsons");
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f != "grantRequest.json")
        .collect();
    files.sort();
    let mut listed: Vec<String> = ETSI_VALID_V3
        .iter()
        .map(|(f, _)| f.to_string())
        .chain(ETSI_NOT_V3.iter().map(|(f, ..)| f.to_string()))
        .collect();
    listed.sort();
    assert_eq!(files, listed);
}

fn instantiate() -> Value {
    corpus("tacker/api-ref-samples/v2/vnflcm/instantiate-vnf-instance-request.json")
}

fn only(vs: &[Violation]) -> &Violation {
    assert_eq!(vs.len(), 1, "expected one violation, got {vs:#?}");
    &vs[0]
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn wrong_enum_value_is_reported_at_the_attribute() {
    let v = only(&violations(
        SchemaId::ScaleVnfRequest,
        &json!({"type": "SCALE_UP", "aspectId": "a"}),
    ))
    .clone();
    assert_eq!(v.pointer, "/type");
    assert_eq!(
        v.message,
        r#""type": "SCALE_UP" is not one of "SCALE_OUT" or "SCALE_IN""#
    );

    let mut req = instantiate();
    req["extVirtualLinks"][0]["extCps"][0]["cpConfig"]["VDU1_CP1_1"]["cpProtocolData"][0]["layerProtocol"] =
        json!("IP_OVER_MPLS");
    let v = only(&violations(SchemaId::InstantiateVnfRequest, &req)).clone();
    assert_eq!(
        v.pointer,
        "/extVirtualLinks/0/extCps/0/cpConfig/VDU1_CP1_1/cpProtocolData/0/layerProtocol"
    );
    assert!(v.message.contains("is not one of"), "{}", v.message);
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn missing_flavour_id_is_reported_where_it_belongs() {
    let mut req = instantiate();
    req.as_object_mut().unwrap().shift_remove("flavourId");
    let v = only(&violations(SchemaId::InstantiateVnfRequest, &req)).clone();
    assert_eq!(v.pointer, "/flavourId");
    assert_eq!(v.message, r#""flavourId" is a required property"#);
    assert!(v.schema_path.ends_with("/required"), "{}", v.schema_path);
}

#[test]
fn zero_steps_is_below_the_minimum() {
    let v = only(&violations(
        SchemaId::ScaleVnfRequest,
        &json!({"type": "SCALE_OUT", "aspectId": "a", "numberOfSteps": 0}),
    ))
    .clone();
    assert_eq!(v.pointer, "/numberOfSteps");
    assert_eq!(
        v.message,
        r#""numberOfSteps": 0 is less than the minimum of 1"#
    );
    assert_eq!(v.schema_path, "/properties/numberOfSteps/minimum");
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn wrong_type_deep_inside_ext_cps_is_reported_at_that_value() {
    let mut req = instantiate();
    req["extVirtualLinks"][0]["extCps"][0]["cpdId"] = json!(42);
    let v = only(&violations(SchemaId::InstantiateVnfRequest, &req)).clone();
    assert_eq!(v.pointer, "/extVirtualLinks/0/extCps/0/cpdId");
    assert_eq!(v.message, r#""cpdId": 42 is not of type "string""#);

    // Inside an optional (nullable) object: the null alternative is not what was meant.
    let mut req = instantiate();
    req["extVirtualLinks"][0]["extCps"][0]["cpConfig"]["VDU1_CP1_1"]["cpProtocolData"][0]["ipOverEthernet"]
        ["ipAddresses"][0]["numDynamicAddresses"] = json!("one");
    let v = only(&violations(SchemaId::InstantiateVnfRequest, &req)).clone();
    assert_eq!(
        v.pointer,
        "/extVirtualLinks/0/extCps/0/cpConfig/VDU1_CP1_1/cpProtocolData/0/ipOverEthernet/ipAddresses/0/numDynamicAddresses"
    );
    assert!(
        v.message
            .starts_with(r#""numDynamicAddresses": "one" is not of type"#),
        "{}",
        v.message
    );

    // An optional object given as a scalar: one message naming the accepted types.
    let mut req = instantiate();
    req["extVirtualLinks"][0]["extCps"][0]["cpConfig"]["VDU1_CP1_1"]["cpProtocolData"][0]["ipOverEthernet"] =
        json!(7);
    let v = only(&violations(SchemaId::InstantiateVnfRequest, &req)).clone();
    assert!(
        v.pointer.ends_with("/cpProtocolData/0/ipOverEthernet"),
        "{}",
        v.pointer
    );
    assert!(
        v.message.contains("object") && v.message.contains("null"),
        "{}",
        v.message
    );
}

#[test]
fn unknown_and_empty_attributes_are_reported() {
    let vs = violations(
        SchemaId::ScaleVnfRequest,
        &json!({"type": "SCALE_OUT", "aspectId": "", "numberOfStep": 2}),
    );
    let mut got: Vec<(String, String)> = vs.into_iter().map(|v| (v.pointer, v.message)).collect();
    got.sort();
    assert_eq!(
        got,
        [
            (
                "/aspectId".to_owned(),
                r#""aspectId": "" is shorter than 1 character"#.to_owned()
            ),
            (
                "/numberOfStep".to_owned(),
                r#""numberOfStep" is not an allowed property here"#.to_owned()
            ),
        ]
    );
}

#[test]
fn scale_to_level_needs_exactly_one_target() {
    assert!(
        validate(
            SchemaId::ScaleVnfToLevelRequest,
            &json!({"instantiationLevelId": "l"})
        )
        .is_ok()
    );
    assert!(
        validate(
            SchemaId::ScaleVnfToLevelRequest,
            &json!({"scaleInfo": [{"aspectId": "a", "scaleLevel": 2}]})
        )
        .is_ok()
    );
    let v = only(&violations(SchemaId::ScaleVnfToLevelRequest, &json!({}))).clone();
    assert_eq!(v.pointer, "");
    assert_eq!(
        v.message,
        r#"{} matches none of the allowed alternatives: "instantiationLevelId" is a required property; or "scaleInfo" is a required property"#
    );
    let v = only(&violations(
        SchemaId::ScaleVnfToLevelRequest,
        &json!({"instantiationLevelId": "l", "scaleInfo": []}),
    ))
    .clone();
    assert!(v.message.contains("more than one"), "{}", v.message);
}

#[test]
fn merge_patch_null_deletes_a_vim_connection() {
    assert!(
        validate(
            SchemaId::VnfInfoModificationRequest,
            &json!({"vimConnectionInfo": {"vim2": null}})
        )
        .is_ok()
    );
    let v = only(&violations(
        SchemaId::VnfInfoModificationRequest,
        &json!({"vimConnectionInfo": {"vim2": {"vimId": "x"}}}),
    ))
    .clone();
    assert_eq!(v.pointer, "/vimConnectionInfo/vim2/vimType");
}

#[test]
fn secret_looking_values_are_not_echoed_at_length() {
    let secret = format!("BEGIN-{}-END", "k".repeat(300));
    let vs = violations(
        SchemaId::CreateVnfRequest,
        &json!({"vnfdId": "d", "vnfInstanceName": {"password": secret}}),
    );
    for v in &vs {
        assert!(!v.message.contains("-END"), "{}", v.message);
        assert!(v.message.chars().count() < 200, "{}", v.message);
    }
    assert_eq!(vs[0].pointer, "/vnfInstanceName");
}

#[test]
fn descriptor_schema_accepts_the_crate_doc_example() {
    let d = json!({"kind":"vnfd","descriptorId":"d1","descriptorVersion":"1.0","provider":"Acme",
        "productName":"Demo","softwareVersion":"1.0","toscaDefinitionsVersion":"tosca_simple_yaml_1_2",
        "vnfNodeType":"acme.VNF","entryDefinitions":"Definitions/top.yaml","flavours":[]});
    assert_valid(SchemaId::Descriptor, &d, "descriptor");
    let mut bad = d;
    bad.as_object_mut().unwrap().shift_remove("descriptorId");
    assert!(
        violations(SchemaId::Descriptor, &bad)
            .iter()
            .any(|v| v.pointer == "/descriptorId"),
    );
}
