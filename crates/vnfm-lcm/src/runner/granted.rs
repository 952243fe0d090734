//! What a grant adds to the operation (SOL003 clause 9.5.2.3): VIM connections, external
//! and externally-managed virtual links. Pure functions; the runner applies them once the
//! grant is known (fresh, or read back for a retry, a rollback or after a restart).
//!
//! - `vimConnectionInfo`: entries the instance and the request do not already name are
//!   added ("the VNFM shall update the vimConnectionInfo attribute of the VnfInstance by
//!   adding unknown entries"); known entries are never replaced by a grant.
//! - `extVirtualLinks` / `extManagedVirtualLinks`: the NFVO may pass them in the grant
//!   instead of the request; links the request does not name (by `id`) are added, so the
//!   request wins where both name a link.
//!
//! For operations whose request carries these fields (INSTANTIATE, CHANGE_FLAVOUR,
//! CHANGE_EXT_CONN, CHANGE_VNFPKG) the additions go into the operation's effective request,
//! so drivers see them exactly like the client's, and a rollback removes the VIM connections
//! again as it does the request's. Other operations can only gain VIM connections; those go
//! to the instance directly ([`vims_for_instance`]).

use indexmap::IndexMap;
use vnfm_types::{
    ExtManagedVirtualLinkData, ExtVirtualLinkData, Grant, OperationParams, VimConnectionChanges,
    VimConnectionInfo, VnfInstance,
};

/// What the grant added, for the log.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Added {
    /// VIM connection keys.
    pub vims: Vec<String>,
    /// External virtual link ids.
    pub ext_links: Vec<String>,
    /// Externally-managed virtual link ids.
    pub managed_links: Vec<String>,
}

impl Added {
    pub(crate) fn is_empty(&self) -> bool {
        self.vims.is_empty() && self.ext_links.is_empty() && self.managed_links.is_empty()
    }
}

/// `request` with the grant's additions merged in (see the module documentation).
pub(crate) fn merge_into_request(
    request: &OperationParams,
    instance: &VnfInstance,
    grant: &Grant,
) -> (OperationParams, Added) {
    let mut out = request.clone();
    let mut added = Added::default();
    let known = instance.vim_connection_info.as_ref();
    let (vims, ext, managed) = match &mut out {
        OperationParams::Instantiate(r) => (
            &mut r.vim_connection_info,
            Some(&mut r.ext_virtual_links),
            Some(&mut r.ext_managed_virtual_links),
        ),
        OperationParams::ChangeFlavour(r) => (
            &mut r.vim_connection_info,
            Some(&mut r.ext_virtual_links),
            Some(&mut r.ext_managed_virtual_links),
        ),
        OperationParams::ChangeVnfpkg(r) => (
            &mut r.vim_connection_info,
            Some(&mut r.ext_virtual_links),
            Some(&mut r.ext_managed_virtual_links),
        ),
        OperationParams::ChangeExtConn(r) => {
            added.ext_links =
                add_links(&mut r.ext_virtual_links, grant.ext_virtual_links.as_deref());
            added.vims = add_vims(&mut r.vim_connection_info, known, grant);
            return (out, added);
        }
        _ => return (out, added),
    };
    added.vims = add_vims(vims, known, grant);
    if let Some(ext) = ext {
        let mut list = ext.take().unwrap_or_default();
        added.ext_links = add_links(&mut list, grant.ext_virtual_links.as_deref());
        *ext = (!list.is_empty()).then_some(list);
    }
    if let Some(managed) = managed {
        let mut list = managed.take().unwrap_or_default();
        added.managed_links = add_managed(&mut list, grant.ext_managed_virtual_links.as_deref());
        *managed = (!list.is_empty()).then_some(list);
    }
    (out, added)
}

