//! The lifecycle management core.
//!
//! Its modules, from the bottom floor up: a module uses the ones listed before it, not the
//! ones after (the mixed-VNF views read the runner's [`runner::DRIVER_STATE_KEY`]).
//!
//! - [`state`]: the operation-occurrence state machine of ETSI SOL003 (pure and table-driven).
//! - [`error`]: [`LcmError`], with the kind of each refusal (conflict, invalid, ...).
//! - [`secrets`]: the [`Keyring`] that seals secrets at rest, and new record ids.
//! - [`automation`]: the names of the configurable properties that switch automatic healing
//!   and scaling on (their operations are the `vnfm-assurance` crate's).
//! - [`periodic`]: background jobs run every period.
//! - [`ports`]: the traits the core calls (VIM directory, package catalog, notification
//!   router).
//! - [`request`]: the typed operation request; [`validate`](mod@validate): request checks
//!   against the VNFD and the instance, before an occurrence exists, a mixed VNF's explicit
//!   VDU-to-VIM choices among them (they and the planner look names up through one internal
//!   `lookup` module, so neither imports the other).
//! - [`plan`](mod@plan): the planner (pure): an operation request becomes an ordered list of hook,
//!   infrastructure and bookkeeping steps; rollback plans and retry points come from it.
//! - [`package_change`], [`nfvo`]: what a package change keeps, and the NFVO settings.
//! - [`vim`]: the VIM directories: [`VimRegistry`] (secrets encrypted at rest) and
//!   [`InlineVimDirectory`] (no registry: inline access information used as given).
//! - [`catalog`]: [`MemoryCatalog`], onboarded VNFDs held in memory.
//! - [`subscriptions`]: one subscription stack generic over the kind
//!   ([`subscriptions::ManagedSubscriptions`] over a [`subscriptions::SubscriptionKind`]),
//!   the lifecycle kind with its filter (pure matching) and the routing of notifications to
//!   the outbox, which [`notify`]'s [`Deliverer`] delivers; [`pkgm_subscriptions`]: the VNF
//!   package management kind and its routing.
//! - `testing` (cargo feature `testing`, for tests and benchmarks only): notification routers
//!   that need no subscription store.
//! - [`mixed`]: mixed VNFs, whose VDUs run on VIMs of different drivers (VMs on OpenStack,
//!   containers on Kubernetes): which VIM each VDU goes to, and the driver decorator that runs
//!   each step on every driver concerned.
//! - [`runner`]: [`Lcm`], which starts operations, runs their plans step by step through the
//!   drivers and persists each step.
//!
//! Fault management, performance management and VNF indicators build on this crate in
//! `vnfm-assurance`.
//!
//! ```
//! use serde_json::json;
//! use vnfm_lcm::{OperationRequest, plan, rollback_plan};
//!
//! let vnfd: vnfm_descriptor::Vnfd = serde_json::from_value(json!({
//!     "descriptorId": "d1", "descriptorVersion": "1.0", "provider": "Acme",
//!     "productName": "Demo", "softwareVersion": "1.0",
//!     "toscaDefinitionsVersion": "tosca_simple_yaml_1_2", "vnfNodeType": "acme.VNF",
//!     "entryDefinitions": "Definitions/top.yaml",
//!     "flavours": [{
//!         "id": "simple", "file": "Definitions/df.yaml",
//!         "vdus": [{"id": "VDU1", "name": "VDU1", "kind": "compute",
//!                   "nodeType": "tosca.nodes.nfv.Vdu.Compute",
//!                   "minInstances": 1, "maxInstances": 3, "initialDelta": 2}],
//!         "lcmHooks": [{"operation": "instantiate_end", "artifact": "mgmt"}],
//!         "artifacts": [{"name": "mgmt", "owner": "VNF", "file": "Scripts/mgmt.so",
//!                        "artifactType": "tosca.artifacts.Implementation"}]
//!     }]
//! })).unwrap();
//! let instance: vnfm_types::VnfInstance = serde_json::from_value(json!({
//!     "id": "i1", "vnfdId": "d1", "vnfProvider": "Acme", "vnfProductName": "Demo",
//!     "vnfSoftwareVersion": "1.0", "vnfdVersion": "1.0",
//!     "instantiationState": "NOT_INSTANTIATED", "_links": {"self": {"href": "/i/i1"}}
//! })).unwrap();
//!
//! let req = OperationRequest::Instantiate(
//!     serde_json::from_value(json!({"flavourId": "simple"})).unwrap(),
//! );
//! let p = plan(&req, &vnfd, &instance).unwrap();
//! assert_eq!(p.step_names(), ["infra:instantiate", "hook:instantiate_end"]);
//! let target = p.infra_steps().next().and_then(|s| s.target()).unwrap();
//! assert_eq!(target.instances_of("VDU1"), 2);
//!
//! // The infra step failed: the rollback deletes whatever it created.
//! let r = rollback_plan(&p, 0).unwrap();
//! assert_eq!(r.step_names(), ["infra:rollback_instantiate"]);
//!
//! // A second instantiate is refused with 409 and says why.
//! let mut done = instance.clone();
//! done.instantiation_state = vnfm_types::InstantiationState::Instantiated;
//! let err = plan(&req, &vnfd, &done).unwrap_err();
//! assert_eq!(err.kind(), vnfm_types::ErrorKind::Conflict);
//! ```

pub mod automation;
pub mod catalog;
pub mod error;
mod lookup;
pub mod mixed;
pub mod nfvo;
pub mod notify;
pub mod package_change;
pub mod periodic;
pub mod pkgm_subscriptions;
pub mod plan;
pub mod ports;
pub mod request;
pub mod runner;
pub mod secrets;
pub mod state;
pub mod subscriptions;
#[cfg(feature = "testing")]
pub mod testing;
pub mod validate;
pub mod vim;

pub use catalog::MemoryCatalog;
pub use error::{Cause, DependentInstance, GuardedAction, LcmError};
pub use notify::{Deliverer, DelivererConfig, DeliveryWaker};
pub use pkgm_subscriptions::{PackageChange, PackageEvent, PkgmSubscriptions};
pub use plan::{
    HookStep, OperationRequest, Plan, PlanKind, RollbackHooks, Step, plan, remaining,
    rollback_plan, validate,
};
pub use runner::preview::{GrantPreview, Preview, PreviewStep};
pub use runner::{Lcm, LcmBuilder, LcmConfig, OpOccProgress, StepProgress, StepStatus};
pub use secrets::Keyring;
pub use subscriptions::{
    CreateOptions, Created, NotificationContext, SubscriptionRouter, Subscriptions,
};
pub use vim::{InlineVimDirectory, VimRegistry, VimUpdate, VimView};
