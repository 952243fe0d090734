//! `vnfm serve --enhanced-policy FILE` (issue 67): Tacker's sample enhanced policy file starts
//! the server; a file with a malformed rule stops it, naming the file, the line and the rule;
//! the file edited while the server runs is put in force, a broken edit refused and logged.

use super::*;

#[vnfm_test_env::needs(tacker_source)]
#[test]
fn serve_takes_tackers_sample_and_refuses_a_malformed_rule_saying_where() {
    let dir = tempfile::tempdir().unwrap();
    let sample = vnfm_test_env::tacker_source("etc/tacker/enhanced_tacker_policy.yaml.sample");
    let policy = dir.path().join("enhanced_tacker_policy.yaml");
    std::fs::copy(&sample, &policy).unwrap();
    let log = dir.path().join("serve.log");
    let server = start_with(
        dir.path(),
        &["--enhanced-policy", policy.to_str().unwrap()],
        Some(&log),
    );
    let addr = server.base.trim_start_matches("http://").to_owned();
    let mut conn = std::net::TcpStream::connect(&addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    conn.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    // Edited while the server runs: a broken edit is refused, saying where; a good one is
    // put in force. The server reads the file every 2 s.
    let text = std::fs::read_to_string(&sample).unwrap();
    std::fs::write(&policy, format!("{text}\n\"broken_rule\": \"role:x or\"\n")).unwrap();
    let refused = format!("{}:", policy.display());
    wait_for_log(&log, |l| {
        l.contains("is refused") && l.contains(&refused) && l.contains("rule `broken_rule`")
    });
    std::fs::write(&policy, format!("{text}\n\"extra_rule\": \"role:admin\"\n")).unwrap();
    wait_for_log(&log, |l| l.contains("the edited policy file is in force"));
    drop(server);

    let broken = dir.path().join("policy.yaml");
    std::fs::write(
        &broken,
        "\"context_is_admin\": \"role:admin\"\n\"get_vim\": \"area:%(area)s or\"\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_vnfm"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path().join("other"))
        .arg("--enhanced-policy")
        .arg(&broken)
        .output()
        .expect("vnfm serve runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let at = format!("{}:2: rule `get_vim`", broken.display());
    assert!(stderr.contains(&at), "{stderr}");
}

/// Waits up to 30 s for a line of the log file `log` that `wanted` accepts.
fn wait_for_log(log: &std::path::Path, wanted: impl Fn(&str) -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.lines().any(&wanted) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no such line in the server's log:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}
