//! Downloads: the package content, the VNFD and the artifacts, streamed in constant memory
//! and honouring a single `Range: bytes=...`.

use std::io::{Cursor, Write};
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::util::require_accept;

use vnfm::lcm::catalog::open_content;

/// Streams the file at `path` (constant memory) honouring a single `Range: bytes=...`.
async fn ranged_file(
    headers: &HeaderMap,
    path: &std::path::Path,
    content_type: &'static str,
) -> ApiResult<Response> {
    let file = tokio::fs::File::open(path)
        .await
        .map_err(|e| ApiError::Internal(format!("reading {} failed: {e}", path.display())))?;
    ranged_stream(headers, file, content_type).await
}

/// Streams `file` from its start (constant memory) honouring a single `Range: bytes=...`.
async fn ranged_stream(
    headers: &HeaderMap,
    mut file: tokio::fs::File,
    content_type: &'static str,
) -> ApiResult<Response> {
    use tokio::io::{AsyncReadExt, AsyncSeekExt};
    let failed =
        |e: std::io::Error| ApiError::Internal(format!("reading package content failed: {e}"));
    let total = file.metadata().await.map_err(failed)?.len();
    let total_usize = usize::try_from(total)
        .map_err(|_| ApiError::Internal(format!("{total} bytes are too many to serve")))?;
    let range = requested_range(headers, total_usize)?;
    let (status, start, len) = match range {
        Some((start, end)) => (
            StatusCode::PARTIAL_CONTENT,
            start as u64,
            (end - start + 1) as u64,
        ),
        None => (StatusCode::OK, 0, total),
    };
    if start > 0 {
        file.seek(std::io::SeekFrom::Start(start))
            .await
            .map_err(failed)?;
    }
    let stream = tokio_util::io::ReaderStream::with_capacity(file.take(len), 64 * 1024);
    let mut r = (status, axum::body::Body::from_stream(stream)).into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    if let Some((start, end)) = range
        && let Ok(v) = HeaderValue::from_str(&format!("bytes {start}-{end}/{total}"))
    {
        h.insert(header::CONTENT_RANGE, v);
    }
    Ok(r)
}

/// The first and last byte of the single `Range: bytes=...` of the request over `total`
/// bytes (`None` without a `Range`); 416 for a range that cannot be served.
fn requested_range(headers: &HeaderMap, total: usize) -> ApiResult<Option<(usize, usize)>> {
    let Some(range) = headers.get(header::RANGE).and_then(|v| v.to_str().ok()) else {
        return Ok(None);
    };
    let unsatisfiable = || {
        ApiError::RangeNotSatisfiable(format!(
            "the Range {} cannot be served: the content has {total} bytes; use one range bytes=first-last",
            crate::util::cut(range, 60)
        ))
    };
    let spec = range
        .trim()
        .strip_prefix("bytes=")
        .ok_or_else(unsatisfiable)?;
    if spec.contains(',') || total == 0 {
        return Err(unsatisfiable());
    }
    let (first, last) = spec.split_once('-').ok_or_else(unsatisfiable)?;
    let (start, end) = if first.is_empty() {
        let n: usize = last.parse().map_err(|_| unsatisfiable())?;
        if n == 0 {
            return Err(unsatisfiable());
        }
        (total.saturating_sub(n), total - 1)
    } else {
        let s: usize = first.parse().map_err(|_| unsatisfiable())?;
        let e: usize = if last.is_empty() {
            total - 1
        } else {
            last.parse().map_err(|_| unsatisfiable())?
        };
        (s, e.min(total - 1))
    };
    if start > end || start >= total {
        return Err(unsatisfiable());
    }
    Ok(Some((start, end)))
}

pub(super) async fn package_content(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/zip"])?;
    let (_, path) = state.packages.content(&id).await?;
    ranged_file(&headers, &path, "application/zip").await
}

