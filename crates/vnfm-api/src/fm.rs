//! VNF fault management, SOL003 v2.6.1 (`/vnffm/v1`, API version 1.3.0 as Tacker's, serving
//! 1.2.0 clients too): alarms (list with SOL013 filters, read with an `ETag`, `PATCH` of
//! `ackState` with `If-Match`), FM subscriptions (the shared handlers of
//! [`crate::subscriptions`]), and the receiver of Prometheus Alertmanager webhooks
//! (`POST /vnffm/v1/alertmanager`): firing alerts raise alarms, resolved alerts clear them,
//! mapped by `vnfm_prometheus::AlarmMapping`; the alerts of Tacker's other plugin functions
//! ask for an automatic SCALE or HEAL or push PM values (one path with Tacker's own
//! receivers: [`crate::alert_receivers::apply_alerts`]).
//!
//! The receiver accepts the server's usual credentials, or the bearer token configured for
//! Alertmanager's `http_config` ([`crate::StateOptions::alertmanager_token`]). A payload that
//! is not an Alertmanager webhook is refused with 400 and the JSON pointer of the fault; in a
//! valid payload, every alert that can be mapped is processed even when others cannot (those
//! are reported in one 400 naming each one's pointer, so nothing good is dropped and
//! Alertmanager, which does not resend on 4xx, does not loop). A store failure is a 503, which
//! Alertmanager retries; raising is idempotent, so a retried batch does not duplicate alarms.

use std::sync::{Arc, OnceLock};

use axum::body::Bytes;
use axum::extract::{OriginalUri, Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use vnfm_lcm::LcmError;
use vnfm_lcm::subscriptions::{CreateOptions, Created};
use vnfm_schemas::SchemaId;
use vnfm_store::{Page, ProjectScope};
use vnfm_types::{
    Alarm, AlarmModifications, FmSubscription, FmSubscriptionRequest, SubscriptionId,
};

use crate::error::{ApiError, ApiResult};
use crate::listing::{ListRequest, Listed};
use crate::precondition::with_etag;
use crate::route_table::{Scope, doc, get, patch, post, route};
use crate::state::AppState;
use crate::subscriptions::Kind;
use crate::subscriptions::SubscriptionDocs;
use crate::util::{json_body, json_response, merge_patch_body, require_accept};
use crate::version::{ApiFamily, api_versions_route, versioned_routes};
use utoipa_axum::router::OpenApiRouter;

const FAMILY: ApiFamily = ApiFamily::FmV1;

/// The `/vnffm/v1` routes that need the server's authentication.
pub(crate) fn routes() -> OpenApiRouter<Arc<AppState>> {
    let routes = OpenApiRouter::new()
        .routes(api_versions_route(
            FAMILY,
            "API versions of VNF fault management v1",
        ))
        .routes(route(
            "/alarms",
            Scope::Unnamed,
            [get(
                list_alarms,
                doc("List alarms (SOL013 filter, paging)").returns("[Alarm]"),
            )],
        ))
        .routes(route(
            "/alarms/{alarmId}",
            Scope::ALARM,
            [
                get(
                    show_alarm,
                    doc("Read an alarm (with ETag)").returns("Alarm"),
                ),
                patch(
                    modify_alarm,
                    doc("Acknowledge an alarm (merge patch of ackState, If-Match)")
                        .body("AlarmModifications")
                        .returns("AlarmModifications"),
                ),
            ],
        ))
        .routes(route(
            "/alarms/{alarmId}/escalate",
            Scope::ALARM,
            [post(
                escalate_alarm,
                doc("Escalate an open alarm's perceived severity (SOL002 EM task)")
                    .body("PerceivedSeverityRequest")
                    .status(204),
            )],
        ))
        .merge(crate::subscriptions::routes::<Fm>(FAMILY));
    versioned_routes(FAMILY, routes)
}

/// FM subscriptions (`/vnffm/v1` only: one API version serves them).
pub(crate) struct Fm;

impl Kind for Fm {
    type Resource = FmSubscription;
    type Request = FmSubscriptionRequest;
    const REQUEST_SCHEMA: Option<SchemaId> = None;
    const DOCS: SubscriptionDocs = SubscriptionDocs {
        list: doc("List FM subscriptions").returns("[FmSubscription]"),
        create: doc("Subscribe to alarm notifications")
            .body("FmSubscriptionRequest")
            .status(201)
            .returns("FmSubscription"),
        read: doc("Read an FM subscription").returns("FmSubscription"),
        delete: doc("Delete an FM subscription").status(204),
    };

    fn schema() -> &'static Value {
        static S: OnceLock<Value> = OnceLock::new();
        S.get_or_init(|| {
            serde_json::to_value(schemars::schema_for!(FmSubscription)).unwrap_or_default()
        })
    }
    fn allow_duplicates(_: &AppState) -> bool {
        false
    }
    fn id(sub: &FmSubscription) -> &SubscriptionId {
        &sub.id
    }
    async fn create(
        state: &AppState,
        _family: ApiFamily,
        request: &FmSubscriptionRequest,
        options: &CreateOptions,
    ) -> Result<Created<FmSubscription>, LcmError> {
        state.faults.subscriptions().create(request, options).await
    }
    async fn get(state: &AppState, id: &SubscriptionId) -> Result<FmSubscription, LcmError> {
        state.faults.subscriptions().get(id).await
    }
    async fn list(
        state: &AppState,
        scope: &ProjectScope,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Page<FmSubscription>, LcmError> {
        state.faults.subscriptions().list(scope, after, limit).await
    }
    async fn delete(state: &AppState, id: &SubscriptionId) -> Result<(), LcmError> {
        state.faults.subscriptions().delete(id).await
    }
}

fn alarm_schema() -> &'static Value {
    static S: OnceLock<Value> = OnceLock::new();
    S.get_or_init(|| serde_json::to_value(schemars::schema_for!(Alarm)).unwrap_or_default())
}

