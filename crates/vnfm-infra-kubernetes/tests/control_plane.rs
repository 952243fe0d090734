//! What only a real control plane shows, because its controllers act while the driver works:
//! the ReplicaSet controller replacing pods deleted under a Deployment being deleted, the
//! garbage collector's own grace periods, `status.terminatingReplicas` during a scale-in, the
//! kubelet's waiting reasons, and the namespace controller's time to empty a namespace.
//! Against `KUBECONFIG`'s cluster with the test environment's simulated pods
//! (`scripts/test-env/kubernetes.sh`; built ignored without them, see `build.rs`).

use crate::support;

use std::sync::Arc;

use serde_json::{Value, json};
use support::real::{Kube, Recorder, assert_pods_ready, with_clean_up};
use support::*;
use vnfm_driver_api::memory::MemArtifacts;
use vnfm_driver_api::{InfraStep, ResourceTarget};
use vnfm_types::{LcmOperationType as Op, ScaleType, TerminationType};

fn target(n: u32) -> ResourceTarget {
    ResourceTarget {
        flavour_id: "simple".into(),
        vdu_instances: [("VDU1".to_string(), n)].into(),
        ..Default::default()
    }
}

/// A VNFD with flavour `simple`, VDU `VDU1` named `name` (1 to 5 instances) and aspect `scale`
/// of one instance per step.
fn vnfd(name: &str) -> vnfm_descriptor::Vnfd {
    serde_json::from_value(json!({
        "descriptorId": "vnfd-cp", "descriptorVersion": "1.0", "provider": "Acme",
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

/// A Deployment `web` of `$REPLICAS` pods whose containers ignore SIGTERM (the simulated pods
/// are gone only at the end of their grace period, `$GRACE` seconds), with image `$IMAGE`.
const WEB: &str = "apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: $REPLICAS
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web, vnfm.test/exit-at-grace-end: 'true'}}
    spec:
      terminationGracePeriodSeconds: $GRACE
      containers: [{name: web, image: '$IMAGE'}]
";

fn web(replicas: u32, grace: u32, image: &str) -> Arc<MemArtifacts> {
    Arc::new(
        MemArtifacts::new().with(
            "Files/web.yaml",
            WEB.replace("$REPLICAS", &replicas.to_string())
                .replace("$GRACE", &grace.to_string())
                .replace("$IMAGE", image),
        ),
    )
}

const IMAGE: &str = "registry.k8s.io/pause:3.10";

async fn instantiate(call: &mut Call, ns: &str, n: u32, extra: Value) {
    let mut params = json!({"lcm-kubernetes-def-files": ["Files/web.yaml"], "namespace": ns});
    if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
        p.extend(e.clone());
    }
    call.run(
        &driver(),
        Op::Instantiate,
        InfraStep::Instantiate { target: target(n) },
        json!({"flavourId": "simple", "additionalParams": params}),
    )
    .await
    .expect("instantiate");
}

#[vnfm_test_env::needs(kwok)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forceful_terminate_of_a_deployment_creates_no_pod_and_keeps_its_grace_period() {
    let kube = Kube::get();
    let ns = Kube::namespace("cp-terminate");
    let test_ns = ns.clone();
    with_clean_up(&kube, &[&ns], &[], async move {
        let kube = Kube::get();
        let ns = test_ns;
        // Pods whose containers would take their whole default grace (30 s) to exit.
        let mut call = Call::new(vnfd("web"), web(2, 30, IMAGE), kube.vim.clone(), &ns);
        instantiate(&mut call, &ns, 2, json!({})).await;
        assert_pods_ready(&kube, &ns, "instantiate").await;
        let pods = Recorder::start(&kube, "v1", "Pod", Some(&ns)).await;
        let before = pods.uids();
        assert_eq!(before.len(), 2, "{before:?}");
        // The test driver gives deletions 20 s and the Deployment (deleted in the foreground)
        // is gone only after its pods: a pod deleted with the default 30 s grace (as the
        // garbage collector deletes a replacement) fails the terminate.
        call.run(
            &driver(),
            Op::Terminate,
            InfraStep::Terminate {
                termination_type: TerminationType::Forceful,
                graceful_timeout_seconds: None,
            },
            json!({"terminationType": "FORCEFUL"}),
        )
        .await
        .expect("a forceful terminate ends its pods at once");
        let seen = pods.uids();
        assert_eq!(
            seen, before,
            "a pod was created while the Deployment was being terminated"
        );
        assert!(kube.pod_names(&ns).await.is_empty());
    })
    .await;
}

