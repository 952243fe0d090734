//! A Tacker VM package on the real test cloud (`scripts/test-env/openstack.sh`: Keystone, Heat,
//! Nova with its fake virt driver, Neutron, Glance) through the real OpenStack client, as a
//! Tacker user of the v1 guides does it: the cloud registered with `openstack vim register`
//! from an OpenStack `vim.yaml`, the corpus package `v2-vm-basic-lcms-min` (with Tacker's no-op
//! management script added, as Tacker's harness adds it) onboarded with `openstack vnf package
//! upload`, and one `openstack vnflcm instantiate ID FILE` with a request file naming the VIM
//! with Tacker's legacy `"vimType": "openstack"`. Nova then holds the instance's servers, and
//! `vnflcm terminate` removes them.
//!
//! Needs what `openstack_client` needs and the test cloud's user (`VNFM_TEST_OS_*`).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::openstack_client::{Lcm, Setup, openstack_cli, wait_for, wait_within};
use crate::tacker_package::{onboard_corpus_package, register_vim};

/// Tacker's minimal VM sample (its VDUs' image is not in the test cloud: the request names
/// the cloud's image through `additionalParams.nfv`, as a Tacker user data class would).
const PACKAGE: &str = "tacker/v2-vm-basic-lcms-min";
/// How long Heat and Nova may take for the stack (its servers boot on the fake virt driver of a
/// shared machine).
const CLOUD_STEP: Duration = Duration::from_secs(600);
/// The image `openstack.sh` uploads to the test cloud.
const IMAGE: &str = "cirros-0.6";

fn var(name: &str) -> String {
    vnfm_test_env::var(name)
}

/// An OpenStack `vim.yaml` as Tacker's documentation writes it, for the test cloud's user.
fn vim_yaml() -> String {
    let quoted = |s: &str| serde_json::to_string(s).unwrap();
    format!(
        "auth_url: {}\nusername: {}\npassword: {}\nproject_name: {}\n\
         project_domain_name: {}\nuser_domain_name: {}\ncert_verify: 'False'\n",
        quoted(&var("VNFM_TEST_KEYSTONE_URL")),
        quoted(&var("VNFM_TEST_OS_USERNAME")),
        quoted(&var("VNFM_TEST_OS_PASSWORD")),
        quoted(&var("VNFM_TEST_OS_PROJECT")),
        quoted(&var("VNFM_TEST_OS_PROJECT_DOMAIN")),
        quoted(&var("VNFM_TEST_OS_USER_DOMAIN")),
    )
}

/// `openstack server show ID -f json` as the test cloud's user: the server, or `None` once
/// Nova no longer has it.
fn nova_server(id: &str) -> Option<Value> {
    let mut cmd = Command::new(openstack_cli());
    for (k, _) in std::env::vars() {
        if k.starts_with("OS_") {
            cmd.env_remove(k);
        }
    }
    let out = cmd
        .envs([
            ("OS_AUTH_URL", var("VNFM_TEST_KEYSTONE_URL")),
            ("OS_AUTH_TYPE", "password".into()),
            ("OS_IDENTITY_API_VERSION", "3".into()),
            ("OS_USERNAME", var("VNFM_TEST_OS_USERNAME")),
            ("OS_PASSWORD", var("VNFM_TEST_OS_PASSWORD")),
            ("OS_PROJECT_NAME", var("VNFM_TEST_OS_PROJECT")),
            ("OS_PROJECT_DOMAIN_NAME", var("VNFM_TEST_OS_PROJECT_DOMAIN")),
            ("OS_USER_DOMAIN_NAME", var("VNFM_TEST_OS_USER_DOMAIN")),
            ("OS_REGION_NAME", var("VNFM_TEST_OS_REGION")),
        ])
        .args(["server", "show", id, "-f", "json"])
        .stdin(Stdio::null())
        .output()
        .expect("the openstack client runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        assert!(
            stderr.contains("No Server found")
                || stderr.contains("No server with a name or ID")
                || stderr.contains("404"),
            "openstack server show {id}: {stderr}"
        );
        return None;
    }
    let server: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    (server["status"] != "DELETED").then_some(server)
}

