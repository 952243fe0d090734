//! Readiness latency: the time from the emulated API server publishing the status write that
//! makes an object ready (the watch event) until the driver's readiness wait
//! (`vnfm_infra_kubernetes::ready::wait_ready`, the one every step uses) returns.
//!
//! Each sample applies one object whose pods the emulator holds back (`never_ready`), starts
//! the wait, lets the watch be established, then releases the object (`allow_ready`). The
//! emulator's controller writes the ready status; the emulator records when each watch event
//! was published (`Emulator::events`). The latency is the wait's return instant minus the
//! publication instant of the first event in which the object is ready by the driver's own
//! rule (`ready::readiness`). Two objects are measured:
//!
//! - `readiness_latency/pod`: a bare Pod (ready when the emulated kubelet reports it Running
//!   and Ready);
//! - `readiness_latency/deployment`: a Deployment of one replica (ready when the emulated
//!   deployment controller reports its replicas updated, available and ready).
//!
//! Criterion reports the distribution of the latency (each iteration's measured time is that
//! sample's latency, not the wall time of the iteration); every sample is also collected and
//! its median, p99 and maximum printed, and the raw values written to
//! `target/criterion/readiness-latency-<object>.txt` (nanoseconds, one a line).
//!
//! Run with `cargo bench -p vnfm-infra-kubernetes --bench readiness`.

#[path = "../tests/support/mod.rs"]
mod support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, criterion_group, criterion_main};
use serde_json::{Value, json};
use support::*;
use vnfm_driver_api::RunControl;
use vnfm_infra_kubernetes::access::ClusterAccess;
use vnfm_infra_kubernetes::cluster::Cluster;
use vnfm_infra_kubernetes::plan::{INSTANCE_LABEL, Planned};
use vnfm_infra_kubernetes::ready::{Readiness, readiness, wait_ready};
use vnfm_kube_emulator::{Emulator, EmulatorConfig};

const NAMESPACE: &str = "latency";
/// Makes the object of one sample from its name.
type MakeObject = fn(&str) -> Planned;
const INSTANCE: &str = "latency-bench";

fn planned(object: Value, tier: u8) -> Planned {
    Planned {
        object,
        source: "bench".into(),
        stage: 0,
        tier,
        vdu: None,
        namespaced: Some(true),
        shared: false,
        persistent: false,
        request: false,
        hpa: None,
    }
}

fn pod(name: &str) -> Planned {
    planned(
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": {INSTANCE_LABEL: INSTANCE}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
        8,
    )
}

fn deployment(name: &str) -> Planned {
    planned(
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": {INSTANCE_LABEL: INSTANCE}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name, INSTANCE_LABEL: INSTANCE}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
        8,
    )
}

/// One sample: apply `p` held back, wait for it, release it; the latency from the ready
/// event's publication to the wait's return.
async fn sample(emu: &Emulator, cluster: &Arc<Cluster>, p: Planned) -> Duration {
    let kind = p.kind().to_string();
    let name = p.name().to_string();
    emu.never_ready(&kind, &name);
    cluster.apply(&p).await.expect("apply");
    emu.clear_log();
    let waiting = {
        let cluster = cluster.clone();
        let targets = vec![p.clone()];
        tokio::spawn(async move {
            let control = RunControl::with_timeout(Duration::from_secs(30));
            let r = wait_ready(
                &cluster,
                &targets,
                INSTANCE,
                Duration::from_secs(30),
                &control,
            )
            .await;
            (r, Instant::now())
        })
    };
    // Release the object only once its watch is open: the wait then learns of readiness from
    // a watch event, not from its initial list.
    while !emu
        .log()
        .iter()
        .any(|e| e.verb == "watch" && e.kind == kind && e.code == 200)
    {
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    emu.allow_ready(&kind, &name);
    let (result, returned) = waiting.await.expect("wait task");
    result.expect("ready");
    let api_version = p.api_version().to_string();
    let ready_at = emu
        .events(&api_version, &kind, Some(NAMESPACE), Some(&name))
        .into_iter()
        .find(|e| readiness(p.group(), &kind, &e.object) == Readiness::Ready)
        .and_then(|e| e.published)
        .expect("the emulator published the ready status");
    cluster.delete(&p, Some(0)).await.expect("delete");
    returned.saturating_duration_since(ready_at)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn report(name: &str, samples: &[Duration]) {
    let mut sorted = samples.to_vec();
    sorted.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "readiness latency ({name}): {} samples, min {:.3} ms, median {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        sorted.len(),
        ms(sorted.first().copied().unwrap_or_default()),
        ms(percentile(&sorted, 50.0)),
        ms(percentile(&sorted, 99.0)),
        ms(sorted.last().copied().unwrap_or_default()),
    );
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../target"))
        })
        .join("criterion");
    let text: String = samples
        .iter()
        .map(|d| format!("{}\n", d.as_nanos()))
        .collect();
    let file = dir.join(format!("readiness-latency-{name}.txt"));
    match std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&file, text)) {
        Ok(()) => println!("per-sample latencies: {}", file.display()),
        Err(e) => eprintln!("cannot write {}: {e}", file.display()),
    }
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    crypto();
    // Pods start as soon as they are released: the samples spend no time on a delay.
    let config = EmulatorConfig {
        ready_delay: Duration::ZERO,
        ..EmulatorConfig::default()
    };
    let emu = rt.block_on(Emulator::start(config)).expect("emulator");
    emu.put_object(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
    )
    .expect("namespace");
    // The client's connection pool lives on the runtime.
    let _runtime = rt.enter();
    let access = ClusterAccess::from_vim(&vim(&emu)).expect("access");
    let cluster = Arc::new(Cluster::connect(access).expect("cluster"));
    let mut group = c.benchmark_group("kubernetes");
    // The measured time of an iteration is its latency, but criterion sizes the run by wall
    // time (a sample takes some 5 ms: apply, open the watch, release, delete): five seconds
    // are about a thousand samples, enough for a p99.
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(50);
    group.warm_up_time(Duration::from_millis(300));
    group.measurement_time(Duration::from_secs(5));
    let objects: [(&str, MakeObject); 2] = [("pod", pod), ("deployment", deployment)];
    for (label, make) in objects {
        let samples: Mutex<Vec<Duration>> = Mutex::new(Vec::new());
        let mut n = 0u64;
        // The first samples also discover the kinds and open connections: not measured.
        for _ in 0..5 {
            n += 1;
            rt.block_on(sample(&emu, &cluster, make(&format!("{label}-{n}"))));
        }
        group.bench_function(format!("readiness_latency/{label}"), |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        n += 1;
                        let latency = sample(&emu, &cluster, make(&format!("{label}-{n}"))).await;
                        samples
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(latency);
                        total += latency;
                    }
                    total
                })
            })
        });
        report(label, &samples.lock().unwrap_or_else(|e| e.into_inner()));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
