//! Running one step: calling the hook or the driver within its budget and under cancellation,
//! and what its outcome does to the occurrence and the instance.

use super::*;

impl Run {
    /// Runs one step; `Err(problem)` when it failed.
    pub(super) async fn step(
        &mut self,
        step: &Step,
        i: usize,
        n: usize,
    ) -> Result<StepResult, Stop> {
        let name = step.name();
        match step {
            Step::ApplyModifications => Ok(self
                .apply_modifications()
                .await
                .map_err(|e| lcm_problem(&name, i, n, &e, &[]))),
            Step::RevertModifications => {
                let mut occ = self.occ.clone();
                occ.changed_info = None;
                let mut before = self.ctx.before.clone();
                before.id = self.instance.id.clone();
                Ok(Ok((occ, Some(before))))
            }
            Step::Infra(s) => {
                // First, so the grant's additions are part of the request the driver is
                // chosen with and of the instance's VIM connections.
                let grant = match self.granted().await {
                    Ok(g) => g,
                    Err(e) => return Ok(Err(lcm_problem(&name, i, n, &e, &[]))),
                };
                self.ensure_operation_vims().await?;
                let vims = match self.vims().await {
                    Ok(v) => v,
                    Err(e) => return Ok(Err(lcm_problem(&name, i, n, &e, &[]))),
                };
                let map = self
                    .instance
                    .vim_connection_info
                    .clone()
                    .unwrap_or_default();
                let flavour_id = s
                    .target()
                    .map(|t| t.flavour_id.clone())
                    .or_else(|| self.flavour_id())
                    .unwrap_or_default();
                let parts = crate::mixed::PartsProgress::new(self.inner.store.clone());
                let driver = match select_infra(
                    &self.inner,
                    &self.instance,
                    &map,
                    &self.ctx.vnfd.vnfd,
                    Some(&flavour_id),
                    &self.request,
                    Some(s),
                ) {
                    Ok(d) => d.driver(Some(parts.clone())),
                    Err(e) => return Ok(Err(lcm_problem(&name, i, n, &e, &vims))),
                };
                let restored_package = match self.restored_package(s).await {
                    Ok(p) => p.map(|p| TargetPackage {
                        vnfd: p.vnfd,
                        files: p.files,
                    }),
                    Err(e) => return Ok(Err(lcm_problem(&name, i, n, &e, &vims))),
                };
                let budget = self.budget(step);
                let req = InfraRequest {
                    op_occ_id: self.occ.id.clone(),
                    operation: self.occ.operation,
                    step: s.clone(),
                    request: self.request.clone(),
                    instance: self.instance.clone(),
                    vnfd: self.ctx.vnfd.vnfd.clone(),
                    flavour_id,
                    vims: vims.clone(),
                    artifacts: self.ctx.vnfd.files.clone(),
                    driver_state: apply::driver_state(&self.instance),
                    grant,
                    // As hooks get it: Tacker's user data classes read it.
                    grant_request: self.grant_request.clone(),
                    restored_package,
                    control: RunControl::new(budget, self.flag.clone()),
                };
                let fut: StepFuture<InfraOutcome> = Box::pin(panics::caught(&name, async move {
                    vnfm_driver_api::execute(&*driver, &req).await
                }));
                let result = self.drive(fut, budget, &name).await?;
                // What the parts of a mixed VNF did, written with the end of this step.
                if let Some(v) = parts.take() {
                    self.unsaved_data
                        .push((crate::mixed::PROGRESS_KEY.to_owned(), v));
                }
                Ok(match result {
                    Ok(out) => {
                        // A package change's coordination scripts, before the step is recorded.
                        let (occ, instance) = self.after_infra(s, out);
                        let after = instance.clone().unwrap_or_else(|| self.instance.clone());
                        self.coordinate(s, &after, &vims, (&name, i, n))
                            .await?
                            .map(|()| (occ, instance))
                    }
                    Err(e) => {
                        Err(self.driver_problem(&name, i, n, e, DriverLayer::Infrastructure, &vims))
                    }
                })
            }
            Step::Hook(h) => {
                let Some(mgmt) = self.inner.mgmt.clone() else {
                    let e = LcmError::NoMgmtDriver {
                        hook: h.operation.clone(),
                    };
                    return Ok(Err(lcm_problem(&name, i, n, &e, &[])));
                };
                self.ensure_operation_vims().await?;
                let vims = match self.vims().await {
                    Ok(v) => v,
                    Err(e) => return Ok(Err(lcm_problem(&name, i, n, &e, &[]))),
                };
                let data = match self
                    .inner
                    .store
                    .get_op_occ_data(&self.occ.id, HOOK_DATA_KEY)
                    .await
                {
                    Ok(v) => v.unwrap_or(serde_json::Value::Null),
                    Err(e) => return Ok(Err(lcm_problem(&name, i, n, &store_err(e), &vims))),
                };
                let new_package = match self.new_package_for(&h.operation).await {
                    Ok(p) => p,
                    Err(e) => return Ok(Err(lcm_problem(&name, i, n, &e, &vims))),
                };
                let budget = self.budget(step);
                let call = HookCall {
                    op_occ_id: self.occ.id.clone(),
                    lcm_operation: self.occ.operation,
                    operation: h.operation.clone(),
                    artifact: h.artifact.clone(),
                    inputs: h.inputs.clone(),
                    request: serde_json::Value::Object(
                        self.occ.operation_params.clone().unwrap_or_default(),
                    ),
                    instance: serde_json::to_value(&self.instance)
                        .unwrap_or(serde_json::Value::Null),
                    vnfd: self.ctx.vnfd.vnfd.clone(),
                    flavour_id: self.flavour_id(),
                    vims: vims.clone(),
                    artifacts: self.ctx.vnfd.files.clone(),
                    control: RunControl::new(budget, self.flag.clone()),
                    error_handling_data: data,
                    grant_request: self.grant_request.clone(),
                    grant: self.grant.clone(),
                    new_package,
                };
                // The management driver records `hook.kind` (it knows whether a plugin or a
                // script runs) and passes the span's trace context on to the hook.
                let span = tracing::info_span!(
                    "lcm.hook",
                    hook = %h.operation,
                    hook.kind = tracing::field::Empty,
                );
                let fut: StepFuture<HookOutcome> = Box::pin(panics::caught(
                    &name,
                    async move { mgmt.call(&call).await }.instrument(span),
                ));
                Ok(match self.drive(fut, budget, &name).await? {
                    Ok(out) => self
                        .after_hook(out)
                        .await?
                        .map_err(|e| lcm_problem(&name, i, n, &e, &vims)),
                    Err(e) => {
                        Err(self.driver_problem(&name, i, n, e, DriverLayer::Management, &vims))
                    }
                })
            }
        }
    }

