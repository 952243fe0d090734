//! Alarms and FM subscriptions in the store, on SQLite (temp file) and PostgreSQL
//! (`VNFM_TEST_POSTGRES_URL`; ignored, saying so, when it was unset at build time).

use crate::common;

use serde_json::json;
use vnfm_store::SubscriptionStore;
use vnfm_store::{
    AlarmRecord, Conflict, FmSubscriptionRecord, NewOutboxRow, ProjectScope, StoreError,
    SubscriptionRecord, Timestamp, Version, canonical_fm_filter,
};
use vnfm_types::{Alarm, FmSubscription, PerceivedSeverity, SubscriptionId};

use common::TestDb;

fn alarm(id: &str, instance: &str) -> Alarm {
    serde_json::from_value(json!({
        "id": id, "managedObjectId": instance,
        "alarmRaisedTime": "2021-09-06T07:07:15Z", "ackState": "UNACKNOWLEDGED",
        "perceivedSeverity": "MAJOR", "eventTime": "2021-09-06T07:07:15Z",
        "eventType": "EQUIPMENT_ALARM", "probableCause": "down", "isRootCause": true,
        "_links": {"self": {"href": format!("/vnffm/v1/alarms/{id}")}}
    }))
    .unwrap()
}

fn note(sub: &str) -> NewOutboxRow {
    NewOutboxRow {
        subscription_id: SubscriptionId::new(sub),
        callback_uri: "http://nfvo/cb".into(),
        payload: json!({"n": 1}),
        not_before: Timestamp(0),
        ordering_key: "i1".into(),
        traceparent: None,
    }
}

async fn alarms_are_deduplicated_versioned_and_survive_reopen(db: &TestDb) {
    let store = &db.store;
    let first = AlarmRecord {
        alarm: alarm("a1", "i1"),
        dedup_key: "i1/c1/down".into(),
    };
    assert_eq!(
        store.create_alarm(&first, &[note("s1")]).await.unwrap(),
        Version::FIRST
    );
    // A second open alarm with the same key is refused: the caller updates the open one.
    let second = AlarmRecord {
        alarm: alarm("a2", "i1"),
        dedup_key: "i1/c1/down".into(),
    };
    let err = store
        .create_alarm(&second, &[note("s1")])
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::Conflict(Conflict::AlreadyExists { .. })),
        "{err:?}"
    );
    let (open, v) = store.open_alarm("i1/c1/down").await.unwrap().unwrap();
    assert_eq!(open.alarm.id, "a1");

    // Compare-and-swap: the stale version writes nothing, not even its notification.
    let mut cleared = open.clone();
    cleared.alarm.perceived_severity = PerceivedSeverity::Cleared;
    cleared.alarm.alarm_cleared_time = Some(vnfm_types::DateTime::now());
    let v2 = store
        .update_alarm(&cleared, v, &[note("s1")])
        .await
        .unwrap();
    assert_eq!(v2, Version(2));
    let err = store
        .update_alarm(&cleared, v, &[note("s2")])
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::VersionMismatch { .. }), "{err:?}");
    let pending = store.outbox_pending_rows(None, 10).await.unwrap();
    let subs: Vec<&str> = pending.iter().map(|r| r.subscription_id.as_str()).collect();
    assert_eq!(subs, ["s1", "s1"]);

    // Cleared: the key is free for a new alarm, and both are listed.
    assert!(store.open_alarm("i1/c1/down").await.unwrap().is_none());
    store.create_alarm(&second, &[]).await.unwrap();
    let reopened = db.reopen().await.unwrap();
    let page = reopened
        .list_alarms(&ProjectScope::All, None, 1)
        .await
        .unwrap();
    assert_eq!(page.items.len(), 1);
    let rest = reopened
        .list_alarms(&ProjectScope::All, page.next.as_deref(), 10)
        .await
        .unwrap();
    let ids: Vec<String> = page
        .items
        .iter()
        .chain(&rest.items)
        .map(|(r, _)| r.alarm.id.clone())
        .collect();
    assert_eq!(ids, ["a1", "a2"]);
    let (a1, v) = reopened.get_alarm("a1").await.unwrap().unwrap();
    assert_eq!((a1, v), (cleared, Version(2)));
}

