//! Looking up what a request names in the VNFD and the instance: flavours, instantiation
//! levels, scaling aspects and their bounds, current scale levels, VNFCs. The request checks
//! ([`crate::validate`]) and the planner ([`crate::plan`]) both read through these, each
//! failing with an [`LcmError`] that names what is known.

use std::collections::BTreeMap;

use vnfm_descriptor::{Flavour, InstantiationLevel, ScalingAspect, Vnfd};
use vnfm_driver_api::HealVnfc;
use vnfm_types::{InstantiatedVnfInfo, InstantiationState, ScaleType, VnfInstance};

use crate::error::LcmError;
use crate::request::OperationRequest;

/// The flavour `id` of `vnfd`.
pub(crate) fn flavour<'a>(vnfd: &'a Vnfd, id: &str) -> Result<&'a Flavour, LcmError> {
    vnfd.flavour(id).ok_or_else(|| LcmError::UnknownFlavour {
        vnfd_id: vnfd.descriptor_id.clone(),
        flavour: id.to_string(),
        known: vnfd.flavours.iter().map(|f| f.id.clone()).collect(),
    })
}

/// `instantiatedVnfInfo` of an instance that must be instantiated for `op`.
pub(crate) fn instantiated<'a>(
    instance: &'a VnfInstance,
    op: &OperationRequest,
) -> Result<&'a InstantiatedVnfInfo, LcmError> {
    let not = || LcmError::NotInstantiated {
        instance_id: instance.id.to_string(),
        operation: op.operation_type(),
    };
    if instance.instantiation_state != InstantiationState::Instantiated {
        return Err(not());
    }
    instance.instantiated_vnf_info.as_ref().ok_or_else(|| {
        LcmError::inconsistent(format!(
            "instance {} is INSTANTIATED but has no instantiatedVnfInfo",
            instance.id
        ))
    })
}

/// The flavour of an instance's `instantiatedVnfInfo` in `vnfd`.
pub(crate) fn instance_flavour_of<'a>(
    vnfd: &'a Vnfd,
    info: &InstantiatedVnfInfo,
    op: &OperationRequest,
) -> Result<&'a Flavour, LcmError> {
    match op {
        // The new package may lack the current flavour: the client chose the wrong package.
        OperationRequest::ChangeVnfPkg(_) => flavour(vnfd, &info.flavour_id),
        _ => vnfd.flavour(&info.flavour_id).ok_or_else(|| {
            LcmError::inconsistent(format!(
                "the instance's flavour `{}` is not in its VNFD {}",
                info.flavour_id, vnfd.descriptor_id
            ))
        }),
    }
}

/// The flavour an instantiated instance is in.
pub(crate) fn instance_flavour<'a>(
    vnfd: &'a Vnfd,
    instance: &VnfInstance,
    op: &OperationRequest,
) -> Result<&'a Flavour, LcmError> {
    instance_flavour_of(vnfd, instantiated(instance, op)?, op)
}

/// The instantiation level `id` of `flavour`.
pub(crate) fn instantiation_level<'a>(
    flavour: &'a Flavour,
    id: &str,
) -> Result<&'a InstantiationLevel, LcmError> {
    flavour
        .instantiation_level(id)
        .ok_or_else(|| LcmError::UnknownInstantiationLevel {
            flavour: flavour.id.clone(),
            level: id.to_string(),
            known: flavour
                .instantiation_levels
                .iter()
                .map(|l| l.id.clone())
                .collect(),
        })
}

/// The scaling aspect `id` of `flavour`.
pub(crate) fn aspect<'a>(flavour: &'a Flavour, id: &str) -> Result<&'a ScalingAspect, LcmError> {
    flavour
        .scaling_aspect(id)
        .ok_or_else(|| LcmError::UnknownAspect {
            flavour: flavour.id.clone(),
            aspect: id.to_string(),
            known: flavour
                .scaling_aspects
                .iter()
                .map(|a| a.id.clone())
                .collect(),
        })
}

