//! The real OpenStack client (python-openstackclient with the python-tackerclient plugin, as
//! Tacker users run it) against `vnfm serve` with Keystone authentication: the server is
//! registered in Keystone's catalog as Tacker's service type `nfv-orchestration`, and the
//! tests drive `openstack vim`, `openstack vnf package` and `openstack vnflcm` (with
//! `--os-tacker-api-version 1` and `2`), asserting on the client's own output.
//!
//! Needs the Keystone of `scripts/test-env/openstack.sh start` (`VNFM_TEST_KEYSTONE_URL`,
//! `VNFM_TEST_OS_ADMIN_*`) and its `openstack` executable (`VNFM_TEST_OPENSTACK_CLI`): without
//! them at build time the tests are ignored, saying so (`#[vnfm_test_env::needs(...)]`).
//! Operations run on the test VIM (`--enable-test-vim`, `TEST.NOOP.V_1`), which fails steps
//! on request (`additionalParams.testVim`); the package is `vnfd-samples/tacker-script-vnf`,
//! whose `instantiate_end` runs a Python script in Tacker's style.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use vnfm_keystone::testing::{TestEndpoint, TestKeystone, TestUser};

use crate::support;
use support::Server;

const SAMPLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../vnfd-samples/tacker-script-vnf"
);

/// The `openstack` executable of `VNFM_TEST_OPENSTACK_CLI`.
pub(crate) fn openstack_cli() -> PathBuf {
    let p = PathBuf::from(vnfm_test_env::var("VNFM_TEST_OPENSTACK_CLI"));
    assert!(
        p.is_file(),
        "VNFM_TEST_OPENSTACK_CLI={} is not a file",
        p.display()
    );
    p
}

/// `vnfm serve` on loopback with Keystone authentication, the test VIM and no callback
/// check (subscriptions point at an address nothing listens on).
fn start_server(dir: &Path, keystone_url: &str, service: &TestUser) -> Server {
    let password_file = dir.join("keystone-password");
    std::fs::write(&password_file, service.password.expose()).unwrap();
    let mut command = support::serve_command(&dir.join("data"));
    command
        .args([
            "--enable-test-vim",
            "--no-callback-check",
            "--log-level",
            "warn",
        ])
        .args(["--keystone-url", keystone_url])
        .args(["--keystone-user", &service.name])
        .args(["--keystone-project", &service.project.name])
        .arg("--keystone-password-file")
        .arg(&password_file)
        .stderr(Stdio::inherit());
    Server::spawn(command, 0).0
}

/// The `openstack` command of a user, finding the server through the catalog region of the
/// test's endpoint.
pub(crate) struct Openstack {
    exe: PathBuf,
    env: Vec<(&'static str, String)>,
    /// Where request files are written.
    dir: PathBuf,
}

impl Openstack {
    pub(crate) fn new(
        exe: PathBuf,
        keystone_url: &str,
        user: &TestUser,
        region: &str,
        dir: &Path,
    ) -> Self {
        let env = vec![
            ("OS_AUTH_URL", keystone_url.to_owned()),
            ("OS_AUTH_TYPE", "password".to_owned()),
            ("OS_IDENTITY_API_VERSION", "3".to_owned()),
            ("OS_USERNAME", user.name.clone()),
            ("OS_PASSWORD", user.password.expose().to_owned()),
            ("OS_USER_DOMAIN_ID", "default".to_owned()),
            ("OS_PROJECT_ID", user.project.id.clone()),
            ("OS_REGION_NAME", region.to_owned()),
            ("OS_INTERFACE", "public".to_owned()),
        ];
        Openstack {
            exe,
            env,
            dir: dir.to_owned(),
        }
    }

