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

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

mod figures;
mod phases;
mod server;

use figures::{Table, env_or, load_average};
use phases::{cycles, pages, seed};
use server::{Server, Store, client};

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
