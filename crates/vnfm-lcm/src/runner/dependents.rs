//! VNF instances that depend on a VIM another instance created.
//!
//! A lifecycle hook of instance A may build infrastructure (a Kubernetes cluster on A's VMs)
//! and register it as a VIM ([`vnfm_driver_api::VimRegistration`]); the VIM record names A as
//! its creator. Instance B *depends on* A when B uses such a VIM: its `vimConnectionInfo`
//! references it (or a resource handle names it), or the request of B's non-final occurrence
//! brings such a reference ([`vim_dependents`]). An instance is never its
//! own dependent.
//!
//! The guards, both checked before an occurrence exists and again once it holds its
//! instance's lock:
//! - TERMINATE of A is refused with [`LcmError::VimDependents`] while A has dependents, unless
//!   its request says `additionalParams.forceWithDependents: true`; a forced TERMINATE records
//!   the dependents it leaves in the occurrence's `warnings` (and the log). Deleting A's
//!   identifier is refused likewise (without a way to force it).
//! - A request that brings a new reference to a VIM whose creator is `NOT_INSTANTIATED`, is
//!   being terminated, or was deleted is refused with [`LcmError::VimCreatorUnavailable`].
//!
//! The two checks race-proof each other: TERMINATE records its intent (the occurrence) before
//! its second look for dependents, and an operation bringing a new reference records its
//! request (its occurrence) before its second look at the creator, so at least one of two
//! concurrent starts sees the other and is refused (possibly both): its occurrence, just
//! created, ends `ROLLED_BACK` at once with the same error (the only case where a refused
//! request leaves an occurrence behind). Requests for which neither can happen (a TERMINATE
//! of an instance that registered no VIM, a request that references no VIM another instance
//! registered) need no second look, and may be stored already begun.
//! References a hook adds (`vimConnectionInfoAdd`) are not checked against their creator's
//! state: a VIM deregistration that would strand them is refused by the registry instead
//! ([`LcmError::VimInUse`]), which fails the hook's step.

use vnfm_types::{
    InstantiationState, LcmOperationType, OperationParams, TerminateVnfRequest, VimConnectionInfo,
    VimId, VnfInstance, VnfInstanceId,
};

use std::collections::{BTreeMap, BTreeSet};

use vnfm_store::{LcmStore, OpOccQuery, StoreError};

use super::{Inner, store_err};
use crate::error::{DependentInstance, GuardedAction, LcmError, dependents_listing};
use crate::plan::OperationRequest;
use crate::state::{ALL_STATES, holds_instance};

/// The `additionalParams` member of a TerminateVnfRequest that forces a TERMINATE although
/// other instances use VIMs the instance's hooks registered.
pub const FORCE_WITH_DEPENDENTS: &str = "forceWithDependents";

/// Whether `req` asks to terminate despite dependents. A value other than a boolean is a 400.
pub(crate) fn forced(req: &TerminateVnfRequest) -> Result<bool, LcmError> {
    match req
        .additional_params
        .as_ref()
        .and_then(|p| p.get(FORCE_WITH_DEPENDENTS))
    {
        None | Some(serde_json::Value::Null) => Ok(false),
        Some(serde_json::Value::Bool(b)) => Ok(*b),
        Some(_) => Err(LcmError::invalid(
            format!("/additionalParams/{FORCE_WITH_DEPENDENTS}"),
            "must be a boolean (true terminates although other VNF instances use VIMs this instance's hooks registered)",
        )),
    }
}

/// Whether the stored request of an occurrence is a forced TERMINATE.
pub(crate) fn forced_params(params: &OperationParams) -> bool {
    matches!(params, OperationParams::Terminate(r) if forced(r).unwrap_or(false))
}

/// The instances other than `id` that use VIMs `id`'s hooks registered.
pub(crate) async fn dependents_of(
    inner: &Inner,
    id: &VnfInstanceId,
) -> Result<Vec<DependentInstance>, LcmError> {
    vim_dependents(inner.store.as_ref(), id)
        .await
        .map_err(store_err)
}

