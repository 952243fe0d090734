//! Crash recovery under SIGKILL.
//!
//! The test binary doubles as a worker: when `VNFM_CRASH_WORKER` is set, the `crash_worker`
//! test runs lifecycle operations forever against the store named there (several instances in
//! parallel, an infrastructure driver with a small random delay, random injected failures and
//! operator actions on what fails), logging every accepted operation occurrence. The parent
//! tests re-execute the binary in that mode and SIGKILL it at random points, then check what a
//! fresh runner makes of the store:
//!
//! - [`killed_workers_leave_a_consistent_store`]: several worker lifetimes on one SQLite file,
//!   200+ occurrences; after recovery nothing is left running without a live lease, no
//!   instance is held by a final occurrence (and every free instance accepts a new operation),
//!   no logged occurrence is missing, and every journal agrees with its occurrence's state.
//!
//! Each worker lifetime logs the occurrences it started to a file of its own (see
//! [`started_log`]), one `write(2)` per record, so a kill can at worst cut off the last
//! record of that lifetime's file; the checker reports such a record as torn instead of
//! reading it (or a record glued to it) as a lost occurrence.
//! - [`two_runners_on_postgres_one_takes_over`]: a worker and an in-process runner share a
//!   PostgreSQL database; while the worker lives the other runner takes none of its
//!   occurrences; after the kill it recovers them, and no step completes twice.
//!
//! The worker's side (its driver, configuration and operations) is in `worker`, the log it
//! writes in [`started_log`], the checker's reads in `checks`. The tests, the worker's entry
//! point and the spawning of workers stay here: the parent re-executes the binary with the
//! worker's test name (`crash::crash_worker`), taken from this module's path.

use std::collections::HashSet;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use vnfm_driver_api::memory::{MemoryInfraDriver, RecordingMgmtDriver};
use vnfm_lcm::testing::NoSubscribers;
use vnfm_lcm::{InlineVimDirectory, Lcm, LcmConfig};
use vnfm_store::{InstanceQuery, NameFilter, Timestamp};
use vnfm_types::{VnfInstanceId, VnfLcmOpOcc};

const WORKER_ENV: &str = "VNFM_CRASH_WORKER";

mod checks;
pub(crate) mod started_log;
mod worker;

use checks::{parent_lcm, settle_and_check};
use worker::{Jittery, below, seed, worker_cfg, worker_loop};

pub(crate) use checks::{all_op_occs, check_journal, instances_named, running};
pub(crate) use worker::catalog;

/// The worker process, started by the tests below with [`WORKER_ENV`] set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the worker process of the crash tests, which run it with --ignored"]
async fn crash_worker() {
    let cfg = worker_cfg().unwrap_or_else(|| panic!("{WORKER_ENV} is set by the crash tests"));
    seed(u64::from(std::process::id()).wrapping_mul(0x1000_0001) ^ Timestamp::now().0 as u64);
    let store = vnfm_store_sql::open(&cfg.store)
        .await
        .expect("worker store");
    let infra = Arc::new(Jittery {
        inner: MemoryInfraDriver::new(),
        base_ms: cfg.base_ms,
        jitter_ms: cfg.jitter_ms,
        calls: cfg.calls.as_ref().map(|path| {
            std::sync::Mutex::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .expect("call log"),
            )
        }),
    });
    // A lease of 0 ms: the defaults, with the sweep of the composition root (`vnfm serve`).
    let (config, sweep) = match cfg.lease_ms {
        0 => (LcmConfig::default(), Duration::from_secs(30)),
        ms => (
            LcmConfig::default().with_lease_ttl(Duration::from_millis(ms)),
            Duration::from_millis(100),
        ),
    };
    let lcm = Lcm::builder(
        store.clone(),
        Arc::new(InlineVimDirectory),
        Arc::new(NoSubscribers),
        Arc::new(catalog()),
    )
    .infra_driver(infra.clone())
    .mgmt_driver(Arc::new(
        RecordingMgmtDriver::new().with_delay(Duration::from_millis(2)),
    ))
    .config(config)
    .build();
    // Take over what the previous lifetime left, now and whenever its leases expire.
    let _ = lcm.recover().await;
    let _sweeper = lcm.spawn_recovery(sweep);
    if cfg.sigterm {
        let lcm = lcm.clone();
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("SIGTERM handler");
        tokio::spawn(async move {
            term.recv().await;
            // What `vnfm serve` does once its connections are drained.
            lcm.shutdown(Duration::from_secs(30)).await;
            std::process::exit(0);
        });
    }
    let log = Arc::new(std::sync::Mutex::new(
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&cfg.log)
            .expect("log"),
    ));
    let existing: Vec<VnfInstanceId> = lcm
        .list_instances(&InstanceQuery {
            name: Some(NameFilter::Exact(cfg.tag.clone())),
            limit: Some(1000),
            ..Default::default()
        })
        .await
        .map(|p| p.items.into_iter().map(|i| i.id).collect())
        .unwrap_or_default();
    let mut handles = Vec::new();
    for k in 0..cfg.loops {
        let mine: Vec<VnfInstanceId> = existing
            .iter()
            .enumerate()
            .filter(|(i, _)| i % cfg.loops == k)
            .map(|(_, id)| id.clone())
            .collect();
        let lcm = lcm.clone();
        let infra = infra.clone();
        let log = log.clone();
        let tag = cfg.tag.clone();
        handles.push(tokio::spawn(async move {
            worker_loop(lcm, infra, log, tag, k, mine).await;
        }));
    }
    for h in handles {
        let _ = h.await;
    }
}

