//! The HTTP handlers of the package resources: list, create, show, modify and delete, the
//! content upload, and the SOL003 `onboarded_vnf_packages` resources addressed by `vnfdId`.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{OriginalUri, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use vnfm_store::Page;
use vnfm_types::links::ApiVersion;
use vnfm_types::{
    CreateVnfPkgInfoRequest, PackageOnboardingState, UploadVnfPackageFromUriRequest, VnfPkgInfo,
    VnfPkgInfoModifications,
};

use crate::error::{ApiError, ApiResult};
use crate::listing::ListRequest;
use crate::state::AppState;
use crate::util::{json_body, json_response, merge_patch_body, require_accept};
use crate::version::ApiFamily;

use super::Packages;
use super::download::{artifact, package_content, vnfd};

/// `info` as `family` shows it: in the v2.6.1 shape under `/vnfpkgm/v1`, its `_links`
/// rendered into the version read.
fn view(packages: &Packages, family: ApiFamily, info: &VnfPkgInfo) -> ApiResult<Value> {
    let mut info = info.clone();
    if family == ApiFamily::PkgmV1 {
        let onboarded = info.onboarding_state == PackageOnboardingState::Onboarded;
        info.links = packages.links(info.id.as_str(), onboarded, ApiVersion::V1);
    }
    let shaped = if family == ApiFamily::PkgmV1 {
        info.to_v1()
    } else {
        info
    };
    serde_json::to_value(shaped)
        .map_err(|e| ApiError::Internal(format!("package does not serialize: {e}")))
}

fn schema() -> &'static Value {
    static S: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    S.get_or_init(|| serde_json::to_value(schemars::schema_for!(VnfPkgInfo)).unwrap_or_default())
}

pub(super) async fn list(
    family: ApiFamily,
    onboarded_only: bool,
    State(state): State<Arc<AppState>>,
    tenancy: crate::scope::Tenancy,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/json"])?;
    let list = ListRequest::parse(&uri, schema())?.paged(
        state
            .options
            .page_sizes
            .of(crate::listing::Listed::VnfPackages),
    );
    let limit = list.page_size();
    let excluded = if family == ApiFamily::PkgmV1 {
        vnfm_sol013::defaults::vnfpkgm::V1_VNF_PKG_INFO_EXCLUDED
    } else {
        vnfm_sol013::defaults::vnfpkgm::V2_VNF_PKG_INFO_EXCLUDED
    };
    list.run(
        |after| {
            let state = state.clone();
            let scope = tenancy.scope.clone();
            async move {
                let page = state
                    .store
                    .list_packages(&scope, after.as_deref(), limit)
                    .await?;
                let mut items = Vec::with_capacity(page.items.len());
                for record in &page.items {
                    let info = state.packages.described(record).await?;
                    if onboarded_only && info.onboarding_state != PackageOnboardingState::Onboarded
                    {
                        continue;
                    }
                    items.push(view(&state.packages, family, &info)?);
                }
                Ok(Page {
                    items,
                    next: page.next,
                })
            }
        },
        excluded,
    )
    .await
}

/// `201 Created` with the new package (committing the request's `Idempotency-Key` with it)
/// and its `Location`; a replay ([`crate::idempotency::Retry::Replay`]) answers the same from
/// the package it names.
pub(super) async fn create(
    family: ApiFamily,
    State(state): State<Arc<AppState>>,
    tenancy: crate::scope::Tenancy,
    retry: crate::idempotency::RetryKey,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/json"])?;
    let req: CreateVnfPkgInfoRequest = if body.is_empty() {
        CreateVnfPkgInfoRequest::default()
    } else {
        json_body(&headers, &body, None)?
    };
    let collection = format!("{}{}/vnf_packages", state.origin(&headers), family.prefix());
    let info = match retry.replay() {
        Some(id) => state.packages.get(id).await?.0,
        None => {
            state
                .packages
                .create_with_key(req, tenancy.project, retry.key())
                .await?
        }
    };
    Ok(crate::idempotency::creation_answer(
        &collection,
        &info.id,
        &view(&state.packages, family, &info)?,
    ))
}

pub(super) async fn show(
    family: ApiFamily,
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/json"])?;
    let list = ListRequest::parse(&uri, schema())?;
    let (info, version) = state.packages.get(&id).await?;
    let mut doc = view(&state.packages, family, &info)?;
    list.select(&mut doc);
    Ok(crate::precondition::with_etag(
        json_response(StatusCode::OK, &doc),
        version,
    ))
}

pub(super) async fn modify(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    let mods: VnfPkgInfoModifications = merge_patch_body(&headers, &body, None)?;
    if mods.operational_state.is_none() && mods.user_defined_data.is_none() {
        return Err(ApiError::bad_request(
            "the patch changes nothing: give operationalState and/or userDefinedData",
        ));
    }
    state.packages.modify(&id, &mods).await?;
    Ok(json_response(StatusCode::OK, &mods))
}

pub(super) async fn delete(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    state.packages.delete(&id).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `PUT package_content`: the body is streamed to a temporary file (constant memory, the
/// digest computed and the size limit enforced while reading; see `vnfm::lcm::spool`). A package
/// that cannot take content is refused before the body is read.
pub(super) async fn upload(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> ApiResult<Response> {
    crate::util::require_content_type(&headers, &["application/zip", "application/octet-stream"])?;
    let (info, _) = state.packages.get(&id).await?;
    Packages::check_uploadable(&id, &info)?;
    let content = super::upload::spool_body(&state, body).await?;
    state.packages.accept_content(&id, content).await?;
    Ok(StatusCode::ACCEPTED.into_response())
}

pub(super) async fn upload_from_uri(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    let req: UploadVnfPackageFromUriRequest = json_body(&headers, &body, None)?;
    state.packages.upload_from_uri(&id, req).await?;
    Ok(StatusCode::ACCEPTED.into_response())
}

/// The id of the package whose VNFD has `vnfd_id` (404 when none has been onboarded).
async fn package_of(state: &AppState, vnfd_id: &str) -> ApiResult<String> {
    state.packages.package_id_for(vnfd_id).await.ok_or_else(|| {
        ApiError::NotFound(format!(
            "no onboarded VNF package has vnfdId {}",
            crate::util::cut(vnfd_id, 100)
        ))
    })
}

pub(super) async fn onboarded_show(
    family: ApiFamily,
    State(state): State<Arc<AppState>>,
    Path(vnfd_id): Path<String>,
    uri: OriginalUri,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let id = package_of(&state, &vnfd_id).await?;
    show(family, State(state), Path(id), uri, headers).await
}

pub(super) async fn onboarded_content(
    State(state): State<Arc<AppState>>,
    Path(vnfd_id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let id = package_of(&state, &vnfd_id).await?;
    package_content(State(state), Path(id), headers).await
}

pub(super) async fn onboarded_vnfd(
    State(state): State<Arc<AppState>>,
    Path(vnfd_id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let id = package_of(&state, &vnfd_id).await?;
    vnfd(State(state), Path(id), headers).await
}

pub(super) async fn onboarded_artifact(
    State(state): State<Arc<AppState>>,
    Path((vnfd_id, path)): Path<(String, String)>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let id = package_of(&state, &vnfd_id).await?;
    artifact(State(state), Path((id, path)), headers).await
}
