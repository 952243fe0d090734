//! The plugin host against real plugin libraries (the in-tree `noop`, `hello` and `probe`
//! plugins, built by the test), in process and in the isolated runner.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use indexmap::IndexMap;
use serde_json::{Value, json};
use support::{fake_library, library, runner, sha256_file};
use vnfm_driver_api::memory::MemArtifacts;
use vnfm_driver_api::{
    CancellationFlag, DriverError, HookArtifact, HookCall, HookOutcome, MgmtDriver, ResolvedVim,
    RunControl,
};
use vnfm_plugin_host::{HostConfig, Isolation, PluginHost};
use vnfm_plugin_sdk::HOOKS;
use vnfm_types::{LcmOperationType, VimConnectionInfo, VnfLcmOpOccId};

fn vnfd() -> Arc<vnfm_descriptor::Vnfd> {
    Arc::new(
        serde_json::from_value(json!({
            "descriptorId": "vnfd-1", "descriptorVersion": "1.0", "provider": "Acme",
            "productName": "Demo", "softwareVersion": "1.0",
            "toscaDefinitionsVersion": "tosca_simple_yaml_1_2", "vnfNodeType": "acme.VNF",
            "entryDefinitions": "Definitions/top.yaml", "flavours": []
        }))
        .unwrap(),
    )
}

fn lcm_op(hook: &str) -> LcmOperationType {
    let stem = hook
        .trim_end_matches("_start")
        .trim_end_matches("_end")
        .trim_end_matches("_rollback");
    let name = match stem {
        "instantiate" => "INSTANTIATE",
        "terminate" => "TERMINATE",
        "modify_information" => "MODIFY_INFO",
        "change_flavour" => "CHANGE_FLAVOUR",
        "change_external_connectivity" => "CHANGE_EXT_CONN",
        "operate" => "OPERATE",
        "heal" => "HEAL",
        "scale" => "SCALE",
        "scale_to_level" => "SCALE_TO_LEVEL",
        _ => "CHANGE_VNFPKG",
    };
    serde_json::from_value(json!(name)).unwrap()
}

/// A hook call bound to artifact `mgmt` with digest `sha256`.
fn call(hook: &str, sha256: Option<String>, inputs: Value) -> HookCall {
    let vim: VimConnectionInfo = serde_json::from_value(json!({
        "vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3",
        "interfaceInfo": {"endpoint": "http://127.0.0.1:35000/v3"},
        "accessInfo": {"username": "nfv", "password": "s3cr3t-vim-pa55"}
    }))
    .unwrap();
    HookCall {
        op_occ_id: VnfLcmOpOccId::new("op-1"),
        lcm_operation: lcm_op(hook),
        operation: hook.to_string(),
        artifact: HookArtifact {
            name: "mgmt".into(),
            file: "Plugins/plugin.so".into(),
            artifact_type: "tosca.artifacts.Implementation".into(),
            sha256,
            external: false,
            dependencies: vec![],
        },
        inputs: inputs
            .as_object()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .collect::<IndexMap<_, _>>(),
        request: json!({"flavourId": "simple"}),
        instance: json!({
            "id": "vnf-1", "vnfdId": "vnfd-1", "vnfProvider": "Acme", "vnfProductName": "Demo",
            "vnfSoftwareVersion": "1.0", "vnfdVersion": "1.0",
            "instantiationState": "NOT_INSTANTIATED", "_links": {"self": {"href": "/i/vnf-1"}}
        }),
        vnfd: vnfd(),
        flavour_id: Some("simple".into()),
        vims: vec![ResolvedVim::new("vim1", vim)],
        artifacts: Arc::new(MemArtifacts::new().with("Files/greeting.txt", "bonjour\n")),
        control: RunControl::with_timeout(Duration::from_secs(30)),
        error_handling_data: Value::Null,
        grant_request: None,
        grant: None,
        new_package: None,
    }
}

