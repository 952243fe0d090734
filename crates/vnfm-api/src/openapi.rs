//! The server's OpenAPI 3.1 document (built with utoipa), served at `/openapi.json` and
//! checked into `docs/openapi.json`.
//!
//! Operations come from one table ([`OPERATIONS`]) that mirrors the router; the request and
//! response schemas are generated from the Rust types (schemars, JSON Schema 2020-12, which
//! OpenAPI 3.1 uses as its schema dialect) and placed under `components/schemas`.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use axum::http::StatusCode;
use axum::response::Response;
use schemars::JsonSchema;
use serde_json::Value;
use utoipa::openapi::path::{
    HttpMethod, OperationBuilder, ParameterBuilder, ParameterIn, PathItem,
};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::security::{
    ApiKey, ApiKeyValue, ClientCredentials, Flow, Http, HttpAuthScheme, OAuth2, Scopes,
    SecurityRequirement, SecurityScheme,
};
use utoipa::openapi::{
    ComponentsBuilder, ContentBuilder, InfoBuilder, OpenApi, OpenApiBuilder, PathsBuilder, Ref,
    RefOr, ResponseBuilder, Schema,
};

use crate::util::json_response;

/// One documented operation.
#[derive(Debug, Clone, Copy)]
pub struct OperationDoc {
    /// HTTP method.
    pub method: &'static str,
    /// Path template.
    pub path: &'static str,
    /// One-line summary.
    pub summary: &'static str,
    /// Request body schema name (`components/schemas`), if any.
    pub request: Option<&'static str>,
    /// Success status.
    pub status: u16,
    /// Response body schema name, if any (`[Name]` for an array).
    pub response: Option<&'static str>,
}

const fn op(
    method: &'static str,
    path: &'static str,
    summary: &'static str,
    request: Option<&'static str>,
    status: u16,
    response: Option<&'static str>,
) -> OperationDoc {
    OperationDoc {
        method,
        path,
        summary,
        request,
        status,
        response,
    }
}

