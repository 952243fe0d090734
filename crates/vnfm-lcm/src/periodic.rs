//! [`Periodic`]: a background job run every period until dropped (the PM and indicator
//! collectors, the infrastructure watch).

use std::future::Future;
use std::time::Duration;

/// A background task that runs a job every period; dropping it stops the task.
#[derive(Debug)]
pub struct Periodic {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Periodic {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Periodic {
    /// Runs `job` at once, then every `every` (at least 10 ms), a late run delaying the next
    /// rather than bunching them. Must be called inside a tokio runtime.
    pub fn start<F, Fut>(every: Duration, mut job: F) -> Periodic
    where
        F: FnMut() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let task = tokio::spawn(async move {
            let mut interval = tokio::time::interval(every.max(Duration::from_millis(10)));
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                interval.tick().await;
                job().await;
            }
        });
        Periodic { task }
    }
}
