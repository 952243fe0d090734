//! The `preview` extension of the v2 task resources: `?preview=true` answers 200 with the
//! plan and starts nothing; a request the operation would refuse is refused the same way.

use std::path::Path;

use axum::http::{Method, StatusCode};
use serde_json::json;

use crate::support;

use support::*;

#[tokio::test]
async fn a_previewed_instantiate_returns_its_steps_and_starts_nothing() {
    let h = Harness::new().await;
    h.onboard(zip_dir(Path::new(HELLO))).await;
    let id = h.create_instance().await;
    let body =
        json!({"flavourId": "simple", "vimConnectionInfo": {"vim1": {"vimType": "TEST.NOOP.V_1"}}});

    let r = h
        .call(
            Method::POST,
            &format!("/vnflcm/v2/vnf_instances/{id}/instantiate?preview=true"),
            Some(body.clone()),
        )
        .await;
    assert_eq!(
        r.status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    assert!(r.header("location").is_none());
    let preview = r.json();
    assert_eq!(preview["operation"], "INSTANTIATE");
    assert_eq!(preview["vnfInstanceId"], id.as_str());
    let steps = preview["steps"].as_array().unwrap();
    assert!(
        steps
            .iter()
            .any(|s| s["name"] == "infra:instantiate" && s["vimConnectionIds"] == json!(["vim1"])),
        "{preview:#}"
    );

    // Nothing started: no occurrence, the instance still NOT_INSTANTIATED.
    let occs = h
        .call(Method::GET, "/vnflcm/v2/vnf_lcm_op_occs", None)
        .await;
    assert_eq!(occs.json(), json!([]));
    let inst = h
        .call(Method::GET, &format!("/vnflcm/v2/vnf_instances/{id}"), None)
        .await
        .json();
    assert_eq!(inst["instantiationState"], "NOT_INSTANTIATED");

    // What the operation refuses, the preview refuses alike.
    let r = h
        .call(
            Method::POST,
            &format!("/vnflcm/v2/vnf_instances/{id}/instantiate?preview=true"),
            Some(json!({"flavourId": "nope"})),
        )
        .await;
    r.problem(422);
    let r = h
        .call(
            Method::POST,
            &format!("/vnflcm/v2/vnf_instances/{id}/instantiate?preview=yes"),
            Some(body.clone()),
        )
        .await;
    assert_eq!(r.problem(400)["pointer"], "preview");

    // preview=false starts the operation as usual.
    let r = h
        .call(
            Method::POST,
            &format!("/vnflcm/v2/vnf_instances/{id}/instantiate?preview=false"),
            Some(body),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
}
