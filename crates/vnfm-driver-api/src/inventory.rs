//! Building blocks of a driver's inventory: the SOL003 resource records an
//! [`InstanceResources`] holds, and the `affected*` entries of the resource changes between
//! two inventories.
//!
//! Every infrastructure driver reads its VIM into an [`InstanceResources`] its own way (Heat
//! resources, pods and claims, ...), then reports what changed since the instance was last
//! recorded. The pieces that do not depend on the VIM live here: the resources an instance
//! records ([`recorded`]), stable ids ([`derived_id`]), resource handles ([`resource_handle`]),
//! the comparison of two lists of resources by id ([`diff`]) and the `affected*` entries
//! ([`affected_vnfc`], [`affected_vnfc_with_storage`], [`affected_virtual_link`],
//! [`affected_storage`]).
//!
//! ```
//! use vnfm_driver_api::inventory::{affected_storage, diff};
//! use vnfm_types::{ChangeType, ResourceHandle, VirtualStorageResourceInfo};
//!
//! let volume = |id: &str, backing: &str| VirtualStorageResourceInfo {
//!     id: id.into(),
//!     virtual_storage_desc_id: "VirtualStorage".into(),
//!     vnfd_id: None,
//!     storage_resource: ResourceHandle::new(backing),
//!     zone_id: None,
//!     reservation_id: None,
//!     metadata: None,
//! };
//! let before = [volume("a", "vol-1"), volume("b", "vol-2")];
//! let after = [volume("b", "vol-3"), volume("c", "vol-4")];
//! let d = diff(&before, &after);
//! let changed: Vec<_> = d.changed.iter().map(|(s, c)| (s.id.as_str(), *c)).collect();
//! assert_eq!(changed, [("b", ChangeType::Modified), ("c", ChangeType::Added)]);
//! assert_eq!(d.removed.len(), 1);
//! let gone = affected_storage(d.removed[0], ChangeType::Removed);
//! assert_eq!(gone.storage_resource.resource_id, "vol-1");
//! ```

use std::collections::{BTreeMap, BTreeSet};

use sha2::{Digest, Sha256};
use vnfm_types::{
    AffectedVirtualLink, AffectedVirtualStorage, AffectedVnfc, ChangeType, ResourceHandle,
    VirtualStorageResourceInfo, VnfInstance, VnfVirtualLinkResourceInfo, VnfcResourceInfo,
};

use crate::InstanceResources;

/// A 36-character id (UUID-shaped) derived from `parts`: the same parts always give the same
/// id, and parts are length-prefixed, so `["ab", "c"]` and `["a", "bc"]` differ.
pub fn derived_id(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p.as_bytes());
    }
    let d = hex::encode(&h.finalize()[..16]);
    format!(
        "{}-{}-{}-{}-{}",
        &d[0..8],
        &d[8..12],
        &d[12..16],
        &d[16..20],
        &d[20..32]
    )
}

/// A handle on the VIM resource `id` of type `kind` (`vimLevelResourceType`) on the VIM
/// connection `vim`.
pub fn resource_handle(id: impl Into<String>, kind: &str, vim: Option<&str>) -> ResourceHandle {
    let mut h = ResourceHandle::new(id);
    h.vim_connection_id = vim.map(str::to_string);
    h.vim_level_resource_type = Some(kind.to_string());
    h
}

/// The resources recorded on `instance` (empty when it is not instantiated).
pub fn recorded(instance: &VnfInstance) -> InstanceResources {
    let Some(info) = &instance.instantiated_vnf_info else {
        return InstanceResources::default();
    };
    InstanceResources {
        vnfc_resource_info: info.vnfc_resource_info.clone().unwrap_or_default(),
        vnfc_info: info.vnfc_info.clone().unwrap_or_default(),
        vnf_virtual_link_resource_info: info
            .vnf_virtual_link_resource_info
            .clone()
            .unwrap_or_default(),
        virtual_storage_resource_info: info
            .virtual_storage_resource_info
            .clone()
            .unwrap_or_default(),
        ext_cp_info: info.ext_cp_info.clone(),
        ext_virtual_link_info: info.ext_virtual_link_info.clone().unwrap_or_default(),
        ext_managed_virtual_link_info: info
            .ext_managed_virtual_link_info
            .clone()
            .unwrap_or_default(),
    }
}

