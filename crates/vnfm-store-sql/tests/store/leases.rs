//! Leases of running operation occurrences: what a failure or an operator does to them, and
//! how live runners see and claim expired or released ones.

use super::*;

store_tests!(
    failed_temp_drops_the_lease_and_operator_claims_it,
    claim_expired_gives_each_op_occ_to_exactly_one_claimer,
    expired_and_released_leases_are_seen_without_a_claim,
);

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

/// What a live runner polls every second to take over a dead or stopping one's work within
/// seconds: whether any running occurrence's lease expired or was released, read without
/// claiming anything.
async fn expired_and_released_leases_are_seen_without_a_claim(db: &TestDb) {
    let s = db.store.as_ref();
    s.create_instance(&instance("hel-1", "vnfd", None, &[]), &[])
        .await
        .unwrap();
    let occ = op_occ("hel-1-op", "hel-1", S::Starting);
    assert!(!s.has_expired_leases(Timestamp(5_000)).await.unwrap());
    s.start_operation(&occ, &lease("a", Timestamp(5_000)))
        .await
        .unwrap();
    assert!(!s.has_expired_leases(Timestamp(4_999)).await.unwrap());
    assert!(s.has_expired_leases(Timestamp(5_001)).await.unwrap());
    // Seen, not taken: the lease is still A's, which renews it.
    assert_eq!(s.lease(&occ.id).await.unwrap().unwrap().owner, "a");
    s.renew_lease(&occ.id, "a", Timestamp(9_000)).await.unwrap();
    assert!(!s.has_expired_leases(Timestamp(5_001)).await.unwrap());
    // Released at shutdown: seen at once.
    s.release_lease(&occ.id, "a").await.unwrap();
    assert!(s.has_expired_leases(Timestamp(0)).await.unwrap());
    let claimed = s
        .claim_expired("b", Timestamp(0), Timestamp(6_000), 10)
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    assert!(!s.has_expired_leases(Timestamp(5_999)).await.unwrap());
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
