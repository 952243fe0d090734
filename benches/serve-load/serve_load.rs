//! Load on `vnfm serve` as users run it: the release server started as its own process on its
//! defaults (SQLite in a fresh data directory, `--enable-test-vim`, every background task),
//! driven over loopback by this separate process. Run through `benches/serve-load.sh`, which
//! builds both and passes the server's path in `VNFM_SERVE_BIN`.
//!
//! Each run starts a fresh server, then:
//!
//! 1. creates `VNFM_SERVE_LOAD_INSTANCES` (50,000) VNF instances over REST (`POST
//!    /vnflcm/v2/vnf_instances`, 16 clients);
//! 2. list pages of 100 with a filter no other request of the run uses
//!    (`(eq,instantiationState,NOT_INSTANTIATED);(neq,vnfInstanceName,vnf-N)`, N counting up),
//!    so that nothing can answer from a cache: open loop, `VNFM_SERVE_LOAD_RATE` (5,000)
//!    requests per second offered over `VNFM_SERVE_LOAD_CONNECTIONS` (200) connections, each
//!    connection on a fixed schedule and each latency counted from the request's scheduled
//!    send time (a stall is charged to every request it delays); then closed loop over the same
//!    connections (the capacity);
//! 3. instantiate + terminate cycles, closed loop, with 1, 8 and 32 clients
//!    (`VNFM_SERVE_LOAD_CLIENTS`), each on an instance it created: POST instantiate, GET the
//!    occurrence every `VNFM_SERVE_LOAD_POLL_MS` (10) ms until it completes, POST terminate,
//!    poll again.
//!
//! Every phase lasts `VNFM_SERVE_LOAD_SECONDS` (10) and reports its rate, the p50 and p99 of
//! its latencies and the CPU time the server process used per operation (utime + stime from
//! `/proc/<pid>/stat`, all its threads), and beside it the CPU this load generator used per
//! operation (`/proc/self/stat`): the two share the machine's cores. After
//! `VNFM_SERVE_LOAD_RUNS` (3) runs, the medians of the runs, with their range.
//!
//! **On PostgreSQL** (`VNFM_SERVE_LOAD_STORE_URL`, a URL of a database on that server the
//! generator may create databases from, e.g. the URL `scripts/test-env/postgres.sh start`
//! prints): each run creates a fresh database with `psql` (`CREATE DATABASE`), starts the
//! server(s) with `--store-url` naming it and drops it after the run. With
//! `VNFM_SERVE_LOAD_PG_PID` (the postmaster's pid) the CPU the PostgreSQL server used per
//! operation is reported too (the postmaster, its live children and the children it reaped).
//! `VNFM_SERVE_LOAD_REPLICAS=2` starts two `vnfm serve` replicas on that one database (the
//! second with the first's `fernet.keys` and `token.keys`, as the operations guide says) and
//! sends each request to them in turn, a client holding one connection to each: an
//! occurrence is polled on either replica, whichever ran it. The server CPU is both replicas'.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The number in environment variable `name`, else `default`.
fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The `p` quantile (0 to 1) of `sorted`, zero when it is empty.
fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// CPU time (user + system, all threads) process `pid` has used, in seconds. Linux counts it
/// in USER_HZ ticks, 100 per second on every architecture this runs on.
fn cpu_seconds(pid: &str) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command name, which is in parentheses and may hold spaces.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return 0.0;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok());
    match (tick(11), tick(12)) {
        (Some(user), Some(system)) => (user + system) / 100.0,
        _ => 0.0,
    }
}

/// CPU time (user + system) of the PostgreSQL server whose postmaster is `pid`, in seconds:
/// the postmaster's own, its children's that it reaped (backends of closed connections), and
/// that of its live children (backends, background workers).
fn postgres_cpu_seconds(pid: &str) -> f64 {
    let fields = |stat: &str| -> Vec<String> {
        stat.rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default()
    };
    let ticks = |f: &[String], range: std::ops::Range<usize>| -> f64 {
        range
            .filter_map(|i| f.get(i).and_then(|v| v.parse::<f64>().ok()))
            .sum()
    };
    let own = fields(&std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default());
    // utime, stime, cutime, cstime.
    let mut total = ticks(&own, 11..15);
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let f = fields(&stat);
        if f.get(1).map(String::as_str) == Some(pid) {
            total += ticks(&f, 11..13);
        }
    }
    total / 100.0
}

