//! The lease of a running occurrence, renewed while it runs, and the fence that keeps a run
//! whose lease lapsed (its process was stopped, or could not reach the store) from starting a
//! step of an occurrence another runner may have taken over.

use super::*;

/// Renews the lease of a running occurrence every [`LcmConfig::lease_renew_interval`] and
/// watches the store for cancellation requests made through other processes. On losing the
/// lease (another runner holds it, or it lapsed by the runner's clock without a renewal
/// getting through) it raises the run's flags: the step in progress is cancelled and the
/// run's next write is refused anyway.
///
/// [`LcmConfig::lease_renew_interval`]: crate::LcmConfig::lease_renew_interval
pub(super) async fn keep_lease(
    inner: Arc<Inner>,
    id: VnfLcmOpOccId,
    cancel: watch::Sender<Option<CancelModeType>>,
    lost: Arc<AtomicBool>,
    lease_until: Arc<AtomicI64>,
    flag: CancellationFlag,
) {
    let cfg = &inner.config;
    let tick = cfg
        .cancel_poll_interval
        .min(cfg.lease_renew_interval)
        .max(Duration::from_millis(10));
    // Measured, not counted in ticks: after the process was stopped, one tick is late by
    // however long it was stopped.
    let mut renewed = tokio::time::Instant::now();
    loop {
        tokio::time::sleep(tick).await;
        if renewed.elapsed() >= cfg.lease_renew_interval {
            let attempt = tokio::time::Instant::now();
            let until = inner.now().plus(cfg.lease_ttl);
            match inner.store.renew_lease(&id, &cfg.runner_id, until).await {
                Ok(()) => {
                    lease_until.store(until.millis(), Ordering::SeqCst);
                    renewed = attempt;
                }
                Err(e @ (StoreError::Conflict(_) | StoreError::NotFound { .. })) => {
                    tracing::warn!(error = %e, "lease lost");
                    lost.store(true, Ordering::SeqCst);
                    flag.cancel();
                    return;
                }
                Err(e) if inner.now().millis() >= lease_until.load(Ordering::SeqCst) => {
                    // Another runner may claim it from now on: stop before it does.
                    tracing::warn!(error = %e, "lease lapsed without a renewal: stopping the occurrence here");
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

impl Run {
    /// Makes sure the run still holds its lease before it starts a step: when less than a
    /// renewal interval of it is left by the runner's clock (the process was stopped, or the
    /// renewals did not get through), it is renewed first, and a lease another runner took
    /// stops the run. A stopped runner that wakes up therefore never starts a step of an
    /// occurrence another one took over.
    pub(super) async fn confirm_lease(&mut self) -> Result<(), Stop> {
        if self.lost.load(Ordering::SeqCst) {
            return Err(Stop::Lost("the lease could not be renewed".into()));
        }
        let cfg = &self.inner.config;
        let now = self.inner.now();
        let left = self.lease_until.load(Ordering::SeqCst) - now.millis();
        let margin = i64::try_from(cfg.lease_renew_interval.as_millis()).unwrap_or(i64::MAX);
        if left > margin {
            return Ok(());
        }
        let until = now.plus(cfg.lease_ttl);
        match self
            .inner
            .store
            .renew_lease(&self.occ.id, &cfg.runner_id, until)
            .await
        {
            Ok(()) => {
                self.lease_until.store(until.millis(), Ordering::SeqCst);
                Ok(())
            }
            Err(e @ (StoreError::Conflict(_) | StoreError::NotFound { .. })) => {
                self.lost.store(true, Ordering::SeqCst);
                Err(Stop::Lost(format!(
                    "the lease could not be renewed before the next step ({left} ms of it left by this runner's clock): {e}"
                )))
            }
            Err(e) => Err(Stop::Failed(store_err(e))),
        }
    }
}
