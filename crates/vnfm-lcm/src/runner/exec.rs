//! Executing one operation occurrence: the task, its steps, its lease and its cancellation.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures_util::FutureExt;
use indexmap::IndexMap;
use tokio::sync::watch;
use tracing::Instrument;
use vnfm_driver_api::{
    CancellationFlag, DriverError, GrantDecision, HookCall, HookOutcome, InfraDriver, InfraOutcome,
    InfraRequest, InfraStep, ResolvedVim, RunControl,
};
use vnfm_store::{StepOutcome, StepRecord, StepWritten, StoreError, Version};
use vnfm_types::{
    CancelModeType, Grant, InstantiationState, LccnNotification, LcmOperationStateType as State,
    LcmOperationType, Link, OperationParams, ProblemDetails, VimConnectionInfo, VimId,
    VnfInfoModifications, VnfInstance, VnfInstanceId, VnfLcmOpOcc, VnfLcmOpOccId, VnfLcmOpOccLinks,
};

use super::apply::{self, InfraContext};
use super::journal::{self, JournalView, Phase, PlanRow, StepRow};
use super::{
    Inner, RunHandle, RunState, dependents, instance_links, is_at_rest, new_uuid, notifications,
    panics, store_err, vims,
};
use crate::error::{LcmError, op_name};
use crate::plan::{OperationRequest, Plan, PlanKind, RollbackHooks, Step, grant};
use crate::ports::{OnboardedVnfd, VimDirectory};
use crate::runner::granted;
use crate::state::{Event, transition};

/// Op-occ data key under which a cancellation request waits for the runner executing the
/// occurrence (which may be in another process).
pub(crate) const CANCEL_KEY: &str = "cancelRequest";

/// Op-occ data key of the hooks' error-handling data: one value per occurrence, the last one a
/// hook returned, handed to every later hook call of the occurrence (retries included).
pub(crate) const HOOK_DATA_KEY: &str = "errorHandlingData";

/// The tracing span of an occurrence.
pub(crate) fn op_span(occ: &VnfLcmOpOcc) -> tracing::Span {
    tracing::info_span!(
        "lcm.op_occ",
        op_occ_id = %occ.id,
        vnf_instance_id = %occ.vnf_instance_id,
        operation = %op_name(occ.operation),
    )
}

/// `_links` of an occurrence in `state`: `cancel` while it runs, `retry`/`rollback`/`fail` in
/// `FAILED_TEMP`.
pub(crate) fn op_occ_links(
    root: &str,
    id: &VnfLcmOpOccId,
    instance_id: &VnfInstanceId,
    state: State,
) -> VnfLcmOpOccLinks {
    let base = format!("{root}/vnf_lcm_op_occs/{id}");
    let task = |t: &str| Some(Link::new(format!("{base}/{t}")));
    let running = matches!(
        state,
        State::Starting | State::Processing | State::RollingBack
    );
    let failed_temp = state == State::FailedTemp;
    VnfLcmOpOccLinks {
        self_: Link::new(base.clone()),
        vnf_instance: Link::new(format!("{root}/vnf_instances/{instance_id}")),
        grant: None,
        cancel: if running { task("cancel") } else { None },
        retry: if failed_temp { task("retry") } else { None },
        rollback: if failed_temp { task("rollback") } else { None },
        fail: if failed_temp { task("fail") } else { None },
        vnf_snapshot: None,
    }
}

/// A new occurrence of `req` on `instance_id`, in `STARTING`.
pub(crate) fn new_op_occ(
    inner: &Inner,
    instance_id: &VnfInstanceId,
    req: &OperationRequest,
) -> VnfLcmOpOcc {
    let now = inner.now_datetime();
    let id = VnfLcmOpOccId::new(new_uuid());
    let params = match req.to_json() {
        serde_json::Value::Object(m) => Some(m),
        _ => None,
    };
    VnfLcmOpOcc {
        links: op_occ_links(&inner.config.api_root, &id, instance_id, State::Starting),
        id,
        operation_state: State::Starting,
        state_entered_time: now.clone(),
        start_time: now,
        vnf_instance_id: instance_id.clone(),
        grant_id: None,
        operation: req.operation_type(),
        is_automatic_invocation: false,
        operation_params: params,
        is_cancel_pending: false,
        cancel_mode: None,
        error: None,
        resource_changes: None,
        changed_info: None,
        changed_ext_connectivity: None,
        modifications_triggered_by_vnf_pkg_change: None,
        vnf_snapshot_info_id: None,
        warnings: None,
    }
}

/// `occ` after `event`: new state, time and links; a cancellation is no longer pending; a
/// completed occurrence has no error.
pub(crate) fn moved(
    inner: &Inner,
    occ: &VnfLcmOpOcc,
    event: Event,
) -> Result<VnfLcmOpOcc, LcmError> {
    let to = transition(occ.operation_state, event)?;
    let mut out = occ.clone();
    out.operation_state = to;
    out.state_entered_time = inner.now_datetime();
    out.links = op_occ_links(&inner.config.api_root, &out.id, &out.vnf_instance_id, to);
    if event == Event::Cancelled {
        out.is_cancel_pending = false;
        out.cancel_mode = None;
    }
    if to == State::Completed {
        out.error = None;
    }
    Ok(out)
}

/// The notification reporting `occ`'s current state.
pub(crate) fn note(inner: &Inner, occ: &VnfLcmOpOcc) -> LccnNotification {
    notifications::op_occ_notification(occ, &inner.config.api_root, inner.now_datetime())
}

/// Why a write of the runner did not happen.
pub(crate) enum WriteError {
    /// Another runner owns the occurrence now (lease lost, occurrence finished or changed).
    Lost(String),
    /// The write failed.
    Failed(LcmError),
}

