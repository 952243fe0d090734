//! Request-like objects of a package (access reviews, token reviews, bindings): created once
//! at the end of instantiate, never tracked; a refusal fails the step with the reason.
//!
//! A `Binding` names the node a pod runs on. On a real cluster the scheduler binds a pod as
//! soon as it is created, so a Binding created afterwards is refused (409) and its node choice
//! lost. The driver therefore moves the choice into the pod itself ([`place_bound_pods`]: the
//! package's bare pod gets `spec.nodeName`, which bypasses the scheduler), and when the
//! Binding is then refused, a pod already on the named node is the binding done; a pod on
//! another node is an error naming both.

use serde_json::{Value, json};

use crate::KubeError;
use crate::cluster::Cluster;
use crate::plan::Planned;

fn is_binding(p: &Planned) -> bool {
    p.request && p.group().is_empty() && p.kind() == "Binding"
}

/// The node a Binding names.
fn target_node(p: &Planned) -> Option<&str> {
    p.object.pointer("/target/name").and_then(Value::as_str)
}

/// Gives each bare pod of `objects` that a Binding of the package names (and that has no node
/// of its own) the Binding's node as `spec.nodeName`.
pub fn place_bound_pods(objects: &mut [Planned]) {
    let bindings: Vec<(String, String, String)> = objects
        .iter()
        .filter(|p| is_binding(p))
        .filter_map(|b| {
            Some((
                b.namespace().unwrap_or("").to_string(),
                b.name().to_string(),
                target_node(b)?.to_string(),
            ))
        })
        .collect();
    for (ns, pod, node) in bindings {
        if let Some(p) = objects.iter_mut().find(|p| {
            !p.request
                && p.group().is_empty()
                && p.kind() == "Pod"
                && p.namespace().unwrap_or("") == ns
                && p.name() == pod
        }) && p
            .object
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .is_none()
            && p.object.get("spec").is_some_and(Value::is_object)
        {
            p.object["spec"]["nodeName"] = json!(node);
        }
    }
}

/// Creates the request-like objects of `objects`. A refusal is an error naming the object and
/// the API server's reason, except for a Binding: when its pod already runs on the node it
/// names, it is done; when its pod does not exist (Tacker's samples bind a pod they do not
/// create), nothing is bound and a warning saying so is added to `warnings` (recorded with the
/// instance).
pub async fn create_all(
    cluster: &Cluster,
    objects: &[Planned],
    check: &(dyn Fn() -> Result<(), KubeError> + Sync),
    warnings: &mut Vec<String>,
) -> Result<(), KubeError> {
    for p in objects.iter().filter(|p| p.request) {
        check()?;
        match cluster.create_request(p).await {
            Ok(_) => {}
            Err(e) if is_binding(p) && e.is_status(409) => binding_conflict(cluster, p).await?,
            Err(e) if is_binding(p) && e.is_status(404) => {
                let warning = format!(
                    "{} ({}) binds pod {}, which does not exist: nothing was bound",
                    p.display(),
                    p.source,
                    p.name()
                );
                tracing::warn!(binding = %p.display(), "{warning}");
                warnings.push(warning);
            }
            Err(e) => {
                return Err(KubeError::Failed {
                    object: p.display(),
                    reason: format!(
                        "the API server refused it: {e}; correct the object in the package ({})",
                        p.source
                    ),
                });
            }
        }
    }
    Ok(())
}

/// A Binding refused because its pod is bound already: done when the pod is on the named node.
async fn binding_conflict(cluster: &Cluster, p: &Planned) -> Result<(), KubeError> {
    let wanted = target_node(p).unwrap_or("");
    let pod = crate::driver::reference("v1", "Pod", p.namespace(), p.name());
    let actual = cluster
        .get(&pod)
        .await?
        .and_then(|live| {
            serde_json::to_value(live)
                .ok()?
                .pointer("/spec/nodeName")
                .and_then(Value::as_str)
                .map(String::from)
        })
        .unwrap_or_default();
    if actual == wanted {
        tracing::debug!(binding = %p.display(), node = wanted, "the pod is already bound to the node the Binding names");
        return Ok(());
    }
    Err(KubeError::Failed {
        object: p.display(),
        reason: format!(
            "pod {} was bound to node `{actual}` before the Binding to node `{wanted}` could be created (the scheduler binds pods at once); give the pod `spec.nodeName: {wanted}` (or a nodeSelector) in its manifest instead of a Binding",
            p.name()
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planned(object: Value, request: bool) -> Planned {
        Planned {
            object,
            source: "Files/pod.yaml".into(),
            stage: 0,
            tier: 8,
            vdu: None,
            namespaced: Some(true),
            shared: false,
            persistent: false,
            request,
            hpa: None,
        }
    }

    #[test]
    fn a_bound_pod_of_the_package_gets_the_bindings_node() {
        let mut objects = vec![
            planned(
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
                    "spec": {"containers": []}}),
                false,
            ),
            planned(
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q", "namespace": "ns"},
                    "spec": {"containers": [], "nodeName": "own"}}),
                false,
            ),
            planned(
                json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p", "namespace": "ns"},
                    "target": {"kind": "Node", "name": "node-2"}}),
                true,
            ),
            planned(
                json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "q", "namespace": "ns"},
                    "target": {"kind": "Node", "name": "node-2"}}),
                true,
            ),
        ];
        place_bound_pods(&mut objects);
        assert_eq!(objects[0].object["spec"]["nodeName"], "node-2");
        assert_eq!(
            objects[1].object["spec"]["nodeName"], "own",
            "a pod's own node is kept"
        );
    }
}
