//! Operation occurrences: the per-instance lock, steps, lists and hook data (their leases are
//! in `leases`).

use super::*;

store_tests!(
    start_operation_conflicts_in_every_non_final_state,
    concurrent_starts_on_one_instance_admit_exactly_one,
    concurrent_starts_from_two_processes_admit_exactly_one,
    record_step_with_lost_lease_writes_nothing,
    record_step_is_atomic_across_op_occ_instance_journal_outbox,
    list_op_occs_filters_and_pages,
    op_occ_data_survives_and_is_scoped,
    a_step_writes_its_data_and_journal_only_when_it_moves,
    a_start_waiting_for_the_holders_last_step_takes_the_instance,
    the_text_of_an_op_occ_is_its_document_as_its_last_move_wrote_it,
);

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
    // Strings the documents hold (the occurrence's id inside its `_links`), searched 4 rows
    // (of those the other conditions leave) at a time: pages end early and go on to every
    // match.
    let strings = |any_of: &[&str], whole: bool| {
        vec![vnfm_sol013::RequiredStrings {
            any_of: any_of.iter().map(|s| (*s).to_owned()).collect(),
            whole,
        }]
    };
    let mut q = OpOccQuery {
        document_strings: strings(&["lo-1-", "lo-4-"], false),
        states: Some(vec![S::Completed]),
        scan_limit: Some(4),
        limit: Some(10),
        ..Default::default()
    };
    let p = s.list_op_occs(&q).await.unwrap();
    assert_eq!(ids(&p), vec!["lo-1-0", "lo-1-1"]);
    assert_eq!(p.next.as_deref(), Some("lo-1-1"));
    let mut found = Vec::new();
    for pages in 0.. {
        assert!(pages < 20, "paging does not end");
        let p = s.list_op_occs(&q).await.unwrap();
        found.extend(ids(&p));
        match p.next {
            Some(next) => q.after = Some(next),
            None => break,
        }
    }
    assert_eq!(found, vec!["lo-1-0", "lo-1-1", "lo-4-0", "lo-4-1"]);
    // A whole string: the operation's name; a part of one is not it.
    let whole = |q: &[&str]| OpOccQuery {
        document_strings: strings(q, true),
        ..Default::default()
    };
    assert_eq!(
        s.list_op_occs(&whole(&["SCALE"]))
            .await
            .unwrap()
            .items
            .len(),
        6
    );
    assert!(
        s.list_op_occs(&whole(&["SCAL"]))
            .await
            .unwrap()
            .items
            .is_empty()
    );
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

/// A step's data entries are written together (of two with one key, the later wins) with its
/// journal row; a step refused as stale writes neither.
async fn a_step_writes_its_data_and_journal_only_when_it_moves(db: &TestDb) {
    let s = db.store.as_ref();
    s.create_instance(&instance("i-step", "vnfd", None, &[]), &[])
        .await
        .unwrap();
    let occ = op_occ("o-step", "i-step", S::Starting);
    s.start_operation(&occ, &lease("r", T0)).await.unwrap();
    let first = StepRecord {
        journal: Some(step("plan:forward", StepOutcome::Started)),
        data: vec![
            ("a".into(), json!(1)),
            ("b".into(), json!({"x": 2})),
            ("a".into(), json!(3)),
        ],
        ..transition(&occ, S::Starting, S::Processing, Version(1), "r")
    };
    let written = s.record_step(&first).await.unwrap();
    assert_eq!(
        (written.op_occ_version, written.journal_seq),
        (Version(2), Some(1))
    );
    let id = &occ.id;
    assert_eq!(s.get_op_occ_data(id, "a").await.unwrap(), Some(json!(3)));
    assert_eq!(
        s.get_op_occ_data(id, "b").await.unwrap(),
        Some(json!({"x": 2}))
    );

    // The same move again is stale: nothing of it is written.
    let stale = StepRecord {
        data: vec![("a".into(), json!("stale"))],
        ..first.clone()
    };
    let err = s.record_step(&stale).await.unwrap_err();
    assert!(matches!(err, StoreError::VersionMismatch { .. }), "{err:?}");
    assert_eq!(s.journal(id).await.unwrap().len(), 1);
    assert_eq!(s.get_op_occ_data(id, "a").await.unwrap(), Some(json!(3)));

    let last = StepRecord {
        journal: Some(step("plan:forward", StepOutcome::Completed)),
        data: vec![("b".into(), json!("done"))],
        ..transition(&occ, S::Processing, S::Completed, Version(2), "r")
    };
    let written = s.record_step(&last).await.unwrap();
    assert_eq!(
        (written.op_occ_version, written.journal_seq),
        (Version(3), Some(2))
    );
    assert_eq!(
        s.get_op_occ_data(id, "b").await.unwrap(),
        Some(json!("done"))
    );
    let journal = s.journal(id).await.unwrap();
    assert_eq!(
        journal.iter().map(|j| j.seq).collect::<Vec<_>>(),
        vec![1, 2]
    );
}

