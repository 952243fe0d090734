//! Observation of an instance's resources outside any operation: each infrastructure driver
//! the instance's resources are on is asked what it sees wrong
//! ([`InfraDriver::observe`](vnfm_driver_api::InfraDriver::observe)), with the instance's
//! VIM connections resolved as for a step. A mixed VNF (resources on VIMs of different
//! drivers) asks each part's driver with that part's VIM and driver state.

use std::time::Duration;

use indexmap::IndexMap;
use vnfm_driver_api::{DriverError, ObserveRequest, ObservedCondition, RunControl};
use vnfm_types::{VimConnectionInfo, VnfInstance};

use super::Lcm;
use super::apply::driver_state;
use super::exec::{resolve_vims, select_driver};
use crate::LcmError;
use crate::split::SplitState;

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
    /// Asks the drivers of `instance` (instantiated) what they see wrong with its resources
    /// now, each within `timeout`. Errors choosing a driver or resolving a VIM connection are
    /// the whole call's; a driver's own failure is its [`Observation::outcome`].
    pub async fn observe_infrastructure(
        &self,
        instance: &VnfInstance,
        timeout: Duration,
    ) -> Result<Vec<Observation>, LcmError> {
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
            let resolved = resolve_vims(inner.vims.clone(), part_vims).await?;
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
}
