//! API versions (SOL013 clause 9): the `api_versions` resources and the `Version` header.
//!
//! Requests to a v2 API must carry `Version` (SOL013 v3: the header is mandatory; 400 when it
//! is missing). The v1 APIs (SOL003 v2.6.1) accept a request without the header. A `Version`
//! the API does not offer (another major version, a newer minor or patch version than the one
//! served, or anything but `MAJOR.MINOR.PATCH`) is refused with 406 naming the versions served.
//! Every response of a versioned API carries the `Version` it was served with, and so does
//! the answer of an API's `api_versions` resource (`GET /vnflcm/api_versions`: the newest
//! version it lists, as Tacker answers). `api_versions` resources need no header.

use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use utoipa_axum::router::OpenApiRouter;
use vnfm_types::links::{ApiVersion, Interface};

use crate::error::ApiError;
use crate::util::json_response;

/// The `Version` header.
pub static VERSION: HeaderName = HeaderName::from_static("version");

/// One versioned API of the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
    /// `/vnffm/v1` (VNF fault management; API version 1.3.0 of SOL003 v3.3.1, which Tacker
    /// serves and its clients ask for, and which serves the 1.2.0 clients of SOL003 v2.6.1).
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
            ApiFamily::FmV1 => "1.3.0",
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

    /// The interface and major version the `_links` of the documents served here point into
    /// (`None` for the VIM registry, which is not an ETSI interface).
    pub fn links(self) -> Option<(Interface, ApiVersion)> {
        let interface = match self {
            ApiFamily::LcmV2 | ApiFamily::LcmV1 => Interface::Lifecycle,
            ApiFamily::PkgmV2 | ApiFamily::PkgmV1 => Interface::Packages,
            ApiFamily::FmV1 => Interface::Faults,
            ApiFamily::PmV2 | ApiFamily::PmV1 => Interface::Performance,
            ApiFamily::IndV1 => Interface::Indicators,
            ApiFamily::VimV1 => return None,
        };
        let version = match self {
            ApiFamily::LcmV2 | ApiFamily::PkgmV2 | ApiFamily::PmV2 => ApiVersion::V2,
            _ => ApiVersion::V1,
        };
        Some((interface, version))
    }

    /// Whether requests must carry a `Version` header.
    pub fn requires_version_header(self) -> bool {
        matches!(self, ApiFamily::LcmV2 | ApiFamily::PkgmV2 | ApiFamily::PmV2)
    }

    /// Whether the API serves a request for API version `requested`: the same major version,
    /// and a minor and patch version no newer than the one served (SOL013 clause 9.1: minor and
    /// patch versions only add to a major version, so a 2.1.0 API serves a 2.0.0 client, but a
    /// 2.0.0 API cannot serve what a 2.9.9 client expects).
    fn offers(self, requested: (u32, u32, u32)) -> bool {
        let served = parse_version(self.version()).unwrap_or((0, 0, 0));
        requested.0 == served.0 && (requested.1, requested.2) <= (served.1, served.2)
    }

    /// The versions a request may ask for, in words (for the refusal).
    fn offered(self) -> String {
        let version = self.version();
        if version.ends_with(".0.0") {
            version.to_owned()
        } else {
            let major = version.split('.').next().unwrap_or_default();
            format!("{version}, and the earlier {major}.x.y versions")
        }
    }

    /// Checks the request's `Version` header: missing on a v2 API is 400; a value that is not
    /// an API version this API offers (another major version, a newer minor or patch version,
    /// or anything but `MAJOR.MINOR.PATCH` of at most [`MAX_VERSION_LEN`] characters) is 406
    /// naming the versions served (SOL013 clause 4.9).
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
                let text = v.to_str().unwrap_or("(not visible ASCII)").trim();
                match parse_version(text) {
                    Some(requested) if self.offers(requested) => Ok(()),
                    _ => Err(ApiError::NotAcceptable(format!(
                        "the Version header asks for API version {}, which {} does not offer: it serves {} (send `Version: {}`; GET {}/api_versions lists the versions)",
                        crate::util::cut(text, 40),
                        self.prefix(),
                        self.offered(),
                        self.version(),
                        self.prefix(),
                    ))),
                }
            }
        }
    }
}

/// The longest `Version` value read; a longer one is refused without being parsed.
pub const MAX_VERSION_LEN: usize = 32;

