//! Helm charts through the `HelmRenderer` seam: the Helm SDK C library (when
//! `VNFM_HELM_C_LIB` names it; `scripts/test-env/helm.sh` installs it and CI always sets it)
//! and the `helm` program's argument contract. Rendered objects are applied and tracked like
//! manifests, on the real control plane of `KUBECONFIG` (`scripts/test-env/kubernetes.sh`;
//! built ignored without it, see `build.rs`).

use crate::support;

use std::sync::Arc;

use serde_json::json;
use support::real::{assert_pods_ready, in_namespace};
use support::*;
use vnfm_driver_api::{InfraStep, ResourceTarget};
use vnfm_infra_kubernetes::{ChartRequest, ChartSource, HelmBinary, HelmRenderer};
use vnfm_types::{LcmOperationType as Op, ScaleType, TerminationType};

fn chart_bytes() -> Vec<u8> {
    std::fs::read(corpus_dir("v2-helm-instantiate").join("Files/kubernetes/test-chart-0.1.0.tgz"))
        .expect("chart")
}

#[vnfm_test_env::needs(helm, corpus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdk_library_renders_the_corpus_chart_from_an_archive_and_a_directory() {
    let lib = helm_library();
    let (version, sdk) = lib.version();
    assert!(version.starts_with("0."), "{version}");
    assert!(sdk.starts_with('v'), "{sdk}");
    for chart in [
        ChartSource::Archive {
            name: "test-chart-0.1.0.tgz".into(),
            bytes: chart_bytes(),
        },
        ChartSource::Directory(
            corpus_dir("v2-helm-instantiate").join("Files/kubernetes/test-chart"),
        ),
    ] {
        let docs = lib
            .render(&ChartRequest {
                chart,
                release: "rel1".into(),
                namespace: "ns1".into(),
                values: json!({"replicaCountVdu1": 3, "service": {"port": 8081}}),
            })
            .await
            .expect("render");
        let dep = docs
            .iter()
            .find(|d| {
                d.object["kind"] == "Deployment" && d.object["metadata"]["name"] == "vdu1-rel1"
            })
            .expect("vdu1 deployment");
        assert_eq!(dep.object["spec"]["replicas"], 3);
        assert!(
            dep.source.ends_with("templates/deployment_vdu1.yaml"),
            "{}",
            dep.source
        );
        let svc = docs
            .iter()
            .find(|d| d.object["kind"] == "Service")
            .expect("service");
        assert_eq!(svc.object["spec"]["ports"][0]["port"], 8081);
        assert!(docs.iter().all(|d| !d.source.ends_with("NOTES.txt")));
    }
    // A broken chart is an error naming the chart, not a crash.
    let err = lib
        .render(&ChartRequest {
            chart: ChartSource::Archive {
                name: "junk.tgz".into(),
                bytes: b"not a chart".to_vec(),
            },
            release: "r".into(),
            namespace: "n".into(),
            values: json!({}),
        })
        .await
        .expect_err("junk");
    assert!(err.to_string().contains("junk.tgz"), "{err}");
}

