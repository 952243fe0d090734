//! Load test of the REST server over real HTTP on loopback, with an in-process load
//! generator (the server and the clients share the machine's cores, as `wrk` would).
//!
//! 1. `GET /vnflcm/v2/vnf_instances?filter=(eq,instantiationState,NOT_INSTANTIATED)` (a
//!    100-item page) with N instances in SQLite, C concurrent keep-alive clients, D seconds.
//! 2. `POST .../instantiate` on distinct instances with C concurrent clients (the 202 latency;
//!    the operations then run in the background).
//!
//! `cargo bench -p vnfm-api --bench api_load`; sizes from `VNFM_LOAD_INSTANCES` (50000),
//! `VNFM_LOAD_CONCURRENCY` (200), `VNFM_LOAD_SECONDS` (10), `VNFM_LOAD_INSTANTIATES` (2000),
//! `VNFM_LOAD_WRK_THREADS` (2).
//! Prints requests/s and latency percentiles.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use vnfm_api::{AppState, StateOptions};

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

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

fn zip_dir(dir: &std::path::Path) -> Vec<u8> {
    use std::io::Write;
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("sample dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let name = p
                    .strip_prefix(dir)
                    .expect("prefix")
                    .to_string_lossy()
                    .replace('\\', "/");
                zip.start_file(name, zip::write::SimpleFileOptions::default())
                    .expect("zip");
                zip.write_all(&std::fs::read(&p).expect("read"))
                    .expect("zip");
            }
        }
    }
    zip.finish().expect("zip").into_inner()
}

