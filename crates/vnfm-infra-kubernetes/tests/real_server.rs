//! Behaviours of a real API server and its controllers that the driver must live with, on the
//! real control plane of `KUBECONFIG` with the test environment's simulated pods
//! (`scripts/test-env/kubernetes.sh`; built ignored without them, see `build.rs`): list items
//! without `apiVersion`/`kind`, pods that take time to become ready, volume protection
//! finalizers, claims of StatefulSets that outlive them, the scheduler binding pods at once,
//! and access reviews checked against their namespace. Each test works in namespaces and
//! cluster-scoped names of its own and removes them also when it fails.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use support::real::{Kube, assert_pods_ready, in_namespace};
use support::*;
use vnfm_driver_api::memory::MemArtifacts;
use vnfm_driver_api::{InfraStep, ResourceTarget};
use vnfm_types::{LcmOperationType as Op, ScaleType, TerminationType};

fn target(vdu: &str, n: u32) -> ResourceTarget {
    ResourceTarget {
        flavour_id: "simple".into(),
        vdu_instances: [(vdu.to_string(), n)].into(),
        ..Default::default()
    }
}

/// A VNFD with one flavour `simple`, VDU `VDU1` named `name` and aspect `scale` of one
/// instance per step.
fn vnfd(name: &str) -> vnfm_descriptor::Vnfd {
    serde_json::from_value(json!({
        "descriptorId": "vnfd-real", "descriptorVersion": "1.0", "provider": "Acme",
        "productName": "CNF", "softwareVersion": "1.0", "toscaDefinitionsVersion": "tosca_simple_yaml_1_3",
        "vnfNodeType": "acme.CNF", "entryDefinitions": "Definitions/top.yaml",
        "flavours": [{"id": "simple", "file": "Definitions/df.yaml", "vdus": [
            {"id": "VDU1", "name": name, "kind": "osContainerDeployableUnit",
             "nodeType": "tosca.nodes.nfv.Vdu.OsContainerDeployableUnit",
             "minInstances": 1, "maxInstances": 5}],
            "scalingAspects": [{"id": "scale", "maxScaleLevel": 4, "stepDeltas": ["d"],
                "vduDeltas": {"VDU1": {"d": 1}}}]}]
    }))
    .expect("vnfd")
}

const WEB: &str = "apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx}]
";

fn scale(from: u32, to: u32) -> InfraStep {
    InfraStep::Scale {
        aspect_id: "scale".into(),
        scale_type: if to > from {
            ScaleType::ScaleOut
        } else {
            ScaleType::ScaleIn
        },
        steps: from.abs_diff(to),
        from: target("VDU1", from),
        target: target("VDU1", to),
    }
}