/// The instances other than `creator` that use a VIM `creator`'s hooks registered
/// ([`vnfm_store::VimRecord::created_by_instance`]): those whose `vimConnectionInfo` or
/// resources reference it ([`vnfm_store::VimStore::instances_using_vim`]), and those whose non-final
/// occurrence's request brings a `vimConnectionInfo` entry referencing it (named in
/// [`DependentInstance::vnf_lcm_op_occ_id`]). Ordered by instance id, then VIM id; empty when
/// `creator` registered no VIM (one indexed read).
///
/// The requests are read before the instances' references: a reference that moves from a
/// request into its instance while this runs (the occurrence began) is seen in one or the
/// other. Nothing here locks: a caller that must not race with new dependents records its own
/// intent first (a TERMINATE occurrence of `creator`), then calls this, while an operation
/// that brings a new reference starts its occurrence first and then checks that intent; one
/// of the two then sees the other.
pub async fn vim_dependents(
    store: &dyn LcmStore,
    creator: &VnfInstanceId,
) -> Result<Vec<DependentInstance>, StoreError> {
    let created: BTreeSet<VimId> = store
        .vims_created_by(creator)
        .await?
        .into_iter()
        .map(|(v, _)| v.id)
        .collect();
    if created.is_empty() {
        return Ok(Vec::new());
    }
    let mut found: BTreeMap<(VnfInstanceId, VimId), Option<String>> = BTreeMap::new();
    let mut query = OpOccQuery {
        states: Some(
            ALL_STATES
                .into_iter()
                .filter(|s| holds_instance(*s))
                .collect(),
        ),
        limit: Some(vnfm_store::MAX_PAGE_SIZE),
        ..OpOccQuery::default()
    };
    loop {
        let page = store.list_op_occs(&query).await?;
        for occ in &page.items {
            if &occ.vnf_instance_id == creator {
                continue;
            }
            // A stored request that no longer reads as its operation's request brings no
            // reference the core could act on.
            let Ok(params) = occ.typed_operation_params() else {
                continue;
            };
            let mut requested = Vec::new();
            super::vims::request_vim_ids(&params, &mut requested);
            for vim in requested {
                if created.contains(&vim) {
                    found
                        .entry((occ.vnf_instance_id.clone(), vim))
                        .or_insert_with(|| Some(occ.id.0.clone()));
                }
            }
        }
        match page.next {
            Some(next) => query.after = Some(next),
            None => break,
        }
    }
    for vim in &created {
        for instance in store.instances_using_vim(vim).await? {
            if &instance != creator {
                found.insert((instance, vim.clone()), None);
            }
        }
    }
    let mut names: BTreeMap<VnfInstanceId, Option<Option<String>>> = BTreeMap::new();
    let mut out = Vec::with_capacity(found.len());
    for ((instance_id, vim_id), op_occ) in found {
        if !names.contains_key(&instance_id) {
            let name = store
                .get_instance(&instance_id)
                .await?
                .map(|(i, _)| i.vnf_instance_name);
            names.insert(instance_id.clone(), name);
        }
        // An instance deleted meanwhile uses nothing.
        let Some(Some(name)) = names.get(&instance_id) else {
            continue;
        };
        out.push(DependentInstance {
            vnf_instance_id: instance_id.0,
            vnf_instance_name: name.clone(),
            vim_id: vim_id.0,
            vnf_lcm_op_occ_id: op_occ,
        });
    }
    Ok(out)
}

/// The refusal of `action` on `id` because of `dependents`.
pub(crate) fn refusal(
    id: &VnfInstanceId,
    action: GuardedAction,
    dependents: Vec<DependentInstance>,
) -> LcmError {
    LcmError::VimDependents {
        instance_id: id.to_string(),
        action,
        dependents,
    }
}

/// The `warnings` entry of a forced TERMINATE.
pub(crate) fn forced_warning(dependents: &[DependentInstance]) -> String {
    format!(
        "terminated with additionalParams.{FORCE_WITH_DEPENDENTS}: VIM(s) this instance's lifecycle hooks registered are still used by {}; those instances are left without them",
        dependents_listing(dependents)
    )
}

