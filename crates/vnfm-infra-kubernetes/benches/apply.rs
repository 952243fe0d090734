//! Apply and readiness of the 30-object corpus CNF (`v2-cnf-instantiate-resources`) against
//! the emulated API server: `kubernetes/instantiate_terminate/30_objects` is one instantiate
//! (render, ownership check, server-side apply in order, watch-based readiness, inventory)
//! plus one terminate (reverse deletion, waiting until gone).
//!
//! The emulator makes pods ready 30 ms after creation and Jobs finish 30 ms later; the rest is
//! the driver's and the emulator's own work. Run with `cargo bench -p vnfm-infra-kubernetes`.

#[path = "../tests/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use support::*;
use vnfm_driver_api::{InfraStep, ResourceTarget};
use vnfm_types::{LcmOperationType as Op, TerminationType};

const FILES: &[&str] = &[
    "Files/kubernetes/clusterrole_clusterrolebinding_SA.yaml",
    "Files/kubernetes/config-map.yaml",
    "Files/kubernetes/controller-revision.yaml",
    "Files/kubernetes/daemon-set.yaml",
    "Files/kubernetes/deployment.yaml",
    "Files/kubernetes/horizontal-pod-autoscaler.yaml",
    "Files/kubernetes/job.yaml",
    "Files/kubernetes/limit-range.yaml",
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
    "Files/kubernetes/statefulset.yaml",
    "Files/kubernetes/storage-class.yaml",
    "Files/kubernetes/storage-class_pv_pvc.yaml",
];

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let emu = rt.block_on(emulator());
    let dir = corpus_dir("v2-cnf-instantiate-resources");
    let vnfd = load_vnfd(&dir);
    let files: Arc<DirArtifacts> = Arc::new(DirArtifacts(dir));
    let d = driver();
    let target = ResourceTarget {
        flavour_id: "simple".into(),
        vdu_instances: [
            ("VDU1", 1),
            ("VDU2", 2),
            ("VDU3", 1),
            ("VDU5", 1),
            ("VDU6", 1),
        ]
        .iter()
        .map(|(v, n)| (v.to_string(), *n))
        .collect(),
        ..Default::default()
    };
    let mut group = c.benchmark_group("kubernetes");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    let mut n = 0u32;
    group.bench_function("instantiate_terminate/30_objects", |b| {
        b.iter(|| {
            n += 1;
            let id = format!("bench-{n}");
            rt.block_on(async {
                let mut call = Call::new(vnfd.clone(), files.clone(), vim(&emu), &id);
                let out = call
                    .run(
                        &d,
                        Op::Instantiate,
                        InfraStep::Instantiate {
                            target: target.clone(),
                        },
                        json!({"flavourId": "simple", "additionalParams": {
                            "lcm-kubernetes-def-files": FILES, "namespace": format!("ns-{id}")}}),
                    )
                    .await
                    .expect("instantiate");
                assert_eq!(out.resources.vnfc_resource_info.len(), 7);
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
            });
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
