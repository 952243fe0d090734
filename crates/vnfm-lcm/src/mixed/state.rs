//! What a mixed VNF records: [`SplitState`], the driver state kept with the instance (the
//! mapping in force and each part's own driver state), and the progress of one step kept with
//! the operation occurrence (op-occ data [`PROGRESS_KEY`]): the outcomes of the parts that
//! succeeded, so that retries, recovery and rollbacks know what each part did.
//!
//! The decorator does not write that progress: it reads it when the step starts and hands the
//! new one to the runner through [`PartsProgress`], and the runner writes it in the
//! transaction that records the end of the step (its success, or its failure), so that the
//! step and what its parts did are committed together.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use vnfm_driver_api::{InfraOutcome, InfraRequest, InfraStep, InstanceResources};
use vnfm_store::OpOccStore;

use super::SplitByVim;

/// Op-occ data key under which [`SplitByVim`] keeps the outcomes of the parts that succeeded.
pub const PROGRESS_KEY: &str = "splitByVim";

/// The driver state [`SplitByVim`] records with a mixed instance.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SplitState {
    /// The VIM connection of each VDU of the instance's flavour.
    #[serde(default)]
    pub vdu_vim_connections: BTreeMap<String, String>,
    /// Each part's driver state, by VIM connection key (parts whose driver recorded none are
    /// left out).
    #[serde(default)]
    pub by_vim: BTreeMap<String, Value>,
}

impl SplitState {
    /// The split state in `driver_state`, when it is one (an object with a `byVim` object).
    pub fn of(driver_state: &Value) -> Option<SplitState> {
        driver_state.get("byVim").filter(|v| v.is_object())?;
        serde_json::from_value(driver_state.clone()).ok()
    }
}

/// The outcomes of the parts that succeeded in one infrastructure step of an occurrence.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Record {
    pub(super) step: InfraStep,
    #[serde(default)]
    pub(super) outcomes: BTreeMap<String, InfraOutcome>,
}

/// [`Record`]s of an occurrence: its forward infrastructure step and its rollback (a plan has
/// at most one of each).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Progress {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) forward: Option<Record>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) rollback: Option<Record>,
}

/// What a part has before the step: its resources and driver state.
#[derive(Debug, Clone, Default)]
pub(super) struct View {
    pub(super) resources: InstanceResources,
    pub(super) state: Value,
}

/// The progress of one step of a [`SplitByVim`]: read from the occurrence's data in the store
/// when the step starts; the new progress, as parts succeed, is kept here for the runner to
/// [take](PartsProgress::take) and write with the end of the step.
#[derive(Clone)]
pub struct PartsProgress {
    store: Arc<dyn OpOccStore>,
    latest: Arc<Mutex<Option<Value>>>,
}

impl std::fmt::Debug for PartsProgress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartsProgress").finish_non_exhaustive()
    }
}

impl PartsProgress {
    /// Progress read from `store`.
    pub fn new(store: Arc<dyn OpOccStore>) -> PartsProgress {
        PartsProgress {
            store,
            latest: Arc::new(Mutex::new(None)),
        }
    }

    /// The progress recorded since the last call (the value of op-occ data [`PROGRESS_KEY`]),
    /// to write in the transaction that ends the step.
    pub fn take(&self) -> Option<Value> {
        self.latest.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    fn keep(&self, value: Value) {
        *self.latest.lock().unwrap_or_else(|e| e.into_inner()) = Some(value);
    }
}

impl SplitByVim {
    pub(super) async fn load(&self, req: &InfraRequest) -> Progress {
        let Some(progress) = &self.progress else {
            return Progress::default();
        };
        match progress
            .store
            .get_op_occ_data(&req.op_occ_id, PROGRESS_KEY)
            .await
        {
            Ok(Some(v)) if !v.is_null() => serde_json::from_value(v).unwrap_or_else(|e| {
                tracing::warn!(error = %e, "the recorded progress of a mixed VNF step is unreadable; every part runs again");
                Progress::default()
            }),
            Ok(_) => Progress::default(),
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the progress of a mixed VNF step; every part runs again");
                Progress::default()
            }
        }
    }

    /// Hands `progress` to the runner (see [`PartsProgress`]). Losing it (a crash before the
    /// step's end is written) only means a retry runs a part that had succeeded again: steps
    /// are idempotent.
    pub(super) fn save(&self, progress: &Progress) {
        let Some(parts) = &self.progress else {
            return;
        };
        match serde_json::to_value(progress) {
            Ok(v) => parts.keep(v),
            Err(e) => {
                tracing::warn!(error = %e, "the progress of a mixed VNF step does not serialize");
            }
        }
    }
}
