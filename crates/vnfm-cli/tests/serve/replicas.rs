//! Issue 66: two `vnfm serve` replicas on one PostgreSQL database (a server of the test's own,
//! see [`super::database::Pg`]), and replica A sent SIGTERM while it runs operations (an
//! infrastructure step of [`STEP_SECONDS`], then a hook: `vnfd-samples/tacker-script-vnf`)
//! and clients send it requests, as the first half of a rolling restart behind a load
//! balancer:
//!
//! - A stops each occurrence at the end of its step in progress and releases its lease
//!   without waiting for its clients (a slow client's request, accepted before SIGTERM, is
//!   still arriving): every occurrence is seen running without A's lease before it comes to
//!   rest, B picks each up within [`HANDOVER_BOUND`] of its release and runs the hook A did
//!   not start, and each comes to rest COMPLETED with no step completed twice;
//! - every request A accepted is answered (2xx, or 503 with a ProblemDetails), the slow one
//!   too; a request A did not take (the connection refused, or a kept-alive connection A
//!   closed as the request was sent: `IncompleteMessage`) is sent to B with its
//!   `Idempotency-Key`, as a client behind a load balancer retries it, and each creation is
//!   made exactly once.
//!
//! Before, A went on running the next steps of its occurrences until its last client was
//! done, and an occurrence handed over before a hook ended `FAILED_TEMP` on B ("the step may
//! have run partially").

use super::database::Pg;
use super::*;

