//! VIMs per project, as on Tacker, against the real Keystone that
//! `scripts/test-env/openstack.sh start` runs: a VIM belongs to the project that registered it
//! (`/v1.0/vims` and `/vnfm/v1/vims`); another project neither lists, reads, changes,
//! re-defaults nor deletes it (`404`, as for an id that does not exist); an admin sees every
//! VIM; each project has its own default VIM, which a default-VIM INSTANTIATE of an instance of
//! that project uses; an INSTANTIATE naming another project's VIM by `vimId` fails as one naming
//! a VIM that does not exist, unless an admin names it (the instance then gets a copy of it, as
//! on Tacker). Ignored, saying so, when built without Keystone's variables.

use std::path::Path;
use std::sync::Arc;

use axum::http::Method;
use serde_json::{Value, json};
use vnfm_driver_api::memory::MemoryInfraDriver;
use vnfm_keystone::testing::TestKeystone;
use vnfm_types::{CreateVnfRequest, VnfdId};

use crate::support::keystone::{Tenant, answered, as_user, keystone_harness, not_found};
use crate::support::{HELLO, HELLO_VNFD, Harness, Reply, zip_dir};

pub(crate) const OPENSTACK: &str = "ETSINFV.OPENSTACK_KEYSTONE.V_3";
pub(crate) const DEMO_PASSWORD: &str = "demo-vim-Pa55word-7c1e";

/// Projects `<prefix>-demo` and `<prefix>-other` with a member each, and `<prefix>-admin`
/// with an admin.
async fn tenants(ks: &TestKeystone, prefix: &str) -> (Tenant, Tenant, Tenant) {
    (
        Tenant::new(ks, &format!("{prefix}-demo"), &["member"]).await,
        Tenant::new(ks, &format!("{prefix}-other"), &["member"]).await,
        Tenant::new(ks, &format!("{prefix}-admin"), &["admin"]).await,
    )
}

/// The services of these tests: a memory driver serving OpenStack VIMs.
pub(crate) fn openstack_driver(b: vnfm::lcm::Builder) -> vnfm::lcm::Builder {
    b.infra_driver(Arc::new(
        MemoryInfraDriver::new().with_vim_types(&[OPENSTACK]),
    ))
}

/// An OpenStack `vim.yaml` as python-tackerclient sends it.
pub(crate) fn tacker_vim(name: &str, is_default: bool) -> Value {
    json!({"vim": {
        "auth_url": "https://keystone.example:5000",
        "type": "openstack",
        "vim_project": {"name": "nfv", "project_domain_name": "Default"},
        "auth_cred": {"username": "nfv_user", "password": DEMO_PASSWORD,
                      "user_domain_name": "Default", "cert_verify": "False"},
        "name": name,
        "is_default": is_default,
    }})
}