    /// The package a MODIFY_INFO that changes `vnfdId` moves the instance to, for its
    /// `modify_information_end` hook (as Tacker gives that hook `new_csar_dir`).
    async fn new_package_for(&self, hook: &str) -> Result<Option<TargetPackage>, LcmError> {
        if self.occ.operation != LcmOperationType::ModifyInfo || hook != "modify_information_end" {
            return Ok(None);
        }
        let Some(new_id) = self
            .occ
            .operation_params
            .as_ref()
            .and_then(|p| p.get("vnfdId"))
            .and_then(|v| v.as_str())
            .filter(|id| *id != self.ctx.vnfd.vnfd.descriptor_id)
        else {
            return Ok(None);
        };
        let target = self.inner.onboarded(new_id).await?;
        Ok(Some(TargetPackage {
            vnfd: target.vnfd.clone(),
            files: target.files.clone(),
        }))
    }

    pub(super) fn driver_problem(
        &self,
        name: &str,
        i: usize,
        n: usize,
        e: DriverError,
        layer: DriverLayer,
        vims: &[ResolvedVim],
    ) -> ProblemDetails {
        match (self.pending, &e) {
            (Some(mode), DriverError::Cancelled { .. }) => {
                let mut p =
                    cancel_problem(mode, format!("during step {name} ({}/{n}): {e}", i + 1));
                p.extra.insert("step".into(), name.into());
                p
            }
            _ => step_problem(name, i, n, e.problem_details(layer), vims),
        }
    }