fn main() {
    vnfm_lcm::notify::install_crypto_provider();
    let instances = env_or("VNFM_LOAD_INSTANCES", 50_000);
    let concurrency = env_or("VNFM_LOAD_CONCURRENCY", 200);
    let seconds = env_or("VNFM_LOAD_SECONDS", 10);
    let instantiates = env_or("VNFM_LOAD_INSTANTIATES", 2_000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut options = StateOptions::new(dir.path().join("data"));
        options.enable_test_vim = true;
        options.verify_callbacks = false;
        options.recovery_interval = None;
        let state = AppState::build(options).await.expect("state");
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
        let token: serde_json::Value = http
            .post(format!("{base}/oauth2/token"))
            .basic_auth(&client.client_id, Some(client.client_secret.expose()))
            .form(&[("grant_type", "client_credentials")])
            .send()
            .await
            .expect("token")
            .json()
            .await
            .expect("token json");
        let token = token["access_token"].as_str().expect("access_token").to_owned();

        // Onboard the sample and seed the instances through the core.
        let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../vnfd-samples/hello-vnf");
        let pkg: serde_json::Value = http
            .post(format!("{base}/vnfpkgm/v2/vnf_packages"))
            .bearer_auth(&token)
            .header("Version", "2.0.0")
            .json(&json!({}))
            .send()
            .await
            .expect("create package")
            .json()
            .await
            .expect("package json");
        let pkg_id = pkg["id"].as_str().expect("id").to_owned();
        http.put(format!("{base}/vnfpkgm/v2/vnf_packages/{pkg_id}/package_content"))
            .bearer_auth(&token)
            .header("Version", "2.0.0")
            .header("Content-Type", "application/zip")
            .body(zip_dir(&sample))
            .send()
            .await
            .expect("upload");
        tokio::time::sleep(Duration::from_millis(500)).await;
        let vnfd_id = "6f0b7e1c-2d55-4c5e-9b3a-4e110a000001";
        let seeded = Instant::now();
        let created = Arc::new(AtomicUsize::new(0));
        let mut seeders = Vec::new();
        for _ in 0..4 {
            let lcm = state.lcm().clone();
            let created = created.clone();
            seeders.push(tokio::spawn(async move {
                let mut ids = Vec::new();
                while created.fetch_add(1, Ordering::Relaxed) < instances {
                    let req = serde_json::from_value(json!({"vnfdId": vnfd_id, "vnfInstanceName": "load"})).expect("request");
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

        // 1. Filtered list pages.
        let url = format!("{base}/vnflcm/v2/vnf_instances?filter=(eq,instantiationState,NOT_INSTANTIATED)");
        let probe = http.get(&url).bearer_auth(&token).header("Version", "2.0.0").send().await.expect("probe");
        let has_next = probe.headers().contains_key("link");
        let page: Vec<serde_json::Value> = probe.json().await.expect("page");
        println!("page: {} items, next link: {has_next}", page.len());
        let stop = Instant::now() + Duration::from_secs(seconds as u64);
        let started = Instant::now();
        let mut workers = Vec::new();
        for _ in 0..concurrency {
            let http = http.clone();
            let url = url.clone();
            let token = token.clone();
            workers.push(tokio::spawn(async move {
                let mut lat = Vec::new();
                let mut errors = 0;
                while Instant::now() < stop {
                    let t = Instant::now();
                    match http.get(&url).bearer_auth(&token).header("Version", "2.0.0").send().await {
                        Ok(r) if r.status().is_success() => match r.bytes().await {
                            Ok(_) => lat.push(t.elapsed()),
                            Err(_) => errors += 1,
                        },
                        _ => errors += 1,
                    }
                }
                (lat, errors)
            }));
        }
        let mut latencies = Vec::new();
        let mut errors = 0;
        for w in workers {
            let (l, e) = w.await.expect("worker");
            latencies.extend(l);
            errors += e;
        }
        report(
            &format!("GET 100-item filtered page, {instances} instances, {concurrency} clients"),
            latencies,
            errors,
            started.elapsed(),
        );

        // 1b. The same with wrk (a C load generator, lighter than the in-process one), when it
        // is on PATH.
        let wrk_threads = env_or("VNFM_LOAD_WRK_THREADS", 2);
        if let Ok(out) = std::process::Command::new("wrk")
            .args([
                &format!("-t{wrk_threads}"),
                &format!("-c{concurrency}"),
                &format!("-d{seconds}s"),
                "--latency",
            ])
            .args(["-H", &format!("Authorization: Bearer {token}"), "-H", "Version: 2.0.0"])
            .arg(&url)
            .output()
        {
            let text = String::from_utf8_lossy(&out.stdout);
            println!("wrk, {concurrency} connections, {wrk_threads} threads:");
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

        // 2. Instantiate under concurrency.
        let targets: Arc<Vec<String>> = Arc::new(ids.iter().take(instantiates).map(|i| i.to_string()).collect());
        let next = Arc::new(AtomicUsize::new(0));
        let started = Instant::now();
        let mut workers = Vec::new();
        for _ in 0..concurrency {
            let http = http.clone();
            let base = base.clone();
            let token = token.clone();
            let targets = targets.clone();
            let next = next.clone();
            workers.push(tokio::spawn(async move {
                let mut lat = Vec::new();
                let mut errors = 0;
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(id) = targets.get(i) else { break };
                    let t = Instant::now();
                    let r = http
                        .post(format!("{base}/vnflcm/v2/vnf_instances/{id}/instantiate"))
                        .bearer_auth(&token)
                        .header("Version", "2.0.0")
                        .json(&json!({"flavourId": "simple", "vimConnectionInfo": {"v": {"vimType": "TEST.NOOP.V_1"}}}))
                        .send()
                        .await;
                    match r {
                        Ok(r) if r.status().as_u16() == 202 => lat.push(t.elapsed()),
                        _ => errors += 1,
                    }
                }
                (lat, errors)
            }));
        }
        let mut latencies = Vec::new();
        let mut errors = 0;
        for w in workers {
            let (l, e) = w.await.expect("worker");
            latencies.extend(l);
            errors += e;
        }
        report(
            &format!("POST instantiate (202), {concurrency} clients"),
            latencies,
            errors,
            started.elapsed(),
        );
        state.lcm().shutdown(Duration::from_secs(30)).await;
    });
}
