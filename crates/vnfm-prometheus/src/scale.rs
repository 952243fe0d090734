//! Alerts that ask for a scaling, as OpenStack Tacker's Prometheus plugin reads them: an
//! alerting rule with `function_type: auto_scale` names the VNF instance
//! (`vnf_instance_id`), the direction (`auto_scale_type`: `SCALE_OUT` or `SCALE_IN`) and the
//! scaling aspect (`aspect_id`), and may give `number_of_steps` (1 when absent). A firing
//! alert is a [`ScaleTrigger`]; a resolved one asks for nothing.

use crate::Error;
use crate::tacker::{AlertLabels, PluginFunction};
use crate::webhook::Alert;

/// The `function_type` of alerts that ask for a scaling.
pub const AUTO_SCALE_FUNCTION: &str = "auto_scale";

/// A scaling a firing alert asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScaleTrigger {
    /// The VNF instance to scale.
    pub vnf_instance_id: String,
    /// `true` for `SCALE_OUT`, `false` for `SCALE_IN`.
    pub scale_out: bool,
    /// The scaling aspect.
    pub aspect_id: String,
    /// Scaling steps, at least 1.
    pub number_of_steps: u32,
}

/// The scaling `alert` asks for: `None` when it is not an `auto_scale` alert or is resolved;
/// an error naming the label when one is missing or wrong.
pub fn scale_trigger(alert: &Alert) -> Result<Option<ScaleTrigger>, Error> {
    let labels = AlertLabels::new(alert, AUTO_SCALE_FUNCTION);
    if !labels.firing_of(PluginFunction::AutoScale) {
        return Ok(None);
    }
    let vnf_instance_id = labels.needed("vnf_instance_id")?.to_owned();
    let scale_out = match labels
        .needed("auto_scale_type")?
        .to_ascii_uppercase()
        .as_str()
    {
        "SCALE_OUT" => true,
        "SCALE_IN" => false,
        other => {
            return Err(labels.bad(
                "auto_scale_type",
                format!("{other:?} is neither SCALE_OUT nor SCALE_IN"),
            ));
        }
    };
    let aspect_id = labels.needed("aspect_id")?.to_owned();
    let number_of_steps = match labels.get("number_of_steps") {
        None => 1,
        Some(n) => n.parse::<u32>().ok().filter(|n| *n > 0).ok_or_else(|| {
            labels.bad(
                "number_of_steps",
                format!("{n:?} is not a positive integer"),
            )
        })?,
    };
    Ok(Some(ScaleTrigger {
        vnf_instance_id,
        scale_out,
        aspect_id,
        number_of_steps,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_webhook;

    fn alert(status: &str, labels: serde_json::Value) -> Alert {
        let body = serde_json::json!({
            "version": "4", "groupKey": "g", "status": status, "receiver": "vnfm",
            "groupLabels": {}, "commonLabels": {}, "commonAnnotations": {},
            "externalURL": "http://am",
            "alerts": [{"status": status, "labels": labels, "annotations": {},
                        "startsAt": "2026-01-01T00:00:00Z", "endsAt": "0001-01-01T00:00:00Z",
                        "generatorURL": "http://p", "fingerprint": "f"}]
        });
        parse_webhook(body.to_string().as_bytes())
            .unwrap()
            .alerts
            .remove(0)
    }

    #[test]
    fn tackers_auto_scale_labels_make_a_trigger() {
        let a = alert(
            "firing",
            serde_json::json!({"alertname": "Busy", "function_type": "auto_scale",
                "vnf_instance_id": "v1", "auto_scale_type": "scale_out", "aspect_id": "web"}),
        );
        assert_eq!(
            scale_trigger(&a).unwrap(),
            Some(ScaleTrigger {
                vnf_instance_id: "v1".into(),
                scale_out: true,
                aspect_id: "web".into(),
                number_of_steps: 1
            })
        );
        let a = alert(
            "firing",
            serde_json::json!({"function_type": "auto_scale", "vnf_instance_id": "v1",
                "auto_scale_type": "SCALE_IN", "aspect_id": "web", "number_of_steps": "2"}),
        );
        let t = scale_trigger(&a).unwrap().unwrap();
        assert!(!t.scale_out);
        assert_eq!(t.number_of_steps, 2);
    }

    #[test]
    fn resolved_and_other_alerts_ask_for_nothing() {
        let labels = serde_json::json!({"function_type": "auto_scale", "vnf_instance_id": "v1",
            "auto_scale_type": "SCALE_OUT", "aspect_id": "web"});
        assert_eq!(scale_trigger(&alert("resolved", labels)).unwrap(), None);
        let fault = serde_json::json!({"function_type": "vnffm", "vnf_instance_id": "v1"});
        assert_eq!(scale_trigger(&alert("firing", fault)).unwrap(), None);
    }

    #[test]
    fn wrong_labels_are_named() {
        let cases = [
            (
                serde_json::json!({"function_type": "auto_scale", "auto_scale_type": "SCALE_OUT", "aspect_id": "a"}),
                "vnf_instance_id",
            ),
            (
                serde_json::json!({"function_type": "auto_scale", "vnf_instance_id": "v", "auto_scale_type": "UP", "aspect_id": "a"}),
                "auto_scale_type",
            ),
            (
                serde_json::json!({"function_type": "auto_scale", "vnf_instance_id": "v", "auto_scale_type": "SCALE_IN"}),
                "aspect_id",
            ),
            (
                serde_json::json!({"function_type": "auto_scale", "vnf_instance_id": "v", "auto_scale_type": "SCALE_IN", "aspect_id": "a", "number_of_steps": "0"}),
                "number_of_steps",
            ),
        ];
        for (labels, label) in cases {
            let e = scale_trigger(&alert("firing", labels)).unwrap_err();
            assert!(
                matches!(&e, Error::AlertLabel { label: l, .. } if l == label),
                "{e}"
            );
            assert!(e.to_string().contains(label), "{e}");
        }
    }
}