    /// Awaits a driver call while honouring cancellation requests: the first one is recorded
    /// (`isCancelPending`); FORCEFUL also trips the step's cancellation flag and abandons the
    /// call if it does not stop within the grace period. The step's deadline is enforced even
    /// for a driver that never checks it.
    pub(super) async fn drive<T>(
        &mut self,
        mut fut: StepFuture<T>,
        budget: Duration,
        what: &str,
    ) -> Result<Result<T, DriverError>, Stop> {
        let grace = self.inner.config.forceful_grace;
        let hard = tokio::time::sleep(budget.saturating_add(grace));
        tokio::pin!(hard);
        let mut rx = self.cancel_rx.clone();
        let mut first = true;
        loop {
            if self.pending.is_none() {
                let requested = if first {
                    first = false;
                    *rx.borrow_and_update()
                } else {
                    None
                };
                if let Some(mode) = requested {
                    self.mark_cancel_pending(mode, hard.as_mut()).await?;
                }
            }
            tokio::select! {
                r = &mut fut => return Ok(r),
                () = &mut hard => {
                    return Ok(Err(if self.flag.is_cancelled() {
                        DriverError::cancelled(what)
                    } else {
                        DriverError::timeout(what, budget)
                    }));
                }
                changed = rx.changed(), if self.pending.is_none() => {
                    if changed.is_ok() {
                        let mode = *rx.borrow_and_update();
                        if let Some(mode) = mode {
                            self.mark_cancel_pending(mode, hard.as_mut()).await?;
                        }
                    }
                }
            }
        }
    }

    pub(super) async fn mark_cancel_pending(
        &mut self,
        mode: CancelModeType,
        hard: Pin<&mut tokio::time::Sleep>,
    ) -> Result<(), Stop> {
        self.pending = Some(mode);
        tracing::info!(
            cancel_mode = cancel_mode_name(mode),
            "cancellation requested"
        );
        if mode == CancelModeType::Forceful {
            self.flag.cancel();
            hard.reset(tokio::time::Instant::now() + self.inner.config.forceful_grace);
        }
        let mut occ = self.occ.clone();
        occ.is_cancel_pending = true;
        occ.cancel_mode = Some(mode);
        self.commit(occ, None, None, Vec::new()).await?;
        Ok(())
    }

    pub(super) fn after_infra(
        &self,
        step: &InfraStep,
        out: InfraOutcome,
    ) -> (VnfLcmOpOcc, Option<VnfInstance>) {
        let mut occ = self.occ.clone();
        apply::merge_changes(&mut occ.resource_changes, out.resource_changes.clone());
        match step {
            InfraStep::ChangeExtConn { .. } => {
                occ.changed_ext_connectivity = Some(out.resources.ext_virtual_link_info.clone());
            }
            InfraStep::RollbackChangeExtConn => occ.changed_ext_connectivity = None,
            InfraStep::ChangeVnfpkg { to_vnfd_id, .. } => {
                let v = &self.ctx.vnfd.vnfd;
                occ.changed_info = Some(VnfInfoModifications {
                    vnfd_id: Some(to_vnfd_id.clone()),
                    vnf_provider: Some(v.provider.clone()),
                    vnf_product_name: Some(v.product_name.clone()),
                    vnf_software_version: Some(v.software_version.clone()),
                    vnfd_version: Some(v.descriptor_version.clone()),
                    ..Default::default()
                });
            }
            InfraStep::RollbackChangeVnfpkg { .. } => occ.changed_info = None,
            _ => {}
        }
        let instance = apply::apply_infra(
            &self.instance,
            step,
            &out,
            &InfraContext {
                vnfd: &self.ctx.vnfd.vnfd,
                before: &self.ctx.before,
                request: &self.request,
            },
        );
        (occ, Some(instance))
    }

