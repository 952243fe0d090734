//! Tacker's VIM API (`/v1.0/vims`), with the bodies python-tackerclient sends for
//! `openstack vim register --config-file vim.yaml`: registration of both types, list with the
//! client's filters, show, update, delete, errors with a `TackerError` member, secrets never
//! returned, one default VIM, and an INSTANTIATE without `vimConnectionInfo` using it.

use crate::support;

use std::path::Path;
use std::sync::Arc;

use axum::http::Method;
use serde_json::{Value, json};
use support::{HELLO, Harness, Reply, zip_dir};
use vnfm_driver_api::memory::MemoryInfraDriver;

const OS_PASSWORD: &str = "tacker-os-Pa55word-31f7";
const OS_PASSWORD_2: &str = "tacker-os-rotated-Pa55-88c1";
const K8S_TOKEN: &str = "eyJhbGciOiJSUzI1NiJ9.tacker-k8s-token-4d4d";
const K8S_PASSWORD: &str = "tacker-k8s-basic-Pa55-2b2b";
const SECRETS: [&str; 4] = [OS_PASSWORD, OS_PASSWORD_2, K8S_TOKEN, K8S_PASSWORD];
const CA: &str = vnfm_test_env::CA_PEM;

/// A harness whose memory driver also serves OpenStack VIMs (so an instance can run on a
/// registered OpenStack VIM).
async fn harness() -> Harness {
    Harness::with_services(
        |b| {
            b.infra_driver(Arc::new(
                MemoryInfraDriver::new().with_vim_types(&["ETSINFV.OPENSTACK_KEYSTONE.V_3"]),
            ))
        },
        |_| {},
    )
    .await
}

/// What python-tackerclient sends for an OpenStack `vim.yaml` (`auth_url`, `username`,
/// `password`, `project_name`, `project_domain_name`, `user_domain_name`, `cert_verify`).
fn openstack_body(name: &str, is_default: bool) -> Value {
    json!({"vim": {
        "auth_url": "https://keystone.example:5000",
        "type": "openstack",
        "vim_project": {"name": "nfv", "project_domain_name": "Default"},
        "auth_cred": {"username": "nfv_user", "password": OS_PASSWORD,
                      "user_domain_name": "Default", "cert_verify": "False"},
        "name": name,
        "description": "the lab cloud",
        "is_default": is_default,
    }})
}

/// What python-tackerclient sends for a Kubernetes `vim.yaml` with a bearer token.
fn kubernetes_body(name: &str) -> Value {
    json!({"vim": {
        "auth_url": "https://k8s.example:6443",
        "type": "kubernetes",
        "vim_project": {"name": "default"},
        "auth_cred": {"bearer_token": K8S_TOKEN, "ssl_ca_cert": CA},
        "name": name,
        "is_default": false,
    }})
}

fn assert_no_secret(r: &Reply) {
    let text = String::from_utf8_lossy(&r.body);
    for s in SECRETS {
        assert!(!text.contains(s), "{s} is in {text}");
    }
}