async fn open_alarms_are_listed_per_instance_or_all(db: &TestDb) {
    let store = &db.store;
    for (id, instance, key) in [
        ("o1", "j1", "j1/x"),
        ("o2", "j2", "j2/x"),
        ("o3", "j1", "j1/y"),
    ] {
        let record = AlarmRecord {
            alarm: alarm(id, instance),
            dedup_key: key.into(),
        };
        store.create_alarm(&record, &[]).await.unwrap();
    }
    let (mut o3, v) = store.open_alarm("j1/y").await.unwrap().unwrap();
    o3.alarm.perceived_severity = PerceivedSeverity::Cleared;
    o3.alarm.alarm_cleared_time = Some(vnfm_types::DateTime::now());
    store.update_alarm(&o3, v, &[]).await.unwrap();
    let ids = |v: Vec<(AlarmRecord, Version)>| -> Vec<String> {
        v.into_iter().map(|(r, _)| r.alarm.id).collect()
    };
    let j1 = vnfm_types::VnfInstanceId::new("j1");
    assert_eq!(ids(store.open_alarms(Some(&j1)).await.unwrap()), ["o1"]);
    let all = ids(store.open_alarms(None).await.unwrap());
    assert!(
        all.contains(&"o1".to_string()) && all.contains(&"o2".to_string()),
        "{all:?}"
    );
    assert!(!all.contains(&"o3".to_string()), "{all:?}");
    let none = vnfm_types::VnfInstanceId::new("j9");
    assert!(store.open_alarms(Some(&none)).await.unwrap().is_empty());
}

async fn fm_subscriptions_are_their_own_kind(db: &TestDb) {
    let store = &db.store;
    let sub: FmSubscription = serde_json::from_value(json!({
        "id": "f1", "callbackUri": "http://nfvo/fm",
        "filter": {"perceivedSeverities": ["MAJOR", "CRITICAL"]},
        "_links": {"self": {"href": "/vnffm/v1/subscriptions/f1"}}
    }))
    .unwrap();
    let record = FmSubscriptionRecord::new(sub.clone(), Some(vec![1, 2, 3]));
    store.create_subscription(&record).await.unwrap();
    let id = SubscriptionId::new("f1");
    assert_eq!(
        store
            .get_subscription::<vnfm_types::FmSubscription>(&id)
            .await
            .unwrap(),
        Some(record.clone())
    );
    // Not a lifecycle subscription, but its id is taken for every kind.
    assert!(
        store
            .get_subscription::<vnfm_types::LccnSubscription>(&id)
            .await
            .unwrap()
            .is_none()
    );
    let lcm: vnfm_types::LccnSubscription = serde_json::from_value(json!({
        "id": "f1", "callbackUri": "http://nfvo/lcm",
        "_links": {"self": {"href": "/vnflcm/v2/subscriptions/f1"}}
    }))
    .unwrap();
    assert!(
        store
            .create_subscription(&SubscriptionRecord::new(lcm, None))
            .await
            .is_err()
    );
    let canonical = canonical_fm_filter(sub.filter.as_ref());
    assert_eq!(canonical, r#"{"perceivedSeverities":["CRITICAL","MAJOR"]}"#);
    let dup = store
        .find_duplicate_subscription::<vnfm_types::FmSubscription>(
            &canonical,
            "http://nfvo/fm",
            None,
        )
        .await
        .unwrap();
    assert_eq!(dup.map(|d| d.subscription.id), Some(id.clone()));
    let page = db
        .reopen()
        .await
        .unwrap()
        .list_subscriptions::<vnfm_types::FmSubscription>(&ProjectScope::All, None, 10)
        .await
        .unwrap();
    assert_eq!(page.items, [record]);
    store
        .delete_subscription::<vnfm_types::FmSubscription>(&id)
        .await
        .unwrap();
    assert!(
        store
            .get_subscription::<vnfm_types::FmSubscription>(&id)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .delete_subscription::<vnfm_types::FmSubscription>(&id)
            .await
            .is_err()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_alarms() {
    let db = TestDb::sqlite().await;
    alarms_are_deduplicated_versioned_and_survive_reopen(&db).await;
    open_alarms_are_listed_per_instance_or_all(&db).await;
    fm_subscriptions_are_their_own_kind(&db).await;
    db.finish().await;
}

#[vnfm_test_env::needs(postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_alarms() {
    let db = TestDb::postgres().await;
    alarms_are_deduplicated_versioned_and_survive_reopen(&db).await;
    open_alarms_are_listed_per_instance_or_all(&db).await;
    fm_subscriptions_are_their_own_kind(&db).await;
    db.finish().await;
}
