//! Observation of an instance's stack outside any operation: what the core raises as alarms.
//!
//! | condition | when | severity |
//! |---|---|---|
//! | `ERROR` | Nova reports a VNFC's server (`OS::Nova::Server`) in status `ERROR` | CRITICAL |
//! | the Heat status, e.g. `CHECK_FAILED` | a resource of the stack (or of a nested stack) is in a `*_FAILED` status, e.g. marked unhealthy | MAJOR |
//!
//! One request lists the stack's resources (to the configured nesting depth); Nova is asked
//! only about the VNFCs whose compute resource is a Nova server, when the VIM's catalog has
//! a compute service. A resource that owns a
//! nested stack is not reported when a resource inside it failed: that one is. A server Nova
//! reports in `ERROR` is reported once, as `ERROR`, whatever Heat says of it.

use std::collections::BTreeSet;

use vnfm_driver_api::inventory::resource_handle;
use vnfm_driver_api::{DriverError, ObserveRequest, ObservedCondition};
use vnfm_types::{EventType, FaultyResourceType, PerceivedSeverity};

use crate::driver::{DriverState, OPENSTACK_VIM_TYPE, OpenStackDriver};
use crate::error::cut;
use crate::heat::{Heat, HeatResource, StackRef};
use crate::nova::Nova;

/// The Heat resource type of a Nova server.
const SERVER: &str = "OS::Nova::Server";

/// The faulty resource type of a Heat resource type.
fn resource_type_of(heat_type: &str) -> FaultyResourceType {
    if heat_type.starts_with("OS::Cinder::") {
        FaultyResourceType::Storage
    } else if heat_type.starts_with("OS::Neutron::") {
        FaultyResourceType::Network
    } else {
        FaultyResourceType::Compute
    }
}

impl OpenStackDriver {
    /// What is wrong with the stack of `req`'s instance now.
    pub(crate) async fn observe_stack(
        &self,
        req: &ObserveRequest,
    ) -> Result<Vec<ObservedCondition>, DriverError> {
        if req.driver_state.is_null() {
            return Ok(Vec::new());
        }
        let state: DriverState = serde_json::from_value(req.driver_state.clone()).map_err(|e| {
            DriverError::invalid_input(format!("the recorded driver state is unreadable: {e}"))
        })?;
        let vim = req
            .vims
            .iter()
            .filter(|v| v.vim_type() == OPENSTACK_VIM_TYPE)
            .find(|v| v.connection_id == state.vim_connection_id)
            .ok_or_else(|| {
                DriverError::invalid_input(format!(
                    "the instance has no VIM connection `{}` of type {OPENSTACK_VIM_TYPE}",
                    state.vim_connection_id
                ))
            })?;
        let session = self.session(vim)?;
        let vnfcs: Vec<(&str, &str, bool)> = req
            .instance
            .instantiated_vnf_info
            .as_ref()
            .and_then(|i| i.vnfc_resource_info.as_ref())
            .into_iter()
            .flatten()
            .map(|v| {
                let server = v.compute_resource.vim_level_resource_type.as_deref() == Some(SERVER);
                (
                    v.id.as_str(),
                    v.compute_resource.resource_id.as_str(),
                    server,
                )
            })
            .collect();
        let vnfc_of = |physical: &str| {
            vnfcs
                .iter()
                .find(|(_, r, _)| *r == physical)
                .map(|(id, _, _)| id.to_string())
        };
        let mut out = Vec::new();
        let mut reported = BTreeSet::new();
        // A catalog without a compute service (a test cloud of Keystone and Heat alone) has
        // no server statuses to read.
        if vnfcs.iter().any(|(_, _, server)| *server)
            && session.offers(&req.control, "compute").await?
        {
            let nova = Nova::connect(&session, &req.control, self.config().poll.clone()).await?;
            for (vnfc, server, _) in vnfcs.iter().filter(|(_, _, s)| *s) {
                let Some(s) = nova.server(server).await? else {
                    continue;
                };
                if s.status != "ERROR" {
                    continue;
                }
                let mut c = ObservedCondition::new(
                    "ERROR",
                    PerceivedSeverity::Critical,
                    resource_handle(*server, SERVER, Some(&vim.connection_id)),
                    FaultyResourceType::Compute,
                )
                .on_vnfc(*vnfc);
                if let Some(f) = s.fault.as_ref().filter(|f| !f.message.is_empty()) {
                    c = c.detail(session.redact(&cut(&f.message, 400)));
                }
                reported.insert(server.to_string());
                out.push(c);
            }
        }
        let heat = Heat::connect(&session, &req.control, self.config().poll.clone()).await?;
        let stack = StackRef {
            name: state.stack_name.clone(),
            id: state.stack_id.clone(),
        };
        let resources = heat.resources(&stack, self.config().nested_depth).await?;
        for r in deepest_failures(&resources) {
            if !reported.insert(r.physical_resource_id.clone()) {
                continue;
            }
            let id = if r.physical_resource_id.is_empty() {
                r.resource_name.as_str()
            } else {
                r.physical_resource_id.as_str()
            };
            let mut c = ObservedCondition::new(
                r.resource_status.clone(),
                PerceivedSeverity::Major,
                resource_handle(id, &r.resource_type, Some(&vim.connection_id)),
                resource_type_of(&r.resource_type),
            )
            .event(EventType::EquipmentAlarm)
            .detail(format!("Heat resource {}", r.resource_name));
            if let Some(reason) = r
                .resource_status_reason
                .as_deref()
                .filter(|s| !s.is_empty())
            {
                c = c.detail(session.redact(&cut(reason, 400)));
            }
            if let Some(vnfc) = vnfc_of(&r.physical_resource_id) {
                c = c.on_vnfc(vnfc);
            }
            out.push(c);
        }
        Ok(out)
    }
}

