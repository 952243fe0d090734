//! Package change with rollback, ASD deployment items in stages with the placement check,
//! shared NetworkAttachmentDefinitions with a use count, and persistent volumes, on the real
//! control plane of `KUBECONFIG` (`scripts/test-env/kubernetes.sh`; built ignored without it,
//! see `build.rs`).

use crate::support;

use std::sync::Arc;

use serde_json::{Value, json};
use support::real::{
    Kube, NAD_CRD_NAME, assert_pods_ready, corpus_names, in_namespace, shared_network_names,
    with_clean_up,
};
use support::*;
use vnfm_driver_api::memory::MemArtifacts;
use vnfm_driver_api::{InfraStep, ResolvedVim, ResourceTarget};
use vnfm_infra_kubernetes::asd_vnfd;
use vnfm_types::{LcmOperationType as Op, TerminationType, VnfdId};

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

#[vnfm_test_env::needs(kwok, corpus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_package_change_rolls_pods_and_a_failed_one_rolls_back() {
    // The package's own Namespace `curry`: one test using Tacker's names at a time. Its
    // `error-image` never starts (the test environment's simulated pods wait in ImagePullBackOff).
    let _names = corpus_names().await;
    let kube = Kube::get();
    let ns = Kube::namespace("pkg");
    let test_ns = ns.clone();
    with_clean_up(&kube, &[&ns], &[("v1", "Namespace", "curry")], async move {
    let kube = Kube::get();
    let ns = test_ns;
    let dir = corpus_dir("v2-cnf-change-vnfpkg-deployment");
    let old = load_vnfd(&dir);
    let mut new = old.clone();
    new.descriptor_id = "vnfd-new".into();
    let files = Arc::new(DirArtifacts(dir));
    let mut call = Call::new(old.clone(), files, kube.vim.clone(), &ns);
    call.flavour = "simple".into();
    let d = driver();
    let target = counts(&[("VDU2", 2)], "simple");
    let out = call
        .run(
            &d,
            Op::Instantiate,
            InfraStep::Instantiate { target },
            json!({"flavourId": "simple", "additionalParams": {
                "lcm-kubernetes-def-files": ["Files/kubernetes/namespace.yaml", "Files/kubernetes/deployment.yaml"],
                "namespace": ns}}),
        )
        .await
        .expect("instantiate");
    let before: Vec<String> = out
        .resources
        .vnfc_resource_info
        .iter()
        .map(|v| v.id.clone())
        .collect();
    assert_eq!(before.len(), 2);
    assert_pods_ready(&kube, &ns, "instantiate").await;
    // What Tacker's driver records in instantiatedVnfInfo.metadata, and its label.
    let meta = &out.published_metadata;
    assert_eq!(meta["namespace"], json!(ns));
    assert_eq!(meta["tenant"], json!(ns));
    assert_eq!(
        meta["lcm-kubernetes-def-files"],
        json!(["Files/kubernetes/namespace.yaml", "Files/kubernetes/deployment.yaml"])
    );
    let vdu2 = &meta["vdu_reses"]["VDU2"];
    assert_eq!(vdu2["kind"], "Deployment", "{meta:?}");
    assert_eq!(vdu2["spec"]["replicas"], 2, "{vdu2}");
    let label = &vdu2["metadata"]["labels"]["tacker_vnf_instance_id"];
    assert_eq!(label, &json!(call.instance.id.as_str()), "{vdu2}");
    let live = kube
        .object("apps/v1", "Deployment", Some(&ns), "vdu2")
        .await
        .expect("deployment");
    assert_eq!(&live["metadata"]["labels"]["tacker_vnf_instance_id"], label);

    // Change to the new package: the pod template now names the new VNFD, so pods roll.
    call.vnfd = Arc::new(new.clone());
    let change = |file: &str| {
        json!({"vnfdId": "vnfd-new", "additionalParams": {
            "upgrade_type": "RollingUpdate",
            "lcm-kubernetes-def-files": [file],
            "vdu_params": [{"vdu_id": "VDU2"}]}})
    };
    let step = InfraStep::ChangeVnfpkg {
        from_vnfd_id: VnfdId::new(old.descriptor_id.clone()),
        to_vnfd_id: VnfdId::new("vnfd-new"),
    };
    let out = call
        .run(
            &d,
            Op::ChangeVnfpkg,
            step.clone(),
            change("Files/new_kubernetes/new_deployment.yaml"),
        )
        .await
        .expect("change");
    let after: Vec<String> = out
        .resources
        .vnfc_resource_info
        .iter()
        .map(|v| v.id.clone())
        .collect();
    assert_eq!(after.len(), 2);
    assert!(
        after.iter().all(|p| !before.contains(p)),
        "{before:?} -> {after:?}"
    );
    assert_eq!(call.state["vnfdId"], "vnfd-new");
    assert_pods_ready(&kube, &ns, "change").await;
    assert!(
        kube.object("v1", "Namespace", None, "curry").await.is_some(),
        "objects outside the change stay"
    );

    // A change whose pods never start times out; its rollback restores the previous package.
    let mut newer = new.clone();
    newer.descriptor_id = "vnfd-broken".into();
    call.vnfd = Arc::new(newer);
    let broken = InfraStep::ChangeVnfpkg {
        from_vnfd_id: VnfdId::new("vnfd-new"),
        to_vnfd_id: VnfdId::new("vnfd-broken"),
    };
    let mut req = change("Files/new_kubernetes/error_deployment.yaml");
    req["vnfdId"] = json!("vnfd-broken");
    req["additionalParams"]["readinessTimeoutSeconds"] = json!(8);
    let err = call
        .run(&d, Op::ChangeVnfpkg, broken, req.clone())
        .await
        .expect_err("never ready");
    assert_eq!(err.kind(), "timeout", "{err}");
    assert!(
        err.to_string().contains("ImagePullBackOff")
            && err.to_string().contains(&format!("Deployment {ns}/vdu2")),
        "{err}"
    );
    let dep = kube
        .object("apps/v1", "Deployment", Some(&ns), "vdu2")
        .await
        .expect("deployment");
    assert_eq!(
        dep["spec"]["template"]["spec"]["containers"][0]["image"],
        "error-image"
    );
    let out = call
        .run(
            &d,
            Op::ChangeVnfpkg,
            InfraStep::RollbackChangeVnfpkg {
                restore_vnfd_id: VnfdId::new("vnfd-new"),
            },
            req,
        )
        .await
        .expect("rollback");
    assert_pods_ready(&kube, &ns, "rollback").await;
    let dep = kube
        .object("apps/v1", "Deployment", Some(&ns), "vdu2")
        .await
        .expect("deployment");
    assert_eq!(
        dep["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:alpine"
    );
    assert_eq!(out.resources.vnfc_resource_info.len(), 2);
    assert_eq!(call.state["vnfdId"], "vnfd-new");
    call.run(
        &d,
        Op::Terminate,
        terminate(),
        json!({"terminationType": "FORCEFUL"}),
    )
    .await
    .expect("terminate");
    let left = kube.labelled("vnfm.io/vnf-instance-id", &ns).await;
    assert!(left.is_empty(), "left behind: {left:?}");
    })
    .await;
}

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
";

