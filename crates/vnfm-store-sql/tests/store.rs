//! Behaviour of the store, written once against `Arc<dyn Store>` and run on SQLite (temp file)
//! and PostgreSQL (`VNFM_TEST_POSTGRES_URL`; skipped loudly when unset).

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use vnfm_store::SubscriptionStore;

use futures_util::StreamExt;
use serde_json::json;
use vnfm_store::{
    Conflict, InstanceQuery, JournalStep, Lease, NameFilter, NewOutboxRow, OpOccQuery,
    OutboxStatus, OutboxSummary, PackageRecord, PkgmSubscriptionRecord, ProjectScope, StepOutcome,
    StepRecord, Store, StoreError, SubscriptionRecord, Timestamp, Version, VimRecord,
    canonical_filter, canonical_pkgm_filter,
};
use vnfm_types::{
    InstantiationState, LccnSubscription, LcmOperationStateType as S, LcmOperationType,
    SubscriptionId, VimId, VnfInstance, VnfInstanceId, VnfLcmOpOccId, VnfdId,
};

use common::{TestDb, in_state, instance, op_occ};

macro_rules! store_tests {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let db = super::TestDb::sqlite().await;
                    super::$name(&db).await;
                    db.finish().await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let Some(db) = super::TestDb::postgres(stringify!($name)).await else {
                        return;
                    };
                    super::$name(&db).await;
                    db.finish().await;
                }
            )*
        }
    };
}

store_tests!(
    instance_crud_round_trips_exact_json,
    instance_updates_are_compare_and_swap,
    list_instances_filters_and_pages,
    stream_instances_fetches_lazily,
    start_operation_conflicts_in_every_non_final_state,
    concurrent_starts_on_one_instance_admit_exactly_one,
    concurrent_starts_from_two_processes_admit_exactly_one,
    record_step_with_lost_lease_writes_nothing,
    record_step_is_atomic_across_op_occ_instance_journal_outbox,
    failed_temp_drops_the_lease_and_operator_claims_it,
    claim_expired_gives_each_op_occ_to_exactly_one_claimer,
    list_op_occs_filters_and_pages,
    op_occ_data_survives_and_is_scoped,
    outbox_claims_retries_and_dead_letters,
    concurrent_outbox_claims_are_disjoint,
    outbox_queues_deliver_in_enqueue_order,
    dead_letters_are_counted_redelivered_in_their_queue_and_discarded,
    concurrent_senders_keep_each_queue_in_order,
    subscriptions_round_trip_and_detect_duplicates,
    vims_and_the_index_of_instances_using_them,
    vim_index_follows_references_and_resources,
    migrations_apply_on_empty_and_refuse_newer_schema,
    packages_round_trip_with_unique_vnfd_and_content,
    package_content_is_streamed_in_and_out_in_pieces,
    pkgm_subscriptions_share_ids_with_lcm_ones_but_stay_apart,
    package_changes_enqueue_their_notifications_atomically,
    settings_are_stored_replaced_and_removed,
);

const T0: Timestamp = Timestamp(1_000_000);

fn lease(owner: &str, until: Timestamp) -> Lease {
    Lease::new(owner, until)
}

fn step(name: &str, outcome: StepOutcome) -> JournalStep {
    JournalStep {
        step: name.into(),
        outcome,
        at: T0,
        detail: json!({"step": name}),
    }
}

fn note(sub: &str, n: i64, not_before: Timestamp) -> NewOutboxRow {
    NewOutboxRow {
        subscription_id: SubscriptionId::new(sub),
        callback_uri: format!("http://nfvo/callback/{sub}"),
        payload: json!({"notificationType": "VnfLcmOperationOccurrenceNotification", "n": n}),
        not_before,
        // A queue of its own: these rows are independent of each other.
        ordering_key: format!("key-{n}"),
    }
}

/// Row `n` in queue `key` of subscription `sub`.
fn queued(sub: &str, key: &str, n: i64) -> NewOutboxRow {
    NewOutboxRow {
        ordering_key: key.into(),
        ..note(sub, n, Timestamp(0))
    }
}

fn numbers(rows: &[vnfm_store::OutboxRow]) -> Vec<i64> {
    rows.iter()
        .filter_map(|r| r.payload["n"].as_i64())
        .collect()
}

/// A record_step from `from` (at `version`) to `to`, by `owner`, writing nothing else.
fn transition(
    occ: &vnfm_types::VnfLcmOpOcc,
    from: vnfm_types::LcmOperationStateType,
    to: vnfm_types::LcmOperationStateType,
    version: Version,
    owner: &str,
) -> StepRecord {
    StepRecord {
        occ: in_state(occ, to),
        expected_state: from,
        expected_version: version,
        owner: owner.into(),
        journal: None,
        instance: None,
        outbox: Vec::new(),
        data: Vec::new(),
    }
}

async fn outbox_all(store: &dyn Store) -> Vec<vnfm_store::OutboxRow> {
    store.outbox_pending_rows(None, 1000).await.unwrap()
}

fn assert_busy(err: StoreError, holder: &str, state: vnfm_types::LcmOperationStateType) {
    match &err {
        StoreError::Conflict(Conflict::InstanceBusy {
            op_occ_id,
            state: s,
            ..
        }) => {
            assert_eq!(op_occ_id.as_str(), holder);
            assert_eq!(*s, state);
            let msg = err.to_string();
            assert!(msg.contains(holder), "{msg}");
            assert!(msg.contains(vnfm_store::state_str(state)), "{msg}");
        }
        other => panic!("expected InstanceBusy by {holder}, got {other:?}"),
    }
}

async fn instance_crud_round_trips_exact_json(db: &TestDb) {
    let s = db.store.as_ref();
    let inst = instance("i-1", "vnfd-a", Some("first"), &["vim-1"]);
    let original_json = serde_json::to_string(&inst).unwrap();
    assert_eq!(s.create_instance(&inst, &[]).await.unwrap(), Version(1));

    let (got, version) = s.get_instance(&inst.id).await.unwrap().unwrap();
    assert_eq!(version, Version(1));
    assert_eq!(got, inst);
    // Member order of free-form maps (metadata) and non-ASCII text survive byte for byte.
    assert_eq!(serde_json::to_string(&got).unwrap(), original_json);

    let dup = s.create_instance(&inst, &[]).await.unwrap_err();
    assert!(
        matches!(dup, StoreError::Conflict(Conflict::AlreadyExists { .. })),
        "{dup:?}"
    );
    assert!(
        s.get_instance(&VnfInstanceId::new("nope"))
            .await
            .unwrap()
            .is_none()
    );

    // Creation notifications are enqueued with the instance.
    let other = instance("i-2", "vnfd-a", None, &[]);
    s.create_instance(&other, &[note("sub-1", 1, T0)])
        .await
        .unwrap();
    let rows = outbox_all(s).await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].payload["n"], json!(1));

    // Deletion: stale version refused, current accepted, notification enqueued.
    let err = s
        .delete_instance(&inst.id, Version(7), &[])
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::VersionMismatch {
                found: Version(1),
                ..
            }
        ),
        "{err:?}"
    );
    s.delete_instance(&inst.id, Version(1), &[note("sub-1", 2, T0)])
        .await
        .unwrap();
    assert!(s.get_instance(&inst.id).await.unwrap().is_none());
    let err = s
        .delete_instance(&inst.id, Version(1), &[])
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }), "{err:?}");
    assert!(
        outbox_all(s)
            .await
            .iter()
            .any(|r| r.payload["n"] == json!(2))
    );
}

async fn instance_updates_are_compare_and_swap(db: &TestDb) {
    let s = db.store.as_ref();
    let mut inst = instance("i-cas", "vnfd-a", Some("before"), &[]);
    s.create_instance(&inst, &[]).await.unwrap();

    inst.vnf_instance_name = Some("after".into());
    inst.instantiation_state = InstantiationState::Instantiated;
    assert_eq!(
        s.update_instance(&inst, Version(1)).await.unwrap(),
        Version(2)
    );

    // A writer that read version 1 loses and changes nothing.
    let mut stale = inst.clone();
    stale.vnf_instance_name = Some("stale".into());
    let err = s.update_instance(&stale, Version(1)).await.unwrap_err();
    match &err {
        StoreError::VersionMismatch {
            expected, found, ..
        } => {
            assert_eq!((*expected, *found), (Version(1), Version(2)));
        }
        other => panic!("{other:?}"),
    }
    let (got, v) = s.get_instance(&inst.id).await.unwrap().unwrap();
    assert_eq!(
        (got.vnf_instance_name.as_deref(), v),
        (Some("after"), Version(2))
    );

    // The indexed columns follow the document.
    let page = s
        .list_instances(&InstanceQuery {
            instantiation_state: Some(InstantiationState::Instantiated),
            name: Some(NameFilter::Exact("after".into())),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(page.items.len(), 1);

    // Each indexed column follows on its own (the store writes only the changed ones), and an
    // update that changes none of them keeps every entry.
    let found = |q: InstanceQuery| async move {
        s.list_instances(&q)
            .await
            .unwrap()
            .items
            .into_iter()
            .map(|i| i.id.0)
            .collect::<Vec<_>>()
    };
    let by_vnfd = |v: &str| InstanceQuery {
        vnfd_id: Some(VnfdId::new(v)),
        ..Default::default()
    };
    let by_provider = |v: &str| InstanceQuery {
        vnf_provider: Some(v.into()),
        ..Default::default()
    };
    let by_product = |v: &str| InstanceQuery {
        vnf_product_name: Some(v.into()),
        ..Default::default()
    };
    let by_name = |v: &str| InstanceQuery {
        name: Some(NameFilter::Exact(v.into())),
        ..Default::default()
    };
    let mut version = Version(2);
    let mut update = |inst: VnfInstance| {
        version = Version(version.0 + 1);
        let expected = Version(version.0 - 1);
        async move {
            assert_eq!(
                s.update_instance(&inst, expected).await.unwrap(),
                Version(expected.0 + 1)
            );
        }
    };
    let id = vec![inst.id.0.clone()];
    inst.vnfd_id = VnfdId::new("vnfd-b");
    update(inst.clone()).await;
    assert_eq!(found(by_vnfd("vnfd-b")).await, id);
    assert!(found(by_vnfd("vnfd-a")).await.is_empty());
    let provider = format!("{}-2", inst.vnf_provider);
    inst.vnf_provider = provider.clone();
    update(inst.clone()).await;
    assert_eq!(found(by_provider(&provider)).await, id);
    let product = format!("{}-2", inst.vnf_product_name);
    inst.vnf_product_name = product.clone();
    update(inst.clone()).await;
    assert_eq!(found(by_product(&product)).await, id);
    inst.vnf_instance_name = None;
    update(inst.clone()).await;
    assert!(found(by_name("after")).await.is_empty());
    inst.vnf_instance_name = Some("again".into());
    inst.vnf_instance_description = Some("only the document changes next".into());
    update(inst.clone()).await;
    inst.vnf_instance_description = Some("the document alone".into());
    update(inst.clone()).await;
    let all = InstanceQuery {
        vnfd_id: Some(VnfdId::new("vnfd-b")),
        vnf_provider: Some(provider.clone()),
        vnf_product_name: Some(product.clone()),
        instantiation_state: Some(InstantiationState::Instantiated),
        name: Some(NameFilter::Exact("again".into())),
        ..Default::default()
    };
    assert_eq!(found(all).await, id);
    let (got, v) = s.get_instance(&inst.id).await.unwrap().unwrap();
    assert_eq!((got, v), (inst.clone(), Version(8)));

    let missing = instance("i-missing", "vnfd-a", None, &[]);
    let err = s.update_instance(&missing, Version(1)).await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }), "{err:?}");
}

