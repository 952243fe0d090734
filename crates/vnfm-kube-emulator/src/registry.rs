//! The resource types the emulated API server serves, and its discovery documents.
//!
//! Built-in types cover the groups a CNF package uses (core, apps, batch, rbac, storage,
//! networking, policy, autoscaling, apiextensions, coordination, scheduling, discovery and the
//! review APIs); a `CustomResourceDefinition` adds its served versions once the controller
//! marks it established.

use serde_json::{Value, json};

/// One resource type at one group/version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceType {
    /// API group (`""` for core).
    pub group: String,
    /// Version (`v1`, ...).
    pub version: String,
    /// Kind (`Deployment`).
    pub kind: String,
    /// Plural resource name (`deployments`).
    pub plural: String,
    /// Whether objects live in a namespace.
    pub namespaced: bool,
    /// Whether the type has a `status` subresource (writes to the main resource keep the
    /// stored status).
    pub status: bool,
    /// Request-like types (reviews, bindings) that can only be created and are not stored.
    pub create_only: bool,
    /// Added by a CRD (name of the CRD), for removal with it.
    pub crd: Option<String>,
}

impl ResourceType {
    /// `group/version`, or `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The storage key: objects of every version of a group/resource share one store.
    pub fn storage_key(&self) -> (String, String) {
        (self.group.clone(), self.plural.clone())
    }
}

/// `(group, version, kind, plural, namespaced, status, create_only)`.
type Builtin = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    bool,
    bool,
    bool,
);

const BUILTINS: &[Builtin] = &[
    ("", "v1", "Namespace", "namespaces", false, true, false),
    ("", "v1", "Node", "nodes", false, true, false),
    ("", "v1", "Pod", "pods", true, true, false),
    ("", "v1", "Service", "services", true, true, false),
    ("", "v1", "Endpoints", "endpoints", true, false, false),
    ("", "v1", "ConfigMap", "configmaps", true, false, false),
    ("", "v1", "Secret", "secrets", true, false, false),
    (
        "",
        "v1",
        "ServiceAccount",
        "serviceaccounts",
        true,
        false,
        false,
    ),
    (
        "",
        "v1",
        "PersistentVolume",
        "persistentvolumes",
        false,
        true,
        false,
    ),
    (
        "",
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        true,
        true,
        false,
    ),
    ("", "v1", "LimitRange", "limitranges", true, false, false),
    (
        "",
        "v1",
        "ResourceQuota",
        "resourcequotas",
        true,
        true,
        false,
    ),
    ("", "v1", "PodTemplate", "podtemplates", true, false, false),
    (
        "",
        "v1",
        "ReplicationController",
        "replicationcontrollers",
        true,
        true,
        false,
    ),
    ("", "v1", "Event", "events", true, false, false),
    ("", "v1", "Binding", "bindings", true, false, true),
    ("apps", "v1", "Deployment", "deployments", true, true, false),
    (
        "apps",
        "v1",
        "StatefulSet",
        "statefulsets",
        true,
        true,
        false,
    ),
    ("apps", "v1", "DaemonSet", "daemonsets", true, true, false),
    ("apps", "v1", "ReplicaSet", "replicasets", true, true, false),
    (
        "apps",
        "v1",
        "ControllerRevision",
        "controllerrevisions",
        true,
        false,
        false,
    ),
    ("batch", "v1", "Job", "jobs", true, true, false),
    ("batch", "v1", "CronJob", "cronjobs", true, true, false),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "Role",
        "roles",
        true,
        false,
        false,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        "rolebindings",
        true,
        false,
        false,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "clusterroles",
        false,
        false,
        false,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        false,
        false,
        false,
    ),
    (
        "storage.k8s.io",
        "v1",
        "StorageClass",
        "storageclasses",
        false,
        false,
        false,
    ),
    (
        "storage.k8s.io",
        "v1",
        "VolumeAttachment",
        "volumeattachments",
        false,
        true,
        false,
    ),
    (
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        "networkpolicies",
        true,
        false,
        false,
    ),
    (
        "networking.k8s.io",
        "v1",
        "Ingress",
        "ingresses",
        true,
        true,
        false,
    ),
    (
        "networking.k8s.io",
        "v1",
        "IngressClass",
        "ingressclasses",
        false,
        false,
        false,
    ),
    (
        "policy",
        "v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        true,
        true,
        false,
    ),
    (
        "autoscaling",
        "v1",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        true,
        true,
        false,
    ),
    (
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        true,
        true,
        false,
    ),
    (
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        false,
        true,
        false,
    ),
    (
        "coordination.k8s.io",
        "v1",
        "Lease",
        "leases",
        true,
        false,
        false,
    ),
    (
        "scheduling.k8s.io",
        "v1",
        "PriorityClass",
        "priorityclasses",
        false,
        false,
        false,
    ),
    (
        "discovery.k8s.io",
        "v1",
        "EndpointSlice",
        "endpointslices",
        true,
        false,
        false,
    ),
    (
        "authorization.k8s.io",
        "v1",
        "SubjectAccessReview",
        "subjectaccessreviews",
        false,
        false,
        true,
    ),
    (
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        false,
        false,
        true,
    ),
    (
        "authorization.k8s.io",
        "v1",
        "SelfSubjectRulesReview",
        "selfsubjectrulesreviews",
        false,
        false,
        true,
    ),
    (
        "authorization.k8s.io",
        "v1",
        "LocalSubjectAccessReview",
        "localsubjectaccessreviews",
        true,
        false,
        true,
    ),
    (
        "authentication.k8s.io",
        "v1",
        "TokenReview",
        "tokenreviews",
        false,
        false,
        true,
    ),
];

