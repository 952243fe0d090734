//! API versions (SOL013 clause 9): the `api_versions` resources and the `Version` header.
//!
//! Requests to a v2 API must carry `Version: 2.x.y` (SOL013 v3: the header is mandatory); a
//! missing or unsupported version is a 400. The v1 APIs (SOL003 v2.6.1) accept a request
//! without the header, and refuse a version they do not serve. Every response of a versioned
//! API carries the `Version` it was served with. `api_versions` resources need no header.

use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::error::ApiError;
use crate::util::json_response;

/// The `Version` header.
pub static VERSION: HeaderName = HeaderName::from_static("version");

/// One versioned API of the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiFamily {
    /// `/vnflcm/v2` (SOL003 v3.3.1).
    LcmV2,
    /// `/vnflcm/v1` (SOL003 v2.6.1).
    LcmV1,
    /// `/vnfpkgm/v2`.
    PkgmV2,
    /// `/vnfpkgm/v1`.
    PkgmV1,
    /// `/vnfm/v1` (VIM registry, not an ETSI API).
    VimV1,
    /// `/vnffm/v1` (VNF fault management, SOL003 v2.6.1).
    FmV1,
    /// `/vnfpm/v2` (VNF performance management, SOL003 v3.3.1).
    PmV2,
    /// `/vnfpm/v1` (VNF performance management, SOL003 v2.6.1).
    PmV1,
    /// `/vnfind/v1` (VNF indicators, SOL003 v2.6.1).
    IndV1,
}

impl ApiFamily {
    /// The full API version served.
    pub fn version(self) -> &'static str {
        match self {
            ApiFamily::LcmV2 => "2.0.0",
            ApiFamily::LcmV1 => "1.3.0",
            ApiFamily::PkgmV2 => "2.1.0",
            ApiFamily::PkgmV1 => "2.0.0",
            ApiFamily::VimV1 => "1.0.0",
            ApiFamily::FmV1 => "1.2.0",
            ApiFamily::PmV2 => "2.1.0",
            ApiFamily::PmV1 => "1.2.0",
            ApiFamily::IndV1 => "1.2.0",
        }
    }

    /// The URI prefix.
    pub fn prefix(self) -> &'static str {
        match self {
            ApiFamily::LcmV2 => "/vnflcm/v2",
            ApiFamily::LcmV1 => "/vnflcm/v1",
            ApiFamily::PkgmV2 => "/vnfpkgm/v2",
            ApiFamily::PkgmV1 => "/vnfpkgm/v1",
            ApiFamily::VimV1 => "/vnfm/v1",
            ApiFamily::FmV1 => "/vnffm/v1",
            ApiFamily::PmV2 => "/vnfpm/v2",
            ApiFamily::PmV1 => "/vnfpm/v1",
            ApiFamily::IndV1 => "/vnfind/v1",
        }
    }

    fn major(self) -> &'static str {
        self.version().split('.').next().unwrap_or("1")
    }

    /// Whether requests must carry a `Version` header.
    pub fn requires_version_header(self) -> bool {
        matches!(self, ApiFamily::LcmV2 | ApiFamily::PkgmV2 | ApiFamily::PmV2)
    }

    /// Checks the request's `Version` header.
    pub fn check(self, request: &Request) -> Result<(), ApiError> {
        if self == ApiFamily::VimV1 {
            // Not an ETSI API: clients that send one Version header everywhere are served.
            return Ok(());
        }
        let is_versions_resource = request.uri().path().ends_with("/api_versions");
        match request.headers().get(&VERSION) {
            None if self.requires_version_header() && !is_versions_resource => {
                Err(ApiError::invalid(
                    "Version",
                    format!(
                        "the Version header is missing: send `Version: {}` (SOL013 clause 4.9)",
                        self.version()
                    ),
                ))
            }
            None => Ok(()),
            Some(v) => {
                let text = v.to_str().unwrap_or("").trim();
                let mut parts = text.split('.');
                let major = parts.next().unwrap_or("");
                let well_formed = !text.is_empty()
                    && text.split('.').count() <= 3
                    && text
                        .split('.')
                        .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
                if well_formed && major == self.major() {
                    Ok(())
                } else {
                    Err(ApiError::invalid(
                        "Version",
                        format!(
                            "API version {} is not supported by {}: this server speaks {}",
                            crate::util::cut(text, 40),
                            self.prefix(),
                            self.version()
                        ),
                    ))
                }
            }
        }
    }
}

