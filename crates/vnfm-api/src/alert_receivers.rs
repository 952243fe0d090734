//! The receivers of monitoring alerts: what every Alertmanager webhook payload does, alert by
//! alert ([`apply_alerts`], shared by `POST /vnffm/v1/alertmanager` in [`crate::fm`]), and
//! OpenStack Tacker's Prometheus-plugin endpoints, which Tacker's alerting rules and clients
//! post to ([`routes`]):
//!
//! | path | Tacker's `function_type` | what its firing alerts do |
//! |---|---|---|
//! | `POST /alert` | `vnffm` | raise an alarm (a resolved one clears it) |
//! | `POST /alert/auto_scaling` | `auto_scale` | ask for an automatic SCALE |
//! | `POST /alert/auto_healing` | `auto_heal` | ask for an automatic HEAL of `vnfc_info_id` |
//! | `POST /pm_event` | `vnfpm` | make a report of PM job `job_id` |
//! | `POST /pm_threshold` | `vnfpm_threshold` | follow threshold `threshold_id` |
//!
//! Each endpoint takes only the alerts of its function, as Tacker's does, and answers as
//! Tacker's: `204 No Content` whether or not the alerts could be used (what could not is
//! logged as a warning: Alertmanager does not resend on an error, and Tacker never answers
//! one), and `404` when the function is off (`--no-auto-scale`, `--no-auto-heal`). Unlike
//! Tacker, a store failure is a `503`, so that Alertmanager sends the batch again. They
//! authenticate as the Alertmanager receiver does ([`crate::fm::authenticate_webhook`]):
//! Tacker leaves them unauthenticated, this server does not.

use std::sync::Arc;
use std::time::SystemTime;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use utoipa_axum::router::OpenApiRouter;
use vnfm_assurance::pm::pushed::{Pushed, PushedValue};
use vnfm_driver_api::fault::{FaultId, FaultReport};
use vnfm_lcm::LcmError;
use vnfm_prometheus::{
    AlarmCandidate, AlarmMapping, Alert, PluginFunction, ResourceVnfcs, Webhook,
};
use vnfm_types::{DateTime, ErrorKind, FaultyResourceInfo, VnfInstanceId};

use crate::error::{ApiError, ApiResult};
use crate::route_table::{Scope, doc, post, route};
use crate::state::AppState;

/// What the alerts of one payload did.
#[derive(Debug, Default)]
pub(crate) struct Applied {
    /// Alarms raised or updated.
    pub raised: usize,
    /// Alarms cleared.
    pub cleared: usize,
    /// Automatic SCALEs asked for.
    pub scalings: usize,
    /// Automatic HEALs asked for.
    pub heals: usize,
    /// Performance reports made of pushed values.
    pub reports: usize,
    /// Threshold crossings of pushed values.
    pub crossings: usize,
    /// Alerts that were read but do not fit what they name (an unknown PM job, a value for
    /// another instance), each `pointer: why`.
    pub skipped: Vec<String>,
    /// Alerts that cannot be read (a label missing or wrong), each `pointer: why`.
    pub refused: Vec<String>,
}

/// Applies every alert of `webhook` (of function `only`, when given; an alert without
/// `function_type` is a fault): faults raise and clear alarms, Tacker's `auto_scale` and
/// `auto_heal` alerts ask for automatic operations, its `vnfpm` and `vnfpm_threshold` alerts
/// push values to PM jobs and thresholds. An alert that cannot be used is reported in the
/// answer and the others are applied all the same; a store failure stops at the failing
/// alert (503).
pub(crate) async fn apply_alerts(
    state: &AppState,
    webhook: &Webhook,
    only: Option<PluginFunction>,
) -> ApiResult<Applied> {
    let mapping = AlarmMapping::default();
    let mut applied = Applied::default();
    for (i, alert) in webhook.alerts.iter().enumerate() {
        let function = PluginFunction::of(alert);
        if only.is_some_and(|o| function.unwrap_or(PluginFunction::Fault) != o) {
            continue;
        }
        let refused = |e: vnfm_prometheus::Error| format!("/alerts/{i}/labels: {e}");
        match function {
            Some(PluginFunction::AutoScale) => match vnfm_prometheus::scale_trigger(alert) {
                Ok(Some(t)) => {
                    let id = VnfInstanceId::new(t.vnf_instance_id);
                    let cause = cause(alert);
                    let (out, steps) = (t.scale_out, t.number_of_steps);
                    if state
                        .faults
                        .request_scale(&id, out, &t.aspect_id, steps, &cause)
                    {
                        applied.scalings += 1;
                    } else {
                        tracing::warn!(
                            alert = i,
                            "an auto_scale alert arrived, but automatic scaling is off"
                        );
                    }
                }
                Ok(None) => {}
                Err(e) => applied.refused.push(refused(e)),
            },
            Some(PluginFunction::AutoHeal) => match vnfm_prometheus::heal_trigger(alert) {
                Ok(Some(t)) => {
                    let id = VnfInstanceId::new(t.vnf_instance_id);
                    if state
                        .faults
                        .request_heal(&id, &t.vnfc_info_ids, &cause(alert))
                    {
                        applied.heals += 1;
                    } else {
                        tracing::warn!(
                            alert = i,
                            "an auto_heal alert arrived, but automatic healing is off"
                        );
                    }
                }
                Ok(None) => {}
                Err(e) => applied.refused.push(refused(e)),
            },
            Some(PluginFunction::Pm | PluginFunction::PmThreshold) => {
                match vnfm_prometheus::pm_sample(alert) {
                    Ok(Some(sample)) => push(state, i, sample, &mut applied).await?,
                    Ok(None) => {}
                    Err(e) => applied.refused.push(refused(e)),
                }
            }
            None | Some(PluginFunction::Fault) => match mapping.candidate(alert) {
                Ok(Some(c)) => fault(state, i, c, &mut applied).await?,
                Ok(None) => {}
                Err(e) => applied.refused.push(refused(e)),
            },
        }
    }
    tracing::info!(
        alerts = webhook.alerts.len(),
        raised = applied.raised,
        cleared = applied.cleared,
        scalings = applied.scalings,
        heals = applied.heals,
        reports = applied.reports,
        crossings = applied.crossings,
        skipped = applied.skipped.len(),
        refused = applied.refused.len(),
        "monitoring alerts received"
    );
    for s in &applied.skipped {
        tracing::warn!("alert not applied: {s}");
    }
    Ok(applied)
}