    /// Applies a hook's outcome: delivers the alarms and indicator values it reports,
    /// registers the VIMs it created, stores its error-handling
    /// data, and returns the occurrence and the instance to write with the step. When the hook
    /// asks to deregister VIMs, the instance change is written first (it drops the
    /// connections to those VIMs, and the registry refuses to delete a VIM an instance still
    /// references), then the VIMs are deregistered.
    pub(super) async fn after_hook(
        &mut self,
        out: HookOutcome,
    ) -> Result<Result<(VnfLcmOpOcc, Option<VnfInstance>), LcmError>, Stop> {
        let undelivered = super::hook_reports::deliver(&self.inner, &self.instance.id, &out).await;
        if !undelivered.is_empty() {
            self.occ
                .warnings
                .get_or_insert_default()
                .extend(undelivered);
        }
        let mut registered = Vec::new();
        for reg in &out.vims_to_register {
            let info = match self.inner.vims.register(reg, &self.instance.id).await {
                Ok(info) => info,
                Err(e) => return Ok(Err(e)),
            };
            tracing::info!(vim = %reg.name, "registered a VIM created by a hook");
            if let Some(key) = &reg.connection_id {
                registered.push((key.clone(), info));
            }
        }
        if let Some(data) = &out.error_handling_data {
            // Written with the end of this step, so the next hook reads it.
            self.unsaved_data
                .push((HOOK_DATA_KEY.to_owned(), data.clone()));
        }
        let changes_instance = !out.vim_connection_info_add.is_empty()
            || !out.vim_connection_info_remove.is_empty()
            || !registered.is_empty()
            || !out.vims_to_deregister.is_empty()
            || out.metadata.is_some()
            || out.extensions.is_some()
            || out.instantiated_vnf_info.is_some();
        let instance = changes_instance
            .then(|| apply::apply_hook(&self.instance, &out, &registered, &out.vims_to_deregister));
        if out.vims_to_deregister.is_empty() {
            return Ok(Ok((self.occ.clone(), instance)));
        }
        let mut occ = self.occ.clone();
        let forced = dependents::forced_params(&self.request);
        let mut deregister = Vec::new();
        for name in &out.vims_to_deregister {
            let id = VimId::new(name.clone());
            // Refused before anything is written while other instances use the VIM, so a
            // failed step leaves the instance as it was.
            let users: Vec<String> = match self.inner.store.instances_using_vim(&id).await {
                Ok(users) => users
                    .into_iter()
                    .filter(|u| *u != self.instance.id)
                    .map(|u| u.to_string())
                    .collect(),
                Err(e) => return Ok(Err(store_err(e))),
            };
            match (users.is_empty(), forced) {
                (true, _) => deregister.push(id),
                (false, true) => occ
                    .warnings
                    .get_or_insert_default()
                    .push(kept_warning(name, &users)),
                (false, false) => {
                    return Ok(Err(LcmError::VimInUse {
                        vim_id: name.clone(),
                        instances: users,
                    }));
                }
            }
        }
        if let Some(instance) = instance {
            self.commit(self.occ.clone(), None, Some(instance), Vec::new())
                .await?;
        }
        for id in deregister {
            let name = id.to_string();
            match self.inner.vims.deregister(&id).await {
                Ok(()) => tracing::info!(vim = %name, "deregistered a VIM at a hook's request"),
                // Already gone (e.g. the hook runs again after a crash that followed the
                // deregistration): the outcome is the one asked for.
                Err(LcmError::NotFound { .. }) => {
                    tracing::info!(vim = %name, "a hook asked to deregister a VIM that is not registered");
                }
                // An instance started using it meanwhile.
                Err(LcmError::VimInUse { instances, .. }) if forced => {
                    occ.warnings
                        .get_or_insert_default()
                        .push(kept_warning(&name, &instances));
                }
                Err(e) => return Ok(Err(e)),
            }
        }
        Ok(Ok((occ, None)))
    }

