//! What the Tacker flows replayed with the real OpenStack client share: a VIM registered
//! from a `vim.yaml`, and a corpus package onboarded with Tacker's no-op management script
//! added, as Tacker's functional harness adds it.

use std::process::Command;

use crate::openstack_client::{Setup, wait_for};

/// The management script Tacker's functional harness adds to its CNF packages: every hook of
/// the VNFD does nothing (Tacker's `sample_script.py` protocol: a pickled dict in, the
/// instance out).
const SCRIPT: &str = r#"import os
import pickle
import sys


class SampleScript(object):
    def __init__(self, inst):
        self.inst = inst

    def _noop(self):
        pass

    instantiate_start = instantiate_end = _noop
    terminate_start = terminate_end = _noop
    scale_start = scale_end = heal_start = heal_end = _noop
    modify_information_start = modify_information_end = _noop


def main():
    script_dict = pickle.load(sys.stdin.buffer)
    script = SampleScript(script_dict['vnf_instance'])
    getattr(script, script_dict['operation'])()
    sys.stdout.buffer.write(pickle.dumps({'vnf_instance': script.inst}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
    os._exit(0)
"#;
/// Corpus package `package` (a directory, relative to the corpus) zipped as `<name>.zip` in the test's directory,
/// with Tacker's no-op management script ([`SCRIPT`]) added as `Scripts/sample_script.py`.
fn corpus_zip(s: &Setup, package: &str, name: &str) -> String {
    let copy = s.dir.path().join(name);
    let status = Command::new("cp")
        .arg("-r")
        .arg(vnfm_test_env::corpus(package))
        .arg(&copy)
        .status()
        .unwrap();
    assert!(status.success(), "copying {package}");
    std::fs::create_dir_all(copy.join("Scripts")).unwrap();
    std::fs::write(copy.join("Scripts/sample_script.py"), SCRIPT).unwrap();
    let zip = s.dir.path().join(format!("{name}.zip"));
    let entries: Vec<String> = std::fs::read_dir(&copy)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let status = Command::new(crate::openstack_client::openstack_cli().with_file_name("python"))
        .args(["-m", "zipfile", "-c"])
        .arg(&zip)
        .args(&entries)
        .current_dir(&copy)
        .status()
        .unwrap();
    assert!(status.success(), "zipping {package}");
    zip.to_string_lossy().into_owned()
}

/// `openstack vim register --config-file <yaml> NAME` with `yaml` written to the test's
/// directory; asserts the VIM's type is `vim_type` and answers its id.
pub(crate) fn register_vim(s: &Setup, yaml: &str, name: &str, vim_type: &str) -> String {
    let file = s.dir.path().join(format!("{name}-vim.yaml"));
    std::fs::write(&file, yaml).unwrap();
    let vim = s.os.json(&[
        "vim",
        "register",
        "--config-file",
        file.to_str().unwrap(),
        name,
    ]);
    assert_eq!(vim["type"], vim_type, "{vim}");
    vim["id"].as_str().expect("id").to_owned()
}

/// Corpus package `package` zipped as `<name>.zip` with [`SCRIPT`] ([`corpus_zip`]), created
/// and uploaded with `openstack vnf package create` and `upload`; waits until it is onboarded
/// and answers its VNFD id.
pub(crate) fn onboard_corpus_package(s: &Setup, package: &str, name: &str) -> String {
    let os = &s.os;
    let pkg = os.json(&["vnf", "package", "create"])["ID"]
        .as_str()
        .expect("ID")
        .to_owned();
    let zip = corpus_zip(s, package, name);
    os.ok(&["vnf", "package", "upload", "--path", &zip, &pkg]);
    let shown = wait_for(&format!("package {package} to be onboarded"), || {
        let shown = os.json(&["vnf", "package", "show", &pkg]);
        (shown["Onboarding State"] != "PROCESSING" && shown["Onboarding State"] != "UPLOADING")
            .then_some(shown)
    });
    assert_eq!(shown["Onboarding State"], "ONBOARDED", "{shown}");
    shown["VNFD ID"].as_str().expect("VNFD ID").to_owned()
}
