//! Project scoping in the store (migration 11): what each kind of resource records, and lists
//! whose scope is a predicate of the query, so pages stay full and keyset cursors exact. On
//! SQLite (temp file) and PostgreSQL (`VNFM_TEST_POSTGRES_URL`; ignored, saying so, when it was unset at build time).

use crate::common;

use serde_json::json;
use vnfm_store::SubscriptionStore;
use vnfm_store::{
    AlarmRecord, FmSubscriptionRecord, InstanceQuery, Lease, OpOccQuery, PackageRecord, Page,
    PkgmSubscriptionRecord, ProjectScope, ScopedKind, Store, SubscriptionRecord, Timestamp,
};
use vnfm_types::{
    Alarm, FmSubscription, LccnSubscription, LcmOperationStateType, PkgmSubscription, VnfInstance,
    VnfLcmOpOcc,
};

use common::{TestDb, instance, op_occ};

fn scope(p: &str) -> ProjectScope {
    ProjectScope::Project(p.into())
}

/// The keys of every item of every page of `list` (called with the cursor and `limit`), and
/// the number of pages; each page holds at most `limit` items.
async fn all_pages<T, F, Fut>(
    limit: u32,
    mut list: F,
    key: impl Fn(&T) -> String,
) -> (Vec<String>, usize)
where
    F: FnMut(Option<String>, u32) -> Fut,
    Fut: std::future::Future<Output = Page<T>>,
{
    let (mut ids, mut pages, mut after) = (Vec::new(), 0, None);
    loop {
        let page = list(after.clone(), limit).await;
        assert!(
            page.items.len() <= limit as usize,
            "page larger than {limit}"
        );
        pages += 1;
        ids.extend(page.items.iter().map(&key));
        match page.next {
            Some(n) => after = Some(n),
            None => return (ids, pages),
        }
    }
}

/// Instances a1..a5 of project A interleaved with b1..b3 of B and n1 of none: each scope
/// pages through exactly its own, in full pages.
async fn instances_and_op_occs_are_listed_by_project(s: &dyn Store) {
    let layout = [
        ("a1", Some("A")),
        ("b1", Some("B")),
        ("a2", Some("A")),
        ("n1", None),
        ("a3", Some("A")),
        ("b2", Some("B")),
        ("a4", Some("A")),
        ("b3", Some("B")),
        ("a5", Some("A")),
    ];
    for (id, project) in layout {
        s.create_instance_in(&instance(id, "vnfd", Some(id), &[]), project, &[])
            .await
            .unwrap();
        assert_eq!(
            s.project_of(ScopedKind::Instance, id).await.unwrap(),
            Some(project.map(str::to_owned))
        );
    }
    assert_eq!(
        s.project_of(ScopedKind::Instance, "zz").await.unwrap(),
        None
    );
    let instances = |scope: ProjectScope, limit: u32| {
        let list = move |after: Option<String>, limit: u32| {
            let q = InstanceQuery {
                scope: scope.clone(),
                after,
                limit: Some(limit),
                ..Default::default()
            };
            async move { s.list_instances(&q).await.unwrap() }
        };
        all_pages(limit, list, |i: &VnfInstance| i.id.0.clone())
    };
    let (a, pages) = instances(scope("A"), 2).await;
    assert_eq!(a, ["a1", "a2", "a3", "a4", "a5"]);
    assert_eq!(pages, 3, "pages of 2 visible rows each");
    assert_eq!(instances(scope("B"), 2).await.0, ["b1", "b2", "b3"]);
    assert!(instances(scope("C"), 2).await.0.is_empty());
    assert!(instances(ProjectScope::Nothing, 2).await.0.is_empty());
    assert_eq!(instances(ProjectScope::All, 4).await.0.len(), 9);
    // The scope combines with the other filters, and with the documents and default views.
    let q = InstanceQuery {
        scope: scope("B"),
        name: Some(vnfm_store::NameFilter::Exact("a1".into())),
        ..Default::default()
    };
    assert!(s.list_instances(&q).await.unwrap().items.is_empty());
    let q = InstanceQuery {
        scope: scope("B"),
        ..Default::default()
    };
    assert_eq!(
        s.list_instance_default_views(&q).await.unwrap().items.len(),
        3
    );
    assert_eq!(s.list_instance_documents(&q).await.unwrap().items.len(), 3);

    // An occurrence belongs to its instance's project, and stays in it after the instance
    // is gone.
    let lease = Lease {
        owner: "r1".into(),
        expires_at: Timestamp(i64::MAX),
    };
    for (occ, inst) in [
        ("o-a1", "a1"),
        ("o-b1", "b1"),
        ("o-n1", "n1"),
        ("o-a2", "a2"),
    ] {
        s.start_operation(&op_occ(occ, inst, LcmOperationStateType::Starting), &lease)
            .await
            .unwrap();
    }
    let occs = |scope: ProjectScope| {
        let list = move |after: Option<String>, limit: u32| {
            let q = OpOccQuery {
                scope: scope.clone(),
                after,
                limit: Some(limit),
                ..Default::default()
            };
            async move { s.list_op_occs(&q).await.unwrap() }
        };
        all_pages(1, list, |o: &VnfLcmOpOcc| o.id.0.clone())
    };
    assert_eq!(occs(scope("A")).await.0, ["o-a1", "o-a2"]);
    assert_eq!(occs(scope("B")).await.0, ["o-b1"]);
    assert_eq!(occs(ProjectScope::All).await.0.len(), 4);
    assert_eq!(
        s.project_of(ScopedKind::OpOcc, "o-n1").await.unwrap(),
        Some(None)
    );
    assert_eq!(
        s.project_of(ScopedKind::OpOcc, "o-b1").await.unwrap(),
        Some(Some("B".into()))
    );
}

