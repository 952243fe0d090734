//! The ports between the lifecycle core and the systems it drives.
//!
//! - [`InfraDriver`] ([`infra`]): creates, scales, heals and deletes a VNF's resources on one
//!   family of VIMs (OpenStack, Kubernetes, ...). The core hands it an [`InfraRequest`] whose
//!   [`InfraStep`] already holds what the planner computed from the VNFD, and writes the
//!   returned [`InfraOutcome`] into the instance and the operation occurrence.
//! - [`MgmtDriver`] ([`mgmt`]): runs the LCM hooks a VNFD binds to artifacts
//!   (`instantiate_end`, ...); the plugin host implements it.
//! - [`MgmtDriverRouter`] ([`router`]): one `MgmtDriver` made of several, chosen by the
//!   hook artifact's type (Python scripts, plugin libraries, ...).
//! - [`DriverError`] ([`error`]): what failed, and whether retrying can help.
//! - [`ResolvedVim`] ([`vim`]): a VIM connection with its secrets, redacted in `Debug`.
//! - [`VimKind`] ([`vim_kind`]): what the core knows of a family of VIM types (validation,
//!   canonical layout, secret members), provided by the driver that serves them.
//! - [`ArtifactSource`] ([`artifact`]): read access to the package files.
//! - [`CallbackSender`] ([`callback`]): sends notifications and endpoint tests to subscribers.
//! - [`metrics::MetricsSource`] ([`metrics`]): reads performance measurements (Prometheus, ...).
//! - [`ContentFetcher`] ([`content`]): fetches content the VNFM is pointed at (a package
//!   uploaded from a URI), chunk by chunk.
//! - [`ObserveRequest`] and [`ObservedCondition`] ([`observe`]): what a driver sees wrong
//!   with an instance's resources outside any operation, which the core raises as alarms.
//! - [`RunControl`] ([`control`]): the deadline and cancellation flag of a step.
//! - [`UserDataScripts`] ([`userdata`]): runs a package's own user data class (Tacker's
//!   `lcm-operation-user-data`) for an infrastructure driver that builds stacks with it.
//! - [`inventory`]: the VIM-independent parts of a driver's inventory (recorded resources,
//!   stable ids, resource changes).
//! - [`memory`]: in-memory drivers for tests and benchmarks.
//!
//! Drivers depend on this crate, `vnfm-types` and `vnfm-descriptor` only, never on the core.
//!
//! # Writing a driver
//!
//! Implement the methods your infrastructure supports; the others answer
//! [`DriverError::Unsupported`]. This one "creates" one server per planned VNFC:
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use async_trait::async_trait;
//! use vnfm_driver_api::*;
//! use vnfm_types::*;
//!
//! struct Tiny;
//!
//! #[async_trait]
//! impl InfraDriver for Tiny {
//!     fn name(&self) -> &str { "tiny" }
//!     fn vim_types(&self) -> &[&str] { &["example.TINY.V_1"] }
//!
//!     async fn instantiate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
//!         let InfraStep::Instantiate { target } = &req.step else {
//!             return Err(DriverError::invalid_input("expected an instantiate step"));
//!         };
//!         let mut out = InfraOutcome::default();
//!         for (vdu, count) in &target.vdu_instances {
//!             for i in 0..*count {
//!                 // Between calls to the infrastructure: stop if cancelled or overdue.
//!                 req.control.check("creating servers")?;
//!                 out.resources.vnfc_resource_info.push(VnfcResourceInfo {
//!                     id: format!("{vdu}-{i}"),
//!                     vdu_id: vdu.clone(),
//!                     vnfd_id: None,
//!                     compute_resource: ResourceHandle::new(format!("server-{vdu}-{i}")),
//!                     zone_id: None,
//!                     storage_resource_ids: None,
//!                     reservation_id: None,
//!                     vnfc_cp_info: None,
//!                     metadata: None,
//!                 });
//!             }
//!         }
//!         out.driver_state = serde_json::json!({"created": out.resources.vnfc_resource_info.len()});
//!         Ok(out)
//!     }
//! }
//!
//! # let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
//! # rt.block_on(async {
//! let vnfd: vnfm_descriptor::Vnfd = serde_json::from_value(serde_json::json!({
//!     "descriptorId": "d1", "descriptorVersion": "1.0", "provider": "Acme",
//!     "productName": "Demo", "softwareVersion": "1.0",
//!     "toscaDefinitionsVersion": "tosca_simple_yaml_1_2", "vnfNodeType": "acme.VNF",
//!     "entryDefinitions": "Definitions/top.yaml", "flavours": []
//! })).unwrap();
//! let instance: VnfInstance = serde_json::from_value(serde_json::json!({
//!     "id": "inst-1", "vnfdId": "d1", "vnfProvider": "Acme", "vnfProductName": "Demo",
//!     "vnfSoftwareVersion": "1.0", "vnfdVersion": "1.0",
//!     "instantiationState": "NOT_INSTANTIATED", "_links": {"self": {"href": "/i/inst-1"}}
//! })).unwrap();
//! let target = ResourceTarget {
//!     flavour_id: "simple".into(),
//!     vdu_instances: [("VDU1".to_string(), 2)].into(),
//!     ..Default::default()
//! };
//! let req = InfraRequest {
//!     op_occ_id: VnfLcmOpOccId::new("op-1"),
//!     operation: LcmOperationType::Instantiate,
//!     step: InfraStep::Instantiate { target },
//!     request: OperationParams::Other(Default::default()),
//!     instance,
//!     vnfd: Arc::new(vnfd),
//!     flavour_id: "simple".into(),
//!     vims: vec![],
//!     artifacts: Arc::new(NoArtifacts),
//!     driver_state: serde_json::Value::Null,
//!     grant: None,
//!     grant_request: None,
//!     restored_package: None,
//!     control: RunControl::with_timeout(Duration::from_secs(60)),
//! };
//! let out = execute(&Tiny, &req).await.unwrap();
//! assert_eq!(out.resources.vnfc_resource_info.len(), 2);
//!
//! // Methods the driver does not implement say so.
//! let heal = InfraRequest { step: InfraStep::Heal { scope: HealScope::WholeVnf }, ..req };
//! let err = execute(&Tiny, &heal).await.unwrap_err();
//! assert_eq!(err.to_string(), "the tiny driver does not support heal");
//! # });
//! ```

