//! The [`Deliverer`] loop.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, Semaphore, watch};
use tokio::task::JoinSet;
use vnfm_driver_api::{CallbackMethod, CallbackRequest, CallbackSender, backoff_delay};
use vnfm_store::{DelivererStore, OutboxRow, Timestamp};
use vnfm_types::{SubscriptionAuthentication, SubscriptionId};

use crate::LcmError;
use crate::secrets::Keyring;
use crate::subscriptions::open_sealed;

/// Settings of a [`Deliverer`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DelivererConfig {
    /// Claim owner: unique per process incarnation (e.g. `host:pid:nonce`), so a restarted
    /// process does not mistake its predecessor's claims for its own.
    pub owner: String,
    /// Deliveries in flight at most.
    pub concurrency: usize,
    /// Rows claimed per store query at most.
    pub batch: u32,
    /// How often the outbox is polled when idle ([`Deliverer::wake`] polls at once).
    pub poll_interval: Duration,
    /// Time limit of one POST (a token request included).
    pub request_timeout: Duration,
    /// How long a claim lasts; raised to at least `3 × request_timeout` (a delivery may fetch
    /// a token and send twice) so a live deliverer never loses a row it is sending.
    pub claim_ttl: Duration,
    /// Attempts after which a row is dead (by default unbounded: `max_age` decides, so a
    /// subscriber that is down for hours still gets every notification).
    pub max_attempts: u32,
    /// Age (since the notification's `timeStamp`) after which a failing row is dead.
    pub max_age: Duration,
    /// Delay before the first retry; doubled for each further one.
    pub backoff_base: Duration,
    /// Longest delay between retries.
    pub backoff_max: Duration,
    /// How often the callbacks whose notifications wait in back-off (their subscriber did
    /// not answer) are probed with the notification endpoint test (`GET`, SOL003): once one
    /// answers 2xx, its waiting notifications are sent at once, in order, instead of at
    /// their next scheduled retry. The probe's time limit is the smaller of this and
    /// `request_timeout`. [`Duration::ZERO`] turns probing off.
    pub probe_interval: Duration,
}

impl DelivererConfig {
    /// Defaults for claim owner `owner`: 16 in flight, batches of 32, 1 s poll, 10 s
    /// requests, retries for 24 h (however many attempts that takes), backoff from 1 s to
    /// 10 min, callbacks in back-off probed every 3 s.
    pub fn new(owner: impl Into<String>) -> Self {
        DelivererConfig {
            owner: owner.into(),
            concurrency: 16,
            batch: 32,
            poll_interval: Duration::from_secs(1),
            request_timeout: Duration::from_secs(10),
            claim_ttl: Duration::from_secs(60),
            max_attempts: u32::MAX,
            max_age: Duration::from_secs(24 * 3600),
            backoff_base: Duration::from_secs(1),
            backoff_max: Duration::from_secs(600),
            probe_interval: Duration::from_secs(3),
        }
    }

    fn effective_claim_ttl(&self) -> Duration {
        self.claim_ttl.max(self.request_timeout * 3)
    }
}

pub(super) struct Inner {
    pub(super) store: Arc<dyn DelivererStore>,
    keyring: Arc<Keyring>,
    pub(super) sender: Arc<dyn CallbackSender>,
    pub(super) config: DelivererConfig,
    pub(super) wake: Arc<Notify>,
}

/// Wakes a [`Deliverer`] from elsewhere (e.g. right after notifications were enqueued), so
/// they go out at once instead of at the next poll. Cheap to clone; waking a stopped
/// deliverer does nothing.
#[derive(Clone)]
pub struct DeliveryWaker(Arc<Notify>);

impl DeliveryWaker {
    /// Makes the deliverer poll the outbox now.
    pub fn wake(&self) {
        self.0.notify_one();
    }
}

impl std::fmt::Debug for DeliveryWaker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DeliveryWaker")
    }
}

/// The background loop that delivers the outbox. Start it with [`Deliverer::start`] and stop
/// it with [`Deliverer::shutdown`]; dropping it stops it at once, abandoning in-flight
/// deliveries (their rows are delivered again once their claims expire).
pub struct Deliverer {
    inner: Arc<Inner>,
    stop: watch::Sender<bool>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for Deliverer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deliverer")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl Drop for Deliverer {
    fn drop(&mut self) {
        if let Some(t) = &self.task {
            t.abort();
        }
    }
}

