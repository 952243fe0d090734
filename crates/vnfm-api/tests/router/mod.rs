//! The router without a socket (`oneshot`): every resource, status code, header (Location,
//! Link, ETag, Version, Allow, WWW-Authenticate) and ProblemDetails case, with response bodies
//! checked against the ETSI v2.6.1 JSON schemas (v1) and the server's own schemas (v2).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::http::{Method, StatusCode};
use base64::Engine;
use serde_json::{Value, json};
use vnfm_driver_api::DriverError;
use vnfm_driver_api::infra::InfraOperation;

use crate::support;

use support::*;

/// A new instance of the hello package whose INSTANTIATE on the flaky driver failed once
/// with a transient "VIM unreachable": the instance id and the occurrence, in `FAILED_TEMP`.
async fn failed_temp_instantiate(h: &Harness) -> (String, Value) {
    h.onboard(zip_dir(Path::new(HELLO))).await;
    let id = h.create_instance().await;
    h.flaky.fail_next(
        InfraOperation::Instantiate,
        DriverError::transient("VIM unreachable"),
    );
    let occ = h
        .task(
            &id,
            "instantiate",
            json!({"flavourId": "simple", "vimConnectionInfo": {"v": {"vimType": FLAKY}}}),
        )
        .await;
    assert_eq!(occ["operationState"], "FAILED_TEMP", "{occ:#}");
    (id, occ)
}

fn etsi_schema(name: &str) -> jsonschema::Validator {
    crate::support::etsi_schema("VNFLifecycleManagement-API", name)
}

fn assert_valid(v: &jsonschema::Validator, doc: &Value) {
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}\n{doc:#}");
}

fn own_schema<T: schemars::JsonSchema>() -> jsonschema::Validator {
    let schema = serde_json::to_value(schemars::schema_for!(T)).unwrap();
    jsonschema::draft202012::new(&schema).unwrap()
}

mod instance_metadata;
mod lifecycle;
mod op_occ_grant;
mod package_subscriptions;
mod packages;
mod protocol;
mod timeline;
mod vims_nfvo;
