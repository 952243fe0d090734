//! Automatic healing: an alarm on VNFCs of an instance whose `vnfConfigurableProperties` have
//! `isAutohealEnabled: true` (SOL001 `VnfConfigurableProperties.is_autoheal_enabled`, the
//! name OpenStack Tacker reads too) starts a HEAL of those VNFCs, with
//! `isAutomaticInvocation: true`.
//!
//! Every automatic heal is bounded: an alarm below [`AutoHealPolicy::min_severity`] heals
//! nothing, one instance is healed at most as often as [`AutoHealPolicy::bounds`] allow, and
//! a heal never queues behind another operation: while one holds the instance the heal is
//! dropped, and the [`AutomaticOutcome`] (logged by the fault manager) says so. The same
//! alarm raised again while open does not heal again; a new alarm does, once the bounds
//! allow it.
//!
//! The cooldown and rate limit are counted from the instance's automatic HEAL occurrences in
//! the store (see [`super::automatic`]): they hold across restarts and between replicas.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use vnfm_types::{Alarm, HealVnfRequest, PerceivedSeverity, VnfInstance};

use super::automatic::{
    AutomaticOutcome, Bounds, Limiter, instance_of, start_bounded, switched_on,
};
use crate::{Lcm, OperationRequest};

/// The `vnfConfigurableProperties` member that turns automatic healing on for an instance.
pub const AUTOHEAL_PROPERTY: &str = "isAutohealEnabled";

/// The bounds of automatic healing, the same for every instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutoHealPolicy {
    /// The least severe alarm that heals: with the default `MAJOR`, `CRITICAL` and `MAJOR`
    /// alarms heal, `MINOR`, `WARNING` and `INDETERMINATE` ones do not.
    pub min_severity: PerceivedSeverity,
    /// How often one instance may be healed automatically.
    pub bounds: Bounds,
}

impl Default for AutoHealPolicy {
    /// `MAJOR`, 2 minutes of cooldown, at most 5 heals an hour per instance.
    fn default() -> Self {
        AutoHealPolicy {
            min_severity: PerceivedSeverity::Major,
            bounds: Bounds {
                cooldown: Duration::from_secs(120),
                max_in_window: 5,
                window: Duration::from_secs(3600),
            },
        }
    }
}

impl AutoHealPolicy {
    /// Whether an alarm of `severity` is severe enough to heal.
    pub fn heals(&self, severity: PerceivedSeverity) -> bool {
        // PerceivedSeverity orders from CRITICAL (least) to CLEARED (greatest).
        severity != PerceivedSeverity::Cleared && severity <= self.min_severity
    }
}

/// The HEAL `alarm` calls for on `instance` under `policy`, or why there is none. Pure: the
/// cooldown and rate limit are checked apart ([`Limiter`]).
pub fn wanted_heal(
    policy: &AutoHealPolicy,
    alarm: &Alarm,
    instance: &VnfInstance,
) -> Result<HealVnfRequest, AutomaticOutcome> {
    switched_on(instance, AUTOHEAL_PROPERTY)?;
    if !policy.heals(alarm.perceived_severity) {
        return Err(AutomaticOutcome::BelowSeverity);
    }
    let vnfcs = alarm.vnfc_instance_ids.clone().unwrap_or_default();
    if vnfcs.is_empty() {
        return Err(AutomaticOutcome::NoVnfc);
    }
    Ok(HealVnfRequest {
        vnfc_instance_id: Some(vnfcs),
        cause: Some(format!(
            "automatic healing for alarm {}: {}",
            alarm.id, alarm.probable_cause
        )),
        additional_params: None,
        heal_script: None,
    })
}

/// Automatic healing over the lifecycle manager.
#[derive(Clone)]
pub struct AutoHeal {
    lcm: Lcm,
    policy: AutoHealPolicy,
    limiter: Arc<Mutex<Limiter>>,
}

impl std::fmt::Debug for AutoHeal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AutoHeal")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl AutoHeal {
    /// Automatic healing that starts HEALs on `lcm` within `policy`.
    pub fn new(lcm: Lcm, policy: AutoHealPolicy) -> Self {
        AutoHeal {
            lcm,
            policy,
            limiter: Arc::default(),
        }
    }

    /// The bounds in force.
    pub fn policy(&self) -> &AutoHealPolicy {
        &self.policy
    }

    /// Whether an alarm now at `severity`, previously at `before` (`None`: new), is one to
    /// consider: it just became severe enough to heal.
    pub fn triggered_by(
        &self,
        before: Option<PerceivedSeverity>,
        severity: PerceivedSeverity,
    ) -> bool {
        self.policy.heals(severity) && !before.is_some_and(|b| self.policy.heals(b))
    }

    /// Starts the HEAL `alarm` calls for, if any and if the bounds allow it.
    pub async fn consider(&self, alarm: &Alarm) -> AutomaticOutcome {
        let id = &alarm.managed_object_id;
        let instance = match instance_of(&self.lcm, id).await {
            Ok(i) => i,
            Err(outcome) => return outcome,
        };
        match wanted_heal(&self.policy, alarm, &instance) {
            Ok(req) => {
                let req = OperationRequest::Heal(req);
                let ops = [vnfm_types::LcmOperationType::Heal];
                start_bounded(&self.lcm, &self.limiter, &self.policy.bounds, &ops, id, req).await
            }
            Err(outcome) => outcome,
        }
    }
}