use std::collections::HashMap;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long B may take to pick up an occurrence A released: about 1 s by design (B looks for
/// released leases every second; the 2 s target), the bound leaves room for a loaded machine
/// (as `crates/vnfm-lcm/tests/takeover.rs`).
const HANDOVER_BOUND: Duration = Duration::from_secs(10);

/// Operations running on A at SIGTERM.
const OPERATIONS: usize = 4;

/// Clients sending creations to A (to B once A refuses them) around SIGTERM.
const CLIENTS: usize = 4;

/// Seconds each step of the operations running on A takes.
const STEP_SECONDS: u64 = 3;

/// How long the slow client takes to send its request (a byte a second).
const SLOW_REQUEST: Duration = Duration::from_secs(24);

/// A creation whose body arrives a byte a second for [`SLOW_REQUEST`], sent in the background
/// on a connection of its own; its status line.
fn slow_creation(api: &Api, vnfd_id: &str) -> tokio::task::JoinHandle<String> {
    let addr = api.base.strip_prefix("http://").unwrap().to_owned();
    let token = api.token.clone();
    let mut body = json!({"vnfdId": vnfd_id, "vnfInstanceName": "slow"}).to_string();
    let n = SLOW_REQUEST.as_secs() as usize;
    body.extend(std::iter::repeat_n(' ', n.saturating_sub(body.len())));
    let head = format!(
        "POST /vnflcm/v2/vnf_instances HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Version: 2.0.0\r\nContent-Type: application/json\r\nIdempotency-Key: \"slow\"\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    );
    tokio::spawn(async move {
        let mut conn = tokio::net::TcpStream::connect(&addr).await.unwrap();
        conn.write_all(head.as_bytes()).await.unwrap();
        let bytes = body.into_bytes();
        let (slow, rest) = bytes.split_at(n - 1);
        for b in slow {
            conn.write_all(&[*b]).await.unwrap();
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        conn.write_all(rest).await.unwrap();
        let mut answer = Vec::new();
        let _ = conn.read_to_end(&mut answer).await;
        let answer = String::from_utf8_lossy(&answer).into_owned();
        answer.lines().next().unwrap_or_default().to_owned()
    })
}

/// Starts a replica on `url` with the data directory `data`, logging to `data/../<name>.log`.
fn replica(data: &Path, url: &str, name: &str) -> Server {
    rustls::crypto::ring::default_provider()
        .install_default()
        .ok();
    let log = data.with_file_name(format!("{name}.log"));
    start_with(
        data,
        &["--store-url", url, "--no-callback-check"],
        Some(&log),
    )
}

/// The key files and the bootstrap client of `from`, copied into `to`: replicas on one store
/// share them (docs/rest-api.md, Replicas).
fn share_keys(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for file in ["fernet.keys", "token.keys", "credentials.json"] {
        std::fs::copy(from.join(file), to.join(file)).unwrap();
    }
}

/// The pid in a runner id (`host:pid:random`).
fn runner_pid(owner: &str) -> Option<u32> {
    owner.split(':').nth(1)?.parse().ok()
}

/// How one creation went: the replica and outcome of each attempt, in order.
#[derive(Debug, Default, Clone)]
struct Creation {
    attempts: Vec<(char, Result<u16, String>)>,
}

/// A client creating instances until stopped, each with a key of its own: sent to A until A
/// refuses it (no connection, or the connection closed before an answer) or answers 503, then
/// to B with the same key.
async fn client_loop(
    a: Arc<Api>,
    b: Arc<Api>,
    vnfd_id: String,
    me: usize,
    stop: Arc<AtomicBool>,
) -> HashMap<String, Creation> {
    let mut out: HashMap<String, Creation> = HashMap::new();
    let mut n = 0;
    let mut a_out = false;
    while !stop.load(Ordering::SeqCst) {
        n += 1;
        let key = format!("client{me}-{n}");
        let mut c = Creation::default();
        for (name, api) in [('A', &a), ('B', &b)] {
            if name == 'A' && a_out {
                continue;
            }
            let sent = api
                .req(reqwest::Method::POST, "/vnflcm/v2/vnf_instances")
                .header("Idempotency-Key", format!("\"{key}\""))
                .timeout(Duration::from_secs(30))
                .json(&json!({"vnfdId": vnfd_id, "vnfInstanceName": key}))
                .send()
                .await;
            let outcome = match sent {
                Ok(r) => {
                    let status = r.status().as_u16();
                    let problem = r
                        .headers()
                        .get("content-type")
                        .is_some_and(|v| v == "application/problem+json");
                    // The body must arrive whole.
                    match r.bytes().await {
                        Ok(_) if status != 503 || problem => Ok(status),
                        Ok(_) => Err("503 without a ProblemDetails".to_owned()),
                        Err(e) => Err(format!("answer cut: {e}")),
                    }
                }
                Err(e) if e.is_connect() => Err("refused".into()),
                Err(e) => Err(format!("{e:?}")),
            };
            let done = matches!(outcome, Ok(s) if s != 503);
            c.attempts.push((name, outcome));
            if done {
                break;
            }
            if name == 'A' {
                // A load balancer takes A out once it refuses.
                a_out = true;
            }
        }
        out.insert(key, c);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    out
}

/// Whether `occ` is running (not at rest).
fn running(occ: &vnfm_types::VnfLcmOpOcc) -> bool {
    matches!(
        occ.operation_state,
        vnfm_types::LcmOperationStateType::Starting
            | vnfm_types::LcmOperationStateType::Processing
            | vnfm_types::LcmOperationStateType::RollingBack
    )
}

#[vnfm_test_env::needs(postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_sent_sigterm_hands_its_occurrences_over_and_answers_what_it_accepted() {
    let pg = Pg::start();
    let dir = tempfile::tempdir().unwrap();
    let (data_a, data_b) = (dir.path().join("a"), dir.path().join("b"));
    let a = replica(&data_a, &pg.url(), "a");
    share_keys(&data_a, &data_b);
    let b = replica(&data_b, &pg.url(), "b");
    let (pid_a, pid_b) = (a.child.id(), b.child.id());
    let api_a = Arc::new(Api::connect(&a.base, &data_a).await);
    let api_b = Arc::new(Api::connect(&b.base, &data_b).await);
    let store = vnfm_store_sql::open(&pg.url()).await.unwrap();

    // Operations on A: an infrastructure step of STEP_SECONDS, then a hook (the package's
    // management script).
    let package =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../vnfd-samples/tacker-script-vnf");
    let vnfd_id = api_a.onboard_package(&package).await;
    let mut ops = Vec::new();
    for _ in 0..OPERATIONS {
        let vnf = api_a.create_vnf(&vnfd_id).await;
        let (status, headers, body) = api_a
            .json(
                reqwest::Method::POST,
                &format!("/vnflcm/v2/vnf_instances/{vnf}/instantiate"),
                Some(json!({
                    "flavourId": "simple",
                    "vimConnectionInfo": {"vim1": {"vimType": "TEST.NOOP.V_1"}},
                    "additionalParams": {"testVim": {"delaySeconds": STEP_SECONDS}},
                })),
            )
            .await;
        assert_eq!(status, 202, "{body}");
        let location = headers["location"].to_str().unwrap();
        let id = location.rsplit('/').next().unwrap().to_owned();
        ops.push(vnfm_types::VnfLcmOpOccId::new(id));
    }
    // Clients creating instances on A, and one slow one.
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|me| {
            tokio::spawn(client_loop(
                api_a.clone(),
                api_b.clone(),
                vnfd_id.clone(),
                me,
                stop.clone(),
            ))
        })
        .collect();
    let slow = slow_creation(&api_a, &vnfd_id);
    tokio::time::sleep(Duration::from_millis(1000)).await;
    for id in &ops {
        let lease = store.lease(id).await.unwrap();
        assert!(
            lease.is_some_and(|l| runner_pid(&l.owner) == Some(pid_a)),
            "{id} is not running on A"
        );
    }

    // SIGTERM to A: the steps in progress end within STEP_SECONDS, and A releases the leases
    // then, while it still serves the slow request: each occurrence is seen running without
    // A's lease (released, then B's) before it comes to rest.
    let termed = Instant::now();
    let _ = Command::new("kill")
        .args(["-TERM", &pid_a.to_string()])
        .status();
    let released = termed + Duration::from_secs(STEP_SECONDS);
    let mut released_at: HashMap<vnfm_types::VnfLcmOpOccId, Duration> = HashMap::new();
    let mut taken_at: HashMap<vnfm_types::VnfLcmOpOccId, Duration> = HashMap::new();
    let mut finished_by_a = Vec::new();
    let mut left: Vec<_> = ops.clone();
    while !left.is_empty() && released.elapsed() < HANDOVER_BOUND {
        let mut still = Vec::new();
        for id in left {
            let owner = store
                .lease(&id)
                .await
                .unwrap()
                .and_then(|l| runner_pid(&l.owner));
            let running = running(&store.get_op_occ(&id).await.unwrap().unwrap().0);
            let now = termed.elapsed();
            match (running, owner) {
                (true, Some(p)) if p == pid_a => still.push(id),
                (true, Some(p)) if p == pid_b => {
                    released_at.entry(id.clone()).or_insert(now);
                    taken_at.insert(id, now);
                }
                (true, _) => {
                    released_at.entry(id.clone()).or_insert(now);
                    still.push(id);
                }
                // At rest: by B once A released it.
                (false, _) if released_at.contains_key(&id) => {
                    taken_at.insert(id, now);
                }
                (false, _) => finished_by_a.push(id),
            }
        }
        left = still;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let slow_pending = !slow.is_finished();
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::SeqCst);
    let mut creations = HashMap::new();
    for c in clients {
        creations.extend(c.await.unwrap());
    }
    let slow = slow.await.unwrap();
    let mut a = a;
    let status = loop {
        if let Some(status) = a.child.try_wait().unwrap() {
            break status;
        }
        assert!(termed.elapsed() < Duration::from_secs(90), "A did not exit");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let mut handed: Vec<(Duration, Duration)> = taken_at
        .iter()
        .map(|(id, taken)| (released_at[id], *taken - released_at[id]))
        .collect();
    handed.sort();
    eprintln!(
        "A released its occurrences (after SIGTERM, B's pickup after that) {handed:?} (steps of {STEP_SECONDS} s); A finished {} of them itself; the slow request, {}, was answered {slow:?}; A exited {:?} after SIGTERM",
        finished_by_a.len(),
        if slow_pending {
            "still arriving then"
        } else {
            "done by then"
        },
        termed.elapsed()
    );
    assert!(status.success(), "A: {status}");
    assert!(
        finished_by_a.is_empty(),
        "A went on with {finished_by_a:?} after SIGTERM (while it still served a request)"
    );
    assert!(
        left.is_empty() && handed.len() == ops.len(),
        "B did not take {left:?} over within {HANDOVER_BOUND:?} of the end of their steps"
    );
    for (_, pickup) in &handed {
        assert!(
            *pickup < HANDOVER_BOUND,
            "B took {pickup:?} to pick a released occurrence up"
        );
    }
    assert!(
        slow_pending,
        "the slow request was done before the hand-over"
    );
    assert!(slow.starts_with("HTTP/1.1 201"), "the slow request: {slow}");

    // Every creation answered once: by A, or by B after A refused it.
    let mut by_outcome: HashMap<String, usize> = HashMap::new();
    for (key, c) in &creations {
        let summary: Vec<String> = c
            .attempts
            .iter()
            .map(|(r, o)| match o {
                Ok(s) => format!("{r}:{s}"),
                Err(e) if e == "refused" => format!("{r}:refused"),
                Err(_) => format!("{r}:error"),
            })
            .collect();
        *by_outcome.entry(summary.join(" ")).or_default() += 1;
        let last = c.attempts.last().unwrap();
        assert!(
            matches!(last.1, Ok(201)),
            "{key} was never created: {:?}",
            c.attempts
        );
        for (r, o) in &c.attempts {
            if let Err(e) = o {
                assert!(
                    *r == 'A' && (e == "refused" || e.contains("IncompleteMessage")),
                    "{key}: {r} failed it uncleanly: {e}"
                );
            }
        }
    }
    eprintln!("creations around SIGTERM: {by_outcome:?}");
    for key in creations.keys().map(String::as_str).chain(["slow"]) {
        let (_, _, list) = api_b
            .json(
                reqwest::Method::GET,
                &format!("/vnflcm/v2/vnf_instances?filter=(eq,vnfInstanceName,{key})"),
                None,
            )
            .await;
        assert_eq!(list.as_array().map(Vec::len), Some(1), "{key}: {list}");
    }

    // The occurrences end on B, no step completed twice.
    for id in &ops {
        let path = format!("/vnflcm/v2/vnf_lcm_op_occs/{id}");
        let mut occ = Value::Null;
        for _ in 0..300 {
            occ = api_b.json(reqwest::Method::GET, &path, None).await.2;
            if occ["operationState"] != "PROCESSING" && occ["operationState"] != "STARTING" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(occ["operationState"], "COMPLETED", "{occ:#}");
        let (_, _, timeline) = api_b
            .json(
                reqwest::Method::GET,
                &format!("/vnfm/v1/vnf_lcm_op_occs/{id}/timeline"),
                None,
            )
            .await;
        let steps = timeline["steps"].as_array().unwrap();
        let completed: Vec<u64> = steps
            .iter()
            .filter(|s| s["outcome"] == "COMPLETED")
            .map(|s| s["number"].as_u64().unwrap())
            .collect();
        let mut distinct = completed.clone();
        distinct.dedup();
        assert_eq!(completed, distinct, "a step completed twice: {timeline:#}");
        assert_eq!(completed.len(), 2, "{timeline:#}");
    }
    b.stop();
}
