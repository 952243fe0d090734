//! Starting lifecycle operations: one entry point per SOL003 task, and [`Lcm::start`], which
//! validates and plans a request, creates its occurrence under the instance's lock and runs it
//! in the background.

use indexmap::IndexMap;
use vnfm_store::{PendingKey, ProjectScope, ScopedKind, StartCondition};
use vnfm_types::{VimConnectionInfo, apply_vim_connection_changes, vim_connections_set};

use super::*;

impl Lcm {
    /// INSTANTIATE. Returns the occurrence as stored (`STARTING`, or `PROCESSING` when it
    /// could begin at once); it runs in the background.
    pub async fn instantiate(
        &self,
        id: &VnfInstanceId,
        req: InstantiateVnfRequest,
    ) -> Result<VnfLcmOpOcc, LcmError> {
        self.start(id, OperationRequest::Instantiate(req)).await
    }

    /// TERMINATE (GRACEFUL passes `gracefulTerminationTimeout` to the driver).
    pub async fn terminate(
        &self,
        id: &VnfInstanceId,
        req: TerminateVnfRequest,
    ) -> Result<VnfLcmOpOcc, LcmError> {
        self.start(id, OperationRequest::Terminate(req)).await
    }

    /// HEAL.
    pub async fn heal(
        &self,
        id: &VnfInstanceId,
        req: HealVnfRequest,
    ) -> Result<VnfLcmOpOcc, LcmError> {
        self.start(id, OperationRequest::Heal(req)).await
    }

    /// SCALE.
    pub async fn scale(
        &self,
        id: &VnfInstanceId,
        req: ScaleVnfRequest,
    ) -> Result<VnfLcmOpOcc, LcmError> {
        self.start(id, OperationRequest::Scale(req)).await
    }

    /// SCALE_TO_LEVEL.
    pub async fn scale_to_level(
        &self,
        id: &VnfInstanceId,
        req: ScaleVnfToLevelRequest,
    ) -> Result<VnfLcmOpOcc, LcmError> {
        self.start(id, OperationRequest::ScaleToLevel(req)).await
    }

    /// CHANGE_FLAVOUR.
    pub async fn change_flavour(
        &self,
        id: &VnfInstanceId,
        req: ChangeVnfFlavourRequest,
    ) -> Result<VnfLcmOpOcc, LcmError> {
        self.start(id, OperationRequest::ChangeFlavour(req)).await
    }

    /// OPERATE.
    pub async fn operate(
        &self,
        id: &VnfInstanceId,
        req: OperateVnfRequest,
    ) -> Result<VnfLcmOpOcc, LcmError> {
        self.start(id, OperationRequest::Operate(req)).await
    }

    /// CHANGE_EXT_CONN.
    pub async fn change_ext_conn(
        &self,
        id: &VnfInstanceId,
        req: ChangeExtVnfConnectivityRequest,
    ) -> Result<VnfLcmOpOcc, LcmError> {
        self.start(id, OperationRequest::ChangeExtConn(req)).await
    }

    /// MODIFY_INFO (`PATCH /vnf_instances/{id}`).
    pub async fn modify_info(
        &self,
        id: &VnfInstanceId,
        req: VnfInfoModificationRequest,
    ) -> Result<VnfLcmOpOcc, LcmError> {
        self.start(id, OperationRequest::ModifyInfo(req)).await
    }

    /// MODIFY_INFO under a precondition (`PATCH` with `If-Match`): see
    /// [`Lcm::start_if_unchanged`].
    pub async fn modify_info_if_unchanged(
        &self,
        id: &VnfInstanceId,
        req: VnfInfoModificationRequest,
        expected: Version,
    ) -> Result<VnfLcmOpOcc, LcmError> {
        self.start_if_unchanged(id, OperationRequest::ModifyInfo(req), expected)
            .await
    }

    /// CHANGE_VNFPKG.
    pub async fn change_vnfpkg(
        &self,
        id: &VnfInstanceId,
        req: ChangeCurrentVnfPkgRequest,
    ) -> Result<VnfLcmOpOcc, LcmError> {
        self.start(id, OperationRequest::ChangeVnfPkg(req)).await
    }

