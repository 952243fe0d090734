//! What every resource shares: authentication, API versions, ProblemDetails, body limits, metrics and the OpenAPI document.

use super::*;

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

#[vnfm_test_env::needs(corpus)]
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
    // A version the API does not offer: 406 naming the one it serves (SOL013 clause 4.9).
    assert!(
        r.problem(406)["detail"]
            .as_str()
            .unwrap()
            .contains("it serves 2.0.0")
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
        json!({"uriPrefix": "/vnffm", "apiVersions": [{"version": "1.3.0", "isDeprecated": false}]})
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

/// axum's own rejections (plain text) are made ProblemDetails, and these too follow the
/// `Accept` header: a task body over the limit, sent without `Content-Length`, is cut while it
/// is read.
#[tokio::test]
async fn rejections_made_problem_details_follow_the_accept_header() {
    let h = Harness::with(|o| o.max_json_body = 1024).await;
    let auth = format!("Bearer {}", h.token);
    h.onboard(zip_dir(Path::new(HELLO))).await;
    let id = h.create_instance().await;
    let body = serde_json::to_vec(&json!({"flavourId": "x".repeat(4096)})).unwrap();
    for (accept, expected) in [
        (None, "application/problem+json"),
        (Some("application/json"), "application/json"),
    ] {
        let mut headers = vec![
            ("authorization", auth.as_str()),
            ("version", "2.0.0"),
            ("content-type", "application/json"),
        ];
        if let Some(a) = accept {
            headers.push(("accept", a));
        }
        let r = h
            .raw(
                Method::POST,
                &format!("/vnflcm/v2/vnf_instances/{id}/instantiate"),
                &headers,
                body.clone(),
            )
            .await;
        assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE, "{accept:?}");
        assert_eq!(r.header("content-type"), Some(expected), "{accept:?}");
        assert_eq!(r.json()["status"], 413, "{accept:?}");
    }
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
        "docs/openapi.json differs from the served document: run UPDATE_OPENAPI=1 cargo test -p vnfm-api --test integration checked_in_openapi"
    );
}

/// The document and the router come from one route table: on every documented path, a method
/// the document does not list is answered 405 by the router, with exactly the documented
/// methods in `Allow` (as axum computed them) and in the detail.
#[tokio::test]
async fn every_documented_path_allows_exactly_its_documented_methods() {
    let h = Harness::new().await;
    let doc = vnfm_api::openapi::document();
    let paths = doc["paths"].as_object().unwrap();
    assert!(paths.len() > 100, "{} paths", paths.len());
    for (template, item) in paths {
        let mut documented: Vec<String> = item
            .as_object()
            .unwrap()
            .keys()
            .map(|m| m.to_ascii_uppercase())
            .collect();
        documented.sort();
        let allow = documented.join(", ");
        let path: String = template
            .split('/')
            .map(|seg| if seg.starts_with('{') { "x1" } else { seg })
            .collect::<Vec<_>>()
            .join("/");
        let method = ["PUT", "PATCH", "DELETE", "POST", "GET"]
            .into_iter()
            .find(|m| !documented.iter().any(|d| d == m))
            .expect("a method the path does not have");
        let method = Method::from_bytes(method.as_bytes()).unwrap();
        let r = h.call(method.clone(), &path, None).await;
        assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
        let p = r.problem(405);
        assert_eq!(r.header("allow"), Some(allow.as_str()), "{method} {path}");
        let detail = p["detail"].as_str().unwrap();
        assert!(detail.ends_with(&format!("allows {allow}")), "{detail}");
    }
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

/// The `_links` of a document point into the API version it is read through, whole hrefs
/// compared: an instance (with its task links), an occurrence, a subscription and a package,
/// each read through v2 and v1.
#[tokio::test]
async fn links_point_into_the_version_read() {
    let h = Harness::new().await;
    let (pkg, _) = h.onboard(zip_dir(Path::new(HELLO))).await;
    let created = h
        .call(
            Method::POST,
            "/vnflcm/v2/vnf_instances",
            Some(json!({"vnfdId": HELLO_VNFD})),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let id = created.json()["id"].as_str().unwrap().to_owned();
    let occ = h
        .task(
            &id,
            "instantiate",
            json!({"flavourId": "simple",
                   "vimConnectionInfo": {"vim1": {"vimType": "TEST.NOOP.V_1"}}}),
        )
        .await;
    let occ_id = occ["id"].as_str().unwrap().to_owned();
    let sub = h
        .call(
            Method::POST,
            "/vnflcm/v2/subscriptions",
            Some(json!({"callbackUri": "http://127.0.0.1:9/lcm"})),
        )
        .await;
    assert_eq!(sub.status, StatusCode::CREATED);
    let sub_id = sub.json()["id"].as_str().unwrap().to_owned();
    let root = "http://localhost";
    for version in ["v1", "v2"] {
        let lcm = format!("{root}/vnflcm/{version}");
        let instance = h
            .call(
                Method::GET,
                &format!("/vnflcm/{version}/vnf_instances/{id}"),
                None,
            )
            .await
            .json();
        let links = instance["_links"].as_object().unwrap();
        assert_eq!(links["self"]["href"], format!("{lcm}/vnf_instances/{id}"));
        assert_eq!(
            links["indicators"]["href"],
            format!("{root}/vnfind/v1/indicators/{id}")
        );
        for task in ["terminate", "scale", "heal", "operate"] {
            assert_eq!(
                links[task]["href"],
                format!("{lcm}/vnf_instances/{id}/{task}"),
                "{version} {task}"
            );
        }
        assert!(links.get("instantiate").is_none(), "{instance:#}");
        let occ = h
            .call(
                Method::GET,
                &format!("/vnflcm/{version}/vnf_lcm_op_occs/{occ_id}"),
                None,
            )
            .await
            .json();
        assert_eq!(
            occ["_links"]["self"]["href"],
            format!("{lcm}/vnf_lcm_op_occs/{occ_id}")
        );
        assert_eq!(
            occ["_links"]["vnfInstance"]["href"],
            format!("{lcm}/vnf_instances/{id}")
        );
        let sub = h
            .call(
                Method::GET,
                &format!("/vnflcm/{version}/subscriptions/{sub_id}"),
                None,
            )
            .await
            .json();
        assert_eq!(
            sub["_links"],
            json!({"self": {"href": format!("{lcm}/subscriptions/{sub_id}")}})
        );
        let pkgm = format!("{root}/vnfpkgm/{version}");
        let package = h
            .call(
                Method::GET,
                &format!("/vnfpkgm/{version}/vnf_packages/{pkg}"),
                None,
            )
            .await
            .json();
        assert_eq!(
            package["_links"],
            json!({
                "self": {"href": format!("{pkgm}/vnf_packages/{pkg}")},
                "vnfd": {"href": format!("{pkgm}/vnf_packages/{pkg}/vnfd")},
                "packageContent": {"href": format!("{pkgm}/vnf_packages/{pkg}/package_content")},
            })
        );
    }
}
