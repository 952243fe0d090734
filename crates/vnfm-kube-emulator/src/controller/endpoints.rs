//! EndpointSlices of the Services that have a selector, from their ready pods.

use serde_json::{Value, json};

use super::{deleting, key, name, ns, owner_ref, pod_ready, pods_key, s, uid};
use crate::store::Store;
use crate::util::{LabelSelector, short_hash};

pub(super) fn endpoint_slices(st: &mut Store) {
    let ek = key("discovery.k8s.io", "endpointslices");
    let Some(rt) = st
        .registry
        .by_kind("discovery.k8s.io/v1", "EndpointSlice")
        .cloned()
    else {
        return;
    };
    for svc in st
        .list(&key("", "services"), None)
        .into_iter()
        .filter(|x| !deleting(x))
    {
        let Some(selector) = svc
            .pointer("/spec/selector")
            .and_then(Value::as_object)
            .cloned()
        else {
            continue;
        };
        if selector.is_empty() {
            continue;
        }
        let namespace = ns(&svc);
        let sel = LabelSelector::from_map(&selector);
        let endpoints: Vec<Value> = st
            .list(&pods_key(), Some(&namespace))
            .into_iter()
            .filter(|p| sel.matches(p) && p.pointer("/status/podIP").is_some())
            .map(|p| {
                json!({
                    "addresses": [s(&p, "/status/podIP")],
                    "conditions": {"ready": pod_ready(&p), "serving": pod_ready(&p), "terminating": deleting(&p)},
                    "nodeName": s(&p, "/spec/nodeName"),
                    "targetRef": {"kind": "Pod", "name": name(&p), "namespace": namespace, "uid": uid(&p)},
                })
            })
            .collect();
        let ports: Vec<Value> = svc
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|p| {
                let port = p["targetPort"].as_i64().or_else(|| p["port"].as_i64()).unwrap_or(0);
                json!({"name": p.get("name").cloned().unwrap_or(json!("")), "port": port, "protocol": p.get("protocol").cloned().unwrap_or(json!("TCP"))})
            })
            .collect();
        let slice_name = format!("{}-{}", name(&svc), &short_hash(&json!(uid(&svc)))[..5]);
        match st.get(&ek, &namespace, &slice_name).cloned() {
            None => {
                let slice = json!({
                    "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                    "metadata": {
                        "name": slice_name,
                        "labels": {"kubernetes.io/service-name": name(&svc), "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"},
                        "ownerReferences": [owner_ref(&svc)],
                    },
                    "addressType": "IPv4",
                    "endpoints": endpoints,
                    "ports": ports,
                });
                let _ = st.create(&rt, Some(&namespace), slice, None);
            }
            Some(existing) => {
                if existing.get("endpoints") != Some(&json!(endpoints))
                    || existing.get("ports") != Some(&json!(ports))
                {
                    let mut e = existing.clone();
                    e["endpoints"] = json!(endpoints);
                    e["ports"] = json!(ports);
                    st.put(&ek, e);
                }
            }
        }
    }
}