#[vnfm_test_env::needs(kwok)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployment_scale_in_completes_once_the_removed_pods_are_gone() {
    let kube = Kube::get();
    let ns = Kube::namespace("cp-scale-in");
    let test_ns = ns.clone();
    with_clean_up(&kube, &[&ns], &[], async move {
        let kube = Kube::get();
        let ns = test_ns;
        // Removed pods take their grace period (3 s) to exit.
        let mut call = Call::new(vnfd("web"), web(1, 3, IMAGE), kube.vim.clone(), &ns);
        instantiate(&mut call, &ns, 1, json!({})).await;
        let d = driver();
        let scale = |from: u32, to: u32| InfraStep::Scale {
            aspect_id: "scale".into(),
            scale_type: if to > from {
                ScaleType::ScaleOut
            } else {
                ScaleType::ScaleIn
            },
            steps: from.abs_diff(to),
            from: target(from),
            target: target(to),
        };
        let out = call
            .run(
                &d,
                Op::Scale,
                scale(1, 3),
                json!({"type": "SCALE_OUT", "aspectId": "scale"}),
            )
            .await
            .expect("scale out");
        assert_eq!(out.resources.vnfc_resource_info.len(), 3);
        assert_pods_ready(&kube, &ns, "scale out").await;
        let out = call
            .run(
                &d,
                Op::Scale,
                scale(3, 1),
                json!({"type": "SCALE_IN", "aspectId": "scale"}),
            )
            .await
            .expect("scale in");
        assert_eq!(out.resources.vnfc_resource_info.len(), 1);
        let left = kube.pod_names(&ns).await;
        assert_eq!(
            left.len(),
            1,
            "the scale-in completed while removed pods still ran: {left:?}"
        );
        assert_eq!(
            [out.resources.vnfc_resource_info[0].id.clone()],
            left.as_slice()
        );
    })
    .await;
}

#[vnfm_test_env::needs(kwok)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_readiness_timeout_of_a_deployment_names_its_pods_waiting_reason() {
    let kube = Kube::get();
    let ns = Kube::namespace("cp-pull");
    let test_ns = ns.clone();
    with_clean_up(&kube, &[&ns], &[], async move {
        let kube = Kube::get();
        let ns = test_ns;
        let mut call = Call::new(
            vnfd("web"),
            web(1, 0, &Kube::failing_image()),
            kube.vim.clone(),
            &ns,
        );
        let err = call
            .run(
                &driver(),
                Op::Instantiate,
                InfraStep::Instantiate { target: target(1) },
                json!({"flavourId": "simple", "additionalParams": {
                    "lcm-kubernetes-def-files": ["Files/web.yaml"], "namespace": ns,
                    "readinessTimeoutSeconds": 8}}),
            )
            .await
            .expect_err("the image cannot be pulled");
        let text = err.to_string();
        assert_eq!(err.kind(), "timeout", "{text}");
        assert!(text.contains("Deployment"), "{text}");
        assert!(
            text.contains("ImagePullBackOff"),
            "the timeout does not say why the pods wait: {text}"
        );
    })
    .await;
}

/// The instance's namespace and a Namespace object of the package's own.
const TWO_NAMESPACES: &str = "apiVersion: v1
kind: Namespace
metadata: {name: $NS-extra}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {mode: fast}
";

