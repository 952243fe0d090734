//! Load test of the REST server over real HTTP on loopback, with an in-process load
//! generator (the server and the clients share the machine's cores, as `wrk` would).
//!
//! N instances (named `vnf-00000`, `vnf-00001`, ...) in the default SQLite store, then:
//!
//! 1. A filtered 100-item page, every request with a different filter (so every page is really
//!    computed): `filter=(eq,instantiationState,NOT_INSTANTIATED);(neq,vnfInstanceName,vnf-R)`
//!    with a random R, from 1 client, then from C concurrent keep-alive clients, D seconds
//!    each; then the same with `wrk` (C connections, a Lua script drawing R) when it is on
//!    PATH.
//! 2. `(cont,vnfInstanceName,S)`: the latency of the first page for substrings matching many
//!    names and one name (median of 5 distinct substrings each). Then a filter on a member
//!    with no column of its own, `(eq,vnfSoftwareVersion,V)`, matching nothing: the time to
//!    walk the whole answer, following `Link` (median of 5 values). Then, with
//!    `VNFM_LOAD_EXPORT=1`, every instance, whole (`all_fields`), page by page as `vnfm vnf
//!    export` reads them; throughput and resident memory along the way.
//! 3. Instantiate + terminate cycles over REST on the test VIM: 1, 8 and 32 instances, each
//!    driven by one client, D seconds each; cycles per second. First the client polls (POST,
//!    then GET the occurrence every millisecond until it completes), then it waits for the
//!    occurrence's final notification instead (a subscription on loopback filtered on the
//!    final operation states, as an NFVO subscribes). Each line also gives the CPU time the
//!    process (server and clients) spent per cycle, which varies less than the rate when the
//!    machine's capacity does.
//! 4. The process's resident memory after each phase (server and load generator together).
//! 5. With `VNFM_LOAD_SOAK_CYCLES=N`: N more cycles on 32 instances (notified), the resident
//!    memory printed every tenth of them (is memory flat over a long run?).
//!
//! `cargo bench -p vnfm-api --bench api_load`; sizes from `VNFM_LOAD_INSTANCES` (50000),
//! `VNFM_LOAD_CONCURRENCY` (200), `VNFM_LOAD_SECONDS` (10), `VNFM_LOAD_WRK_THREADS` (2),
//! `VNFM_LOAD_DURABILITY` (`normal` or `full`: the SQLite `synchronous` setting),
//! `VNFM_LOAD_STORE_URL` (another store, e.g. an empty PostgreSQL database),
//! `VNFM_LOAD_SEEDERS` (4 tasks creating the instances), `VNFM_LOAD_DELIVERIES` (the
//! deliverer's concurrency, 16); `VNFM_LOAD_SKIP_CYCLES=1` stops before phase 3,
//! `VNFM_LOAD_CYCLE_CLIENTS=polling|notified` runs one kind of cycle client only.
//!
//! `VNFM_LOAD_AB_ROUNDS=N` adds N alternating rounds after phase 1: the same pages computed
//! through the evaluator (`&exclude_default`, every document parsed) and from the store's
//! default views (no selector), closed loop and, with `VNFM_LOAD_RATE=R`, open loop (R
//! requests per second offered over the C connections on a fixed schedule, latency counted
//! from each request's scheduled send time); `VNFM_LOAD_AB_PATHS=stored` runs the stored
//! views alone. `VNFM_LOAD_LIST_ONLY=1` stops after that.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use vnfm_api::{AppState, StateOptions};

mod common;
use common::{env_or, percentile};

fn report(what: &str, mut latencies: Vec<Duration>, errors: usize, elapsed: Duration) {
    latencies.sort_unstable();
    let n = latencies.len();
    println!(
        "{what}: {n} requests in {:.1} s = {:.0} requests/s; p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms; {errors} errors",
        elapsed.as_secs_f64(),
        n as f64 / elapsed.as_secs_f64(),
        percentile(&latencies, 0.50).as_secs_f64() * 1e3,
        percentile(&latencies, 0.90).as_secs_f64() * 1e3,
        percentile(&latencies, 0.99).as_secs_f64() * 1e3,
        latencies.last().copied().unwrap_or_default().as_secs_f64() * 1e3,
    );
}

