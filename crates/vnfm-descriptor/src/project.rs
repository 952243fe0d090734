//! Projections of a VNFD onto some of its VDUs: the descriptor one infrastructure driver gets
//! when a VNF's VDUs are spread over several VIMs (a "mixed VNF").

use std::collections::{BTreeMap, BTreeSet};

use crate::{Flavour, Vdu, Vnfd};

impl Vnfd {
    /// This VNFD with every flavour projected onto the VDUs `keep` selects
    /// ([`Flavour::project`]); `unowned` also keeps the nodes tied to no VDU.
    pub fn project(&self, keep: impl Fn(&Vdu) -> bool, unowned: bool) -> Vnfd {
        let mut out = self.clone();
        out.flavours = self
            .flavours
            .iter()
            .map(|f| f.project(&keep, unowned))
            .collect();
        out
    }
}

impl Flavour {
    /// This flavour restricted to the VDUs `keep` selects: those VDUs, their containers,
    /// virtual storages and VDU CPs, the internal virtual links those CPs attach to, the
    /// external CPs of those VDUs or links, the scaling aspects whose deltas name those VDUs
    /// (with only their deltas), the instantiation levels with only their counts (and the scale
    /// levels of the aspects kept), the placement rules with only those VDUs (rules left
    /// without VDUs are dropped), and the artifacts of those nodes plus those whose owner is
    /// no VDU and no container or storage a VDU uses (the VNF's own). With `unowned`, the nodes
    /// tied to no VDU are kept
    /// too: virtual links no CP attaches to, external CPs of no VDU or link, storages and
    /// containers no VDU uses, aspects without deltas.
    pub fn project(&self, keep: impl Fn(&Vdu) -> bool, unowned: bool) -> Flavour {
        let flavour = self;
        let mine = |v: &Vdu| keep(v);
        let vdus: Vec<Vdu> = flavour.vdus.iter().filter(|v| mine(v)).cloned().collect();
        let vdu_ids: BTreeSet<&str> = vdus.iter().map(|v| v.id.as_str()).collect();
        let all_vdus: BTreeSet<&str> = flavour.vdus.iter().map(|v| v.id.as_str()).collect();
        let owned = |vdu: Option<&String>| match vdu {
            Some(v) if all_vdus.contains(v.as_str()) => vdu_ids.contains(v.as_str()),
            // Tied to no VDU of the flavour.
            _ => unowned,
        };
        let vdu_cps: Vec<_> = flavour
            .vdu_cps
            .iter()
            .filter(|c| owned(c.vdu.as_ref()))
            .cloned()
            .collect();
        let attached: BTreeSet<&str> = flavour
            .vdu_cps
            .iter()
            .filter_map(|c| c.virtual_link.as_deref())
            .collect();
        let my_links: BTreeSet<&str> = vdu_cps
            .iter()
            .filter_map(|c| c.virtual_link.as_deref())
            .collect();
        let virtual_links: Vec<_> = flavour
            .virtual_links
            .iter()
            .filter(|l| {
                my_links.contains(l.id.as_str()) || (unowned && !attached.contains(l.id.as_str()))
            })
            .cloned()
            .collect();
        let link_ids: BTreeSet<&str> = virtual_links.iter().map(|l| l.id.as_str()).collect();
        let ext_cps = flavour
            .ext_cps
            .iter()
            .filter(|c| match (&c.vdu, &c.internal_virtual_link) {
                (Some(v), _) => owned(Some(v)),
                (None, Some(l)) => link_ids.contains(l.as_str()),
                (None, None) => unowned,
            })
            .cloned()
            .collect();
        let storage_users: BTreeSet<&str> = flavour
            .vdus
            .iter()
            .flat_map(|v| v.virtual_storages.iter().map(String::as_str))
            .collect();
        let my_storages: BTreeSet<&str> = vdus
            .iter()
            .flat_map(|v| v.virtual_storages.iter().map(String::as_str))
            .collect();
        let virtual_storages = flavour
            .virtual_storages
            .iter()
            .filter(|s| {
                my_storages.contains(s.id.as_str())
                    || (unowned && !storage_users.contains(s.id.as_str()))
            })
            .cloned()
            .collect();
        let container_users: BTreeSet<&str> = flavour
            .vdus
            .iter()
            .flat_map(|v| v.containers.iter().map(String::as_str))
            .collect();
        let my_containers: BTreeSet<&str> = vdus
            .iter()
            .flat_map(|v| v.containers.iter().map(String::as_str))
            .collect();
        let containers = flavour
            .containers
            .iter()
            .filter(|c| {
                my_containers.contains(c.id.as_str())
                    || (unowned && !container_users.contains(c.id.as_str()))
            })
            .cloned()
            .collect();
        let scaling_aspects: Vec<_> = flavour
            .scaling_aspects
            .iter()
            .filter_map(|a| {
                let deltas: BTreeMap<_, _> = a
                    .vdu_deltas
                    .iter()
                    .filter(|(v, _)| vdu_ids.contains(v.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                let keep = !deltas.is_empty() || (unowned && a.vdu_deltas.is_empty());
                keep.then(|| {
                    let mut a = a.clone();
                    a.vdu_deltas = deltas;
                    a
                })
            })
            .collect();
        let aspect_ids: BTreeSet<&str> = scaling_aspects.iter().map(|a| a.id.as_str()).collect();
        let instantiation_levels = flavour
            .instantiation_levels
            .iter()
            .map(|l| {
                let mut l = l.clone();
                l.vdu_instances.retain(|v, _| vdu_ids.contains(v.as_str()));
                l.scale_levels
                    .retain(|a, _| aspect_ids.contains(a.as_str()));
                l
            })
            .collect();
        let placement_rules = flavour
            .placement_rules
            .iter()
            .filter_map(|r| {
                let mut r = r.clone();
                r.vdus.retain(|v| vdu_ids.contains(v.as_str()));
                (!r.vdus.is_empty()).then_some(r)
            })
            .collect();
        // Artifacts of nodes of other parts (their images, manifests) are not the part's.
        let nodes: BTreeSet<&str> = all_vdus
            .iter()
            .copied()
            .chain(container_users.iter().copied())
            .chain(storage_users.iter().copied())
            .collect();
        let my_nodes: BTreeSet<&str> = vdu_ids
            .iter()
            .copied()
            .chain(my_containers.iter().copied())
            .chain(my_storages.iter().copied())
            .collect();
        let artifacts = flavour
            .artifacts
            .iter()
            .filter(|a| !nodes.contains(a.owner.as_str()) || my_nodes.contains(a.owner.as_str()))
            .cloned()
            .collect();
        Flavour {
            id: flavour.id.clone(),
            description: flavour.description.clone(),
            file: flavour.file.clone(),
            vdus,
            containers,
            virtual_storages,
            vdu_cps,
            ext_cps,
            virtual_links,
            scaling_aspects,
            instantiation_levels,
            default_instantiation_level: flavour.default_instantiation_level.clone(),
            placement_rules,
            lcm_hooks: flavour.lcm_hooks.clone(),
            artifacts,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::VduKind;

    /// A flavour with a VM and a container VDU, each with its storage or containers, CPs on
    /// both, scaling aspects over either and both, a placement rule and artifacts (shared
    /// with `vnfm-lcm`'s mixed-VNF tests).
    fn flavour() -> Flavour {
        serde_json::from_str(include_str!("../testdata/mixed-flavour.json")).unwrap()
    }

    fn ids<T>(v: &[T], f: impl Fn(&T) -> &str) -> Vec<String> {
        v.iter().map(|x| f(x).to_string()).collect()
    }

    #[test]
    fn a_flavour_is_projected_onto_the_nodes_of_its_vdus() {
        let f = flavour();
        let vm = f.project(|v| v.kind == VduKind::Compute, true);
        assert_eq!(ids(&vm.vdus, |v| &v.id), ["VM"]);
        assert_eq!(ids(&vm.vdu_cps, |c| &c.id), ["VM_CP"]);
        // Its CP's link, and the link no CP uses (first part only).
        assert_eq!(ids(&vm.virtual_links, |l| &l.id), ["VL1", "UNUSED"]);
        assert_eq!(ids(&vm.ext_cps, |c| &c.id), ["EXT_VL1"]);
        assert_eq!(ids(&vm.virtual_storages, |s| &s.id), ["VS", "LOOSE"]);
        assert!(vm.containers.is_empty());
        assert_eq!(ids(&vm.scaling_aspects, |a| &a.id), ["both", "none"]);
        assert_eq!(
            vm.scaling_aspects[0].vdu_deltas.keys().collect::<Vec<_>>(),
            ["VM"]
        );
        let level = &vm.instantiation_levels[0];
        assert_eq!(level.vdu_instances, BTreeMap::from([("VM".into(), 1)]));
        assert_eq!(
            level.scale_levels,
            BTreeMap::from([("both".into(), 0), ("none".into(), 0)])
        );
        assert_eq!(vm.placement_rules.len(), 1);
        assert_eq!(ids(&vm.artifacts, |a| &a.name), ["img", "mgmt"]);

        let pod = f.project(|v| v.id == "POD", false);
        assert_eq!(ids(&pod.vdus, |v| &v.id), ["POD"]);
        assert_eq!(ids(&pod.virtual_links, |l| &l.id), ["VL2"]);
        assert_eq!(ids(&pod.ext_cps, |c| &c.id), ["POD_CP"]);
        assert!(pod.virtual_storages.is_empty());
        assert_eq!(ids(&pod.containers, |c| &c.id), ["C"]);
        assert_eq!(ids(&pod.scaling_aspects, |a| &a.id), ["both", "pods"]);
        assert!(pod.placement_rules.is_empty());
        assert_eq!(ids(&pod.artifacts, |a| &a.name), ["manifest", "mgmt"]);
        assert_eq!(
            pod.instantiation_levels[0].scale_levels,
            BTreeMap::from([("both".into(), 0), ("pods".into(), 1)])
        );
    }

    #[test]
    fn a_vnfd_is_projected_flavour_by_flavour() {
        let vnfd: Vnfd = serde_json::from_value(json!({
            "descriptorId": "d", "descriptorVersion": "1", "provider": "p", "productName": "n",
            "softwareVersion": "1", "toscaDefinitionsVersion": "tosca_simple_yaml_1_3",
            "vnfNodeType": "t", "entryDefinitions": "top.yaml",
            "flavours": [serde_json::to_value(flavour()).unwrap()]
        }))
        .unwrap();
        let pod = vnfd.project(|v| v.id == "POD", false);
        assert_eq!(
            pod.flavours,
            vec![flavour().project(|v| v.id == "POD", false)]
        );
        assert_eq!(pod.descriptor_id, vnfd.descriptor_id);
        // Keeping everything changes nothing.
        assert_eq!(vnfd.project(|_| true, true), vnfd);
    }
}