#[vnfm_test_env::needs(kubeconfig)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminate_deletes_the_packages_namespace_and_the_instance_namespace_together() {
    let kube = Kube::get();
    let ns = Kube::namespace("cp-ns");
    let extra = format!("{ns}-extra");
    let (test_ns, test_extra) = (ns.clone(), extra.clone());
    with_clean_up(&kube, &[&ns, &extra], &[], async move {
        let kube = Kube::get();
        let (ns, extra) = (test_ns, test_extra);
        let files =
            Arc::new(MemArtifacts::new().with("Files/ns.yaml", TWO_NAMESPACES.replace("$NS", &ns)));
        let mut call = Call::new(vnfd("web"), files, kube.vim.clone(), &ns);
        call.run(
            &driver(),
            Op::Instantiate,
            InfraStep::Instantiate { target: target(0) },
            json!({"flavourId": "simple", "additionalParams": {
                "lcm-kubernetes-def-files": ["Files/ns.yaml"], "namespace": ns}}),
        )
        .await
        .expect("instantiate");
        assert!(kube.object("v1", "Namespace", None, &extra).await.is_some());
        let namespaces = Recorder::start(&kube, "v1", "Namespace", None).await;
        call.run(
            &driver(),
            Op::Terminate,
            InfraStep::Terminate {
                termination_type: TerminationType::Graceful,
                graceful_timeout_seconds: None,
            },
            json!({"terminationType": "GRACEFUL"}),
        )
        .await
        .expect("terminate");
        // The test's own watch may see the last events a moment after the driver's.
        namespaces
            .wait_until("both namespaces gone", |events| {
                events
                    .iter()
                    .filter(|(what, o)| {
                        what == "DELETED"
                            && o["metadata"]["name"]
                                .as_str()
                                .is_some_and(|n| n == ns || n == extra)
                    })
                    .count()
                    == 2
            })
            .await;
        // In the order the API server stored it: each namespace marked for deletion, each gone.
        let mut order: Vec<String> = Vec::new();
        for (what, o) in namespaces.events() {
            let name = o["metadata"]["name"].as_str().unwrap_or("").to_string();
            if name != ns && name != extra {
                continue;
            }
            let step = if what == "DELETED" {
                format!("{name} gone")
            } else if o["metadata"].get("deletionTimestamp").is_some() {
                format!("{name} deleting")
            } else {
                continue;
            };
            if !order.contains(&step) {
                order.push(step);
            }
        }
        let first_gone = order
            .iter()
            .position(|s| s.ends_with(" gone"))
            .unwrap_or_else(|| panic!("no namespace is gone: {order:?}"));
        assert_eq!(
            order[..first_gone]
                .iter()
                .filter(|s| s.ends_with(" deleting"))
                .count(),
            2,
            "one namespace was emptied before the other was deleted: {order:?}"
        );
        assert!(kube.object("v1", "Namespace", None, &ns).await.is_none());
        assert!(kube.object("v1", "Namespace", None, &extra).await.is_none());
    })
    .await;
}

