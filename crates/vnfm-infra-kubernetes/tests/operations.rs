//! Package changes that name no manifests, shared networks used by concurrent instances,
//! operate (stop and start) and change of flavour, on the real control plane.
//!
//! The file stays whole: its scenarios share the requests, descriptors and readers at its top.

use crate::support;

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{Value, json};
use support::real::{
    Kube, NAD_CRD_NAME, Recorder, assert_pods_ready, corpus_names, in_namespace,
    shared_network_names, with_clean_up,
};
use support::*;
use vnfm_driver_api::memory::MemArtifacts;
use vnfm_driver_api::{InfraStep, ResourceTarget};
use vnfm_infra_kubernetes::KubernetesDriver;
use vnfm_types::{LcmOperationType as Op, StopType, TerminationType, VnfOperationalState, VnfdId};

fn counts(c: &[(&str, u32)], flavour: &str) -> ResourceTarget {
    ResourceTarget {
        flavour_id: flavour.into(),
        vdu_instances: c.iter().map(|(v, n)| (v.to_string(), *n)).collect(),
        ..Default::default()
    }
}

fn terminate() -> InfraStep {
    InfraStep::Terminate {
        termination_type: TerminationType::Forceful,
        graceful_timeout_seconds: None,
    }
}

fn forceful() -> Value {
    json!({"terminationType": "FORCEFUL"})
}

/// A VNFD with one flavour `simple` whose VDUs are named after their workloads.
fn vnfd(id: &str, vdus: &[(&str, &str)]) -> vnfm_descriptor::Vnfd {
    let vdus: Vec<Value> = vdus
        .iter()
        .map(|(id, name)| {
            json!({"id": id, "name": name, "kind": "osContainerDeployableUnit",
                "nodeType": "tosca.nodes.nfv.Vdu.OsContainerDeployableUnit",
                "minInstances": 0, "maxInstances": 3})
        })
        .collect();
    serde_json::from_value(json!({
        "descriptorId": id, "descriptorVersion": "1.0", "provider": "Acme", "productName": "CNF",
        "softwareVersion": "1.0", "toscaDefinitionsVersion": "tosca_simple_yaml_1_3",
        "vnfNodeType": "acme.CNF", "entryDefinitions": "Definitions/top.yaml",
        "flavours": [{"id": "simple", "file": "Definitions/df.yaml", "vdus": vdus}]
    }))
    .expect("vnfd")
}

fn config_map(version: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: web-config}}\ndata: {{version: \"{version}\"}}\n"
    )
}

fn service(port: u16) -> String {
    format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{name: web}}\nspec:\n  selector: {{app: web}}\n  ports: [{{port: {port}, targetPort: 80}}]\n"
    )
}

