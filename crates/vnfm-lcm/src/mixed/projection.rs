//! The VNFD and the request as one part of a mixed VNF gets them (see the [module
//! documentation](super)). The VNFD projection itself is [`Vnfd::project`] in
//! `vnfm-descriptor`; [`restrict_vnfd`] applies it to the VDUs a [`VduVimMap`] sends to one
//! VIM. Pure.

use std::collections::BTreeSet;

use vnfm_descriptor::{Flavour, Vnfd};
use vnfm_types::{ExtManagedVirtualLinkData, ExtVirtualLinkData, OperationParams};

use super::VduVimMap;

/// `flavour` restricted to the VDUs `map` sends to `key` (see the
/// [module documentation](super)); `primary` also keeps the nodes tied to no VDU. This is
/// [`Flavour::project`] with those VDUs.
pub fn restrict_flavour(flavour: &Flavour, map: &VduVimMap, key: &str, primary: bool) -> Flavour {
    flavour.project(|v| map.vim_of(v) == Some(key), primary)
}

/// `vnfd` with every flavour restricted to the VDUs `map` sends to `key`
/// ([`restrict_flavour`], [`Vnfd::project`]).
pub fn restrict_vnfd(vnfd: &Vnfd, map: &VduVimMap, key: &str, primary: bool) -> Vnfd {
    vnfd.project(|v| map.vim_of(v) == Some(key), primary)
}

/// A flavour `id` with nothing in it: the flavour of a part whose restricted VNFD lacks it.
pub(super) fn empty_flavour(id: &str) -> Flavour {
    Flavour {
        id: id.to_string(),
        description: String::new(),
        file: String::new(),
        vdus: Vec::new(),
        containers: Vec::new(),
        virtual_storages: Vec::new(),
        vdu_cps: Vec::new(),
        ext_cps: Vec::new(),
        virtual_links: Vec::new(),
        scaling_aspects: Vec::new(),
        instantiation_levels: Vec::new(),
        default_instantiation_level: None,
        placement_rules: Vec::new(),
        lcm_hooks: Vec::new(),
        artifacts: Vec::new(),
    }
}

/// The external links of a request that concern a part with flavour `f`: those with an
/// external CP of the part (with only those CPs); links without CPs go to the first part.
fn links_for(links: &[ExtVirtualLinkData], f: &Flavour, primary: bool) -> Vec<ExtVirtualLinkData> {
    let cpds: BTreeSet<&str> = f
        .vdu_cps
        .iter()
        .map(|c| c.id.as_str())
        .chain(f.ext_cps.iter().map(|c| c.id.as_str()))
        .collect();
    links
        .iter()
        .filter_map(|l| {
            if l.ext_cps.is_empty() {
                return primary.then(|| l.clone());
            }
            let mut l = l.clone();
            l.ext_cps.retain(|c| cpds.contains(c.cpd_id.as_str()));
            (!l.ext_cps.is_empty()).then_some(l)
        })
        .collect()
}

fn managed_for(links: &[ExtManagedVirtualLinkData], f: &Flavour) -> Vec<ExtManagedVirtualLinkData> {
    links
        .iter()
        .filter(|m| {
            f.virtual_links
                .iter()
                .any(|v| v.id == m.vnf_virtual_link_desc_id)
        })
        .cloned()
        .collect()
}

/// The request as a part with flavour `f` gets it.
pub(super) fn request_for(
    request: &OperationParams,
    f: &Flavour,
    primary: bool,
) -> OperationParams {
    let links = |l: &Option<Vec<ExtVirtualLinkData>>| l.as_ref().map(|l| links_for(l, f, primary));
    let managed =
        |m: &Option<Vec<ExtManagedVirtualLinkData>>| m.as_ref().map(|m| managed_for(m, f));
    match request {
        OperationParams::Instantiate(r) => {
            let mut r = r.clone();
            r.ext_virtual_links = links(&r.ext_virtual_links);
            r.ext_managed_virtual_links = managed(&r.ext_managed_virtual_links);
            OperationParams::Instantiate(r)
        }
        OperationParams::ChangeFlavour(r) => {
            let mut r = r.clone();
            r.ext_virtual_links = links(&r.ext_virtual_links);
            r.ext_managed_virtual_links = managed(&r.ext_managed_virtual_links);
            OperationParams::ChangeFlavour(r)
        }
        OperationParams::ChangeVnfpkg(r) => {
            let mut r = r.clone();
            r.ext_virtual_links = links(&r.ext_virtual_links);
            r.ext_managed_virtual_links = managed(&r.ext_managed_virtual_links);
            OperationParams::ChangeVnfpkg(r)
        }
        OperationParams::ChangeExtConn(r) => {
            let mut r = r.clone();
            r.ext_virtual_links = links_for(&r.ext_virtual_links, f, primary);
            OperationParams::ChangeExtConn(r)
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::fixtures::*;
    use super::*;

    #[test]
    fn a_flavour_is_restricted_to_the_nodes_of_a_vim() {
        let f = flavour();
        let map = VduVimMap::new(
            &vims(&[("o", OS), ("k", K8S)]),
            |t| Some(t == K8S),
            BTreeMap::new(),
        );
        let vm = restrict_flavour(&f, &map, "o", true);
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

        let pod = restrict_flavour(&f, &map, "k", false);
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
}
