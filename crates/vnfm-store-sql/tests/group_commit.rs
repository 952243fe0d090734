//! Group commit on SQLite: concurrent writes share a commit, yet each stands alone.
//!
//! - [`a_failing_write_in_a_batch_affects_no_other`]: many concurrent writers, some of whose
//!   writes are refused; every accepted write is stored whole, every refused one left nothing.
//! - [`answered_writes_survive_sigkill`]: the test binary re-executes itself as a worker that
//!   writes concurrently and prints each write once it is answered: new instances (each with a
//!   notification), and lifecycle operations started and stepped on instances of their own
//!   (each step moving the occurrence, appending its journal row, updating the instance and
//!   enqueuing a notification). The parent SIGKILLs it mid-stream, reopens the file and finds
//!   every answered write, each whole (an instance and its notification, or neither; a step's
//!   four writes, or none), and an intact database.

use crate::common;
use vnfm_store::prelude::*;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use common::{in_state, instance, op_occ};
use serde_json::json;
use vnfm_store::{
    Conflict, JournalStep, Lease, NewOutboxRow, OpOccQuery, StepOutcome, StepRecord, Store,
    StoreError, Timestamp, Version,
};
use vnfm_store_sql::{Durability, SqliteOptions, SqliteStore};
use vnfm_types::{LcmOperationStateType as S, SubscriptionId, VnfInstanceId, VnfLcmOpOccId};

const WORKER_ENV: &str = "VNFM_GROUP_COMMIT_WORKER";

/// The notification written with instance `id`.
fn notification(id: &str) -> NewOutboxRow {
    NewOutboxRow {
        subscription_id: SubscriptionId::new("sub"),
        callback_uri: "http://127.0.0.1:9/cb".into(),
        payload: json!({"vnfInstanceId": id}),
        not_before: Timestamp(0),
        ordering_key: id.into(),
        traceparent: None,
    }
}

/// The values of member `key` in the payloads of the pending outbox rows that have it.
async fn notified_by(store: &dyn Store, key: &str) -> Vec<String> {
    let mut ids = Vec::new();
    let mut after = None;
    loop {
        let rows = store.outbox_pending_rows(after, 1000).await.unwrap();
        let Some(last) = rows.last() else { break };
        after = Some(last.id);
        ids.extend(
            rows.iter()
                .filter_map(|r| r.payload[key].as_str().map(str::to_owned)),
        );
    }
    ids.sort();
    ids
}

/// The instance ids among the pending outbox rows.
async fn notified(store: &dyn Store) -> Vec<String> {
    notified_by(store, "vnfInstanceId").await
}

/// The step `n` (1: to `PROCESSING`, 2: to `COMPLETED`) of occurrence `occ` of instance
/// `inst` at `version`: its journal row, the instance's new document, a notification
/// (payload `{"step": "<occ>/<n>"}`) and a data entry.
fn lifecycle_step(
    occ: &vnfm_types::VnfLcmOpOcc,
    n: u8,
    version: Version,
    inst: &vnfm_types::VnfInstance,
    inst_version: Version,
) -> StepRecord {
    let (from, to) = if n == 1 {
        (S::Starting, S::Processing)
    } else {
        (S::Processing, S::Completed)
    };
    let mut updated = inst.clone();
    updated.vnf_instance_description = Some(format!("{}/{n}", occ.id));
    StepRecord {
        occ: in_state(occ, to),
        expected_state: from,
        expected_version: version,
        owner: "worker".into(),
        journal: Some(JournalStep::new(
            format!("step-{n}"),
            StepOutcome::Completed,
            Timestamp::now(),
            &json!({"n": n}),
        )),
        instance: Some((updated, inst_version)),
        outbox: vec![NewOutboxRow {
            subscription_id: SubscriptionId::new("sub"),
            callback_uri: "http://127.0.0.1:9/cb".into(),
            payload: json!({"step": format!("{}/{n}", occ.id)}),
            not_before: Timestamp(0),
            ordering_key: occ.id.to_string(),
            traceparent: None,
        }],
        data: vec![(format!("step-{n}"), json!(n))],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failing_write_in_a_batch_affects_no_other() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::open_with(
            dir.path().join("g.db"),
            SqliteOptions {
                durability: Durability::Full,
                ..SqliteOptions::default()
            },
        )
        .await
        .unwrap(),
    );
    // Taken ids: their second creation is refused whichever batch it lands in.
    for i in (0..200).step_by(10) {
        store
            .create_instance(&instance(&format!("i-{i:03}"), "vnfd", None, &[]), &[])
            .await
            .unwrap();
    }
    let writers = (0..200).map(|i| {
        let store = store.clone();
        tokio::spawn(async move {
            let id = format!("i-{i:03}");
            let result = store
                .create_instance(&instance(&id, "vnfd", None, &[]), &[notification(&id)])
                .await;
            (id, result)
        })
    });
    let mut accepted = Vec::new();
    for w in writers {
        let (id, result) = w.await.unwrap();
        match result {
            Ok(_) => accepted.push(id),
            Err(StoreError::Conflict(Conflict::AlreadyExists { .. })) => {
                assert!(id.ends_with('0'), "{id} was refused but was free");
            }
            Err(e) => panic!("{id}: {e}"),
        }
    }
    assert_eq!(accepted.len(), 180);
    // A refused write left no notification behind, an accepted one left exactly one.
    assert_eq!(notified(store.as_ref()).await, accepted);
    for id in &accepted {
        assert!(
            store
                .get_instance(&VnfInstanceId::new(id))
                .await
                .unwrap()
                .is_some()
        );
    }
}

