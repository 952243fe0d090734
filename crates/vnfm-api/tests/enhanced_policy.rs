//! Issue 67, Tacker's enhanced policy through the router, with Tacker's sample policy file
//! (`etc/tacker/enhanced_tacker_policy.yaml.sample` of its source distribution) and Keystone callers of one
//! project (a scripted Keystone on loopback) whose `AREA_`/`VENDOR_`/`TENANT_` roles differ.
//!
//! A creator (`member`, `manager` and the `all` roles) onboards two packages (providers Acme
//! and Other), creates and instantiates two instances (areas `a@r` and `b@r`, tenants `ns1`
//! and `ns2`, the tenant recorded as the Kubernetes driver records a CNF's namespace) and
//! registers two VIMs (areas `a@r` and `b@r`). Then, policy on: `TENANT_ns1` lists and reads
//! only the `ns1` instance, `VENDOR_acme` only Acme's package, `AREA_a@r` only the `a@r` VIM;
//! the `all` roles see everything. Policy off (the default): every caller sees everything.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use axum::Json;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::IntoResponse;
use serde_json::{Value, json};
use sha2::Digest;
use vnfm_keystone::testing::TestKeystone;
use vnfm_keystone::{KeystoneConfig, KeystoneValidator};
use vnfm_types::VnfInstanceId;

use crate::support::keystone::{as_user, as_user_raw, scripted_keystone};
use crate::support::{HELLO, HELLO_VNFD, Harness, zip_dir};

/// Tacker's sample enhanced policy file, as its source distribution ships it.
fn sample() -> std::path::PathBuf {
    vnfm_test_env::tacker_source("etc/tacker/enhanced_tacker_policy.yaml.sample")
}
const OTHER_VNFD: &str = "6f0b7e1c-2d55-4c5e-9b3a-4e110a0000ff";
const ALL: [&str; 3] = ["AREA_all@all", "VENDOR_all", "TENANT_all"];

/// The roles of each scripted token (every user is in project `demo`).
fn roles_of(token: &str) -> Option<Vec<&'static str>> {
    let mut roles = vec!["member", "reader"];
    match token {
        "creator" => roles.extend(["manager"].iter().chain(ALL.iter())),
        "all" => roles.extend(ALL),
        "ns1" => roles.extend(["AREA_all@all", "VENDOR_all", "TENANT_ns1"]),
        "acme" => roles.push("VENDOR_acme"),
        "area" => roles.push("AREA_a@r"),
        _ => return None,
    }
    Some(roles)
}

fn token_document(user: &str, roles: &[&str]) -> Value {
    let domain = json!({"id": "default", "name": "Default"});
    json!({"token": {
        "expires_at": "2099-01-01T00:00:00.000000Z",
        "user": {"id": user, "name": user, "domain": domain},
        "project": {"id": "demo", "name": "demo", "domain": domain},
        "roles": roles.iter().map(|r| json!({"id": r, "name": r})).collect::<Vec<_>>(),
        "is_admin_project": false,
    }})
}

async fn validate(headers: HeaderMap) -> axum::response::Response {
    let subject = headers
        .get("x-subject-token")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    match roles_of(subject) {
        Some(roles) => Json(token_document(subject, &roles)).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// A harness validating the scripted tokens, with Tacker's sample policy when `enhanced`.
async fn harness(enhanced: bool) -> Harness {
    let policy = enhanced.then(|| Arc::new(vnfm_policy::PolicyFile::open(&sample()).unwrap()));
    harness_with(policy).await
}

/// The router with the scripted Keystone and the enhanced policy `policy` (off when `None`).
async fn harness_with(policy: Option<Arc<vnfm_policy::PolicyFile>>) -> Harness {
    let validator = scripted_keystone(axum::routing::get(validate)).await;
    Harness::with_services(
        |b| b,
        |o| {
            o.keystone = Some(validator);
            o.enhanced_policy = policy;
        },
    )
    .await
}

/// The hello package with provider `Other` and another vnfdId (its manifest's digests
/// recomputed).
fn other_package() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("other");
    std::fs::create_dir_all(root.join("Definitions")).unwrap();
    std::fs::create_dir_all(root.join("TOSCA-Metadata")).unwrap();
    let mut digests = Vec::new();
    for file in walk(Path::new(HELLO)) {
        let rel = file.strip_prefix(HELLO).unwrap().to_owned();
        let text = std::fs::read_to_string(&file).unwrap();
        let changed = text
            .replace(HELLO_VNFD, OTHER_VNFD)
            .replace("Acme", "Other");
        digests.push((
            hex::encode(sha2::Sha256::digest(text.as_bytes())),
            hex::encode(sha2::Sha256::digest(changed.as_bytes())),
        ));
        std::fs::write(root.join(&rel), changed).unwrap();
    }
    for entry in std::fs::read_dir(&root).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "mf") {
            let mut text = std::fs::read_to_string(&path).unwrap();
            for (old, new) in &digests {
                text = text.replace(old, new);
            }
            std::fs::write(&path, text).unwrap();
        }
    }
    zip_dir(&root)
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

