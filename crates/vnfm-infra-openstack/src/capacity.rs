//! Autoscaling groups of a fixed size: their instance count from the `nfv` parameter.
//!
//! Tacker's older VM samples (`v1-vm-functional6-vdu2-scale`,
//! `v1-vm-functional7-multi-aspect`) give their `OS::Heat::AutoScalingGroup` a constant
//! `desired_capacity` (the initial count) and scale through `OS::Heat::ScalingPolicy`
//! resources that Tacker v1 signals. The driver scales every group the same way (the VNFCs to
//! remove marked unhealthy, then `desired_capacity` updated), so [`capacity_from_nfv`] makes a
//! constant `desired_capacity` read `{get_param: [nfv, VDU, <vdu>, desired_capacity]}`, the
//! VDU being the one whose servers the group's member template holds. The count the driver
//! passes at instantiation is the VNFD's, which is what the constant says in these samples;
//! the policies stay in the template, unused.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

const GROUP: &str = "OS::Heat::AutoScalingGroup";
const SERVER: &str = "OS::Nova::Server";

/// Makes each autoscaling group of `template` with a numeric `desired_capacity`, whose member
/// template (in `files`) holds servers named after exactly one of `vdus`, read its count from
/// `nfv`. Other groups, and groups whose count already comes from a parameter, are left alone.
pub fn capacity_from_nfv(
    template: &mut Value,
    files: &BTreeMap<String, String>,
    vdus: &BTreeSet<String>,
) {
    let Some(resources) = template.get_mut("resources").and_then(Value::as_object_mut) else {
        return;
    };
    for group in resources.values_mut() {
        if group.get("type").and_then(Value::as_str) != Some(GROUP) {
            continue;
        }
        let Some(props) = group.get_mut("properties").and_then(Value::as_object_mut) else {
            continue;
        };
        if !props.get("desired_capacity").is_some_and(Value::is_number) {
            continue;
        }
        let Some(member) = props
            .get("resource")
            .and_then(|r| r.get("type"))
            .and_then(Value::as_str)
            .and_then(|t| files.get(t))
        else {
            continue;
        };
        let Ok(member) = serde_saphyr::from_str::<Value>(member) else {
            continue;
        };
        let servers: BTreeSet<&str> = member
            .get("resources")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter(|(name, r)| {
                r.get("type").and_then(Value::as_str) == Some(SERVER)
                    && vdus.contains(name.as_str())
            })
            .map(|(name, _)| name.as_str())
            .collect();
        let [vdu] = servers.into_iter().collect::<Vec<_>>()[..] else {
            continue;
        };
        props.insert(
            "desired_capacity".into(),
            json!({"get_param": ["nfv", "VDU", vdu, "desired_capacity"]}),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_constant_group_size_reads_the_count_of_its_vdu() {
        let mut t = json!({"resources": {
            "VDU1_scale": {"type": GROUP, "properties": {"desired_capacity": 1, "max_size": 3,
                "resource": {"type": "VDU1.yaml", "properties": {}}}},
            "VDU2_scale": {"type": GROUP, "properties": {
                "desired_capacity": {"get_param": ["nfv", "VDU", "VDU2", "desired_capacity"]},
                "resource": {"type": "VDU2.yaml"}}},
            "other": {"type": GROUP, "properties": {"desired_capacity": 2,
                "resource": {"type": "helper.yaml"}}},
            "VDU1_scale_scale_out": {"type": "OS::Heat::ScalingPolicy"}
        }});
        let files = BTreeMap::from([
            (
                "VDU1.yaml".to_string(),
                "resources:\n  VDU1:\n    type: OS::Nova::Server\n  VDU1_CP1:\n    type: OS::Neutron::Port\n".to_string(),
            ),
            (
                "helper.yaml".to_string(),
                "resources:\n  worker:\n    type: OS::Nova::Server\n".to_string(),
            ),
        ]);
        let vdus = BTreeSet::from(["VDU1".to_string(), "VDU2".to_string()]);
        let before = t.clone();
        capacity_from_nfv(&mut t, &files, &vdus);
        let r = &t["resources"];
        assert_eq!(
            r["VDU1_scale"]["properties"]["desired_capacity"],
            json!({"get_param": ["nfv", "VDU", "VDU1", "desired_capacity"]})
        );
        assert_eq!(r["VDU2_scale"], before["resources"]["VDU2_scale"]);
        // A group of servers that are no VDU keeps its size.
        assert_eq!(r["other"]["properties"]["desired_capacity"], 2);
        assert_eq!(
            r["VDU1_scale_scale_out"],
            before["resources"]["VDU1_scale_scale_out"]
        );
    }
}