/// A document without the members a list leaves out by default.
fn default_view(mut doc: serde_json::Value) -> serde_json::Value {
    for m in vnfm_sol013::defaults::v2::VNF_INSTANCE_EXCLUDED {
        doc.as_object_mut().unwrap().remove(*m);
    }
    doc
}

async fn list_instances_filters_and_pages(db: &TestDb) {
    let s = db.store.as_ref();
    for i in 0..250 {
        let vnfd = if i % 5 == 0 { "vnfd-x" } else { "vnfd-y" };
        let mut inst = instance(
            &format!("inst-{i:04}"),
            vnfd,
            Some(&format!("name-{}", i % 10)),
            &[],
        );
        if i % 2 == 0 {
            inst.vnf_provider = "Other".into();
        }
        if i % 3 == 0 {
            inst.vnf_product_name = "Product3".into();
        }
        if i % 7 == 0 {
            inst.instantiation_state = InstantiationState::Instantiated;
        }
        s.create_instance(&inst, &[]).await.unwrap();
    }

    async fn all(s: &dyn Store, mut q: InstanceQuery) -> Vec<String> {
        let mut ids = Vec::new();
        let mut pages = 0;
        loop {
            let page = s.list_instances(&q).await.unwrap();
            pages += 1;
            assert!(page.items.len() <= q.limit.unwrap_or(100) as usize);
            ids.extend(page.items.iter().map(|i| i.id.0.clone()));
            // The same page as documents: the same items, as JSON, and the same cursor.
            let docs = s.list_instance_documents(&q).await.unwrap();
            assert_eq!(docs.next, page.next);
            let typed: Vec<serde_json::Value> = page
                .items
                .iter()
                .map(|i| serde_json::to_value(i).unwrap())
                .collect();
            assert_eq!(docs.items, typed);
            // The same page as default views: the documents without the default exclusions.
            let views = s.list_instance_default_views(&q).await.unwrap();
            assert_eq!(views.next, page.next);
            let views: Vec<serde_json::Value> = views
                .items
                .iter()
                .map(|t| serde_json::from_str(t).unwrap())
                .collect();
            assert_eq!(
                views,
                typed.into_iter().map(default_view).collect::<Vec<_>>()
            );
            match page.next {
                Some(next) => q.after = Some(next),
                None => break,
            }
            assert!(pages < 1000, "pagination does not terminate");
        }
        ids
    }
    let expect = |pred: &dyn Fn(usize) -> bool| -> Vec<String> {
        (0..250)
            .filter(|i| pred(*i))
            .map(|i| format!("inst-{i:04}"))
            .collect()
    };
    let q = |f: fn(&mut InstanceQuery)| {
        let mut q = InstanceQuery {
            limit: Some(7),
            ..Default::default()
        };
        f(&mut q);
        q
    };

    assert_eq!(all(s, q(|_| {})).await, expect(&|_| true));
    assert_eq!(
        all(s, q(|q| q.vnfd_id = Some(VnfdId::new("vnfd-x")))).await,
        expect(&|i| i % 5 == 0)
    );
    assert_eq!(
        all(s, q(|q| q.vnf_provider = Some("Other".into()))).await,
        expect(&|i| i % 2 == 0)
    );
    assert_eq!(
        all(s, q(|q| q.vnf_product_name = Some("Product3".into()))).await,
        expect(&|i| i % 3 == 0)
    );
    assert_eq!(
        all(
            s,
            q(|q| q.instantiation_state = Some(InstantiationState::Instantiated))
        )
        .await,
        expect(&|i| i % 7 == 0)
    );
    assert_eq!(
        all(s, q(|q| q.name = Some(NameFilter::Exact("name-3".into())))).await,
        expect(&|i| i % 10 == 3)
    );
    // Contains is case-sensitive and matches inside the name.
    assert_eq!(
        all(s, q(|q| q.name = Some(NameFilter::Contains("e-4".into())))).await,
        expect(&|i| i % 10 == 4)
    );
    assert!(
        all(s, q(|q| q.name = Some(NameFilter::Contains("NAME".into()))))
            .await
            .is_empty()
    );
    // Combined filters all apply.
    assert_eq!(
        all(
            s,
            q(|q| {
                q.vnfd_id = Some(VnfdId::new("vnfd-x"));
                q.vnf_provider = Some("Other".into());
            })
        )
        .await,
        expect(&|i| i % 10 == 0)
    );
    assert_eq!(
        all(
            s,
            q(|q| {
                q.ids = Some(vec![
                    VnfInstanceId::new("inst-0003"),
                    VnfInstanceId::new("inst-0100"),
                    VnfInstanceId::new("absent"),
                ])
            })
        )
        .await,
        vec!["inst-0003".to_string(), "inst-0100".to_string()]
    );
    assert!(all(s, q(|q| q.ids = Some(vec![]))).await.is_empty());
    // `name_not` leaves out the name and, as SOL013 `neq`, instances without one.
    assert_eq!(
        all(s, q(|q| q.name_not = Some("name-3".into()))).await,
        expect(&|i| i % 10 != 3)
    );

    // Exact page boundary: 250 rows in pages of 125 give two pages and no third.
    let first = s
        .list_instances(&InstanceQuery {
            limit: Some(125),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(first.next.as_deref(), Some("inst-0124"));
    let second = s
        .list_instances(&InstanceQuery {
            limit: Some(125),
            after: first.next,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(second.items.len(), 125);
    assert_eq!(second.next, None);

    // A substring is matched literally: `%`, `_` and `\` are not wildcards or escapes.
    for (id, name) in [("w-1", "50%_off"), ("w-2", "50 off"), ("w-3", "a\\b")] {
        s.create_instance(&instance(id, "vnfd-w", Some(name), &[]), &[])
            .await
            .unwrap();
    }
    let w = |part: &'static str| {
        let mut q = InstanceQuery {
            vnfd_id: Some(VnfdId::new("vnfd-w")),
            ..Default::default()
        };
        q.name = Some(NameFilter::Contains(part.into()));
        q
    };
    assert_eq!(all(s, w("%_")).await, ["w-1"]);
    assert_eq!(all(s, w("0_")).await, Vec::<String>::new());
    assert_eq!(all(s, w("\\")).await, ["w-3"]);
    assert_eq!(all(s, w("50")).await, ["w-1", "w-2"]);

    // An update rewrites the default view with the document.
    let (mut first, v) = s
        .get_instance(&VnfInstanceId::new("inst-0000"))
        .await
        .unwrap()
        .unwrap();
    first.vnf_instance_name = Some("renamed".into());
    first.metadata = Some(serde_json::from_value(serde_json::json!({"k": "v"})).unwrap());
    s.update_instance(&first, v).await.unwrap();
    let views = s
        .list_instance_default_views(&q(|q| q.name = Some(NameFilter::Exact("renamed".into()))))
        .await
        .unwrap();
    let view: serde_json::Value = serde_json::from_str(&views.items[0]).unwrap();
    assert_eq!(view["vnfInstanceName"], "renamed");
    assert!(view.get("metadata").is_none(), "{view}");
    assert_eq!(view, default_view(serde_json::to_value(&first).unwrap()));
}

async fn stream_instances_fetches_lazily(db: &TestDb) {
    let s = db.store.clone();
    let total = 10_000;
    // Batched creation through several tasks keeps the PostgreSQL run short.
    let mut tasks = Vec::new();
    for t in 0..8 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            let mut i = t;
            while i < total {
                s.create_instance(&instance(&format!("s-{i:05}"), "vnfd", None, &[]), &[])
                    .await
                    .unwrap();
                i += 8;
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }

    let mut stream = s.stream_instances(&InstanceQuery {
        limit: Some(100),
        ..Default::default()
    });
    let mut seen = Vec::with_capacity(total + 10);
    for _ in 0..150 {
        seen.push(stream.next().await.unwrap().unwrap().id.0);
    }
    // Rows created now after the cursor appear at the end; one sorting before the cursor
    // does not. A stream that had read everything up front would show neither.
    s.create_instance(&instance("s-99999", "vnfd", None, &[]), &[])
        .await
        .unwrap();
    s.create_instance(&instance("s-00000a", "vnfd", None, &[]), &[])
        .await
        .unwrap();
    while let Some(item) = stream.next().await {
        seen.push(item.unwrap().id.0);
    }
    assert_eq!(seen.len(), total + 1);
    assert_eq!(seen.last().map(String::as_str), Some("s-99999"));
    assert!(!seen.iter().any(|id| id == "s-00000a"));
    assert!(
        seen.windows(2).all(|w| w[0] < w[1]),
        "stream is not ordered"
    );

    // A filtered stream from a cursor.
    let filtered: Vec<String> = s
        .stream_instances(&InstanceQuery {
            ids: Some(
                (0..10)
                    .map(|i| VnfInstanceId::new(format!("s-0000{i}")))
                    .collect(),
            ),
            after: Some("s-00004".into()),
            limit: Some(2),
            ..Default::default()
        })
        .map(|r| r.unwrap().id.0)
        .collect()
        .await;
    assert_eq!(
        filtered,
        (5..10).map(|i| format!("s-0000{i}")).collect::<Vec<_>>()
    );
}

async fn start_operation_conflicts_in_every_non_final_state(db: &TestDb) {
    let s = db.store.as_ref();
    let finals = [S::Completed, S::Failed, S::RolledBack];
    for (n, held) in [S::Starting, S::Processing, S::RollingBack, S::FailedTemp]
        .into_iter()
        .enumerate()
    {
        let inst = format!("busy-{n}");
        s.create_instance(&instance(&inst, "vnfd", None, &[]), &[])
            .await
            .unwrap();
        let a = op_occ(&format!("{inst}-a"), &inst, S::Starting);
        s.start_operation(&a, &lease("r1", T0)).await.unwrap();
        let mut version = Version(1);
        if held != S::Starting {
            version = s
                .record_step(&transition(&a, S::Starting, held, version, "r1"))
                .await
                .unwrap()
                .op_occ_version;
        }

        let b = op_occ(&format!("{inst}-b"), &inst, S::Starting);
        let err = s.start_operation(&b, &lease("r2", T0)).await.unwrap_err();
        assert_busy(err, a.id.as_str(), held);
        let (active, _) = s
            .active_op_occ(&VnfInstanceId::new(&inst))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(active.id, a.id);
        // The instance cannot be deleted while held either.
        let err = s
            .delete_instance(&VnfInstanceId::new(&inst), Version(1), &[])
            .await
            .unwrap_err();
        assert_busy(err, a.id.as_str(), held);

        // Once the holder is final, the next operation may start.
        let fin = finals[n % finals.len()];
        let owner = if held == S::FailedTemp {
            // FAILED_TEMP has no lease: take it as the operator would.
            s.claim_operation(&a.id, version, &lease("op", T0), T0)
                .await
                .unwrap();
            "op"
        } else {
            "r1"
        };
        s.record_step(&transition(&a, held, fin, version, owner))
            .await
            .unwrap();
        assert!(
            s.active_op_occ(&VnfInstanceId::new(&inst))
                .await
                .unwrap()
                .is_none()
        );
        s.start_operation(&b, &lease("r2", T0)).await.unwrap();
    }

    // Refusals that are not about the lock.
    let err = s
        .start_operation(
            &op_occ("x", "no-such-instance", S::Starting),
            &lease("r", T0),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }), "{err:?}");
    let err = s
        .start_operation(&op_occ("y", "busy-0", S::Processing), &lease("r", T0))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Invalid(_)), "{err:?}");
    // Re-using an op-occ id of a finished occurrence is refused.
    s.create_instance(&instance("fresh", "vnfd", None, &[]), &[])
        .await
        .unwrap();
    let err = s
        .start_operation(&op_occ("busy-0-a", "fresh", S::Starting), &lease("r", T0))
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::Conflict(Conflict::AlreadyExists { .. })),
        "{err:?}"
    );
}

