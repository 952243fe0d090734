//! Request validation against the VNFD and the instance, before an operation occurrence exists.
//!
//! The JSON Schemas (`vnfm-schemas`) check a request's shape; this module checks what they
//! cannot: the instance is in the right state, the flavour, level, aspect, VNFC and CP ids the
//! request names exist, the scale stays within its bounds, and SOL003's either-or rules hold.
//! The planner runs these checks first ([`crate::plan::validate`] runs the whole planner), so
//! everything that can refuse a request is checked in one place, with an [`LcmError`] that
//! says what is wrong and what is allowed. The checks read the request ([`crate::request`])
//! and the lookups the planner shares; they never call the planner.

use std::collections::BTreeSet;

use vnfm_descriptor::{Flavour, Vnfd};
use vnfm_types::{
    ExtManagedVirtualLinkData, ExtVirtualLinkData, InstantiatedVnfInfo, InstantiationState,
    KeyValuePairs, StopType, TerminationType, VnfInstance, VnfOperationalState,
};

use crate::error::{LcmError, echo};
use crate::lookup::{
    aspect, current_levels, flavour, instance_flavour_of, instantiated, instantiation_level,
    resolve_vnfc,
};
use crate::request::OperationRequest;

/// The longest graceful termination or stop timeout accepted, in seconds (one day): a longer
/// wait is almost certainly a unit mistake, and it would hold the instance that long.
pub const MAX_GRACEFUL_TIMEOUT_SECONDS: u32 = 86_400;

/// The `additionalParams` member of an INSTANTIATE request that maps VDUs to VIM connections.
pub const VDU_VIM_CONNECTIONS: &str = "vduVimConnections";

