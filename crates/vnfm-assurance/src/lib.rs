//! Service assurance of VNF instances, on top of the lifecycle core (`vnfm-lcm`): what is
//! observed about running instances, and the lifecycle operations it starts on its own.
//!
//! - [`fm`]: VNF fault management: alarms raised and cleared through the `FaultSink` port,
//!   de-duplicated, acknowledged, and the FM subscription kind; automatic healing and scaling
//!   ([`fm::AutoHeal`], [`fm::AutoScale`]), which start operations through the core's
//!   [`Lcm`](vnfm_lcm::Lcm), and the infrastructure watch ([`fm::InfraWatch`]).
//! - [`pm`]: VNF performance management: PM jobs, thresholds, their reports and crossings,
//!   collected through the `MetricsSource` port or pushed.
//! - [`indicators`]: VNF indicators: values of the indicators a VNFD declares, collected or
//!   pushed, and the indicator subscription kind.
//!
//! The core depends on none of this: the runner reaches fault management through the
//! `FaultSink` and `IndicatorSink` ports of `vnfm-driver-api`, and reads the names of the
//! automation switches from [`vnfm_lcm::automation`].
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use std::sync::Arc;
//! use vnfm_assurance::FaultManager;
//! use vnfm_driver_api::FixedAnswer;
//! use vnfm_driver_api::fault::{FaultId, FaultReport, Raised};
//! use vnfm_lcm::Keyring;
//! use vnfm_types::{EventType, PerceivedSeverity, VnfInstanceId};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let store = vnfm_store_sql::SqliteStore::open(dir.path().join("s.db")).await.unwrap();
//! let keyring = Arc::new(Keyring::from_key_list(&Keyring::generate_key()).unwrap());
//! // Notifications would go out through this sender; every callback answers 204.
//! let fm = FaultManager::new(Arc::new(store), keyring, Arc::new(FixedAnswer(204)));
//!
//! let fault = FaultId {
//!     instance_id: VnfInstanceId::new("i1"),
//!     vnfc_instance_id: None,
//!     fault_type: Some("HighCpu".into()),
//!     probable_cause: "cpu above 90%".into(),
//! };
//! let report = FaultReport::new(fault, PerceivedSeverity::Major, EventType::QosAlarm);
//! let (alarm, raised) = fm.raise(&report).await.unwrap();
//! assert!(matches!(raised, Raised::New(_)));
//!
//! // The same report again changes nothing: one open alarm per fault.
//! let (_, again) = fm.raise(&report).await.unwrap();
//! assert_eq!(again, Raised::Unchanged(alarm.id));
//! # }
//! ```

pub mod fm;
pub mod indicators;
pub mod pm;

pub use fm::FaultManager;
pub use indicators::IndicatorManager;
pub use pm::PerformanceManager;
