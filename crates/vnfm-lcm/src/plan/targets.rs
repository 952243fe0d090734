//! Instance counts from scale levels and instantiation levels.
//!
//! A VDU starts with its `VduInitialDelta` (or `min_number_of_instances` when the VNFD gives
//! none); each scaling aspect adds, per step, the VDU's delta for that step
//! (`VduScalingAspectDeltas`, with the aspect's `step_deltas` naming the delta of each step and
//! the last one repeating). An instantiation level may give the counts directly
//! (`VduInstantiationLevels`); where it does, those win.

use std::collections::BTreeMap;

use vnfm_descriptor::{Flavour, InstantiationLevel, Vdu};
use vnfm_driver_api::ResourceTarget;
use vnfm_types::VnfInstance;

use crate::error::LcmError;
use crate::lookup::current_levels;

/// The count a VDU starts with, before any scaling.
pub(crate) fn base_count(vdu: &Vdu) -> u64 {
    u64::from(vdu.initial_delta.unwrap_or(vdu.min_instances))
}

/// Counts computed from scale levels alone.
fn counts_from_levels(flavour: &Flavour, levels: &BTreeMap<String, u32>) -> BTreeMap<String, u64> {
    flavour
        .vdus
        .iter()
        .map(|vdu| {
            let added: u64 = flavour
                .scaling_aspects
                .iter()
                .map(|a| a.instances_added(&vdu.id, levels.get(&a.id).copied().unwrap_or(0)))
                .fold(0u64, u64::saturating_add);
            (vdu.id.clone(), base_count(vdu).saturating_add(added))
        })
        .collect()
}

/// Current count of every VDU of `flavour`: the VNFCs in `vnfcResourceInfo` when the instance
/// records any, otherwise what its scale levels imply.
pub(crate) fn current_counts(flavour: &Flavour, instance: &VnfInstance) -> BTreeMap<String, u64> {
    let vnfcs = instance
        .instantiated_vnf_info
        .as_ref()
        .and_then(|i| i.vnfc_resource_info.as_ref())
        .filter(|v| !v.is_empty());
    match vnfcs {
        Some(vnfcs) => flavour
            .vdus
            .iter()
            .map(|vdu| {
                let n = vnfcs.iter().filter(|v| v.vdu_id == vdu.id).count();
                (vdu.id.clone(), n as u64)
            })
            .collect(),
        None => counts_from_levels(flavour, &current_levels(flavour, instance)),
    }
}

/// The resources at an instantiation level (or at scale level 0 everywhere when `level` is
/// `None`).
pub(crate) fn level_target(
    flavour: &Flavour,
    level: Option<&InstantiationLevel>,
) -> Result<ResourceTarget, LcmError> {
    let levels: BTreeMap<String, u32> = flavour
        .scaling_aspects
        .iter()
        .map(|a| {
            let l = level
                .and_then(|l| l.scale_levels.get(&a.id))
                .copied()
                .unwrap_or(0);
            (a.id.clone(), l)
        })
        .collect();
    let mut counts = counts_from_levels(flavour, &levels);
    if let Some(level) = level {
        for (vdu, n) in &level.vdu_instances {
            if let Some(c) = counts.get_mut(vdu) {
                *c = u64::from(*n);
            }
        }
    }
    finish(
        flavour,
        level.map(|l| l.id.clone()),
        levels,
        counts,
        &BTreeMap::new(),
    )
}

/// The resources after moving from `from_levels` / `from_counts` to `to_levels`: each VDU
/// changes by the difference of the aspects' contributions; `overrides` (an instantiation
/// level's own counts) replace the result for the VDUs they name.
pub(crate) fn moved_target(
    flavour: &Flavour,
    instantiation_level_id: Option<String>,
    from_levels: &BTreeMap<String, u32>,
    from_counts: &BTreeMap<String, u64>,
    to_levels: BTreeMap<String, u32>,
    overrides: &BTreeMap<String, u32>,
) -> Result<ResourceTarget, LcmError> {
    let mut counts = BTreeMap::new();
    for vdu in &flavour.vdus {
        let mut n = i128::from(from_counts.get(&vdu.id).copied().unwrap_or(0));
        for a in &flavour.scaling_aspects {
            let old = from_levels.get(&a.id).copied().unwrap_or(0);
            let new = to_levels.get(&a.id).copied().unwrap_or(0);
            n += i128::from(a.instances_added(&vdu.id, new))
                - i128::from(a.instances_added(&vdu.id, old));
        }
        if let Some(o) = overrides.get(&vdu.id) {
            n = i128::from(*o);
        }
        if n < 0 {
            return Err(LcmError::VduInstancesOutOfBounds {
                vdu: vdu.id.clone(),
                requested: 0,
                min: vdu.min_instances,
                max: vdu.max_instances,
            });
        }
        counts.insert(vdu.id.clone(), u64::try_from(n).unwrap_or(u64::MAX));
    }
    finish(
        flavour,
        instantiation_level_id,
        to_levels,
        counts,
        from_counts,
    )
}