/// The state, reference and either-or checks; the planner adds the bounds checks that need
/// computed targets.
pub(crate) fn check_request(
    op: &OperationRequest,
    vnfd: &Vnfd,
    instance: &VnfInstance,
) -> Result<(), LcmError> {
    match op {
        OperationRequest::ChangeVnfPkg(r) if vnfd.descriptor_id != r.vnfd_id.as_str() => {
            return Err(LcmError::inconsistent(format!(
                "CHANGE_VNFPKG to VNFD {} was planned with VNFD {}",
                r.vnfd_id, vnfd.descriptor_id
            )));
        }
        OperationRequest::ChangeVnfPkg(_) => {}
        _ if vnfd.descriptor_id != instance.vnfd_id.as_str() => {
            return Err(LcmError::inconsistent(format!(
                "instance {} is based on VNFD {} but was planned with VNFD {}",
                instance.id, instance.vnfd_id, vnfd.descriptor_id
            )));
        }
        _ => {}
    }
    match op {
        OperationRequest::Instantiate(r) => {
            if instance.instantiation_state == InstantiationState::Instantiated {
                return Err(LcmError::AlreadyInstantiated {
                    instance_id: instance.id.to_string(),
                    flavour_id: instance
                        .instantiated_vnf_info
                        .as_ref()
                        .map_or_else(|| "unknown".to_string(), |i| i.flavour_id.clone()),
                });
            }
            let f = flavour(vnfd, &r.flavour_id)?;
            if let Some(level) = &r.instantiation_level_id {
                instantiation_level(f, level)?;
            }
            let vims = vim_ids(instance, r.vim_connection_info.as_ref());
            check_ext_links(f, r.ext_virtual_links.as_deref(), "/extVirtualLinks", &vims)?;
            check_ext_managed(f, r.ext_managed_virtual_links.as_deref(), &vims)?;
            check_explicit(r.additional_params.as_ref(), f, &vims)?;
        }
        OperationRequest::Terminate(r) => {
            instantiated(instance, op)?;
            if r.termination_type == TerminationType::Graceful {
                check_timeout(
                    r.graceful_termination_timeout,
                    "/gracefulTerminationTimeout",
                )?;
            }
        }
        OperationRequest::Heal(r) => {
            instantiated(instance, op)?;
            check_vnfc_ids(instance, r.vnfc_instance_id.as_deref())?;
        }
        OperationRequest::Scale(r) => {
            let info = instantiated(instance, op)?;
            if r.number_of_steps == Some(0) {
                return Err(LcmError::invalid(
                    "/numberOfSteps",
                    "numberOfSteps must be a positive integer (1 when omitted)",
                ));
            }
            aspect(instance_flavour_of(vnfd, info, op)?, &r.aspect_id)?;
        }
        OperationRequest::ScaleToLevel(r) => {
            let info = instantiated(instance, op)?;
            let f = instance_flavour_of(vnfd, info, op)?;
            match (&r.instantiation_level_id, &r.scale_info) {
                (Some(_), Some(_)) => {
                    return Err(LcmError::invalid(
                        "",
                        "give either instantiationLevelId or scaleInfo, not both",
                    ));
                }
                (None, None) => {
                    return Err(LcmError::invalid(
                        "",
                        "give instantiationLevelId or scaleInfo: the request names no target level",
                    ));
                }
                (Some(level), None) => {
                    instantiation_level(f, level)?;
                }
                (None, Some(infos)) => {
                    if infos.is_empty() {
                        return Err(LcmError::invalid(
                            "/scaleInfo",
                            "scaleInfo is empty: list at least one aspect and its target level",
                        ));
                    }
                    let levels = current_levels(f, instance);
                    let mut seen = BTreeSet::new();
                    for (i, s) in infos.iter().enumerate() {
                        if !seen.insert(s.aspect_id.as_str()) {
                            return Err(LcmError::invalid(
                                format!("/scaleInfo/{i}/aspectId"),
                                format!("aspect `{}` is listed more than once", echo(&s.aspect_id)),
                            ));
                        }
                        let a = aspect(f, &s.aspect_id)?;
                        if s.scale_level > a.max_scale_level {
                            return Err(LcmError::ScaleOutOfBounds {
                                aspect: a.id.clone(),
                                current: levels.get(&a.id).copied().unwrap_or(0),
                                requested: i64::from(s.scale_level),
                                max: a.max_scale_level,
                            });
                        }
                    }
                }
            }
        }
        OperationRequest::ChangeFlavour(r) => {
            let info = instantiated(instance, op)?;
            let new = flavour(vnfd, &r.new_flavour_id)?;
            if info.flavour_id == r.new_flavour_id {
                return Err(LcmError::SameFlavour {
                    flavour: info.flavour_id.clone(),
                });
            }
            if let Some(level) = &r.instantiation_level_id {
                instantiation_level(new, level)?;
            }
            let vims = vim_ids(instance, r.vim_connection_info.as_ref());
            check_ext_links(
                new,
                r.ext_virtual_links.as_deref(),
                "/extVirtualLinks",
                &vims,
            )?;
            check_ext_managed(new, r.ext_managed_virtual_links.as_deref(), &vims)?;
        }
        OperationRequest::Operate(r) => {
            instantiated(instance, op)?;
            check_vnfc_ids(instance, r.vnfc_instance_id.as_deref())?;
            if r.change_state_to == VnfOperationalState::Started {
                if r.stop_type.is_some() {
                    return Err(LcmError::invalid(
                        "/stopType",
                        "stopType applies only when changeStateTo is STOPPED",
                    ));
                }
                if r.graceful_stop_timeout.is_some() {
                    return Err(LcmError::invalid(
                        "/gracefulStopTimeout",
                        "gracefulStopTimeout applies only when changeStateTo is STOPPED",
                    ));
                }
            }
            if r.graceful_stop_timeout.is_some() && r.stop_type != Some(StopType::Graceful) {
                return Err(LcmError::invalid(
                    "/gracefulStopTimeout",
                    "gracefulStopTimeout applies only when stopType is GRACEFUL",
                ));
            }
            check_timeout(r.graceful_stop_timeout, "/gracefulStopTimeout")?;
        }
        OperationRequest::ChangeExtConn(r) => {
            let info = instantiated(instance, op)?;
            let f = instance_flavour_of(vnfd, info, op)?;
            if r.ext_virtual_links.is_empty() {
                return Err(LcmError::invalid(
                    "/extVirtualLinks",
                    "extVirtualLinks is empty: list the external virtual links to change",
                ));
            }
            let vims = vim_ids(instance, r.vim_connection_info.as_ref());
            check_ext_links(f, Some(&r.ext_virtual_links), "/extVirtualLinks", &vims)?;
        }
        OperationRequest::ModifyInfo(r) => {
            if let Some(mods) = &r.vnfc_info_modifications {
                let known: Vec<String> = instance
                    .instantiated_vnf_info
                    .as_ref()
                    .and_then(|i| i.vnfc_info.as_ref())
                    .map(|v| v.iter().map(|c| c.id.clone()).collect())
                    .unwrap_or_default();
                let mut seen = BTreeSet::new();
                for (i, m) in mods.iter().enumerate() {
                    let pointer = format!("/vnfcInfoModifications/{i}/id");
                    if !seen.insert(m.id.as_str()) {
                        return Err(LcmError::invalid(
                            pointer,
                            format!("VNFC `{}` is listed more than once", echo(&m.id)),
                        ));
                    }
                    if !known.contains(&m.id) {
                        return Err(LcmError::UnknownVnfc {
                            pointer,
                            id: m.id.clone(),
                            known,
                        });
                    }
                }
            }
            if let Some(vims) = &r.vim_connection_info
                && let Some(info) = &instance.instantiated_vnf_info
            {
                for (id, v) in vims {
                    if v.is_none()
                        && let Some(resource) = resource_on_vim(info, id)
                    {
                        return Err(LcmError::VimConnectionInUse {
                            pointer: format!("/vimConnectionInfo/{id}"),
                            id: id.clone(),
                            resource,
                        });
                    }
                }
            }
        }
        OperationRequest::ChangeVnfPkg(r) => {
            let info = instantiated(instance, op)?;
            let f = instance_flavour_of(vnfd, info, op)?;
            let vims = vim_ids(instance, r.vim_connection_info.as_ref());
            check_ext_links(f, r.ext_virtual_links.as_deref(), "/extVirtualLinks", &vims)?;
            check_ext_managed(f, r.ext_managed_virtual_links.as_deref(), &vims)?;
        }
    }
    Ok(())
}