/// For operations whose request cannot carry VIM connections (scale, heal, terminate, ...):
/// the instance with the grant's unknown VIM connections added, when there are any.
pub(crate) fn vims_for_instance(
    request: &OperationParams,
    instance: &VnfInstance,
    grant: &Grant,
) -> Option<(VnfInstance, Vec<String>)> {
    if matches!(
        request,
        OperationParams::Instantiate(_)
            | OperationParams::ChangeFlavour(_)
            | OperationParams::ChangeVnfpkg(_)
            | OperationParams::ChangeExtConn(_)
    ) {
        return None;
    }
    let mut map = instance.vim_connection_info.clone().unwrap_or_default();
    let mut keys = Vec::new();
    for (k, v) in grant.vim_connection_info.iter().flatten() {
        if !map.contains_key(k) {
            map.insert(k.clone(), v.clone());
            keys.push(k.clone());
        }
    }
    if keys.is_empty() {
        return None;
    }
    let mut out = instance.clone();
    out.vim_connection_info = Some(map);
    Some((out, keys))
}

fn add_vims(
    into: &mut Option<VimConnectionChanges>,
    known: Option<&IndexMap<String, VimConnectionInfo>>,
    grant: &Grant,
) -> Vec<String> {
    let mut keys = Vec::new();
    for (k, v) in grant.vim_connection_info.iter().flatten() {
        let named = known.is_some_and(|m| m.contains_key(k))
            || into.as_ref().is_some_and(|m| m.contains_key(k));
        if !named {
            into.get_or_insert_with(IndexMap::new)
                .insert(k.clone(), Some(v.clone()));
            keys.push(k.clone());
        }
    }
    keys
}

/// Appends the entries of `from` whose id (`id_of`) `into` does not have; their ids.
fn add_unnamed<T: Clone>(
    into: &mut Vec<T>,
    from: Option<&[T]>,
    id_of: impl Fn(&T) -> &str,
) -> Vec<String> {
    let mut ids = Vec::new();
    for l in from.into_iter().flatten() {
        if !into.iter().any(|x| id_of(x) == id_of(l)) {
            into.push(l.clone());
            ids.push(id_of(l).to_owned());
        }
    }
    ids
}

fn add_links(
    into: &mut Vec<ExtVirtualLinkData>,
    from: Option<&[ExtVirtualLinkData]>,
) -> Vec<String> {
    add_unnamed(into, from, |l| &l.id)
}