async fn register(h: &Harness, body: Value) -> Value {
    let r = h.call(Method::POST, "/v1.0/vims.json", Some(body)).await;
    assert_eq!(
        r.status.as_u16(),
        201,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    assert_no_secret(&r);
    r.json()["vim"].clone()
}

async fn show(h: &Harness, id: &str) -> Value {
    let r = h
        .call(Method::GET, &format!("/v1.0/vims/{id}.json"), None)
        .await;
    assert_eq!(
        r.status.as_u16(),
        200,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    assert_no_secret(&r);
    r.json()["vim"].clone()
}

/// A refusal: ProblemDetails with `TackerError` of `kind`; returns the body.
fn tacker_error(r: &Reply, status: u16, kind: &str) -> Value {
    let p = r.problem(status);
    assert_eq!(p["TackerError"]["type"], kind, "{p}");
    assert_eq!(p["TackerError"]["message"], p["detail"], "{p}");
    assert_no_secret(r);
    p
}

#[tokio::test]
async fn openstack_and_kubernetes_vims_register_as_the_client_sends_them() {
    let h = harness().await;
    let os = register(&h, openstack_body("lab-os", false)).await;
    assert_eq!(os["name"], "lab-os");
    assert_eq!(os["type"], "openstack");
    assert_eq!(os["description"], "the lab cloud");
    assert_eq!(os["auth_url"], "https://keystone.example:5000/v3");
    assert_eq!(
        os["vim_project"],
        json!({"name": "nfv", "project_domain_name": "Default"})
    );
    assert_eq!(
        os["auth_cred"],
        json!({"username": "nfv_user", "password": "***", "user_domain_name": "Default", "cert_verify": "False"})
    );
    assert_eq!(os["is_default"], false);
    assert_eq!(os["status"], "ACTIVE");
    assert_eq!(os["extra"], json!({}));
    assert!(os["created_at"].as_str().is_some_and(|t| t.ends_with('Z')));

    let k8s = register(&h, kubernetes_body("lab-k8s")).await;
    assert_eq!(k8s["type"], "kubernetes");
    assert_eq!(k8s["auth_url"], "https://k8s.example:6443");
    assert_eq!(k8s["vim_project"], json!({"name": "default"}));
    assert_eq!(
        k8s["auth_cred"],
        json!({"bearer_token": "***", "ssl_ca_cert": CA})
    );

    // The registry holds them in its own layout (and the native API shows them too).
    let native = h
        .call(
            Method::GET,
            &format!("/vnfm/v1/vims/{}", os["id"].as_str().unwrap()),
            None,
        )
        .await;
    assert_no_secret(&native);
    let native = native.json();
    assert_eq!(native["vimType"], "ETSINFV.OPENSTACK_KEYSTONE.V_3");
    assert_eq!(native["accessInfo"]["project"], "nfv");
    assert_eq!(native["accessInfo"]["userDomain"], "Default");
    assert_eq!(native["interfaceInfo"]["skipCertificateVerification"], true);

    // Show and list, with and without the client's `.json` suffix.
    let id = os["id"].as_str().unwrap();
    assert_eq!(show(&h, id).await, os);
    let r = h.call(Method::GET, &format!("/v1.0/vims/{id}"), None).await;
    assert_eq!(r.json()["vim"], os);
    let r = h.call(Method::GET, "/v1.0/vims", None).await;
    assert_no_secret(&r);
    let names: Vec<Value> = r.json()["vims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].clone())
        .collect();
    assert_eq!(names.len(), 2);
    assert!(names.contains(&json!("lab-os")) && names.contains(&json!("lab-k8s")));

    // The lookups python-tackerclient makes to find a VIM by id or by name.
    let r = h
        .call(
            Method::GET,
            &format!("/v1.0/vims.json?id={id}&fields=id"),
            None,
        )
        .await;
    assert_eq!(r.json(), json!({"vims": [{"id": id}]}));
    let r = h
        .call(Method::GET, "/v1.0/vims.json?name=lab-k8s&fields=id", None)
        .await;
    assert_eq!(r.json(), json!({"vims": [{"id": k8s["id"]}]}));
    let r = h
        .call(Method::GET, "/v1.0/vims.json?name=nothing&fields=id", None)
        .await;
    assert_eq!(r.json(), json!({"vims": []}));
    let r = h
        .call(Method::GET, "/v1.0/vims.json?type=kubernetes", None)
        .await;
    assert_eq!(r.json()["vims"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn kubernetes_with_username_and_password_and_helm() {
    let h = harness().await;
    let mut body = kubernetes_body("k8s-basic");
    body["vim"]["auth_cred"] = json!({"username": "admin", "password": K8S_PASSWORD});
    body["vim"]["extra"] = json!({"use_helm": true});
    let vim = register(&h, body).await;
    assert_eq!(vim["type"], "kubernetes");
    assert_eq!(
        vim["auth_cred"],
        json!({"username": "admin", "password": "***"})
    );
    assert_eq!(
        vim["extra"],
        json!({"use_helm": true, "namespaceRule": "tacker"})
    );
    let native = h
        .call(
            Method::GET,
            &format!("/vnfm/v1/vims/{}", vim["id"].as_str().unwrap()),
            None,
        )
        .await
        .json();
    assert_eq!(native["vimType"], "ETSINFV.HELM.V_3");
}

#[tokio::test]
async fn update_changes_names_descriptions_defaults_and_credentials() {
    let h = harness().await;
    let os = register(&h, openstack_body("os", false)).await;
    let id = os["id"].as_str().unwrap();
    let r = h
        .call(
            Method::PUT,
            &format!("/v1.0/vims/{id}.json"),
            Some(json!({"vim": {"name": "os-renamed", "description": "new words", "is_default": true}})),
        )
        .await;
    assert_eq!(
        r.status.as_u16(),
        200,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    assert_no_secret(&r);
    let vim = r.json()["vim"].clone();
    assert_eq!(vim["name"], "os-renamed");
    assert_eq!(vim["description"], "new words");
    assert_eq!(vim["is_default"], true);
    assert!(vim["updated_at"].is_string());
    assert_eq!(vim["auth_cred"]["username"], "nfv_user");

    // `openstack vim set --config-file`: vim_project and auth_cred again, new password.
    let r = h
        .call(
            Method::PUT,
            &format!("/v1.0/vims/{id}"),
            Some(json!({"vim": {
                "vim_project": {"name": "nfv2", "project_domain_name": "Default"},
                "auth_cred": {"username": "other_user", "password": OS_PASSWORD_2,
                              "user_domain_name": "Default", "cert_verify": "True"}}})),
        )
        .await;
    assert_eq!(
        r.status.as_u16(),
        200,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    assert_no_secret(&r);
    let vim = r.json()["vim"].clone();
    assert_eq!(vim["vim_project"]["name"], "nfv2");
    assert_eq!(vim["auth_cred"]["username"], "other_user");
    assert_eq!(vim["auth_cred"]["password"], "***");
    assert_eq!(vim["auth_cred"]["cert_verify"], "True");
    assert_eq!(vim["is_default"], true, "untouched by this update");
    assert_eq!(vim["name"], "os-renamed");

    // Kubernetes: username and password replace the bearer token.
    let k8s = register(&h, kubernetes_body("k8s")).await;
    let kid = k8s["id"].as_str().unwrap();
    let r = h
        .call(
            Method::PUT,
            &format!("/v1.0/vims/{kid}"),
            Some(json!({"vim": {"vim_project": {"name": "vnf-ns"},
                                "auth_cred": {"username": "admin", "password": K8S_PASSWORD}}})),
        )
        .await;
    assert_eq!(
        r.status.as_u16(),
        200,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    assert_no_secret(&r);
    let vim = r.json()["vim"].clone();
    assert_eq!(
        vim["auth_cred"],
        json!({"username": "admin", "password": "***", "ssl_ca_cert": CA})
    );
    assert_eq!(vim["vim_project"], json!({"name": "vnf-ns"}));

    // Read-only attributes are refused.
    let r = h
        .call(
            Method::PUT,
            &format!("/v1.0/vims/{kid}"),
            Some(json!({"vim": {"type": "openstack"}})),
        )
        .await;
    let p = tacker_error(&r, 400, "BadRequest");
    assert_eq!(p["pointer"], "/vim/type");
    // A name another VIM has is refused.
    let r = h
        .call(
            Method::PUT,
            &format!("/v1.0/vims/{kid}"),
            Some(json!({"vim": {"name": "os-renamed"}})),
        )
        .await;
    tacker_error(&r, 409, "Conflict");
}

#[tokio::test]
async fn at_most_one_vim_is_the_default() {
    let h = harness().await;
    let a = register(&h, openstack_body("a", true)).await;
    assert_eq!(a["is_default"], true);
    let b = register(&h, openstack_body("b", true)).await;
    assert_eq!(b["is_default"], true);
    assert_eq!(
        show(&h, a["id"].as_str().unwrap()).await["is_default"],
        false
    );
    let r = h
        .call(
            Method::GET,
            "/v1.0/vims.json?is_default=True&fields=id",
            None,
        )
        .await;
    assert_eq!(r.json(), json!({"vims": [{"id": b["id"]}]}));
    // Setting it on a again moves it back.
    let aid = a["id"].as_str().unwrap();
    let r = h
        .call(
            Method::PUT,
            &format!("/v1.0/vims/{aid}"),
            Some(json!({"vim": {"is_default": "True"}})),
        )
        .await;
    assert_eq!(r.json()["vim"]["is_default"], true);
    assert_eq!(
        show(&h, b["id"].as_str().unwrap()).await["is_default"],
        false
    );
    // And clearing it leaves no default.
    let r = h
        .call(
            Method::PUT,
            &format!("/v1.0/vims/{aid}"),
            Some(json!({"vim": {"is_default": false}})),
        )
        .await;
    assert_eq!(r.json()["vim"]["is_default"], false);
    let r = h
        .call(Method::GET, "/v1.0/vims.json?is_default=true", None)
        .await;
    assert_eq!(r.json(), json!({"vims": []}));
}

#[tokio::test]
async fn malformed_bodies_are_refused_naming_the_attribute() {
    let h = harness().await;
    let cases: Vec<(Value, &str)> = vec![
        (
            {
                let mut b = openstack_body("x", false);
                b["vim"].as_object_mut().unwrap().remove("auth_url");
                b
            },
            "/vim/auth_url",
        ),
        (
            {
                let mut b = openstack_body("x", false);
                b["vim"]["type"] = json!("vmware");
                b
            },
            "/vim/type",
        ),
        (
            {
                let mut b = openstack_body("x", false);
                b["vim"]["auth_cred"]
                    .as_object_mut()
                    .unwrap()
                    .remove("user_domain_name");
                b
            },
            "/vim/auth_cred/user_domain_name",
        ),
        (
            {
                let mut b = openstack_body("x", false);
                b["vim"]["vim_project"] = json!({"name": "nfv"});
                b
            },
            "/vim/vim_project/project_domain_name",
        ),
        (
            {
                let mut b = kubernetes_body("x");
                b["vim"]["auth_cred"] = json!({"ssl_ca_cert": CA});
                b
            },
            "/vim/auth_cred/bearer_token",
        ),
        (
            {
                let mut b = openstack_body("x", false);
                b["vim"]["auth_cred"]["oidc_token_url"] = json!("https://idp");
                b
            },
            "/vim/auth_cred/oidc_token_url",
        ),
        (
            {
                let mut b = openstack_body("x", false);
                b["vim"]["id"] = json!("mine");
                b
            },
            "/vim/id",
        ),
        (
            {
                let mut b = openstack_body("x", false);
                b["vim"]["is_default"] = json!("maybe");
                b
            },
            "/vim/is_default",
        ),
        (
            {
                let mut b = openstack_body("", false);
                b["vim"]["name"] = json!("");
                b
            },
            "/vim/name",
        ),
    ];
    for (body, pointer) in cases {
        let r = h.call(Method::POST, "/v1.0/vims", Some(body)).await;
        let p = tacker_error(&r, 400, "BadRequest");
        assert_eq!(p["pointer"], pointer, "{p}");
        assert!(p["detail"].as_str().unwrap().contains(pointer), "{p}");
    }
    // An unknown member of the body, and a body that is not Tacker's envelope.
    let r = h
        .call(
            Method::POST,
            "/v1.0/vims",
            Some(json!({"vim": {"colour": "red"}})),
        )
        .await;
    tacker_error(&r, 400, "BadRequest");
    let r = h
        .call(Method::POST, "/v1.0/vims", Some(json!({"name": "x"})))
        .await;
    tacker_error(&r, 400, "BadRequest");
    // Nothing was registered, and a second VIM with a taken name is a conflict.
    let r = h.call(Method::GET, "/v1.0/vims", None).await;
    assert_eq!(r.json(), json!({"vims": []}));
    register(&h, openstack_body("taken", false)).await;
    let r = h
        .call(
            Method::POST,
            "/v1.0/vims",
            Some(openstack_body("taken", false)),
        )
        .await;
    tacker_error(&r, 409, "Conflict");
}

#[tokio::test]
async fn unknown_ids_are_404_and_delete_is_204() {
    let h = harness().await;
    for (method, body) in [
        (Method::GET, None),
        (Method::PUT, Some(json!({"vim": {"name": "n"}}))),
        (Method::DELETE, None),
    ] {
        let r = h.call(method, "/v1.0/vims/no-such-vim.json", body).await;
        tacker_error(&r, 404, "VimNotFoundException");
    }
    let vim = register(&h, kubernetes_body("gone")).await;
    let id = vim["id"].as_str().unwrap();
    let r = h
        .call(Method::DELETE, &format!("/v1.0/vims/{id}.json"), None)
        .await;
    assert_eq!(r.status.as_u16(), 204);
    assert!(r.body.is_empty());
    let r = h.call(Method::GET, &format!("/v1.0/vims/{id}"), None).await;
    tacker_error(&r, 404, "VimNotFoundException");
}

#[tokio::test]
async fn instantiate_without_vim_connection_info_uses_the_default_vim() {
    let h = harness().await;
    let other = register(&h, openstack_body("other", false)).await;
    let vim = register(&h, openstack_body("default-os", true)).await;
    let vim_id = vim["id"].as_str().unwrap();
    h.onboard(zip_dir(Path::new(HELLO))).await;
    let instance = h.create_instance().await;
    let occ = h
        .task(&instance, "instantiate", json!({"flavourId": "simple"}))
        .await;
    assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");
    assert_eq!(
        occ["operationParams"]["vimConnectionInfo"]["default"]["vimId"], vim_id,
        "{occ:#}"
    );
    let inst = h
        .call(
            Method::GET,
            &format!("/vnflcm/v2/vnf_instances/{instance}"),
            None,
        )
        .await;
    assert_no_secret(&inst);
    let vims = inst.json()["vimConnectionInfo"].clone();
    assert_eq!(
        vims,
        json!({"default": {"vimId": vim_id, "vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3"}})
    );
    // The default VIM is in use now: deleting it is refused; the other one goes.
    let r = h
        .call(Method::DELETE, &format!("/v1.0/vims/{vim_id}"), None)
        .await;
    let p = tacker_error(&r, 409, "VimInUseException");
    assert!(p["detail"].as_str().unwrap().contains(&instance), "{p}");
    let r = h
        .call(
            Method::DELETE,
            &format!("/v1.0/vims/{}", other["id"].as_str().unwrap()),
            None,
        )
        .await;
    assert_eq!(r.status.as_u16(), 204);
}

#[tokio::test]
async fn instantiate_without_any_vim_and_no_default_is_unchanged() {
    let h = harness().await;
    register(&h, openstack_body("not-default", false)).await;
    h.onboard(zip_dir(Path::new(HELLO))).await;
    let instance = h.create_instance().await;
    // Several drivers and no VIM named: the request still names none (no default was added).
    let r = h
        .call(
            Method::POST,
            &format!("/vnflcm/v2/vnf_instances/{instance}/instantiate"),
            Some(json!({"flavourId": "simple"})),
        )
        .await;
    assert!(
        r.status.is_client_error(),
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    let inst = h
        .call(
            Method::GET,
            &format!("/vnflcm/v2/vnf_instances/{instance}"),
            None,
        )
        .await
        .json();
    assert!(
        inst.get("vimConnectionInfo")
            .is_none_or(|v| v.as_object().is_none_or(|m| m.is_empty())),
        "{inst:#}"
    );
}

/// The `vim` of `GET /vnfm/v1/vims/{id}` (the registry's own view).
async fn native(h: &Harness, id: &str) -> Value {
    h.call(Method::GET, &format!("/vnfm/v1/vims/{id}"), None)
        .await
        .json()
}

#[tokio::test]
async fn tackers_kubernetes_vim_files_register_as_they_are() {
    let h = harness().await;
    // A multi-line double-quoted `ssl_ca_cert` in vim.yaml: YAML folds its line breaks into
    // spaces. Stored as issued.
    let mut folded = kubernetes_body("folded");
    folded["vim"]["auth_cred"]["ssl_ca_cert"] = json!(CA.trim_end().replace('\n', " "));
    let vim = register(&h, folded).await;
    assert!(vim.get("warnings").is_none(), "{vim:#}");
    assert_eq!(vim["auth_cred"]["ssl_ca_cert"], CA);
    // CNFs on a cluster registered the Tacker way go where Tacker puts them.
    assert_eq!(vim["extra"]["namespaceRule"], "tacker", "{vim:#}");
    let stored = native(&h, vim["id"].as_str().unwrap()).await;
    assert_eq!(stored["interfaceInfo"]["ssl_ca_cert"], CA, "{stored:#}");
    assert!(
        stored["interfaceInfo"]
            .get("insecureSkipTlsVerify")
            .is_none()
    );

    // `gen_vim_config.sh`'s "None", and no CA at all: as on Tacker, the API server's
    // certificate is not verified, and the VIM says so.
    let mut last = String::new();
    for (name, ca) in [("none", Some("None")), ("absent", None)] {
        let mut body = kubernetes_body(name);
        let cred = body["vim"]["auth_cred"].as_object_mut().unwrap();
        match ca {
            Some(c) => cred.insert("ssl_ca_cert".into(), json!(c)),
            None => cred.remove("ssl_ca_cert"),
        };
        let vim = register(&h, body).await;
        let warning = vim["warnings"][0].as_str().unwrap_or_default();
        assert!(warning.contains("not verified"), "{vim:#}");
        assert!(vim["auth_cred"].get("ssl_ca_cert").is_none(), "{vim:#}");
        let stored = native(&h, vim["id"].as_str().unwrap()).await;
        assert_eq!(
            stored["interfaceInfo"]["insecureSkipTlsVerify"], true,
            "{stored:#}"
        );
        assert!(stored["interfaceInfo"].get("ssl_ca_cert").is_none());
        last = vim["id"].as_str().unwrap().to_owned();
    }

    // The CA given later: verified again, the warning gone.
    let r = h
        .call(
            Method::PUT,
            &format!("/v1.0/vims/{last}"),
            Some(json!({"vim": {"auth_cred": {"ssl_ca_cert": CA}}})),
        )
        .await;
    assert_eq!(
        r.status.as_u16(),
        200,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    let vim = show(&h, &last).await;
    assert!(vim.get("warnings").is_none(), "{vim:#}");
    let stored = native(&h, &last).await;
    assert_eq!(stored["interfaceInfo"]["ssl_ca_cert"], CA, "{stored:#}");
    assert!(
        stored["interfaceInfo"]
            .get("insecureSkipTlsVerify")
            .is_none()
    );

    // A certificate that is not one: refused at registration, naming the attribute, never
    // repeating its bytes.
    let body_b64 = "MIIBszCCAVmgAwIBAgIUQ0E=";
    let mut broken = kubernetes_body("broken");
    broken["vim"]["auth_cred"]["ssl_ca_cert"] = json!(format!(
        "-----BEGIN CERTIFICATE-----\n{body_b64}\n-----END CERTIFICATE-----"
    ));
    let r = h.call(Method::POST, "/v1.0/vims", Some(broken)).await;
    let p = tacker_error(&r, 400, "BadRequest");
    let detail = p["detail"].as_str().unwrap();
    assert!(
        detail.contains("auth_cred/ssl_ca_cert") && detail.contains("not an X.509 certificate"),
        "{p}"
    );
    assert!(!String::from_utf8_lossy(&r.body).contains(body_b64), "{p}");
}

#[tokio::test]
async fn tackers_legacy_vim_type_names_mean_the_etsi_types() {
    let h = harness().await;
    // SOL003's VIM registration with Tacker's name: stored as the ETSI type.
    let r = h
        .call(
            Method::POST,
            "/vnfm/v1/vims",
            Some(json!({
                "name": "legacy-k8s", "vimType": "kubernetes",
                "interfaceInfo": {"endpoint": "https://10.0.0.1:6443", "ssl_ca_cert": CA},
                "accessInfo": {"bearer_token": K8S_TOKEN}
            })),
        )
        .await;
    assert_eq!(
        r.status.as_u16(),
        201,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    assert_eq!(r.json()["vimType"], "ETSINFV.KUBERNETES.V_1");

    // An instantiate request of Tacker's v1 guides: `"vimType": "openstack"` with the id of a
    // registered VIM.
    let vim = register(&h, openstack_body("legacy-os", false)).await;
    let vim_id = vim["id"].as_str().unwrap();
    h.onboard(zip_dir(Path::new(HELLO))).await;
    for (n, vim_type) in ["openstack", "ETSINFV.OPENSTACK_KEYSTONE.V_2"]
        .iter()
        .enumerate()
    {
        let instance = h.create_instance().await;
        let occ = h
            .task(
                &instance,
                "instantiate",
                json!({"flavourId": "simple", "vimConnectionInfo": {
                    "vim1": {"vimId": vim_id, "vimType": vim_type}}}),
            )
            .await;
        assert_eq!(occ["operationState"], "COMPLETED", "{n}: {occ:#}");
        let inst = h
            .call(
                Method::GET,
                &format!("/vnflcm/v2/vnf_instances/{instance}"),
                None,
            )
            .await
            .json();
        assert_eq!(
            inst["vimConnectionInfo"]["vim1"]["vimType"], "ETSINFV.OPENSTACK_KEYSTONE.V_3",
            "{inst:#}"
        );
    }
}

/// Tacker's default-VIM flow without infrastructure: the test VIM (`--enable-test-vim`)
/// registered as the default, then `{"flavourId": "simple"}`.
#[tokio::test]
async fn the_test_vim_registers_and_serves_the_default_vim_flow() {
    let h = harness().await;
    let r = h
        .call(
            Method::POST,
            "/vnfm/v1/vims",
            Some(json!({"name": "try-me", "vimType": "TEST.NOOP.V_1",
                        "extra": {"isDefault": true}})),
        )
        .await;
    assert_eq!(
        r.status.as_u16(),
        201,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    let vim_id = r.json()["id"].as_str().unwrap().to_owned();
    // It takes no credentials (they would be kept in clear).
    let r = h
        .call(
            Method::POST,
            "/vnfm/v1/vims",
            Some(json!({"name": "with-secret", "vimType": "TEST.NOOP.V_1",
                        "accessInfo": {"password": OS_PASSWORD}})),
        )
        .await;
    let p = r.problem(400);
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("/accessInfo/password"),
        "{p}"
    );
    assert_no_secret(&r);
    h.onboard(zip_dir(Path::new(HELLO))).await;
    let instance = h.create_instance().await;
    let occ = h
        .task(&instance, "instantiate", json!({"flavourId": "simple"}))
        .await;
    assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");
    assert_eq!(
        occ["operationParams"]["vimConnectionInfo"]["default"]["vimId"], vim_id,
        "{occ:#}"
    );
}

/// Registers a test VIM named `name` through the SOL003 VIM API; its id.
async fn test_vim(h: &Harness, name: &str, is_default: bool) -> String {
    let r = h
        .call(
            Method::POST,
            "/vnfm/v1/vims",
            Some(json!({"name": name, "vimType": "TEST.NOOP.V_1",
                        "extra": {"isDefault": is_default}})),
        )
        .await;
    assert_eq!(
        r.status.as_u16(),
        201,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    r.json()["id"].as_str().unwrap().to_owned()
}

/// The keys of the instance's `vimConnectionInfo`.
async fn vim_keys(h: &Harness, instance: &str) -> Vec<String> {
    let inst = h
        .call(
            Method::GET,
            &format!("/vnflcm/v2/vnf_instances/{instance}"),
            None,
        )
        .await
        .json();
    inst["vimConnectionInfo"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

/// A request's `vimConnectionInfo` is applied to the instance's by JSON Merge Patch (SOL003):
/// a `null` entry removes the connection the instance holds under that key. A default-VIM
/// INSTANTIATE that failed and was rolled back, a connection set by MODIFY_INFO, then an
/// INSTANTIATE with Tacker's `"default": null`, the other key `null` and another VIM: only that
/// VIM is left; a CHANGE_EXT_CONN then replaces it the same way.
#[tokio::test]
async fn null_vim_connections_remove_what_the_instance_holds() {
    let h = harness().await;
    h.onboard(zip_dir(Path::new(HELLO))).await;
    let default_id = test_vim(&h, "the-default", true).await;
    let second_id = test_vim(&h, "second", false).await;
    let instance = h.create_instance().await;
    let failed = h
        .task(
            &instance,
            "instantiate",
            json!({"flavourId": "simple", "additionalParams": {"testVim": {"failures": 100}}}),
        )
        .await;
    assert_eq!(failed["operationState"], "FAILED_TEMP", "{failed:#}");
    assert_eq!(
        failed["operationParams"]["vimConnectionInfo"]["default"]["vimId"], default_id,
        "{failed:#}"
    );
    let r = h
        .call(
            Method::POST,
            &format!(
                "/vnflcm/v2/vnf_lcm_op_occs/{}/rollback",
                failed["id"].as_str().unwrap()
            ),
            None,
        )
        .await;
    assert_eq!(
        r.status.as_u16(),
        202,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    let rolled = h
        .wait_op(&format!(
            "/vnflcm/v2/vnf_lcm_op_occs/{}",
            failed["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(rolled["operationState"], "ROLLED_BACK", "{rolled:#}");
    // A connection the not-instantiated instance holds (set by MODIFY_INFO).
    let r = h
        .call(
            Method::PATCH,
            &format!("/vnflcm/v2/vnf_instances/{instance}"),
            Some(json!({"vimConnectionInfo": {"old": {"vimId": default_id, "vimType": "TEST.NOOP.V_1"}}})),
        )
        .await;
    let modified = h.accepted_op(&r).await;
    assert_eq!(modified["operationState"], "COMPLETED", "{modified:#}");
    assert_eq!(vim_keys(&h, &instance).await, ["old"]);
    let occ = h
        .task(
            &instance,
            "instantiate",
            json!({"flavourId": "simple", "vimConnectionInfo": {
                "default": null, "old": null,
                "vim1": {"vimId": second_id, "vimType": "TEST.NOOP.V_1"}}}),
        )
        .await;
    assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");
    // The occurrence keeps the request as it was sent, removals included.
    assert_eq!(
        occ["operationParams"]["vimConnectionInfo"]["old"],
        Value::Null,
        "{occ:#}"
    );
    assert_eq!(vim_keys(&h, &instance).await, ["vim1"]);
    // CHANGE_EXT_CONN: a removal and a new connection.
    let occ = h
        .task(
            &instance,
            "change_ext_conn",
            json!({"extVirtualLinks": [{"id": "ext1", "resourceId": "net1", "extCps": [
                       {"cpdId": "web_cp", "cpConfig": {"c1": {"createExtLinkPort": true}}}]}],
                   "vimConnectionInfo": {"vim1": null,
                        "vim2": {"vimId": default_id, "vimType": "TEST.NOOP.V_1"}}}),
        )
        .await;
    assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");
    assert_eq!(vim_keys(&h, &instance).await, ["vim2"]);
}