#[vnfm_test_env::needs(kwok, helm, corpus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chart_is_applied_scaled_and_terminated_like_manifests() {
    let lib = helm_library();
    // On the real control plane, in a namespace of its own.
    in_namespace("helm", &[], |kube, ns| async move {
    let dir = corpus_dir("v2-helm-instantiate");
    let vnfd = load_vnfd(&dir);
    let mut helm_vim = kube.vim.clone();
    let mut info = helm_vim.connection_info().clone();
    info.vim_type = "ETSINFV.HELM.V_3".into();
    helm_vim = vnfm_driver_api::ResolvedVim::new("vim1", info);
    let mut call = Call::new(vnfd, Arc::new(DirArtifacts(dir)), helm_vim, &ns);
    call.flavour = "simple".into();
    let d = driver().with_helm(Arc::new(lib));
    let target = |a: u32, b: u32| ResourceTarget {
        flavour_id: "simple".into(),
        vdu_instances: [("VDU1".to_string(), a), ("VDU2".to_string(), b)].into(),
        ..Default::default()
    };
    let params = json!({
        "helm_chart_path": "Files/kubernetes/test-chart-0.1.0.tgz",
        "helm_parameters": {"service.port": 8081},
        "helm_value_names": {"VDU1": {"replica": "replicaCountVdu1"}, "VDU2": {"replica": "replicaCountVdu2"}},
        "helm_release_name": "cnf",
        "namespace": ns
    });
    let out = call
        .run(
            &d,
            Op::Instantiate,
            InfraStep::Instantiate {
                target: target(1, 2),
            },
            json!({"flavourId": "simple", "additionalParams": params}),
        )
        .await
        .expect("instantiate");
    // helm_value_names carried the VDU counts into the chart.
    assert_pods_ready(&kube, &ns, "instantiate").await;
    let dep = kube
        .object("apps/v1", "Deployment", Some(&ns), "vdu2-cnf")
        .await
        .expect("vdu2");
    assert_eq!(dep["spec"]["replicas"], 2);
    assert_eq!(dep["metadata"]["labels"]["vnfm.io/vnf-instance-id"], ns);
    let svc = kube
        .object("v1", "Service", Some(&ns), "cnf-test-chart")
        .await
        .expect("service");
    assert_eq!(svc["spec"]["ports"][0]["port"], 8081);
    let pods = pods_per_vdu(&out);
    assert_eq!((pods.get("VDU1"), pods.get("VDU2")), (Some(&1), Some(&2)));
    let out = call
        .run(
            &d,
            Op::Scale,
            InfraStep::Scale {
                aspect_id: "vdu1_aspect".into(),
                scale_type: ScaleType::ScaleOut,
                steps: 2,
                from: target(1, 2),
                target: target(3, 2),
            },
            json!({"type": "SCALE_OUT", "aspectId": "vdu1_aspect", "numberOfSteps": 2}),
        )
        .await
        .expect("scale");
    assert_eq!(pods_per_vdu(&out).get("VDU1"), Some(&3));
    assert_pods_ready(&kube, &ns, "scale").await;
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
    let left = kube.labelled("vnfm.io/vnf-instance-id", &ns).await;
    assert!(left.is_empty(), "left behind: {left:?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_helm_program_gets_an_argument_vector_and_its_output_is_split_by_source() {
    let dir = tempfile::tempdir().expect("dir");
    let args_file = dir.path().join("args");
    let script = dir.path().join("helm");
    // A stand-in for `helm`: records its arguments one per line, prints two documents.
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do echo \"$a\" >> '{}'; done\ncat <<'EOF'\n---\n# Source: c/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n---\n# Source: c/templates/dep.yaml\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  template: {{}}\nEOF\n",
            args_file.display()
        ),
    )
    .expect("script");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let helm = HelmBinary::new(&script);
    let docs = helm
        .render(&ChartRequest {
            chart: ChartSource::Archive {
                name: "c.tgz".into(),
                bytes: b"archive".to_vec(),
            },
            release: "rel; rm -rf /".into(),
            namespace: "ns".into(),
            values: json!({"a": 1}),
        })
        .await
        .expect("render");
    let sources: Vec<&str> = docs.iter().map(|d| d.source.as_str()).collect();
    assert_eq!(
        sources,
        ["c.tgz:c/templates/cm.yaml", "c.tgz:c/templates/dep.yaml"]
    );
    let args: Vec<String> = std::fs::read_to_string(&args_file)
        .expect("args")
        .lines()
        .map(String::from)
        .collect();
    // The release name is one argument, never interpreted by a shell.
    assert_eq!(args[0], "template");
    assert_eq!(args[1], "rel; rm -rf /");
    assert!(args[2].ends_with("chart.tgz"));
    assert_eq!(&args[3..5], ["--namespace", "ns"]);
    assert_eq!(args[5], "--values");
    assert_eq!(args[7], "--include-crds");
    // A failing program is an error with its stderr.
    std::fs::write(
        &script,
        "#!/bin/sh\necho 'Error: chart broken' >&2\nexit 1\n",
    )
    .expect("script");
    let err = helm
        .render(&ChartRequest {
            chart: ChartSource::Archive {
                name: "c.tgz".into(),
                bytes: vec![],
            },
            release: "r".into(),
            namespace: "n".into(),
            values: json!({}),
        })
        .await
        .expect_err("fails");
    assert!(err.to_string().contains("chart broken"), "{err}");
}

/// VNF-B's chart as its package has it twice: packaged (`Files/helm/cache-0.1.0.tgz`) and as
/// the directory it was packaged from (`Files/helm/cache/`, every file listed in the
/// manifest). Both render the same objects; the directory's are named by its package path.
#[vnfm_test_env::needs(helm)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chart_directory_of_a_package_renders_like_its_archive() {
    let lib = helm_library();
    let dir = std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../vnfd-samples/vnf-b-cnf"
    ));
    let vnfd = load_vnfd(&dir);
    let files = DirArtifacts(dir);
    let render = |path: &str| {
        let input = vnfm_infra_kubernetes::plan::RenderInput {
            params: json!({
                "helm_chart_path": path,
                "helm_value_names": {"cache": {"replica": "replicaCount"}}
            })
            .as_object()
            .cloned()
            .unwrap_or_default(),
            vnfd: Some(&vnfd),
            flavour: vnfd.flavours.first(),
            instance_id: "inst-dir".into(),
            namespace: "ns".into(),
            release: "rel".into(),
            counts: [("cache".to_string(), 3)].into(),
            ..Default::default()
        };
        let files = &files;
        let lib = &lib;
        async move { vnfm_infra_kubernetes::plan::render(&input, files, Some(lib)).await }
    };
    let archive = render("Files/helm/cache-0.1.0.tgz").await.expect("archive");
    let directory = render("Files/helm/cache").await.expect("directory");
    let objects = |p: &[vnfm_infra_kubernetes::plan::Planned]| {
        p.iter().map(|p| p.object.clone()).collect::<Vec<_>>()
    };
    assert_eq!(objects(&directory), objects(&archive));
    assert_eq!(
        directory
            .iter()
            .map(|p| format!("{}/{}", p.kind(), p.name()))
            .collect::<Vec<_>>(),
        ["Service/cache-rel", "Deployment/cache-rel"]
    );
    assert_eq!(directory[1].object["spec"]["replicas"], 3);
    for p in &directory {
        assert!(
            p.source.starts_with("Files/helm/cache:"),
            "named by the package path: {}",
            p.source
        );
    }
}
