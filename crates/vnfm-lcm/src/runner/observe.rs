//! Observation of an instance outside any operation: each infrastructure driver the instance's
//! resources are on is asked what it sees wrong
//! ([`InfraDriver::observe`](vnfm_driver_api::InfraDriver::observe)), with the instance's
//! VIM connections resolved as for a step (a mixed VNF, with resources on VIMs of different
//! drivers, asks each part's driver with that part's VIM and driver state); and each hook
//! artifact of its VNFD is offered to the management driver
//! ([`MgmtDriver::observe`](vnfm_driver_api::MgmtDriver::observe)), whose answer's alarms and
//! indicator values are applied as a hook's are.

use std::time::Duration;

use indexmap::IndexMap;
use vnfm_driver_api::{
    DriverError, HookOutcome, ObserveCall, ObserveRequest, ObservedCondition, ResolvedVim,
    RunControl,
};
use vnfm_types::{VimConnectionInfo, VnfInstance};

use super::Lcm;
use super::apply::driver_state;
use super::exec::{resolve_vims, select_driver};
use crate::LcmError;
use crate::mixed::SplitState;

/// What the management driver answered for one hook artifact of an instance's VNFD.
#[derive(Debug)]
pub struct ManagementObservation {
    /// The artifact asked.
    pub artifact: String,
    /// Its answer ([`DriverError::Unsupported`] when it does not observe), and, when it
    /// answered, what of its alarms and indicator values could not be applied.
    pub outcome: Result<Vec<String>, DriverError>,
}

/// What one driver reported about an instance.
#[derive(Debug)]
pub struct Observation {
    /// The driver's name.
    pub driver: String,
    /// Its conditions, or why it could not tell ([`DriverError::Unsupported`] when the driver
    /// observes nothing).
    pub outcome: Result<Vec<ObservedCondition>, DriverError>,
}

impl Lcm {
    /// The VIM connections of `instance`, with their secrets, as a step gets them: resolve
    /// them once and hand them to [`Lcm::observe_infrastructure`] and
    /// [`Lcm::observe_management`].
    pub async fn resolve_instance_vims(
        &self,
        instance: &VnfInstance,
    ) -> Result<Vec<ResolvedVim>, LcmError> {
        resolve_vims(
            self.inner.vims.clone(),
            &instance.id,
            instance.vim_connection_info.clone().unwrap_or_default(),
        )
        .await
    }

    /// Asks the drivers of `instance` (instantiated) what they see wrong with its resources
    /// now, each within `timeout`; `vims` are its resolved VIM connections
    /// ([`Lcm::resolve_instance_vims`]). Errors choosing a driver are the whole call's; a
    /// driver's own failure is its [`Observation::outcome`].
    pub async fn observe_infrastructure(
        &self,
        instance: &VnfInstance,
        vims: &[ResolvedVim],
        timeout: Duration,
    ) -> Result<Vec<Observation>, LcmError> {
        let resolved_all = vims;
        let inner = &self.inner;
        let vims = instance.vim_connection_info.clone().unwrap_or_default();
        let state = driver_state(instance);
        let mut parts: Vec<(IndexMap<String, VimConnectionInfo>, serde_json::Value)> = Vec::new();
        match SplitState::of(&state) {
            Some(split) => {
                for (key, part_state) in split.by_vim {
                    if let Some(info) = vims.get(&key) {
                        parts.push(([(key, info.clone())].into_iter().collect(), part_state));
                    }
                }
            }
            None => parts.push((vims, state)),
        }
        let mut out = Vec::with_capacity(parts.len());
        for (part_vims, part_state) in parts {
            let driver = select_driver(inner, instance, &part_vims)?;
            let resolved = resolved_all
                .iter()
                .filter(|v| part_vims.contains_key(&v.connection_id))
                .cloned()
                .collect();
            let req = ObserveRequest {
                instance: instance.clone(),
                vims: resolved,
                driver_state: part_state,
                control: RunControl::with_timeout(timeout),
            };
            let outcome = match tokio::time::timeout(timeout, driver.observe(&req)).await {
                Ok(r) => r,
                Err(_) => Err(DriverError::timeout(
                    "observing the instance's resources",
                    timeout,
                )),
            };
            out.push(Observation {
                driver: driver.name().to_owned(),
                outcome,
            });
        }
        Ok(out)
    }

    /// Offers each hook artifact of `instance`'s VNFD (in its flavour) to the management
    /// driver to observe the instance (with its resolved VIM connections `vims`), each within
    /// `timeout`, and applies what an answer reports (alarms raised or cleared, indicator
    /// values) as after a hook. Nothing to do without a management driver. Errors reading the
    /// VNFD are the whole call's.
    pub async fn observe_management(
        &self,
        instance: &VnfInstance,
        vims: &[ResolvedVim],
        timeout: Duration,
    ) -> Result<Vec<ManagementObservation>, LcmError> {
        let inner = &self.inner;
        let Some(mgmt) = inner.mgmt.clone() else {
            return Ok(Vec::new());
        };
        let Some(flavour_id) = instance
            .instantiated_vnf_info
            .as_ref()
            .map(|i| i.flavour_id.clone())
        else {
            return Ok(Vec::new());
        };
        let onboarded = inner.onboarded(instance.vnfd_id.as_str()).await?;
        let Some(flavour) = onboarded.vnfd.flavour(&flavour_id) else {
            return Ok(Vec::new());
        };
        let mut artifacts = Vec::new();
        for h in &flavour.lcm_hooks {
            if let Some(step) = crate::plan::hook(flavour, &h.operation)?
                && !artifacts
                    .iter()
                    .any(|a: &vnfm_driver_api::HookArtifact| a.name == step.artifact.name)
            {
                artifacts.push(step.artifact);
            }
        }
        if artifacts.is_empty() {
            return Ok(Vec::new());
        }
        let instance_json = serde_json::to_value(instance).unwrap_or(serde_json::Value::Null);
        let mut out = Vec::with_capacity(artifacts.len());
        for artifact in artifacts {
            let call = ObserveCall {
                artifact,
                instance: instance_json.clone(),
                vnfd: onboarded.vnfd.clone(),
                flavour_id: Some(flavour_id.clone()),
                vims: vims.to_vec(),
                artifacts: onboarded.files.clone(),
                control: RunControl::with_timeout(timeout),
            };
            let answer: Result<HookOutcome, DriverError> =
                match tokio::time::timeout(timeout, mgmt.observe(&call)).await {
                    Ok(r) => r,
                    Err(_) => Err(DriverError::timeout("observing the instance", timeout)),
                };
            let outcome = match answer {
                Ok(reported) => {
                    Ok(super::exec::hook_reports::deliver(inner, &instance.id, &reported).await)
                }
                Err(e) => Err(e),
            };
            out.push(ManagementObservation {
                artifact: call.artifact.name,
                outcome,
            });
        }
        Ok(out)
    }
}