/// The Nova server ids of the instance `vnflcm show` shows.
fn server_ids(shown: &Value) -> Vec<String> {
    let info = &shown["Instantiated Vnf Info"];
    let info = match info {
        Value::String(text) => serde_json::from_str(text).expect("JSON"),
        other => other.clone(),
    };
    info["vnfcResourceInfo"]
        .as_array()
        .unwrap_or_else(|| panic!("no vnfcResourceInfo: {shown}"))
        .iter()
        .map(|v| {
            v["computeResource"]["resourceId"]
                .as_str()
                .expect("resourceId")
                .to_owned()
        })
        .collect()
}

/// Waits until instance `vnf` is `state` or its last occurrence stopped running (a failure
/// is then reported by the occurrence).
fn settle(lcm: &Lcm<'_>, vnf: &str, state: &str) {
    wait_within(CLOUD_STEP, &format!("{vnf} to be {state}"), || {
        let ops = lcm.json(&["vnflcm", "op", "list"]);
        let running = ops.as_array().expect("a list").iter().any(|o| {
            o["VNF Instance ID"] == vnf
                && ["STARTING", "PROCESSING", "ROLLING_BACK"]
                    .contains(&o["Operation State"].as_str().unwrap_or_default())
        });
        let shown = lcm.json(&["vnflcm", "show", vnf]);
        (shown["Instantiation State"] == state || !running).then_some(())
    });
}

#[vnfm_test_env::needs(keystone, openstack_cli, openstack, corpus)]
#[test]
fn a_v1_request_file_with_vim_type_openstack_instantiates_on_the_real_cloud() {
    let s = Setup::new();
    let os = &s.os;
    let vim_id = register_vim(&s, &vim_yaml(), "cloud", "openstack");
    let vnfd = onboard_corpus_package(&s, PACKAGE, "vm");

    // Tacker's v1 guides: a list of VIM connections naming the VIM and its legacy type.
    let lcm = Lcm::new(os, "1");
    let created = lcm.json(&["vnflcm", "create", &vnfd, "--name", "vm"]);
    let vnf = created["ID"].as_str().expect("ID").to_owned();
    let image = json!({"vcImageId": IMAGE});
    let file = lcm.file(
        "instantiate-vm.json",
        &json!({
            "flavourId": "simple",
            "vimConnectionInfo": [
                {"id": "742f1fc7-6b46-4a8e-9e07-20c9c1e6f3e3", "vimId": vim_id, "vimType": "openstack"}
            ],
            "additionalParams": {"nfv": {"VDU": {"VDU1": image, "VDU2": image}}}
        }),
    );
    let started = Instant::now();
    lcm.ok(&["vnflcm", "instantiate", &vnf, &file]);
    settle(&lcm, &vnf, "INSTANTIATED");
    let op = lcm.next_op(&vnf, "INSTANTIATE");
    eprintln!("instantiate on the cloud took {:?}", started.elapsed());
    assert_eq!(op["Operation State"], "COMPLETED", "{op}");
    let shown = lcm.json(&["vnflcm", "show", &vnf]);
    assert_eq!(shown["Instantiation State"], "INSTANTIATED", "{shown}");
    assert!(shown.to_string().contains(&vim_id), "{shown}");
    let servers = server_ids(&shown);
    assert_eq!(servers.len(), 2, "VDU1 and VDU2: {shown}");
    for id in &servers {
        let server = nova_server(id).unwrap_or_else(|| panic!("Nova has no server {id}"));
        assert_eq!(server["status"], "ACTIVE", "{server}");
    }

    let started = Instant::now();
    lcm.ok(&[
        "vnflcm",
        "terminate",
        "--termination-type",
        "FORCEFUL",
        &vnf,
    ]);
    settle(&lcm, &vnf, "NOT_INSTANTIATED");
    let op = lcm.next_op(&vnf, "TERMINATE");
    eprintln!("terminate on the cloud took {:?}", started.elapsed());
    assert_eq!(op["Operation State"], "COMPLETED", "{op}");
    for id in &servers {
        wait_for(&format!("Nova's server {id} to go"), || {
            nova_server(id).is_none().then_some(())
        });
    }
    lcm.ok(&["vnflcm", "delete", &vnf]);
}
