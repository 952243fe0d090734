//! Tacker's sample enhanced policy file (`etc/tacker/enhanced_tacker_policy.yaml.sample` of its
//! source distribution) read unchanged and evaluated for the users of Tacker's
//! "Enhanced Tacker Policy Usage Guide".

use serde_json::{Map, Value, json};
use vnfm_policy::{Decision, Policy};

fn sample() -> Policy {
    let path = vnfm_test_env::tacker_source("etc/tacker/enhanced_tacker_policy.yaml.sample");
    Policy::load(&path).expect("Tacker's sample parses")
}

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

/// Credentials as Tacker's context gives them (`is_admin` from `context_is_admin`).
fn creds(roles: &[&str]) -> Map<String, Value> {
    obj(json!({
        "user_id": "u", "project_id": "p1", "roles": roles,
        "is_admin": roles.contains(&"admin"),
    }))
}

/// A target as `context.can` builds it: the caller's project and user, then the resource's.
fn target(resource: Value) -> Map<String, Value> {
    let mut t = obj(json!({"project_id": "p1", "user_id": "u"}));
    t.extend(obj(resource));
    t
}

const SHOW: &str = "os_nfv_orchestration_api_v2:vnf_instances:show";
const PKG_INDEX: &str = "os_nfv_orchestration_api:vnf_packages:index";

#[vnfm_test_env::needs(tacker_source)]
#[test]
fn the_sample_parses_with_every_reference_defined() {
    let p = sample();
    assert_eq!(p.names().count(), 66);
    assert!(
        p.undefined_references().is_empty(),
        "{:?}",
        p.undefined_references()
    );
    assert!(p.rule(SHOW).is_some());
}

#[vnfm_test_env::needs(tacker_source)]
#[test]
fn user_a_reaches_only_its_area_vendor_and_tenant() {
    let p = sample();
    let user_a = creds(&[
        "member",
        "AREA_tokyo@japan",
        "VENDOR_company-a",
        "TENANT_tenant-a",
    ]);
    let inst = |area: &str, vendor: &str, tenant: &str| {
        target(json!({"area": area, "vendor": vendor, "tenant": tenant}))
    };
    assert_eq!(
        p.enhanced(
            SHOW,
            &inst("tokyo@japan", "company-a", "tenant-a"),
            &user_a,
            true
        ),
        Decision::Allowed
    );
    assert_eq!(
        p.enhanced(
            SHOW,
            &inst("osaka@japan", "company-a", "tenant-a"),
            &user_a,
            true
        ),
        Decision::Denied
    );
    assert_eq!(
        p.enhanced(
            SHOW,
            &inst("tokyo@japan", "company-b", "tenant-a"),
            &user_a,
            true
        ),
        Decision::Denied
    );
    assert_eq!(
        p.enhanced(
            SHOW,
            &inst("tokyo@japan", "company-a", "tenant-b"),
            &user_a,
            true
        ),
        Decision::Denied
    );
    // Values are compared without case.
    assert_eq!(
        p.enhanced(
            SHOW,
            &inst("Tokyo@Japan", "Company-A", "Tenant-A"),
            &user_a,
            true
        ),
        Decision::Allowed
    );
    // Not instantiated: area and tenant are `*`, which every caller matches.
    assert_eq!(
        p.enhanced(SHOW, &inst("*", "company-a", "*"), &user_a, true),
        Decision::Allowed
    );
    // An instance whose area is unknown is the admin's only (the substitution fails).
    let no_area = target(json!({"vendor": "company-a", "tenant": "tenant-a"}));
    assert_eq!(p.enhanced(SHOW, &no_area, &user_a, true), Decision::Denied);

    let user_b = creds(&["member"]);
    assert_eq!(
        p.enhanced(
            SHOW,
            &inst("tokyo@japan", "company-a", "tenant-a"),
            &user_b,
            true
        ),
        Decision::Denied
    );
    let admin = creds(&["admin"]);
    assert_eq!(p.enhanced(SHOW, &no_area, &admin, true), Decision::Allowed);
}

#[vnfm_test_env::needs(tacker_source)]
#[test]
fn all_roles_reach_every_value() {
    let p = sample();
    let all = creds(&["member", "AREA_all@all", "VENDOR_all", "TENANT_all"]);
    for (area, vendor, tenant) in [("tokyo@japan", "x", "ns1"), ("paris@france", "y", "ns2")] {
        let t = target(json!({"area": area, "vendor": vendor, "tenant": tenant}));
        assert_eq!(
            p.enhanced(SHOW, &t, &all, true),
            Decision::Allowed,
            "{area}"
        );
    }
    let japan = creds(&["member", "AREA_all@japan", "VENDOR_all", "TENANT_all"]);
    let t = |area: &str| target(json!({"area": area, "vendor": "x", "tenant": "t"}));
    assert_eq!(
        p.enhanced(SHOW, &t("osaka@japan"), &japan, true),
        Decision::Allowed
    );
    assert_eq!(
        p.enhanced(SHOW, &t("paris@france"), &japan, true),
        Decision::Denied
    );
}

#[vnfm_test_env::needs(tacker_source)]
#[test]
fn packages_and_vims() {
    let p = sample();
    let vendor_x = creds(&["member", "VENDOR_x"]);
    assert_eq!(
        p.enhanced(PKG_INDEX, &target(json!({"vendor": "x"})), &vendor_x, true),
        Decision::Allowed
    );
    assert_eq!(
        p.enhanced(PKG_INDEX, &target(json!({"vendor": "y"})), &vendor_x, true),
        Decision::Denied
    );
    // Not onboarded yet: `*`.
    assert_eq!(
        p.enhanced(PKG_INDEX, &target(json!({"vendor": "*"})), &vendor_x, true),
        Decision::Allowed
    );
    let area = creds(&["member", "AREA_a@r"]);
    let vim = |a: &str| obj(json!({"area": a, "project_id": "p9"}));
    assert_eq!(
        p.enhanced("get_vim", &vim("a@r"), &area, false),
        Decision::Allowed
    );
    assert_eq!(
        p.enhanced("get_vim", &vim("b@r"), &area, false),
        Decision::Denied
    );
    // Changing a VIM needs the manager role in the VIM's own project too.
    let manager =
        obj(json!({"roles": ["manager", "AREA_a@r"], "project_id": "p9", "is_admin": false}));
    assert_eq!(
        p.enhanced("update_vim", &vim("a@r"), &manager, false),
        Decision::Allowed
    );
    assert_eq!(
        p.enhanced("update_vim", &vim("a@r"), &area, false),
        Decision::Denied
    );
    // A vendor that is itself a special value is refused to a plain user.
    let special = p.enhanced(
        PKG_INDEX,
        &target(json!({"vendor": "all"})),
        &vendor_x,
        true,
    );
    assert!(matches!(special, Decision::SpecialTarget(_)), "{special:?}");
    assert_eq!(
        p.enhanced("no_such_rule", &Map::new(), &vendor_x, true),
        Decision::NoRule
    );
    assert_eq!(
        p.enhanced(
            "os_nfv_orchestration_api_v2:vnf_instances:api_versions",
            &Map::new(),
            &vendor_x,
            true
        ),
        Decision::Allowed
    );
}
