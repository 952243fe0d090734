//! The script driver against real `python3` subprocesses, with scripts written as Tacker's
//! sample scripts are: `pickle.load(sys.stdin.buffer)` in, `pickle.dump(..., sys.stdout.buffer)`
//! out.

use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value as Json, json};
use support::*;
use vnfm_driver_api::{CancellationFlag, MgmtDriver, RunControl};
use vnfm_mgmt_script::{ScriptConfig, ScriptMgmtDriver};

fn driver() -> ScriptMgmtDriver {
    ScriptMgmtDriver::new(ScriptConfig::default())
}

/// Records what the script received (as JSON, to `additionalParams.record`) and returns an
/// updated instance, with protocol 5.
const RECORDING_SCRIPT: &str = r#"
import json, os, pickle, stat, sys

args = pickle.load(sys.stdin.buffer)
tmp = args['tmp_csar_dir']
record = {
    'keys': sorted(args.keys()),
    'operation': args['operation'],
    'request': args['request'],
    'vnf_instance': args['vnf_instance'],
    'grant_request': args['grant_request'],
    'grant_response': args['grant_response'],
    'tmp_csar_dir': tmp,
    'err_data': args['user_script_err_handling_data'],
    'cwd': os.getcwd(),
    'argv0': sys.argv[0],
    'mode': oct(stat.S_IMODE(os.stat(tmp).st_mode)),
    'files': sorted(os.path.relpath(os.path.join(d, f), tmp)
                    for d, _, fs in os.walk(tmp) for f in fs),
    'conf': open(os.path.join(tmp, 'Files/config/app.conf')).read(),
    'env_server': os.environ.get('CARGO_MANIFEST_DIR'),
    'env_extra': os.environ.get('HOOK_EXTRA'),
}
with open(args['request']['additionalParams']['record'], 'w') as f:
    json.dump(record, f)

inst = args['vnf_instance']
inst['metadata']['tier'] = 'silver'
del inst['metadata']['owner']
inst['extensions'] = {'configured': True}
inst['vimConnectionInfo']['k8s'] = {
    'vimType': 'kubernetes',
    'interfaceInfo': {'endpoint': 'https://10.0.0.1:6443'},
    'accessInfo': {'bearer_token': 'tok'},
}
pickle.dump({'vnf_instance': inst,
             'user_script_err_handling_data': {'done': ['instantiate_start']}},
            sys.stdout.buffer, protocol=5)
"#;

