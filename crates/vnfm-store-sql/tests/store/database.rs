//! The database itself: migrations, URLs, corrupt documents, settings, several stores on one SQLite file.

use super::*;
use vnfm_store::prelude::*;

store_tests!(
    migrations_apply_on_empty_and_refuse_newer_schema,
    settings_are_stored_replaced_and_removed,
);

async fn migrations_apply_on_empty_and_refuse_newer_schema(db: &TestDb) {
    assert_eq!(db.store.schema_version().await.unwrap(), 19);
    // Opening an up-to-date database again is a no-op.
    let again = db.reopen().await.unwrap();
    assert_eq!(again.schema_version().await.unwrap(), 19);
    drop(again);

    db.fake_future_migration(99).await;
    let err = match db.reopen().await {
        Ok(_) => panic!("a database from a newer build was opened"),
        Err(e) => e,
    };
    match &err {
        StoreError::SchemaTooNew { found, supported } => {
            assert_eq!((*found, *supported), (99, 19));
        }
        other => panic!("{other:?}"),
    }
    assert!(
        err.to_string().contains("newer than this build supports"),
        "{err}"
    );
}

#[tokio::test]
async fn open_accepts_the_documented_urls() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("via-url.db");
    let store = vnfm_store_sql::open(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    store
        .create_instance(&instance("u-1", "vnfd", None, &[]), &[])
        .await
        .unwrap();
    drop(store);
    assert!(path.exists());
    // The file persists across opens.
    let store = vnfm_store_sql::open(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    assert!(
        store
            .get_instance(&VnfInstanceId::new("u-1"))
            .await
            .unwrap()
            .is_some()
    );

    let mem = vnfm_store_sql::open("sqlite::memory:").await.unwrap();
    mem.create_instance(&instance("m-1", "vnfd", None, &[]), &[])
        .await
        .unwrap();
    // Reads see the writes of the private database.
    assert!(
        mem.get_instance(&VnfInstanceId::new("m-1"))
            .await
            .unwrap()
            .is_some()
    );
    let s: Vec<_> = mem
        .stream_instances(&InstanceQuery::default())
        .collect()
        .await;
    assert_eq!(s.len(), 1);

    let err = match vnfm_store_sql::open("mysql://root:hunter2@db/vnfm").await {
        Ok(_) => panic!("mysql accepted"),
        Err(e) => e,
    };
    let msg = err.to_string();
    assert!(matches!(err, StoreError::UnsupportedUrl(_)), "{err:?}");
    assert!(!msg.contains("hunter2"), "{msg}");
    assert!(msg.contains("mysql://root:***@db/vnfm"), "{msg}");
    assert!(matches!(
        vnfm_store_sql::open("sqlite://").await,
        Err(StoreError::UnsupportedUrl(_))
    ));
    // The durability is chosen in the URL; unknown options are refused, not ignored.
    let full = vnfm_store_sql::open(&format!("sqlite://{}?synchronous=full", path.display()))
        .await
        .unwrap();
    assert!(
        full.get_instance(&VnfInstanceId::new("u-1"))
            .await
            .unwrap()
            .is_some()
    );
    assert!(matches!(
        vnfm_store_sql::open(&format!("sqlite://{}?synchronous=off", path.display())).await,
        Err(StoreError::UnsupportedUrl(_))
    ));
}

#[tokio::test]
async fn corrupt_documents_are_reported_without_their_content() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("corrupt.db");
    let store = vnfm_store_sql::SqliteStore::open(&path).await.unwrap();
    store
        .create_instance(&instance("c-1", "vnfd", None, &[]), &[])
        .await
        .unwrap();
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE vnf_instances SET doc = '{\"password\": \"hunter2\", \"id\": 3}'",
            [],
        )
        .unwrap();
    let err = store
        .get_instance(&VnfInstanceId::new("c-1"))
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
    assert!(msg.contains("c-1"), "{msg}");
    assert!(!msg.contains("hunter2"), "{msg}");
}

