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
        // The VIM's VDUs, projected by `Flavour::project` (whose own tests cover what a
        // projection keeps).
        let vm = restrict_flavour(&f, &map, "o", true);
        assert_eq!(ids(&vm.vdus, |v| &v.id), ["VM"]);
        assert_eq!(vm, f.project(|v| v.id == "VM", true));
        let pod = restrict_flavour(&f, &map, "k", false);
        assert_eq!(ids(&pod.vdus, |v| &v.id), ["POD"]);
        assert_eq!(pod, f.project(|v| v.id == "POD", false));
        // Nothing is sent to a VIM the map does not name.
        assert!(restrict_flavour(&f, &map, "other", false).vdus.is_empty());
    }
}
