//! `Idempotency-Key`: the same key and request answer the first answer again (instance
//! creation, tasks, PATCH, other POSTs); another request with the key is 422; a key in flight
//! is 409 until what its request creates is committed, and then that is the answer; keys
//! expire; concurrent requests with one key across two replicas on PostgreSQL create one
//! instance.

use crate::support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::http::{Method, StatusCode};
use serde_json::{Value, json};
use support::*;
use vnfm_api::idempotency::{KeptAnswer, Retry};
use vnfm_lcm::runner::keyed::{ClientKey, KeyGuard, KeyOutcome, KeySettled, fingerprint};

/// A request through `h` with `Idempotency-Key: "key"` (v2 headers on v2 paths).
async fn keyed(h: &Harness, method: Method, uri: &str, key: &str, body: &Value) -> Reply {
    let auth = format!("Bearer {}", h.token);
    let quoted = format!("\"{key}\"");
    let mut headers = vec![
        ("authorization", auth.as_str()),
        ("idempotency-key", quoted.as_str()),
    ];
    if uri.contains("/v2/") {
        headers.push(("version", "2.0.0"));
    }
    headers.push((
        "content-type",
        if method == Method::PATCH {
            "application/merge-patch+json"
        } else {
            "application/json"
        },
    ));
    h.raw(method, uri, &headers, serde_json::to_vec(body).unwrap())
        .await
}

/// A request through `h` without an `Idempotency-Key` header, run with `held`'s key as the
/// idempotency layer hands it to the handler.
async fn run_holding(h: &Harness, held: &KeyGuard, uri: &str, body: &Value) -> Reply {
    let mut request = axum::http::Request::builder()
        .method(Method::POST)
        .uri(uri)
        .header("authorization", format!("Bearer {}", h.token))
        .header("content-type", "application/json");
    if uri.contains("/v2/") {
        request = request.header("version", "2.0.0");
    }
    let mut request = request
        .body(axum::body::Body::from(serde_json::to_vec(body).unwrap()))
        .unwrap();
    request
        .extensions_mut()
        .insert(Retry::Key(held.pending().clone()));
    h.send(request).await
}

fn text(r: &Reply) -> String {
    String::from_utf8_lossy(&r.body).into_owned()
}

