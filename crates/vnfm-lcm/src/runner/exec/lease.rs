//! The lease of a running occurrence, renewed while it runs.

use super::*;

/// Renews the lease of a running occurrence and watches the store for cancellation requests
/// made through other processes. On losing the lease it raises the run's flags: the step in
/// progress is cancelled and the run's next write is refused anyway.
pub(super) async fn keep_lease(
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
