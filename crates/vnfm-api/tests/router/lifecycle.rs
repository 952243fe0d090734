//! VNF lifecycle management: instances and their operations, failures and retries, lists, LCM subscriptions, the v1 API.

use super::*;

#[vnfm_test_env::needs(corpus)]
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
    h.delete_and_gone(&format!("/vnflcm/v2/vnf_instances/{id}"))
        .await;
}

#[tokio::test]
async fn failed_temp_retry_rollback_fail() {
    let h = Harness::new().await;
    let (id, occ) = failed_temp_instantiate(&h).await;
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

/// The sizes of the pages of every list (`page_size`), a list's own replacing it, as
/// Tacker's CI sets `vnf_instance_page_size` to 1 for its VM tests: each page has as many
/// items, links the next, and the pages together give each item once.
#[vnfm_test_env::needs(corpus)]
#[tokio::test]
async fn page_sizes_are_set_for_every_list_and_for_one() {
    use vnfm_api::listing::{Listed, PageSizes};
    let h = Harness::with(|o| {
        o.page_sizes = PageSizes::every(2)
            .and_then(|s| s.with(Listed::VnfInstances, 1))
            .expect("sizes in range");
    })
    .await;
    h.onboard(zip_dir(Path::new(HELLO))).await;
    let mut instances = Vec::new();
    for _ in 0..3 {
        let id = h.create_instance().await;
        let occ = h
            .task(
                &id,
                "instantiate",
                json!({"flavourId": "simple", "vimConnectionInfo": {"v": {"vimType": FLAKY}}}),
            )
            .await;
        assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");
        instances.push(id);
    }
    instances.sort();
    // Follows each page's Link: the size of each page and every id seen.
    let walk = |first: &'static str| {
        let h = &h;
        async move {
            let (mut sizes, mut ids) = (Vec::new(), Vec::new());
            let mut next = Some(first.to_owned());
            while let Some(uri) = next.take() {
                let r = h.call(Method::GET, &uri, None).await;
                assert_eq!(r.status, StatusCode::OK, "{uri}");
                let page = r.json();
                sizes.push(page.as_array().unwrap().len());
                ids.extend(
                    page.as_array()
                        .unwrap()
                        .iter()
                        .map(|d| d["id"].as_str().unwrap().to_owned()),
                );
                next = r.header("link").map(|link| {
                    assert!(link.ends_with("rel=\"next\""), "{link}");
                    link[link.find('<').unwrap() + 1..link.find('>').unwrap()].to_owned()
                });
            }
            (sizes, ids)
        }
    };
    let (sizes, ids) = walk("/vnflcm/v2/vnf_instances").await;
    assert_eq!(sizes, [1, 1, 1], "vnf_instances pages of 1");
    assert_eq!(ids, instances);
    let (sizes, _) = walk("/vnflcm/v1/vnf_instances").await;
    assert_eq!(sizes, [1, 1, 1], "the v1 list is the same list");
    let (sizes, ids) = walk("/vnflcm/v2/vnf_lcm_op_occs").await;
    assert_eq!(sizes, [2, 1], "every other list pages of 2");
    assert_eq!(ids.len(), 3);
}

#[vnfm_test_env::needs(corpus)]
#[tokio::test]
async fn lists_filter_select_and_page() {
    let h = Harness::new().await;
    h.onboard(zip_dir(Path::new(HELLO))).await;
    let mut ids = Vec::new();
    for i in 0..130 {
        let name = if i % 2 == 0 { "even" } else { "odd" };
        let tier = if i % 10 == 0 { "gold" } else { "silver" };
        let r = h
            .call(
                Method::POST,
                "/vnflcm/v2/vnf_instances",
                Some(json!({"vnfdId": HELLO_VNFD, "vnfInstanceName": name,
                            "metadata": {"tier": tier}})),
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
    // A member without a column: the store reads only the documents holding "gold", and one
    // response holds every match (the search reads at most 10,000 rows per response).
    for (version, filter) in [
        ("v2", "(eq,metadata/tier,gold)"),
        ("v2", "(eq,metadata/tier,gold);(cont,vnfInstanceName,v)"),
        ("v1", "(eq,metadata/tier,gold)"),
    ] {
        let r = h
            .call(
                Method::GET,
                &format!("/vnflcm/{version}/vnf_instances?filter={filter}&fields=metadata"),
                None,
            )
            .await;
        assert!(r.header("link").is_none(), "{version} {filter}");
        let gold = r.json();
        assert_eq!(
            gold.as_array().unwrap().len(),
            13,
            "{version} {filter}: {gold}"
        );
        assert!(
            gold.as_array()
                .unwrap()
                .iter()
                .all(|d| d["metadata"]["tier"] == "gold")
        );
    }
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

#[vnfm_test_env::needs(corpus)]
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
    // The same again through v2 is another subscription (as Tacker's v2 API); through v1,
    // whose duplicates are 303, it is not a duplicate of the v2 one.
    for path in ["/vnflcm/v2/subscriptions", "/vnflcm/v1/subscriptions"] {
        let r = h.call(Method::POST, path, Some(body.clone())).await;
        assert_eq!(r.status, StatusCode::CREATED, "{path}");
        assert!(!r.header("location").unwrap().ends_with(&id));
    }
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
    h.delete_and_gone(&format!("/vnflcm/v2/subscriptions/{id}"))
        .await;
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
