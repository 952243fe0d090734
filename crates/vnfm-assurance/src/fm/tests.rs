//! Fault management over a real (SQLite) store: de-duplication, clear, acknowledge, filters
//! and the notifications written to the outbox.

use std::sync::Arc;

use serde_json::json;
use vnfm_driver_api::FixedAnswer;
use vnfm_driver_api::fault::{FaultId, FaultReport, Raised};
use vnfm_store::{Store, Version};
use vnfm_store_sql::SqliteStore;
use vnfm_types::{
    AckState, EventType, FmNotificationType, FmNotificationsFilter, FmSubscriptionRequest,
    PerceivedSeverity, VnfInstanceId,
};

use super::*;
use vnfm_lcm::subscriptions::{CreateOptions, Created};

struct Fixture {
    _dir: tempfile::TempDir,
    store: Arc<dyn Store>,
    fm: FaultManager,
}

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("s.db")).await.unwrap());
    let keyring = Arc::new(Keyring::from_key_list(&Keyring::generate_key()).unwrap());
    let fm = FaultManager::new(store.clone(), keyring, Arc::new(FixedAnswer(204)));
    Fixture {
        _dir: dir,
        store,
        fm,
    }
}

fn fault(instance: &str, vnfc: Option<&str>, cause: &str) -> FaultId {
    FaultId {
        instance_id: VnfInstanceId::new(instance),
        vnfc_instance_id: vnfc.map(str::to_owned),
        fault_type: Some("HighCpu".into()),
        probable_cause: cause.into(),
    }
}

fn report(f: &FaultId, severity: PerceivedSeverity) -> FaultReport {
    FaultReport::new(f.clone(), severity, EventType::QosAlarm)
}

async fn subscribe(fm: &FaultManager, filter: serde_json::Value) -> String {
    let request = FmSubscriptionRequest {
        filter: Some(serde_json::from_value(filter).unwrap()),
        callback_uri: format!("http://127.0.0.1:9/{}", new_id()),
        authentication: None,
    };
    match fm
        .subscriptions()
        .create(&request, &CreateOptions::default())
        .await
        .unwrap()
    {
        Created::New(s) => s.id.to_string(),
        Created::Existing(_) => panic!("duplicate"),
    }
}

