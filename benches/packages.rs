//! Parse + validate speed of real packages (the Tacker samples in `../shared/corpus`).
//!
//! Four figures per package: `inspect` is everything `vnfm package validate` does in-process
//! (open the directory, verify digests, read and validate the descriptor) with the parse cache
//! warm, `inspect_cold` the same with the cache emptied before each run (what a one-shot
//! `vnfm package validate` does after its start-up); `load` is the descriptor alone on an
//! already opened package, with the parse cache warm (a long-running VNFM); `load_cold` is the
//! same with the cache emptied before each run (the first package a process sees). Results go
//! to `docs/performance.md`.

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use vnfm::csar::Package;
use vnfm::package::{InspectOptions, inspect};

const PACKAGES: &[&str] = &[
    "v2-vm-basic-lcms-max",
    "v2-vm-userdata-standard",
    "mgmt-k8s-cluster-v1",
    "v1-vm-functional",
    "v2-cnf-instantiate-resources",
    "etsi-getting-started",
];

fn corpus() -> PathBuf {
    vnfm_test_env::corpus("tacker")
}

fn packages(c: &mut Criterion) {
    let options = InspectOptions::default();
    let mut group = c.benchmark_group("package");
    for name in PACKAGES {
        let path = corpus().join(name);
        if !path.is_dir() {
            eprintln!("skipping {name}: {} not found", path.display());
            continue;
        }
        group.bench_function(format!("inspect/{name}"), |b| {
            b.iter(|| black_box(inspect(black_box(&path), &options)))
        });
        group.bench_function(format!("inspect_cold/{name}"), |b| {
            b.iter_batched(
                vnfm::tosca::clear_cache,
                |()| black_box(inspect(black_box(&path), &options)),
                BatchSize::PerIteration,
            )
        });
        let Ok(package) = Package::open(&path) else {
            eprintln!("skipping load/{name}: package does not open");
            continue;
        };
        group.bench_function(format!("load/{name}"), |b| {
            b.iter(|| black_box(vnfm::tosca::load(black_box(&package))))
        });
        group.bench_function(format!("load_cold/{name}"), |b| {
            b.iter_batched(
                vnfm::tosca::clear_cache,
                |()| black_box(vnfm::tosca::load(black_box(&package))),
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, packages);
criterion_main!(benches);