// ----- the parent side -----

/// `crash_worker` as the test harness names it: its module path without the program's name.
fn worker_test_name() -> String {
    match module_path!().split_once("::") {
        Some((_, module)) => format!("{module}::crash_worker"),
        None => "crash_worker".to_owned(),
    }
}

fn spawn_worker(
    store: &str,
    log: &Path,
    tag: &str,
    lease_ms: u64,
    base_ms: u64,
    jitter_ms: u64,
) -> Child {
    spawn_worker_with(json!({
        "store": store, "log": log.display().to_string(), "tag": tag,
        "leaseMs": lease_ms, "baseMs": base_ms, "jitterMs": jitter_ms, "loops": 4
    }))
}

/// A worker process with the settings `cfg` (see [`WorkerCfg`](worker::WorkerCfg): `store`, `log`, `tag`,
/// `leaseMs`, `baseMs`, `jitterMs`, `loops`, and optionally `calls` and `sigterm`).
pub(crate) fn spawn_worker_with(cfg: Value) -> Child {
    Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--ignored",
            "--exact",
            &worker_test_name(),
            "--test-threads=1",
            "--nocapture",
        ])
        .env(WORKER_ENV, cfg.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("worker process")
}

/// Torn records are the harness's, not the store's: said, and left out of the check.
fn report_torn(logged: &started_log::Started) {
    for (file, tail) in &logged.torn {
        eprintln!(
            "{}: last record cut off by the kill ({tail:?}); its occurrence is not checked",
            file.display()
        );
    }
}

