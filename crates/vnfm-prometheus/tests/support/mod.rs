//! Fixtures of the tests against real Prometheus and Alertmanager
//! (`scripts/test-env/prometheus.sh`): the environment, a metrics exporter whose gauges the
//! test sets, a webhook receiver, and the run-time changes of what Prometheus scrapes and
//! evaluates (target and rule files, reloads) and where Alertmanager sends notifications.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::routing::{get, post};
use tokio::sync::mpsc;

/// The services started by `scripts/test-env/prometheus.sh start`.
#[derive(Debug, Clone)]
pub struct Env {
    pub prometheus_url: String,
    pub alertmanager_url: String,
    /// The script's working directory: `targets/`, `rules/`, `alertmanager.yml`.
    pub dir: PathBuf,
}

impl Env {
    /// The environment, for tests that carry `#[vnfm_test_env::needs(prometheus)]`; panics
    /// (the test fails) when the variables are missing.
    pub fn get() -> Env {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let var = vnfm_test_env::var;
        Env {
            prometheus_url: var("VNFM_TEST_PROMETHEUS_URL"),
            alertmanager_url: var("VNFM_TEST_ALERTMANAGER_URL"),
            dir: PathBuf::from(var("VNFM_TEST_PROM_DIR")),
        }
    }

    /// Makes Prometheus scrape `addr` (job `vnfm-test`) until the returned guard is dropped.
    pub fn scrape(&self, name: &str, addr: SocketAddr) -> FileGuard {
        let path = self.dir.join("targets").join(format!("{name}.json"));
        // Written aside and renamed, so that Prometheus never reads half a file.
        let tmp = path.with_extension("tmp");
        std::fs::write(
            &tmp,
            format!(r#"[{{"targets": ["{addr}"], "labels": {{}}}}]"#),
        )
        .unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        FileGuard { path, reload: None }
    }

    /// Adds the rule file `name` and reloads Prometheus; the guard removes it (and reloads).
    pub async fn rules(&self, name: &str, yaml: &str) -> FileGuard {
        let path = self.dir.join("rules").join(format!("{name}.yml"));
        std::fs::write(&path, yaml).unwrap();
        reload(&self.prometheus_url).await;
        FileGuard {
            path,
            reload: Some(self.prometheus_url.clone()),
        }
    }

    /// Points Alertmanager's receiver at `url` and reloads it.
    pub async fn set_webhook(&self, url: &str) {
        let path = self.dir.join("alertmanager.yml");
        let config = std::fs::read_to_string(&path).unwrap();
        let mut found = false;
        let changed: Vec<String> = config
            .lines()
            .map(|l| {
                if let Some(indent) = l.strip_suffix(l.trim_start())
                    && l.trim_start().starts_with("url: ")
                {
                    found = true;
                    format!("{indent}url: {url}")
                } else {
                    l.to_string()
                }
            })
            .collect();
        assert!(found, "no webhook url line in {}", path.display());
        std::fs::write(&path, changed.join("\n") + "\n").unwrap();
        reload(&self.alertmanager_url).await;
    }
}

async fn reload(base: &str) {
    let response = reqwest::Client::new()
        .post(format!("{base}/-/reload"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("reloading {base}: {e}"));
    let status = response.status();
    let body = response.text().await.unwrap_or_default();
    assert!(
        status.is_success(),
        "reloading {base}: HTTP {status}: {body}"
    );
}

/// Removes a file written for a test when dropped (and reloads Prometheus for rule files).
pub struct FileGuard {
    path: PathBuf,
    reload: Option<String>,
}

impl Drop for FileGuard {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        if let Some(url) = self.reload.take() {
            // Best effort: the next reload of any test picks the removal up anyway.
            let _ = std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build();
                if let Ok(rt) = rt {
                    rt.block_on(async {
                        let _ = reqwest::Client::new()
                            .post(format!("{url}/-/reload"))
                            .send()
                            .await;
                    });
                }
            })
            .join();
        }
    }
}

type Gauges = Arc<Mutex<BTreeMap<(String, Vec<(String, String)>), f64>>>;

/// A Prometheus exporter on 127.0.0.1: `/metrics` in the text exposition format, with the
/// gauges the test sets.
pub struct Exporter {
    pub addr: SocketAddr,
    gauges: Gauges,
    task: tokio::task::JoinHandle<()>,
}

impl Exporter {
    pub async fn start() -> Exporter {
        let gauges = Gauges::default();
        let app = Router::new()
            .route("/metrics", get(metrics))
            .with_state(gauges.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Exporter { addr, gauges, task }
    }

    /// Sets the gauge `name{labels}` to `value`.
    pub fn set(&self, name: &str, labels: &[(&str, &str)], value: f64) {
        let mut labels: Vec<(String, String)> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        labels.sort();
        self.gauges
            .lock()
            .unwrap()
            .insert((name.into(), labels), value);
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn metrics(State(gauges): State<Gauges>) -> ([(&'static str, &'static str); 1], String) {
    let mut out = String::new();
    let mut typed = std::collections::BTreeSet::new();
    for ((name, labels), value) in gauges.lock().unwrap().iter() {
        if typed.insert(name.clone()) {
            out.push_str(&format!("# TYPE {name} gauge\n"));
        }
        let labels: Vec<String> = labels
            .iter()
            .map(|(k, v)| {
                let v = v
                    .replace('\\', "\\\\")
                    .replace('"', "\\\"")
                    .replace('\n', "\\n");
                format!("{k}=\"{v}\"")
            })
            .collect();
        let value = if value.is_nan() {
            "NaN".to_string()
        } else if value.is_infinite() {
            if *value > 0.0 { "+Inf" } else { "-Inf" }.to_string()
        } else {
            value.to_string()
        };
        out.push_str(&format!("{name}{{{}}} {value}\n", labels.join(",")));
    }
    (
        [("content-type", "text/plain; version=0.0.4; charset=utf-8")],
        out,
    )
}

/// An HTTP server on 127.0.0.1 that hands every body POSTed to `/webhook` to the test.
pub struct WebhookReceiver {
    pub url: String,
    bodies: mpsc::UnboundedReceiver<Bytes>,
    task: tokio::task::JoinHandle<()>,
}

impl WebhookReceiver {
    pub async fn start() -> WebhookReceiver {
        let (tx, bodies) = mpsc::unbounded_channel::<Bytes>();
        let app = Router::new().route(
            "/webhook",
            post(move |body: Bytes| {
                let tx = tx.clone();
                async move {
                    let _ = tx.send(body);
                    axum::http::StatusCode::NO_CONTENT
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/webhook", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        WebhookReceiver { url, bodies, task }
    }

    /// The next body for which `accept` is true, within `wait`; others are skipped.
    pub async fn next_matching(
        &mut self,
        wait: Duration,
        mut accept: impl FnMut(&[u8]) -> bool,
    ) -> Bytes {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            match tokio::time::timeout_at(deadline, self.bodies.recv()).await {
                Ok(Some(body)) if accept(&body) => return body,
                Ok(Some(_)) => continue,
                Ok(None) => panic!("the webhook receiver stopped"),
                Err(_) => panic!("no matching webhook within {wait:?}"),
            }
        }
    }
}

impl Drop for WebhookReceiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A name unique to this run, for series labels, files and alert names.
pub fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{prefix}{}x{nanos}", std::process::id())
}

/// Polls `probe` every 250 ms until it answers `Some`, or panics after `wait` with `what`.
pub async fn eventually<T, F, Fut>(wait: Duration, what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        if let Some(v) = probe().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {wait:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