/// What the guards of this module found for a request they let through.
#[derive(Debug, Default)]
pub(crate) struct Guarded {
    /// The dependents a forced TERMINATE leaves (empty otherwise).
    pub(crate) left: Vec<DependentInstance>,
    /// Whether the request can race with another start (a TERMINATE of an instance that
    /// registered VIMs, or a request bringing a reference to a VIM another instance
    /// registered): its occurrence must then be recorded before the guards look again. An
    /// uncontested TERMINATE stays so only while its instance registers no VIM, which the
    /// write that records it checks ([`vnfm_store::StartCondition::no_vims_created`]); no
    /// other request becomes contested meanwhile, since a VIM's creator never changes.
    pub(crate) contested: bool,
    /// Whether the guard of a TERMINATE was not run ([`check_start_deferring`]): the write
    /// that records the occurrence begun checks that the instance registered no VIM
    /// ([`vnfm_store::StartCondition::no_vims_created`]), and when that write finds one (or
    /// anything else changed), the guard runs in full before the occurrence starts the
    /// ordinary way.
    pub(crate) deferred: bool,
}

/// The guards of this module for `req` on `instance`.
pub(crate) async fn check_start(
    inner: &Inner,
    instance: &VnfInstance,
    req: &OperationRequest,
) -> Result<Guarded, LcmError> {
    if let OperationRequest::Terminate(r) = req {
        let force = forced(r)?;
        let created = inner
            .store
            .vims_created_by(&instance.id)
            .await
            .map_err(store_err)?;
        if created.is_empty() {
            return Ok(Guarded::default());
        }
        let dependents = dependents_of(inner, &instance.id).await?;
        if dependents.is_empty() || force {
            return Ok(Guarded {
                left: dependents,
                contested: true,
                deferred: false,
            });
        }
        return Err(refusal(&instance.id, GuardedAction::Terminate, dependents));
    }
    let contested = check_new_references(inner, instance, req).await?;
    Ok(Guarded {
        left: Vec::new(),
        contested,
        deferred: false,
    })
}

/// [`check_start`] for a start that records its occurrence already begun, in one write that
/// checks the instance registered no VIM: a TERMINATE's guard (reading the VIMs the instance
/// registered, then their users) is left to that write's condition, and run in full only when
/// it does not hold ([`Guarded::deferred`]); the guards of other requests run as ever. An
/// instance that registered no VIM, the common case, is terminated without reading them.
pub(crate) async fn check_start_deferring(
    inner: &Inner,
    instance: &VnfInstance,
    req: &OperationRequest,
) -> Result<Guarded, LcmError> {
    if let OperationRequest::Terminate(r) = req {
        forced(r)?;
        return Ok(Guarded {
            deferred: true,
            ..Guarded::default()
        });
    }
    check_start(inner, instance, req).await
}

/// Refuses references `req` brings to VIMs whose creator is going away or gone; whether it
/// brings any reference to a VIM another instance registered.
async fn check_new_references(
    inner: &Inner,
    instance: &VnfInstance,
    req: &OperationRequest,
) -> Result<bool, LcmError> {
    let mut contested = false;
    let held: Vec<&VimId> = instance
        .vim_connection_info
        .iter()
        .flatten()
        .filter_map(|(_, v)| v.vim_id.as_ref())
        .collect();
    for (key, entry) in request_entries(req) {
        // Inline access information becomes a VIM of this instance (the vimId is not kept).
        if entry.access_info.as_ref().is_some_and(|a| !a.is_empty()) {
            continue;
        }
        let Some(vim_id) = &entry.vim_id else {
            continue;
        };
        if held.contains(&vim_id) {
            continue;
        }
        let Some((vim, _)) = inner.store.get_vim(vim_id).await.map_err(store_err)? else {
            continue;
        };
        let Some(creator) = vim.created_by_instance.filter(|c| *c != instance.id) else {
            continue;
        };
        contested = true;
        // A TERMINATE in progress is named even once its instance is NOT_INSTANTIATED (its
        // end hooks still run).
        let reason = match inner
            .store
            .get_instance(&creator)
            .await
            .map_err(store_err)?
        {
            None => Some("no longer exists".to_string()),
            Some((c, _)) => {
                let terminating = inner
                    .store
                    .active_op_occ(&creator)
                    .await
                    .map_err(store_err)?
                    .filter(|(o, _)| o.operation == LcmOperationType::Terminate);
                match terminating {
                    Some((o, _)) => Some(format!(
                        "is being terminated (operation occurrence {})",
                        o.id
                    )),
                    None if c.instantiation_state == InstantiationState::NotInstantiated => {
                        Some("is NOT_INSTANTIATED".to_string())
                    }
                    None => None,
                }
            }
        };
        if let Some(reason) = reason {
            return Err(LcmError::VimCreatorUnavailable {
                pointer: format!("/vimConnectionInfo/{}", pointer_token(&key)),
                vim_id: vim_id.to_string(),
                creator_id: creator.to_string(),
                reason,
            });
        }
    }
    Ok(contested)
}