async fn packages_subscriptions_and_alarms_are_listed_by_project(s: &dyn Store) {
    for (id, project) in [
        ("p1", Some("A")),
        ("p2", Some("B")),
        ("p3", None),
        ("p4", Some("A")),
    ] {
        s.create_package(&PackageRecord {
            id: id.into(),
            vnfd_id: None,
            info: json!({"id": id}),
            project: project.map(str::to_owned),
        })
        .await
        .unwrap();
    }
    // An update keeps the recorded project whatever the record says.
    let (mut p1, v) = s.get_package("p1").await.unwrap().unwrap();
    assert_eq!(p1.project.as_deref(), Some("A"));
    p1.project = Some("B".into());
    s.update_package(&p1, v).await.unwrap();
    assert_eq!(
        s.get_package("p1")
            .await
            .unwrap()
            .unwrap()
            .0
            .project
            .as_deref(),
        Some("A")
    );
    let packages = |scope: ProjectScope| {
        let list = move |after: Option<String>, limit: u32| {
            let scope = scope.clone();
            async move {
                s.list_packages(&scope, after.as_deref(), limit)
                    .await
                    .unwrap()
            }
        };
        all_pages(1, list, |p: &PackageRecord| p.id.clone())
    };
    assert_eq!(packages(scope("A")).await.0, ["p1", "p4"]);
    assert_eq!(packages(scope("B")).await.0, ["p2"]);
    assert_eq!(
        packages(ProjectScope::All).await.0,
        ["p1", "p2", "p3", "p4"]
    );
    assert_eq!(
        s.project_of(ScopedKind::Package, "p3").await.unwrap(),
        Some(None)
    );

    // Subscriptions of every kind record their project; each kind lists its own.
    let lccn = |id: &str| -> LccnSubscription {
        serde_json::from_value(json!({"id": id, "callbackUri": "http://nfvo/cb",
            "_links": {"self": {"href": format!("/vnflcm/v2/subscriptions/{id}")}}}))
        .unwrap()
    };
    let pkgm = |id: &str| -> PkgmSubscription {
        serde_json::from_value(json!({"id": id, "callbackUri": "http://nfvo/cb",
            "_links": {"self": {"href": format!("/vnfpkgm/v2/subscriptions/{id}")}}}))
        .unwrap()
    };
    let fm = |id: &str| -> FmSubscription {
        serde_json::from_value(json!({"id": id, "callbackUri": "http://nfvo/cb",
            "_links": {"self": {"href": format!("/vnffm/v1/subscriptions/{id}")}}}))
        .unwrap()
    };
    for (id, project) in [
        ("s1", Some("A")),
        ("s2", Some("B")),
        ("s3", None),
        ("s4", Some("A")),
    ] {
        let project = project.map(str::to_owned);
        s.create_subscription(&SubscriptionRecord::new(lccn(id), None).in_project(project.clone()))
            .await
            .unwrap();
        let pid = format!("pk{id}");
        s.create_subscription(
            &PkgmSubscriptionRecord::new(pkgm(&pid), None).in_project(project.clone()),
        )
        .await
        .unwrap();
        let fid = format!("fm{id}");
        s.create_subscription(&FmSubscriptionRecord::new(fm(&fid), None).in_project(project))
            .await
            .unwrap();
    }
    let got = s
        .get_subscription::<vnfm_types::LccnSubscription>(&vnfm_types::SubscriptionId::new("s2"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got.project.as_deref(), Some("B"));
    let lcm = |scope: ProjectScope| {
        let list = move |after: Option<String>, limit: u32| {
            let scope = scope.clone();
            async move {
                s.list_subscriptions::<vnfm_types::LccnSubscription>(
                    &scope,
                    after.as_deref(),
                    limit,
                )
                .await
                .unwrap()
            }
        };
        all_pages(1, list, |r: &SubscriptionRecord| {
            r.subscription.id.0.clone()
        })
    };
    assert_eq!(
        lcm(scope("A")).await,
        (vec!["s1".to_owned(), "s4".to_owned()], 2)
    );
    let pk_b = s
        .list_subscriptions::<vnfm_types::PkgmSubscription>(&scope("B"), None, 10)
        .await
        .unwrap();
    assert_eq!(pk_b.items.len(), 1);
    assert_eq!(pk_b.items[0].subscription.id.0, "pks2");
    let fm_a = s
        .list_subscriptions::<vnfm_types::FmSubscription>(&scope("A"), None, 10)
        .await
        .unwrap();
    let fm_ids: Vec<_> = fm_a
        .items
        .iter()
        .map(|r| r.subscription.id.0.clone())
        .collect();
    assert_eq!(fm_ids, ["fms1", "fms4"]);
    assert!(
        s.list_subscriptions::<vnfm_types::FmSubscription>(&ProjectScope::Nothing, None, 10)
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert_eq!(
        s.list_subscriptions::<vnfm_types::FmSubscription>(&ProjectScope::All, None, 10)
            .await
            .unwrap()
            .items
            .len(),
        4
    );
    assert_eq!(
        s.project_of(ScopedKind::Subscription, "pks4")
            .await
            .unwrap(),
        Some(Some("A".into()))
    );

    // Duplicates are looked for in the subscription's project only (NULL matches NULL).
    let filter = vnfm_store::canonical_filter(None);
    let dup = |project: Option<&'static str>| {
        let filter = filter.clone();
        async move {
            s.find_duplicate_subscription::<vnfm_types::LccnSubscription>(
                &filter,
                "http://nfvo/cb",
                project,
            )
            .await
            .unwrap()
            .map(|r| r.subscription.id.0)
        }
    };
    assert_eq!(dup(Some("A")).await.as_deref(), Some("s1"));
    assert_eq!(dup(Some("B")).await.as_deref(), Some("s2"));
    assert_eq!(dup(None).await.as_deref(), Some("s3"));
    assert_eq!(dup(Some("C")).await, None);
    let fm_dup = s
        .find_duplicate_subscription::<vnfm_types::FmSubscription>(
            &vnfm_store::canonical_fm_filter(None),
            "http://nfvo/cb",
            Some("B"),
        )
        .await
        .unwrap();
    assert_eq!(fm_dup.map(|r| r.subscription.id.0).as_deref(), Some("fms2"));

    // Alarms belong to the project of their instance (managedObjectId).
    s.create_instance_in(&instance("ia", "vnfd", None, &[]), Some("A"), &[])
        .await
        .unwrap();
    s.create_instance_in(&instance("ib", "vnfd", None, &[]), Some("B"), &[])
        .await
        .unwrap();
    let alarm = |id: &str, inst: &str| AlarmRecord {
        alarm: serde_json::from_value::<Alarm>(json!({
            "id": id, "managedObjectId": inst,
            "alarmRaisedTime": "2021-09-06T07:07:15Z", "ackState": "UNACKNOWLEDGED",
            "perceivedSeverity": "MAJOR", "eventTime": "2021-09-06T07:07:15Z",
            "eventType": "EQUIPMENT_ALARM", "probableCause": "down", "isRootCause": true,
            "_links": {"self": {"href": format!("/vnffm/v1/alarms/{id}")}}
        }))
        .unwrap(),
        dedup_key: id.into(),
    };
    for (id, inst) in [("al1", "ia"), ("al2", "ib"), ("al3", "ia"), ("al4", "gone")] {
        s.create_alarm(&alarm(id, inst), &[]).await.unwrap();
    }
    let alarms = |scope: ProjectScope| {
        let list = move |after: Option<String>, limit: u32| {
            let scope = scope.clone();
            async move {
                s.list_alarms(&scope, after.as_deref(), limit)
                    .await
                    .unwrap()
            }
        };
        all_pages(1, list, |(r, _): &(AlarmRecord, _)| r.alarm.id.clone())
    };
    assert_eq!(alarms(scope("A")).await.0, ["al1", "al3"]);
    assert_eq!(alarms(scope("B")).await.0, ["al2"]);
    assert_eq!(alarms(ProjectScope::All).await.0.len(), 4);
    assert_eq!(
        s.project_of(ScopedKind::Alarm, "al4").await.unwrap(),
        Some(None)
    );
}

/// `projects_of` answers for more ids than one statement binds (the store binds 500 a
/// statement), with each instance's project or none, and leaves out ids of nothing.
async fn projects_of_answers_many_ids_in_one_call(s: &dyn Store) {
    let project_of = |i: usize| match i % 3 {
        0 => Some("A"),
        1 => Some("B"),
        _ => None,
    };
    let ids: Vec<String> = (0..520).map(|i| format!("m{i:03}")).collect();
    for (i, id) in ids.iter().enumerate() {
        s.create_instance_in(&instance(id, "vnfd", Some(id), &[]), project_of(i), &[])
            .await
            .unwrap();
    }
    let mut asked: Vec<&str> = ids.iter().map(String::as_str).collect();
    asked.insert(260, "missing");
    let mut found = s.projects_of(ScopedKind::Instance, &asked).await.unwrap();
    found.sort();
    let expected: Vec<(String, Option<String>)> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.clone(), project_of(i).map(str::to_owned)))
        .collect();
    assert_eq!(found, expected);
    assert_eq!(s.projects_of(ScopedKind::Instance, &[]).await.unwrap(), []);
}

#[test]
fn a_scope_admits_its_own_project_only() {
    let a = ProjectScope::of(false, Some("A"));
    assert_eq!(a, scope("A"));
    assert!(a.admits(Some("A")));
    assert!(!a.admits(Some("B")));
    assert!(
        !a.admits(None),
        "resources of no project are for all-projects callers"
    );
    let all = ProjectScope::of(true, Some("A"));
    assert!(all.admits(Some("B")) && all.admits(None));
    let nothing = ProjectScope::of(false, None);
    assert!(!nothing.admits(None) && !nothing.admits(Some("A")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_projects() {
    let db = TestDb::sqlite().await;
    instances_and_op_occs_are_listed_by_project(&*db.store).await;
    packages_subscriptions_and_alarms_are_listed_by_project(&*db.store).await;
    projects_of_answers_many_ids_in_one_call(&*db.store).await;
    db.finish().await;
}

#[vnfm_test_env::needs(postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_projects() {
    let db = TestDb::postgres().await;
    instances_and_op_occs_are_listed_by_project(&*db.store).await;
    packages_subscriptions_and_alarms_are_listed_by_project(&*db.store).await;
    projects_of_answers_many_ids_in_one_call(&*db.store).await;
    db.finish().await;
}
