//! VNF package management (`/vnfpkgm/v2`, `/vnfpkgm/v1`; SOL003 clause 10, SOL005 clause 9
//! style): package resources, content upload (zip body or an allow-listed URI), onboarding
//! through the package layer's validation, the VNFD, the content and artifacts (with
//! `Range`), and the operational state.
//!
//! Onboarding states: `CREATED` -> (`PUT package_content`) `PROCESSING` -> `ONBOARDED` (the
//! package is then `ENABLED`) or `ERROR` with `onboardingFailureDetails` listing the error
//! diagnostics (code, file:line, help). The content is stored before `202 Accepted` is
//! answered, so a package whose onboarding was interrupted by a crash is onboarded again at
//! the next start. Content never passes through memory whole: uploads are streamed to disk,
//! stored in pieces, and read entry by entry from a local copy (`vnfm::lcm::spool`). The usage
//! state is computed: `IN_USE` while a VNF instance has the package's `vnfdId`.
//!
//! The package records, onboarding and lookup are the composition root's
//! ([`vnfm::lcm::Packages`], which embedders get from the builder too); this module is their
//! HTTP face.
//!
//! The module is split by concern:
//! - this file: the routes;
//! - `upload`: the upload body streamed to the package directory;
//! - `handlers`: the HTTP handlers of the package resources;
//! - `download`: the content, VNFD and artifact downloads (with `Range`).

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::routing::{get, post};

use crate::state::AppState;
use crate::version::{ApiFamily, major_versions, versioned};

mod download;
mod handlers;
mod upload;

use download::{artifact, package_content, vnfd};
use handlers::{
    create, delete, list, modify, onboarded_artifact, onboarded_content, onboarded_show,
    onboarded_vnfd, show, upload, upload_from_uri,
};

pub use vnfm::lcm::{PackageLimits, Packages};

// ----- HTTP -----

pub(crate) fn routes(family: ApiFamily, max_package_bytes: usize) -> Router<Arc<AppState>> {
    Router::new()
        .route(
            "/api_versions",
            get(move || async move { major_versions(family) }),
        )
        .route(
            "/vnf_packages",
            get(move |s, t, u, h| list(family, false, s, t, u, h))
                .post(move |s, t, h, b| create(family, s, t, h, b)),
        )
        .route(
            "/vnf_packages/{id}",
            get(move |s, p, u, h| show(family, s, p, u, h))
                .patch(modify)
                .delete(delete),
        )
        .route(
            "/vnf_packages/{id}/package_content",
            get(package_content)
                .put(upload)
                .layer(DefaultBodyLimit::max(max_package_bytes)),
        )
        .route(
            "/vnf_packages/{id}/package_content/upload_from_uri",
            post(upload_from_uri),
        )
        .route("/vnf_packages/{id}/vnfd", get(vnfd))
        .route("/vnf_packages/{id}/artifacts/{*path}", get(artifact))
        // SOL003 v2.6.1 clause 10.4.2a-10.4.5a: the same resources addressed by vnfdId.
        .route(
            "/onboarded_vnf_packages",
            get(move |s, t, u, h| list(family, true, s, t, u, h)),
        )
        .route(
            "/onboarded_vnf_packages/{vnfd_id}",
            get(move |s, p, u, h| onboarded_show(family, s, p, u, h)),
        )
        .route(
            "/onboarded_vnf_packages/{vnfd_id}/package_content",
            get(onboarded_content),
        )
        .route(
            "/onboarded_vnf_packages/{vnfd_id}/vnfd",
            get(onboarded_vnfd),
        )
        .route(
            "/onboarded_vnf_packages/{vnfd_id}/artifacts/{*path}",
            get(onboarded_artifact),
        )
        .merge(crate::subscriptions::routes::<crate::subscriptions::Pkgm>(
            family,
        ))
        .layer(middleware::from_fn(move |req, next| {
            versioned(family, req, next)
        }))
}
