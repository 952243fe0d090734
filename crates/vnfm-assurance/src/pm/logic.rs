//! The pure parts of performance management, without I/O: request validation (errors point
//! into the request), metric groups, threshold crossing with hysteresis, report assembly and
//! the reporting schedule.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use vnfm_driver_api::metrics::{MetricSeries, MetricsSource};
use vnfm_types::{
    CreatePmJobRequest, CreateThresholdRequest, CrossingDirection, DateTime,
    PerformanceReportEntry, PerformanceValue, PmObjectType, SimpleThresholdDetails, ThresholdType,
};

use vnfm_lcm::LcmError;

/// The metric groups of ETSI GS NFV-IFA 027 and the metrics each stands for.
pub const METRIC_GROUPS: &[(&str, &[&str])] = &[
    (
        "VirtualisedComputeResource",
        &[
            "VCpuUsageMeanVnf",
            "VCpuUsagePeakVnf",
            "VMemoryUsageMeanVnf",
            "VMemoryUsagePeakVnf",
            "VDiskUsageMeanVnf",
            "VDiskUsagePeakVnf",
        ],
    ),
    (
        "VnfInternalCp",
        &[
            "ByteIncomingVnfIntCp",
            "ByteOutgoingVnfIntCp",
            "PacketIncomingVnfIntCp",
            "PacketOutgoingVnfIntCp",
        ],
    ),
    (
        "VnfExternalCp",
        &[
            "ByteIncomingVnfExtCp",
            "ByteOutgoingVnfExtCp",
            "PacketIncomingVnfExtCp",
            "PacketOutgoingVnfExtCp",
        ],
    ),
];

fn object_type(s: &str) -> Result<PmObjectType, LcmError> {
    s.parse()
        .map_err(|e: vnfm_types::UnknownObjectType| LcmError::invalid("/objectType", e.to_string()))
}

fn check_metric(
    metrics: &dyn MetricsSource,
    metric: &str,
    t: PmObjectType,
    pointer: &str,
) -> Result<(), LcmError> {
    metrics
        .check(metric, t)
        .map_err(|e| LcmError::invalid(pointer, e.to_string()))
}

/// A checked PM job request: its object type and the metrics it collects (its
/// `performanceMetric`, then those of its `performanceMetricGroup` measurable on the type).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedJob {
    /// The object type.
    pub object_type: PmObjectType,
    /// The metrics to collect, without repetitions, in request order.
    pub metrics: Vec<String>,
}

/// Checks a PM job request against SOL003 and what `metrics` can measure.
pub fn check_job(
    request: &CreatePmJobRequest,
    metrics: &dyn MetricsSource,
) -> Result<CheckedJob, LcmError> {
    let t = object_type(&request.object_type)?;
    if request.object_instance_ids.is_empty() {
        return Err(LcmError::invalid(
            "/objectInstanceIds",
            "at least one VNF instance id is needed",
        ));
    }
    if let Some(i) = request
        .object_instance_ids
        .iter()
        .position(String::is_empty)
    {
        return Err(LcmError::invalid(
            format!("/objectInstanceIds/{i}"),
            "an instance id cannot be empty",
        ));
    }
    if request
        .sub_object_instance_ids
        .as_ref()
        .is_some_and(|s| !s.is_empty())
        && request.object_instance_ids.len() != 1
    {
        return Err(LcmError::invalid(
            "/subObjectInstanceIds",
            "subObjectInstanceIds needs exactly one objectInstanceIds entry (SOL003)",
        ));
    }
    let c = &request.criteria;
    if c.collection_period == 0 {
        return Err(LcmError::invalid(
            "/criteria/collectionPeriod",
            "the collection period must be at least 1 second",
        ));
    }
    if c.reporting_period == 0 || !c.reporting_period.is_multiple_of(c.collection_period) {
        return Err(LcmError::invalid(
            "/criteria/reportingPeriod",
            format!(
                "the reporting period ({} s) must be a positive multiple of the collection \
                 period ({} s)",
                c.reporting_period, c.collection_period
            ),
        ));
    }
    let mut out: Vec<String> = Vec::new();
    for (i, m) in c.performance_metric.iter().flatten().enumerate() {
        check_metric(metrics, m, t, &format!("/criteria/performanceMetric/{i}"))?;
        if !out.contains(m) {
            out.push(m.clone());
        }
    }
    for (i, g) in c.performance_metric_group.iter().flatten().enumerate() {
        let pointer = format!("/criteria/performanceMetricGroup/{i}");
        let Some((_, members)) = METRIC_GROUPS.iter().find(|(name, _)| name == g) else {
            let known: Vec<&str> = METRIC_GROUPS.iter().map(|(n, _)| *n).collect();
            return Err(LcmError::invalid(
                pointer,
                format!("unknown metric group {g:?}; known: {}", known.join(", ")),
            ));
        };
        let measurable: Vec<&str> = members
            .iter()
            .copied()
            .filter(|m| metrics.check(m, t).is_ok())
            .collect();
        if measurable.is_empty() {
            return Err(LcmError::invalid(
                pointer,
                format!("no metric of group {g} is measured on object type {t}"),
            ));
        }
        for m in measurable {
            if !out.iter().any(|o| o == m) {
                out.push(m.to_owned());
            }
        }
    }
    if out.is_empty() {
        return Err(LcmError::invalid(
            "/criteria",
            "name at least one performanceMetric or performanceMetricGroup",
        ));
    }
    Ok(CheckedJob {
        object_type: t,
        metrics: out,
    })
}

