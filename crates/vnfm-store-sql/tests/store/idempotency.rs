//! Idempotency keys: handed to a creating write as a value and committed with the resource it
//! creates (and only then), refused to a second request whose creation is then rolled back,
//! replaced when expired, swept; what a caller keeps of its answer is kept only by the attempt
//! that committed the key; concurrent creations with one key on two stores create one
//! resource.

use super::*;
use vnfm_store::{PendingKey, RequestFingerprint};

store_tests!(
    a_key_is_committed_with_its_resource,
    a_failed_creation_commits_no_key,
    every_creating_write_commits_its_key,
    an_answer_is_kept_only_by_the_attempt_that_committed_the_key,
    a_taken_key_rolls_the_second_creation_back,
    expired_keys_are_replaced_and_swept,
    concurrent_creations_with_one_key_create_one_resource,
    a_key_written_before_0019_reads_with_no_kept_answer,
);

fn key(scope: &str, key: &str, body: &str, now: i64) -> PendingKey {
    PendingKey {
        scope: scope.into(),
        key: key.into(),
        fingerprint: RequestFingerprint {
            method: "POST".into(),
            route: "/vnflcm/v2/vnf_instances".into(),
            body_sha256: body.into(),
        },
        owner: format!("runner-a/{now}"),
        now: Timestamp(now),
        expires_at: Timestamp(now + 100_000),
    }
}

/// Keeps `answer` with `k`, if `k`'s attempt committed it.
async fn keep(s: &Arc<dyn Store>, k: &PendingKey, answer: &[u8]) -> Result<bool, StoreError> {
    s.keep_idempotency_answer(&k.scope, &k.key, &k.owner, answer)
        .await
}

/// Creates the instance `id` carrying `k`.
async fn create(s: &Arc<dyn Store>, k: &PendingKey, id: &str) -> Result<Version, StoreError> {
    let inst = instance(id, "vnfd-1", None, &[]);
    s.create_instance_keyed(&inst, None, &[], Some(k)).await
}

async fn a_key_is_committed_with_its_resource(db: &TestDb) {
    let s = &db.store;
    create(s, &key("p", "k", "b1", 10), "i-1").await.unwrap();
    let got = s.get_idempotency_key("p", "k").await.unwrap().unwrap();
    assert_eq!(
        got.resource_id, "i-1",
        "the created id, committed with the key"
    );
    assert_eq!(got.fingerprint.body_sha256, "b1");
    assert_eq!(got.owner, "runner-a/10");
    assert_eq!(
        got.kept_answer, None,
        "nothing kept until the caller keeps it"
    );
    // The same key of another scope is another key.
    create(s, &key("q", "k", "b1", 50), "i-2").await.unwrap();
    let got = s.get_idempotency_key("q", "k").await.unwrap().unwrap();
    assert_eq!(got.resource_id, "i-2");
    // Without a key nothing is written beside the resource.
    s.create_instance(&instance("i-3", "vnfd-1", None, &[]), &[])
        .await
        .unwrap();
    assert!(s.get_idempotency_key("p", "i-3").await.unwrap().is_none());
}

async fn a_failed_creation_commits_no_key(db: &TestDb) {
    let s = &db.store;
    create(s, &key("p", "k-1", "b1", 10), "i-1").await.unwrap();
    // The id is taken: the creation fails, and its key is not kept.
    let failed = create(s, &key("p", "k-failed", "b1", 40), "i-1").await;
    assert!(
        matches!(
            failed,
            Err(StoreError::Conflict(Conflict::AlreadyExists { .. }))
        ),
        "{failed:?}"
    );
    assert!(
        s.get_idempotency_key("p", "k-failed")
            .await
            .unwrap()
            .is_none(),
        "a creation rolled back keeps no key"
    );
    // A start refused (no such instance) keeps none either.
    let occ = op_occ("o-none", "i-missing", S::Starting);
    let refused = s
        .start_operation_keyed(
            &occ,
            &lease("r1", Timestamp(1000)),
            None,
            Some(&key("p", "k-start", "b1", 50)),
        )
        .await;
    assert!(refused.is_err(), "{refused:?}");
    assert!(
        s.get_idempotency_key("p", "k-start")
            .await
            .unwrap()
            .is_none()
    );
}

async fn every_creating_write_commits_its_key(db: &TestDb) {
    let s = &db.store;
    create(s, &key("p", "k-inst", "b", 10), "i-1")
        .await
        .unwrap();
    let occ = op_occ("o-1", "i-1", S::Starting);
    s.start_operation_keyed(
        &occ,
        &lease("r1", Timestamp(1000)),
        None,
        Some(&key("p", "k-occ", "b", 10)),
    )
    .await
    .unwrap();
    let vim = VimRecord {
        id: VimId::new("vim-k"),
        name: "cluster".into(),
        vim_type: "kubernetes".into(),
        public: json!({}),
        secret: vec![1],
        created_by_instance: None,
        project: None,
        shared: false,
    };
    s.create_vim_keyed(&vim, Some(&key("p", "k-vim", "b", 10)))
        .await
        .unwrap();
    for (k, id) in [("k-inst", "i-1"), ("k-occ", "o-1"), ("k-vim", "vim-k")] {
        let got = s.get_idempotency_key("p", k).await.unwrap();
        assert_eq!(got.map(|r| r.resource_id), Some(id.to_owned()), "{k}");
    }
}

