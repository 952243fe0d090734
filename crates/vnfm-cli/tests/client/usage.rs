//! How `vnfm` is used: exit codes, messages, configuration, completions, HTTPS.

use super::*;

#[test]
fn errors_usage_and_connection_exit_codes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(&dir.path().join("data"));
    let c = Client::new(&server);

    // The server's ProblemDetails: status, title and detail.
    let out = c.run(&["vnf", "create", "--vnfd-id", "no-such-vnfd"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("422") && err.contains("no onboarded VNF package has vnfdId no-such-vnfd"),
        "{err}"
    );

    // A package the server refuses: onboarding ends in ERROR, the error message lists the
    // diagnostics.
    let bad = dir.path().join("bad-package");
    std::fs::create_dir_all(bad.join("TOSCA-Metadata")).expect("mkdir");
    std::fs::write(
        bad.join("TOSCA-Metadata/TOSCA.meta"),
        "TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-By: test\nEntry-Definitions: Definitions/missing.yaml\n",
    )
    .expect("write");
    let out = c.run(&["pkg", "upload", bad.to_str().expect("path")]);
    assert_eq!(out.status.code(), Some(1));
    let shown = text(&out.stdout);
    assert!(
        shown.contains("Onboarding:") && shown.contains("ERROR"),
        "{shown}"
    );
    let err = text(&out.stderr);
    assert!(
        err.contains("was not onboarded") && err.contains("missing.yaml"),
        "{err}"
    );

    // Usage: a missing required field, an unreadable request file.
    let out = c.run(&["vnf", "scale", "x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--aspect"));
    let out = c.run(&["vnf", "instantiate", "x", "--request", "/nonexistent.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("/nonexistent.json"));

    // Nothing listens there: exit 3 with the URL.
    let out = c
        .command(&["vnf", "list"])
        .env("VNFM_URL", "http://127.0.0.1:9")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(3));
    assert!(text(&out.stderr).contains("http://127.0.0.1:9"));

    // Wrong secret: the token endpoint refuses; the secret is not echoed.
    let out = c
        .command(&["vnf", "list", "--no-token-cache"])
        .env_remove("VNFM_CREDENTIALS_FILE")
        .env("VNFM_CLIENT_ID", "vnfm-nobody")
        .env("VNFM_CLIENT_SECRET", "wrong-secret-123")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(3));
    let err = text(&out.stderr);
    assert!(err.contains("refused the client credentials"), "{err}");
    assert!(!err.contains("wrong-secret-123"));
}

/// Regression (issue 25, item 11): `vnfm pkg upload` printed nothing of a package's
/// onboarding warnings, and a refused package's error three times (the `Failure:` line, the
/// `Diagnostics:` list and the error message). Now the warnings go to standard error after
/// the upload, `pkg show` lists them, and each error is printed once.
#[vnfm_test_env::needs(corpus)]
#[test]
fn pkg_upload_hides_warnings_and_prints_a_failure_three_times() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(&dir.path().join("data"));
    let c = Client::new(&server);

    // The corpus package onboards with warnings (no manifest, tolerated quirks).
    let out = c.run(&["pkg", "upload", &corpus(PACKAGE)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(stdout.contains("ONBOARDED"), "{stdout}");
    assert_eq!(
        stderr.matches("warning[csar.no-manifest]").count(),
        1,
        "{stderr}"
    );
    assert!(!stdout.contains("warning["), "{stdout}");
    let id = stdout
        .lines()
        .find_map(|l| l.strip_prefix("ID:"))
        .expect("ID line")
        .trim()
        .to_owned();
    let shown = c.ok(&["pkg", "show", &id]);
    assert!(shown.contains("Warnings:"), "{shown}");
    assert_eq!(shown.matches("warning[csar.no-manifest]").count(), 1);
    let doc = c.json(&["pkg", "show", &id]);
    assert!(
        doc["onboardingWarnings"].as_array().is_some_and(|w| w
            .iter()
            .any(|w| w.as_str().is_some_and(|w| w.contains("csar.no-manifest")))),
        "{doc:#}"
    );

    // A refused package: its one error is printed once, in the error message.
    let bad = dir.path().join("bad-package");
    std::fs::create_dir_all(bad.join("TOSCA-Metadata")).expect("mkdir");
    std::fs::write(
        bad.join("TOSCA-Metadata/TOSCA.meta"),
        "TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-By: test\nEntry-Definitions: Definitions/missing.yaml\n",
    )
    .expect("write");
    for format in ["table", "json"] {
        let out = c.run(&["pkg", "upload", bad.to_str().expect("path"), "-o", format]);
        assert_eq!(out.status.code(), Some(1));
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        let all = format!("{stdout}{stderr}");
        assert!(
            stderr.contains("was not onboarded: 1 error\n  ") && stderr.contains("missing.yaml"),
            "{stderr}"
        );
        if format == "table" {
            assert!(stdout.contains("Onboarding:") && stdout.contains("ERROR"));
            assert_eq!(all.matches("missing.yaml").count(), 1, "{all}");
        } else {
            // Standard output is the package resource for scripts; the people's text (on
            // standard error) names the error once.
            assert_eq!(stderr.matches("missing.yaml").count(), 1, "{stderr}");
        }
    }
}

/// Regression (issue 25, item 11): `vnfm pkg show` showed the package resource only; it now
/// adds the onboarded VNFD's deployment summary: flavours, VDUs with their instance ranges,
/// scaling aspects with their maximum levels, instantiation levels (the default marked).
#[vnfm_test_env::needs(corpus)]
#[test]
fn pkg_show_lacks_flavours_aspects_and_levels() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(&dir.path().join("data"));
    let c = Client::new(&server);
    let (pkg, _) = onboard(&c);
    let shown = c.ok(&["pkg", "show", &pkg]);
    for expected in [
        "Flavours:\n  simple: A simple flavour\n",
        "    VDUs: VDU1 (1..3 instances), VDU2 (1..1 instances)\n",
        "    Scaling aspects: VDU1_scale (max level 2)\n",
        "    Instantiation levels:\n      instantiation_level_1 (default): VDU1=1 VDU2=1\n      instantiation_level_2: VDU1=3 VDU2=1\n",
    ] {
        assert!(shown.contains(expected), "{expected:?} missing:\n{shown}");
    }
}

