//! Lifecycle runner throughput, through the whole runner (validation, planning, the per-instance
//! lock, background execution, one store transaction per step with journal and notification
//! outbox rows) with the in-memory infrastructure driver:
//!
//! - `lcm/instantiate_terminate_cycle/<store>`: INSTANTIATE then TERMINATE of one VNF, each
//!   waited for until COMPLETED (one element = one cycle);
//! - `lcm/concurrent_cycles/<store>/<n>`: the same cycle on `n` instances at once (1, 8, 32),
//!   one task each; one element = one cycle, so the figure is the total cycles per second. On
//!   SQLite the writes of concurrent steps share commits (group commit).
//! - `lcm/create_vnf_identifier/<store>`: VNF identifier creation (one element = one create,
//!   with its creation notification in the same transaction).
//!
//! Stores: `sqlite` (a file, the store's default durability: WAL with `synchronous=NORMAL`,
//! every commit survives a process crash), `sqlite-full` (`synchronous=FULL`: every commit
//! fsynced, survives power loss), and `postgres` when `VNFM_TEST_POSTGRES_URL` is set.
//! Every notification is routed to one subscription, so each state change writes an outbox row.
//!
//! Run with `cargo bench --bench lcm`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;
use vnfm::lcm::types::{LcmOperationStateType, VnfInstanceId};
use vnfm::lcm::{Lcm, MEMORY_VIM_TYPE, MemoryCatalog, MemoryInfraDriver};
use vnfm_lcm::testing::SingleCallbackRouter;
use vnfm_store::Store;
use vnfm_store_sql::{Durability, SqliteOptions, SqliteStore};

struct Setup {
    lcm: Lcm,
    vnfd_id: String,
    _dir: Option<tempfile::TempDir>,
}

async fn setup(store: Arc<dyn Store>, dir: Option<tempfile::TempDir>) -> Setup {
    let catalog = MemoryCatalog::new();
    let package = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("vnfd-samples/hello-vnf");
    let vnfd_id = vnfm::lcm::onboard_dir(&catalog, &package).expect("hello-vnf");
    let lcm = vnfm::lcm::builder()
        .store(store)
        .infra_driver(Arc::new(MemoryInfraDriver::new()))
        .catalog(Arc::new(catalog))
        .notification_router(Arc::new(SingleCallbackRouter::new(
            "bench",
            "http://127.0.0.1:9/notify",
        )))
        .recovery_interval(None)
        .build()
        .await
        .expect("lcm");
    Setup {
        lcm,
        vnfd_id,
        _dir: dir,
    }
}

async fn sqlite(durability: Durability) -> Setup {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open_with(
        dir.path().join("bench.db"),
        SqliteOptions {
            durability,
            ..SqliteOptions::default()
        },
    )
    .await
    .expect("sqlite");
    setup(Arc::new(store), Some(dir)).await
}

async fn create(s: &Setup) -> VnfInstanceId {
    s.lcm
        .create_vnf_identifier(
            serde_json::from_value(json!({"vnfdId": s.vnfd_id})).expect("request"),
        )
        .await
        .expect("create")
        .id
}

async fn cycle(s: &Setup, id: &VnfInstanceId) {
    cycle_on(&s.lcm, id).await
}

async fn cycle_on(lcm: &Lcm, id: &VnfInstanceId) {
    let wait = Duration::from_secs(30);
    let op = lcm
        .instantiate(
            id,
            serde_json::from_value(json!({
                "flavourId": "simple",
                "vimConnectionInfo": {"vim1": {"vimType": MEMORY_VIM_TYPE}}
            }))
            .expect("request"),
        )
        .await
        .expect("instantiate");
    let done = lcm.wait(&op.id, wait).await.expect("wait");
    assert_eq!(done.operation_state, LcmOperationStateType::Completed);
    let op = lcm
        .terminate(
            id,
            serde_json::from_value(json!({"terminationType": "FORCEFUL"})).expect("request"),
        )
        .await
        .expect("terminate");
    let done = lcm.wait(&op.id, wait).await.expect("wait");
    assert_eq!(done.operation_state, LcmOperationStateType::Completed);
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let mut stores: Vec<(&str, Setup)> = vec![
        ("sqlite", rt.block_on(sqlite(Durability::Normal))),
        ("sqlite-full", rt.block_on(sqlite(Durability::Full))),
    ];
    match std::env::var("VNFM_TEST_POSTGRES_URL") {
        Ok(url) => {
            let store = rt
                .block_on(vnfm_store_sql::open(&url))
                .expect("postgres store");
            stores.push(("postgres", rt.block_on(setup(store, None))));
        }
        Err(_) => {
            eprintln!("SKIPPED lcm benchmarks on postgres: VNFM_TEST_POSTGRES_URL is not set")
        }
    }

    let mut g = c.benchmark_group("lcm/instantiate_terminate_cycle");
    g.throughput(Throughput::Elements(1));
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(5));
    g.warm_up_time(Duration::from_secs(1));
    for (name, s) in &stores {
        let id = rt.block_on(create(s));
        g.bench_function(*name, |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let t = Instant::now();
                    for _ in 0..iters {
                        cycle(s, &id).await;
                    }
                    t.elapsed()
                })
            })
        });
    }
    g.finish();

    let mut g = c.benchmark_group("lcm/concurrent_cycles");
    g.throughput(Throughput::Elements(1));
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(8));
    g.warm_up_time(Duration::from_secs(1));
    for (name, s) in &stores {
        for n in [1usize, 8, 32] {
            let mut ids = Vec::with_capacity(n);
            for _ in 0..n {
                ids.push(rt.block_on(create(s)));
            }
            g.bench_function(format!("{name}/{n}"), |b| {
                b.iter_custom(|iters| {
                    // Every instance runs the same number of cycles; the time is scaled to
                    // `iters` cycles.
                    let each = iters.div_ceil(n as u64);
                    rt.block_on(async {
                        let t = Instant::now();
                        let tasks: Vec<_> = ids
                            .iter()
                            .map(|id| {
                                let (lcm, id) = (s.lcm.clone(), id.clone());
                                tokio::spawn(async move {
                                    for _ in 0..each {
                                        cycle_on(&lcm, &id).await;
                                    }
                                })
                            })
                            .collect();
                        for task in tasks {
                            task.await.expect("cycle task");
                        }
                        t.elapsed().mul_f64(iters as f64 / (each * n as u64) as f64)
                    })
                })
            });
        }
    }
    g.finish();

    let mut g = c.benchmark_group("lcm/create_vnf_identifier");
    g.throughput(Throughput::Elements(1));
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(5));
    g.warm_up_time(Duration::from_secs(1));
    for (name, s) in &stores {
        g.bench_function(*name, |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let t = Instant::now();
                    for _ in 0..iters {
                        create(s).await;
                    }
                    t.elapsed()
                })
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
