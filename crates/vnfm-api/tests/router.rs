//! The router without a socket (`oneshot`): every resource, status code, header (Location,
//! Link, ETag, Version, Allow, WWW-Authenticate) and ProblemDetails case, with response bodies
//! checked against the ETSI v2.6.1 JSON schemas (v1) and the server's own schemas (v2).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::http::{Method, StatusCode};
use base64::Engine;
use serde_json::{Value, json};
use vnfm_driver_api::DriverError;
use vnfm_driver_api::infra::InfraOperation;

mod support;

use support::*;

fn etsi_schema(name: &str) -> jsonschema::Validator {
    let dir = format!("{CORPUS}/etsi/api-tests/SOL003/VNFLifecycleManagement-API/schemas");
    let text = std::fs::read_to_string(format!("{dir}/{name}")).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft4)
        .build(&schema)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn assert_valid(v: &jsonschema::Validator, doc: &Value) {
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}\n{doc:#}");
}

fn own_schema<T: schemars::JsonSchema>() -> jsonschema::Validator {
    let schema = serde_json::to_value(schemars::schema_for!(T)).unwrap();
    jsonschema::draft202012::new(&schema).unwrap()
}

#[tokio::test]
async fn authentication_is_required_and_checked() {
    let h = Harness::new().await;
    let r = h
        .raw(
            Method::GET,
            "/vnflcm/v2/vnf_instances",
            &[("version", "2.0.0")],
            vec![],
        )
        .await;
    r.problem(401);
    assert!(r.header("www-authenticate").unwrap().starts_with("Bearer"));
    let r = h
        .raw(
            Method::GET,
            "/vnflcm/v2/vnf_instances",
            &[
                ("version", "2.0.0"),
                ("authorization", "Bearer negativetoken"),
            ],
            vec![],
        )
        .await;
    r.problem(401);
    // The token endpoint refuses wrong secrets and grants, RFC 6749 style.
    let r = h
        .raw(
            Method::POST,
            "/oauth2/token",
            &[("content-type", "application/x-www-form-urlencoded")],
            b"grant_type=client_credentials&client_id=x&client_secret=y".to_vec(),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert_eq!(r.json()["error"], "invalid_client");
    let r = h
        .raw(
            Method::POST,
            "/oauth2/token",
            &[("content-type", "application/x-www-form-urlencoded")],
            b"grant_type=password".to_vec(),
        )
        .await;
    assert_eq!(r.json()["error"], "unsupported_grant_type");
    // HTTP Basic with the client's credentials (enabled in this harness), also at the token endpoint.
    let client = h.state.bootstrap_client().unwrap();
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!(
            "{}:{}",
            client.client_id,
            client.client_secret.expose()
        ))
    );
    let r = h
        .raw(
            Method::GET,
            "/vnflcm/v2/vnf_instances",
            &[("version", "2.0.0"), ("authorization", &basic)],
            vec![],
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let r = h
        .raw(
            Method::POST,
            "/oauth2/token",
            &[
                ("authorization", &basic),
                ("content-type", "application/x-www-form-urlencoded"),
            ],
            b"grant_type=client_credentials".to_vec(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json()["token_type"], "Bearer");
    // Health endpoints need no credentials; metrics do.
    assert_eq!(
        h.raw(Method::GET, "/healthz", &[], vec![]).await.status,
        StatusCode::OK
    );
    assert_eq!(
        h.raw(Method::GET, "/readyz", &[], vec![]).await.status,
        StatusCode::OK
    );
    h.raw(Method::GET, "/metrics", &[], vec![])
        .await
        .problem(401);
}

#[tokio::test]
async fn version_header_api_versions_and_fallbacks() {
    let h = Harness::new().await;
    let auth = format!("Bearer {}", h.token);
    let r = h
        .raw(
            Method::GET,
            "/vnflcm/v2/vnf_instances",
            &[("authorization", &auth)],
            vec![],
        )
        .await;
    let p = r.problem(400);
    assert_eq!(p["pointer"], "Version");
    let r = h
        .raw(
            Method::GET,
            "/vnflcm/v2/vnf_instances",
            &[("authorization", &auth), ("version", "9.0.0")],
            vec![],
        )
        .await;
    assert!(
        r.problem(400)["detail"]
            .as_str()
            .unwrap()
            .contains("not supported")
    );
    let r = h.call(Method::GET, "/vnflcm/v2/vnf_instances", None).await;
    assert_eq!(r.header("version"), Some("2.0.0"));
    // v1 takes requests without the header and answers with its version.
    let r = h
        .raw(
            Method::GET,
            "/vnflcm/v1/vnf_instances",
            &[("authorization", &auth)],
            vec![],
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("version"), Some("1.3.0"));
    // api_versions: no Version header needed; ETSI schema.
    let r = h
        .raw(
            Method::GET,
            "/vnflcm/v1/api_versions",
            &[("authorization", &auth)],
            vec![],
        )
        .await;
    assert_valid(&etsi_schema("ApiVersionInformation.schema.json"), &r.json());
    let r = h
        .raw(
            Method::GET,
            "/vnflcm/api_versions",
            &[("authorization", &auth)],
            vec![],
        )
        .await;
    let doc = r.json();
    let versions: Vec<&str> = doc["apiVersions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["1.3.0", "2.0.0"]);
    // Fault management has one major version, listed at /vnffm/api_versions too.
    let r = h
        .raw(
            Method::GET,
            "/vnffm/api_versions",
            &[("authorization", &auth)],
            vec![],
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_valid(&etsi_schema("ApiVersionInformation.schema.json"), &r.json());
    assert_eq!(
        r.json(),
        json!({"uriPrefix": "/vnffm", "apiVersions": [{"version": "1.2.0", "isDeprecated": false}]})
    );
    // So has performance management (SOL003 v2.6.1 vnfpm/v1 and v3.3.1 vnfpm/v2).
    let r = h
        .raw(
            Method::GET,
            "/vnfpm/api_versions",
            &[("authorization", &auth)],
            vec![],
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_valid(&etsi_schema("ApiVersionInformation.schema.json"), &r.json());
    assert_eq!(
        r.json(),
        json!({"uriPrefix": "/vnfpm", "apiVersions": [
            {"version": "1.2.0", "isDeprecated": false},
            {"version": "2.1.0", "isDeprecated": false}
        ]})
    );
    let r = h
        .raw(
            Method::POST,
            "/vnflcm/v1/api_versions",
            &[("authorization", &auth)],
            vec![],
        )
        .await;
    r.problem(405);
    // Wrong methods: 405 with Allow; unknown paths: 404, both ProblemDetails.
    let r = h.call(Method::PUT, "/vnflcm/v2/vnf_instances", None).await;
    r.problem(405);
    assert_eq!(r.header("allow"), Some("GET, POST"));
    let r = h
        .call(
            Method::PUT,
            "/vnflcm/v2/vnf_instances/abc/instantiate",
            None,
        )
        .await;
    assert_eq!(r.header("allow"), Some("POST"));
    // The FM, PM and Tacker VIM resources list their own methods too.
    for (method, path, allow) in [
        (Method::DELETE, "/vnffm/v1/alarms", "GET"),
        (Method::PUT, "/vnffm/v1/alarms/abc", "GET, PATCH"),
        (Method::PATCH, "/vnffm/v1/subscriptions/abc", "DELETE, GET"),
        (Method::GET, "/vnffm/v1/alertmanager", "POST"),
        (Method::PUT, "/vnfpm/v2/pm_jobs", "GET, POST"),
        (
            Method::POST,
            "/vnfpm/v2/thresholds/abc",
            "DELETE, GET, PATCH",
        ),
        (Method::DELETE, "/vnfpm/v2/pm_jobs/abc/reports/def", "GET"),
        (Method::PATCH, "/v1.0/vims/abc", "DELETE, GET, PUT"),
        (Method::DELETE, "/v1.0/vims.json", "GET, POST"),
        (Method::POST, "/vnfind/v1/indicators", "GET"),
        (Method::DELETE, "/vnfind/v1/indicators/abc/load", "GET"),
        (Method::PUT, "/vnfind/v1/subscriptions", "GET, POST"),
    ] {
        let r = h.call(method.clone(), path, None).await;
        r.problem(405);
        assert_eq!(r.header("allow"), Some(allow), "{method} {path}");
    }
    h.call(Method::GET, "/vnflcm/v2/nothing_here", None)
        .await
        .problem(404);
}

#[tokio::test]
async fn package_management_lifecycle() {
    let h = Harness::new().await;
    let (id, info) = h.onboard(zip_dir(Path::new(HELLO))).await;
    assert_eq!(info["onboardingState"], "ONBOARDED", "{info:#}");
    assert_eq!(info["operationalState"], "ENABLED");
    assert_eq!(info["usageState"], "NOT_IN_USE");
    assert_eq!(info["vnfdId"], HELLO_VNFD);
    assert_eq!(info["checksum"]["algorithm"], "SHA-256");
    assert_eq!(info["userDefinedData"]["k"], "v");
    // Default exclusions in lists; all_fields brings them back.
    let list = h
        .call(Method::GET, "/vnfpkgm/v2/vnf_packages", None)
        .await
        .json();
    assert!(list[0].get("softwareImages").is_none(), "{list:#}");
    assert!(list[0].get("userDefinedData").is_none());
    let list = h
        .call(Method::GET, "/vnfpkgm/v2/vnf_packages?all_fields", None)
        .await
        .json();
    assert!(list[0].get("softwareImages").is_some());
    // v1 shape: same package, v1 links.
    let v1 = h
        .call(Method::GET, &format!("/vnfpkgm/v1/vnf_packages/{id}"), None)
        .await
        .json();
    assert!(
        v1["_links"]["self"]["href"]
            .as_str()
            .unwrap()
            .starts_with("http://localhost/vnfpkgm/v1/")
    );
    // The VNFD: several files -> zip; text/plain alone is not acceptable then.
    let auth = format!("Bearer {}", h.token);
    let r = h
        .raw(
            Method::GET,
            &format!("/vnfpkgm/v2/vnf_packages/{id}/vnfd"),
            &[
                ("authorization", &auth),
                ("version", "2.0.0"),
                ("accept", "application/zip"),
            ],
            vec![],
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("content-type"), Some("application/zip"));
    let vnfd_zip = zip::ZipArchive::new(std::io::Cursor::new(r.body)).unwrap();
    let names: Vec<String> = vnfd_zip
        .file_names()
        .map(|n| n.unwrap().to_string())
        .collect();
    assert!(
        names.iter().any(|n| n == "Definitions/hello_top.vnfd.yaml"),
        "{names:?}"
    );
    assert!(
        names
            .iter()
            .all(|n| n.starts_with("Definitions/") || n.starts_with("TOSCA-Metadata/")),
        "{names:?}"
    );
    let r = h
        .raw(
            Method::GET,
            &format!("/vnfpkgm/v2/vnf_packages/{id}/vnfd"),
            &[
                ("authorization", &auth),
                ("version", "2.0.0"),
                ("accept", "text/plain"),
            ],
            vec![],
        )
        .await;
    // The client accepts neither problem+json nor JSON: the ProblemDetails comes as JSON, the
    // type ETSI's OpenAPI declares for it.
    assert_eq!(r.status, StatusCode::NOT_ACCEPTABLE);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.json()["status"], 406);
    // Content with Range.
    let r = h
        .raw(
            Method::GET,
            &format!("/vnfpkgm/v2/vnf_packages/{id}/package_content"),
            &[
                ("authorization", &auth),
                ("version", "2.0.0"),
                ("range", "bytes=0-3"),
            ],
            vec![],
        )
        .await;
    assert_eq!(r.status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(r.body, b"PK\x03\x04");
    assert!(r.header("content-range").unwrap().starts_with("bytes 0-3/"));
    let r = h
        .raw(
            Method::GET,
            &format!("/vnfpkgm/v2/vnf_packages/{id}/package_content"),
            &[
                ("authorization", &auth),
                ("version", "2.0.0"),
                ("range", "bytes=999999999-"),
            ],
            vec![],
        )
        .await;
    r.problem(416);
    // Artifacts: listed ones are served, others are 404.
    let artifact = info["additionalArtifacts"][0]["artifactPath"]
        .as_str()
        .map(str::to_owned);
    if let Some(path) = artifact {
        let r = h
            .call(
                Method::GET,
                &format!("/vnfpkgm/v2/vnf_packages/{id}/artifacts/{path}"),
                None,
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{path}");
        assert!(!r.body.is_empty());
    }
    h.call(
        Method::GET,
        &format!("/vnfpkgm/v2/vnf_packages/{id}/artifacts/TOSCA-Metadata/TOSCA.meta.nope"),
        None,
    )
    .await
    .problem(404);
    // A second package with the same vnfdId ends in ERROR, naming the conflict.
    let (_, dup) = h.onboard(zip_dir(Path::new(HELLO))).await;
    assert_eq!(dup["onboardingState"], "ERROR");
    assert!(
        dup["onboardingFailureDetails"]["detail"]
            .as_str()
            .unwrap()
            .contains("already has vnfdId"),
        "{dup:#}"
    );
    assert_eq!(dup["operationalState"], "DISABLED", "{dup:#}");
    // In use: cannot be deleted; disabled: no new instances.
    let vnf = h.create_instance().await;
    let info = h
        .call(Method::GET, &format!("/vnfpkgm/v2/vnf_packages/{id}"), None)
        .await
        .json();
    assert_eq!(info["usageState"], "IN_USE");
    h.call(
        Method::DELETE,
        &format!("/vnfpkgm/v2/vnf_packages/{id}"),
        None,
    )
    .await
    .problem(409);
    let r = h
        .call(
            Method::PATCH,
            &format!("/vnfpkgm/v2/vnf_packages/{id}"),
            Some(json!({"operationalState": "DISABLED"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json()["operationalState"], "DISABLED");
    let r = h
        .call(
            Method::POST,
            "/vnflcm/v2/vnf_instances",
            Some(json!({"vnfdId": HELLO_VNFD})),
        )
        .await;
    assert!(
        r.problem(409)["detail"]
            .as_str()
            .unwrap()
            .contains("DISABLED")
    );
    h.call(
        Method::DELETE,
        &format!("/vnfpkgm/v2/vnf_packages/{id}"),
        None,
    )
    .await
    .problem(409);
    assert_eq!(
        h.call(
            Method::DELETE,
            &format!("/vnflcm/v2/vnf_instances/{vnf}"),
            None
        )
        .await
        .status,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        h.call(
            Method::DELETE,
            &format!("/vnfpkgm/v2/vnf_packages/{id}"),
            None
        )
        .await
        .status,
        StatusCode::NO_CONTENT
    );
    h.call(Method::GET, &format!("/vnfpkgm/v2/vnf_packages/{id}"), None)
        .await
        .problem(404);
    // Unknown vnfdId: 422.
    let r = h
        .call(
            Method::POST,
            "/vnflcm/v2/vnf_instances",
            Some(json!({"vnfdId": "nope"})),
        )
        .await;
    r.problem(422);
}

/// A ProblemDetails is `application/problem+json` unless the request's `Accept` excludes it,
/// then `application/json` (what ETSI's OpenAPI declares and its conformance suites check).
#[tokio::test]
async fn problem_details_type_follows_the_accept_header() {
    let h = Harness::new().await;
    let auth = format!("Bearer {}", h.token);
    for (accept, expected) in [
        (None, "application/problem+json"),
        (Some("application/json"), "application/json"),
        (Some("application/zip"), "application/json"),
        (
            Some("text/html, application/json;q=0.9"),
            "application/json",
        ),
        (Some("application/problem+json"), "application/problem+json"),
        (
            Some("application/json, application/problem+json"),
            "application/problem+json",
        ),
        (Some("application/*"), "application/problem+json"),
        (Some("*/*"), "application/problem+json"),
    ] {
        // Without a token: refused before any handler looks at the request.
        let mut headers = vec![("version", "2.0.0")];
        if let Some(a) = accept {
            headers.push(("accept", a));
        }
        let r = h
            .raw(Method::GET, "/vnfpkgm/v2/vnf_packages", &headers, vec![])
            .await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{accept:?}");
        assert_eq!(r.header("content-type"), Some(expected), "{accept:?}");
        assert_eq!(r.json()["status"], 401, "{accept:?}");
    }
    // Other bodies keep their type.
    let r = h
        .raw(
            Method::GET,
            "/vnfpkgm/v2/vnf_packages",
            &[
                ("authorization", &auth),
                ("version", "2.0.0"),
                ("accept", "application/json"),
            ],
            vec![],
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("content-type"), Some("application/json"));
}

#[tokio::test]
async fn broken_packages_end_in_error_with_diagnostics() {
    let h = Harness::new().await;
    let (_, info) = h.onboard(b"this is not a zip".to_vec()).await;
    assert_eq!(info["onboardingState"], "ERROR");
    assert!(
        info["onboardingFailureDetails"]["detail"]
            .as_str()
            .unwrap()
            .contains("zip"),
        "{info:#}"
    );
    // A package whose VNFD references a missing import: the diagnostic names file and line.
    let broken = format!("{}/../../tests/data/broken", env!("CARGO_MANIFEST_DIR"));
    let first = std::fs::read_dir(&broken)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .min()
        .unwrap();
    let (_, info) = h.onboard(zip_dir(&first)).await;
    assert_eq!(info["onboardingState"], "ERROR", "{}", first.display());
    let diags = info["onboardingFailureDetails"]["diagnostics"]
        .as_array()
        .unwrap();
    assert!(!diags.is_empty());
    // Upload to an onboarded/errored package state machine: a second upload to ERROR is allowed,
    // to a CREATED package without content the content endpoint is 409.
    let r = h.call(Method::POST, "/vnfpkgm/v2/vnf_packages", None).await;
    let id = r.json()["id"].as_str().unwrap().to_owned();
    h.call(
        Method::GET,
        &format!("/vnfpkgm/v2/vnf_packages/{id}/package_content"),
        None,
    )
    .await
    .problem(409);
    // upload_from_uri refuses URIs off the allow-list, with the pointer.
    let r = h
        .call(
            Method::POST,
            &format!("/vnfpkgm/v2/vnf_packages/{id}/package_content/upload_from_uri"),
            Some(json!({"addressInformation": "http://169.254.169.254/latest"})),
        )
        .await;
    assert_eq!(r.problem(400)["pointer"], "/addressInformation");
}

/// A second package with an onboarded package's vnfdId ends ERROR and DISABLED (it was left
/// ENABLED, so neither DELETE nor PATCH to DISABLED was allowed), names the conflict, and can be
/// deleted; the first package is untouched.
#[tokio::test]
async fn a_duplicate_vnfd_id_upload_ends_error_disabled_and_deletable() {
    let h = Harness::new().await;
    let (first, _) = h.onboard(zip_dir(Path::new(HELLO))).await;
    let (dup_id, dup) = h.onboard(zip_dir(Path::new(HELLO))).await;
    assert_eq!(dup["onboardingState"], "ERROR", "{dup:#}");
    assert_eq!(dup["operationalState"], "DISABLED", "{dup:#}");
    assert!(
        dup["onboardingFailureDetails"]["detail"]
            .as_str()
            .unwrap()
            .contains(&format!("already has vnfdId {HELLO_VNFD}")),
        "{dup:#}"
    );
    let r = h
        .call(
            Method::DELETE,
            &format!("/vnfpkgm/v2/vnf_packages/{dup_id}"),
            None,
        )
        .await;
    assert_eq!(
        r.status,
        StatusCode::NO_CONTENT,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    h.call(
        Method::GET,
        &format!("/vnfpkgm/v2/vnf_packages/{dup_id}"),
        None,
    )
    .await
    .problem(404);
    let kept = h
        .call(
            Method::GET,
            &format!("/vnfpkgm/v2/vnf_packages/{first}"),
            None,
        )
        .await
        .json();
    assert_eq!(kept["onboardingState"], "ONBOARDED");
    assert_eq!(kept["operationalState"], "ENABLED");
    assert_eq!(kept["vnfdId"], HELLO_VNFD);
    // Deleting the duplicate did not drop the first package's VNFD.
    h.create_instance().await;
}

#[tokio::test]
async fn instance_lifecycle_with_headers_and_schemas() {
    let h = Harness::new().await;
    h.onboard(zip_dir(Path::new(HELLO))).await;
    // Request validation: JSON pointer into the body.
    let r = h
        .call(
            Method::POST,
            "/vnflcm/v2/vnf_instances",
            Some(json!({"vnfdId": 7})),
        )
        .await;
    assert_eq!(r.problem(400)["pointer"], "/vnfdId");
    let r = h
        .raw(
            Method::POST,
            "/vnflcm/v2/vnf_instances",
            &[
                ("authorization", &format!("Bearer {}", h.token)),
                ("version", "2.0.0"),
                ("content-type", "application/json"),
            ],
            b"{not json".to_vec(),
        )
        .await;
    assert!(
        r.problem(400)["detail"]
            .as_str()
            .unwrap()
            .contains("line 1")
    );
    let r = h
        .raw(
            Method::POST,
            "/vnflcm/v2/vnf_instances",
            &[
                ("authorization", &format!("Bearer {}", h.token)),
                ("version", "2.0.0"),
                ("content-type", "text/plain"),
            ],
            b"{}".to_vec(),
        )
        .await;
    r.problem(415);

    let r = h
        .call(
            Method::POST,
            "/vnflcm/v2/vnf_instances",
            Some(json!({"vnfdId": HELLO_VNFD, "vnfInstanceName": "demo"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let created = r.json();
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(
        r.header("location")
            .unwrap()
            .ends_with(&format!("/vnflcm/v2/vnf_instances/{id}"))
    );
    assert_valid(&own_schema::<vnfm_types::VnfInstance>(), &created);

    h.call(
        Method::POST,
        "/vnflcm/v2/vnf_instances/nope/instantiate",
        Some(json!({"flavourId": "simple"})),
    )
    .await
    .problem(404);
    let r = h
        .call(
            Method::POST,
            &format!("/vnflcm/v2/vnf_instances/{id}/instantiate"),
            Some(json!({"flavourId": "nope"})),
        )
        .await;
    r.problem(422);
    let occ = h
        .task(&id, "instantiate", json!({"flavourId": "simple", "vimConnectionInfo": {"vim1": {"vimType": "TEST.NOOP.V_1"}}}))
        .await;
    assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");
    // Instantiating twice is a conflict with the instance state.
    h.call(
        Method::POST,
        &format!("/vnflcm/v2/vnf_instances/{id}/instantiate"),
        Some(json!({"flavourId": "simple"})),
    )
    .await
    .problem(409);
    h.call(
        Method::DELETE,
        &format!("/vnflcm/v2/vnf_instances/{id}"),
        None,
    )
    .await
    .problem(409);

    // ETag / If-Match on PATCH.
    let r = h
        .call(Method::GET, &format!("/vnflcm/v2/vnf_instances/{id}"), None)
        .await;
    let etag = r.header("etag").unwrap().to_owned();
    let doc = r.json();
    assert_eq!(doc["instantiationState"], "INSTANTIATED");
    assert_valid(&own_schema::<vnfm_types::VnfInstance>(), &doc);
    let auth = format!("Bearer {}", h.token);
    let patch = serde_json::to_vec(&json!({"vnfInstanceDescription": "changed"})).unwrap();
    let r = h
        .raw(
            Method::PATCH,
            &format!("/vnflcm/v2/vnf_instances/{id}"),
            &[
                ("authorization", &auth),
                ("version", "2.0.0"),
                ("content-type", "application/merge-patch+json"),
                ("if-match", "\"999\""),
            ],
            patch.clone(),
        )
        .await;
    r.problem(412);
    let r = h
        .raw(
            Method::PATCH,
            &format!("/vnflcm/v2/vnf_instances/{id}"),
            &[
                ("authorization", &auth),
                ("version", "2.0.0"),
                ("content-type", "application/merge-patch+json"),
                ("if-match", &etag),
            ],
            patch,
        )
        .await;
    assert_eq!(
        r.status,
        StatusCode::ACCEPTED,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    let occ = h.wait_op(r.header("location").unwrap()).await;
    assert_eq!(occ["operation"], "MODIFY_INFO");
    let r = h
        .call(Method::GET, &format!("/vnflcm/v2/vnf_instances/{id}"), None)
        .await;
    assert_ne!(r.header("etag").unwrap(), etag);
    assert_eq!(r.json()["vnfInstanceDescription"], "changed");

    // v1 view of the same instance, checked against the ETSI v2.6.1 schema.
    let v1 = h
        .call(Method::GET, &format!("/vnflcm/v1/vnf_instances/{id}"), None)
        .await
        .json();
    assert_valid(&etsi_schema("vnfInstance.schema.json"), &v1);
    assert!(v1["vimConnectionInfo"].is_array());
    assert!(v1["vnfPkgId"].is_string());
    assert!(
        v1["_links"]["self"]["href"]
            .as_str()
            .unwrap()
            .starts_with("http://localhost/vnflcm/v1/")
    );
    // The ETSI schema requires operationParams, which SOL003 excludes from lists by default:
    // the full representation is checked.
    let occs = h
        .call(Method::GET, "/vnflcm/v1/vnf_lcm_op_occs?all_fields", None)
        .await
        .json();
    assert_valid(&etsi_schema("VnfLcmOpOccs.schema.json"), &occs);
    let one = h
        .call(
            Method::GET,
            &format!(
                "/vnflcm/v1/vnf_lcm_op_occs/{}",
                occs[0]["id"].as_str().unwrap()
            ),
            None,
        )
        .await
        .json();
    assert_valid(&etsi_schema("VnfLcmOpOcc.schema.json"), &one);

    let occ = h
        .task(&id, "terminate", json!({"terminationType": "FORCEFUL"}))
        .await;
    assert_eq!(occ["operationState"], "COMPLETED");
    assert_valid(&own_schema::<vnfm_types::VnfLcmOpOcc>(), &occ);
    assert_eq!(
        h.call(
            Method::DELETE,
            &format!("/vnflcm/v2/vnf_instances/{id}"),
            None
        )
        .await
        .status,
        StatusCode::NO_CONTENT
    );
    h.call(Method::GET, &format!("/vnflcm/v2/vnf_instances/{id}"), None)
        .await
        .problem(404);
}

#[tokio::test]
async fn failed_temp_retry_rollback_fail() {
    let h = Harness::new().await;
    h.onboard(zip_dir(Path::new(HELLO))).await;
    let id = h.create_instance().await;
    h.flaky.fail_next(
        InfraOperation::Instantiate,
        DriverError::transient("VIM unreachable"),
    );
    let occ = h
        .task(
            &id,
            "instantiate",
            json!({"flavourId": "simple", "vimConnectionInfo": {"v": {"vimType": FLAKY}}}),
        )
        .await;
    assert_eq!(occ["operationState"], "FAILED_TEMP", "{occ:#}");
    assert!(
        occ["error"]["detail"]
            .as_str()
            .unwrap()
            .contains("VIM unreachable")
    );
    let occ_id = occ["id"].as_str().unwrap().to_owned();
    // The progress resource names the failed step, where a retry resumes.
    let progress_path = format!("/vnfm/v1/vnf_lcm_op_occs/{occ_id}/progress");
    let progress = h.call(Method::GET, &progress_path, None).await.json();
    assert_eq!(progress["phase"], "forward", "{progress:#}");
    assert_eq!(progress["currentStep"], "infra:instantiate", "{progress:#}");
    let failed_steps: Vec<&Value> = progress["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["status"] == "FAILED")
        .collect();
    assert_eq!(failed_steps.len(), 1, "{progress:#}");
    assert_eq!(failed_steps[0]["name"], "infra:instantiate");
    h.call(
        Method::GET,
        "/vnfm/v1/vnf_lcm_op_occs/no-such-occurrence/progress",
        None,
    )
    .await
    .problem(404);
    // Another operation is refused while the occurrence holds the instance.
    h.call(
        Method::POST,
        &format!("/vnflcm/v2/vnf_instances/{id}/terminate"),
        Some(json!({"terminationType": "FORCEFUL"})),
    )
    .await
    .problem(409);
    // Retry succeeds now.
    let r = h
        .call(
            Method::POST,
            &format!("/vnflcm/v2/vnf_lcm_op_occs/{occ_id}/retry"),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    let done = h.wait_op(r.header("location").unwrap()).await;
    assert_eq!(done["operationState"], "COMPLETED");
    let progress = h.call(Method::GET, &progress_path, None).await.json();
    assert!(progress.get("currentStep").is_none(), "{progress:#}");
    assert!(
        progress["steps"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["status"] == "COMPLETED"),
        "{progress:#}"
    );
    // Retry of a COMPLETED occurrence: 409.
    h.call(
        Method::POST,
        &format!("/vnflcm/v2/vnf_lcm_op_occs/{occ_id}/retry"),
        None,
    )
    .await
    .problem(409);
    // Fail: 200 with the occurrence.
    h.flaky
        .fail_next(InfraOperation::Scale, DriverError::transient("quota"));
    let failed = h
        .task(
            &id,
            "scale",
            json!({"type": "SCALE_OUT", "aspectId": "web_scale", "numberOfSteps": 1}),
        )
        .await;
    assert_eq!(failed["operationState"], "FAILED_TEMP", "{failed:#}");
    let r = h
        .call(
            Method::POST,
            &format!(
                "/vnflcm/v2/vnf_lcm_op_occs/{}/fail",
                failed["id"].as_str().unwrap()
            ),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json()["operationState"], "FAILED");
    // An unknown aspect is refused before an occurrence exists.
    let r = h
        .call(
            Method::POST,
            &format!("/vnflcm/v2/vnf_instances/{id}/scale"),
            Some(json!({"type": "SCALE_OUT", "aspectId": "nope"})),
        )
        .await;
    r.problem(422);
    // Rollback of an instantiate: instance back to NOT_INSTANTIATED.
    let id2 = h.create_instance().await;
    h.flaky
        .fail_next(InfraOperation::Instantiate, DriverError::transient("boom"));
    let occ = h
        .task(
            &id2,
            "instantiate",
            json!({"flavourId": "simple", "vimConnectionInfo": {"v": {"vimType": FLAKY}}}),
        )
        .await;
    assert_eq!(occ["operationState"], "FAILED_TEMP");
    let r = h
        .call(
            Method::POST,
            &format!(
                "/vnflcm/v2/vnf_lcm_op_occs/{}/rollback",
                occ["id"].as_str().unwrap()
            ),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    let rolled = h.wait_op(r.header("location").unwrap()).await;
    assert_eq!(rolled["operationState"], "ROLLED_BACK");
    let inst = h
        .call(
            Method::GET,
            &format!("/vnflcm/v2/vnf_instances/{id2}"),
            None,
        )
        .await
        .json();
    assert_eq!(inst["instantiationState"], "NOT_INSTANTIATED");
    // Cancel of a finished occurrence: 409; of an unknown one: 404.
    h.call(
        Method::POST,
        &format!(
            "/vnflcm/v2/vnf_lcm_op_occs/{}/cancel",
            occ["id"].as_str().unwrap()
        ),
        Some(json!({"cancelMode": "GRACEFUL"})),
    )
    .await
    .problem(409);
    h.call(
        Method::POST,
        "/vnflcm/v2/vnf_lcm_op_occs/nope/cancel",
        Some(json!({"cancelMode": "GRACEFUL"})),
    )
    .await
    .problem(404);
    // The resource answers before the body is read: the same with a body that is not a
    // CancelMode (the bare word an ETSI suite sends) is still 409 / 404, not 400.
    h.call(
        Method::POST,
        &format!(
            "/vnflcm/v2/vnf_lcm_op_occs/{}/cancel",
            occ["id"].as_str().unwrap()
        ),
        Some(json!("GRACEFUL")),
    )
    .await
    .problem(409);
    h.call(
        Method::POST,
        "/vnflcm/v2/vnf_lcm_op_occs/nope/cancel",
        Some(json!("GRACEFUL")),
    )
    .await
    .problem(404);
}

#[tokio::test]
async fn lists_filter_select_and_page() {
    let h = Harness::new().await;
    h.onboard(zip_dir(Path::new(HELLO))).await;
    let mut ids = Vec::new();
    for i in 0..130 {
        let name = if i % 2 == 0 { "even" } else { "odd" };
        let r = h
            .call(
                Method::POST,
                "/vnflcm/v2/vnf_instances",
                Some(json!({"vnfdId": HELLO_VNFD, "vnfInstanceName": name})),
            )
            .await;
        ids.push(r.json()["id"].as_str().unwrap().to_owned());
    }
    ids.sort();
    // Page 1: 100 items and a Link to the next page.
    let r = h.call(Method::GET, "/vnflcm/v2/vnf_instances", None).await;
    let page1 = r.json();
    assert_eq!(page1.as_array().unwrap().len(), 100);
    let link = r.header("link").unwrap().to_owned();
    assert!(link.ends_with("rel=\"next\""), "{link}");
    let next = &link[link.find('<').unwrap() + 1..link.find('>').unwrap()];
    assert!(
        next.starts_with("/vnflcm/v2/vnf_instances?nextpage_opaque_marker="),
        "{next}"
    );
    let r = h.call(Method::GET, next, None).await;
    assert!(r.header("link").is_none());
    let page2 = r.json();
    let got: Vec<String> = page1
        .as_array()
        .unwrap()
        .iter()
        .chain(page2.as_array().unwrap())
        .map(|d| d["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(got, ids);
    // Default exclusions on lists, not on single reads.
    assert!(page1[0].get("_links").is_some());
    // Filter: pushed down and evaluated; the Link keeps the filter.
    let r = h
        .call(
            Method::GET,
            "/vnflcm/v2/vnf_instances?filter=(eq,vnfInstanceName,odd)",
            None,
        )
        .await;
    let odd = r.json();
    assert_eq!(odd.as_array().unwrap().len(), 65);
    assert!(
        odd.as_array()
            .unwrap()
            .iter()
            .all(|d| d["vnfInstanceName"] == "odd")
    );
    // A read after a write sees it (nothing in the API serves an older page).
    h.call(
        Method::POST,
        "/vnflcm/v2/vnf_instances",
        Some(json!({"vnfdId": HELLO_VNFD, "vnfInstanceName": "odd"})),
    )
    .await;
    let again = h
        .call(
            Method::GET,
            "/vnflcm/v2/vnf_instances?filter=(eq,vnfInstanceName,odd)",
            None,
        )
        .await
        .json();
    assert_eq!(again.as_array().unwrap().len(), 66);
    // `cont` on the name is pushed down as a substring condition, with the same answer as the
    // evaluator: the names are "odd" and "even", and only "odd" contains "dd".
    let r = h
        .call(
            Method::GET,
            "/vnflcm/v2/vnf_instances?filter=(cont,vnfInstanceName,dd)",
            None,
        )
        .await;
    assert_eq!(r.json().as_array().unwrap().len(), 66);
    let r = h
        .call(
            Method::GET,
            "/vnflcm/v2/vnf_instances?filter=(cont,vnfInstanceName,v)",
            None,
        )
        .await;
    let with_v = r.json();
    assert_eq!(with_v.as_array().unwrap().len(), 65);
    assert!(
        with_v
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["vnfInstanceName"] == "even")
    );
    let r = h.call(Method::GET, "/vnflcm/v2/vnf_instances?filter=(neq,vnfInstanceName,odd);(cont,vnfProductName,ello)&fields=vnfInstanceName", None).await;
    let even = r.json();
    assert_eq!(even.as_array().unwrap().len(), 65);
    // A marker does not work with another filter.
    let marker = next.split("nextpage_opaque_marker=").nth(1).unwrap();
    h.call(Method::GET, &format!("/vnflcm/v2/vnf_instances?filter=(eq,vnfInstanceName,odd)&nextpage_opaque_marker={marker}"), None).await.problem(400);
    // Bad filters and selectors: 400 naming the problem.
    let p = h
        .call(
            Method::GET,
            "/vnflcm/v2/vnf_instances?filter=(eq,noSuchAttribute,1)",
            None,
        )
        .await
        .problem(400);
    assert!(p["detail"].as_str().unwrap().contains("noSuchAttribute"));
    h.call(
        Method::GET,
        "/vnflcm/v2/vnf_instances?filter=(zz,id,1)",
        None,
    )
    .await
    .problem(400);
    h.call(
        Method::GET,
        "/vnflcm/v2/vnf_instances?all_fields&exclude_default",
        None,
    )
    .await
    .problem(400);
    h.call(Method::GET, "/vnflcm/v2/vnf_instances?pagesize=3", None)
        .await
        .problem(400);
    // v1 list against the ETSI schema.
    let v1 = h
        .call(
            Method::GET,
            "/vnflcm/v1/vnf_instances?filter=(eq,vnfInstanceName,odd)",
            None,
        )
        .await
        .json();
    assert_valid(&etsi_schema("vnfInstances.schema.json"), &v1);
}

#[tokio::test]
async fn subscriptions_and_duplicates() {
    let h = Harness::new().await;
    let body = json!({"callbackUri": "http://127.0.0.1:9/cb", "filter": {"notificationTypes": ["VnfLcmOperationOccurrenceNotification"]}});
    let r = h
        .call(Method::POST, "/vnflcm/v2/subscriptions", Some(body.clone()))
        .await;
    assert_eq!(
        r.status,
        StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    let sub = r.json();
    let id = sub["id"].as_str().unwrap().to_owned();
    assert!(
        r.header("location")
            .unwrap()
            .ends_with(&format!("/vnflcm/v2/subscriptions/{id}"))
    );
    let r = h
        .call(Method::POST, "/vnflcm/v2/subscriptions", Some(body))
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert!(r.header("location").unwrap().ends_with(&id));
    let list = h
        .call(Method::GET, "/vnflcm/v1/subscriptions", None)
        .await
        .json();
    assert_valid(&etsi_schema("subscriptions.schema.json"), &list);
    assert!(
        list[0]["_links"]["self"]["href"]
            .as_str()
            .unwrap()
            .contains("/vnflcm/v1/")
    );
    let r = h
        .call(
            Method::POST,
            "/vnflcm/v2/subscriptions",
            Some(json!({"callbackUri": 5})),
        )
        .await;
    assert_eq!(r.problem(400)["pointer"], "/callbackUri");
    assert_eq!(
        h.call(
            Method::DELETE,
            &format!("/vnflcm/v2/subscriptions/{id}"),
            None
        )
        .await
        .status,
        StatusCode::NO_CONTENT
    );
    h.call(Method::GET, &format!("/vnflcm/v2/subscriptions/{id}"), None)
        .await
        .problem(404);
}

#[tokio::test]
async fn vim_secrets_are_write_only() {
    let h = Harness::new().await;
    const SECRET: &str = "k8s-token-that-must-not-leak-1234";
    let r = h
        .call(
            Method::POST,
            "/vnfm/v1/vims",
            Some(json!({
                "name": "edge", "vimType": "ETSINFV.KUBERNETES.V_1",
                "interfaceInfo": {"endpoint": "https://10.0.0.1:6443"},
                "accessInfo": {"bearer_token": SECRET}
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
    for reply in [
        r,
        h.call(Method::GET, &format!("/vnfm/v1/vims/{id}"), None)
            .await,
        h.call(Method::GET, "/vnfm/v1/vims", None).await,
    ] {
        let text = String::from_utf8_lossy(&reply.body).to_string();
        assert!(!text.contains(SECRET), "{text}");
        assert!(text.contains("***"), "{text}");
    }
    let auth = format!("Bearer {}", h.token);
    let patch = serde_json::to_vec(&json!({"name": "edge-2"})).unwrap();
    let r = h
        .raw(
            Method::PATCH,
            &format!("/vnfm/v1/vims/{id}"),
            &[
                ("authorization", &auth),
                ("content-type", "application/merge-patch+json"),
                ("if-match", "\"77\""),
            ],
            patch.clone(),
        )
        .await;
    r.problem(412);
    let r = h
        .raw(
            Method::PATCH,
            &format!("/vnfm/v1/vims/{id}"),
            &[
                ("authorization", &auth),
                ("content-type", "application/merge-patch+json"),
                ("if-match", &etag),
            ],
            patch,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json()["name"], "edge-2");
    let r = h
        .call(
            Method::POST,
            "/vnfm/v1/vims",
            Some(json!({"name": "bad", "vimType": "ETSINFV.KUBERNETES.V_1"})),
        )
        .await;
    assert!(r.status.is_client_error());
    assert_eq!(
        h.call(Method::DELETE, &format!("/vnfm/v1/vims/{id}"), None)
            .await
            .status,
        StatusCode::NO_CONTENT
    );
}

/// A VNF instance whose lifecycle hook registered a VIM another instance uses: its
/// TERMINATE is a 409 naming the dependents (in `detail` and in `dependents`) and creates no
/// occurrence; the VIM view shows creator and users; forcing is accepted and recorded.
#[tokio::test]
async fn terminating_a_vim_creator_with_dependents_is_a_conflict_naming_them() {
    let h = Harness::new().await;
    h.onboard(zip_dir(Path::new(HELLO))).await;
    let noop = json!({"vim1": {"vimType": "TEST.NOOP.V_1"}});
    let a = h.create_instance().await;
    let occ = h
        .task(
            &a,
            "instantiate",
            json!({"flavourId": "simple", "vimConnectionInfo": noop}),
        )
        .await;
    assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");
    // What a hook of A returning a VIM to register leaves in the registry.
    let registry = vnfm_lcm::VimRegistry::new(
        h.state.store().clone(),
        h.state.keyring().clone(),
        all_vim_kinds(),
    );
    let cluster: vnfm_types::VimConnectionInfo = serde_json::from_value(json!({
        "vimType": "ETSINFV.KUBERNETES.V_1",
        "interfaceInfo": {"endpoint": "https://10.0.0.9:6443"},
        "accessInfo": {"bearer_token": "cluster-token"}
    }))
    .unwrap();
    let vim = registry
        .create(
            "cluster-of-a",
            &cluster,
            Some(&vnfm_types::VnfInstanceId::new(&a)),
        )
        .await
        .unwrap()
        .id;
    let r = h
        .call(
            Method::POST,
            "/vnflcm/v2/vnf_instances",
            Some(json!({"vnfdId": HELLO_VNFD, "vnfInstanceName": "cnf-b"})),
        )
        .await;
    let b = r.json()["id"].as_str().unwrap().to_owned();
    let occ = h
        .task(
            &b,
            "instantiate",
            json!({"flavourId": "simple", "vimConnectionInfo": {
                "vim1": {"vimType": "TEST.NOOP.V_1"},
                "k8s": {"vimId": vim.as_str(), "vimType": "ETSINFV.KUBERNETES.V_1"}}}),
        )
        .await;
    assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");

    let view = h
        .call(Method::GET, &format!("/vnfm/v1/vims/{vim}"), None)
        .await
        .json();
    assert_eq!(view["createdByInstance"], a.as_str());
    assert_eq!(view["usedByInstances"], json!([b.as_str()]));
    let list = h.call(Method::GET, "/vnfm/v1/vims", None).await.json();
    assert_eq!(list[0]["usedByInstances"], json!([b.as_str()]));

    let occs_path = format!("/vnflcm/v2/vnf_lcm_op_occs?filter=(eq,vnfInstanceId,{a})");
    let before = h.call(Method::GET, &occs_path, None).await.json();
    let p = h
        .call(
            Method::POST,
            &format!("/vnflcm/v2/vnf_instances/{a}/terminate"),
            Some(json!({"terminationType": "FORCEFUL"})),
        )
        .await
        .problem(409);
    assert_eq!(
        p["dependents"],
        json!([{"vnfInstanceId": b.as_str(), "vnfInstanceName": "cnf-b", "vimId": vim.as_str()}])
    );
    let detail = p["detail"].as_str().unwrap();
    for needle in [
        a.as_str(),
        b.as_str(),
        "\"cnf-b\"",
        vim.as_str(),
        "terminate those instances",
        "additionalParams.forceWithDependents",
    ] {
        assert!(detail.contains(needle), "{needle} missing from: {detail}");
    }
    assert_eq!(
        h.call(Method::GET, &occs_path, None).await.json(),
        before,
        "no occurrence was created"
    );
    let p = h
        .call(
            Method::POST,
            &format!("/vnflcm/v2/vnf_instances/{a}/terminate"),
            Some(json!({"terminationType": "FORCEFUL",
                        "additionalParams": {"forceWithDependents": 1}})),
        )
        .await
        .problem(400);
    assert_eq!(p["pointer"], "/additionalParams/forceWithDependents");

    let occ = h
        .task(
            &a,
            "terminate",
            json!({"terminationType": "FORCEFUL", "additionalParams": {"forceWithDependents": true}}),
        )
        .await;
    assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");
    let warning = occ["warnings"][0].as_str().unwrap_or("");
    assert!(
        warning.contains(b.as_str()) && warning.contains(vim.as_str()),
        "{occ:#}"
    );
    // A is gone but B still runs on the VIM: A's identifier stays until B lets go of it.
    let p = h
        .call(
            Method::DELETE,
            &format!("/vnflcm/v2/vnf_instances/{a}"),
            None,
        )
        .await
        .problem(409);
    assert_eq!(p["dependents"][0]["vnfInstanceId"], b.as_str());
    // Nor can a new instance start using a VIM whose creator is not instantiated.
    let c = h.create_instance().await;
    let p = h
        .call(
            Method::POST,
            &format!("/vnflcm/v2/vnf_instances/{c}/instantiate"),
            Some(json!({"flavourId": "simple", "vimConnectionInfo": {
                "vim1": {"vimType": "TEST.NOOP.V_1"},
                "k8s": {"vimId": vim.as_str(), "vimType": "ETSINFV.KUBERNETES.V_1"}}})),
        )
        .await
        .problem(409);
    assert_eq!(p["pointer"], "/vimConnectionInfo/k8s");
}

#[tokio::test]
async fn body_limits_metrics_and_openapi() {
    let h = Harness::with(|o| o.max_json_body = 1024).await;
    let big = json!({"vnfdId": "x".repeat(4096)});
    h.call(Method::POST, "/vnflcm/v2/vnf_instances", Some(big))
        .await
        .problem(413);
    let text = String::from_utf8(h.call(Method::GET, "/metrics", None).await.body).unwrap();
    assert!(text.contains("vnfm_http_requests_total{method=\"POST\",route=\"/vnflcm/v2/vnf_instances\",status=\"413\"} 1"), "{text}");
    assert!(text.contains("# TYPE vnfm_op_occs gauge"));
    let doc = h.call(Method::GET, "/openapi.json", None).await.json();
    assert_eq!(
        doc["openapi"].as_str().map(|v| v.starts_with("3.1")),
        Some(true)
    );
    assert!(
        doc["paths"]["/vnflcm/v2/vnf_instances/{vnfInstanceId}/instantiate"]["post"].is_object()
    );
    assert!(doc["components"]["schemas"]["VnfInstance"].is_object());
}

/// `docs/openapi.json` is the served document (regenerate with `UPDATE_OPENAPI=1`).
#[test]
fn checked_in_openapi_document_matches() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/openapi.json");
    let served = serde_json::to_string_pretty(vnfm_api::openapi::document()).unwrap() + "\n";
    if std::env::var_os("UPDATE_OPENAPI").is_some() {
        std::fs::write(path, &served).unwrap();
    }
    let checked_in = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        checked_in == served,
        "docs/openapi.json differs from the served document: run UPDATE_OPENAPI=1 cargo test -p vnfm-api --test router checked_in_openapi"
    );
}

#[tokio::test]
async fn upload_from_an_allow_listed_uri() {
    let content = zip_dir(Path::new(HELLO));
    let private = content.clone();
    let app = axum::Router::new()
        .route(
            "/pkg.zip",
            axum::routing::get(move || {
                let content = content.clone();
                async move { content }
            }),
        )
        // A redirect is not followed: the allow-list saw only the URI asked for.
        .route(
            "/moved.zip",
            axum::routing::get(|| async {
                (
                    StatusCode::FOUND,
                    [(axum::http::header::LOCATION, "http://127.0.0.2:1/pkg.zip")],
                )
            }),
        )
        // HTTP Basic `u` / `s3cret-pw` (base64 `dTpzM2NyZXQtcHc=`).
        .route(
            "/private.zip",
            axum::routing::get(move |headers: axum::http::HeaderMap| {
                let private = private.clone();
                async move {
                    let auth = headers.get("authorization").and_then(|v| v.to_str().ok());
                    if auth == Some("Basic dTpzM2NyZXQtcHc=") {
                        Ok(private)
                    } else {
                        Err(StatusCode::UNAUTHORIZED)
                    }
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let allowed = format!("http://{addr}/");
    let h = Harness::with(|o| o.upload_allow_list = vec![allowed.clone()]).await;
    let poll = |id: String| {
        let h = &h;
        async move {
            for _ in 0..300 {
                let info = h
                    .call(
                        Method::GET,
                        &format!("/vnfpkgm/v2/vnf_packages/{id}?all_fields"),
                        None,
                    )
                    .await
                    .json();
                if !["CREATED", "PROCESSING"].contains(&info["onboardingState"].as_str().unwrap()) {
                    return info;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            panic!("package {id} was never onboarded");
        }
    };
    for (uri, password, expected, status) in [
        (format!("{allowed}missing.zip"), None, "ERROR", "404"),
        (format!("{allowed}moved.zip"), None, "ERROR", "302"),
        (
            format!("{allowed}private.zip"),
            Some("wrong-pw"),
            "ERROR",
            "401",
        ),
        (
            format!("{allowed}private.zip"),
            Some("s3cret-pw"),
            "ONBOARDED",
            "",
        ),
        (format!("{allowed}pkg.zip"), None, "ONBOARDED", ""),
    ] {
        let r = h.call(Method::POST, "/vnfpkgm/v2/vnf_packages", None).await;
        let id = r.json()["id"].as_str().unwrap().to_owned();
        let mut body = json!({"addressInformation": uri});
        if let Some(password) = password {
            body["userName"] = json!("u");
            body["password"] = json!(password);
        }
        let r = h
            .call(
                Method::POST,
                &format!("/vnfpkgm/v2/vnf_packages/{id}/package_content/upload_from_uri"),
                Some(body),
            )
            .await;
        assert_eq!(
            r.status,
            StatusCode::ACCEPTED,
            "{}",
            String::from_utf8_lossy(&r.body)
        );
        let info = poll(id).await;
        assert_eq!(info["onboardingState"], expected, "{info:#}");
        if expected == "ERROR" {
            let detail = info["onboardingFailureDetails"]["detail"].as_str().unwrap();
            assert!(detail.contains(status), "{uri}: {detail}");
            assert!(
                !info.to_string().contains("-pw"),
                "a password shows: {info}"
            );
        } else {
            assert_eq!(info["vnfdId"], HELLO_VNFD);
            // Out of the way of the next upload of the same VNFD.
            let pkg = format!("/vnfpkgm/v2/vnf_packages/{}", info["id"].as_str().unwrap());
            let r = h
                .call(
                    Method::PATCH,
                    &pkg,
                    Some(json!({"operationalState": "DISABLED"})),
                )
                .await;
            assert_eq!(
                r.status,
                StatusCode::OK,
                "{}",
                String::from_utf8_lossy(&r.body)
            );
            let r = h.call(Method::DELETE, &pkg, None).await;
            assert_eq!(r.status, StatusCode::NO_CONTENT);
        }
    }
}

/// A VNF created from a package the NFVO holds, and operations granted (or not) by a SOL003
/// NFVO on loopback.
#[tokio::test]
async fn packages_and_grants_from_a_remote_nfvo() {
    use std::sync::Mutex;
    use vnfm::lcm::{NfvoAuth, NfvoTimings, Sol003Nfvo};
    #[derive(Default)]
    struct Fake {
        grants: Mutex<Vec<Value>>,
        reject: Mutex<bool>,
    }
    let fake = Arc::new(Fake::default());
    let content = zip_dir(Path::new(HELLO));
    let app = axum::Router::new()
        .route(
            "/grant/v1/grants",
            axum::routing::post(
                |axum::extract::State(f): axum::extract::State<Arc<Fake>>,
                 axum::Json(req): axum::Json<Value>| async move {
                    f.grants.lock().unwrap().push(req.clone());
                    if *f.reject.lock().unwrap() {
                        return (
                            StatusCode::FORBIDDEN,
                            axum::Json(
                                json!({"status": 403, "detail": "site frozen for maintenance"}),
                            ),
                        );
                    }
                    (
                        StatusCode::CREATED,
                        axum::Json(json!({"id": "g-1", "vnfInstanceId": req["vnfInstanceId"],
                                          "vnfLcmOpOccId": req["vnfLcmOpOccId"]})),
                    )
                },
            ),
        )
        .route(
            "/vnfpkgm/v2/onboarded_vnf_packages/{vnfd}/package_content",
            axum::routing::get(move || {
                let content = content.clone();
                async move { content }
            }),
        )
        .with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let nfvo = Sol003Nfvo::new(
        format!("http://{addr}"),
        NfvoAuth::None,
        None,
        NfvoTimings::default(),
    )
    .unwrap();
    let h = Harness::with_services(|b| b.nfvo(Arc::new(nfvo)), |_| {}).await;
    // Not onboarded here: fetched from the NFVO on first use.
    let id = h.create_instance().await;
    let list = h
        .call(Method::GET, "/vnfpkgm/v2/vnf_packages", None)
        .await
        .json();
    assert_eq!(list[0]["vnfdId"], HELLO_VNFD);
    assert_eq!(list[0]["onboardingState"], "ONBOARDED");
    let occ = h
        .task(&id, "instantiate", json!({"flavourId": "simple", "vimConnectionInfo": {"v": {"vimType": "TEST.NOOP.V_1"}}}))
        .await;
    assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");
    {
        let grants = fake.grants.lock().unwrap();
        assert_eq!(grants.len(), 1);
        assert_eq!(grants[0]["operation"], "INSTANTIATE");
        assert_eq!(grants[0]["vnfInstanceId"], id.as_str());
        assert!(!grants[0]["addResources"].as_array().unwrap().is_empty());
    }
    *fake.reject.lock().unwrap() = true;
    let occ = h
        .task(&id, "terminate", json!({"terminationType": "FORCEFUL"}))
        .await;
    assert_eq!(occ["operationState"], "ROLLED_BACK", "{occ:#}");
    assert!(
        occ["error"]["detail"]
            .as_str()
            .unwrap()
            .contains("site frozen"),
        "{occ:#}"
    );
    let inst = h
        .call(Method::GET, &format!("/vnflcm/v2/vnf_instances/{id}"), None)
        .await
        .json();
    assert_eq!(inst["instantiationState"], "INSTANTIATED");
}

/// The NFVO connection given once is kept in the store with its secret sealed, used by later
/// starts on the same data without flags, and forgotten on request.
#[tokio::test]
async fn the_nfvo_connection_is_kept_sealed_for_later_starts() {
    use std::sync::Mutex;
    use vnfm::lcm::NfvoSetting;
    use vnfm::lcm::types::SecretString;
    use vnfm::lcm::{NfvoAuth, NfvoSettings};
    const NFVO_SECRET: &str = "nfvo-Pa55-w0rd";
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let app = axum::Router::new()
        .route(
            "/grant/v1/grants",
            axum::routing::post(
                |axum::extract::State(seen): axum::extract::State<Arc<Mutex<Vec<String>>>>,
                 headers: axum::http::HeaderMap,
                 axum::Json(req): axum::Json<Value>| async move {
                    let auth = headers
                        .get("authorization")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("")
                        .to_owned();
                    seen.lock().unwrap().push(auth);
                    (
                        StatusCode::CREATED,
                        axum::Json(json!({"id": "g-1", "vnfInstanceId": req["vnfInstanceId"],
                                          "vnfLcmOpOccId": req["vnfLcmOpOccId"]})),
                    )
                },
            ),
        )
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let shared = tempfile::tempdir().unwrap();
    let data = shared.path().join("data");
    let settings = NfvoSettings {
        url: format!("http://{addr}"),
        auth: NfvoAuth::Basic {
            user: "vnfm".into(),
            password: SecretString::new(NFVO_SECRET),
        },
        ca_pem: None,
    };
    let instantiate =
        json!({"flavourId": "simple", "vimConnectionInfo": {"v": {"vimType": "TEST.NOOP.V_1"}}});
    let expected_auth = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("vnfm:{NFVO_SECRET}"))
    );
    {
        let d = data.clone();
        let h = Harness::with_services(
            |b| b.nfvo_setting(NfvoSetting::Set(settings)),
            move |o| o.data_dir = d,
        )
        .await;
        h.onboard(zip_dir(Path::new(HELLO))).await;
        let id = h.create_instance().await;
        let occ = h.task(&id, "instantiate", instantiate.clone()).await;
        assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");
    }
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        std::slice::from_ref(&expected_auth)
    );
    // At rest the secret is sealed: no file of the data directory holds it in clear.
    for entry in std::fs::read_dir(&data).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            let bytes = std::fs::read(&path).unwrap();
            assert!(
                !bytes
                    .windows(NFVO_SECRET.len())
                    .any(|w| w == NFVO_SECRET.as_bytes()),
                "{} holds the NFVO secret in clear",
                path.display()
            );
        }
    }
    {
        // A later start without NFVO options uses the stored connection.
        let d = data.clone();
        let h = Harness::with(move |o| o.data_dir = d).await;
        let id = h.create_instance().await;
        let occ = h.task(&id, "instantiate", instantiate.clone()).await;
        assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");
    }
    assert_eq!(
        *seen.lock().unwrap(),
        [expected_auth.clone(), expected_auth]
    );
    {
        // Forgotten: the built-in NFVO grants, the remote one is not asked.
        let d = data.clone();
        let h = Harness::with_services(
            |b| b.nfvo_setting(NfvoSetting::Clear),
            move |o| o.data_dir = d,
        )
        .await;
        let id = h.create_instance().await;
        let occ = h.task(&id, "instantiate", instantiate).await;
        assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");
    }
    assert_eq!(seen.lock().unwrap().len(), 2);
}

/// SOL003 v2.6.1 (clause 4.4.1.12) names the VNFD reference of `ExtManagedVirtualLinkData`
/// `virtualLinkDescId`; the v1 API must read it (the ETSI suite's instantiate request uses it).
#[tokio::test]
async fn v1_instantiate_reads_the_v261_ext_managed_virtual_link_name() {
    let h = Harness::new().await;
    h.onboard(zip_dir(Path::new(HELLO))).await;
    let id = h.create_instance().await;
    let r = h
        .call(
            Method::POST,
            &format!("/vnflcm/v1/vnf_instances/{id}/instantiate"),
            Some(json!({
                "flavourId": "simple",
                "vimConnectionInfo": [{"id": "vim1", "vimType": "TEST.NOOP.V_1"}],
                "extManagedVirtualLinks": [{
                    "id": "mgd1",
                    "virtualLinkDescId": "internal_net",
                    "vimConnectionId": "vim1",
                    "resourceId": "net-0001"
                }]
            })),
        )
        .await;
    assert_eq!(
        r.status,
        StatusCode::ACCEPTED,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    let occ = h.wait_op(r.header("location").unwrap()).await;
    assert_eq!(occ["operationState"], "COMPLETED", "{occ}");
    // The request was read into the v3.3.1 model under the v3.3.1 name.
    let v2 = h
        .call(
            Method::GET,
            &format!("/vnflcm/v2/vnf_lcm_op_occs/{}", occ["id"].as_str().unwrap()),
            None,
        )
        .await
        .json();
    let managed = &v2["operationParams"]["extManagedVirtualLinks"][0];
    assert_eq!(managed["vnfVirtualLinkDescId"], "internal_net", "{v2:#}");
    assert_eq!(managed["resourceId"], "net-0001", "{v2:#}");
    assert!(managed.get("virtualLinkDescId").is_none(), "{v2:#}");
}

/// `TEST.NOOP.V_1` takes faults from `additionalParams.testVim`: the first `failures` steps
/// fail (FAILED_TEMP, and a retry then succeeds), `rollbackFailures` makes the rollback fail,
/// `delaySeconds` keeps the occurrence PROCESSING until it is cancelled.
#[tokio::test]
async fn test_vim_faults_come_from_additional_params() {
    let h = Harness::new().await;
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
    assert_eq!(occ["operationState"], "COMPLETED");
    let scale = |faults: Value| json!({"type": "SCALE_OUT", "aspectId": "web_scale", "additionalParams": {"testVim": faults}});

    // One failure: FAILED_TEMP, then the retry completes.
    let occ = h.task(&id, "scale", scale(json!({"failures": 1}))).await;
    assert_eq!(occ["operationState"], "FAILED_TEMP", "{occ}");
    let op = occ["id"].as_str().unwrap().to_owned();
    let r = h
        .call(
            Method::POST,
            &format!("/vnflcm/v2/vnf_lcm_op_occs/{op}/retry"),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    let occ = h.wait_op(r.header("location").unwrap()).await;
    assert_eq!(occ["operationState"], "COMPLETED", "{occ}");

    // A failing rollback leaves the occurrence FAILED_TEMP again.
    let occ = h
        .task(
            &id,
            "scale",
            scale(json!({"failures": 1, "rollbackFailures": 1})),
        )
        .await;
    assert_eq!(occ["operationState"], "FAILED_TEMP");
    let op = occ["id"].as_str().unwrap().to_owned();
    let r = h
        .call(
            Method::POST,
            &format!("/vnflcm/v2/vnf_lcm_op_occs/{op}/rollback"),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    let occ = h.wait_op(r.header("location").unwrap()).await;
    assert_eq!(occ["operationState"], "FAILED_TEMP", "{occ}");
    let occ = h
        .call(
            Method::POST,
            &format!("/vnflcm/v2/vnf_lcm_op_occs/{op}/fail"),
            None,
        )
        .await
        .json();
    assert_eq!(occ["operationState"], "FAILED");

    // A delay keeps it PROCESSING; cancelling ends it in FAILED_TEMP.
    let r = h
        .call(
            Method::POST,
            &format!("/vnflcm/v2/vnf_instances/{id}/scale"),
            Some(scale(json!({"delaySeconds": 600}))),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    let location = r.header("location").unwrap().to_owned();
    let path = &location[location.find("/vnflcm").unwrap()..];
    let mut state = String::new();
    for _ in 0..500 {
        state = h.call(Method::GET, path, None).await.json()["operationState"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        if state == "PROCESSING" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(state, "PROCESSING");
    let r = h
        .call(
            Method::POST,
            &format!("{path}/cancel"),
            Some(json!({"cancelMode": "FORCEFUL"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    let occ = h.wait_op(&location).await;
    assert_eq!(occ["operationState"], "FAILED_TEMP", "{occ}");
}

/// Regression (issue 25, item 11): an injected test-VIM failure was recorded as permanent
/// (`retryable: false`) although the retry then completed. Each failure says it is
/// retryable and how many attempts still fail; the retries bear that out.
#[tokio::test]
async fn injected_failure_says_retryable_false_and_then_retries_fine() {
    let h = Harness::new().await;
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
    assert_eq!(occ["operationState"], "COMPLETED");
    let occ = h
        .task(
            &id,
            "scale",
            json!({"type": "SCALE_OUT", "aspectId": "web_scale",
                   "additionalParams": {"testVim": {"failures": 2}}}),
        )
        .await;
    assert_eq!(occ["operationState"], "FAILED_TEMP", "{occ}");
    let op = occ["id"].as_str().unwrap().to_owned();
    let error = &occ["error"];
    assert_eq!(error["retryable"], true, "{error:#}");
    assert_eq!(error["errorKind"], "transient", "{error:#}");
    let detail = error["detail"].as_str().unwrap();
    assert!(
        detail.contains("failure 1 of 2") && detail.contains("1 more attempt fails"),
        "{detail}"
    );
    async fn retry(h: &Harness, op: &str) -> Value {
        let r = h
            .call(
                Method::POST,
                &format!("/vnflcm/v2/vnf_lcm_op_occs/{op}/retry"),
                None,
            )
            .await;
        assert_eq!(r.status, StatusCode::ACCEPTED);
        h.wait_op(r.header("location").unwrap()).await
    }
    let occ = retry(&h, &op).await;
    assert_eq!(occ["operationState"], "FAILED_TEMP", "{occ}");
    assert_eq!(occ["error"]["retryable"], true, "{occ:#}");
    let detail = occ["error"]["detail"].as_str().unwrap();
    assert!(
        detail.contains("failure 2 of 2") && detail.contains("the next attempt succeeds"),
        "{detail}"
    );
    let occ = retry(&h, &op).await;
    assert_eq!(occ["operationState"], "COMPLETED", "{occ}");
}

/// Regression (issue 25, item 11): `Location` was an absolute URI while the resource's
/// `_links.self.href` was relative. Every `href` of `_links` (instances, occurrences,
/// packages, subscriptions, single and listed, v2 and v1) is now absolute, built from the
/// request's `Host` as `Location` is.
#[tokio::test]
async fn links_self_href_relative_while_location_absolute() {
    let h = Harness::new().await;
    h.onboard(zip_dir(Path::new(HELLO))).await;
    let auth = format!("Bearer {}", h.token);
    let get = |path: String| {
        let auth = auth.clone();
        let h = &h;
        async move {
            let mut headers = vec![
                ("authorization", auth.as_str()),
                ("host", "vnfm.example:9890"),
            ];
            if path.contains("/v2") {
                headers.push(("version", "2.0.0"));
            }
            let r = h.raw(Method::GET, &path, &headers, Vec::new()).await;
            assert_eq!(r.status, StatusCode::OK, "{path}");
            r.json()
        }
    };
    let body = serde_json::to_vec(&json!({"vnfdId": HELLO_VNFD})).unwrap();
    let created = h
        .raw(
            Method::POST,
            "/vnflcm/v2/vnf_instances",
            &[
                ("authorization", auth.as_str()),
                ("host", "vnfm.example:9890"),
                ("version", "2.0.0"),
                ("content-type", "application/json"),
            ],
            body,
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let location = created.header("location").unwrap().to_owned();
    let instance = created.json();
    assert_eq!(instance["_links"]["self"]["href"], location.as_str());
    assert!(location.starts_with("http://vnfm.example:9890/vnflcm/v2/vnf_instances/"));
    let id = instance["id"].as_str().unwrap().to_owned();
    let occ = h
        .task(
            &id,
            "instantiate",
            json!({"flavourId": "simple",
                   "vimConnectionInfo": {"vim1": {"vimType": "TEST.NOOP.V_1"}}}),
        )
        .await;
    let sub = h
        .call(
            Method::POST,
            "/vnfpkgm/v2/subscriptions",
            Some(json!({"callbackUri": "http://127.0.0.1:9/pkg"})),
        )
        .await;
    assert_eq!(
        sub.status,
        StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&sub.body)
    );
    let lcm_sub = h
        .call(
            Method::POST,
            "/vnflcm/v2/subscriptions",
            Some(json!({"callbackUri": "http://127.0.0.1:9/lcm"})),
        )
        .await;
    assert_eq!(lcm_sub.status, StatusCode::CREATED);
    let occ_id = occ["id"].as_str().unwrap();
    let mut docs = Vec::new();
    for path in [
        format!("/vnflcm/v2/vnf_instances/{id}"),
        format!("/vnflcm/v1/vnf_instances/{id}"),
        format!("/vnflcm/v2/vnf_lcm_op_occs/{occ_id}"),
    ] {
        docs.push(get(path).await);
    }
    for list in [
        "/vnflcm/v2/vnf_instances",
        "/vnflcm/v2/vnf_lcm_op_occs",
        "/vnfpkgm/v2/vnf_packages",
        "/vnfpkgm/v1/vnf_packages",
        "/vnfpkgm/v2/subscriptions",
        "/vnflcm/v2/subscriptions",
        "/vnflcm/v1/subscriptions",
    ] {
        let listed = get(list.to_owned()).await;
        assert!(!listed.as_array().unwrap().is_empty(), "{list}");
        docs.extend(listed.as_array().unwrap().iter().cloned());
    }
    let mut hrefs = 0;
    for doc in &docs {
        for (name, link) in doc["_links"].as_object().unwrap() {
            let href = link["href"].as_str().unwrap();
            assert!(
                href.starts_with("http://vnfm.example:9890/"),
                "{name}: {href} in {doc:#}"
            );
            hrefs += 1;
        }
    }
    assert!(hrefs > docs.len(), "{hrefs} hrefs");
    // Free-form members are not rewritten.
    let modified = h
        .call(
            Method::PATCH,
            &format!("/vnflcm/v2/vnf_instances/{id}"),
            Some(json!({"metadata": {"_links": {"self": {"href": "/mine"}}}})),
        )
        .await;
    assert_eq!(modified.status, StatusCode::ACCEPTED);
    let occ = h.wait_op(modified.header("location").unwrap()).await;
    assert_eq!(occ["operationState"], "COMPLETED", "{occ}");
    let instance = get(format!("/vnflcm/v2/vnf_instances/{id}")).await;
    assert_eq!(instance["metadata"]["_links"]["self"]["href"], "/mine");
}

/// Regression (issue 25, item 11): a package whose LCM hooks need a management driver the
/// server lacks onboarded without a word and failed only at instantiate (422). Onboarding
/// now warns, naming the hooks, the artifact and what to start the server with; a server
/// with a management driver that can run the artifact does not.
#[tokio::test]
async fn package_whose_hooks_need_a_missing_management_driver_onboards_silently() {
    let cluster = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../vnfd-samples/vnf-a-k8s-cluster"
    );
    let h = Harness::new().await;
    let (_, pkg) = h.onboard(zip_dir(Path::new(cluster))).await;
    assert_eq!(pkg["onboardingState"], "ONBOARDED", "{pkg:#}");
    let warnings = hook_warnings(&pkg);
    // One per flavour (simple, ha) for the one artifact.
    assert_eq!(warnings.len(), 2, "{pkg:#}");
    for w in &warnings {
        assert!(
            w.contains("`instantiate_end`")
                && w.contains("artifact `mgmt-driver-k8s-cluster`")
                && w.contains("this server runs no management driver")
                && w.contains("--plugin mgmt-driver-k8s-cluster=LIBRARY"),
            "{w}"
        );
    }
    let h = Harness::with_services(
        |b| b.mgmt_driver(Arc::new(vnfm::lcm::RecordingMgmtDriver::new())),
        |_| {},
    )
    .await;
    let (_, pkg) = h.onboard(zip_dir(Path::new(cluster))).await;
    assert_eq!(pkg["onboardingState"], "ONBOARDED", "{pkg:#}");
    assert!(hook_warnings(&pkg).is_empty(), "{pkg:#}");
}

/// SOL003 v2.6.1 clauses 10.4.2a-10.4.5a: onboarded packages addressed by vnfdId.
#[tokio::test]
async fn onboarded_vnf_packages_are_addressed_by_vnfd_id() {
    let h = Harness::new().await;
    let (id, _) = h.onboard(zip_dir(Path::new(HELLO))).await;
    // A package that never got content has no vnfdId and is not listed.
    let r = h
        .call(Method::POST, "/vnfpkgm/v1/vnf_packages", Some(json!({})))
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let created = r.json()["id"].as_str().unwrap().to_owned();

    let list = h
        .call(Method::GET, "/vnfpkgm/v1/onboarded_vnf_packages", None)
        .await
        .json();
    let ids: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["id"].as_str())
        .collect();
    assert_eq!(ids, vec![id.as_str()], "{list:#}");
    assert!(ids.iter().all(|i| *i != created));

    let one = h
        .call(
            Method::GET,
            &format!("/vnfpkgm/v1/onboarded_vnf_packages/{HELLO_VNFD}"),
            None,
        )
        .await;
    assert_eq!(one.status, StatusCode::OK);
    assert_eq!(one.json()["id"], id.as_str());
    assert_eq!(one.json()["vnfdId"], HELLO_VNFD);

    let auth = format!("Bearer {}", h.token);
    let get = |path: String, accept: &'static str| {
        let auth = auth.clone();
        let h = &h;
        async move {
            h.raw(
                Method::GET,
                &path,
                &[("authorization", &auth), ("accept", accept)],
                vec![],
            )
            .await
        }
    };
    let base = format!("/vnfpkgm/v1/onboarded_vnf_packages/{HELLO_VNFD}");
    let r = get(format!("{base}/vnfd"), "application/zip").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("content-type"), Some("application/zip"));
    let r = get(format!("{base}/package_content"), "application/zip").await;
    assert_eq!(r.status, StatusCode::OK);
    let by_id = get(
        format!("/vnfpkgm/v1/vnf_packages/{id}/package_content"),
        "application/zip",
    )
    .await;
    assert_eq!(r.body, by_id.body);
    let r = get(
        format!("{base}/artifacts/Definitions/hello_types.yaml"),
        "*/*",
    )
    .await;
    assert_eq!(
        r.status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    assert!(String::from_utf8_lossy(&r.body).contains("acme.hello.VNF"));

    h.call(
        Method::GET,
        "/vnfpkgm/v1/onboarded_vnf_packages/no-such-vnfd/vnfd",
        None,
    )
    .await
    .problem(404);
    let r = h.call(Method::DELETE, &base, None).await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
}

fn etsi_pkgm_schema(name: &str) -> jsonschema::Validator {
    let dir = format!("{CORPUS}/etsi/api-tests/SOL003/VNFPackageManagement-API/schemas");
    let text = std::fs::read_to_string(format!("{dir}/{name}")).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft4)
        .build(&schema)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Pending outbox rows of subscription `sub`, oldest first.
async fn outbox_of(h: &Harness, sub: &str) -> Vec<Value> {
    h.state
        .store()
        .outbox_pending_rows(None, 1000)
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.subscription_id.as_str() == sub)
        .map(|r| r.payload)
        .collect()
}

#[tokio::test]
async fn package_subscriptions_create_read_delete_and_refuse_what_they_must() {
    let h = Harness::new().await;
    const SECRET: &str = "pkgm-cb-Pa55-never-echoed";
    let body = json!({
        "callbackUri": "http://127.0.0.1:9/pkgm",
        "filter": {"notificationTypes": ["VnfPackageChangeNotification"], "vnfdId": [HELLO_VNFD]},
        "authentication": {"authType": ["BASIC"],
            "paramsBasic": {"userName": "nfvo", "password": SECRET}}
    });
    let r = h
        .call(
            Method::POST,
            "/vnfpkgm/v1/subscriptions",
            Some(body.clone()),
        )
        .await;
    assert_eq!(
        r.status,
        StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    let sub = r.json();
    let id = sub["id"].as_str().unwrap().to_owned();
    assert!(
        r.header("location")
            .unwrap()
            .ends_with(&format!("/vnfpkgm/v1/subscriptions/{id}"))
    );
    assert_valid(&etsi_pkgm_schema("PkgmSubscription.schema.json"), &sub);
    assert_eq!(
        sub["_links"]["self"]["href"],
        format!("http://localhost/vnfpkgm/v1/subscriptions/{id}")
    );
    assert_eq!(sub["filter"]["vnfdId"], json!([HELLO_VNFD]));
    assert!(sub.get("authentication").is_none());
    assert!(!String::from_utf8_lossy(&r.body).contains(SECRET));

    // The same filter and callback again (through either version): 303 to the existing one.
    for version in ["v1", "v2"] {
        let r = h
            .call(
                Method::POST,
                &format!("/vnfpkgm/{version}/subscriptions"),
                Some(body.clone()),
            )
            .await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{version}");
        assert!(r.body.is_empty());
        assert!(
            r.header("location")
                .unwrap()
                .ends_with(&format!("/vnfpkgm/{version}/subscriptions/{id}"))
        );
    }
    let r = h
        .call(
            Method::POST,
            "/vnfpkgm/v2/subscriptions",
            Some(json!({"callbackUri": "http://127.0.0.1:9/all"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let all = r.json()["id"].as_str().unwrap().to_owned();

    // Read through either version, links into the version read; never the credentials.
    let one = h
        .call(
            Method::GET,
            &format!("/vnfpkgm/v2/subscriptions/{id}"),
            None,
        )
        .await;
    assert_eq!(one.status, StatusCode::OK);
    assert_eq!(
        one.json()["_links"]["self"]["href"],
        format!("http://localhost/vnfpkgm/v2/subscriptions/{id}")
    );
    let list = h.call(Method::GET, "/vnfpkgm/v1/subscriptions", None).await;
    assert_eq!(list.status, StatusCode::OK);
    assert!(!String::from_utf8_lossy(&list.body).contains(SECRET));
    let list = list.json();
    assert_valid(&etsi_pkgm_schema("PkgmSubscriptions.schema.json"), &list);
    assert_eq!(list.as_array().unwrap().len(), 2);
    assert!(list.as_array().unwrap().iter().all(|s| {
        s["_links"]["self"]["href"]
            .as_str()
            .is_some_and(|h| h.starts_with("http://localhost/vnfpkgm/v1/subscriptions/"))
    }));
    // The lifecycle API does not see them, nor they it.
    h.call(Method::GET, &format!("/vnflcm/v2/subscriptions/{id}"), None)
        .await
        .problem(404);
    assert_eq!(
        h.call(Method::GET, "/vnflcm/v2/subscriptions", None)
            .await
            .json(),
        json!([])
    );

    // Filtered list (SOL013).
    let filtered = h
        .call(
            Method::GET,
            "/vnfpkgm/v2/subscriptions?filter=(eq,callbackUri,http://127.0.0.1:9/all)",
            None,
        )
        .await
        .json();
    assert_eq!(filtered.as_array().unwrap().len(), 1);
    assert_eq!(filtered[0]["id"], all.as_str());
    let filtered = h
        .call(
            Method::GET,
            &format!("/vnfpkgm/v2/subscriptions?filter=(cont,filter/vnfdId,{HELLO_VNFD})"),
            None,
        )
        .await
        .json();
    assert_eq!(filtered.as_array().unwrap().len(), 1);
    assert_eq!(filtered[0]["id"], id.as_str());
    h.call(
        Method::GET,
        "/vnfpkgm/v2/subscriptions?filter=(eq,nfvId,x)",
        None,
    )
    .await
    .problem(400);

    // Bad bodies: 400 with the JSON pointer of the offending member.
    for (bad, pointer) in [
        (json!({"callbackUri": 5}), "/callbackUri"),
        (
            json!({"callbackUri": "http://127.0.0.1:9/x", "filter": {"operationalState": "ENABLED"}}),
            "/filter/operationalState",
        ),
        (
            json!({"callbackUri": "http://127.0.0.1:9/x", "filter": {"vnfInstanceIds": ["i"]}}),
            "/filter",
        ),
        (
            json!({"callbackUri": "http://127.0.0.1:9/x", "filter": {
                "notificationTypes": ["VnfPackageOnboardingNotification"], "vnfPkgId": ["p"]}}),
            "/filter/vnfPkgId",
        ),
        (json!({"callbackUri": "not a uri"}), "/callbackUri"),
    ] {
        let r = h
            .call(Method::POST, "/vnfpkgm/v2/subscriptions", Some(bad.clone()))
            .await;
        let p = r.problem(400);
        assert!(
            p["pointer"]
                .as_str()
                .is_some_and(|p| p.starts_with(pointer)),
            "{bad}: {p}"
        );
    }

    // Methods the resources do not have.
    for (method, path) in [
        (Method::PUT, "/vnfpkgm/v1/subscriptions".to_owned()),
        (Method::PATCH, "/vnfpkgm/v1/subscriptions".to_owned()),
        (Method::DELETE, "/vnfpkgm/v1/subscriptions".to_owned()),
        (Method::POST, format!("/vnfpkgm/v1/subscriptions/{id}")),
        (Method::PUT, format!("/vnfpkgm/v1/subscriptions/{id}")),
        (Method::PATCH, format!("/vnfpkgm/v2/subscriptions/{id}")),
    ] {
        let r = h.call(method.clone(), &path, None).await;
        assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
    }

    assert_eq!(
        h.call(
            Method::DELETE,
            &format!("/vnfpkgm/v1/subscriptions/{id}"),
            None
        )
        .await
        .status,
        StatusCode::NO_CONTENT
    );
    h.call(
        Method::GET,
        &format!("/vnfpkgm/v1/subscriptions/{id}"),
        None,
    )
    .await
    .problem(404);
    h.call(
        Method::DELETE,
        &format!("/vnfpkgm/v1/subscriptions/{id}"),
        None,
    )
    .await
    .problem(404);

    // More than a page: a Link header to the rest.
    for i in 0..100 {
        let r = h
            .call(
                Method::POST,
                "/vnfpkgm/v2/subscriptions",
                Some(json!({"callbackUri": format!("http://127.0.0.1:9/page/{i}")})),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED);
    }
    let first = h.call(Method::GET, "/vnfpkgm/v1/subscriptions", None).await;
    assert_eq!(first.json().as_array().unwrap().len(), 100);
    let link = first.header("link").expect("Link header").to_owned();
    let next = &link[link.find("/vnfpkgm").unwrap()..link.find('>').unwrap()];
    let rest = h.call(Method::GET, next, None).await.json();
    assert_eq!(rest.as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn package_changes_enqueue_onboarding_and_change_notifications() {
    let h = Harness::new().await;
    let create = |body: Value, version: &'static str| {
        let h = &h;
        async move {
            let r = h
                .call(
                    Method::POST,
                    &format!("/vnfpkgm/{version}/subscriptions"),
                    Some(body),
                )
                .await;
            assert_eq!(r.status, StatusCode::CREATED);
            r.json()["id"].as_str().unwrap().to_owned()
        }
    };
    let everything = create(json!({"callbackUri": "http://127.0.0.1:9/all"}), "v1").await;
    let changes = create(
        json!({"callbackUri": "http://127.0.0.1:9/changes",
            "filter": {"notificationTypes": ["VnfPackageChangeNotification"]}}),
        "v2",
    )
    .await;
    let other_vnfd = create(
        json!({"callbackUri": "http://127.0.0.1:9/other", "filter": {"vnfdId": ["other"]}}),
        "v2",
    )
    .await;

    let (pkg, _) = h.onboard(zip_dir(Path::new(HELLO))).await;
    let patch = |state: &'static str| {
        let h = &h;
        let pkg = pkg.clone();
        async move {
            let r = h
                .call(
                    Method::PATCH,
                    &format!("/vnfpkgm/v2/vnf_packages/{pkg}"),
                    Some(json!({"operationalState": state})),
                )
                .await;
            assert_eq!(r.status, StatusCode::OK);
        }
    };
    patch("DISABLED").await;
    // Only userDefinedData: no notification.
    let r = h
        .call(
            Method::PATCH,
            &format!("/vnfpkgm/v2/vnf_packages/{pkg}"),
            Some(json!({"userDefinedData": {"k": "w"}})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    patch("ENABLED").await;
    patch("DISABLED").await;
    assert_eq!(
        h.call(
            Method::DELETE,
            &format!("/vnfpkgm/v2/vnf_packages/{pkg}"),
            None
        )
        .await
        .status,
        StatusCode::NO_CONTENT
    );

    let onboarding = etsi_pkgm_schema("VnfPackageOnboardingNotification.schema.json");
    let change = etsi_pkgm_schema("VnfPackageChangeNotification.schema.json");
    let rows = outbox_of(&h, &everything).await;
    let summary: Vec<String> = rows
        .iter()
        .map(|n| {
            format!(
                "{} {} {}",
                n["notificationType"].as_str().unwrap(),
                n["changeType"].as_str().unwrap_or("-"),
                n["operationalState"].as_str().unwrap_or("-")
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            "VnfPackageOnboardingNotification - -",
            "VnfPackageChangeNotification OP_STATE_CHANGE DISABLED",
            "VnfPackageChangeNotification OP_STATE_CHANGE ENABLED",
            "VnfPackageChangeNotification OP_STATE_CHANGE DISABLED",
            "VnfPackageChangeNotification PKG_DELETE -",
        ]
    );
    for n in &rows {
        let schema = if n["notificationType"] == "VnfPackageOnboardingNotification" {
            &onboarding
        } else {
            &change
        };
        assert_valid(schema, n);
        assert_eq!(n["vnfPkgId"], pkg.as_str());
        assert_eq!(n["vnfdId"], HELLO_VNFD);
        assert_eq!(n["subscriptionId"], everything.as_str());
        assert_eq!(
            n["_links"]["vnfPackage"]["href"],
            format!("/vnfpkgm/v1/vnf_packages/{pkg}")
        );
        assert_eq!(
            n["_links"]["subscription"]["href"],
            format!("/vnfpkgm/v1/subscriptions/{everything}")
        );
    }
    let rows = outbox_of(&h, &changes).await;
    assert_eq!(rows.len(), 4, "no onboarding notification: {rows:#?}");
    assert_eq!(
        rows[0]["_links"]["vnfPackage"]["href"],
        format!("/vnfpkgm/v2/vnf_packages/{pkg}")
    );
    assert!(outbox_of(&h, &other_vnfd).await.is_empty());
}

/// The VIM kinds of the OpenStack and Kubernetes drivers.
fn all_vim_kinds() -> vnfm_driver_api::VimKinds {
    vnfm_driver_api::VimKinds::new()
        .with(std::sync::Arc::new(vnfm_infra_openstack::OpenStackVimKind))
        .with(std::sync::Arc::new(
            vnfm_infra_kubernetes::KubernetesVimKind,
        ))
}