/// A line of `/proc/<pid>/status` (`VmRSS`), in MiB.
fn status_mib(pid: &str, key: &str) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// The machine's 1-minute load average, as `uptime` shows it.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_owned))
        .unwrap_or_default()
}

/// One phase's result.
struct Figures {
    /// Operations per second.
    rate: f64,
    p50: Duration,
    p99: Duration,
    /// Server CPU per operation.
    cpu: Duration,
    /// The load generator's own CPU per operation.
    client_cpu: Duration,
    /// The PostgreSQL server's CPU per operation, when it is measured.
    db_cpu: Option<Duration>,
    errors: u64,
}

/// CPU seconds used so far by the server and by this process, the client.
#[derive(Clone, Copy)]
struct Cpu {
    server: f64,
    client: f64,
    /// The PostgreSQL server's, when it is measured.
    db: Option<f64>,
}

impl std::ops::Sub for Cpu {
    type Output = Cpu;
    fn sub(self, earlier: Cpu) -> Cpu {
        Cpu {
            server: self.server - earlier.server,
            client: self.client - earlier.client,
            db: self.db.zip(earlier.db).map(|(now, then)| now - then),
        }
    }
}

impl Figures {
    fn from(
        ops: u64,
        mut latencies: Vec<Duration>,
        elapsed: Duration,
        cpu: Cpu,
        errors: u64,
    ) -> Figures {
        latencies.sort_unstable();
        let per_op = |seconds: f64| {
            Duration::from_secs_f64(if ops == 0 { 0.0 } else { seconds / ops as f64 })
        };
        Figures {
            rate: ops as f64 / elapsed.as_secs_f64(),
            p50: percentile(&latencies, 0.5),
            p99: percentile(&latencies, 0.99),
            cpu: per_op(cpu.server),
            client_cpu: per_op(cpu.client),
            db_cpu: cpu.db.map(per_op),
            errors,
        }
    }
}

/// Where the server keeps its data: its data directory's SQLite file, or a fresh database on
/// a PostgreSQL server.
struct Store {
    /// The URL of a database on the PostgreSQL server to create run databases from, if any.
    postgres: Option<String>,
    /// The postmaster's pid, when its CPU is measured.
    postgres_pid: Option<String>,
    /// `vnfm serve` processes on the store (2 only on PostgreSQL).
    replicas: usize,
}

