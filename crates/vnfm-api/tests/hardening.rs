//! Bad input the server must refuse cleanly: values a driver could not honour, NUL characters
//! the database cannot store, secrets of the wrong type (never quoted back), and the smaller
//! HTTP points (`If-Match: *`, the `Allow` list in a 405).

use crate::support;

use std::path::Path;

use axum::http::{Method, StatusCode};
use serde_json::{Value, json};
use support::*;

async fn instantiated(h: &Harness) -> String {
    h.onboard(zip_dir(Path::new(HELLO))).await;
    let id = h.create_instance().await;
    let vim = json!({"vim1": {"vimType": "TEST.NOOP.V_1"}});
    let occ = h
        .task(
            &id,
            "instantiate",
            json!({"flavourId": "simple", "vimConnectionInfo": vim}),
        )
        .await;
    assert_eq!(occ["operationState"], "COMPLETED", "{occ}");
    id
}

#[tokio::test]
async fn a_test_vim_delay_beyond_what_a_duration_holds_is_refused_naming_the_field() {
    let h = Harness::new().await;
    let id = instantiated(&h).await;
    let scale = |faults: Value| json!({"type": "SCALE_OUT", "aspectId": "web_scale", "additionalParams": {"testVim": faults}});
    for (faults, member) in [
        (json!({"delaySeconds": 1e308}), "delaySeconds"),
        (json!({"delaySeconds": -1}), "delaySeconds"),
        (json!({"delaySeconds": "soon"}), "delaySeconds"),
        (json!({"failures": -2}), "failures"),
        (json!({"rollbackFailures": 1.5}), "rollbackFailures"),
    ] {
        for version in ["v1", "v2"] {
            let r = h
                .call(
                    Method::POST,
                    &format!("/vnflcm/{version}/vnf_instances/{id}/scale"),
                    Some(scale(faults.clone())),
                )
                .await;
            let p = r.problem(400);
            let pointer = format!("/additionalParams/testVim/{member}");
            assert_eq!(p["pointer"], pointer, "{faults}: {p}");
            assert!(p["detail"].as_str().unwrap().contains(member), "{p}");
        }
    }
    // Nothing was started: the instance takes the next operation.
    let occ = h
        .task(&id, "scale", scale(json!({"delaySeconds": 0.01})))
        .await;
    assert_eq!(occ["operationState"], "COMPLETED", "{occ}");
    let r = h
        .call(Method::GET, &format!("/vnflcm/v2/vnf_instances/{id}"), None)
        .await;
    assert_eq!(r.status, StatusCode::OK);
}

/// `vnfInstanceName: "a\u0000b"` is refused alike on SQLite and PostgreSQL (which cannot
/// store a NUL in text) with a 400 naming the member, in values and member names at any depth.
async fn nul_is_refused_naming_the_member(h: &Harness) {
    h.onboard(zip_dir(Path::new(HELLO))).await;
    for (uri, body, pointer) in [
        (
            "/vnflcm/v2/vnf_instances",
            json!({"vnfdId": HELLO_VNFD, "vnfInstanceName": "a\u{0}b"}),
            "/vnfInstanceName",
        ),
        (
            "/vnflcm/v1/vnf_instances",
            json!({"vnfdId": HELLO_VNFD, "vnfInstanceDescription": "\u{0}"}),
            "/vnfInstanceDescription",
        ),
        (
            "/vnflcm/v2/vnf_instances",
            json!({"vnfdId": HELLO_VNFD, "metadata": {"tags": ["ok", "x\u{0}"]}}),
            "/metadata/tags/1",
        ),
    ] {
        let r = h.call(Method::POST, uri, Some(body)).await;
        let p = r.problem(400);
        assert_eq!(p["pointer"], pointer, "{p}");
        assert!(p["detail"].as_str().unwrap().contains("NUL"), "{p}");
    }
}

#[tokio::test]
async fn a_nul_character_in_a_request_string_is_a_400_naming_it_on_sqlite() {
    nul_is_refused_naming_the_member(&Harness::new().await).await;
}

#[vnfm_test_env::needs(postgres)]
#[tokio::test]
async fn a_nul_character_in_a_request_string_is_a_400_naming_it_on_postgresql() {
    let url = vnfm_test_env::var("VNFM_TEST_POSTGRES_URL");
    let h = Harness::with_services(|b| b.store_url(url), |_| {}).await;
    nul_is_refused_naming_the_member(&h).await;
}

