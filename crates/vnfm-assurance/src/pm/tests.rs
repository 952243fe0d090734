//! Performance management over a real (SQLite) store and a scripted metrics source: checks,
//! the collector's schedule, reports, threshold crossings and the notifications written to
//! the outbox. Times are given to the collector, never read from the clock in assertions.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use vnfm_driver_api::FixedAnswer;
use vnfm_driver_api::metrics::StaticMetrics;
use vnfm_store::{Store, Version};
use vnfm_store_sql::SqliteStore;
use vnfm_types::{PmObjectType, VnfInstance};

use super::*;
use vnfm_lcm::subscriptions::{CreateOptions, Created};

struct Fixture {
    _dir: tempfile::TempDir,
    store: Arc<dyn Store>,
    metrics: StaticMetrics,
    pm: PerformanceManager,
}

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("s.db")).await.unwrap());
    let keyring = Arc::new(Keyring::from_key_list(&Keyring::generate_key()).unwrap());
    let metrics = StaticMetrics::new(&[
        ("VCpuUsageMeanVnf", PmObjectType::Vnf),
        ("VCpuUsageMeanVnf", PmObjectType::Vnfc),
        ("VMemoryUsageMeanVnf", PmObjectType::Vnf),
    ]);
    let pm = PerformanceManager::new(
        store.clone(),
        keyring,
        Arc::new(FixedAnswer(204)),
        Arc::new(metrics.clone()),
        PmOptions {
            threshold_period: Duration::from_secs(10),
            max_reports: 2,
        },
    );
    let instance: VnfInstance = serde_json::from_value(json!({
        "id": "i1", "vnfdId": "d1", "vnfProvider": "Acme", "vnfProductName": "Web",
        "vnfSoftwareVersion": "1.0", "vnfdVersion": "1.0",
        "instantiationState": "NOT_INSTANTIATED",
        "_links": {"self": {"href": "/vnflcm/v2/vnf_instances/i1"}}
    }))
    .unwrap();
    store.create_instance(&instance, &[]).await.unwrap();
    Fixture {
        _dir: dir,
        store,
        metrics,
        pm,
    }
}

fn job_request(patch: Value) -> CreatePmJobRequest {
    let mut v = json!({
        "objectType": "Vnf", "objectInstanceIds": ["i1"],
        "criteria": {"performanceMetric": ["VCpuUsageMeanVnf"],
                     "collectionPeriod": 10, "reportingPeriod": 30},
        "callbackUri": "http://127.0.0.1:9/job",
        "authentication": {"authType": ["BASIC"],
                           "paramsBasic": {"userName": "u", "password": "secret-pw"}}
    });
    if let (Value::Object(a), Value::Object(b)) = (&mut v, patch) {
        a.extend(b);
    }
    serde_json::from_value(v).unwrap()
}

fn threshold_request() -> CreateThresholdRequest {
    serde_json::from_value(json!({
        "objectType": "Vnf", "objectInstanceId": "i1",
        "criteria": {"performanceMetric": "VCpuUsageMeanVnf", "thresholdType": "SIMPLE",
                     "simpleThresholdDetails": {"thresholdValue": 50, "hysteresis": 5}},
        "callbackUri": "http://127.0.0.1:9/threshold"
    }))
    .unwrap()
}

/// The pending outbox as (subscription id, callback, payload).
async fn outbox(store: &dyn Store) -> Vec<(String, String, Value)> {
    store
        .outbox_pending_rows(None, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|r| (r.subscription_id.to_string(), r.callback_uri, r.payload))
        .collect()
}

/// The time the job's first report is due (its state, as stored).
async fn first_due(store: &dyn Store, id: &str) -> SystemTime {
    let (record, _) = store.pm::<PmJob>().get_pm(id).await.unwrap().unwrap();
    let state: logic::JobState = serde_json::from_str(record.state.as_deref().unwrap()).unwrap();
    logic::from_unix_seconds(state.next_report_at)
}

async fn subscribe(pm: &PerformanceManager, filter: Value) -> String {
    let request = PmSubscriptionRequest {
        filter: Some(serde_json::from_value(filter).unwrap()),
        callback_uri: format!("http://127.0.0.1:9/{}", new_id()),
        authentication: None,
    };
    match pm
        .subscriptions()
        .create(&request, &CreateOptions::default())
        .await
        .unwrap()
    {
        Created::New(s) => s.id.to_string(),
        Created::Existing(_) => panic!("duplicate"),
    }
}

