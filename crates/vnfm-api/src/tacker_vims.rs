//! `/v1.0/vims`: Tacker's (legacy NFVO) VIM API over the VIM registry, so that
//! `openstack vim register|list|show|set|delete` (python-tackerclient) work against this
//! server. Bodies are Tacker's (`{"vim": {...}}`, `{"vims": [...]}`); the client's `.json`
//! suffix on paths is accepted.
//!
//! A Tacker VIM is stored as a registry VIM (secrets sealed, see [`vnfm_lcm::vim`]):
//!
//! | Tacker | registry |
//! |---|---|
//! | `type: openstack` | `vimType: ETSINFV.OPENSTACK_KEYSTONE.V_3` |
//! | `type: kubernetes` | `ETSINFV.KUBERNETES.V_1` (`ETSINFV.HELM.V_3` with `extra.use_helm: true`) |
//! | `auth_url` | `interfaceInfo.endpoint` (OpenStack: `/v3` appended when missing, as Tacker does) |
//! | `auth_cred.username`, `password`, `bearer_token` | `accessInfo.username`, `password`, `bearer_token` |
//! | `auth_cred.user_domain_name` | `accessInfo.userDomain` |
//! | `auth_cred.ssl_ca_cert` | `interfaceInfo.ssl_ca_cert` |
//! | `auth_cred.cert_verify: "False"` | `interfaceInfo.skipCertificateVerification: true` |
//! | `vim_project.name` | `accessInfo.project` (Kubernetes: `accessInfo.namespace`) |
//! | `vim_project.project_domain_name` | `accessInfo.projectDomain` |
//! | `placement_attr.regions[0]` | `accessInfo.region` |
//! | `is_default: true` | `extra.isDefault` ([`vnfm_lcm::vim::DEFAULT_FLAG`]) |
//! | `extra` | the members of `extra` |
//! | `description`, `placement_attr`, `tenant_id`, `created_at`, `updated_at` | `extra.tacker` |
//!
//! A VIM belongs to the project of the caller that registered it, as on Tacker: a caller
//! limited to one project (see [`crate::scope`]) lists, reads, changes and deletes only its
//! project's VIMs (another project's VIM answers `404`, as a missing one), and `is_default`
//! marks the default VIM of that project. `tenant_id` (or `project_id`) in a registration names
//! the project; a caller that does not see every project may name only its own (`403`, as
//! Tacker's policy). VIM names are unique per project.
//!
//! `shared` (Tacker's `vims.shared` column, which its API neither sets nor shows) is shown and,
//! by a caller that sees every project only, set in a registration or `PUT`: a shared VIM is
//! listed and read by every project (without its credentials: `auth_cred` holds no account,
//! `vim_project` is empty) and named by `vimId` in their requests, as Tacker's VIM lookup
//! admits shared VIMs; other projects' `PUT` and `DELETE` of it answer `403`. It stays the
//! default VIM (`is_default`) of its own project only.
//!
//! Secrets are never returned: `password` and `bearer_token` read `"***"`, as in Tacker.
//! Errors are ProblemDetails with a `TackerError` member (`type`, `message`, `detail`), which
//! python-tackerclient prints as the message.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{OriginalUri, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use vnfm_lcm::LcmError;
use vnfm_lcm::vim::VimView;
use vnfm_types::VimId;

use crate::error::{ApiError, PROBLEM_JSON};
use crate::route_table::{self, Scope, doc, get, post, put, route};
use crate::scope::Tenancy;
use crate::state::AppState;
use crate::util::{json_body, json_response, require_accept};
use utoipa_axum::router::OpenApiRouter;

mod mapping;

use mapping::{Envelope, change, connection, tacker_pointer, tacker_view};

pub(crate) fn routes() -> OpenApiRouter<Arc<AppState>> {
    let collection = || {
        [
            get(
                list,
                doc("OpenStack Tacker's VIM API: list VIMs (Tacker's shape)"),
            ),
            post(
                create,
                doc("OpenStack Tacker's VIM API: register a VIM (openstack vim register)")
                    .status(201),
            )
            .creation(),
        ]
    };
    OpenApiRouter::new()
        .routes(route("/vims", Scope::Unnamed, collection()))
        // Tacker's client also asks for the collection with a `.json` suffix.
        .routes(route("/vims.json", Scope::Unnamed, collection()))
        .routes(route(
            "/vims/{vimId}",
            Scope::Unnamed,
            [
                get(show, doc("OpenStack Tacker's VIM API: show a VIM")),
                put(update, doc("OpenStack Tacker's VIM API: update a VIM")),
                route_table::delete(
                    delete,
                    doc("OpenStack Tacker's VIM API: delete a VIM").status(204),
                ),
            ],
        ))
}

