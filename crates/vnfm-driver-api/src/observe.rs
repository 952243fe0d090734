//! Observation of an instance's resources outside any operation: what an infrastructure
//! driver sees wrong on its VIM now ([`ObservedCondition`]), asked through
//! [`InfraDriver::observe`](crate::InfraDriver::observe) with an [`ObserveRequest`].
//!
//! The driver only describes conditions; the core's infrastructure watch turns each into an
//! alarm (raised while the driver reports it, cleared when it no longer does), so no driver
//! depends on fault management. A driver reports at most one condition per resource, the
//! most telling one (a crash-looping container rather than the pod's readiness), so that one
//! fault makes one alarm.
//!
//! ```
//! use vnfm_driver_api::observe::ObservedCondition;
//! use vnfm_types::{FaultyResourceType, PerceivedSeverity, ResourceHandle};
//!
//! let c = ObservedCondition::new(
//!     "CrashLoopBackOff",
//!     PerceivedSeverity::Major,
//!     ResourceHandle::new("web-0"),
//!     FaultyResourceType::Compute,
//! )
//! .on_vnfc("web-0")
//! .detail("container app restarted 7 times");
//! assert_eq!(c.vnfc_resource_id.as_deref(), Some("web-0"));
//! ```

use std::fmt;

use vnfm_types::{EventType, FaultyResourceType, PerceivedSeverity, ResourceHandle, VnfInstance};

use crate::vim::RedactedVims;
use crate::{ResolvedVim, RunControl};

/// What a driver gets to observe one instance (or, for a VNF spread over several drivers, the
/// part of it on this driver's VIM).
///
/// `Debug` leaves out the instance and redacts the VIM connections.
#[derive(Clone)]
pub struct ObserveRequest {
    /// The instance as recorded (its `instantiatedVnfInfo` names the resources to look at).
    pub instance: VnfInstance,
    /// The VIM connections the driver's resources are on, with secrets.
    pub vims: Vec<ResolvedVim>,
    /// What the driver persisted with the instance after its last successful step.
    pub driver_state: serde_json::Value,
    /// Deadline and cancellation of the observation.
    pub control: RunControl,
}

impl fmt::Debug for ObserveRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObserveRequest")
            .field("instance_id", &self.instance.id)
            .field("vims", &self.vims)
            .field(
                "instance_vims",
                &RedactedVims::of(self.instance.vim_connection_info.iter().flatten()),
            )
            .field("driver_state", &self.driver_state)
            .field("control", &self.control)
            .finish()
    }
}

/// One resource of the instance in trouble, as the driver sees it now.
#[derive(Debug, Clone, PartialEq)]
pub struct ObservedCondition {
    /// A short, stable name of the condition (`CrashLoopBackOff`, `NotReady`, `ERROR`, ...):
    /// the alarm's probable cause. The same condition of the same resource must keep the
    /// same name from one observation to the next, or its alarm is cleared and raised anew.
    pub condition: String,
    /// How urgent.
    pub severity: PerceivedSeverity,
    /// The kind of event (`EQUIPMENT_ALARM` unless the driver knows better, e.g.
    /// `PROCESSING_ERROR_ALARM` for software that keeps crashing).
    pub event_type: EventType,
    /// The faulty resource, as the VIM knows it.
    pub resource: ResourceHandle,
    /// Its type.
    pub resource_type: FaultyResourceType,
    /// The `vnfcResourceInfo` id of the VNFC the resource is (or belongs to), when it is one
    /// of the instance's VNFCs: the alarm then names the VNFC, which automatic healing heals.
    pub vnfc_resource_id: Option<String>,
    /// What the VIM says about it (messages, counts), for `faultDetails`.
    pub details: Vec<String>,
}

impl ObservedCondition {
    /// A condition of `resource` with no VNFC and no details.
    pub fn new(
        condition: impl Into<String>,
        severity: PerceivedSeverity,
        resource: ResourceHandle,
        resource_type: FaultyResourceType,
    ) -> Self {
        ObservedCondition {
            condition: condition.into(),
            severity,
            event_type: EventType::EquipmentAlarm,
            resource,
            resource_type,
            vnfc_resource_id: None,
            details: Vec::new(),
        }
    }

    /// The same condition, on the VNFC whose `vnfcResourceInfo` id is `id`.
    pub fn on_vnfc(mut self, id: impl Into<String>) -> Self {
        self.vnfc_resource_id = Some(id.into());
        self
    }

    /// The same condition, of event type `event_type`.
    pub fn event(mut self, event_type: EventType) -> Self {
        self.event_type = event_type;
        self
    }

    /// The same condition with one more detail.
    pub fn detail(mut self, detail: impl Into<String>) -> Self {
        self.details.push(detail.into());
        self
    }
}
