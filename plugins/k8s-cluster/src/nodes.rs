//! Finding the cluster's nodes and their addresses in `instantiatedVnfInfo`.

use vnfm_plugin_sdk::PluginError;
use vnfm_types::{VnfInstance, VnfcResourceInfo};

use crate::params::{NodeParams, NodeRecord};

/// Master or worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Control plane.
    Master,
    /// Worker.
    Worker,
}

impl Role {
    /// `master` / `worker`.
    pub fn name(self) -> &'static str {
        match self {
            Role::Master => "master",
            Role::Worker => "worker",
        }
    }
}

/// The first IP address of the VNFC's CP of CPD `cpd`.
pub fn cp_address(vnfc: &VnfcResourceInfo, cpd: &str) -> Option<String> {
    vnfc.vnfc_cp_info
        .as_ref()?
        .iter()
        .filter(|cp| cp.cpd_id == cpd)
        .flat_map(|cp| cp.cp_protocol_info.iter().flatten())
        .filter_map(|p| p.ip_over_ethernet.as_ref())
        .flat_map(|e| e.ip_addresses.iter().flatten())
        .flat_map(|a| a.addresses.iter().flatten())
        .next()
        .cloned()
}

fn has_cp(vnfc: &VnfcResourceInfo, cpd: &str) -> bool {
    vnfc.vnfc_cp_info
        .as_ref()
        .is_some_and(|cps| cps.iter().any(|cp| cp.cpd_id == cpd))
}

/// A Kubernetes node name for a VNFC: `<role>-<vnfc id>`, lowercased, with characters other
/// than letters, digits and `-` replaced by `-` (RFC 1123 labels).
pub fn node_name(role: Role, vnfc_id: &str) -> String {
    let id: String = vnfc_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let mut name = format!("{}-{}", role.name(), id.trim_matches('-'));
    name.truncate(63);
    name.trim_end_matches('-').to_string()
}

/// Whether `vnfc` has the role `params` describes.
pub fn is_of(vnfc: &VnfcResourceInfo, params: &NodeParams) -> bool {
    match &params.vdu_id {
        Some(vdu) => vnfc.vdu_id == *vdu,
        None => has_cp(vnfc, &params.ssh_cp_name),
    }
}

/// The nodes of a role, in creation order, with their addresses.
pub fn nodes(
    instance: &VnfInstance,
    role: Role,
    params: &NodeParams,
) -> Result<Vec<NodeRecord>, PluginError> {
    let vnfcs = instance
        .instantiated_vnf_info
        .as_ref()
        .and_then(|i| i.vnfc_resource_info.as_ref())
        .map(Vec::as_slice)
        .unwrap_or_default();
    let nic = params.nic_cp_name.as_deref().unwrap_or(&params.ssh_cp_name);
    vnfcs
        .iter()
        .filter(|v| is_of(v, params))
        .map(|v| {
            let ssh = cp_address(v, &params.ssh_cp_name).ok_or_else(|| {
                PluginError::invalid_input(format!(
                    "{} VNFC {} (VDU {}) has no IP address on CP `{}`; check ssh_cp_name and the VIM's port information",
                    role.name(),
                    v.id,
                    v.vdu_id,
                    params.ssh_cp_name
                ))
            })?;
            let node = cp_address(v, nic).ok_or_else(|| {
                PluginError::invalid_input(format!(
                    "{} VNFC {} (VDU {}) has no IP address on CP `{nic}` (nic_cp_name)",
                    role.name(),
                    v.id,
                    v.vdu_id
                ))
            })?;
            Ok(NodeRecord {
                vnfc_id: v.id.clone(),
                node_name: node_name(role, &v.id),
                ssh_address: ssh,
                node_address: node,
            })
        })
        .collect()
}

/// The address of any CP (VNFC or external) of CPD `cpd`, for a cluster VIP.
pub fn any_cp_address(instance: &VnfInstance, cpd: &str) -> Option<String> {
    let info = instance.instantiated_vnf_info.as_ref()?;
    let from_vnfcs = info
        .vnfc_resource_info
        .iter()
        .flatten()
        .find_map(|v| cp_address(v, cpd));
    from_vnfcs.or_else(|| {
        info.ext_cp_info
            .iter()
            .filter(|cp| cp.cpd_id == cpd)
            .flat_map(|cp| cp.cp_protocol_info.iter().flatten())
            .find_map(|p| {
                p.ip_over_ethernet
                    .as_ref()
                    .and_then(|e| e.ip_addresses.as_ref())
                    .and_then(|a| a.first())
                    .and_then(|a| a.addresses.as_ref())
                    .and_then(|a| a.first().cloned())
                    .or_else(|| {
                        p.virtual_cp_address
                            .as_ref()
                            .and_then(|v| v.load_balancer_ip.clone())
                    })
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_names_are_dns_labels() {
        assert_eq!(node_name(Role::Worker, "vnfc-0003"), "worker-vnfc-0003");
        assert_eq!(node_name(Role::Master, "VDU_1.a/b"), "master-vdu-1-a-b");
        let long = "x".repeat(80);
        assert_eq!(node_name(Role::Worker, &long).len(), 63);
    }
}
