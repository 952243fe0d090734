//! `check_attributes` against the schemars schemas of the workspace's resource model, and the
//! `defaults` sets checked against the same model's cardinalities.

use serde_json::Value;
use vnfm_sol013::{Filter, Selector, Sol013Error, defaults};

fn schema_of<T: schemars::JsonSchema>() -> Value {
    serde_json::to_value(schemars::schema_for!(T)).expect("schema serializes")
}

fn check(schema: &Value, expr: &str) -> Result<(), Sol013Error> {
    Filter::parse(expr)
        .unwrap_or_else(|e| panic!("{expr}: {e}"))
        .check_attributes(schema)
}

#[test]
fn vnf_instance_filters_are_checked_against_the_model() {
    let s = schema_of::<vnfm_types::VnfInstance>();
    for ok in [
        "(eq,id,x)",
        "(eq,instantiationState,INSTANTIATED)",
        "(in,instantiationState,INSTANTIATED,NOT_INSTANTIATED)",
        "(cont,instantiationState,INST)",
        "(neq,vnfInstanceName,x);(cont,vnfInstanceDescription,y)",
        "(eq,vnfConfigurableProperties/any/depth,1)",
        "(eq,metadata/k,v)",
        "(eq,vimConnectionInfo/@key,vim1)",
        "(eq,vimConnectionInfo/vim1/vimType,ETSINFV.OPENSTACK_KEYSTONE.V_3)",
        "(gt,instantiatedVnfInfo/scaleStatus/scaleLevel,1)",
        "(eq,instantiatedVnfInfo/scaleStatus/aspectId,a)",
        "(eq,instantiatedVnfInfo/vnfcResourceInfo/computeResource/resourceId,r)",
        "(eq,instantiatedVnfInfo/vnfcResourceInfo/storageResourceIds,s1)",
        "(eq,_links/self/href,/x)",
    ] {
        assert_eq!(check(&s, ok), Ok(()), "{ok}");
    }
    let unknown = check(&s, "(eq,instantiatedVnfInfo/scaleStatus/nope,1)").unwrap_err();
    assert!(
        matches!(&unknown, Sol013Error::UnknownAttribute { parameter: "filter", path, reason }
            if path == "'instantiatedVnfInfo/scaleStatus/nope'" && reason.contains("'nope'")),
        "{unknown}"
    );
    assert!(
        unknown
            .to_string()
            .contains("filter: attribute 'instantiatedVnfInfo/scaleStatus/nope'"),
        "{unknown}"
    );
    for (bad, what) in [
        ("(eq,nope,1)", "unknown"),
        ("(eq,id/deeper,1)", "unknown"),
        ("(eq,instantiatedVnfInfo/@key,a)", "unknown"),
        ("(eq,instantiationState,instantiated)", "value"),
        (
            "(eq,instantiatedVnfInfo/scaleStatus/scaleLevel,one)",
            "value",
        ),
        ("(cont,instantiatedVnfInfo/scaleStatus/scaleLevel,1)", "op"),
        ("(eq,instantiatedVnfInfo,x)", "op"),
        ("(eq,instantiatedVnfInfo/scaleStatus,x)", "op"),
    ] {
        let r = check(&s, bad);
        let ok = match what {
            "unknown" => matches!(r, Err(Sol013Error::UnknownAttribute { .. })),
            "value" => matches!(r, Err(Sol013Error::InvalidValue { .. })),
            _ => matches!(r, Err(Sol013Error::OperatorNotApplicable { .. })),
        };
        assert!(ok, "{bad}: {r:?}");
    }
    let msg = check(&s, "(eq,instantiationState,instantiated)")
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("NOT_INSTANTIATED") && msg.contains("INSTANTIATED"),
        "{msg}"
    );
}

#[test]
fn selector_paths_are_checked_against_the_model() {
    let s = schema_of::<vnfm_types::VnfInstance>();
    let sel = Selector::from_params(
        false,
        Some("instantiatedVnfInfo/vnfcResourceInfo,metadata"),
        None,
        true,
    )
    .expect("valid");
    assert_eq!(sel.check_attributes(&s), Ok(()));
    let sel = Selector::from_params(
        false,
        None,
        Some("vimConnectionInfo,instantiatedVnfInfo/nope"),
        false,
    )
    .expect("valid");
    assert!(matches!(
        sel.check_attributes(&s),
        Err(Sol013Error::UnknownAttribute {
            parameter: "exclude_fields",
            ..
        })
    ));
}