impl Store {
    fn from_env() -> Store {
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

    fn describe(&self) -> String {
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
struct Server {
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
    async fn start(bin: &PathBuf, store: &Store, run: u64) -> Server {
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
    fn cpu(&self) -> Cpu {
        Cpu {
            server: self.replicas.iter().map(|r| cpu_seconds(&r.pid)).sum(),
            client: cpu_seconds("self"),
            db: self.postgres_pid.as_deref().map(postgres_cpu_seconds),
        }
    }

    /// The resident memory of every replica, in MiB.
    fn rss_mib(&self) -> f64 {
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

    fn get(&self, http: &reqwest::Client, url: &str) -> reqwest::RequestBuilder {
        http.get(self.url(url))
            .bearer_auth(&self.token)
            .header("Version", "2.0.0")
    }

    fn post(&self, http: &reqwest::Client, path: &str, body: &Value) -> reqwest::RequestBuilder {
        http.post(self.url(path))
            .bearer_auth(&self.token)
            .header("Version", "2.0.0")
            .json(body)
    }

    /// Onboards `vnfd-samples/hello-vnf`; its VNFD id.
    async fn onboard(&self) -> String {
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
    async fn create(&self, http: &reqwest::Client, vnfd_id: &str, name: &str) -> Option<String> {
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
fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(1)
        .no_proxy()
        .build()
        .expect("http client")
}

/// Phase 1: `n` instances named `vnf-00000`, ... created by 16 clients.
async fn seed(server: &Arc<Server>, vnfd_id: &str, n: u64) -> Figures {
    let next = Arc::new(AtomicU64::new(0));
    let cpu = server.cpu();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let (server, next, vnfd_id) = (server.clone(), next.clone(), vnfd_id.to_owned());
        tasks.push(tokio::spawn(async move {
            let http = client();
            let (mut latencies, mut errors) = (Vec::new(), 0);
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    return (latencies, errors);
                }
                let t = Instant::now();
                match server.create(&http, &vnfd_id, &format!("vnf-{i:05}")).await {
                    Some(_) => latencies.push(t.elapsed()),
                    None => errors += 1,
                }
            }
        }));
    }
    let (mut latencies, mut errors) = (Vec::new(), 0);
    for t in tasks {
        let (l, e) = t.await.expect("seeder");
        latencies.extend(l);
        errors += e;
    }
    let ops = latencies.len() as u64;
    Figures::from(
        ops,
        latencies,
        started.elapsed(),
        server.cpu() - cpu,
        errors,
    )
}

/// Phase 2: distinct-filter pages over `connections` (one connection each, kept from phase
/// to phase) for `seconds`, open loop at
/// `rate` requests per second in all when given, else closed loop.
async fn pages(
    server: &Arc<Server>,
    connections: &[reqwest::Client],
    seconds: u64,
    rate: Option<f64>,
    filters: &Arc<AtomicU64>,
) -> Figures {
    let cpu = server.cpu();
    let started = Instant::now();
    let stop = started + Duration::from_secs(seconds);
    let mut tasks = Vec::new();
    let n = connections.len();
    for (w, http) in connections.iter().enumerate() {
        let (server, filters, http) = (server.clone(), filters.clone(), http.clone());
        // Open loop: connection w sends at started + (k * n + w) / rate.
        let schedule = rate.map(|r| {
            (
                Duration::from_secs_f64(n as f64 / r),
                Duration::from_secs_f64(w as f64 / r),
            )
        });
        tasks.push(tokio::spawn(async move {
            let (mut latencies, mut errors) = (Vec::new(), 0u64);
            for k in 0u32.. {
                let at = match schedule {
                    Some((every, offset)) => {
                        let at = started + offset + every * k;
                        tokio::time::sleep_until(at.into()).await;
                        at
                    }
                    None => Instant::now(),
                };
                if at >= stop {
                    break;
                }
                let n = filters.fetch_add(1, Ordering::Relaxed);
                let url = format!(
                    "/vnflcm/v2/vnf_instances?filter=(eq,instantiationState,NOT_INSTANTIATED);(neq,vnfInstanceName,vnf-{n:05})"
                );
                match server.get(&http, &url).send().await {
                    Ok(r) if r.status().is_success() => match r.bytes().await {
                        Ok(_) => latencies.push(at.elapsed()),
                        Err(_) => errors += 1,
                    },
                    _ => errors += 1,
                }
            }
            (latencies, errors)
        }));
    }
    let (mut latencies, mut errors) = (Vec::new(), 0);
    for t in tasks {
        let (l, e) = t.await.expect("page client");
        latencies.extend(l);
        errors += e;
    }
    let elapsed = started.elapsed();
    let ops = latencies.len() as u64;
    Figures::from(ops, latencies, elapsed, server.cpu() - cpu, errors)
}

/// Phase 3: instantiate + terminate cycles from `clients` clients for `seconds`, each polling
/// its occurrences every `poll`. Latencies are whole cycles.
async fn cycles(
    server: &Arc<Server>,
    vnfd_id: &str,
    clients: u64,
    seconds: u64,
    poll: Duration,
    round: u64,
) -> (Figures, f64) {
    // Every client creates its instance first, outside the measurement.
    let mut instances = Vec::new();
    let http = client();
    for c in 0..clients {
        let id = server
            .create(&http, vnfd_id, &format!("cycle-{round}-{c}"))
            .await
            .expect("create a cycle instance");
        instances.push(id);
    }
    let polls = Arc::new(AtomicU64::new(0));
    let cpu = server.cpu();
    let started = Instant::now();
    let stop = started + Duration::from_secs(seconds);
    let mut tasks = Vec::new();
    for id in instances {
        let (server, polls) = (server.clone(), polls.clone());
        tasks.push(tokio::spawn(async move {
            let http = client();
            let (mut latencies, mut errors) = (Vec::new(), 0u64);
            while Instant::now() < stop {
                let t = Instant::now();
                match cycle(&server, &http, &id, poll, &polls).await {
                    Ok(()) => latencies.push(t.elapsed()),
                    Err(e) => {
                        errors += 1;
                        eprintln!("cycle of {id}: {e}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
            }
            (latencies, errors)
        }));
    }
    let (mut latencies, mut errors) = (Vec::new(), 0);
    for t in tasks {
        let (l, e) = t.await.expect("cycle client");
        latencies.extend(l);
        errors += e;
    }
    let elapsed = started.elapsed();
    let ops = latencies.len() as u64;
    let polls_per_cycle = polls.load(Ordering::Relaxed) as f64 / ops.max(1) as f64;
    (
        Figures::from(ops, latencies, elapsed, server.cpu() - cpu, errors),
        polls_per_cycle,
    )
}

/// One instantiate + terminate cycle of instance `id`.
async fn cycle(
    server: &Server,
    http: &reqwest::Client,
    id: &str,
    poll: Duration,
    polls: &AtomicU64,
) -> Result<(), String> {
    for (op, body) in [
        (
            "instantiate",
            json!({"flavourId": "simple", "vimConnectionInfo": {"v": {"vimType": "TEST.NOOP.V_1"}}}),
        ),
        ("terminate", json!({"terminationType": "FORCEFUL"})),
    ] {
        let r = server
            .post(http, &format!("/vnflcm/v2/vnf_instances/{id}/{op}"), &body)
            .send()
            .await
            .map_err(|e| format!("POST {op}: {e}"))?;
        if r.status().as_u16() != 202 {
            return Err(format!(
                "POST {op}: {} {}",
                r.status(),
                r.text().await.unwrap_or_default()
            ));
        }
        let occurrence = r
            .headers()
            .get("location")
            .and_then(|l| l.to_str().ok())
            .ok_or(format!("POST {op}: no Location"))?
            .to_owned();
        loop {
            tokio::time::sleep(poll).await;
            polls.fetch_add(1, Ordering::Relaxed);
            let occ: Value = server
                .get(http, &occurrence)
                .send()
                .await
                .map_err(|e| format!("GET {occurrence}: {e}"))?
                .json()
                .await
                .map_err(|e| format!("GET {occurrence}: {e}"))?;
            match occ["operationState"].as_str() {
                Some("COMPLETED") => break,
                Some("STARTING" | "PROCESSING") => {}
                other => return Err(format!("{op} ended {other:?}")),
            }
        }
    }
    Ok(())
}

/// The figures of every run, by measure name (in the order first seen).
#[derive(Default)]
struct Table {
    order: Vec<String>,
    runs: BTreeMap<String, Vec<Figures>>,
    notes: BTreeMap<String, Vec<f64>>,
}

impl Table {
    fn add(&mut self, run: u64, name: &str, unit: &str, f: Figures) {
        println!(
            "run {run}: {name}: {:.0} {unit}/s, p50 {:.2} ms, p99 {:.2} ms, server CPU {:.3} ms per {unit}, client CPU {:.3} ms{}{}",
            f.rate,
            f.p50.as_secs_f64() * 1e3,
            f.p99.as_secs_f64() * 1e3,
            f.cpu.as_secs_f64() * 1e3,
            f.client_cpu.as_secs_f64() * 1e3,
            f.db_cpu.map_or(String::new(), |d| format!(
                ", PostgreSQL CPU {:.3} ms",
                d.as_secs_f64() * 1e3
            )),
            if f.errors > 0 {
                format!(", {} ERRORS", f.errors)
            } else {
                String::new()
            }
        );
        if !self.runs.contains_key(name) {
            self.order.push(name.to_owned());
        }
        self.runs.entry(name.to_owned()).or_default().push(f);
    }

    fn note(&mut self, name: &str, value: f64) {
        self.notes.entry(name.to_owned()).or_default().push(value);
    }

    fn print(&self) {
        let summary = |mut v: Vec<f64>, digits: usize| {
            v.sort_by(f64::total_cmp);
            let (lo, hi) = (v[0], v[v.len() - 1]);
            let median = v[v.len() / 2];
            format!("{median:.digits$} [{lo:.digits$}-{hi:.digits$}]")
        };
        println!(
            "\nmedians of {} runs [min-max]:",
            self.runs.values().next().map_or(0, Vec::len)
        );
        let db = self.runs.values().flatten().any(|f| f.db_cpu.is_some());
        println!(
            "| measure | per second | p50 ms | p99 ms | server CPU ms per op | client CPU ms per op |{} errors |",
            if db {
                " PostgreSQL CPU ms per op |"
            } else {
                ""
            }
        );
        println!(
            "|---|---|---|---|---|---|{}---|",
            if db { "---|" } else { "" }
        );
        for name in &self.order {
            let runs = &self.runs[name];
            let pick = |f: &dyn Fn(&Figures) -> f64| runs.iter().map(f).collect::<Vec<f64>>();
            let db_cpu = if db {
                format!(
                    " {} |",
                    summary(
                        pick(&|f| f.db_cpu.unwrap_or_default().as_secs_f64() * 1e3),
                        3
                    )
                )
            } else {
                String::new()
            };
            println!(
                "| {name} | {} | {} | {} | {} | {} |{db_cpu} {} |",
                summary(pick(&|f| f.rate), 0),
                summary(pick(&|f| f.p50.as_secs_f64() * 1e3), 2),
                summary(pick(&|f| f.p99.as_secs_f64() * 1e3), 2),
                summary(pick(&|f| f.cpu.as_secs_f64() * 1e3), 3),
                summary(pick(&|f| f.client_cpu.as_secs_f64() * 1e3), 3),
                runs.iter().map(|f| f.errors).sum::<u64>(),
            );
        }
        for (name, values) in &self.notes {
            println!("{name}: {}", summary(values.clone(), 1));
        }
    }
}

fn main() {
    let bin = PathBuf::from(std::env::var("VNFM_SERVE_BIN").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/release/vnfm").into()
    }));
    let runs = env_or("VNFM_SERVE_LOAD_RUNS", 3);
    let instances = env_or("VNFM_SERVE_LOAD_INSTANCES", 50_000);
    let seconds = env_or("VNFM_SERVE_LOAD_SECONDS", 10);
    let rate = env_or("VNFM_SERVE_LOAD_RATE", 5_000);
    let connections = env_or("VNFM_SERVE_LOAD_CONNECTIONS", 200);
    let poll = Duration::from_millis(env_or("VNFM_SERVE_LOAD_POLL_MS", 10));
    let clients: Vec<u64> = std::env::var("VNFM_SERVE_LOAD_CLIENTS")
        .unwrap_or_else(|_| "1,8,32".into())
        .split(',')
        .filter_map(|c| c.trim().parse().ok())
        .collect();
    let store = Store::from_env();
    let phases = std::env::var("VNFM_SERVE_LOAD_PHASES").unwrap_or_else(|_| "pages,cycles".into());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(env_or("VNFM_SERVE_LOAD_THREADS", 2) as usize)
        .enable_all()
        .build()
        .expect("runtime");
    println!(
        "server {} on {}; {runs} runs; {instances} instances; {seconds} s a phase; load average {}",
        bin.display(),
        store.describe(),
        load_average()
    );
    let mut table = Table::default();
    runtime.block_on(async {
        for run in 1..=runs {
            let server = Arc::new(Server::start(&bin, &store, run).await);
            table.note("server RSS at start, MiB", server.rss_mib());
            let vnfd_id = server.onboard().await;
            let f = seed(&server, &vnfd_id, instances).await;
            table.add(run, "create VNF instance, 16 clients", "create", f);
            if phases.contains("pages") {
                let filters = Arc::new(AtomicU64::new(0));
                let connections: Vec<reqwest::Client> =
                    (0..connections).map(|_| client()).collect();
                // Warm-up, not counted: the connections open and the pages' rows are read once.
                pages(&server, &connections, 1, None, &filters).await;
                let f = pages(&server, &connections, seconds, Some(rate as f64), &filters).await;
                let name = format!(
                    "distinct-filter page of 100, {rate}/s offered over {} connections (open loop)",
                    connections.len()
                );
                table.add(run, &name, "page", f);
                let f = pages(&server, &connections, seconds, None, &filters).await;
                let name = format!("same, closed loop, {} connections", connections.len());
                table.add(run, &name, "page", f);
                table.note("server RSS after the pages, MiB", server.rss_mib());
            }
            if phases.contains("cycles") {
                for (round, &n) in clients.iter().enumerate() {
                    let (f, polls) =
                        cycles(&server, &vnfd_id, n, seconds, poll, round as u64).await;
                    let name = format!(
                        "instantiate+terminate cycles, {n} instances, poll every {} ms",
                        poll.as_millis()
                    );
                    table.add(run, &name, "cycle", f);
                    table.note(&format!("polls per cycle, {n} instances"), polls);
                }
                table.note("server RSS after the cycles, MiB", server.rss_mib());
            }
            println!("run {run} done; load average {}", load_average());
        }
    });
    table.print();
}
