//! Group commit on SQLite: concurrent writes share a commit, yet each stands alone.
//!
//! - [`a_failing_write_in_a_batch_affects_no_other`]: many concurrent writers, some of whose
//!   writes are refused; every accepted write is stored whole, every refused one left nothing.
//! - [`answered_writes_survive_sigkill`]: the test binary re-executes itself as a worker that
//!   writes concurrently and prints each write once it is answered; the parent SIGKILLs it
//!   mid-stream, reopens the file and finds every answered write, each whole (its instance and
//!   the notification written with it, or neither), and an intact database.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use common::instance;
use serde_json::json;
use vnfm_store::{Conflict, NewOutboxRow, Store, StoreError, Timestamp};
use vnfm_store_sql::{Durability, SqliteOptions, SqliteStore};
use vnfm_types::{SubscriptionId, VnfInstanceId};

const WORKER_ENV: &str = "VNFM_GROUP_COMMIT_WORKER";

/// The notification written with instance `id`.
fn notification(id: &str) -> NewOutboxRow {
    NewOutboxRow {
        subscription_id: SubscriptionId::new("sub"),
        callback_uri: "http://127.0.0.1:9/cb".into(),
        payload: json!({"vnfInstanceId": id}),
        not_before: Timestamp(0),
        ordering_key: id.into(),
    }
}

/// The instance ids among the pending outbox rows.
async fn notified(store: &dyn Store) -> Vec<String> {
    let mut ids = Vec::new();
    let mut after = None;
    loop {
        let rows = store.outbox_pending_rows(after, 1000).await.unwrap();
        let Some(last) = rows.last() else { break };
        after = Some(last.id);
        ids.extend(
            rows.iter()
                .map(|r| r.payload["vnfInstanceId"].as_str().unwrap().to_owned()),
        );
    }
    ids.sort();
    ids
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
async fn group_commit_worker() {
    let Ok(path) = std::env::var(WORKER_ENV) else {
        return;
    };
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).await.unwrap());
    // The process id keeps the ids of successive workers on one file apart.
    let pid = std::process::id();
    let tasks = (0..16).map(|t| {
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
    for t in tasks {
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
                "--exact",
                "group_commit_worker",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(WORKER_ENV, &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            // Only whole lines: a line the kill cut short names no write.
            let mut reader = BufReader::new(stdout);
            let mut ids = Vec::new();
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap_or(0) > 0 {
                if let Some(id) = line.strip_suffix('\n')
                    && id.starts_with('w')
                {
                    ids.push(id.to_owned());
                }
                line.clear();
            }
            ids
        });
        // Kill at a different point each round, while writes are in flight.
        std::thread::sleep(Duration::from_millis(700 + 400 * round));
        child.kill().unwrap();
        child.wait().unwrap();
        let answered = reader.join().unwrap();
        assert!(
            !answered.is_empty(),
            "round {round}: the worker wrote nothing"
        );

        let store = SqliteStore::open(&path).await.unwrap();
        for id in &answered {
            assert!(
                store
                    .get_instance(&VnfInstanceId::new(id))
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
        let check: String = rusqlite::Connection::open(&path)
            .unwrap()
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok");
        store.close().await;
    }
}
