//! Lifecycle and package management subscriptions: one id space, kinds kept apart, duplicates.

use super::*;

store_tests!(
    subscriptions_round_trip_and_detect_duplicates,
    pkgm_subscriptions_share_ids_with_lcm_ones_but_stay_apart,
);

fn subscription(id: &str, callback: &str, filter: serde_json::Value) -> LccnSubscription {
    serde_json::from_value(json!({
        "id": id,
        "filter": filter,
        "callbackUri": callback,
        "_links": {"self": {"href": format!("http://vnfm/vnflcm/v2/subscriptions/{id}")}}
    }))
    .unwrap()
}

async fn subscriptions_round_trip_and_detect_duplicates(db: &TestDb) {
    let s = db.store.as_ref();
    let sub = subscription(
        "sub-1",
        "http://nfvo/cb",
        json!({"operationTypes": ["SCALE", "INSTANTIATE"], "operationStates": ["COMPLETED"]}),
    );
    let record = SubscriptionRecord::new(sub.clone(), Some(vec![0, 159, 146, 150]));
    s.create_subscription(&record).await.unwrap();
    assert_eq!(
        s.get_subscription::<vnfm_types::LccnSubscription>(&sub.id)
            .await
            .unwrap(),
        Some(record.clone())
    );
    let err = s.create_subscription(&record).await.unwrap_err();
    assert!(
        matches!(err, StoreError::Conflict(Conflict::AlreadyExists { .. })),
        "{err:?}"
    );

    // Same filter written differently, same callback: a duplicate.
    let same: vnfm_types::LifecycleChangeNotificationsFilter = serde_json::from_value(
        json!({"operationStates": ["COMPLETED"], "operationTypes": ["INSTANTIATE", "SCALE"]}),
    )
    .unwrap();
    let dup = s
        .find_duplicate_subscription::<vnfm_types::LccnSubscription>(
            &canonical_filter(Some(&same)),
            "http://nfvo/cb",
            None,
        )
        .await
        .unwrap()
        .expect("duplicate found");
    assert_eq!(dup.subscription.id, sub.id);
    assert!(
        s.find_duplicate_subscription::<vnfm_types::LccnSubscription>(
            &canonical_filter(Some(&same)),
            "http://nfvo/other",
            None
        )
        .await
        .unwrap()
        .is_none()
    );
    assert!(
        s.find_duplicate_subscription::<vnfm_types::LccnSubscription>(
            &canonical_filter(None),
            "http://nfvo/cb",
            None
        )
        .await
        .unwrap()
        .is_none()
    );

    for i in 2..=5 {
        let other = subscription(&format!("sub-{i}"), "http://nfvo/cb2", json!({}));
        s.create_subscription(&SubscriptionRecord::new(other, None))
            .await
            .unwrap();
    }
    let p1 = s
        .list_subscriptions::<vnfm_types::LccnSubscription>(&ProjectScope::All, None, 3)
        .await
        .unwrap();
    assert_eq!(p1.items.len(), 3);
    let p2 = s
        .list_subscriptions::<vnfm_types::LccnSubscription>(
            &ProjectScope::All,
            p1.next.as_deref(),
            3,
        )
        .await
        .unwrap();
    assert_eq!(
        p2.items
            .iter()
            .map(|r| r.subscription.id.0.as_str())
            .collect::<Vec<_>>(),
        vec!["sub-4", "sub-5"]
    );
    assert_eq!(p2.next, None);
    assert!(p2.items.iter().all(|r| r.authentication.is_none()));

    // Deleting a subscription drops its pending notifications, not others'.
    s.enqueue(&[note("sub-1", 1, T0), note("sub-2", 2, T0)])
        .await
        .unwrap();
    s.delete_subscription::<vnfm_types::LccnSubscription>(&sub.id)
        .await
        .unwrap();
    assert!(
        s.get_subscription::<vnfm_types::LccnSubscription>(&sub.id)
            .await
            .unwrap()
            .is_none()
    );
    let left = outbox_all(s).await;
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].subscription_id.as_str(), "sub-2");
    assert!(matches!(
        s.delete_subscription::<vnfm_types::LccnSubscription>(&sub.id)
            .await
            .unwrap_err(),
        StoreError::NotFound { .. }
    ));
}

fn pkgm_subscription(
    id: &str,
    callback: &str,
    filter: serde_json::Value,
) -> PkgmSubscriptionRecord {
    let sub: vnfm_types::PkgmSubscription = serde_json::from_value(json!({
        "id": id,
        "filter": filter,
        "callbackUri": callback,
        "_links": {"self": {"href": format!("http://vnfm/vnfpkgm/v2/subscriptions/{id}")}}
    }))
    .unwrap();
    PkgmSubscriptionRecord::new(sub, None)
}

