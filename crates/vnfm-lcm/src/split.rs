//! Mixed VNFs: one VNF instance whose VDUs run on several VIMs served by different
//! infrastructure drivers (ONAP's "mixed VNF": VM VDUs on OpenStack, container VDUs on
//! Kubernetes), and [`SplitByVim`], the [`InfraDriver`] decorator that runs each
//! infrastructure step on every driver concerned.
//!
//! # Which VIM a VDU goes to
//!
//! A request may carry one `vimConnectionInfo` entry per VIM. Each VDU of the flavour is
//! mapped to one entry ([`VduVimMap`]):
//!
//! 1. `additionalParams.vduVimConnections` of the INSTANTIATE request,
//!    `{"<vduId>": "<vimConnectionInfo key>"}`, names the entry of the VDUs it lists. It is
//!    checked before any operation occurrence exists: a VDU the flavour does not have, a key
//!    neither the request nor the instance defines, or a value that is not a string is a 400
//!    whose pointer names the entry (`/additionalParams/vduVimConnections/VDU1`). The mapping
//!    in force is recorded with the instance (see below) and applies to every later operation.
//! 2. Otherwise a `tosca.nodes.nfv.Vdu.OsContainerDeployableUnit` VDU goes to the first entry
//!    whose `vimType` is one of [`CONTAINER_VIM_TYPES`] (the Kubernetes driver family), and a
//!    `tosca.nodes.nfv.Vdu.Compute` VDU to the first entry of any other type (OpenStack), in
//!    the order of the instance's `vimConnectionInfo`; only entries whose type a registered
//!    driver serves count. When the instance has no entry of the VDU's class, the VDU goes
//!    to the first entry of the other class (so a Tacker CNF, whose `Vdu.Compute` VDUs run on
//!    Kubernetes, keeps running on its only VIM).
//!
//! When the flavour's VDUs map to VIMs whose drivers differ, the runner uses a [`SplitByVim`]
//! over those VIMs; otherwise it uses one driver exactly as for any other instance (same
//! plans, journal, driver state and resource ids). This is decided at instantiation: an
//! instance instantiated on one driver stays on it, whatever VIM connections it gains later.
//!
//! # What each driver gets
//!
//! Each VIM is a part. For every step, the decorator calls the driver of each part concerned
//! with an [`InfraRequest`] whose
//! - `vims` holds only that VIM, and the instance's `vimConnectionInfo` only its entry;
//! - `vnfd` is the VNFD restricted to the part's VDUs ([`restrict_vnfd`]): in every flavour,
//!   those VDUs, their containers, virtual storages and VDU CPs, the internal virtual links
//!   those CPs attach to, the external CPs of those VDUs or links, the scaling aspects whose
//!   deltas name those VDUs (with only their deltas), the instantiation levels with only their
//!   counts, and the artifacts of those nodes (plus the VNF's own). Nodes tied to no VDU (a
//!   virtual link no CP attaches to, an aspect without deltas) go to the first part;
//! - `step` holds only the part's VDUs: instance counts, the VNFCs to heal or operate, the
//!   external CPDs to change;
//! - `request` holds only the external virtual links that have an external CP of the part
//!   (with only those CPs), and the externally managed links of the part's virtual links;
//! - `instance` holds only the part's resources (by the `vimConnectionId` of their resource
//!   handle, else by their VDU or descriptor), and `driver_state` the part's own state.
//!
//! Parts are called VM side first (every entry not of a container type, then the container
//! ones): the containers of a mixed VNF typically reach services of its VMs (a database, a
//! controller, the external networks), so the VMs exist before the pods start. Steps that
//! remove resources run in reverse, so nothing loses what it depends on while it still runs:
//! terminate, scale-in, stop, and every rollback (which undoes in the reverse order of the
//! forward step).
//!
//! A step calls the parts it concerns: instantiate, terminate, heal of the whole VNF, change
//! of flavour or package and their rollbacks call all of them; a scale calls the parts whose
//! VDUs the aspect's deltas name (the parts whose counts change when it names none); a scale
//! to level calls the parts whose counts change; a heal or operate of VNFCs calls the parts
//! of those VNFCs; a change of external connectivity calls the parts of the CPDs it changes.
//!
//! # Outcomes, state, failures
//!
//! The outcome is the union of the parts' outcomes: each list of resources and resource
//! changes is concatenated (first part first); an external virtual link reported by several
//! parts becomes one entry with the ports and CP data of all of them. The parts not called
//! keep their resources and state. The driver state recorded with the instance is
//! [`SplitState`]: `{"vduVimConnections": {vduId: key}, "byVim": {key: driver state}}`.
//!
//! A driver failure fails the step with the driver's error, kind kept, prefixed with the VIM
//! connection, driver and VDUs it concerned (``VIM connection `k8s` (driver kubernetes, VDUs
//! VDU2): ...``). The outcome of each part that succeeded is kept with the operation
//! occurrence (op-occ data [`PROGRESS_KEY`]), so a retry runs only the parts that have not
//! succeeded, a runner that crashed mid-step resumes after the parts that had, and a rollback
//! hands each driver what it created (its resources and state from that outcome): a failure of
//! the second driver after the first succeeded leaves the occurrence `FAILED_TEMP`, and its
//! rollback undoes both.
//!
//! The recorded mapping pins each VDU to its VIM for the life of the instance (a VDU whose
//! kind changes in a new package stays where it is; VDUs new to the instance follow the
//! convention). CHANGE_FLAVOUR and CHANGE_VNFPKG run on the VIMs the instance has; one that
//! would leave a VIM of the instance without VDUs, or bring VDUs to a VIM it has no resources
//! on, is refused (422, pointer `/newFlavourId` or `/vnfdId`) before an operation occurrence
//! exists, as is any operation on a mixed instance whose VDUs no longer map to VIMs of
//! different drivers.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use async_trait::async_trait;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use vnfm_descriptor::{Flavour, Vdu, VduKind, Vnfd};
use vnfm_driver_api::{
    DriverError, HealScope, InfraDriver, InfraOutcome, InfraRequest, InfraStep, InstanceResources,
    ResourceTarget,
};
use vnfm_store::Store;
use vnfm_types::{
    ExtManagedVirtualLinkData, ExtManagedVirtualLinkInfo, ExtVirtualLinkData, ExtVirtualLinkInfo,
    InstantiatedVnfInfo, KeyValuePairs, OperationParams, ResourceChanges, ResourceHandle,
    ScaleType, VimConnectionInfo, VnfInstance, VnfOperationalState,
};