/// The outbox as (subscription, notificationType, alarm id or alarmId).
async fn outbox(store: &dyn Store) -> Vec<(String, String, String)> {
    store
        .outbox_pending_rows(None, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|r| {
            let p = &r.payload;
            let alarm = p["alarm"]["id"]
                .as_str()
                .or(p["alarmId"].as_str())
                .unwrap_or("");
            (
                r.subscription_id.to_string(),
                p["notificationType"].as_str().unwrap().to_owned(),
                alarm.to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn the_same_fault_updates_its_open_alarm_and_another_vnfc_gets_its_own() {
    let f = fixture().await;
    let sub = subscribe(&f.fm, json!({})).await;
    let cpu = fault("i1", Some("c1"), "cpu above 90%");
    let (a, r) =
        f.fm.raise(&report(&cpu, PerceivedSeverity::Minor))
            .await
            .unwrap();
    assert_eq!(r, Raised::New(a.id.clone()));
    assert_eq!(a.ack_state, AckState::Unacknowledged);
    assert_eq!(a.vnfc_instance_ids.as_deref(), Some(&["c1".to_owned()][..]));
    assert_eq!(a.links.self_.href, format!("/vnffm/v1/alarms/{}", a.id));

    // Repeating it changes nothing and notifies nobody.
    let (_, r) =
        f.fm.raise(&report(&cpu, PerceivedSeverity::Minor))
            .await
            .unwrap();
    assert_eq!(r, Raised::Unchanged(a.id.clone()));
    // A new severity updates the same alarm.
    let (b, r) =
        f.fm.raise(&report(&cpu, PerceivedSeverity::Critical))
            .await
            .unwrap();
    assert_eq!(r, Raised::Updated(a.id.clone()));
    assert_eq!(b.perceived_severity, PerceivedSeverity::Critical);
    assert!(b.alarm_changed_time.is_some());
    assert_eq!(b.alarm_raised_time, a.alarm_raised_time);
    // Another VNFC with the same cause is another alarm.
    let (c, r) =
        f.fm.raise(&report(
            &fault("i1", Some("c2"), "cpu above 90%"),
            PerceivedSeverity::Minor,
        ))
        .await
        .unwrap();
    assert!(matches!(r, Raised::New(_)));
    assert_ne!(c.id, a.id);

    let n = "AlarmNotification".to_owned();
    assert_eq!(
        outbox(&*f.store).await,
        [
            (sub.clone(), n.clone(), a.id.clone()),
            (sub.clone(), n.clone(), a.id.clone()),
            (sub.clone(), n, c.id.clone())
        ]
    );
    assert_eq!(
        f.fm.list(&vnfm_store::ProjectScope::All, None, 10)
            .await
            .unwrap()
            .items
            .len(),
        2
    );
}

#[tokio::test]
async fn clear_sets_cleared_and_a_later_raise_opens_a_new_alarm() {
    let f = fixture().await;
    let sub = subscribe(&f.fm, json!({})).await;
    let down = fault("i1", None, "VNFC down");
    let (a, _) =
        f.fm.raise(&report(&down, PerceivedSeverity::Major))
            .await
            .unwrap();
    let at = vnfm_types::DateTime::parse("2030-01-01T00:00:00Z").unwrap();
    let cleared = f.fm.clear(&down, Some(at.clone())).await.unwrap().unwrap();
    assert_eq!(cleared.id, a.id);
    assert_eq!(cleared.perceived_severity, PerceivedSeverity::Cleared);
    assert_eq!(cleared.alarm_cleared_time, Some(at.clone()));
    // Nothing open any more: a second clear does nothing.
    assert!(f.fm.clear(&down, None).await.unwrap().is_none());
    let (stored, _) = f.fm.get(&a.id).await.unwrap();
    assert_eq!(stored, cleared);

    let rows = f.store.outbox_pending_rows(None, 10).await.unwrap();
    let last = &rows.last().unwrap().payload;
    assert_eq!(last["notificationType"], "AlarmClearedNotification");
    assert_eq!(last["alarmId"], a.id.as_str());
    assert_eq!(last["alarmClearedTime"], at.as_str());
    assert_eq!(last["subscriptionId"], sub.as_str());
    assert_eq!(last["_links"]["alarm"]["href"], a.links.self_.href.as_str());

    let (b, r) =
        f.fm.raise(&report(&down, PerceivedSeverity::Major))
            .await
            .unwrap();
    assert_eq!(r, Raised::New(b.id.clone()));
    assert_ne!(b.id, a.id);
}

#[tokio::test]
async fn acknowledge_checks_the_version_and_refuses_a_second_ack() {
    let f = fixture().await;
    let (a, _) =
        f.fm.raise(&report(&fault("i1", None, "x"), PerceivedSeverity::Warning))
            .await
            .unwrap();
    let err = f.fm.acknowledge(&a.id, Some(Version(7))).await.unwrap_err();
    assert!(
        matches!(err, LcmError::AlarmChanged { ref current, .. } if current == "\"1\""),
        "{err}"
    );
    let (acked, v) = f.fm.acknowledge(&a.id, Some(Version(1))).await.unwrap();
    assert_eq!(acked.ack_state, AckState::Acknowledged);
    assert_eq!(v, Version(2));
    let err = f.fm.acknowledge(&a.id, None).await.unwrap_err();
    assert_eq!(err.kind(), vnfm_types::ErrorKind::Conflict);
    let err = f.fm.acknowledge("nope", None).await.unwrap_err();
    assert_eq!(err.kind(), vnfm_types::ErrorKind::NotFound);
    // Acknowledging notifies nobody.
    assert!(
        f.store
            .outbox_pending_rows(None, 10)
            .await
            .unwrap()
            .is_empty()
    );
}

/// SOL003 v3.3.1: `alarmAcknowledgedTime` is present while the alarm is acknowledged (it was
/// never set); Tacker's clients unacknowledge, which removes it.
#[tokio::test]
async fn an_acknowledged_alarm_has_its_acknowledged_time_until_unacknowledged() {
    let f = fixture().await;
    let (a, _) =
        f.fm.raise(&report(&fault("i1", None, "x"), PerceivedSeverity::Warning))
            .await
            .unwrap();
    assert_eq!(a.alarm_acknowledged_time, None);
    let (acked, _) = f.fm.acknowledge(&a.id, None).await.unwrap();
    let at = acked
        .alarm_acknowledged_time
        .clone()
        .expect("acknowledged time");
    let (stored, v) = f.fm.get(&a.id).await.unwrap();
    assert_eq!(stored.alarm_acknowledged_time, Some(at));
    assert_eq!(
        serde_json::to_value(&stored).unwrap()["ackState"],
        "ACKNOWLEDGED"
    );
    let (back, _) =
        f.fm.set_ack_state(&a.id, AckState::Unacknowledged, Some(v))
            .await
            .unwrap();
    assert_eq!(back.ack_state, AckState::Unacknowledged);
    assert_eq!(back.alarm_acknowledged_time, None);
    let json = serde_json::to_value(f.fm.get(&a.id).await.unwrap().0).unwrap();
    assert!(json.get("alarmAcknowledgedTime").is_none(), "{json}");
    let err =
        f.fm.set_ack_state(&a.id, AckState::Unacknowledged, None)
            .await
            .unwrap_err();
    assert_eq!(err.kind(), vnfm_types::ErrorKind::Conflict);
}

#[tokio::test]
async fn subscriptions_get_only_what_their_filter_selects() {
    let f = fixture().await;
    let critical = subscribe(&f.fm, json!({"perceivedSeverities": ["CRITICAL"]})).await;
    let i2 = subscribe(
        &f.fm,
        json!({"vnfInstanceSubscriptionFilter": {"vnfInstanceIds": ["i2"]}}),
    )
    .await;
    let cleared_only = subscribe(
        &f.fm,
        json!({"notificationTypes": ["AlarmClearedNotification"]}),
    )
    .await;
    let cause = subscribe(
        &f.fm,
        json!({"probableCauses": ["disk full"], "eventTypes": ["QOS_ALARM"]}),
    )
    .await;
    let cleared_severity = subscribe(&f.fm, json!({"perceivedSeverities": ["CLEARED"]})).await;
    let minor = subscribe(&f.fm, json!({"perceivedSeverities": ["MINOR"]})).await;

    let disk = fault("i2", None, "disk full");
    let (a, _) =
        f.fm.raise(&report(&disk, PerceivedSeverity::Critical))
            .await
            .unwrap();
    f.fm.clear(&disk, None).await.unwrap();
    let mut got = outbox(&*f.store).await;
    got.sort();
    let mut want = vec![
        (
            critical.clone(),
            "AlarmNotification".to_owned(),
            a.id.clone(),
        ),
        // The clearing of a CRITICAL alarm reaches the subscribers to CRITICAL alarms (as
        // on Tacker) and to CLEARED ones; MINOR ones hear of neither.
        (
            critical.clone(),
            "AlarmClearedNotification".to_owned(),
            a.id.clone(),
        ),
        (
            cleared_severity.clone(),
            "AlarmClearedNotification".to_owned(),
            a.id.clone(),
        ),
        (i2.clone(), "AlarmNotification".to_owned(), a.id.clone()),
        (
            i2.clone(),
            "AlarmClearedNotification".to_owned(),
            a.id.clone(),
        ),
        (
            cleared_only.clone(),
            "AlarmClearedNotification".to_owned(),
            a.id.clone(),
        ),
        (cause.clone(), "AlarmNotification".to_owned(), a.id.clone()),
        (
            cause.clone(),
            "AlarmClearedNotification".to_owned(),
            a.id.clone(),
        ),
    ];
    want.sort();
    assert_eq!(got, want);
    assert!(!got.iter().any(|(s, _, _)| *s == minor), "{got:?}");

    // A rebuilt list goes to every subscription whose types allow it.
    assert_eq!(f.fm.announce_rebuilt().await.unwrap(), 5);
}

/// Issue 67: an alarm is notified to the subscriptions of its instance's project and to
/// those of no project, never to another project's; a rebuilt alarm list, about no
/// instance, to every subscription.
#[tokio::test]
async fn alarms_are_notified_within_their_instances_project() {
    let f = fixture().await;
    let mut subs = Vec::new();
    for project in [Some("demo"), Some("other"), None] {
        let request = FmSubscriptionRequest {
            filter: None,
            callback_uri: format!("http://127.0.0.1:9/{}", new_id()),
            authentication: None,
        };
        let options = CreateOptions {
            project: project.map(str::to_owned),
            ..CreateOptions::default()
        };
        let created = f.fm.subscriptions().create(&request, &options).await;
        subs.push(created.unwrap().subscription().id.to_string());
    }
    let (demo, other, admin) = (subs[0].clone(), subs[1].clone(), subs[2].clone());
    let instance: vnfm_types::VnfInstance = serde_json::from_value(json!({
        "id": "i-demo", "vnfdId": "d", "vnfProvider": "p", "vnfProductName": "n",
        "vnfSoftwareVersion": "1", "vnfdVersion": "1", "instantiationState": "NOT_INSTANTIATED",
        "_links": {"self": {"href": "/i"}}
    }))
    .unwrap();
    f.store
        .create_instance_in(&instance, Some("demo"), &[])
        .await
        .unwrap();
    let (a, _) =
        f.fm.raise(&report(
            &fault("i-demo", None, "disk full"),
            PerceivedSeverity::Major,
        ))
        .await
        .unwrap();
    let (b, _) =
        f.fm.raise(&report(
            &fault("i-unknown", None, "disk full"),
            PerceivedSeverity::Major,
        ))
        .await
        .unwrap();
    let mut got = outbox(&*f.store).await;
    got.sort();
    let n = "AlarmNotification".to_owned();
    let mut want = vec![
        (demo.clone(), n.clone(), a.id.clone()),
        (admin.clone(), n.clone(), a.id.clone()),
        (admin.clone(), n, b.id.clone()),
    ];
    want.sort();
    assert_eq!(got, want);
    assert!(!got.iter().any(|(s, _, _)| *s == other));
    assert_eq!(f.fm.announce_rebuilt().await.unwrap(), 3);
}

#[test]
fn filter_matching_is_per_attribute() {
    let alarm = new_alarm(
        &vnfm_types::links::SolLinks::default(),
        "a1",
        &report(&fault("i1", Some("c1"), "x"), PerceivedSeverity::Major),
        &vnfm_types::DateTime::now(),
    );
    let ctx = NotificationContext::default();
    let f = |v: serde_json::Value| -> FmNotificationsFilter { serde_json::from_value(v).unwrap() };
    let ty = FmNotificationType::AlarmNotification;
    assert!(matches(None, ty, Some(&alarm), &ctx));
    assert!(matches(
        Some(&f(json!({"perceivedSeverities": []}))),
        ty,
        Some(&alarm),
        &ctx
    ));
    assert!(!matches(
        Some(&f(json!({"faultyResourceTypes": ["COMPUTE"]}))),
        ty,
        Some(&alarm),
        &ctx
    ));
    assert!(matches(
        Some(&f(json!({"eventTypes": ["QOS_ALARM", "EQUIPMENT_ALARM"]}))),
        ty,
        Some(&alarm),
        &ctx
    ));
    assert!(!matches(
        Some(&f(json!({"probableCauses": ["y"]}))),
        ty,
        Some(&alarm),
        &ctx
    ));
    // vnfdIds needs the instance's context: unknown matches no constraint.
    assert!(!matches(
        Some(&f(
            json!({"vnfInstanceSubscriptionFilter": {"vnfdIds": ["d1"]}})
        )),
        ty,
        Some(&alarm),
        &ctx
    ));
    let with_vnfd = NotificationContext {
        vnfd_id: Some("d1".into()),
        ..Default::default()
    };
    assert!(matches(
        Some(&f(
            json!({"vnfInstanceSubscriptionFilter": {"vnfdIds": ["d1"]}})
        )),
        ty,
        Some(&alarm),
        &with_vnfd
    ));
}

#[tokio::test]
async fn a_cleared_raise_is_refused_and_the_sink_port_works() {
    let f = fixture().await;
    let x = fault("i1", None, "x");
    let err =
        f.fm.raise(&report(&x, PerceivedSeverity::Cleared))
            .await
            .unwrap_err();
    assert_eq!(err.kind(), vnfm_types::ErrorKind::Invalid);
    let sink: Arc<dyn FaultSink> = Arc::new(f.fm.clone());
    let Raised::New(id) = sink
        .raise(report(&x, PerceivedSeverity::Major))
        .await
        .unwrap()
    else {
        panic!("not new")
    };
    assert_eq!(sink.clear(&x, None).await.unwrap(), Some(id));
    assert_eq!(sink.clear(&x, None).await.unwrap(), None);
}
