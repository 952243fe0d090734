//! The order objects are applied in (and, reversed, deleted in).
//!
//! | tier | kinds |
//! |---|---|
//! | 0 | `CustomResourceDefinition`, `Namespace` |
//! | 1 | cluster-scoped configuration: `StorageClass`, `PersistentVolume`, `ClusterRole`, `ClusterRoleBinding`, `PriorityClass`, `IngressClass`, `RuntimeClass`, webhooks |
//! | 2 | `ServiceAccount` |
//! | 3 | `Role`, `RoleBinding` |
//! | 4 | `ConfigMap`, `Secret`, `LimitRange`, `ResourceQuota`, `PodTemplate`, `ControllerRevision`, `Lease` |
//! | 5 | `PersistentVolumeClaim` |
//! | 6 | `Service`, `Endpoints`, `EndpointSlice` |
//! | 7 | custom resources and every other kind (after their CRD is established) |
//! | 8 | workloads: `Deployment`, `StatefulSet`, `DaemonSet`, `ReplicaSet`, `ReplicationController`, `Job`, `CronJob`, `Pod` |
//! | 9 | `HorizontalPodAutoscaler`, `PodDisruptionBudget`, `NetworkPolicy`, `Ingress` |
//!
//! Within a tier the package's own order is kept (the file list, then the document order in a
//! file). Deletion goes by [`deletion_step`]: workloads first, then claims, then volumes and
//! storage classes, namespaces last. Request-like kinds (access reviews, token reviews, bindings) are created once, after
//! the workloads, and are not tracked.

/// The tier of `kind` in `group` (see the module table).
pub fn tier(group: &str, kind: &str) -> u8 {
    match (group, kind) {
        ("apiextensions.k8s.io", "CustomResourceDefinition") | ("", "Namespace") => 0,
        ("storage.k8s.io", _)
        | ("", "PersistentVolume")
        | ("rbac.authorization.k8s.io", "ClusterRole" | "ClusterRoleBinding")
        | ("scheduling.k8s.io", "PriorityClass")
        | ("networking.k8s.io", "IngressClass")
        | ("node.k8s.io", "RuntimeClass")
        | (
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration",
        )
        | ("apiregistration.k8s.io", "APIService") => 1,
        ("", "ServiceAccount") => 2,
        ("rbac.authorization.k8s.io", "Role" | "RoleBinding") => 3,
        ("", "ConfigMap" | "Secret" | "LimitRange" | "ResourceQuota" | "PodTemplate")
        | ("apps", "ControllerRevision")
        | ("coordination.k8s.io", "Lease") => 4,
        ("", "PersistentVolumeClaim") => 5,
        ("", "Service" | "Endpoints") | ("discovery.k8s.io", "EndpointSlice") => 6,
        ("apps", "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet")
        | ("", "ReplicationController" | "Pod")
        | ("batch", "Job" | "CronJob") => 8,
        ("autoscaling", "HorizontalPodAutoscaler")
        | ("policy", "PodDisruptionBudget")
        | ("networking.k8s.io", "NetworkPolicy" | "Ingress") => 9,
        _ => 7,
    }
}

/// When an object of `tier` is deleted, as a step of the deletion order (lower first):
/// 0 workloads, services, custom resources and policies (tiers 6 to 9), 1 claims (tier 5),
/// 2 configuration, RBAC and service accounts (tiers 2 to 4), 3 volumes, storage classes and
/// other cluster-scoped configuration (tier 1), 4 CRDs and namespaces (tier 0).
///
/// Deletion follows these steps across all stages (within a step, the exact reverse of the
/// apply order), so nothing is waited on while something that holds it is still there: a
/// claim's protection lasts while a pod mounts it, a volume's while a claim is bound to it.
pub fn deletion_step(tier: u8) -> u8 {
    match tier {
        6.. => 0,
        5 => 1,
        2..=4 => 2,
        1 => 3,
        0 => 4,
    }
}

/// Kinds that are requests rather than stored objects: created once, never applied, tracked
/// or deleted.
pub fn is_request_kind(group: &str, kind: &str) -> bool {
    matches!(
        (group, kind),
        ("authorization.k8s.io", _) | ("authentication.k8s.io", _) | ("", "Binding")
    )
}

/// Workload kinds whose `spec.replicas` the driver sets from the VDU's instance count.
pub fn is_scalable(group: &str, kind: &str) -> bool {
    matches!(
        (group, kind),
        ("apps", "Deployment" | "StatefulSet" | "ReplicaSet")
    )
}

/// Kinds that run pods: the ones a VDU maps to.
pub fn is_workload(group: &str, kind: &str) -> bool {
    tier(group, kind) == 8
}

/// The API group of an `apiVersion` (`""` for `v1`).
pub fn group_of(api_version: &str) -> &str {
    api_version.split_once('/').map_or("", |(g, _)| g)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ordering_rule_of_the_issue() {
        let order = [
            ("apiextensions.k8s.io", "CustomResourceDefinition"),
            ("storage.k8s.io", "StorageClass"),
            ("", "ServiceAccount"),
            ("rbac.authorization.k8s.io", "RoleBinding"),
            ("", "Secret"),
            ("", "PersistentVolumeClaim"),
            ("", "Service"),
            ("k8s.cni.cncf.io", "NetworkAttachmentDefinition"),
            ("apps", "Deployment"),
            ("policy", "PodDisruptionBudget"),
        ];
        let tiers: Vec<u8> = order.iter().map(|(g, k)| tier(g, k)).collect();
        let mut sorted = tiers.clone();
        sorted.sort();
        assert_eq!(tiers, sorted);
        assert_eq!(tier("", "Namespace"), 0);
        assert_eq!(tier("", "PersistentVolume"), 1);
        assert_eq!(tier("batch", "Job"), tier("", "Pod"));
        assert!(is_request_kind("authentication.k8s.io", "TokenReview"));
        assert!(!is_request_kind("", "Pod"));
        assert_eq!(group_of("apps/v1"), "apps");
        assert_eq!(group_of("v1"), "");
        // Workloads, then claims, then volumes and classes, namespaces last.
        let steps: Vec<u8> = [
            ("apps", "StatefulSet"),
            ("", "PersistentVolumeClaim"),
            ("", "ConfigMap"),
            ("", "PersistentVolume"),
            ("storage.k8s.io", "StorageClass"),
            ("", "Namespace"),
        ]
        .iter()
        .map(|(g, k)| deletion_step(tier(g, k)))
        .collect();
        assert_eq!(steps, [0, 1, 2, 3, 3, 4]);
    }
}
