//! The step loop, shaped as a reconciler: preparing a fresh occurrence (VIMs, grant), then
//! [`Run::advance`] once per step: check that the run may go on, run one step, commit its
//! outcome in one transaction, say what comes next. [`Run::finish`] writes every transition
//! that ends a run, a preparation or a step.

use super::*;

/// What comes after one pass of the step loop.
enum Next {
    /// Run the step at this index.
    Step(usize),
    /// The occurrence was moved out of the phase (at rest, or waiting for a client).
    Done,
}

/// How preparing a fresh occurrence ended.
enum Prepared {
    /// Ready to begin: the resolved VIMs, and the instance to write with `Begin` (with the
    /// operation's VIM connections) when it changes.
    Ready {
        vims: (IndexMap<String, VimConnectionInfo>, Vec<ResolvedVim>),
        instance: Option<Box<VnfInstance>>,
    },
    /// Nothing was done: the occurrence moves by the event, with the error when given.
    Ended(Event, Option<ProblemDetails>),
}

/// `fut`'s output, or `None` when a cancellation arrives on `rx` first.
async fn until_cancelled<T>(
    mut rx: watch::Receiver<Option<CancelModeType>>,
    fut: impl Future<Output = T>,
) -> Option<T> {
    let cancelled = async move {
        if rx.wait_for(Option::is_some).await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        r = fut => Some(r),
        () = cancelled => None,
    }
}

impl Run {
    /// Moves `from` by `event` (setting `error` when given), notifies the transition after
    /// `notes`, and commits it with `journal` and `instance` in one transaction. A run ended by
    /// a cancellation then clears the stored cancellation request.
    pub(super) async fn finish(
        &mut self,
        from: &VnfLcmOpOcc,
        event: Event,
        error: Option<ProblemDetails>,
        journal: Option<vnfm_store::JournalStep>,
        instance: Option<VnfInstance>,
        mut notes: Vec<LccnNotification>,
    ) -> Result<(), WriteError> {
        let mut to = moved(&self.inner, from, event).map_err(WriteError::Failed)?;
        log_failure(from, event, error.as_ref());
        if error.is_some() {
            to.error = error;
        }
        notes.push(note(&self.inner, &to));
        self.commit(to, journal, instance, notes).await?;
        if event == Event::Cancelled {
            self.clear_cancel_request().await;
        }
        Ok(())
    }

    /// Prepares a fresh occurrence (its VIMs, its grant), writes `STARTING -> PROCESSING`
    /// (or the transition that ends it before anything was done) and runs the forward plan.
    pub(super) async fn run_fresh(&mut self) -> Result<(), Stop> {
        if self.begin().await? {
            self.run_phase(Phase::Forward, 0).await
        } else {
            Ok(())
        }
    }

    /// Prepares a fresh occurrence (its VIMs, its grant) and writes `STARTING -> PROCESSING`,
    /// or the transition that ends it before anything was done; whether it began.
    pub(super) async fn begin(&mut self) -> Result<bool, WriteError> {
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
        let owner = self.instance.id.clone();
        let resolving = resolve_vims(self.inner.vims.clone(), &owner, map.clone());
        let resolved = if self.cancel_now().is_some() {
            None
        } else {
            until_cancelled(self.cancel_rx.clone(), resolving).await
        };
        let row = journal::plan_row(Phase::Forward, &self.ctx.plan_row(), self.inner.now());
        let starting = note(&self.inner, &self.occ);
        let prepared = match resolved {
            // Nothing was done: cancelling a STARTING occurrence rolls it back.
            None => Prepared::Ended(Event::Cancelled, None),
            Some(Err(e)) => Prepared::Ended(
                Event::StepFailed,
                Some(lcm_problem("prepare:vims", 0, 1, &e, &[])),
            ),
            Some(Ok(resolved)) => self.prepare_grant(needs_vims, map, resolved).await,
        };
        let from = self.occ.clone();
        match prepared {
            Prepared::Ended(event, error) => {
                self.finish(&from, event, error, Some(row), None, vec![starting])
                    .await?;
                Ok(false)
            }
            Prepared::Ready { vims, instance } => {
                let instance = instance.map(|i| *i);
                self.finish(
                    &from,
                    Event::Begin,
                    None,
                    Some(row),
                    instance,
                    vec![starting],
                )
                .await?;
                self.keep_resolved(vims);
                Ok(true)
            }
        }
    }