#[tokio::test]
async fn jobs_on_unknown_instances_or_vnfcs_are_refused() {
    let f = fixture().await;
    let opts = CreateOptions::default();
    let e =
        f.pm.create_job(
            &job_request(json!({"objectInstanceIds": ["i1", "nope"]})),
            &opts,
            crate::pm::PmApi::V2,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&e, LcmError::Unprocessable { pointer, .. } if pointer == "/objectInstanceIds/1"),
        "{e:?}"
    );
    let e =
        f.pm.create_job(
            &job_request(json!({"objectType": "Vnfc", "subObjectInstanceIds": ["c9"]})),
            &opts,
            crate::pm::PmApi::V2,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&e, LcmError::Unprocessable { pointer, .. } if pointer == "/subObjectInstanceIds/0"),
        "{e:?}"
    );
    let e =
        f.pm.create_job(
            &job_request(json!({"callbackUri": "ftp://x"})),
            &opts,
            crate::pm::PmApi::V2,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&e, LcmError::InvalidRequest { pointer, .. } if pointer == "/callbackUri"),
        "{e:?}"
    );
    assert!(f.pm.list::<PmJob>(None, 10).await.unwrap().items.is_empty());
}

#[tokio::test]
async fn a_due_job_stores_a_report_of_the_measured_values_and_notifies() {
    let f = fixture().await;
    let job =
        f.pm.create_job(
            &job_request(json!({})),
            &CreateOptions::default(),
            crate::pm::PmApi::V2,
        )
        .await
        .unwrap();
    // The credentials are sealed, never in the resource.
    let (record, _) = f
        .store
        .pm::<PmJob>()
        .get_pm(&job.id)
        .await
        .unwrap()
        .unwrap();
    assert!(
        !serde_json::to_string(&record.resource)
            .unwrap()
            .contains("secret-pw")
    );
    assert!(record.authentication.is_some());
    let wants_reports = subscribe(
        &f.pm,
        json!({"notificationTypes": ["PerformanceInformationAvailableNotification"],
               "vnfInstanceSubscriptionFilter": {"vnfInstanceIds": ["i1"]}}),
    )
    .await;
    let _wants_crossings = subscribe(
        &f.pm,
        json!({"notificationTypes": ["ThresholdCrossedNotification"]}),
    )
    .await;

    let due = first_due(&*f.store, &job.id).await;
    f.metrics.set(Some(42.5));
    // Before it is due, nothing.
    let early =
        f.pm.collect_due(due - Duration::from_secs(1))
            .await
            .unwrap();
    assert_eq!(early.reports, 0);
    assert!(outbox(&*f.store).await.is_empty());

    let done = f.pm.collect_due(due).await.unwrap();
    assert_eq!((done.reports, done.failures), (1, 0));
    let (job, _) = f.pm.get::<PmJob>(&job.id).await.unwrap();
    let reports = job.reports.clone().unwrap();
    assert_eq!(reports.len(), 1);
    let report_id = reports[0].href.rsplit('/').next().unwrap().to_owned();
    let report = f.pm.report(&job.id, &report_id).await.unwrap();
    // Three values: one per collection period of the reporting period, ending when due.
    let values = &report.entries[0].performance_values;
    assert_eq!(values.len(), 3);
    assert!(values.iter().all(|v| v.value == json!(42.5)));
    assert_eq!(
        values[2].time_stamp,
        vnfm_types::DateTime::from_unix_seconds(logic::unix_seconds(due))
    );

    let rows = outbox(&*f.store).await;
    assert_eq!(rows.len(), 2, "{rows:?}");
    let (to_job, to_sub) = (&rows[0], &rows[1]);
    assert_eq!(
        (to_job.0.as_str(), to_job.1.as_str()),
        (job.id.as_str(), "http://127.0.0.1:9/job")
    );
    assert_eq!(
        to_job.2["notificationType"],
        "PerformanceInformationAvailableNotification"
    );
    assert!(to_job.2.get("subscriptionId").is_none());
    assert_eq!(
        to_job.2["_links"]["performanceReport"]["href"],
        reports[0].href
    );
    assert_eq!(to_sub.0, wants_reports);
    assert_eq!(to_sub.2["subscriptionId"], wants_reports.as_str());

    // The same instant again: not due any more.
    assert_eq!(f.pm.collect_due(due).await.unwrap().reports, 0);
}