/// Checks a threshold request; answers its object type and details.
pub fn check_threshold(
    request: &CreateThresholdRequest,
    metrics: &dyn MetricsSource,
) -> Result<(PmObjectType, SimpleThresholdDetails), LcmError> {
    let t = object_type(&request.object_type)?;
    if request.object_instance_id.is_empty() {
        return Err(LcmError::invalid(
            "/objectInstanceId",
            "the instance id cannot be empty",
        ));
    }
    let c = &request.criteria;
    check_metric(
        metrics,
        &c.performance_metric,
        t,
        "/criteria/performanceMetric",
    )?;
    let ThresholdType::Simple = c.threshold_type;
    let Some(d) = c.simple_threshold_details else {
        return Err(LcmError::invalid(
            "/criteria/simpleThresholdDetails",
            "a SIMPLE threshold needs simpleThresholdDetails",
        ));
    };
    if !d.threshold_value.is_finite() {
        return Err(LcmError::invalid(
            "/criteria/simpleThresholdDetails/thresholdValue",
            "the threshold value must be a finite number",
        ));
    }
    if !(d.hysteresis.is_finite() && d.hysteresis >= 0.0) {
        return Err(LcmError::invalid(
            "/criteria/simpleThresholdDetails/hysteresis",
            "the hysteresis must be a finite number, 0 or more",
        ));
    }
    Ok((t, d))
}

/// Which side of a threshold a value was last seen on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Side {
    /// Above `thresholdValue + hysteresis`.
    Above,
    /// Below `thresholdValue - hysteresis`.
    Below,
}

/// The side after measuring `value` (last seen on `last`), and the crossing to notify.
///
/// A value above `thresholdValue + hysteresis` is above, below `thresholdValue -
/// hysteresis` below; inside the band the side does not change, so a value wobbling around
/// the threshold by less than the hysteresis crosses nothing. Going above from below, or from
/// never measured, is an `UP` crossing (a threshold created while the value is already too
/// high reports it); going below from above is `DOWN`; a first value below is not a crossing.
pub fn crossing(
    last: Option<Side>,
    value: f64,
    d: &SimpleThresholdDetails,
) -> (Option<Side>, Option<CrossingDirection>) {
    if value > d.threshold_value + d.hysteresis {
        let crossed = (last != Some(Side::Above)).then_some(CrossingDirection::Up);
        (Some(Side::Above), crossed)
    } else if value < d.threshold_value - d.hysteresis {
        let crossed = (last == Some(Side::Above)).then_some(CrossingDirection::Down);
        (Some(Side::Below), crossed)
    } else {
        (last, None)
    }
}

/// What the collector keeps of a threshold between evaluations.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThresholdState {
    /// When the next evaluation is due (seconds since the epoch).
    #[serde(default)]
    pub next_at: u64,
    /// The side each measured (sub-)object was last seen on; `""` is the object itself.
    #[serde(default)]
    pub sides: BTreeMap<String, Side>,
}

/// What the collector keeps of a PM job between reports.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobState {
    /// When the next report is due (seconds since the epoch).
    pub next_report_at: u64,
}