#[tokio::test]
async fn a_script_gets_tackers_input_and_its_instance_changes_come_back() {
    let outside = tempfile::tempdir().unwrap();
    let record = outside.path().join("record.json");
    let config = ScriptConfig {
        env: vec![("HOOK_EXTRA".into(), "x1".into())],
        ..ScriptConfig::default()
    };
    let driver = ScriptMgmtDriver::new(config);
    let request = json!({"flavourId": "simple", "additionalParams": {"record": record}});
    let mut call = call(
        "occ-ok",
        Arc::new(package(RECORDING_SCRIPT)),
        request.clone(),
        control(),
    );
    call.error_handling_data = json!({"previous": 1});
    let out = driver.call(&call).await.unwrap();

    let seen: Json = serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    assert_eq!(
        seen["keys"],
        json!([
            "grant_request",
            "grant_response",
            "operation",
            "request",
            "tmp_csar_dir",
            "user_script_err_handling_data",
            "vnf_instance"
        ])
    );
    assert_eq!(seen["operation"], "instantiate_start");
    assert_eq!(seen["request"], request);
    assert_eq!(seen["grant_request"], Json::Null);
    assert_eq!(seen["grant_response"], Json::Null);
    assert_eq!(seen["err_data"], json!({"previous": 1}));
    // The instance carries the resolved VIM connection, credentials included, as Tacker's.
    assert_eq!(
        seen["vnf_instance"]["vimConnectionInfo"]["vim1"]["accessInfo"]["password"],
        "s3cr3t-Pa55w0rd"
    );
    assert_eq!(seen["vnf_instance"]["id"], "inst-1");
    let tmp = seen["tmp_csar_dir"].as_str().unwrap();
    assert_eq!(seen["cwd"], tmp);
    assert_eq!(seen["argv0"], format!("{tmp}/{SCRIPT}"));
    assert_eq!(seen["mode"], "0o700");
    assert_eq!(
        seen["files"],
        json!([
            "Definitions/vnfd_top.yaml",
            "Files/config/app.conf",
            "Scripts/hook.py"
        ])
    );
    assert_eq!(seen["conf"], "listen=0.0.0.0\n");
    assert_eq!(seen["env_extra"], "x1");
    // The server's own environment is not handed on (cargo sets this one for the test).
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    assert_eq!(seen["env_server"], Json::Null);
    assert!(
        !std::path::Path::new(tmp).exists(),
        "the temporary package directory is removed"
    );

    // Changes mapped onto the outcome: metadata as a merge patch, the new VIM connection
    // added (the unchanged one with its credentials is not), the data merged.
    assert_eq!(
        Json::Object(out.metadata.clone().unwrap()),
        json!({"owner": null, "tier": "silver"})
    );
    assert_eq!(
        Json::Object(out.extensions.clone().unwrap()),
        json!({"configured": true})
    );
    assert_eq!(
        out.vim_connection_info_add.keys().collect::<Vec<_>>(),
        ["k8s"]
    );
    assert!(out.vim_connection_info_remove.is_empty());
    assert_eq!(
        out.error_handling_data,
        Some(json!({"previous": 1, "done": ["instantiate_start"]}))
    );
}

#[tokio::test]
async fn a_failing_script_reports_its_exit_status_and_the_end_of_stderr_redacted() {
    let script = r#"
import pickle, sys
args = pickle.load(sys.stdin.buffer)
for i in range(100):
    print('progress line %d' % i, file=sys.stderr)
pw = args['vnf_instance']['vimConnectionInfo']['vim1']['accessInfo']['password']
print('login with %s refused' % pw, file=sys.stderr)
print('Exception: instantiate_start failed on purpose', file=sys.stderr)
sys.exit(3)
"#;
    let request =
        json!({"flavourId": "simple", "additionalParams": {"token": "request-secret-xyz"}});
    let err = driver()
        .call(&call(
            "occ-fail",
            Arc::new(package(script)),
            request,
            control(),
        ))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "transient", "a retry runs the script again");
    let msg = err.to_string();
    assert!(
        msg.starts_with("hook instantiate_start (artifact `mgmt_script`, Scripts/hook.py)"),
        "{msg}"
    );
    assert!(
        msg.contains("instantiate_start failed (exit status 3)"),
        "the hook's name, then `failed`, as Tacker says it: {msg}"
    );
    assert!(
        msg.contains("Exception: instantiate_start failed on purpose"),
        "{msg}"
    );
    assert!(msg.contains("progress line 99"), "{msg}");
    assert!(
        !msg.contains("progress line 50\n"),
        "only the last lines: {msg}"
    );
    assert!(msg.contains("login with *** refused"), "{msg}");
    assert!(!msg.contains("s3cr3t-Pa55w0rd"), "{msg}");
    assert!(
        !msg.contains("request-secret-xyz"),
        "the input is not in errors: {msg}"
    );
}

#[tokio::test]
async fn garbage_on_stdout_is_an_error_naming_the_hook_and_artifact() {
    let script = "import pickle, sys\npickle.load(sys.stdin.buffer)\nprint('all good!')\n";
    let err = driver()
        .call(&call(
            "occ-garbage",
            Arc::new(package(script)),
            json!({}),
            control(),
        ))
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert_eq!(err.kind(), "permanent");
    assert!(msg.contains("hook instantiate_start"), "{msg}");
    assert!(
        msg.contains("`mgmt_script`") && msg.contains("Scripts/hook.py"),
        "{msg}"
    );
    assert!(msg.contains("stdout is not a pickle"), "{msg}");

    // An empty stdout is "no output" (as Tacker reads it), not an error.
    let quiet = "import pickle, sys\npickle.load(sys.stdin.buffer)\n";
    let out = driver()
        .call(&call(
            "occ-quiet",
            Arc::new(package(quiet)),
            json!({}),
            control(),
        ))
        .await
        .unwrap();
    assert!(out.is_noop());
}

