//! Occurrences that begin at once: the start and the first move written together, or nothing.

use super::*;
use vnfm_store::StartCondition;

store_tests!(
    begin_operation_writes_the_start_and_the_first_move_together,
    begin_operation_writes_nothing_when_its_condition_no_longer_holds,
    begin_operation_refuses_as_start_and_record_step_do,
    concurrent_begins_on_one_instance_admit_exactly_one,
);

/// The first move of `occ` (in `STARTING`, version 1) to `PROCESSING` by `owner`.
fn first_move(occ: &vnfm_types::VnfLcmOpOcc, owner: &str, inst: Option<VnfInstance>) -> StepRecord {
    StepRecord {
        occ: in_state(occ, S::Processing),
        expected_state: S::Starting,
        expected_version: Version::FIRST,
        owner: owner.into(),
        journal: Some(step("plan:forward", StepOutcome::Started)),
        instance: inst.map(|i| (i, Version(1))),
        outbox: vec![note("sub", 1, T0), note("sub", 2, T0)],
        data: vec![("grant".into(), json!({"id": "g-1"}))],
    }
}

fn at(version: i64) -> StartCondition {
    StartCondition {
        instance_version: Version(version),
        no_vims_created: false,
    }
}

async fn begin_operation_writes_the_start_and_the_first_move_together(db: &TestDb) {
    let s = db.store.as_ref();
    let inst = instance("i-begin", "vnfd", None, &[]);
    s.create_instance(&inst, &[]).await.unwrap();
    let occ = op_occ("o-begin", "i-begin", S::Starting);
    let mut with_vim = inst.clone();
    with_vim.vnf_instance_name = Some("with the operation's VIMs".into());
    let record = first_move(&occ, "r1", Some(with_vim.clone()));

    let written = s
        .begin_operation(&occ, &lease("r1", T0), &at(1), &record)
        .await
        .unwrap()
        .expect("the condition holds");
    assert_eq!(written.op_occ_version, Version(2));
    assert_eq!(written.instance_version, Some(Version(2)));
    assert_eq!(written.journal_seq, Some(1));

    let (got, v) = s.get_op_occ(&occ.id).await.unwrap().unwrap();
    assert_eq!((got.operation_state, v), (S::Processing, Version(2)));
    let (got, v) = s.get_instance(&inst.id).await.unwrap().unwrap();
    assert_eq!((got, v), (with_vim, Version(2)));
    let journal = s.journal(&occ.id).await.unwrap();
    assert_eq!(journal.len(), 1);
    assert_eq!(journal[0].step, "plan:forward");
    assert_eq!(outbox_all(s).await.len(), 2);
    assert_eq!(
        s.get_op_occ_data(&occ.id, "grant").await.unwrap(),
        Some(json!({"id": "g-1"}))
    );
    // The lease is r1's: it renews, and the next step is r1's to record.
    s.renew_lease(&occ.id, "r1", Timestamp(T0.0 + 1))
        .await
        .unwrap();
    assert_eq!(s.lease(&occ.id).await.unwrap().unwrap().owner, "r1");
    // It holds the instance like any started occurrence.
    let other = op_occ("o-begin-2", "i-begin", S::Starting);
    assert_busy(
        s.start_operation(&other, &lease("r2", T0))
            .await
            .unwrap_err(),
        "o-begin",
        S::Processing,
    );
}