fn web_deployment(image: &str, replicas: u32) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web}}\nspec:\n  replicas: {replicas}\n  selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata: {{labels: {{app: web}}}}\n    spec:\n      containers: [{{name: web, image: \"{image}\"}}]\n"
    )
}

const DEF_FILES: [&str; 3] = [
    "Files/kubernetes/config.yaml",
    "Files/kubernetes/service.yaml",
    "Files/kubernetes/deployment.yaml",
];

fn web_package(version: &str, port: u16, image: &str) -> Arc<MemArtifacts> {
    Arc::new(
        MemArtifacts::new()
            .with(DEF_FILES[0], config_map(version))
            .with(DEF_FILES[1], service(port))
            .with(DEF_FILES[2], web_deployment(image, 1)),
    )
}

/// Every write request (apply, create, patch, update, delete) in the log.
/// The image of Deployment `ns`/`name` on the real control plane.
async fn image(kube: &Kube, ns: &str, name: &str) -> Value {
    kube.object("apps/v1", "Deployment", Some(ns), name)
        .await
        .map(|d| d["spec"]["template"]["spec"]["containers"][0]["image"].clone())
        .unwrap_or(Value::Null)
}

/// The successful writes of objects in namespace `ns` since `mark` ([`Kube::audit_mark`]).
async fn writes(kube: &Kube, mark: usize, ns: &str) -> Vec<String> {
    kube.log_since(mark, ns, &[])
        .await
        .iter()
        .filter(|e| {
            matches!(
                e.verb.as_str(),
                "apply" | "create" | "patch" | "update" | "delete"
            ) && e.code < 300
        })
        .map(|e| format!("{} {}", e.verb, e.object()))
        .collect()
}

#[vnfm_test_env::needs(kwok)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_package_change_without_def_files_renders_the_recorded_files_from_the_new_package() {
    in_namespace("chg", &[], |kube, ns| async move {
        let ns = ns.as_str();
        let d = driver();
        let old = vnfd("vnfd-web-1", &[("VDU1", "web")]);
        let mut call = Call::new(
            old.clone(),
            web_package("1", 80, "nginx:1.26"),
            kube.vim.clone(),
            ns,
        );
        call.flavour = "simple".into();
        call.run(
            &d,
            Op::Instantiate,
            InfraStep::Instantiate {
                target: counts(&[("VDU1", 1)], "simple"),
            },
            json!({"flavourId": "simple", "additionalParams": {
            "lcm-kubernetes-def-files": DEF_FILES, "namespace": ns}}),
        )
        .await
        .expect("instantiate");
        assert_eq!(call.state["defFiles"], json!(DEF_FILES));
        let uid = async |kind: &str, name: &str| {
            kube.object("v1", kind, Some(ns), name)
                .await
                .map(|o| o["metadata"]["uid"].clone())
                .unwrap_or(Value::Null)
        };
        let (config_uid, service_uid) = (
            uid("ConfigMap", "web-config").await,
            uid("Service", "web").await,
        );
        let before_change = call.state.clone();

        // The new package changes all three files; the request names none.
        call.vnfd = Arc::new(vnfd("vnfd-web-2", &[("VDU1", "web")]));
        call.files = web_package("2", 8080, "nginx:1.27");
        let mark = Kube::audit_mark();
        let out = call
            .run(
                &d,
                Op::ChangeVnfpkg,
                InfraStep::ChangeVnfpkg {
                    from_vnfd_id: VnfdId::new("vnfd-web-1"),
                    to_vnfd_id: VnfdId::new("vnfd-web-2"),
                },
                json!({"vnfdId": "vnfd-web-2", "additionalParams": {}}),
            )
            .await
            .expect("change");
        let cm = kube
            .object("v1", "ConfigMap", Some(ns), "web-config")
            .await
            .expect("the ConfigMap survives");
        assert_eq!(cm["data"]["version"], "2", "with the new package's content");
        let svc = kube
            .object("v1", "Service", Some(ns), "web")
            .await
            .expect("the Service survives");
        assert_eq!(svc["spec"]["ports"][0]["port"], 8080);
        assert_eq!(
            (
                uid("ConfigMap", "web-config").await,
                uid("Service", "web").await
            ),
            (config_uid.clone(), service_uid.clone()),
            "updated in place, not re-created"
        );
        let deleted = objects(&kube.log_since(mark, ns, &[]).await, "delete");
        assert!(
            !deleted
                .iter()
                .any(|o| o.starts_with("ConfigMap/") || o.starts_with("Service/")),
            "{deleted:?}"
        );
        assert_eq!(image(&kube, ns, "web").await, "nginx:1.27");
        assert_eq!(pods_per_vdu(&out).get("VDU1"), Some(&1));
        assert_eq!(call.state["vnfdId"], "vnfd-web-2");
        assert_eq!(call.state["defFiles"], json!(DEF_FILES));

        // A package without one of the recorded files: refused before anything is written.
        let after_change = call.state.clone();
        // What the package defines (the Deployment's status is the controller's).
        let snapshot = async || {
            [
                kube.object("v1", "ConfigMap", Some(ns), "web-config").await,
                kube.object("v1", "Service", Some(ns), "web").await,
                kube.object("apps/v1", "Deployment", Some(ns), "web")
                    .await
                    .map(|d| d["spec"].clone()),
            ]
        };
        let cluster_before = snapshot().await;
        call.vnfd = Arc::new(vnfd("vnfd-web-3", &[("VDU1", "web")]));
        call.files = Arc::new(
            MemArtifacts::new()
                .with(DEF_FILES[0], config_map("3"))
                .with(DEF_FILES[2], web_deployment("nginx:1.28", 1)),
        );
        let mark = Kube::audit_mark();
        let change3 = json!({"vnfdId": "vnfd-web-3", "additionalParams": {}});
        let err = call
            .run(
                &d,
                Op::ChangeVnfpkg,
                InfraStep::ChangeVnfpkg {
                    from_vnfd_id: VnfdId::new("vnfd-web-2"),
                    to_vnfd_id: VnfdId::new("vnfd-web-3"),
                },
                change3.clone(),
            )
            .await
            .expect_err("missing file");
        assert_eq!(err.kind(), "invalidInput", "{err}");
        let text = err.to_string();
        assert!(
            text.contains("`Files/kubernetes/service.yaml`")
                && !text.contains("`Files/kubernetes/config.yaml` (")
                && text.contains("vnfd-web-3")
                && text.contains("lcm-kubernetes-def-files"),
            "{text}"
        );
        let writes = writes(&kube, mark, ns).await;
        assert!(writes.is_empty(), "{writes:?}");
        assert_eq!(snapshot().await, cluster_before, "the cluster is unchanged");
        assert_eq!(call.state, after_change);
        // Its rollback finds nothing of it to undo.
        call.run(
            &d,
            Op::ChangeVnfpkg,
            InfraStep::RollbackChangeVnfpkg {
                restore_vnfd_id: VnfdId::new("vnfd-web-2"),
            },
            change3,
        )
        .await
        .expect("rollback of the refused change");
        assert_eq!(
            kube.object("v1", "ConfigMap", Some(ns), "web-config")
                .await
                .expect("cm")["data"]["version"],
            "2"
        );

        // The rollback of the successful change restores the first package's objects.
        call.vnfd = Arc::new(old);
        let out = call
            .run(
                &d,
                Op::ChangeVnfpkg,
                InfraStep::RollbackChangeVnfpkg {
                    restore_vnfd_id: VnfdId::new("vnfd-web-1"),
                },
                json!({"vnfdId": "vnfd-web-2", "additionalParams": {}}),
            )
            .await
            .expect("rollback");
        assert_eq!(
            kube.object("v1", "ConfigMap", Some(ns), "web-config")
                .await
                .expect("cm")["data"]["version"],
            "1"
        );
        assert_eq!(
            kube.object("v1", "Service", Some(ns), "web")
                .await
                .expect("svc")["spec"]["ports"][0]["port"],
            80
        );
        assert_eq!(image(&kube, ns, "web").await, "nginx:1.26");
        assert_eq!(pods_per_vdu(&out).get("VDU1"), Some(&1));
        assert_eq!(call.state["vnfdId"], before_change["vnfdId"]);
        assert_eq!(call.state["defFiles"], json!(DEF_FILES));
        assert_eq!(call.state["objects"], before_change["objects"]);
        call.run(&d, Op::Terminate, terminate(), forceful())
            .await
            .expect("terminate");
        let left = kube.labelled("vnfm.io/vnf-instance-id", ns).await;
        assert!(left.is_empty(), "left behind: {left:?}");
    })
    .await;
}