/// Every operation of the API (the v2 and v1 LCM APIs share paths below their prefixes).
pub const OPERATIONS: &[OperationDoc] = &[
    op(
        "GET",
        "/vnflcm/api_versions",
        "API versions of VNF LCM",
        None,
        200,
        Some("ApiVersionInformation"),
    ),
    op(
        "GET",
        "/vnflcm/v2/api_versions",
        "API versions of VNF LCM v2",
        None,
        200,
        Some("ApiVersionInformation"),
    ),
    op(
        "GET",
        "/vnflcm/v2/vnf_instances",
        "List VNF instances (SOL013 filter, selectors, paging)",
        None,
        200,
        Some("[VnfInstance]"),
    ),
    op(
        "POST",
        "/vnflcm/v2/vnf_instances",
        "Create a VNF instance identifier",
        Some("CreateVnfRequest"),
        201,
        Some("VnfInstance"),
    ),
    op(
        "GET",
        "/vnflcm/v2/vnf_instances/{vnfInstanceId}",
        "Read a VNF instance (with ETag)",
        None,
        200,
        Some("VnfInstance"),
    ),
    op(
        "PATCH",
        "/vnflcm/v2/vnf_instances/{vnfInstanceId}",
        "Modify VNF information (merge patch, If-Match)",
        Some("VnfInfoModificationRequest"),
        202,
        None,
    ),
    op(
        "DELETE",
        "/vnflcm/v2/vnf_instances/{vnfInstanceId}",
        "Delete a NOT_INSTANTIATED VNF instance identifier",
        None,
        204,
        None,
    ),
    op(
        "POST",
        "/vnflcm/v2/vnf_instances/{vnfInstanceId}/instantiate",
        "Instantiate",
        Some("InstantiateVnfRequest"),
        202,
        None,
    ),
    op(
        "POST",
        "/vnflcm/v2/vnf_instances/{vnfInstanceId}/terminate",
        "Terminate",
        Some("TerminateVnfRequest"),
        202,
        None,
    ),
    op(
        "POST",
        "/vnflcm/v2/vnf_instances/{vnfInstanceId}/heal",
        "Heal",
        Some("HealVnfRequest"),
        202,
        None,
    ),
    op(
        "POST",
        "/vnflcm/v2/vnf_instances/{vnfInstanceId}/scale",
        "Scale",
        Some("ScaleVnfRequest"),
        202,
        None,
    ),
    op(
        "POST",
        "/vnflcm/v2/vnf_instances/{vnfInstanceId}/scale_to_level",
        "Scale to level",
        Some("ScaleVnfToLevelRequest"),
        202,
        None,
    ),
    op(
        "POST",
        "/vnflcm/v2/vnf_instances/{vnfInstanceId}/change_flavour",
        "Change flavour",
        Some("ChangeVnfFlavourRequest"),
        202,
        None,
    ),
    op(
        "POST",
        "/vnflcm/v2/vnf_instances/{vnfInstanceId}/operate",
        "Operate (start/stop)",
        Some("OperateVnfRequest"),
        202,
        None,
    ),
    op(
        "POST",
        "/vnflcm/v2/vnf_instances/{vnfInstanceId}/change_ext_conn",
        "Change external connectivity",
        Some("ChangeExtVnfConnectivityRequest"),
        202,
        None,
    ),
    op(
        "POST",
        "/vnflcm/v2/vnf_instances/{vnfInstanceId}/change_vnfpkg",
        "Change current VNF package",
        Some("ChangeCurrentVnfPkgRequest"),
        202,
        None,
    ),
    op(
        "GET",
        "/vnflcm/v2/vnf_lcm_op_occs",
        "List operation occurrences",
        None,
        200,
        Some("[VnfLcmOpOcc]"),
    ),
    op(
        "GET",
        "/vnflcm/v2/vnf_lcm_op_occs/{vnfLcmOpOccId}",
        "Read an operation occurrence",
        None,
        200,
        Some("VnfLcmOpOcc"),
    ),
    op(
        "POST",
        "/vnflcm/v2/vnf_lcm_op_occs/{vnfLcmOpOccId}/retry",
        "Retry a FAILED_TEMP occurrence",
        None,
        202,
        None,
    ),
    op(
        "POST",
        "/vnflcm/v2/vnf_lcm_op_occs/{vnfLcmOpOccId}/rollback",
        "Roll back a FAILED_TEMP occurrence",
        None,
        202,
        None,
    ),
    op(
        "POST",
        "/vnflcm/v2/vnf_lcm_op_occs/{vnfLcmOpOccId}/fail",
        "Mark a FAILED_TEMP occurrence FAILED",
        None,
        200,
        Some("VnfLcmOpOcc"),
    ),
    op(
        "POST",
        "/vnflcm/v2/vnf_lcm_op_occs/{vnfLcmOpOccId}/cancel",
        "Cancel a running occurrence",
        Some("CancelMode"),
        202,
        None,
    ),
    op(
        "GET",
        "/vnflcm/v2/subscriptions",
        "List subscriptions",
        None,
        200,
        Some("[LccnSubscription]"),
    ),
    op(
        "POST",
        "/vnflcm/v2/subscriptions",
        "Subscribe (201, or 303 to a duplicate)",
        Some("LccnSubscriptionRequest"),
        201,
        Some("LccnSubscription"),
    ),
    op(
        "GET",
        "/vnflcm/v2/subscriptions/{subscriptionId}",
        "Read a subscription",
        None,
        200,
        Some("LccnSubscription"),
    ),
    op(
        "DELETE",
        "/vnflcm/v2/subscriptions/{subscriptionId}",
        "Delete a subscription",
        None,
        204,
        None,
    ),
    op(
        "GET",
        "/vnfpkgm/api_versions",
        "API versions of VNF package management",
        None,
        200,
        Some("ApiVersionInformation"),
    ),
    op(
        "GET",
        "/vnfpkgm/v2/vnf_packages",
        "List VNF packages",
        None,
        200,
        Some("[VnfPkgInfo]"),
    ),
    op(
        "POST",
        "/vnfpkgm/v2/vnf_packages",
        "Create a VNF package resource",
        Some("CreateVnfPkgInfoRequest"),
        201,
        Some("VnfPkgInfo"),
    ),
    op(
        "GET",
        "/vnfpkgm/v2/vnf_packages/{vnfPkgId}",
        "Read a VNF package",
        None,
        200,
        Some("VnfPkgInfo"),
    ),
    op(
        "PATCH",
        "/vnfpkgm/v2/vnf_packages/{vnfPkgId}",
        "Enable/disable a package, change user data",
        Some("VnfPkgInfoModifications"),
        200,
        Some("VnfPkgInfoModifications"),
    ),
    op(
        "DELETE",
        "/vnfpkgm/v2/vnf_packages/{vnfPkgId}",
        "Delete a DISABLED, unused package",
        None,
        204,
        None,
    ),
    op(
        "PUT",
        "/vnfpkgm/v2/vnf_packages/{vnfPkgId}/package_content",
        "Upload the CSAR (application/zip); onboarding runs asynchronously",
        None,
        202,
        None,
    ),
    op(
        "GET",
        "/vnfpkgm/v2/vnf_packages/{vnfPkgId}/package_content",
        "Download the CSAR (Range supported)",
        None,
        200,
        None,
    ),
    op(
        "POST",
        "/vnfpkgm/v2/vnf_packages/{vnfPkgId}/package_content/upload_from_uri",
        "Upload from an allow-listed URI",
        Some("UploadVnfPackageFromUriRequest"),
        202,
        None,
    ),
    op(
        "GET",
        "/vnfpkgm/v2/vnf_packages/{vnfPkgId}/vnfd",
        "The VNFD (text/plain single file, or application/zip)",
        None,
        200,
        None,
    ),
    op(
        "GET",
        "/vnfpkgm/v2/vnf_packages/{vnfPkgId}/artifacts/{artifactPath}",
        "One artifact (Range supported)",
        None,
        200,
        None,
    ),
    op(
        "GET",
        "/vnfpkgm/v2/onboarded_vnf_packages",
        "List the ONBOARDED VNF packages",
        None,
        200,
        Some("[VnfPkgInfo]"),
    ),
    op(
        "GET",
        "/vnfpkgm/v2/onboarded_vnf_packages/{vnfdId}",
        "Read the VNF package of a vnfdId",
        None,
        200,
        Some("VnfPkgInfo"),
    ),
    op(
        "GET",
        "/vnfpkgm/v2/onboarded_vnf_packages/{vnfdId}/package_content",
        "Download the CSAR of a vnfdId (Range supported)",
        None,
        200,
        None,
    ),
    op(
        "GET",
        "/vnfpkgm/v2/onboarded_vnf_packages/{vnfdId}/vnfd",
        "The VNFD of a vnfdId (text/plain single file, or application/zip)",
        None,
        200,
        None,
    ),
    op(
        "GET",
        "/vnfpkgm/v2/onboarded_vnf_packages/{vnfdId}/artifacts/{artifactPath}",
        "One artifact of the package of a vnfdId (Range supported)",
        None,
        200,
        None,
    ),
    op(
        "GET",
        "/vnfpkgm/v2/subscriptions",
        "List VNF package management subscriptions",
        None,
        200,
        Some("[PkgmSubscription]"),
    ),
    op(
        "POST",
        "/vnfpkgm/v2/subscriptions",
        "Subscribe to VNF package notifications (303 See Other for a duplicate)",
        Some("PkgmSubscriptionRequest"),
        201,
        Some("PkgmSubscription"),
    ),
    op(
        "GET",
        "/vnfpkgm/v2/subscriptions/{subscriptionId}",
        "Read a VNF package management subscription",
        None,
        200,
        Some("PkgmSubscription"),
    ),
    op(
        "DELETE",
        "/vnfpkgm/v2/subscriptions/{subscriptionId}",
        "Delete a VNF package management subscription",
        None,
        204,
        None,
    ),
    op(
        "GET",
        "/vnfm/v1/notifications/dead",
        "List the notifications given up after their retry time (oldest first, 100 per page; after=<id> for the next)",
        None,
        200,
        Some("[DeadNotification]"),
    ),
    op(
        "POST",
        "/vnfm/v1/notifications/dead/{id}/redeliver",
        "Send a given-up notification again: back in its queue (the next of its subscription and VNF instance), due now, retried under the current policy",
        None,
        202,
        None,
    ),
    op(
        "DELETE",
        "/vnfm/v1/notifications/dead/{id}",
        "Discard a given-up notification for good",
        None,
        204,
        None,
    ),
    op(
        "GET",
        "/vnfm/v1/vims",
        "List VIMs (secrets are never returned)",
        None,
        200,
        Some("[VimView]"),
    ),
    op(
        "POST",
        "/vnfm/v1/vims",
        "Register a VIM",
        Some("VimCreate"),
        201,
        Some("VimView"),
    ),
    op(
        "GET",
        "/vnfm/v1/vims/{vimId}",
        "Read a VIM",
        None,
        200,
        Some("VimView"),
    ),
    op(
        "PATCH",
        "/vnfm/v1/vims/{vimId}",
        "Update a VIM (merge patch, If-Match)",
        Some("VimUpdate"),
        200,
        Some("VimView"),
    ),
    op(
        "DELETE",
        "/vnfm/v1/vims/{vimId}",
        "Delete an unused VIM",
        None,
        204,
        None,
    ),
    op(
        "POST",
        "/oauth2/token",
        "OAuth 2.0 client credentials token",
        None,
        200,
        None,
    ),
    op(
        "GET",
        "/vnfm/v1/vnf_lcm_op_occs/{vnfLcmOpOccId}/progress",
        "Where an operation occurrence stands in its plan (steps done, running, left)",
        None,
        200,
        Some("OpOccProgress"),
    ),
    op(
        "GET",
        "/vnffm/api_versions",
        "API versions of VNF fault management",
        None,
        200,
        Some("ApiVersionInformation"),
    ),
    op(
        "GET",
        "/vnffm/v1/api_versions",
        "API versions of VNF fault management v1",
        None,
        200,
        Some("ApiVersionInformation"),
    ),
    op(
        "GET",
        "/vnffm/v1/alarms",
        "List alarms (SOL013 filter, paging)",
        None,
        200,
        Some("[Alarm]"),
    ),
    op(
        "GET",
        "/vnffm/v1/alarms/{alarmId}",
        "Read an alarm (with ETag)",
        None,
        200,
        Some("Alarm"),
    ),
    op(
        "PATCH",
        "/vnffm/v1/alarms/{alarmId}",
        "Acknowledge an alarm (merge patch of ackState, If-Match)",
        Some("AlarmModifications"),
        200,
        Some("AlarmModifications"),
    ),
    op(
        "POST",
        "/vnffm/v1/alarms/{alarmId}/escalate",
        "Escalate an open alarm's perceived severity (SOL002 EM task)",
        Some("PerceivedSeverityRequest"),
        204,
        None,
    ),
    op(
        "GET",
        "/vnffm/v1/subscriptions",
        "List FM subscriptions",
        None,
        200,
        Some("[FmSubscription]"),
    ),
    op(
        "POST",
        "/vnffm/v1/subscriptions",
        "Subscribe to alarm notifications",
        Some("FmSubscriptionRequest"),
        201,
        Some("FmSubscription"),
    ),
    op(
        "GET",
        "/vnffm/v1/subscriptions/{subscriptionId}",
        "Read an FM subscription",
        None,
        200,
        Some("FmSubscription"),
    ),
    op(
        "DELETE",
        "/vnffm/v1/subscriptions/{subscriptionId}",
        "Delete an FM subscription",
        None,
        204,
        None,
    ),
    op(
        "POST",
        "/vnffm/v1/alertmanager",
        "Alertmanager webhook receiver (payload version 4): alerts raise and clear alarms, or ask for automatic scaling",
        None,
        204,
        None,
    ),
    op(
        "GET",
        "/vnfpm/api_versions",
        "API versions of VNF performance management",
        None,
        200,
        Some("ApiVersionInformation"),
    ),
    op(
        "GET",
        "/vnfpm/v2/api_versions",
        "API versions of VNF performance management v2",
        None,
        200,
        Some("ApiVersionInformation"),
    ),
    op(
        "GET",
        "/vnfpm/v2/pm_jobs",
        "List PM jobs (SOL013 filter, paging)",
        None,
        200,
        Some("[PmJob]"),
    ),
    op(
        "POST",
        "/vnfpm/v2/pm_jobs",
        "Create a PM job",
        Some("CreatePmJobRequest"),
        201,
        Some("PmJob"),
    ),
    op(
        "GET",
        "/vnfpm/v2/pm_jobs/{pmJobId}",
        "Read a PM job, with its reports",
        None,
        200,
        Some("PmJob"),
    ),
    op(
        "PATCH",
        "/vnfpm/v2/pm_jobs/{pmJobId}",
        "Modify a PM job's callback (merge patch)",
        Some("PmJobModifications"),
        200,
        Some("PmJobModifications"),
    ),
    op(
        "DELETE",
        "/vnfpm/v2/pm_jobs/{pmJobId}",
        "Delete a PM job and its reports",
        None,
        204,
        None,
    ),
    op(
        "GET",
        "/vnfpm/v2/pm_jobs/{pmJobId}/reports/{reportId}",
        "Read a performance report",
        None,
        200,
        Some("PerformanceReport"),
    ),
    op(
        "GET",
        "/vnfpm/v2/thresholds",
        "List thresholds (SOL013 filter, paging)",
        None,
        200,
        Some("[Threshold]"),
    ),
    op(
        "POST",
        "/vnfpm/v2/thresholds",
        "Create a threshold",
        Some("CreateThresholdRequest"),
        201,
        Some("Threshold"),
    ),
    op(
        "GET",
        "/vnfpm/v2/thresholds/{thresholdId}",
        "Read a threshold",
        None,
        200,
        Some("Threshold"),
    ),
    op(
        "PATCH",
        "/vnfpm/v2/thresholds/{thresholdId}",
        "Modify a threshold's callback (merge patch)",
        Some("ThresholdModifications"),
        200,
        Some("ThresholdModifications"),
    ),
    op(
        "DELETE",
        "/vnfpm/v2/thresholds/{thresholdId}",
        "Delete a threshold",
        None,
        204,
        None,
    ),
    op(
        "GET",
        "/vnfpm/v2/subscriptions",
        "List PM subscriptions (SOL003 v2.6.1 shape, an extension of v2)",
        None,
        200,
        Some("[PmSubscription]"),
    ),
    op(
        "POST",
        "/vnfpm/v2/subscriptions",
        "Subscribe to PM notifications",
        Some("PmSubscriptionRequest"),
        201,
        Some("PmSubscription"),
    ),
    op(
        "GET",
        "/vnfpm/v2/subscriptions/{subscriptionId}",
        "Read a PM subscription",
        None,
        200,
        Some("PmSubscription"),
    ),
    op(
        "DELETE",
        "/vnfpm/v2/subscriptions/{subscriptionId}",
        "Delete a PM subscription",
        None,
        204,
        None,
    ),
    op(
        "GET",
        "/vnfpm/v1/api_versions",
        "API versions of VNF performance management v1 (SOL003 v2.6.1)",
        None,
        200,
        Some("ApiVersionInformation"),
    ),
    op(
        "GET",
        "/vnfpm/v1/pm_jobs",
        "List PM jobs (SOL013 filter, paging)",
        None,
        200,
        Some("[PmJob]"),
    ),
    op(
        "POST",
        "/vnfpm/v1/pm_jobs",
        "Create a PM job of VNF instances, without callback (SOL003 v2.6.1)",
        Some("CreatePmJobRequestV1"),
        201,
        Some("PmJob"),
    ),
    op(
        "GET",
        "/vnfpm/v1/pm_jobs/{pmJobId}",
        "Read a PM job, with its reports",
        None,
        200,
        Some("PmJob"),
    ),
    op(
        "DELETE",
        "/vnfpm/v1/pm_jobs/{pmJobId}",
        "Delete a PM job and its reports",
        None,
        204,
        None,
    ),
    op(
        "GET",
        "/vnfpm/v1/pm_jobs/{pmJobId}/reports/{reportId}",
        "Read a performance report",
        None,
        200,
        Some("PerformanceReport"),
    ),
    op(
        "GET",
        "/vnfpm/v1/thresholds",
        "List thresholds (SOL013 filter, paging)",
        None,
        200,
        Some("[Threshold]"),
    ),
    op(
        "POST",
        "/vnfpm/v1/thresholds",
        "Create a threshold of a VNF instance, without callback (SOL003 v2.6.1)",
        Some("CreateThresholdRequestV1"),
        201,
        Some("Threshold"),
    ),
    op(
        "GET",
        "/vnfpm/v1/thresholds/{thresholdId}",
        "Read a threshold",
        None,
        200,
        Some("Threshold"),
    ),
    op(
        "DELETE",
        "/vnfpm/v1/thresholds/{thresholdId}",
        "Delete a threshold",
        None,
        204,
        None,
    ),
    op(
        "GET",
        "/vnfpm/v1/subscriptions",
        "List PM subscriptions",
        None,
        200,
        Some("[PmSubscription]"),
    ),
    op(
        "POST",
        "/vnfpm/v1/subscriptions",
        "Subscribe to PM notifications",
        Some("PmSubscriptionRequest"),
        201,
        Some("PmSubscription"),
    ),
    op(
        "GET",
        "/vnfpm/v1/subscriptions/{subscriptionId}",
        "Read a PM subscription",
        None,
        200,
        Some("PmSubscription"),
    ),
    op(
        "DELETE",
        "/vnfpm/v1/subscriptions/{subscriptionId}",
        "Delete a PM subscription",
        None,
        204,
        None,
    ),
    op(
        "GET",
        "/vnfind/api_versions",
        "API versions of VNF indicators",
        None,
        200,
        Some("ApiVersionInformation"),
    ),
    op(
        "GET",
        "/vnfind/v1/api_versions",
        "API versions of VNF indicators v1",
        None,
        200,
        Some("ApiVersionInformation"),
    ),
    op(
        "GET",
        "/vnfind/v1/indicators",
        "List the indicator values of every VNF instance (SOL013 filter, paging)",
        None,
        200,
        Some("[VnfIndicator]"),
    ),
    op(
        "GET",
        "/vnfind/v1/indicators/{vnfInstanceId}",
        "List the indicator values of one VNF instance (SOL013 filter, paging)",
        None,
        200,
        Some("[VnfIndicator]"),
    ),
    op(
        "GET",
        "/vnfind/v1/indicators/{vnfInstanceId}/{indicatorId}",
        "Read one indicator value of a VNF instance",
        None,
        200,
        Some("VnfIndicator"),
    ),
    op(
        "PUT",
        "/vnfm/v1/indicators/{vnfInstanceId}/{indicatorId}",
        "Set the value of an indicator the instance's VNFD declares (not ETSI: for an EM or a script); a change is notified",
        None,
        200,
        Some("VnfIndicator"),
    ),
    op(
        "GET",
        "/vnfind/v1/subscriptions",
        "List VNF indicator subscriptions",
        None,
        200,
        Some("[VnfIndicatorSubscription]"),
    ),
    op(
        "POST",
        "/vnfind/v1/subscriptions",
        "Subscribe to VNF indicator value changes",
        Some("VnfIndicatorSubscriptionRequest"),
        201,
        Some("VnfIndicatorSubscription"),
    ),
    op(
        "GET",
        "/vnfind/v1/subscriptions/{subscriptionId}",
        "Read a VNF indicator subscription",
        None,
        200,
        Some("VnfIndicatorSubscription"),
    ),
    op(
        "DELETE",
        "/vnfind/v1/subscriptions/{subscriptionId}",
        "Delete a VNF indicator subscription",
        None,
        204,
        None,
    ),
    op(
        "GET",
        "/v1.0/vims",
        "OpenStack Tacker's VIM API: list VIMs (Tacker's shape)",
        None,
        200,
        None,
    ),
    op(
        "POST",
        "/v1.0/vims",
        "OpenStack Tacker's VIM API: register a VIM (openstack vim register)",
        None,
        201,
        None,
    ),
    op(
        "GET",
        "/v1.0/vims/{vimId}",
        "OpenStack Tacker's VIM API: show a VIM",
        None,
        200,
        None,
    ),
    op(
        "PUT",
        "/v1.0/vims/{vimId}",
        "OpenStack Tacker's VIM API: update a VIM",
        None,
        200,
        None,
    ),
    op(
        "DELETE",
        "/v1.0/vims/{vimId}",
        "OpenStack Tacker's VIM API: delete a VIM",
        None,
        204,
        None,
    ),
    op("GET", "/openapi.json", "This document", None, 200, None),
    op("GET", "/healthz", "Liveness", None, 200, None),
    op("GET", "/readyz", "Readiness", None, 200, None),
    op("GET", "/metrics", "Prometheus metrics", None, 200, None),
];

