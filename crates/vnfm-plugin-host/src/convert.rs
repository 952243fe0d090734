//! Conversions between the plugin ABI's wire types (`vnfm-plugin-abi`) and the lifecycle
//! core's SOL types (`vnfm-driver-api`, `vnfm-types`).
//!
//! The ABI is frozen and carries SOL payloads as JSON or as its own small structs; this module
//! is the one place that maps them, field by field, so that a change of a SOL type shows up
//! here as a compile error instead of as a silent change of the wire format.

use vnfm_driver_api::{HookAlarm, HookCall, HookOutcome, VimRegistration};
use vnfm_plugin_abi::{
    AlarmReport, ArtifactRef, HookOutput, HookRequest, VimConnection, VimToRegister,
};
use vnfm_types::{VimConnectionInfo, VimId};

/// The wire form of a VIM connection.
pub fn vim_to_wire(info: &VimConnectionInfo) -> VimConnection {
    VimConnection {
        vim_id: info.vim_id.as_ref().map(|id| id.as_str().to_string()),
        vim_type: info.vim_type.clone(),
        interface_info: info.interface_info.clone(),
        access_info: info.access_info.clone(),
        extra: info.extra.clone(),
    }
}

/// The SOL form of a VIM connection a plugin returned.
pub fn vim_from_wire(vim: VimConnection) -> VimConnectionInfo {
    VimConnectionInfo {
        vim_id: vim.vim_id.map(VimId::from),
        vim_type: vim.vim_type,
        interface_info: vim.interface_info,
        access_info: vim.access_info,
        extra: vim.extra,
    }
}

/// The request the host sends for `call`. The deadline is the time left now.
pub fn hook_request(call: &HookCall) -> HookRequest {
    HookRequest {
        hook: call.operation.clone(),
        lcm_operation: serde_json::to_value(call.lcm_operation)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default(),
        op_occ_id: call.op_occ_id.to_string(),
        artifact: ArtifactRef {
            name: call.artifact.name.clone(),
            file: call.artifact.file.clone(),
            artifact_type: call.artifact.artifact_type.clone(),
            sha256: call.artifact.sha256.clone(),
        },
        inputs: call
            .inputs
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        request: call.request.clone(),
        instance: call.instance.clone(),
        vnfd: serde_json::to_value(&*call.vnfd).unwrap_or(serde_json::Value::Null),
        flavour_id: call.flavour_id.clone(),
        vim_connection_info: call
            .vims
            .iter()
            .map(|v| (v.connection_id.clone(), vim_to_wire(v.connection_info())))
            .collect(),
        deadline_ms: u64::try_from(call.control.remaining().as_millis()).unwrap_or(u64::MAX),
        error_handling_data: call.error_handling_data.clone(),
        // The hook's span (`lcm.hook`) is current while the host converts the call.
        traceparent: vnfm_trace::traceparent(&tracing::Span::current()),
    }
}

/// The request the host sends for an observation (`OBSERVE_HOOK`, no operation). The deadline
/// is the time left now.
pub fn observe_request(call: &vnfm_driver_api::ObserveCall) -> HookRequest {
    HookRequest {
        hook: vnfm_plugin_abi::protocol::OBSERVE_HOOK.to_owned(),
        lcm_operation: String::new(),
        op_occ_id: String::new(),
        artifact: ArtifactRef {
            name: call.artifact.name.clone(),
            file: call.artifact.file.clone(),
            artifact_type: call.artifact.artifact_type.clone(),
            sha256: call.artifact.sha256.clone(),
        },
        inputs: Default::default(),
        request: serde_json::Value::Null,
        instance: call.instance.clone(),
        vnfd: serde_json::to_value(&*call.vnfd).unwrap_or(serde_json::Value::Null),
        flavour_id: call.flavour_id.clone(),
        vim_connection_info: call
            .vims
            .iter()
            .map(|v| (v.connection_id.clone(), vim_to_wire(v.connection_info())))
            .collect(),
        deadline_ms: u64::try_from(call.control.remaining().as_millis()).unwrap_or(u64::MAX),
        error_handling_data: serde_json::Value::Null,
        traceparent: vnfm_trace::traceparent(&tracing::Span::current()),
    }
}

/// The lifecycle core's form of a VIM registration a hook asked for.
pub fn registration(vim: VimToRegister) -> VimRegistration {
    VimRegistration {
        name: vim.name,
        connection_id: vim.connection_id,
        info: vim_from_wire(vim.info),
    }
}

/// The lifecycle core's form of an alarm a hook reported; `Err` says which member is not a
/// SOL003 value.
pub fn alarm(report: AlarmReport) -> Result<HookAlarm, String> {
    fn sol<T: serde::de::DeserializeOwned>(
        member: &str,
        value: &str,
        allowed: &str,
    ) -> Result<T, String> {
        serde_json::from_value(serde_json::Value::String(value.to_owned()))
            .map_err(|_| format!("{member} {value:?} is not one of {allowed}"))
    }
    Ok(HookAlarm {
        severity: sol(
            "perceivedSeverity",
            &report.perceived_severity,
            "CRITICAL, MAJOR, MINOR, WARNING, INDETERMINATE, CLEARED",
        )?,
        event_type: sol(
            "eventType",
            &report.event_type,
            "COMMUNICATIONS_ALARM, PROCESSING_ERROR_ALARM, ENVIRONMENTAL_ALARM, QOS_ALARM, EQUIPMENT_ALARM",
        )?,
        vnfc_instance_id: report.vnfc_instance_id,
        fault_type: report.fault_type,
        probable_cause: report.probable_cause,
        details: report.fault_details,
    })
}