/// A resource record with an id and the VIM resource behind it, as [`diff`] compares them.
pub trait Recorded {
    /// The record's id (`vnfcResourceInfo.id`, ...).
    fn record_id(&self) -> &str;
    /// The VIM resource that backs the record.
    fn backing(&self) -> &ResourceHandle;
}

impl Recorded for VnfcResourceInfo {
    fn record_id(&self) -> &str {
        &self.id
    }
    fn backing(&self) -> &ResourceHandle {
        &self.compute_resource
    }
}

impl Recorded for VnfVirtualLinkResourceInfo {
    fn record_id(&self) -> &str {
        &self.id
    }
    fn backing(&self) -> &ResourceHandle {
        &self.network_resource
    }
}

impl Recorded for VirtualStorageResourceInfo {
    fn record_id(&self) -> &str {
        &self.id
    }
    fn backing(&self) -> &ResourceHandle {
        &self.storage_resource
    }
}

/// What [`diff`] found between two lists of records.
#[derive(Debug, Clone, PartialEq)]
pub struct Diff<'a, T> {
    /// Records of the second list, in its order, whose id is new ([`ChangeType::Added`]) or
    /// whose backing resource id changed ([`ChangeType::Modified`], e.g. a healed server).
    pub changed: Vec<(&'a T, ChangeType)>,
    /// Records of the first list, in its order, whose id is gone.
    pub removed: Vec<&'a T>,
}

/// Compares `before` and `after` by record id: see [`Diff`].
pub fn diff<'a, T: Recorded>(before: &'a [T], after: &'a [T]) -> Diff<'a, T> {
    let old: BTreeMap<&str, &T> = before.iter().map(|r| (r.record_id(), r)).collect();
    let new: BTreeSet<&str> = after.iter().map(Recorded::record_id).collect();
    let changed = after
        .iter()
        .filter_map(|r| match old.get(r.record_id()) {
            None => Some((r, ChangeType::Added)),
            Some(o) if o.backing().resource_id != r.backing().resource_id => {
                Some((r, ChangeType::Modified))
            }
            Some(_) => None,
        })
        .collect();
    let removed = before
        .iter()
        .filter(|r| !new.contains(r.record_id()))
        .collect();
    Diff { changed, removed }
}

/// `v` as an affected VNFC of type `change`: its CPs, no metadata, and no storage added or
/// removed (e.g. a VNFC an operate step started or stopped, or a healed one).
pub fn affected_vnfc(v: &VnfcResourceInfo, change: ChangeType) -> AffectedVnfc {
    affected_vnfc_with_storage(v, change, Vec::new(), Vec::new())
}

/// [`affected_vnfc`] with the ids of the storage resources attached to (`added`) or detached
/// from (`removed`) the VNFC; an empty list is left out.
pub fn affected_vnfc_with_storage(
    v: &VnfcResourceInfo,
    change: ChangeType,
    added: Vec<String>,
    removed: Vec<String>,
) -> AffectedVnfc {
    AffectedVnfc {
        id: v.id.clone(),
        vdu_id: v.vdu_id.clone(),
        vnfd_id: v.vnfd_id.clone(),
        change_type: change,
        compute_resource: v.compute_resource.clone(),
        resource_definition_id: None,
        zone_id: v.zone_id.clone(),
        metadata: None,
        affected_vnfc_cp_ids: v
            .vnfc_cp_info
            .as_ref()
            .map(|cps| cps.iter().map(|c| c.id.clone()).collect()),
        added_storage_resource_ids: (!added.is_empty()).then_some(added),
        removed_storage_resource_ids: (!removed.is_empty()).then_some(removed),
    }
}

