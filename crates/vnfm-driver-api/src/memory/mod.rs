//! In-memory drivers for tests and benchmarks: [`MemoryInfraDriver`] (a fake VIM that keeps
//! an inventory per instance), [`RecordingMgmtDriver`] (hooks that record their calls) and
//! [`MemArtifacts`] (package files held in memory).
//!
//! Both drivers record every call in order, can be told to fail (the next call of an
//! operation, or the N-th call overall) and can be slowed down by an artificial delay that
//! honours the step's deadline and cancellation, so runner tests can exercise retries,
//! rollbacks, timeouts and cancellation without infrastructure. Resource ids are generated
//! from a counter (`vnfc-0001`, `server-0001`, ...), so results are deterministic.

mod infra;
mod mgmt;
mod reconcile;

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::{ArtifactSource, DriverError, RunControl};

/// The `vimType` the in-memory driver serves by default.
pub const MEMORY_VIM_TYPE: &str = "vnfm.MEMORY.V_1";

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A test that panicked while holding the lock must not hide the state from the others.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Sleeps for `delay` in short slices, returning early with `Cancelled` / `Timeout` when the
/// step is cancelled or its deadline passes.
async fn pause(delay: Duration, control: &RunControl, what: &str) -> Result<(), DriverError> {
    if delay.is_zero() {
        return control.check(what);
    }
    let end = Instant::now() + delay;
    loop {
        control.check(what)?;
        let now = Instant::now();
        if now >= end {
            return Ok(());
        }
        tokio::time::sleep((end - now).min(Duration::from_millis(5))).await;
    }
}

/// Package files held in memory.
#[derive(Debug, Clone, Default)]
pub struct MemArtifacts {
    files: BTreeMap<String, Vec<u8>>,
}

impl MemArtifacts {
    /// No files.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a file.
    pub fn with(mut self, path: impl Into<String>, content: impl Into<Vec<u8>>) -> Self {
        self.files.insert(path.into(), content.into());
        self
    }
}

impl ArtifactSource for MemArtifacts {
    fn read(&self, path: &str) -> std::io::Result<Vec<u8>> {
        self.files.get(path).cloned().ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("the package has no file `{path}`"),
            )
        })
    }

    fn paths(&self) -> Option<Vec<String>> {
        Some(self.files.keys().cloned().collect())
    }
}

pub use infra::{InfraCall, Inventory, MemVirtualLink, MemVnfc, MemoryInfraDriver};
pub use mgmt::{HookRecord, RecordingMgmtDriver};