    /// The instance to write with the final transition of `event` ([`Run::finished_instance`]);
    /// a completed INSTANTIATE makes it `INSTANTIATED` (in this transaction, not with its
    /// infrastructure step: [`apply::completed_instantiate`]); a completed TERMINATE also
    /// drops its connections to VIMs other instances' hooks registered, so that it no longer
    /// keeps their creator from terminating.
    pub(super) async fn final_instance(
        &self,
        event: Event,
        instance: Option<VnfInstance>,
    ) -> Option<VnfInstance> {
        let out = self.finished_instance(event, instance);
        if event == Event::Succeeded && self.occ.operation == LcmOperationType::Instantiate {
            let after = out.unwrap_or_else(|| self.instance.clone());
            let flavour_id = self.flavour_id().unwrap_or_default();
            return Some(apply::completed_instantiate(after, &flavour_id));
        }
        if event != Event::Succeeded || self.occ.operation != LcmOperationType::Terminate {
            return out;
        }
        let mut after = out.clone().unwrap_or_else(|| self.instance.clone());
        let Some(map) = after.vim_connection_info.as_mut() else {
            return out;
        };
        let mut foreign = Vec::new();
        for (key, entry) in map.iter() {
            let Some(vim_id) = &entry.vim_id else {
                continue;
            };
            match self.inner.store.get_vim(vim_id).await {
                Ok(Some((vim, _)))
                    if vim
                        .created_by_instance
                        .as_ref()
                        .is_some_and(|c| *c != after.id) =>
                {
                    foreign.push(key.clone());
                }
                Ok(_) => {}
                Err(e) => {
                    // Kept: the reference then holds the VIM's creator back until it is removed.
                    tracing::warn!(vim_id = %vim_id, error = %e, "could not tell who registered a VIM the terminated instance references; the reference is kept");
                }
            }
        }
        if foreign.is_empty() {
            return out;
        }
        for key in &foreign {
            map.shift_remove(key);
        }
        tracing::info!(connections = ?foreign, "dropped the terminated instance's connections to VIMs other instances registered");
        Some(after)
    }

    pub(super) async fn apply_modifications(
        &self,
    ) -> Result<(VnfLcmOpOcc, Option<VnfInstance>), LcmError> {
        let OperationParams::ModifyInfo(req) = &self.request else {
            return Err(LcmError::inconsistent(format!(
                "a {} plan contains a MODIFY_INFO step",
                op_name(self.occ.operation)
            )));
        };
        let (mut instance, mut changed) = crate::plan::apply_modifications(&self.instance, req)?;
        if let Some(id) = &req.vnfd_id {
            let v = self.inner.onboarded(id.as_str()).await?.vnfd;
            instance.vnf_provider = v.provider.clone();
            instance.vnf_product_name = v.product_name.clone();
            instance.vnf_software_version = v.software_version.clone();
            instance.vnfd_version = v.descriptor_version.clone();
            changed.vnf_provider = Some(v.provider.clone());
            changed.vnf_product_name = Some(v.product_name.clone());
            changed.vnf_software_version = Some(v.software_version.clone());
            changed.vnfd_version = Some(v.descriptor_version.clone());
        }
        let mut occ = self.occ.clone();
        occ.changed_info = Some(changed);
        Ok((occ, Some(instance)))
    }
}

/// The `warnings` entry (also logged) of a VIM a forced TERMINATE's hook asked to
/// deregister but that `users` still use.
fn kept_warning(vim: &str, users: &[String]) -> String {
    let warning = format!(
        "VIM {vim} was not deregistered: VNF instance(s) {} still use it (terminated with additionalParams.{})",
        users.join(", "),
        dependents::FORCE_WITH_DEPENDENTS
    );
    tracing::warn!(vim = %vim, "{warning}");
    warning
}
