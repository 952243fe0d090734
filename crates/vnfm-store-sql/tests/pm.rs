//! PM jobs, reports, thresholds and PM subscriptions in the store, on SQLite (temp file) and
//! PostgreSQL (`VNFM_TEST_POSTGRES_URL`; ignored, saying so, when it was unset at build time).

use crate::common;

use serde_json::json;
use vnfm_store::SubscriptionStore;
use vnfm_store::{
    NewOutboxRow, PmJobRecord, PmReportRecord, PmSubscriptionRecord, StoreError, ThresholdRecord,
    Timestamp, Version, canonical_pm_filter,
};
use vnfm_types::{DateTime, PerformanceReport, PmJob, PmSubscription, SubscriptionId, Threshold};

use common::TestDb;

fn job(id: &str) -> PmJob {
    serde_json::from_value(json!({
        "id": id, "objectType": "Vnf", "objectInstanceIds": ["i1"],
        "criteria": {"performanceMetric": ["VCpuUsageMeanVnf"],
                     "collectionPeriod": 5, "reportingPeriod": 10},
        "callbackUri": "http://nfvo/pm",
        "_links": {"self": {"href": format!("/vnfpm/v2/pm_jobs/{id}")}}
    }))
    .unwrap()
}

fn threshold(id: &str) -> Threshold {
    serde_json::from_value(json!({
        "id": id, "objectType": "Vnf", "objectInstanceId": "i1",
        "criteria": {"performanceMetric": "VCpuUsageMeanVnf", "thresholdType": "SIMPLE",
                     "simpleThresholdDetails": {"thresholdValue": 50.0, "hysteresis": 5.0}},
        "callbackUri": "http://nfvo/th",
        "_links": {"self": {"href": format!("/vnfpm/v2/thresholds/{id}")}}
    }))
    .unwrap()
}

fn note(sub: &str) -> NewOutboxRow {
    NewOutboxRow {
        subscription_id: SubscriptionId::new(sub),
        callback_uri: "http://nfvo/pm".into(),
        payload: json!({"n": 1}),
        not_before: Timestamp(0),
        ordering_key: "i1".into(),
        traceparent: None,
    }
}

fn report(id: &str, job: &str, value: f64) -> PmReportRecord {
    PmReportRecord {
        id: id.into(),
        job_id: job.into(),
        ready_time: DateTime::parse("2026-01-01T00:00:10Z").unwrap(),
        report: serde_json::from_value::<PerformanceReport>(json!({"entries": [{
            "objectType": "Vnf", "objectInstanceId": "i1",
            "performanceMetric": "VCpuUsageMeanVnf",
            "performanceValues": [{"timeStamp": "2026-01-01T00:00:05Z", "value": value}]
        }]}))
        .unwrap(),
    }
}

