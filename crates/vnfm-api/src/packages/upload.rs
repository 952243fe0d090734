//! Content upload: the body streamed to a temporary file of the package directory
//! (`vnfm::lcm::spool`) with the size limit enforced while reading.

use vnfm::lcm::spool::SpooledContent;

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// Streams an upload body to a temporary file of the package directory, enforcing the
/// package size limit while reading (413) and refusing an empty body (400). The file is
/// removed if reading fails or the client goes away.
pub(super) async fn spool_body(
    state: &AppState,
    mut body: axum::body::Body,
) -> ApiResult<SpooledContent> {
    use http_body_util::BodyExt;
    let max = state.options.package_limits.max_package_bytes as u64;
    let mut writer = state.packages.spool().writer(max)?;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| {
            // The route's DefaultBodyLimit cuts a body at the same size as the writer.
            if is_length_limit(&e) {
                return ApiError::PayloadTooLarge(format!(
                    "the package has more than {max} bytes; this server accepts at most {max} (--max-package-mib)"
                ));
            }
            ApiError::bad_request(format!(
                "reading the package content failed after {} bytes: {e}",
                writer.len()
            ))
        })?;
        if let Ok(data) = frame.into_data() {
            writer.push(&data).await?;
        }
    }
    if writer.is_empty() {
        return Err(ApiError::bad_request(
            "the package content is empty: send the CSAR zip as the body",
        ));
    }
    Ok(writer.finish().await?)
}

/// Whether reading a body failed because it passed the route's body limit.
fn is_length_limit(e: &axum::Error) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if c.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        cause = c.source();
    }
    false
}
