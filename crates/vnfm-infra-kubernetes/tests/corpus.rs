//! The Tacker corpus CNF packages through instantiate -> scale -> heal -> terminate, with the
//! apply order and its exact reverse asserted from the server's request log: on the real
//! control plane of `KUBECONFIG` (`scripts/test-env/kubernetes.sh`; built ignored without it,
//! see `build.rs`; requests from its audit log). `v1-cnf-all-kinds` as Tacker ships it is
//! refused by its own ResourceQuota there (its bare Pod): once as shipped, a failure rolled back
//! cleanly, and once without the quota, through the whole lifecycle.

use crate::support;

use std::sync::Arc;

use serde_json::{Value, json};
use support::real::{Kube, assert_pods_ready, corpus_names, with_clean_up};
use support::*;
use vnfm_driver_api::{HealScope, HealVnfc, InfraStep, ResourceTarget};
use vnfm_infra_kubernetes::order::tier;
use vnfm_kube_emulator::LogEntry;
use vnfm_types::{LcmOperationType as Op, ScaleType, TerminationType};

fn target(flavour: &str, counts: &[(&str, u32)]) -> ResourceTarget {
    ResourceTarget {
        flavour_id: flavour.into(),
        vdu_instances: counts.iter().map(|(v, c)| (v.to_string(), *c)).collect(),
        ..Default::default()
    }
}

fn instantiate_req(flavour: &str, params: Value) -> Value {
    json!({"flavourId": flavour, "additionalParams": params})
}

/// The applies of the driver's objects (the namespace bookkeeping apply is first).
fn applies(log: &[LogEntry]) -> Vec<LogEntry> {
    log.iter()
        .filter(|e| e.verb == "apply" && e.code < 300)
        .cloned()
        .collect()
}

fn assert_tier_order(applied: &[LogEntry]) {
    let tiers: Vec<(u8, String)> = applied
        .iter()
        .map(|e| {
            let (g, k) = group_kind(e);
            (tier(&g, &k), e.object())
        })
        .collect();
    for w in tiers.windows(2) {
        assert!(
            w[0].0 <= w[1].0,
            "{} (tier {}) was applied before {} (tier {})",
            w[1].1,
            w[1].0,
            w[0].1,
            w[0].0
        );
    }
}

/// Deletions are the applies in exact reverse (the namespace is created and removed around
/// everything else).
fn assert_reverse_deletion(applied: &[LogEntry], log: &[LogEntry]) {
    let applied: Vec<String> = applied.iter().map(LogEntry::object).collect();
    let deleted: Vec<String> = objects(log, "delete")
        .into_iter()
        .filter(|o| !o.starts_with("Pod/") || applied.contains(o))
        .filter(|o| applied.contains(o))
        .collect();
    let mut expected = applied.clone();
    expected.reverse();
    expected.dedup();
    assert_eq!(
        deleted, expected,
        "deletion is not the exact reverse of the apply order"
    );
}

const V2_FILES: &[&str] = &[
    "Files/kubernetes/bindings.yaml",
    "Files/kubernetes/clusterrole_clusterrolebinding_SA.yaml",
    "Files/kubernetes/config-map.yaml",
    "Files/kubernetes/controller-revision.yaml",
    "Files/kubernetes/daemon-set.yaml",
    "Files/kubernetes/deployment.yaml",
    "Files/kubernetes/horizontal-pod-autoscaler.yaml",
    "Files/kubernetes/job.yaml",
    "Files/kubernetes/limit-range.yaml",
    "Files/kubernetes/local-subject-access-review.yaml",
    "Files/kubernetes/multiple_yaml_lease.yaml",
    "Files/kubernetes/multiple_yaml_network-policy.yaml",
    "Files/kubernetes/multiple_yaml_priority-class.yaml",
    "Files/kubernetes/namespace.yaml",
    "Files/kubernetes/persistent-volume-0.yaml",
    "Files/kubernetes/persistent-volume-1.yaml",
    "Files/kubernetes/pod.yaml",
    "Files/kubernetes/pod-template.yaml",
    "Files/kubernetes/replicaset_service_secret.yaml",
    "Files/kubernetes/resource-quota.yaml",
    "Files/kubernetes/role_rolebinding_SA.yaml",
    "Files/kubernetes/self-subject-access-review_and_self-subject-rule-review.yaml",
    "Files/kubernetes/statefulset.yaml",
    "Files/kubernetes/storage-class.yaml",
    "Files/kubernetes/storage-class_pv_pvc.yaml",
    "Files/kubernetes/subject-access-review.yaml",
    "Files/kubernetes/token-review.yaml",
];