const NAD_USER: &str = "apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata: {name: net-a, namespace: shared-net}
spec:
  config: '{\"cniVersion\": \"0.3.1\", \"type\": \"macvlan\"}'
---
apiVersion: v1
kind: ConfigMap
metadata: {name: uses-net-a}
data: {network: shared-net/net-a}
";

const NAD: &str = "k8s.cni.cncf.io/v1";

fn users(nad: &Value) -> BTreeSet<String> {
    nad.pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .map(|m| {
            m.keys()
                .filter_map(|k| k.strip_prefix("vnfm.io/user-"))
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

async fn instantiate_user(d: Arc<KubernetesDriver>, mut call: Call, id: String) -> (Call, String) {
    call.run(
        &d,
        Op::Instantiate,
        InfraStep::Instantiate {
            target: counts(&[], "simple"),
        },
        json!({"flavourId": "simple", "additionalParams": {"lcm-kubernetes-def-files": ["Files/net.yaml"]}}),
    )
    .await
    .unwrap_or_else(|e| panic!("instantiate {id}: {e}"));
    (call, id)
}

async fn terminate_user(d: Arc<KubernetesDriver>, mut call: Call, id: String) -> String {
    call.run(&d, Op::Terminate, terminate(), forceful())
        .await
        .unwrap_or_else(|e| panic!("terminate {id}: {e}"));
    id
}

#[vnfm_test_env::needs(kwok)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_network_exists_exactly_while_concurrent_instances_use_it() {
    // On the real control plane: what the API server stored, in the order it stored it, is
    // what a watch on the network reports; each user's membership must be one unbroken run of
    // those states, and the network deleted only by its last user.
    let _names = shared_network_names().await;
    let kube = Kube::get();
    let base = Kube::namespace("net");
    let rounds = 2;
    let ids: Vec<String> = (0..rounds)
        .flat_map(|r| (0..12).map(move |i| (r, i)))
        .map(|(r, i)| format!("{base}-{r}-{i}"))
        .collect();
    let namespaces: Vec<String> = ids.iter().map(|id| format!("vnf-{id}")).collect();
    let mut clean: Vec<&str> = namespaces.iter().map(String::as_str).collect();
    clean.push("shared-net");
    let crd = [(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        NAD_CRD_NAME,
    )];
    with_clean_up(&kube, &clean, &crd, async move {
        let kube = Arc::new(Kube::get());
        kube.create_shared_network_kind().await;
        let watch = Recorder::start(
            &kube,
            NAD,
            "NetworkAttachmentDefinition",
            Some("shared-net"),
        )
        .await;
        let files = Arc::new(MemArtifacts::new().with("Files/net.yaml", NAD_USER));
        let net_vnfd = vnfd("vnfd-net", &[]);
        let d = Arc::new(driver());
        let call = |id: &str| Call::new(net_vnfd.clone(), files.clone(), kube.vim.clone(), id);
        let nad = || async {
            kube.object(
                NAD,
                "NetworkAttachmentDefinition",
                Some("shared-net"),
                "net-a",
            )
            .await
        };
        // Races are a matter of timing: rounds of joining and leaving.
        for round in 0..rounds {
            // Phase 1: eight instances register at once.
            let mut running = Vec::new();
            for i in 0..8 {
                let id = format!("{base}-{round}-{i}");
                running.push(tokio::spawn(instantiate_user(d.clone(), call(&id), id)));
            }
            let mut live: Vec<(Call, String)> = Vec::new();
            for t in running {
                live.push(t.await.expect("task"));
            }
            let expected = |live: &[(Call, String)]| -> BTreeSet<String> {
                live.iter().map(|(_, id)| id.clone()).collect()
            };
            assert_eq!(users(&nad().await.expect("created")), expected(&live));

            // Phase 2: four leave while four others join.
            let mut leave = Vec::new();
            for (c, id) in live.drain(..4) {
                leave.push(tokio::spawn(terminate_user(d.clone(), c, id)));
            }
            let mut join = Vec::new();
            for i in 8..12 {
                let id = format!("{base}-{round}-{i}");
                join.push(tokio::spawn(instantiate_user(d.clone(), call(&id), id)));
            }
            for t in leave {
                t.await.expect("task");
            }
            for t in join {
                live.push(t.await.expect("task"));
            }
            assert_eq!(users(&nad().await.expect("still used")), expected(&live));

            // Phase 3: the last eight leave at once: the last one out deletes the network.
            let mut leave = Vec::new();
            for (c, id) in live.drain(..) {
                leave.push(tokio::spawn(terminate_user(d.clone(), c, id)));
            }
            for t in leave {
                t.await.expect("task");
            }
            assert!(nad().await.is_none(), "no user is left: {:?}", nad().await);
        }
        watch
            .wait_until("the last deletion", |e| {
                e.iter().filter(|(what, _)| what == "DELETED").count() == rounds
            })
            .await;
        let events = watch.events();
        // One network per round (a new uid after each deletion), each ending deleted.
        let networks = watch.uids();
        assert_eq!(networks.len(), rounds, "{networks:?}");
        for (uid, _) in &networks {
            let last = events
                .iter()
                .rfind(|(_, o)| o["metadata"]["uid"] == uid.as_str())
                .expect("an event");
            assert_eq!(last.0, "DELETED", "network {uid} was not deleted last");
            // Deleted by its last user: no other user was recorded any more.
            assert!(
                users(&last.1).len() <= 1,
                "deleted with users {:?}",
                users(&last.1)
            );
        }
        // Each user was recorded, in one unbroken run of states: never dropped while it used
        // the network (nor the network deleted under it) and registered again.
        for id in &ids {
            let with: Vec<usize> = events
                .iter()
                .enumerate()
                .filter(|(_, (_, o))| users(o).contains(id))
                .map(|(i, _)| i)
                .collect();
            assert!(!with.is_empty(), "{id} was never recorded as a user");
            let (first, last) = (with[0], with[with.len() - 1]);
            assert_eq!(
                with.len(),
                last - first + 1,
                "{id}'s use was interrupted: states {with:?} of {}",
                events.len()
            );
            assert!(
                events[first..last]
                    .iter()
                    .all(|(what, _)| what != "DELETED"),
                "the network was deleted while {id} used it"
            );
        }
    })
    .await;
}

/// Pods whose containers take their whole grace period (a minute) to exit: simulated pods
/// labelled `vnfm.test/exit-at-grace-end` are gone only when it ends.
const STOPPABLE: &str = "apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web, vnfm.test/exit-at-grace-end: 'true'}}
    spec:
      terminationGracePeriodSeconds: 60
      containers: [{name: web, image: nginx}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 1
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db, vnfm.test/exit-at-grace-end: 'true'}}
    spec:
      terminationGracePeriodSeconds: 60
      containers: [{name: db, image: postgres}]
";

const AGENT: &str = "apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: agent, image: fluentd}]
";

fn operate(to: VnfOperationalState, stop: Option<StopType>, grace: Option<u32>) -> InfraStep {
    InfraStep::Operate {
        change_state_to: to,
        stop_type: stop,
        graceful_stop_timeout_seconds: grace,
        vnfc_resource_ids: Vec::new(),
    }
}

/// The pods of instance `id`, as `Pod/namespace/name`.
async fn instance_pods(kube: &Kube, id: &str) -> Vec<String> {
    kube.labelled("vnfm.io/vnf-instance-id", id)
        .await
        .into_iter()
        .filter(|o| o.starts_with("Pod/"))
        .collect()
}

#[vnfm_test_env::needs(kwok)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_scales_workloads_to_zero_with_the_grace_period_and_start_restores_them() {
    // On the real control plane. Containers take a minute to exit on their own: only the
    // request's grace period (one second) lets the stop finish within the driver's 20 s
    // deletion budget.
    in_namespace("op", &[], |kube, ns| async move {
        let files = Arc::new(MemArtifacts::new().with("Files/app.yaml", STOPPABLE));
        let mut call = Call::new(
            vnfd("vnfd-op", &[("VDU1", "web"), ("VDU2", "db")]),
            files,
            kube.vim.clone(),
            &ns,
        );
        let d = driver();
        let out = call
            .run(
                &d,
                Op::Instantiate,
                InfraStep::Instantiate {
                    target: counts(&[("VDU1", 2), ("VDU2", 1)], "simple"),
                },
                json!({"flavourId": "simple", "additionalParams": {
                "lcm-kubernetes-def-files": ["Files/app.yaml"], "namespace": ns}}),
            )
            .await
            .expect("instantiate");
        let pods = pods_per_vdu(&out);
        assert_eq!((pods.get("VDU1"), pods.get("VDU2")), (Some(&2), Some(&1)));
        assert_pods_ready(&kube, &ns, "instantiate").await;
        let pod_events = Recorder::start(&kube, "v1", "Pod", Some(&ns)).await;
        let started_state = call.state.clone();
        let started_instance = call.instance.clone();

        let stop = operate(
            VnfOperationalState::Stopped,
            Some(StopType::Graceful),
            Some(1),
        );
        let stop_req =
            json!({"changeStateTo": "STOPPED", "stopType": "GRACEFUL", "gracefulStopTimeout": 1});
        let out = call
            .run(&d, Op::Operate, stop.clone(), stop_req.clone())
            .await
            .expect("stop");
        assert_eq!(out.vnf_state, Some(VnfOperationalState::Stopped));
        assert!(out.resources.vnfc_resource_info.is_empty());
        assert!(out.resources.vnfc_info.is_empty());
        assert_eq!(
            out.resource_changes.affected_vnfcs.as_ref().map(Vec::len),
            Some(3),
            "three pods removed"
        );
        assert!(instance_pods(&kube, &ns).await.is_empty());
        let replicas = async |kind: &str, name: &str| {
            kube.object("apps/v1", kind, Some(&ns), name)
                .await
                .map(|o| o["spec"]["replicas"].clone())
                .unwrap_or(Value::Null)
        };
        assert_eq!(
            (
                replicas("Deployment", "web").await,
                replicas("StatefulSet", "db").await
            ),
            (json!(0), json!(0))
        );
        let stopped = json!([
            {"kind": "Deployment", "namespace": ns, "name": "web", "replicas": 2},
            {"kind": "StatefulSet", "namespace": ns, "name": "db", "replicas": 1}
        ]);
        assert_eq!(call.state["stopped"], stopped);
        // Each pod was given the request's grace period (the controllers that scaled them in
        // asked for the pods' own minute first; at the end the node deletes a pod with 0).
        pod_events
            .wait_until("three pods deleted", |events| {
                events.iter().filter(|(what, _)| what == "DELETED").count() == 3
            })
            .await;
        let events = pod_events.events();
        for (_, gone) in events.iter().filter(|(what, _)| what == "DELETED") {
            let name = &gone["metadata"]["name"];
            let graces: Vec<&Value> = events
                .iter()
                .filter(|(_, o)| o["metadata"]["name"] == *name)
                .map(|(_, o)| &o["metadata"]["deletionGracePeriodSeconds"])
                .filter(|g| !g.is_null())
                .collect();
            assert!(
                graces.contains(&&json!(1)),
                "pod {name} was not given the request's 1 s: {graces:?}"
            );
        }

        // Retried from the state before the stop (a crash before it was recorded) or after it:
        // the same result, the replicas to restore are still the ones from before.
        let stopped_state = call.state.clone();
        let stopped_instance = call.instance.clone();
        call.state = started_state;
        call.instance = started_instance;
        call.run(&d, Op::Operate, stop.clone(), stop_req.clone())
            .await
            .expect("retried stop");
        assert_eq!(call.state["stopped"], stopped);
        assert_eq!(call.state, stopped_state);
        call.instance = stopped_instance;
        call.run(&d, Op::Operate, stop, stop_req)
            .await
            .expect("stop again");
        assert_eq!(call.state["stopped"], stopped);

        // While stopped, a scale records the count to restore and starts nothing; a package
        // change is refused.
        call.run(
            &d,
            Op::ScaleToLevel,
            InfraStep::ScaleToLevel {
                from: counts(&[("VDU1", 2), ("VDU2", 1)], "simple"),
                target: counts(&[("VDU1", 3), ("VDU2", 1)], "simple"),
            },
            json!({}),
        )
        .await
        .expect("scale while stopped");
        assert!(instance_pods(&kube, &ns).await.is_empty());
        assert_eq!(replicas("Deployment", "web").await, json!(0));
        assert_eq!(call.state["stopped"][0]["replicas"], 3);
        let err = call
            .run(
                &d,
                Op::ChangeVnfpkg,
                InfraStep::ChangeVnfpkg {
                    from_vnfd_id: VnfdId::new("vnfd-op"),
                    to_vnfd_id: VnfdId::new("vnfd-op-2"),
                },
                json!({"vnfdId": "vnfd-op-2"}),
            )
            .await
            .expect_err("stopped");
        assert!(err.to_string().contains("start it"), "{err}");

        let start = operate(VnfOperationalState::Started, None, None);
        let out = call
            .run(
                &d,
                Op::Operate,
                start.clone(),
                json!({"changeStateTo": "STARTED"}),
            )
            .await
            .expect("start");
        assert_eq!(out.vnf_state, Some(VnfOperationalState::Started));
        let pods = pods_per_vdu(&out);
        assert_eq!((pods.get("VDU1"), pods.get("VDU2")), (Some(&3), Some(&1)));
        assert_eq!(
            (
                replicas("Deployment", "web").await,
                replicas("StatefulSet", "db").await
            ),
            (json!(3), json!(1))
        );
        assert!(call.state.get("stopped").is_none(), "{}", call.state);
        assert_eq!(instance_pods(&kube, &ns).await.len(), 4);
        assert_pods_ready(&kube, &ns, "start").await;
        // Starting a started VNF changes nothing.
        let out = call
            .run(&d, Op::Operate, start, json!({"changeStateTo": "STARTED"}))
            .await
            .expect("start again");
        assert_eq!(out.resources.vnfc_resource_info.len(), 4);
        assert!(
            out.resource_changes
                .affected_vnfcs
                .as_ref()
                .is_none_or(Vec::is_empty)
        );

        // Single VNFCs cannot be operated.
        let one = InfraStep::Operate {
            change_state_to: VnfOperationalState::Stopped,
            stop_type: None,
            graceful_stop_timeout_seconds: None,
            vnfc_resource_ids: vec![out.resources.vnfc_resource_info[0].id.clone()],
        };
        let err = call
            .run(&d, Op::Operate, one, json!({"changeStateTo": "STOPPED"}))
            .await
            .expect_err("single VNFC");
        assert!(err.to_string().contains("operate the whole VNF"), "{err}");
        call.run(&d, Op::Terminate, terminate(), forceful())
            .await
            .expect("terminate");
    })
    .await;
}