const APP: &str = "apiVersion: example.com/v1
kind: Widget
metadata: {name: gadget}
spec: {size: 3}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: app}
spec:
  replicas: 2
  selector: {matchLabels: {app: asd}}
  template:
    metadata: {labels: {app: asd}}
    spec:
      containers: [{name: app, image: nginx}]
";

fn asd(min_kernel: &str, with_chart: bool) -> vnfm_descriptor::Asd {
    let mut items = vec![
        json!({"id": "crds", "artifactName": "crds", "artifactType": "crd", "file": "Artifacts/crds.yaml", "deploymentOrder": 1}),
        json!({"id": "app", "artifactName": "app", "artifactType": "crd", "file": "Artifacts/app.yaml", "deploymentOrder": 2}),
    ];
    if with_chart {
        items.push(
            json!({"id": "chart", "artifactName": "chart", "artifactType": "helm_chart",
            "file": "Artifacts/test-chart-0.1.0.tgz", "deploymentOrder": 2,
            "lifecycleParameters": [".Values.replicaCountVdu1"]}),
        );
    }
    let stages = vnfm_descriptor::asd::stages_of(
        &serde_json::from_value::<Vec<vnfm_descriptor::asd::DeploymentItem>>(json!(items))
            .expect("items"),
    );
    serde_json::from_value(json!({
        "asdId": "asd-demo", "dialect": "oran-2.0", "toscaDefinitionsVersion": "tosca_simple_yaml_1_3",
        "entryDefinitions": "Definitions/asd.yaml", "nodeTemplate": "demo", "asdVersion": "1.0",
        "provider": "Acme", "applicationName": "demo", "applicationVersion": "1.0",
        "enhancedClusterCapabilities": {
            "minKernelVersion": min_kernel,
            "requiredCustomResources": [{"kind": "Widget", "apiVersion": "example.com/v1"}],
            "clusterLabels": [
                {"label": "site=edge", "requirement": "mandatory"},
                {"label": "gpu=true", "requirement": "preferred"}
            ]
        },
        "deploymentItems": items,
        "stages": stages,
    }))
    .expect("asd")
}