fn check_vnfc_ids(instance: &VnfInstance, ids: Option<&[String]>) -> Result<(), LcmError> {
    let Some(ids) = ids else {
        return Ok(());
    };
    if ids.is_empty() {
        return Err(LcmError::invalid(
            "/vnfcInstanceId",
            "vnfcInstanceId is empty: omit it to address the whole VNF, or list VNFC ids",
        ));
    }
    let mut seen = BTreeSet::new();
    for (i, id) in ids.iter().enumerate() {
        let pointer = format!("/vnfcInstanceId/{i}");
        if !seen.insert(id.as_str()) {
            return Err(LcmError::invalid(
                pointer,
                format!("VNFC `{}` is listed more than once", echo(id)),
            ));
        }
        resolve_vnfc(instance, id, &pointer)?;
    }
    Ok(())
}

fn check_timeout(timeout: Option<u32>, pointer: &str) -> Result<(), LcmError> {
    match timeout {
        Some(t) if t > MAX_GRACEFUL_TIMEOUT_SECONDS => Err(LcmError::invalid(
            pointer,
            format!(
                "{t} s is longer than the maximum of {MAX_GRACEFUL_TIMEOUT_SECONDS} s (one day); the value is in seconds"
            ),
        )),
        _ => Ok(()),
    }
}

/// VIM connection ids a request may refer to: the request's own and the instance's.
fn vim_ids<V>(
    instance: &VnfInstance,
    request: Option<&indexmap::IndexMap<String, V>>,
) -> Vec<String> {
    let mut ids: Vec<String> = request
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    for k in instance.vim_connection_info.iter().flat_map(|m| m.keys()) {
        if !ids.contains(k) {
            ids.push(k.clone());
        }
    }
    ids
}

fn check_vim(id: Option<&String>, pointer: String, vims: &[String]) -> Result<(), LcmError> {
    match id {
        Some(id) if !vims.contains(id) => Err(LcmError::UnknownVimConnection {
            pointer,
            id: id.clone(),
            known: vims.to_vec(),
        }),
        _ => Ok(()),
    }
}

/// The CPD ids a request may connect externally: the flavour's external CPs (SOL001: its
/// `VnfExtCp` templates and the VDU CPs its substitution mapping exposes) and, apart, its
/// other VDU CPs. Tacker accepts those too, and its own reference instantiate request names
/// one: `VDU1_CP2`, which v2-vm-userdata-standard attaches to the internal virtual link
/// `internalVL1` without exposing it. They are accepted, but not listed as external.
fn connectable_cpds(flavour: &Flavour) -> (Vec<String>, Vec<String>) {
    let external: Vec<String> = flavour.ext_cps.iter().map(|c| c.id.clone()).collect();
    let mut tolerated = Vec::new();
    for cp in &flavour.vdu_cps {
        if !external.contains(&cp.id) && !tolerated.contains(&cp.id) {
            tolerated.push(cp.id.clone());
        }
    }
    (external, tolerated)
}

fn check_ext_links(
    flavour: &Flavour,
    links: Option<&[ExtVirtualLinkData]>,
    prefix: &str,
    vims: &[String],
) -> Result<(), LcmError> {
    let Some(links) = links else {
        return Ok(());
    };
    let (external, tolerated) = connectable_cpds(flavour);
    let mut seen = BTreeSet::new();
    for (i, l) in links.iter().enumerate() {
        if !seen.insert(l.id.as_str()) {
            return Err(LcmError::invalid(
                format!("{prefix}/{i}/id"),
                format!(
                    "external virtual link id `{}` is used more than once; ids must be unique",
                    echo(&l.id)
                ),
            ));
        }
        check_vim(
            l.vim_connection_id.as_ref(),
            format!("{prefix}/{i}/vimConnectionId"),
            vims,
        )?;
        for (j, cp) in l.ext_cps.iter().enumerate() {
            if !external.contains(&cp.cpd_id) && !tolerated.contains(&cp.cpd_id) {
                return Err(LcmError::UnknownExtCp {
                    pointer: format!("{prefix}/{i}/extCps/{j}/cpdId"),
                    flavour: flavour.id.clone(),
                    cpd: cp.cpd_id.clone(),
                    known: external,
                    tolerated,
                });
            }
            if cp.cp_config.is_empty() {
                return Err(LcmError::invalid(
                    format!("{prefix}/{i}/extCps/{j}/cpConfig"),
                    "cpConfig is empty: give at least one CP configuration",
                ));
            }
        }
    }
    Ok(())
}

