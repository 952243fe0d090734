//! The planner: from a validated request, the VNFD and the instance, the ordered steps of an
//! operation occurrence (pure: no I/O, no async).
//!
//! A [`Plan`] is a list of [`Step`]s: the `<op>_start` hook when the flavour binds one, the
//! infrastructure step carrying what the planner computed (target scale levels and instance
//! counts per VDU, the VNFCs to heal, ...), then the `<op>_end` hook. MODIFY_INFO has no
//! infrastructure step, only [`Step::ApplyModifications`]. The runner executes the steps in
//! order, journals each one, and on failure either resumes ([`remaining`]) or rolls back
//! ([`rollback_plan`]).
//!
//! Hook names follow the SOL001 `Vnflcm` interface: `instantiate`, `terminate`, `heal`,
//! `scale`, `scale_to_level`, `change_flavour`, `change_external_connectivity`,
//! `modify_information`, `change_current_package` and `operate`, each with `_start` / `_end`;
//! rollback plans are wrapped in `<op>_rollback_start` / `<op>_rollback_end` (a Tacker
//! extension) when the flavour binds them.

pub mod grant;
mod modify;
mod targets;

use std::collections::BTreeMap;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use vnfm_descriptor::{Flavour, Vnfd};
use vnfm_driver_api::{HealScope, HookArtifact, InfraStep, ResourceTarget};
use vnfm_types::{LcmOperationType, ScaleType, StopType, TerminationType, VnfInstance};

use crate::error::LcmError;
use crate::lookup;
pub use crate::request::{OperationRequest, hook_prefix};
use crate::validate::check_request;

pub use modify::{apply_modifications, merge_object};

/// Checks `op` against `vnfd` and `instance`: `Ok` exactly when [`plan`] would produce a
/// plan. `vnfd` is the instance's VNFD (for CHANGE_VNFPKG, the VNFD being changed to).
pub fn validate(
    op: &OperationRequest,
    vnfd: &Vnfd,
    instance: &VnfInstance,
) -> Result<(), LcmError> {
    plan(op, vnfd, instance).map(|_| ())
}

/// A hook to call: the `Vnflcm` operation and the artifact that implements it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookStep {
    /// The hook operation, e.g. `instantiate_start`.
    pub operation: String,
    /// The artifact bound to it.
    pub artifact: HookArtifact,
    /// The operation's `inputs`, verbatim.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub inputs: IndexMap<String, serde_json::Value>,
    /// The operation's timeout in seconds, when the VNFD gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<u64>,
}

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "camelCase")]
pub enum Step {
    /// Call a hook through the management driver.
    Hook(HookStep),
    /// Call the infrastructure driver.
    Infra(InfraStep),
    /// Apply the MODIFY_INFO request to the instance record ([`apply_modifications`]).
    ApplyModifications,
    /// Restore the instance record saved before [`Step::ApplyModifications`].
    RevertModifications,
}

impl Step {
    /// A stable name for the step journal: `hook:instantiate_start`, `infra:scale`,
    /// `info:apply_modifications`, `info:revert_modifications`.
    pub fn name(&self) -> String {
        match self {
            Step::Hook(h) => format!("hook:{}", h.operation),
            Step::Infra(i) => format!("infra:{}", i.operation().name()),
            Step::ApplyModifications => "info:apply_modifications".into(),
            Step::RevertModifications => "info:revert_modifications".into(),
        }
    }
}

/// Whether a plan moves the VNF forward or undoes a failed operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PlanKind {
    /// The operation itself.
    Forward,
    /// The rollback of a failed operation.
    Rollback,
}

/// The rollback hooks the flavour binds for the operation.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RollbackHooks {
    /// `<op>_rollback_start`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<HookStep>,
    /// `<op>_rollback_end`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<HookStep>,
}

