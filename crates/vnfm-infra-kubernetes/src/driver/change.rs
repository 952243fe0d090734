//! Changes of what the instance is made of: a package change (and its rollback) and a
//! flavour change, each applying the new objects and pruning the ones no longer wanted.

use serde_json::{Map, Value, json};
use vnfm_driver_api::{InfraOutcome, InfraRequest, InfraStep};

use super::{
    Ctx, DriverState, KubernetesDriver, Snapshot, check, params_of, require_state, without_sources,
};
use crate::KubeError;
use crate::plan::{self, INSTANCE_LABEL, Planned, label_value};

impl KubernetesDriver {
    pub(super) async fn change_vnfpkg_inner(
        &self,
        req: &InfraRequest,
    ) -> Result<InfraOutcome, KubeError> {
        let InfraStep::ChangeVnfpkg { to_vnfd_id, .. } = &req.step else {
            return Err(KubeError::input(
                "change_vnfpkg was called with another step",
            ));
        };
        let ctx = self.connect(req)?;
        let mut state = require_state(req)?;
        if state.vnfd_id == to_vnfd_id.as_str() {
            // Already changed (a retried step).
            let resources = ctx.inventory(&state).await?;
            return Ok(ctx.outcome(resources, Some(&state)));
        }
        refuse_while_stopped(&state, "changing its package")?;
        let change_params = params_of(req);
        let change = self.changed_objects(&ctx, &state, &change_params).await?;
        let timeout = self.ready_timeout(&change.params);
        let mut desired = change.objects;
        ctx.resolve_scopes(&mut desired).await?;
        ctx.ownership(&desired).await?;
        let prune = not_in(&state.objects, &desired);
        ctx.apply(&mut desired, timeout, None).await?;
        ctx.delete(&prune, None, true, ctx.delete_timeout).await?;
        let previous = Snapshot {
            vnfd_id: state.vnfd_id.clone(),
            params: state.params.clone(),
            def_files: state.def_files.clone(),
            objects: state.objects.clone(),
        };
        state.previous = Some(Box::new(previous));
        state.objects = desired;
        state.params = change.params;
        state.def_files = change.def_files;
        state.vnfd_id = to_vnfd_id.to_string();
        let resources = ctx.inventory(&state).await?;
        Ok(ctx.outcome(resources, Some(&state)))
    }

