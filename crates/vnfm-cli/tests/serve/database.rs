//! Issue 66: `vnfm serve` on PostgreSQL when the database goes away under load: restarted
//! (stopped for a few seconds, then started again), and a primary switch (the primary stopped,
//! its streaming standby promoted, the server given both hosts). While the server has no
//! database `/readyz` answers 503 and requests are answered 503 with a ProblemDetails within
//! [`ANSWER_BOUND`]; it reconnects by itself; every occurrence that was running comes to rest
//! (completed, or failed visibly), none runs a step twice and none is lost; a request refused
//! during the outage, retried with its `Idempotency-Key`, creates its resource once.
//!
//! Each test starts PostgreSQL servers of its own with `scripts/test-env/postgres.sh` (in a
//! temporary directory, on a free port): it stops them, which the shared test server must not
//! see.

use super::*;

use std::collections::HashMap;

/// How long a request may take to be answered while the database is away.
const ANSWER_BOUND: Duration = Duration::from_secs(5);

/// How long the database stays away in the restart test: less than a lease (6 s).
const OUTAGE: Duration = Duration::from_secs(4);

/// How long it stays away in the long restart test: more than a lease.
const LONG_OUTAGE: Duration = Duration::from_secs(10);

/// Seconds each step of the operations running during the fault takes (the test VIM's
/// `delaySeconds`).
const STEP_SECONDS: f64 = 2.0;

/// Instances whose operations run when the database goes away.
const INSTANCES: usize = 6;

/// A PostgreSQL server of the test's own, run by `scripts/test-env/postgres.sh`; stopped and
/// removed when dropped.
pub(super) struct Pg {
    dir: tempfile::TempDir,
    pub(super) port: u16,
}

/// A port nothing listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Pg {
    fn script(&self, args: &[&str]) -> String {
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/test-env/postgres.sh");
        let out = Command::new(script)
            .args(args)
            .env("VNFM_PG_DIR", self.dir.path())
            .env("VNFM_PG_PORT", self.port.to_string())
            .stdin(Stdio::null())
            .output()
            .expect("postgres.sh runs");
        assert!(
            out.status.success(),
            "postgres.sh {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn new() -> Pg {
        Pg {
            dir: tempfile::Builder::new()
                .prefix("vnfm-pg-")
                .tempdir()
                .unwrap(),
            port: free_port(),
        }
    }

    /// A new server, started.
    pub(super) fn start() -> Pg {
        let pg = Pg::new();
        pg.script(&["start"]);
        pg
    }

    /// A streaming-replication standby of `primary`, started.
    fn standby_of(primary: &Pg) -> Pg {
        let pg = Pg::new();
        pg.script(&["standby", &primary.port.to_string()]);
        pg
    }

    /// `host:port` of the server.
    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub(super) fn url(&self) -> String {
        format!("postgres://postgres@{}/postgres", self.host())
    }

    /// Stops the server, keeping its data.
    fn halt(&self) {
        self.script(&["halt"]);
    }

    /// Starts the halted server again.
    fn resume(&self) {
        self.script(&["start"]);
    }

    /// Makes a standby the primary.
    fn promote(&self) {
        self.script(&["promote"]);
    }
}

impl Drop for Pg {
    fn drop(&mut self) {
        let _ = Command::new(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/test-env/postgres.sh"),
        )
        .arg("stop")
        .env("VNFM_PG_DIR", self.dir.path())
        .env("VNFM_PG_PORT", self.port.to_string())
        .stdin(Stdio::null())
        .output();
    }
}

/// What one request got.
#[derive(Debug, Clone)]
struct Answer {
    status: u16,
    problem: bool,
    took: Duration,
    body: Value,
    location: Option<String>,
}

impl Api {
    /// `method path` with a deadline of 30 s (a hung request shows as 0 after 30 s), and an
    /// `Idempotency-Key` when given.
    async fn timed(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
        key: Option<&str>,
    ) -> Answer {
        let mut r = self.req(method, path).timeout(Duration::from_secs(30));
        if let Some(b) = body {
            r = r.json(&b);
        }
        if let Some(k) = key {
            r = r.header("Idempotency-Key", format!("\"{k}\""));
        }
        let started = Instant::now();
        match r.send().await {
            Ok(resp) => {
                let status = resp.status().as_u16();
                let problem = resp
                    .headers()
                    .get("content-type")
                    .is_some_and(|v| v == "application/problem+json");
                let location = resp
                    .headers()
                    .get("location")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let text = resp.text().await.unwrap_or_default();
                Answer {
                    status,
                    problem,
                    took: started.elapsed(),
                    body: serde_json::from_str(&text).unwrap_or(Value::Null),
                    location,
                }
            }
            Err(e) => Answer {
                status: 0,
                problem: false,
                took: started.elapsed(),
                body: Value::String(e.to_string()),
                location: None,
            },
        }
    }