/// The cluster's VIM connection, labelled `site=edge`.
fn asd_vim(kube: &Kube) -> ResolvedVim {
    let mut info = kube.vim_info.clone();
    info["extra"] = json!({"clusterLabels": {"site": "edge"}});
    ResolvedVim::new("vim1", serde_json::from_value(info).expect("vim"))
}

#[vnfm_test_env::needs(kwok, helm, corpus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asd_deployment_items_are_deployed_in_stages_after_the_placement_check() {
    // The driver makes the namespace `vnf-<instance id>`; the CRD is the package's own.
    let crd = ["apiextensions.k8s.io/v1/CustomResourceDefinition/widgets.example.com"];
    in_namespace("vnf-asd", &crd, |kube, ns| async move {
        let id = ns.strip_prefix("vnf-").expect("prefix").to_string();
        let mark = Kube::audit_mark();
        let chart = std::fs::read(
            corpus_dir("v2-helm-instantiate").join("Files/kubernetes/test-chart-0.1.0.tgz"),
        )
        .expect("chart");
        let files = Arc::new(
            MemArtifacts::new()
                .with("Artifacts/crds.yaml", CRD)
                .with("Artifacts/app.yaml", APP)
                .with("Artifacts/test-chart-0.1.0.tgz", chart),
        );
        let d = driver().with_helm(Arc::new(helm_library()));
        // A kernel newer than every node's (they report this machine's): refused before
        // anything is applied.
        let mut call = Call::new(
            asd_vnfd(&asd("99.0", false)),
            files.clone(),
            asd_vim(&kube),
            &format!("{id}-0"),
        );
        let err = call
            .run(
                &d,
                Op::Instantiate,
                InfraStep::Instantiate {
                    target: counts(&[], "default"),
                },
                json!({"flavourId": "default"}),
            )
            .await
            .expect_err("placement");
        assert_eq!(err.kind(), "invalidInput");
        assert!(
            err.to_string().contains("no node runs kernel 99.0"),
            "{err}"
        );
        let applied = objects(
            &kube
                .log_since(mark, &format!("{ns}-0"), &["widgets.example.com"])
                .await,
            "apply",
        );
        assert!(applied.is_empty(), "{applied:?}");
        // A mandatory cluster label the VIM does not carry: refused too.
        let mut call = Call::new(
            asd_vnfd(&asd("4.15", false)),
            files.clone(),
            kube.vim.clone(),
            &format!("{id}-1"),
        );
        let err = call
            .run(
                &d,
                Op::Instantiate,
                InfraStep::Instantiate {
                    target: counts(&[], "default"),
                },
                json!({"flavourId": "default"}),
            )
            .await
            .expect_err("label");
        assert!(err.to_string().contains("site=edge"), "{err}");

        let mut call = Call::new(asd_vnfd(&asd("4.15", true)), files, asd_vim(&kube), &id);
        let out = call
        .run(
            &d,
            Op::Instantiate,
            InfraStep::Instantiate {
                target: counts(&[], "default"),
            },
            // Lifecycle parameters belong to the Helm item.
            json!({"flavourId": "default", "additionalParams": {".Values.replicaCountVdu1": 2}}),
        )
        .await
        .expect("instantiate");
        assert_pods_ready(&kube, &ns, "instantiate").await;
        let applied = objects(
            &kube.log_since(mark, &ns, &["widgets.example.com"]).await,
            "apply",
        );
        let pos = |o: &str| {
            applied
                .iter()
                .position(|a| a == o)
                .unwrap_or_else(|| panic!("{o} not applied: {applied:?}"))
        };
        // Stage 1 (the CRD) is applied and ready before stage 2 starts.
        assert!(
            pos("CustomResourceDefinition/widgets.example.com")
                < pos(&format!("Widget/{ns}/gadget"))
        );
        assert!(
            pos("CustomResourceDefinition/widgets.example.com")
                < pos(&format!("Deployment/{ns}/app"))
        );
        let pods = pods_per_vdu(&out);
        assert_eq!(
            pods.get("app"),
            Some(&2),
            "workloads are reported under their deployment item: {pods:?}"
        );
        let dep = kube
            .object(
                "apps/v1",
                "Deployment",
                Some(&ns),
                &format!("vdu1-vnf{}", id.replace('-', "")),
            )
            .await
            .expect("chart deployment");
        assert_eq!(
            dep["spec"]["replicas"], 2,
            "the lifecycle parameter reached the chart"
        );
        assert_eq!(pods.get("chart"), Some(&3));
        let warnings = call.state["warnings"].to_string();
        assert!(warnings.contains("gpu=true"), "{warnings}");
        call.run(
            &d,
            Op::Terminate,
            terminate(),
            json!({"terminationType": "FORCEFUL"}),
        )
        .await
        .expect("terminate");
        let left = kube.labelled("vnfm.io/vnf-instance-id", &id).await;
        assert!(left.is_empty(), "left behind: {left:?}");
        assert!(
            kube.object(
                "apiextensions.k8s.io/v1",
                "CustomResourceDefinition",
                None,
                "widgets.example.com"
            )
            .await
            .is_none()
        );
    })
    .await;
}