pub(super) async fn artifact(
    State(state): State<Arc<AppState>>,
    Path((id, path)): Path<(String, String)>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let (info, content) = state.packages.content(&id).await?;
    let listed = info
        .additional_artifacts
        .iter()
        .flatten()
        .any(|a| a.artifact_path == path)
        || info
            .software_images
            .iter()
            .flatten()
            .any(|i| i.image_path == path);
    if !listed {
        return Err(ApiError::NotFound(format!(
            "VNF package {id} has no artifact {}: see additionalArtifacts and softwareImages of the package",
            crate::util::cut(&path, 200)
        )));
    }
    let limits = state.options.package_limits.archive.clone();
    let spool = state.packages.spool().clone();
    // Extracted to an unnamed temporary file (gone when closed), then streamed: an image
    // artifact is never held in memory.
    let file = tokio::task::spawn_blocking(move || -> ApiResult<std::fs::File> {
        let package = open_content(&content, &limits).map_err(|e| {
            ApiError::Internal(format!("stored package {id} cannot be opened: {e}"))
        })?;
        let mut out = spool.scratch()?;
        package.copy_to(&path, &mut out).map_err(|e| {
            ApiError::NotFound(format!("the artifact is not in the package content: {e}"))
        })?;
        std::io::Seek::rewind(&mut out)
            .map_err(|e| ApiError::Internal(format!("reading the artifact failed: {e}")))?;
        Ok(out)
    })
    .await
    .map_err(|e| ApiError::Internal(format!("reading the artifact failed: {e}")))??;
    ranged_stream(
        &headers,
        tokio::fs::File::from_std(file),
        "application/octet-stream",
    )
    .await
}

pub(super) async fn vnfd(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let (_, content) = state.packages.content(&id).await?;
    let limits = state.options.package_limits.archive.clone();
    let package = tokio::task::spawn_blocking(move || open_content(&content, &limits))
        .await
        .map_err(|e| ApiError::Internal(format!("reading the VNFD failed: {e}")))?
        .map_err(|e| ApiError::Internal(format!("stored package cannot be opened: {e}")))?;
    // The VNFD files: TOSCA.meta and every YAML file under the entry definitions' directory.
    let entry = package.entry_definitions().to_owned();
    let dir = entry
        .rsplit_once('/')
        .map(|(d, _)| format!("{d}/"))
        .unwrap_or_default();
    let mut files: Vec<String> = package
        .files()
        .filter(|f| {
            (f.starts_with(&dir) && (f.ends_with(".yaml") || f.ends_with(".yml")))
                || *f == "TOSCA-Metadata/TOSCA.meta"
        })
        .map(str::to_owned)
        .collect();
    files.sort();
    let yaml_files: Vec<&String> = files
        .iter()
        .filter(|f| !f.starts_with("TOSCA-Metadata/"))
        .collect();
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("*/*");
    let wants_zip = accept.contains("application/zip");
    let wants_text = accept.contains("text/plain");
    let single = yaml_files.len() == 1;
    if single && (wants_text || !wants_zip) {
        let text = package
            .read(&entry)
            .map_err(|e| ApiError::Internal(e.to_string()))?;
        let mut r = (StatusCode::OK, text).into_response();
        r.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        return Ok(r);
    }
    if !wants_zip && wants_text {
        return Err(ApiError::NotAcceptable(
            "the VNFD consists of several files: request it with Accept: application/zip".into(),
        ));
    }
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for f in &files {
        let bytes = package
            .read(f)
            .map_err(|e| ApiError::Internal(e.to_string()))?;
        zip.start_file(f.as_str(), options)
            .and_then(|_| zip.write_all(&bytes).map_err(Into::into))
            .map_err(|e| ApiError::Internal(format!("building the VNFD zip failed: {e}")))?;
    }
    let bytes = zip
        .finish()
        .map_err(|e| ApiError::Internal(format!("building the VNFD zip failed: {e}")))?
        .into_inner();
    let mut r = (StatusCode::OK, bytes).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/zip"),
    );
    Ok(r)
}
