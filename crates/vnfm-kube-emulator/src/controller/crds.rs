//! CustomResourceDefinitions: their kinds served once created, and the CRD Established.

use serde_json::{Value, json};

use super::{deleting, key, name, s};
use crate::Hooks;
use crate::registry::ResourceType;
use crate::store::Store;
use crate::util::now_rfc3339;

impl Store {
    pub(super) fn registry_types_of_crd(&self, crd: &str) -> Vec<ResourceType> {
        let mut out = Vec::new();
        for (g, v, p) in self.crd_type_names(crd) {
            if let Some(rt) = self.registry.by_plural(&g, &v, &p) {
                out.push(rt.clone());
            }
        }
        out
    }

    fn crd_type_names(&self, crd: &str) -> Vec<(String, String, String)> {
        let Some(obj) = self.get(
            &key("apiextensions.k8s.io", "customresourcedefinitions"),
            "",
            crd,
        ) else {
            return Vec::new();
        };
        let group = s(obj, "/spec/group").to_string();
        let plural = s(obj, "/spec/names/plural").to_string();
        obj.pointer("/spec/versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| v["name"].as_str())
            .map(|v| (group.clone(), v.to_string(), plural.clone()))
            .collect()
    }
}

pub(super) fn crds(st: &mut Store, hooks: &Hooks) {
    let tk = key("apiextensions.k8s.io", "customresourcedefinitions");
    for crd in st.list(&tk, None) {
        if deleting(&crd)
            || hooks
                .never_ready
                .contains(&("CustomResourceDefinition".into(), name(&crd)))
        {
            continue;
        }
        let established = crd
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|c| {
                c.iter()
                    .any(|c| c["type"] == "Established" && c["status"] == "True")
            });
        let crd_name = name(&crd);
        let group = s(&crd, "/spec/group").to_string();
        let kind = s(&crd, "/spec/names/kind").to_string();
        let plural = s(&crd, "/spec/names/plural").to_string();
        let namespaced = s(&crd, "/spec/scope") != "Cluster";
        let types: Vec<ResourceType> = crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|v| v["served"] != json!(false))
            .filter_map(|v| {
                Some(ResourceType {
                    group: group.clone(),
                    version: v["name"].as_str()?.to_string(),
                    kind: kind.clone(),
                    plural: plural.clone(),
                    namespaced,
                    status: v.pointer("/subresources/status").is_some(),
                    create_only: false,
                    crd: Some(crd_name.clone()),
                })
            })
            .collect();
        let served_now = types.iter().all(|t| {
            st.registry
                .by_plural(&t.group, &t.version, &t.plural)
                .is_some()
        });
        if !served_now {
            st.registry.add_crd(&crd_name, types);
        }
        if !established {
            let mut c = crd.clone();
            c["status"] = json!({
                "conditions": [
                    {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "lastTransitionTime": now_rfc3339()},
                    {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "lastTransitionTime": now_rfc3339()},
                ],
                "acceptedNames": crd.pointer("/spec/names").cloned().unwrap_or(json!({})),
                "storedVersions": crd.pointer("/spec/versions").and_then(Value::as_array).map(|vs| vs.iter().filter(|v| v["storage"] == json!(true)).map(|v| v["name"].clone()).collect::<Vec<_>>()).unwrap_or_default(),
            });
            st.put(&tk, c);
        }
    }
}
