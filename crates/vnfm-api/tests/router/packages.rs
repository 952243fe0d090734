//! VNF package management: onboarding, broken and duplicate packages, uploads from a URI,
//! packages addressed by their VNFD id.

use super::*;

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
    h.delete_and_gone(&format!("/vnfpkgm/v2/vnf_packages/{id}"))
        .await;
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
    let allow = vec![allowed.clone()];
    let h = Harness::with_services(|b| b.upload_allow_list(allow), |_| {}).await;
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
