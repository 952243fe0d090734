//! Occurrence records: creating, moving and writing an occurrence, its notifications and the
//! ProblemDetails of its errors.

use super::*;

/// The tracing span of an occurrence.
pub(crate) fn op_span(occ: &VnfLcmOpOcc) -> tracing::Span {
    tracing::info_span!(
        "lcm.op_occ",
        op_occ_id = %occ.id,
        vnf_instance_id = %occ.vnf_instance_id,
        operation = %op_name(occ.operation),
        vim_id = tracing::field::Empty,
    )
}

/// `_links` of an occurrence in `state`, into `version` of the lifecycle interface: `cancel`
/// while it runs, `retry`/`rollback`/`fail` in `FAILED_TEMP` (the core stores them for `V2`;
/// an API serving another version renders them for it).
pub fn op_occ_links(
    links: &dyn ResourceLinks,
    id: &VnfLcmOpOccId,
    instance_id: &VnfInstanceId,
    state: State,
    version: ApiVersion,
) -> VnfLcmOpOccLinks {
    let id = id.as_str();
    let task = |task: &str| {
        Some(Link::new(links.href(LinkTarget::OpOccTask {
            version,
            id,
            task,
        })))
    };
    let running = matches!(
        state,
        State::Starting | State::Processing | State::RollingBack
    );
    let failed_temp = state == State::FailedTemp;
    VnfLcmOpOccLinks {
        self_: Link::new(links.href(LinkTarget::OpOcc { version, id })),
        vnf_instance: Link::new(links.href(LinkTarget::Instance {
            version,
            id: instance_id.as_str(),
        })),
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
        links: op_occ_links(
            &*inner.config.links,
            &id,
            instance_id,
            State::Starting,
            ApiVersion::V2,
        ),
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
    out.links = op_occ_links(
        &*inner.config.links,
        &out.id,
        &out.vnf_instance_id,
        to,
        ApiVersion::V2,
    );
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
    notifications::op_occ_notification(occ, &*inner.config.links, inner.now_datetime())
}

/// Why a write of the runner did not happen.
pub(crate) enum WriteError {
    /// Another runner owns the occurrence now (lease lost, occurrence finished or changed).
    Lost(String),
    /// The write failed.
    Failed(LcmError),
    /// An occurrence that was to be created by this write was not: what its request was
    /// checked against changed ([`Run::begin_at_once`]).
    NotBegun,
}

impl WriteError {
    /// The error to answer a caller with.
    pub(crate) fn into_lcm(self) -> LcmError {
        match self {
            WriteError::Lost(w) => LcmError::conflict(w),
            WriteError::Failed(e) => e,
            WriteError::NotBegun => LcmError::conflict(
                "the VNF instance changed while the request was processed; send it again",
            ),
        }
    }
}

/// How long a write of the runner waits for a database that is unavailable
/// ([`StoreError::Unavailable`]: restarting, a standby being promoted) before the run gives up
/// and leaves the occurrence to recovery.
pub(crate) const UNAVAILABLE_PATIENCE: Duration = Duration::from_secs(300);

/// Routes `notes` into `rec.outbox` and writes `rec` in one transaction, retrying a few times
/// when the database fails transiently, and for up to [`UNAVAILABLE_PATIENCE`] (unless the
/// runner shuts down) while it is unavailable: the outcome of a step that ran is recorded
/// once the database is back, rather than the step run again by recovery. The write is
/// fenced by the lease's owner, so it is refused ([`WriteError::Lost`]) if another runner
/// took the occurrence over meanwhile.
pub(crate) async fn write(
    inner: &Inner,
    rec: &mut StepRecord,
    notes: &[LccnNotification],
    instance: Option<&VnfInstance>,
) -> Result<StepWritten, WriteError> {
    route(inner, rec, notes, instance)
        .await
        .map_err(WriteError::Failed)?;
    let mut attempt = 0u32;
    let mut unavailable: Option<(tokio::time::Instant, Duration)> = None;
    loop {
        match inner.store.record_step(rec).await {
            Ok(w) => {
                if let Some((since, _)) = unavailable {
                    tracing::info!(op_occ_id = %rec.occ.id, waited_ms = since.elapsed().as_millis() as u64, "the database is back: written");
                }
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
            Err(StoreError::Unavailable(m))
                if !*inner.shutdown.borrow()
                    && unavailable
                        .is_none_or(|(since, _)| since.elapsed() < UNAVAILABLE_PATIENCE) =>
            {
                let (_, pause) = unavailable.get_or_insert_with(|| {
                    tracing::warn!(op_occ_id = %rec.occ.id, error = %m, "the database is unavailable: the write waits for it");
                    (tokio::time::Instant::now(), Duration::from_millis(100))
                });
                let mut stop = inner.shutdown.subscribe();
                tokio::select! {
                    () = tokio::time::sleep(*pause) => {}
                    _ = stop.wait_for(|s| *s) => {}
                }
                *pause = (*pause * 2).min(Duration::from_secs(1));
            }
            Err(e) => return Err(WriteError::Failed(store_err(e))),
        }
    }
}

/// Routes `notes` into `rec.outbox`, about the instance as `rec` leaves it, else as the
/// caller last saw it (`instance`).
async fn route(
    inner: &Inner,
    rec: &mut StepRecord,
    notes: &[LccnNotification],
    instance: Option<&VnfInstance>,
) -> Result<(), LcmError> {
    let about = rec.instance.as_ref().map(|(i, _)| i).or(instance);
    let mut rows = Vec::new();
    for n in notes {
        rows.extend(inner.router.route(n, about).await?);
    }
    rec.outbox.extend(rows);
    Ok(())
}

/// Routes `notes` into `rec.outbox` and creates `started` with its first move `rec` in one
/// transaction ([`vnfm_store::OpOccStore::begin_operation_keyed`], with `start`'s client key); `None` when `start`'s condition no
/// longer held and nothing was written. Not retried: the caller is still answering the
/// request.
pub(crate) async fn write_begun(
    inner: &Inner,
    started: &VnfLcmOpOcc,
    start: &Unstored,
    rec: &mut StepRecord,
    notes: &[LccnNotification],
    instance: &VnfInstance,
) -> Result<Option<StepWritten>, LcmError> {
    route(inner, rec, notes, Some(instance)).await?;
    let written = inner
        .store
        .begin_operation_keyed(
            started,
            &start.lease,
            &start.condition,
            rec,
            start.key.as_ref(),
        )
        .await
        .map_err(store_err)?;
    if written.is_some() {
        tracing::info!(
            op_occ_id = %rec.occ.id,
            to = ?rec.occ.operation_state,
            "operation occurrence created and begun"
        );
    }
    Ok(written)
}

/// Ends an occurrence that was created in `STARTING` but cannot run (its request no longer
/// applies to the instance): `ROLLED_BACK` with `error`, nothing having been done.
pub(crate) async fn abort_starting(inner: &Inner, occ: VnfLcmOpOcc, err: &LcmError) {
    let Ok(mut to) = moved(inner, &occ, Event::GrantRejected) else {
        return;
    };
    to.error = Some(problem(
        "Operation not started",
        err.kind(),
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

/// Moves an occurrence this process holds the lease of by `event` (with `error`, a journal
/// row and the instance at its version, when given) in one write, outside any run.
pub(crate) async fn record_transition(
    inner: &Inner,
    occ: &VnfLcmOpOcc,
    version: Version,
    event: Event,
    error: Option<ProblemDetails>,
    journal: Option<vnfm_store::JournalStep>,
    instance: Option<(VnfInstance, Version)>,
) -> Result<VnfLcmOpOcc, LcmError> {
    let mut to = moved(inner, occ, event)?;
    log_failure(occ, event, error.as_ref());
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
        instance: instance.map(|(mut i, v)| {
            i.links = instance_links(
                &*inner.config.links,
                &i.id,
                i.instantiation_state,
                ApiVersion::V2,
            );
            (i, v)
        }),
        outbox: Vec::new(),
        data: Vec::new(),
    };
    write(inner, &mut rec, &notes, None)
        .await
        .map_err(WriteError::into_lcm)?;
    Ok(rec.occ)
}

pub(super) fn problem(title: &str, kind: ErrorKind, detail: String) -> ProblemDetails {
    ProblemDetails::of_kind(kind, title, detail)
}

pub(super) fn cancel_mode_name(mode: CancelModeType) -> &'static str {
    match mode {
        CancelModeType::Graceful => "GRACEFUL",
        CancelModeType::Forceful => "FORCEFUL",
    }
}

pub(super) fn cancel_problem(mode: CancelModeType, when: String) -> ProblemDetails {
    let mut p = problem(
        "Operation cancelled",
        ErrorKind::Conflict,
        format!(
            "the operation was cancelled ({}) {when}",
            cancel_mode_name(mode)
        ),
    );
    p.extra
        .insert("cancelMode".into(), cancel_mode_name(mode).into());
    p
}

pub(super) fn step_problem(
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

pub(super) fn lcm_problem(
    name: &str,
    i: usize,
    n: usize,
    e: &LcmError,
    vims: &[ResolvedVim],
) -> ProblemDetails {
    let mut p = problem(VNFM_STEP_FAILED, e.kind(), e.to_string());
    p.extra.insert("layer".into(), "vnfm".into());
    p.extra.insert(
        "retryable".into(),
        matches!(e.kind(), ErrorKind::Unavailable | ErrorKind::Timeout).into(),
    );
    step_problem(name, i, n, p, vims)
}

/// The title of a failure of the VNFM's own part of a step (a VIM it cannot resolve, a
/// grant it cannot ask for, a record it cannot read), as opposed to a driver's.
pub(super) const VNFM_STEP_FAILED: &str = "VNFM lifecycle step failed";

/// Logs the failure that moves `occ` to `FAILED_TEMP`, once, at warn: the server log says why
/// an operation failed, not only that its state changed.
pub(super) fn log_failure(occ: &VnfLcmOpOcc, event: Event, error: Option<&ProblemDetails>) {
    if event != Event::StepFailed {
        return;
    }
    let Some(p) = error else { return };
    let field = |k: &str| {
        p.extra
            .get(k)
            .map(|v| v.to_string().trim_matches('"').to_owned())
    };
    tracing::warn!(
        op_occ_id = %occ.id,
        vnf_instance_id = %occ.vnf_instance_id,
        operation = %op_name(occ.operation),
        step = field("step").as_deref().unwrap_or("-"),
        layer = field("layer").as_deref().unwrap_or("vnfm"),
        retryable = field("retryable").as_deref().unwrap_or("false"),
        title = p.title.as_deref().unwrap_or(""),
        error = %p.detail,
        "operation step failed"
    );
}

/// Parses a stored cancellation request.
pub(crate) fn parse_cancel(v: &serde_json::Value) -> Option<CancelModeType> {
    serde_json::from_value(v.get("cancelMode")?.clone()).ok()
}
