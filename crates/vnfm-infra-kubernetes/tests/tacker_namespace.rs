//! Tacker's namespace rule (VIM `extra.namespaceRule: tacker`) on the real control plane of
//! `KUBECONFIG` (`scripts/test-env/kubernetes.sh`; built ignored without it): an instance goes
//! to the namespace its manifests name, never the VIM's; a second instance of the same package
//! then collides with the first, as on Tacker; manifests naming different namespaces are
//! refused with the files; without the rule the VIM's namespace wins.

use crate::support;

use std::sync::Arc;

use serde_json::{Value, json};
use support::real::{Kube, in_namespace};
use support::*;
use vnfm_driver_api::memory::MemArtifacts;
use vnfm_driver_api::{InfraStep, ResolvedVim, ResourceTarget};
use vnfm_types::{LcmOperationType as Op, TerminationType};

/// A VNFD with one flavour `simple` and VDU `VDU1` named `web`.
fn vnfd() -> vnfm_descriptor::Vnfd {
    serde_json::from_value(json!({
        "descriptorId": "vnfd-tacker-ns", "descriptorVersion": "1.0", "provider": "Acme",
        "productName": "CNF", "softwareVersion": "1.0", "toscaDefinitionsVersion": "tosca_simple_yaml_1_3",
        "vnfNodeType": "acme.CNF", "entryDefinitions": "Definitions/top.yaml",
        "flavours": [{"id": "simple", "file": "Definitions/df.yaml", "vdus": [
            {"id": "VDU1", "name": "web", "kind": "osContainerDeployableUnit",
             "nodeType": "tosca.nodes.nfv.Vdu.OsContainerDeployableUnit",
             "minInstances": 1, "maxInstances": 3}]}]
    }))
    .expect("vnfd")
}

/// The package: a Deployment naming namespace `ns` (as Tacker's multi-namespace test package
/// names `multi-namespace02`), a ConfigMap naming none, and a ConfigMap naming `other`
/// (deployed only by the request that lists it).
fn package(ns: &str, other: &str) -> Arc<MemArtifacts> {
    let deployment = format!(
        "apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: {ns}}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers: [{{name: web, image: nginx}}]
"
    );
    Arc::new(
        MemArtifacts::new()
            .with("Files/kubernetes/deployment.yaml", deployment)
            .with(
                "Files/kubernetes/config.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\ndata: {a: b}\n",
            )
            .with(
                "Files/kubernetes/elsewhere.yaml",
                format!(
                    "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: other, namespace: {other}}}\ndata: {{a: b}}\n"
                ),
            ),
    )
}

/// The test cluster's VIM with `accessInfo.namespace` `vim_ns` and `extra` `extra`.
fn vim(kube: &Kube, vim_ns: &str, extra: Value) -> ResolvedVim {
    let mut info = kube.vim_info.clone();
    info["accessInfo"]["namespace"] = json!(vim_ns);
    info["extra"] = extra;
    ResolvedVim::new(
        "vim1",
        serde_json::from_value(info).expect("VIM connection"),
    )
}

fn instantiate(files: &[&str]) -> (InfraStep, Value) {
    (
        InfraStep::Instantiate {
            target: ResourceTarget {
                flavour_id: "simple".into(),
                vdu_instances: [("VDU1".to_string(), 1)].into(),
                ..Default::default()
            },
        },
        json!({"flavourId": "simple", "additionalParams": {"lcm-kubernetes-def-files": files}}),
    )
}

fn owner(object: &Value) -> &str {
    object["metadata"]["labels"]["vnfm.io/vnf-instance-id"]
        .as_str()
        .unwrap_or("")
}