/// Schemas generated from the Rust types, by name (their `$defs` flattened in).
fn component_schemas() -> BTreeMap<String, Value> {
    fn add<T: JsonSchema>(out: &mut BTreeMap<String, Value>, name: &str) {
        let mut schema = serde_json::to_value(schemars::schema_for!(T)).unwrap_or_default();
        if let Some(defs) = schema.as_object_mut().and_then(|m| m.remove("$defs"))
            && let Value::Object(defs) = defs
        {
            for (k, v) in defs {
                out.entry(k).or_insert(v);
            }
        }
        if let Some(m) = schema.as_object_mut() {
            m.remove("$schema");
        }
        out.insert(name.to_owned(), schema);
    }
    use vnfm_types::*;
    let mut out = BTreeMap::new();
    add::<VnfInstance>(&mut out, "VnfInstance");
    add::<VnfLcmOpOcc>(&mut out, "VnfLcmOpOcc");
    add::<CreateVnfRequest>(&mut out, "CreateVnfRequest");
    add::<InstantiateVnfRequest>(&mut out, "InstantiateVnfRequest");
    add::<TerminateVnfRequest>(&mut out, "TerminateVnfRequest");
    add::<HealVnfRequest>(&mut out, "HealVnfRequest");
    add::<ScaleVnfRequest>(&mut out, "ScaleVnfRequest");
    add::<ScaleVnfToLevelRequest>(&mut out, "ScaleVnfToLevelRequest");
    add::<ChangeVnfFlavourRequest>(&mut out, "ChangeVnfFlavourRequest");
    add::<OperateVnfRequest>(&mut out, "OperateVnfRequest");
    add::<ChangeExtVnfConnectivityRequest>(&mut out, "ChangeExtVnfConnectivityRequest");
    add::<ChangeCurrentVnfPkgRequest>(&mut out, "ChangeCurrentVnfPkgRequest");
    add::<VnfInfoModificationRequest>(&mut out, "VnfInfoModificationRequest");
    add::<CancelMode>(&mut out, "CancelMode");
    add::<LccnSubscriptionRequest>(&mut out, "LccnSubscriptionRequest");
    add::<LccnSubscription>(&mut out, "LccnSubscription");
    add::<ProblemDetails>(&mut out, "ProblemDetails");
    add::<VnfPkgInfo>(&mut out, "VnfPkgInfo");
    add::<CreateVnfPkgInfoRequest>(&mut out, "CreateVnfPkgInfoRequest");
    add::<VnfPkgInfoModifications>(&mut out, "VnfPkgInfoModifications");
    add::<UploadVnfPackageFromUriRequest>(&mut out, "UploadVnfPackageFromUriRequest");
    add::<PkgmSubscriptionRequest>(&mut out, "PkgmSubscriptionRequest");
    add::<PkgmSubscription>(&mut out, "PkgmSubscription");
    add::<VnfPackageOnboardingNotification>(&mut out, "VnfPackageOnboardingNotification");
    add::<VnfPackageChangeNotification>(&mut out, "VnfPackageChangeNotification");
    add::<Alarm>(&mut out, "Alarm");
    add::<AlarmModifications>(&mut out, "AlarmModifications");
    add::<vnfm_types::PerceivedSeverityRequest>(&mut out, "PerceivedSeverityRequest");
    add::<FmSubscriptionRequest>(&mut out, "FmSubscriptionRequest");
    add::<FmSubscription>(&mut out, "FmSubscription");
    add::<PmJob>(&mut out, "PmJob");
    add::<CreatePmJobRequest>(&mut out, "CreatePmJobRequest");
    add::<vnfm_types::CreatePmJobRequestV1>(&mut out, "CreatePmJobRequestV1");
    add::<vnfm_types::CreateThresholdRequestV1>(&mut out, "CreateThresholdRequestV1");
    add::<PmJobModifications>(&mut out, "PmJobModifications");
    add::<PerformanceReport>(&mut out, "PerformanceReport");
    add::<Threshold>(&mut out, "Threshold");
    add::<CreateThresholdRequest>(&mut out, "CreateThresholdRequest");
    add::<ThresholdModifications>(&mut out, "ThresholdModifications");
    add::<PmSubscriptionRequest>(&mut out, "PmSubscriptionRequest");
    add::<PmSubscription>(&mut out, "PmSubscription");
    add::<VnfIndicator>(&mut out, "VnfIndicator");
    add::<VnfIndicatorSubscriptionRequest>(&mut out, "VnfIndicatorSubscriptionRequest");
    add::<VnfIndicatorSubscription>(&mut out, "VnfIndicatorSubscription");
    add::<VnfIndicatorValueChangeNotification>(&mut out, "VnfIndicatorValueChangeNotification");
    out.insert(
        "ApiVersionInformation".into(),
        serde_json::json!({
            "type": "object", "required": ["uriPrefix", "apiVersions"],
            "properties": {
                "uriPrefix": {"type": "string"},
                "apiVersions": {"type": "array", "items": {
                    "type": "object", "required": ["version"],
                    "properties": {"version": {"type": "string"}, "isDeprecated": {"type": "boolean"},
                                   "retirementDate": {"type": "string", "format": "date-time"}}}}
            }
        }),
    );
    let vim = serde_json::json!({
        "type": "object",
        "description": "A registered VIM: vimConnectionInfo members plus a name; secret members of accessInfo read \"***\".",
        "required": ["name", "vimType"],
        "properties": {
            "id": {"type": "string"}, "name": {"type": "string"}, "vimType": {"type": "string"},
            "interfaceInfo": {"type": "object"}, "accessInfo": {"type": "object"},
            "extra": {"type": "object"}, "createdByInstance": {"type": "string"},
            "usedByInstances": {"type": "array", "items": {"type": "string"}},
            "version": {"type": "integer"}
        }
    });
    out.insert(
        "OpOccProgress".into(),
        serde_json::json!({
            "type": "object",
            "description": "An operation occurrence's plan from its step journal: the phase (forward or rollback), each step's status, and the step running now or that failed (a retry resumes there).",
            "required": ["vnfLcmOpOccId", "operationState", "steps"],
            "properties": {
                "vnfLcmOpOccId": {"type": "string"},
                "operationState": {"type": "string"},
                "phase": {"type": "string", "enum": ["forward", "rollback"]},
                "currentStep": {"type": "string"},
                "steps": {"type": "array", "items": {
                    "type": "object", "required": ["number", "name", "status"],
                    "properties": {
                        "number": {"type": "integer"}, "name": {"type": "string"},
                        "status": {"type": "string", "enum": ["COMPLETED", "RUNNING", "FAILED", "PENDING"]}
                    }}}
            }
        }),
    );
    out.insert(
        "DeadNotification".into(),
        serde_json::json!({
            "type": "object",
            "description": "A notification the deliverer gave up after retrying it for --notify-max-age-hours.",
            "required": ["id", "subscriptionId", "callbackUri", "attempts", "notification"],
            "properties": {
                "id": {"type": "integer"}, "subscriptionId": {"type": "string"},
                "callbackUri": {"type": "string"}, "attempts": {"type": "integer"},
                "lastError": {"type": ["string", "null"]}, "notification": {"type": "object"}
            }
        }),
    );
    out.insert("VimView".into(), vim.clone());
    out.insert("VimCreate".into(), vim.clone());
    out.insert("VimUpdate".into(), vim);
    out
}

