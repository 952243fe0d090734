//! The client subcommands of the `vnfm` binary against a real `vnfm serve --enable-test-vim`
//! on loopback: packages from the corpus, VIMs from Tacker-style YAML, a VNF's whole life with
//! `--wait`, a forced failure with its exit code and error, `-o json|yaml` parsed back,
//! configuration sources and the token cache, the progress display in a pseudo-terminal, and
//! alarms with automatic healing.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use support::BIN;
const PACKAGE: &str = "tacker/v2-vm-basic-lcms-max";

use crate::support;

/// A `vnfm serve --enable-test-vim` and its data directory (its credentials file is there).
struct Server {
    server: support::Server,
    data: PathBuf,
}

impl std::ops::Deref for Server {
    type Target = support::Server;

    fn deref(&self) -> &support::Server {
        &self.server
    }
}

impl Server {
    fn start(data: &Path) -> Server {
        Server::start_with(data, &[])
    }

    fn start_with(data: &Path, extra: &[&str]) -> Server {
        let mut command = support::serve_command(data);
        command
            .args([
                "--enable-test-vim",
                "--log-level",
                "warn",
                "--no-callback-check",
            ])
            .args(extra)
            .stderr(Stdio::null());
        Server {
            server: support::Server::spawn(command, 0).0,
            data: data.to_owned(),
        }
    }

    /// SIGTERM and wait: the server stops gracefully and its data stays for a restart.
    fn stop(self) {
        self.server.stop();
    }
}

/// A client environment: the server's URL and credentials file, and private cache and
/// configuration directories (so the user's own files play no part).
struct Client {
    base: String,
    creds: PathBuf,
    home: tempfile::TempDir,
}

impl Client {
    fn new(server: &Server) -> Client {
        Client {
            base: server.base.clone(),
            creds: server.data.join("credentials.json"),
            home: tempfile::tempdir().expect("tempdir"),
        }
    }

    fn cache_dir(&self) -> PathBuf {
        self.home.path().join("cache")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args);
        self.environment(c)
    }

    fn environment(&self, mut c: Command) -> Command {
        c.env("VNFM_URL", &self.base)
            .env("VNFM_CREDENTIALS_FILE", &self.creds)
            .env("VNFM_CACHE_DIR", self.cache_dir())
            .env("XDG_CONFIG_HOME", self.home.path().join("config"))
            .env_remove("VNFM_CLIENT_ID")
            .env_remove("VNFM_CLIENT_SECRET")
            .env_remove("VNFM_CONFIG")
            .stdin(Stdio::null());
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("vnfm runs")
    }

    /// Runs and expects success; returns stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "vnfm {args:?} failed ({:?}):\nstdout: {}\nstderr: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("stdout is UTF-8")
    }

    /// Runs with `-o json` and parses stdout.
    fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        let text = self.ok(&all);
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn corpus(path: &str) -> String {
    vnfm_test_env::corpus(path).display().to_string()
}

/// Uploads the corpus package and returns (package id, vnfd id).
fn onboard(c: &Client) -> (String, String) {
    let pkg = c.json(&["pkg", "upload", &corpus(PACKAGE)]);
    assert_eq!(pkg["onboardingState"], "ONBOARDED", "{pkg:#}");
    assert_eq!(pkg["operationalState"], "ENABLED");
    (
        pkg["id"].as_str().expect("id").to_owned(),
        pkg["vnfdId"].as_str().expect("vnfdId").to_owned(),
    )
}

fn vnfc_count(vnf: &Value) -> usize {
    vnf["instantiatedVnfInfo"]["vnfcResourceInfo"]
        .as_array()
        .map_or(0, Vec::len)
}

mod fm_pm;
mod lifecycle;
mod usage;
mod watch;
