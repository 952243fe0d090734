//! VNF indicator values and indicator subscriptions in the store, on SQLite (temp file) and
//! PostgreSQL (`VNFM_TEST_POSTGRES_URL`; ignored, saying so, when it was unset at build time).

use crate::common;

use serde_json::json;
use vnfm_store::SubscriptionStore;
use vnfm_store::{
    IndicatorSubscriptionRecord, NewOutboxRow, ProjectScope, Timestamp, Version,
    canonical_indicator_filter,
};
use vnfm_types::{SubscriptionId, VnfIndicator, VnfIndicatorSubscription, VnfInstanceId};

use common::{TestDb, instance};

fn value(instance: &str, id: &str, v: serde_json::Value) -> VnfIndicator {
    serde_json::from_value(json!({
        "id": id, "value": v, "vnfInstanceId": instance,
        "_links": {"self": {"href": format!("/vnfind/v1/indicators/{instance}/{id}")},
                   "vnfInstance": {"href": format!("/vnflcm/v1/vnf_instances/{instance}")}}
    }))
    .unwrap()
}

fn note(sub: &str) -> NewOutboxRow {
    NewOutboxRow {
        subscription_id: SubscriptionId::new(sub),
        callback_uri: "http://nfvo/ind".into(),
        payload: json!({"n": 1}),
        not_before: Timestamp(0),
        ordering_key: "i1".into(),
        traceparent: None,
    }
}

async fn values_are_upserted_paged_scoped_and_dropped(db: &TestDb) {
    let store = &db.store;
    for id in ["i1", "i2"] {
        store
            .create_instance_in(&instance(id, "d1", None, &[]), Some("p1"), &[])
            .await
            .unwrap();
    }
    let i1 = VnfInstanceId::new("i1");
    store
        .put_indicator(&value("i1", "load", json!(1)), &[note("s1")])
        .await
        .unwrap();
    store
        .put_indicator(&value("i1", "load", json!(2)), &[])
        .await
        .unwrap();
    store
        .put_indicator(&value("i1", "health", json!("OK")), &[])
        .await
        .unwrap();
    store
        .put_indicator(&value("i2", "load", json!(3)), &[])
        .await
        .unwrap();
    assert_eq!(
        store
            .get_indicator(&i1, "load")
            .await
            .unwrap()
            .unwrap()
            .value,
        json!(2)
    );
    assert_eq!(store.outbox_pending_rows(None, 10).await.unwrap().len(), 1);

    // Pages ordered by instance, then indicator, resumed after the marker.
    let first = store
        .list_indicators(&ProjectScope::All, None, None, 2)
        .await
        .unwrap();
    let keys = |page: &[VnfIndicator]| {
        page.iter()
            .map(|i| format!("{}/{}", i.vnf_instance_id, i.id))
            .collect::<Vec<_>>()
    };
    assert_eq!(keys(&first.items), ["i1/health", "i1/load"]);
    let rest = store
        .list_indicators(&ProjectScope::All, None, first.next.as_deref(), 2)
        .await
        .unwrap();
    assert_eq!(keys(&rest.items), ["i2/load"]);
    assert_eq!(rest.next, None);
    let only_i2 = store
        .list_indicators(
            &ProjectScope::All,
            Some(&VnfInstanceId::new("i2")),
            None,
            10,
        )
        .await
        .unwrap();
    assert_eq!(keys(&only_i2.items), ["i2/load"]);
    // The instance's project came with the first write.
    let other = ProjectScope::Project("p2".into());
    assert!(
        store
            .list_indicators(&other, None, None, 10)
            .await
            .unwrap()
            .items
            .is_empty()
    );
    let mine = ProjectScope::Project("p1".into());
    assert_eq!(
        store
            .list_indicators(&mine, None, None, 10)
            .await
            .unwrap()
            .items
            .len(),
        3
    );
    assert_eq!(
        store
            .instances_with_indicators(None, 10)
            .await
            .unwrap()
            .items,
        ["i1", "i2"]
    );

    // Keep some, drop the rest; an instance's values go with it.
    assert_eq!(
        store
            .retain_indicators(&i1, &["load".to_owned()])
            .await
            .unwrap(),
        1
    );
    assert!(store.get_indicator(&i1, "health").await.unwrap().is_none());
    store
        .delete_instance(&VnfInstanceId::new("i2"), Version::FIRST, &[])
        .await
        .unwrap();
    assert_eq!(
        store
            .instances_with_indicators(None, 10)
            .await
            .unwrap()
            .items,
        ["i1"]
    );
    assert_eq!(store.retain_indicators(&i1, &[]).await.unwrap(), 1);
}

async fn indicator_subscriptions_are_their_own_kind(db: &TestDb) {
    let store = &db.store;
    let sub: VnfIndicatorSubscription = serde_json::from_value(json!({
        "id": "ind1", "callbackUri": "http://nfvo/ind",
        "filter": {"indicatorIds": ["load"]},
        "_links": {"self": {"href": "/vnfind/v1/subscriptions/ind1"}}
    }))
    .unwrap();
    let record = IndicatorSubscriptionRecord::new(sub.clone(), Some(b"sealed".to_vec()));
    store.create_subscription(&record).await.unwrap();
    let id = SubscriptionId::new("ind1");
    assert_eq!(
        store
            .get_subscription::<vnfm_types::VnfIndicatorSubscription>(&id)
            .await
            .unwrap(),
        Some(record.clone())
    );
    assert!(
        store
            .get_subscription::<vnfm_types::FmSubscription>(&id)
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(
        store.callback_authentication(&id).await.unwrap(),
        Some(Some(b"sealed".to_vec()))
    );
    let canonical = canonical_indicator_filter(sub.filter.as_ref());
    let dup = store
        .find_duplicate_subscription::<vnfm_types::VnfIndicatorSubscription>(
            &canonical,
            "http://nfvo/ind",
            None,
        )
        .await
        .unwrap();
    assert_eq!(dup.map(|d| d.subscription.id), Some(id.clone()));
    assert_eq!(
        store
            .list_subscriptions::<vnfm_types::VnfIndicatorSubscription>(
                &ProjectScope::All,
                None,
                10
            )
            .await
            .unwrap()
            .items,
        [record]
    );
    store
        .delete_subscription::<vnfm_types::VnfIndicatorSubscription>(&id)
        .await
        .unwrap();
    assert!(
        store
            .get_subscription::<vnfm_types::VnfIndicatorSubscription>(&id)
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_indicators() {
    let db = TestDb::sqlite().await;
    values_are_upserted_paged_scoped_and_dropped(&db).await;
    indicator_subscriptions_are_their_own_kind(&db).await;
    db.finish().await;
}

#[vnfm_test_env::needs(postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_indicators() {
    let db = TestDb::postgres().await;
    values_are_upserted_paged_scoped_and_dropped(&db).await;
    indicator_subscriptions_are_their_own_kind(&db).await;
    db.finish().await;
}
