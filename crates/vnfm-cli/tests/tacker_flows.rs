//! Tacker's operator flows replayed with the real OpenStack client (python-openstackclient
//! with python-tackerclient) and the `vnfm` client logged in through the same Keystone, each
//! asserting what Tacker does: VIMs belong to the project that registered them (another
//! project neither lists, reads, re-defaults nor deletes them); the Kubernetes `vim.yaml`
//! forms of Tacker's documentation register (a CA certificate YAML folded into one line,
//! `ssl_ca_cert: "None"`, no CA); a refused package says why (`vnfm pkg show`, the v1 document
//! `openstack vnf package show` reads);
//! a default-VIM INSTANTIATE (`{"flavourId": "simple"}`) runs on the project's default VIM (the
//! test VIM), and after it failed and was rolled back, an INSTANTIATE naming another VIM (with
//! Tacker's `"default": null`) runs there alone.
//!
//! Needs what `openstack_client` needs (Keystone and the `openstack` executable).

use std::process::{Command, Output};

use serde_json::{Value, json};

use crate::openstack_client::{Lcm, Openstack, Setup, onboard, openstack_cli};
use crate::support::BIN;

/// `vnfm ARGS -o json` logged in through Keystone with the `OS_*` variables of `user`.
fn vnfm_as(s: &Setup, args: &[&str]) -> Output {
    let mut cmd = Command::new(BIN);
    for (k, _) in std::env::vars() {
        if k.starts_with("OS_") || k.starts_with("VNFM_") {
            cmd.env_remove(k);
        }
    }
    cmd.env("OS_AUTH_URL", &s.keystone.url)
        .env("OS_USERNAME", &s.user.name)
        .env("OS_PASSWORD", s.user.password.expose())
        .env("OS_PROJECT_NAME", &s.user.project.name)
        .env("OS_USER_DOMAIN_NAME", "Default")
        .env("OS_PROJECT_DOMAIN_NAME", "Default")
        .env("HOME", s.dir.path())
        .args(args)
        .args(["--url", &s.server.base, "-o", "json"])
        .output()
        .expect("vnfm runs")
}

