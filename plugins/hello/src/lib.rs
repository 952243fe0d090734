//! The sample management driver: the whole file a plugin author writes.
//!
//! On `instantiate_end` it greets the new VNF in the log, reads the greeting from the package
//! file the hook's `inputs.greeting_file` names (if any), and records it with the number of
//! VNFCs in the instance's `metadata`; `terminate_end` removes that record again.

use serde_json::{Value, json};
use vnfm_plugin_sdk::{HookContext, HookOutput, HookResult, MgmtDriver, export_mgmt_driver};
use vnfm_types::VnfInstance;

/// The hello driver.
#[derive(Debug, Default)]
pub struct Hello;

impl MgmtDriver for Hello {
    fn instantiate_end(&self, ctx: &HookContext<'_>) -> HookResult {
        let greeting = match ctx.inputs().get("greeting_file").and_then(Value::as_str) {
            Some(path) => ctx.package().read_to_string(path)?.trim().to_string(),
            None => "hello".to_string(),
        };
        let vnfcs = ctx
            .instance_as::<VnfInstance>()?
            .instantiated_vnf_info
            .as_ref()
            .and_then(|i| i.vnfc_resource_info.as_ref())
            .map_or(0, Vec::len);
        ctx.log().info(format!(
            "{greeting}, {} ({vnfcs} VNFCs)",
            ctx.vnf_instance_id()
        ));
        Ok(
            HookOutput::none()
                .with_metadata("hello", json!({"greeting": greeting, "vnfcs": vnfcs})),
        )
    }

    fn terminate_end(&self, _ctx: &HookContext<'_>) -> HookResult {
        // A JSON Merge Patch: null removes the key.
        Ok(HookOutput::none().with_metadata("hello", Value::Null))
    }
}

export_mgmt_driver!(Hello);