    pub(crate) fn output(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(&self.exe);
        for (k, _) in std::env::vars() {
            if k.starts_with("OS_") {
                cmd.env_remove(k);
            }
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)))
            .env("HOME", &self.dir)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("the openstack client runs")
    }

    /// Runs `openstack ARGS`, which must succeed; its standard output.
    pub(crate) fn ok(&self, args: &[&str]) -> String {
        let out = self.output(args);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "openstack {}: {}\nstdout: {stdout}\nstderr: {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }

    /// Runs `openstack ARGS -f json`, which must succeed; its output parsed.
    pub(crate) fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.extend(["-f", "json"]);
        let text = self.ok(&all);
        serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("openstack {}: not JSON ({e}): {text}", args.join(" ")))
    }

    /// Runs `openstack ARGS`, which must fail; its standard error.
    pub(crate) fn fails(&self, args: &[&str]) -> String {
        let out = self.output(args);
        assert!(
            !out.status.success(),
            "openstack {} succeeded: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    /// Writes `body` to a request file named `name`; its path.
    pub(crate) fn file(&self, name: &str, body: &Value) -> String {
        let p = self.dir.join(name);
        std::fs::write(&p, serde_json::to_vec_pretty(body).unwrap()).unwrap();
        p.to_string_lossy().into_owned()
    }
}

/// Identities, the server and its catalog entry of one test.
pub(crate) struct Setup {
    pub(crate) keystone: TestKeystone,
    pub(crate) endpoint: TestEndpoint,
    pub(crate) server: Server,
    pub(crate) os: Openstack,
    /// The user `os` runs as.
    pub(crate) user: TestUser,
    pub(crate) rt: tokio::runtime::Runtime,
    pub(crate) dir: tempfile::TempDir,
}

impl Setup {
    pub(crate) fn new() -> Setup {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let keystone = rt.block_on(TestKeystone::from_env());
        let exe = openstack_cli();
        let dir = tempfile::tempdir().unwrap();
        let (service, _) = rt.block_on(keystone.service_user());
        let project = rt.block_on(keystone.project("tacker"));
        let user = rt.block_on(keystone.user("tacker-user", &project, &["member", "reader"]));
        let server = start_server(dir.path(), &keystone.url, &service);
        let endpoint = rt.block_on(keystone.register_endpoint("nfv-orchestration", &server.base));
        let os = Openstack::new(exe, &keystone.url, &user, &endpoint.region, dir.path());
        Setup {
            keystone,
            endpoint,
            server,
            os,
            user,
            rt,
            dir,
        }
    }

    /// The sample package zipped (with the venv's Python, the client's own toolchain).
    fn package_zip(&self) -> String {
        let python = self.os.exe.with_file_name("python");
        let zip = self.dir.path().join("tacker-script-vnf.zip");
        let status = Command::new(python)
            .args(["-m", "zipfile", "-c"])
            .arg(&zip)
            .args(["Definitions", "Scripts", "TOSCA-Metadata", "script.mf"])
            .current_dir(SAMPLE)
            .status()
            .unwrap();
        assert!(status.success(), "zipping the sample package");
        zip.to_string_lossy().into_owned()
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        self.rt
            .block_on(self.keystone.remove_endpoint(&self.endpoint));
        let _ = &self.server;
    }
}

/// Polls `what` until it returns `Some`, for at most 60 s.
pub(crate) fn wait_for<T>(what: &str, f: impl FnMut() -> Option<T>) -> T {
    wait_within(Duration::from_secs(60), what, f)
}

/// Polls `what` until it returns `Some`, for at most `limit`.
pub(crate) fn wait_within<T>(limit: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `openstack vnf package create`, `upload` (the sample's zip) and `show` until onboarded;
/// the package id and its VNFD id.
pub(crate) fn onboard(s: &Setup) -> (String, String) {
    let os = &s.os;
    let created = os.json(&[
        "vnf",
        "package",
        "create",
        "--user-data",
        "owner=tacker-test",
    ]);
    let pkg = created["ID"].as_str().expect("ID").to_owned();
    assert_eq!(created["Onboarding State"], "CREATED", "{created}");
    assert_eq!(
        created["User Defined Data"]["owner"], "tacker-test",
        "{created}"
    );
    let zip = s.package_zip();
    let out = os.ok(&["vnf", "package", "upload", "--path", &zip, &pkg]);
    assert!(
        out.contains(&format!(
            "Upload request for VNF package {pkg} has been accepted"
        )),
        "{out}"
    );
    let shown = wait_for("the package to be onboarded", || {
        let shown = os.json(&["vnf", "package", "show", &pkg]);
        (shown["Onboarding State"] == "ONBOARDED").then_some(shown)
    });
    assert_eq!(shown["Operational State"], "ENABLED", "{shown}");
    let vnfd = shown["VNFD ID"].as_str().expect("VNFD ID").to_owned();
    (pkg, vnfd)
}

#[vnfm_test_env::needs(keystone, openstack_cli)]
#[test]
fn vim_register_list_show_set_delete() {
    let s = Setup::new();
    let os = &s.os;
    let openstack_yaml = s.dir.path().join("openstack-vim.yaml");
    std::fs::write(
        &openstack_yaml,
        format!(
            "auth_url: '{}'\nusername: 'nfv_user'\npassword: 'devstack-secret'\nproject_name: 'nfv'\nproject_domain_name: 'Default'\nuser_domain_name: 'Default'\ncert_verify: 'False'\n",
            s.keystone.url
        ),
    )
    .unwrap();
    let k8s_yaml = s.dir.path().join("k8s-vim.yaml");
    std::fs::write(
        &k8s_yaml,
        "auth_url: 'https://127.0.0.1:6443'\nbearer_token: 'k8s-secret-token'\nproject_name: 'default'\ntype: 'kubernetes'\n",
    )
    .unwrap();
    let vim = os.json(&[
        "vim",
        "register",
        "--config-file",
        openstack_yaml.to_str().unwrap(),
        "--description",
        "the test OpenStack",
        "openstack-vim",
    ]);
    let os_id = vim["id"].as_str().expect("id").to_owned();
    assert_eq!(vim["name"], "openstack-vim", "{vim}");
    assert_eq!(vim["type"], "openstack", "{vim}");
    assert!(!vim.to_string().contains("devstack-secret"), "{vim}");
    let k8s = os.json(&[
        "vim",
        "register",
        "--config-file",
        k8s_yaml.to_str().unwrap(),
        "--is-default",
        "k8s-vim",
    ]);
    let k8s_id = k8s["id"].as_str().expect("id").to_owned();
    assert_eq!(k8s["type"], "kubernetes", "{k8s}");
    assert!(!k8s.to_string().contains("k8s-secret-token"), "{k8s}");

    let list = os.json(&["vim", "list"]);
    let names: Vec<&str> = list
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|v| v["Name"].as_str())
        .collect();
    assert!(
        names.contains(&"openstack-vim") && names.contains(&"k8s-vim"),
        "{list}"
    );

    let shown = os.json(&["vim", "show", &os_id]);
    assert_eq!(shown["description"], "the test OpenStack", "{shown}");
    assert_eq!(shown["auth_url"], format!("{}", s.keystone.url), "{shown}");
    let shown = os.json(&["vim", "show", &k8s_id]);
    assert_eq!(shown["is_default"], true, "{shown}");

    let set = os.json(&["vim", "set", "--description", "renamed", &os_id]);
    assert_eq!(set["description"], "renamed", "{set}");

    let out = os.ok(&["vim", "delete", &os_id, &k8s_id]);
    assert!(out.contains("deleted successfully"), "{out}");
    let err = os.fails(&["vim", "show", &os_id]);
    assert!(
        err.contains(&format!("Unable to find vim with name '{os_id}'")),
        "{err}"
    );
}

/// `openstack ... --os-tacker-api-version V` for one API version, remembering the
/// occurrences it has seen.
pub(crate) struct Lcm<'a> {
    os: &'a Openstack,
    version: &'a str,
    seen: std::cell::RefCell<std::collections::BTreeSet<String>>,
}

impl<'a> Lcm<'a> {
    pub(crate) fn new(os: &'a Openstack, version: &'a str) -> Self {
        Lcm {
            os,
            version,
            seen: Default::default(),
        }
    }

    fn args<'b>(&'b self, args: &[&'b str]) -> Vec<&'b str> {
        let mut all = args.to_vec();
        all.extend(["--os-tacker-api-version", self.version]);
        all
    }

    pub(crate) fn ok(&self, args: &[&str]) -> String {
        self.os.ok(&self.args(args))
    }

    pub(crate) fn json(&self, args: &[&str]) -> Value {
        self.os.json(&self.args(args))
    }

    pub(crate) fn fails(&self, args: &[&str]) -> String {
        self.os.fails(&self.args(args))
    }

    /// Writes a request file for this version.
    pub(crate) fn file(&self, name: &str, body: &Value) -> String {
        self.os.file(&format!("v{}-{name}", self.version), body)
    }

    /// The next occurrence of `vnf` (one `vnflcm op list` has not shown before) once it is
    /// no longer running, as `vnflcm op show` shows it; checks its operation.
    pub(crate) fn next_op(&self, vnf: &str, operation: &str) -> Value {
        let id = wait_for(&format!("the {operation} of {vnf}"), || {
            let list = self.json(&["vnflcm", "op", "list"]);
            let seen = self.seen.borrow();
            list.as_array()
                .expect("a list")
                .iter()
                .find(|o| {
                    o["VNF Instance ID"] == vnf
                        && !seen.contains(o["ID"].as_str().unwrap_or_default())
                        && !["STARTING", "PROCESSING", "ROLLING_BACK"]
                            .contains(&o["Operation State"].as_str().unwrap_or_default())
                })
                .map(|o| o["ID"].as_str().unwrap().to_owned())
        });
        self.seen.borrow_mut().insert(id.clone());
        let shown = self.json(&["vnflcm", "op", "show", &id]);
        assert_eq!(shown["Operation"], operation, "{shown}");
        shown
    }

    /// The occurrence `id` once it is no longer running.
    pub(crate) fn settled(&self, id: &str) -> Value {
        wait_for(&format!("occurrence {id}"), || {
            let shown = self.json(&["vnflcm", "op", "show", id]);
            (!["STARTING", "PROCESSING", "ROLLING_BACK"]
                .contains(&shown["Operation State"].as_str().unwrap_or_default()))
            .then_some(shown)
        })
    }

    fn vim_connection_info(&self) -> Value {
        if self.version == "1" {
            json!([{"id": "vim1", "vimType": "TEST.NOOP.V_1"}])
        } else {
            json!({"vim1": {"vimType": "TEST.NOOP.V_1"}})
        }
    }

    /// An external virtual link for the VNFD's external CP `web_cp` (`cpConfig` is a list in
    /// v1 and a map in v2).
    fn ext_virtual_link(&self) -> Value {
        let config = json!({"cpProtocolData": [{"layerProtocol": "IP_OVER_ETHERNET",
            "ipOverEthernet": {"ipAddresses": [{"type": "IPV4", "numDynamicAddresses": 1}]}}]});
        let cp_config = if self.version == "1" {
            json!([config])
        } else {
            json!({"web_cp_1": config})
        };
        json!({"id": "ext-1", "resourceId": "net-ext-1",
               "extCps": [{"cpdId": "web_cp", "cpConfig": cp_config}]})
    }

    /// `vnflcm create` then `instantiate` with `additional` as `additionalParams`; the
    /// instance id and the INSTANTIATE occurrence.
    fn create_and_instantiate(&self, vnfd: &str, name: &str, additional: Value) -> (String, Value) {
        let created = self.json(&[
            "vnflcm",
            "create",
            vnfd,
            "--name",
            name,
            "--description",
            "made by the openstack client",
        ]);
        let vnf = created["ID"].as_str().expect("ID").to_owned();
        assert_eq!(
            created["Instantiation State"], "NOT_INSTANTIATED",
            "{created}"
        );
        assert_eq!(created["VNF Instance Name"], name, "{created}");
        assert_eq!(created["VNFD ID"], vnfd, "{created}");
        let file = self.file(
            &format!("instantiate-{name}.json"),
            &json!({"flavourId": "simple", "vimConnectionInfo": self.vim_connection_info(),
                    "additionalParams": additional}),
        );
        let out = self.ok(&["vnflcm", "instantiate", &vnf, &file]);
        assert!(
            out.contains(&format!(
                "Instantiate request for VNF Instance {vnf} has been accepted"
            )),
            "{out}"
        );
        let op = self.next_op(&vnf, "INSTANTIATE");
        (vnf, op)
    }

    /// `vnflcm scale` with `additional` as its additional parameters; the occurrence.
    fn scale(&self, vnf: &str, kind: &str, additional: Value) -> Value {
        let mut args = vec![
            "vnflcm",
            "scale",
            "--type",
            kind,
            "--aspect-id",
            "web_scale",
            "--number-of-steps",
            "1",
        ];
        // The file's members are merged into the request body; the client refuses an empty
        // file.
        let file = self.file(
            "scale-params.json",
            &json!({"additionalParams": additional}),
        );
        if additional.as_object().is_some_and(|o| !o.is_empty()) {
            args.extend(["--additional-param-file", &file]);
        }
        args.push(vnf);
        let out = self.ok(&args);
        assert!(out.contains("accepted"), "{out}");
        self.next_op(vnf, "SCALE")
    }

    fn scale_level(&self, vnf: &str) -> u64 {
        let shown = self.json(&["vnflcm", "show", vnf]);
        let info = &shown["Instantiated Vnf Info"];
        info["scaleStatus"]
            .as_array()
            .and_then(|s| s.iter().find(|a| a["aspectId"] == "web_scale"))
            .and_then(|a| a["scaleLevel"].as_u64())
            .unwrap_or_else(|| panic!("no scale level of web_scale: {shown}"))
    }
}

/// One instance through every `openstack vnflcm` command of `version`, with failures the
/// test VIM injects to reach retry, rollback, fail (and cancel, v1).
fn lcm_flow(os: &Openstack, vnfd: &str, version: &str) {
    let lcm = Lcm::new(os, version);
    let (vnf, op) = lcm.create_and_instantiate(vnfd, &format!("vnf-v{version}"), json!({}));
    assert_eq!(op["Operation State"], "COMPLETED", "{op}");

    let shown = lcm.json(&["vnflcm", "show", &vnf]);
    assert_eq!(shown["Instantiation State"], "INSTANTIATED", "{shown}");
    assert_eq!(
        shown["Instantiated Vnf Info"]["flavourId"], "simple",
        "{shown}"
    );
    // The package's instantiate_end script recorded itself in the instance's metadata.
    assert_eq!(
        shown["metadata"]["lastScriptHook"], "instantiate_end",
        "{shown}"
    );
    assert_eq!(shown["metadata"]["scriptSawVnfd"], true, "{shown}");

    let list = lcm.json(&["vnflcm", "list"]);
    let row = list
        .as_array()
        .expect("a list")
        .iter()
        .find(|r| r["ID"] == vnf.as_str())
        .unwrap_or_else(|| panic!("{vnf} not listed: {list}"));
    assert_eq!(row["Instantiation State"], "INSTANTIATED", "{row}");

    let op = lcm.scale(&vnf, "SCALE_OUT", json!({}));
    assert_eq!(op["Operation State"], "COMPLETED", "{op}");
    assert_eq!(lcm.scale_level(&vnf), 1);

    let out = lcm.ok(&["vnflcm", "heal", "--cause", "the client test", &vnf]);
    assert!(
        out.contains(&format!(
            "Heal request for VNF Instance {vnf} has been accepted"
        )),
        "{out}"
    );
    let op = lcm.next_op(&vnf, "HEAL");
    assert_eq!(op["Operation State"], "COMPLETED", "{op}");

    let file = lcm.file(
        "change-ext-conn.json",
        &json!({"extVirtualLinks": [lcm.ext_virtual_link()]}),
    );
    let out = lcm.ok(&["vnflcm", "change-ext-conn", &vnf, &file]);
    assert!(out.contains("accepted"), "{out}");
    let op = lcm.next_op(&vnf, "CHANGE_EXT_CONN");
    assert_eq!(op["Operation State"], "COMPLETED", "{op}");

    let file = lcm.file(
        "update.json",
        &json!({"vnfInstanceName": format!("renamed-v{version}")}),
    );
    let out = lcm.ok(&["vnflcm", "update", &vnf, "--I", &file]);
    assert!(out.contains(&vnf), "{out}");
    let op = lcm.next_op(&vnf, "MODIFY_INFO");
    assert_eq!(op["Operation State"], "COMPLETED", "{op}");
    let shown = lcm.json(&["vnflcm", "show", &vnf]);
    assert_eq!(
        shown["VNF Instance Name"],
        format!("renamed-v{version}"),
        "{shown}"
    );

    // A failed scale-out, rolled back (a scale-in cannot be), then one retried.
    for (verb, command, end, level) in [
        ("Rollback", "rollback", "ROLLED_BACK", 1),
        ("Retry", "retry", "COMPLETED", 2),
    ] {
        let op = lcm.scale(&vnf, "SCALE_OUT", json!({"testVim": {"failures": 1}}));
        assert_eq!(op["Operation State"], "FAILED_TEMP", "{op}");
        assert!(
            op["Error"]["detail"]
                .as_str()
                .is_some_and(|d| d.contains("requested by additionalParams.testVim")),
            "{op}"
        );
        let id = op["ID"].as_str().unwrap();
        let out = lcm.ok(&["vnflcm", "op", command, id]);
        assert!(
            out.contains(&format!(
                "{verb} request for LCM operation {id} has been accepted"
            )),
            "{out}"
        );
        let op = lcm.settled(id);
        assert_eq!(op["Operation State"], end, "{op}");
        assert_eq!(lcm.scale_level(&vnf), level);
    }

    // A failed scale-in, given up.
    let op = lcm.scale(&vnf, "SCALE_IN", json!({"testVim": {"failures": 1}}));
    assert_eq!(op["Operation State"], "FAILED_TEMP", "{op}");
    let id = op["ID"].as_str().unwrap();
    let failed = lcm.json(&["vnflcm", "op", "fail", id]);
    assert_eq!(failed["Operation State"], "FAILED", "{failed}");
    assert_eq!(failed["ID"], id, "{failed}");

    if version == "1" {
        // A slow scale-in, cancelled while it runs (the v2 client has no `op cancel`).
        let file = lcm.file(
            "slow-scale.json",
            &json!({"additionalParams": {"testVim": {"delaySeconds": 30}}}),
        );
        lcm.ok(&[
            "vnflcm",
            "scale",
            "--type",
            "SCALE_IN",
            "--aspect-id",
            "web_scale",
            "--number-of-steps",
            "1",
            "--additional-param-file",
            &file,
            &vnf,
        ]);
        let id = wait_for("the slow scale to run", || {
            let list = lcm.json(&["vnflcm", "op", "list"]);
            list.as_array()?
                .iter()
                .find(|o| {
                    o["VNF Instance ID"] == vnf.as_str() && o["Operation State"] == "PROCESSING"
                })
                .map(|o| o["ID"].as_str().unwrap().to_owned())
        });
        lcm.seen.borrow_mut().insert(id.clone());
        // `op cancel` is a show command that shows nothing after its message: the client
        // (2.6.0) then fails on its own return value, against Tacker as here.
        let out =
            lcm.os
                .output(&lcm.args(&["vnflcm", "op", "cancel", "--cancel-mode", "FORCEFUL", &id]));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stdout.contains(&format!(
                "Cancel request for LCM operation {id} has been accepted"
            )),
            "{stdout}\n{stderr}"
        );
        assert!(
            out.status.success() || stderr.contains("cannot unpack non-iterable NoneType object"),
            "{stdout}\n{stderr}"
        );
        let op = lcm.settled(&id);
        assert_eq!(op["Operation State"], "FAILED_TEMP", "{op}");
        let failed = lcm.json(&["vnflcm", "op", "fail", &id]);
        assert_eq!(failed["Operation State"], "FAILED", "{failed}");
    }

    let out = lcm.ok(&["vnflcm", "terminate", &vnf]);
    assert!(
        out.contains(&format!(
            "Terminate request for VNF Instance '{vnf}' has been accepted"
        )),
        "{out}"
    );
    let op = lcm.next_op(&vnf, "TERMINATE");
    assert_eq!(op["Operation State"], "COMPLETED", "{op}");
    let out = lcm.ok(&["vnflcm", "delete", &vnf]);
    assert!(
        out.contains(&format!("Vnf instance '{vnf}' is deleted successfully")),
        "{out}"
    );
    let err = lcm.fails(&["vnflcm", "show", &vnf]);
    assert!(
        err.contains("404") || err.to_lowercase().contains("not found"),
        "{err}"
    );

    // The package's script failing on request: the occurrence fails with its message.
    let (vnf, op) = lcm.create_and_instantiate(
        vnfd,
        &format!("failing-v{version}"),
        json!({"fail_instantiate_end": true}),
    );
    assert_eq!(op["Operation State"], "FAILED_TEMP", "{op}");
    assert!(
        op["Error"]
            .to_string()
            .contains("instantiate_end failed as asked by additionalParams"),
        "{op}"
    );
    // Its resources were created before the script failed, but, as on Tacker, the instance
    // is INSTANTIATED only once the INSTANTIATE completes: NOT_INSTANTIATED while the
    // occurrence is FAILED_TEMP and after `op fail`, when its identifier can be deleted.
    let shown = lcm.json(&["vnflcm", "show", &vnf]);
    assert_eq!(shown["Instantiation State"], "NOT_INSTANTIATED", "{shown}");
    let failed = lcm.json(&["vnflcm", "op", "fail", op["ID"].as_str().unwrap()]);
    assert_eq!(failed["Operation State"], "FAILED", "{failed}");
    let shown = lcm.json(&["vnflcm", "show", &vnf]);
    assert_eq!(shown["Instantiation State"], "NOT_INSTANTIATED", "{shown}");
    lcm.ok(&["vnflcm", "delete", &vnf]);

    // Subscriptions.
    let file = lcm.file(
        "subscription.json",
        &json!({"callbackUri": "http://127.0.0.1:9/notifications",
                "filter": {"notificationTypes": ["VnfLcmOperationOccurrenceNotification"],
                           "operationStates": ["COMPLETED"]}}),
    );
    let sub = lcm.json(&["vnflcm", "subsc", "create", &file]);
    let sub_id = sub["ID"].as_str().expect("ID").to_owned();
    assert_eq!(
        sub["Callback URI"], "http://127.0.0.1:9/notifications",
        "{sub}"
    );
    let list = lcm.json(&["vnflcm", "subsc", "list"]);
    assert!(
        list.as_array()
            .expect("a list")
            .iter()
            .any(|s| s["ID"] == sub_id.as_str()),
        "{list}"
    );
    let shown = lcm.json(&["vnflcm", "subsc", "show", &sub_id]);
    assert_eq!(
        shown["Filter"]["operationStates"],
        json!(["COMPLETED"]),
        "{shown}"
    );
    let out = lcm.ok(&["vnflcm", "subsc", "delete", &sub_id]);
    assert!(
        out.contains(&format!(
            "Lccn Subscription '{sub_id}' is deleted successfully"
        )),
        "{out}"
    );
}

#[vnfm_test_env::needs(keystone, openstack_cli)]
#[test]
fn package_and_lcm_v1_through_the_openstack_client() {
    let s = Setup::new();
    let os = &s.os;
    let (pkg, vnfd) = onboard(&s);
    let list = os.json(&["vnf", "package", "list"]);
    assert!(
        list.as_array()
            .expect("a list")
            .iter()
            .any(|p| p["Id"] == pkg.as_str()),
        "{list}"
    );

    lcm_flow(os, &vnfd, "1");

    let updated = os.json(&[
        "vnf",
        "package",
        "update",
        "--operational-state",
        "DISABLED",
        &pkg,
    ]);
    assert_eq!(updated["Operational State"], "DISABLED", "{updated}");
    let out = os.ok(&["vnf", "package", "delete", &pkg]);
    assert!(out.contains("deleted successfully"), "{out}");
    let err = os.fails(&["vnf", "package", "show", &pkg]);
    assert!(
        err.contains(&format!("VNF package {pkg} does not exist")),
        "{err}"
    );
}

#[vnfm_test_env::needs(keystone, openstack_cli)]
#[test]
fn lcm_v2_through_the_openstack_client() {
    let s = Setup::new();
    let (_, vnfd) = onboard(&s);
    lcm_flow(&s.os, &vnfd, "2");
}