/// The resident memory of this process, in MiB.
/// The URL of the next page a list response links to, if any (relative targets resolved
/// against `base`).
fn next_page(response: &reqwest::Response, base: &str) -> Option<String> {
    let link = response.headers().get("link")?.to_str().ok()?;
    let (_, rest) = link.split_once('<')?;
    let (target, _) = rest.split_once('>')?;
    Some(if target.starts_with("http") {
        target.to_owned()
    } else {
        format!("{base}{target}")
    })
}

fn rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// CPU time this process has used (user and system, all threads), in seconds: the cost of a
/// phase, which varies less than its rate when the machine's capacity varies. Linux reports
/// it in USER_HZ ticks, 100 per second on every architecture this runs on.
fn cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            // The fields after the command name, which is in parentheses and may hold spaces.
            let rest = s.rsplit_once(')')?.1;
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let utime: f64 = fields.get(11)?.parse().ok()?;
            let stime: f64 = fields.get(12)?.parse().ok()?;
            Some((utime + stime) / 100.0)
        })
        .unwrap_or(0.0)
}

/// A pseudo-random number below `n` (xorshift; the load only needs variety).
fn below(state: &mut u64, n: u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state % n
}

/// How a cycle's client learns that an operation has ended.
#[derive(Clone)]
enum Await {
    /// GET the occurrence every millisecond until it has ended.
    Poll,
    /// Wait for the occurrence's final `VnfLcmOperationOccurrenceNotification` (a
    /// subscription filtered on the final operation states, as an NFVO subscribes).
    Notified(Arc<Finished>),
}

/// Final states of occurrences, by occurrence id, as the notification subscriber receives
/// them: whichever of the notification and the client's wait comes first leaves its half.
#[derive(Default)]
struct Finished {
    slots: std::sync::Mutex<std::collections::HashMap<String, Slot>>,
}

enum Slot {
    Waiting(tokio::sync::oneshot::Sender<String>),
    Done(String),
}

impl Finished {
    /// The notification's half.
    fn notified(&self, occurrence: String, state: String) {
        let mut slots = self.slots.lock().expect("slots");
        match slots.remove(&occurrence) {
            Some(Slot::Waiting(tx)) => {
                let _ = tx.send(state);
            }
            _ => {
                slots.insert(occurrence, Slot::Done(state));
            }
        }
    }

    /// The client's half: the occurrence's final state.
    async fn wait(&self, occurrence: &str) -> String {
        let rx = {
            let mut slots = self.slots.lock().expect("slots");
            if let Some(Slot::Done(state)) = slots.remove(occurrence) {
                return state;
            }
            let (tx, rx) = tokio::sync::oneshot::channel();
            slots.insert(occurrence.to_owned(), Slot::Waiting(tx));
            rx
        };
        rx.await.expect("the subscriber stays")
    }
}