/// What an alert is the cause of, for the occurrence it starts.
fn cause(alert: &Alert) -> String {
    format!("alert {}", alert.name().unwrap_or(&alert.fingerprint))
}

/// Raises or clears the alarm of fault alert `i`. The VNFCs it is about are those it names
/// (`vnfc_instance_id`) or those whose resource its `pod` pattern matches (Tacker's), and
/// the resource of the first is the alarm's `rootCauseFaultyResource`.
async fn fault(
    state: &AppState,
    i: usize,
    mut c: AlarmCandidate,
    applied: &mut Applied,
) -> ApiResult<()> {
    for w in &c.warnings {
        tracing::warn!(alert = i, "{w}");
    }
    let mut resource = None;
    if !c.vnfc_instance_ids.is_empty() || c.vnfc_resource_pattern.is_some() {
        let id = VnfInstanceId::new(c.vnf_instance_id.clone());
        match state.lcm.get_instance(&id).await {
            Ok(instance) => {
                let found = match &c.vnfc_resource_pattern {
                    Some(p) if c.vnfc_instance_ids.is_empty() => {
                        match vnfm_prometheus::resource_vnfcs(p, &instance) {
                            Ok(found) => found,
                            Err(e) => {
                                applied.refused.push(format!("/alerts/{i}/labels/pod: {e}"));
                                return Ok(());
                            }
                        }
                    }
                    _ => ResourceVnfcs {
                        vnfc_instance_ids: c.vnfc_instance_ids.clone(),
                        faulty_resource: vnfm_prometheus::named_vnfcs(
                            &c.vnfc_instance_ids,
                            &instance,
                        )
                        .faulty_resource,
                    },
                };
                c.vnfc_instance_ids = found.vnfc_instance_ids;
                resource = found.faulty_resource;
            }
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(unavailable(e)),
        }
    }
    if c.is_clear() {
        let at = c.ends_at.as_ref().and_then(date_time);
        state
            .faults
            .clear(&fault_of(&c), at)
            .await
            .map_err(unavailable)?;
        applied.cleared += 1;
        return Ok(());
    }
    match state.faults.raise(&report_of(&c, resource)?).await {
        Ok(_) => applied.raised += 1,
        Err(e) if e.kind() == ErrorKind::Invalid => {
            applied.refused.push(format!("/alerts/{i}: {e}"));
        }
        Err(e) => return Err(unavailable(e)),
    }
    Ok(())
}

/// Pushes the value of PM alert `i` to its job or threshold.
async fn push(
    state: &AppState,
    i: usize,
    sample: vnfm_prometheus::PmSample,
    applied: &mut Applied,
) -> ApiResult<()> {
    let value = PushedValue {
        object_instance_id: sample.object_instance_id,
        sub_object_instance_id: sample.sub_object_instance_id,
        metric: sample.metric,
        value: sample.value,
        at: SystemTime::now(),
    };
    let pm = &state.performance;
    let pushed = match sample.function {
        PluginFunction::Pm => pm.push_job_value(&sample.target_id, &value).await,
        _ => pm.push_threshold_value(&sample.target_id, &value).await,
    };
    match pushed {
        Ok(Pushed::Reported) => applied.reports += 1,
        Ok(Pushed::Evaluated { crossings }) => applied.crossings += crossings,
        Ok(Pushed::Skipped { reason }) => applied.skipped.push(format!("/alerts/{i}: {reason}")),
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::Invalid) => {
            applied.skipped.push(format!("/alerts/{i}: {e}"));
        }
        Err(e) => return Err(unavailable(e)),
    }
    Ok(())
}

