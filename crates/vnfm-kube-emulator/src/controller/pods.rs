//! Pods: the scheduler (a node at once) and the kubelets (Running and Ready after the
//! configured delay, Job pods Succeeded, terminating pods gone after their grace period).

use std::time::Instant;

use serde_json::{Value, json};

use super::{Index, deleting, key, name, ns, pods_key, s, uid};
use crate::store::Store;
use crate::util::now_rfc3339;
use crate::{EmulatorConfig, Hooks};

pub(super) fn pods(st: &mut Store, hooks: &Hooks, cfg: &EmulatorConfig, index: &Index) {
    let tk = pods_key();
    let nodes: Vec<String> = st.list(&key("", "nodes"), None).iter().map(name).collect();
    for p in st.list(&tk, None) {
        let id = uid(&p);
        if deleting(&p) {
            // Containers exit after the termination delay, or are killed when the grace
            // period ends, whichever comes first.
            let due = st.deleting_at.get(&id).is_none_or(|t| {
                let now = Instant::now();
                now >= t.since + cfg.termination_delay || now >= t.kill_at
            });
            if due {
                st.remove(&tk, &ns(&p), &name(&p));
            }
            continue;
        }
        let mut next = p.clone();
        // The scheduler binds a pod as soon as it sees it.
        if next
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .is_none()
            && !nodes.is_empty()
        {
            let i = (st.next_seq() as usize) % nodes.len();
            next["spec"]["nodeName"] = json!(nodes[i]);
        }
        let age = st
            .created_at
            .get(&id)
            .map(Instant::elapsed)
            .unwrap_or_default();
        let images: Vec<String> = p
            .pointer("/spec/containers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c["image"].as_str().map(String::from))
            .collect();
        let bad_image = images
            .iter()
            .find(|i| hooks.failing_images.contains(*i))
            .cloned();
        let blocked = index.blocked(hooks, &p);
        let job_pod = p
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .is_some_and(|r| r.iter().any(|r| r["kind"] == "Job"));
        let phase = s(&p, "/status/phase").to_string();
        let node = s(&next, "/spec/nodeName").to_string();
        let node_index = nodes.iter().position(|n| *n == node).unwrap_or(0);
        let containers: Vec<(String, String)> = p
            .pointer("/spec/containers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|c| {
                (
                    c["name"].as_str().unwrap_or("").to_string(),
                    c["image"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect();
        if let Some(image) = &bad_image {
            if phase == "Pending" && p.pointer("/status/containerStatuses").is_none() {
                next["status"] = json!({
                    "phase": "Pending",
                    "conditions": [
                        {"type": "PodScheduled", "status": "True"},
                        {"type": "Ready", "status": "False", "reason": "ContainersNotReady", "message": "containers with unready status"},
                    ],
                    "containerStatuses": containers.iter().map(|(n, i)| json!({
                        "name": n, "image": i, "ready": false, "restartCount": 0,
                        "state": {"waiting": {"reason": "ImagePullBackOff", "message": format!("Back-off pulling image \"{image}\"")}},
                    })).collect::<Vec<_>>(),
                });
            }
        } else if blocked {
            if phase == "Pending" && p.pointer("/status/conditions").is_none() {
                next["status"] = json!({
                    "phase": "Pending",
                    "conditions": [
                        {"type": "PodScheduled", "status": "True"},
                        {"type": "Ready", "status": "False", "reason": "ContainersNotReady", "message": "containers with unready status"},
                    ],
                });
            }
        } else if phase == "Pending" && age >= cfg.ready_delay {
            let n = st.next_seq();
            let ip = format!("10.244.{}.{}", node_index + 1, n % 250 + 2);
            next["status"] = json!({
                "phase": "Running",
                "podIP": ip,
                "podIPs": [{"ip": ip}],
                "hostIP": format!("192.168.0.{}", node_index + 10),
                "startTime": now_rfc3339(),
                "conditions": [
                    {"type": "PodScheduled", "status": "True"},
                    {"type": "Initialized", "status": "True"},
                    {"type": "ContainersReady", "status": "True"},
                    {"type": "Ready", "status": "True"},
                ],
                "containerStatuses": containers.iter().map(|(n, i)| json!({
                    "name": n, "image": i, "imageID": format!("docker.io/library/{i}@sha256:0"), "ready": true,
                    "started": true, "restartCount": 0, "state": {"running": {"startedAt": now_rfc3339()}},
                })).collect::<Vec<_>>(),
            });
        } else if job_pod && phase == "Running" && age >= cfg.ready_delay + cfg.job_pod_duration {
            next["status"]["phase"] = json!("Succeeded");
            next["status"]["conditions"] = json!([
                {"type": "PodScheduled", "status": "True"},
                {"type": "Ready", "status": "False", "reason": "PodCompleted"},
            ]);
        }
        if phase == "Running" && hooks.crash_looping.contains(&id) {
            crash_loop(&mut next, &containers);
        }
        if next != p {
            st.put(&tk, next);
        }
    }
}

/// The status the kubelet gives a running pod whose containers keep crashing: written once
/// (a pod already crash-looping is left as it is, so that the controller settles).
fn crash_loop(pod: &mut Value, containers: &[(String, String)]) {
    let looping = pod
        .pointer("/status/containerStatuses/0/state/waiting/reason")
        .and_then(Value::as_str)
        == Some("CrashLoopBackOff");
    if looping {
        return;
    }
    let now = now_rfc3339();
    let pod_name = name(pod);
    pod["status"]["conditions"] = json!([
        {"type": "PodScheduled", "status": "True"},
        {"type": "Initialized", "status": "True"},
        {"type": "ContainersReady", "status": "False", "reason": "ContainersNotReady", "lastTransitionTime": now},
        {"type": "Ready", "status": "False", "reason": "ContainersNotReady", "lastTransitionTime": now,
         "message": format!("containers with unready status: [{}]", containers.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(" "))},
    ]);
    pod["status"]["containerStatuses"] = containers
        .iter()
        .map(|(n, i)| {
            json!({
                "name": n, "image": i, "ready": false, "started": false, "restartCount": 5,
                "state": {"waiting": {"reason": "CrashLoopBackOff",
                    "message": format!("back-off 2m40s restarting failed container={n} pod={pod_name}")}},
                "lastState": {"terminated": {"exitCode": 1, "reason": "Error",
                    "startedAt": now, "finishedAt": now}},
            })
        })
        .collect();
}