    /// Starts any operation: validates and plans `req` against the instance and its VNFD
    /// (errors leave nothing behind), creates the occurrence in `STARTING` under the
    /// per-instance lock ([`LcmError::InstanceBusy`] names the holder), and executes it in the
    /// background. Returns the occurrence as created: in `PROCESSING` when it was stored
    /// already begun (see the [module](super) documentation).
    pub async fn start(
        &self,
        id: &VnfInstanceId,
        req: OperationRequest,
    ) -> Result<VnfLcmOpOcc, LcmError> {
        self.start_invoked(id, req, false, None, &ProjectScope::Nothing, None)
            .await
    }

    /// As [`Lcm::start`], only if the instance is still at version `expected` (the version a
    /// client read, sent back as `If-Match`). The version is compared in the transaction that
    /// creates the occurrence and takes the instance's lock, so of concurrent requests made
    /// against one version at most one starts, across every process sharing the store; the
    /// others get [`LcmError::Changed`] (naming the current entity tag) or, while the first
    /// runs, [`LcmError::InstanceBusy`], and leave nothing behind.
    pub async fn start_if_unchanged(
        &self,
        id: &VnfInstanceId,
        req: OperationRequest,
        expected: Version,
    ) -> Result<VnfLcmOpOcc, LcmError> {
        self.start_invoked(id, req, false, Some(expected), &ProjectScope::Nothing, None)
            .await
    }

    /// Starts an operation the VNFM decided on by itself (automatic healing or scaling): as
    /// [`Lcm::start`], and the occurrence, its notifications and its grant request carry
    /// `isAutomaticInvocation: true`.
    pub async fn start_automatic(
        &self,
        id: &VnfInstanceId,
        req: OperationRequest,
    ) -> Result<VnfLcmOpOcc, LcmError> {
        self.start_invoked(id, req, true, None, &ProjectScope::Nothing, None)
            .await
    }

    /// Starts `req` on behalf of a caller that sees `caller`: as [`Lcm::start`] (with
    /// `expected`, as [`Lcm::start_if_unchanged`]), and the request's `vimConnectionInfo` may
    /// also name, by `vimId`, a registered VIM of any project `caller` sees, not only one of
    /// the instance's project: an administrator's request naming another project's VIM, as
    /// Tacker allows. Its access information is then copied into a VIM of the instance (see
    /// [`VimDirectory::check_reference`]). [`Lcm::start`] and the others are this with
    /// [`ProjectScope::Nothing`]: the instance's own VIMs only.
    ///
    /// `key`, the client key of a retry-safe request ([`crate::runner::keyed`]), is committed
    /// with the occurrence, in the transaction that creates it; a key committed by another
    /// request first refuses the start with nothing stored.
    pub async fn start_as(
        &self,
        caller: &ProjectScope,
        id: &VnfInstanceId,
        req: OperationRequest,
        expected: Option<Version>,
        key: Option<&PendingKey>,
    ) -> Result<VnfLcmOpOcc, LcmError> {
        self.start_invoked(id, req, false, expected, caller, key)
            .await
    }

