//! The server under load: where it keeps its data ([`Store`]), its `vnfm serve` processes
//! ([`Replica`], [`Server`]) with the requests the phases send them, and the HTTP client
//! of one simulated user.

use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::figures::{Cpu, cpu_seconds, env_or, postgres_cpu_seconds, status_mib};

/// Where the server keeps its data: its data directory's SQLite file, or a fresh database on
/// a PostgreSQL server.
pub(crate) struct Store {
    /// The URL of a database on the PostgreSQL server to create run databases from, if any.
    postgres: Option<String>,
    /// The postmaster's pid, when its CPU is measured.
    postgres_pid: Option<String>,
    /// `vnfm serve` processes on the store (2 only on PostgreSQL).
    replicas: usize,
}

impl Store {
    pub(crate) fn from_env() -> Store {
        let postgres = std::env::var("VNFM_SERVE_LOAD_STORE_URL")
            .ok()
            .filter(|u| !u.is_empty());
        let replicas = env_or("VNFM_SERVE_LOAD_REPLICAS", 1).max(1) as usize;
        assert!(
            replicas == 1 || postgres.is_some(),
            "VNFM_SERVE_LOAD_REPLICAS={replicas} needs VNFM_SERVE_LOAD_STORE_URL (replicas share a PostgreSQL database)"
        );
        Store {
            postgres,
            postgres_pid: std::env::var("VNFM_SERVE_LOAD_PG_PID")
                .ok()
                .filter(|p| !p.is_empty()),
            replicas,
        }
    }

    pub(crate) fn describe(&self) -> String {
        match &self.postgres {
            None => "SQLite in a fresh data directory".into(),
            Some(_) => format!(
                "PostgreSQL, a fresh database a run, {} replica{}",
                self.replicas,
                if self.replicas == 1 { "" } else { "s" }
            ),
        }
    }
}

/// `url` naming database `name` instead of its own.
fn with_database(url: &str, name: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let (server, _) = base
        .rsplit_once('/')
        .expect("a database URL ends with /database");
    match query {
        Some(q) => format!("{server}/{name}?{q}"),
        None => format!("{server}/{name}"),
    }
}