#[tokio::test]
async fn reports_beyond_the_limit_are_dropped_and_no_data_reports_nothing() {
    let f = fixture().await;
    let job =
        f.pm.create_job(
            &job_request(json!({})),
            &CreateOptions::default(),
            crate::pm::PmApi::V2,
        )
        .await
        .unwrap();
    let due = first_due(&*f.store, &job.id).await;
    // No data: the schedule moves on, nothing is stored or sent.
    assert_eq!(f.pm.collect_due(due).await.unwrap().reports, 0);
    assert!(
        f.pm.get::<PmJob>(&job.id)
            .await
            .unwrap()
            .0
            .reports
            .is_none()
    );
    assert!(outbox(&*f.store).await.is_empty());
    f.metrics.set(Some(1.0));
    let mut hrefs = Vec::new();
    for k in 1..=3 {
        let at = due + Duration::from_secs(30 * k);
        assert_eq!(f.pm.collect_due(at).await.unwrap().reports, 1);
        hrefs.push(
            f.pm.get::<PmJob>(&job.id)
                .await
                .unwrap()
                .0
                .reports
                .unwrap()
                .last()
                .unwrap()
                .href
                .clone(),
        );
    }
    let (job, _) = f.pm.get::<PmJob>(&job.id).await.unwrap();
    let kept: Vec<String> = job.reports.unwrap().into_iter().map(|r| r.href).collect();
    assert_eq!(kept, hrefs[1..]);
    let first = hrefs[0].rsplit('/').next().unwrap();
    assert!(matches!(
        f.pm.report(&job.id, first).await,
        Err(LcmError::NotFound { .. })
    ));
    // Deleting the job drops its pending notifications.
    f.pm.delete::<PmJob>(&job.id).await.unwrap();
    assert!(outbox(&*f.store).await.is_empty());
    assert!(matches!(
        f.pm.delete::<PmJob>(&job.id).await,
        Err(LcmError::NotFound { .. })
    ));
}

#[tokio::test]
async fn thresholds_notify_each_crossing_once() {
    let f = fixture().await;
    let th =
        f.pm.create_threshold(
            &threshold_request(),
            &CreateOptions::default(),
            crate::pm::PmApi::V2,
        )
        .await
        .unwrap();
    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
    let mut directions = Vec::new();
    // value at each evaluation (every threshold period, 10 s)
    for (k, value) in [40.0, 53.0, 60.0, 70.0, 47.0, 44.0, 44.0]
        .into_iter()
        .enumerate()
    {
        f.metrics.set(Some(value));
        let at = t0 + Duration::from_secs(10 * k as u64);
        f.pm.collect_due(at).await.unwrap();
        // Evaluated once per period: a second run at the same time does nothing more.
        f.metrics.set(Some(100.0 - value));
        assert_eq!(f.pm.collect_due(at).await.unwrap().crossings, 0);
    }
    for (sub, callback, payload) in outbox(&*f.store).await {
        assert_eq!(
            (sub.as_str(), callback.as_str()),
            (th.id.as_str(), "http://127.0.0.1:9/threshold")
        );
        assert_eq!(payload["notificationType"], "ThresholdCrossedNotification");
        assert_eq!(payload["thresholdId"], th.id.as_str());
        directions.push((
            payload["crossingDirection"].as_str().unwrap().to_owned(),
            payload["performanceValue"].clone(),
        ));
    }
    assert_eq!(
        directions,
        [
            ("UP".to_owned(), json!(60.0)),
            ("DOWN".to_owned(), json!(44.0))
        ]
    );
}