async fn race_starts(stores: Vec<Arc<dyn Store>>, instance_id: &str, n: usize) {
    let mut tasks = Vec::new();
    for i in 0..n {
        let s = stores[i % stores.len()].clone();
        let occ = op_occ(&format!("race-{i:02}"), instance_id, S::Starting);
        tasks.push(tokio::spawn(async move {
            (
                occ.id.clone(),
                s.start_operation(&occ, &lease(&format!("runner-{i}"), T0))
                    .await,
            )
        }));
    }
    let mut winners = Vec::new();
    let mut losers = Vec::new();
    for t in tasks {
        let (id, r) = t.await.unwrap();
        match r {
            Ok(_) => winners.push(id),
            Err(e) => losers.push(e),
        }
    }
    assert_eq!(winners.len(), 1, "winners: {winners:?}");
    assert_eq!(losers.len(), n - 1);
    for e in losers {
        assert_busy(e, winners[0].as_str(), S::Starting);
    }
    let page = stores[0]
        .list_op_occs(&OpOccQuery {
            vnf_instance_id: Some(VnfInstanceId::new(instance_id)),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(page.items.len(), 1);
    assert_eq!(page.items[0].id, winners[0]);
}

async fn concurrent_starts_on_one_instance_admit_exactly_one(db: &TestDb) {
    db.store
        .create_instance(&instance("contended", "vnfd", None, &[]), &[])
        .await
        .unwrap();
    race_starts(vec![db.store.clone()], "contended", 50).await;
}

async fn concurrent_starts_from_two_processes_admit_exactly_one(db: &TestDb) {
    db.store
        .create_instance(&instance("contended2", "vnfd", None, &[]), &[])
        .await
        .unwrap();
    let second = db.reopen().await.unwrap();
    race_starts(vec![db.store.clone(), second], "contended2", 50).await;
}

async fn record_step_with_lost_lease_writes_nothing(db: &TestDb) {
    let s = db.store.as_ref();
    let inst = instance("i-lease", "vnfd", None, &[]);
    s.create_instance(&inst, &[]).await.unwrap();
    let occ = op_occ("o-lease", "i-lease", S::Starting);
    s.start_operation(&occ, &lease("r1", Timestamp(1000)))
        .await
        .unwrap();

    // r1 stalls past its lease; r2 recovers the op-occ.
    let claimed = s
        .claim_expired("r2", Timestamp(2000), Timestamp(60_000), 10)
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].0.id, occ.id);
    assert_eq!(claimed[0].1, Version(1));

    let mut changed = inst.clone();
    changed.vnf_instance_name = Some("by the stale runner".into());
    let stale = StepRecord {
        occ: in_state(&occ, S::Processing),
        expected_state: S::Starting,
        expected_version: Version(1),
        owner: "r1".into(),
        journal: Some(step("grant", StepOutcome::Completed)),
        instance: Some((changed, Version(1))),
        outbox: vec![note("sub", 1, T0)],
        data: Vec::new(),
    };
    let err = s.record_step(&stale).await.unwrap_err();
    assert!(err.is_lease_lost(), "{err:?}");
    match &err {
        StoreError::Conflict(Conflict::LeaseLost { holder, .. }) => {
            assert_eq!(holder.as_deref(), Some("r2"));
        }
        other => panic!("{other:?}"),
    }
    assert!(s.journal(&occ.id).await.unwrap().is_empty());
    assert!(outbox_all(s).await.is_empty());
    let (got, v) = s.get_instance(&inst.id).await.unwrap().unwrap();
    assert_eq!((got, v), (inst.clone(), Version(1)));
    let (got_occ, v) = s.get_op_occ(&occ.id).await.unwrap().unwrap();
    assert_eq!((got_occ.operation_state, v), (S::Starting, Version(1)));
    // The stale runner cannot renew or release either.
    assert!(
        s.renew_lease(&occ.id, "r1", Timestamp(99_000))
            .await
            .unwrap_err()
            .is_lease_lost()
    );
    assert!(
        s.release_lease(&occ.id, "r1")
            .await
            .unwrap_err()
            .is_lease_lost()
    );

    // The new owner's identical step goes through.
    let written = s
        .record_step(&StepRecord {
            owner: "r2".into(),
            ..stale
        })
        .await
        .unwrap();
    assert_eq!(written.op_occ_version, Version(2));
    assert_eq!(written.instance_version, Some(Version(2)));
    assert_eq!(written.journal_seq, Some(1));
    assert_eq!(outbox_all(s).await.len(), 1);
}

async fn record_step_is_atomic_across_op_occ_instance_journal_outbox(db: &TestDb) {
    let s = db.store.as_ref();
    let inst = instance("i-atomic", "vnfd", None, &[]);
    s.create_instance(&inst, &[]).await.unwrap();
    let occ = op_occ("o-atomic", "i-atomic", S::Starting);
    s.start_operation(&occ, &lease("r1", Timestamp(i64::MAX)))
        .await
        .unwrap();
    // Someone else changed the instance meanwhile.
    let mut meanwhile = inst.clone();
    meanwhile.vnf_instance_name = Some("meanwhile".into());
    s.update_instance(&meanwhile, Version(1)).await.unwrap();

    // The op-occ compare-and-swap would succeed, the instance one fails: all is rolled back.
    let record = StepRecord {
        occ: in_state(&occ, S::Processing),
        expected_state: S::Starting,
        expected_version: Version(1),
        owner: "r1".into(),
        journal: Some(step("grant", StepOutcome::Completed)),
        instance: Some((inst.clone(), Version(1))),
        outbox: vec![note("sub", 1, T0)],
        data: Vec::new(),
    };
    let err = s.record_step(&record).await.unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::VersionMismatch {
                kind: "VNF instance",
                found: Version(2),
                ..
            }
        ),
        "{err:?}"
    );
    let (o, v) = s.get_op_occ(&occ.id).await.unwrap().unwrap();
    assert_eq!((o.operation_state, v), (S::Starting, Version(1)));
    assert!(s.journal(&occ.id).await.unwrap().is_empty());
    assert!(outbox_all(s).await.is_empty());

    // Stale op-occ version: refused, nothing written.
    let err = s
        .record_step(&StepRecord {
            expected_version: Version(5),
            instance: None,
            ..record.clone()
        })
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::VersionMismatch {
                kind: "op-occ",
                found: Version(1),
                ..
            }
        ),
        "{err:?}"
    );
    assert!(s.journal(&occ.id).await.unwrap().is_empty());

    // A sequence of steps: journal numbered in order, last completed step found.
    let mut version = Version(1);
    let mut state = S::Starting;
    for (i, (name, outcome)) in [
        ("grant", StepOutcome::Completed),
        ("create-stack", StepOutcome::Started),
        ("create-stack", StepOutcome::Completed),
        ("configure", StepOutcome::Started),
    ]
    .into_iter()
    .enumerate()
    {
        let mut next = in_state(&occ, S::Processing);
        next.warnings = Some(vec![format!("step {i}")]);
        let w = s
            .record_step(&StepRecord {
                occ: next,
                expected_state: state,
                expected_version: version,
                owner: "r1".into(),
                journal: Some(step(name, outcome)),
                instance: None,
                outbox: vec![],
                data: Vec::new(),
            })
            .await
            .unwrap();
        assert_eq!(w.journal_seq, Some(i as i64 + 1));
        version = w.op_occ_version;
        state = S::Processing;
    }
    let journal = s.journal(&occ.id).await.unwrap();
    assert_eq!(
        journal
            .iter()
            .map(|e| (e.seq, e.step.as_str(), e.outcome))
            .collect::<Vec<_>>(),
        vec![
            (1, "grant", StepOutcome::Completed),
            (2, "create-stack", StepOutcome::Started),
            (3, "create-stack", StepOutcome::Completed),
            (4, "configure", StepOutcome::Started),
        ]
    );
    assert_eq!(journal[0].detail, json!({"step": "grant"}));
    let last = s.last_completed_step(&occ.id).await.unwrap().unwrap();
    assert_eq!((last.seq, last.step.as_str()), (3, "create-stack"));
    let (o, v) = s.get_op_occ(&occ.id).await.unwrap().unwrap();
    assert_eq!(v, Version(5));
    assert_eq!(o.warnings, Some(vec!["step 3".to_string()]));
}

