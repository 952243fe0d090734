//! Which API server certificates a VIM connection trusts: with `interfaceInfo.ssl_ca_cert`,
//! only those its CA issued (another fails the step at once as permanent, saying what to give,
//! since retrying cannot help until the VIM names the right CA); without one, any, as OpenStack
//! Tacker does (its functional tests give inline connections of an endpoint and a token). On
//! the emulated API server serving HTTPS with the test certificates of `tests/tls/` (a test
//! CA, the server's certificate for 127.0.0.1 it issued, and another CA), and on the real
//! control plane of `KUBECONFIG` (its CA is the test environment's own, in no system trust
//! store).

use crate::support;

use std::net::SocketAddr;
use std::sync::Arc;

use serde_json::{Value, json};
use support::real::Kube;
use support::*;
use vnfm_driver_api::memory::MemArtifacts;
use vnfm_driver_api::{DriverError, InfraOutcome, InfraStep, ResolvedVim, ResourceTarget};
use vnfm_kube_emulator::{Emulator, EmulatorConfig, TlsIdentity};
use vnfm_types::LcmOperationType as Op;

const CA: &str = include_str!("tls/ca.pem");
const OTHER_CA: &str = include_str!("tls/other-ca.pem");

/// The emulated API server on HTTPS, with the certificate [`CA`] issued.
async fn tls_emulator() -> Emulator {
    crypto();
    let identity = TlsIdentity {
        cert_chain_pem: include_str!("tls/server.pem").into(),
        key_pem: include_str!("tls/server-key.pem").into(),
    };
    Emulator::start_tls(
        SocketAddr::from(([127, 0, 0, 1], 0)),
        EmulatorConfig::default(),
        &identity,
    )
    .await
    .expect("emulator on HTTPS")
}

/// `info` with `ssl_ca_cert` set to `ca` (removed for `None`).
fn with_ca(mut info: Value, ca: Option<&str>) -> ResolvedVim {
    let iface = info["interfaceInfo"]
        .as_object_mut()
        .expect("interfaceInfo");
    iface.remove("ssl_ca_cert");
    if let Some(ca) = ca {
        iface.insert("ssl_ca_cert".into(), json!(ca));
    }
    ResolvedVim::new("vim1", serde_json::from_value(info).expect("VIM"))
}

/// Instantiates one ConfigMap in namespace `namespace` through `vim`.
async fn instantiate_config_map(
    vim: ResolvedVim,
    namespace: &str,
) -> Result<InfraOutcome, DriverError> {
    let vnfd: vnfm_descriptor::Vnfd = serde_json::from_value(json!({
        "descriptorId": "vnfd-tls", "descriptorVersion": "1.0", "provider": "Acme",
        "productName": "CNF", "softwareVersion": "1.0", "toscaDefinitionsVersion": "tosca_simple_yaml_1_3",
        "vnfNodeType": "acme.CNF", "entryDefinitions": "Definitions/top.yaml",
        "flavours": [{"id": "simple", "file": "Definitions/df.yaml", "vdus": [
            {"id": "VDU1", "name": "web", "kind": "osContainerDeployableUnit",
             "nodeType": "tosca.nodes.nfv.Vdu.OsContainerDeployableUnit",
             "minInstances": 1, "maxInstances": 1}]}]
    }))
    .expect("vnfd");
    let files = Arc::new(MemArtifacts::new().with(
        "Files/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: tls-trust}\ndata: {a: b}\n",
    ));
    let mut call = Call::new(vnfd, files, vim, namespace);
    call.run(
        &driver(),
        Op::Instantiate,
        InfraStep::Instantiate {
            target: ResourceTarget {
                flavour_id: "simple".into(),
                vdu_instances: [("VDU1".to_string(), 1)].into(),
                ..Default::default()
            },
        },
        json!({"flavourId": "simple", "additionalParams": {
            "lcm-kubernetes-def-files": ["Files/cm.yaml"], "namespace": namespace}}),
    )
    .await
}

/// Asserts that `result` failed as permanent for a certificate that is not trusted, saying
/// to give the CA, without `token`.
fn assert_untrusted(result: Result<InfraOutcome, DriverError>, token: &str) {
    let e = result.expect_err("the server's certificate is not trusted");
    let message = e.to_string();
    assert_eq!(e.kind(), "permanent", "{message}");
    assert!(!e.is_retryable(), "{message}");
    assert!(
        message.contains("not trusted") && message.contains("interfaceInfo.ssl_ca_cert"),
        "{message}"
    );
    assert!(!message.contains(token), "{message}");
}

#[tokio::test]
async fn without_a_ca_certificate_the_api_server_is_reached_unverified_as_on_tacker() {
    let emu = tls_emulator().await;
    let vim = with_ca(vim_info(&emu, &emu.token()), None);
    instantiate_config_map(vim, "tls-none")
        .await
        .expect("instantiated without verifying the server's certificate");
    assert!(
        emu.object("v1", "ConfigMap", Some("tls-none"), "tls-trust")
            .is_some()
    );
}

#[tokio::test]
async fn with_a_ca_certificate_only_the_servers_it_issued_are_trusted() {
    let emu = tls_emulator().await;
    let vim = with_ca(vim_info(&emu, &emu.token()), Some(CA));
    instantiate_config_map(vim, "tls-ca")
        .await
        .expect("instantiated through the server its CA certifies");
    assert!(
        emu.object("v1", "ConfigMap", Some("tls-ca"), "tls-trust")
            .is_some()
    );
    let token = emu.token();
    let vim = with_ca(vim_info(&emu, &token), Some(OTHER_CA));
    assert_untrusted(instantiate_config_map(vim, "tls-other").await, &token);
    assert!(
        emu.object("v1", "ConfigMap", Some("tls-other"), "tls-trust")
            .is_none()
    );
}

#[vnfm_test_env::needs(kubeconfig)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_certificate_another_ca_issued_fails_the_step_as_permanent_naming_the_remedy() {
    let kube = Kube::get();
    assert!(
        kube.vim_info["interfaceInfo"].get("ssl_ca_cert").is_some(),
        "the test environment's kubeconfig names its CA"
    );
    let vim = with_ca(kube.vim_info.clone(), Some(OTHER_CA));
    let token = kube.vim_info["accessInfo"]["bearer_token"]
        .as_str()
        .expect("token");
    assert_untrusted(instantiate_config_map(vim, "tls-trust").await, token);
}