/// The instances named `name`.
async fn named(h: &Harness, name: &str) -> Vec<Value> {
    let r = h
        .call(
            Method::GET,
            &format!("/vnflcm/v2/vnf_instances?filter=(eq,vnfInstanceName,{name})"),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", text(&r));
    r.json().as_array().unwrap().clone()
}

async fn occurrences(h: &Harness, instance: &str, operation: &str) -> usize {
    let r = h
        .call(
            Method::GET,
            &format!(
                "/vnflcm/v2/vnf_lcm_op_occs?filter=(eq,vnfInstanceId,{instance});(eq,operation,{operation})"
            ),
            None,
        )
        .await;
    r.json().as_array().unwrap().len()
}

/// The key scope of the harness's bootstrap client.
fn scope(h: &Harness) -> String {
    format!("client:{}", h.state.bootstrap_client().unwrap().client_id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_key_and_request_get_the_first_answer_again() {
    let h = Harness::new().await;
    h.onboard(zip_dir(Path::new(HELLO))).await;
    let create = json!({"vnfdId": HELLO_VNFD, "vnfInstanceName": "replayed"});
    let first = keyed(
        &h,
        Method::POST,
        "/vnflcm/v2/vnf_instances",
        "k-create",
        &create,
    )
    .await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", text(&first));
    let again = keyed(
        &h,
        Method::POST,
        "/vnflcm/v2/vnf_instances",
        "k-create",
        &create,
    )
    .await;
    assert_eq!(again.status, StatusCode::CREATED);
    assert_eq!(again.header("location"), first.header("location"));
    assert_eq!(again.header("content-type"), first.header("content-type"));
    assert_eq!(again.body, first.body, "the same body, byte for byte");
    assert_eq!(named(&h, "replayed").await.len(), 1);
    let id = first.json()["id"].as_str().unwrap().to_owned();

    // A task: the same occurrence, whether running or finished.
    let uri = format!("/vnflcm/v2/vnf_instances/{id}/instantiate");
    let body =
        json!({"flavourId": "simple", "vimConnectionInfo": {"vim1": {"vimType": "TEST.NOOP.V_1"}}});
    let started = keyed(&h, Method::POST, &uri, "k-inst", &body).await;
    assert_eq!(started.status, StatusCode::ACCEPTED, "{}", text(&started));
    let location = started.header("location").unwrap().to_owned();
    let during = keyed(&h, Method::POST, &uri, "k-inst", &body).await;
    assert_eq!(during.status, StatusCode::ACCEPTED, "{}", text(&during));
    assert_eq!(during.header("location"), Some(location.as_str()));
    let done = h.wait_op(&location).await;
    assert_eq!(done["operationState"], "COMPLETED", "{done}");
    let after = keyed(&h, Method::POST, &uri, "k-inst", &body).await;
    assert_eq!(after.status, StatusCode::ACCEPTED);
    assert_eq!(after.header("location"), Some(location.as_str()));
    assert_eq!(after.body, started.body);
    assert_eq!(occurrences(&h, &id, "INSTANTIATE").await, 1);
    // Without the key the same request is a new one (and refused: instantiated already).
    let plain = h.call(Method::POST, &uri, Some(body.clone())).await;
    plain.problem(409);

    // PATCH through v1, and a subscription: generic routes keep their first answer too.
    let patch = json!({"vnfInstanceDescription": "patched once"});
    let p1 = keyed(
        &h,
        Method::PATCH,
        &format!("/vnflcm/v1/vnf_instances/{id}"),
        "k-patch",
        &patch,
    )
    .await;
    assert_eq!(p1.status, StatusCode::ACCEPTED, "{}", text(&p1));
    let p2 = keyed(
        &h,
        Method::PATCH,
        &format!("/vnflcm/v1/vnf_instances/{id}"),
        "k-patch",
        &patch,
    )
    .await;
    assert_eq!(p2.header("location"), p1.header("location"));
    h.wait_op(p1.header("location").unwrap()).await;
    assert_eq!(occurrences(&h, &id, "MODIFY_INFO").await, 1);

    // The instance has changed since it was created (instantiated, described): a replay of
    // its creation is still the first answer, byte for byte, as the store committed it with
    // the instance.
    let created_key = ClientKey::new(scope(&h), "k-create");
    let (_, kept_id, kept_answer) = h
        .state
        .lcm()
        .committed_key(&created_key)
        .await
        .unwrap()
        .expect("the key is committed");
    assert_eq!(kept_id, id);
    let kept_answer = kept_answer.expect("the first answer is committed with the key");
    let kept_answer = KeptAnswer::decode(&kept_answer).expect("in the layer's encoding");
    assert_eq!(kept_answer.status, 201);
    // As the route answered it: its `_links` are made absolute on the way out, each time.
    let kept_body: Value = serde_json::from_slice(&kept_answer.body).unwrap();
    assert_eq!(kept_body["id"], id.as_str());
    assert_eq!(kept_body["vnfInstanceName"], "replayed");
    assert_eq!(kept_answer.location.as_deref(), first.header("location"));
    let now = h
        .call(Method::GET, &format!("/vnflcm/v2/vnf_instances/{id}"), None)
        .await
        .json();
    assert_eq!(now["vnfInstanceDescription"], "patched once", "{now}");
    assert_ne!(now, first.json());
    let replay = keyed(
        &h,
        Method::POST,
        "/vnflcm/v2/vnf_instances",
        "k-create",
        &create,
    )
    .await;
    assert_eq!(replay.status, StatusCode::CREATED);
    assert_eq!(replay.header("location"), first.header("location"));
    assert_eq!(
        replay.body, first.body,
        "the first body, not the instance now"
    );

    // The same through v1, whose document is made with the package's id.
    let v1 = json!({"vnfdId": HELLO_VNFD, "vnfInstanceName": "replayed-v1"});
    let c1 = keyed(&h, Method::POST, "/vnflcm/v1/vnf_instances", "k-v1", &v1).await;
    assert_eq!(c1.status, StatusCode::CREATED, "{}", text(&c1));
    assert!(c1.json()["vnfPkgId"].is_string(), "{}", text(&c1));
    let c2 = keyed(&h, Method::POST, "/vnflcm/v1/vnf_instances", "k-v1", &v1).await;
    assert_eq!((c2.status, &c2.body), (StatusCode::CREATED, &c1.body));
    assert_eq!(c2.header("location"), c1.header("location"));
    assert!(
        c1.header("location")
            .unwrap()
            .contains("/vnflcm/v1/vnf_instances/")
    );
    assert_eq!(named(&h, "replayed-v1").await.len(), 1);

    let sub = json!({"callbackUri": "http://127.0.0.1:9/cb"});
    let s1 = keyed(&h, Method::POST, "/vnflcm/v2/subscriptions", "k-sub", &sub).await;
    assert_eq!(s1.status, StatusCode::CREATED, "{}", text(&s1));
    let s2 = keyed(&h, Method::POST, "/vnflcm/v2/subscriptions", "k-sub", &sub).await;
    assert_eq!((s2.status, &s2.body), (StatusCode::CREATED, &s1.body));
    assert_eq!(s2.header("location"), s1.header("location"));
}

/// Any keyed creation answers a retry with its first answer's bytes, committed with the
/// resource, not with the resource as it is by then: a package changed after its creation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_package_creation_is_answered_again_as_it_was_first_answered() {
    let h = Harness::new().await;
    let create = json!({"userDefinedData": {"stage": "first"}});
    for (packages, key) in [
        ("/vnfpkgm/v2/vnf_packages", "k-pkg-v2"),
        ("/vnfpkgm/v1/vnf_packages", "k-pkg-v1"),
    ] {
        let first = keyed(&h, Method::POST, packages, key, &create).await;
        assert_eq!(first.status, StatusCode::CREATED, "{}", text(&first));
        let id = first.json()["id"].as_str().unwrap().to_owned();
        let (_, kept_id, kept_answer) = h
            .state
            .lcm()
            .committed_key(&ClientKey::new(scope(&h), key))
            .await
            .unwrap()
            .expect("the key is committed");
        assert_eq!(kept_id, id);
        assert!(
            kept_answer.is_some(),
            "the first answer is kept with the key"
        );
        let changed = keyed(
            &h,
            Method::PATCH,
            &format!("{packages}/{id}"),
            &format!("{key}-patch"),
            &json!({"userDefinedData": {"stage": "changed"}}),
        )
        .await;
        assert_eq!(changed.status, StatusCode::OK, "{}", text(&changed));
        let replay = keyed(&h, Method::POST, packages, key, &create).await;
        assert_eq!(replay.status, StatusCode::CREATED, "{}", text(&replay));
        assert_eq!(replay.header("location"), first.header("location"));
        assert_eq!(replay.body, first.body, "{packages}: the first body");
        assert_eq!(replay.json()["userDefinedData"]["stage"], "first");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_request_with_a_used_key_is_unprocessable() {
    let h = Harness::new().await;
    h.onboard(zip_dir(Path::new(HELLO))).await;
    let uri = "/vnflcm/v2/vnf_instances";
    let first = keyed(
        &h,
        Method::POST,
        uri,
        "k",
        &json!({"vnfdId": HELLO_VNFD, "vnfInstanceName": "a"}),
    )
    .await;
    assert_eq!(first.status, StatusCode::CREATED);
    let other = keyed(
        &h,
        Method::POST,
        uri,
        "k",
        &json!({"vnfdId": HELLO_VNFD, "vnfInstanceName": "b"}),
    )
    .await;
    let p = other.problem(422);
    let detail = p["detail"].as_str().unwrap();
    assert!(
        detail.contains("\"k\"") && detail.contains("another request") && detail.contains(uri),
        "{detail}"
    );
    // Another path with the key is another request too.
    let id = first.json()["id"].as_str().unwrap().to_owned();
    let task = keyed(
        &h,
        Method::POST,
        &format!("{uri}/{id}/instantiate"),
        "k",
        &json!({"flavourId": "simple"}),
    )
    .await;
    task.problem(422);
    assert!(named(&h, "b").await.is_empty());
    // Malformed keys are refused before anything runs.
    let auth = format!("Bearer {}", h.token);
    let bad = h
        .raw(
            Method::POST,
            uri,
            &[
                ("authorization", &auth),
                ("idempotency-key", "not\"quoted"),
                ("version", "2.0.0"),
                ("content-type", "application/json"),
            ],
            serde_json::to_vec(&json!({"vnfdId": HELLO_VNFD, "vnfInstanceName": "c"})).unwrap(),
        )
        .await;
    let p = bad.problem(400);
    assert!(
        p["detail"].as_str().unwrap().contains("Idempotency-Key"),
        "{p}"
    );
    assert!(named(&h, "c").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_in_flight_is_a_conflict_and_once_committed_its_resource_is_the_answer() {
    let h = Harness::new().await;
    h.onboard(zip_dir(Path::new(HELLO))).await;
    let uri = "/vnflcm/v2/vnf_instances";
    let body = json!({"vnfdId": HELLO_VNFD, "vnfInstanceName": "in-flight"});
    // A first request holds the key, mid-request.
    let key = ClientKey::new(scope(&h), "k-held");
    let print = fingerprint("POST", uri, &serde_json::to_vec(&body).unwrap());
    let KeyOutcome::Run(held) = h.state.lcm().begin_client_key(&key, print) else {
        panic!("the key was free");
    };
    let retry = keyed(&h, Method::POST, uri, "k-held", &body).await;
    let p = retry.problem(409);
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("still being processed"),
        "{p}"
    );
    assert!(
        named(&h, "in-flight").await.is_empty(),
        "a held key created nothing"
    );

    // The first request commits its instance (the key with it), then dies before answering:
    // the retry is answered from what was committed.
    let lcm = h.state.lcm();
    let created = lcm
        .create_vnf_identifier_with_key(
            serde_json::from_value(body.clone()).unwrap(),
            None,
            Some(held.pending()),
        )
        .await;
    let attachment = held.settle().await.unwrap();
    let created = created.unwrap();
    assert_eq!(attachment, KeySettled::Committed(created.id.to_string()));
    drop(held);
    let retry = keyed(&h, Method::POST, uri, "k-held", &body).await;
    assert_eq!(retry.status, StatusCode::CREATED, "{}", text(&retry));
    assert_eq!(retry.json()["id"], created.id.as_str());
    assert!(
        retry
            .header("location")
            .unwrap()
            .ends_with(&format!("/vnflcm/v2/vnf_instances/{}", created.id))
    );
    assert_eq!(named(&h, "in-flight").await.len(), 1);

    // A subscription the same way: its answer is made again from the subscription.
    let sub = json!({"callbackUri": "http://127.0.0.1:9/held"});
    let key = ClientKey::new(scope(&h), "k-sub");
    let route = "/vnflcm/v2/subscriptions";
    let print = fingerprint("POST", route, &serde_json::to_vec(&sub).unwrap());
    let KeyOutcome::Run(held) = h.state.lcm().begin_client_key(&key, print) else {
        panic!("the key was free");
    };
    keyed(&h, Method::POST, route, "k-sub", &sub)
        .await
        .problem(409);
    // The request, without its header, runs with the key as the layer would hand it over,
    // and its answer is not kept.
    let first = run_holding(&h, &held, route, &sub).await;
    let attachment = held.settle().await.unwrap();
    assert_eq!(first.status, StatusCode::CREATED, "{}", text(&first));
    let id = first.json()["id"].as_str().unwrap().to_owned();
    assert_eq!(attachment, KeySettled::Committed(id.clone()));
    drop(held);
    let retry = keyed(&h, Method::POST, route, "k-sub", &sub).await;
    assert_eq!(retry.status, StatusCode::CREATED, "{}", text(&retry));
    assert_eq!(retry.json(), first.json());
    assert_eq!(retry.header("location"), first.header("location"));
    let all = h.call(Method::GET, route, None).await.json();
    assert_eq!(all.as_array().unwrap().len(), 1, "{all}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_expire_and_are_swept() {
    let h = Harness::with_services(|b| b.client_key_ttl(Duration::from_millis(300)), |_| {}).await;
    h.onboard(zip_dir(Path::new(HELLO))).await;
    let uri = "/vnflcm/v2/vnf_instances";
    let body = json!({"vnfdId": HELLO_VNFD, "vnfInstanceName": "expiring"});
    let first = keyed(&h, Method::POST, uri, "k-exp", &body).await;
    assert_eq!(first.status, StatusCode::CREATED);
    let again = keyed(&h, Method::POST, uri, "k-exp", &body).await;
    assert_eq!(again.header("location"), first.header("location"));
    tokio::time::sleep(Duration::from_millis(400)).await;
    // Expired: the key is new, and so is the instance.
    let later = keyed(&h, Method::POST, uri, "k-exp", &body).await;
    assert_eq!(later.status, StatusCode::CREATED);
    assert_ne!(later.header("location"), first.header("location"));
    assert_eq!(named(&h, "expiring").await.len(), 2);
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(h.state.lcm().sweep_client_keys().await.unwrap(), 1);
    let key = h
        .store
        .get_idempotency_key(&scope(&h), "k-exp")
        .await
        .unwrap();
    assert!(key.is_none(), "{key:?}");
}

/// Concurrent requests with one key, spread over two replicas sharing one PostgreSQL
/// database: one instance, and every answer that is not "in flight" names it.
#[vnfm_test_env::needs(postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_key_at_once_on_two_replicas_creates_one_instance() {
    let url = vnfm_test_env::var("VNFM_TEST_POSTGRES_URL");
    let first = Harness::with_services(|b| b.store_url(url.clone()), |_| {}).await;
    let data_dir = first._dir.path().join("data");
    let second = Harness::with_services(|b| b.store_url(url), |o| o.data_dir = data_dir).await;
    first.onboard(zip_dir(Path::new(HELLO))).await;
    let replicas = [Arc::new(first), Arc::new(second)];
    let name = format!("raced-{}", std::process::id());
    let key = format!("k-race-{}", std::process::id());
    let body = json!({"vnfdId": HELLO_VNFD, "vnfInstanceName": name});
    let mut racers = Vec::new();
    for n in 0..16 {
        let (h, key, body) = (replicas[n % 2].clone(), key.clone(), body.clone());
        racers.push(tokio::spawn(async move {
            keyed(&h, Method::POST, "/vnflcm/v2/vnf_instances", &key, &body).await
        }));
    }
    let mut locations = std::collections::BTreeSet::new();
    for r in racers {
        let r = r.await.unwrap();
        match r.status {
            StatusCode::CREATED => {
                locations.insert(r.header("location").unwrap().to_owned());
            }
            StatusCode::CONFLICT => {
                r.problem(409);
            }
            other => panic!("unexpected {other}: {}", text(&r)),
        }
    }
    assert_eq!(locations.len(), 1, "{locations:?}");
    assert_eq!(named(&replicas[0], &name).await.len(), 1);
    // Once answered, both replicas answer the first answer.
    for h in &replicas {
        let r = keyed(h, Method::POST, "/vnflcm/v2/vnf_instances", &key, &body).await;
        assert_eq!(r.status, StatusCode::CREATED);
        assert!(locations.contains(r.header("location").unwrap()));
    }
}

/// The embedding API: a client key makes creating an identifier and starting an operation
/// happen once; another request with the key is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_calls_with_a_client_key_happen_once() {
    let h = Harness::new().await;
    h.onboard(zip_dir(Path::new(HELLO))).await;
    let lcm = h.state.lcm();
    let create: vnfm_types::CreateVnfRequest =
        serde_json::from_value(json!({"vnfdId": HELLO_VNFD, "vnfInstanceName": "embedded"}))
            .unwrap();
    let key = ClientKey::new("embedder", ClientKey::random_key());
    let first = lcm
        .create_vnf_identifier_keyed(create.clone(), None, &key)
        .await
        .unwrap();
    let again = lcm
        .create_vnf_identifier_keyed(create.clone(), None, &key)
        .await
        .unwrap();
    assert_eq!(first.id, again.id);
    assert_eq!(named(&h, "embedded").await.len(), 1);
    let mut other = create.clone();
    other.vnf_instance_name = Some("other".into());
    let refused = lcm
        .create_vnf_identifier_keyed(other, None, &key)
        .await
        .unwrap_err();
    assert!(
        matches!(refused, vnfm_lcm::LcmError::Unprocessable { .. }),
        "{refused}"
    );

    let req: vnfm_types::InstantiateVnfRequest = serde_json::from_value(
        json!({"flavourId": "simple", "vimConnectionInfo": {"vim1": {"vimType": "TEST.NOOP.V_1"}}}),
    )
    .unwrap();
    let key = ClientKey::new("embedder", "instantiate-once");
    let op = lcm
        .start_keyed(
            &first.id,
            vnfm_lcm::OperationRequest::Instantiate(req.clone()),
            &key,
        )
        .await
        .unwrap();
    let same = lcm
        .start_keyed(
            &first.id,
            vnfm_lcm::OperationRequest::Instantiate(req),
            &key,
        )
        .await
        .unwrap();
    assert_eq!(op.id, same.id);
    assert_eq!(occurrences(&h, first.id.as_str(), "INSTANTIATE").await, 1);
}
