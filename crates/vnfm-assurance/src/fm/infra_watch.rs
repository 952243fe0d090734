//! The infrastructure watch: alarms from what the infrastructure drivers and the management
//! driver's plugins observe.
//!
//! Every period the watch asks the drivers of each instantiated instance what they see wrong
//! with its resources ([`Lcm::observe_infrastructure`]): a Kubernetes pod crash-looping or
//! not Ready, an OpenStack server in `ERROR`, ... Each reported condition keeps one alarm open
//! (raised through the [`FaultManager`], so it is de-duplicated, notified and may start an
//! automatic heal of its VNFC); an alarm whose condition is no longer reported is cleared.
//!
//! Its alarms are told from the others by their `faultType`, `infrastructure/<driver>`
//! ([`FAULT_TYPE_PREFIX`]); the probable cause is the driver's name of the condition. An
//! instance an operation holds (`STARTING`, `PROCESSING`, `ROLLING_BACK`, `FAILED_TEMP`) is
//! left alone: its resources are changing (or half-changed, waiting for a retry, rollback or
//! fail), and its alarms stay as they are until the operation ends. When a
//! driver cannot tell (its VIM is unreachable), that driver's alarms of the instance stay
//! too: an alarm is cleared only on an observation that no longer reports it. Alarms of
//! instances that are no longer instantiated are cleared.
//!
//! The same sweep offers each hook artifact of the instance's VNFD to the management driver
//! ([`Lcm::observe_management`]): a plugin whose handshake says it observes answers with the
//! alarms it raises or clears (`CLEARED`) and the indicator values it sets, applied as after
//! a hook. This is how a plugin reports faults between operations; its alarms are its own to
//! clear.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use vnfm_store::FaultManagerStore;

use vnfm_driver_api::fault::{FaultId, FaultReport};
use vnfm_driver_api::{DriverError, ObservedCondition};
use vnfm_store::{InstanceQuery, MAX_PAGE_SIZE, OpOccQuery};
use vnfm_types::{
    Alarm, FaultyResourceInfo, InstantiationState, LcmOperationStateType, VnfInstance,
    VnfInstanceId,
};

use super::FaultManager;
use vnfm_lcm::runner::observe::Observation;
use vnfm_lcm::runner::store_err;
use vnfm_lcm::{Lcm, LcmError};

/// The start of the `faultType` of every alarm the watch raises (followed by the driver's
/// name).
pub const FAULT_TYPE_PREFIX: &str = "infrastructure/";

/// What one sweep did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Swept {
    /// Instances whose drivers were asked.
    pub observed: usize,
    /// Instances left alone because an operation holds them.
    pub busy: usize,
    /// Alarms raised or updated (an unchanged repeat is not counted).
    pub raised: usize,
    /// Alarms cleared.
    pub cleared: usize,
    /// Answers of plugins that observe (their alarms and indicator values applied).
    pub plugin_answers: usize,
    /// Observations that failed (a driver that could not tell, an instance whose VIM could
    /// not be resolved, an alarm that could not be written); each is logged.
    pub failures: usize,
}

/// The infrastructure watch over a lifecycle manager's drivers.
#[derive(Clone)]
pub struct InfraWatch {
    lcm: Lcm,
    faults: FaultManager,
    timeout: Duration,
}

impl std::fmt::Debug for InfraWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InfraWatch")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// The `faultType` of the alarms of `driver`.
pub fn fault_type_of(driver: &str) -> String {
    format!("{FAULT_TYPE_PREFIX}{driver}")
}

/// The fault a condition that `driver` reported on `instance` is: on the VNFC
/// (`vnfcInfo` id, else the `vnfcResourceInfo` id) when the condition names one.
pub fn fault_of(instance: &VnfInstance, driver: &str, c: &ObservedCondition) -> FaultReport {
    let vnfc = c.vnfc_resource_id.as_ref().map(|r| {
        instance
            .instantiated_vnf_info
            .as_ref()
            .and_then(|i| i.vnfc_info.as_ref())
            .and_then(|v| {
                v.iter()
                    .find(|x| x.vnfc_resource_info_id.as_ref() == Some(r))
            })
            .map_or_else(|| r.clone(), |x| x.id.clone())
    });
    let id = FaultId {
        instance_id: instance.id.clone(),
        vnfc_instance_id: vnfc,
        fault_type: Some(fault_type_of(driver)),
        probable_cause: c.condition.clone(),
    };
    let mut report = FaultReport::new(id, c.severity, c.event_type);
    report.faulty_resource = Some(FaultyResourceInfo {
        faulty_resource: c.resource.clone(),
        faulty_resource_type: c.resource_type,
    });
    report.details = c.details.clone();
    report
}