    /// Starts `req`; its VIM references may name VIMs `caller` sees (see [`Lcm::start_as`]);
    /// `key` is committed with the occurrence.
    pub(super) async fn start_invoked(
        &self,
        id: &VnfInstanceId,
        mut req: OperationRequest,
        automatic: bool,
        expected: Option<Version>,
        caller: &ProjectScope,
        key: Option<&PendingKey>,
    ) -> Result<VnfLcmOpOcc, LcmError> {
        let inner = &self.inner;
        if *inner.shutdown.borrow() {
            return Err(LcmError::ShuttingDown);
        }
        let changed = |current: Version| LcmError::Changed {
            kind: "VNF instance",
            id: id.to_string(),
            current: current.etag(),
        };
        // Nobody is to be asked or waited for before the operation begins: it may be stored
        // already begun (below).
        let at_once = inner.nfvo.grants_locally() && inner.vims.resolves_locally();
        let Checked {
            mut instance,
            version,
            mut onboarded,
            mut plan,
            guarded,
        } = self.checked(id, &mut req, caller, at_once).await?;
        // Refused early when already stale; the store compares again when it starts the
        // occurrence, which is what makes the condition hold under concurrency.
        if let Some(expected) = expected
            && expected != version
        {
            return Err(changed(version));
        }
        // Inline VIM credentials become references before anything of the operation is
        // stored: the occurrence, the instance and the journal never hold them.
        let (req, sealed) = vims::seal_request(inner, req, &instance).await?;

        let instance_id = instance.id.clone();
        let mut occ = exec::new_op_occ(inner, &instance_id, &req);
        occ.is_automatic_invocation = automatic;
        if !guarded.left.is_empty() {
            let warning = dependents::forced_warning(&guarded.left);
            tracing::warn!(vnf_instance_id = %instance.id, op_occ_id = %occ.id, "{warning}");
            occ.warnings = Some(vec![warning]);
        }
        let lease = inner.lease();
        // Nobody is to be asked or waited for before the operation begins and no other start
        // can race with this one: the occurrence is stored already begun, in one write.
        if at_once && !guarded.contested {
            let condition = StartCondition {
                instance_version: version,
                no_vims_created: matches!(req, OperationRequest::Terminate(_)),
            };
            let ctx = exec::Ctx::new(onboarded, plan, instance.clone());
            let run = exec::Run::new(
                inner.clone(),
                occ,
                Version::FIRST,
                (instance, version),
                ctx,
                req.to_params(),
            )
            .holding_until(lease.expires_at);
            match run
                .begin_at_once(lease.clone(), condition, key.cloned())
                .await
            {
                Ok(exec::AtOnce::Begun(run)) => {
                    let begun = run.occ().clone();
                    run.spawn(exec::Entry::Begun);
                    return Ok(vims::op_occ_view(begun));
                }
                // The instance changed since it was read: the ordinary way below plans again.
                Ok(exec::AtOnce::NotStored(run)) => {
                    (occ, instance, onboarded, plan) = run.into_parts();
                    // A TERMINATE whose guard was left to the write's condition (the
                    // instance registered no VIM): the guard, in full, before the ordinary
                    // way records the occurrence.
                    if guarded.deferred {
                        match dependents::check_start(inner, &instance, &req).await {
                            Ok(full) if !full.left.is_empty() => {
                                let warning = dependents::forced_warning(&full.left);
                                tracing::warn!(vnf_instance_id = %instance.id, op_occ_id = %occ.id, "{warning}");
                                occ.warnings = Some(vec![warning]);
                            }
                            Ok(_) => {}
                            Err(e) => {
                                vims::release_created(inner, &instance_id, &sealed).await;
                                return Err(e);
                            }
                        }
                    }
                }
                Err(e) => {
                    vims::release_created(inner, &instance_id, &sealed).await;
                    return Err(e);
                }
            }
        }
        let started = inner
            .store
            .start_operation_keyed(&occ, &lease, expected, key)
            .await;
        let locked_version = match started {
            Ok(v) => v,
            Err(e) => {
                vims::release_created(inner, &instance.id, &sealed).await;
                return Err(match e {
                    StoreError::VersionMismatch { found, .. } => changed(found),
                    e => store_err(e),
                });
            }
        };
        // The lock is ours from here on. The instance may have changed between the read above
        // and taking it (an operation that just finished): then plan again from a fresh read.
        let (fresh, fresh_version) = if locked_version == version {
            (instance, version)
        } else {
            match self.instance_with_version(id).await {
                Ok(x) => x,
                Err(e) => {
                    exec::abort_starting(inner, occ, &e).await;
                    return Err(e);
                }
            }
        };
        let plan = if fresh_version == version {
            Ok(plan)
        } else if !vims::still_referenced(&sealed, &fresh) {
            Err(LcmError::conflict(
                "the VNF instance's VIM connections changed while the request was processed; send it again",
            ))
        } else {
            self.checked_plan(&req, &onboarded, &fresh)
        };
        // The occurrence now records this operation's intent; a concurrent operation that
        // started first is visible to this second look (see `dependents`).
        let plan = match plan {
            Ok(p) => dependents::check_start(inner, &fresh, &req)
                .await
                .map(|_| p),
            Err(e) => Err(e),
        };
        match plan {
            Ok(plan) => {
                let ctx = exec::Ctx::new(onboarded, plan, fresh.clone());
                let run = exec::Run::new(
                    inner.clone(),
                    occ.clone(),
                    Version::FIRST,
                    (fresh, fresh_version),
                    ctx,
                    req.to_params(),
                )
                .holding_until(lease.expires_at);
                run.spawn(exec::Entry::Fresh);
                Ok(vims::op_occ_view(occ))
            }
            Err(e) => {
                exec::abort_starting(inner, occ, &e).await;
                Err(e)
            }
        }
    }