#[vnfm_test_env::needs(kwok)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readiness_budget_does_not_bound_the_wait_for_a_namespace_to_go() {
    // The instance's namespace `vnf-<id>` is held while a finalizer of the test keeps an
    // object in it, longer than the instantiation's one-second readiness budget: the
    // terminate waits for it on the deletion budget. `deletionTimeoutSeconds` bounds that
    // wait, and a terminate that runs out of it fails naming the namespace.
    support::real::in_namespace("vnf-del", &[], |kube, ns| async move {
        let id = ns.strip_prefix("vnf-").expect("prefix").to_string();
        let files = Arc::new(MemArtifacts::new().with(
            "Files/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {mode: fast}\n",
        ));
        let mut call = Call::new(vnfd("web"), files, kube.vim.clone(), &id);
        let d = driver();
        call.run(
            &d,
            Op::Instantiate,
            InfraStep::Instantiate { target: target(0) },
            json!({"flavourId": "simple", "additionalParams": {
                "lcm-kubernetes-def-files": ["Files/cm.yaml"], "readinessTimeoutSeconds": 1}}),
        )
        .await
        .expect("instantiate");
        kube.create(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "held", "namespace": ns, "finalizers": ["vnfm.test/hold"]}}))
            .await;
        let terminate = InfraStep::Terminate {
            termination_type: TerminationType::Forceful,
            graceful_timeout_seconds: None,
        };
        let err = call
            .run(
                &d,
                Op::Terminate,
                terminate.clone(),
                json!({"terminationType": "FORCEFUL",
                    "additionalParams": {"deletionTimeoutSeconds": 2}}),
            )
            .await
            .expect_err("the namespace is held beyond the deletion budget");
        assert_eq!(err.kind(), "timeout", "{err}");
        assert!(
            err.to_string().contains(&format!("Namespace {ns}")),
            "{err}"
        );
        // Released three seconds into the retried terminate: three times the readiness
        // budget, well within the deletion budget.
        let release = {
            let kube = Kube::get();
            let ns = ns.clone();
            tokio::spawn(async move {
                tokio::time::sleep(std::time::Duration::from_secs(3)).await;
                let k = kube.cluster.core("ConfigMap").await.expect("discovery");
                kube.cluster
                    .api(&k, Some(&ns))
                    .patch(
                        "held",
                        &kube::api::PatchParams::default(),
                        &kube::api::Patch::Merge(json!({"metadata": {"finalizers": null}})),
                    )
                    .await
                    .expect("releasing the finalizer");
            })
        };
        call.run(
            &d,
            Op::Terminate,
            terminate,
            json!({"terminationType": "FORCEFUL"}),
        )
        .await
        .expect("terminate waits for the namespace on its own budget");
        release.await.expect("release");
        assert!(kube.object("v1", "Namespace", None, &ns).await.is_none());
    })
    .await;
}

#[vnfm_test_env::needs(kubeconfig)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_conditional_on_an_old_resource_version_are_refused_with_a_conflict() {
    // What the driver's shared objects rely on: the API server refuses a merge patch or a
    // delete whose resourceVersion precondition is not current (409, Status body).
    support::real::in_namespace("cp-rv", &[], |kube, ns| async move {
        kube.create(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
            .await;
        let p = vnfm_infra_kubernetes::plan::Planned {
            object: json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "probe", "namespace": ns}}),
            source: "test".into(),
            stage: 0,
            tier: 4,
            vdu: None,
            namespaced: Some(true),
            shared: false,
            persistent: false,
            request: false,
            hpa: None,
        };
        let cluster = &kube.cluster;
        let first = cluster.apply(&p).await.expect("create");
        let stale = first.metadata.resource_version.clone().expect("rv");
        cluster
            .merge_at(&p, &stale, &json!({"data": {"k": "1"}}))
            .await
            .expect("current resourceVersion");
        let e = cluster
            .merge_at(&p, &stale, &json!({"data": {"k": "2"}}))
            .await
            .expect_err("stale patch");
        assert!(e.is_status(409), "{e}");
        assert!(e.to_string().contains("Conflict"), "{e}");
        let e = cluster
            .delete_at(&p, &stale)
            .await
            .expect_err("stale delete");
        assert!(e.is_status(409), "{e}");
        let live = kube
            .object("v1", "ConfigMap", Some(&ns), "probe")
            .await
            .expect("still there");
        assert_eq!(live["data"]["k"], "1");
        let current = live["metadata"]["resourceVersion"]
            .as_str()
            .expect("rv")
            .to_string();
        assert!(cluster.delete_at(&p, &current).await.expect("delete"));
    })
    .await;
}
