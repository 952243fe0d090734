//! A management driver for testing hosts.
//!
//! Every hook answers with a `metadata` patch `{"probe": {...}}` that says which method ran
//! and what the hook was given, and counts its attempts in the error handling data. The
//! hook's `inputs` (from the VNFD) or the request's `additionalParams.probe` make it
//! misbehave:
//!
//! | key | effect |
//! |---|---|
//! | `fail: {"kind": "transient" \| "permanent" \| "invalidInput", "message": "..."}` | fails |
//! | `panic: "message"` | panics |
//! | `sleep_ms: n` | sleeps `n` ms, stopping early when cancelled if `honour_cancel` is true |
//! | `abort: true` | aborts the whole process |
//! | `read: "path"` | reads a package file and reports its length |
//! | `log: "text"` | writes a log line |
//! | `alarms: [AlarmReport, ...]` | reports these faults (raised, or cleared with `CLEARED`) |
//! | `indicators: {"id": value, ...}` | reports these VNF indicator values |
//!
//! The probe also observes: outside operations, the VNFM asks it about each instantiated
//! instance whose VNFD binds it, and it answers with what the instance's
//! `metadata.probeObserve` says (the same keys; usually `alarms` and `indicators`).
//!
//! The `traceparent` it reports is the trace context the host gave the hook.
//!
//! Never bind it in a real VNFD: `abort` takes down an in-process host.

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use vnfm_plugin_sdk::{
    AlarmReport, HookContext, HookOutput, HookResult, MgmtDriver, PluginError, export_mgmt_driver,
};

/// The probe driver.
#[derive(Debug, Default)]
pub struct Probe;

fn settings(ctx: &HookContext<'_>) -> Map<String, Value> {
    let mut s = ctx
        .additional_params()
        .and_then(|p| p.get("probe"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for (k, v) in ctx.inputs() {
        s.insert(k.clone(), v.clone());
    }
    s
}

/// What an observation of the instance is told to do: its `metadata.probeObserve`.
fn observe_settings(ctx: &HookContext<'_>) -> Map<String, Value> {
    ctx.instance_json()
        .pointer("/metadata/probeObserve")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

fn probe(method: &str, ctx: &HookContext<'_>, s: Map<String, Value>) -> HookResult {
    if let Some(text) = s.get("log").and_then(Value::as_str) {
        ctx.log().info(text);
    }
    if let Some(fail) = s.get("fail") {
        let message = fail
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("the probe was told to fail")
            .to_string();
        return Err(match fail.get("kind").and_then(Value::as_str) {
            Some("transient") => PluginError::transient(message),
            Some("invalidInput") => PluginError::invalid_input(message),
            _ => PluginError::permanent(message),
        });
    }
    if let Some(msg) = s.get("panic").and_then(Value::as_str) {
        panic!("{msg}");
    }
    if s.get("abort").and_then(Value::as_bool) == Some(true) {
        std::process::abort();
    }
    let mut cancelled_early = false;
    if let Some(ms) = s.get("sleep_ms").and_then(Value::as_u64) {
        let honour = s.get("honour_cancel").and_then(Value::as_bool) == Some(true);
        let end = Instant::now() + Duration::from_millis(ms);
        while Instant::now() < end {
            if honour && ctx.is_cancelled() {
                cancelled_early = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        if cancelled_early {
            ctx.check("the probe's sleep")?;
        }
    }
    let read = match s.get("read").and_then(Value::as_str) {
        Some(path) => json!(ctx.package().read(path)?.len()),
        None => Value::Null,
    };
    let attempts = ctx
        .error_handling_data()
        .get("attempts")
        .and_then(Value::as_u64)
        .unwrap_or(0)
        + 1;
    let mut out = HookOutput::none();
    for alarm in s
        .get("alarms")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let alarm: AlarmReport = serde_json::from_value(alarm.clone())
            .map_err(|e| PluginError::invalid_input(format!("probe alarm: {e}")))?;
        out = out.report_alarm(alarm);
    }
    for (id, value) in s
        .get("indicators")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        out = out.with_indicator(id.clone(), value.clone());
    }
    Ok(out
        .with_metadata(
            "probe",
            json!({
                "method": method,
                "hook": ctx.hook(),
                "lcmOperation": ctx.lcm_operation(),
                "opOccId": ctx.op_occ_id(),
                "vnfInstanceId": ctx.vnf_instance_id(),
                "flavourId": ctx.flavour_id(),
                "artifact": ctx.artifact().name,
                "vimConnections": ctx.vim_connections().keys().collect::<Vec<_>>(),
                "previousData": ctx.error_handling_data(),
                "read": read,
                "traceparent": ctx.traceparent(),
            }),
        )
        .with_error_handling_data(json!({ "attempts": attempts })))
}

macro_rules! probes {
    ($($m:ident)*) => {
        impl MgmtDriver for Probe {
            fn observes(&self) -> bool {
                true
            }

            fn observe(&self, ctx: &HookContext<'_>) -> HookResult {
                probe("observe", ctx, observe_settings(ctx))
            }

            $(
                fn $m(&self, ctx: &HookContext<'_>) -> HookResult {
                    probe(stringify!($m), ctx, settings(ctx))
                }
            )*
        }
    };
}

probes! {
    instantiate_start instantiate_end instantiate_rollback_start instantiate_rollback_end
    terminate_start terminate_end terminate_rollback_start terminate_rollback_end
    modify_information_start modify_information_end modify_information_rollback_start modify_information_rollback_end
    change_flavour_start change_flavour_end change_flavour_rollback_start change_flavour_rollback_end
    change_external_connectivity_start change_external_connectivity_end
    change_external_connectivity_rollback_start change_external_connectivity_rollback_end
    operate_start operate_end operate_rollback_start operate_rollback_end
    heal_start heal_end heal_rollback_start heal_rollback_end
    scale_start scale_end scale_rollback_start scale_rollback_end
    scale_to_level_start scale_to_level_end scale_to_level_rollback_start scale_to_level_rollback_end
    change_current_package_start change_current_package_end
    change_current_package_rollback_start change_current_package_rollback_end
}

export_mgmt_driver!(Probe);