    /// Asks for the grant (a cancellation ends the wait), adds what it brings to the
    /// instance's VIM connections and resolves them when they changed.
    async fn prepare_grant(
        &mut self,
        needs_vims: bool,
        map: IndexMap<String, VimConnectionInfo>,
        resolved: Vec<ResolvedVim>,
    ) -> Prepared {
        // The NFVO may take its time (an asynchronous grant): a cancellation ends the wait,
        // and nothing was done yet.
        let rx = self.cancel_rx.clone();
        let Some(asked) = until_cancelled(rx, self.request_grant()).await else {
            let error = self
                .cancel_now()
                .map(|mode| cancel_problem(mode, "while waiting for the grant".into()));
            return Prepared::Ended(Event::Cancelled, error);
        };
        match asked {
            Ok(GrantAsked::Granted | GrantAsked::NotNeeded) => {}
            // Nothing was done: a rejected grant rolls the occurrence back (SOL003).
            Ok(GrantAsked::Rejected(problem)) => {
                return Prepared::Ended(Event::GrantRejected, Some(problem));
            }
            Err(e) => {
                let problem = lcm_problem("prepare:grant", 0, 1, &e, &[]);
                return Prepared::Ended(Event::StepFailed, Some(problem));
            }
        }
        let instance = self.with_operation_vims().map(Box::new);
        self.operation_vims_written = true;
        let effective = instance
            .as_ref()
            .map_or(&self.instance, |i| &**i)
            .vim_connection_info
            .clone()
            .unwrap_or_default();
        if !needs_vims || effective == map {
            return Prepared::Ready {
                vims: (map, resolved),
                instance,
            };
        }
        // The grant brought VIM connections: resolve them before anything is done.
        match resolve_vims(
            self.inner.vims.clone(),
            &self.instance.id,
            effective.clone(),
        )
        .await
        {
            Ok(r) => Prepared::Ready {
                vims: (effective, r),
                instance,
            },
            Err(e) => Prepared::Ended(
                Event::StepFailed,
                Some(lcm_problem("prepare:vims", 0, 1, &e, &[])),
            ),
        }
    }

    /// Runs `phase` from step `start` until the occurrence leaves it.
    pub(super) async fn run_phase(&mut self, phase: Phase, start: usize) -> Result<(), Stop> {
        let plan = self.ctx.plan(phase);
        let mut next = Next::Step(start);
        while let Next::Step(i) = next {
            next = self.advance(phase, &plan, i).await?;
        }
        Ok(())
    }

    /// One pass of the loop: stops at a shutdown, a lost lease or a cancellation; otherwise
    /// runs step `i` of `plan` and commits its outcome (with the transition it ends the phase
    /// with, if any) in one transaction.
    async fn advance(&mut self, phase: Phase, plan: &Plan, i: usize) -> Result<Next, Stop> {
        let n = plan.steps.len();
        let final_event = match phase {
            Phase::Forward => Event::Succeeded,
            Phase::Rollback => Event::RolledBack,
        };
        let Some(step) = plan.steps.get(i) else {
            // Nothing (left) to run.
            let from = self.occ.clone();
            let instance = self.final_instance(final_event, None).await;
            self.finish(&from, final_event, None, None, instance, Vec::new())
                .await?;
            return Ok(Next::Done);
        };
        let name = step.name();
        if *self.inner.shutdown.borrow() {
            return Err(Stop::Shutdown { phase, next: i });
        }
        self.confirm_lease().await?;
        if let Some(mode) = self.cancel_now() {
            let error = cancel_problem(mode, format!("before step {name} ({}/{n})", i + 1));
            let from = self.occ.clone();
            self.finish(&from, Event::Cancelled, Some(error), None, None, Vec::new())
                .await?;
            return Ok(Next::Done);
        }
        let span = tracing::info_span!("lcm.step", step = %name, index = i, phase = phase.as_str());
        let started_at = self.inner.now();
        let result = self.step(step, i, n).instrument(span).await?;
        let now = self.inner.now();
        let (outcome, error) = match &result {
            Ok(_) => (StepOutcome::Completed, None),
            Err(problem) => (StepOutcome::Failed, Some(problem.clone())),
        };
        let row = journal::step_row(
            name.clone(),
            StepRow {
                phase,
                index: i,
                error,
                interrupted: false,
                started_at: Some(started_at.millis()),
            },
            outcome,
            now,
        );
        let cancelled = self.pending;
        match result {
            Ok((occ, instance)) => {
                let event = if cancelled.is_some() {
                    Event::Cancelled
                } else if i + 1 == n {
                    final_event
                } else {
                    self.commit(occ, Some(row), instance, Vec::new()).await?;
                    return Ok(Next::Step(i + 1));
                };
                let error = cancelled
                    .map(|mode| cancel_problem(mode, format!("after step {name} ({}/{n})", i + 1)));
                let instance = self.final_instance(event, instance).await;
                self.finish(&occ, event, error, Some(row), instance, Vec::new())
                    .await?;
            }
            Err(problem) => {
                let event = if cancelled.is_some() {
                    Event::Cancelled
                } else {
                    Event::StepFailed
                };
                let from = self.occ.clone();
                self.finish(&from, event, Some(problem), Some(row), None, Vec::new())
                    .await?;
            }
        }
        Ok(Next::Done)
    }
}