/// Whether the attribute at `path` may be absent in the model (`Option`: the schema allows
/// null, or the attribute is not required) — the model's encoding of lower cardinality 0.
fn optional_in(schema: &Value, path: &str) -> bool {
    let root = schema;
    let resolve = |v: &Value| -> Value {
        let mut v = v.clone();
        for _ in 0..8 {
            let next = match v.get("$ref").and_then(Value::as_str) {
                Some(r) => root
                    .pointer(r.trim_start_matches('#'))
                    .cloned()
                    .expect("ref resolves"),
                None => match v.get("anyOf").and_then(Value::as_array) {
                    Some(branches) => branches
                        .iter()
                        .find(|b| b.get("type") != Some(&Value::from("null")))
                        .cloned()
                        .expect("branch"),
                    None => return v,
                },
            };
            v = next;
        }
        v
    };
    let mut node = resolve(schema);
    let segs: Vec<&str> = path.split('/').collect();
    for (i, seg) in segs.iter().enumerate() {
        if let Some(items) = node.get("items") {
            node = resolve(items);
        }
        let prop = node["properties"]
            .get(*seg)
            .unwrap_or_else(|| panic!("{path}: no {seg}"))
            .clone();
        if i + 1 == segs.len() {
            let required = node["required"]
                .as_array()
                .is_some_and(|r| r.iter().any(|x| x == *seg));
            let nullable = prop.get("anyOf").is_some()
                || prop["type"]
                    .as_array()
                    .is_some_and(|t| t.iter().any(|x| x == "null"));
            return !required && nullable;
        }
        node = resolve(&prop);
    }
    unreachable!()
}

#[test]
fn default_sets_match_the_model_cardinalities() {
    let cases: [(Value, &[&str], &[&str]); 2] = [
        (
            schema_of::<vnfm_types::VnfInstance>(),
            defaults::v2::VNF_INSTANCE_EXCLUDED,
            defaults::v2::VNF_INSTANCE_MANDATORY,
        ),
        (
            schema_of::<vnfm_types::VnfLcmOpOcc>(),
            defaults::v2::VNF_LCM_OP_OCC_EXCLUDED,
            defaults::v2::VNF_LCM_OP_OCC_MANDATORY,
        ),
    ];
    for (schema, excluded, mandatory) in &cases {
        for p in *excluded {
            assert!(
                optional_in(schema, p),
                "{p} is excluded by default but mandatory in the model"
            );
        }
        for p in *mandatory {
            assert!(
                !optional_in(schema, p),
                "{p} is listed as mandatory but optional in the model"
            );
        }
        let sel =
            Selector::from_params(false, Some(&excluded.join(",")), None, false).expect("valid");
        assert_eq!(sel.check_attributes(schema), Ok(()));
    }
}

fn suite_schema(name: &str) -> Value {
    let path = vnfm_test_env::corpus(format!(
        "etsi/api-tests/SOL003/VNFLifecycleManagement-API/schemas/{name}"
    ));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("JSON")
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn v1_default_sets_against_the_conformance_schemas() {
    let inst = suite_schema("vnfInstance.schema.json");
    let required = |s: &Value, a: &str| {
        s["required"]
            .as_array()
            .is_some_and(|r| r.iter().any(|x| x == a))
    };
    for a in defaults::v1::VNF_INSTANCE_EXCLUDED {
        assert!(
            inst["properties"].get(*a).is_some() && !required(&inst, a),
            "{a}"
        );
    }
    let occ = suite_schema("VnfLcmOpOcc.schema.json");
    for a in defaults::v1::VNF_LCM_OP_OCC_EXCLUDED {
        assert!(occ["properties"].get(*a).is_some(), "{a}");
    }
    // The suite's schema requires operationParams although SOL003 v2.6.1 lists it in the
    // default exclude set; the specification is followed (see defaults::v1).
    assert!(required(&occ, "operationParams"));
    let all = Selector::from_params(
        false,
        Some(&defaults::v1::VNF_INSTANCE_EXCLUDED.join(",")),
        None,
        false,
    )
    .expect("valid");
    assert_eq!(all.check_attributes(&inst), Ok(()));
}