/// The fault an open alarm is of (what it was raised with).
fn fault_id_of(alarm: &Alarm) -> FaultId {
    FaultId {
        instance_id: alarm.managed_object_id.clone(),
        vnfc_instance_id: alarm
            .vnfc_instance_ids
            .as_ref()
            .and_then(|v| v.first().cloned()),
        fault_type: alarm.fault_type.clone(),
        probable_cause: alarm.probable_cause.clone(),
    }
}

/// The driver that raised `alarm`, when the watch did.
fn driver_of(alarm: &Alarm) -> Option<&str> {
    alarm.fault_type.as_deref()?.strip_prefix(FAULT_TYPE_PREFIX)
}

impl InfraWatch {
    /// A watch asking `lcm`'s drivers, each observation bounded by `timeout`, and raising
    /// and clearing alarms through `faults`.
    pub fn new(lcm: Lcm, faults: FaultManager, timeout: Duration) -> Self {
        InfraWatch {
            lcm,
            faults,
            timeout,
        }
    }

    /// The store, as the fault manager's view: the watch reads instances, op-occs and alarms.
    fn store(&self) -> &std::sync::Arc<dyn FaultManagerStore> {
        &self.faults.store
    }

    /// One sweep over every instantiated instance.
    pub async fn sweep(&self) -> Result<Swept, LcmError> {
        let mut out = Swept::default();
        // The watch's open alarms by instance: what is still in here after the sweep belongs
        // to instances no longer instantiated.
        let mut open: BTreeMap<VnfInstanceId, Vec<Alarm>> = BTreeMap::new();
        for (record, _) in self.store().open_alarms(None).await.map_err(store_err)? {
            if driver_of(&record.alarm).is_some() {
                open.entry(record.alarm.managed_object_id.clone())
                    .or_default()
                    .push(record.alarm);
            }
        }
        let busy = self.busy_instances().await?;
        for id in &busy {
            open.remove(id);
        }
        let mut after: Option<String> = None;
        loop {
            let page = self
                .store()
                .list_instances(&InstanceQuery {
                    instantiation_state: Some(InstantiationState::Instantiated),
                    after: after.take(),
                    limit: Some(MAX_PAGE_SIZE),
                    ..InstanceQuery::default()
                })
                .await
                .map_err(store_err)?;
            for instance in &page.items {
                let alarms = open.remove(&instance.id).unwrap_or_default();
                if busy.contains(&instance.id) {
                    out.busy += 1;
                    continue;
                }
                self.observe(instance, alarms, &mut out).await;
            }
            match page.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        for alarm in open.into_values().flatten() {
            self.clear(&alarm, &mut out).await;
        }
        Ok(out)
    }

    /// The instances an operation holds while it changes their resources.
    async fn busy_instances(&self) -> Result<BTreeSet<VnfInstanceId>, LcmError> {
        let mut busy = BTreeSet::new();
        let mut after: Option<String> = None;
        loop {
            let page = self
                .store()
                .list_op_occs(&OpOccQuery {
                    states: Some(vec![
                        LcmOperationStateType::Starting,
                        LcmOperationStateType::Processing,
                        LcmOperationStateType::RollingBack,
                        LcmOperationStateType::FailedTemp,
                    ]),
                    after: after.take(),
                    limit: Some(MAX_PAGE_SIZE),
                    ..OpOccQuery::default()
                })
                .await
                .map_err(store_err)?;
            busy.extend(page.items.into_iter().map(|o| o.vnf_instance_id));
            match page.next {
                Some(next) => after = Some(next),
                None => return Ok(busy),
            }
        }
    }

    /// Observes `instance` through its infrastructure drivers and the management driver.
    async fn observe(&self, instance: &VnfInstance, open: Vec<Alarm>, out: &mut Swept) {
        // Resolved once for both questions (a registry read and a decryption per VIM).
        let vims = match self.lcm.resolve_instance_vims(instance).await {
            Ok(v) => v,
            Err(e) => {
                out.failures += 1;
                tracing::warn!(vnf_instance_id = %instance.id, error = %e, "cannot resolve the VIM connections of the instance; its alarms stay as they are");
                return;
            }
        };
        self.observe_infrastructure(instance, &vims, open, out)
            .await;
        match self
            .lcm
            .observe_management(instance, &vims, self.timeout)
            .await
        {
            Ok(answers) => {
                for a in answers {
                    match a.outcome {
                        Ok(undelivered) => {
                            out.plugin_answers += 1;
                            out.failures += undelivered.len();
                        }
                        Err(DriverError::Unsupported { .. }) => {}
                        Err(e) => {
                            out.failures += 1;
                            tracing::warn!(vnf_instance_id = %instance.id, artifact = %a.artifact, error = %e, "the management driver could not observe the instance");
                        }
                    }
                }
            }
            Err(e) => {
                out.failures += 1;
                tracing::warn!(vnf_instance_id = %instance.id, error = %e, "cannot offer the instance to its management driver to observe");
            }
        }
    }

    /// Raises what the instance's infrastructure drivers report and clears its alarms
    /// (`open`) that an observation no longer reports.
    async fn observe_infrastructure(
        &self,
        instance: &VnfInstance,
        vims: &[vnfm_driver_api::ResolvedVim],
        open: Vec<Alarm>,
        out: &mut Swept,
    ) {
        let observations = match self
            .lcm
            .observe_infrastructure(instance, vims, self.timeout)
            .await
        {
            Ok(o) => o,
            Err(e) => {
                out.failures += 1;
                tracing::warn!(vnf_instance_id = %instance.id, error = %e, "cannot observe the resources of the instance; its infrastructure alarms stay as they are");
                return;
            }
        };
        out.observed += 1;
        let mut reported = BTreeSet::new();
        let mut answered = BTreeSet::new();
        for Observation { driver, outcome } in observations {
            let conditions = match outcome {
                Ok(c) => c,
                // Observes nothing, so it has no condition to keep.
                Err(DriverError::Unsupported { .. }) => Vec::new(),
                Err(e) => {
                    out.failures += 1;
                    tracing::warn!(vnf_instance_id = %instance.id, driver = %driver, error = %e, "the driver could not observe the instance's resources; its alarms stay as they are");
                    continue;
                }
            };
            for c in &conditions {
                let report = fault_of(instance, &driver, c);
                reported.insert(report.fault.dedup_key());
                match self.faults.raise(&report).await {
                    Ok((_, vnfm_driver_api::Raised::Unchanged(_))) => {}
                    Ok(_) => out.raised += 1,
                    Err(e) => {
                        out.failures += 1;
                        tracing::warn!(vnf_instance_id = %instance.id, condition = %c.condition, error = %e, "raising an infrastructure alarm failed; trying again at the next sweep");
                    }
                }
            }
            answered.insert(driver);
        }
        for alarm in open {
            let gone = driver_of(&alarm).is_some_and(|d| answered.contains(d))
                && !reported.contains(&fault_id_of(&alarm).dedup_key());
            if gone {
                self.clear(&alarm, out).await;
            }
        }
    }

    async fn clear(&self, alarm: &Alarm, out: &mut Swept) {
        match self.faults.clear(&fault_id_of(alarm), None).await {
            Ok(Some(_)) => out.cleared += 1,
            Ok(None) => {}
            Err(e) => {
                out.failures += 1;
                tracing::warn!(alarm_id = %alarm.id, error = %e, "clearing an infrastructure alarm failed; trying again at the next sweep");
            }
        }
    }
}

/// The background task running the watch.
#[derive(Debug)]
pub struct InfraWatchTask {
    _task: vnfm_lcm::periodic::Periodic,
}

impl InfraWatchTask {
    /// Sweeps with `watch` every `every` until dropped. Must be called inside a tokio runtime.
    pub fn start(watch: InfraWatch, every: Duration) -> InfraWatchTask {
        let task = vnfm_lcm::periodic::Periodic::start(every, move || {
            let watch = watch.clone();
            async move {
                match watch.sweep().await {
                    Ok(s) if s.raised + s.cleared + s.failures > 0 => {
                        tracing::info!(
                            observed = s.observed,
                            raised = s.raised,
                            cleared = s.cleared,
                            failures = s.failures,
                            "infrastructure watch sweep"
                        );
                    }
                    Ok(_) => {}
                    Err(e) => {
                        tracing::warn!(error = %e, "infrastructure watch sweep failed; trying again at the next one");
                    }
                }
            }
        });
        InfraWatchTask { _task: task }
    }
}
