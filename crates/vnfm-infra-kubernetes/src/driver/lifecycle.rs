//! Instantiate, terminate (and the rollback of a failed instantiation), scale and heal.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use vnfm_driver_api::{HealScope, InfraOutcome, InfraRequest, InfraStep, InstanceResources};
use vnfm_types::{OperationParams, TerminationType};

use super::{
    Ctx, DriverState, KubernetesDriver, check, load_state, params_of, reference, release_for,
    require_state, without_sources,
};
use crate::KubeError;
use crate::asd::placement_check;
use crate::plan::{
    self, INSTANCE_LABEL, PERSISTENT_LABEL, Planned, USER_ANNOTATION_PREFIX, asd_of, label_value,
};
use crate::ready::{wait_gone, wait_ready};

impl KubernetesDriver {
    pub(super) async fn instantiate_inner(
        &self,
        req: &InfraRequest,
    ) -> Result<InfraOutcome, KubeError> {
        let InfraStep::Instantiate { target } = &req.step else {
            return Err(KubeError::input("instantiate was called with another step"));
        };
        let ctx = self.connect(req)?;
        let params = params_of(req);
        let namespace = self.namespace_for(&ctx, &params).await?;
        let release = release_for(&params, &ctx.instance_id);
        let input = ctx.render_input(
            params.clone(),
            &namespace,
            &release,
            target.vdu_instances.clone(),
        );
        let mut objects = plan::render(&input, &*req.artifacts, self.helm.as_deref()).await?;
        check(&req.control, "instantiate")?;
        ctx.resolve_scopes(&mut objects).await?;
        crate::requests::place_bound_pods(&mut objects);
        let mut warnings = Vec::new();
        if let Some(asd) = asd_of(&req.vnfd)?
            && let Some(caps) = &asd.enhanced_cluster_capabilities
        {
            warnings = placement_check(&ctx.cluster, ctx.vim, caps, &objects).await?;
        }
        ctx.ownership(&objects).await?;
        let namespace_created = ctx.ensure_namespace(&namespace).await?;
        ctx.apply(
            &mut objects,
            self.ready_timeout(&params),
            Some(&mut warnings),
        )
        .await?;
        let state = DriverState {
            version: 1,
            namespace,
            namespace_created,
            vnfd_id: req.vnfd.descriptor_id.clone(),
            flavour_id: req.flavour_id.clone(),
            release,
            def_files: plan::string_list(&params, "lcm-kubernetes-def-files")?.unwrap_or_default(),
            params: without_sources(&params),
            counts: target.vdu_instances.clone(),
            objects,
            stopped: Vec::new(),
            previous: None,
            warnings,
        };
        let resources = ctx.inventory(&state).await?;
        Ok(ctx.outcome(resources, Some(&state)))
    }

    pub(super) async fn terminate_inner(
        &self,
        req: &InfraRequest,
    ) -> Result<InfraOutcome, KubeError> {
        let grace = match &req.step {
            InfraStep::Terminate {
                termination_type: TerminationType::Forceful,
                ..
            } => Some(0),
            InfraStep::Terminate {
                graceful_timeout_seconds,
                ..
            } => *graceful_timeout_seconds,
            _ => return Err(KubeError::input("terminate was called with another step")),
        };
        let ctx = self.connect(req)?;
        let Some(state) = load_state(req)? else {
            return Ok(ctx.outcome(InstanceResources::default(), None));
        };
        let params = params_of(req);
        let keep = !params
            .get("deletePersistentVolumes")
            .is_some_and(|v| v == &Value::Bool(true));
        self.remove_all(&ctx, &state, grace, keep).await?;
        Ok(ctx.outcome(InstanceResources::default(), None))
    }