/// Runs `sql` on the database of `url` with `psql`.
fn psql(url: &str, sql: &str) {
    let out = Command::new("psql")
        .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql])
        .output()
        .expect("psql (PostgreSQL's client) on PATH");
    assert!(
        out.status.success(),
        "psql {sql}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// One `vnfm serve` process.
struct Replica {
    child: Child,
    pid: String,
    base: String,
    credentials: PathBuf,
    dir: tempfile::TempDir,
}

impl Replica {
    /// Starts `bin serve` in a fresh data directory (holding `keys` first: file name and
    /// contents), on `store_url` when given, and reads where it listens.
    async fn start(bin: &PathBuf, store_url: Option<&str>, keys: &[(String, Vec<u8>)]) -> Replica {
        let dir = tempfile::tempdir().expect("temp dir");
        let data = dir.path().join("data");
        std::fs::create_dir_all(&data).expect("data dir");
        for (name, contents) in keys {
            use std::os::unix::fs::PermissionsExt;
            let path = data.join(name);
            std::fs::write(&path, contents).expect("key file");
            // The server refuses key files the group or others may read.
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                .expect("key file mode");
        }
        let log = std::fs::File::create(dir.path().join("serve.log")).expect("log file");
        let mut command = Command::new(bin);
        command
            .args(["serve", "--enable-test-vim", "--listen", "127.0.0.1:0"])
            .arg("--data-dir")
            .arg(&data)
            .env_remove("VNFM_STORE_URL");
        if let Some(url) = store_url {
            command.arg("--store-url").arg(url);
        }
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
        let pid = child.id().to_string();
        let stdout = child.stdout.take().expect("stdout");
        let started = tokio::task::spawn_blocking(move || {
            let mut base = None;
            let mut lines = std::io::BufReader::new(stdout).lines();
            for line in lines.by_ref() {
                let line = line.ok()?;
                if let Some(url) = line.strip_prefix("vnfm listening on ") {
                    base = Some(url.trim().to_owned());
                }
                if let Some(rest) = line.strip_prefix("credentials: ") {
                    let path = rest.rsplit_once(" (client_id").map_or(rest, |(p, _)| p);
                    let found = (base?, PathBuf::from(path));
                    // Keep reading what the server prints, so that it never blocks on a full pipe.
                    std::thread::spawn(move || lines.for_each(drop));
                    return Some(found);
                }
            }
            None
        })
        .await
        .expect("start lines");
        let Some((base, credentials)) = started else {
            let _ = child.kill();
            let _ = child.wait();
            let log = std::fs::read_to_string(dir.path().join("serve.log")).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(20).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            panic!(
                "vnfm serve ended before it listened; its log ends:\n{}",
                tail.join("\n")
            );
        };
        Replica {
            child,
            pid,
            base,
            credentials,
            dir,
        }
    }
}

/// The server under load: its processes (one, or two replicas on one database), their base
/// URLs and a token.
pub(crate) struct Server {
    replicas: Vec<Replica>,
    /// The next replica to send a request to.
    turn: AtomicU64,
    token: String,
    /// The run's database on the PostgreSQL server: (server URL, database name).
    database: Option<(String, String)>,
    postgres_pid: Option<String>,
}

impl Server {
    /// Starts the server on `store` (a fresh data directory, and a fresh database of run
    /// `run` on PostgreSQL) and gets a token for its bootstrap client.
    pub(crate) async fn start(bin: &PathBuf, store: &Store, run: u64) -> Server {
        let database = store.postgres.as_ref().map(|url| {
            let name = format!("vnfm_load_{}_{run}", std::process::id());
            psql(url, &format!("DROP DATABASE IF EXISTS {name}"));
            psql(url, &format!("CREATE DATABASE {name}"));
            (url.clone(), name)
        });
        let store_url = database
            .as_ref()
            .map(|(url, name)| with_database(url, name));
        let first = Replica::start(bin, store_url.as_deref(), &[]).await;
        let mut replicas = vec![first];
        if store.replicas > 1 {
            // Every replica seals and accepts with the same keys (docs/rest-api.md, Replicas).
            let data = replicas[0].dir.path().join("data");
            let keys: Vec<(String, Vec<u8>)> = ["fernet.keys", "token.keys"]
                .iter()
                .map(|name| {
                    let contents = std::fs::read(data.join(name))
                        .unwrap_or_else(|e| panic!("{name} of the first replica: {e}"));
                    ((*name).to_owned(), contents)
                })
                .collect();
            for _ in 1..store.replicas {
                replicas.push(Replica::start(bin, store_url.as_deref(), &keys).await);
            }
        }
        let credentials: Value = serde_json::from_str(
            &std::fs::read_to_string(&replicas[0].credentials).expect("credentials"),
        )
        .expect("credentials json");
        let http = client();
        let token: Value = http
            .post(format!("{}/oauth2/token", replicas[0].base))
            .basic_auth(
                credentials["client_id"].as_str().expect("client_id"),
                credentials["client_secret"].as_str(),
            )
            .form(&[("grant_type", "client_credentials")])
            .send()
            .await
            .expect("token")
            .json()
            .await
            .expect("token json");
        Server {
            replicas,
            turn: AtomicU64::new(0),
            token: token["access_token"]
                .as_str()
                .expect("access_token")
                .to_owned(),
            database,
            postgres_pid: store.postgres_pid.clone(),
        }
    }

    /// The base URL of the replica whose turn it is (they take requests in turn).
    fn base(&self) -> &str {
        let n = self.replicas.len() as u64;
        let i = if n == 1 {
            0
        } else {
            self.turn.fetch_add(1, Ordering::Relaxed) % n
        };
        &self.replicas[i as usize].base
    }

    /// The CPU the server (every replica), this client and PostgreSQL have used so far.
    pub(crate) fn cpu(&self) -> Cpu {
        Cpu {
            server: self.replicas.iter().map(|r| cpu_seconds(&r.pid)).sum(),
            client: cpu_seconds("self"),
            db: self.postgres_pid.as_deref().map(postgres_cpu_seconds),
        }
    }

    /// The resident memory of every replica, in MiB.
    pub(crate) fn rss_mib(&self) -> f64 {
        self.replicas
            .iter()
            .map(|r| status_mib(&r.pid, "VmRSS:"))
            .sum()
    }

    /// `url` (absolute, on any replica, or a path) on the replica whose turn it is.
    fn url(&self, url: &str) -> String {
        let path = match url.find("://") {
            Some(i) => url[i + 3..].find('/').map_or("/", |j| &url[i + 3 + j..]),
            None => url,
        };
        format!("{}{path}", self.base())
    }

    pub(crate) fn get(&self, http: &reqwest::Client, url: &str) -> reqwest::RequestBuilder {
        http.get(self.url(url))
            .bearer_auth(&self.token)
            .header("Version", "2.0.0")
    }

    pub(crate) fn post(
        &self,
        http: &reqwest::Client,
        path: &str,
        body: &Value,
    ) -> reqwest::RequestBuilder {
        http.post(self.url(path))
            .bearer_auth(&self.token)
            .header("Version", "2.0.0")
            .json(body)
    }

    /// Onboards `vnfd-samples/hello-vnf`; its VNFD id.
    pub(crate) async fn onboard(&self) -> String {
        let http = client();
        let sample =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../vnfd-samples/hello-vnf");
        let zip = zip_directory(&sample);
        let pkg: Value = self
            .post(&http, "/vnfpkgm/v2/vnf_packages", &json!({}))
            .send()
            .await
            .expect("create package")
            .json()
            .await
            .expect("package json");
        let id = pkg["id"].as_str().expect("package id");
        let path = format!("/vnfpkgm/v2/vnf_packages/{id}");
        let r = http
            .put(self.url(&format!("{path}/package_content")))
            .bearer_auth(&self.token)
            .header("Version", "2.0.0")
            .header("Content-Type", "application/zip")
            .body(zip)
            .send()
            .await
            .expect("upload");
        assert!(r.status().is_success(), "upload: {}", r.status());
        for _ in 0..600 {
            let p: Value = self
                .get(&http, &path)
                .send()
                .await
                .expect("package")
                .json()
                .await
                .expect("package json");
            if p["onboardingState"] == "ONBOARDED" {
                return p["vnfdId"].as_str().expect("vnfdId").to_owned();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("hello-vnf was not onboarded within 30 s");
    }

    /// Creates a VNF instance named `name`; its id.
    pub(crate) async fn create(
        &self,
        http: &reqwest::Client,
        vnfd_id: &str,
        name: &str,
    ) -> Option<String> {
        let r = self
            .post(
                http,
                "/vnflcm/v2/vnf_instances",
                &json!({"vnfdId": vnfd_id, "vnfInstanceName": name}),
            )
            .send()
            .await
            .ok()?;
        if r.status().as_u16() != 201 {
            return None;
        }
        let v: Value = r.json().await.ok()?;
        v["id"].as_str().map(str::to_owned)
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // The replicas first: a database is dropped once nothing is connected to it.
        self.replicas.clear();
        if let Some((url, name)) = &self.database {
            psql(url, &format!("DROP DATABASE IF EXISTS {name}"));
        }
    }
}

/// The files under `dir` as a zip archive, named by their paths relative to `dir`.
fn zip_directory(dir: &std::path::Path) -> Vec<u8> {
    use std::io::Write;
    fn walk(dir: &std::path::Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("package directory") {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, &mut files);
    files.sort();
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for file in files {
        let name = file.strip_prefix(dir).expect("under the directory");
        zip.start_file(
            name.to_string_lossy(),
            zip::write::SimpleFileOptions::default(),
        )
        .expect("zip entry");
        zip.write_all(&std::fs::read(&file).expect("package file"))
            .expect("zip write");
    }
    zip.finish().expect("zip").into_inner()
}

/// A client holding at most one connection (one client per simulated user).
pub(crate) fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(1)
        .no_proxy()
        .build()
        .expect("http client")
}