#[vnfm_test_env::needs(kwok)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_tackers_rule_cnfs_land_in_the_manifests_namespace_and_a_second_instance_collides() {
    in_namespace("tk-ns", &[], |kube, ns| async move {
        let vim_ns = format!("{ns}-vim");
        let files = package(&ns, &format!("{ns}-other"));
        let tacker = vim(&kube, &vim_ns, json!({"namespaceRule": "tacker"}));
        let d = driver();
        let both = [
            "Files/kubernetes/deployment.yaml",
            "Files/kubernetes/config.yaml",
        ];

        let first_id = format!("{ns}-a");
        let mut first = Call::new(vnfd(), files.clone(), tacker.clone(), &first_id);
        let (step, req) = instantiate(&both);
        first
            .run(&d, Op::Instantiate, step, req)
            .await
            .expect("instantiate the first instance");
        let deployment = kube
            .object("apps/v1", "Deployment", Some(&ns), "web")
            .await
            .expect("the Deployment is in the namespace its manifest names");
        assert_eq!(owner(&deployment), first_id);
        let config = kube
            .object("v1", "ConfigMap", Some(&ns), "web-config")
            .await
            .expect("the ConfigMap naming no namespace goes with the others");
        assert_eq!(owner(&config), first_id);
        assert!(
            kube.object("v1", "Namespace", None, &vim_ns)
                .await
                .is_none(),
            "the VIM's namespace was used"
        );
        assert_eq!(first.state["namespace"], json!(ns), "{:#}", first.state);

        // A second instance of the package wants the same objects: it fails, and the first
        // instance's objects stay as they are (its rollback deletes nothing of them).
        let second_id = format!("{ns}-b");
        let mut second = Call::new(vnfd(), files.clone(), tacker.clone(), &second_id);
        let (step, req) = instantiate(&both);
        let err = second
            .run(&d, Op::Instantiate, step, req.clone())
            .await
            .expect_err("the second instance collides with the first");
        let text = err.to_string();
        assert!(
            text.contains(&format!("{ns}/web"))
                && text.contains("not managed by this VNF instance"),
            "{text}"
        );
        second
            .run(&d, Op::Instantiate, InfraStep::RollbackInstantiate, req)
            .await
            .expect("roll the second instance back");
        let deployment = kube
            .object("apps/v1", "Deployment", Some(&ns), "web")
            .await
            .expect("the first instance's Deployment survives the second's rollback");
        assert_eq!(owner(&deployment), first_id);

        // Manifests naming two namespaces are refused before anything is applied.
        let third_id = format!("{ns}-c");
        let mut third = Call::new(vnfd(), files.clone(), tacker, &third_id);
        let (step, req) = instantiate(&[
            "Files/kubernetes/deployment.yaml",
            "Files/kubernetes/elsewhere.yaml",
        ]);
        let text = third
            .run(&d, Op::Instantiate, step, req)
            .await
            .expect_err("manifests naming two namespaces")
            .to_string();
        assert!(
            text.contains(&format!("`{ns}` in Files/kubernetes/deployment.yaml"))
                && text.contains(&format!("`{ns}-other` in Files/kubernetes/elsewhere.yaml")),
            "{text}"
        );
        assert!(
            kube.labelled("vnfm.io/vnf-instance-id", &third_id)
                .await
                .is_empty()
        );

        first
            .run(
                &d,
                Op::Terminate,
                InfraStep::Terminate {
                    termination_type: TerminationType::Forceful,
                    graceful_timeout_seconds: None,
                },
                json!({"terminationType": "FORCEFUL"}),
            )
            .await
            .expect("terminate");
        assert!(
            kube.labelled("vnfm.io/vnf-instance-id", &first_id)
                .await
                .is_empty()
        );
    })
    .await;
}

#[vnfm_test_env::needs(kwok)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_tackers_rule_the_vims_namespace_wins_over_the_manifests() {
    in_namespace("tk-vimns", &[], |kube, ns| async move {
        let manifests_ns = format!("{ns}-manifest");
        let files = package(&manifests_ns, &manifests_ns);
        let id = format!("{ns}-a");
        let mut call = Call::new(vnfd(), files, vim(&kube, &ns, Value::Null), &id);
        let d = driver();
        let (step, req) = instantiate(&["Files/kubernetes/deployment.yaml"]);
        call.run(&d, Op::Instantiate, step, req)
            .await
            .expect("instantiate");
        let deployment = kube
            .object("apps/v1", "Deployment", Some(&ns), "web")
            .await
            .expect("the Deployment is in the VIM's namespace");
        assert_eq!(owner(&deployment), id);
        assert!(
            kube.object("v1", "Namespace", None, &manifests_ns)
                .await
                .is_none()
        );
        call.run(
            &d,
            Op::Terminate,
            InfraStep::Terminate {
                termination_type: TerminationType::Forceful,
                graceful_timeout_seconds: None,
            },
            json!({"terminationType": "FORCEFUL"}),
        )
        .await
        .expect("terminate");
    })
    .await;
}