/// Throughput sanity check, not an assertion on time: run with
/// `cargo test --release -p vnfm-store-sql --test integration -- --ignored --nocapture perf`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "timing report; run explicitly in release mode"]
async fn perf_sanity_report() {
    // VNFM_PERF_DURABILITY=full measures synchronous=FULL, =memory an in-memory database.
    let mode = std::env::var("VNFM_PERF_DURABILITY").unwrap_or_else(|_| "normal".into());
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(match mode.as_str() {
        "memory" => vnfm_store_sql::SqliteStore::memory().await.unwrap(),
        other => vnfm_store_sql::SqliteStore::open_with(
            dir.path().join("perf.db"),
            vnfm_store_sql::SqliteOptions {
                durability: if other == "full" {
                    vnfm_store_sql::Durability::Full
                } else {
                    vnfm_store_sql::Durability::Normal
                },
                ..Default::default()
            },
        )
        .await
        .unwrap(),
    });
    let n = std::env::var("VNFM_PERF_N")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(50_000);
    let start = std::time::Instant::now();
    for i in 0..n {
        let vnfd = if i % 10 == 0 {
            "vnfd-rare"
        } else {
            "vnfd-common"
        };
        store
            .create_instance(
                &instance(&format!("p-{i:06}"), vnfd, Some("perf"), &["vim-1"]),
                &[],
            )
            .await
            .unwrap();
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "create_instance, one task, {mode}: {n} in {secs:.2}s = {:.0}/s",
        n as f64 / secs
    );

    let mut tasks = Vec::new();
    let start = std::time::Instant::now();
    for t in 0..8 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..1000 {
                store
                    .create_instance(
                        &instance(&format!("q-{t}-{i:05}"), "vnfd-q", None, &[]),
                        &[],
                    )
                    .await
                    .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "create_instance, 8 tasks: 8000 in {secs:.2}s = {:.0}/s",
        8000.0 / secs
    );

    for (label, vnfd) in [
        ("filter vnfdId (10% match)", "vnfd-rare"),
        ("filter vnfdId (90% match)", "vnfd-common"),
    ] {
        let mut q = InstanceQuery {
            vnfd_id: Some(VnfdId::new(vnfd)),
            limit: Some(100),
            ..Default::default()
        };
        let mut pages = 0;
        let start = std::time::Instant::now();
        while pages < 50 {
            let page = store.list_instances(&q).await.unwrap();
            pages += 1;
            match page.next {
                Some(n) => q.after = Some(n),
                None => break,
            }
        }
        let per = start.elapsed().as_secs_f64() * 1000.0 / f64::from(pages);
        println!(
            "list_instances {label}, page 100 of 58,000 rows: {per:.2} ms/page over {pages} pages"
        );
    }
    let start = std::time::Instant::now();
    let q = InstanceQuery {
        name: Some(NameFilter::Contains("erf".into())),
        limit: Some(100),
        ..Default::default()
    };
    store.list_instances(&q).await.unwrap();
    println!(
        "list_instances name contains, first page: {:.2} ms",
        start.elapsed().as_secs_f64() * 1000.0
    );
    let start = std::time::Instant::now();
    let count = store
        .stream_instances(&InstanceQuery {
            limit: Some(500),
            ..Default::default()
        })
        .count()
        .await;
    println!(
        "stream_instances: {count} in {:.2}s",
        start.elapsed().as_secs_f64()
    );
    tokio::time::sleep(Duration::from_millis(1)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_first_opens_of_one_sqlite_file_both_succeed() {
    for _ in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("race.db");
        let opens: Vec<_> = (0..4)
            .map(|_| {
                let path = path.clone();
                tokio::spawn(async move { vnfm_store_sql::SqliteStore::open(&path).await })
            })
            .collect();
        for o in opens {
            let store = o.await.unwrap().unwrap();
            assert_eq!(store.schema_version().await.unwrap(), 19);
        }
    }
}

async fn settings_are_stored_replaced_and_removed(db: &TestDb) {
    let store = &db.store;
    assert_eq!(store.get_setting("nfvo").await.unwrap(), None);
    let first = serde_json::json!({"url": "https://nfvo-1", "secret": "gAAAA-sealed"});
    store.put_setting("nfvo", Some(&first)).await.unwrap();
    store
        .put_setting("other", Some(&serde_json::json!(1)))
        .await
        .unwrap();
    assert_eq!(store.get_setting("nfvo").await.unwrap(), Some(first));
    let second = serde_json::json!({"url": "https://nfvo-2"});
    store.put_setting("nfvo", Some(&second)).await.unwrap();
    assert_eq!(store.get_setting("nfvo").await.unwrap(), Some(second));
    store.put_setting("nfvo", None).await.unwrap();
    assert_eq!(store.get_setting("nfvo").await.unwrap(), None);
    // Removing a setting that is not there is not an error; other settings stay.
    store.put_setting("nfvo", None).await.unwrap();
    assert_eq!(
        store.get_setting("other").await.unwrap(),
        Some(serde_json::json!(1))
    );
}

/// Two stores (as two processes would) writing the same SQLite file at once: the writes that
/// run on the connection's handle wait for each other's write lock instead of failing, and
/// every one of them lands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_stores_on_one_sqlite_file_write_concurrently_without_busy_errors() {
    use vnfm_types::LcmOperationStateType as S;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let a = Arc::new(vnfm_store_sql::SqliteStore::open(&path).await.unwrap());
    let b = Arc::new(vnfm_store_sql::SqliteStore::open(&path).await.unwrap());
    let mut tasks = Vec::new();
    for (name, store) in [("a", a.clone()), ("b", b.clone())] {
        tasks.push(tokio::spawn(async move {
            for i in 0..60 {
                let id = format!("{name}-{i}");
                store
                    .create_instance(&instance(&id, "vnfd", None, &[]), &[note("s", i, T0)])
                    .await
                    .unwrap();
                let occ = op_occ(&format!("op-{id}"), &id, S::Starting);
                let version = store.start_operation(&occ, &lease(name, T0)).await.unwrap();
                assert_eq!(version, Version::FIRST);
                let written = store
                    .record_step(&transition(
                        &occ,
                        S::Starting,
                        S::Processing,
                        Version::FIRST,
                        name,
                    ))
                    .await
                    .unwrap();
                assert_eq!(written.op_occ_version, Version(2));
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    for store in [&a, &b] {
        let page = store
            .list_instances(&InstanceQuery {
                limit: Some(500),
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(page.items.len(), 120);
    }
    let (occ, version) = b
        .get_op_occ(&vnfm_types::VnfLcmOpOccId("op-a-59".into()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((occ.operation_state, version), (S::Processing, Version(2)));
}

/// A store closed after hot-path writes (whose statements the writer keeps prepared) closes
/// cleanly, and a store opened again on the file finds everything, including the op-occ data
/// a step wrote in its transaction.
#[tokio::test]
async fn an_sqlite_store_closes_after_hot_writes_and_reopens_with_them() {
    use vnfm_types::LcmOperationStateType as S;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("reopen.db");
    let store = vnfm_store_sql::SqliteStore::open(&path).await.unwrap();
    store
        .create_instance(&instance("i", "vnfd", None, &[]), &[])
        .await
        .unwrap();
    let occ = op_occ("o", "i", S::Starting);
    store.start_operation(&occ, &lease("r", T0)).await.unwrap();
    let mut step = transition(&occ, S::Starting, S::Processing, Version::FIRST, "r");
    step.data = vec![("grant".into(), serde_json::json!({"id": "g-1"}))];
    store.record_step(&step).await.unwrap();
    store.close().await;
    drop(store);

    let again = vnfm_store_sql::SqliteStore::open(&path).await.unwrap();
    let id = vnfm_types::VnfLcmOpOccId("o".into());
    assert_eq!(
        again.get_op_occ_data(&id, "grant").await.unwrap(),
        Some(serde_json::json!({"id": "g-1"}))
    );
    assert_eq!(
        again
            .get_op_occ(&id)
            .await
            .unwrap()
            .unwrap()
            .0
            .operation_state,
        S::Processing
    );
    // A refused step (stale version) writes nothing, its data included.
    let mut stale = transition(&occ, S::Processing, S::Completed, Version::FIRST, "r");
    stale.data = vec![("grant".into(), serde_json::json!({"id": "g-2"}))];
    assert!(again.record_step(&stale).await.is_err());
    assert_eq!(
        again.get_op_occ_data(&id, "grant").await.unwrap(),
        Some(serde_json::json!({"id": "g-1"}))
    );
}