#[vnfm_test_env::needs(keystone)]
#[tokio::test]
async fn a_project_sees_changes_and_defaults_only_its_own_vims() {
    let ks = TestKeystone::from_env().await;
    let (demo, other, admins) = tenants(&ks, "vims").await;
    let h = keystone_harness(&ks, openstack_driver).await;
    let (d, o, root) = (
        demo.token.clone(),
        other.token.clone(),
        admins.token.clone(),
    );

    // Each project registers a default VIM, demo through Tacker's API, other through the
    // registry's own; both keep their default (one per project). Names are per project.
    let demo_vim = answered(
        &as_user(
            &h,
            &d,
            Method::POST,
            "/v1.0/vims",
            Some(tacker_vim("lab", true)),
        )
        .await,
        201,
    )["vim"]
        .clone();
    let demo_id = demo_vim["id"].as_str().unwrap().to_owned();
    assert_eq!(
        demo_vim["tenant_id"],
        demo.project.id.as_str(),
        "{demo_vim:#}"
    );
    let other_vim = answered(
        &as_user(
            &h,
            &o,
            Method::POST,
            "/vnfm/v1/vims",
            Some(json!({
                "name": "lab", "vimType": OPENSTACK,
                "interfaceInfo": {"endpoint": "https://other.example:5000/v3"},
                "accessInfo": {"username": "u", "password": "other-Pa55", "project": "p",
                               "userDomain": "Default", "projectDomain": "Default"},
                "extra": {"isDefault": true},
            })),
        )
        .await,
        201,
    );
    let other_id = other_vim["id"].as_str().unwrap().to_owned();
    assert_eq!(
        other_vim["project"],
        other.project.id.as_str(),
        "{other_vim:#}"
    );
    // A member may register only in its own project (Tacker's policy).
    let mut elsewhere = tacker_vim("elsewhere", false);
    elsewhere["vim"]["tenant_id"] = json!(demo.project.id);
    let r = as_user(&h, &o, Method::POST, "/v1.0/vims", Some(elsewhere)).await;
    answered(&r, 403);

    // Lists: each member sees its own VIM only, the admin both.
    let listed = |r: Reply| -> Vec<String> {
        let v = answered(&r, 200);
        let items = v.get("vims").unwrap_or(&v).as_array().unwrap().clone();
        items
            .iter()
            .map(|x| x["id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        listed(as_user(&h, &d, Method::GET, "/v1.0/vims", None).await),
        vec![demo_id.clone()]
    );
    assert_eq!(
        listed(as_user(&h, &o, Method::GET, "/vnfm/v1/vims", None).await),
        vec![other_id.clone()]
    );
    let mut all = listed(as_user(&h, &root, Method::GET, "/v1.0/vims", None).await);
    all.sort();
    let mut both = vec![demo_id.clone(), other_id.clone()];
    both.sort();
    assert_eq!(all, both);

    // `other` cannot read, change, re-default or delete demo's VIM: each answers what a VIM
    // that does not exist answers.
    let missing = "00000000-0000-0000-0000-000000000000";
    for (method, path, body) in [
        (Method::GET, "/v1.0/vims/{}", None),
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
        (Method::GET, "/vnfm/v1/vims/{}", None),
        (
            Method::PATCH,
            "/vnfm/v1/vims/{}",
            Some(json!({"extra": {"isDefault": true}})),
        ),
        (Method::DELETE, "/vnfm/v1/vims/{}", None),
    ] {
        let hidden = as_user(
            &h,
            &o,
            method.clone(),
            &path.replace("{}", &demo_id),
            body.clone(),
        )
        .await;
        let absent = as_user(&h, &o, method.clone(), &path.replace("{}", missing), body).await;
        assert_eq!(
            not_found(&hidden, &demo_id),
            not_found(&absent, missing),
            "{method} {path}"
        );
    }
    // Demo's VIM is as it was: its credentials, its default.
    let shown = answered(
        &as_user(
            &h,
            &d,
            Method::GET,
            &format!("/vnfm/v1/vims/{demo_id}"),
            None,
        )
        .await,
        200,
    );
    assert_eq!(shown["version"], 1, "{shown:#}");
    assert_eq!(shown["extra"]["isDefault"], true, "{shown:#}");
    let shown = answered(
        &as_user(
            &h,
            &o,
            Method::GET,
            &format!("/vnfm/v1/vims/{other_id}"),
            None,
        )
        .await,
        200,
    );
    assert_eq!(shown["extra"]["isDefault"], true, "{shown:#}");
    // The admin reaches both.
    answered(
        &as_user(
            &h,
            &root,
            Method::GET,
            &format!("/v1.0/vims/{other_id}"),
            None,
        )
        .await,
        200,
    );

    // A default-VIM INSTANTIATE takes the default of the instance's project.
    h.onboard(zip_dir(Path::new(HELLO))).await;
    for (project, vim) in [(&demo.project.id, &demo_id), (&other.project.id, &other_id)] {
        let instance = h
            .state
            .lcm()
            .create_vnf_identifier_in(
                CreateVnfRequest {
                    vnfd_id: VnfdId::new(HELLO_VNFD),
                    vnf_instance_name: None,
                    vnf_instance_description: None,
                    metadata: None,
                },
                Some(project),
            )
            .await
            .unwrap();
        let occ = h
            .task(
                instance.id.as_str(),
                "instantiate",
                json!({"flavourId": "simple"}),
            )
            .await;
        assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");
        assert_eq!(
            occ["operationParams"]["vimConnectionInfo"]["default"]["vimId"],
            vim.as_str(),
            "{occ:#}"
        );
    }
}

/// Registers a VIM named `name` in the project of `token` through Tacker's API; its id.
async fn register(h: &Harness, token: &str, name: &str) -> String {
    let r = as_user(
        h,
        token,
        Method::POST,
        "/v1.0/vims",
        Some(tacker_vim(name, false)),
    )
    .await;
    answered(&r, 201)["vim"]["id"].as_str().unwrap().to_owned()
}

/// A new instance of `project` (the package was onboarded by the server's own client, of no
/// project: the instance is created in the project directly).
pub(crate) async fn instance_in(h: &Harness, project: &str) -> String {
    h.state
        .lcm()
        .create_vnf_identifier_in(
            CreateVnfRequest {
                vnfd_id: VnfdId::new(HELLO_VNFD),
                vnf_instance_name: None,
                vnf_instance_description: None,
                metadata: None,
            },
            Some(project),
        )
        .await
        .unwrap()
        .id
        .to_string()
}

/// What an INSTANTIATE (`version` 1 or 2) by `token` of a new instance of its `project` naming
/// VIM `vim_id` leads to: the status of the request, the occurrence it started (at rest, as
/// the admin reads it, `Null` if none) and the instance afterwards.
pub(crate) async fn instantiate_on(
    h: &Harness,
    (token, project): (&str, &str),
    version: u8,
    vim_id: &str,
) -> (u16, Value, Value) {
    let id = instance_in(h, project).await;
    let connections = if version == 1 {
        json!([{"id": "vim1", "vimId": vim_id, "vimType": OPENSTACK}])
    } else {
        json!({"vim1": {"vimId": vim_id, "vimType": OPENSTACK}})
    };
    let r = as_user(
        h,
        token,
        Method::POST,
        &format!("/vnflcm/v{version}/vnf_instances/{id}/instantiate"),
        Some(json!({"flavourId": "simple", "vimConnectionInfo": connections})),
    )
    .await;
    let occ = match r.header("location") {
        Some(location) => h.wait_op(location).await,
        None => r.json(),
    };
    let instance = answered(
        &as_user(
            h,
            token,
            Method::GET,
            &format!("/vnflcm/v{version}/vnf_instances/{id}"),
            None,
        )
        .await,
        200,
    );
    (r.status.as_u16(), occ, instance)
}

#[vnfm_test_env::needs(keystone)]
#[tokio::test]
async fn an_instantiate_naming_another_projects_vim_fails_as_for_an_unknown_vim() {
    let ks = TestKeystone::from_env().await;
    let (demo, other) = (
        Tenant::new(&ks, "vimuse-demo", &["member"]).await,
        Tenant::new(&ks, "vimuse-other", &["member"]).await,
    );
    let h = keystone_harness(&ks, openstack_driver).await;
    let (d, o) = (demo.token.clone(), other.token.clone());
    let (d, o) = (
        (d.as_str(), demo.project.id.as_str()),
        (o.as_str(), other.project.id.as_str()),
    );
    h.onboard(zip_dir(Path::new(HELLO))).await;
    let demo_vim = register(&h, d.0, "demo-lab").await;
    let other_vim = register(&h, o.0, "other-lab").await;
    let missing = "00000000-0000-0000-0000-000000000000";

    for version in [2, 1] {
        // `other` names demo's VIM: the same answer as for a VIM that does not exist, refused
        // (422) before anything is stored, and the instance is not instantiated.
        let hidden = instantiate_on(&h, o, version, &demo_vim).await;
        let absent = instantiate_on(&h, o, version, missing).await;
        let detail = |problem: &Value, id: &str| {
            problem["detail"]
                .as_str()
                .unwrap_or_default()
                .replace(id, "<id>")
        };
        assert_eq!(hidden.0, 422, "v{version}: {:#}", hidden.1);
        assert_eq!(absent.0, 422, "v{version}: {:#}", absent.1);
        assert_eq!(
            detail(&hidden.1, &demo_vim),
            detail(&absent.1, missing),
            "v{version}: {:#}",
            hidden.1
        );
        assert!(
            detail(&hidden.1, &demo_vim).contains("no VIM `<id>` is registered"),
            "v{version}: {:#}",
            hidden.1
        );
        assert!(
            !hidden.1.to_string().contains(DEMO_PASSWORD),
            "{:#}",
            hidden.1
        );
        for (_, _, instance) in [&hidden, &absent] {
            assert_eq!(
                instance["instantiationState"], "NOT_INSTANTIATED",
                "{instance:#}"
            );
        }

        // Each project's own VIM is used.
        for (caller, vim) in [(d, &demo_vim), (o, &other_vim)] {
            let (status, occ, instance) = instantiate_on(&h, caller, version, vim).await;
            assert_eq!(status, 202, "v{version}");
            assert_eq!(occ["operationState"], "COMPLETED", "v{version}: {occ:#}");
            assert_eq!(
                instance["instantiationState"], "INSTANTIATED",
                "{instance:#}"
            );
        }
    }

    // MODIFY_INFO cannot store what an operation refuses: demo's VIM is as unknown to `other`
    // as a missing one, and nothing is written.
    let id = instance_in(&h, o.1).await;
    let mut answers = Vec::new();
    for vim in [demo_vim.as_str(), missing] {
        let r = as_user(
            &h,
            o.0,
            Method::PATCH,
            &format!("/vnflcm/v2/vnf_instances/{id}"),
            Some(json!({"vimConnectionInfo": {"vim1": {"vimId": vim, "vimType": OPENSTACK}}})),
        )
        .await;
        assert_eq!(
            r.status.as_u16(),
            422,
            "{}",
            String::from_utf8_lossy(&r.body)
        );
        answers.push(
            r.json()["detail"]
                .as_str()
                .unwrap_or_default()
                .replace(vim, "<id>"),
        );
    }
    assert_eq!(answers[0], answers[1]);
    let instance = answered(
        &as_user(
            &h,
            o.0,
            Method::GET,
            &format!("/vnflcm/v2/vnf_instances/{id}"),
            None,
        )
        .await,
        200,
    );
    assert!(
        instance
            .get("vimConnectionInfo")
            .is_none_or(|v| v.as_object().is_none_or(|m| m.is_empty())),
        "{instance:#}"
    );
    // Its own VIM is stored.
    let r = as_user(
        &h,
        o.0,
        Method::PATCH,
        &format!("/vnflcm/v2/vnf_instances/{id}"),
        Some(json!({"vimConnectionInfo": {"vim1": {"vimId": other_vim, "vimType": OPENSTACK}}})),
    )
    .await;
    let occ = h.accepted_op(&r).await;
    assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");
}

#[vnfm_test_env::needs(keystone)]
#[tokio::test]
async fn an_admin_may_name_another_projects_vim_and_the_instance_keeps_a_copy() {
    let ks = TestKeystone::from_env().await;
    let (demo, other, admins) = tenants(&ks, "vimadmin").await;
    let h = keystone_harness(&ks, openstack_driver).await;
    let (d, o, root) = (
        demo.token.clone(),
        other.token.clone(),
        admins.token.clone(),
    );
    h.onboard(zip_dir(Path::new(HELLO))).await;
    let demo_vim = register(&h, &d, "demo-lab").await;

    for version in [2, 1] {
        // The admin instantiates an instance of `other` on demo's VIM: accepted and completed,
        // as on Tacker.
        let (status, occ, _) =
            instantiate_on(&h, (&root, other.project.id.as_str()), version, &demo_vim).await;
        assert_eq!(status, 202, "v{version}: {occ:#}");
        assert_eq!(occ["operationState"], "COMPLETED", "v{version}: {occ:#}");
        let id = occ["vnfInstanceId"].as_str().unwrap().to_owned();

        // The instance holds a copy of demo's VIM, a VIM of its own project: `other`'s member
        // reads it (no secret), and operates the instance on it.
        let instance = answered(
            &as_user(
                &h,
                &o,
                Method::GET,
                &format!("/vnflcm/v{version}/vnf_instances/{id}"),
                None,
            )
            .await,
            200,
        );
        assert_eq!(
            instance["instantiationState"], "INSTANTIATED",
            "{instance:#}"
        );
        let entry = if version == 1 {
            instance["vimConnectionInfo"][0].clone()
        } else {
            instance["vimConnectionInfo"]["vim1"].clone()
        };
        let copy = entry["vimId"]
            .as_str()
            .unwrap_or_else(|| panic!("{instance:#}"));
        assert_ne!(copy, demo_vim, "{instance:#}");
        assert_eq!(entry["vimType"], OPENSTACK, "{instance:#}");
        // The copy's account shows, without its password.
        assert!(
            entry["accessInfo"].get("username").is_some(),
            "{instance:#}"
        );
        assert!(
            entry["accessInfo"].get("password").is_none(),
            "{instance:#}"
        );
        assert!(
            !instance.to_string().contains(DEMO_PASSWORD),
            "{instance:#}"
        );
        let copied = answered(
            &as_user(&h, &o, Method::GET, &format!("/vnfm/v1/vims/{copy}"), None).await,
            200,
        );
        assert_eq!(
            copied["interfaceInfo"]["endpoint"], "https://keystone.example:5000/v3",
            "{copied:#}"
        );
        assert_eq!(copied["project"], other.project.id.as_str(), "{copied:#}");
        assert!(!copied.to_string().contains(DEMO_PASSWORD), "{copied:#}");
        let r = as_user(
            &h,
            &o,
            Method::POST,
            &format!("/vnflcm/v{version}/vnf_instances/{id}/terminate"),
            Some(json!({"terminationType": "FORCEFUL"})),
        )
        .await;
        assert_eq!(
            r.status.as_u16(),
            202,
            "{}",
            String::from_utf8_lossy(&r.body)
        );
        let occ = h.wait_op(r.header("location").unwrap()).await;
        assert_eq!(occ["operationState"], "COMPLETED", "v{version}: {occ:#}");

        // `other`'s member naming demo's VIM is still refused as for an unknown VIM.
        let (status, problem, _) =
            instantiate_on(&h, (&o, other.project.id.as_str()), version, &demo_vim).await;
        assert_eq!(status, 422, "v{version}: {problem:#}");
        assert!(
            problem["detail"]
                .as_str()
                .unwrap_or_default()
                .contains("is registered"),
            "v{version}: {problem:#}"
        );
    }

    // The admin's MODIFY_INFO stores a copy too; demo's VIM is not referenced by `other`'s
    // instances, so demo may delete it.
    let id = instance_in(&h, other.project.id.as_str()).await;
    let r = as_user(
        &h,
        &root,
        Method::PATCH,
        &format!("/vnflcm/v2/vnf_instances/{id}"),
        Some(json!({"vimConnectionInfo": {"vim1": {"vimId": demo_vim, "vimType": OPENSTACK}}})),
    )
    .await;
    let occ = h.accepted_op(&r).await;
    assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");
    let instance = answered(
        &as_user(
            &h,
            &o,
            Method::GET,
            &format!("/vnflcm/v2/vnf_instances/{id}"),
            None,
        )
        .await,
        200,
    );
    let stored = instance["vimConnectionInfo"]["vim1"]["vimId"]
        .as_str()
        .unwrap();
    assert_ne!(stored, demo_vim, "{instance:#}");
    let r = as_user(
        &h,
        &d,
        Method::DELETE,
        &format!("/v1.0/vims/{demo_vim}"),
        None,
    )
    .await;
    assert_eq!(
        r.status.as_u16(),
        204,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
}