/// `(pod name, phase)` of each recorded VNFC.
fn recorded(call: &Call) -> Vec<(String, String)> {
    call.instance
        .instantiated_vnf_info
        .as_ref()
        .and_then(|i| i.vnfc_resource_info.clone())
        .unwrap_or_default()
        .iter()
        .map(|v| {
            let phase = v
                .metadata
                .as_ref()
                .and_then(|m| m.get("phase"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            (v.id.clone(), phase)
        })
        .collect()
}

#[vnfm_test_env::needs(kwok)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scale_completes_only_when_the_deployment_has_its_replicas_ready() {
    in_namespace("rs-ready", &[], |kube, ns| async move {
        // Pods take a while to become ready: a scale that does not wait records pods not Ready.
        let files = Arc::new(MemArtifacts::new().with("Files/web.yaml", WEB));
        let mut call = Call::new(vnfd("web"), files, kube.vim.clone(), &ns);
        let d = driver();
        call.run(
            &d,
            Op::Instantiate,
            InfraStep::Instantiate {
                target: target("VDU1", 1),
            },
            json!({"flavourId": "simple", "additionalParams": {
            "lcm-kubernetes-def-files": ["Files/web.yaml"], "namespace": ns}}),
        )
        .await
        .expect("instantiate");
        assert_eq!(recorded(&call).len(), 1);

        let out = call
            .run(
                &d,
                Op::Scale,
                scale(1, 3),
                json!({"type": "SCALE_OUT", "aspectId": "scale"}),
            )
            .await
            .expect("scale out");
        assert_pods_ready(&kube, &ns, "scale out").await;
        let deployment = kube
            .object("apps/v1", "Deployment", Some(&ns), "web")
            .await
            .expect("deployment");
        assert_eq!(
            deployment["status"]["readyReplicas"], 3,
            "the scale completed before the Deployment had its replicas ready: {:#}",
            deployment["status"]
        );
        let pods = recorded(&call);
        assert_eq!(pods.len(), 3, "{pods:?}");
        assert!(pods.iter().all(|(_, phase)| phase == "Running"), "{pods:?}");
        assert_eq!(
            out.resource_changes.affected_vnfcs.as_ref().map(Vec::len),
            Some(2)
        );

        // The next scale starts from what really runs.
        let out = call
            .run(
                &d,
                Op::Scale,
                scale(3, 2),
                json!({"type": "SCALE_IN", "aspectId": "scale"}),
            )
            .await
            .expect("scale in");
        assert_eq!(out.resources.vnfc_resource_info.len(), 2);
        assert_eq!(
            out.resource_changes.affected_vnfcs.as_ref().map(Vec::len),
            Some(1),
            "one pod removed"
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

/// A StatefulSet whose claim binds to the package's own PersistentVolume, as in Tacker's CNF
/// sample: terminate must delete the claim before waiting for the volume.
const DB: &str = "apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: manual-$SUFFIX}
provisioner: kubernetes.io/no-provisioner
---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: pv-$SUFFIX
  finalizers: $FINALIZERS
spec:
  storageClassName: manual-$SUFFIX
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: /tmp/db}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 1
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: postgres}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      storageClassName: manual-$SUFFIX
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
";

fn terminate_step() -> InfraStep {
    InfraStep::Terminate {
        termination_type: TerminationType::Forceful,
        graceful_timeout_seconds: None,
    }
}

/// Instantiates the `DB` package in namespace `ns` with `finalizers` on its volume.
async fn db_instance(kube: &Kube, ns: &str, finalizers: &str) -> Call {
    let files =
        Arc::new(MemArtifacts::new().with("Files/db.yaml", DB.replace("$FINALIZERS", finalizers)));
    let mut call = Call::new(vnfd("db"), files, kube.vim.clone(), ns);
    call.run(
        &driver(),
        Op::Instantiate,
        InfraStep::Instantiate {
            target: target("VDU1", 1),
        },
        json!({"flavourId": "simple", "additionalParams": {
            "lcm-kubernetes-def-files": ["Files/db.yaml"], "namespace": ns,
            "SUFFIX": ns}}),
    )
    .await
    .expect("instantiate");
    // The StatefulSet is ready, so its pod runs and its claim is bound (waited for here
    // nevertheless: these tests are about terminate).
    let started = std::time::Instant::now();
    let claim = loop {
        let claim = kube
            .object("v1", "PersistentVolumeClaim", Some(ns), "data-db-0")
            .await
            .unwrap_or_default();
        if claim["spec"]["volumeName"] == format!("pv-{ns}") {
            break claim;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the StatefulSet's claim is not bound to the package's volume: {claim:#}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(
        claim["metadata"]["finalizers"],
        json!(["kubernetes.io/pvc-protection"])
    );
    assert_pods_ready(kube, ns, "instantiate").await;
    call
}

/// The cluster-scoped objects of `DB`.
const DB_VOLUMES: &[&str] = &[
    "v1/PersistentVolume/pv-$NS",
    "storage.k8s.io/v1/StorageClass/manual-$NS",
];

#[vnfm_test_env::needs(kwok)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminate_deletes_the_statefulsets_claims_before_the_volume_they_hold() {
    in_namespace("rs-db", DB_VOLUMES, |kube, ns| async move {
    let mut call = db_instance(&kube, &ns, "[]").await;
    let out = call
        .run(
            &driver(),
            Op::Terminate,
            terminate_step(),
            json!({"terminationType": "FORCEFUL", "additionalParams": {"readinessTimeoutSeconds": 30}}),
        )
        .await
        .expect("terminate does not wait on a volume its claim still holds");
    assert!(out.resources.vnfc_resource_info.is_empty());
    // The volume's protection lasts while its claim is there: deleted in another order, the
    // wait for the volume would time out (30 s above).
    assert!(kube.object("v1", "PersistentVolume", None, &format!("pv-{ns}")).await.is_none());
    assert!(kube.list("v1", "PersistentVolumeClaim", Some(&ns), "").await.is_empty());
    assert!(kube.object("v1", "Namespace", None, &ns).await.is_none());
    })
    .await;
}

#[vnfm_test_env::needs(kwok)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_held_by_a_finalizer_is_named_in_the_terminate_error() {
    in_namespace("rs-held", DB_VOLUMES, |kube, ns| async move {
    let mut call = db_instance(&kube, &ns, "[example.com/backup]").await;
    let err = call
        .run(
            &driver(),
            Op::Terminate,
            terminate_step(),
            json!({"terminationType": "FORCEFUL", "additionalParams": {"readinessTimeoutSeconds": 10}}),
        )
        .await
        .expect_err("the volume's finalizer is never removed");
    let text = err.to_string();
    assert_eq!(err.kind(), "timeout", "{text}");
    assert!(
        text.contains(&format!("PersistentVolume pv-{ns} is still there (finalizers example.com/backup")),
        "{text}"
    );
    // The claim and the workload are gone: only the volume is held.
    assert!(kube.list("v1", "PersistentVolumeClaim", Some(&ns), "").await.is_empty());
    assert!(!text.contains("data-db-0"), "{text}");
    })
    .await;
}

#[vnfm_test_env::needs(kwok)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_ends_a_wait_for_a_held_object() {
    in_namespace("rs-cancel", DB_VOLUMES, |kube, ns| async move {
        let call = db_instance(&kube, &ns, "[example.com/backup]").await;
        let flag = vnfm_driver_api::CancellationFlag::new();
        let mut req = call.request(
            Op::Terminate,
            terminate_step(),
            json!({"terminationType": "FORCEFUL"}),
        );
        // The step and the driver wait up to an hour: only the cancel ends this wait.
        req.control = vnfm_driver_api::RunControl::new(Duration::from_secs(3600), flag.clone());
        let d = driver().with_delete_timeout(Duration::from_secs(3600));
        let running = tokio::spawn(async move { vnfm_driver_api::execute(&d, &req).await });
        // Cancel once the volume is being waited on: it is being deleted, and so is the last
        // object of its tier (the storage class, which nothing holds).
        while kube
            .object("v1", "PersistentVolume", None, &format!("pv-{ns}"))
            .await
            .is_some_and(|v| v["metadata"].get("deletionTimestamp").is_none())
            || kube
                .object(
                    "storage.k8s.io/v1",
                    "StorageClass",
                    None,
                    &format!("manual-{ns}"),
                )
                .await
                .is_some()
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        flag.cancel();
        // A liveness bound, not a measurement: the cancel is seen within a quarter of a second.
        let err = tokio::time::timeout(Duration::from_secs(60), running)
            .await
            .expect("the cancel did not end the wait")
            .expect("task")
            .expect_err("cancelled while waiting");
        assert_eq!(err.kind(), "cancelled", "{err}");
    })
    .await;
}

/// A bare pod, a Binding of it to `kwok-node-1` and an access review written for another
/// namespace, as in Tacker's CNF sample; `$NODE` places the pod (its own node, or a node
/// selector).
const BOUND: &str = "apiVersion: v1
kind: Pod
metadata: {name: pinned}
spec:
$NODE  containers: [{name: c, image: nginx}]
---
apiVersion: v1
kind: Binding
metadata: {name: pinned}
target: {apiVersion: v1, kind: Node, name: kwok-node-1}
---
apiVersion: authorization.k8s.io/v1
kind: LocalSubjectAccessReview
metadata: {namespace: default}
spec:
  user: alice
  resourceAttributes: {namespace: default, verb: get, resource: pods}
";

async fn bound_instance(
    kube: &Kube,
    ns: &str,
    node: Option<&str>,
) -> Result<Call, vnfm_driver_api::DriverError> {
    // Without a node of its own, the scheduler places the pod where the Binding does, at once.
    let line = node.map_or(
        "  nodeSelector: {kubernetes.io/hostname: kwok-node-1}\n".to_string(),
        |n| format!("  nodeName: {n}\n"),
    );
    let files =
        Arc::new(MemArtifacts::new().with("Files/bound.yaml", BOUND.replace("$NODE", &line)));
    let mut call = Call::new(vnfd("pinned"), files, kube.vim.clone(), ns);
    call.run(
        &driver(),
        Op::Instantiate,
        InfraStep::Instantiate {
            target: target("VDU1", 1),
        },
        json!({"flavourId": "simple", "additionalParams": {
            "lcm-kubernetes-def-files": ["Files/bound.yaml"], "namespace": ns}}),
    )
    .await
    .map(|_| call)
}

#[vnfm_test_env::needs(kwok)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_binding_places_its_pod_and_an_access_review_asks_about_the_instance_namespace() {
    in_namespace("rs-bound", &[], |kube, ns| async move {
        // The real API server answers the Binding of a bound pod 409 (the same node: done)
        // and refuses an access review whose namespace is not the one it is created in.
        bound_instance(&kube, &ns, None).await.expect("instantiate");
        let pod = kube
            .object("v1", "Pod", Some(&ns), "pinned")
            .await
            .expect("pod");
        assert_eq!(pod["spec"]["nodeName"], "kwok-node-1");
    })
    .await;
}

#[vnfm_test_env::needs(kwok)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_binding_to_another_node_than_the_pods_fails_naming_both() {
    in_namespace("rs-bound-other", &[], |kube, ns| async move {
        let err = bound_instance(&kube, &ns, Some("kwok-node-0"))
            .await
            .err()
            .expect("the pod is on kwok-node-0, the Binding names kwok-node-1");
        let text = err.to_string();
        assert!(
            text.contains(
                "pod pinned was bound to node `kwok-node-0` before the Binding to node `kwok-node-1`"
            ),
            "{text}"
        );
    })
    .await;
}

