//! Which VIM connection each VDU of a mixed VNF goes to (see the [module
//! documentation](super)): the explicit choices of an INSTANTIATE request (checked before an
//! operation occurrence exists), the mapping recorded with the instance, and the convention
//! by VDU kind. Pure: no driver is called and nothing is stored. The explicit choices are
//! checked with the other request checks, [`crate::validate::check_explicit`].

use std::collections::BTreeMap;

use indexmap::IndexMap;
use serde_json::Value;
use vnfm_descriptor::{Flavour, Vdu, VduKind};
use vnfm_types::{OperationParams, VimConnectionInfo};

use super::SplitState;
use crate::validate::VDU_VIM_CONNECTIONS;

/// Whether the VIMs `driver` serves run containers (its [`VimKind`] says so).
///
/// [`VimKind`]: vnfm_driver_api::VimKind
pub fn runs_containers(driver: &dyn vnfm_driver_api::InfraDriver) -> bool {
    driver.vim_kind().is_some_and(|k| k.runs_containers())
}

/// The explicit mapping in force for an operation: the INSTANTIATE request's
/// `additionalParams.vduVimConnections` (checked with [`check_explicit`](crate::validate::check_explicit) before the
/// occurrence was created; members that are not strings are ignored here), else the mapping
/// recorded in the instance's [`SplitState`].
pub fn explicit_mapping(
    request: &OperationParams,
    driver_state: &Value,
) -> BTreeMap<String, String> {
    if let OperationParams::Instantiate(r) = request {
        return r
            .additional_params
            .as_ref()
            .and_then(|p| p.get(VDU_VIM_CONNECTIONS))
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default();
    }
    SplitState::of(driver_state)
        .map(|s| s.vdu_vim_connections)
        .unwrap_or_default()
}

/// Which VIM connection each VDU goes to (see the [module documentation](super)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VduVimMap {
    explicit: BTreeMap<String, String>,
    compute: Option<String>,
    container: Option<String>,
}

impl VduVimMap {
    /// The map for an instance with VIM connections `vims`, of which the types a registered
    /// driver serves count (`served` says for such a type whether its VIMs run containers,
    /// and `None` for a type no driver serves), with the `explicit` choices (those naming a
    /// key `vims` does not have are ignored).
    pub fn new(
        vims: &IndexMap<String, VimConnectionInfo>,
        served: impl Fn(&str) -> Option<bool>,
        explicit: BTreeMap<String, String>,
    ) -> VduVimMap {
        let first = |container: bool| {
            vims.iter()
                .find(|(_, v)| served(&v.vim_type) == Some(container))
                .map(|(k, _)| k.clone())
        };
        VduVimMap {
            explicit: explicit
                .into_iter()
                .filter(|(_, k)| vims.contains_key(k))
                .collect(),
            compute: first(false),
            container: first(true),
        }
    }

    /// The VIM connection key of `vdu`, `None` when no served VIM connection can take it.
    pub fn vim_of(&self, vdu: &Vdu) -> Option<&str> {
        if let Some(k) = self.explicit.get(&vdu.id) {
            return Some(k);
        }
        let (own, other) = match vdu.kind {
            VduKind::OsContainerDeployableUnit => (&self.container, &self.compute),
            VduKind::Compute => (&self.compute, &self.container),
        };
        own.as_deref().or(other.as_deref())
    }

    /// The VIM connection of every VDU of `flavour` that has one.
    pub fn assignments(&self, flavour: &Flavour) -> BTreeMap<String, String> {
        flavour
            .vdus
            .iter()
            .filter_map(|v| Some((v.id.clone(), self.vim_of(v)?.to_string())))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;
    use crate::validate::check_explicit;
    use serde_json::json;

    #[test]
    fn vdus_go_to_the_vim_of_their_kind_else_to_the_other_one() {
        let f = flavour();
        let all = |t: &str| Some(t == K8S);
        let both = VduVimMap::new(&vims(&[("k", K8S), ("o", OS)]), all, BTreeMap::new());
        assert_eq!(
            both.assignments(&f),
            BTreeMap::from([("VM".into(), "o".into()), ("POD".into(), "k".into())])
        );
        // Only a Kubernetes VIM (a Tacker CNF): everything goes there.
        let k8s_only = VduVimMap::new(&vims(&[("k", K8S)]), all, BTreeMap::new());
        assert_eq!(k8s_only.vim_of(f.vdu("VM").unwrap()), Some("k"));
        // A type no driver serves does not count.
        let unserved = VduVimMap::new(
            &vims(&[("k", K8S), ("o", OS)]),
            |t| (t == OS).then_some(false),
            BTreeMap::new(),
        );
        assert_eq!(unserved.vim_of(f.vdu("POD").unwrap()), Some("o"));
        // Explicit choices win; a choice naming an unknown key is ignored.
        let explicit = VduVimMap::new(
            &vims(&[("k", K8S), ("o", OS)]),
            all,
            BTreeMap::from([("VM".into(), "k".into()), ("POD".into(), "gone".into())]),
        );
        assert_eq!(explicit.vim_of(f.vdu("VM").unwrap()), Some("k"));
        assert_eq!(explicit.vim_of(f.vdu("POD").unwrap()), Some("k"));
    }

    #[test]
    fn explicit_mappings_are_checked_with_pointers() {
        let f = flavour();
        let keys = vec!["o".to_string(), "k".to_string()];
        let params = |v: Value| v.as_object().cloned();
        assert!(check_explicit(None, &f, &keys).is_ok());
        assert!(
            check_explicit(
                params(json!({"vduVimConnections": {"POD": "k"}})).as_ref(),
                &f,
                &keys
            )
            .is_ok()
        );
        let err = check_explicit(
            params(json!({"vduVimConnections": {"POD": "z"}})).as_ref(),
            &f,
            &keys,
        )
        .unwrap_err();
        assert_eq!(err.kind(), vnfm_types::ErrorKind::Invalid);
        assert!(
            err.to_string()
                .starts_with("/additionalParams/vduVimConnections/POD: "),
            "{err}"
        );
        // A long hostile key is cut in the message.
        let long = "x".repeat(10_000);
        let err = check_explicit(
            params(json!({"vduVimConnections": {"POD": long}})).as_ref(),
            &f,
            &keys,
        )
        .unwrap_err();
        assert!(err.to_string().len() < 400, "{err}");
    }
}
