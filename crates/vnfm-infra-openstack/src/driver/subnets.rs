//! Subnets a template change replaces while ports still hold addresses on them.
//!
//! A change of template can replace a subnet of a network the stack keeps: a package without
//! BaseHOT (generated subnet `192.168.100.0/24`) changed to a BaseHOT whose subnet of the same
//! network is `192.168.3.0/24`, or a BaseHOT whose CIDR changed. Heat creates the new subnet
//! on the network, leaves the ports alone (their properties name the network, not the subnet)
//! and then fails to delete the old subnet: Neutron refuses while ports have addresses on it
//! (`One or more ports have an IP allocation from this subnet`, seen on the real Neutron). No
//! order of Heat's alone helps (the ports are unchanged resources, in nested stacks), so after
//! such a failure the driver moves the addresses itself: each port of the network with an
//! address on a subnet whose deletion Heat reported `DELETE_FAILED` gets an address on
//! another subnet of that network, the one the stack lists if it lists one (same IP version;
//! Neutron allocates it), and the update runs again, which deletes the old subnet.

use std::collections::BTreeSet;

use crate::neutron::{Neutron, Subnet};

use super::*;

const SUBNET: &str = "OS::Neutron::Subnet";

impl OpenStackDriver {
    /// Moves the ports of the stack's networks off the subnets that the failed action of
    /// `stack` could not delete, to the stack's current subnet of the same network. Answers
    /// how many ports moved (0: nothing of the kind, the failure stands).
    pub(super) async fn move_ports_off_refused_subnets(
        &self,
        heat: &Heat<'_>,
        ctx: &Ctx<'_>,
        stack: &Stack,
    ) -> Result<usize, DriverError> {
        if !stack.stack_status.ends_with("_FAILED") {
            return Ok(0);
        }
        let r = stack.reference();
        let refused: BTreeSet<String> = heat
            .events(&r, self.config.nested_depth)
            .await?
            .into_iter()
            .filter(|e| e.resource_status == "DELETE_FAILED" && e.during_last_action_of(stack))
            .filter_map(|e| e.physical_resource_id)
            .filter(|id| !id.is_empty())
            .collect();
        if refused.is_empty() {
            return Ok(0);
        }
        let resources = heat.resources(&r, self.config.nested_depth).await?;
        let of_types = |types: &[String]| -> BTreeSet<String> {
            resources
                .iter()
                .filter(|x| types.contains(&x.resource_type))
                .map(|x| x.physical_resource_id.clone())
                .filter(|id| !id.is_empty())
                .collect()
        };
        let held = of_types(&[SUBNET.to_string()]);
        let networks = of_types(&self.config.network_types);
        let neutron =
            Neutron::connect(&ctx.session, &ctx.req.control, self.config.poll.clone()).await?;
        let mut moved = 0;
        for network in &networks {
            let subnets = neutron.subnets(network).await?;
            let (old, kept): (Vec<_>, Vec<_>) =
                subnets.iter().partition(|s| refused.contains(&s.id));
            if old.is_empty() {
                continue;
            }
            let target = |version: u8| successor(&kept, &held, version);
            for port in neutron.ports(network).await? {
                // Neutron releases the addresses of its own ports (DHCP, router) itself.
                if port.device_owner.starts_with("network:") {
                    continue;
                }
                let mut fixed_ips = Vec::new();
                let mut changed = false;
                for ip in &port.fixed_ips {
                    let to = old
                        .iter()
                        .find(|o| o.id == ip.subnet_id)
                        .and_then(|o| target(o.ip_version));
                    match to {
                        Some(to) => {
                            let entry = json!({"subnet_id": to.id});
                            if !fixed_ips.contains(&entry) {
                                fixed_ips.push(entry);
                            }
                            changed = true;
                        }
                        None => fixed_ips
                            .push(json!({"subnet_id": ip.subnet_id, "ip_address": ip.ip_address})),
                    }
                }
                if changed {
                    neutron.set_fixed_ips(&port.id, fixed_ips).await?;
                    moved += 1;
                }
            }
        }
        Ok(moved)
    }
}

/// Where the addresses on a refused subnet of IP version `version` move: of the network's
/// other subnets (`kept`) of that version, the one the stack lists (`held`), else any. After
/// a failed replacement Heat may list the old subnet under the resource's name instead of
/// the new one (as it does for servers), so the stack's list alone can name none.
fn successor<'a>(kept: &[&'a Subnet], held: &BTreeSet<String>, version: u8) -> Option<&'a Subnet> {
    let same = || {
        kept.iter()
            .copied()
            .filter(move |s| s.ip_version == version)
    };
    same()
        .find(|s| held.contains(&s.id))
        .or_else(|| same().next())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subnet(id: &str, ip_version: u8) -> Subnet {
        Subnet {
            id: id.into(),
            ip_version,
            cidr: String::new(),
        }
    }

    #[test]
    fn the_listed_subnet_of_the_version_is_the_successor_else_another_one() {
        let (other, new, v6) = (subnet("other", 4), subnet("new", 4), subnet("v6", 6));
        let kept = [&other, &new, &v6];
        let listed: BTreeSet<String> = ["new".to_string()].into();
        assert_eq!(
            successor(&kept, &listed, 4).map(|s| s.id.as_str()),
            Some("new")
        );
        assert_eq!(
            successor(&kept, &listed, 6).map(|s| s.id.as_str()),
            Some("v6")
        );
        // Heat listed the old (refused) subnet: the network's other subnet still takes them.
        let old_listed: BTreeSet<String> = ["old".to_string()].into();
        assert_eq!(
            successor(&[&new], &old_listed, 4).map(|s| s.id.as_str()),
            Some("new")
        );
        assert_eq!(successor(&[&new], &old_listed, 6), None);
    }
}