const SET: &str = "apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 2
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: postgres}]
";

fn change_types(out: &vnfm_driver_api::InfraOutcome) -> Vec<(String, String)> {
    out.resource_changes
        .affected_vnfcs
        .clone()
        .unwrap_or_default()
        .iter()
        .map(|v| {
            (
                v.id.clone(),
                serde_json::to_value(v.change_type)
                    .ok()
                    .and_then(|t| t.as_str().map(String::from))
                    .unwrap_or_default(),
            )
        })
        .collect()
}

#[vnfm_test_env::needs(kwok)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healed_pod_that_comes_back_with_its_name_is_recorded_as_replaced() {
    in_namespace("rs-heal", &[], |kube, ns| async move {
        let files = Arc::new(MemArtifacts::new().with("Files/set.yaml", SET));
        let mut call = Call::new(vnfd("db"), files, kube.vim.clone(), &ns);
        let d = driver();
        call.run(
            &d,
            Op::Instantiate,
            InfraStep::Instantiate {
                target: target("VDU1", 2),
            },
            json!({"flavourId": "simple", "additionalParams": {
            "lcm-kubernetes-def-files": ["Files/set.yaml"], "namespace": ns}}),
        )
        .await
        .expect("instantiate");
        let before = recorded(&call);
        assert_eq!(before.len(), 2);
        assert!(
            before.iter().all(|(_, phase)| phase == "Running"),
            "{before:?}"
        );
        let out = call
            .run(
                &d,
                Op::Heal,
                InfraStep::Heal {
                    scope: vnfm_driver_api::HealScope::Vnfcs {
                        vnfcs: vec![vnfm_driver_api::HealVnfc {
                            vnfc_info_id: None,
                            vnfc_resource_id: "db-1".into(),
                            vdu_id: "VDU1".into(),
                        }],
                    },
                },
                json!({"vnfcInstanceId": ["db-1"]}),
            )
            .await
            .expect("heal");
        assert_eq!(
            change_types(&out),
            [
                ("db-1".to_string(), "REMOVED".to_string()),
                ("db-1".to_string(), "ADDED".to_string())
            ]
        );
        let after = recorded(&call);
        assert_eq!(after.len(), 2);
        assert!(
            after.iter().all(|(_, phase)| phase == "Running"),
            "{after:?}"
        );
        assert_pods_ready(&kube, &ns, "heal").await;
    })
    .await;
}

