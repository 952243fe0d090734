//! The flow's HTTP side: a client of `vnfm serve`, as curl would be, and the server process.

use std::time::Duration;

use crate::e2e_support::{self, World};
use serde_json::{Value, json};

/// A client of `vnfm serve`, as curl would be.
pub(crate) struct Rest {
    pub(crate) base: String,
    pub(crate) token: String,
    pub(crate) http: reqwest::Client,
}

impl Rest {
    pub(crate) async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value, Option<String>) {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .header("Version", "2.0.0");
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let location = resp
            .headers()
            .get("location")
            .map(|l| l.to_str().unwrap().to_string());
        let text = resp.text().await.unwrap();
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        (status, body, location)
    }

    pub(crate) async fn get(&self, path: &str) -> Value {
        let (status, body, _) = self.call(reqwest::Method::GET, path, None).await;
        assert_eq!(status, 200, "GET {path}: {body}");
        body
    }

    pub(crate) async fn post(&self, path: &str, body: Value) -> (u16, Value, Option<String>) {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }

    /// Onboards a package directory; returns its VNFD id.
    pub(crate) async fn onboard(&self, dir: &std::path::Path) -> String {
        let (status, pkg, _) = self.post("/vnfpkgm/v2/vnf_packages", json!({})).await;
        assert_eq!(status, 201, "{pkg}");
        let id = pkg["id"].as_str().unwrap();
        let resp = self
            .http
            .put(format!(
                "{}/vnfpkgm/v2/vnf_packages/{id}/package_content",
                self.base
            ))
            .bearer_auth(&self.token)
            .header("Version", "2.0.0")
            .header("Content-Type", "application/zip")
            .body(e2e_support::zip_dir(dir))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 202);
        for _ in 0..600 {
            let pkg = self.get(&format!("/vnfpkgm/v2/vnf_packages/{id}")).await;
            match pkg["onboardingState"].as_str() {
                Some("ONBOARDED") => return pkg["vnfdId"].as_str().unwrap().to_string(),
                Some("ERROR") => panic!("onboarding failed: {pkg:#}"),
                _ => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
        panic!("package {id} not onboarded");
    }

    /// Runs a task (`POST .../{task}`, 202 + Location) and waits for its occurrence.
    pub(crate) async fn task(&self, world: &World, vnf: &str, task: &str, body: Value) -> Value {
        let (status, problem, location) = self
            .post(&format!("/vnflcm/v2/vnf_instances/{vnf}/{task}"), body)
            .await;
        assert_eq!(status, 202, "{task}: {problem}");
        let location = location.unwrap();
        let path = location.strip_prefix(&self.base).unwrap().to_string();
        for _ in 0..6000 {
            let occ = self.get(&path).await;
            match occ["operationState"].as_str().unwrap() {
                "COMPLETED" => {
                    let id = occ["id"].as_str().unwrap();
                    world.subscriber.wait_for(id, "COMPLETED").await;
                    return occ;
                }
                "STARTING" | "PROCESSING" | "ROLLING_BACK" => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                other => panic!("{task} ended {other}: {occ:#}"),
            }
        }
        panic!("{task} did not end");
    }
}

/// `vnfm serve` on a free port; killed on drop.
pub(crate) struct Server {
    pub(crate) child: std::process::Child,
    pub(crate) base: String,
    pub(crate) data: std::path::PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn serve(world: &World) -> Server {
    use std::io::BufRead;
    let data = world.dir.path().join("serve-data");
    let mut child = std::process::Command::new(world.profile.join("vnfm"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--package-plugins",
            "--data-dir",
        ])
        .arg(&data)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = std::io::BufReader::new(stdout).lines();
    let base = loop {
        let line = lines
            .next()
            .expect("vnfm serve printed its address")
            .unwrap();
        if let Some(b) = line.strip_prefix("vnfm listening on ") {
            break b.trim().to_string();
        }
    };
    // Keep reading so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    Server { child, base, data }
}
