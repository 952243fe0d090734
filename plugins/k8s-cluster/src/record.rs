//! The installation parameters of the request and the cluster record kept in the instance's
//! metadata: reading them, and handing the record back as the hook's output.

use serde_json::Value;
use vnfm_plugin_sdk::{HookContext, HookOutput, PluginError};
use vnfm_types::VnfInstance;

use crate::PARAM_KEY;
use crate::params::{ClusterRecord, InstallParams, METADATA_KEY};

pub(crate) fn install_params(ctx: &HookContext<'_>) -> Result<Option<InstallParams>, PluginError> {
    let Some(v) = ctx.additional_params().and_then(|p| p.get(PARAM_KEY)) else {
        return Ok(None);
    };
    serde_json::from_value(v.clone()).map(Some).map_err(|e| {
        PluginError::invalid_input(format!("additionalParams.{PARAM_KEY} is not valid: {e}"))
    })
}

pub(crate) fn record_of(instance: &VnfInstance) -> Result<ClusterRecord, PluginError> {
    let v = instance
        .metadata
        .as_ref()
        .and_then(|m| m.get(METADATA_KEY))
        .filter(|v| !v.is_null())
        .ok_or_else(|| {
            PluginError::invalid_input(format!(
                "the instance has no metadata.{METADATA_KEY}: the cluster was not installed by this plugin's instantiate_end"
            ))
        })?;
    serde_json::from_value(v.clone()).map_err(|e| {
        PluginError::invalid_input(format!("metadata.{METADATA_KEY} cannot be read: {e}"))
    })
}

pub(crate) fn record_output(record: &ClusterRecord) -> HookOutput {
    HookOutput::none().with_metadata(
        METADATA_KEY,
        serde_json::to_value(record).unwrap_or(Value::Null),
    )
}

/// The recorded parameters with the request's credentials; the record.
pub(crate) fn recorded(
    ctx: &HookContext<'_>,
) -> Result<(ClusterRecord, InstallParams), PluginError> {
    let record = record_of(&ctx.instance_as::<VnfInstance>()?)?;
    let params = record
        .params
        .clone()
        .with_credentials_from(install_params(ctx)?.as_ref());
    Ok((record, params))
}

/// The `vimId` the instance's `vimConnectionInfo[key]` references.
pub(crate) fn cluster_vim_id(instance: &VnfInstance, key: &str) -> Option<String> {
    instance
        .vim_connection_info
        .as_ref()
        .and_then(|m| m.get(key))
        .and_then(|v| v.vim_id.as_ref())
        .map(|id| id.to_string())
}
