//! What is wrong with a pod or a Deployment, read from its status as the kubelet and the
//! controllers write it: the conditions [`KubernetesDriver`](crate::KubernetesDriver) reports
//! when the core observes an instance (at most one per object, the most telling).
//!
//! | condition | when | severity |
//! |---|---|---|
//! | `CrashLoopBackOff` | a container waits to be restarted after crashing | MAJOR |
//! | `ImagePullBackOff`, `ErrImagePull`, `InvalidImageName`, `CreateContainerConfigError`, `CreateContainerError`, `RunContainerError` | a container cannot start | MAJOR |
//! | `PodFailed` | the pod's phase is `Failed` (evicted, exited with an error) | MAJOR |
//! | `Unschedulable` | no node can take the pod | MAJOR |
//! | `NotReady` | a running pod has not been Ready for the grace period | MINOR |
//! | `ReplicaFailure` | a Deployment cannot create its pods (quota, admission) | MAJOR |
//!
//! A pod that is not Ready only shortly (starting, or a readiness probe failing once) is not
//! reported: `Ready` must have been `False` for the grace period since its
//! `lastTransitionTime`. Terminating pods and completed Job pods are never reported.

use std::time::Duration;

use serde_json::Value;
use vnfm_types::time::{Timestamp, parse_rfc3339};
use vnfm_types::{EventType, PerceivedSeverity};

/// Container waiting reasons that mean the container cannot start.
const CANNOT_START: &[&str] = &[
    "ImagePullBackOff",
    "ErrImagePull",
    "InvalidImageName",
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
];

/// A condition of one object: its name, severity, kind of event and details.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The condition's name (the alarm's probable cause).
    pub condition: String,
    /// How urgent.
    pub severity: PerceivedSeverity,
    /// The kind of event.
    pub event_type: EventType,
    /// What the status says.
    pub details: Vec<String>,
}

impl Finding {
    fn new(condition: &str, severity: PerceivedSeverity, event_type: EventType) -> Self {
        Finding {
            condition: condition.to_owned(),
            severity,
            event_type,
            details: Vec::new(),
        }
    }
}

fn text<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

fn condition<'a>(v: &'a Value, ty: &str) -> Option<&'a Value> {
    v.pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c["type"] == ty)
}

/// The container statuses of a pod, init containers first.
fn containers(pod: &Value) -> impl Iterator<Item = &Value> {
    ["/status/initContainerStatuses", "/status/containerStatuses"]
        .into_iter()
        .filter_map(|p| pod.pointer(p).and_then(Value::as_array))
        .flatten()
}

/// What is wrong with `pod` at `now`, if anything; `not_ready_grace` is how long a running
/// pod may stay not Ready before it is reported.
pub fn pod_finding(pod: &Value, now: Timestamp, not_ready_grace: Duration) -> Option<Finding> {
    if pod.pointer("/metadata/deletionTimestamp").is_some() {
        return None;
    }
    let phase = text(pod, "/status/phase").unwrap_or("");
    if phase == "Succeeded" {
        return None;
    }
    for c in containers(pod) {
        let Some(reason) = text(c, "/state/waiting/reason") else {
            continue;
        };
        let name = text(c, "/name").unwrap_or("?");
        let message = text(c, "/state/waiting/message");
        let found = if reason == "CrashLoopBackOff" {
            let mut f = Finding::new(
                reason,
                PerceivedSeverity::Major,
                EventType::ProcessingErrorAlarm,
            );
            let restarts = c["restartCount"].as_u64().unwrap_or(0);
            f.details
                .push(format!("container {name} restarted {restarts} times"));
            if let Some(t) = c.pointer("/lastState/terminated") {
                f.details.push(format!(
                    "last exit: {} (exit code {})",
                    text(t, "/reason").unwrap_or("unknown"),
                    t["exitCode"].as_i64().unwrap_or(-1)
                ));
            }
            f
        } else if CANNOT_START.contains(&reason) {
            let mut f = Finding::new(
                reason,
                PerceivedSeverity::Major,
                EventType::ProcessingErrorAlarm,
            );
            f.details.push(format!("container {name} cannot start"));
            f
        } else {
            continue;
        };
        let mut found = found;
        if let Some(m) = message {
            found.details.push(m.to_owned());
        }
        return Some(found);
    }
    if phase == "Failed" {
        let mut f = Finding::new(
            "PodFailed",
            PerceivedSeverity::Major,
            EventType::EquipmentAlarm,
        );
        f.details.extend(
            [text(pod, "/status/reason"), text(pod, "/status/message")]
                .into_iter()
                .flatten()
                .map(String::from),
        );
        return Some(f);
    }
    if let Some(s) = condition(pod, "PodScheduled")
        && s["status"] == "False"
        && s["reason"] == "Unschedulable"
    {
        let mut f = Finding::new(
            "Unschedulable",
            PerceivedSeverity::Major,
            EventType::EquipmentAlarm,
        );
        f.details.extend(text(s, "/message").map(String::from));
        return Some(f);
    }
    if phase == "Running"
        && let Some(r) = condition(pod, "Ready")
        && r["status"] == "False"
    {
        let since = text(r, "/lastTransitionTime").and_then(parse_rfc3339);
        let long_enough = since.is_none_or(|t| {
            now.duration_since(t)
                .try_into()
                .is_ok_and(|d: Duration| d >= not_ready_grace)
        });
        if long_enough {
            let mut f = Finding::new(
                "NotReady",
                PerceivedSeverity::Minor,
                EventType::ProcessingErrorAlarm,
            );
            f.details.extend(
                [text(r, "/reason"), text(r, "/message")]
                    .into_iter()
                    .flatten()
                    .map(String::from),
            );
            return Some(f);
        }
    }
    None
}