/// Secret values of the wrong type, each with a mark that must not appear in the answer.
fn wrong_secrets() -> Vec<(Value, &'static str)> {
    vec![
        (json!(987_654_321_987_u64), "987654321987"),
        (json!({"p": "SECRETOBJ42"}), "SECRETOBJ42"),
        (json!(["SECRETARR42"]), "SECRETARR42"),
        (json!(true), "true"),
    ]
}

/// Every request body with a secret member: LCM and package-management subscriptions (v1
/// and v2; HTTP Basic and OAuth 2.0 client credentials), VIM registration, and the VIM
/// connections of instantiate (v1 and v2), modify and change_ext_conn.
#[tokio::test]
async fn a_secret_of_the_wrong_type_is_refused_without_being_quoted() {
    let h = Harness::new().await;
    h.onboard(zip_dir(Path::new(HELLO))).await;
    let id = h.create_instance().await;
    let basic = |secret: &Value| {
        json!({
            "callbackUri": "http://127.0.0.1:9/cb",
            "authentication": {
                "authType": ["BASIC"],
                "paramsBasic": {"userName": "u", "password": secret}
            }
        })
    };
    let oauth = |secret: &Value| {
        json!({
            "callbackUri": "http://127.0.0.1:9/cb",
            "authentication": {
                "authType": ["OAUTH2_CLIENT_CREDENTIALS"],
                "paramsOauth2ClientCredentials": {
                    "clientId": "c", "clientPassword": secret,
                    "tokenEndpoint": "http://127.0.0.1:9/token"
                }
            }
        })
    };
    let vim = |secret: &Value| {
        json!({
            "vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3",
            "interfaceInfo": {"endpoint": "http://127.0.0.1:9/identity/v3"},
            "accessInfo": {"username": "u", "password": secret, "project": "p",
                           "projectDomain": "Default", "userDomain": "Default", "region": "R"}
        })
    };
    let k8s = |secret: &Value| {
        json!({
            "vimType": "ETSINFV.KUBERNETES.V_1",
            "interfaceInfo": {"endpoint": "https://127.0.0.1:6443"},
            "accessInfo": {"bearer_token": secret}
        })
    };
    let instance = format!("/vnflcm/v2/vnf_instances/{id}");
    let instance_v1 = format!("/vnflcm/v1/vnf_instances/{id}");
    for (secret, mark) in wrong_secrets() {
        let mut named_vim = vim(&secret);
        named_vim["name"] = json!("edge");
        let mut named_k8s = k8s(&secret);
        named_k8s["name"] = json!("edge-k8s");
        let cases: Vec<(Method, String, Value)> = vec![
            (
                Method::POST,
                "/vnflcm/v2/subscriptions".into(),
                basic(&secret),
            ),
            (
                Method::POST,
                "/vnflcm/v2/subscriptions".into(),
                oauth(&secret),
            ),
            (
                Method::POST,
                "/vnflcm/v1/subscriptions".into(),
                basic(&secret),
            ),
            (
                Method::POST,
                "/vnflcm/v1/subscriptions".into(),
                oauth(&secret),
            ),
            (
                Method::POST,
                "/vnfpkgm/v2/subscriptions".into(),
                basic(&secret),
            ),
            (
                Method::POST,
                "/vnfpkgm/v2/subscriptions".into(),
                oauth(&secret),
            ),
            (
                Method::POST,
                "/vnfpkgm/v1/subscriptions".into(),
                basic(&secret),
            ),
            (
                Method::POST,
                "/vnfpkgm/v1/subscriptions".into(),
                oauth(&secret),
            ),
            (Method::POST, "/vnfm/v1/vims".into(), named_vim),
            (Method::POST, "/vnfm/v1/vims".into(), named_k8s),
            (
                Method::POST,
                format!("{instance}/instantiate"),
                json!({"flavourId": "simple", "vimConnectionInfo": {"vim1": vim(&secret)}}),
            ),
            (
                Method::POST,
                format!("{instance_v1}/instantiate"),
                json!({"flavourId": "simple", "vimConnectionInfo": [
                    {"id": "vim1", "vimType": "ETSINFV.KUBERNETES.V_1",
                     "accessInfo": {"bearer_token": secret}}
                ]}),
            ),
            (
                Method::PATCH,
                instance.clone(),
                json!({"vimConnectionInfo": {"vim1": k8s(&secret)}}),
            ),
            (
                Method::POST,
                format!("{instance}/change_ext_conn"),
                json!({"extVirtualLinks": [], "vimConnectionInfo": {"vim1": vim(&secret)}}),
            ),
        ];
        for (method, uri, body) in cases {
            let r = h.call(method.clone(), &uri, Some(body)).await;
            let text = String::from_utf8_lossy(&r.body).to_string();
            assert!(
                r.status.is_client_error(),
                "{method} {uri} with a {mark} secret: {} {text}",
                r.status
            );
            assert!(
                !text.contains(mark),
                "{method} {uri} quotes the secret: {text}"
            );
        }
    }
}

