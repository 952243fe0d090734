//! `/vnfm/v1/vims`: the VIM registry (not an ETSI API; close to Tacker's v1 VIM API in
//! spirit). A VIM is registered with its `vimConnectionInfo` members; its secrets are sealed
//! with the server's Fernet keyring and never returned (secret members read `"***"`).
//!
//! A VIM belongs to the project of the caller that registered it (`project` in its view), as
//! instances do ([`crate::scope`]): a caller limited to one project sees and changes only its
//! project's VIMs (another's answers `404`, as a missing one), and `extra.isDefault` marks the
//! default VIM of that project.
//!
//! A VIM can be shared with every project (`"shared": true`, set by callers that see every
//! project only, as Tacker's `shared` VIMs): callers of other projects then list and read it
//! without its `accessInfo` and name it by `vimId` in their requests, but changing or deleting
//! it answers `403`; it stays the default VIM of its own project only.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use vnfm_lcm::vim::{VimUpdate, VimView};
use vnfm_store::{ProjectScope, Version};
use vnfm_types::{VimConnectionInfo, VimId};

use crate::error::{ApiError, ApiResult};
use crate::idempotency::RetryKey;
use crate::route_table::{self, Scope, doc, get, patch, post, route};
use crate::scope::Tenancy;
use crate::state::AppState;
use crate::util::{
    json_body, json_response, merge_patch_body, require_accept, value_as, with_location,
};
use crate::version::{ApiFamily, versioned_routes};
use utoipa_axum::router::OpenApiRouter;

const FAMILY: ApiFamily = ApiFamily::VimV1;

pub(crate) fn routes() -> OpenApiRouter<Arc<AppState>> {
    let routes = OpenApiRouter::new()
        .routes(route(
            "/vims",
            Scope::Unnamed,
            [
                get(
                    list,
                    doc("List VIMs (secrets are never returned)").returns("[VimView]"),
                ),
                post(
                    create,
                    doc("Register a VIM")
                        .body("VimCreate")
                        .status(201)
                        .returns("VimView"),
                )
                .creation(),
            ],
        ))
        .routes(route(
            "/vims/{vimId}",
            Scope::Unnamed,
            [
                get(show, doc("Read a VIM").returns("VimView")),
                patch(
                    update,
                    doc("Update a VIM (merge patch, If-Match)")
                        .body("VimUpdate")
                        .returns("VimView"),
                ),
                route_table::delete(delete, doc("Delete an unused VIM").status(204)),
            ],
        ));
    versioned_routes(FAMILY, routes)
}

/// Body of `POST /vnfm/v1/vims`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CreateVim {
    name: String,
    #[serde(default)]
    shared: Option<bool>,
    #[serde(flatten)]
    connection: serde_json::Map<String, serde_json::Value>,
}

fn with_etag(response: Response, version: i64) -> Response {
    crate::precondition::with_etag(response, Version(version))
}

async fn list(
    State(state): State<Arc<AppState>>,
    tenancy: Tenancy,
    headers: HeaderMap,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/json"])?;
    Ok(json_response(
        StatusCode::OK,
        &state.vims.list_in(&tenancy.scope).await?,
    ))
}

/// `201 Created` with the new VIM (committing the request's `Idempotency-Key` with it), its
/// `Location` and `ETag`; a replay ([`crate::idempotency::Retry::Replay`]) answers the same
/// from the VIM it names, as it is now.
async fn create(
    State(state): State<Arc<AppState>>,
    tenancy: Tenancy,
    retry: RetryKey,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/json"])?;
    let req: CreateVim = json_body(&headers, &body, None)?;
    let shared = req.shared.unwrap_or(false);
    if shared {
        may_share(&tenancy, "/shared")?;
    }
    let info: VimConnectionInfo = value_as(serde_json::Value::Object(req.connection))?;
    let view = match retry.replay() {
        Some(id) => state.vims.show_in(&VimId::new(id), &tenancy.scope).await?,
        None => {
            state
                .vims
                .create_in_with_key(
                    &req.name,
                    &info,
                    tenancy.project.as_deref(),
                    shared,
                    retry.key(),
                )
                .await?
        }
    };
    let location = format!(
        "{}{}/vims/{}",
        state.origin(&headers),
        FAMILY.prefix(),
        view.id
    );
    let version = view.version;
    Ok(with_etag(
        with_location(json_response(StatusCode::CREATED, &view), &location),
        version,
    ))
}

async fn show(
    State(state): State<Arc<AppState>>,
    tenancy: Tenancy,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/json"])?;
    let view = state.vims.show_in(&VimId::new(id), &tenancy.scope).await?;
    let version = view.version;
    Ok(with_etag(json_response(StatusCode::OK, &view), version))
}

async fn update(
    State(state): State<Arc<AppState>>,
    tenancy: Tenancy,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    let id = VimId::new(id);
    // Another project's VIM answers 404 before its body is read, as other resources do.
    let current = state.vims.show_in(&id, &tenancy.scope).await?;
    may_change(&tenancy, &current)?;
    let patch: VimUpdate = merge_patch_body(&headers, &body, None)?;
    if patch.shared.is_some() {
        may_share(&tenancy, "/shared")?;
    }
    let expected = crate::precondition::expected_version(&headers, "VIM", || async {
        Ok(Version(current.version))
    })
    .await?;
    let view = state
        .vims
        .update_in(&id, &patch, expected, &tenancy.scope)
        .await?;
    let version = view.version;
    Ok(with_etag(json_response(StatusCode::OK, &view), version))
}

async fn delete(
    State(state): State<Arc<AppState>>,
    tenancy: Tenancy,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let id = VimId::new(id);
    may_change(&tenancy, &state.vims.show_in(&id, &tenancy.scope).await?)?;
    state.vims.delete_in(&id, &tenancy.scope).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// Refuses to share or unshare a VIM (the request member at `pointer`) unless the caller
/// sees every project: sharing exposes a project's VIM to all others, which Tacker leaves to
/// administrators.
pub(crate) fn may_share(tenancy: &Tenancy, pointer: &str) -> Result<(), ApiError> {
    if tenancy.scope == ProjectScope::All {
        return Ok(());
    }
    Err(ApiError::Forbidden(format!(
        "{pointer}: only a caller that sees every project (a Keystone token with an admin \
         role) may share a VIM or stop sharing it"
    )))
}

/// Refuses to change or delete `vim` when the caller reads it only because it is shared by
/// another project.
pub(crate) fn may_change(tenancy: &Tenancy, vim: &VimView) -> Result<(), ApiError> {
    if tenancy.scope.admits(vim.project.as_deref()) {
        return Ok(());
    }
    Err(ApiError::Forbidden(format!(
        "VIM {} is shared by another project: its members and administrators change or \
         delete it, other projects may only read it and name it in their requests",
        vim.id
    )))
}
