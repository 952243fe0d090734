//! The ASD sample package (`vnfd-samples/asd-sample`, read with `vnfm_tosca` from the
//! directory) deployed by the driver against the emulated API server: its two deployment
//! items run in two stages by `deployment_order`, and the workload stage starts only once the
//! configuration stage is ready (its claim is bound).

mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use support::*;
use vnfm_driver_api::{InfraStep, ResourceTarget};
use vnfm_infra_kubernetes::asd_vnfd;
use vnfm_types::{LcmOperationType as Op, TerminationType};

const INSTANCE: &str = "inst-asd-sample";
const NS: &str = "web-asd";

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

fn applied(emu: &vnfm_kube_emulator::Emulator) -> Vec<String> {
    objects(&emu.log(), "apply")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_workload_stage_waits_for_the_configuration_stage() {
    let asd = load_asd(&sample());
    let stages: Vec<Vec<String>> = asd.stages.iter().map(|s| s.items.clone()).collect();
    assert_eq!(
        stages,
        [vec!["config".to_string()], vec!["web".to_string()]]
    );

    let emu = emulator().await;
    // The claim of stage 1 stays Pending until the test lets it bind.
    emu.never_ready("PersistentVolumeClaim", "web-data");
    let mut call = Call::new(
        asd_vnfd(&asd),
        Arc::new(DirArtifacts(sample())),
        vim(&emu),
        INSTANCE,
    );
    let request: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(sample().join("requests/instantiate.json")).expect("request"),
    )
    .expect("JSON");
    let params = request["additionalParams"].clone();
    assert_eq!(params["namespace"], NS);
    let driver = driver();
    let run = tokio::spawn(async move {
        let out = call
            .run(
                &driver,
                Op::Instantiate,
                InfraStep::Instantiate {
                    target: ResourceTarget {
                        flavour_id: "default".into(),
                        ..Default::default()
                    },
                },
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
    assert!(
        held.contains(&format!("ConfigMap/{NS}/web-config")),
        "{held:?}"
    );
    assert!(
        held.contains(&format!("PersistentVolumeClaim/{NS}/web-data")),
        "{held:?}"
    );
    // ...and stage 2 has not started while the claim is not bound.
    assert!(
        !held
            .iter()
            .any(|o| o.starts_with("Deployment/") || o.starts_with("Service/")),
        "stage 2 started before stage 1 was ready: {held:?}"
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
    assert!(
        pos(&format!("PersistentVolumeClaim/{NS}/web-data")) < pos(&format!("Deployment/{NS}/web"))
    );
    assert!(pos(&format!("ConfigMap/{NS}/web-config")) < pos(&format!("Service/{NS}/web")));
    let claim = emu
        .object("v1", "PersistentVolumeClaim", Some(NS), "web-data")
        .expect("claim");
    assert_eq!(claim["status"]["phase"], "Bound");
    // The workload's pods are reported under its deployment item; every object carries the
    // instance label.
    assert_eq!(pods_per_vdu(&out).get("web"), Some(&1));
    for o in [
        "ConfigMap/web-asd/web-config",
        "PersistentVolumeClaim/web-asd/web-data",
        "Deployment/web-asd/web",
        "Service/web-asd/web",
    ] {
        assert!(
            emu.labelled("vnfm.io/vnf-instance-id", INSTANCE)
                .contains(&o.to_string()),
            "{o}"
        );
    }

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
    assert!(
        emu.labelled("vnfm.io/vnf-instance-id", INSTANCE).is_empty(),
        "{:?}",
        emu.labelled("vnfm.io/vnf-instance-id", INSTANCE)
    );
    assert!(emu.object("v1", "Namespace", None, NS).is_none());
}
