//! Replicas on one PostgreSQL database, with the default lease settings: how soon a live
//! runner takes over the running occurrences of another that was killed (SIGKILL), stopped
//! (SIGSTOP) or shut down (SIGTERM), and that a stopped runner that wakes up runs no step of
//! what was taken over.
//!
//! Runner A is a worker process of [`crate::crash`] (slow infrastructure steps, so faults
//! land inside operations; its infrastructure calls logged with their start times); runner B
//! runs in this process with [`LcmConfig::default`] and the sweep of `vnfm serve` (30 s).
//! Before leases of 6 s renewed every 2 s and the 1 s poll for expired ones, B took a killed
//! runner's work over after 30 s of lease plus up to 30 s until its next sweep.

use crate::crash::{
    all_op_occs, catalog, check_journal, instances_named, kill, running, spawn_worker_with,
    started_log,
};

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::Child;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use vnfm_driver_api::memory::{MemoryInfraDriver, RecordingMgmtDriver};
use vnfm_lcm::testing::NoSubscribers;
use vnfm_lcm::{InlineVimDirectory, Lcm, LcmConfig};
use vnfm_store::{Store, Timestamp};
use vnfm_types::{VnfInstanceId, VnfLcmOpOcc, VnfLcmOpOccId};

/// How long the tests allow for a takeover after a kill or a stop. The design gives about
/// 7 s (a 6 s lease, expiry looked for every second; measured 6.5 s on a quiet machine, the
/// 10 s target); the bound leaves room for a loaded CI machine (Tacker's suite runs beside
/// the tests) and still fails the former design's 65-77 s.
const LOADED_TAKEOVER_BOUND: Duration = Duration::from_secs(30);

/// How long the tests allow for a released occurrence to be taken over: about 1 s by design
/// (the 2 s target); the former design waited for the next 30 s sweep.
const LOADED_HANDOVER_BOUND: Duration = Duration::from_secs(10);

/// Runner B: the defaults, sweeping as `vnfm serve` does.
fn runner_b(store: Arc<dyn Store>) -> Lcm {
    let lcm = Lcm::builder(
        store,
        Arc::new(InlineVimDirectory),
        Arc::new(NoSubscribers),
        Arc::new(catalog()),
    )
    .infra_driver(Arc::new(MemoryInfraDriver::new()))
    .mgmt_driver(Arc::new(RecordingMgmtDriver::new()))
    .config(LcmConfig::default())
    .build();
    lcm.spawn_recovery(Duration::from_secs(30));
    lcm
}

struct Replicas {
    _dir: tempfile::TempDir,
    store: Arc<dyn Store>,
    b: Lcm,
    a: Option<Child>,
    tag: String,
    calls: std::path::PathBuf,
}

/// Starts A (with the default lease) and B, and lets A run operations for 2.5 s.
async fn replicas(sigterm: bool) -> Replicas {
    let url = vnfm_test_env::var("VNFM_TEST_POSTGRES_URL");
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("started");
    std::fs::create_dir(&logs).unwrap();
    let calls = dir.path().join("calls.log");
    let tag = format!("takeover-{}", Timestamp::now().0);
    let store = vnfm_store_sql::open(&url).await.unwrap();
    let b = runner_b(store.clone());
    let a = spawn_worker_with(json!({
        "store": url, "log": started_log::lifetime_file(&logs, 0).display().to_string(),
        "tag": tag, "leaseMs": 0, "baseMs": 300, "jitterMs": 200, "loops": 4,
        "calls": calls.display().to_string(), "sigterm": sigterm,
    }));
    tokio::time::sleep(Duration::from_millis(2500)).await;
    Replicas {
        _dir: dir,
        store,
        b,
        a: Some(a),
        tag,
        calls,
    }
}

impl Replicas {
    fn a(&self) -> &Child {
        self.a.as_ref().expect("runner A")
    }

    fn kill_a(&mut self) {
        if let Some(a) = self.a.take() {
            kill(a);
        }
    }

    /// A's instances.
    async fn instances(&self) -> HashSet<VnfInstanceId> {
        instances_named(&self.b, &self.tag).await
    }

    /// The occurrences of A's instances running now.
    async fn running(&self) -> Vec<VnfLcmOpOcc> {
        let ours = self.instances().await;
        assert!(!ours.is_empty(), "the worker created no instance");
        all_op_occs(&self.store)
            .await
            .into_iter()
            .filter(|o| ours.contains(&o.vnf_instance_id) && running(o.operation_state))
            .collect()
    }