async fn pkgm_subscriptions_share_ids_with_lcm_ones_but_stay_apart(db: &TestDb) {
    let s = db.store.as_ref();
    let lcm = subscription("sub-lcm", "http://nfvo/cb", json!({}));
    s.create_subscription(&SubscriptionRecord::new(lcm, None))
        .await
        .unwrap();
    let mut pkgm = pkgm_subscription(
        "sub-pkgm",
        "http://nfvo/cb",
        json!({"vnfdId": ["b", "a"], "operationalState": ["ENABLED"]}),
    );
    pkgm.authentication = Some(vec![1, 2, 3]);
    s.create_subscription(&pkgm).await.unwrap();
    assert_eq!(
        s.get_subscription::<vnfm_types::PkgmSubscription>(&SubscriptionId::new("sub-pkgm"))
            .await
            .unwrap(),
        Some(pkgm.clone())
    );

    // One id space: neither kind can take the other's id.
    let taken = pkgm_subscription("sub-lcm", "http://nfvo/x", json!({}));
    assert!(matches!(
        s.create_subscription(&taken).await.unwrap_err(),
        StoreError::Conflict(Conflict::AlreadyExists { .. })
    ));
    let taken = subscription("sub-pkgm", "http://nfvo/x", json!({}));
    assert!(matches!(
        s.create_subscription(&SubscriptionRecord::new(taken, None))
            .await
            .unwrap_err(),
        StoreError::Conflict(Conflict::AlreadyExists { .. })
    ));

    // Each kind's reads see only that kind.
    let lcm_id = SubscriptionId::new("sub-lcm");
    let pkgm_id = SubscriptionId::new("sub-pkgm");
    assert!(
        s.get_subscription::<vnfm_types::LccnSubscription>(&pkgm_id)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        s.get_subscription::<vnfm_types::PkgmSubscription>(&lcm_id)
            .await
            .unwrap()
            .is_none()
    );
    let lcm_list = s
        .list_subscriptions::<vnfm_types::LccnSubscription>(&ProjectScope::All, None, 10)
        .await
        .unwrap();
    assert_eq!(lcm_list.items.len(), 1);
    assert_eq!(lcm_list.items[0].subscription.id, lcm_id);
    // Both have the empty filter `{}` or not: the duplicate lookup stays within its kind.
    assert!(
        s.find_duplicate_subscription::<vnfm_types::LccnSubscription>(
            &canonical_filter(None),
            "http://nfvo/cb",
            None
        )
        .await
        .unwrap()
        .is_some()
    );
    assert!(
        s.find_duplicate_subscription::<vnfm_types::PkgmSubscription>(
            &canonical_pkgm_filter(None),
            "http://nfvo/cb",
            None
        )
        .await
        .unwrap()
        .is_none()
    );
    let same: vnfm_types::PkgmNotificationsFilter =
        serde_json::from_value(json!({"operationalState": ["ENABLED"], "vnfdId": ["a", "b", "a"]}))
            .unwrap();
    let dup = s
        .find_duplicate_subscription::<vnfm_types::PkgmSubscription>(
            &canonical_pkgm_filter(Some(&same)),
            "http://nfvo/cb",
            None,
        )
        .await
        .unwrap()
        .expect("duplicate found");
    assert_eq!(dup.subscription.id, pkgm_id);

    for i in 1..=4 {
        s.create_subscription(&pkgm_subscription(
            &format!("sub-pkgm-{i}"),
            "http://nfvo/other",
            json!({}),
        ))
        .await
        .unwrap();
    }
    let p1 = s
        .list_subscriptions::<vnfm_types::PkgmSubscription>(&ProjectScope::All, None, 3)
        .await
        .unwrap();
    let p2 = s
        .list_subscriptions::<vnfm_types::PkgmSubscription>(
            &ProjectScope::All,
            p1.next.as_deref(),
            3,
        )
        .await
        .unwrap();
    let ids: Vec<String> = p1
        .items
        .iter()
        .chain(&p2.items)
        .map(|r| r.subscription.id.0.clone())
        .collect();
    assert_eq!(
        ids,
        [
            "sub-pkgm",
            "sub-pkgm-1",
            "sub-pkgm-2",
            "sub-pkgm-3",
            "sub-pkgm-4"
        ]
    );
    assert_eq!(p2.next, None);

    // Deleting is per kind too, and drops the subscription's pending notifications.
    s.enqueue(&[note("sub-pkgm", 1, T0), note("sub-lcm", 2, T0)])
        .await
        .unwrap();
    assert!(matches!(
        s.delete_subscription::<vnfm_types::PkgmSubscription>(&lcm_id)
            .await
            .unwrap_err(),
        StoreError::NotFound { .. }
    ));
    assert!(matches!(
        s.delete_subscription::<vnfm_types::LccnSubscription>(&pkgm_id)
            .await
            .unwrap_err(),
        StoreError::NotFound { .. }
    ));
    s.delete_subscription::<vnfm_types::PkgmSubscription>(&pkgm_id)
        .await
        .unwrap();
    assert!(
        s.get_subscription::<vnfm_types::PkgmSubscription>(&pkgm_id)
            .await
            .unwrap()
            .is_none()
    );
    let left = outbox_all(s).await;
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].subscription_id, lcm_id);
}
