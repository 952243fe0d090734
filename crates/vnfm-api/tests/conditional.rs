//! Conditional writes (`If-Match`) under concurrency: of many requests sent against one
//! entity tag at the same time, exactly one is applied and the others are refused with 412
//! (the resource changed) or 409 (the instance is busy with the accepted one), on SQLite, on
//! PostgreSQL, and across two replicas sharing one PostgreSQL database.

use crate::support;

use std::path::Path;
use std::sync::Arc;

use axum::http::{Method, StatusCode};
use serde_json::{Value, json};
use support::*;

/// How many conditional requests race in one round, and how many rounds a test runs (the
/// lost update showed in most rounds of 50 before the version was compared in the store).
const RACERS: usize = 50;
const ROUNDS: usize = 3;

/// `PATCH` of instance `id` under `If-Match: etag`, through `h`.
async fn patch_if_match(h: &Harness, version: &str, id: &str, etag: &str, n: usize) -> Reply {
    let auth = format!("Bearer {}", h.token);
    let body = serde_json::to_vec(&json!({"vnfInstanceDescription": format!("writer {n}")}));
    let mut headers = vec![
        ("authorization", auth.as_str()),
        ("content-type", "application/merge-patch+json"),
        ("if-match", etag),
    ];
    if version == "v2" {
        headers.push(("version", "2.0.0"));
    }
    h.raw(
        Method::PATCH,
        &format!("/vnflcm/{version}/vnf_instances/{id}"),
        &headers,
        body.unwrap(),
    )
    .await
}

/// The instance's entity tag now.
async fn etag_of(h: &Harness, id: &str) -> String {
    let r = h
        .call(Method::GET, &format!("/vnflcm/v2/vnf_instances/{id}"), None)
        .await;
    assert_eq!(r.status, StatusCode::OK);
    r.header("etag")
        .expect("an instance has an ETag")
        .to_owned()
}

/// The MODIFY_INFO occurrences of instance `id`.
async fn modify_occurrences(h: &Harness, id: &str) -> Vec<Value> {
    let r = h
        .call(
            Method::GET,
            &format!(
                "/vnflcm/v2/vnf_lcm_op_occs?filter=(eq,vnfInstanceId,{id});(eq,operation,MODIFY_INFO)"
            ),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    r.json().as_array().unwrap().clone()
}

/// `RACERS` PATCHes of one instance under its current entity tag, spread over `replicas`
/// (each an API over the same store) and the v1 and v2 paths: exactly one is accepted, the
/// others are 412 or 409, and one MODIFY_INFO occurrence exists per round.
async fn one_of_many_conditional_patches_applies(replicas: &[Arc<Harness>]) {
    let first = &replicas[0];
    first.onboard(zip_dir(Path::new(HELLO))).await;
    let id = first.create_instance().await;
    for round in 1..=ROUNDS {
        let etag = etag_of(first, &id).await;
        let mut racers = Vec::new();
        for n in 0..RACERS {
            let h = replicas[n % replicas.len()].clone();
            let (id, etag) = (id.clone(), etag.clone());
            let version = if n % 2 == 0 { "v2" } else { "v1" };
            racers.push(tokio::spawn(async move {
                patch_if_match(&h, version, &id, &etag, n).await
            }));
        }
        let mut accepted = Vec::new();
        for racer in racers {
            let r = racer.await.unwrap();
            match r.status {
                StatusCode::ACCEPTED => accepted.push(r.header("location").unwrap().to_owned()),
                StatusCode::PRECONDITION_FAILED => {
                    let p = r.problem(412);
                    assert!(p["detail"].as_str().unwrap().contains("If-Match"), "{p}");
                }
                StatusCode::CONFLICT => {
                    r.problem(409);
                }
                other => panic!(
                    "round {round}: unexpected {other}: {}",
                    String::from_utf8_lossy(&r.body)
                ),
            }
        }
        assert_eq!(
            accepted.len(),
            1,
            "round {round}: one request against {etag} may apply, {} were accepted",
            accepted.len()
        );
        let occ = first.wait_op(&accepted[0]).await;
        assert_eq!(occ["operationState"], "COMPLETED", "{occ}");
        assert_eq!(modify_occurrences(first, &id).await.len(), round);
        // The tag that was raced for is stale now: a late request with it is refused.
        let late = patch_if_match(first, "v2", &id, &etag, RACERS).await;
        late.problem(412);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_conditional_patches_apply_once_on_sqlite() {
    one_of_many_conditional_patches_applies(&[Arc::new(Harness::new().await)]).await;
}

#[vnfm_test_env::needs(postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_conditional_patches_apply_once_on_postgresql() {
    let url = vnfm_test_env::var("VNFM_TEST_POSTGRES_URL");
    let h = Harness::with_services(|b| b.store_url(url), |_| {}).await;
    one_of_many_conditional_patches_applies(&[Arc::new(h)]).await;
}

#[vnfm_test_env::needs(postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_conditional_patches_apply_once_across_two_replicas() {
    let url = vnfm_test_env::var("VNFM_TEST_POSTGRES_URL");
    let first = Harness::with_services(|b| b.store_url(url.clone()), |_| {}).await;
    // The second replica shares the first one's data directory (its keys) and database.
    let data_dir = first._dir.path().join("data");
    let second = Harness::with_services(|b| b.store_url(url), |o| o.data_dir = data_dir).await;
    one_of_many_conditional_patches_applies(&[Arc::new(first), Arc::new(second)]).await;
}

/// VIMs take `If-Match` too: of concurrent changes under one tag, one applies.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_conditional_vim_updates_apply_once() {
    let h = Arc::new(Harness::new().await);
    let r = h
        .call(
            Method::POST,
            "/vnfm/v1/vims",
            Some(json!({
                "name": "edge", "vimType": "ETSINFV.KUBERNETES.V_1",
                "interfaceInfo": {"endpoint": "https://10.0.0.1:6443"},
                "accessInfo": {"bearer_token": "not-a-real-token"}
            })),
        )
        .await;
    assert_eq!(
        r.status,
        StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    let id = r.json()["id"].as_str().unwrap().to_owned();
    let etag = r.header("etag").unwrap().to_owned();
    let mut racers = Vec::new();
    for n in 0..RACERS {
        let (h, id, etag) = (h.clone(), id.clone(), etag.clone());
        racers.push(tokio::spawn(async move {
            let auth = format!("Bearer {}", h.token);
            let body = serde_json::to_vec(&json!({"name": format!("site-{n}")})).unwrap();
            h.raw(
                Method::PATCH,
                &format!("/vnfm/v1/vims/{id}"),
                &[
                    ("authorization", &auth),
                    ("content-type", "application/merge-patch+json"),
                    ("if-match", &etag),
                ],
                body,
            )
            .await
            .status
        }));
    }
    let mut applied = 0;
    for racer in racers {
        match racer.await.unwrap() {
            StatusCode::OK => applied += 1,
            StatusCode::PRECONDITION_FAILED => {}
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!(applied, 1, "one update against {etag} may apply");
}