/// Rewrites schemars' `#/$defs/X` references to `#/components/schemas/X`.
fn relocate_refs(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get_mut("$ref")
                && let Some(name) = r.strip_prefix("#/$defs/")
            {
                *r = format!("#/components/schemas/{name}");
            }
            m.values_mut().for_each(relocate_refs);
        }
        Value::Array(items) => items.iter_mut().for_each(relocate_refs),
        _ => {}
    }
}

fn schema_ref(name: &str) -> RefOr<Schema> {
    if let Some(inner) = name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
        let array = utoipa::openapi::schema::ArrayBuilder::new()
            .items(RefOr::Ref(Ref::from_schema_name(inner)))
            .build();
        RefOr::T(Schema::Array(array))
    } else {
        RefOr::Ref(Ref::from_schema_name(name))
    }
}

fn method(m: &str) -> HttpMethod {
    match m {
        "POST" => HttpMethod::Post,
        "PUT" => HttpMethod::Put,
        "PATCH" => HttpMethod::Patch,
        "DELETE" => HttpMethod::Delete,
        _ => HttpMethod::Get,
    }
}

fn build() -> OpenApi {
    let mut paths = PathsBuilder::new();
    let mut grouped: BTreeMap<&str, Vec<&OperationDoc>> = BTreeMap::new();
    for o in OPERATIONS {
        grouped.entry(o.path).or_default().push(o);
    }
    for (path, ops) in grouped {
        let mut item: Option<PathItem> = None;
        for o in ops {
            let mut b = OperationBuilder::new()
                .summary(Some(o.summary))
                .operation_id(Some(format!(
                    "{}{}",
                    o.method.to_ascii_lowercase(),
                    o.path.replace(['/', '{', '}', '.'], "_")
                )))
                .tag(o.path.split('/').nth(1).unwrap_or("ops"));
            for seg in o.path.split('/') {
                if let Some(name) = seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                    b = b.parameter(
                        ParameterBuilder::new()
                            .name(name)
                            .parameter_in(ParameterIn::Path)
                            .required(utoipa::openapi::Required::True)
                            .build(),
                    );
                }
            }
            if o.path.starts_with("/vnflcm/v2") || o.path.starts_with("/vnfpkgm/v2") {
                b = b.parameter(
                    ParameterBuilder::new()
                        .name("Version")
                        .parameter_in(ParameterIn::Header)
                        .required(utoipa::openapi::Required::True)
                        .description(Some("API version, e.g. 2.0.0 (SOL013 clause 4.9)"))
                        .build(),
                );
            }
            if let Some(req) = o.request {
                let media = if o.method == "PATCH" {
                    "application/merge-patch+json"
                } else {
                    "application/json"
                };
                b = b.request_body(Some(
                    RequestBodyBuilder::new()
                        .content(
                            media,
                            ContentBuilder::new().schema(Some(schema_ref(req))).build(),
                        )
                        .required(Some(utoipa::openapi::Required::True))
                        .build(),
                ));
            }
            let mut ok = ResponseBuilder::new().description(
                StatusCode::from_u16(o.status)
                    .ok()
                    .and_then(|s| s.canonical_reason())
                    .unwrap_or("OK"),
            );
            if let Some(resp) = o.response {
                ok = ok.content(
                    "application/json",
                    ContentBuilder::new().schema(Some(schema_ref(resp))).build(),
                );
            }
            b = b.response(o.status.to_string(), ok.build());
            b = b.response(
                "default",
                ResponseBuilder::new()
                    .description("Error (ProblemDetails)")
                    .content(
                        "application/problem+json",
                        ContentBuilder::new()
                            .schema(Some(schema_ref("ProblemDetails")))
                            .build(),
                    )
                    .build(),
            );
            let public = matches!(o.path, "/oauth2/token" | "/healthz" | "/readyz");
            if !public {
                b = b
                    .security(SecurityRequirement::new("oauth2", Vec::<String>::new()))
                    .security(SecurityRequirement::new("basic", Vec::<String>::new()))
                    .security(SecurityRequirement::new("keystone", Vec::<String>::new()));
            }
            let operation = b.build();
            item = Some(match item {
                None => PathItem::new(method(o.method), operation),
                Some(mut existing) => {
                    let single = PathItem::new(method(o.method), operation);
                    existing.merge_operations(single);
                    existing
                }
            });
        }
        if let Some(item) = item {
            paths = paths.path(path, item);
        }
    }
    let mut components = ComponentsBuilder::new()
        .security_scheme(
            "oauth2",
            SecurityScheme::OAuth2(OAuth2::new([Flow::ClientCredentials(
                ClientCredentials::new("/oauth2/token", Scopes::new()),
            )])),
        )
        .security_scheme(
            "basic",
            SecurityScheme::Http(Http::new(HttpAuthScheme::Basic)),
        )
        .security_scheme(
            "keystone",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "X-Auth-Token",
                "An OpenStack Keystone token; accepted when the server runs with --keystone-url",
            ))),
        );
    for (name, mut schema) in component_schemas() {
        relocate_refs(&mut schema);
        let parsed: Schema = serde_json::from_value(schema).unwrap_or_else(|_| {
            Schema::Object(
                utoipa::openapi::schema::ObjectBuilder::new()
                    .description(Some(format!("see the {name} type")))
                    .build(),
            )
        });
        components = components.schema(name, parsed);
    }
    OpenApiBuilder::new()
        .info(
            InfoBuilder::new()
                .title("VNF Manager (ETSI NFV SOL003)")
                .version(env!("CARGO_PKG_VERSION"))
                .description(Some(
                    "VNF lifecycle management (SOL003 v3.3.1 under /vnflcm/v2, v2.6.1 under /vnflcm/v1), \
                     VNF package management, subscriptions and the VIM registry.",
                ))
                .build(),
        )
        .paths(paths.build())
        .components(Some(components.build()))
        .build()
}

/// The document as JSON.
pub fn document() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| serde_json::to_value(build()).unwrap_or_default())
}

/// `GET /openapi.json`.
pub(crate) async fn serve_document() -> Response {
    json_response(StatusCode::OK, document())
}