pub(crate) fn kill(mut child: Child) {
    // SIGKILL on Unix: no destructor, no lease release, no flush.
    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_workers_leave_a_consistent_store() {
    if worker_cfg().is_some() {
        return;
    }
    seed(Timestamp::now().0 as u64);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("crash.db");
    let url = format!("sqlite://{}", db.display());
    let logs = dir.path().join("started");
    std::fs::create_dir(&logs).unwrap();
    let tag = "crash-sqlite";
    let lease = 400;
    // Migrate once before the workers race for it.
    let store = vnfm_store_sql::open(&url).await.unwrap();
    let started = Instant::now();
    let mut lifetimes = 0;
    loop {
        let log = started_log::lifetime_file(&logs, lifetimes);
        let child = spawn_worker(&url, &log, tag, lease, 1, 4);
        tokio::time::sleep(Duration::from_millis(150 + below(450))).await;
        kill(child);
        lifetimes += 1;
        let n = all_op_occs(&store).await.len();
        if (n >= 200 && lifetimes >= 10) || started.elapsed() > Duration::from_secs(40) {
            eprintln!(
                "{lifetimes} worker lifetimes, {n} operation occurrences, {:?}",
                started.elapsed()
            );
            assert!(n >= 200, "only {n} occurrences in {lifetimes} lifetimes");
            break;
        }
    }
    // A fresh runner: the last worker's leases expire, then recovery takes over.
    tokio::time::sleep(Duration::from_millis(lease + 100)).await;
    let lcm = parent_lcm(
        store.clone(),
        Arc::new(MemoryInfraDriver::new()),
        Duration::from_millis(500),
    );
    let report = lcm.recover().await.unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    eprintln!(
        "recovery: {} resumed, {} failed",
        report.resumed.len(),
        report.failed.len()
    );
    let logged = started_log::read(&logs);
    report_torn(&logged);
    assert!(
        logged.complete.len() >= 100,
        "only {} logged",
        logged.complete.len()
    );
    settle_and_check(&lcm, &store, &report.resumed, &logged.complete, tag).await;
    // Recovery really had work: steps interrupted by a kill were failed (hooks left to run) by
    // the worker lifetimes that followed, or by this runner.
    let mut interrupted = 0;
    for o in all_op_occs(&store).await {
        for e in store.journal(&o.id).await.unwrap() {
            if e.detail["interrupted"] == true {
                interrupted += 1;
            }
        }
    }
    eprintln!("{interrupted} interrupted steps failed by recovery");
    assert!(
        interrupted + report.resumed.len() > 0,
        "no kill landed inside an operation"
    );
    // A second sweep finds nothing.
    let again = lcm.recover().await.unwrap();
    assert!(again.resumed.is_empty() && again.failed.is_empty());
}

#[vnfm_test_env::needs(postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_runners_on_postgres_one_takes_over() {
    if worker_cfg().is_some() {
        return;
    }
    let url = vnfm_test_env::var("VNFM_TEST_POSTGRES_URL");
    seed(Timestamp::now().0 as u64);
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("started");
    std::fs::create_dir(&logs).unwrap();
    let tag = format!("crash-pg-{}", Timestamp::now().0);
    let lease = 1000;
    let store = vnfm_store_sql::open(&url).await.unwrap();
    let infra_b = Arc::new(MemoryInfraDriver::new());
    let b = parent_lcm(store.clone(), infra_b.clone(), Duration::from_millis(lease));
    // Runner A: slow infrastructure, so the kill lands inside steps.
    let a = spawn_worker(
        &url,
        &started_log::lifetime_file(&logs, 0),
        &tag,
        lease,
        150,
        100,
    );
    let until = Instant::now() + Duration::from_millis(2500);
    let mut claimed_early = Vec::new();
    while Instant::now() < until {
        let r = b.recover().await.unwrap();
        claimed_early.extend(r.resumed.into_iter().chain(r.failed));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    kill(a);
    let ours = instances_named(&b, &tag).await;
    assert!(!ours.is_empty(), "the worker created no instance");
    // While A lived and renewed its leases, B took none of its occurrences and ran nothing.
    for id in &claimed_early {
        let occ = b.get_op_occ(id).await.unwrap();
        assert!(
            !ours.contains(&occ.vnf_instance_id),
            "B claimed {id} from a live runner"
        );
    }
    assert!(
        infra_b
            .calls()
            .iter()
            .all(|c| !ours.contains(&c.instance_id))
    );
    let running_at_kill: Vec<VnfLcmOpOcc> = all_op_occs(&store)
        .await
        .into_iter()
        .filter(|o| ours.contains(&o.vnf_instance_id) && running(o.operation_state))
        .collect();
    tokio::time::sleep(Duration::from_millis(lease + 200)).await;
    let report = b.recover().await.unwrap();
    let taken: HashSet<_> = report
        .resumed
        .iter()
        .chain(&report.failed)
        .cloned()
        .collect();
    for o in &running_at_kill {
        assert!(taken.contains(&o.id), "{} was not taken over", o.id);
    }
    eprintln!(
        "{} running at the kill; B resumed {} and failed {}",
        running_at_kill.len(),
        report.resumed.len(),
        report.failed.len()
    );
    // B's driver ran only what B took over.
    for c in infra_b.calls() {
        if ours.contains(&c.instance_id) {
            assert!(
                taken.contains(&c.op_occ_id),
                "B ran {} it never claimed",
                c.op_occ_id
            );
        }
    }
    let logged = started_log::read(&logs);
    report_torn(&logged);
    settle_and_check(&b, &store, &report.resumed, &logged.complete, &tag).await;
}
