//! The ASD sample package (`vnfd-samples/asd-sample`, read with `vnfm_tosca` from the
//! directory) deployed by the driver against the emulated API server: VNF-B as an ASD, its
//! three deployment items in two stages by `deployment_order` (the web server's configuration
//! first; its workload and the cache's Helm chart, rendered by the Helm SDK library of
//! `VNFM_HELM_C_LIB`, once the configuration stage is ready), the chart's lifecycle
//! parameters taken from the request, and terminate leaving nothing behind. Without
//! `VNFM_HELM_C_LIB` the full run says SKIPPED (CI always sets it).

use crate::support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::*;
use vnfm_descriptor::asd::DeploymentArtifactType;
use vnfm_driver_api::{InfraStep, ResourceTarget};
use vnfm_infra_kubernetes::{HelmLibrary, KubernetesDriver, asd_vnfd};
use vnfm_types::{LcmOperationType as Op, TerminationType};

const INSTANCE: &str = "inst-asd-sample";
/// The release name the driver derives from [`INSTANCE`] (`vnf` + the id without dashes).
const RELEASE: &str = "vnfinstasdsample";
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

fn helm(test: &str) -> Option<HelmLibrary> {
    match std::env::var("VNFM_HELM_C_LIB") {
        Ok(path) if !path.is_empty() => Some(HelmLibrary::load(&path).expect("libhelm_c loads")),
        _ => {
            println!(
                "SKIPPED {test}: VNFM_HELM_C_LIB is not set; run `export VNFM_HELM_C_LIB=$(scripts/test-env/helm.sh)` (CI does)"
            );
            None
        }
    }
}

fn applied(emu: &vnfm_kube_emulator::Emulator) -> Vec<String> {
    objects(&emu.log(), "apply")
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_helm_renderer_the_chart_item_is_refused_before_anything_is_applied() {
    let emu = emulator().await;
    let mut call = Call::new(
        asd_vnfd(&load_asd(&sample())),
        Arc::new(DirArtifacts(sample())),
        vim(&emu),
        INSTANCE,
    );
    let driver = KubernetesDriver::new()
        .without_helm()
        .with_ready_timeout(Duration::from_secs(20));
    let err = call
        .run(
            &driver,
            Op::Instantiate,
            instantiate_step(),
            json!({"flavourId": "default", "additionalParams": sample_params()}),
        )
        .await
        .expect_err("no renderer");
    assert_eq!(err.kind(), "invalidInput");
    assert!(
        err.to_string().contains(CHART) && err.to_string().contains("no Helm renderer"),
        "{err}"
    );
    assert!(applied(&emu).is_empty(), "{:?}", applied(&emu));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sample_deploys_in_two_stages_with_its_chart_and_terminates_clean() {
    let test = "the_sample_deploys_in_two_stages_with_its_chart_and_terminates_clean";
    let Some(helm) = helm(test) else { return };
    let asd = load_asd(&sample());
    let emu = emulator().await;
    // The claim of stage 1 stays Pending until the test lets it bind.
    emu.never_ready("PersistentVolumeClaim", "web-data");
    let mut call = Call::new(
        asd_vnfd(&asd),
        Arc::new(DirArtifacts(sample())),
        vim(&emu),
        INSTANCE,
    );
    let mut params = sample_params();
    assert_eq!(params["namespace"], NS);
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

    // Stage 1 is applied and the driver watches its claim...
    let until = Instant::now() + Duration::from_secs(20);
    while !emu
        .log()
        .iter()
        .any(|e| e.verb == "watch" && e.kind == "PersistentVolumeClaim")
    {
        assert!(
            Instant::now() < until,
            "the driver never waited for the claim: {:?}",
            applied(&emu)
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let held = applied(&emu);
    for (kind, name) in [
        ("ConfigMap", "web-config"),
        ("PersistentVolumeClaim", "web-data"),
    ] {
        let o = format!("{kind}/{NS}/{name}");
        assert!(held.contains(&o), "{o} not applied: {held:?}");
        assert!(
            emu.object("v1", kind, Some(NS), name).is_some(),
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
        emu.objects("apps/v1", "Deployment").is_empty() && emu.objects("v1", "Service").is_empty(),
        "stage 2 objects exist before stage 1 was ready"
    );

    emu.allow_ready("PersistentVolumeClaim", "web-data");
    let (out, mut call, driver) = run.await.expect("task");
    let out = out.expect("instantiate");
    let done = applied(&emu);
    let pos = |o: &str| {
        done.iter()
            .position(|a| a == o)
            .unwrap_or_else(|| panic!("{o} not applied: {done:?}"))
    };
    let claim = emu
        .object("v1", "PersistentVolumeClaim", Some(NS), "web-data")
        .expect("claim");
    assert_eq!(claim["status"]["phase"], "Bound");
    let cache = format!("cache-{RELEASE}");
    for stage2 in [
        format!("Deployment/{NS}/web"),
        format!("Service/{NS}/web"),
        format!("Deployment/{NS}/{cache}"),
        format!("Service/{NS}/{cache}"),
    ] {
        assert!(pos(&format!("PersistentVolumeClaim/{NS}/web-data")) < pos(&stage2));
        assert!(pos(&format!("ConfigMap/{NS}/web-config")) < pos(&stage2));
    }

    // The chart's objects, rendered by Helm for the instance's release in its namespace,
    // carry the instance label and the lifecycle parameters' values.
    let dep = emu
        .object("apps/v1", "Deployment", Some(NS), &cache)
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
    let svc = emu
        .object("v1", "Service", Some(NS), &cache)
        .expect("the chart's Service");
    assert!(labelled(&svc), "{:#}", svc["metadata"]);
    assert_eq!(
        svc["spec"]["ports"][0]["port"], 16379,
        "service.port reached the chart"
    );
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], 6379);

    // Every object of both stages and every pod carries the instance label; pods are
    // reported under their deployment item.
    let mine = emu.labelled(INSTANCE_LABEL, INSTANCE);
    for o in [
        format!("ConfigMap/{NS}/web-config"),
        format!("PersistentVolumeClaim/{NS}/web-data"),
        format!("Deployment/{NS}/web"),
        format!("Service/{NS}/web"),
        format!("Deployment/{NS}/{cache}"),
        format!("Service/{NS}/{cache}"),
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
    let left = emu.labelled(INSTANCE_LABEL, INSTANCE);
    assert!(left.is_empty(), "{left:?}");
    assert!(emu.object("v1", "Namespace", None, NS).is_none());
    for (api, kind) in [
        ("apps/v1", "Deployment"),
        ("apps/v1", "ReplicaSet"),
        ("v1", "Pod"),
        ("v1", "Service"),
        ("v1", "ConfigMap"),
        ("v1", "PersistentVolumeClaim"),
    ] {
        let in_ns: Vec<Value> = emu
            .objects(api, kind)
            .into_iter()
            .filter(|o| o["metadata"]["namespace"] == NS)
            .collect();
        assert!(in_ns.is_empty(), "{kind}s left in {NS}: {in_ns:#?}");
    }
}