async fn an_answer_is_kept_only_by_the_attempt_that_committed_the_key(db: &TestDb) {
    let s = &db.store;
    let first = key("p", "k", "b1", 10);
    create(s, &first, "i-1").await.unwrap();
    let other_attempt = key("p", "k", "b1", 11);
    assert!(!keep(s, &other_attempt, b"theirs").await.unwrap());
    // A key that was never committed keeps nothing.
    assert!(
        !keep(s, &key("p", "k-none", "b1", 10), b"none")
            .await
            .unwrap()
    );
    assert!(keep(s, &first, b"first").await.unwrap());
    assert!(!keep(s, &first, b"again").await.unwrap(), "kept once");
    let got = s.get_idempotency_key("p", "k").await.unwrap().unwrap();
    assert_eq!(got.kept_answer.as_deref(), Some(&b"first"[..]));
}

async fn a_taken_key_rolls_the_second_creation_back(db: &TestDb) {
    let s = &db.store;
    create(s, &key("p", "k", "b1", 10), "i-1").await.unwrap();
    assert!(keep(s, &key("p", "k", "b1", 10), b"a").await.unwrap());
    let made = create(s, &key("p", "k", "b1", 20), "i-2").await;
    assert!(
        matches!(made, Err(StoreError::Conflict(Conflict::KeyTaken { ref key })) if key == "k"),
        "{made:?}"
    );
    assert!(
        s.get_instance(&VnfInstanceId::new("i-2"))
            .await
            .unwrap()
            .is_none(),
        "the second creation was rolled back"
    );
    let got = s.get_idempotency_key("p", "k").await.unwrap().unwrap();
    assert_eq!(got.resource_id, "i-1");
    assert_eq!(
        got.kept_answer.as_deref(),
        Some(&b"a"[..]),
        "the first answer stays"
    );
}

async fn expired_keys_are_replaced_and_swept(db: &TestDb) {
    let s = &db.store;
    create(s, &key("p", "old", "b1", 10), "i-1").await.unwrap();
    assert!(keep(s, &key("p", "old", "b1", 10), b"a").await.unwrap());
    create(s, &key("p", "young", "b1", 50_000), "i-3")
        .await
        .unwrap();
    // Not expired yet (at 100_010): taken.
    let made = create(s, &key("p", "old", "b2", 100_000), "i-2").await;
    assert!(
        matches!(made, Err(StoreError::Conflict(Conflict::KeyTaken { .. }))),
        "{made:?}"
    );
    // Expired: a new request with the key, even another body, is new, and keeps no answer of
    // the old one.
    create(s, &key("p", "old", "b2", 100_020), "i-2")
        .await
        .unwrap();
    let got = s.get_idempotency_key("p", "old").await.unwrap().unwrap();
    assert_eq!(got.fingerprint.body_sha256, "b2");
    assert_eq!((got.resource_id.as_str(), got.kept_answer), ("i-2", None));
    assert_eq!(got.created_at, Timestamp(100_020));
    assert_eq!(
        s.sweep_idempotency_keys(Timestamp(150_000)).await.unwrap(),
        1
    );
    assert!(s.get_idempotency_key("p", "young").await.unwrap().is_none());
    assert!(s.get_idempotency_key("p", "old").await.unwrap().is_some());
    assert_eq!(
        s.sweep_idempotency_keys(Timestamp(150_000)).await.unwrap(),
        0
    );
}

async fn concurrent_creations_with_one_key_create_one_resource(db: &TestDb) {
    let other = db.reopen().await.unwrap();
    let stores = [db.store.clone(), other];
    let mut tasks = Vec::new();
    for i in 0..16 {
        let s = stores[i % 2].clone();
        tasks.push(tokio::spawn(async move {
            let id = format!("i-{i}");
            match create(&s, &key("p", "k", "b1", 10), &id).await {
                Ok(_) => Some(id),
                Err(StoreError::Conflict(Conflict::KeyTaken { .. })) => None,
                Err(e) => panic!("{e}"),
            }
        }));
    }
    let mut made = Vec::new();
    for t in tasks {
        made.extend(t.await.unwrap());
    }
    assert_eq!(made.len(), 1, "{made:?}");
    let stored = db
        .store
        .get_idempotency_key("p", "k")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.resource_id, made[0]);
    for i in 0..16 {
        let id = format!("i-{i}");
        let found = db
            .store
            .get_instance(&VnfInstanceId::new(&id))
            .await
            .unwrap();
        assert_eq!(found.is_some(), id == made[0], "{id}");
    }
}

/// A key an older build wrote (its answer in the `response_*` columns of migrations 0015 and
/// 0018) reads with its resource and no kept answer: its request is answered again from the
/// resource, and that answer can be kept.
async fn a_key_written_before_0019_reads_with_no_kept_answer(db: &TestDb) {
    db.execute_raw(
        "INSERT INTO idempotency_keys (scope, idem_key, method, route, body_sha256, \
         reserved_id, owner, created_at, expires_at, state, locked_until, response_status, \
         response_location, response_content_type, response_body, response_etag) \
         VALUES ('p', 'old', 'POST', '/vnflcm/v2/vnf_instances', 'b1', 'i-old', 'runner-0', \
         10, 100000, 'COMPLETED', 0, 201, 'http://vnfm/vnflcm/v2/vnf_instances/i-old', \
         'application/json', NULL, NULL)",
    )
    .await;
    let s = &db.store;
    let got = s.get_idempotency_key("p", "old").await.unwrap().unwrap();
    assert_eq!(
        (
            got.resource_id.as_str(),
            got.owner.as_str(),
            got.kept_answer
        ),
        ("i-old", "runner-0", None)
    );
    assert!(
        s.keep_idempotency_answer("p", "old", "runner-0", b"remade")
            .await
            .unwrap()
    );
    let got = s.get_idempotency_key("p", "old").await.unwrap().unwrap();
    assert_eq!(got.kept_answer.as_deref(), Some(&b"remade"[..]));
}
