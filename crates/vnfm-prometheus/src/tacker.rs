//! The alerts of OpenStack Tacker's Prometheus plugin, read the way Tacker reads them.
//!
//! Tacker's alerting rules say what an alert is for in the label `function_type`
//! ([`PluginFunction`]): `vnffm` (a fault: [`crate::AlarmMapping`]), `auto_scale`
//! ([`crate::scale_trigger`]), `auto_heal` ([`heal_trigger`]: `vnf_instance_id` and
//! `vnfc_info_id`), `vnfpm` and `vnfpm_threshold` ([`pm_sample`]: the measured value in the
//! annotation `value`, the PM job or threshold in `job_id` or `threshold_id`, the measured
//! object in `object_instance_id` and `sub_object_instance_id`, the metric in `metric`).
//!
//! A fault alert's `pod` label is a regular expression over the ids of the instance's VNFC
//! resources (Tacker matches it from the start of the id, as Python's `re.match`);
//! [`resource_vnfcs`] finds the VNFCs it names and the faulty resource of the first one.
//!
//! Tacker's plugin sends these payloads with values that are not strings (the annotation
//! `value` as a number, an absent `sub_object_instance_id` as `null`);
//! [`crate::parse_webhook_lenient`] reads them.

use regex::Regex;
use vnfm_types::{FaultyResourceInfo, FaultyResourceType, ResourceHandle, VnfInstance, VnfcInfo};

use crate::Error;
use crate::webhook::{Alert, AlertStatus};

/// What an alert of Tacker's Prometheus plugin is for (its `function_type` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PluginFunction {
    /// `vnffm`: a fault, raised and cleared as an alarm.
    Fault,
    /// `auto_scale`: a SCALE of an aspect.
    AutoScale,
    /// `auto_heal`: a HEAL of a VNFC.
    AutoHeal,
    /// `vnfpm`: a measured value for a PM job's report.
    Pm,
    /// `vnfpm_threshold`: a measured value for a threshold.
    PmThreshold,
}

impl PluginFunction {
    /// Every function, in the order above.
    pub const ALL: [PluginFunction; 5] = [
        PluginFunction::Fault,
        PluginFunction::AutoScale,
        PluginFunction::AutoHeal,
        PluginFunction::Pm,
        PluginFunction::PmThreshold,
    ];

    /// The `function_type` value.
    pub fn as_str(self) -> &'static str {
        match self {
            PluginFunction::Fault => "vnffm",
            PluginFunction::AutoScale => crate::scale::AUTO_SCALE_FUNCTION,
            PluginFunction::AutoHeal => "auto_heal",
            PluginFunction::Pm => "vnfpm",
            PluginFunction::PmThreshold => "vnfpm_threshold",
        }
    }

    /// The function `alert` names; `None` when it has no `function_type` label (a fault, for
    /// alerting rules that are not Tacker's) or an unknown one.
    pub fn of(alert: &Alert) -> Option<PluginFunction> {
        let f = AlertLabels::new(alert, "").get("function_type")?;
        PluginFunction::ALL.into_iter().find(|p| p.as_str() == f)
    }
}

/// The labels of one alert, read as Tacker's rules set them: trimmed, empty as absent.
pub(crate) struct AlertLabels<'a> {
    alert: &'a Alert,
    function: &'a str,
}

impl<'a> AlertLabels<'a> {
    /// The labels of `alert`, an alert of `function` (named in errors).
    pub(crate) fn new(alert: &'a Alert, function: &'a str) -> Self {
        AlertLabels { alert, function }
    }

    /// The label `k`, if present and not empty.
    pub(crate) fn get(&self, k: &str) -> Option<&'a str> {
        let alert: &'a Alert = self.alert;
        alert
            .labels
            .get(k)
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
    }

    /// The error that label (or annotation) `label` is wrong because of `reason`.
    pub(crate) fn bad(&self, label: &str, reason: impl Into<String>) -> Error {
        Error::AlertLabel {
            function: self.function.to_owned(),
            alert: self
                .get("alertname")
                .unwrap_or(&self.alert.fingerprint)
                .to_owned(),
            label: label.to_owned(),
            reason: reason.into(),
        }
    }

    /// The label `k`, or the error that it is missing.
    pub(crate) fn needed(&self, k: &str) -> Result<&'a str, Error> {
        self.get(k).ok_or_else(|| self.bad(k, "it is missing"))
    }

    /// Whether the alert is a firing alert of the labels' function.
    pub(crate) fn firing_of(&self, function: PluginFunction) -> bool {
        self.get("function_type") == Some(function.as_str())
            && self.alert.status == AlertStatus::Firing
    }
}