/// Starts a grandchild, records both pids, then hangs.
const HANGING_SCRIPT: &str = r#"
import os, pickle, subprocess, sys, time
args = pickle.load(sys.stdin.buffer)
child = subprocess.Popen(['sleep', '300'])
with open(args['request']['additionalParams']['pids'], 'w') as f:
    f.write('%d %d\n' % (os.getpid(), child.pid))
time.sleep(300)
"#;

fn pids(text: &str) -> Vec<u32> {
    text.split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect()
}

#[tokio::test]
async fn a_hanging_script_times_out_and_its_process_group_is_gone() {
    let outside = tempfile::tempdir().unwrap();
    let pid_file = outside.path().join("pids");
    let request = json!({"additionalParams": {"pids": pid_file}});
    let started = Instant::now();
    let err = driver()
        .call(&call(
            "occ-hang",
            Arc::new(package(HANGING_SCRIPT)),
            request,
            RunControl::with_timeout(Duration::from_secs(2)),
        ))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "timeout", "{err}");
    assert!(err.to_string().contains("hook instantiate_start"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10));
    let pids = pids(&std::fs::read_to_string(&pid_file).unwrap());
    assert_eq!(pids.len(), 2);
    assert!(
        all_terminated(&pids, Duration::from_secs(3)),
        "script and grandchild {pids:?} still run"
    );
}

#[tokio::test]
async fn cancelling_kills_the_script_and_its_children_promptly() {
    let outside = tempfile::tempdir().unwrap();
    let pid_file = outside.path().join("pids");
    let request = json!({"additionalParams": {"pids": pid_file}});
    let flag = CancellationFlag::new();
    let control = RunControl::new(Duration::from_secs(120), flag.clone());
    let call = call(
        "occ-cancel",
        Arc::new(package(HANGING_SCRIPT)),
        request,
        control,
    );
    let driver = driver();
    let running = driver.call(&call);
    let canceller = async {
        let text = wait_for_file(&pid_file).await;
        flag.cancel();
        (Instant::now(), text)
    };
    let (result, (cancelled_at, text)) = tokio::join!(running, canceller);
    let err = result.unwrap_err();
    assert_eq!(err.kind(), "cancelled", "{err}");
    assert!(
        cancelled_at.elapsed() < Duration::from_secs(2),
        "the call ended {:?} after the cancellation",
        cancelled_at.elapsed()
    );
    let pids = pids(&text);
    assert!(
        all_terminated(&pids, Duration::from_secs(3)),
        "script and grandchild {pids:?} still run"
    );
}

#[tokio::test]
async fn a_script_can_write_outside_its_directory_which_is_still_removed() {
    // Documented behaviour: no sandbox. The script writes next to the test, not only in
    // its temporary directory; only the latter is cleaned up.
    let outside = tempfile::tempdir().unwrap();
    let escaped = outside.path().join("escaped.txt");
    let script = r#"
import os, pickle, sys
args = pickle.load(sys.stdin.buffer)
p = args['request']['additionalParams']
open(p['outside'], 'w').write(args['tmp_csar_dir'] + '\n')
os.makedirs(os.path.join(args['tmp_csar_dir'], 'work', 'deep'))
open(os.path.join(args['tmp_csar_dir'], 'work', 'deep', 'state'), 'w').write('x')
"#;
    let request = json!({"additionalParams": {"outside": escaped}});
    driver()
        .call(&call(
            "occ-escape",
            Arc::new(package(script)),
            request,
            control(),
        ))
        .await
        .unwrap();
    let tmp = std::fs::read_to_string(&escaped).expect("writing outside is not prevented");
    let tmp = tmp.trim_end();
    assert!(tmp.contains("vnfm-hook-"), "{tmp}");
    assert!(!std::path::Path::new(tmp).exists(), "{tmp} was not removed");
}

