//! The server's OpenAPI 3.1 document (built with utoipa), served at `/openapi.json` and
//! checked into `docs/openapi.json`.
//!
//! The operations come from the route table the router is built from (`route_table`, with
//! utoipa-axum); the request and response schemas are generated from the Rust types (schemars,
//! JSON Schema 2020-12, which OpenAPI 3.1 uses as its schema dialect) and placed under
//! `components/schemas`.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use axum::http::StatusCode;
use axum::response::Response;
use schemars::JsonSchema;
use serde_json::Value;
use utoipa::openapi::security::{
    ApiKey, ApiKeyValue, ClientCredentials, Flow, Http, HttpAuthScheme, OAuth2, Scopes,
    SecurityScheme,
};
use utoipa::openapi::{ComponentsBuilder, InfoBuilder, OpenApi, OpenApiBuilder, Schema};

use crate::util::json_response;

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
            "project": {"type": "string"},
            "shared": {"type": "boolean", "description": "Shared with every project: others read it without accessInfo and name it in requests; set by admins only."},
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
        "OpOccTimeline".into(),
        crate::journal_views::timeline_schema(),
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

fn build() -> OpenApi {
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
        .paths(crate::documented_operations().paths)
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