/// What is wrong with `deployment`, if anything.
pub fn deployment_finding(deployment: &Value) -> Option<Finding> {
    let c = condition(deployment, "ReplicaFailure")?;
    if c["status"] != "True" {
        return None;
    }
    let mut f = Finding::new(
        "ReplicaFailure",
        PerceivedSeverity::Major,
        EventType::EquipmentAlarm,
    );
    f.details.extend(
        [text(c, "/reason"), text(c, "/message")]
            .into_iter()
            .flatten()
            .map(String::from),
    );
    Some(f)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn now() -> Timestamp {
        parse_rfc3339("2026-01-01T00:10:00Z").unwrap()
    }

    const GRACE: Duration = Duration::from_secs(60);

    fn running(ready: &str, since: &str) -> Value {
        json!({
            "metadata": {"name": "web-0"},
            "status": {
                "phase": "Running",
                "conditions": [
                    {"type": "PodScheduled", "status": "True"},
                    {"type": "Ready", "status": ready, "lastTransitionTime": since, "reason": "ContainersNotReady"},
                ],
                "containerStatuses": [{"name": "app", "ready": ready == "True", "restartCount": 0, "state": {"running": {}}}],
            },
        })
    }

    #[test]
    fn healthy_and_briefly_unready_pods_are_fine() {
        assert_eq!(
            pod_finding(&running("True", "2026-01-01T00:00:00Z"), now(), GRACE),
            None
        );
        // Unready for 30 s of a 60 s grace.
        assert_eq!(
            pod_finding(&running("False", "2026-01-01T00:09:30Z"), now(), GRACE),
            None
        );
    }

    #[test]
    fn a_pod_unready_past_the_grace_is_not_ready() {
        let f = pod_finding(&running("False", "2026-01-01T00:08:00Z"), now(), GRACE).unwrap();
        assert_eq!(f.condition, "NotReady");
        assert_eq!(f.severity, PerceivedSeverity::Minor);
        assert_eq!(f.details, ["ContainersNotReady"]);
    }

    #[test]
    fn crash_loops_win_over_readiness_and_say_why() {
        let mut pod = running("False", "2026-01-01T00:08:00Z");
        pod["status"]["containerStatuses"] = json!([{
            "name": "app", "ready": false, "restartCount": 7,
            "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s restarting failed container"}},
            "lastState": {"terminated": {"reason": "Error", "exitCode": 2}},
        }]);
        let f = pod_finding(&pod, now(), GRACE).unwrap();
        assert_eq!(f.condition, "CrashLoopBackOff");
        assert_eq!(f.severity, PerceivedSeverity::Major);
        assert_eq!(f.event_type, EventType::ProcessingErrorAlarm);
        assert_eq!(
            f.details,
            [
                "container app restarted 7 times",
                "last exit: Error (exit code 2)",
                "back-off 5m0s restarting failed container"
            ]
        );
    }

    #[test]
    fn image_pull_failures_unschedulable_and_failed_pods_are_reported() {
        let pull = json!({"status": {"phase": "Pending", "containerStatuses": [
            {"name": "app", "state": {"waiting": {"reason": "ImagePullBackOff"}}}]}});
        assert_eq!(
            pod_finding(&pull, now(), GRACE).unwrap().condition,
            "ImagePullBackOff"
        );
        let unschedulable = json!({"status": {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3 nodes are available"}]}});
        let f = pod_finding(&unschedulable, now(), GRACE).unwrap();
        assert_eq!(
            (f.condition.as_str(), f.details),
            ("Unschedulable", vec!["0/3 nodes are available".to_string()])
        );
        let failed =
            json!({"status": {"phase": "Failed", "reason": "Evicted", "message": "low on memory"}});
        assert_eq!(
            pod_finding(&failed, now(), GRACE).unwrap().details,
            ["Evicted", "low on memory"]
        );
    }

    #[test]
    fn terminating_and_completed_pods_are_never_reported() {
        let mut pod = running("False", "2026-01-01T00:00:00Z");
        pod["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:09:00Z");
        assert_eq!(pod_finding(&pod, now(), GRACE), None);
        let done = json!({"status": {"phase": "Succeeded", "conditions": [{"type": "Ready", "status": "False"}]}});
        assert_eq!(pod_finding(&done, now(), GRACE), None);
    }

    #[test]
    fn deployments_report_replica_failures() {
        let d = json!({"status": {"conditions": [
            {"type": "Available", "status": "False"},
            {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "message": "exceeded quota"}]}});
        let f = deployment_finding(&d).unwrap();
        assert_eq!(f.details, ["FailedCreate", "exceeded quota"]);
        let ok = json!({"status": {"conditions": [{"type": "Available", "status": "True"}]}});
        assert_eq!(deployment_finding(&ok), None);
    }
}
