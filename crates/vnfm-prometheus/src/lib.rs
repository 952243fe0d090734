//! Prometheus and Alertmanager for VNF Fault Management, Performance Management and VNF
//! indicators (ETSI GS NFV-SOL 003): the pieces that talk to, or read from, the monitoring
//! system, with no knowledge of the VNFM's store or API.
//!
//! - [`PrometheusClient`] ([`client`]): instant and range queries of Prometheus' HTTP API
//!   (`/api/v1/query`, `/api/v1/query_range`), typed vectors and matrices with `f64` values
//!   (`NaN` and the infinities included); errors tell an unreachable server, an HTTP error, a
//!   rejected query (Prometheus' own `errorType` and message) and an unreadable answer apart.
//! - [`parse_webhook`] ([`webhook`]): the Alertmanager webhook payload (version 4), with a
//!   size limit and errors that name the offending place as a JSON pointer.
//! - [`AlarmMapping`] ([`alarm`]): one alert to an [`AlarmCandidate`], what a SOL003 alarm
//!   needs: VNF instance and VNFC ids, perceived severity, event type, probable cause, fault
//!   type, fingerprint, firing or resolved. Labels of Tacker's Prometheus plugin are
//!   understood too.
//! - [`tacker`]: the alerts of OpenStack Tacker's Prometheus plugin by `function_type`
//!   ([`PluginFunction`]): `auto_heal` as a [`HealTrigger`], `vnfpm` and `vnfpm_threshold` as
//!   a [`PmSample`], a fault's `pod` label as the VNFCs it names ([`resource_vnfcs`]).
//! - [`PmCatalogue`] ([`catalogue`]): the SOL003 / ETSI GS NFV-IFA 027 performance metrics
//!   (`VCpuUsageMeanVnf`, `ByteIncomingVnfIntCp`, ...) per object type (`Vnf`, `Vnfc`,
//!   `VnfIntCp`, `VnfExtCp`), each a PromQL template that configuration may override.
//!
//! Every failure is an [`Error`]; none of them shows a credential.
//!
//! ```
//! use vnfm_prometheus::{AlarmMapping, PerceivedSeverity, parse_webhook};
//!
//! let body = br#"{
//!   "version": "4", "groupKey": "{}:{alertname=\"VnfcDown\"}", "truncatedAlerts": 0,
//!   "status": "firing", "receiver": "vnfm",
//!   "groupLabels": {}, "commonLabels": {}, "commonAnnotations": {},
//!   "externalURL": "http://alertmanager.example:9093",
//!   "alerts": [{
//!     "status": "firing",
//!     "labels": {"alertname": "VnfcDown", "vnf_instance_id": "a8c5e3b2",
//!                "vnfc_instance_id": "VDU1-0", "perceived_severity": "CRITICAL",
//!                "event_type": "EQUIPMENT_ALARM"},
//!     "annotations": {"probable_cause": "the VM does not answer"},
//!     "startsAt": "2026-01-05T10:00:00.5Z", "endsAt": "0001-01-01T00:00:00Z",
//!     "generatorURL": "http://prometheus.example:9090/graph", "fingerprint": "c0ffee1234567890"
//!   }]
//! }"#;
//! let webhook = parse_webhook(body)?;
//! let alarm = AlarmMapping::default()
//!     .candidate(&webhook.alerts[0])?
//!     .expect("an FM alert");
//! assert_eq!(alarm.vnf_instance_id, "a8c5e3b2");
//! assert_eq!(alarm.vnfc_instance_ids, ["VDU1-0"]);
//! assert_eq!(alarm.perceived_severity, PerceivedSeverity::Critical);
//! assert_eq!(alarm.probable_cause, "the VM does not answer");
//! assert!(!alarm.is_clear());
//! # Ok::<(), vnfm_prometheus::Error>(())
//! ```
//!
//! # Default PromQL of the performance metrics
//!
//! The defaults read gauges and counters that the VNF's exporters publish with the labels
//! `vnf_instance_id`, `vnfc_instance_id` (VNFC metrics) and `cp_instance_id`, `cp_kind`
//! (`int` or `ext`, connection point metrics). `${object_instance_id}`,
//! `${sub_object_instance_ids}` and `${collection_period}` are filled in per query (see
//! [`catalogue`]):
#![doc = include_str!("../promql-defaults.md")]

pub mod alarm;
pub mod catalogue;
pub mod client;
pub mod metrics;
pub mod scale;
pub mod tacker;
pub mod webhook;

mod error;

pub use alarm::{AlarmCandidate, AlarmMapping, EventType, PerceivedSeverity};
pub use catalogue::{PmCatalogue, PmMetric, PmObjectType, PmTarget, PromqlOverrides};
pub use client::{
    Auth, ClientOptions, InstantResult, Labels, Point, PrometheusClient, RangeQuery, Sample, Series,
};
pub use error::Error;
pub use metrics::{PrometheusMetrics, PushedMetrics};
pub use scale::{ScaleTrigger, scale_trigger};
pub use tacker::{
    HealTrigger, PluginFunction, PmSample, ResourceVnfcs, heal_trigger, named_vnfcs, pm_sample,
    resource_vnfcs,
};
pub use webhook::{
    Alert, AlertStatus, DEFAULT_WEBHOOK_LIMIT, Webhook, parse_webhook, parse_webhook_lenient,
    parse_webhook_limited,
};
