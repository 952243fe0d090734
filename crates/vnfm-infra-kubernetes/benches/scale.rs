//! Many CNF instances on one real control plane (`benches/kube-scale.sh` starts one of its own
//! and runs this): `VNFM_BENCH_INSTANCES` instances (default 1,000), each a 2-replica
//! Deployment in a namespace of its own, instantiated `VNFM_BENCH_CONCURRENCY` (default 50) at
//! a time, then every instance observed once as the infrastructure watch does, then all
//! terminated 50 at a time.
//!
//! Checked: every step completes, and when an instantiate completes both of its pods run and
//! are Ready (the simulated pods become Ready `VNFM_KUBE_READY_DELAY` after they run, so a step
//! that does not wait for them is caught). Reported: the API requests per operation, read from
//! the API server's audit log (`VNFM_TEST_KUBE_AUDIT_LOG`; the benchmark's own checks are left
//! out), the watch connections the server holds (`apiserver_longrunning_requests` of verb
//! WATCH in its `/metrics`, sampled every second, the largest value per phase, and how many
//! more than before the run; `apiserver_registered_watchers` is not served by 1.37) and the
//! driver's open list/watch streams, and each phase's time.

#[path = "../tests/support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};
use support::real::Kube;
use support::*;
use vnfm_driver_api::memory::MemArtifacts;
use vnfm_driver_api::{InfraDriver, InfraStep, ObserveRequest, ResourceTarget, RunControl};
use vnfm_infra_kubernetes::KubernetesDriver;
use vnfm_types::LcmOperationType as Op;

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx}]
";

/// A label no object has: the benchmark's own reads select `!` it, which marks them in the
/// audit log (its `requestURI`) so that they are not counted as the driver's.
const MARK: &str = "vnfm-bench-check";

fn vnfd() -> vnfm_descriptor::Vnfd {
    serde_json::from_value(json!({
        "descriptorId": "vnfd-bench", "descriptorVersion": "1.0", "provider": "Acme",
        "productName": "Bench", "softwareVersion": "1.0",
        "toscaDefinitionsVersion": "tosca_simple_yaml_1_2", "vnfNodeType": "acme.Bench",
        "entryDefinitions": "Definitions/top.yaml",
        "flavours": [{
            "id": "simple", "file": "Definitions/df.yaml",
            "vdus": [{"id": "VDU1", "name": "web", "kind": "compute", "nodeType": "tosca.nodes.nfv.Vdu.Compute",
                      "minInstances": 1, "maxInstances": 3, "initialDelta": 2}]
        }]
    }))
    .expect("vnfd")
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The largest values seen of the server's watch gauges and the driver's streams.
#[derive(Debug, Default, Clone, Copy)]
struct Peak {
    longrunning_watches: f64,
    driver_streams: usize,
}

/// The sum of every sample of `metric` in a Prometheus text exposition whose labels contain
/// all of `labels`.
fn metric_sum(text: &str, metric: &str, labels: &[&str]) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| {
            l.strip_prefix(metric)
                .is_some_and(|r| r.starts_with('{') || r.starts_with(' '))
        })
        .filter(|l| labels.iter().all(|x| l.contains(x)))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

async fn sample(kube: &Kube) -> f64 {
    let req = http::Request::get("/metrics")
        .body(Vec::new())
        .expect("request");
    let text = kube
        .cluster
        .client()
        .request_text(req)
        .await
        .unwrap_or_default();
    metric_sum(&text, "apiserver_longrunning_requests", &["verb=\"WATCH\""])
}

/// Requests in the audit log after line `from`, by verb, without the benchmark's own.
fn requests_since(from: usize) -> (usize, BTreeMap<String, usize>) {
    let path = std::env::var("VNFM_TEST_KUBE_AUDIT_LOG").expect("VNFM_TEST_KUBE_AUDIT_LOG");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let lines: Vec<&str> = text.lines().collect();
    let mut ids = std::collections::HashSet::new();
    let mut verbs: BTreeMap<String, usize> = BTreeMap::new();
    for l in &lines[from.min(lines.len())..] {
        let Ok(e) = serde_json::from_str::<Value>(l) else {
            continue;
        };
        let uri = e["requestURI"].as_str().unwrap_or("");
        if uri.contains(MARK) || uri.starts_with("/metrics") {
            continue;
        }
        // A watch is logged when it starts and when it ends: one request.
        if !ids.insert(e["auditID"].as_str().unwrap_or("").to_string()) {
            continue;
        }
        *verbs
            .entry(e["verb"].as_str().unwrap_or("?").to_string())
            .or_default() += 1;
    }
    (lines.len(), verbs)
}

