//! The Alertmanager webhook payload, version 4 (what a `webhook_configs` receiver POSTs).
//!
//! [`parse_webhook`] reads it with a size limit; a payload that does not fit is refused with
//! an [`Error::WebhookInvalid`] naming the offending place as a JSON pointer
//! (`/alerts/0/startsAt`) and what is wrong there. Unknown fields are ignored, so newer
//! Alertmanagers that add fields are still read.

use std::fmt;

use jiff::Timestamp;
use serde::{Deserialize, Deserializer};
use serde_path_to_error::Segment;

use crate::{Error, Labels};

/// The largest payload [`parse_webhook`] reads: 4 MiB (Alertmanager's `max_alerts` bounds
/// it; thousands of alerts fit).
pub const DEFAULT_WEBHOOK_LIMIT: usize = 4 << 20;

/// Whether an alert (or a group) is firing or resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AlertStatus {
    /// Active.
    Firing,
    /// No longer active.
    Resolved,
}

impl fmt::Display for AlertStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AlertStatus::Firing => "firing",
            AlertStatus::Resolved => "resolved",
        })
    }
}

/// One notification of an Alertmanager webhook receiver: a group of alerts.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Webhook {
    /// The payload version; always `"4"` here.
    pub version: String,
    /// Identifies the group (for de-duplication).
    #[serde(default)]
    pub group_key: String,
    /// How many alerts were left out by the receiver's `max_alerts`.
    #[serde(default)]
    pub truncated_alerts: u64,
    /// `firing` when at least one alert of the group fires.
    pub status: AlertStatus,
    /// The receiver's name.
    #[serde(default)]
    pub receiver: String,
    /// The labels the group is formed by.
    #[serde(default)]
    pub group_labels: Labels,
    /// The labels all alerts share.
    #[serde(default)]
    pub common_labels: Labels,
    /// The annotations all alerts share.
    #[serde(default)]
    pub common_annotations: Labels,
    /// Alertmanager's external URL.
    #[serde(default, rename = "externalURL")]
    pub external_url: String,
    /// The alerts.
    pub alerts: Vec<Alert>,
}

/// One alert of a [`Webhook`].
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Alert {
    /// Firing or resolved.
    pub status: AlertStatus,
    /// The alert's labels (`alertname` and those of the rule and series).
    pub labels: Labels,
    /// The alert's annotations.
    #[serde(default)]
    pub annotations: Labels,
    /// When the alert started firing.
    #[serde(deserialize_with = "instant")]
    pub starts_at: Timestamp,
    /// When it ended; `None` when Alertmanager sent Go's zero time ("not ended").
    #[serde(default, deserialize_with = "optional_instant")]
    pub ends_at: Option<Timestamp>,
    /// The URL of the expression that raised it (Prometheus' graph page).
    #[serde(default, rename = "generatorURL")]
    pub generator_url: String,
    /// Alertmanager's identity of the alert (a hash of its labels): stable from firing to
    /// resolved, the key for de-duplication.
    #[serde(default)]
    pub fingerprint: String,
}

impl Alert {
    /// The `alertname` label, if any.
    pub fn name(&self) -> Option<&str> {
        self.labels.get("alertname").map(String::as_str)
    }
}

fn instant<'de, D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
    let s = String::deserialize(d)?;
    s.parse::<Timestamp>()
        .map_err(|e| serde::de::Error::custom(format!("{s:?} is not an RFC 3339 time: {e}")))
}

fn optional_instant<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Timestamp>, D::Error> {
    let Some(s) = Option::<String>::deserialize(d)? else {
        return Ok(None);
    };
    if s.is_empty() || s.starts_with("0001-01-01T00:00:00") {
        return Ok(None);
    }
    s.parse::<Timestamp>()
        .map(Some)
        .map_err(|e| serde::de::Error::custom(format!("{s:?} is not an RFC 3339 time: {e}")))
}

/// Reads a webhook payload of at most [`DEFAULT_WEBHOOK_LIMIT`] bytes.
pub fn parse_webhook(body: &[u8]) -> Result<Webhook, Error> {
    parse_webhook_limited(body, DEFAULT_WEBHOOK_LIMIT)
}

