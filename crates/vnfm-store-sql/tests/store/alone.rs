//! Steps and begun operations that enqueue no notification: on PostgreSQL each is one
//! statement that commits by itself (the instance's row lock and the checks inside it), so it
//! must write all of itself or nothing, refuse exactly as the transaction does, and keep one
//! winner among concurrent writers. SQLite runs the same tests through its transactions.

use super::*;
use vnfm_store::StartCondition;

store_tests!(
    a_quiet_step_refused_writes_nothing_and_says_why,
    a_quiet_begin_is_written_whole_or_not_at_all,
    concurrent_quiet_begins_admit_exactly_one,
    concurrent_quiet_steps_of_one_occurrence_admit_exactly_one,
    a_quiet_step_racing_an_instance_update_leaves_one_winner,
    a_quiet_last_step_racing_a_start_leaves_the_instance_to_one,
    a_quiet_step_and_begin_are_one_statement_on_postgres,
);

/// A step of `occ` from `from` (at `version`) to `to` by `owner` with a journal row, a data
/// entry and, with `inst`, the instance expected at `inst_version`; no notification.
fn quiet_step(
    occ: &vnfm_types::VnfLcmOpOcc,
    (from, to): (
        vnfm_types::LcmOperationStateType,
        vnfm_types::LcmOperationStateType,
    ),
    version: Version,
    owner: &str,
    inst: Option<(VnfInstance, Version)>,
) -> StepRecord {
    StepRecord {
        journal: Some(step("infra:instantiate", StepOutcome::Completed)),
        data: vec![("grant".into(), json!({"owner": owner}))],
        instance: inst,
        ..transition(occ, from, to, version, owner)
    }
}

fn at(version: i64) -> StartCondition {
    StartCondition {
        instance_version: Version(version),
        no_vims_created: false,
    }
}

/// Asserts that `occ` is still at `version` in `state`, with no journal row and no data.
async fn untouched(s: &dyn Store, occ: &VnfLcmOpOccId, state: S, version: Version) {
    let (got, v) = s.get_op_occ(occ).await.unwrap().unwrap();
    assert_eq!((got.operation_state, v), (state, version));
    assert!(s.journal(occ).await.unwrap().is_empty());
    assert_eq!(s.get_op_occ_data(occ, "grant").await.unwrap(), None);
}

