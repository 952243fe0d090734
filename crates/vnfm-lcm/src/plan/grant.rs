//! Grant requests (SOL003 clause 9): what the VNFM asks the NFVO before it changes resources,
//! derived from the plan's infrastructure step, the VNFD flavour and the instance.
//!
//! - INSTANTIATE: every VNFC the target level asks for (COMPUTE, its STORAGEs and LINKPORTs)
//!   and every internal virtual link (VL), with the instantiation level.
//! - SCALE, SCALE_TO_LEVEL, CHANGE_FLAVOUR: the difference per VDU between the current and the
//!   target instance counts; removals name the existing resources (the newest VNFCs of the VDU,
//!   which scale-in removes first).
//! - HEAL: each healed VNFC (all of them for a whole-VNF heal) is removed and added again.
//! - TERMINATE: every resource of the instance is removed.
//! - OPERATE, CHANGE_EXT_CONN, CHANGE_VNFPKG: every VNFC's compute resource is updated.
//!
//! Placement constraints come from the flavour's affinity and anti-affinity rules over the
//! COMPUTE resources added. Rollback plans and MODIFY_INFO need no grant.

use std::collections::BTreeMap;

use vnfm_descriptor::{Flavour, PlacementKind, Vnfd};
use vnfm_driver_api::infra::{HealScope, InfraStep, ResourceTarget};
use vnfm_types::links::{ApiVersion, LinkTarget, ResourceLinks};
use vnfm_types::{
    ConstraintResourceRef, GrantRequest, GrantRequestLinks, GrantedLcmOperationType, Link,
    PlacementConstraint, ResourceDefinition, ResourceDefinitionType, VnfInstance, VnfLcmOpOcc,
    VnfcResourceInfo,
};

use crate::plan::{Plan, PlanKind, Step};

fn def(
    id: String,
    kind: ResourceDefinitionType,
    vdu: Option<&str>,
    template: Option<&str>,
    vnfd: &Vnfd,
) -> ResourceDefinition {
    ResourceDefinition {
        id,
        resource_type: kind,
        vdu_id: vdu.map(str::to_owned),
        vnfd_id: Some(vnfm_types::VnfdId::new(vnfd.descriptor_id.clone())),
        resource_template_id: template.map(str::to_owned),
        resource: None,
    }
}

/// The definitions of one new VNFC of `vdu` (number `n`): COMPUTE, its STORAGEs, LINKPORTs.
fn new_vnfc(
    flavour: &Flavour,
    vnfd: &Vnfd,
    vdu: &str,
    n: u32,
    prefix: &str,
) -> Vec<ResourceDefinition> {
    let base = format!("{prefix}{vdu}-{n}");
    let mut out = vec![def(
        base.clone(),
        ResourceDefinitionType::Compute,
        Some(vdu),
        Some(vdu),
        vnfd,
    )];
    if let Some(v) = flavour.vdus.iter().find(|v| v.id == vdu) {
        for storage in &v.virtual_storages {
            out.push(def(
                format!("{base}-{storage}"),
                ResourceDefinitionType::Storage,
                Some(vdu),
                Some(storage),
                vnfd,
            ));
        }
    }
    for cp in flavour
        .vdu_cps
        .iter()
        .filter(|c| c.vdu.as_deref() == Some(vdu))
    {
        out.push(def(
            format!("{base}-{}", cp.id),
            ResourceDefinitionType::Linkport,
            Some(vdu),
            Some(&cp.id),
            vnfd,
        ));
    }
    out
}

/// An existing VNFC as a resource definition naming its compute resource.
fn existing_vnfc(vnfc: &VnfcResourceInfo, vnfd: &Vnfd) -> ResourceDefinition {
    ResourceDefinition {
        resource: Some(vnfc.compute_resource.clone()),
        ..def(
            vnfc.id.clone(),
            ResourceDefinitionType::Compute,
            Some(&vnfc.vdu_id),
            Some(&vnfc.vdu_id),
            vnfd,
        )
    }
}

fn vnfcs(instance: &VnfInstance) -> &[VnfcResourceInfo] {
    instance
        .instantiated_vnf_info
        .as_ref()
        .and_then(|i| i.vnfc_resource_info.as_deref())
        .unwrap_or(&[])
}