/// Every resource type served, built-in and CRD-defined.
#[derive(Debug, Clone)]
pub struct Registry {
    types: Vec<ResourceType>,
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    /// The built-in types.
    pub fn new() -> Self {
        let types = BUILTINS
            .iter()
            .map(
                |&(group, version, kind, plural, namespaced, status, create_only)| ResourceType {
                    group: group.into(),
                    version: version.into(),
                    kind: kind.into(),
                    plural: plural.into(),
                    namespaced,
                    status,
                    create_only,
                    crd: None,
                },
            )
            .collect();
        Registry { types }
    }

    /// The type served at `group/version` under `plural`.
    pub fn by_plural(&self, group: &str, version: &str, plural: &str) -> Option<&ResourceType> {
        self.types
            .iter()
            .find(|t| t.group == group && t.version == version && t.plural == plural)
    }

    /// The type of `kind` at `apiVersion`.
    pub fn by_kind(&self, api_version: &str, kind: &str) -> Option<&ResourceType> {
        let (group, version) = split_api_version(api_version);
        self.types
            .iter()
            .find(|t| t.group == group && t.version == version && t.kind == kind)
    }

    /// Any type stored under `(group, plural)`.
    pub fn by_storage_key(&self, key: &(String, String)) -> Option<&ResourceType> {
        self.types
            .iter()
            .find(|t| t.group == key.0 && t.plural == key.1)
    }

    /// Whether `group/version` is served at all.
    pub fn serves(&self, group: &str, version: &str) -> bool {
        self.types
            .iter()
            .any(|t| t.group == group && t.version == version)
    }

    /// Adds the versions a CRD serves (replacing what it served before).
    pub fn add_crd(&mut self, crd_name: &str, types: Vec<ResourceType>) {
        self.remove_crd(crd_name);
        self.types.extend(types);
    }

    /// Removes the types a CRD added.
    pub fn remove_crd(&mut self, crd_name: &str) {
        self.types.retain(|t| t.crd.as_deref() != Some(crd_name));
    }

    /// `GET /api`.
    pub fn core_versions(&self) -> Value {
        json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]
        })
    }

    /// `GET /apis`.
    pub fn group_list(&self) -> Value {
        let mut groups: Vec<(String, Vec<String>)> = Vec::new();
        for t in self.types.iter().filter(|t| !t.group.is_empty()) {
            match groups.iter_mut().find(|(g, _)| *g == t.group) {
                Some((_, versions)) => {
                    if !versions.contains(&t.version) {
                        versions.push(t.version.clone());
                    }
                }
                None => groups.push((t.group.clone(), vec![t.version.clone()])),
            }
        }
        let groups: Vec<Value> = groups
            .into_iter()
            .map(|(name, mut versions)| {
                // Highest version first: the preferred one.
                versions.sort_by(|a, b| b.cmp(a));
                let vs: Vec<Value> = versions
                    .iter()
                    .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
                    .collect();
                json!({
                    "name": name,
                    "versions": vs,
                    "preferredVersion": vs.first().cloned().unwrap_or(Value::Null),
                })
            })
            .collect();
        json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
    }

    /// `GET /api/v1` or `GET /apis/{group}/{version}`.
    pub fn resource_list(&self, group: &str, version: &str) -> Value {
        let mut resources = Vec::new();
        for t in self
            .types
            .iter()
            .filter(|t| t.group == group && t.version == version)
        {
            let verbs: Vec<&str> = if t.create_only {
                vec!["create"]
            } else {
                vec![
                    "create",
                    "delete",
                    "deletecollection",
                    "get",
                    "list",
                    "patch",
                    "update",
                    "watch",
                ]
            };
            resources.push(json!({
                "name": t.plural,
                "singularName": t.kind.to_ascii_lowercase(),
                "namespaced": t.namespaced,
                "kind": t.kind,
                "verbs": verbs,
            }));
            if t.status {
                resources.push(json!({
                    "name": format!("{}/status", t.plural),
                    "singularName": "",
                    "namespaced": t.namespaced,
                    "kind": t.kind,
                    "verbs": ["get", "patch", "update"],
                }));
            }
        }
        let gv = if group.is_empty() {
            version.to_string()
        } else {
            format!("{group}/{version}")
        };
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources})
    }
}

/// `("apps", "v1")` from `apps/v1`, `("", "v1")` from `v1`.
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_and_group_types_resolve_by_plural_and_kind() {
        let r = Registry::new();
        let d = r.by_plural("apps", "v1", "deployments").unwrap();
        assert_eq!(d.kind, "Deployment");
        assert!(d.namespaced && d.status);
        assert_eq!(r.by_kind("v1", "Namespace").unwrap().plural, "namespaces");
        assert!(r.by_kind("v1", "TokenReview").is_none());
        assert!(
            r.by_kind("authentication.k8s.io/v1", "TokenReview")
                .unwrap()
                .create_only
        );
        let list = r.resource_list("apps", "v1");
        let names: Vec<&str> = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"deployments/status"));
    }
}
