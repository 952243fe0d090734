//! Noticing a subscriber's return: the callbacks whose notifications wait in back-off are
//! tested (`GET`, the SOL003 notification endpoint test) every
//! [`DelivererConfig::probe_interval`](super::DelivererConfig::probe_interval); one that
//! answers 2xx has its waiting notifications made due at once
//! ([`vnfm_store::OutboxStore::outbox_callback_answers`]), and the deliverer sends them in
//! order.
//!
//! A subscriber that answers the test but keeps refusing notifications would otherwise be
//! sent one at every probe: after each probe that released rows, the next probe of the same
//! callback waits twice as long (up to `backoff_max`), until its rows no longer wait.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;
use vnfm_driver_api::{CallbackMethod, CallbackRequest};
use vnfm_store::{Timestamp, WaitingCallback};

use super::deliver::{Credentials, Inner, credentials};

/// Callbacks probed per round at most (each probe is one `GET`, all of a round concurrent).
const PROBES_PER_ROUND: u32 = 16;

/// When a callback may be probed again after a probe that released its rows.
struct Released {
    /// The wait after the last release.
    wait: Duration,
    /// Not probed before this.
    next: Instant,
}

/// Probes the callbacks waiting in back-off every `probe_interval` until `stop`.
pub(super) async fn probe_waiting(inner: Arc<Inner>, mut stop: watch::Receiver<bool>) {
    let every = inner.config.probe_interval;
    if every.is_zero() {
        return;
    }
    let mut released: HashMap<String, Released> = HashMap::new();
    loop {
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            r = stop.changed() => if r.is_err() || *stop.borrow() { return },
        }
        let round = probe_round(&inner, every, &mut released);
        tokio::select! {
            () = round => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}

/// One round: probes the waiting callbacks not held back by `released`, and makes the rows
/// of those that answer due.
async fn probe_round(
    inner: &Arc<Inner>,
    every: Duration,
    released: &mut HashMap<String, Released>,
) {
    let now = Timestamp::now();
    // Rows due within the interval are tried anyway: no need to probe for them.
    let waiting = match inner
        .store
        .outbox_waiting_callbacks(now.plus(every), PROBES_PER_ROUND)
        .await
    {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!(error = %e, "reading the callbacks waiting for a retry failed");
            return;
        }
    };
    let at = Instant::now();
    released.retain(|uri, r| r.next > at || waiting.iter().any(|w| &w.callback_uri == uri));
    let mut probes = JoinSet::new();
    for w in waiting {
        if released.get(&w.callback_uri).is_some_and(|r| r.next > at) {
            continue;
        }
        let inner = inner.clone();
        probes.spawn(async move {
            let answers = answers(&inner, &w).await;
            (w, answers)
        });
    }
    while let Some(done) = probes.join_next().await {
        let Ok((w, true)) = done else { continue };
        match inner
            .store
            .outbox_callback_answers(&w.callback_uri, Timestamp::now())
            .await
        {
            Ok(0) => {}
            Ok(rows) => {
                tracing::info!(
                    callback = %w.callback_uri,
                    rows,
                    "the subscriber answers again: its waiting notifications are sent now"
                );
                let wait = released.get(&w.callback_uri).map_or(every, |r| {
                    (r.wait * 2).min(inner.config.backoff_max.max(every))
                });
                released.insert(
                    w.callback_uri,
                    Released {
                        wait,
                        next: Instant::now() + wait,
                    },
                );
                inner.wake.notify_one();
            }
            Err(e) => {
                tracing::warn!(callback = %w.callback_uri, error = %e, "making the waiting notifications due failed");
            }
        }
    }
}

/// Whether the callback of `w` answers the endpoint test with a 2xx now.
async fn answers(inner: &Inner, w: &WaitingCallback) -> bool {
    let authentication = match credentials(inner, &w.subscription_id).await {
        Ok(Credentials::Of(a)) => a,
        // Its rows die at their next attempt.
        Ok(Credentials::Gone) => return false,
        Err(e) => {
            tracing::debug!(callback = %w.callback_uri, error = %e, "callback not probed");
            return false;
        }
    };
    let cfg = &inner.config;
    let answer = inner
        .sender
        .send(CallbackRequest {
            method: CallbackMethod::Get,
            uri: &w.callback_uri,
            body: None,
            authentication: authentication.as_ref(),
            timeout: cfg.probe_interval.min(cfg.request_timeout),
            traceparent: None,
        })
        .await;
    match answer {
        Ok(a) => {
            tracing::debug!(callback = %w.callback_uri, status = %a.status_text, "callback probed");
            a.is_success()
        }
        Err(e) => {
            tracing::debug!(callback = %w.callback_uri, error = %e, "callback probe failed");
            false
        }
    }
}
