//! Notifications held while a subscriber is down, given up, listed and redelivered.

use super::*;

/// Issue 25, item 2: a subscriber down for a while lost notifications. Here it is down (503)
/// while two VNF instances go through their lifecycles, the server retries (backoff capped at
/// 1 s, more than 10 attempts) and holds each instance's later notifications behind the first undelivered one; once
/// the subscriber is back every notification arrives, each instance's in the order they
/// happened, none given up; `/metrics` shows the outbox while it waits and empty after.
#[vnfm_test_env::needs(corpus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_held_while_the_subscriber_is_down_arrive_in_order_when_it_returns() {
    rustls::crypto::ring::default_provider()
        .install_default()
        .ok();
    let dir = tempfile::tempdir().unwrap();
    let subscriber = Subscriber::start().await;
    let server = start_with(dir.path(), &["--notify-backoff-max", "1"], None);
    let api = Api::connect(&server.base, dir.path()).await;
    let sub = api.subscribe(&subscriber.callback).await;
    let vnfd_id = api.onboard_corpus_package().await;

    subscriber.set_down(true);
    let a = api.create_vnf(&vnfd_id).await;
    let b = api.create_vnf(&vnfd_id).await;
    api.instantiate(&a).await;
    api.instantiate(&b).await;
    api.task(
        &a,
        "scale",
        json!({"type": "SCALE_OUT", "aspectId": "VDU1_scale", "numberOfSteps": 1}),
    )
    .await;
    // Retried, not delivered, not given up: the outbox holds them. Each instance's first
    // notification is refused about 12 times, beyond the 10 attempts after which the server
    // used to give up.
    eventually(60, "delivery attempts to the down subscriber", async || {
        subscriber.refused.load(Ordering::SeqCst) >= 24
    })
    .await;
    let pending = format!(r#"vnfm_notifications{{subscription="{sub}",status="pending"}}"#);
    let dead = format!(r#"vnfm_notifications{{subscription="{sub}",status="dead"}}"#);
    let lag = format!(r#"vnfm_notification_delivery_lag_seconds{{subscription="{sub}"}}"#);
    assert_eq!(api.metric(&pending).await, Some(11));
    assert_eq!(api.metric(&dead).await, Some(0));
    eventually(30, "a delivery lag of a second", async || {
        api.metric(&lag).await.is_some_and(|l| l >= 1)
    })
    .await;
    assert!(subscriber.received.lock().unwrap().is_empty());

    subscriber.set_down(false);
    let (want_a, want_b) = (
        lifecycle(&["INSTANTIATE", "SCALE"]),
        lifecycle(&["INSTANTIATE"]),
    );
    eventually(
        60,
        "every notification after the subscriber returned",
        async || {
            subscriber.sequence(&a).len() >= want_a.len()
                && subscriber.sequence(&b).len() >= want_b.len()
        },
    )
    .await;
    assert_eq!(subscriber.sequence(&a), want_a);
    assert_eq!(subscriber.sequence(&b), want_b);
    // An empty outbox has no series: absent counts as 0.
    eventually(10, "an empty outbox", async || {
        api.metric(&pending).await.unwrap_or(0) == 0
    })
    .await;
    assert_eq!(api.metric(&dead).await.unwrap_or(0), 0);
    assert_eq!(api.metric(&lag).await.unwrap_or(0), 0);
    let (status, _, given_up) = api
        .json(reqwest::Method::GET, "/vnfm/v1/notifications/dead", None)
        .await;
    assert_eq!(status, 200);
    assert_eq!(given_up, json!([]));
    drop(server);
}

/// Issue 25, item 2: a notification given up (here at once: `--notify-max-age-hours 0`) was
/// lost for good. Now it is kept: `vnfm sub dead` lists it, `/metrics` counts it, and once the
/// subscriber is back `vnfm sub redeliver --all` sends every one again, in order; `vnfm sub
/// discard` refuses a row that is not given up.
#[vnfm_test_env::needs(corpus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn given_up_notifications_are_listed_and_redelivered_with_the_cli_once_the_subscriber_is_back()
 {
    rustls::crypto::ring::default_provider()
        .install_default()
        .ok();
    let dir = tempfile::tempdir().unwrap();
    let subscriber = Subscriber::start().await;
    let server = start_with(dir.path(), &["--notify-max-age-hours", "0"], None);
    let api = Api::connect(&server.base, dir.path()).await;
    let sub = api.subscribe(&subscriber.callback).await;
    let vnfd_id = api.onboard_corpus_package().await;

    subscriber.set_down(true);
    let vnf = api.create_vnf(&vnfd_id).await;
    api.instantiate(&vnf).await;
    let dead = format!(r#"vnfm_notifications{{subscription="{sub}",status="dead"}}"#);
    eventually(30, "four given-up notifications", async || {
        api.metric(&dead).await == Some(4)
    })
    .await;

    let root = dir.path();
    let listed: Value =
        serde_json::from_str(&client_ok(&server, root, &["sub", "dead", "-o", "json"])).unwrap();
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 4, "{listed:#?}");
    assert!(listed.iter().all(|d| d["subscriptionId"] == sub.as_str()));
    assert!(
        listed
            .iter()
            .all(|d| d["lastError"].as_str().unwrap().contains("503"))
    );
    let table = client_ok(&server, root, &["sub", "dead", "--subscription", &sub]);
    assert!(
        table.contains("VnfLcmOperationOccurrence INSTANTIATE COMPLETED"),
        "{table}"
    );
    assert!(
        client_ok(
            &server,
            root,
            &["sub", "dead", "--subscription", "other", "-o", "json"]
        )
        .trim()
            == "[]"
    );
    let refused = client(&server, root, &["sub", "discard", "999999999"]);
    assert_eq!(refused.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("404") && stderr.contains("999999999"),
        "{stderr}"
    );

    subscriber.set_down(false);
    let said = client_ok(&server, root, &["sub", "redeliver", "--all"]);
    assert!(
        said.contains("4 notifications put back for delivery"),
        "{said}"
    );
    eventually(30, "the redelivered notifications", async || {
        subscriber.sequence(&vnf).len() >= 4
    })
    .await;
    assert_eq!(subscriber.sequence(&vnf), lifecycle(&["INSTANTIATE"]));
    assert_eq!(
        client_ok(&server, root, &["sub", "dead", "-o", "json"]).trim(),
        "[]"
    );
    assert_eq!(api.metric(&dead).await.unwrap_or(0), 0);
    drop(server);
}