/// Routes `notes` into `rec.outbox` and writes `rec` in one transaction, retrying a few times
/// when the database fails transiently.
pub(crate) async fn write(
    inner: &Inner,
    rec: &mut StepRecord,
    notes: &[LccnNotification],
    instance: Option<&VnfInstance>,
) -> Result<StepWritten, WriteError> {
    // The instance as this write leaves it, else as the caller last saw it.
    let about = rec.instance.as_ref().map(|(i, _)| i).or(instance);
    let mut rows = Vec::new();
    for n in notes {
        rows.extend(
            inner
                .router
                .route(n, about)
                .await
                .map_err(WriteError::Failed)?,
        );
    }
    rec.outbox.extend(rows);
    let mut attempt = 0u32;
    loop {
        match inner.store.record_step(rec).await {
            Ok(w) => {
                if rec.occ.operation_state != rec.expected_state {
                    tracing::info!(
                        op_occ_id = %rec.occ.id,
                        from = ?rec.expected_state,
                        to = ?rec.occ.operation_state,
                        "operation occurrence state changed"
                    );
                }
                return Ok(w);
            }
            Err(
                e @ (StoreError::Conflict(_)
                | StoreError::VersionMismatch { .. }
                | StoreError::NotFound { .. }),
            ) => return Err(WriteError::Lost(e.to_string())),
            Err(StoreError::Backend(m)) if attempt < 3 => {
                attempt += 1;
                tracing::warn!(error = %m, attempt, "store write failed; retrying");
                tokio::time::sleep(Duration::from_millis(50 * u64::from(attempt))).await;
            }
            Err(e) => return Err(WriteError::Failed(store_err(e))),
        }
    }
}

/// Ends an occurrence that was created in `STARTING` but cannot run (its request no longer
/// applies to the instance): `ROLLED_BACK` with `error`, nothing having been done.
pub(crate) async fn abort_starting(inner: &Inner, occ: VnfLcmOpOcc, err: &LcmError) {
    let Ok(mut to) = moved(inner, &occ, Event::GrantRejected) else {
        return;
    };
    to.error = Some(problem(
        "Operation not started",
        err.status(),
        format!("the request no longer applies to the VNF instance: {err}"),
    ));
    let notes = [note(inner, &occ), note(inner, &to)];
    let mut rec = StepRecord {
        occ: to,
        expected_state: State::Starting,
        expected_version: Version::FIRST,
        owner: inner.config.runner_id.clone(),
        journal: None,
        instance: None,
        outbox: Vec::new(),
        data: Vec::new(),
    };
    if write(inner, &mut rec, &notes, None).await.is_err() {
        tracing::warn!(op_occ_id = %occ.id, "could not end an occurrence that cannot start; recovery will");
        let _ = inner
            .store
            .release_lease(&occ.id, &inner.config.runner_id)
            .await;
        return;
    }
    // Nothing ran: the VIMs sealed for the request are released.
    vims::release_after(inner, &rec.occ, None, None).await;
}

/// Moves an occurrence this process holds the lease of by `event` (with `error` and a
/// journal row) in one write, outside any run.
pub(crate) async fn record_transition(
    inner: &Inner,
    occ: &VnfLcmOpOcc,
    version: Version,
    event: Event,
    error: Option<ProblemDetails>,
    journal: Option<vnfm_store::JournalStep>,
) -> Result<VnfLcmOpOcc, LcmError> {
    let mut to = moved(inner, occ, event)?;
    if error.is_some() {
        to.error = error;
    }
    let notes = [note(inner, &to)];
    let mut rec = StepRecord {
        occ: to,
        expected_state: occ.operation_state,
        expected_version: version,
        owner: inner.config.runner_id.clone(),
        journal,
        instance: None,
        outbox: Vec::new(),
        data: Vec::new(),
    };
    match write(inner, &mut rec, &notes, None).await {
        Ok(_) => Ok(rec.occ),
        Err(WriteError::Lost(w)) => Err(LcmError::Conflict(w)),
        Err(WriteError::Failed(e)) => Err(e),
    }
}

fn problem(title: &str, status: u16, detail: String) -> ProblemDetails {
    let mut p = ProblemDetails::new(status, detail);
    p.title = Some(title.into());
    p
}

fn cancel_mode_name(mode: CancelModeType) -> &'static str {
    match mode {
        CancelModeType::Graceful => "GRACEFUL",
        CancelModeType::Forceful => "FORCEFUL",
    }
}

fn cancel_problem(mode: CancelModeType, when: String) -> ProblemDetails {
    let mut p = problem(
        "Operation cancelled",
        409,
        format!(
            "the operation was cancelled ({}) {when}",
            cancel_mode_name(mode)
        ),
    );
    p.extra
        .insert("cancelMode".into(), cancel_mode_name(mode).into());
    p
}

fn step_problem(
    name: &str,
    i: usize,
    n: usize,
    mut p: ProblemDetails,
    vims: &[ResolvedVim],
) -> ProblemDetails {
    let mut detail = format!("step {name} ({}/{n}) failed: {}", i + 1, p.detail);
    // Drivers redact their messages; this catches a secret one of them let through.
    for v in vims {
        detail = v.redact(&detail);
    }
    p.detail = detail;
    p.extra.insert("step".into(), name.into());
    p
}

fn lcm_problem(
    name: &str,
    i: usize,
    n: usize,
    e: &LcmError,
    vims: &[ResolvedVim],
) -> ProblemDetails {
    step_problem(
        name,
        i,
        n,
        problem("Lifecycle step failed", e.status(), e.to_string()),
        vims,
    )
}

/// Parses a stored cancellation request.
pub(crate) fn parse_cancel(v: &serde_json::Value) -> Option<CancelModeType> {
    serde_json::from_value(v.get("cancelMode")?.clone()).ok()
}

