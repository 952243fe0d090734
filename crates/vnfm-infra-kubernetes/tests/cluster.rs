//! The driver's lifecycle against the real cluster of `KUBECONFIG` (`scripts/test.sh` starts
//! one with `scripts/test-env/kubernetes.sh`; built ignored without `KUBECONFIG`, see
//! `build.rs`). Against a cluster of your own:
//!
//! ```text
//! KUBECONFIG=~/.kube/config cargo test -p vnfm-infra-kubernetes --test integration cluster::
//! ```
//!
//! The current context must use a bearer token or basic auth (the VIM access info the driver
//! takes); its CA comes from `certificate-authority-data` or the `certificate-authority` file.
//! The test works in its own namespace `vnfm-cluster-test-<pid>` (with cluster-scoped volumes
//! and a storage class named after it) and removes all of it also when a step fails.
//! The StatefulSet's claims bind to the test's own host-path volumes, so no provisioner is
//! needed.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use support::real::Kube;
use support::*;
use vnfm_driver_api::memory::MemArtifacts;
use vnfm_driver_api::{HealScope, HealVnfc, InfraOutcome, InfraStep, ResolvedVim, ResourceTarget};
use vnfm_infra_kubernetes::access::ClusterAccess;
use vnfm_infra_kubernetes::cluster::Cluster;
use vnfm_infra_kubernetes::plan::Planned;
use vnfm_types::{LcmOperationType as Op, ScaleType, TerminationType};

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

/// A StatefulSet whose claims bind to the test's own volumes ($ID names them).
const DB: &str = "apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: $ID}
provisioner: kubernetes.io/no-provisioner
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: $ID-0}
spec:
  storageClassName: $ID
  capacity: {storage: 10Mi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: /tmp/$ID-0}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: $ID-1}
spec:
  storageClassName: $ID
  capacity: {storage: 10Mi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: /tmp/$ID-1}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 1
  serviceName: db
  selector: {matchLabels: {app: vnfm-test-db}}
  template:
    metadata: {labels: {app: vnfm-test-db}}
    spec:
      containers: [{name: db, image: registry.k8s.io/pause:3.9}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      storageClassName: $ID
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 10Mi}}
";

fn planned(api_version: &str, kind: &str, namespace: Option<&str>, name: &str) -> Planned {
    let mut object = json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name}});
    if let Some(ns) = namespace {
        object["metadata"]["namespace"] = json!(ns);
    }
    Planned {
        object,
        source: "cluster test".into(),
        stage: 0,
        tier: 0,
        vdu: None,
        namespaced: Some(namespace.is_some()),
        shared: false,
        persistent: false,
        request: false,
        hpa: None,
    }
}

/// Removes what the test may have left (its namespace, volumes and storage class), ignoring
/// what is already gone.
async fn clean_up(vim: &ResolvedVim, id: &str) {
    let Ok(cluster) = ClusterAccess::from_vim(vim).and_then(Cluster::connect) else {
        return;
    };
    for p in [
        planned("v1", "Namespace", None, id),
        planned("v1", "PersistentVolume", None, &format!("{id}-0")),
        planned("v1", "PersistentVolume", None, &format!("{id}-1")),
        planned("storage.k8s.io/v1", "StorageClass", None, id),
    ] {
        if let Err(e) = cluster.delete(&p, Some(0)).await {
            eprintln!("cleaning up {}: {e}", p.display());
        }
    }
}

#[vnfm_test_env::needs(kubeconfig)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_cluster_runs_the_lifecycle() {
    let vim = Kube::get().vim;
    let id = format!("vnfm-cluster-test-{}", std::process::id());
    let run = tokio::spawn(lifecycle(vim.clone(), id.clone())).await;
    if run.is_err() {
        clean_up(&vim, &id).await;
    }
    if let Err(e) = run {
        std::panic::resume_unwind(e.into_panic());
    }
}

