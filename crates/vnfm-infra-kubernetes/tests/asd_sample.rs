//! The ASD sample package (`vnfd-samples/asd-sample`, read with `vnfm_tosca` from the
//! directory) deployed by the driver on the real control plane of `KUBECONFIG`
//! (`scripts/test-env/kubernetes.sh`; built ignored without it, see `build.rs`): VNF-B as an ASD, its
//! three deployment items in two stages by `deployment_order` (the web server's configuration
//! first; its workload and the cache's Helm chart, rendered by the Helm SDK library of
//! `VNFM_HELM_C_LIB`, once the configuration stage is ready), the chart's lifecycle
//! parameters taken from the request, and terminate leaving nothing behind. The full run is
//! built ignored without `VNFM_HELM_C_LIB` too.

use crate::support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::real::{Kube, assert_pods_ready, in_namespace};
use support::*;
use vnfm_descriptor::asd::DeploymentArtifactType;
use vnfm_driver_api::{InfraStep, ResourceTarget};
use vnfm_infra_kubernetes::{KubernetesDriver, asd_vnfd};
use vnfm_types::{LcmOperationType as Op, TerminationType};

const INSTANCE: &str = "inst-asd-sample";
/// The release name the driver derives from [`INSTANCE`] (`vnf` + the id without dashes).
const RELEASE: &str = "vnfinstasdsample";
/// The namespace the sample's request names (the test uses one of its own).
const NS: &str = "web-asd";
const INSTANCE_LABEL: &str = "vnfm.io/vnf-instance-id";
const CHART: &str = "Artifacts/Deployment/HELM/cache-0.1.0.tgz";

fn sample() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../vnfd-samples/asd-sample"
    ))
}

fn load_asd(root: &Path) -> vnfm_descriptor::Asd {
    fn add(dir: &Path, root: &Path, out: &mut vnfm_tosca::MemFiles) {
        for e in std::fs::read_dir(dir).expect("package directory") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                add(&p, root, out);
            } else {
                let rel = p
                    .strip_prefix(root)
                    .expect("under root")
                    .to_string_lossy()
                    .replace('\\', "/");
                out.files.insert(rel, std::fs::read(&p).expect("file"));
            }
        }
    }
    let mut files = vnfm_tosca::MemFiles::new("Definitions/asd.yaml");
    add(root, root, &mut files);
    let loaded = vnfm_tosca::load(&files);
    assert!(!loaded.has_errors(), "{:#?}", loaded.diagnostics);
    loaded
        .descriptor
        .and_then(|d| d.as_asd().cloned())
        .expect("an ASD")
}

/// The sample's own instantiate request (its `additionalParams` hold the namespace and the
/// chart's replica count).
fn sample_params() -> Value {
    let request: Value = serde_json::from_str(
        &std::fs::read_to_string(sample().join("requests/instantiate.json")).expect("request"),
    )
    .expect("JSON");
    assert_eq!(request["flavourId"], "default");
    request["additionalParams"].clone()
}

/// What the driver applied in namespace `ns` since `mark`.
async fn applied(kube: &Kube, mark: usize, ns: &str) -> Vec<String> {
    objects(&kube.log_since(mark, ns, &[]).await, "apply")
}

fn instantiate_step() -> InfraStep {
    InfraStep::Instantiate {
        target: ResourceTarget {
            flavour_id: "default".into(),
            ..Default::default()
        },
    }
}

fn labelled(obj: &Value) -> bool {
    obj.pointer("/metadata/labels")
        .and_then(|l| l.get(INSTANCE_LABEL))
        .and_then(Value::as_str)
        == Some(INSTANCE)
}

#[test]
fn the_sample_is_vnf_b_as_three_items_in_two_stages() {
    let asd = load_asd(&sample());
    let stages: Vec<Vec<String>> = asd.stages.iter().map(|s| s.items.clone()).collect();
    assert_eq!(
        stages,
        [
            vec!["config".to_string()],
            vec!["web".to_string(), "cache".to_string()]
        ]
    );
    let chart = asd.deployment_item("cache").expect("the chart item");
    assert_eq!(chart.artifact_type, DeploymentArtifactType::HelmChart);
    assert_eq!(chart.file, CHART);
    assert!(!chart.external);
    assert_eq!(
        chart.lifecycle_parameters,
        [".Values.replicaCount", ".Values.service.port"]
    );
    // The same chart as VNF-B's, byte for byte.
    let vnf_b = std::fs::read(sample().join("../vnf-b-cnf/Files/helm/cache-0.1.0.tgz"))
        .expect("VNF-B's chart");
    assert_eq!(
        std::fs::read(sample().join(CHART)).expect("the ASD's chart"),
        vnf_b
    );
}

