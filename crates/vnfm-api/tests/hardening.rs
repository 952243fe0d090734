//! Bad input the server must refuse cleanly: values a driver could not honour, NUL characters
//! the database cannot store, secrets of the wrong type (never quoted back), and the smaller
//! HTTP points (`If-Match: *`, the `Allow` list in a 405).

mod support;

use std::path::Path;

use axum::http::{Method, StatusCode};
use serde_json::{Value, json};
use support::*;

async fn instantiated(h: &Harness) -> String {
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
    assert_eq!(occ["operationState"], "COMPLETED", "{occ}");
    id
}

#[tokio::test]
async fn a_test_vim_delay_beyond_what_a_duration_holds_is_refused_naming_the_field() {
    let h = Harness::new().await;
    let id = instantiated(&h).await;
    let scale = |faults: Value| json!({"type": "SCALE_OUT", "aspectId": "web_scale", "additionalParams": {"testVim": faults}});
    for (faults, member) in [
        (json!({"delaySeconds": 1e308}), "delaySeconds"),
        (json!({"delaySeconds": -1}), "delaySeconds"),
        (json!({"delaySeconds": "soon"}), "delaySeconds"),
        (json!({"failures": -2}), "failures"),
        (json!({"rollbackFailures": 1.5}), "rollbackFailures"),
    ] {
        for version in ["v1", "v2"] {
            let r = h
                .call(
                    Method::POST,
                    &format!("/vnflcm/{version}/vnf_instances/{id}/scale"),
                    Some(scale(faults.clone())),
                )
                .await;
            let p = r.problem(400);
            let pointer = format!("/additionalParams/testVim/{member}");
            assert_eq!(p["pointer"], pointer, "{faults}: {p}");
            assert!(p["detail"].as_str().unwrap().contains(member), "{p}");
        }
    }
    // Nothing was started: the instance takes the next operation.
    let occ = h
        .task(&id, "scale", scale(json!({"delaySeconds": 0.01})))
        .await;
    assert_eq!(occ["operationState"], "COMPLETED", "{occ}");
    let r = h
        .call(Method::GET, &format!("/vnflcm/v2/vnf_instances/{id}"), None)
        .await;
    assert_eq!(r.status, StatusCode::OK);
}
