//! Tacker v2 management scripts through the REST API: the Script VNF sample binds
//! `instantiate_end`, `scale_end` and `terminate_start` to a Python script written in Tacker's
//! style (pickled dict in, pickled dict out), which the server runs with the interpreter the
//! composition root was given.

mod support;

use std::path::Path;

use serde_json::{Value, json};
use support::{Harness, hook_warnings, zip_dir};

const SCRIPT_VNF: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../vnfd-samples/tacker-script-vnf"
);
const SCRIPT_VNFD: &str = "6f0b7e1c-2d55-4c5e-9b3a-4e110a000005";

async fn instance(h: &Harness) -> String {
    let r = h
        .call(
            axum::http::Method::POST,
            "/vnflcm/v2/vnf_instances",
            Some(json!({"vnfdId": SCRIPT_VNFD})),
        )
        .await;
    assert_eq!(r.status, 201u16, "{}", String::from_utf8_lossy(&r.body));
    r.json()["id"].as_str().unwrap().to_owned()
}

fn instantiate(extra: Value) -> Value {
    let mut body = json!({"flavourId": "simple",
        "vimConnectionInfo": {"vim1": {"vimType": "TEST.NOOP.V_1"}}});
    if !extra.is_null() {
        body["additionalParams"] = extra;
    }
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tacker_style_script_runs_on_its_hooks_and_its_instance_changes_are_kept() {
    let h = Harness::with_services(
        |b| b.mgmt_scripts(vnfm::lcm::ScriptConfig::default()),
        |_| {},
    )
    .await;
    let (_, pkg) = h.onboard(zip_dir(Path::new(SCRIPT_VNF))).await;
    assert_eq!(pkg["onboardingState"], "ONBOARDED", "{pkg:#}");
    assert!(hook_warnings(&pkg).is_empty(), "{pkg:#}");

    let id = instance(&h).await;
    let occ = h.task(&id, "instantiate", instantiate(Value::Null)).await;
    assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");
    let inst = h
        .call(
            axum::http::Method::GET,
            &format!("/vnflcm/v2/vnf_instances/{id}"),
            None,
        )
        .await
        .json();
    // The script saw the package files in its temporary CSAR directory and changed the
    // instance's metadata, which the server merged.
    assert_eq!(
        inst["metadata"]["lastScriptHook"], "instantiate_end",
        "{inst:#}"
    );
    assert_eq!(inst["metadata"]["scriptSawVnfd"], true, "{inst:#}");

    let occ = h
        .task(
            &id,
            "scale",
            json!({"type": "SCALE_OUT", "aspectId": "web_scale"}),
        )
        .await;
    assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");
    let inst = h
        .call(
            axum::http::Method::GET,
            &format!("/vnflcm/v2/vnf_instances/{id}"),
            None,
        )
        .await
        .json();
    assert_eq!(inst["metadata"]["lastScriptHook"], "scale_end", "{inst:#}");

    let occ = h
        .task(&id, "terminate", json!({"terminationType": "FORCEFUL"}))
        .await;
    assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_script_leaves_the_occurrence_failed_temp_with_what_it_printed() {
    let h = Harness::with_services(
        |b| b.mgmt_scripts(vnfm::lcm::ScriptConfig::default()),
        |_| {},
    )
    .await;
    h.onboard(zip_dir(Path::new(SCRIPT_VNF))).await;
    let id = instance(&h).await;
    let occ = h
        .task(
            &id,
            "instantiate",
            instantiate(json!({"fail_instantiate_end": true})),
        )
        .await;
    assert_eq!(occ["operationState"], "FAILED_TEMP", "{occ:#}");
    let detail = occ["error"]["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("instantiate_end"), "{occ:#}");
    assert!(
        detail.contains("instantiate_end failed as asked by additionalParams"),
        "the script's stderr is in the error: {occ:#}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_interpreter_onboarding_warns_that_the_hooks_cannot_run() {
    let h = Harness::with_services(
        |b| {
            b.mgmt_scripts(vnfm::lcm::ScriptConfig {
                python: "/nonexistent/python3".into(),
                ..vnfm::lcm::ScriptConfig::default()
            })
        },
        |_| {},
    )
    .await;
    let (_, pkg) = h.onboard(zip_dir(Path::new(SCRIPT_VNF))).await;
    assert_eq!(pkg["onboardingState"], "ONBOARDED", "{pkg:#}");
    let warnings = hook_warnings(&pkg);
    assert!(!warnings.is_empty(), "{pkg:#}");
    assert!(
        warnings.iter().all(|w| w.contains("sample-script")),
        "{warnings:?}"
    );
}