fn host(plugin: &str, isolation: Isolation) -> (PluginHost, Option<String>, tempfile::TempDir) {
    let lib = library(plugin);
    let sha = sha256_file(&lib);
    let dir = tempfile::tempdir().unwrap();
    let host = PluginHost::new(
        HostConfig::new(dir.path().join("cache"))
            .plugin("mgmt", lib, isolation)
            .runner(runner()),
    );
    (host, Some(sha), dir)
}

fn probe_of(out: &HookOutcome) -> &Value {
    &out.metadata.as_ref().expect("probe metadata")["probe"]
}

#[test]
fn handshake_reports_the_plugin_and_its_sdk() {
    let (host, _, _d) = host("noop", Isolation::InProcess);
    let hello = host.inspect(&library("noop")).unwrap();
    assert_eq!(hello.name, "vnfm-plugin-noop");
    assert_eq!(hello.version, env!("CARGO_PKG_VERSION"));
    assert_eq!(hello.sdk_version, vnfm_plugin_sdk::abi::SDK_VERSION);
    assert_eq!(hello.abi_version, vnfm_plugin_abi::ABI_VERSION);
    assert_eq!(hello.abi_version, 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn noop_answers_every_hook_with_no_change() {
    let (host, sha, _d) = host("noop", Isolation::InProcess);
    for hook in HOOKS {
        let out = host
            .call(&call(hook, sha.clone(), json!({})))
            .await
            .unwrap();
        assert!(out.is_noop(), "{hook}: {out:?}");
    }
}

async fn every_hook_reaches_its_method(isolation: Isolation) {
    let (host, sha, _d) = host("probe", isolation);
    for hook in HOOKS {
        let out = host
            .call(&call(hook, sha.clone(), json!({})))
            .await
            .unwrap();
        let p = probe_of(&out);
        assert_eq!(p["method"], *hook, "{isolation:?}");
        assert_eq!(p["hook"], *hook);
        assert_eq!(p["opOccId"], "op-1");
        assert_eq!(p["vnfInstanceId"], "vnf-1");
        assert_eq!(p["flavourId"], "simple");
        assert_eq!(p["artifact"], "mgmt");
        assert_eq!(p["vimConnections"], json!(["vim1"]));
        assert_eq!(
            p["lcmOperation"],
            serde_json::to_value(lcm_op(hook)).unwrap()
        );
        assert_eq!(out.error_handling_data, Some(json!({"attempts": 1})));
    }
}

/// A plugin receives the trace context of its hook's span, in process and in the runner, and
/// the span says a plugin ran in it.
#[tokio::test(flavor = "multi_thread")]
async fn a_plugin_gets_the_traceparent_of_its_hook_span() {
    use tracing::Instrument;
    use vnfm_trace::testing::{attribute, capture, trace_id, traceparent_of};
    let captured = capture();
    for isolation in [Isolation::InProcess, Isolation::Process] {
        let (host, sha, _d) = host("probe", isolation);
        let hook = tracing::info_span!(
            "lcm.hook",
            hook = "instantiate_end",
            hook.kind = tracing::field::Empty
        );
        let trace = trace_id(&hook);
        let out = host
            .call(&call("instantiate_end", sha, json!({})))
            .instrument(hook.clone())
            .await
            .unwrap();
        drop(hook);
        let spans = captured.named(trace, "lcm.hook");
        assert_eq!(attribute(&spans[0], "hook.kind").as_deref(), Some("plugin"));
        assert_eq!(
            probe_of(&out)["traceparent"],
            traceparent_of(&spans[0]),
            "{isolation:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_hook_reaches_its_method_in_process() {
    every_hook_reaches_its_method(Isolation::InProcess).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_hook_reaches_its_method_in_the_isolated_runner() {
    every_hook_reaches_its_method(Isolation::Process).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn hello_reads_package_files_and_error_handling_data_round_trips() {
    for isolation in [Isolation::InProcess, Isolation::Process] {
        let (host, sha, _d) = host("hello", isolation);
        let c = call(
            "instantiate_end",
            sha.clone(),
            json!({"greeting_file": "Files/greeting.txt"}),
        );
        let out = host.call(&c).await.unwrap();
        assert_eq!(
            out.metadata.unwrap()["hello"],
            json!({"greeting": "bonjour", "vnfcs": 0})
        );
        let out = host
            .call(&call("terminate_end", sha, json!({})))
            .await
            .unwrap();
        assert_eq!(out.metadata.unwrap()["hello"], Value::Null);

        // A missing package file fails the hook with invalid input, naming the file.
        let (host, sha, _d) = self::host("hello", isolation);
        let c = call(
            "instantiate_end",
            sha,
            json!({"greeting_file": "Files/none.txt"}),
        );
        let err = host.call(&c).await.unwrap_err();
        assert!(matches!(err, DriverError::InvalidInput { .. }), "{err:?}");
        assert!(err.to_string().contains("Files/none.txt"), "{err}");
    }
    let (host, sha, _d) = host("probe", Isolation::Process);
    let mut c = call("scale_end", sha, json!({"read": "Files/greeting.txt"}));
    c.error_handling_data = json!({"attempts": 2});
    let out = host.call(&c).await.unwrap();
    assert_eq!(probe_of(&out)["read"], 8);
    assert_eq!(probe_of(&out)["previousData"], json!({"attempts": 2}));
    assert_eq!(out.error_handling_data, Some(json!({"attempts": 3})));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_library_whose_digest_differs_from_the_vnfd_is_not_loaded() {
    let (host, _, _d) = host("probe", Isolation::InProcess);
    let wrong = "0".repeat(64);
    let err = host
        .call(&call(
            "instantiate_end",
            Some(wrong.clone()),
            json!({"abort": true}),
        ))
        .await
        .unwrap_err();
    assert!(matches!(err, DriverError::InvalidInput { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains(&wrong) && msg.contains("SHA-256"), "{msg}");
    // Nothing was loaded: the probe's abort would have ended this test process.
}

#[tokio::test(flavor = "multi_thread")]
async fn package_libraries_are_loaded_by_digest_from_the_package() {
    let lib = library("hello");
    let bytes = std::fs::read(&lib).unwrap();
    let sha = sha256_file(&lib);
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let host = PluginHost::new(
        HostConfig::new(&cache)
            .package_libraries(Isolation::Process)
            .runner(runner()),
    );
    let mut c = call("instantiate_end", Some(sha.clone()), json!({}));
    c.artifacts = Arc::new(MemArtifacts::new().with("Plugins/plugin.so", bytes.clone()));
    let out = host.call(&c).await.unwrap();
    assert_eq!(out.metadata.unwrap()["hello"]["greeting"], "hello");
    assert!(cache.join(format!("{sha}.so")).exists());
    assert_eq!(c.artifacts.sha256_hex("Plugins/plugin.so").unwrap(), sha);

    // Without a declared digest a package library is refused.
    c.artifact.sha256 = None;
    let err = host.call(&c).await.unwrap_err();
    assert!(err.to_string().contains("has no SHA-256 digest"), "{err}");

    // Tampered bytes do not match the declared digest.
    let mut tampered = bytes;
    tampered.push(0);
    c.artifact.sha256 = Some(sha);
    c.artifacts = Arc::new(MemArtifacts::new().with("Plugins/plugin.so", tampered));
    let host = PluginHost::new(
        HostConfig::new(dir.path().join("cache2")).package_libraries(Isolation::Process),
    );
    let err = host.call(&c).await.unwrap_err();
    assert!(matches!(err, DriverError::InvalidInput { .. }), "{err:?}");

    // Packages may not ship libraries unless the host allows it.
    let host = PluginHost::new(HostConfig::new(dir.path().join("cache3")));
    let err = host.call(&c).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("loading plugin libraries from packages is disabled"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn version_mismatches_are_refused_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    for (cfg, expect) in [
        // A plugin built with the SDK before the ABI crate (ABI version 1).
        (
            "abi1",
            "was built for plugin ABI version 1, but this VNFM accepts plugin ABI version 2 only; \
             rebuild the plugin against a vnfm-plugin-sdk that speaks ABI version 2",
        ),
        (
            "abi3",
            "was built for plugin ABI version 3, but this VNFM accepts plugin ABI version 2 only",
        ),
    ] {
        let lib = fake_library(dir.path(), cfg);
        let sha = sha256_file(&lib);
        for isolation in [Isolation::InProcess, Isolation::Process] {
            let host = PluginHost::new(
                HostConfig::new(dir.path().join("cache"))
                    .plugin("mgmt", &lib, isolation)
                    .runner(runner()),
            );
            let err = host
                .call(&call("instantiate_end", Some(sha.clone()), json!({})))
                .await
                .unwrap_err();
            assert!(matches!(err, DriverError::Permanent { .. }), "{err:?}");
            assert!(err.to_string().contains(expect), "{isolation:?}: {err}");
        }
        let err = PluginHost::new(HostConfig::new(dir.path()))
            .inspect(&lib)
            .unwrap_err();
        assert!(err.to_string().contains(expect), "{err}");
    }
    // The SDK version a plugin reports is informational: ABI version 2 is all that counts.
    let lib = fake_library(dir.path(), "sdk9");
    let hello = PluginHost::new(HostConfig::new(dir.path()))
        .inspect(&lib)
        .unwrap();
    assert_eq!(
        (
            hello.abi_version,
            hello.sdk_version.as_str(),
            hello.name.as_str()
        ),
        (2, "9.0.0", "sdk9")
    );
    // A library without the entry point.
    let err = PluginHost::new(HostConfig::new(dir.path()))
        .inspect(std::path::Path::new("/lib/x86_64-linux-gnu/libm.so.6"))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("does not export `vnfm_mgmt_driver_v1`"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_panicking_hook_fails_the_hook_not_the_host() {
    for isolation in [Isolation::InProcess, Isolation::Process] {
        let (host, sha, _d) = host("probe", isolation);
        let err = host
            .call(&call(
                "heal_start",
                sha.clone(),
                json!({"panic": "node table corrupt"}),
            ))
            .await
            .unwrap_err();
        assert!(matches!(err, DriverError::Permanent { .. }), "{err:?}");
        let msg = err.to_string();
        assert!(
            msg.contains("panicked") && msg.contains("node table corrupt"),
            "{msg}"
        );
        // The same library keeps working.
        host.call(&call("heal_end", sha, json!({}))).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn alarms_and_indicator_values_cross_the_abi_and_bad_ones_are_named() {
    for isolation in [Isolation::InProcess, Isolation::Process] {
        let (host, sha, _d) = host("probe", isolation);
        let out = host
            .call(&call(
                "instantiate_end",
                sha.clone(),
                json!({
                    "alarms": [{"vnfcInstanceId": "VDU1-0", "faultType": "DiskFull",
                                "probableCause": "disk full", "perceivedSeverity": "MAJOR",
                                "eventType": "PROCESSING_ERROR_ALARM",
                                "faultDetails": ["/var at 97%"]}],
                    "indicators": {"load": 7}
                }),
            ))
            .await
            .unwrap();
        assert_eq!(out.alarms.len(), 1);
        assert_eq!(out.alarms[0].severity, vnfm_types::PerceivedSeverity::Major);
        assert_eq!(out.alarms[0].vnfc_instance_id.as_deref(), Some("VDU1-0"));
        assert_eq!(out.alarms[0].details, ["/var at 97%"]);
        assert_eq!(out.indicator_values["load"], json!(7));
        let err = host
            .call(&call(
                "instantiate_end",
                sha,
                json!({"alarms": [{"probableCause": "x", "perceivedSeverity": "SEVERE",
                                   "eventType": "QOS_ALARM"}]}),
            ))
            .await
            .unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("alarms[0]: perceivedSeverity \"SEVERE\" is not one of"),
            "{msg}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn plugin_errors_keep_their_kind_and_lose_vim_secrets() {
    let (host, sha, _d) = host("probe", Isolation::InProcess);
    let fail = |kind: &str| json!({"fail": {"kind": kind, "message": "keystone said no to s3cr3t-vim-pa55"}});
    let err = host
        .call(&call("scale_start", sha.clone(), fail("transient")))
        .await
        .unwrap_err();
    assert!(err.is_retryable(), "{err:?}");
    assert!(!err.to_string().contains("s3cr3t-vim-pa55"), "{err}");
    assert!(err.to_string().contains("keystone said no to ***"), "{err}");
    let err = host
        .call(&call("scale_start", sha, fail("invalidInput")))
        .await
        .unwrap_err();
    assert!(matches!(err, DriverError::InvalidInput { .. }), "{err:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hook_past_its_deadline_times_out() {
    for isolation in [Isolation::InProcess, Isolation::Process] {
        let (host, sha, _d) = host("probe", isolation);
        let mut c = call("instantiate_end", sha.clone(), json!({"sleep_ms": 20_000}));
        c.control = RunControl::with_timeout(Duration::from_millis(300));
        let err = host.call(&c).await.unwrap_err();
        assert!(
            matches!(err, DriverError::Timeout { .. }),
            "{isolation:?}: {err:?}"
        );
        assert!(err.to_string().contains("hook instantiate_end"), "{err}");
        // A hook that watches the flag stops by itself when the host gives up.
        let mut c = call(
            "instantiate_end",
            sha,
            json!({"sleep_ms": 20_000, "honour_cancel": true}),
        );
        let flag = CancellationFlag::new();
        c.control = RunControl::new(Duration::from_secs(30), flag.clone());
        let cancel = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            flag.cancel();
        });
        let err = host.call(&c).await.unwrap_err();
        assert!(matches!(err, DriverError::Cancelled { .. }), "{err:?}");
        cancel.await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_aborting_plugin_in_the_isolated_runner_fails_only_its_hook() {
    let (host, sha, _d) = host("probe", Isolation::Process);
    let err = host
        .call(&call(
            "instantiate_end",
            sha.clone(),
            json!({"abort": true}),
        ))
        .await
        .unwrap_err();
    assert!(matches!(err, DriverError::Permanent { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("crashed during hook instantiate_end"), "{msg}");
    assert!(msg.contains("SIGABRT"), "{msg}");
    // This process, and the plugin, carry on.
    let out = host
        .call(&call("instantiate_end", sha, json!({"log": "still here"})))
        .await
        .unwrap();
    assert_eq!(probe_of(&out)["method"], "instantiate_end");
}

/// A runner killed while it writes a frame leaves a line without its end: the host reports
/// the crash and the signal, not an unreadable frame.
#[tokio::test(flavor = "multi_thread")]
async fn a_runner_killed_mid_frame_is_reported_as_a_crash() {
    let lib = library("probe");
    let sha = sha256_file(&lib);
    let dir = tempfile::tempdir().unwrap();
    let runner = dir.path().join("torn-runner.sh");
    std::fs::write(
        &runner,
        "#!/bin/sh\nprintf '\\n\\036vnfm-plugin {\"t\":\"ready\",\"hel'\nkill -KILL $$\n",
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&runner, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let host = PluginHost::new(
        HostConfig::new(dir.path().join("cache"))
            .plugin("mgmt", lib, Isolation::Process)
            .runner(&runner),
    );
    let err = host
        .call(&call("instantiate_end", Some(sha), json!({})))
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("crashed during hook instantiate_end"), "{msg}");
    assert!(msg.contains("SIGKILL"), "{msg}");
    assert!(msg.contains("while it wrote a frame"), "{msg}");
}

/// What onboarding asks the host before any hook runs: which artifacts it cannot run, and why
/// (no library configured and package libraries off; an external artifact; no digest).
#[test]
fn cannot_run_names_what_the_host_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let artifact = |name: &str, sha256: Option<&str>, external: bool| HookArtifact {
        name: name.into(),
        file: "Plugins/plugin.so".into(),
        artifact_type: "tosca.artifacts.Implementation".into(),
        sha256: sha256.map(str::to_owned),
        external,
        dependencies: vec![],
    };
    let digest = "ab".repeat(32);
    let host = PluginHost::new(HostConfig::new(dir.path().join("c1")).plugin(
        "installed",
        dir.path().join("lib.so"),
        Isolation::Process,
    ));
    assert_eq!(host.cannot_run(&artifact("installed", None, false)), None);
    let why = host
        .cannot_run(&artifact("other", Some(&digest), false))
        .unwrap();
    assert!(
        why.contains("`other`") && why.contains("not loaded"),
        "{why}"
    );
    let host = PluginHost::new(
        HostConfig::new(dir.path().join("c2")).package_libraries(Isolation::Process),
    );
    assert_eq!(
        host.cannot_run(&artifact("mgmt", Some(&digest), false)),
        None
    );
    let why = host.cannot_run(&artifact("mgmt", None, false)).unwrap();
    assert!(why.contains("no SHA-256 digest"), "{why}");
    let why = host
        .cannot_run(&artifact("mgmt", Some(&digest), true))
        .unwrap();
    assert!(why.contains("outside the package"), "{why}");
}

/// An observation of the instance `call` (hook `instantiate_end`) names, whose metadata tells
/// the probe what to report.
fn observe_call(sha256: Option<String>, metadata: Value) -> vnfm_driver_api::ObserveCall {
    let hook = call("instantiate_end", sha256, json!({}));
    let mut instance = hook.instance.clone();
    instance["metadata"] = metadata;
    vnfm_driver_api::ObserveCall {
        artifact: hook.artifact,
        instance,
        vnfd: hook.vnfd,
        flavour_id: hook.flavour_id,
        vims: hook.vims,
        artifacts: hook.artifacts,
        control: RunControl::with_timeout(Duration::from_secs(30)),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plugin_that_observes_answers_between_operations_and_others_are_unsupported() {
    for isolation in [Isolation::InProcess, Isolation::Process] {
        let (probe, sha, _d) = host("probe", isolation);
        let alarm = json!({"faultType": "AppDown", "probableCause": "no answer",
                           "perceivedSeverity": "CRITICAL", "eventType": "PROCESSING_ERROR_ALARM"});
        let out = probe
            .observe(&observe_call(
                sha.clone(),
                json!({"probeObserve": {"alarms": [alarm], "indicators": {"load": 3}}}),
            ))
            .await
            .unwrap();
        assert_eq!(out.alarms.len(), 1, "{isolation:?}");
        assert_eq!(out.alarms[0].probable_cause, "no answer");
        assert_eq!(out.indicator_values["load"], json!(3));
        // The probe saw an observation: no operation, no occurrence.
        assert_eq!(probe_of(&out)["method"], "observe");
        assert_eq!(
            probe_of(&out)["hook"],
            vnfm_plugin_abi::protocol::OBSERVE_HOOK
        );
        assert_eq!(probe_of(&out)["opOccId"], "");

        // noop's handshake says it does not observe: unsupported, the first time (the
        // handshake) and the next (remembered).
        let (noop, sha, _d) = host("noop", isolation);
        for _ in 0..2 {
            let err = noop
                .observe(&observe_call(sha.clone(), json!({})))
                .await
                .unwrap_err();
            assert!(
                matches!(err, DriverError::Unsupported { .. }),
                "{isolation:?}: {err}"
            );
        }
    }
}
