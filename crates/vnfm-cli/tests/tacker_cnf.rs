//! Tacker's multi-namespace CNF flow replayed with the real OpenStack client on the real
//! Kubernetes control plane of the test environment (`scripts/test-env/kubernetes.sh`): a
//! Kubernetes VIM registered from a `vim.yaml` as Tacker's documentation writes it (its
//! `project_name` names a namespace Tacker never deploys to), a Tacker CNF package from the
//! corpus onboarded with `openstack vnf package upload`, and two instances instantiated with
//! request files as Tacker's guides write them (`"vimType": "kubernetes"`, the VIM's `vimId`,
//! `additionalParams.namespace` `multi-namespace01` and `multi-namespace02`, as Tacker's
//! multi-tenant functional test asks), given to `openstack vnflcm instantiate ID FILE`
//! unchanged. As on Tacker, each Deployment lands in its request's namespace, neither in the
//! VIM's nor in the one the manifest names, the two instances do not collide, and TERMINATE
//! removes them.
//!
//! Needs what `openstack_client` needs and the Kubernetes control plane (`KUBECONFIG`,
//! `VNFM_TEST_KUBE_*`, and `kubectl` to look at the cluster).

use std::process::Command;

use serde_json::{Value, json};

use crate::openstack_client::{Lcm, Setup, wait_for};
use crate::tacker_package::{onboard_corpus_package, register_vim};

/// A Tacker CNF package of the corpus (its VDU2 Deployment `vdu2` names namespace `default`).
const PACKAGE: &str = "tacker/v2-cnf-instantiate-resources";
/// The namespace the VIM's `project_name` names (Tacker never deploys there).
const VIM_NAMESPACE: &str = "tacker-vim-namespace";
/// The namespaces of Tacker's multi-tenant functional test.
const NAMESPACES: [&str; 2] = ["multi-namespace01", "multi-namespace02"];
/// The Deployment of `Files/kubernetes/deployment.yaml` (VDU2), which names `default`.
const DEPLOYMENT: &str = "vdu2";

/// `kubectl ARGS` against `KUBECONFIG`: its output when it succeeds, `None` otherwise.
fn kubectl(args: &[&str]) -> Option<String> {
    let out = Command::new("kubectl")
        .args(["--kubeconfig", &vnfm_test_env::var("KUBECONFIG")])
        .args(args)
        .output()
        .expect("kubectl runs (the test environment's Kubernetes tools)");
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The Deployment [`DEPLOYMENT`] in namespace `ns`, if there is one.
fn deployment_in(ns: &str) -> Option<Value> {
    kubectl(&["get", "deployment", DEPLOYMENT, "-n", ns, "-o", "json"])
        .map(|text| serde_json::from_str(&text).expect("kubectl prints JSON"))
}

/// A Kubernetes `vim.yaml` as Tacker's documentation writes it, for the test cluster.
fn vim_yaml() -> String {
    let server = vnfm_test_env::var("VNFM_TEST_KUBE_SERVER");
    let token = std::fs::read_to_string(vnfm_test_env::var("VNFM_TEST_KUBE_TOKEN_FILE"))
        .expect("the cluster's token file");
    let ca = std::fs::read_to_string(vnfm_test_env::var("VNFM_TEST_KUBE_CA_FILE"))
        .expect("the cluster's CA file");
    // A double-quoted YAML scalar, as JSON writes it.
    let quoted = |s: &str| serde_json::to_string(s.trim()).unwrap();
    format!(
        "auth_url: {}\nbearer_token: {}\nssl_ca_cert: {}\nproject_name: {}\ntype: \"kubernetes\"\n",
        quoted(&server),
        quoted(&token),
        quoted(&ca),
        quoted(VIM_NAMESPACE)
    )
}

#[vnfm_test_env::needs(keystone, openstack_cli, kubernetes, corpus)]
#[test]
fn tackers_multi_namespace_cnf_flow_on_the_real_cluster() {
    for ns in NAMESPACES.iter().chain([&VIM_NAMESPACE]) {
        // What an interrupted earlier run left.
        kubectl(&[
            "delete",
            "deployment",
            DEPLOYMENT,
            "-n",
            ns,
            "--ignore-not-found",
            "--wait",
        ]);
    }
    let s = Setup::new();
    let os = &s.os;
    let vim_id = register_vim(&s, &vim_yaml(), "cluster", "kubernetes");
    let vnfd = onboard_corpus_package(&s, PACKAGE, "cnf");

    // Tacker's v1 guides: a list of VIM connections naming the VIM and its legacy type.
    let lcm = Lcm::new(os, "1");
    let mut instances = Vec::new();
    for ns in NAMESPACES {
        let created = lcm.json(&["vnflcm", "create", &vnfd, "--name", ns]);
        let vnf = created["ID"].as_str().expect("ID").to_owned();
        let file = lcm.file(
            &format!("instantiate-{ns}.json"),
            &json!({
                "flavourId": "simple",
                "additionalParams": {
                    "lcm-kubernetes-def-files": ["Files/kubernetes/deployment.yaml"],
                    "namespace": ns
                },
                "vimConnectionInfo": [
                    {"id": "742f1fc7-6b46-4a8e-9e07-20c9c1e6f3e3", "vimId": vim_id, "vimType": "kubernetes"}
                ]
            }),
        );
        lcm.ok(&["vnflcm", "instantiate", &vnf, &file]);
        let op = lcm.next_op(&vnf, "INSTANTIATE");
        assert_eq!(op["Operation State"], "COMPLETED", "{ns}: {op}");
        instances.push(vnf);
    }
    // Each Deployment is in its request's namespace, as on Tacker: not in the VIM's, and not
    // in the one the manifest names (`default`); the two did not collide.
    for ns in NAMESPACES {
        let deployment =
            deployment_in(ns).unwrap_or_else(|| panic!("no Deployment {DEPLOYMENT} in {ns}"));
        assert_eq!(deployment["metadata"]["namespace"], ns, "{deployment}");
    }
    assert!(
        deployment_in(VIM_NAMESPACE).is_none(),
        "nothing goes to the VIM's namespace"
    );
    for vnf in &instances {
        let shown = lcm.json(&["vnflcm", "show", vnf]);
        assert_eq!(shown["Instantiation State"], "INSTANTIATED", "{shown}");
        let text = shown.to_string();
        assert!(
            text.contains(&vim_id),
            "the instance names the VIM: {shown}"
        );
    }

    // TERMINATE removes each instance's Deployment.
    for (vnf, ns) in instances.iter().zip(NAMESPACES) {
        lcm.ok(&["vnflcm", "terminate", "--termination-type", "FORCEFUL", vnf]);
        let op = lcm.next_op(vnf, "TERMINATE");
        assert_eq!(op["Operation State"], "COMPLETED", "{ns}: {op}");
        wait_for(&format!("the Deployment in {ns} to go"), || {
            deployment_in(ns).is_none().then_some(())
        });
    }
}