/// Starts the notification subscriber on loopback and subscribes it to the server at `base`
/// for the final states of every occurrence.
async fn subscribe(http: &reqwest::Client, base: &str, token: &str) -> Arc<Finished> {
    use axum::extract::State;
    use axum::http::StatusCode;
    use axum::routing::post;
    let finished = Arc::new(Finished::default());
    let app =
        axum::Router::new()
            .route(
                "/n",
                post(
                    |State(f): State<Arc<Finished>>,
                     axum::Json(n): axum::Json<serde_json::Value>| async move {
                        if let (Some(occ), Some(state)) =
                            (n["vnfLcmOpOccId"].as_str(), n["operationState"].as_str())
                        {
                            f.notified(occ.to_owned(), state.to_owned());
                        }
                        StatusCode::NO_CONTENT
                    },
                ),
            )
            .with_state(finished.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let callback = format!("http://{}/n", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    let r = http
        .post(format!("{base}/vnflcm/v2/subscriptions"))
        .bearer_auth(token)
        .header("Version", "2.0.0")
        .json(&json!({
            "callbackUri": callback,
            "filter": {
                "notificationTypes": ["VnfLcmOperationOccurrenceNotification"],
                "operationStates": ["COMPLETED", "FAILED_TEMP", "FAILED", "ROLLED_BACK"]
            }
        }))
        .send()
        .await
        .expect("subscribe");
    assert_eq!(r.status().as_u16(), 201, "subscription");
    finished
}

/// Occurrence reads made by polling clients (reported per cycle).
static POLLS: AtomicUsize = AtomicUsize::new(0);

/// One instantiate + terminate cycle of instance `id` over REST: POST, then wait for the
/// occurrence to complete as `how` says.
async fn rest_cycle(http: &reqwest::Client, base: &str, token: &str, id: &str, how: &Await) {
    for (op, body) in [
        (
            "instantiate",
            json!({"flavourId": "simple", "vimConnectionInfo": {"v": {"vimType": "TEST.NOOP.V_1"}}}),
        ),
        ("terminate", json!({"terminationType": "FORCEFUL"})),
    ] {
        let r = http
            .post(format!("{base}/vnflcm/v2/vnf_instances/{id}/{op}"))
            .bearer_auth(token)
            .header("Version", "2.0.0")
            .json(&body)
            .send()
            .await
            .expect(op);
        assert_eq!(r.status().as_u16(), 202, "{op}");
        let occ = r.headers()["location"]
            .to_str()
            .expect("location")
            .to_owned();
        if let Await::Notified(finished) = how {
            let occ_id = occ.rsplit('/').next().expect("occurrence id");
            let state = finished.wait(occ_id).await;
            assert_eq!(state, "COMPLETED", "{op}");
            continue;
        }
        loop {
            POLLS.fetch_add(1, Ordering::Relaxed);
            let state: serde_json::Value = http
                .get(&occ)
                .bearer_auth(token)
                .header("Version", "2.0.0")
                .send()
                .await
                .expect("poll")
                .json()
                .await
                .expect("occurrence");
            match state["operationState"].as_str() {
                Some("COMPLETED") => break,
                Some("STARTING" | "PROCESSING") => {
                    tokio::time::sleep(Duration::from_millis(1)).await
                }
                other => panic!("{op} ended {other:?}"),
            }
        }
    }
}

/// Distinct filtered pages (`page_url(r, extra)` with a random `r`) for `seconds` from
/// `clients` keep-alive clients. Closed loop (`rate` `None`): each client sends its next
/// request when the previous one is answered, latency from the send. Open loop (`rate`
/// `Some(r)`): `r` requests per second offered in all, each client on a fixed schedule, and
/// the latency of a request counted from its scheduled send time, so a server falling behind
/// is charged for the wait of every request it delays (no coordinated omission).
async fn page_load<F>(
    http: &reqwest::Client,
    token: &str,
    page_url: &F,
    extra: &str,
    clients: usize,
    seconds: usize,
    rate: Option<f64>,
) -> (Vec<Duration>, usize, Duration)
where
    F: Fn(u64, &str) -> String + Clone + Send + 'static,
{
    let started = Instant::now();
    let stop = started + Duration::from_secs(seconds as u64);
    let mut workers = Vec::new();
    for w in 0..clients {
        let (http, token, page_url, extra) = (
            http.clone(),
            token.to_owned(),
            page_url.clone(),
            extra.to_owned(),
        );
        // Open loop: client w sends at started + (k * clients + w) / rate.
        let every = rate.map(|r| Duration::from_secs_f64(clients as f64 / r));
        let offset = rate.map(|r| Duration::from_secs_f64(w as f64 / r));
        workers.push(tokio::spawn(async move {
            let mut seed = 0x9E37_79B9_7F4A_7C15u64 ^ (w as u64 + 1);
            let mut lat = Vec::new();
            let mut errors = 0;
            let mut k = 0u32;
            loop {
                let t = match (every, offset) {
                    (Some(every), Some(offset)) => {
                        let at = started + offset + every * k;
                        tokio::time::sleep_until(at.into()).await;
                        at
                    }
                    _ => Instant::now(),
                };
                if t >= stop {
                    break;
                }
                k += 1;
                let url = page_url(below(&mut seed, 100_000), &extra);
                match http
                    .get(&url)
                    .bearer_auth(&token)
                    .header("Version", "2.0.0")
                    .send()
                    .await
                {
                    Ok(r) if r.status().is_success() => match r.bytes().await {
                        Ok(_) => lat.push((t - started, t.elapsed())),
                        Err(_) => errors += 1,
                    },
                    _ => errors += 1,
                }
            }
            (lat, errors)
        }));
    }
    let mut sent = Vec::new();
    let mut errors = 0;
    for w in workers {
        let (l, e) = w.await.expect("worker");
        sent.extend(l);
        errors += e;
    }
    if std::env::var("VNFM_LOAD_TIMELINE").is_ok() {
        timeline(&mut sent);
    }
    (
        sent.into_iter().map(|(_, l)| l).collect(),
        errors,
        started.elapsed(),
    )
}

/// Where the slow requests were (`VNFM_LOAD_TIMELINE`): per 100 ms of send time, the
/// requests and the slowest, for the windows with a request over 20 ms. Shows whether a
/// tail is spread evenly (a busy machine) or gathered in a few windows (a stall).
fn timeline(sent: &mut [(Duration, Duration)]) {
    sent.sort_unstable();
    let window = Duration::from_millis(100);
    let mut slow_windows = 0;
    for chunk in sent.chunk_by(|a, b| {
        a.0.as_millis() / window.as_millis() == b.0.as_millis() / window.as_millis()
    }) {
        let worst = chunk.iter().map(|(_, l)| *l).max().unwrap_or_default();
        if worst > Duration::from_millis(20) {
            slow_windows += 1;
            let over = chunk
                .iter()
                .filter(|(_, l)| *l > Duration::from_millis(20))
                .count();
            println!(
                "  at {:.1} s: {} requests, {over} over 20 ms, slowest {:.1} ms",
                chunk[0].0.as_secs_f64(),
                chunk.len(),
                worst.as_secs_f64() * 1e3
            );
        }
    }
    println!("  {slow_windows} windows of 100 ms with a request over 20 ms");
}

fn main() {
    vnfm::lcm::install_crypto_provider();
    let instances = env_or("VNFM_LOAD_INSTANCES", 50_000);
    let concurrency = env_or("VNFM_LOAD_CONCURRENCY", 200);
    let seconds = env_or("VNFM_LOAD_SECONDS", 10);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let dir = tempfile::tempdir().expect("temp dir");
        let data = dir.path().join("data");
        let mut options = StateOptions::new(&data);
        options.enable_test_vim = true;
        options.verify_callbacks = false;
        let mut services = vnfm::lcm::builder()
            .data_dir(&data)
            .recovery_interval(None)
            .deliver_notifications(vnfm::lcm::DelivererConfig {
                concurrency: env_or("VNFM_LOAD_DELIVERIES", 16),
                ..vnfm::lcm::DelivererConfig::new("load")
            })
            .infra_driver(vnfm_api::test_vim_driver());
        if let Ok(url) = std::env::var("VNFM_LOAD_STORE_URL") {
            services = services.store_url(url);
        } else if std::env::var("VNFM_LOAD_DURABILITY").as_deref() == Ok("full") {
            services = services.store_url(format!(
                "sqlite://{}?synchronous=full",
                data.join("full.db").display()
            ));
        }
        let services = services.assemble().await.expect("services");
        let state = AppState::new(services, options).await.expect("state");
        let app = vnfm_api::router(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            use axum::serve::ListenerExt;
            let listener = listener.tap_io(|s| {
                let _ = s.set_nodelay(true);
            });
            // The server's own HTTP/1.1 loop, as `vnfm serve` runs it.
            let _ = vnfm_api::server::serve_http1(listener, app, std::future::pending()).await;
        });
        let base = format!("http://{addr}");
        let client = state.bootstrap_client().expect("client");
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(concurrency)
            .tcp_nodelay(true)
            .build()
            .expect("http client");
        let token = common::token(&http, &base, &client).await;

        // Onboard the sample and seed the instances through the core.
        common::onboard_hello(&http, &base, &token).await;
        let vnfd_id = "6f0b7e1c-2d55-4c5e-9b3a-4e110a000001";
        let seeded = Instant::now();
        let created = Arc::new(AtomicUsize::new(0));
        let mut seeders = Vec::new();
        for _ in 0..env_or("VNFM_LOAD_SEEDERS", 4) {
            let lcm = state.lcm().clone();
            let created = created.clone();
            seeders.push(tokio::spawn(async move {
                let mut ids = Vec::new();
                while created.fetch_add(1, Ordering::Relaxed) < instances {
                    let n = created.load(Ordering::Relaxed);
                    let req = serde_json::from_value(json!({"vnfdId": vnfd_id, "vnfInstanceName": format!("vnf-{n:05}")})).expect("request");
                    ids.push(lcm.create_vnf_identifier(req).await.expect("create").id);
                }
                ids
            }));
        }
        let mut ids = Vec::new();
        for s in seeders {
            ids.extend(s.await.expect("seeder"));
        }
        println!("seeded {} instances in {:.1} s", ids.len(), seeded.elapsed().as_secs_f64());

        println!("RSS after seeding: {:.0} MiB", rss_mib());

        // 1. Filtered list pages, a different filter per request.
        let list_base = base.clone();
        let page_url = move |r: u64, extra: &str| {
            format!("{list_base}/vnflcm/v2/vnf_instances?filter=(eq,instantiationState,NOT_INSTANTIATED);(neq,vnfInstanceName,vnf-{r:05}){extra}")
        };
        let probe = http.get(page_url(7, "")).bearer_auth(&token).header("Version", "2.0.0").send().await.expect("probe");
        let has_next = probe.headers().contains_key("link");
        let page: Vec<serde_json::Value> = probe.json().await.expect("page");
        println!("page: {} items, next link: {has_next}", page.len());
        for clients in [1, concurrency] {
            let (latencies, errors, elapsed) =
                page_load(&http, &token, &page_url, "", clients, seconds, None).await;
            report(
                &format!("GET 100-item page, distinct filters, {instances} instances, {clients} clients"),
                latencies,
                errors,
                elapsed,
            );
        }
        // 1a. Alternating runs of the two ways a page is computed (same binary, same data, so
        // a busy machine's drift falls on both): `exclude_default` shows the same items
        // through the evaluator (each stored document parsed, filtered, selected and encoded);
        // no selector lets the store answer with its stored default views. Closed loop with
        // `concurrency` clients, then, with VNFM_LOAD_RATE, open loop at that rate.
        let rate = env_or("VNFM_LOAD_RATE", 0);
        for round in 1..=env_or("VNFM_LOAD_AB_ROUNDS", 0) {
            let only_stored = std::env::var("VNFM_LOAD_AB_PATHS").as_deref() == Ok("stored");
            for (how, extra) in [("parsed", "&exclude_default"), ("stored views", "")] {
                if only_stored && how == "parsed" {
                    continue;
                }
                let (latencies, errors, elapsed) =
                    page_load(&http, &token, &page_url, extra, concurrency, seconds, None).await;
                report(&format!("round {round}, {how}, closed loop, {concurrency} clients"), latencies, errors, elapsed);
                if rate > 0 {
                    let (latencies, errors, elapsed) =
                        page_load(&http, &token, &page_url, extra, concurrency, seconds, Some(rate as f64)).await;
                    report(
                        &format!("round {round}, {how}, open loop, {rate} requests/s offered over {concurrency} connections"),
                        latencies,
                        errors,
                        elapsed,
                    );
                }
            }
        }
        if std::env::var("VNFM_LOAD_LIST_ONLY").is_ok() {
            state.lcm().shutdown(Duration::from_secs(30)).await;
            return;
        }

        // 1b. The same with wrk (a C load generator, lighter than the in-process one).
        let wrk_threads = env_or("VNFM_LOAD_WRK_THREADS", 2);
        let script = dir.path().join("distinct.lua");
        std::fs::write(
            &script,
            "request = function()\n  return wrk.format(\"GET\", \"/vnflcm/v2/vnf_instances?filter=(eq,instantiationState,NOT_INSTANTIATED);(neq,vnfInstanceName,vnf-\" .. string.format(\"%05d\", math.random(0, 99999)) .. \")\")\nend\n",
        )
        .expect("wrk script");
        if let Ok(out) = std::process::Command::new("wrk")
            .args([
                &format!("-t{wrk_threads}"),
                &format!("-c{concurrency}"),
                &format!("-d{seconds}s"),
                "--latency",
            ])
            .args(["-H", &format!("Authorization: Bearer {token}"), "-H", "Version: 2.0.0"])
            .arg("-s")
            .arg(&script)
            .arg(&base)
            .output()
        {
            let text = String::from_utf8_lossy(&out.stdout);
            println!("wrk, distinct filters, {concurrency} connections, {wrk_threads} threads:");
            for line in text.lines().filter(|l| {
                let l = l.trim_start();
                l.starts_with("50%") || l.starts_with("90%") || l.starts_with("99%")
                    || l.starts_with("Requests/sec") || l.starts_with("Non-2xx") || l.contains("requests in")
            }) {
                println!("  {}", line.trim());
            }
        } else {
            println!("wrk not found: skipped (apt-get install wrk)");
        }
        println!("RSS after list load: {:.0} MiB", rss_mib());

        // 2. (cont,vnfInstanceName,...): the first page.
        for (what, substrings) in [
            ("many matches", ["vnf-1", "vnf-2", "vnf-3", "vnf-4", "vnf-0"]),
            ("one match", ["-12345", "-23456", "-34567", "-45678", "-01234"]),
        ] {
            let mut lat = Vec::new();
            for s in substrings {
                let t = Instant::now();
                let r = http
                    .get(format!("{base}/vnflcm/v2/vnf_instances?filter=(cont,vnfInstanceName,{s})"))
                    .bearer_auth(&token)
                    .header("Version", "2.0.0")
                    .send()
                    .await
                    .expect("cont");
                let items: Vec<serde_json::Value> = r.json().await.expect("cont page");
                assert!(!items.is_empty(), "{s} matched nothing");
                lat.push(t.elapsed());
            }
            lat.sort_unstable();
            println!(
                "GET (cont,vnfInstanceName,...), {what}, first page: median {:.2} ms (of {})",
                lat[lat.len() / 2].as_secs_f64() * 1e3,
                lat.len()
            );
        }

        // 2a. A filter on a member with no column of its own, matching nothing: the client
        // walks the whole answer (every page the server gives, following `Link`), so the
        // figure is what it takes to learn that nothing matches. Values vary per request.
        {
            let mut lat = Vec::new();
            let mut requests = 0usize;
            for v in ["9.1", "9.2", "9.3", "9.4", "9.5"] {
                let t = Instant::now();
                let mut next = Some(format!("{base}/vnflcm/v2/vnf_instances?filter=(eq,vnfSoftwareVersion,{v})"));
                while let Some(url) = next.take() {
                    let r = http.get(&url).bearer_auth(&token).header("Version", "2.0.0").send().await.expect("document filter");
                    assert!(r.status().is_success(), "document filter {}", r.status());
                    requests += 1;
                    next = next_page(&r, &base);
                    let items: Vec<serde_json::Value> = r.json().await.expect("document filter page");
                    assert!(items.is_empty(), "{v} matched");
                }
                lat.push(t.elapsed());
            }
            lat.sort_unstable();
            println!(
                "GET (eq,vnfSoftwareVersion,...) (no column), no match, whole answer: median {:.1} ms (of {}, {} requests in all)",
                lat[lat.len() / 2].as_secs_f64() * 1e3,
                lat.len(),
                requests
            );
        }

        // 2b. A full export: every instance, whole (`all_fields`), page by page as
        // `vnfm vnf export` walks it, one client; memory sampled as it goes.
        if std::env::var("VNFM_LOAD_EXPORT").is_ok() {
            let started = Instant::now();
            let mut next = Some(format!("{base}/vnflcm/v2/vnf_instances?all_fields"));
            let (mut items, mut pages, mut bytes, mut peak) = (0usize, 0usize, 0usize, 0f64);
            let mut page_latencies = Vec::new();
            while let Some(url) = next.take() {
                let t = Instant::now();
                let r = http.get(&url).bearer_auth(&token).header("Version", "2.0.0").send().await.expect("export page");
                assert!(r.status().is_success(), "export page {}", r.status());
                next = next_page(&r, &base);
                let body = r.bytes().await.expect("export body");
                let page: Vec<serde_json::Value> = serde_json::from_slice(&body).expect("export items");
                page_latencies.push(t.elapsed());
                items += page.len();
                bytes += body.len();
                pages += 1;
                if pages % (instances / 1000).max(1) == 0 {
                    let rss = rss_mib();
                    peak = peak.max(rss);
                    println!("export: {items} instances in {:.1} s, RSS {rss:.0} MiB", started.elapsed().as_secs_f64());
                }
            }
            assert_eq!(items, instances, "the export holds every instance");
            report("export, one page of 100 whole instances", page_latencies, 0, started.elapsed());
            println!(
                "export: {items} instances ({:.0} MiB) in {:.1} s = {:.0} instances/s; RSS peak {peak:.0} MiB, after {:.0} MiB",
                bytes as f64 / 1048576.0,
                started.elapsed().as_secs_f64(),
                items as f64 / started.elapsed().as_secs_f64(),
                rss_mib()
            );
        }
        if std::env::var("VNFM_LOAD_SKIP_CYCLES").is_ok() {
            state.lcm().shutdown(Duration::from_secs(30)).await;
            return;
        }

        // 3. Instantiate + terminate cycles over REST.
        // First polling, then (subscribed only from then on, so that the polling figures pay
        // for no notification) waiting for each occurrence's final notification.
        let targets: Vec<String> = ids.iter().map(|i| i.to_string()).collect();
        let mut offset = 0;
        let mut how = Await::Poll;
        for (mode, n) in [("polling", 1usize), ("polling", 8), ("polling", 32), ("notified", 1), ("notified", 8), ("notified", 32)] {
            if std::env::var("VNFM_LOAD_CYCLE_CLIENTS").is_ok_and(|only| only != mode) {
                continue;
            }
            if mode == "notified" && matches!(how, Await::Poll) {
                how = Await::Notified(subscribe(&http, &base, &token).await);
            }
            let mine: Vec<String> = targets[offset..offset + n].to_vec();
            offset += n;
            let stop = Instant::now() + Duration::from_secs(seconds as u64);
            let started = Instant::now();
            let cpu_before = cpu_seconds();
            let polls_before = POLLS.load(Ordering::Relaxed);
            let mut workers = Vec::new();
            for id in mine {
                let (http, base, token, how) = (http.clone(), base.clone(), token.clone(), how.clone());
                workers.push(tokio::spawn(async move {
                    let mut cycles = 0u64;
                    while Instant::now() < stop {
                        rest_cycle(&http, &base, &token, &id, &how).await;
                        cycles += 1;
                    }
                    cycles
                }));
            }
            let mut cycles = 0;
            for w in workers {
                cycles += w.await.expect("cycle worker");
            }
            let cpu = cpu_seconds() - cpu_before;
            let polls = POLLS.load(Ordering::Relaxed) - polls_before;
            println!(
                "instantiate+terminate over REST, {mode}, {n} instance(s): {cycles} cycles in {:.1} s = {:.0} cycles/s; {:.2} ms of CPU per cycle (server and clients); {:.1} polls per cycle",
                started.elapsed().as_secs_f64(),
                cycles as f64 / started.elapsed().as_secs_f64(),
                cpu * 1000.0 / cycles.max(1) as f64,
                polls as f64 / cycles.max(1) as f64
            );
        }
        println!("RSS after cycles: {:.0} MiB", rss_mib());

        // 5. A long run: is memory flat?
        let soak = env_or("VNFM_LOAD_SOAK_CYCLES", 0);
        if soak > 0 {
            let done = Arc::new(AtomicUsize::new(0));
            let started = Instant::now();
            let mut workers = Vec::new();
            for id in &targets[offset..offset + 32] {
                let (http, base, token, done, how) = (http.clone(), base.clone(), token.clone(), done.clone(), how.clone());
                let id = id.clone();
                workers.push(tokio::spawn(async move {
                    while done.fetch_add(1, Ordering::Relaxed) < soak {
                        rest_cycle(&http, &base, &token, &id, &how).await;
                    }
                }));
            }
            let mut reported = 0;
            while workers.iter().any(|w| !w.is_finished()) {
                tokio::time::sleep(Duration::from_millis(200)).await;
                let n = done.load(Ordering::Relaxed).min(soak);
                if n >= reported + soak / 10 {
                    reported = n;
                    println!(
                        "soak: {n} cycles in {:.0} s, RSS {:.0} MiB",
                        started.elapsed().as_secs_f64(),
                        rss_mib()
                    );
                }
            }
            println!("soak done: RSS {:.0} MiB", rss_mib());
        }
        state.lcm().shutdown(Duration::from_secs(30)).await;
    });
}
