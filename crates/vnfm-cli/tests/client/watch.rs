//! `vnfm watch` (polling and by notification), subscriptions made by hand, and the other
//! tasks on one instance: start, scale to a level, modify, change of external connectivity,
//! cancel, change of package, and the requests the server refuses.

use super::*;

/// Reads JSON lines from a watcher until `op` has been reported in each of `states`;
/// returns them all.
fn read_events_until(
    lines: &mut impl Iterator<Item = std::io::Result<String>>,
    op: &str,
    states: &[&str],
) -> Vec<Value> {
    let mut events: Vec<Value> = Vec::new();
    for line in lines {
        let line = line.expect("watch output");
        let e: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
        events.push(e);
        let seen = |s: &str| {
            events
                .iter()
                .any(|e| e["vnfLcmOpOccId"] == op && e["to"] == s)
        };
        if states.iter().all(|s| seen(s)) {
            return events;
        }
    }
    panic!("the watch ended before {op} was reported in {states:?}: {events:#?}");
}

/// Starts `vnfm op watch ARGS -o json` and waits for its "watching" line on stderr.
fn start_watch(
    c: &Client,
    args: &[&str],
) -> (Child, std::io::Lines<BufReader<std::process::ChildStdout>>) {
    let mut all = vec!["op", "watch"];
    all.extend(args);
    all.extend(["-o", "json"]);
    let mut child = c
        .command(&all)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("watch starts");
    let stderr = child.stderr.take().expect("stderr");
    let mut err_lines = BufReader::new(stderr).lines();
    let first = err_lines
        .next()
        .expect("watch says it is watching")
        .expect("text");
    assert!(first.starts_with("watching "), "{first}");
    std::thread::spawn(move || for _ in err_lines {});
    let stdout = child.stdout.take().expect("stdout");
    (child, BufReader::new(stdout).lines())
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn watch_subscriptions_and_more_tasks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(&dir.path().join("data"));
    let c = Client::new(&server);
    let (_, vnfd_id) = onboard(&c);
    let id = c.json(&["vnf", "create", "--vnfd-id", &vnfd_id])["id"]
        .as_str()
        .expect("id")
        .to_owned();

    // Polling watch: the instantiation shows up as a new occurrence and reaches COMPLETED.
    let (mut watch, mut lines) = start_watch(&c, &["--vnf", &id, "--max-interval", "0.5"]);
    let started = c.json(&[
        "vnf",
        "instantiate",
        &id,
        "--flavour",
        "simple",
        "--vim-type",
        "vim1=TEST.NOOP.V_1",
    ]);
    let op = started["vnfLcmOpOccId"].as_str().expect("op").to_owned();
    let events = read_events_until(&mut lines, &op, &["COMPLETED"]);
    assert_eq!(events[0]["from"], Value::Null, "{events:#?}");
    assert!(
        events
            .iter()
            .all(|e| e["vnfInstanceId"] == id.as_str() && e["operation"] == "INSTANTIATE")
    );
    let _ = watch.kill();
    let _ = watch.wait();

    // Notification watch: a subscription with a local callback, deleted on Ctrl-C. The
    // server routes notifications through a subscription cache that lives one second, so a
    // subscription made right after the last notification is not seen before then.
    std::thread::sleep(Duration::from_millis(1200));
    let (watch, mut lines) = start_watch(&c, &["--vnf", &id, "--notify", "127.0.0.1:0"]);
    let subs = c.json(&["sub", "list"]);
    assert_eq!(subs.as_array().map(Vec::len), Some(1), "{subs:#}");
    let occ = c.json(&[
        "vnf",
        "operate",
        &id,
        "--state",
        "stopped",
        "--stop-type",
        "forceful",
        "--wait",
    ]);
    assert_eq!(occ["operationState"], "COMPLETED");
    let op = occ["id"].as_str().expect("id").to_owned();
    // The notifications of one instance arrive in order, none of them late.
    let events = read_events_until(&mut lines, &op, &["STARTING", "PROCESSING", "COMPLETED"]);
    let mine: Vec<&Value> = events
        .iter()
        .filter(|e| e["vnfLcmOpOccId"] == op.as_str())
        .collect();
    let states: Vec<&str> = mine.iter().filter_map(|e| e["to"].as_str()).collect();
    assert_eq!(
        states,
        ["STARTING", "PROCESSING", "COMPLETED"],
        "{events:#?}"
    );
    assert!(mine.iter().all(|e| e["late"] == false), "{events:#?}");
    let pid = watch.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .expect("kill")
            .success()
    );
    let out = watch.wait_with_output().expect("watch ends");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(c.json(&["sub", "list"]).as_array().map(Vec::len), Some(0));
    let shown = c.json(&["vnf", "show", &id]);
    assert_eq!(shown["instantiatedVnfInfo"]["vnfState"], "STOPPED");

    // Subscriptions by hand: create, the same again (another one: the v2 API creates every
    // subscription, as Tacker's does), show, delete.
    let args = [
        "sub",
        "create",
        "--callback",
        "http://127.0.0.1:9/cb",
        "--vnf",
        &id,
        "--type",
        "VnfLcmOperationOccurrenceNotification",
    ];
    let sub = c.json(&args);
    let sub_id = sub["id"].as_str().expect("id").to_owned();
    assert_eq!(
        sub["filter"]["vnfInstanceSubscriptionFilter"]["vnfInstanceIds"][0],
        id.as_str()
    );
    let again = c.json(&args)["id"].as_str().expect("id").to_owned();
    assert_ne!(again, sub_id);
    let table = c.ok(&["sub", "show", &sub_id]);
    // The labels are aligned to the longest one shown (`Verbosity:` since v2 shows its
    // default).
    assert!(
        table.lines().any(|l| l
            .split_whitespace()
            .eq(["Callback:", "http://127.0.0.1:9/cb"])),
        "{table}"
    );
    let yaml = c.ok(&["sub", "list", "-o", "yaml"]);
    let listed: Value = serde_saphyr::from_str(&yaml).expect("YAML");
    let mut listed: Vec<&str> = listed
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|s| s["id"].as_str())
        .collect();
    listed.sort_unstable();
    let mut both = [sub_id.as_str(), again.as_str()];
    both.sort_unstable();
    assert_eq!(listed, both);
    c.ok(&["sub", "delete", &sub_id]);
    c.ok(&["sub", "delete", &again]);
    assert_eq!(c.json(&["sub", "list"]).as_array().map(Vec::len), Some(0));

    // More tasks: start again, scale to a level, modify the name and metadata.
    c.ok(&["vnf", "operate", &id, "--state", "started", "--wait"]);
    let occ = c.json(&[
        "vnf",
        "scale-to-level",
        &id,
        "--aspect-level",
        "VDU1_scale=2",
        "--wait",
    ]);
    assert_eq!(occ["operationState"], "COMPLETED");
    let v = c.json(&["vnf", "show", &id]);
    assert_eq!(v["instantiatedVnfInfo"]["scaleStatus"][0]["scaleLevel"], 2);
    let occ = c.json(&[
        "vnf",
        "modify",
        &id,
        "--name",
        "renamed",
        "--metadata",
        "tier=\"gold\"",
        "--wait",
    ]);
    assert_eq!(occ["operation"], "MODIFY_INFO");
    let v = c.json(&["vnf", "show", &id]);
    assert_eq!(v["vnfInstanceName"], "renamed");
    assert_eq!(v["metadata"]["tier"], "gold");
    let listed: Value =
        serde_saphyr::from_str(&c.ok(&["vnf", "list", "-o", "yaml"])).expect("YAML");
    assert_eq!(listed[0]["vnfInstanceName"], "renamed");

    // Change external connectivity from a request file.
    let request = dir.path().join("change-ext-conn.json");
    std::fs::write(
        &request,
        json!({"extVirtualLinks": [{"id": "ext-net", "resourceId": "net-1",
            "extCps": [{"cpdId": "VDU1_CP1", "cpConfig": {"c1": {"createExtLinkPort": true}}}]}]})
        .to_string(),
    )
    .expect("request file");
    let occ = c.json(&[
        "vnf",
        "change-ext-conn",
        &id,
        "--request",
        request.to_str().expect("path"),
        "--wait",
    ]);
    assert_eq!(occ["operation"], "CHANGE_EXT_CONN", "{occ:#}");
    assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");
    assert_eq!(occ["changedExtConnectivity"][0]["id"], "ext-net", "{occ:#}");
    let v = c.json(&["vnf", "show", &id]);
    assert!(
        v["instantiatedVnfInfo"]["extCpInfo"]
            .as_array()
            .expect("extCpInfo")
            .iter()
            .any(|cp| cp["cpdId"] == "VDU1_CP1"),
        "{v:#}"
    );

    // Cancel a slow operation while it runs: a forceful `op cancel --wait` cuts the running
    // step short and exits 0 once the occurrence stops in FAILED_TEMP; `op fail` ends it.
    let started = c.json(&[
        "vnf",
        "scale-to-level",
        &id,
        "--aspect-level",
        "VDU1_scale=1",
        "--param",
        r#"testVim={"delaySeconds": 20}"#,
    ]);
    let op = started["vnfLcmOpOccId"].as_str().expect("op").to_owned();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while c.json(&["op", "show", &op])["operationState"] != "PROCESSING" {
        assert!(std::time::Instant::now() < deadline, "never PROCESSING");
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = c.run(&["op", "cancel", &op, "--mode", "forceful", "--wait"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let last = text(&out.stdout);
    assert!(
        last.lines()
            .last()
            .is_some_and(|l| l.starts_with("SCALE_TO_LEVEL ") && l.contains(" FAILED_TEMP")),
        "{last}"
    );
    let cancelled = c.json(&["op", "show", &op]);
    assert_eq!(cancelled["operationState"], "FAILED_TEMP");
    let failed = c.json(&["op", "fail", &op]);
    assert_eq!(failed["operationState"], "FAILED", "{failed:#}");

    // Change the current package to another onboarded VNFD with the same flavour: a copy of
    // the corpus package under a new descriptor id (Tacker's samples share one).
    let copy = dir.path().join("next-package");
    assert!(
        Command::new("cp")
            .arg("-r")
            .arg(corpus(PACKAGE))
            .arg(&copy)
            .status()
            .expect("cp")
            .success()
    );
    for entry in std::fs::read_dir(copy.join("Definitions")).expect("Definitions") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("VNFD file");
        let renamed = text.replace(
            "b1bb0ce7-ebca-4fa7-95ed-4840d7000000",
            "b1bb0ce7-ebca-4fa7-95ed-4840d7000001",
        );
        std::fs::write(&path, renamed).expect("write");
    }
    let target = c.json(&["pkg", "upload", copy.to_str().expect("path")]);
    let target_vnfd = target["vnfdId"].as_str().expect("vnfdId").to_owned();
    assert_ne!(target_vnfd, vnfd_id);
    let occ = c.json(&[
        "vnf",
        "change-pkg",
        &id,
        "--vnfd-id",
        &target_vnfd,
        "--wait",
    ]);
    assert_eq!(occ["operation"], "CHANGE_VNFPKG", "{occ:#}");
    assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");
    assert_eq!(
        c.json(&["vnf", "show", &id])["vnfdId"],
        target_vnfd.as_str()
    );

    // Requests the server refuses show its ProblemDetails and exit 1; a task missing its
    // request is a usage error.
    let out = c.run(&["vnf", "change-flavour", &id, "--flavour", "no-such-flavour"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("no-such-flavour"),
        "{}",
        text(&out.stderr)
    );
    let out = c.run(&[
        "vnf",
        "change-pkg",
        &id,
        "--vnfd-id",
        "no-such-vnfd",
        "--wait",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let out = c.run(&["vnf", "change-ext-conn", &id]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("extVirtualLinks"));
}