use crate::error::{LcmError, echo};
use crate::runner::DRIVER_STATE_KEY;

/// The `additionalParams` member of an INSTANTIATE request that maps VDUs to VIM connections.
pub const VDU_VIM_CONNECTIONS: &str = "vduVimConnections";

/// The VIM types of the Kubernetes driver family: container VDUs go to a VIM of one of them.
pub const CONTAINER_VIM_TYPES: [&str; 2] = ["ETSINFV.KUBERNETES.V_1", "ETSINFV.HELM.V_3"];

/// Op-occ data key under which [`SplitByVim`] keeps the outcomes of the parts that succeeded.
pub const PROGRESS_KEY: &str = "splitByVim";

/// Whether `vim_type` belongs to the Kubernetes driver family ([`CONTAINER_VIM_TYPES`]).
pub fn is_container_vim_type(vim_type: &str) -> bool {
    CONTAINER_VIM_TYPES
        .iter()
        .any(|t| t.eq_ignore_ascii_case(vim_type))
}

/// `s` escaped as one JSON pointer token (RFC 6901).
fn pointer_token(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

/// Checks `additionalParams.vduVimConnections` of an INSTANTIATE request: an object whose
/// members name VDUs of `flavour` and whose values are keys of `vim_keys` (the request's and
/// the instance's VIM connections). Errors are 400s pointing at the offending member.
pub fn check_explicit(
    params: Option<&KeyValuePairs>,
    flavour: &Flavour,
    vim_keys: &[String],
) -> Result<(), LcmError> {
    let Some(value) = params.and_then(|p| p.get(VDU_VIM_CONNECTIONS)) else {
        return Ok(());
    };
    let base = format!("/additionalParams/{VDU_VIM_CONNECTIONS}");
    let Some(map) = value.as_object() else {
        return Err(LcmError::invalid(
            base,
            "must be an object mapping VDU ids to keys of vimConnectionInfo",
        ));
    };
    for (vdu, key) in map {
        let pointer = format!("{base}/{}", pointer_token(vdu));
        if flavour.vdu(vdu).is_none() {
            let known: Vec<&str> = flavour.vdus.iter().map(|v| v.id.as_str()).collect();
            return Err(LcmError::invalid(
                pointer,
                format!(
                    "flavour `{}` has no VDU `{}`; its VDUs: {}",
                    flavour.id,
                    echo(vdu),
                    known.join(", ")
                ),
            ));
        }
        let Some(key) = key.as_str() else {
            return Err(LcmError::invalid(
                pointer,
                "must be a string: the key of a vimConnectionInfo entry",
            ));
        };
        if !vim_keys.iter().any(|k| k == key) {
            return Err(LcmError::invalid(
                pointer,
                format!(
                    "no VIM connection `{}` in the request or the instance; known VIM connections: {}",
                    echo(key),
                    vim_keys.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// The explicit mapping in force for an operation: the INSTANTIATE request's
/// `additionalParams.vduVimConnections` (checked with [`check_explicit`] before the
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

/// The driver state [`SplitByVim`] records with a mixed instance.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SplitState {
    /// The VIM connection of each VDU of the instance's flavour.
    #[serde(default)]
    pub vdu_vim_connections: BTreeMap<String, String>,
    /// Each part's driver state, by VIM connection key (parts whose driver recorded none are
    /// left out).
    #[serde(default)]
    pub by_vim: BTreeMap<String, Value>,
}

impl SplitState {
    /// The split state in `driver_state`, when it is one (an object with a `byVim` object).
    pub fn of(driver_state: &Value) -> Option<SplitState> {
        driver_state.get("byVim").filter(|v| v.is_object())?;
        serde_json::from_value(driver_state.clone()).ok()
    }
}

/// Which VIM connection each VDU goes to (see the [module documentation](self)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VduVimMap {
    explicit: BTreeMap<String, String>,
    compute: Option<String>,
    container: Option<String>,
}

impl VduVimMap {
    /// The map for an instance with VIM connections `vims`, of which the types `served` by
    /// a registered driver count, with the `explicit` choices (those naming a key `vims` does
    /// not have are ignored).
    pub fn new(
        vims: &IndexMap<String, VimConnectionInfo>,
        served: impl Fn(&str) -> bool,
        explicit: BTreeMap<String, String>,
    ) -> VduVimMap {
        let first = |container: bool| {
            vims.iter()
                .find(|(_, v)| {
                    served(&v.vim_type) && is_container_vim_type(&v.vim_type) == container
                })
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

/// `flavour` restricted to the VDUs `map` sends to `key` (see the
/// [module documentation](self)); `primary` also keeps the nodes tied to no VDU.
pub fn restrict_flavour(flavour: &Flavour, map: &VduVimMap, key: &str, primary: bool) -> Flavour {
    let mine = |v: &Vdu| map.vim_of(v) == Some(key);
    let vdus: Vec<Vdu> = flavour.vdus.iter().filter(|v| mine(v)).cloned().collect();
    let vdu_ids: BTreeSet<&str> = vdus.iter().map(|v| v.id.as_str()).collect();
    let all_vdus: BTreeSet<&str> = flavour.vdus.iter().map(|v| v.id.as_str()).collect();
    let owned = |vdu: Option<&String>| match vdu {
        Some(v) if all_vdus.contains(v.as_str()) => vdu_ids.contains(v.as_str()),
        // Tied to no VDU of the flavour.
        _ => primary,
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
            my_links.contains(l.id.as_str()) || (primary && !attached.contains(l.id.as_str()))
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
            (None, None) => primary,
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
                || (primary && !storage_users.contains(s.id.as_str()))
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
                || (primary && !container_users.contains(c.id.as_str()))
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
            let keep = !deltas.is_empty() || (primary && a.vdu_deltas.is_empty());
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

/// `vnfd` with every flavour restricted to the VDUs `map` sends to `key`
/// ([`restrict_flavour`]).
pub fn restrict_vnfd(vnfd: &Vnfd, map: &VduVimMap, key: &str, primary: bool) -> Vnfd {
    let mut out = vnfd.clone();
    out.flavours = vnfd
        .flavours
        .iter()
        .map(|f| restrict_flavour(f, map, key, primary))
        .collect();
    out
}

/// One VIM of a mixed VNF and the driver that serves it.
#[derive(Clone)]
pub struct VimPart {
    /// Key of its `vimConnectionInfo` entry.
    pub key: String,
    /// Its `vimType`.
    pub vim_type: String,
    /// The driver serving that type.
    pub driver: Arc<dyn InfraDriver>,
}

impl std::fmt::Debug for VimPart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VimPart")
            .field("key", &self.key)
            .field("vim_type", &self.vim_type)
            .field("driver", &self.driver.name())
            .finish()
    }
}

/// The outcomes of the parts that succeeded in one infrastructure step of an occurrence.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Record {
    step: InfraStep,
    #[serde(default)]
    outcomes: BTreeMap<String, InfraOutcome>,
}

/// [`Record`]s of an occurrence: its forward infrastructure step and its rollback (a plan has
/// at most one of each).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Progress {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    forward: Option<Record>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rollback: Option<Record>,
}

/// What a part has before the step: its resources and driver state.
#[derive(Debug, Clone, Default)]
struct View {
    resources: InstanceResources,
    state: Value,
}

/// The [`InfraDriver`] of a mixed VNF: runs each step on the driver of every VIM concerned,
/// each with its share of the request, and merges their outcomes (see the
/// [module documentation](self)).
pub struct SplitByVim {
    parts: Vec<VimPart>,
    map: VduVimMap,
    mapping: BTreeMap<String, String>,
    progress: Option<Arc<dyn Store>>,
}

impl std::fmt::Debug for SplitByVim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SplitByVim")
            .field("parts", &self.parts)
            .field("mapping", &self.mapping)
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

fn same_driver(a: &Arc<dyn InfraDriver>, b: &Arc<dyn InfraDriver>) -> bool {
    std::ptr::eq(Arc::as_ptr(a).cast::<()>(), Arc::as_ptr(b).cast::<()>())
}

impl SplitByVim {
    /// The split for flavour `flavour_id` of `vnfd` on an instance with VIM connections
    /// `vims`, given the registered `drivers` (by VIM type) and the `explicit` choices
    /// ([`explicit_mapping`]): `None` when the flavour's VDUs map to VIMs of a single driver
    /// (or the flavour does not exist), which the runner then handles as any other instance.
    /// An explicit choice of a VIM connection whose type no driver serves is an error.
    pub fn resolve(
        vnfd: &Vnfd,
        flavour_id: &str,
        vims: &IndexMap<String, VimConnectionInfo>,
        drivers: &BTreeMap<String, Arc<dyn InfraDriver>>,
        explicit: BTreeMap<String, String>,
    ) -> Result<Option<SplitByVim>, LcmError> {
        let Some(flavour) = vnfd.flavour(flavour_id) else {
            return Ok(None);
        };
        let map = VduVimMap::new(vims, |t| drivers.contains_key(t), explicit);
        let mapping = map.assignments(flavour);
        let used: BTreeSet<&str> = mapping.values().map(String::as_str).collect();
        let mut parts: Vec<VimPart> = Vec::new();
        for (key, info) in vims.iter().filter(|(k, _)| used.contains(k.as_str())) {
            let Some(driver) = drivers.get(&info.vim_type) else {
                return Err(LcmError::NoInfraDriver {
                    vim_types: vec![info.vim_type.clone()],
                    known: drivers.keys().cloned().collect(),
                });
            };
            parts.push(VimPart {
                key: key.clone(),
                vim_type: info.vim_type.clone(),
                driver: driver.clone(),
            });
        }
        let distinct = parts
            .iter()
            .enumerate()
            .filter(|(i, p)| {
                !parts[..*i]
                    .iter()
                    .any(|q| same_driver(&q.driver, &p.driver))
            })
            .count();
        if distinct < 2 {
            return Ok(None);
        }
        // VM side first; a stable sort keeps the vimConnectionInfo order within each side.
        parts.sort_by_key(|p| is_container_vim_type(&p.vim_type));
        Ok(Some(SplitByVim {
            parts,
            map,
            mapping,
            progress: None,
        }))
    }

    /// Keeps the outcome of each part that succeeds with the operation occurrence in `store`
    /// (op-occ data [`PROGRESS_KEY`]), for retries, recovery and rollbacks.
    pub fn with_progress(mut self, store: Arc<dyn Store>) -> SplitByVim {
        self.progress = Some(store);
        self
    }

    /// The parts, in the order constructive steps call them (VM side first).
    pub fn parts(&self) -> &[VimPart] {
        &self.parts
    }

    /// The VIM connection key of each VDU of the flavour.
    pub fn mapping(&self) -> &BTreeMap<String, String> {
        &self.mapping
    }

    fn describe(&self, i: usize) -> String {
        let part = &self.parts[i];
        let vdus: Vec<&str> = self
            .mapping
            .iter()
            .filter(|(_, k)| **k == part.key)
            .map(|(v, _)| v.as_str())
            .collect();
        format!(
            "VIM connection `{}` (driver {}, VDUs {})",
            part.key,
            part.driver.name(),
            if vdus.is_empty() {
                "none".to_string()
            } else {
                vdus.join(", ")
            }
        )
    }

    fn part_of_key(&self, key: &str) -> Option<usize> {
        self.parts.iter().position(|p| p.key == key)
    }

    /// The part of the VDU `vdu_id` of flavour `flavour`.
    fn part_of_vdu(&self, flavour: Option<&Flavour>, vdu_id: &str) -> Option<usize> {
        let key = match flavour.and_then(|f| f.vdu(vdu_id)) {
            Some(v) => self.map.vim_of(v)?,
            None => self.mapping.get(vdu_id)?,
        };
        self.part_of_key(key)
    }

    /// The part a resource handle lives on, by its VIM connection.
    fn part_of_handle(&self, h: &ResourceHandle) -> Option<usize> {
        h.vim_connection_id
            .as_deref()
            .and_then(|k| self.part_of_key(k))
    }

    /// The part of the VNFC `id` (a `vnfcResourceInfo` id) of `instance`.
    fn part_of_vnfc(
        &self,
        instance: &VnfInstance,
        flavour: Option<&Flavour>,
        id: &str,
    ) -> Option<usize> {
        let r = instance
            .instantiated_vnf_info
            .as_ref()?
            .vnfc_resource_info
            .as_ref()?
            .iter()
            .find(|r| r.id == id)?;
        self.part_of_handle(&r.compute_resource)
            .or_else(|| self.part_of_vdu(flavour, &r.vdu_id))
    }

    /// Which parts `req`'s step concerns.
    fn selected(&self, req: &InfraRequest, flavours: &[Flavour]) -> Vec<bool> {
        let n = self.parts.len();
        let all = vec![true; n];
        let flavour = req.vnfd.flavour(&req.flavour_id);
        let of_vdus = |vdus: &mut dyn Iterator<Item = &str>| {
            let mut out = vec![false; n];
            for v in vdus {
                if let Some(i) = self.part_of_vdu(flavour, v) {
                    out[i] = true;
                }
            }
            out
        };
        let changed = |from: &ResourceTarget, to: &ResourceTarget| {
            let vdus: BTreeSet<&str> = from
                .vdu_instances
                .keys()
                .chain(to.vdu_instances.keys())
                .map(String::as_str)
                .filter(|v| from.instances_of(v) != to.instances_of(v))
                .collect();
            of_vdus(&mut vdus.into_iter())
        };
        let of_aspect = |aspect: &str| {
            let deltas = flavour
                .and_then(|f| f.scaling_aspect(aspect))
                .map(|a| a.vdu_deltas.keys().map(String::as_str).collect::<Vec<_>>())
                .unwrap_or_default();
            of_vdus(&mut deltas.into_iter())
        };
        let of_cpds = |cpds: &mut dyn Iterator<Item = &str>| {
            let cpds: BTreeSet<&str> = cpds.collect();
            let out: Vec<bool> = flavours
                .iter()
                .map(|f| {
                    f.vdu_cps.iter().any(|c| cpds.contains(c.id.as_str()))
                        || f.ext_cps.iter().any(|c| cpds.contains(c.id.as_str()))
                })
                .collect();
            out
        };
        let primary_if_none = |mut v: Vec<bool>| {
            if !v.contains(&true)
                && let Some(first) = v.first_mut()
            {
                *first = true;
            }
            v
        };
        match &req.step {
            InfraStep::Scale {
                aspect_id,
                from,
                target,
                ..
            } => {
                let by_aspect = of_aspect(aspect_id);
                if by_aspect.contains(&true) {
                    by_aspect
                } else {
                    changed(from, target)
                }
            }
            InfraStep::ScaleToLevel { from, target } => changed(from, target),
            InfraStep::RollbackScale { .. } => match &req.request {
                OperationParams::Scale(r) => {
                    let by_aspect = of_aspect(&r.aspect_id);
                    if by_aspect.contains(&true) {
                        by_aspect
                    } else {
                        all
                    }
                }
                _ => all,
            },
            InfraStep::Heal {
                scope: HealScope::Vnfcs { vnfcs },
            } => {
                let mut out = vec![false; n];
                for v in vnfcs {
                    if let Some(i) = self
                        .part_of_vnfc(&req.instance, flavour, &v.vnfc_resource_id)
                        .or_else(|| self.part_of_vdu(flavour, &v.vdu_id))
                    {
                        out[i] = true;
                    }
                }
                primary_if_none(out)
            }
            InfraStep::Operate {
                vnfc_resource_ids, ..
            } if !vnfc_resource_ids.is_empty() => {
                let mut out = vec![false; n];
                for id in vnfc_resource_ids {
                    if let Some(i) = self.part_of_vnfc(&req.instance, flavour, id) {
                        out[i] = true;
                    }
                }
                primary_if_none(out)
            }
            InfraStep::ChangeExtConn { cpd_ids } => {
                primary_if_none(of_cpds(&mut cpd_ids.iter().map(String::as_str)))
            }
            InfraStep::RollbackChangeExtConn => match &req.request {
                OperationParams::ChangeExtConn(r) => primary_if_none(of_cpds(
                    &mut r
                        .ext_virtual_links
                        .iter()
                        .flat_map(|l| l.ext_cps.iter().map(|c| c.cpd_id.as_str())),
                )),
                _ => all,
            },
            _ => all,
        }
    }

    /// Whether the step runs the parts container side first.
    fn reversed(step: &InfraStep) -> bool {
        let op = step.operation();
        op.is_rollback()
            || matches!(
                step,
                InfraStep::Terminate { .. }
                    | InfraStep::Scale {
                        scale_type: ScaleType::ScaleIn,
                        ..
                    }
                    | InfraStep::Operate {
                        change_state_to: VnfOperationalState::Stopped,
                        ..
                    }
            )
    }

    /// Part `i`'s resources as recorded on `instance`: those on its VIM connection, and
    /// those without one whose VDU or descriptor is in its restricted VNFD `vnfd`.
    fn recorded(&self, instance: &VnfInstance, i: usize, vnfd: &Vnfd) -> InstanceResources {
        let f = &vnfd.flavours;
        let Some(info) = &instance.instantiated_vnf_info else {
            return InstanceResources::default();
        };
        let mine = |h: &ResourceHandle, fallback: bool| match self.part_of_handle(h) {
            Some(p) => p == i,
            None => fallback,
        };
        let cpds: BTreeSet<&str> = f
            .iter()
            .flat_map(|f| {
                f.vdu_cps
                    .iter()
                    .map(|c| c.id.as_str())
                    .chain(f.ext_cps.iter().map(|c| c.id.as_str()))
            })
            .collect();
        let links: BTreeSet<&str> = f
            .iter()
            .flat_map(|f| f.virtual_links.iter().map(|l| l.id.as_str()))
            .collect();
        let storages: BTreeSet<&str> = f
            .iter()
            .flat_map(|f| f.virtual_storages.iter().map(|s| s.id.as_str()))
            .collect();
        let vdus: BTreeSet<&str> = f
            .iter()
            .flat_map(|f| f.vdus.iter().map(|v| v.id.as_str()))
            .collect();
        let vnfcs: Vec<_> = info
            .vnfc_resource_info
            .iter()
            .flatten()
            .filter(|r| mine(&r.compute_resource, vdus.contains(r.vdu_id.as_str())))
            .cloned()
            .collect();
        let vnfc_ids: BTreeSet<&str> = vnfcs.iter().map(|r| r.id.as_str()).collect();
        let other_vnfc_ids: BTreeSet<&str> = info
            .vnfc_resource_info
            .iter()
            .flatten()
            .map(|r| r.id.as_str())
            .filter(|id| !vnfc_ids.contains(id))
            .collect();
        let vnfc_info = info
            .vnfc_info
            .iter()
            .flatten()
            .filter(|v| match v.vnfc_resource_info_id.as_deref() {
                Some(r) if vnfc_ids.contains(r) => true,
                Some(r) if other_vnfc_ids.contains(r) => false,
                _ => vdus.contains(v.vdu_id.as_str()),
            })
            .cloned()
            .collect();
        let ext_cp_info: Vec<_> = info
            .ext_cp_info
            .iter()
            .filter(|c| cpds.contains(c.cpd_id.as_str()))
            .cloned()
            .collect();
        let ext_cp_ids: BTreeSet<&str> = ext_cp_info.iter().map(|c| c.id.as_str()).collect();
        let ext_virtual_link_info = info
            .ext_virtual_link_info
            .iter()
            .flatten()
            .filter_map(|l| {
                let mut l = l.clone();
                let had_cps = !l.current_vnf_ext_cp_data.is_empty();
                l.current_vnf_ext_cp_data
                    .retain(|c| cpds.contains(c.cpd_id.as_str()));
                if let Some(ports) = l.ext_link_ports.as_mut() {
                    ports.retain(|p| {
                        let by_cp = p
                            .cp_instance_id
                            .as_deref()
                            .is_some_and(|c| ext_cp_ids.contains(c));
                        mine(&p.resource_handle, by_cp)
                    });
                }
                if l.ext_link_ports.as_ref().is_some_and(Vec::is_empty) {
                    l.ext_link_ports = None;
                }
                let keep = !l.current_vnf_ext_cp_data.is_empty()
                    || l.ext_link_ports.is_some()
                    || (!had_cps && i == 0);
                keep.then_some(l)
            })
            .collect();
        let ext_managed_virtual_link_info = info
            .ext_managed_virtual_link_info
            .iter()
            .flatten()
            .filter(|m| links.contains(m.vnf_virtual_link_desc_id.as_str()))
            .map(|m| {
                let mut m = m.clone();
                if let Some(ports) = m.vnf_link_ports.as_mut() {
                    ports.retain(|p| mine(&p.resource_handle, true));
                }
                m
            })
            .collect();
        InstanceResources {
            vnfc_resource_info: vnfcs,
            vnfc_info,
            vnf_virtual_link_resource_info: info
                .vnf_virtual_link_resource_info
                .iter()
                .flatten()
                .filter(|l| {
                    mine(
                        &l.network_resource,
                        links.contains(l.vnf_virtual_link_desc_id.as_str()),
                    )
                })
                .cloned()
                .collect(),
            virtual_storage_resource_info: info
                .virtual_storage_resource_info
                .iter()
                .flatten()
                .filter(|s| {
                    mine(
                        &s.storage_resource,
                        storages.contains(s.virtual_storage_desc_id.as_str()),
                    )
                })
                .cloned()
                .collect(),
            ext_cp_info,
            ext_virtual_link_info,
            ext_managed_virtual_link_info,
        }
    }

    /// `instance` as part `i` sees it: its VIM connection, resources and driver state. An
    /// instance that records nothing yet (the rollback of an instantiation whose step failed
    /// after this part had succeeded) shows what the part created.
    fn instance_for(
        &self,
        instance: &VnfInstance,
        i: usize,
        view: &View,
        flavour_id: &str,
    ) -> VnfInstance {
        let key = &self.parts[i].key;
        let mut out = instance.clone();
        let created = view.resources != InstanceResources::default() || !view.state.is_null();
        if out.instantiated_vnf_info.is_none() && created {
            out.instantiated_vnf_info = Some(InstantiatedVnfInfo {
                flavour_id: flavour_id.to_string(),
                vnf_state: VnfOperationalState::Started,
                scale_status: None,
                max_scale_levels: None,
                ext_cp_info: Vec::new(),
                ext_virtual_link_info: None,
                ext_managed_virtual_link_info: None,
                monitoring_parameters: None,
                localization_language: None,
                vnfc_resource_info: None,
                vnf_virtual_link_resource_info: None,
                virtual_storage_resource_info: None,
                vnfc_info: None,
                metadata: None,
            });
        }
        out.vim_connection_info = instance.vim_connection_info.as_ref().map(|m| {
            m.iter()
                .filter(|(k, _)| *k == key)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        });
        if let Some(info) = out.instantiated_vnf_info.as_mut() {
            let r = view.resources.clone();
            info.vnfc_resource_info = some_if_any(r.vnfc_resource_info);
            info.vnfc_info = some_if_any(r.vnfc_info);
            info.vnf_virtual_link_resource_info = some_if_any(r.vnf_virtual_link_resource_info);
            info.virtual_storage_resource_info = some_if_any(r.virtual_storage_resource_info);
            info.ext_cp_info = r.ext_cp_info;
            info.ext_virtual_link_info = some_if_any(r.ext_virtual_link_info);
            info.ext_managed_virtual_link_info = some_if_any(r.ext_managed_virtual_link_info);
            let mut metadata = info.metadata.take().unwrap_or_default();
            if view.state.is_null() {
                metadata.remove(DRIVER_STATE_KEY);
            } else {
                metadata.insert(DRIVER_STATE_KEY.into(), view.state.clone());
            }
            info.metadata = (!metadata.is_empty()).then_some(metadata);
        }
        out
    }

    async fn load(&self, req: &InfraRequest) -> Progress {
        let Some(store) = &self.progress else {
            return Progress::default();
        };
        match store.get_op_occ_data(&req.op_occ_id, PROGRESS_KEY).await {
            Ok(Some(v)) if !v.is_null() => serde_json::from_value(v).unwrap_or_else(|e| {
                tracing::warn!(error = %e, "the recorded progress of a mixed VNF step is unreadable; every part runs again");
                Progress::default()
            }),
            Ok(_) => Progress::default(),
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the progress of a mixed VNF step; every part runs again");
                Progress::default()
            }
        }
    }

    async fn save(&self, req: &InfraRequest, progress: &Progress) {
        let Some(store) = &self.progress else {
            return;
        };
        let value = match serde_json::to_value(progress) {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!(error = %e, "the progress of a mixed VNF step does not serialize");
                return;
            }
        };
        // Losing it only means a retry runs a part that had succeeded again (steps are
        // idempotent), so a failed write does not fail the step.
        if let Err(e) = store
            .put_op_occ_data(&req.op_occ_id, PROGRESS_KEY, &value)
            .await
        {
            tracing::warn!(error = %e, "cannot record the progress of a mixed VNF step");
        }
    }

    async fn run(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        let n = self.parts.len();
        let rollback = req.step.operation().is_rollback();
        let vnfds: Vec<Arc<Vnfd>> = (0..n)
            .map(|i| {
                Arc::new(restrict_vnfd(
                    &req.vnfd,
                    &self.map,
                    &self.parts[i].key,
                    i == 0,
                ))
            })
            .collect();
        let flavours: Vec<Flavour> = vnfds
            .iter()
            .map(|v| {
                v.flavour(&req.flavour_id)
                    .cloned()
                    .unwrap_or_else(|| empty_flavour(&req.flavour_id))
            })
            .collect();
        let recorded_state = SplitState::of(&req.driver_state).unwrap_or_default();
        let mut progress = self.load(req).await;
        let forward = progress.forward.clone();
        let views: Vec<View> = (0..n)
            .map(|i| {
                let key = &self.parts[i].key;
                // What the forward step did, when it did it in this occurrence: the rollback
                // undoes that, even though the instance never recorded it.
                if rollback && let Some(out) = forward.as_ref().and_then(|r| r.outcomes.get(key)) {
                    return View {
                        resources: out.resources.clone(),
                        state: out.driver_state.clone(),
                    };
                }
                View {
                    resources: self.recorded(&req.instance, i, &vnfds[i]),
                    state: recorded_state
                        .by_vim
                        .get(key)
                        .cloned()
                        .unwrap_or(Value::Null),
                }
            })
            .collect();
        let slot = if rollback {
            &mut progress.rollback
        } else {
            &mut progress.forward
        };
        if slot.as_ref().is_none_or(|r| r.step != req.step) {
            *slot = Some(Record {
                step: req.step.clone(),
                outcomes: BTreeMap::new(),
            });
        }
        let selected = self.selected(req, &flavours);
        let mut order: Vec<usize> = (0..n).filter(|&i| selected[i]).collect();
        if Self::reversed(&req.step) {
            order.reverse();
        }
        let mut outcomes: BTreeMap<usize, InfraOutcome> = BTreeMap::new();
        for i in order {
            let part = &self.parts[i];
            let done = if rollback {
                progress.rollback.as_ref()
            } else {
                progress.forward.as_ref()
            }
            .and_then(|r| r.outcomes.get(&part.key))
            .cloned();
            if let Some(out) = done {
                tracing::info!(vim_connection = %part.key, step = %req.step.operation(), "part already done in an earlier attempt of this step");
                outcomes.insert(i, out);
                continue;
            }
            req.control.check(&format!(
                "infra step {} on VIM connection `{}`",
                req.step.operation(),
                part.key
            ))?;
            let sub = InfraRequest {
                op_occ_id: req.op_occ_id.clone(),
                operation: req.operation,
                step: self.step_for(req, i, &vnfds[i], &flavours[i]),
                request: request_for(&req.request, &flavours[i], i == 0),
                instance: self.instance_for(&req.instance, i, &views[i], &req.flavour_id),
                vnfd: vnfds[i].clone(),
                flavour_id: req.flavour_id.clone(),
                vims: req
                    .vims
                    .iter()
                    .filter(|v| v.connection_id == part.key)
                    .cloned()
                    .collect(),
                artifacts: req.artifacts.clone(),
                driver_state: views[i].state.clone(),
                grant: req.grant.clone(),
                control: req.control.clone(),
            };
            tracing::info!(vim_connection = %part.key, driver = part.driver.name(), step = %req.step.operation(), "running the step on one VIM of a mixed VNF");
            match vnfm_driver_api::execute(&*part.driver, &sub).await {
                Ok(out) => {
                    let record = if rollback {
                        progress.rollback.as_mut()
                    } else {
                        progress.forward.as_mut()
                    };
                    if let Some(r) = record {
                        r.outcomes.insert(part.key.clone(), out.clone());
                    }
                    self.save(req, &progress).await;
                    outcomes.insert(i, out);
                }
                Err(e) => return Err(e.in_context(&self.describe(i))),
            }
        }
        Ok(self.merge(views, outcomes))
    }

    /// The step as part `i` (restricted VNFD `vnfd`, flavour of the request `flavour`) runs
    /// it.
    fn step_for(&self, req: &InfraRequest, i: usize, vnfd: &Vnfd, flavour: &Flavour) -> InfraStep {
        // Each target counts in its own flavour (the new one for a change of flavour).
        let restrict = |t: &ResourceTarget| {
            let f = vnfd.flavour(&t.flavour_id).unwrap_or(flavour);
            let mut t = t.clone();
            t.vdu_instances.retain(|v, _| f.vdu(v).is_some());
            t.scale_levels.retain(|a, _| f.scaling_aspect(a).is_some());
            t
        };
        let parent = req.vnfd.flavour(&req.flavour_id);
        match &req.step {
            InfraStep::Instantiate { target } => InfraStep::Instantiate {
                target: restrict(target),
            },
            InfraStep::Scale {
                aspect_id,
                scale_type,
                steps,
                from,
                target,
            } => InfraStep::Scale {
                aspect_id: aspect_id.clone(),
                scale_type: *scale_type,
                steps: *steps,
                from: restrict(from),
                target: restrict(target),
            },
            InfraStep::ScaleToLevel { from, target } => InfraStep::ScaleToLevel {
                from: restrict(from),
                target: restrict(target),
            },
            InfraStep::ChangeFlavour { from, target } => InfraStep::ChangeFlavour {
                from: restrict(from),
                target: restrict(target),
            },
            InfraStep::RollbackScale { restore } => InfraStep::RollbackScale {
                restore: restrict(restore),
            },
            InfraStep::Heal {
                scope: HealScope::Vnfcs { vnfcs },
            } => InfraStep::Heal {
                scope: HealScope::Vnfcs {
                    vnfcs: vnfcs
                        .iter()
                        .filter(|v| {
                            self.part_of_vnfc(&req.instance, parent, &v.vnfc_resource_id)
                                .or_else(|| self.part_of_vdu(parent, &v.vdu_id))
                                .unwrap_or(0)
                                == i
                        })
                        .cloned()
                        .collect(),
                },
            },
            InfraStep::Operate {
                change_state_to,
                stop_type,
                graceful_stop_timeout_seconds,
                vnfc_resource_ids,
            } => InfraStep::Operate {
                change_state_to: *change_state_to,
                stop_type: *stop_type,
                graceful_stop_timeout_seconds: *graceful_stop_timeout_seconds,
                vnfc_resource_ids: vnfc_resource_ids
                    .iter()
                    .filter(|id| self.part_of_vnfc(&req.instance, parent, id).unwrap_or(0) == i)
                    .cloned()
                    .collect(),
            },
            InfraStep::ChangeExtConn { cpd_ids } => InfraStep::ChangeExtConn {
                cpd_ids: cpd_ids
                    .iter()
                    .filter(|c| {
                        flavour.vdu_cps.iter().any(|x| &x.id == *c)
                            || flavour.ext_cps.iter().any(|x| &x.id == *c)
                    })
                    .cloned()
                    .collect(),
            },
            other => other.clone(),
        }
    }

    /// The union of the parts' outcomes; parts not called keep what they had.
    fn merge(&self, views: Vec<View>, mut outcomes: BTreeMap<usize, InfraOutcome>) -> InfraOutcome {
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

fn some_if_any<T>(v: Vec<T>) -> Option<Vec<T>> {
    (!v.is_empty()).then_some(v)
}

fn empty_flavour(id: &str) -> Flavour {
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
fn request_for(request: &OperationParams, f: &Flavour, primary: bool) -> OperationParams {
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

#[async_trait]
impl InfraDriver for SplitByVim {
    fn name(&self) -> &str {
        "split-by-vim"
    }

    /// None: the split is never registered for a VIM type; the runner builds it per step.
    fn vim_types(&self) -> &[&str] {
        &[]
    }

    async fn instantiate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.run(req).await
    }

    async fn terminate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.run(req).await
    }

    async fn scale(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.run(req).await
    }

    async fn scale_to_level(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.run(req).await
    }

    async fn heal(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.run(req).await
    }

    async fn operate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.run(req).await
    }

    async fn change_ext_conn(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.run(req).await
    }

    async fn change_flavour(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.run(req).await
    }

    async fn change_vnfpkg(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.run(req).await
    }

    async fn rollback_instantiate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.run(req).await
    }

    async fn rollback_scale(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.run(req).await
    }

    async fn rollback_change_ext_conn(
        &self,
        req: &InfraRequest,
    ) -> Result<InfraOutcome, DriverError> {
        self.run(req).await
    }

    async fn rollback_change_vnfpkg(
        &self,
        req: &InfraRequest,
    ) -> Result<InfraOutcome, DriverError> {
        self.run(req).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use vnfm_driver_api::memory::MemoryInfraDriver;

    const OS: &str = "ETSINFV.OPENSTACK_KEYSTONE.V_3";
    const K8S: &str = "ETSINFV.KUBERNETES.V_1";

    fn vims(entries: &[(&str, &str)]) -> IndexMap<String, VimConnectionInfo> {
        entries
            .iter()
            .map(|(k, t)| {
                (
                    (*k).to_string(),
                    serde_json::from_value(json!({ "vimType": t })).unwrap(),
                )
            })
            .collect()
    }

    fn flavour() -> Flavour {
        serde_json::from_value(json!({
            "id": "f", "file": "df.yaml",
            "vdus": [
                {"id": "VM", "name": "VM", "kind": "compute", "nodeType": "tosca.nodes.nfv.Vdu.Compute",
                 "minInstances": 1, "maxInstances": 2, "virtualStorages": ["VS"]},
                {"id": "POD", "name": "POD", "kind": "osContainerDeployableUnit",
                 "nodeType": "tosca.nodes.nfv.Vdu.OsContainerDeployableUnit",
                 "minInstances": 1, "maxInstances": 2, "containers": ["C"]}
            ],
            "containers": [{"id": "C", "name": "c"}],
            "virtualStorages": [{"id": "VS", "kind": "block"}, {"id": "LOOSE", "kind": "block"}],
            "vduCps": [
                {"id": "VM_CP", "vdu": "VM", "virtualLink": "VL1"},
                {"id": "POD_CP", "vdu": "POD", "virtualLink": "VL2"}
            ],
            "extCps": [{"id": "EXT_VL1", "internalVirtualLink": "VL1"}, {"id": "POD_CP", "vdu": "POD"}],
            "virtualLinks": [{"id": "VL1"}, {"id": "VL2"}, {"id": "UNUSED"}],
            "scalingAspects": [
                {"id": "both", "maxScaleLevel": 1, "vduDeltas": {"VM": {"d": 1}, "POD": {"d": 1}}},
                {"id": "pods", "maxScaleLevel": 1, "vduDeltas": {"POD": {"d": 1}}},
                {"id": "none", "maxScaleLevel": 1}
            ],
            "instantiationLevels": [{"id": "l", "scaleLevels": {"both": 0, "pods": 1, "none": 0},
                                     "vduInstances": {"VM": 1, "POD": 2}}],
            "placementRules": [{"id": "spread", "kind": "antiAffinity", "scope": "nfvi_node", "vdus": ["VM"]}],
            "artifacts": [
                {"name": "img", "owner": "VM", "artifactType": "tosca.artifacts.nfv.SwImage", "file": "vm.qcow2"},
                {"name": "manifest", "owner": "POD", "artifactType": "tosca.artifacts.File", "file": "pod.yaml"},
                {"name": "mgmt", "owner": "VNF", "artifactType": "tosca.artifacts.Implementation", "file": "m.so"}
            ]
        }))
        .unwrap()
    }

    fn ids<T>(v: &[T], f: impl Fn(&T) -> &str) -> Vec<String> {
        v.iter().map(|x| f(x).to_string()).collect()
    }

    #[test]
    fn vdus_go_to_the_vim_of_their_kind_else_to_the_other_one() {
        let f = flavour();
        let all = |_: &str| true;
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
            |t| t == OS,
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
    fn a_flavour_is_restricted_to_the_nodes_of_a_vim() {
        let f = flavour();
        let map = VduVimMap::new(&vims(&[("o", OS), ("k", K8S)]), |_| true, BTreeMap::new());
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

    fn vnfd() -> Vnfd {
        serde_json::from_value(json!({
            "descriptorId": "d", "descriptorVersion": "1", "provider": "p", "productName": "n",
            "softwareVersion": "1", "toscaDefinitionsVersion": "tosca_simple_yaml_1_3",
            "vnfNodeType": "t", "entryDefinitions": "top.yaml",
            "flavours": [serde_json::to_value(flavour()).unwrap()]
        }))
        .unwrap()
    }

    #[test]
    fn a_split_needs_two_drivers_and_puts_the_vm_side_first() {
        let os: Arc<dyn InfraDriver> = Arc::new(MemoryInfraDriver::new().with_vim_types(&[OS]));
        let k8s: Arc<dyn InfraDriver> = Arc::new(MemoryInfraDriver::new().with_vim_types(&[K8S]));
        let drivers = BTreeMap::from([(OS.to_string(), os.clone()), (K8S.to_string(), k8s)]);
        let v = vnfd();
        let split = SplitByVim::resolve(
            &v,
            "f",
            &vims(&[("k", K8S), ("o", OS)]),
            &drivers,
            BTreeMap::new(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(ids(split.parts(), |p| &p.key), ["o", "k"]);
        assert_eq!(split.mapping()["POD"], "k");
        // One driver for both types: no split.
        let same = BTreeMap::from([(OS.to_string(), os.clone()), (K8S.to_string(), os.clone())]);
        assert!(
            SplitByVim::resolve(
                &v,
                "f",
                &vims(&[("k", K8S), ("o", OS)]),
                &same,
                BTreeMap::new()
            )
            .unwrap()
            .is_none()
        );
        // One VIM: no split. Unknown flavour: no split.
        assert!(
            SplitByVim::resolve(&v, "f", &vims(&[("o", OS)]), &drivers, BTreeMap::new())
                .unwrap()
                .is_none()
        );
        assert!(
            SplitByVim::resolve(
                &v,
                "nope",
                &vims(&[("k", K8S), ("o", OS)]),
                &drivers,
                BTreeMap::new()
            )
            .unwrap()
            .is_none()
        );
        // An explicit choice of a VIM no driver serves.
        let err = SplitByVim::resolve(
            &v,
            "f",
            &vims(&[("o", OS), ("x", "example.OTHER")]),
            &drivers,
            BTreeMap::from([("POD".into(), "x".into())]),
        )
        .unwrap_err();
        assert!(matches!(err, LcmError::NoInfraDriver { .. }), "{err}");
    }

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
        assert_eq!(err.status(), 400);
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
