//! What Tacker's functional tests and python-tackerclient send and check on the wire, through
//! the router without a socket: `Accept-Ranges`, `PATCH` as `application/json`, the FM API
//! version 1.3.0, the `Version` of `api_versions`, Tacker's largest subscription request,
//! the default `verbosity`, duplicate subscriptions per API version, and unquoted
//! `Idempotency-Key`s.

use std::path::Path;

use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support::*;

/// Tacker's `paramgen.sub_create_max` (tacker/tests/functional/sol_v2_common/paramgen.py),
/// as its functional tests send it: versions as JSON numbers, a repeated notification type.
fn tacker_sub_create_max(callback_uri: &str) -> Value {
    let provider = |n: u32| {
        let versions = json!([
            {"vnfSoftwareVersion": 1.0, "vnfdVersions": [1.0, 2.0]},
            {"vnfSoftwareVersion": 1.1, "vnfdVersions": [1.1, 2.1]}
        ]);
        json!({
            "vnfProvider": format!("dummy-vnfProvider-{n}"),
            "vnfProducts": [
                {"vnfProductName": format!("dummy-vnfProductName-{n}-1"), "versions": versions},
                {"vnfProductName": format!("dummy-vnfProductName-{n}-2"), "versions": versions}
            ]
        })
    };
    json!({
        "filter": {
            "vnfInstanceSubscriptionFilter": {
                "vnfdIds": ["dummy-vnfdId-1", "dummy-vnfdId-2"],
                "vnfProductsFromProviders": [provider(1), provider(2)],
                "vnfInstanceIds": ["dummy-vnfInstanceId-1", "dummy-vnfInstanceId-2"],
                "vnfInstanceNames": ["dummy-vnfInstanceName-1", "dummy-vnfInstanceName-2"]
            },
            "notificationTypes": [
                "VnfLcmOperationOccurrenceNotification",
                "VnfIdentifierCreationNotification",
                "VnfLcmOperationOccurrenceNotification"
            ],
            "operationTypes": [
                "INSTANTIATE", "SCALE", "TERMINATE", "HEAL", "MODIFY_INFO", "CHANGE_EXT_CONN"
            ],
            "operationStates": [
                "COMPLETED", "FAILED", "FAILED_TEMP", "PROCESSING", "ROLLING_BACK", "ROLLED_BACK",
                "STARTING"
            ]
        },
        "callbackUri": callback_uri,
        "authentication": {
            "authType": ["BASIC"],
            "paramsBasic": {"password": "test_pass", "userName": "test_user"}
        },
        "verbosity": "SHORT"
    })
}

/// The request headers of an authenticated call with `extra` headers.
async fn call_with(
    h: &Harness,
    method: Method,
    uri: &str,
    extra: &[(&str, &str)],
    body: Option<&Value>,
) -> Reply {
    let auth = format!("Bearer {}", h.token);
    let mut headers = vec![("authorization", auth.as_str())];
    headers.extend_from_slice(extra);
    let bytes = body
        .map(|b| serde_json::to_vec(b).unwrap())
        .unwrap_or_default();
    h.raw(method, uri, &headers, bytes).await
}