#[test]
fn configuration_file_environment_and_token_cache() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(&dir.path().join("data"));
    let c = Client::new(&server);
    let creds: Value =
        serde_json::from_str(&std::fs::read_to_string(&c.creds).expect("credentials.json"))
            .expect("JSON");
    let id = creds["client_id"].as_str().expect("id");
    let secret = creds["client_secret"].as_str().expect("secret");

    // Everything from the default configuration file ($XDG_CONFIG_HOME/vnfm/config.yaml).
    let cfg_dir = c.home.path().join("config/vnfm");
    std::fs::create_dir_all(&cfg_dir).expect("mkdir");
    std::fs::write(
        cfg_dir.join("config.yaml"),
        format!(
            "url: {}\nclient_id: {id}\nclient_secret: {secret}\n",
            server.base
        ),
    )
    .expect("write");
    let out = c
        .command(&["vnf", "list", "-o", "json"])
        .env_remove("VNFM_URL")
        .env_remove("VNFM_CREDENTIALS_FILE")
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).ok(),
        Some(Value::Array(vec![]))
    );

    // The environment wins over the file: a wrong URL in the environment is used.
    let out = c
        .command(&["vnf", "list"])
        .env("VNFM_URL", "http://127.0.0.1:9")
        .env_remove("VNFM_CREDENTIALS_FILE")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(3));

    // The token is cached (mode 0600) and reused by the next run.
    let cached: Vec<PathBuf> = std::fs::read_dir(c.cache_dir())
        .expect("cache dir")
        .map(|e| e.expect("entry").path())
        .collect();
    assert_eq!(cached.len(), 1, "{cached:?}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&cached[0])
            .expect("metadata")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let first = std::fs::read_to_string(&cached[0]).expect("read");
    c.ok(&["pkg", "list"]);
    assert_eq!(std::fs::read_to_string(&cached[0]).expect("read"), first);
    // A revoked token (the cache holds one the server does not accept) is replaced after
    // the 401, and the command succeeds.
    let mut doc: Value = serde_json::from_str(&first).expect("JSON");
    doc["access_token"] = Value::String("revoked".into());
    std::fs::write(&cached[0], doc.to_string()).expect("write");
    c.ok(&["pkg", "list"]);
    let renewed: Value =
        serde_json::from_str(&std::fs::read_to_string(&cached[0]).expect("read")).expect("JSON");
    assert_ne!(renewed["access_token"], "revoked");
}

#[test]
fn completion_scripts_for_three_shells() {
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef vnfm"),
        ("fish", "complete -c vnfm"),
    ] {
        let out = Command::new(BIN)
            .args(["completion", shell])
            .output()
            .expect("runs");
        assert!(out.status.success());
        let script = text(&out.stdout);
        assert!(script.contains(marker), "{shell}: {script}");
        assert!(
            script.contains("instantiate") && script.contains("scale-to-level"),
            "{shell}"
        );
    }
}

/// HTTPS: the client trusts the server's certificate through --ca-cert (rustls with the ring
/// provider), and refuses it without.
#[vnfm_test_env::needs(corpus)]
#[test]
fn https_with_a_private_ca() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cert = dir.path().join("cert.pem");
    let key = dir.path().join("key.pem");
    let made = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args(["-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl runs");
    assert!(made.status.success(), "{}", text(&made.stderr));
    let server = Server::start_with(
        &dir.path().join("data"),
        &[
            "--tls-cert",
            cert.to_str().expect("path"),
            "--tls-key",
            key.to_str().expect("path"),
        ],
    );
    assert!(server.base.starts_with("https://"), "{}", server.base);
    let c = Client::new(&server);
    let out = c.run(&["vnf", "list"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("cannot reach"),
        "{}",
        text(&out.stderr)
    );
    let listed = c.json(&["vnf", "list", "--ca-cert", cert.to_str().expect("path")]);
    assert_eq!(listed, Value::Array(vec![]));
    // Absolute URIs the server writes carry the scheme it is reached by.
    let pkg = c.json(&[
        "pkg",
        "upload",
        &corpus(PACKAGE),
        "--ca-cert",
        cert.to_str().expect("path"),
    ]);
    let href = pkg["_links"]["self"]["href"].as_str().unwrap_or_default();
    assert!(
        href.starts_with("https://") && href.ends_with(pkg["id"].as_str().unwrap_or("?")),
        "{pkg:#}"
    );
}

// `vnfm alarm list|show|ack` and automatic healing through a real `vnfm serve
// --alertmanager-token-file`: an Alertmanager webhook about a VNFC of an instance instantiated
// with Tacker's `isAutohealEnabled` raises an alarm, the server heals that VNFC by itself
// (`isAutomaticInvocation`), and the client lists, shows and acknowledges the alarm.
