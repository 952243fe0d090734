//! From an Alertmanager alert to what a SOL003 alarm needs: an [`AlarmCandidate`].
//!
//! Which labels and annotations carry what is configuration ([`AlarmMapping`], a serde
//! struct whose every field has a default). The defaults read the labels of this project's
//! alerting rules and those of Tacker's Prometheus plugin alike:
//!
//! | alarm attribute | read from (first found) |
//! |---|---|
//! | VNF instance (`managedObjectId`) | label `vnf_instance_id` (required) |
//! | VNFC instances (`vnfcInstanceIds`) | label `vnfc_instance_id` (comma-separated ids allowed) |
//! | VNFC resource pattern | label `pod` (Tacker: a regular expression over the VNFC resources' ids) |
//! | `perceivedSeverity` | labels `perceived_severity`, `severity` |
//! | `eventType` | label `event_type` |
//! | `probableCause` | annotation, then label: `probable_cause`, `summary`; else the alert name |
//! | `faultType` | annotation, then label `fault_type` |
//! | `faultDetails` | annotations, then labels `fault_details`, `description` |
//!
//! An alert with a `function_type` label other than `vnffm` (Tacker's PM and scaling alerts:
//! `vnfpm`, `vnfpm_threshold`, `auto_scale`, `auto_heal`) is not a fault: the mapping answers
//! `None` for it.

use std::fmt;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{Alert, AlertStatus, Error, Webhook};

/// SOL003 `PerceivedSeverityType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PerceivedSeverity {
    /// Service-affecting, immediate action required.
    Critical,
    /// Service-affecting, urgent action required.
    Major,
    /// Not service-affecting, action should be taken.
    Minor,
    /// A potential fault.
    Warning,
    /// The severity cannot be told.
    Indeterminate,
    /// The alarm is cleared.
    Cleared,
}

impl PerceivedSeverity {
    /// The SOL003 spelling (`CRITICAL`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            PerceivedSeverity::Critical => "CRITICAL",
            PerceivedSeverity::Major => "MAJOR",
            PerceivedSeverity::Minor => "MINOR",
            PerceivedSeverity::Warning => "WARNING",
            PerceivedSeverity::Indeterminate => "INDETERMINATE",
            PerceivedSeverity::Cleared => "CLEARED",
        }
    }

    /// The severity a label value names, in any case: the SOL003 names, and the usual
    /// Prometheus `severity` values (`error` and `page` as MAJOR, `warn` as WARNING, `info`
    /// and `none` as INDETERMINATE). `None` for anything else.
    pub fn from_label(value: &str) -> Option<PerceivedSeverity> {
        Some(match value.trim().to_ascii_lowercase().as_str() {
            "critical" | "fatal" => PerceivedSeverity::Critical,
            "major" | "error" | "page" | "high" => PerceivedSeverity::Major,
            "minor" | "low" => PerceivedSeverity::Minor,
            "warning" | "warn" => PerceivedSeverity::Warning,
            "indeterminate" | "info" | "none" => PerceivedSeverity::Indeterminate,
            "cleared" => PerceivedSeverity::Cleared,
            _ => return None,
        })
    }
}

impl fmt::Display for PerceivedSeverity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// SOL003 `EventType` of an alarm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum EventType {
    /// A communication failure.
    CommunicationsAlarm,
    /// A software or processing fault.
    ProcessingErrorAlarm,
    /// An environmental condition.
    EnvironmentalAlarm,
    /// A degraded quality of service.
    QosAlarm,
    /// An equipment fault.
    EquipmentAlarm,
}