/// A HEAL a firing `auto_heal` alert asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealTrigger {
    /// The VNF instance.
    pub vnf_instance_id: String,
    /// The VNFCs to heal (`vnfcInfo` ids; the label may list several, comma-separated).
    pub vnfc_info_ids: Vec<String>,
}

/// The HEAL `alert` asks for: `None` when it is not a firing `auto_heal` alert; an error
/// naming the label when one is missing.
pub fn heal_trigger(alert: &Alert) -> Result<Option<HealTrigger>, Error> {
    let labels = AlertLabels::new(alert, PluginFunction::AutoHeal.as_str());
    if !labels.firing_of(PluginFunction::AutoHeal) {
        return Ok(None);
    }
    let vnf_instance_id = labels.needed("vnf_instance_id")?.to_owned();
    let vnfc_info_ids = labels
        .needed("vnfc_info_id")?
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    Ok(Some(HealTrigger {
        vnf_instance_id,
        vnfc_info_ids,
    }))
}

/// A value measured by a Tacker PM rule (`vnfpm` for a PM job, `vnfpm_threshold` for a
/// threshold).
#[derive(Debug, Clone, PartialEq)]
pub struct PmSample {
    /// [`PluginFunction::Pm`] or [`PluginFunction::PmThreshold`].
    pub function: PluginFunction,
    /// The PM job (`job_id`) or threshold (`threshold_id`).
    pub target_id: String,
    /// The measured VNF instance (`object_instance_id`).
    pub object_instance_id: String,
    /// The measured VNFC or connection point (`sub_object_instance_id`), if any.
    pub sub_object_instance_id: Option<String>,
    /// The performance metric (`metric`, e.g. `VCpuUsageMeanVnf.<instance id>`).
    pub metric: String,
    /// The value (annotation `value`).
    pub value: f64,
}

/// The value `alert` carries: `None` when it is not a firing `vnfpm` or `vnfpm_threshold`
/// alert; an error naming the label when one is missing or the value is not a number.
pub fn pm_sample(alert: &Alert) -> Result<Option<PmSample>, Error> {
    let function = match PluginFunction::of(alert) {
        Some(f @ (PluginFunction::Pm | PluginFunction::PmThreshold)) => f,
        _ => return Ok(None),
    };
    let labels = AlertLabels::new(alert, function.as_str());
    if !labels.firing_of(function) {
        return Ok(None);
    }
    let target = match function {
        PluginFunction::Pm => "job_id",
        _ => "threshold_id",
    };
    let raw = alert
        .annotations
        .get("value")
        .map(|v| v.trim())
        .filter(|v| !v.is_empty())
        .ok_or_else(|| labels.bad("value", "the annotation is missing"))?;
    let value = raw
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| labels.bad("value", format!("{raw:?} is not a finite number")))?;
    Ok(Some(PmSample {
        function,
        target_id: labels.needed(target)?.to_owned(),
        object_instance_id: labels.needed("object_instance_id")?.to_owned(),
        sub_object_instance_id: labels.get("sub_object_instance_id").map(String::from),
        metric: labels.needed("metric")?.to_owned(),
        value,
    }))
}

/// The VNFCs a fault alert's `pod` pattern names in an instance.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ResourceVnfcs {
    /// The `vnfcInfo` ids of the VNFCs whose compute resource's id the pattern matches, in
    /// the instance's order.
    pub vnfc_instance_ids: Vec<String>,
    /// The compute resource of the first of them, type `COMPUTE` (the alarm's
    /// `rootCauseFaultyResource`).
    pub faulty_resource: Option<FaultyResourceInfo>,
}

/// The VNFCs of `instance` whose compute resource id `pattern` matches from its start (as
/// Tacker's `re.match`): a pod name names its pod's VNFC, Tacker's generated
/// `name-[0-9a-f]{1,10}-[0-9a-z]{5}$` the pods of a Deployment. Fails when `pattern` is not
/// a regular expression.
pub fn resource_vnfcs(pattern: &str, instance: &VnfInstance) -> Result<ResourceVnfcs, Error> {
    let re = Regex::new(&format!("^(?:{pattern})")).map_err(|source| Error::PodPattern {
        pattern: pattern.to_owned(),
        source,
    })?;
    Ok(vnfcs_where(instance, |_, resource| {
        re.is_match(&resource.resource_id)
    }))
}

