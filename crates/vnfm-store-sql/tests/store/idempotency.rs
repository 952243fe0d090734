//! Idempotency keys: claimed once per scope and key, taken over after their lock, answered
//! once, swept when expired; concurrent claims by two stores on one database.

use super::*;
use vnfm_store::{KeyClaim, KeyClaimed, RequestFingerprint, StoredResponse};

store_tests!(
    a_key_is_claimed_once_and_answered_once,
    an_unanswered_key_is_taken_over_after_its_lock_with_its_reserved_id,
    expired_keys_are_reused_and_swept,
    concurrent_claims_of_one_key_give_one_owner,
);

fn claim(scope: &str, key: &str, body: &str, reserved: &str, owner: &str, now: i64) -> KeyClaim {
    KeyClaim {
        scope: scope.into(),
        key: key.into(),
        fingerprint: RequestFingerprint {
            method: "POST".into(),
            route: "/vnflcm/v2/vnf_instances".into(),
            body_sha256: body.into(),
        },
        reserved_id: reserved.into(),
        owner: owner.into(),
        now: Timestamp(now),
        locked_until: Timestamp(now + 1_000),
        expires_at: Timestamp(now + 100_000),
    }
}

fn created() -> StoredResponse {
    StoredResponse {
        status: 201,
        location: Some("http://vnfm/vnflcm/v2/vnf_instances/r-1".into()),
        content_type: Some("application/json".into()),
        body: br#"{"id":"r-1"}"#.to_vec(),
    }
}

async fn a_key_is_claimed_once_and_answered_once(db: &TestDb) {
    let s = &db.store;
    let first = s
        .claim_idempotency_key(&claim("p", "k", "b1", "r-1", "a", 10))
        .await
        .unwrap();
    assert!(
        matches!(&first, KeyClaimed::New(r) if r.reserved_id == "r-1"),
        "{first:?}"
    );
    // Held: a second claim changes nothing and sees the first's reservation.
    let second = s
        .claim_idempotency_key(&claim("p", "k", "b1", "r-2", "b", 20))
        .await
        .unwrap();
    match &second {
        KeyClaimed::Existing(r) => {
            assert_eq!((r.reserved_id.as_str(), r.owner.as_str()), ("r-1", "a"));
            assert!(r.response.is_none());
        }
        other => panic!("{other:?}"),
    }
    // The same key of another scope is another key.
    let other = s
        .claim_idempotency_key(&claim("q", "k", "b1", "r-3", "b", 20))
        .await
        .unwrap();
    assert!(matches!(other, KeyClaimed::New(_)), "{other:?}");

    assert!(
        s.complete_idempotency_key("p", "k", &created())
            .await
            .unwrap()
    );
    let later = StoredResponse {
        status: 500,
        ..created()
    };
    assert!(!s.complete_idempotency_key("p", "k", &later).await.unwrap());
    let got = s.get_idempotency_key("p", "k").await.unwrap().unwrap();
    assert_eq!(got.response, Some(created()), "the first answer stays");
    assert_eq!(got.fingerprint.body_sha256, "b1");
    // Answered keys are never taken over, even after their lock.
    let after = s
        .claim_idempotency_key(&claim("p", "k", "b1", "r-9", "c", 5_000))
        .await
        .unwrap();
    assert!(
        matches!(&after, KeyClaimed::Existing(r) if r.response == Some(created())),
        "{after:?}"
    );
}

async fn an_unanswered_key_is_taken_over_after_its_lock_with_its_reserved_id(db: &TestDb) {
    let s = &db.store;
    s.claim_idempotency_key(&claim("p", "k", "b1", "r-1", "a", 10))
        .await
        .unwrap();
    // Before the lock passes: held.
    let held = s
        .claim_idempotency_key(&claim("p", "k", "b1", "r-2", "b", 500))
        .await
        .unwrap();
    assert!(matches!(held, KeyClaimed::Existing(_)), "{held:?}");
    // After it, a request with another body does not take it over...
    let other_body = s
        .claim_idempotency_key(&claim("p", "k", "b2", "r-2", "b", 2_000))
        .await
        .unwrap();
    assert!(
        matches!(other_body, KeyClaimed::Existing(_)),
        "{other_body:?}"
    );
    // ...the same request does, keeping the first reservation.
    let taken = s
        .claim_idempotency_key(&claim("p", "k", "b1", "r-2", "b", 2_000))
        .await
        .unwrap();
    match taken {
        KeyClaimed::TakenOver(r) => {
            assert_eq!((r.reserved_id.as_str(), r.owner.as_str()), ("r-1", "b"));
        }
        other => panic!("{other:?}"),
    }
    // A release by someone else is ignored; by the owner, frees the lock at once.
    s.release_idempotency_key("p", "k", "a").await.unwrap();
    let held = s
        .claim_idempotency_key(&claim("p", "k", "b1", "r-3", "c", 2_100))
        .await
        .unwrap();
    assert!(matches!(held, KeyClaimed::Existing(_)), "{held:?}");
    s.release_idempotency_key("p", "k", "b").await.unwrap();
    let taken = s
        .claim_idempotency_key(&claim("p", "k", "b1", "r-3", "c", 2_100))
        .await
        .unwrap();
    assert!(
        matches!(&taken, KeyClaimed::TakenOver(r) if r.reserved_id == "r-1" && r.owner == "c"),
        "{taken:?}"
    );
}

async fn expired_keys_are_reused_and_swept(db: &TestDb) {
    let s = &db.store;
    s.claim_idempotency_key(&claim("p", "old", "b1", "r-1", "a", 10))
        .await
        .unwrap();
    s.complete_idempotency_key("p", "old", &created())
        .await
        .unwrap();
    s.claim_idempotency_key(&claim("p", "young", "b1", "r-2", "a", 50_000))
        .await
        .unwrap();
    // Expired (at 100_010): a new request with the key, even another body, is new.
    let reused = s
        .claim_idempotency_key(&claim("p", "old", "b2", "r-3", "b", 100_010))
        .await
        .unwrap();
    match reused {
        KeyClaimed::New(r) => {
            assert_eq!(r.reserved_id, "r-3");
            assert_eq!(r.fingerprint.body_sha256, "b2");
            assert!(r.response.is_none());
        }
        other => panic!("{other:?}"),
    }
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

async fn concurrent_claims_of_one_key_give_one_owner(db: &TestDb) {
    let other = db.reopen().await.unwrap();
    let stores = [db.store.clone(), other];
    let mut tasks = Vec::new();
    for i in 0..16 {
        let s = stores[i % 2].clone();
        tasks.push(tokio::spawn(async move {
            s.claim_idempotency_key(&claim(
                "p",
                "k",
                "b1",
                &format!("r-{i}"),
                &format!("o-{i}"),
                10,
            ))
            .await
            .unwrap()
        }));
    }
    let mut new = Vec::new();
    for t in tasks {
        if let KeyClaimed::New(r) = t.await.unwrap() {
            new.push(r.reserved_id);
        }
    }
    assert_eq!(new.len(), 1, "{new:?}");
    let stored = db
        .store
        .get_idempotency_key("p", "k")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.reserved_id, new[0]);
}