fn audit_len() -> usize {
    requests_since(usize::MAX).0
}

fn median(mut v: Vec<Duration>) -> (Duration, Duration) {
    v.sort();
    if v.is_empty() {
        return (Duration::ZERO, Duration::ZERO);
    }
    let p95 = v[((v.len() * 95) / 100).min(v.len() - 1)];
    (v[v.len() / 2], p95)
}

/// Fails unless exactly `want` pods of `namespace` run and are Ready.
async fn assert_ready(kube: &Kube, namespace: &str, want: usize) -> Result<(), String> {
    let pod = kube.cluster.pod_kind().await.map_err(|e| e.to_string())?;
    let pods = kube
        .cluster
        .list(&pod, Some(namespace), &format!("!{MARK}"))
        .await
        .map_err(|e| e.to_string())?;
    let ready = pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| {
            let v = serde_json::to_value(p).unwrap_or(Value::Null);
            v.pointer("/status/conditions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
        .count();
    if ready == want && pods.len() == want {
        Ok(())
    } else {
        Err(format!(
            "{namespace}: COMPLETED with {ready} of {} pods Ready (want {want})",
            pods.len()
        ))
    }
}

fn report(
    phase: &str,
    n: usize,
    took: Duration,
    verbs: &BTreeMap<String, usize>,
    peak: Peak,
    before: f64,
) {
    let total: usize = verbs.values().sum();
    let per: Vec<String> = verbs
        .iter()
        .map(|(v, c)| format!("{v} {:.2}", *c as f64 / n as f64))
        .collect();
    println!(
        "{phase}: {n} in {:.1} s; {total} requests, {:.2} per operation ({}); peak watches held by the server {} ({:+} on before the run), driver streams {}",
        took.as_secs_f64(),
        total as f64 / n as f64,
        per.join(", "),
        peak.longrunning_watches,
        peak.longrunning_watches - before,
        peak.driver_streams,
    );
}

fn main() {
    crypto();
    if std::env::var_os("VNFM_TEST_KUBE_AUDIT_LOG").is_none() {
        eprintln!(
            "scale: needs the test environment's control plane (run benches/kube-scale.sh); skipped"
        );
        return;
    }
    let n = env_usize("VNFM_BENCH_INSTANCES", 1000);
    let concurrency = env_usize("VNFM_BENCH_CONCURRENCY", 50);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(run(n, concurrency));
}

async fn run(n: usize, concurrency: usize) {
    let kube = Arc::new(Kube::get());
    let driver = Arc::new(
        KubernetesDriver::new()
            .with_ready_timeout(Duration::from_secs(900))
            .with_delete_timeout(Duration::from_secs(900)),
    );
    let vnfd = vnfd();
    let files: Arc<MemArtifacts> = Arc::new(MemArtifacts::new().with("Files/web.yaml", DEPLOYMENT));
    let run_id = std::process::id();
    let before = sample(&kube).await;
    println!(
        "scale: {n} instances, {concurrency} operations at a time; before: {before} watches held by the server (the control plane's and KWOK's own)"
    );

    // The gauges, sampled every second into the current phase's peak.
    let peak = Arc::new(std::sync::Mutex::new(Peak::default()));
    let sampler = {
        let (kube, driver, peak) = (kube.clone(), driver.clone(), peak.clone());
        tokio::spawn(async move {
            loop {
                let w = sample(&kube).await;
                let s = driver.open_watch_streams();
                {
                    let mut p = peak.lock().expect("peak");
                    p.longrunning_watches = p.longrunning_watches.max(w);
                    p.driver_streams = p.driver_streams.max(s);
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        })
    };
    let take_peak = || std::mem::take(&mut *peak.lock().expect("peak"));

    // Instantiate.
    let failures = Arc::new(AtomicUsize::new(0));
    let mark = audit_len();
    let started = Instant::now();
    take_peak();
    let calls: Vec<(Call, Duration)> = futures::stream::iter(0..n)
        .map(|i| {
            let (kube, driver, files, failures) = (
                kube.clone(),
                driver.clone(),
                files.clone(),
                failures.clone(),
            );
            let mut call = Call::new(
                vnfd.clone(),
                files,
                kube.vim.clone(),
                &format!("scale-{run_id}-{i}"),
            );
            async move {
                let t = Instant::now();
                let step = InfraStep::Instantiate {
                    target: ResourceTarget {
                        flavour_id: "simple".into(),
                        vdu_instances: [("VDU1".to_string(), 2)].into(),
                        ..Default::default()
                    },
                };
                let req = json!({"flavourId": "simple",
                    "additionalParams": {"lcm-kubernetes-def-files": ["Files/web.yaml"]}});
                let mut req = call.request(Op::Instantiate, step, req);
                req.control = RunControl::with_timeout(Duration::from_secs(1800));
                match vnfm_driver_api::execute(&*driver, &req).await {
                    Ok(out) => {
                        call.record(&out);
                        let ns = call.state["namespace"].as_str().unwrap_or("").to_string();
                        if let Err(e) = assert_ready(&kube, &ns, 2).await {
                            eprintln!("scale: {e}");
                            failures.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    Err(e) => {
                        eprintln!("scale: instantiate {}: {e}", call.instance.id);
                        failures.fetch_add(1, Ordering::Relaxed);
                    }
                }
                (call, t.elapsed())
            }
        })
        .buffer_unordered(concurrency)
        .collect()
        .await;
    let took = started.elapsed();
    let (_, verbs) = requests_since(mark);
    let (med, p95) = median(calls.iter().map(|(_, d)| *d).collect());
    report("instantiate", n, took, &verbs, take_peak(), before);
    println!(
        "instantiate: median {:.2} s, p95 {:.2} s per operation; {} not COMPLETED or COMPLETED before its pods were Ready",
        med.as_secs_f64(),
        p95.as_secs_f64(),
        failures.load(Ordering::Relaxed)
    );

    // One look at every instance, as the infrastructure watch takes it.
    let mark = audit_len();
    let started = Instant::now();
    let mut conditions = 0;
    for (call, _) in &calls {
        let req = ObserveRequest {
            instance: call.instance.clone(),
            vims: call.vims.clone(),
            driver_state: call.state.clone(),
            control: RunControl::with_timeout(Duration::from_secs(60)),
        };
        match driver.observe(&req).await {
            Ok(c) => conditions += c.len(),
            Err(e) => eprintln!("scale: observe {}: {e}", call.instance.id),
        }
    }
    let took = started.elapsed();
    let (_, verbs) = requests_since(mark);
    report("observe", n, took, &verbs, take_peak(), before);
    println!("observe: {conditions} conditions reported");

    // Terminate.
    let mark = audit_len();
    let started = Instant::now();
    let term_failures = Arc::new(AtomicUsize::new(0));
    let times: Vec<Duration> = futures::stream::iter(calls)
        .map(|(call, _)| {
            let (driver, term_failures) = (driver.clone(), term_failures.clone());
            async move {
                let t = Instant::now();
                let mut req = call.request(
                    Op::Terminate,
                    InfraStep::Terminate {
                        termination_type: vnfm_types::TerminationType::Forceful,
                        graceful_timeout_seconds: None,
                    },
                    json!({"terminationType": "FORCEFUL"}),
                );
                req.control = RunControl::with_timeout(Duration::from_secs(1800));
                if let Err(e) = vnfm_driver_api::execute(&*driver, &req).await {
                    eprintln!("scale: terminate {}: {e}", call.instance.id);
                    term_failures.fetch_add(1, Ordering::Relaxed);
                }
                t.elapsed()
            }
        })
        .buffer_unordered(concurrency)
        .collect()
        .await;
    let took = started.elapsed();
    let (_, verbs) = requests_since(mark);
    let (med, p95) = median(times);
    report("terminate", n, took, &verbs, take_peak(), before);
    println!(
        "terminate: median {:.2} s, p95 {:.2} s per operation; {} not COMPLETED",
        med.as_secs_f64(),
        p95.as_secs_f64(),
        term_failures.load(Ordering::Relaxed)
    );
    sampler.abort();
    let mut left = 0;
    for (api_version, kind) in [
        ("v1", "Namespace"),
        ("apps/v1", "Deployment"),
        ("v1", "Pod"),
    ] {
        left += kube
            .list(
                api_version,
                kind,
                None,
                &format!("vnfm.io/vnf-instance-id,!{MARK}"),
            )
            .await
            .iter()
            .filter(|o| {
                o.pointer("/metadata/labels/vnfm.io~1vnf-instance-id")
                    .and_then(Value::as_str)
                    .is_some_and(|v| v.starts_with(&format!("scale-{run_id}-")))
            })
            .count();
    }
    println!("left behind: {left} objects");
    let failed = failures.load(Ordering::Relaxed) + term_failures.load(Ordering::Relaxed);
    if failed > 0 || left > 0 {
        eprintln!("scale: {failed} operations failed, {left} objects left");
        std::process::exit(1);
    }
}