/// [`vnfm_as`], which must succeed; its output parsed.
fn vnfm_json(s: &Setup, args: &[&str]) -> Value {
    let out = vnfm_as(s, args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "vnfm {}: {}\nstdout: {stdout}\nstderr: {}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

/// Writes `text` to `name` in the test directory; its path.
fn write(s: &Setup, name: &str, text: &str) -> String {
    let p = s.dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

/// The ids of `openstack vim list`.
fn vim_ids(os: &Openstack) -> Vec<String> {
    let mut ids: Vec<String> = os
        .json(&["vim", "list"])
        .as_array()
        .expect("a list")
        .iter()
        .map(|v| v["ID"].as_str().expect("ID").to_owned())
        .collect();
    ids.sort();
    ids
}

/// A Kubernetes `vim.yaml` as Tacker's documentation writes it, with `ssl_ca_cert` given as
/// `ca` (a YAML scalar as written in the file) or left out.
fn kubernetes_vim_yaml(ca: Option<&str>) -> String {
    let mut text = "auth_url: \"https://127.0.0.1:6443\"\nbearer_token: \"k8s-secret-token\"\nproject_name: \"default\"\ntype: \"kubernetes\"\n".to_owned();
    if let Some(ca) = ca {
        text.push_str(&format!("ssl_ca_cert: {ca}\n"));
    }
    text
}

#[vnfm_test_env::needs(keystone, openstack_cli)]
#[test]
fn tacker_flows_with_two_projects() {
    let s = Setup::new();
    let demo = &s.os;
    let other_project = s.rt.block_on(s.keystone.project("other"));
    let other_user = s.rt.block_on(s.keystone.user(
        "other-user",
        &other_project,
        &["member", "reader"],
    ));
    let other = Openstack::new(
        openstack_cli(),
        &s.keystone.url,
        &other_user,
        &s.endpoint.region,
        s.dir.path(),
    );

    // Demo registers the test VIM as its default with `vnfm`, logged in through Keystone.
    let test_vim = vnfm_json(
        &s,
        &[
            "vim",
            "register",
            "-f",
            &write(
                &s,
                "test-vim.json",
                r#"{"name": "try-it", "vimType": "TEST.NOOP.V_1", "extra": {"isDefault": true}}"#,
            ),
        ],
    );
    let try_it = test_vim["id"].as_str().expect("id").to_owned();
    assert_eq!(
        test_vim["project"],
        s.user.project.id.as_str(),
        "{test_vim}"
    );

    // Tacker's Kubernetes vim.yaml forms register: the CA certificate as the documentation
    // writes it (a double-quoted scalar over several lines, which YAML folds into one line),
    // Tacker's "None", and no CA at all (both unverified, as on Tacker, with a warning).
    let pem = vnfm_test_env::CA_PEM.trim_end();
    let folded = format!("\"{}\"", pem.lines().collect::<Vec<_>>().join("\n  "));
    let mut k8s_ids = Vec::new();
    for (name, ca) in [
        ("k8s-folded", Some(folded.as_str())),
        ("k8s-none", Some("\"None\"")),
        ("k8s-no-ca", None),
    ] {
        let file = write(&s, &format!("{name}.yaml"), &kubernetes_vim_yaml(ca));
        let vim = demo.json(&["vim", "register", "--config-file", &file, name]);
        assert_eq!(vim["type"], "kubernetes", "{vim}");
        assert!(!vim.to_string().contains("k8s-secret-token"), "{vim}");
        let id = vim["id"].as_str().expect("id").to_owned();
        let shown = demo.json(&["vim", "show", &id]);
        if ca.is_some_and(|c| c.contains("BEGIN")) {
            // Stored canonical: the PEM's own lines, not the folded one.
            let stored = shown["auth_cred"]["ssl_ca_cert"]
                .as_str()
                .unwrap_or_default();
            assert!(
                stored.starts_with("-----BEGIN CERTIFICATE-----\n"),
                "{shown}"
            );
        } else {
            assert!(
                shown.to_string().contains("not verified")
                    || shown.to_string().contains("warnings"),
                "a VIM without a CA carries a warning: {shown}"
            );
        }
        k8s_ids.push(id);
    }

    // The other project registers its own default VIM; the two defaults coexist.
    let other_yaml = write(
        &s,
        "other-vim.yaml",
        &format!(
            "auth_url: '{}'\nusername: 'nfv_user'\npassword: 'other-secret'\nproject_name: 'nfv'\nproject_domain_name: 'Default'\nuser_domain_name: 'Default'\ncert_verify: 'False'\n",
            s.keystone.url
        ),
    );
    let other_vim = other.json(&[
        "vim",
        "register",
        "--config-file",
        &other_yaml,
        "--is-default",
        "try-it",
    ]);
    let other_id = other_vim["id"].as_str().expect("id").to_owned();

    // Each project lists its own VIMs only; `vnfm` logged in as demo sees what the OpenStack
    // client of demo sees.
    let mut demo_ids = k8s_ids.clone();
    demo_ids.push(try_it.clone());
    demo_ids.sort();
    assert_eq!(vim_ids(demo), demo_ids);
    assert_eq!(vim_ids(&other), vec![other_id.clone()]);
    let mut listed: Vec<String> = vnfm_json(&s, &["vim", "list"])
        .as_array()
        .expect("a list")
        .iter()
        .map(|v| v["id"].as_str().expect("id").to_owned())
        .collect();
    listed.sort();
    assert_eq!(listed, demo_ids);

    // Other cannot read, re-default or delete demo's VIM: the client finds no such VIM.
    for args in [
        vec!["vim", "show", try_it.as_str()],
        vec!["vim", "set", "--is-default", "True", try_it.as_str()],
        vec!["vim", "delete", try_it.as_str()],
    ] {
        let err = other.fails(&args);
        assert!(
            err.contains(&format!("Unable to find vim with name '{try_it}'"))
                || err.contains("does not exist")
                || err.contains("404"),
            "{}: {err}",
            args.join(" ")
        );
    }
    assert_eq!(demo.json(&["vim", "show", &try_it])["is_default"], true);
    assert_eq!(other.json(&["vim", "show", &other_id])["is_default"], true);

    // A refused package says why in `openstack vnf package show`.
    let created = demo.json(&["vnf", "package", "create"]);
    let refused = created["ID"].as_str().expect("ID").to_owned();
    let zip = write(&s, "not-a-package.zip", "this is not a zip archive");
    demo.ok(&["vnf", "package", "upload", "--path", &zip, &refused]);
    let shown = crate::openstack_client::wait_for("the package to be refused", || {
        let shown = demo.json(&["vnf", "package", "show", &refused]);
        (shown["Onboarding State"] == "ERROR").then_some(shown)
    });
    // python-tackerclient lists the member but prints it empty (it reads only the mixed-case
    // members it knows); the v1 document and `vnfm pkg show` carry the reason.
    assert!(
        shown.get("onboardingFailureDetails").is_some(),
        "the v1 package shows its failure details: {shown}"
    );
    let ours = vnfm_json(&s, &["pkg", "show", &refused]);
    let detail = ours["onboardingFailureDetails"]["detail"]
        .as_str()
        .unwrap_or_default();
    assert!(!detail.is_empty(), "{ours}");

    // Tacker's default-VIM flow: `{"flavourId": "simple"}` runs on demo's default VIM. The
    // first attempt fails (the test VIM fails on request) and is rolled back...
    let (_, vnfd) = onboard(&s);
    let lcm = Lcm::new(demo, "2");
    let created = lcm.json(&["vnflcm", "create", &vnfd, "--name", "default-vim"]);
    let vnf = created["ID"].as_str().expect("ID").to_owned();
    let failing = lcm.file(
        "instantiate-default.json",
        &json!({"flavourId": "simple", "additionalParams": {"testVim": {"failures": 100}}}),
    );
    lcm.ok(&["vnflcm", "instantiate", &vnf, &failing]);
    let op = lcm.next_op(&vnf, "INSTANTIATE");
    assert_eq!(op["Operation State"], "FAILED_TEMP", "{op}");
    let op_id = op["ID"].as_str().expect("ID").to_owned();
    assert!(
        op.to_string().contains(&try_it),
        "the occurrence names the default VIM {try_it}: {op}"
    );
    lcm.ok(&["vnflcm", "op", "rollback", &op_id]);
    let rolled = lcm.settled(&op_id);
    assert_eq!(rolled["Operation State"], "ROLLED_BACK", "{rolled}");
    // ... then an INSTANTIATE naming another VIM, with Tacker's `"default": null`, runs on that
    // VIM alone.
    let second = vnfm_json(
        &s,
        &[
            "vim",
            "register",
            "-f",
            &write(
                &s,
                "second-vim.json",
                r#"{"name": "second", "vimType": "TEST.NOOP.V_1"}"#,
            ),
        ],
    );
    let second_id = second["id"].as_str().expect("id").to_owned();
    let named = lcm.file(
        "instantiate-named.json",
        &json!({"flavourId": "simple", "vimConnectionInfo": {
            "default": null,
            "vim1": {"vimId": second_id, "vimType": "TEST.NOOP.V_1"}}}),
    );
    lcm.ok(&["vnflcm", "instantiate", &vnf, &named]);
    let op = lcm.next_op(&vnf, "INSTANTIATE");
    assert_eq!(op["Operation State"], "COMPLETED", "{op}");
    let shown = lcm.json(&["vnflcm", "show", &vnf]);
    let text = shown.to_string();
    assert!(text.contains(&second_id), "{shown}");
    assert!(
        !text.contains(&try_it),
        "the failed default is gone: {shown}"
    );
}