fn to_value(alarm: &Alarm) -> ApiResult<Value> {
    serde_json::to_value(alarm)
        .map_err(|e| ApiError::Internal(format!("alarm does not serialize: {e}")))
}

async fn list_alarms(
    State(state): State<Arc<AppState>>,
    tenancy: crate::scope::Tenancy,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/json"])?;
    let list = ListRequest::parse(&uri, alarm_schema())?
        .paged(state.options.page_sizes.of(Listed::Alarms));
    let limit = list.page_size();
    list.run(
        |after| {
            let state = state.clone();
            let scope = tenancy.scope.clone();
            async move {
                let page = state.faults.list(&scope, after.as_deref(), limit).await?;
                Ok(Page {
                    items: page
                        .items
                        .iter()
                        .map(|(a, _)| to_value(a))
                        .collect::<ApiResult<Vec<_>>>()?,
                    next: page.next,
                })
            }
        },
        &[],
    )
    .await
}

async fn show_alarm(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    require_accept(&headers, &["application/json"])?;
    let (alarm, version) = state.faults.get(&id).await?;
    Ok(with_etag(
        json_response(StatusCode::OK, &to_value(&alarm)?),
        version,
    ))
}

/// `PATCH /alarms/{id}`: `{"ackState": "ACKNOWLEDGED"}` (or `"UNACKNOWLEDGED"`, SOL003
/// v3.3.1 and Tacker) as a merge patch; answers the modifications (SOL003 clause 7.4.3.3.4)
/// with the new `ETag`; 409 when the alarm already has that state.
async fn modify_alarm(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    require_accept(&headers, crate::util::PATCH_ANSWER_TYPES)?;
    let expected = crate::precondition::single_expected_version(&headers, "alarm")?;
    let modifications: AlarmModifications = merge_patch_body(&headers, &body, None)?;
    let (_, version) = state
        .faults
        .set_ack_state(&id, modifications.ack_state, expected)
        .await?;
    Ok(with_etag(
        json_response(StatusCode::OK, &modifications),
        version,
    ))
}

/// `POST /alarms/{id}/escalate` (SOL002 v2.6.1 clause 7.4.4): the EM's proposed severity;
/// 204 No Content.
async fn escalate_alarm(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    let request: vnfm_types::PerceivedSeverityRequest = json_body(&headers, &body, None)?;
    state
        .faults
        .escalate(&id, request.proposed_perceived_severity)
        .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// Whether the request carries the Alertmanager receiver's bearer token.
fn has_receiver_token(state: &AppState, headers: &HeaderMap) -> bool {
    let Some(token) = &state.options.alertmanager_token else {
        return false;
    };
    let Some(given) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return false;
    };
    // Compared through digests, so the time taken does not depend on a matching prefix.
    use sha2::{Digest, Sha256};
    Sha256::digest(given.trim().as_bytes()) == Sha256::digest(token.expose().as_bytes())
}

/// Authenticates an Alertmanager webhook: Alertmanager's own token, or the server's usual
/// credentials.
pub(crate) async fn authenticate_webhook(
    state: &AppState,
    headers: &HeaderMap,
    peer: crate::auth::Peer<'_>,
) -> ApiResult<()> {
    if !has_receiver_token(state, headers) {
        state.auth.authenticate_from(headers, peer).await?;
    }
    Ok(())
}

/// `POST /vnffm/v1/alertmanager`: an Alertmanager webhook (version 4).
pub(crate) async fn alertmanager_webhook(
    State(state): State<Arc<AppState>>,
    extensions: axum::http::Extensions,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    authenticate_webhook(&state, &headers, crate::auth::Peer::of(&extensions)).await?;
    let webhook = vnfm_prometheus::parse_webhook(&body).map_err(|e| match &e {
        vnfm_prometheus::Error::WebhookInvalid { pointer, .. } => {
            ApiError::invalid(pointer.clone(), e.to_string())
        }
        _ => ApiError::bad_request(e.to_string()),
    })?;
    let applied = crate::alert_receivers::apply_alerts(&state, &webhook, None).await?;
    let refused = applied.refused;
    if let Some(first) = refused.first() {
        let pointer = first.split(':').next().unwrap_or("/alerts").to_owned();
        return Err(ApiError::invalid(
            pointer,
            format!(
                "{} of {} alerts could not be read (the others were processed): {}; \
                 see docs/fault-and-performance.md for the labels",
                refused.len(),
                webhook.alerts.len(),
                refused.join("; ")
            ),
        ));
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}
