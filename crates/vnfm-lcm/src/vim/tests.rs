//! Tests of VIM access validation (OpenStack and Kubernetes, errors naming the attribute) and
//! of the merge patch that keeps redacted secrets.

use serde_json::{Value, json};
use vnfm_types::VimConnectionInfo;

use super::*;
use crate::vim::redact::merge_patch;

fn info(v: Value) -> VimConnectionInfo {
    serde_json::from_value(v).unwrap()
}

fn err_pointer(v: Value) -> String {
    match VimAccess::parse(&info(v)).unwrap_err() {
        LcmError::InvalidRequest { pointer, .. } | LcmError::Unprocessable { pointer, .. } => {
            pointer
        }
        other => panic!("unexpected {other:?}"),
    }
}

fn os(access: Value) -> Value {
    json!({"vimType": OPENSTACK, "interfaceInfo": {"endpoint": "http://ks/v3"}, "accessInfo": access})
}

#[test]
fn openstack_validation_names_the_field() {
    let ok = json!({"username": "u", "password": "p", "project": "nfv",
                    "projectDomain": "Default", "userDomain": "Default"});
    assert!(VimAccess::parse(&info(os(ok.clone()))).is_ok());
    let mut no_pw = ok.clone();
    no_pw.as_object_mut().unwrap().remove("password");
    assert_eq!(err_pointer(os(no_pw)), "/accessInfo/password");
    let mut no_pd = ok.clone();
    no_pd.as_object_mut().unwrap().remove("projectDomain");
    assert_eq!(err_pointer(os(no_pd)), "/accessInfo/projectDomain");
    let mut no_ud = ok.clone();
    no_ud.as_object_mut().unwrap().remove("userDomain");
    assert_eq!(err_pointer(os(no_ud)), "/accessInfo/userDomain");
    let mut unknown = ok.clone();
    unknown["pasword"] = json!("typo");
    assert_eq!(err_pointer(os(unknown)), "/accessInfo/pasword");
    let mut number = ok.clone();
    number["password"] = json!(1234);
    assert_eq!(err_pointer(os(number)), "/accessInfo/password");
    assert_eq!(
        err_pointer(json!({"vimType": OPENSTACK, "accessInfo": ok})),
        "/interfaceInfo/endpoint"
    );
    assert_eq!(
        err_pointer(os(json!({"applicationCredentialId": "a"}))),
        "/accessInfo/applicationCredentialSecret"
    );
    assert_eq!(
        err_pointer(os(json!({"applicationCredentialId": "a", "username": "u"}))),
        "/accessInfo/applicationCredentialId"
    );
    let app = VimAccess::parse(&info(os(
        json!({"applicationCredentialId": "a", "applicationCredentialSecret": "s"}),
    )))
    .unwrap();
    assert!(matches!(
        app,
        VimAccess::OpenStack(OpenStackAccess {
            credentials: OpenStackCredentials::ApplicationCredential { .. },
            ..
        })
    ));
}

#[test]
fn kubernetes_validation_names_the_field() {
    let k = |iface: Value, access: Value| json!({"vimType": KUBERNETES, "interfaceInfo": iface, "accessInfo": access});
    let ep = json!({"endpoint": "https://k8s:6443"});
    assert_eq!(
        err_pointer(k(ep.clone(), json!({}))),
        "/accessInfo/bearer_token"
    );
    assert_eq!(
        err_pointer(k(ep.clone(), json!({"username": "u"}))),
        "/accessInfo/password"
    );
    assert_eq!(
        err_pointer(k(ep.clone(), json!({"bearer_token": "t", "password": "p"}))),
        "/accessInfo/bearer_token"
    );
    assert_eq!(
        err_pointer(k(
            json!({"endpoint": "ftp://x"}),
            json!({"bearer_token": "t"})
        )),
        "/interfaceInfo/endpoint"
    );
    assert_eq!(
        err_pointer(k(
            json!({"endpoint": "https://k", "ssl_ca_cert": "nope"}),
            json!({"bearer_token": "t"})
        )),
        "/interfaceInfo/ssl_ca_cert"
    );
    assert_eq!(
        err_pointer(k(
            ep.clone(),
            json!({"bearer_token": "t", "namespace": "Bad_NS"})
        )),
        "/accessInfo/namespace"
    );
    assert_eq!(
        err_pointer(json!({"vimType": "kubernetes", "accessInfo": {}})),
        "/vimType"
    );
    // The camelCase alias is normalized to the canonical name.
    let a = VimAccess::parse(&info(k(ep.clone(), json!({"bearerToken": "t"})))).unwrap();
    let c = a.canonical(&info(k(ep, json!({"bearerToken": "t"}))));
    assert_eq!(
        c.access_info.unwrap().get("bearer_token"),
        Some(&json!("t"))
    );
}

#[test]
fn merge_patch_keeps_redacted_and_removes_null() {
    let mut t = json!({"a": "1", "password": "old", "o": {"x": 1}})
        .as_object()
        .unwrap()
        .clone();
    let p = json!({"a": null, "password": "***", "o": {"y": 2}, "n": "v"})
        .as_object()
        .unwrap()
        .clone();
    merge_patch(&mut t, &p, true);
    assert_eq!(
        Value::Object(t),
        json!({"password": "old", "o": {"x": 1, "y": 2}, "n": "v"})
    );
}