const NAD_APP: &str = "apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata: {name: net-a, namespace: shared-net}
spec:
  config: '{\"cniVersion\": \"0.3.1\", \"type\": \"macvlan\"}'
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: w}}
  template:
    metadata:
      labels: {app: w}
      annotations: {k8s.v1.cni.cncf.io/networks: shared-net/net-a}
    spec:
      containers: [{name: w, image: nginx}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
  labels: {vnfm.io/persistent: \"true\"}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
";

#[vnfm_test_env::needs(kwok)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_networks_have_a_use_count_and_persistent_volumes_survive_terminate() {
    // Two instances in namespaces `vnf-<id>` of their own; the network's namespace, its CRD
    // and the claims' volumes (the cluster has no provisioner) are the test's.
    let _names = shared_network_names().await;
    let kube = Kube::get();
    let base = Kube::namespace("net");
    let (id_a, id_b) = (format!("{base}-a"), format!("{base}-b"));
    let (ns_a, ns_b) = (format!("vnf-{id_a}"), format!("vnf-{id_b}"));
    let volumes = [format!("{base}-a"), format!("{base}-b")];
    let mut cluster_scoped = vec![(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        NAD_CRD_NAME,
    )];
    cluster_scoped.extend(
        volumes
            .iter()
            .map(|v| ("v1", "PersistentVolume", v.as_str())),
    );
    let test_volumes = volumes.clone();
    let (test_ns_a, test_ns_b) = (ns_a.clone(), ns_b.clone());
    with_clean_up(&kube, &[&ns_a, &ns_b, "shared-net"], &cluster_scoped, async move {
    let (ns_a, ns_b) = (test_ns_a, test_ns_b);
            let kube = Kube::get();
    kube.create_shared_network_kind().await;
    for v in &test_volumes {
        kube.create(json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": v},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                "hostPath": {"path": format!("/tmp/{v}")}}}))
        .await;
    }
    let files = Arc::new(MemArtifacts::new().with("Files/app.yaml", NAD_APP));
    let vnfd: vnfm_descriptor::Vnfd = serde_json::from_value(json!({
        "descriptorId": "vnfd-net", "descriptorVersion": "1.0", "provider": "Acme", "productName": "Net",
        "softwareVersion": "1.0", "toscaDefinitionsVersion": "tosca_simple_yaml_1_2", "vnfNodeType": "acme.Net",
        "entryDefinitions": "Definitions/top.yaml",
        "flavours": [{"id": "simple", "file": "Definitions/df.yaml", "vdus": [
            {"id": "VDU1", "name": "web", "kind": "compute", "nodeType": "tosca.nodes.nfv.Vdu.Compute",
             "minInstances": 1, "maxInstances": 1}]}]
    }))
    .expect("vnfd");
    let d = driver();
    let params = json!({"flavourId": "simple", "additionalParams": {"lcm-kubernetes-def-files": ["Files/app.yaml"]}});
    let step = || InfraStep::Instantiate {
        target: counts(&[("VDU1", 1)], "simple"),
    };
    let mut a = Call::new(vnfd.clone(), files.clone(), kube.vim.clone(), &id_a);
    let mut b = Call::new(vnfd.clone(), files.clone(), kube.vim.clone(), &id_b);
    a.run(&d, Op::Instantiate, step(), params.clone())
        .await
        .expect("a");
    b.run(&d, Op::Instantiate, step(), params.clone())
        .await
        .expect("b");
    let nad = async || {
        kube.object(
            "k8s.cni.cncf.io/v1",
            "NetworkAttachmentDefinition",
            Some("shared-net"),
            "net-a",
        )
        .await
    };
    let users = |n: &Value| -> Vec<String> {
        n["metadata"]["annotations"]
            .as_object()
            .map(|m| {
                m.keys()
                    .filter(|k| k.starts_with("vnfm.io/user-"))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(
        users(&nad().await.expect("nad")),
        [format!("vnfm.io/user-{id_a}"), format!("vnfm.io/user-{id_b}")]
    );
    a.run(
        &d,
        Op::Terminate,
        terminate(),
        json!({"terminationType": "FORCEFUL"}),
    )
    .await
    .expect("terminate a");
    assert_eq!(
        users(&nad().await.expect("still used by b")),
        [format!("vnfm.io/user-{id_b}")]
    );
    // A's persistent claim (and so its namespace) stays.
    assert!(
        kube.object("v1", "PersistentVolumeClaim", Some(&ns_a), "data")
            .await
            .is_some()
    );
    assert!(
        kube.object("apps/v1", "Deployment", Some(&ns_a), "web")
            .await
            .is_none()
    );
    b.run(
        &d,
        Op::Terminate,
        terminate(),
        json!({"terminationType": "FORCEFUL", "additionalParams": {"deletePersistentVolumes": true}}),
    )
    .await
    .expect("terminate b");
    assert!(nad().await.is_none(), "the last user deletes the shared network");
    assert!(
        kube.object("v1", "PersistentVolumeClaim", Some(&ns_b), "data")
            .await
            .is_none()
    );
    assert!(kube.object("v1", "Namespace", None, &ns_b).await.is_none());
    })
    .await;
}