/// The VNFCs of `instance` among `ids` (`vnfcInfo` ids), with the compute resource of the
/// first of them: what an alert naming its VNFCs (`vnfc_instance_id`) is about.
pub fn named_vnfcs(ids: &[String], instance: &VnfInstance) -> ResourceVnfcs {
    vnfcs_where(instance, |vnfc, _| ids.contains(&vnfc.id))
}

/// The VNFCs of `instance` (with a compute resource) that `select` keeps.
fn vnfcs_where(
    instance: &VnfInstance,
    select: impl Fn(&VnfcInfo, &ResourceHandle) -> bool,
) -> ResourceVnfcs {
    let mut out = ResourceVnfcs::default();
    let Some(info) = &instance.instantiated_vnf_info else {
        return out;
    };
    let resources = info.vnfc_resource_info.as_deref().unwrap_or_default();
    for vnfc in info.vnfc_info.as_deref().unwrap_or_default() {
        let Some(resource) = resources
            .iter()
            .find(|r| Some(&r.id) == vnfc.vnfc_resource_info_id.as_ref())
        else {
            continue;
        };
        if !select(vnfc, &resource.compute_resource) {
            continue;
        }
        out.vnfc_instance_ids.push(vnfc.id.clone());
        out.faulty_resource
            .get_or_insert_with(|| FaultyResourceInfo {
                faulty_resource: resource.compute_resource.clone(),
                faulty_resource_type: FaultyResourceType::Compute,
            });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_webhook_lenient;
    use serde_json::json;

    fn alert(labels: serde_json::Value, annotations: serde_json::Value) -> Alert {
        let body = json!({
            "version": "4", "groupKey": "{}:{}", "status": "firing", "receiver": "receiver",
            "groupLabels": {}, "commonLabels": {}, "commonAnnotations": {},
            "externalURL": "http://am", "truncatedAlerts": 0,
            "alerts": [{"status": "firing", "labels": labels, "annotations": annotations,
                        "startsAt": "2022-06-21T23:47:36.453Z", "endsAt": "0001-01-01T00:00:00Z",
                        "generatorURL": "http://p", "fingerprint": "5ef77f1f8a3ecb8d"}]
        });
        parse_webhook_lenient(body.to_string().as_bytes())
            .unwrap()
            .alerts
            .remove(0)
    }

    #[test]
    fn tackers_pm_event_and_threshold_payloads_are_read() {
        // paramgen.pm_event: the value is a number, not a string.
        let a = alert(
            json!({"receiver_type": "tacker", "function_type": "vnfpm", "job_id": "j1",
                   "metric": "VCpuUsageMeanVnf.i1", "object_instance_id": "i1"}),
            json!({"value": 99}),
        );
        assert_eq!(PluginFunction::of(&a), Some(PluginFunction::Pm));
        assert_eq!(
            pm_sample(&a).unwrap(),
            Some(PmSample {
                function: PluginFunction::Pm,
                target_id: "j1".into(),
                object_instance_id: "i1".into(),
                sub_object_instance_id: None,
                metric: "VCpuUsageMeanVnf.i1".into(),
                value: 99.0,
            })
        );
        // paramgen.pm_threshold: sub_object_instance_id is null when not given.
        let a = alert(
            json!({"receiver_type": "tacker", "function_type": "vnfpm_threshold",
                   "threshold_id": "t1", "metric": "VCpuUsageMeanVnf.i1",
                   "object_instance_id": "i1", "sub_object_instance_id": null}),
            json!({"value": 12.5}),
        );
        let s = pm_sample(&a).unwrap().unwrap();
        assert_eq!(s.function, PluginFunction::PmThreshold);
        assert_eq!((s.target_id.as_str(), s.value), ("t1", 12.5));
        assert_eq!(s.sub_object_instance_id, None);
    }

    #[test]
    fn wrong_pm_alerts_name_the_label() {
        let a = alert(
            json!({"function_type": "vnfpm", "metric": "m", "object_instance_id": "i1"}),
            json!({"value": 1}),
        );
        let e = pm_sample(&a).unwrap_err();
        assert!(
            matches!(&e, Error::AlertLabel { label, .. } if label == "job_id"),
            "{e}"
        );
        let a = alert(
            json!({"function_type": "vnfpm", "job_id": "j", "metric": "m",
                   "object_instance_id": "i1"}),
            json!({"value": "high"}),
        );
        let e = pm_sample(&a).unwrap_err();
        assert!(e.to_string().contains("\"high\""), "{e}");
        let fault = alert(json!({"function_type": "vnffm"}), json!({}));
        assert_eq!(pm_sample(&fault).unwrap(), None);
    }

    #[test]
    fn tackers_auto_heal_alert_names_the_vnfc() {
        let a = alert(
            json!({"receiver_type": "tacker", "function_type": "auto_heal",
                   "vnf_instance_id": "i1", "vnfc_info_id": "VDU1-a1"}),
            json!({}),
        );
        assert_eq!(
            heal_trigger(&a).unwrap(),
            Some(HealTrigger {
                vnf_instance_id: "i1".into(),
                vnfc_info_ids: vec!["VDU1-a1".into()]
            })
        );
        let a = alert(
            json!({"function_type": "auto_heal", "vnf_instance_id": "i1"}),
            json!({}),
        );
        let e = heal_trigger(&a).unwrap_err();
        assert!(e.to_string().contains("vnfc_info_id"), "{e}");
        assert!(e.to_string().starts_with("auto_heal alert"), "{e}");
    }

    fn instance() -> VnfInstance {
        let resource = |id: &str, pod: &str| {
            json!({"id": id, "vduId": "VDU2",
                   "computeResource": {"resourceId": pod, "vimLevelResourceType": "Deployment"}})
        };
        let vnfc = |id: &str, res: &str| json!({"id": id, "vduId": "VDU2", "vnfcResourceInfoId": res, "vnfcState": "STARTED"});
        serde_json::from_value(json!({
            "id": "i1", "vnfdId": "d", "vnfProvider": "p", "vnfProductName": "n",
            "vnfSoftwareVersion": "1", "vnfdVersion": "1", "instantiationState": "INSTANTIATED",
            "instantiatedVnfInfo": {
                "flavourId": "simple", "vnfState": "STARTED",
                "vnfcResourceInfo": [resource("r1", "vdu2-5b9d6b8f9c-x2k4q"),
                                     resource("r2", "vdu2-5b9d6b8f9c-p7z9m"),
                                     resource("r3", "vdu1-7d9f8c6b5a-aaaaa")],
                "vnfcInfo": [vnfc("VDU2-r1", "r1"), vnfc("VDU2-r2", "r2"), vnfc("VDU1-r3", "r3")]
            },
            "_links": {"self": {"href": "http://x/vnflcm/v2/vnf_instances/i1"}}
        }))
        .unwrap()
    }

    #[test]
    fn a_pod_name_or_pattern_names_its_vnfcs_and_faulty_resource() {
        let i = instance();
        let one = resource_vnfcs("vdu2-5b9d6b8f9c-p7z9m", &i).unwrap();
        assert_eq!(one.vnfc_instance_ids, ["VDU2-r2"]);
        let r = one.faulty_resource.unwrap();
        assert_eq!(r.faulty_resource.resource_id, "vdu2-5b9d6b8f9c-p7z9m");
        assert_eq!(r.faulty_resource_type, FaultyResourceType::Compute);
        // Tacker's generated pattern for a Deployment's pods.
        let all = resource_vnfcs(r"(vdu2-[0-9a-f]{1,10}-[0-9a-z]{5}$)", &i).unwrap();
        assert_eq!(all.vnfc_instance_ids, ["VDU2-r1", "VDU2-r2"]);
        // Matched from the start only, as re.match.
        assert!(
            resource_vnfcs("5b9d6b8f9c", &i)
                .unwrap()
                .vnfc_instance_ids
                .is_empty()
        );
        let e = resource_vnfcs("(", &i).unwrap_err();
        assert!(matches!(e, Error::PodPattern { .. }), "{e}");
        // An alert naming its VNFC gets that VNFC's resource.
        let named = named_vnfcs(&["VDU1-r3".to_string()], &i);
        assert_eq!(named.vnfc_instance_ids, ["VDU1-r3"]);
        assert_eq!(
            named.faulty_resource.unwrap().faulty_resource.resource_id,
            "vdu1-7d9f8c6b5a-aaaaa"
        );
    }
}