#[vnfm_test_env::needs(kwok)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_started_vnf_records_its_pods_running() {
    in_namespace("rs-start", &[], |kube, ns| async move {
        let files = Arc::new(MemArtifacts::new().with("Files/web.yaml", WEB));
        let mut call = Call::new(vnfd("web"), files, kube.vim.clone(), &ns);
        let d = driver();
        call.run(
            &d,
            Op::Instantiate,
            InfraStep::Instantiate {
                target: target("VDU1", 2),
            },
            json!({"flavourId": "simple", "additionalParams": {
            "lcm-kubernetes-def-files": ["Files/web.yaml"], "namespace": ns}}),
        )
        .await
        .expect("instantiate");
        let operate = |to| InfraStep::Operate {
            change_state_to: to,
            stop_type: None,
            graceful_stop_timeout_seconds: None,
            vnfc_resource_ids: Vec::new(),
        };
        call.run(
            &d,
            Op::Operate,
            operate(vnfm_types::VnfOperationalState::Stopped),
            json!({"changeStateTo": "STOPPED"}),
        )
        .await
        .expect("stop");
        assert!(recorded(&call).is_empty());
        call.run(
            &d,
            Op::Operate,
            operate(vnfm_types::VnfOperationalState::Started),
            json!({"changeStateTo": "STARTED"}),
        )
        .await
        .expect("start");
        let pods = recorded(&call);
        assert_eq!(pods.len(), 2, "{pods:?}");
        assert!(pods.iter().all(|(_, phase)| phase == "Running"), "{pods:?}");
        assert_pods_ready(&kube, &ns, "start").await;
    })
    .await;
}