/// The cluster-scoped objects of `v2-cnf-instantiate-resources` and `v1-cnf-all-kinds` (the
/// same names), and the node the first's Binding names.
const CLUSTER_SCOPED: &[(&str, &str, &str)] = &[
    ("v1", "Namespace", "curry"),
    ("storage.k8s.io/v1", "StorageClass", "my-storage-class"),
    ("storage.k8s.io/v1", "StorageClass", "curry-sc-local"),
    ("v1", "PersistentVolume", "curry-sc-pv"),
    ("v1", "PersistentVolume", "curry-sc-pv-0"),
    ("v1", "PersistentVolume", "curry-sc-pv-1"),
    ("scheduling.k8s.io/v1", "PriorityClass", "high-priority"),
    (
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        "curry-cluster-role",
    ),
    (
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        "curry-cluster-rolebinding",
    ),
    ("v1", "Node", "k8-worker2"),
];

#[vnfm_test_env::needs(kwok, corpus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v2_cnf_instantiate_resources_full_lifecycle() {
    // On the real control plane, in a namespace of its own; the package's cluster-scoped
    // names are fixed, so one such test at a time.
    let _names = corpus_names().await;
    let kube = Kube::get();
    let ns = Kube::namespace("cnf-v2");
    // The package's Binding places its bare pod on node `k8-worker2`: a simulated node of that
    // name (removed afterwards with the rest).
    kube.create(
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "k8-worker2",
        "annotations": {"kwok.x-k8s.io/node": "fake"},
        "labels": {"kubernetes.io/hostname": "k8-worker2", "type": "kwok"}},
        "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "2000"},
            "capacity": {"cpu": "64", "memory": "256Gi", "pods": "2000"}}}),
    )
    .await;
    let test_ns = ns.clone();
    with_clean_up(&kube, &[&ns], CLUSTER_SCOPED, async move {
        let kube = Kube::get();
        let ns = test_ns;
        let names: Vec<&str> = CLUSTER_SCOPED.iter().map(|(_, _, n)| *n).collect();
        let mark = Kube::audit_mark();
        let dir = corpus_dir("v2-cnf-instantiate-resources");
        let vnfd = load_vnfd(&dir);
        let mut call = Call::new(vnfd, Arc::new(DirArtifacts(dir)), kube.vim.clone(), &ns);
        let d = driver();
        let counts = [
            ("VDU1", 1),
            ("VDU2", 2),
            ("VDU3", 1),
            ("VDU5", 1),
            ("VDU6", 1),
        ];
        let params = json!({"lcm-kubernetes-def-files": V2_FILES, "namespace": ns});
        let out = call
            .run(
                &d,
                Op::Instantiate,
                InfraStep::Instantiate {
                    target: target("simple", &counts),
                },
                instantiate_req("simple", params),
            )
            .await
            .expect("instantiate");
        assert_pods_ready(&kube, &ns, "instantiate").await;
        let log = kube.log_since(mark, &ns, &names).await;
        let applied = applies(&log);
        // 30 objects of the package (the review kinds and the binding are created, not applied)
        // plus the instance namespace.
        assert_eq!(applied.len(), 31, "{:#?}", objects(&log, "apply"));
        assert_eq!(applied[0].object(), format!("Namespace/{ns}"));
        assert_tier_order(&applied);
        let created = objects(&log, "create");
        for review in [
            "SubjectAccessReview",
            "SelfSubjectAccessReview",
            "TokenReview",
            "LocalSubjectAccessReview",
        ] {
            assert!(
                created.iter().any(|c| c.starts_with(review)),
                "{review} not created: {created:?}"
            );
        }
        // Every namespaced object went to the instance namespace, labelled.
        let cm = kube
            .object("v1", "ConfigMap", Some(&ns), "curry-test001")
            .await
            .expect("config map");
        assert_eq!(cm["metadata"]["labels"]["vnfm.io/vnf-instance-id"], ns);
        assert!(
            kube.object("v1", "ConfigMap", Some("default"), "curry-test001")
                .await
                .is_none()
        );
        // Replicas follow the VDU counts, not the manifest (which says 2 for vdu2... and 1 here).
        let dep = kube
            .object("apps/v1", "Deployment", Some(&ns), "vdu2")
            .await
            .expect("deployment");
        assert_eq!(dep["spec"]["replicas"], 2);
        assert_eq!(
            dep["spec"]["template"]["metadata"]["labels"]["vnfm.io/vdu"],
            "VDU2"
        );
        let pods = pods_per_vdu(&out);
        assert_eq!(pods.get("VDU1"), Some(&1));
        assert_eq!(pods.get("VDU2"), Some(&2));
        assert_eq!(pods.get("VDU3"), Some(&1));
        assert_eq!(pods.get("VDU5"), Some(&1));
        assert_eq!(pods.get("VDU6"), Some(&3), "one DaemonSet pod per node");
        let vnfc = out
            .resources
            .vnfc_resource_info
            .iter()
            .find(|v| v.vdu_id == "VDU5")
            .expect("VDU5 pod");
        assert_eq!(vnfc.id, "vdu5-0");
        let meta = vnfc.metadata.as_ref().expect("metadata");
        assert!(
            meta["nodeName"]
                .as_str()
                .is_some_and(|n| n.starts_with("kwok-node-") || n == "k8-worker2")
        );
        assert!(meta["podIPs"].as_array().is_some_and(|a| !a.is_empty()));
        assert_eq!(
            vnfc.compute_resource.vim_level_resource_type.as_deref(),
            Some("StatefulSet")
        );
        assert_eq!(
            vnfc.storage_resource_ids.as_deref(),
            Some(&["www-vdu5-0".to_string()][..]),
            "{:#}",
            kube.object("v1", "Pod", Some(&ns), "vdu5-0")
                .await
                .unwrap_or_default()
        );
        let storages: Vec<&str> = out
            .resources
            .virtual_storage_resource_info
            .iter()
            .map(|s| s.id.as_str())
            .collect();
        assert_eq!(storages, ["curry-sc-pvc", "www-vdu5-0"]);
        let added = out
            .resource_changes
            .affected_vnfcs
            .as_ref()
            .expect("changes")
            .len();
        assert_eq!(added, out.resources.vnfc_resource_info.len());

        // Scale VDU2 out by one.
        let out = call
            .run(
                &d,
                Op::Scale,
                InfraStep::Scale {
                    aspect_id: "vdu2_aspect".into(),
                    scale_type: ScaleType::ScaleOut,
                    steps: 1,
                    from: target("simple", &counts),
                    target: target(
                        "simple",
                        &[
                            ("VDU1", 1),
                            ("VDU2", 3),
                            ("VDU3", 1),
                            ("VDU5", 1),
                            ("VDU6", 1),
                        ],
                    ),
                },
                json!({"type": "SCALE_OUT", "aspectId": "vdu2_aspect"}),
            )
            .await
            .expect("scale");
        assert_eq!(pods_per_vdu(&out).get("VDU2"), Some(&3));
        let added: Vec<_> = out
            .resource_changes
            .affected_vnfcs
            .clone()
            .unwrap_or_default();
        assert_eq!(added.len(), 1, "{added:?}");
        assert_eq!(added[0].vdu_id, "VDU2");

        // Heal one VDU2 pod: it is replaced by a new one.
        let victim = out
            .resources
            .vnfc_resource_info
            .iter()
            .find(|v| v.vdu_id == "VDU2")
            .expect("a VDU2 pod")
            .id
            .clone();
        let out = call
            .run(
                &d,
                Op::Heal,
                InfraStep::Heal {
                    scope: HealScope::Vnfcs {
                        vnfcs: vec![HealVnfc {
                            vnfc_info_id: None,
                            vnfc_resource_id: victim.clone(),
                            vdu_id: "VDU2".into(),
                        }],
                    },
                },
                json!({}),
            )
            .await
            .expect("heal");
        assert_eq!(pods_per_vdu(&out).get("VDU2"), Some(&3));
        assert!(
            out.resources
                .vnfc_resource_info
                .iter()
                .all(|v| v.id != victim)
        );
        let changes = out
            .resource_changes
            .affected_vnfcs
            .clone()
            .unwrap_or_default();
        assert!(
            changes
                .iter()
                .any(|c| c.id == victim && c.change_type == vnfm_types::ChangeType::Removed)
        );
        assert!(
            changes
                .iter()
                .any(|c| c.change_type == vnfm_types::ChangeType::Added)
        );

        // Heal a bare pod (VDU1): deleted and applied again.
        let out = call
            .run(
                &d,
                Op::Heal,
                InfraStep::Heal {
                    scope: HealScope::Vnfcs {
                        vnfcs: vec![HealVnfc {
                            vnfc_info_id: None,
                            vnfc_resource_id: "vdu1".into(),
                            vdu_id: "VDU1".into(),
                        }],
                    },
                },
                json!({}),
            )
            .await
            .expect("heal pod");
        assert_eq!(pods_per_vdu(&out).get("VDU1"), Some(&1));

        // Terminate: everything goes, in exact reverse order.
        let mark = Kube::audit_mark();
        let _ = call
            .run(
                &d,
                Op::Terminate,
                InfraStep::Terminate {
                    termination_type: TerminationType::Graceful,
                    graceful_timeout_seconds: Some(5),
                },
                json!({"terminationType": "GRACEFUL"}),
            )
            .await
            .expect("terminate");
        let log = kube.log_since(mark, &ns, &names).await;
        assert_reverse_deletion(&applied, &log);
        let left = kube.labelled("vnfm.io/vnf-instance-id", &ns).await;
        assert!(left.is_empty(), "{left:?}");
        assert!(kube.object("v1", "Namespace", None, &ns).await.is_none());
        assert!(
            kube.object("v1", "PersistentVolumeClaim", Some(&ns), "www-vdu5-0")
                .await
                .is_none()
        );
        assert!(call.state.is_null());
    })
    .await;
}