impl EventType {
    /// The SOL003 spelling (`PROCESSING_ERROR_ALARM`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::CommunicationsAlarm => "COMMUNICATIONS_ALARM",
            EventType::ProcessingErrorAlarm => "PROCESSING_ERROR_ALARM",
            EventType::EnvironmentalAlarm => "ENVIRONMENTAL_ALARM",
            EventType::QosAlarm => "QOS_ALARM",
            EventType::EquipmentAlarm => "EQUIPMENT_ALARM",
        }
    }

    /// The event type a label value names, in any case, with or without the `_ALARM`
    /// suffix; `None` for anything else.
    pub fn from_label(value: &str) -> Option<EventType> {
        let v = value.trim().to_ascii_uppercase();
        let v = v.strip_suffix("_ALARM").unwrap_or(&v);
        Some(match v {
            "COMMUNICATIONS" => EventType::CommunicationsAlarm,
            "PROCESSING_ERROR" => EventType::ProcessingErrorAlarm,
            "ENVIRONMENTAL" => EventType::EnvironmentalAlarm,
            "QOS" => EventType::QosAlarm,
            "EQUIPMENT" => EventType::EquipmentAlarm,
            _ => return None,
        })
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which labels and annotations of an alert carry which alarm attribute. Every field has a
/// default (see the [module documentation](self)), so a configuration names only what it
/// changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AlarmMapping {
    /// The label naming the VNF instance.
    pub vnf_instance_label: String,
    /// The label naming the VNFC instance(s), comma-separated.
    pub vnfc_instance_label: String,
    /// The label holding a regular expression over VNFC resource ids (Tacker's `pod`).
    pub vnfc_resource_label: String,
    /// Labels naming the perceived severity, the first present wins.
    pub severity_labels: Vec<String>,
    /// The severity when no severity label is present or its value is unknown.
    pub default_severity: PerceivedSeverity,
    /// The label naming the event type.
    pub event_type_label: String,
    /// The event type when the label is absent or its value is unknown.
    pub default_event_type: EventType,
    /// Annotations (then labels) giving the probable cause, the first present wins.
    pub probable_cause_keys: Vec<String>,
    /// Annotations (then labels) giving the fault type, the first present wins.
    pub fault_type_keys: Vec<String>,
    /// Annotations (then labels) giving fault details, each present one adds a line.
    pub fault_details_keys: Vec<String>,
    /// The label that tells fault alerts from others (Tacker's `function_type`); an alert
    /// where it is present with a value other than `fault_function_type` is not a fault.
    pub function_type_label: String,
    /// The `function_type` value of fault alerts.
    pub fault_function_type: String,
}

impl Default for AlarmMapping {
    fn default() -> Self {
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        AlarmMapping {
            vnf_instance_label: "vnf_instance_id".into(),
            vnfc_instance_label: "vnfc_instance_id".into(),
            vnfc_resource_label: "pod".into(),
            severity_labels: strings(&["perceived_severity", "severity"]),
            default_severity: PerceivedSeverity::Indeterminate,
            event_type_label: "event_type".into(),
            default_event_type: EventType::ProcessingErrorAlarm,
            probable_cause_keys: strings(&["probable_cause", "summary"]),
            fault_type_keys: strings(&["fault_type"]),
            fault_details_keys: strings(&["fault_details", "description"]),
            function_type_label: "function_type".into(),
            fault_function_type: "vnffm".into(),
        }
    }
}

/// What an alarm needs, read from one alert. The store decides whether it raises a new
/// alarm, changes one, or clears one (by [`fingerprint`](Self::fingerprint)).
#[derive(Debug, Clone, PartialEq)]
pub struct AlarmCandidate {
    /// The VNF instance (the alarm's `managedObjectId`).
    pub vnf_instance_id: String,
    /// VNFC instance ids named by the alert (may be empty).
    pub vnfc_instance_ids: Vec<String>,
    /// A regular expression over the ids of VNFC resources (Tacker's `pod` label), to be
    /// matched against the instance's `vnfcResourceInfo` when no VNFC id is named.
    pub vnfc_resource_pattern: Option<String>,
    /// Firing or resolved.
    pub status: AlertStatus,
    /// The severity the alert's labels give (as it was while firing; see
    /// [`effective_severity`](Self::effective_severity)).
    pub perceived_severity: PerceivedSeverity,
    /// The event type.
    pub event_type: EventType,
    /// The probable cause.
    pub probable_cause: String,
    /// The fault type, if given.
    pub fault_type: Option<String>,
    /// Fault details, one line per source.
    pub fault_details: Vec<String>,
    /// Identifies the alert from firing to resolved (Alertmanager's fingerprint; a hash of
    /// the labels when the payload had none).
    pub fingerprint: String,
    /// The alert's `alertname`.
    pub alert_name: Option<String>,
    /// When the fault began (the alarm's `eventTime`).
    pub starts_at: Timestamp,
    /// When it ended (resolved alerts only: the alarm's `alarmClearedTime`).
    pub ends_at: Option<Timestamp>,
    /// Where the alert came from (Prometheus' graph URL).
    pub generator_url: String,
    /// What the mapping had to guess (an unknown severity or event type), for the log.
    pub warnings: Vec<String>,
}