#[vnfm_test_env::needs(kwok)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vnf_with_a_daemonset_is_not_stopped_and_nothing_changes() {
    // A DaemonSet has a pod per node: no node may come or go meanwhile (the corpus test adds
    // one), so it takes the lock of those tests.
    let _names = corpus_names().await;
    in_namespace("ds", &[], |kube, ns| async move {
        let files = Arc::new(
            MemArtifacts::new()
                .with("Files/app.yaml", STOPPABLE)
                .with("Files/agent.yaml", AGENT),
        );
        let mut call = Call::new(
            vnfd(
                "vnfd-ds",
                &[("VDU1", "web"), ("VDU2", "db"), ("VDU3", "agent")],
            ),
            files,
            kube.vim.clone(),
            &ns,
        );
        let d = driver();
        call.run(
            &d,
            Op::Instantiate,
            InfraStep::Instantiate {
                target: counts(&[("VDU1", 2), ("VDU2", 1), ("VDU3", 1)], "simple"),
            },
            json!({"flavourId": "simple", "additionalParams": {
            "lcm-kubernetes-def-files": ["Files/app.yaml", "Files/agent.yaml"], "namespace": ns}}),
        )
        .await
        .expect("instantiate");
        let pods = instance_pods(&kube, &ns).await;
        assert_eq!(pods.len(), 5, "two nodes, one agent each: {pods:?}");
        let state = call.state.clone();
        let mark = Kube::audit_mark();
        let err = call
            .run(
                &d,
                Op::Operate,
                operate(VnfOperationalState::Stopped, Some(StopType::Forceful), None),
                json!({"changeStateTo": "STOPPED", "stopType": "FORCEFUL"}),
            )
            .await
            .expect_err("a DaemonSet cannot be stopped");
        assert_eq!(err.kind(), "invalidInput", "{err}");
        let text = err.to_string();
        assert!(
            text.contains(&format!("DaemonSet {ns}/agent")) && text.contains("nothing was changed"),
            "{text}"
        );
        assert!(!text.contains(&format!("Deployment {ns}/web")), "{text}");
        let writes = writes(&kube, mark, &ns).await;
        assert!(writes.is_empty(), "{writes:?}");
        assert_eq!(instance_pods(&kube, &ns).await, pods);
        assert_eq!(call.state, state);
        call.run(&d, Op::Terminate, terminate(), forceful())
            .await
            .expect("terminate");
    })
    .await;
}