/// Seconds since the epoch of `t` (0 before it).
pub fn unix_seconds(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The time `secs` seconds after the epoch.
pub fn from_unix_seconds(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

/// The first due time after `now` on the grid `due + k * period`: a collector that was
/// stopped for several periods resumes at the next one instead of catching up.
pub fn next_due(due: u64, period: u64, now: u64) -> u64 {
    let period = period.max(1);
    if due > now {
        return due;
    }
    due + ((now - due) / period + 1) * period
}

/// The report entries of `series`, the values of `metric` of one object.
pub fn report_entries(
    object_type: PmObjectType,
    object_instance_id: &str,
    metric: &str,
    series: &[MetricSeries],
) -> Vec<PerformanceReportEntry> {
    series
        .iter()
        .map(|s| PerformanceReportEntry {
            object_type: object_type.as_str().to_owned(),
            object_instance_id: object_instance_id.to_owned(),
            sub_object_instance_id: s.sub_object_instance_id.clone(),
            performance_metric: metric.to_owned(),
            performance_values: s
                .points
                .iter()
                .filter_map(|p| {
                    Some(PerformanceValue {
                        time_stamp: DateTime::from_unix_seconds(unix_seconds(p.at)),
                        value: Value::Number(serde_json::Number::from_f64(p.value)?),
                        context: None,
                    })
                })
                .collect(),
        })
        .filter(|e| !e.performance_values.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use vnfm_driver_api::metrics::{MetricPoint, StaticMetrics};

    fn metrics() -> StaticMetrics {
        StaticMetrics::new(&[
            ("VCpuUsageMeanVnf", PmObjectType::Vnf),
            ("VCpuUsageMeanVnf", PmObjectType::Vnfc),
            ("VMemoryUsageMeanVnf", PmObjectType::Vnf),
            ("ByteIncomingVnfIntCp", PmObjectType::VnfIntCp),
        ])
    }

    fn job(patch: Value) -> CreatePmJobRequest {
        let mut v = json!({
            "objectType": "Vnf", "objectInstanceIds": ["i1"],
            "criteria": {"performanceMetric": ["VCpuUsageMeanVnf"],
                         "collectionPeriod": 10, "reportingPeriod": 30},
            "callbackUri": "http://nfvo/cb"
        });
        json_patch(&mut v, patch);
        serde_json::from_value(v).unwrap()
    }

    fn json_patch(v: &mut Value, patch: Value) {
        match (v, patch) {
            (Value::Object(a), Value::Object(b)) => {
                for (k, p) in b {
                    if p.is_null() {
                        a.remove(&k);
                    } else {
                        json_patch(a.entry(k).or_insert(Value::Null), p);
                    }
                }
            }
            (slot, p) => *slot = p,
        }
    }

    fn pointer(e: LcmError) -> String {
        match e {
            LcmError::InvalidRequest { pointer, .. } => pointer,
            other => panic!("not an invalid request: {other:?}"),
        }
    }

    #[test]
    fn a_good_job_lists_its_metrics_once_with_the_groups_measurable_ones() {
        let checked = check_job(
            &job(json!({"criteria": {
                "performanceMetric": ["VCpuUsageMeanVnf", "VCpuUsageMeanVnf"],
                "performanceMetricGroup": ["VirtualisedComputeResource"]}})),
            &metrics(),
        )
        .unwrap();
        assert_eq!(checked.object_type, PmObjectType::Vnf);
        assert_eq!(checked.metrics, ["VCpuUsageMeanVnf", "VMemoryUsageMeanVnf"]);
    }

    #[test]
    fn bad_jobs_are_refused_with_the_pointer_of_the_fault() {
        let m = metrics();
        let cases = [
            (json!({"objectType": "Pod"}), "/objectType"),
            (json!({"objectInstanceIds": []}), "/objectInstanceIds"),
            (
                json!({"objectInstanceIds": ["i1", ""]}),
                "/objectInstanceIds/1",
            ),
            (
                json!({"objectInstanceIds": ["i1", "i2"], "subObjectInstanceIds": ["c1"]}),
                "/subObjectInstanceIds",
            ),
            (
                json!({"criteria": {"collectionPeriod": 0}}),
                "/criteria/collectionPeriod",
            ),
            (
                json!({"criteria": {"reportingPeriod": 25}}),
                "/criteria/reportingPeriod",
            ),
            (
                json!({"criteria": {"reportingPeriod": 0}}),
                "/criteria/reportingPeriod",
            ),
            (
                json!({"criteria": {"performanceMetric": ["VCpuUsageMeanVnf", "VCpuUsage"]}}),
                "/criteria/performanceMetric/1",
            ),
            (
                json!({"objectType": "VnfIntCp"}),
                "/criteria/performanceMetric/0",
            ),
            (
                json!({"criteria": {"performanceMetric": null,
                                    "performanceMetricGroup": ["Nope"]}}),
                "/criteria/performanceMetricGroup/0",
            ),
            (
                json!({"criteria": {"performanceMetric": null,
                                    "performanceMetricGroup": ["VnfExternalCp"]}}),
                "/criteria/performanceMetricGroup/0",
            ),
            (
                json!({"criteria": {"performanceMetric": null}}),
                "/criteria",
            ),
        ];
        for (patch, want) in cases {
            let e = check_job(&job(patch.clone()), &m).unwrap_err();
            assert_eq!(pointer(e), want, "{patch}");
        }
    }

    #[test]
    fn thresholds_need_simple_details_in_range() {
        let req = |d: Value| -> CreateThresholdRequest {
            serde_json::from_value(json!({
                "objectType": "VNF", "objectInstanceId": "i1",
                "criteria": {"performanceMetric": "VCpuUsageMeanVnf", "thresholdType": "SIMPLE",
                             "simpleThresholdDetails": d},
                "callbackUri": "http://nfvo/cb"
            }))
            .unwrap()
        };
        let (t, d) = check_threshold(
            &req(json!({"thresholdValue": 5, "hysteresis": 1})),
            &metrics(),
        )
        .unwrap();
        assert_eq!(
            (t, d.threshold_value, d.hysteresis),
            (PmObjectType::Vnf, 5.0, 1.0)
        );
        let e = check_threshold(
            &req(json!({"thresholdValue": 5, "hysteresis": -1})),
            &metrics(),
        )
        .unwrap_err();
        assert_eq!(pointer(e), "/criteria/simpleThresholdDetails/hysteresis");
        let mut no_details = req(json!({"thresholdValue": 5, "hysteresis": 0}));
        no_details.criteria.simple_threshold_details = None;
        let e = check_threshold(&no_details, &metrics()).unwrap_err();
        assert_eq!(pointer(e), "/criteria/simpleThresholdDetails");
        let mut unknown = req(json!({"thresholdValue": 5, "hysteresis": 0}));
        unknown.criteria.performance_metric = "ByteIncomingVnfIntCp".into();
        let e = check_threshold(&unknown, &metrics()).unwrap_err();
        assert_eq!(pointer(e), "/criteria/performanceMetric");
    }

    #[test]
    fn crossings_follow_the_hysteresis_band() {
        let d = SimpleThresholdDetails {
            threshold_value: 50.0,
            hysteresis: 5.0,
        };
        // value, expected side, expected crossing
        let walk = [
            (40.0, Some(Side::Below), None),
            (54.0, Some(Side::Below), None), // inside the band: nothing
            (56.0, Some(Side::Above), Some(CrossingDirection::Up)),
            (60.0, Some(Side::Above), None), // still above: no repeat
            (46.0, Some(Side::Above), None), // back in the band: still above
            (55.0, Some(Side::Above), None), // the band's edge is inside
            (44.0, Some(Side::Below), Some(CrossingDirection::Down)),
            (30.0, Some(Side::Below), None),
            (70.0, Some(Side::Above), Some(CrossingDirection::Up)),
        ];
        let mut side = None;
        for (value, want_side, want_crossing) in walk {
            let (next, crossed) = crossing(side, value, &d);
            assert_eq!((next, crossed), (want_side, want_crossing), "at {value}");
            side = next;
        }
    }

    #[test]
    fn a_first_value_crosses_only_upwards() {
        let d = SimpleThresholdDetails {
            threshold_value: 50.0,
            hysteresis: 0.0,
        };
        assert_eq!(
            crossing(None, 51.0, &d),
            (Some(Side::Above), Some(CrossingDirection::Up))
        );
        assert_eq!(crossing(None, 49.0, &d), (Some(Side::Below), None));
        assert_eq!(crossing(None, 50.0, &d), (None, None));
    }

    #[test]
    fn the_schedule_skips_missed_periods() {
        assert_eq!(next_due(100, 30, 90), 100);
        assert_eq!(next_due(100, 30, 100), 130);
        assert_eq!(next_due(100, 30, 195), 220);
    }

    #[test]
    fn report_entries_keep_series_order_and_drop_empty_ones() {
        let at = |s| from_unix_seconds(s);
        let series = vec![
            MetricSeries {
                sub_object_instance_id: Some("c1".into()),
                points: vec![
                    MetricPoint {
                        at: at(10),
                        value: 1.5,
                    },
                    MetricPoint {
                        at: at(20),
                        value: 2.0,
                    },
                ],
            },
            MetricSeries {
                sub_object_instance_id: Some("c2".into()),
                points: vec![MetricPoint {
                    at: at(10),
                    value: f64::NAN,
                }],
            },
        ];
        let entries = report_entries(PmObjectType::Vnfc, "i1", "VCpuUsageMeanVnf", &series);
        assert_eq!(
            serde_json::to_value(&entries).unwrap(),
            json!([{
                "objectType": "Vnfc", "objectInstanceId": "i1", "subObjectInstanceId": "c1",
                "performanceMetric": "VCpuUsageMeanVnf",
                "performanceValues": [
                    {"timeStamp": "1970-01-01T00:00:10Z", "value": 1.5},
                    {"timeStamp": "1970-01-01T00:00:20Z", "value": 2.0}
                ]
            }])
        );
    }
}
