//! A large package upload against `vnfm serve`, measured by the server's peak resident memory
//! (`VmHWM` of `/proc/<pid>/status`): the body is streamed to disk, the digest computed on the
//! way, the content stored in pieces and the CSAR read from the file, so memory does not grow
//! with the package (a 500 MiB upload used to peak at 3 GB: six copies of the body).

use std::io::{Read, Write};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::support;
use support::Server;

const HELLO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../vnfd-samples/hello-vnf");

/// Size of the incompressible artifact that pads the package.
const PADDING_MIB: usize = 200;

/// Largest growth of the server's peak RSS the upload may cause. One copy of the body in
/// memory would already exceed it.
const MAX_GROWTH_MIB: u64 = 100;

impl Server {
    fn start(data_dir: &Path) -> Server {
        let mut command = support::serve_command(data_dir);
        command
            .args(["--log-level", "warn"])
            .stderr(Stdio::inherit());
        Server::spawn(command, 0).0
    }

    /// The server's peak resident set size so far, in KiB.
    fn peak_rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmHWM in /proc/<pid>/status")
    }
}

/// Writes the hello-vnf sample as a zip of stored (uncompressed) entries, padded with an
/// incompressible artifact of `PADDING_MIB` MiB listed in the manifest with its SHA-256, so
/// that onboarding reads all of it.
fn write_padded_package(path: &Path) -> u64 {
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .large_file(true);
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    zip.start_file("Files/padding.bin", opts).unwrap();
    let mut hasher = Sha256::new();
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut chunk = vec![0u8; 1 << 20];
    for _ in 0..PADDING_MIB {
        for word in chunk.chunks_exact_mut(8) {
            // xorshift64: fast, and incompressible enough for a zip.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            word.copy_from_slice(&state.to_le_bytes());
        }
        hasher.update(&chunk);
        zip.write_all(&chunk).unwrap();
    }
    let padding_sha = hex::encode(hasher.finalize());
    for name in [
        "TOSCA-Metadata/TOSCA.meta",
        "Definitions/hello_top.vnfd.yaml",
        "Definitions/hello_types.yaml",
        "Definitions/hello_df_simple.yaml",
    ] {
        zip.start_file(name, opts).unwrap();
        zip.write_all(&std::fs::read(Path::new(HELLO).join(name)).unwrap())
            .unwrap();
    }
    let mut manifest = std::fs::read_to_string(Path::new(HELLO).join("hello.mf")).unwrap();
    manifest.push_str(&format!(
        "\nSource: Files/padding.bin\nAlgorithm: SHA-256\nHash: {padding_sha}\n"
    ));
    zip.start_file("hello.mf", opts).unwrap();
    zip.write_all(manifest.as_bytes()).unwrap();
    zip.finish().unwrap();
    std::fs::metadata(path).unwrap().len()
}

/// Sends the file at `path` as the body of `PUT .../package_content` over a plain socket
/// (streamed from disk: the test itself holds no copy) and returns the status code.
fn put_file(base: &str, token: &str, package: &str, path: &Path) -> u16 {
    let addr = base.trim_start_matches("http://");
    let mut tcp = std::net::TcpStream::connect(addr).unwrap();
    let len = std::fs::metadata(path).unwrap().len();
    write!(
        tcp,
        "PUT /vnfpkgm/v2/vnf_packages/{package}/package_content HTTP/1.1\r\nHost: vnfm\r\n\
         Authorization: Bearer {token}\r\nVersion: 2.0.0\r\nContent-Type: application/zip\r\n\
         Content-Length: {len}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    std::io::copy(&mut std::fs::File::open(path).unwrap(), &mut tcp).unwrap();
    let mut answer = String::new();
    tcp.read_to_string(&mut answer).unwrap();
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {answer}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_package_upload_is_streamed_to_disk_in_constant_memory() {
    rustls::crypto::ring::default_provider()
        .install_default()
        .ok();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let zip_path = dir.path().join("padded.zip");
    let zip_len = tokio::task::spawn_blocking({
        let p = zip_path.clone();
        move || write_padded_package(&p)
    })
    .await
    .unwrap();
    assert!(zip_len > (PADDING_MIB as u64) << 20);

    let server = Server::start(&data);
    let creds: Value =
        serde_json::from_str(&std::fs::read_to_string(data.join("credentials.json")).unwrap())
            .unwrap();
    let http = reqwest::Client::new();
    let token = http
        .post(format!("{}/oauth2/token", server.base))
        .basic_auth(
            creds["client_id"].as_str().unwrap(),
            creds["client_secret"].as_str(),
        )
        .form(&[("grant_type", "client_credentials")])
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap()["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let api = |method: reqwest::Method, path: &str| {
        http.request(method, format!("{}{path}", server.base))
            .bearer_auth(&token)
            .header("Version", "2.0.0")
    };
    let pkg: Value = api(reqwest::Method::POST, "/vnfpkgm/v2/vnf_packages")
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let pkg_id = pkg["id"].as_str().unwrap().to_owned();
    let before = server.peak_rss_kib();

    let status = tokio::task::spawn_blocking({
        let (base, token, id, path) = (
            server.base.clone(),
            token.clone(),
            pkg_id.clone(),
            zip_path.clone(),
        );
        move || put_file(&base, &token, &id, &path)
    })
    .await
    .unwrap();
    assert_eq!(status, 202);
    let mut info = Value::Null;
    for _ in 0..1200 {
        info = api(
            reqwest::Method::GET,
            &format!("/vnfpkgm/v2/vnf_packages/{pkg_id}"),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
        if info["onboardingState"] != "PROCESSING" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(info["onboardingState"], "ONBOARDED", "{info:#}");

    // The onboarded content is served back (streamed from the kept copy) byte for byte.
    let mut served = api(
        reqwest::Method::GET,
        &format!("/vnfpkgm/v2/vnf_packages/{pkg_id}/package_content"),
    )
    .header("Accept", "application/zip")
    .send()
    .await
    .unwrap();
    assert_eq!(served.status(), 200);
    let mut hasher = Sha256::new();
    let mut served_len = 0u64;
    while let Some(chunk) = served.chunk().await.unwrap() {
        served_len += chunk.len() as u64;
        hasher.update(&chunk);
    }
    assert_eq!(served_len, zip_len);
    assert_eq!(info["checksum"]["hash"], hex::encode(hasher.finalize()));

    let after = server.peak_rss_kib();
    let growth_mib = after.saturating_sub(before) / 1024;
    eprintln!(
        "server peak RSS: {} MiB before, {} MiB after a {} MiB upload",
        before / 1024,
        after / 1024,
        zip_len >> 20
    );
    assert!(
        growth_mib < MAX_GROWTH_MIB,
        "uploading, onboarding and serving a {} MiB package raised the server's peak RSS by {growth_mib} MiB (from {} to {} MiB); the bound is {MAX_GROWTH_MIB} MiB",
        zip_len >> 20,
        before / 1024,
        after / 1024
    );
    // Nothing is left in the upload area but the kept copy.
    let files: Vec<String> = std::fs::read_dir(data.join("packages"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        files,
        [format!(
            "{pkg_id}-{}.zip",
            info["checksum"]["hash"].as_str().unwrap()
        )]
    );
}
