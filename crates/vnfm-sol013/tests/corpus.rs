//! Real-world inputs from the shared corpus: the query strings of the ETSI SOL003 v2.6.1
//! conformance suites, and Tacker's API sample documents with the filter strings its tests use.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use vnfm_sol013::{Filter, ListParams, Selector, Sol013Error, defaults};

fn corpus() -> PathBuf {
    vnfm_test_env::corpus_dir()
}

fn read_json(rel: &str) -> Value {
    let path = corpus().join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn filter(s: &str) -> Filter {
    Filter::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

/// `${name}    value` lines of the suites' environment files.
fn robot_variables(api_dir: &Path) -> BTreeMap<String, String> {
    let mut vars = BTreeMap::new();
    for entry in std::fs::read_dir(api_dir.join("environment")).expect("environment dir") {
        let text = std::fs::read_to_string(entry.expect("entry").path()).expect("readable");
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("${")
                && let Some((name, value)) = rest.split_once('}')
            {
                let value = value.split("    #").next().unwrap_or("").trim();
                vars.insert(name.to_owned(), value.to_owned());
            }
        }
    }
    vars
}

/// Every `GET ${apiRoot}/${apiName}/${apiVersion}/<resource>?<query>` of the suites, with
/// variables substituted: (resource, query).
fn conformance_queries() -> Vec<(String, String)> {
    let root = corpus().join("etsi/api-tests/SOL003");
    let mut out = Vec::new();
    for api in ["VNFLifecycleManagement-API", "VNFPackageManagement-API"] {
        let dir = root.join(api);
        let vars = robot_variables(&dir);
        for entry in std::fs::read_dir(&dir).expect("suite dir") {
            let path = entry.expect("entry").path();
            if path.extension().is_none_or(|e| e != "robot") {
                continue;
            }
            for line in std::fs::read_to_string(&path).expect("readable").lines() {
                let line = line.trim();
                let Some(rest) = line
                    .strip_prefix("GET")
                    .or_else(|| line.strip_prefix("Get"))
                else {
                    continue;
                };
                let Some(target) = rest
                    .trim()
                    .strip_prefix("${apiRoot}/${apiName}/${apiVersion}/")
                else {
                    continue;
                };
                let Some((resource, query)) = target.split_once('?') else {
                    continue;
                };
                let mut query = query.split_whitespace().next().unwrap_or("").to_owned();
                for (name, value) in &vars {
                    query = query.replace(&format!("${{{name}}}"), value);
                }
                out.push((resource.to_owned(), query));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn conformance_suite_queries_parse_as_the_suite_expects() {
    let queries = conformance_queries();
    // 7 resources x selectors, filters and bad parameters: a broken extraction shows here.
    assert!(
        queries.len() >= 20,
        "only {} queries extracted: {queries:?}",
        queries.len()
    );
    let mut unknown_params = 0;
    for (resource, query) in &queries {
        let p = ListParams::from_query(query).unwrap_or_else(|e| panic!("{resource}?{query}: {e}"));
        match query.as_str() {
            "exclude_default" => assert_eq!(p.selector, Selector::ExcludeDefault),
            "all_fields" => assert_eq!(p.selector, Selector::AllFields),
            // The bare `filter` of test 7.3.1.17.5 (expects 200): no filter.
            "filter" => assert!(p.filter.is_none() && p.other.is_empty()),
            q if q.starts_with("fields=") => assert!(matches!(
                p.selector,
                Selector::Fields {
                    exclude_default: false,
                    ..
                }
            )),
            q if q.starts_with("exclude_fields=") => {
                assert!(matches!(p.selector, Selector::ExcludeFields(_)))
            }
            // Pre-SOL013 `attr=value` filters and deliberately unknown parameters are left to
            // the caller (tests 7.3.1.1.3, 7.3.1.11.3 and 7.3.1.17.6 expect 400 for them).
            _ => {
                assert!(p.selector.is_default() && p.filter.is_none(), "{query}");
                assert_eq!(p.other.len(), 1, "{query}");
                unknown_params += 1;
            }
        }
    }
    assert!(unknown_params >= 5, "{unknown_params}");
    assert!(
        queries
            .iter()
            .any(|(r, q)| r == "vnf_lcm_op_occs" && q == "fields=wrong_field")
    );
    assert!(
        queries
            .iter()
            .any(|(r, q)| r == "vnf_instances" && q == "fields=criteria,objectInstanceIds")
    );
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn conformance_wrong_field_is_refused_with_the_resource_schema() {
    // Test 7.3.1.11.4: GET /vnf_lcm_op_occs?fields=wrong_field answers 400.
    // The suite's own JSON schema of the v2.6.1 resource.
    let schema = read_json(
        "etsi/api-tests/SOL003/VNFLifecycleManagement-API/schemas/VnfLcmOpOcc.schema.json",
    );
    let p = ListParams::from_query("fields=wrong_field").expect("parses");
    match p.check_attributes(&schema) {
        Err(Sol013Error::UnknownAttribute {
            parameter: "fields",
            path,
            ..
        }) => assert_eq!(path, "'wrong_field'"),
        other => panic!("{other:?}"),
    }
    let ok =
        ListParams::from_query("fields=operationParams,error&exclude_default").expect("parses");
    assert_eq!(ok.check_attributes(&schema), Ok(()));
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn tacker_vnf_package_filters_evaluate_on_the_tacker_sample() {
    let list = read_json("tacker/api-ref-samples/v1/vnf_packages/vnf-packages-list-response.json");
    let pkg = &list["vnf_packages"][0];
    // Filter strings from Tacker's vnfpkgm controller tests, with the values of the sample.
    for (expr, expected) in [
        ("(eq,vnfdId,b3ab49d6-389d-46f9-8650-d0bf778b5e92)", true),
        ("(eq,vnfdId,dummy_vnfd_id)", false),
        ("(in,vnfdId,dummy_vnfd_id)", false),
        ("(cont,vnfdId,dummy_vnfd_id)", false),
        ("(neq,vnfdId,dummy_vnfd_id)", true),
        ("(nin,vnfdId,dummy_vnfd_id)", true),
        ("(ncont,vnfdId,dummy_vnfd_id)", true),
        ("(cont,vnfdId,389d)", true),
        ("(eq,vnfdId,dummy_vnfd_id);(eq,id,dummy_id)", false),
        ("(eq,onboardingState,ONBOARDED)", true),
        ("(eq,operationalState,ENABLED)", false),
        ("(eq,usageState,NOT_IN_USE)", true),
        ("(eq,userDefinedData/abc,xyz)", true),
        ("(eq,userDefinedData/key1,dummy_value)", false),
        ("(eq,softwareImages/size,2)", true),
        ("(eq,softwareImages/size,0)", false),
        ("(eq,softwareImages/minDisk,1)", true),
        ("(gt,softwareImages/minRam,4096)", true),
        ("(lt,softwareImages/minRam,0)", false),
        ("(eq,softwareImages/checksum/algorithm,sha-256)", true),
        ("(eq,softwareImages/name,dummy_value)", false),
        ("(eq,additionalArtifacts/checksum/algorithm,SHA-256)", false),
        (
            "(gt,softwareImages/createdAt,2020-03-11 04:10:15+00:00)",
            false,
        ),
        ("(eq,vnfProductName,Sample VNF)", true),
        ("(eq,vnfProductName,'Sample VNF')", true),
        ("(eq,vnfProductName,'dummy (hi) value')", false),
        ("(eq,vnfProductName,'dummy ''hi'' value')", false),
        ("(eq,vnfProductName,'''dummy ''hi'' value''')", false),
    ] {
        assert_eq!(filter(expr).matches(pkg), expected, "{expr}");
    }
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn v2_vnf_instance_sample_filters_and_selectors() {
    let inst = read_json("tacker/api-ref-samples/v2/vnflcm/show-vnf-instance-response.json");
    for (expr, expected) in [
        ("(eq,instantiationState,INSTANTIATED)", true),
        ("(neq,instantiationState,INSTANTIATED)", false),
        ("(eq,vimConnectionInfo/@key,vim1)", true),
        ("(eq,vimConnectionInfo/@key,vim2)", false),
        ("(cont,vimConnectionInfo/vim1/vimType,OPENSTACK)", true),
        (
            "(eq,instantiatedVnfInfo/vnfcResourceInfo/computeResource/vimLevelResourceType,OS::Nova::Server)",
            true,
        ),
        (
            "(eq,instantiatedVnfInfo/scaleStatus/aspectId,VDU1_scale);(gt,instantiatedVnfInfo/maxScaleLevels/scaleLevel,1)",
            true,
        ),
        ("(gt,instantiatedVnfInfo/scaleStatus/scaleLevel,0)", false),
        (
            "(eq,instantiatedVnfInfo/extCpInfo/cpProtocolInfo/ipOverEthernet/ipAddresses/addresses,10.10.1.101)",
            true,
        ),
        (
            "(neq,instantiatedVnfInfo/vnfcInfo/vnfcState,STARTED)",
            false,
        ),
        ("(eq,vnfInstanceName,sample1)", true),
        ("(neq,vnfInstanceName,anything)", true),
        // Absent attribute: neither eq nor neq holds.
        ("(eq,instantiatedVnfInfo/localizationLanguage,en)", false),
        ("(neq,instantiatedVnfInfo/localizationLanguage,en)", false),
    ] {
        assert_eq!(filter(expr).matches(&inst), expected, "{expr}");
    }
    let schema =
        serde_json::to_value(schemars::schema_for!(vnfm_types::VnfInstance)).expect("schema");
    for (expr, _) in [
        ("(eq,vimConnectionInfo/@key,vim1)", ()),
        ("(cont,vimConnectionInfo/vim1/vimType,OPENSTACK)", ()),
    ] {
        assert_eq!(filter(expr).check_attributes(&schema), Ok(()), "{expr}");
    }

    // The default selector of a list response.
    let mut d = inst.clone();
    Selector::Default.apply_with(
        &mut d,
        defaults::v2::VNF_INSTANCE_EXCLUDED,
        defaults::v2::VNF_INSTANCE_MANDATORY,
    );
    let keys: Vec<&str> = d
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    assert!(
        !keys
            .iter()
            .any(|k| defaults::v2::VNF_INSTANCE_EXCLUDED.contains(k)),
        "{keys:?}"
    );
    assert!(
        keys.contains(&"_links") && keys.contains(&"id") && keys.contains(&"instantiationState")
    );

    // fields=instantiatedVnfInfo/vnfcResourceInfo: the rest of instantiatedVnfInfo goes,
    // except its simple attributes and extCpInfo (lower cardinality 1).
    let mut d = inst.clone();
    let sel = Selector::from_params(
        false,
        Some("instantiatedVnfInfo/vnfcResourceInfo"),
        None,
        false,
    )
    .expect("valid");
    sel.apply_with(
        &mut d,
        defaults::v2::VNF_INSTANCE_EXCLUDED,
        defaults::v2::VNF_INSTANCE_MANDATORY,
    );
    let info = d["instantiatedVnfInfo"].as_object().expect("kept");
    let mut info_keys: Vec<&str> = info.keys().map(String::as_str).collect();
    info_keys.sort_unstable();
    assert_eq!(
        info_keys,
        ["extCpInfo", "flavourId", "vnfState", "vnfcResourceInfo"]
    );
    assert_eq!(
        d["instantiatedVnfInfo"]["vnfcResourceInfo"],
        inst["instantiatedVnfInfo"]["vnfcResourceInfo"]
    );
    assert!(d.get("vimConnectionInfo").is_none() && d.get("_links").is_some());
    assert_eq!(d["vnfInstanceDescription"], inst["vnfInstanceDescription"]);
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn v2_lcm_op_occ_sample_filters() {
    let occs = read_json(
        "tacker/api-ref-samples/v2/vnflcm/list-vnflcm-operation-occurrence-response.json",
    );
    let occs = occs.as_array().expect("a list");
    let count = |expr: &str| occs.iter().filter(|o| filter(expr).matches(o)).count();
    assert_eq!(occs.len(), 2);
    assert_eq!(count("(eq,operationState,COMPLETED)"), 1);
    assert_eq!(count("(in,operationState,PROCESSING,COMPLETED)"), 2);
    assert_eq!(count("(nin,operationState,PROCESSING,COMPLETED)"), 0);
    assert_eq!(count("(gt,startTime,2021-10-01T00:00:00Z)"), 1);
    assert_eq!(count("(gte,startTime,2021-09-06T09:07:15+02:00)"), 2);
    assert_eq!(
        count("(eq,operation,INSTANTIATE);(eq,isAutomaticInvocation,false)"),
        2
    );
    let schema =
        serde_json::to_value(schemars::schema_for!(vnfm_types::VnfLcmOpOcc)).expect("schema");
    assert!(matches!(
        filter("(eq,operationState,completed)").check_attributes(&schema),
        Err(Sol013Error::InvalidValue { .. })
    ));
    assert_eq!(
        filter("(in,operationState,PROCESSING,COMPLETED)").check_attributes(&schema),
        Ok(())
    );
}