#[tokio::test]
async fn error_handling_data_of_a_failed_run_reaches_the_retry() {
    // First attempt: records progress, then fails. Second attempt (the retry of the same
    // occurrence): sees the progress, finishes, and its data is what the core keeps.
    let script = r#"
import pickle, sys
args = pickle.load(sys.stdin.buffer)
data = args['user_script_err_handling_data']
if 'created' not in data:
    pickle.dump({'user_script_err_handling_data': {'created': 'server-1'}}, sys.stdout.buffer)
    sys.stdout.flush()
    print('network unreachable', file=sys.stderr)
    sys.exit(1)
pickle.dump({'user_script_err_handling_data': {'resumed_from': data['created']}},
            sys.stdout.buffer)
"#;
    let driver = driver();
    let files = Arc::new(package(script));
    let first = call("occ-retry", files.clone(), json!({}), control());
    let err = driver.call(&first).await.unwrap_err();
    assert!(err.to_string().contains("network unreachable"), "{err}");
    // The store had nothing yet (the failed hook's outcome carries no data).
    let mut retry = call("occ-retry", files.clone(), json!({}), control());
    retry.error_handling_data = json!({"earlier_hook": true});
    let out = driver.call(&retry).await.unwrap();
    assert_eq!(
        out.error_handling_data,
        Some(json!({"earlier_hook": true, "created": "server-1", "resumed_from": "server-1"}))
    );
    // Another occurrence does not see it.
    let other = call("occ-other", files, json!({}), control());
    assert!(driver.call(&other).await.is_err());
}

#[tokio::test]
async fn cannot_run_names_a_missing_interpreter_and_foreign_artifacts() {
    let missing = ScriptMgmtDriver::new(ScriptConfig {
        python: "/nonexistent/bin/python3".into(),
        ..ScriptConfig::default()
    });
    let why = missing.cannot_run(&artifact(SCRIPT)).unwrap();
    assert!(
        why.contains("/nonexistent/bin/python3") && why.contains("not found"),
        "{why}"
    );
    let err = missing
        .call(&call(
            "occ-nopy",
            Arc::new(package("")),
            json!({}),
            control(),
        ))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "invalidInput");
    assert!(
        err.to_string().contains("/nonexistent/bin/python3"),
        "{err}"
    );

    let ok = driver();
    assert_eq!(ok.cannot_run(&artifact(SCRIPT)), None);
    let mut bash = artifact("Scripts/install.sh");
    bash.artifact_type = "tosca.artifacts.Implementation.Bash".into();
    assert!(
        ok.cannot_run(&bash)
            .unwrap()
            .contains("Implementation.Bash")
    );
    let mut absent = artifact("Scripts/absent.py");
    absent.sha256 = None;
    let why = ok.cannot_run(&absent).unwrap();
    assert!(
        why.contains("Scripts/absent.py") && why.contains("not in the package"),
        "{why}"
    );
    let mut external = artifact("https://example.invalid/hook.py");
    external.external = true;
    assert!(
        ok.cannot_run(&external)
            .unwrap()
            .contains("outside the package")
    );
}

#[tokio::test]
async fn a_script_path_leaving_the_package_is_refused() {
    let mut c = call("occ-path", Arc::new(package("")), json!({}), control());
    c.artifact = artifact("../../etc/hook.py");
    let err = driver().call(&c).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("not a relative path inside the package"),
        "{err}"
    );
}