fn operation_of(step: &InfraStep) -> Option<GrantedLcmOperationType> {
    Some(match step {
        InfraStep::Instantiate { .. } => GrantedLcmOperationType::Instantiate,
        InfraStep::Terminate { .. } => GrantedLcmOperationType::Terminate,
        InfraStep::Scale { .. } => GrantedLcmOperationType::Scale,
        InfraStep::ScaleToLevel { .. } => GrantedLcmOperationType::ScaleToLevel,
        InfraStep::Heal { .. } => GrantedLcmOperationType::Heal,
        InfraStep::Operate { .. } => GrantedLcmOperationType::Operate,
        InfraStep::ChangeExtConn { .. } => GrantedLcmOperationType::ChangeExtConn,
        InfraStep::ChangeFlavour { .. } => GrantedLcmOperationType::ChangeFlavour,
        InfraStep::ChangeVnfpkg { .. } => GrantedLcmOperationType::ChangeVnfpkg,
        InfraStep::RollbackInstantiate
        | InfraStep::RollbackScale { .. }
        | InfraStep::RollbackChangeExtConn
        | InfraStep::RollbackChangeVnfpkg { .. } => return None,
    })
}

/// Adds and removals between two targets, VDU by VDU (sorted by VDU id).
fn resize(
    flavour: &Flavour,
    vnfd: &Vnfd,
    instance: &VnfInstance,
    from: &ResourceTarget,
    to: &ResourceTarget,
    req: &mut GrantRequest,
) {
    let vdus: std::collections::BTreeSet<&String> = from
        .vdu_instances
        .keys()
        .chain(to.vdu_instances.keys())
        .collect();
    for vdu in vdus {
        let (have, want) = (from.instances_of(vdu), to.instances_of(vdu));
        if want > have {
            for n in have..want {
                req.add_resources
                    .extend(new_vnfc(flavour, vnfd, vdu, n, ""));
            }
        } else if have > want {
            let existing: Vec<&VnfcResourceInfo> = vnfcs(instance)
                .iter()
                .filter(|v| &v.vdu_id == vdu)
                .collect();
            let leaving = (have - want) as usize;
            for v in existing.iter().rev().take(leaving) {
                req.remove_resources.push(existing_vnfc(v, vnfd));
            }
        }
    }
}