/// The failed resources (`*_FAILED`) that have no failed resource in their nested stack: a
/// resource owning a nested stack fails with the resource inside that failed (only the latter
/// is reported), but may also fail on its own (marked unhealthy itself).
fn deepest_failures(resources: &[HeatResource]) -> Vec<&HeatResource> {
    let failed: Vec<&HeatResource> = resources
        .iter()
        .filter(|r| r.resource_status.ends_with("_FAILED"))
        .collect();
    let failing_stacks: BTreeSet<String> = failed
        .iter()
        .filter_map(|r| r.stack().map(|s| s.id))
        .collect();
    failed
        .into_iter()
        .filter(|r| r.nested().is_none_or(|n| !failing_stacks.contains(&n.id)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(name: &str, status: &str, stack: &str, nested: Option<&str>) -> HeatResource {
        let mut links = vec![
            serde_json::json!({"rel": "stack", "href": format!("http://h/v1/p/stacks/s-{stack}/{stack}")}),
        ];
        if let Some(n) = nested {
            links.push(serde_json::json!({"rel": "nested", "href": format!("http://h/v1/p/stacks/s-{n}/{n}")}));
        }
        serde_json::from_value(serde_json::json!({
            "resource_name": name, "physical_resource_id": format!("id-{name}"),
            "resource_type": "T", "resource_status": status, "links": links,
        }))
        .unwrap()
    }

    #[test]
    fn only_the_deepest_failed_resources_are_reported() {
        let names = |rs: &[HeatResource]| -> Vec<String> {
            deepest_failures(rs)
                .into_iter()
                .map(|r| r.resource_name.clone())
                .collect()
        };
        // A group member failed because the server inside it did: the server is reported.
        let rs = [
            resource("member", "UPDATE_FAILED", "top", Some("m1")),
            resource("server", "CHECK_FAILED", "m1", None),
            resource("port", "CREATE_COMPLETE", "m1", None),
        ];
        assert_eq!(names(&rs), ["server"]);
        // A resource owning a nested stack marked unhealthy itself is reported.
        let rs = [
            resource("vdu", "CHECK_FAILED", "top", Some("m2")),
            resource("inner", "CREATE_COMPLETE", "m2", None),
        ];
        assert_eq!(names(&rs), ["vdu"]);
    }

    #[test]
    fn heat_types_map_to_faulty_resource_types() {
        assert_eq!(
            resource_type_of("OS::Nova::Server"),
            FaultyResourceType::Compute
        );
        assert_eq!(
            resource_type_of("OS::Cinder::Volume"),
            FaultyResourceType::Storage
        );
        assert_eq!(
            resource_type_of("OS::Neutron::Port"),
            FaultyResourceType::Network
        );
        assert_eq!(
            resource_type_of("OS::Heat::TestResource"),
            FaultyResourceType::Compute
        );
    }
}