    /// Every check made before anything of an operation is stored, and its plan: shared by
    /// [`Lcm::start`] and [`Lcm::preview`], so a preview refuses exactly what starting would.
    /// An INSTANTIATE that names no VIM gets the default VIM here (see [`with_default_vim`]).
    /// `caller` is what the caller sees (see [`Lcm::start_as`]).
    ///
    /// With `at_once` (the operation may be stored already begun, in one write that checks the
    /// instance registered no VIM), a TERMINATE's guard is left to that write
    /// ([`dependents::check_start_deferring`]).
    pub(super) async fn checked(
        &self,
        id: &VnfInstanceId,
        req: &mut OperationRequest,
        caller: &ProjectScope,
        at_once: bool,
    ) -> Result<Checked, LcmError> {
        let inner = &self.inner;
        let (instance, version) = self.instance_with_version(id).await?;
        vims::name_types(inner, req);
        with_default_vim(inner, req, &instance).await?;
        // Whatever the request writes into `vimConnectionInfo` (MODIFY_INFO included) names only
        // VIMs the instance may use, as an operation resolving them would require, or VIMs of
        // other projects the caller sees, whose copies replace the references (sealed as VIMs
        // of the instance by `start`).
        let mut copies = Vec::new();
        for (key, entry) in req.vim_changes().into_iter().flat_map(vim_connections_set) {
            if let Some(copy) = inner
                .vims
                .check_reference(key, entry, &instance.id, caller)
                .await?
            {
                copies.push((key.to_owned(), copy));
            }
        }
        if let Some(changes) = req.vim_changes_mut() {
            for (key, copy) in copies {
                changes.insert(key, Some(copy));
            }
        }
        let req = &*req;
        let onboarded = self.vnfd_for(&instance, req).await?;
        let plan = self.checked_plan(req, &onboarded, &instance)?;
        if let OperationRequest::ChangeVnfPkg(_) = req {
            // The source VNFD may declare the change too; a deleted source package leaves only
            // the target's policies.
            let source = inner.onboarded(instance.vnfd_id.as_str()).await.ok();
            crate::package_change::check(
                source.as_ref().map(|s| &*s.vnfd),
                &onboarded.vnfd,
                &instance,
            )?;
        }
        // Instances using VIMs this one's hooks registered, and VIMs whose creator is going
        // away: refused before anything is stored (and, by `start`, checked again under the
        // lock).
        let guarded = if at_once {
            dependents::check_start_deferring(inner, &instance, req).await?
        } else {
            dependents::check_start(inner, &instance, req).await?
        };
        Ok(Checked {
            instance,
            version,
            onboarded,
            plan,
            guarded,
        })
    }

    /// The VNFD the operation runs with: the instance's, or for CHANGE_VNFPKG the target.
    pub(super) async fn vnfd_for(
        &self,
        instance: &VnfInstance,
        req: &OperationRequest,
    ) -> Result<OnboardedVnfd, LcmError> {
        let id = match req {
            OperationRequest::ChangeVnfPkg(r) => r.vnfd_id.as_str(),
            _ => instance.vnfd_id.as_str(),
        };
        let onboarded = self.inner.onboarded(id).await?;
        if let OperationRequest::ModifyInfo(m) = req
            && let Some(new) = &m.vnfd_id
        {
            self.inner.onboarded(new.as_str()).await?;
        }
        Ok(onboarded)
    }

