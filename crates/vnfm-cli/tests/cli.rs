//! The `vnfm` program, run as a user runs it: exit codes, output, and behaviour on real and on
//! broken or hostile packages.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn vnfm(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vnfm"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("the vnfm binary runs")
}

fn repo() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn tacker() -> PathBuf {
    vnfm_test_env::corpus("tacker")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Runs `validate --json` and returns the exit code and the one report.
fn validate_json(path: &Path, cwd: &Path) -> (i32, Value) {
    let out = vnfm(
        &["package", "validate", "--json", path.to_str().unwrap()],
        cwd,
    );
    let code = out.status.code().expect("exited, not killed by a signal");
    let reports: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("--json output is JSON ({e}): {}", stdout(&out)));
    (code, reports[0].clone())
}

fn location(d: &Value) -> String {
    let Some(l) = d.get("location") else {
        return String::new();
    };
    let mut s = l["file"].as_str().unwrap_or_default().to_string();
    for key in ["line", "column"] {
        match l[key].as_u64() {
            Some(0) | None => break,
            Some(n) => s.push_str(&format!(":{n}")),
        }
    }
    s
}

fn files_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let bytes = fs::read(&path).unwrap();
                out.push((path, bytes));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_broken_package_fails_with_its_specific_diagnostic() {
    let broken = repo().join("tests/data/broken");
    let cwd = tempfile::tempdir().unwrap();
    let before = files_under(&broken);
    let mut cases = 0;
    for entry in fs::read_dir(&broken).unwrap() {
        let dir = entry.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        cases += 1;
        let expect = fs::read_to_string(dir.join("expect")).unwrap();
        let (want_code, want_loc) = expect.trim().split_once(' ').unwrap();
        let (code, report) = validate_json(&dir, cwd.path());
        assert_eq!(code, 1, "{}: exit code", dir.display());
        assert_eq!(report["valid"], false);
        let diags = report["diagnostics"].as_array().unwrap();
        assert!(
            diags
                .iter()
                .any(|d| d["code"] == want_code && location(d) == want_loc),
            "{}: expected {want_code} at {want_loc}, got {:#}",
            dir.display(),
            report["diagnostics"]
        );
        // Human output names the failure too.
        let text = stdout(&vnfm(
            &["package", "validate", dir.to_str().unwrap()],
            cwd.path(),
        ));
        assert!(text.starts_with("FAIL "), "{text}");
        assert!(
            text.contains(&format!("{want_loc}: error[{want_code}]")),
            "{text}"
        );
    }
    assert!(cases >= 19, "only {cases} broken packages found");
    assert_eq!(before, files_under(&broken), "the fixtures were modified");
    assert_eq!(
        fs::read_dir(cwd.path()).unwrap().count(),
        0,
        "files were written"
    );
}

/// A zip entry: name, content, unix mode (a symlink when the mode says so).
type Entry<'a> = (&'a str, &'a [u8], Option<u32>);

