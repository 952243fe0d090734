//! Bounded parallel work over many hosts: [`fan_out`] and [`run_on_all`].

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::{ConnectOptions, Output, RemoteCommand, Session, SshError, SshTarget};

/// Runs `work` on every item, at most `limit` at a time, and returns the results in the
/// order of `items`. A task that panics yields [`SshError::Channel`] for its item.
pub async fn fan_out<I, R, F, Fut>(items: Vec<I>, limit: usize, work: F) -> Vec<Result<R, SshError>>
where
    I: Send + 'static,
    R: Send + 'static,
    F: Fn(I) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, SshError>> + Send + 'static,
{
    let n = items.len();
    let permits = Arc::new(Semaphore::new(limit.max(1)));
    let work = Arc::new(work);
    let mut set = JoinSet::new();
    for (i, item) in items.into_iter().enumerate() {
        let permits = permits.clone();
        let work = work.clone();
        set.spawn(async move {
            // The semaphore is never closed, so acquiring only waits.
            let _permit = permits.acquire_owned().await;
            (i, work(item).await)
        });
    }
    let mut results: Vec<Option<Result<R, SshError>>> = (0..n).map(|_| None).collect();
    while let Some(joined) = set.join_next().await {
        if let Ok((i, r)) = joined
            && let Some(slot) = results.get_mut(i)
        {
            *slot = Some(r);
        }
    }
    results
        .into_iter()
        .map(|r| {
            r.unwrap_or_else(|| {
                Err(SshError::Channel {
                    host: "(fan-out)".into(),
                    what: "a fan-out task".into(),
                    message: "the task panicked".into(),
                })
            })
        })
        .collect()
}

/// What happened on one host of [`run_on_all`].
#[derive(Debug, Clone)]
pub struct HostOutcome {
    /// `user@host:port`.
    pub host: String,
    /// The command's output, or why there is none.
    pub result: Result<Output, SshError>,
    /// Time from the start of the connection to the end of the command.
    pub elapsed: Duration,
}

/// Connects to every target (at most `limit` at a time) and runs `command` on each within
/// `timeout`; per-host results, in the order of `targets`.
pub async fn run_on_all(
    targets: Vec<SshTarget>,
    command: RemoteCommand,
    options: ConnectOptions,
    timeout: Duration,
    limit: usize,
) -> Vec<HostOutcome> {
    let labels: Vec<String> = targets.iter().map(SshTarget::label).collect();
    let command = Arc::new(command);
    let options = Arc::new(options);
    let results = fan_out(targets, limit, move |t| {
        let command = command.clone();
        let options = options.clone();
        async move {
            let start = Instant::now();
            let result = async {
                let s = Session::connect(&t, &options).await?;
                let out = s.exec(&command, timeout).await;
                s.close().await;
                out
            }
            .await;
            Ok((result, start.elapsed()))
        }
    })
    .await;
    labels
        .into_iter()
        .zip(results)
        .map(|(host, r)| match r {
            Ok((result, elapsed)) => HostOutcome {
                host,
                result,
                elapsed,
            },
            Err(e) => HostOutcome {
                host,
                result: Err(e),
                elapsed: Duration::ZERO,
            },
        })
        .collect()
}
