//! Project scoping in the store (migration 11): what each kind of resource records, and lists
//! whose scope is a predicate of the query, so pages stay full and keyset cursors exact. On
//! SQLite (temp file) and PostgreSQL (`VNFM_TEST_POSTGRES_URL`; skipped loudly when unset).

mod common;

use serde_json::json;
use vnfm_store::{
    AlarmRecord, FmSubscriptionRecord, InstanceQuery, Lease, OpOccQuery, PackageRecord,
    PkgmSubscriptionRecord, ProjectScope, ScopedKind, Store, SubscriptionRecord, Timestamp,
};
use vnfm_types::{
    Alarm, FmSubscription, LccnSubscription, LcmOperationStateType, PkgmSubscription,
};

use common::{TestDb, instance, op_occ};

fn scope(p: &str) -> ProjectScope {
    ProjectScope::Project(p.into())
}

/// Every id of every page of `list`, asking for pages of `limit`, and the number of pages.
async fn all_pages<F, Fut>(limit: u32, mut list: F) -> (Vec<String>, usize)
where
    F: FnMut(Option<String>, u32) -> Fut,
    Fut: std::future::Future<Output = (Vec<String>, Option<String>)>,
{
    let (mut ids, mut pages, mut after) = (Vec::new(), 0, None);
    loop {
        let (items, next) = list(after.clone(), limit).await;
        assert!(items.len() <= limit as usize, "page larger than {limit}");
        pages += 1;
        ids.extend(items);
        match next {
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
    let list = |scope: ProjectScope| {
        move |after: Option<String>, limit: u32| {
            let scope = scope.clone();
            async move {
                let q = InstanceQuery {
                    scope,
                    after,
                    limit: Some(limit),
                    ..Default::default()
                };
                let page = s.list_instances(&q).await.unwrap();
                let ids = page.items.iter().map(|i| i.id.0.clone()).collect();
                (ids, page.next)
            }
        }
    };
    let (a, pages) = all_pages(2, list(scope("A"))).await;
    assert_eq!(a, ["a1", "a2", "a3", "a4", "a5"]);
    assert_eq!(pages, 3, "pages of 2 visible rows each");
    assert_eq!(all_pages(2, list(scope("B"))).await.0, ["b1", "b2", "b3"]);
    assert!(all_pages(2, list(scope("C"))).await.0.is_empty());
    assert!(all_pages(2, list(ProjectScope::Nothing)).await.0.is_empty());
    assert_eq!(all_pages(4, list(ProjectScope::All)).await.0.len(), 9);
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
    let occs = |scope: ProjectScope| async move {
        let q = OpOccQuery {
            scope,
            limit: Some(1),
            ..Default::default()
        };
        let mut ids = Vec::new();
        let mut q = q;
        loop {
            let page = s.list_op_occs(&q).await.unwrap();
            ids.extend(page.items.into_iter().map(|o| o.id.0));
            match page.next {
                Some(n) => q.after = Some(n),
                None => return ids,
            }
        }
    };
    assert_eq!(occs(scope("A")).await, ["o-a1", "o-a2"]);
    assert_eq!(occs(scope("B")).await, ["o-b1"]);
    assert_eq!(occs(ProjectScope::All).await.len(), 4);
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
    let packages = |scope: ProjectScope| async move {
        let (mut ids, mut after) = (Vec::new(), None);
        loop {
            let page = s.list_packages(&scope, after.as_deref(), 1).await.unwrap();
            ids.extend(page.items.into_iter().map(|p| p.id));
            match page.next {
                Some(n) => after = Some(n),
                None => return ids,
            }
        }
    };
    assert_eq!(packages(scope("A")).await, ["p1", "p4"]);
    assert_eq!(packages(scope("B")).await, ["p2"]);
    assert_eq!(packages(ProjectScope::All).await, ["p1", "p2", "p3", "p4"]);
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
        s.create_pkgm_subscription(
            &PkgmSubscriptionRecord::new(pkgm(&pid), None).in_project(project.clone()),
        )
        .await
        .unwrap();
        let fid = format!("fm{id}");
        s.create_fm_subscription(&FmSubscriptionRecord::new(fm(&fid), None).in_project(project))
            .await
            .unwrap();
    }
    let got = s
        .get_subscription(&vnfm_types::SubscriptionId::new("s2"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got.project.as_deref(), Some("B"));
    let ids = |page: Vec<String>| page;
    let lcm_a = s.list_subscriptions(&scope("A"), None, 1).await.unwrap();
    assert_eq!(
        ids(lcm_a
            .items
            .iter()
            .map(|r| r.subscription.id.0.clone())
            .collect()),
        ["s1"]
    );
    let lcm_a2 = s
        .list_subscriptions(&scope("A"), lcm_a.next.as_deref(), 1)
        .await
        .unwrap();
    assert_eq!(lcm_a2.items[0].subscription.id.0, "s4");
    assert_eq!(lcm_a2.next, None);
    let pk_b = s
        .list_pkgm_subscriptions(&scope("B"), None, 10)
        .await
        .unwrap();
    assert_eq!(pk_b.items.len(), 1);
    assert_eq!(pk_b.items[0].subscription.id.0, "pks2");
    let fm_a = s
        .list_fm_subscriptions(&scope("A"), None, 10)
        .await
        .unwrap();
    let fm_ids: Vec<_> = fm_a
        .items
        .iter()
        .map(|r| r.subscription.id.0.clone())
        .collect();
    assert_eq!(fm_ids, ["fms1", "fms4"]);
    assert!(
        s.list_fm_subscriptions(&ProjectScope::Nothing, None, 10)
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert_eq!(
        s.list_fm_subscriptions(&ProjectScope::All, None, 10)
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
            s.find_duplicate_subscription(&filter, "http://nfvo/cb", project)
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
        .find_duplicate_fm_subscription(
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
    let alarms = |scope: ProjectScope| async move {
        let (mut ids, mut after) = (Vec::new(), None);
        loop {
            let page = s.list_alarms(&scope, after.as_deref(), 1).await.unwrap();
            ids.extend(page.items.into_iter().map(|(r, _)| r.alarm.id));
            match page.next {
                Some(n) => after = Some(n),
                None => return ids,
            }
        }
    };
    assert_eq!(alarms(scope("A")).await, ["al1", "al3"]);
    assert_eq!(alarms(scope("B")).await, ["al2"]);
    assert_eq!(alarms(ProjectScope::All).await.len(), 4);
    assert_eq!(
        s.project_of(ScopedKind::Alarm, "al4").await.unwrap(),
        Some(None)
    );
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
    db.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_projects() {
    let Some(db) = TestDb::postgres("postgres_projects").await else {
        return;
    };
    instances_and_op_occs_are_listed_by_project(&*db.store).await;
    packages_subscriptions_and_alarms_are_listed_by_project(&*db.store).await;
    db.finish().await;
}