    /// The objects after a package change. Manifests given for the change replace the objects
    /// they name (and the workloads of the VDUs they cover) and leave the others as they are.
    /// Without files of its own, the change renders what the instance was deployed from out
    /// of the new package: the manifest files recorded at instantiation (each must be in the
    /// new package: one that is not fails the step before anything is applied) and the chart;
    /// with neither recorded, the new VNFD's VDU-bound manifests. Those replace everything.
    async fn changed_objects(
        &self,
        ctx: &Ctx<'_>,
        state: &DriverState,
        change_params: &Map<String, Value>,
    ) -> Result<Changed, KubeError> {
        let mut params = state.params.clone();
        for (k, v) in change_params {
            params.insert(k.clone(), v.clone());
        }
        let given = plan::string_list(change_params, "lcm-kubernetes-def-files")?;
        if given.is_none() && !state.def_files.is_empty() {
            let missing: Vec<String> = state
                .def_files
                .iter()
                .filter_map(|f| {
                    ctx.req
                        .artifacts
                        .read(f)
                        .err()
                        .map(|e| format!("`{f}` ({e})"))
                })
                .collect();
            if !missing.is_empty() {
                return Err(KubeError::input(format!(
                    "the package change names no lcm-kubernetes-def-files, so the manifest files the instance was deployed from ({}) are read from the new package (VNFD {}), which lacks {}: add them to the package, or list the files to deploy in the change request's additionalParams.lcm-kubernetes-def-files; nothing was changed",
                    state.def_files.join(", "),
                    ctx.req.vnfd.descriptor_id,
                    missing.join(", ")
                )));
            }
            params.insert(
                "lcm-kubernetes-def-files".into(),
                json!(state.def_files.clone()),
            );
        }
        let input = ctx.render_input(
            params.clone(),
            &state.namespace,
            &state.release,
            state.counts.clone(),
        );
        let new = plan::render(&input, &*ctx.req.artifacts, self.helm.as_deref()).await?;
        let Some(given) = given else {
            return Ok(Changed {
                objects: new,
                params: without_sources(&params),
                def_files: state.def_files.clone(),
            });
        };
        let new_vdus: Vec<(&str, plan::Identity)> = new
            .iter()
            .filter_map(|p| p.vdu.as_deref().map(|v| (v, p.identity())))
            .collect();
        let mut out: Vec<Planned> = Vec::new();
        for old in &state.objects {
            if let Some(n) = new.iter().find(|n| n.identity() == old.identity()) {
                out.push(n.clone());
            } else if old.vdu.as_deref().is_some_and(|v| {
                new_vdus
                    .iter()
                    .any(|(nv, id)| *nv == v && *id != old.identity())
            }) {
                // The VDU's workload is replaced by one with another name.
            } else {
                out.push(old.clone());
            }
        }
        for n in &new {
            if !out.iter().any(|o| o.identity() == n.identity()) {
                out.push(n.clone());
            }
        }
        out.sort_by_key(|p| (p.stage, p.tier));
        // The files the objects now come from: the recorded ones that still contribute, then
        // the change's. An instance deployed from VDU-bound manifests keeps none recorded.
        let def_files = if state.def_files.is_empty() {
            Vec::new()
        } else {
            let mut files: Vec<String> = state
                .def_files
                .iter()
                .filter(|f| out.iter().any(|o| o.source == **f))
                .cloned()
                .collect();
            for f in given {
                if !files.contains(&f) {
                    files.push(f);
                }
            }
            files
        };
        Ok(Changed {
            objects: out,
            params: without_sources(&params),
            def_files,
        })
    }

    pub(super) async fn rollback_change_vnfpkg_inner(
        &self,
        req: &InfraRequest,
    ) -> Result<InfraOutcome, KubeError> {
        let InfraStep::RollbackChangeVnfpkg { restore_vnfd_id } = &req.step else {
            return Err(KubeError::input(
                "rollback_change_vnfpkg was called with another step",
            ));
        };
        let ctx = self.connect(req)?;
        let mut state = require_state(req)?;
        let (restore, current): (Vec<Planned>, Vec<Planned>) = if state.vnfd_id
            == restore_vnfd_id.as_str()
        {
            // The change never completed: what it may have applied is found by rendering it
            // again.
            let change_params = params_of(req);
            let attempted = match self.changed_objects(&ctx, &state, &change_params).await {
                Ok(c) => {
                    let mut o = c.objects;
                    ctx.resolve_scopes(&mut o).await?;
                    o
                }
                Err(e) => {
                    tracing::info!(error = %e, "the package change cannot be rendered; nothing of it was applied");
                    Vec::new()
                }
            };
            (state.objects.clone(), attempted)
        } else if let Some(prev) = state.previous.take() {
            let current = std::mem::take(&mut state.objects);
            state.vnfd_id = prev.vnfd_id;
            state.params = prev.params;
            state.def_files = prev.def_files;
            (prev.objects, current)
        } else {
            return Err(KubeError::input(format!(
                "the instance's objects come from VNFD {} and no earlier package is recorded: nothing to roll back to {restore_vnfd_id}",
                state.vnfd_id
            )));
        };
        let mut restore = restore;
        let timeout = self.ready_timeout(&state.params);
        ctx.apply(&mut restore, timeout, None).await?;
        // Only objects that are the instance's own are removed.
        let strays = not_in(&current, &restore);
        let mut ours = Vec::new();
        for s in strays {
            let owned = match ctx.cluster.get(&s).await {
                Ok(Some(live)) => live
                    .metadata
                    .labels
                    .unwrap_or_default()
                    .get(INSTANCE_LABEL)
                    .is_some_and(|v| *v == label_value(&ctx.instance_id)),
                _ => false,
            };
            if owned {
                ours.push(s);
            }
        }
        ctx.delete(&ours, None, true, ctx.delete_timeout).await?;
        state.objects = restore;
        let resources = ctx.inventory(&state).await?;
        Ok(ctx.outcome(resources, Some(&state)))
    }