/// Reads a webhook payload of at most `limit` bytes.
pub fn parse_webhook_limited(body: &[u8], limit: usize) -> Result<Webhook, Error> {
    if body.len() > limit {
        return Err(Error::WebhookTooLarge {
            size: body.len(),
            limit,
        });
    }
    let mut de = serde_json::Deserializer::from_slice(body);
    let webhook: Webhook = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let pointer = json_pointer(e.path());
        Error::WebhookInvalid {
            pointer,
            source: e.into_inner(),
        }
    })?;
    de.end().map_err(|source| Error::WebhookInvalid {
        pointer: String::new(),
        source,
    })?;
    if webhook.version != "4" {
        return Err(Error::WebhookVersion(webhook.version));
    }
    Ok(webhook)
}

/// Reads a webhook payload of at most [`DEFAULT_WEBHOOK_LIMIT`] bytes as OpenStack Tacker's
/// Prometheus plugin accepts it: a label or annotation value that is a number or a boolean
/// is read as its JSON text (Tacker's `annotations.value: 99`), one that is `null` as absent
/// (Tacker's `sub_object_instance_id: null`); everything else as [`parse_webhook`].
pub fn parse_webhook_lenient(body: &[u8]) -> Result<Webhook, Error> {
    if body.len() > DEFAULT_WEBHOOK_LIMIT {
        return parse_webhook(body);
    }
    let Ok(mut doc) = serde_json::from_slice::<serde_json::Value>(body) else {
        // Not JSON: the strict reading says where.
        return parse_webhook(body);
    };
    let alerts = doc
        .get_mut("alerts")
        .and_then(serde_json::Value::as_array_mut)
        .into_iter()
        .flatten();
    let maps = alerts
        .filter_map(serde_json::Value::as_object_mut)
        .flat_map(|a| {
            a.iter_mut()
                .filter(|(k, _)| *k == "labels" || *k == "annotations")
                .map(|(_, v)| v)
        });
    for map in maps.filter_map(serde_json::Value::as_object_mut) {
        map.retain(|_, v| !v.is_null());
        for v in map.values_mut() {
            if v.is_number() || v.is_boolean() {
                *v = serde_json::Value::String(v.to_string());
            }
        }
    }
    let body = serde_json::to_vec(&doc).map_err(|source| Error::WebhookInvalid {
        pointer: String::new(),
        source,
    })?;
    parse_webhook(&body)
}