/// `v` as an affected virtual link of type `change`, with the ids of its link ports.
pub fn affected_virtual_link(
    v: &VnfVirtualLinkResourceInfo,
    change: ChangeType,
) -> AffectedVirtualLink {
    AffectedVirtualLink {
        id: v.id.clone(),
        vnf_virtual_link_desc_id: v.vnf_virtual_link_desc_id.clone(),
        vnfd_id: v.vnfd_id.clone(),
        change_type: change,
        network_resource: v.network_resource.clone(),
        vnf_link_port_ids: v
            .vnf_link_ports
            .as_ref()
            .map(|ps| ps.iter().map(|p| p.id.clone()).collect()),
        resource_definition_id: None,
        zone_id: None,
        metadata: None,
    }
}

/// `s` as an affected virtual storage of type `change`.
pub fn affected_storage(
    s: &VirtualStorageResourceInfo,
    change: ChangeType,
) -> AffectedVirtualStorage {
    AffectedVirtualStorage {
        id: s.id.clone(),
        virtual_storage_desc_id: s.virtual_storage_desc_id.clone(),
        vnfd_id: s.vnfd_id.clone(),
        change_type: change,
        storage_resource: s.storage_resource.clone(),
        resource_definition_id: None,
        zone_id: None,
        metadata: None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn vnfc(id: &str, server: &str) -> VnfcResourceInfo {
        serde_json::from_value(json!({
            "id": id, "vduId": "VDU1", "zoneId": "z1",
            "computeResource": {"resourceId": server},
            "vnfcCpInfo": [{"id": format!("cp-{id}"), "cpdId": "CP1"}]
        }))
        .unwrap()
    }

    fn vl(id: &str, net: &str) -> VnfVirtualLinkResourceInfo {
        serde_json::from_value(json!({
            "id": id, "vnfVirtualLinkDescId": "VL1",
            "networkResource": {"resourceId": net},
            "vnfLinkPorts": [{"id": "p1", "resourceHandle": {"resourceId": "port-1"}}]
        }))
        .unwrap()
    }

    #[test]
    fn derived_ids_are_stable_uuid_shaped_and_length_prefixed() {
        let a = derived_id(&["stack-1", "VDU1"]);
        assert_eq!(a, derived_id(&["stack-1", "VDU1"]));
        assert_ne!(a, derived_id(&["stack-1V", "DU1"]));
        assert_eq!(a.len(), 36);
        let groups: Vec<usize> = a.split('-').map(str::len).collect();
        assert_eq!(groups, [8, 4, 4, 4, 12]);
        assert!(a.chars().all(|c| c == '-' || c.is_ascii_hexdigit()));
    }

    #[test]
    fn handles_name_the_vim_and_the_resource_type() {
        let h = resource_handle("srv-1", "OS::Nova::Server", Some("vim-1"));
        assert_eq!(h.resource_id, "srv-1");
        assert_eq!(h.vim_connection_id.as_deref(), Some("vim-1"));
        assert_eq!(
            h.vim_level_resource_type.as_deref(),
            Some("OS::Nova::Server")
        );
        assert_eq!(resource_handle("x", "Pod", None).vim_connection_id, None);
    }

    #[test]
    fn diff_reports_added_replaced_and_removed_records_in_list_order() {
        let before = [vnfc("a", "srv-1"), vnfc("b", "srv-2"), vnfc("d", "srv-5")];
        let after = [vnfc("c", "srv-4"), vnfc("a", "srv-1"), vnfc("b", "srv-3")];
        let d = diff(&before, &after);
        let changed: Vec<(&str, ChangeType, &str)> = d
            .changed
            .iter()
            .map(|(v, c)| (v.id.as_str(), *c, v.compute_resource.resource_id.as_str()))
            .collect();
        assert_eq!(
            changed,
            [
                ("c", ChangeType::Added, "srv-4"),
                ("b", ChangeType::Modified, "srv-3")
            ]
        );
        let removed: Vec<&str> = d.removed.iter().map(|v| v.id.as_str()).collect();
        assert_eq!(removed, ["d"]);
        let same = diff(&after, &after);
        assert!(same.changed.is_empty() && same.removed.is_empty());
    }

    #[test]
    fn affected_vnfc_keeps_cps_and_leaves_out_empty_storage_lists() {
        let v = vnfc("a", "srv-1");
        let plain = affected_vnfc(&v, ChangeType::Modified);
        assert_eq!(plain.change_type, ChangeType::Modified);
        assert_eq!(plain.compute_resource.resource_id, "srv-1");
        assert_eq!(plain.zone_id.as_deref(), Some("z1"));
        assert_eq!(plain.affected_vnfc_cp_ids, Some(vec!["cp-a".to_string()]));
        assert_eq!(plain.added_storage_resource_ids, None);
        assert_eq!(plain.removed_storage_resource_ids, None);
        let removed =
            affected_vnfc_with_storage(&v, ChangeType::Removed, vec![], vec!["st-1".into()]);
        assert_eq!(removed.added_storage_resource_ids, None);
        assert_eq!(
            removed.removed_storage_resource_ids,
            Some(vec!["st-1".into()])
        );
    }

    #[test]
    fn affected_links_and_storage_copy_the_record() {
        let l = affected_virtual_link(&vl("vl-a", "net-1"), ChangeType::Added);
        assert_eq!(l.id, "vl-a");
        assert_eq!(l.vnf_virtual_link_desc_id, "VL1");
        assert_eq!(l.network_resource.resource_id, "net-1");
        assert_eq!(l.vnf_link_port_ids, Some(vec!["p1".to_string()]));
        let s: VirtualStorageResourceInfo = serde_json::from_value(json!({
            "id": "st-1", "virtualStorageDescId": "VS1", "vnfdId": "d1",
            "storageResource": {"resourceId": "vol-1"}
        }))
        .unwrap();
        let a = affected_storage(&s, ChangeType::Removed);
        assert_eq!(
            (
                a.id.as_str(),
                a.virtual_storage_desc_id.as_str(),
                a.change_type
            ),
            ("st-1", "VS1", ChangeType::Removed)
        );
        assert_eq!(a.vnfd_id.map(|d| d.to_string()).as_deref(), Some("d1"));
        assert_eq!(a.storage_resource.resource_id, "vol-1");
    }

    #[test]
    fn recorded_reads_the_instantiated_info_or_nothing() {
        let mut instance: VnfInstance = serde_json::from_value(json!({
            "id": "inst-1", "vnfdId": "d1", "vnfProvider": "Acme", "vnfProductName": "Demo",
            "vnfSoftwareVersion": "1.0", "vnfdVersion": "1.0",
            "instantiationState": "NOT_INSTANTIATED", "_links": {"self": {"href": "/i/inst-1"}}
        }))
        .unwrap();
        assert_eq!(recorded(&instance), InstanceResources::default());
        instance.instantiated_vnf_info = Some(
            serde_json::from_value(json!({
                "flavourId": "simple", "vnfState": "STARTED",
                "extCpInfo": [],
                "vnfcResourceInfo": [{"id": "a", "vduId": "VDU1",
                    "computeResource": {"resourceId": "srv-1"}}],
                "vnfVirtualLinkResourceInfo": [{"id": "vl", "vnfVirtualLinkDescId": "VL1",
                    "networkResource": {"resourceId": "net-1"}}]
            }))
            .unwrap(),
        );
        let r = recorded(&instance);
        assert_eq!(r.vnfc_resource_info.len(), 1);
        assert_eq!(r.vnf_virtual_link_resource_info[0].id, "vl");
        assert!(r.virtual_storage_resource_info.is_empty());
    }
}