    pub(super) async fn change_flavour_inner(
        &self,
        req: &InfraRequest,
    ) -> Result<InfraOutcome, KubeError> {
        let InfraStep::ChangeFlavour { target, .. } = &req.step else {
            return Err(KubeError::input(
                "change_flavour was called with another step",
            ));
        };
        let ctx = self.connect(req)?;
        let mut state = require_state(req)?;
        if state.flavour_id == target.flavour_id {
            // Already changed (a retried step).
            let resources = ctx.inventory(&state).await?;
            return Ok(ctx.outcome(resources, Some(&state)));
        }
        refuse_while_stopped(&state, "changing its flavour")?;
        let flavour = req.vnfd.flavour(&target.flavour_id).ok_or_else(|| {
            KubeError::input(format!(
                "the VNFD {} has no flavour `{}`",
                req.vnfd.descriptor_id, target.flavour_id
            ))
        })?;
        // The request's manifests, else the new flavour's VDU-bound ones; a chart recorded at
        // instantiation is rendered again with the new counts.
        let mut params = state.params.clone();
        for (k, v) in params_of(req) {
            params.insert(k, v);
        }
        let def_files = plan::string_list(&params, "lcm-kubernetes-def-files")?.unwrap_or_default();
        let input = ctx.render_input_for(
            Some(flavour),
            params.clone(),
            &state.namespace,
            &state.release,
            target.vdu_instances.clone(),
        );
        let mut desired = plan::render(&input, &*req.artifacts, self.helm.as_deref()).await?;
        check(&req.control, "change_flavour")?;
        ctx.resolve_scopes(&mut desired).await?;
        ctx.ownership(&desired).await?;
        let prune = not_in(&state.objects, &desired);
        ctx.apply(&mut desired, self.ready_timeout(&params), None)
            .await?;
        ctx.delete(&prune, None, true, ctx.delete_timeout).await?;
        state.objects = desired;
        state.params = without_sources(&params);
        state.def_files = def_files;
        state.counts = target.vdu_instances.clone();
        state.flavour_id = target.flavour_id.clone();
        // The objects before the change are another flavour's: no package rollback returns to
        // them.
        state.previous = None;
        state.warnings.clear();
        let resources = ctx.inventory(&state).await?;
        Ok(ctx.outcome(resources, Some(&state)))
    }
}

/// What a package change deploys.
struct Changed {
    /// The objects, in apply order.
    objects: Vec<Planned>,
    /// The parameters to record (without the operation's sources).
    params: Map<String, Value>,
    /// The manifest files to record.
    def_files: Vec<String>,
}

/// Refuses a change while the VNF is stopped: its rendering would start the workloads.
fn refuse_while_stopped(state: &DriverState, doing: &str) -> Result<(), KubeError> {
    if state.stopped.is_empty() {
        return Ok(());
    }
    Err(KubeError::input(format!(
        "the VNF is stopped ({} scaled to zero): start it (operate STARTED) before {doing}",
        state
            .stopped
            .iter()
            .map(|w| format!("{} {}/{}", w.kind, w.namespace, w.name))
            .collect::<Vec<_>>()
            .join(", ")
    )))
}

/// The objects of `from` that `to` does not have.
fn not_in(from: &[Planned], to: &[Planned]) -> Vec<Planned> {
    from.iter()
        .filter(|p| !p.request && !to.iter().any(|t| t.identity() == p.identity()))
        .cloned()
        .collect()
}
