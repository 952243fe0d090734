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

use axum::extract::DefaultBodyLimit;

use crate::route_table::{self, Scope, doc, get, patch, post, put, route};
use crate::state::AppState;
use crate::version::{ApiFamily, api_versions_route, versioned_routes};
use utoipa_axum::router::OpenApiRouter;

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

pub(crate) fn routes(family: ApiFamily, max_package_bytes: usize) -> OpenApiRouter<Arc<AppState>> {
    let routes = OpenApiRouter::new()
        .routes(api_versions_route(
            family,
            "API versions of VNF package management of this major version",
        ))
        .routes(route(
            "/vnf_packages",
            Scope::Unnamed,
            [
                get(
                    move |s, t, u, h| list(family, false, s, t, u, h),
                    doc("List VNF packages").returns("[VnfPkgInfo]"),
                ),
                post(
                    move |s, t, r, h, b| create(family, s, t, r, h, b),
                    doc("Create a VNF package resource")
                        .body("CreateVnfPkgInfoRequest")
                        .status(201)
                        .returns("VnfPkgInfo"),
                )
                .creation(),
            ],
        ))
        .routes(route(
            "/vnf_packages/{vnfPkgId}",
            Scope::PACKAGE,
            [
                get(
                    move |s, p, u, h| show(family, s, p, u, h),
                    doc("Read a VNF package").returns("VnfPkgInfo"),
                ),
                patch(
                    modify,
                    doc("Enable/disable a package, change user data")
                        .body("VnfPkgInfoModifications")
                        .returns("VnfPkgInfoModifications"),
                ),
                route_table::delete(delete, doc("Delete a DISABLED, unused package").status(204)),
            ],
        ))
        .routes(route(
            "/vnf_packages/{vnfPkgId}/package_content",
            Scope::PACKAGE,
            [
                get(package_content, doc("Download the CSAR (Range supported)")),
                put(
                    upload,
                    doc("Upload the CSAR (application/zip); onboarding runs asynchronously")
                        .status(202),
                )
                .package_upload()
                .map(|r| r.layer(DefaultBodyLimit::max(max_package_bytes))),
            ],
        ))
        .routes(route(
            "/vnf_packages/{vnfPkgId}/package_content/upload_from_uri",
            Scope::PACKAGE,
            [post(
                upload_from_uri,
                doc("Upload from an allow-listed URI")
                    .body("UploadVnfPackageFromUriRequest")
                    .status(202),
            )],
        ))
        .routes(route(
            "/vnf_packages/{vnfPkgId}/vnfd",
            Scope::PACKAGE,
            [get(
                vnfd,
                doc("The VNFD (text/plain single file, or application/zip)"),
            )],
        ))
        .routes(route(
            "/vnf_packages/{vnfPkgId}/artifacts/{*artifactPath}",
            Scope::PACKAGE,
            [get(artifact, doc("One artifact (Range supported)"))],
        ))
        // SOL003 v2.6.1 clause 10.4.2a-10.4.5a: the same resources addressed by vnfdId.
        .routes(route(
            "/onboarded_vnf_packages",
            Scope::Unnamed,
            [get(
                move |s, t, u, h| list(family, true, s, t, u, h),
                doc("List the ONBOARDED VNF packages").returns("[VnfPkgInfo]"),
            )],
        ))
        .routes(route(
            "/onboarded_vnf_packages/{vnfdId}",
            Scope::PACKAGE_BY_VNFD,
            [get(
                move |s, p, u, h| onboarded_show(family, s, p, u, h),
                doc("Read the VNF package of a vnfdId").returns("VnfPkgInfo"),
            )],
        ))
        .routes(route(
            "/onboarded_vnf_packages/{vnfdId}/package_content",
            Scope::PACKAGE_BY_VNFD,
            [get(
                onboarded_content,
                doc("Download the CSAR of a vnfdId (Range supported)"),
            )],
        ))
        .routes(route(
            "/onboarded_vnf_packages/{vnfdId}/vnfd",
            Scope::PACKAGE_BY_VNFD,
            [get(
                onboarded_vnfd,
                doc("The VNFD of a vnfdId (text/plain single file, or application/zip)"),
            )],
        ))
        .routes(route(
            "/onboarded_vnf_packages/{vnfdId}/artifacts/{*artifactPath}",
            Scope::PACKAGE_BY_VNFD,
            [get(
                onboarded_artifact,
                doc("One artifact of the package of a vnfdId (Range supported)"),
            )],
        ))
        .merge(crate::subscriptions::routes::<crate::subscriptions::Pkgm>(
            family,
        ));
    versioned_routes(family, routes)
}
