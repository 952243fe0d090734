//! VIMs shared explicitly, as Tacker's `vims.shared` allows, against the real Keystone that
//! `scripts/test-env/openstack.sh start` runs: only an admin shares a VIM (`/v1.0/vims` and
//! `/vnfm/v1/vims`); members of other projects then list and read it without its credentials
//! and name it by `vimId` in an INSTANTIATE (v1 and v2), which uses it as it is (no copy), but
//! cannot change, re-default or delete it (`403`); it stays the default VIM of its own project
//! only; it cannot stop being shared while other projects' instances use it. Ignored, saying
//! so, when built without Keystone's variables.

use axum::http::Method;
use serde_json::{Value, json};
use vnfm_keystone::testing::TestKeystone;

use crate::support::keystone::{Tenant, answered, as_user, keystone_harness};
use crate::support::{HELLO, zip_dir};
use crate::vim_projects::{
    DEMO_PASSWORD, OPENSTACK, instance_in, instantiate_on, openstack_driver, tacker_vim,
};

#[vnfm_test_env::needs(keystone)]
#[tokio::test]
async fn a_shared_vim_is_read_and_used_by_every_project_and_changed_only_by_its_own() {
    let ks = TestKeystone::from_env().await;
    let (demo, other, admins) = (
        Tenant::new(&ks, "share-demo", &["member"]).await,
        Tenant::new(&ks, "share-other", &["member"]).await,
        Tenant::new(&ks, "share-admin", &["admin"]).await,
    );
    let h = keystone_harness(&ks, openstack_driver).await;
    let (d, o, root) = (
        demo.token.as_str(),
        other.token.as_str(),
        admins.token.as_str(),
    );

    // A member may not share a VIM, on either API, when registering or later.
    let mut shared_lab = tacker_vim("shared-lab", true);
    shared_lab["vim"]["shared"] = json!(true);
    let r = as_user(&h, d, Method::POST, "/v1.0/vims", Some(shared_lab.clone())).await;
    let refused = answered(&r, 403);
    assert_eq!(
        refused["TackerError"]["type"], "PolicyNotAuthorized",
        "{refused:#}"
    );
    assert!(
        refused["detail"].as_str().unwrap().contains("/vim/shared"),
        "{refused:#}"
    );
    let r = as_user(
        &h,
        d,
        Method::POST,
        "/vnfm/v1/vims",
        Some(json!({"name": "x", "vimType": OPENSTACK, "shared": true,
                    "interfaceInfo": {"endpoint": "https://k.example:5000/v3"},
                    "accessInfo": {"username": "u", "password": "p", "project": "p",
                                   "userDomain": "Default", "projectDomain": "Default"}})),
    )
    .await;
    answered(&r, 403);

    // Demo registers its default VIM (not shared: Tacker's default); the admin shares it.
    let created = answered(
        &as_user(
            &h,
            d,
            Method::POST,
            "/v1.0/vims",
            Some(tacker_vim("shared-lab", true)),
        )
        .await,
        201,
    );
    assert_eq!(created["vim"]["shared"], false, "{created:#}");
    let vim_id = created["vim"]["id"].as_str().unwrap().to_owned();
    let r = as_user(
        &h,
        d,
        Method::PUT,
        &format!("/v1.0/vims/{vim_id}"),
        Some(json!({"vim": {"shared": "True"}})),
    )
    .await;
    answered(&r, 403);
    let r = as_user(
        &h,
        d,
        Method::PATCH,
        &format!("/vnfm/v1/vims/{vim_id}"),
        Some(json!({"shared": true})),
    )
    .await;
    answered(&r, 403);
    let shared = answered(
        &as_user(
            &h,
            root,
            Method::PUT,
            &format!("/v1.0/vims/{vim_id}"),
            Some(json!({"vim": {"shared": "True"}})),
        )
        .await,
        200,
    );
    assert_eq!(shared["vim"]["shared"], true, "{shared:#}");
    assert_eq!(
        shared["vim"]["tenant_id"],
        demo.project.id.as_str(),
        "it stays demo's: {shared:#}"
    );

    // `other` lists and reads it, without its account and secrets, on both APIs.
    let listed = answered(&as_user(&h, o, Method::GET, "/v1.0/vims", None).await, 200);
    let seen: Vec<&Value> = listed["vims"].as_array().unwrap().iter().collect();
    assert_eq!(seen.len(), 1, "{listed:#}");
    let tacker = seen[0];
    assert_eq!(tacker["id"], vim_id.as_str(), "{listed:#}");
    assert_eq!(tacker["shared"], true);
    assert_eq!(tacker["auth_url"], "https://keystone.example:5000/v3");
    assert!(tacker["auth_cred"].get("username").is_none(), "{tacker:#}");
    assert!(tacker["auth_cred"].get("password").is_none(), "{tacker:#}");
    assert_eq!(tacker["vim_project"], json!({}), "{tacker:#}");
    let registry = answered(
        &as_user(&h, o, Method::GET, &format!("/vnfm/v1/vims/{vim_id}"), None).await,
        200,
    );
    assert_eq!(registry["shared"], true, "{registry:#}");
    assert!(registry.get("accessInfo").is_none(), "{registry:#}");
    let text = format!("{listed}{registry}");
    assert!(
        !text.contains("nfv_user") && !text.contains(DEMO_PASSWORD),
        "{text}"
    );
    // Demo still reads its account (secrets redacted).
    let own = answered(
        &as_user(&h, d, Method::GET, &format!("/v1.0/vims/{vim_id}"), None).await,
        200,
    );
    assert_eq!(own["vim"]["auth_cred"]["username"], "nfv_user", "{own:#}");

    // `other` cannot change, re-default or delete it: 403 on both APIs, and nothing changes.
    for (method, path, body) in [
        (
            Method::PUT,
            "/v1.0/vims/{}",
            Some(json!({"vim": {"auth_cred": {"password": "stolen"}}})),
        ),
        (
            Method::PUT,
            "/v1.0/vims/{}",
            Some(json!({"vim": {"is_default": true}})),
        ),
        (Method::DELETE, "/v1.0/vims/{}", None),
        (
            Method::PATCH,
            "/vnfm/v1/vims/{}",
            Some(json!({"extra": {"isDefault": true}})),
        ),
        (Method::DELETE, "/vnfm/v1/vims/{}", None),
    ] {
        let r = as_user(&h, o, method.clone(), &path.replace("{}", &vim_id), body).await;
        let problem = answered(&r, 403);
        assert!(
            problem["detail"]
                .as_str()
                .unwrap()
                .contains("shared by another project"),
            "{method} {path}: {problem:#}"
        );
    }
    let after = answered(
        &as_user(&h, d, Method::GET, &format!("/vnfm/v1/vims/{vim_id}"), None).await,
        200,
    );
    assert_eq!(after["version"], 2, "only the admin's change: {after:#}");

    // It stays demo's default only: a default-VIM INSTANTIATE of an instance of `other`
    // (which has no default VIM) does not take it and is refused for want of a VIM; one of
    // demo's instances takes it.
    h.onboard(zip_dir(std::path::Path::new(HELLO))).await;
    let id = instance_in(&h, &other.project.id).await;
    let r = as_user(
        &h,
        o,
        Method::POST,
        &format!("/vnflcm/v2/vnf_instances/{id}/instantiate"),
        Some(json!({"flavourId": "simple"})),
    )
    .await;
    let refused = answered(&r, 422);
    assert!(
        refused["detail"]
            .as_str()
            .unwrap()
            .contains("it has no vimConnectionInfo"),
        "{refused:#}"
    );
    let id = instance_in(&h, &demo.project.id).await;
    let occ = h
        .task(&id, "instantiate", json!({"flavourId": "simple"}))
        .await;
    assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");
    assert_eq!(
        occ["operationParams"]["vimConnectionInfo"]["default"]["vimId"],
        vim_id.as_str(),
        "{occ:#}"
    );

    // `other` names it by vimId (v2 and v1): accepted, run on it, and the instance keeps the
    // VIM's own id (no copy, unlike an admin naming an unshared VIM of another project).
    let mut others_instances = Vec::new();
    for version in [2, 1] {
        let (status, occ, instance) =
            instantiate_on(&h, (o, other.project.id.as_str()), version, &vim_id).await;
        assert_eq!(status, 202, "v{version}: {occ:#}");
        assert_eq!(occ["operationState"], "COMPLETED", "v{version}: {occ:#}");
        let ids: Vec<&str> = match &instance["vimConnectionInfo"] {
            Value::Array(list) => list.iter().filter_map(|c| c["vimId"].as_str()).collect(),
            Value::Object(map) => map.values().filter_map(|c| c["vimId"].as_str()).collect(),
            other => panic!("v{version}: {other:#}"),
        };
        assert_eq!(ids, vec![vim_id.as_str()], "v{version}: {instance:#}");
        others_instances.push(instance["id"].as_str().unwrap().to_owned());
    }
    let users = answered(
        &as_user(
            &h,
            root,
            Method::GET,
            &format!("/vnfm/v1/vims/{vim_id}"),
            None,
        )
        .await,
        200,
    );
    for id in &others_instances {
        assert!(
            users["usedByInstances"]
                .as_array()
                .unwrap()
                .contains(&json!(id)),
            "{users:#}"
        );
    }

    // The VIM's own project sees its instance among the users, not other projects' ones,
    // and a deletion refused for them counts them without naming them.
    let demo_instance = id.to_string();
    let seen = answered(
        &as_user(&h, d, Method::GET, &format!("/vnfm/v1/vims/{vim_id}"), None).await,
        200,
    );
    assert_eq!(seen["usedByInstances"], json!([demo_instance]), "{seen:#}");
    let listed = answered(
        &as_user(&h, d, Method::GET, "/vnfm/v1/vims", None).await,
        200,
    );
    let listed = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["id"] == json!(vim_id))
        .expect("the VIM is listed");
    assert_eq!(
        listed["usedByInstances"],
        json!([demo_instance]),
        "{listed:#}"
    );
    let r = as_user(
        &h,
        d,
        Method::DELETE,
        &format!("/vnfm/v1/vims/{vim_id}"),
        None,
    )
    .await;
    let refused = answered(&r, 409);
    let detail = refused["detail"].as_str().unwrap();
    assert!(
        detail.contains(&demo_instance) && detail.contains("2 of other projects"),
        "{refused:#}"
    );
    for other in &others_instances {
        assert!(!detail.contains(other.as_str()), "{refused:#}");
    }

    // While they use it, even the admin cannot stop sharing it.
    let r = as_user(
        &h,
        root,
        Method::PATCH,
        &format!("/vnfm/v1/vims/{vim_id}"),
        Some(json!({"shared": false})),
    )
    .await;
    let conflict = answered(&r, 409);
    assert!(
        conflict["detail"]
            .as_str()
            .unwrap()
            .contains(&others_instances[0]),
        "{conflict:#}"
    );

    // An unshared VIM of another project stays invisible to `other`.
    let r = as_user(
        &h,
        root,
        Method::PUT,
        &format!("/v1.0/vims/{vim_id}"),
        Some(json!({"vim": {"shared": false}})),
    )
    .await;
    answered(&r, 409);
    let private = answered(
        &as_user(
            &h,
            d,
            Method::POST,
            "/v1.0/vims",
            Some(tacker_vim("private-lab", false)),
        )
        .await,
        201,
    )["vim"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = as_user(&h, o, Method::GET, &format!("/v1.0/vims/{private}"), None).await;
    answered(&r, 404);
}
