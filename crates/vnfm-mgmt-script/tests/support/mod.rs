//! Shared helpers of the script driver tests: hook calls over in-memory packages, and
//! checks on processes.

#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value as Json, json};
use vnfm_driver_api::memory::MemArtifacts;
use vnfm_driver_api::{ArtifactSource, HookArtifact, HookCall, ResolvedVim, RunControl};
use vnfm_mgmt_script::PYTHON_ARTIFACT_TYPE;
use vnfm_types::{LcmOperationType, VnfLcmOpOccId};

/// Package path of the hook script in [`package`].
pub const SCRIPT: &str = "Scripts/hook.py";

/// A package holding `script` at [`SCRIPT`] and a VNFD file.
pub fn package(script: &str) -> MemArtifacts {
    MemArtifacts::new()
        .with(SCRIPT, script)
        .with(
            "Definitions/vnfd_top.yaml",
            "tosca_definitions_version: tosca_simple_yaml_1_2\n",
        )
        .with("Files/config/app.conf", "listen=0.0.0.0\n")
}

/// A minimal VNFD.
pub fn vnfd() -> vnfm_descriptor::Vnfd {
    serde_json::from_value(json!({
        "descriptorId": "d1", "descriptorVersion": "1.0", "provider": "Acme",
        "productName": "Demo", "softwareVersion": "1.0",
        "toscaDefinitionsVersion": "tosca_simple_yaml_1_2", "vnfNodeType": "acme.VNF",
        "entryDefinitions": "Definitions/vnfd_top.yaml", "flavours": []
    }))
    .unwrap()
}

/// The Python artifact at `file`, as onboarding records one the package holds (with a digest).
pub fn artifact(file: &str) -> HookArtifact {
    HookArtifact {
        name: "mgmt_script".into(),
        file: file.into(),
        artifact_type: PYTHON_ARTIFACT_TYPE.into(),
        sha256: Some("0".repeat(64)),
        external: false,
        dependencies: vec![],
    }
}

/// A VIM connection with a password, so that redaction can be checked.
pub fn vim() -> ResolvedVim {
    ResolvedVim::new(
        "vim1",
        serde_json::from_value(json!({
            "vimId": "vim-1",
            "vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3",
            "interfaceInfo": {"endpoint": "http://127.0.0.1:5000/v3"},
            "accessInfo": {"username": "nfv_user", "password": "s3cr3t-Pa55w0rd", "project": "nfv"}
        }))
        .unwrap(),
    )
}

/// The instance handed to the hooks.
pub fn instance() -> Json {
    json!({
        "id": "inst-1",
        "vnfdId": "d1",
        "instantiationState": "NOT_INSTANTIATED",
        "vimConnectionInfo": {"vim1": {"vimId": "vim-1", "vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3"}},
        "metadata": {"owner": "team-a", "tier": "gold"}
    })
}

/// An `instantiate_start` call of occurrence `occ` running the package's [`SCRIPT`].
pub fn call(
    occ: &str,
    files: Arc<dyn ArtifactSource>,
    request: Json,
    control: RunControl,
) -> HookCall {
    HookCall {
        op_occ_id: VnfLcmOpOccId::new(occ),
        lcm_operation: LcmOperationType::Instantiate,
        operation: "instantiate_start".into(),
        artifact: artifact(SCRIPT),
        inputs: Default::default(),
        request,
        instance: instance(),
        vnfd: Arc::new(vnfd()),
        flavour_id: Some("simple".into()),
        vims: vec![vim()],
        artifacts: files,
        control,
        error_handling_data: Json::Null,
        grant_request: None,
        grant: None,
        new_package: None,
    }
}

/// A control with a generous budget.
pub fn control() -> RunControl {
    RunControl::with_timeout(Duration::from_secs(60))
}

/// True once the process `pid` has terminated: gone, or a zombie waiting for its parent.
pub fn terminated(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // The state follows the command name in parentheses.
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.trim_start().starts_with(['Z', 'X']))
            .unwrap_or(false),
    }
}

/// Waits up to `within` for every pid to have terminated.
pub fn all_terminated(pids: &[u32], within: Duration) -> bool {
    let until = Instant::now() + within;
    loop {
        if pids.iter().all(|p| terminated(*p)) {
            return true;
        }
        if Instant::now() > until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits up to 10 s for `path` to exist and hold text, and returns the text.
pub async fn wait_for_file(path: &Path) -> String {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(s) = std::fs::read_to_string(path)
            && s.ends_with('\n')
        {
            return s;
        }
        assert!(Instant::now() < until, "{} never appeared", path.display());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
