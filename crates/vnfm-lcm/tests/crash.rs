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
//! The file stays whole: the worker and the checks are two halves of one protocol (the
//! worker's configuration, the records it logs), which change together.

use crate::runner_support;

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use runner_support::*;
use serde_json::{Value, json};
use vnfm_driver_api::memory::{MemArtifacts, MemoryInfraDriver, RecordingMgmtDriver};
use vnfm_driver_api::{DriverError, InfraDriver, InfraOperation, InfraOutcome, InfraRequest};
use vnfm_lcm::testing::NoSubscribers;
use vnfm_lcm::{InlineVimDirectory, Lcm, LcmConfig, LcmError, MemoryCatalog};
use vnfm_store::{InstanceQuery, NameFilter, OpOccQuery, StepOutcome, Store, Timestamp};
use vnfm_types::{
    InstantiationState, LcmOperationStateType as State, VnfInstance, VnfInstanceId, VnfLcmOpOcc,
};

const WORKER_ENV: &str = "VNFM_CRASH_WORKER";

// ----- randomness -----

static SEED: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);

fn seed(s: u64) {
    SEED.store(s | 1, Ordering::SeqCst);
}

/// xorshift64*: good enough to pick operations and kill points.
fn rand() -> u64 {
    let mut x = SEED.load(Ordering::Relaxed);
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    SEED.store(x, Ordering::Relaxed);
    x.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

fn below(n: u64) -> u64 {
    if n == 0 { 0 } else { rand() % n }
}

// ----- the worker -----

/// The memory driver behind a random delay of `base..=base+jitter` ms per call; with a call
/// log, each call's occurrence and start time (ms since the epoch) are appended to it first,
/// one `write(2)` each.
struct Jittery {
    inner: MemoryInfraDriver,
    base_ms: u64,
    jitter_ms: u64,
    calls: Option<std::sync::Mutex<std::fs::File>>,
}

impl Jittery {
    async fn pause(&self, req: &InfraRequest) {
        if let Some(log) = &self.calls {
            use std::io::Write;
            let line = format!("{} {}\n", req.op_occ_id, Timestamp::now().0);
            let _ = log
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .write_all(line.as_bytes());
        }
        let ms = self.base_ms + below(self.jitter_ms + 1);
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}

macro_rules! jittery_impl {
    ($($m:ident),*) => {
        #[async_trait]
        impl InfraDriver for Jittery {
            fn name(&self) -> &str {
                "jittery-memory"
            }

            fn vim_types(&self) -> &[&str] {
                self.inner.vim_types()
            }

            $(
                async fn $m(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
                    self.pause(req).await;
                    self.inner.$m(req).await
                }
            )*
        }
    };
}

jittery_impl!(
    instantiate,
    terminate,
    scale,
    scale_to_level,
    heal,
    operate,
    change_ext_conn,
    change_flavour,
    change_vnfpkg,
    rollback_instantiate,
    rollback_scale,
    rollback_change_ext_conn,
    rollback_change_vnfpkg
);

pub(crate) fn catalog() -> MemoryCatalog {
    let c = MemoryCatalog::new();
    let files = Arc::new(MemArtifacts::new().with("Scripts/mgmt.so", b"plugin".to_vec()));
    c.insert(hello_vnfd(), files.clone());
    c.insert(hooks_vnfd(), files);
    c
}

struct WorkerCfg {
    store: String,
    log: String,
    tag: String,
    lease_ms: u64,
    base_ms: u64,
    jitter_ms: u64,
    loops: usize,
    /// Where the infrastructure calls are logged (see [`Jittery`]).
    calls: Option<String>,
    /// Whether SIGTERM shuts the runner down (releasing its leases) before the worker exits.
    sigterm: bool,
}

fn worker_cfg() -> Option<WorkerCfg> {
    let v: Value = serde_json::from_str(&std::env::var(WORKER_ENV).ok()?).ok()?;
    Some(WorkerCfg {
        store: v["store"].as_str()?.to_string(),
        log: v["log"].as_str()?.to_string(),
        tag: v["tag"].as_str()?.to_string(),
        lease_ms: v["leaseMs"].as_u64()?,
        base_ms: v["baseMs"].as_u64()?,
        jitter_ms: v["jitterMs"].as_u64()?,
        loops: usize::try_from(v["loops"].as_u64()?).ok()?,
        calls: v["calls"].as_str().map(str::to_owned),
        sigterm: v["sigterm"].as_bool().unwrap_or(false),
    })
}

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

async fn worker_loop(
    lcm: Lcm,
    infra: Arc<Jittery>,
    log: Arc<std::sync::Mutex<std::fs::File>>,
    tag: String,
    k: usize,
    mut mine: Vec<VnfInstanceId>,
) {
    let vnfd = if k.is_multiple_of(2) {
        "hello-vnf"
    } else {
        "vnfd-hooks"
    };
    let flavour = "simple";
    loop {
        if mine.is_empty() {
            match lcm
                .create_vnf_identifier(req(
                    json!({"vnfdId": vnfd_id_of(vnfd), "vnfInstanceName": tag}),
                ))
                .await
            {
                Ok(i) => mine.push(i.id),
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            }
        }
        let id = mine[usize::try_from(below(mine.len() as u64)).unwrap_or(0)].clone();
        let Ok(instance) = lcm.get_instance(&id).await else {
            mine.retain(|x| *x != id);
            continue;
        };
        if below(10) == 0 {
            let op = match below(3) {
                0 => InfraOperation::Instantiate,
                1 => InfraOperation::Scale,
                _ => InfraOperation::Terminate,
            };
            infra
                .inner
                .fail_next(op, DriverError::transient("injected failure"));
        }
        let active = lcm.store().active_op_occ(&id).await.ok().flatten();
        let started: Result<VnfLcmOpOcc, LcmError> = match active {
            Some((occ, _)) if occ.operation_state == State::FailedTemp => match below(3) {
                0 => lcm.retry(&occ.id).await,
                1 => match lcm.rollback(&occ.id).await {
                    Err(_) => lcm.fail(&occ.id).await,
                    ok => ok,
                },
                _ => lcm.fail(&occ.id).await,
            },
            Some((occ, _)) => {
                // Held by a run of a dead lifetime: recovery takes it over.
                let _ = lcm.wait(&occ.id, Duration::from_secs(5)).await;
                continue;
            }
            None => next_operation(&lcm, &instance, flavour, &mut mine).await,
        };
        let Ok(occ) = started else {
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        };
        {
            let mut f = log.lock().unwrap_or_else(|e| e.into_inner());
            let _ = started_log::append(&mut *f, occ.id.as_ref());
        }
        let _ = lcm.wait(&occ.id, Duration::from_secs(10)).await;
    }
}

fn vnfd_id_of(name: &str) -> String {
    if name == "hello-vnf" {
        hello_vnfd().descriptor_id
    } else {
        name.to_string()
    }
}

async fn next_operation(
    lcm: &Lcm,
    instance: &VnfInstance,
    flavour: &str,
    mine: &mut Vec<VnfInstanceId>,
) -> Result<VnfLcmOpOcc, LcmError> {
    let id = &instance.id;
    if instance.instantiation_state == InstantiationState::NotInstantiated {
        if below(5) == 0 {
            lcm.delete_vnf_identifier(id).await?;
            mine.retain(|x| x != id);
            return Err(LcmError::conflict("deleted"));
        }
        return lcm
            .instantiate(
                id,
                req(json!({"flavourId": flavour, "vimConnectionInfo": memory_vims()})),
            )
            .await;
    }
    let aspect = instance
        .instantiated_vnf_info
        .as_ref()
        .and_then(|i| i.scale_status.as_ref())
        .and_then(|s| s.first())
        .map(|s| (s.aspect_id.clone(), s.scale_level));
    match (below(4), aspect) {
        (0, Some((a, l))) if l < 2 => {
            lcm.scale(id, req(json!({"type": "SCALE_OUT", "aspectId": a})))
                .await
        }
        (1, Some((a, l))) if l > 0 => {
            lcm.scale(id, req(json!({"type": "SCALE_IN", "aspectId": a})))
                .await
        }
        (2, _) => lcm.heal(id, req(json!({}))).await,
        _ => {
            lcm.terminate(id, req(json!({"terminationType": "FORCEFUL"})))
                .await
        }
    }
}

// ----- the log of started occurrences -----

/// The log of the occurrences a worker started: a directory with one file per worker
/// lifetime, one `<id>\n` record per started occurrence.
///
/// A record is handed to the kernel in one `write(2)` on a file opened for appending, so a
/// SIGKILL lands before or after it, and a later lifetime never appends to a file an earlier
/// one may have cut short. The one thing a kill can still leave (a write cut at a page
/// boundary) is a last record without its newline: [`read`] reports that as torn.
pub(crate) mod started_log {
    use std::io::Write;
    use std::path::{Path, PathBuf};

    /// The file of worker lifetime `n` in `dir`.
    pub fn lifetime_file(dir: &Path, n: usize) -> PathBuf {
        dir.join(format!("lifetime-{n:04}.log"))
    }

    /// Appends the record of `id` as one write.
    pub fn append(out: &mut impl Write, id: &str) -> std::io::Result<()> {
        // `writeln!` would issue the id and the newline as two writes.
        out.write_all(format!("{id}\n").as_bytes())
    }

    /// What the log holds.
    #[derive(Debug, Default, PartialEq)]
    pub struct Started {
        /// Ids of complete records, in order.
        pub complete: Vec<String>,
        /// Last records cut off by a kill: (file, the bytes that made it).
        pub torn: Vec<(PathBuf, String)>,
    }

    fn is_uuid(s: &str) -> bool {
        s.len() == 36
            && s.char_indices().all(|(i, c)| match i {
                8 | 13 | 18 | 23 => c == '-',
                _ => c.is_ascii_hexdigit(),
            })
    }

    /// Reads every lifetime's file in `dir`. A record that is not an id and is not the cut
    /// off tail of its file means the log itself is broken: that panics, naming the file.
    pub fn read(dir: &Path) -> Started {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
            .map(|e| e.expect("log entry").path())
            .collect();
        files.sort();
        let mut out = Started::default();
        for file in files {
            let text = std::fs::read_to_string(&file)
                .unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
            let mut records: Vec<&str> = text.split('\n').collect();
            // After the last newline: empty, or a record the kill cut off.
            let tail = records.pop().unwrap_or_default();
            for record in records {
                assert!(
                    is_uuid(record),
                    "{}: record {record:?} is not an operation occurrence id",
                    file.display()
                );
                out.complete.push(record.to_string());
            }
            if !tail.is_empty() {
                out.torn.push((file, tail.to_string()));
            }
        }
        out
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        const A: &str = "ba52057e-2861-47d8-85c5-0248c9dd09e2";
        const B: &str = "394ca1a1-4370-4394-b3a7-43ab91600c47";

        /// Counts the writes it is given.
        struct Writes(Vec<Vec<u8>>);

        impl Write for Writes {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0.push(buf.to_vec());
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }

        #[test]
        fn a_record_is_one_write() {
            let mut w = Writes(Vec::new());
            append(&mut w, A).unwrap();
            assert_eq!(w.0, vec![format!("{A}\n").into_bytes()]);
        }

        #[test]
        fn a_torn_last_record_is_reported_as_torn_not_as_an_id() {
            let dir = tempfile::tempdir().unwrap();
            // Lifetime 0 was killed inside its second record; lifetime 1 wrote whole records.
            std::fs::write(lifetime_file(dir.path(), 0), format!("{A}\n{}", &B[..20])).unwrap();
            std::fs::write(lifetime_file(dir.path(), 1), format!("{B}\n")).unwrap();
            let got = read(dir.path());
            assert_eq!(got.complete, vec![A.to_string(), B.to_string()]);
            assert_eq!(
                got.torn,
                vec![(lifetime_file(dir.path(), 0), B[..20].to_string())]
            );
        }

        #[test]
        #[should_panic(expected = "is not an operation occurrence id")]
        fn a_glued_record_inside_a_file_is_a_broken_log() {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(lifetime_file(dir.path(), 0), format!("{A}{B}\n")).unwrap();
            read(dir.path());
        }
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

/// A worker process with the settings `cfg` (see [`WorkerCfg`]: `store`, `log`, `tag`,
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

pub(crate) async fn all_op_occs(store: &Arc<dyn Store>) -> Vec<VnfLcmOpOcc> {
    let mut out = Vec::new();
    let mut after = None;
    loop {
        let page = store
            .list_op_occs(&OpOccQuery {
                after: after.clone(),
                limit: Some(1000),
                ..Default::default()
            })
            .await
            .expect("op-occs");
        out.extend(page.items);
        match page.next {
            Some(n) => after = Some(n),
            None => return out,
        }
    }
}

pub(crate) fn running(state: State) -> bool {
    matches!(
        state,
        State::Starting | State::Processing | State::RollingBack
    )
}

/// The journal of `occ` agrees with its state; returns the number of completed steps.
pub(crate) async fn check_journal(store: &Arc<dyn Store>, occ: &VnfLcmOpOcc) -> usize {
    let journal = store.journal(&occ.id).await.expect("journal");
    let mut plans: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut completed: HashSet<(String, u64)> = HashSet::new();
    let mut last_step_outcome = None;
    let mut steps = 0;
    for e in &journal {
        if let Some(phase) = e.step.strip_prefix("plan:") {
            let names: Vec<String> = e.detail["plan"]["steps"]
                .as_array()
                .expect("plan steps")
                .iter()
                .map(step_name)
                .collect();
            assert!(
                plans.insert(phase.to_string(), names).is_none(),
                "{}: two {phase} plans",
                occ.id
            );
            continue;
        }
        let phase = e.detail["phase"].as_str().expect("phase").to_string();
        let index = e.detail["index"].as_u64().expect("index");
        let names = plans
            .get(&phase)
            .unwrap_or_else(|| panic!("{}: step before its plan", occ.id));
        assert_eq!(
            names.get(index as usize),
            Some(&e.step),
            "{}: row names a step the plan does not have there",
            occ.id
        );
        if e.outcome == StepOutcome::Completed {
            assert!(
                completed.insert((phase.clone(), index)),
                "{}: {phase} step {index} completed twice",
                occ.id
            );
            // Steps complete in order.
            if index > 0 {
                assert!(
                    completed.contains(&(phase.clone(), index - 1)),
                    "{}: out of order",
                    occ.id
                );
            }
            steps += 1;
        }
        last_step_outcome = Some(e.outcome);
    }
    let all_done = |phase: &str| {
        plans.get(phase).is_some_and(|p| {
            (0..p.len() as u64).all(|i| completed.contains(&(phase.to_string(), i)))
        })
    };
    match occ.operation_state {
        State::Completed => assert!(all_done("forward"), "{}: COMPLETED with steps left", occ.id),
        State::RolledBack => assert!(
            steps == 0 || all_done("rollback"),
            "{}: ROLLED_BACK with rollback steps left",
            occ.id
        ),
        State::FailedTemp | State::Failed => {
            assert!(occ.error.is_some(), "{}: failed without an error", occ.id);
            assert_ne!(
                last_step_outcome,
                Some(StepOutcome::Completed),
                "{}: {:?} but its last step completed",
                occ.id,
                occ.operation_state
            );
        }
        other => panic!("{}: still {other:?}", occ.id),
    }
    steps
}

fn step_name(step: &Value) -> String {
    match step["step"].as_str() {
        Some("hook") => format!("hook:{}", step["operation"].as_str().unwrap_or("")),
        Some("infra") => {
            let kind = step["kind"].as_str().unwrap_or("");
            // camelCase kind -> snake_case method name.
            let mut name = String::new();
            for c in kind.chars() {
                if c.is_ascii_uppercase() {
                    name.push('_');
                    name.push(c.to_ascii_lowercase());
                } else {
                    name.push(c);
                }
            }
            format!("infra:{name}")
        }
        Some("applyModifications") => "info:apply_modifications".into(),
        Some("revertModifications") => "info:revert_modifications".into(),
        other => panic!("unknown step {other:?}"),
    }
}

/// A runner that recovers in the parent process.
pub(crate) fn parent_lcm(
    store: Arc<dyn Store>,
    infra: Arc<MemoryInfraDriver>,
    lease: Duration,
) -> Lcm {
    Lcm::builder(
        store,
        Arc::new(InlineVimDirectory),
        Arc::new(NoSubscribers),
        Arc::new(catalog()),
    )
    .infra_driver(infra)
    .mgmt_driver(Arc::new(RecordingMgmtDriver::new()))
    .config(LcmConfig::default().with_lease_ttl(lease))
    .build()
}

/// Waits for every resumed occurrence, then asserts the store is consistent.
async fn settle_and_check(
    lcm: &Lcm,
    store: &Arc<dyn Store>,
    resumed: &[vnfm_types::VnfLcmOpOccId],
    logged: &[String],
    tag: &str,
) {
    for id in resumed {
        let occ = lcm
            .wait(id, Duration::from_secs(20))
            .await
            .expect("resumed occurrence comes to rest");
        assert!(vnfm_lcm::runner::is_at_rest(occ.operation_state));
    }
    let now = Timestamp::now();
    let ours: HashSet<VnfInstanceId> = lcm
        .list_instances(&InstanceQuery {
            name: Some(NameFilter::Exact(tag.to_string())),
            limit: Some(1000),
            ..Default::default()
        })
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|i| i.id)
        .collect();
    let occs: Vec<VnfLcmOpOcc> = all_op_occs(store).await;
    let ids: HashSet<String> = occs.iter().map(|o| o.id.to_string()).collect();
    // No logged occurrence is lost.
    for id in logged {
        assert!(
            ids.contains(id),
            "logged occurrence {id} is missing from the store"
        );
    }
    let logged: HashSet<&String> = logged.iter().collect();
    let mine: Vec<&VnfLcmOpOcc> = occs
        .iter()
        .filter(|o| logged.contains(&o.id.to_string()) || ours.contains(&o.vnf_instance_id))
        .collect();
    // Nothing runs without a live lease (and after settling, nothing runs at all).
    for o in &mine {
        if running(o.operation_state) {
            let lease = store.lease(&o.id).await.unwrap();
            assert!(
                lease.is_some_and(|l| l.expires_at > now),
                "{} is {:?} without a live lease",
                o.id,
                o.operation_state
            );
            panic!(
                "{} is still {:?} after recovery settled",
                o.id, o.operation_state
            );
        }
    }
    // Journals agree with states.
    let mut steps = 0;
    for o in &mine {
        steps += check_journal(store, o).await;
    }
    assert!(steps > 0);
    // No instance is held by a final occurrence: one holder at most, and a free instance takes
    // a new operation.
    let mut by_instance: BTreeMap<VnfInstanceId, Vec<&VnfLcmOpOcc>> = BTreeMap::new();
    for o in &mine {
        by_instance
            .entry(o.vnf_instance_id.clone())
            .or_default()
            .push(o);
    }
    for id in &ours {
        let holders: Vec<_> = by_instance
            .get(id)
            .map(|v| v.iter().filter(|o| !o.operation_state.is_final()).collect())
            .unwrap_or_default();
        assert!(holders.len() <= 1, "{id} has {} holders", holders.len());
        let active = store.active_op_occ(id).await.unwrap();
        assert_eq!(
            active.as_ref().map(|(o, _)| o.id.clone()),
            holders.first().map(|o| o.id.clone())
        );
        if active.is_none() {
            let op = lcm
                .modify_info(id, req(json!({"vnfInstanceDescription": "checked"})))
                .await
                .unwrap_or_else(|e| panic!("{id} is free but refused an operation: {e}"));
            let done = lcm.wait(&op.id, Duration::from_secs(10)).await.unwrap();
            assert_eq!(done.operation_state, State::Completed);
        }
    }
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
    let ours: HashSet<VnfInstanceId> = b
        .list_instances(&InstanceQuery {
            name: Some(NameFilter::Exact(tag.clone())),
            limit: Some(1000),
            ..Default::default()
        })
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|i| i.id)
        .collect();
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