#[vnfm_test_env::needs(kubeconfig)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_helm_renderer_the_chart_item_is_refused_before_anything_is_applied() {
    in_namespace("asd-nohelm", &[], |kube, ns| async move {
        let mark = Kube::audit_mark();
        let mut call = Call::new(
            asd_vnfd(&load_asd(&sample())),
            Arc::new(DirArtifacts(sample())),
            kube.vim.clone(),
            &ns,
        );
        let mut params = sample_params();
        params["namespace"] = json!(ns);
        let driver = KubernetesDriver::new()
            .without_helm()
            .with_ready_timeout(Duration::from_secs(20));
        let err = call
            .run(
                &driver,
                Op::Instantiate,
                instantiate_step(),
                json!({"flavourId": "default", "additionalParams": params}),
            )
            .await
            .expect_err("no renderer");
        assert_eq!(err.kind(), "invalidInput");
        assert!(
            err.to_string().contains(CHART) && err.to_string().contains("no Helm renderer"),
            "{err}"
        );
        let applied = applied(&kube, mark, &ns).await;
        assert!(applied.is_empty(), "{applied:?}");
    })
    .await;
}

#[vnfm_test_env::needs(kwok, helm)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sample_deploys_in_two_stages_with_its_chart_and_terminates_clean() {
    let helm = helm_library();
    // The claim's volume (the cluster has no provisioner), named after the namespace.
    in_namespace(
        "asd",
        &["v1/PersistentVolume/$NS-data"],
        |kube, owned_ns| async move {
            let ns = owned_ns.as_str();
            let asd = load_asd(&sample());
            let mark = Kube::audit_mark();
            let mut call = Call::new(
                asd_vnfd(&asd),
                Arc::new(DirArtifacts(sample())),
                kube.vim.clone(),
                INSTANCE,
            );
            let mut params = sample_params();
            assert_eq!(params["namespace"], NS);
            params["namespace"] = json!(ns);
            assert_eq!(params[".Values.replicaCount"], 2);
            // The second lifecycle parameter of the chart item, given the way an NFVO would.
            params[".Values.service.port"] = json!(16379);
            let driver = driver().with_helm(Arc::new(helm));
            let run = tokio::spawn(async move {
                let out = call
                    .run(
                        &driver,
                        Op::Instantiate,
                        instantiate_step(),
                        json!({"flavourId": "default", "additionalParams": params}),
                    )
                    .await;
                (out, call, driver)
            });

            // Stage 1 is applied and the driver waits for its claim, which stays Pending: no
            // volume can hold it yet (the driver's watch of claims is shared by the cluster's
            // steps, of all namespaces, so it is not looked for among this namespace's
            // requests)...
            let until = Instant::now() + Duration::from_secs(60);
            while !kube
                .log_since(mark, ns, &[])
                .await
                .iter()
                .any(|e| e.verb == "apply" && e.kind == "PersistentVolumeClaim")
            {
                if run.is_finished() {
                    let (out, _, _) = run.await.expect("task");
                    panic!(
                        "the instantiate ended before its claim was bound: {:?}",
                        out.map(|_| ())
                    );
                }
                assert!(
                    Instant::now() < until,
                    "the driver never waited for the claim: {:?}",
                    applied(&kube, mark, ns).await
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
            let held = applied(&kube, mark, ns).await;
            for (kind, name) in [
                ("ConfigMap", "web-config"),
                ("PersistentVolumeClaim", "web-data"),
            ] {
                let o = format!("{kind}/{ns}/{name}");
                assert!(held.contains(&o), "{o} not applied: {held:?}");
                assert!(
                    kube.object("v1", kind, Some(ns), name).await.is_some(),
                    "{o} is not stored"
                );
            }
            // ...and stage 2 (the web workload and the chart) has not started while the claim is
            // not bound.
            assert!(
                !held
                    .iter()
                    .any(|o| o.starts_with("Deployment/") || o.starts_with("Service/")),
                "stage 2 started before stage 1 was ready: {held:?}"
            );
            assert!(
                kube.list("apps/v1", "Deployment", Some(ns), "")
                    .await
                    .is_empty()
                    && kube.list("v1", "Service", Some(ns), "").await.is_empty(),
                "stage 2 objects exist before stage 1 was ready"
            );

            // A volume the claim can bind to: the volume controller binds it, stage 2 follows.
            kube.create(json!({"apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": format!("{ns}-data")},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": format!("/tmp/{ns}-data")}}}))
                .await;
            let (out, mut call, driver) = run.await.expect("task");
            let out = out.expect("instantiate");
            assert_pods_ready(&kube, ns, "instantiate").await;
            let done = applied(&kube, mark, ns).await;
            let pos = |o: &str| {
                done.iter()
                    .position(|a| a == o)
                    .unwrap_or_else(|| panic!("{o} not applied: {done:?}"))
            };
            let claim = kube
                .object("v1", "PersistentVolumeClaim", Some(ns), "web-data")
                .await
                .expect("claim");
            assert_eq!(claim["status"]["phase"], "Bound");
            let cache = format!("cache-{RELEASE}");
            for stage2 in [
                format!("Deployment/{ns}/web"),
                format!("Service/{ns}/web"),
                format!("Deployment/{ns}/{cache}"),
                format!("Service/{ns}/{cache}"),
            ] {
                assert!(pos(&format!("PersistentVolumeClaim/{ns}/web-data")) < pos(&stage2));
                assert!(pos(&format!("ConfigMap/{ns}/web-config")) < pos(&stage2));
            }

            // The chart's objects, rendered by Helm for the instance's release in its namespace,
            // carry the instance label and the lifecycle parameters' values.
            let dep = kube
                .object("apps/v1", "Deployment", Some(ns), &cache)
                .await
                .expect("the chart's Deployment");
            assert!(labelled(&dep), "{:#}", dep["metadata"]);
            assert_eq!(
                dep["metadata"]["labels"]["app.kubernetes.io/instance"],
                RELEASE
            );
            assert_eq!(dep["metadata"]["labels"]["vnfm.io/vdu"], "cache");
            assert_eq!(dep["spec"]["replicas"], 2, "replicaCount reached the chart");
            assert_eq!(
                dep["spec"]["template"]["metadata"]["labels"][INSTANCE_LABEL],
                INSTANCE
            );
            assert_eq!(
                dep["spec"]["template"]["spec"]["containers"][0]["image"], "redis:7.4-alpine",
                "the chart's own defaults apply to what the request does not set"
            );
            let svc = kube
                .object("v1", "Service", Some(ns), &cache)
                .await
                .expect("the chart's Service");
            assert!(labelled(&svc), "{:#}", svc["metadata"]);
            assert_eq!(
                svc["spec"]["ports"][0]["port"], 16379,
                "service.port reached the chart"
            );
            assert_eq!(svc["spec"]["ports"][0]["targetPort"], 6379);

            // Every object of both stages and every pod carries the instance label; pods are
            // reported under their deployment item.
            let mine = kube.labelled(INSTANCE_LABEL, INSTANCE).await;
            for o in [
                format!("ConfigMap/{ns}/web-config"),
                format!("PersistentVolumeClaim/{ns}/web-data"),
                format!("Deployment/{ns}/web"),
                format!("Service/{ns}/web"),
                format!("Deployment/{ns}/{cache}"),
                format!("Service/{ns}/{cache}"),
            ] {
                assert!(mine.contains(&o), "{o} not labelled: {mine:?}");
            }
            let pods = pods_per_vdu(&out);
            assert_eq!(pods.get("web"), Some(&1), "{pods:?}");
            assert_eq!(pods.get("cache"), Some(&2), "{pods:?}");
            assert_eq!(
                mine.iter().filter(|o| o.starts_with("Pod/")).count(),
                3,
                "{mine:?}"
            );

            call.run(
                &driver,
                Op::Terminate,
                InfraStep::Terminate {
                    termination_type: TerminationType::Forceful,
                    graceful_timeout_seconds: None,
                },
                json!({"terminationType": "FORCEFUL"}),
            )
            .await
            .expect("terminate");
            let left = kube.labelled(INSTANCE_LABEL, INSTANCE).await;
            assert!(left.is_empty(), "{left:?}");
            assert!(kube.object("v1", "Namespace", None, ns).await.is_none());
            for (api, kind) in [
                ("apps/v1", "Deployment"),
                ("apps/v1", "ReplicaSet"),
                ("v1", "Pod"),
                ("v1", "Service"),
                ("v1", "ConfigMap"),
                ("v1", "PersistentVolumeClaim"),
            ] {
                let in_ns: Vec<Value> = kube.list(api, kind, Some(ns), "").await;
                assert!(in_ns.is_empty(), "{kind}s left in {ns}: {in_ns:#?}");
            }
        },
    )
    .await;
}
