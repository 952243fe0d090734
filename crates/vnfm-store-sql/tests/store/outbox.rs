//! The notification outbox: claims, retries, dead letters and per-queue order.

use super::*;

store_tests!(
    outbox_claims_retries_and_dead_letters,
    concurrent_outbox_claims_are_disjoint,
    outbox_queues_deliver_in_enqueue_order,
    dead_letters_are_counted_redelivered_in_their_queue_and_discarded,
    concurrent_senders_keep_each_queue_in_order,
    a_delivery_makes_its_callbacks_backlog_due_at_once,
    a_probed_callback_that_answers_makes_its_backlog_due,
);

/// The trace context a row was written with (migration 0017).
const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

async fn outbox_claims_retries_and_dead_letters(db: &TestDb) {
    let s = db.store.as_ref();
    s.enqueue(&[
        NewOutboxRow {
            traceparent: Some(TRACEPARENT.into()),
            ..note("sub-c", 1, Timestamp(100))
        },
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
    // The trace context comes back with its row; a row written without one has none.
    assert_eq!(
        due.iter()
            .map(|r| r.traceparent.as_deref())
            .collect::<Vec<_>>(),
        vec![None, Some(TRACEPARENT)]
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
    s.outbox_delivered(second, Timestamp(40_001)).await.unwrap();
    assert!(matches!(
        s.outbox_delivered(second, Timestamp(40_002))
            .await
            .unwrap_err(),
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

    // A failed head keeps its place: the queue waits for its retry, other queues go on (a
    // delivery to another callback changes nothing for it).
    let head = |n: i64| heads.iter().find(|r| r.payload["n"] == n).unwrap().id;
    s.outbox_retry(head(1), Timestamp(5_000), "HTTP 503")
        .await
        .unwrap();
    s.outbox_delivered(head(4), Timestamp(25)).await.unwrap();
    assert!(
        claim("sender-2", 30).await.is_empty(),
        "row 2 overtook row 1"
    );

    // Row 3 reaches sub-a's callback: the callback answers again, so its failed head is due
    // at once instead of at 5,000, still ahead of the row behind it.
    s.outbox_delivered(head(3), Timestamp(40)).await.unwrap();
    let retried = claim("sender-2", 50).await;
    assert_eq!(numbers(&retried), vec![1]);
    s.outbox_delivered(retried[0].id, Timestamp(51))
        .await
        .unwrap();
    let next = claim("sender-2", 52).await;
    assert_eq!(numbers(&next), vec![2]);

    // A dead row no longer holds its queue back.
    s.outbox_dead(next[0].id, "HTTP 410").await.unwrap();
    assert_eq!(numbers(&claim("sender-3", 53).await), vec![5]);
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
    s.outbox_delivered(id(3), Timestamp(0)).await.unwrap();

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
    s.outbox_delivered(again[0].id, Timestamp(0)).await.unwrap();
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
                    store.outbox_delivered(row.id, Timestamp(0)).await.unwrap();
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

/// A subscriber back after an outage: the heads of its queues wait on back-offs of their own
/// (up to the maximum), and the first delivery that reaches it makes every one of them due,
/// so the backlog goes at once, each queue in order; another callback's retries keep their
/// time, and so does a row scheduled for later that never failed.
async fn a_delivery_makes_its_callbacks_backlog_due_at_once(db: &TestDb) {
    let s = db.store.as_ref();
    let mut rows: Vec<NewOutboxRow> = (1..=10)
        .map(|n| queued("sub-a", &format!("vnf-{}", n % 5), n))
        .collect();
    rows.push(queued("sub-b", "vnf-1", 11));
    rows.push(note("sub-a", 12, Timestamp(900_000)));
    s.enqueue(&rows).await.unwrap();
    let claim = |at: i64| async move {
        s.outbox_due(Timestamp(at), 100, "sender", Timestamp(at + 1000))
            .await
            .unwrap()
    };
    // The outage: every head fails, each rescheduled at its own back-off.
    let heads = claim(10).await;
    assert_eq!(numbers(&heads), vec![1, 2, 3, 4, 5, 11]);
    for (i, row) in heads.iter().enumerate() {
        let at = 100_000 + 60_000 * i64::try_from(i).unwrap();
        s.outbox_retry(row.id, Timestamp(at), "connection refused")
            .await
            .unwrap();
    }
    assert!(claim(20).await.is_empty());
    // A new notification to sub-a goes first and is delivered: sub-a is back.
    s.enqueue(&[queued("sub-a", "vnf-new", 13)]).await.unwrap();
    let fresh = claim(30).await;
    assert_eq!(numbers(&fresh), vec![13]);
    s.outbox_delivered(fresh[0].id, Timestamp(40))
        .await
        .unwrap();
    // Every failed head of sub-a is due now; sub-b's retry and row 12 keep their time.
    let released = claim(50).await;
    assert_eq!(numbers(&released), vec![1, 2, 3, 4, 5]);
    for row in &released {
        s.outbox_delivered(row.id, Timestamp(60)).await.unwrap();
    }
    // The rows behind them follow in their queues' order.
    assert_eq!(numbers(&claim(70).await), vec![6, 7, 8, 9, 10]);
    let all = outbox_all(s).await;
    let waiting: Vec<_> = all
        .iter()
        .filter(|r| [11, 12].contains(&r.payload["n"].as_i64().unwrap()))
        .map(|r| (r.payload["n"].as_i64().unwrap(), r.next_attempt_at.0))
        .collect();
    assert_eq!(waiting, vec![(11, 400_000), (12, 900_000)]);
}

/// The callbacks whose rows wait in back-off are listed (one subscription each) for the
/// deliverer to probe, and a callback that answers its probe has those rows due at once:
/// before, its backlog waited for the next scheduled retry of each head.
async fn a_probed_callback_that_answers_makes_its_backlog_due(db: &TestDb) {
    let s = db.store.as_ref();
    s.enqueue(&[
        queued("sub-a", "vnf-1", 1),
        queued("sub-a", "vnf-1", 2),
        queued("sub-b", "vnf-1", 3),
        // Scheduled later, never tried: not waiting in back-off.
        note("sub-c", 4, Timestamp(90_000)),
    ])
    .await
    .unwrap();
    assert!(
        s.outbox_waiting_callbacks(Timestamp(0), 10)
            .await
            .unwrap()
            .is_empty(),
        "nothing has failed yet"
    );
    let heads = s
        .outbox_due(Timestamp(10), 10, "sender", Timestamp(1_000))
        .await
        .unwrap();
    assert_eq!(numbers(&heads), vec![1, 3]);
    for h in &heads {
        s.outbox_retry(h.id, Timestamp(600_000), "connection refused")
            .await
            .unwrap();
    }
    let waiting = s.outbox_waiting_callbacks(Timestamp(20), 10).await.unwrap();
    let listed: Vec<(&str, &str)> = waiting
        .iter()
        .map(|w| (w.callback_uri.as_str(), w.subscription_id.as_str()))
        .collect();
    assert_eq!(
        listed,
        [
            ("http://nfvo/callback/sub-a", "sub-a"),
            ("http://nfvo/callback/sub-b", "sub-b")
        ]
    );
    // Rows retried before `later_than` need no probe.
    assert!(
        s.outbox_waiting_callbacks(Timestamp(600_000), 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        s.outbox_due(Timestamp(30), 10, "sender", Timestamp(1_000))
            .await
            .unwrap()
            .is_empty(),
        "the heads wait for their retry"
    );
    // sub-a's callback answers its probe: its head is due now, sub-b's still waits.
    let made_due = s
        .outbox_callback_answers("http://nfvo/callback/sub-a", Timestamp(40))
        .await
        .unwrap();
    assert_eq!(made_due, 1);
    let due = s
        .outbox_due(Timestamp(40), 10, "sender", Timestamp(2_000))
        .await
        .unwrap();
    assert_eq!(numbers(&due), vec![1]);
    let waiting = s.outbox_waiting_callbacks(Timestamp(50), 10).await.unwrap();
    assert_eq!(waiting.len(), 1);
    assert_eq!(waiting[0].callback_uri, "http://nfvo/callback/sub-b");
    assert_eq!(
        s.outbox_callback_answers("http://nfvo/callback/nobody", Timestamp(60))
            .await
            .unwrap(),
        0
    );
}