/// Middleware: checks the `Version` header of the request and sets it on the response.
pub async fn versioned(family: ApiFamily, request: Request, next: Next) -> Response {
    if let Err(e) = family.check(&request) {
        let mut response = e.into_response();
        response
            .headers_mut()
            .insert(VERSION.clone(), HeaderValue::from_static(family.version()));
        return response;
    }
    let mut response = next.run(request).await;
    response
        .headers_mut()
        .insert(VERSION.clone(), HeaderValue::from_static(family.version()));
    response
}

/// `ApiVersionInformation` of one API.
pub fn api_version_information(families: &[ApiFamily], uri_prefix: &str) -> serde_json::Value {
    json!({
        "uriPrefix": uri_prefix,
        "apiVersions": families
            .iter()
            .map(|f| json!({"version": f.version(), "isDeprecated": false}))
            .collect::<Vec<_>>()
    })
}

/// `GET /vnflcm/api_versions`: every major version served.
pub async fn lcm_api_versions() -> Response {
    json_response(
        axum::http::StatusCode::OK,
        &api_version_information(&[ApiFamily::LcmV1, ApiFamily::LcmV2], "/vnflcm"),
    )
}

/// `GET /vnfpkgm/api_versions`.
pub async fn pkgm_api_versions() -> Response {
    json_response(
        axum::http::StatusCode::OK,
        &api_version_information(&[ApiFamily::PkgmV1, ApiFamily::PkgmV2], "/vnfpkgm"),
    )
}

/// `GET /vnffm/api_versions`.
pub async fn fm_api_versions() -> Response {
    json_response(
        axum::http::StatusCode::OK,
        &api_version_information(&[ApiFamily::FmV1], "/vnffm"),
    )
}

/// `GET /vnfind/api_versions`.
pub async fn ind_api_versions() -> Response {
    json_response(
        axum::http::StatusCode::OK,
        &api_version_information(&[ApiFamily::IndV1], "/vnfind"),
    )
}

/// `GET /vnfpm/api_versions`.
pub async fn pm_api_versions() -> Response {
    json_response(
        axum::http::StatusCode::OK,
        &api_version_information(&[ApiFamily::PmV1, ApiFamily::PmV2], "/vnfpm"),
    )
}

/// `GET <prefix>/api_versions` of one major version.
pub fn major_versions(family: ApiFamily) -> Response {
    json_response(
        axum::http::StatusCode::OK,
        &api_version_information(&[family], family.prefix()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;

    fn request(path: &str, version: Option<&str>) -> Request {
        let mut b = axum::http::Request::builder().uri(path);
        if let Some(v) = version {
            b = b.header("Version", v);
        }
        b.body(Body::empty()).unwrap()
    }

    #[test]
    fn v2_requires_a_supported_version() {
        let f = ApiFamily::LcmV2;
        let e = f
            .check(&request("/vnflcm/v2/vnf_instances", None))
            .unwrap_err();
        assert_eq!(e.pointer(), Some("Version"));
        assert!(
            f.check(&request("/vnflcm/v2/vnf_instances", Some("2.0.0")))
                .is_ok()
        );
        assert!(
            f.check(&request("/vnflcm/v2/vnf_instances", Some("2.1")))
                .is_ok()
        );
        assert!(
            f.check(&request("/vnflcm/v2/vnf_instances", Some("1.3.0")))
                .is_err()
        );
        assert!(
            f.check(&request("/vnflcm/v2/vnf_instances", Some("2.x")))
                .is_err()
        );
        assert!(f.check(&request("/vnflcm/v2/api_versions", None)).is_ok());
        let v1 = ApiFamily::LcmV1;
        assert!(v1.check(&request("/vnflcm/v1/vnf_instances", None)).is_ok());
        assert!(
            v1.check(&request("/vnflcm/v1/vnf_instances", Some("2.0.0")))
                .is_err()
        );
    }
}