async fn lifecycle(vim: ResolvedVim, id: String) {
    let vnfd: vnfm_descriptor::Vnfd = serde_json::from_value(json!({
        "descriptorId": "vnfd-cluster-test", "descriptorVersion": "1.0", "provider": "Acme",
        "productName": "Web", "softwareVersion": "1.0", "toscaDefinitionsVersion": "tosca_simple_yaml_1_2",
        "vnfNodeType": "acme.Web", "entryDefinitions": "Definitions/top.yaml",
        "flavours": [{"id": "simple", "file": "Definitions/df.yaml", "vdus": [
            {"id": "VDU1", "name": "web", "kind": "compute", "nodeType": "tosca.nodes.nfv.Vdu.Compute",
             "minInstances": 1, "maxInstances": 3},
            {"id": "VDU2", "name": "db", "kind": "compute", "nodeType": "tosca.nodes.nfv.Vdu.Compute",
             "minInstances": 1, "maxInstances": 2}],
            "scalingAspects": [
                {"id": "web_scale", "maxScaleLevel": 2, "stepDeltas": ["d"], "vduDeltas": {"VDU1": {"d": 1}}},
                {"id": "db_scale", "maxScaleLevel": 1, "stepDeltas": ["d"], "vduDeltas": {"VDU2": {"d": 1}}}]}]
    }))
    .expect("vnfd");
    let files = Arc::new(
        MemArtifacts::new()
            .with("Files/app.yaml", APP)
            .with("Files/db.yaml", DB),
    );
    let mut call = Call::new(vnfd, files, vim.clone(), &id);
    let d = driver()
        .with_ready_timeout(Duration::from_secs(300))
        .with_delete_timeout(Duration::from_secs(300));
    let target = |web: u32, db: u32| ResourceTarget {
        flavour_id: "simple".into(),
        vdu_instances: [("VDU1".to_string(), web), ("VDU2".to_string(), db)].into(),
        ..Default::default()
    };
    let running = |out: &InfraOutcome| -> Vec<String> {
        out.resources
            .vnfc_resource_info
            .iter()
            .filter(|v| v.metadata.as_ref().and_then(|m| m.get("phase")) == Some(&json!("Running")))
            .map(|v| v.id.clone())
            .collect()
    };
    let out = call
        .run(
            &d,
            Op::Instantiate,
            InfraStep::Instantiate {
                target: target(1, 1),
            },
            json!({"flavourId": "simple", "additionalParams": {
                "lcm-kubernetes-def-files": ["Files/app.yaml", "Files/db.yaml"],
                "MODE": "fast", "ID": id, "namespace": id}}),
        )
        .await
        .expect("instantiate");
    assert_eq!(running(&out).len(), 2, "{:?}", out.resources);

    // Scale each VDU out and back in; every step records what runs, so the next one starts
    // from it.
    let mut counts = (1, 1);
    for (aspect, to) in [
        ("web_scale", (2, 1)),
        ("db_scale", (2, 2)),
        ("db_scale", (2, 1)),
        ("web_scale", (1, 1)),
    ] {
        let out_ = to.0 + to.1 > counts.0 + counts.1;
        let out = call
            .run(
                &d,
                Op::Scale,
                InfraStep::Scale {
                    aspect_id: aspect.into(),
                    scale_type: if out_ {
                        ScaleType::ScaleOut
                    } else {
                        ScaleType::ScaleIn
                    },
                    steps: 1,
                    from: target(counts.0, counts.1),
                    target: target(to.0, to.1),
                },
                json!({"type": if out_ { "SCALE_OUT" } else { "SCALE_IN" }, "aspectId": aspect}),
            )
            .await
            .unwrap_or_else(|e| panic!("scale {aspect} to {to:?}: {e}"));
        assert_eq!(
            running(&out).len() as u32,
            to.0 + to.1,
            "scale {aspect} to {to:?}: {:?}",
            out.resources
        );
        counts = to;
    }

    // A StatefulSet's pod comes back with its name: a removal and an addition.
    let out = call
        .run(
            &d,
            Op::Heal,
            InfraStep::Heal {
                scope: HealScope::Vnfcs {
                    vnfcs: vec![HealVnfc {
                        vnfc_info_id: None,
                        vnfc_resource_id: "db-0".into(),
                        vdu_id: "VDU2".into(),
                    }],
                },
            },
            json!({"vnfcInstanceId": ["db-0"]}),
        )
        .await
        .expect("heal db-0");
    let changed: Vec<String> = out
        .resource_changes
        .affected_vnfcs
        .clone()
        .unwrap_or_default()
        .iter()
        .map(|v| v.id.clone())
        .collect();
    assert_eq!(changed, ["db-0", "db-0"]);
    assert_eq!(running(&out).len(), 2);
    let out = call
        .run(
            &d,
            Op::Heal,
            InfraStep::Heal {
                scope: HealScope::WholeVnf,
            },
            json!({}),
        )
        .await
        .expect("heal");
    assert_eq!(running(&out).len(), 2);

    // The claims of the StatefulSet (data-db-0 and the one its scale-in left) go before the
    // volumes they hold.
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
    let cluster =
        Cluster::connect(ClusterAccess::from_vim(&vim).expect("access")).expect("cluster");
    for p in [
        planned("v1", "PersistentVolume", None, &format!("{id}-0")),
        planned("storage.k8s.io/v1", "StorageClass", None, &id),
        planned("v1", "Namespace", None, &id),
    ] {
        assert!(
            cluster.get(&p).await.expect("read").is_none(),
            "{} is left",
            p.display()
        );
    }
}