/// The worker: writes instances (each with its notification) from several tasks until
/// killed, printing each id once its write is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the worker process of answered_writes_survive_sigkill, which runs it with --ignored"]
async fn group_commit_worker() {
    let path = std::env::var(WORKER_ENV)
        .unwrap_or_else(|_| panic!("{WORKER_ENV} is set by answered_writes_survive_sigkill"));
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).await.unwrap());
    // The process id keeps the ids of successive workers on one file apart.
    let pid = std::process::id();
    let creators = (0..16).map(|t| {
        let store = store.clone();
        tokio::spawn(async move {
            for n in 0.. {
                let id = format!("w{pid}-{t:02}-{n:06}");
                store
                    .create_instance(&instance(&id, "vnfd", None, &[]), &[notification(&id)])
                    .await
                    .unwrap();
                // One write(2) per line: a kill cuts at most the last line.
                println!("{id}");
            }
        })
    });
    // Operations, one after the other on each of 8 instances: a start, then two steps.
    let operators = (0..8).map(|t| {
        let store = store.clone();
        tokio::spawn(async move {
            let inst = instance(&format!("L{pid}-{t}"), "vnfd", None, &[]);
            let mut inst_version = store.create_instance(&inst, &[]).await.unwrap();
            for n in 0.. {
                let occ = op_occ(&format!("L{pid}-{t}-{n:06}"), inst.id.as_str(), S::Starting);
                let lease = Lease::new("worker", Timestamp::now().plus(Duration::from_secs(3600)));
                let at_start = store.start_operation(&occ, &lease).await.unwrap();
                assert_eq!(at_start, inst_version);
                let mut version = Version::FIRST;
                for step in 1..=2 {
                    let written = store
                        .record_step(&lifecycle_step(&occ, step, version, &inst, inst_version))
                        .await
                        .unwrap();
                    version = written.op_occ_version;
                    inst_version = written.instance_version.unwrap();
                    println!("step {}/{step}", occ.id);
                }
            }
        })
    });
    let creators: Vec<_> = creators.collect();
    let operators: Vec<_> = operators.collect();
    for t in creators.into_iter().chain(operators) {
        t.await.unwrap();
    }
}