/// The `vimConnectionInfo` entries a request brings (removals of a MODIFY_INFO bring none).
fn request_entries(req: &OperationRequest) -> Vec<(String, &VimConnectionInfo)> {
    req.vim_changes()
        .map(|c| {
            vnfm_types::vim_connections_set(c)
                .map(|(k, v)| (k.clone(), v))
                .collect()
        })
        .unwrap_or_default()
}

/// RFC 6901 escaping of one reference token, cut like every echoed request value.
fn pointer_token(k: &str) -> String {
    crate::error::echo(&k.replace('~', "~0").replace('/', "~1"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn terminate(extra: serde_json::Value) -> TerminateVnfRequest {
        serde_json::from_value(json!({"terminationType": "FORCEFUL", "additionalParams": extra}))
            .unwrap()
    }

    #[test]
    fn the_force_flag_is_a_boolean() {
        assert!(!forced(&terminate(json!({}))).unwrap());
        assert!(!forced(&terminate(json!({FORCE_WITH_DEPENDENTS: false}))).unwrap());
        assert!(forced(&terminate(json!({FORCE_WITH_DEPENDENTS: true}))).unwrap());
        let e = forced(&terminate(json!({FORCE_WITH_DEPENDENTS: "yes"}))).unwrap_err();
        assert_eq!(e.kind(), vnfm_types::ErrorKind::Invalid);
        assert!(
            e.to_string()
                .starts_with("/additionalParams/forceWithDependents: must be a boolean"),
            "{e}"
        );
        assert!(forced_params(&OperationParams::Terminate(terminate(
            json!({FORCE_WITH_DEPENDENTS: true})
        ))));
    }

    #[test]
    fn the_refusal_names_dependents_and_what_to_do() {
        let d = |i: &str, n: Option<&str>| DependentInstance {
            vnf_instance_id: i.into(),
            vnf_instance_name: n.map(str::to_owned),
            vim_id: "vim-1".into(),
            vnf_lcm_op_occ_id: None,
        };
        let e = refusal(
            &VnfInstanceId::new("a"),
            GuardedAction::Terminate,
            vec![d("b", Some("cnf-b")), d("c", None)],
        );
        assert_eq!(e.kind(), vnfm_types::ErrorKind::Conflict);
        assert_eq!(
            e.to_string(),
            "cannot terminate VNF instance a: VIM(s) its lifecycle hooks registered are still used by \
             VNF instance b (\"cnf-b\") on VIM vim-1, VNF instance c on VIM vim-1; terminate those \
             instances (or remove the VIM from their vimConnectionInfo) first, or terminate with \
             additionalParams.forceWithDependents = true to leave them without it"
        );
        let e = refusal(
            &VnfInstanceId::new("a"),
            GuardedAction::DeleteIdentifier,
            (0..20).map(|i| d(&format!("i{i}"), None)).collect(),
        );
        let msg = e.to_string();
        assert!(
            msg.starts_with("cannot delete the identifier of VNF instance a"),
            "{msg}"
        );
        assert!(msg.contains("i11 on VIM vim-1 and 8 more;"), "{msg}");
        assert!(!msg.contains("forceWithDependents"), "{msg}");
    }
}