fn add_managed(
    into: &mut Vec<ExtManagedVirtualLinkData>,
    from: Option<&[ExtManagedVirtualLinkData]>,
) -> Vec<String> {
    add_unnamed(into, from, |l| &l.id)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn instance(vims: serde_json::Value) -> VnfInstance {
        serde_json::from_value(json!({
            "id": "i1", "vnfdId": "d1", "vnfProvider": "p", "vnfProductName": "n",
            "vnfSoftwareVersion": "1", "vnfdVersion": "1",
            "instantiationState": "NOT_INSTANTIATED",
            "vimConnectionInfo": vims,
            "_links": {"self": {"href": "/i1"}},
        }))
        .unwrap()
    }

    fn grant(extra: serde_json::Value) -> Grant {
        let mut g = json!({"id": "g1", "vnfInstanceId": "i1", "vnfLcmOpOccId": "o1"});
        for (k, v) in extra.as_object().unwrap() {
            g[k] = v.clone();
        }
        serde_json::from_value(g).unwrap()
    }

    fn link(id: &str, network: &str) -> serde_json::Value {
        json!({"id": id, "resourceId": network, "extCps": [{"cpdId": "CP1", "cpConfig": {"c": {"cpProtocolData": [{"layerProtocol": "IP_OVER_ETHERNET"}]}}}]})
    }

    #[test]
    fn instantiate_gains_unknown_vims_and_links_and_the_request_wins() {
        let inst = instance(json!({"known": {"vimType": "A", "vimId": "mine"}}));
        let req = OperationParams::Instantiate(
            serde_json::from_value(json!({
                "flavourId": "f",
                "vimConnectionInfo": {"req": {"vimType": "A"}},
                "extVirtualLinks": [link("L1", "from-request")]
            }))
            .unwrap(),
        );
        let g = grant(json!({
            "vimConnectionInfo": {
                "known": {"vimType": "A", "vimId": "nfvo-would-replace"},
                "req": {"vimType": "A", "vimId": "nfvo-would-replace"},
                "granted": {"vimType": "A", "vimId": "from-grant"}
            },
            "extVirtualLinks": [link("L1", "from-grant"), link("L2", "from-grant")],
            "extManagedVirtualLinks": [{"id": "M1", "vnfVirtualLinkDescId": "VL1", "resourceId": "net-m"}]
        }));
        let (merged, added) = merge_into_request(&req, &inst, &g);
        assert_eq!(added.vims, vec!["granted"]);
        assert_eq!(added.ext_links, vec!["L2"]);
        assert_eq!(added.managed_links, vec!["M1"]);
        let OperationParams::Instantiate(r) = merged else {
            panic!("still an instantiate request");
        };
        let vims = r.vim_connection_info.unwrap();
        assert_eq!(vims.keys().collect::<Vec<_>>(), vec!["req", "granted"]);
        assert_eq!(
            vims["granted"]
                .as_ref()
                .unwrap()
                .vim_id
                .as_ref()
                .unwrap()
                .as_str(),
            "from-grant"
        );
        assert_eq!(
            vims["req"].as_ref().unwrap().vim_id,
            None,
            "the request's entry is not replaced"
        );
        let links = r.ext_virtual_links.unwrap();
        assert_eq!(links.len(), 2);
        assert_eq!(links[0].resource_id, "from-request");
        assert_eq!(links[1].id, "L2");
        assert_eq!(r.ext_managed_virtual_links.unwrap()[0].id, "M1");
    }

    #[test]
    fn an_empty_grant_changes_nothing() {
        let inst = instance(json!({}));
        let req = OperationParams::Instantiate(
            serde_json::from_value(json!({"flavourId": "f"})).unwrap(),
        );
        let (merged, added) = merge_into_request(&req, &inst, &grant(json!({})));
        assert!(added.is_empty());
        assert_eq!(merged, req);
    }

    #[test]
    fn change_ext_conn_gains_links_and_scale_gains_vims_on_the_instance() {
        let inst = instance(json!({"v": {"vimType": "A"}}));
        let g = grant(json!({
            "vimConnectionInfo": {"w": {"vimType": "A"}},
            "extVirtualLinks": [link("L9", "n9")]
        }));
        let cec = OperationParams::ChangeExtConn(
            serde_json::from_value(json!({"extVirtualLinks": [link("L1", "n1")]})).unwrap(),
        );
        let (merged, added) = merge_into_request(&cec, &inst, &g);
        assert_eq!(added.ext_links, vec!["L9"]);
        let OperationParams::ChangeExtConn(r) = merged else {
            panic!("still a change_ext_conn request");
        };
        assert_eq!(r.ext_virtual_links.len(), 2);
        assert!(vims_for_instance(&OperationParams::ChangeExtConn(r), &inst, &g).is_none());

        let scale = OperationParams::Scale(
            serde_json::from_value(json!({"type": "SCALE_OUT", "aspectId": "a"})).unwrap(),
        );
        let (same, added) = merge_into_request(&scale, &inst, &g);
        assert_eq!(same, scale);
        assert!(added.is_empty());
        let (out, keys) = vims_for_instance(&scale, &inst, &g).unwrap();
        assert_eq!(keys, vec!["w"]);
        assert_eq!(out.vim_connection_info.unwrap().len(), 2);
        let known = grant(json!({"vimConnectionInfo": {"v": {"vimType": "B"}}}));
        assert!(vims_for_instance(&scale, &inst, &known).is_none());
    }
}
