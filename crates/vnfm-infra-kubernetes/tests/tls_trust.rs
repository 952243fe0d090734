//! An API server whose certificate the VIM connection does not make trusted: the step fails
//! at once as permanent (retrying cannot help until the VIM names its CA), saying what to
//! give, on the real control plane of `KUBECONFIG` (its CA is the test environment's own, in
//! no system trust store).

use crate::support;

use std::sync::Arc;

use serde_json::json;
use support::real::Kube;
use support::*;
use vnfm_driver_api::memory::MemArtifacts;
use vnfm_driver_api::{InfraStep, ResolvedVim, ResourceTarget};
use vnfm_types::LcmOperationType as Op;

#[vnfm_test_env::needs(kubeconfig)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_certificate_without_its_ca_fails_the_step_as_permanent_naming_the_remedy() {
    let kube = Kube::get();
    let mut info = kube.vim_info.clone();
    let iface = info["interfaceInfo"]
        .as_object_mut()
        .expect("interfaceInfo");
    assert!(
        iface.remove("ssl_ca_cert").is_some(),
        "the test environment's kubeconfig names its CA"
    );
    let vim = ResolvedVim::new("vim1", serde_json::from_value(info).expect("VIM"));
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
    let mut call = Call::new(vnfd, files, vim, "tls-trust");
    let e = call
        .run(
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
                "lcm-kubernetes-def-files": ["Files/cm.yaml"], "namespace": "tls-trust"}}),
        )
        .await
        .expect_err("the server's certificate is not trusted");
    let message = e.to_string();
    assert_eq!(e.kind(), "permanent", "{message}");
    assert!(!e.is_retryable(), "{message}");
    assert!(
        message.contains("not trusted") && message.contains("interfaceInfo.ssl_ca_cert"),
        "{message}"
    );
    let token = kube.vim_info["accessInfo"]["bearer_token"]
        .as_str()
        .expect("token");
    assert!(!message.contains(token), "{message}");
}