#[tokio::test]
async fn dropping_the_call_kills_the_process_group() {
    // The runner drops a hook's future when its own step budget runs out first.
    let outside = tempfile::tempdir().unwrap();
    let pid_file = outside.path().join("pids");
    let request = json!({"additionalParams": {"pids": pid_file}});
    let call = call(
        "occ-drop",
        Arc::new(package(HANGING_SCRIPT)),
        request,
        control(),
    );
    let driver = driver();
    let outcome = tokio::time::timeout(Duration::from_secs(30), async {
        tokio::select! {
            r = driver.call(&call) => Some(r),
            _ = wait_for_file(&pid_file) => None,
        }
    })
    .await
    .unwrap();
    assert!(outcome.is_none(), "the script was expected to hang");
    let pids = pids(&std::fs::read_to_string(&pid_file).unwrap());
    assert!(
        all_terminated(&pids, Duration::from_secs(3)),
        "script and grandchild {pids:?} still run"
    );
}

#[tokio::test]
async fn stdout_beyond_the_limit_fails_the_hook() {
    let script =
        "import pickle, sys\npickle.load(sys.stdin.buffer)\nsys.stdout.write('x' * 200000)\n";
    let driver = ScriptMgmtDriver::new(ScriptConfig {
        stdout_limit: 1024,
        ..ScriptConfig::default()
    });
    let err = driver
        .call(&call(
            "occ-big",
            Arc::new(package(script)),
            json!({}),
            control(),
        ))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("more than 1024 bytes to stdout"),
        "{err}"
    );
}

/// A package that cannot list its files.
struct Unlisted(vnfm_driver_api::memory::MemArtifacts);

impl vnfm_driver_api::ArtifactSource for Unlisted {
    fn read(&self, path: &str) -> std::io::Result<Vec<u8>> {
        self.0.read(path)
    }
}

#[tokio::test]
async fn without_a_listing_the_artifact_and_its_dependencies_are_copied() {
    let script = r#"
import os, pickle, sys
args = pickle.load(sys.stdin.buffer)
tmp = args['tmp_csar_dir']
files = sorted(os.path.relpath(os.path.join(d, f), tmp) for d, _, fs in os.walk(tmp) for f in fs)
pickle.dump({'user_script_err_handling_data': {'files': files}}, sys.stdout.buffer)
"#;
    let files = package(script).with("Scripts/lib/helper.py", "X = 1\n");
    let mut c = call(
        "occ-unlisted",
        Arc::new(Unlisted(files)),
        json!({}),
        control(),
    );
    c.artifact.dependencies = vec!["Scripts/lib/helper.py".into()];
    let out = driver().call(&c).await.unwrap();
    assert_eq!(
        out.error_handling_data.unwrap()["files"],
        json!(["Scripts/hook.py", "Scripts/lib/helper.py"])
    );
    // A missing dependency is an error, not a silently incomplete directory.
    let mut c = call(
        "occ-unlisted-2",
        Arc::new(Unlisted(package(script))),
        json!({}),
        control(),
    );
    c.artifact.dependencies = vec!["Scripts/lib/missing.py".into()];
    let err = driver().call(&c).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("reading `Scripts/lib/missing.py` from the package failed"),
        "{err}"
    );
}

#[tokio::test]
async fn carried_error_handling_data_survives_an_attempt_that_fails_otherwise() {
    let script = r#"
import pickle, sys
args = pickle.load(sys.stdin.buffer)
data = args['user_script_err_handling_data']
mode = open(args['request']['additionalParams']['mode']).read()
if mode == 'fail':
    pickle.dump({'user_script_err_handling_data': {'created': 'server-1'}}, sys.stdout.buffer)
    sys.exit(1)
if mode == 'garbage':
    print('not a pickle')
    sys.exit(0)
pickle.dump({'user_script_err_handling_data': {'seen': data.get('created')}}, sys.stdout.buffer)
"#;
    let outside = tempfile::tempdir().unwrap();
    let mode = outside.path().join("mode");
    let request = json!({"additionalParams": {"mode": mode}});
    let driver = driver();
    let files = Arc::new(package(script));
    let attempt = |m: &str| {
        std::fs::write(&mode, m).unwrap();
        call("occ-carry", files.clone(), request.clone(), control())
    };
    assert!(driver.call(&attempt("fail")).await.is_err());
    let err = driver.call(&attempt("garbage")).await.unwrap_err();
    assert!(err.to_string().contains("not a pickle"), "{err}");
    let out = driver.call(&attempt("ok")).await.unwrap();
    assert_eq!(
        out.error_handling_data,
        Some(json!({"created": "server-1", "seen": "server-1"}))
    );
}