#[tokio::test]
async fn modifications_need_the_current_version() {
    let f = fixture().await;
    let opts = CreateOptions::default();
    let job =
        f.pm.create_job(&job_request(json!({})), &opts, crate::pm::PmApi::V2)
            .await
            .unwrap();
    let m = PmJobModifications {
        callback_uri: Some("http://127.0.0.1:9/new".into()),
        authentication: None,
    };
    let (answer, v2) =
        f.pm.modify::<PmJob>(&job.id, &m, Some(Version::FIRST), &opts)
            .await
            .unwrap();
    assert_eq!(
        answer.callback_uri.as_deref(),
        Some("http://127.0.0.1:9/new")
    );
    assert_eq!(v2, Version(2));
    let e =
        f.pm.modify::<PmJob>(&job.id, &m, Some(Version::FIRST), &opts)
            .await
            .unwrap_err();
    assert!(
        matches!(&e, LcmError::Changed { current, .. } if current == "\"2\""),
        "{e:?}"
    );
    let (read, _) = f.pm.get::<PmJob>(&job.id).await.unwrap();
    assert_eq!(read.callback_uri.as_deref(), Some("http://127.0.0.1:9/new"));
    // The credentials were kept.
    assert!(
        f.store
            .pm::<PmJob>()
            .get_pm(&job.id)
            .await
            .unwrap()
            .unwrap()
            .0
            .authentication
            .is_some()
    );
    let empty = PmJobModifications::default();
    assert!(matches!(
        f.pm.modify::<PmJob>(&job.id, &empty, None, &opts).await,
        Err(LcmError::InvalidRequest { .. })
    ));
    let th =
        f.pm.create_threshold(&threshold_request(), &opts, crate::pm::PmApi::V2)
            .await
            .unwrap();
    let tm = ThresholdModifications {
        callback_uri: None,
        authentication: Some(
            serde_json::from_value(json!({"authType": ["BASIC"],
                "paramsBasic": {"userName": "u", "password": "p"}}))
            .unwrap(),
        ),
    };
    let (answer, _) =
        f.pm.modify::<Threshold>(&th.id, &tm, None, &opts)
            .await
            .unwrap();
    assert_eq!(answer, ThresholdModifications::default());
    assert!(
        f.store
            .pm::<Threshold>()
            .get_pm(&th.id)
            .await
            .unwrap()
            .unwrap()
            .0
            .authentication
            .is_some()
    );
}

