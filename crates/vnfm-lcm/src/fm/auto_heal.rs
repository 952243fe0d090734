//! Automatic healing: an alarm on VNFCs of an instance whose `vnfConfigurableProperties` have
//! `isAutohealEnabled: true` (SOL001 `VnfConfigurableProperties.is_autoheal_enabled`, the
//! name OpenStack Tacker reads too) starts a HEAL of those VNFCs, with
//! `isAutomaticInvocation: true`.
//!
//! Every automatic heal is bounded: an alarm below [`AutoHealPolicy::min_severity`] heals
//! nothing, one instance is healed at most once per [`AutoHealPolicy::cooldown`] and at most
//! [`AutoHealPolicy::max_in_window`] times per [`AutoHealPolicy::window`], and a heal never
//! queues behind another operation: while one holds the instance the heal is dropped, and
//! the [`AutoHealOutcome`] (logged by the fault manager) says so. The same alarm raised
//! again while open does not heal again; a new alarm does, once the bounds allow it.
//!
//! The cooldown and rate limit are kept in this process's memory: a restart, or another
//! replica, starts with none of them.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use vnfm_types::{
    Alarm, HealVnfRequest, InstantiationState, PerceivedSeverity, VnfInstance, VnfInstanceId,
};

use crate::{Lcm, LcmError, OperationRequest};

/// The `vnfConfigurableProperties` member that turns automatic healing on for an instance.
pub const AUTOHEAL_PROPERTY: &str = "isAutohealEnabled";

/// The bounds of automatic healing, the same for every instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutoHealPolicy {
    /// The least severe alarm that heals: with the default `MAJOR`, `CRITICAL` and `MAJOR`
    /// alarms heal, `MINOR`, `WARNING` and `INDETERMINATE` ones do not.
    pub min_severity: PerceivedSeverity,
    /// How long after an automatic heal of an instance started the next one may start.
    pub cooldown: Duration,
    /// At most this many automatic heals of one instance start within [`Self::window`].
    pub max_in_window: usize,
    /// The window of [`Self::max_in_window`].
    pub window: Duration,
}

impl Default for AutoHealPolicy {
    /// `MAJOR`, 2 minutes of cooldown, at most 5 heals an hour per instance.
    fn default() -> Self {
        AutoHealPolicy {
            min_severity: PerceivedSeverity::Major,
            cooldown: Duration::from_secs(120),
            max_in_window: 5,
            window: Duration::from_secs(3600),
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

/// What automatic healing did about an alarm.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AutoHealOutcome {
    /// A HEAL started: its occurrence.
    Started {
        /// The occurrence of the HEAL.
        op_occ_id: String,
    },
    /// The instance does not have `isAutohealEnabled: true`.
    Disabled,
    /// The alarm is less severe than [`AutoHealPolicy::min_severity`].
    BelowSeverity,
    /// The alarm names no VNFC: the whole VNF is never healed automatically.
    NoVnfc,
    /// The alarm's instance does not exist.
    UnknownInstance,
    /// The instance is not instantiated.
    NotInstantiated,
    /// The instance was healed automatically less than the cooldown ago.
    CoolingDown {
        /// How long until the cooldown ends.
        remaining: Duration,
    },
    /// The instance was healed automatically as often as the window allows.
    RateLimited {
        /// The policy's maximum.
        max: usize,
        /// The policy's window.
        window: Duration,
    },
    /// Another operation holds the instance: the heal is dropped, not queued.
    Busy {
        /// The occurrence holding the instance.
        op_occ_id: String,
    },
    /// The HEAL was refused (e.g. the alarm names VNFCs the instance does not have).
    Refused {
        /// Why.
        reason: String,
    },
}

impl AutoHealOutcome {
    /// Whether an operator wants to hear of this outcome (a heal that was wanted but did not
    /// start), as opposed to an alarm automatic healing is not meant for.
    pub fn is_dropped_heal(&self) -> bool {
        matches!(
            self,
            AutoHealOutcome::CoolingDown { .. }
                | AutoHealOutcome::RateLimited { .. }
                | AutoHealOutcome::Busy { .. }
                | AutoHealOutcome::Refused { .. }
        )
    }
}

impl std::fmt::Display for AutoHealOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AutoHealOutcome::Started { op_occ_id } => {
                write!(f, "HEAL started as operation occurrence {op_occ_id}")
            }
            AutoHealOutcome::Disabled => {
                write!(
                    f,
                    "automatic healing is off for the instance ({AUTOHEAL_PROPERTY} is not true)"
                )
            }
            AutoHealOutcome::BelowSeverity => {
                write!(f, "the alarm is less severe than automatic healing needs")
            }
            AutoHealOutcome::NoVnfc => write!(
                f,
                "the alarm names no VNFC, and the whole VNF is never healed automatically"
            ),
            AutoHealOutcome::UnknownInstance => {
                write!(f, "the alarm's VNF instance does not exist")
            }
            AutoHealOutcome::NotInstantiated => write!(f, "the VNF instance is not instantiated"),
            AutoHealOutcome::CoolingDown { remaining } => write!(
                f,
                "dropped: the instance was healed automatically a moment ago; the cooldown ends in {} s",
                remaining.as_secs().max(1)
            ),
            AutoHealOutcome::RateLimited { max, window } => write!(
                f,
                "dropped: the instance was healed automatically {max} times within {} s",
                window.as_secs()
            ),
            AutoHealOutcome::Busy { op_occ_id } => write!(
                f,
                "dropped: operation occurrence {op_occ_id} holds the instance"
            ),
            AutoHealOutcome::Refused { reason } => write!(f, "refused: {reason}"),
        }
    }
}