    /// `GET /readyz`.
    async fn readyz(&self) -> Answer {
        self.timed(reqwest::Method::GET, "/readyz", None, None)
            .await
    }
}

/// A client reading the instance list every 100 ms until stopped: what it got, when.
struct Reader {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<Vec<(Instant, Answer)>>,
}

impl Reader {
    fn start(api: Arc<Api>) -> Reader {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let task = tokio::spawn(async move {
            let mut out = Vec::new();
            while !s.load(Ordering::SeqCst) {
                let at = Instant::now();
                let a = api
                    .timed(reqwest::Method::GET, "/vnflcm/v2/vnf_instances", None, None)
                    .await;
                out.push((at, a));
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            out
        });
        Reader { stop, task }
    }

    async fn finish(self) -> Vec<(Instant, Answer)> {
        self.stop.store(true, Ordering::SeqCst);
        self.task.await.unwrap()
    }
}

/// The instantiate request of the running operations: each step takes [`STEP_SECONDS`].
fn slow_instantiate() -> Value {
    json!({
        "flavourId": "simple",
        "vimConnectionInfo": {"vim1": {"vimType": "TEST.NOOP.V_1"}},
        "additionalParams": {"testVim": {"delaySeconds": STEP_SECONDS}},
    })
}

/// Creates [`INSTANCES`] instances and starts a slow INSTANTIATE of each; returns the
/// occurrences' paths by instance.
async fn start_operations(api: &Api, vnfd_id: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for _ in 0..INSTANCES {
        let vnf = api.create_vnf(vnfd_id).await;
        let a = api
            .timed(
                reqwest::Method::POST,
                &format!("/vnflcm/v2/vnf_instances/{vnf}/instantiate"),
                Some(slow_instantiate()),
                None,
            )
            .await;
        assert_eq!(a.status, 202, "{}", a.body);
        let location = a.location.unwrap();
        let path = location.strip_prefix(&api.base).unwrap().to_owned();
        out.push((vnf, path));
    }
    out
}

/// What the server did while the database was away, from the client's side.
#[derive(Debug, Default)]
struct Outage {
    /// When `/readyz` first answered 503 after the database went away.
    not_ready_after: Option<Duration>,
    /// When `/readyz` answered 200 again after the database came back.
    ready_again_after: Option<Duration>,
    /// Requests sent while the database was away: (what, answer).
    answers: Vec<(String, Answer)>,
}

/// Polls `/readyz` and sends a read and a creation (with `key`) while the database is away
/// (until `back` has passed since `since`); `bring_back` then brings it back.
async fn during_outage(
    api: &Api,
    vnfd_id: &str,
    key: &str,
    since: Instant,
    back: Duration,
    bring_back: impl FnOnce(),
) -> Outage {
    let mut out = Outage::default();
    let mut probed = false;
    while since.elapsed() < back {
        let ready = api.readyz().await;
        let status = ready.status;
        out.answers.push(("GET /readyz".into(), ready));
        if status == 503 && out.not_ready_after.is_none() {
            out.not_ready_after = Some(since.elapsed());
        }
        if status == 503 && !probed {
            probed = true;
            let list = api
                .timed(reqwest::Method::GET, "/vnflcm/v2/vnf_instances", None, None)
                .await;
            out.answers.push(("GET vnf_instances".into(), list));
            let create = api
                .timed(
                    reqwest::Method::POST,
                    "/vnflcm/v2/vnf_instances",
                    Some(json!({"vnfdId": vnfd_id, "vnfInstanceName": key})),
                    Some(key),
                )
                .await;
            out.answers.push(("POST vnf_instances".into(), create));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    bring_back();
    let back_at = Instant::now();
    while back_at.elapsed() < Duration::from_secs(60) {
        if api.readyz().await.status == 200 {
            out.ready_again_after = Some(back_at.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    out
}

/// The occurrences at rest within `secs` (their states by path; `None` for one still
/// running).
async fn settle(api: &Api, ops: &[(String, String)], secs: u64) -> HashMap<String, Value> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut out = HashMap::new();
    for (_, path) in ops {
        loop {
            let a = api.timed(reqwest::Method::GET, path, None, None).await;
            let state = a.body["operationState"].as_str().unwrap_or("");
            if a.status == 200 && !["STARTING", "PROCESSING", "ROLLING_BACK"].contains(&state) {
                out.insert(path.clone(), a.body);
                break;
            }
            if Instant::now() > deadline {
                out.insert(path.clone(), Value::Null);
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    out
}

/// Checks what the fault left: every occurrence at rest, completed or failed with an error
/// that says why; no step of any completed twice (its timeline); one occurrence per
/// instance; the refused creation created once on retry.
async fn check_outcome(api: &Api, ops: &[(String, String)], vnfd_id: &str, key: &str) {
    let rested = settle(api, ops, 90).await;
    let mut states = Vec::new();
    for (vnf, path) in ops {
        let occ = &rested[path];
        assert!(
            !occ.is_null(),
            "occurrence {path} did not come to rest within 90 s of the database's return"
        );
        let state = occ["operationState"].as_str().unwrap().to_owned();
        assert!(
            state == "COMPLETED" || (state == "FAILED_TEMP" && occ["error"]["detail"].is_string()),
            "{path}: {occ:#}"
        );
        states.push(state);
        let id = occ["id"].as_str().unwrap();
        let timeline = api
            .timed(
                reqwest::Method::GET,
                &format!("/vnfm/v1/vnf_lcm_op_occs/{id}/timeline"),
                None,
                None,
            )
            .await;
        assert_eq!(timeline.status, 200, "{}", timeline.body);
        let mut completed: HashMap<(String, u64), usize> = HashMap::new();
        for step in timeline.body["steps"].as_array().unwrap() {
            if step["outcome"] == "COMPLETED" {
                *completed
                    .entry((
                        step["phase"].as_str().unwrap().to_owned(),
                        step["number"].as_u64().unwrap(),
                    ))
                    .or_default() += 1;
            }
        }
        assert!(
            completed.values().all(|n| *n == 1),
            "a step of {id} completed twice: {:#}",
            timeline.body
        );
        let list = api
            .timed(
                reqwest::Method::GET,
                &format!("/vnflcm/v2/vnf_lcm_op_occs?filter=(eq,vnfInstanceId,{vnf})"),
                None,
                None,
            )
            .await;
        assert_eq!(
            list.body.as_array().map(Vec::len),
            Some(1),
            "{vnf}: {}",
            list.body
        );
    }
    eprintln!("occurrences after the fault: {states:?}");
    // The creation refused while the database was away, retried with its key: created once.
    let retried = api
        .timed(
            reqwest::Method::POST,
            "/vnflcm/v2/vnf_instances",
            Some(json!({"vnfdId": vnfd_id, "vnfInstanceName": key})),
            Some(key),
        )
        .await;
    assert_eq!(retried.status, 201, "{}", retried.body);
    let named = api
        .timed(
            reqwest::Method::GET,
            &format!("/vnflcm/v2/vnf_instances?filter=(eq,vnfInstanceName,{key})"),
            None,
            None,
        )
        .await;
    assert_eq!(
        named.body.as_array().map(Vec::len),
        Some(1),
        "{}",
        named.body
    );
}

/// Checks the answers the server gave while the database was away.
fn check_outage(outage: &Outage, reads: &[(Instant, Answer)], down: Instant, back: Instant) {
    eprintln!(
        "not ready {:?} after the database went away, ready {:?} after it came back",
        outage.not_ready_after, outage.ready_again_after
    );
    for (what, a) in &outage.answers {
        eprintln!("  {what}: {} in {:?}", a.status, a.took);
    }
    let during: Vec<&Answer> = reads
        .iter()
        .filter(|(at, _)| *at > down && *at < back)
        .map(|(_, a)| a)
        .collect();
    let mut statuses: HashMap<u16, usize> = HashMap::new();
    for a in &during {
        *statuses.entry(a.status).or_default() += 1;
    }
    let slowest = during.iter().map(|a| a.took).max().unwrap_or_default();
    eprintln!("reads during the outage: {statuses:?}, slowest {slowest:?}");
    assert!(
        outage.not_ready_after.is_some_and(|d| d < ANSWER_BOUND),
        "/readyz did not answer 503 within {ANSWER_BOUND:?} of the database going away"
    );
    assert!(
        outage
            .ready_again_after
            .is_some_and(|d| d < Duration::from_secs(20)),
        "/readyz did not answer 200 within 20 s of the database's return"
    );
    for (what, a) in &outage.answers {
        assert!(a.took < ANSWER_BOUND, "{what} took {:?}", a.took);
        // `/readyz` may still answer 200 before the server noticed.
        let noticed = a.status == 503 && a.problem;
        assert!(
            noticed || (what == "GET /readyz" && a.status == 200),
            "{what} while the database was away: {} {}",
            a.status,
            a.body
        );
    }
    for a in &during {
        assert!(
            (a.status == 200 || (a.status == 503 && a.problem)) && a.took < ANSWER_BOUND,
            "a read while the database was away: {} in {:?}: {}",
            a.status,
            a.took,
            a.body
        );
    }
}

/// Starts `vnfm serve` on `url`, logging to `data/../serve.log`.
fn serve_on(data: &Path, url: &str) -> Server {
    rustls::crypto::ring::default_provider()
        .install_default()
        .ok();
    rustls::crypto::ring::default_provider()
        .install_default()
        .ok();
    let log = data.with_file_name("serve.log");
    start_with(
        data,
        &["--store-url", url, "--no-callback-check"],
        Some(&log),
    )
}

/// PostgreSQL stopped for `outage` while operations run, then started again.
async fn restart(outage: Duration) {
    let pg = Pg::start();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = serve_on(&data, &pg.url());
    let api = Arc::new(Api::connect(&server.base, &data).await);
    let vnfd_id = api.onboard_corpus_package().await;
    let ops = start_operations(&api, &vnfd_id).await;
    let reader = Reader::start(api.clone());
    tokio::time::sleep(Duration::from_millis(500)).await;

    pg.halt();
    let down = Instant::now();
    let key = "created-during-the-restart";
    let seen = during_outage(&api, &vnfd_id, key, down, outage, || pg.resume()).await;
    let back = down + outage;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let reads = reader.finish().await;
    check_outage(&seen, &reads, down, back);
    check_outcome(&api, &ops, &vnfd_id, key).await;
    server.stop();
}

/// A restart shorter than a lease: each run waits for the database and records the step it
/// finished meanwhile once it is back.
#[vnfm_test_env::needs(postgres, corpus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgresql_restart_under_load_is_answered_503_and_survived() {
    restart(OUTAGE).await;
}

/// An outage longer than a lease (6 s): the runs stop their steps when their leases lapse,
/// and recovery takes the occurrences over once the database is back.
#[vnfm_test_env::needs(postgres, corpus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgresql_outage_longer_than_a_lease_is_recovered() {
    restart(LONG_OUTAGE).await;
}

#[vnfm_test_env::needs(postgres, corpus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_primary_switch_to_the_promoted_standby_is_followed() {
    let primary = Pg::start();
    let standby = Pg::standby_of(&primary);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let url = format!(
        "postgres://postgres@{},{}/postgres?target_session_attrs=read-write",
        primary.host(),
        standby.host()
    );
    let server = serve_on(&data, &url);
    let api = Arc::new(Api::connect(&server.base, &data).await);
    let vnfd_id = api.onboard_corpus_package().await;
    let ops = start_operations(&api, &vnfd_id).await;
    let reader = Reader::start(api.clone());
    tokio::time::sleep(Duration::from_millis(500)).await;

    primary.halt();
    let down = Instant::now();
    let key = "created-during-the-switch";
    // The standby is promoted 2 s after the primary stopped (a failover manager's delay).
    let outage = during_outage(&api, &vnfd_id, key, down, Duration::from_secs(2), || {
        standby.promote()
    })
    .await;
    let back = down + Duration::from_secs(2);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let reads = reader.finish().await;
    check_outage(&outage, &reads, down, back);
    check_outcome(&api, &ops, &vnfd_id, key).await;
    // Written on the promoted standby: the old primary is still down.
    let created = api.create_vnf(&vnfd_id).await;
    assert!(!created.is_empty());
    server.stop();
}
