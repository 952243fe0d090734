//! Packages, VIMs and VNF lifecycles through `vnfm`: waiting, failures, progress, exporting.

use super::*;

#[vnfm_test_env::needs(corpus)]
#[test]
fn packages_vims_and_a_vnf_lifecycle_with_wait() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(&dir.path().join("data"));
    let c = Client::new(&server);

    // Packages: upload a corpus directory (zipped by the client), list, show as YAML.
    let (pkg_id, vnfd_id) = onboard(&c);
    let table = c.ok(&["pkg", "list"]);
    let mut lines = table.lines();
    let header = lines.next().expect("header");
    assert!(
        header.starts_with("ID") && header.contains("ONBOARDING"),
        "{table}"
    );
    assert!(
        lines.any(|l| l.starts_with(&pkg_id) && l.contains("ONBOARDED") && l.contains("ENABLED")),
        "{table}"
    );
    let yaml = c.ok(&["pkg", "show", &pkg_id, "-o", "yaml"]);
    let shown: Value = serde_saphyr::from_str(&yaml).expect("YAML");
    assert_eq!(shown["vnfdId"], vnfd_id.as_str());
    let listed = c.json(&["pkg", "list"]);
    assert_eq!(listed.as_array().map(Vec::len), Some(1));

    // VIMs from Tacker vim-config.yaml files: OpenStack from the corpus, Kubernetes with a
    // bearer token and CA certificate as Tacker writes it.
    const TOKEN: &str = "eyJhbGciOiJSUzI1NiIsImtpZCI6IiJ9.secret-token-4711";
    let os = c.json(&[
        "vim",
        "register",
        "--type",
        "openstack",
        "--from-file",
        &corpus("tacker/doc-v2-getting-started/vim_config.yaml"),
        "--name",
        "devstack",
    ]);
    assert_eq!(os["vimType"], "ETSINFV.OPENSTACK_KEYSTONE.V_3");
    assert_eq!(
        os["interfaceInfo"]["endpoint"],
        "http://192.168.56.10/identity/v3"
    );
    assert_eq!(os["accessInfo"]["password"], "***");
    assert_eq!(os["accessInfo"]["project"], "nfv");
    let k8s_file = dir.path().join("vim-k8s.yaml");
    std::fs::write(
        &k8s_file,
        format!(
            "auth_url: \"https://192.168.33.100:6443\"\nbearer_token: \"{TOKEN}\"\nssl_ca_cert: \"{}\"\nproject_name: \"default\"\ntype: \"kubernetes\"\n",
            // As Tacker's guide lays it out: the certificate's lines unindented in a quoted
            // scalar, which YAML folds into one line.
            vnfm_test_env::CA_PEM.trim_end()
        ),
    )
    .expect("write");
    let k8s = c.json(&[
        "vim",
        "register",
        "--type",
        "kubernetes",
        "--from-file",
        k8s_file.to_str().expect("path"),
    ]);
    assert_eq!(k8s["vimType"], "ETSINFV.KUBERNETES.V_1");
    assert_eq!(k8s["name"], "vim-k8s");
    assert_eq!(k8s["accessInfo"]["bearer_token"], "***");
    assert_eq!(k8s["accessInfo"]["namespace"], "default");
    assert_eq!(k8s["interfaceInfo"]["ssl_ca_cert"], vnfm_test_env::CA_PEM);
    let k8s_id = k8s["id"].as_str().expect("id").to_owned();
    let shown = c.ok(&["vim", "show", &k8s_id]);
    assert!(shown.contains("https://192.168.33.100:6443"), "{shown}");
    assert!(
        !shown.contains(TOKEN) && !shown.contains("devstack"),
        "{shown}"
    );
    let vims = c.json(&["vim", "list"]);
    assert_eq!(vims.as_array().map(Vec::len), Some(2));
    assert!(!vims.to_string().contains(TOKEN));
    c.ok(&["vim", "delete", &k8s_id]);
    assert_eq!(c.json(&["vim", "list"]).as_array().map(Vec::len), Some(1));

    // The VNF: create, instantiate on the test VIM with --wait (plain progress lines: stdout
    // is a pipe), scale out, heal a VNFC, terminate, delete.
    let vnf = c.json(&["vnf", "create", "--vnfd-id", &vnfd_id, "--name", "demo"]);
    assert_eq!(vnf["instantiationState"], "NOT_INSTANTIATED");
    let id = vnf["id"].as_str().expect("id").to_owned();
    // A VIM type no driver of the server serves: 422 naming it, and the instance is unchanged.
    let out = c.run(&[
        "vnf",
        "instantiate",
        &id,
        "--flavour",
        "simple",
        "--vim-type",
        "ACME.UNKNOWN.V_1",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("422") && err.contains("ACME.UNKNOWN.V_1"),
        "{err}"
    );
    // --preview: the steps with their driver, and nothing started.
    let preview = c.ok(&[
        "vnf",
        "instantiate",
        &id,
        "--flavour",
        "simple",
        "--vim-type",
        "TEST.NOOP.V_1",
        "--preview",
    ]);
    assert!(
        preview.starts_with(&format!("INSTANTIATE of {id}"))
            && preview.contains("infra:instantiate  driver "),
        "{preview}"
    );
    let preview = c.json(&[
        "vnf",
        "instantiate",
        &id,
        "--flavour",
        "simple",
        "--vim-type",
        "TEST.NOOP.V_1",
        "--preview",
    ]);
    assert_eq!(preview["operation"], "INSTANTIATE", "{preview:#}");
    assert_eq!(c.json(&["op", "list", "--vnf", &id]), json!([]));
    let out = c.ok(&[
        "vnf",
        "instantiate",
        &id,
        "--flavour",
        "simple",
        "--vim-type",
        "TEST.NOOP.V_1",
        "--wait",
    ]);
    let last = out.lines().last().expect("output");
    assert!(
        last.starts_with("INSTANTIATE ")
            && last.contains(" COMPLETED ")
            && last.contains(" after "),
        "{out}"
    );
    assert!(!out.contains('\r') && !out.contains('\u{1b}'), "{out:?}");
    let before = c.json(&["vnf", "show", &id]);
    assert_eq!(before["instantiationState"], "INSTANTIATED");
    assert_eq!(before["vnfInstanceName"], "demo");
    let n = vnfc_count(&before);
    assert!(n > 0, "{before:#}");

    // Each step of this scale takes a second on the test VIM, so the plain progress lines
    // show the running step and its position in the plan.
    let out = c.ok(&[
        "vnf",
        "scale",
        &id,
        "--aspect",
        "VDU1_scale",
        "--steps",
        "1",
        "--param",
        r#"testVim={"delaySeconds": 1}"#,
        "--wait",
    ]);
    assert!(
        out.lines().any(|l| l.contains("SCALE ")
            && l.contains(" PROCESSING")
            && l.contains(" infra:scale")
            && l.contains(" step ")),
        "{out}"
    );
    let last = out.lines().last().expect("output");
    assert!(
        last.starts_with("SCALE ") && last.contains(" COMPLETED "),
        "{out}"
    );
    let after = c.json(&["vnf", "show", &id]);
    assert_eq!(vnfc_count(&after), n + 1);
    assert_eq!(
        after["instantiatedVnfInfo"]["scaleStatus"][0]["scaleLevel"],
        1
    );
    let table = c.ok(&["vnf", "show", &id]);
    assert!(
        table.contains("Scale:") && table.contains("VDU1_scale=1"),
        "{table}"
    );

    let vnfc = after["instantiatedVnfInfo"]["vnfcInfo"][0]["id"]
        .as_str()
        .expect("vnfc id")
        .to_owned();
    let occ = c.json(&[
        "vnf", "heal", &id, "--vnfc", &vnfc, "--cause", "cli test", "--wait",
    ]);
    assert_eq!(occ["operationState"], "COMPLETED");
    assert_eq!(occ["operationParams"]["cause"], "cli test");

    // Without --wait the op-occ id is printed and can be followed with `op show`.
    let started = c.json(&[
        "vnf",
        "scale",
        &id,
        "--type",
        "in",
        "--aspect",
        "VDU1_scale",
    ]);
    let op = started["vnfLcmOpOccId"].as_str().expect("op id").to_owned();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let o = c.json(&["op", "show", &op]);
        if o["operationState"] == "COMPLETED" {
            break;
        }
        assert!(Instant::now() < deadline, "{o:#}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let ops = c.json(&["op", "list", "--vnf", &id]);
    let ops = ops.as_array().expect("array");
    assert_eq!(ops.len(), 4);
    assert!(ops.iter().all(|o| o["operationState"] == "COMPLETED"));
    let listed = c.ok(&["op", "list", "--vnf", &id, "--operation", "HEAL"]);
    assert_eq!(listed.lines().count(), 2, "{listed}");

    let out = c.ok(&["vnf", "terminate", &id, "--graceful-timeout", "1", "--wait"]);
    assert!(
        out.contains("TERMINATE") && out.contains("COMPLETED"),
        "{out}"
    );
    c.ok(&["vnf", "delete", &id]);
    let gone = c.run(&["vnf", "show", &id]);
    assert_eq!(gone.status.code(), Some(1));
    assert!(text(&gone.stderr).contains("404"), "{}", text(&gone.stderr));

    // The package can go once disabled (--force disables it first).
    c.ok(&["pkg", "delete", &pkg_id, "--force"]);
    assert_eq!(c.json(&["pkg", "list"]).as_array().map(Vec::len), Some(0));
}

/// A scale that the VIM cannot carry out: the in-memory test VIM forgets its resources when
/// the server restarts, so the next operation on the instance fails in the driver. `--wait`
/// shows the error's title and detail and exits 1; `op rollback`, `op fail` resolve it.
#[vnfm_test_env::needs(corpus)]
#[test]
fn forced_failure_shows_the_error_and_exit_code() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let server = Server::start(&data);
    let c = Client::new(&server);
    let (_, vnfd_id) = onboard(&c);
    let vnf = c.json(&["vnf", "create", "--vnfd-id", &vnfd_id]);
    let id = vnf["id"].as_str().expect("id").to_owned();
    let request = dir.path().join("instantiate.json");
    std::fs::write(
        &request,
        r#"{"flavourId": "simple", "vimConnectionInfo": {"vim1": {"vimType": "TEST.NOOP.V_1"}}}"#,
    )
    .expect("write");
    c.ok(&[
        "vnf",
        "instantiate",
        &id,
        "--request",
        request.to_str().expect("path"),
        "--wait",
    ]);
    server.stop();
    let server = Server::start(&data);
    let c = Client {
        base: server.base.clone(),
        ..c
    };

    let out = c.run(&[
        "vnf",
        "scale",
        &id,
        "--aspect",
        "VDU1_scale",
        "--wait",
        "-o",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let occ: Value = serde_json::from_slice(&out.stdout).expect("the final op-occ as JSON");
    assert_eq!(occ["operationState"], "FAILED_TEMP", "{occ:#}");
    let title = occ["error"]["title"].as_str().expect("error title");
    let detail = occ["error"]["detail"].as_str().expect("error detail");
    assert!(detail.contains("holds no resources"), "{detail}");
    let err = text(&out.stderr);
    assert!(err.contains("ended in FAILED_TEMP"), "{err}");
    assert!(err.contains(title) && err.contains(detail), "{err}");
    let op = occ["id"].as_str().expect("id").to_owned();

    let failed = c.json(&["op", "list", "--state", "FAILED_TEMP"]);
    assert_eq!(failed[0]["id"], op.as_str());
    let shown = c.ok(&["op", "show", &op]);
    assert!(
        shown.contains("State:") && shown.contains("FAILED_TEMP"),
        "{shown}"
    );
    assert!(
        shown.contains("Detail:") && shown.contains("holds no resources"),
        "{shown}"
    );

    // The instance is busy until the occurrence is resolved: the server's 409 is shown.
    let busy = c.run(&["vnf", "heal", &id]);
    assert_eq!(busy.status.code(), Some(1));
    let err = text(&busy.stderr);
    assert!(err.contains("409") && err.contains(&op), "{err}");

    let rolled = c.run(&["op", "rollback", &op, "--wait"]);
    let code = rolled.status.code();
    let out = text(&rolled.stdout);
    let final_state = c.json(&["op", "show", &op])["operationState"]
        .as_str()
        .expect("state")
        .to_owned();
    match final_state.as_str() {
        "ROLLED_BACK" => {
            assert_eq!(code, Some(0), "{out}");
            assert!(out.contains("ROLLED_BACK"), "{out}");
        }
        "FAILED_TEMP" => {
            assert_eq!(code, Some(1), "{out}");
            let failed = c.json(&["op", "fail", &op]);
            assert_eq!(failed["operationState"], "FAILED");
        }
        other => panic!("rollback ended in {other}: {out}"),
    }
    assert!(c.run(&["op", "show", &op]).status.success());
}

/// Regression (issue 25, item 11): the test VIM keeps its resources in memory, so after a
/// restart a scale failed with a bare "holds no resources". The error now says why and what
/// to do, and that way out works: fail the occurrence, terminate, instantiate again.
#[vnfm_test_env::needs(corpus)]
#[test]
fn test_vim_loses_its_resources_on_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let server = Server::start(&data);
    let c = Client::new(&server);
    let (_, vnfd_id) = onboard(&c);
    let id = c.json(&["vnf", "create", "--vnfd-id", &vnfd_id])["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let instantiate = [
        "vnf",
        "instantiate",
        &id,
        "--flavour",
        "simple",
        "--vim-type",
        "vim1=TEST.NOOP.V_1",
        "--wait",
    ];
    c.ok(&instantiate);
    server.stop();
    let server = Server::start(&data);
    let c = Client {
        base: server.base.clone(),
        ..c
    };
    let out = c.run(&[
        "vnf",
        "scale",
        &id,
        "--aspect",
        "VDU1_scale",
        "--wait",
        "-o",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let occ: Value = serde_json::from_slice(&out.stdout).expect("the final op-occ as JSON");
    assert_eq!(occ["operationState"], "FAILED_TEMP", "{occ:#}");
    assert_eq!(occ["error"]["retryable"], false, "{occ:#}");
    let detail = occ["error"]["detail"].as_str().expect("detail");
    assert!(
        detail.contains("lost when the server restarted")
            && detail.contains(&id)
            && detail.contains("terminate the instance and instantiate it again"),
        "{detail}"
    );
    let op = occ["id"].as_str().expect("id");
    assert_eq!(c.json(&["op", "fail", op])["operationState"], "FAILED");
    c.ok(&["vnf", "terminate", &id, "--wait"]);
    c.ok(&instantiate);
    let out = c.run(&["vnf", "scale", &id, "--aspect", "VDU1_scale", "--wait"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

/// Through a pseudo-terminal (`script`), `--wait` draws a spinner line that is redrawn in
/// place and ends with the final state on a clean line. The server is paused (SIGSTOP) for
/// a moment while the request is in flight, so the display must keep updating by itself.
#[cfg(unix)]
#[vnfm_test_env::needs(corpus)]
#[test]
fn progress_display_in_a_terminal() {
    // `script` is util-linux's (Debian's bsdutils, an essential package): always there.
    Command::new("script")
        .arg("--version")
        .output()
        .expect("`script` runs (util-linux; Debian package bsdutils)");
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(&dir.path().join("data"));
    let c = Client::new(&server);
    let (_, vnfd_id) = onboard(&c);
    let vnf = c.json(&["vnf", "create", "--vnfd-id", &vnfd_id]);
    let id = vnf["id"].as_str().expect("id").to_owned();
    // Get a token first, so the pause below holds the task request itself.
    c.ok(&["vnf", "list"]);

    let cmd =
        format!("{BIN} vnf instantiate {id} --flavour simple --vim-type TEST.NOOP.V_1 --wait");
    let pid = server.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-STOP", &pid])
            .status()
            .expect("kill")
            .success()
    );
    let mut script = Command::new("script");
    script.args(["-q", "-e", "-c", &cmd, "/dev/null"]);
    let child = c
        .environment(script)
        .env("TERM", "xterm")
        .env("COLUMNS", "120")
        .env("LINES", "40")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("script runs");
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        Command::new("kill")
            .args(["-CONT", &pid])
            .status()
            .expect("kill")
            .success()
    );
    let out = child.wait_with_output().expect("script ends");
    let raw = text(&out.stdout);
    assert!(out.status.success(), "{raw:?}\n{}", text(&out.stderr));

    // Frames: each redraw clears the line (ESC [2K or a carriage return).
    let frames: Vec<&str> = raw
        .split(['\r', '\n'])
        .map(|f| f.trim_start_matches("\u{1b}[2K"))
        .filter(|f| !f.trim().is_empty())
        .collect();
    // The spinner turns and the elapsed time advances while the server is paused.
    let waiting: std::collections::HashSet<&str> = frames
        .iter()
        .copied()
        .filter(|f| f.contains("INSTANTIATE") && f.contains("submitting"))
        .collect();
    assert!(
        waiting.len() >= 3,
        "the display did not update while waiting: {raw:?}"
    );
    let last = frames.last().expect("a final frame");
    assert!(
        last.starts_with("INSTANTIATE ")
            && last.contains(" COMPLETED ")
            && last.contains(" after "),
        "{raw:?}"
    );
    // It ends there, on a line of its own.
    assert!(raw.ends_with("\r\n"), "{raw:?}");
    assert!(
        raw.trim_end_matches(['\r', '\n']).ends_with(last),
        "{raw:?}"
    );
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn export_streams_every_instance_whole_across_pages() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(&dir.path().join("data"));
    let c = Client::new(&server);
    let (_, vnfd_id) = onboard(&c);
    // 230 instances: three pages of the server's 100.
    const COUNT: usize = 230;
    std::thread::scope(|s| {
        for part in 0..4 {
            let (c, vnfd_id) = (&c, &vnfd_id);
            s.spawn(move || {
                for n in (part..COUNT).step_by(4) {
                    let name = format!("exp-{n:03}");
                    c.ok(&[
                        "vnf",
                        "create",
                        "--vnfd-id",
                        vnfd_id,
                        "--name",
                        &name,
                        "--metadata",
                        &format!("n={n}"),
                    ]);
                }
            });
        }
    });

    let lines = |text: &str| -> Vec<Value> {
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
            .collect()
    };
    // Standard output: one whole document per line, each instance once.
    let all = lines(&c.ok(&["vnf", "export"]));
    assert_eq!(all.len(), COUNT);
    let mut names: Vec<&str> = all
        .iter()
        .map(|v| v["vnfInstanceName"].as_str().expect("name"))
        .collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), COUNT, "every instance exactly once");
    // Whole documents: `metadata` is left out of a default list page, not of an export.
    assert!(
        all.iter().all(|v| v["metadata"]["n"].is_number()),
        "{:#}",
        all[0]
    );

    // A filter, into a file that appears only when complete.
    let file = dir.path().join("export.ndjson");
    let out = c.run(&[
        "vnf",
        "export",
        "--filter",
        "(cont,vnfInstanceName,exp-1)",
        "--file",
        file.to_str().expect("path"),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("exported 100 VNF instances"),
        "{}",
        text(&out.stderr)
    );
    let exported = lines(&std::fs::read_to_string(&file).expect("export file"));
    assert_eq!(exported.len(), 100);
    assert!(exported.iter().all(|v| {
        v["vnfInstanceName"]
            .as_str()
            .expect("name")
            .starts_with("exp-1")
    }));
    assert!(!dir.path().join("export.ndjson.partial").exists());

    // A refused request leaves no file behind and says why.
    let bad = dir.path().join("bad.ndjson");
    let out = c.run(&[
        "vnf",
        "export",
        "--filter",
        "(eq,noSuchAttribute",
        "--file",
        bad.to_str().expect("path"),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("filter"),
        "{}",
        text(&out.stderr)
    );
    assert!(!bad.exists() && !dir.path().join("bad.ndjson.partial").exists());

    // A reader that goes away after the first line ends the export quietly.
    let mut child = c
        .command(&["vnf", "export"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("export starts");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("first line");
    assert!(first.starts_with('{'), "{first}");
    let out = child.wait_with_output().expect("export ends");
    assert!(out.status.success(), "{}", text(&out.stderr));
}