async fn a_quiet_step_refused_writes_nothing_and_says_why(db: &TestDb) {
    let s = db.store.as_ref();
    let inst = instance("i-quiet", "vnfd", None, &["vim-a"]);
    s.create_instance(&inst, &[]).await.unwrap();
    let occ = op_occ("o-quiet", "i-quiet", S::Starting);
    s.start_operation(&occ, &lease("r1", Timestamp(1000)))
        .await
        .unwrap();
    let mut meanwhile = inst.clone();
    meanwhile.vnf_instance_name = Some("meanwhile".into());
    s.update_instance(&meanwhile, Version(1)).await.unwrap();

    // The instance is stale: the occurrence would move, the instance would not.
    let mut changed = inst.clone();
    changed.vnf_instance_name = Some("by the step".into());
    let moving = (S::Starting, S::Processing);
    let stale = quiet_step(
        &occ,
        moving,
        Version(1),
        "r1",
        Some((changed.clone(), Version(1))),
    );
    let err = s.record_step(&stale).await.unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::VersionMismatch {
                kind: "VNF instance",
                expected: Version(1),
                found: Version(2),
                ..
            }
        ),
        "{err:?}"
    );
    untouched(s, &occ.id, S::Starting, Version(1)).await;
    assert_eq!(
        s.get_instance(&inst.id).await.unwrap().unwrap(),
        (meanwhile.clone(), Version(2))
    );

    // The occurrence is stale too: its refusal is the one reported, as the transaction's.
    let both = quiet_step(
        &occ,
        moving,
        Version(4),
        "r1",
        Some((changed.clone(), Version(1))),
    );
    let err = s.record_step(&both).await.unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::VersionMismatch {
                kind: "op-occ",
                expected: Version(4),
                found: Version(1),
                ..
            }
        ),
        "{err:?}"
    );
    untouched(s, &occ.id, S::Starting, Version(1)).await;

    // Another runner took the occurrence over: the lease is lost, the instance (at its
    // current version) not written.
    let claimed = s
        .claim_expired("r2", Timestamp(2000), Timestamp(60_000), 10)
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    let lost = quiet_step(
        &occ,
        moving,
        Version(1),
        "r1",
        Some((changed.clone(), Version(2))),
    );
    let err = s.record_step(&lost).await.unwrap_err();
    match &err {
        StoreError::Conflict(Conflict::LeaseLost { holder, .. }) => {
            assert_eq!(holder.as_deref(), Some("r2"));
        }
        other => panic!("{other:?}"),
    }
    untouched(s, &occ.id, S::Starting, Version(1)).await;
    assert_eq!(
        s.get_instance(&inst.id).await.unwrap().unwrap().1,
        Version(2)
    );

    // The new owner's step at the current versions writes all of it.
    let mut moved = changed.clone();
    moved.vim_connection_info = instance("x", "vnfd", None, &["vim-b"]).vim_connection_info;
    let good = quiet_step(
        &occ,
        moving,
        Version(1),
        "r2",
        Some((moved.clone(), Version(2))),
    );
    let written = s.record_step(&good).await.unwrap();
    assert_eq!(written.op_occ_version, Version(2));
    assert_eq!(written.instance_version, Some(Version(3)));
    assert_eq!(written.journal_seq, Some(1));
    assert_eq!(
        s.get_instance(&inst.id).await.unwrap().unwrap(),
        (moved, Version(3))
    );
    assert_eq!(
        s.get_op_occ_data(&occ.id, "grant").await.unwrap(),
        Some(json!({"owner": "r2"}))
    );
    // The VIM index follows the document.
    let (vim_a, vim_b) = (VimId::new("vim-a"), VimId::new("vim-b"));
    assert!(s.instances_using_vim(&vim_a).await.unwrap().is_empty());
    assert_eq!(
        s.instances_using_vim(&vim_b).await.unwrap(),
        vec![inst.id.clone()]
    );

    // The same step again is stale, and the last step without the instance finishes it.
    let err = s.record_step(&good).await.unwrap_err();
    assert!(matches!(err, StoreError::VersionMismatch { .. }), "{err:?}");
    let last = quiet_step(&occ, (S::Processing, S::Completed), Version(2), "r2", None);
    let written = s.record_step(&last).await.unwrap();
    assert_eq!(
        (
            written.op_occ_version,
            written.instance_version,
            written.journal_seq
        ),
        (Version(3), None, Some(2))
    );
    assert_eq!(s.lease(&occ.id).await.unwrap(), None);
    assert!(s.outbox_pending_rows(None, 10).await.unwrap().is_empty());
}