/// A start that waits for the instance's lock while the holder's last step commits takes the
/// instance once that step is committed, rather than reporting the holder it saw before the
/// wait. PostgreSQL only: a SQLite write transaction excludes every other one from its start.
async fn a_start_waiting_for_the_holders_last_step_takes_the_instance(db: &TestDb) {
    use sqlx::Connection;
    let common::Backend::Postgres { options, .. } = &db.backend else {
        return;
    };
    let s = db.store.clone();
    s.create_instance(&instance("i-race", "vnfd", None, &[]), &[])
        .await
        .unwrap();
    let holder = op_occ("o-holder", "i-race", S::Starting);
    s.start_operation(&holder, &lease("r", T0)).await.unwrap();
    s.record_step(&transition(
        &holder,
        S::Starting,
        S::Processing,
        Version(1),
        "r",
    ))
    .await
    .unwrap();

    // The holder's last step, as record_step writes it: the instance row locked, the
    // occurrence final; not committed yet.
    let mut raw = sqlx::PgConnection::connect_with(options).await.unwrap();
    let mut last_step = raw.begin().await.unwrap();
    sqlx::query("SELECT version FROM vnf_instances WHERE id = 'i-race' FOR UPDATE")
        .execute(&mut *last_step)
        .await
        .unwrap();
    sqlx::query("UPDATE op_occs SET state = 'COMPLETED', lease_owner = NULL WHERE id = 'o-holder'")
        .execute(&mut *last_step)
        .await
        .unwrap();

    let next = op_occ("o-next", "i-race", S::Starting);
    let start = tokio::spawn({
        let s = s.clone();
        async move { s.start_operation(&next, &lease("r", T0)).await }
    });
    // The start is waiting for the lock.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!start.is_finished());
    last_step.commit().await.unwrap();
    let started = start.await.unwrap();
    assert_eq!(started.unwrap(), Version(1));
    let (active, _) = s
        .active_op_occ(&VnfInstanceId::new("i-race"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(active.id.as_str(), "o-next");
}

async fn the_text_of_an_op_occ_is_its_document_as_its_last_move_wrote_it(db: &TestDb) {
    let s = db.store.as_ref();
    let unknown = VnfLcmOpOccId::new("o-none");
    assert_eq!(s.get_op_occ_text(&unknown).await.unwrap(), None);
    s.create_instance(&instance("i-text", "vnfd", None, &[]), &[])
        .await
        .unwrap();
    let occ = op_occ("o-text", "i-text", S::Starting);
    s.start_operation(&occ, &lease("r", Timestamp(i64::MAX)))
        .await
        .unwrap();
    s.record_step(&transition(
        &occ,
        S::Starting,
        S::Processing,
        Version(1),
        "r",
    ))
    .await
    .unwrap();
    let text = s.get_op_occ_text(&occ.id).await.unwrap().unwrap();
    let (typed, _) = s.get_op_occ(&occ.id).await.unwrap().unwrap();
    // The text is the document as stored: parsed, it is the occurrence the typed read gives,
    // in the state of the last move.
    let parsed: vnfm_types::VnfLcmOpOcc = serde_json::from_str(&text).unwrap();
    assert_eq!(parsed, typed);
    assert_eq!(parsed.operation_state, S::Processing);
    assert_eq!(text, serde_json::to_string(&typed).unwrap());
}