#[tokio::test]
async fn if_match_star_matches_any_current_vim_and_a_list_matches_by_any_tag() {
    let h = Harness::new().await;
    let r = h
        .call(
            Method::POST,
            "/vnfm/v1/vims",
            Some(json!({
                "name": "edge", "vimType": "ETSINFV.KUBERNETES.V_1",
                "interfaceInfo": {"endpoint": "https://10.0.0.1:6443"},
                "accessInfo": {"bearer_token": "t"}
            })),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let id = r.json()["id"].as_str().unwrap().to_owned();
    let etag = r.header("etag").unwrap().to_owned();
    let auth = format!("Bearer {}", h.token);
    let patch = |if_match: String, name: &str| {
        let h = &h;
        let auth = auth.clone();
        let id = id.clone();
        let body = serde_json::to_vec(&json!({ "name": name })).unwrap();
        async move {
            h.raw(
                Method::PATCH,
                &format!("/vnfm/v1/vims/{id}"),
                &[
                    ("authorization", &auth),
                    ("content-type", "application/merge-patch+json"),
                    ("if-match", &if_match),
                ],
                body,
            )
            .await
        }
    };
    let r = patch("*".into(), "edge-2").await;
    assert_eq!(
        r.status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    let now = r.header("etag").unwrap().to_owned();
    // A list matches when one of its tags is current; the old tag alone no longer does.
    let r = patch(format!("\"999\", {now}"), "edge-3").await;
    assert_eq!(
        r.status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    patch(etag, "edge-4").await.problem(412);
    patch("not-a-tag".into(), "edge-5").await.problem(412);
}

#[tokio::test]
async fn the_405_of_a_vim_names_the_methods_it_allows() {
    let h = Harness::new().await;
    let r = h.call(Method::POST, "/vnfm/v1/vims/some-vim", None).await;
    let p = r.problem(405);
    let detail = p["detail"].as_str().unwrap();
    assert!(detail.ends_with("allows DELETE, GET, PATCH"), "{detail}");
    assert_eq!(r.header("allow"), Some("DELETE, GET, PATCH"));
}

#[cfg(unix)]
#[tokio::test]
async fn data_files_are_private_to_the_server_user() {
    use std::os::unix::fs::PermissionsExt;
    let h = Harness::new().await;
    // Writes, so that the database has its journal files.
    h.onboard(zip_dir(Path::new(HELLO))).await;
    let dir = h._dir.path().join("data");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            files.push((
                path.file_name().unwrap().to_string_lossy().into_owned(),
                mode(&path),
            ));
        }
    }
    assert!(files.iter().any(|(name, _)| name == "vnfm.db"), "{files:?}");
    assert!(files.iter().all(|(_, m)| *m == 0o600), "{files:?}");
}

/// Two replicas set up as documented: one store, `token.keys` and `fernet.keys` copied, each
/// with its own bootstrap client. A token either one issues is accepted by both, and either
/// one issues tokens to the other's client.
#[tokio::test]
async fn tokens_work_across_replicas_that_share_the_store_and_token_keys() {
    use tower::ServiceExt;
    let a = Harness::new().await;
    let a_dir = a._dir.path().join("data");
    let b_tmp = tempfile::tempdir().unwrap();
    let b_dir = b_tmp.path().join("data");
    std::fs::create_dir_all(&b_dir).unwrap();
    for key in ["token.keys", "fernet.keys"] {
        std::fs::copy(a_dir.join(key), b_dir.join(key)).unwrap();
    }
    let mut options = vnfm_api::StateOptions::new(&b_dir);
    options.verify_callbacks = false;
    let b = vnfm_api::AppState::new(replica(&b_dir, &a_dir).await, options)
        .await
        .unwrap();
    let b_app = vnfm_api::router(b.clone());
    let b_client = b.bootstrap_client().unwrap();
    let a_client = a.state.bootstrap_client().unwrap();
    assert_ne!(a_client.client_id, b_client.client_id);
    let call = |app: axum::Router, token: String| async move {
        let request = axum::http::Request::builder()
            .uri("/vnflcm/v2/vnf_instances")
            .header("authorization", format!("Bearer {token}"))
            .header("version", "2.0.0")
            .body(axum::body::Body::empty())
            .unwrap();
        app.oneshot(request).await.unwrap().status()
    };
    let token_from = |app: axum::Router, client: vnfm_api::auth::ClientCredentials| async move {
        let form = format!(
            "grant_type=client_credentials&client_id={}&client_secret={}",
            client.client_id,
            client.client_secret.expose()
        );
        let request = axum::http::Request::builder()
            .method(Method::POST)
            .uri("/oauth2/token")
            .header("content-type", "application/x-www-form-urlencoded")
            .body(axum::body::Body::from(form))
            .unwrap();
        let response = app.oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        let v: Value = serde_json::from_slice(&body).unwrap();
        v["access_token"].as_str().unwrap().to_owned()
    };
    // A's token at B (B started after A: it read A's client at start).
    assert_eq!(call(b_app.clone(), a.token.clone()).await, StatusCode::OK);
    // B's client and token at A (A learns of B's client when it is named).
    let b_token = token_from(b_app.clone(), b_client.clone()).await;
    assert_eq!(call(a.app.clone(), b_token).await, StatusCode::OK);
    let at_a = token_from(a.app.clone(), b_client).await;
    assert_eq!(call(b_app, at_a).await, StatusCode::OK);

    // B restarted with an extra client, then without it: the client is gone for A too.
    let extra = vnfm_api::auth::ClientCredentials::generate();
    let restart = |clients: Vec<vnfm_api::auth::ClientCredentials>| {
        let mut options = vnfm_api::StateOptions::new(&b_dir);
        options.clients = clients;
        let (b_dir, a_dir) = (b_dir.clone(), a_dir.clone());
        async move {
            let b = vnfm_api::AppState::new(replica(&b_dir, &a_dir).await, options)
                .await
                .unwrap();
            b.lcm()
                .shutdown(std::time::Duration::from_millis(100))
                .await;
        }
    };
    b.lcm()
        .shutdown(std::time::Duration::from_millis(100))
        .await;
    restart(vec![extra.clone()]).await;
    let extra_token = token_from(a.app.clone(), extra.clone()).await;
    assert_eq!(call(a.app.clone(), extra_token).await, StatusCode::OK);
    restart(Vec::new()).await;
    let form = format!(
        "grant_type=client_credentials&client_id={}&client_secret={}",
        extra.client_id,
        extra.client_secret.expose()
    );
    let r = a
        .raw(
            Method::POST,
            "/oauth2/token",
            &[("content-type", "application/x-www-form-urlencoded")],
            form.into_bytes(),
        )
        .await;
    assert_eq!(
        r.status,
        StatusCode::UNAUTHORIZED,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
}

/// Notifications the deliverer gave up are listed (oldest first, paged with `after`), so an
/// operator sees what a subscriber missed, and `/metrics` counts the outbox by subscription
/// with the age of the oldest waiting notification.
#[tokio::test]
async fn given_up_notifications_are_listed_through_the_api() {
    let h = Harness::new().await;
    let store = h.store.clone();
    store
        .enqueue(&[vnfm_store::NewOutboxRow {
            subscription_id: vnfm_types::SubscriptionId::new("sub-down"),
            callback_uri: "http://127.0.0.1:9/cb".into(),
            payload: json!({"id": "n1", "notificationType": "VnfLcmOperationOccurrenceNotification",
                             "timeStamp": "2020-01-01T00:00:00Z"}),
            not_before: vnfm_store::Timestamp::now(),
            ordering_key: "vnf-1".into(),
            traceparent: None,
        }])
        .await
        .unwrap();
    let row = store.outbox_pending_rows(None, 10).await.unwrap()[0].clone();
    assert!(
        h.call(Method::GET, "/vnfm/v1/notifications/dead", None)
            .await
            .json()
            .as_array()
            .unwrap()
            .is_empty()
    );
    let text = metrics_text(&h).await;
    assert!(
        text.contains(r#"vnfm_notifications{subscription="sub-down",status="pending"} 1"#),
        "{text}"
    );
    // The lag counts from when the notification was enqueued (just now).
    let lag = text
        .lines()
        .find_map(|l| {
            l.strip_prefix(r#"vnfm_notification_delivery_lag_seconds{subscription="sub-down"} "#)
        })
        .and_then(|v| v.parse::<i64>().ok());
    assert!(lag.is_some_and(|l| (0..60).contains(&l)), "{text}");
    store
        .outbox_dead(row.id, "POST to the callback: connection refused")
        .await
        .unwrap();
    let text = metrics_text(&h).await;
    assert!(
        text.contains(r#"vnfm_notifications{subscription="sub-down",status="dead"} 1"#),
        "{text}"
    );
    assert!(
        text.contains(r#"vnfm_notifications{subscription="sub-down",status="pending"} 0"#),
        "{text}"
    );
    let dead = h
        .call(Method::GET, "/vnfm/v1/notifications/dead", None)
        .await
        .json();
    assert_eq!(dead[0]["subscriptionId"], "sub-down", "{dead}");
    assert_eq!(dead[0]["notification"]["id"], "n1", "{dead}");
    assert_eq!(
        dead[0]["lastError"], "POST to the callback: connection refused",
        "{dead}"
    );
    let after = h
        .call(
            Method::GET,
            &format!("/vnfm/v1/notifications/dead?after={}", row.id),
            None,
        )
        .await
        .json();
    assert_eq!(after, json!([]));
    h.call(Method::GET, "/vnfm/v1/notifications/dead?limit=5", None)
        .await
        .problem(400);
}

async fn metrics_text(h: &Harness) -> String {
    String::from_utf8(h.call(Method::GET, "/metrics", None).await.body).unwrap()
}

/// A given-up notification is sent again on request (back in its queue, ahead of what was
/// enqueued after it) or discarded; either answers 404 for an id that is not a given-up
/// notification, and `/metrics` follows.
#[tokio::test]
async fn a_given_up_notification_is_redelivered_or_discarded_through_the_api() {
    let h = Harness::new().await;
    let store = h.store.clone();
    let note = |n: &str| vnfm_store::NewOutboxRow {
        subscription_id: vnfm_types::SubscriptionId::new("sub-back"),
        callback_uri: "http://127.0.0.1:9/cb".into(),
        payload: json!({"id": n, "notificationType": "VnfLcmOperationOccurrenceNotification",
                         "timeStamp": "2020-01-01T00:00:00Z"}),
        not_before: vnfm_store::Timestamp::now(),
        ordering_key: "vnf-1".into(),
        traceparent: None,
    };
    store.enqueue(&[note("n1"), note("n2")]).await.unwrap();
    let rows = store.outbox_pending_rows(None, 10).await.unwrap();
    let (first, second) = (rows[0].id, rows[1].id);
    store
        .outbox_dead(first, "callback answered 503")
        .await
        .unwrap();
    store
        .outbox_dead(second, "callback answered 503")
        .await
        .unwrap();

    for path in [
        format!("/vnfm/v1/notifications/dead/{}/redeliver", second + 100),
        "/vnfm/v1/notifications/dead/not-a-row/redeliver".to_owned(),
    ] {
        let p = h.call(Method::POST, &path, None).await.problem(404);
        assert!(
            p["detail"]
                .as_str()
                .unwrap()
                .contains("/vnfm/v1/notifications/dead"),
            "{p}"
        );
    }
    let r = h
        .call(
            Method::POST,
            &format!("/vnfm/v1/notifications/dead/{first}/redeliver"),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    // Not dead any more: a second request finds nothing to redeliver.
    h.call(
        Method::POST,
        &format!("/vnfm/v1/notifications/dead/{first}/redeliver"),
        None,
    )
    .await
    .problem(404);
    let pending = store.outbox_pending_rows(None, 10).await.unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].id, first);
    assert_eq!(pending[0].payload["id"], "n1");
    let due = store
        .outbox_due(
            vnfm_store::Timestamp::now(),
            10,
            "t",
            vnfm_store::Timestamp::now().plus(std::time::Duration::from_secs(60)),
        )
        .await
        .unwrap();
    assert_eq!(due.len(), 1, "the redelivered notification is due now");

    let text = metrics_text(&h).await;
    for line in [
        r#"vnfm_notifications{subscription="sub-back",status="pending"} 1"#,
        r#"vnfm_notifications{subscription="sub-back",status="dead"} 1"#,
    ] {
        assert!(text.contains(line), "{line} missing: {text}");
    }

    let r = h
        .call(
            Method::DELETE,
            &format!("/vnfm/v1/notifications/dead/{second}"),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    h.call(
        Method::DELETE,
        &format!("/vnfm/v1/notifications/dead/{second}"),
        None,
    )
    .await
    .problem(404);
    // Only a given-up notification can be discarded: the pending one stays.
    h.call(
        Method::DELETE,
        &format!("/vnfm/v1/notifications/dead/{first}"),
        None,
    )
    .await
    .problem(404);
    let dead = h
        .call(Method::GET, "/vnfm/v1/notifications/dead", None)
        .await
        .json();
    assert_eq!(dead, json!([]));
    let text = metrics_text(&h).await;
    assert!(
        text.contains(r#"vnfm_notifications{subscription="sub-back",status="dead"} 0"#),
        "{text}"
    );
}

/// Issue 25, item 12: with `allow_duplicate_lcm_subscriptions` (`serve
/// --allow-duplicate-lcm-subscriptions`) a lifecycle subscription identical to an existing
/// one is created (201, a new id) instead of answered 303, on v1 and v2; package management
/// subscriptions still answer 303; and without the option only v2 creates one (as Tacker's
/// v2 API), a v1 duplicate is answered 303.
#[tokio::test]
async fn identical_lcm_subscriptions_are_created_when_duplicates_are_allowed() {
    let body = json!({"callbackUri": "http://127.0.0.1:9/cb",
                      "filter": {"notificationTypes": ["VnfLcmOperationOccurrenceNotification"]}});
    let allowed = Harness::with(|o| o.allow_duplicate_lcm_subscriptions = true).await;
    let mut ids = Vec::new();
    for path in [
        "/vnflcm/v2/subscriptions",
        "/vnflcm/v2/subscriptions",
        "/vnflcm/v1/subscriptions",
    ] {
        let r = allowed.call(Method::POST, path, Some(body.clone())).await;
        assert_eq!(
            r.status,
            StatusCode::CREATED,
            "{path}: {}",
            String::from_utf8_lossy(&r.body)
        );
        ids.push(r.json()["id"].as_str().unwrap().to_owned());
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 3, "{ids:?}");
    let pkgm = json!({"callbackUri": "http://127.0.0.1:9/pkg"});
    let first = allowed
        .call(
            Method::POST,
            "/vnfpkgm/v2/subscriptions",
            Some(pkgm.clone()),
        )
        .await;
    assert_eq!(first.status, StatusCode::CREATED);
    let again = allowed
        .call(Method::POST, "/vnfpkgm/v2/subscriptions", Some(pkgm))
        .await;
    assert_eq!(again.status, StatusCode::SEE_OTHER);

    let refused = Harness::new().await;
    for (path, second) in [
        ("/vnflcm/v2/subscriptions", StatusCode::CREATED),
        ("/vnflcm/v1/subscriptions", StatusCode::SEE_OTHER),
    ] {
        let r = refused.call(Method::POST, path, Some(body.clone())).await;
        assert_eq!(r.status, StatusCode::CREATED, "{path}");
        let r = refused.call(Method::POST, path, Some(body.clone())).await;
        assert_eq!(r.status, second, "{path}");
    }
}

/// A package onboarded at one replica after another started is not in the other's memory:
/// an operation requested at the other loads its VNFD from the shared store and runs (the
/// first request, v1, finds it missing; the v2 one after it finds it loaded).
#[tokio::test]
async fn an_operation_at_a_replica_loads_a_vnfd_another_replica_onboarded() {
    use tower::ServiceExt;
    let a = Harness::new().await;
    let a_dir = a._dir.path().join("data");
    let b_tmp = tempfile::tempdir().unwrap();
    let b_dir = b_tmp.path().join("data");
    std::fs::create_dir_all(&b_dir).unwrap();
    for key in ["token.keys", "fernet.keys"] {
        std::fs::copy(a_dir.join(key), b_dir.join(key)).unwrap();
    }
    let mut options = vnfm_api::StateOptions::new(&b_dir);
    options.verify_callbacks = false;
    options.enable_test_vim = true;
    let services = vnfm::lcm::builder()
        .data_dir(&b_dir)
        .store_url(format!("sqlite://{}", a_dir.join("vnfm.db").display()))
        .recovery_interval(None)
        .infra_driver(vnfm_api::test_vim_driver())
        .assemble()
        .await
        .unwrap();
    let b = vnfm_api::AppState::new(services, options).await.unwrap();
    let b_app = vnfm_api::router(b.clone());
    // Onboarded at A once B runs: B's memory has no VNFD.
    a.onboard(zip_dir(Path::new(HELLO))).await;
    let vim = json!({"vim1": {"vimType": "TEST.NOOP.V_1"}});
    let v1_vim = json!([{"id": "vim1", "vimType": "TEST.NOOP.V_1"}]);
    for (version, prefix, body) in [
        (
            "1.3.0",
            "/vnflcm/v1",
            json!({"flavourId": "simple", "vimConnectionInfo": v1_vim}),
        ),
        (
            "2.0.0",
            "/vnflcm/v2",
            json!({"flavourId": "simple", "vimConnectionInfo": vim}),
        ),
    ] {
        let id = a.create_instance().await;
        let request = axum::http::Request::builder()
            .method(Method::POST)
            .uri(format!("{prefix}/vnf_instances/{id}/instantiate"))
            .header("authorization", format!("Bearer {}", a.token))
            .header("version", version)
            .header("content-type", "application/json")
            .body(axum::body::Body::from(body.to_string()))
            .unwrap();
        let response = b_app.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let location = response
            .headers()
            .get("location")
            .map(|l| l.to_str().unwrap().to_owned());
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        assert_eq!(
            status,
            StatusCode::ACCEPTED,
            "{prefix}: {}",
            String::from_utf8_lossy(&body)
        );
        let location = location.unwrap().replace("/vnflcm/v1/", "/vnflcm/v2/");
        let occ = a.wait_op(&location).await;
        assert_eq!(occ["operationState"], "COMPLETED", "{prefix}: {occ}");
    }
    b.lcm()
        .shutdown(std::time::Duration::from_millis(100))
        .await;
}

/// The services of a replica with data directory `dir` sharing the store of the replica
/// whose data directory is `shared`.
async fn replica(dir: &std::path::Path, shared: &std::path::Path) -> vnfm::lcm::Vnfm {
    vnfm::lcm::builder()
        .data_dir(dir)
        .store_url(format!("sqlite://{}", shared.join("vnfm.db").display()))
        .recovery_interval(None)
        .vim_kind(std::sync::Arc::new(vnfm_infra_openstack::OpenStackVimKind))
        .vim_kind(std::sync::Arc::new(
            vnfm_infra_kubernetes::KubernetesVimKind,
        ))
        .assemble()
        .await
        .unwrap()
}

/// A test VIM connects without credentials: a connection that carries `accessInfo` is
/// refused naming the member and saying what to do, not as an unsupported VIM type.
#[tokio::test]
async fn a_test_vim_connection_with_access_info_is_refused_naming_the_member() {
    let h = Harness::new().await;
    h.onboard(zip_dir(Path::new(HELLO))).await;
    let id = h.create_instance().await;
    let vim = json!({"vim1": {"vimType": "TEST.NOOP.V_1", "accessInfo": {"password": "s3cr3t-x"}}});
    let r = h
        .call(
            Method::POST,
            &format!("/vnflcm/v2/vnf_instances/{id}/instantiate"),
            Some(json!({"flavourId": "simple", "vimConnectionInfo": vim})),
        )
        .await;
    // The test VIM is a registered VIM kind: its connection is checked as every kind's is,
    // a 400 pointing at the member.
    let p = r.problem(400);
    let detail = p["detail"].as_str().unwrap();
    assert_eq!(
        p["pointer"], "/vimConnectionInfo/vim1/accessInfo/password",
        "{p}"
    );
    assert!(
        detail.starts_with("/vimConnectionInfo/vim1/accessInfo/password: "),
        "{p}"
    );
    assert!(detail.contains("takes no access information"), "{p}");
    assert!(!detail.contains("is not supported"), "{p}");
    assert!(!r.body.windows(8).any(|w| w == b"s3cr3t-x"), "{p}");
}
