//! The fault port: how infrastructure drivers, MgmtDriver plugins and monitoring receivers
//! report faults of a VNF instance without depending on fault management; and the indicator
//! port ([`IndicatorSink`]) through which they set VNF indicator values.
//!
//! A reporter describes a fault with plain data ([`FaultReport`]) and calls
//! [`FaultSink::raise`] while the condition holds and [`FaultSink::clear`] when it ends. The
//! fault is identified by [`FaultId`] (instance, VNFC, fault type, probable cause): raising
//! the same fault again updates the open alarm instead of creating a second one, so a
//! reporter may raise on every observation.
//!
//! ```
//! use vnfm_driver_api::fault::{FaultId, FaultReport};
//! use vnfm_types::{EventType, PerceivedSeverity, VnfInstanceId};
//!
//! let id = FaultId {
//!     instance_id: VnfInstanceId::new("i1"),
//!     vnfc_instance_id: Some("VDU1-0".into()),
//!     fault_type: None,
//!     probable_cause: "pod crash-looping".into(),
//! };
//! let report = FaultReport::new(id.clone(), PerceivedSeverity::Major, EventType::ProcessingErrorAlarm);
//! assert_eq!(report.fault.dedup_key(), id.dedup_key());
//! assert_ne!(id.dedup_key(), FaultId { vnfc_instance_id: None, ..id.clone() }.dedup_key());
//! ```

use async_trait::async_trait;
use vnfm_types::{DateTime, EventType, FaultyResourceInfo, PerceivedSeverity, VnfInstanceId};

use crate::DriverError;

/// What identifies a fault: one open alarm at most per identity.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FaultId {
    /// The VNF instance concerned.
    pub instance_id: VnfInstanceId,
    /// The VNFC instance concerned, if the fault is of one VNFC.
    pub vnfc_instance_id: Option<String>,
    /// The type of fault (e.g. the alert name), if known.
    pub fault_type: Option<String>,
    /// The probable cause.
    pub probable_cause: String,
}

impl FaultId {
    /// The store's de-duplication key of the fault: its parts, each length-prefixed so that no
    /// two identities give the same key.
    pub fn dedup_key(&self) -> String {
        let parts = [
            self.instance_id.as_str(),
            self.vnfc_instance_id.as_deref().unwrap_or(""),
            self.fault_type.as_deref().unwrap_or(""),
            self.probable_cause.as_str(),
        ];
        parts
            .iter()
            .map(|p| format!("{}:{p}", p.len()))
            .collect::<Vec<_>>()
            .join("|")
    }
}

/// A fault observed now: what it is and how bad.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultReport {
    /// Which fault.
    pub fault: FaultId,
    /// How urgent (`CLEARED` is not a raise: call [`FaultSink::clear`]).
    pub severity: PerceivedSeverity,
    /// The kind of event.
    pub event_type: EventType,
    /// When the fault was observed; now when absent.
    pub event_time: Option<DateTime>,
    /// The faulty virtualised resource, when known.
    pub faulty_resource: Option<FaultyResourceInfo>,
    /// Free-text details (`faultDetails`).
    pub details: Vec<String>,
}

impl FaultReport {
    /// A report with no time, resource or details.
    pub fn new(fault: FaultId, severity: PerceivedSeverity, event_type: EventType) -> Self {
        FaultReport {
            fault,
            severity,
            event_type,
            event_time: None,
            faulty_resource: None,
            details: Vec::new(),
        }
    }
}

/// What a raise did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Raised {
    /// A new alarm with this id.
    New(String),
    /// The open alarm with this id changed (severity, time or details).
    Updated(String),
    /// The open alarm with this id already said the same: nothing was written or notified.
    Unchanged(String),
}

/// Where faults go (implemented by the fault management core).
#[async_trait]
pub trait FaultSink: Send + Sync {
    /// Raises the fault, or updates its open alarm.
    async fn raise(&self, report: FaultReport) -> Result<Raised, DriverError>;

    /// Clears the open alarm of the fault at `at` (now when absent); returns its id, `None`
    /// when no alarm of the fault is open.
    async fn clear(
        &self,
        fault: &FaultId,
        at: Option<DateTime>,
    ) -> Result<Option<String>, DriverError>;
}

/// Where VNF indicator values go (implemented by the core's indicator management): for
/// values that a management driver or an EM computes, not the VNFM's monitoring system.
#[async_trait]
pub trait IndicatorSink: Send + Sync {
    /// Sets indicator `indicator_id` (one the instance's VNFD declares) of `instance` to
    /// `value`; whether the value changed. [`DriverError::InvalidInput`] when the VNFD
    /// declares no such indicator or the instance is not instantiated.
    async fn set_indicator(
        &self,
        instance: &VnfInstanceId,
        indicator_id: &str,
        value: serde_json::Value,
    ) -> Result<bool, DriverError>;
}