async fn jobs_and_reports_are_versioned_and_deleted_together(db: &TestDb) {
    let store = &db.store;
    let record = PmJobRecord {
        resource: job("j1"),
        authentication: Some(vec![9, 9]),
        state: None,
    };
    assert_eq!(
        store.pm::<PmJob>().create_pm(&record).await.unwrap(),
        Version::FIRST
    );
    assert!(store.pm::<PmJob>().create_pm(&record).await.is_err());

    // A report is written with the job's new report list and its notification, atomically.
    let mut next = record.clone();
    next.resource.reports = Some(vec![
        serde_json::from_value(json!({
            "href": "/vnfpm/v2/pm_jobs/j1/reports/r1", "readyTime": "2026-01-01T00:00:10Z"
        }))
        .unwrap(),
    ]);
    let r1 = report("r1", "j1", 42.5);
    let v2 = store
        .add_pm_report(&r1, &next, Version::FIRST, &[], &[note("j1")])
        .await
        .unwrap();
    assert_eq!(v2, Version(2));
    // At a stale version nothing is written: neither report nor notification.
    let err = store
        .add_pm_report(
            &report("r2", "j1", 1.0),
            &next,
            Version::FIRST,
            &[],
            &[note("j1")],
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::VersionMismatch { .. }), "{err:?}");
    assert!(store.get_pm_report("j1", "r2").await.unwrap().is_none());
    assert_eq!(store.outbox_pending_rows(None, 10).await.unwrap().len(), 1);
    // A later report drops an old one.
    store
        .add_pm_report(&report("r3", "j1", 2.0), &next, v2, &["r1".into()], &[])
        .await
        .unwrap();
    assert!(store.get_pm_report("j1", "r1").await.unwrap().is_none());

    let reopened = db.reopen().await.unwrap();
    let (read, v) = reopened.pm::<PmJob>().get_pm("j1").await.unwrap().unwrap();
    assert_eq!((read, v), (next.clone(), Version(3)));
    assert_eq!(
        reopened.get_pm_report("j1", "r3").await.unwrap(),
        Some(report("r3", "j1", 2.0))
    );
    // A report is read through its own job only.
    assert!(reopened.get_pm_report("j2", "r3").await.unwrap().is_none());

    store
        .pm::<PmJob>()
        .create_pm(&PmJobRecord {
            resource: job("j0"),
            authentication: None,
            state: Some("{}".into()),
        })
        .await
        .unwrap();
    let page = store.pm::<PmJob>().list_pm(None, 1).await.unwrap();
    assert_eq!(page.items[0].0.resource.id, "j0");
    let rest = store
        .pm::<PmJob>()
        .list_pm(page.next.as_deref(), 10)
        .await
        .unwrap();
    assert_eq!(rest.items.len(), 1);
    assert!(rest.next.is_none());

    // Deleting the job deletes its reports and its pending notifications.
    store.pm::<PmJob>().delete_pm("j1").await.unwrap();
    assert!(store.pm::<PmJob>().get_pm("j1").await.unwrap().is_none());
    assert!(store.get_pm_report("j1", "r3").await.unwrap().is_none());
    assert!(
        store
            .outbox_pending_rows(None, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(matches!(
        store.pm::<PmJob>().delete_pm("j1").await,
        Err(StoreError::NotFound { .. })
    ));
}

async fn thresholds_keep_state_and_enqueue_with_updates(db: &TestDb) {
    let store = &db.store;
    let record = ThresholdRecord {
        resource: threshold("t1"),
        authentication: None,
        state: None,
    };
    store.pm::<Threshold>().create_pm(&record).await.unwrap();
    let mut crossed = record.clone();
    crossed.state = Some(r#"{"":"UP"}"#.into());
    let v = store
        .pm::<Threshold>()
        .update_pm(&crossed, Version::FIRST, &[note("t1")])
        .await
        .unwrap();
    assert!(
        store
            .pm::<Threshold>()
            .update_pm(&crossed, Version::FIRST, &[note("t1")])
            .await
            .is_err()
    );
    let (read, at) = db
        .reopen()
        .await
        .unwrap()
        .pm::<Threshold>()
        .get_pm("t1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!((read, at), (crossed, v));
    assert_eq!(
        store
            .pm::<Threshold>()
            .list_pm(None, 10)
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    assert_eq!(store.outbox_pending_rows(None, 10).await.unwrap().len(), 1);
    store.pm::<Threshold>().delete_pm("t1").await.unwrap();
    assert!(
        store
            .pm::<Threshold>()
            .get_pm("t1")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .outbox_pending_rows(None, 10)
            .await
            .unwrap()
            .is_empty()
    );
}

async fn pm_subscriptions_are_their_own_kind(db: &TestDb) {
    let store = &db.store;
    let sub: PmSubscription = serde_json::from_value(json!({
        "id": "p1", "callbackUri": "http://nfvo/pm",
        "filter": {"notificationTypes": ["ThresholdCrossedNotification"]},
        "_links": {"self": {"href": "/vnfpm/v2/subscriptions/p1"}}
    }))
    .unwrap();
    let record = PmSubscriptionRecord::new(sub.clone(), None);
    store.create_subscription(&record).await.unwrap();
    let id = SubscriptionId::new("p1");
    assert_eq!(
        store
            .get_subscription::<vnfm_types::PmSubscription>(&id)
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
    let canonical = canonical_pm_filter(sub.filter.as_ref());
    let dup = store
        .find_duplicate_subscription::<vnfm_types::PmSubscription>(
            &canonical,
            "http://nfvo/pm",
            None,
        )
        .await
        .unwrap();
    assert_eq!(dup.map(|d| d.subscription.id), Some(id.clone()));
    assert_eq!(
        store
            .list_subscriptions::<vnfm_types::PmSubscription>(
                &vnfm_store::ProjectScope::All,
                None,
                10
            )
            .await
            .unwrap()
            .items,
        [record]
    );
    store
        .delete_subscription::<vnfm_types::PmSubscription>(&id)
        .await
        .unwrap();
    assert!(
        store
            .get_subscription::<vnfm_types::PmSubscription>(&id)
            .await
            .unwrap()
            .is_none()
    );
}

/// The deliverer's one lookup of a callback's credentials finds subscriptions of any kind,
/// PM jobs and thresholds by the id an outbox row carries.
async fn callback_credentials_are_found_by_id_whatever_holds_them(db: &TestDb) {
    let store = &db.store;
    let sub: PmSubscription = serde_json::from_value(json!({
        "id": "cred-sub", "callbackUri": "http://nfvo/pm",
        "_links": {"self": {"href": "/vnfpm/v2/subscriptions/cred-sub"}}
    }))
    .unwrap();
    store
        .create_subscription(&PmSubscriptionRecord::new(
            sub,
            Some(b"sealed-sub".to_vec()),
        ))
        .await
        .unwrap();
    store
        .pm::<PmJob>()
        .create_pm(&PmJobRecord {
            resource: job("cred-job"),
            authentication: Some(b"sealed-job".to_vec()),
            state: None,
        })
        .await
        .unwrap();
    store
        .pm::<Threshold>()
        .create_pm(&ThresholdRecord {
            resource: threshold("cred-th"),
            authentication: None,
            state: None,
        })
        .await
        .unwrap();
    let found = async |id: &str| {
        store
            .callback_authentication(&SubscriptionId::new(id))
            .await
            .unwrap()
    };
    assert_eq!(found("cred-sub").await, Some(Some(b"sealed-sub".to_vec())));
    assert_eq!(found("cred-job").await, Some(Some(b"sealed-job".to_vec())));
    assert_eq!(found("cred-th").await, Some(None));
    assert_eq!(found("nothing").await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_pm() {
    let db = TestDb::sqlite().await;
    jobs_and_reports_are_versioned_and_deleted_together(&db).await;
    thresholds_keep_state_and_enqueue_with_updates(&db).await;
    pm_subscriptions_are_their_own_kind(&db).await;
    callback_credentials_are_found_by_id_whatever_holds_them(&db).await;
    db.finish().await;
}

#[vnfm_test_env::needs(postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_pm() {
    let db = TestDb::postgres().await;
    jobs_and_reports_are_versioned_and_deleted_together(&db).await;
    thresholds_keep_state_and_enqueue_with_updates(&db).await;
    pm_subscriptions_are_their_own_kind(&db).await;
    callback_credentials_are_found_by_id_whatever_holds_them(&db).await;
    db.finish().await;
}