/// The HEAL `alarm` calls for on `instance` under `policy`, or why there is none. Pure: the
/// cooldown and rate limit are checked apart ([`Limiter`]).
pub fn wanted_heal(
    policy: &AutoHealPolicy,
    alarm: &Alarm,
    instance: &VnfInstance,
) -> Result<HealVnfRequest, AutoHealOutcome> {
    let enabled = instance
        .vnf_configurable_properties
        .as_ref()
        .and_then(|p| p.get(AUTOHEAL_PROPERTY))
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false);
    if !enabled {
        return Err(AutoHealOutcome::Disabled);
    }
    if !policy.heals(alarm.perceived_severity) {
        return Err(AutoHealOutcome::BelowSeverity);
    }
    if instance.instantiation_state != InstantiationState::Instantiated {
        return Err(AutoHealOutcome::NotInstantiated);
    }
    let vnfcs = alarm.vnfc_instance_ids.clone().unwrap_or_default();
    if vnfcs.is_empty() {
        return Err(AutoHealOutcome::NoVnfc);
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

/// The automatic heals started per instance, for the cooldown and the rate limit.
#[derive(Debug, Default)]
pub struct Limiter {
    starts: HashMap<VnfInstanceId, VecDeque<Instant>>,
}

impl Limiter {
    /// Admits a heal of `instance` at `now` and reserves its place, or says why not.
    pub fn admit(
        &mut self,
        policy: &AutoHealPolicy,
        instance: &VnfInstanceId,
        now: Instant,
    ) -> Result<(), AutoHealOutcome> {
        let starts = self.starts.entry(instance.clone()).or_default();
        while starts
            .front()
            .is_some_and(|t| now.saturating_duration_since(*t) >= policy.window)
        {
            starts.pop_front();
        }
        if let Some(last) = starts.back() {
            let since = now.saturating_duration_since(*last);
            if since < policy.cooldown {
                return Err(AutoHealOutcome::CoolingDown {
                    remaining: policy.cooldown - since,
                });
            }
        }
        if starts.len() >= policy.max_in_window {
            return Err(AutoHealOutcome::RateLimited {
                max: policy.max_in_window,
                window: policy.window,
            });
        }
        starts.push_back(now);
        Ok(())
    }

    /// Gives back the place [`Self::admit`] reserved at `at` (the heal did not start).
    pub fn release(&mut self, instance: &VnfInstanceId, at: Instant) {
        if let Some(starts) = self.starts.get_mut(instance) {
            if let Some(i) = starts.iter().rposition(|t| *t == at) {
                starts.remove(i);
            }
            if starts.is_empty() {
                self.starts.remove(instance);
            }
        }
    }
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
    pub async fn consider(&self, alarm: &Alarm) -> AutoHealOutcome {
        let id = &alarm.managed_object_id;
        let instance = match self.lcm.get_instance(id).await {
            Ok(i) => i,
            Err(LcmError::NotFound { .. }) => return AutoHealOutcome::UnknownInstance,
            Err(e) => {
                return AutoHealOutcome::Refused {
                    reason: e.to_string(),
                };
            }
        };
        let req = match wanted_heal(&self.policy, alarm, &instance) {
            Ok(r) => r,
            Err(outcome) => return outcome,
        };
        let now = Instant::now();
        if let Err(outcome) = self.limiter().admit(&self.policy, id, now) {
            return outcome;
        }
        match self
            .lcm
            .start_automatic(id, OperationRequest::Heal(req))
            .await
        {
            Ok(occ) => AutoHealOutcome::Started {
                op_occ_id: occ.id.to_string(),
            },
            Err(e) => {
                self.limiter().release(id, now);
                match e {
                    LcmError::InstanceBusy { op_occ_id, .. } => AutoHealOutcome::Busy { op_occ_id },
                    e => AutoHealOutcome::Refused {
                        reason: e.to_string(),
                    },
                }
            }
        }
    }

    fn limiter(&self) -> std::sync::MutexGuard<'_, Limiter> {
        // The limiter's state is valid after any panic (plain pushes and pops).
        self.limiter.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