/// Checks the counts against the VDU profiles and builds the target. Only VDUs whose count
/// differs from `unchanged` are checked, so an operation is not refused because of a VDU it
/// does not touch.
fn finish(
    flavour: &Flavour,
    instantiation_level_id: Option<String>,
    scale_levels: BTreeMap<String, u32>,
    counts: BTreeMap<String, u64>,
    unchanged: &BTreeMap<String, u64>,
) -> Result<ResourceTarget, LcmError> {
    let mut vdu_instances = BTreeMap::new();
    for vdu in &flavour.vdus {
        let n = counts.get(&vdu.id).copied().unwrap_or(0);
        let touched = unchanged.get(&vdu.id) != Some(&n);
        let within = n >= u64::from(vdu.min_instances) && n <= u64::from(vdu.max_instances);
        if touched && !within {
            return Err(LcmError::VduInstancesOutOfBounds {
                vdu: vdu.id.clone(),
                requested: n,
                min: vdu.min_instances,
                max: vdu.max_instances,
            });
        }
        vdu_instances.insert(vdu.id.clone(), u32::try_from(n).unwrap_or(u32::MAX));
    }
    Ok(ResourceTarget {
        flavour_id: flavour.id.clone(),
        instantiation_level_id,
        scale_levels,
        vdu_instances,
    })
}

/// The current resources of an instantiated instance, as a target (the `from` of a change).
pub(crate) fn current_target(flavour: &Flavour, instance: &VnfInstance) -> ResourceTarget {
    ResourceTarget {
        flavour_id: flavour.id.clone(),
        instantiation_level_id: None,
        scale_levels: current_levels(flavour, instance),
        vdu_instances: current_counts(flavour, instance)
            .into_iter()
            .map(|(k, v)| (k, u32::try_from(v).unwrap_or(u32::MAX)))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use vnfm_descriptor::ScalingAspect;

    fn aspect(step_deltas: &[&str], deltas: &[(&str, u32)]) -> ScalingAspect {
        ScalingAspect {
            id: "a".into(),
            name: String::new(),
            description: String::new(),
            max_scale_level: u32::MAX,
            step_deltas: step_deltas.iter().map(|s| s.to_string()).collect(),
            vdu_deltas: [(
                "VDU1".to_string(),
                deltas.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            )]
            .into(),
        }
    }

    #[test]
    fn uniform_deltas_multiply() {
        let a = aspect(&["d1"], &[("d1", 2)]);
        assert_eq!(a.instances_added("VDU1", 0), 0);
        assert_eq!(a.instances_added("VDU1", 3), 6);
        assert_eq!(a.instances_added("VDU2", 3), 0);
    }

    #[test]
    fn per_step_deltas_then_the_last_repeats() {
        let a = aspect(&["d1", "d2", "d3"], &[("d1", 1), ("d2", 2), ("d3", 4)]);
        assert_eq!(a.instances_added("VDU1", 1), 1);
        assert_eq!(a.instances_added("VDU1", 2), 3);
        assert_eq!(a.instances_added("VDU1", 3), 7);
        assert_eq!(a.instances_added("VDU1", 5), 15);
    }

    #[test]
    fn a_huge_level_does_not_loop_or_overflow() {
        let a = aspect(&["d1"], &[("d1", u32::MAX)]);
        let n = a.instances_added("VDU1", u32::MAX);
        assert_eq!(n, u64::from(u32::MAX) * u64::from(u32::MAX));
        let none = aspect(&[], &[("d1", 5)]);
        assert_eq!(none.instances_added("VDU1", 1000), 0);
    }
}
