//! Idempotency keys: committed with the resource their request creates and the answer made
//! from it (and only then), refused to a second request whose creation is then rolled back,
//! replaced when expired, swept; concurrent creations with one key on two stores create one
//! resource.

use super::*;
use vnfm_store::client_key::{KeyAttachment, answer_with, with_pending_key};
use vnfm_store::{Conflict, PendingKey, RequestFingerprint, StoredResponse};

store_tests!(
    a_key_is_committed_with_its_resource_and_its_answer,
    a_taken_key_rolls_the_second_creation_back,
    expired_keys_are_replaced_and_swept,
    concurrent_creations_with_one_key_create_one_resource,
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
        owner: "runner-a".into(),
        now: Timestamp(now),
        expires_at: Timestamp(now + 100_000),
    }
}

/// The answer of the creation of the instance `id` (with an `ETag`, as a PM resource's has).
fn created(id: &str) -> StoredResponse {
    StoredResponse {
        status: 201,
        location: Some(format!("http://vnfm/vnflcm/v2/vnf_instances/{id}")),
        content_type: Some("application/json".into()),
        body: format!(r#"{{"id":"{id}"}}"#).into_bytes(),
        etag: Some(format!("\"{id}-1\"")),
    }
}

/// Creates the instance `id` with `k` pending, its answer made from the instance written
/// ([`created`]): the outcome and what became of the key.
async fn create(
    s: &Arc<dyn Store>,
    k: PendingKey,
    id: &str,
) -> (Result<vnfm_store::Version, StoreError>, KeyAttachment) {
    let inst = instance(id, "vnfd-1", None, &[]);
    with_pending_key(k, async {
        answer_with(|written| {
            written
                .downcast_ref::<VnfInstance>()
                .map(|i| created(i.id.as_str()))
        });
        s.create_instance(&inst, &[]).await
    })
    .await
}

async fn a_key_is_committed_with_its_resource_and_its_answer(db: &TestDb) {
    let s = &db.store;
    let (made, attached) = create(s, key("p", "k", "b1", 10), "i-1").await;
    made.unwrap();
    assert_eq!(attached, KeyAttachment::Attached("i-1".into()));
    let got = s.get_idempotency_key("p", "k").await.unwrap().unwrap();
    assert_eq!(
        (got.resource_id.as_str(), got.response),
        ("i-1", Some(created("i-1")))
    );
    assert_eq!(got.fingerprint.body_sha256, "b1");

    // A request that did not say how to make its answer commits the key without one.
    let inst = instance("i-4", "vnfd-1", None, &[]);
    let (made, attached) =
        with_pending_key(key("p", "k-bare", "b1", 20), s.create_instance(&inst, &[])).await;
    made.unwrap();
    assert_eq!(attached, KeyAttachment::Attached("i-4".into()));
    let got = s.get_idempotency_key("p", "k-bare").await.unwrap().unwrap();
    assert_eq!((got.resource_id.as_str(), got.response), ("i-4", None));

    // A creation that fails commits no key, and gives it back to the request.
    let (made, attached) = create(s, key("p", "k-failed", "b1", 40), "i-1").await;
    assert!(made.is_err());
    assert_eq!(attached, KeyAttachment::NotAttached);
    assert!(
        s.get_idempotency_key("p", "k-failed")
            .await
            .unwrap()
            .is_none()
    );
    // The same key of another scope is another key.
    let (made, attached) = create(s, key("q", "k", "b1", 50), "i-2").await;
    made.unwrap();
    assert_eq!(attached, KeyAttachment::Attached("i-2".into()));
    // Without a pending key nothing is written beside the resource.
    s.create_instance(&instance("i-3", "vnfd-1", None, &[]), &[])
        .await
        .unwrap();
}

async fn a_taken_key_rolls_the_second_creation_back(db: &TestDb) {
    let s = &db.store;
    create(s, key("p", "k", "b1", 10), "i-1").await.0.unwrap();
    let (made, attached) = create(s, key("p", "k", "b1", 20), "i-2").await;
    assert!(
        matches!(made, Err(StoreError::Conflict(Conflict::KeyTaken { ref key })) if key == "k"),
        "{made:?}"
    );
    assert_eq!(attached, KeyAttachment::Taken);
    assert!(
        s.get_instance(&VnfInstanceId::new("i-2"))
            .await
            .unwrap()
            .is_none(),
        "the second creation was rolled back"
    );
    let got = s.get_idempotency_key("p", "k").await.unwrap().unwrap();
    assert_eq!(got.resource_id, "i-1");
    assert_eq!(got.response, Some(created("i-1")), "the first answer stays");
}

async fn expired_keys_are_replaced_and_swept(db: &TestDb) {
    let s = &db.store;
    create(s, key("p", "old", "b1", 10), "i-1").await.0.unwrap();
    create(s, key("p", "young", "b1", 50_000), "i-3")
        .await
        .0
        .unwrap();
    // Not expired yet (at 100_010): taken.
    let (made, _) = create(s, key("p", "old", "b2", 100_000), "i-2").await;
    assert!(
        matches!(made, Err(StoreError::Conflict(Conflict::KeyTaken { .. }))),
        "{made:?}"
    );
    // Expired: a new request with the key, even another body, is new.
    let (made, attached) = create(s, key("p", "old", "b2", 100_020), "i-2").await;
    made.unwrap();
    assert_eq!(attached, KeyAttachment::Attached("i-2".into()));
    let got = s.get_idempotency_key("p", "old").await.unwrap().unwrap();
    assert_eq!(got.fingerprint.body_sha256, "b2");
    assert_eq!(
        (got.resource_id.as_str(), got.response),
        ("i-2", Some(created("i-2")))
    );
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
            let (made, attached) = create(&s, key("p", "k", "b1", 10), &format!("i-{i}")).await;
            (made.is_ok(), attached)
        }));
    }
    let mut made = Vec::new();
    for t in tasks {
        match t.await.unwrap() {
            (true, KeyAttachment::Attached(id)) => made.push(id),
            (false, KeyAttachment::Taken) => {}
            other => panic!("{other:?}"),
        }
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