/// A failure answered as ProblemDetails with Tacker's `TackerError` member.
#[derive(Debug)]
pub(crate) struct TackerFault(ApiError);

impl From<ApiError> for TackerFault {
    fn from(e: ApiError) -> Self {
        TackerFault(e)
    }
}

impl From<LcmError> for TackerFault {
    fn from(e: LcmError) -> Self {
        TackerFault(match e {
            LcmError::InvalidRequest { pointer, message }
            | LcmError::Unprocessable { pointer, message } => {
                let pointer = tacker_pointer(&pointer);
                ApiError::invalid(pointer.clone(), format!("{pointer}: {message}"))
            }
            other => ApiError::Lcm(other),
        })
    }
}

impl TackerFault {
    /// The `type` Tacker would report.
    fn kind(&self) -> &'static str {
        match &self.0 {
            ApiError::Lcm(LcmError::NotFound { kind: "VIM", .. }) => "VimNotFoundException",
            ApiError::Lcm(LcmError::VimInUse { .. }) => "VimInUseException",
            e => match e.status().as_u16() {
                400 => "BadRequest",
                404 => "NotFound",
                406 => "NotAcceptable",
                403 => "PolicyNotAuthorized",
                409 => "Conflict",
                415 => "UnsupportedMediaType",
                _ => "TackerException",
            },
        }
    }
}

impl IntoResponse for TackerFault {
    fn into_response(self) -> Response {
        let status = self.0.status();
        if status.is_server_error() {
            // The generic answer that keeps causes in the log.
            return self.0.into_response();
        }
        let mut problem = self.0.problem();
        problem.extra.insert(
            "TackerError".into(),
            json!({"type": self.kind(), "message": problem.detail, "detail": ""}),
        );
        let body = serde_json::to_vec(&problem).unwrap_or_default();
        let mut response = (status, body).into_response();
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
        response
    }
}

type Reply = Result<Response, TackerFault>;

/// The id of a path segment, without the `.json` suffix python-tackerclient adds.
fn vim_id(segment: &str) -> VimId {
    VimId::new(segment.strip_suffix(".json").unwrap_or(segment))
}

fn one(status: StatusCode, view: &VimView) -> Response {
    json_response(status, &json!({"vim": tacker_view(view)}))
}

/// Refuses a name another VIM of `project` has (Tacker's names are unique per project; the
/// client finds VIMs by name).
async fn unique_name(
    state: &AppState,
    name: &str,
    project: Option<&str>,
    except: Option<&VimId>,
) -> Result<(), TackerFault> {
    let taken = state
        .vims
        .list()
        .await?
        .into_iter()
        .find(|v| v.name == name && v.project.as_deref() == project && Some(&v.id) != except);
    match taken {
        Some(v) => Err(ApiError::Conflict(format!(
            "a VIM named `{}` exists already (id {}); choose another name",
            crate::util::cut(name, 60),
            v.id
        ))
        .into()),
        None => Ok(()),
    }
}

/// `201 Created` with the new VIM (committing the request's `Idempotency-Key` with it); a
/// replay ([`crate::idempotency::Retry::Replay`]) answers the same from the VIM it names.
async fn create(
    State(state): State<Arc<AppState>>,
    tenancy: Tenancy,
    retry: crate::idempotency::RetryKey,
    headers: HeaderMap,
    body: Bytes,
) -> Reply {
    require_accept(&headers, &["application/json"])?;
    let Envelope { vim } = json_body(&headers, &body, None)?;
    vim.refuse_read_only(false)?;
    let name = vim.name.clone().unwrap_or_default();
    if name.trim().is_empty() {
        return Err(ApiError::invalid("/vim/name", "/vim/name: missing or empty").into());
    }
    let project = owner(&tenancy, vim.tenant_id.as_ref().or(vim.project_id.as_ref()))?;
    let shared = vim.shared(&tenancy)?.unwrap_or(false);
    let info = connection(&vim)?;
    if let Some(id) = retry.replay() {
        let view = state.vims.show_in(&vim_id(id), &tenancy.scope).await?;
        return Ok(one(StatusCode::CREATED, &view));
    }
    unique_name(&state, &name, project.as_deref(), None).await?;
    let view = state
        .vims
        .create_in_with_key(&name, &info, project.as_deref(), shared, retry.key())
        .await?;
    Ok(one(StatusCode::CREATED, &view))
}