#[tokio::test]
async fn answered_writes_survive_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("killed.db");
    for round in 0..3 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                &worker_test_name(),
                "--nocapture",
                "--test-threads=1",
            ])
            .env(WORKER_ENV, &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (seen, first_writes) = std::sync::mpsc::channel::<()>();
        let reader = std::thread::spawn(move || {
            // Only whole lines: a line the kill cut short names no write.
            let mut reader = BufReader::new(stdout);
            let mut lines: Vec<String> = Vec::new();
            let mut line = String::new();
            let mut both_seen = false;
            while reader.read_line(&mut line).unwrap_or(0) > 0 {
                if let Some(whole) = line.strip_suffix('\n') {
                    lines.push(whole.to_owned());
                }
                line.clear();
                if !both_seen
                    && lines.iter().any(|l| l.starts_with('w'))
                    && lines.iter().any(|l| l.starts_with("step "))
                {
                    both_seen = true;
                    let _ = seen.send(());
                }
            }
            lines
        });
        // Once both kinds of write are under way (however slowly the worker started), kill
        // at a different point each round, while writes are in flight.
        let started = first_writes.recv_timeout(Duration::from_secs(120));
        std::thread::sleep(Duration::from_millis(200 + 300 * round));
        child.kill().unwrap();
        child.wait().unwrap();
        let lines = reader.join().unwrap();
        assert!(started.is_ok(), "round {round}: the worker wrote nothing");
        let answered: Vec<&String> = lines.iter().filter(|l| l.starts_with('w')).collect();
        let steps: Vec<&str> = lines
            .iter()
            .filter_map(|l| l.strip_prefix("step "))
            .collect();

        let store = SqliteStore::open(&path).await.unwrap();
        for id in &answered {
            assert!(
                store
                    .get_instance(&VnfInstanceId::new(id.as_str()))
                    .await
                    .unwrap()
                    .is_some(),
                "round {round}: {id} was answered but is not stored"
            );
        }
        // Nothing half-written: an instance and its notification, or neither.
        let mut stored: Vec<String> = Vec::new();
        let mut stream = store.stream_instances(&Default::default());
        while let Some(i) = futures_util::StreamExt::next(&mut stream).await {
            let i = i.unwrap();
            if i.id.as_str().starts_with('w') {
                stored.push(i.id.0);
            }
        }
        stored.sort();
        assert_eq!(notified(&store).await, stored, "round {round}");
        check_steps(&store, &steps, round).await;
        let check: String = rusqlite::Connection::open(&path)
            .unwrap()
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok");
        store.close().await;
    }
}

/// Every answered step is stored, and every stored step whole: an occurrence at version
/// `1 + k` has its `k` journal rows, data entries and notifications, and its instance went
/// through the steps of all its occurrences.
async fn check_steps(store: &SqliteStore, answered: &[&str], round: u64) {
    for step in answered {
        let (occ, n) = step.rsplit_once('/').unwrap();
        let n: i64 = n.parse().unwrap();
        let (_, version) = store
            .get_op_occ(&VnfLcmOpOccId::new(occ))
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("round {round}: {occ} was answered but is not stored"));
        assert!(
            version.0 > n,
            "round {round}: step {step} was answered but {occ} is at {version:?}"
        );
    }
    let notified = notified_by(store, "step").await;
    let mut instances: Vec<String> = answered
        .iter()
        .map(|s| s.rsplit_once('-').unwrap().0.to_owned())
        .collect();
    instances.sort();
    instances.dedup();
    for inst in instances {
        let id = VnfInstanceId::new(&inst);
        let mut steps_done = 0;
        let mut query = OpOccQuery {
            vnf_instance_id: Some(id.clone()),
            limit: Some(1000),
            ..Default::default()
        };
        loop {
            let page = store.list_op_occs(&query).await.unwrap();
            for occ in &page.items {
                let (_, version) = store.get_op_occ(&occ.id).await.unwrap().unwrap();
                let steps = version.0 - 1;
                let journal = store.journal(&occ.id).await.unwrap();
                assert_eq!(
                    journal.len() as i64,
                    steps,
                    "round {round}: journal of {}",
                    occ.id
                );
                for n in 1..=2 {
                    let here = notified.contains(&format!("{}/{n}", occ.id));
                    let data = store
                        .get_op_occ_data(&occ.id, &format!("step-{n}"))
                        .await
                        .unwrap()
                        .is_some();
                    assert_eq!(
                        here,
                        n <= steps,
                        "round {round}: notification {}/{n}",
                        occ.id
                    );
                    assert_eq!(data, n <= steps, "round {round}: data {}/{n}", occ.id);
                }
                steps_done += steps;
            }
            match page.next {
                Some(next) => query.after = Some(next),
                None => break,
            }
        }
        let (_, inst_version) = store.get_instance(&id).await.unwrap().unwrap();
        assert_eq!(
            inst_version.0,
            1 + steps_done,
            "round {round}: {inst} went through {steps_done} steps"
        );
    }
}

/// `group_commit_worker` as the test harness names it: its module path without the program's
/// name.
fn worker_test_name() -> String {
    match module_path!().split_once("::") {
        Some((_, module)) => format!("{module}::group_commit_worker"),
        None => "group_commit_worker".to_owned(),
    }
}
