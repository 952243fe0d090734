//! Ordering a template's nested stacks after the subnets of the networks they use.
//!
//! Heat creates a port after the subnets of its network when both are in the same template
//! (`OS::Neutron::Port` adds that dependency itself), but not when the port is inside a nested
//! stack (a template resource or an `OS::Heat::AutoScalingGroup` member) that receives the
//! network as `{get_resource: <net>}`: the nested stack depends on the network only, and is
//! built while the subnet still is. A port made then has no address, and Nova refuses it
//! (`Port ... requires a FixedIP in order to be used`, HTTP 400). Tacker's VM samples all
//! pass their internal networks to nested templates this way; on the real Neutron of a busy
//! test cloud the race was lost. [`order_after_subnets`] adds the missing `depends_on`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

const SUBNET: &str = "OS::Neutron::Subnet";

/// Makes every resource of `template` that refers to a network resource of the template
/// (`{get_resource: <net>}` anywhere in its properties) depend on that network's subnets
/// (`OS::Neutron::Subnet` whose `network` / `network_id` is `{get_resource: <net>}`).
pub fn order_after_subnets(template: &mut Value) {
    let Some(resources) = template.get_mut("resources").and_then(Value::as_object_mut) else {
        return;
    };
    let mut subnets: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, r) in resources.iter() {
        if r.get("type").and_then(Value::as_str) != Some(SUBNET) {
            continue;
        }
        let props = r.get("properties");
        let net = props
            .and_then(|p| p.get("network").or_else(|| p.get("network_id")))
            .and_then(|n| n.get("get_resource"))
            .and_then(Value::as_str);
        if let Some(net) = net {
            subnets
                .entry(net.to_string())
                .or_default()
                .push(name.clone());
        }
    }
    if subnets.is_empty() {
        return;
    }
    for (name, r) in resources.iter_mut() {
        if r.get("type").and_then(Value::as_str) == Some(SUBNET) {
            continue;
        }
        let mut refs = BTreeSet::new();
        if let Some(p) = r.get("properties") {
            resource_refs(p, &mut refs);
        }
        let needed: Vec<&String> = refs
            .iter()
            .filter_map(|n| subnets.get(n))
            .flatten()
            .filter(|s| *s != name)
            .collect();
        if needed.is_empty() {
            continue;
        }
        let Some(obj) = r.as_object_mut() else {
            continue;
        };
        let mut deps: Vec<Value> = match obj.remove("depends_on") {
            Some(Value::Array(a)) => a,
            Some(Value::Null) | None => Vec::new(),
            Some(one) => vec![one],
        };
        for s in needed {
            if !deps.iter().any(|d| d.as_str() == Some(s.as_str())) {
                deps.push(Value::String(s.clone()));
            }
        }
        obj.insert("depends_on".into(), Value::Array(deps));
    }
}

/// The names in every `{get_resource: <name>}` under `v`.
fn resource_refs(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            if m.len() == 1
                && let Some(Value::String(n)) = m.get("get_resource")
            {
                out.insert(n.clone());
                return;
            }
            m.values().for_each(|x| resource_refs(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| resource_refs(x, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nested_stacks_that_get_a_network_wait_for_its_subnets() {
        let mut t = json!({"resources": {
            "VDU1_scale_group": {"type": "OS::Heat::AutoScalingGroup", "properties": {
                "resource": {"type": "VDU1.yaml", "properties": {"net5": {"get_resource": "internalVL3"}}}}},
            "VDU2": {"type": "VDU2.yaml", "depends_on": "nfvi_node_affinity",
                     "properties": {"net": {"get_resource": "internalVL3"}}},
            "VDU3": {"type": "VDU3.yaml", "properties": {"net": "ext-net"}},
            "internalVL3": {"type": "OS::Neutron::Net"},
            "internalVL3_subnet": {"type": SUBNET, "properties": {"network": {"get_resource": "internalVL3"}}},
            "nfvi_node_affinity": {"type": "OS::Nova::ServerGroup"}
        }});
        order_after_subnets(&mut t);
        let r = &t["resources"];
        assert_eq!(
            r["VDU1_scale_group"]["depends_on"],
            json!(["internalVL3_subnet"])
        );
        assert_eq!(
            r["VDU2"]["depends_on"],
            json!(["nfvi_node_affinity", "internalVL3_subnet"])
        );
        assert!(r["VDU3"].get("depends_on").is_none());
        assert!(r["internalVL3_subnet"].get("depends_on").is_none());
        // Applied twice, nothing more.
        let once = t.clone();
        order_after_subnets(&mut t);
        assert_eq!(t, once);
    }
}
