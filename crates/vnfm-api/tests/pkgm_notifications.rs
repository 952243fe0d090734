//! VNF package management notifications over real HTTP on 127.0.0.1: the API served the way
//! `vnfm serve` serves it (router and outbox `Deliverer` over one store), a subscriber's
//! callback server that answers the notification endpoint test and records every POST, and a
//! package that is onboarded, disabled, enabled, disabled and deleted.

use crate::support;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::get;
use serde_json::{Value, json};
use support::{HELLO, HELLO_VNFD, zip_dir};
use vnfm_api::{AppState, StateOptions};
use vnfm_lcm::DelivererConfig;

/// `nfvo:pkg-cb-Pa55` in Basic form.
const BASIC: &str = "Basic bmZ2bzpwa2ctY2ItUGE1NQ==";

#[derive(Default)]
struct Callback {
    tests: Mutex<Vec<Option<String>>>,
    posts: Mutex<Vec<(Option<String>, Value)>>,
}

fn authorization(headers: &HeaderMap) -> Option<String> {
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

async fn callback_test(State(cb): State<Arc<Callback>>, headers: HeaderMap) -> StatusCode {
    cb.tests.lock().unwrap().push(authorization(&headers));
    StatusCode::NO_CONTENT
}

async fn callback_post(
    State(cb): State<Arc<Callback>>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let auth = authorization(&headers);
    if auth.as_deref() != Some(BASIC) {
        return StatusCode::UNAUTHORIZED;
    }
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    cb.posts.lock().unwrap().push((auth, body));
    StatusCode::NO_CONTENT
}

fn etsi_schema(name: &str) -> jsonschema::Validator {
    support::etsi_schema("VNFPackageManagement-API", name)
}

#[vnfm_test_env::needs(corpus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn package_notifications_reach_the_subscriber_in_order_over_http() {
    vnfm::lcm::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();

    // The subscriber.
    let cb = Arc::new(Callback::default());
    let app = Router::new()
        .route("/pkgm", get(callback_test).post(callback_post))
        .with_state(cb.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let callback = format!("http://{}/pkgm", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    // The VNFM: the router and the deliverer over one store, as `vnfm serve` runs them; the
    // notification endpoint test is on (the default).
    let data = dir.path().join("data");
    // The deliverer would poll only once an hour: every notification below goes out because
    // the write that enqueued it woke the deliverer, as the composition root wires them.
    let services = vnfm::lcm::builder()
        .data_dir(&data)
        .recovery_interval(None)
        .deliver_notifications(DelivererConfig {
            poll_interval: Duration::from_secs(3600),
            ..DelivererConfig::new("pkgm-http-test")
        })
        .assemble()
        .await
        .unwrap();
    let state = AppState::new(services, StateOptions::new(&data))
        .await
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let api = vnfm_api::router(state.clone());
    tokio::spawn(async move { axum::serve(listener, api).await });

    let http = reqwest::Client::new();
    let client = state.bootstrap_client().unwrap();
    let token: Value = http
        .post(format!("{base}/oauth2/token"))
        .form(&[
            ("grant_type", "client_credentials"),
            ("client_id", client.client_id.as_str()),
            ("client_secret", client.client_secret.expose()),
        ])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let bearer = format!("Bearer {}", token["access_token"].as_str().unwrap());
    let call = |method: reqwest::Method, path: &str| {
        http.request(method, format!("{base}{path}"))
            .header("authorization", &bearer)
    };

    let r = call(reqwest::Method::POST, "/vnfpkgm/v1/subscriptions")
        .json(
            &json!({"callbackUri": callback, "authentication": {"authType": ["BASIC"],
            "paramsBasic": {"userName": "nfvo", "password": "pkg-cb-Pa55"}}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let sub: Value = r.json().await.unwrap();
    let sub_id = sub["id"].as_str().unwrap().to_owned();
    // The notification endpoint was tested, with the subscription's credentials.
    assert_eq!(*cb.tests.lock().unwrap(), vec![Some(BASIC.to_owned())]);

    let r = call(reqwest::Method::POST, "/vnfpkgm/v1/vnf_packages")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let pkg = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = call(
        reqwest::Method::PUT,
        &format!("/vnfpkgm/v1/vnf_packages/{pkg}/package_content"),
    )
    .header("content-type", "application/zip")
    .body(zip_dir(Path::new(HELLO)))
    .send()
    .await
    .unwrap();
    assert_eq!(r.status(), 202);
    let mut onboarded = false;
    for _ in 0..500 {
        let info: Value = call(
            reqwest::Method::GET,
            &format!("/vnfpkgm/v1/vnf_packages/{pkg}"),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
        if info["onboardingState"] == "ONBOARDED" {
            onboarded = true;
            break;
        }
        assert_ne!(info["onboardingState"], "ERROR", "{info}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(onboarded);
    for state in ["DISABLED", "ENABLED", "DISABLED"] {
        let r = call(
            reqwest::Method::PATCH,
            &format!("/vnfpkgm/v1/vnf_packages/{pkg}"),
        )
        .header("content-type", "application/merge-patch+json")
        .body(json!({"operationalState": state}).to_string())
        .send()
        .await
        .unwrap();
        assert_eq!(r.status(), 200, "{state}");
    }
    let r = call(
        reqwest::Method::DELETE,
        &format!("/vnfpkgm/v1/vnf_packages/{pkg}"),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(r.status(), 204);

    let mut delivered = Vec::new();
    for _ in 0..500 {
        delivered = cb.posts.lock().unwrap().clone();
        if delivered.len() >= 5 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    state.shutdown(Duration::from_secs(5)).await;
    let seen: Vec<String> = delivered
        .iter()
        .map(|(_, n)| {
            format!(
                "{} {} {}",
                n["notificationType"].as_str().unwrap_or("?"),
                n["changeType"].as_str().unwrap_or("-"),
                n["operationalState"].as_str().unwrap_or("-")
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            "VnfPackageOnboardingNotification - -",
            "VnfPackageChangeNotification OP_STATE_CHANGE DISABLED",
            "VnfPackageChangeNotification OP_STATE_CHANGE ENABLED",
            "VnfPackageChangeNotification OP_STATE_CHANGE DISABLED",
            "VnfPackageChangeNotification PKG_DELETE -",
        ]
    );
    let onboarding = etsi_schema("VnfPackageOnboardingNotification.schema.json");
    let change = etsi_schema("VnfPackageChangeNotification.schema.json");
    let mut ids = std::collections::HashSet::new();
    for (auth, n) in &delivered {
        assert_eq!(auth.as_deref(), Some(BASIC));
        let schema = if n["notificationType"] == "VnfPackageOnboardingNotification" {
            &onboarding
        } else {
            &change
        };
        let errors: Vec<String> = schema.iter_errors(n).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}: {n}");
        assert!(
            ids.insert(n["id"].as_str().unwrap().to_owned()),
            "ids differ"
        );
        assert_eq!(n["subscriptionId"], sub_id.as_str());
        assert_eq!(n["vnfPkgId"], pkg.as_str());
        assert_eq!(n["vnfdId"], HELLO_VNFD);
        assert_eq!(
            n["_links"]["vnfPackage"]["href"],
            format!("/vnfpkgm/v1/vnf_packages/{pkg}")
        );
        assert_eq!(
            n["_links"]["subscription"]["href"],
            format!("/vnfpkgm/v1/subscriptions/{sub_id}")
        );
    }
}