/// The project a registration puts the VIM in: the one its `tenant_id` names, which only a
/// caller that sees every project may choose freely (Tacker's policy), else the caller's.
fn owner(tenancy: &Tenancy, named: Option<&String>) -> Result<Option<String>, TackerFault> {
    match named {
        None => Ok(tenancy.project.clone()),
        Some(p) if tenancy.scope.admits(Some(p)) => Ok(Some(p.clone())),
        Some(_) => Err(ApiError::Forbidden(
            "/vim/tenant_id: a VIM can be registered only in the caller's own project; \
             registering one in another project needs a token with an admin role"
                .into(),
        )
        .into()),
    }
}

async fn list(
    State(state): State<Arc<AppState>>,
    tenancy: Tenancy,
    headers: HeaderMap,
    uri: OriginalUri,
) -> Reply {
    require_accept(&headers, &["application/json"])?;
    let mut fields: Vec<String> = Vec::new();
    let mut filters: Vec<(String, String)> = Vec::new();
    for (k, v) in form_urlencoded::parse(uri.0.query().unwrap_or("").as_bytes()) {
        if k == "fields" {
            fields.push(v.into_owned());
        } else {
            filters.push((k.into_owned(), v.into_owned()));
        }
    }
    let mut out = Vec::new();
    for view in state.vims.list_in(&tenancy.scope).await? {
        let vim = tacker_view(&view);
        // A filter on an attribute matches when the attribute equals one of its values.
        let keys: std::collections::BTreeSet<&str> =
            filters.iter().map(|(k, _)| k.as_str()).collect();
        let matches = keys.iter().all(|key| {
            let actual = match vim.get(*key) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Bool(b)) => b.to_string(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            filters
                .iter()
                .filter(|(k, _)| k == key)
                .any(|(_, want)| match vim.get(*key) {
                    Some(Value::Bool(_)) => want.eq_ignore_ascii_case(&actual),
                    _ => *want == actual,
                })
        });
        if !matches {
            continue;
        }
        let vim = if fields.is_empty() {
            vim
        } else {
            vim.into_iter()
                .filter(|(k, _)| fields.iter().any(|f| f == k))
                .collect()
        };
        out.push(Value::Object(vim));
    }
    Ok(json_response(StatusCode::OK, &json!({"vims": out})))
}

async fn show(
    State(state): State<Arc<AppState>>,
    tenancy: Tenancy,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Reply {
    require_accept(&headers, &["application/json"])?;
    let view = state.vims.show_in(&vim_id(&id), &tenancy.scope).await?;
    Ok(one(StatusCode::OK, &view))
}

async fn update(
    State(state): State<Arc<AppState>>,
    tenancy: Tenancy,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Reply {
    require_accept(&headers, &["application/json"])?;
    let Envelope { vim } = json_body(&headers, &body, None)?;
    vim.refuse_read_only(true)?;
    let id = vim_id(&id);
    let current = state.vims.show_in(&id, &tenancy.scope).await?;
    crate::vims::may_change(&tenancy, &current)?;
    let shared = vim.shared(&tenancy)?;
    if let Some(name) = &vim.name {
        if name.trim().is_empty() {
            return Err(ApiError::invalid("/vim/name", "/vim/name: must not be empty").into());
        }
        unique_name(&state, name, current.project.as_deref(), Some(&id)).await?;
    }
    let mut patch = change(&vim, &current.vim_type)?;
    patch.shared = shared;
    let view = state
        .vims
        .update_in(&id, &patch, None, &tenancy.scope)
        .await?;
    Ok(one(StatusCode::OK, &view))
}

async fn delete(
    State(state): State<Arc<AppState>>,
    tenancy: Tenancy,
    Path(id): Path<String>,
) -> Reply {
    let id = vim_id(&id);
    crate::vims::may_change(&tenancy, &state.vims.show_in(&id, &tenancy.scope).await?)?;
    state.vims.delete_in(&id, &tenancy.scope).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