async fn failed_temp_drops_the_lease_and_operator_claims_it(db: &TestDb) {
    let s = db.store.as_ref();
    s.create_instance(&instance("i-ft", "vnfd", None, &[]), &[])
        .await
        .unwrap();
    let occ = op_occ("o-ft", "i-ft", S::Starting);
    s.start_operation(&occ, &lease("r1", Timestamp(5000)))
        .await
        .unwrap();
    assert_eq!(
        s.lease(&occ.id).await.unwrap(),
        Some(lease("r1", Timestamp(5000)))
    );
    s.renew_lease(&occ.id, "r1", Timestamp(9000)).await.unwrap();
    assert_eq!(
        s.lease(&occ.id).await.unwrap(),
        Some(lease("r1", Timestamp(9000)))
    );
    // Lease operations do not change the version.
    assert_eq!(s.get_op_occ(&occ.id).await.unwrap().unwrap().1, Version(1));

    let v = s
        .record_step(&transition(
            &occ,
            S::Starting,
            S::FailedTemp,
            Version(1),
            "r1",
        ))
        .await
        .unwrap()
        .op_occ_version;
    assert_eq!(s.lease(&occ.id).await.unwrap(), None);
    assert!(
        s.renew_lease(&occ.id, "r1", Timestamp(99_000))
            .await
            .unwrap_err()
            .is_lease_lost()
    );
    // FAILED_TEMP waits for the operator: never auto-claimed, but still holds the instance.
    assert!(
        s.claim_expired("r9", Timestamp(i64::MAX - 1), Timestamp(i64::MAX), 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_busy(
        s.start_operation(&op_occ("o-ft-2", "i-ft", S::Starting), &lease("r", T0))
            .await
            .unwrap_err(),
        "o-ft",
        S::FailedTemp,
    );

    // The operator's retry: a stale version is refused, the current one takes the lease.
    let err = s
        .claim_operation(&occ.id, Version(1), &lease("op-a", Timestamp(20_000)), T0)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::VersionMismatch { .. }), "{err:?}");
    s.claim_operation(
        &occ.id,
        v,
        &lease("op-a", Timestamp(20_000)),
        Timestamp(10_000),
    )
    .await
    .unwrap();
    // A second operator is refused while the first one's lease lives, and wins after.
    let err = s
        .claim_operation(
            &occ.id,
            v,
            &lease("op-b", Timestamp(40_000)),
            Timestamp(15_000),
        )
        .await
        .unwrap_err();
    match err {
        StoreError::Conflict(Conflict::LeaseHeld { holder, .. }) => assert_eq!(holder, "op-a"),
        other => panic!("{other:?}"),
    }
    s.claim_operation(
        &occ.id,
        v,
        &lease("op-b", Timestamp(40_000)),
        Timestamp(25_000),
    )
    .await
    .unwrap();
    assert!(
        s.record_step(&transition(&occ, S::FailedTemp, S::Processing, v, "op-a"))
            .await
            .unwrap_err()
            .is_lease_lost()
    );
    let v = s
        .record_step(&transition(&occ, S::FailedTemp, S::Failed, v, "op-b"))
        .await
        .unwrap()
        .op_occ_version;

    // Final: nothing changes it any more.
    let err = s
        .record_step(&transition(&occ, S::Failed, S::Processing, v, "op-b"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Conflict(Conflict::Finished {
                state: S::Failed,
                ..
            })
        ),
        "{err:?}"
    );
    let err = s
        .claim_operation(&occ.id, v, &lease("op-c", T0), T0)
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::Conflict(Conflict::Finished { .. })),
        "{err:?}"
    );
    s.start_operation(&op_occ("o-ft-2", "i-ft", S::Starting), &lease("r", T0))
        .await
        .unwrap();

    // Release hands the op-occ to the next claimer at once, whatever the expiry.
    s.release_lease(&VnfLcmOpOccId::new("o-ft-2"), "r")
        .await
        .unwrap();
    let claimed = s
        .claim_expired("r3", Timestamp(0), Timestamp(1), 10)
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].0.id.as_str(), "o-ft-2");
}

async fn claim_expired_gives_each_op_occ_to_exactly_one_claimer(db: &TestDb) {
    let s = db.store.clone();
    let mut expired = BTreeSet::new();
    for i in 0..40 {
        let inst = format!("ce-{i:02}");
        s.create_instance(&instance(&inst, "vnfd", None, &[]), &[])
            .await
            .unwrap();
        let occ = op_occ(&format!("{inst}-op"), &inst, S::Starting);
        // Every fourth runner is alive (its lease runs past "now").
        let until = if i % 4 == 0 { 10_000 } else { 1_000 };
        s.start_operation(&occ, &lease(&format!("dead-{i}"), Timestamp(until)))
            .await
            .unwrap();
        match i % 4 {
            1 => {
                s.record_step(&transition(
                    &occ,
                    S::Starting,
                    S::Processing,
                    Version(1),
                    &format!("dead-{i}"),
                ))
                .await
                .unwrap();
                expired.insert(occ.id.0.clone());
            }
            2 => {
                s.record_step(&transition(
                    &occ,
                    S::Starting,
                    S::RollingBack,
                    Version(1),
                    &format!("dead-{i}"),
                ))
                .await
                .unwrap();
                expired.insert(occ.id.0.clone());
            }
            3 => {
                // FAILED_TEMP is never claimed.
                s.record_step(&transition(
                    &occ,
                    S::Starting,
                    S::FailedTemp,
                    Version(1),
                    &format!("dead-{i}"),
                ))
                .await
                .unwrap();
            }
            _ => {}
        }
    }
    // Plus STARTING ones with an expired lease.
    for i in 40..50 {
        let inst = format!("ce-{i:02}");
        s.create_instance(&instance(&inst, "vnfd", None, &[]), &[])
            .await
            .unwrap();
        let occ = op_occ(&format!("{inst}-op"), &inst, S::Starting);
        s.start_operation(&occ, &lease("dead", Timestamp(500)))
            .await
            .unwrap();
        expired.insert(occ.id.0.clone());
    }

    let other = db.reopen().await.unwrap();
    let mut tasks = Vec::new();
    for (name, store) in [("claimer-a", s.clone()), ("claimer-b", other)] {
        tasks.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            loop {
                let got = store
                    .claim_expired(name, Timestamp(5_000), Timestamp(60_000), 3)
                    .await
                    .unwrap();
                if got.is_empty() {
                    break;
                }
                mine.extend(got.into_iter().map(|(o, _)| o.id.0));
                tokio::task::yield_now().await;
            }
            (name, mine)
        }));
    }
    let mut union = BTreeSet::new();
    let mut total = 0;
    for t in tasks {
        let (name, mine) = t.await.unwrap();
        total += mine.len();
        for id in mine {
            assert_eq!(
                s.lease(&VnfLcmOpOccId::new(&id))
                    .await
                    .unwrap()
                    .unwrap()
                    .owner,
                name
            );
            union.insert(id);
        }
    }
    assert_eq!(total, union.len(), "an op-occ was claimed twice");
    assert_eq!(union, expired);
}