/// The lifecycle core's form of what a hook returned; `Err` names the first alarm that is
/// not valid SOL003 (by its index in `alarms`).
pub fn outcome(output: HookOutput) -> Result<HookOutcome, String> {
    let alarms = output
        .alarms
        .into_iter()
        .enumerate()
        .map(|(i, a)| alarm(a).map_err(|e| format!("alarms[{i}]: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(HookOutcome {
        vim_connection_info_add: output
            .vim_connection_info_add
            .into_iter()
            .map(|(k, v)| (k, vim_from_wire(v)))
            .collect(),
        vim_connection_info_remove: output.vim_connection_info_remove,
        metadata: output.metadata,
        extensions: output.extensions,
        // The plugin ABI has no instantiatedVnfInfo: a plugin reports through its inventory.
        instantiated_vnf_info: None,
        vims_to_register: output
            .vims_to_register
            .into_iter()
            .map(registration)
            .collect(),
        vims_to_deregister: output.vims_to_deregister,
        error_handling_data: output.error_handling_data,
        alarms,
        indicator_values: output.indicator_values,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn info() -> VimConnectionInfo {
        serde_json::from_value(json!({
            "vimId": "vim-7", "vimType": "ETSINFV.KUBERNETES.V_1",
            "interfaceInfo": {"endpoint": "https://k8s:6443"},
            "accessInfo": {"bearer_token": "tok"},
            "extra": {"dnsServer": "10.0.0.10"}
        }))
        .unwrap()
    }

    #[test]
    fn vims_round_trip_and_keep_their_json_form() {
        let sol = info();
        let wire = vim_to_wire(&sol);
        assert_eq!(wire.vim_id.as_deref(), Some("vim-7"));
        assert_eq!(
            serde_json::to_value(&wire).unwrap(),
            serde_json::to_value(&sol).unwrap()
        );
        assert_eq!(vim_from_wire(wire), sol);
    }

    #[test]
    fn outputs_become_outcomes_field_by_field() {
        let wire = vim_to_wire(&info());
        let out = HookOutput::none()
            .with_metadata("m", json!(1))
            .with_extension("e", json!(2))
            .deregister_vim("old-vim")
            .with_error_handling_data(json!({"step": 2}))
            .register_vim(VimToRegister {
                name: "cluster-a".into(),
                connection_id: Some("k8s".into()),
                info: wire.clone(),
            });
        let mut out = out;
        out.vim_connection_info_add.insert("added".into(), wire);
        out.vim_connection_info_remove.push("gone".into());
        let o = outcome(out).unwrap();
        assert_eq!(o.metadata.unwrap()["m"], 1);
        assert_eq!(o.extensions.unwrap()["e"], 2);
        assert_eq!(o.vims_to_deregister, vec!["old-vim".to_string()]);
        assert_eq!(o.error_handling_data, Some(json!({"step": 2})));
        assert_eq!(o.vim_connection_info_remove, vec!["gone".to_string()]);
        assert_eq!(o.vim_connection_info_add["added"], info());
        let reg = &o.vims_to_register[0];
        assert_eq!(reg.name, "cluster-a");
        assert_eq!(reg.connection_id.as_deref(), Some("k8s"));
        assert_eq!(reg.info, info());
        assert!(outcome(HookOutput::none()).unwrap().is_noop());
    }

    #[test]
    fn alarms_and_indicator_values_become_the_cores_and_bad_values_are_named() {
        let out = HookOutput::none()
            .report_alarm(
                AlarmReport::new("disk full", "MAJOR", "PROCESSING_ERROR_ALARM").of_vnfc("c1"),
            )
            .report_alarm(AlarmReport::new(
                "disk full",
                "CLEARED",
                "PROCESSING_ERROR_ALARM",
            ))
            .with_indicator("load", json!(3));
        let o = outcome(out).unwrap();
        assert_eq!(o.alarms[0].severity, vnfm_types::PerceivedSeverity::Major);
        assert_eq!(
            o.alarms[0].event_type,
            vnfm_types::EventType::ProcessingErrorAlarm
        );
        assert_eq!(o.alarms[0].vnfc_instance_id.as_deref(), Some("c1"));
        assert_eq!(o.alarms[1].severity, vnfm_types::PerceivedSeverity::Cleared);
        assert_eq!(o.indicator_values["load"], json!(3));
        let bad = HookOutput::none()
            .report_alarm(AlarmReport::new("x", "MAJOR", "QOS_ALARM"))
            .report_alarm(AlarmReport::new("y", "Major", "QOS_ALARM"));
        let err = outcome(bad).unwrap_err();
        assert!(
            err.starts_with("alarms[1]: perceivedSeverity \"Major\" is not one of CRITICAL"),
            "{err}"
        );
    }
}