/// Tacker's `new_csar_dir`: `modify_information_end` of a MODIFY_INFO that changes `vnfdId`
/// gets a second directory with the new package's files; other calls do not get the key.
#[tokio::test]
async fn a_new_package_comes_as_new_csar_dir_and_is_removed_afterwards() {
    let outside = tempfile::tempdir().unwrap();
    let record = outside.path().join("record");
    let script = r#"
import json, os, pickle, sys
args = pickle.load(sys.stdin.buffer)
new = args.get('new_csar_dir')
seen = {'has_key': 'new_csar_dir' in args, 'new': new,
        'marker': bool(new) and open(os.path.join(new, 'Files', 'marker.txt')).read(),
        'tmp': args['tmp_csar_dir']}
open(args['request']['additionalParams']['record'], 'w').write(json.dumps(seen))
"#;
    let request = json!({"additionalParams": {"record": record}});
    let mut with_new = call(
        "occ-new",
        Arc::new(package(script)),
        request.clone(),
        control(),
    );
    with_new.lcm_operation = vnfm_types::LcmOperationType::ModifyInfo;
    with_new.operation = "modify_information_end".into();
    with_new.new_package = Some(vnfm_driver_api::TargetPackage {
        vnfd: Arc::new(vnfd()),
        files: Arc::new(
            vnfm_driver_api::memory::MemArtifacts::new()
                .with("Files/marker.txt", "version 2")
                .with(
                    "Definitions/vnfd_top.yaml",
                    "tosca_definitions_version: x\n",
                ),
        ),
    });
    driver().call(&with_new).await.unwrap();
    let seen: Json = serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    assert_eq!(seen["has_key"], true, "{seen}");
    assert_eq!(seen["marker"], "version 2", "{seen}");
    let (new, tmp) = (seen["new"].as_str().unwrap(), seen["tmp"].as_str().unwrap());
    assert_ne!(new, tmp);
    assert!(!std::path::Path::new(new).exists(), "{new} was not removed");
    assert!(!std::path::Path::new(tmp).exists(), "{tmp} was not removed");

    driver()
        .call(&call(
            "occ-plain",
            Arc::new(package(script)),
            request,
            control(),
        ))
        .await
        .unwrap();
    let seen: Json = serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    assert_eq!(seen["has_key"], false, "{seen}");
}

/// Tacker's sample scripts answer a hook they do not implement with "<hook> is not included
/// in the script." and exit status 1: every run fails the same way, so the failure is
/// permanent and says what to change (the package's own script, which has no
/// `instantiate_start`).
#[tokio::test]
async fn a_hook_the_script_does_not_implement_is_permanent_with_a_hint() {
    let script = include_str!("../../../vnfd-samples/tacker-script-vnf/Scripts/sample_script.py");
    let err = driver()
        .call(&call(
            "occ-unknown-hook",
            Arc::new(package(script)),
            json!({"flavourId": "simple"}),
            control(),
        ))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "permanent", "a retry cannot help: {err}");
    let msg = err.to_string();
    assert!(msg.contains("exit status 1"), "{msg}");
    assert!(
        msg.contains("instantiate_start is not included in the script."),
        "{msg}"
    );
    assert!(
        msg.contains("the script has no `instantiate_start` method"),
        "{msg}"
    );
    assert!(msg.contains("running it again cannot help"), "{msg}");
}