/// Writes a zip with the given entries.
fn write_zip(path: &Path, entries: &[Entry<'_>]) {
    let mut zip = zip::ZipWriter::new(fs::File::create(path).unwrap());
    for (name, content, mode) in entries {
        let mut opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        if let Some(mode) = mode {
            opts = opts.unix_permissions(*mode);
        }
        if mode.is_some_and(|m| m & 0o170000 == 0o120000) {
            zip.add_symlink(*name, String::from_utf8_lossy(content), opts)
                .unwrap();
        } else {
            zip.start_file(*name, opts).unwrap();
            zip.write_all(content).unwrap();
        }
    }
    zip.finish().unwrap();
}

const META: &[u8] = b"TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-by: t\nEntry-Definitions: Definitions/vnfd.yaml\n";

#[test]
fn hostile_archives_are_refused_without_panics_or_writes() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let vnfd: &[u8] = b"tosca_definitions_version: tosca_simple_yaml_1_3\n";
    let zeros = vec![0u8; 64 << 20];
    let cases: Vec<(&str, Vec<Entry<'_>>, &str)> = vec![
        (
            "slip.zip",
            vec![
                ("TOSCA-Metadata/TOSCA.meta", META, None),
                ("../../evil.sh", b"x", None),
            ],
            "csar.path-traversal",
        ),
        (
            "absolute.zip",
            vec![
                ("TOSCA-Metadata/TOSCA.meta", META, None),
                ("/etc/cron.d/evil", b"x", None),
            ],
            "csar.absolute-path",
        ),
        (
            "symlink.zip",
            vec![
                ("TOSCA-Metadata/TOSCA.meta", META, None),
                ("Definitions/vnfd.yaml", b"/etc/passwd", Some(0o120777)),
            ],
            "csar.symlink",
        ),
        (
            "bomb.zip",
            vec![
                ("TOSCA-Metadata/TOSCA.meta", META, None),
                ("Definitions/vnfd.yaml", vnfd, None),
                ("Files/zeros.img", &zeros, None),
            ],
            "csar.zip-bomb",
        ),
    ];
    for (name, entries, want) in &cases {
        let path = dir.path().join(name);
        write_zip(&path, entries);
        let (code, report) = validate_json(&path, cwd.path());
        assert_eq!(code, 1, "{name}");
        let codes: Vec<&str> = report["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|d| d["code"].as_str())
            .collect();
        assert!(
            codes.contains(want),
            "{name}: expected {want}, got {codes:?}"
        );
    }
    for (name, bytes, want) in [
        (
            "garbage.zip",
            b"this is not a zip archive at all".to_vec(),
            "csar.not-a-zip",
        ),
        ("empty.zip", Vec::new(), "csar.empty-package"),
    ] {
        let path = dir.path().join(name);
        fs::write(&path, bytes).unwrap();
        let (code, report) = validate_json(&path, cwd.path());
        assert_eq!(code, 1, "{name}");
        let codes: Vec<&str> = report["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|d| d["code"].as_str())
            .collect();
        assert!(
            codes.contains(&want),
            "{name}: expected {want}, got {codes:?}"
        );
    }
    assert_eq!(
        fs::read_dir(cwd.path()).unwrap().count(),
        0,
        "files were written in the working directory"
    );
    let mut outside = dir.path().parent().unwrap().to_path_buf();
    outside.push("evil.sh");
    assert!(!outside.exists());
}

/// Packages of the corpus that must not validate, and why. Everything else must.
const INVALID_TACKER: &[(&str, &[&str])] = &[
    // A fixture without its top VNFD (documented as partial in the corpus INDEX.md).
    (
        "unit-v2-sample2-cnf-manifests",
        &["csar.entry-definitions-not-found"],
    ),
    // A flavour file that Tacker's test harness merges into another package: no TOSCA.meta.
    ("v1-mgmt-multi-flavour", &["csar.no-entry-definitions"]),
    // Upstream's TOSCA.meta digest of Scripts/install_k8s_cluster.sh is stale, and the
    // corpus copy leaves out the Python script TOSCA.meta lists (Tacker refuses that too).
    (
        "mgmt-k8s-cluster-v1",
        &["csar.digest-mismatch", "csar.missing-artifact"],
    ),
    // The image is a placeholder; the manifest keeps the real image's digest.
    ("v1-pkg-meta-and-manifest", &["csar.digest-mismatch"]),
];

fn tacker_packages() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = fs::read_dir(tacker())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .filter(|p| {
            let name = p.file_name().unwrap().to_str().unwrap();
            name != "api-ref-samples" && name != "etsi-types"
        })
        .collect();
    out.sort();
    out
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn tacker_corpus_validates_in_one_run_except_the_known_broken_copies() {
    let cwd = tempfile::tempdir().unwrap();
    let (valid, invalid): (Vec<PathBuf>, Vec<PathBuf>) =
        tacker_packages().into_iter().partition(|p| {
            let name = p.file_name().unwrap().to_str().unwrap();
            !INVALID_TACKER.iter().any(|(n, _)| *n == name)
        });
    assert!(
        valid.len() >= 45,
        "corpus has {} valid packages",
        valid.len()
    );
    assert_eq!(invalid.len(), INVALID_TACKER.len());

    let mut args = vec!["package", "validate"];
    args.extend(valid.iter().map(|p| p.to_str().unwrap()));
    let out = vnfm(&args, cwd.path());
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains(&format!(
            "{} packages: {} valid, 0 invalid",
            valid.len(),
            valid.len()
        )),
        "{text}"
    );
    assert!(!text.contains("FAIL"), "{text}");

    for (name, want) in INVALID_TACKER {
        let (code, report) = validate_json(&tacker().join(name), cwd.path());
        assert_eq!(code, 1, "{name}");
        let mut errors: Vec<&str> = report["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["severity"] == "error")
            .filter_map(|d| d["code"].as_str())
            .collect();
        errors.sort_unstable();
        assert_eq!(errors, *want, "{name}");
    }
}

#[test]
fn one_invalid_package_makes_the_run_fail_and_is_counted() {
    let cwd = tempfile::tempdir().unwrap();
    let good = repo().join("vnfd-samples/hello-vnf");
    let bad = repo().join("tests/data/broken/unknown-node-type");
    let out = vnfm(
        &[
            "package",
            "validate",
            good.to_str().unwrap(),
            bad.to_str().unwrap(),
        ],
        cwd.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(text.lines().next().unwrap().starts_with("ok "), "{text}");
    assert!(text.contains("2 packages: 1 valid, 1 invalid"), "{text}");
}

/// A reader that went away (`vnfm package validate ... | head`) is a failed write the check
/// tolerates, not a death by signal: the exit code still says whether the package is valid.
#[test]
fn a_closed_output_pipe_does_not_kill_the_check() {
    let cwd = tempfile::tempdir().unwrap();
    let good = repo().join("vnfd-samples/hello-vnf");
    let mut child = Command::new(env!("CARGO_BIN_EXE_vnfm"))
        .args(["package", "validate", good.to_str().unwrap()])
        .current_dir(cwd.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The reader is gone before the report is written.
    drop(child.stdout.take());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{status:?}");
}

/// Output that cannot be written for another reason than a closed pipe is an error, said so.
#[cfg(target_os = "linux")]
#[test]
fn a_report_that_cannot_be_written_is_an_error() {
    let cwd = tempfile::tempdir().unwrap();
    let good = repo().join("vnfd-samples/hello-vnf");
    let out = Command::new(env!("CARGO_BIN_EXE_vnfm"))
        .args(["package", "show", good.to_str().unwrap()])
        .current_dir(cwd.path())
        .stdout(fs::File::create("/dev/full").unwrap())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("cannot write the report to standard output"),
        "{err}"
    );
}

#[test]
fn usage_errors_exit_with_two() {
    let cwd = tempfile::tempdir().unwrap();
    let sample = repo().join("vnfd-samples/hello-vnf");
    let sample = sample.to_str().unwrap();
    for args in [
        vec!["package", "validate"],
        vec!["package", "validate", "--no-such-flag", sample],
        vec!["package", "frobnicate"],
        vec![
            "package",
            "validate",
            "--trusted-root",
            "/nonexistent/root.pem",
            sample,
        ],
    ] {
        let out = vnfm(&args, cwd.path());
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn show_summarizes_flavours_vdus_hooks_and_artifacts() {
    let cwd = tempfile::tempdir().unwrap();
    let pkg = tacker().join("v2-vm-basic-lcms-min");
    let out = vnfm(&["package", "show", pkg.to_str().unwrap()], cwd.path());
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    for want in [
        "Descriptor: VNFD b1bb0ce7-ebca-4fa7-95ed-4840d7000000",
        "Flavour simple:",
        "VDU1 [Compute] instances 1..",
        "instantiate_start -> sample-script: Scripts/sample_script.py (tosca.artifacts.Implementation.Python, file missing)",
        "terminate_end -> sample-script",
        "TOSCA-Metadata/TOSCA.meta  sha256:",
        "Valid: yes",
    ] {
        assert!(text.contains(want), "missing `{want}` in:\n{text}");
    }

    let hello = repo().join("vnfd-samples/hello-vnf");
    let text = stdout(&vnfm(
        &["package", "show", hello.to_str().unwrap()],
        cwd.path(),
    ));
    for want in [
        "web [Compute] instances 1..3 (initial 1), 1 vCPU, 1 GiB memory, image debian-12-genericcloud",
        "Scaling aspect web_scale: max level 2, steps [one_more], deltas [web one_more=+1]",
        "Instantiation level large: web=3",
        "AntiAffinity (nfvi_node) web_anti_affinity: web",
    ] {
        assert!(text.contains(want), "missing `{want}` in:\n{text}");
    }
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn show_json_descriptor_matches_the_published_schema() {
    let cwd = tempfile::tempdir().unwrap();
    for pkg in [
        repo().join("vnfd-samples/hello-vnf"),
        tacker().join("mgmt-k8s-cluster-v2"),
    ] {
        let out = vnfm(
            &["package", "show", "--json", pkg.to_str().unwrap()],
            cwd.path(),
        );
        assert_eq!(out.status.code(), Some(0));
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        let descriptor = &report["descriptor"];
        assert_eq!(descriptor["kind"], "vnfd");
        if let Err(violations) =
            vnfm::schemas::validate(vnfm::schemas::SchemaId::Descriptor, descriptor)
        {
            panic!("{}: {violations:?}", pkg.display());
        }
    }
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn show_prints_asd_deployment_stages() {
    let cwd = tempfile::tempdir().unwrap();
    let pkg = tempfile::tempdir().unwrap();
    let asd = vnfm_test_env::corpus("asd");
    let put = |rel: &str, bytes: Vec<u8>| {
        let path = pkg.path().join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, bytes).unwrap();
    };
    put(
        "TOSCA-Metadata/TOSCA.meta",
        fs::read(asd.join("onap-so-cnfm_asd-TOSCA.meta")).unwrap(),
    );
    put(
        "Definitions/asd.yaml",
        fs::read(asd.join("onap-so-cnfm_asd.yaml")).unwrap(),
    );
    put(
        "Definitions/asd_types.yaml",
        fs::read(asd.join("onap-so-cnfm_asd_types.yaml")).unwrap(),
    );
    put("asd.mf", fs::read(asd.join("onap-so-cnfm_asd.mf")).unwrap());
    put(
        "Artifacts/Deployment/HELM/sampleapp-db-operator-helm.tgz",
        b"chart".to_vec(),
    );
    put(
        "Artifacts/Deployment/HELM/sampleapp-services-helm.tgz",
        b"chart".to_vec(),
    );
    // The other files the manifest lists (without digests): a listed file that is absent
    // is an error.
    for listed in [
        "Files/ChangeLog.txt",
        "Files/Events/MyASD_v1.yaml",
        "Files/Guides/user_guide.txt",
        "Files/Measurements/PM_Dictionary.yaml",
        "Files/Scripts/my_script.sh",
        "Files/Yang_module/mynetconf.yang",
        "Files/rapp1/rapp.zip",
    ] {
        put(listed, b"placeholder".to_vec());
    }
    let out = vnfm(
        &["package", "show", pkg.path().to_str().unwrap()],
        cwd.path(),
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    for want in [
        "Descriptor: ASD 123e4567-e89b-12d3-a456-426614174000",
        "Stage 1 (order 1):",
        "Artifacts/Deployment/HELM/sampleapp-db-operator-helm.tgz",
        "Stage 2 (order 2):",
        "parameters: .Values.app.initialWebReplicas",
        "warning[asd.quirk.types-at-column-0]",
    ] {
        assert!(text.contains(want), "missing `{want}` in:\n{text}");
    }
}

#[test]
fn signed_packages_verify_against_a_trusted_root_and_tampering_is_refused() {
    let cwd = tempfile::tempdir().unwrap();
    let fixture = repo().join("tests/data/hostile/signed");
    let root = repo().join("tests/data/hostile/signed-ca.pem");
    let root = root.to_str().unwrap();

    let intact = vnfm(
        &[
            "package",
            "validate",
            "--json",
            "--trusted-root",
            root,
            "--require-signature",
            fixture.to_str().unwrap(),
        ],
        cwd.path(),
    );
    let report: Value = serde_json::from_slice(&intact.stdout).unwrap();
    let errors: Vec<&Value> = report[0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["severity"] == "error")
        .collect();
    // The fixture's descriptor is a bare TOSCA file, so only signature errors matter here.
    assert!(
        errors
            .iter()
            .all(|d| !d["code"].as_str().unwrap().contains("signature")),
        "{errors:?}"
    );

    let tampered = tempfile::tempdir().unwrap();
    for (path, bytes) in files_under(&fixture) {
        let rel = path.strip_prefix(&fixture).unwrap();
        let dest = tampered.path().join(rel);
        fs::create_dir_all(dest.parent().unwrap()).unwrap();
        let bytes = if rel.to_str() == Some("signed.mf") {
            String::from_utf8(bytes)
                .unwrap()
                .replace("vnf_package_version: 1.0", "vnf_package_version: 6.6")
                .into_bytes()
        } else {
            bytes
        };
        fs::write(dest, bytes).unwrap();
    }
    let (code, report) = {
        let out = vnfm(
            &[
                "package",
                "validate",
                "--json",
                "--trusted-root",
                root,
                tampered.path().to_str().unwrap(),
            ],
            cwd.path(),
        );
        (
            out.status.code(),
            serde_json::from_slice::<Value>(&out.stdout).unwrap(),
        )
    };
    assert_eq!(code, Some(1));
    let bad: Vec<String> = report[0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "csar.bad-signature")
        .map(location)
        .collect();
    assert_eq!(bad.len(), 1, "{report:#}");
    assert!(bad[0].starts_with("signed.mf"), "{bad:?}");
}

/// `vnfm --help` names every command a user runs, and not the plugin runner.
#[test]
fn help_lists_every_command() {
    let cwd = tempfile::tempdir().unwrap();
    let out = vnfm(&["--help"], cwd.path());
    let help = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{help}");
    let commands: Vec<&str> = help
        .split("Commands:")
        .nth(1)
        .expect("a list of commands")
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .take_while(|word| !word.ends_with(':'))
        .collect();
    assert_eq!(
        commands,
        [
            "package",
            "serve",
            "pkg",
            "vim",
            "vnf",
            "op",
            "sub",
            "alarm",
            "pm",
            "indicator",
            "completion",
            "help"
        ],
        "{help}"
    );
}

/// `vnfm`, alone in a directory, runs every kind of command itself: nothing is handed to
/// another program.
#[test]
fn a_lone_vnfm_runs_every_kind_of_command() {
    let tmp = tempfile::tempdir().unwrap();
    let lone = tmp.path().join("vnfm");
    if fs::hard_link(env!("CARGO_BIN_EXE_vnfm"), &lone).is_err() {
        fs::copy(env!("CARGO_BIN_EXE_vnfm"), &lone).unwrap();
    }
    let run = |args: &[&str]| {
        Command::new(&lone)
            .args(args)
            .env("VNFM_URL", "http://127.0.0.1:9")
            .env("VNFM_CLIENT_ID", "vnfm-test")
            .env("VNFM_CLIENT_SECRET", "not-used-secret")
            .current_dir(tmp.path())
            .output()
            .unwrap()
    };
    let validate = run(&[
        "package",
        "validate",
        repo().join("vnfd-samples/vnf-b-cnf").to_str().unwrap(),
    ]);
    assert_eq!(validate.status.code(), Some(0), "{}", stdout(&validate));

    // The client's own answer to a server that is not there.
    let list = run(&["vnf", "list", "--no-token-cache"]);
    let err = String::from_utf8_lossy(&list.stderr);
    assert_eq!(list.status.code(), Some(3), "stderr: {err}");

    // The server refuses a data directory it cannot create, after parsing its options.
    let blocker = tmp.path().join("not-a-directory");
    fs::write(&blocker, b"").unwrap();
    let serve = run(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        blocker.join("data").to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&serve.stderr);
    assert_eq!(serve.status.code(), Some(1), "stderr: {err}");
    assert!(err.contains("vnfm serve:"), "{err}");

    // The isolated plugin runner answers with its protocol's failure frame (a JSON line after
    // the frame marker).
    let runner = run(&[
        "plugin-runner",
        tmp.path().join("missing.so").to_str().unwrap(),
    ]);
    let out = stdout(&runner);
    assert_eq!(runner.status.code(), Some(3), "{out}");
    let frame: Value = out
        .split_once("vnfm-plugin ")
        .and_then(|(_, json)| serde_json::from_str(json.trim()).ok())
        .unwrap_or_else(|| panic!("no runner frame in {out:?}"));
    assert_eq!(frame["t"], "failed", "{frame}");
    assert!(
        frame["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("missing.so")),
        "{frame}"
    );

    let completion = run(&["completion", "bash"]);
    let script = stdout(&completion);
    assert_eq!(completion.status.code(), Some(0));
    for command in ["package", "serve", "vnf", "completion"] {
        assert!(
            script.contains(command),
            "{command} missing from the completion script"
        );
    }
    assert_eq!(
        fs::read_dir(tmp.path()).unwrap().count(),
        2,
        "only the program and the blocking file are there"
    );
}
