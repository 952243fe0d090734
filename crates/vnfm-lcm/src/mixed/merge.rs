//! The outcome of a step of a mixed VNF: the union of its parts' outcomes (see the [module
//! documentation](super)); parts not called keep what they had.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use vnfm_driver_api::InfraOutcome;
use vnfm_types::{ExtManagedVirtualLinkInfo, ExtVirtualLinkInfo, ResourceChanges};

use super::state::View;
use super::{SplitByVim, SplitState};

impl SplitByVim {
    /// The union of the parts' outcomes; parts not called keep what they had.
    pub(super) fn merge(
        &self,
        views: Vec<View>,
        mut outcomes: BTreeMap<usize, InfraOutcome>,
    ) -> InfraOutcome {
        let mut out = InfraOutcome::default();
        let mut states = BTreeMap::new();
        let mut changes = ResourceChanges::default();
        for (i, view) in views.into_iter().enumerate() {
            let (resources, state) = match outcomes.remove(&i) {
                Some(o) => {
                    append_changes(&mut changes, o.resource_changes);
                    if out.vnf_state.is_none() {
                        out.vnf_state = o.vnf_state;
                    }
                    out.published_metadata.extend(o.published_metadata);
                    (o.resources, o.driver_state)
                }
                None => (view.resources, view.state),
            };
            if !state.is_null() {
                states.insert(self.parts[i].key.clone(), state);
            }
            let r = &mut out.resources;
            r.vnfc_resource_info.extend(resources.vnfc_resource_info);
            r.vnfc_info.extend(resources.vnfc_info);
            r.vnf_virtual_link_resource_info
                .extend(resources.vnf_virtual_link_resource_info);
            r.virtual_storage_resource_info
                .extend(resources.virtual_storage_resource_info);
            r.ext_cp_info.extend(resources.ext_cp_info);
            for l in resources.ext_virtual_link_info {
                merge_ext_link(&mut r.ext_virtual_link_info, l);
            }
            for m in resources.ext_managed_virtual_link_info {
                merge_managed_link(&mut r.ext_managed_virtual_link_info, m);
            }
        }
        let mut seen = BTreeSet::new();
        for v in &out.resources.vnfc_resource_info {
            if !seen.insert(v.id.as_str()) {
                tracing::warn!(vnfc = %v.id, "two VIMs of a mixed VNF report the same vnfcResourceInfo id");
            }
        }
        out.resource_changes = changes;
        out.driver_state = if states.is_empty() {
            Value::Null
        } else {
            serde_json::to_value(SplitState {
                vdu_vim_connections: self.mapping.clone(),
                by_vim: states,
            })
            .unwrap_or(Value::Null)
        };
        out
    }
}

fn append_changes(acc: &mut ResourceChanges, add: ResourceChanges) {
    fn ext<T>(into: &mut Option<Vec<T>>, more: Option<Vec<T>>) {
        if let Some(more) = more.filter(|m| !m.is_empty()) {
            into.get_or_insert_with(Vec::new).extend(more);
        }
    }
    ext(&mut acc.affected_vnfcs, add.affected_vnfcs);
    ext(&mut acc.affected_virtual_links, add.affected_virtual_links);
    ext(
        &mut acc.affected_ext_link_ports,
        add.affected_ext_link_ports,
    );
    ext(
        &mut acc.affected_virtual_storages,
        add.affected_virtual_storages,
    );
}

/// Adds `l` to `links`, merging it into the entry with its id: the ports and CP data of both.
fn merge_ext_link(links: &mut Vec<ExtVirtualLinkInfo>, l: ExtVirtualLinkInfo) {
    let Some(e) = links.iter_mut().find(|e| e.id == l.id) else {
        links.push(l);
        return;
    };
    for p in l.ext_link_ports.into_iter().flatten() {
        let ports = e.ext_link_ports.get_or_insert_with(Vec::new);
        if !ports.iter().any(|x| x.id == p.id) {
            ports.push(p);
        }
    }
    for c in l.current_vnf_ext_cp_data {
        if !e
            .current_vnf_ext_cp_data
            .iter()
            .any(|x| x.cpd_id == c.cpd_id)
        {
            e.current_vnf_ext_cp_data.push(c);
        }
    }
}

/// Adds `m` to `links`, merging its ports into the entry with its id.
fn merge_managed_link(links: &mut Vec<ExtManagedVirtualLinkInfo>, m: ExtManagedVirtualLinkInfo) {
    let Some(e) = links.iter_mut().find(|e| e.id == m.id) else {
        links.push(m);
        return;
    };
    for p in m.vnf_link_ports.into_iter().flatten() {
        let ports = e.vnf_link_ports.get_or_insert_with(Vec::new);
        if !ports.iter().any(|x| x.id == p.id) {
            ports.push(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;
    use serde_json::json;

    #[test]
    fn external_links_reported_by_several_parts_become_one() {
        let link = |ports: &[&str], cpds: &[&str]| -> ExtVirtualLinkInfo {
            serde_json::from_value(json!({
                "id": "ext", "resourceHandle": {"resourceId": "net"},
                "extLinkPorts": ports.iter().map(|p| json!({"id": p, "resourceHandle": {"resourceId": p}})).collect::<Vec<_>>(),
                "currentVnfExtCpData": cpds.iter().map(|c| json!({"cpdId": c, "cpConfig": {}})).collect::<Vec<_>>()
            }))
            .unwrap()
        };
        let mut links = Vec::new();
        merge_ext_link(&mut links, link(&["p1"], &["A"]));
        merge_ext_link(&mut links, link(&["p2", "p1"], &["B", "A"]));
        assert_eq!(links.len(), 1);
        assert_eq!(
            ids(links[0].ext_link_ports.as_deref().unwrap(), |p| &p.id),
            ["p1", "p2"]
        );
        assert_eq!(
            ids(&links[0].current_vnf_ext_cp_data, |c| &c.cpd_id),
            ["A", "B"]
        );
    }
}
