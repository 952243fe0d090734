//! Tacker v2 management scripts through the REST API: the Script VNF sample binds
//! `instantiate_end`, `scale_end` and `terminate_start` to a Python script written in Tacker's
//! style (pickled dict in, pickled dict out), which the server runs with the interpreter the
//! composition root was given.

use crate::support;

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
    // And the grant request and grant of the occurrence, as Tacker hands them over.
    assert_eq!(inst["metadata"]["scriptSawGrant"], true, "{inst:#}");

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
    assert_eq!(
        detail
            .matches("instantiate_end failed as asked by additionalParams")
            .count(),
        1,
        "the script's stderr is in the error, once: {occ:#}"
    );
    // The management driver's hook failed, not the infrastructure; a retry runs the script
    // again.
    assert_eq!(
        occ["error"]["title"], "Management driver hook failed (retrying may succeed)",
        "{occ:#}"
    );
    assert_eq!(occ["error"]["layer"], "managementDriver", "{occ:#}");
    assert_eq!(occ["error"]["retryable"], true, "{occ:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_interpreter_onboarding_warns_and_instantiate_is_refused() {
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
    // INSTANTIATE is refused before anything is created, naming the hook and what is missing.
    let id = instance(&h).await;
    let r = h
        .call(
            axum::http::Method::POST,
            &format!("/vnflcm/v2/vnf_instances/{id}/instantiate"),
            Some(instantiate(Value::Null)),
        )
        .await;
    let body = String::from_utf8_lossy(&r.body).into_owned();
    assert_eq!(r.status, 422u16, "{body}");
    assert!(
        body.contains("hook `instantiate_end`")
            && body.contains("`sample-script`")
            && body.contains("/nonexistent/python3"),
        "{body}"
    );
    let occs = h
        .call(axum::http::Method::GET, "/vnflcm/v2/vnf_lcm_op_occs", None)
        .await
        .json();
    assert_eq!(occs, json!([]), "no occurrence was created");
}

/// The harness with the scripts' driver and a step budget of `step_timeout`.
async fn scripted(step_timeout: std::time::Duration) -> Harness {
    let h = Harness::with_services(
        |b| {
            b.mgmt_scripts(vnfm::lcm::ScriptConfig::default())
                .config(vnfm::lcm::LcmConfig {
                    step_timeout,
                    ..vnfm::lcm::LcmConfig::default()
                })
        },
        |_| {},
    )
    .await;
    h.onboard(zip_dir(Path::new(SCRIPT_VNF))).await;
    h
}

/// The process ids a hanging hook wrote to `file` (the script and its child), once it did.
async fn hung_pids(file: &Path) -> Vec<i32> {
    for _ in 0..500 {
        if let Ok(text) = std::fs::read_to_string(file)
            && text.ends_with('\n')
        {
            return text
                .split_whitespace()
                .map(|p| p.parse().unwrap())
                .collect();
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("the hook never wrote {}", file.display());
}

/// Whether every process of `pids` is gone (or a zombie) within 3 s.
async fn all_gone(pids: &[i32]) -> bool {
    for _ in 0..150 {
        let alive = pids.iter().any(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|s| {
                !s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            })
        });
        if !alive {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_on_a_scripts_stdout_fails_the_occurrence_naming_the_hook() {
    let h = scripted(std::time::Duration::from_secs(60)).await;
    let id = instance(&h).await;
    let occ = h
        .task(
            &id,
            "instantiate",
            instantiate(json!({"garbage_instantiate_end": true})),
        )
        .await;
    assert_eq!(occ["operationState"], "FAILED_TEMP", "{occ:#}");
    let detail = occ["error"]["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("hook instantiate_end") && detail.contains("stdout is not a pickle"),
        "{occ:#}"
    );
    assert_eq!(occ["error"]["errorKind"], "permanent", "{occ:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_script_times_out_the_occurrence_and_its_processes_are_killed() {
    let h = scripted(std::time::Duration::from_secs(2)).await;
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pids");
    let id = instance(&h).await;
    let occ = h
        .task(
            &id,
            "instantiate",
            instantiate(json!({"hang_instantiate_end": pid_file})),
        )
        .await;
    assert_eq!(occ["operationState"], "FAILED_TEMP", "{occ:#}");
    assert_eq!(occ["error"]["errorKind"], "timeout", "{occ:#}");
    let detail = occ["error"]["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("hook instantiate_end"), "{occ:#}");
    let pids = hung_pids(&pid_file).await;
    assert!(all_gone(&pids).await, "script and child {pids:?} still run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_during_a_script_kills_it_and_ends_the_occurrence() {
    let h = scripted(std::time::Duration::from_secs(120)).await;
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pids");
    let id = instance(&h).await;
    let r = h
        .call(
            axum::http::Method::POST,
            &format!("/vnflcm/v2/vnf_instances/{id}/instantiate"),
            Some(instantiate(json!({"hang_instantiate_end": pid_file}))),
        )
        .await;
    assert_eq!(r.status, 202u16, "{}", String::from_utf8_lossy(&r.body));
    let location = r.header("location").unwrap().to_owned();
    let pids = hung_pids(&pid_file).await;
    let occ_path = &location[location.find("/vnflcm").unwrap()..];
    let r = h
        .call(
            axum::http::Method::POST,
            &format!("{occ_path}/cancel"),
            Some(json!({"cancelMode": "FORCEFUL"})),
        )
        .await;
    assert_eq!(r.status, 202u16, "{}", String::from_utf8_lossy(&r.body));
    let occ = h.wait_op(&location).await;
    assert_eq!(occ["operationState"], "FAILED_TEMP", "{occ:#}");
    assert_eq!(occ["error"]["title"], "Operation cancelled", "{occ:#}");
    assert!(all_gone(&pids).await, "script and child {pids:?} still run");
}

/// Documented limit: scripts are not sandboxed (as with Tacker); what they write outside
/// their temporary CSAR directory stays, the directory itself is removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_writing_outside_its_directory_completes_and_its_directory_is_removed() {
    let h = scripted(std::time::Duration::from_secs(60)).await;
    let dir = tempfile::tempdir().unwrap();
    let escaped = dir.path().join("escaped");
    let id = instance(&h).await;
    let occ = h
        .task(
            &id,
            "instantiate",
            instantiate(json!({"outside_instantiate_end": escaped})),
        )
        .await;
    assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");
    let csar_dir = std::fs::read_to_string(&escaped).expect("writing outside is not prevented");
    let csar_dir = csar_dir.trim_end();
    assert!(csar_dir.contains("vnfm-hook-"), "{csar_dir}");
    assert!(!Path::new(csar_dir).exists(), "{csar_dir} was not removed");
}