/// Resolves every entry of `map` through the VIM directory.
pub(crate) async fn resolve_vims(
    dir: Arc<dyn VimDirectory>,
    map: IndexMap<String, VimConnectionInfo>,
) -> Result<Vec<ResolvedVim>, LcmError> {
    let mut out = Vec::with_capacity(map.len());
    for (k, v) in &map {
        out.push(dir.resolve(k, v).await?);
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

/// The infrastructure driver of a step in flavour `flavour_id` of `vnfd`: a
/// [`SplitByVim`](crate::split::SplitByVim) over the drivers of the instance's VIMs when the
/// flavour's VDUs map to VIMs of different drivers (a mixed VNF, see [`crate::split`]), else
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
) -> Result<Arc<dyn InfraDriver>, LcmError> {
    use crate::split::{SplitByVim, SplitState, explicit_mapping};
    let state = apply::driver_state(instance);
    let recorded = SplitState::of(&state);
    // An instance instantiated on one driver stays on it, whatever VIMs it gains later.
    if recorded.is_none() && instance.instantiation_state == InstantiationState::Instantiated {
        return select_driver(inner, instance, vims);
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
        return select_driver(inner, instance, vims);
    };
    Ok(Arc::new(split.with_progress(inner.store.clone())))
}

/// What an occurrence needs besides its own record: the VNFD, the plans and the instance as it
/// was before the operation.
#[derive(Clone)]
pub(crate) struct Ctx {
    pub vnfd: OnboardedVnfd,
    pub forward: Plan,
    pub before: VnfInstance,
    pub rollback: Option<Plan>,
}

impl Ctx {
    pub(crate) fn new(vnfd: OnboardedVnfd, forward: Plan, before: VnfInstance) -> Ctx {
        Ctx {
            vnfd,
            forward,
            before,
            rollback: None,
        }
    }

    pub(crate) fn plan(&self, phase: Phase) -> Plan {
        match phase {
            Phase::Forward => self.forward.clone(),
            Phase::Rollback => self.rollback.clone().unwrap_or_else(|| Plan {
                operation: self.forward.operation,
                kind: PlanKind::Rollback,
                flavour_id: self.forward.flavour_id.clone(),
                steps: Vec::new(),
                rollback_hooks: RollbackHooks::default(),
            }),
        }
    }

    fn plan_row(&self) -> PlanRow {
        PlanRow {
            plan: self.forward.clone(),
            vnfd_id: Some(self.vnfd.vnfd.descriptor_id.clone()),
            instance_before: Some(self.before.clone()),
        }
    }
}

/// The typed request of an occurrence.
pub(crate) fn request_of(occ: &VnfLcmOpOcc) -> Result<OperationParams, LcmError> {
    occ.typed_operation_params()
        .map_err(|e| LcmError::Inconsistent(format!("operation occurrence {}: {e}", occ.id)))
}

/// The context of an occurrence from its journal; when the journal holds no plan yet (nothing
/// ran), the plan is made from the instance as it is.
pub(crate) fn load_ctx(
    inner: &Inner,
    occ: &VnfLcmOpOcc,
    view: &JournalView,
    instance: &VnfInstance,
) -> Result<Ctx, LcmError> {
    if let Some(row) = &view.forward {
        let vnfd_id = row
            .vnfd_id
            .clone()
            .unwrap_or_else(|| instance.vnfd_id.to_string());
        return Ok(Ctx {
            vnfd: inner.onboarded(&vnfd_id)?,
            forward: row.plan.clone(),
            before: row
                .instance_before
                .clone()
                .unwrap_or_else(|| instance.clone()),
            rollback: view.rollback.clone(),
        });
    }
    let req = OperationRequest::try_from(request_of(occ)?)?;
    let vnfd_id = match &req {
        OperationRequest::ChangeVnfPkg(r) => r.vnfd_id.to_string(),
        _ => instance.vnfd_id.to_string(),
    };
    let vnfd = inner.onboarded(&vnfd_id)?;
    let plan = crate::plan::plan(&req, &vnfd.vnfd, instance)?;
    Ok(Ctx::new(vnfd, plan, instance.clone()))
}

/// Where a run starts.
pub(crate) enum Entry {
    /// An occurrence in `STARTING`: resolve the VIMs, begin, run the forward plan.
    Fresh,
    /// [`Entry::Fresh`] for an occurrence taken over from a dead runner: a cancellation may
    /// have been requested while nobody executed it.
    Orphan,
    /// Continue `phase` at step `next` (the occurrence is already in `PROCESSING` or
    /// `ROLLING_BACK`).
    Resume {
        /// The plan to continue.
        phase: Phase,
        /// The first step to run.
        next: usize,
    },
}

/// Why a run stopped before its occurrence reached a resting state.
enum Stop {
    /// Another runner owns the occurrence.
    Lost(String),
    /// The runner is shutting down.
    Shutdown,
    /// A write or an internal check failed.
    Failed(LcmError),
    /// The runner's own code panicked; the occurrence was moved to `FAILED_TEMP`.
    Panicked,
}

impl From<WriteError> for Stop {
    fn from(e: WriteError) -> Stop {
        match e {
            WriteError::Lost(w) => Stop::Lost(w),
            WriteError::Failed(e) => Stop::Failed(e),
        }
    }
}

impl From<LcmError> for Stop {
    fn from(e: LcmError) -> Stop {
        Stop::Failed(e)
    }
}

type StepFuture<T> = Pin<Box<dyn Future<Output = Result<T, DriverError>> + Send>>;
type StepResult = Result<(VnfLcmOpOcc, Option<VnfInstance>), ProblemDetails>;

/// Removes a finished run from the registry and wakes its waiters, even if the task panicked.
struct DoneGuard {
    inner: Arc<Inner>,
    id: VnfLcmOpOccId,
    done: watch::Sender<RunState>,
    mine: watch::Receiver<RunState>,
    /// The occurrence as the run left it, when at rest.
    at_rest: Option<Arc<VnfLcmOpOcc>>,
}

impl Drop for DoneGuard {
    fn drop(&mut self) {
        let mut running = self.inner.running();
        // A retry may already have registered the next run of the same occurrence.
        if running
            .get(&self.id)
            .is_some_and(|h| h.done.same_channel(&self.mine))
        {
            running.remove(&self.id);
        }
        drop(running);
        let _ = self.done.send(RunState::Ended(self.at_rest.take()));
    }
}

/// Op-occ data key of the grant.
pub(crate) const GRANT_KEY: &str = "grant";

/// What asking for a grant gave.
enum GrantAsked {
    /// The operation changes no resources through the infrastructure.
    NotNeeded,
    /// Granted (and kept with the occurrence, or about to be: [`Run::unsaved_grant`]).
    Granted,
    /// Rejected, with the NFVO's reason.
    Rejected(ProblemDetails),
}

/// One occurrence being executed by this process.
pub(crate) struct Run {
    inner: Arc<Inner>,
    occ: VnfLcmOpOcc,
    version: Version,
    instance: VnfInstance,
    instance_version: Version,
    ctx: Ctx,
    request: OperationParams,
    resolved: Option<(IndexMap<String, VimConnectionInfo>, Vec<ResolvedVim>)>,
    grant: Option<Arc<Grant>>,
    /// The grant as it is to be kept with the occurrence (op-occ data `grant`), until the
    /// next write stores it in the same transaction.
    unsaved_grant: Option<serde_json::Value>,
    /// Whether this run has written the operation's VIM connections into the instance
    /// ([`Run::ensure_operation_vims`]).
    operation_vims_written: bool,
    flag: CancellationFlag,
    cancel_tx: watch::Sender<Option<CancelModeType>>,
    cancel_rx: watch::Receiver<Option<CancelModeType>>,
    pending: Option<CancelModeType>,
    lost: Arc<AtomicBool>,
}

impl Run {
    pub(crate) fn new(
        inner: Arc<Inner>,
        occ: VnfLcmOpOcc,
        version: Version,
        (instance, instance_version): (VnfInstance, Version),
        ctx: Ctx,
        request: OperationParams,
    ) -> Run {
        let (cancel_tx, cancel_rx) = watch::channel(None);
        Run {
            inner,
            occ,
            version,
            instance,
            instance_version,
            ctx,
            request,
            resolved: None,
            grant: None,
            unsaved_grant: None,
            operation_vims_written: false,
            flag: CancellationFlag::new(),
            cancel_tx,
            cancel_rx,
            pending: None,
            lost: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The occurrence as last written.
    pub(crate) fn occ(&self) -> &VnfLcmOpOcc {
        &self.occ
    }

    /// Runs the occurrence in a background task registered in the runner's registry.
    pub(crate) fn spawn(self, entry: Entry) {
        let inner = self.inner.clone();
        let id = self.occ.id.clone();
        let (done_tx, done_rx) = watch::channel(RunState::Running);
        inner.running().insert(
            id.clone(),
            RunHandle {
                cancel: self.cancel_tx.clone(),
                done: done_rx.clone(),
            },
        );
        let guard = DoneGuard {
            inner: inner.clone(),
            id: id.clone(),
            done: done_tx,
            mine: done_rx,
            at_rest: None,
        };
        let span = op_span(&self.occ);
        tokio::spawn(
            async move {
                let mut guard = guard;
                let mut run = self;
                let keeper = tokio::spawn(
                    keep_lease(
                        inner.clone(),
                        id.clone(),
                        run.cancel_tx.clone(),
                        run.lost.clone(),
                        run.flag.clone(),
                    )
                    .in_current_span(),
                );
                let result = match AssertUnwindSafe(run.execute(entry)).catch_unwind().await {
                    Ok(result) => result,
                    Err(payload) => Err(run.after_panic(&panics::panic_message(&*payload)).await),
                };
                keeper.abort();
                if result.is_ok() && is_at_rest(run.occ.operation_state) {
                    guard.at_rest = Some(Arc::new(run.occ.clone()));
                }
                let release = match result {
                    Ok(()) => false,
                    Err(Stop::Lost(why)) => {
                        tracing::warn!(reason = %why, "stopped: another runner owns the occurrence");
                        false
                    }
                    Err(Stop::Panicked) => false,
                    Err(Stop::Shutdown) => {
                        tracing::info!("stopped at a step boundary: the runner is shutting down");
                        true
                    }
                    Err(Stop::Failed(e)) => {
                        tracing::error!(error = %e, "stopped: the runner cannot record progress; the occurrence is left for recovery");
                        true
                    }
                };
                if release {
                    // Let another runner (or this one's recovery) take it over at once.
                    let _ = inner
                        .store
                        .release_lease(&id, &inner.config.runner_id)
                        .await;
                }
            }
            .instrument(span),
        );
    }

    /// Ends a run whose own code panicked: the occurrence goes to `FAILED_TEMP` with the panic
    /// message, or, when that cannot be written, is left to recovery (the lease is released).
    async fn after_panic(&mut self, msg: &str) -> Stop {
        tracing::error!(panic = %msg, "the runner panicked while executing the occurrence");
        let p = problem(
            "Lifecycle step failed",
            500,
            format!(
                "the runner panicked while executing this operation occurrence: {msg}; retry runs the unfinished step again, rollback undoes the operation"
            ),
        );
        match self.transition_to(Event::StepFailed, Some(p), None).await {
            Ok(()) => Stop::Panicked,
            Err(e) => Stop::Failed(e),
        }
    }

    async fn execute(&mut self, entry: Entry) -> Result<(), Stop> {
        match entry {
            Entry::Fresh => self.run_fresh().await,
            Entry::Orphan => {
                self.load_stored_cancel().await;
                self.run_fresh().await
            }
            Entry::Resume { phase, next } => {
                self.load_stored_cancel().await;
                // The grant's additions must be in the effective request before any step or
                // the final transition uses it. A read error here resurfaces, with the step
                // that needs the grant, from `granted`.
                let _ = self.load_stored_grant().await;
                self.run_phase(phase, next).await
            }
        }
    }

    /// Writes `occ` (and the journal row, instance and notifications) and adopts it.
    async fn commit(
        &mut self,
        occ: VnfLcmOpOcc,
        journal: Option<vnfm_store::JournalStep>,
        instance: Option<VnfInstance>,
        notes: Vec<LccnNotification>,
    ) -> Result<(), WriteError> {
        let mut instance = instance;
        if let Some(i) = instance.as_mut() {
            i.links = instance_links(&self.inner.config.api_root, &i.id, i.instantiation_state);
        }
        let mut rec = StepRecord {
            occ,
            expected_state: self.occ.operation_state,
            expected_version: self.version,
            owner: self.inner.config.runner_id.clone(),
            journal,
            instance: instance.map(|i| (i, self.instance_version)),
            outbox: Vec::new(),
            data: self
                .unsaved_grant
                .take()
                .map(|g| vec![(GRANT_KEY.to_owned(), g)])
                .unwrap_or_default(),
        };
        let written = write(&self.inner, &mut rec, &notes, Some(&self.instance)).await?;
        let ended = rec.occ.operation_state.is_final() && !rec.expected_state.is_final();
        self.occ = rec.occ;
        self.version = written.op_occ_version;
        if let (Some((i, _)), Some(v)) = (rec.instance, written.instance_version) {
            self.instance = i;
            self.instance_version = v;
        }
        if ended {
            vims::release_after(
                &self.inner,
                &self.occ,
                Some(&self.ctx.before),
                Some(&self.instance),
            )
            .await;
        }
        Ok(())
    }

    /// Moves the occurrence by `event` and writes it with its notification (and `journal`).
    pub(crate) async fn transition_to(
        &mut self,
        event: Event,
        error: Option<ProblemDetails>,
        journal: Option<vnfm_store::JournalStep>,
    ) -> Result<(), LcmError> {
        let mut to = moved(&self.inner, &self.occ, event)?;
        if error.is_some() {
            to.error = error;
        }
        let n = note(&self.inner, &to);
        self.commit(to, journal, None, vec![n])
            .await
            .map_err(|e| match e {
                WriteError::Lost(w) => LcmError::Conflict(w),
                WriteError::Failed(e) => e,
            })
    }

    fn cancel_now(&self) -> Option<CancelModeType> {
        self.pending.or(*self.cancel_rx.borrow())
    }

    async fn load_stored_cancel(&mut self) {
        if let Ok(Some(v)) = self
            .inner
            .store
            .get_op_occ_data(&self.occ.id, CANCEL_KEY)
            .await
            && let Some(mode) = parse_cancel(&v)
        {
            self.cancel_tx.send_replace(Some(mode));
        }
    }

    async fn clear_cancel_request(&self) {
        let _ = self
            .inner
            .store
            .put_op_occ_data(&self.occ.id, CANCEL_KEY, &serde_json::Value::Null)
            .await;
    }

    /// Asks the NFVO for the grant of the forward plan. The grant is kept with the occurrence
    /// (op-occ data `grant`) by the next write ([`Run::commit`]), so retries and rollbacks
    /// reuse it and ask for nothing new.
    async fn request_grant(&mut self) -> Result<GrantAsked, LcmError> {
        let Some(request) = grant::grant_request(
            &self.occ,
            &self.instance,
            &self.ctx.vnfd.vnfd,
            &self.ctx.forward,
            &self.inner.config.api_root,
        ) else {
            return Ok(GrantAsked::NotNeeded);
        };
        let decision = self
            .inner
            .nfvo
            .grant(&request)
            .await
            .map_err(|e| LcmError::Grant {
                nfvo: self.inner.nfvo.describe(),
                message: e.to_string(),
            })?;
        match decision {
            GrantDecision::Granted(g) => {
                let value = serde_json::to_value(&*g).map_err(|e| {
                    LcmError::Inconsistent(format!("grant does not serialize: {e}"))
                })?;
                self.unsaved_grant = Some(value);
                tracing::info!(grant_id = %g.id, resources = ?grant::summary(&request), "granted");
                self.adopt_grant(Arc::new(*g))?;
                Ok(GrantAsked::Granted)
            }
            GrantDecision::Rejected(mut problem) => {
                problem.detail = format!("the NFVO rejected the grant: {}", problem.detail);
                tracing::warn!(detail = %problem.detail, "grant rejected");
                Ok(GrantAsked::Rejected(problem))
            }
        }
    }

    /// Reads the grant kept with the occurrence, if any, and adopts it; `false` when there is
    /// none.
    async fn load_stored_grant(&mut self) -> Result<bool, LcmError> {
        let stored = self
            .inner
            .store
            .get_op_occ_data(&self.occ.id, GRANT_KEY)
            .await
            .map_err(|e| LcmError::Store(e.to_string()))?;
        let Some(v) = stored.filter(|v| !v.is_null()) else {
            return Ok(false);
        };
        let g: Grant = serde_json::from_value(v)
            .map_err(|e| LcmError::Inconsistent(format!("stored grant is unreadable: {e}")))?;
        self.adopt_grant(Arc::new(g))?;
        Ok(true)
    }

    /// Makes `grant` the occurrence's grant and merges what it adds (VIM connections, external
    /// virtual links) into the effective request, checked against the VNFD like the client's.
    fn adopt_grant(&mut self, grant: Arc<Grant>) -> Result<(), LcmError> {
        let (request, added) = granted::merge_into_request(&self.request, &self.ctx.before, &grant);
        if !added.is_empty() {
            let op = OperationRequest::try_from(request.clone())?;
            crate::validate::validate(&op, &self.ctx.vnfd.vnfd, &self.ctx.before).map_err(|e| {
                LcmError::Grant {
                    nfvo: self.inner.nfvo.describe(),
                    message: format!(
                        "the grant's vimConnectionInfo or external virtual links do not fit the request and the VNFD: {e}"
                    ),
                }
            })?;
            tracing::info!(
                vims = ?added.vims,
                ext_virtual_links = ?added.ext_links,
                ext_managed_virtual_links = ?added.managed_links,
                "the grant adds to the operation"
            );
        }
        self.request = request;
        self.grant = Some(grant);
        Ok(())
    }

    /// The instance with the operation's VIM connections (the request's, and those the grant
    /// adds to operations whose request cannot carry them); `None` when neither adds any.
    fn with_operation_vims(&self) -> Option<VnfInstance> {
        let instance = apply::with_request_vims(&self.instance, &self.request);
        let Some(g) = &self.grant else {
            return instance;
        };
        match granted::vims_for_instance(
            &self.request,
            instance.as_ref().unwrap_or(&self.instance),
            g,
        ) {
            Some((with_vims, keys)) => {
                tracing::info!(vims = ?keys, "the grant adds VIM connections to the instance");
                Some(with_vims)
            }
            None => instance,
        }
    }

    /// Writes the operation's VIM connections into the instance when it lacks them, before
    /// the first forward step this run executes: an occurrence retried after it failed in
    /// `STARTING` (VIMs unresolvable, NFVO unreachable) never wrote them. Checked once per run,
    /// so a hook's later change to a connection is not undone.
    async fn ensure_operation_vims(&mut self) -> Result<(), WriteError> {
        if self.operation_vims_written || self.occ.operation_state != State::Processing {
            return Ok(());
        }
        self.operation_vims_written = true;
        let Some(instance) = self
            .with_operation_vims()
            .filter(|i| i.vim_connection_info != self.instance.vim_connection_info)
        else {
            return Ok(());
        };
        let occ = self.occ.clone();
        self.commit(occ, None, Some(instance), Vec::new()).await
    }

    /// The grant of this occurrence: kept in memory, else read back from the store (after a
    /// restart or for a retry), else asked for now (an occurrence that failed before it had
    /// one). A rejection at this point fails the step.
    async fn granted(&mut self) -> Result<Option<Arc<Grant>>, LcmError> {
        if self.grant.is_some() || self.load_stored_grant().await? {
            return Ok(self.grant.clone());
        }
        match self.request_grant().await? {
            GrantAsked::Granted | GrantAsked::NotNeeded => {
                // Asked in the middle of a run (a retry of an occurrence that failed before
                // it had one): keep it now, before the step that uses it changes anything.
                if let Some(value) = self.unsaved_grant.take() {
                    self.inner
                        .store
                        .put_op_occ_data(&self.occ.id, GRANT_KEY, &value)
                        .await
                        .map_err(|e| LcmError::Store(e.to_string()))?;
                }
                Ok(self.grant.clone())
            }
            GrantAsked::Rejected(problem) => Err(LcmError::Grant {
                nfvo: self.inner.nfvo.describe(),
                message: problem.detail,
            }),
        }
    }

    async fn run_fresh(&mut self) -> Result<(), Stop> {
        let needs_vims = self
            .ctx
            .forward
            .steps
            .iter()
            .any(|s| matches!(s, Step::Infra(_) | Step::Hook(_)));
        let map = if needs_vims {
            apply::effective_vims(&self.instance, &self.request)
        } else {
            IndexMap::new()
        };
        // Preparing may wait on a VIM registry: a cancellation ends it at once.
        let prepared: Result<Option<Vec<ResolvedVim>>, LcmError> = if self.cancel_now().is_some() {
            Ok(None)
        } else {
            let mut rx = self.cancel_rx.clone();
            let cancelled = async move {
                if rx.wait_for(Option::is_some).await.is_err() {
                    std::future::pending::<()>().await;
                }
            };
            tokio::select! {
                r = resolve_vims(self.inner.vims.clone(), map.clone()) => r.map(Some),
                () = cancelled => Ok(None),
            }
        };
        let row = journal::plan_row(Phase::Forward, &self.ctx.plan_row(), self.inner.now());
        let starting = note(&self.inner, &self.occ);
        match prepared {
            Ok(None) => {
                // Nothing was done: cancelling a STARTING occurrence rolls it back.
                let to = moved(&self.inner, &self.occ, Event::Cancelled)?;
                let n = note(&self.inner, &to);
                self.commit(to, Some(row), None, vec![starting, n]).await?;
                self.clear_cancel_request().await;
                Ok(())
            }
            Err(e) => {
                let mut to = moved(&self.inner, &self.occ, Event::StepFailed)?;
                to.error = Some(lcm_problem("prepare:vims", 0, 1, &e, &[]));
                let n = note(&self.inner, &to);
                self.commit(to, Some(row), None, vec![starting, n]).await?;
                Ok(())
            }
            Ok(Some(resolved)) => {
                // The NFVO may take its time (an asynchronous grant): a cancellation ends the
                // wait, and nothing was done yet.
                let mut rx = self.cancel_rx.clone();
                let cancelled = async move {
                    if rx.wait_for(Option::is_some).await.is_err() {
                        std::future::pending::<()>().await;
                    }
                };
                let asked = tokio::select! {
                    r = self.request_grant() => Some(r),
                    () = cancelled => None,
                };
                let Some(asked) = asked else {
                    let mut to = moved(&self.inner, &self.occ, Event::Cancelled)?;
                    if let Some(mode) = self.cancel_now() {
                        to.error = Some(cancel_problem(mode, "while waiting for the grant".into()));
                    }
                    let n = note(&self.inner, &to);
                    self.commit(to, Some(row), None, vec![starting, n]).await?;
                    self.clear_cancel_request().await;
                    return Ok(());
                };
                match asked {
                    Ok(GrantAsked::Granted | GrantAsked::NotNeeded) => {}
                    Ok(GrantAsked::Rejected(problem)) => {
                        // Nothing was done: a rejected grant rolls the occurrence back (SOL003).
                        let mut to = moved(&self.inner, &self.occ, Event::GrantRejected)?;
                        to.error = Some(problem);
                        let n = note(&self.inner, &to);
                        self.commit(to, Some(row), None, vec![starting, n]).await?;
                        return Ok(());
                    }
                    Err(e) => {
                        let mut to = moved(&self.inner, &self.occ, Event::StepFailed)?;
                        to.error = Some(lcm_problem("prepare:grant", 0, 1, &e, &[]));
                        let n = note(&self.inner, &to);
                        self.commit(to, Some(row), None, vec![starting, n]).await?;
                        return Ok(());
                    }
                }
                let instance = self.with_operation_vims();
                self.operation_vims_written = true;
                let effective = instance
                    .as_ref()
                    .unwrap_or(&self.instance)
                    .vim_connection_info
                    .clone()
                    .unwrap_or_default();
                let (map, resolved) = if needs_vims && effective != map {
                    // The grant brought VIM connections: resolve them before anything is done.
                    match resolve_vims(self.inner.vims.clone(), effective.clone()).await {
                        Ok(r) => (effective, r),
                        Err(e) => {
                            let mut to = moved(&self.inner, &self.occ, Event::StepFailed)?;
                            to.error = Some(lcm_problem("prepare:vims", 0, 1, &e, &[]));
                            let n = note(&self.inner, &to);
                            self.commit(to, Some(row), None, vec![starting, n]).await?;
                            return Ok(());
                        }
                    }
                } else {
                    (map, resolved)
                };
                let to = moved(&self.inner, &self.occ, Event::Begin)?;
                let n = note(&self.inner, &to);
                self.commit(to, Some(row), instance, vec![starting, n])
                    .await?;
                self.resolved = Some((map, resolved));
                self.run_phase(Phase::Forward, 0).await
            }
        }
    }

    async fn run_phase(&mut self, phase: Phase, start: usize) -> Result<(), Stop> {
        let plan = self.ctx.plan(phase);
        let n = plan.steps.len();
        let final_event = match phase {
            Phase::Forward => Event::Succeeded,
            Phase::Rollback => Event::RolledBack,
        };
        if start >= n {
            let to = moved(&self.inner, &self.occ, final_event)?;
            let notes = vec![note(&self.inner, &to)];
            let instance = self.final_instance(final_event, None).await;
            self.commit(to, None, instance, notes).await?;
            return Ok(());
        }
        for (i, step) in plan.steps.iter().enumerate().skip(start) {
            let name = step.name();
            if *self.inner.shutdown.borrow() {
                return Err(Stop::Shutdown);
            }
            if self.lost.load(Ordering::SeqCst) {
                return Err(Stop::Lost("the lease could not be renewed".into()));
            }
            if let Some(mode) = self.cancel_now() {
                let mut to = moved(&self.inner, &self.occ, Event::Cancelled)?;
                to.error = Some(cancel_problem(
                    mode,
                    format!("before step {name} ({}/{n})", i + 1),
                ));
                let notes = vec![note(&self.inner, &to)];
                self.commit(to, None, None, notes).await?;
                self.clear_cancel_request().await;
                return Ok(());
            }
            let span =
                tracing::info_span!("lcm.step", step = %name, index = i, phase = phase.as_str());
            let result = self.step(step, i, n).instrument(span).await?;
            let now = self.inner.now();
            match result {
                Ok((occ, instance)) => {
                    let event = if self.pending.is_some() {
                        Some(Event::Cancelled)
                    } else if i + 1 == n {
                        Some(final_event)
                    } else {
                        None
                    };
                    let mut notes = Vec::new();
                    let occ = match event {
                        None => occ,
                        Some(ev) => {
                            let mut to = moved(&self.inner, &occ, ev)?;
                            if let (Event::Cancelled, Some(mode)) = (ev, self.pending) {
                                to.error = Some(cancel_problem(
                                    mode,
                                    format!("after step {name} ({}/{n})", i + 1),
                                ));
                            }
                            notes.push(note(&self.inner, &to));
                            to
                        }
                    };
                    let row = journal::step_row(
                        name.clone(),
                        StepRow {
                            phase,
                            index: i,
                            error: None,
                            interrupted: false,
                        },
                        StepOutcome::Completed,
                        now,
                    );
                    let instance = match event {
                        Some(ev) => self.final_instance(ev, instance).await,
                        None => instance,
                    };
                    self.commit(occ, Some(row), instance, notes).await?;
                    if let Some(ev) = event {
                        if ev == Event::Cancelled {
                            self.clear_cancel_request().await;
                        }
                        return Ok(());
                    }
                }
                Err(problem) => {
                    let cancelled = self.pending.is_some();
                    let event = if cancelled {
                        Event::Cancelled
                    } else {
                        Event::StepFailed
                    };
                    let mut to = moved(&self.inner, &self.occ, event)?;
                    to.error = Some(problem.clone());
                    let row = journal::step_row(
                        name.clone(),
                        StepRow {
                            phase,
                            index: i,
                            error: Some(problem),
                            interrupted: false,
                        },
                        StepOutcome::Failed,
                        now,
                    );
                    let notes = vec![note(&self.inner, &to)];
                    self.commit(to, Some(row), None, notes).await?;
                    if cancelled {
                        self.clear_cancel_request().await;
                    }
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// The instance to write with the final transition: a rolled-back operation leaves no
    /// VIM connection its request brought (the rollback plan may have had no step to remove
    /// them, e.g. when the first hook failed).
    fn finished_instance(
        &self,
        event: Event,
        instance: Option<VnfInstance>,
    ) -> Option<VnfInstance> {
        if event != Event::RolledBack {
            return instance;
        }
        let mut out = instance.clone().unwrap_or_else(|| self.instance.clone());
        apply::restore_request_vims(&mut out, &self.ctx.before, &self.request);
        if instance.is_none() && out == self.instance {
            return None;
        }
        Some(out)
    }

    fn budget(&self, step: &Step) -> Duration {
        let base = self.inner.config.step_timeout;
        let extra = |s: Option<u32>| Duration::from_secs(u64::from(s.unwrap_or(0)));
        match step {
            Step::Hook(h) => h.timeout_seconds.map(Duration::from_secs).unwrap_or(base),
            Step::Infra(InfraStep::Terminate {
                graceful_timeout_seconds,
                ..
            }) => base + extra(*graceful_timeout_seconds),
            Step::Infra(InfraStep::Operate {
                graceful_stop_timeout_seconds,
                ..
            }) => base + extra(*graceful_stop_timeout_seconds),
            _ => base,
        }
    }

    async fn vims(&mut self) -> Result<Vec<ResolvedVim>, LcmError> {
        let map = self
            .instance
            .vim_connection_info
            .clone()
            .unwrap_or_default();
        if let Some((m, v)) = &self.resolved
            && *m == map
        {
            return Ok(v.clone());
        }
        let v = resolve_vims(self.inner.vims.clone(), map.clone()).await?;
        self.resolved = Some((map, v.clone()));
        Ok(v)
    }

    fn flavour_id(&self) -> Option<String> {
        self.instance
            .instantiated_vnf_info
            .as_ref()
            .map(|i| i.flavour_id.clone())
            .or_else(|| self.ctx.forward.flavour_id.clone())
    }

    /// Runs one step; `Err(problem)` when it failed.
    async fn step(&mut self, step: &Step, i: usize, n: usize) -> Result<StepResult, Stop> {
        let name = step.name();
        match step {
            Step::ApplyModifications => Ok(self
                .apply_modifications()
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
                let driver = match select_infra(
                    &self.inner,
                    &self.instance,
                    &map,
                    &self.ctx.vnfd.vnfd,
                    Some(&flavour_id),
                    &self.request,
                    Some(s),
                ) {
                    Ok(d) => d,
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
                    control: RunControl::new(budget, self.flag.clone()),
                };
                let fut: StepFuture<InfraOutcome> = Box::pin(panics::caught(&name, async move {
                    vnfm_driver_api::execute(&*driver, &req).await
                }));
                Ok(match self.drive(fut, budget, &name).await? {
                    Ok(out) => Ok(self.after_infra(s, out)),
                    Err(e) => Err(self.driver_problem(&name, i, n, e, &vims)),
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
                };
                let fut: StepFuture<HookOutcome> =
                    Box::pin(panics::caught(&name, async move { mgmt.call(&call).await }));
                Ok(match self.drive(fut, budget, &name).await? {
                    Ok(out) => self
                        .after_hook(out)
                        .await?
                        .map_err(|e| lcm_problem(&name, i, n, &e, &vims)),
                    Err(e) => Err(self.driver_problem(&name, i, n, e, &vims)),
                })
            }
        }
    }

    fn driver_problem(
        &self,
        name: &str,
        i: usize,
        n: usize,
        e: DriverError,
        vims: &[ResolvedVim],
    ) -> ProblemDetails {
        match (self.pending, &e) {
            (Some(mode), DriverError::Cancelled { .. }) => {
                let mut p =
                    cancel_problem(mode, format!("during step {name} ({}/{n}): {e}", i + 1));
                p.extra.insert("step".into(), name.into());
                p
            }
            _ => step_problem(name, i, n, e.into_problem_details(), vims),
        }
    }

    /// Awaits a driver call while honouring cancellation requests: the first one is recorded
    /// (`isCancelPending`); FORCEFUL also trips the step's cancellation flag and abandons the
    /// call if it does not stop within the grace period. The step's deadline is enforced even
    /// for a driver that never checks it.
    async fn drive<T>(
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

    async fn mark_cancel_pending(
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

    fn after_infra(
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

    /// Applies a hook's outcome: registers the VIMs it created, stores its error-handling
    /// data, and returns the occurrence and the instance to write with the step. When the hook
    /// asks to deregister VIMs, the instance change is written first (it drops the
    /// connections to those VIMs, and the registry refuses to delete a VIM an instance still
    /// references), then the VIMs are deregistered.
    async fn after_hook(
        &mut self,
        out: HookOutcome,
    ) -> Result<Result<(VnfLcmOpOcc, Option<VnfInstance>), LcmError>, Stop> {
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
        if let Some(data) = &out.error_handling_data
            && let Err(e) = self
                .inner
                .store
                .put_op_occ_data(&self.occ.id, HOOK_DATA_KEY, data)
                .await
        {
            return Ok(Err(store_err(e)));
        }
        let changes_instance = !out.vim_connection_info_add.is_empty()
            || !out.vim_connection_info_remove.is_empty()
            || !registered.is_empty()
            || !out.vims_to_deregister.is_empty()
            || out.metadata.is_some()
            || out.extensions.is_some();
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
    /// a completed TERMINATE also drops its connections to VIMs other instances' hooks
    /// registered, so that it no longer keeps their creator from terminating.
    async fn final_instance(
        &self,
        event: Event,
        instance: Option<VnfInstance>,
    ) -> Option<VnfInstance> {
        let out = self.finished_instance(event, instance);
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

    fn apply_modifications(&self) -> Result<(VnfLcmOpOcc, Option<VnfInstance>), LcmError> {
        let OperationParams::ModifyInfo(req) = &self.request else {
            return Err(LcmError::Inconsistent(format!(
                "a {} plan contains a MODIFY_INFO step",
                op_name(self.occ.operation)
            )));
        };
        let (mut instance, mut changed) = crate::plan::apply_modifications(&self.instance, req)?;
        if let Some(id) = &req.vnfd_id {
            let v = self.inner.onboarded(id.as_str())?.vnfd;
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

/// Renews the lease of a running occurrence and watches the store for cancellation requests
/// made through other processes. On losing the lease it raises the run's flags: the step in
/// progress is cancelled and the run's next write is refused anyway.
async fn keep_lease(
    inner: Arc<Inner>,
    id: VnfLcmOpOccId,
    cancel: watch::Sender<Option<CancelModeType>>,
    lost: Arc<AtomicBool>,
    flag: CancellationFlag,
) {
    let cfg = &inner.config;
    let tick = cfg
        .cancel_poll_interval
        .min(cfg.lease_renew_interval)
        .max(Duration::from_millis(10));
    let mut since_renewal = Duration::ZERO;
    loop {
        tokio::time::sleep(tick).await;
        since_renewal += tick;
        if since_renewal >= cfg.lease_renew_interval {
            since_renewal = Duration::ZERO;
            let until = inner.now().plus(cfg.lease_ttl);
            match inner.store.renew_lease(&id, &cfg.runner_id, until).await {
                Ok(()) => {}
                Err(e @ (StoreError::Conflict(_) | StoreError::NotFound { .. })) => {
                    tracing::warn!(error = %e, "lease lost");
                    lost.store(true, Ordering::SeqCst);
                    flag.cancel();
                    return;
                }
                Err(e) => tracing::warn!(error = %e, "lease renewal failed; retrying"),
            }
        }
        if cancel.borrow().is_none()
            && let Ok(Some(v)) = inner.store.get_op_occ_data(&id, CANCEL_KEY).await
            && let Some(mode) = parse_cancel(&v)
        {
            cancel.send_replace(Some(mode));
        }
    }
}