#[vnfm_test_env::needs(kwok)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heals_changes_are_its_own_not_pods_an_earlier_step_did_not_record() {
    in_namespace("rs-stale", &[], |kube, ns| async move {
        let files = Arc::new(MemArtifacts::new().with("Files/web.yaml", WEB));
        let mut call = Call::new(vnfd("web"), files, kube.vim.clone(), &ns);
        let d = driver();
        let out = call
            .run(
                &d,
                Op::Instantiate,
                InfraStep::Instantiate {
                    target: target("VDU1", 2),
                },
                json!({"flavourId": "simple", "additionalParams": {
                "lcm-kubernetes-def-files": ["Files/web.yaml"], "namespace": ns}}),
            )
            .await
            .expect("instantiate");
        let pods: Vec<String> = out
            .resources
            .vnfc_resource_info
            .iter()
            .map(|v| v.id.clone())
            .collect();
        assert_eq!(pods.len(), 2);
        // An earlier step recorded one pod of the two (as a scale that did not wait did).
        let mut stale = out.clone();
        stale.resources.vnfc_resource_info.truncate(1);
        stale.resources.vnfc_info.truncate(1);
        call.record(&stale);
        let healed = pods[0].clone();
        let out = call
            .run(
                &d,
                Op::Heal,
                InfraStep::Heal {
                    scope: vnfm_driver_api::HealScope::Vnfcs {
                        vnfcs: vec![vnfm_driver_api::HealVnfc {
                            vnfc_info_id: None,
                            vnfc_resource_id: healed.clone(),
                            vdu_id: "VDU1".into(),
                        }],
                    },
                },
                json!({"vnfcInstanceId": [healed]}),
            )
            .await
            .expect("heal");
        let changes = change_types(&out);
        assert_eq!(changes.len(), 2, "{changes:?}");
        assert_eq!(changes[0], (healed.clone(), "REMOVED".to_string()));
        assert_eq!(changes[1].1, "ADDED");
        assert!(
            !changes.iter().any(|(id, _)| *id == pods[1]),
            "the pod the heal did not touch is not a change: {changes:?}"
        );
    })
    .await;
}