/// `MAJOR.MINOR.PATCH` (SOL013 clause 9.1), each a number of at most 9 digits.
fn parse_version(text: &str) -> Option<(u32, u32, u32)> {
    if text.len() > MAX_VERSION_LEN {
        return None;
    }
    let mut parts = text.split('.').map(|p| {
        if !p.is_empty() && p.len() <= 9 && p.bytes().all(|b| b.is_ascii_digit()) {
            p.parse::<u32>().ok()
        } else {
            None
        }
    });
    let version = (parts.next()??, parts.next()??, parts.next()??);
    parts.next().is_none().then_some(version)
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

/// `routes` served as API version `family`: the `Version` header is checked and set
/// ([`versioned`]), and documented where the family requires it; the routes are declared to
/// belong to `family` (`crate::route_facts`).
pub(crate) fn versioned_routes<S>(family: ApiFamily, routes: OpenApiRouter<S>) -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
{
    let routes = routes.layer(axum::middleware::from_fn(move |req, next| {
        versioned(family, req, next)
    }));
    let routes = crate::route_table::in_family(routes, family);
    if family.requires_version_header() {
        crate::route_table::document_version_header(routes)
    } else {
        routes
    }
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

/// The `ApiVersionInformation` of `families` (oldest first) under `uri_prefix`, with the
/// `Version` header of the newest of them.
fn versions_answer(families: &[ApiFamily], uri_prefix: &str) -> Response {
    let mut response = json_response(
        axum::http::StatusCode::OK,
        &api_version_information(families, uri_prefix),
    );
    if let Some(newest) = families.last() {
        response
            .headers_mut()
            .insert(VERSION.clone(), HeaderValue::from_static(newest.version()));
    }
    response
}

/// `GET /vnflcm/api_versions`: every major version served.
pub async fn lcm_api_versions() -> Response {
    versions_answer(&[ApiFamily::LcmV1, ApiFamily::LcmV2], "/vnflcm")
}

/// `GET /vnfpkgm/api_versions`.
pub async fn pkgm_api_versions() -> Response {
    versions_answer(&[ApiFamily::PkgmV1, ApiFamily::PkgmV2], "/vnfpkgm")
}

/// `GET /vnffm/api_versions`.
pub async fn fm_api_versions() -> Response {
    versions_answer(&[ApiFamily::FmV1], "/vnffm")
}

/// `GET /vnfind/api_versions`.
pub async fn ind_api_versions() -> Response {
    versions_answer(&[ApiFamily::IndV1], "/vnfind")
}

/// `GET /vnfpm/api_versions`.
pub async fn pm_api_versions() -> Response {
    versions_answer(&[ApiFamily::PmV1, ApiFamily::PmV2], "/vnfpm")
}

/// The `GET /api_versions` route of `family` (its major version's versions), documented with
/// `summary`.
pub(crate) fn api_versions_route<S>(
    family: ApiFamily,
    summary: &'static str,
) -> utoipa_axum::router::UtoipaMethodRouter<S>
where
    S: Clone + Send + Sync + 'static,
{
    use crate::route_table::{Scope, doc, get, route};
    route(
        "/api_versions",
        Scope::Unnamed,
        [get(
            move || async move { major_versions(family) },
            doc(summary).returns("ApiVersionInformation"),
        )],
    )
}

/// `GET <prefix>/api_versions` of one major version.
pub fn major_versions(family: ApiFamily) -> Response {
    versions_answer(&[family], family.prefix())
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
    fn fault_management_serves_tackers_version_1_3_0_and_the_earlier_1_2_0() {
        let fm = ApiFamily::FmV1;
        for served in ["1.3.0", "1.2.0"] {
            assert!(
                fm.check(&request("/vnffm/v1/alarms", Some(served))).is_ok(),
                "{served}"
            );
        }
        assert!(
            fm.check(&request("/vnffm/v1/alarms", Some("1.4.0")))
                .is_err()
        );
    }

    #[test]
    fn v2_requires_a_supported_version() {
        let f = ApiFamily::LcmV2;
        let e = f
            .check(&request("/vnflcm/v2/vnf_instances", None))
            .unwrap_err();
        assert_eq!(e.pointer(), Some("Version"));
        assert_eq!(e.status(), axum::http::StatusCode::BAD_REQUEST);
        assert!(
            f.check(&request("/vnflcm/v2/vnf_instances", Some("2.0.0")))
                .is_ok()
        );
        let long = format!("2.{}", "9".repeat(5000));
        for refused in [
            "2.9.9", "2.1.0", "2.1", "2", "2.", "1.3.0", "2.x", "2.0.0.0", "02.0.0x", &long,
        ] {
            let e = f
                .check(&request("/vnflcm/v2/vnf_instances", Some(refused)))
                .unwrap_err();
            assert_eq!(
                e.status(),
                axum::http::StatusCode::NOT_ACCEPTABLE,
                "{refused}"
            );
            let detail = e.to_string();
            assert!(detail.contains("it serves 2.0.0"), "{detail}");
            assert!(detail.len() < 400, "{detail}");
        }
        assert!(f.check(&request("/vnflcm/v2/api_versions", None)).is_ok());
        // A newer minor version serves the older ones of its major version.
        let pkgm = ApiFamily::PkgmV2;
        for offered in ["2.0.0", "2.1.0", "2.0.7"] {
            assert!(
                pkgm.check(&request("/vnfpkgm/v2/vnf_packages", Some(offered)))
                    .is_ok(),
                "{offered}"
            );
        }
        assert!(
            pkgm.check(&request("/vnfpkgm/v2/vnf_packages", Some("2.1.1")))
                .is_err()
        );
        let v1 = ApiFamily::LcmV1;
        assert!(v1.check(&request("/vnflcm/v1/vnf_instances", None)).is_ok());
        assert!(
            v1.check(&request("/vnflcm/v1/vnf_instances", Some("1.2.0")))
                .is_ok()
        );
        assert!(
            v1.check(&request("/vnflcm/v1/vnf_instances", Some("2.0.0")))
                .is_err()
        );
    }
}
