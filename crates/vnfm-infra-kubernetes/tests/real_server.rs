//! Behaviours of a real API server and its controllers that the driver must live with, each
//! taught to the emulated API server: list items without `apiVersion`/`kind`, pods that take
//! time to become ready, volume protection finalizers, claims of StatefulSets that outlive
//! them, the scheduler binding pods at once, and access reviews checked against their
//! namespace.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use support::*;
use vnfm_driver_api::memory::MemArtifacts;
use vnfm_driver_api::{InfraStep, ResourceTarget};
use vnfm_kube_emulator::{Emulator, EmulatorConfig};
use vnfm_types::{LcmOperationType as Op, ScaleType, TerminationType};

/// An emulator whose pods take `delay` to become ready (and claims to bind).
async fn slow_emulator(delay: Duration) -> Emulator {
    crypto();
    Emulator::start(EmulatorConfig {
        ready_delay: delay,
        ..EmulatorConfig::default()
    })
    .await
    .expect("emulator")
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scale_completes_only_when_the_deployment_has_its_replicas_ready() {
    // Pods take 400 ms to become ready: a scale that does not wait records pods Pending.
    let emu = slow_emulator(Duration::from_millis(400)).await;
    let files = Arc::new(MemArtifacts::new().with("Files/web.yaml", WEB));
    let mut call = Call::new(vnfd("web"), files, vim(&emu), "inst-ready");
    let d = driver();
    call.run(
        &d,
        Op::Instantiate,
        InfraStep::Instantiate {
            target: target("VDU1", 1),
        },
        json!({"flavourId": "simple", "additionalParams": {
            "lcm-kubernetes-def-files": ["Files/web.yaml"], "namespace": "ready"}}),
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
    let deployment = emu
        .object("apps/v1", "Deployment", Some("ready"), "web")
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
async fn db_instance(emu: &Emulator, ns: &str, finalizers: &str) -> Call {
    let files =
        Arc::new(MemArtifacts::new().with("Files/db.yaml", DB.replace("$FINALIZERS", finalizers)));
    let mut call = Call::new(vnfd("db"), files, vim(emu), &format!("inst-{ns}"));
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
        let claim = emu
            .object("v1", "PersistentVolumeClaim", Some(ns), "data-db-0")
            .unwrap_or_default();
        if claim["spec"]["volumeName"] == format!("pv-{ns}") {
            break claim;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the StatefulSet's claim is not bound to the package's volume: {claim:#}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(
        claim["metadata"]["finalizers"],
        json!(["kubernetes.io/pvc-protection"])
    );
    call
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminate_deletes_the_statefulsets_claims_before_the_volume_they_hold() {
    let emu = slow_emulator(Duration::from_millis(30)).await;
    let mut call = db_instance(&emu, "db", "[]").await;
    let out = call
        .run(
            &driver(),
            Op::Terminate,
            terminate_step(),
            json!({"terminationType": "FORCEFUL", "additionalParams": {"readinessTimeoutSeconds": 5}}),
        )
        .await
        .expect("terminate does not wait on a volume its claim still holds");
    assert!(out.resources.vnfc_resource_info.is_empty());
    assert!(emu.objects("v1", "PersistentVolume").is_empty());
    assert!(emu.objects("v1", "PersistentVolumeClaim").is_empty());
    assert!(emu.object("v1", "Namespace", None, "db").is_none());
    // Workloads, then the claim, then the volume and its class, the namespace last.
    let deleted: Vec<String> = emu
        .objects_with_verb("delete")
        .into_iter()
        .filter(|o| !o.starts_with("Pod/"))
        .collect();
    assert_eq!(
        deleted,
        [
            "StatefulSet/db/db",
            "PersistentVolumeClaim/db/data-db-0",
            "PersistentVolume/pv-db",
            "StorageClass/manual-db",
            "Namespace/db"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_held_by_a_finalizer_is_named_in_the_terminate_error() {
    let emu = slow_emulator(Duration::from_millis(30)).await;
    let mut call = db_instance(&emu, "held", "[example.com/backup]").await;
    let err = call
        .run(
            &driver(),
            Op::Terminate,
            terminate_step(),
            json!({"terminationType": "FORCEFUL", "additionalParams": {"readinessTimeoutSeconds": 1}}),
        )
        .await
        .expect_err("the volume's finalizer is never removed");
    let text = err.to_string();
    assert_eq!(err.kind(), "timeout", "{text}");
    assert!(
        text.contains("PersistentVolume pv-held is still there (finalizers example.com/backup"),
        "{text}"
    );
    // The claim and the workload are gone: only the volume is held.
    assert!(emu.objects("v1", "PersistentVolumeClaim").is_empty());
    assert!(!text.contains("data-db-0"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_ends_a_wait_for_a_held_object() {
    let emu = slow_emulator(Duration::from_millis(30)).await;
    let call = db_instance(&emu, "cancel", "[example.com/backup]").await;
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
    while emu
        .object("v1", "PersistentVolume", None, "pv-cancel")
        .is_some_and(|v| v["metadata"].get("deletionTimestamp").is_none())
        || emu
            .object("storage.k8s.io/v1", "StorageClass", None, "manual-cancel")
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
}

/// A bare pod, a Binding of it to `node-2` and an access review written for another
/// namespace, as in Tacker's CNF sample; `$NODE` is the pod's own node, if any.
const BOUND: &str = "apiVersion: v1
kind: Pod
metadata: {name: pinned}
spec:
$NODE  containers: [{name: c, image: nginx}]
---
apiVersion: v1
kind: Binding
metadata: {name: pinned}
target: {apiVersion: v1, kind: Node, name: node-2}
---
apiVersion: authorization.k8s.io/v1
kind: LocalSubjectAccessReview
metadata: {namespace: default}
spec:
  user: alice
  resourceAttributes: {namespace: default, verb: get, resource: pods}
";

async fn bound_instance(
    emu: &Emulator,
    node: Option<&str>,
) -> Result<Call, vnfm_driver_api::DriverError> {
    let line = node.map_or(String::new(), |n| format!("  nodeName: {n}\n"));
    let files =
        Arc::new(MemArtifacts::new().with("Files/bound.yaml", BOUND.replace("$NODE", &line)));
    let mut call = Call::new(vnfd("pinned"), files, vim(emu), "inst-bound");
    call.run(
        &driver(),
        Op::Instantiate,
        InfraStep::Instantiate {
            target: target("VDU1", 1),
        },
        json!({"flavourId": "simple", "additionalParams": {
            "lcm-kubernetes-def-files": ["Files/bound.yaml"], "namespace": "bound"}}),
    )
    .await
    .map(|_| call)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_binding_places_its_pod_and_an_access_review_asks_about_the_instance_namespace() {
    let emu = slow_emulator(Duration::from_millis(30)).await;
    bound_instance(&emu, None).await.expect("instantiate");
    let pod = emu
        .object("v1", "Pod", Some("bound"), "pinned")
        .expect("pod");
    assert_eq!(pod["spec"]["nodeName"], "node-2");
    let created = |kind: &str| {
        emu.log()
            .iter()
            .filter(|e| e.kind == kind && e.verb == "create")
            .map(|e| e.code)
            .collect::<Vec<u16>>()
    };
    // The pod was bound before the Binding came: refused, and the same node, so done.
    assert_eq!(created("Binding"), [409]);
    assert_eq!(created("LocalSubjectAccessReview"), [201]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_binding_to_another_node_than_the_pods_fails_naming_both() {
    let emu = slow_emulator(Duration::from_millis(30)).await;
    let err = bound_instance(&emu, Some("node-1"))
        .await
        .err()
        .expect("the pod is on node-1, the Binding names node-2");
    let text = err.to_string();
    assert!(
        text.contains("pod pinned was bound to node `node-1` before the Binding to node `node-2`"),
        "{text}"
    );
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healed_pod_that_comes_back_with_its_name_is_recorded_as_replaced() {
    let emu = slow_emulator(Duration::from_millis(200)).await;
    let files = Arc::new(MemArtifacts::new().with("Files/set.yaml", SET));
    let mut call = Call::new(vnfd("db"), files, vim(&emu), "inst-heal");
    let d = driver();
    call.run(
        &d,
        Op::Instantiate,
        InfraStep::Instantiate {
            target: target("VDU1", 2),
        },
        json!({"flavourId": "simple", "additionalParams": {
            "lcm-kubernetes-def-files": ["Files/set.yaml"], "namespace": "heal"}}),
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
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_started_vnf_records_its_pods_running() {
    let emu = slow_emulator(Duration::from_millis(300)).await;
    let files = Arc::new(MemArtifacts::new().with("Files/web.yaml", WEB));
    let mut call = Call::new(vnfd("web"), files, vim(&emu), "inst-start");
    let d = driver();
    call.run(
        &d,
        Op::Instantiate,
        InfraStep::Instantiate {
            target: target("VDU1", 2),
        },
        json!({"flavourId": "simple", "additionalParams": {
            "lcm-kubernetes-def-files": ["Files/web.yaml"], "namespace": "start"}}),
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
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heals_changes_are_its_own_not_pods_an_earlier_step_did_not_record() {
    let emu = slow_emulator(Duration::from_millis(30)).await;
    let files = Arc::new(MemArtifacts::new().with("Files/web.yaml", WEB));
    let mut call = Call::new(vnfd("web"), files, vim(&emu), "inst-stale");
    let d = driver();
    let out = call
        .run(
            &d,
            Op::Instantiate,
            InfraStep::Instantiate {
                target: target("VDU1", 2),
            },
            json!({"flavourId": "simple", "additionalParams": {
                "lcm-kubernetes-def-files": ["Files/web.yaml"], "namespace": "stale"}}),
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
}
