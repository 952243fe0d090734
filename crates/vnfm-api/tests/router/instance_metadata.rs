//! An instance's `metadata` members that the server reads: Tacker's `VDU_VNFc_mapping`.

use super::*;

/// Tacker's `metadata.VDU_VNFc_mapping` names VNFCs: a mapping that gives one `vnfcInfo` id
/// twice, or is not arrays of ids, is refused at creation and in a modification, with the
/// pointer to where it repeats; a modification's `null` removes a VDU's names.
#[vnfm_test_env::needs(corpus)]
#[tokio::test]
async fn vnfc_names_in_metadata_are_checked_at_create_and_modify() {
    let h = Harness::new().await;
    h.onboard(zip_dir(Path::new(HELLO))).await;
    let create =
        |mapping: Value| json!({"vnfdId": HELLO_VNFD, "metadata": {"VDU_VNFc_mapping": mapping}});
    let r = h
        .call(
            Method::POST,
            "/vnflcm/v2/vnf_instances",
            Some(create(json!({"VDU1": ["a-001"], "VDU2": ["a-001"]}))),
        )
        .await;
    let problem = r.problem(400);
    assert_eq!(problem["pointer"], "/metadata/VDU_VNFc_mapping/VDU2/0");
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("duplicated vnfcInfo id \"a-001\""),
        "{problem}"
    );
    let r = h
        .call(
            Method::POST,
            "/vnflcm/v2/vnf_instances",
            Some(create(json!({"VDU1": "a-001"}))),
        )
        .await;
    assert_eq!(r.problem(400)["pointer"], "/metadata/VDU_VNFc_mapping/VDU1");

    let r = h
        .call(
            Method::POST,
            "/vnflcm/v2/vnf_instances",
            Some(create(json!({"VDU1": ["a-001", "a-010"]}))),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let id = r.json()["id"].as_str().unwrap().to_owned();
    let instance = format!("/vnflcm/v2/vnf_instances/{id}");
    let patch = |mapping: Value| json!({"metadata": {"VDU_VNFc_mapping": mapping}});
    let r = h
        .call(
            Method::PATCH,
            &instance,
            Some(patch(json!({"VDU1": ["x", "x"]}))),
        )
        .await;
    assert_eq!(
        r.problem(400)["pointer"],
        "/metadata/VDU_VNFc_mapping/VDU1/1"
    );
    let r = h
        .call(Method::PATCH, &instance, Some(patch(json!({"VDU1": null}))))
        .await;
    assert_eq!(
        r.status,
        StatusCode::ACCEPTED,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    h.wait_op(r.header("location").unwrap()).await;
    let doc = h.call(Method::GET, &instance, None).await.json();
    assert_eq!(doc["metadata"]["VDU_VNFc_mapping"], json!({}));
}