async fn a_quiet_begin_is_written_whole_or_not_at_all(db: &TestDb) {
    let s = db.store.as_ref();
    let inst = instance("i-qbegin", "vnfd", None, &[]);
    s.create_instance(&inst, &[]).await.unwrap();
    let occ = op_occ("o-qbegin", "i-qbegin", S::Starting);
    let mut with_vim = inst.clone();
    with_vim.vnf_instance_name = Some("begun".into());
    let first = |inst: Option<(VnfInstance, Version)>| {
        quiet_step(
            &occ,
            (S::Starting, S::Processing),
            Version::FIRST,
            "r1",
            inst,
        )
    };

    // The instance changed since the caller read it: nothing written.
    let mut meanwhile = inst.clone();
    meanwhile.vnf_instance_name = Some("meanwhile".into());
    s.update_instance(&meanwhile, Version(1)).await.unwrap();
    let none = s
        .begin_operation(&occ, &lease("r1", T0), &at(1), &first(None))
        .await
        .unwrap();
    assert_eq!(none, None);
    assert!(s.get_op_occ(&occ.id).await.unwrap().is_none());
    assert!(s.active_op_occ(&inst.id).await.unwrap().is_none());

    // The instance created a VIM and the condition asks that it did not: nothing written.
    s.create_vim(&VimRecord {
        id: VimId::new("vim-by-i-qbegin"),
        name: "cluster".into(),
        vim_type: "kubernetes".into(),
        public: json!({}),
        secret: vec![1],
        created_by_instance: Some(inst.id.clone()),
        project: None,
        shared: false,
    })
    .await
    .unwrap();
    let unless_vims = StartCondition {
        instance_version: Version(2),
        no_vims_created: true,
    };
    let none = s
        .begin_operation(&occ, &lease("r1", T0), &unless_vims, &first(None))
        .await
        .unwrap();
    assert_eq!(none, None);
    assert!(s.get_op_occ(&occ.id).await.unwrap().is_none());

    // No such instance.
    let ghost = op_occ("o-qghost", "no-such-instance", S::Starting);
    let ghost_move = quiet_step(
        &ghost,
        (S::Starting, S::Processing),
        Version::FIRST,
        "r1",
        None,
    );
    let err = s
        .begin_operation(&ghost, &lease("r1", T0), &at(1), &ghost_move)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }), "{err:?}");

    // At the current version it begins: the occurrence, its move, journal, data and the
    // instance together.
    let written = s
        .begin_operation(
            &occ,
            &lease("r1", T0),
            &at(2),
            &first(Some((with_vim.clone(), Version(2)))),
        )
        .await
        .unwrap()
        .expect("the condition holds");
    assert_eq!(
        (
            written.op_occ_version,
            written.instance_version,
            written.journal_seq
        ),
        (Version(2), Some(Version(3)), Some(1))
    );
    let (got, v) = s.get_op_occ(&occ.id).await.unwrap().unwrap();
    assert_eq!((got.operation_state, v), (S::Processing, Version(2)));
    assert_eq!(
        s.get_instance(&inst.id).await.unwrap().unwrap(),
        (with_vim, Version(3))
    );
    assert_eq!(s.journal(&occ.id).await.unwrap().len(), 1);
    assert_eq!(
        s.get_op_occ_data(&occ.id, "grant").await.unwrap(),
        Some(json!({"owner": "r1"}))
    );
    assert_eq!(s.lease(&occ.id).await.unwrap().unwrap().owner, "r1");

    // It holds the instance: another begin is refused naming it, and writes nothing.
    let other = op_occ("o-qbegin-2", "i-qbegin", S::Starting);
    let other_move = quiet_step(
        &other,
        (S::Starting, S::Processing),
        Version::FIRST,
        "r2",
        None,
    );
    let err = s
        .begin_operation(&other, &lease("r2", T0), &at(3), &other_move)
        .await
        .unwrap_err();
    assert_busy(err, "o-qbegin", S::Processing);
    assert!(s.get_op_occ(&other.id).await.unwrap().is_none());
    // Its id is taken.
    let again = quiet_step(
        &occ,
        (S::Starting, S::Processing),
        Version::FIRST,
        "r1",
        None,
    );
    let err = s
        .begin_operation(&occ, &lease("r1", T0), &at(3), &again)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Conflict(Conflict::AlreadyExists { .. } | Conflict::InstanceBusy { .. })
        ),
        "{err:?}"
    );
}