/// The files of `v1-cnf-all-kinds` as Tacker's own test instantiates them (all but the
/// failure and VDU-map variants), sorted.
fn v1_all_kinds_files() -> Vec<String> {
    let dir = corpus_dir("v1-cnf-all-kinds");
    let mut files: Vec<String> = std::fs::read_dir(dir.join("Files/kubernetes"))
        .expect("files")
        .map(|e| {
            format!(
                "Files/kubernetes/{}",
                e.expect("entry").file_name().to_string_lossy()
            )
        })
        .filter(|f| !f.contains("_fail") && !f.contains("vdumap"))
        .collect();
    files.sort();
    files
}

#[vnfm_test_env::needs(kwok, corpus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v1_cnf_all_kinds_as_shipped_is_refused_by_its_own_quota_and_rolls_back_cleanly() {
    // Its LimitRange gives the bare Pod a CPU request, which puts it under the package's own
    // ResourceQuota (scope NotBestEffort, with a memory limit): a real API server refuses the
    // Pod (403, "must specify memory"). The step fails naming it; the rollback removes all.
    let _names = corpus_names().await;
    let kube = Kube::get();
    let ns = Kube::namespace("vnf-allq");
    let test_ns = ns.clone();
    with_clean_up(&kube, &[&ns], CLUSTER_SCOPED, async move {
        let kube = Kube::get();
        let ns = test_ns;
        let id = ns.strip_prefix("vnf-").expect("prefix").to_string();
        let dir = corpus_dir("v1-cnf-all-kinds");
        let mut call = Call::new(
            load_vnfd(&dir),
            Arc::new(DirArtifacts(dir)),
            kube.vim.clone(),
            &id,
        );
        call.flavour = "simple".into();
        let d = driver();
        let req = instantiate_req(
            "simple",
            json!({"lcm-kubernetes-def-files": v1_all_kinds_files()}),
        );
        let err = call
            .run(
                &d,
                Op::Instantiate,
                InfraStep::Instantiate {
                    target: target("simple", &[("VDU1", 1), ("VDU2", 1)]),
                },
                req.clone(),
            )
            .await
            .expect_err("the quota refuses the bare pod");
        let text = err.to_string();
        assert!(text.contains(&format!("Pod {ns}/vdu1")), "{text}");
        assert!(text.contains("must specify memory"), "{text}");
        assert!(
            kube.object("v1", "ResourceQuota", Some(&ns), "curry-rq")
                .await
                .is_some(),
            "the quota was applied before the pod"
        );
        assert!(kube.object("v1", "Pod", Some(&ns), "vdu1").await.is_none());
        call.run(&d, Op::Instantiate, InfraStep::RollbackInstantiate, req)
            .await
            .expect("rollback");
        let left = kube.labelled("vnfm.io/vnf-instance-id", &id).await;
        assert!(left.is_empty(), "left behind: {left:?}");
        assert!(kube.object("v1", "Namespace", None, &ns).await.is_none());
        for (api_version, kind, name) in CLUSTER_SCOPED {
            if *kind != "Node" {
                assert!(
                    kube.object(api_version, kind, None, name).await.is_none(),
                    "{kind} {name} left behind"
                );
            }
        }
    })
    .await;
}