fn ok(r: &crate::support::Reply, status: u16) -> Value {
    assert_eq!(
        r.status.as_u16(),
        status,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    if r.body.is_empty() {
        Value::Null
    } else {
        r.json()
    }
}

async fn onboard(h: &Harness, creator: &str, zip: Vec<u8>) -> String {
    let r = as_user(
        h,
        creator,
        Method::POST,
        "/vnfpkgm/v2/vnf_packages",
        Some(json!({})),
    )
    .await;
    let id = ok(&r, 201)["id"].as_str().unwrap().to_owned();
    let uri = format!("/vnfpkgm/v2/vnf_packages/{id}");
    let content = format!("{uri}/package_content");
    let r = as_user_raw(
        h,
        creator,
        Method::PUT,
        &content,
        Some(("application/zip", zip)),
    )
    .await;
    ok(&r, 202);
    for _ in 0..300 {
        let info = ok(&as_user(h, creator, Method::GET, &uri, None).await, 200);
        if info["onboardingState"] == "ONBOARDED" {
            return id;
        }
        assert_ne!(info["onboardingState"], "ERROR", "{info}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("{id} was not onboarded");
}

/// An instance instantiated on the test VIM in `area`, recorded with `tenant` as the
/// Kubernetes driver records a CNF's namespace.
async fn instance(h: &Harness, creator: &str, area: &str, tenant: &str) -> String {
    let body = json!({"vnfdId": HELLO_VNFD});
    let r = as_user(
        h,
        creator,
        Method::POST,
        "/vnflcm/v2/vnf_instances",
        Some(body),
    )
    .await;
    let id = ok(&r, 201)["id"].as_str().unwrap().to_owned();
    let vim = json!({"vim1": {"vimType": "TEST.NOOP.V_1", "extra": {"area": area}}});
    let body = json!({"flavourId": "simple", "vimConnectionInfo": vim});
    let uri = format!("/vnflcm/v2/vnf_instances/{id}/instantiate");
    let r = as_user(h, creator, Method::POST, &uri, Some(body)).await;
    ok(&r, 202);
    let location = r.header("location").unwrap().to_owned();
    let occ = h.wait_op(&location).await;
    assert_eq!(occ["operationState"], "COMPLETED", "{occ}");
    let store = &h.store;
    let (inst, version) = store
        .get_instance(&VnfInstanceId::new(&id))
        .await
        .unwrap()
        .unwrap();
    let mut doc = serde_json::to_value(&inst).unwrap();
    doc["instantiatedVnfInfo"]["metadata"] = json!({"namespace": tenant, "tenant": tenant});
    let inst = serde_json::from_value(doc).unwrap();
    store.update_instance(&inst, version).await.unwrap();
    id
}

async fn vim(h: &Harness, creator: &str, area: &str) -> String {
    let body = json!({
        "name": format!("vim-{area}"), "vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3",
        "interfaceInfo": {"endpoint": "https://keystone.example:5000/v3"},
        "accessInfo": {"username": "u", "password": "Pa55-word", "project": "p",
                       "userDomain": "Default", "projectDomain": "Default"},
        "extra": {"area": area},
    });
    let r = as_user(h, creator, Method::POST, "/vnfm/v1/vims", Some(body)).await;
    ok(&r, 201)["id"].as_str().unwrap().to_owned()
}

/// The ids `token` lists at `uri` (an array, or Tacker's `{"vims": [...]}`).
async fn listed(h: &Harness, token: &str, uri: &str) -> Vec<String> {
    let v = ok(&as_user(h, token, Method::GET, uri, None).await, 200);
    let items = v.get("vims").cloned().unwrap_or(v);
    let mut ids: Vec<String> = items
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    ids
}

fn sorted(ids: &[&String]) -> Vec<String> {
    let mut v: Vec<String> = ids.iter().map(|s| (*s).clone()).collect();
    v.sort();
    v
}

struct World {
    h: Harness,
    /// The token of each caller, by name (`creator`, `all`, `ns1`, `acme`, `area`).
    tokens: HashMap<&'static str, String>,
    acme: String,
    other: String,
    ns1: String,
    ns2: String,
    vim_a: String,
    vim_b: String,
}

impl World {
    fn t(&self, name: &str) -> &str {
        &self.tokens[name]
    }
}

/// The resources, created by `tokens["creator"]` on `h`.
async fn world(h: Harness, tokens: HashMap<&'static str, String>) -> World {
    let creator = tokens["creator"].clone();
    let acme = onboard(&h, &creator, zip_dir(HELLO.as_ref())).await;
    let other = onboard(&h, &creator, other_package()).await;
    let ns1 = instance(&h, &creator, "a@r", "ns1").await;
    let ns2 = instance(&h, &creator, "b@r", "ns2").await;
    let vim_a = vim(&h, &creator, "a@r").await;
    let vim_b = vim(&h, &creator, "b@r").await;
    World {
        h,
        tokens,
        acme,
        other,
        ns1,
        ns2,
        vim_a,
        vim_b,
    }
}

/// The scripted callers: each token is the caller's name.
fn scripted_tokens() -> HashMap<&'static str, String> {
    NAMES.iter().map(|n| (*n, (*n).to_owned())).collect()
}

const NAMES: [&str; 5] = ["creator", "all", "ns1", "acme", "area"];

#[tokio::test]
async fn off_by_default_every_caller_sees_everything() {
    let w = world(harness(false).await, scripted_tokens()).await;
    for name in ["ns1", "acme", "area", "all"] {
        let token = w.t(name);
        let both = sorted(&[&w.ns1, &w.ns2]);
        assert_eq!(
            listed(&w.h, token, "/vnflcm/v2/vnf_instances").await,
            both,
            "{token}"
        );
        assert_eq!(
            listed(&w.h, token, "/vnflcm/v1/vnf_instances").await,
            both,
            "{token}"
        );
        let pkgs = sorted(&[&w.acme, &w.other]);
        assert_eq!(
            listed(&w.h, token, "/vnfpkgm/v2/vnf_packages").await,
            pkgs,
            "{token}"
        );
        let vims = sorted(&[&w.vim_a, &w.vim_b]);
        assert_eq!(listed(&w.h, token, "/vnfm/v1/vims").await, vims, "{token}");
        let r = as_user(
            &w.h,
            token,
            Method::GET,
            &format!("/vnflcm/v2/vnf_instances/{}", w.ns2),
            None,
        )
        .await;
        ok(&r, 200);
    }
}

#[vnfm_test_env::needs(tacker_source)]
#[tokio::test]
async fn on_each_caller_sees_what_its_attributes_allow() {
    enforced(&world(harness(true).await, scripted_tokens()).await).await;
}

/// An operator edits the policy file of a running server: once the file is read again, the
/// new rule decides; an edit that does not parse is refused and the rules in force stay.
#[vnfm_test_env::needs(tacker_source)]
#[tokio::test]
async fn an_edited_policy_file_decides_once_reloaded_and_a_broken_edit_changes_nothing() {
    const SHOW: &str = "\"os_nfv_orchestration_api_v2:vnf_instances:show\":";
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.yaml");
    let sample_text = std::fs::read_to_string(sample()).unwrap();
    std::fs::write(&path, &sample_text).unwrap();
    let file = Arc::new(vnfm_policy::PolicyFile::open(&path).unwrap());
    let w = world(harness_with(Some(file.clone())).await, scripted_tokens()).await;
    let show = format!("/vnflcm/v2/vnf_instances/{}", w.ns2);
    ok(
        &as_user(&w.h, w.t("ns1"), Method::GET, &show, None).await,
        403,
    );

    // The show rule widened to anyone: one line of the sample replaced.
    let mut replaced = 0;
    let widened: String = sample_text
        .lines()
        .map(|l| {
            if l.trim_start().starts_with(SHOW) {
                replaced += 1;
                format!("{SHOW} \"@\"\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    assert_eq!(replaced, 1, "the sample states the show rule on one line");
    std::fs::write(&path, &widened).unwrap();
    ok(
        &as_user(&w.h, w.t("ns1"), Method::GET, &show, None).await,
        403,
    );
    assert!(matches!(
        file.reload_if_changed(),
        vnfm_policy::Reload::Reloaded
    ));
    ok(
        &as_user(&w.h, w.t("ns1"), Method::GET, &show, None).await,
        200,
    );

    std::fs::write(&path, format!("{widened}\"broken\": \"role:x or\"\n")).unwrap();
    assert!(matches!(
        file.reload_if_changed(),
        vnfm_policy::Reload::Refused(_)
    ));
    ok(
        &as_user(&w.h, w.t("ns1"), Method::GET, &show, None).await,
        200,
    );
}

/// The same callers in a project of the real test Keystone, with real roles named as
/// Tacker's guide names them.
#[vnfm_test_env::needs(keystone, tacker_source)]
#[tokio::test]
async fn on_with_real_keystone_roles() {
    let ks = TestKeystone::from_env().await;
    let project = ks.project("enhanced").await;
    let mut tokens = HashMap::new();
    for name in NAMES {
        let roles = roles_of(name).unwrap();
        let user = ks.user(&format!("ep-{name}"), &project, &roles).await;
        tokens.insert(name, ks.token(&user).await);
    }
    let (_service, credentials) = ks.service_user().await;
    let validator =
        Arc::new(KeystoneValidator::new(KeystoneConfig::new(ks.url.clone(), credentials)).unwrap());
    let policy = Arc::new(vnfm_policy::PolicyFile::open(&sample()).unwrap());
    let h = Harness::with_services(
        |b| b,
        |o| {
            o.keystone = Some(validator);
            o.enhanced_policy = Some(policy);
        },
    )
    .await;
    enforced(&world(h, tokens).await).await;
}

/// Policy on: each caller lists and reaches what its attributes allow.
async fn enforced(w: &World) {
    let h = &w.h;
    // Tenant: the instance of namespace ns1 only, through v1 and v2; the other is refused.
    assert_eq!(
        listed(h, w.t("ns1"), "/vnflcm/v2/vnf_instances").await,
        vec![w.ns1.clone()]
    );
    assert_eq!(
        listed(h, w.t("ns1"), "/vnflcm/v1/vnf_instances").await,
        vec![w.ns1.clone()]
    );
    let show = |id: &str, v: &str| format!("/vnflcm/{v}/vnf_instances/{id}");
    ok(
        &as_user(h, w.t("ns1"), Method::GET, &show(&w.ns1, "v2"), None).await,
        200,
    );
    let refused = ok(
        &as_user(h, w.t("ns1"), Method::GET, &show(&w.ns2, "v2"), None).await,
        403,
    );
    assert!(
        refused["detail"]
            .as_str()
            .unwrap()
            .contains("os_nfv_orchestration_api_v2:vnf_instances:show"),
        "{refused}"
    );
    ok(
        &as_user(h, w.t("ns1"), Method::GET, &show(&w.ns2, "v1"), None).await,
        403,
    );
    // A change is refused before anything is done (the sample wants `manager` as well).
    let terminate = format!("/vnflcm/v2/vnf_instances/{}/terminate", w.ns1);
    let body = Some(json!({"terminationType": "FORCEFUL"}));
    ok(
        &as_user(h, w.t("ns1"), Method::POST, &terminate, body).await,
        403,
    );

    // Vendor: Acme's package only (vendor values compare without case).
    assert_eq!(
        listed(h, w.t("acme"), "/vnfpkgm/v2/vnf_packages").await,
        vec![w.acme.clone()]
    );
    assert_eq!(
        listed(h, w.t("acme"), "/vnfpkgm/v1/vnf_packages").await,
        vec![w.acme.clone()]
    );
    let pkg = |id: &str| format!("/vnfpkgm/v1/vnf_packages/{id}");
    ok(
        &as_user(h, w.t("acme"), Method::GET, &pkg(&w.acme), None).await,
        200,
    );
    ok(
        &as_user(h, w.t("acme"), Method::GET, &pkg(&w.other), None).await,
        403,
    );
    ok(
        &as_user(
            h,
            w.t("acme"),
            Method::GET,
            &format!("{}/vnfd", pkg(&w.other)),
            None,
        )
        .await,
        403,
    );
    // Its instances have no tenant the caller has: none listed.
    assert!(
        listed(h, w.t("acme"), "/vnflcm/v2/vnf_instances")
            .await
            .is_empty()
    );

    // Area: the a@r VIM only, through both VIM APIs; the other answers 404, as in Tacker.
    assert_eq!(
        listed(h, w.t("area"), "/vnfm/v1/vims").await,
        vec![w.vim_a.clone()]
    );
    assert_eq!(
        listed(h, w.t("area"), "/v1.0/vims").await,
        vec![w.vim_a.clone()]
    );
    ok(
        &as_user(
            h,
            w.t("area"),
            Method::GET,
            &format!("/v1.0/vims/{}", w.vim_a),
            None,
        )
        .await,
        200,
    );
    ok(
        &as_user(
            h,
            w.t("area"),
            Method::GET,
            &format!("/v1.0/vims/{}", w.vim_b),
            None,
        )
        .await,
        404,
    );

    // Registering a VIM needs the sample's `manager` role (the creator has it).
    let body = json!({
        "name": "refused", "vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3",
        "interfaceInfo": {"endpoint": "https://keystone.example:5000/v3"},
        "accessInfo": {"username": "u", "password": "Pa55-word", "project": "p",
                       "userDomain": "Default", "projectDomain": "Default"},
        "extra": {"area": "a@r"},
    });
    let r = as_user(h, w.t("area"), Method::POST, "/vnfm/v1/vims", Some(body)).await;
    ok(&r, 403);

    // The `all` roles see everything.
    assert_eq!(
        listed(h, w.t("all"), "/vnflcm/v2/vnf_instances").await,
        sorted(&[&w.ns1, &w.ns2])
    );
    assert_eq!(
        listed(h, w.t("all"), "/vnfpkgm/v2/vnf_packages").await,
        sorted(&[&w.acme, &w.other])
    );
    assert_eq!(
        listed(h, w.t("all"), "/vnfm/v1/vims").await,
        sorted(&[&w.vim_a, &w.vim_b])
    );
    ok(
        &as_user(h, w.t("all"), Method::GET, &show(&w.ns2, "v2"), None).await,
        200,
    );
    // Tacker v1 takes the tenant from the instance's own `metadata` too, v2 does not.
    let v1_only = instance(h, w.t("creator"), "a@r", "ns2").await;
    let store = &h.store;
    let id = VnfInstanceId::new(&v1_only);
    let (inst, version) = store.get_instance(&id).await.unwrap().unwrap();
    let mut doc = serde_json::to_value(&inst).unwrap();
    doc["instantiatedVnfInfo"]["metadata"] = json!({});
    doc["metadata"] = json!({"tenant": "ns1"});
    let inst = serde_json::from_value(doc).unwrap();
    store.update_instance(&inst, version).await.unwrap();
    let shown = |v: &'static str| show(&v1_only, v);
    ok(
        &as_user(h, w.t("ns1"), Method::GET, &shown("v1"), None).await,
        200,
    );
    ok(
        &as_user(h, w.t("ns1"), Method::GET, &shown("v2"), None).await,
        403,
    );
    // The OAuth 2.0 client is an admin.
    let r =
        w.h.call(Method::GET, "/vnflcm/v2/vnf_instances", None)
            .await;
    assert_eq!(ok(&r, 200).as_array().unwrap().len(), 3);
}
