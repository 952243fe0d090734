use super::*;

#[test]
fn etag_round_trips() {
    assert_eq!(Version(7).etag(), "\"7\"");
    assert_eq!(Version::from_etag("\"7\""), Some(Version(7)));
    assert_eq!(Version::from_etag("W/\"7\""), Some(Version(7)));
    assert_eq!(Version::from_etag("7"), None);
    assert_eq!(Version::from_etag("\"x\""), None);
}

#[test]
fn canonical_filter_ignores_order_duplicates_and_empty_members() {
    let a: LifecycleChangeNotificationsFilter = serde_json::from_value(serde_json::json!({
        "operationTypes": ["SCALE", "INSTANTIATE", "SCALE"],
        "notificationTypes": ["VnfLcmOperationOccurrenceNotification"],
        "vnfInstanceSubscriptionFilter": {"vnfdIds": ["b", "a"], "vnfInstanceIds": []}
    }))
    .unwrap();
    let b: LifecycleChangeNotificationsFilter = serde_json::from_value(serde_json::json!({
        "vnfInstanceSubscriptionFilter": {"vnfdIds": ["a", "b"]},
        "notificationTypes": ["VnfLcmOperationOccurrenceNotification"],
        "operationTypes": ["INSTANTIATE", "SCALE"]
    }))
    .unwrap();
    assert_eq!(canonical_filter(Some(&a)), canonical_filter(Some(&b)));
    assert_eq!(
        canonical_filter(Some(&b)),
        r#"{"notificationTypes":["VnfLcmOperationOccurrenceNotification"],"operationTypes":["INSTANTIATE","SCALE"],"vnfInstanceSubscriptionFilter":{"vnfdIds":["a","b"]}}"#
    );
    let c: LifecycleChangeNotificationsFilter = serde_json::from_value(serde_json::json!({
        "operationTypes": ["INSTANTIATE"]
    }))
    .unwrap();
    assert_ne!(canonical_filter(Some(&a)), canonical_filter(Some(&c)));
    // No filter and an empty filter both select everything.
    assert_eq!(canonical_filter(None), "{}");
    assert_eq!(
        canonical_filter(Some(&LifecycleChangeNotificationsFilter::default())),
        "{}"
    );
}

#[test]
fn state_spellings_match_serde() {
    use LcmOperationStateType as S;
    for s in [
        S::Starting,
        S::Processing,
        S::Completed,
        S::FailedTemp,
        S::Failed,
        S::RollingBack,
        S::RolledBack,
    ] {
        assert_eq!(state_str(s), enum_str(&s));
        assert_eq!(parse_state(state_str(s)), Some(s));
    }
}

#[test]
fn timestamp_arithmetic_saturates() {
    assert_eq!(
        Timestamp(1000).plus(Duration::from_millis(500)),
        Timestamp(1500)
    );
    assert_eq!(
        Timestamp(i64::MAX).plus(Duration::from_secs(1)),
        Timestamp(i64::MAX)
    );
}
