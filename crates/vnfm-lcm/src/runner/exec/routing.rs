//! Driver routing: which infrastructure driver (or split of drivers) and which VIMs an
//! occurrence runs with.

use super::*;

/// Resolves every entry of `map`, the VIM connections of instance `owner`, through the VIM
/// directory.
pub(crate) async fn resolve_vims(
    dir: Arc<dyn VimDirectory>,
    owner: &VnfInstanceId,
    map: IndexMap<String, VimConnectionInfo>,
) -> Result<Vec<ResolvedVim>, LcmError> {
    let mut out = Vec::with_capacity(map.len());
    for (k, v) in &map {
        out.push(dir.resolve(k, v, owner).await?);
    }
    Ok(out)
}

/// The infrastructure driver for the instance: the one serving the VIM its resources live on,
/// else the first of its VIM connections that a driver serves, else (no VIM connections) the
/// only registered driver.
pub(crate) fn select_driver(
    inner: &Inner,
    instance: &VnfInstance,
    vims: &IndexMap<String, VimConnectionInfo>,
) -> Result<Arc<dyn InfraDriver>, LcmError> {
    let in_use = instance
        .instantiated_vnf_info
        .as_ref()
        .and_then(|i| i.vnfc_resource_info.as_ref())
        .and_then(|v| {
            v.iter()
                .find_map(|r| r.compute_resource.vim_connection_id.clone())
        });
    if let Some(d) = in_use
        .and_then(|k| vims.get(&k))
        .and_then(|v| inner.infra.get(&v.vim_type))
    {
        return Ok(d.clone());
    }
    if let Some(d) = vims.values().find_map(|v| inner.infra.get(&v.vim_type)) {
        return Ok(d.clone());
    }
    if vims.is_empty() {
        let mut drivers = inner.infra.values();
        if let Some(first) = drivers.next()
            && drivers.all(|d| Arc::ptr_eq(d, first))
        {
            return Ok(first.clone());
        }
    }
    Err(LcmError::NoInfraDriver {
        vim_types: vims.values().map(|v| v.vim_type.clone()).collect(),
        known: inner.infra.keys().cloned().collect(),
    })
}

/// What [`select_infra`] chose.
pub(crate) enum SelectedInfra {
    /// One driver.
    One(Arc<dyn InfraDriver>),
    /// A mixed VNF's split over several.
    Split(crate::mixed::SplitByVim),
}

impl SelectedInfra {
    /// The driver to call; a split reads its step's progress and hands the new one to
    /// `progress` (none when the step is not run, e.g. in a preview).
    pub(crate) fn driver(
        self,
        progress: Option<crate::mixed::PartsProgress>,
    ) -> Arc<dyn InfraDriver> {
        match (self, progress) {
            (SelectedInfra::One(d), _) => d,
            (SelectedInfra::Split(s), Some(p)) => Arc::new(s.with_progress(p)),
            (SelectedInfra::Split(s), None) => Arc::new(s),
        }
    }
}

impl SelectedInfra {
    /// Asks the driver, or each driver of a split, whether it can carry out `request`, whose
    /// first infrastructure step is `step` ([`InfraDriver::check_request`]), before anything
    /// of the operation is stored.
    pub(crate) fn check_request(
        &self,
        step: &InfraStep,
        request: &OperationParams,
    ) -> Result<(), LcmError> {
        let drivers: Vec<&Arc<dyn InfraDriver>> = match self {
            SelectedInfra::One(d) => vec![d],
            SelectedInfra::Split(s) => s.parts().iter().map(|p| &p.driver).collect(),
        };
        for d in drivers {
            d.check_request(step, request)
                .map_err(|source| LcmError::RefusedByDriver {
                    driver: d.name().to_string(),
                    message: match &source {
                        DriverError::InvalidInput { message } => message.clone(),
                        other => other.to_string(),
                    },
                    source: crate::error::Cause::new(source),
                })?;
        }
        Ok(())
    }
}