    /// Plans `req` and checks that the drivers it needs are there.
    pub(super) fn checked_plan(
        &self,
        req: &OperationRequest,
        onboarded: &OnboardedVnfd,
        instance: &VnfInstance,
    ) -> Result<Plan, LcmError> {
        let plan = crate::plan::plan(req, &onboarded.vnfd, instance)?;
        exec::check_hooks(&self.inner, &plan)?;
        if let Some(step) = plan.infra_steps().next() {
            let params = req.to_params();
            let vims = apply::effective_vims(instance, &params);
            let flavour = step
                .target()
                .map(|t| t.flavour_id.as_str())
                .or(plan.flavour_id.as_deref());
            exec::select_infra(
                &self.inner,
                instance,
                &vims,
                &onboarded.vnfd,
                flavour,
                &params,
                Some(step),
            )?
            .check_request(step, &params)?;
        }
        Ok(plan)
    }
}

/// The key of the `vimConnectionInfo` entry an INSTANTIATE gets for the default VIM (Tacker's).
pub(crate) const DEFAULT_VIM_KEY: &str = "default";

/// Puts a reference to the default VIM of the instance's project
/// ([`VimDirectory::default_vim`]) in an INSTANTIATE
/// request under [`DEFAULT_VIM_KEY`] when neither the request nor the (not instantiated)
/// instance has a `vimConnectionInfo` entry, as Tacker does; the occurrence's
/// `operationParams` and then the instance record the reference. Other requests, and a
/// directory without a default, leave the request as it is.
async fn with_default_vim(
    inner: &Inner,
    req: &mut OperationRequest,
    instance: &VnfInstance,
) -> Result<(), LcmError> {
    let OperationRequest::Instantiate(r) = req else {
        return Ok(());
    };
    let none = |m: Option<&IndexMap<String, VimConnectionInfo>>| m.is_none_or(|m| m.is_empty());
    // A default VIM an earlier INSTANTIATE left (one that failed) is chosen again.
    let only_default = |m: Option<&IndexMap<String, VimConnectionInfo>>| {
        m.is_some_and(|m| m.len() == 1 && m.contains_key(DEFAULT_VIM_KEY))
    };
    // A request that only removes connections names no VIM either; what it removes is
    // removed from what the instance holds before the rule is applied.
    let mut held = instance.vim_connection_info.clone().unwrap_or_default();
    if let Some(changes) = r.vim_connection_info.as_ref() {
        apply_vim_connection_changes(&mut held, changes);
    }
    let names_vims = r
        .vim_connection_info
        .as_ref()
        .is_some_and(|c| vim_connections_set(c).next().is_some());
    if instance.instantiation_state != InstantiationState::NotInstantiated
        || names_vims
        || !(none(Some(&held)) || only_default(Some(&held)))
    {
        return Ok(());
    }
    // The default VIM of the instance's project, as Tacker's is per project.
    let project = inner
        .store
        .project_of(ScopedKind::Instance, instance.id.as_str())
        .await
        .map_err(store_err)?
        .flatten();
    if let Some(default) = inner.vims.default_vim(project.as_deref()).await? {
        tracing::info!(
            vnf_instance_id = %instance.id,
            vim_id = default.vim_id.as_ref().map(|v| v.as_str()),
            project = project.as_deref(),
            "INSTANTIATE names no VIM: using the default VIM of the instance's project"
        );
        r.vim_connection_info
            .get_or_insert_default()
            .insert(DEFAULT_VIM_KEY.to_owned(), Some(default));
    }
    Ok(())
}

/// What [`Lcm::checked`] found: the instance (and its version), the VNFD the operation runs
/// with, its plan, and what the guards of [`dependents`] found (the dependent instances a
/// forced TERMINATE would leave behind, whether another start can race with this one).
pub(super) struct Checked {
    pub(super) instance: VnfInstance,
    pub(super) version: Version,
    pub(super) onboarded: OnboardedVnfd,
    pub(super) plan: Plan,
    pub(super) guarded: dependents::Guarded,
}
