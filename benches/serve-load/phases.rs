//! The phases of a run: creating the instances, the distinct-filter pages (open and closed
//! loop) and the instantiate + terminate cycles.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::figures::Figures;
use crate::server::{Server, client};

/// Phase 1: `n` instances named `vnf-00000`, ... created by 16 clients.
pub(crate) async fn seed(server: &Arc<Server>, vnfd_id: &str, n: u64) -> Figures {
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
    let (latencies, errors) = gather(tasks, "seeder").await;
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
pub(crate) async fn pages(
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
    let (latencies, errors) = gather(tasks, "page client").await;
    let elapsed = started.elapsed();
    let ops = latencies.len() as u64;
    Figures::from(ops, latencies, elapsed, server.cpu() - cpu, errors)
}

/// Phase 3: instantiate + terminate cycles from `clients` clients for `seconds`, each polling
/// its occurrences every `poll`. Latencies are whole cycles.
pub(crate) async fn cycles(
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
    let (latencies, errors) = gather(tasks, "cycle client").await;
    let elapsed = started.elapsed();
    let ops = latencies.len() as u64;
    let polls_per_cycle = polls.load(Ordering::Relaxed) as f64 / ops.max(1) as f64;
    (
        Figures::from(ops, latencies, elapsed, server.cpu() - cpu, errors),
        polls_per_cycle,
    )
}

/// One instantiate + terminate cycle of instance `id`.
pub(crate) async fn cycle(
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

/// Waits for a phase's client tasks (`what` names them if one panicked): their latencies
/// together, and their errors added up.
async fn gather(
    tasks: Vec<tokio::task::JoinHandle<(Vec<Duration>, u64)>>,
    what: &str,
) -> (Vec<Duration>, u64) {
    let (mut latencies, mut errors) = (Vec::new(), 0);
    for t in tasks {
        let (l, e) = t.await.expect(what);
        latencies.extend(l);
        errors += e;
    }
    (latencies, errors)
}