fn check_ext_managed(
    flavour: &Flavour,
    links: Option<&[ExtManagedVirtualLinkData]>,
    vims: &[String],
) -> Result<(), LcmError> {
    for (i, l) in links.into_iter().flatten().enumerate() {
        if flavour
            .virtual_links
            .iter()
            .all(|v| v.id != l.vnf_virtual_link_desc_id)
        {
            return Err(LcmError::UnknownVirtualLink {
                pointer: format!("/extManagedVirtualLinks/{i}/vnfVirtualLinkDescId"),
                flavour: flavour.id.clone(),
                vld: l.vnf_virtual_link_desc_id.clone(),
                known: flavour.virtual_links.iter().map(|v| v.id.clone()).collect(),
            });
        }
        check_vim(
            l.vim_connection_id.as_ref(),
            format!("/extManagedVirtualLinks/{i}/vimConnectionId"),
            vims,
        )?;
    }
    Ok(())
}

/// A resource of the instance that lives on VIM connection `id`, if any.
fn resource_on_vim(info: &InstantiatedVnfInfo, id: &str) -> Option<String> {
    let on = |h: &vnfm_types::ResourceHandle| h.vim_connection_id.as_deref() == Some(id);
    info.vnfc_resource_info
        .iter()
        .flatten()
        .find(|r| on(&r.compute_resource))
        .map(|r| format!("vnfcResourceInfo {}", r.id))
        .or_else(|| {
            info.vnf_virtual_link_resource_info
                .iter()
                .flatten()
                .find(|r| on(&r.network_resource))
                .map(|r| format!("vnfVirtualLinkResourceInfo {}", r.id))
        })
        .or_else(|| {
            info.virtual_storage_resource_info
                .iter()
                .flatten()
                .find(|r| on(&r.storage_resource))
                .map(|r| format!("virtualStorageResourceInfo {}", r.id))
        })
        .or_else(|| {
            info.ext_virtual_link_info
                .iter()
                .flatten()
                .find(|r| on(&r.resource_handle))
                .map(|r| format!("extVirtualLinkInfo {}", r.id))
        })
}

/// `s` escaped as one JSON pointer token (RFC 6901).
fn pointer_token(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

/// Checks `additionalParams.vduVimConnections` of an INSTANTIATE request: an object whose
/// members name VDUs of `flavour` and whose values are keys of `vim_keys` (the request's and
/// the instance's VIM connections). Errors are 400s pointing at the offending member.
pub fn check_explicit(
    params: Option<&KeyValuePairs>,
    flavour: &Flavour,
    vim_keys: &[String],
) -> Result<(), LcmError> {
    let Some(value) = params.and_then(|p| p.get(VDU_VIM_CONNECTIONS)) else {
        return Ok(());
    };
    let base = format!("/additionalParams/{VDU_VIM_CONNECTIONS}");
    let Some(map) = value.as_object() else {
        return Err(LcmError::invalid(
            base,
            "must be an object mapping VDU ids to keys of vimConnectionInfo",
        ));
    };
    for (vdu, key) in map {
        let pointer = format!("{base}/{}", pointer_token(vdu));
        if flavour.vdu(vdu).is_none() {
            let known: Vec<&str> = flavour.vdus.iter().map(|v| v.id.as_str()).collect();
            return Err(LcmError::invalid(
                pointer,
                format!(
                    "flavour `{}` has no VDU `{}`; its VDUs: {}",
                    flavour.id,
                    echo(vdu),
                    known.join(", ")
                ),
            ));
        }
        let Some(key) = key.as_str() else {
            return Err(LcmError::invalid(
                pointer,
                "must be a string: the key of a vimConnectionInfo entry",
            ));
        };
        if !vim_keys.iter().any(|k| k == key) {
            return Err(LcmError::invalid(
                pointer,
                format!(
                    "no VIM connection `{}` in the request or the instance; known VIM connections: {}",
                    echo(key),
                    vim_keys.join(", ")
                ),
            ));
        }
    }
    Ok(())
}