impl Deliverer {
    /// Starts delivering the outbox of `store` through `sender` (callback credentials are
    /// opened with `keyring`). Must be called inside a tokio runtime.
    pub fn start(
        store: Arc<dyn DelivererStore>,
        keyring: Arc<Keyring>,
        sender: Arc<dyn CallbackSender>,
        mut config: DelivererConfig,
    ) -> Result<Deliverer, LcmError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            LcmError::inconsistent("the notification deliverer needs a tokio runtime")
        })?;
        config.concurrency = config.concurrency.max(1);
        config.batch = config.batch.max(1);
        config.max_attempts = config.max_attempts.max(1);
        let inner = Arc::new(Inner {
            store,
            keyring,
            sender,
            config,
            wake: Arc::new(Notify::new()),
        });
        let (stop, stopped) = watch::channel(false);
        let task = runtime.spawn({
            let inner = inner.clone();
            async move {
                tokio::join!(
                    run(inner.clone(), stopped.clone()),
                    super::probe::probe_waiting(inner, stopped)
                );
            }
        });
        tracing::info!(owner = %inner.config.owner, "notification deliverer started");
        Ok(Deliverer {
            inner,
            stop,
            task: Some(task),
        })
    }

    /// Polls the outbox now (call after enqueuing notifications).
    pub fn wake(&self) {
        self.inner.wake.notify_one();
    }

    /// A handle that wakes this deliverer ([`Deliverer::wake`]) from elsewhere.
    pub fn waker(&self) -> DeliveryWaker {
        DeliveryWaker(self.inner.wake.clone())
    }

    /// Stops claiming rows and returns once the deliveries in flight have finished.
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        tracing::info!(owner = %self.inner.config.owner, "notification deliverer stopped");
    }
}

async fn run(inner: Arc<Inner>, mut stop: watch::Receiver<bool>) {
    let cfg = &inner.config;
    let permits = Arc::new(Semaphore::new(cfg.concurrency));
    let mut tasks = JoinSet::new();
    loop {
        if *stop.borrow() {
            break;
        }
        while tasks.try_join_next().is_some() {}
        let free = permits.available_permits();
        if free == 0 {
            tokio::select! {
                _ = tasks.join_next() => {}
                r = stop.changed() => if r.is_err() { break },
            }
            continue;
        }
        let want = u32::try_from(free).unwrap_or(u32::MAX).min(cfg.batch);
        let now = Timestamp::now();
        let claimed = inner
            .store
            .outbox_due(now, want, &cfg.owner, now.plus(cfg.effective_claim_ttl()))
            .await;
        match claimed {
            Ok(rows) => {
                let full = rows.len() == want as usize;
                for row in rows {
                    let Ok(permit) = permits.clone().acquire_owned().await else {
                        break;
                    };
                    let inner = inner.clone();
                    tasks.spawn(async move {
                        deliver(&inner, row).await;
                        drop(permit);
                        // The next row of its queue may be claimable now.
                        inner.wake.notify_one();
                    });
                }
                if full {
                    // More rows may be due: claim again as soon as there is room.
                    continue;
                }
            }
            Err(e) => tracing::warn!(error = %e, "claiming due notifications failed"),
        }
        tokio::select! {
            _ = tokio::time::sleep(cfg.poll_interval) => {}
            _ = inner.wake.notified() => {}
            r = stop.changed() => if r.is_err() { break },
        }
    }
    while tasks.join_next().await.is_some() {}
}

/// How a subscription's callback is authenticated to.
pub(super) enum Credentials {
    /// As the subscription asks (opened).
    Of(Option<SubscriptionAuthentication>),
    /// The subscription was deleted.
    Gone,
}

/// The opened callback credentials of `subscription`; an error says what failed.
pub(super) async fn credentials(
    inner: &Inner,
    subscription: &SubscriptionId,
) -> Result<Credentials, String> {
    // Subscriptions of every kind share one id space; PM jobs and thresholds are notified at
    // their own callbacks, under their ids.
    let sealed = match inner.store.callback_authentication(subscription).await {
        Ok(Some(blob)) => blob,
        Ok(None) => return Ok(Credentials::Gone),
        Err(e) => return Err(format!("reading the subscription failed: {e}")),
    };
    open_sealed(&inner.keyring, subscription, sealed.as_deref())
        .map(Credentials::Of)
        .map_err(|e| e.to_string())
}