impl AlarmCandidate {
    /// Whether the alert is resolved, that is the alarm is to be cleared.
    pub fn is_clear(&self) -> bool {
        self.status == AlertStatus::Resolved
    }

    /// CLEARED for a resolved alert, the labelled severity otherwise.
    pub fn effective_severity(&self) -> PerceivedSeverity {
        if self.is_clear() {
            PerceivedSeverity::Cleared
        } else {
            self.perceived_severity
        }
    }
}

impl AlarmMapping {
    /// The alarm candidate of `alert`; `None` when the alert is not a fault (its
    /// `function_type` names another function). Fails when no VNF instance is named.
    pub fn candidate(&self, alert: &Alert) -> Result<Option<AlarmCandidate>, Error> {
        let label = |k: &str| {
            alert
                .labels
                .get(k)
                .map(|v| v.trim())
                .filter(|v| !v.is_empty())
        };
        let either = |k: &str| {
            alert
                .annotations
                .get(k)
                .map(|v| v.trim())
                .filter(|v| !v.is_empty())
                .or_else(|| label(k))
        };
        if let Some(f) = label(&self.function_type_label)
            && f != self.fault_function_type
        {
            return Ok(None);
        }
        let fingerprint = if alert.fingerprint.is_empty() {
            label_hash(alert)
        } else {
            alert.fingerprint.clone()
        };
        let Some(vnf_instance_id) = label(&self.vnf_instance_label) else {
            return Err(Error::NoVnfInstance {
                alert: alert.name().unwrap_or(&fingerprint).to_string(),
                label: self.vnf_instance_label.clone(),
            });
        };
        let mut warnings = Vec::new();
        let severity_label = self.severity_labels.iter().find_map(|k| label(k));
        let perceived_severity = match severity_label {
            None => self.default_severity,
            Some(v) => PerceivedSeverity::from_label(v).unwrap_or_else(|| {
                warnings.push(format!(
                    "unknown severity {v:?}, taken as {}",
                    self.default_severity
                ));
                self.default_severity
            }),
        };
        let event_type = match label(&self.event_type_label) {
            None => self.default_event_type,
            Some(v) => EventType::from_label(v).unwrap_or_else(|| {
                warnings.push(format!(
                    "unknown event type {v:?}, taken as {}",
                    self.default_event_type
                ));
                self.default_event_type
            }),
        };
        let probable_cause = self
            .probable_cause_keys
            .iter()
            .find_map(|k| either(k))
            .or(alert.name())
            .unwrap_or("unknown")
            .to_string();
        Ok(Some(AlarmCandidate {
            vnf_instance_id: vnf_instance_id.to_string(),
            vnfc_instance_ids: label(&self.vnfc_instance_label)
                .map(|v| {
                    v.split(',')
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default(),
            vnfc_resource_pattern: label(&self.vnfc_resource_label).map(String::from),
            status: alert.status,
            perceived_severity,
            event_type,
            probable_cause,
            fault_type: self
                .fault_type_keys
                .iter()
                .find_map(|k| either(k))
                .map(String::from),
            fault_details: self
                .fault_details_keys
                .iter()
                .filter_map(|k| either(k))
                .map(String::from)
                .collect(),
            fingerprint,
            alert_name: alert.name().map(String::from),
            starts_at: alert.starts_at,
            ends_at: match alert.status {
                AlertStatus::Resolved => alert.ends_at,
                AlertStatus::Firing => None,
            },
            generator_url: alert.generator_url.clone(),
            warnings,
        }))
    }

    /// The candidates of every alert of `webhook`, in order; alerts that are not faults are
    /// left out, alerts that cannot be mapped are errors in their place.
    pub fn candidates(&self, webhook: &Webhook) -> Vec<Result<AlarmCandidate, Error>> {
        webhook
            .alerts
            .iter()
            .filter_map(|a| self.candidate(a).transpose())
            .collect()
    }
}

/// A stable hash of an alert's labels (they come sorted by name).
fn label_hash(alert: &Alert) -> String {
    let mut h = Sha256::new();
    for (k, v) in &alert.labels {
        h.update(k.as_bytes());
        h.update([0xff]);
        h.update(v.as_bytes());
        h.update([0xff]);
    }
    hex::encode(&h.finalize()[..8])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Labels;

    fn alert(labels: &[(&str, &str)], annotations: &[(&str, &str)]) -> Alert {
        let map = |kv: &[(&str, &str)]| -> Labels {
            kv.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        Alert {
            status: AlertStatus::Firing,
            labels: map(labels),
            annotations: map(annotations),
            starts_at: "2026-01-05T10:00:00Z".parse().unwrap(),
            ends_at: Some("2026-01-05T10:04:00Z".parse().unwrap()),
            generator_url: "http://prom/graph".into(),
            fingerprint: "fp1".into(),
        }
    }

    #[test]
    fn severities_map_to_sol003() {
        use PerceivedSeverity::*;
        for (label, expected) in [
            ("CRITICAL", Critical),
            ("critical", Critical),
            (" Major ", Major),
            ("error", Major),
            ("MINOR", Minor),
            ("warning", Warning),
            ("warn", Warning),
            ("info", Indeterminate),
            ("INDETERMINATE", Indeterminate),
            ("cleared", Cleared),
        ] {
            assert_eq!(
                PerceivedSeverity::from_label(label),
                Some(expected),
                "{label}"
            );
        }
        assert_eq!(PerceivedSeverity::from_label("CRITICAL,"), None);
        assert_eq!(PerceivedSeverity::from_label(""), None);
        assert_eq!(serde_json::to_value(Major).unwrap(), "MAJOR");
    }

    #[test]
    fn event_types_map_to_sol003() {
        assert_eq!(
            EventType::from_label("processing_error_alarm"),
            Some(EventType::ProcessingErrorAlarm)
        );
        assert_eq!(EventType::from_label("QOS"), Some(EventType::QosAlarm));
        assert_eq!(
            EventType::from_label("EQUIPMENT_ALARM"),
            Some(EventType::EquipmentAlarm)
        );
        assert_eq!(EventType::from_label("DISK"), None);
    }

    #[test]
    fn a_tacker_fault_alert_maps() {
        // The labels and annotations of Tacker's Prometheus plugin fault alerts.
        let a = alert(
            &[
                ("alertname", "Test"),
                ("receiver_type", "tacker"),
                ("function_type", "vnffm"),
                ("vnf_instance_id", "3721ab69"),
                ("pod", r"test\-test1\-[0-9a-f]{1,10}-[0-9a-z]{5}$"),
                ("perceived_severity", "CRITICAL"),
                ("event_type", "PROCESSING_ERROR_ALARM"),
            ],
            &[
                ("probable_cause", "Server is down."),
                ("fault_type", "Error"),
                ("fault_details", "Fault detail"),
            ],
        );
        let c = AlarmMapping::default().candidate(&a).unwrap().unwrap();
        assert_eq!(c.vnf_instance_id, "3721ab69");
        assert!(c.vnfc_instance_ids.is_empty());
        assert_eq!(
            c.vnfc_resource_pattern.as_deref(),
            Some(r"test\-test1\-[0-9a-f]{1,10}-[0-9a-z]{5}$")
        );
        assert_eq!(c.perceived_severity, PerceivedSeverity::Critical);
        assert_eq!(c.event_type, EventType::ProcessingErrorAlarm);
        assert_eq!(c.probable_cause, "Server is down.");
        assert_eq!(c.fault_type.as_deref(), Some("Error"));
        assert_eq!(c.fault_details, ["Fault detail"]);
        assert_eq!(c.fingerprint, "fp1");
        assert_eq!(c.ends_at, None, "a firing alert has not ended");
        assert!(c.warnings.is_empty());
    }

    #[test]
    fn other_tacker_functions_are_not_faults() {
        for f in ["vnfpm", "vnfpm_threshold", "auto_scale"] {
            let a = alert(&[("function_type", f), ("vnf_instance_id", "v")], &[]);
            assert_eq!(AlarmMapping::default().candidate(&a).unwrap(), None, "{f}");
        }
    }

    #[test]
    fn resolved_alerts_clear() {
        let mut a = alert(
            &[
                ("alertname", "VnfcDown"),
                ("vnf_instance_id", "v"),
                ("vnfc_instance_id", "c1, c2"),
                ("severity", "warning"),
            ],
            &[
                ("summary", "VNFC down"),
                ("description", "no answer for 1m"),
            ],
        );
        a.status = AlertStatus::Resolved;
        let c = AlarmMapping::default().candidate(&a).unwrap().unwrap();
        assert!(c.is_clear());
        assert_eq!(c.perceived_severity, PerceivedSeverity::Warning);
        assert_eq!(c.effective_severity(), PerceivedSeverity::Cleared);
        assert_eq!(c.ends_at.unwrap().to_string(), "2026-01-05T10:04:00Z");
        assert_eq!(c.vnfc_instance_ids, ["c1", "c2"]);
        assert_eq!(c.probable_cause, "VNFC down");
        assert_eq!(c.fault_details, ["no answer for 1m"]);
        assert_eq!(c.event_type, EventType::ProcessingErrorAlarm);
    }

    #[test]
    fn guesses_are_reported() {
        let a = alert(
            &[
                ("alertname", "X"),
                ("vnf_instance_id", "v"),
                ("perceived_severity", "CRITICAL,"),
                ("event_type", "DISK"),
            ],
            &[],
        );
        let c = AlarmMapping::default().candidate(&a).unwrap().unwrap();
        assert_eq!(c.perceived_severity, PerceivedSeverity::Indeterminate);
        assert_eq!(c.event_type, EventType::ProcessingErrorAlarm);
        assert_eq!(
            c.probable_cause, "X",
            "the alert name when nothing else is given"
        );
        assert_eq!(c.warnings.len(), 2, "{:?}", c.warnings);
        assert!(c.warnings[0].contains("CRITICAL,"));
    }

    #[test]
    fn missing_vnf_instance_is_an_error_naming_the_label() {
        let a = alert(&[("alertname", "Orphan")], &[]);
        let e = AlarmMapping::default().candidate(&a).unwrap_err();
        assert!(
            matches!(&e, Error::NoVnfInstance { alert, label } if alert == "Orphan" && label == "vnf_instance_id"),
            "{e:?}"
        );
    }

    #[test]
    fn label_names_are_configurable() {
        let mapping: AlarmMapping = serde_json::from_value(serde_json::json!({
            "vnf_instance_label": "vnf", "vnfc_instance_label": "vnfc",
            "default_severity": "MINOR"
        }))
        .unwrap();
        assert_eq!(mapping.severity_labels, ["perceived_severity", "severity"]);
        let a = alert(&[("vnf", "v9"), ("vnfc", "c9")], &[]);
        let c = mapping.candidate(&a).unwrap().unwrap();
        assert_eq!(
            (c.vnf_instance_id.as_str(), c.vnfc_instance_ids.as_slice()),
            ("v9", &["c9".to_string()][..])
        );
        assert_eq!(c.perceived_severity, PerceivedSeverity::Minor);
        assert!(
            serde_json::from_value::<AlarmMapping>(serde_json::json!({"vnf_label": "x"})).is_err()
        );
    }

    #[test]
    fn a_webhook_maps_alert_by_alert() {
        let fault = alert(&[("alertname", "A"), ("vnf_instance_id", "v")], &[]);
        let pm = alert(&[("function_type", "vnfpm"), ("vnf_instance_id", "v")], &[]);
        let orphan = alert(&[("alertname", "B")], &[]);
        let webhook = Webhook {
            version: "4".into(),
            group_key: String::new(),
            truncated_alerts: 0,
            status: AlertStatus::Firing,
            receiver: "vnfm".into(),
            group_labels: Labels::new(),
            common_labels: Labels::new(),
            common_annotations: Labels::new(),
            external_url: String::new(),
            alerts: vec![fault, pm, orphan],
        };
        let results = AlarmMapping::default().candidates(&webhook);
        assert_eq!(results.len(), 2, "the PM alert is left out");
        assert_eq!(
            results[0].as_ref().unwrap().alert_name.as_deref(),
            Some("A")
        );
        assert!(matches!(&results[1], Err(Error::NoVnfInstance { alert, .. }) if alert == "B"));
    }

    #[test]
    fn alerts_without_fingerprint_get_a_stable_one() {
        let mut a = alert(&[("vnf_instance_id", "v"), ("alertname", "A")], &[]);
        a.fingerprint.clear();
        let one = AlarmMapping::default()
            .candidate(&a)
            .unwrap()
            .unwrap()
            .fingerprint;
        a.status = AlertStatus::Resolved;
        let two = AlarmMapping::default()
            .candidate(&a)
            .unwrap()
            .unwrap()
            .fingerprint;
        assert_eq!(one, two);
        assert_eq!(one.len(), 16);
        a.labels.insert("x".into(), "y".into());
        assert_ne!(
            AlarmMapping::default()
                .candidate(&a)
                .unwrap()
                .unwrap()
                .fingerprint,
            one
        );
    }
}