async fn list_op_occs_filters_and_pages(db: &TestDb) {
    let s = db.store.as_ref();
    for i in 0..6 {
        let inst = format!("lo-{i}");
        s.create_instance(&instance(&inst, "vnfd", None, &[]), &[])
            .await
            .unwrap();
        for j in 0..3 {
            let mut occ = op_occ(&format!("{inst}-{j}"), &inst, S::Starting);
            if j == 1 {
                occ.operation = LcmOperationType::Scale;
            }
            s.start_operation(&occ, &lease("r", T0)).await.unwrap();
            let to = if j == 2 { S::Processing } else { S::Completed };
            s.record_step(&transition(&occ, S::Starting, to, Version(1), "r"))
                .await
                .unwrap();
        }
    }
    let ids = |p: &vnfm_store::Page<vnfm_types::VnfLcmOpOcc>| {
        p.items.iter().map(|o| o.id.0.clone()).collect::<Vec<_>>()
    };
    let p = s
        .list_op_occs(&OpOccQuery {
            vnf_instance_id: Some(VnfInstanceId::new("lo-2")),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(ids(&p), vec!["lo-2-0", "lo-2-1", "lo-2-2"]);
    let p = s
        .list_op_occs(&OpOccQuery {
            states: Some(vec![S::Processing]),
            limit: Some(4),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(ids(&p), vec!["lo-0-2", "lo-1-2", "lo-2-2", "lo-3-2"]);
    let p2 = s
        .list_op_occs(&OpOccQuery {
            states: Some(vec![S::Processing]),
            limit: Some(4),
            after: p.next.clone(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(ids(&p2), vec!["lo-4-2", "lo-5-2"]);
    assert_eq!(p2.next, None);
    let p = s
        .list_op_occs(&OpOccQuery {
            operation: Some(LcmOperationType::Scale),
            states: Some(vec![S::Completed, S::Failed]),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(p.items.len(), 6);
    assert!(p.items.iter().all(|o| o.id.0.ends_with("-1")));
    let p = s
        .list_op_occs(&OpOccQuery {
            states: Some(vec![]),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(p.items.is_empty());
    assert_eq!(
        s.count_op_occs_by_state().await.unwrap(),
        vec![("COMPLETED".to_owned(), 12), ("PROCESSING".to_owned(), 6)]
    );
}

async fn op_occ_data_survives_and_is_scoped(db: &TestDb) {
    let s = db.store.as_ref();
    s.create_instance(&instance("i-data", "vnfd", None, &[]), &[])
        .await
        .unwrap();
    for id in ["o-data-1", "o-data-2"] {
        let occ = op_occ(id, "i-data", S::Starting);
        s.start_operation(&occ, &lease("r", T0)).await.unwrap();
        s.record_step(&transition(
            &occ,
            S::Starting,
            S::Completed,
            Version(1),
            "r",
        ))
        .await
        .unwrap();
    }
    let o1 = VnfLcmOpOccId::new("o-data-1");
    let o2 = VnfLcmOpOccId::new("o-data-2");
    assert_eq!(s.get_op_occ_data(&o1, "hook").await.unwrap(), None);
    s.put_op_occ_data(&o1, "hook", &json!({"attempt": 1, "servers": ["a"]}))
        .await
        .unwrap();
    s.put_op_occ_data(&o1, "hook", &json!({"attempt": 2}))
        .await
        .unwrap();
    s.put_op_occ_data(&o2, "hook", &json!("other"))
        .await
        .unwrap();
    assert_eq!(
        s.get_op_occ_data(&o1, "hook").await.unwrap(),
        Some(json!({"attempt": 2}))
    );
    assert_eq!(
        s.get_op_occ_data(&o2, "hook").await.unwrap(),
        Some(json!("other"))
    );
    // Survives reopening the store.
    let again = db.reopen().await.unwrap();
    assert_eq!(
        again.get_op_occ_data(&o1, "hook").await.unwrap(),
        Some(json!({"attempt": 2}))
    );
    let err = s
        .put_op_occ_data(&VnfLcmOpOccId::new("missing"), "k", &json!(1))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }), "{err:?}");
}

async fn outbox_claims_retries_and_dead_letters(db: &TestDb) {
    let s = db.store.as_ref();
    s.enqueue(&[
        note("sub-a", 1, Timestamp(100)),
        note("sub-a", 2, Timestamp(50)),
        note("sub-b", 3, Timestamp(10_000)),
    ])
    .await
    .unwrap();

    // Due now: two rows, oldest schedule first; the future one waits.
    let due = s
        .outbox_due(Timestamp(1000), 10, "sender-1", Timestamp(31_000))
        .await
        .unwrap();
    assert_eq!(
        due.iter()
            .map(|r| r.payload["n"].clone())
            .collect::<Vec<_>>(),
        vec![json!(2), json!(1)]
    );
    assert!(
        due.iter()
            .all(|r| r.attempts == 0 && r.status == OutboxStatus::Pending)
    );
    // Claimed rows are not handed to another sender while the claim lives...
    assert!(
        s.outbox_due(Timestamp(2000), 10, "sender-2", Timestamp(32_000))
            .await
            .unwrap()
            .is_empty()
    );
    // ...and are after it ends (the first sender died), along with the now-due third row.
    let again = s
        .outbox_due(Timestamp(40_000), 10, "sender-2", Timestamp(70_000))
        .await
        .unwrap();
    assert_eq!(again.len(), 3);

    let (first, second, third) = (again[0].id, again[1].id, again[2].id);
    s.outbox_retry(first, Timestamp(50_000), "HTTP 503")
        .await
        .unwrap();
    s.outbox_delivered(second).await.unwrap();
    assert!(matches!(
        s.outbox_delivered(second).await.unwrap_err(),
        StoreError::NotFound { .. }
    ));
    // The retried row is released but not due before its new time.
    assert!(
        s.outbox_due(Timestamp(45_000), 10, "sender-3", Timestamp(80_000))
            .await
            .unwrap()
            .is_empty()
    );
    let retried = s
        .outbox_due(Timestamp(50_000), 10, "sender-3", Timestamp(80_000))
        .await
        .unwrap();
    assert_eq!(retried.len(), 1);
    assert_eq!(retried[0].id, first);
    assert_eq!(retried[0].attempts, 1);
    assert_eq!(retried[0].last_error.as_deref(), Some("HTTP 503"));

    s.outbox_dead(first, "HTTP 500 after 5 attempts")
        .await
        .unwrap();
    assert!(
        s.outbox_retry(first, Timestamp(0), "late").await.is_err(),
        "a dead row cannot be rescheduled"
    );
    let dead = s.outbox_dead_rows(None, 10).await.unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].id, first);
    assert_eq!(dead[0].status, OutboxStatus::Dead);
    assert_eq!(dead[0].attempts, 2);
    assert_eq!(
        dead[0].last_error.as_deref(),
        Some("HTTP 500 after 5 attempts")
    );
    // Dead rows are never due again.
    let rest = s
        .outbox_due(Timestamp(i64::MAX - 1), 10, "sender-4", Timestamp(i64::MAX))
        .await
        .unwrap();
    assert_eq!(rest.iter().map(|r| r.id).collect::<Vec<_>>(), vec![third]);
}

async fn concurrent_outbox_claims_are_disjoint(db: &TestDb) {
    let s = db.store.clone();
    let rows: Vec<_> = (0..200).map(|n| note("sub", n, Timestamp(0))).collect();
    s.enqueue(&rows).await.unwrap();
    let other = db.reopen().await.unwrap();
    let mut tasks = Vec::new();
    for (name, store) in [("a", s.clone()), ("b", other), ("c", s.clone())] {
        tasks.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            loop {
                let got = store
                    .outbox_due(Timestamp(10), 7, name, Timestamp(1_000_000))
                    .await
                    .unwrap();
                if got.is_empty() {
                    break;
                }
                mine.extend(got.into_iter().map(|r| r.id));
            }
            mine
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let distinct: BTreeSet<_> = all.iter().collect();
    assert_eq!(all.len(), 200);
    assert_eq!(distinct.len(), 200, "a row was claimed twice");
}

async fn outbox_queues_deliver_in_enqueue_order(db: &TestDb) {
    let s = db.store.as_ref();
    s.enqueue(&[
        queued("sub-a", "vnf-1", 1),
        queued("sub-a", "vnf-1", 2),
        queued("sub-a", "vnf-2", 3),
        queued("sub-b", "vnf-1", 4),
        queued("sub-a", "vnf-1", 5),
    ])
    .await
    .unwrap();
    let claim = |owner: &'static str, at: i64| async move {
        s.outbox_due(Timestamp(at), 10, owner, Timestamp(at + 1000))
            .await
            .unwrap()
    };

    assert_eq!(numbers(&outbox_all(s).await), vec![1, 2, 3, 4, 5]);
    // One row per queue: the head of (sub-a, vnf-1), of (sub-a, vnf-2) and of (sub-b, vnf-1).
    let heads = claim("sender-1", 10).await;
    assert_eq!(numbers(&heads), vec![1, 3, 4]);
    // While the heads are claimed, the rows behind them wait, even for another sender.
    assert!(claim("sender-2", 20).await.is_empty());

    // A failed head keeps its place: the queue waits for its retry, other queues go on.
    let head = |n: i64| heads.iter().find(|r| r.payload["n"] == n).unwrap().id;
    s.outbox_retry(head(1), Timestamp(5_000), "HTTP 503")
        .await
        .unwrap();
    s.outbox_delivered(head(3)).await.unwrap();
    s.outbox_delivered(head(4)).await.unwrap();
    assert!(
        claim("sender-2", 30).await.is_empty(),
        "row 2 overtook row 1"
    );

    let retried = claim("sender-2", 5_000).await;
    assert_eq!(numbers(&retried), vec![1]);
    s.outbox_delivered(retried[0].id).await.unwrap();
    let next = claim("sender-2", 5_001).await;
    assert_eq!(numbers(&next), vec![2]);

    // A dead row no longer holds its queue back.
    s.outbox_dead(next[0].id, "HTTP 410").await.unwrap();
    assert_eq!(numbers(&claim("sender-3", 5_002).await), vec![5]);
}

/// The outbox summary counts rows per subscription and status in the store, a dead row put
/// back is the next of its queue to be sent (ahead of the rows enqueued after it), and a
/// discarded one is gone; neither works on a row that is not dead.
async fn dead_letters_are_counted_redelivered_in_their_queue_and_discarded(db: &TestDb) {
    let s = db.store.as_ref();
    assert!(s.outbox_summary().await.unwrap().is_empty());
    let before = Timestamp::now();
    s.enqueue(&[
        queued("sub-a", "vnf-1", 1),
        queued("sub-a", "vnf-1", 2),
        queued("sub-a", "vnf-2", 3),
        queued("sub-b", "vnf-1", 4),
    ])
    .await
    .unwrap();
    let after = Timestamp::now();
    let claim = |owner: &'static str, at: i64| async move {
        s.outbox_due(Timestamp(at), 10, owner, Timestamp(at + 1000))
            .await
            .unwrap()
    };
    let heads = claim("sender-1", 10).await;
    assert_eq!(numbers(&heads), vec![1, 3, 4]);
    let id = |n: i64| heads.iter().find(|r| r.payload["n"] == n).unwrap().id;
    s.outbox_dead(id(1), "HTTP 503").await.unwrap();
    s.outbox_dead(id(4), "HTTP 503").await.unwrap();
    s.outbox_delivered(id(3)).await.unwrap();

    let summary = s.outbox_summary().await.unwrap();
    let shape: Vec<_> = summary
        .iter()
        .map(|r| (r.subscription_id.as_str(), r.status, r.rows))
        .collect();
    assert_eq!(
        shape,
        vec![
            ("sub-a", OutboxStatus::Pending, 1),
            ("sub-a", OutboxStatus::Dead, 1),
            ("sub-b", OutboxStatus::Dead, 1),
        ]
    );
    for OutboxSummary { oldest, .. } in &summary {
        assert!(
            before <= *oldest && *oldest <= after,
            "{oldest:?} not in {before:?}..{after:?}"
        );
    }

    // Only dead rows are redelivered or discarded.
    let pending = outbox_all(s).await;
    let row2 = pending.iter().find(|r| r.payload["n"] == 2).unwrap().id;
    for refused in [
        s.outbox_redeliver(row2, Timestamp(20)).await,
        s.outbox_discard(row2).await,
        s.outbox_redeliver(i64::MAX, Timestamp(20)).await,
        s.outbox_discard(i64::MAX).await,
    ] {
        assert!(
            matches!(
                refused,
                Err(StoreError::NotFound {
                    kind: "dead outbox row",
                    ..
                })
            ),
            "{refused:?}"
        );
    }

    // Row 1, put back, goes before row 2 of its queue, keeping its attempts and last error.
    s.outbox_redeliver(id(1), Timestamp(20)).await.unwrap();
    assert!(matches!(
        s.outbox_redeliver(id(1), Timestamp(20)).await,
        Err(StoreError::NotFound { .. })
    ));
    let again = claim("sender-2", 20).await;
    assert_eq!(numbers(&again), vec![1]);
    assert_eq!(again[0].attempts, 1);
    assert_eq!(again[0].last_error.as_deref(), Some("HTTP 503"));
    assert!(
        claim("sender-3", 30).await.is_empty(),
        "row 2 overtook row 1"
    );
    s.outbox_delivered(again[0].id).await.unwrap();
    assert_eq!(numbers(&claim("sender-3", 40).await), vec![2]);

    s.outbox_discard(id(4)).await.unwrap();
    assert!(s.outbox_dead_rows(None, 10).await.unwrap().is_empty());
    let shape: Vec<_> = s
        .outbox_summary()
        .await
        .unwrap()
        .into_iter()
        .map(|r| (r.subscription_id.to_string(), r.status, r.rows))
        .collect();
    assert_eq!(shape, vec![("sub-a".to_owned(), OutboxStatus::Pending, 1)]);
}

async fn concurrent_senders_keep_each_queue_in_order(db: &TestDb) {
    let s = db.store.clone();
    let rows: Vec<_> = (0..60)
        .map(|n| queued("sub", &format!("vnf-{}", n % 3), n))
        .collect();
    s.enqueue(&rows).await.unwrap();
    let other = db.reopen().await.unwrap();
    // Each sender delivers what it claims and logs it in delivery order.
    let log = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for (name, store) in [("a", s.clone()), ("b", other), ("c", s.clone())] {
        let log = log.clone();
        tasks.push(tokio::spawn(async move {
            let mut idle = 0;
            while idle < 50 {
                let got = store
                    .outbox_due(Timestamp(10), 2, name, Timestamp(1_000_000))
                    .await
                    .unwrap();
                if got.is_empty() {
                    idle += 1;
                    tokio::task::yield_now().await;
                    continue;
                }
                idle = 0;
                for row in got {
                    log.lock().unwrap().push(row.payload["n"].as_i64().unwrap());
                    store.outbox_delivered(row.id).await.unwrap();
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let log = log.lock().unwrap().clone();
    assert_eq!(log.len(), 60, "every row delivered once: {log:?}");
    for key in 0..3 {
        let queue: Vec<_> = log.iter().copied().filter(|n| n % 3 == key).collect();
        let mut sorted = queue.clone();
        sorted.sort_unstable();
        assert_eq!(queue, sorted, "queue vnf-{key} out of order");
    }
}

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

async fn vims_and_the_index_of_instances_using_them(db: &TestDb) {
    let s = db.store.as_ref();
    let vim = |id: &str, by: Option<&str>| VimRecord {
        id: VimId::new(id),
        name: format!("{id}-name"),
        vim_type: "ETSINFV.OPENSTACK_KEYSTONE.V_3".into(),
        public: json!({"endpoint": "http://keystone/v3", "project": "demo"}),
        secret: vec![1, 2, 3, 0, 255],
        created_by_instance: by.map(VnfInstanceId::new),
    };
    assert_eq!(s.create_vim(&vim("vim-a", None)).await.unwrap(), Version(1));
    s.create_vim(&vim("vim-b", Some("i-v1"))).await.unwrap();
    assert!(matches!(
        s.create_vim(&vim("vim-a", None)).await.unwrap_err(),
        StoreError::Conflict(Conflict::AlreadyExists { .. })
    ));
    let (got, v) = s.get_vim(&VimId::new("vim-a")).await.unwrap().unwrap();
    assert_eq!((got, v), (vim("vim-a", None), Version(1)));

    let mut changed = vim("vim-a", None);
    changed.secret = vec![9];
    assert_eq!(
        s.update_vim(&changed, Version(1)).await.unwrap(),
        Version(2)
    );
    assert!(matches!(
        s.update_vim(&changed, Version(1)).await.unwrap_err(),
        StoreError::VersionMismatch { .. }
    ));
    assert_eq!(
        s.get_vim(&VimId::new("vim-a"))
            .await
            .unwrap()
            .unwrap()
            .0
            .secret,
        vec![9]
    );
    assert_eq!(
        s.list_vims()
            .await
            .unwrap()
            .iter()
            .map(|(v, _)| v.id.0.as_str())
            .collect::<Vec<_>>(),
        vec!["vim-a", "vim-b"]
    );
    let by = s
        .vims_created_by(&VnfInstanceId::new("i-v1"))
        .await
        .unwrap();
    assert_eq!(by.len(), 1);
    assert_eq!(by[0].0.id.as_str(), "vim-b");
    // Every column (the secret is a blob) reads back as stored, on every read path.
    assert_eq!(
        by[0],
        s.get_vim(&VimId::new("vim-b")).await.unwrap().unwrap()
    );
    assert_eq!(by[0].0, vim("vim-b", Some("i-v1")));

    // The index follows create, update (also through record_step) and delete of instances.
    let i1 = instance("i-v1", "vnfd", None, &["vim-a", "vim-b", "vim-a"]);
    let i2 = instance("i-v2", "vnfd", None, &["vim-a"]);
    s.create_instance(&i1, &[]).await.unwrap();
    s.create_instance(&i2, &[]).await.unwrap();
    let using = |id: &'static str| async move {
        s.instances_using_vim(&VimId::new(id))
            .await
            .unwrap()
            .into_iter()
            .map(|i| i.0)
            .collect::<Vec<_>>()
    };
    assert_eq!(using("vim-a").await, vec!["i-v1", "i-v2"]);
    assert_eq!(using("vim-b").await, vec!["i-v1"]);
    match s
        .delete_vim(&VimId::new("vim-a"), Version(2))
        .await
        .unwrap_err()
    {
        StoreError::Conflict(Conflict::InUse { by, .. }) => assert_eq!(by, vec!["i-v1", "i-v2"]),
        other => panic!("{other:?}"),
    }

    let i1b = instance("i-v1", "vnfd", None, &["vim-b"]);
    s.update_instance(&i1b, Version(1)).await.unwrap();
    assert_eq!(using("vim-a").await, vec!["i-v2"]);

    let occ = op_occ("o-v2", "i-v2", S::Starting);
    s.start_operation(&occ, &lease("r", T0)).await.unwrap();
    s.record_step(&StepRecord {
        instance: Some((instance("i-v2", "vnfd", None, &[]), Version(1))),
        ..transition(&occ, S::Starting, S::Completed, Version(1), "r")
    })
    .await
    .unwrap();
    assert!(using("vim-a").await.is_empty());
    s.delete_instance(&VnfInstanceId::new("i-v1"), Version(2), &[])
        .await
        .unwrap();
    assert!(using("vim-b").await.is_empty());

    s.delete_vim(&VimId::new("vim-a"), Version(2))
        .await
        .unwrap();
    assert!(s.get_vim(&VimId::new("vim-a")).await.unwrap().is_none());
    assert!(matches!(
        s.delete_vim(&VimId::new("vim-a"), Version(2))
            .await
            .unwrap_err(),
        StoreError::NotFound { .. }
    ));
}

/// The instances using `vim`, as strings.
async fn users(s: &dyn Store, vim: &str) -> Vec<String> {
    s.instances_using_vim(&VimId::new(vim))
        .await
        .unwrap()
        .into_iter()
        .map(|i| i.0)
        .collect()
}

async fn vim_index_follows_references_and_resources(db: &TestDb) {
    let s = db.store.as_ref();
    let vim = |id: &str, by: Option<&str>| VimRecord {
        id: VimId::new(id),
        name: id.into(),
        vim_type: "ETSINFV.KUBERNETES.V_1".into(),
        public: json!({}),
        secret: vec![1],
        created_by_instance: by.map(VnfInstanceId::new),
    };
    for (id, by) in [
        ("k8s-a1", Some("i-a")),
        ("k8s-a2", Some("i-a")),
        ("k8s-c", Some("i-c")),
        ("shared", None),
    ] {
        s.create_vim(&vim(id, by)).await.unwrap();
    }
    // The creator uses its own VIM: that does not make it its own dependent.
    s.create_instance(&instance("i-a", "vnfd", Some("vnf-a"), &["k8s-a1"]), &[])
        .await
        .unwrap();
    s.create_instance(
        &instance("i-b", "vnfd", Some("cnf-b"), &["k8s-a1", "shared"]),
        &[],
    )
    .await
    .unwrap();
    // i-d has no connection entry for its resource's vimConnectionId, which names the VIM.
    let mut d = serde_json::to_value(instance("i-d", "vnfd", None, &["shared"])).unwrap();
    d["instantiationState"] = json!("INSTANTIATED");
    d["instantiatedVnfInfo"] = json!({
        "flavourId": "simple", "vnfState": "STARTED",
        "vnfcResourceInfo": [
            {"id": "c1", "vduId": "VDU1", "computeResource": {"resourceId": "pod-1", "vimConnectionId": "k8s-a2"}},
            {"id": "c2", "vduId": "VDU1", "computeResource": {"resourceId": "pod-2", "vimConnectionId": "vim0"}}
        ]
    });
    let d: vnfm_types::VnfInstance = serde_json::from_value(d).unwrap();
    s.create_instance(&d, &[]).await.unwrap();
    // i-e does not reference it yet, but the request of its STARTING occurrence does.
    s.create_instance(&instance("i-e", "vnfd", Some("cnf-e"), &[]), &[])
        .await
        .unwrap();
    let mut pending = op_occ("o-e", "i-e", S::Starting);
    pending.operation_params = Some(
        json!({"flavourId": "simple",
               "vimConnectionInfo": {"k8s": {"vimId": "k8s-a2", "vimType": "ETSINFV.KUBERNETES.V_1"},
                                     "gone": null}})
        .as_object()
        .unwrap()
        .clone(),
    );
    s.start_operation(&pending, &lease("r", T0)).await.unwrap();
    // A finished occurrence's request, an unregistered VIM and a VIM nobody created count
    // for nothing.
    s.create_instance(&instance("i-g", "vnfd", None, &["ghost"]), &[])
        .await
        .unwrap();
    let mut done = op_occ("o-g", "i-g", S::Starting);
    done.operation_params = Some(
        json!({"vimConnectionInfo": {"k": {"vimId": "k8s-a1", "vimType": "x"}}})
            .as_object()
            .unwrap()
            .clone(),
    );
    s.start_operation(&done, &lease("r", T0)).await.unwrap();
    s.record_step(&transition(
        &done,
        S::Starting,
        S::RolledBack,
        Version(1),
        "r",
    ))
    .await
    .unwrap();

    // References and resources count; a request (i-e's) does not, until its occurrence
    // writes the reference into the instance.
    assert_eq!(users(s, "k8s-a1").await, ["i-a", "i-b"]);
    assert!(users(s, "k8s-c").await.is_empty(), "nobody uses k8s-c");
    assert_eq!(
        s.vim_usage()
            .await
            .unwrap()
            .into_iter()
            .map(|(v, i)| (v.0, i.0))
            .collect::<Vec<_>>(),
        [
            ("k8s-a1", "i-a"),
            ("k8s-a1", "i-b"),
            ("k8s-a2", "i-d"),
            ("shared", "i-b"),
            ("shared", "i-d"),
        ]
        .map(|(v, i)| (v.to_string(), i.to_string()))
    );
    assert_eq!(
        s.instances_using_vim(&VimId::new("k8s-a2")).await.unwrap(),
        [VnfInstanceId::new("i-d")]
    );

    // The occurrence begins and writes the reference into its instance: no longer pending.
    s.record_step(&StepRecord {
        instance: Some((
            instance("i-e", "vnfd", Some("cnf-e"), &["k8s-a2"]),
            Version(1),
        )),
        ..transition(&pending, S::Starting, S::Processing, Version(1), "r")
    })
    .await
    .unwrap();
    // i-b drops its reference; i-d's resource is gone.
    s.update_instance(
        &instance("i-b", "vnfd", Some("cnf-b"), &["shared"]),
        Version(1),
    )
    .await
    .unwrap();
    s.update_instance(&instance("i-d", "vnfd", None, &["shared"]), Version(1))
        .await
        .unwrap();
    assert_eq!(users(s, "k8s-a1").await, ["i-a"]);
    assert_eq!(users(s, "k8s-a2").await, ["i-e"]);
    s.record_step(&StepRecord {
        instance: Some((instance("i-e", "vnfd", Some("cnf-e"), &[]), Version(2))),
        ..transition(
            &in_state(&pending, S::Processing),
            S::Processing,
            S::RolledBack,
            Version(2),
            "r",
        )
    })
    .await
    .unwrap();
    assert!(users(s, "k8s-a2").await.is_empty());
}

async fn migrations_apply_on_empty_and_refuse_newer_schema(db: &TestDb) {
    assert_eq!(db.store.schema_version().await.unwrap(), 13);
    // Opening an up-to-date database again is a no-op.
    let again = db.reopen().await.unwrap();
    assert_eq!(again.schema_version().await.unwrap(), 13);
    drop(again);

    db.fake_future_migration(14).await;
    let err = match db.reopen().await {
        Ok(_) => panic!("a database from a newer build was opened"),
        Err(e) => e,
    };
    match &err {
        StoreError::SchemaTooNew { found, supported } => {
            assert_eq!((*found, *supported), (14, 13));
        }
        other => panic!("{other:?}"),
    }
    assert!(
        err.to_string().contains("newer than this build supports"),
        "{err}"
    );
}

/// Package content larger than one piece goes in from a reader and out to a writer, byte for
/// byte; a replacement drops every old piece; an empty content still reads back as uploaded.
async fn package_content_is_streamed_in_and_out_in_pieces(db: &TestDb) {
    let store = &db.store;
    store
        .create_package(&PackageRecord {
            id: "pkg-big".into(),
            vnfd_id: None,
            info: serde_json::json!({"id": "pkg-big"}),
            project: None,
        })
        .await
        .unwrap();
    let mut out = Vec::new();
    assert!(
        !store
            .copy_package_content_to("pkg-big", &mut out)
            .await
            .unwrap()
    );
    let missing = store
        .put_package_content_from("nope", &mut &b"x"[..])
        .await
        .unwrap_err();
    assert!(
        matches!(missing, StoreError::NotFound { .. }),
        "{missing:?}"
    );

    let chunk = vnfm_store::CONTENT_CHUNK_BYTES;
    let big: Vec<u8> = (0..2 * chunk + 12_345)
        .map(|i| (i * 31 % 251) as u8)
        .collect();
    let stored = store
        .put_package_content_from("pkg-big", &mut big.as_slice())
        .await
        .unwrap();
    assert_eq!(stored, big.len() as u64);
    assert!(
        store
            .copy_package_content_to("pkg-big", &mut out)
            .await
            .unwrap()
    );
    assert!(out == big, "streamed content differs");
    assert_eq!(
        store
            .get_package_content("pkg-big")
            .await
            .unwrap()
            .as_deref(),
        Some(big.as_slice())
    );

    // Exactly one piece, then nothing: no stale piece of the bigger content remains.
    let exact = &big[..chunk];
    store
        .put_package_content_from("pkg-big", &mut &exact[..])
        .await
        .unwrap();
    assert_eq!(
        store
            .get_package_content("pkg-big")
            .await
            .unwrap()
            .as_deref(),
        Some(exact)
    );
    store
        .put_package_content_from("pkg-big", &mut &b""[..])
        .await
        .unwrap();
    assert_eq!(
        store
            .get_package_content("pkg-big")
            .await
            .unwrap()
            .as_deref(),
        Some(&b""[..])
    );
    // Deleting the package deletes its pieces.
    store
        .put_package_content_from("pkg-big", &mut big.as_slice())
        .await
        .unwrap();
    store
        .delete_package("pkg-big", Version::FIRST)
        .await
        .unwrap();
    assert_eq!(store.get_package_content("pkg-big").await.unwrap(), None);
}

async fn packages_round_trip_with_unique_vnfd_and_content(db: &TestDb) {
    let store = &db.store;
    let mut a = PackageRecord {
        id: "pkg-a".into(),
        vnfd_id: None,
        info: serde_json::json!({"id": "pkg-a", "onboardingState": "CREATED"}),
        project: None,
    };
    assert_eq!(store.create_package(&a).await.unwrap(), Version::FIRST);
    let again = store.create_package(&a).await.unwrap_err();
    assert!(
        matches!(&again, StoreError::Conflict(Conflict::AlreadyExists { kind: "VNF package", id }) if id == "pkg-a"),
        "{again:?}"
    );
    assert_eq!(store.get_package_content("pkg-a").await.unwrap(), None);
    let missing = store.put_package_content("nope", b"x").await.unwrap_err();
    assert!(
        matches!(missing, StoreError::NotFound { .. }),
        "{missing:?}"
    );

    // Content is stored byte for byte and replaced on a second upload.
    let bytes: Vec<u8> = (0..=255u8).cycle().take(300_000).collect();
    store.put_package_content("pkg-a", &bytes).await.unwrap();
    store
        .put_package_content("pkg-a", &bytes[..1000])
        .await
        .unwrap();
    assert_eq!(
        store.get_package_content("pkg-a").await.unwrap().as_deref(),
        Some(&bytes[..1000])
    );

    a.vnfd_id = Some("vnfd-1".into());
    a.info["onboardingState"] = "ONBOARDED".into();
    let v2 = store.update_package(&a, Version::FIRST).await.unwrap();
    assert_eq!(v2, Version(2));
    let stale = store.update_package(&a, Version::FIRST).await.unwrap_err();
    assert!(
        matches!(stale, StoreError::VersionMismatch { .. }),
        "{stale:?}"
    );
    let (found, version) = store.package_by_vnfd("vnfd-1").await.unwrap().unwrap();
    assert_eq!((found.id.as_str(), version), ("pkg-a", v2));
    assert_eq!(found.info["onboardingState"], "ONBOARDED");

    // A second package with the same vnfdId is refused, naming the vnfdId.
    let mut b = PackageRecord {
        id: "pkg-b".into(),
        vnfd_id: None,
        info: serde_json::json!({"id": "pkg-b"}),
        project: None,
    };
    store.create_package(&b).await.unwrap();
    b.vnfd_id = Some("vnfd-1".into());
    let dup = store.update_package(&b, Version::FIRST).await.unwrap_err();
    assert!(
        matches!(&dup, StoreError::Conflict(Conflict::AlreadyExists { kind: "VNF package for vnfdId", id }) if id == "vnfd-1"),
        "{dup:?}"
    );

    let page = store
        .list_packages(&ProjectScope::All, None, 1)
        .await
        .unwrap();
    assert_eq!(page.items.len(), 1);
    assert_eq!(page.items[0].id, "pkg-a");
    let rest = store
        .list_packages(&ProjectScope::All, page.next.as_deref(), 1)
        .await
        .unwrap();
    assert_eq!(rest.items[0].id, "pkg-b");
    assert_eq!(rest.next, None);

    let stale = store
        .delete_package("pkg-a", Version::FIRST)
        .await
        .unwrap_err();
    assert!(
        matches!(stale, StoreError::VersionMismatch { .. }),
        "{stale:?}"
    );
    store.delete_package("pkg-a", v2).await.unwrap();
    assert_eq!(store.get_package("pkg-a").await.unwrap(), None);
    assert_eq!(store.get_package_content("pkg-a").await.unwrap(), None);
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

async fn package_changes_enqueue_their_notifications_atomically(db: &TestDb) {
    let s = db.store.as_ref();
    let mut p = PackageRecord {
        id: "pkg-n".into(),
        vnfd_id: None,
        info: serde_json::json!({"id": "pkg-n", "onboardingState": "CREATED"}),
        project: None,
    };
    s.create_package(&p).await.unwrap();
    let row = |n: i64| NewOutboxRow {
        ordering_key: "pkg-n".into(),
        ..note("sub-p", n, Timestamp(0))
    };
    p.vnfd_id = Some("vnfd-n".into());
    let v2 = s
        .update_package_and_notify(&p, Version::FIRST, &[row(1)])
        .await
        .unwrap();
    // A refused update enqueues nothing.
    let stale = s
        .update_package_and_notify(&p, Version::FIRST, &[row(99)])
        .await
        .unwrap_err();
    assert!(
        matches!(stale, StoreError::VersionMismatch { .. }),
        "{stale:?}"
    );
    let stale = s
        .delete_package_and_notify("pkg-n", Version::FIRST, &[row(98)])
        .await
        .unwrap_err();
    assert!(
        matches!(stale, StoreError::VersionMismatch { .. }),
        "{stale:?}"
    );
    s.delete_package_and_notify("pkg-n", v2, &[row(2)])
        .await
        .unwrap();
    assert_eq!(s.get_package("pkg-n").await.unwrap(), None);
    assert_eq!(numbers(&outbox_all(s).await), vec![1, 2]);
    // One queue: the package's notifications go out one at a time, in order.
    let first = s
        .outbox_due(T0, 10, "d", Timestamp(T0.0 + 1000))
        .await
        .unwrap();
    assert_eq!(numbers(&first), vec![1]);
}

// ----- Backend-specific -----

#[tokio::test]
async fn open_accepts_the_documented_urls() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("via-url.db");
    let store = vnfm_store_sql::open(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    store
        .create_instance(&instance("u-1", "vnfd", None, &[]), &[])
        .await
        .unwrap();
    drop(store);
    assert!(path.exists());
    // The file persists across opens.
    let store = vnfm_store_sql::open(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    assert!(
        store
            .get_instance(&VnfInstanceId::new("u-1"))
            .await
            .unwrap()
            .is_some()
    );

    let mem = vnfm_store_sql::open("sqlite::memory:").await.unwrap();
    mem.create_instance(&instance("m-1", "vnfd", None, &[]), &[])
        .await
        .unwrap();
    // Reads see the writes of the private database.
    assert!(
        mem.get_instance(&VnfInstanceId::new("m-1"))
            .await
            .unwrap()
            .is_some()
    );
    let s: Vec<_> = mem
        .stream_instances(&InstanceQuery::default())
        .collect()
        .await;
    assert_eq!(s.len(), 1);

    let err = match vnfm_store_sql::open("mysql://root:hunter2@db/vnfm").await {
        Ok(_) => panic!("mysql accepted"),
        Err(e) => e,
    };
    let msg = err.to_string();
    assert!(matches!(err, StoreError::UnsupportedUrl(_)), "{err:?}");
    assert!(!msg.contains("hunter2"), "{msg}");
    assert!(msg.contains("mysql://root:***@db/vnfm"), "{msg}");
    assert!(matches!(
        vnfm_store_sql::open("sqlite://").await,
        Err(StoreError::UnsupportedUrl(_))
    ));
    // The durability is chosen in the URL; unknown options are refused, not ignored.
    let full = vnfm_store_sql::open(&format!("sqlite://{}?synchronous=full", path.display()))
        .await
        .unwrap();
    assert!(
        full.get_instance(&VnfInstanceId::new("u-1"))
            .await
            .unwrap()
            .is_some()
    );
    assert!(matches!(
        vnfm_store_sql::open(&format!("sqlite://{}?synchronous=off", path.display())).await,
        Err(StoreError::UnsupportedUrl(_))
    ));
}

#[tokio::test]
async fn corrupt_documents_are_reported_without_their_content() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("corrupt.db");
    let store = vnfm_store_sql::SqliteStore::open(&path).await.unwrap();
    store
        .create_instance(&instance("c-1", "vnfd", None, &[]), &[])
        .await
        .unwrap();
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE vnf_instances SET doc = '{\"password\": \"hunter2\", \"id\": 3}'",
            [],
        )
        .unwrap();
    let err = store
        .get_instance(&VnfInstanceId::new("c-1"))
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
    assert!(msg.contains("c-1"), "{msg}");
    assert!(!msg.contains("hunter2"), "{msg}");
}

/// Throughput sanity check, not an assertion on time: run with
/// `cargo test --release -p vnfm-store --test store -- --ignored --nocapture perf`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "timing report; run explicitly in release mode"]
async fn perf_sanity_report() {
    // VNFM_PERF_DURABILITY=full measures synchronous=FULL, =memory an in-memory database.
    let mode = std::env::var("VNFM_PERF_DURABILITY").unwrap_or_else(|_| "normal".into());
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(match mode.as_str() {
        "memory" => vnfm_store_sql::SqliteStore::memory().await.unwrap(),
        other => vnfm_store_sql::SqliteStore::open_with(
            dir.path().join("perf.db"),
            vnfm_store_sql::SqliteOptions {
                durability: if other == "full" {
                    vnfm_store_sql::Durability::Full
                } else {
                    vnfm_store_sql::Durability::Normal
                },
                ..Default::default()
            },
        )
        .await
        .unwrap(),
    });
    let n = std::env::var("VNFM_PERF_N")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(50_000);
    let start = std::time::Instant::now();
    for i in 0..n {
        let vnfd = if i % 10 == 0 {
            "vnfd-rare"
        } else {
            "vnfd-common"
        };
        store
            .create_instance(
                &instance(&format!("p-{i:06}"), vnfd, Some("perf"), &["vim-1"]),
                &[],
            )
            .await
            .unwrap();
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "create_instance, one task, {mode}: {n} in {secs:.2}s = {:.0}/s",
        n as f64 / secs
    );

    let mut tasks = Vec::new();
    let start = std::time::Instant::now();
    for t in 0..8 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..1000 {
                store
                    .create_instance(
                        &instance(&format!("q-{t}-{i:05}"), "vnfd-q", None, &[]),
                        &[],
                    )
                    .await
                    .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "create_instance, 8 tasks: 8000 in {secs:.2}s = {:.0}/s",
        8000.0 / secs
    );

    for (label, vnfd) in [
        ("filter vnfdId (10% match)", "vnfd-rare"),
        ("filter vnfdId (90% match)", "vnfd-common"),
    ] {
        let mut q = InstanceQuery {
            vnfd_id: Some(VnfdId::new(vnfd)),
            limit: Some(100),
            ..Default::default()
        };
        let mut pages = 0;
        let start = std::time::Instant::now();
        while pages < 50 {
            let page = store.list_instances(&q).await.unwrap();
            pages += 1;
            match page.next {
                Some(n) => q.after = Some(n),
                None => break,
            }
        }
        let per = start.elapsed().as_secs_f64() * 1000.0 / f64::from(pages);
        println!(
            "list_instances {label}, page 100 of 58,000 rows: {per:.2} ms/page over {pages} pages"
        );
    }
    let start = std::time::Instant::now();
    let q = InstanceQuery {
        name: Some(NameFilter::Contains("erf".into())),
        limit: Some(100),
        ..Default::default()
    };
    store.list_instances(&q).await.unwrap();
    println!(
        "list_instances name contains, first page: {:.2} ms",
        start.elapsed().as_secs_f64() * 1000.0
    );
    let start = std::time::Instant::now();
    let count = store
        .stream_instances(&InstanceQuery {
            limit: Some(500),
            ..Default::default()
        })
        .count()
        .await;
    println!(
        "stream_instances: {count} in {:.2}s",
        start.elapsed().as_secs_f64()
    );
    tokio::time::sleep(Duration::from_millis(1)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_first_opens_of_one_sqlite_file_both_succeed() {
    for _ in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("race.db");
        let opens: Vec<_> = (0..4)
            .map(|_| {
                let path = path.clone();
                tokio::spawn(async move { vnfm_store_sql::SqliteStore::open(&path).await })
            })
            .collect();
        for o in opens {
            let store = o.await.unwrap().unwrap();
            assert_eq!(store.schema_version().await.unwrap(), 13);
        }
    }
}

async fn settings_are_stored_replaced_and_removed(db: &TestDb) {
    let store = &db.store;
    assert_eq!(store.get_setting("nfvo").await.unwrap(), None);
    let first = serde_json::json!({"url": "https://nfvo-1", "secret": "gAAAA-sealed"});
    store.put_setting("nfvo", Some(&first)).await.unwrap();
    store
        .put_setting("other", Some(&serde_json::json!(1)))
        .await
        .unwrap();
    assert_eq!(store.get_setting("nfvo").await.unwrap(), Some(first));
    let second = serde_json::json!({"url": "https://nfvo-2"});
    store.put_setting("nfvo", Some(&second)).await.unwrap();
    assert_eq!(store.get_setting("nfvo").await.unwrap(), Some(second));
    store.put_setting("nfvo", None).await.unwrap();
    assert_eq!(store.get_setting("nfvo").await.unwrap(), None);
    // Removing a setting that is not there is not an error; other settings stay.
    store.put_setting("nfvo", None).await.unwrap();
    assert_eq!(
        store.get_setting("other").await.unwrap(),
        Some(serde_json::json!(1))
    );
}

/// Two stores (as two processes would) writing the same SQLite file at once: the writes that
/// run on the connection's handle wait for each other's write lock instead of failing, and
/// every one of them lands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_stores_on_one_sqlite_file_write_concurrently_without_busy_errors() {
    use vnfm_types::LcmOperationStateType as S;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let a = Arc::new(vnfm_store_sql::SqliteStore::open(&path).await.unwrap());
    let b = Arc::new(vnfm_store_sql::SqliteStore::open(&path).await.unwrap());
    let mut tasks = Vec::new();
    for (name, store) in [("a", a.clone()), ("b", b.clone())] {
        tasks.push(tokio::spawn(async move {
            for i in 0..60 {
                let id = format!("{name}-{i}");
                store
                    .create_instance(&instance(&id, "vnfd", None, &[]), &[note("s", i, T0)])
                    .await
                    .unwrap();
                let occ = op_occ(&format!("op-{id}"), &id, S::Starting);
                let version = store.start_operation(&occ, &lease(name, T0)).await.unwrap();
                assert_eq!(version, Version::FIRST);
                let written = store
                    .record_step(&transition(
                        &occ,
                        S::Starting,
                        S::Processing,
                        Version::FIRST,
                        name,
                    ))
                    .await
                    .unwrap();
                assert_eq!(written.op_occ_version, Version(2));
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    for store in [&a, &b] {
        let page = store
            .list_instances(&InstanceQuery {
                limit: Some(500),
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(page.items.len(), 120);
    }
    let (occ, version) = b
        .get_op_occ(&vnfm_types::VnfLcmOpOccId("op-a-59".into()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((occ.operation_state, version), (S::Processing, Version(2)));
}

/// A store closed after hot-path writes (whose statements the writer keeps prepared) closes
/// cleanly, and a store opened again on the file finds everything, including the op-occ data
/// a step wrote in its transaction.
#[tokio::test]
async fn an_sqlite_store_closes_after_hot_writes_and_reopens_with_them() {
    use vnfm_types::LcmOperationStateType as S;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("reopen.db");
    let store = vnfm_store_sql::SqliteStore::open(&path).await.unwrap();
    store
        .create_instance(&instance("i", "vnfd", None, &[]), &[])
        .await
        .unwrap();
    let occ = op_occ("o", "i", S::Starting);
    store.start_operation(&occ, &lease("r", T0)).await.unwrap();
    let mut step = transition(&occ, S::Starting, S::Processing, Version::FIRST, "r");
    step.data = vec![("grant".into(), serde_json::json!({"id": "g-1"}))];
    store.record_step(&step).await.unwrap();
    store.close().await;
    drop(store);

    let again = vnfm_store_sql::SqliteStore::open(&path).await.unwrap();
    let id = vnfm_types::VnfLcmOpOccId("o".into());
    assert_eq!(
        again.get_op_occ_data(&id, "grant").await.unwrap(),
        Some(serde_json::json!({"id": "g-1"}))
    );
    assert_eq!(
        again
            .get_op_occ(&id)
            .await
            .unwrap()
            .unwrap()
            .0
            .operation_state,
        S::Processing
    );
    // A refused step (stale version) writes nothing, its data included.
    let mut stale = transition(&occ, S::Processing, S::Completed, Version::FIRST, "r");
    stale.data = vec![("grant".into(), serde_json::json!({"id": "g-2"}))];
    assert!(again.record_step(&stale).await.is_err());
    assert_eq!(
        again.get_op_occ_data(&id, "grant").await.unwrap(),
        Some(serde_json::json!({"id": "g-1"}))
    );
}