async fn deliver(inner: &Inner, row: OutboxRow) {
    let store = &inner.store;
    let authentication = match credentials(inner, &row.subscription_id).await {
        Ok(Credentials::Of(a)) => a,
        Ok(Credentials::Gone) => {
            record(
                inner,
                &row,
                store
                    .outbox_dead(row.id, "the subscription was deleted")
                    .await,
            );
            return;
        }
        Err(e) => {
            failed(inner, &row, e).await;
            return;
        }
    };
    let sent = inner
        .sender
        .send(CallbackRequest {
            method: CallbackMethod::Post,
            uri: &row.callback_uri,
            body: Some(&row.payload),
            authentication: authentication.as_ref(),
            timeout: inner.config.request_timeout,
            traceparent: row.traceparent.as_deref(),
        })
        .await;
    match sent {
        Ok(answer) if answer.is_success() => {
            tracing::debug!(
                outbox_row = row.id,
                subscription_id = %row.subscription_id,
                status = %answer.status_text,
                attempts = row.attempts + 1,
                "notification delivered"
            );
            record(
                inner,
                &row,
                store.outbox_delivered(row.id, Timestamp::now()).await,
            );
        }
        Ok(answer) => {
            failed(
                inner,
                &row,
                format!("callback answered {}", answer.status_text),
            )
            .await
        }
        Err(e) => failed(inner, &row, format!("POST to the callback: {e}")).await,
    }
}

/// Whether a row that failed its `attempts`-th attempt, `age_ms` after its notification was
/// made, is given up.
fn gives_up(cfg: &DelivererConfig, attempts: u32, age_ms: Option<i64>) -> bool {
    let too_old =
        age_ms.is_some_and(|a| a > i64::try_from(cfg.max_age.as_millis()).unwrap_or(i64::MAX));
    attempts >= cfg.max_attempts || too_old
}

/// Schedules the next attempt of a failed row, or marks it dead.
async fn failed(inner: &Inner, row: &OutboxRow, error: String) {
    let cfg = &inner.config;
    let attempts = u32::try_from(row.attempts.saturating_add(1)).unwrap_or(u32::MAX);
    let now = Timestamp::now();
    let age_ms = created_ms(&row.payload).map(|t| now.millis().saturating_sub(t));
    if gives_up(cfg, attempts, age_ms) {
        tracing::warn!(
            outbox_row = row.id,
            subscription_id = %row.subscription_id,
            attempts,
            error = %error,
            "notification given up"
        );
        record(inner, row, inner.store.outbox_dead(row.id, &error).await);
    } else {
        let delay = backoff_delay(attempts, cfg.backoff_base, cfg.backoff_max);
        tracing::info!(
            outbox_row = row.id,
            subscription_id = %row.subscription_id,
            attempts,
            retry_in_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            error = %error,
            "notification delivery failed"
        );
        record(
            inner,
            row,
            inner
                .store
                .outbox_retry(row.id, now.plus(delay), &error)
                .await,
        );
    }
}

fn record(inner: &Inner, row: &OutboxRow, r: vnfm_store::Result<()>) {
    if let Err(e) = r {
        // The claim expires and the row is tried again: at-least-once.
        tracing::warn!(outbox_row = row.id, owner = %inner.config.owner, error = %e, "recording a delivery outcome failed");
    }
}

/// The notification's `timeStamp` in milliseconds since the epoch.
fn created_ms(payload: &serde_json::Value) -> Option<i64> {
    parse_rfc3339_ms(payload.get("timeStamp")?.as_str()?)
}

/// Milliseconds since the epoch of an RFC 3339 date-time (`2021-09-06T07:07:15.5+02:00`).
pub(crate) fn parse_rfc3339_ms(s: &str) -> Option<i64> {
    vnfm_types::time::parse_rfc3339(s).map(|t| t.as_millisecond())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_parses_to_epoch_millis() {
        assert_eq!(parse_rfc3339_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_rfc3339_ms("2021-09-06T07:07:15Z"),
            Some(1_630_912_035_000)
        );
        assert_eq!(
            parse_rfc3339_ms("2021-09-06T09:07:15.25+02:00"),
            Some(1_630_912_035_250)
        );
        assert_eq!(
            parse_rfc3339_ms("2000-02-29T00:00:00Z"),
            Some(951_782_400_000)
        );
        for bad in [
            "",
            "2021-09-06",
            "2021-09-06T07:07:15",
            "2021-13-06T07:07:15Z",
            "2021-09-06T07:07:15.Z",
            "2021-09-06T07:07:15+0200",
            "2021-09-06T07:07:15Zjunk",
            "２０21-09-06T07:07:15Z",
        ] {
            assert_eq!(parse_rfc3339_ms(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_subscriber_down_for_17_minutes_is_still_retried_until_a_day_has_passed() {
        let cfg = DelivererConfig::new("t");
        let minute = 60_000_i64;
        // Ten attempts with backoff up to 10 min span about 17 minutes.
        assert!(!gives_up(&cfg, 10, Some(17 * minute)));
        assert!(!gives_up(&cfg, 200, Some(23 * 60 * minute)));
        assert!(gives_up(&cfg, 200, Some(24 * 60 * minute + 1)));
        let bounded = DelivererConfig {
            max_attempts: 3,
            ..DelivererConfig::new("t")
        };
        assert!(gives_up(&bounded, 3, Some(minute)));
    }
}