#[tokio::test]
async fn every_sol_api_answer_carries_accept_ranges_none() {
    let h = Harness::new().await;
    for (uri, version) in [
        ("/vnflcm/v2/vnf_instances", Some("2.0.0")),
        ("/vnflcm/v2/subscriptions", Some("2.0.0")),
        ("/vnflcm/v1/vnf_instances", None),
        ("/vnfpkgm/v2/vnf_packages", Some("2.1.0")),
        ("/vnfpkgm/v1/vnf_packages", None),
        ("/vnffm/v1/alarms", Some("1.3.0")),
        ("/vnfpm/v2/pm_jobs", Some("2.1.0")),
        ("/vnfind/v1/indicators", None),
        ("/vnflcm/api_versions", None),
        ("/vnflcm/v2/vnf_instances/nope", Some("2.0.0")),
    ] {
        let extra: Vec<(&str, &str)> = version.map(|v| ("version", v)).into_iter().collect();
        let r = call_with(&h, Method::GET, uri, &extra, None).await;
        assert!(
            r.status == StatusCode::OK || r.status == StatusCode::NOT_FOUND,
            "{uri}: {} {}",
            r.status,
            String::from_utf8_lossy(&r.body)
        );
        assert_eq!(r.header("accept-ranges"), Some("none"), "{uri}");
    }
    // Package content serves byte ranges, and says so, whole or in part.
    let (id, _) = h.onboard(zip_dir(Path::new(HELLO))).await;
    let content = format!("/vnfpkgm/v2/vnf_packages/{id}/package_content");
    let whole = call_with(&h, Method::GET, &content, &[("version", "2.1.0")], None).await;
    assert_eq!(whole.status, StatusCode::OK);
    assert_eq!(whole.header("accept-ranges"), Some("bytes"));
    let part = call_with(
        &h,
        Method::GET,
        &content,
        &[("version", "2.1.0"), ("range", "bytes=0-9")],
        None,
    )
    .await;
    assert_eq!(part.status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(part.header("accept-ranges"), Some("bytes"));
}

#[tokio::test]
async fn patch_as_application_json_and_accepting_merge_patch_is_served() {
    let h = Harness::new().await;
    let (pkg, _) = h.onboard(zip_dir(Path::new(HELLO))).await;
    let json_patch = [
        ("content-type", "application/json"),
        ("accept", "application/merge-patch+json"),
    ];
    // Tacker's tear-down disables a package this way before deleting it.
    let r = call_with(
        &h,
        Method::PATCH,
        &format!("/vnfpkgm/v1/vnf_packages/{pkg}"),
        &json_patch,
        Some(&json!({"operationalState": "DISABLED"})),
    )
    .await;
    assert_eq!(
        r.status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    assert_eq!(r.json(), json!({"operationalState": "DISABLED"}));
    let r = call_with(
        &h,
        Method::PATCH,
        &format!("/vnfpkgm/v2/vnf_packages/{pkg}"),
        &[("version", "2.1.0"), json_patch[0], json_patch[1]],
        Some(&json!({"operationalState": "ENABLED"})),
    )
    .await;
    assert_eq!(
        r.status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    assert!(
        r.header("content-type")
            .unwrap()
            .starts_with("application/json"),
        "{:?}",
        r.header("content-type")
    );

    let id = h.create_instance().await;
    for (uri, version) in [
        (format!("/vnflcm/v2/vnf_instances/{id}"), "2.0.0"),
        (format!("/vnflcm/v1/vnf_instances/{id}"), "1.3.0"),
    ] {
        let r = call_with(
            &h,
            Method::PATCH,
            &uri,
            &[
                ("version", version),
                ("content-type", "application/json"),
                ("accept", "application/merge-patch+json"),
            ],
            Some(&json!({"vnfInstanceName": format!("renamed-{version}")})),
        )
        .await;
        let occ = h.accepted_op(&r).await;
        assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");
    }
    // Other media types are still refused.
    let r = call_with(
        &h,
        Method::PATCH,
        &format!("/vnflcm/v2/vnf_instances/{id}"),
        &[("version", "2.0.0"), ("content-type", "text/xml")],
        Some(&json!({"vnfInstanceName": "x"})),
    )
    .await;
    r.problem(415);
}

#[tokio::test]
async fn the_fm_api_serves_tackers_version_1_3_0() {
    let h = Harness::new().await;
    for version in ["1.3.0", "1.2.0"] {
        let r = call_with(
            &h,
            Method::GET,
            "/vnffm/v1/alarms",
            &[("version", version)],
            None,
        )
        .await;
        assert_eq!(
            r.status,
            StatusCode::OK,
            "{version}: {}",
            String::from_utf8_lossy(&r.body)
        );
        assert_eq!(r.header("version"), Some("1.3.0"));
    }
    let r = call_with(
        &h,
        Method::GET,
        "/vnffm/v1/alarms",
        &[("version", "1.4.0")],
        None,
    )
    .await;
    r.problem(406);
    let r = call_with(&h, Method::GET, "/vnffm/v1/api_versions", &[], None).await;
    assert_eq!(
        r.json()["apiVersions"],
        json!([{"version": "1.3.0", "isDeprecated": false}])
    );
}

#[tokio::test]
async fn api_versions_resources_answer_with_a_version_header() {
    let h = Harness::new().await;
    for (uri, version) in [
        ("/vnflcm/api_versions", "2.0.0"),
        ("/vnflcm/v2/api_versions", "2.0.0"),
        ("/vnflcm/v1/api_versions", "1.3.0"),
        ("/vnfpkgm/api_versions", "2.1.0"),
        ("/vnffm/api_versions", "1.3.0"),
        ("/vnfpm/api_versions", "2.1.0"),
        ("/vnfind/api_versions", "1.2.0"),
    ] {
        let r = call_with(&h, Method::GET, uri, &[], None).await;
        assert_eq!(r.status, StatusCode::OK, "{uri}");
        assert_eq!(r.header("version"), Some(version), "{uri}");
    }
}

#[tokio::test]
async fn tackers_largest_subscription_request_is_created_with_its_versions_as_strings() {
    let h = Harness::new().await;
    let body = tacker_sub_create_max("http://127.0.0.1:9/tacker-max");
    let r = h
        .call(Method::POST, "/vnflcm/v2/subscriptions", Some(body))
        .await;
    assert_eq!(
        r.status,
        StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    let sub = r.json();
    let products = &sub["filter"]["vnfInstanceSubscriptionFilter"]["vnfProductsFromProviders"];
    assert_eq!(
        products[1]["vnfProducts"][0]["versions"],
        json!([
            {"vnfSoftwareVersion": "1.0", "vnfdVersions": ["1.0", "2.0"]},
            {"vnfSoftwareVersion": "1.1", "vnfdVersions": ["1.1", "2.1"]}
        ])
    );
    assert_eq!(sub["verbosity"], "SHORT");
    assert!(sub.get("authentication").is_none(), "{sub}");
    let read = h
        .call(
            Method::GET,
            &format!("/vnflcm/v2/subscriptions/{}", sub["id"].as_str().unwrap()),
            None,
        )
        .await
        .json();
    assert_eq!(read["filter"], sub["filter"]);
    // Numbers are accepted there only: elsewhere the schema still wants strings.
    let mut other = tacker_sub_create_max("http://127.0.0.1:9/tacker-max-2");
    other["filter"]["vnfInstanceSubscriptionFilter"]["vnfProductsFromProviders"][0]["vnfProvider"] =
        json!(1.0);
    let r = h
        .call(Method::POST, "/vnflcm/v2/subscriptions", Some(other))
        .await;
    let p = r.problem(400);
    assert!(p["detail"].as_str().unwrap().contains("vnfProvider"), "{p}");
}

#[tokio::test]
async fn a_v2_subscription_shows_its_default_verbosity() {
    let h = Harness::new().await;
    let r = h
        .call(
            Method::POST,
            "/vnflcm/v2/subscriptions",
            Some(json!({"callbackUri": "http://127.0.0.1:9/min"})),
        )
        .await;
    assert_eq!(
        r.status,
        StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    assert_eq!(r.json()["verbosity"], "FULL");
    let id = r.json()["id"].as_str().unwrap().to_owned();
    let read = h
        .call(Method::GET, &format!("/vnflcm/v2/subscriptions/{id}"), None)
        .await
        .json();
    assert_eq!(read["verbosity"], "FULL");
    let list = h
        .call(Method::GET, "/vnflcm/v2/subscriptions", None)
        .await
        .json();
    assert_eq!(list[0]["verbosity"], "FULL", "{list}");
    // SOL003 v2.6.1 has no verbosity: the v1 API does not add one.
    let v1 = h
        .call(Method::GET, &format!("/vnflcm/v1/subscriptions/{id}"), None)
        .await
        .json();
    assert!(v1.get("verbosity").is_none(), "{v1}");
}

/// python-tackerclient followed the 303 of a repeated v2 subscription with a POST (405); and
/// a v1 subscription was answered 303 to a v2 one with the same callback.
#[tokio::test]
async fn v2_subscriptions_are_always_created_and_v1_ones_are_duplicates_of_v1_ones_only() {
    let h = Harness::new().await;
    let body = json!({"callbackUri": "http://127.0.0.1:9/same",
                      "filter": {"notificationTypes": ["VnfLcmOperationOccurrenceNotification"]}});
    let mut created = Vec::new();
    for path in [
        "/vnflcm/v2/subscriptions",
        "/vnflcm/v2/subscriptions",
        "/vnflcm/v1/subscriptions",
    ] {
        let r = h.call(Method::POST, path, Some(body.clone())).await;
        assert_eq!(
            r.status,
            StatusCode::CREATED,
            "{path}: {}",
            String::from_utf8_lossy(&r.body)
        );
        let id = r.json()["id"].as_str().unwrap().to_owned();
        assert!(
            r.header("location")
                .unwrap()
                .ends_with(&format!("{path}/{id}"))
        );
        created.push(id);
    }
    let v1_id = created[2].clone();
    created.sort();
    created.dedup();
    assert_eq!(created.len(), 3, "{created:?}");
    // A v1 duplicate of the v1 subscription: 303 to it, under v1 (as Tacker's v1 API).
    let again = h
        .call(Method::POST, "/vnflcm/v1/subscriptions", Some(body))
        .await;
    assert_eq!(again.status, StatusCode::SEE_OTHER);
    assert!(
        again
            .header("location")
            .unwrap()
            .ends_with(&format!("/vnflcm/v1/subscriptions/{v1_id}")),
        "{:?}",
        again.header("location")
    );
}

#[tokio::test]
async fn an_unquoted_idempotency_key_is_the_same_key_as_the_quoted_one() {
    let h = Harness::new().await;
    h.onboard(zip_dir(Path::new(HELLO))).await;
    let body = json!({"vnfdId": HELLO_VNFD, "vnfInstanceName": "keyed"});
    let mut ids = Vec::new();
    for key in ["k-1", "\"k-1\"", "k-1"] {
        let r = call_with(
            &h,
            Method::POST,
            "/vnflcm/v2/vnf_instances",
            &[
                ("version", "2.0.0"),
                ("content-type", "application/json"),
                ("idempotency-key", key),
            ],
            Some(&body),
        )
        .await;
        assert_eq!(
            r.status,
            StatusCode::CREATED,
            "{key}: {}",
            String::from_utf8_lossy(&r.body)
        );
        ids.push(r.json()["id"].as_str().unwrap().to_owned());
    }
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
}

/// A refused request is logged with what the client was told, so that an operator (or a
/// test harness such as Tacker's functional suites) can read why without the client's output.
#[tokio::test]
async fn a_refused_request_is_logged_with_its_problem_details() {
    let capture = LogCapture::global();
    let h = Harness::new().await;
    let nanos = std::time::UNIX_EPOCH.elapsed().unwrap().as_nanos();
    let vnfd_id = format!("no-such-vnfd-{nanos}");
    let r = h
        .call(
            Method::POST,
            "/vnflcm/v2/vnf_instances",
            Some(json!({"vnfdId": vnfd_id})),
        )
        .await;
    assert!(r.status.is_client_error(), "{:?}", r.status);
    let detail = r.json()["detail"].as_str().unwrap().to_owned();
    let logs = capture.text();
    let line = logs
        .lines()
        .find(|l| l.contains("request refused") && l.contains(&vnfd_id))
        .unwrap_or_else(|| panic!("no refusal logged:\n{logs}"));
    assert!(
        line.contains(&format!("status={}", r.status.as_u16())),
        "{line}"
    );
    assert!(line.contains(&detail), "{line} lacks {detail}");
}