async fn concurrent_quiet_begins_admit_exactly_one(db: &TestDb) {
    db.store
        .create_instance(&instance("contended-q", "vnfd", None, &[]), &[])
        .await
        .unwrap();
    let stores = [db.store.clone(), db.reopen().await.unwrap()];
    let mut tasks = Vec::new();
    for i in 0..50 {
        let s = stores[i % 2].clone();
        let occ = op_occ(&format!("qbegin-{i:02}"), "contended-q", S::Starting);
        tasks.push(tokio::spawn(async move {
            let owner = format!("runner-{i}");
            let inst = instance("contended-q", "vnfd", Some(&owner), &[]);
            let record = quiet_step(
                &occ,
                (S::Starting, S::Processing),
                Version::FIRST,
                &owner,
                Some((inst, Version(1))),
            );
            let r = s
                .begin_operation(&occ, &lease(&owner, T0), &at(1), &record)
                .await;
            (occ.id.clone(), owner, r)
        }));
    }
    let mut winners = Vec::new();
    let mut losers = Vec::new();
    for t in tasks {
        match t.await.unwrap() {
            (id, owner, Ok(Some(_))) => winners.push((id, owner)),
            // A begin that read the instance after the winner's write finds it changed.
            (_, _, Ok(None)) => {}
            (_, _, Err(e)) => losers.push(e),
        }
    }
    assert_eq!(winners.len(), 1, "winners: {winners:?}");
    let (winner, owner) = &winners[0];
    for e in losers {
        assert_busy(e, winner.as_str(), S::Processing);
    }
    let s = db.store.as_ref();
    let (got, v) = s
        .get_instance(&VnfInstanceId::new("contended-q"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(v, Version(2));
    assert_eq!(got.vnf_instance_name.as_ref(), Some(owner));
    let page = s
        .list_op_occs(&OpOccQuery {
            vnf_instance_id: Some(VnfInstanceId::new("contended-q")),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(page.items.len(), 1);
}

async fn concurrent_quiet_steps_of_one_occurrence_admit_exactly_one(db: &TestDb) {
    let s = db.store.as_ref();
    let inst = instance("i-dup", "vnfd", None, &[]);
    s.create_instance(&inst, &[]).await.unwrap();
    let occ = op_occ("o-dup", "i-dup", S::Starting);
    s.start_operation(&occ, &lease("r1", Timestamp(i64::MAX)))
        .await
        .unwrap();
    let stores = [db.store.clone(), db.reopen().await.unwrap()];
    let mut tasks = Vec::new();
    for i in 0..20 {
        let s = stores[i % 2].clone();
        let mut named = inst.clone();
        named.vnf_instance_name = Some(format!("writer-{i}"));
        let record = quiet_step(
            &occ,
            (S::Starting, S::Processing),
            Version(1),
            "r1",
            Some((named, Version(1))),
        );
        tasks.push(tokio::spawn(
            async move { (i, s.record_step(&record).await) },
        ));
    }
    let mut winners = Vec::new();
    for t in tasks {
        match t.await.unwrap() {
            (i, Ok(w)) => {
                assert_eq!(
                    (w.op_occ_version, w.instance_version, w.journal_seq),
                    (Version(2), Some(Version(2)), Some(1))
                );
                winners.push(i);
            }
            (_, Err(e)) => assert!(
                matches!(
                    e,
                    StoreError::VersionMismatch {
                        kind: "op-occ",
                        found: Version(2),
                        ..
                    }
                ),
                "{e:?}"
            ),
        }
    }
    assert_eq!(winners.len(), 1, "winners: {winners:?}");
    let (got, v) = s.get_instance(&inst.id).await.unwrap().unwrap();
    assert_eq!(v, Version(2));
    assert_eq!(
        got.vnf_instance_name,
        Some(format!("writer-{}", winners[0]))
    );
    assert_eq!(s.journal(&occ.id).await.unwrap().len(), 1);
}

async fn a_quiet_step_racing_an_instance_update_leaves_one_winner(db: &TestDb) {
    let other = db.reopen().await.unwrap();
    for round in 0..10 {
        let s = db.store.clone();
        let id = format!("i-race-{round}");
        let inst = instance(&id, "vnfd", None, &[]);
        s.create_instance(&inst, &[]).await.unwrap();
        let occ = op_occ(&format!("o-race-{round}"), &id, S::Starting);
        s.start_operation(&occ, &lease("r1", Timestamp(i64::MAX)))
            .await
            .unwrap();
        let mut by_step = inst.clone();
        by_step.vnf_instance_name = Some("by the step".into());
        let record = quiet_step(
            &occ,
            (S::Starting, S::Processing),
            Version(1),
            "r1",
            Some((by_step, Version(1))),
        );
        let mut by_update = inst.clone();
        by_update.vnf_instance_name = Some("by the update".into());
        let stepping = tokio::spawn({
            let s = s.clone();
            async move { s.record_step(&record).await }
        });
        let updating = tokio::spawn({
            let other = other.clone();
            async move { other.update_instance(&by_update, Version(1)).await }
        });
        let (stepped, updated) = (stepping.await.unwrap(), updating.await.unwrap());
        let (got, v) = s.get_instance(&inst.id).await.unwrap().unwrap();
        assert_eq!(v, Version(2));
        let stale = |e: &StoreError| {
            matches!(
                e,
                StoreError::VersionMismatch {
                    kind: "VNF instance",
                    found: Version(2),
                    ..
                }
            )
        };
        match (stepped, updated) {
            (Ok(w), Err(e)) => {
                assert!(stale(&e), "{e:?}");
                assert_eq!(w.instance_version, Some(Version(2)));
                assert_eq!(got.vnf_instance_name.as_deref(), Some("by the step"));
                assert_eq!(s.journal(&occ.id).await.unwrap().len(), 1);
            }
            (Err(e), Ok(_)) => {
                assert!(stale(&e), "{e:?}");
                assert_eq!(got.vnf_instance_name.as_deref(), Some("by the update"));
                untouched(s.as_ref(), &occ.id, S::Starting, Version(1)).await;
            }
            other => panic!("round {round}: not exactly one winner: {other:?}"),
        }
    }
}

/// The holder's last step writes the instance while a start waits to take it: the step is
/// never refused, the start takes the instance or is told it is busy, and nothing deadlocks
/// (the step locks the instance before the occurrence, as a start does).
async fn a_quiet_last_step_racing_a_start_leaves_the_instance_to_one(db: &TestDb) {
    let other = db.reopen().await.unwrap();
    for round in 0..10 {
        let s = db.store.clone();
        let id = format!("i-last-{round}");
        let inst = instance(&id, "vnfd", None, &[]);
        s.create_instance(&inst, &[]).await.unwrap();
        let holder = op_occ(&format!("o-last-{round}"), &id, S::Starting);
        s.start_operation(&holder, &lease("r1", Timestamp(i64::MAX)))
            .await
            .unwrap();
        s.record_step(&transition(
            &holder,
            S::Starting,
            S::Processing,
            Version(1),
            "r1",
        ))
        .await
        .unwrap();
        let mut done = inst.clone();
        done.instantiation_state = InstantiationState::Instantiated;
        let last = quiet_step(
            &holder,
            (S::Processing, S::Completed),
            Version(2),
            "r1",
            Some((done, Version(1))),
        );
        let next = op_occ(&format!("o-next-{round}"), &id, S::Starting);
        let finishing = tokio::spawn({
            let s = s.clone();
            async move { s.record_step(&last).await }
        });
        let starting = tokio::spawn({
            let other = other.clone();
            let next = next.clone();
            async move { other.start_operation(&next, &lease("r2", T0)).await }
        });
        let finished = finishing.await.unwrap();
        assert_eq!(finished.unwrap().instance_version, Some(Version(2)));
        match starting.await.unwrap() {
            Ok(v) => assert_eq!(v, Version(2)),
            Err(e) => assert_busy(e, holder.id.as_str(), S::Processing),
        }
    }
}

/// On PostgreSQL a step and a begun operation with no notification wait for the instance's
/// lock inside their one statement, the one that writes them (not in a `SELECT ... FOR
/// UPDATE` of their own before it). SQLite has no such statement.
async fn a_quiet_step_and_begin_are_one_statement_on_postgres(db: &TestDb) {
    use sqlx::Connection;
    let common::Backend::Postgres { options, .. } = &db.backend else {
        return;
    };
    let s = db.store.clone();
    let inst = instance("i-one", "vnfd", None, &[]);
    s.create_instance(&inst, &[]).await.unwrap();
    let occ = op_occ("o-one", "i-one", S::Starting);
    let first = quiet_step(
        &occ,
        (S::Starting, S::Processing),
        Version::FIRST,
        "r1",
        None,
    );
    let mut raw = sqlx::PgConnection::connect_with(options).await.unwrap();
    let mut watcher = sqlx::PgConnection::connect_with(options).await.unwrap();

    // The begun operation.
    let mut holding = raw.begin().await.unwrap();
    sqlx::query("SELECT version FROM vnf_instances WHERE id = 'i-one' FOR UPDATE")
        .execute(&mut *holding)
        .await
        .unwrap();
    let begin = tokio::spawn({
        let s = s.clone();
        let occ = occ.clone();
        async move {
            s.begin_operation(&occ, &lease("r1", T0), &at(1), &first)
                .await
        }
    });
    let waiting = waiting_statement(&mut watcher).await;
    holding.commit().await.unwrap();
    let begun = begin.await.unwrap().unwrap();
    assert!(begun.is_some());
    assert!(
        waiting.starts_with("WITH instance_locked AS MATERIALIZED"),
        "{}",
        waiting
    );
    assert!(waiting.contains("INSERT INTO op_occs"), "{}", waiting);

    // A step writing the instance.
    let mut holding = raw.begin().await.unwrap();
    sqlx::query("SELECT version FROM vnf_instances WHERE id = 'i-one' FOR UPDATE")
        .execute(&mut *holding)
        .await
        .unwrap();
    let mut done = inst.clone();
    done.instantiation_state = InstantiationState::Instantiated;
    let last = quiet_step(
        &occ,
        (S::Processing, S::Completed),
        Version(2),
        "r1",
        Some((done, Version(1))),
    );
    let step = tokio::spawn({
        let s = s.clone();
        async move { s.record_step(&last).await }
    });
    let waiting = waiting_statement(&mut watcher).await;
    holding.commit().await.unwrap();
    let written = step.await.unwrap().unwrap();
    assert_eq!(written.instance_version, Some(Version(2)));
    assert!(
        waiting.starts_with("WITH instance_locked AS MATERIALIZED"),
        "{}",
        waiting
    );
    assert!(waiting.contains("UPDATE op_occs"), "{}", waiting);
}

/// The statement of the one backend of this database waiting for a lock.
async fn waiting_statement(watcher: &mut sqlx::PgConnection) -> String {
    for _ in 0..200 {
        let row: Option<String> = sqlx::query_scalar(
            "SELECT query FROM pg_stat_activity \
             WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .fetch_optional(&mut *watcher)
        .await
        .unwrap();
        if let Some(row) = row {
            return row;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no statement waited for the instance's lock");
}
