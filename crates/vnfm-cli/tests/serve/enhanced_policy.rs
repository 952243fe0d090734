//! `vnfm serve --enhanced-policy FILE` (issue 67): Tacker's sample enhanced policy file starts
//! the server; a file with a malformed rule stops it, naming the file, the line and the rule.

use super::*;

#[vnfm_test_env::needs(tacker_source)]
#[test]
fn serve_takes_tackers_sample_and_refuses_a_malformed_rule_saying_where() {
    let dir = tempfile::tempdir().unwrap();
    let sample = vnfm_test_env::tacker_source("etc/tacker/enhanced_tacker_policy.yaml.sample");
    let server = start_with(
        dir.path(),
        &["--enhanced-policy", sample.to_str().unwrap()],
        None,
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