/// The level `aspect` reaches from `current` by `steps` steps of `scale_type`, within
/// `0..=max_scale_level`.
pub(crate) fn scaled_level(
    aspect: &ScalingAspect,
    current: u32,
    scale_type: ScaleType,
    steps: u32,
) -> Result<u32, LcmError> {
    let requested = match scale_type {
        ScaleType::ScaleOut => i64::from(current) + i64::from(steps),
        ScaleType::ScaleIn => i64::from(current) - i64::from(steps),
    };
    if requested < 0 || requested > i64::from(aspect.max_scale_level) {
        return Err(LcmError::ScaleOutOfBounds {
            aspect: aspect.id.clone(),
            current,
            requested,
            max: aspect.max_scale_level,
        });
    }
    u32::try_from(requested).map_err(|_| LcmError::inconsistent("scale level overflow"))
}

/// Every VNFC id of the instance a request may name: `vnfcInfo` ids, then `vnfcResourceInfo`
/// ids.
/// The VNFC ids to offer in an error: the `vnfcInfo` ids, which SOL003 requests use, or the
/// `vnfcResourceInfo` ids of a record without `vnfcInfo` (v2.6.1). Never both: the two id
/// spaces side by side read as twice as many VNFCs.
fn known_vnfc_ids(instance: &VnfInstance) -> Vec<String> {
    let info = instance.instantiated_vnf_info.as_ref();
    let infos: Vec<String> = info
        .and_then(|i| i.vnfc_info.as_ref())
        .map(|v| v.iter().map(|c| c.id.clone()).collect())
        .unwrap_or_default();
    if !infos.is_empty() {
        return infos;
    }
    info.and_then(|i| i.vnfc_resource_info.as_ref())
        .map(|v| v.iter().map(|r| r.id.clone()).collect())
        .unwrap_or_default()
}

/// Resolves a `vnfcInstanceId` of a heal or operate request: a `vnfcInfo` id (SOL002) or,
/// as Tacker also accepts, a `vnfcResourceInfo` id.
pub(crate) fn resolve_vnfc(
    instance: &VnfInstance,
    id: &str,
    pointer: &str,
) -> Result<HealVnfc, LcmError> {
    let info = instance.instantiated_vnf_info.as_ref();
    let resources = info
        .and_then(|i| i.vnfc_resource_info.as_deref())
        .unwrap_or(&[]);
    if let Some(c) = info
        .and_then(|i| i.vnfc_info.as_ref())
        .and_then(|v| v.iter().find(|c| c.id == id))
    {
        let resource_id = c
            .vnfc_resource_info_id
            .clone()
            .unwrap_or_else(|| c.id.clone());
        return Ok(HealVnfc {
            vnfc_info_id: Some(c.id.clone()),
            vnfc_resource_id: resource_id,
            vdu_id: c.vdu_id.clone(),
        });
    }
    if let Some(r) = resources.iter().find(|r| r.id == id) {
        return Ok(HealVnfc {
            vnfc_info_id: None,
            vnfc_resource_id: r.id.clone(),
            vdu_id: r.vdu_id.clone(),
        });
    }
    Err(LcmError::UnknownVnfc {
        pointer: pointer.to_string(),
        id: id.to_string(),
        known: known_vnfc_ids(instance),
    })
}

/// Current scale level of every aspect of `flavour` (from `scaleStatus`; 0 when not listed).
pub(crate) fn current_levels(flavour: &Flavour, instance: &VnfInstance) -> BTreeMap<String, u32> {
    let status = instance
        .instantiated_vnf_info
        .as_ref()
        .and_then(|i| i.scale_status.as_ref());
    flavour
        .scaling_aspects
        .iter()
        .map(|a| {
            let level = status
                .and_then(|s| s.iter().find(|x| x.aspect_id == a.id))
                .map_or(0, |x| x.scale_level);
            (a.id.clone(), level)
        })
        .collect()
}
