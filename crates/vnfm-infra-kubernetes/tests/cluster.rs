//! The same driver code against a real cluster. Ignored by default; run with
//!
//! ```text
//! KUBECONFIG=~/.kube/config cargo test -p vnfm-infra-kubernetes --test cluster -- --ignored
//! ```
//!
//! The current context must use a bearer token or basic auth (the VIM access info the driver
//! takes); the test creates and deletes its own namespace `vnfm-cluster-test-<pid>`.

mod support;

use std::sync::Arc;

use base64::Engine;
use secrecy::ExposeSecret;
use serde_json::{Value, json};
use support::*;
use vnfm_driver_api::memory::MemArtifacts;
use vnfm_driver_api::{HealScope, InfraStep, ResolvedVim, ResourceTarget};
use vnfm_types::{LcmOperationType as Op, ScaleType, TerminationType};

/// The VIM connection of the kubeconfig's current context.
fn vim_from_kubeconfig() -> Option<ResolvedVim> {
    let path = std::env::var("KUBECONFIG").ok()?;
    let cfg = kube::config::Kubeconfig::read_from(&path).expect("readable KUBECONFIG");
    let ctx_name = cfg.current_context.clone()?;
    let ctx = cfg
        .contexts
        .iter()
        .find(|c| c.name == ctx_name)?
        .context
        .clone()?;
    let cluster = cfg
        .clusters
        .iter()
        .find(|c| c.name == ctx.cluster)?
        .cluster
        .clone()?;
    let user = cfg
        .auth_infos
        .iter()
        .find(|a| Some(&a.name) == ctx.user.as_ref())?
        .auth_info
        .clone()?;
    let mut iface = json!({"endpoint": cluster.server?});
    if let Some(ca) = cluster.certificate_authority_data {
        let pem = base64::engine::general_purpose::STANDARD
            .decode(ca)
            .expect("CA data");
        iface["ssl_ca_cert"] = json!(String::from_utf8(pem).expect("PEM"));
    } else if cluster.insecure_skip_tls_verify == Some(true) {
        iface["insecureSkipTlsVerify"] = json!(true);
    }
    let access = match (&user.token, &user.username, &user.password) {
        (Some(t), _, _) => json!({"bearer_token": t.expose_secret()}),
        (None, Some(u), Some(p)) => json!({"username": u, "password": p.expose_secret()}),
        _ => {
            eprintln!(
                "SKIPPED: the current context authenticates with neither a token nor basic auth"
            );
            return None;
        }
    };
    Some(ResolvedVim::new(
        "vim1",
        serde_json::from_value(json!({
            "vimType": "ETSINFV.KUBERNETES.V_1", "interfaceInfo": iface, "accessInfo": access
        }))
        .expect("vim"),
    ))
}

const APP: &str = "apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {mode: $MODE}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: vnfm-test-web}
  ports: [{port: 80}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: vnfm-test-web}}
  template:
    metadata: {labels: {app: vnfm-test-web}}
    spec:
      containers: [{name: web, image: registry.k8s.io/pause:3.9}]
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs cluster"]
async fn a_real_cluster_runs_the_lifecycle() {
    crypto();
    let Some(vim) = vim_from_kubeconfig() else {
        eprintln!("SKIPPED: set KUBECONFIG to a cluster's kubeconfig");
        return;
    };
    let vnfd: vnfm_descriptor::Vnfd = serde_json::from_value(json!({
        "descriptorId": "vnfd-cluster-test", "descriptorVersion": "1.0", "provider": "Acme",
        "productName": "Web", "softwareVersion": "1.0", "toscaDefinitionsVersion": "tosca_simple_yaml_1_2",
        "vnfNodeType": "acme.Web", "entryDefinitions": "Definitions/top.yaml",
        "flavours": [{"id": "simple", "file": "Definitions/df.yaml", "vdus": [
            {"id": "VDU1", "name": "web", "kind": "compute", "nodeType": "tosca.nodes.nfv.Vdu.Compute",
             "minInstances": 1, "maxInstances": 3}],
            "scalingAspects": [{"id": "web_scale", "maxScaleLevel": 2, "stepDeltas": ["d"], "vduDeltas": {"VDU1": {"d": 1}}}]}]
    }))
    .expect("vnfd");
    let files = Arc::new(MemArtifacts::new().with("Files/app.yaml", APP));
    let id = format!("vnfm-cluster-test-{}", std::process::id());
    let mut call = Call::new(vnfd, files, vim, &id);
    let d = driver().with_ready_timeout(std::time::Duration::from_secs(300));
    let target = |n: u32| ResourceTarget {
        flavour_id: "simple".into(),
        vdu_instances: [("VDU1".to_string(), n)].into(),
        ..Default::default()
    };
    let out = call
        .run(
            &d,
            Op::Instantiate,
            InfraStep::Instantiate { target: target(1) },
            json!({"flavourId": "simple", "additionalParams": {
                "lcm-kubernetes-def-files": ["Files/app.yaml"], "MODE": "fast", "namespace": id}}),
        )
        .await
        .expect("instantiate");
    assert_eq!(out.resources.vnfc_resource_info.len(), 1);
    let out = call
        .run(
            &d,
            Op::Scale,
            InfraStep::Scale {
                aspect_id: "web_scale".into(),
                scale_type: ScaleType::ScaleOut,
                steps: 1,
                from: target(1),
                target: target(2),
            },
            json!({"type": "SCALE_OUT", "aspectId": "web_scale"}),
        )
        .await
        .expect("scale");
    assert_eq!(out.resources.vnfc_resource_info.len(), 2);
    call.run(
        &d,
        Op::Heal,
        InfraStep::Heal {
            scope: HealScope::WholeVnf,
        },
        json!({}),
    )
    .await
    .expect("heal");
    let out = call
        .run(
            &d,
            Op::Terminate,
            InfraStep::Terminate {
                termination_type: TerminationType::Graceful,
                graceful_timeout_seconds: Some(10),
            },
            json!({"terminationType": "GRACEFUL"}),
        )
        .await
        .expect("terminate");
    assert!(out.resources.vnfc_resource_info.is_empty());
    assert_eq!(call.state, Value::Null);
}
