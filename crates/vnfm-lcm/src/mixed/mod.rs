//! Mixed VNFs: one VNF instance whose VDUs run on several VIMs served by different
//! infrastructure drivers (ONAP's "mixed VNF": VM VDUs on OpenStack, container VDUs on
//! Kubernetes), and [`SplitByVim`], the [`InfraDriver`](vnfm_driver_api::InfraDriver) decorator that runs each
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
//!    whose `vimType`'s VIMs run containers (its driver's [`VimKind`] says so: the Kubernetes
//!    driver family), and a `tosca.nodes.nfv.Vdu.Compute` VDU to the first entry of any other
//!    type (OpenStack), in
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
//! with an [`InfraRequest`](vnfm_driver_api::InfraRequest) whose
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
//! occurrence (op-occ data [`PROGRESS_KEY`], written by the runner in the transaction that
//! records the step's success or failure, through [`PartsProgress`]), so a retry runs only the parts that have not
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
//!
//! # Layout
//!
//! - `mapping`: which VIM connection each VDU goes to ([`VduVimMap`], [`explicit_mapping`]);
//!   pure. The explicit choices are checked with the other request checks
//!   ([`check_explicit`], of [`crate::validate`](mod@crate::validate)).
//! - `projection`: the VNFD and the request as one part gets them; [`restrict_vnfd`] is
//!   [`Vnfd::project`](vnfm_descriptor::Vnfd::project) with the VDUs of one VIM; pure.
//! - `decorator`: [`SplitByVim`] and its parts ([`VimPart`]): resolution and the step loop.
//! - `select`: which parts a step concerns, and in which order they run.
//! - `view`: the instance, its resources and the step as one part sees them.
//! - `merge`: the union of the parts' outcomes.
//! - `state`: what is recorded: [`SplitState`] with the instance, and the progress of a step
//!   with the operation occurrence ([`PROGRESS_KEY`]).
//!
//! [`VimKind`]: vnfm_driver_api::VimKind

mod decorator;
mod mapping;
mod merge;
mod projection;
mod select;
mod state;
mod view;

pub use crate::validate::{VDU_VIM_CONNECTIONS, check_explicit};
pub use decorator::{SplitByVim, VimPart};
pub use mapping::{VduVimMap, explicit_mapping, runs_containers};
pub use projection::{restrict_flavour, restrict_vnfd};
pub use state::{PROGRESS_KEY, PartsProgress, SplitState};

/// Fixtures shared by the unit tests of the submodules.
#[cfg(test)]
mod fixtures {
    use indexmap::IndexMap;
    use serde_json::json;
    use vnfm_descriptor::{Flavour, Vnfd};
    use vnfm_types::VimConnectionInfo;

    /// A VIM type whose VIMs run virtual machines.
    pub(super) const OS: &str = "example.VMS.V_1";
    /// A VIM type whose VIMs run containers.
    pub(super) const K8S: &str = "example.CONTAINERS.V_1";

    /// The kind of [`K8S`]: its VIMs run containers.
    pub(super) struct ContainerKind;

    impl vnfm_driver_api::VimKind for ContainerKind {
        fn vim_types(&self) -> &[&'static str] {
            &[K8S]
        }
        fn canonical(
            &self,
            info: &VimConnectionInfo,
        ) -> Result<VimConnectionInfo, vnfm_driver_api::InvalidVimInfo> {
            Ok(info.clone())
        }
        fn secret_members(&self) -> &[&'static str] {
            &[]
        }
        fn runs_containers(&self) -> bool {
            true
        }
    }

    pub(super) fn vims(entries: &[(&str, &str)]) -> IndexMap<String, VimConnectionInfo> {
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

    /// The mixed flavour of `vnfm-descriptor`'s projection tests.
    pub(super) fn flavour() -> Flavour {
        serde_json::from_str(include_str!(
            "../../../vnfm-descriptor/testdata/mixed-flavour.json"
        ))
        .unwrap()
    }

    pub(super) fn ids<T>(v: &[T], f: impl Fn(&T) -> &str) -> Vec<String> {
        v.iter().map(|x| f(x).to_string()).collect()
    }

    pub(super) fn vnfd() -> Vnfd {
        serde_json::from_value(json!({
            "descriptorId": "d", "descriptorVersion": "1", "provider": "p", "productName": "n",
            "softwareVersion": "1", "toscaDefinitionsVersion": "tosca_simple_yaml_1_3",
            "vnfNodeType": "t", "entryDefinitions": "top.yaml",
            "flavours": [serde_json::to_value(flavour()).unwrap()]
        }))
        .unwrap()
    }
}
