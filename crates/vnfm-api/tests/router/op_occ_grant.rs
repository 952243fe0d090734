//! The grant of an occurrence in its representations (SOL003 `VnfLcmOpOcc.grantId`): v2 and
//! v1, single and listed.

use super::*;

#[tokio::test]
async fn an_occurrence_names_its_grant_in_v2_and_v1() {
    let h = Harness::new().await;
    // Granted, then failed in the infrastructure step: the grant came before.
    let (_, occ) = failed_temp_instantiate(&h).await;
    let occ_id = occ["id"].as_str().unwrap();
    let grant_id = occ["grantId"]
        .as_str()
        .unwrap_or_else(|| panic!("no grantId: {occ:#}"))
        .to_owned();
    assert!(!grant_id.is_empty());
    for path in [
        format!("/vnflcm/v2/vnf_lcm_op_occs/{occ_id}"),
        format!("/vnflcm/v1/vnf_lcm_op_occs/{occ_id}"),
    ] {
        let doc = h.call(Method::GET, &path, None).await.json();
        assert_eq!(doc["grantId"], grant_id.as_str(), "{path}: {doc:#}");
    }
    for path in ["/vnflcm/v2/vnf_lcm_op_occs", "/vnflcm/v1/vnf_lcm_op_occs"] {
        let list = h.call(Method::GET, path, None).await.json();
        assert_eq!(list[0]["grantId"], grant_id.as_str(), "{path}: {list:#}");
    }
    // The retry keeps the grant it was given.
    let r = h
        .call(
            Method::POST,
            &format!("/vnflcm/v2/vnf_lcm_op_occs/{occ_id}/retry"),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    let done = h.wait_op(r.header("location").unwrap()).await;
    assert_eq!(done["operationState"], "COMPLETED", "{done:#}");
    assert_eq!(done["grantId"], grant_id.as_str());
}