pub mod artifact;
pub mod callback;
pub mod content;
pub mod control;
pub mod error;
pub mod fault;
pub mod infra;
pub mod inventory;
pub mod memory;
pub mod metrics;
pub mod mgmt;
pub mod nfvo;
pub mod observe;
pub mod retry;
pub mod router;
pub mod userdata;
pub mod vim;
pub mod vim_kind;
pub mod vnfc_names;

pub use artifact::{ArtifactSource, NoArtifacts};
pub use callback::{
    CallbackAnswer, CallbackError, CallbackMethod, CallbackRequest, CallbackSender, FixedAnswer,
};
pub use content::{ContentError, ContentFetcher, ContentRequest, ContentSink, NoContent};
pub use control::{CancellationFlag, RunControl};
pub use error::{DriverError, DriverLayer};
pub use fault::{FaultId, FaultReport, FaultSink, IndicatorSink, Raised};
pub use infra::{
    HealScope, HealVnfc, InfraDriver, InfraOperation, InfraOutcome, InfraRequest, InfraStep,
    InstanceResources, ResourceTarget, additional_params_of, execute, request_body_of,
};
pub use mgmt::{
    CoordinateCall, CoordinatedVnfc, HookAlarm, HookArtifact, HookCall, HookOutcome, MgmtDriver,
    ObserveCall, TargetPackage, VimRegistration,
};
pub use nfvo::{
    DecideError, DeferredGrants, GrantDecision, LocalNfvo, Nfvo, NfvoAuth, NfvoSettings,
};
pub use observe::{ObserveRequest, ObservedCondition};
pub use retry::backoff_delay;
pub use router::MgmtDriverRouter;
pub use userdata::{UserDataCall, UserDataScripts};
pub use vim::{RedactedVimInfo, ResolvedVim};
pub use vim_kind::{InvalidVimInfo, VimKind, VimKindError, VimKinds};