#[tokio::test]
async fn jobs_and_thresholds_survive_a_restart_with_their_schedule_and_sides() {
    let f = fixture().await;
    let opts = CreateOptions::default();
    let job =
        f.pm.create_job(&job_request(json!({})), &opts, crate::pm::PmApi::V2)
            .await
            .unwrap();
    let th =
        f.pm.create_threshold(&threshold_request(), &opts, crate::pm::PmApi::V2)
            .await
            .unwrap();
    let due = first_due(&*f.store, &job.id).await;
    // Seen above before the restart: no second UP after it.
    f.metrics.set(Some(70.0));
    assert_eq!(f.pm.collect_due(due).await.unwrap().crossings, 1);

    // A new process: the same database file, a new manager (same keyring file in real life;
    // here a new one, which only matters for delivering, not for collecting).
    let path = f._dir.path().join("s.db");
    drop(f.pm);
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).await.unwrap());
    let metrics = StaticMetrics::new(&[("VCpuUsageMeanVnf", PmObjectType::Vnf)]).with_value(70.0);
    let pm = PerformanceManager::new(
        store.clone(),
        Arc::new(Keyring::from_key_list(&Keyring::generate_key()).unwrap()),
        Arc::new(FixedAnswer(204)),
        Arc::new(metrics.clone()),
        PmOptions {
            threshold_period: Duration::from_secs(10),
            max_reports: 2,
        },
    );
    assert_eq!(
        pm.get::<PmJob>(&job.id)
            .await
            .unwrap()
            .0
            .reports
            .unwrap()
            .len(),
        1
    );
    let next = due + Duration::from_secs(30);
    // Not due before the schedule says so, then due.
    assert_eq!(
        pm.collect_due(next - Duration::from_secs(1))
            .await
            .unwrap()
            .reports,
        0
    );
    let done = pm.collect_due(next).await.unwrap();
    assert_eq!((done.reports, done.crossings), (1, 0));
    metrics.set(Some(30.0));
    let done = pm
        .collect_due(next + Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(done.crossings, 1);
    let directions: Vec<String> = outbox(&*store)
        .await
        .into_iter()
        .filter(|(sub, _, _)| sub == &th.id)
        .map(|(_, _, p)| p["crossingDirection"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(directions, ["UP", "DOWN"]);
}

fn pushed(value: f64, metric: &str) -> pushed::PushedValue {
    pushed::PushedValue {
        object_instance_id: "i1".into(),
        sub_object_instance_id: None,
        metric: metric.into(),
        value,
        at: SystemTime::now(),
    }
}

/// Tacker's plugin pushes each measured value (`POST /pm_event`): it makes a report of the
/// job, notified as a collected one, and the next value within the reporting period waits.
#[tokio::test]
async fn a_pushed_value_makes_a_report_and_its_notification() {
    let f = fixture().await;
    let opts = CreateOptions::default();
    let metric = "VCpuUsageMeanVnf.i1";
    let job =
        f.pm.create_job(
            &job_request(json!({"criteria": {"performanceMetric": [metric],
                "collectionPeriod": 10, "reportingPeriod": 30}})),
            &opts,
            PmApi::V2,
        )
        .await
        .unwrap();
    let done =
        f.pm.push_job_value(&job.id, &pushed(99.0, metric))
            .await
            .unwrap();
    assert_eq!(done, pushed::Pushed::Reported);
    let (job, _) = f.pm.get::<PmJob>(&job.id).await.unwrap();
    let reports = job.reports.clone().unwrap();
    assert_eq!(reports.len(), 1);
    let report_id = reports[0].href.rsplit('/').next().unwrap();
    let report = f.pm.report(&job.id, report_id).await.unwrap();
    let entry = &report.entries[0];
    assert_eq!(
        (
            entry.object_instance_id.as_str(),
            entry.performance_metric.as_str()
        ),
        ("i1", metric)
    );
    assert_eq!(entry.performance_values[0].value, json!(99.0));
    let sent = outbox(&*f.store).await;
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(
        sent[0].2["notificationType"],
        "PerformanceInformationAvailableNotification"
    );
    assert_eq!(sent[0].2["pmJobId"], job.id.as_str());

    // Within the reporting period, and for what the job does not measure: nothing.
    let again =
        f.pm.push_job_value(&job.id, &pushed(98.0, metric))
            .await
            .unwrap();
    assert!(matches!(again, pushed::Pushed::Skipped { .. }), "{again:?}");
    let mut other = pushed(1.0, metric);
    other.object_instance_id = "i2".into();
    let skipped = f.pm.push_job_value(&job.id, &other).await.unwrap();
    assert!(
        matches!(skipped, pushed::Pushed::Skipped { .. }),
        "{skipped:?}"
    );
    assert_eq!(outbox(&*f.store).await.len(), 1);
    let e =
        f.pm.push_job_value("nope", &pushed(1.0, metric))
            .await
            .unwrap_err();
    assert_eq!(e.kind(), vnfm_types::ErrorKind::NotFound);
}

/// Tacker's plugin pushes threshold values (`POST /pm_threshold`): they cross as evaluated
/// ones, through the hysteresis band, and a value of another metric is skipped.
#[tokio::test]
async fn pushed_threshold_values_cross_up_and_down() {
    let f = fixture().await;
    let th =
        f.pm.create_threshold(&threshold_request(), &CreateOptions::default(), PmApi::V2)
            .await
            .unwrap();
    let metric = "VCpuUsageMeanVnf";
    let up =
        f.pm.push_threshold_value(&th.id, &pushed(99.0, metric))
            .await
            .unwrap();
    assert_eq!(up, pushed::Pushed::Evaluated { crossings: 1 });
    let same =
        f.pm.push_threshold_value(&th.id, &pushed(97.0, metric))
            .await
            .unwrap();
    assert_eq!(same, pushed::Pushed::Evaluated { crossings: 0 });
    let down =
        f.pm.push_threshold_value(&th.id, &pushed(10.0, metric))
            .await
            .unwrap();
    assert_eq!(down, pushed::Pushed::Evaluated { crossings: 1 });
    let directions: Vec<Value> = outbox(&*f.store)
        .await
        .into_iter()
        .map(|(_, _, p)| p["crossingDirection"].clone())
        .collect();
    assert_eq!(directions, [json!("UP"), json!("DOWN")]);
    let other =
        f.pm.push_threshold_value(&th.id, &pushed(99.0, "VMemoryUsageMeanVnf"))
            .await;
    assert!(
        matches!(other, Ok(pushed::Pushed::Skipped { .. })),
        "{other:?}"
    );
}