/// The infrastructure driver of a step in flavour `flavour_id` of `vnfd`: a
/// [`SplitByVim`](crate::mixed::SplitByVim) over the drivers of the instance's VIMs when the
/// flavour's VDUs map to VIMs of different drivers (a mixed VNF, see [`crate::mixed`]), else
/// [`select_driver`]. Whether an instance is mixed is decided when it is instantiated: an
/// instantiated instance without a recorded split state keeps its one driver. A mixed
/// instance whose recorded VIMs the step's mapping no longer covers (a change of flavour or
/// package that moves VDUs to other VIMs) is refused.
pub(crate) fn select_infra(
    inner: &Inner,
    instance: &VnfInstance,
    vims: &IndexMap<String, VimConnectionInfo>,
    vnfd: &vnfm_descriptor::Vnfd,
    flavour_id: Option<&str>,
    request: &OperationParams,
    step: Option<&InfraStep>,
) -> Result<SelectedInfra, LcmError> {
    use crate::mixed::{SplitByVim, SplitState, explicit_mapping};
    let state = apply::driver_state(instance);
    let recorded = SplitState::of(&state);
    // An instance instantiated on one driver stays on it, whatever VIMs it gains later.
    if recorded.is_none() && instance.instantiation_state == InstantiationState::Instantiated {
        return select_driver(inner, instance, vims).map(SelectedInfra::One);
    }
    let split = match flavour_id {
        Some(f) => SplitByVim::resolve(
            vnfd,
            f,
            vims,
            &inner.infra,
            explicit_mapping(request, &state),
        )?,
        None => None,
    };
    if let Some(r) = &recorded {
        let keys: std::collections::BTreeSet<&str> = split
            .iter()
            .flat_map(|s| s.parts().iter().map(|p| p.key.as_str()))
            .collect();
        let had: std::collections::BTreeSet<&str> = r.by_vim.keys().map(String::as_str).collect();
        let moves = matches!(
            step,
            Some(InfraStep::ChangeFlavour { .. } | InfraStep::ChangeVnfpkg { .. })
        );
        if split.is_none() || !had.is_subset(&keys) || (moves && had != keys) {
            let pointer = match step {
                Some(InfraStep::ChangeVnfpkg { .. }) => "/vnfdId",
                Some(InfraStep::ChangeFlavour { .. }) => "/newFlavourId",
                _ => "",
            };
            let list =
                |s: std::collections::BTreeSet<&str>| s.into_iter().collect::<Vec<_>>().join(", ");
            return Err(LcmError::Unprocessable {
                pointer: pointer.into(),
                message: format!(
                    "moving the VDUs of a mixed VNF to other VIMs is not supported: the instance has resources on VIM connections {} (through different drivers), but the operation would run its VDUs on {}",
                    list(had),
                    if keys.is_empty() {
                        "a single driver".to_string()
                    } else {
                        list(keys)
                    }
                ),
            });
        }
    }
    let Some(split) = split else {
        return select_driver(inner, instance, vims).map(SelectedInfra::One);
    };
    Ok(SelectedInfra::Split(split))
}

/// Refuses a plan whose hooks cannot run before anything is created: a hook with no
/// management driver configured, and for INSTANTIATE a hook whose artifact the management
/// driver says it cannot run (the onboarding warning `package.hook-not-runnable`), which would
/// otherwise fail only when the operation reaches it.
pub(crate) fn check_hooks(inner: &Inner, plan: &Plan) -> Result<(), LcmError> {
    let mut hooks = plan.steps.iter().filter_map(|s| match s {
        Step::Hook(h) => Some(h),
        _ => None,
    });
    let Some(mgmt) = &inner.mgmt else {
        return match hooks.next() {
            Some(h) => Err(LcmError::NoMgmtDriver {
                hook: h.operation.clone(),
            }),
            None => Ok(()),
        };
    };
    if plan.operation != LcmOperationType::Instantiate {
        return Ok(());
    }
    for h in hooks {
        if let Some(reason) = mgmt.cannot_run(&h.artifact) {
            return Err(LcmError::HookNotRunnable {
                hook: h.operation.clone(),
                flavour: plan.flavour_id.clone().unwrap_or_default(),
                artifact: h.artifact.name.clone(),
                reason,
            });
        }
    }
    Ok(())
}