/// The steps of an operation occurrence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// The operation.
    pub operation: LcmOperationType,
    /// Forward or rollback.
    pub kind: PlanKind,
    /// The flavour the operation runs in (the instance's; for INSTANTIATE the requested one),
    /// `None` for MODIFY_INFO on an instance that was never instantiated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flavour_id: Option<String>,
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// The hooks to wrap a rollback of this plan in.
    #[serde(default)]
    pub rollback_hooks: RollbackHooks,
}

impl Plan {
    /// The journal names of the steps, in order.
    pub fn step_names(&self) -> Vec<String> {
        self.steps.iter().map(Step::name).collect()
    }

    /// The infrastructure steps, in order.
    pub fn infra_steps(&self) -> impl Iterator<Item = &InfraStep> {
        self.steps.iter().filter_map(|s| match s {
            Step::Infra(i) => Some(i),
            _ => None,
        })
    }
}

/// The hook bound to `operation` in `flavour`, with its artifact resolved.
pub(crate) fn hook(flavour: &Flavour, operation: &str) -> Result<Option<HookStep>, LcmError> {
    let Some(h) = flavour.hook(operation) else {
        return Ok(None);
    };
    let missing = |artifact: &str| LcmError::HookArtifactMissing {
        operation: operation.to_string(),
        artifact: artifact.to_string(),
        flavour: flavour.id.clone(),
    };
    let a = flavour
        .artifact(None, &h.artifact)
        .ok_or_else(|| missing(&h.artifact))?;
    let dependencies = h
        .dependencies
        .iter()
        .map(|d| {
            flavour
                .artifact(None, d)
                .map(|a| a.file.clone())
                .ok_or_else(|| missing(d))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some(HookStep {
        operation: operation.to_string(),
        artifact: HookArtifact {
            name: a.name.clone(),
            file: a.file.clone(),
            artifact_type: a.artifact_type.clone(),
            sha256: a.sha256.clone(),
            external: a.external,
            dependencies,
        },
        inputs: h.inputs.clone(),
        timeout_seconds: h.timeout_seconds,
    }))
}

/// `[<prefix>_start?, body..., <prefix>_end?]`.
fn wrapped(
    prefix: &str,
    start_flavour: Option<&Flavour>,
    end_flavour: Option<&Flavour>,
    body: Vec<Step>,
) -> Result<Vec<Step>, LcmError> {
    let mut steps = Vec::with_capacity(body.len() + 2);
    if let Some(f) = start_flavour
        && let Some(h) = hook(f, &format!("{prefix}_start"))?
    {
        steps.push(Step::Hook(h));
    }
    steps.extend(body);
    if let Some(f) = end_flavour
        && let Some(h) = hook(f, &format!("{prefix}_end"))?
    {
        steps.push(Step::Hook(h));
    }
    Ok(steps)
}

fn rollback_hooks(prefix: &str, flavour: Option<&Flavour>) -> Result<RollbackHooks, LcmError> {
    let Some(f) = flavour else {
        return Ok(RollbackHooks::default());
    };
    Ok(RollbackHooks {
        start: hook(f, &format!("{prefix}_rollback_start"))?,
        end: hook(f, &format!("{prefix}_rollback_end"))?,
    })
}

/// Plans `op` on `instance`.
///
/// `vnfd` is the instance's VNFD, except for CHANGE_VNFPKG where it is the VNFD being changed
/// to (its hooks run the change, as in Tacker). The request is validated first
/// ([`validate`] runs exactly this function), so every error a client can
/// cause surfaces here, before an operation occurrence exists.
pub fn plan(op: &OperationRequest, vnfd: &Vnfd, instance: &VnfInstance) -> Result<Plan, LcmError> {
    check_request(op, vnfd, instance)?;
    let prefix = op.hook_prefix();
    let (flavour, body, end_flavour) = match op {
        OperationRequest::Instantiate(r) => {
            let flavour = lookup::flavour(vnfd, &r.flavour_id)?;
            let level = match r
                .instantiation_level_id
                .as_deref()
                .or(flavour.default_instantiation_level.as_deref())
            {
                Some(id) => Some(lookup::instantiation_level(flavour, id)?),
                None => None,
            };
            let target = targets::level_target(flavour, level)?;
            (
                Some(flavour),
                vec![Step::Infra(InfraStep::Instantiate { target })],
                Some(flavour),
            )
        }
        OperationRequest::Terminate(r) => {
            let flavour = lookup::instance_flavour(vnfd, instance, op)?;
            let graceful_timeout_seconds = match r.termination_type {
                TerminationType::Graceful => r.graceful_termination_timeout,
                TerminationType::Forceful => None,
            };
            let step = InfraStep::Terminate {
                termination_type: r.termination_type,
                graceful_timeout_seconds,
            };
            (Some(flavour), vec![Step::Infra(step)], Some(flavour))
        }
        OperationRequest::Heal(r) => {
            let flavour = lookup::instance_flavour(vnfd, instance, op)?;
            let scope = match &r.vnfc_instance_id {
                None => HealScope::WholeVnf,
                Some(ids) => HealScope::Vnfcs {
                    vnfcs: ids
                        .iter()
                        .enumerate()
                        .map(|(i, id)| {
                            lookup::resolve_vnfc(instance, id, &format!("/vnfcInstanceId/{i}"))
                        })
                        .collect::<Result<_, _>>()?,
                },
            };
            (
                Some(flavour),
                vec![Step::Infra(InfraStep::Heal { scope })],
                Some(flavour),
            )
        }
        OperationRequest::Scale(r) => {
            let flavour = lookup::instance_flavour(vnfd, instance, op)?;
            let aspect = lookup::aspect(flavour, &r.aspect_id)?;
            let from = targets::current_target(flavour, instance);
            let from_counts = targets::current_counts(flavour, instance);
            let current = from.scale_levels.get(&aspect.id).copied().unwrap_or(0);
            let new_level = lookup::scaled_level(aspect, current, r.scale_type, r.steps())?;
            let mut to_levels = from.scale_levels.clone();
            to_levels.insert(aspect.id.clone(), new_level);
            let target = targets::moved_target(
                flavour,
                None,
                &from.scale_levels,
                &from_counts,
                to_levels,
                &BTreeMap::new(),
            )?;
            let step = InfraStep::Scale {
                aspect_id: aspect.id.clone(),
                scale_type: r.scale_type,
                steps: r.steps(),
                from,
                target,
            };
            (Some(flavour), vec![Step::Infra(step)], Some(flavour))
        }
        OperationRequest::ScaleToLevel(r) => {
            let flavour = lookup::instance_flavour(vnfd, instance, op)?;
            let from = targets::current_target(flavour, instance);
            let from_counts = targets::current_counts(flavour, instance);
            let target = if let Some(id) = &r.instantiation_level_id {
                let level = lookup::instantiation_level(flavour, id)?;
                let to_levels = flavour
                    .scaling_aspects
                    .iter()
                    .map(|a| {
                        let l = level.scale_levels.get(&a.id).copied().unwrap_or(0);
                        (a.id.clone(), l)
                    })
                    .collect();
                targets::moved_target(
                    flavour,
                    Some(level.id.clone()),
                    &from.scale_levels,
                    &from_counts,
                    to_levels,
                    &level.vdu_instances,
                )?
            } else {
                let mut to_levels = from.scale_levels.clone();
                for info in r.scale_info.iter().flatten() {
                    to_levels.insert(info.aspect_id.clone(), info.scale_level);
                }
                targets::moved_target(
                    flavour,
                    None,
                    &from.scale_levels,
                    &from_counts,
                    to_levels,
                    &BTreeMap::new(),
                )?
            };
            let step = InfraStep::ScaleToLevel { from, target };
            (Some(flavour), vec![Step::Infra(step)], Some(flavour))
        }
        OperationRequest::ChangeFlavour(r) => {
            let flavour = lookup::instance_flavour(vnfd, instance, op)?;
            let new = lookup::flavour(vnfd, &r.new_flavour_id)?;
            let level = match r
                .instantiation_level_id
                .as_deref()
                .or(new.default_instantiation_level.as_deref())
            {
                Some(id) => Some(lookup::instantiation_level(new, id)?),
                None => None,
            };
            let from = targets::current_target(flavour, instance);
            let target = targets::level_target(new, level)?;
            let step = InfraStep::ChangeFlavour { from, target };
            // The end hook belongs to the flavour the VNF is in by then.
            (Some(flavour), vec![Step::Infra(step)], Some(new))
        }
        OperationRequest::Operate(r) => {
            let flavour = lookup::instance_flavour(vnfd, instance, op)?;
            let vnfc_resource_ids = r
                .vnfc_instance_id
                .iter()
                .flatten()
                .enumerate()
                .map(|(i, id)| {
                    lookup::resolve_vnfc(instance, id, &format!("/vnfcInstanceId/{i}"))
                        .map(|v| v.vnfc_resource_id)
                })
                .collect::<Result<_, _>>()?;
            let graceful = r.stop_type == Some(StopType::Graceful);
            let step = InfraStep::Operate {
                change_state_to: r.change_state_to,
                stop_type: r.stop_type,
                graceful_stop_timeout_seconds: r.graceful_stop_timeout.filter(|_| graceful),
                vnfc_resource_ids,
            };
            (Some(flavour), vec![Step::Infra(step)], Some(flavour))
        }
        OperationRequest::ChangeExtConn(r) => {
            let flavour = lookup::instance_flavour(vnfd, instance, op)?;
            let mut cpd_ids: Vec<String> = Vec::new();
            for cp in r.ext_virtual_links.iter().flat_map(|l| &l.ext_cps) {
                if !cpd_ids.contains(&cp.cpd_id) {
                    cpd_ids.push(cp.cpd_id.clone());
                }
            }
            let step = InfraStep::ChangeExtConn { cpd_ids };
            (Some(flavour), vec![Step::Infra(step)], Some(flavour))
        }
        OperationRequest::ModifyInfo(_) => {
            // Hooks need a flavour: an instance that was never instantiated has none.
            let flavour = instance
                .instantiated_vnf_info
                .as_ref()
                .and_then(|i| vnfd.flavour(&i.flavour_id));
            (flavour, vec![Step::ApplyModifications], flavour)
        }
        OperationRequest::ChangeVnfPkg(r) => {
            let flavour = lookup::instance_flavour(vnfd, instance, op)?;
            let step = InfraStep::ChangeVnfpkg {
                from_vnfd_id: instance.vnfd_id.clone(),
                to_vnfd_id: r.vnfd_id.clone(),
            };
            (Some(flavour), vec![Step::Infra(step)], Some(flavour))
        }
    };
    Ok(Plan {
        operation: op.operation_type(),
        kind: PlanKind::Forward,
        flavour_id: flavour.map(|f| f.id.clone()),
        steps: wrapped(prefix, flavour, end_flavour, body)?,
        rollback_hooks: rollback_hooks(prefix, flavour)?,
    })
}

/// The steps still to run when a failed occurrence is retried after `completed` steps finished:
/// the failed step runs again (steps are idempotent), then the rest.
pub fn remaining(plan: &Plan, completed: usize) -> &[Step] {
    plan.steps.get(completed..).unwrap_or(&[])
}

/// The plan that undoes a forward `plan` of which `completed` steps finished.
///
/// The inverse of each finished step, in reverse order, plus the inverse of the step that was
/// running when the occurrence failed if it was an infrastructure step (it may have created
/// resources before failing; drivers' rollbacks are idempotent). Hooks are not inverted. The
/// result is wrapped in the `<op>_rollback_start` / `<op>_rollback_end` hooks the flavour
/// binds; when there is nothing to undo the plan is empty (no hooks either).
///
/// TERMINATE, HEAL, OPERATE and CHANGE_FLAVOUR cannot be rolled back, nor can a scale that
/// removed VNFCs: the error says so, and SOL003 lets the VNFM answer 409.
pub fn rollback_plan(plan: &Plan, completed: usize) -> Result<Plan, LcmError> {
    if plan.kind == PlanKind::Rollback {
        return Err(LcmError::RollbackNotSupported {
            operation: plan.operation,
            reason: "the failed occurrence was already rolling back".into(),
        });
    }
    let refuse = |reason: &str| LcmError::RollbackNotSupported {
        operation: plan.operation,
        reason: reason.into(),
    };
    match plan.operation {
        LcmOperationType::Terminate => {
            return Err(refuse("resources of a terminated VNF are gone"));
        }
        LcmOperationType::Heal => {
            return Err(refuse(
                "healed VNFCs cannot be returned to their failed state",
            ));
        }
        LcmOperationType::Operate => {
            return Err(refuse(
                "operate the VNF again to return it to its previous state",
            ));
        }
        LcmOperationType::ChangeFlavour => {
            return Err(refuse("resources of the previous flavour are gone"));
        }
        LcmOperationType::CreateSnapshot | LcmOperationType::RevertToSnapshot => {
            return Err(LcmError::UnsupportedOperation {
                operation: plan.operation,
            });
        }
        _ => {}
    }
    let done = completed.min(plan.steps.len());
    let mut touched: Vec<&Step> = plan.steps[..done].iter().collect();
    if let Some(failed @ Step::Infra(_)) = plan.steps.get(done) {
        touched.push(failed);
    }
    let mut inverse = Vec::new();
    for step in touched.into_iter().rev() {
        match step {
            Step::Hook(_) => {}
            Step::ApplyModifications => inverse.push(Step::RevertModifications),
            Step::RevertModifications => {
                return Err(LcmError::inconsistent(
                    "a forward plan contains a revert step",
                ));
            }
            Step::Infra(i) => inverse.push(Step::Infra(invert(plan.operation, i)?)),
        }
    }
    let mut steps = Vec::with_capacity(inverse.len() + 2);
    if !inverse.is_empty() {
        steps.extend(plan.rollback_hooks.start.clone().map(Step::Hook));
        steps.extend(inverse);
        steps.extend(plan.rollback_hooks.end.clone().map(Step::Hook));
    }
    Ok(Plan {
        operation: plan.operation,
        kind: PlanKind::Rollback,
        flavour_id: plan.flavour_id.clone(),
        steps,
        rollback_hooks: RollbackHooks::default(),
    })
}

fn invert(operation: LcmOperationType, step: &InfraStep) -> Result<InfraStep, LcmError> {
    let refuse = |reason: &str| LcmError::RollbackNotSupported {
        operation,
        reason: reason.into(),
    };
    Ok(match step {
        InfraStep::Instantiate { .. } => InfraStep::RollbackInstantiate,
        InfraStep::Scale {
            scale_type: ScaleType::ScaleIn,
            ..
        } => return Err(refuse("scale-in removed VNFCs, and their state with them")),
        InfraStep::Scale { from, .. } => InfraStep::RollbackScale {
            restore: from.clone(),
        },
        InfraStep::ScaleToLevel { from, target } => {
            if removes_vnfcs(from, target) {
                return Err(refuse(
                    "scaling to that level removed VNFCs, and their state with them",
                ));
            }
            InfraStep::RollbackScale {
                restore: from.clone(),
            }
        }
        InfraStep::ChangeExtConn { .. } => InfraStep::RollbackChangeExtConn,
        InfraStep::ChangeVnfpkg { from_vnfd_id, .. } => InfraStep::RollbackChangeVnfpkg {
            restore_vnfd_id: from_vnfd_id.clone(),
        },
        other => {
            return Err(refuse(&format!(
                "its {} step has no inverse",
                other.operation().name()
            )));
        }
    })
}

fn removes_vnfcs(from: &ResourceTarget, to: &ResourceTarget) -> bool {
    from.vdu_instances
        .iter()
        .any(|(vdu, n)| to.instances_of(vdu) < *n)
}