#[vnfm_test_env::needs(kwok)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn change_flavour_rolls_to_the_new_flavours_manifests_and_keeps_the_namespace() {
    // The driver makes the namespace `vnf-<instance id>`.
    in_namespace("vnf-df", &[], |kube, ns| async move {
        let id = ns.strip_prefix("vnf-").expect("prefix").to_string();
        let dir = std::path::PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/packages/cnf-two-flavours"
        ));
        let vnfd = load_vnfd(&dir);
        let ids: Vec<&str> = vnfd.flavours.iter().map(|f| f.id.as_str()).collect();
        assert!(ids.contains(&"small") && ids.contains(&"large"), "{ids:?}");
        let mut call = Call::new(vnfd, Arc::new(DirArtifacts(dir)), kube.vim.clone(), &id);
        call.flavour = "small".into();
        let d = driver();
        let small = counts(&[("VDU1", 1)], "small");
        let out = call
            .run(
                &d,
                Op::Instantiate,
                InfraStep::Instantiate {
                    target: small.clone(),
                },
                json!({"flavourId": "small"}),
            )
            .await
            .expect("instantiate");
        assert_eq!(pods_per_vdu(&out).get("VDU1"), Some(&1));
        let ns = ns.as_str();
        assert_pods_ready(&kube, ns, "instantiate").await;
        assert!(
            kube.object("v1", "ConfigMap", Some(ns), "vdu1-small-config")
                .await
                .is_some()
        );
        assert_eq!(image(&kube, ns, "vdu1").await, "nginx:alpine");
        let ns_uid = kube
            .object("v1", "Namespace", None, ns)
            .await
            .expect("namespace")["metadata"]["uid"]
            .clone();

        let large = counts(&[("VDU1", 2), ("VDU2", 1)], "large");
        let step = InfraStep::ChangeFlavour {
            from: small,
            target: large,
        };
        let request = json!({"newFlavourId": "large"});
        let before = call.state.clone();
        let before_instance = call.instance.clone();
        let out = call
            .run(&d, Op::ChangeFlavour, step.clone(), request.clone())
            .await
            .expect("change flavour");
        call.flavour = "large".into();
        let pods = pods_per_vdu(&out);
        assert_eq!((pods.get("VDU1"), pods.get("VDU2")), (Some(&2), Some(&1)));
        assert_pods_ready(&kube, ns, "change flavour").await;
        assert!(
            kube.object("v1", "ConfigMap", Some(ns), "vdu1-small-config")
                .await
                .is_none(),
            "the small flavour's objects are pruned"
        );
        assert_eq!(
            kube.object("v1", "ConfigMap", Some(ns), "vdu1-large-config")
                .await
                .expect("large config")["data"]["profile"],
            "large"
        );
        assert_eq!(image(&kube, ns, "vdu1").await, "nginx:1.27-alpine");
        assert_eq!(image(&kube, ns, "vdu2").await, "redis:7.4-alpine");
        assert_eq!(
            kube.object("v1", "Namespace", None, ns)
                .await
                .expect("namespace")["metadata"]["uid"],
            ns_uid,
            "the namespace is kept"
        );
        assert_eq!(call.state["flavourId"], "large");
        assert_eq!(call.state["counts"], json!({"VDU1": 2, "VDU2": 1}));
        let changed = call.state.clone();

        // Retried after it was recorded, or from the state before it: the same objects.
        call.run(&d, Op::ChangeFlavour, step.clone(), request.clone())
            .await
            .expect("retry after");
        assert_eq!(call.state, changed);
        call.state = before;
        call.instance = before_instance;
        call.flavour = "small".into();
        call.run(&d, Op::ChangeFlavour, step, request)
            .await
            .expect("retry before");
        assert_eq!(call.state["objects"], changed["objects"]);
        call.flavour = "large".into();

        // External connectivity is the manifests' business.
        let err = call
            .run(
                &d,
                Op::ChangeExtConn,
                InfraStep::ChangeExtConn {
                    cpd_ids: vec!["cp".into()],
                },
                json!({}),
            )
            .await
            .expect_err("unsupported");
        assert_eq!(err.kind(), "unsupported", "{err}");
        assert!(err.to_string().contains("CHANGE_VNFPKG"), "{err}");

        call.run(&d, Op::Terminate, terminate(), forceful())
            .await
            .expect("terminate");
        let left = kube.labelled("vnfm.io/vnf-instance-id", &id).await;
        assert!(left.is_empty(), "left behind: {left:?}");
        assert!(kube.object("v1", "Namespace", None, ns).await.is_none());
    })
    .await;
}