/// The RFC 6901 pointer of a serde path.
fn json_pointer(path: &serde_path_to_error::Path) -> String {
    let mut pointer = String::new();
    for segment in path {
        pointer.push('/');
        match segment {
            Segment::Seq { index } => pointer.push_str(&index.to_string()),
            Segment::Map { key } => pointer.push_str(&key.replace('~', "~0").replace('/', "~1")),
            Segment::Enum { variant } => pointer.push_str(variant),
            Segment::Unknown => pointer.push('?'),
        }
    }
    pointer
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn payload() -> Value {
        json!({
            "version": "4",
            "groupKey": "{}:{alertname=\"HighCpu\"}",
            "truncatedAlerts": 0,
            "status": "resolved",
            "receiver": "vnfm",
            "groupLabels": {"alertname": "HighCpu"},
            "commonLabels": {"alertname": "HighCpu"},
            "commonAnnotations": {},
            "externalURL": "http://am:9093",
            "alerts": [{
                "status": "resolved",
                "labels": {"alertname": "HighCpu", "vnf_instance_id": "v1"},
                "annotations": {"summary": "CPU high"},
                "startsAt": "2026-01-05T10:00:00.123456789+01:00",
                "endsAt": "2026-01-05T09:05:00Z",
                "generatorURL": "http://prom:9090/graph",
                "fingerprint": "0123456789abcdef"
            }]
        })
    }

    fn parse(v: &Value) -> Result<Webhook, Error> {
        parse_webhook(serde_json::to_vec(v).unwrap().as_slice())
    }

    fn invalid_at(v: &Value) -> (String, String) {
        match parse(v) {
            Err(e @ Error::WebhookInvalid { .. }) => {
                let shown = e.to_string();
                let Error::WebhookInvalid { pointer, .. } = e else {
                    unreachable!()
                };
                (pointer, shown)
            }
            other => panic!("not refused as invalid: {other:?}"),
        }
    }

    #[test]
    fn a_full_payload_is_read() {
        let w = parse(&payload()).unwrap();
        assert_eq!(w.status, AlertStatus::Resolved);
        assert_eq!(w.receiver, "vnfm");
        let a = &w.alerts[0];
        assert_eq!(a.name(), Some("HighCpu"));
        assert_eq!(a.fingerprint, "0123456789abcdef");
        assert_eq!(a.starts_at.to_string(), "2026-01-05T09:00:00.123456789Z");
        assert_eq!(a.ends_at.unwrap().to_string(), "2026-01-05T09:05:00Z");
        assert_eq!(a.annotations["summary"], "CPU high");
    }

    #[test]
    fn zero_end_time_means_not_ended() {
        let mut v = payload();
        v["alerts"][0]["endsAt"] = json!("0001-01-01T00:00:00Z");
        assert_eq!(parse(&v).unwrap().alerts[0].ends_at, None);
    }

    #[test]
    fn malformed_payloads_name_the_place() {
        let mut v = payload();
        v["alerts"][0]["startsAt"] = json!("yesterday");
        let (pointer, shown) = invalid_at(&v);
        assert_eq!(pointer, "/alerts/0/startsAt");
        assert!(
            shown.contains("/alerts/0/startsAt") && shown.contains("yesterday"),
            "{shown}"
        );

        let mut v = payload();
        v["alerts"][0]["status"] = json!("pending");
        assert_eq!(invalid_at(&v).0, "/alerts/0/status");

        let mut v = payload();
        v["alerts"][0]["labels"]["a/b~c"] = json!(5);
        assert_eq!(invalid_at(&v).0, "/alerts/0/labels/a~1b~0c");

        let mut v = payload();
        v.as_object_mut().unwrap().remove("alerts");
        let (pointer, shown) = invalid_at(&v);
        assert_eq!(pointer, "");
        assert!(
            shown.contains("the top level") && shown.contains("alerts"),
            "{shown}"
        );

        let mut v = payload();
        v["alerts"] = json!({"0": {}});
        assert_eq!(invalid_at(&v).0, "/alerts");
    }

    #[test]
    fn not_json_is_refused_with_the_position() {
        let e = parse_webhook(b"{\"version\": \"4\", ").unwrap_err();
        assert!(matches!(e, Error::WebhookInvalid { .. }), "{e:?}");
        assert!(e.to_string().contains("line 1"), "{e}");
        let e = parse_webhook(&[serde_json::to_vec(&payload()).unwrap(), b"x".to_vec()].concat())
            .unwrap_err();
        assert!(e.to_string().contains("trailing"), "{e}");
    }

    #[test]
    fn other_versions_are_refused() {
        let mut v = payload();
        v["version"] = json!("5");
        match parse(&v) {
            Err(Error::WebhookVersion(found)) => assert_eq!(found, "5"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_lenient_reading_takes_tackers_numbers_and_nulls() {
        let mut v = payload();
        v["alerts"][0]["labels"]["sub_object_instance_id"] = Value::Null;
        v["alerts"][0]["annotations"]["value"] = json!(99);
        v["alerts"][0]["labels"]["up"] = json!(true);
        assert!(parse(&v).is_err(), "the strict reading refuses them");
        let w = parse_webhook_lenient(&serde_json::to_vec(&v).unwrap()).unwrap();
        let a = &w.alerts[0];
        assert_eq!(a.annotations["value"], "99");
        assert_eq!(a.labels["up"], "true");
        assert!(!a.labels.contains_key("sub_object_instance_id"));
        // Other faults are still named.
        v["alerts"][0]["labels"]["x"] = json!({"nested": 1});
        let e = parse_webhook_lenient(&serde_json::to_vec(&v).unwrap()).unwrap_err();
        assert!(e.to_string().contains("/alerts/0/labels/x"), "{e}");
    }

    #[test]
    fn the_size_limit_holds() {
        let body = serde_json::to_vec(&payload()).unwrap();
        assert!(parse_webhook_limited(&body, body.len()).is_ok());
        match parse_webhook_limited(&body, body.len() - 1) {
            Err(Error::WebhookTooLarge { size, limit }) => {
                assert_eq!((size, limit), (body.len(), body.len() - 1))
            }
            other => panic!("{other:?}"),
        }
    }
}
