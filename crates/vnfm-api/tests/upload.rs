//! Package uploads are streamed to a temporary file of the data directory (`packages/`): the
//! size limit is enforced while the body is read, the temporary file is removed when the
//! upload fails, is refused or the client goes away, and the kept copy is readable by the
//! server's user only. The memory bound itself is checked at the process level
//! (`crates/vnfm-cli/tests/large_upload.rs`).

use crate::support;

use std::path::PathBuf;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::http::{Method, Request, StatusCode};
use sha2::{Digest, Sha256};
use support::*;
use tower::ServiceExt;

/// The files of the package directory, sorted.
fn package_files(h: &Harness) -> Vec<String> {
    let dir = h._dir.path().join("data/packages");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

async fn created(h: &Harness) -> String {
    let r = h
        .call(
            Method::POST,
            "/vnfpkgm/v2/vnf_packages",
            Some(serde_json::json!({})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    r.json()["id"].as_str().unwrap().to_owned()
}

fn put(h: &Harness, id: &str, body: Body) -> Request<Body> {
    Request::builder()
        .method(Method::PUT)
        .uri(format!("/vnfpkgm/v2/vnf_packages/{id}/package_content"))
        .header("authorization", format!("Bearer {}", h.token))
        .header("version", "2.0.0")
        .header("content-type", "application/zip")
        .body(body)
        .unwrap()
}

/// A chunked body of `left` pieces of 1 MiB, then an error when `fail` is set, or no end
/// (pending forever) when `stall` is set.
struct Chunks {
    left: usize,
    fail: bool,
    stall: bool,
}

impl futures_core::Stream for Chunks {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.left == 0 {
            if self.fail {
                self.fail = false;
                return Poll::Ready(Some(Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionReset,
                    "the client went away",
                ))));
            }
            if self.stall {
                return Poll::Pending;
            }
            return Poll::Ready(None);
        }
        self.left -= 1;
        Poll::Ready(Some(Ok(Bytes::from(vec![7u8; 1 << 20]))))
    }
}

#[tokio::test]
async fn an_upload_is_kept_on_disk_by_digest_readable_by_the_owner_only() {
    let h = Harness::new().await;
    let content = zip_dir(std::path::Path::new(HELLO));
    let sha = hex::encode(Sha256::digest(&content));
    let (id, info) = h.onboard(content.clone()).await;
    assert_eq!(info["onboardingState"], "ONBOARDED", "{info:#}");
    assert_eq!(info["checksum"]["hash"], sha.as_str());
    let kept = format!("{id}-{sha}.zip");
    assert_eq!(package_files(&h), std::slice::from_ref(&kept));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let dir: PathBuf = h._dir.path().join("data/packages");
        let mode = |p: PathBuf| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(dir.join(&kept)), 0o600);
        assert_eq!(mode(dir), 0o700);
    }
    // The content is served from the kept copy, whole and by range.
    let r = h
        .raw(
            Method::GET,
            &format!("/vnfpkgm/v2/vnf_packages/{id}/package_content"),
            &[
                ("authorization", &format!("Bearer {}", h.token)),
                ("version", "2.0.0"),
                ("accept", "application/zip"),
                ("range", "bytes=10-19"),
            ],
            Vec::new(),
        )
        .await;
    assert_eq!(r.status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(r.body, content[10..20]);
    assert_eq!(
        r.header("content-range"),
        Some(format!("bytes 10-19/{}", content.len()).as_str())
    );

    // Without the local copy (another replica took the upload), it is written again from
    // the store.
    std::fs::remove_file(h._dir.path().join("data/packages").join(&kept)).unwrap();
    let r = h
        .raw(
            Method::GET,
            &format!("/vnfpkgm/v2/vnf_packages/{id}/package_content"),
            &[
                ("authorization", &format!("Bearer {}", h.token)),
                ("version", "2.0.0"),
                ("accept", "application/zip"),
            ],
            Vec::new(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body == content, "the served content differs");
    assert_eq!(package_files(&h), [kept]);

    // Deleting the package deletes its copy.
    let r = h
        .call(
            Method::PATCH,
            &format!("/vnfpkgm/v2/vnf_packages/{id}"),
            Some(serde_json::json!({"operationalState": "DISABLED"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let r = h
        .call(
            Method::DELETE,
            &format!("/vnfpkgm/v2/vnf_packages/{id}"),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert!(package_files(&h).is_empty(), "{:?}", package_files(&h));
}

#[tokio::test]
async fn a_chunked_upload_beyond_the_limit_is_cut_with_413_and_leaves_no_file() {
    let h = Harness::with(|o| o.package_limits.max_package_bytes = 3 << 20).await;
    let id = created(&h).await;
    let stream = Chunks {
        left: 5,
        fail: false,
        stall: false,
    };
    let response = h
        .app
        .clone()
        .oneshot(put(&h, &id, Body::from_stream(stream)))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert!(package_files(&h).is_empty(), "{:?}", package_files(&h));
    let info = h
        .call(Method::GET, &format!("/vnfpkgm/v2/vnf_packages/{id}"), None)
        .await
        .json();
    assert_eq!(info["onboardingState"], "CREATED");
}

#[tokio::test]
async fn an_upload_whose_client_goes_away_leaves_no_file() {
    let h = Harness::new().await;
    let id = created(&h).await;
    let stream = Chunks {
        left: 3,
        fail: true,
        stall: false,
    };
    let response = h
        .app
        .clone()
        .oneshot(put(&h, &id, Body::from_stream(stream)))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert!(package_files(&h).is_empty(), "{:?}", package_files(&h));

    // A request dropped while its body is being read (the connection closed) leaves nothing
    // either.
    let stalled = Chunks {
        left: 2,
        fail: false,
        stall: true,
    };
    let call = tokio::spawn(
        h.app
            .clone()
            .oneshot(put(&h, &id, Body::from_stream(stalled))),
    );
    let mut spooling = false;
    for _ in 0..100 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        if package_files(&h).iter().any(|f| f.starts_with(".upload-")) {
            spooling = true;
            break;
        }
    }
    assert!(
        spooling,
        "the upload is not written to the package directory"
    );
    call.abort();
    let _ = call.await;
    assert!(package_files(&h).is_empty(), "{:?}", package_files(&h));
}

#[tokio::test]
async fn content_for_a_package_that_cannot_take_it_is_refused_before_reading() {
    let h = Harness::new().await;
    let (id, _) = h.onboard(zip_dir(std::path::Path::new(HELLO))).await;
    let before = package_files(&h);
    let never_ends = Chunks {
        left: 0,
        fail: false,
        stall: true,
    };
    let response = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        h.app
            .clone()
            .oneshot(put(&h, &id, Body::from_stream(never_ends))),
    )
    .await
    .expect("answered without reading the body")
    .unwrap();
    assert_eq!(response.status(), StatusCode::CONFLICT);
    assert_eq!(package_files(&h), before);
}
