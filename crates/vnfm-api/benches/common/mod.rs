//! What the API benchmarks share: sizes from the environment, percentiles, a package zipped
//! from a sample directory.

#![allow(dead_code)]

use std::time::Duration;

/// The number in environment variable `name`, else `default`.
pub fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The `p` quantile (0 to 1) of `sorted`, zero when it is empty.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// The package directory `dir` as a zip archive.
pub fn zip_dir(dir: &std::path::Path) -> Vec<u8> {
    vnfm_csar::zip_directory(dir).expect("zip the package directory")
}

/// A bearer token of the server at `base` for its bootstrap OAuth 2.0 client.
pub async fn token(
    http: &reqwest::Client,
    base: &str,
    client: &vnfm_api::auth::ClientCredentials,
) -> String {
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
    token["access_token"]
        .as_str()
        .expect("access_token")
        .to_owned()
}

/// Onboards `vnfd-samples/hello-vnf` on the server at `base` and waits until it is ONBOARDED.
pub async fn onboard_hello(http: &reqwest::Client, base: &str, token: &str) {
    let sample =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../vnfd-samples/hello-vnf");
    let pkg: serde_json::Value = http
        .post(format!("{base}/vnfpkgm/v2/vnf_packages"))
        .bearer_auth(token)
        .header("Version", "2.0.0")
        .json(&serde_json::json!({}))
        .send()
        .await
        .expect("create package")
        .json()
        .await
        .expect("package json");
    let pkg_id = pkg["id"].as_str().expect("id");
    http.put(format!(
        "{base}/vnfpkgm/v2/vnf_packages/{pkg_id}/package_content"
    ))
    .bearer_auth(token)
    .header("Version", "2.0.0")
    .header("Content-Type", "application/zip")
    .body(zip_dir(&sample))
    .send()
    .await
    .expect("upload");
    loop {
        let p: serde_json::Value = http
            .get(format!("{base}/vnfpkgm/v2/vnf_packages/{pkg_id}"))
            .bearer_auth(token)
            .header("Version", "2.0.0")
            .send()
            .await
            .expect("package")
            .json()
            .await
            .expect("package json");
        if p["onboardingState"] == "ONBOARDED" {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
