//! Package subscriptions (`/vnfpkgm/v1/subscriptions`) and the onboarding and change
//! notifications package changes enqueue for them.

use super::*;

fn etsi_pkgm_schema(name: &str) -> jsonschema::Validator {
    crate::support::etsi_schema("VNFPackageManagement-API", name)
}

/// Pending outbox rows of subscription `sub`, oldest first.
async fn outbox_of(h: &Harness, sub: &str) -> Vec<Value> {
    h.store
        .outbox_pending_rows(None, 1000)
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.subscription_id.as_str() == sub)
        .map(|r| r.payload)
        .collect()
}

#[vnfm_test_env::needs(corpus)]
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

    h.delete_and_gone(&format!("/vnfpkgm/v1/subscriptions/{id}"))
        .await;
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

#[vnfm_test_env::needs(corpus)]
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