fn date_time(t: &jiff::Timestamp) -> Option<DateTime> {
    DateTime::parse(&t.to_string()).ok()
}

/// The fault an alert reports: instance, VNFC(s), fault type (else the alert name) and
/// probable cause; the same for the firing and the resolved alert.
fn fault_of(c: &AlarmCandidate) -> FaultId {
    FaultId {
        instance_id: VnfInstanceId::new(c.vnf_instance_id.clone()),
        vnfc_instance_id: (!c.vnfc_instance_ids.is_empty()).then(|| c.vnfc_instance_ids.join(",")),
        fault_type: c.fault_type.clone().or_else(|| c.alert_name.clone()),
        probable_cause: c.probable_cause.clone(),
    }
}

fn report_of(c: &AlarmCandidate, resource: Option<FaultyResourceInfo>) -> ApiResult<FaultReport> {
    let severity = serde_json::from_value(json!(c.perceived_severity.as_str()))
        .map_err(|e| ApiError::Internal(format!("severity mapping: {e}")))?;
    let event_type = serde_json::from_value(json!(c.event_type.as_str()))
        .map_err(|e| ApiError::Internal(format!("event type mapping: {e}")))?;
    let mut report = FaultReport::new(fault_of(c), severity, event_type);
    report.event_time = date_time(&c.starts_at);
    report.details = c.fault_details.clone();
    report.faulty_resource = resource;
    Ok(report)
}

/// A core failure while applying alerts: 503, so that Alertmanager sends the batch again.
fn unavailable(e: LcmError) -> ApiError {
    tracing::error!(error = %e, "applying monitoring alerts failed");
    ApiError::Unavailable(format!(
        "the alerts could not be applied ({e}); the webhook may be sent again"
    ))
}

/// Tacker's Prometheus-plugin endpoints (see the [module documentation](self)).
pub(crate) fn routes() -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::new()
        .routes(endpoint(
            "/alert",
            PluginFunction::Fault,
            "Tacker Prometheus plugin: fault alerts (function_type vnffm) raise and clear alarms",
        ))
        .routes(endpoint(
            "/alert/auto_scaling",
            PluginFunction::AutoScale,
            "Tacker Prometheus plugin: auto_scale alerts ask for an automatic SCALE",
        ))
        .routes(endpoint(
            "/alert/auto_healing",
            PluginFunction::AutoHeal,
            "Tacker Prometheus plugin: auto_heal alerts ask for an automatic HEAL",
        ))
        .routes(endpoint(
            "/pm_event",
            PluginFunction::Pm,
            "Tacker Prometheus plugin: vnfpm alerts make PM job reports",
        ))
        .routes(endpoint(
            "/pm_threshold",
            PluginFunction::PmThreshold,
            "Tacker Prometheus plugin: vnfpm_threshold alerts cross thresholds",
        ))
}

/// The route at `path` taking the alerts of `function`.
fn endpoint(
    path: &'static str,
    function: PluginFunction,
    summary: &'static str,
) -> utoipa_axum::router::UtoipaMethodRouter<Arc<AppState>> {
    route(
        path,
        Scope::Public,
        [post(
            move |state: State<Arc<AppState>>,
                  extensions: axum::http::Extensions,
                  headers: HeaderMap,
                  body: Bytes| receive(state, extensions, headers, body, function),
            doc(summary).status(204),
        )
        .map(|r| {
            r.layer(axum::extract::DefaultBodyLimit::max(
                vnfm_prometheus::DEFAULT_WEBHOOK_LIMIT,
            ))
        })],
    )
}

/// The paths of [`routes`], which authenticate as the Alertmanager receiver.
pub(crate) const PATHS: [&str; 5] = [
    "/alert",
    "/alert/auto_scaling",
    "/alert/auto_healing",
    "/pm_event",
    "/pm_threshold",
];

/// One of Tacker's endpoints, taking the alerts of `function`.
async fn receive(
    State(state): State<Arc<AppState>>,
    extensions: axum::http::Extensions,
    headers: HeaderMap,
    body: Bytes,
    function: PluginFunction,
) -> ApiResult<Response> {
    crate::fm::authenticate_webhook(&state, &headers, crate::auth::Peer::of(&extensions)).await?;
    let off = match function {
        PluginFunction::AutoScale => state
            .faults
            .auto_scale()
            .is_none()
            .then_some("Auto scaling"),
        PluginFunction::AutoHeal => state.faults.auto_heal().is_none().then_some("Auto healing"),
        _ => None,
    };
    if let Some(name) = off {
        return Err(ApiError::NotFound(format!("{name} API is not enabled")));
    }
    let webhook = match vnfm_prometheus::parse_webhook_lenient(&body) {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!(function = function.as_str(), error = %e, "an alert payload was not read");
            return Ok(StatusCode::NO_CONTENT.into_response());
        }
    };
    let applied = apply_alerts(&state, &webhook, Some(function)).await?;
    for r in &applied.refused {
        tracing::warn!(function = function.as_str(), "alert not applied: {r}");
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}