/// The grant request for `plan`, or `None` when the plan changes no resources through the
/// infrastructure (MODIFY_INFO, rollback plans).
pub fn grant_request(
    occ: &VnfLcmOpOcc,
    instance: &VnfInstance,
    vnfd: &Vnfd,
    plan: &Plan,
    links: &dyn ResourceLinks,
) -> Option<GrantRequest> {
    if plan.kind != PlanKind::Forward {
        return None;
    }
    let step = plan.steps.iter().find_map(|s| match s {
        Step::Infra(i) => Some(i),
        _ => None,
    })?;
    let operation = operation_of(step)?;
    let flavour_id = plan.flavour_id.clone();
    let flavour = flavour_id.as_deref().and_then(|f| vnfd.flavour(f));
    let additional_params = occ
        .operation_params
        .as_ref()
        .and_then(|p| p.get("additionalParams"))
        .and_then(|p| p.as_object())
        .cloned();
    let mut req = GrantRequest {
        vnf_instance_id: instance.id.clone(),
        vnf_lcm_op_occ_id: occ.id.clone(),
        vnfd_id: instance.vnfd_id.clone(),
        flavour_id,
        operation,
        is_automatic_invocation: occ.is_automatic_invocation,
        instantiation_level_id: None,
        add_resources: Vec::new(),
        temp_resources: Vec::new(),
        remove_resources: Vec::new(),
        update_resources: Vec::new(),
        placement_constraints: Vec::new(),
        additional_params,
        links: GrantRequestLinks {
            vnf_lcm_op_occ: Link::new(links.href(LinkTarget::OpOcc {
                version: ApiVersion::V2,
                id: occ.id.as_str(),
            })),
            vnf_instance: Link::new(links.href(LinkTarget::Instance {
                version: ApiVersion::V2,
                id: instance.id.as_str(),
            })),
        },
    };
    match (step, flavour) {
        (InfraStep::Instantiate { target }, Some(flavour)) => {
            req.instantiation_level_id = target.instantiation_level_id.clone();
            for (vdu, count) in &target.vdu_instances {
                for n in 0..*count {
                    req.add_resources
                        .extend(new_vnfc(flavour, vnfd, vdu, n, ""));
                }
            }
            for vl in &flavour.virtual_links {
                req.add_resources.push(def(
                    vl.id.clone(),
                    ResourceDefinitionType::Vl,
                    None,
                    Some(&vl.id),
                    vnfd,
                ));
            }
        }
        (
            InfraStep::Scale { from, target, .. }
            | InfraStep::ScaleToLevel { from, target }
            | InfraStep::ChangeFlavour { from, target },
            Some(flavour),
        ) => {
            if !matches!(step, InfraStep::Scale { .. }) {
                req.instantiation_level_id = target.instantiation_level_id.clone();
            }
            resize(flavour, vnfd, instance, from, target, &mut req);
        }
        (InfraStep::Heal { scope }, Some(flavour)) => {
            let healed: Vec<&VnfcResourceInfo> = match scope {
                HealScope::WholeVnf => vnfcs(instance).iter().collect(),
                HealScope::Vnfcs { vnfcs: list } => vnfcs(instance)
                    .iter()
                    .filter(|v| list.iter().any(|h| h.vnfc_resource_id == v.id))
                    .collect(),
            };
            for v in healed {
                req.remove_resources.push(existing_vnfc(v, vnfd));
                req.add_resources.extend(new_vnfc(
                    flavour,
                    vnfd,
                    &v.vdu_id,
                    0,
                    &format!("{}-healed-", v.id),
                ));
            }
        }
        (InfraStep::Terminate { .. }, _) => {
            req.remove_resources
                .extend(vnfcs(instance).iter().map(|v| existing_vnfc(v, vnfd)));
            if let Some(info) = &instance.instantiated_vnf_info {
                for s in info.virtual_storage_resource_info.iter().flatten() {
                    req.remove_resources.push(ResourceDefinition {
                        resource: Some(s.storage_resource.clone()),
                        ..def(
                            s.id.clone(),
                            ResourceDefinitionType::Storage,
                            None,
                            Some(&s.virtual_storage_desc_id),
                            vnfd,
                        )
                    });
                }
                for l in info.vnf_virtual_link_resource_info.iter().flatten() {
                    req.remove_resources.push(ResourceDefinition {
                        resource: Some(l.network_resource.clone()),
                        ..def(
                            l.id.clone(),
                            ResourceDefinitionType::Vl,
                            None,
                            Some(&l.vnf_virtual_link_desc_id),
                            vnfd,
                        )
                    });
                }
            }
        }
        _ => {
            req.update_resources
                .extend(vnfcs(instance).iter().map(|v| existing_vnfc(v, vnfd)));
        }
    }
    if let Some(flavour) = flavour {
        req.placement_constraints = placement(flavour, &req.add_resources);
    }
    Some(req)
}

/// One constraint per affinity rule over the COMPUTE resources it covers (when at least two).
fn placement(flavour: &Flavour, added: &[ResourceDefinition]) -> Vec<PlacementConstraint> {
    let mut out = Vec::new();
    for rule in &flavour.placement_rules {
        let refs: Vec<ConstraintResourceRef> = added
            .iter()
            .filter(|d| d.resource_type == ResourceDefinitionType::Compute)
            .filter(|d| d.vdu_id.as_ref().is_some_and(|v| rule.vdus.contains(v)))
            .map(|d| ConstraintResourceRef {
                id_type: "GRANT".into(),
                resource_id: d.id.clone(),
            })
            .collect();
        if refs.len() < 2 {
            continue;
        }
        out.push(PlacementConstraint {
            affinity_or_anti_affinity: match rule.kind {
                PlacementKind::Affinity => "AFFINITY".into(),
                PlacementKind::AntiAffinity => "ANTI_AFFINITY".into(),
            },
            scope: rule.scope.to_ascii_uppercase(),
            resource: refs,
            fallback_best_effort: None,
        });
    }
    out
}

/// Counts of resource definitions by kind (for logs and tests): `(add, remove, update)`.
pub fn summary(req: &GrantRequest) -> BTreeMap<&'static str, usize> {
    BTreeMap::from([
        ("add", req.add_resources.len()),
        ("remove", req.remove_resources.len()),
        ("update", req.update_resources.len()),
    ])
}