    /// How long after `since` every occurrence of `held` was at rest or leased by B, polling
    /// every 50 ms for at most `within`; `None` if some never were.
    async fn taken_over(
        &self,
        held: &[VnfLcmOpOcc],
        since: Instant,
        within: Duration,
    ) -> Option<Duration> {
        let mut left: Vec<VnfLcmOpOccId> = held.iter().map(|o| o.id.clone()).collect();
        while since.elapsed() < within {
            let mut still = Vec::new();
            for id in left {
                let (occ, _) = self.store.get_op_occ(&id).await.unwrap().unwrap();
                let lease = self.store.lease(&id).await.unwrap();
                let b_holds = lease.is_some_and(|l| l.owner == self.b.runner_id());
                if running(occ.operation_state) && !b_holds {
                    still.push(id);
                }
            }
            if still.is_empty() {
                return Some(since.elapsed());
            }
            left = still;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        None
    }

    /// Waits for every occurrence of `held` to come to rest and checks its journal (no step
    /// completed twice, the state agrees with the steps).
    async fn settle(&self, held: &[VnfLcmOpOcc]) {
        for o in held {
            let occ = self
                .b
                .wait(&o.id, Duration::from_secs(30))
                .await
                .expect("a taken-over occurrence comes to rest");
            check_journal(&self.store, &occ).await;
        }
    }
}

/// A's infrastructure calls: occurrence -> start times (ms since the epoch).
fn calls(path: &Path) -> HashMap<String, Vec<i64>> {
    let mut out: HashMap<String, Vec<i64>> = HashMap::new();
    for line in std::fs::read_to_string(path).unwrap_or_default().lines() {
        if let Some((id, at)) = line.split_once(' ')
            && let Ok(at) = at.parse()
        {
            out.entry(id.to_owned()).or_default().push(at);
        }
    }
    out
}

fn signal(child: &Child, sig: &str) {
    let status = std::process::Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .expect("kill(1)");
    assert!(status.success(), "kill {sig} {}", child.id());
}

/// A killed runner's running occurrences are resumed by another within 10 s (65.5 s before).
#[vnfm_test_env::needs(postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_runners_occurrences_are_taken_over_in_seconds() {
    let mut r = replicas(false).await;
    let killed = Instant::now();
    r.kill_a();
    let held = r.running().await;
    assert!(!held.is_empty(), "nothing was running at the kill");
    let took = r
        .taken_over(&held, killed, LOADED_TAKEOVER_BOUND)
        .await
        .expect("every running occurrence taken over within the bound of the kill");
    eprintln!(
        "{} running occurrences taken over {took:?} after the kill",
        held.len()
    );
    r.settle(&held).await;
}

/// A stopped runner's occurrences are taken over within 10 s (77.4 s before), and once it
/// wakes up it starts no infrastructure step of any of them while the other runner has it:
/// it confirms its lease before each step, and the step it was in when stopped is cancelled
/// and its outcome refused. (Once B has brought one to rest, A's worker may retry or roll
/// it back as an operator would: those calls are its own.)
#[vnfm_test_env::needs(postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_runner_is_taken_over_in_seconds_and_runs_no_step_after_waking() {
    let mut r = replicas(false).await;
    signal(r.a(), "-STOP");
    let stopped = Instant::now();
    // A call logged after this was started after the stop took effect.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let fence = Timestamp::now().0;
    let held = r.running().await;
    assert!(!held.is_empty(), "nothing was running at the stop");
    let took = r.taken_over(&held, stopped, LOADED_TAKEOVER_BOUND).await;
    // When B has brought each to rest (watched from now on, while A is still stopped).
    let mut at_rest = tokio::task::JoinSet::new();
    for o in &held {
        let (b, id) = (r.b.clone(), o.id.clone());
        at_rest.spawn(async move {
            let occ = b.wait(&id, Duration::from_secs(30)).await;
            (id, occ.is_ok().then(|| Timestamp::now().0))
        });
    }
    signal(r.a(), "-CONT");
    let mut rested = HashMap::new();
    while let Some(done) = at_rest.join_next().await {
        let (id, at) = done.unwrap();
        rested.insert(id, at);
    }
    r.kill_a();
    let took = took.expect("every running occurrence taken over within the bound of the stop");
    eprintln!(
        "{} running occurrences taken over {took:?} after the stop",
        held.len()
    );
    let calls = calls(&r.calls);
    for o in &held {
        let rest = rested[&o.id].expect("a taken-over occurrence comes to rest");
        let late: Vec<&i64> = calls
            .get(o.id.as_str())
            .map(|at| at.iter().filter(|t| **t > fence && **t < rest).collect())
            .unwrap_or_default();
        assert!(
            late.is_empty(),
            "the woken runner started {} infrastructure call(s) of {} while the other runner had it",
            late.len(),
            o.id
        );
    }
    r.settle(&held).await;
}

/// A runner sent SIGTERM stops at its next step boundary and releases its leases: another
/// one holds every occurrence it ran within 2 s of the release (the sweep's 30 s before).
#[vnfm_test_env::needs(postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminated_runner_hands_its_occurrences_over_at_once() {
    let mut r = replicas(true).await;
    let held = r.running().await;
    assert!(!held.is_empty(), "nothing was running at SIGTERM");
    signal(r.a(), "-TERM");
    let termed = Instant::now();
    let exited = r.a.as_mut().map(|a| {
        let end = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Some(status)) = a.try_wait() {
                return Some(status);
            }
            if Instant::now() > end {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    let released = termed.elapsed();
    let exited = exited.flatten();
    assert!(
        exited.is_some_and(|s| s.success()),
        "A did not shut down cleanly: {exited:?}"
    );
    r.a = None;
    // A releases each lease at the step boundary it stops at, then exits: from its exit,
    // B holds every one within 2 s.
    let after_exit = Instant::now();
    let took = r.taken_over(&held, after_exit, LOADED_HANDOVER_BOUND).await;
    r.kill_a();
    let took = took.expect("every released occurrence taken over within the bound");
    eprintln!(
        "{} running occurrences: A stopped {released:?} after SIGTERM, B held them {took:?} later",
        held.len()
    );
    r.settle(&held).await;
}