    /// Deletes everything the instance has: its objects and the PVCs its StatefulSets made
    /// (which outlive them), in the deletion order, then the namespace when the driver created
    /// it and nothing persistent stays in it.
    async fn remove_all(
        &self,
        ctx: &Ctx<'_>,
        state: &DriverState,
        grace: Option<u32>,
        keep_persistent: bool,
    ) -> Result<(), KubeError> {
        let mut objects = state.objects.clone();
        // Claims made from volumeClaimTemplates carry the instance label.
        let selector = format!("{INSTANCE_LABEL}={}", label_value(&ctx.instance_id));
        let pvc_kind = ctx.cluster.core("PersistentVolumeClaim").await?;
        for c in ctx
            .cluster
            .list(&pvc_kind, Some(&state.namespace), &selector)
            .await?
        {
            let name = c.metadata.name.clone().unwrap_or_default();
            let mut claim = reference("v1", "PersistentVolumeClaim", Some(&state.namespace), &name);
            claim.persistent = c
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(PERSISTENT_LABEL))
                .is_some_and(|v| v == "true");
            if !objects.iter().any(|o| o.identity() == claim.identity()) {
                objects.push(claim);
            }
        }
        // Namespaces go last, all at once: the namespace controller takes seconds to empty
        // each, so the package's own Namespace objects and the instance's namespace are
        // deleted together and waited for once.
        let (mut namespaces, objects): (Vec<Planned>, Vec<Planned>) = objects
            .into_iter()
            .partition(|p| p.group().is_empty() && p.kind() == "Namespace" && !p.request);
        let kept = ctx
            .delete(&objects, grace, keep_persistent, ctx.delete_timeout)
            .await?;
        if state.namespace_created
            && kept.is_empty()
            && !namespaces.iter().any(|n| n.name() == state.namespace)
        {
            // First, as it was applied first: deleted in the exact reverse order.
            namespaces.insert(0, reference("v1", "Namespace", None, &state.namespace));
        }
        for n in &mut namespaces {
            // One deletion step (see `Ctx::delete`).
            n.stage = 0;
        }
        ctx.delete(&namespaces, grace, keep_persistent, ctx.delete_timeout)
            .await?;
        Ok(())
    }

    pub(super) async fn scale_inner(&self, req: &InfraRequest) -> Result<InfraOutcome, KubeError> {
        let target = match &req.step {
            InfraStep::Scale { target, .. }
            | InfraStep::ScaleToLevel { target, .. }
            | InfraStep::RollbackScale { restore: target } => target,
            _ => return Err(KubeError::input("scale was called with another step")),
        };
        let ctx = self.connect(req)?;
        let mut state = require_state(req)?;
        // The VDUs of the scaled aspect must be scalable; other VDUs whose planned count
        // changes but that run as DaemonSets or bare pods keep what they have.
        let aspect_vdus: Vec<String> = match &req.step {
            InfraStep::Scale { aspect_id, .. } => req
                .flavour()
                .ok()
                .and_then(|f| f.scaling_aspect(aspect_id))
                .map(|a| a.vdu_deltas.keys().cloned().collect())
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        let mut changed: Vec<usize> = Vec::new();
        for (vdu, count) in &target.vdu_instances {
            if state.counts.get(vdu) == Some(count) && !aspect_vdus.contains(vdu) {
                continue;
            }
            match plan::scale_vdu(&mut state.objects, vdu, *count) {
                Ok(idx) => changed.extend(idx),
                Err(e) if !aspect_vdus.contains(vdu) => {
                    tracing::debug!(vdu = %vdu, error = %e, "VDU not scaled");
                }
                Err(e) => return Err(e),
            }
        }
        changed.sort();
        changed.dedup();
        // A stopped workload stays at zero: its new count is what a start restores.
        changed.retain(|&i| {
            let p = &mut state.objects[i];
            let Some(w) = state.stopped.iter_mut().find(|w| w.is(p)) else {
                return true;
            };
            if let Some(n) = p.object.pointer("/spec/replicas").and_then(Value::as_u64) {
                w.replicas = u32::try_from(n).unwrap_or(u32::MAX);
            }
            p.object["spec"]["replicas"] = json!(0);
            false
        });
        let timeout = self.ready_timeout(&state.params);
        for &i in &changed {
            check(&req.control, "scaling")?;
            ctx.cluster.apply(&state.objects[i]).await?;
        }
        let touched: Vec<Planned> = changed.iter().map(|&i| state.objects[i].clone()).collect();
        wait_ready(
            &ctx.cluster,
            &touched,
            &ctx.instance_id,
            timeout,
            &req.control,
        )
        .await?;
        state.counts = target.vdu_instances.clone();
        let resources = ctx.inventory(&state).await?;
        Ok(ctx.outcome(resources, Some(&state)))
    }

    pub(super) async fn heal_inner(&self, req: &InfraRequest) -> Result<InfraOutcome, KubeError> {
        let InfraStep::Heal { scope } = &req.step else {
            return Err(KubeError::input("heal was called with another step"));
        };
        let ctx = self.connect(req)?;
        let mut state = require_state(req)?;
        let timeout = self.ready_timeout(&state.params);
        let current = ctx.inventory(&state).await?;
        let params = params_of(req);
        let grace = params
            .get("gracePeriodSeconds")
            .and_then(Value::as_u64)
            .map(|g| g.min(u64::from(u32::MAX)) as u32);
        let pods: Vec<(String, String)> = match scope {
            HealScope::WholeVnf => current
                .vnfc_resource_info
                .iter()
                .map(|v| (v.id.clone(), v.vdu_id.clone()))
                .collect(),
            HealScope::Vnfcs { vnfcs } => {
                let mut out = Vec::new();
                for v in vnfcs {
                    let found = current.vnfc_resource_info.iter().find(|r| {
                        r.id == v.vnfc_resource_id
                            || r.compute_resource.resource_id == v.vnfc_resource_id
                    });
                    match found {
                        Some(r) => {
                            out.push((r.compute_resource.resource_id.clone(), r.vdu_id.clone()))
                        }
                        // Already replaced by an earlier attempt of this step: its VDU is
                        // still checked below.
                        None => {
                            tracing::info!(vnfc = %v.vnfc_resource_id, "VNFC to heal is already gone")
                        }
                    }
                }
                out
            }
        };
        let mut gone = Vec::new();
        for (pod, _) in &pods {
            check(&req.control, "healing")?;
            if let Some(uid) = ctx.cluster.delete_pod(&state.namespace, pod, grace).await? {
                gone.push((reference("v1", "Pod", Some(&state.namespace), pod), uid));
            }
        }
        wait_gone(&ctx.cluster, &gone, ctx.delete_timeout, &req.control).await?;
        // Bare pods come back by being applied again; controllers replace the others.
        let vdus: Vec<&str> = match scope {
            HealScope::WholeVnf => Vec::new(),
            HealScope::Vnfcs { vnfcs } => vnfcs.iter().map(|v| v.vdu_id.as_str()).collect(),
        };
        let affected: Vec<usize> = (0..state.objects.len())
            .filter(|&i| {
                let p = &state.objects[i];
                matches!(scope, HealScope::WholeVnf)
                    || p.vdu.as_deref().is_some_and(|v| vdus.contains(&v))
            })
            .collect();
        for &i in &affected {
            let p = &state.objects[i];
            let bare_pod = p.kind() == "Pod" && p.group().is_empty();
            if bare_pod || matches!(scope, HealScope::WholeVnf) {
                ctx.apply_one(p).await?;
            }
        }
        let targets: Vec<Planned> = affected.iter().map(|&i| state.objects[i].clone()).collect();
        wait_ready(
            &ctx.cluster,
            &targets,
            &ctx.instance_id,
            timeout,
            &req.control,
        )
        .await?;
        state.warnings.clear();
        let resources = ctx.inventory(&state).await?;
        // The changes are the heal's own: counted from what ran when it started, not from
        // what an earlier step recorded.
        Ok(ctx.outcome_since(&current, resources, Some(&state)))
    }

    pub(super) async fn rollback_instantiate_inner(
        &self,
        req: &InfraRequest,
    ) -> Result<InfraOutcome, KubeError> {
        let ctx = self.connect(req)?;
        if let Some(state) = load_state(req)? {
            self.remove_all(&ctx, &state, Some(0), true).await?;
            return Ok(ctx.outcome(InstanceResources::default(), None));
        }
        // Nothing was recorded: the instantiation failed midway. Work out what it would have
        // created and delete whatever of it exists and is the instance's own.
        let params = match &req.request {
            OperationParams::Instantiate(r) => r.additional_params.clone().unwrap_or_default(),
            _ => params_of(req),
        };
        let namespace = match self.namespace_for(&ctx, &params).await {
            Ok(ns) => ns,
            Err(e) => {
                // The namespace is chosen before anything is applied, so nothing can exist.
                tracing::info!(error = %e, "the instantiation has no namespace; nothing of it was applied");
                return Ok(ctx.outcome(InstanceResources::default(), None));
            }
        };
        let release = release_for(&params, &ctx.instance_id);
        let input = ctx.render_input(params.clone(), &namespace, &release, BTreeMap::new());
        let mut objects = match plan::render(&input, &*req.artifacts, self.helm.as_deref()).await {
            Ok(o) => o,
            Err(e) => {
                // Rendering fails before anything is applied, so nothing can exist.
                tracing::info!(error = %e, "the instantiation cannot be rendered; nothing of it was applied");
                Vec::new()
            }
        };
        ctx.resolve_scopes(&mut objects).await?;
        let ours = label_value(&ctx.instance_id);
        let mut owned = Vec::new();
        for p in objects.iter().filter(|p| !p.request) {
            let live = match ctx.cluster.get(p).await {
                Ok(l) => l,
                Err(KubeError::UnknownKind { .. }) => None,
                Err(e) => return Err(e),
            };
            if let Some(live) = live {
                let labels = live.metadata.labels.unwrap_or_default();
                let mine = labels.get(INSTANCE_LABEL) == Some(&ours);
                let shared_user = p.shared
                    && live
                        .metadata
                        .annotations
                        .unwrap_or_default()
                        .contains_key(&format!("{USER_ANNOTATION_PREFIX}{ours}"));
                if mine || shared_user {
                    owned.push(p.clone());
                }
            }
        }
        let namespace_created = match ctx
            .cluster
            .get(&reference("v1", "Namespace", None, &namespace))
            .await?
        {
            Some(live) => {
                live.metadata.labels.unwrap_or_default().get(INSTANCE_LABEL) == Some(&ours)
            }
            None => false,
        };
        let state = DriverState {
            version: 1,
            namespace,
            namespace_created,
            objects: owned,
            ..DriverState::default()
        };
        self.remove_all(&ctx, &state, Some(0), true).await?;
        Ok(ctx.outcome(InstanceResources::default(), None))
    }
}
