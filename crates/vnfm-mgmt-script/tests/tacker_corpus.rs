//! Tacker's own sample package `basic_lcms_min` (the `v2-vm-basic-lcms-min` directory of the
//! Tacker sample corpus), whose `Vnflcm` hooks are bound to the Python artifact
//! `../Scripts/sample_script.py`.
//!
//! The corpus is a data-only copy: it keeps the VNFD, the HOT templates and `TOSCA.meta` but
//! not the Python script itself. The first test therefore runs the real package with a
//! Tacker-style script at the path the VNFD declares; the second runs Tacker's
//! `sample_script.py` unchanged when given its path.

use crate::support;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value as Json, json};
use support::*;
use vnfm_driver_api::{ArtifactSource, MgmtDriver};
use vnfm_mgmt_script::{PYTHON_ARTIFACT_TYPE, ScriptMgmtDriver};

const PACKAGE: &str = "v2-vm-basic-lcms-min";

/// Tacker's sample packages in the corpus.
fn corpus() -> PathBuf {
    vnfm_test_env::corpus("tacker")
}

/// A package directory, with files overlaid on it.
struct Dir {
    root: PathBuf,
    overlay: Vec<(String, Vec<u8>)>,
}

impl ArtifactSource for Dir {
    fn read(&self, path: &str) -> std::io::Result<Vec<u8>> {
        if let Some((_, b)) = self.overlay.iter().find(|(p, _)| p == path) {
            return Ok(b.clone());
        }
        std::fs::read(self.root.join(path))
    }

    fn paths(&self) -> Option<Vec<String>> {
        fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
            for e in std::fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    walk(root, &p, out);
                } else {
                    out.push(p.strip_prefix(root).unwrap().to_string_lossy().into_owned());
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.root, &self.root, &mut out);
        for (p, _) in &self.overlay {
            if !out.contains(p) {
                out.push(p.clone());
            }
        }
        Some(out)
    }
}

/// The Python artifact of the package's deployment flavour and the hooks bound to it, read
/// from `Definitions/` (its `file` is relative to the definitions file, as TOSCA says).
fn python_hooks(root: &Path) -> (String, Vec<String>) {
    for entry in std::fs::read_dir(root.join("Definitions")).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let Some(at) = lines
            .iter()
            .position(|l| l.trim() == format!("type: {PYTHON_ARTIFACT_TYPE}"))
        else {
            continue;
        };
        let file = lines[at..]
            .iter()
            .find_map(|l| l.trim().strip_prefix("file: "))
            .expect("the artifact has a file");
        // Definitions/../Scripts/x.py -> Scripts/x.py
        let file = file.strip_prefix("../").expect("relative to Definitions/");
        let start = lines.iter().position(|l| l.trim() == "Vnflcm:").unwrap();
        let hooks = lines[start + 1..]
            .iter()
            .take_while(|l| !l.trim().starts_with("artifacts:"))
            .filter(|l| l.trim().ends_with(':'))
            .map(|l| l.trim().trim_end_matches(':').to_string())
            .collect();
        return (file.to_string(), hooks);
    }
    panic!("no {PYTHON_ARTIFACT_TYPE} artifact in {}", root.display());
}

/// A Tacker-style script checking that the package is in `tmp_csar_dir` the way Tacker lays
/// it out, and that the script can be found the way Tacker computes its path.
const CHECKING_SCRIPT: &str = r#"
import os, pickle, sys

script_dict = pickle.load(sys.stdin.buffer)
csar_dir = script_dict['tmp_csar_dir']
for f in ['TOSCA-Metadata/TOSCA.meta', 'Definitions/v2_sample2_top.vnfd.yaml',
          'Definitions/v2_sample2_df_simple.yaml', 'BaseHOT/simple/sample2.yaml',
          'BaseHOT/simple/nested/VDU1.yaml']:
    if not os.path.isfile(os.path.join(csar_dir, f)):
        raise Exception('%s is not in tmp_csar_dir' % f)
if not os.path.isfile(os.path.join(csar_dir, 'Definitions', '../Scripts/sample_script.py')):
    raise Exception('the script is not where Tacker looks for it')
req = script_dict['request']
if req['flavourId'] != 'simple':
    raise Exception('unexpected request')
done = script_dict['user_script_err_handling_data'].get('done', [])
pickle.dump({'user_script_err_handling_data': {'done': done + [script_dict['operation']]}},
            sys.stdout.buffer)
"#;

/// The getting-started instantiate request of Tacker's v2 documentation, with the VIM
/// connection of our test VIM.
fn request() -> Json {
    json!({
        "flavourId": "simple",
        "vimConnectionInfo": {"vim1": {"vimId": "vim-1", "vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3"}},
        "additionalParams": {"lcm-operation-user-data": "./UserData/userdata_default.py"}
    })
}

async fn run_hooks(files: Arc<dyn ArtifactSource>, script: &str, hooks: &[String]) -> Json {
    let driver = ScriptMgmtDriver::default();
    let mut data = Json::Null;
    for hook in hooks {
        let mut c = call("occ-tacker", files.clone(), request(), control());
        c.operation = hook.clone();
        c.artifact = artifact(script);
        c.artifact.name = "sample-script".into();
        c.error_handling_data = data.clone();
        let out = driver
            .call(&c)
            .await
            .unwrap_or_else(|e| panic!("{hook}: {e}"));
        if let Some(d) = out.error_handling_data {
            data = d;
        }
    }
    data
}

#[vnfm_test_env::needs(corpus)]
#[tokio::test]
async fn tacker_sample_package_runs_its_hooks_from_the_declared_script_path() {
    let root = corpus().join(PACKAGE);
    assert!(root.is_dir(), "{} is missing", root.display());
    let (script, hooks) = python_hooks(&root);
    assert_eq!(script, "Scripts/sample_script.py");
    assert!(
        hooks.contains(&"instantiate_start".to_string()),
        "{hooks:?}"
    );
    let files = Arc::new(Dir {
        root,
        overlay: vec![(script.clone(), CHECKING_SCRIPT.as_bytes().to_vec())],
    });
    let data = run_hooks(files, &script, &hooks).await;
    assert_eq!(data["done"], json!(hooks));
}

/// Tacker's own `sample_script.py` of the `basic_lcms_min` sample (in Tacker's source
/// distribution; the corpus copy of the package omits its Python) runs every hook the VNFD
/// binds, unchanged.
#[vnfm_test_env::needs(corpus, tacker_source)]
#[tokio::test]
async fn tacker_sample_script_runs_unchanged() {
    let root = corpus().join(PACKAGE);
    let real = vnfm_test_env::tacker_source(
        "samples/tests/functional/sol_v2_common/basic_lcms_min/contents/Scripts/sample_script.py",
    );
    let (script, hooks) = python_hooks(&root);
    let files = Arc::new(Dir {
        root,
        overlay: vec![(script.clone(), std::fs::read(real).unwrap())],
    });
    // Tacker's sample script answers nothing on success: every hook is a no-op.
    let data = run_hooks(files, &script, &hooks).await;
    assert_eq!(data, Json::Null);
}
