//! The cost of an `Idempotency-Key` on the request path: `POST /vnflcm/v2/vnf_instances` and
//! a task (`POST .../instantiate`, answered 202 before the occurrence runs), each sent with
//! and without a fresh key, alternating request by request, through the router without a
//! socket (as the API tests call it), on the default SQLite store. Each round times `N`
//! requests of each kind (a task's occurrence is waited for, untimed, before the next
//! request); the figures are the medians of the rounds' median latencies.
//!
//! `cargo bench -p vnfm-api --bench idempotency`; `VNFM_IDEM_ROUNDS` (5) rounds of
//! `VNFM_IDEM_REQUESTS` (100) requests.

#[path = "../tests/support/mod.rs"]
mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use axum::http::{Method, StatusCode};
use serde_json::json;
use support::{HELLO, HELLO_VNFD, Harness, zip_dir};

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

/// A POST through `h`, with a fresh `Idempotency-Key` when `keyed`; its status and
/// `Location`, and how long it took.
async fn post(
    h: &Harness,
    uri: &str,
    body: &serde_json::Value,
    keyed: bool,
) -> (StatusCode, String, Duration) {
    let auth = format!("Bearer {}", h.token);
    let key = format!("\"{}\"", vnfm::lcm::ClientKey::random_key());
    let mut headers = vec![
        ("authorization", auth.as_str()),
        ("version", "2.0.0"),
        ("content-type", "application/json"),
    ];
    if keyed {
        headers.push(("idempotency-key", key.as_str()));
    }
    let bytes = serde_json::to_vec(body).unwrap();
    let started = Instant::now();
    let r = h.raw(Method::POST, uri, &headers, bytes).await;
    let took = started.elapsed();
    let location = r.header("location").unwrap_or_default().to_owned();
    (r.status, location, took)
}

fn main() {
    vnfm::lcm::install_crypto_provider();
    let rounds = env_or("VNFM_IDEM_ROUNDS", 5);
    let n = env_or("VNFM_IDEM_REQUESTS", 100);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let h = Harness::new().await;
        h.onboard(zip_dir(Path::new(HELLO))).await;
        let create = json!({"vnfdId": HELLO_VNFD, "vnfInstanceName": "bench"});
        let instantiate = json!({"flavourId": "simple", "vimConnectionInfo": {"vim1": {"vimType": "TEST.NOOP.V_1"}}});
        // [create without, create with, task without, task with]: each round's median.
        let mut medians: [Vec<Duration>; 4] = Default::default();
        for round in 0..rounds {
            let mut samples: [Vec<Duration>; 4] = Default::default();
            // Keyed and plain requests alternate one by one, so that the machine's load
            // weighs on both alike.
            for _ in 0..n {
                for keyed in [false, true] {
                    let (status, location, took) =
                        post(&h, "/vnflcm/v2/vnf_instances", &create, keyed).await;
                    assert_eq!(status, StatusCode::CREATED);
                    let k = usize::from(keyed);
                    samples[k].push(took);
                    let id = location.rsplit('/').next().unwrap().to_owned();
                    let uri = format!("/vnflcm/v2/vnf_instances/{id}/instantiate");
                    let (status, occ, took) = post(&h, &uri, &instantiate, keyed).await;
                    assert_eq!(status, StatusCode::ACCEPTED);
                    samples[2 + k].push(took);
                    h.wait_op(&occ).await;
                }
            }
            for (m, v) in medians.iter_mut().zip(samples) {
                m.push(median(v));
            }
            println!(
                "round {round}: create {:?} / {:?} (keyed), instantiate {:?} / {:?} (keyed)",
                medians[0][round], medians[1][round], medians[2][round], medians[3][round]
            );
        }
        let [c0, c1, t0, t1] = medians.map(median);
        let cost = |plain: Duration, keyed: Duration| {
            (keyed.as_secs_f64() / plain.as_secs_f64() - 1.0) * 100.0
        };
        println!(
            "POST /vnf_instances: median {:.3} ms without a key, {:.3} ms with one ({:+.1} %)",
            c0.as_secs_f64() * 1e3,
            c1.as_secs_f64() * 1e3,
            cost(c0, c1)
        );
        println!(
            "POST .../instantiate: median {:.3} ms without a key, {:.3} ms with one ({:+.1} %)",
            t0.as_secs_f64() * 1e3,
            t1.as_secs_f64() * 1e3,
            cost(t0, t1)
        );
    });
}