async fn begin_operation_writes_nothing_when_its_condition_no_longer_holds(db: &TestDb) {
    let s = db.store.as_ref();
    let inst = instance("i-cond", "vnfd", None, &[]);
    s.create_instance(&inst, &[]).await.unwrap();
    let occ = op_occ("o-cond", "i-cond", S::Starting);
    let record = first_move(&occ, "r1", None);

    // The instance changed after the caller read it at version 1.
    let mut meanwhile = inst.clone();
    meanwhile.vnf_instance_name = Some("meanwhile".into());
    s.update_instance(&meanwhile, Version(1)).await.unwrap();
    let none = s
        .begin_operation(&occ, &lease("r1", T0), &at(1), &record)
        .await
        .unwrap();
    assert_eq!(none, None);
    assert!(s.get_op_occ(&occ.id).await.unwrap().is_none());
    assert!(s.journal(&occ.id).await.unwrap().is_empty());
    assert!(outbox_all(s).await.is_empty());
    assert!(s.active_op_occ(&inst.id).await.unwrap().is_none());

    // The instance registered a VIM: an occurrence that needs it not to have is not begun.
    s.create_vim(&VimRecord {
        id: VimId::new("vim-by-i-cond"),
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
        .begin_operation(&occ, &lease("r1", T0), &unless_vims, &record)
        .await
        .unwrap();
    assert_eq!(none, None);
    assert!(s.get_op_occ(&occ.id).await.unwrap().is_none());
    assert!(outbox_all(s).await.is_empty());

    // Without that requirement, at the current version, it begins.
    let written = s
        .begin_operation(&occ, &lease("r1", T0), &at(2), &record)
        .await
        .unwrap();
    assert!(written.is_some());
    assert_eq!(outbox_all(s).await.len(), 2);
}

async fn begin_operation_refuses_as_start_and_record_step_do(db: &TestDb) {
    let s = db.store.as_ref();
    let inst = instance("i-refuse", "vnfd", None, &[]);
    s.create_instance(&inst, &[]).await.unwrap();

    // No such instance.
    let ghost = op_occ("o-ghost", "no-such-instance", S::Starting);
    let err = s
        .begin_operation(
            &ghost,
            &lease("r1", T0),
            &at(1),
            &first_move(&ghost, "r1", None),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }), "{err:?}");

    // The first move is refused (it names another runner than the lease's): nothing of the
    // start stays behind either.
    let occ = op_occ("o-refuse", "i-refuse", S::Starting);
    let err = s
        .begin_operation(
            &occ,
            &lease("r1", T0),
            &at(1),
            &first_move(&occ, "r2", None),
        )
        .await
        .unwrap_err();
    assert!(err.is_lease_lost(), "{err:?}");
    assert!(s.get_op_occ(&occ.id).await.unwrap().is_none());
    assert!(s.journal(&occ.id).await.unwrap().is_empty());
    assert!(outbox_all(s).await.is_empty());

    // The first move writes the instance at a version it no longer has: nothing of the
    // start, its move, journal, data or notifications stays behind.
    let mut stale = first_move(&occ, "r1", Some(inst.clone()));
    stale.instance = Some((inst.clone(), Version(7)));
    let err = s
        .begin_operation(&occ, &lease("r1", T0), &at(1), &stale)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::VersionMismatch {
                kind: "VNF instance",
                found: Version(1),
                ..
            }
        ),
        "{err:?}"
    );
    assert!(s.get_op_occ(&occ.id).await.unwrap().is_none());
    assert!(s.journal(&occ.id).await.unwrap().is_empty());
    assert_eq!(s.get_op_occ_data(&occ.id, "grant").await.unwrap(), None);
    assert!(outbox_all(s).await.is_empty());
    assert_eq!(
        s.get_instance(&inst.id).await.unwrap().unwrap().1,
        Version(1)
    );

    // A held instance is busy, naming the holder.
    let holder = op_occ("o-holder", "i-refuse", S::Starting);
    s.start_operation(&holder, &lease("r0", T0)).await.unwrap();
    let err = s
        .begin_operation(
            &occ,
            &lease("r1", T0),
            &at(1),
            &first_move(&occ, "r1", None),
        )
        .await
        .unwrap_err();
    assert_busy(err, "o-holder", S::Starting);
    assert!(outbox_all(s).await.is_empty());

    // The id of an existing occurrence is taken.
    let finished = StepRecord {
        occ: in_state(&holder, S::Completed),
        expected_state: S::Starting,
        expected_version: Version::FIRST,
        owner: "r0".into(),
        journal: None,
        instance: None,
        outbox: Vec::new(),
        data: Vec::new(),
    };
    s.record_step(&finished).await.unwrap();
    let err = s
        .begin_operation(
            &holder,
            &lease("r1", T0),
            &at(1),
            &first_move(&holder, "r1", None),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::Conflict(Conflict::AlreadyExists { .. })),
        "{err:?}"
    );
}

async fn concurrent_begins_on_one_instance_admit_exactly_one(db: &TestDb) {
    db.store
        .create_instance(&instance("contended-b", "vnfd", None, &[]), &[])
        .await
        .unwrap();
    let stores = [db.store.clone(), db.reopen().await.unwrap()];
    let mut tasks = Vec::new();
    for i in 0..50 {
        let s = stores[i % 2].clone();
        let occ = op_occ(&format!("begin-{i:02}"), "contended-b", S::Starting);
        tasks.push(tokio::spawn(async move {
            let owner = format!("runner-{i}");
            let record = first_move(&occ, &owner, None);
            let r = s
                .begin_operation(&occ, &lease(&owner, T0), &at(1), &record)
                .await;
            (occ.id.clone(), r)
        }));
    }
    let mut winners = Vec::new();
    let mut losers = Vec::new();
    for t in tasks {
        match t.await.unwrap() {
            (id, Ok(Some(_))) => winners.push(id),
            (_, Ok(None)) => panic!("nothing changed the instance"),
            (_, Err(e)) => losers.push(e),
        }
    }
    assert_eq!(winners.len(), 1, "winners: {winners:?}");
    for e in losers {
        assert_busy(e, winners[0].as_str(), S::Processing);
    }
    // One occurrence, with its own two notifications and nobody else's.
    assert_eq!(outbox_all(db.store.as_ref()).await.len(), 2);
}