#[vnfm_test_env::needs(kwok, corpus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v1_cnf_all_kinds_without_its_quota_instantiates_scales_heals_and_terminates() {
    // The same package with the request leaving out its ResourceQuota (the files to deploy are
    // the request's choice), so that every kind it has runs on the real control plane.
    let _names = corpus_names().await;
    let kube = Kube::get();
    let ns = Kube::namespace("vnf-all");
    let test_ns = ns.clone();
    with_clean_up(&kube, &[&ns], CLUSTER_SCOPED, async move {
        let kube = Kube::get();
        let ns = test_ns;
        let id = ns.strip_prefix("vnf-").expect("prefix").to_string();
        let names: Vec<&str> = CLUSTER_SCOPED.iter().map(|(_, _, n)| *n).collect();
        let nodes = kube.list("v1", "Node", None, "").await.len();
        let mark = Kube::audit_mark();
        let dir = corpus_dir("v1-cnf-all-kinds");
        let mut call = Call::new(
            load_vnfd(&dir),
            Arc::new(DirArtifacts(dir)),
            kube.vim.clone(),
            &id,
        );
        call.flavour = "simple".into();
        let d = driver();
        let files: Vec<String> = v1_all_kinds_files()
            .into_iter()
            .filter(|f| !f.ends_with("resource-quota.yaml"))
            .collect();
        let counts = [("VDU1", 1), ("VDU2", 1)];
        let out = call
            .run(
                &d,
                Op::Instantiate,
                InfraStep::Instantiate {
                    target: target("simple", &counts),
                },
                instantiate_req("simple", json!({"lcm-kubernetes-def-files": files})),
            )
            .await
            .expect("instantiate");
        assert_pods_ready(&kube, &ns, "instantiate").await;
        let log = kube.log_since(mark, &ns, &names).await;
        let applied = applies(&log);
        assert_tier_order(&applied);
        // The generated namespace is per instance, and first.
        assert_eq!(applied[0].object(), format!("Namespace/{ns}"));
        // The Binding names a pod the package does not have: a warning, not a failure.
        assert!(
            call.state["warnings"]
                .to_string()
                .contains("curry-endpoint-test001"),
            "{}",
            call.state["warnings"]
        );
        // VDU1 is a DaemonSet (a pod per node) and a bare Pod; VDU2 a Deployment, a ReplicaSet
        // and a StatefulSet, each with the VDU's count.
        let pods = pods_per_vdu(&out);
        assert_eq!(pods.get("VDU1"), Some(&(nodes + 1)), "{pods:?}");
        assert_eq!(pods.get("VDU2"), Some(&3), "{pods:?}");
        for (api_version, kind, name) in [
            ("apps/v1", "Deployment", "vdu2"),
            ("apps/v1", "ReplicaSet", "vdu2"),
            ("apps/v1", "StatefulSet", "vdu2"),
        ] {
            let o = kube
                .object(api_version, kind, Some(&ns), name)
                .await
                .unwrap_or_else(|| panic!("{kind} {name}"));
            assert_eq!(o["spec"]["replicas"], 1, "{kind}");
            assert_eq!(o["metadata"]["labels"]["vnfm.io/vnf-instance-id"], id);
        }
        let out = call
            .run(
                &d,
                Op::Scale,
                InfraStep::Scale {
                    aspect_id: "vdu2_aspect".into(),
                    scale_type: ScaleType::ScaleOut,
                    steps: 1,
                    from: target("simple", &counts),
                    target: target("simple", &[("VDU1", 1), ("VDU2", 2)]),
                },
                json!({"type": "SCALE_OUT", "aspectId": "vdu2_aspect"}),
            )
            .await
            .expect("scale");
        assert_pods_ready(&kube, &ns, "scale").await;
        assert_eq!(
            pods_per_vdu(&out).get("VDU2"),
            Some(&6),
            "all three VDU2 workloads scale"
        );
        let ss = kube
            .object("apps/v1", "StatefulSet", Some(&ns), "vdu2")
            .await
            .expect("statefulset");
        assert_eq!(ss["status"]["readyReplicas"], 2);
        // Whole-VNF heal replaces every pod of a VDU (the Job's is none).
        let vnfcs: Vec<&str> = out
            .resources
            .vnfc_resource_info
            .iter()
            .map(|v| v.id.as_str())
            .collect();
        let before: Vec<(String, String)> = kube
            .list("v1", "Pod", Some(&ns), "")
            .await
            .iter()
            .filter(|p| {
                p["metadata"]["name"]
                    .as_str()
                    .is_some_and(|n| vnfcs.contains(&n))
            })
            .map(|p| {
                (
                    p["metadata"]["name"].as_str().unwrap_or("").to_string(),
                    p["metadata"]["uid"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect();
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
        assert_pods_ready(&kube, &ns, "heal").await;
        assert_eq!(pods_per_vdu(&out).get("VDU2"), Some(&6));
        assert_eq!(before.len(), nodes + 1 + 6, "{before:?}");
        let after = kube.list("v1", "Pod", Some(&ns), "").await;
        for (name, uid) in &before {
            assert!(
                after.iter().all(|p| p["metadata"]["uid"] != *uid),
                "pod {name} was not replaced"
            );
        }
        let mark = Kube::audit_mark();
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
        assert_reverse_deletion(&applied, &kube.log_since(mark, &ns, &names).await);
        let left = kube.labelled("vnfm.io/vnf-instance-id", &id).await;
        assert!(left.is_empty(), "left behind: {left:?}");
        assert!(kube.object("v1", "Namespace", None, &ns).await.is_none());
    })
    .await;
}

#[vnfm_test_env::needs(kwok, corpus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v1_cnf_scale_and_heal_packages() {
    // On the real control plane; each instance in its own namespace `vnf-<instance id>`.
    let kube = Kube::get();
    let base = Kube::namespace("cscale");
    let namespaces: Vec<String> = (0..3)
        .map(|i| format!("vnf-{base}-{i}"))
        .chain([format!("vnf-{base}-heal")])
        .collect();
    let test_base = base.clone();
    let refs: Vec<&str> = namespaces.iter().map(String::as_str).collect();
    // The StatefulSet's package brings its volumes, with fixed names.
    let volumes = [
        ("v1", "PersistentVolume", "www-vdu1-0"),
        ("v1", "PersistentVolume", "www-vdu1-1"),
    ];
    with_clean_up(&kube, &refs, &volumes, async move {
    let kube = Kube::get();
    let base = test_base;
    let d = driver();
    // Scale: the package has a Deployment, a ReplicaSet and a StatefulSet for the same VDU,
    // each deployed on its own (as the package's tests do).
    let dir = corpus_dir("v1-cnf-scale");
    let vnfd = load_vnfd(&dir);
    let flavour = vnfd
        .flavour("simple")
        .cloned()
        .unwrap_or_else(|| vnfd.flavours[0].clone());
    let one = [("VDU1", 1)];
    // The StatefulSet's package brings two volumes for its claims (the cluster has no
    // provisioner): one step out.
    let two = [("VDU1", 2)];
    for (i, file) in [
        "Files/kubernetes/deployment_scale.yaml",
        "Files/kubernetes/replicaset_scale.yaml",
        "Files/kubernetes/statefulset_scale.yaml",
    ]
    .iter()
    .enumerate()
    {
        let id = format!("{base}-{i}");
        let mut call = Call::new(
            vnfd.clone(),
            Arc::new(DirArtifacts(dir.clone())),
            kube.vim.clone(),
            &id,
        );
        call.flavour = flavour.id.clone();
        let out = call
            .run(
                &d,
                Op::Instantiate,
                InfraStep::Instantiate {
                    target: target(&flavour.id, &one),
                },
                instantiate_req(&flavour.id, json!({"lcm-kubernetes-def-files": [file]})),
            )
            .await
            .expect("instantiate");
        assert_pods_ready(&kube, &format!("vnf-{id}"), file).await;
        assert_eq!(
            pods_per_vdu(&out).get("VDU1"),
            Some(&1),
            "{file}: {:#?}",
            out.resources.vnfc_resource_info
        );
        let out = call
            .run(
                &d,
                Op::Scale,
                InfraStep::Scale {
                    aspect_id: "vdu1_aspect".into(),
                    scale_type: ScaleType::ScaleOut,
                    steps: 1,
                    from: target(&flavour.id, &one),
                    target: target(&flavour.id, &two),
                },
                json!({"type": "SCALE_OUT", "aspectId": "vdu1_aspect", "numberOfSteps": 1}),
            )
            .await
            .expect("scale out");
        assert_eq!(pods_per_vdu(&out).get("VDU1"), Some(&2), "{file}");
        assert_pods_ready(&kube, &format!("vnf-{id}"), file).await;
        let out = call
            .run(
                &d,
                Op::Scale,
                InfraStep::RollbackScale {
                    restore: target(&flavour.id, &one),
                },
                json!({"type": "SCALE_OUT", "aspectId": "vdu1_aspect"}),
            )
            .await
            .expect("rollback scale");
        assert_eq!(pods_per_vdu(&out).get("VDU1"), Some(&1), "{file}");
        let removed = out
            .resource_changes
            .affected_vnfcs
            .clone()
            .unwrap_or_default()
            .iter()
            .filter(|c| c.change_type == vnfm_types::ChangeType::Removed)
            .count();
        assert_eq!(removed, 1, "{file}");
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
        let left = kube.labelled("vnfm.io/vnf-instance-id", &id).await;
        assert!(left.is_empty(), "{file}: left behind {left:?}");
    }

    // Heal: a bare Pod and a Deployment.
    let dir = corpus_dir("v1-cnf-heal");
    let vnfd = load_vnfd(&dir);
    let flavour = vnfd
        .flavour("simple")
        .cloned()
        .unwrap_or_else(|| vnfd.flavours[0].clone());
    let heal_id = format!("{base}-heal");
    let mut call = Call::new(vnfd, Arc::new(DirArtifacts(dir)), kube.vim.clone(), &heal_id);
    call.flavour = flavour.id.clone();
    let counts: Vec<(String, u32)> = flavour.vdus.iter().map(|v| (v.id.clone(), 2)).collect();
    let counts_ref: Vec<(&str, u32)> = counts.iter().map(|(v, c)| (v.as_str(), *c)).collect();
    let out = call
        .run(
            &d,
            Op::Instantiate,
            InfraStep::Instantiate { target: target(&flavour.id, &counts_ref) },
            instantiate_req(
                &flavour.id,
                json!({"lcm-kubernetes-def-files": ["Files/kubernetes/pod_heal.yaml", "Files/kubernetes/deployment_heal_simple.yaml"]}),
            ),
        )
        .await
        .expect("instantiate heal package");
    let all: Vec<(String, String)> = out
        .resources
        .vnfc_resource_info
        .iter()
        .map(|v| (v.id.clone(), v.vdu_id.clone()))
        .collect();
    assert!(all.len() >= 2, "{all:?}");
    let vnfcs = all
        .iter()
        .map(|(id, vdu)| HealVnfc {
            vnfc_info_id: None,
            vnfc_resource_id: id.clone(),
            vdu_id: vdu.clone(),
        })
        .collect();
    let out = call
        .run(
            &d,
            Op::Heal,
            InfraStep::Heal {
                scope: HealScope::Vnfcs { vnfcs },
            },
            json!({}),
        )
        .await
        .expect("heal");
    assert_eq!(out.resources.vnfc_resource_info.len(), all.len());
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
    .expect("terminate heal package");
    let left = kube.labelled("vnfm.io/vnf-instance-id", &heal_id).await;
    assert!(left.is_empty(), "left behind: {left:?}");
    })
    .await;
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn tacker_volume_modes_written_as_yaml_1_1_octals_are_read_as_kubectl_reads_them() {
    // `defaultMode: 0666` in Tacker's container-update sample: 438 for kubectl (and Tacker);
    // read as YAML 1.2 it was 666, which the API server refuses as more than 0777.
    let dir = corpus_dir("v2-cnf-container-update-before").join("Files/kubernetes");
    for file in ["pod_volume.yaml", "replicaset.yaml"] {
        let text = std::fs::read_to_string(dir.join(file)).expect("sample manifest");
        let docs = vnfm_infra_kubernetes::manifest::parse_documents(file, &text).expect(file);
        let volumes = docs
            .iter()
            .find_map(|d| {
                d.object
                    .pointer("/spec/volumes")
                    .or_else(|| d.object.pointer("/spec/template/spec/volumes"))
            })
            .and_then(Value::as_array)
            .unwrap_or_else(|| panic!("{file} has volumes"));
        let modes: Vec<&Value> = volumes
            .iter()
            .map(|v| {
                &v[if v.get("configMap").is_some() {
                    "configMap"
                } else {
                    "secret"
                }]["defaultMode"]
            })
            .collect();
        assert_eq!(modes, [&json!(0o666), &json!(0o600)], "{file}");
    }
}
